"""The symbolic hook of the model contract (docs/design.md section 8): a model's symbolic transition
system, for the symbolic explorer (``kafka_mc.explorers.symbolic``). It needs no z3: sorts are named as
strings."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kafka_mc.model.display import Action, format_action


# A model may describe (part of) itself as a symbolic transition system over z3 terms. The contract
# names sorts as strings so that it needs no z3: "bool", or "bvN" (an N-bit bit-vector). Formulas
# are built by the model's functions from the term dicts an explorer passes them.

SYMBOLIC_SORTS = ("bool", "bv8", "bv16", "bv32", "bv64")


@dataclass(frozen=True)
class SymbolicAction:
    """A named action: ``relation(v, p, w)`` -> z3 Bool, with ``v`` and ``w`` the state terms
    before and after (name -> term) and ``p`` the action's parameter terms (name -> term)."""

    name: str
    params: tuple[tuple[str, str], ...]
    relation: Callable[..., Any]
    args: tuple[tuple[str, int], ...] = ()   # constant arguments (a producer instance), in ``p``

    @property
    def label(self) -> str:
        return format_action((self.name, *(v for _, v in self.args)), [n for n, _ in self.args])


@dataclass(frozen=True)
class SymbolicClaim:
    """A named claim: ``kind`` "state" (``holds(v)``) or "step" (``holds(action, v, p, w)``,
    with ``action`` the action's name)."""

    name: str
    kind: str
    holds: Callable[..., Any]
    claim: str = ""


@dataclass(frozen=True)
class SymbolicSystem:
    """A model's symbolic transition system.

    ``variables``: (name, sort) of the state; ``init(v)``: the initial states; ``reachable(v)``:
    a claim about every reachable state (bounded checks may start anywhere in it, e.g. near
    epoch exhaustion; proofs must prove it); ``actions``: the transition relation, the
    disjunction of the actions; ``properties``: the claims to check; ``auxiliary``: invariants
    a proof may need, proved together with the properties; ``doc``: what is modelled and what is
    abstracted. ``project(state)`` (optional) maps an explicit state to the symbolic variables'
    values, and ``project_action(s, a, t)`` an explicit step to (action name, parameter values),
    or None (the step should leave the projection unchanged): tests tie the symbolic relation to
    the explicit one with them."""

    variables: tuple[tuple[str, str], ...]
    init: Callable[..., Any]
    reachable: Callable[..., Any]
    actions: tuple[SymbolicAction, ...]
    properties: tuple[SymbolicClaim, ...]
    auxiliary: tuple[SymbolicClaim, ...] = ()
    doc: str = ""
    project: Callable[[Any], Mapping[str, Any]] | None = None
    project_action: Callable[[Any, Action, Any], tuple | None] | None = None
