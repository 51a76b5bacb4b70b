"""The models kafka-mc can run, by name (``[model] name = ...`` or ``--model``).

A model module exports ``MODELS``, a tuple of ``ModelEntry``; ``MODULES`` lists those modules and
is the one place a new model is added. Modules are imported on first use.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from model.config import Config, ConfigError, Param, build_config, read_toml

MODULES = ("model.toys.twophase", "model.kafka")
DEFAULT_MODEL = "kafka"
DEFAULT_SETTINGS = {  # the built-in default = configs/small.toml (tests keep the two equal)
    "cluster.partitions": 1, "faults.total": 2,
    **{f"faults.{f}": 1 for f in ("producer_crashes", "coordinator_failovers", "transaction_timeouts",
                                  "request_delays", "request_duplicates", "request_losses",
                                  "response_losses", "batch_expiries", "producer_state_losses",
                                  "transactional_id_expirations")}}


@dataclass(frozen=True)
class ModelEntry:
    name: str
    summary: str
    params: tuple[Param, ...]
    build: Callable[[Config], Any]          # Config -> Model
    presets: tuple[str, ...] = ()           # protocol presets (protocol.version), if any
    mutants: tuple[tuple[str, str, str], ...] = ()  # (model.mutant, invariant catching it, what)


def models() -> dict[str, ModelEntry]:
    out: dict[str, ModelEntry] = {}
    for module in MODULES:
        for entry in importlib.import_module(module).MODELS:
            out[entry.name] = entry
    return out


def entry(name: str) -> ModelEntry:
    known = models()
    if name not in known:
        raise ConfigError(f"unknown model {name!r} (known: {', '.join(sorted(known))})")
    return known[name]


def load(path: str | None = None, *, model: str | None = None,
         overrides: Mapping[str, Any] | list[tuple[str, Any]] = ()) -> Config:
    """The configuration in ``path`` (or the built-in default) with ``model``/``overrides`` applied."""
    overrides = list(overrides.items() if isinstance(overrides, Mapping) else overrides)
    if path is None:
        raw, source = {}, "<built-in>"
        name = model or DEFAULT_MODEL
        if name == DEFAULT_MODEL:
            overrides = list(DEFAULT_SETTINGS.items()) + overrides
    else:
        raw, source = read_toml(path), str(path)
        declared = raw.get("model", {}).get("name") if isinstance(raw.get("model"), dict) else None
        if declared is not None and not isinstance(declared, str):
            raise ConfigError(f"{source}: model.name must be a string")
        name = model or declared or DEFAULT_MODEL
    return build_config(raw, entry(name).params, name, source, overrides)


def from_dict(sections: Mapping[str, Any], source: str = "<dict>") -> Config:
    """A configuration from nested sections as ``Config.to_dict`` writes them (trace metadata)."""
    body = {k: dict(v) for k, v in sections.items() if isinstance(v, Mapping)}
    name = body.get("model", {}).pop("name", None)
    if not isinstance(name, str):
        raise ConfigError(f"{source}: model.name is missing")
    return build_config(body, entry(name).params, name, source)


def bind(cfg: Config):
    """The Model for a configuration."""
    return entry(cfg.model).build(cfg)
