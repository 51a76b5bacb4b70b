"""The state of the Pulsar transactions model: one client's transaction, the transaction
coordinator, the output topics' transaction buffers, the input subscription's pending ack and
the network between them.

Abstractions, made here and nowhere else:

* One transaction (``TxnID`` 1 of coordinator 0). Its workload is consume-transform-produce:
  acknowledge the input message ``m0`` on subscription ``sub`` and produce message ``m`` to each
  output topic, then commit (or abort). With one transaction the low water mark the coordinator
  sends with its markers (``TransactionMetadataStoreService.getLowWaterMark``) is always below it
  (the transaction is still in the store when its markers go out), so
  ``TopicTransactionBuffer``'s lowWaterMark check never fires: it is not modelled.
* The coordinator's memory is its log: ``MLTransactionMetadataStore`` appends every change
  (NEW, ADD_PARTITION, ADD_SUBSCRIPTION, UPDATE) to the transaction log before applying it, so
  after a replay the memory equals the log; a failover loses only the work in progress
  (``waiting``, ``answer``), which ``TransactionRecoverTrackerImpl`` restarts.
* Time is abstracted: the client's and the coordinator's transaction timeouts
  (``TransactionImpl.run``, ``TransactionTimeoutTrackerImpl``) fire at any step while the
  transaction is open.
* A client request lost in a failover is retried by the client (``TransactionMetaStoreHandler``,
  ``ProducerImpl`` resending pending messages on reconnect): in-flight client requests are never
  lost, only delayed, reordered or (a fault) duplicated.
* Each output topic has its own owner broker (broker failover is per topic); the input topic's
  owner never fails and its pending-ack log is not modelled beyond the pending ack itself.
* Positions are indices in a topic's ledger; ``max_read`` -1 is ``PositionImpl.EARLIEST``.
"""
from __future__ import annotations

from typing import NamedTuple

TXN = 1            # the transaction's id (TxnID leastSigBits; 0 marks a non-transactional message)
SUB = -1           # the input subscription, as a target of the coordinator's end markers

# TransactionImpl.State as the client sees it (NONE: newTransaction not called yet)
NONE, OPEN, COMMITTING, ABORTING, COMMITTED, ABORTED, ERROR, TIME_OUT = range(8)
CLIENT_STATES = ("NONE", "OPEN", "COMMITTING", "ABORTING", "COMMITTED", "ABORTED", "ERROR",
                 "TIME_OUT")
# TxnStatus in MLTransactionMetadataStore (NONE: not created; COMMITTED / ABORTED: removed)
TXN_STATUSES = ("NONE", "OPEN", "COMMITTING", "ABORTING", "COMMITTED", "ABORTED")
# the client's progress on one operation (a produce to a topic, the acknowledgement)
IDLE, IN_FLIGHT, DONE = range(3)
OP_NAMES = ("IDLE", "IN_FLIGHT", "DONE")
# TopicTransactionBufferState
READY, INITIALIZING = 0, 1
TB_STATES = ("Ready", "Initializing")
# m0 in PendingAckHandleImpl: not acknowledged, pending (individualAckOfTransaction), acknowledged
# (committed: mark-deleted), released (the transaction aborted: redelivered)
AVAILABLE, PENDING, ACKED, RELEASED = range(4)
ACK_NAMES = ("AVAILABLE", "PENDING", "ACKED", "RELEASED")
COMMIT, ABORT = 0, 1   # TxnAction
ACTION_NAMES = ("COMMIT", "ABORT")
# ledger entries: (MSG, txn, message id) and (COMMIT_MARKER | ABORT_MARKER, txn); message ids
MSG, COMMIT_MARKER, ABORT_MARKER = 0, 1, 2
ENTRY_NAMES = ("msg", "commit", "abort")
M, N = 1, 2            # the transaction's message "m", the non-transactional message "n"
MESSAGE_NAMES = ("", "m", "n")
# messages in flight: (kind, *args)
(SEND, SEND_RECEIPT, ACK, ACK_RESPONSE, END_TXN, END_TXN_RESPONSE, END_ON_PARTITION,
 END_ON_PARTITION_RESPONSE, END_ON_SUBSCRIPTION, END_ON_SUBSCRIPTION_RESPONSE) = range(10)
NET_NAMES = ("Send", "SendReceipt", "Ack", "AckResponse", "EndTxn", "EndTxnResponse",
             "EndTxnOnPartition", "EndTxnOnPartitionResponse", "EndTxnOnSubscription",
             "EndTxnOnSubscriptionResponse")

BUDGETS = ("tc_failovers", "broker_failovers", "duplicates")


class Client(NamedTuple):
    """The application's client: its ``TransactionImpl`` and its operations in it."""

    state: int         # CLIENT_STATES
    produced: tuple    # per output topic: IDLE, IN_FLIGHT (registered and sent), DONE
    ack: int           # m0's acknowledgement: IDLE, IN_FLIGHT (registered and sent), DONE


class Coordinator(NamedTuple):
    """``MLTransactionMetadataStore``'s entry for the transaction (= its transaction log) and
    ``TransactionMetadataStoreService``'s end-transaction work in progress."""

    status: int             # TXN_STATUSES
    partitions: frozenset   # produced partitions (ADD_PARTITION)
    subscribed: bool        # the acked subscription (ADD_SUBSCRIPTION)
    waiting: frozenset      # endTxnInTransactionBuffer: targets whose marker is not confirmed
    answer: bool            # a client's EndTxn waits for the outcome


class Topic(NamedTuple):
    """An output topic: its managed ledger, its ``TopicTransactionBuffer`` and the consumer
    reading it (a dispatcher bounded by ``getMaxReadPosition`` that filters aborted
    transactions and markers)."""

    ledger: tuple      # entries (MSG, txn, message id), (COMMIT_MARKER, txn), (ABORT_MARKER, txn)
    state: int         # READY or INITIALIZING (recovering after a broker failover)
    ongoing: tuple     # ongoingTxns: (txn, first position) pairs
    aborts: frozenset  # aborted transactions (SnapshotAbortedTxnProcessor)
    max_read: int      # maxReadPosition
    snapshot: tuple    # the last TransactionBufferSnapshot: (maxReadPosition, aborts)
    cursor: int        # the consumer's read position
    received: tuple    # message ids the consumer received, in order


class World(NamedTuple):
    client: Client
    tc: Coordinator
    topics: tuple      # Topic per output topic
    sub: int           # m0 on the input subscription: AVAILABLE, PENDING, ACKED, RELEASED
    normal: bool       # the non-transactional producer has published "n" to topic 0
    net: tuple         # messages in flight, a sorted multiset
    budgets: tuple     # faults left, by BUDGETS


def initial(p) -> World:
    empty = Topic((), READY, (), frozenset(), -1, (-1, frozenset()), 0, ())
    return World(Client(NONE, (IDLE,) * p.topics, IDLE),
                 Coordinator(0, frozenset(), False, frozenset(), False),
                 (empty,) * p.topics, AVAILABLE, False, (), p.budgets)


# --- helpers (pure) ------------------------------------------------------------------------------

def put(t: tuple, i: int, v) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def send(w: World, *msgs) -> tuple:
    return tuple(sorted(w.net + msgs))


def take(w: World, msg) -> tuple:
    net = list(w.net)
    net.remove(msg)
    return tuple(net)


def spend(w: World, budget: str) -> tuple:
    i = BUDGETS.index(budget)
    return put(w.budgets, i, w.budgets[i] - 1)


def marker(topic: Topic, txn: int = TXN) -> str | None:
    """The first end marker of ``txn`` in the topic's ledger: "commit", "abort" or None."""
    return next((ENTRY_NAMES[e[0]] for e in topic.ledger if e[0] != MSG and e[1] == txn), None)


def max_read_after(topic: Topic, ongoing: tuple) -> int:
    """``updateMaxReadPosition``: the position before the first ongoing transaction's first
    message, or the last confirmed entry when none is ongoing."""
    return min(pos for _, pos in ongoing) - 1 if ongoing else len(topic.ledger) - 1
