"""Atomicity: a transaction's records end all committed or all aborted."""
from __future__ import annotations

from kafka_mc.invariants.history import txn_fates
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.world import Control, Outcome


def txn_atomicity(K, w) -> bool:
    return not any(Control.COMMIT in f and Control.ABORT in f for f in txn_fates(K, w).values())


def committed_writes_visible(K, w) -> bool:
    fates = txn_fates(K, w)
    for p in w.producers:
        for txn, outcome in enumerate(p.outcomes):
            if outcome == Outcome.COMMITTED and Control.ABORT in fates.get((p.tid, p.instance, txn), ()):
                return False
    return True


def can_abort(K) -> bool:
    """Whether a transaction can be aborted at all: the application may choose to, or a fault
    (a timeout, a fencing restart, a failed batch, a rebalance, ...) may force it. Conservative:
    with any fault budget it is taken to apply."""
    return K.abort_allowed or (K.budgets.total > 0 and any(K.budgets[:-1]))


PROPERTIES = (
    Property("txn_atomicity", Expectation.ALWAYS, txn_atomicity,
             "every client transaction's records end all committed or all aborted, on every "
             "partition it wrote",
             reads=reads("L")),
    Property("committed_writes_visible", Expectation.ALWAYS, committed_writes_visible,
             "a transaction whose commit the client saw succeed never has a record aborted",
             reads=reads("OL")),
    Property("a_commit_happens", Expectation.SOMETIMES,
             lambda K, w: any(Outcome.COMMITTED in p.outcomes for p in w.producers),
             "some application sees commitTransaction succeed",
             reads=reads("O")),
    Property("an_abort_happens", Expectation.SOMETIMES,
             lambda K, w: any(b.control == Control.ABORT for part in w.partitions for b in part.log),
             "some partition gets an ABORT marker", applies=can_abort,
             reads=reads("L")),
)
