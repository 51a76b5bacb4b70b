"""``kafka-mc real``: real Apache Kafka (``realkafka``), and the commands of the group that need an
explorer, so they live here, above both: ``real conform``, which holds real runs against the
model with the trace validator (``kafka_mc.explorers.conformance``), and model-guided testing
(``kafka_mc.explorers.cli.guided``: ``real reproduce``'s verdict, ``real coverage``, ``real
explore``).

    kafka-mc real conform [CONFIG] --version V [--runs N] [--seed S] [--out DIR] [--json]
    kafka-mc real conform --run DIR [--json]

N runs of the config's workload and seeded faults on a real cluster of release V (seeds S, S+1,
...), each validated against the model with the preset V stands for and the config's budgets as
the model's budgets. ``--run DIR`` validates a run folder recorded before (by ``real run`` or
``real conform``) instead, with the release and config it names. Exit 0 every run conforms, 16 a run diverges (its files kept under --out with
its divergence), 14 a validation reached its node limit undecided, 2 bad input.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from kafka_mc.model.capabilities import MissingCapability
from kafka_mc.explorers.conformance import RunError, write_trace
from kafka_mc.explorers.cli import guided
from kafka_mc.explorers.core.result import EXIT_OK
from kafka_mc.explorers.guided import runs
from kafka_mc.explorers.guided.runs import end_state, read_run, recorded_run, validate_folder  # noqa: F401
from kafka_mc.realkafka import cli as real_cli, releases

EXIT_INCONCLUSIVE, EXIT_DIVERGENCE = 14, 16


def add_parser(sub) -> None:
    real = real_cli.add_parser(sub)
    c = real.subcommands.add_parser(
        "conform", help="real runs of a config validated against the model (trace validation)")
    c.add_argument("config", nargs="?", metavar="CONFIG",
                   help="TOML file or name of a shipped config (default: tiny)")
    c.add_argument("--version", metavar="V", dest="kafka_version",
                   help="the release to run (with --run: must be the one the run was made on)")
    c.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", dest="sets")
    c.add_argument("--run", metavar="DIR", dest="run_dir",
                   help="validate this recorded run folder instead of making new runs")
    c.add_argument("--runs", type=int, default=1, metavar="N")
    c.add_argument("--seed", type=int, default=0, metavar="S")
    c.add_argument("--brokers", type=int, choices=[1, 3], default=1)
    c.add_argument("--out", metavar="DIR", help="default: out/conform-<version>")
    c.add_argument("--max-nodes", type=int, default=None, metavar="N",
                   help="the validator's node limit per run")
    c.add_argument("--json", action="store_true")
    guided.add_parsers(real)


def main(args) -> int:
    command = getattr(args, "real_command", None)
    if command == "conform" or command in guided.COMMANDS:
        try:
            return conform(args) if command == "conform" else guided.main(args)
        except (MissingCapability, RunError, real_cli.RealUsageError) as e:
            real_cli._say(e)
            return 2
        except tuple(real_cli.usage_errors()) as e:
            real_cli._say(e)
            return 2
    return real_cli.main(args)


def _recorded(args):
    """The release, config and folder of the recorded run ``--run DIR``."""
    folder = Path(args.run_dir)
    release, cfg, values = runs.recorded(folder)
    if args.kafka_version and args.kafka_version != values["version"]:
        raise real_cli.RealUsageError(f"--run {str(folder)[:200]} was recorded on Kafka "
                                      f"{str(values['version'])[:20]}, not "
                                      f"{args.kafka_version[:20]}")
    if args.config or args.sets:
        raise real_cli.RealUsageError("--run validates the run with its own config: give no "
                                      "CONFIG or --set")
    return release, cfg, folder


def conform(args) -> int:
    from kafka_mc.realkafka.run import run
    if args.runs < 1:
        raise real_cli.RealUsageError(f"--runs {args.runs}: at least 1")
    if args.run_dir:
        release, cfg, folder = _recorded(args)
        return _report([_validate(cfg, release, folder, None, args)], release, folder, args,
                       time.monotonic())
    if not args.kafka_version:
        raise real_cli.RealUsageError("real conform needs --version V (or --run DIR)")
    release = releases.release(args.kafka_version)
    real_cli._java()
    cfg = real_cli._load(args)
    out = Path(args.out) if args.out else Path("out") / f"conform-{release.version}"
    log = _log(args)
    rows, started = [], time.monotonic()
    for i in range(args.runs):
        seed = args.seed + i
        folder = out / f"run-{seed}"
        result = run(cfg, release, seed, folder, brokers=args.brokers, log=log)
        rows.append(_validate(cfg, release, folder, result, args))
    return _report(rows, release, out, args, started)


def _log(args):
    return (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))


def _validate(cfg, release, folder: Path, result, args) -> dict:
    """Validate one run folder against the model with the release's preset and the config's
    budgets; its verdict written beside the run (and the behaviour, when it conforms)."""
    verdict, model, model_cfg, events = validate_folder(cfg, release, folder, args.max_nodes)
    (folder / "conformance.json").write_text(json.dumps(verdict.to_dict(), indent=1) + "\n")
    if verdict.conforms:
        write_trace(verdict, model, model_cfg, folder / "behaviour.itf.json")
    seed = result.seed if result is not None else json.loads((folder / "run.json").read_text())["seed"]
    log = _log(args)
    log(f"run {seed}: {verdict.summary()}")
    if verdict.divergence is not None:
        for line in verdict.divergence.report():
            log(f"  {line}")
    return {"seed": seed, "events": len(events), "verdict": verdict.verdict,
            "run_seconds": round(result.seconds, 1) if result is not None else None,
            "validation_seconds": round(verdict.seconds, 2),
            "anomalies": [a.name for a in result.anomalies] if result is not None else None,
            "folder": str(folder)}


def _report(rows, release, out, args, started) -> int:
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("conforms", "diverges", "unknown")}
    summary = {"version": release.version, "preset": release.preset, "runs": len(rows),
               "events": sum(r["events"] for r in rows), **counts,
               "seconds": round(time.monotonic() - started, 1), "out": str(out), "rows": rows}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"{'seed':>6} {'events':>7} {'verdict':<9} {'run s':>6} {'validate s':>10}")
        for r in rows:
            run_s = "-" if r["run_seconds"] is None else r["run_seconds"]
            print(f"{r['seed']:>6} {r['events']:>7} {r['verdict']:<9} {run_s:>6} "
                  f"{r['validation_seconds']:>10}")
        print(f"Kafka {release.version} (preset {release.preset}): {len(rows)} runs, "
              f"{summary['events']} events, {counts['conforms']} conforming, "
              f"{counts['diverges']} divergent, {counts['unknown']} undecided, "
              f"{summary['seconds']} s; run folders under {out}")
    if counts["diverges"]:
        return EXIT_DIVERGENCE
    return EXIT_INCONCLUSIVE if counts["unknown"] else EXIT_OK
