"""The state-graph explorer (``--explorer graph``): the BFS's search, keeping every transition
as an edge, then the ``eventually`` properties checked on the graph under the model's fairness.

The search is the reference BFS's, step for step: same order, same states, counts, coverage and
safety verdicts with the same shortest counterexamples (tests compare them), because each state
is numbered when first discovered and the edge that discovered it is the BFS tree. What it adds
is the graph (``kafka_mc.explorers.graph.state_graph``: arrays, not Python objects) and, per state, the values of
the liveness properties' ``holds`` and ``when``. The loop is written out again rather than given
to the BFS as a per-transition hook: the BFS's hot loop stays as lean as it is, and this one
numbers states (a dict, fingerprint -> number) where the BFS only needs a set.

Liveness (``kafka_mc.explorers.graph.liveness``) runs once the graph is complete: a search cut short by a
violation, an interrupt or the depth bound leaves the ``eventually`` properties unchecked (and
says so), since a lasso found on part of a graph could be an artefact of the cut. States the
state constraint leaves unexpanded are in the graph but no lasso passes through them. A
violation is a lasso (``result.Path`` with ``loop``): exit 13.
"""
from __future__ import annotations

import time
import traceback
from array import array
from dataclasses import dataclass

import numpy as np

from kafka_mc.model.capabilities import offers
from kafka_mc.model.core import Expectation, Model
from kafka_mc.explorers.bfs.search import BfsOptions
from kafka_mc.explorers.core.adapter import check_fingerprint_contract, gc_paused, rebuild
from kafka_mc.explorers.core.checking import violation
from kafka_mc.explorers.core.progress import PROGRESS_EVERY
from kafka_mc.explorers.core.result import (Outcome, Path, Violation, action_coverage, edge_coverage,
                                   peak_rss_mb, search_stats)
from kafka_mc.explorers.core.setup import SearchSetup
from kafka_mc.explorers.graph.liveness import Lasso, fairness_bits, find_lasso
from kafka_mc.explorers.graph.state_graph import StateGraph


@dataclass(frozen=True)
class GraphOptions(BfsOptions):
    max_states: int = 0      # 0: unbounded; else stop (incomplete) past this many states


class _Stop(Exception):
    def __init__(self, violation: Violation):
        self.violation = violation


class _TooBig(Exception):
    pass


def explore(model: Model, options: GraphOptions = GraphOptions()) -> Outcome:
    """Search, check safety as the BFS does, then liveness on the complete graph."""
    outcome, graph, live = _search(model, options)
    if graph is None:
        return outcome
    return _liveness(model, outcome, graph, live, options)


def state_graph(model: Model, max_states: int = 0, max_depth: int = 0):
    """The reachable graph (checking nothing) and its states: ``(graph, states, outcome)``;
    ``outcome.extra["too_big"]`` when it has more than ``max_states`` states."""
    options = GraphOptions(properties=[], max_depth=max_depth, check_deadlock=False,
                           max_states=max_states)
    kept: list = []
    outcome, graph, _ = _search(model, options, always_graph=True, keep=kept)
    if outcome.interrupted:   # part of a graph is no graph: the interrupt is the caller's
        raise KeyboardInterrupt
    return graph, kept, outcome


def _search(model: Model, options: GraphOptions, always_graph: bool = False,
            keep: list | None = None):
    """``(outcome, graph or None, liveness columns or None)``: the graph and the columns when
    liveness is to be checked on it (or ``always_graph``)."""
    search = GraphSearch(model, options, keep)
    search.run()
    return search.outcome(always_graph)


class GraphSearch:
    """The graph explorer's search in named phases, as the BFS's ``Search``: ``seed`` (the
    initial states), ``expand_level`` (one BFS level, every transition an edge), ``keep_whole``
    (after an interrupt: drop a state or edge recorded in part), ``run`` (the levels, and how a
    search ends) and ``outcome``. The graph's columns are arrays, appended to in discovery order:
    state ``i``'s fingerprint ``fps[i]``, its discovering edge ``found_by[i]`` (-1: initial), its
    depth and whether it was expanded; edge ``e`` is ``src[e] --act[e]--> dst[e]``."""

    def __init__(self, model: Model, options: GraphOptions, keep: list | None):
        self.model, self.options, self.keep = model, options, keep
        self.setup = setup = SearchSetup(model, options.properties, options.check_deadlock,
                                         options.progress, options.progress_interval)
        self.checks = checks = setup.checks
        self.live = [(p, p.holds, p.when, bytearray(), bytearray()) for p in checks.eventually]
        self.index: dict[int, int] = {}           # fingerprint -> state number
        self.fps: list[int] = []
        self.found_by = array("l")
        self.depth_of = array("i")
        self.expanded = bytearray()
        self.src, self.dst, self.act = array("i"), array("i"), array("i")
        self.action_ids: dict = {}
        self.actions: list = []
        self.violations: list[Violation] = []
        self.interrupted = self.complete = self.too_big = False
        self.rss0 = peak_rss_mb()
        setup.start_clock()
        self.depth = self.generated = 0
        self.cut_at = None        # the action a transition property stopped the search at
        self.expanding = None     # the state being expanded (a model error's path)
        self.witnesses = checks.witnesses()
        setup.relevance()   # the properties a step can change the verdict of

    def path_to(self, i: int) -> Path:
        chain, fps, found_by, src = [], self.fps, self.found_by, self.src
        while True:
            chain.append(fps[i])
            e = found_by[i]
            if e < 0:
                break
            i = src[e]
        return rebuild(self.model, chain[::-1])

    def found(self, what, path) -> None:
        v = violation(what, path)
        if not self.options.keep_going:
            raise _Stop(v)
        self.violations.append(v)
        self.checks.retire(what)

    def note_live(self, s) -> None:
        for _, holds, when, h, w in self.live:
            h.append(bool(holds(s)))
            w.append(bool(when(s)) if when is not None else 0)

    def seed(self) -> list:
        """Number the initial states and check them; the first frontier."""
        checks, index, fps, keep = self.checks, self.index, self.fps, self.keep
        key, witness = self.setup.key, self.witnesses.see
        frontier = []
        for s in self.model.init_states():
            fp = key(s)
            if fp in index:
                continue
            index[fp] = len(fps)
            fps.append(fp)
            if keep is not None:
                keep.append(s)
            self.found_by.append(-1)
            self.depth_of.append(0)
            self.expanded.append(0)
            frontier.append(s)
            self.note_live(s)
            for p, holds in checks.always:
                if not holds(s):
                    self.found(p, self.path_to(len(fps) - 1))
            witness(s)
        return frontier

    def expand_level(self, frontier: list, base: int) -> list:
        """Expand the states of one level (state numbers from ``base``); the next level."""
        setup, checks, options = self.setup, self.checks, self.options
        always, transition, live, keep = checks.always, checks.transition, self.live, self.keep
        successors, key, packed = setup.successors, setup.key, setup.packed
        within, bounded, relevant = setup.within, setup.bounded, setup.relevant
        index, fps, found_by, depth_of, expanded = (self.index, self.fps, self.found_by,
                                                    self.depth_of, self.expanded)
        src, dst, act, action_ids, actions = (self.src, self.dst, self.act, self.action_ids,
                                              self.actions)
        edge_notes, witness, pending = setup.edges, self.witnesses.see, self.witnesses.open
        found, path_to, depth, max_states = self.found, self.path_to, self.depth, options.max_states
        nxt = []
        index_get, aid_get = index.get, action_ids.get
        for k, s in enumerate(frontier):
            gi = base + k
            self.expanding = gi
            if not k % PROGRESS_EVERY and options.progress is not None:
                setup.report(self.generated, len(fps), depth, len(frontier) - k + len(nxt))
            if bounded and not within(s):
                continue
            out = successors(s)
            expanded[gi] = 1
            if not out:
                for stuck in checks.stuck_failures(s):
                    found(stuck, path_to(gi))
                continue
            self.generated += len(out)
            for a, t in out:
                aid = aid_get(a)
                if aid is None:
                    aid = action_ids[a] = len(actions)
                    actions.append(a)
                for taken, note in edge_notes:
                    note(taken(s, a, t))
                fp = t if packed else key(t)
                if transition:
                    for p, holds in relevant(a, transition) if relevant else transition:
                        if not holds(s, a, t):
                            base_path = path_to(gi)
                            self.cut_at = aid   # counted by coverage if the search stops here
                            found(p, Path(base_path.states + (t,), base_path.actions + (a,)))
                            self.cut_at = None
                            transition = checks.transition
                j = index_get(fp)
                if j is None:
                    j = index[fp] = len(fps)
                    fps.append(fp)
                    if keep is not None:
                        keep.append(t)
                    found_by.append(len(src))
                    depth_of.append(depth + 1)
                    expanded.append(0)
                    nxt.append(t)
                    if live:
                        self.note_live(t)
                    src.append(gi)
                    dst.append(j)
                    act.append(aid)
                    for p, holds in relevant(a, always) if relevant else always:
                        if not holds(t):
                            found(p, path_to(j))
                            always = checks.always
                    if pending:
                        witness(t)
                else:
                    src.append(gi)
                    dst.append(j)
                    act.append(aid)
            if max_states and len(fps) > max_states:
                raise _TooBig()
        self.expanding = None
        return nxt

    def keep_whole(self) -> None:
        """After an interrupt, which may have landed between the appends that record one state
        or edge: keep what was recorded whole (a state whose discovering edge is missing goes
        too)."""
        src, dst, act, fps, found_by = self.src, self.dst, self.act, self.fps, self.found_by
        edges = min(len(src), len(dst), len(act))
        del src[edges:], dst[edges:], act[edges:]
        n = min(len(fps), len(found_by), len(self.depth_of), len(self.expanded))
        while n and found_by[n - 1] >= edges:
            n -= 1
        for column in (fps, found_by, self.depth_of, self.expanded,
                       *(c for x in self.live for c in x[3:])):
            del column[n:]
        if self.keep is not None:
            del self.keep[n:]
        for fp in [fp for fp, j in self.index.items() if j >= n]:
            del self.index[fp]

    def run(self) -> None:
        """The levels, until none is left, the depth bound, a violation (unless it keeps going),
        the state bound, an interrupt or a model error."""
        max_depth = self.options.max_depth
        with gc_paused():
            try:
                check_fingerprint_contract(self.model)
                frontier = self.seed()
                base = 0
                while frontier:
                    if max_depth and self.depth >= max_depth:
                        break
                    nxt = self.expand_level(frontier, base)
                    base += len(frontier)
                    frontier = nxt
                    if nxt:
                        self.depth += 1
                self.complete = not frontier
                if self.complete:
                    self.violations += self.checks.unwitnessed(self.witnesses.pending)
            except _Stop as stop:
                self.violations.append(stop.violation)
            except _TooBig:
                self.too_big = True
            except KeyboardInterrupt:
                self.interrupted = True
                self.keep_whole()
            except Exception as exc:
                path = self.path_to(self.expanding) if self.expanding is not None else None
                self.violations.append(Violation(
                    "model_error", "model_error", "the model raised an exception", path,
                    "".join(traceback.format_exception(exc)).rstrip()))

    def outcome(self, always_graph: bool = False):
        """The outcome; the graph and the liveness columns when liveness is to be checked (the
        search complete, not stopped by a violation or a model error) or ``always_graph``."""
        model, options, checks, actions = self.model, self.options, self.checks, self.actions
        violations, live = self.violations, self.live
        seconds = time.perf_counter() - self.setup.t0
        found_by = self.found_by
        graph = StateGraph(
            fingerprints=self.fps, discovered_by=np.frombuffer(found_by, dtype=np.int64)
            if found_by.itemsize == 8 else np.array(found_by, dtype=np.int64),
            depth=np.frombuffer(self.depth_of, dtype=np.int32),
            expanded=np.frombuffer(bytes(self.expanded), dtype=np.bool_),
            src=np.frombuffer(self.src, dtype=np.int32), dst=np.frombuffer(self.dst, dtype=np.int32),
            act=np.frombuffer(self.act, dtype=np.int32), actions=tuple(actions))
        kinds = list(model.action_kinds())
        fired = np.bincount(graph.act, minlength=len(actions))
        if self.cut_at is not None:   # the transition a transition property stopped the search at
            fired[self.cut_at] += 1
        fired_by = _by_name(actions, fired)
        found_first = graph.discovered_by[graph.discovered_by >= 0]
        found_by_name = _by_name(actions, np.bincount(graph.act[found_first],
                                                      minlength=len(actions)))
        stats = search_stats(self.generated, graph.states, int(graph.depth.max(initial=0)),
                             seconds, self.rss0, self.setup.packed)
        done = self.complete and not self.interrupted and \
            not any(v.kind == "model_error" for v in violations)
        stopped = bool(violations) and not options.keep_going
        liveness_checked = done and not stopped and bool(live)
        outcome = Outcome(
            model=model.name, explorer="graph", stats=stats,
            coverage=action_coverage(fired_by, found_by_name, kinds),
            never_enabled=tuple(k for k in kinds if k not in fired_by),
            checked=checks.checked, unchecked=checks.unchecked,
            not_applicable=checks.not_applicable, violations=tuple(violations),
            edges=edge_coverage(self.setup.machines, self.setup.edges_taken),
            interrupted=self.interrupted, complete=self.complete,
            extra={"too_big": True} if self.too_big else {})
        if not (liveness_checked or always_graph):
            return outcome, None, None
        return outcome, graph, [(p, np.frombuffer(bytes(h), dtype=np.bool_),
                                 np.frombuffer(bytes(w), dtype=np.bool_))
                                for p, _, _, h, w in live]


def _by_name(actions, counts) -> dict[str, int]:
    out: dict[str, int] = {}
    for a, n in zip(actions, counts.tolist()):
        if n:
            out[a[0]] = out.get(a[0], 0) + n
    return out


def _liveness(model, outcome: Outcome, g: StateGraph, live, options) -> Outcome:
    t0 = time.perf_counter()
    fair_model = offers(model, "fairness")   # without it, no behaviour owes a step
    declared = dict(model.fairness()) if fair_model else {}
    families = [(name, f.kind.value) for name, f in declared.items()]
    family_of = model.fair_family if fair_model else (lambda a: None)
    fair = fairness_bits(g, families, family_of)
    violations = list(outcome.violations)
    for p, holds, when in live:
        trigger = when if p.when is not None else (g.discovered_by < 0)
        lasso = find_lasso(g, holds, trigger, fair)
        if lasso is None:
            continue
        violations.append(Violation(p.name, Expectation.EVENTUALLY.value, p.claim,
                                    _lasso_path(model, g, lasso),
                                    _fairness_report(g, fair, declared, lasso)))
        if not options.keep_going:
            break
    stats = g.statistics()
    stats["liveness_seconds"] = round(time.perf_counter() - t0, 3)
    return Outcome(**{**outcome.__dict__, "violations": tuple(violations),
                      "checked": outcome.checked + tuple(p.name for p, _, _ in live),
                      "unchecked": (), "extra": {**outcome.extra, "graph": stats}})


def _lasso_path(model, g: StateGraph, lasso: Lasso) -> Path:
    """The lasso's states and actions, rebuilt by replaying the edges' actions."""
    edges = lasso.stem + lasso.loop
    path = rebuild(model, [g.fingerprints[lasso.start]] + [g.fingerprints[g.dst[e]] for e in edges],
                   actions=[g.actions[g.act[e]] for e in edges])
    states, actions = path.states, path.actions
    loop_at = len(lasso.stem)
    if lasso.loop:   # the last edge closes the loop: it is recorded as the loop's action
        return Path(tuple(states[:-1]), tuple(actions[:-1]), loop=loop_at,
                    loop_action=actions[-1], trigger=lasso.trigger)
    return Path(tuple(states), tuple(actions), loop=loop_at, trigger=lasso.trigger)


def _fairness_report(g: StateGraph, fair, declared, lasso: Lasso) -> str:
    """Why the loop is fair: per fairness condition whose family is enabled on the loop, where it
    is enabled and whether the loop takes it (the others are enabled nowhere on it)."""
    if not lasso.loop:
        return "fairness: no fair action is enabled in the last state, so it may stay there forever"
    states = [int(g.src[e]) for e in lasso.loop]
    taken = 0
    for e in lasso.loop:
        taken |= int(fair.edge_bits[e])
    lines, idle = [], 0
    for k, name in enumerate(fair.names):
        bit = 1 << k
        on = [bool(int(fair.enabled[s]) & bit) for s in states]
        if not any(on) and not taken & bit:
            idle += 1
            continue
        where = "at every state" if all(on) else f"at {sum(on)} of {len(on)} states"
        lines.append(f"fairness {declared[name].kind.value} {name}: enabled {where} of the loop, "
                     + ("taken on it" if taken & bit else "not taken (disabled elsewhere on it)"))
    return "\n".join(lines + [f"fairness: {idle} other families are enabled nowhere on the loop"])
