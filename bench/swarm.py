"""Swarm simulation against plain simulation, same wall-time budget (issue 20).

    PYTHONPATH=$PWD nice -n 5 .venv/bin/python bench/swarm.py --preset kafka-3.6 --seconds 150 \\
        [--faults request_delays request_duplicates] [--seed 0] [--sequential]

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
    from model import registry
    sets = [("protocol.version", preset), ("cluster.transactional_ids", 1),
            ("cluster.producers_per_id", 1), ("cluster.partitions", 2),
            ("workload.transactions_per_producer", 2), ("workload.records_per_transaction", 2),
            ("workload.abort_transactions", True), ("faults.total", 2)]
    sets += [(f"faults.{f}", int(f in faults)) for f in FAULTS + OTHER_FAULTS]
    return registry.load(None, model="kafka", overrides=sets)


def run(name: str, preset: str, faults, seconds: float, seed: int, queue) -> None:
    from model import registry
    from explorers import simulate, swarm

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="kafka-3.6")
    ap.add_argument("--faults", nargs=2, default=["request_delays", "request_duplicates"],
                    choices=FAULTS)
    ap.add_argument("--seconds", type=float, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sequential", action="store_true", help="one after the other")
    args = ap.parse_args()
    queue = mp.Queue()
    procs = [mp.Process(target=run, args=(name, args.preset, tuple(args.faults), args.seconds,
                                          args.seed, queue)) for name in ("plain", "swarm")]
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
    print(f"| preset | faults | explorer | first violation (s) | property | found / reported "
          f"steps | walks | steps | distinct | coordinator edges | client edges |")
    print("|---|---|---|---:|---|---|---:|---:|---:|---:|---:|")
    for r in sorted(results, key=lambda r: r["explorer"]):
        first = "none" if r["first"] is None else f"{r['first']:.1f}"
        co, cl = list(r["edges"]), list(r["edges_of"])
        print(f"| {args.preset} | {' + '.join(args.faults)} | {r['explorer']} | {first} | "
              f"{r['property'] or '-'} | {r['found'] or '-'} / {r['reported'] or '-'} | "
              f"{r['walks']:,} | {r['steps']:,} | {r['distinct']:,} | "
              + " | ".join(f"{r['edges'][m]} of {r['edges_of'][m]}" for m in co) + " |")
        if r["found_by"]:
            print(f"<!-- {r['explorer']}: {r['found_by']} -->")


if __name__ == "__main__":
    main()
