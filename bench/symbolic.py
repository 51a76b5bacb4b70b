"""z3 time of the symbolic checks (explorers/symbolic/checker.py) on the Kafka fencing core: k-induction
(k = 1) per preset, and BMC per depth on latest. Configuration: tiny plus the fault kinds the
symbolic model has actions for (transaction timeouts, coordinator failovers, transactional.id
expirations), so every preset's proof covers them.

    PYTHONPATH=$PWD nice -n 5 .venv/bin/python bench/symbolic.py [--bmc DEPTH] [PRESET ...]
"""
from __future__ import annotations

import sys
import time

import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.explorers.symbolic.checker import bmc, prove
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.versions import PRESETS

FAULTS = [("faults.transaction_timeouts", 1), ("faults.coordinator_failovers", 1),
          ("faults.transactional_id_expirations", 1)]


def system(preset, variant="none"):
    cfg = registry.load(resolve_config_path("tiny"), overrides=[
        ("protocol.version", preset), ("symbolic.variant", variant), *FAULTS])
    return registry.bind(cfg).symbolic()


def main(argv):
    depth = 0
    if argv[:1] == ["--bmc"]:
        depth, argv = int(argv[1]), argv[2:]
    presets = argv or list(PRESETS)
    if depth:
        r = bmc(system("latest"), depth)
        print(f"BMC latest: {r.verdict} at {r.depth}; seconds per depth (cumulative): "
              + ", ".join(f"{k}: {s:.1f}" for k, s in r.timings))
        return
    for preset in presets:
        t = time.perf_counter()
        r = prove(system(preset), 1)
        print(f"{preset:11} {r.verdict:14} {r.claim_name or '-':18} {time.perf_counter() - t:6.1f} s",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
