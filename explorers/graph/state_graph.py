"""The reachable state graph, in compact arrays.

States are numbered in the order the breadth-first search discovers them (so every level is a
contiguous range and a state's number is its position in BFS order); edges are numbered in the
order they are generated, which is the order their sources are expanded, so the out-edges of a
state are a contiguous range (``first_edge``). Per state: its fingerprint, the edge that
discovered it (the BFS tree: shortest paths from an initial state), its depth and whether it was
expanded; per edge: source, target and the action's number in ``actions``.

Why arrays and not a networkx ``DiGraph``: the default Kafka configuration has 1.6 million
states and 6 million transitions. A ``DiGraph`` holds each edge in two dicts of dicts, several
hundred bytes an edge (measured in bench/RESULTS.md), gigabytes here; these arrays take 12 bytes
an edge and 20 a state, and scipy's compiled ``csgraph`` routines (strongly connected components,
breadth-first distances) run on them without copying into Python objects. networkx serves where it
is good: exports and the analysis of graphs small enough to read (``explorers/graph/export.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components


@dataclass(frozen=True)
class StateGraph:
    fingerprints: list[int]        # per state
    discovered_by: np.ndarray      # per state: the edge that discovered it; -1: an initial state
    depth: np.ndarray              # per state: length of a shortest path from an initial state
    expanded: np.ndarray           # per state (bool): successors computed (False: cut by the
                                   # state constraint or the depth bound, or the search stopped)
    src: np.ndarray                # per edge (int32)
    dst: np.ndarray                # per edge (int32)
    act: np.ndarray                # per edge (int32): index into ``actions``
    actions: tuple                 # the distinct actions taken, in order of first generation

    @property
    def states(self) -> int:
        return len(self.fingerprints)

    @property
    def edges(self) -> int:
        return len(self.src)

    @property
    def initial(self) -> np.ndarray:
        return np.flatnonzero(self.discovered_by < 0)

    @property
    def first_edge(self) -> np.ndarray:
        """``first_edge[i]:first_edge[i + 1]`` are state ``i``'s out-edges (n + 1 entries)."""
        return np.searchsorted(self.src, np.arange(self.states + 1), side="left")

    def tree_path(self, i: int) -> list[int]:
        """The edges of the BFS tree's path from an initial state to state ``i``."""
        edges = []
        e = int(self.discovered_by[i])
        while e >= 0:
            edges.append(e)
            e = int(self.discovered_by[self.src[e]])
        return edges[::-1]

    def root(self, i: int) -> int:
        e = int(self.discovered_by[i])
        while e >= 0:
            i = int(self.src[e])
            e = int(self.discovered_by[i])
        return i

    def matrix(self, keep: np.ndarray | None = None) -> csr_matrix:
        """The adjacency matrix, restricted to the edges whose both ends ``keep`` marks."""
        src, dst = self.src, self.dst
        if keep is not None:
            sel = keep[src] & keep[dst]
            src, dst = src[sel], dst[sel]
        n = self.states
        return csr_matrix((np.ones(len(src), dtype=bool), (src, dst)), shape=(n, n))

    def statistics(self) -> dict[str, Any]:
        """Strongly connected components (count, largest, terminal: no edge leaves them) and
        the diameter as TLC reports it (the longest shortest path from an initial state)."""
        n = self.states
        if n == 0:
            return {"states": 0, "edges": 0, "sccs": 0, "largest_scc": 0, "terminal_sccs": 0,
                    "nontrivial_sccs": 0, "diameter": 0}
        count, labels = connected_components(self.matrix(), directed=True, connection="strong")
        sizes = np.bincount(labels, minlength=count)
        crossing = labels[self.src] != labels[self.dst]
        leaves = np.zeros(count, dtype=bool)
        leaves[labels[self.src[crossing]]] = True
        looped = np.zeros(count, dtype=bool)
        looped[labels[self.src[~crossing]]] = True   # a self-loop or an edge inside a component
        return {"states": n, "edges": self.edges, "sccs": int(count),
                "largest_scc": int(sizes.max()), "terminal_sccs": int((~leaves).sum()),
                "nontrivial_sccs": int(looped.sum()), "diameter": int(self.depth.max())}
