"""``kafka-mc real``: the command group that runs real Apache Kafka.

    kafka-mc real versions [--verbose] [--json]
    kafka-mc real fetch [VERSION ...]
    kafka-mc real cluster (--version V | --kafka-home DIR [--protocol P]) [--brokers N] [--events FILE]
    kafka-mc real run [CONFIG] (--version V | --kafka-home DIR [--protocol P]) [--seed S] [--out DIR]
                      [--brokers N] [--json]
    kafka-mc real reproduce TRACE [--version V | --kafka-home DIR [--protocol P]] [--brokers N]
    kafka-mc real timeline RUN_DIR [--out FILE]

``--kafka-home DIR`` runs a Kafka distribution of the user's (a branch, a patched release, a
snapshot: the folder its build unpacks to) as a fetched release runs, judged against the preset
``--protocol`` names (``releases.from_home``).

Exit codes: 0 clean, 12 an anomaly on the real history (its evidence printed), 2 bad input (an
unknown or unfetched release, a --kafka-home that is no distribution, no Java, a busy port, a
config the harness cannot run, an --out that is not a new, empty or run folder), 69 the run could not finish (a JVM died or was stopped
from outside, a full disk: one line names it), 130/143 interrupted (SIGINT, SIGTERM; SIGHUP 129,
SIGQUIT 131). Every JVM, proxy and temporary folder a command starts is gone when it returns; a
run folder it was writing is marked incomplete, saying why (``kafka_mc.realkafka.runfolder``).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import stat
import sys
import textwrap
import threading
import time
from pathlib import Path

from kafka_mc.model import registry
from kafka_mc.model.config import ConfigError, parse_assignment, resolve_config_path, shown
from kafka_mc.model.display import columns
from kafka_mc.realkafka import folder, releases
from kafka_mc.realkafka.plan import PlanError
from kafka_mc.realkafka.runfolder import FolderError, Interrupted, RunFailed, manifest

EXIT_OK, EXIT_USAGE, EXIT_ANOMALY = 0, 2, 12
TIMELINE = "timeline.html"      # realkafka.timeline.NAME (not imported: --help reads no run)
EXIT_FAILED = 69        # the run could not finish: something outside kafka-mc failed it
# The signals a real command stops on, each its exit code 128 + its number (a JVM, the proxy,
# a run folder being written are dealt with first: stopped, marked incomplete)
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


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
                                           "cluster of its release, its property judged on the "
                                           "model's behaviours the run conforms to; exit 12 "
                                           "reproduced, 0 not, 16 diverged, 14 undecided")
    rp.add_argument("trace", metavar="TRACE", help="an ITF counterexample of the kafka model")
    kafka_arguments(rp, version_help="the release (default: the newest standing for the "
                                     "trace's preset)",
                    protocol_help="with --kafka-home: the preset to judge the build against "
                                  "(default: the trace's)")
    rp.add_argument("--out", metavar="DIR", help="run folder (default: out/reproduce-...)")
    brokers_argument(rp, "3: each partition led by its own broker (markers and records in "
                         "separate requests, as the trace's leaders get them)")
    rp.add_argument("--json", action="store_true", help="print one JSON result object")
    t = rsub.add_parser("timeline", help="draw a recorded run folder (or a campaign's folder of "
                                         "runs) as one HTML page: clients, proxy and brokers on "
                                         "one time axis, requests, faults, markers, outcomes")
    t.add_argument("run_dir", metavar="RUN_DIR",
                   help="a run folder of real run, real conform or real reproduce's conform/ "
                        "(or a real conform --runs campaign's --out: a page of its runs)")
    t.add_argument("--out", metavar="FILE",
                   help=f"the page to write (default: RUN_DIR/{TIMELINE}, listed in the "
                        "folder's manifest as an output)")
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
            ClusterError, DriverError, FolderError]


@contextlib.contextmanager
def signals():
    """While a real command runs: the first of ``SIGNALS`` raises ``Interrupted`` in the main
    thread (the command's ``with`` blocks stop its JVMs and proxy and mark its run folder
    incomplete); a signal after it is remembered, not raised, so that nothing interrupts that
    stopping halfway."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    first: list[int] = []

    def handler(signum, frame):
        if not first:
            first.append(signum)
            raise Interrupted(signum)
    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


def guarded(command, args, more_errors=()) -> int:
    """Run a real command (``command(args)``) under ``signals``: bad input one line and exit 2,
    an outside failure (``RunFailed``) one line and exit 69, a signal one line and 128 + its
    number; a run folder the command was writing is then marked incomplete, and named."""
    manifest.MARKED.clear()
    with signals():
        try:
            return command(args)
        except Interrupted as e:
            _stderr(f"kafka-mc: interrupted by {e.name}{_marked()}")
            return 128 + e.signum
        except RunFailed as e:
            _say(f"the run could not finish: {e}{_marked()}")
            return EXIT_FAILED
        except tuple(usage_errors()) + tuple(more_errors) as e:
            _say(e)
            return EXIT_USAGE


def _marked() -> str:
    folders = [shown(f, 120) for f in manifest.MARKED]
    return f"; marked incomplete: {', '.join(folders)}" if folders else ""


def _stderr(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def main(args) -> int:
    """Run ``kafka-mc real <command>``; the exit code."""
    return guarded(_main, args)


def _main(args) -> int:
    command = getattr(args, "real_command", None)
    if command is None:
        raise RealUsageError("a real command is required: versions, fetch, cluster, run, "
                             "conform, reproduce or timeline")
    if command not in ("versions", "fetch", "timeline"):   # the proxy's protocol decoder (kio: the real
        from kafka_mc.realkafka import wire  # noqa: F401  extra), before anything starts
    return {"versions": _versions, "fetch": _fetch, "cluster": _cluster, "run": _run,
            "reproduce": _reproduce, "timeline": _timeline}[command](args)


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


def _timeline(args) -> int:
    """A run folder's timeline (``kafka_mc.realkafka.timeline``); no JVM, no proxy."""
    from kafka_mc.realkafka import timeline
    print(f"timeline: {timeline.write(args.run_dir, args.out)}")
    return EXIT_OK


def _events_file(text: str) -> Path:
    """``--events FILE``: a new file in a folder, or a regular file (appended to); a folder, a
    FIFO or a device is refused before anything starts (a FIFO would block its opening)."""
    path = Path(text)
    where = f"--events {shown(text)}"
    if not text or "\x00" in text:
        raise RealUsageError(f"{where}: not a usable path")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise RealUsageError(f"{where}: no such folder {shown(path.parent)}") from None
        return path
    except OSError as e:
        raise RealUsageError(f"{where}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise RealUsageError(f"{where}: is a folder (the event log is a file)")
    if not stat.S_ISREG(st.st_mode):
        raise RealUsageError(f"{where}: not a regular file (a FIFO or a device): the event "
                             "log is written to a file")
    return path


def _cluster(args) -> int:
    from kafka_mc.realkafka.proxy import Proxy
    release = kafka(args)
    _java()
    events = _events_file(args.events) if args.events is not None else None
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
    """Serve until a signal (``Interrupted``: exit 130 for Ctrl-C, 143 for SIGTERM, as every
    command), every broker stopped first."""
    from kafka_mc.realkafka.cluster import Cluster
    try:
        with Cluster(release, brokers=args.brokers, proxy=proxy) as cluster:
            print(f"Kafka {release.name} ({args.brokers} broker"
                  f"{'s' if args.brokers > 1 else ''}, preset {release.preset}): "
                  f"bootstrap.servers={cluster.bootstrap}", flush=True)
            print("Ctrl-C stops it (every broker, the proxy and the data folder go with it).",
                  flush=True)
            while True:
                time.sleep(0.5)
                dead = cluster.dead_nodes()
                if dead:
                    node, code = sorted(dead.items())[0]
                    raise RunFailed(f"broker {node}'s JVM exited (code {code}) though "
                                    "kafka-mc did not stop it")
    except Interrupted as e:
        _stderr(f"kafka-mc: stopped by {e.name} (every broker, the proxy and the data folder "
                "are gone)")
        return 128 + e.signum


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
    from kafka_mc.realkafka.plan import check_brokers
    check_brokers(make_plan(cfg, args.seed, transaction_version=release.transaction_version),
                  args.brokers)    # refused before anything starts
    out = args.out if args.out is not None else \
        Path("out") / f"real-{release.version}-{args.seed}"
    manifest.usable(out)        # a folder that is not kafka-mc's refused before anything starts
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
        for a in result.allowed:
            print(f"allowed {a.name} (Kafka's model allows it) {a.transaction}: {a.evidence}")
        print(f"checked: {', '.join(result.checked)}")
        print("clean: no anomaly" if not result.anomalies else
              f"{len(result.anomalies)} anomal{'y' if len(result.anomalies) == 1 else 'ies'}")
        print(f"run folder: {out}")
        print("\n".join(folder.listing(out)))
    return result.exit_code


def _reproduce(args) -> int:
    from kafka_mc.realkafka import reproduce as repro
    result = reproduction(args)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, sort_keys=True, default=str))
        return result.exit_code
    print(repro.summary(result))
    return result.exit_code


def reproduction(args):
    """The trace of ``kafka-mc real reproduce`` run on its release (bad input: ``RealUsageError``);
    its ``Result`` (``kafka_mc.explorers.cli.real`` judges it on the model's behaviours)."""
    from kafka_mc.realkafka import reproduce as repro
    try:
        loaded = repro.load(args.trace)
        release = kafka(args, loaded.preset) if args.kafka_home or args.protocol else \
            repro.release_for(loaded.preset, args.kafka_version)
    except repro.ReproduceError as e:
        raise RealUsageError(str(e)) from None
    _java()
    out = args.out
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    from kafka_mc.realkafka.client import DriverError
    try:
        result = repro.reproduce(args.trace, release, out, log, args.brokers)
    except (repro.ReproduceError, DriverError) as e:
        raise RealUsageError(str(e)) from None
    return result
