"""``kafka-mc graph``: the reachable state graph of a small configuration as DOT, GraphML or JSON
(networkx's node-link format), written through networkx (DOT through pydot).

A node per state, numbered in BFS order, with its depth, whether it is initial, whether it was
expanded, a short label and the state itself as canonical ITF JSON (``state``); an edge per
transition with its action. Graphs past ``max_states`` (default 10,000) are refused: a picture of
more states than that cannot be read, and networkx holds every edge as dicts of dicts.
"""
from __future__ import annotations

import json

import networkx as nx

from kafka_mc.model.core import Model
from kafka_mc.explorers.graph.state_graph import StateGraph
from kafka_mc.traces.itf import canonical, encode

FORMATS = ("dot", "graphml", "json")
MAX_STATES = 10_000


def to_networkx(model: Model, g: StateGraph, states: list) -> nx.MultiDiGraph:
    out = nx.MultiDiGraph(model=model.name)
    for i, s in enumerate(states):
        out.add_node(i, label=f"{i}", depth=int(g.depth[i]), initial=bool(g.discovered_by[i] < 0),
                     expanded=bool(g.expanded[i]),
                     state=canonical({k: encode(v) for k, v in model.itf_encode(s).items()}))
    labels = [model.format_action(a) for a in g.actions]
    for u, v, a in zip(g.src.tolist(), g.dst.tolist(), g.act.tolist()):
        out.add_edge(u, v, action=labels[a])
    return out


def export(graph: nx.MultiDiGraph, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(nx.node_link_data(graph, edges="edges"), sort_keys=True, indent=1) + "\n"
    if fmt == "graphml":
        return "\n".join(nx.generate_graphml(graph)) + "\n"
    dot = nx.MultiDiGraph(graph)
    for _, _, data in dot.edges(data=True):
        data["label"] = data["action"]
    for _, data in dot.nodes(data=True):
        data["state"] = data["state"].replace("\\", "\\\\")
    return nx.nx_pydot.to_pydot(dot).to_string()
