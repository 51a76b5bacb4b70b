"""Partition leaders: the log of data batches and transaction markers, producer state, the
last stable offset and the aborted-transaction index.

Follows ``UnifiedLog.analyzeAndValidateProducerState`` / ``ProducerAppendInfo`` (duplicate,
epoch and sequence checks, opening a transaction), ``ProducerAppendInfo.appendEndTxnMarker`` and
``KafkaApis.handleWriteTxnMarkersRequest`` (marker epoch and coordinator-epoch checks,
completing the transaction, the .txnindex entry for an abort), ``UnifiedLog.lastStableOffset``.

Transaction verification (KIP-890, ``ReplicaManager.appendRecords`` with
``maybeStartTransactionVerification`` and ``AddPartitionsToTxnManager``): when the producer id has
no open transaction here (TV2: none with this epoch), the leader parks the request, stores a
unique verification guard and asks the coordinator -- verify only (part 1, TV1) or add the
partition (part 2, TV2); the append happens on a successful answer only if the guard is still
there. A marker clears the producer's guard (KAFKA-14884), but from 4.0.0 (KAFKA-18654 [1/2],
``marker_keeps_tv2_guard``) not a TV2 guard of the marker's own epoch (``append_marker``).
Without ``verification_guard`` the answer is trusted whatever happened meanwhile. From 4.0.0
(KAFKA-18654 [2/2]) a TV2 leader retries a verification answered CONCURRENT_TRANSACTIONS itself
for a bounded time, then answers the produce CONCURRENT_TRANSACTIONS
(``ExpireVerificationRetry``: time abstracted, a choice).

Sequences (``validate_and_append``): a batch is a duplicate of one of the producer's last five
batches of its epoch (ProducerStateEntry.batchMetadata), out of order above a verification's
lowest sequence (VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch, KIP-890), and else
continues its epoch's last sequence, or starts a new epoch at 0; a producer id with no state
takes any first sequence from 2.5 (KIP-360), but a TV2 one only 0 from 4.1 (KAFKA-18202). The
window and the lowest sequence are kept with several batches in flight (``workload.max_in_flight``
> 1, ``K.window``), where they decide; with one, the model keeps the last sequence alone and no
lowest (``ProducerStateEntry``, ``Partition`` say what that leaves out), and clears a guard when
its verification succeeds rather than once a batch is written (``without_verification``).

The ``__consumer_offsets`` partition of consume-transform-produce goes through the same code:
a TxnOffsetCommit is appended with origin COORDINATOR (``AppendOrigin.COORDINATOR``: the epoch is
checked, sequences and duplicates are not) and answered with a TxnOffsetCommitResponse.

Abstraction: the high watermark is the log end (see ``Partition``).
"""
from __future__ import annotations

from kafka_mc.model.kafka.network import (ProduceResponse, Rpc, TxnOffsetCommitResponse, VerifyAddPartition,
                           WriteTxnMarkersResponse, answer, connection, deliverable, remove, send)
from kafka_mc.model.kafka.world import (NO_RECORD, AbortedTxn, Batch, Control, Errors, Partition, budget, spend,
                         ProducerStateEntry, RecordId, World, replace_at)


# The fourth field of a ``guards`` entry: the guard is older than its producer's last write (a
# marker of its epoch kept it, KAFKA-18654), so it expires with the producer's state.
OLDER = True


def entry_of(part: Partition, pid: int):
    for e in part.producers:
        if e.producer_id == pid:
            return e
    return None


def with_entry(part: Partition, e: ProducerStateEntry) -> Partition:
    others = [x for x in part.producers if x.producer_id != e.producer_id]
    return part._replace(producers=tuple(sorted(others + [e])))


def last_stable_offset(part: Partition) -> int:
    """UnifiedLog.lastStableOffset: the first offset of the first open transaction, else the
    high watermark (here the log end)."""
    first = [e.current_txn_first_offset for e in part.producers if e.current_txn_first_offset >= 0]
    return min(first) if first else len(part.log)


def handle_produce(K, w: World, m) -> World:
    """A transactional produce request at the partition leader (origin CLIENT), or the group
    coordinator's append of a TxnOffsetCommit (origin COORDINATOR)."""
    part = w.partitions[m.partition]
    e = entry_of(part, m.producer_id)
    if _needs_verification(K, e, m):
        if K.features.early_epoch_rejection and _stale_epoch(e, m):
            return w._replace(network=answer(w.network, m, _response(
                m, Errors.INVALID_PRODUCER_EPOCH)))
        return _start_verification(K, w, part, m)
    return _append_and_respond(K, w, part, e, m)


def _stale_epoch(e, m) -> bool:
    """The request's epoch is below the one the leader has for its producer id (4.1+:
    UnifiedLog.maybeStartTransactionVerification rejects it with InvalidProducerEpochException
    before creating a verification guard, KAFKA-18042; 4.0.2+: UnifiedLog.append checks it
    before the guard, KAFKA-19690)."""
    return e is not None and m.producer_epoch < e.producer_epoch


def _append_and_respond(K, w, part, e, m) -> World:
    error = _generation_check(K, w, m)
    if error == Errors.NONE:
        error, part = validate_and_append(K, part, e, m, w.producers[m.producer])
        if error == Errors.NONE and K.window:
            part = without_verification(part, m.producer_id)
    w = w._replace(partitions=replace_at(w.partitions, m.partition, part))
    if error == Errors.NONE and w.group.deleted and m.rpc == Rpc.TxnOffsetCommit:
        # a deleted simple group is created again (OffsetMetadataManager
        # .validateTransactionalOffsetCommit / replay: getOrMaybeCreateClassicGroup)
        w = w._replace(group=w.group._replace(deleted=False))
    return w._replace(network=answer(w.network, m, _response(m, error)))


def _generation_check(K, w, m) -> Errors:
    """GroupCoordinator.doTxnCommitOffsets (KIP-447): a TxnOffsetCommit's generation is checked
    under the group lock in the same step that stores the offsets as pending, after verification.
    A simple group's generation -1 is accepted: it is always Empty (ClassicGroup
    .validateOffsetCommit: ``generationId < 0 && isInState(EMPTY)``)."""
    if (m.rpc == Rpc.TxnOffsetCommit and K.features.stable_offset_fetch
            and m.generation != w.group.generation and not (K.simple_group and m.generation < 0)):
        return Errors.ILLEGAL_GENERATION
    return Errors.NONE


def _response(m, error):
    if m.rpc == Rpc.TxnOffsetCommit:
        return TxnOffsetCommitResponse(Rpc.TxnOffsetCommitResponse, m.producer, m.partition, error)
    return ProduceResponse(Rpc.ProduceResponse, m.producer, m.partition, error, m)


def _needs_verification(K, e, m) -> bool:
    if not (K.tv2 or K.features.partition_verification):
        return False
    if e is None or e.current_txn_first_offset < 0:
        return True
    return K.tv2 and e.producer_epoch != m.producer_epoch   # hasOngoingTransaction(pid, epoch)


def guard_of(part: Partition, pid: int) -> int:
    return next((x[1] for x in part.guards if x[0] == pid), -1)


def lowest_of(part: Partition, pid: int):
    """The lowest sequence of the producer id's VerificationStateEntry, or None (none kept:
    ``Partition.lowest``)."""
    return next((x[2] for x in part.lowest if x[0] == pid), None)


def without_verification(part: Partition, pid: int) -> Partition:
    """UnifiedLog.updateProducers after a transactional batch is appended
    (ProducerStateManager.clearVerificationStateEntry): the producer id's guard and lowest
    sequence go. With one batch in flight the model clears the guard when the verification
    succeeds, before the append (``handle_verify_response``); with several, as Kafka does, only
    once a batch is appended, so that a verified batch refused for its sequence leaves the
    guard, and its lowest sequence, for the batches before it."""
    return part._replace(guards=tuple(x for x in part.guards if x[0] != pid),
                         lowest=tuple(x for x in part.lowest if x[0] != pid))


def _lowered(lowest: tuple, pid: int, epoch: int, sequence: int) -> tuple:
    """``lowest`` with the producer id's entry made (VerificationStateEntry's constructor) or
    updated (maybeUpdateLowestSequenceAndEpoch: a lower sequence of its epoch, or any sequence of
    a higher epoch, which becomes its epoch)."""
    for x in lowest:
        if x[0] == pid:
            if (epoch == x[1] and sequence < x[2]) or epoch > x[1]:
                return tuple(sorted([y for y in lowest if y[0] != pid] + [(pid, epoch, sequence)]))
            return lowest
    return tuple(sorted(lowest + ((pid, epoch, sequence),)))


def _guard_entry(K, pid: int, guard: int, epoch: int) -> tuple:
    """A ``guards`` entry: (producer id, guard), and with ``marker_keeps_tv2_guard`` under TV2
    the VerificationStateEntry's epoch too (its ``supportsEpochBump`` is the request's version:
    every request of a TV2 model is a TV2 one)."""
    if K.tv2 and K.features.marker_keeps_tv2_guard:
        return (pid, guard, epoch)
    return (pid, guard)


def _start_verification(K, w, part, m) -> World:
    """maybeStartTransactionVerification: reuse the producer id's guard or create one
    (ProducerStateManager.maybeCreateVerificationStateEntry). With ``marker_keeps_tv2_guard`` the
    entry's epoch is the request's at creation and is raised to a later request's higher epoch
    (VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch), the guard staying the same."""
    guard = guard_of(part, m.producer_id)
    if guard == -1:
        guard = part.next_guard
        entry = _guard_entry(K, m.producer_id, guard, m.producer_epoch)
        part = part._replace(guards=tuple(sorted(part.guards + (entry,))), next_guard=guard + 1)
    elif K.tv2 and K.features.marker_keeps_tv2_guard:
        part = part._replace(guards=tuple(
            (x[0], x[1], m.producer_epoch) + x[3:]
            if x[0] == m.producer_id and m.producer_epoch > x[2] else x for x in part.guards))
    if K.window and m.rpc == Rpc.Produce:   # (an offset commit's sequence is NO_SEQUENCE)
        part = part._replace(lowest=_lowered(part.lowest, m.producer_id, m.producer_epoch,
                                             m.base_sequence))
    w = w._replace(partitions=replace_at(w.partitions, m.partition, part))
    return w._replace(network=send(w.network, verification_request(K, w, m, guard)))


def verification_request(K, w, m, guard) -> VerifyAddPartition:
    return VerifyAddPartition(Rpc.VerifyAddPartition, m.partition, w.producers[m.producer].tid,
                              w.coordinator.coordinator_epoch, m.producer_id, m.producer_epoch,
                              not K.tv2, guard, m)


# Verification's retriable errors (ReplicaManager.appendRecordsWithTransactionVerification): the
# leader fails a produce with NOT_ENOUGH_REPLICAS, which every client retries without a metadata
# refresh. For a TxnOffsetCommit the group coordinator passes them on but for NETWORK_EXCEPTION,
# which it converts to COORDINATOR_LOAD_IN_PROGRESS (maybeConvertOffsetCommitError); the
# client's TxnOffsetCommitHandler retries all three.
VERIFICATION_RETRIABLE = (Errors.CONCURRENT_TRANSACTIONS, Errors.NOT_COORDINATOR,
                          Errors.NETWORK_EXCEPTION)


def _retriable(K, m, error: Errors) -> Errors:
    if m.rpc == Rpc.TxnOffsetCommit:
        return Errors.COORDINATOR_LOAD_IN_PROGRESS if error == Errors.NETWORK_EXCEPTION else error
    if error == Errors.NETWORK_EXCEPTION and not K.features.verification_network_error_converted:
        return error        # before KAFKA-16386 (3.7.1, 3.8.0): passed on as it is
    return Errors.NOT_ENOUGH_REPLICAS


def retried_at_leader(K, r) -> bool:
    """Whether the leader may retry verification answer ``r`` itself: from KAFKA-18654 (4.0.0;
    flag ``verification_retry_at_leader``) a TV2 leader's produce path
    (``ReplicaManager.handleProduceAppend``, its callback ``maybeRetryOnConcurrentTransactions``)
    resends a verification answered CONCURRENT_TRANSACTIONS after
    add.partitions.to.txn.retry.backoff.ms, until min(add.partitions.to.txn.retry.backoff.max.ms,
    request.timeout.ms) has passed since the verification started."""
    return (r.error == Errors.CONCURRENT_TRANSACTIONS and K.tv2 and r.produce.rpc == Rpc.Produce
            and K.features.verification_retry_at_leader)


def handle_verify_response(K, w: World, r) -> World:
    """The coordinator answered a verification (AddPartitionsToTxnManager's callback). From 4.0.0
    a TV2 leader retries a produce's CONCURRENT_TRANSACTIONS itself (KAFKA-18654, in the produce
    path: ``retried_at_leader``) while its retry time lasts (``expire_verification_retry`` is
    the answer once it has passed); other retriable errors fail the request for the client to
    resend it, which reuses the producer id's guard."""
    m = r.produce
    part = w.partitions[m.partition]
    if retried_at_leader(K, r):
        return w._replace(network=send(w.network, verification_request(K, w, m, r.guard)))
    if r.error in VERIFICATION_RETRIABLE:
        return w._replace(network=answer(w.network, m, _response(m, _retriable(K, m, r.error))))
    guarded = not K.features.verification_guard or guard_of(part, m.producer_id) == r.guard
    if r.error == Errors.NONE and guarded:
        if not K.window:   # (with several in flight, once appended: ``without_verification``)
            part = part._replace(guards=tuple(x for x in part.guards if x[0] != m.producer_id))
        return _append_and_respond(K, w, part, entry_of(part, m.producer_id), m)
    if r.error == Errors.NONE:   # UnifiedLog.append: batchMissingRequiredVerification
        stale = K.features.epoch_before_guard and _stale_epoch(entry_of(part, m.producer_id), m)
        error = Errors.INVALID_PRODUCER_EPOCH if stale else Errors.INVALID_TXN_STATE
        return w._replace(network=answer(w.network, m, _response(m, error)))
    error = (Errors.INVALID_PRODUCER_EPOCH if r.error == Errors.PRODUCER_FENCED
             else Errors.INVALID_TXN_STATE)
    return w._replace(network=answer(w.network, m, _response(m, error)))


def expire_verification_retry_enabled(K, w: World):
    """The answers to a produce's verification the leader would retry (``retried_at_leader``),
    first on their connection: one may come after the retry time has passed."""
    return [(m,) for _, _, m in deliverable(w.network, ())
            if m.rpc == Rpc.VerifyAddPartitionResponse and retried_at_leader(K, m)]


def expire_verification_retry(K, w: World, r) -> World:
    """The leader receives verification answer ``r`` (CONCURRENT_TRANSACTIONS) once its retry
    time has passed: ``ReplicaManager.handleProduceAppend``'s ``maybeRetryOnConcurrentTransactions``
    ("We've exceeded the retry timeout") hands the result to ``postVerificationCallback``, which
    does not convert CONCURRENT_TRANSACTIONS for a TV2 request (``supportsEpochBump``), so the
    produce is answered CONCURRENT_TRANSACTIONS (the client retries it: ``producer._completion``)
    and the guard stays for the retry. Abstraction: the retry time (add.partitions.to.txn.retry.
    backoff.max.ms, 100 ms by default, bounded by request.timeout.ms) is time, which the model
    does not have; any CONCURRENT_TRANSACTIONS answer, the first one included, may arrive after
    it has passed, so the leader chooses between this and a retry (``handle_verify_response``)."""
    w = w._replace(network=remove(w.network, w.network.index(r)))
    m = r.produce
    return w._replace(network=answer(w.network, m, _response(m, Errors.CONCURRENT_TRANSACTIONS)))


def verification_awaited(w: World, m) -> bool:
    """Whether the leader still waits for the answer to verification ``m`` (a request or its
    response): always, as AddPartitionsToTxnManager calls back every request it sent, even one
    whose guard a marker has cleared meanwhile. (A copy ``DuplicateRequest`` left on a closed
    connection is never lost, ``network.loss``, and its answer is never sent.)"""
    return True


def verification_timed_out(K, w: World, m) -> World:
    """A verification or its answer is lost: AddPartitionsToTxnManager's request times out and
    its callbacks get NETWORK_EXCEPTION (AddPartitionsToTxnHandler.onComplete, wasDisconnected /
    wasTimedOut), a retriable verification error."""
    return w._replace(network=answer(w.network, m.produce, _response(m.produce, _retriable(
        K, m.produce, Errors.NETWORK_EXCEPTION))))


def validate_and_append(K, part: Partition, e, m, producer):
    """(error, partition) after the checks of ProducerAppendInfo, in code order.

    A duplicate (UnifiedLog.analyzeAndValidateProducerState: ProducerStateEntry
    .findDuplicateBatch) is a batch of the entry's epoch whose sequence is one of its last five
    batches' (``ProducerStateEntry.batches``; with one batch in flight, the last one's), answered
    DUPLICATE_SEQUENCE_NUMBER with nothing appended (Kafka answers NONE with the first append's
    offset; the client takes both as success). Then checkProducerEpoch, then checkSequence: with
    several batches in flight, a batch whose producer id has a VerificationStateEntry is refused
    above the entry's lowest sequence (KIP-890, 3.6: "to prevent an OutOfOrderSequence loop", the
    lower sequence still being verified or retried); a new epoch starts at 0; the same epoch
    continues at the last sequence + 1. A first batch whose sequence is not 0 from a producer id
    the leader has no state for (it expired, or a batch before it has not arrived) is rejected
    with UNKNOWN_PRODUCER_ID before 2.5; from 2.5 (KIP-360, KAFKA-8710) checkSequence accepts any
    sequence when there is no producer epoch, but from 4.1 (KAFKA-18202,
    ``tv2_first_sequence``) not from a TV2 producer, whose verified batch
    (verificationStateEntry.supportsEpochBump) must then start at sequence 0
    (OUT_OF_ORDER_SEQUENCE_NUMBER). Storage's ProducerAppendInfo, ProducerStateEntry and
    VerificationStateEntry read the same on the 3.6, 3.9 and 4.0 branches, and with that check on
    4.1 and 4.4."""
    if m.rpc == Rpc.TxnOffsetCommit:
        return _append_offset_commit(part, e, m, producer)
    if e is not None and e.producer_epoch == m.producer_epoch and (
            m.base_sequence in e.batches if K.window else e.last_sequence == m.base_sequence):
        return Errors.DUPLICATE_SEQUENCE_NUMBER, part          # a retry of a cached batch
    if e is not None and m.producer_epoch < e.producer_epoch:
        return Errors.INVALID_PRODUCER_EPOCH, part             # checkProducerEpoch
    lowest = lowest_of(part, m.producer_id) if K.window else None
    if lowest is not None and m.base_sequence > lowest:        # checkSequence: "earliest seen
        return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, part       # sequence"
    if e is None or m.producer_epoch != e.producer_epoch or e.last_sequence == -1:
        if m.base_sequence != 0:                               # checkSequence
            if e is not None:                                  # a new epoch starts at 0
                return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, part
            if K.tv2 and K.features.tv2_first_sequence:        # KAFKA-18202: a verified TV2
                return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, part   # batch with no state
            if not K.features.unknown_producer_any_sequence:   # no state for the id at all
                return Errors.UNKNOWN_PRODUCER_ID, part
    elif m.base_sequence != e.last_sequence + 1:
        return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, part
    record = RecordId(producer.tid, producer.instance, m.txn, m.n)
    cached = e.batches if K.window and e is not None and e.producer_epoch == m.producer_epoch \
        else ()
    return Errors.NONE, _append_data(part, e, m, m.base_sequence, m.base_sequence, record,
                                     (cached + (m.base_sequence,))[-5:] if K.window else ())


def _append_offset_commit(part: Partition, e, m, producer):
    """Origin COORDINATOR (EpochOnly validation): the epoch check alone."""
    if e is not None and m.producer_epoch < e.producer_epoch:
        return Errors.INVALID_PRODUCER_EPOCH, part
    record = RecordId(producer.tid, producer.instance, m.txn, m.offset)
    return Errors.NONE, _append_data(part, e, m, -1, e.last_sequence if e is not None else -1,
                                      record, e.batches if e is not None else ())


def _append_data(part: Partition, e, m, sequence: int, last_sequence: int,
                 record: RecordId, batches: tuple = ()) -> Partition:
    """Append a transactional data batch, opening the producer's transaction if none is open."""
    offset = len(part.log)
    first = e.current_txn_first_offset if e is not None and e.current_txn_first_offset >= 0 else offset
    batch = Batch(m.producer_id, m.producer_epoch, sequence, Control.DATA, -1, record)
    coordinator_epoch = e.coordinator_epoch if e is not None else -1
    entry = ProducerStateEntry(m.producer_id, m.producer_epoch, last_sequence, offset,
                               coordinator_epoch, first, batches)
    return with_entry(part._replace(log=part.log + (batch,)), entry)


def handle_write_txn_markers(K, w: World, m) -> World:
    """KafkaApis.handleWriteTxnMarkersRequest -> appendEndTxnMarker at the leader."""
    part = w.partitions[m.partition]
    error, part = append_marker(K, part, m)
    w = w._replace(partitions=replace_at(w.partitions, m.partition, part))
    return w._replace(network=answer(w.network, m, WriteTxnMarkersResponse(
        Rpc.WriteTxnMarkersResponse, m.partition, m.tid, error, m.coordinator_epoch,
        m.producer_id, m.producer_epoch, m.committed)))


def append_marker(K, part: Partition, m):
    """ProducerAppendInfo.appendEndTxnMarker: checkProducerEpoch, checkCoordinatorEpoch, then the
    marker batch appended and the entry updated (ProducerStateEntry.update), with a .txnindex
    entry for an abort that ends an open transaction.

    checkProducerEpoch under TV2 from KIP-1228 (``strict_marker_epoch``) rejects a marker epoch
    <= the stored one, except (``idempotent_marker_retry``, KAFKA-19999 #21176, 4.2.0) an equal
    epoch with no open transaction (``currentTxnFirstOffset().isEmpty()``) or, from KAFKA-20090
    #21469 (4.3.0, ``last_epoch_recovery``), at Short.MaxValue (``cluster.last_epoch``) even over
    an open one. Such a retry only skips the epoch rejection ("allowing duplicate marker write"):
    the coordinator-epoch check still applies and the marker is written to the log again, a
    second COMMIT/ABORT control batch of the same epoch (seen on real 4.4.0).

    The marker clears the producer id's verification guard (UnifiedLog.updateProducers:
    clearVerificationStateEntry, KAFKA-14884) but, from KAFKA-18654 [1/2] (4.0.0,
    ``marker_keeps_tv2_guard``), not a TV2 guard whose epoch equals the marker's
    (``isV2NextTransactionStarted``: ``entry.supportsEpochBump() && batch.isControlBatch() &&
    batch.producerEpoch() == entry.epoch()``): a TV2 marker carries the bumped epoch, which is
    the next transaction's, so that guard is the next transaction's verification. A guard of any
    other epoch, lower or higher, is cleared; a TV1 guard always is. A rejected marker leaves the
    guards alone (appendEndTxnMarker throws first). A guard kept is marked older than the
    producer's last write (``OLDER``): it expires with the producer (``lose_producer_state``)."""
    e = entry_of(part, m.producer_id)
    if e is not None:
        if K.features.strict_marker_epoch and K.tv2:           # KIP-1228
            retry = (K.features.idempotent_marker_retry and m.producer_epoch == e.producer_epoch
                     and (e.current_txn_first_offset < 0       # KAFKA-19999
                          or (K.features.last_epoch_recovery   # KAFKA-20090 #21469
                              and m.producer_epoch == K.last_epoch)))
            if m.producer_epoch <= e.producer_epoch and not retry:
                return Errors.INVALID_PRODUCER_EPOCH, part
        elif m.producer_epoch < e.producer_epoch:
            return Errors.INVALID_PRODUCER_EPOCH, part
        if e.coordinator_epoch > m.coordinator_epoch:
            return Errors.TRANSACTION_COORDINATOR_FENCED, part
    offset = len(part.log)
    control = Control.COMMIT if m.committed else Control.ABORT
    aborted = part.aborted
    if e is not None and e.current_txn_first_offset >= 0 and not m.committed:
        aborted = aborted + (AbortedTxn(m.producer_id, e.current_txn_first_offset, offset),)
    bumped = e is None or m.producer_epoch != e.producer_epoch
    entry = ProducerStateEntry(m.producer_id, m.producer_epoch,
                               -1 if bumped else e.last_sequence, offset, m.coordinator_epoch, -1,
                               () if bumped else e.batches)   # (maybeUpdateProducerEpoch)
    batch = Batch(m.producer_id, m.producer_epoch, -1, control, m.coordinator_epoch, NO_RECORD)
    guards = tuple(x if x[0] != m.producer_id else x[:3] + (OLDER,) for x in part.guards
                   if x[0] != m.producer_id
                   or (len(x) >= 3 and x[2] == m.producer_epoch))   # isV2NextTransactionStarted
    lowest = tuple(x for x in part.lowest if x[0] != m.producer_id
                   or any(g[0] == m.producer_id for g in guards)) if part.lowest else ()
    part = part._replace(log=part.log + (batch,), aborted=aborted, guards=guards, lowest=lowest)
    return Errors.NONE, with_entry(part, entry)


def lose_producer_state_enabled(K, w):
    if not budget(w, "producer_state_losses"):
        return []
    return [(k, e.producer_id) for k, part in enumerate(w.partitions[:K.partitions])
            for e in part.producers if e.current_txn_first_offset < 0]


def lose_producer_state(K, w: World, k: int, producer_id: int) -> World:
    """ProducerStateManager.removeExpiredProducers: producer.id.expiration.ms passed since the
    id's last write and it has no open transaction, so the leader forgets it (its sequence,
    epoch and coordinator epoch); the id's next batch is checked as an unknown producer's.

    The same call removes the verification entries (VerificationStateEntry) older than
    producer.id.expiration.ms (3.6 .. trunk). An entry's timestamp is set once, when it is made
    (maybeCreateVerificationStateEntry), so one made before the producer's last write (a TV2
    guard a marker of its epoch kept, ``OLDER``) has expired with the producer: it goes too.
    Abstraction: a guard made after the last write is kept (it may have expired as well if it
    is old enough: time is not modelled), and a guard's own expiry without its producer's is
    not modelled."""
    part = w.partitions[k]
    guards = tuple(x for x in part.guards if x[0] != producer_id or len(x) < 4)
    lowest = tuple(x for x in part.lowest if x[0] != producer_id
                   or any(g[0] == producer_id for g in guards)) if part.lowest else ()
    part = part._replace(
        producers=tuple(e for e in part.producers if e.producer_id != producer_id),
        guards=guards, lowest=lowest)
    return spend(w._replace(partitions=replace_at(w.partitions, k, part)), "producer_state_losses")


# --- a partition without a leader (the fault offline_partitions) ------------------------------

def partition_offline_enabled(K, w):
    """A data partition's leader may fail at any time but in the middle of a verification (a
    VerifyAddPartition or its answer in flight: the produce it holds would die with it, which
    the model has as that exchange's loss, ``request_losses`` / ``response_losses``).
    Abstraction: what else is in flight when the broker dies is, to its sender, lost and sent
    again once the partition has a leader (the client's Sender retries a batch after a metadata
    refresh, the coordinator re-enqueues a marker: TransactionMarkerRequestCompletionHandler),
    which the model has as the same request held until ``ElectLeader``
    (``network.to_offline_leader``); an answer the leader sent before it died may still arrive
    or be lost (``LoseResponse``). A one-broker cluster's hard failover kills the coordinator
    and every leader at once, with markers and their answers in flight (conformance #14).
    The ``__consumer_offsets`` partition (the group coordinator's) stays online."""
    if not budget(w, "offline_partitions"):
        return []
    busy = {connection(m)[2] for m in w.network + w.delayed if 6 <= connection(m)[0] <= 7}
    return [(k,) for k in range(K.partitions)
            if not w.partitions[k].offline and k not in busy]


def partition_offline(K, w: World, k: int) -> World:
    """The broker of partition ``k``'s only in-sync replica goes down and the controller fences it
    (broker.session.timeout.ms): the partition's leader becomes NO_LEADER (-1)
    (PartitionChangeBuilder with unclean leader election off; KRaftMetadataCache then finds no
    registered broker for the leader). Its producer state and log stay on the broker's disk;
    the verification guards (ProducerStateManager's in-memory VerificationStateEntry) are lost
    with the process. While it is offline nothing is delivered to it
    (``network.to_offline_leader``) and no consumer fetches from it (``consumer.fetch_enabled``)."""
    part = w.partitions[k]._replace(offline=True, guards=(), lowest=())
    return spend(w._replace(partitions=replace_at(w.partitions, k, part)), "offline_partitions")


def elect_leader_enabled(K, w):
    return [(k,) for k, part in enumerate(w.partitions) if part.offline]


def elect_leader(K, w: World, k: int) -> World:
    """The broker restarts, registers and is unfenced; the controller elects it leader of ``k``
    again (PartitionChangeBuilder.electLeader: the in-sync replica). It reloads the log and the
    producer state (ProducerStateManager's snapshot and the log after it: every entry the model
    keeps is recoverable from them), so the partition is as it was; the requests held for it
    are delivered from now on."""
    part = w.partitions[k]._replace(offline=False)
    return w._replace(partitions=replace_at(w.partitions, k, part))
