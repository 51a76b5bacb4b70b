"""The model's successor function alone, on states a search meets deep in the space.

    PYTHONPATH=$PWD .venv/bin/python bench/successors.py RUN [RUN ...] [--depth 28] [--states 40000]

A RUN is as in ``bench/por.py`` (``medium``, ``issue@latest:request_duplicates+response_losses``).
A BFS on the reduction view with symmetry (as ``kafka-mc check RUN --por --symmetry`` keeps
states) goes to ``--depth`` or 200,000 states; the successor function is then timed on the last
``--states`` states in the order the BFS met them (siblings one after the other), best of five.
Printed: microseconds per state. Compare two builds by running this from each, alternately.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import por  # noqa: E402  (bench/por.py: the RUN syntax)
import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.explorers.reductions.por import reduction_key  # noqa: E402
from kafka_mc.model import registry  # noqa: E402
from kafka_mc.model.config import resolve_config_path  # noqa: E402


def model_for(run: str, symmetry: bool = True):
    args = por.arguments(run)
    path = None if args[0].startswith("--") else str(resolve_config_path(args[0]))
    overrides = [("check.symmetry", True)] if symmetry else []
    for flag, value in zip(args, args[1:]):
        if flag == "--set":
            key, _, v = value.partition("=")
            overrides.append((key, int(v) if v.isdigit() else v == "true" if v in ("true", "false")
                              else v))
        elif flag == "--protocol":
            overrides.append(("protocol.version", value))
    return registry.bind(registry.load(path, model="kafka", overrides=overrides))


def deep_states(model, depth: int, cap: int = 200_000) -> list:
    key = reduction_key(model)
    frontier = list(model.init_states())
    seen = {key(s) for s in frontier}
    order = list(frontier)
    for _ in range(depth):
        nxt = []
        for s in frontier:
            for _, t in model.successors(s):
                k = key(t)
                if k not in seen:
                    seen.add(k)
                    nxt.append(t)
        order += nxt
        frontier = nxt
        if len(order) > cap:
            break
    return order


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--depth", type=int, default=28)
    ap.add_argument("--states", type=int, default=40_000)
    o = ap.parse_args()
    for run in o.runs:
        model = model_for(run)
        states = deep_states(model, o.depth)[-o.states:]
        successors = model.successors
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for s in states:
                successors(s)
            best = min(best, time.perf_counter() - t0)
        print(f"{run}: {best / len(states) * 1e6:.2f} us per state ({len(states)} states)")


if __name__ == "__main__":
    main()
