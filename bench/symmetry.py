"""Symmetry reduction (issue 22): distinct states, time and reduction factor with and without it.

    .venv/bin/python bench/symmetry.py [CONFIG] [--set KEY=VALUE ...] [--rounds N]

Default: tiny with two transactional.ids (one instance each), two partitions, a request delay
and a transaction timeout, at most two faults (group of 2 x 2 = 4 permutations). Three searches
per round, alternating: ``full`` (no symmetry), ``normal form`` (no renaming, only the network
ordered by connection, the normal form the partition renaming needs: it separates that part of
the reduction from the symmetry's), ``symmetry`` (``[check] symmetry = true``). Times are CPU
seconds of the search (``time.process_time``); the machine is shared, so compare within a round.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.explorers.bfs.search import explore  # noqa: E402
from kafka_mc.model import registry  # noqa: E402
from kafka_mc.model.config import parse_assignment, resolve_config_path  # noqa: E402
from kafka_mc.model.symmetry import group_order  # noqa: E402
from kafka_mc.model.kafka import symmetry  # noqa: E402

DEFAULT = {"cluster.transactional_ids": 2, "cluster.producers_per_id": 1,
           "cluster.partitions": 2, "faults.producer_crashes": 0, "faults.request_delays": 1,
           "faults.transaction_timeouts": 1, "faults.total": 2}


def search(cfg, variant: str):
    model = registry.bind(cfg.with_values(**{"check.symmetry": variant == "symmetry"}))
    if variant == "normal form":
        model.view = symmetry._normal
    t0 = time.process_time()
    out = explore(model)
    return out, time.process_time() - t0, model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?", default="tiny")
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    overrides = DEFAULT if args.config == "tiny" and not args.sets else {}
    cfg = registry.load(resolve_config_path(args.config),
                        overrides={**overrides, **dict(map(parse_assignment, args.sets))})
    print(f"python {platform.python_version()}; {args.config} with "
          + ", ".join(f"{k}={v}" for k, v in {**overrides, **dict(map(parse_assignment, args.sets))}.items()))
    for r in range(args.rounds):
        base = None
        for variant in ("full", "normal form", "symmetry"):
            out, cpu, model = search(cfg, variant)
            s = out.stats
            base = base or s.distinct
            order = f", group order {group_order(model.symmetries())}" if variant == "symmetry" else ""
            print(f"round {r + 1} {variant:<12} {s.distinct:>10,} distinct {s.generated:>11,} "
                  f"generated  depth {s.depth}  {cpu:7.1f} s CPU  {s.distinct / cpu:8,.0f} "
                  f"distinct/s  factor {base / s.distinct:.2f}{order}  "
                  f"violations {[v.property for v in out.violations]}", flush=True)


if __name__ == "__main__":
    main()
