"""The application's calls and the client's Sender, as rules (KafkaProducer's transactional API
and ``Sender``/``TransactionManager``'s request queue); the handlers are in ``producer`` and
``group_coordinator``. ``idle`` says when nothing but a timer can fire, which the coordinator's
transaction timeout uses (``faults``)."""
from __future__ import annotations

from kafka_mc.model.core import WF
from kafka_mc.model.kafka import group_coordinator, producer
from kafka_mc.model.protocol import Rule

# Fairness (liveness is checked under it). The application runs its workload to the end: it
# initialises, begins, sends and ends each transaction it has (commit or abort: one family, the
# application chooses). An application that stops calling is what transaction.timeout.ms is for
# in Kafka; the model has no clock and fires that timer only once nothing else can happen
# (``ExpireTransaction`` idle, faults.py), so a stalled application is assumed away here, not
# lost: without it every open transaction could "hang" by the application never ending it.
APPLICATION = WF("the application runs its workload (KafkaProducer's transactional API) to the "
                 "end")
ENDS = WF("the application ends each transaction it begins: commitTransaction or "
          "abortTransaction", family="EndTransaction")
# The Sender thread (Sender.runOnce) sends whatever TransactionManager has queued, and retries
# a retriable error after retry.backoff.ms.
SENDER = WF("Sender.runOnce sends what TransactionManager queued, and retries after "
            "retry.backoff.ms")

P = ("producer",)
CLIENT_RULES = (
    # the application
    Rule("InitTransactions", P, producer.init_transactions_enabled, producer.init_transactions,
         fair=APPLICATION),
    Rule("BeginTransaction", P, producer.begin_transaction_enabled, producer.begin_transaction,
         fair=APPLICATION),
    Rule("Send", ("producer", "partition"), producer.send_enabled, producer.send_record,
         fair=APPLICATION),
    Rule("CommitTransaction", P, producer.commit_transaction_enabled, producer.commit_transaction,
         fair=ENDS),
    Rule("AbortTransaction", P, producer.abort_transaction_enabled, producer.abort_transaction,
         fair=ENDS),
    # KIP-939: KafkaProducer.prepareTransaction and completeTransaction(PreparedTxnState) (named
    # apart from CompleteTransaction below, TransactionManager's completion without EndTxn)
    Rule("PrepareTransaction", P, producer.prepare_transaction_enabled,
         producer.prepare_transaction, fair=APPLICATION),
    Rule("CompletePreparedTransaction", ("producer", "matches"),
         producer.complete_prepared_transaction_enabled, producer.complete_prepared_transaction,
         fair=ENDS),
    Rule("OffsetFetch", P, group_coordinator.offset_fetch_enabled, group_coordinator.offset_fetch,
         fair=APPLICATION),
    Rule("SendOffsetsToTransaction", P, producer.send_offsets_enabled,
         producer.send_offsets_to_transaction, fair=APPLICATION),
    # the client's Sender
    Rule("SendAddPartitionsToTxn", P, producer.send_add_partitions_enabled,
         producer.send_add_partitions, fair=SENDER),
    Rule("SendProduce", ("producer", "partition", "record"), producer.send_produce_enabled,
         producer.send_produce, fair=SENDER),
    Rule("SendTxnOffsetCommit", P, producer.send_txn_offset_commit_enabled,
         producer.send_txn_offset_commit, fair=SENDER),
    Rule("SendEndTxn", P, producer.send_end_txn_enabled, producer.send_end_txn, fair=SENDER),
    Rule("CompleteTransaction", P, producer.complete_transaction_enabled,
         producer.complete_transaction, fair=SENDER),
)


def idle(K, w) -> bool:
    """Nothing but a timer can fire: no message or append in flight, no client action."""
    if w.network or w.delayed or any(w.coordinator.appends):
        return False
    return not any(any(True for _ in r.enabled(K, w)) for r in CLIENT_RULES)
