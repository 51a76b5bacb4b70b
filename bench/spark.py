"""Spark explorer benchmark: distinct states/s of the Spark explorer on local[1] and local[2], and of
the single-process BFS, on the same configuration.

    .venv/bin/python bench/spark.py [CONFIG ...] [--repeat K] [--partitions P]

CONFIG is ``twophase:N`` (TwoPhase with N resource managers; default ``twophase:8``, 1,745,408
states) or a TOML configuration (a path, or the name of one in ``configs/``): the Kafka model's
``small``, or a million-state Kafka run as ``configs/medium.toml`` with ``[check] max_depth = 27``
(the unbounded ``medium`` has several million states; see bench/RESULTS.md).

Every run is a fresh Python process (and, for Spark, a fresh JVM), so each memory figure is its
own. ``search s`` is the search alone; ``start s`` is the Spark session start-up before it.
``driver MB`` is the peak resident set of the Python driver process: the BFS keeps its visited set
there, the Spark explorer on the executors (with local[N] they live in the JVM, not counted here).
Each contender runs K times (default 1, the contenders taking turns); its fastest run is
reported, and every run's time is listed. All contenders must find
the same numbers of distinct and generated states, or the script fails.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

CONTENDERS = ("bfs", "spark local[1]", "spark local[2]")


def load(spec: str):
    from kafka_mc.model import registry
    from kafka_mc.model.config import resolve_config_path

    if spec.startswith("twophase:"):
        return registry.load(model="twophase",
                             overrides={"model.resource_managers": int(spec.split(":", 1)[1])})
    return registry.load(resolve_config_path(spec))


def child(contender: str, spec: str, partitions: int | None) -> dict:
    """Run one contender in this process; the figures as a dict."""
    from kafka_mc.explorers.bfs import search as bfs
    from kafka_mc.explorers.spark import search as spark
    from kafka_mc.model import registry

    cfg = load(spec)
    options = bfs.BfsOptions(max_depth=cfg["check.max_depth"], check_deadlock=cfg.get("check.deadlock"))
    t0 = time.perf_counter()
    if contender == "bfs":
        out = bfs.explore(registry.bind(cfg), options)
    else:
        workers = int(contender[len("spark local["):-1])
        with spark.session(spark.SparkOptions(workers=workers)) as session:
            start = time.perf_counter() - t0
            out = spark.explore(cfg, options, spark.SparkOptions(partitions=partitions), spark=session)
    s = out.stats
    return {"distinct": s.distinct, "generated": s.generated, "depth": s.depth,
            "verdict": out.verdict, "seconds": s.seconds,
            "start": start if contender != "bfs" else 0.0,
            "partitions": out.extra.get("partitions"),
            "driver_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_child(contender: str, spec: str, partitions: int | None) -> dict:
    cmd = [sys.executable, __file__, "--child", contender, spec]
    if partitions:
        cmd += ["--partitions", str(partitions)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench: {contender} on {spec} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", default=["twophase:8"], metavar="CONFIG")
    ap.add_argument("--repeat", type=int, default=1, metavar="K")
    ap.add_argument("--partitions", type=int, metavar="P",
                    help="Spark partitions (default: the session's parallelism)")
    ap.add_argument("--child", metavar="CONTENDER", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.configs[0], args.partitions)))
        return
    for spec in args.configs:
        best: dict[str, dict] = {}
        runs: dict[str, list[float]] = {c: [] for c in CONTENDERS}
        for _ in range(args.repeat):
            for contender in CONTENDERS:
                r = run_child(contender, spec, args.partitions)
                runs[contender].append(r["seconds"])
                if contender not in best or r["seconds"] < best[contender]["seconds"]:
                    best[contender] = r
        counts = {(r["distinct"], r["generated"], r["depth"], r["verdict"]) for r in best.values()}
        if len(counts) != 1:
            sys.exit(f"bench: contenders disagree on {spec}: {best}")
        distinct, generated, depth, verdict = counts.pop()
        print(f"\n{spec}: {distinct:,} distinct states, {generated:,} generated, depth {depth}, "
              f"verdict {verdict}")
        print("| contender | partitions | start s | search s | distinct states/s | vs local[1] "
              "| driver MB | every run s |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        base = best["spark local[1]"]["seconds"]
        for contender in CONTENDERS:
            r = best[contender]
            every = " / ".join(f"{t:.1f}" for t in runs[contender])
            print(f"| {contender} | {r['partitions'] or '-'} | {r['start']:.1f} | {r['seconds']:.1f} | "
                  f"{distinct / r['seconds']:,.0f} | {base / r['seconds']:.2f}x | "
                  f"{r['driver_mb']:.0f} | {every} |")


if __name__ == "__main__":
    main()
