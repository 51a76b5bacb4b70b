"""Swarm simulation against plain simulation, same wall-time budget (issue 20).

    PYTHONPATH=$PWD nice -n 5 .venv/bin/python bench/swarm.py --preset kafka-3.6 --seconds 150 \\
        [--faults request_delays request_duplicates] [--seed 0] [--sequential] [--only swarm]
    PYTHONPATH=$PWD nice -n 5 .venv/bin/python bench/swarm.py --mutants tiny [--runs 3000]

The configuration is the issue's: one transactional.id, one producer instance, two partitions,
two transactions of two records each, the application may abort, two network faults of the
given kinds (a budget of one each, two in all), every other fault off. Plain simulate and swarm
simulate run side by side, each in its own child process (so both meet the same machine load),
with ``--runs`` unbounded and stopped after ``--seconds`` as Ctrl-C would stop them (SIGALRM ->
KeyboardInterrupt: the explorer returns its partial counts). Reported per explorer: time to the
first violation (before minimizing) or "none", the property, walks, steps, distinct states,
the coordinator's and client's state-machine edges taken, and (swarm) the families walked.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import signal

FAULTS = ("request_delays", "request_duplicates", "request_losses", "response_losses")
OTHER_FAULTS = ("producer_crashes", "coordinator_failovers", "transaction_timeouts",
                "transactional_id_expirations", "batch_expiries", "producer_state_losses",
                "rebalances")


def config(preset: str, faults: tuple[str, ...]):
    from kafka_mc.model import registry
    sets = [("protocol.version", preset), ("cluster.transactional_ids", 1),
            ("cluster.producers_per_id", 1), ("cluster.partitions", 2),
            ("workload.transactions_per_producer", 2), ("workload.records_per_transaction", 2),
            ("workload.abort_transactions", True), ("faults.total", 2)]
    sets += [(f"faults.{f}", int(f in faults)) for f in FAULTS + OTHER_FAULTS]
    return registry.load(None, model="kafka", overrides=sets)


def run(name: str, preset: str, faults, seconds: float, seed: int, queue) -> None:
    from kafka_mc.model import registry
    from kafka_mc.explorers.walks import simulate
    from kafka_mc.explorers.walks import swarm

    def stop(signum, frame):
        raise KeyboardInterrupt
    model = registry.bind(config(preset, faults))
    signal.signal(signal.SIGALRM, stop)
    signal.alarm(int(seconds))
    explore = swarm.explore if name == "swarm" else simulate.explore
    try:
        out = explore(model, simulate.SimulateOptions(runs=10**12, seed=seed))
    finally:
        signal.alarm(0)
    v = out.violations[0] if out.violations else None
    sw = out.extra.get("swarm", {})
    queue.put({"explorer": name, "first": out.extra["seconds_to_violation"],
               "property": v.property if v else None,
               "found": out.extra["found_steps"], "reported": len(v.path) if v and v.path else None,
               "walks": out.extra["walks"], "steps": out.stats.generated,
               "distinct": out.stats.distinct, "depth": out.stats.depth,
               "edges": {e.machine: len(e.taken) for e in out.edges},
               "edges_of": {e.machine: len(e.taken) + len(e.not_taken) for e in out.edges},
               "found_by": sw.get("found_by"), "sets": len(sw.get("by_family", ()))})


def mutants(base: str, runs: int, seed: int) -> None:
    """Each mutant of model/kafka/capabilities/mutants.py (but the liveness ones) on ``base`` with its own
    settings, its invariant only: the walk (1-based count) at which plain and swarm simulation
    first find it within ``runs`` walks, or none."""
    from kafka_mc.model import registry
    from kafka_mc.model.config import resolve_config_path
    from kafka_mc.model.kafka.capabilities import mutants as kafka_mutants
    from kafka_mc.explorers.walks import simulate
    from kafka_mc.explorers.walks import swarm

    print("| mutant | invariant | plain: walks to find | swarm: walks to find |")
    print("|---|---|---:|---:|")
    for m in kafka_mutants.MUTANTS:
        if m.invariant == "eventual_completion":
            continue
        cfg = registry.load(resolve_config_path(base),
                            overrides={"model.mutant": m.name, **m.settings})
        model = registry.bind(cfg)
        cells = []
        for explore in (simulate.explore, swarm.explore):
            out = explore(model, simulate.SimulateOptions(runs=runs, seed=seed,
                                                          properties=[m.invariant]))
            found = [v for v in out.violations if v.kind != "sometimes"]
            cells.append(f"{out.extra['walks']:,}" if found else f"none in {runs:,}")
        print(f"| {m.name} | {m.invariant} | {cells[0]} | {cells[1]} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutants", metavar="CONFIG",
                    help="instead: walks to find each mutant on CONFIG, plain vs swarm")
    ap.add_argument("--runs", type=int, default=3000, help="with --mutants: walks at most")
    ap.add_argument("--preset", default="kafka-3.6")
    ap.add_argument("--faults", nargs=2, default=["request_delays", "request_duplicates"],
                    choices=FAULTS)
    ap.add_argument("--seconds", type=float, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sequential", action="store_true", help="one after the other")
    ap.add_argument("--only", choices=["plain", "swarm"], help="run one explorer only")
    args = ap.parse_args()
    if args.mutants:
        return mutants(args.mutants, args.runs, args.seed)
    queue = mp.Queue()
    procs = [mp.Process(target=run, args=(name, args.preset, tuple(args.faults), args.seconds,
                                          args.seed, queue))
             for name in ("plain", "swarm") if args.only in (None, name)]
    results = []
    for p in procs:
        p.start()
        if args.sequential:
            results.append(queue.get())
            p.join()
    if not args.sequential:
        results = [queue.get() for _ in procs]
        for p in procs:
            p.join()
    print("| preset | faults | explorer | seed | first violation (s) | property | found / "
          "reported steps | walks | steps | distinct | coordinator edges | client edges |")
    print("|---|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for r in sorted(results, key=lambda r: r["explorer"]):
        first = "none" if r["first"] is None else f"{r['first']:.1f}"
        co = list(r["edges"])
        print(f"| {args.preset} | {' + '.join(args.faults)} | {r['explorer']} | {args.seed} | {first} | "
              f"{r['property'] or '-'} | {r['found'] or '-'} / {r['reported'] or '-'} | "
              f"{r['walks']:,} | {r['steps']:,} | {r['distinct']:,} | "
              + " | ".join(f"{r['edges'][m]} of {r['edges_of'][m]}" for m in co) + " |")
        if r["found_by"]:
            print(f"<!-- {r['explorer']}: {r['found_by']} -->")


if __name__ == "__main__":
    main()
