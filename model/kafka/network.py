"""Requests and responses in flight, and the network faults.

A message is a NamedTuple whose first field is its ``Rpc``. Messages travel on connections
(direction, producer, partition); with no fault budget the network is reliable and FIFO per
connection: only the oldest message of a connection can be delivered. ``DelayRequest`` holds a
message back (it leaves the FIFO and can be delivered at any later time, out of order), once a
later message on its connection can overtake it (``delay_request_enabled`` says why no earlier);
``DuplicateRequest`` is a retry over a new connection: the sender's request timed out, it closed
the connection and sent the request again (NetworkClient.handleTimedOutRequests; the client's
TransactionManager and Sender, the coordinator's TransactionMarkerChannelManager re-enqueue it).
The request in the FIFO is the retry; the copy, ``disconnected``, is the one left on the closed
connection: the broker may still handle it at any later time, but its answer is lost with the
connection (``answer``), so a sender never sees two answers to one request. (Abstraction: a
leader's AddPartitionsToTxnManager does not resend a verification itself, it fails the produce
with a retriable error and the client's resend verifies again; a copy of a ``VerifyAddPartition``
folds that round trip into one.) ``LoseRequest`` and
``LoseResponse`` (``loss``) drop a request or its answer while its sender still waits for it, and
the sender's request times out: a client resends (``producer.request_timed_out``), the
transaction coordinator re-enqueues a marker (``coordinator.marker_timed_out``), a leader fails
a verification with a retriable error (``partition.verification_timed_out``). A marker of an
older coordinator epoch may be lost too, and is not resent: its coordinator is gone
(``coordinator.marker_may_be_lost``).
"""
from __future__ import annotations

from typing import NamedTuple

from kafka_mc.model.kafka.world import Errors, Rpc, budget, offline_partitions, spend


class InitProducerId(NamedTuple):
    rpc: Rpc
    producer: int
    tid: int
    coordinator_epoch: int      # the coordinator the client found (FindCoordinator)
    producer_id: int            # v3+ (KIP-360): the client's id and epoch for an epoch bump,
    producer_epoch: int         # -1 for initTransactions
    disconnected: bool = False  # a DuplicateRequest copy: its connection was closed
    keep_prepared_txn: bool = False   # v6 (KIP-939): initTransactions(keepPreparedTxn=true)


class InitProducerIdResponse(NamedTuple):
    rpc: Rpc
    producer: int
    error: Errors
    producer_id: int
    producer_epoch: int


class AddPartitionsToTxn(NamedTuple):
    rpc: Rpc
    producer: int
    tid: int
    coordinator_epoch: int
    producer_id: int
    producer_epoch: int
    partitions: frozenset
    disconnected: bool = False  # a DuplicateRequest copy: its connection was closed


class AddPartitionsToTxnResponse(NamedTuple):
    rpc: Rpc
    producer: int
    error: Errors


class EndTxn(NamedTuple):
    rpc: Rpc
    producer: int
    tid: int
    coordinator_epoch: int
    producer_id: int
    producer_epoch: int
    committed: bool
    disconnected: bool = False  # a DuplicateRequest copy: its connection was closed


class EndTxnResponse(NamedTuple):
    rpc: Rpc
    producer: int
    error: Errors
    producer_id: int            # TV2 (EndTxn v5): the bumped epoch
    producer_epoch: int


class Produce(NamedTuple):
    rpc: Rpc
    producer: int
    partition: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    txn: int                    # ghost: the record's identity is (tid, instance, txn, n)
    n: int
    disconnected: bool = False  # a DuplicateRequest copy: its connection was closed


class ProduceResponse(NamedTuple):
    rpc: Rpc
    producer: int
    partition: int
    error: Errors
    request: Produce            # the batch answered (NetworkClient matches by correlation id)


class WriteTxnMarkers(NamedTuple):
    rpc: Rpc
    partition: int
    tid: int
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    disconnected: bool = False  # a DuplicateRequest copy: its connection was closed


class WriteTxnMarkersResponse(NamedTuple):
    rpc: Rpc
    partition: int
    tid: int
    error: Errors
    coordinator_epoch: int
    producer_id: int            # the marker answered: the callback of its own request
    producer_epoch: int
    committed: bool


class VerifyAddPartition(NamedTuple):
    """AddPartitionsToTxn v4+ sent by a partition leader for a parked produce request:
    ``verify_only`` (KIP-890 part 1, TV1) or an implicit add (part 2, TV2)."""
    rpc: Rpc
    partition: int
    tid: int
    coordinator_epoch: int
    producer_id: int
    producer_epoch: int
    verify_only: bool
    guard: int                  # the VerificationGuard the leader stored for the producer id
    produce: object             # the parked request: a Produce, or a TxnOffsetCommit
    disconnected: bool = False  # a DuplicateRequest copy: its connection was closed


class VerifyAddPartitionResponse(NamedTuple):
    rpc: Rpc
    partition: int
    error: Errors
    guard: int
    produce: object


class TxnOffsetCommit(NamedTuple):
    """The consumed offset of a consume-transform-produce transaction, to the group coordinator
    (KIP-447, v3+: with the member's generation)."""
    rpc: Rpc
    producer: int
    partition: int              # the __consumer_offsets partition
    producer_id: int
    producer_epoch: int
    generation: int
    offset: int
    txn: int                    # ghost
    disconnected: bool = False  # a DuplicateRequest copy: its connection was closed


class TxnOffsetCommitResponse(NamedTuple):
    rpc: Rpc
    producer: int
    partition: int
    error: Errors


for _request in (InitProducerId, AddPartitionsToTxn, EndTxn, Produce, WriteTxnMarkers,
                 VerifyAddPartition, TxnOffsetCommit):
    _request._only_if_set = ("disconnected",)   # actions and traces name a copy, not every request
InitProducerId._only_if_set = ("disconnected", "keep_prepared_txn")   # (traces before KIP-939)

REQUESTS = (Rpc.InitProducerId, Rpc.AddPartitionsToTxn, Rpc.EndTxn, Rpc.Produce, Rpc.WriteTxnMarkers,
            Rpc.VerifyAddPartition, Rpc.TxnOffsetCommit)


def connection(m) -> tuple:
    """(rpc direction, producer, partition): messages on one connection are delivered in order.
    The direction is 0-1 client <-> coordinator, 2-3 client <-> leader, 4-5 coordinator ->
    leader (markers), 6-7 leader -> coordinator (verification), 8-9 client <-> group
    coordinator, requests even and responses odd (``Rpc``'s numbering: the direction of rpc
    ``r`` >= 6 is ``r - 4``)."""
    r = m[0]
    if r < 6:
        return (r & 1, m[1], -1)      # InitProducerId, AddPartitionsToTxn, EndTxn: (rpc, producer, ...)
    if r < 8:
        return (r - 4, m[1], m[2])    # Produce: (rpc, producer, partition, ...)
    if r < 12:
        return (r - 4, -1, m[1])      # WriteTxnMarkers, VerifyAddPartition: (rpc, partition, ...)
    return (r - 4, m[1], -1)          # TxnOffsetCommit: (rpc, producer, ...)


def in_connection_order(net: tuple) -> tuple:
    """``net`` ordered by connection, each connection's FIFO order kept: the normal form of the
    reduction view and of symmetry (no rule or property reads the order between connections,
    ``deliverable`` yields each connection's head). ``net`` itself when it is in order already,
    as most are; two messages are ordered by one comparison."""
    if len(net) == 2:
        return (net[1], net[0]) if connection(net[0]) > connection(net[1]) else net
    if len(net) > 2:
        ordered = tuple(sorted(net, key=connection))
        if ordered != net:
            return ordered
    return net


TO_LEADER = (2, 4, 7)   # the directions of Produce, WriteTxnMarkers, VerifyAddPartitionResponse


def to_offline_leader(m, offline) -> bool:
    """Whether ``m`` goes to the leader of a partition in ``offline`` (one without a leader: the
    fault ``offline_partitions``). It waits until the partition has a leader again: the producer's
    RecordAccumulator.ready holds a batch whose partition has no known leader, the coordinator's
    TransactionMarkerChannelManager keeps a marker in markersQueueForUnknownBroker while
    getPartitionLeaderEndpoint answers Node.noNode (before KAFKA-17573; see
    ``coordinator.send_markers``). Abstraction: the request is in flight but not delivered."""
    c = connection(m)
    return c[0] in TO_LEADER and c[2] in offline


def deliverable(network: tuple, delayed: tuple, offline: tuple = ()):
    """(source, index, message) for every message that can be delivered now: not one to the
    leader of a partition in ``offline`` (``to_offline_leader``)."""
    heads = set()
    for i, m in enumerate(network):
        c = connection(m)
        if c not in heads:
            heads.add(c)
            if offline and c[0] in TO_LEADER and c[2] in offline:
                continue
            yield 0, i, m
    for i, m in enumerate(delayed):
        if i == 0 or m != delayed[i - 1]:   # identical copies: one choice
            if offline and to_offline_leader(m, offline):
                continue
            yield 1, i, m


def send(network: tuple, *messages) -> tuple:
    return network + messages


def answer(network: tuple, request, response) -> tuple:
    """``network`` with the answer to ``request`` sent, unless the connection the request came
    on is closed (a ``DuplicateRequest`` copy): the broker handled it, the answer goes nowhere."""
    return network if request.disconnected else network + (response,)


def remove(network: tuple, i: int) -> tuple:
    return network[:i] + network[i + 1:]


def _order(m) -> tuple:
    return (m[0], repr(m))  # a total order (frozenset fields do not have one)


def hold_back(network: tuple, delayed: tuple, i: int) -> tuple[tuple, tuple]:
    """DelayRequest: message i leaves its FIFO connection."""
    return remove(network, i), tuple(sorted(delayed + (network[i],), key=_order))


def duplicate(delayed: tuple, *messages) -> tuple:
    """``delayed`` with ``messages`` held back too (the sorted multiset)."""
    return tuple(sorted(delayed + messages, key=_order)) if messages else delayed


def delivery(rpc: Rpc, handler, to_producer: bool = False):
    """``enabled``/``apply`` of a rule delivering the messages of one Rpc to their handler: any
    deliverable one (the oldest of its connection, or one held back), with whether it was held
    back. A handler takes ``(K, w, m)``, or ``(K, w, producer, m)`` for a response to a client."""
    def enabled(K, w):
        return [(m, bool(held)) for held, _, m in deliverable(w.network, w.delayed,
                                                              offline_partitions(w))
                if m.rpc == rpc]

    def apply(K, w, m, held):
        if held:
            w = w._replace(delayed=remove(w.delayed, w.delayed.index(m)))
        else:
            w = w._replace(network=remove(w.network, w.network.index(m)))
        return handler(K, w, m.producer, m) if to_producer else handler(K, w, m)

    return enabled, apply


# --- the network faults -----------------------------------------------------------------------

def delay_request_enabled(K, w):
    """The oldest request of a connection may be held back once a later message follows it
    there. Holding a request back matters only to the messages behind it, which may then
    overtake it; one held back with nothing behind it is as good as in flight (its FIFO lets it
    arrive at any later time). So the model takes a delay only when there is something to
    overtake: a state reached with an earlier delay has a counterpart here with the same
    components and messages (some still in their FIFO rather than held back) and more budget
    left, and every behaviour here is one of a delay taken at some time, so no safety verdict
    changes (tests/model/test_faults.py compares the two models state by state)."""
    if not budget(w, "request_delays"):
        return []
    behind = followed(w.network)
    return [(m,) for _, _, m in deliverable(w.network, (), offline_partitions(w))
            if m.rpc in REQUESTS and connection(m) in behind]


def followed(network: tuple) -> frozenset:
    """The connections with a message behind their oldest one (where a delay can be taken)."""
    seen, out = set(), set()
    for m in network:
        c = connection(m)
        (out if c in seen else seen).add(c)
    return frozenset(out)


def delay_request(K, w, m):
    net, delayed = hold_back(w.network, w.delayed, w.network.index(m))
    return spend(w._replace(network=net, delayed=delayed), "request_delays")


def duplicate_request_enabled(K, w):
    if not budget(w, "request_duplicates"):
        return []
    offline = offline_partitions(w)   # a request waiting for a leader is not sent: no retry
    return [(m,) for m in dict.fromkeys(w.network + w.delayed)
            if m.rpc in REQUESTS and not m.disconnected and not to_offline_leader(m, offline)]


def without(w, m):
    """``w`` with message ``m`` gone from the network (held back or not)."""
    if m in w.network:
        return w._replace(network=remove(w.network, w.network.index(m)))
    return w._replace(delayed=remove(w.delayed, w.delayed.index(m)))


def loss(budget_name: str, responses: bool, awaited, timed_out):
    """``enabled``/``apply`` of a rule losing a deliverable request (or response) whose sender
    still waits for it, or whose sender is gone (``awaited(w, m)``: a marker of an older
    coordinator epoch; never a copy on a closed connection): the budget is spent, the message is
    gone and the sender's request times out (``timed_out(K, w, m)``: a sender that is gone does
    nothing)."""
    def enabled(K, w):
        if not budget(w, budget_name):
            return []
        return [(m,) for _, _, m in deliverable(w.network, w.delayed, offline_partitions(w))
                if bool(m.rpc & 1) == responses and (responses or not m.disconnected)
                and awaited(w, m)]

    def apply(K, w, m):
        return timed_out(K, without(spend(w, budget_name), m), m)

    return enabled, apply


def duplicate_request(K, w, m):
    """The sender times out and retries ``m`` over a new connection: ``m`` stays where it is as
    the retry, and the original, left on the closed connection, can still reach the broker at any
    later time (``disconnected``: its answer is lost)."""
    return spend(w._replace(delayed=duplicate(w.delayed, m._replace(disconnected=True))),
                 "request_duplicates")
