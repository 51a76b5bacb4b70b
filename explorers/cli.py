"""The ``kafka-mc`` command (DESIGN.md section 6).

Exit codes: 0 all checks hold; 2 usage or input error; 11 deadlock; 12 safety violation
(including a witness never reached); 13 liveness violation; 14 symbolic check inconclusive
(``--explorer symbolic``: induction failed, a counterexample to induction is written); 75 model
error; 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM; handled as Ctrl-C: the partial statistics are printed).
Bad input of any kind (flags, configuration, trace file, output path) is one line on stderr and
exit 2, before any search. A trace that cannot be written after a search does not lose its
result: the verdict and counterexample are printed, then the write error as one line, and the
exit code is the verdict's.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import tempfile
import threading
from importlib import metadata
from pathlib import Path

from model import registry
from model.config import ConfigError, parse_assignment, resolve_config_path, shipped_configs, shown
from explorers import report
from explorers.bfs import BfsOptions, explore
from explorers.checking import select_properties
from explorers.result import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE, Violation
from realkafka import cli as real_cli
from traces.files import same_file, write_atomically
from traces.trace import Trace, TraceError, read, trace_metadata


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

    c = _config_arguments(sub.add_parser("check", help="explore a configuration and check its "
                                                       "properties"))
    c.add_argument("--explorer", choices=list(EXPLORERS), default="bfs")
    # Flags for some explorers only (EXPLORER_FLAGS); unset means the explorer's default.
    c.add_argument("--max-examples", type=_positive, metavar="N",
                   help="stateful: behaviours hypothesis generates (default 1000)")
    c.add_argument("--steps", type=_positive, metavar="K",
                   help="stateful: actions per behaviour at most (default 50)")
    c.add_argument("--runs", type=_positive, metavar="R",
                   help="simulate: number of random walks (default 10000)")
    c.add_argument("--swarm", action="store_const", const=True,
                   help="simulate: swarm walks (each leaves out a random subset of the model's "
                        "fault families, reweights its actions and may deliver held-back "
                        "messages late; explorers/swarm.py)")
    c.add_argument("--seed", type=_nonneg, metavar="S",
                   help="stateful, simulate: random seed (default 0); with --swarm, walk 0's "
                        "seed, so a walk's seed with --runs 1 replays that walk")
    c.add_argument("--workers", type=_workers, metavar="N",
                   help="bfs: processes expanding each level, with the same counts and "
                        "counterexamples as one (default 1); spark: local[N] threads (default: "
                        "all cores), with --master spark.cores.max; auto: the cores this process "
                        "may use")
    c.add_argument("--partitions", type=_positive, metavar="N",
                   help="spark: partitions of the visited set (default: the default parallelism)")
    c.add_argument("--spark-conf", action="append", metavar="KEY=VALUE",
                   help="spark: a Spark configuration property (repeatable)")
    c.add_argument("--master", metavar="URL",
                   help="spark: cluster master, e.g. spark://host:7077 (default: embedded)")
    c.add_argument("--checkpoint", type=_minutes, metavar="MIN",
                   help="bfs, spark: save the search at the first level boundary every MIN "
                        "minutes (0: every level), in OUT/bfs or OUT/spark")
    c.add_argument("--recover", metavar="DIR",
                   help="bfs, spark: resume the search checkpointed in DIR (e.g. out/bfs)")
    c.add_argument("--memory", type=_positive, metavar="MB",
                   help="bfs: a memory budget; past half of it the BFS tree and the frontier "
                        "go to disk (OUT/bfs with --checkpoint, else a temporary directory)")
    c.add_argument("--induction", type=_positive, metavar="K",
                   help="symbolic: prove by k-induction up to K (default 1; without --depth)")
    c.add_argument("--continue", dest="continue", action="store_const", const=True,
                   help="bfs, spark: keep exploring after a violation and report every violated "
                        "property, each with its own shortest counterexample")
    po = c.add_mutually_exclusive_group()
    po.add_argument("--por", dest="por", action="store_const", const=True,
                    help="bfs, spark: partial-order reduction (safety only; counterexamples are "
                         "shortest within the reduced graph; default: [check] por, unset: on "
                         "without a depth bound)")
    po.add_argument("--no-por", dest="por", action="store_const", const=False,
                    help="bfs, spark: search the full state graph")
    c.add_argument("--symmetry", action="store_const", const=True,
                   help="bfs, spark, graph, simulate: symmetry reduction under the identifiers "
                        "the model declares interchangeable (safety only; counterexamples stay "
                        "concrete; default: [check] symmetry)")
    c.add_argument("--invariant", action="append", metavar="NAME", dest="invariants",
                   help="check only this property (repeatable; default: [check] invariants)")
    c.add_argument("--depth", type=_nonneg, metavar="N",
                   help="depth bound (0 = unbounded); simulate: steps per walk (0: 100)")
    dl = c.add_mutually_exclusive_group()
    dl.add_argument("--deadlock", dest="deadlock", action="store_const", const=True,
                    help="report states with no enabled action")
    dl.add_argument("--no-deadlock", dest="deadlock", action="store_const", const=False,
                    help="do not report states with no enabled action")
    c.add_argument("--out", default="out", metavar="DIR", help="where traces go (default: out)")
    c.add_argument("--json", action="store_true", help="print one JSON result object")
    c.add_argument("--progress-interval", type=float, default=2.0, metavar="SECONDS",
                   help=argparse.SUPPRESS)

    gr = _config_arguments(sub.add_parser("graph", help="write the reachable state graph of a "
                                                        "small configuration"))
    gr.add_argument("--depth", type=_nonneg, metavar="N", help="depth bound (0 = unbounded)")
    gr.add_argument("--format", choices=["dot", "graphml", "json"], default="dot")
    gr.add_argument("--out", required=True, metavar="FILE")
    gr.add_argument("--max-states", type=_positive, default=10_000, metavar="N",
                    help="refuse graphs with more states than this (default 10,000)")

    ls = sub.add_parser("list", help="list models, protocols, invariants or configs")
    ls.add_argument("what", choices=["models", "protocols", "invariants", "mutants", "configs"])
    ls.add_argument("--model", help="the model whose invariants to list (default: the default)")

    r = sub.add_parser("replay", help="re-execute a trace and re-check its property")
    r.add_argument("trace", metavar="TRACE")
    r.add_argument("--diff", action="store_true",
                   help="show each step's changes, and every difference where the trace diverges")

    m = sub.add_parser("minimize", help="shrink a trace while it violates the same property")
    m.add_argument("trace", metavar="TRACE")
    m.add_argument("--out", metavar="FILE", help="default: TRACE with .min.itf.json")

    rd = sub.add_parser("render", help="a trace as text, a Mermaid sequence diagram or HTML")
    rd.add_argument("trace", metavar="TRACE")
    rd.add_argument("--format", choices=["text", "mermaid", "html", "dot"], default="text")
    rd.add_argument("--diff", action="store_true", help="text: only what each step changed")
    rd.add_argument("--out", metavar="FILE", help="default: standard output")
    ex = _config_arguments(
        sub.add_parser("explore", help="walk the state space in the browser (a local web page)"),
        "TOML file or name of a shipped config (default: built-in, or the trace's with --trace)")
    ex.add_argument("--trace", metavar="FILE", help="an ITF trace to open and step through")
    ex.add_argument("--port", type=_port, default=8023, metavar="N",
                    help="TCP port (default 8023; 0: any free port)")
    real_cli.add_parser(sub)
    ex.add_argument("--host", metavar="ADDRESS",
                    help="listen on ADDRESS instead of 127.0.0.1 (anyone who can reach it can "
                         "use the explorer)")
    return p


def _config_arguments(p: argparse.ArgumentParser, config_help: str = "") -> argparse.ArgumentParser:
    """CONFIG, --model, --set and --protocol: what selects a configuration."""
    p.add_argument("config", nargs="?", metavar="CONFIG",
                   help=config_help or "TOML file or name of a shipped config (default: built-in)")
    p.add_argument("--model", help="model name (overrides [model] name)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   dest="sets", help="override a configuration value (repeatable)")
    p.add_argument("--protocol", metavar="PRESET", help="shorthand for --set protocol.version=PRESET")
    return p


def _port(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{n} is not a port number (0 to 65535)")
    return n


def _nonneg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of minutes") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


def _positive(text: str) -> int:
    value = _nonneg(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


def _workers(text: str) -> int:
    if text == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
    return _positive(text)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler's stop): handled as Ctrl-C is, then exit 143."""


def _terminate(signum, frame):
    """SIGTERM: what Ctrl-C does (pyspark's SIGINT handler cancels the running Spark jobs first),
    remembered for the exit code. The explorer catches the interrupt and returns its partial
    result."""
    _terminated.set()
    on_interrupt = signal.getsignal(signal.SIGINT)
    if callable(on_interrupt) and on_interrupt is not signal.default_int_handler:
        on_interrupt(signal.SIGINT, frame)
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    previous = signal.signal(signal.SIGTERM, _terminate) if _main_thread() else None
    try:
        code = _run(argv)
        return EXIT_TERMINATED if code == EXIT_INTERRUPTED and _terminated.is_set() else code
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        _terminated.clear()


class StdoutError(OSError):
    """Standard output failed (a full or failing device), as opposed to any other write."""


class _Guarded:
    """Standard output whose own write errors are told apart (``StdoutError``)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        return self._guarded(self._stream.write, text)

    def flush(self):
        return self._guarded(self._stream.flush)

    @staticmethod
    def _guarded(call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise StdoutError(e.errno, e.strerror) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _run(argv) -> int:
    stdout, sys.stdout = sys.stdout, _Guarded(sys.stdout)
    try:
        code = _command(argv)
        sys.stdout.flush()
        return code
    except StdoutError as e:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        _error(f"cannot write to standard output: {e.strerror}")
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return EXIT_OK
    finally:
        sys.stdout = stdout


def _command(argv) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("a command is required: check, list, replay, minimize, render, graph, "
                             "explore or real (see kafka-mc --help)")
        return {"check": cmd_check, "list": cmd_list, "replay": cmd_replay, "graph": cmd_graph,
                "minimize": cmd_minimize, "render": cmd_render,
                "explore": cmd_explore, "real": real_cli.main}[args.command](args)
    except (UsageError, ConfigError, TraceError) as e:
        _error(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("kafka-mc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


_terminated = threading.Event()   # set when SIGTERM ended the command


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _error(message: str) -> None:
    """One line on stderr."""
    print(f"kafka-mc: error: {' '.join(message.splitlines())}", file=sys.stderr)


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
    if getattr(args, "por", None) is not None:
        sets.append(("check.por", args.por))
    if getattr(args, "symmetry", None):
        sets.append(("check.symmetry", True))
    path = resolve_config_path(args.config) if args.config is not None else None
    return registry.load(path, model=args.model, overrides=sets)


def cmd_check(args) -> int:
    for flag, takers in EXPLORER_FLAGS.items():
        if getattr(args, flag[2:].replace("-", "_")) is not None and args.explorer not in takers:
            raise UsageError(f"{flag} does not apply to --explorer {args.explorer} "
                             f"(only to {', '.join(takers)})")
    cfg = load_config(args)
    model = registry.bind(cfg)
    if cfg.get("check.symmetry"):
        check_symmetry(cfg, model, args.explorer)
    if args.explorer == "symbolic":
        return run_symbolic(cfg, model, args)
    try:
        select_properties(model, property_names(cfg))
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    out = Path(os.path.normpath(args.out)) if args.out else Path(args.out)
    created = check_out_dir(out)
    progress = report.ProgressPrinter()
    try:
        outcome = EXPLORERS[args.explorer](cfg, args, progress)
    finally:
        progress.close()
        tidy_out_dir(created)   # what the search itself left there stays
    try:
        traces, failure = write_traces(outcome, cfg, model, out), ""
    except TracesNotWritten as e:
        traces, failure = e.written, str(e)
    print(report.as_json(outcome, cfg, model, traces) if args.json
          else report.text(outcome, cfg, model, traces))
    if failure:  # the verdict and counterexample are printed; the write error follows
        sys.stdout.flush()
        _error(failure)
    return outcome.exit_code


def check_symmetry(cfg, model, explorer: str) -> None:
    """Symmetry reduction merges states with interchangeable identifiers: sound for safety
    (every property is invariant under the declared permutations), with partial-order reduction
    too (``model.core``'s symmetry notes say why); not for liveness, where a cycle of the quotient
    need not be one of the model (TLC's caveat); not for the stateful and symbolic explorers,
    which do not deduplicate on views."""
    if explorer in ("stateful", "symbolic"):
        raise UsageError(f"--symmetry / [check] symmetry: the {explorer} explorer does not "
                         "deduplicate states (use bfs, spark, graph or simulate)")
    if explorer == "graph":
        try:
            selected = select_properties(model, property_names(cfg))
        except KeyError:
            return   # reported by the caller
        live = [p.name for p in selected if p.expectation.value == "eventually"]
        if live:
            raise UsageError(f"--symmetry / [check] symmetry is unsound for liveness ({live[0]}): "
                             "check only safety properties with it (--invariant NAME), or drop it")


def check_out_dir(out: Path) -> list[Path]:
    """Make sure, before exploring, that ``--out`` can take the traces: create it (and any
    missing parent) and write a probe file in it. Returns the directories it created, for
    ``tidy_out_dir`` to remove again if the search writes nothing."""
    if str(out) == "":
        raise UsageError("--out is empty")
    out = Path(os.path.normpath(out))
    created = []
    try:
        if out.exists() or out.is_symlink():
            if not out.is_dir():
                raise UsageError(f"--out {shown(out)}: exists and is not a directory")
        else:
            missing = [out, *(p for p in out.parents if not p.exists())]
            for d in reversed(missing):
                d.mkdir()
                created.append(d)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".kafka-mc-probe-"):
            pass
    except OSError as e:
        tidy_out_dir(created)
        raise UsageError(f"--out {shown(out)}: {e.strerror or e}") from None
    except UsageError:
        tidy_out_dir(created)
        raise
    return created


def tidy_out_dir(created: list[Path]) -> None:
    """Remove the directories ``check_out_dir`` created, innermost first, if they are empty."""
    for d in reversed(created):
        try:
            d.rmdir()
        except OSError:
            return


def property_names(cfg) -> list[str] | None:
    return None if "all" in cfg["check.invariants"] else list(cfg["check.invariants"])


def reduced(cfg) -> bool:
    """Whether a bfs or spark search is partial-order reduced: ``[check] por`` when set, else on
    unless a depth bound is given (a reduced search keeps every safety verdict of the whole
    space, not what lies within a number of steps: its paths may be longer)."""
    por = cfg.get("check.por")
    return (not cfg["check.max_depth"]) if por is None else por


def search_options(cfg, args, progress) -> BfsOptions:
    return BfsOptions(properties=property_names(cfg), max_depth=cfg["check.max_depth"],
                      check_deadlock=cfg.get("check.deadlock"), progress=progress,
                      progress_interval=args.progress_interval,
                      keep_going=bool(getattr(args, "continue")),
                      por=reduced(cfg),
                      memory_mb=getattr(args, "memory", None),
                      workers=getattr(args, "workers", None) or 1)


def run_bfs(cfg, args, progress):
    from explorers import bfs_checkpoint
    from explorers.spark_store import CheckpointError as RunDirError, locked

    if args.checkpoint is None and args.recover is None:
        return explore(registry.bind(cfg), search_options(cfg, args, progress))
    run_dir = args.recover or str(Path(args.out) / "bfs")
    store = bfs_checkpoint.CheckpointOptions(
        run_dir=run_dir, minutes=args.checkpoint, recover=args.recover is not None,
        identity={"config": cfg.to_dict(), "version": _version()})
    options = dataclasses.replace(search_options(cfg, args, progress), checkpoint=store)
    try:
        with locked(run_dir, create=not store.recover):
            if not store.recover:
                bfs_checkpoint.start_fresh(run_dir)
            return explore(registry.bind(cfg), options)
    except (bfs_checkpoint.CheckpointError, RunDirError) as e:
        raise UsageError(str(e)) from None


def run_graph(cfg, args, progress):
    from explorers import graph   # numpy and scipy: only when needed

    if cfg.get("check.por"):   # a reduced graph keeps safety verdicts, not liveness ones
        raise UsageError("--por / [check] por: the graph explorer checks liveness on the full "
                         "state graph; partial-order reduction runs with the bfs explorer only")
    o = dataclasses.replace(search_options(cfg, args, progress), por=False)
    return graph.explore(registry.bind(cfg), graph.GraphOptions(**o.__dict__))


def run_spark(cfg, args, progress):
    from explorers import spark

    conf = [item.partition("=") for item in args.spark_conf or ()]
    for item, (key, sep, _) in zip(args.spark_conf or (), conf):
        if not sep or not key.strip():
            raise UsageError(f"--spark-conf {item!r}: expected KEY=VALUE")
    options = spark.SparkOptions(
        master=args.master, workers=args.workers, partitions=args.partitions,
        conf=tuple((key.strip(), value.strip()) for key, _, value in conf),
        run_dir=args.recover or str(Path(args.out) / "spark"),
        checkpoint_minutes=args.checkpoint, recover=args.recover is not None)
    try:
        return spark.explore(cfg, search_options(cfg, args, progress), options)
    except (spark.SparkError, spark.CheckpointError) as e:
        raise UsageError(str(e)) from None


def _given(**flags) -> dict:
    """The flags the user set (the explorer's defaults apply to the others)."""
    return {k: v for k, v in flags.items() if v is not None}


def run_stateful(cfg, args, progress):
    from explorers import stateful  # imports hypothesis: only when needed

    if args.depth is not None:
        raise UsageError("--depth does not apply to --explorer stateful (use --steps)")
    options = stateful.StatefulOptions(
        properties=property_names(cfg), check_deadlock=cfg.get("check.deadlock"),
        progress=progress, progress_interval=args.progress_interval,
        **_given(max_examples=args.max_examples, steps=args.steps, seed=args.seed))
    return stateful.explore(registry.bind(cfg), options)


def run_simulate(cfg, args, progress):
    from explorers import simulate

    options = simulate.SimulateOptions(
        properties=property_names(cfg), check_deadlock=cfg.get("check.deadlock"),
        progress=progress, progress_interval=args.progress_interval,
        **_given(runs=args.runs, seed=args.seed, depth=cfg["check.max_depth"] or None))
    if args.swarm:
        from explorers import swarm

        return swarm.explore(registry.bind(cfg), options)
    return simulate.explore(registry.bind(cfg), options)


def run_symbolic(cfg, model, args) -> int:
    """``--explorer symbolic``: the model's symbolic system (z3), BMC with ``--depth``, else
    k-induction (``--induction``). Its properties are the symbolic model's own claims."""
    from explorers import symbolic

    out = Path(os.path.normpath(args.out)) if args.out else Path(args.out)
    meta = trace_metadata(cfg, property="", kind="", claim="", explorer="symbolic",
                          source=f"kafka-mc {_version()}", model=model)
    try:
        return symbolic.run(model, cfg, args.invariants, args.depth, args.induction or 1,
                            out, meta)
    except symbolic.SymbolicUsageError as e:
        raise UsageError(str(e)) from None


# --explorer NAME -> run(cfg, args, progress) -> Outcome (symbolic: run_symbolic, above)
EXPLORERS = {"bfs": run_bfs, "graph": run_graph, "spark": run_spark, "stateful": run_stateful,
             "simulate": run_simulate, "symbolic": run_symbolic}
# flag -> the explorers it applies to (giving it to another explorer is a usage error)
EXPLORER_FLAGS = {"--max-examples": ("stateful",), "--steps": ("stateful",),
                  "--continue": ("bfs", "graph", "spark"), "--induction": ("symbolic",),
                  "--runs": ("simulate",), "--memory": ("bfs",), "--seed": ("stateful", "simulate"),
                  "--swarm": ("simulate",),
                  "--workers": ("bfs", "spark"),
                  **{flag: ("spark",) for flag in ("--partitions", "--spark-conf", "--master")},
                  **{flag: ("bfs", "spark") for flag in ("--checkpoint", "--recover")}}


class TracesNotWritten(Exception):
    """A trace could not be written: ``written`` holds those that were, the message says why."""

    def __init__(self, written: dict[str, str], message: str):
        super().__init__(message)
        self.written = written


def write_traces(outcome, cfg, model, out: Path) -> dict[str, str]:
    """The traces written, property -> file; ``TracesNotWritten`` if one could not be."""
    written = {}
    for v in outcome.violations:
        if v.path is None:
            continue
        file = out / f"{v.property}.itf.json"
        meta = trace_metadata(cfg, property=v.property, kind=v.kind, claim=v.claim,
                              explorer=outcome.explorer, source=f"kafka-mc {_version()}",
                              seed=outcome.extra.get("seed"), model=model)
        found_by = outcome.extra.get("swarm", {}).get("found_by")
        if found_by is not None:   # the walk that found it, to replay it alone (--seed W --runs 1)
            meta["swarm"] = found_by
        try:
            out.mkdir(parents=True, exist_ok=True)
            Trace.from_path(model, v.path, meta).write(file, model)
        except OSError as e:
            raise TracesNotWritten(written, f"cannot write the trace {shown(file)}: "
                                            f"{e.strerror or e}") from None
        written[v.property] = str(file)
    return written


def cmd_graph(args) -> int:
    """Exit 0 with the graph written; 2 when it is too big (or any bad input)."""
    from explorers import graph, graph_export

    args.deadlock = args.invariants = None
    cfg = load_config(args)
    model = registry.bind(cfg)
    g, states, outcome = graph.state_graph(model, max_states=args.max_states,
                                           max_depth=cfg["check.max_depth"])
    if outcome.extra.get("too_big"):
        raise UsageError(f"the state graph has more than {args.max_states:,} states (found "
                         f"{g.states:,} before stopping): too big to read; raise --max-states or "
                         f"bound it with --depth")
    text = graph_export.export(graph_export.to_networkx(model, g, states), args.format)
    _write(args.out, text)
    stats = g.statistics()
    print(f"{args.format} written to {args.out}: {stats['states']:,} states, {stats['edges']:,} "
          f"edges, {stats['sccs']:,} strongly connected components (largest "
          f"{stats['largest_scc']:,}, {stats['terminal_sccs']:,} terminal), diameter "
          f"{stats['diameter']}" + ("" if outcome.complete else "; cut at the depth bound"))
    return EXIT_OK


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
    elif args.what == "mutants":
        for name, e in sorted(models.items()):
            for mutant, invariant, doc in e.mutants:
                print(f"{mutant:<38} {invariant:<26} {doc} ({name})")
    elif args.what == "invariants":
        cfg = registry.load(None, model=args.model)
        for p in registry.bind(cfg).properties():
            print(f"{p.name:<24} {p.expectation.value:<10} {p.claim}")
    else:
        for path in shipped_configs():
            print(path.stem)
    return EXIT_OK


def cmd_replay(args) -> int:
    """Exit: the code ``check`` gave (12; 11 deadlock, 75 model error) when the violation
    reproduces, 0 when the trace replays but no longer violates, 2 when it does not replay."""
    from traces.render import story, text
    from traces.replay import Divergence, replay

    trace = _explicit(read(args.trace), args.trace, "replay")
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
    from traces.explain import lasso_steps, steps
    from traces.minimize import minimize

    out = args.out or _sibling(args.trace, ".min.itf.json")
    _not_the_input(out, args.trace)
    _explicit(read(args.trace), args.trace, "minimize")
    model, states, small = minimize(read(args.trace))
    _write(out, small.to_json(model))
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
    from traces.render import render

    if args.out:
        _not_the_input(args.out, args.trace)
    text = render(_explicit(read(args.trace), args.trace, "render"), args.format, diff=args.diff,
                  file=args.trace)
    if args.out:
        _write(args.out, text)
        print(f"{args.format} written to {args.out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_explore(args) -> int:
    """Serve the web explorer until interrupted (Ctrl-C: exit 130, SIGTERM: 143, as any command)."""
    from explorers.explore.app import LOOPBACK, bind, create_app, serve
    from explorers.explore.session import ExploreError, Explorer, label_of, model_values
    from traces.replay import model_of

    data = None
    if args.trace is not None:
        trace = read(args.trace)   # a TraceError here is one line, exit 2
        with open(args.trace, "rb") as f:
            data = f.read()
    if args.trace is not None and args.config is None and not (args.sets or args.protocol
                                                                or args.model):
        model = model_of(trace)
        cfg = registry.from_dict(trace.meta["config"], source=args.trace)
    else:
        args.depth = args.deadlock = args.invariants = None
        cfg = load_config(args)
        model = registry.bind(cfg)
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


def _explicit(trace: Trace, file: str, command: str) -> Trace:
    """A symbolic trace's states are the symbolic model's variables, not the model's states:
    replay, render and minimize refuse it (exit 2); it is plain ITF JSON to read."""
    if trace.meta.get("explorer") == "symbolic":
        raise UsageError(f"{shown(file)}: a symbolic trace (states of the symbolic model's "
                         f"variables); {command} takes traces of the explicit model")
    return trace


def _sibling(trace: str, suffix: str) -> str:
    name = Path(trace).name
    stem = name.removesuffix(".json").removesuffix(".itf")
    return str(Path(trace).with_name(stem + suffix))


def _not_the_input(out: str, trace: str) -> None:
    if same_file(out, trace):
        raise UsageError(f"--out {shown(out)} is the input trace: give another file")


def _write(file: str, text: str) -> None:
    try:
        write_atomically(file, text)
    except OSError as e:
        raise UsageError(f"cannot write {shown(file)}: {e.strerror or e}") from None


if __name__ == "__main__":
    sys.exit(main())
