"""kafka_mc.realkafka.cluster and kafka_mc.realkafka.logdump on real Kafka brokers (no mock of Kafka anywhere).

One cluster per version and module (a start costs seconds); the teardown tests start their own.
Transactions are made by Kafka's own Java producer (a few lines of Java run from source with the
release's kafka-clients), and read back with Kafka's own DumpLogSegments.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafka_mc.realkafka import releases
from kafka_mc.realkafka.cluster import Cluster, ClusterError, metadata, sweep_stale
from kafka_mc.realkafka import logdump

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("3.6.2", "4.4.0")
THREE_NODES = "3.6.2"           # the cheapest to start


def _need(version: str) -> None:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    if not releases.fetched(version):
        pytest.skip(f"Kafka {version} is not fetched (make kafka)")


def _need_dump(version: str) -> None:
    try:
        logdump.tool_class(version)
    except ClusterError as e:
        pytest.skip(str(e))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie is gone too (it holds no port, runs nothing; only its parent can reap it), but only
    # once its last thread has exited: after SIGKILL a JVM's leader thread shows Z while its other
    # threads are still being torn down (closing sockets, unmapping the heap), and a listening
    # socket outlives the leader until the last of them ends.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1]
        threads = [int(line.split()[1]) for line in
                   Path(f"/proc/{pid}/status").read_text().splitlines()
                   if line.startswith("Threads:")]
    except (OSError, IndexError, ValueError):
        return True
    return state.startswith("Z") and threads in ([], [0], [1])


def _listening(ports) -> list[int]:
    """The ports something listens on (the kernel's TCP table: state 0A is LISTEN). Not a bind
    test: once the brokers are gone, their ports are ordinary ephemeral ports again, which the
    suite's other connections may take as their local ports (a bind would then fail, though
    nothing of the cluster is left)."""
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":
                listening.add(int(local.rsplit(":", 1)[1], 16))
    return [p for p in ports if p in listening]


def _assert_nothing_left(pids, ports, folder) -> None:
    assert pids and ports
    assert [p for p in pids if not _gone(p)] == []
    assert _listening(ports) == []
    assert not Path(folder).exists()


PRODUCER = r"""
import java.util.Properties;
import org.apache.kafka.clients.producer.*;

public class TxnProduce {
    // args: bootstrap topic transactional.id; one transaction of two records committed, then one
    // of one record aborted (the real client: TransactionManager)
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("transactional.id", a[2]);
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("linger.ms", "0");
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            pr.initTransactions();
            pr.beginTransaction();
            pr.send(new ProducerRecord<>(a[1], 0, "k1", "v1")).get();
            pr.send(new ProducerRecord<>(a[1], 0, null, "v2")).get();
            pr.commitTransaction();
            pr.beginTransaction();
            pr.send(new ProducerRecord<>(a[1], 0, "k3", "v3")).get();
            pr.abortTransaction();
        }
    }
}
"""


@pytest.fixture(scope="module")
def producer_classes(tmp_path_factory):
    """TxnProduce compiled once (javac) against the oldest release's kafka-clients; the API it
    uses is the same in every supported release."""
    if shutil.which("javac") is None:
        pytest.skip("no javac on PATH")
    version = next((v for v in VERSIONS if releases.fetched(v)), None)
    if version is None:
        pytest.skip("no release fetched (make kafka)")
    out = tmp_path_factory.mktemp("txnproduce")
    (out / "TxnProduce.java").write_text(PRODUCER)
    run = subprocess.run(["javac", "-cp", releases.classpath(version), "-d", str(out),
                          str(out / "TxnProduce.java")], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    return out


def _produce(classes: Path, version: str, bootstrap: str, topic: str, tid: str) -> None:
    run = subprocess.run(["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp",
                          f"{releases.classpath(version)}{os.pathsep}{classes}", "TxnProduce",
                          bootstrap, topic, tid], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


# --- bad input: one line, no JVM -----------------------------------------------------------------

def test_unknown_and_unfetched_release_is_one_line(tmp_path, monkeypatch):
    with pytest.raises(ClusterError) as e:
        Cluster("9.9.9")
    assert "not a supported release" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setenv("KAFKA_MC_KAFKA_CACHE", str(tmp_path))
    with pytest.raises(ClusterError) as e:
        Cluster("3.6.2")
    assert "make kafka" in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, ValueError)


def test_no_java_is_one_line(monkeypatch):
    _need("3.6.2")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ClusterError, match="no `java` on PATH") as e:
        Cluster("3.6.2")
    assert "\n" not in str(e.value)


def test_busy_port_is_one_line():
    _need("3.6.2")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        port = s.getsockname()[1]
        with pytest.raises(ClusterError, match=f"port {port} on 127.0.0.1 is busy") as e:
            Cluster("3.6.2", base_port=port)
        assert "\n" not in str(e.value)
    finally:
        s.close()


def test_bad_broker_count():
    _need("3.6.2")
    with pytest.raises(ClusterError, match="1 to 5 brokers"):
        Cluster("3.6.2", brokers=0)


# --- DumpLogSegments' output, as 3.6.2 and 4.4.0 print it (no JVM) ------------------------------

DUMP_36 = """Dumping /d/t1-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1795708304638 size: 81 magic: 2 compresscodec: none crc: 164511023 isvalid: true
| offset: 0 CreateTime: 1795708304619 keySize: 2 valueSize: 2 sequence: 0 headerKeys: [] key: k1 payload: v1
| offset: 1 CreateTime: 1795708304638 keySize: -1 valueSize: 2 sequence: 1 headerKeys: [] payload: v 2
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 81 CreateTime: 1795708304719 size: 78 magic: 2 compresscodec: none crc: 1278854880 isvalid: true
| offset: 2 CreateTime: 1795708304719 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 3
"""
DUMP_44 = """Dumping /d/t1-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: 0 lastSequence: 0 producerId: 7 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 220 CreateTime: 1795708316752 size: 72 magic: 2 compresscodec: none crc: 3924428502 isvalid: true
| offset: 3 CreateTime: 1795708316752 keySize: 2 valueSize: -1 sequence: 0 headerKeys: [] key: k3
baseOffset: 4 lastOffset: 4 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 292 CreateTime: 1795708316759 size: 78 magic: 2 compresscodec: none crc: 749721655 isvalid: true
| offset: 4 CreateTime: 1795708316759 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 0"""


def test_parse_batches_records_and_markers():
    (b0, b1), = logdump.parse(DUMP_36).values()
    assert b0["base_offset"] == 0 and b0["last_offset"] == 1 and b0["count"] == 2
    assert (b0["producer_id"], b0["producer_epoch"], b0["base_sequence"]) == (0, 0, 0)
    assert b0["transactional"] and not b0["control"] and "marker" not in b0
    assert b0["records"] == [{"offset": 0, "sequence": 0, "key": "k1", "value": "v1"},
                             {"offset": 1, "sequence": 1, "value": "v 2"}]
    assert b1["control"] and b1["marker"] == "COMMIT" and b1["coordinator_epoch"] == 3
    assert b1["records"] == [{"offset": 2, "sequence": -1}]
    (d, m), = logdump.parse(DUMP_44).values()
    assert d["records"] == [{"offset": 3, "sequence": 0, "key": "k3", "value": None}]
    assert (m["marker"], m["producer_epoch"], m["producer_id"]) == ("ABORT", 2, 7)


def test_transaction_records_of_every_form():
    v3 = logdump.transaction_record(
        "transaction_metadata::transactionalId=tx1",
        "producerId:0,producerEpoch:0,state=Ongoing,partitions=[t1-0,t1-1],"
        "txnLastUpdateTimestamp=1,txnTimeoutMs=60000")
    key = '{"type":"0","data":{"transactionalId":"tx1"}}'
    value = ('{"version":"1","data":{"producerId":0,"previousProducerId":0,"producerEpoch":0,'
             '"transactionTimeoutMs":60000,"transactionStatus":%s,"transactionPartitions":'
             '[{"topic":"t1","partitionIds":[0,1]}],"clientTransactionVersion":2}}')
    named = logdump.transaction_record(key, value % '"Ongoing"')          # 4.0, 4.4
    numbered = logdump.transaction_record(key, value % "1")               # 4.1 .. 4.3
    for t in (v3, named, numbered):
        assert (t["transactional_id"], t["producer_id"], t["producer_epoch"], t["state"],
                t["partitions"], t["timeout_ms"]) == ("tx1", 0, 0, "Ongoing", ["t1-0", "t1-1"], 60000)
    assert logdump.transaction_record(key, None) == {"transactional_id": "tx1", "state": None}
    assert logdump.transaction_record("transaction_metadata::transactionalId=tx1", "<DELETE>")[
        "state"] is None


# --- one broker per version ----------------------------------------------------------------------

@pytest.fixture(scope="module", params=VERSIONS)
def one(request, tmp_path_factory):
    """One broker of the version, in a given workdir: kept, with its logs, after the stop."""
    _need(request.param)
    workdir = tmp_path_factory.mktemp(f"cluster-{request.param}")
    with Cluster(request.param, workdir=workdir) as cluster:
        yield cluster
        pids = list(cluster.pids().values())
    assert pids and all(_gone(p) for p in pids)
    assert (workdir / "broker-1" / "server.properties").is_file()
    assert (workdir / "broker-1" / "stdout.log").is_file()


def test_ready_broker_answers_and_formats_its_transaction_version(one):
    node = one.nodes[1]
    md = metadata(node.client_port)
    assert md["brokers"] == {1: ("127.0.0.1", node.advertised_client)}
    assert one.bootstrap == f"127.0.0.1:{node.advertised_client}"
    props = node.properties.read_text()
    assert "process.roles=broker,controller" in props
    assert "transaction.state.log.num.partitions=1" in props
    assert "transaction.partition.verification.enable=true" in props
    meta = (node.data / "meta.properties").read_text()
    assert f"cluster.id={one.cluster_id}" in meta
    fmt = (node.folder / "format.log").read_text()
    if releases.BY_VERSION[one.release.version].transaction_version == 2:
        assert "transaction.version" in fmt
    assert one.start_seconds is not None and one.start_seconds < 120


def test_empty_partition_log(one):
    _need_dump(one.release.version)
    one.create_topic("empty", partitions=2)
    assert one.partition_log("empty", 0) == []
    assert logdump.partition_logs(one, [("empty", 0), ("empty", 1)]) == {("empty", 0): [],
                                                                        ("empty", 1): []}


def test_transactions_in_the_log_and_a_restart_keeps_them(one, producer_classes):
    """A committed and an aborted transaction by the real producer: the data batches carry the
    producer id, epoch and sequences; the markers COMMIT then ABORT; TV2 (4.x) bumps the epoch at
    each EndTxn. A clean and a hard restart keep the log and the coordinator."""
    _need_dump(one.release.version)
    tv = one.release.transaction_version
    one.create_topic("txn", partitions=1)
    _produce(producer_classes, one.release.version, one.bootstrap, "txn", "tid-1")
    batches = one.partition_log("txn", 0)
    data = [b for b in batches if not b["control"]]
    markers = [b for b in batches if b["control"]]
    assert [m["marker"] for m in markers] == ["COMMIT", "ABORT"]
    assert all(b["transactional"] for b in batches)
    assert len({b["producer_id"] for b in batches}) == 1 and batches[0]["producer_id"] >= 0
    records = [r for b in data for r in b["records"]]
    assert [(r["offset"], r.get("key"), r["value"]) for r in records] == [
        (0, "k1", "v1"), (1, None, "v2"), (3, "k3", "v3")]
    assert "key" not in records[1]
    assert [r["offset"] for m in markers for r in m["records"]] == [2, 4]
    assert all(m["coordinator_epoch"] >= 0 for m in markers)
    if tv == 2:      # KIP-890 part 2: the marker carries the bumped epoch, the next txn uses it
        assert markers[0]["producer_epoch"] == data[0]["producer_epoch"] + 1
        assert data[-1]["producer_epoch"] == markers[0]["producer_epoch"]
        assert markers[1]["producer_epoch"] == data[-1]["producer_epoch"] + 1
    else:
        assert {b["producer_epoch"] for b in batches} == {0}
    states = [t["state"] for t in logdump.transaction_log(one) if t["transactional_id"] == "tid-1"]
    assert states == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit",
                      "Ongoing", "PrepareAbort", "CompleteAbort"]
    assert one.coordinator_node() == 1

    pid = one.pid(1)
    t = time.monotonic()
    one.restart(1)                          # SIGTERM: Kafka's controlled shutdown
    clean = time.monotonic() - t
    assert _gone(pid) and one.pid(1) != pid
    assert one.partition_log("txn", 0) == batches
    pid = one.pid(1)
    t = time.monotonic()
    one.restart(1, hard=True)               # SIGKILL: log recovery at start
    hard = time.monotonic() - t
    assert _gone(pid)
    assert one.partition_log("txn", 0) == batches
    assert one.coordinator_node() == 1
    print(f"Kafka {one.release.version}: start {one.start_seconds:.1f} s, clean restart "
          f"{clean:.1f} s, hard restart {hard:.1f} s")


# --- three brokers -------------------------------------------------------------------------------

def test_three_brokers_coordinator_failover():
    """Kill the coordinator's node: another node leads __transaction_state-0 (replicated on all
    three, min.isr 2); the killed node starts again on its ports and storage."""
    _need(THREE_NODES)
    with Cluster(THREE_NODES, brokers=3) as c:
        assert set(c.metadata()["brokers"]) == {1, 2, 3}
        assert len(c.bootstrap.split(",")) == 3
        first = c.coordinator_node()
        c.create_topic("r3", partitions=1)
        assert sorted(c.metadata(["r3"])["topics"]["r3"]["partitions"][0]["replicas"]) == [1, 2, 3]
        c.kill(first)
        assert not c.alive(first)
        deadline = time.monotonic() + 60
        while (now := c.coordinator_node()) == first:
            assert time.monotonic() < deadline, "the coordinator did not move"
            time.sleep(0.5)
        assert now in {1, 2, 3} - {first}
        c.start_node(first)
        assert c.alive(first)
        assert set(metadata(c.nodes[first].client_port)["brokers"]) == {1, 2, 3}


# --- through a stand-in proxy: a bare TCP forwarder, not a Kafka mock -----------------------------

class Forwarder:
    """Forwards bytes between a local port and an upstream, nothing else; counts connections per
    endpoint (the interface's ``route``)."""

    def __init__(self):
        self.connections: dict[str, int] = {}
        self._servers: list[socket.socket] = []
        self._closed = False

    def route(self, endpoint: str, upstream: tuple[str, int]) -> int:
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        self._servers.append(srv)
        self.connections[endpoint] = 0
        threading.Thread(target=self._accept, args=(srv, endpoint, upstream), daemon=True).start()
        return srv.getsockname()[1]

    def _accept(self, srv, endpoint, upstream):
        while not self._closed:
            try:
                down, _ = srv.accept()
            except OSError:
                return
            self.connections[endpoint] += 1
            try:
                up = socket.create_connection(upstream)
            except OSError:
                down.close()
                continue
            for a, b in ((down, up), (up, down)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while chunk := a.recv(65536):
                b.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self._closed = True
        for s in self._servers:
            s.close()


def test_proxied_listeners_carry_clients_and_inter_broker_traffic(producer_classes):
    """Advertised CLIENT and INTERNAL go through the proxy: the client's bootstrap is the
    proxy's, and the coordinator's WriteTxnMarkers reach the leader (itself) over INTERNAL
    through it. Through kafka_mc.realkafka.proxy; until it exists, a bare TCP forwarder (this module's)."""
    version = "4.4.0" if releases.fetched("4.4.0") else "3.6.2"
    _need(version)
    try:
        from kafka_mc.realkafka.proxy import Proxy
        kind, fwd = "proxy", Proxy(None)
    except ImportError:
        kind, fwd = "forwarder", Forwarder()
    try:
        with Cluster(version, proxy=fwd) as c:
            node = c.nodes[1]
            assert node.advertised_client != node.client_port
            assert c.bootstrap == f"127.0.0.1:{node.advertised_client}"
            md = metadata(node.client_port)
            assert md["brokers"][1] == ("127.0.0.1", node.advertised_client)
            assert f"INTERNAL://127.0.0.1:{node.advertised_internal}" in node.properties.read_text()
            c.create_topic("p", partitions=1)
            _produce(producer_classes, version, c.bootstrap, "p", "tid-p")
            if kind == "forwarder":
                assert fwd.connections["broker-1/CLIENT"] >= 1
                assert fwd.connections["broker-1/INTERNAL"] >= 1     # markers, verification
            else:
                apis = {(e.get("endpoint"), e.get("api")) for e in fwd.events()}
                assert ("broker-1/CLIENT", "EndTxn") in apis
                assert ("broker-1/INTERNAL", "WriteTxnMarkers") in apis
    finally:
        fwd.close()


# --- teardown certainty --------------------------------------------------------------------------

def test_a_failing_test_inside_the_with_leaves_nothing():
    _need("3.6.2")
    seen = {}
    with pytest.raises(RuntimeError, match="boom"):
        with Cluster("3.6.2") as c:
            seen = {"pids": list(c.pids().values()), "ports": c.all_ports(), "folder": c.workdir}
            assert all(not _gone(p) for p in seen["pids"])
            raise RuntimeError("boom")
    _assert_nothing_left(seen["pids"], seen["ports"], seen["folder"])
    with pytest.raises(ClusterError, match="stopped"):     # a late restart starts nothing
        c.start_node(1)


CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from kafka_mc.realkafka.cluster import Cluster
with Cluster(sys.argv[2]) as c:
    print(json.dumps({"pids": list(c.pids().values()), "ports": c.all_ports(),
                      "folder": str(c.workdir)}), flush=True)
    time.sleep(600)
"""


def _child_cluster(version: str) -> tuple[subprocess.Popen, dict]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT), version],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = child.stdout.readline()
    if not line:
        child.kill()
        pytest.fail(f"the child did not start a cluster: {child.stderr.read()[-2000:]}")
    return child, json.loads(line)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_process_leaves_nothing(sig):
    _need("3.6.2")
    child, seen = _child_cluster("3.6.2")
    try:
        assert all(not _gone(p) for p in seen["pids"])
        child.send_signal(sig)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode != 0
    _assert_nothing_left(seen["pids"], seen["ports"], seen["folder"])


def test_killed_process_leaves_nothing_after_the_sweep():
    """SIGKILL: no handler runs; the kernel kills the JVMs (PR_SET_PDEATHSIG) and the next
    cluster's sweep removes the folder."""
    _need("3.6.2")
    child, seen = _child_cluster("3.6.2")
    child.kill()
    child.wait(timeout=30)
    deadline = time.monotonic() + 30
    # the kernel ends a killed process asynchronously: wait (boundedly) for its threads and sockets
    while (not all(_gone(p) for p in seen["pids"]) or _listening(seen["ports"])) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Path(seen["folder"]) in sweep_stale()
    _assert_nothing_left(seen["pids"], seen["ports"], seen["folder"])
