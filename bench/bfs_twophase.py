"""kafka-mc's BFS alone on its TwoPhase model (bench/twophase.py's "kafka-mc twophase toy"), for a
whole-process comparison with the shared plain-Python BFS under ``farm-bench`` (bench/RESULTS.md):

    .venv/bin/python bench/bfs_twophase.py N      (prints distinct, generated, CPU s, build)
"""
import sys
import time

import bench_entry  # noqa: F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.model import registry
from kafka_mc.explorers.bfs import search

PINNED = {3: 288, 5: 8_832, 7: 296_448, 8: 1_745_408}   # ../shared/bench/README.md

N = int(sys.argv[1]) if len(sys.argv) > 1 else 8
m = registry.bind(registry.load(model="twophase", overrides={"model.resource_managers": N}))
t = time.process_time()
o = search.explore(m)
assert o.stats.distinct == PINNED.get(N, o.stats.distinct), o.stats.distinct
print(o.stats.distinct, o.stats.generated, round(time.process_time() - t, 2),
      type(search.__loader__).__name__)
