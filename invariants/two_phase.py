"""Two-phase commit (KIP-939): a transaction the application prepared is the external
transaction manager's to decide.

``prepared_transaction_kept``: while a producer instance is PREPARED_TRANSACTION (prepareTransaction
returned its PreparedTxnState and completeTransaction has not been called), its transaction stays
Ongoing at the coordinator under the producer's id and epoch, with no transition pending: the
coordinator never aborts it on its own (KIP-939: a 2PC transaction has no timeout,
TransactionStateManager.timedOutTransactions skips isDistributedTwoPhaseCommitTxn, KAFKA-18953),
so completeTransaction decides it. A restarted instance cannot take it over (keepPreparedTxn is
answered UNSUPPORTED_VERSION on every branch) nor abort it (it never gets a producer id).

Meets it: ``workload.two_phase_commit`` on latest. Breaks it: the same client against a
coordinator without KAFKA-18953 (``protocol.two_phase_commit = false``), whose timeout aborts the
prepared transaction (tests/model/test_two_phase.py).
"""
from __future__ import annotations

from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.footprints import reads
from kafka_mc.model.kafka.world import ClientState, TxnState

PREPARED = ClientState.PREPARED_TRANSACTION


def prepared_transaction_kept(K, w) -> bool:
    for p in w.producers:
        if p.state == PREPARED:
            txn = w.coordinator.txns[p.tid]
            if (txn.state != TxnState.Ongoing or txn.pending_state != -1
                    or txn.producer_id != p.producer_id or txn.producer_epoch != p.producer_epoch):
                return False
    return True


def a_transaction_is_prepared(K, w) -> bool:
    return any(p.state == PREPARED for p in w.producers)


PROPERTIES = (
    Property("prepared_transaction_kept", Expectation.ALWAYS, prepared_transaction_kept,
             "a prepared transaction stays Ongoing at its coordinator, at the producer's id and "
             "epoch, until completeTransaction decides it (no timeout or abort of the "
             "coordinator's own: KIP-939)",
             reads=reads("PC")),
    Property("a_transaction_is_prepared", Expectation.SOMETIMES, a_transaction_is_prepared,
             "some producer prepares a transaction (prepareTransaction)",
             applies=lambda K: K.two_phase, reads=reads("P")),
)
