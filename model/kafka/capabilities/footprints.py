"""What each Kafka rule reads and writes, for partial-order reduction (``kafka_mc.model.core.Footprint``).

Locations are the components of ``World`` and the ends of its connections:

* ``("P", i)``: producer instance ``i`` (KafkaProducer and its TransactionManager; a crash
  touches the instance and the next one of its transactional.id); ``("O", i)``: the part of it that says
  what their applications were told (``Producer.outcomes``, ghost: only a response, the end of a
  transaction or an expired batch changes it; a writer of it writes ``("P", t)`` too); ``"C"``: the transaction coordinator
  (TransactionStateManager, TransactionMarkerChannelManager) but its epoch, ``"CE"``: the
  coordinator epoch (what FindCoordinator and a leader's verification request read; only
  ``ElectCoordinator`` changes it, ``BounceCoordinator`` keeps it); ``("L", k)``: partition ``k``'s leader (ReplicaManager,
  ProducerStateManager; ``__consumer_offsets`` after the data partitions); ``("R", c)``:
  consumer ``c``; ``"G"``: the consumer group (GroupCoordinator); ``("D", conn)``: the messages
  of a connection held back (``World.delayed``: a sorted multiset, so holding back or delivering
  on one connection leaves the others' alone); ``"B"``: the fault budgets.
* ``("H", conn)`` / ``("T", conn)``: the head and the tail of a connection's FIFO
  (``network.connection``). A sender appends at the tail, a receiver takes the head: on a
  non-empty connection they commute (the reduction view orders the network by connection, so
  sends on different connections commute too). A receiver of an empty connection waits for a
  send, so there its guard is the tail.

Groups: a client rule per producer instance (``(rule, i)``), a delivery per connection and
whether the message was held back (``("deliver", conn, held)``: whichever handler the message's
Rpc goes to, and ``ExpireVerificationRetry``, the leader's other way to take a verification's
answer), ``CommitTxnLogAppend``, ``Fetch`` per consumer and partition, and each fault per
place. A fault group exists only while its budget lasts (budgets only shrink), so once the faults
are spent they no longer tie the components together. ``ExpireTransaction`` also fires, without a
budget, once nothing else can happen (``client.idle``); while something is in flight its guard is
the first thing that must change before the system can become idle.

The declaration is checked by ``explorers.por.self_check`` (tests/explorers/test_por.py).
"""
from __future__ import annotations

from functools import partial
from typing import Callable

from kafka_mc.model.kafka import client, faults, network, producer
from kafka_mc.model.kafka.network import Rpc, connection
from kafka_mc.model.kafka.world import Errors, World
from kafka_mc.model.core import Footprint

F = frozenset
C, CE, G, B = "C", "CE", "G", "B"


def _alike() -> dict:
    """(response Rpc, error) -> the first error its client handles alike, for the error codes
    that have another (``producer.RETRIABLE``: the coordinator's responses re-enqueue the
    request, TxnOffsetCommitHandler its own retriable set; ``producer._completion``: a duplicate
    batch is done, as a success is)."""
    classes = [(r, producer.RETRIABLE) for r in (Rpc.InitProducerIdResponse,
                                                 Rpc.AddPartitionsToTxnResponse,
                                                 Rpc.EndTxnResponse)]
    classes += [(Rpc.TxnOffsetCommitResponse, producer.OFFSET_COMMIT_RETRIABLE),
                (Rpc.ProduceResponse, (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER))]
    return {(r, e): alike[0] for r, alike in classes for e in alike[1:]}


ALIKE = _alike()

CLIENT_RULES = tuple(r.name for r in client.CLIENT_RULES)
# the fault rules and the budget each spends, from the fault table (faults.FAULTS), but the one
# that may fire without its budget (faults.UNBUDGETED: its footprint is declared apart)
FAULT_BUDGETS = {r.name: f.budget for f in faults.FAULTS for r in f.rules
                 if r.name not in faults.UNBUDGETED}


class Layout:
    """The locations, connections and static footprints of one configuration."""

    def __init__(self, K):
        self.K = K
        n = K.tids * K.producers_per_id
        self.instances = range(n)
        self.parts = range(K.partitions + K.ctp)
        self.offsets = tuple(range(K.partitions, K.partitions + K.ctp))
        self.tid = {i: i // K.producers_per_id for i in self.instances}
        conns = []
        for i in self.instances:
            conns += [(0, i, -1), (1, i, -1), (8, i, -1), (9, i, -1)]
            conns += [(d, i, k) for k in range(K.partitions) for d in (2, 3)]
        conns += [(d, -1, k) for k in self.parts for d in (4, 5, 6, 7)]
        self.conns = tuple(conns)
        self.P = {i: ("P", i) for i in self.instances}
        self.O = {i: ("O", i) for i in self.instances}
        coordinator_out = F([("T", (1, i, -1)) for i in self.instances]
                            + [("T", (d, -1, k)) for k in self.parts for d in (4, 7)])
        group_out = F([("T", (9, i, -1)) for i in self.instances]
                      + [("T", (6, -1, k)) for k in self.offsets])
        self.client_out = {i: F([("T", (0, i, -1)), ("T", (8, i, -1))]
                                + [("T", (2, i, k)) for k in range(K.partitions)])
                           for i in self.instances}
        self.agent = {}     # connection -> (state read and written, tails it may send on) of
        self.sender = {}    # its receiver / its sender
        for c in self.conns:
            self.agent[c] = self._endpoint(c, receiving=True, coordinator_out=coordinator_out,
                                           group_out=group_out)
            self.sender[c] = self._endpoint(c, receiving=False, coordinator_out=coordinator_out,
                                            group_out=group_out)
        self.coordinator_out = coordinator_out
        # offline partitions (the fault offline_partitions): a delivery to a leader, and the
        # faults on a message to it, wait while it is offline (network.to_offline_leader), and
        # from 4.3 the coordinator's marker send reads which are (coordinator.send_markers)
        self.leaderless = bool(K.budgets.total and K.budgets.offline_partitions)
        self.to_leader = {c: F([("L", c[2])]) if self.leaderless and c[0] in network.TO_LEADER
                          else F() for c in self.conns}
        self.markers_read = F([("L", k) for k in range(K.partitions)]) \
            if self.leaderless and K.features.markers_skip_leaderless_partition else F()
        self._tables: dict = {}

    def _client(self, i):
        reads = F([self.P[i], CE, G] + [("L", k) for k in self.offsets])
        return reads, F([self.P[i]]), None

    def _leader(self, k):
        out = F([("T", (3, i, k)) for i in self.instances if k < self.K.partitions]
                + [("T", (5, -1, k)), ("T", (6, -1, k))]
                + ([("T", (9, i, -1)) for i in self.instances] if k in self.offsets else []))
        state = F([("L", k)] + ([G] if k in self.offsets else []))
        return state | {CE}, state, out

    def _endpoint(self, c, receiving, coordinator_out, group_out):
        """(reads, writes, tails) of the agent at one end of connection ``c``."""
        d, i, k = c
        side = d if receiving else d ^ 1   # the kind of message the agent receives there
        if side in (0, 5, 6):                 # coordinator: requests, marker and verify responses
            return F([C, CE]), F([C]), coordinator_out
        if side in (1, 3, 9):                 # a client: a response may end its transaction
            reads, writes, _ = self._client(i)
            return reads, writes | {self.O[i]}, self.client_out[i]
        if side in (2, 4, 7):                 # a partition leader
            return self._leader(k)
        if side == 8:                         # the group coordinator (the offsets' leader)
            reads = F([G, CE] + [("L", o) for o in self.offsets])
            return reads, reads - {CE}, group_out | F(x for o in self.offsets
                                                      for x in self._leader(o)[2])
        raise ValueError(f"no endpoint for connection {c}")

    # --- the table -------------------------------------------------------------------------

    def table(self, w: World):
        """group -> Footprint in ``w`` (one object per distinct key, so explorers can cache)."""
        heads = F(connection(m) for m in w.network)
        live = _live(w.budgets)
        # where a delay can be taken (and a send changes nothing about that)
        followed = network.followed(w.network) \
            if "DelayRequest" in live and len(w.network) > len(heads) else F()
        block = self._idle_block(w)
        timeouts = bool(w.budgets.total and w.budgets.transaction_timeouts)
        key = (heads, followed, live, block, timeouts)
        t = self._tables.get(key)
        if t is None:
            t = self._tables[key] = self._build(heads, followed, live, block, timeouts)
        return t

    def anywhere(self):
        """Every group of any reachable state: each connection with a head, every fault whose
        budget is not spent at the start (budgets only shrink). What a group writes depends on
        neither (only its reads and guard do)."""
        b = self.K.budgets
        return self._build(F(self.conns), F(), _live(b), None,
                           bool(b.total and b.transaction_timeouts))

    def _idle_block(self, w: World):
        """A location that must change before nothing but a timer can fire (None: idle now)."""
        if w.network:   # (the least connection: the same whatever the network's order)
            return ("H", min(connection(m) for m in w.network))
        if w.delayed:
            return ("D", min(connection(m) for m in w.delayed))
        if any(w.coordinator.appends):
            return C
        K = self.K
        for r in client.CLIENT_RULES:
            for args in r.enabled(K, w):
                return ("client", args[0])
        return None

    def _build(self, heads, followed, live, block, timeouts):
        K, out = self.K, {}
        for i in self.instances:
            reads, writes, _ = self._client(i)
            guard = reads - {CE}   # the epoch only goes into the request
            told = F([self.O[i]])   # what the application was told (ghost)
            for r in CLIENT_RULES:
                out[(r, i)] = Footprint(reads, writes | self.client_out[i]
                                        | (told if r == "CompleteTransaction" else F()), guard)
        for c in self.conns:
            reads, writes, tails = self.agent[c]
            chan = self._chan(c, heads)
            leader = self.to_leader[c]
            out[("deliver", c, False)] = Footprint(
                reads | chan, writes | tails | {("H", c)},
                (F([("H", c)]) if c in heads else F([("T", c)])) | leader)  # a send fills it
            held = F([("D", c)])
            out[("deliver", c, True)] = Footprint(reads | held, writes | tails | held,
                                                  held | leader)
        out[("CommitTxnLogAppend",)] = Footprint(F([C, CE]) | self.markers_read,
                                                 F([C]) | self.coordinator_out)
        if K.force_terminate:   # the fence's PrepareAbort prepared: the coordinator alone
            out[("ForceTerminateTransaction",)] = Footprint(F([C]), F([C]))
        if self.leaderless:
            for k in range(K.partitions):
                out[("ElectLeader", k)] = Footprint(F([("L", k)]), F([("L", k)]))
        for c in range(K.consumers):
            for k in range(K.partitions):
                out[("Fetch", c, k)] = Footprint(F([("L", k), ("R", c)]), F([("R", c)]))
        # faults: every one reads and spends the budgets
        if block is None:
            guard = F()
        elif block[0] == "client":
            guard = self._client(block[1])[0]
        else:
            guard = F([block])
        expire_writes = F([C, B]) | self.coordinator_out
        # Without a timeout budget it waits for idleness: until then only a change of ``block``
        # (the least busy place) can enable it, whatever the coordinator does meanwhile.
        out[("ExpireTransaction",)] = Footprint(F([C, CE, B]) | guard, expire_writes,
                                                None if timeouts or block is None else guard)
        for r in live:
            self._fault(out, r, heads, followed)
        return out

    @staticmethod
    def _chan(c, heads):
        """What decides whether connection ``c`` has a head: the head while it has one, else the
        tail (a send)."""
        return F([("H", c)]) if c in heads else F([("H", c), ("T", c)])

    def _fault(self, out, r, heads, followed):
        K = self.K
        if r == "CrashProducer":
            for i, loc in self.P.items():   # the instance is replaced, the next one starts
                both = F([loc, self.P.get(i + 1, loc), B])
                out[(r, i)] = Footprint(both, both)
        elif r == "KillProducer":   # and its connections: requests become closed copies,
            for i, loc in self.P.items():   # answers to it are lost
                wire = F(x for c in self.conns if c[1] == i and c[0] in (0, 1, 2, 3, 8, 9)
                         for x in (("H", c), ("T", c), ("D", c)))
                both = F([loc, self.P.get(i + 1, loc), B]) | wire
                out[(r, i)] = Footprint(both, both)
        elif r == "ExpireBatch":
            for i in self.instances:
                loc = self.P[i]
                out[(r, i)] = Footprint(F([loc, B]), F([loc, self.O[i], B]))
        elif r == "LoseProducerState":
            for k in self.parts:
                out[(r, k)] = Footprint(F([("L", k), B]), F([("L", k), B]))
        elif r in ("ElectCoordinator", "ExpireTransactionalId"):
            w = F([C, B]) | self.coordinator_out | (F([CE]) if r == "ElectCoordinator" else F())
            out[(r,)] = Footprint(F([C, CE, B]) | (self.markers_read if r == "ElectCoordinator"
                                                    else F()), w)
        elif r == "BounceCoordinator":   # the epoch kept; the markers on the wire and their
            # answers taken off every marker connection (coordinator.bounce_coordinator), and
            # which partitions are offline read (a marker waiting for a leader dies)
            wire = F(x for c in self.conns if c[0] in (4, 5)
                     for x in (("H", c), ("T", c), ("D", c)))
            offline = F([("L", k) for k in range(K.partitions)]) if self.leaderless else F()
            out[(r,)] = Footprint(F([C, CE, B]) | self.markers_read | wire | offline,
                                  F([C, B]) | self.coordinator_out | wire)
        elif r == "PartitionOffline":   # enabled while no verification of k is in flight
            for k in range(K.partitions):
                quiet = F(x for c in self.conns if 6 <= c[0] <= 7 and c[2] == k
                          for x in self._chan(c, heads) | {("D", c)})
                out[(r, k)] = Footprint(quiet | {("L", k), B}, F([("L", k), B]))
        elif r == "Rebalance":
            out[(r,)] = Footprint(F([G, B]), F([G, B]))
        elif r == "ExpireGroup":   # whether offsets are pending or materialised: the offsets' log
            out[(r,)] = Footprint(F([G, B] + [("L", o) for o in self.offsets]), F([G, B]))
        else:   # a message fault on one connection
            for c in self.conns:
                chan, held = F([("H", c), ("T", c)]), ("D", c)
                if r == "DelayRequest":   # until a message follows the head, a send enables it
                    ends = F([("H", c)]) if c in followed else chan
                    out[(r, c)] = Footprint(ends | {B} | self.to_leader[c],
                                            F([("H", c), held, B]))
                elif r == "DuplicateRequest":
                    out[(r, c)] = Footprint(chan | {B, held} | self.to_leader[c], F([held, B]))
                else:   # a loss: the message goes, and its sender (or requester) times out
                    sr, sw, st = self.sender[c]
                    rr, rw, rt = self.agent[c]
                    out[(r, c)] = Footprint(self._chan(c, heads) | {B, held} | sr | rr,
                                            F([("H", c), held, B]) | sw | st | rw | rt)


def _live(budgets) -> tuple:
    """The fault rules whose budget is not spent."""
    return tuple(r for r, b in FAULT_BUDGETS.items() if budgets.total and getattr(budgets, b, 0))


def _layout(K) -> Layout:
    lay = _LAYOUTS.get(K)
    if lay is None:
        lay = _LAYOUTS[K] = Layout(K)
    return lay


_LAYOUTS: dict = {}


class Reduction:
    """The Kafka model's partial-order reduction hooks (``ProtocolSpec.reduction``), for the
    spec's delivery rules (``delivery``: their names; their actions are ``(name, message,
    held)``), which the spec gives it as it assembles them (``spec.DELIVERY_NAMES``)."""

    def __init__(self, delivery: frozenset):
        self.delivery = delivery

    @staticmethod
    def footprints(K, w):
        return _layout(K).table(w)

    @staticmethod
    def footprints_anywhere(K):
        return _layout(K).anywhere()

    def group(self, K, a):
        name = a[0]
        if name in self.delivery:
            return ("deliver", connection(a[1]), a[2])
        if name == "ExpireVerificationRetry":   # the leader's other way to take the answer
            return ("deliver", connection(a[1]), False)
        if name in ("DelayRequest", "DuplicateRequest", "LoseRequest", "LoseResponse"):
            return (name, connection(a[1]))
        if name in ("CrashProducer", "KillProducer"):
            return (name, a[1])
        if name in ("Fetch",):
            return (name, a[1], a[2])
        if name in ("LoseProducerState", "PartitionOffline", "ElectLeader"):
            return (name, a[1])
        if name in CLIENT_RULES or name == "ExpireBatch":
            return (name, a[1])
        return (name,)

    @staticmethod
    def reduction_view(K, w):
        """The network ordered by connection (each connection's FIFO order kept), with each
        response's error code as the first of those its client handles alike (``ALIKE``).

        No rule or property reads the order between connections (``network.deliverable`` yields
        each connection's head). A response's error is read by its receiver's handler alone (a
        ``LoseResponse`` reads the request it answers; no property reads a response), and the
        handler does the same for every code of a class: it retries a retriable error whatever
        it is, and completes a batch answered DUPLICATE_SEQUENCE_NUMBER as one answered NONE.
        So states differing only in these are bisimilar (tests/explorers/test_por.py steps both
        and compares)."""
        net = w.network
        if not net:
            return w
        for m in net:
            if m[0] & 1 and (m[0], m.error) in ALIKE:   # (responses: odd Rpcs)
                net = tuple(m._replace(error=ALIKE[m[0], m.error])
                            if m[0] & 1 and (m[0], m.error) in ALIKE else m for m in net)
                break
        net = network.in_connection_order(net)
        return w if net is w.network else w._replace(network=net)

    @staticmethod
    def location(K, w, loc):
        if loc in (C, CE):
            c = w.coordinator
            return c.coordinator_epoch if loc == CE else c._replace(coordinator_epoch=0)
        if loc == G:
            return w.group
        if loc[0] == "D":   # the messages of one connection held back
            return tuple(m for m in w.delayed if connection(m) == loc[1])
        if loc == B:
            return w.budgets
        kind, x = loc
        if kind == "P":
            return w.producers[x]
        if kind == "O":
            return w.producers[x].outcomes
        if kind == "L":
            return w.partitions[x]
        if kind == "R":
            return w.consumers[x]
        return None   # connection ends: the commutation check covers them


def locations(K, *kinds) -> frozenset:
    """Every location of the given kinds ("P", "O", "C", "CE", "L", "R", "G", "D", "B", "N": both
    ends of every connection): what a property reads (``Property.reads``)."""
    lay = _layout(K)
    out = set()
    for kind in kinds:
        if kind == "P":
            out |= set(lay.P.values())
        elif kind == "O":
            out |= set(lay.O.values())
        elif kind == "L":
            out |= {("L", k) for k in lay.parts}
        elif kind == "R":
            out |= {("R", c) for c in range(K.consumers)}
        elif kind == "N":
            out |= {(e, c) for c in lay.conns for e in ("H", "T")}
        elif kind == "D":
            out |= {("D", c) for c in lay.conns}
        else:
            out.add(kind)
    return frozenset(out)


def reads(kinds: str) -> Callable:
    """A property's ``reads`` (``kafka_mc.model.core.Property``; partial-order reduction: a step writing
    one of them is visible to the property), declared beside the property as kinds of locations:
    P producers, O what their applications were told (``Producer.outcomes``), C the coordinator,
    L partition logs, R consumers, N connections, D held-back messages. Resolved per
    configuration by ``RuleModel`` (``K -> locations(K, *kinds)``). A transition property fails
    only on a step that changes what it reads."""
    return partial(_reads, kinds)


def _reads(kinds: str, K) -> frozenset:
    return locations(K, *kinds)


__all__ = ["Reduction", "locations", "reads", "Rpc", "network"]
