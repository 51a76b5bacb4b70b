"""Random exploration benchmark: steps/s and time to the first violation, simulate vs stateful.

    .venv/bin/python bench/explore_random.py [--n 12] [--seeds 5]
    .venv/bin/python bench/explore_random.py --config MUTANT.toml [--clean-config GOOD.toml]
    .venv/bin/python bench/explore_random.py --mutants large [--only NAME ...] [--seeds 1]

Broken configuration (default: ``twophase-broken`` with ``--n`` resource managers): each explorer
runs once per seed 0..K-1 with its default settings. ``first violation`` is when a check first
failed (before hypothesis's shrinking and delta debugging), ``total`` includes both; ``steps`` is
how many steps the explorer took in all (for stateful, shrinking's too); ``found`` / ``reported``
are the counterexample's length as first found (for stateful: after hypothesis's shrinking) and
after delta debugging. BFS runs once on the same configuration for comparison.

Correct configuration (default: ``twophase`` with ``--n``): each explorer runs once (seed 0, default
settings) with no violation to stop it: steps/s over the whole run.

Kafka mutants (``--mutants CONFIG``, e.g. ``large``, beyond BFS's reach): each mutant of
model/kafka/capabilities/mutants.py is seeded into CONFIG (with the protocol version its own settings name, e.g.
kafka-2.6), and each explorer runs once per seed with its default settings: time to the first
violation of the invariant named for the mutant (only that one is checked: on kafka-2.6 the
correct model itself has hanging transactions on a config this large), and the counterexample's
length as found and as reported (minimized).
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.explorers.walks import simulate

from kafka_mc.explorers.walks import stateful
from kafka_mc.explorers.bfs.search import explore as bfs
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path

EXPLORERS = {
    "simulate": lambda model, seed, props=None: simulate.explore(
        model, simulate.SimulateOptions(seed=seed, properties=props)),
    "stateful": lambda model, seed, props=None: stateful.explore(
        model, stateful.StatefulOptions(seed=seed, properties=props)),
}


def load(config: str | None, model: str, n: int):
    if config:
        return registry.bind(registry.load(resolve_config_path(config)))
    return registry.bind(registry.load(model=model, overrides={"model.resource_managers": n}))


def row(*cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def length(v) -> str:
    return str(len(v.path)) if v is not None and v.path is not None else "-"


def broken(model, seeds: int) -> list[str]:
    rows = [row("explorer", "seed", "violation", "first violation (s)", "total (s)", "steps",
                "found", "reported"), "|---|---:|---|---:|---:|---:|---:|---:|"]
    for name, run in EXPLORERS.items():
        firsts = []
        for seed in range(seeds):
            out = run(model, seed)
            v = out.violations[0] if out.violations else None
            first = out.extra["seconds_to_violation"]
            firsts += [first] if first is not None else []
            rows.append(row(name, seed, v.property if v else "none",
                            "-" if first is None else f"{first:.3f}", f"{out.stats.seconds:.2f}",
                            f"{out.stats.generated:,}", out.extra["found_steps"] or "-", length(v)))
        if firsts:
            rows.append(row(f"**{name}**", "median", "", f"**{statistics.median(firsts):.3f}**",
                            "", "", "", ""))
    t0 = time.perf_counter()
    out = bfs(model)
    v = out.violations[0] if out.violations else None
    rows.append(row("bfs", "-", v.property if v else "none", f"{time.perf_counter() - t0:.3f}",
                    f"{out.stats.seconds:.2f}", f"{out.stats.generated:,}", length(v), length(v)))
    return rows


def clean(model) -> list[str]:
    rows = [row("explorer", "walks", "steps", "distinct", "longest walk", "seconds", "steps/s",
                "verdict"), "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, run in EXPLORERS.items():
        out = run(model, 0)
        s = out.stats
        verdict = ", ".join(f"{v.property} ({v.kind})" for v in out.violations) or "ok"
        rows.append(row(name, f"{out.extra['walks']:,}", f"{s.generated:,}", f"{s.distinct:,}",
                        s.depth, f"{s.seconds:.2f}", f"{out.extra['steps_per_second']:,.0f}",
                        verdict))
    return rows


def mutant_rows(config: str, names: list[str], seeds: int) -> list[str]:
    from kafka_mc.model.kafka.capabilities import mutants

    rows = [row("mutant", "explorer", "seed", "violation", "first violation (s)", "total (s)",
                "steps", "found", "reported"), "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for m in mutants.MUTANTS:
        if names and m.name not in names or m.invariant == "eventual_completion":
            continue   # (a liveness bug: random walks find no lasso; --explorer graph does)
        version = {k: v for k, v in m.settings.items() if k == "protocol.version"}
        model = registry.bind(registry.load(resolve_config_path(config),
                                            overrides=version | {"model.mutant": m.name}))
        for name, run in EXPLORERS.items():
            for seed in range(seeds):
                out = run(model, seed, [m.invariant])
                v = out.violations[0] if out.violations else None
                first = out.extra["seconds_to_violation"]
                rows.append(row(m.name, name, seed, v.property if v else "none",
                                "-" if first is None else f"{first:.2f}",
                                f"{out.stats.seconds:.2f}", f"{out.stats.generated:,}",
                                out.extra["found_steps"] or "-", length(v)))
                print(rows[-1], flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=12, help="TwoPhase resource managers (default 12)")
    p.add_argument("--seeds", type=int, default=5, help="seeds per explorer on the broken config")
    p.add_argument("--config", help="broken configuration (default: twophase-broken, --n)")
    p.add_argument("--clean-config", help="correct configuration (default: twophase, --n)")
    p.add_argument("--mutants", metavar="CONFIG", help="seed each Kafka mutant into CONFIG")
    p.add_argument("--only", nargs="*", default=[], metavar="MUTANT", help="with --mutants")
    args = p.parse_args()
    if args.mutants:
        print(f"Kafka mutants seeded into {args.mutants}\n")
        print("\n".join(mutant_rows(args.mutants, args.only, args.seeds)))
        return
    bad = load(args.config, "twophase-broken", args.n)
    good = (load(args.clean_config, "twophase", args.n)
            if args.clean_config or not args.config else None)
    print(f"- Python {platform.python_version()}; {platform.machine()}; stateful defaults "
          f"{stateful.DEFAULT_EXAMPLES} examples x {stateful.DEFAULT_STEPS} steps; simulate "
          f"defaults {simulate.DEFAULT_RUNS} walks x {simulate.DEFAULT_DEPTH} steps\n")
    print(f"Broken: {args.config or f'twophase-broken, N = {args.n}'}\n")
    print("\n".join(broken(bad, args.seeds)))
    if good is not None:
        print(f"\nCorrect: {args.clean_config or f'twophase, N = {args.n}'}\n")
        print("\n".join(clean(good)))


if __name__ == "__main__":
    main()
