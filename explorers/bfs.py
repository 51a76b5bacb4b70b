"""Single-process breadth-first search: the reference explorer, with shortest counterexamples.

The search is level-synchronous. What it keeps per distinct state is small:

* ``seen``: a set of 64-bit fingerprints (``model.core.fingerprint`` of the view, or the state
  itself for packed models) -- an int per state, not the state;
* per level, the fingerprints in discovery order and an ``array`` of parent indices into the
  previous level. A counterexample is the chain of parent indices, rebuilt into states and actions
  by replaying (``explorers.paths.rebuild``); no per-state parent dict, no stored actions.

Only the current and the next frontier hold full states. Each successor is fingerprinted once.
Properties are checked as ``explorers.checking`` says: invariants and witnesses when a state is
first discovered (so the first violation found is at the smallest depth), transition properties
on every generated transition, terminal properties on expanded states without successors. The
cyclic garbage collector is paused during the search: states are immutable acyclic values, and
CPython would otherwise rescan the growing frontiers again and again.

With ``keep_going`` (``--continue``, TLC's ``-continue``) the search goes on after a violation:
each property is reported once, with the first counterexample met, which is a shortest one, and
is no longer checked after it. Every property failing at a state or step is reported there (an
initial state too; a stuck state: the deadlock and each failing terminal property), so each
property's counterexample is the first in BFS order that violates it, whatever the others do;
only a model error still ends the search.

TLC's semantics for the state constraint and the depth bound: a state outside ``within_bounds``
or at ``max_depth`` is counted and checked but not expanded, and is never a deadlock.
"""
from __future__ import annotations

import time
import traceback
from array import array
from dataclasses import dataclass
from typing import Callable, Sequence

from model.core import Model, ModelBase
from explorers.checking import Checks, violation
from explorers.paths import check_fingerprint_contract, gc_paused, key_function, rebuild, \
    successors_of
from explorers.result import (Outcome, Violation, action_coverage, by_name, edge_coverage,
                              machines_of, peak_rss_mb, search_stats)

PROGRESS_EVERY = 2048  # expansions between clock reads


@dataclass(frozen=True)
class Progress:
    generated: int
    distinct: int
    depth: int
    queue: int          # states discovered but not yet expanded
    seconds: float

    @property
    def states_per_second(self) -> float:
        return self.distinct / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class BfsOptions:
    properties: Sequence[str] | None = None      # names to check; None: all the model has
    max_depth: int = 0                            # 0: unbounded
    check_deadlock: bool | None = None            # None: the model's default
    progress: Callable[[Progress], None] | None = None
    progress_interval: float = 2.0                # seconds between progress reports
    keep_going: bool = False                      # --continue: report every violated property
    por: bool = False                             # --por: partial-order reduction (explorers.por)


class _Stop(Exception):
    """Ends the search at the first violation."""

    def __init__(self, violation: Violation):
        self.violation = violation


def explore(model: Model, options: BfsOptions = BfsOptions()) -> Outcome:
    checks = Checks(model, options.properties, options.check_deadlock)
    always, transition = checks.always, checks.transition   # iterated inline: the hot loop
    max_depth = options.max_depth
    successors, key, packed = successors_of(model), key_function(model), getattr(model, "packed", False)
    within = model.within_bounds
    seen: set[int] = set()
    reducer = None
    if options.por:   # partial-order reduction: the reduced successors, deduplicated on their
        from explorers.por import Reducer, reduction_key   # reduction view, with the proviso
        reducer, key = Reducer(model, checks), reduction_key(model)
        level_new: set[int] = set()

        def successors(s, _reduced=reducer.successors, _seen=seen, _new=level_new):
            return _reduced(s, lambda fp: fp in _seen and fp not in _new, key)
    bounded = getattr(within, "__func__", None) is not ModelBase.within_bounds

    levels: list[tuple[list[int], array]] = []  # per depth: fingerprints, parent indices
    cov: dict = {}
    dcov: dict = {}
    machines = machines_of(model)
    edges_taken = [set() for _ in machines]
    edges = tuple((m.taken, got.update) for m, got in zip(machines, edges_taken))
    generated = 0
    depth = 0
    violations: list[Violation] = []
    interrupted = complete = False
    frontier: list = []
    next_fps: list[int] = []
    next_parents = array("l")
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()
    last_report = t0

    def path_to(d: int, i: int):
        """Fingerprints from an initial state to state ``i`` of depth ``d``."""
        lv = levels + [(next_fps, next_parents)]
        fps = []
        while d > 0:
            fps.append(lv[d][0][i])
            i = lv[d][1][i]
            d -= 1
        fps.append(lv[0][0][i])
        return rebuild(model, fps[::-1], key if reducer else None)

    def found(what, path) -> None:
        """A violation: the end of the search, or with ``keep_going`` one more to report and a
        property no longer checked (the caller rereads ``checks``' tuples)."""
        v = violation(what, path)
        if not options.keep_going:
            raise _Stop(v)
        violations.append(v)
        checks.retire(what)

    witnesses = checks.witnesses()
    witness, pending = witnesses.see, witnesses.open   # the list ``see`` shrinks

    expanding = None  # (depth, index) of the state being expanded, for model errors
    with gc_paused():
        try:
            fps0 = next_fps
            check_fingerprint_contract(model)
            for s in model.init_states():
                fp = key(s)
                if fp not in seen:
                    seen.add(fp)
                    frontier.append(s)
                    fps0.append(fp)
                    for p, holds in always:
                        if not holds(s):
                            found(p, path_to(0, len(fps0) - 1))
                            always = checks.always
                    witness(s)
            levels.append((fps0, array("l")))
            next_fps = []
            while frontier:
                if max_depth and depth >= max_depth:
                    break
                nxt = []
                nxt_append, fps_append, par_append = nxt.append, next_fps.append, next_parents.append
                seen_add, cov_get, dcov_get = seen.add, cov.get, dcov.get
                for i, s in enumerate(frontier):
                    expanding = (depth, i)
                    if not i % PROGRESS_EVERY and options.progress is not None:
                        now = time.perf_counter()
                        if now - last_report >= options.progress_interval:
                            last_report = now
                            options.progress(Progress(generated, len(seen), depth,
                                                      len(frontier) - i + len(nxt), now - t0))
                    if bounded and not within(s):
                        continue
                    out = successors(s)
                    if not out:
                        for stuck in checks.stuck_failures(s):
                            found(stuck, path_to(depth, i))
                        continue
                    generated += len(out)
                    for a, t in out:
                        cov[a] = cov_get(a, 0) + 1
                        for taken, note in edges:
                            note(taken(s, a, t))
                        fp = t if packed else key(t)
                        if transition:
                            for p, holds in transition:
                                if not holds(s, a, t):
                                    base = path_to(depth, i)
                                    # (reduced: the rebuilt state may differ from s outside its
                                    # reduction view, so the step is taken again from it)
                                    last = model.step(base.states[-1], a) if reducer else t
                                    found(p, type(base)(base.states + (last,), base.actions + (a,)))
                                    transition = checks.transition
                        if fp not in seen:
                            seen_add(fp)
                            if reducer:
                                level_new.add(fp)
                            nxt_append(t)
                            fps_append(fp)
                            par_append(i)
                            dcov[a] = dcov_get(a, 0) + 1
                            for p, holds in always:
                                if not holds(t):
                                    found(p, path_to(depth + 1, len(nxt) - 1))
                                    always = checks.always
                            if pending:
                                witness(t)
                expanding = None
                levels.append((next_fps, next_parents))
                next_fps, next_parents = [], array("l")
                frontier = nxt
                if reducer:
                    level_new.clear()
                if nxt:
                    depth += 1
            complete = not frontier
            violations += checks.unwitnessed(witnesses.pending) if complete else []
        except _Stop as stop:
            violations.append(stop.violation)
        except KeyboardInterrupt:
            interrupted = True
        except Exception as exc:  # an exception in model code: a model error, with its path
            path = path_to(*expanding) if expanding else None
            violations.append(Violation("model_error", "model_error", "the model raised an exception",
                                        path, "".join(traceback.format_exception(exc)).rstrip()))

    seconds = time.perf_counter() - t0
    depth += bool(next_fps)  # a level cut short by a violation
    fired = by_name(cov)
    kinds = list(getattr(model, "action_kinds", lambda: ())())
    stats = search_stats(generated, len(seen), depth, seconds, rss0, packed)
    return Outcome(
        model=model.name, explorer="bfs", stats=stats,
        coverage=action_coverage(fired, by_name(dcov), kinds),
        never_enabled=tuple(k for k in kinds if k not in fired),
        checked=checks.checked, unchecked=checks.unchecked,
        not_applicable=checks.not_applicable,
        violations=tuple(violations), edges=edge_coverage(machines, edges_taken),
        interrupted=interrupted, complete=complete,
        extra=reduction_note(reducer) if reducer else {})


def reduction_note(reducer) -> dict:
    """What a report says about a reduced search."""
    return {"reduction": {"partial_order": True, "active": reducer.enabled,
                          "reduced_states": reducer.reduced_states}}
