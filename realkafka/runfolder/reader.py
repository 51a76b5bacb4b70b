"""The one reader of run folders: what ``kafka-mc real conform --run`` (and every other reader
of a recorded run) gets from a folder, checked before anything uses it.

``read(folder)`` opens each file through ``files`` (regular files of the folder only, size and
depth limits), checks each against its schema (``schema``), and says whether the run is
complete: its manifest says so and every file a validation reads has the digest the run
recorded. A folder that is not complete (interrupted, killed, a JVM that died, a file changed or
missing since) is refused (``FolderError``, one line, exit 2) unless ``partial`` asks for the
part that exists; then ``Recorded.missing`` says what is missing or changed, and the verdict
must say so. A folder written before manifests existed is complete when its parts are there
(``report.json`` with its end state was written last); a change to it cannot be seen, and the
verdict says that it was read by its files.

A run folder of ``real run`` holds ``run.json`` (release, seed, config), ``plan.json``, the
proxy's ``events.jsonl``, the client's ``history.jsonl`` and ``report.json`` (the end state in
``end_state``); a reproduction's ``conform/`` folder holds ``end_state.json`` instead of the
report and no plan.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kafka_mc.model.config import shown
from kafka_mc.realkafka.runfolder import files as fs, manifest
from kafka_mc.realkafka.runfolder.files import FolderError
from kafka_mc.realkafka.runfolder.schema import (END_STATE, PLAN, REPORT, RUN, SchemaError,
                                                 check_event, check_history)

MAX_SMALL = 1 << 20             # run.json, plan.json
MAX_LINES = manifest.MAX_INPUT  # events.jsonl, history.jsonl, report.json, end_state.json
INPUTS = ("run.json", "plan.json", "events.jsonl", "history.jsonl", "report.json",
          "end_state.json")


@dataclass(frozen=True)
class Recorded:
    """A run folder as read: ``run`` (run.json), ``plan`` (None: a reproduction's), the proxy's
    ``events`` and the client's ``history`` (each record as written), the ``end_state`` (None:
    missing) and ``missing``: what is missing or changed (empty: the run is complete)."""

    folder: Path
    run: dict
    plan: dict | None
    events: tuple
    history: tuple
    end_state: dict | None
    missing: tuple[str, ...] = ()
    manifest: bool = True       # False: recorded before run folders had one (read by its files)

    @property
    def complete(self) -> bool:
        return not self.missing

    def merged(self) -> list[dict]:
        """The events for validation: the proxy's and the client's merged on their shared clock
        (both count from the run's start), then the end state as one event after all others."""
        proxy = [dict(e, source="proxy") for e in self.events]
        client = [dict(e, source="client") for e in self.history]
        out = sorted(proxy + client, key=lambda e: (e["time"], e["source"] != "proxy"))
        if self.end_state is not None:
            out.append({**{k: self.end_state.get(k) for k in ("transactions", "logs", "offsets",
                                                              "producers")},
                        "type": "end_state", "source": "harness"})
        return out


def read(folder: str | os.PathLike, partial: bool = False, flag: str = "--run") -> Recorded:
    """The run folder ``folder`` (see the module docstring)."""
    path = fs.folder_path(folder, flag)
    where = f"{flag} {shown(path)}"
    try:
        if not path.is_dir():
            raise FolderError(f"{where}: not a run folder ("
                              f"{'no such folder' if not path.exists() else 'not a folder'})")
    except OSError as e:
        raise FolderError(f"{where}: {e.strerror or e}") from None
    doc = manifest.read(path)
    missing: list[str] = []
    if doc is not None:
        state, why = manifest.status(doc)
        if state == "running":
            raise FolderError(f"{where}: still being written ({why})")
        if doc["kind"] == "campaign":
            raise FolderError(f"{where}: a folder of runs (give one of its run folders: "
                              f"{', '.join(doc['folders'][:3]) or 'none'})")
        if state != "complete":
            missing.append(f"the run is incomplete: {why}")
        else:
            missing += _changed(path, doc)
    run = fs.read_json(path, "run.json", MAX_SMALL, RUN)
    if run is None:
        raise FolderError(f"{where}: not a run folder (no run.json)")
    plan = fs.read_json(path, "plan.json", MAX_SMALL, PLAN)
    if plan is None and "reproduced_from" not in run:
        missing.append("no plan.json (the failovers the run's budgets pay for are unknown)")
    events = _lines(path, "events.jsonl", check_event, partial, missing)
    if events is None:
        raise FolderError(f"{where}: not a run folder (no events.jsonl)")
    history = _lines(path, "history.jsonl", check_history, partial, missing)
    if history is None:
        missing.append("no history.jsonl (the client's calls are not observed)")
    end = read_end_state(path)
    if end is None:
        missing.append("no end state (report.json or end_state.json: the run did not finish)")
    if missing and doc is None:
        missing.insert(0, "a folder without a manifest (written before kafka-mc marked run "
                          "folders)")
    if missing and not partial:
        raise FolderError(f"{where}: {missing[-1] if doc is None else missing[0]}; validate "
                          "the part that exists with --partial")
    return Recorded(path, run, plan, tuple(events), tuple(history or ()), end, tuple(missing),
                    doc is not None)


def _changed(path: Path, doc: dict) -> list[str]:
    """The files a complete run recorded that are missing or changed since, and the files a
    validation reads that it did not record."""
    out = []
    for name, want in sorted(doc["digests"].items()):
        got = fs.digest(path, name, MAX_LINES)
        if got is None:
            out.append(f"{name} is missing (the run wrote it)")
        elif got != want:
            out.append(f"{name} changed since the run wrote it")
    for name in INPUTS:
        if name not in doc["digests"] and os.path.lexists(path / name):
            out.append(f"{name} is not one the run recorded (no digest in {manifest.NAME})")
    return out


def _lines(path: Path, name: str, check_one, partial: bool, missing: list) -> list | None:
    """The JSON objects of a JSON-lines file, each checked (None: no such file). A last line
    cut short (a run stopped while writing it) is dropped, and said, when ``partial``."""
    data = fs.read_bytes(path, name, MAX_LINES)
    if data is None:
        return None
    lines = data.split(b"\n")
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{shown(path)}: {name}:{n}"
        try:
            value = fs.parse_json(line, where)
        except FolderError:
            if partial and n == len(lines) and not data.endswith(b"\n"):
                missing.append(f"{name}'s last line is cut short")
                break
            raise
        if not isinstance(value, dict):
            raise FolderError(f"{where}: not a JSON object")
        try:
            check_one(value, "")
        except SchemaError as e:
            raise FolderError(f"{where}: {e}") from None
        out.append(value)
    return out


def read_end_state(path: Path) -> dict | None:
    """The run's end state (what the harness read once the run had settled): ``end_state.json``
    (a reproduction's) or ``report.json``'s ``end_state``; None when neither is there."""
    value = fs.read_json(path, "end_state.json", MAX_LINES, END_STATE)
    if value is not None:
        return value
    report = fs.read_json(path, "report.json", MAX_LINES, REPORT)
    if report is None:
        return None
    return report.get("end_state")
