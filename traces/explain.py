"""Counterexamples in the protocol's own words: what ``kafka-mc check`` prints on a violation.

Each step is one line: the action, then what it does as the model's sequence-diagram events
(``Model.describe``: ``r1 -> TM: Prepared``; for Kafka, ``producer-1 -> coordinator:
AddPartitionsToTxn(p0)``), with the step where the violation shows marked. ``sentence`` says in
one sentence which claim fails and where; ``commands`` are the replay and render command lines.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from kafka_mc.model.capabilities import offers
from kafka_mc.model.core import Event, ModelBase

MARK = "<- "  # marks the violating step


def event_text(e: Event) -> str:
    if e.kind in ("request", "response"):
        return f"{e.source} -> {e.target}: {e.label}"
    where = f"{e.source}, {e.target}" if e.target else e.source
    return f"{where}: {'FAULT ' if e.kind == 'fault' else ''}{e.label}"


def events(model, s, a, t) -> tuple[Event, ...]:
    """The step's events; a step its model describes with none is the default note."""
    return tuple(model.describe(s, a, t)) or ModelBase.describe(model, s, a, t)


def events_text(model, s, a, t) -> str:
    """The step's events as text; "" for a model without its own ``describe`` (the action says
    as much)."""
    if not offers(model, "diagrams"):
        return ""
    return "; ".join(map(event_text, events(model, s, a, t)))


def violation_text(prop: str, kind: str) -> str:
    return {"deadlock": "deadlock: no action is enabled",
            "model_error": "the model raises an exception here"}.get(kind, f"{prop} violated")


def steps(model, states: Sequence, actions: Sequence, prop: str, kind: str) -> list[str]:
    """One line per step: number, action, its events; the last step marked as the violation."""
    names = [model.format_action(a) for a in actions]
    width = max(map(len, names), default=0)
    lines = [f"    {i:>3}. {name:<{width}}  {events_text(model, s, a, t)}".rstrip()
             for i, (name, s, a, t) in enumerate(zip(names, states, actions, states[1:]), start=1)]
    mark = f"  {MARK}{violation_text(prop, kind)}"
    if lines:
        lines[-1] += mark
    else:
        lines.append(f"    the initial state{mark}")
    return lines


def lasso_steps(model, states: Sequence, actions: Sequence, prop: str, loop: int,
                loop_action, trigger: int = 0) -> list[str]:
    """A lasso, one line per step: where the claim stops holding for good (``trigger``), where
    the loop starts, and the step that closes it (or the stuttering end)."""
    names = [model.format_action(a) for a in actions]
    closing = model.format_action(loop_action) if loop_action is not None else ""
    width = max(map(len, names + [closing]), default=0)
    lines = [] if trigger or loop else ["    the initial state"]
    marks = {trigger: f"  {MARK}from here on {prop} never holds"}
    for i, (name, s, a, t) in enumerate(zip(names, states, actions, states[1:]), start=1):
        lines.append(f"    {i:>3}. {name:<{width}}  {events_text(model, s, a, t)}".rstrip())
        if i == trigger:
            lines[-1] += marks[trigger]
        if i == loop:
            lines.append(f"         -- loop: from state {loop} the behaviour repeats forever --")
    if trigger == 0:
        lines[0] += marks[0]
    if loop == 0:
        lines.append("         -- loop: from state 0 the behaviour repeats forever --")
    if loop_action is not None:
        said = events_text(model, states[-1], loop_action, states[loop])
        lines.append(f"    {len(actions) + 1:>3}. {closing:<{width}}  {said}".rstrip()
                     + f"  (back to state {loop})")
    else:
        lines.append("         it stays in this state forever: no fair action is enabled here "
                     "(stuttering)")
    return lines


def claim_of(model, prop: str, fallback: str = "") -> str:
    return next((p.claim for p in model.properties() if p.name == prop and p.claim), fallback)


def sentence(model, states: Sequence, actions: Sequence, prop: str, kind: str,
             claim: str = "") -> str:
    """The violation in one sentence: the claim, and the step that breaks it."""
    n = len(actions)
    if n:
        said = events_text(model, states[-2], actions[-1], states[-1])
        where = f"after step {n}, {model.format_action(actions[-1])}" + (said and f" ({said})")
    else:
        where = "in the initial state"
    if kind == "deadlock":
        return f"The system is stuck {where}: no action is enabled (a deadlock)."
    if kind == "model_error":
        return f"The model raises an exception computing the successors of the state {where}."
    claim = claim_of(model, prop, claim)
    if claim:
        return f"{prop} claims that {claim}; it fails {where}."
    what = {"always": "invariant", "transition": "transition property",
            "terminal": "terminal property"}.get(kind, "property")
    return f"The {what} {prop} fails {where}."


def commands(trace_file: str) -> list[str]:
    html = Path(trace_file).name.removesuffix(".json").removesuffix(".itf") + ".html"
    return [f"  replay it: kafka-mc replay {trace_file} --diff",
            f"  render it: kafka-mc render {trace_file} --format html --out {html}"
            f"   (or --format text --diff, --format mermaid)"]
