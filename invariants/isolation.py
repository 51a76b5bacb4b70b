"""Isolation: read_committed consumers see only committed data, and the LSO protects them."""
from __future__ import annotations

from kafka_mc.invariants.history import open_transactions, record_fates
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.partition import last_stable_offset
from kafka_mc.model.kafka.world import Control


def read_committed_isolation(K, w) -> bool:
    if not any(c.returned for c in w.consumers):
        return True
    fates = record_fates(K, w)
    return all(fates.get(r) == {Control.COMMIT} for c in w.consumers for r in c.returned)


def lso_safety(K, w) -> bool:
    for k, part in enumerate(w.partitions):
        lso = last_stable_offset(part)
        if any(lso > first for first in open_transactions(part).values()):
            return False
        if k < K.partitions and any(c.positions[k] > lso for c in w.consumers):
            return False
    return True


PROPERTIES = (
    Property("read_committed_isolation", Expectation.ALWAYS, read_committed_isolation,
             "a read_committed consumer never returns a record of an aborted or undecided "
             "transaction",
             reads=reads("LR")),
    Property("lso_safety", Expectation.ALWAYS, lso_safety,
             "the LSO never passes the first offset of an open transaction and read_committed "
             "never reads past the LSO",
             reads=reads("LR")),
    Property("a_read_returns_committed_data", Expectation.SOMETIMES,
             lambda K, w: any(c.returned for c in w.consumers),
             "a read_committed consumer returns a record", applies=lambda K: K.consumers > 0,
             reads=reads("R")),
)
