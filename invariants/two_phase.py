"""Two-phase commit (KIP-939): a transaction the application prepared is the external
transaction manager's to decide.

``prepared_transaction_kept``: while a producer instance is PREPARED_TRANSACTION (prepareTransaction
returned its PreparedTxnState and completeTransaction has not been called), its transaction stays
Ongoing at the coordinator under the producer's id and epoch, with no transition pending: the
coordinator never aborts it on its own (KIP-939: a 2PC transaction has no timeout,
TransactionStateManager.timedOutTransactions skips isDistributedTwoPhaseCommitTxn, KAFKA-18953),
so completeTransaction decides it. A restarted instance cannot take it over (keepPreparedTxn is
answered UNSUPPORTED_VERSION on every branch) nor abort it (it never gets a producer id). The one
way out is an operator's: Admin.forceTerminateTransaction (``workload.force_terminate``), after
which the transaction is no longer the producer's.

``force_terminated_aborted``: a transaction an operator force-terminated is aborted, never
committed: no PrepareCommit or CompleteCommit of its transactional.id at its producer id and an
epoch up to the fence's (its own, or TV2's bump of it) in the coordinator's cache, its log append
in flight or its log.

Meets them: ``workload.two_phase_commit`` (and ``workload.force_terminate``) on latest. Breaks
the first: the same client against a coordinator without KAFKA-18953 (``protocol.two_phase_commit
= false``), whose timeout aborts the prepared transaction; the second: the mutant
``force-terminate-commits`` (tests/model/test_two_phase.py).
"""
from __future__ import annotations

from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.kafka.world import ClientState, TxnState

PREPARED = ClientState.PREPARED_TRANSACTION


def prepared_transaction_kept(K, w) -> bool:
    terminated = w.coordinator.force_terminated
    for p in w.producers:
        if p.state == PREPARED and (p.tid, p.producer_id, p.producer_epoch) not in terminated:
            txn = w.coordinator.txns[p.tid]
            if (txn.state != TxnState.Ongoing or txn.pending_state != -1
                    or txn.producer_id != p.producer_id or txn.producer_epoch != p.producer_epoch):
                return False
    return True


COMMITTED = (TxnState.PrepareCommit, TxnState.CompleteCommit)


def force_terminated_aborted(K, w) -> bool:
    c = w.coordinator
    for tid, pid, epoch in c.force_terminated:
        a = c.appends[tid]
        for txn in (c.txns[tid], c.log[tid], a.target if a else None):
            if (txn is not None and txn.state in COMMITTED and txn.producer_id == pid
                    and txn.producer_epoch <= epoch + 1):
                return False
    return True


def a_transaction_is_force_terminated(K, w) -> bool:
    return bool(w.coordinator.force_terminated)


def a_transaction_is_prepared(K, w) -> bool:
    return any(p.state == PREPARED for p in w.producers)


PROPERTIES = (
    Property("prepared_transaction_kept", Expectation.ALWAYS, prepared_transaction_kept,
             "a prepared transaction stays Ongoing at its coordinator, at the producer's id and "
             "epoch, until completeTransaction decides it (no timeout or abort of the "
             "coordinator's own: KIP-939) or an operator force-terminates it",
             reads=reads("PC")),
    Property("a_transaction_is_prepared", Expectation.SOMETIMES, a_transaction_is_prepared,
             "some producer prepares a transaction (prepareTransaction)",
             applies=lambda K: K.two_phase, reads=reads("P")),
    Property("force_terminated_aborted", Expectation.ALWAYS, force_terminated_aborted,
             "a transaction an operator force-terminated (Admin.forceTerminateTransaction) is "
             "aborted, never committed", reads=reads("C")),
    Property("a_transaction_is_force_terminated", Expectation.SOMETIMES,
             a_transaction_is_force_terminated,
             "an operator force-terminates a two-phase-commit transaction",
             applies=lambda K: K.force_terminate, reads=reads("C")),
)
