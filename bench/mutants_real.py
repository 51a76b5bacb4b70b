"""The Kafka model's mutants held against real Kafka, both ways (issue 58 item 5).

    python bench/mutants_real.py runs FOLDER...            # way 1: recorded runs
    python bench/mutants_real.py counterexamples --version V [--out DIR] [MUTANT...]   # way 2

Way 1, a mutant that removes a behaviour: it is killed by a recorded run (``real conform``'s,
``real explore``'s) that conforms to the model of its release and not to the mutant (the run's
config with ``model.mutant``): real Kafka did what the mutant cannot.

Way 2, a mutant that adds a behaviour (a skipped check) stays inside every real run: its own
counterexample (``kafka-mc check tiny`` with the mutant, its settings on the release's preset,
the property it breaks) is executed on the release (``kafka-mc real reproduce``). It is killed
when the recording conforms to the release's model and to no behaviour of the mutant: real
Kafka refused the step the mutant allows; the reproduction's divergence (the step, the error
Kafka answered, the marker it did not write) is the evidence. This runs real Kafka: wrap it in
``flock /work/scratch/realkafka.lock``.

Prints one line per mutant and run (or counterexample) that settles it, and a JSON summary.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka_mc.explorers.cli.guided import _below
from kafka_mc.explorers.conformance import validate
from kafka_mc.explorers.guided import runs
from kafka_mc.model import registry

ROOT = Path(__file__).resolve().parents[1]
MAX_NODES = 200_000


def kafka_mutants() -> list:
    from kafka_mc.model.kafka.capabilities.mutants import MUTANTS   # bench code: the model's list
    return list(MUTANTS)


def way1(folders: list[Path], names: list[str]) -> dict:
    """mutant -> the first run that kills it (or None), over ``folders``' conforming runs."""
    found = [f for p in folders for f in _below(Path(p), 3)]
    conforming = []
    for f in found:
        try:
            verdict = json.loads((f / "conformance.json").read_text()).get("verdict")
        except (OSError, ValueError):
            verdict = None
        if verdict == "conforms":
            conforming.append(f)
    print(f"{len(conforming)} conforming runs of {len(found)}", file=sys.stderr)
    out = {}
    for name in names:
        started, killer = time.monotonic(), None
        for f in conforming:
            release, cfg = runs.recorded_run(f)
            events = runs.read_run(f)
            model, _ = runs.model_for(cfg, release, f, events, **{"model.mutant": name})
            r = validate(model, events, max_nodes=MAX_NODES)
            if r.verdict == "diverges":
                killer = {"run": str(f), "release": release.version,
                          "at": r.divergence.label if r.divergence else ""}
                break
        out[name] = killer
        print(f"{name:<40} {'killed by ' + killer['run'] if killer else 'not killed'} "
              f"({time.monotonic() - started:.0f} s){': ' + killer['at'][:120] if killer else ''}",
              flush=True)
    return out


def counterexample(m, preset: str, out: Path) -> Path | None:
    """The mutant's shortest counterexample on tiny with its settings on ``preset`` (None: the
    mutant breaks nothing there)."""
    settings = {k: v for k, v in m.settings.items() if k != "protocol.version"}
    args = [sys.executable, "-m", "kafka_mc", "check", "tiny", "--protocol", preset,
            "--invariant", m.invariant, "--out", str(out),
            "--set", f"model.mutant={m.name}",
            *[x for k, v in settings.items() for x in ("--set", f"{k}={json.dumps(v)}")]]
    r = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    trace = out / f"{m.invariant}.itf.json"
    return trace if r.returncode == 12 and trace.is_file() else None


def way2(version: str, names: list[str], out: Path) -> dict:
    from kafka_mc.realkafka import releases
    release = releases.release(version)
    by_name = {m.name: m for m in kafka_mutants()}
    result = {}
    for name in names:
        m = by_name[name]
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        trace = counterexample(m, release.preset, folder / "check")
        if trace is None:
            result[name] = {"settled": False, "why": f"no counterexample of {m.invariant} on "
                                                     f"tiny with {release.preset}"}
            print(f"{name:<40} no counterexample on {release.preset}", flush=True)
            continue
        started = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "kafka_mc", "real", "reproduce", str(trace),
                            "--version", version, "--out", str(folder / "real"), "--json"],
                           capture_output=True, text=True, cwd=ROOT)
        try:
            report = json.loads(r.stdout)
        except ValueError:
            result[name] = {"settled": False, "why": " ".join(r.stderr.split())[-300:]}
            print(f"{name:<40} reproduce failed: {result[name]['why']}", flush=True)
            continue
        conform = folder / "real" / "conform"
        release_, cfg = runs.recorded_run(conform)
        events = runs.read_run(conform)
        correct, _ = runs.model_for(cfg, release_, conform, events, **{"model.mutant": "none"})
        mutant, _ = runs.model_for(cfg, release_, conform, events)
        in_model = validate(correct, events, max_nodes=MAX_NODES).verdict
        in_mutant = validate(mutant, events, max_nodes=MAX_NODES).verdict
        killed = in_model == "conforms" and in_mutant == "diverges"
        result[name] = {"settled": killed, "verdict": report.get("verdict"),
                        "divergence": report.get("divergence"), "model": in_model,
                        "mutant": in_mutant, "steps": report.get("steps"),
                        "seconds": round(time.monotonic() - started, 1)}
        d = report.get("divergence") or {}
        print(f"{name:<40} {'killed' if killed else 'not killed'}: reproduce "
              f"{report.get('verdict')}, run in the model: {in_model}, in the mutant: "
              f"{in_mutant}" + (f"; Kafka refused at step {d.get('step')} {d.get('action')}: "
                                f"{str(d.get('what'))[:140]}" if d else ""), flush=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="way", required=True)
    a = sub.add_parser("runs")
    a.add_argument("folders", nargs="+")
    a.add_argument("--mutant", action="append", default=[])
    b = sub.add_parser("counterexamples")
    b.add_argument("mutants", nargs="*")
    b.add_argument("--version", required=True)
    b.add_argument("--out", default=None)
    args = ap.parse_args()
    names = [m.name for m in kafka_mutants()]
    if args.way == "runs":
        result = way1([Path(f) for f in args.folders], args.mutant or names)
    else:
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="mutants-"))
        result = way2(args.version, args.mutants or names, out)
    print(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
