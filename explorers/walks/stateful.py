"""Hypothesis stateful exploration: any Model as a ``RuleBasedStateMachine``.

The machine has one initialize rule, which picks an initial state, and one rule, which draws
the index of an enabled action in ``model.actions(s)`` order and takes it with ``model.step``
(the reference semantics, not the fast path). Both draw indices, so hypothesis's shrinking moves
towards the first initial state, towards earlier actions and towards fewer steps. Properties are
checked as ``kafka_mc.explorers.core.checking`` says: after every step the ALWAYS and TRANSITION properties; in
a state with no enabled action, a deadlock when deadlock checking is on, else the TERMINAL
properties. A state outside ``within_bounds``, or one with no enabled action, ends the behaviour
(the example's remaining steps do nothing). The per-step checks and counts are
``kafka_mc.explorers.walks.simulate.Walks``, shared with the random simulation.

A failure raises ``ViolationFound`` (an ``AssertionError`` carrying the ``Violation`` and its
path). Hypothesis then shrinks the example and replays the smallest one it found; ``explore``
polishes that with delta debugging (``kafka_mc.traces.minimize``, as the simulation does), and the
``Outcome`` holds the result, written as an ITF trace and replayed like the BFS's. Both are
searches: the counterexample is small, often minimal, but not guaranteed shortest (BFS's is).
Removing an early step shifts what later indices mean, which is where hypothesis alone stops
short. SOMETIMES witnesses are collected across all examples; one never seen is reported with the
same caveat as in the simulation: random behaviours that miss a state do not show it is
unreachable.

``explore`` is deterministic for a given seed: hypothesis runs with that seed, no example
database, no deadline and no health checks, and without the literals it would otherwise collect
from every loaded project module (``_no_source_constants``). ``as_state_machine(model)`` exposes
the machine to users' own pytest suites; the ``kafka-mc-ci`` settings profile makes those runs
derandomized.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from hypothesis import HealthCheck, Phase, Verbosity, seed, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from kafka_mc.model import registry
from kafka_mc.model.config import Config
from kafka_mc.model.core import Model
from kafka_mc.explorers.core import interrupts
from kafka_mc.explorers.core.progress import Progress
from kafka_mc.explorers.core.result import Outcome, Path, Violation
from kafka_mc.explorers.walks.simulate import Walks, model_error

DEFAULT_EXAMPLES = 1_000
DEFAULT_STEPS = 50
CI_PROFILE = "kafka-mc-ci"

# For users' suites in CI (settings.load_profile("kafka-mc-ci")): derandomized, no example
# database, no deadline, no health checks; one bug, shrunk, and no explain phase (which re-runs
# many variants of the failing example and takes seconds on a model).
settings.register_profile(CI_PROFILE, derandomize=True, database=None, deadline=None,
                          suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                          phases=(Phase.explicit, Phase.generate, Phase.shrink), max_examples=200,
                          stateful_step_count=DEFAULT_STEPS + 1)  # + the initialize step


@dataclass(frozen=True)
class StatefulOptions:
    properties: Sequence[str] | None = None      # names to check; None: all the model has
    max_examples: int = DEFAULT_EXAMPLES          # behaviours generated (shrinking not counted)
    steps: int = DEFAULT_STEPS                    # actions per behaviour at most
    seed: int = 0
    check_deadlock: bool | None = None            # None: the model's default
    progress: Callable[[Progress], None] | None = None
    progress_interval: float = 2.0                # seconds between progress reports


class ViolationFound(AssertionError):
    """A property failed on the current behaviour; ``violation.path`` is that behaviour."""

    def __init__(self, violation: Violation, model: Model):
        self.violation = violation
        steps = violation.path.actions if violation.path else ()
        claim = f" ({violation.claim})" if violation.claim else ""
        lines = [f"{violation.property} [{violation.kind}] fails after {len(steps)} steps{claim}:"]
        lines += [f"  {i}. {model.format_action(a)}" for i, a in enumerate(steps, start=1)]
        super().__init__("\n".join(lines + ([violation.detail] if violation.detail else [])))


def as_state_machine(model: Model | Config, *, properties: Sequence[str] | None = None,
                     check_deadlock: bool | None = None) -> type[RuleBasedStateMachine]:
    """The model (or the model a ``Config`` binds) as a hypothesis state machine, for pytest::

        TestTwoPhase = as_state_machine(registry.load("configs/twophase.toml")).TestCase

    Each example is a random behaviour; an ALWAYS or TRANSITION property failing, a deadlock (if
    checked) or else a TERMINAL property failing where no action is enabled, or an exception in
    model code fails the test with the shrunk list of actions.
    SOMETIMES witnesses need a whole run, so only ``explore`` reports them. Settings come from the
    active hypothesis profile (``kafka-mc-ci`` is derandomized) or ``TestTwoPhase.settings``.
    """
    if isinstance(model, Config):
        model = registry.bind(model)
    inits = list(model.init_states())
    if not inits:
        raise ValueError(f"{model.name} has no initial state")
    return _machine(Walks(model, properties, check_deadlock), inits)


def _machine(walks: Walks, inits: list) -> type[RuleBasedStateMachine]:
    model = walks.model
    actions_of, step = model.actions, model.step

    class ModelMachine(RuleBasedStateMachine):
        @initialize(index=st.integers(0, len(inits) - 1))
        def start(self, index):
            interrupts.check()   # one hypothesis swallowed (its gc callback) is raised again
            self.states, self.actions, self.ended = [inits[index]], [], False
            with self._model_code():
                found = walks.begin(inits[index])
            self._fail(found)

        @rule(data=st.data())
        def act(self, data):
            interrupts.check()
            if self.ended:
                return
            s = self.states[-1]
            with self._model_code():
                enabled = None if walks.stuck(s) else list(actions_of(s))
            if not enabled:
                self.ended = True
                with self._model_code():
                    found = walks.deadlock(s) if enabled is not None else None
                self._fail(found)
                return
            walks.enabled(a[0] for a in enabled)
            a = enabled[data.draw(st.integers(0, len(enabled) - 1))]
            with self._model_code():
                t = step(s, a)
                self.states.append(t)
                self.actions.append(a)
                found = walks.advance(s, a, t)
            self._fail(found)

        def _path(self) -> Path:
            return Path(tuple(self.states), tuple(self.actions))

        def _fail(self, found: Violation | None) -> None:
            if found is not None:
                raise ViolationFound(replace(found, path=self._path()), model)

        @contextmanager
        def _model_code(self):
            try:
                yield
            except Exception as exc:
                raise ViolationFound(model_error(exc, self._path()), model) from exc

    ModelMachine.__name__ = ModelMachine.__qualname__ = f"{_camel(model.name)}Machine"
    return ModelMachine


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("_", "-").split("-"))


def explore_settings(max_examples: int, steps: int) -> settings:
    """What ``explore`` runs hypothesis with; the seed is applied to the machine."""
    return settings(max_examples=max_examples, stateful_step_count=steps + 1,  # + initialize
                    database=None, deadline=None, derandomize=False,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    phases=(Phase.explicit, Phase.generate, Phase.shrink),
                    print_blob=False, verbosity=Verbosity.quiet)


def explore(model: Model, options: StatefulOptions = StatefulOptions()) -> Outcome:
    if options.max_examples < 1 or options.steps < 1:
        raise ValueError("stateful needs max_examples >= 1 and steps >= 1")
    walks = Walks(model, options.properties, options.check_deadlock, options.progress,
                  options.progress_interval)
    inits = list(model.init_states())
    found, interrupted = None, False
    try:
        if inits:  # else there is no behaviour to explore
            with _no_source_constants(), _interrupts_not_printed():
                run_state_machine_as_test(seed(options.seed)(_machine(walks, inits)),
                                          settings=explore_settings(options.max_examples,
                                                                    options.steps))
    except ViolationFound as failure:  # hypothesis's shrunk example (then delta-debugged)
        found = failure.violation
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # hypothesis itself failing, e.g. on a non-deterministic model
        found = model_error(exc, None)
    interrupted = interrupted or interrupts.asked()   # asked, and swallowed after the last step
    return walks.outcome("stateful", found, interrupted, seed=options.seed,
                         max_examples=options.max_examples, steps=options.steps)


@contextmanager
def _interrupts_not_printed():
    """An interrupt hypothesis's gc callback swallows is raised again at the next step
    (``interrupts.check``); Python would also print it, as an exception ignored in a gc callback
    with its traceback: not for a KeyboardInterrupt, which is the user's, not an error."""
    previous = sys.unraisablehook

    def hook(unraisable):
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            previous(unraisable)
    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


@contextmanager
def _no_source_constants():
    """Hypothesis (since 6.131) draws 5 % of its integers from the literals of the project's
    loaded modules, so its choices shift with what happens to be imported and with any literal
    edited anywhere. This switches that off for the duration of a run, through hypothesis
    internals (``HypothesisProvider._local_constants`` and the ``CONSTANTS_CACHE`` of the
    constants allowed per draw); if those change, it does nothing."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants

    cls, cache = providers.HypothesisProvider, getattr(providers, "CONSTANTS_CACHE", None)
    original = cls.__dict__.get("_local_constants")
    if original is None or not hasattr(cache, "cache"):
        yield
        return
    cls._local_constants = Constants()
    cache.cache.clear()
    try:
        yield
    finally:
        cls._local_constants = original
        cache.cache.clear()
