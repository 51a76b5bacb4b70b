"""The BFS's memory and speed against another checkout of kafka-mc (issue 22's compact visited set).

    .venv/bin/python bench/visited.py BASELINE_CHECKOUT [--repeat K] [CONFIG[:KEY=VALUE] ...]

e.g. ``git worktree add /tmp/base <commit>`` then ``bench/visited.py /tmp/base``. Each contender
(this checkout, the baseline) searches each configuration in its own child process (``python -c``
with the checkout first on ``sys.path``), alternating between contenders on every repeat; the
figures are each contender's fastest run and the peak RSS the child reports (``ru_maxrss``), with
the RSS growth per distinct state. Both must find the same counts, or the script fails.
Default configurations: Kafka small (configs/small.toml) and TwoPhase N = 8.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CHILD = """
import json, resource, sys, time
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.model import registry
from kafka_mc.model.config import parse_assignment, resolve_config_path
from kafka_mc.explorers.bfs.search import explore
name, *sets = sys.argv[1:]
cfg = registry.load(resolve_config_path(name))
if sets:
    cfg = cfg.with_values(**dict(parse_assignment(a) for a in sets))
model = registry.bind(cfg)
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
out = explore(model)
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"distinct": out.stats.distinct, "generated": out.stats.generated,
                  "seconds": seconds, "peak_mb": peak / 1024,
                  "bytes_per_state": (peak - rss1) * 1024 / out.stats.distinct,
                  "structures": (out.extra.get("memory") or {})}))
"""


def run(checkout: Path, config: str) -> dict:
    name, *sets = config.split(":")
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    r = subprocess.run([sys.executable, "-c", CHILD, name, *sets], capture_output=True, text=True,
                       env=env, cwd=checkout, check=True)
    return json.loads(r.stdout)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("baseline", type=Path)
    p.add_argument("configs", nargs="*", default=["small", "twophase:model.resource_managers=8"])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    contenders = {"baseline": args.baseline.resolve(), "this checkout": HERE}
    print(f"| configuration | contender | distinct | seconds (best of {args.repeat}) | states/s "
          "| peak MB | RSS growth B/state | visited+tree B/state |")
    print("|---|---|---|---|---|---|---|---|")
    for config in args.configs:
        best: dict = {}
        for k in range(args.repeat):
            order = list(contenders) if k % 2 == 0 else list(reversed(contenders))
            for who in order:
                r = run(contenders[who], config)
                if who not in best or r["seconds"] < best[who]["seconds"]:
                    best[who] = r
        counts = {(r["distinct"], r["generated"]) for r in best.values()}
        if len(counts) != 1:
            sys.exit(f"{config}: the contenders disagree on the counts: {best}")
        for who, r in best.items():
            st = r["structures"]
            compact = ((st["visited_bytes"] + st["tree_bytes"]) / r["distinct"]
                       if st else float("nan"))
            print(f"| {config} | {who} | {r['distinct']:,} | {r['seconds']:.1f} | "
                  f"{r['distinct'] / r['seconds']:,.0f} | {r['peak_mb']:.0f} | "
                  f"{r['bytes_per_state']:.1f} | {compact:.1f} |", flush=True)


if __name__ == "__main__":
    main()
