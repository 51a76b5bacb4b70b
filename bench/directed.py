"""Directed against random runs, side by side (issue 58): the model's coverage classes witnessed
after k runs of each, on one config and release.

    python bench/directed.py RANDOM EXPLORE [--max-states N] [--walks N]

RANDOM: a campaign's folder (``kafka-mc real conform CONFIG --version V --runs N --out RANDOM``:
its runs in seed order); EXPLORE: a ``kafka-mc real explore`` session's folder (its runs in the
order they were made). Both of one config and release. Prints, for k = 1 .. the most runs either
has, the classes each had witnessed after k runs and the share of the classes the model reaches.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafka_mc.explorers.cli.guided import _below, shape
from kafka_mc.explorers.guided import coverage as cov, runs
from kafka_mc.model import registry


def curve(folders, release, cfg, reached) -> list[int]:
    seen: set = set()
    out = []
    for f in folders:
        seen |= cov.run_classes(f, release, cfg).classes & set(reached)
        out.append(len(seen))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("random")
    ap.add_argument("explore")
    ap.add_argument("--max-states", type=int, default=cov.MAX_STATES)
    ap.add_argument("--walks", type=int, default=cov.WALKS)
    args = ap.parse_args()
    random_runs, directed_runs = _below(Path(args.random), 3), _below(Path(args.explore), 3)
    release, cfg = runs.recorded_run(random_runs[0])
    other, other_cfg = runs.recorded_run(directed_runs[0])
    if other.version != release.version or shape(other_cfg) != shape(cfg):
        sys.exit("the two folders hold runs of different releases or configs")
    model_cfg = cfg.with_values(**{"protocol.version": release.preset, "check.symmetry": False})
    reached = cov.cached_reach(registry.bind(model_cfg), model_cfg, args.max_states,
                               walks=args.walks).classes
    r, d = curve(random_runs, release, cfg, reached), curve(directed_runs, release, cfg, reached)
    print(f"Kafka {release.version} (preset {release.preset}): {len(reached)} classes reached by "
          "the model")
    print(f"{'runs':>4}  {'random':>12}  {'directed':>12}  ratio")
    for k in range(1, max(len(r), len(d)) + 1):
        a = r[k - 1] if k <= len(r) else None
        b = d[k - 1] if k <= len(d) else None
        cell = [f"{x} ({x / len(reached):.0%})" if x is not None else "-" for x in (a, b)]
        ratio = f"{b / a:.2f}" if a and b is not None else ""
        print(f"{k:>4}  {cell[0]:>12}  {cell[1]:>12}  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
