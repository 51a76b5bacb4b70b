"""Fair lassos on a state graph: where an ``eventually`` claim fails under fairness.

The claim is ``when ~> holds`` (``<>holds`` is the case where ``when`` marks the initial
states). It fails iff some fair behaviour reaches a *trigger* (a state where ``when`` holds and
``holds`` does not) and from there never reaches a state where ``holds`` does: a lasso whose
stem ends in the trigger's ``holds``-free future and whose loop stays in it.

* The *bad* region: the expanded states where ``holds`` is false. Unexpanded states (cut by the
  state constraint or the depth bound) have no known future: no lasso goes through them.
* A loop is fair when every fairness condition is met on it. Weak (WF): the family is taken on
  the loop or disabled at some state of it. Strong (SF): taken on the loop, or enabled at no
  state of it. The families enabled at a state are those of its out-edges.
* Stuttering: a behaviour may stay in a state forever when no fair family is enabled there (a
  final state with no enabled action is the common case); TLA+ allows stuttering anywhere, and
  fairness forbids it exactly where a fair family is enabled.
* Fair strongly connected components, Emerson-Lei style: split the bad region into SCCs; an SCC
  whose closed walk through every state and edge would be unfair to a weak family (enabled at
  every state, never taken) holds no fair loop at all and is dropped; for an SCC unfair only to a
  strong family, drop its states where that family is enabled and split the rest again. What is
  left is fair as a whole.
* Fairness is judged on the loop reported, not only on its SCC: the loop is built to take an
  edge of each family the SCC takes, and to visit a state where each weak family it never takes
  is disabled.

Everything heavy runs on arrays: scipy's strongly connected components and breadth-first
distances (compiled), numpy reductions for the per-SCC masks. Families are bits of a 64-bit mask
(at most 64 fairness families).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, dijkstra

from kafka_mc.explorers.graph.state_graph import StateGraph

MAX_FAMILIES = 64


@dataclass(frozen=True)
class Fairness:
    """The fairness conditions as bits: ``names[k]`` is family bit ``1 << k``."""

    names: tuple[str, ...]
    weak: int
    strong: int
    edge_bits: np.ndarray     # per edge: the bit of its action's family (0: unfair)
    enabled: np.ndarray       # per state: the families enabled there (its out-edges' bits)

    @property
    def fair(self) -> int:
        return self.weak | self.strong


def fairness_bits(g: StateGraph, families: list[tuple[str, str]], family_of) -> Fairness:
    """``families``: (name, "weak" | "strong"); ``family_of(action)``: a name or None."""
    if len(families) > MAX_FAMILIES:
        raise ValueError(f"at most {MAX_FAMILIES} fairness families, the model declares "
                         f"{len(families)}")
    bit = {name: 1 << k for k, (name, _) in enumerate(families)}
    weak = sum(bit[n] for n, kind in families if kind == "weak")
    strong = sum(bit[n] for n, kind in families if kind == "strong")
    per_action = np.array([bit.get(family_of(a), 0) for a in g.actions] or [0], dtype=np.uint64)
    edge_bits = per_action[g.act] if g.edges else np.zeros(0, dtype=np.uint64)
    enabled = np.zeros(g.states, dtype=np.uint64)
    first = g.first_edge
    starts = first[:-1]
    busy = first[1:] > starts
    if busy.any():
        enabled[busy] = np.bitwise_or.reduceat(edge_bits, starts[busy])
    return Fairness(tuple(n for n, _ in families), weak, strong, edge_bits, enabled)


@dataclass(frozen=True)
class Lasso:
    """A fair behaviour violating the claim: ``stem`` (edges from an initial state to the loop's
    first state), ``loop`` (edges around the loop; empty: stuttering at the stem's last state)
    and ``trigger``, the number of stem edges before the trigger state."""

    start: int
    stem: tuple[int, ...]
    loop: tuple[int, ...]
    trigger: int


def fair_components(g: StateGraph, bad: np.ndarray, fair: Fairness):
    """The fair SCCs inside ``bad``: per state its component (-1: none) and per component
    (taken, enabled everywhere, enabled somewhere) masks."""
    comp = np.full(g.states, -1, dtype=np.int64)
    masks: list[tuple[int, int, int]] = []
    cand = bad.copy()
    while cand.any():
        sel = cand[g.src] & cand[g.dst]
        es, ed, eb = g.src[sel], g.dst[sel], fair.edge_bits[sel]
        n = g.states
        m = csr_matrix((np.ones(len(es), dtype=bool), (es, ed)), shape=(n, n))
        count, labels = connected_components(m, directed=True, connection="strong")
        inside = labels[es] == labels[ed]
        nontrivial = np.zeros(count, dtype=bool)
        nontrivial[labels[es[inside]]] = True
        taken = np.zeros(count, dtype=np.uint64)
        np.bitwise_or.at(taken, labels[es[inside]], eb[inside])
        nodes = np.flatnonzero(cand)
        everywhere = np.full(count, np.iinfo(np.uint64).max, dtype=np.uint64)
        np.bitwise_and.at(everywhere, labels[nodes], fair.enabled[nodes])
        somewhere = np.zeros(count, dtype=np.uint64)
        np.bitwise_or.at(somewhere, labels[nodes], fair.enabled[nodes])
        weak_bad = (np.uint64(fair.weak) & everywhere & ~taken) != 0
        strong_bad = (np.uint64(fair.strong) & somewhere & ~taken)
        good = nontrivial & ~weak_bad & (strong_bad == 0)
        split = nontrivial & ~weak_bad & (strong_bad != 0)
        for c in np.flatnonzero(good):
            masks.append((int(taken[c]), int(everywhere[c]), int(somewhere[c])))
        ids = np.full(count, -1, dtype=np.int64)
        ids[good] = np.arange(len(masks) - int(good.sum()), len(masks))
        node_labels = labels[nodes]
        comp[nodes] = np.maximum(comp[nodes], ids[node_labels])
        # Next round: only the split components, without their states where a strong family
        # they never take is enabled.
        keep = split[node_labels] & ((fair.enabled[nodes] & strong_bad[node_labels]) == 0)
        cand = np.zeros(g.states, dtype=bool)
        cand[nodes[keep]] = True
    return comp, masks


def find_lasso(g: StateGraph, holds: np.ndarray, trigger: np.ndarray,
               fair: Fairness) -> Lasso | None:
    """A shortest-stem fair lasso violating ``trigger ~> holds`` (per-state bool arrays), or
    None if the claim holds on every fair behaviour of the graph."""
    bad = g.expanded & ~holds
    if not (bad & trigger).any():
        return None
    comp, masks = fair_components(g, bad, fair)
    stutter = bad & ((fair.enabled & np.uint64(fair.fair)) == 0)
    accept = stutter | (comp >= 0)
    if not accept.any():
        return None
    # Distances to an accepting state inside the bad region: breadth-first from a virtual
    # node, backwards along the bad region's edges.
    n = g.states
    sel = bad[g.src] & bad[g.dst]
    targets = np.flatnonzero(accept)
    rows = np.concatenate([g.dst[sel], np.full(len(targets), n)])
    cols = np.concatenate([g.src[sel], targets])
    back = csr_matrix((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(n + 1, n + 1))
    dist, pred = dijkstra(back, directed=True, indices=n, unweighted=True,
                          return_predecessors=True)
    dist = dist[:n]
    reach = bad & trigger & np.isfinite(dist)
    if not reach.any():
        return None
    cost = np.where(reach, g.depth + np.where(np.isfinite(dist), dist, 0), np.inf)
    s0 = int(np.argmin(cost))
    first = g.first_edge
    stem = g.tree_path(s0)
    trig = len(stem)
    s = s0
    while not accept[s]:   # follow the distances down to the accepting state
        nxt = int(pred[s])
        stem.append(_edge(g, first, s, lambda e: g.dst[e] == nxt))
        s = nxt
    loop: tuple[int, ...] = ()
    if not stutter[s]:
        loop = _fair_loop(g, first, fair, comp, masks[comp[s]], s)
    return Lasso(g.root(s0), tuple(stem), loop, trig)


def _edge(g, first, u, ok) -> int:
    return next(e for e in range(first[u], first[u + 1]) if ok(e))


def _fair_loop(g, first, fair: Fairness, comp, masks, a) -> tuple[int, ...]:
    """A closed walk from ``a`` inside its fair component that meets every fairness condition:
    an edge of each family the component takes (of each strong family, these are all it
    enables), and for each weak family it never takes a state where that family is disabled."""
    c = comp[a]
    taken, _, somewhere = masks
    walk: list[int] = []
    cur, seen_bits, visited = a, 0, {a}

    def inside(e):
        return comp[g.dst[e]] == c

    def search(goal_edge, goal_state, need_step=False):
        """Edges of a shortest path from ``cur`` to the first edge ``goal_edge`` accepts (taken
        last) or to a state ``goal_state`` accepts."""
        if goal_state is not None and goal_state(cur) and not need_step:
            return []
        prev = {cur: None}
        queue = deque([cur])
        while queue:
            u = queue.popleft()
            for e in range(first[u], first[u + 1]):
                if not inside(e):
                    continue
                if goal_edge is not None and goal_edge(e):
                    return _unwind(g, prev, u) + [e]
                v = int(g.dst[e])
                if v not in prev:
                    prev[v] = e
                    if goal_state is not None and goal_state(v):
                        return _unwind(g, prev, v)
                    queue.append(v)
        raise AssertionError("a fair component is strongly connected")

    for k in range(len(fair.names)):
        bit = 1 << k
        if not (somewhere & bit):
            continue
        if taken & bit:
            if seen_bits & bit:
                continue
            path = search(lambda e, b=bit: int(fair.edge_bits[e]) & b, None)
        elif fair.weak & bit:
            if any(not int(fair.enabled[v]) & bit for v in visited):
                continue
            path = search(None, lambda v, b=bit: not int(fair.enabled[v]) & b)
        else:
            continue   # a strong family enabled but never taken: not in a fair component
        for e in path:
            seen_bits |= int(fair.edge_bits[e])
            visited.add(int(g.dst[e]))
        walk += path
        cur = int(g.dst[path[-1]]) if path else cur
    walk += search(lambda e: g.dst[e] == a, None) if cur == a and not walk else \
        search(None, lambda v: v == a) if cur != a else []
    return tuple(walk)


def _unwind(g, prev, v) -> list[int]:
    out = []
    while prev[v] is not None:
        e = prev[v]
        out.append(e)
        v = int(g.src[e])
    return out[::-1]
