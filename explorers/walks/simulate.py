"""TLC-style random simulation: seeded random walks, for state spaces too big to exhaust.

Each of ``runs`` walks starts from a randomly chosen initial state and takes up to ``depth``
steps, each a uniformly random choice among the enabled successors (the model's fast
``successors`` path when it has one). Properties are checked as ``kafka_mc.explorers.core.checking`` says:
every state a walk visits against the ALWAYS properties, every step against the TRANSITION
properties; a walk that reaches a state with no enabled action ends there, a deadlock when
deadlock checking is on and otherwise checked against the TERMINAL properties; a walk that
leaves ``within_bounds`` just ends. The first violation stops the simulation; its walk is the
counterexample (``Path``), handed to the trace minimizer.

SOMETIMES witnesses are collected across all walks; one never seen is reported, but that is a
weaker claim than the exhaustive explorers': random walks that miss a state do not show it is
unreachable. Eventually (liveness) properties are not checked.

``Walks`` holds the per-step checks and bookkeeping; ``kafka_mc.explorers.walks.stateful`` (hypothesis-driven
walks) shares it. Same model, options and seed: the same walks, counts and counterexample.
"""
from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence

from kafka_mc.model.core import Model
from kafka_mc.explorers.core.adapter import successors_of
from kafka_mc.explorers.core.checking import violation as as_violation
from kafka_mc.explorers.core.progress import Progress
from kafka_mc.explorers.core.result import (Outcome, Path, Violation, action_coverage, by_name,
                                   edge_coverage, peak_rss_mb, search_stats)
from kafka_mc.explorers.core.setup import SearchSetup
from kafka_mc.traces.minimize import shrink

DEFAULT_RUNS = 10_000
DEFAULT_DEPTH = 100
PROGRESS_EVERY = 1024  # steps between clock reads


@dataclass(frozen=True)
class SimulateOptions:
    properties: Sequence[str] | None = None      # names to check; None: all the model has
    runs: int = DEFAULT_RUNS                      # number of walks
    depth: int = DEFAULT_DEPTH                    # steps per walk at most (> 0)
    seed: int = 0
    check_deadlock: bool | None = None            # None: the model's default
    progress: Callable[[Progress], None] | None = None
    progress_interval: float = 2.0                # seconds between progress reports
    minimize: bool = True                         # shrink the counterexample (delta debugging)


class Walks:
    """What a random-walk explorer checks and counts, one walk at a time.

    ``begin(s)`` starts a walk, ``enabled(names)`` records the action kinds enabled somewhere,
    ``advance(s, a, t)`` takes a step, ``deadlock()`` is called where nothing is enabled; each
    returns a ``Violation`` without a path (the caller owns the walk and attaches it) or None.
    Counts: steps, walks, the longest walk, distinct fingerprints, and per action the steps that
    took it and the new states it found first.
    """

    def __init__(self, model: Model, properties: Sequence[str] | None = None,
                 check_deadlock: bool | None = None,
                 progress: Callable[[Progress], None] | None = None,
                 progress_interval: float = 2.0):
        self.model = model
        self.setup = setup = SearchSetup(model, properties, check_deadlock, progress,
                                         progress_interval)
        self.checks = checks = setup.checks
        self.witnesses = checks.witnesses()
        self.bounded = setup.bounded
        self.key, self.packed = setup.key, setup.packed
        self.kinds = tuple(model.action_kinds())
        self.unseen_kinds = set(self.kinds)  # never enabled so far
        self.seen: set[int] = set()
        self.taken: dict = {}       # action -> steps that took it
        self.discovered: dict = {}  # action -> new states it found first
        self.machines = setup.machines
        self.edges = setup.edges_taken   # per machine: the edges of its table taken
        self.steps = self.walks = self.depth = self.length = 0
        self.progress = progress
        self.rss0 = peak_rss_mb()
        setup.start_clock()
        self.t0 = setup.t0
        self.seconds_to_violation: float | None = None  # when a check first failed
        # a walk's state was checked when the walk reached it: a step is checked for the
        # properties it can change (``Relevance``)
        setup.relevance()
        self.relevant = setup.relevant

    def begin(self, s) -> Violation | None:
        self.walks += 1
        self.length = 0
        self.seen.add(self.key(s))
        return self._check_state(s)

    def enabled(self, names: Iterable[str]) -> None:
        if self.unseen_kinds:
            self.unseen_kinds.difference_update(names)

    def deadlock(self, s) -> Violation | None:
        """The walk is in ``s``, a state with no enabled action: a deadlock, or a terminal
        property failing there (``kafka_mc.explorers.core.checking``)."""
        found = self.checks.stuck(s)
        return self._found(as_violation(found)) if found else None

    def stuck(self, s) -> bool:
        """Whether the walk must end in ``s`` (outside the state constraint)."""
        return self.bounded and not self.model.within_bounds(s)

    def advance(self, s, a, t) -> Violation | None:
        self.steps += 1
        self.length += 1
        if self.length > self.depth:
            self.depth = self.length
        self.taken[a] = self.taken.get(a, 0) + 1
        for m, got in zip(self.machines, self.edges):
            got.update(m.taken(s, a, t))
        fp = self.key(t)
        if fp not in self.seen:
            self.seen.add(fp)
            self.discovered[a] = self.discovered.get(a, 0) + 1
        if self.progress is not None and not self.steps % PROGRESS_EVERY:
            self.setup.report(self.steps, len(self.seen), self.depth, 0)
        if p := self.checks.step(s, a, t, self.relevant):
            return self._found(as_violation(p))
        return self._check_state(t, a)

    def _check_state(self, s, a=None) -> Violation | None:
        if p := self.checks.state(s, a, self.relevant):
            return self._found(as_violation(p))
        if self.witnesses.open:
            self.witnesses.see(s)
        return None

    def _found(self, v: Violation) -> Violation:
        if self.seconds_to_violation is None:
            self.seconds_to_violation = time.perf_counter() - self.t0
        return v

    def outcome(self, explorer: str, found: Violation | None, interrupted: bool = False,
                minimize: bool = True, **extra) -> Outcome:
        """The result, with the violation ``found`` (if any) minimized (unless not
        ``minimize``: as the walk found it); witnesses never seen are reported only after a
        full, clean run."""
        violations = minimized(self.model, found) if minimize else [found] if found else []
        seconds = time.perf_counter() - self.t0
        if not violations and not interrupted:
            violations += self.checks.unwitnessed(
                self.witnesses.pending,
                detail=f"not witnessed in {self.walks:,} random walks ({self.steps:,} steps); "
                       "unlike an exhaustive search, this does not show that no reachable state "
                       "satisfies it")
        stats = search_stats(self.steps, len(self.seen), self.depth, seconds, self.rss0, self.packed)
        if not minimize:
            extra["minimized"] = False        # the report says "unminimized"
        extra |= {"walks": self.walks, "seconds_to_violation": self.seconds_to_violation,
                  "found_steps": len(found.path) if found and found.path else None,
                  "steps_per_second": self.steps / seconds if seconds > 0 else float(self.steps)}
        return Outcome(
            model=self.model.name, explorer=explorer, stats=stats,
            coverage=action_coverage(by_name(self.taken), by_name(self.discovered), self.kinds,
                                     enabled=[k for k in self.kinds if k not in self.unseen_kinds]),
            never_enabled=tuple(k for k in self.kinds if k in self.unseen_kinds),
            checked=self.checks.checked, unchecked=self.checks.unchecked,
            not_applicable=self.checks.not_applicable,
            violations=tuple(violations), edges=edge_coverage(self.machines, self.edges),
            interrupted=interrupted, complete=False, extra=extra)


def walk(walks: Walks, model: Model, s, depth: int, pick: Callable,
         states: list, actions: list) -> Violation | None:
    """One walk from ``s`` of at most ``depth`` steps, checked by ``walks``: at each step
    ``pick(enabled)`` chooses among the enabled actions, in the order of the model's successors
    (None: the walk ends there, as at the depth bound; it is not stuck). A fused successor
    function that gives its actions alone (``successors.actions``) lets the walk apply only the
    one chosen. The walk goes into the caller's ``states`` and ``actions`` (so that a model error
    can name its path); returns the violation found, with that path, or None."""
    successors, step = successors_of(model), model.step
    enabled = getattr(successors, "actions", None)
    states[:] = [s]
    actions[:] = []
    violation = walks.begin(s)
    while violation is None and len(actions) < depth and not walks.stuck(s):
        if enabled is None:
            pairs = successors(s)
            out = [a for a, _ in pairs]
        else:
            out = enabled(s)
        walks.enabled(a[0] for a in out)
        if not out:
            violation = walks.deadlock(s)
            break
        a = pick(out)
        if a is None:
            break
        t = step(s, a) if enabled is not None else pairs[out.index(a)][1]
        states.append(t)
        actions.append(a)
        violation = walks.advance(s, a, t)
        s = t
    if violation is not None:
        violation = replace(violation, path=Path(tuple(states), tuple(actions)))
    return violation


def model_error(exc: BaseException, path: Path) -> Violation:
    return Violation("model_error", "model_error", "the model raised an exception", path,
                     "".join(traceback.format_exception(exc)).rstrip())


def explore(model: Model, options: SimulateOptions = SimulateOptions()) -> Outcome:
    if options.depth < 1 or options.runs < 0:
        raise ValueError("simulate needs depth >= 1 and runs >= 0")
    walks = Walks(model, options.properties, options.check_deadlock, options.progress,
                  options.progress_interval)
    rng = random.Random(options.seed)
    inits = list(model.init_states())
    violation, interrupted = None, False
    states, actions = [], []
    pick = lambda out: out[rng.randrange(len(out))]  # noqa: E731
    try:
        for _ in range(options.runs if inits else 0):
            s = inits[rng.randrange(len(inits))]
            violation = walk(walks, model, s, options.depth, pick, states, actions)
            if violation is not None:
                break
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # in model code: the path to the state being expanded
        violation = model_error(exc, Path(tuple(states), tuple(actions)))
    return walks.outcome("simulate", violation, interrupted, options.minimize,
                         seed=options.seed, runs=options.runs, max_depth=options.depth)


MINIMIZED_KINDS = ("always", "transition", "terminal", "deadlock")


def minimized(model: Model, violation: Violation | None) -> list[Violation]:
    """The violation (if any) with its behaviour shrunk by ``kafka_mc.traces.minimize`` (delta debugging)
    to one on which the same property still fails in the same way. A model error is kept as
    found: the exception may come from a property, which the minimizer does not evaluate."""
    if violation is None:
        return []
    path = violation.path
    if violation.kind not in MINIMIZED_KINDS or path is None or not path.actions:
        return [violation]
    try:
        states, actions = shrink(model, path.states[0], path.actions, violation.property,
                                 violation.kind)
    except KeyboardInterrupt:  # stop minimizing, keep the behaviour as found
        return [violation]
    return [replace(violation, path=Path(tuple(states), tuple(actions)),
                    detail=f"found as a {len(path)}-step behaviour, minimized to {len(actions)} "
                           "steps by delta debugging (kafka_mc.traces.minimize)")]
