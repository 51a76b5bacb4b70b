"""The models kafka-mc can run, by name (``[model] name = ...`` or ``--model``), composed with the
property sets registered for them.

Both are found through Python entry points, so a researcher's own package adds a model, or more
properties for an existing one, by declaring them in its ``pyproject.toml``; kafka-mc's own are
declared the same way in ours:

```toml
[project.entry-points."kafka_mc.models"]        # name = a ModelEntry
kafka = "kafka_mc.model.kafka.spec:MODEL"

[project.entry-points."kafka_mc.properties"]    # model name = a tuple of Property
kafka = "invariants:PROPERTIES"
```

A property set's entry point is named after the model it is for; several distributions may each
register one for the same model. The registry composes them when it binds a configuration:
kafka-mc's own set first, then the others in the order of their distributions' names. A model
never imports its properties (the import contract in the tests keeps it so).

``register`` adds a model in-process (a script's or a test's own model) without packaging it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from typing import Any, Callable, Mapping

from kafka_mc.model.config import Config, ConfigError, Param, brief, build_config, read_toml, shown
from kafka_mc.model.canonical import with_symmetry
from kafka_mc.model.capabilities import MissingCapability, check_declared
from kafka_mc.model.core import ModelBase, Property
from kafka_mc.model.symmetry import SymmetryError
from kafka_mc.model.protocol import DuplicateName, ProtocolSpec, RuleModel

MODELS_GROUP = "kafka_mc.models"
PROPERTIES_GROUP = "kafka_mc.properties"
DISTRIBUTION = "kafka-mc"
DEFAULT_MODEL = "kafka"


@dataclass(frozen=True)
class ModelEntry:
    name: str
    summary: str
    params: tuple[Param, ...]
    build: Callable[[Config, tuple[Property, ...]], Any]   # (Config, extra properties) -> Model
    presets: tuple[str, ...] = ()           # protocol presets (protocol.version), if any
    preset_docs: Mapping[str, str] = field(default_factory=dict)  # preset -> what it changed
    releases: Mapping[str, str] = field(default_factory=dict)  # a real release -> its preset
    mutants: tuple[tuple[str, str, str], ...] = ()  # (model.mutant, invariant catching it, what)
    defaults: Mapping[str, Any] = field(default_factory=dict)  # the built-in configuration
    # kafka-mc compare (model/comparison.py): claim -> Claim, and a Workload -> the model's
    # configuration overrides for it (None: the system has no such workload)
    claims: Mapping[str, Any] = field(default_factory=dict)
    comparison: Callable[[Any], Mapping[str, Any] | None] | None = None


def spec_entry(spec: ProtocolSpec, params: tuple[Param, ...], *, name: str | None = None,
               model: Callable = RuleModel, **fields: Any) -> ModelEntry:
    """The entry of a model given as a ``ProtocolSpec`` (bound by ``model``, a ``RuleModel``
    subclass): registered properties are added to the spec's own."""
    def build(cfg: Config, properties: tuple[Property, ...] = ()):
        return model(spec.derive(spec.name, add_properties=properties) if properties else spec, cfg)
    return ModelEntry(name or spec.name, spec.doc, params, build, **fields)


REGISTERED: dict[str, ModelEntry] = {}  # models registered in this process (register)


def register(entry: ModelEntry) -> None:
    """Add a model in this process, as if an installed package had declared it."""
    REGISTERED[entry.name] = entry


def _dist(ep: metadata.EntryPoint) -> str:
    """The entry point's distribution name, normalised (PEP 503: kafka_mc and Kafka-MC are
    kafka-mc)."""
    return re.sub(r"[-_.]+", "-", ep.dist.name).lower() if ep.dist is not None else ""


@cache
def _entry_points(group: str) -> tuple[metadata.EntryPoint, ...]:
    """The group's entry points, kafka-mc's own first, then by distribution and name."""
    eps = metadata.entry_points(group=group)
    return tuple(sorted(eps, key=lambda ep: (_dist(ep) != DISTRIBUTION, _dist(ep), ep.name,
                                             ep.value)))


def _load(ep: metadata.EntryPoint, group: str):
    """An entry point's object; a package that fails to import is one clear error naming it."""
    try:
        return ep.load()
    except Exception as e:  # whatever a broken plugin raises on import
        raise ConfigError(f"entry point {ep.name} = {ep.value} ({group}, from "
                          f"{_dist(ep) or 'an unknown distribution'}) cannot be loaded: "
                          f"{type(e).__name__}: {e}") from None


def refresh() -> None:
    """Forget the entry points read so far (after installing a package in this process)."""
    _entry_points.cache_clear()


def models(name: str | None = None) -> dict[str, ModelEntry]:
    """The models registered (only those named ``name``, when given: a broken package that
    registers another model does not stop this one)."""
    out: dict[str, ModelEntry] = {}
    for ep in _entry_points(MODELS_GROUP):
        if name is not None and ep.name != name:
            continue
        entry = _load(ep, MODELS_GROUP)
        if not isinstance(entry, ModelEntry) or entry.name != ep.name:
            raise ConfigError(f"entry point {ep.name} = {ep.value} ({MODELS_GROUP}) is not the "
                              f"ModelEntry of a model named {ep.name!r}")
        out.setdefault(ep.name, entry)
    return out | REGISTERED


def properties_for(model: str) -> tuple[Property, ...]:
    """The properties registered for a model, in registration order."""
    out: list[Property] = []
    for ep in _entry_points(PROPERTIES_GROUP):
        if ep.name != model:
            continue
        props = _load(ep, PROPERTIES_GROUP)
        if not (isinstance(props, tuple) and all(isinstance(p, Property) for p in props)):
            raise ConfigError(f"entry point {ep.name} = {ep.value} ({PROPERTIES_GROUP}) is not "
                              "a tuple of Property")
        out += props
    return tuple(out)


def entry(name: str) -> ModelEntry:
    found = models(name) if name not in REGISTERED else REGISTERED
    if name not in found:
        known = sorted({ep.name for ep in _entry_points(MODELS_GROUP)} | set(REGISTERED))
        raise ConfigError(f"unknown model {brief(name)} (known: {', '.join(known)})")
    return found[name]


def load(path: str | None = None, *, model: str | None = None,
         overrides: Mapping[str, Any] | list[tuple[str, Any]] = ()) -> Config:
    """The configuration in ``path`` (or the built-in default) with ``model``/``overrides`` applied."""
    overrides = list(overrides.items() if isinstance(overrides, Mapping) else overrides)
    if model is not None and not model:
        raise ConfigError("the model name is empty")
    if path is None:
        raw, source = {}, "<built-in>"
        name = model or DEFAULT_MODEL
        overrides = list(entry(name).defaults.items()) + overrides
    else:
        raw, source = read_toml(path), shown(path)
        declared = raw.get("model", {}).get("name") if isinstance(raw.get("model"), dict) else None
        if declared is not None and not isinstance(declared, str):
            raise ConfigError(f"{source}: model.name must be a string")
        if declared == "":
            raise ConfigError(f"{source}: model.name is empty")
        name = model or declared or DEFAULT_MODEL
        settings = [(section, key) for section, body in raw.items()
                    for key in (body if isinstance(body, dict) else (None,))
                    if (section, key) != ("model", "name")]
        if not settings and entry(name).defaults:
            # Like an empty file: the parameter defaults, which are not the built-in
            # configuration that running without CONFIG means.
            raise ConfigError(f"{source}: holds no setting but the model's name: it would mean "
                              f"{name}'s parameter defaults, not its built-in configuration "
                              f"(omit CONFIG, with --model {name}, for that one)")
    return build_config(raw, entry(name).params, name, source, overrides)


def from_dict(sections: Mapping[str, Any], source: str = "<dict>") -> Config:
    """A configuration from nested sections as ``Config.to_dict`` writes them (trace metadata)."""
    body = {k: dict(v) for k, v in sections.items() if isinstance(v, Mapping)}
    name = body.get("model", {}).pop("name", None)
    if not isinstance(name, str):
        raise ConfigError(f"{source}: model.name is missing")
    return build_config(body, entry(name).params, name, source)


def bind(cfg: Config):
    """The Model for a configuration, with the properties registered for it; with ``[check]
    symmetry``, its view canonicalises under the symmetries it declares (``with_symmetry``).
    A model defining hooks of a capability it does not declare is refused (``check_declared``)."""
    props = properties_for(cfg.model)
    names = [p.name for p in props]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"property {twice[0]} is registered twice for model {cfg.model} "
                          f"({PROPERTIES_GROUP})")
    try:
        model = entry(cfg.model).build(cfg, props)
    except DuplicateName as e:   # a registered property named like one of the model's own
        raise ConfigError(f"model {cfg.model}: {e} (a property set of {PROPERTIES_GROUP} "
                          "repeats one of the model's own)") from None
    try:
        check_declared(model, ModelBase)
    except MissingCapability as e:
        raise ConfigError(str(e)) from None
    if cfg.get("check.symmetry"):
        try:
            return with_symmetry(model)
        except SymmetryError as e:
            raise ConfigError(f"{cfg.source}: {e}") from None
    return model


BUILT_IN = "the built-in configuration"


def changes(model: str, values: Mapping[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    """What a configuration (dotted key -> value, ``[check]`` left out) sets beyond the defaults:
    (the baseline, [(key, value)]). The baseline is the model's parameter defaults, or, when
    the values hold every one of the model's built-in configuration (``kafka-mc check`` without
    CONFIG), ``BUILT_IN``; a key the model does not know (a trace of another version) counts."""
    try:
        e = entry(model)
    except ConfigError:
        return "", sorted((k, v) for k, v in values.items() if not k.startswith("check."))
    base = {p.key: p.default for p in e.params}
    built_in = bool(e.defaults) and all(values.get(k, base.get(k)) == v
                                        for k, v in e.defaults.items())
    if built_in:
        base |= dict(e.defaults)
    return (BUILT_IN if built_in else "",
            sorted((k, v) for k, v in values.items()
                   if not k.startswith("check.") and (k not in base or base[k] != v)))


def summary(model: str, values: Mapping[str, Any]) -> str:
    """``changes`` in one phrase: ``cluster.partitions=1, protocol.version=kafka-0.11``, ``the
    built-in configuration, faults.total=1``, or ``the defaults``."""
    baseline, changed = changes(model, values)
    said = [baseline] if baseline else []
    said += [f"{k}={_value(v)}" for k, v in changed]
    return ", ".join(said) or "the defaults"


def _value(v: Any) -> str:
    """A configuration value as ``--set`` takes it (TOML's booleans and lists, bare strings)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)
