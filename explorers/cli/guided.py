"""The ``kafka-mc real`` commands of model-guided testing (issue 58; ``kafka_mc.explorers.guided``),
added to the ``real`` group by ``kafka_mc.explorers.cli.real``:

    kafka-mc real reproduce TRACE [--version V] [--max-nodes N] ...   the verdict judged on the model
    kafka-mc real coverage FOLDER... [CONFIG options] [--json] [--dot FILE]
    kafka-mc real explore [CONFIG] --version V [--budget N] [--out DIR] [--runs FOLDER] [--json]

``real coverage``: the model's coverage classes on the runs' config, per release: reached by the
model, witnessed by conforming runs (with how many), never witnessed (with the shortest model
path). Exit 0; 2 bad input (no such folder, a folder that holds no runs, runs of two configs or of
another release than ``--version``, a model without coverage classes).

``real explore``: directed runs (``kafka_mc.explorers.guided.explore``). Exit 0; 16 a run
conforms to no behaviour of the model; 130/143 stopped (what was witnessed kept in
OUT/explore.json); 2 bad input.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from kafka_mc.explorers.guided import coverage as cov, runs
from kafka_mc.model import registry
from kafka_mc.model.capabilities import require
from kafka_mc.model.config import parse_assignment, resolve_config_path
from kafka_mc.realkafka import cli as real_cli

COMMANDS = ("reproduce", "coverage", "explore")


def add_parsers(real) -> None:
    """The guided commands' arguments, on the ``real`` group's parser."""
    rp = real.subcommands.choices["reproduce"]
    rp.add_argument("--max-nodes", type=int, default=None, metavar="N",
                    help="the validator's node limit for each search of the verdict's judgement")
    c = real.subcommands.add_parser(
        "coverage", help="which of the model's coverage classes real runs were seen to take, "
                         "per release (run folders, or folders holding them)")
    c.add_argument("folders", nargs="+", metavar="FOLDER",
                   help="run folders (run.json, events.jsonl), or folders holding them (a "
                        "campaign's --out, a real explore's --out)")
    c.add_argument("--config", metavar="CONFIG", help="the config the runs must be of (TOML file "
                   "or a shipped config's name; default: theirs, which must be one)")
    _set_argument(c)
    c.add_argument("--version", metavar="V", dest="kafka_version",
                   help="only this release's runs (a folder holding another's is refused)")
    _model_search_arguments(c)
    c.add_argument("--max-nodes", type=int, default=None, metavar="N",
                   help="the validator's node limit for a run without a recorded behaviour")
    c.add_argument("--dot", metavar="FILE", help="write the state machines, witnessed edges "
                                                 "solid, the model's others dashed (DOT)")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    e = real.subcommands.add_parser(
        "explore", help="directed runs: drive real Kafka along model paths to the coverage "
                        "classes no run has witnessed, until the budget is spent")
    e.add_argument("config", nargs="?", metavar="CONFIG",
                   help="TOML file or name of a shipped config (default: tiny)")
    e.add_argument("--version", required=True, metavar="V", dest="kafka_version",
                   help="the release to run (a fetched one: kafka-mc real versions)")
    _set_argument(e)
    e.add_argument("--budget", type=int, default=10, metavar="N", help="real runs to make")
    e.add_argument("--out", metavar="DIR", help="the session's folder (default: "
                   "out/explore-<version>); a session on a folder used before goes on from it")
    e.add_argument("--runs", action="append", default=[], metavar="FOLDER", dest="seen",
                   help="runs (a campaign's --out) whose classes count as witnessed already")
    real_cli.brokers_argument(e, "brokers of the cluster (3: a partition on a broker of its "
                                 "own, for the paths that order a Produce or take a partition "
                                 "offline)")
    _model_search_arguments(e)
    e.add_argument("--max-nodes", type=int, default=None, metavar="N",
                   help="the validator's node limit for each run's judgement")
    e.add_argument("--json", action="store_true", help="print one JSON object")


def _set_argument(p) -> None:
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   dest="sets", help="override a value of the config (repeatable)")


def _model_search_arguments(p) -> None:
    """The model side of coverage: a bounded search, then random walks (``coverage.reach``)."""
    p.add_argument("--max-states", type=int, default=cov.MAX_STATES, metavar="N",
                   help="the model search's bound (a config larger than it is searched in part)")
    p.add_argument("--walks", type=int, default=cov.WALKS, metavar="N",
                   help="random walks after a search the bound cut (0: none)")


def main(args) -> int:
    return {"reproduce": reproduce, "coverage": coverage,
            "explore": explore}[args.real_command](args)


def _log(args):
    return (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))


def reproduce(args) -> int:
    """``real reproduce``: the trace run on its release (``kafka_mc.realkafka.reproduce``), then
    its property judged on the model's behaviours the run conforms to
    (``kafka_mc.explorers.guided.reproduction``)."""
    from kafka_mc.explorers.guided.reproduction import judge_reproduction
    from kafka_mc.realkafka import reproduce as repro
    if args.max_nodes is not None and args.max_nodes < 1:
        raise real_cli.RealUsageError(f"--max-nodes {args.max_nodes}: at least 1")
    result = real_cli.reproduction(args)
    judge_reproduction(result, args.max_nodes, _log(args))
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, sort_keys=True, default=str))
    else:
        print(repro.summary(result))
    return result.exit_code


# --- real coverage ---------------------------------------------------------------------------

def find_runs(paths) -> list[Path]:
    """The run folders under ``paths`` (each one, or held up to three levels below), in order."""
    out: list[Path] = []
    for p in paths:
        folder = Path(p)
        if not folder.is_dir():
            raise real_cli.RealUsageError(f"{str(p)[:200]}: no such folder")
        found = _below(folder, 3)
        if not found:
            raise real_cli.RealUsageError(f"{str(p)[:200]}: holds no run folders (run.json and "
                                          "events.jsonl)")
        out += [f for f in found if f not in out]
    return out


def _below(folder: Path, depth: int) -> list[Path]:
    if runs.is_run_folder(folder):
        return [folder]
    if depth == 0:
        return []
    return [f for child in sorted(folder.iterdir(), key=_order) if child.is_dir()
            for f in _below(child, depth - 1)]


def _order(p: Path):
    """run-9 before run-10."""
    head, _, tail = p.name.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (p.name, -1)


def shape(cfg) -> dict:
    """What makes two runs' configs the same for coverage: every section but ``check``, the
    protocol's version aside (each release has its own preset)."""
    d = cfg.to_dict()
    d.pop("check", None)
    d["protocol"] = {k: v for k, v in (d.get("protocol") or {}).items() if k != "version"}
    return d


def _grouped(args, folders):
    """(the config, {release: [run folders]}) of the runs, checked to be of one config (and of
    ``--config``, ``--version`` when given)."""
    want = None
    if args.config or args.sets:
        want = registry.load(resolve_config_path(args.config or "tiny"),
                             overrides=[parse_assignment(s) for s in args.sets])
    by_release: dict = {}
    first = None
    for folder in folders:
        release, cfg, _ = runs.recorded(folder)
        if args.kafka_version and release.version != args.kafka_version:
            raise real_cli.RealUsageError(f"{str(folder)[:200]}: a run of Kafka "
                                          f"{release.version}, not {args.kafka_version[:20]}")
        if want is not None and shape(cfg) != shape(want):
            raise real_cli.RealUsageError(f"{str(folder)[:200]}: a run of another config than "
                                          f"{(args.config or 'tiny')[:100]} ({_differs(cfg, want)})")
        if first is None:
            first = (folder, cfg)
        elif shape(cfg) != shape(first[1]):
            raise real_cli.RealUsageError(
                f"{str(folder)[:200]} and {str(first[0])[:200]} are runs of two configs "
                f"({_differs(cfg, first[1])}): give --config to pick one")
        by_release.setdefault(release, []).append(folder)
    return (want or first[1]), by_release


def _differs(a, b) -> str:
    sa, sb = shape(a), shape(b)
    for section in sorted(set(sa) | set(sb)):
        x, y = sa.get(section) or {}, sb.get(section) or {}
        for k in sorted(set(x) | set(y)):
            if x.get(k) != y.get(k):
                return f"{section}.{k}: {x.get(k)!r} against {y.get(k)!r}"
    return "they differ"


def coverage(args) -> int:
    if args.max_states < 1 or args.walks < 0:
        raise real_cli.RealUsageError(f"--max-states {args.max_states} / --walks {args.walks}: "
                                      "at least 1 / 0")
    if args.dot and not Path(args.dot).resolve().parent.is_dir():
        raise real_cli.RealUsageError(f"--dot {args.dot[:200]}: no such folder "
                                      f"{Path(args.dot).parent}")
    log = _log(args)
    cfg, by_release = _grouped(args, find_runs(args.folders))
    require(registry.bind(cfg), "observations", "kafka-mc real coverage (its coverage classes)")
    reports = []
    for release in sorted(by_release, key=lambda r: tuple(map(int, r.version.split(".")))):
        model_cfg = cfg.with_values(**{"protocol.version": release.preset,
                                       "check.symmetry": False})
        model = registry.bind(model_cfg)
        reach = cov.cached_reach(model, model_cfg, args.max_states, log, args.walks)
        folders = by_release[release]
        log(f"Kafka {release.version}: the classes of {len(folders)} runs ...")
        done = tuple(cov.run_classes(f, release, cfg, args.max_nodes) for f in folders)
        report = cov.ReleaseCoverage(release.version, release.preset, reach, done)
        counts = report.counts()
        paths = {c: tuple(map(model.format_action, cov.walk(model, p)[1]))
                 for c, p in reach.classes.items() if not counts.get(c)}
        reports.append(cov.ReleaseCoverage(release.version, release.preset, reach, done, paths))
    if args.dot:
        tmp = Path(args.dot).with_name(f".{Path(args.dot).name}.tmp")
        tmp.write_text("".join(cov.dot(r) for r in reports))
        tmp.replace(args.dot)
    name = args.config or _config_name(cfg)
    if args.json:
        print(json.dumps({"config": name, "releases": [r.to_dict() for r in reports]},
                         indent=1, default=str))
        return 0
    for r in reports:
        print("\n".join(cov.table(r, name)))
        for c in r.never():
            path = r.paths.get(c, ())
            print(f"  never witnessed: {c}\n    shortest: {len(path)} steps, ... "
                  + ", ".join(a.split("(")[0] for a in path[-6:]))
    return 0


def _config_name(cfg) -> str:
    """A shipped config whose shape the runs' is, else the config's cluster, workload and
    faults in brief."""
    from kafka_mc.model.config import shipped_configs
    for path in shipped_configs():
        try:
            if shape(registry.load(path)) == shape(cfg):
                return path.stem
        except Exception:   # a shipped config of another model: not this one
            continue
    d = shape(cfg)
    faults = {k: v for k, v in (d.get("faults") or {}).items() if v}
    return f"config (cluster {d.get('cluster')}, faults {faults})"


# --- real explore ----------------------------------------------------------------------------

def explore(args) -> int:
    """``real explore``: the directed loop (``kafka_mc.explorers.guided.explore``); exit 0, 16
    when a run conforms to no behaviour of the model, 130/143 when stopped (what was witnessed
    kept in OUT/explore.json)."""
    from kafka_mc.explorers.guided import explore as ex_
    from kafka_mc.realkafka import releases, reproduce as repro
    if args.budget < 0 or args.max_states < 1 or args.walks < 0:
        raise real_cli.RealUsageError(f"--budget {args.budget} / --max-states {args.max_states} "
                                      f"/ --walks {args.walks}: at least 0 / 1 / 0")
    release = releases.release(args.kafka_version)
    real_cli._java()
    cfg = real_cli._load(args)
    out = Path(args.out) if args.out else Path("out") / f"explore-{release.version}"
    if out.exists() and not out.is_dir():
        raise real_cli.RealUsageError(f"--out {str(out)[:200]}: not a folder")
    log = _log(args)
    model_cfg = cfg.with_values(**{"protocol.version": release.preset, "check.symmetry": False})
    model = registry.bind(model_cfg)
    require(model, "observations", "kafka-mc real explore (its coverage classes)")
    reached = cov.cached_reach(model, model_cfg, args.max_states, log, args.walks)
    drivable = cov.cached_reach(model, model_cfg, args.max_states, log, args.walks,
                                allowed=cov.Allowed(
                                    f"reproduce {sorted(repro.SUPPORTED)} brokers "
                                    f"{args.brokers}", lambda a: repro.drivable(
                                        model.itf_encode_action(a), args.brokers)))
    session = ex_.Exploration(release.version, release.preset, dict(reached.classes),
                              {c: p for c, p in drivable.classes.items()
                               if c in reached.classes})
    session.attempts, session.runs = ex_.resumed(out)
    for folder in [f for p in args.seen for f in find_runs([p])] + \
            (_below(out, 3) if out.is_dir() else []):
        _count(session, folder, cfg, release, args)

    def run(trace_file: Path, folder: Path) -> str:
        try:
            loaded = repro.load(str(trace_file), counterexample=False)
            result = repro.run_path(loaded, release, folder, lambda s: None, args.brokers,
                                    gate_verification=True)
        except repro.ReproduceError as e:
            raise ex_.CannotDrive(str(e).split(": ", 1)[-1]) from None
        except tuple(real_cli.usage_errors()) + (OSError, TimeoutError) as e:
            raise ex_.HarnessError(f"{type(e).__name__}: {str(e)[:200]}") from None
        d = result.divergence
        return f"left the path at step {d['step']} {d['action']}: {d['what']}" if d else ""

    log(f"Kafka {release.version} (preset {release.preset}): {len(session.reached)} classes "
        f"reached by the model, {sum(1 for c in session.reached if session.witnessed.get(c))} "
        f"witnessed; directed runs, budget {args.budget} ...")
    try:
        ex_.explore(session, model, model_cfg, release, args.budget, out, run, log,
                    args.max_nodes or ex_.MAX_NODES, args.brokers)
    except KeyboardInterrupt:
        _explored(session, args)
        raise
    return _explored(session, args)


def _count(session, folder: Path, cfg, release, args) -> None:
    """A run folder's classes counted as witnessed (of the session's config and release)."""
    r, run_cfg, _ = runs.recorded(folder)
    if r.version != release.version or shape(run_cfg) != shape(cfg):
        raise real_cli.RealUsageError(f"{str(folder)[:200]}: a run of another release or "
                                      f"config than this session's (Kafka {r.version})")
    done = cov.run_classes(folder, r, run_cfg, args.max_nodes)
    for c in done.classes:
        session.witnessed[c] = session.witnessed.get(c, 0) + 1


def _explored(session, args) -> int:
    from kafka_mc.explorers.guided import explore as ex_
    if args.json:
        print(json.dumps(session.to_dict(), indent=1))
    else:
        print("\n".join(ex_.table(session)))
    return 16 if any(a.outcome == "diverged" for a in session.attempts) else 0
