"""The client's view, in Jepsen's vocabulary: what the applications were told against what the
logs hold and what read_committed consumers returned.

- **lost write**: a transaction whose commit the application saw has a record missing from every
  log (``no_lost_writes``; one aborted is ``committed_writes_visible``'s). commitTransaction
  returns once PrepareCommit is logged, before the markers: the record is then in the log and
  still undecided, so "committed" here would be a liveness claim (``eventual_completion``);
- **aborted read** (G1a): a read_committed consumer returns a record of a transaction whose abort
  the application saw, even one appended after the abort that joined a later transaction of the
  same producer id and epoch (``no_aborted_reads``); on the logs, no record of such a transaction
  is committed at all (``aborted_writes_stay_aborted``);
- **duplicate**: ``no_duplicates`` (invariants/duplicates.py);
- **non-monotonic or skipping polls**: per partition, a consumer has returned exactly the
  committed records below its position, each once and in log order (``read_committed_polls``):
  it never skips a committed record below the LSO, never returns one twice, never goes back.

What a transaction's application saw is the ghost ``Producer.outcomes``; a record's identity is
``RecordId(tid, instance, txn, n)``; its fate comes from the logs alone (``kafka_mc.invariants.history``).
"""
from __future__ import annotations

from kafka_mc.invariants.history import fates, record_fates, txn_fates
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.world import Control, Outcome, RecordId


def _told(w, outcome: Outcome) -> list[tuple[int, int, int]]:
    """(tid, instance, txn) of every transaction whose application was told ``outcome``."""
    return [(p.tid, p.instance, t) for p in w.producers
            for t, o in enumerate(p.outcomes) if o == outcome]


def no_lost_writes(K, w) -> bool:
    committed = _told(w, Outcome.COMMITTED)
    if not committed:
        return True
    records = record_fates(K, w)
    return all(RecordId(*txn, n) in records for txn in committed for n in range(K.records))


def no_aborted_reads(K, w) -> bool:
    if not any(c.returned for c in w.consumers):
        return True
    aborted = set(_told(w, Outcome.ABORTED))
    return not any(r[:3] in aborted for c in w.consumers for r in c.returned)


def aborted_writes_stay_aborted(K, w) -> bool:
    aborted = _told(w, Outcome.ABORTED)
    if not aborted:
        return True
    txns = txn_fates(K, w)
    return not any(Control.COMMIT in txns.get(txn, ()) for txn in aborted)


def read_committed_polls(K, w) -> bool:
    for c in w.consumers:
        if not c.returned and not any(c.positions):
            continue
        for k, position in enumerate(c.positions):
            log = fates(w.partitions[k])
            here = {rid for _, rid, _ in log}
            committed = [rid for offset, rid, fate in log
                         if offset < position and fate == Control.COMMIT]
            if [r for r in c.returned if r in here] != committed:
                return False
    return True


PROPERTIES = (
    Property("no_lost_writes", Expectation.ALWAYS, no_lost_writes,
             "every record of a transaction whose commit the application saw is in its "
             "partition's log (lost write)",
             reads=reads("OL")),
    Property("no_aborted_reads", Expectation.ALWAYS, no_aborted_reads,
             "a read_committed consumer never returns a record of a transaction whose abort the "
             "application saw, even one appended after the abort (aborted read)",
             reads=reads("OR")),
    Property("aborted_writes_stay_aborted", Expectation.ALWAYS, aborted_writes_stay_aborted,
             "no record of a transaction whose abort the application saw is ever committed",
             reads=reads("OL")),
    Property("read_committed_polls", Expectation.ALWAYS, read_committed_polls,
             "per partition, a read_committed consumer has returned exactly the committed records "
             "below its position, once each and in log order (no skipped, repeated or "
             "out-of-order poll)",
             reads=reads("LR")),
)
