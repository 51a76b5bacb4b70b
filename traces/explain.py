"""Counterexamples in the protocol's own words: what ``kafka-mc check`` prints on a violation.

Each step is one short line: its number, who acts (the lifeline of the step's first event) and
what it does, in the words of the model's sequence diagram (``Model.describe``), with the step
where the violation shows marked::

  17. leader-0     Produce(pid=0, epoch=0, seq=0) from p0 -> batch appended at offset 1; NONE to p0
  18. coordinator  WriteTxnMarkersResponse NONE from leader-0

A step that takes a message (a ``receive`` event) starts with it (``from`` its sender, unless
that is the one coordinator), then ``->`` and what follows; what the actor does is said without
repeating its name, and what it sends is ``LABEL to TARGET`` (one label sent to several targets
once, ``... to leader-0, leader-1``); events on another lifeline keep their ``source ->
target:`` form. A model without diagrams gets its action (``IncX``). A line longer than the
width (``kafka_mc.traces.layout.columns``) goes on under its text, never cut. With
``verbose``, each step is followed by its action in full and the fields it changed
(``kafka_mc.traces.diff``). ``sentence`` says in one sentence which claim fails and where;
``commands`` are the replay and render command lines.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from kafka_mc.model.capabilities import offers
from kafka_mc.model.core import Event, ModelBase
from kafka_mc.traces import layout

MARK = "<- "  # marks the violating step


def event_text(e: Event) -> str:
    if e.kind in ("request", "response"):
        return f"{e.source} -> {e.target}: {e.label}"
    where = f"{e.source}, {e.target}" if e.target else e.source
    return f"{where}: {'FAULT ' if e.kind == 'fault' else ''}{e.label}"


def events(model, s, a, t) -> tuple[Event, ...]:
    """The step's events; a step its model describes with none is the default note."""
    return tuple(model.describe(s, a, t)) or ModelBase.describe(model, s, a, t)


def drawn(evs: Sequence[Event]) -> tuple[Event, ...]:
    """The events a diagram draws: a receipt only when the step does nothing else (as a note on
    the receiver), since the message's arrow was drawn when it was sent."""
    rest = tuple(e for e in evs if e.kind != "receive")
    return rest or tuple(Event("note", e.source, label=e.label) for e in evs)


def events_text(model, s, a, t) -> str:
    """The step's drawn events as text; "" for a model without its own ``describe`` (the
    action says as much)."""
    if not offers(model, "diagrams"):
        return ""
    return "; ".join(map(event_text, drawn(events(model, s, a, t))))


def step_line(model, s, a, t) -> tuple[str, str]:
    """(who acts, what the step does), in the model's diagram's words (the module's docstring
    says how); ("", the action) for a model without diagrams."""
    if not offers(model, "diagrams"):
        return "", model.format_action(a)
    evs = events(model, s, a, t)
    actor = evs[0].source
    head, parts, sent = "", [], {}
    for e in evs:
        if e.kind == "receive" and e.source == actor and not head:
            head = e.label
        elif e.kind in ("request", "response") and e.source == actor:
            if e.label not in sent:
                sent[e.label] = []
                parts.append(e.label)
            sent[e.label].append(e.target)
        elif e.source == actor and not e.target:
            parts.append(("FAULT " if e.kind == "fault" else "") + e.label)
        else:
            parts.append(event_text(e))
    parts = [f"{p} to {', '.join(dict.fromkeys(sent[p]))}" if p in sent else p for p in parts]
    body = "; ".join(parts)
    return actor, (f"{head} -> {body}" if head and body else head or body)


def violation_text(prop: str, kind: str) -> str:
    return {"deadlock": "deadlock: no action is enabled",
            "model_error": "the model raises an exception here"}.get(kind, f"{prop} violated")


INDENT = "  "   # before a step's number (under "shortest counterexample: N steps")


def _lines(model, states: Sequence, actions: Sequence, width: int | None, verbose: bool,
           marks: dict[int, str], closing=None, loop: int | None = None) -> list[list[str]]:
    """Each step's lines: number, actor, what it does; ``marks``: step -> text after its line;
    ``closing``: a lasso's action back to state ``loop``, numbered after the last step."""
    width = width or layout.columns()
    said = [step_line(model, s, a, t) for s, a, t in zip(states, actions, states[1:])]
    if closing is not None:
        said.append(step_line(model, states[-1], closing, states[loop]))
    who = max((len(actor) for actor, _ in said), default=0)
    digits = len(str(len(said)))
    out = []
    encoded = _encoded(model, states) if verbose else None
    for i, (actor, what) in enumerate(said, start=1):
        head = f"{INDENT}{i:>{digits}}. " + (f"{actor:<{who}}  " if who else "")
        text = what + marks.get(i, "")
        lines = layout.wrap(text, width, len(head), head) if text else [head.rstrip()]
        if verbose:
            last = i > len(actions)
            lines += _detail(model, closing if last else actions[i - 1], encoded, i,
                             loop if last else None, width, len(INDENT) + digits + 2)
        out.append(lines)
    return out


def _encoded(model, states):
    from kafka_mc.traces.trace import Trace
    return Trace.of(model, states, (), {})


def _detail(model, a, trace, i: int, back: int | None, width: int, indent: int) -> list[str]:
    """``--verbose``: the step's action in full and what it changed (a lasso's closing step:
    from the last state to state ``back``)."""
    from kafka_mc.traces.diff import state_changes
    out = layout.wrap(model.format_action(a), width, indent + 3, " " * indent + "action: ")
    before = trace.states[-1] if back is not None else trace.states[i - 1]
    after = trace.states[back] if back is not None else trace.states[i]
    changes = state_changes(before, after, trace.vars)
    for c in changes:
        out += layout.change_lines(c, width, indent)
    return out if changes else out + [" " * indent + "(no change)"]


def steps(model, states: Sequence, actions: Sequence, prop: str, kind: str,
          width: int | None = None, verbose: bool = False) -> list[str]:
    """One line per step (the module's docstring), the last marked as the violation; with
    ``verbose``, each step's action in full and what it changed below it."""
    mark = f"  {MARK}{violation_text(prop, kind)}"
    if not actions:
        return [f"{INDENT}the initial state{mark}"]
    return [ln for step in _lines(model, states, actions, width, verbose, {len(actions): mark})
            for ln in step]


LOOP = INDENT + "  -- loop: from state {} the behaviour repeats forever --"


def lasso_steps(model, states: Sequence, actions: Sequence, prop: str, loop: int,
                loop_action, trigger: int = 0, width: int | None = None,
                verbose: bool = False) -> list[str]:
    """A lasso, one line per step: where the claim stops holding for good (``trigger``), where
    the loop starts, and the step that closes it (or the stuttering end)."""
    never = f"  {MARK}from here on {prop} never holds"
    marks = {trigger: never} if trigger else {}
    if loop_action is not None:
        marks[len(actions) + 1] = f"  (back to state {loop})"
    per_step = _lines(model, states, actions, width, verbose, marks, loop_action, loop)
    lines = [] if trigger or loop else [f"{INDENT}the initial state"]
    for i, step in enumerate(per_step[:len(actions)], start=1):
        lines += step
        if i == loop:
            lines.append(LOOP.format(loop))
    if trigger == 0:
        lines[0] += never
    if loop == 0:
        lines.append(LOOP.format(0))
    if loop_action is not None:
        lines += per_step[-1]
    else:
        lines.append(f"{INDENT}  it stays in this state forever: no fair action is enabled here "
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


def commands(trace_file: str, verbose: bool = False, width: int | None = None) -> list[str]:
    """What to do with a trace written: replay it, render it, and (unless shown already) see
    each step's action and changes; each command whole or broken as a shell takes it (``\\``)."""
    width = width or layout.columns()
    html = Path(trace_file).name.removesuffix(".json").removesuffix(".itf") + ".html"
    return (layout.command(f"kafka-mc replay {trace_file} --diff", width, 15, "  replay it: ")
            + layout.command(f"kafka-mc render {trace_file} --format html --out {html}", width,
                             15, "  render it: ")
            + ["             (or --format text --diff, --format mermaid)"]
            + ([] if verbose else ["  each step's action in full and what it changed: add "
                                   "--verbose"]))
