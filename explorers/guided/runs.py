"""Recorded runs of real Kafka as the validator reads them: a run folder's events (the proxy's
log and the client's history merged on their shared clock, then the end state), its release and
config (``run.json``), and the model it is held against (the release's preset, the config's
budgets raised by what the run's killed brokers cost).

A run folder is what ``kafka-mc real run`` / ``real conform`` write per seed (``run-<seed>/``:
run.json, plan.json, events.jsonl, history.jsonl, report.json) or ``real reproduce`` writes
under ``conform/`` (run.json, events.jsonl, history.jsonl, end_state.json), read through the one
reader of run folders (``kafka_mc.realkafka.runfolder``: an incomplete or changed run is refused
unless ``partial``). Bad input is ``RealUsageError`` or ``FolderError`` (one line, exit 2)."""
from __future__ import annotations

import json
from pathlib import Path

from kafka_mc.explorers.conformance import validate
from kafka_mc.model import registry
from kafka_mc.model.config import ConfigError, shown
from kafka_mc.realkafka import losses, releases, runfolder
from kafka_mc.realkafka.cli import RealUsageError


def read_run(folder: Path, partial: bool = False) -> list[dict]:
    """A run folder's events for validation (``runfolder.read``: the proxy's event log and the
    client history merged on their shared clock, then the end state)."""
    return runfolder.read(folder, partial).merged()


def end_state(folder: Path) -> list[dict]:
    """The run's end state as one event after all others (``type`` ``end_state``: what the
    harness read once the run had settled: DescribeTransactions, the partitions' logs, producer
    states and offsets), from ``end_state.json`` or ``report.json``'s ``end_state``; none when
    the run wrote neither (it did not finish)."""
    value = runfolder.read_end_state(Path(folder))
    if value is None:
        return []
    return [{**{k: value.get(k) for k in ("transactions", "logs", "offsets", "producers")},
             "type": "end_state", "source": "harness"}]


def is_run_folder(folder: Path) -> bool:
    return folder.is_dir() and (folder / "run.json").is_file() \
        and (folder / "events.jsonl").is_file()


def release_and_config(recorded: runfolder.Recorded, wanted: str | None = None):
    """The release and config a recorded run names (its run.json); ``wanted``, a release the
    run must have been made on."""
    where = f"--run {shown(recorded.folder)}"
    version = recorded.run["version"]
    if wanted and wanted != version:
        raise RealUsageError(f"{where} was recorded on Kafka {shown(version, 20)}, "
                             f"not {shown(wanted, 20)}")
    release = releases.recorded(recorded.run)
    if release is None:
        raise RealUsageError(f"{where}: Kafka {shown(version, 20)} is not a supported release")
    try:
        cfg = registry.from_dict(recorded.run["config"], f"{recorded.folder}/run.json")
    except ConfigError as e:
        raise RealUsageError(f"{where}: run.json's config: {e}") from None
    if cfg.model != "kafka":
        raise RealUsageError(f"{where}: run.json's config is of model "
                             f"{shown(cfg.model, 20)!r}, not kafka")
    return release, cfg


def recorded(folder: Path, partial: bool = False):
    """(release, config, run.json's values) of the run folder ``folder``; ``RealUsageError``
    or ``FolderError`` when it is none."""
    rec = runfolder.read(folder, partial)
    release, cfg = release_and_config(rec)
    return release, cfg, rec.run


def recorded_run(folder: Path, partial: bool = False):
    """(release, config) of a run folder (its run.json); ``FolderError`` or
    ``RealUsageError`` when it is none."""
    return release_and_config(runfolder.read(folder, partial))


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
    try:
        model_cfg = cfg.with_values(**{"protocol.version": release.preset,
                                       "check.symmetry": False,
                                       **broker_losses(cfg, events, Path(folder), release),
                                       **overrides})
    except ConfigError as e:
        raise RealUsageError(f"--run {shown(folder)}: the run's budgets, raised by what its "
                             f"killed brokers cost, are not a config the model takes ({e})"
                             ) from None
    return registry.bind(model_cfg), model_cfg


def validate_folder(cfg, release, folder, max_nodes: int | None = None, partial: bool = False,
                    **overrides):
    """The run folder validated against the model of ``cfg`` with the release's preset (and
    ``overrides``: config key -> value): (Conformance, the model, its config, the events).
    ``folder`` is a path or a ``runfolder.Recorded`` already read."""
    rec = folder if isinstance(folder, runfolder.Recorded) else runfolder.read(folder, partial)
    events = rec.merged()
    model, model_cfg = model_for(cfg, release, rec.folder, events, **overrides)
    kw = {"max_nodes": max_nodes} if max_nodes else {}
    return validate(model, events, **kw), model, model_cfg, events
