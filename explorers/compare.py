"""``kafka-mc compare``: the same client workloads and fault budgets on every transactional
messaging model, and one table of which claims hold, which fail (with the shortest
counterexample of each) and what each costs to check (model/comparison.py holds the claims and
workloads; a model takes part through its ``ModelEntry.claims`` and ``.comparison``).

Each (model, workload) runs as ``kafka-mc check``, in a process of its own (a search's memory is
returned when it ends, and the result is exactly what a user gets by running the command):
safety claims by the BFS with ``--continue`` and no partial-order reduction, so each violated
property gets its own shortest counterexample of the full graph; the liveness claim by the graph
explorer, whose fair lassos need the whole graph. Counterexamples are written under ``--out``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from kafka_mc.model import registry
from kafka_mc.model.comparison import CLAIMS, LIVENESS, WORKLOADS, Claim, Workload, config_sections


class CompareError(ValueError):
    """A bad request (an unknown model or workload): one line."""


@dataclass(frozen=True)
class Cell:
    """One claim of one model on one workload: ``holds``, ``fails``, ``not claimed``, ``not run``
    (the system has no such workload) or ``error`` (the check did not finish)."""
    verdict: str
    steps: int | None = None          # fails: the shortest counterexample's length
    property: str | None = None       # fails: the property that failed first (shortest)
    trace: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Cost:
    states: int
    transitions: int
    seconds: float


@dataclass
class Comparison:
    models: tuple[str, ...]
    workloads: tuple[str, ...]
    cells: dict[tuple[str, str, str], Cell] = field(default_factory=dict)  # (model, workload, claim)
    costs: dict[tuple[str, str], Cost] = field(default_factory=dict)       # (model, workload)

    def to_json(self) -> dict:
        return {"models": list(self.models), "workloads": list(self.workloads),
                "claims": dict(CLAIMS),
                "cells": [{"model": m, "workload": w, "claim": c, **asdict(cell)}
                          for (m, w, c), cell in self.cells.items()],
                "costs": [{"model": m, "workload": w, **asdict(cost)}
                          for (m, w), cost in self.costs.items()]}


def participants(names: Sequence[str] | None = None) -> tuple[str, ...]:
    """The registered models that declare claims (all of them, or ``names`` in that order)."""
    known = registry.models()
    taking_part = [n for n, e in known.items() if e.claims and e.comparison]
    if not names:
        return tuple(taking_part)
    for n in names:
        if n not in known:
            raise CompareError(f"--model {n}: no such model (kafka-mc list models)")
        if n not in taking_part:
            raise CompareError(f"--model {n}: the model declares no claims for kafka-mc compare "
                               "(ModelEntry.claims and .comparison, model/comparison.py)")
    return tuple(dict.fromkeys(names))


def workloads(names: Sequence[str] | None = None) -> tuple[Workload, ...]:
    by_name = {w.name: w for w in WORKLOADS}
    for n in names or ():
        if n not in by_name:
            raise CompareError(f"--workload {n}: no such workload (one of: "
                               f"{', '.join(by_name)})")
    return tuple(by_name[n] for n in dict.fromkeys(names)) if names else WORKLOADS


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r}")


def config_text(model: str, overrides: Mapping[str, Any]) -> str:
    """A configuration file for ``model`` with ``overrides`` (``{"section.key": value}``)."""
    sections = config_sections({"model.name": model, **overrides})
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in values.items()]
        lines.append("")
    return "\n".join(lines)


def _check(config: Path, args: list[str], timeout: float) -> dict:
    cmd = [sys.executable, "-m", "kafka_mc.explorers.cli", "check", str(config), "--json", *args]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:g} s"}
    try:
        return json.loads(run.stdout)
    except ValueError:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {run.returncode}: {last}"}


def _cells(result: dict, claims: Mapping[str, Claim], names: Sequence[str]) -> dict[str, Cell]:
    if "error" in result:
        return {c: Cell("error", note=result["error"]) for c in names}
    failed = {v["property"]: v for v in result.get("violations", [])}
    out = {}
    for c in names:
        hits = sorted((failed[p] for p in claims[c].properties if p in failed),
                      key=lambda v: (v.get("steps") or 0, v["property"]))
        if hits:
            v = hits[0]
            out[c] = Cell("fails", v.get("steps"), v["property"], v.get("trace"))
        elif not result.get("complete", True):
            out[c] = Cell("error", note="the search did not complete")
        else:
            out[c] = Cell("holds")
    return out


def settings(pairs: Sequence[str] | None, models: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``MODEL:SECTION.KEY=VALUE`` flags -> {model: {"section.key": value}}; a value is TOML
    (``3``, ``true``, ``"x"``) or, failing that, a bare string."""
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs or ():
        model, sep, rest = pair.partition(":")
        key, eq, value = rest.partition("=")
        if not sep or not eq or "." not in key or not model:
            raise CompareError(f"--set {pair}: expected MODEL:SECTION.KEY=VALUE")
        if model not in models:
            raise CompareError(f"--set {pair}: model {model} is not compared")
        try:
            parsed = tomllib.loads(f"v = {value}")["v"]
        except (tomllib.TOMLDecodeError, RecursionError, ValueError):
            parsed = value
        out.setdefault(model, {})[key.strip()] = parsed
    return out


def compare(models: Sequence[str] | None = None, workload_names: Sequence[str] | None = None,
            out: Path | None = None, timeout: float = 600.0, progress=None,
            sets: Sequence[str] | None = None) -> Comparison:
    """Run every workload on every participating model (with ``sets``: per-model configuration
    overrides, e.g. ``kafka:protocol.version=kafka-0.11``); the comparison."""
    names, chosen = participants(models), workloads(workload_names)
    extra = settings(sets, names)
    cmp = Comparison(names, tuple(w.name for w in chosen))
    with tempfile.TemporaryDirectory(prefix="kafka-mc-compare-") as tmp:
        for m in names:
            entry = registry.entry(m)
            claims: Mapping[str, Claim] = {c: entry.claims.get(c, Claim(note="not declared"))
                                           for c in CLAIMS}
            for w in chosen:
                overrides = entry.comparison(w)
                if overrides is None:
                    for c in CLAIMS:
                        cmp.cells[m, w.name, c] = Cell("not run", note="no such workload")
                    continue
                config = Path(tmp) / f"{m}-{w.name}.toml"
                config.write_text(config_text(m, {**overrides, **extra.get(m, {})}))
                traces = (out / m / w.name) if out else Path(tmp) / "out" / m / w.name
                claimed = [c for c in CLAIMS if claims[c].claimed]
                for c in CLAIMS:
                    if not claims[c].claimed:
                        cmp.cells[m, w.name, c] = Cell("not claimed", note=claims[c].note)
                safety = [c for c in claimed if c not in LIVENESS]
                live = [c for c in claimed if c in LIVENESS]
                if progress:
                    progress(f"{m} / {w.name}")
                if safety:
                    props = [p for c in safety for p in claims[c].properties]
                    result = _check(config, ["--explorer", "bfs", "--continue", "--no-por",
                                             "--no-deadlock", "--out", str(traces),
                                             *[a for p in dict.fromkeys(props)
                                               for a in ("--invariant", p)]], timeout)
                    cmp.cells.update({(m, w.name, c): cell for c, cell in
                                      _cells(result, claims, safety).items()})
                    if "stats" in result:
                        s = result["stats"]
                        cmp.costs[m, w.name] = Cost(s["distinct"], s["generated"], s["seconds"])
                for c in live:
                    props = claims[c].properties
                    result = _check(config, ["--explorer", "graph", "--no-deadlock", "--out",
                                             str(traces),
                                             *[a for p in props for a in ("--invariant", p)]],
                                    timeout)
                    cmp.cells.update({(m, w.name, c): cell for c, cell in
                                      _cells(result, claims, [c]).items()})
    return cmp


def table(cmp: Comparison) -> str:
    """The comparison as Markdown: one row per claim, one column per model, each cell the
    verdicts on the workloads; then the cost of each check."""
    def cell_text(m: str, c: str) -> str:
        cells = {w: cmp.cells[m, w, c] for w in cmp.workloads if (m, w, c) in cmp.cells}
        if any(cell.verdict == "not claimed" for cell in cells.values()):
            return "not claimed"
        parts = [f"fails on {w} ({cell.steps} steps, `{cell.property}`)"
                 if cell.verdict == "fails" else f"{cell.verdict} on {w}: {cell.note}"
                 for w, cell in cells.items() if cell.verdict not in ("holds", "not run")]
        held = [w for w, cell in cells.items() if cell.verdict == "holds"]
        skipped = [w for w, cell in cells.items() if cell.verdict == "not run"]
        if held:
            parts.append("holds" + ("" if len(held) == len(cells) - len(skipped) and not parts
                                    else " on " + ", ".join(held)))
        if skipped:
            parts.append("not run on " + ", ".join(skipped))
        return "; ".join(parts)

    lines = ["| claim | " + " | ".join(cmp.models) + " |",
             "|---|" + "---|" * len(cmp.models)]
    for c in CLAIMS:
        lines.append(f"| {c} | " + " | ".join(cell_text(m, c) for m in cmp.models) + " |")
    lines += ["", "| model | workload | states | transitions | seconds |", "|---|---|---|---|---|"]
    for (m, w), cost in cmp.costs.items():
        lines.append(f"| {m} | {w} | {cost.states:,} | {cost.transitions:,} | "
                     f"{cost.seconds:.2f} |")
    notes = sorted({(m, c, cell.note) for (m, _, c), cell in cmp.cells.items()
                    if cell.verdict == "not claimed" and cell.note})
    if notes:
        lines += ["", "Not claimed:"]
        lines += [f"- {m}, {c}: {note}" for m, c, note in notes]
    return "\n".join(lines) + "\n"
