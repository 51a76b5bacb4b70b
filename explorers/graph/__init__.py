"""The state graph: a search that keeps every edge (``search``), as arrays (``state_graph``), so
that liveness can be checked on it (``liveness``: fair lassos) and small graphs exported
(``export``: DOT, GraphML, JSON)."""
