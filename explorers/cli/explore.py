"""``kafka-mc explore``: serve the web explorer (``kafka_mc.explorers.web``) on a local port."""
from __future__ import annotations

import sys

from kafka_mc.model import registry
from kafka_mc.model.config import CHECK_PARAMS, shown
from kafka_mc.explorers.cli.common import UsageError, config_arguments, port_number, load_config
from kafka_mc.explorers.core.result import EXIT_OK
from kafka_mc.traces.trace import read, read_bytes


def add_parser(sub) -> None:
    ex = config_arguments(
        sub.add_parser("explore", help="walk the state space in the browser (a local web page)"),
        "TOML file or name of a shipped config (default: built-in, or the trace's with --trace)")
    ex.add_argument("--trace", metavar="FILE", help="an ITF trace to open and step through")
    ex.add_argument("--port", type=port_number, default=8023, metavar="N",
                    help="TCP port (default 8023; 0: any free port)")
    ex.add_argument("--host", metavar="ADDRESS",
                    help="listen on ADDRESS instead of 127.0.0.1 (anyone who can reach it can "
                         "use the explorer)")


def main(args) -> int:
    """Serve the web explorer until interrupted (Ctrl-C: exit 130, SIGTERM: 143, as any command)."""
    from kafka_mc.explorers.web.app import LOOPBACK, bind, create_app, serve
    from kafka_mc.explorers.web.session import ExploreError, Explorer, label_of, model_values
    from kafka_mc.traces.replay import model_of

    data = None
    if args.trace is not None:   # read once (the one reader: a regular file only), then parsed
        data = read_bytes(args.trace)
        trace = read(args.trace, data)   # a TraceError here is one line, exit 2
    if args.trace is not None and args.config is None and not (args.sets or args.protocol
                                                                or args.model):
        model = model_of(trace)
        cfg = registry.from_dict(trace.meta["config"], source=args.trace)
    else:
        args.depth = args.deadlock = args.invariants = None
        cfg = load_config(args)
        model = registry.bind(cfg)
        ignored = [p.key for p in CHECK_PARAMS if p.key != "check.symmetry"
                   and cfg.get(p.key) != (tuple(p.default) if p.type is list else p.default)]
        if ignored:   # (the view's symmetry applies: the model is bound with it)
            print(f"kafka-mc: warning: {shown(cfg.source)}: {', '.join(ignored)} do not apply "
                  "to explore, which walks the whole state space and shows every property: "
                  "ignored", file=sys.stderr)
        if args.trace is not None:
            theirs = registry.from_dict(trace.meta["config"], source=args.trace)
            if model_values(theirs) != model_values(cfg):
                raise UsageError(f"--trace {shown(args.trace)} is of {label_of(theirs)}, not "
                                 f"{label_of(cfg)}: leave out CONFIG to explore the trace's")
    try:
        explorer = Explorer(cfg, model, data)
    except ExploreError as e:
        raise UsageError(f"--trace {shown(args.trace)}: {e}") from None
    host = args.host if args.host is not None else LOOPBACK
    if not host:
        raise UsageError("--host is empty")
    try:
        sock = bind(host, args.port)
    except (OSError, UnicodeError) as e:
        raise UsageError(f"cannot listen on {shown(host)} port {args.port}: "
                         f"{getattr(e, 'strerror', None) or e}") from None
    if host != LOOPBACK:
        print(f"kafka-mc: warning: listening on {shown(host)}, not {LOOPBACK}: anyone who can "
              "reach this address can use the explorer", file=sys.stderr)
    port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    print(f"kafka-mc explore: {explorer.sessions['main'].label}")
    print(f"serving on http://{shown_host}:{port}/ (Ctrl-C stops)", flush=True)
    try:
        serve(create_app(explorer), sock)
    finally:
        sock.close()
    return EXIT_OK
