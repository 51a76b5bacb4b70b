"""Conformance (trace validation): is a recorded run of the real system a behaviour of the model?

Given a run (a list of events: a proxy's event log, a client's history) and the model's
``Observations`` for it (``kafka_mc.model.observations``), search the model for a behaviour that explains
the run, as TLA+ trace validation does (Cirstea, Kuppe, Loillier, Merz 2024; CCF, etcd-raft):

* a node is (model state, position in each stream);
* from a node, each enabled action of the model: a silent one keeps the positions; an observable
  one must be the next event of some stream (its ``Observation.match`` accepts the step), and
  advances that stream; a state observation at the head of a stream is consumed without a step
  when the state satisfies it (and, when it can only be a state, nothing else is tried from that
  node: consuming it later would only hold its stream back, every other move stays possible
  after it); an observation of the run's end state (``at_end``) only once every other event is
  consumed, and a state from which it cannot be met (its ``viable``) is not kept at all, nor is
  one from which the observation at a stream's head cannot be (a live consumer's fetch whose
  log has grown past what the answer showed);
* the run conforms when a node has consumed every stream.

Nodes are deduplicated on (the state's fingerprint, positions) and expanded best-first: first
the nodes whose earliest pending event comes latest in the run (the run's order is a hint: the
proxy's log is close to the order things happened, though not a constraint across streams), then
the most events consumed, then the fewest steps. A search consumes only events within a window
of the earliest pending one (``WINDOW`` events of the run's order), so a wrong guess (a silent
step taken too late: a transaction-log append completing after, not before, the next request) is
found out before other streams run far ahead; when a search fails and the window cut a step, it
is repeated with a window 4 times wider, so nothing is lost: the last search is exhaustive.

A search may also carry a ``Fold``: a value computed along each behaviour (whether it has
violated a property so far, say), kept in the nodes, and a behaviour is accepted only when its
value is; so "is there a conforming behaviour that violates P?" and "is there one that does not?"
are two searches, each exhaustive when it finds none (``kafka_mc.explorers.guided.verdict``
judges a reproduction with them).

The result is ``conforms`` (with the model's behaviour, which ``write_trace`` writes as an ITF
trace that ``kafka-mc replay`` and ``explore`` open), ``diverges`` (a ``Divergence``: the most
events any behaviour of the model explains, the earliest event pending there, the actions
enabled there and, for the nearest ones, which fields differ, and every stream's next event with
its nearest miss) or
``unknown`` (the node limit was reached first). Pass the events in the order they were recorded
(proxy events and client history merged by time when they share a clock: a source appended
after the other costs a few widenings).

Cost: each observed event needs one model step, so a conforming run costs about (events + silent
steps) x (the successors of a state) when nothing has to be undone: linear in the run's length.
Measured on the Kafka model (tests/model/test_kafka_observations.py's generated runs, 2 cores
shared): one producer, 100-120 events: 0.01-0.05 s, about 200 nodes; two producers at once,
100-230 events: 0.02-0.2 s, 300-2,900 nodes; three, 300-350 events: 0.7-1.1 s, about 4,300
nodes; real recorded runs (120-230 events, 20-50 observed): 0.02-0.1 s. A divergent run costs
the widenings down to an exhaustive search (a real one of 231 events: 6 s, 34,000 nodes).
"""
from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, Sequence

from kafka_mc.model.core import Expectation, fingerprint
from kafka_mc.model.observations import Observation, Observations, observations_of

MAX_NODES = 500_000
# How far past the earliest pending event (in the run's order) the search may consume events:
# widened 4-fold each time a search fails with steps the window cut (so nothing is lost).
WINDOW = 8
FRONTIER = 64       # frontier nodes a divergence report looks at
NEAR = 8            # near misses it lists


@dataclass(frozen=True)
class Near:
    """An action enabled where the run diverges that could have been the event, and why not."""

    action: str
    reason: str


@dataclass(frozen=True)
class Divergence:
    """Where no behaviour of the model explains the run any further.

    ``matched``: the most events one behaviour explains (the longest prefix matched, counted
    over every stream); ``event``: the index in the run of the first event (in the run's order)
    still pending there, ``label`` its description; ``pending``: every stream's next event there
    (index, label); ``enabled``: the model's actions enabled there; ``near``: for the event, the
    enabled actions of the kind it could be and what differs."""

    matched: int
    event: int
    label: str
    pending: tuple[tuple[int, str], ...]
    enabled: tuple[str, ...]
    near: tuple[Near, ...]
    kinds: tuple[str, ...] = ()     # the actions the event could be (none enabled: ``near`` empty)

    def report(self) -> list[str]:
        lines = [f"diverges at event {self.event} ({self.label}): no step of the model matches it "
                 f"after {self.matched} events explained"]
        for a in self.near:
            lines.append(f"  nearest: {a.action}: {a.reason}")
        if self.kinds and all(a.action.startswith("(") for a in self.near):
            lines.append(f"  no step it could be is enabled ({', '.join(self.kinds)})")
        others = [f"{i} ({label})" for i, label in self.pending if i != self.event]
        if others:
            lines.append("  other streams wait at: " + ", ".join(others))
        lines.append("  enabled there: " + (", ".join(self.enabled) or "nothing"))
        return lines


@dataclass(frozen=True)
class Fold:
    """A value folded along a behaviour, kept in the search's nodes (two paths to one state and
    positions with different values are two nodes): ``start(s)`` at an initial state,
    ``step(v, s, a, t)`` at every step, silent or observed. A behaviour that consumes the whole
    run is accepted only when ``accept(v)``; a node with ``dead(v)`` is not expanded (no
    extension of it can be accepted). Keep the values few (a flag, not a step number): each
    multiplies the nodes."""

    start: Callable[[Any], Hashable]
    step: Callable[[Hashable, Any, tuple, Any], Hashable]
    accept: Callable[[Hashable], bool]
    dead: Callable[[Hashable], bool] = lambda v: False


@dataclass(frozen=True)
class Conformance:
    verdict: str                 # "conforms" | "diverges" | "unknown"
    records: int                 # events in the run
    observed: int                # observations made of them (a skipped event makes none)
    matched: int                 # the most observations one behaviour explains
    nodes: int
    seconds: float
    states: tuple = ()           # conforms: the model's behaviour
    actions: tuple = ()
    steps: tuple = ()            # per action: the run's event it was, or -1 (silent)
    divergence: Divergence | None = None
    unseen: str = ""
    limit: int = MAX_NODES
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def conforms(self) -> bool:
        return self.verdict == "conforms"

    def summary(self) -> str:
        head = {"conforms": "conforms", "diverges": "DIVERGES",
                "unknown": f"unknown (node limit {self.limit} reached)"}[self.verdict]
        return (f"{head}: {self.matched}/{self.observed} observations of {self.records} events "
                f"explained, {self.nodes} nodes, {self.seconds:.2f}s"
                + (f", a behaviour of {len(self.actions)} steps" if self.conforms else ""))

    def to_dict(self) -> dict:
        out = {"verdict": self.verdict, "records": self.records, "observed": self.observed,
               "matched": self.matched, "nodes": self.nodes, "seconds": round(self.seconds, 3)}
        if self.conforms:
            out["steps"] = len(self.actions)
        d = self.divergence
        if d is not None:
            out["divergence"] = {"event": d.event, "label": d.label, "matched": d.matched,
                                 "pending": [list(p) for p in d.pending], "kinds": list(d.kinds),
                                 "enabled": list(d.enabled),
                                 "near": [{"action": n.action, "reason": n.reason}
                                          for n in d.near]}
        return out


def _key_function(model):
    """state -> fingerprint of its view (the explorers' dedup key, without symmetry: a run
    names its clients, so states are not identified up to renaming)."""
    if model.packed:
        return lambda s: s
    view = model.view
    if getattr(view, "is_identity", False):
        return fingerprint
    return lambda s: fingerprint(view(s))


def _items(events: Sequence[Mapping], obs: Observations):
    """(event index, Observation) for every observation, and the streams as tuples of item
    numbers, each in the run's order."""
    items: list[tuple[int, Observation]] = []
    streams: dict[Any, list[int]] = {}
    for i, e in enumerate(events):
        made = obs.observe(e)
        if made is None:
            continue
        made = (made,) if isinstance(made, Observation) else tuple(made)
        if not made:
            continue
        key = obs.stream(e)
        for o in made:
            streams.setdefault(key, []).append(len(items))
            items.append((i, o))
    return items, tuple(tuple(v) for v in streams.values())


def validate(model, events: Sequence[Mapping], *, observations: Observations | None = None,
             max_nodes: int = MAX_NODES, fold: Fold | None = None) -> Conformance:
    """Search ``model`` for a behaviour the run ``events`` is a recording of (with ``fold``: one
    whose folded value is accepted; ``diverges`` then says no behaviour with such a value
    explains the run, though others may)."""
    started = time.perf_counter()
    if model.symmetric:
        raise ValueError("validate a model bound without [check] symmetry: a run names its "
                         "clients, so states are not the same up to renaming them")
    obs = observations if observations is not None else observations_of(model, events)
    items, streams = _items(events, obs)
    total = len(items)
    lengths = tuple(len(s) for s in streams)
    key_of = _key_function(model)
    successors = model.successors
    # Observations of the end state wait for every other event: the streams they are in, and
    # the streams that must be consumed first (none: the run records no end state)
    final = {j for j, st in enumerate(streams) if any(items[i][1].at_end for i in st)}
    ordinary = tuple(j for j in range(len(streams)) if j not in final) if final else ()
    # End-state observations that can tell early that a state will never meet them
    ends = tuple(o for _, o in items if o.at_end and o.viable is not None)
    viable = tuple(o.viable for o in ends)
    # Streams with ordinary observations that can tell early that a state will never meet them:
    # a node whose stream head is such an observation, out of reach, is not kept either
    watched = tuple(j for j, st in enumerate(streams)
                    if any(items[i][1].viable is not None and not items[i][1].at_end for i in st))
    skipped = obs.skipped
    silent = _cached(obs.silent)
    fold_start, fold_step, fold_accept, fold_dead = _fold_parts(fold)

    def _first(pos) -> int:
        """The run's index of the earliest event still pending (past the end: all consumed)."""
        return min((items[streams[j][p]][0] for j, p in enumerate(pos) if p < lengths[j]),
                   default=len(events))

    def search(window: int, budget: int):
        """One best-first search consuming only events within ``window`` of the earliest one
        pending; (goal, parents, frontier, best, nodes, whether the window cut a step, whether
        nodes were left)."""
        parents: dict = {}
        heap: list = []
        tie = itertools.count()
        for s in model.init_states():
            pos = (0,) * len(streams)
            v = fold_start(s)
            k = (key_of(s), pos) if fold is None else (key_of(s), pos, v)
            if k not in parents:
                parents[k] = (None, None, -1)
                heapq.heappush(heap, (-_first(pos), 0, 0, next(tie), s, pos, k, v))
        best, frontier, nodes, cut = -1, [], 0, False
        while heap and nodes < budget:
            negfirst, negdone, depth, _, s, pos, k, v = heapq.heappop(heap)
            nodes += 1
            done, first = -negdone, -negfirst
            if done == total or (fold is not None and fold_dead(v)):
                if done == total and (fold is None or fold_accept(v)):
                    return k, parents, frontier, done, nodes, cut, bool(heap)
                continue    # dead, or the run is over with a value the fold does not accept
            if done > best:
                best, frontier = done, []
            if done == best and len(frontier) < FRONTIER:
                frontier.append((s, pos))
            horizon = first + window
            heads = [(j, streams[j][p]) for j, p in enumerate(pos) if p < lengths[j]]
            near = [(j, item) for j, item in heads if items[item][0] < horizon]
            cut = cut or len(near) < len(heads)
            if final and any(pos[j] < lengths[j] for j in ordinary):
                near = [(j, item) for j, item in near if not items[item][1].at_end]

            def push(t, j, via, item):
                if viable and not all(ok(t) for ok in viable):
                    return          # the run's end state is out of its reach
                if j < 0:
                    npos, nfirst = pos, first
                else:
                    npos = pos[:j] + (pos[j] + 1,) + pos[j + 1:]
                    nfirst = _first(npos) if items[item][0] == first else first
                for w in watched:
                    if npos[w] < lengths[w]:
                        head = items[streams[w][npos[w]]][1]
                        if head.viable is not None and not head.at_end and not head.viable(t):
                            return      # the event at a stream's head is out of its reach
                nv = v if fold is None or via is None else fold_step(v, s, via, t)
                nk = (key_of(t), npos) if fold is None else (key_of(t), npos, nv)
                if nk in parents:
                    return
                parents[nk] = (k, via, item)
                heapq.heappush(heap, (-nfirst, negdone - (j >= 0), depth + (via is not None),
                                      next(tie), t, npos, nk, nv))

            _expand(s, near, items, push, successors, skipped, silent)
        return None, parents, frontier, best, nodes, cut, bool(heap)

    # Widen the window until a behaviour is found, or no step was cut by it (the search was then
    # exhaustive), or the node limit is reached.
    window, nodes = WINDOW, 0
    while True:
        goal, parents, frontier, best, used, cut, left = search(window, max_nodes - nodes)
        nodes += used
        if goal is not None or not cut or nodes >= max_nodes or window > len(events):
            break
        window *= 4
    common = dict(records=len(events), observed=total, nodes=nodes, unseen=obs.unseen,
                  limit=max_nodes)
    if goal is not None:
        states, actions, steps = _behaviour(model, parents, goal, items)
        return Conformance("conforms", matched=total, seconds=time.perf_counter() - started,
                           states=states, actions=actions, steps=steps, **common)
    divergence = _divergence(model, frontier, streams, lengths, items, skipped, silent, best,
                             ends) if frontier else None
    return Conformance("unknown" if left or (cut and window <= len(events)) else "diverges",
                       matched=max(best, 0), seconds=time.perf_counter() - started,
                       divergence=divergence, **common)


def _expand(s, near, items, push, successors, skipped, silent) -> None:
    """Every move from the node of state ``s`` (``push``: a successor node): a state observation
    at the head of a stream within the window that holds in ``s`` is consumed without a step
    (one that can only be a state, and holds here, is consumed here and nothing else is tried
    from this node: consuming it later only delays its stream, every other move stays possible
    after it: module docstring); else each step of the model, silent (the positions kept) or
    matching the next event of a stream."""
    for j, item in near:
        o = items[item][1]
        if o.holds is not None and o.holds(s) is None:
            push(s, j, None, item)
            if o.match is None and not o.at_end:
                return
    for a, t in successors(s):
        name = a[0]
        if name in skipped:
            continue
        if silent(name):
            push(t, -1, a, -1)
            continue
        for j, item in near:
            o = items[item][1]
            if o.match is not None and name in o.actions and o.match(s, a, t) is None:
                push(t, j, a, item)


def _cached(silent):
    """``silent(name)`` remembered per action name."""
    cache: dict[str, bool] = {}

    def cached(name: str) -> bool:
        v = cache.get(name)
        if v is None:
            v = cache[name] = bool(silent(name))
        return v
    return cached


def _fold_parts(fold: Fold | None) -> tuple:
    """(start, step, accept, dead) of ``fold``; without one, a start of None and no others."""
    if fold is None:
        return (lambda s: None), None, None, None
    return fold.start, fold.step, fold.accept, fold.dead


def _behaviour(model, parents, goal, items):
    """The model's states and actions from an initial state to ``goal``, and for each action
    the run's event it was (-1: silent)."""
    chain = []
    k = goal
    while True:
        parent, via, item = parents[k]
        if parent is None:
            break
        if via is not None:
            chain.append((via, item))
        k = parent
    chain.reverse()
    key_of = _key_function(model)
    root = k[0]
    s = next(x for x in model.init_states() if key_of(x) == root)
    states, actions, steps = [s], [], []
    for a, item in chain:
        s = model.step(s, a)
        states.append(s)
        actions.append(a)
        steps.append(items[item][0] if item >= 0 else -1)
    return tuple(states), tuple(actions), tuple(steps)


def _out_of_reach(ends, t) -> str | None:
    """Why the run's end state is out of reach from ``t`` (an end observation whose ``viable``
    says so), else None."""
    for o in ends:
        if not o.viable(t):
            return f"after it the run's end state is out of reach ({o.label}: {o.holds(t)})"
    return None


def _divergence(model, frontier, streams, lengths, items, skipped, silent, best,
                ends=()) -> Divergence:
    """The report at the furthest nodes the search reached: the earliest (in the run) of the
    events pending there, with its near misses (enabled steps of its kind, or the state, by the
    fewest differing fields), and each other stream's next event with its nearest miss."""
    fmt = model.format_action
    near: dict[int, dict[str, str]] = {}     # item -> action (or the state) -> why not
    for s, pos in frontier:
        heads = [streams[j][p] for j, p in enumerate(pos) if p < lengths[j]]
        succ = None
        for item in heads:
            o = items[item][1]
            found = near.setdefault(item, {})
            if o.holds is not None:
                why = o.holds(s)
                if why is not None:
                    found.setdefault("(the state, without a step)", why)
            if o.match is None:
                continue
            succ = _successors(model, s) if succ is None else succ
            for a, t in succ:
                if a[0] in o.actions and a[0] not in skipped:
                    why = o.match(s, a, t)
                    if why is None:
                        why = _out_of_reach(ends, t)
                    if why is not None:
                        found.setdefault(fmt(a), why)

    def rank(why: str):
        """Fewest differing fields first (``differs``' "field: recorded x, model y" parts); a
        reason naming no field (a step of another kind of message) last."""
        return (why.count(": recorded ") or 99, len(why))
    s0, pos0 = frontier[0]
    pending0 = [streams[j][p] for j, p in enumerate(pos0) if p < lengths[j]]
    first = min(pending0)
    event, o = items[first]
    ranked = sorted(near.get(first, {}).items(), key=lambda kv: rank(kv[1]))[:NEAR]

    def nearest(i):
        found = sorted(near.get(i, {}).items(), key=lambda kv: rank(kv[1]))
        return f": nearest {found[0][0]}: {found[0][1]}" if found and rank(found[0][1])[0] < 99 \
            else ""
    pending = tuple((items[i][0], items[i][1].label + nearest(i)) for i in pending0)
    enabled = tuple(fmt(a) for a, _ in _successors(model, s0))
    return Divergence(best, event, o.label, pending, enabled,
                      tuple(Near(a, why) for a, why in ranked), tuple(sorted(o.actions)))


def _successors(model, s):
    return model.successors(s)


class RunError(ValueError):
    """A recorded run that cannot be read (one line)."""


def read_events(*files) -> list[dict]:
    """The events of JSON-lines files (a proxy's ``events.jsonl``, a client's
    ``history.jsonl``), one file after the other; ``RunError`` naming the file and line of the
    first that is not a JSON object."""
    import json
    out: list[dict] = []
    for file in files:
        try:
            text = open(file, encoding="utf-8").read()
        except FileNotFoundError:
            raise RunError(f"{file}: no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise RunError(f"{file}: cannot be read ({e})") from None
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except ValueError as err:
                raise RunError(f"{file}:{n}: not JSON ({err})") from None
            if not isinstance(e, dict):
                raise RunError(f"{file}:{n}: not a JSON object")
            out.append(e)
    return out


def write_trace(result: Conformance, model, cfg, file, *, source: str = "kafka-mc",
                run: Mapping[str, Any] | None = None, violated=None, upto: int | None = None
                ) -> None:
    """The conforming behaviour as an ITF trace (``kafka-mc replay`` re-runs it, ``explore``
    opens it): ``behaviour``'s trace written."""
    behaviour(result, model, cfg, source=source, run=run, violated=violated,
              upto=upto).write(file, model)


def behaviour(result: Conformance, model, cfg, *, source: str = "kafka-mc",
              run: Mapping[str, Any] | None = None, violated=None, upto: int | None = None):
    """The conforming behaviour as a ``Trace`` (``write_trace`` writes it; its ``to_json`` is
    the file's text). As ``explore`` writes a path: its property is the model's first invariant
    (replay then says it holds), and its ``#meta`` ``conformance`` says which event each step was. With
    ``violated`` (a ``Property``) and ``upto`` (a step): the behaviour's first ``upto`` steps, a
    counterexample of that property (replay then says it is violated)."""
    from kafka_mc.traces.trace import Trace, trace_metadata

    if not result.conforms:
        raise ValueError("only a conforming run has a behaviour to write")
    if violated is not None:
        prop, kind, claim = violated.name, violated.expectation.value, violated.claim
    else:
        first = next((p for p in model.properties() if p.expectation is Expectation.ALWAYS),
                     None)
        prop, kind, claim = ((first.name, "always", first.claim) if first is not None
                             else ("deadlock", "deadlock", "some action is enabled"))
    n = len(result.actions) if upto is None else upto
    meta = trace_metadata(cfg, property=prop, kind=kind, claim=claim, explorer="conformance",
                          source=source, model=model)
    meta["conformance"] = {"records": result.records, "observed": result.observed,
                           "steps": [[i + 1, e] for i, e in enumerate(result.steps[:n])
                                     if e >= 0],
                           **({"run": dict(run)} if run else {})}
    return Trace.of(model, result.states[:n + 1], result.actions[:n], meta)
