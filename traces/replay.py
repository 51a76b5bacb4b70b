"""Replay a trace: rebuild the model from the trace's metadata, re-run every action through
``model.step``, check each state equals the recorded one, then re-check the violation the trace
claims (its ``property`` and ``kind``) in the last state.

The first place where the file and the model part ways is a ``Divergence``: the step, each
differing field (``rmState.r2``, ``partitions.p0.log[3]``) with the recorded value and the model's,
or the recorded action that is not enabled there, with the actions that are. Minimize, render and
explain reuse ``execute`` and ``violation_check``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafka_mc.model import registry
from kafka_mc.model.config import ConfigError, brief, shown
from kafka_mc.traces.diff import Change, show, state_changes
from kafka_mc.traces.trace import Trace, TraceError

KINDS = ("always", "transition", "terminal", "deadlock", "model_error",  # violations that have a
         "eventually")                                                       # trace


@dataclass(frozen=True)
class Replay:
    reproduced: bool
    steps: int
    message: str
    model: Any = None
    states: tuple = ()   # the model's states: states[i] after i steps
    actions: tuple = ()  # the model's actions (decoded with the model's codec)


def _lacking(trace, state, model, init) -> list:
    """The fields state 0 lacks whose default (what decoding filled in) is not the initial
    state's: a field added since the trace was written, whose default is the old behaviour, is
    no difference."""
    encoded, decoded = dict(model.itf_encode(init)), dict(model.itf_encode(state))
    differ = {c.path for c in state_changes(decoded, encoded, trace.vars)}
    return [c for c in state_changes(trace.states[0], encoded, trace.vars) if c.path in differ]


class Divergence(TraceError):
    """The trace and the model disagree at ``step`` (0: the initial state).

    ``changes`` go from the recorded value (``before``) to the model's (``after``); when the
    recorded action is not enabled, ``enabled`` lists the actions that are.
    """

    def __init__(self, step: int, action: str, changes: tuple[Change, ...] = (),
                 enabled: tuple[str, ...] | None = None):
        self.step, self.action, self.changes, self.enabled = step, action, changes, enabled
        if enabled is not None:
            msg = f"step {step}: {action} is not enabled"
        elif step == 0:
            msg = f"state 0 is not an initial state of the model: {_first(changes)}"
        else:
            msg = f"step {step} ({action}): {_first(changes)}"
        if len(changes) > 1:
            msg += f" (and {len(changes) - 1} more differences: replay --diff lists them)"
        super().__init__(msg)

    def report(self) -> list[str]:
        """Every difference at the divergent step, one per line (``replay --diff``)."""
        if self.enabled is not None:
            return [f"divergence at step {self.step}: {self.action} is not enabled; "
                    f"enabled there: {', '.join(self.enabled) or 'nothing (a deadlock)'}"]
        head = f"divergence at step {self.step} ({self.action})" if self.step else \
            "divergence at state 0 (the nearest initial state of the model)"
        return [head + ": recorded -> model"] + [f"  {c}" for c in self.changes]


def _first(changes) -> str:
    if not changes:   # no field to name (``_decode`` names one whenever it can)
        return "it differs from every initial state"
    c = changes[0]
    if c.is_set:
        parts = ([f"the recorded value has {show(c.before)}"] if c.before else []) + \
                ([f"the model's has {show(c.after)}"] if c.after else [])
        return f"{c.path} differs: {' and '.join(parts)}"
    return f"{c.path} differs: recorded {show(c.before)}, model gives {show(c.after)}"


def claim_of(trace: Trace) -> tuple[str, str]:
    """The trace's ``property`` and ``kind``, checked to be a claim of the explicit model that a
    trace can show: what every reader of a trace (replay, render, minimize, the web explorer)
    relies on. A lasso (a ``loop``) is a liveness (``eventually``) trace, and only one is."""
    meta = trace.meta
    if meta.get("explorer") == "symbolic":
        raise TraceError("a symbolic trace (states of the symbolic model's variables): only "
                         "traces of the explicit model replay")
    prop, kind = meta.get("property"), meta.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise TraceError(f"cannot replay a trace of kind {brief(kind)} (replayable: "
                         f"{', '.join(KINDS)})")
    if not isinstance(prop, str):
        raise TraceError(f"trace metadata: property must be a name, got {brief(prop)}")
    if trace.loop is not None and kind != "eventually":
        raise TraceError(f"trace metadata: a trace of kind {kind} has no loop (only a liveness "
                         "trace, of kind eventually, is a lasso)")
    return prop, kind


def model_of(trace: Trace):
    meta = trace.meta
    config = meta.get("config")
    if not isinstance(meta.get("model"), str) or not isinstance(config, dict):
        raise TraceError("trace metadata lacks the model and its configuration")
    claim_of(trace)
    declared = config.get("model", {}).get("name") if isinstance(config.get("model"), dict) \
        else None
    if isinstance(declared, str) and declared != meta["model"]:
        raise TraceError(f"trace metadata: model is {brief(meta['model'])} but its configuration "
                         f"is of {brief(declared)}")
    try:
        cfg = registry.from_dict(config, source="trace metadata")
    except ConfigError as e:
        raise TraceError(str(e)) from None
    model = registry.bind(cfg)
    recorded, now = meta.get("settings"), dict(model.settings())
    if recorded is None:   # written before traces recorded settings: nothing to compare
        return model
    if not isinstance(recorded, dict):
        raise TraceError("trace metadata: settings must be an object")
    # A setting the trace predates (added to the model since) meant its default then.
    recorded = {k: v for k, v in model.setting_defaults().items() if k in now} | recorded
    for key, value in sorted(recorded.items()):
        if key not in now or now[key] != value:
            has = f"has {now[key]!r}" if key in now else "no longer has it"
            raise TraceError(f"the trace was written where this configuration meant {key} = "
                             f"{value!r}; this kafka-mc's model {has}")
    return model


def execute(trace: Trace) -> tuple[Any, tuple, tuple]:
    """The model, its states and actions along the trace; ``Divergence`` or ``TraceError``."""
    model = model_of(trace)
    state = _decode(model, trace)
    states = [state]
    actions = []
    for i, action in enumerate(trace.actions, start=1):
        try:
            action = model.itf_decode_action(action)
        except (ValueError, KeyError, TypeError) as e:
            raise TraceError(f"step {i}: cannot rebuild the action ({e})") from None
        actions.append(action)
        name = model.format_action(action)
        if i <= len(trace.labels) and trace.labels[i - 1] not in ("", name):
            raise TraceError(f"step {i}: the recorded action {trace.labels[i - 1]!r} does not "
                             f"match its action_value {name}")
        enabled = _model_call(i, name, lambda: list(model.actions(state)))
        if action not in enabled:
            raise Divergence(i, name, enabled=tuple(map(model.format_action, enabled)))
        state = _model_call(i, name, lambda: model.step(state, action))
        changes = state_changes(trace.states[i], dict(model.itf_encode(state)), trace.vars,
                                older=True)
        if changes:
            raise Divergence(i, name, tuple(changes))
        states.append(state)
    return model, tuple(states), tuple(actions)


def _decode(model, trace):
    """The recorded initial state, checked to be one of the model's."""
    names = tuple(model.itf_encode(next(iter(model.init_states()))))
    unknown = [v for v in trace.vars if v not in names]
    mismatch = (f"the trace's variables {', '.join(trace.vars)} are not the model's "
                f"({', '.join(names)})")
    if unknown or not trace.vars:
        raise TraceError(mismatch)
    try:  # a variable the model added since the trace was written is filled by its codec
        state = model.itf_decode(trace.states[0])
    except Exception as e:  # the model's codec refusing the recorded values, however it does
        if len(trace.vars) < len(names):
            raise TraceError(f"{mismatch}: it has no default for "
                             f"{next(n for n in names if n not in trace.vars)}") from None
        raise TraceError(f"state 0: cannot rebuild the model state ({shown(e, 80)})") \
            from None
    inits = list(model.init_states())
    encoded = dict(model.itf_encode(state)) if state in inits else None
    if encoded is None or state_changes(trace.states[0], encoded, trace.vars, older=True):
        # The differences to the nearest initial state. A record field the file lacks counts as
        # one added since it was written (``older``), filled with its default; when that alone
        # tells the state from every initial one (a record emptied, ``budgets = {}``), the
        # differences are the fields it lacks.
        nearest = min((state_changes(trace.states[0], dict(model.itf_encode(s)), trace.vars, True)
                       or _lacking(trace, state, model, s) for s in inits), key=len)
        raise Divergence(0, "", tuple(nearest))
    return state


def _model_call(i, name, call):
    try:
        return call()
    except Exception as e:  # model code failing on a recorded step: the trace does not replay
        raise TraceError(f"step {i} ({name}): the model raised {type(e).__name__}: {e}") from None


def violation_check(model, prop: Any, kind: Any) -> Callable[[Any, Any, Any], bool]:
    """``test(before, action, after)``: whether the violation of ``prop`` of this ``kind`` shows
    in ``after`` (reached from ``before`` by ``action``; both None for an initial state)."""
    if kind == "deadlock":
        return lambda s, a, t: model.within_bounds(t) and not list(model.actions(t))
    if kind == "model_error":
        succ = model.successors

        def raises(s, a, t):
            try:
                succ(t)
            except Exception:
                return True
            return False
        return raises
    if kind not in KINDS or kind == "eventually":
        raise TraceError(f"cannot replay a trace of kind {kind!r} (replayable: {', '.join(KINDS)})")
    p = next((p for p in model.properties() if p.name == prop), None)
    if p is None:
        raise TraceError(f"the model has no property {prop!r}")
    if kind == "always" and p.expectation.value == "terminal":
        kind = "terminal"   # a trace written when the property was an invariant (before terminal)
    if p.expectation.value != kind:
        raise TraceError(f"{prop} is a {p.expectation.value} property, not {kind}")
    holds = p.holds
    if kind == "always":
        return lambda s, a, t: not holds(t)
    if kind == "terminal":  # as explorers.core.checking: a state with no enabled action
        return lambda s, a, t: (model.within_bounds(t) and not list(model.actions(t))
                                and not holds(t))
    return lambda s, a, t: a is not None and not holds(s, a, t)


VERDICTS = {  # kind -> (reproduced, clean)
    "always": ("{p} is violated in the last state",
               "{p} holds in the last state: the violation no longer reproduces"),
    "transition": ("{p} is violated by the last step",
                   "{p} holds at the last step: the violation no longer reproduces"),
    "terminal": ("{p} is violated in the last state, which has no enabled action",
                 "{p} holds in the last state, or it has an enabled action: the violation no "
                 "longer reproduces"),
    "deadlock": ("the last state has no enabled action (deadlock)",
                 "the last state is not a deadlock: the violation no longer reproduces"),
    "eventually": ("{p} never holds from state {t} on, on a fair lasso (loop back to state {l})",
                   "the lasso no longer violates {p}: {why}"),
    "model_error": ("the model raises an exception on the last state's successors",
                    "the model no longer raises on the last state: the violation no longer "
                    "reproduces"),
}


def lasso_property(model, prop: Any):
    p = next((p for p in model.properties() if p.name == prop), None)
    if p is None:
        raise TraceError(f"the model has no property {prop!r}")
    if p.expectation.value != "eventually":
        raise TraceError(f"{prop} is a {p.expectation.value} property, not eventually")
    return p


def lasso_verdict(model, p, states, actions, loop: int | None, loop_action) -> tuple[int | None, str]:
    """Whether the lasso ``states`` (``actions[i]`` from ``states[i]``; the last state steps back
    to ``states[loop]`` by ``loop_action``, or stutters without one) is a fair behaviour on which
    ``p`` fails: ``(trigger, "")`` with the state where the failure starts, or ``(None, why)``.
    ``TraceError`` when the loop does not close."""
    last = len(states) - 1
    if loop is None:
        raise TraceError("a liveness trace must be a lasso: it has no loop")
    if loop_action is not None:
        if loop_action not in list(model.actions(states[-1])):
            raise Divergence(last + 1, model.format_action(loop_action),
                             enabled=tuple(map(model.format_action, model.actions(states[-1]))))
        if model.step(states[-1], loop_action) != states[loop]:
            raise TraceError(f"the loop does not close: {model.format_action(loop_action)} from "
                             f"the last state does not lead back to state {loop}")
    elif loop != last:
        raise TraceError("a stuttering loop must be at the last state")
    # Where the claim stops holding for good, and a trigger (when) at or after it.
    start = len(states)
    while start > 0 and not p.holds(states[start - 1]):
        start -= 1
    if start > last:
        return None, f"{p.name} holds in the last state"
    trigger = 0 if p.when is None and start == 0 else next(
        (i for i in range(start, len(states)) if p.when is not None and p.when(states[i])), None)
    if trigger is None:
        return None, (f"{p.name} holds in state {start - 1}" if p.when is None else
                      f"no state from {start} on is one where the claim's trigger holds")
    # Fairness, judged on the loop itself.
    cycle = states[loop:]
    taken = {model.fair_family(a) for a in actions[loop:] + ((loop_action,) if loop_action else ())}
    for family, fair in model.fairness().items():
        on = [any(model.fair_family(a) == family for a in model.actions(s)) for s in cycle]
        if family in taken:
            continue
        if all(on) or (fair.kind.value == "strong" and any(on)):
            return None, (f"the loop is unfair to {family} ({fair.kind.value}): enabled "
                          f"{'throughout' if all(on) else 'on it'} and never taken")
    return trigger, ""


def replay(trace: Trace) -> Replay:
    model, states, actions = execute(trace)   # checks the metadata first (``model_of``)
    prop, kind = claim_of(trace)
    if kind == "eventually":
        p = lasso_property(model, prop)
        loop_action = None
        if trace.loop_action is not None:
            try:
                loop_action = model.itf_decode_action(trace.loop_action)
            except (ValueError, KeyError, TypeError) as e:
                raise TraceError(f"the loop action: cannot rebuild it ({e})") from None
        trigger, why = lasso_verdict(model, p, states, actions, trace.loop, loop_action)
        message = VERDICTS[kind][trigger is None].format(p=prop, t=trigger, l=trace.loop, why=why)
        return Replay(trigger is not None, len(actions), message, model, states, actions)
    test = violation_check(model, prop, kind)
    last = len(actions)
    bad = test(states[-2] if last else None, actions[-1] if last else None, states[-1])
    return Replay(bad, last, VERDICTS[kind][not bad].format(p=prop), model, states, actions)
