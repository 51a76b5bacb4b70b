"""The producer client: the application's choices and the TransactionManager + Sender.

Follows ``clients/.../producer/internals/TransactionManager.java`` and ``Sender.java``. The
application's calls (initTransactions, beginTransaction, send, commitTransaction,
abortTransaction) are nondeterministic actions; the Sender's requests are actions too.

Abstractions: FindCoordinator is folded into sending (a request carries the coordinator epoch
the client found; a NOT_COORDINATOR reply makes it find the new one and resend); one record per
batch (a second record to a partition waits until the first's batch is drained), and at most
``workload.max_in_flight`` batches in flight per partition (max.in.flight.requests.per.connection,
each partition its own connection here; 1 by default); the coordinator-request priority queue is
reduced to "one coordinator request at a time, AddPartitionsToTxn before EndTxn", which is the
order the queue's priorities produce (an epoch bump's InitProducerId, priority EPOCH_BUMP, goes
after the EndTxn).

Several batches in flight (``workload.max_in_flight`` > 1; KAFKA-5494, 1.0: the idempotent
producer's limit of five, the same from 1.0 to 4.4): the Sender drains a new batch while fewer
are in flight to its partition and none waits to be retried there; a batch to retry (a
retriable error, a lost request or answer, or an OUT_OF_ORDER_SEQUENCE_NUMBER that
TransactionManager.canRetry retries: the batch is not the next after the last acknowledged
sequence, or its sequence changed) is resent once it is its partition's first in flight
(RecordAccumulator.reenqueue / shouldStopDrainBatchesForPartition), so retries keep sequence
order; a batch the leader refuses gives its sequence to the batches after it
(adjustSequencesDueToFailedBatch, ``_failed``). Kafka's client does the same with any limit; with
one batch in flight (the default, and every count pinned in tests/presets.py) the model leaves
out what only tells several apart: the last acknowledged sequence (an OUT_OF_ORDER_SEQUENCE_NUMBER
fails the batch: ``_completion``) and the adjustment of the next sequence (``_failed``), each
with where Kafka differs. Not modelled: unresolved sequences (hasUnresolvedSequence, a batch that
expired while being retried), and a disconnect failing every request in flight on the connection
(a loss fails the one request: ``request_timed_out``).

Failed batches (TransactionManager.handleFailedBatch): a fenced epoch is fatal; any other error,
or delivery.timeout.ms expiring a batch in flight (``ExpireBatch``), makes the transaction
abortable, and from 2.5 on a TV1 client must then bump its epoch (KIP-360): the abort's EndTxn is
followed by InitProducerId(producer id, epoch), and abortTransaction() returns when it succeeds.
Lost requests or responses (``LoseRequest``, ``LoseResponse``) time out and the client resends
(``request_timed_out``). An OUT_OF_ORDER_SEQUENCE_NUMBER that fails a batch is abortable at every
version for a transactional producer (0.11 .. 2.4: transitionToAbortableError; from 2.5 on TV1
with the epoch bump), fatal only to an idempotent one (not modelled).
Abstractions: UNKNOWN_PRODUCER_ID is handled as any abortable error (the idempotent producer's
log-start-offset based sequence reset, TransactionManager.canRetry's startSequencesAtBeginning and
handleFailedBatch's resetSequenceForPartition, is not modelled).

Not modelled, from the fidelity audit: UNKNOWN_PRODUCER_ID and INVALID_PRODUCER_ID_MAPPING on
the coordinator's responses are fatal here, abortable in Kafka when an epoch bump is possible
(``EndTxnHandler``, ``abortableErrorIfPossible``), after which the client would bump through
InitProducerId(producer id, epoch); batch expiry in flight (``ExpireBatch``) exists on every
preset, though only from 2.1 (KIP-91, delivery.timeout.ms) in Kafka, and 2.1 .. 2.4 made the
transactional producer fatal when a batch being retried expired (unresolved sequences);
TRANSACTION_ABORTABLE and 4.x's INITIALIZING -> ABORTABLE_ERROR are absent (the edge is listed as
unreachable in tests/presets.py).

Consume-transform-produce (``workload.consume_transform_produce``): the application owns the
input partition in its consumer group (``kafka_mc.model.kafka.group_coordinator``), fetches the committed
offset, consumes one input record per transaction and calls ``sendOffsetsToTransaction`` with the
next offset: TV1 sends AddOffsetsToTxn (here the AddPartitionsToTxn of the ``__consumer_offsets``
partition, which is what the coordinator does with it) and then TxnOffsetCommit to the group
coordinator; TV2 sends TxnOffsetCommit alone. After a commit the application goes on from the
next input offset; after an abort it fetches the committed offset again. With a simple group
(``workload.simple_group``) the application ``assign()``s the input and commits at generation -1.
"""
from __future__ import annotations

from kafka_mc.model.kafka.network import (AddPartitionsToTxn, EndTxn, InitProducerId, Produce, Rpc,
                           TxnOffsetCommit, connection, duplicate, send)
from kafka_mc.model.kafka.world import (OFFSETS_DONE, OFFSETS_NONE, OFFSETS_QUEUED, OFFSETS_SENT, budget, spend,
                         ClientState as C, Errors, Outcome, World, replace_at)

RETRIABLE = (Errors.CONCURRENT_TRANSACTIONS, Errors.NOT_COORDINATOR)
OFFSET_COMMIT_RETRIABLE = (Errors.CONCURRENT_TRANSACTIONS, Errors.NOT_COORDINATOR,
                           Errors.COORDINATOR_LOAD_IN_PROGRESS)
IN_TXN = (C.IN_TRANSACTION, C.COMMITTING_TRANSACTION, C.ABORTING_TRANSACTION, C.ABORTABLE_ERROR,
          C.PREPARED_TRANSACTION)


def with_producer(w: World, i: int, **changes) -> World:
    return w._replace(producers=replace_at(w.producers, i, w.producers[i]._replace(**changes)))


# The producers tuple last asked about and its running instances, one tuple replaced whole: a
# caller reads it once, so concurrent callers (the web explorer's requests) each see a consistent
# pair, never one thread's producers with another's answer.
_last: tuple = (None, None)


def running(K, w: World):
    """Producer instances the application has started (zombies included); every producer rule
    asks this of the same state in a row, so the last answer is kept."""
    global _last
    last = _last
    if last[0] is not w.producers:
        _last = last = (w.producers, [(i, p) for i, p in enumerate(w.producers) if p.started])
    return last[1]


def fatal(p, **changes):
    """TransactionManager.transitionToFatalError: the open transaction's outcome is unknown (a
    failed epoch bump fails the abortTransaction() that was waiting for it)."""
    outcomes = p.outcomes + (Outcome.FAILED,) if p.state in IN_TXN or _bumping(p) else p.outcomes
    return p._replace(state=C.FATAL_ERROR, outcomes=outcomes, in_flight_request=-1, **changes)


# --- the application ----------------------------------------------------------------------------

def init_transactions_enabled(K, w):
    return [(i,) for i, p in running(K, w) if p.state == C.UNINITIALIZED]


def init_transactions(K, w, i):
    """KafkaProducer.initTransactions -> TransactionManager.initializeTransactions. With
    two-phase commit a restarted instance asks to keep a prepared transaction
    (initTransactions(keepPreparedTxn=true), ``coordinator_request``)."""
    return _send(K, with_producer(w, i, state=C.INITIALIZING, in_flight_request=Rpc.InitProducerId), i)


def begin_transaction_enabled(K, w):
    return [(i,) for i, p in running(K, w) if p.state == C.READY and p.txn + 1 < K.transactions
            and (not K.ctp or 0 <= p.position < K.inputs
                 and (K.simple_group or p.generation == w.group.generation))]


def begin_transaction(K, w, i):
    """TransactionManager.beginTransaction: READY -> IN_TRANSACTION (with consume-transform-
    produce, the application has polled the input record at its position)."""
    p = w.producers[i]
    inputs = p.inputs + (p.position,) if K.ctp else p.inputs
    return with_producer(w, i, state=C.IN_TRANSACTION, txn=p.txn + 1, records=0, inputs=inputs)


def send_enabled(K, w):
    return [(i, k) for i, p in running(K, w)
            if p.state == C.IN_TRANSACTION and p.records < K.records
            for k in range(K.partitions) if not any(q[0] == k for q in p.queued)]


def send_record(K, w, i, k):
    """KafkaProducer.send -> TransactionManager.maybeAddPartition. TV1: the partition must be
    added to the transaction before its batch may be drained. TV2: the partition is in the
    transaction at once and the transaction has started (transactionStarted), so an
    abortTransaction() before the batch is drained still sends EndTxn(abort), which the
    coordinator may meet in Empty or Complete* (the "empty abort", KAFKA-18464)."""
    p = w.producers[i]
    new, partitions = p.new_partitions, p.partitions
    if K.tv2:
        partitions = partitions | {k}
    elif k not in p.partitions | p.pending_partitions:
        new = new | {k}
    return with_producer(w, i, queued=p.queued | {(k, p.records)}, records=p.records + 1,
                         new_partitions=new, partitions=partitions)


def commit_transaction_enabled(K, w):
    if K.two_phase:   # the application prepares, and the external decision ends it
        return []
    return [(i,) for i, p in running(K, w)
            if p.state == C.IN_TRANSACTION and p.records == K.records
            and (not K.ctp or p.offsets != OFFSETS_NONE)]


# --- two-phase commit (KIP-939, workload.two_phase_commit) ------------------------------------------
# The application is a participant of an external transaction manager: it prepares each
# transaction (prepareTransaction, no RPC) and hands the PreparedTxnState (producer id, epoch) to
# the manager, whose decision arrives as completeTransaction(preparedTxnState): commit when the
# state matches the producer's, abort otherwise. Abstractions: the manager's decision is a choice
# of the step (``matches``); commitTransaction() / abortTransaction() called on a prepared
# transaction are the same two transitions (TransactionManager.beginCommit / beginAbort from
# PREPARED_TRANSACTION); a restarted instance always asks keepPreparedTxn, which no coordinator
# implements yet (UNSUPPORTED_VERSION, fatal to the client: InitProducerIdHandler), so a prepared
# transaction survives a restart only as an Ongoing one nobody but an operator can end
# (Admin.forceTerminateTransaction: workload.force_terminate, coordinator.force_terminate_transaction).

def prepare_transaction_enabled(K, w):
    if not K.two_phase:
        return []
    return [(i,) for i, p in running(K, w)
            if p.state == C.IN_TRANSACTION and p.records == K.records
            and not p.queued and not p.in_flight and not p.reenqueued and not p.new_partitions
            and not p.pending_partitions and p.in_flight_request == -1
            and (not K.ctp or p.offsets == OFFSETS_DONE)]


def prepare_transaction(K, w, i):
    """KafkaProducer.prepareTransaction: flush() (every batch acknowledged: the guard), then
    TransactionManager.prepareTransaction: IN_TRANSACTION -> PREPARED_TRANSACTION, the
    preparedTxnState the current producer id and epoch (which stay as they are until the
    transaction ends, so the model does not keep a copy). No request is sent."""
    return with_producer(w, i, state=C.PREPARED_TRANSACTION)


def complete_prepared_transaction_enabled(K, w):
    return [(i, matches) for i, p in running(K, w) if p.state == C.PREPARED_TRANSACTION
            for matches in (True, False)]


def complete_prepared_transaction(K, w, i, matches):
    """KafkaProducer.completeTransaction(preparedTxnState): commitTransaction() when the
    external manager's state equals the producer's preparedTransactionState, else
    abortTransaction() (PREPARED_TRANSACTION -> COMMITTING_TRANSACTION / ABORTING_TRANSACTION)."""
    return with_producer(w, i, state=C.COMMITTING_TRANSACTION if matches
                         else C.ABORTING_TRANSACTION)


def commit_transaction(K, w, i):
    """TransactionManager.beginCommit: IN_TRANSACTION -> COMMITTING_TRANSACTION."""
    return with_producer(w, i, state=C.COMMITTING_TRANSACTION)


def abort_transaction_enabled(K, w):
    return [(i,) for i, p in running(K, w)
            if p.state == C.ABORTABLE_ERROR or K.abort_allowed and p.state == C.IN_TRANSACTION]


def abort_transaction(K, w, i):
    """TransactionManager.beginAbort: undrained batches, unsent partitions and an unsent offset
    commit are dropped."""
    p = w.producers[i]
    offsets = OFFSETS_NONE if p.offsets == OFFSETS_QUEUED else p.offsets
    return with_producer(w, i, state=C.ABORTING_TRANSACTION, queued=frozenset(), new_partitions=frozenset(),
                 offsets=offsets)


def send_offsets_enabled(K, w):
    if not K.ctp:
        return []
    return [(i,) for i, p in running(K, w)
            if p.state == C.IN_TRANSACTION and p.offsets == OFFSETS_NONE]


def send_offsets_to_transaction(K, w, i):
    """KafkaProducer.sendOffsetsToTransaction(next input offset, group metadata): TV1 first adds
    the __consumer_offsets partition (AddOffsetsToTxnHandler), then TxnOffsetCommitHandler."""
    p = w.producers[i]
    g, new = K.partitions, p.new_partitions
    if not K.tv2 and g not in p.partitions | p.pending_partitions:
        new = new | {g}
    return with_producer(w, i, offsets=OFFSETS_QUEUED, new_partitions=new)


# --- the Sender -------------------------------------------------------------------------------------

def send_add_partitions_enabled(K, w):
    return [(i,) for i, p in running(K, w)
            if p.new_partitions and p.in_flight_request == -1
            and p.state in (C.IN_TRANSACTION, C.COMMITTING_TRANSACTION)]


def send_add_partitions(K, w, i):
    """TransactionManager.addPartitionsToTransactionHandler."""
    p = w.producers[i]
    return _send(K, with_producer(w, i, pending_partitions=p.new_partitions, new_partitions=frozenset(),
                          in_flight_request=Rpc.AddPartitionsToTxn), i)


def send_produce_enabled(K, w):
    """The batches the Sender may drain (RecordAccumulator.drainBatchesForOneNode): a new one
    while fewer than ``workload.max_in_flight`` are in flight to its partition
    (max.in.flight.requests.per.connection) and none waits to be retried there; a batch to
    retry (``reenqueued``) once it is its partition's first in flight
    (shouldStopDrainBatchesForPartition: ``firstInFlightSequence``), whatever the transaction's
    state but a fatal error (isSendToPartitionAllowed)."""
    out = []
    for i, p in running(K, w):
        if p.queued and p.state in DRAINING:
            drain = [(k, n) for k, n in sorted(p.queued) if _drainable(K, p, k)]
        else:
            drain = []
        if p.reenqueued and p.state != C.FATAL_ERROR:
            drain = sorted(drain + [(r.partition, r.n) for r in p.reenqueued
                                    if r.base_sequence == first_in_flight(p, r.partition)])
        if drain:
            out += [(i, k, n) for k, n in drain]
    return out


DRAINING = (C.IN_TRANSACTION, C.COMMITTING_TRANSACTION)


def _drainable(K, p, k) -> bool:
    """A new batch may be drained to partition ``k`` (TV1: once the partition is added)."""
    if not (K.tv2 or k in p.partitions):
        return False
    if p.reenqueued and any(r.partition == k for r in p.reenqueued):
        return False        # a batch to retry heads the partition's queue
    return not p.in_flight or sum(r.partition == k for r in p.in_flight) < K.max_in_flight


def sequence_of(p, r) -> int:
    """The current sequence of the batch whose attempt ``r`` is (its request's, unless a failed
    batch before it changed it: ``resequenced``)."""
    for x in p.resequenced:
        if x[:3] == (r.partition, r.txn, r.n):
            return x[3]
    return r.base_sequence


def first_in_flight(p, k: int):
    """TransactionManager.firstInFlightSequence: the lowest current sequence of the partition's
    batches in flight or waiting to be retried (None: none)."""
    seqs = [sequence_of(p, r) for r in p.in_flight if r.partition == k]
    seqs += [r.base_sequence for r in p.reenqueued if r.partition == k]
    return min(seqs) if seqs else None


def send_produce(K, w, i, k, n):
    """Sender.sendProducerData: drain the partition's batch with the next sequence number, or
    resend a batch to retry with its current sequence."""
    p = w.producers[i]
    if (k, n) not in p.queued:
        r = next(r for r in p.reenqueued if r.partition == k and r.n == n)
        w = with_producer(w, i, reenqueued=tuple(x for x in p.reenqueued if x != r),
                          in_flight=tuple(sorted(p.in_flight + (r,))))
        return w._replace(network=send(w.network, r))
    seq = p.next_sequence[k]
    request = Produce(Rpc.Produce, i, k, p.producer_id, p.producer_epoch, seq, p.txn, n)
    w = with_producer(w, i, queued=p.queued - {(k, n)}, in_flight=tuple(sorted(p.in_flight + (request,))),
              next_sequence=replace_at(p.next_sequence, k, seq + 1))
    return w._replace(network=send(w.network, request))


def send_txn_offset_commit_enabled(K, w):
    if not K.ctp:
        return []
    return [(i,) for i, p in running(K, w)
            if p.offsets == OFFSETS_QUEUED and p.in_flight_request == -1
            and p.state in (C.IN_TRANSACTION, C.COMMITTING_TRANSACTION)
            and (K.tv2 or K.partitions in p.partitions)]


def send_txn_offset_commit(K, w, i):
    """TxnOffsetCommitHandler: the offset, the member's generation (v3+), the producer's epoch."""
    p = w.producers[i]
    return _send(K, with_producer(w, i, offsets=OFFSETS_SENT, in_flight_request=Rpc.TxnOffsetCommit,
                          partitions=p.partitions | {K.partitions} if K.tv2 else p.partitions), i)


def end_ready(p):
    return (p.state in (C.COMMITTING_TRANSACTION, C.ABORTING_TRANSACTION)
            and p.in_flight_request == -1 and not p.in_flight and not p.reenqueued and not p.queued
            and not p.new_partitions and not p.pending_partitions and p.offsets != OFFSETS_QUEUED)


def send_end_txn_enabled(K, w):
    return [(i,) for i, p in running(K, w) if end_ready(p) and p.partitions]


def send_end_txn(K, w, i):
    """TransactionManager.beginCompletingTransaction: EndTxn once no batch is incomplete."""
    return _send(K, with_producer(w, i, in_flight_request=Rpc.EndTxn), i)


def coordinator_request(K, w: World, i: int):
    """The request producer ``i`` has in flight to a coordinator, as the client built it from its
    state when it enqueued the handler; a retry resends it to the coordinator it finds now
    (TxnRequestHandler.reenqueue after lookupCoordinator). InitProducerId carries the current
    producer id and epoch for a KIP-360 epoch bump, none (-1) for initTransactions."""
    p = w.producers[i]
    r, epoch = p.in_flight_request, w.coordinator.coordinator_epoch
    if r == Rpc.InitProducerId:
        keep = K.two_phase and p.instance > 0 and p.producer_id == -1
        return InitProducerId(r, i, p.tid, epoch, p.producer_id, p.producer_epoch,
                              keep_prepared_txn=keep)
    if r == Rpc.AddPartitionsToTxn:
        return AddPartitionsToTxn(r, i, p.tid, epoch, p.producer_id, p.producer_epoch,
                                  p.pending_partitions)
    if r == Rpc.EndTxn:
        return EndTxn(r, i, p.tid, epoch, p.producer_id, p.producer_epoch,
                      p.state == C.COMMITTING_TRANSACTION)
    return TxnOffsetCommit(r, i, K.partitions, p.producer_id, p.producer_epoch, p.generation,
                           p.position + 1, p.txn)


def _send(K, w: World, i: int) -> World:
    return w._replace(network=send(w.network, coordinator_request(K, w, i)))


def complete_transaction_enabled(K, w):
    return [(i,) for i, p in running(K, w) if end_ready(p) and not p.partitions]


def complete_transaction(K, w, i):
    """No partition was added (transactionStarted is false): no EndTxn is sent at all."""
    return _transaction_done(K, w, i)


def _transaction_done(K, w, i, **changes):
    """TransactionManager.completeTransaction. With an epoch bump required (KIP-360) the client
    goes to INITIALIZING and abortTransaction() returns only when the InitProducerId(pid, epoch)
    it enqueued (priority EPOCH_BUMP, after END_TXN) succeeds."""
    p = w.producers[i]
    if p.epoch_bump_required:
        w = with_producer(w, i, state=C.INITIALIZING, epoch_bump_required=False,
                  in_flight_request=Rpc.InitProducerId, **changes)
        return _send(K, w, i)
    return with_producer(w, i, in_flight_request=-1, **_completed(K, p), **changes)


def _completed(K, p) -> dict:
    """The transaction ended as the client asked: READY, and with consume-transform-produce the
    next input offset after a commit, a fresh OffsetFetch after an abort."""
    committed = p.state == C.COMMITTING_TRANSACTION
    ctp = dict(position=p.position + 1 if committed else -1, offsets=OFFSETS_NONE) if K.ctp else {}
    return dict(state=C.READY, outcomes=p.outcomes + (Outcome.COMMITTED if committed
                                                      else Outcome.ABORTED,), **ctp)


def _bumping(p) -> bool:
    """INITIALIZING for a KIP-360 epoch bump (it has a producer id), not initTransactions."""
    return p.state == C.INITIALIZING and p.producer_id != -1


# --- responses ------------------------------------------------------------------------------------

def receive_init_producer_id_response(K, w, i, m):
    """InitProducerIdHandler.handleResponse: an epoch bump resets the sequence numbers and
    completes the abort; a fenced bump is fatal."""
    p = w.producers[i]
    if p.in_flight_request != Rpc.InitProducerId:
        return w
    if m.error == Errors.NONE:
        done = _completed(K, p) if _bumping(p) else dict(state=C.READY)
        return with_producer(w, i, producer_id=m.producer_id, producer_epoch=m.producer_epoch,
                     in_flight_request=-1, next_sequence=(0,) * K.partitions, last_acked=(),
                     **done)
    if m.error in RETRIABLE:
        return _send(K, w, i)
    return with_producer(w, i, **fatal(p)._asdict())


def receive_add_partitions_response(K, w, i, m):
    """AddPartitionsToTxnHandler.handleResponse."""
    p = w.producers[i]
    if p.in_flight_request != Rpc.AddPartitionsToTxn:
        return w
    if m.error == Errors.NONE:
        return with_producer(w, i, partitions=p.partitions | p.pending_partitions,
                     pending_partitions=frozenset(), in_flight_request=-1)
    if m.error in RETRIABLE:
        return with_producer(w, i, new_partitions=p.new_partitions | p.pending_partitions,
                     pending_partitions=frozenset(), in_flight_request=-1)
    return with_producer(w, i, **fatal(p)._asdict())


def receive_end_txn_response(K, w, i, m):
    """EndTxnHandler.handleResponse (TV2: the response carries the bumped epoch)."""
    p = w.producers[i]
    if p.in_flight_request != Rpc.EndTxn:
        return w
    if m.error == Errors.NONE:
        epoch = dict(producer_id=m.producer_id, producer_epoch=m.producer_epoch,
                     next_sequence=(0,) * K.partitions, last_acked=()) if K.tv2 else {}
        return _transaction_done(K, w, i, partitions=frozenset(), **epoch)
    if m.error in RETRIABLE:
        return _send(K, w, i)
    return with_producer(w, i, **fatal(p)._asdict())


def receive_txn_offset_commit_response(K, w, i, m):
    """TxnOffsetCommitHandler.handleResponse: a stale generation makes the transaction abortable
    (CommitFailedException); the retriable errors a failed verification leaves (the client
    retries them: RetriableException, or NOT_COORDINATOR after a lookup) are retried; a fenced
    epoch or another error is fatal."""
    p = w.producers[i]
    if p.in_flight_request != Rpc.TxnOffsetCommit:
        return w
    if m.error == Errors.NONE:
        return with_producer(w, i, offsets=OFFSETS_DONE, in_flight_request=-1)
    if m.error in OFFSET_COMMIT_RETRIABLE:
        return _send(K, w, i)
    if m.error == Errors.ILLEGAL_GENERATION:
        state = p.state if p.state == C.ABORTING_TRANSACTION else C.ABORTABLE_ERROR
        return with_producer(w, i, offsets=OFFSETS_NONE, in_flight_request=-1, state=state)
    return with_producer(w, i, **fatal(p)._asdict())


def receive_produce_response(K, w, i, m):
    """Sender.completeBatch: success (a duplicate is one: TransactionManager.handleCompletedBatch
    raises lastAckedSequence); NOT_ENOUGH_REPLICAS, NETWORK_EXCEPTION or CONCURRENT_TRANSACTIONS,
    retriable, and with several batches in flight an OUT_OF_ORDER_SEQUENCE_NUMBER that
    TransactionManager.canRetry retries, reenqueue the batch (Sender.reenqueueBatch,
    ``retry_batch``); a fenced producer is fatal; any other error fails the batch
    (Sender.failBatch -> TransactionManager.handleFailedBatch, ``_failed``)."""
    p = w.producers[i]
    outcome = _completion(K.features, p, m, K.window)
    if outcome == STALE:
        return w    # the batch already failed (expired): its callback has run
    r = m.request
    if outcome == RETRY:
        return retry_batch(K, w, i, r)
    done = dict(in_flight=tuple(x for x in p.in_flight if x != r),
                resequenced=_unsequenced(p, r))
    if outcome == DONE:
        if K.window:
            seq, last = sequence_of(p, r), p.last_acked or (-1,) * K.partitions
            done["last_acked"] = replace_at(last, r.partition, max(last[r.partition], seq))
        return with_producer(w, i, **done)
    if outcome == FENCED:
        return with_producer(w, i, **fatal(p, **done)._asdict())
    return with_producer(w, i, **_failed(K, p._replace(**done), r, m.error,
                                         sequence_of(p, r))._asdict())


def retry_batch(K, w, i, r):
    """Sender.reenqueueBatch (RecordAccumulator.reenqueue, in sequence order) of the batch whose
    attempt ``r`` was: resent at once, with its current sequence, when it is its partition's
    first in flight (as every retry is with one batch in flight), else kept in ``reenqueued``
    until it is (``send_produce_enabled``)."""
    p = w.producers[i]
    seq = sequence_of(p, r)
    again = r._replace(base_sequence=seq) if seq != r.base_sequence else r
    if seq == first_in_flight(p, r.partition):
        if again is not r:
            w = with_producer(w, i, in_flight=tuple(sorted(
                [x for x in p.in_flight if x != r] + [again])), resequenced=_unsequenced(p, r))
        return w._replace(network=send(w.network, again))
    return with_producer(w, i, in_flight=tuple(x for x in p.in_flight if x != r),
                         reenqueued=tuple(sorted(p.reenqueued + (again,))),
                         resequenced=_unsequenced(p, r))


def _unsequenced(p, r) -> tuple:
    """``resequenced`` without the batch of attempt ``r``."""
    if not p.resequenced:
        return ()
    return tuple(x for x in p.resequenced if x[:3] != (r.partition, r.txn, r.n))


STALE, RETRY, DONE, FENCED, FAILED = range(5)


def _completion(features, p, m, window: bool = False) -> int:
    """How Sender.completeBatch ends a batch the ProduceResponse ``m`` answers. A leader answers
    an old epoch with INVALID_PRODUCER_EPOCH (ProducerAppendInfo.checkProducerEpoch): a
    ProducerFencedException, fatal, until KIP-588 (2.7, with KAFKA-9911's PRODUCER_FENCED) made it
    an InvalidProducerEpochException, which maybeTransitionToErrorState makes abortable.

    OUT_OF_ORDER_SEQUENCE_NUMBER (TransactionManager.canRetry, the same from 1.0 to 4.4) is
    retried when the batch's sequence was changed since it was sent (sequenceHasBeenReset: a
    batch before it failed) or is not the next after the partition's last acknowledged one
    (isNextSequence): a batch before it is still to be written; otherwise the batch fails, which
    makes the transaction abortable (from 2.5 on TV1 with an epoch bump, KIP-360; a TV2
    transaction's EndTxn bumps the epoch itself), never fatal to a transactional producer
    (handleFailedBatch: only an idempotent producer's OutOfOrderSequenceException bumps its own
    epoch). Abstraction: with one batch in flight (``window`` false) no sequence changes while a
    batch is out and the last acknowledged sequence is not kept: the batch fails, as
    isNextSequence then holds but where the batch before it expired unacknowledged and the
    transaction after the abort kept its epoch (TV1 before KIP-360, or a failure while
    committing), where Kafka retries it. Unresolved sequences (a batch expired while being
    retried, hasUnresolvedSequence) are not modelled."""
    if m.request not in p.in_flight:
        return STALE
    if m.error in (Errors.NOT_ENOUGH_REPLICAS, Errors.NETWORK_EXCEPTION,
                   Errors.CONCURRENT_TRANSACTIONS):
        return RETRY        # RetriableExceptions (Sender.canRetry -> TransactionManager.canRetry:
                            # ``error.exception() instanceof RetriableException``); NETWORK_EXCEPTION:
                            # 3.6's leader before KAFKA-16386 (the client also refreshes its
                            # metadata); CONCURRENT_TRANSACTIONS: a 4.x TV2 leader whose retry
                            # time passed (partition.expire_verification_retry)
    if m.error in (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER):
        return DONE
    if m.error == Errors.PRODUCER_FENCED or (m.error == Errors.INVALID_PRODUCER_EPOCH
                                             and not features.producer_fenced_error):
        return FENCED
    if m.error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and window:
        r = m.request
        seq, last = sequence_of(p, r), p.last_acked[r.partition] if p.last_acked else -1
        if seq != r.base_sequence or seq - last != 1:
            return RETRY
    return FAILED


def fails_a_batch(features, w: World, a, window: bool = False) -> int:
    """The producer whose batch step ``a`` fails (handleFailedBatch), else -1: it makes the
    transaction abortable even when it already is (ABORTABLE_ERROR -> ABORTABLE_ERROR, a
    transition Kafka's table allows that leaves no trace in the state)."""
    if a[0] == "ExpireBatch":
        return a[1]
    if (a[0] == "ReceiveProduceResponse"
            and _completion(features, w.producers[a[1].producer], a[1], window) == FAILED):
        return a[1].producer
    return -1


def _batch_failed(K, p):
    """TransactionManager.maybeTransitionToErrorState for a failed batch: transitionToAbortableError
    (skipped while aborting or fatal); with KIP-360 on TV1 (needToTriggerEpochBumpFromClient) the
    abort must bump the epoch, unless the transaction was already completing (isCompleting)."""
    if p.state in (C.FATAL_ERROR, C.ABORTING_TRANSACTION):
        return p
    bump = (K.features.producer_epoch_bump and not K.tv2
            and p.state != C.COMMITTING_TRANSACTION) or p.epoch_bump_required
    return p._replace(state=C.ABORTABLE_ERROR, epoch_bump_required=bump)


def _failed(K, p, r, error, seq: int):
    """TransactionManager.handleFailedBatch for a batch the leader refused (``p`` without it):
    the transaction abortable (``_batch_failed``), then, unless the producer is fatal or the
    error is UNKNOWN_PRODUCER_ID, the partition's sequences adjusted
    (TxnPartitionEntry.adjustSequencesDueToFailedBatch, Sender.failBatch's
    ``adjustSequenceNumbers``: its retries were not exhausted): the next sequence and every
    later batch in flight or waiting take one less, the failed batch's sequence range being
    unused. An attempt already out keeps its old sequence (``resequenced`` holds the new one,
    for its retry).

    Abstractions: an UNKNOWN_PRODUCER_ID (a leader before 2.5) leaves the sequences alone (Kafka
    resets the partition's: resetSequenceForPartition). With one batch in flight (the counts
    pinned for every preset predate the adjustment) nothing is adjusted: no batch is in flight
    behind the failed one, and the next sequence is used again only where the transaction after
    the abort keeps the epoch (TV1 before KIP-360, or a batch failed while committing), whose
    next batch on the partition then leaves a gap Kafka does not (the leader answers it
    OUT_OF_ORDER_SEQUENCE_NUMBER); everywhere else the epoch bump resets the sequences first."""
    p = _batch_failed(K, p)
    if not K.window or p.state == C.FATAL_ERROR or error == Errors.UNKNOWN_PRODUCER_ID:
        return p
    k = r.partition
    resequenced = [x for x in p.resequenced if x[0] != k]
    for x in p.in_flight:
        if x.partition == k:
            now = sequence_of(p, x)
            if now > seq:
                now -= 1
            if now != x.base_sequence:
                resequenced.append((k, x.txn, x.n, now))
    reenqueued = tuple(sorted(x._replace(base_sequence=x.base_sequence - 1)
                              if x.partition == k and x.base_sequence > seq else x
                              for x in p.reenqueued))
    return p._replace(next_sequence=replace_at(p.next_sequence, k, p.next_sequence[k] - 1),
                      resequenced=tuple(sorted(resequenced)), reenqueued=reenqueued)


# --- faults -----------------------------------------------------------------------------------------

def crash_producer_enabled(K, w):
    if not budget(w, "producer_crashes"):
        return []
    return [(i,) for i, p in running(K, w)
            if not p.replaced and p.instance + 1 < K.producers_per_id]


def crash_producer(K, w, i):
    """The application instance dies and a new one starts with the same transactional.id. The old
    instance is not stopped: it may go on as a zombie (or never act again)."""
    w = with_producer(w, i, replaced=True)
    w = with_producer(w, i + 1, started=True)
    return spend(w, "producer_crashes")


def kill_producer_enabled(K, w):
    if not budget(w, "producer_kills"):
        return []
    return [(i,) for i, _ in running(K, w)]


def kill_producer(K, w, i):
    """The application's process dies for good (kill -9, its machine lost): no zombie, its
    TransactionManager and Sender are gone and the instance never acts again. Its connections
    close with it: the requests it had sent may still reach their brokers, which handle them but
    answer into a closed socket (copies on a closed connection, as ``DuplicateRequest``'s), and
    the answers on their way to it are lost. An answer a broker sends it later (an append's
    callback, a verified batch's) reaches nobody: its delivery changes nothing (every handler
    finds nothing in flight to answer). A new instance of its transactional.id starts if
    the application has one left to start (as after ``CrashProducer``); its open transaction is
    then the new instance's to fence (InitProducerId), or transaction.timeout.ms's to abort. A
    zombie may die too. Ghost fields (what its application was told) are kept."""
    p = w.producers[i]
    if not p.replaced and p.instance + 1 < K.producers_per_id:
        w = with_producer(w, i + 1, started=True)
    w = with_producer(w, i, started=False, replaced=True, in_flight_request=-1, in_flight=(),
                      queued=frozenset())
    mine = [m for m in w.network + w.delayed if m[1] == i and connection(m)[0] in (0, 1, 2, 3, 8, 9)]
    if mine:
        copies = [m._replace(disconnected=True) for m in mine
                  if connection(m)[0] in (0, 2, 8) and not m.disconnected]
        w = w._replace(network=tuple(m for m in w.network if m not in mine),
                       delayed=duplicate(tuple(m for m in w.delayed if m not in mine), *copies))
    return spend(w, "producer_kills")


def dead(p) -> bool:
    """An instance ``kill_producer`` killed: replaced, and no longer running."""
    return p.replaced and not p.started


def expire_batch_enabled(K, w):
    if not budget(w, "batch_expiries"):
        return []
    out = []
    for i, p in running(K, w):
        parts = [r.partition for r in p.in_flight]
        if p.reenqueued or len(parts) > 1:   # (several in flight: one choice per partition)
            parts = sorted(set(parts) | {r.partition for r in p.reenqueued})
        out += [(i, k) for k in parts]
    return out


def expire_batch(K, w, i, k):
    """delivery.timeout.ms passes for the oldest batch of partition ``k`` in flight or waiting to
    be retried (Sender.getExpiredInflightBatches, RecordAccumulator.expiredBatches: a partition's
    batches expire in the order they were made, which is record order) -> failBatch with a
    TimeoutException, sequences not adjusted: the batch fails as any failed batch does; a request
    of it still on its way may land."""
    p = w.producers[i]
    oldest = min((r for r in p.in_flight + p.reenqueued if r.partition == k), key=lambda r: r.n)
    p = _batch_failed(K, p)._replace(in_flight=tuple(r for r in p.in_flight if r != oldest),
                                     reenqueued=tuple(r for r in p.reenqueued if r != oldest),
                                     resequenced=_unsequenced(p, oldest))
    w = w._replace(producers=replace_at(w.producers, i, p))
    return spend(w, "batch_expiries")


COORDINATOR_REQUESTS = (Rpc.InitProducerId, Rpc.AddPartitionsToTxn, Rpc.EndTxn, Rpc.TxnOffsetCommit)


def awaited(w: World, m) -> bool:
    """Whether the client still waits for the answer to request ``m``, or to the request response
    ``m`` answers (not if it was answered or failed, or ``m`` is a stale copy)."""
    r = m.rpc
    if r in (Rpc.Produce, Rpc.ProduceResponse):
        return (m if r == Rpc.Produce else m.request) in w.producers[m.producer].in_flight
    return (r & ~1) in COORDINATOR_REQUESTS and w.producers[m.producer].in_flight_request == r & ~1


def request_timed_out(K, w, m):
    """A client request or its response is lost: request.timeout.ms passes, NetworkClient
    disconnects and the client resends the request (TxnRequestHandler.reenqueue after
    lookupCoordinator, to the coordinator it finds now; the Sender retries a batch with its
    sequence number: ``retry_batch``). After a lost response the request has taken effect: the
    retry must be answered as one. Abstraction: the disconnect fails only the lost request, not
    the other batches in flight on the connection."""
    if m.rpc == Rpc.ProduceResponse:
        m = m.request
    if m.rpc == Rpc.Produce:
        return retry_batch(K, w, m.producer, m)
    return _send(K, w, m.producer)
