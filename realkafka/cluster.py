"""A real Apache Kafka cluster on loopback: one or three KRaft nodes in combined mode, each its own JVM.

Each node is ``process.roles=broker,controller`` (``kafka.Kafka server.properties``, i.e.
``KafkaRaftServer``) with three listeners on 127.0.0.1: CLIENT (the clients'), INTERNAL
(``inter.broker.listener.name``: the coordinator's WriteTxnMarkers, the leaders' KIP-890
verifications, replica fetches) and CONTROLLER (the static quorum, ``controller.quorum.voters``,
which every supported release accepts). Given a proxy, CLIENT and INTERNAL are advertised through it
(``proxy.route("broker-<node>/CLIENT", real address)``), so every client and inter-broker request
crosses it; the CONTROLLER listener is not proxied. The storage is formatted first with Kafka's own
``kafka.tools.StorageTool format`` (4.x: ``--feature transaction.version=N`` from the release).

Teardown is certain: every JVM runs in its own session (process group) and is ended by ``stop()``
(SIGTERM, SIGKILL after a grace period), by the context manager whatever happens inside it, by a
``weakref.finalize``, at interpreter exit (``atexit``), on SIGTERM of this process (a handler is put
in place while a cluster lives if none was), and - for a SIGKILL of this process, which no handler
sees - by the kernel: JVMs are launched from one long-lived thread with ``PR_SET_PDEATHSIG``
(SIGKILL), and the next cluster started sweeps temporary folders whose owner process is gone.

Readiness is asked of the broker itself, not read from its log: a Metadata request on a node's real
CLIENT port (not through the proxy, so the harness's own requests stay out of the event log) lists
the node once it is registered and unfenced (``KafkaRaftServer``; a fenced broker is not in
Metadata). The same small wire helper answers ``coordinator_node()`` (the leader of
``__transaction_state-0``: ``transaction.state.log.num.partitions=1`` puts every transactional.id on
that partition) and ``create_topic``.
"""
from __future__ import annotations

import atexit
import base64
import ctypes
import os
import queue
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path

from kafka_mc.realkafka import releases
# the JVM base shared with the log reader (logdump sits below the cluster: no import circle)
from kafka_mc.realkafka.logdump import (JVM_OPTIONS, LOGGING_FOLDER, ClusterError, broker_classpath,  # noqa: F401
                               has_class, logging_binding, partition_log, partition_logs)
from kafka_mc.realkafka.releases import Release

START_TIMEOUT_S = 120.0      # two busy cores: a node takes ~5-15 s, more while others compile
STOP_GRACE_S = 3.0           # stop(): SIGTERM (a clean shutdown), then SIGKILL; the data is
                             # thrown away or only read after, and Kafka's log survives a kill
CLEAN_SHUTDOWN_S = 30.0      # restart(hard=False): a controlled shutdown may take this long
TMP_PREFIX = "kafka-mc-cluster-"
LISTENERS = ("CLIENT", "INTERNAL", "CONTROLLER")


# ---------------------------------------------------------------------------------------------
# Settings

def default_settings(brokers: int, release: Release) -> dict[str, str]:
    """The broker settings a test-speed transaction setup implies (``settings`` overrides any).

    Internal topics replicated on every broker (min.isr one less, so that a three-node cluster
    survives one node down, Kafka's own default pairing 3/2); one partition of
    ``__transaction_state`` and of ``__consumer_offsets`` (one known coordinator); short
    transaction timers; KIP-890 part 1 verification on (every supported release has it)."""
    rf = str(brokers)
    min_isr = str(max(1, brokers - 1))
    return {
        "num.partitions": "1",
        "default.replication.factor": rf,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        "transaction.max.timeout.ms": "60000",
        "transactional.id.expiration.ms": "120000",
        "transaction.remove.expired.transaction.cleanup.interval.ms": "30000",
        "producer.id.expiration.ms": "120000",
        "producer.id.expiration.check.interval.ms": "10000",
        "transaction.partition.verification.enable": "true",
        "request.timeout.ms": "30000",
        "auto.create.topics.enable": "true",
        # a killed node is fenced (its partitions led elsewhere) after 3 s, not Kafka's 9 s
        "broker.heartbeat.interval.ms": "500",
        "broker.session.timeout.ms": "3000",
        # two shared cores: fewer threads than Kafka's defaults
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.replica.fetchers": "1",
        "background.threads": "2",
        "log.cleaner.threads": "1",
        "log.cleaner.dedupe.buffer.size": "2097152",
    }


def _major(version: str) -> int:
    return int(version.split(".")[0])


def _cluster_id() -> str:
    """A random cluster id as ``org.apache.kafka.common.Uuid.randomUuid().toString()`` writes one
    (URL-safe base64, no padding; never starting with '-', which a command line reads as a flag)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out for outgoing connections (Linux's
    ip_local_port_range; 32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _free_ports(n: int) -> list[int]:
    """``n`` free listener ports below the ephemeral range: a port taken from it (bind to 0)
    stays free only until a connection's local end takes it, and the brokers of a cluster
    start one after the other, seconds apart, while clients connect (a third broker once met
    its port busy that way). Random ones, so that concurrent clusters seldom try the same; each
    checked free; the kernel's choice when none is found."""
    import random
    low = _ephemeral_low()
    pool = range(10000, low) if low > 10000 + 4 * n else range(0)
    chosen: list[int] = []
    for port in random.sample(pool, min(len(pool), 64 * n)):
        if len(chosen) == n:
            break
        if _port_free(port):
            chosen.append(port)
    if len(chosen) == n:
        return chosen
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the JVM binds its listeners
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


# DEBUG for the transaction coordinator (TransactionCoordinator, TransactionStateManager,
# TransactionMarkerChannelManager in kafka.coordinator.transaction; TransactionMetadata moved to
# org.apache.kafka.coordinator.transaction in 4.x) and the leaders' verification manager.
DEBUG_LOGGERS = ("kafka.coordinator.transaction", "org.apache.kafka.coordinator.transaction",
                 "kafka.server.AddPartitionsToTxnManager",
                 "org.apache.kafka.server.transaction.AddPartitionsToTxnManager")
QUIET_LOGGERS = ("kafka.request.logger",)
PATTERN = "[%d] %p %m (%c)%n"


def _log4j_properties(server_log: Path) -> str:
    lines = [
        "log4j.rootLogger=INFO, file, stderr",
        "log4j.appender.file=org.apache.log4j.FileAppender",
        f"log4j.appender.file.File={server_log}",
        "log4j.appender.file.Append=true",
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.file.layout.ConversionPattern={PATTERN}",
        "log4j.appender.stderr=org.apache.log4j.ConsoleAppender",
        "log4j.appender.stderr.Target=System.err",
        "log4j.appender.stderr.Threshold=WARN",
        "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.stderr.layout.ConversionPattern={PATTERN}",
    ]
    lines += [f"log4j.logger.{name}=DEBUG" for name in DEBUG_LOGGERS]
    lines += [f"log4j.logger.{name}=WARN" for name in QUIET_LOGGERS]
    return "\n".join(lines) + "\n"


def _log4j2_properties(server_log: Path) -> str:
    lines = [
        "status = warn",
        "appender.file.type = File",
        "appender.file.name = FILE",
        f"appender.file.fileName = {server_log}",
        "appender.file.append = true",
        "appender.file.layout.type = PatternLayout",
        f"appender.file.layout.pattern = {PATTERN}",
        "appender.err.type = Console",
        "appender.err.name = STDERR",
        "appender.err.target = SYSTEM_ERR",
        "appender.err.filter.threshold.type = ThresholdFilter",
        "appender.err.filter.threshold.level = WARN",
        "appender.err.layout.type = PatternLayout",
        f"appender.err.layout.pattern = {PATTERN}",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = FILE",
        "rootLogger.appenderRef.err.ref = STDERR",
    ]
    for i, name in enumerate(DEBUG_LOGGERS):
        lines += [f"logger.debug{i}.name = {name}", f"logger.debug{i}.level = DEBUG"]
    for i, name in enumerate(QUIET_LOGGERS):
        lines += [f"logger.quiet{i}.name = {name}", f"logger.quiet{i}.level = WARN"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Processes: launched from one long-lived thread with PR_SET_PDEATHSIG, registered for cleanup

_PR_SET_PDEATHSIG = 1


def _pdeathsig_preexec(parent: int):
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl

    def preexec():
        # The kernel sends SIGKILL to the JVM when the launching thread ends: only with this
        # process (the launcher thread lives as long as it does).
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:      # this process died between fork and prctl
            os._exit(1)
    return preexec


class _Launcher:
    """One daemon thread that starts every JVM: PR_SET_PDEATHSIG is tied to the thread that forked
    the child, so forking from a thread that may end (a test's worker, a failover watcher) would
    kill the JVM with it."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = None

    def _loop(self):
        preexec = _pdeathsig_preexec(os.getpid())
        while True:
            args, kwargs, box, done = self._jobs.get()
            try:
                box.append(subprocess.Popen(*args, preexec_fn=preexec, **kwargs))
            except BaseException as e:   # handed to the caller
                box.append(e)
            done.set()

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._jobs = queue.Queue()
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._loop, name="kafka-mc-jvm-launcher",
                                                daemon=True)
                self._thread.start()
        box: list = []
        done = threading.Event()
        self._jobs.put((args, kwargs, box, done))
        done.wait()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]


_LAUNCHER = _Launcher()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _end_group(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM the process group of ``proc``, SIGKILL it after ``grace`` seconds; reaped."""
    if proc.poll() is None and grace > 0:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)    # the group: anything the JVM forked goes too
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


class _State:
    """What one cluster owns, kept apart from the Cluster so that a finalizer can end it."""

    def __init__(self, workdir: Path, remove_dir: bool):
        self.procs: dict[int, subprocess.Popen] = {}
        self.workdir = workdir
        self.remove_dir = remove_dir
        self.lock = threading.RLock()
        self.closed = False     # once cleaned up, nothing starts again (a failover thread's late
                                # restart racing the with's exit)

    def cleanup(self, grace: float = STOP_GRACE_S) -> None:
        with self.lock:
            self.closed = True
            procs = list(self.procs.values())
            self.procs.clear()
            live = [p for p in procs if p.poll() is None]
            for p in live:                      # every node told at once, then waited for
                try:
                    os.killpg(p.pid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + grace
            for p in live:
                try:
                    p.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            for p in procs:
                _end_group(p, 0)
            for p in procs:
                for stream in (p.stdout, p.stderr):
                    if stream is not None:
                        stream.close()
            if self.remove_dir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            _STATES.discard(self)
            _restore_sigterm()


_STATES: set[_State] = set()
_STATES_LOCK = threading.Lock()
_PREVIOUS_SIGTERM = None


def _cleanup_all(grace: float = STOP_GRACE_S) -> None:
    for state in list(_STATES):
        state.cleanup(grace)


def _on_sigterm(signum, frame):
    _cleanup_all(grace=2.0)
    previous = _PREVIOUS_SIGTERM
    _restore_sigterm(force=True)
    if callable(previous):
        previous(signum, frame)
    else:                       # die of SIGTERM, as without the handler
        os.kill(os.getpid(), signal.SIGTERM)


def _install_sigterm() -> None:
    global _PREVIOUS_SIGTERM
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current is _on_sigterm:
        return
    if current in (signal.SIG_DFL, None):
        _PREVIOUS_SIGTERM = current
        signal.signal(signal.SIGTERM, _on_sigterm)


def _restore_sigterm(force: bool = False) -> None:
    if (_STATES and not force) or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, _PREVIOUS_SIGTERM or signal.SIG_DFL)


atexit.register(_cleanup_all)


def sweep_stale(tmp: Path | None = None) -> list[Path]:
    """Remove temporary cluster folders whose owning Python process is gone (it was SIGKILLed),
    ending any JVM still running from them (its command line names the folder); the folders
    removed."""
    tmp = Path(tmp or tempfile.gettempdir())
    removed = []
    for d in tmp.glob(TMP_PREFIX + "*"):
        try:
            owner = int(d.name[len(TMP_PREFIX):].split("-")[0])
        except ValueError:
            continue
        if owner == os.getpid() or _alive(owner):
            continue
        for pidfile in d.glob("broker-*/pid"):
            try:
                pid = int(pidfile.read_text().strip())
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except (OSError, ValueError):
                continue
            if str(d) in cmdline:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


# ---------------------------------------------------------------------------------------------
# A few Kafka requests on a broker's real port (non-flexible versions every supported release
# serves: Kafka 4.0 removed Metadata v0-v3, CreateTopics v0-v1, FindCoordinator v0 - KIP-896)

METADATA, FIND_COORDINATOR, CREATE_TOPICS, API_VERSIONS = 3, 10, 19, 18
ERRORS = {0: "NONE", 3: "UNKNOWN_TOPIC_OR_PARTITION", 5: "LEADER_NOT_AVAILABLE",
          7: "REQUEST_TIMED_OUT", 14: "COORDINATOR_LOAD_IN_PROGRESS",
          15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR", 36: "TOPIC_ALREADY_EXISTS",
          37: "INVALID_PARTITIONS", 38: "INVALID_REPLICATION_FACTOR", 41: "NOT_CONTROLLER"}


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def array(self, item):
        n = self.take(">i")
        return [item() for _ in range(max(n, 0))]


def kafka_request(port: int, api_key: int, version: int, body: bytes,
                  timeout: float = 5.0) -> _Reader:
    """One request (header v1) to 127.0.0.1:``port``; a reader on the response body."""
    correlation = int.from_bytes(os.urandom(3), "big")
    message = struct.pack(">hhi", api_key, version, correlation) + _string("kafka-mc-cluster") + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(message)) + message)
        size = struct.unpack(">i", _recv(s, 4))[0]
        data = _recv(s, size)
    r = _Reader(data)
    if r.take(">i") != correlation:
        raise OSError("a response with another correlation id")
    return r


def _recv(s: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = s.recv(n)
        if not chunk:
            raise OSError("connection closed by the broker")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def metadata(port: int, topics: list[str] | None = None, auto_create: bool = False,
             timeout: float = 5.0) -> dict:
    """Metadata v4: ``{"brokers": {id: (host, port)}, "controller": id, "topics": {name: {"error",
    "partitions": {index: {"leader", "replicas", "isr", "error"}}}}}``; topics None = all."""
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
    r = kafka_request(port, METADATA, 4, body + struct.pack(">b", 1 if auto_create else 0), timeout)
    r.take(">i")                                                   # throttle_time_ms
    brokers = {}
    for node, host, bport, _rack in r.array(lambda: (r.take(">i"), r.string(), r.take(">i"),
                                                      r.string())):
        brokers[node] = (host, bport)
    r.string()                                                     # cluster_id
    controller = r.take(">i")

    def partition():
        error, index, leader = r.take(">h"), r.take(">i"), r.take(">i")
        replicas = r.array(lambda: r.take(">i"))
        isr = r.array(lambda: r.take(">i"))
        return index, {"error": error, "leader": leader, "replicas": replicas, "isr": isr}

    def topic():
        error, name, _internal = r.take(">h"), r.string(), r.take(">b")
        return name, {"error": error, "partitions": dict(r.array(partition))}

    return {"brokers": brokers, "controller": controller, "topics": dict(r.array(topic))}


def find_coordinator(port: int, key: str, key_type: int = 1, timeout: float = 5.0) -> tuple[int, int]:
    """FindCoordinator v1 (key_type 1: a transactional.id): (error code, node id)."""
    r = kafka_request(port, FIND_COORDINATOR, 1, _string(key) + struct.pack(">b", key_type), timeout)
    r.take(">i")
    error = r.take(">h")
    r.string()
    return error, r.take(">i")


def create_topics(port: int, topics: dict[str, tuple[int, int]], timeout_ms: int = 30000,
                  configs: dict[str, str] | None = None) -> dict[str, tuple[int, str | None]]:
    """CreateTopics v2 of ``{name: (partitions, replication factor)}``: ``{name: (error, message)}``."""
    cfg = configs or {}
    body = struct.pack(">i", len(topics))
    for name, (partitions, rf) in topics.items():
        body += _string(name) + struct.pack(">ihi", partitions, rf, 0)
        body += struct.pack(">i", len(cfg)) + b"".join(_string(k) + _string(v) for k, v in cfg.items())
    body += struct.pack(">ib", timeout_ms, 0)
    r = kafka_request(port, CREATE_TOPICS, 2, body, timeout=timeout_ms / 1000 + 5)
    r.take(">i")
    return dict(r.array(lambda: (r.string(), (r.take(">h"), r.string()))))


# ---------------------------------------------------------------------------------------------

class Node:
    """One KRaft combined-mode node: its ports, folder and JVM."""

    def __init__(self, node_id: int, folder: Path, ports: tuple[int, int, int]):
        self.id = node_id
        self.folder = folder
        self.client_port, self.internal_port, self.controller_port = ports
        self.advertised_client = self.client_port
        self.advertised_internal = self.internal_port
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.stopping = False       # being stopped by the harness (its exit is no failure)

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def properties(self) -> Path:
        return self.folder / "server.properties"

    @property
    def server_log(self) -> Path:
        return self.folder / "server.log"

    @property
    def stdout_log(self) -> Path:
        return self.folder / "stdout.log"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None


def _tail(path: Path, n: int = 20) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if line.strip()][-n:]


class Cluster:
    """One or three KRaft combined-mode brokers of ``release`` on 127.0.0.1, a context manager.

    ``stop()`` (and leaving the ``with``, whatever happens in it) ends every JVM, and removes the
    folder unless ``workdir`` was given (then the logs and data stay there for the caller)."""

    def __init__(self, release: Release | str, brokers: int = 1, proxy=None,
                 settings: dict[str, str] | None = None, workdir: Path | str | None = None, *,
                 base_port: int | None = None, start_timeout: float = START_TIMEOUT_S,
                 java: str | None = None):
        try:
            self.release = releases.usable(release)   # fetched, or a --kafka-home
        except releases.ReleaseError as e:
            raise ClusterError(str(e)) from None
        if not (isinstance(brokers, int) and 1 <= brokers <= 5):
            raise ClusterError(f"a cluster has 1 to 5 brokers (1 and 3 are tested), not {brokers!r}")
        self.java = java or shutil.which("java")
        if self.java is None:
            raise ClusterError("no `java` on PATH: real Kafka needs a JDK 17+")
        self.brokers = brokers
        self.proxy = proxy
        self.start_timeout = start_timeout
        self.settings = {**default_settings(brokers, self.release), **(settings or {})}
        self.logging = logging_binding(self.release)
        self.cluster_id = _cluster_id()
        if base_port is not None:
            ports = list(range(base_port, base_port + 3 * brokers))
            if ports[0] < 1024 or ports[-1] > 65535:
                raise ClusterError(f"ports {ports[0]}..{ports[-1]} are not all in 1024..65535")
            busy = [p for p in ports if not _port_free(p)]
            if busy:
                raise ClusterError(f"port {busy[0]} on 127.0.0.1 is busy (the cluster needs "
                                   f"{ports[0]}..{ports[-1]})")
        else:
            ports = _free_ports(3 * brokers)
        sweep_stale()
        if workdir is None:
            folder = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
            self._state = _State(folder, remove_dir=True)
        else:
            folder = Path(workdir)
            folder.mkdir(parents=True, exist_ok=True)
            self._state = _State(folder, remove_dir=False)
        self.workdir = folder
        with _STATES_LOCK:
            _STATES.add(self._state)
        self._finalizer = weakref.finalize(self, self._state.cleanup)
        self.nodes: dict[int, Node] = {
            i: Node(i, folder / f"broker-{i}", tuple(ports[3 * (i - 1): 3 * i]))
            for i in range(1, brokers + 1)}
        self._started = False
        self.start_seconds: float | None = None

    # --- the interface -------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``bootstrap.servers`` for clients: every node's advertised CLIENT address (the proxy's
        when proxied)."""
        return ",".join(f"127.0.0.1:{n.advertised_client}" for n in self.nodes.values())

    def __enter__(self) -> "Cluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Format every node's storage, start every JVM, wait until each broker is registered and
        unfenced; ``ClusterError`` (every JVM ended) if not within ``start_timeout``."""
        if self._started:
            return
        self._started = True
        t0 = time.monotonic()
        _install_sigterm()
        try:
            for node in self.nodes.values():
                node.folder.mkdir(parents=True, exist_ok=True)
                node.data.mkdir(exist_ok=True)
                if self.proxy is not None:
                    node.advertised_client = self.proxy.route(
                        f"broker-{node.id}/CLIENT", ("127.0.0.1", node.client_port))
                    node.advertised_internal = self.proxy.route(
                        f"broker-{node.id}/INTERNAL", ("127.0.0.1", node.internal_port))
                self._write_config(node)
            self._format_all()
            for node in self.nodes.values():
                self._launch(node)
            deadline = time.monotonic() + self.start_timeout
            for node in self.nodes.values():
                self._wait_ready(node, deadline, expect=set(self.nodes))
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """End every JVM (SIGTERM, SIGKILL after ``grace`` s), free the ports, remove the
        temporary folder. Safe to call more than once. The brokers found dead first (their
        JVM gone though the harness did not stop it) are kept in ``died``."""
        self.died = {**self.dead_nodes(), **getattr(self, "died", {})}
        self._state.cleanup(grace)
        for node in self.nodes.values():
            node.proc = None

    def kill(self, node: int) -> None:
        """SIGKILL one broker's JVM (a crash: no controlled shutdown)."""
        self._end(self._node(node), hard=True)

    def stop_node(self, node: int, timeout: float = CLEAN_SHUTDOWN_S) -> None:
        """SIGTERM one broker (Kafka's controlled shutdown), SIGKILL after ``timeout`` s."""
        self._end(self._node(node), hard=False, timeout=timeout)

    def start_node(self, node: int, wait: bool = True) -> None:
        """Start a stopped broker again on its ports and storage; wait until it is registered and
        unfenced (it lists itself in its Metadata)."""
        n = self._node(node)
        if n.pid is not None:
            return
        self._launch(n)
        if wait:
            self._wait_ready(n, time.monotonic() + self.start_timeout, expect={n.id})

    def restart(self, node: int, hard: bool = False) -> None:
        """Stop one broker - SIGTERM, a clean shutdown (``hard=False``), or SIGKILL - and start it
        again on the same ports and storage, waiting until it is ready."""
        n = self._node(node)
        self._end(n, hard=hard)
        self.start_node(n.id)

    def alive(self, node: int) -> bool:
        return self._node(node).pid is not None

    def dead_nodes(self) -> dict[int, int]:
        """node -> exit code of every broker whose JVM exited though the harness did not stop
        it (killed from outside, out of memory, a fatal error of its own)."""
        if self._state.closed:
            return {}
        return {n.id: n.proc.returncode for n in self.nodes.values()
                if n.proc is not None and not n.stopping and n.proc.poll() is not None}

    def pid(self, node: int) -> int | None:
        return self._node(node).pid

    def pids(self) -> dict[int, int]:
        """The live JVMs' process ids by node."""
        return {i: n.pid for i, n in self.nodes.items() if n.pid is not None}

    def ports(self, node: int) -> dict[str, int]:
        """A node's real listener ports (and the advertised ones)."""
        n = self._node(node)
        return {"CLIENT": n.client_port, "INTERNAL": n.internal_port,
                "CONTROLLER": n.controller_port, "advertised CLIENT": n.advertised_client,
                "advertised INTERNAL": n.advertised_internal}

    def all_ports(self) -> list[int]:
        return [p for n in self.nodes.values()
                for p in (n.client_port, n.internal_port, n.controller_port)]

    def data_dir(self, node: int) -> Path:
        """A node's ``log.dirs``: one folder ``<topic>-<partition>`` per partition replica."""
        return self._node(node).data

    def log_files(self) -> list[Path]:
        """Every node's log files (``server.log`` from log4j, ``stdout.log`` the JVM's output)."""
        out = []
        for n in self.nodes.values():
            out += [p for p in (n.server_log, n.stdout_log) if p.is_file()]
        return out

    def metadata(self, topics: list[str] | None = None, auto_create: bool = False,
                 node: int | None = None) -> dict:
        """Metadata v4 from ``node`` (default: the first live one), on its real CLIENT port."""
        last: Exception | None = None
        for n in ([self._node(node)] if node is not None else self.nodes.values()):
            if n.pid is None:
                continue
            try:
                return metadata(n.client_port, topics, auto_create)
            except OSError as e:
                last = e
        raise ClusterError(f"no broker of the cluster answers Metadata ({last or 'none is running'})")

    def leader(self, topic: str, partition: int, timeout: float = 30.0) -> int:
        """The node leading ``topic``-``partition``, waited for."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                p = self.metadata([topic])["topics"].get(topic, {}).get("partitions", {}).get(partition)
                if p and p["leader"] >= 0:
                    return p["leader"]
            except ClusterError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"{topic}-{partition} has no leader after {timeout:.0f} s")
            time.sleep(0.2)

    def coordinator_node(self, transactional_id: str = "kafka-mc", timeout: float = 30.0) -> int:
        """The transaction coordinator's node: the leader of ``__transaction_state-0`` (one
        partition, so every transactional.id's); asked with FindCoordinator (which creates the
        topic when no producer has yet) until Metadata names the leader."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                topic = self.metadata(["__transaction_state"])["topics"].get("__transaction_state", {})
                p = topic.get("partitions", {}).get(0)
                if p and p["leader"] >= 0:
                    return p["leader"]
                live = [n for n in self.nodes.values() if n.pid is not None]
                if live:
                    find_coordinator(live[0].client_port, transactional_id)
            except (OSError, ClusterError):
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"no transaction coordinator after {timeout:.0f} s")
            time.sleep(0.2)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, timeout: float = 30.0) -> None:
        """CreateTopics on the cluster, then wait until every partition has a leader."""
        rf = self.brokers if replication_factor is None else replication_factor
        deadline = time.monotonic() + timeout
        while True:
            live = [n for n in self.nodes.values() if n.pid is not None]
            if not live:
                raise ClusterError("no broker is running")
            try:
                error, message = create_topics(live[0].client_port, {name: (partitions, rf)},
                                               configs=configs)[name]
            except OSError:
                error, message = -1, "no answer"
            if error in (0, 36):
                break
            if error not in (-1, 7, 41) or time.monotonic() > deadline:
                raise ClusterError(f"CreateTopics {name}: {ERRORS.get(error, error)} {message or ''}")
            time.sleep(0.2)
        for p in range(partitions):     # led, and the leader's log created
            leader = self.leader(name, p, max(1.0, deadline - time.monotonic()))
            while not (self.data_dir(leader) / f"{name}-{p}").is_dir():
                if time.monotonic() > deadline:
                    raise ClusterError(f"broker {leader} leads {name}-{p} but has no log of it "
                                       f"after {timeout:.0f} s")
                time.sleep(0.1)

    def partition_log(self, topic: str, partition: int, node: int | None = None) -> list[dict]:
        """The partition's batches and markers read with Kafka's DumpLogSegments
        (``kafka_mc.realkafka.logdump``)."""
        return partition_log(self, topic, partition, node=node)

    # --- inside ------------------------------------------------------------------------------

    def _node(self, node: int) -> Node:
        try:
            return self.nodes[node]
        except KeyError:
            raise ClusterError(f"no broker {node!r} (the nodes are {sorted(self.nodes)})") from None

    def _write_config(self, node: Node) -> None:
        voters = ",".join(f"{n.id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.id),
            "controller.quorum.voters": voters,
            "listeners": (f"CLIENT://127.0.0.1:{node.client_port},"
                          f"INTERNAL://127.0.0.1:{node.internal_port},"
                          f"CONTROLLER://127.0.0.1:{node.controller_port}"),
            "advertised.listeners": (f"CLIENT://127.0.0.1:{node.advertised_client},"
                                     f"INTERNAL://127.0.0.1:{node.advertised_internal}"),
            "listener.security.protocol.map":
                "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "INTERNAL",
            "log.dirs": str(node.data),
            **self.settings,
        }
        node.properties.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (node.folder / "log4j.properties").write_text(_log4j_properties(node.server_log))
        (node.folder / "log4j2.properties").write_text(_log4j2_properties(node.server_log))

    def _java_command(self, node: Node, main: str, *args: str) -> list[str]:
        return [self.java, *JVM_OPTIONS,
                f"-Dlog4j.configuration=file:{node.folder / 'log4j.properties'}",
                f"-Dlog4j2.configurationFile={node.folder / 'log4j2.properties'}",
                f"-Dkafka.logs.dir={node.folder}",
                "-cp", broker_classpath(self.release), main, *args]

    def _format_all(self) -> None:
        """``kafka.tools.StorageTool format`` on every node, in parallel."""
        extra: list[str] = []
        if _major(self.release.version) >= 4:
            extra = ["--feature", f"transaction.version={self.release.transaction_version}"]
        procs = []
        for node in self.nodes.values():
            out = open(node.folder / "format.log", "wb")
            cmd = self._java_command(node, "kafka.tools.StorageTool", "format", "-t",
                                     self.cluster_id, "-c", str(node.properties), *extra)
            cmd = [c for c in cmd if not c.startswith("-Dlog4j")]   # the tool's console logging
            try:
                procs.append((node, _LAUNCHER.popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                                    stdin=subprocess.DEVNULL,
                                                    start_new_session=True), out))
            except OSError as e:
                out.close()
                raise ClusterError(f"cannot run {self.java}: {e}") from None
        for node, proc, out in procs:
            with self._state.lock:
                self._state.procs[-node.id] = proc
                if self._state.closed:
                    _end_group(proc, 0)
        try:
            for node, proc, out in procs:
                try:
                    proc.wait(timeout=self.start_timeout)
                except subprocess.TimeoutExpired:
                    raise ClusterError(f"formatting broker {node.id}'s storage took over "
                                       f"{self.start_timeout:.0f} s") from None
                if proc.returncode != 0:
                    lines = [ln for ln in _tail(node.folder / "format.log", 40)
                             if not ln.startswith("SLF4J")]
                    raise ClusterError(
                        f"kafka.tools.StorageTool format failed for broker {node.id} of Kafka "
                        f"{self.release.version}: {lines[-1] if lines else 'no output'}",
                        "\n".join(lines))
        finally:
            for node, proc, out in procs:
                out.close()
                with self._state.lock:
                    self._state.procs.pop(-node.id, None)

    def _launch(self, node: Node) -> None:
        if self._state.closed:
            raise ClusterError("the cluster is stopped: no broker starts again")
        busy = [p for p in (node.client_port, node.internal_port, node.controller_port)
                if not _port_free(p)]
        if busy:
            raise ClusterError(f"port {busy[0]} on 127.0.0.1 is busy: broker {node.id} cannot "
                               f"listen on it")
        out = open(node.stdout_log, "ab")
        cmd = self._java_command(node, "kafka.Kafka", str(node.properties))
        try:
            with self._state.lock:
                if self._state.closed:
                    raise ClusterError("the cluster is stopped: no broker starts again")
                proc = _LAUNCHER.popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True,
                                       cwd=node.folder)
                self._state.procs[node.id] = proc
        except OSError as e:
            raise ClusterError(f"cannot run {self.java}: {e}") from None
        finally:
            out.close()
        node.proc = proc
        node.started_at = time.monotonic()
        (node.folder / "pid").write_text(f"{proc.pid}\n")

    def _end(self, node: Node, hard: bool, timeout: float = CLEAN_SHUTDOWN_S) -> None:
        proc = node.proc
        if proc is None:
            return
        node.stopping = True
        try:
            _end_group(proc, 0 if hard else timeout)
            with self._state.lock:
                if self._state.procs.get(node.id) is proc:
                    del self._state.procs[node.id]
            node.proc = None
        finally:
            node.stopping = False

    def _wait_ready(self, node: Node, deadline: float, expect: set[int]) -> None:
        """Until ``node`` answers Metadata listing every node of ``expect`` (registered and
        unfenced); a ClusterError with its log's tail when it exits or the time is up."""
        while True:
            proc = node.proc
            if proc is None or proc.poll() is not None:
                code = None if proc is None else proc.returncode
                raise self._start_error(node, f"exited with code {code} while starting")
            try:
                brokers = metadata(node.client_port, [], timeout=2.0)["brokers"]
                if expect <= set(brokers):
                    return
            except (OSError, struct.error):
                pass
            if time.monotonic() > deadline:
                raise self._start_error(
                    node, f"was not ready after {self.start_timeout:.0f} s")
            time.sleep(0.25)

    def _start_error(self, node: Node, what: str) -> ClusterError:
        lines = _tail(node.stdout_log, 30) + _tail(node.server_log, 30)
        lines = [ln for ln in lines if not ln.startswith("SLF4J")]
        important = [ln for ln in lines if " ERROR " in ln or "Exception" in ln or " FATAL " in ln]
        shown = (important or lines or ["no output"])[-1]
        if "Address already in use" in "\n".join(lines):
            shown = "a port is busy (Address already in use): " + shown
        if self.logging is None and not lines:
            shown = ("no log: the release's classpath has no SLF4J binding "
                     "(slf4j-reload4j or log4j-slf4j-impl)")
        return ClusterError(
            f"Kafka {self.release.version} broker {node.id} {what}: {shown[:200]} "
            f"(log: {node.server_log if node.server_log.exists() else node.stdout_log})",
            "\n".join(lines))
