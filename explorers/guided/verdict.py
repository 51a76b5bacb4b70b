"""A property judged on the behaviours of the model a real run conforms to (issue 58 item 4).

A real run seen through the proxy and the client's history does not show everything: the
coordinator's state when a marker lands, which of two appends completed first. Trace validation
(``kafka_mc.explorers.conformance``) finds the model's behaviours that explain the run; a
property is judged on those, and so on what the run *implies* about the unseen state, not on
what a client happened to see. Two searches of the validator, each with a ``Fold`` carrying
"has the property failed so far" (a flag: it doubles the nodes at most):

* a conforming behaviour that violates the property (the first step where it fails is the
  evidence: the step, what it did, the run's event it was, the state as the real system would
  show it there: ``observed_state``);
* a conforming behaviour that does not (nodes where it failed are not expanded).

Each search that finds nothing has exhausted the behaviours that explain the run (the
validator widens its window until nothing is cut), so:

| violating | holding | answer |
|---|---|---|
| found | none | ``all``: every behaviour the run conforms to violates it |
| found | found | ``some``: the run conforms to behaviours that violate it and to others that do not (both given: it cannot tell them apart) |
| found | node limit | ``some`` (whether every one does is undecided) |
| none | found | ``none``: no behaviour the run conforms to violates it |
| none | none | ``no-behaviour``: the run conforms to no behaviour of the model at all (a divergence: ``kafka-mc real conform --run`` says where) |
| node limit | - | ``undecided`` |

Only ``always`` and ``transition`` properties are judged this way (a violation is a step of a
finite behaviour); a lasso is judged by what the real cluster did once the trace's stem was run
(``kafka_mc.realkafka.reproduce``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from kafka_mc.explorers.conformance import MAX_NODES, Conformance, Fold, validate
from kafka_mc.model.core import Expectation, Property
from kafka_mc.traces.explain import events_text

JUDGED = (Expectation.ALWAYS, Expectation.TRANSITION)
ANSWERS = ("all", "some", "none", "no-behaviour", "undecided")


def folds(prop: Property) -> tuple[Fold, Fold]:
    """(violating, holding): the folds of "``prop`` has failed so far" accepting a behaviour
    that violates it, and one that does not."""
    holds = prop.holds
    if prop.expectation is Expectation.ALWAYS:
        def start(s):
            return not holds(s)

        def step(v, s, a, t):
            return v or not holds(t)
    elif prop.expectation is Expectation.TRANSITION:
        def start(s):
            return False

        def step(v, s, a, t):
            return v or not holds(s, a, t)
    else:
        raise ValueError(f"{prop.name} is a {prop.expectation.value} property: only always and "
                         "transition properties are judged on a run's behaviours")
    return (Fold(start, step, accept=bool),
            Fold(start, step, accept=lambda v: not v, dead=bool))


def first_violation(prop: Property, states: Sequence, actions: Sequence) -> int:
    """The step (1-based) at which ``prop`` first fails along the behaviour; 0: the initial
    state; -1: nowhere."""
    if prop.expectation is Expectation.ALWAYS:
        for i, s in enumerate(states):
            if not prop.holds(s):
                return i
        return -1
    for i, (s, a, t) in enumerate(zip(states, actions, states[1:]), start=1):
        if not prop.holds(s, a, t):
            return i
    return -1


BULKY = ("fields", "value", "logs", "transactions", "producers", "offsets")   # not repeated


@dataclass(frozen=True)
class Judgement:
    """``prop`` judged on the behaviours the run conforms to (the table in the module's
    docstring). ``violating`` / ``holding``: the two searches; ``violation``: where the
    violating behaviour first fails (its step, action, events, the run's event, the state)."""

    property: str
    kind: str
    answer: str
    reason: str
    violating: Conformance | None = None
    holding: Conformance | None = None
    violation: Mapping[str, Any] | None = None
    seconds: float = 0.0
    limit: int = MAX_NODES
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        return self.answer in ("all", "some")

    @property
    def nodes(self) -> int:
        return sum(c.nodes for c in (self.violating, self.holding) if c is not None)

    def to_dict(self) -> dict:
        out = {"property": self.property, "kind": self.kind, "answer": self.answer,
               "reason": self.reason, "nodes": self.nodes, "seconds": round(self.seconds, 3),
               "searches": {name: c.to_dict() for name, c in (("violating", self.violating),
                                                             ("holding", self.holding))
                            if c is not None}}
        if self.violation is not None:
            out["violation"] = dict(self.violation)
        return out

    def lines(self) -> list[str]:
        """The judgement for a person: the answer, and where the violating behaviour fails."""
        out = [f"judged on the model's behaviours the run conforms to: {self.reason}"]
        v = self.violation
        if v is not None:
            out.append(f"  the violation: step {v['step']} of {v['steps']} {v['action']}"
                       + (f": {v['events']}" if v.get("events") else ""))
            e = v.get("event")
            if e:
                brief = ", ".join(f"{k} {e[k]}" for k in ("seq", "api", "direction", "endpoint",
                                                           "process", "f", "type") if e.get(k))
                out.append(f"  the run's event {v['event_index']}: {brief}")
            else:
                out.append("  a step no event records (silent), placed by the validator")
            for name, value in (v.get("state") or {}).items():
                out.append(f"  then {name}: {value}")
        return out


def _violation(model, prop: Property, c: Conformance, events: Sequence[Mapping]) -> dict:
    """Where the violating behaviour ``c`` first fails ``prop``: the step, the action and its
    events, the run's event it was (or none: silent) and the state as the real system would
    show it there (after the step for an invariant, before it for a transition property)."""
    i = first_violation(prop, c.states, c.actions)
    out: dict[str, Any] = {"step": i, "steps": len(c.actions)}
    if i <= 0:
        out.update(name="(the initial state)", action="(the initial state)",
                   state=dict(model.observed_state(c.states[0])))
        return out
    s, a, t = c.states[i - 1], c.actions[i - 1], c.states[i]
    index = c.steps[i - 1]
    out.update(name=a[0], action=model.format_action(a), events=events_text(model, s, a, t),
               event_index=index,
               event={k: v for k, v in events[index].items() if k not in BULKY}
               if index >= 0 else None,
               state=dict(model.observed_state(t if prop.expectation is Expectation.ALWAYS
                                               else s)))
    return out


def judge(model, events: Sequence[Mapping], prop: Property,
          max_nodes: int = MAX_NODES) -> Judgement:
    """``prop`` judged on the behaviours of ``model`` that the run ``events`` conforms to."""
    started = time.perf_counter()
    violating_fold, holding_fold = folds(prop)
    violating = validate(model, events, max_nodes=max_nodes, fold=violating_fold)
    holding = validate(model, events, max_nodes=max_nodes, fold=holding_fold)
    name, kind = prop.name, prop.expectation.value
    common = dict(violating=violating, holding=holding, limit=max_nodes)
    if violating.conforms:
        violation = _violation(model, prop, violating, events)
        where = f"step {violation['step']}, {violation['name']}"
        if holding.verdict == "diverges":
            answer, reason = "all", (f"every behaviour the run conforms to violates {name} "
                                     f"(one of {violation['steps']} steps fails at {where})")
        elif holding.conforms:
            answer, reason = "some", (
                f"some behaviours the run conforms to violate {name} (one of "
                f"{violation['steps']} steps fails at {where}), others do not (one of "
                f"{len(holding.actions)} steps): the run does not tell them apart")
        else:
            answer, reason = "some", (
                f"a behaviour the run conforms to violates {name} (one of "
                f"{violation['steps']} steps fails at {where}); whether every one does is "
                f"undecided (node limit {max_nodes} reached)")
        return Judgement(name, kind, answer, reason, violation=violation,
                         seconds=time.perf_counter() - started, **common)
    if violating.verdict == "unknown":
        answer, reason = "undecided", (f"no behaviour the run conforms to was found violating "
                                       f"{name} within the node limit ({max_nodes}): undecided")
    elif holding.conforms:
        answer, reason = "none", (f"no behaviour the run conforms to violates {name} (one of "
                                  f"{len(holding.actions)} steps explains the run)")
    elif holding.verdict == "unknown":
        answer, reason = "undecided", (f"no behaviour the run conforms to violates {name}, and "
                                       f"none that holds it was found within the node limit "
                                       f"({max_nodes}): undecided whether any explains the run")
    else:
        answer, reason = "no-behaviour", ("the run conforms to no behaviour of the model (it "
                                          "diverges: kafka-mc real conform --run says where)")
    return Judgement(name, kind, answer, reason, seconds=time.perf_counter() - started,
                     **common)


def judged_property(model, name: str) -> Property | None:
    """The model's property ``name`` when it is judged on behaviours (always, transition)."""
    p = next((p for p in model.properties() if p.name == name), None)
    return p if p is not None and p.expectation in JUDGED else None
