"""Shrink a counterexample while it still violates the same property, in the same way (kind).

A candidate is a subsequence of the actions. It is run from the trace's initial state through
``model.step``: an action that is not enabled where it comes is skipped, unless an enabled action
of the same name agrees with it in most argument values (actions carry messages, and dropping a
step can change a field such as an epoch in a later message: that message is then the one to
handle); a state outside ``within_bounds`` is not expanded (as in the explorers), and the run
stops at the first state showing the violation. The candidate passes when it reaches that state,
and the actions the run really took replace it: every result is a real behaviour of the model,
states recomputed, so a minimized trace replays like any other.

Two reductions alternate until neither removes a step:

* whole components: all steps touching one lifeline of the model's sequence diagram
  (``describe``), or all actions with the same parameter value (``rm=3``, ``producer=2``, also
  as a field of a record argument: a message's ``producer``);
* delta debugging (Zeller's ddmin): drop chunks of halving size, ending 1-minimal (no single step
  can be removed).

A lasso (a liveness counterexample) stays a lasso: only its stem is shrunk. A candidate stem is
run as above, then the loop's steps exactly as recorded; it passes when the loop still closes,
the claim still fails from some trigger on, and the loop is still fair (``lasso_verdict``).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

from kafka_mc.traces.replay import lasso_property, lasso_verdict, replay, violation_check
from kafka_mc.traces.trace import Trace, TraceError

Run = tuple[tuple, tuple]  # (states, actions), states[0] the initial state


class Minimized(NamedTuple):
    model: Any
    states: tuple   # the model's states along the minimized trace
    trace: Trace    # same metadata, plus ``minimized_from``: the original number of steps


def shrink(model, init: Any, actions: Sequence[tuple], prop: str, kind: str) -> Run:
    """The smallest behaviour found from ``init`` whose last state violates ``prop`` (``kind``)."""
    run = _runner(model, init, violation_check(model, prop, kind))
    best = run(tuple(actions))
    if best is None:
        raise TraceError(f"the actions do not lead to a {kind} violation of {prop}")
    while True:
        size = len(best[1])
        best = _ddmin(_drop_components(model, best, run), run)
        if len(best[1]) == size:
            return best


def minimize(trace: Trace) -> Minimized:
    """The trace shrunk (``TraceError`` if it does not replay or no longer violates)."""
    result = replay(trace)
    if not result.reproduced:
        raise TraceError(f"nothing to minimize: {result.message}")
    prop, kind = trace.meta.get("property"), trace.meta.get("kind")
    meta = dict(trace.meta) | {"minimized_from": trace.meta.get("minimized_from", len(trace))}
    if kind == "eventually":
        return _minimize_lasso(trace, result, meta)
    states, actions = shrink(result.model, result.states[0], result.actions, prop, kind)
    return Minimized(result.model, states, Trace.of(result.model, states, actions, meta))


def _minimize_lasso(trace: Trace, result, meta) -> Minimized:
    model, loop = result.model, trace.loop
    p = lasso_property(model, trace.meta.get("property"))
    cycle = result.actions[loop:]
    closing = None if trace.loop_action is None else model.itf_decode_action(trace.loop_action)
    lassos: dict[tuple, tuple] = {}

    def run(stem: tuple) -> Run | None:
        """The stem's run (states, actions) if it still leads to the same fair loop."""
        if stem not in lassos:
            lassos[stem] = None
            try:
                found = _run_lasso(model, result.states[0], stem, cycle, closing, p)
            except Exception:   # the model fails on this candidate, or the loop breaks
                found = None
            lassos[stem] = found
        found = lassos[stem]
        return None if found is None else (found[0][:found[2] + 1], found[1][:found[2]])

    best = run(tuple(result.actions[:loop]))
    if best is None:
        raise TraceError("the lasso does not replay as a fair loop")
    while True:
        size = len(best[1])
        best = _ddmin(_drop_components(model, best, run), run)
        if len(best[1]) == size:
            break
    states, actions, start, trigger = lassos[best[1]] if best[1] in lassos else \
        next(v for v in lassos.values() if v is not None and v[1][:v[2]] == best[1])
    return Minimized(model, states, Trace.of(model, states, actions, meta | {"trigger": trigger},
                                             loop=start, loop_action=closing))


def _run_lasso(model, s, stem, cycle, closing, p):
    """(states, actions, loop start, trigger) of ``stem`` (run as ``_run`` does) then ``cycle``
    exactly, when that is still a fair lasso violating ``p``; else None."""
    states, taken = [s], []
    for a in stem:
        if not model.within_bounds(s):
            return None
        a = _enabled_like(a, model.actions(s))
        if a is None:
            continue
        s = model.step(s, a)
        states.append(s)
        taken.append(a)
    start = len(states) - 1
    for a in cycle:
        if a not in list(model.actions(s)):
            return None
        s = model.step(s, a)
        states.append(s)
    actions = tuple(taken) + tuple(cycle)
    trigger, _ = lasso_verdict(model, p, tuple(states), actions, start, closing)
    return None if trigger is None else (tuple(states), actions, start, trigger)


def _runner(model, init, test) -> Callable[[tuple], Run | None]:
    cache: dict[tuple, Run | None] = {}

    def run(actions: tuple) -> Run | None:
        if actions not in cache:
            try:
                cache[actions] = _run(model, init, test, actions)
            except Exception:  # the model fails on this candidate: not the violation sought
                cache[actions] = None
        return cache[actions]

    return run


def _run(model, s, test, actions) -> Run | None:
    if test(None, None, s):
        return (s,), ()
    states, taken = [s], []
    for a in actions:
        if not model.within_bounds(s):
            return None
        a = _enabled_like(a, model.actions(s))
        if a is None:
            continue
        t = model.step(s, a)
        states.append(t)
        taken.append(a)
        if test(s, a, t):
            return tuple(states), tuple(taken)
        s = t
    return None


def _enabled_like(a: tuple, enabled) -> tuple | None:
    """``a`` if enabled; else the enabled action of the same name that agrees with it in most of
    its argument values, if in more than half (a message whose epoch changed because a step
    before it was dropped); else None (skip it)."""
    enabled = list(enabled)
    if a in enabled:
        return a
    want = _leaves(a[1:])
    best, score = None, len(want) // 2
    for b in enabled:
        if b[0] == a[0]:
            have = _leaves(b[1:])
            agree = sum(x == y for x, y in zip(want, have)) if len(have) == len(want) else 0
            if agree > score:
                best, score = b, agree
    return best


def _leaves(value) -> list:
    if isinstance(value, tuple):  # and NamedTuples
        return [x for v in value for x in _leaves(v)]
    fields = getattr(value, "__dataclass_fields__", None)
    if fields:
        return [x for f in fields for x in _leaves(getattr(value, f))]
    return [value]


def _ddmin(best: Run, run) -> Run:
    n = 2
    while len(best[1]) >= 2:
        items = best[1]
        n = min(n, len(items))
        bounds = [(len(items) * i // n, len(items) * (i + 1) // n) for i in range(n)]
        subsets = [items[lo:hi] for lo, hi in bounds]
        complements = [items[:lo] + items[hi:] for lo, hi in bounds] if n > 2 else []
        for i, cand in enumerate(subsets + complements):
            found = run(cand)
            if found is not None:
                best, n = found, 2 if i < len(subsets) else max(n - 1, 2)
                break
        else:
            if n == len(items):
                return best
            n = min(2 * n, len(items))
    return best


def _drop_components(model, best: Run, run) -> Run:
    while True:
        states, items = best
        for steps in _components(model, states, items):
            found = run(tuple(a for i, a in enumerate(items) if i not in steps))
            if found is not None:
                best = found
                break
        else:
            return best


def _components(model, states, actions) -> list[frozenset[int]]:
    """Step indices per component: per lifeline a step's events touch, per parameter value."""
    groups: dict[str, set[int]] = {}
    if len(model.lifelines()) > 1:
        for i, a in enumerate(actions):
            for e in model.describe(states[i], a, states[i + 1]):
                for line in filter(None, (e.source, e.target)):
                    groups.setdefault(f"lifeline {line}", set()).add(i)
    for i, a in enumerate(actions):
        for name, value in _named(zip(model.action_params.get(a[0], ()), a[1:])):
            groups.setdefault(f"{name}={value!r}", set()).add(i)
    return [frozenset(steps) for _, steps in sorted(groups.items())
            if len(steps) < len(actions)]


def _named(pairs):
    """(name, value) pairs, and the fields of record values (a message's ``producer``)."""
    for name, value in pairs:
        yield name, value
        fields = getattr(value, "_fields", None) or getattr(value, "__dataclass_fields__", None)
        if fields:
            yield from _named((f, getattr(value, f)) for f in fields)
