"""``kafka-mc graph``: write the reachable state graph of a small configuration (DOT, GraphML, JSON)."""
from __future__ import annotations

from kafka_mc.model import registry
from kafka_mc.explorers.cli.common import (UsageError, check_out_file, config_arguments, nonneg, positive,
                                  write_file, load_config)
from kafka_mc.explorers.core.result import EXIT_OK


def add_parser(sub) -> None:
    gr = config_arguments(sub.add_parser("graph", help="write the reachable state graph of a "
                                                        "small configuration"))
    gr.add_argument("--depth", type=nonneg, metavar="N", help="depth bound (0 = unbounded)")
    gr.add_argument("--format", choices=["dot", "graphml", "json"], default="dot",
                    help="Graphviz, GraphML or networkx's node-link JSON")
    gr.add_argument("--out", required=True, metavar="FILE", help="the file to write")
    gr.add_argument("--max-states", type=positive, default=10_000, metavar="N",
                    help="refuse graphs with more states than this (default 10,000)")


def main(args) -> int:
    """Exit 0 with the graph written; 2 when it is too big (or any bad input)."""
    from kafka_mc.explorers.graph import search as graph
    from kafka_mc.explorers.graph import export as graph_export

    args.deadlock = args.invariants = None
    check_out_file(args.out)
    cfg = load_config(args)
    model = registry.bind(cfg)
    g, states, outcome = graph.state_graph(model, max_states=args.max_states,
                                           max_depth=cfg["check.max_depth"])
    if outcome.extra.get("too_big"):
        raise UsageError(f"the state graph has more than {args.max_states:,} states (found "
                         f"{g.states:,} before stopping): too big to read; raise --max-states or "
                         f"bound it with --depth")
    text = graph_export.export(graph_export.to_networkx(model, g, states), args.format)
    write_file(args.out, text)
    stats = g.statistics()
    print(f"{args.format} written to {args.out}: {stats['states']:,} states, {stats['edges']:,} "
          f"edges, {stats['sccs']:,} strongly connected components (largest "
          f"{stats['largest_scc']:,}, {stats['terminal_sccs']:,} terminal), diameter "
          f"{stats['diameter']}" + ("" if outcome.complete else "; cut at the depth bound"))
    return EXIT_OK
