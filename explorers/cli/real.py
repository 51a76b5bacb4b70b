"""``kafka-mc real``: real Apache Kafka (``realkafka``), and the commands of the group that need an
explorer, so they live here, above both: ``real conform``, which holds real runs against the
model with the trace validator (``kafka_mc.explorers.conformance``), and model-guided testing
(``kafka_mc.explorers.cli.guided``: ``real reproduce``'s verdict, ``real coverage``, ``real
explore``).

    kafka-mc real conform [CONFIG] (--version V | --kafka-home DIR [--protocol P]) [--runs N]
                          [--seed S] [--out DIR] [--json]
    kafka-mc real conform --run DIR [--partial] [--json]

N runs of the config's workload and seeded faults on a real cluster of release V (seeds S, S+1,
...), each validated against the model with the preset V stands for and the config's budgets as
the model's budgets. ``--run DIR`` validates a run folder recorded before (by ``real run``,
``real conform`` or ``real reproduce``'s ``conform/``) instead, with the release and config it
names, read by the one reader of run folders (``kafka_mc.realkafka.runfolder``): an incomplete
or changed run is refused unless ``--partial`` asks to validate the part that exists (then the
verdict says so and is never "conforms"). The verdict is printed before any file is written
into the folder (``conformance.json``, ``behaviour.itf.json`` for a complete conforming run, a
stale one removed); a file that cannot be written is one line after it, the exit code the
verdict's. Exit 0 every run conforms, 16 a run diverges, 14 a validation reached its node limit
undecided or validated only part of a run, 2 bad input, 69 a run could not finish (an outside
failure), 130/143 interrupted.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from kafka_mc.model.capabilities import MissingCapability
from kafka_mc.model.config import shown
from kafka_mc.model.observations import NoObservations
from kafka_mc.explorers.conformance import RunError, behaviour
from kafka_mc.explorers.cli import guided
from kafka_mc.explorers.core.result import EXIT_DIVERGENCE, EXIT_INCONCLUSIVE, EXIT_OK
from kafka_mc.explorers.guided.runs import (end_state, read_run, recorded_run,  # noqa: F401
                                            release_and_config, validate_folder)
from kafka_mc.realkafka import cli as real_cli, runfolder

CONFORMANCE, BEHAVIOUR = "conformance.json", "behaviour.itf.json"


def _positive(text: str) -> int:
    """``--max-nodes N``: a node limit of at least 1 (0 is no limit nowhere else either)."""
    import argparse
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a node limit (at least 1)")
    return value


def add_parser(sub) -> None:
    real = real_cli.add_parser(sub)
    c = real.subcommands.add_parser(
        "conform", help="real runs of a config validated against the model (trace validation)")
    c.add_argument("config", nargs="?", metavar="CONFIG",
                   help="TOML file or name of a shipped config (default: tiny)")
    real_cli.kafka_arguments(c, version_help="the release to run (with --run: must be the one "
                                             "the run was made on)")
    c.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", dest="sets",
                   help="override a configuration value (repeatable)")
    c.add_argument("--run", metavar="DIR", dest="run_dir",
                   help="validate this recorded run folder instead of making new runs")
    c.add_argument("--partial", action="store_true",
                   help="with --run: validate an incomplete or changed run folder as it is; "
                        "the verdict names what is missing (exit 14 if it conforms so far)")
    c.add_argument("--runs", type=int, default=1, metavar="N",
                   help="how many runs (seeds S, S+1, ...)")
    c.add_argument("--seed", type=int, default=0, metavar="S", help="the first run's seed")
    real_cli.brokers_argument(c)
    c.add_argument("--out", metavar="DIR", help="default: out/conform-<version>")
    c.add_argument("--max-nodes", type=_positive, default=None, metavar="N",
                   help="the validator's node limit per run (at least 1)")
    c.add_argument("--json", action="store_true", help="print one JSON summary object")
    guided.add_parsers(real)


def main(args) -> int:
    command = getattr(args, "real_command", None)
    more = (NoObservations, MissingCapability, RunError)
    if command == "conform":
        return real_cli.guarded(conform, args, more)
    if command in guided.COMMANDS:
        return real_cli.guarded(guided.main, args, more)
    return real_cli.main(args)


# --- the command --------------------------------------------------------------------------------

def conform(args) -> int:
    if args.runs < 1:
        raise real_cli.RealUsageError(f"--runs {args.runs}: at least 1")
    started = time.monotonic()
    if args.run_dir is not None:
        if args.config or args.sets or getattr(args, "kafka_home", None) or \
                getattr(args, "protocol", None):
            raise real_cli.RealUsageError("--run validates the run with its own config and "
                                          "Kafka: give no CONFIG, --set, --kafka-home or "
                                          "--protocol")
        recorded = runfolder.read(args.run_dir, args.partial)
        release, cfg = release_and_config(recorded, getattr(args, "kafka_version", None))
        row, write = _validate(cfg, release, recorded, None, args)
        code = _report([row], release, recorded.folder, args, started)
        write()             # the verdict is out first: a file that cannot be written loses none
        return code
    if args.partial:
        raise real_cli.RealUsageError("--partial validates a recorded run: give --run DIR")
    if not args.kafka_version and not getattr(args, "kafka_home", None):
        raise real_cli.RealUsageError("real conform needs --version V, --kafka-home DIR or "
                                      "--run DIR")
    return _campaign(args, started)


def _campaign(args, started) -> int:
    """N new runs, each validated as it is made; every seed's plan checked before the first
    runs, the folder (``--out``) taken as a run folder of runs."""
    from kafka_mc.realkafka.plan import check_brokers, make_plan
    from kafka_mc.realkafka.run import run
    release = real_cli.kafka(args)
    real_cli._java()
    cfg = real_cli._load(args)
    seeds = [args.seed + i for i in range(args.runs)]
    for seed in seeds:          # a later seed refused after hours of runs is refused now
        check_brokers(make_plan(cfg, seed, transaction_version=release.transaction_version),
                      args.brokers)
    out = args.out if args.out is not None else Path("out") / f"conform-{release.version}"
    log = _log(args)
    rows = []
    with runfolder.RunFolder.take(out, "campaign", folders=[f"run-{s}" for s in seeds]) as camp:
        for seed in seeds:
            camp.phase = f"running seed {seed}"
            result = run(cfg, release, seed, camp.path / f"run-{seed}", brokers=args.brokers,
                         log=log)
            camp.phase = f"validating seed {seed}"
            row, write = _validate(cfg, release, runfolder.read(result.out), result, args)
            rows.append(row)
            write()
            log(_progress(rows, len(seeds), started))
        try:
            camp.complete()
        except OSError as e:
            raise runfolder.RunFailed(f"cannot write in {shown(camp.path)} "
                                      f"({e.strerror or e})") from None
    return _report(rows, release, camp.path, args, started)


def _progress(rows, runs: int, started: float) -> str:
    """A campaign's progress line after each run (issue 59): runs done of how many, the verdicts
    so far, the time spent and, at the mean time a run took, the time left."""
    done = len(rows)
    counts = {v: sum(r["verdict"] == v for r in rows)
              for v in ("conforms", "diverges", "unknown", "partial")}
    spent = time.monotonic() - started
    left = spent / done * (runs - done)
    return (f"[{done}/{runs}] {counts['conforms']} conforming, {counts['diverges']} divergent, "
            f"{counts['unknown'] + counts['partial']} undecided; {spent:.0f} s spent, about "
            f"{left:.0f} s left")


def _log(args):
    return (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))


def _validate(cfg, release, recorded: runfolder.Recorded, result, args):
    """One recorded run validated against the model with the release's preset and the
    config's budgets: (its row, a function writing its verdict into the folder). The row says
    ``partial`` for a run validated only in part (never ``conforms``)."""
    verdict, model, model_cfg, events = validate_folder(cfg, release, recorded, args.max_nodes)
    seed = recorded.run["seed"]
    log = _log(args)
    shown_verdict = verdict.verdict
    if not recorded.complete and verdict.conforms:
        shown_verdict = "partial"
    head = verdict.summary() if recorded.complete else \
        f"{shown_verdict}: {verdict.summary().split(': ', 1)[1]}"
    log(f"run {seed}: {head}")
    for why in recorded.missing:
        log(f"  not validated: {why}")
    if not recorded.manifest:
        log("  read by its files: recorded before run folders had a manifest (a change to "
            "them since cannot be seen)")
    if verdict.divergence is not None:
        for line in verdict.divergence.report():
            log(f"  {line}")
    row = {"seed": seed, "events": len(events), "verdict": shown_verdict,
           "run_seconds": round(result.seconds, 1) if result is not None else None,
           "validation_seconds": round(verdict.seconds, 2),
           "anomalies": [a.name for a in result.anomalies] if result is not None else None,
           "folder": str(recorded.folder)}
    if recorded.missing:
        row["missing"] = list(recorded.missing)

    def write():
        _write_verdict(recorded, verdict, shown_verdict, model, model_cfg)
    return row, write


def _write_verdict(recorded, verdict, shown_verdict, model, model_cfg) -> None:
    """``conformance.json`` (and, for a complete run that conforms, ``behaviour.itf.json``; a
    behaviour of an earlier validation removed otherwise) written into the run folder, each
    whole or not at all, never through a link or into a FIFO; listed in its manifest. A write
    that fails is one line on stderr (the verdict is already out)."""
    from kafka_mc.realkafka.runfolder import files as fs
    folder = recorded.folder
    doc = verdict.to_dict()
    if recorded.missing:
        doc.update(verdict=shown_verdict, complete=False, missing=list(recorded.missing))
    written, removed = [CONFORMANCE], []
    try:
        fs.write_json(folder, CONFORMANCE, doc)
        if verdict.conforms and recorded.complete:
            fs.write(folder, BEHAVIOUR, behaviour(verdict, model, model_cfg).to_json(model))
            written.append(BEHAVIOUR)
        else:
            fs.remove(folder, BEHAVIOUR)
            removed.append(BEHAVIOUR)
        runfolder.record_outputs(folder, written, removed)
    except (OSError, runfolder.FolderError) as e:
        real_cli._say(f"cannot write the verdict into {shown(folder)}: "
                      f"{getattr(e, 'strerror', None) or e}")


def _report(rows, release, out, args, started) -> int:
    counts = {v: sum(r["verdict"] == v for r in rows)
              for v in ("conforms", "diverges", "unknown", "partial")}
    summary = {"version": release.version, "preset": release.preset, "runs": len(rows),
               "events": sum(r["events"] for r in rows), **counts,
               "seconds": round(time.monotonic() - started, 1), "out": str(out), "rows": rows}
    if args.json:
        print(json.dumps(summary, indent=1), flush=True)
    else:
        print(f"{'seed':>6} {'events':>7} {'verdict':<9} {'run s':>6} {'validate s':>10}")
        for r in rows:
            run_s = "-" if r["run_seconds"] is None else r["run_seconds"]
            print(f"{r['seed']:>6} {r['events']:>7} {r['verdict']:<9} {run_s:>6} "
                  f"{r['validation_seconds']:>10}")
        partial = f", {counts['partial']} validated in part" if counts["partial"] else ""
        print(f"Kafka {release.name} (preset {release.preset}): {len(rows)} runs, "
              f"{summary['events']} events, {counts['conforms']} conforming, "
              f"{counts['diverges']} divergent, {counts['unknown']} undecided{partial}, "
              f"{summary['seconds']} s; run folders under {out}", flush=True)
    if counts["diverges"]:
        return EXIT_DIVERGENCE
    return EXIT_INCONCLUSIVE if counts["unknown"] or counts["partial"] else EXIT_OK
