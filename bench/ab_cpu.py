"""A/B CPU time of kafka-mc's BFS on TwoPhase N (bench/twophase.py's "kafka-mc twophase toy") in two
source trees (e.g. a commit unpacked with `git archive`, with a copy of build/), each run a fresh
process, the trees alternating, compiled then as source; on a shared machine CPU time is steadier
than the wall clock:

    .venv/bin/python bench/ab_cpu.py N REPS ROOT_A ROOT_B
"""
import os
import subprocess
import sys

N, REPS, roots = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
CODE = """
import sys, time
sys.path.insert(0, sys.argv[1])
import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.model import registry
from kafka_mc.explorers.bfs.search import explore
import kafka_mc.explorers.bfs.search as s
cfg = registry.load(model="twophase", overrides={"model.resource_managers": int(sys.argv[2])})
m = registry.bind(cfg)
t = time.process_time()
o = explore(m)
print(o.stats.distinct, o.stats.generated, round(time.process_time() - t, 2), type(s.__loader__).__name__)
"""
for switch in ("1", "0"):
    best = {r: None for r in roots}
    for rep in range(REPS):
        for r in (roots if rep % 2 == 0 else roots[::-1]):
            out = subprocess.run([sys.executable, "-c", CODE, r, str(N)], capture_output=True,
                                 text=True, env={**os.environ, "KAFKA_MC_COMPILED": switch},
                                 cwd=r).stdout.split()
            print(f"compiled={switch} {r}: {' '.join(out)}", flush=True)
            best[r] = float(out[2]) if best[r] is None else min(best[r], float(out[2]))
    print(f"compiled={switch} best CPU s: " + ", ".join(f"{r}: {b}" for r, b in best.items()), flush=True)
