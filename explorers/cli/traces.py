"""The trace commands: ``kafka-mc replay`` (re-execute a trace and re-check its property),
``minimize`` (shrink it while it violates the same property) and ``render`` (text, Mermaid, HTML
or DOT)."""
from __future__ import annotations

import sys

from kafka_mc.explorers.cli.common import check_out_file, explicit, not_the_input, sibling, write_file
from kafka_mc.explorers.core.result import EXIT_OK, Violation
from kafka_mc.traces.trace import read


def add_parser(sub) -> None:
    r = sub.add_parser("replay", help="re-execute a trace and re-check its property")
    r.add_argument("trace", metavar="TRACE", help="an ITF trace file (kafka-mc check writes them)")
    r.add_argument("--diff", action="store_true",
                   help="show each step's changes, and every difference where the trace diverges")

    m = sub.add_parser("minimize", help="shrink a trace while it violates the same property")
    m.add_argument("trace", metavar="TRACE", help="an ITF trace file that violates a property")
    m.add_argument("--out", metavar="FILE", help="default: TRACE with .min.itf.json")

    rd = sub.add_parser("render", help="a trace as text, a Mermaid sequence diagram or HTML")
    rd.add_argument("trace", metavar="TRACE", help="an ITF trace file")
    rd.add_argument("--format", choices=["text", "mermaid", "html", "dot"], default="text",
                    help="text: TLC-style states within the terminal's width; mermaid: a sequence "
                         "diagram; html: one self-contained page; dot: Graphviz")
    rd.add_argument("--diff", action="store_true", help="text: only what each step changed")
    rd.add_argument("--out", metavar="FILE", help="default: standard output")


def main(args) -> int:
    return {"replay": cmd_replay, "minimize": cmd_minimize, "render": cmd_render}[args.command](args)


def cmd_replay(args) -> int:
    """Exit: the code ``check`` gave (12; 11 deadlock, 75 model error) when the violation
    reproduces, 0 when the trace replays but no longer violates, 2 when it does not replay."""
    from kafka_mc.traces.render import story, text
    from kafka_mc.traces.replay import Divergence, replay

    trace = explicit(read(args.trace), args.trace, "replay")
    try:
        result = replay(trace)
    except Divergence as d:
        if args.diff:
            print("\n".join(d.report()))
        raise
    if args.diff:
        print(text(story(trace, args.trace, result), diff=True))
    print(f"replayed {result.steps} steps: {result.message}")
    return Violation("", trace.meta["kind"]).exit_code if result.reproduced else EXIT_OK


def cmd_minimize(args) -> int:
    from kafka_mc.traces.explain import lasso_steps, steps
    from kafka_mc.traces.minimize import minimize

    out = args.out if args.out is not None else sibling(args.trace, ".min.itf.json")
    check_out_file(out)
    not_the_input(out, args.trace)
    explicit(read(args.trace), args.trace, "minimize")
    model, states, small = minimize(read(args.trace))
    write_file(out, small.to_json(model))
    print(f"minimized {small.meta['minimized_from']} steps to {len(small)}"
          + (" (the stem; the loop is kept)" if small.loop is not None else "") + f": {out}")
    if small.loop is not None:
        print("\n".join(lasso_steps(model, states[:len(small.actions) + 1], small.actions,
                                    small.meta["property"], small.loop,
                                    None if small.loop_action is None else
                                    model.itf_decode_action(small.loop_action),
                                    small.meta.get("trigger", 0))))
    else:
        print("\n".join(steps(model, states, small.actions, small.meta["property"],
                               small.meta["kind"])))
    return EXIT_OK


def cmd_render(args) -> int:
    from kafka_mc.traces.render import render

    if args.out is not None:
        check_out_file(args.out)
        not_the_input(args.out, args.trace)
    text = render(explicit(read(args.trace), args.trace, "render"), args.format, diff=args.diff,
                  file=args.trace)
    if args.out is not None:
        write_file(args.out, text)
        print(f"{args.format} written to {args.out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK
