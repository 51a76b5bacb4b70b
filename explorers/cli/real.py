"""``kafka-mc real``: real Apache Kafka (``realkafka``), and ``real conform``, which holds real
runs against the model with the trace validator (``explorers.conformance``): the one command of
the group that needs an explorer, so it lives here, above both.

    kafka-mc real conform [CONFIG] --version V [--runs N] [--seed S] [--out DIR] [--json]

N runs of the config's workload and seeded faults on a real cluster of release V (seeds S, S+1,
...), each validated against the model with the preset V stands for and the config's budgets as
the model's budgets. Exit 0 every run conforms, 16 a run diverges (its files kept under --out with
its divergence), 14 a validation reached its node limit undecided, 2 bad input.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from model import registry
from model.observations import NoObservations
from explorers.conformance import validate, write_trace
from explorers.core.result import EXIT_OK
from realkafka import cli as real_cli, releases

EXIT_INCONCLUSIVE, EXIT_DIVERGENCE = 14, 16


def add_parser(sub) -> None:
    real = real_cli.add_parser(sub)
    c = real.subcommands.add_parser(
        "conform", help="real runs of a config validated against the model (trace validation)")
    c.add_argument("config", nargs="?", metavar="CONFIG",
                   help="TOML file or name of a shipped config (default: tiny)")
    c.add_argument("--version", required=True, metavar="V", dest="kafka_version")
    c.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", dest="sets")
    c.add_argument("--runs", type=int, default=1, metavar="N")
    c.add_argument("--seed", type=int, default=0, metavar="S")
    c.add_argument("--brokers", type=int, choices=[1, 3], default=1)
    c.add_argument("--out", metavar="DIR", help="default: out/conform-<version>")
    c.add_argument("--max-nodes", type=int, default=None, metavar="N",
                   help="the validator's node limit per run")
    c.add_argument("--json", action="store_true")


def main(args) -> int:
    if getattr(args, "real_command", None) == "conform":
        try:
            return conform(args)
        except (NoObservations, real_cli.RealUsageError) as e:
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
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()
              if line.strip()]
    history = []
    if (folder / "history.jsonl").is_file():
        history = [dict(json.loads(line), source="client")
                   for line in (folder / "history.jsonl").read_text().splitlines() if line.strip()]
    for e in events:
        e.setdefault("source", "proxy")
    return sorted(events + history, key=lambda e: (e.get("time", 0), e["source"] != "proxy"))


def conform(args) -> int:
    from realkafka.run import run
    if args.runs < 1:
        raise real_cli.RealUsageError(f"--runs {args.runs}: at least 1")
    release = releases.release(args.kafka_version)
    real_cli._java()
    cfg = real_cli._load(args)
    model_cfg = cfg.with_values(**{"protocol.version": release.preset})
    model = registry.bind(model_cfg)
    out = Path(args.out) if args.out else Path("out") / f"conform-{release.version}"
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    rows, started = [], time.monotonic()
    for i in range(args.runs):
        seed = args.seed + i
        folder = out / f"run-{seed}"
        result = run(cfg, release, seed, folder, brokers=args.brokers, log=log)
        events = read_run(folder)
        kw = {"max_nodes": args.max_nodes} if args.max_nodes else {}
        verdict = validate(model, events, **kw)
        (folder / "conformance.json").write_text(json.dumps(verdict.to_dict(), indent=1) + "\n")
        if verdict.conforms:
            write_trace(verdict, model, model_cfg, folder / "behaviour.itf.json")
        row = {"seed": seed, "events": len(events), "verdict": verdict.verdict,
               "run_seconds": round(result.seconds, 1), "validation_seconds":
               round(verdict.seconds, 2), "anomalies": [a.name for a in result.anomalies],
               "folder": str(folder)}
        rows.append(row)
        log(f"run {seed}: {verdict.summary()}")
        if verdict.divergence is not None:
            for line in verdict.divergence.report():
                log(f"  {line}")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("conforms", "diverges", "unknown")}
    summary = {"version": release.version, "preset": release.preset, "runs": len(rows),
               "events": sum(r["events"] for r in rows), **counts,
               "seconds": round(time.monotonic() - started, 1), "out": str(out), "rows": rows}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"{'seed':>6} {'events':>7} {'verdict':<9} {'run s':>6} {'validate s':>10}")
        for r in rows:
            print(f"{r['seed']:>6} {r['events']:>7} {r['verdict']:<9} {r['run_seconds']:>6} "
                  f"{r['validation_seconds']:>10}")
        print(f"Kafka {release.version} (preset {release.preset}): {len(rows)} runs, "
              f"{summary['events']} events, {counts['conforms']} conforming, "
              f"{counts['diverges']} divergent, {counts['unknown']} undecided, "
              f"{summary['seconds']} s; run folders under {out}")
    if counts["diverges"]:
        return EXIT_DIVERGENCE
    return EXIT_INCONCLUSIVE if counts["unknown"] else EXIT_OK
