"""The real Java client driven from Python (realkafka/client.py, realkafka/driver/KafkaMcDriver.java)
against a real broker (realkafka/cluster.py) through the recording proxy (realkafka/proxy.py): no
mock anywhere.

One single-node KRaft cluster, its proxy and one driver JVM per release and module; the history
and the proxy's events on one time line (``origin_ns``). Releases: the oldest (3.6.2) and the
newest by default; ``KAFKA_MC_REAL_VERSIONS=all`` (or a comma list) for others.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from kafka_mc.realkafka import releases
from kafka_mc.realkafka.client import ClientError, Driver, DriverError
from kafka_mc.realkafka.cluster import Cluster
from kafka_mc.realkafka.proxy import HOLD, Fault, Proxy

ROOT = Path(__file__).resolve().parents[2]


def _versions() -> list[str]:
    env = os.environ.get("KAFKA_MC_REAL_VERSIONS", "").strip()
    if env == "all":
        return [r.version for r in releases.RELEASES]
    if env:
        return [v.strip() for v in env.split(",") if v.strip()]
    return [releases.RELEASES[0].version, releases.NEWEST]


# Short client timers: a test that waits on one waits seconds, not a minute.
CLIENT = {"request.timeout.ms": "5000", "delivery.timeout.ms": "10000",
          "transaction.timeout.ms": "10000", "max.block.ms": "10000", "retry.backoff.ms": "100"}


@pytest.fixture(scope="module", params=_versions())
def version(request):
    return request.param


@pytest.fixture(scope="module")
def proxy(version):
    with Proxy() as p:
        yield p


@pytest.fixture(scope="module")
def cluster(version, proxy):
    with Cluster(version, proxy=proxy) as c:
        yield c


@pytest.fixture(scope="module")
def driver(cluster, proxy, tmp_path_factory):
    path = tmp_path_factory.mktemp("history") / "history.jsonl"
    with Driver(cluster.release, cluster.bootstrap, history_path=path, settings=CLIENT,
                origin_ns=proxy.origin_ns) as d:
        yield d
    assert not d.alive()


@pytest.fixture(scope="module")
def admin(driver):
    return driver.admin()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(admin, partitions: int = 2) -> str:
    topic = _name("t")
    assert admin.create_topic(topic, partitions) == "created"
    return topic


def _settled(admin, topic: str, partitions, timeout: float = 20.0) -> dict:
    """Wait until every partition's LSO reached its high watermark (the markers are written
    after commitTransaction returns); {partition: (lso, hw)}."""
    deadline = time.monotonic() + timeout
    while True:
        got = {p: (admin.lso(topic, p), admin.high_watermark(topic, p)) for p in partitions}
        if all(lso == hw for lso, hw in got.values()) or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def _before(version: str, other: str) -> bool:
    return tuple(map(int, version.split("."))) < tuple(map(int, other.split(".")))


def _eventually(read, expected, timeout: float = 20.0):
    """``read()`` until it gives ``expected`` (True) or the time is up (what it gave last)."""
    deadline = time.monotonic() + timeout
    while True:
        got = read()
        if got == expected:
            return True
        if time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def _ops(history, process):
    return [(h["type"], h["f"]) for h in history if h["process"] == process]


def test_commit_is_read_and_abort_is_not(driver, admin):
    topic = _topic(admin)
    p = driver.producer(_name("p"), _name("tx"))
    p.init_transactions()
    p.begin_transaction()
    assert p.send(topic, 0, "k", "committed-0") == (0, 0)
    assert p.send(topic, 1, "k", "committed-1") == (1, 0)
    p.commit_transaction()
    p.begin_transaction()
    part, offset = p.send(topic, 0, "k", "aborted-0")
    assert part == 0 and offset >= 1          # after the first transaction's record (and marker)
    p.abort_transaction()
    p.close()
    settled = _settled(admin, topic, [0, 1])
    assert all(lso == hw for lso, hw in settled.values()), settled
    committed = driver.consumer(_name("rc"), None).read_all(topic, [0, 1])
    assert sorted(r["value"] for r in committed) == ["committed-0", "committed-1"]
    uncommitted = driver.consumer(_name("ru"), None, isolation="read_uncommitted").read_all(topic, [0, 1])
    assert sorted(r["value"] for r in uncommitted) == ["aborted-0", "committed-0", "committed-1"]
    r = next(r for r in uncommitted if r["value"] == "aborted-0")
    assert (r["topic"], r["partition"], r["offset"], r["key"]) == (topic, 0, offset, "k")


def test_pipelined_sends(driver, admin):
    """send_async: the producer's thread goes on after each send (the records in flight
    together); each op completes from its callback; commitTransaction flushes them first."""
    topic = _topic(admin, 2)
    p = driver.producer(_name("p"), _name("tx"))
    p.init_transactions()
    p.begin_transaction()
    ops = [p.send_async(topic, i % 2, str(i), f"r{i}") for i in range(10)]
    p.commit_transaction()
    assert all(op.done() for op in ops)      # flushed before the commit returned
    placed = [op.result(1) for op in ops]
    assert [part for part, _ in placed] == [i % 2 for i in range(10)]
    assert [off for part, off in placed if part == 0] == list(range(5))
    mine = [(h["type"], h["f"]) for h in driver.history if h["process"] == p.name]
    sends = [t for t, f in mine if f == "send"]
    assert sends.count("invoke") == sends.count("ok") == 10
    assert mine.index(("invoke", "commit_transaction")) > max(
        i for i, x in enumerate(mine) if x == ("invoke", "send"))
    _settled(admin, topic, [0, 1])
    values = [r["value"] for r in driver.consumer(_name("rc"), None).read_all(topic, [0, 1])]
    assert sorted(values) == sorted(f"r{i}" for i in range(10))


def test_history_is_jepsen_like(driver, admin):
    assert driver.ping() < 5 and driver.kafka_version == driver.release.version
    topic = _topic(admin, 1)
    name = _name("p")
    before = time.monotonic_ns() - driver.origin_ns
    p = driver.producer(name, _name("tx"))
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, 0, "k", "v")
    p.commit_transaction()
    after = time.monotonic_ns() - driver.origin_ns
    mine = [h for h in driver.history if h["process"] == name]
    assert [(h["type"], h["f"]) for h in mine] == [
        ("invoke", "init_transactions"), ("ok", "init_transactions"),
        ("invoke", "begin_transaction"), ("ok", "begin_transaction"),
        ("invoke", "send"), ("ok", "send"),
        ("invoke", "commit_transaction"), ("ok", "commit_transaction")]
    assert mine[4]["value"] == {"topic": topic, "partition": 0, "key": "k", "value": "v"}
    assert mine[5]["value"] == {"topic": topic, "partition": 0, "key": "k", "value": "v", "offset": 0}
    # The JVM's System.nanoTime() is the clock of time.monotonic_ns(): the records' times lie
    # between the caller's own readings, in order.
    times = [h["time"] for h in mine]
    assert before <= times[0] and times == sorted(times) and times[-1] <= after
    # The whole history: indexes in order, times never going back, every record's fields.
    h = driver.history
    assert [x["index"] for x in h] == list(range(len(h)))
    assert all(a["time"] <= b["time"] for a, b in zip(h, h[1:]))
    assert all(set(x) == {"index", "time", "process", "type", "f", "value", "error"} for x in h)
    # The client's own account beside it (the driver's SLF4J binding): the TransactionManager's
    # transitions of this producer, in its log context, on the history's time line.
    log = [r for r in driver.client_log if r["process"] == name]
    transitions = [r["message"].split("] ", 1)[-1] for r in log
                   if "Transition from state" in r["message"]]
    assert transitions[:4] == ["Transition from state UNINITIALIZED to INITIALIZING",
                               "Transition from state INITIALIZING to READY",
                               "Transition from state READY to IN_TRANSACTION",
                               "Transition from state IN_TRANSACTION to COMMITTING_TRANSACTION"]
    assert any("ProducerId set to" in r["message"] for r in log)
    assert all(before <= r["time"] for r in log)
    # ... and the same records in the file, one JSON object a line.
    lines = [json.loads(line) for line in driver.history_path.read_text().splitlines()]
    assert lines == h[:len(lines)] and len(lines) >= len(h) - 2


def test_zombie_commit_is_fenced(driver, admin, cluster, proxy):
    topic = _topic(admin, 1)
    tid = _name("tx")
    zombie = driver.producer(_name("zombie"), tid)
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(topic, 0, "k", "zombie")
    successor = driver.producer(_name("successor"), tid)
    successor.init_transactions()         # bumps the epoch; the zombie's transaction is aborted
    with pytest.raises(ClientError) as fenced:
        zombie.commit_transaction()
    # Observed on every supported release: ProducerFencedException, the coordinator having
    # answered the zombie's EndTxn (its old epoch) PRODUCER_FENCED, as the proxy saw.
    assert fenced.value.cls == "ProducerFencedException", fenced.value
    request = proxy.wait_for(lambda e: e.get("api") == "EndTxn" and e["direction"] == "request"
                             and e.get("client_id") == zombie.name, 5)
    response = proxy.wait_for(lambda e: e.get("api") == "EndTxn" and e["direction"] == "response"
                              and (e["conn"], e["correlation_id"]) == (request["conn"],
                                                                       request["correlation_id"]), 5)
    assert [x["name"] for x in response["errors"]] == ["PRODUCER_FENCED"], response
    # In the history an unknown outcome (info), not a fail: the fencing answered this EndTxn, but
    # an earlier copy of it (a retry's first try, held on the network) could have committed.
    last = [h for h in driver.history if h["process"] == zombie.name][-1]
    assert (last["type"], last["f"], last["error"][0]) == ("info", "commit_transaction", fenced.value.cls)
    successor.begin_transaction()
    successor.send(topic, 0, "k", "successor")
    successor.commit_transaction()
    _settled(admin, topic, [0])
    values = [r["value"] for r in driver.consumer(_name("rc"), None).read_all(topic, [0])]
    assert values == ["successor"]
    print(f"\nKafka {cluster.release.version}: a fenced zombie's commit throws {fenced.value.cls}")


# What a fenced or timed-out producer's calls throw, by the cluster's transaction version (observed
# on every supported release: 3.6.2 and 3.9.2 are TV1, 4.0.2 .. 4.4.0 TV2, the same within each).
AFTER_FENCING = {
    # A zombie fenced mid-transaction: its next send to a partition already in the transaction is
    # rejected by the leader (an old epoch), an abortable error its commit repeats; its abort is
    # fenced. (Its commit straight away, no send between: ProducerFencedException, see above.)
    "send": {1: "InvalidProducerEpochException", 2: "InvalidProducerEpochException"},
    "commit": {1: "InvalidProducerEpochException", 2: "InvalidProducerEpochException"},
    "abort": {1: "ProducerFencedException", 2: "ProducerFencedException"},
    # A send to a partition new to the transaction (here: a zombie fenced between transactions):
    # TV1 adds the partition first (AddPartitionsToTxn, answered PRODUCER_FENCED by the
    # coordinator); TV2 adds it implicitly, so the Produce meets the old epoch at the leader.
    "idle send": {1: "ProducerFencedException", 2: "InvalidProducerEpochException"},
}
# A transaction the coordinator aborted on its timeout (the epoch bumped): the producer's next send
# meets the old epoch (InvalidProducerEpochException, both), its commit repeats it; then TV1 leaves
# the producer fenced for good (its abort: ProducerFencedException), while TV2 (KIP-890 part 2)
# lets it abort and go on with the next transaction.
AFTER_TIMEOUT_ABORT = {1: "ProducerFencedException", 2: None}


def test_fenced_and_timed_out_producers_by_transaction_version(driver, admin, cluster):
    tv = cluster.release.transaction_version
    topic = _topic(admin, 2)

    def outcome(call, *args):
        try:
            call(*args)
            return None
        except ClientError as e:
            return e.cls

    tid = _name("tx")
    zombie = driver.producer(_name("zombie"), tid)
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(topic, 0, "k", "z0")
    driver.producer(_name("successor"), tid).init_transactions()
    got = {"send": outcome(zombie.send, topic, 0, "k", "z1"),
           "commit": outcome(zombie.commit_transaction),
           "abort": outcome(zombie.abort_transaction)}
    tid = _name("tx")
    idle = driver.producer(_name("idle"), tid)
    idle.init_transactions()
    idle.begin_transaction()
    idle.send(topic, 0, "k", "i0")
    idle.commit_transaction()
    driver.producer(_name("successor"), tid).init_transactions()
    idle.begin_transaction()
    got["idle send"] = outcome(idle.send, topic, 0, "k", "i1")
    assert got == {k: v[tv] for k, v in AFTER_FENCING.items()}, got

    tid = _name("tx")
    slow = driver.producer(_name("slow"), tid, transaction_timeout_ms=1500)
    slow.init_transactions()
    slow.begin_transaction()
    slow.send(topic, 0, "k", "slow")
    epoch = admin.describe_transaction(tid)["producer_epoch"]
    assert _eventually(lambda: admin.describe_transaction(tid)["state"], "CompleteAbort") is True
    assert admin.describe_transaction(tid)["producer_epoch"] == epoch + 1
    assert outcome(slow.send, topic, 0, "k", "late") == "InvalidProducerEpochException"
    assert outcome(slow.commit_transaction) == "InvalidProducerEpochException"
    assert outcome(slow.abort_transaction) == AFTER_TIMEOUT_ABORT[tv]
    if tv == 2:
        slow.begin_transaction()
        slow.send(topic, 1, "k", "after")
        slow.commit_transaction()
        _settled(admin, topic, [0, 1])
        values = {r["value"] for r in driver.consumer(_name("rc"), None).read_all(topic, [0, 1])}
        assert values == {"i0", "after"}


def test_admin_sees_the_open_transaction(driver, admin, cluster):
    topic = _topic(admin, 1)
    tid = _name("tx")
    warm = driver.producer(_name("warm"), _name("tx"))     # a committed record first: offset 0, 1
    warm.init_transactions()
    warm.begin_transaction()
    warm.send(topic, 0, "k", "before")
    warm.commit_transaction()
    start = _settled(admin, topic, [0])[0][1]              # the high watermark after the marker
    p = driver.producer(_name("p"), tid)
    p.init_transactions()
    p.begin_transaction()
    assert p.send(topic, 0, "k", "open")[1] == start
    d = admin.describe_transaction(tid)
    assert d["state"] == "Ongoing"
    assert d["topic_partitions"] == [{"topic": topic, "partition": 0}]
    assert d["transaction_timeout_ms"] == 10000
    assert d["coordinator_id"] == admin.find_coordinator(tid) == cluster.coordinator_node()
    producers = admin.describe_producers(topic, 0)
    mine = [s for s in producers if s["producer_id"] == d["producer_id"]]
    assert len(mine) == 1 and mine[0]["current_transaction_start_offset"] == start
    assert mine[0]["producer_epoch"] == d["producer_epoch"] and mine[0]["last_sequence"] == 0
    assert admin.lso(topic, 0) == start                     # held at the open transaction's start
    assert admin.high_watermark(topic, 0) == start + 1
    listed = {t["transactional_id"]: t for t in admin.list_transactions()}
    assert listed[tid]["state"] == "Ongoing" and listed[tid]["producer_id"] == d["producer_id"]
    p.commit_transaction()
    lso, hw = _settled(admin, topic, [0])[0]
    assert lso == hw == start + 2                           # the record and its COMMIT marker
    after = [s for s in admin.describe_producers(topic, 0) if s["producer_id"] == d["producer_id"]]
    assert after[0]["current_transaction_start_offset"] is None
    done = admin.describe_transaction(tid)
    assert done["state"] in ("CompleteCommit", "Empty")
    # KIP-890 part 2: under transaction.version 2 every EndTxn bumps the producer epoch (the
    # coordinator completes the transaction with epoch + 1); under TV1 the epoch stays.
    bump = 1 if cluster.release.transaction_version == 2 else 0
    assert (done["producer_id"], done["producer_epoch"]) == (d["producer_id"], d["producer_epoch"] + bump)
    missing = admin.describe_transactions([_name("nope")])
    assert next(iter(missing.values()))["error"]["class"] == "TransactionalIdNotFoundException"
    with pytest.raises(ClientError, match="TransactionalIdNotFoundException"):
        admin.find_coordinator(_name("nope"))
    assert admin.describe_cluster()["nodes"][0]["id"] == 1
    assert admin.describe_topics([topic])[topic][0]["leader"] == 1
    # Admin.fenceProducers (KIP-618): the open transaction aborted, its producer fenced. Before
    # KAFKA-16570 (fixed in 3.8.0) the Admin reports the coordinator's CONCURRENT_TRANSACTIONS
    # answer (the fence's abort under way) as a failure, though the fencing took place.
    q = driver.producer(_name("q"), tid)
    q.init_transactions()
    q.begin_transaction()
    q.send(topic, 0, "k", "fenced")
    if _before(cluster.release.version, "3.8.0"):
        with pytest.raises(ClientError, match="ConcurrentTransactionsException"):
            admin.fence_producers([tid])
    else:
        admin.fence_producers([tid])
    with pytest.raises(ClientError, match="ProducerFencedException"):
        q.commit_transaction()


def test_offsets_sent_to_the_transaction(driver, admin):
    source, sink = _topic(admin, 1), _topic(admin, 1)
    feed = driver.producer(_name("feed"), None)              # idempotent, not transactional
    for i in range(3):
        feed.send(source, 0, str(i), f"in-{i}")
    group = _name("g")
    reader = driver.consumer(_name("reader"), group)
    records = reader.read_all(source, [0])
    assert [r["value"] for r in records] == ["in-0", "in-1", "in-2"]
    meta = reader.group_metadata()
    assert meta["group_id"] == group
    p = driver.producer(_name("ctp"), _name("tx"))
    p.init_transactions()
    p.begin_transaction()
    for r in records:
        p.send(sink, 0, r["key"], r["value"].replace("in", "out"))
    p.send_offsets_to_transaction({(source, 0): 3}, reader)  # the consumer's groupMetadata()
    p.commit_transaction()
    # The group coordinator makes transactional offsets visible when the COMMIT marker reaches
    # __consumer_offsets, after commitTransaction returned (seen on 3.9.2: {} at first).
    assert _eventually(lambda: admin.list_group_offsets(group), {(source, 0): 3}) is True
    p.begin_transaction()
    p.send_offsets_to_transaction({(source, 0): 1}, group)   # a bare group id
    p.abort_transaction()
    p.begin_transaction()
    p.send_offsets_to_transaction({(source, 0): 2}, meta)    # the metadata as a dict
    p.commit_transaction()
    assert _eventually(lambda: admin.list_group_offsets(group), {(source, 0): 2}) is True
    assert reader.committed(source, [0]) == {(source, 0): 2}
    reader.seek(source, 0, 0)
    assert reader.position(source, 0) == 0
    assert reader.end_offsets(source, [0]) == {(source, 0): 3}


def test_blocked_op_does_not_block_others_and_timeouts_are_info(driver, admin):
    """A producer blocked in send (its partition does not exist: the client waits max.block.ms
    for metadata) leaves the other clients free; its TimeoutException is an unknown outcome
    (info); a caller that stops waiting records info at once and not the later completion."""
    topic = _topic(admin, 1)
    slow = driver.producer(_name("slow"), None, max_block_ms=3000)
    pending = slow.start_send(topic, 7, "k", "nowhere")
    assert pending.invoked.wait(10)
    t0 = time.monotonic()
    other = driver.producer(_name("other"), _name("tx"))
    other.init_transactions()
    other.begin_transaction()
    other.send(topic, 0, "k", "v")
    other.commit_transaction()
    assert not pending.done() and time.monotonic() - t0 < 3.0
    with pytest.raises(ClientError) as e:
        pending.result(15)
    assert e.value.cls == "TimeoutException"
    assert _ops(driver.history, slow.name) == [("invoke", "send"), ("info", "send")]
    # The caller's own timeout: recorded info ("Timeout") now; the client's answer later is not.
    with pytest.raises(ClientError) as e:
        slow.send(topic, 7, "k", "nowhere", timeout=0.3)
    assert e.value.cls == "Timeout"
    last = [h for h in driver.history if h["process"] == slow.name][-1]
    assert (last["type"], last["error"][0]) == ("info", "Timeout")
    # One given up on while still queued behind it: invoked and info at once (it may yet run).
    with pytest.raises(ClientError, match="Timeout"):
        slow.flush(timeout=0.2)
    slow.flush(timeout=15)                  # queued behind both, which then end
    assert _ops(driver.history, slow.name)[2:] == [
        ("invoke", "send"), ("info", "send"), ("invoke", "flush"), ("info", "flush"),
        ("invoke", "flush"), ("ok", "flush")]
    slow.close()


def test_a_held_commit_leaves_the_caller_free(driver, admin, proxy):
    """commitTransaction held by the proxy (its EndTxn request kept): the caller, holding the
    pending operation, releases it; the history and the proxy's events on one time line."""
    topic = _topic(admin, 1)
    tid = _name("tx")
    p = driver.producer(_name("p"), tid)
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, 0, "k", "v")
    fault = proxy.add_fault(Fault(HOLD, "EndTxn", "request",
                                  where=lambda e: (e.get("fields") or {}).get("transactional_id") == tid))
    op = p.start_commit_transaction()
    held = proxy.wait_for(lambda e: (e.get("fault") or {}).get("id") == fault.id, 10)
    time.sleep(0.3)
    assert not op.done()
    assert proxy.release(fault) == 1
    assert op.result(10) is None
    released = proxy.wait_for(lambda e: e.get("held_seq") == held["seq"], 5)
    invoke, ok = [h for h in driver.history if h["process"] == p.name][-2:]
    assert (invoke["type"], ok["type"], ok["f"]) == ("invoke", "ok", "commit_transaction")
    assert invoke["time"] < held["time"] < released["time"] < ok["time"]
    assert held["fields"]["committed"] is True
    # The application gives up on a producer whose commit is held (close(0) from a thread of its
    # own): commitTransaction fails at once, yet the held EndTxn, released, commits. So a failed
    # commit is recorded info (outcome unknown), not fail.
    tid = _name("tx")
    p = driver.producer(_name("p"), tid)
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, 0, "k", "closed-but-committed")
    fault = proxy.add_fault(Fault(HOLD, "EndTxn", "request",
                                  where=lambda e: (e.get("fields") or {}).get("transactional_id") == tid))
    op = p.start_commit_transaction()
    proxy.wait_for(lambda e: (e.get("fault") or {}).get("id") == fault.id, 10)
    p.close(timeout_s=0, immediate=True)
    assert op.exception(10).cls == "KafkaException"       # "The producer closed forcefully"
    commit = [h for h in driver.history if h["process"] == p.name and h["f"] == "commit_transaction"]
    assert [h["type"] for h in commit] == ["invoke", "info"]
    assert proxy.release(fault) == 1
    assert _eventually(lambda: admin.describe_transaction(tid)["state"], "CompleteCommit") is True
    _settled(admin, topic, [0])
    values = [r["value"] for r in driver.consumer(_name("rc"), None).read_all(topic, [0])]
    assert values == ["v", "closed-but-committed"]


def test_errors_are_the_java_exceptions(driver, admin):
    p = driver.producer(_name("p"), _name("tx"))
    with pytest.raises(ClientError) as e:
        p.begin_transaction()               # before initTransactions
    assert e.value.cls == "IllegalStateException"
    p.init_transactions()
    with pytest.raises(ClientError) as e:
        p.commit_transaction()              # no transaction begun
    assert e.value.cls in ("IllegalStateException", "KafkaException")
    p.close()
    with pytest.raises(ClientError) as e:
        p.begin_transaction()               # Kafka: "Cannot perform operation after producer has been closed"
    assert e.value.cls == "IllegalStateException"
    with pytest.raises(ClientError, match="TopicExistsException"):
        topic = _topic(admin, 1)
        admin.create_topic(topic, 1)
    assert admin.create_topic(topic, 1, exist_ok=True) == "exists"
    with pytest.raises(ClientError, match="exists"):
        name = _name("c")
        driver.consumer(name, None)
        driver.consumer(name, None)        # two live clients of one name


def test_the_jvm_never_outlives_its_driver(cluster, tmp_path):
    """Whatever ends the test: an exception inside the with, an op pending when the JVM dies
    (recorded info), a caller that never closes, a Python process killed outright."""
    with pytest.raises(RuntimeError):
        with Driver(cluster.release, cluster.bootstrap) as d:
            pid = d.pid
            raise RuntimeError("a failing test")
    assert not _alive(pid)
    # The JVM lost mid-operation: the pending op fails DriverLost and is recorded info.
    d = Driver(cluster.release, cluster.bootstrap)
    try:
        slow = d.producer("slow", None, max_block_ms=30000)
        op = slow.start_send("no-such-topic-" + uuid.uuid4().hex[:6], 3, "k", "v")
        assert op.invoked.wait(10)
        os.killpg(d.pid, signal.SIGKILL)
        with pytest.raises(ClientError) as e:
            op.result(10)
        assert e.value.cls == "DriverLost"
        assert _ops(d.history, "slow") == [("invoke", "send"), ("info", "send")]
        assert d.history[-1]["error"][0] == "DriverLost"
        with pytest.raises(ClientError, match="DriverLost"):
            slow.flush()
    finally:
        d.close()
    assert not _alive(d.pid)
    # A Python process that never closes its driver, and one killed with SIGKILL.
    for ending in ("sys.exit(0)", "os.kill(os.getpid(), signal.SIGKILL)"):
        script = textwrap.dedent(f"""
            import os, signal, sys
            from kafka_mc.realkafka.client import Driver
            d = Driver({cluster.release.version!r}, {cluster.bootstrap!r})
            print(d.pid, flush=True)
            {ending}
        """)
        run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                             text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        jvm = int(run.stdout.split()[0])
        deadline = time.monotonic() + 10
        while _alive(jvm) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(jvm), (ending, run.stderr[-500:])


def test_bad_setups_are_one_line(tmp_path, monkeypatch):
    with pytest.raises(releases.ReleaseError, match="not a supported release"):
        Driver("0.0.1", "127.0.0.1:1")
    fake = tmp_path / "cache"
    (fake / "3.6.2").mkdir(parents=True)
    (fake / "3.6.2" / "FETCHED").write_text("x\n")
    monkeypatch.setenv("KAFKA_MC_KAFKA_CACHE", str(fake))
    with pytest.raises(DriverError, match=r"not built .*kafka-mc real fetch 3\.6\.2") as e:
        Driver("3.6.2", "127.0.0.1:1")
    assert "\n" not in str(e.value)
    built = fake / "3.6.2" / "driver"
    built.mkdir()
    (built / "KafkaMcDriver.class").write_bytes(b"")
    (built / "SOURCE_SHA256").write_text("0" * 64 + "\n")     # built from other sources
    with pytest.raises(DriverError, match=r"out of date.*kafka-mc real fetch 3\.6\.2"):
        Driver("3.6.2", "127.0.0.1:1")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:       # a zombie not yet reaped by its parent counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
