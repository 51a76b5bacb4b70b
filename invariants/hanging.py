"""Hanging transactions and completion."""
from __future__ import annotations

from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.client import CLIENT_RULES
from kafka_mc.model.kafka.network import Rpc
from kafka_mc.model.kafka.partition import last_stable_offset
from kafka_mc.model.kafka.world import TxnState

OPEN = (TxnState.Ongoing, TxnState.PrepareCommit, TxnState.PrepareAbort)


def _known_to_coordinator(w, k: int, pid: int) -> bool:
    c = w.coordinator
    for tid, txn in enumerate(c.txns):
        if txn.producer_id != pid:
            continue
        views = (txn, c.appends[tid].target) if c.appends[tid] else (txn,)
        if any(v.state in OPEN and k in v.partitions for v in views):
            return True
    return any(m.rpc == Rpc.WriteTxnMarkers and m.partition == k and m.producer_id == pid
               for m in w.network + w.delayed)


def no_hanging_transactions(K, w) -> bool:
    return all(_known_to_coordinator(w, k, e.producer_id)
               for k, part in enumerate(w.partitions)
               for e in part.producers if e.current_txn_first_offset >= 0)


def completed(K, w) -> bool:
    """No transaction is open at a partition or undecided at the coordinator."""
    return (not any(e.current_txn_first_offset >= 0 for part in w.partitions for e in part.producers)
            and not any(t.state in OPEN for t in w.coordinator.txns))


def not_completed(K, w) -> bool:
    return not completed(K, w)


def closed_at_leaders(K, w) -> bool:
    """No partition leader has an open transaction (every one was closed by a marker)."""
    return not any(e.current_txn_first_offset >= 0 for part in w.partitions for e in part.producers)


def open_at_a_leader(K, w) -> bool:
    return not closed_at_leaders(K, w)


def producers_stopped(K, w) -> bool:
    """No producer (application or Sender) has anything left to do; requests may be in flight."""
    return not any(any(True for _ in r.enabled(K, w)) for r in CLIENT_RULES)


def stable(K, w) -> bool:
    """Every partition's last stable offset is its high watermark (here: its log end)."""
    return all(last_stable_offset(part) == len(part.log) for part in w.partitions)


PROPERTIES = (
    Property("no_hanging_transactions", Expectation.ALWAYS, no_hanging_transactions,
             "an open transaction at a partition is known to its coordinator as ongoing or being "
             "completed",
             reads=reads("CLND")),
    Property("quiescent_completion", Expectation.TERMINAL, completed,
             "in a state with no enabled action, no transaction is left open or in Prepare*",
             reads=reads("CL")),
    Property("eventual_completion", Expectation.EVENTUALLY, completed,
             "every begun transaction is eventually completed", when=not_completed),
    Property("markers_close_transactions", Expectation.EVENTUALLY, closed_at_leaders,
             "every transaction open at a partition leader is eventually closed by a marker",
             when=open_at_a_leader),
    Property("lso_reaches_high_watermark", Expectation.EVENTUALLY, stable,
             "once the producers stop, every partition's last stable offset eventually reaches "
             "its high watermark", when=producers_stopped),
)
