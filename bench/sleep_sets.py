"""An estimate, not an explorer: how many transitions sleep sets would spare a BFS.

    PYTHONPATH=$PWD .venv/bin/python bench/sleep_sets.py RUN [--depth 22]

A RUN is as in ``bench/por.py``. Two breadth-first searches on the reduction view (no
symmetry), level by level: the plain one, and one with Godefroid's sleep sets -- a state reached
by action ``a`` sleeps on the actions its parent explored before ``a`` (or slept on) that are
independent of ``a`` (``kafka_mc.model.core.dependent`` on the parent's footprints), and does not take
them; a state reached from several parents of one level sleeps on the intersection. Printed per
depth: the distinct states of each (they should be equal: sleep sets prune transitions, not
states) and the transitions each generated.

What this leaves out, and a real implementation needs: a state met again from a later level
with a sleep set its first visit did not include would have to take the difference (here it is
only counted, "older revisits"); the successor function here still applies every action (a real
one would skip the sleeping ones before applying them); symmetry would need the sleep set
renamed with the state; and transition properties and the coverage of edges are computed on
transitions, so sleeping ones must be invisible to them.

Built since (branch ``sleep-sets-experiment``, ``bench/RESULTS.md`` ninth round): the same
states, a third fewer transitions, and no faster, so not merged.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from successors import model_for  # noqa: E402  (bench/successors.py)
import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.explorers.reductions.por import reduction_key  # noqa: E402
from kafka_mc.model.core import dependent  # noqa: E402


def plain(model, key, depth: int) -> list[tuple[int, int]]:
    inits = list(model.init_states())
    seen = {key(s) for s in inits}
    frontier, out, generated = inits, [], 0
    for _ in range(depth):
        nxt = []
        for s in frontier:
            for _, t in model.successors(s):
                generated += 1
                k = key(t)
                if k not in seen:
                    seen.add(k)
                    nxt.append(t)
        frontier = nxt
        out.append((len(seen), generated))
    return out


def sleeping(model, key, depth: int) -> list[tuple[int, int, int]]:
    group, table = model.group, model.footprints
    inits = list(model.init_states())
    seen = {key(s) for s in inits}
    frontier = [(s, frozenset()) for s in inits]
    out, generated, older = [], 0, 0
    for _ in range(depth):
        nxt: dict = {}
        for s, asleep in frontier:
            fp = table(s)
            done: list = []
            for a, t in model.successors(s):
                if a in asleep:
                    continue
                generated += 1
                ga = fp[group(a)]
                sleeps = frozenset(b for b in (*asleep, *done) if not dependent(fp[group(b)], ga))
                done.append(a)
                k = key(t)
                if k in nxt:
                    nxt[k][1] &= sleeps
                elif k in seen:
                    older += 1
                else:
                    seen.add(k)
                    nxt[k] = [t, sleeps]
        frontier = [(t, z) for t, z in nxt.values()]
        out.append((len(seen), generated, older))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--depth", type=int, default=22)
    o = ap.parse_args()
    model = model_for(o.run, symmetry=False)
    key = reduction_key(model)
    print("depth | distinct (plain, sleep sets) | generated (plain, sleep sets, ratio) | "
          "older revisits")
    for d, ((n1, g1), (n2, g2, r)) in enumerate(zip(plain(model, key, o.depth),
                                                    sleeping(model, key, o.depth)), 1):
        print(f"{d} | {n1:,} {n2:,} | {g1:,} {g2:,} {g2 / g1:.3f} | {r:,}")


if __name__ == "__main__":
    main()
