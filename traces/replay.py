"""Replay a trace: rebuild the model from the trace's metadata, re-run every action, check each
state equals the recorded one, then re-check the property the trace claims is violated."""
from __future__ import annotations

from dataclasses import dataclass

from model import registry
from model.config import ConfigError
from traces.trace import Trace, TraceError


@dataclass(frozen=True)
class Replay:
    reproduced: bool
    steps: int
    message: str


def model_of(trace: Trace):
    meta = trace.meta
    config = meta.get("config")
    if not isinstance(meta.get("model"), str) or not isinstance(config, dict):
        raise TraceError("trace metadata lacks the model and its configuration")
    try:
        cfg = registry.from_dict(config, source="trace metadata")
    except ConfigError as e:
        raise TraceError(str(e)) from None
    return registry.bind(cfg)


def replay(trace: Trace) -> Replay:
    model = model_of(trace)
    state = _decode(model, trace, 0)
    if state not in list(model.init_states()):
        raise TraceError("state 0 is not an initial state of the model")
    states = [state]
    for i, action in enumerate(trace.actions, start=1):
        if action not in list(model.actions(state)):
            raise TraceError(f"step {i}: {model.format_action(action)} is not enabled")
        state = model.step(state, action)
        got, want = dict(model.itf_encode(state)), trace.states[i]
        for var in trace.vars:
            if got.get(var) != want.get(var):
                raise TraceError(f"step {i} ({model.format_action(action)}): {var} differs: "
                                 f"recorded {want.get(var)!r}, model gives {got.get(var)!r}")
        states.append(state)
    prop, kind = trace.meta.get("property"), trace.meta.get("kind")
    reproduced, what = _violated(model, prop, kind, states, trace.actions)
    return Replay(reproduced, len(trace.actions), what)


def _decode(model, trace, i):
    try:
        return model.itf_decode(trace.states[i])
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        raise TraceError(f"state {i}: cannot rebuild the model state ({e})") from None


def _violated(model, prop, kind, states, actions):
    last = states[-1]
    if kind == "deadlock":
        dead = not list(model.actions(last))
        return dead, "the last state has no enabled action" if dead else "the last state is not a deadlock"
    byname = {p.name: p for p in model.properties()}
    if prop not in byname:
        raise TraceError(f"the model has no property {prop!r}")
    p = byname[prop]
    if kind == "always":
        bad = not p.holds(last)
        return bad, f"{prop} is {'violated' if bad else 'satisfied'} in the last state"
    if kind == "transition":
        if not actions:
            raise TraceError("a transition violation needs at least one step")
        bad = not p.holds(states[-2], actions[-1], last)
        return bad, f"{prop} is {'violated' if bad else 'satisfied'} by the last step"
    raise TraceError(f"cannot replay a trace of kind {kind!r}")
