"""``kafka-mc real``: the command group that runs real Apache Kafka.

    kafka-mc real versions [--json]
    kafka-mc real cluster --version V [--brokers N] [--events FILE]
    kafka-mc real run [CONFIG] --version V [--seed S] [--out DIR] [--brokers N] [--json]

Exit codes: 0 clean, 12 an anomaly on the real history (its evidence printed), 2 bad input (an
unknown or unfetched release, no Java, a busy port, a config the harness cannot run), 130/143
interrupted. Every JVM, proxy and temporary folder a command starts is gone when it returns.
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

from kafka_mc.model import registry
from kafka_mc.model.config import ConfigError, parse_assignment, resolve_config_path
from kafka_mc.realkafka import releases
from kafka_mc.realkafka.plan import PlanError

EXIT_OK, EXIT_USAGE, EXIT_ANOMALY = 0, 2, 12


class RealUsageError(ValueError):
    """Bad input to a real command: one line, exit 2."""


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``real`` command group, added to the CLI's subparsers."""
    real = sub.add_parser("real", help="run real Apache Kafka (fetched by `make kafka`): a "
                                       "cluster, a workload with the model's faults, anomalies")
    rsub = real.add_subparsers(dest="real_command", metavar="REAL_COMMAND",
                               parser_class=type(real))
    v = rsub.add_parser("versions", help="the supported releases, whether fetched, their preset")
    v.add_argument("--json", action="store_true")
    c = rsub.add_parser("cluster", help="start a cluster on loopback and print its bootstrap "
                                        "address until Ctrl-C")
    c.add_argument("--version", required=True, metavar="V", dest="kafka_version")
    c.add_argument("--brokers", type=int, choices=[1, 3], default=1)
    c.add_argument("--events", metavar="FILE", help="write the proxy's event log here (JSON lines)")
    c.add_argument("--port", type=int, default=0, metavar="N",
                   help="the bootstrap port on 127.0.0.1 (default: a free one)")
    r = rsub.add_parser("run", help="run a config's workload and seeded faults on a real cluster")
    r.add_argument("config", nargs="?", metavar="CONFIG",
                   help="TOML file or name of a shipped config (default: tiny)")
    r.add_argument("--version", required=True, metavar="V", dest="kafka_version")
    r.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", dest="sets")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--brokers", type=int, choices=[1, 3], default=1)
    r.add_argument("--out", metavar="DIR", help="run folder (default: out/real-<version>-<seed>)")
    r.add_argument("--json", action="store_true")
    rp = rsub.add_parser("reproduce", help="execute a model counterexample (ITF trace) on a real "
                                           "cluster of its release; exit 12 reproduced, 0 not, "
                                           "16 diverged")
    rp.add_argument("trace", metavar="TRACE", help="an ITF counterexample of the kafka model")
    rp.add_argument("--version", metavar="V", dest="kafka_version", default=None,
                    help="the release (default: the newest standing for the trace's preset)")
    rp.add_argument("--out", metavar="DIR", help="run folder (default: out/reproduce-...)")
    rp.add_argument("--brokers", type=int, choices=[1, 3], default=1,
                    help="3: each partition led by its own broker (markers and records in "
                         "separate requests, as the trace's leaders get them)")
    rp.add_argument("--json", action="store_true")
    real.subcommands = rsub   # explorers.cli.real adds the commands that need an explorer
    return real


def _say(message: str) -> None:
    print(f"kafka-mc: error: {' '.join(str(message).splitlines())[:300]}", file=sys.stderr)


def _java() -> None:
    if shutil.which("java") is None:
        raise RealUsageError("no `java` on PATH: real Kafka needs a JDK 17+")


def usage_errors() -> list[type]:
    """The errors that are bad input to a real command: one line, exit 2."""
    from kafka_mc.realkafka.client import DriverError
    from kafka_mc.realkafka.cluster import ClusterError
    from kafka_mc.realkafka.fetch import FetchError
    return [releases.ReleaseError, RealUsageError, PlanError, ConfigError, FetchError,
            ClusterError, DriverError]


def main(args) -> int:
    """Run ``kafka-mc real <command>``; the exit code."""
    known = usage_errors()
    try:
        command = getattr(args, "real_command", None)
        if command is None:
            raise RealUsageError("a real command is required: versions, cluster or run")
        if command != "versions":   # the proxy's protocol decoder (kio: the real extra), before
            from kafka_mc.realkafka import wire  # noqa: F401  anything starts (the CLI names the extra)
        return {"versions": _versions, "cluster": _cluster, "run": _run,
                "reproduce": _reproduce}[command](args)
    except tuple(known) as e:
        _say(e)
        return EXIT_USAGE


def _versions(args) -> int:
    rows = [{"version": r.version, "preset": r.preset, "transaction_version": r.transaction_version,
             "fetched": releases.fetched(r.version), "why": r.why} for r in releases.RELEASES]
    if args.json:
        print(json.dumps({"releases": rows, "cache": str(releases.cache_root())}, indent=1))
        return EXIT_OK
    print(f"{'release':<9} {'preset':<12} {'TV':<3} {'fetched':<8} why")
    for row in rows:
        print(f"{row['version']:<9} {row['preset']:<12} {row['transaction_version']:<3} "
              f"{'yes' if row['fetched'] else 'no':<8} {row['why']}")
    print(f"(cache: {releases.cache_root()}; `make kafka` fetches what is missing)")
    return EXIT_OK


def _cluster(args) -> int:
    from kafka_mc.realkafka.proxy import Proxy
    release = releases.release(args.kafka_version)
    _java()
    events = Path(args.events) if args.events else None
    if events is not None and not events.parent.is_dir():
        raise RealUsageError(f"--events {args.events}: no such folder {events.parent}")
    if not 0 <= args.port <= 65535:
        raise RealUsageError(f"--port {args.port} is not a port number (0 to 65535)")
    with Proxy(events) as proxy:
        if args.port:
            try:   # the first broker's client listener: routed again by the cluster, same port
                proxy.route("broker-1/CLIENT", ("127.0.0.1", 9), port=args.port)
            except OSError as e:
                raise RealUsageError(f"port {args.port} on 127.0.0.1 is busy "
                                     f"({e.strerror or e})") from None
        return _serve(release, args, proxy)


def _serve(release, args, proxy) -> int:
    from kafka_mc.realkafka.cluster import Cluster
    with Cluster(release, brokers=args.brokers, proxy=proxy) as cluster:
        print(f"Kafka {release.version} ({args.brokers} broker{'s' if args.brokers > 1 else ''}, "
              f"preset {release.preset}): bootstrap.servers={cluster.bootstrap}", flush=True)
        print("Ctrl-C stops it (every broker, the proxy and the data folder go with it).",
              flush=True)
        stop = threading.Event()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    return EXIT_OK


def _load(args):
    sets = [parse_assignment(s) for s in args.sets]
    path = resolve_config_path(args.config or "tiny")
    cfg = registry.load(path, overrides=sets)
    if cfg.model != "kafka":
        raise RealUsageError(f"the real harness runs Kafka configurations, not model {cfg.model!r}")
    return cfg


def _run(args) -> int:
    from kafka_mc.realkafka.run import run
    release = releases.release(args.kafka_version)
    _java()
    cfg = _load(args)
    from kafka_mc.realkafka.plan import make_plan
    make_plan(cfg, args.seed, transaction_version=release.transaction_version)  # refuse early
    out = Path(args.out) if args.out else Path("out") / f"real-{release.version}-{args.seed}"
    if out.exists() and not out.is_dir():
        raise RealUsageError(f"--out {str(out)[:200]}: not a folder")
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    log(f"Kafka {release.version} (preset {release.preset}), seed {args.seed}: running ...")
    started = time.monotonic()
    result = run(cfg, release, args.seed, out, brokers=args.brokers, log=log)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, sort_keys=True))
    else:
        print(f"Kafka {release.version}, seed {args.seed}: {result.transactions} transactions, "
              f"{result.operations} client operations, {result.events} proxy events, "
              f"{time.monotonic() - started:.1f} s")
        for a in result.anomalies:
            print(f"ANOMALY {a.name} ({a.property}) {a.transaction}: {a.evidence}")
        for a in result.allowed:
            print(f"allowed {a.name} (Kafka's model allows it) {a.transaction}: {a.evidence}")
        print(f"checked: {', '.join(result.checked)}")
        print("clean: no anomaly" if not result.anomalies else
              f"{len(result.anomalies)} anomal{'y' if len(result.anomalies) == 1 else 'ies'}")
        print(f"run folder: {out} (plan.json, events.jsonl, history.jsonl, report.json)")
    return result.exit_code


def _reproduce(args) -> int:
    from kafka_mc.realkafka import reproduce as repro
    try:
        loaded = repro.load(args.trace)
        release = repro.release_for(loaded.preset, args.kafka_version)
    except repro.ReproduceError as e:
        raise RealUsageError(str(e)) from None
    _java()
    out = Path(args.out) if args.out else None
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    from kafka_mc.realkafka.client import DriverError
    try:
        result = repro.reproduce(args.trace, release.version, out, log, args.brokers)
    except (repro.ReproduceError, DriverError) as e:
        raise RealUsageError(str(e)) from None
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, sort_keys=True, default=str))
        return result.exit_code
    print(repro.summary(result))
    return result.exit_code
