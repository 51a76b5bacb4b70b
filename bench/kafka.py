"""Kafka model throughput: distinct states/s of the single-process BFS on shipped configs.

    .venv/bin/python bench/kafka.py [CONFIG ...] [--protocol PRESET] [--profile] [--cpu N]

Default configs: small (and medium when named). ``--profile`` prints the 25 most expensive
functions (cProfile, which roughly doubles the run time) instead of timing. ``--cpu N`` runs the
search N times and reports the best CPU time (``time.process_time``): steadier than the wall
clock on a shared or virtual machine.
"""
from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.explorers.bfs.search import explore  # noqa: E402
from kafka_mc.model import registry  # noqa: E402
from kafka_mc.model.config import resolve_config_path  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", default=["small"])
    ap.add_argument("--protocol", default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--cpu", type=int, default=0, metavar="N")
    args = ap.parse_args()
    print(f"python {platform.python_version()}")
    for name in args.configs:
        overrides = {"protocol.version": args.protocol} if args.protocol else {}
        cfg = registry.load(resolve_config_path(name), overrides=overrides)
        model = registry.bind(cfg)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(explore, model)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
            continue
        if args.cpu:
            best, distinct = min(_cpu_seconds(registry.bind(cfg)) for _ in range(args.cpu))
            print(f"RESULT config={name} protocol={cfg['protocol.version']} best_cpu_s={best:.2f} "
                  f"states_per_cpu_s={distinct / best:.0f}")
            continue
        out = explore(model)
        s = out.stats
        print(f"RESULT config={name} protocol={cfg['protocol.version']} distinct={s.distinct} "
              f"generated={s.generated} depth={s.depth} seconds={s.seconds:.1f} "
              f"states_per_s={s.states_per_second:.0f} peak_mb={s.peak_memory_mb:.0f} "
              f"bytes_per_state={s.bytes_per_state:.0f} verdict={out.verdict}")


def _cpu_seconds(model) -> tuple[float, int]:
    t = time.process_time()
    distinct = explore(model).stats.distinct
    return time.process_time() - t, distinct


if __name__ == "__main__":
    main()
