"""How a protocol is assembled from rules (docs/design.md section 2).

A ``Rule`` is one kind of event (``HandleInitProducerId``, ``RMPrepare``): ``enabled(p, s)``
yields the argument tuples for which it can fire in ``s``, ``apply(p, s, *args)`` returns the
next state. A ``ProtocolSpec`` gathers the rules, the initial states and the properties; ``derive``
makes a variant (a protocol version, a deliberately broken mutant) by replacing, adding or removing
rules and properties; ``bind(config)`` turns it into a ``Model`` an explorer can run.

Rules and property checks take the model's parameters first: ``enabled(p, s)``,
``apply(p, s, *args)``, ``holds(p, s)`` or ``holds(p, s, a, t)``, where ``p = spec.params(config)``
is computed once by ``bind`` (a typed, precomputed view of the configuration; the ``Config``
itself by default), so the hot path never parses configuration.

A spec may carry ``fast_successors(p)``: a hand-fused successor function for exactly its rule
set (TwoPhase has one). ``derive`` drops it whenever the rules change, so a variant always runs on
the reference semantics; tests check the fast path agrees with the rules.
"""
from __future__ import annotations

from dataclasses import dataclass, replace as dc_replace
from functools import partial
from typing import Any, Callable, Iterable, Mapping, Sequence

from kafka_mc.model.capabilities import Capabilities
from kafka_mc.model.core import Action, Fair, ModelBase, Property


@dataclass(frozen=True)
class Rule:
    name: str
    params: tuple[str, ...]
    enabled: Callable[[Any, Any], Iterable[tuple]]
    apply: Callable[..., Any]
    doc: str = ""
    fair: Fair | None = None   # its fairness condition (model.core.WF / SF), if any


@dataclass(frozen=True)
class ProtocolSpec:
    name: str
    init: Callable[[Any], Iterable[Any]]                      # init(p) -> initial states
    rules: tuple[Rule, ...]
    properties: tuple[Property, ...] = ()
    params: Callable[[Any], Any] = None                       # Config -> p (default: the Config)
    view: Callable[[Any, Any], Any] | None = None            # view(p, s)
    within_bounds: Callable[[Any, Any], bool] | None = None  # within_bounds(p, s)
    locality: Callable[[Any, Any], Any] | None = None        # locality(p, view): see ModelBase
    fast_successors: Callable[[Any], Callable[[Any], list]] | None = None  # p -> successors
    packed: bool = False
    check_deadlock: bool = True
    itf_codec: Any = None  # optional: encode(p, s) -> dict of vars, decode(p, vars) -> s
    # optional, for partial-order reduction (model.core.ModelBase): footprints(p, s), group(p, a),
    # reduction_view(p, s), location(p, s, loc), and optionally footprints_anywhere(p)
    reduction: Any = None
    # optional, for symmetry reduction (model.canonical.with_symmetry): symmetries(p), permute(p, s, g),
    # permute_action(p, a, g), and optionally canonical(p, s) (see ModelBase.canonical)
    symmetry: Any = None
    doc: str = ""

    def __post_init__(self):
        _unique("rule", [r.name for r in self.rules])
        _unique("property", [p.name for p in self.properties])

    def rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(f"{self.name} has no rule {name!r}")

    def derive(self, name: str, *, replace: Iterable[Rule] = (), add: Iterable[Rule] = (),
               remove: Iterable[str] = (), add_properties: Iterable[Property] = (),
               replace_properties: Iterable[Property] = (), remove_properties: Iterable[str] = (),
               doc: str = "", **fields: Any) -> "ProtocolSpec":
        """A variant of this spec. Replaced rules keep their position; added ones go last."""
        rules = _edit("rule", self.rules, replace, add, remove)
        props = _edit("property", self.properties, replace_properties, add_properties,
                      remove_properties)
        if rules != self.rules and "fast_successors" not in fields:
            fields["fast_successors"] = None
        return dc_replace(self, name=name, rules=rules, properties=props,
                          doc=doc or self.doc, **fields)

    def bind(self, cfg: Any) -> "RuleModel":
        return RuleModel(self, cfg)


class DuplicateName(ValueError):
    """Two rules, or two properties, of one spec share a name."""


def _unique(kind: str, names: Sequence[str]) -> None:
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise DuplicateName(f"duplicate {kind} names: {sorted(dup)}")


def _edit(kind, items, replace, add, remove):
    by_name = {x.name: x for x in replace}
    names = {x.name for x in items}
    for n in list(by_name) + list(remove):
        if n not in names:
            raise KeyError(f"no {kind} {n!r} to replace or remove")
    out = [by_name.get(x.name, x) for x in items if x.name not in set(remove)]
    return tuple(out) + tuple(add)


class RuleModel(ModelBase):
    """A ``ProtocolSpec`` bound to a configuration: the ``Model`` explorers run. It offers the
    fairness and swarm capabilities (derived from its rules), reduction and symmetry when its
    spec carries them, and what a subclass declares (``kafka_mc.model.capabilities``)."""

    capabilities = Capabilities(fairness=True, swarm=True)

    def __init__(self, spec: ProtocolSpec, cfg: Any):
        self.capabilities = type(self).capabilities | Capabilities(
            reduction=spec.reduction is not None, symmetry=spec.symmetry is not None)
        self.spec, self.cfg, self.name = spec, cfg, spec.name
        self.params = p = spec.params(cfg) if spec.params else cfg
        self.packed, self.check_deadlock = spec.packed, spec.check_deadlock
        self.action_params = {r.name: r.params for r in spec.rules}
        self._rules = [(r.name, partial(r.enabled, p), partial(r.apply, p)) for r in spec.rules]
        self._apply = {name: apply for name, _, apply in self._rules}
        self._fair = {r.name: r.fair for r in spec.rules if r.fair is not None}
        self._properties = tuple(
            dc_replace(prop, holds=partial(prop.holds, p),
                       applies=prop.applies and partial(prop.applies, p),
                       when=prop.when and partial(prop.when, p),
                       reads=prop.reads(p) if callable(prop.reads) else prop.reads)
            for prop in spec.properties)
        if spec.view is not None:
            self.view = partial(spec.view, p)
        if spec.within_bounds is not None:
            self.within_bounds = partial(spec.within_bounds, p)
        if spec.locality is not None:
            self.locality = partial(spec.locality, p)
        if spec.fast_successors is not None:
            self.successors = spec.fast_successors(p)
        r = spec.reduction
        if r is not None:
            self.footprints = partial(r.footprints, p)
            self.group = partial(r.group, p)
            self.reduction_view = partial(r.reduction_view, p)
            self.location = partial(r.location, p)
            if hasattr(r, "footprints_anywhere"):
                self.footprints_anywhere = partial(r.footprints_anywhere, p)
        y = spec.symmetry
        if y is not None:
            self.symmetries = partial(y.symmetries, p)
            self.permute = partial(y.permute, p)
            self.permute_action = partial(y.permute_action, p)
            if hasattr(y, "canonical"):
                self.canonical = partial(y.canonical, p)

    def init_states(self):
        return list(self.spec.init(self.params))

    def actions(self, s) -> list[Action]:
        return [(name, *args) for name, enabled, _ in self._rules for args in enabled(s)]

    def step(self, s, a: Action):
        try:
            apply = self._apply[a[0]]
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"{self.name} has no action {a!r}") from None
        return apply(s, *a[1:])

    def successors(self, s):
        return [((name, *args), apply(s, *args))
                for name, enabled, apply in self._rules for args in enabled(s)]

    def properties(self):
        return self._properties

    def swarm_families(self) -> tuple[str, ...]:
        """The rules a swarm walk may leave out: those no fairness condition covers entirely
        (the behaviours they are left out of are behaviours of the model: faults and optional
        events; a fair rule, such as a delivery, is one every complete behaviour takes)."""
        return tuple(r.name for r in self.spec.rules if r.fair is None or r.fair.only is not None)

    def swarm_family(self, a: Action) -> str | None:
        """An action's rule, unless a fairness condition covers the action."""
        return None if self.fair_family(a) is not None else a[0]

    def fairness(self):
        """The rules' fairness conditions, by family (the rule's name unless it names one)."""
        return {f.family or name: f for name, f in self._fair.items()}

    def fair_family(self, a: Action) -> str | None:
        f = self._fair.get(a[0])
        if f is None or (f.only is not None and not f.only(*a[1:])):
            return None
        return f.family or a[0]

    def itf_encode(self, s) -> Mapping[str, Any]:
        codec = self.spec.itf_codec
        return codec.encode(self.params, s) if codec else super().itf_encode(s)

    def itf_decode(self, vars: Mapping[str, Any]):
        codec = self.spec.itf_codec
        return codec.decode(self.params, vars) if codec else super().itf_decode(vars)

    def itf_encode_action(self, a):
        codec = self.spec.itf_codec
        return codec.encode_action(self.params, a) if hasattr(codec, "encode_action") else a

    def itf_decode_action(self, value):
        codec = self.spec.itf_codec
        return codec.decode_action(self.params, value) if hasattr(codec, "decode_action") else value
