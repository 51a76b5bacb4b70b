"""No duplicates: a record is exposed at most once per partition."""
from __future__ import annotations

from kafka_mc.invariants.history import fates
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.world import Control


def no_duplicates(K, w) -> bool:
    for part in w.partitions[:K.partitions]:   # not __consumer_offsets: commits are not records
        exposed = [rid for _, rid, fate in fates(part) if fate != Control.ABORT]
        if len(exposed) != len(set(exposed)):
            return False
    return True


PROPERTIES = (
    Property("no_duplicates", Expectation.ALWAYS, no_duplicates,
             "a producer record appears at most once among the records a partition exposes",
             reads=reads("L")),
)
