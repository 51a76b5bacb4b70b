"""Exactly-once consume-transform-produce: the input offsets a group commits and the outputs of
the same transactions go together, no input is processed into committed output twice, and no
input is skipped (an application never starts past an input whose every processing aborted)."""
from __future__ import annotations

from kafka_mc.invariants.history import offset_commit_fates, output_fates
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.world import Control

COMMIT, ABORT = Control.COMMIT, Control.ABORT


def exactly_once_offsets(K, w) -> bool:
    if not K.ctp:
        return True
    outputs, commits = output_fates(K, w), offset_commit_fates(K, w)
    for key, fates in commits.items():      # the offset is committed iff the outputs are
        out = outputs.get(key, ())
        if COMMIT in fates and ABORT in out or ABORT in fates and COMMIT in out:
            return False
    processed: set[int] = set()              # each input offset: one transaction's outputs
    alive: set[int] = set()                  # inputs with outputs not (only) aborted
    for p in w.producers:
        for txn, offset in enumerate(p.inputs):
            out = outputs.get((p.tid, p.instance, txn), {ABORT})
            if COMMIT in out:
                if offset in processed:
                    return False
                processed.add(offset)
            if ABORT not in out:
                alive.add(offset)
    # the position a member fetched skips nothing
    return all(o in processed or o in alive for p in w.producers for o in range(max(p.position, 0)))


PROPERTIES = (
    Property("exactly_once_offsets", Expectation.ALWAYS, exactly_once_offsets,
             "a consumed input offset is committed iff the outputs of the same transaction are "
             "committed: no input offset has committed outputs from two transactions, and none "
             "below a member's position has only aborted ones",
             reads=reads("PL")),
    Property("an_offset_commit_is_committed", Expectation.SOMETIMES,
             lambda K, w: any(COMMIT in f for f in offset_commit_fates(K, w).values()),
             "a transactional offset commit is materialised by a COMMIT marker",
             applies=lambda K: K.ctp,
             reads=reads("L")),   # only consume-transform-produce commits offsets
)
