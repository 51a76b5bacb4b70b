"""Rebuild a behaviour from the fingerprints along a path, as TLC does.

Explorers keep only fingerprints and parent links; a counterexample is rebuilt by replaying from
the initial state and, at each step, taking the first successor (in the model's deterministic
order) whose fingerprint is the next one on the path.
"""
from __future__ import annotations

from typing import Callable, Sequence

from model.core import Model, fingerprint
from explorers.result import Path


def key_function(model: Model) -> Callable:
    """state -> fingerprint, as the explorers compute it."""
    if getattr(model, "packed", False):
        return lambda s: s
    view = model.view
    if getattr(view, "is_identity", False):
        return fingerprint
    return lambda s: fingerprint(view(s))


def successors_of(model: Model) -> Callable:
    succ = getattr(model, "successors", None)
    if succ is not None:
        return succ
    return lambda s: [(a, model.step(s, a)) for a in model.actions(s)]


def rebuild(model: Model, fps: Sequence[int]) -> Path:
    key, succ = key_function(model), successors_of(model)
    state = next(s for s in model.init_states() if key(s) == fps[0])
    states, actions = [state], []
    for fp in fps[1:]:
        action, state = next((a, t) for a, t in succ(state) if key(t) == fp)
        states.append(state)
        actions.append(action)
    return Path(tuple(states), tuple(actions))
