"""Which identifiers of the Kafka model are interchangeable, and how a state is renamed.

Declared (``symmetries``), each only where the model treats its members alike:

* transactional.ids: every id runs the same workload (``workload.*`` is per producer instance)
  and no rule or property singles one out. Not with consume-transform-produce (the group's
  input partition starts owned by id 0 and a ``Rebalance`` hands it to the next id in order,
  ``(owner + 1) % ids``, which commutes only with rotations; a simple group's stays with id 0),
  and not with coordinator failovers (``ElectCoordinator`` and ``BounceCoordinator`` resend the
  markers of every Prepare* transaction in id order, and markers of two ids to one partition
  share that partition's FIFO connection, so the renamed state's queue is in another order
  than the renamed step's). Producer ids are data, not names:
  the coordinator allocates them in order (``next_producer_id``) to whichever id asks first, so
  they are kept. A producer instance is renamed with its transactional.id (instance ``j`` of id
  ``t`` is producer ``t * producers_per_id + j``).
* data partitions: the application may send each record to any partition it has not yet sent
  to in the transaction (``producer.send_enabled``), consumers read every partition alike, and
  the ``__consumer_offsets`` partition (consume-transform-produce) is not one of them (it keeps
  its index, after the data partitions). The coordinator sends a transaction's markers in
  partition order, each on its partition's connection: the renamed state's network is therefore
  kept in the normal form of ``footprints.Reduction.reduction_view`` (ordered by connection,
  each connection's FIFO order kept), which no rule or property can tell apart (a bisimulation).
* read_committed consumers: identical, and no rule relates two of them.

``permute`` renames every field that carries one of these identifiers, in-flight messages
(requests inside responses and parked verifications, a producer's batches in flight or waiting
to be retried) and ghost history (record identities) included, and restores the orders steps
keep: a producer's batches and the held-back messages sorted, the network by connection when
partitions are renamed. The deliberately broken
variants (``model.mutant``) declare none (``spec._build``): a mutant may single out a partition.
"""
from __future__ import annotations

from functools import cache

from kafka_mc.model.core import Symmetry, group_elements, least_fingerprint
from kafka_mc.model.kafka import network
from kafka_mc.model.kafka.world import (Append, Batch, Consumer, Coordinator, Partition, Producer, RecordId,
                               Reply, TxnMetadata, World)

TIDS, PARTITIONS, CONSUMERS = range(3)


def tids_interchangeable(K) -> str:
    """Why the transactional.ids are not interchangeable here, or "" when they are."""
    if K.ctp:
        return ("not with consume-transform-produce (id 0 owns the input, a rebalance hands it "
                "to the next id)")
    if K.budgets.coordinator_failovers and K.budgets.total:
        return "not with coordinator failovers (markers are resent in transactional.id order)"
    return ""


def symmetries(K) -> tuple[Symmetry, ...]:
    why_not = tids_interchangeable(K)
    return (
        Symmetry("transactional.id", 1 if why_not else K.tids,
                 why_not or "every transactional.id runs the same workload"),
        Symmetry("partition", K.partitions,
                 "the application sends each record to any partition; consumers read all alike"),
        Symmetry("consumer", K.consumers, "identical read_committed consumers"),
    )


@cache
def _sizes(K) -> tuple[int, int, int]:
    return tuple(x.size for x in symmetries(K))


def _ident(n: int) -> tuple[int, ...]:
    return tuple(range(n))


class _Renaming:
    """One permutation ``g`` as lookup tables: T (tid), S (producer instance), P (partition;
    -1 and the __consumer_offsets index stay), C (consumer)."""

    def __init__(self, K, g):
        t, p, c = g
        self.t_moves, self.p_moves, self.c_moves = (t != _ident(len(t)), p != _ident(len(p)),
                                                    c != _ident(len(c)))
        n = K.producers_per_id
        self.T = {-1: -1, **{x: y for x, y in enumerate(t)}}
        for x in range(len(t), K.tids):
            self.T[x] = x
        self.S = {-1: -1, **{i: self.T[i // n] * n + i % n for i in range(K.producers)}}
        self.P = {-1: -1, **{x: y for x, y in enumerate(p)}, K.partitions: K.partitions}
        self.C = dict(enumerate(c))


@cache
def _renaming(K, g) -> _Renaming:
    return _Renaming(K, g)


def _message(m, r: _Renaming):
    """A message (or a request inside one) renamed."""
    fields = _FIELDS.get(type(m))
    if fields is None:
        return m
    values = list(m)
    for i, kind in fields:
        v = values[i]
        if kind == "producer":
            values[i] = r.S[v]
        elif kind == "tid":
            values[i] = r.T[v]
        elif kind == "partition":
            values[i] = r.P[v]
        elif kind == "partitions":
            values[i] = frozenset(r.P[k] for k in v)
        else:   # a request carried inside
            values[i] = _message(v, r)
    return tuple.__new__(type(m), values)


_KINDS = {"producer": "producer", "tid": "tid", "partition": "partition",
          "partitions": "partitions", "request": "message", "produce": "message"}
_FIELDS = {cls: tuple((i, _KINDS[f]) for i, f in enumerate(cls._fields) if f in _KINDS)
           for cls in (network.InitProducerId, network.InitProducerIdResponse,
                       network.AddPartitionsToTxn, network.AddPartitionsToTxnResponse,
                       network.EndTxn, network.EndTxnResponse, network.Produce,
                       network.ProduceResponse, network.WriteTxnMarkers,
                       network.WriteTxnMarkersResponse, network.VerifyAddPartition,
                       network.VerifyAddPartitionResponse, network.TxnOffsetCommit,
                       network.TxnOffsetCommitResponse)}


def _parts(s: frozenset, r: _Renaming) -> frozenset:
    return frozenset(r.P[k] for k in s) if s else s


def _record(rec: RecordId, r: _Renaming) -> RecordId:
    return rec._replace(tid=r.T[rec.tid]) if rec.tid >= 0 else rec


def _producer(K, p: Producer, r: _Renaming) -> Producer:
    changes = {}
    if r.t_moves:
        changes["tid"] = r.T[p.tid]
    if r.p_moves:
        changes.update(partitions=_parts(p.partitions, r), new_partitions=_parts(p.new_partitions, r),
                       pending_partitions=_parts(p.pending_partitions, r),
                       queued=frozenset((r.P[k], n) for k, n in p.queued),
                       next_sequence=_per_partition(K, p.next_sequence, r))
        if p.last_acked:
            changes["last_acked"] = _per_partition(K, p.last_acked, r)
        if p.resequenced:
            changes["resequenced"] = tuple(sorted((r.P[k], *rest) for k, *rest in p.resequenced))
    if p.in_flight:
        changes["in_flight"] = tuple(sorted(_message(m, r) for m in p.in_flight))
    if p.reenqueued:
        changes["reenqueued"] = tuple(sorted(_message(m, r) for m in p.reenqueued))
    return p._replace(**changes) if changes else p


def _per_partition(K, values: tuple, r: _Renaming) -> tuple:
    """A tuple indexed by data partition, its entries moved with their partitions."""
    if len(values) != K.partitions:
        return values
    moved = [0] * len(values)
    for k, v in enumerate(values):
        moved[r.P[k]] = v
    return tuple(moved)


def _txn(t: TxnMetadata, r: _Renaming) -> TxnMetadata:
    return t._replace(partitions=_parts(t.partitions, r)) if r.p_moves and t.partitions else t


def _append(a, r: _Renaming):
    if not a:
        return a
    reply = a.reply
    reply = Reply(r.S[reply.producer], reply.rpc, _message(reply.request, r) if reply.request
                  else reply.request)
    return Append(_txn(a.target, r), reply)


def _by(items: tuple, moves: dict, fn) -> tuple:
    out = list(items)
    for x, item in enumerate(items):
        out[moves[x]] = fn(item)
    return tuple(out)


def _coordinator(c: Coordinator, r: _Renaming) -> Coordinator:
    txn = lambda t: _txn(t, r)  # noqa: E731
    ghost = frozenset((r.T[t], pid, e) for t, pid, e in c.force_terminated) \
        if c.force_terminated else c.force_terminated
    return c._replace(log=_by(c.log, r.T, txn), txns=_by(c.txns, r.T, txn),
                      appends=_by(c.appends, r.T, lambda a: _append(a, r)),
                      markers=_by(c.markers, r.T, lambda m: _parts(m, r)),
                      force_terminated=ghost)


def _partition(part: Partition, r: _Renaming) -> Partition:
    if not r.t_moves or not part.log:
        return part
    return part._replace(log=tuple(b if b.record.tid < 0 else
                                   Batch(*b[:5], _record(b.record, r)) for b in part.log))


def _consumer(K, c: Consumer, r: _Renaming) -> Consumer:
    positions = c.positions
    if r.p_moves:
        positions = _by(positions, r.P, lambda x: x)
    returned = tuple(_record(x, r) for x in c.returned) if r.t_moves else c.returned
    return Consumer(positions, returned)


def permute(K, w: World, g) -> World:
    """``w`` with transactional.ids, data partitions and consumers renamed by ``g``, in normal
    form (see the module's docstring)."""
    r = _renaming(K, g)
    normalise = _sizes(K)[PARTITIONS] > 1
    if not (r.t_moves or r.p_moves or r.c_moves):
        return _normal(w) if normalise else w
    producers, coordinator, parts = w.producers, w.coordinator, w.partitions
    if r.t_moves or r.p_moves:
        producers = _memo(producers, r, lambda: _by(producers, r.S, lambda p: _producer(K, p, r)))
        coordinator = _memo(coordinator, r, lambda: _coordinator(coordinator, r))
        parts = _memo(parts, r, lambda: _by(parts[:K.partitions], r.P, lambda x: _partition(x, r))
                      + tuple(_partition(x, r) for x in parts[K.partitions:]))
    consumers = w.consumers
    if consumers:
        consumers = _memo(consumers, r, lambda: _by(consumers, r.C, lambda c: _consumer(K, c, r)))
    net = tuple(_memo(m, r, lambda: _message(m, r)) for m in w.network) if w.network else ()
    delayed = tuple(sorted((_message(m, r) for m in w.delayed), key=network._order)) \
        if w.delayed else ()
    # (the group's owner is read only with consume-transform-produce, where ids are not renamed)
    w = World(producers, coordinator, parts, consumers, net, delayed, w.budgets, w.group)
    return _normal(w) if normalise else w


def canonical(K, w: World) -> World:
    """The state of ``w``'s orbit the search keeps (``kafka_mc.model.core.with_symmetry``): of the images
    of ``w`` under the permutations that order the data partitions' leaders by their hash, the
    one with the smallest fingerprint. Renaming partitions moves a leader's state without
    changing it (a log holds no partition index), so a leader's hash is the same wherever the
    renaming puts it, and every state of an orbit has the same candidates' images: with leaders
    that all differ, one permutation, and one renaming instead of one per permutation. With
    transactional.ids or consumers interchangeable too (logs name transactional.ids), every
    permutation is a candidate."""
    elements = _elements(K)
    tids, _, consumers = _sizes(K)
    if tids == 1 and consumers == 1:
        h = [hash(x) for x in w.partitions[:K.partitions]]
        if len(set(h)) == len(h):
            order = sorted(range(len(h)), key=h.__getitem__)
            p = [0] * len(h)
            for rank, k in enumerate(order):
                p[k] = rank
            return permute(K, w, ((0,), tuple(p), (0,)))
        elements = [g for g in elements if _orders(h, _inverse(g[PARTITIONS]))]
    return least_fingerprint(permute(K, w, g) for g in elements)


def _orders(h: list, old_at: tuple[int, ...]) -> bool:
    """Whether the renaming that puts partition ``old_at[new]`` at ``new`` orders ``h``."""
    return all(h[a] <= h[b] for a, b in zip(old_at, old_at[1:]))


@cache
def _elements(K) -> list:
    return group_elements(symmetries(K))


def _inverse(p: tuple[int, ...]) -> tuple[int, ...]:
    """The partitions in the order a renaming puts them: ``out[new] = old``."""
    out = [0] * len(p)
    for old, new in enumerate(p):
        out[new] = old
    return tuple(out)


# Renamed components and messages, by (value, renaming): a state's successors share most
# components with it and with each other, so most renamings are looked up, not rebuilt (x2 on the
# benchmark; one looked up by identity first measured slower).
_MEMO: dict = {}
MEMO_LIMIT = 1 << 17


def _memo(value, r: _Renaming, rename):
    key = (value, r)
    got = _MEMO.get(key)
    if got is None:
        if len(_MEMO) >= MEMO_LIMIT:
            _MEMO.clear()
        got = _MEMO[key] = rename()
    return got


def _normal(w: World) -> World:
    """The network ordered by connection, each connection's FIFO order kept."""
    net = network.in_connection_order(w.network)
    return w if net is w.network else w._replace(network=net)


_ACTION_KINDS = {"producer": "producer", "partition": "partition", "transactional_id": "tid",
                 "consumer": "consumer", "message": "message"}


def permute_action(K, a, g, names: dict):
    """Action ``a`` renamed by ``g``; ``names``: each rule's parameter names."""
    r = _renaming(K, g)
    out = [a[0]]
    for name, v in zip(names.get(a[0], ()), a[1:]):
        kind = _ACTION_KINDS.get(name)
        out.append(v if kind is None else r.S[v] if kind == "producer" else r.P[v]
                   if kind == "partition" else r.T[v] if kind == "tid" else r.C[v]
                   if kind == "consumer" else _message(v, r))
    return tuple(out) + tuple(a[len(out):])


class KafkaSymmetry:
    """The spec's symmetry hooks (``kafka_mc.model.protocol.ProtocolSpec.symmetry``), given the rules'
    parameter names (which arguments of an action are identifiers)."""

    def __init__(self, rules):
        self.names = {rule.name: rule.params for rule in rules}

    symmetries = staticmethod(symmetries)
    permute = staticmethod(permute)
    canonical = staticmethod(canonical)

    def permute_action(self, K, a, g):
        return permute_action(K, a, g, self.names)
