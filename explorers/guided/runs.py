"""Recorded runs of real Kafka as the validator reads them: a run folder's events (the proxy's
log and the client's history merged on their shared clock, then the end state), its release and
config (``run.json``), and the model it is held against (the release's preset, the config's
budgets raised by what the run's killed brokers cost).

A run folder is what ``kafka-mc real run`` / ``real conform`` write per seed (``run-<seed>/``:
run.json, plan.json, events.jsonl, history.jsonl, report.json) or ``real reproduce`` writes
under ``conform/`` (run.json, events.jsonl, history.jsonl, end_state.json). Bad input is
``RealUsageError`` (one line, exit 2)."""
from __future__ import annotations

import json
from pathlib import Path

from kafka_mc.explorers.conformance import read_events, validate
from kafka_mc.model import registry
from kafka_mc.realkafka import losses, releases
from kafka_mc.realkafka.cli import RealUsageError


def read_run(folder: Path) -> list[dict]:
    """A run folder's events for validation: the proxy's event log and the client history, merged
    on their shared clock (both count from the run's start, ``origin_ns``)."""
    if not (folder / "events.jsonl").is_file():
        raise RealUsageError(f"{str(folder)[:200]}: not a run folder (no events.jsonl)")
    events = [dict(e, source="proxy") for e in read_events(folder / "events.jsonl")]
    history = []
    if (folder / "history.jsonl").is_file():
        history = [dict(e, source="client") for e in read_events(folder / "history.jsonl")]
    merged = sorted(events + history, key=lambda e: (e.get("time", 0), e["source"] != "proxy"))
    return merged + end_state(folder)


def end_state(folder: Path) -> list[dict]:
    """The run's end state as one event after all others (``type`` ``end_state``: what the
    harness read once the run had settled: DescribeTransactions, the partitions' logs, producer
    states and offsets), from ``end_state.json`` or ``report.json``'s ``end_state``; none when
    the run wrote neither (it did not finish)."""
    for name, key in (("end_state.json", None), ("report.json", "end_state")):
        path = folder / name
        if not path.is_file():
            continue
        try:
            value = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise RealUsageError(f"{str(path)[:200]}: unreadable ({type(e).__name__})") from None
        value = value.get(key) if key and isinstance(value, dict) else value
        if isinstance(value, dict):
            return [{**{k: value.get(k) for k in ("transactions", "logs", "offsets",
                                                  "producers")},
                     "type": "end_state", "source": "harness"}]
    return []


def is_run_folder(folder: Path) -> bool:
    return folder.is_dir() and (folder / "run.json").is_file() \
        and (folder / "events.jsonl").is_file()


def recorded(folder: Path):
    """(release, config, run.json's values) of the run folder ``folder``; ``RealUsageError``
    when it is none."""
    meta = folder / "run.json"
    if not is_run_folder(folder):
        raise RealUsageError(f"--run {str(folder)[:200]}: not a run folder (no run.json "
                             "and events.jsonl)")
    try:
        values = json.loads(meta.read_text())
        version, sections = values["version"], values["config"]
    except (ValueError, KeyError, TypeError, OSError) as e:
        raise RealUsageError(f"--run {str(folder)[:200]}: run.json unreadable "
                             f"({type(e).__name__})") from None
    release = releases.BY_VERSION.get(version)
    if release is None:
        raise RealUsageError(f"--run {str(folder)[:200]}: Kafka {str(version)[:20]} "
                             "is not a supported release")
    return release, registry.from_dict(sections, str(meta)), values


def recorded_run(folder: Path):
    """(release, config) of a run folder (its run.json), ``RealUsageError`` when it is none."""
    release, cfg, _ = recorded(folder)
    return release, cfg


def broker_losses(cfg, events, folder: Path | None = None, release=None) -> dict:
    """The budgets raised by what the run's killed brokers cost (``kafka_mc.realkafka.losses``;
    the folder's plan.json and run.json say which failovers killed a broker, and how many)."""
    plan, brokers = None, 1
    if folder is not None:
        try:
            plan = json.loads((folder / "plan.json").read_text())
            brokers = int(json.loads((folder / "run.json").read_text()).get("brokers", 1))
        except (OSError, ValueError, TypeError, AttributeError):
            plan = None
    per_hard = release.hard_restart_failovers if release is not None else 1
    return losses.budgets(lambda name: cfg.get(f"faults.{name}"), events, plan, brokers,
                          per_hard)


def model_for(cfg, release, folder: Path, events: list, **overrides):
    """(the model, its config) a run folder is held against: the release's preset, the config's
    budgets raised by what its killed brokers cost, ``overrides`` (config key -> value); no
    symmetry (a run names its clients, so states are not identified up to renaming them)."""
    model_cfg = cfg.with_values(**{"protocol.version": release.preset, "check.symmetry": False,
                                   **broker_losses(cfg, events, folder, release),
                                   **overrides})
    return registry.bind(model_cfg), model_cfg


def validate_folder(cfg, release, folder: Path, max_nodes: int | None = None, **overrides):
    """The run folder validated against the model of ``cfg`` with the release's preset (and
    ``overrides``: config key -> value): (Conformance, the model, its config, the events)."""
    events = read_run(folder)
    model, model_cfg = model_for(cfg, release, folder, events, **overrides)
    kw = {"max_nodes": max_nodes} if max_nodes else {}
    return validate(model, events, **kw), model, model_cfg, events
