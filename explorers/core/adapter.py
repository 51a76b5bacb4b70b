"""Rebuild a behaviour from the fingerprints along a path, as TLC does.

Explorers keep only fingerprints and parent links; a counterexample is rebuilt by replaying from
the initial state and, at each step, taking the first successor (in the model's deterministic
order) whose fingerprint is the next one on the path.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from kafka_mc.model.core import Model
from kafka_mc.model.fingerprints import check_view, fingerprint
from kafka_mc.explorers.core.result import Path


def key_function(model: Model) -> Callable:
    """state -> fingerprint, as the explorers compute it."""
    if model.packed:
        return lambda s: s
    remembered = model.view_fingerprint   # (model.canonical.remembered)
    if remembered is not None:
        return remembered
    view = model.view
    if getattr(view, "is_identity", False):
        return fingerprint
    return lambda s: fingerprint(view(s))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector. States are immutable acyclic values, so it frees
    nothing during a search, yet it rescans every live state each time it runs: unpickling a
    frontier chunk with it on costs 10x as much (27 against 2.4 us a Kafka state). Drop the big
    values before leaving: the first collection after the pause scans every object allocated
    during it that is still alive."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def successors_of(model: Model) -> Callable:
    """The model's successor function (``ModelBase.successors``: its fused fast path, or
    ``actions`` / ``step``)."""
    return model.successors


def rebuild(model: Model, fps: Sequence[int], key: Callable | None = None,
            actions: Sequence | None = None) -> Path:
    """``key``: the fingerprint function the search used (a reduced search's differs).
    ``actions``: the action of each step, when the search kept them (of several successors with
    the next fingerprint, the one that action leads to)."""
    key, succ = key or key_function(model), successors_of(model)
    state = next(s for s in model.init_states() if key(s) == fps[0])
    states, taken = [state], []
    for i, fp in enumerate(fps[1:]):
        action, state = next((a, t) for a, t in succ(state)
                             if key(t) == fp and (actions is None or a == actions[i]))
        states.append(state)
        taken.append(action)
    return Path(tuple(states), tuple(taken))


def follow(model: Model, positions: Sequence[int]) -> Path:
    """The behaviour that starts in initial state ``positions[0]`` and takes at step ``i`` the
    successor ``positions[i]`` (indices in the model's deterministic order). A BFS-tree path
    given so is the one ``rebuild`` finds from its fingerprints (a state's first discovery from
    its parent is its first successor with that fingerprint)."""
    succ = successors_of(model)
    state = list(model.init_states())[positions[0]]
    states, actions = [state], []
    for i in positions[1:]:
        action, state = succ(state)[i]
        states.append(state)
        actions.append(action)
    return Path(tuple(states), tuple(actions))


def check_fingerprint_contract(model: Model) -> None:
    """Raise ``ViewError`` if a view of the first states would not fingerprint stably (checked
    where it is cheap: the initial states and their first successors)."""
    if model.packed:
        return
    succ = successors_of(model)
    for s in model.init_states():
        check_view(model.view(s), "view of an initial state")
        for a, t in succ(s)[:64]:
            check_view(model.view(t), f"view after {a[0]}")
