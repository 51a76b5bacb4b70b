"""The transaction coordinator and its replicated transaction log.

Follows ``core/.../coordinator/transaction/TransactionCoordinator.scala`` (handleInitProducerId,
handleAddPartitionsToTransaction, handleEndTransaction / endTransactionWithTV1 / endTransaction,
abortTimedOutTransactions, onElection), ``TransactionMetadata`` (prepare* transitions and
pendingState), ``TransactionStateManager.appendTransactionToLog`` and
``TransactionMarkerRequestCompletionHandler``.

A transition is prepared in memory (``pending_state`` set), appended to the log, and applied
(and answered) only when the append completes (``CommitTxnLogAppend``), and only if the
coordinator epoch did not change meanwhile. ``ElectCoordinator`` moves leadership of the
transaction log: the new coordinator reloads the log (the in-flight append is replicated or
lost, both are possible), the old one answers its pending callbacks NOT_COORDINATOR, and markers
of transactions in PrepareCommit/PrepareAbort are sent again. ``BounceCoordinator`` (KRaft:
``coordinator_bounce_keeps_epoch``, conformance #15; on 4.x followed by a failover, #19) is the
same reload by the broker that was killed and restarted leading the log at the same leader
epoch, hence the same coordinator epoch (``bounce_coordinator`` says what becomes of the killed
incarnation's messages).

``ExpireTransactionalId`` (removeExpiredTransactionalIds) moves an idle transactional.id (Empty,
CompleteCommit, CompleteAbort) to Dead with a tombstone; once replicated its metadata is gone and
the next InitProducerId starts over with a new producer id.

Abstractions: one ``__transaction_state`` partition, so one coordinator for every
transactional.id; time is not modelled (a transaction may time out whenever it is Ongoing,
within the budget).

Epoch exhaustion: ``cluster.last_epoch`` stands for Short.MaxValue (the default is 32767 itself,
which no explicit search reaches), so a small search reaches ``isEpochExhausted`` (last - 1).
There InitProducerId rotates the producer id (``prepareProducerIdRotation``; a retry carrying
the previous id passes ``isValidProducerId``), a TV2 EndTxn takes a ``nextProducerId`` at
Prepare* that the response carries and Complete* applies (``prepareAbortOrCommit``,
``prepareComplete``; a retry over it is ``retryOnOverflow``), and 4.3 does so on the fence path
too (KAFKA-20090). A bump past the last epoch throws in Kafka (prepareFenceProducerEpoch's
IllegalStateException, prepareTransitionTo's IllegalArgumentException): the request is answered
UNKNOWN_SERVER_ERROR and nothing changes; a timeout whose fence would throw does not happen.

Not modelled, from the fidelity audit (each a gap a check on these paths would miss):

- at the exhausted epoch: the 0.11 .. 2.4 paths before KIP-360 are the same as 2.5's (the
  explicit and symbolic models are compared there, from 32,765 with the real Short.MaxValue:
  tests/model/test_symbolic_refinement.py);
- every TV2 preset fences an Ongoing transaction at epoch + 1 as 4.0.1 and later do; 4.0.0's
  epoch + 2 with lastProducerEpoch + 1 (KAFKA-19367) is the flag ``fence_double_bump``, on no
  preset;
- a reload keeps lastProducerEpoch, which TransactionLog never writes (readTxnRecord sets it
  to -1 in every version since 2.5, 4.4 and trunk included): a KIP-360 retry of a completed bump
  across a failover is fenced in Kafka and accepted here, unless the flag
  ``forget_last_producer_epoch`` is set (on no preset yet: it moves the pinned counts);
- a deposed coordinator stops at once (its callbacks answer NOT_COORDINATOR): it does not keep
  retrying markers or timing transactions out under its old coordinator epoch for a while; a
  transaction-log append never fails without a failover (``appendTransactionToLog`` errors,
  ``hasFailedEpochFence``, KAFKA-9666);
- the InitProducerId that fences an Ongoing transaction is answered CONCURRENT_TRANSACTIONS at
  once, not after the PrepareAbort append completes (``sendRetriableErrorCallback``); the client
  retries either way.
"""
from __future__ import annotations

from kafka_mc.model.kafka.network import (AddPartitionsToTxnResponse, EndTxnResponse, InitProducerIdResponse,
                           Rpc, VerifyAddPartitionResponse, WriteTxnMarkers, answer, duplicate,
                           send)
from kafka_mc.model.kafka.world import (Append, Errors, Reply, TxnMetadata, TxnState as T, World, budget,
                         offline_partitions, replace_at, spend)

PREPARE = (T.PrepareCommit, T.PrepareAbort)
COMPLETE = (T.Empty, T.CompleteCommit, T.CompleteAbort)
NO_REPLY = Reply(-1, -1)


def _put(w: World, tid: int, txn: TxnMetadata, append=None) -> World:
    c = w.coordinator
    c = c._replace(txns=replace_at(c.txns, tid, txn))
    if append is not None:
        c = c._replace(appends=replace_at(c.appends, tid, append))
    return w._replace(coordinator=c)


def respond(w: World, request, response) -> World:
    """Answer ``request`` (nothing is sent if its connection was closed: ``network.answer``)."""
    return w._replace(network=answer(w.network, request, response))


def send_reply(w: World, response) -> World:
    """An append's callback answers the sender its ``Reply`` names (``reply_later``)."""
    return w._replace(network=send(w.network, response))


def reply_later(request, rpc: int, producer: int = -1, answered=()) -> Reply:
    """Whom the append's callback answers: the sender of ``request``, unless its connection was
    closed (the callback's send goes nowhere)."""
    return NO_REPLY if request.disconnected else Reply(producer, rpc, answered)


def _error_reply(rpc: int, producer: int, error: Errors, request=()):
    if rpc == Rpc.VerifyAddPartitionResponse:
        return VerifyAddPartitionResponse(Rpc.VerifyAddPartitionResponse, request.partition, error,
                                          request.guard, request.produce)
    if rpc == Rpc.InitProducerIdResponse:
        return InitProducerIdResponse(Rpc.InitProducerIdResponse, producer, error, -1, -1)
    if rpc == Rpc.AddPartitionsToTxnResponse:
        return AddPartitionsToTxnResponse(Rpc.AddPartitionsToTxnResponse, producer, error)
    return EndTxnResponse(Rpc.EndTxnResponse, producer, error, -1, -1)


def _fenced(K) -> Errors:
    """INVALID_PRODUCER_EPOCH was split into PRODUCER_FENCED in 2.7 (KAFKA-9911)."""
    return Errors.PRODUCER_FENCED if K.features.producer_fenced_error else Errors.INVALID_PRODUCER_EPOCH


def _producer_checks(w: World, m) -> tuple[Errors, TxnMetadata]:
    """The checks every request carrying a producer id starts with, in Kafka's order: this broker
    is the transaction's coordinator, then the id maps to the transactional.id."""
    c = w.coordinator
    if m.coordinator_epoch != c.coordinator_epoch:
        return Errors.NOT_COORDINATOR, c.txns[m.tid]
    txn = c.txns[m.tid]
    if txn.producer_id == -1 or txn.producer_id != m.producer_id:
        return Errors.INVALID_PRODUCER_ID_MAPPING, txn
    return Errors.NONE, txn


def prepare_transition(w, tid, txn: TxnMetadata, target: TxnMetadata, reply: Reply) -> World:
    """prepareTransitionTo + appendTransactionToLog: pendingState set, the entry in flight. The
    target's prevProducerId is the id before the transition (TxnTransitMetadata), kept here only
    when the transition changes it (a rotation)."""
    prev = txn.producer_id if target.producer_id != txn.producer_id else -1
    if target.prev_producer_id != prev:
        target = target._replace(prev_producer_id=prev)
    return _put(w, tid, txn._replace(pending_state=target.state), Append(target, reply))


def exhausted(K, epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: epoch >= Short.MaxValue - 1 (``cluster.last_epoch``
    stands for Short.MaxValue)."""
    return epoch >= K.last_epoch - 1


def _new_producer_id(w: World) -> tuple[World, int]:
    """ProducerIdManager.generateProducerId."""
    c = w.coordinator
    return w._replace(coordinator=c._replace(next_producer_id=c.next_producer_id + 1)), \
        c.next_producer_id


def fence_epoch(K, txn: TxnMetadata) -> int:
    """prepareFenceProducerEpoch's bumped epoch, or -1 where it throws: at Short.MaxValue
    (IllegalStateException) until 4.3, which keeps the epoch there instead (KAFKA-20090). 4.0.0's
    TV2 fence (KAFKA-19367) bumped the cached epoch and prepareAbortOrCommit bumped it again, so
    from Short.MaxValue - 1 the abort overflowed (IllegalArgumentException)."""
    if txn.producer_epoch < K.last_epoch:
        epoch = txn.producer_epoch + 1
    else:
        epoch = txn.producer_epoch if K.features.last_epoch_recovery else -1
    if K.tv2 and K.features.fence_double_bump and epoch != -1:
        epoch = epoch + 1 if epoch < K.last_epoch else -1
    return epoch


# --- InitProducerId ---------------------------------------------------------------------------------

def handle_init_producer_id(K, w: World, m) -> World:
    """TransactionCoordinator.handleInitProducerId + prepareInitProducerIdTransit. A KIP-360
    request carries the client's producer id and epoch: a different id is fenced unless the
    metadata is new (isValidProducerId); the epoch is checked by prepareIncrementProducerEpoch."""
    c = w.coordinator
    reply = lambda w, e: respond(w, m, _error_reply(Rpc.InitProducerIdResponse, m.producer, e))
    if m.coordinator_epoch != c.coordinator_epoch:
        return reply(w, Errors.NOT_COORDINATOR)
    if m.keep_prepared_txn:   # KIP-939: "the feature hasn't been implemented yet" (any branch)
        return reply(w, Errors.UNSUPPORTED_VERSION)
    txn = c.txns[m.tid]
    if txn.producer_id == -1:  # no metadata: a new producer id, epoch -1, Empty (not yet logged)
        txn = TxnMetadata(producer_id=c.next_producer_id)
        w = w._replace(coordinator=c._replace(next_producer_id=c.next_producer_id + 1))
        w = _put(w, m.tid, txn)
    bump = m.producer_id != -1
    if txn.pending_state != -1:
        return reply(w, Errors.CONCURRENT_TRANSACTIONS)
    if bump and txn.producer_epoch != -1 and m.producer_id != txn.producer_id and not (
            m.producer_id == txn.prev_producer_id and exhausted(K, m.producer_epoch)):
        return reply(w, _fenced(K))         # isValidProducerId (a retry over a rotation passes)
    if txn.state in PREPARE:
        return reply(w, Errors.CONCURRENT_TRANSACTIONS)
    owner = w.producers[m.producer].instance   # (ghost: the epoch's maker)
    if txn.state == T.Ongoing:  # fence the old producer and abort its transaction
        if K.features.bump_epoch_on_timeout and fence_epoch(K, txn) == -1:
            return reply(w, Errors.UNKNOWN_SERVER_ERROR)
        return reply(fence_and_abort(K, w, m.tid, txn, owner), Errors.CONCURRENT_TRANSACTIONS)
    if exhausted(K, txn.producer_epoch):
        if bump and m.producer_epoch != txn.producer_epoch:
            return reply(w, Errors.UNKNOWN_SERVER_ERROR)   # prepareIncrementProducerEpoch throws
        w, pid = _new_producer_id(w)                       # prepareProducerIdRotation
        target = txn._replace(producer_id=pid, producer_epoch=0, state=T.Empty,
                              last_producer_epoch=txn.producer_epoch if bump else -1,
                              partitions=frozenset(), pending_state=-1, epoch_owner=owner)
        return prepare_transition(w, m.tid, txn, target,
                                  reply_later(m, Rpc.InitProducerIdResponse, m.producer))
    # Empty / CompleteCommit / CompleteAbort: prepareIncrementProducerEpoch
    if not bump:                                    # a new producer instance
        epoch, last = txn.producer_epoch + 1, -1
    elif m.producer_epoch == txn.producer_epoch or txn.producer_epoch == -1:
        epoch, last = txn.producer_epoch + 1, txn.producer_epoch   # the client recovering
    elif m.producer_epoch == txn.last_producer_epoch:
        epoch, last = txn.producer_epoch, txn.last_producer_epoch  # a retry of a done bump
    else:
        return reply(w, _fenced(K))
    target = txn._replace(producer_epoch=epoch, last_producer_epoch=last, state=T.Empty,
                          partitions=frozenset(), pending_state=-1,
                          epoch_owner=owner if epoch != txn.producer_epoch else txn.epoch_owner)
    return prepare_transition(w, m.tid, txn, target,
                              reply_later(m, Rpc.InitProducerIdResponse, m.producer))


def fence_and_abort(K, w, tid, txn, owner: int = -1):
    """prepareFenceProducerEpoch, then endTransaction(ABORT, isFromClient = false): the epoch is
    bumped in memory at once and PrepareAbort is written with it. Before 1.0 (KAFKA-6119) the
    abort used the current epoch, so the old producer was not fenced. The caller checked that
    the fence does not throw (``fence_epoch``). TV2 (generateTxnTransitMetadataForTxnCompletion)
    takes a nextProducerId when the epoch is exhausted, but until 4.3 not on this path
    (``!isEpochFence``, KAFKA-20090): the abort then leaves the id at the last epoch.
    ``owner`` (ghost): the instance whose InitProducerId fenced, -1 for the coordinator's own abort (a timeout, a forced termination)."""
    if K.features.bump_epoch_on_timeout:
        epoch = fence_epoch(K, txn)
        last = epoch - 1 if K.tv2 and K.features.fence_double_bump else -1
        txn = txn._replace(producer_epoch=epoch, last_producer_epoch=last,
                           epoch_owner=owner if epoch != txn.producer_epoch else txn.epoch_owner)
    target = txn._replace(state=T.PrepareAbort, pending_state=-1)
    if (K.tv2 and K.features.rotate_on_fence
            and exhausted(K, w.coordinator.txns[tid].producer_epoch)):
        w, pid = _new_producer_id(w)
        target = target._replace(next_producer_id=pid)
    return prepare_transition(w, tid, txn, target, NO_REPLY)


# --- AddPartitionsToTxn -------------------------------------------------------------------------------

def handle_add_partitions(K, w: World, m) -> World:
    """TransactionCoordinator.handleAddPartitionsToTransaction (client path, TV1)."""
    reply = lambda e: respond(w, m, _error_reply(Rpc.AddPartitionsToTxnResponse, m.producer, e))
    error, txn = _producer_checks(w, m)
    if error:
        return reply(error)
    if txn.producer_epoch != m.producer_epoch:
        return reply(_fenced(K))
    if txn.pending_state != -1 or txn.state in PREPARE:
        return reply(Errors.CONCURRENT_TRANSACTIONS)
    if txn.state == T.Ongoing and m.partitions <= txn.partitions:
        return reply(Errors.NONE)
    target = txn._replace(state=T.Ongoing, partitions=txn.partitions | m.partitions, pending_state=-1)
    return prepare_transition(w, m.tid, txn, target,
                              reply_later(m, Rpc.AddPartitionsToTxnResponse, m.producer))


def handle_verify_add_partition(K, w: World, m) -> World:
    """AddPartitionsToTxn v4+ from a partition leader: handleVerifyPartitionsInTransaction
    (verify only, KIP-890 part 1) or an implicit add for a TV2 producer (part 2)."""
    reply = lambda e: respond(w, m, _error_reply(Rpc.VerifyAddPartitionResponse, -1, e, m))
    error, txn = _producer_checks(w, m)
    if error:
        return reply(error)
    if txn.producer_epoch != m.producer_epoch:
        return reply(Errors.PRODUCER_FENCED)
    if m.verify_only:  # pending state deliberately not checked
        if txn.state in PREPARE:
            return reply(Errors.CONCURRENT_TRANSACTIONS)
        return reply(Errors.NONE if m.partition in txn.partitions else Errors.INVALID_TXN_STATE)
    if txn.pending_state != -1 or txn.state in PREPARE:
        return reply(Errors.CONCURRENT_TRANSACTIONS)
    if txn.state == T.Ongoing and m.partition in txn.partitions:
        return reply(Errors.NONE)
    target = txn._replace(state=T.Ongoing, partitions=txn.partitions | {m.partition},
                          pending_state=-1)
    return prepare_transition(w, m.tid, txn, target,
                              reply_later(m, Rpc.VerifyAddPartitionResponse, answered=m))


# --- EndTxn -----------------------------------------------------------------------------------------------

def handle_end_txn(K, w: World, m) -> World:
    """TransactionCoordinator.handleEndTransaction: endTransactionWithTV1, or endTransaction (TV2)."""
    reply = lambda e: respond(w, m, _error_reply(Rpc.EndTxnResponse, m.producer, e))
    error, txn = _producer_checks(w, m)
    if (K.tv2 and not K.features.end_txn_epoch_first and error != Errors.NOT_COORDINATOR
            and txn.producer_id != -1 and txn.pending_state != -1):
        # KAFKA-18660 (4.0.0): "This check is performed first so that the pending transition can
        # complete before the next checks", before the producer id's: a client handed the
        # nextProducerId of a rotation that is still only pending waits for it
        return reply(Errors.CONCURRENT_TRANSACTIONS)
    if error and not (error == Errors.INVALID_PRODUCER_ID_MAPPING and K.tv2
                      and _retry_on_overflow(K, txn, m)):
        return reply(error)
    if K.tv2:
        return _end_txn_tv2(K, w, m, txn, reply)
    stale = m.producer_epoch != txn.producer_epoch if K.features.strict_end_txn_epoch \
        else m.producer_epoch < txn.producer_epoch
    if stale:
        return reply(_fenced(K))
    if txn.pending_state != -1:
        return reply(Errors.CONCURRENT_TRANSACTIONS)
    commit = m.committed
    if txn.state == T.Ongoing:
        target = txn._replace(state=T.PrepareCommit if commit else T.PrepareAbort, pending_state=-1)
        return prepare_transition(w, m.tid, txn, target,
                                  reply_later(m, Rpc.EndTxnResponse, m.producer))
    if txn.state == (T.CompleteCommit if commit else T.CompleteAbort):
        return respond(w, m, EndTxnResponse(Rpc.EndTxnResponse, m.producer, Errors.NONE,
                                             txn.producer_id, txn.producer_epoch))
    if txn.state == (T.PrepareCommit if commit else T.PrepareAbort):
        return reply(Errors.CONCURRENT_TRANSACTIONS)
    return reply(Errors.INVALID_TXN_STATE)


def _retry_on_overflow(K, txn, m) -> bool:
    """endTransaction's retryOnOverflow: the client retries the EndTxn that exhausted its epoch,
    whose completion rotated the producer id."""
    return (txn.prev_producer_id == m.producer_id and m.producer_epoch == K.last_epoch - 1
            and txn.producer_epoch == 0)


def _end_txn_tv2(K, w, m, txn, reply):
    """endTransaction for TV2 (KIP-890 part 2): every EndTxn bumps the epoch; a retry of a
    completed EndTxn (request epoch = current - 1) is answered NONE with the current epoch. A
    commit at that epoch meeting CompleteAbort can only be one the coordinator's own abort (a
    timeout, or a new instance's InitProducerId) overtook: INVALID_TXN_STATE, fatal to Kafka
    Streams, until KAFKA-20785 (trunk) answers it PRODUCER_FENCED."""
    commit = m.committed
    retry = txn.producer_epoch == m.producer_epoch + 1 or _retry_on_overflow(K, txn, m)
    if txn.state in PREPARE:
        ok = retry
    elif txn.state in (T.Ongoing, T.Empty):
        ok = m.producer_epoch == txn.producer_epoch
    else:
        ok = retry or m.producer_epoch == txn.producer_epoch
    if not ok and K.features.end_txn_epoch_first:   # before KAFKA-18464
        return reply(Errors.PRODUCER_FENCED)
    if txn.pending_state != -1:
        return reply(Errors.CONCURRENT_TRANSACTIONS)
    if not ok:
        return reply(Errors.PRODUCER_FENCED)
    if txn.state in PREPARE:
        same = txn.state == (T.PrepareCommit if commit else T.PrepareAbort)
        return reply(Errors.CONCURRENT_TRANSACTIONS if same else Errors.INVALID_TXN_STATE)
    if retry:  # Complete*: answer a retry of the EndTxn that completed it
        if txn.state == (T.CompleteCommit if commit else T.CompleteAbort):
            return respond(w, m, EndTxnResponse(Rpc.EndTxnResponse, m.producer, Errors.NONE,
                                                 txn.producer_id, txn.producer_epoch))
        if commit and txn.state == T.CompleteAbort and K.features.fenced_commit_after_abort:
            return reply(Errors.PRODUCER_FENCED)   # KAFKA-20785: the coordinator aborted it
        return reply(Errors.INVALID_TXN_STATE)
    if commit and txn.state != T.Ongoing:
        return reply(Errors.INVALID_TXN_STATE)
    # prepareAbortOrCommit: epoch + 1 (4.3: an abort at Short.MaxValue stays there, KAFKA-20090;
    # past it prepareTransitionTo throws IllegalArgumentException), and a nextProducerId when the
    # epoch is exhausted
    epoch = txn.producer_epoch + 1
    if epoch > K.last_epoch:
        if commit or not K.features.last_epoch_recovery:
            return reply(Errors.UNKNOWN_SERVER_ERROR)
        epoch = txn.producer_epoch
    next_pid = -1
    if exhausted(K, txn.producer_epoch):
        w, next_pid = _new_producer_id(w)
    target = txn._replace(state=T.PrepareCommit if commit else T.PrepareAbort, pending_state=-1,
                          producer_epoch=epoch, last_producer_epoch=txn.producer_epoch,
                          next_producer_id=next_pid,
                          epoch_owner=w.producers[m.producer].instance
                          if epoch != txn.producer_epoch else txn.epoch_owner)
    return prepare_transition(w, m.tid, txn, target,
                              reply_later(m, Rpc.EndTxnResponse, m.producer))


# --- log appends and markers ------------------------------------------------------------------------------

def commit_append_enabled(K, w):
    return [(tid,) for tid, a in enumerate(w.coordinator.appends) if a]


def commit_append(K, w: World, tid: int) -> World:
    """The append is replicated: appendTransactionToLog's callback completes the transition
    (completeTransitionTo), answers the client and, for Prepare*, sends the markers
    (TransactionMarkerChannelManager.addTxnMarkersToSend)."""
    c = w.coordinator
    a = c.appends[tid]
    target = _logged(a.target)
    c = c._replace(log=replace_at(c.log, tid, written(K, target)),
                   txns=replace_at(c.txns, tid, target), appends=replace_at(c.appends, tid, ()))
    w = w._replace(coordinator=c)
    if a.reply.rpc != -1:
        if a.reply.rpc == Rpc.InitProducerIdResponse:
            w = send_reply(w, InitProducerIdResponse(Rpc.InitProducerIdResponse, a.reply.producer,
                                                     Errors.NONE, target.producer_id,
                                                     target.producer_epoch))
        elif a.reply.rpc == Rpc.EndTxnResponse:   # prepareComplete's id and epoch
            w = send_reply(w, EndTxnResponse(Rpc.EndTxnResponse, a.reply.producer, Errors.NONE,
                                             *_completed_id(target)))
        else:
            w = send_reply(w, _error_reply(a.reply.rpc, a.reply.producer, Errors.NONE,
                                           a.reply.request))
    if target.state in PREPARE:
        w = send_markers(K, w, tid, target)
    return w


def complete_state(state: T) -> T:
    """The Complete* state a Prepare* state's markers lead to."""
    return T.CompleteCommit if state == T.PrepareCommit else T.CompleteAbort


def _completed_id(txn: TxnMetadata) -> tuple[int, int]:
    """The producer id and epoch prepareComplete leaves: TV2's nextProducerId at epoch 0 when the
    epoch was exhausted, else the transaction's own."""
    if txn.next_producer_id != -1:
        return txn.next_producer_id, 0
    return txn.producer_id, txn.producer_epoch


def written(K, txn: TxnMetadata) -> TxnMetadata:
    """What TransactionLog.valueToBytes writes of the metadata, hence what a new coordinator
    reloads (readTxnRecord): until 4.3 not prevProducerId nor nextProducerId, read back as -1
    (KAFKA-20310). lastProducerEpoch is never written and read back as -1 in any version (4.4 and
    trunk included): the flag ``forget_last_producer_epoch`` forgets it, on no preset yet (see
    the module's audit notes)."""
    if K.features.forget_last_producer_epoch and txn.last_producer_epoch != -1:
        txn = txn._replace(last_producer_epoch=-1)      # readTxnRecord: NO_PRODUCER_EPOCH
    if K.features.persist_producer_ids or (txn.prev_producer_id == -1
                                           and txn.next_producer_id == -1):
        return txn
    return txn._replace(prev_producer_id=-1, next_producer_id=-1)


def _logged(target: TxnMetadata) -> TxnMetadata:
    """What a replicated entry leaves in the log and the cache: a Dead entry is a tombstone, so
    the transactional.id has no metadata any more (removeFromCacheCallback; a reload skips it)."""
    return TxnMetadata() if target.state == T.Dead else target


def send_markers(K, w: World, tid: int, txn: TxnMetadata) -> World:
    """TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue: a marker per partition, to
    the endpoint of its leader (KRaftMetadataCache.getPartitionLeaderEndpoint). For a partition
    without a leader (the fault ``offline_partitions``, leader NO_LEADER) the metadata cache
    answered Node.noNode until 4.2, and the marker waits in markersQueueForUnknownBroker until
    the leader is known (here: sent, and not delivered while the partition is offline,
    ``network.to_offline_leader``). From 4.3 (KAFKA-17573) it answers Optional.empty, which
    addTxnMarkersToBrokerQueue takes for a deleted partition: it removes the partition from the
    transaction (txnMetadata.removePartition) and maybeWriteTxnCompletion completes the
    transaction with no marker written (``markers_skip_leaderless_partition``; KAFKA-20734).

    Before the markers go out the coordinator has called TransactionMetadata.prepareComplete:
    the pending state is CompleteCommit / CompleteAbort for the whole marker round, until the
    completion's append is done (TransactionCoordinator.endTransaction's sendTxnMarkersCallback,
    before it answers the EndTxn, in every version from 0.11 to trunk; and
    TransactionStateManager.loadTransactionsForTxnTopicPartition for the Prepare* transactions
    a new coordinator reloads). A request meeting it is answered CONCURRENT_TRANSACTIONS where
    its handler checks pendingTransitionInProgress (InitProducerId, AddPartitionsToTxn, EndTxn;
    a TV2 EndTxn first of all since KAFKA-18660, 4.0.0), which the client retries."""
    cached = w.coordinator.txns[tid]._replace(pending_state=complete_state(txn.state))
    if K.features.markers_skip_leaderless_partition:
        skipped = frozenset(k for k in txn.partitions if w.partitions[k].offline)
        if skipped:
            txn = txn._replace(partitions=txn.partitions - skipped)
            cached = cached._replace(partitions=cached.partitions - skipped)
    w = _put(w, tid, cached)
    c = w.coordinator
    markers = tuple(WriteTxnMarkers(Rpc.WriteTxnMarkers, k, tid, txn.producer_id, txn.producer_epoch,
                                    txn.state == T.PrepareCommit, c.coordinator_epoch)
                    for k in sorted(txn.partitions))
    c = c._replace(markers=replace_at(c.markers, tid, frozenset(txn.partitions)))
    w = w._replace(coordinator=c, network=send(w.network, *markers))
    return _maybe_complete(w, tid)


def _maybe_complete(w: World, tid: int) -> World:
    """All markers acknowledged: append CompleteCommit / CompleteAbort (partitions cleared),
    the transition prepareComplete made pending (TransactionMarkerChannelManager
    .maybeWriteTxnCompletion)."""
    c = w.coordinator
    txn = c.txns[tid]
    if c.markers[tid] or txn.state not in PREPARE or c.appends[tid]:
        return w
    done = complete_state(txn.state)
    pid, epoch = _completed_id(txn)
    target = txn._replace(state=done, partitions=frozenset(), pending_state=-1, producer_id=pid,
                          producer_epoch=epoch, next_producer_id=-1)
    return prepare_transition(w, tid, txn, target, NO_REPLY)


def marker_awaited(w: World, m) -> bool:
    """Whether the coordinator still waits for the answer to marker ``m`` (a WriteTxnMarkers or
    its response): sent under its coordinator epoch for the transaction's producer id, epoch and
    result, and not acknowledged yet. One that is not has no callback left (a duplicate, or the
    answer to an earlier transaction's marker)."""
    c = w.coordinator
    txn = c.txns[m.tid]
    return (m.coordinator_epoch == c.coordinator_epoch and m.partition in c.markers[m.tid]
            and txn.producer_id == m.producer_id and txn.producer_epoch == m.producer_epoch
            and txn.state == (T.PrepareCommit if m.committed else T.PrepareAbort))


def handle_write_txn_markers_response(K, w: World, m) -> World:
    """TransactionMarkerRequestCompletionHandler.onComplete. Each response reaches the callback
    of its own request; one no longer awaited is dropped (a response to the old coordinator
    epoch: the new coordinator resent the markers)."""
    if not marker_awaited(w, m):
        return w
    c = w.coordinator
    if m.error == Errors.NONE:
        c = c._replace(markers=replace_at(c.markers, m.tid, c.markers[m.tid] - {m.partition}))
        return _maybe_complete(w._replace(coordinator=c), m.tid)
    # INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED: stop sending markers for this
    # transactional.id; the transaction stays in Prepare* on this coordinator.
    return w._replace(coordinator=c._replace(markers=replace_at(c.markers, m.tid, frozenset({-1}))))


def marker_may_be_lost(w: World, m) -> bool:
    """Whether marker ``m`` (a WriteTxnMarkers or its response) may be lost (``network.loss``):
    one the coordinator still awaits (``marker_awaited``), or one of an older coordinator epoch,
    whose sender is gone: a killed broker's requests and answers die with its connections, and
    a coordinator that resigned (or was killed) no longer waits for them. Kafka's
    TransactionMarkerRequestCompletionHandler.onComplete takes such a loss (``wasDisconnected``)
    as no marker to resend: the coordinator epoch changed, or the transaction is no longer its
    (getTransactionState answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS), and it
    calls TransactionMarkerChannelManager.removeMarkersForTxn (``marker_timed_out``). Without
    it a marker of a deposed coordinator could only be delivered, late, and the leader would
    have to take it (conformance divergence #12)."""
    return m.coordinator_epoch < w.coordinator.coordinator_epoch or marker_awaited(w, m)


def marker_timed_out(K, w: World, m) -> World:
    """A marker or its answer is lost: the request times out, InterBrokerSendThread completes
    it as disconnected and TransactionMarkerRequestCompletionHandler.onComplete re-enqueues the
    same marker (addTxnMarkersToBrokerQueue: producer id, epoch, result) while the coordinator
    epoch is unchanged. If the first one was appended, the leader sees it twice. A marker of an
    older coordinator epoch is not resent: onComplete finds the epoch changed (or the
    coordinator gone) and calls removeMarkersForTxn; a killed coordinator resends nothing
    (``marker_may_be_lost``)."""
    if m.coordinator_epoch != w.coordinator.coordinator_epoch:
        return w
    return w._replace(network=send(w.network, WriteTxnMarkers(
        Rpc.WriteTxnMarkers, m.partition, m.tid, m.producer_id, m.producer_epoch, m.committed,
        m.coordinator_epoch)))


# --- timeouts and failover -------------------------------------------------------------------------------------

def expire_transaction_enabled(K, w, idle: bool = False):
    """A transaction may time out while the producer is still active (within the budget), and
    always once nothing else can happen (time passes until transaction.timeout.ms expires)."""
    if not (budget(w, "transaction_timeouts") or idle) or two_phase_no_timeout(K):
        return []
    return [(tid,) for tid, t in enumerate(w.coordinator.txns)
            if t.state == T.Ongoing and t.pending_state == -1
            and (not K.features.bump_epoch_on_timeout or fence_epoch(K, t) != -1)]


def two_phase_no_timeout(K) -> bool:
    """KIP-939 (KAFKA-18953): an InitProducerId with enable2Pc sets the transaction's
    txnTimeoutMs to Int.MaxValue, which timedOutTransactions skips (isDistributedTwoPhaseCommitTxn).
    Abstraction: every instance of the 2PC workload asks enable2Pc, so every transaction has it
    and the metadata needs no field for it; the broker's transaction.two.phase.commit.enable is
    on and the ACL granted (else InitProducerId is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    not modelled)."""
    return K.two_phase and K.features.two_phase_commit


def expire_transaction(K, w: World, tid: int, idle: bool = False) -> World:
    """abortTimedOutTransactions: fence the producer (1.0+) and abort."""
    w = fence_and_abort(K, w, tid, w.coordinator.txns[tid])
    if idle:
        return w
    return spend(w, "transaction_timeouts")


# --- an operator's Admin.forceTerminateTransaction (KIP-939, workload.force_terminate) -----------------

def force_terminate_transaction_enabled(K, w):
    """An operator may force-terminate a transactional.id's two-phase-commit transaction while
    it is ongoing or prepared: at the coordinator both are Ongoing (prepareTransaction sends
    nothing), with no transition pending (else the admin is answered CONCURRENT_TRANSACTIONS and
    retries: ``Ongoing`` again or done) and a fence that does not throw (``fence_epoch``; else
    UNKNOWN_SERVER_ERROR, the admin's call fails). Once per transactional.id, but again when a
    failover lost the fence (the admin's retry)."""
    if not K.force_terminate:
        return []
    done = {x[0] for x in w.coordinator.force_terminated}
    return [(tid,) for tid, t in enumerate(w.coordinator.txns)
            if tid not in done and t.state == T.Ongoing and t.pending_state == -1
            and (not K.features.bump_epoch_on_timeout or fence_epoch(K, t) != -1)]


def _terminations_in_effect(ghost: frozenset, log: tuple) -> frozenset:
    """The force terminations whose fence a failover did not lose: one whose PrepareAbort was in
    flight and lost finds the transaction Ongoing as it was; the admin is answered
    NOT_COORDINATOR (sendRetriableErrorCallback passes the append's error on) and
    FenceProducersHandler retries, so it is its to do again (the rule is enabled again)."""
    return frozenset(g for g in ghost if not (log[g[0]].state == T.Ongoing
                                              and log[g[0]].producer_id == g[1]
                                              and log[g[0]].producer_epoch == g[2]))


def force_terminate_transaction(K, w: World, tid: int) -> World:
    """Admin.forceTerminateTransaction (KafkaAdminClient.forceTerminateTransaction, 4.1+,
    KAFKA-19003) is fenceProducers of the one transactional.id: FenceProducersHandler's
    InitProducerId carries producerId -1 and epoch -1, neither enable2Pc nor keepPreparedTxn.
    TransactionCoordinator.handleInitProducerId / prepareInitProducerIdTransit meet the
    transaction Ongoing, as a new producer instance's InitProducerId would:
    prepareFenceProducerEpoch and endTransaction(ABORT, isFromClient = false)
    (``fence_and_abort``): the epoch is bumped and PrepareAbort written, the admin answered
    CONCURRENT_TRANSACTIONS. The ghost records the transaction (its producer id and epoch).

    Abstractions: the admin's request is handled as it is sent (its connection, a loss or a
    duplicate of it, are not modelled); its retry after NOT_COORDINATOR, when a failover lost the
    fence's PrepareAbort, is this rule again (``_terminations_in_effect``); its retry after
    CONCURRENT_TRANSACTIONS, which once the abort completes bumps the epoch again
    (prepareIncrementProducerEpoch, as for a new instance, answered NONE), is not modelled: the
    producer is fenced already."""
    txn = w.coordinator.txns[tid]
    w = fence_and_abort(K, w, tid, txn)
    c = w.coordinator
    ghost = c.force_terminated | {(tid, txn.producer_id, txn.producer_epoch)}
    return w._replace(coordinator=c._replace(force_terminated=ghost))


def expire_transactional_id_enabled(K, w):
    if not budget(w, "transactional_id_expirations"):
        return []
    return [(tid,) for tid, t in enumerate(w.coordinator.txns)
            if t.producer_id != -1 and t.state in COMPLETE and t.pending_state == -1]


def expire_transactional_id(K, w: World, tid: int) -> World:
    """TransactionStateManager.removeExpiredTransactionalIds: transactional.id.expiration.ms
    passed with no transaction (Empty / CompleteCommit / CompleteAbort, nothing pending):
    prepareDead and append a tombstone."""
    txn = w.coordinator.txns[tid]
    w = prepare_transition(w, tid, txn, txn._replace(state=T.Dead, pending_state=-1), NO_REPLY)
    return spend(w, "transactional_id_expirations")


def elect_coordinator_enabled(K, w):
    if not budget(w, "coordinator_failovers"):
        return []
    return [(False,), (True,)] if any(w.coordinator.appends) else [(False,)]


def elect_coordinator(K, w: World, replicated: bool) -> World:
    """Leadership of the transaction log moves (onResignation / onElection): the coordinator
    epoch is bumped, the cache is reloaded from the log (loadTransactionsForTxnTopicPartition),
    in-flight appends are replicated (``replicated``) or lost, the old leader's callbacks answer
    NOT_COORDINATOR, and markers of Prepare* transactions are sent again."""
    return _reload(K, w, replicated, w.coordinator.coordinator_epoch + 1)


def bounce_coordinator_enabled(K, w):
    if not K.features.coordinator_bounce_keeps_epoch:
        return []
    return elect_coordinator_enabled(K, w)


def bounce_coordinator(K, w: World, replicated: bool) -> World:
    """The coordinator's broker is killed and restarts leading ``__transaction_state`` at the
    same partition leader epoch, so TransactionCoordinator.onElection(partition,
    coordinatorEpoch) reloads the log at the same coordinator epoch (conformance #15, real
    3.6.2). KRaft before KAFKA-18106 (4.0) lets it: ClusterControlManager.registerBroker takes
    the new incarnation once the old one's session is invalid (BrokerHeartbeatManager
    .hasValidSession; on one combined node the restarted controller's activate gives the old
    incarnation a fresh session, so the new one is refused DuplicateBrokerRegistrationException
    for broker.session.timeout.ms and retries) and writes only its RegisterBrokerRecord, no
    PartitionChangeRecord: its partitions keep leader and leader epoch, and 3.8/3.9's
    ReplicationControlManager.handleBrokerUncleanShutdown does nothing below the ELR metadata
    version (isElrSupported). On several brokers it is a race the restart wins only when its
    registration comes before the controller's stale-broker fence
    (ReplicationControlManager.maybeFenceOneStaleBroker, which bumps the epoch as
    ``elect_coordinator`` does). From 4.0 (KAFKA-18106) the re-registration moves the
    leadership away, but on one combined node the restarted controller's
    ClusterControlManager.activate gives the old incarnation a fresh session, so the broker's
    metadata publishers replay the log where it still leads at the old epoch and the
    coordinator reloads at it; broker.session.timeout.ms later the controller fences the old
    incarnation and the coordinator reloads at a new epoch: a bounce, then a failover
    (conformance #19, real 4.0.2; the time between is abstracted). The flag
    ``coordinator_bounce_keeps_epoch``; the budget is ``coordinator_failovers`` (a failover
    back to the same broker).

    As ``elect_coordinator``: the log is reloaded with the in-flight appends replicated
    (``replicated``) or lost, the killed incarnation's append callbacks answer NOT_COORDINATOR
    and the Prepare* transactions' markers are sent again, here at the same coordinator epoch,
    so the leaders take old and new markers alike (appendEndTxnMarker fences only a lower
    coordinator epoch). What the killed incarnation had on the wire:

    - its markers in flight leave on the connections it closed: each becomes a copy that may
      still reach its leader at any later time, whose answer is lost (``disconnected``, as
      ``DuplicateRequest``'s); a marker still waiting for its partition's leader (an offline
      partition: markersQueueForUnknownBroker) dies with the process;
    - the answers to its markers are lost (their connection is gone): the new incarnation's
      TransactionMarkerRequestCompletionHandler only ever sees the answers to its own markers,
      which a marker of the same coordinator epoch could not tell apart;
    - a client's or a leader's request to it still in flight stands for the sender's retry
      over a new connection to the restarted broker (Kafka's client and
      AddPartitionsToTxnManager see the disconnect and send it again): the new incarnation
      handles it, as its coordinator epoch is current; an answer it had sent may still arrive.

    Abstractions: the restart is one step (the COORDINATOR_LOAD_IN_PROGRESS answers while it
    loads are not modelled); the other partitions a killed broker led go offline apart
    (``offline_partitions``)."""
    old = w.coordinator
    epoch = old.coordinator_epoch
    offline = offline_partitions(w)

    def mine(m):    # a marker of this incarnation, or its answer, on a connection it had open
        return m.rpc & ~1 == Rpc.WriteTxnMarkers and m.coordinator_epoch == epoch \
            and not (m.rpc == Rpc.WriteTxnMarkers and m.disconnected)
    gone = [m for m in w.network + w.delayed if mine(m)]
    if gone:
        copies = [m._replace(disconnected=True) for m in gone
                  if m.rpc == Rpc.WriteTxnMarkers and m.partition not in offline]
        w = w._replace(network=tuple(m for m in w.network if not mine(m)),
                       delayed=duplicate(tuple(m for m in w.delayed if not mine(m)), *copies))
    return _reload(K, w, replicated, epoch)


def _reload(K, w: World, replicated: bool, epoch: int) -> World:
    """loadTransactionsForTxnTopicPartition at coordinator epoch ``epoch``: the log with the
    in-flight appends replicated (``replicated``) or lost becomes the cache, the old
    coordinator's callbacks answer NOT_COORDINATOR, and Prepare* transactions' markers are
    sent again."""
    old = w.coordinator
    log = tuple(written(K, _logged(a.target)) if replicated and a else t
                for t, a in zip(old.log, old.appends))
    c = old._replace(coordinator_epoch=epoch, log=log, txns=log,
                     appends=((),) * len(log), markers=(frozenset(),) * len(log))
    if old.force_terminated:
        c = c._replace(force_terminated=_terminations_in_effect(old.force_terminated, log))
    w = spend(w._replace(coordinator=c), "coordinator_failovers")
    for a in old.appends:
        if a and a.reply.rpc != -1:
            w = send_reply(w, _error_reply(a.reply.rpc, a.reply.producer, Errors.NOT_COORDINATOR,
                                           a.reply.request))
    for tid, t in enumerate(log):
        if t.state in PREPARE:
            w = send_markers(K, w, tid, t)
    return w
