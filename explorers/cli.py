"""The ``kafka-mc`` command (DESIGN.md section 6).

Exit codes: 0 all checks hold; 2 usage or input error; 11 deadlock; 12 safety violation
(including a witness never reached); 13 liveness violation; 75 model error; 130 interrupted.
Bad input of any kind (flags, configuration, trace file) is one line on stderr and exit 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from importlib import metadata
from pathlib import Path

from model import registry
from model.config import ConfigError, parse_assignment, resolve_config_path, shipped_configs
from explorers import report
from explorers.bfs import BfsOptions, explore, select_properties
from explorers.result import EXIT_INTERRUPTED, EXIT_OK, EXIT_SAFETY, EXIT_USAGE
from traces.trace import Trace, TraceError, read


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage + message)
        raise UsageError(message)


def _version() -> str:
    try:
        return metadata.version("kafka-mc")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kafka-mc", description="Model checker for Kafka's transaction protocol.")
    p.add_argument("--version", action="version", version=f"kafka-mc {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    c = sub.add_parser("check", help="explore a configuration and check its properties")
    c.add_argument("config", nargs="?", metavar="CONFIG",
                   help="TOML file or name of a shipped config (default: built-in)")
    c.add_argument("--model", help="model name (overrides [model] name)")
    c.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   dest="sets", help="override a configuration value (repeatable)")
    c.add_argument("--protocol", metavar="PRESET", help="shorthand for --set protocol.version=PRESET")
    c.add_argument("--explorer", choices=["bfs"], default="bfs")
    c.add_argument("--invariant", action="append", metavar="NAME", dest="invariants",
                   help="check only this property (repeatable; default: [check] invariants)")
    c.add_argument("--depth", type=_nonneg, metavar="N", help="depth bound (0 = unbounded)")
    dl = c.add_mutually_exclusive_group()
    dl.add_argument("--deadlock", dest="deadlock", action="store_const", const=True,
                    help="report states with no enabled action")
    dl.add_argument("--no-deadlock", dest="deadlock", action="store_const", const=False,
                    help="do not report states with no enabled action")
    c.add_argument("--out", default="out", metavar="DIR", help="where traces go (default: out)")
    c.add_argument("--json", action="store_true", help="print one JSON result object")
    c.add_argument("--progress-interval", type=float, default=2.0, metavar="SECONDS",
                   help=argparse.SUPPRESS)

    ls = sub.add_parser("list", help="list models, protocols, invariants or configs")
    ls.add_argument("what", choices=["models", "protocols", "invariants", "configs"])
    ls.add_argument("--model", help="the model whose invariants to list (default: the default)")

    r = sub.add_parser("replay", help="re-execute a trace and re-check its property")
    r.add_argument("trace", metavar="TRACE")
    return p


def _nonneg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("a command is required: check, list or replay (see kafka-mc --help)")
        return {"check": cmd_check, "list": cmd_list, "replay": cmd_replay}[args.command](args)
    except (UsageError, ConfigError, TraceError) as e:
        print(f"kafka-mc: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("kafka-mc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def load_config(args):
    sets = [parse_assignment(s) for s in args.sets]
    if args.protocol:
        sets.append(("protocol.version", args.protocol))
    if args.depth is not None:
        sets.append(("check.max_depth", args.depth))
    if args.deadlock is not None:
        sets.append(("check.deadlock", args.deadlock))
    if args.invariants:
        sets.append(("check.invariants", args.invariants))
    path = resolve_config_path(args.config) if args.config else None
    return registry.load(path, model=args.model, overrides=sets)


def cmd_check(args) -> int:
    cfg = load_config(args)
    model = registry.bind(cfg)
    names = None if "all" in cfg["check.invariants"] else list(cfg["check.invariants"])
    try:
        select_properties(model, names)
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    progress = report.ProgressPrinter()
    options = BfsOptions(properties=names, max_depth=cfg["check.max_depth"],
                         check_deadlock=cfg.get("check.deadlock"), progress=progress,
                         progress_interval=args.progress_interval)
    try:
        outcome = explore(model, options)
    finally:
        progress.close()
    traces = write_traces(outcome, cfg, model, Path(args.out))
    print(report.as_json(outcome, cfg, model, traces) if args.json
          else report.text(outcome, cfg, model, traces))
    return outcome.exit_code


def write_traces(outcome, cfg, model, out: Path) -> dict[str, str]:
    written = {}
    for v in outcome.violations:
        if v.path is None:
            continue
        out.mkdir(parents=True, exist_ok=True)
        file = out / f"{v.property}.itf.json"
        meta = {"model": cfg.model, "config": cfg.to_dict(), "property": v.property,
                "kind": v.kind, "description": v.claim, "explorer": outcome.explorer,
                "source": f"kafka-mc {_version()}"}
        Trace.from_path(model, v.path, meta).write(file, model)
        written[v.property] = str(file)
    return written


def cmd_list(args) -> int:
    models = registry.models()
    if args.what == "models":
        for name, e in sorted(models.items()):
            print(f"{name:<18} {e.summary}")
    elif args.what == "protocols":
        presets = [(name, p) for name, e in sorted(models.items()) for p in e.presets]
        for name, p in presets:
            print(f"{p:<14} ({name})")
        if not presets:
            print("no registered model has protocol presets yet")
    elif args.what == "invariants":
        cfg = registry.load(None, model=args.model)
        for p in registry.bind(cfg).properties():
            print(f"{p.name:<24} {p.expectation.value:<10} {p.claim}")
    else:
        for path in shipped_configs():
            print(path.stem)
    return EXIT_OK


def cmd_replay(args) -> int:
    from traces.replay import replay

    result = replay(read(args.trace))
    print(f"replayed {result.steps} steps: {result.message}")
    return EXIT_SAFETY if result.reproduced else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
