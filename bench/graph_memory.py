"""Bytes per edge of a networkx graph against the state graph's arrays (``explorers/graph/state_graph``),
for the same edges: ``python bench/graph_memory.py [EDGES]`` (default 1,000,000; a Kafka-like
graph: 3.7 edges per state, as the default configuration has)."""
import resource
import sys

import networkx as nx
import numpy as np


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main(edges: int = 1_000_000) -> None:
    states = int(edges / 3.7)
    rng = np.random.default_rng(0)
    src = np.sort(rng.integers(0, states, edges)).astype(np.int32)
    dst = rng.integers(0, states, edges).astype(np.int32)
    act = rng.integers(0, 200, edges).astype(np.int32)
    arrays = src.nbytes + dst.nbytes + act.nbytes
    for kind in (nx.DiGraph, nx.MultiDiGraph):
        before = rss_mb()
        g = kind()
        g.add_edges_from(zip(src.tolist(), dst.tolist(), ({"action": int(a)} for a in act.tolist())))
        grown = rss_mb() - before
        print(f"{kind.__name__}: {g.number_of_edges():,} edges, {grown * 2**20 / edges:.0f} bytes an "
              f"edge (with its action)")
        del g
    print(f"arrays: {arrays / edges:.0f} bytes an edge (source, target, action: int32 each)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
