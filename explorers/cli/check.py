"""``kafka-mc check``: explore a configuration with one of the explorers (``--explorer``) and check
its properties; the verdict is printed, each counterexample written as a trace."""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from pathlib import Path

from kafka_mc.model import registry
from kafka_mc.model.capabilities import require
from kafka_mc.model.config import shown
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.cli.common import (UsageError, config_arguments, cores, error, minutes, nonneg,
                                  positive, version, workers, load_config)
from kafka_mc.explorers.core import report
from kafka_mc.explorers.core.checking import select_properties
from kafka_mc.traces.trace import Trace, trace_metadata


def add_parser(sub) -> None:
    c = config_arguments(sub.add_parser("check", help="explore a configuration and check its "
                                                       "properties"))
    c.add_argument("--explorer", choices=list(EXPLORERS), default="bfs",
                   help="bfs: exhaustive, shortest counterexamples; graph: also liveness; spark: "
                        "the BFS on Spark; simulate, stateful: random walks; symbolic: z3")
    # Flags for some explorers only (EXPLORER_FLAGS); unset means the explorer's default.
    c.add_argument("--max-examples", type=positive, metavar="N",
                   help="stateful: behaviours hypothesis generates (default 1000)")
    c.add_argument("--steps", type=positive, metavar="K",
                   help="stateful: actions per behaviour at most (default 50)")
    c.add_argument("--runs", type=positive, metavar="R",
                   help="simulate: number of random walks (default 10000)")
    c.add_argument("--swarm", action="store_const", const=True,
                   help="simulate: swarm walks (each leaves out a random subset of the model's "
                        "fault families, reweights its actions and may deliver held-back "
                        "messages late; explorers/walks/swarm.py)")
    c.add_argument("--no-minimize", action="store_const", const=True,
                   help="simulate: keep the counterexample as the walk found it (default: "
                        "shrunk by delta debugging, as kafka-mc minimize does)")
    c.add_argument("--seed", type=nonneg, metavar="S",
                   help="stateful, simulate: random seed (default 0); with --swarm, walk 0's "
                        "seed, so a walk's seed with --runs 1 replays that walk")
    c.add_argument("--workers", type=workers, metavar="N",
                   help="bfs: processes expanding each level, with the same counts and "
                        "counterexamples as one (default 1); spark: local[N] threads (default: "
                        "all cores), with --master spark.cores.max; auto: the cores this process "
                        "may use")
    c.add_argument("--partitions", type=positive, metavar="N",
                   help="spark: partitions of the visited set (default: the default parallelism)")
    c.add_argument("--spark-conf", action="append", metavar="KEY=VALUE",
                   help="spark: a Spark configuration property (repeatable)")
    c.add_argument("--master", metavar="URL",
                   help="spark: cluster master, e.g. spark://host:7077 (default: embedded)")
    c.add_argument("--checkpoint", type=minutes, metavar="MIN",
                   help="bfs, spark: save the search at the first level boundary every MIN "
                        "minutes (0: every level), in OUT/bfs or OUT/spark")
    c.add_argument("--recover", metavar="DIR",
                   help="bfs, spark: resume the search checkpointed in DIR (e.g. out/bfs)")
    c.add_argument("--memory", type=positive, metavar="MB",
                   help="bfs: a memory budget; past half of it the BFS tree and the frontier "
                        "go to disk (OUT/bfs with --checkpoint, else a temporary directory)")
    c.add_argument("--induction", type=positive, metavar="K",
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
    c.add_argument("--depth", type=nonneg, metavar="N",
                   help="depth bound (0 = unbounded); simulate: steps per walk (0: 100)")
    dl = c.add_mutually_exclusive_group()
    dl.add_argument("--deadlock", dest="deadlock", action="store_const", const=True,
                    help="report states with no enabled action")
    dl.add_argument("--no-deadlock", dest="deadlock", action="store_const", const=False,
                    help="do not report states with no enabled action")
    c.add_argument("--out", default="out", metavar="DIR", help="where traces go (default: out)")
    c.add_argument("--json", action="store_true", help="print one JSON result object")
    c.add_argument("--verbose", action="store_true",
                   help="under each step of a counterexample, its action in full and the state "
                        "fields it changed (default: one short line a step)")
    c.add_argument("--progress-interval", type=float, default=2.0, metavar="SECONDS",
                   help=argparse.SUPPRESS)


def main(args) -> int:
    for flag, takers in EXPLORER_FLAGS.items():
        if getattr(args, flag[2:].replace("-", "_")) is not None and args.explorer not in takers:
            raise UsageError(f"{flag} does not apply to --explorer {args.explorer} "
                             f"(only to {', '.join(takers)})")
    if args.out == "":   # (Path("") is the current folder: it was written into)
        raise UsageError("--out is empty")
    cfg = load_config(args)
    model = registry.bind(cfg)
    if cfg.get("check.por") and args.explorer in ("bfs", "spark"):   # asked for, not the default
        require(model, "reduction", "--por / [check] por")
    if cfg.get("check.symmetry"):
        check_symmetry(cfg, model, args.explorer)
    if args.explorer == "symbolic":
        return run_symbolic(cfg, model, args)
    try:   # every name given, also beside "all" (which checks them all anyway)
        select_properties(model, [n for n in cfg["check.invariants"] if n != "all"])
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    check_workers(args)
    out = Path(os.path.normpath(args.out))
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
          else report.text(outcome, cfg, model, traces, verbose=args.verbose))
    if failure:  # the verdict and counterexample are printed; the write error follows
        sys.stdout.flush()
        error(failure)
    return outcome.exit_code


def check_workers(args) -> None:
    """``--workers`` forks processes (bfs) or starts threads (an embedded Spark session): no more
    than the cores this process may use (16 forked 15 children on a 2-core machine). A Spark
    cluster's (``--master``) is its own to bound."""
    if args.workers is None or args.explorer == "spark" and args.master:
        return
    if args.workers > cores():
        raise UsageError(f"--workers {args.workers}: more than the {cores()} cores this process "
                         "may use (--workers auto uses them all)")


def check_symmetry(cfg, model, explorer: str) -> None:
    """Symmetry reduction merges states with interchangeable identifiers: sound for safety
    (every property is invariant under the declared permutations), with partial-order reduction
    too (``kafka_mc.model.core``'s symmetry notes say why); not for liveness, where a cycle of the quotient
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
    """The names ``[check] invariants`` gives; None for "all" alone (every default property);
    "all" beside names stands for the default properties and the names add to them (a claim
    checked only when named, ``Property.default``)."""
    names = list(cfg["check.invariants"])
    if "all" not in names:
        return names
    return None if names == ["all"] else names


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
    from kafka_mc.explorers.bfs import checkpoint as bfs_checkpoint
    from kafka_mc.explorers.core.run_dir import RunDirError, locked

    if args.checkpoint is None and args.recover is None:
        return explore(registry.bind(cfg), search_options(cfg, args, progress))
    run_dir = args.recover or str(Path(args.out) / "bfs")
    store = bfs_checkpoint.CheckpointOptions(
        run_dir=run_dir, minutes=args.checkpoint, recover=args.recover is not None,
        identity={"config": cfg.to_dict(), "version": version()})
    options = dataclasses.replace(search_options(cfg, args, progress), checkpoint=store)
    try:
        with locked(run_dir, create=not store.recover):
            if not store.recover:
                bfs_checkpoint.start_fresh(run_dir)
            return explore(registry.bind(cfg), options)
    except (bfs_checkpoint.CheckpointError, RunDirError) as e:
        raise UsageError(str(e)) from None


def run_graph(cfg, args, progress):
    from kafka_mc.explorers.graph import search as graph   # numpy and scipy: only when needed

    if cfg.get("check.por"):   # a reduced graph keeps safety verdicts, not liveness ones
        raise UsageError("--por / [check] por: the graph explorer checks liveness on the full "
                         "state graph; partial-order reduction runs with the bfs explorer only")
    o = dataclasses.replace(search_options(cfg, args, progress), por=False)
    return graph.explore(registry.bind(cfg), graph.GraphOptions(**o.__dict__))


def run_spark(cfg, args, progress):
    from kafka_mc.explorers.spark import search as spark

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
    from kafka_mc.explorers.walks import stateful  # imports hypothesis: only when needed

    if args.depth is not None:
        raise UsageError("--depth does not apply to --explorer stateful (use --steps)")
    options = stateful.StatefulOptions(
        properties=property_names(cfg), check_deadlock=cfg.get("check.deadlock"),
        progress=progress, progress_interval=args.progress_interval,
        **_given(max_examples=args.max_examples, steps=args.steps, seed=args.seed))
    return stateful.explore(registry.bind(cfg), options)


def run_simulate(cfg, args, progress):
    from kafka_mc.explorers.walks import simulate

    options = simulate.SimulateOptions(
        properties=property_names(cfg), check_deadlock=cfg.get("check.deadlock"),
        progress=progress, progress_interval=args.progress_interval,
        **_given(runs=args.runs, seed=args.seed, depth=cfg["check.max_depth"] or None,
                 minimize=False if args.no_minimize else None))
    if args.swarm:
        from kafka_mc.explorers.walks import swarm

        return swarm.explore(registry.bind(cfg), options)
    return simulate.explore(registry.bind(cfg), options)


def run_symbolic(cfg, model, args) -> int:
    """``--explorer symbolic``: the model's symbolic system (z3), BMC with ``--depth``, else
    k-induction (``--induction``). Its properties are the symbolic model's own claims."""
    from kafka_mc.explorers.symbolic import checker as symbolic

    out = Path(os.path.normpath(args.out))
    meta = trace_metadata(cfg, property="", kind="", claim="", explorer="symbolic",
                          source=f"kafka-mc {version()}", model=model)
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
                  "--swarm": ("simulate",), "--no-minimize": ("simulate",),
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
                              explorer=outcome.explorer, source=f"kafka-mc {version()}",
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
