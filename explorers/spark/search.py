"""Spark-parallel breadth-first search: the search of ``explorers/bfs/search.py``, one Spark job per level.

The visited set lives on the executors, hash-partitioned: a state's owner is picked by the 64-bit
fingerprint of the state or, when the model names one, of its ``locality`` (Kafka: coordinator,
partition leaders and fault budgets, which 90% of steps leave alone, so most successors are
deduplicated where they are made instead of shipped). The driver holds only counts, coverage and
the first violation of a level (with ``--continue``, of each property). Per level (one job, two
stages):

1. each partition expands its part of the frontier in its Python worker (deadlocks, terminal and
   transition properties are checked there, as ``kafka_mc.explorers.core.checking`` says) and sends each owner one pickled bucket of candidates, deduped
   within the partition -- so Spark's shuffle carries ``P x P`` large records, not one per state;
2. each owner unions its cached visited set with the buckets addressed to it (a partitioner-aware
   union: the visited set never moves), keeps new states only, checks invariants and witnesses on
   them, writes their parent pointers (``explorers/spark/store.py``) and caches the next level;
   its summary (counts, coverage, first violation) reaches the driver through an accumulator.

States are ordered by their BFS-tree path (``explorers/spark/tasks.py``), so the search finds the
same parent for every state, the same first violation and the same per-action coverage as the
single-process BFS, and stops with the same counts: a level with a violation is counted again up
to that violation. Counterexamples are rebuilt by walking the parent pointers back and replaying
(``kafka_mc.explorers.core.adapter.rebuild``), into the same ``Path`` the BFS returns.

With ``keep_going`` (``--continue``) each partition reports, per level, the first violation of
each property not reported in an earlier level, and the exceptions of property checks
(``spark_tasks.Reports``); the driver keeps each property's first in BFS order -- the BFS's own
counterexample, as the BFS's reports do not depend on one another (``kafka_mc.explorers.core.checking``) --
retires those properties for the next levels (``Level.retired``) and goes on. Only a model error
ends the search, counted as a violation is without ``keep_going``; an exception in a property's
check is one only if raised before that property's first violation (the BFS stops checking it
there). A report is kept as the successor positions along its path (``path_positions``), from
which its counterexample is replayed (``kafka_mc.explorers.core.adapter.follow``); a checkpoint stores them, so a
recovered search reports the same.

The model is rebuilt in each Python worker from its ``Config`` (``registry.bind``), never
shipped. Tasks are deterministic and write files atomically, so Spark's retries and lineage
recover from a lost executor. With ``checkpoint_minutes`` set, the search state is saved at level
boundaries and a later search resumes from it (``recover``) with identical results. Measured
throughput and the designs compared: ``bench/RESULTS.md`` (Spark section).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from operator import attrgetter
from pathlib import Path as FsPath
from typing import Any, Callable, Iterator, Sequence

from kafka_mc.model import registry
from kafka_mc.model.config import Config, shown
from kafka_mc.explorers.core.run_dir import locked
from kafka_mc.explorers.spark import store as spark_store
from kafka_mc.explorers.bfs.search import BfsOptions
from kafka_mc.explorers.core.progress import Progress
from kafka_mc.explorers.bfs.checkpoint import flat
from kafka_mc.explorers.core.checking import DEADLOCK, Checks, shows, violation
from kafka_mc.explorers.core.adapter import check_fingerprint_contract, follow, rebuild
from kafka_mc.explorers.core.result import (Outcome, Path, Violation, action_coverage, edge_coverage,
                              machines_of, peak_rss_mb, search_stats)
from kafka_mc.explorers.spark.store import CheckpointError
from kafka_mc.explorers.spark.tasks import INIT_KEY_BYTES, STEP_KEY_BYTES, Event, Job, Level, Summaries, \
    bucket, load_checkpoint, path_positions, save_checkpoint

LOG4J2 = """\
rootLogger.level = error
logger.shell.name = org.apache.spark.api.python.PythonGatewayServer
logger.shell.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{1}: %m%n
"""


# Python RDDs pickle each partition's output whole, the format ``partitionBy`` produces: a level
# and its candidates then union without a re-serialising pass through Python.
UNBATCHED = -1


class SparkError(RuntimeError):
    """Java or pyspark is missing, Spark did not start, or a Spark job failed; one line."""


@dataclass(frozen=True)
class SparkOptions:
    master: str | None = None            # None: embedded, local[workers or *]
    workers: int | None = None           # local[N]; on a cluster, spark.cores.max
    conf: tuple[tuple[str, str], ...] = ()
    partitions: int | None = None        # None: the session's default parallelism
    run_dir: str | None = None           # parent pointers and checkpoints; None: a temporary dir
    checkpoint_minutes: float | None = None  # None: no checkpoints; 0: after every level
    recover: bool = False                # resume from the checkpoint in run_dir


# --- the session ----------------------------------------------------------------------------------

def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


@contextmanager
def session(options: SparkOptions = SparkOptions()) -> Iterator[Any]:
    """A quiet SparkSession (UI off, errors-only logging, this Python on the workers), stopped
    on exit. Raises ``SparkError`` when Java or pyspark is missing or Spark fails to start."""
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkError("the spark explorer needs pyspark, which comes with the spark extra: "
                         "pip install 'kafka-mc[spark]'") from None
    if _java() is None:
        raise SparkError("the spark explorer needs Java 17 or newer: install it, or set "
                               "JAVA_HOME")
    local = options.master is None or options.master.startswith("local")
    if options.master and local and options.workers:
        raise SparkError(f"give the thread count once: --master {options.master} or --workers")
    master = options.master or f"local[{options.workers or '*'}]"
    with tempfile.TemporaryDirectory(prefix="kafka-mc-spark-") as tmp:
        log_config = FsPath(tmp) / "log4j2.properties"
        log_config.write_text(LOG4J2)
        java_opts = f"-Dlog4j2.configurationFile={log_config.as_uri()}"
        if local:
            # The embedded JVM shares the cores with the Python workers that do the search, and
            # its C2 compiler threads burned half its CPU (Kafka small, local[2]: 27 -> 14 CPU s
            # with C1 only, 77 -> 71 s wall). A cluster's JVMs keep the default.
            java_opts += " -XX:TieredStopAtLevel=1"
        conf = {"spark.app.name": "kafka-mc", "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false", "spark.python.worker.reuse": "true",
                # JVM <-> Python worker traffic over TCP stalled 40 ms at each small exchange
                # (delayed ACKs): a level's two Python stages took 150 ms with nothing to do,
                # 70 ms over Unix domain sockets (same-host links only, on a cluster too).
                "spark.python.unix.domain.socket.enabled": "true",
                "spark.driver.extraJavaOptions": java_opts,  # local[N] executors run in the driver
                # the workers' entry: the compiled builds' finder; for embedded sessions their
                # stderr to a file (explorers/spark/daemon.py says why)
                "spark.python.daemon.module": "kafka_mc.explorers.spark.daemon"}
        if local:
            conf |= {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
                     "spark.executorEnv.KAFKA_MC_WORKER_LOG": str(FsPath(tmp) / "workers.log")}
            # The web UI (off unless --spark-conf turns it on) binds to SPARK_LOCAL_IP, else to
            # every interface: an embedded search serves nobody but this machine.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        elif options.workers:
            conf["spark.cores.max"] = str(options.workers)
        for key, value in options.conf:
            joined = key.endswith("extraJavaOptions") and key in conf
            conf[key] = f"{conf[key]} {value}" if joined else value
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers' Python
        try:
            sc = SparkContext(master, conf=SparkConf().setAll(list(conf.items())),
                              batchSize=UNBATCHED)
            spark = SparkSession(sc)
        except Exception as e:
            raise SparkError(f"Spark did not start ({_one_line(e)})") from None
        try:
            yield spark
        finally:
            spark.stop()


def _one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


# --- the search -----------------------------------------------------------------------------------

def explore(source: Config | Callable[[], Any], options: BfsOptions = BfsOptions(),
            spark_options: SparkOptions = SparkOptions(), spark: Any = None) -> Outcome:
    """Search the model of ``source`` (a ``Config``, or a picklable zero-argument function that
    builds the model on each worker) on ``spark`` (a SparkSession; None: start one from
    ``spark_options`` and stop it at the end)."""
    build = partial(registry.bind, source) if isinstance(source, Config) else source
    model = build()
    checks = Checks(model, options.properties, options.check_deadlock)
    identity = {"config": source.to_dict() if isinstance(source, Config) else
                {"model": {"name": model.name}}, "checked": [p.name for p in checks.properties]}
    with locked(spark_options.run_dir, create=not spark_options.recover):
        if spark_options.recover:
            resume = _resumable(spark_options, identity, [p.name for p, _ in checks.sometimes])
            _reported_before(resume, model, checks, options.keep_going, spark_options.run_dir)
        else:
            resume = None
            if spark_options.run_dir is not None:
                spark_store.start_fresh(spark_options.run_dir)
        if spark is None:
            with session(spark_options) as started:
                return _Search(started, model, build, checks, identity, resume, options,
                               spark_options).run()
        return _Search(spark, model, build, checks, identity, resume, options, spark_options).run()


def _resumable(options: SparkOptions, identity: dict, witnesses) -> dict:
    """The checkpoint in ``options.run_dir``, if it belongs to this search."""
    if options.run_dir is None:
        raise CheckpointError("recovering needs the run directory of the checkpointed search")
    meta = spark_store.read_meta(options.run_dir)
    mine = flat(identity)
    theirs = flat({k: meta[k] for k in identity})
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) != theirs.get(key):
            raise CheckpointError(f"--recover {options.run_dir}: the checkpoint was made with "
                                  f"{key} = {theirs.get(key)!r}, this search has {mine.get(key)!r}")
    if options.partitions not in (None, meta["partitions"]):
        raise CheckpointError(f"--recover {options.run_dir}: the checkpoint has "
                              f"{meta['partitions']} partitions (drop --partitions)")
    unknown = sorted(set(meta["pending"]) - set(witnesses))
    if unknown:
        raise CheckpointError(f"--recover {options.run_dir}: the checkpoint waits for a witness "
                              f"this search does not check ({unknown[0]})")
    return meta


def _reported_before(meta: dict, model, checks: Checks, keep_going: bool, run_dir: str) -> None:
    """The violations a checkpointed ``--continue`` search reported: only for a search that keeps
    going, each a property this search checks, once, on a path that replays."""
    reports = meta["violations"]
    if reports and not keep_going:
        raise CheckpointError(f"--recover {run_dir}: the checkpoint has reported violations "
                              "already (a --continue search): recover it with --continue")
    known = {(p.expectation.value, p.name) for p in checks.properties} | (
        {(DEADLOCK.kind, DEADLOCK.property)} if checks.deadlock else set())
    seen = set()
    for r in reports:
        what = (r["kind"], r["property"])
        if what not in known:
            raise CheckpointError(f"--recover {run_dir}: the checkpoint reports a violation of "
                                  f"{what[1]} ({what[0]}), which this search does not check")
        if what in seen:
            raise CheckpointError(f"--recover {run_dir}: the checkpoint reports {what[1]} twice")
        seen.add(what)
        try:
            path = follow(model, r["path"])
        except (IndexError, StopIteration):
            raise CheckpointError(f"--recover {shown(run_dir)}: the counterexample of "
                                  f"{shown(what[1], 80)} in the checkpoint does not replay") \
                from None
        if not shows(model, what[0], what[1], path.states, path.actions):
            raise CheckpointError(f"--recover {shown(run_dir)}: the counterexample of "
                                  f"{shown(what[1], 80)} in the checkpoint does not violate it")


class _Search:
    """The driver's side of one search: counters, the cached level RDD, the run directory."""

    def __init__(self, spark, model, build, checks, identity: dict, resume: dict | None,
                 options: BfsOptions, spark_options: SparkOptions):
        self.sc = spark.sparkContext
        self.model, self.checks, self.identity, self.resume = model, checks, identity, resume
        self.options, self.spark_options = options, spark_options
        self.temporary = spark_options.run_dir is None
        self.run_dir = str(FsPath(spark_options.run_dir or tempfile.mkdtemp(prefix="kafka-mc-run-"))
                           .resolve())
        self.P = (resume["partitions"] if resume else spark_options.partitions) or \
            max(self.sc.defaultParallelism, 1)
        deadlock = options.check_deadlock
        self.job = Job(uuid.uuid4().hex, build, self.P,
                       None if options.properties is None else tuple(options.properties),
                       deadlock, self.run_dir, options.por)
        self.reduced = 0   # por: states expanded with a reduced set
        self._key = None
        if options.por:   # fingerprints of the reduction view (paths are rebuilt with them)
            from kafka_mc.explorers.reductions.por import reduction_key
            self._key = reduction_key(model)
        self.pending = [p.name for p, _ in checks.sometimes]
        self.generated = self.distinct = self.depth = self.frontier = 0
        self.fired: Counter = Counter()
        self.machines = machines_of(model)
        self.edges: list[set] = [set() for _ in self.machines]   # per machine: edges taken
        self.found: Counter = Counter()
        self.level = None           # the cached RDD of the current level
        self.summaries = self.sc.accumulator({}, Summaries())
        self.violation: Violation | None = None   # the one that ended the search
        self.reported: list[dict] = []  # --continue: {kind, property, path} (``_report``)
        self.last_checkpoint = time.monotonic()

    # --- the loop ---

    def run(self) -> Outcome:
        from pyspark.errors import PySparkException
        from py4j.protocol import Py4JError

        rss0, t0 = peak_rss_mb(), time.perf_counter()
        interrupted = complete = False
        try:
            if self.resume:
                self._recover(self.resume)
            else:
                self.violation = self._contract_violation() or self._start()
            if self.violation is None:
                self._report(t0)
            while self.violation is None and self.frontier:
                if self.options.max_depth and self.depth >= self.options.max_depth:
                    break
                self._step()
                if self.violation is None:
                    self._report(t0)
                    self._maybe_checkpoint()
            complete = self.violation is None and not self.frontier
        except KeyboardInterrupt:
            interrupted = True
        except (Py4JError, PySparkException) as e:
            raise SparkError(f"the Spark job failed ({_spark_reason(e)})") from None
        except OSError as e:  # the driver's own files: a checkpoint or parent pointers
            raise CheckpointError(f"run directory {shown(self.run_dir)}: "
                                  f"{e.strerror or e}") from None
        finally:
            if self.level is not None:
                self.level.unpersist()
            self._tidy()
        seconds = time.perf_counter() - t0
        return self._outcome(seconds, rss0, interrupted, complete)

    def _task(self, depth: int) -> Level:
        retired = tuple((r["kind"], r["property"]) for r in self.reported)
        return Level(self.job, depth, tuple(self.pending), self.summaries,
                     keep_going=self.options.keep_going, retired=retired)

    def _start(self) -> Violation | None:
        task = self._task(-1)
        seed = self._seed()

        def level0(stop_at=None):
            return seed.mapPartitionsWithIndex(replace(task, stop_at=stop_at).initial, True)
        return self._advance(level0, 0, initial=True)

    def _seed(self):
        """One empty record in each partition, partitioned as the levels are."""
        return self.sc.parallelize([(i, None) for i in range(self.P)], self.P) \
            .partitionBy(self.P, bucket)

    def _step(self) -> None:
        prev, depth = self.level, self.depth
        task = self._task(depth)

        def next_level(stop_at=None):
            t = replace(task, stop_at=stop_at)
            source = prev
            if self.job.por:   # the proviso: which states to expand fully (spark_tasks.probe)
                asked = prev.mapPartitionsWithIndex(t.probe).partitionBy(self.P, bucket)
                answers = self._beside(prev, asked).mapPartitionsWithIndex(t.answer) \
                    .partitionBy(self.P, bucket)
                source = self._beside(prev, answers)
            candidates = source.mapPartitionsWithIndex(t.expand).partitionBy(self.P, bucket)
            return self._beside(prev, candidates).mapPartitionsWithIndex(t.merge, True)
        self.sc.setJobDescription(f"kafka-mc: level {depth + 1}")
        self.violation = self._advance(next_level, depth)
        if prev is not self.level:
            prev.unpersist()

    def _beside(self, level, records):
        """``level``'s partitions with the records addressed to each (a partitioner-aware union:
        the visited sets stay where they are)."""
        both = level.union(records)
        if both.getNumPartitions() != self.P:
            raise RuntimeError("Spark did not co-partition the visited sets and candidates")
        return both

    def _advance(self, make_level: Callable, depth: int, initial: bool = False) -> Violation | None:
        """Build the next level from the one at ``depth`` (``initial``: build level 0); on a
        violation that ends the search, count that level again up to it and return it. With
        ``keep_going``, the violations reported before it (or in the whole level) are kept."""
        from pyspark import StorageLevel

        built = 0 if initial else depth + 1
        level = make_level().persist(StorageLevel.MEMORY_AND_DISK)
        sums = self._summaries(level, built, None)
        firsts = _firsts(sums)
        event = _first_event(sums, firsts)
        self.reported += [_report(e) for e in sorted(firsts.values(), key=attrgetter("order"))
                          if event is None or e.order < event.order]
        if event is not None:
            level.unpersist()
            sums = self._summaries(make_level(event.at), built, event.at)
        new = sum(s.new for s in sums)
        self.generated += sum(s.expansion.generated for s in sums)
        self.reduced += sum(s.expansion.reduced for s in sums)
        self.distinct += new
        for s in sums:
            self.fired.update(s.expansion.fired)
            for got, edges in zip(self.edges, s.expansion.edges):
                got.update(edges)
            self.found.update(s.found)
        if event is not None:  # as the BFS reports it: the level being built counts if begun
            self.depth = depth + bool(new)
            return self._violation(event)
        witnessed = {name for s in sums for name in s.witnessed}
        self.pending = [n for n in self.pending if n not in witnessed]
        self.level, self.frontier = level, new
        self.depth = depth + 1 if new and not initial else depth
        return None

    def _summaries(self, level, number: int, stop_at: bytes | None) -> list:
        """Compute ``level`` (cached, if persisted) and return what its partitions reported.
        The count runs in the JVM (``_jrdd``): a PySpark action would stream the whole level
        through a Python worker once more."""
        self.summaries.value = {}
        level._jrdd.count()
        got = self.summaries.value
        return [got[(number, stop_at, i)] for i in range(self.P)]

    # --- reporting ---

    def _report(self, t0: float) -> None:
        if self.options.progress is not None:
            self.options.progress(Progress(self.generated, self.distinct, self.depth, self.frontier,
                                           time.perf_counter() - t0))

    def _violation(self, e: Event) -> Violation:
        path = None
        if e.base is not None or e.last is not None:
            fps = self._chain(*e.base) if e.base is not None else []
            path = rebuild(self.model, fps + ([e.last] if e.last is not None else []),
                           self._key)
            if e.step is not None:
                a, t = e.step
                path = Path(path.states + (t,), path.actions + (a,))
        return Violation(e.property, e.kind, e.claim, path, e.detail)

    def _chain(self, level: int, part: int, fp: int) -> list[int]:
        """Fingerprints from an initial state to ``fp`` (at ``level``, owned by partition
        ``part``), from the parent pointers."""
        fps = [fp]
        for lv in range(level, 0, -1):
            fp, part = spark_store.parent_of(self.run_dir, lv, part, fp)
            fps.append(fp)
        return fps[::-1]

    def _contract_violation(self) -> Violation | None:
        """The fingerprint contract, checked where it is cheap (as the BFS does): the first states."""
        try:
            check_fingerprint_contract(self.model)
        except Exception as exc:
            return Violation("model_error", "model_error", "the model raised an exception", None,
                             "".join(traceback.format_exception(exc)).rstrip())
        return None

    def _outcome(self, seconds: float, rss0: float, interrupted: bool, complete: bool) -> Outcome:
        model, checks = self.model, self.checks
        named = {p.name: p for p in checks.properties}
        violations = [violation(DEADLOCK if r["kind"] == DEADLOCK.kind else named[r["property"]],
                                follow(model, r["path"])) for r in self.reported]
        violations += [self.violation] if self.violation is not None else []
        if complete:
            named = {p.name: p for p, _ in checks.sometimes}
            violations += checks.unwitnessed([named[n] for n in self.pending])
        kinds = list(model.action_kinds())
        stats = search_stats(self.generated, self.distinct, self.depth, seconds, rss0,
                             model.packed)
        return Outcome(
            model=model.name, explorer="spark", stats=stats,
            coverage=action_coverage(self.fired, self.found, kinds),
            never_enabled=tuple(k for k in kinds if k not in self.fired),
            checked=checks.checked, unchecked=checks.unchecked,
            not_applicable=checks.not_applicable,
            violations=tuple(violations), edges=edge_coverage(self.machines, self.edges),
            interrupted=interrupted, complete=complete,
            extra={"partitions": self.P, "master": self.sc.master, **self._reduction()})

    def _reduction(self) -> dict:
        """The report's note on a reduced search (the BFS's, ``por.report_note``)."""
        if not self.job.por:
            return {}
        from kafka_mc.explorers.reductions.por import Reducer, report_note
        return report_note(Reducer(self.model, self.checks), self.reduced)

    # --- checkpoints ---

    def _maybe_checkpoint(self) -> None:
        minutes = self.spark_options.checkpoint_minutes
        if minutes is None or time.monotonic() - self.last_checkpoint < 60 * minutes:
            return
        self.sc.setJobDescription(f"kafka-mc: checkpoint of level {self.depth}")
        save = partial(save_checkpoint, self.job, self.depth)
        sizes = self.level.mapPartitionsWithIndex(save).collect()
        spark_store.write_meta(self.run_dir, {
            **self.identity, "level": self.depth, "partitions": self.P,
            "key_bytes": INIT_KEY_BYTES + STEP_KEY_BYTES * self.depth,
            "visited": [v for v, _ in sizes], "frontier": [f for _, f in sizes],
            "generated": self.generated, "distinct": self.distinct, "depth": self.depth,
            "fired": dict(self.fired), "found": dict(self.found), "pending": self.pending,
            "violations": self.reported, "edges": [sorted(map(list, e)) for e in self.edges]})
        self.last_checkpoint = time.monotonic()

    def _recover(self, meta: dict) -> None:
        from pyspark import StorageLevel

        if len(meta["edges"]) != len(self.machines):
            raise CheckpointError(f"--recover {self.run_dir}: edges must list one set per state "
                                  f"machine of the model ({len(self.machines)})")
        load = partial(load_checkpoint, self.job, meta)
        self.level = self._seed().mapPartitionsWithIndex(load, True).persist(
            StorageLevel.MEMORY_AND_DISK)
        self.level._jrdd.count()
        self.generated, self.distinct, self.depth = meta["generated"], meta["distinct"], meta["depth"]
        self.fired, self.found = Counter(meta["fired"]), Counter(meta["found"])
        self.pending, self.frontier = list(meta["pending"]), sum(meta["frontier"])
        self.reported = list(meta["violations"])
        self.edges = [set(map(tuple, e)) for e in meta["edges"]]

    def _tidy(self) -> None:
        if self.temporary:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        elif self.spark_options.checkpoint_minutes is None and not self.spark_options.recover:
            spark_store.remove_levels(self.run_dir)   # this search's own files, nothing else


def _firsts(sums: Sequence) -> dict[tuple[str, str], Event]:
    """``--continue``: the first violation in BFS order of each property the level reported, by
    (kind, property)."""
    firsts: dict[tuple[str, str], Event] = {}
    for s in sums:
        for e in (*s.expansion.reported, *s.reported):
            what = (e.kind, e.property)
            if what not in firsts or e.order < firsts[what].order:
                firsts[what] = e
    return firsts


def _first_event(sums: Sequence, firsts: dict | None = None) -> Event | None:
    """The level's first event in BFS order that ends the search: without ``--continue`` any
    violation or model error, with it a model error. An exception in a witness counts only if
    it was raised before the witness was first seen, one in a property's check (``--continue``)
    only if raised before that property's first violation (``firsts``): the BFS evaluates
    neither after that."""
    events = [e for s in sums for e in (s.event, s.expansion.event) if e is not None]
    first_seen: dict[str, bytes] = {}
    for s in sums:
        for name, at in s.witnessed.items():
            first_seen[name] = min(at, first_seen.get(name, at))
    events += [e for s in sums for name, e in s.witness_errors.items()
               if name not in first_seen or e.at < first_seen[name]]
    firsts = firsts or {}
    events += [e for s in sums for what, e in (*s.expansion.errors.items(), *s.errors.items())
               if what not in firsts or e.order < firsts[what].order]
    return min(events, key=attrgetter("order"), default=None)


def _report(e: Event) -> dict:
    """A reported violation as the driver keeps it and a checkpoint stores it: what it violates
    and its counterexample as successor positions (``path_positions``)."""
    return {"kind": e.kind, "property": e.property, "path": path_positions(e)}


def _spark_reason(e: BaseException) -> str:
    """The Python exception behind a failed Spark job, or the first line of the error."""
    text = str(e)
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line and not line.startswith(("at ", "...")) and ("Error" in line or "Exception" in line):
            return line
    return _one_line(e)

