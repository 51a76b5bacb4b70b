"""The application's calls and the client's Sender, as rules (KafkaProducer's transactional API
and ``Sender``/``TransactionManager``'s request queue); the handlers are in ``producer`` and
``group_coordinator``. ``idle`` says when nothing but a timer can fire, which the coordinator's
transaction timeout uses (``faults``)."""
from __future__ import annotations

from model.kafka import group_coordinator, producer
from model.protocol import Rule

P = ("producer",)
CLIENT_RULES = (
    # the application
    Rule("InitTransactions", P, producer.init_transactions_enabled, producer.init_transactions),
    Rule("BeginTransaction", P, producer.begin_transaction_enabled, producer.begin_transaction),
    Rule("Send", ("producer", "partition"), producer.send_enabled, producer.send_record),
    Rule("CommitTransaction", P, producer.commit_transaction_enabled, producer.commit_transaction),
    Rule("AbortTransaction", P, producer.abort_transaction_enabled, producer.abort_transaction),
    Rule("OffsetFetch", P, group_coordinator.offset_fetch_enabled, group_coordinator.offset_fetch),
    Rule("SendOffsetsToTransaction", P, producer.send_offsets_enabled,
         producer.send_offsets_to_transaction),
    # the client's Sender
    Rule("SendAddPartitionsToTxn", P, producer.send_add_partitions_enabled,
         producer.send_add_partitions),
    Rule("SendProduce", ("producer", "partition", "record"), producer.send_produce_enabled,
         producer.send_produce),
    Rule("SendTxnOffsetCommit", P, producer.send_txn_offset_commit_enabled,
         producer.send_txn_offset_commit),
    Rule("SendEndTxn", P, producer.send_end_txn_enabled, producer.send_end_txn),
    Rule("CompleteTransaction", P, producer.complete_transaction_enabled,
         producer.complete_transaction),
)


def idle(K, w) -> bool:
    """Nothing but a timer can fire: no message or append in flight, no client action."""
    if w.network or w.delayed or any(w.coordinator.appends):
        return False
    return not any(any(True for _ in r.enabled(K, w)) for r in CLIENT_RULES)
