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
Kafka answered, the marker it did not write) is the evidence. A mutant of the readers (whose
fetches no observation reads) is killed when the records its counterexample's consumer returns
were never returned by the real readers (``reads_refused``). This runs real Kafka: wrap it in
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
            try:
                model, _ = runs.model_for(cfg, release, f, events, **{"model.mutant": name})
            except KeyError:     # the rule it replaces is not in this config (a workload's)
                killer = False
                break
            r = validate(model, events, max_nodes=MAX_NODES)
            if r.verdict == "diverges":
                killer = {"run": str(f), "release": release.version,
                          "at": r.divergence.label if r.divergence else ""}
                break
        if killer is False:
            out[name] = None
            print(f"{name:<40} not applicable: its rule is not in these runs' config", flush=True)
            continue
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


def reads_refused(trace: Path, run: Path, report: dict) -> list[str]:
    """The records the trace's read_committed consumers return (its last state) that the real
    readers never returned: not at the trace's Fetch steps (steps.jsonl), not at the end
    (report.json's read_committed). The readers' fetches are not observations (the
    conformance mapping skips them), so a mutant of a reader is refuted by what the real
    readers returned, not by validation."""
    last = json.loads(trace.read_text())["states"][-1]
    want = {f"t{r['tid']}.i{r['instance']}.x{r['txn']}.r{r['n']}"
            for c in last.get("consumers", {}).get("#tup", ())
            for r in c.get("returned", {}).get("#tup", ())}
    got = {r.get("value") for r in (report.get("evidence") or {}).get("read_committed") or ()}
    try:
        for line in (run / "steps.jsonl").read_text().splitlines():
            got |= set(json.loads(line).get("read") or ())
    except OSError:
        pass
    return sorted(want - got)


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
        unread = reads_refused(trace, folder / "real", report)
        killed = in_model == "conforms" and (in_mutant == "diverges" or bool(unread))
        result[name] = {"settled": killed, "verdict": report.get("verdict"),
                        "reads_refused": unread,
                        "divergence": report.get("divergence"), "model": in_model,
                        "mutant": in_mutant, "steps": report.get("steps"),
                        "seconds": round(time.monotonic() - started, 1)}
        d = report.get("divergence") or {}
        if unread:
            print(f"{name:<40} the trace's readers return {unread}, real Kafka's never did",
                  flush=True)
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
