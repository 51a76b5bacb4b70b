"""Reachable states of a model in breadth-first order (shared by model and explorer tests)."""


def bfs_order(model, limit: int) -> list:
    """Up to about ``limit`` reachable states in BFS order: siblings one after the other, sharing
    the components their steps left alone."""
    seen, order = set(model.init_states()), list(model.init_states())
    for s in order:
        if len(order) >= limit:
            break
        for _, t in model.successors(s):
            if t not in seen:
                seen.add(t)
                order.append(t)
    return order
