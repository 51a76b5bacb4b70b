"""Capabilities: the optional parts of the model contract, declared (docs/design.md section 2).

Every model offers the core of the contract (``kafka_mc.model.core.Model``, with ``ModelBase``'s defaults:
``successors``, ``action_kinds``, ``machines``, ``settings``, the ITF encoding, ``components``).
Beyond it, a model *offers* capabilities, each a group of hooks that one kind of search or tool
serves, and *declares* the ones it offers in one value, ``capabilities``::

    class MyModel(ModelBase):
        capabilities = Capabilities(fairness=True, diagrams=True)
        def fairness(self): ...
        def fair_family(self, a): ...
        def lifelines(self): ...
        def describe(self, s, a, t): ...

Explorers ask ``offers(model, "fairness")`` (one with a fallback: no fairness condition) or
``require(model, "reduction", "--por")`` (one that cannot run without it: ``MissingCapability``,
one line, exit 2); they never probe a model's attributes. The hooks keep their names and
signatures (``CAPABILITIES`` lists them), so a model written before the declaration needs the
declaration alone: a model whose class defines a hook of a capability it does not declare is
refused when it is bound (``undeclared``; ``kafka_mc.model.registry.bind``), naming what to add.

A ``ProtocolSpec`` bound by ``RuleModel`` declares what its spec carries (``reduction``,
``symmetry``) and what ``RuleModel`` derives from its rules (``fairness``, ``swarm``); a subclass
adds its own (``KafkaModel``: ``diagrams``, ``symbolic``, ``observations``).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import NamedTuple


class Capability(NamedTuple):
    """One capability: its hooks (methods of the model, with ``ModelBase``'s names and
    signatures) and what it serves (the explorer or tool that asks for it)."""

    name: str
    hooks: tuple[str, ...]
    serves: str


CAPABILITIES: dict[str, Capability] = {c.name: c for c in (
    Capability("reduction", ("footprints", "group", "reduction_view", "location",
                             "footprints_anywhere"),
               "partial-order reduction (--por; docs/design.md section 8)"),
    Capability("symmetry", ("symmetries", "permute", "permute_action"),
               "symmetry reduction (--symmetry; section 8)"),
    Capability("fairness", ("fairness", "fair_family"),
               "liveness under fairness (--explorer graph; without it no behaviour owes a step)"),
    Capability("swarm", ("swarm_families", "swarm_family", "held_back"),
               "swarm walks (simulate --swarm; without it a walk only reweights actions)"),
    Capability("diagrams", ("lifelines", "describe"),
               "sequence diagrams (render, explain, explore; without it one lifeline of notes)"),
    Capability("symbolic", ("symbolic",), "the symbolic explorer (--explorer symbolic)"),
    Capability("observations", ("observations", "coverage", "observed_state"),
               "conformance to recorded runs of the real system (kafka-mc real conform), their "
               "coverage of the model and verdicts judged on them (real coverage, reproduce)"),
)}


@dataclass(frozen=True)
class Capabilities:
    """What a model offers beyond the core contract (a field per entry of ``CAPABILITIES``).
    ``a | b`` offers what either does."""

    reduction: bool = False
    symmetry: bool = False
    fairness: bool = False
    swarm: bool = False
    diagrams: bool = False
    symbolic: bool = False
    observations: bool = False

    def __or__(self, other: "Capabilities") -> "Capabilities":
        return Capabilities(**{f.name: getattr(self, f.name) or getattr(other, f.name)
                               for f in fields(self)})

    def offered(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self) if getattr(self, f.name))


NONE = Capabilities()
assert set(NONE.__dataclass_fields__) == set(CAPABILITIES)


class MissingCapability(ValueError):
    """An explorer needs a capability the model does not offer, or a model defines hooks of one
    it does not declare (one line, exit 2)."""


def capabilities_of(model) -> Capabilities:
    """What ``model`` declares (``ModelBase.capabilities``; nothing for an object that is not
    a ``ModelBase``)."""
    return getattr(model, "capabilities", NONE)


def offers(model, capability: str) -> bool:
    """Whether ``model`` offers ``capability`` (a key of ``CAPABILITIES``)."""
    return getattr(capabilities_of(model), capability)


def require(model, capability: str, needed_by: str) -> None:
    """``MissingCapability`` unless ``model`` offers ``capability``, which ``needed_by`` (a flag,
    an explorer, a command) cannot run without."""
    if not offers(model, capability):
        c = CAPABILITIES[capability]
        raise MissingCapability(
            f"model {getattr(model, 'name', model)!r} does not offer the {c.name} capability "
            f"({', '.join(c.hooks)}), which {needed_by} needs")


def undeclared(model, base: type) -> list[tuple[str, str]]:
    """(capability, hook) for every hook ``model`` defines beyond ``base`` (``ModelBase``: its
    defaults) of a capability it does not declare."""
    declared = capabilities_of(model)
    out = []
    for c in CAPABILITIES.values():
        if getattr(declared, c.name):
            continue
        for hook in c.hooks:
            own = vars(model).get(hook) if hasattr(model, "__dict__") else None
            mine = getattr(type(model), hook, None)
            if own is not None or (mine is not None and mine is not getattr(base, hook, None)):
                out.append((c.name, hook))
    return out


def check_declared(model, base: type) -> None:
    """``MissingCapability`` naming the first hook ``model`` defines of a capability it does
    not declare, and the declaration to add."""
    missing = undeclared(model, base)
    if missing:
        name, hook = missing[0]
        raise MissingCapability(
            f"model {getattr(model, 'name', model)!r} defines {hook} but does not declare the "
            f"{name} capability: add {name}=True to its capabilities "
            f"(kafka_mc.model.capabilities.Capabilities)")
