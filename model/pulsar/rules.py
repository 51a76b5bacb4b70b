"""The steps of the Pulsar transactions model, by component, each citing the Pulsar class and
method it follows (apache/pulsar: pulsar-client ``TransactionImpl``,
``TransactionCoordinatorClientImpl``; pulsar-broker ``TransactionMetadataStoreService``,
``TopicTransactionBuffer``, ``PendingAckHandleImpl``; pulsar-transaction/coordinator
``MLTransactionMetadataStore``). ``enabled(p, w)`` yields argument tuples, ``apply(p, w, ...)``
returns the next ``World``; both are pure."""
from __future__ import annotations

from kafka_mc.model.pulsar.world import (ABORT_MARKER, ACK, ACK_RESPONSE, COMMIT_MARKER, END_ON_PARTITION,
                                END_ON_PARTITION_RESPONSE, END_ON_SUBSCRIPTION,
                                END_ON_SUBSCRIPTION_RESPONSE, END_TXN, END_TXN_RESPONSE, M, MSG, N,
                                SEND, SEND_RECEIPT, ABORT, ABORTED, ABORTING, ACKED, AVAILABLE,
                                COMMIT, COMMITTED, COMMITTING, DONE, ERROR, IDLE, IN_FLIGHT,
                                INITIALIZING, NONE, OPEN, PENDING, READY, RELEASED, SUB,
                                TIME_OUT, TXN, max_read_after, put, send, spend, take)

ENDING = {COMMIT: COMMITTING, ABORT: ABORTING}
ENDED = {COMMIT: COMMITTED, ABORT: ABORTED}


# --- the client: TransactionImpl, TransactionCoordinatorClientImpl -------------------------------

def new_txn_enabled(p, w):
    if w.client.state == NONE:
        yield ()


def new_txn(p, w):
    """``TransactionCoordinatorClientImpl.newTransaction`` -> ``MLTransactionMetadataStore.
    newTransaction`` (NEW appended to the log; ``TransactionTimeoutTracker.addTransaction``)."""
    return w._replace(client=w.client._replace(state=OPEN), tc=w.tc._replace(status=OPEN))


def produce_enabled(p, w):
    if w.client.state == OPEN:
        yield from ((t,) for t, op in enumerate(w.client.produced) if op == IDLE)


def produce(p, w, t):
    """``ProducerImpl.sendAsync`` with the transaction: ``TransactionImpl.registerProducedTopic``
    (``addPublishPartitionToTxn``: the store adds the partition, ADD_PARTITION, while the
    transaction is OPEN), then CommandSend(txn) to topic ``t``'s owner; the send waits for the
    registration, so the two are one step here. A registration refused (InvalidTxnStatus: the
    coordinator aborted it) fails the send, and the transaction is in error for the client."""
    if w.tc.status != OPEN:
        return w._replace(client=w.client._replace(state=ERROR))
    return w._replace(client=w.client._replace(produced=put(w.client.produced, t, IN_FLIGHT)),
                      tc=w.tc._replace(partitions=w.tc.partitions | {t}), net=send(w, (SEND, t)))


def acknowledge_enabled(p, w):
    if w.client.state == OPEN and w.client.ack == IDLE:
        yield ()


def acknowledge(p, w):
    """``ConsumerImpl.acknowledgeAsync(m0, txn)``: ``TransactionImpl.registerAckedTopic``
    (``addSubscriptionToTxn``, ADD_SUBSCRIPTION), then CommandAck(txn) to the input topic's
    owner (one step, as for a send)."""
    if w.tc.status != OPEN:
        return w._replace(client=w.client._replace(state=ERROR))
    return w._replace(client=w.client._replace(ack=IN_FLIGHT), tc=w.tc._replace(subscribed=True),
                      net=send(w, (ACK,)))


def _quiet(c) -> bool:
    """``TransactionImpl`` ends only once every send and ack it registered completed
    (``allOpComplete``)."""
    return IN_FLIGHT not in c.produced and c.ack != IN_FLIGHT


def end_txn_enabled(p, w):
    c = w.client
    if c.state == OPEN and _quiet(c):
        if all(op == DONE for op in c.produced) and c.ack == DONE:
            yield (COMMIT,)
        yield (ABORT,)


def end_txn(p, w, action):
    """``TransactionImpl.commit`` / ``abort`` -> ``TransactionCoordinatorClientImpl.commitAsync``
    / ``abortAsync``: CommandEndTxn(action) to the coordinator."""
    return w._replace(client=w.client._replace(state=ENDING[action]), net=send(w, (END_TXN, action)))


def client_timeout_enabled(p, w):
    if w.client.state == OPEN:
        yield ()


def client_timeout(p, w):
    """``TransactionImpl.run``: the client's timer moves an OPEN transaction to TIME_OUT (it can
    no longer be used; the coordinator aborts it on its own timeout)."""
    return w._replace(client=w.client._replace(state=TIME_OUT))


def send_receipt_enabled(p, w):
    yield from sorted({m[1:] for m in w.net if m[0] == SEND_RECEIPT})


def send_receipt(p, w, t, ok):
    """``ProducerImpl.ackReceived``: the send completes (a second receipt is ignored); a failed
    send fails the transaction's op (``TransactionImpl`` is then in error)."""
    c = w.client
    if c.produced[t] == IN_FLIGHT:
        c = c._replace(produced=put(c.produced, t, DONE)) if ok else c._replace(state=ERROR)
    return w._replace(client=c, net=take(w, (SEND_RECEIPT, t, ok)))


def ack_response_enabled(p, w):
    yield from sorted({m[1:] for m in w.net if m[0] == ACK_RESPONSE})


def ack_response(p, w, ok):
    """``ConsumerImpl``'s ack-with-transaction response (a conflict fails the op)."""
    c = w.client
    if c.ack == IN_FLIGHT:
        c = c._replace(ack=DONE) if ok else c._replace(state=ERROR)
    return w._replace(client=c, net=take(w, (ACK_RESPONSE, ok)))


def end_txn_response_enabled(p, w):
    yield from sorted({m[1:] for m in w.net if m[0] == END_TXN_RESPONSE})


def end_txn_response(p, w, outcome):
    """``TransactionImpl.commit`` / ``abort`` completing: COMMITTED / ABORTED, or ERROR on
    InvalidTxnStatus / TransactionNotFound (the outcome is then unknown to the client). A second
    response to a duplicated EndTxn is ignored (the future completed)."""
    c = w.client
    if c.state in (COMMITTING, ABORTING):
        c = c._replace(state=outcome)
    return w._replace(client=c, net=take(w, (END_TXN_RESPONSE, outcome)))


# --- the coordinator: TransactionMetadataStoreService over MLTransactionMetadataStore ------------

def _targets(tc) -> frozenset:
    return tc.partitions | ({SUB} if tc.subscribed else frozenset())


def _end_markers(tc, action) -> tuple:
    """``endTxnInTransactionBuffer``: one end marker per produced partition (``commitTxnOnTopic``
    / ``abortTxnOnTopic``) and per acked subscription (``...OnSubscription``)."""
    return tuple((END_ON_SUBSCRIPTION, action) if t == SUB else (END_ON_PARTITION, t, action)
                 for t in sorted(tc.waiting))


def _start_end(p, w, action, answer):
    """``updateTxnStatus(OPEN -> COMMITTING / ABORTING)`` then ``endTxnInTransactionBuffer``; with
    nothing to end, straight to COMMITTED / ABORTED."""
    tc = w.tc._replace(status=ENDING[action], waiting=_targets(w.tc), answer=answer)
    w = w._replace(tc=tc)
    if not tc.waiting:
        return _finish(w)
    return w._replace(net=send(w, *_end_markers(tc, action)))


def _finish(w):
    """Every marker confirmed: ``updateTxnStatus(COMMITTED / ABORTED)`` (the entry is removed
    from the store); a waiting client's EndTxn is answered."""
    outcome = COMMITTED if w.tc.status == COMMITTING else ABORTED
    tc = w.tc._replace(status=outcome, answer=False)
    return w._replace(tc=tc, net=send(w, (END_TXN_RESPONSE, outcome)) if w.tc.answer else w.net)


def handle_end_txn_enabled(p, w):
    yield from sorted({m[1:] for m in w.net if m[0] == END_TXN})


def handle_end_txn(p, w, action):
    """``TransactionMetadataStoreService.endTransaction``: from OPEN, start ending; a repeated
    request for the ending already under way waits for it (``fakeAsyncCheckTxnStatus``); the
    other ending answers InvalidTxnStatus, and an ended (removed) transaction
    TransactionNotFound: the client sees ERROR."""
    w = w._replace(net=take(w, (END_TXN, action)))
    status = w.tc.status
    if status == OPEN:
        return _start_end(p, w, action, True)
    if status == ENDING[action]:
        return w._replace(tc=w.tc._replace(answer=True))
    return w._replace(net=send(w, (END_TXN_RESPONSE, ERROR)))


def tc_timeout_enabled(p, w):
    if p.mutant == "no_timeout":   # BROKEN: the tracker never fires
        return
    if w.tc.status == OPEN or (p.mutant == "timeout_committing" and w.tc.status == COMMITTING):
        yield ()


def tc_timeout(p, w):
    """``TransactionTimeoutTrackerImpl`` -> ``endTransactionForTimeout``: an OPEN transaction is
    aborted (``endTransaction(ABORT, isTimeout)``)."""
    if p.mutant == "timeout_committing" and w.tc.status == COMMITTING:   # BROKEN: no OPEN check
        tc = w.tc._replace(status=ABORTING)
        return w._replace(tc=tc, net=send(w, *_end_markers(tc, ABORT)))
    return _start_end(p, w, ABORT, False)


def _confirm(p, w, target):
    """A marker's response: the target leaves ``waiting``; the last one finishes."""
    if w.tc.status not in (COMMITTING, ABORTING) or target not in w.tc.waiting:
        return w    # a response to a marker of a previous coordinator incarnation, or repeated
    w = w._replace(tc=w.tc._replace(waiting=w.tc.waiting - {target}))
    return _finish(w) if not w.tc.waiting else w


def end_on_partition_response_enabled(p, w):
    yield from sorted({m[1:] for m in w.net if m[0] == END_ON_PARTITION_RESPONSE})


def end_on_partition_response(p, w, t):
    """``TransactionBufferClientImpl.commitTxnOnTopic`` / ``abortTxnOnTopic`` completing."""
    return _confirm(p, w._replace(net=take(w, (END_ON_PARTITION_RESPONSE, t))), t)


def end_on_subscription_response_enabled(p, w):
    if (END_ON_SUBSCRIPTION_RESPONSE,) in w.net:
        yield ()


def end_on_subscription_response(p, w):
    """``TransactionBufferClientImpl.commitTxnOnSubscription`` / ``abortTxnOnSubscription``."""
    return _confirm(p, w._replace(net=take(w, (END_ON_SUBSCRIPTION_RESPONSE,))), SUB)


def tc_failover_enabled(p, w):
    if w.budgets[0] > 0 and w.tc.status != NONE:
        yield ()


def tc_failover(p, w):
    """The coordinator's broker fails and another loads it (``TransactionMetadataStoreService.
    handleTcClientConnect``): ``MLTransactionMetadataStore`` replays its log (the same entry),
    the old incarnation's connections close with the markers and responses in flight on them
    (a marker already handled stays handled), and ``TransactionRecoverTrackerImpl.
    handleCommittingAndAbortingTransaction`` ends a COMMITTING / ABORTING transaction again
    (every marker re-sent); the client retries an unanswered EndTxn."""
    net = tuple(m for m in w.net if m[0] not in (END_ON_PARTITION, END_ON_SUBSCRIPTION,
                                                  END_ON_PARTITION_RESPONSE,
                                                  END_ON_SUBSCRIPTION_RESPONSE))
    tc, budgets = w.tc, spend(w, "tc_failovers")
    retry = ()
    if tc.answer:
        retry = ((END_TXN, COMMIT if tc.status == COMMITTING else ABORT),)
    w = w._replace(net=net, budgets=budgets, tc=tc._replace(answer=False))
    if tc.status in (COMMITTING, ABORTING):
        tc = w.tc._replace(waiting=_targets(tc))
        action = COMMIT if tc.status == COMMITTING else ABORT
        return w._replace(tc=tc, net=send(w, *_end_markers(tc, action), *retry))
    return w


# --- the brokers: PersistentTopic, TopicTransactionBuffer, PendingAckHandleImpl ------------------

def _topic(w, t, **fields):
    return put(w.topics, t, w.topics[t]._replace(**fields))


def handle_send_enabled(p, w):
    for t in sorted({m[1] for m in w.net if m[0] == SEND}):
        # the producer reconnecting to the new owner waits for the buffer's recovery
        # (ServerCnx.handleProducer -> checkIfTBRecoverCompletely; appendBufferToTxn pends too)
        if w.topics[t].state == READY:
            yield (t,)


def handle_send(p, w, t):
    """``PersistentTopic.publishTxnMessage``: with deduplication (``MessageDeduplication.
    isDuplicate``) a message already persisted is answered without a second write; otherwise
    ``TopicTransactionBuffer.appendBufferToTxn`` appends it and ``handleTransactionMessage``
    makes the transaction ongoing (unless ongoing or aborted already), bounding maxReadPosition
    below its first message."""
    w = w._replace(net=take(w, (SEND, t)))
    topic = w.topics[t]
    if p.deduplication and (MSG, TXN, M) in topic.ledger:
        return w._replace(net=send(w, (SEND_RECEIPT, t, True)))
    ledger = topic.ledger + ((MSG, TXN, M),)
    ongoing, max_read = topic.ongoing, topic.max_read
    if TXN not in dict(ongoing) and TXN not in topic.aborts:
        ongoing = ongoing + ((TXN, len(topic.ledger)),)
        max_read = max_read_after(topic, ongoing)
    return w._replace(topics=_topic(w, t, ledger=ledger, ongoing=ongoing, max_read=max_read),
                      net=send(w, (SEND_RECEIPT, t, True)))


def handle_end_on_partition_enabled(p, w):
    for m in sorted({m[1:] for m in w.net if m[0] == END_ON_PARTITION}):
        if w.topics[m[0]].state == READY:   # commitTxn / abortTxn wait for the recovery
            yield m


def handle_end_on_partition(p, w, t, action):
    """``TopicTransactionBuffer.commitTxn`` / ``abortTxn``: the marker is appended
    (``Markers.newTxnCommitMarker`` / ``newTxnAbortMarker``), the transaction leaves
    ongoingTxns (an aborted one joins the aborts) and maxReadPosition moves
    (``updateMaxReadPosition``). A repeated marker is appended again, harmlessly."""
    w = w._replace(net=take(w, (END_ON_PARTITION, t, action)))
    topic = w.topics[t]
    ledger = topic.ledger + ((COMMIT_MARKER if action == COMMIT else ABORT_MARKER, TXN),)
    ongoing = tuple(o for o in topic.ongoing if o[0] != TXN)
    aborts = topic.aborts | {TXN} if action == ABORT else topic.aborts
    topic = topic._replace(ledger=ledger, ongoing=ongoing, aborts=aborts)
    topic = topic._replace(max_read=max_read_after(topic, ongoing))
    topic = topic._replace(snapshot=(topic.max_read, topic.aborts))
    return w._replace(topics=put(w.topics, t, topic),
                      net=send(w, (END_ON_PARTITION_RESPONSE, t)))


def handle_ack_enabled(p, w):
    if (ACK,) in w.net:
        yield ()


def handle_ack(p, w):
    """``PendingAckHandleImpl.individualAcknowledgeMessage``: m0 becomes pending by the
    transaction (again: a no-op); once acknowledged, a conflict. The handle does not ask the
    coordinator whether the transaction is still open."""
    w = w._replace(net=take(w, (ACK,)))
    if w.sub in (AVAILABLE, RELEASED, PENDING):
        return w._replace(sub=PENDING, net=send(w, (ACK_RESPONSE, True)))
    return w._replace(net=send(w, (ACK_RESPONSE, False)))


def handle_end_on_subscription_enabled(p, w):
    yield from sorted({m[1:] for m in w.net if m[0] == END_ON_SUBSCRIPTION})


def handle_end_on_subscription(p, w, action):
    """``PendingAckHandleImpl.commitTxn`` (the pending ack is applied: m0 is mark-deleted) /
    ``abortTxn`` (the pending ack is dropped and m0 redelivered)."""
    w = w._replace(net=take(w, (END_ON_SUBSCRIPTION, action)))
    sub = w.sub
    if sub == PENDING:
        sub = ACKED if action == COMMIT or p.mutant == "ack_on_abort" else RELEASED
    return w._replace(sub=sub, net=send(w, (END_ON_SUBSCRIPTION_RESPONSE,)))


def normal_publish_enabled(p, w):
    if p.normal_message and not w.normal:
        yield ()


def normal_publish(p, w):
    """A non-transactional producer publishes "n" to topic 0 (``PersistentTopic.publishMessage``
    -> ``TopicTransactionBuffer.syncMaxReadPositionForNormalPublish``): with no ongoing
    transaction maxReadPosition moves to it, since Pulsar 2.9.1 (apache/pulsar#12386, fixing
    #12382) only once the buffer has recovered; in 2.9.0 also while it recovers, when its
    in-memory ongoingTxns is still empty."""
    topic = w.topics[0]
    ledger = topic.ledger + ((MSG, 0, N),)
    max_read = topic.max_read
    if not topic.ongoing and (topic.state == READY or not p.sync_waits_for_recovery):
        max_read = len(ledger) - 1
    return w._replace(normal=True, topics=_topic(w, 0, ledger=ledger, max_read=max_read))


def broker_failover_enabled(p, w):
    if w.budgets[1] > 0:
        yield from ((t,) for t, topic in enumerate(w.topics) if topic.state == READY)


def broker_failover(p, w, t):
    """Topic ``t``'s owner fails and another broker loads it: a new ``TopicTransactionBuffer``
    starts recovering (``TopicTransactionBufferRecover``) with nothing in memory but the
    snapshot's maxReadPosition; the ledger and the snapshot survive."""
    topic = w.topics[t]
    return w._replace(budgets=spend(w, "broker_failovers"), topics=_topic(
        w, t, state=INITIALIZING, ongoing=(), aborts=frozenset(), max_read=topic.snapshot[0]))


def recover_enabled(p, w):
    yield from ((t,) for t, topic in enumerate(w.topics) if topic.state == INITIALIZING)


def recover(p, w, t):
    """``TopicTransactionBufferRecover``: the snapshot's aborts, then the ledger replayed after
    the snapshot's maxReadPosition (``handleTxnEntry``: a transactional message makes its
    transaction ongoing, a marker ends it, an abort marker adds it to the aborts); Ready with
    maxReadPosition below the first ongoing transaction (``recoverComplete``). A topic whose
    buffer never wrote a snapshot skips the replay (``noNeedToRecover``); Pulsar writes the first
    one before the first transactional message (PR #21406; before it, when a transactional
    producer was created), which the initial snapshot at EARLIEST stands for here."""
    topic = w.topics[t]
    start, aborts = topic.snapshot
    if p.mutant == "no_first_snapshot" and topic.snapshot == (-1, frozenset()):
        # BROKEN: no snapshot yet, so noNeedToRecover: maxReadPosition = LAC, nothing replayed
        return w._replace(topics=_topic(w, t, state=READY, max_read=len(topic.ledger) - 1))
    if p.mutant == "recover_without_aborts":
        aborts = frozenset()
    ongoing: dict = {}
    for pos in range(start + 1, len(topic.ledger)):
        e = topic.ledger[pos]
        if e[0] == MSG and e[1] and e[1] not in ongoing and e[1] not in aborts:
            ongoing[e[1]] = pos
        elif e[0] != MSG:
            ongoing.pop(e[1], None)
            aborts = aborts | {e[1]} if e[0] == ABORT_MARKER else aborts
    ongoing_t = tuple(sorted(ongoing.items()))
    return w._replace(topics=_topic(w, t, state=READY, ongoing=ongoing_t, aborts=aborts,
                                    max_read=max_read_after(topic, ongoing_t)))


def _readable(p, topic) -> int:
    """``getMaxReadPosition``: since 2.9.1 EARLIEST while the buffer recovers; in 2.9.0 (and the
    ``read_past_max_read`` mutant: the last entry) whatever it holds."""
    if p.mutant == "read_past_max_read":
        return len(topic.ledger) - 1
    if topic.state == INITIALIZING and p.sync_waits_for_recovery:
        return -1
    return topic.max_read


def _next_delivery(p, topic):
    """The next entry the dispatcher sends at or after the cursor, up to the max read position:
    markers and messages of aborted transactions (``isTxnAborted``) are skipped."""
    for pos in range(topic.cursor, _readable(p, topic) + 1):
        e = topic.ledger[pos]
        if e[0] == MSG and (e[1] == 0 or e[1] not in topic.aborts or p.mutant == "no_abort_filter"):
            return pos
    return None


def deliver_enabled(p, w):
    for t, topic in enumerate(w.topics):
        if _next_delivery(p, topic) is not None:
            yield (t,)


def deliver(p, w, t):
    """``PersistentDispatcherSingleActiveConsumer.readEntriesComplete`` -> the consumer receives
    the next message the buffer lets through."""
    topic = w.topics[t]
    pos = _next_delivery(p, topic)
    return w._replace(topics=_topic(w, t, cursor=pos + 1,
                                    received=topic.received + (topic.ledger[pos][2],)))


# --- faults: duplicated requests (delay and reordering are the network's multiset) ---------------

DUPLICABLE = (SEND, ACK, END_TXN, END_ON_PARTITION, END_ON_SUBSCRIPTION)


def duplicate_enabled(p, w):
    if w.budgets[2] > 0:
        yield from sorted({(m,) for m in w.net if m[0] in DUPLICABLE})


def duplicate(p, w, m):
    """A request is delivered twice (a client's resend on reconnect, the coordinator's retry of
    a marker whose response it missed); the copy may arrive arbitrarily late."""
    return w._replace(budgets=spend(w, "duplicates"), net=send(w, m))


