"""The producer client: the application's choices and the TransactionManager + Sender.

Follows ``clients/.../producer/internals/TransactionManager.java`` and ``Sender.java``. The
application's calls (initTransactions, beginTransaction, send, commitTransaction,
abortTransaction) are nondeterministic actions; the Sender's requests are actions too.

Abstractions: FindCoordinator is folded into sending (a request carries the coordinator epoch
the client found; a NOT_COORDINATOR reply makes it find the new one and resend); one record per
batch and at most one batch in flight per partition; the coordinator-request priority queue is
reduced to "one coordinator request at a time, AddPartitionsToTxn before EndTxn", which is the
order the queue's priorities produce. KIP-360 client epoch bumps are not modelled yet.

Consume-transform-produce (``workload.consume_transform_produce``): the application owns the
input partition in its consumer group (``model.group_coordinator``), fetches the committed
offset, consumes one input record per transaction and calls ``sendOffsetsToTransaction`` with the
next offset: TV1 sends AddOffsetsToTxn (here the AddPartitionsToTxn of the ``__consumer_offsets``
partition, which is what the coordinator does with it) and then TxnOffsetCommit to the group
coordinator; TV2 sends TxnOffsetCommit alone. After a commit the application goes on from the
next input offset; after an abort it fetches the committed offset again.
"""
from __future__ import annotations

from model.network import (AddPartitionsToTxn, EndTxn, InitProducerId, Produce, Rpc,
                           TxnOffsetCommit, send)
from model.world import (OFFSETS_DONE, OFFSETS_NONE, OFFSETS_QUEUED, OFFSETS_SENT,
                         ClientState as C, Errors, Outcome, World, replace_at)

RETRIABLE = (Errors.CONCURRENT_TRANSACTIONS, Errors.NOT_COORDINATOR)
IN_TXN = (C.IN_TRANSACTION, C.COMMITTING_TRANSACTION, C.ABORTING_TRANSACTION, C.ABORTABLE_ERROR)


def _with(w: World, i: int, **changes) -> World:
    return w._replace(producers=replace_at(w.producers, i, w.producers[i]._replace(**changes)))


_last: list = [None, None]  # the producers tuple last asked about, and its running instances


def _running(K, w: World):
    """Producer instances the application has started (zombies included); every producer rule
    asks this of the same state in a row, so the last answer is kept."""
    if _last[0] is not w.producers:
        _last[:] = [w.producers, [(i, p) for i, p in enumerate(w.producers) if p.started]]
    return _last[1]


def fatal(p, **changes):
    """TransactionManager.transitionToFatalError: the open transaction's outcome is unknown."""
    outcomes = p.outcomes + (Outcome.FAILED,) if p.state in IN_TXN else p.outcomes
    return p._replace(state=C.FATAL_ERROR, outcomes=outcomes, in_flight_request=-1, **changes)


# --- the application ----------------------------------------------------------------------------

def init_transactions_enabled(K, w):
    return [(i,) for i, p in _running(K, w) if p.state == C.UNINITIALIZED]


def init_transactions(K, w, i):
    """KafkaProducer.initTransactions -> TransactionManager.initializeTransactions."""
    p = w.producers[i]
    w = _with(w, i, state=C.INITIALIZING, in_flight_request=Rpc.InitProducerId)
    return w._replace(network=send(w.network, InitProducerId(
        Rpc.InitProducerId, i, p.tid, w.coordinator.coordinator_epoch)))


def begin_transaction_enabled(K, w):
    return [(i,) for i, p in _running(K, w) if p.state == C.READY and p.txn + 1 < K.transactions
            and (not K.ctp or 0 <= p.position < K.inputs and p.generation == w.group.generation)]


def begin_transaction(K, w, i):
    """TransactionManager.beginTransaction: READY -> IN_TRANSACTION (with consume-transform-
    produce, the application has polled the input record at its position)."""
    p = w.producers[i]
    inputs = p.inputs + (p.position,) if K.ctp else p.inputs
    return _with(w, i, state=C.IN_TRANSACTION, txn=p.txn + 1, records=0, inputs=inputs)


def send_enabled(K, w):
    return [(i, k) for i, p in _running(K, w)
            if p.state == C.IN_TRANSACTION and p.records < K.records
            for k in range(K.partitions) if not any(q[0] == k for q in p.queued)]


def send_record(K, w, i, k):
    """KafkaProducer.send -> TransactionManager.maybeAddPartition (TV1: the partition must be
    added to the transaction before its batch may be drained)."""
    p = w.producers[i]
    new = p.new_partitions
    if not K.tv2 and k not in p.partitions | p.pending_partitions:
        new = new | {k}
    return _with(w, i, queued=p.queued | {(k, p.records)}, records=p.records + 1, new_partitions=new)


def commit_transaction_enabled(K, w):
    return [(i,) for i, p in _running(K, w)
            if p.state == C.IN_TRANSACTION and p.records == K.records
            and (not K.ctp or p.offsets != OFFSETS_NONE)]


def commit_transaction(K, w, i):
    """TransactionManager.beginCommit: IN_TRANSACTION -> COMMITTING_TRANSACTION."""
    return _with(w, i, state=C.COMMITTING_TRANSACTION)


def abort_transaction_enabled(K, w):
    return [(i,) for i, p in _running(K, w)
            if p.state == C.ABORTABLE_ERROR or K.abort_allowed and p.state == C.IN_TRANSACTION]


def abort_transaction(K, w, i):
    """TransactionManager.beginAbort: undrained batches, unsent partitions and an unsent offset
    commit are dropped."""
    p = w.producers[i]
    offsets = OFFSETS_NONE if p.offsets == OFFSETS_QUEUED else p.offsets
    return _with(w, i, state=C.ABORTING_TRANSACTION, queued=frozenset(), new_partitions=frozenset(),
                 offsets=offsets)


def send_offsets_enabled(K, w):
    if not K.ctp:
        return []
    return [(i,) for i, p in _running(K, w)
            if p.state == C.IN_TRANSACTION and p.offsets == OFFSETS_NONE]


def send_offsets_to_transaction(K, w, i):
    """KafkaProducer.sendOffsetsToTransaction(next input offset, group metadata): TV1 first adds
    the __consumer_offsets partition (AddOffsetsToTxnHandler), then TxnOffsetCommitHandler."""
    p = w.producers[i]
    g, new = K.partitions, p.new_partitions
    if not K.tv2 and g not in p.partitions | p.pending_partitions:
        new = new | {g}
    return _with(w, i, offsets=OFFSETS_QUEUED, new_partitions=new)


# --- the Sender -------------------------------------------------------------------------------------

def send_add_partitions_enabled(K, w):
    return [(i,) for i, p in _running(K, w)
            if p.new_partitions and p.in_flight_request == -1
            and p.state in (C.IN_TRANSACTION, C.COMMITTING_TRANSACTION)]


def send_add_partitions(K, w, i):
    """TransactionManager.addPartitionsToTransactionHandler."""
    p = w.producers[i]
    w = _with(w, i, pending_partitions=p.new_partitions, new_partitions=frozenset(),
              in_flight_request=Rpc.AddPartitionsToTxn)
    return w._replace(network=send(w.network, AddPartitionsToTxn(
        Rpc.AddPartitionsToTxn, i, p.tid, w.coordinator.coordinator_epoch, p.producer_id,
        p.producer_epoch, p.new_partitions)))


def send_produce_enabled(K, w):
    return [(i, k, n) for i, p in _running(K, w)
            if p.state in (C.IN_TRANSACTION, C.COMMITTING_TRANSACTION)
            for k, n in sorted(p.queued)
            if not any(r.partition == k for r in p.in_flight) and (K.tv2 or k in p.partitions)]


def send_produce(K, w, i, k, n):
    """Sender.sendProducerData: drain the partition's batch with the next sequence number."""
    p = w.producers[i]
    seq = p.next_sequence[k]
    request = Produce(Rpc.Produce, i, k, p.producer_id, p.producer_epoch, seq, p.txn, n)
    w = _with(w, i, queued=p.queued - {(k, n)}, in_flight=tuple(sorted(p.in_flight + (request,))),
              next_sequence=replace_at(p.next_sequence, k, seq + 1),
              partitions=p.partitions | {k} if K.tv2 else p.partitions)
    return w._replace(network=send(w.network, request))


def send_txn_offset_commit_enabled(K, w):
    if not K.ctp:
        return []
    return [(i,) for i, p in _running(K, w)
            if p.offsets == OFFSETS_QUEUED and p.in_flight_request == -1
            and p.state in (C.IN_TRANSACTION, C.COMMITTING_TRANSACTION)
            and (K.tv2 or K.partitions in p.partitions)]


def send_txn_offset_commit(K, w, i):
    """TxnOffsetCommitHandler: the offset, the member's generation (v3+), the producer's epoch."""
    p = w.producers[i]
    g = K.partitions
    w = _with(w, i, offsets=OFFSETS_SENT, in_flight_request=Rpc.TxnOffsetCommit,
              partitions=p.partitions | {g} if K.tv2 else p.partitions)
    return w._replace(network=send(w.network, TxnOffsetCommit(
        Rpc.TxnOffsetCommit, i, g, p.producer_id, p.producer_epoch, p.generation, p.position + 1,
        p.txn)))


def _end_ready(p):
    return (p.state in (C.COMMITTING_TRANSACTION, C.ABORTING_TRANSACTION)
            and p.in_flight_request == -1 and not p.in_flight and not p.queued
            and not p.new_partitions and not p.pending_partitions and p.offsets != OFFSETS_QUEUED)


def send_end_txn_enabled(K, w):
    return [(i,) for i, p in _running(K, w) if _end_ready(p) and p.partitions]


def send_end_txn(K, w, i):
    """TransactionManager.beginCompletingTransaction: EndTxn once no batch is incomplete."""
    p = w.producers[i]
    w = _with(w, i, in_flight_request=Rpc.EndTxn)
    return w._replace(network=send(w.network, EndTxn(
        Rpc.EndTxn, i, p.tid, w.coordinator.coordinator_epoch, p.producer_id, p.producer_epoch,
        p.state == C.COMMITTING_TRANSACTION)))


def complete_transaction_enabled(K, w):
    return [(i,) for i, p in _running(K, w) if _end_ready(p) and not p.partitions]


def complete_transaction(K, w, i):
    """No partition was added (transactionStarted is false): no EndTxn is sent at all."""
    p = w.producers[i]
    return _with(w, i, **_completed(K, p))


def _completed(K, p) -> dict:
    """The transaction ended as the client asked: READY, and with consume-transform-produce the
    next input offset after a commit, a fresh OffsetFetch after an abort."""
    committed = p.state == C.COMMITTING_TRANSACTION
    ctp = dict(position=p.position + 1 if committed else -1, offsets=OFFSETS_NONE) if K.ctp else {}
    return dict(state=C.READY, outcomes=p.outcomes + (Outcome.COMMITTED if committed
                                                      else Outcome.ABORTED,), **ctp)


# --- responses ------------------------------------------------------------------------------------

def _resend(w, i, request):
    """Retry after CONCURRENT_TRANSACTIONS / NOT_COORDINATOR, to the coordinator found now."""
    return w._replace(network=send(w.network, request._replace(
        coordinator_epoch=w.coordinator.coordinator_epoch)))


def receive_init_producer_id_response(K, w, i, m):
    """InitProducerIdHandler.handleResponse."""
    p = w.producers[i]
    if p.in_flight_request != Rpc.InitProducerId:
        return w
    if m.error == Errors.NONE:
        return _with(w, i, state=C.READY, producer_id=m.producer_id, producer_epoch=m.producer_epoch,
                     in_flight_request=-1, next_sequence=(0,) * K.partitions)
    if m.error in RETRIABLE:
        return _resend(w, i, InitProducerId(Rpc.InitProducerId, i, p.tid, 0))
    return _with(w, i, **fatal(p)._asdict())


def receive_add_partitions_response(K, w, i, m):
    """AddPartitionsToTxnHandler.handleResponse."""
    p = w.producers[i]
    if p.in_flight_request != Rpc.AddPartitionsToTxn:
        return w
    if m.error == Errors.NONE:
        return _with(w, i, partitions=p.partitions | p.pending_partitions,
                     pending_partitions=frozenset(), in_flight_request=-1)
    if m.error in RETRIABLE:
        return _with(w, i, new_partitions=p.new_partitions | p.pending_partitions,
                     pending_partitions=frozenset(), in_flight_request=-1)
    return _with(w, i, **fatal(p)._asdict())


def receive_end_txn_response(K, w, i, m):
    """EndTxnHandler.handleResponse (TV2: the response carries the bumped epoch)."""
    p = w.producers[i]
    if p.in_flight_request != Rpc.EndTxn:
        return w
    if m.error == Errors.NONE:
        epoch = dict(producer_id=m.producer_id, producer_epoch=m.producer_epoch,
                     next_sequence=(0,) * K.partitions) if K.tv2 else {}
        return _with(w, i, in_flight_request=-1, partitions=frozenset(), **_completed(K, p),
                     **epoch)
    if m.error in RETRIABLE:
        return _resend(w, i, EndTxn(Rpc.EndTxn, i, p.tid, 0, p.producer_id, p.producer_epoch,
                                    p.state == C.COMMITTING_TRANSACTION))
    return _with(w, i, **fatal(p)._asdict())


def receive_txn_offset_commit_response(K, w, i, m):
    """TxnOffsetCommitHandler.handleResponse: a stale generation makes the transaction abortable
    (CommitFailedException); a fenced epoch or another error is fatal. (The retriable errors
    cannot occur: the group coordinator does not move and retries its own verification.)"""
    p = w.producers[i]
    if p.in_flight_request != Rpc.TxnOffsetCommit:
        return w
    if m.error == Errors.NONE:
        return _with(w, i, offsets=OFFSETS_DONE, in_flight_request=-1)
    if m.error == Errors.ILLEGAL_GENERATION:
        state = p.state if p.state == C.ABORTING_TRANSACTION else C.ABORTABLE_ERROR
        return _with(w, i, offsets=OFFSETS_NONE, in_flight_request=-1, state=state)
    return _with(w, i, **fatal(p)._asdict())


def receive_produce_response(K, w, i, m):
    """Sender.handleProduceResponse / TransactionManager error handling for a batch."""
    p = w.producers[i]
    if m.request not in p.in_flight:
        return w
    in_flight = tuple(r for r in p.in_flight if r != m.request)
    if m.error in (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER):
        return _with(w, i, in_flight=in_flight)
    if m.error in (Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED):
        return _with(w, i, **fatal(p, in_flight=in_flight)._asdict())
    if p.state in (C.FATAL_ERROR, C.ABORTING_TRANSACTION):  # transitionToAbortableError skips
        return _with(w, i, in_flight=in_flight)               # a transaction already aborting
    return _with(w, i, in_flight=in_flight, state=C.ABORTABLE_ERROR)


# --- faults -----------------------------------------------------------------------------------------

def crash_producer_enabled(K, w):
    if not w.budgets.producer_crashes:
        return []
    return [(i,) for i, p in _running(K, w)
            if not p.replaced and p.instance + 1 < K.producers_per_id]


def crash_producer(K, w, i):
    """The application instance dies and a new one starts with the same transactional.id. The old
    instance is not stopped: it may go on as a zombie (or never act again)."""
    w = _with(w, i, replaced=True)
    w = _with(w, i + 1, started=True)
    return w._replace(budgets=w.budgets._replace(producer_crashes=w.budgets.producer_crashes - 1))
