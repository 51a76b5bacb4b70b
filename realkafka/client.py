"""The real Java client of one Kafka release, driven from Python, with a Jepsen-style history.

``Driver(release, bootstrap)`` starts one JVM running ``realkafka/driver/KafkaMcDriver.java``
(compiled against the release's own kafka-clients by ``make kafka``) on that release's classpath.
The JVM holds real ``KafkaProducer``, ``KafkaConsumer`` and ``Admin`` instances, each with its own
thread: one client's operations run in order, as an application thread calls them; different
clients' operations run concurrently. Every operation is recorded in ``Driver.history`` (and
appended to ``history_path``, one JSON object a line), as Jepsen records a client:

    {"index": 3, "time": <ns since origin_ns>, "process": "p1", "type": "invoke",
     "f": "begin_transaction", "value": {}, "error": null}
    {"index": 4, "time": ..., "process": "p1", "type": "fail", "f": "begin_transaction",
     "value": null, "error": ["IllegalStateException", "TransactionalId tx: Invalid transition ..."]}

``type`` is ``invoke``, then ``ok`` (with the value), ``fail`` (the operation took no effect:
the Java exception's simple class and message) or ``info`` (its outcome is unknown: an operation
that writes failed after its request may have left, e.g. ``TimeoutException``,
``ProducerFencedException`` or a forceful close during ``commitTransaction``, see ``WRITES``; a
caller that stopped waiting; the JVM lost while it was pending). ``error`` is set on ``fail`` and
``info``, so a checker that knows more of Kafka's semantics can refine an ``info``. Times are the
JVM's ``System.nanoTime()`` taken next to the client call (CLOCK_MONOTONIC, the clock of
``time.monotonic_ns()``), minus ``origin_ns`` (the driver's start unless given): the proxy's
``origin_ns`` puts the history and the proxy's event log on one time line.

Why a driver program rather than py4j (which pyspark brings; its py4j-0.10.9.9.jar is Java 6
bytecode without dependencies and would load beside every release's jars): py4j needs a gateway
server listening on a port (and its auth token) and a callback server for anything asynchronous,
and the JVM's lifetime is then the gateway's; a driver reading stdin has no port at all and
halts the moment its stdin closes (or its parent process ends), so a Python process that dies,
however it dies, leaves no JVM behind. The invoke and completion times
are taken in the JVM beside the client call, not on the far side of a socket round trip and
Python's GIL, and one lock orders the output lines by those times. Concurrency is the driver's
threads (one per client), not py4j's one-Python-thread-per-blocking-call. Each Java exception
arrives as its class and message (no Py4JJavaError to unwrap), and the driver is compiled with
``javac`` against each release's own jars, so an API that differs between releases is a compile
error at ``make kafka``, not an AttributeError at run time. Nothing but the release's lib/ is on
the classpath (no py4j jar, no pyspark at run time).

Beside the history, ``Driver.client_log`` keeps the clients' own log records (the driver carries
an SLF4J binding, StaticLoggerBinder.java: the releases ship slf4j-api and no binding), by
default warnings and the TransactionManager's DEBUG account of its state machine ("Transition
from state IN_TRANSACTION to COMMITTING_TRANSACTION", "ProducerId set to 0 with epoch 0"), on the
history's time line, each with the client (``process``) whose log context wrote it.

The wire protocol (stdin/stdout, JSON lines) is described at the top of KafkaMcDriver.java.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from concurrent.futures import Future, TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Iterable

from kafka_mc.realkafka import fetch, releases
from kafka_mc.realkafka.releases import Release

MAIN_CLASS = "KafkaMcDriver"
_CLIENT_ID = re.compile(r"clientId=([^,\]]+)")
# How long a blocking call waits for its answer unless told: longer than any client timer the
# harness sets, so that the client's own TimeoutException (not this wait) normally ends an
# operation that cannot complete.
DEFAULT_TIMEOUT_S = 60.0
START_TIMEOUT_S = 60.0
# The JVM: a small heap, the client's few threads; C1 only (a short-lived client starts faster).
JVM_OPTIONS = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Xss512k", "-Djava.awt.headless=true")
# The clients' log records the driver keeps by default (its own SLF4J binding, StaticLoggerBinder):
# warnings and errors, and the TransactionManager's account of its state machine ("Transition from
# state X to Y" at DEBUG, "ProducerId set to P with epoch E" at INFO).
CLIENT_LOG = {"root": "WARN",
              "org.apache.kafka.clients.producer.internals.TransactionManager": "DEBUG"}
# The operations that may change what a broker holds. When one of these fails, its effect is
# unknown ("info") unless the exception is one the client raises before sending anything
# (NO_EFFECT): a commitTransaction whose EndTxn already left may have committed whatever the
# client then says (seen: an EndTxn held by the proxy, the producer closed forcefully, the commit
# failed "KafkaException: The producer closed forcefully", the held EndTxn released: the
# transaction committed; and a fenced retry can follow an EndTxn copy that committed). Every
# other operation's failure is a "fail" (it had no effect), timeouts included.
WRITES = frozenset({"init_transactions", "send", "send_offsets_to_transaction",
                    "commit_transaction", "abort_transaction", "flush", "commit_sync",
                    "create_topics", "fence_producers"})
NO_EFFECT = frozenset({"IllegalStateException", "IllegalArgumentException", "ConfigException",
                       "SerializationException", "UnsupportedOperationException",
                       "UnsupportedVersionException"})


# The SLF4J bindings a distribution's libs/ may hold (a fetched release's lib/ holds none: its
# brokers' binding is kept in logging/): left off the driver's classpath, so that the driver's
# own binding (StaticLoggerBinder) is the only one there.
BINDINGS = ("slf4j-reload4j-", "slf4j-log4j12-", "log4j-slf4j-impl-", "log4j-slf4j2-impl-",
            "logback-classic-")


def client_classpath(release: Release) -> str:
    """The client driver's classpath: the release's jars (a wildcard), or, for a distribution of
    the user's, its jars but any SLF4J binding (``BINDINGS``)."""
    if not release.own:
        return releases.classpath(release)
    return os.pathsep.join(str(j) for j in sorted(releases.lib(release).glob("*.jar"))
                           if not j.name.startswith(BINDINGS))


class DriverError(RuntimeError):
    """The driver cannot run (no Java, classes not built, the JVM did not start): one line."""


class ClientError(Exception):
    """A Kafka client call failed: ``cls`` is the Java exception's simple class name
    (``ProducerFencedException``, ``InvalidTxnStateException``, ``TimeoutException``, ...),
    ``causes`` its cause chain as (class, message) pairs. ``cls`` is ``"DriverLost"`` when the JVM
    ended while the call was pending and ``"Timeout"`` when the caller's wait ran out (the call may
    still complete in the client)."""

    def __init__(self, cls: str, message: str | None = None, causes: Iterable = ()):
        self.cls = cls
        self.message = message or ""
        self.causes = [tuple(c) for c in causes]
        super().__init__(f"{cls}: {self.message}" if self.message else cls)


class Op:
    """One pending client operation (a future): ``result(timeout)`` waits for it."""

    def __init__(self, driver: "Driver", ident: int, process: str, f: str, args: dict):
        self.driver = driver
        self.id = ident
        self.process = process
        self.f = f
        self.args = args
        self.invoked = threading.Event()
        self._future: Future = Future()
        self.abandoned = False     # the caller stopped waiting: recorded ``info`` then
        self.value_fn = None       # turns the wire value into the Python one
        self.record = True         # recorded in the history

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = DEFAULT_TIMEOUT_S) -> Any:
        """The operation's value; ``ClientError`` when it failed. When ``timeout`` passes first,
        ``ClientError("Timeout")`` and the operation stays pending (wait again or ``abandon``)."""
        try:
            value = self._future.result(timeout)
        except FutureTimeout:
            raise ClientError("Timeout", f"{self.process}.{self.f}: no answer in {timeout} s") from None
        return self.value_fn(value) if self.value_fn else value

    def exception(self, timeout: float | None = DEFAULT_TIMEOUT_S) -> ClientError | None:
        try:
            self.result(timeout)
        except ClientError as e:
            return e
        return None

    def abandon(self, why: str = "the caller stopped waiting") -> None:
        """Record this pending operation's outcome as unknown (``info``) now, as Jepsen does when
        a client times out; the client's own completion, if it comes, is then not recorded."""
        self.driver._abandon(self, why)


class _Client:
    kind = ""

    def __init__(self, driver: "Driver", name: str, record: bool = True):
        self.driver = driver
        self.name = name
        self.record = record

    def _start(self, f: str, args: dict | None = None, value_fn=None, **extra) -> Op:
        return self.driver._start(self.name, f, args or {}, record=self.record, value_fn=value_fn,
                                  **extra)

    def _call(self, f: str, args: dict | None = None, timeout: float | None = None, value_fn=None,
              **extra) -> Any:
        op = self._start(f, args, value_fn, **extra)
        return self.driver._wait(op, timeout)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def _tps(topic_or_pairs, partitions=None) -> list[dict]:
    """``("t", [0, 1])``, ``("t", 0)`` or ``[("t", 0), ("u", 1)]`` as the wire's partition list."""
    if isinstance(topic_or_pairs, str):
        ps = [partitions] if isinstance(partitions, int) else list(partitions or [])
        return [{"topic": topic_or_pairs, "partition": int(p)} for p in ps]
    return [{"topic": t, "partition": int(p)} for t, p in topic_or_pairs]


def _offsets(offsets) -> list[dict]:
    """``{("t", 0): 5}`` as the wire's offsets list."""
    return [{"topic": t, "partition": int(p), "offset": int(o)} for (t, p), o in offsets.items()]


def _by_tp(rows: list[dict], key: str = "offset") -> dict:
    return {(r["topic"], r["partition"]): r[key] for r in rows}


class Producer(_Client):
    """A transactional ``KafkaProducer``. Each method blocks until the client answers (or
    ``timeout`` s, then ``ClientError("Timeout")``, recorded ``info``); ``start_<method>`` returns
    the pending ``Op`` instead, for a caller that must do something while it is blocked (release a
    request the proxy holds, say)."""
    kind = "producer"

    def start_init_transactions(self) -> Op:
        return self._start("init_transactions")

    def init_transactions(self, timeout: float | None = None) -> None:
        return self.driver._wait(self.start_init_transactions(), timeout)

    def start_begin_transaction(self) -> Op:
        return self._start("begin_transaction")

    def begin_transaction(self, timeout: float | None = None) -> None:
        return self.driver._wait(self.start_begin_transaction(), timeout)

    def start_send(self, topic: str, partition: int | None = None, key: str | None = None,
                   value: str | None = None) -> Op:
        """``KafkaProducer.send(...).get()``: its value is (partition, offset)."""
        return self._start("send", {"topic": topic, "partition": partition, "key": key,
                                    "value": value},
                           value_fn=lambda v: (v["partition"], v["offset"]))

    def send(self, topic: str, partition: int | None = None, key: str | None = None,
             value: str | None = None, timeout: float | None = None) -> tuple[int, int]:
        return self.driver._wait(self.start_send(topic, partition, key, value), timeout)

    def send_async(self, topic: str, partition: int | None = None, key: str | None = None,
                   value: str | None = None) -> Op:
        """``KafkaProducer.send(record, callback)``: the producer goes on with its next operation
        at once (records pipelined, several batches in flight), and the returned op completes
        when the callback fires, with (partition, offset). Invoked in the history when ``send``
        is called, completed when the broker's answer (or the error) reaches the callback; a
        commitTransaction after it flushes it first (KafkaProducer's own rule)."""
        return self._start("send", {"topic": topic, "partition": partition, "key": key,
                                    "value": value, "async": True},
                           value_fn=lambda v: (v["partition"], v["offset"]))

    def start_send_offsets_to_transaction(self, offsets: dict, group) -> Op:
        """``offsets``: {(topic, partition): offset}; ``group``: a group id, a ``Consumer`` (its
        ``groupMetadata()``, taken on its thread) or a dict from ``Consumer.group_metadata()``."""
        args: dict = {"offsets": _offsets(offsets)}
        if isinstance(group, Consumer):
            args["consumer"] = group.name
        elif isinstance(group, dict):
            args["group_metadata"] = group
        else:
            args["group"] = str(group)
        return self._start("send_offsets_to_transaction", args)

    def send_offsets_to_transaction(self, offsets: dict, group, timeout: float | None = None) -> None:
        return self.driver._wait(self.start_send_offsets_to_transaction(offsets, group), timeout)

    def start_commit_transaction(self) -> Op:
        return self._start("commit_transaction")

    def commit_transaction(self, timeout: float | None = None) -> None:
        return self.driver._wait(self.start_commit_transaction(), timeout)

    def start_abort_transaction(self) -> Op:
        return self._start("abort_transaction")

    def abort_transaction(self, timeout: float | None = None) -> None:
        return self.driver._wait(self.start_abort_transaction(), timeout)

    def start_flush(self) -> Op:
        return self._start("flush")

    def flush(self, timeout: float | None = None) -> None:
        return self.driver._wait(self.start_flush(), timeout)

    def start_close(self, timeout_s: float = 5.0, immediate: bool = False) -> Op:
        """``KafkaProducer.close(timeout)``; ``immediate``: on a thread of its own, not after the
        producer's pending operations (an application abandoning a blocked producer)."""
        return self._start("close", {"timeout_ms": int(timeout_s * 1000), "immediate": immediate})

    def close(self, timeout_s: float = 5.0, immediate: bool = False, timeout: float | None = None) -> None:
        return self.driver._wait(self.start_close(timeout_s, immediate), timeout)


class Consumer(_Client):
    """A ``KafkaConsumer`` (read_committed unless told), String keys and values, no auto commit;
    records are dicts with topic, partition, offset, key, value."""
    kind = "consumer"

    def assign(self, topic_or_pairs, partitions=None, timeout: float | None = None) -> None:
        """``assign("t", [0, 1])`` or ``assign([("t", 0), ("u", 2)])``."""
        return self._call("assign", {"partitions": _tps(topic_or_pairs, partitions)}, timeout)

    def subscribe(self, topics: Iterable[str], timeout: float | None = None) -> None:
        return self._call("subscribe", {"topics": list(topics)}, timeout)

    def seek_to_beginning(self, topic_or_pairs=None, partitions=None, timeout: float | None = None) -> None:
        """Every assigned partition, or those given."""
        ps = None if topic_or_pairs is None else _tps(topic_or_pairs, partitions)
        return self._call("seek_to_beginning", {"partitions": ps}, timeout)

    def seek(self, topic: str, partition: int, offset: int, timeout: float | None = None) -> None:
        return self._call("seek", {"topic": topic, "partition": partition, "offset": offset}, timeout)

    def start_poll(self, timeout_s: float = 0.5) -> Op:
        return self._start("poll", {"timeout_ms": int(timeout_s * 1000)})

    def poll(self, timeout_s: float = 0.5, timeout: float | None = None) -> list[dict]:
        """``KafkaConsumer.poll(timeout_s)``: the records it returned."""
        return self.driver._wait(self.start_poll(timeout_s), timeout)

    def position(self, topic: str, partition: int, timeout: float | None = None) -> int:
        return self._call("position", {"topic": topic, "partition": partition}, timeout)

    def end_offsets(self, topic_or_pairs, partitions=None, timeout: float | None = None) -> dict:
        """{(topic, partition): end offset}: the LSO under read_committed, else the high watermark."""
        return self._call("end_offsets", {"partitions": _tps(topic_or_pairs, partitions)}, timeout,
                          value_fn=_by_tp)

    def commit(self, offsets: dict | None = None, timeout: float | None = None) -> None:
        """``commitSync()`` (the consumed positions) or ``commitSync(offsets)``."""
        return self._call("commit_sync", {"offsets": None if offsets is None else _offsets(offsets)},
                          timeout)

    commit_sync = commit

    def committed(self, topic_or_pairs, partitions=None, timeout: float | None = None) -> dict:
        return self._call("committed", {"partitions": _tps(topic_or_pairs, partitions)}, timeout,
                          value_fn=_by_tp)

    def group_metadata(self, timeout: float | None = None) -> dict:
        """{group_id, generation_id, member_id, group_instance_id}."""
        return self._call("group_metadata", {}, timeout)

    def read_all(self, topic_or_pairs, partitions=None, timeout_s: float = 10.0,
                 timeout: float | None = None) -> list[dict]:
        """Assign the partitions, seek to their beginning, poll until each position reached the
        end offset taken at the start (the LSO under read_committed); the records read. A
        ``ClientError("TimeoutException")`` when ``timeout_s`` passes first."""
        return self._call("read_all", {"partitions": _tps(topic_or_pairs, partitions),
                                       "timeout_ms": int(timeout_s * 1000)}, timeout)

    def close(self, timeout_s: float = 5.0, timeout: float | None = None) -> None:
        return self._call("close", {"timeout_ms": int(timeout_s * 1000)}, timeout)


class Admin(_Client):
    """An ``Admin`` client. Partition arguments: ``(topic, partition)`` or ``(topic, [partitions])``
    or a list of (topic, partition) pairs."""
    kind = "admin"

    def create_topics(self, topics: dict[str, int], replication: int = 1, config: dict | None = None,
                      exist_ok: bool = False, timeout: float | None = None,
                      assignment: dict[int, list[int]] | None = None) -> dict:
        """{name: partitions} created with ``replication`` (or, with ``assignment``, each
        partition's replicas on the brokers it names, the first its preferred leader: then
        ``partitions`` must be its size); {name: "created" | "exists"}."""
        if assignment is not None and any(len(assignment) != int(p) for p in topics.values()):
            raise ValueError("an assignment names every partition of the topic")
        rows = [{"name": n, "partitions": int(p), "replication": int(replication),
                 "config": {k: str(v) for k, v in (config or {}).items()} or None,
                 "assignment": None if assignment is None else
                 {str(k): [int(b) for b in v] for k, v in assignment.items()}}
                for n, p in topics.items()]
        return self._call("create_topics", {"topics": rows, "exist_ok": exist_ok}, timeout)

    def create_topic(self, name: str, partitions: int = 1, replication: int = 1,
                     config: dict | None = None, exist_ok: bool = False,
                     timeout: float | None = None,
                     assignment: dict[int, list[int]] | None = None) -> str:
        return self.create_topics({name: partitions}, replication, config, exist_ok, timeout,
                                  assignment)[name]

    def describe_topics(self, topics: Iterable[str], timeout: float | None = None) -> dict:
        """{topic: [{partition, leader, replicas, isr}]}."""
        return self._call("describe_topics", {"topics": list(topics)}, timeout)

    def describe_cluster(self, timeout: float | None = None) -> dict:
        """{cluster_id, controller, nodes: [{id, host, port}]}."""
        return self._call("describe_cluster", {}, timeout)

    def describe_transactions(self, transactional_ids: Iterable[str],
                              timeout: float | None = None) -> dict:
        """{transactional.id: {state, coordinator_id, producer_id, producer_epoch,
        transaction_timeout_ms, transaction_start_time_ms, topic_partitions}}; an id the
        coordinator does not know: {state: None, error: {class, message}}."""
        if isinstance(transactional_ids, str):
            transactional_ids = [transactional_ids]
        return self._call("describe_transactions", {"transactional_ids": list(transactional_ids)},
                          timeout)

    def describe_transaction(self, transactional_id: str, timeout: float | None = None) -> dict:
        """One transactional.id's description; ``ClientError`` when the coordinator has none."""
        d = self.describe_transactions([transactional_id], timeout)[transactional_id]
        if d.get("error"):
            raise ClientError(d["error"]["class"], d["error"]["message"])
        return d

    def find_coordinator(self, transactional_id: str, timeout: float | None = None) -> int:
        """The node id of the transactional.id's coordinator (DescribeTransactions' coordinatorId)."""
        return self.describe_transaction(transactional_id, timeout)["coordinator_id"]

    def list_transactions(self, timeout: float | None = None) -> list[dict]:
        """[{transactional_id, producer_id, state}] over every broker."""
        return self._call("list_transactions", {}, timeout)

    def describe_producers(self, topic_or_pairs, partitions=None, timeout: float | None = None):
        """The active producers of partitions: [{producer_id, producer_epoch, last_sequence,
        last_timestamp, coordinator_epoch, current_transaction_start_offset}]. Given
        ``(topic, partition)``: that list; else {(topic, partition): list}."""
        single = isinstance(topic_or_pairs, str) and isinstance(partitions, int)
        rows = self._call("describe_producers", {"partitions": _tps(topic_or_pairs, partitions)},
                          timeout)
        for r in rows:
            if r.get("error"):
                raise ClientError(r["error"]["class"], r["error"]["message"])
        found = _by_tp(rows, "producers")
        return found[(topic_or_pairs, partitions)] if single else found

    def list_offsets(self, topic_or_pairs, partitions=None, isolation: str = "read_committed",
                     spec: str = "latest", timeout: float | None = None):
        """``Admin.listOffsets`` with ``OffsetSpec.latest()`` (or earliest): under read_committed
        the last stable offset, under read_uncommitted the high watermark. Given
        ``(topic, partition)``: the offset; else {(topic, partition): offset}."""
        if isolation not in ("read_committed", "read_uncommitted"):
            raise ValueError(f"isolation {isolation!r}: read_committed or read_uncommitted")
        single = isinstance(topic_or_pairs, str) and isinstance(partitions, int)
        found = self._call("list_offsets", {"partitions": _tps(topic_or_pairs, partitions),
                                            "isolation": isolation, "spec": spec}, timeout,
                           value_fn=_by_tp)
        return found[(topic_or_pairs, partitions)] if single else found

    def lso(self, topic: str, partition: int, timeout: float | None = None) -> int:
        return self.list_offsets(topic, partition, "read_committed", timeout=timeout)

    def high_watermark(self, topic: str, partition: int, timeout: float | None = None) -> int:
        return self.list_offsets(topic, partition, "read_uncommitted", timeout=timeout)

    def fence_producers(self, transactional_ids: Iterable[str], timeout: float | None = None) -> None:
        return self._call("fence_producers", {"transactional_ids": list(transactional_ids)}, timeout)

    def list_group_offsets(self, group: str, timeout: float | None = None) -> dict:
        """The group's committed offsets: {(topic, partition): offset}."""
        return self._call("list_group_offsets", {"group": group}, timeout, value_fn=_by_tp)

    def close(self, timeout_s: float = 5.0, timeout: float | None = None) -> None:
        return self._call("close", {"timeout_ms": int(timeout_s * 1000)}, timeout)


def _config(config: dict) -> dict[str, str]:
    """Keyword config as Kafka's: ``request_timeout_ms`` -> ``request.timeout.ms`` (a key with a
    dot is taken as it is); every value a string (booleans as Java spells them)."""
    out = {}
    for k, v in config.items():
        key = k if "." in k else k.replace("_", ".")
        out[key] = None if v is None else ("true" if v is True else "false" if v is False else str(v))
    return out


def _terminate(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """End the JVM: close its stdin (it halts), then SIGTERM, then SIGKILL, to its whole session."""
    if proc.poll() is None:
        try:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    break
                try:
                    proc.wait(grace)
                    break
                except subprocess.TimeoutExpired:
                    continue


class Driver:
    """One JVM running the client driver of ``release`` (a ``Release`` or a version string)
    against ``bootstrap``. A context manager; ``close()`` always ends the JVM (and so does the
    interpreter's exit; the JVM also halts by itself when this process ends, however it ends).
    ``settings``: client config given to every client the driver makes, each taking the names
    its kind of client knows (a client's own config wins; None there removes a setting).
    ``origin_ns``: the ``time.monotonic_ns()`` history times count from (the proxy's
    ``origin_ns`` puts the history and the proxy's events on one time line); ``client_log``:
    {logger prefix or "root": level} for ``client_log`` records (default ``CLIENT_LOG``)."""

    def __init__(self, release: Release | str, bootstrap: str, history_path: Path | None = None,
                 settings: dict[str, str] | None = None, *, origin_ns: int | None = None,
                 java: str | None = None, jvm_options: Iterable[str] = JVM_OPTIONS,
                 start_timeout: float = START_TIMEOUT_S, client_log: dict[str, str] | None = None,
                 client_log_path: Path | None = None):
        # ReleaseError: unknown, not fetched, or a --kafka-home that is no distribution
        self.release = releases.usable(release)
        version = self.release.name
        self.bootstrap = bootstrap
        self.settings = _config(settings or {})
        self.origin_ns = time.monotonic_ns() if origin_ns is None else origin_ns
        self.history: list[dict] = []
        # The clients' log records: {"index", "time", "process", "level", "logger", "thread",
        # "message", "error"}; levels by logger prefix (``client_log``, default CLIENT_LOG).
        self.client_log: list[dict] = []
        self.client_log_path = Path(client_log_path) if client_log_path else None
        self._client_log_file = None
        self.history_path = Path(history_path) if history_path else None
        self._history_file = None
        self._lock = threading.Lock()          # history, pending, ids
        self._write_lock = threading.Lock()    # the JVM's stdin
        self._ids = itertools.count(1)
        self._pending: dict[int, Op] = {}
        self._names: dict[str, _Client] = {}
        self._stderr: deque[str] = deque(maxlen=40)
        self._closed = False
        self.lost: str | None = None           # why the JVM ended, if it ended on its own
        self.write_error: OSError | None = None   # the history file could not be written
        self.kafka_version: str | None = None
        driver_dir = releases.driver_dir(self.release)
        if self.release.own:   # a distribution of the user's: compiled here when it needs to be
            try:
                fetch.prepare_home(self.release)
            except (fetch.FetchError, OSError, subprocess.TimeoutExpired) as e:
                raise DriverError(str(e)) from None
        if not (driver_dir / f"{MAIN_CLASS}.class").is_file():
            raise DriverError(f"the client driver for Kafka {version} is not built "
                              f"({driver_dir}): run `kafka-mc real fetch {version}`")
        stamp = driver_dir / "SOURCE_SHA256"
        if stamp.is_file() and stamp.read_text().strip() != fetch.driver_digest():
            raise DriverError(f"the client driver for Kafka {version} is out of date "
                              "(realkafka/driver/*.java changed since): run `kafka-mc real "
                              f"fetch {version}`")
        java = java or (str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
                        if os.environ.get("JAVA_HOME") else shutil.which("java"))
        if not java or not Path(java).exists():
            raise DriverError("no java on PATH (the Kafka client driver needs a JDK 17+)")
        if self.history_path:
            self.history_path.parent.mkdir(parents=True, exist_ok=True)
            self._history_file = open(self.history_path, "ab", buffering=0)
        if self.client_log_path:
            self.client_log_path.parent.mkdir(parents=True, exist_ok=True)
            self._client_log_file = open(self.client_log_path, "ab", buffering=0)
        levels = CLIENT_LOG if client_log is None else client_log
        log_spec = ",".join(f"{k}={v}" for k, v in levels.items())
        cmd = [java, *jvm_options, f"-Dkafka.mc.log={log_spec}",
               "-cp", f"{driver_dir}{os.pathsep}{client_classpath(self.release)}", MAIN_CLASS]
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, start_new_session=True,
                                          close_fds=True)
        except OSError as e:
            for f in (self._history_file, self._client_log_file):
                if f:
                    f.close()
            raise DriverError(f"java could not start ({java}): {e}") from None
        self._finalizer = weakref.finalize(self, _terminate, self._proc)
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, name=f"kmc-driver-{self._proc.pid}",
                                        daemon=True)
        self._reader.start()
        threading.Thread(target=self._read_stderr, name=f"kmc-driver-err-{self._proc.pid}",
                         daemon=True).start()
        if not self._ready.wait(start_timeout) or self.lost:
            why = self.lost or f"no answer in {start_timeout} s"
            self.close()
            raise DriverError(f"the Kafka {version} client driver did not start: {why}")

    # ---- lifecycle ----------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def ping(self, timeout: float = 10.0) -> float:
        """A round trip to the driver (not recorded): its seconds."""
        t0 = time.monotonic()
        self._wait(self._start(None, "ping", {}, record=False), timeout)
        return time.monotonic() - t0

    def close(self) -> None:
        """End the JVM (stdin closed: it halts; else SIGTERM, SIGKILL); operations still pending
        are recorded ``info``. Idempotent."""
        self._closed = True
        self._finalizer()
        self._reader.join(10)
        self._fail_pending("DriverClosed", "the driver was closed while the operation was pending")
        with self._lock:
            for attr in ("_history_file", "_client_log_file"):
                f = getattr(self, attr)
                if f:
                    f.close()
                    setattr(self, attr, None)

    def __enter__(self) -> "Driver":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- clients ------------------------------------------------------------------------

    def _open(self, kind: str, cls, name: str, config: dict, record: bool) -> Any:
        own = {"bootstrap.servers": self.bootstrap, "client.id": name, **config}
        client = cls(self, name, record)
        op = self._start(None, kind, {"name": name, "config": own, "defaults": self.settings},
                         record=False)
        self._wait(op, START_TIMEOUT_S)
        self._names[name] = client
        return client

    def producer(self, name: str, transactional_id: str | None, **config) -> Producer:
        """A ``KafkaProducer`` named ``name`` (its client.id and its history process):
        transactional.id ``transactional_id`` (None: idempotent only), enable.idempotence,
        acks=all, linger.ms=0; ``config`` (``request_timeout_ms=4000`` or
        ``**{"request.timeout.ms": 4000}``) after the driver's settings."""
        base = {"enable.idempotence": "true", "acks": "all", "linger.ms": "0"}
        if transactional_id is not None:
            base["transactional.id"] = transactional_id
        return self._open("producer", Producer, name, {**base, **_config(config)}, True)

    def consumer(self, name: str, group: str | None, isolation: str = "read_committed",
                 **config) -> Consumer:
        """A ``KafkaConsumer`` named ``name`` in group ``group`` (None: no group, assign only),
        ``isolation.level`` ``isolation``, no auto commit, auto.offset.reset=earliest."""
        if isolation not in ("read_committed", "read_uncommitted"):
            raise ValueError(f"isolation {isolation!r}: read_committed or read_uncommitted")
        base = {"isolation.level": isolation, "enable.auto.commit": "false",
                "auto.offset.reset": "earliest"}
        if group is not None:
            base["group.id"] = group
        return self._open("consumer", Consumer, name, {**base, **_config(config)}, True)

    def admin(self, name: str = "admin", record: bool = True, **config) -> Admin:
        """An ``Admin`` client; ``record=False`` keeps its calls out of the history."""
        if name in self._names and isinstance(self._names[name], Admin):
            return self._names[name]
        return self._open("admin", Admin, name, _config(config), record)

    # ---- operations ---------------------------------------------------------------------

    def _start(self, target: str | None, f: str, args: dict, *, record: bool, value_fn=None) -> Op:
        if self._closed or self.lost:
            raise ClientError("DriverLost", self.lost or "the driver is closed")
        with self._lock:
            ident = next(self._ids)
            op = Op(self, ident, target or "driver", f, args)
            op.value_fn = value_fn
            op.record = record
            self._pending[ident] = op
        line = json.dumps({"id": ident, "target": target, "op": f, "args": args}) + "\n"
        try:
            with self._write_lock:
                self._proc.stdin.write(line.encode())
                self._proc.stdin.flush()
        except (OSError, ValueError) as e:
            with self._lock:
                self._pending.pop(ident, None)
            raise ClientError("DriverLost", self.lost or f"the driver's stdin: {e}") from None
        return op

    def _wait(self, op: Op, timeout: float | None) -> Any:
        """Block for ``op``; on the caller's timeout the operation is abandoned (``info``)."""
        try:
            return op.result(DEFAULT_TIMEOUT_S if timeout is None else timeout)
        except ClientError as e:
            if e.cls == "Timeout" and not op.done():
                op.abandon(f"no answer in {DEFAULT_TIMEOUT_S if timeout is None else timeout} s")
            raise

    def _record(self, t_ns: int, op: Op, type_: str, value=None, error=None) -> None:
        """Append one history record (under ``_lock``)."""
        rec = {"index": len(self.history), "time": t_ns - self.origin_ns, "process": op.process,
               "type": type_, "f": op.f, "value": value, "error": error}
        self.history.append(rec)
        if self._history_file:
            self._history_file = self._append(self._history_file, rec)

    def _abandon(self, op: Op, why: str) -> None:
        with self._lock:
            if op._future.done() or op.abandoned:
                return
            op.abandoned = True
            if op.record:
                now = time.monotonic_ns()
                if not op.invoked.is_set():
                    # Still queued behind its client's earlier operations: it may yet run (and
                    # take effect), so it is in the history all the same, invoked now.
                    self._record(now, op, "invoke", value=op.args)
                self._record(now, op, "info", error=["Timeout", why])

    def _fail_pending(self, cls: str, message: str) -> None:
        with self._lock:
            pending = list(self._pending.values())
            self._pending.clear()
            for op in pending:
                if op.record and op.invoked.is_set() and not op.abandoned:
                    self._record(time.monotonic_ns(), op, "info", error=[cls, message])
        for op in pending:
            if not op._future.done():
                op._future.set_exception(ClientError(cls, message))

    def _read(self) -> None:
        stdout = self._proc.stdout
        try:
            for raw in stdout:
                try:
                    msg = json.loads(raw)
                except ValueError:
                    self._stderr.append(raw.decode(errors="replace").rstrip())
                    continue
                self._handle(msg)
        except (OSError, ValueError):
            pass
        try:
            stdout.close()
        except OSError:
            pass
        code = self._proc.wait()
        if not self._closed:
            tail = " | ".join(list(self._stderr)[-3:])
            how = f"was killed by signal {-code}" if code < 0 else f"exited (code {code})"
            self.lost = f"the client driver's JVM {how}" + (f": {tail}" if tail else "")
        self._ready.set()
        self._fail_pending("DriverLost", self.lost or "the driver was closed")

    def _read_stderr(self) -> None:
        try:
            for raw in self._proc.stderr:
                self._stderr.append(raw.decode(errors="replace").rstrip())
        except (OSError, ValueError):
            pass

    def _handle(self, msg: dict) -> None:
        event = msg.get("event")
        if event == "ready":
            self.kafka_version = msg.get("kafka")
            self._ready.set()
            return
        t = msg.get("t", time.monotonic_ns())
        if event == "log":
            self._log(t, msg)
            return
        with self._lock:
            op = self._pending.get(msg.get("id"))
            if op is None:
                return
            if event == "invoke":
                op.invoked.set()
                if op.record and not op.abandoned:
                    self._record(t, op, "invoke", value=op.args)
                return
            del self._pending[op.id]
            if event == "ok":
                result: Any = msg.get("value")
                if op.record and not op.abandoned:
                    self._record(t, op, "ok", value=self._ok_value(op, result))
            else:
                err = msg.get("error") or {}
                result = ClientError(err.get("class", "?"), err.get("message"), err.get("causes", ()))
                if op.record and not op.abandoned:
                    if not op.invoked.is_set():    # refused before the client was called
                        self._record(t, op, "invoke", value=op.args)
                    type_ = "info" if op.f in WRITES and result.cls not in NO_EFFECT else "fail"
                    self._record(t, op, type_, error=[result.cls, result.message])
        if isinstance(result, ClientError):
            op._future.set_exception(result)
        else:
            op._future.set_result(result)

    def _log(self, t_ns: int, msg: dict) -> None:
        """One log record of the clients; its process is the client whose log context (Kafka's
        ``LogContext`` prefix, "[Producer clientId=p1, ...]") or thread wrote it."""
        message = msg.get("message") or ""
        thread = msg.get("thread") or ""
        m = _CLIENT_ID.search(message)
        if m:
            process = m.group(1)
        elif thread.startswith("kmc-"):
            process = thread[4:]
        else:
            process = thread.rpartition(" | ")[2] or None
        with self._lock:
            rec = {"index": len(self.client_log), "time": t_ns - self.origin_ns, "process": process,
                   "level": msg.get("level"), "logger": msg.get("logger"), "thread": thread,
                   "message": message, "error": msg.get("error")}
            self.client_log.append(rec)
            if self._client_log_file:
                self._client_log_file = self._append(self._client_log_file, rec)

    def _append(self, f, rec: dict):
        """One JSON line appended to ``f`` (returned), or, when it cannot be written (a full
        disk), the file cut back to its last whole line, closed and None returned, the error
        kept in ``write_error`` (the records stay in memory; the run reports the failure)."""
        line = (json.dumps(rec) + "\n").encode()
        good = f.tell()
        try:
            view = memoryview(line)
            while view:                 # an unbuffered write may take part of the line
                view = view[f.write(view):]
            return f
        except OSError as e:
            if self.write_error is None:
                self.write_error = e
            try:
                f.truncate(good)
            except (OSError, ValueError):
                pass
            try:
                f.close()
            except OSError:
                pass
            return None

    @staticmethod
    def _ok_value(op: Op, value):
        """The history's value of a completed op: a send's record with where it landed."""
        if op.f == "send" and isinstance(value, dict):
            return {**{k: v for k, v in op.args.items() if k != "async"}, **value}
        return value

