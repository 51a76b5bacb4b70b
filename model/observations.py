"""Observations: what a recorded run of the real system tells about a model's behaviour (issue 43).

A run of the system a model stands for (real Kafka behind a recording proxy, with its clients'
history) is a list of *events*: JSON objects, each from one *stream* (a connection, a client
process) whose events are in the order they happened; streams interleave in any order, since a
log's order across connections is not the order the system handled them in. A model that can be
held against such runs declares its ``Observations`` for a run: for each event, the
``Observation`` it makes (or None: the event says nothing the model has, skip it), which stream it
belongs to, and which of the model's actions happen where nothing records them (``silent``: a log
append completing inside a broker, a timer, a client putting a request in its queue). Every other
action is *observable*: a behaviour of the model conforms to the run when every observable step
it takes is the next event of some stream (``Observation.match`` accepts it), silent steps in
between, and every stream is consumed (``kafka_mc.explorers.conformance`` searches for one).

An ``Observation`` is a step (``match(s, a, t)``: None when step ``s --a--> t`` is what the
event recorded, else the reason it is not, naming the field that differs as
``"producer_epoch: recorded 0, model 1"``), a constraint on the state at that point of the run
(``holds(s)``: None when ``s`` agrees, else why not; consumed without a step, as a client's
"commitTransaction returned" is), or both (either may account for the event: a request the
proxy held may or may not have been overtaken, which the model takes as a delay or not). A state
observation ``at_end`` is of the run's *end state* (what the system showed once the run was over:
Kafka's DescribeTransactions, a partition's log): it is consumed only after every other event,
silent steps allowed before it, so that a behaviour conforms only if it also ends where the
system did (``end``).
``actions`` names the actions a step observation can match (the validator asks ``match`` only of
those).

Real identifiers are renamed to the model's by the mapping itself: it sees the whole run when
it is built (``observations(events)``), so it can number a system's allocated identifiers in
allocation order (``in_order``: real producer ids 1000, 1001 -> the model's 0, 1).

How a model offers its mapping: the ``observations`` capability (``kafka_mc.model.capabilities``), a
bound model's ``observations(events) -> Observations``; ``observations_of`` asks for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from kafka_mc.model.capabilities import MissingCapability, offers

Event = Mapping[str, Any]

__all__ = ["Observation", "Observations", "NoObservations", "step", "state", "end", "either",
           "differs", "in_order", "observations_of"]


@dataclass(frozen=True)
class Observation:
    """What one event says. ``label``: how reports name it. A step observation has ``match``
    and the ``actions`` (names) it may match; a state observation has ``holds``; one with both
    may be accounted for either way. ``at_end``: a state observation of the run's end state,
    consumed only once every other observation is; its ``viable(s)``, when given, is False
    where no state reachable from ``s`` can satisfy it (a log that is no prefix of the recorded
    one: logs only grow), so the validator drops ``s`` at once (an ordinary observation's,
    while it is the next event of its stream)."""

    label: str
    actions: frozenset = frozenset()
    match: Callable[[Any, tuple, Any], str | None] | None = None
    holds: Callable[[Any], str | None] | None = None
    at_end: bool = False
    viable: Callable[[Any], bool] | None = None


@dataclass(frozen=True)
class Observations:
    """A model's mapping for one recorded run.

    ``observe(event)``: the event's Observation, a sequence of them (one event that stands for
    several steps of the model, in this order: a WriteTxnMarkers request carrying the markers of
    two partitions), or None (not observed: skipped). ``stream(event)``: the key of its stream
    (events of one stream keep their order). ``silent(name)``: whether the model's action of that
    name happens where nothing records it (taken freely between observed steps). ``skipped``:
    actions the search never takes, because they change only what no rule and no observation
    reads (a reader's fetches the run does not record). ``unseen``: what the mapping cannot see,
    for reports."""

    observe: Callable[[Event], "Observation | Sequence[Observation] | None"]
    stream: Callable[[Event], Hashable]
    silent: Callable[[str], bool]
    skipped: frozenset = frozenset()
    unseen: str = ""


class NoObservations(MissingCapability):
    """The model declares no observations (one line)."""


def step(label: str, actions: Iterable[str], match: Callable) -> Observation:
    """An event that is one step of the model, of one of ``actions``."""
    return Observation(label, frozenset(actions), match=match)


def state(label: str, holds: Callable) -> Observation:
    """An event that constrains the model's state at its point of the run (no step)."""
    return Observation(label, holds=holds)


def end(label: str, holds: Callable, viable: Callable | None = None) -> Observation:
    """What the run's end state shows (``holds``), consumed after every other event
    (``viable``: see ``Observation``)."""
    return Observation(label, holds=holds, at_end=True, viable=viable)


def either(label: str, actions: Iterable[str], match: Callable,
           holds: Callable = lambda s: None) -> Observation:
    """An event that is a step of one of ``actions``, or no step at all (``holds``: when)."""
    return Observation(label, frozenset(actions), match=match, holds=holds)


def differs(expected: Mapping[str, Any], actual: Mapping[str, Any] | Callable[[str], Any]
            ) -> str | None:
    """None when every recorded field (``expected``) has its value in the model's
    (``actual``: a mapping or field -> value), else the differing fields, ``"; "``-separated,
    as ``"producer_epoch: recorded 0, model 1"`` (the number of parts ranks near misses)."""
    get = actual if callable(actual) else actual.get
    out = []
    for k, v in expected.items():
        got = get(k)
        if got != v:
            out.append(f"{k}: recorded {_show(v)}, model {_show(got)}")
    return "; ".join(out) or None


def _show(v) -> str:
    name = getattr(v, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(v, frozenset):
        return "{" + ", ".join(sorted(map(_show, v))) + "}"
    return repr(v)


def in_order(values: Iterable[int], keep: Iterable[int] = (-1,)) -> dict[int, int]:
    """Real identifiers a system allocates in increasing order, numbered 0, 1, ... as the model
    allocates its own (``keep``: values that mean "none" and stay as they are)."""
    keep = set(keep)
    return {v: i for i, v in enumerate(sorted(set(values) - keep))} | {k: k for k in keep}


def observations_of(model, events: Sequence[Event]) -> Observations:
    """The model's mapping for the run ``events``; ``NoObservations`` when it offers none."""
    if not offers(model, "observations"):
        raise NoObservations(f"model {getattr(model, 'name', model)!r} declares no observations: "
                             "it cannot be held against a recorded run (the observations "
                             "capability, kafka_mc.model.capabilities)")
    return model.observations(events)
