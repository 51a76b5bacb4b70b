"""``kafka-mc real``: the command group that runs real Apache Kafka.

    kafka-mc real versions [--verbose] [--json]
    kafka-mc real fetch [VERSION ...]
    kafka-mc real cluster (--version V | --kafka-home DIR [--protocol P]) [--brokers N] [--events FILE]
    kafka-mc real run [CONFIG] (--version V | --kafka-home DIR [--protocol P]) [--seed S] [--out DIR]
                      [--brokers N] [--json]
    kafka-mc real reproduce TRACE [--version V | --kafka-home DIR [--protocol P]] [--brokers N]

``--kafka-home DIR`` runs a Kafka distribution of the user's (a branch, a patched release, a
snapshot: the folder its build unpacks to) as a fetched release runs, judged against the preset
``--protocol`` names (``releases.from_home``).

Exit codes: 0 clean, 12 an anomaly on the real history (its evidence printed), 2 bad input (an
unknown or unfetched release, a --kafka-home that is no distribution, no Java, a busy port, a
config the harness cannot run), 130/143 interrupted. Every JVM, proxy and temporary folder a
command starts is gone when it returns.
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path

from kafka_mc.model import registry
from kafka_mc.model.config import ConfigError, parse_assignment, resolve_config_path
from kafka_mc.model.display import columns
from kafka_mc.realkafka import folder, releases
from kafka_mc.realkafka.plan import PlanError

EXIT_OK, EXIT_USAGE, EXIT_ANOMALY = 0, 2, 12


class RealUsageError(ValueError):
    """Bad input to a real command: one line, exit 2."""


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``real`` command group, added to the CLI's subparsers."""
    real = sub.add_parser("real", help="run real Apache Kafka (kafka-mc real fetch; or a build of "
                                       "your own: --kafka-home): a cluster, a workload with the "
                                       "model's faults, anomalies, conformance, reproduction")
    rsub = real.add_subparsers(dest="real_command", metavar="REAL_COMMAND",
                               parser_class=type(real))
    v = rsub.add_parser("versions", help="the supported releases, whether fetched, the preset "
                                         "each stands for")
    v.add_argument("--verbose", action="store_true",
                   help="why each release stands for its preset, in full")
    v.add_argument("--json", action="store_true", help="print one JSON object (everything)")
    f = rsub.add_parser("fetch", help="fetch releases from Maven Central into the cache (Maven "
                                      "and a JDK 17+), and compile the client driver")
    f.add_argument("versions", nargs="*", metavar="VERSION",
                   help="the releases to fetch (default: every supported one)")
    c = rsub.add_parser("cluster", help="start a cluster on loopback and print its bootstrap "
                                        "address until Ctrl-C")
    kafka_arguments(c)
    brokers_argument(c)
    c.add_argument("--events", metavar="FILE", help="write the proxy's event log here (JSON lines)")
    c.add_argument("--port", type=int, default=0, metavar="N",
                   help="the bootstrap port on 127.0.0.1 (default: a free one)")
    r = rsub.add_parser("run", help="run a config's workload and seeded faults on a real cluster")
    r.add_argument("config", nargs="?", metavar="CONFIG",
                   help="TOML file or name of a shipped config (default: tiny)")
    kafka_arguments(r)
    r.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", dest="sets",
                   help="override a configuration value (repeatable)")
    r.add_argument("--seed", type=int, default=0,
                   help="the plan's seed: the same seed, the same schedule of faults")
    brokers_argument(r)
    r.add_argument("--out", metavar="DIR", help="run folder (default: out/real-<version>-<seed>)")
    r.add_argument("--json", action="store_true", help="print one JSON result object")
    rp = rsub.add_parser("reproduce", help="execute a model counterexample (ITF trace) on a real "
                                           "cluster of its release; exit 12 reproduced, 0 not, "
                                           "16 diverged")
    rp.add_argument("trace", metavar="TRACE", help="an ITF counterexample of the kafka model")
    kafka_arguments(rp, version_help="the release (default: the newest standing for the "
                                     "trace's preset)",
                    protocol_help="with --kafka-home: the preset to judge the build against "
                                  "(default: the trace's)")
    rp.add_argument("--out", metavar="DIR", help="run folder (default: out/reproduce-...)")
    brokers_argument(rp, "3: each partition led by its own broker (markers and records in "
                         "separate requests, as the trace's leaders get them)")
    rp.add_argument("--json", action="store_true", help="print one JSON result object")
    real.subcommands = rsub   # explorers.cli.real adds the commands that need an explorer
    return real


def kafka_arguments(p, version_help: str = "", protocol_help: str = "") -> None:
    """Which Kafka: a fetched release (``--version``) or a distribution of the user's
    (``--kafka-home``, judged against ``--protocol``)."""
    p.add_argument("--version", metavar="V", dest="kafka_version",
                   help=version_help or "the release to run (kafka-mc real versions)")
    p.add_argument("--kafka-home", metavar="DIR", dest="kafka_home",
                   help="run a Kafka distribution of your own instead (the folder a build "
                        "unpacks to: bin/, config/, libs/)")
    p.add_argument("--protocol", metavar="PRESET",
                   help=protocol_help or "with --kafka-home: the preset to judge the build "
                        "against, or a release it derives from (4.4.0); default: the preset of "
                        "the release its version names")


def brokers_argument(p, help_: str = "") -> None:
    p.add_argument("--brokers", type=int, choices=[1, 3], default=1,
                   help=help_ or "brokers in the cluster (3: each partition led by its own "
                                 "broker, other than the coordinator's)")


def kafka(args, default_protocol: str | None = None):
    """The release ``--version`` names (fetched), or the distribution ``--kafka-home`` names
    judged against ``--protocol``; ``RealUsageError`` for neither or both."""
    home, version = getattr(args, "kafka_home", None), getattr(args, "kafka_version", None)
    protocol = getattr(args, "protocol", None)
    if home and version:
        raise RealUsageError("--version and --kafka-home name two Kafkas: give one")
    if home:
        return releases.from_home(home, protocol or default_protocol)
    if protocol:
        raise RealUsageError("--protocol goes with --kafka-home (a release's preset is its own: "
                             "kafka-mc real versions)")
    if not version:
        raise RealUsageError(f"real {args.real_command} needs --version V (kafka-mc real "
                             "versions) or --kafka-home DIR")
    return releases.release(version)


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
            raise RealUsageError("a real command is required: versions, fetch, cluster, run, "
                                 "conform or reproduce")
        if command not in ("versions", "fetch"):   # the proxy's decoder (kio: the real extra),
            from kafka_mc.realkafka import wire  # noqa: F401  before anything starts
        return {"versions": _versions, "fetch": _fetch, "cluster": _cluster, "run": _run,
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
    width = columns()
    head = f"{'release':<9} {'preset':<12} {'TV':<3} {'fetched':<8} "
    print(head + "what the preset stands for")
    for row in rows:
        line = (f"{row['version']:<9} {row['preset']:<12} {row['transaction_version']:<3} "
                f"{'yes' if row['fetched'] else 'no':<8} ")
        if args.verbose:
            print(line.rstrip())
            print(textwrap.fill(row["why"], width, initial_indent="    ",
                                subsequent_indent="    "))
        else:
            room = width - len(line)
            why = row["why"]
            print(line + (why if len(why) <= room else why[:room - 3].rstrip() + "..."))
    print(f"cache: {releases.cache_root()}; `kafka-mc real fetch` fetches what is missing"
          + ("" if args.verbose else "; --verbose: why, in full"))
    return EXIT_OK


def _fetch(args) -> int:
    from kafka_mc.realkafka import fetch
    return fetch.main(args.versions, prog="kafka-mc real fetch")


def _cluster(args) -> int:
    from kafka_mc.realkafka.proxy import Proxy
    release = kafka(args)
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
        print(f"Kafka {release.name} ({args.brokers} broker{'s' if args.brokers > 1 else ''}, "
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
    release = kafka(args)
    _java()
    cfg = _load(args)
    from kafka_mc.realkafka.plan import make_plan
    make_plan(cfg, args.seed, transaction_version=release.transaction_version)  # refuse early
    out = Path(args.out) if args.out else Path("out") / f"real-{release.version}-{args.seed}"
    if out.exists() and not out.is_dir():
        raise RealUsageError(f"--out {str(out)[:200]}: not a folder")
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    log(f"Kafka {release.name} (preset {release.preset}), seed {args.seed}: running ...")
    started = time.monotonic()
    result = run(cfg, release, args.seed, out, brokers=args.brokers, log=log)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, sort_keys=True))
    else:
        print(f"Kafka {release.version}, seed {args.seed}: {result.transactions} transactions, "
              f"{result.operations} client operations, {result.events} proxy events, "
              f"{time.monotonic() - started:.1f} s")
        print("faults injected (plan.json):")
        print("\n".join(f"  {line}" for line in folder.faults(out)))
        for a in result.anomalies:
            print(f"ANOMALY {a.name} ({a.property}) {a.transaction}: {a.evidence}")
        print("clean: no anomaly" if not result.anomalies else
              f"{len(result.anomalies)} anomal{'y' if len(result.anomalies) == 1 else 'ies'}")
        print(f"run folder: {out}")
        print("\n".join(folder.listing(out)))
    return result.exit_code


def _reproduce(args) -> int:
    from kafka_mc.realkafka import reproduce as repro
    try:
        loaded = repro.load(args.trace)
        release = kafka(args, loaded.preset) if args.kafka_home or args.protocol else \
            repro.release_for(loaded.preset, args.kafka_version)
    except repro.ReproduceError as e:
        raise RealUsageError(str(e)) from None
    _java()
    out = Path(args.out) if args.out else None
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    from kafka_mc.realkafka.client import DriverError
    try:
        result = repro.reproduce(args.trace, release, out, log, args.brokers)
    except (repro.ReproduceError, DriverError) as e:
        raise RealUsageError(str(e)) from None
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, sort_keys=True, default=str))
        return result.exit_code
    print(repro.summary(result))
    return result.exit_code
