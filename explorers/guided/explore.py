"""Directed runs (issue 58 item 3): ``kafka-mc real explore CONFIG --version V [--budget N]
[--out DIR]`` drives real Kafka towards the model's coverage classes no run has witnessed.

Until the budget (real runs) is spent or no class is left: pick a class not witnessed yet, by
its shortest model path among the paths the harness can drive (``reach`` with only the
actions ``kafka_mc.realkafka.reproduce`` runs: a class whose every path found takes another is
*cannot be driven from outside*, naming the step): the one whose path takes the most classes not
witnessed yet, then the shortest (``next_target``), execute that path on a fresh cluster with the
reproduce machinery (``run_path``: the proxy's holds, the client's calls), validate the recorded
run, and record the outcome:

| outcome | what |
|---|---|
| ``witnessed`` | a behaviour the run conforms to takes the class (``all``: every one does) |
| ``missed`` | the run conforms, but no behaviour it conforms to takes the class: real Kafka went another way (``left the path at step k`` when a step's awaited effect never came: the reason) |
| ``diverged`` | the run conforms to no behaviour of the model: a divergence, kept and acted on as conformance's (``docs/conformance.md``) |
| ``undecided`` | the validator's node limit came first |
| ``cannot-drive`` | the harness cannot run a step of the path (no run spent) |
| ``harness-error`` | the run could not be made (a JVM, a port: the reason) |

Every class the run's behaviour takes counts as witnessed, not only the target (the path's
prefix is witnessed too). Each run is a folder under ``--out`` (``NNN-<class>/``: ``path.itf.json``,
the reproduction's files, ``conform/`` with ``conformance.json`` and ``behaviour.itf.json``, so
``kafka-mc real coverage OUT`` counts it); ``explore.json`` is rewritten after each run, so a
session stopped with Ctrl-C keeps what it witnessed, and a new session on the same ``--out``
starts from it (and from the runs of ``--runs FOLDER``: a campaign's).
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from kafka_mc.explorers.conformance import Fold, validate, write_trace
from kafka_mc.explorers.guided import coverage as cov, runs

OUTCOMES = ("witnessed", "missed", "diverged", "undecided", "cannot-drive", "harness-error")
MAX_NODES = 100_000   # per search of a run's judgement (three at most): a run of a short path


@dataclass
class Attempt:
    """One class tried: its outcome (``OUTCOMES``), why, and what the run witnessed."""

    cls: str
    outcome: str
    why: str = ""
    steps: int = 0
    seconds: float = 0.0
    folder: str = ""
    new: list = field(default_factory=list)     # classes this run witnessed first


@dataclass
class Exploration:
    """A session's state: the classes the model reaches (``reached``) and the drivable ones,
    what is witnessed (class -> runs), the attempts in order."""

    version: str
    preset: str
    reached: dict
    drivable: dict
    witnessed: dict = field(default_factory=dict)
    attempts: list = field(default_factory=list)
    runs: int = 0
    interrupted: bool = False

    def coverage(self) -> float:
        seen = [c for c in self.reached if self.witnessed.get(c)]
        return len(seen) / len(self.reached) if self.reached else 0.0

    def to_dict(self) -> dict:
        return {"version": self.version, "preset": self.preset, "runs": self.runs,
                "interrupted": self.interrupted, "reached": len(self.reached),
                "witnessed": sum(1 for c in self.reached if self.witnessed.get(c)),
                "coverage": round(self.coverage(), 4),
                "attempts": [asdict(a) for a in self.attempts],
                "never_witnessed": [{"class": c, "why": self.why_not(c)}
                                    for c in self.reached if not self.witnessed.get(c)]}

    def why_not(self, c: str) -> str:
        tried = [a for a in self.attempts if a.cls == c]
        if tried:
            return f"{tried[-1].outcome}: {tried[-1].why}"
        if c not in self.drivable:
            return "cannot-drive: no path found takes only steps the harness runs"
        return "not tried (budget)"


def slug(c: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", c).strip("-")[:60]


def taking(c: str, model) -> tuple[Fold, Fold]:
    """(takes, avoids): folds accepting a behaviour that takes class ``c``, one that does not."""
    def step(v, s, a, t):
        return v or c in model.coverage(s, a, t)
    return (Fold(lambda s: False, step, accept=bool),
            Fold(lambda s: False, step, accept=lambda v: not v, dead=bool))


def judge_run(folder: Path, c: str, max_nodes: int) -> tuple[str, str, frozenset]:
    """(outcome, why, the classes of the behaviour kept) of a directed run's recording ``folder``
    (its ``conform/``), which gets ``conformance.json`` and ``behaviour.itf.json``."""
    release, cfg = runs.recorded_run(folder)
    events = runs.read_run(folder)
    model, model_cfg = runs.model_for(cfg, release, folder, events)
    takes, avoids = taking(c, model)
    found = validate(model, events, max_nodes=max_nodes, fold=takes)
    if found.conforms:
        other = validate(model, events, max_nodes=max_nodes, fold=avoids)
        outcome, why = "witnessed", ("every behaviour the run conforms to takes it"
                                     if other.verdict == "diverges" else
                                     "a behaviour the run conforms to takes it")
    else:
        found = validate(model, events, max_nodes=max_nodes)
        outcome, why = {"conforms": ("missed", "the run conforms, taking other branches"),
                        "diverges": ("diverged", "the run conforms to no behaviour of the model"),
                        "unknown": ("undecided", f"node limit {max_nodes}")}[found.verdict]
    (folder / "conformance.json").write_text(json.dumps(found.to_dict(), indent=1) + "\n")
    if not found.conforms:
        return outcome, why, frozenset()
    write_trace(found, model, model_cfg, folder / "behaviour.itf.json")
    classes, _ = cov.behaviour_classes(model, found.states, found.actions,
                                       cov.unwitnessable(model))
    return outcome, why, classes


def path_trace(model, model_cfg, path, file: Path) -> int:
    """The model path (successor indices) written as an ITF trace a reproduction reads; its
    number of steps."""
    from kafka_mc.explorers.conformance import Conformance
    states, actions = cov.walk(model, path)
    c = Conformance("conforms", 0, 0, 0, 0, 0.0, states=states, actions=actions,
                    steps=tuple(-1 for _ in actions))
    write_trace(c, model, model_cfg, file, source="kafka-mc real explore")
    return len(actions)


def explore(ex: Exploration, model, model_cfg, release, budget: int, out: Path,
            run: Callable, log, max_nodes: int = MAX_NODES, brokers: int = 1) -> Exploration:
    """The directed loop of the module's docstring; ``run(trace_file, folder)`` executes a
    path on real Kafka (``kafka_mc.realkafka.reproduce.run_path``) and returns its notes of
    divergence, or raises ``CannotDrive`` / ``HarnessError``. ``KeyboardInterrupt`` stops it,
    with what was done saved."""
    tried = {a.cls for a in ex.attempts}
    for c in [c for c in ex.reached if c not in ex.drivable and c not in tried]:
        ex.attempts.append(Attempt(c, "cannot-drive", undrivable(model, ex.reached[c], brokers)))
    save(ex, out)
    along = {c: path_classes(model, p) for c, p in ex.drivable.items()}
    start = ex.runs
    try:
        while ex.runs - start < budget:
            c = next_target(ex, along, tried)
            if c is None:
                break
            ex.attempts.append(_attempt(ex, c, model, model_cfg, out, run, log, max_nodes))
            tried.add(c)
            save(ex, out)
            a = ex.attempts[-1]
            log(f"[{ex.runs - start}/{budget}] {c[:70]}: {a.outcome} ({a.seconds:.0f} s"
                + (f", {len(a.new)} new" if a.new else "") + f"); witnessed "
                f"{sum(1 for x in ex.reached if ex.witnessed.get(x))}/{len(ex.reached)} "
                f"({ex.coverage():.0%})")
    except KeyboardInterrupt:
        ex.interrupted = True
        save(ex, out)
        raise
    save(ex, out)
    return ex


def path_classes(model, path) -> frozenset:
    """The classes a model path takes, every step's."""
    states, actions = cov.walk(model, path)
    return cov.behaviour_classes(model, states, actions)[0]


def next_target(ex: Exploration, along: dict, tried: set) -> str | None:
    """The class to drive to next: of those not witnessed nor tried, the one whose path takes
    the most classes not witnessed yet (a run witnesses its path's prefix too: Mocket's paths
    covering edges), then the shortest path, then by name; None when none is left."""
    left = [c for c in ex.drivable if not ex.witnessed.get(c) and c not in tried]
    if not left:
        return None

    def gain(c):
        return sum(1 for x in along[c] if x in ex.reached and not ex.witnessed.get(x))
    return min(left, key=lambda c: (-gain(c), len(ex.drivable[c]), c))


def undrivable(model, path, brokers: int) -> str:
    """Why the harness cannot drive the class at the end of ``path`` (none of the paths the
    search found avoids the step this names)."""
    from kafka_mc.realkafka import reproduce as repro
    _, actions = cov.walk(model, path)
    for i, a in enumerate(actions, 1):
        encoded = model.itf_encode_action(a)
        if not repro.drivable(encoded, brokers):
            why = ("has no real counterpart in the harness" if a[0] not in repro.SUPPORTED
                   else "needs a partition on a broker of its own (--brokers 3)")
            return f"its path takes {model.format_action(a)[:80]} (step {i}), which {why}"
    return "no path found takes only steps the harness runs"


class CannotDrive(Exception):
    """The path has a step the harness cannot run on this cluster."""


class HarnessError(Exception):
    """The run could not be made."""


def _attempt(ex: Exploration, c: str, model, model_cfg, out: Path, run, log,
             max_nodes: int) -> Attempt:
    started = time.monotonic()
    folder = out / f"{ex.runs + 1:03d}-{slug(c)}"
    # the path is written beside the run's folder and moved into it after the run: the folder
    # is a run folder (kafka_mc.realkafka.runfolder), taken only when new or empty
    path = out / f"{folder.name}.path.itf.json"
    steps = path_trace(model, model_cfg, ex.drivable[c], path)
    try:
        left = run(path, folder)
    except CannotDrive as e:
        return Attempt(c, "cannot-drive", str(e), steps, time.monotonic() - started, str(folder))
    except HarnessError as e:
        ex.runs += 1
        return Attempt(c, "harness-error", str(e), steps, time.monotonic() - started,
                       str(folder))
    finally:
        folder.mkdir(parents=True, exist_ok=True)
        os.replace(path, folder / "path.itf.json")
    ex.runs += 1
    outcome, why, classes = judge_run(folder / "conform", c, max_nodes)
    if left and outcome != "witnessed":
        why = f"{why}; {left}"
    new = sorted(x for x in classes if not ex.witnessed.get(x))
    for x in classes:
        ex.witnessed[x] = ex.witnessed.get(x, 0) + 1
    if outcome == "witnessed" and c not in classes:   # another behaviour took it
        ex.witnessed[c] = ex.witnessed.get(c, 0) + 1
        new.append(c)
    return Attempt(c, outcome, why, steps, round(time.monotonic() - started, 1), str(folder),
                   new)


def save(ex: Exploration, out: Path) -> None:
    """explore.json, written atomically."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".explore.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({**ex.to_dict(), "witnessed_classes": ex.witnessed}, indent=1)
                   + "\n")
    os.replace(tmp, out / "explore.json")


def resumed(out: Path) -> tuple[list[Attempt], int]:
    """The attempts and runs of a previous session on ``out`` (none: a fresh one)."""
    try:
        d = json.loads((out / "explore.json").read_text())
        return [Attempt(**a) for a in d.get("attempts") or ()], int(d.get("runs") or 0)
    except (OSError, ValueError, TypeError):
        return [], 0


def table(ex: Exploration) -> list[str]:
    """The final table: each attempt, then what stays unwitnessed and why."""
    lines = [f"Kafka {ex.version} (preset {ex.preset}): {ex.runs} directed runs; witnessed "
             f"{sum(1 for c in ex.reached if ex.witnessed.get(c))} of the {len(ex.reached)} "
             f"classes the model reaches ({ex.coverage():.0%})"
             + (" (interrupted)" if ex.interrupted else "")]
    width = min(max((len(a.cls) for a in ex.attempts), default=10), 80)
    lines.append(f"  {'class':<{width}} {'outcome':<13} {'steps':>5} {'s':>4} {'new':>4}  why")
    for a in ex.attempts:
        if a.outcome == "cannot-drive" and not a.folder:
            continue
        lines.append(f"  {a.cls[:width]:<{width}} {a.outcome:<13} {a.steps:>5} "
                     f"{a.seconds:>4.0f} {len(a.new):>4}  {a.why[:100]}")
    never = [c for c in ex.reached if not ex.witnessed.get(c)]
    if never:
        lines.append(f"  never witnessed ({len(never)}):")
        lines += [f"    {c}: {ex.why_not(c)[:140]}" for c in never]
    return lines
