"""The property-checking policy: which property is checked on which state or step, and what its
verdict is. Every explorer follows it (the BFS, Spark, simulate and stateful), so a kind of claim
means the same whichever explorer checks it:

* ``always``: on every initial state and on every state when it is first reached;
* ``transition``: on every step taken (generated), ``holds(before, action, after)``;
* ``terminal``: on every expanded state with no enabled action (its successors, as the model being
  checked computes them, are none). A state left unexpanded by the state constraint or the depth
  bound is not terminal. With deadlock checking on, such a state is a deadlock first;
* ``sometimes``: a witness, pending until a reached state satisfies it. One still pending when an
  exhaustive search completes is a vacuity error; random explorers report it with the caveat that
  their samples may have missed it (``unwitnessed``). A witness whose ``applies()`` is False
  (the model says it cannot arise in this configuration: no second producer instance, so no
  zombie to fence) is not applicable: listed as such, never pending, never a violation;
* ``eventually``: liveness, on a state graph; these explorers list it as unchecked.

The BFS (and its workers), the state-graph explorer and the random walks (simulate, swarm,
stateful) skip, on a step, the ``always`` and ``transition`` properties the step cannot change:
those reading nothing its group writes (``Relevance``). Their verdict there is known: an
``always`` property held in the state the step left (checked when it was reached: by the search,
or by the walk before the step), and a ``transition`` property holds on a step writing nothing
it reads. Spark's tasks check every property (a candidate reaches its owner with its action's
name only). This rests on the model's declarations (what each
group writes anywhere, what each property reads), the same ones the partial-order reduction
rests on and its self-check tests.

Within one state the properties are checked in the model's order and the first that fails is the
violation. The ``Checks`` methods return the failing ``Property`` (or None) and leave the path to
the explorer, which owns the search order; ``violation`` turns one into the reported value.

With ``--continue`` every property is reported once, at the first place in the search order where
it fails: every property not yet reported that fails at a state or step is reported there, in
the model's order (a stuck state: the deadlock, then each failing terminal property), and then
retired (``retire``), so what is reported for one property does not depend on the others.
"""
from __future__ import annotations

import copy
from typing import Callable, Iterable, Iterator, Sequence

from kafka_mc.model.capabilities import offers
from kafka_mc.model.config import brief
from kafka_mc.model.core import Expectation, Model, Property
from kafka_mc.explorers.core.result import Violation

DEADLOCK = Violation("deadlock", "deadlock", "some action is enabled in every reachable state")


def shows(model: Model, kind: str, prop: str, states: Sequence, actions: Sequence) -> bool:
    """Whether the behaviour (``states``, ``actions[i]`` from ``states[i]``) ends in a violation
    of ``prop`` of this ``kind`` as this policy checks it: what a report read back from a file
    (a checkpoint's) must show before it is believed."""
    t = states[-1]
    if kind in ("deadlock", "terminal"):
        if not model.within_bounds(t) or list(model.actions(t)):
            return False
        if kind == "deadlock":
            return True
    p = next((p for p in model.properties() if p.name == prop and p.expectation.value == kind),
             None)
    if p is None:
        return False
    if kind == "transition":
        return bool(actions) and not p.holds(states[-2], actions[-1], t)
    return not p.holds(t)


def select_properties(model: Model, names: Sequence[str] | None) -> list[Property]:
    """The model's properties named by ``names`` (None: all checked by default, i.e. not the
    claims checked only when named: ``Property.default``), in the given order."""
    props = list(model.properties())
    if names is None:
        return [p for p in props if p.default]
    if "all" in names:   # the default properties, with the names given beside them
        names = [p.name for p in props if p.default] + [n for n in names if n != "all"]
    known = {p.name: p for p in props}
    missing = [n for n in names if n not in known]
    if missing:
        raise KeyError(f"unknown property {brief(missing[0])} (known: "
                       f"{', '.join(known) or 'none'})")
    return [known[n] for n in dict.fromkeys(names)]


class Relevance:
    """The ``always`` and ``transition`` properties a step can change the verdict of: those reading
    something its group writes (``Model.footprints_anywhere``: what a group writes in any reachable
    state; ``Property.reads``; a property reading everything is always relevant). A state first
    reached by a step writing nothing an ``always`` property reads gets the verdict of the state
    the step left, which held: that state was checked when it was reached, and with
    ``--continue`` a property that failed is no longer checked. A ``transition`` property holds
    on a step writing nothing it reads (``kafka_mc.model.core.Property``). So skipping the others changes
    no verdict, and the first failing property of a state stays the first. The writes' bound is
    what the partial-order reduction's self-check tests (``kafka_mc.explorers.reductions.por.self_check``).

    ``of(action, props)``: the pairs of ``props`` (a tuple of ``Checks``) relevant to the step;
    None from ``of_model`` when the model declares no bound (every property is then checked)."""

    def __init__(self, group, anywhere):
        self._group, self._anywhere = group, anywhere
        self._tables: dict = {}   # id(props) -> (props, {action: relevant pairs})

    @classmethod
    def of_model(cls, model: Model) -> "Relevance | None":
        if not offers(model, "reduction"):
            return None
        anywhere = model.footprints_anywhere()
        return None if anywhere is None else cls(model.group, anywhere)

    def of(self, a, props: tuple) -> tuple:
        entry = self._tables.get(id(props))
        if entry is None or entry[0] is not props:   # a new tuple (a property was retired)
            entry = self._tables[id(props)] = (props, {})
        got = entry[1].get(a)   # by action: cheaper than its group, and there are few
        if got is None:
            f = self._anywhere.get(self._group(a))
            got = entry[1][a] = props if f is None else tuple(
                (p, h) for p, h in props if p.reads is None or not f.writes.isdisjoint(p.reads))
        return got


class Checks:
    """The selected properties of ``model``, split by expectation, with the checks each kind gets.

    ``always``, ``transition``, ``terminal`` and ``sometimes`` are tuples of ``(property,
    holds)``: explorers with a hot loop may iterate them directly, as ``state`` and ``step`` do.
    ``deadlock``: whether a state with no enabled action is an error (the model's default unless
    the check overrides it)."""

    def __init__(self, model: Model, names: Sequence[str] | None = None,
                 check_deadlock: bool | None = None):
        self.properties = props = tuple(select_properties(model, names))
        of = {k: tuple((p, p.holds) for p in props if p.expectation is k) for k in Expectation}
        self.always = of[Expectation.ALWAYS]
        self.transition = of[Expectation.TRANSITION]
        self.terminal = of[Expectation.TERMINAL]
        self.not_applicable = tuple(p.name for p, _ in of[Expectation.SOMETIMES]
                                    if p.applies is not None and not p.applies())
        self.sometimes = tuple((p, h) for p, h in of[Expectation.SOMETIMES]
                               if p.name not in self.not_applicable)
        self.eventually = tuple(p for p, _ in of[Expectation.EVENTUALLY])
        self.deadlock = (model.check_deadlock if check_deadlock is None
                         else check_deadlock)

    @property
    def checked(self) -> tuple[str, ...]:
        """What these explorers check: everything but liveness and witnesses that cannot arise."""
        return tuple(p.name for p in self.properties if p.expectation is not Expectation.EVENTUALLY
                     and p.name not in self.not_applicable)

    @property
    def unchecked(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.eventually)

    def state(self, s, a=None, relevant: Callable | None = None) -> Property | None:
        """The first ``always`` property failing in a newly reached (or initial) state; with
        the step ``a`` that reached it from a state where they held and ``Relevance.of``, of
        those the step can change."""
        for p, holds in self.always if relevant is None or a is None else relevant(a, self.always):
            if not holds(s):
                return p
        return None

    def step(self, s, a, t, relevant: Callable | None = None) -> Property | None:
        """The first ``transition`` property failing on the step ``s --a--> t`` (with
        ``Relevance.of``: of those the step can change)."""
        for p, holds in self.transition if relevant is None else relevant(a, self.transition):
            if not holds(s, a, t):
                return p
        return None

    def stuck(self, s) -> Violation | Property | None:
        """An expanded state with no enabled action: ``DEADLOCK`` when deadlocks are errors, else
        the first ``terminal`` property failing in it."""
        return next(self.stuck_failures(s), None)

    def stuck_failures(self, s) -> Iterator[Violation | Property]:
        """What an expanded state with no enabled action violates, lazily (a caller that stops at
        the first evaluates nothing after it): ``DEADLOCK`` when deadlocks are errors, then each
        failing ``terminal`` property in the model's order."""
        if self.deadlock:
            yield DEADLOCK
        for p, holds in self.terminal:
            if not holds(s):
                yield p

    def retire(self, found: Violation | Property) -> None:
        """Stop checking what was just found violated (TLC's -continue: every property is
        reported once, with the first, hence shortest, counterexample the search meets)."""
        if isinstance(found, Violation):
            self.deadlock = False
            return
        keep = lambda entries: tuple(e for e in entries if e[0].name != found.name)  # noqa: E731
        self.always, self.transition, self.terminal = (keep(self.always), keep(self.transition),
                                                       keep(self.terminal))

    def without(self, reported: Iterable[tuple[str, str]]) -> "Checks":
        """A copy that no longer checks what was reported already, given as ``(kind, property)``
        of each violation: the checks of a ``--continue`` search after those reports."""
        live = copy.copy(self)
        named = {p.name: p for p in self.properties}
        for kind, name in reported:
            live.retire(DEADLOCK if kind == DEADLOCK.kind else named[name])
        return live

    def witnesses(self) -> "Witnesses":
        return Witnesses(self.sometimes)

    def unwitnessed(self, pending: Sequence[Property], detail: str = "") -> list[Violation]:
        """The vacuity errors of witnesses never seen (call only once the search is over and
        complete for an exhaustive explorer, clean for a random one)."""
        return [Violation(p.name, "sometimes", p.claim, detail=detail) for p in pending]


def violation(found: Violation | Property, path=None) -> Violation:
    """The reported violation of a failing property (or ``DEADLOCK``) on ``path``."""
    if isinstance(found, Violation):
        return Violation(found.property, found.kind, found.claim, path, found.detail)
    return Violation(found.name, found.expectation.value, found.claim, path)


class Witnesses:
    """The ``sometimes`` properties not yet witnessed; ``see`` a reached state."""

    def __init__(self, sometimes):
        self.open = list(sometimes)

    def see(self, s) -> None:
        for entry in self.open[:]:
            if entry[1](s):
                self.open.remove(entry)

    @property
    def pending(self) -> list[Property]:
        return [p for p, _ in self.open]
