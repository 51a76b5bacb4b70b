"""Jepsen's queue checker (``jepsen.tests.kafka``'s analysis) over a real run's client history.

Jepsen's Kafka workload records only what clients saw and checks it offline. Its history is a
list of operations, each a transaction of micro-operations: sends (a key, a value and the offset
the send's acknowledgement named, if any) and polls (per key, the (offset, value) pairs one
``poll`` returned). Here a key is a partition, a writing operation is one producer transaction
(its sends, ``ok`` when commitTransaction returned, ``fail`` when abortTransaction did, ``info``
when the outcome is unknown), and a reading operation is one ``KafkaConsumer.poll`` of a
read_committed consumer (the run's live consumers and its end reader): ``history_ops`` builds
them from the Java client's history (``kafka_mc.realkafka.client``). The analysis follows
jepsen.tests.kafka (jepsen-io/jepsen, ``jepsen/src/jepsen/tests/kafka.clj``) function by
function:

- the **version order** of each key (``version-orders``): every (offset, value) that a poll
  returned, and every send of an operation that must have committed (``ok``, or ``info`` with a
  value some ``ok`` poll read); offsets that hold no such value (aborted records, control markers)
  are left out, so the *index* of a value is its place in the dense order;
- the anomalies, each under Jepsen's name:

| anomaly | what | the model's property |
|---|---|---|
| poll-skip | a consumer's successive polls of a key skip values the version order has between them (``poll-skip+nonmonotonic-cases``) | read_committed_polls |
| nonmonotonic-poll | a consumer's poll of a key starts at or before where its previous poll of it ended, with no new assignment | read_committed_polls |
| int-poll-skip | within one poll, two successive values of a key skip values between them (``int-poll-skip+nonmonotonic-cases``) | read_committed_polls |
| int-nonmonotonic-poll | within one poll, a value of a key comes at or before the one before it | read_committed_polls |
| nonmonotonic-send | a producer's transaction sends to a key before (in the version order) its previous transaction's last send to it (``nonmonotonic-send-cases``) | none: the model's producer has one batch in flight per partition, in order, by construction |
| int-send-skip | within one transaction, two successive sends to a key are not adjacent in the version order (``int-send-skip+nonmonotonic-cases``): another transaction wrote between them | none: allowed (writes are not isolated in Kafka; Jepsen's ``allowed-error-types``) |
| int-nonmonotonic-send | within one transaction, a send lands before the one sent before it | none, as nonmonotonic-send |
| inconsistent-offsets | two values at one offset of a key (``version-orders``' errors) | none: the model's log holds one batch per offset by construction |
| unseen | a value of a committed transaction (``ok``) that no poll ever returned (``unseen``, its last entry) | committed_writes_visible |
| G0 | a cycle of write-write edges between transactions | none: allowed (Kafka isolates no writes: transactions' records interleave in a partition) |
| G1c | a cycle of write-write and write-read edges, one write-read at least | none: allowed with write-write edges inferred (Jepsen's ``:ww-deps``) |
| G-single | a cycle with exactly one read-write (anti-dependency) edge | read_committed_polls when it is on one key (a poll missed a value below what it read); allowed across keys (read_committed is atomic per partition only: markers are written partition by partition) |

The dependency edges (``ww-graph``, ``wr-graph``; Jepsen's Kafka checker has the ``rw-graph`` of
its docstring commented out, and Elle infers G-single from it; here it is drawn): **ww** T1 ->
T2 when T1 sent the value just before T2's in a key's version order; **wr** T1 -> R when poll R
returned a value T1 sent; **rw** R -> T2 when T2 sent the value just after the last value poll R
returned of a key. Cycles are found with networkx (strongly connected components, then the
shortest path closing each edge of the kind the anomaly needs) and printed edge by edge.
Jepsen's own G1a (``aborted-read``), lost-write, duplicate and the run's torn-transaction,
zombie-write and hanging-transaction are ``kafka_mc.realkafka.anomalies``; Jepsen's
precommitted-read cannot occur here (no operation both sends and polls).

``check(ops)`` returns a ``QueueReport``: the ``anomalies`` (each an ``Anomaly``), the ``allowed``
cases (reported, not anomalies), and every name ``checked``.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from kafka_mc.realkafka.anomalies import Anomaly, parse_value

PROPERTIES = {
    "poll-skip": "read_committed_polls", "nonmonotonic-poll": "read_committed_polls",
    "int-poll-skip": "read_committed_polls", "int-nonmonotonic-poll": "read_committed_polls",
    "nonmonotonic-send": "", "int-send-skip": "", "int-nonmonotonic-send": "",
    "inconsistent-offsets": "", "unseen": "committed_writes_visible",
    "G0": "", "G1c": "", "G-single": "read_committed_polls",
}
CHECKED = tuple(PROPERTIES)
# Jepsen's allowed-error-types for Kafka with write-write edges inferred: writes interleave
# (int-send-skip, G0) and G1c follows from them; G-single across keys is a read that is atomic per
# partition only (decided per cycle, ``_g_single_allowed``).
ALLOWED = frozenset({"int-send-skip", "G0", "G1c"})
CYCLES_SHOWN = 8       # cycles reported per kind


@dataclass(frozen=True)
class Op:
    """One completed operation of the history: a transaction (``f`` "txn": its ``sends``, and
    ``polls`` if it also read, as Jepsen's ``:txn`` may) or a poll (``f`` "poll": ``polls``) or an
    assignment (``f`` "assign": ``keys``). ``sends`` and
    ``polls`` are (key, offset or None, value) in the order the client made or returned them;
    ``index`` orders operations (a process's in its order), ``name`` is how reports name it."""

    index: int
    process: str
    type: str                  # "ok" | "info" | "fail"
    f: str                     # "txn" | "poll" | "assign"
    name: str
    sends: tuple = ()
    polls: tuple = ()
    keys: frozenset = frozenset()

    def writes(self) -> dict:
        """key -> the values sent to it, in order (Jepsen's ``op-writes``)."""
        out: dict = defaultdict(list)
        for k, _, v in self.sends:
            out[k].append(v)
        return dict(out)

    def reads(self) -> dict:
        """key -> the values polled from it, in order (Jepsen's ``op-reads``)."""
        out: dict = defaultdict(list)
        for k, _, v in self.polls:
            out[k].append(v)
        return dict(out)


@dataclass(frozen=True)
class Order:
    """A key's version order: ``log`` offset -> the values seen there; ``by_index`` the dense
    order (one value per offset that holds one), ``by_value`` value -> its index."""

    log: tuple
    by_index: tuple
    by_value: Mapping[Any, int]

    def index(self, v):
        return self.by_value.get(v)


@dataclass
class QueueReport:
    anomalies: list[Anomaly] = field(default_factory=list)
    allowed: list[Anomaly] = field(default_factory=list)
    checked: tuple[str, ...] = CHECKED

    def add(self, name: str, transaction: str, evidence: str, allowed: bool = False) -> None:
        (self.allowed if allowed else self.anomalies).append(
            Anomaly(name, PROPERTIES.get(name, ""), transaction, evidence))

    def to_dict(self) -> dict:
        return {"checked": list(self.checked),
                "anomalies": [a.to_dict() for a in self.anomalies],
                "allowed": [a.to_dict() for a in self.allowed]}


def key_name(k) -> str:
    return f"p{k}" if isinstance(k, int) else str(k)


# --- the history -----------------------------------------------------------------------------

def history_ops(history: Iterable[Mapping]) -> list[Op]:
    """The Jepsen operations of a client history (``history.jsonl`` records): one ``txn`` per
    producer transaction that sent something, one ``poll`` per poll that returned, one
    ``assign`` per assignment, in the history's order of completion."""
    records = [r for r in history if isinstance(r, Mapping)]
    topics = {str(_topic(r)) for r in records if _topic(r) is not None}
    single = len(topics) <= 1

    def key(topic, partition):
        return int(partition) if single else (str(topic), int(partition))

    ops: list[Op] = []
    invoked: dict[str, Mapping] = {}
    open_txn: dict[str, dict] = {}      # process -> the transaction being written
    done: list[dict] = []

    def close(process):
        t = open_txn.pop(process, None)
        if t is not None and t["sends"]:
            done.append(t)

    for r in records:
        process, kind, f = str(r.get("process")), r.get("type"), str(r.get("f") or "")
        if kind == "invoke":
            invoked[process] = r
            continue
        args = (invoked.get(process) or {}).get("value") or {}
        index = int(r.get("index", len(ops)))
        if f == "send":
            v = r.get("value") if isinstance(r.get("value"), Mapping) else args
            parsed = parse_value(str(v.get("value")))
            ident = (parsed[0], parsed[2]) if parsed else (str(v.get("value")), False)
            t = open_txn.get(process)
            if t is None or t["ident"] != ident:
                close(process)
                t = open_txn[process] = {"ident": ident, "process": process, "sends": [],
                                         "type": "info", "index": index}
            offset = v.get("offset") if kind == "ok" else None
            t["sends"].append((key(v.get("topic"), v.get("partition") or 0), offset,
                               str(v.get("value"))))
            t["index"] = index
        elif f in ("commit_transaction", "abort_transaction"):
            t = open_txn.get(process)
            if t is None:
                continue
            t["index"] = index
            if kind == "ok":
                t["type"] = "ok" if f == "commit_transaction" else "fail"
                close(process)
            elif f == "abort_transaction":
                t["type"] = "info"
                close(process)
            # a commit that failed stays open: the application may abort it next
        elif f == "begin_transaction" and kind == "ok":
            close(process)
        elif f == "poll" and kind == "ok" and isinstance(r.get("value"), list):
            polls = tuple((key(x.get("topic"), x.get("partition")), x.get("offset"),
                           str(x.get("value"))) for x in r["value"] if isinstance(x, Mapping))
            if polls:
                ops.append(Op(index, process, "ok", "poll", f"{process} poll #{index}",
                              polls=polls))
        elif f == "assign" and kind == "ok":
            keys = frozenset(key(p.get("topic"), p.get("partition"))
                             for p in args.get("partitions") or () if isinstance(p, Mapping))
            ops.append(Op(index, process, "ok", "assign", f"{process} assign #{index}",
                          keys=keys))
    for process in list(open_txn):
        close(process)
    for t in done:
        ident, zombie = t["ident"]
        name = ("t{}.i{}.x{}".format(*ident) if isinstance(ident, tuple) else str(ident)) + \
            ("z" if zombie else "")
        ops.append(Op(t["index"], t["process"], t["type"], "txn", name, sends=tuple(t["sends"])))
    return sorted(ops, key=lambda o: o.index)


def _topic(r):
    v = r.get("value")
    if r.get("f") == "send" and isinstance(v, Mapping):
        return v.get("topic")
    if r.get("f") == "poll" and isinstance(v, list) and v and isinstance(v[0], Mapping):
        return v[0].get("topic")
    return None


# --- version orders ----------------------------------------------------------------------------

def reads_ok(ops: Sequence[Op]) -> dict:
    """key -> the values ``ok`` polls returned (Jepsen's ``(:ok reads-by-type)``)."""
    out: dict = defaultdict(set)
    for op in ops:
        if op.type == "ok":
            for k, vs in op.reads().items():
                out[k].update(vs)
    return out


def must_have_committed(read: Mapping, op: Op) -> bool:
    """``ok``, or ``info`` and some value it sent was read by an ``ok`` poll."""
    return op.type == "ok" or (op.type == "info" and any(
        v in read.get(k, ()) for k, vs in op.writes().items() for v in vs))


def version_orders(ops: Sequence[Op], read: Mapping | None = None) -> tuple[dict, list]:
    """(key -> Order, the inconsistent offsets: [(key, offset, values)])."""
    read = reads_ok(ops) if read is None else read
    logs: dict = defaultdict(dict)
    for op in ops:
        pairs = list(op.polls)
        if op.sends and must_have_committed(read, op):
            pairs = list(op.sends) + pairs
        for k, offset, v in pairs:
            if offset is not None:
                logs[k].setdefault(int(offset), set()).add(v)
    orders, errors = {}, []
    for k in sorted(logs, key=repr):
        log = logs[k]
        size = max(log) + 1 if log else 0
        dense = tuple(tuple(sorted(log[o])) for o in range(size) if o in log)
        for o in sorted(log):
            if len(log[o]) > 1:
                errors.append((k, o, tuple(sorted(log[o]))))
        by_index = tuple(vs[0] for vs in dense)
        by_value = {v: i for i, v in enumerate(by_index)}     # a value twice: its last index
        orders[k] = Order(tuple(tuple(sorted(log.get(o, ()))) for o in range(size)), by_index,
                          by_value)
    return orders, errors


def _delta(order: Order | None, v1, v2) -> int:
    """Jepsen's delta: index(v2) - index(v1), or 1 when either is not in the order."""
    if order is None:
        return 1
    i1, i2 = order.index(v1), order.index(v2)
    return 1 if i1 is None or i2 is None else i2 - i1


def _between(order: Order, v1, v2) -> list:
    return list(order.by_index[order.index(v1) + 1:order.index(v2)])


# --- the anomalies ------------------------------------------------------------------------------

def poll_cases(ops: Sequence[Op], orders: Mapping, report: QueueReport) -> None:
    """poll-skip and nonmonotonic-poll (per process, successive polls of a key), and their
    within-one-poll forms."""
    last: dict[str, dict] = defaultdict(dict)     # process -> key -> the last op that read it
    for op in ops:
        if op.f == "assign":
            last[op.process] = {k: o for k, o in last[op.process].items() if k in op.keys}
            continue
        if not op.polls:
            continue
        reads = op.reads()
        for k, vs in reads.items():
            order = orders.get(k)
            prev = last[op.process].get(k)
            if prev is not None:
                v, v2 = prev.reads()[k][-1], vs[0]
                d = _delta(order, v, v2)
                if d > 1:
                    report.add("poll-skip", op.name,
                               f"{op.process}: {key_name(k)} read up to {v} ({prev.name}), then "
                               f"from {v2} ({op.name}), skipping {_between(order, v, v2)}")
                elif d < 1:
                    report.add("nonmonotonic-poll", op.name,
                               f"{op.process}: {key_name(k)} read up to {v} ({prev.name}), then "
                               f"from {v2} ({op.name}): {1 - d} back")
            for v1, v2 in zip(vs, vs[1:]):
                d = _delta(order, v1, v2)
                if d > 1:
                    report.add("int-poll-skip", op.name,
                               f"{op.name} read {v1} then {v2} of {key_name(k)}, skipping "
                               f"{_between(order, v1, v2)}")
                elif d < 1:
                    report.add("int-nonmonotonic-poll", op.name,
                               f"{op.name} read {v1} then {v2} of {key_name(k)}: "
                               f"{1 - d} back")
        if op.type == "ok":
            for k in reads:
                last[op.process][k] = op


def send_cases(ops: Sequence[Op], orders: Mapping, report: QueueReport) -> None:
    """nonmonotonic-send (per process, successive transactions' sends to a key) and, within one
    transaction, int-send-skip and int-nonmonotonic-send."""
    last: dict[str, dict] = defaultdict(dict)
    for op in ops:
        if op.f == "assign":
            last[op.process] = {k: o for k, o in last[op.process].items() if k in op.keys}
            continue
        if not op.sends:
            continue
        writes = op.writes()
        for k, vs in writes.items():
            order = orders.get(k)
            for v1, v2 in zip(vs, vs[1:]):
                d = _delta(order, v1, v2)
                if d > 1:
                    report.add("int-send-skip", op.name,
                               f"{op.name} sent {v1} then {v2} to {key_name(k)}; between them: "
                               f"{_between(order, v1, v2)}", allowed=True)
                elif d < 1:
                    report.add("int-nonmonotonic-send", op.name,
                               f"{op.name} sent {v1} then {v2} to {key_name(k)}, which landed "
                               f"{1 - d} before it")
            prev = last[op.process].get(k)
            if prev is not None and op.type in ("ok", "info"):
                v, v2 = prev.writes()[k][-1], vs[0]
                if _delta(order, v, v2) < 1:
                    report.add("nonmonotonic-send", op.name,
                               f"{op.process}: {prev.name} sent {v} to {key_name(k)}, then "
                               f"{op.name} sent {v2}, which landed before it")
        if op.type in ("ok", "info"):
            for k in writes:
                last[op.process][k] = op


def unseen_cases(ops: Sequence[Op], report: QueueReport) -> None:
    """Values of committed (``ok``) transactions that no poll returned, per key."""
    sent: dict = defaultdict(list)
    polled: dict = defaultdict(set)
    for op in ops:
        if op.type != "ok":
            continue
        for k, vs in op.writes().items():
            sent[k].extend((v, op.name) for v in vs)
        for k, vs in op.reads().items():
            polled[k].update(vs)
    for k in sorted(sent, key=repr):
        missing = [(v, name) for v, name in sent[k] if v not in polled[k]]
        for v, name in missing:
            report.add("unseen", name, f"{v} sent to {key_name(k)} by a committed transaction, "
                                       "returned by no poll")


# --- dependency cycles --------------------------------------------------------------------------

def dependency_graph(ops: Sequence[Op], orders: Mapping):
    """A networkx DiGraph over operation indices: each edge's ``rels`` maps ww / wr / rw to why
    (the first reason found)."""
    import networkx as nx
    g = nx.DiGraph()
    by_index = {op.index: op for op in ops}
    g.add_nodes_from(by_index)
    writer: dict = {}
    for op in ops:
        for k, _, v in op.sends:
            writer[(k, v)] = op.index

    def link(a, b, rel, why):
        if a == b:
            return
        if not g.has_edge(a, b):
            g.add_edge(a, b, rels={})
        g.edges[a, b]["rels"].setdefault(rel, why)

    for k, order in orders.items():
        for v1, v2 in zip(order.by_index, order.by_index[1:]):
            a, b = writer.get((k, v1)), writer.get((k, v2))
            if a is not None and b is not None:
                link(a, b, "ww", f"{key_name(k)}: {v1} < {v2}")
    for op in ops:
        if op.type != "ok":
            continue
        for k, vs in op.reads().items():
            for v in vs:
                w = writer.get((k, v))
                if w is not None:
                    link(w, op.index, "wr", f"{key_name(k)}: {v}")
            order = orders.get(k)
            i = order.index(vs[-1]) if order else None
            if i is not None and i + 1 < len(order.by_index):
                nxt = order.by_index[i + 1]
                w = writer.get((k, nxt))
                if w is not None:
                    link(op.index, w, "rw", f"{key_name(k)}: read up to {vs[-1]}, not {nxt}")
    return g, by_index


def _subgraph(g, rels):
    import networkx as nx
    h = nx.DiGraph()
    h.add_nodes_from(g.nodes)
    h.add_edges_from((a, b) for a, b, d in g.edges(data=True) if set(d["rels"]) & rels)
    return h


def _closing(h, edges, limit: int) -> list[list[int]]:
    """Cycles each made of one of ``edges`` (a, b) and the shortest path b -> a in ``h``; one per
    set of nodes, shortest first, at most ``limit``."""
    import networkx as nx
    found, seen = [], set()
    for a, b in sorted(edges):
        try:
            path = nx.shortest_path(h, b, a)
        except nx.NetworkXNoPath:
            continue
        cycle = [a] + path
        if frozenset(cycle) not in seen:
            seen.add(frozenset(cycle))
            found.append(cycle)
    return sorted(found, key=lambda c: (len(c), c))[:limit]


def cycle_cases(ops: Sequence[Op], orders: Mapping, report: QueueReport) -> None:
    """G0 (ww only), G1c (ww and wr, one wr at least), G-single (exactly one rw)."""
    import networkx as nx
    g, by_index = dependency_graph(ops, orders)
    ww, wwr = _subgraph(g, {"ww"}), _subgraph(g, {"ww", "wr"})
    components = {n: i for i, c in enumerate(nx.strongly_connected_components(ww)) for n in c}
    g0 = _closing(ww, [(a, b) for a, b in ww.edges if components[a] == components[b]],
                  CYCLES_SHOWN)
    components = {n: i for i, c in enumerate(nx.strongly_connected_components(wwr)) for n in c}
    g1c = _closing(wwr, [(a, b) for a, b, d in g.edges(data=True) if "wr" in d["rels"]
                         and components[a] == components[b]], CYCLES_SHOWN)
    single = _closing(wwr, [(a, b) for a, b, d in g.edges(data=True) if "rw" in d["rels"]],
                      CYCLES_SHOWN)
    for name, cycles, first, rest in (("G0", g0, "ww", ("ww",)),
                                      ("G1c", g1c, "wr", ("wr", "ww")),
                                      ("G-single", single, "rw", ("wr", "ww"))):
        for cycle in cycles:
            text, keys = _show_cycle(g, by_index, cycle, first, rest)
            allowed = name in ALLOWED or (name == "G-single" and len(keys) > 1)
            report.add(name, " ".join(by_index[n].name for n in cycle[:-1]), text,
                       allowed=allowed)


def _show_cycle(g, by_index, cycle, first: str, rest: tuple) -> tuple[str, set]:
    """The cycle printed edge by edge (its first edge of kind ``first``, the others of the first
    of ``rest`` the edge has), and the keys its edges are on."""
    parts, keys = [by_index[cycle[0]].name], set()
    for n, (a, b) in enumerate(zip(cycle, cycle[1:])):
        have = g.edges[a, b]["rels"]
        rel = first if n == 0 else next(r for r in rest if r in have)
        keys.add(have[rel].split(":", 1)[0])
        parts.append(f"-{rel}({have[rel]})-> {by_index[b].name}")
    return " ".join(parts), keys


# --- all of it ------------------------------------------------------------------------------------

def check(ops: Sequence[Op]) -> QueueReport:
    """Every anomaly of the module docstring's table over ``ops`` (``history_ops``)."""
    ops = sorted(ops, key=lambda o: o.index)
    report = QueueReport()
    orders, errors = version_orders(ops)
    for k, offset, values in errors:
        report.add("inconsistent-offsets", "", f"{key_name(k)} offset {offset} holds "
                                               f"{list(values)}")
    poll_cases(ops, orders, report)
    send_cases(ops, orders, report)
    unseen_cases(ops, report)
    cycle_cases(ops, orders, report)
    return report


def check_history(history: Iterable[Mapping]) -> QueueReport:
    """``check`` over a client history's records."""
    return check(history_ops(history))


__all__ = ["Op", "Order", "QueueReport", "CHECKED", "PROPERTIES", "ALLOWED", "history_ops",
           "version_orders", "check", "check_history", "dependency_graph", "key_name"]
