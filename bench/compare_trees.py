"""Time kafka-mc's single-process BFS from a given source tree (for before/after comparisons).

    .venv/bin/python bench/compare_trees.py TREE CONFIG [section.key=value ...]

TREE is a checkout of kafka-mc (``git worktree add /tmp/base <commit>``, or this one); its
packages are imported ahead of the installed ones. Prints the counts and the search's CPU
seconds; time whole processes of two trees alternately with any harness (``/usr/bin/time -v``,
hyperfine) to compare them side by side on a noisy machine.
"""
import sys
import time

sys.path.insert(0, sys.argv[1])

import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.explorers.bfs.search import explore  # noqa: E402
from kafka_mc.model import registry  # noqa: E402
from kafka_mc.model.config import resolve_config_path  # noqa: E402


def main() -> None:
    tree, name, *settings = sys.argv[1:]
    overrides = {}
    for s in settings:
        key, value = s.split("=", 1)
        overrides[key] = int(value) if value.isdigit() else value
    model = registry.bind(registry.load(resolve_config_path(name), overrides=overrides))
    t = time.process_time()
    out = explore(model)
    print(f"tree={tree} config={name} distinct={out.stats.distinct} "
          f"generated={out.stats.generated} cpu_s={time.process_time() - t:.2f} "
          f"verdict={out.verdict}", flush=True)


if __name__ == "__main__":
    main()
