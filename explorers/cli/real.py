"""``kafka-mc real``: real Apache Kafka (``realkafka``), and ``real conform``, which holds real
runs against the model with the trace validator (``kafka_mc.explorers.conformance``): the one command of
the group that needs an explorer, so it lives here, above both.

    kafka-mc real conform [CONFIG] (--version V | --kafka-home DIR [--protocol P]) [--runs N]
                          [--seed S] [--out DIR] [--json]
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

from kafka_mc.model import registry
from kafka_mc.model.observations import NoObservations
from kafka_mc.explorers.conformance import RunError, read_events, validate, write_trace
from kafka_mc.explorers.core.result import EXIT_DIVERGENCE, EXIT_INCONCLUSIVE, EXIT_OK
from kafka_mc.realkafka import cli as real_cli, losses, releases


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
    c.add_argument("--runs", type=int, default=1, metavar="N",
                   help="how many runs (seeds S, S+1, ...)")
    c.add_argument("--seed", type=int, default=0, metavar="S", help="the first run's seed")
    real_cli.brokers_argument(c)
    c.add_argument("--out", metavar="DIR", help="default: out/conform-<version>")
    c.add_argument("--max-nodes", type=int, default=None, metavar="N",
                   help="the validator's node limit per run")
    c.add_argument("--json", action="store_true", help="print one JSON summary object")


def main(args) -> int:
    if getattr(args, "real_command", None) == "conform":
        try:
            return conform(args)
        except (NoObservations, RunError, real_cli.RealUsageError) as e:
            real_cli._say(e)
            return 2
        except tuple(real_cli.usage_errors()) as e:
            real_cli._say(e)
            return 2
    return real_cli.main(args)


def read_run(folder: Path) -> list[dict]:
    """A run folder's events for validation: the proxy's event log and the client history, merged
    on their shared clock (both count from the run's start, ``origin_ns``)."""
    if not (folder / "events.jsonl").is_file():
        raise real_cli.RealUsageError(f"{str(folder)[:200]}: not a run folder (no events.jsonl)")
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
            raise real_cli.RealUsageError(f"{str(path)[:200]}: unreadable ({type(e).__name__})"
                                          ) from None
        value = value.get(key) if key and isinstance(value, dict) else value
        if isinstance(value, dict):
            return [{**{k: value.get(k) for k in ("transactions", "logs", "offsets",
                                                  "producers")},
                     "type": "end_state", "source": "harness"}]
    return []


def _recorded(args):
    """The release, config and folder of the recorded run ``--run DIR``."""
    folder = Path(args.run_dir)
    meta = folder / "run.json"
    if not folder.is_dir() or not meta.is_file() or not (folder / "events.jsonl").is_file():
        raise real_cli.RealUsageError(f"--run {str(folder)[:200]}: not a run folder (no run.json "
                                      "and events.jsonl)")
    try:
        recorded = json.loads(meta.read_text())
        version, sections = recorded["version"], recorded["config"]
    except (ValueError, KeyError, TypeError, OSError) as e:
        raise real_cli.RealUsageError(f"--run {str(folder)[:200]}: run.json unreadable "
                                      f"({type(e).__name__})") from None
    if args.kafka_version and args.kafka_version != version:
        raise real_cli.RealUsageError(f"--run {str(folder)[:200]} was recorded on Kafka "
                                      f"{str(version)[:20]}, not {args.kafka_version[:20]}")
    if args.config or args.sets or getattr(args, "kafka_home", None) or \
            getattr(args, "protocol", None):
        raise real_cli.RealUsageError("--run validates the run with its own config and Kafka: "
                                      "give no CONFIG, --set, --kafka-home or --protocol")
    release = releases.recorded(recorded)
    if release is None:
        raise real_cli.RealUsageError(f"--run {str(folder)[:200]}: Kafka {str(version)[:20]} "
                                      "is not a supported release")
    return release, registry.from_dict(sections, str(meta)), folder


def conform(args) -> int:
    from kafka_mc.realkafka.run import run
    if args.runs < 1:
        raise real_cli.RealUsageError(f"--runs {args.runs}: at least 1")
    if args.run_dir:
        release, cfg, folder = _recorded(args)
        start = time.monotonic()   # (before the validation: the summary's seconds are its)
        return _report([_validate(cfg, release, folder, None, args)], release, folder, args,
                       start)
    if not args.kafka_version and not args.kafka_home:
        raise real_cli.RealUsageError("real conform needs --version V, --kafka-home DIR or "
                                      "--run DIR")
    release = real_cli.kafka(args)
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


def validate_folder(cfg, release, folder: Path, max_nodes: int | None = None, **overrides):
    """The run folder validated against the model of ``cfg`` with the release's preset (and
    ``overrides``: config key -> value): (Conformance, the model, its config, the events)."""
    # The release's preset; no symmetry (a run names its clients, so states are not identified
    # up to renaming them)
    events = read_run(folder)
    model_cfg = cfg.with_values(**{"protocol.version": release.preset, "check.symmetry": False,
                                   **_broker_losses(cfg, events, folder, release),
                                   **overrides})
    model = registry.bind(model_cfg)
    kw = {"max_nodes": max_nodes} if max_nodes else {}
    return validate(model, events, **kw), model, model_cfg, events


def recorded_run(folder: Path):
    """(release, config) of a run folder (its run.json), ``RealUsageError`` when it is none."""
    class _Args:
        run_dir, kafka_version, config, sets = str(folder), None, None, None
    release, cfg, _ = _recorded(_Args)
    return release, cfg


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


def _broker_losses(cfg, events, folder: Path | None = None, release=None) -> dict:
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
        print(f"Kafka {release.name} (preset {release.preset}): {len(rows)} runs, "
              f"{summary['events']} events, {counts['conforms']} conforming, "
              f"{counts['diverges']} divergent, {counts['unknown']} undecided, "
              f"{summary['seconds']} s; run folders under {out}")
    if counts["diverges"]:
        return EXIT_DIVERGENCE
    return EXIT_INCONCLUSIVE if counts["unknown"] else EXIT_OK
