"""kafka_mc.realkafka.proxy with a REAL Kafka broker (kafka_mc.realkafka.cluster, KRaft, its CLIENT and INTERNAL
listeners advertised through the proxy): requests of a raw socket client written with kio's
writers, and the broker's own inter-broker requests (the coordinator's WriteTxnMarkers, the
leader's KIP-890 verification), decoded in the event log; each fault kind applied and seen in
its effect. The proxy, the broker and its JVM are stopped whatever happens (fixtures)."""
from __future__ import annotations

import datetime
import io
import json
import socket
import struct
import time

import pytest

from kafka_mc.realkafka import releases, wire
from kafka_mc.realkafka.proxy import DROP, DUPLICATE, HOLD, Fault, Proxy

RELEASE = releases.NEWEST

pytestmark = pytest.mark.skipif(not releases.fetched(RELEASE),
                                reason=f"Kafka {RELEASE} not fetched (make kafka)")


# ----------------------------------------------------------------------------- a raw client

class Raw:
    """A socket speaking Kafka's protocol, frames written and read with kio (Kafka's schemas)."""

    def __init__(self, port: int, client_id: str = "raw-client", timeout: float = 15.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.client_id, self.corr, self.sent = client_id, 0, {}

    def close(self):
        self.sock.close()

    def send(self, api_key: int, version: int, **body) -> int:
        from kio.index import load_request_schema
        from kio.serial import entity_writer
        schema = load_request_schema(api_key, version)
        self.corr += 1
        header = schema.__header_schema__(request_api_key=api_key, request_api_version=version,
                                          correlation_id=self.corr, client_id=self.client_id)
        buf = io.BytesIO()
        entity_writer(type(header))(buf, header)
        entity_writer(schema)(buf, schema(**body))
        self.sock.sendall(wire.frame(buf.getvalue()))
        self.sent[self.corr] = (api_key, version)
        return self.corr

    def recv(self):
        """(correlation id, the decoded kio response)."""
        from kio.index import load_response_schema
        from kio.serial import entity_reader
        size = struct.unpack(">i", self._exactly(4))[0]
        payload = self._exactly(size)
        corr = wire.correlation_id_of(payload)
        api_key, version = self.sent.pop(corr)
        offset = 4
        if wire.response_header_version(api_key, version) >= 1:
            offset += 1                                  # no tagged fields from the broker
        entity, _ = entity_reader(load_response_schema(api_key, version))(payload, offset)
        return corr, entity

    def call(self, api_key: int, version: int, **body):
        corr = self.send(api_key, version, **body)
        got, entity = self.recv()
        assert got == corr
        return entity

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out


def _nested(api_key, version, name, request=True):
    from kio.index import load_request_schema, load_response_schema
    schema = (load_request_schema if request else load_response_schema)(api_key, version)
    return getattr(__import__(schema.__module__, fromlist=[name]), name)


def txn_batch(producer_id: int, epoch: int, sequence: int, n: int = 2) -> bytes:
    from kio.records.schema import NewRecordBatch, Record
    from kio.records.writers import write_new_batch
    from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64
    now = TZAwareMicros.parse(datetime.datetime.now(datetime.UTC).replace(microsecond=0))
    records = tuple(Record(attributes=i8(0), timestamp=now, offset=i64(i), key=b"k",
                           value=b"v%d" % i, headers=()) for i in range(n))
    buf = io.BytesIO()
    write_new_batch(buf, NewRecordBatch(producer_id=i64(producer_id), producer_epoch=i16(epoch),
                                        base_sequence=i32(sequence), records=records,
                                        attributes=i16(0x10)))
    return buf.getvalue()


def init_producer_id(raw: Raw, tid: str):
    """InitProducerId v4, retried while the coordinator loads."""
    for _ in range(100):
        r = raw.call(22, 4, transactional_id=tid, transaction_timeout=datetime.timedelta(seconds=30),
                     producer_id=-1, producer_epoch=-1)
        if int(r.error_code) == 0:
            return int(r.producer_id), int(r.producer_epoch)
        time.sleep(0.2)
    raise AssertionError(f"InitProducerId: {r.error_code!r}")


def begin_and_produce(raw: Raw, tid: str, pid: int, epoch: int, topic: str, partition: int,
                      sequence: int = 0):
    """The TV1 client path (what a 3.x client or a 4.x client on TV1 sends): AddPartitionsToTxn
    v3, then Produce v9 with a transactional batch."""
    topic3 = _nested(24, 3, "AddPartitionsToTxnTopic")
    for _ in range(100):
        r = raw.call(24, 3, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                     v3_and_below_producer_epoch=epoch,
                     v3_and_below_topics=(topic3(name=topic, partitions=(partition,)),))
        code = int(r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)
        if code == 0:
            break
        assert wire.error_name(code) == "CONCURRENT_TRANSACTIONS", wire.error_name(code)
        time.sleep(0.1)
    pd = _nested(0, 9, "PartitionProduceData")
    td = _nested(0, 9, "TopicProduceData")
    r = raw.call(0, 9, transactional_id=tid, acks=-1, timeout=datetime.timedelta(seconds=10),
                 topic_data=(td(name=topic, partition_data=(pd(
                     index=partition, records=txn_batch(pid, epoch, sequence)),)),))
    assert int(r.responses[0].partition_responses[0].error_code) == 0


def end_txn(raw: Raw, tid: str, pid: int, epoch: int, commit: bool = True) -> str:
    """EndTxn v3, retried while CONCURRENT_TRANSACTIONS; the final error name."""
    for _ in range(100):
        r = raw.call(26, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                     committed=commit)
        name = wire.error_name(int(r.error_code))
        if name != "CONCURRENT_TRANSACTIONS":
            return name
        time.sleep(0.1)
    return name


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """(proxy, cluster, events file): one broker of the newest release behind the proxy."""
    from kafka_mc.realkafka.cluster import Cluster
    events = tmp_path_factory.mktemp("proxy") / "events.jsonl"
    proxy = Proxy(events)
    try:
        cluster = Cluster(RELEASE, proxy=proxy, settings={"request.timeout.ms": "3000"})
        try:
            cluster.start()
            cluster.create_topic("t", 2)
            cluster.coordinator_node()
            yield proxy, cluster, events
        finally:
            cluster.stop()
    finally:
        proxy.close()


@pytest.fixture
def proxy(kafka):
    """The module's proxy, its faults removed and held frames released after each test."""
    p = kafka[0]
    yield p
    for f in p.faults():
        p.remove_fault(f)
    p.release()


def client_port(proxy) -> int:
    return proxy.port("broker-1/CLIENT")


def since(proxy, seq: int) -> list[dict]:
    return [e for e in proxy.events() if e["seq"] > seq]


def last_seq(proxy) -> int:
    ev = proxy.events()
    return ev[-1]["seq"] if ev else -1


# ----------------------------------------------------------------------------- tests

def test_requests_and_answers_decoded_through_the_proxy(kafka, proxy):
    start = last_seq(proxy)
    raw = Raw(client_port(proxy))
    try:
        versions = raw.call(18, 3, client_software_name="raw", client_software_version="1")
        assert int(versions.error_code) == 0
        md = raw.call(3, 12, topics=None, allow_auto_topic_creation=False,
                      include_topic_authorized_operations=False)
        # the broker advertises the proxy's port, so clients come back through it
        assert [int(b.port) for b in md.brokers] == [client_port(proxy)]
    finally:
        raw.close()
    ev = [e for e in since(proxy, start) if e["direction"] != "connection"
          and e["endpoint"] == "broker-1/CLIENT"]
    assert [(e["api"], e["direction"], e["correlation_id"], e["action"]) for e in ev] == [
        ("ApiVersions", "request", 1, "forwarded"), ("ApiVersions", "response", 1, "forwarded"),
        ("Metadata", "request", 2, "forwarded"), ("Metadata", "response", 2, "forwarded")]
    assert all(e["client_id"] == "raw-client" and e["endpoint"] == "broker-1/CLIENT" for e in ev)
    assert len({e["conn"] for e in ev}) == 1
    number = ev[0]["conn"]
    closed = proxy.wait_for(lambda e: e["seq"] > start and e["conn"] == number
                            and e["action"] == "closed", timeout=5)
    assert closed["by"] == "client"
    assert [e["action"] for e in since(proxy, start) if e["conn"] == number
            and e["direction"] == "connection"] == ["opened", "closed"]
    # the file has every event, one JSON object a line
    in_file = [json.loads(line) for line in kafka[2].read_text().splitlines()]
    in_memory = proxy.events()
    assert in_file == in_memory[:len(in_file)] and len(in_file) >= 6


def test_transaction_decoded_with_markers_and_verification(kafka, proxy):
    start = last_seq(proxy)
    raw = Raw(client_port(proxy), client_id="producer-1")
    try:
        pid, epoch = init_producer_id(raw, "tx-decode")
        begin_and_produce(raw, "tx-decode", pid, epoch, "t", 0)
        assert end_txn(raw, "tx-decode", pid, epoch) == "NONE"
    finally:
        raw.close()
    markers = proxy.wait_for(lambda e: e["seq"] > start and e["api"] == "WriteTxnMarkers"
                             and e["direction"] == "response", timeout=30)
    assert markers["endpoint"] == "broker-1/INTERNAL" and markers["errors"] == []
    ev = since(proxy, start)
    init = [e for e in ev if e["api"] == "InitProducerId" and e["direction"] == "response"][-1]
    assert (init["fields"]["producer_id"], init["fields"]["producer_epoch"]) == (pid, epoch)
    produce = [e for e in ev if e["api"] == "Produce" and e["direction"] == "request"][0]
    b = produce["fields"]["topic_data"][0]["partition_data"][0]["records"][0]
    assert (b["producer_id"], b["producer_epoch"], b["base_sequence"], b["transactional"],
            b["control"]) == (pid, epoch, 0, True, False)
    end = [e for e in ev if e["api"] == "EndTxn" and e["direction"] == "request"][-1]
    assert end["fields"]["committed"] is True and end["fields"]["producer_id"] == pid
    wtm = [e for e in ev if e["api"] == "WriteTxnMarkers" and e["direction"] == "request"][0]
    m = wtm["fields"]["markers"][0]
    assert (m["producer_id"], m["producer_epoch"], m["transaction_result"]) == (pid, epoch, True)
    assert m["topics"] == [{"name": "t", "partition_indexes": [0]}]
    # the leader's KIP-890 verification reaches the coordinator over the INTERNAL listener
    verify = [e for e in ev if e["api"] == "AddPartitionsToTxn" and e["version"] >= 4
              and e["direction"] == "request"]
    assert verify and verify[0]["endpoint"] == "broker-1/INTERNAL"
    assert verify[0]["fields"]["transactions"][0]["verify_only"] is True
    assert not [e for e in ev if e.get("decode_error")], [e for e in ev if e.get("decode_error")]


def test_held_request_holds_the_later_ones_and_is_released(kafka, proxy):
    start = last_seq(proxy)
    fault = proxy.add_fault(Fault(HOLD, "ApiVersions", endpoint="broker-1/CLIENT"))
    raw = Raw(client_port(proxy))
    try:
        raw.send(18, 3, client_software_name="raw", client_software_version="1")
        raw.send(3, 12, topics=None, allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)
        proxy.wait_for(lambda e: e["seq"] > start and e["action"] == "queued", timeout=10)
        assert [h.event["api"] for h in proxy.held()] == ["ApiVersions"]
        raw.sock.settimeout(0.5)
        with pytest.raises(socket.timeout):
            raw.recv()                              # nothing passes while the first is held
        raw.sock.settimeout(10)
        assert proxy.release(fault) == 1
        assert [raw.recv()[0], raw.recv()[0]] == [1, 2]     # answered in order
    finally:
        raw.close()
    acts = [(e["api"], e["action"]) for e in since(proxy, start) if e["direction"] == "request"]
    assert acts == [("ApiVersions", "held"), ("Metadata", "queued"),
                    ("ApiVersions", "released"), ("Metadata", "released")]
    assert fault.applied and proxy.held() == []


def test_hold_with_a_delay_and_a_held_response(kafka, proxy):
    start = last_seq(proxy)
    proxy.add_fault(Fault(HOLD, "ApiVersions", delay=0.3))
    proxy.add_fault(Fault(HOLD, "Metadata", direction="response", delay=0.3))
    raw = Raw(client_port(proxy))
    try:
        t0 = time.monotonic()
        raw.call(18, 3, client_software_name="raw", client_software_version="1")
        raw.call(3, 12, topics=None, allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)
        assert time.monotonic() - t0 >= 0.6
    finally:
        raw.close()
    acts = [(e["api"], e["direction"], e["action"]) for e in since(proxy, start)
            if e["direction"] != "connection"]
    assert ("ApiVersions", "request", "released") in acts
    assert ("Metadata", "response", "held") in acts and ("Metadata", "response", "released") in acts


def test_dropped_request_closes_the_connection(kafka, proxy):
    start = last_seq(proxy)
    fault = proxy.add_fault(Fault(DROP, "Metadata", where=lambda e: e["client_id"] == "dropper"))
    raw = Raw(client_port(proxy), client_id="dropper")
    try:
        with pytest.raises((ConnectionError, OSError)):
            raw.call(3, 12, topics=None, allow_auto_topic_creation=False,
                     include_topic_authorized_operations=False)
    finally:
        raw.close()
    ev = since(proxy, start)
    dropped = [e for e in ev if e["action"] == "dropped"]
    assert len(dropped) == 1 and dropped[0]["fault"] == {"kind": "drop", "id": fault.id}
    assert any(e["direction"] == "connection" and e["action"] == "closed" and e["by"] == "proxy"
               for e in ev)
    assert not [e for e in ev if e["api"] == "Metadata" and e["direction"] == "response"]


def test_dropped_write_txn_markers_response_makes_the_coordinator_resend(kafka, proxy):
    start = last_seq(proxy)
    fault = proxy.add_fault(Fault(DROP, "WriteTxnMarkers", direction="response",
                                  endpoint="broker-*/INTERNAL"))
    raw = Raw(client_port(proxy))
    try:
        pid, epoch = init_producer_id(raw, "tx-drop-markers")
        begin_and_produce(raw, "tx-drop-markers", pid, epoch, "t", 1)
        assert end_txn(raw, "tx-drop-markers", pid, epoch) == "NONE"
        # the marker was written, its answer lost: the coordinator (TransactionMarkerChannelManager)
        # sends it again on a new connection and completes the commit
        ok = proxy.wait_for(lambda e: e["seq"] > start and e["api"] == "WriteTxnMarkers"
                            and e["direction"] == "response" and e["action"] == "forwarded",
                            timeout=60)
        # the next transaction of this producer goes through: the first is complete
        begin_and_produce(raw, "tx-drop-markers", pid, epoch, "t", 1, sequence=2)
        assert end_txn(raw, "tx-drop-markers", pid, epoch, commit=False) == "NONE"
    finally:
        raw.close()
    ev = since(proxy, start)
    requests = [e for e in ev if e["api"] == "WriteTxnMarkers" and e["direction"] == "request"
                and e["seq"] < ok["seq"]]
    assert len(requests) >= 2 and len({e["conn"] for e in requests}) >= 2
    assert all(e["fields"]["markers"][0]["producer_id"] == pid for e in requests)
    dropped = [e for e in ev if e["action"] == "dropped"]
    assert dropped[0]["api"] == "WriteTxnMarkers" and dropped[0]["fault"]["id"] == fault.id


def test_duplicate_end_txn_copy_reaches_the_broker_after_the_retry_left(kafka, proxy):
    """A raw client playing the Java client's timeout: it gives up on its EndTxn, closes the
    connection and retries on a new one; the held copy then reaches the broker, its answer
    is dropped."""
    start = last_seq(proxy)
    fault = proxy.add_fault(Fault(DUPLICATE, "EndTxn",
                                  where=lambda e: e["fields"].get("transactional_id") == "tx-dup"))
    raw = Raw(client_port(proxy))
    try:
        pid, epoch = init_producer_id(raw, "tx-dup")
        begin_and_produce(raw, "tx-dup", pid, epoch, "t", 0)
        raw.send(26, 3, transactional_id="tx-dup", producer_id=pid, producer_epoch=epoch,
                 committed=True)
        held = proxy.wait_for(lambda e: e["seq"] > start and e["action"] == "held", timeout=10)
        assert held["api"] == "EndTxn" and held["fault"]["kind"] == "duplicate"
    finally:
        raw.close()                                # the request timeout: connection closed
    copy = proxy.wait_for(lambda e: e["seq"] > start and e["action"] == "duplicated-copy",
                          timeout=10)
    answer = proxy.wait_for(lambda e: e["seq"] > start and e["api"] == "EndTxn"
                            and e["direction"] == "response", timeout=10)
    assert copy["held_seq"] == held["seq"] and copy["conn"] == held["conn"]
    assert answer["action"] == "dropped" and answer["fault"] == {"kind": "duplicate",
                                                                 "id": fault.id}
    assert answer["correlation_id"] == held["correlation_id"]
    retry = Raw(client_port(proxy))
    try:
        # the retry: the copy committed already (or is committing): the same result succeeds
        assert end_txn(retry, "tx-dup", pid, epoch) == "NONE"
    finally:
        retry.close()
    ev = since(proxy, start)
    ends = [e for e in ev if e["api"] == "EndTxn" and e["direction"] == "request"]
    assert len({e["conn"] for e in ends}) == 2
    closed = [e for e in ev if e["direction"] == "connection" and e["conn"] == held["conn"]
              and e["action"] == "closed"]
    assert [c["by"] for c in closed] == ["client", "proxy"]     # the upstream closed after


def test_close_stops_servers_and_thread(tmp_path):
    p = Proxy(tmp_path / "e.jsonl")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        upstream = s.getsockname()
        port = p.route("x", upstream)
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.settimeout(5)
        a, _ = s.accept()
        a.settimeout(5)
        p.wait_for(lambda e: e["action"] == "opened", timeout=5)
        p.close()
        p.close()
        assert not p._thread.is_alive()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2)
        assert c.recv(10) == b""       # the client side was closed
        assert a.recv(10) == b""       # and the upstream side
        c.close()
        a.close()
    assert [e["action"] for e in p.events()] == ["opened", "closed"]


def test_a_body_that_does_not_decode_is_recorded_and_forwarded_unchanged(kafka, proxy):
    start = last_seq(proxy)
    body = struct.pack(">hhih", 26, 3, 1, 3) + b"bad" + b"\x00" + b"\x05tx"   # EndTxn v3, cut
    raw = Raw(client_port(proxy))
    try:
        raw.sock.sendall(wire.frame(body))
        e = proxy.wait_for(lambda e: e["seq"] > start and e["api"] == "EndTxn", timeout=10)
        assert e["action"] == "forwarded" and e["decode_error"] and e["client_id"] == "bad"
        # the broker got the same bytes, could not parse them either, and closed the connection
        with pytest.raises((ConnectionError, OSError)):
            raw._exactly(4)
    finally:
        raw.close()
    # the proxy goes on
    raw = Raw(client_port(proxy))
    try:
        assert int(raw.call(18, 3, client_software_name="raw",
                            client_software_version="1").error_code) == 0
    finally:
        raw.close()


def test_occurrence_and_count_pick_the_nth_match(kafka, proxy):
    fault = proxy.add_fault(Fault(DROP, "Metadata", endpoint="broker-*/CLIENT", occurrence=2,
                                  where=lambda e: e["client_id"] == "counted"))
    outcomes = []
    for _ in range(3):
        raw = Raw(client_port(proxy), client_id="counted")
        try:
            raw.call(3, 12, topics=None, allow_auto_topic_creation=False,
                     include_topic_authorized_operations=False)
            outcomes.append("answered")
        except (ConnectionError, OSError):
            outcomes.append("lost")
        finally:
            raw.close()
    assert outcomes == ["answered", "lost", "answered"]
    assert fault.matches == 2 and len(fault.applied) == 1 and fault.done   # done: no more counting


def test_fault_for_a_run_plans_network_faults():
    from kafka_mc.realkafka.plan import NetworkFault
    from kafka_mc.realkafka.proxy import fault_for
    f = fault_for(NetworkFault("delay", "EndTxn", 2, hold_ms=1500))
    assert (f.kind, f.api, f.direction, f.occurrence, f.delay) == (HOLD, "EndTxn", "request", 2, 1.5)
    f = fault_for(NetworkFault("duplicate", "WriteTxnMarkers", 1))
    assert (f.kind, f.direction) == (DUPLICATE, "request")
    assert fault_for(NetworkFault("drop-response", "Produce", 3)).direction == "response"
    assert fault_for(NetworkFault("drop-request", "InitProducerId", 1)).kind == DROP
    with pytest.raises(ValueError):
        fault_for(NetworkFault("melt", "EndTxn", 1))


def test_held_response_of_a_client_gone_is_dropped(kafka, proxy):
    start = last_seq(proxy)
    proxy.add_fault(Fault(HOLD, "Metadata", direction="response",
                          where=lambda e: e["client_id"] == "leaver"))
    raw = Raw(client_port(proxy), client_id="leaver")
    try:
        raw.send(3, 12, topics=None, allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)
        held = proxy.wait_for(lambda e: e["seq"] > start and e["action"] == "held", timeout=10)
    finally:
        raw.close()
    gone = proxy.wait_for(lambda e: e["seq"] > start and e.get("held_seq") == held["seq"], 10)
    assert gone["action"] == "dropped" and gone["reason"] == "client closed"
    assert proxy.held() == []


def test_set_upstream_moves_new_connections(tmp_path):
    with Proxy() as p, socket.socket() as one, socket.socket() as two:
        for s in (one, two):
            s.bind(("127.0.0.1", 0))
            s.listen()
            s.settimeout(5)
        port = p.route("x", one.getsockname())
        assert p.route("x", one.getsockname()) == port
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            one.accept()[0].close()
        p.set_upstream("x", two.getsockname())
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            two.accept()[0].close()
        assert p.endpoints() == {"x": (port, two.getsockname())}


def test_faults_refuse_bad_aims():
    with pytest.raises(ValueError):
        Fault("explode")
    with pytest.raises(ValueError):
        Fault(DUPLICATE, "EndTxn", direction="response")
    with pytest.raises(ValueError):
        Fault(HOLD, "NoSuchApi")
    with pytest.raises(ValueError):
        Fault(DROP, occurrence=0)


# ----------------------------------------------------------------------------- the Java client

JAVA_RELEASES = [v for v in ("3.6.2", RELEASE) if releases.fetched(v)]


@pytest.fixture(scope="module", params=JAVA_RELEASES)
def java(request, tmp_path_factory):
    """(release, proxy, cluster, driver): a broker of the release behind the proxy and the
    release's own Java client (kafka_mc.realkafka.client), everything stopped at the end."""
    client = pytest.importorskip("kafka_mc.realkafka.client")
    from kafka_mc.realkafka.cluster import Cluster
    version = request.param
    proxy = Proxy(tmp_path_factory.mktemp(f"java-{version}") / "events.jsonl")
    try:
        cluster = Cluster(version, proxy=proxy)
        try:
            cluster.start()
            cluster.create_topic("t", 2)
            try:
                driver = client.Driver(version, cluster.bootstrap)
            except client.DriverError as e:
                pytest.skip(str(e))
            try:
                yield version, proxy, cluster, driver
            finally:
                driver.close()
        finally:
            cluster.stop()
    finally:
        proxy.close()


def _tv2(version: str) -> bool:
    return releases.BY_VERSION[version].transaction_version >= 2


def test_java_transaction_commit_in_the_event_log(java):
    version, proxy, cluster, driver = java
    start = last_seq(proxy)
    p = driver.producer("commit-1", "tx-java-commit")
    p.init_transactions()
    p.begin_transaction()
    p.send("t", 0, "k", "a")
    p.send("t", 1, "k", "b")
    p.commit_transaction()
    done = proxy.wait_for(lambda e: e["seq"] > start and e["api"] == "WriteTxnMarkers"
                          and e["direction"] == "response", timeout=30)
    c = driver.consumer("reader-1", None)
    got = c.read_all("t", [0, 1])
    assert {r["value"] for r in got} >= {"a", "b"}
    c.close()
    ev = [e for e in since(proxy, start) if e["direction"] != "connection"]
    assert not [e for e in ev if e.get("decode_error")]
    init = [e for e in ev if e["api"] == "InitProducerId" and e["direction"] == "response"
            and not e["errors"]][-1]
    pid, epoch = init["fields"]["producer_id"], init["fields"]["producer_epoch"]
    client_adds = [e for e in ev if e["api"] == "AddPartitionsToTxn"
                   and e["endpoint"].endswith("/CLIENT")]
    leader_adds = [e for e in ev if e["api"] == "AddPartitionsToTxn"
                   and e["endpoint"].endswith("/INTERNAL") and e["direction"] == "request"]
    if _tv2(version):
        # TV2 (KIP-890 part 2): no client AddPartitionsToTxn, the leader adds the partition
        assert not client_adds
        assert leader_adds and not leader_adds[0]["fields"]["transactions"][0]["verify_only"]
    else:
        assert client_adds[0]["version"] <= 3
        assert client_adds[0]["fields"]["v3_and_below_producer_id"] == pid
        assert leader_adds[0]["fields"]["transactions"][0]["verify_only"] is True
    batches = [b for e in ev if e["api"] == "Produce" and e["direction"] == "request"
               for t in e["fields"]["topic_data"] for pd in t["partition_data"]
               for b in pd["records"]]
    assert len(batches) == 2
    # Produce v13+ names topics by id: the proxy writes the name learnt from Metadata beside it
    assert {t["name"] for e in ev if e["api"] == "Produce" and e["direction"] == "request"
            for t in e["fields"]["topic_data"]} == {"t"}
    assert all((b["producer_id"], b["producer_epoch"], b["transactional"]) == (pid, epoch, True)
               for b in batches)
    end = [e for e in ev if e["api"] == "EndTxn" and e["direction"] == "response"][-1]
    marker = [e for e in ev if e["api"] == "WriteTxnMarkers"
              and e["direction"] == "request"][0]["fields"]["markers"][0]
    assert marker["producer_id"] == pid and marker["transaction_result"] is True
    if _tv2(version):           # EndTxn v5 answers with the bumped epoch the markers carry
        assert end["fields"]["producer_epoch"] == epoch + 1 == marker["producer_epoch"]
        assert marker["transaction_version"] == 2
    else:
        assert marker["producer_epoch"] == epoch
    assert done["errors"] == []
    # the read_committed consumer's fetches: isolation level 1, the LSO, the COMMIT markers
    fetches = [e for e in since(proxy, start) if e["api"] == "Fetch"]
    assert any(e["direction"] == "request" and e["fields"]["isolation_level"] == 1
               for e in fetches)
    parts = [p for e in fetches if e["direction"] == "response" and e["fields"]
             for t in e["fields"]["responses"] for p in t["partitions"]]
    assert any(p["last_stable_offset"] >= 1 for p in parts)
    assert any(b.get("control_type") == "COMMIT" and b["producer_id"] == pid
               for p in parts for b in p["records"] or [])
    p.close()


def test_java_end_txn_held_past_request_timeout_is_retried_and_the_copy_arrives(java):
    version, proxy, cluster, driver = java
    start = last_seq(proxy)
    p = driver.producer("dup-1", "tx-java-dup", **{"request.timeout.ms": "2000",
                                                   "delivery.timeout.ms": "10000"})
    p.init_transactions()
    fault = proxy.add_fault(Fault(DUPLICATE, "EndTxn", where=lambda e: e["fields"].get(
        "transactional_id") == "tx-java-dup"))
    try:
        p.begin_transaction()
        p.send("t", 0, "k", "dup")
        t0 = time.monotonic()
        p.commit_transaction()                      # succeeds: its retry went through
        assert time.monotonic() - t0 >= 1.5         # after the client's request timeout
    finally:
        proxy.remove_fault(fault)
    ev = since(proxy, start)
    held = [e for e in ev if e["action"] == "held"]
    assert len(held) == 1 and held[0]["api"] == "EndTxn"
    copy = proxy.wait_for(lambda e: e["seq"] > start and e["action"] == "duplicated-copy", 10)
    lost = proxy.wait_for(lambda e: e["seq"] > start and e["api"] == "EndTxn"
                          and e["direction"] == "response" and e["conn"] == held[0]["conn"], 10)
    assert copy["conn"] == held[0]["conn"] and lost["action"] == "dropped"
    assert lost["fault"]["kind"] == "duplicate"
    ev = since(proxy, start)
    closed = [e for e in ev if e["direction"] == "connection" and e["conn"] == held[0]["conn"]
              and e["action"] == "closed"]
    assert closed[0]["by"] == "client" and closed[0]["seq"] < copy["seq"]
    retries = [e for e in ev if e["api"] == "EndTxn" and e["direction"] == "response"
               and e["conn"] != held[0]["conn"]]
    assert retries and retries[-1]["errors"] == [] and retries[-1]["action"] == "forwarded"
    assert [h for h in driver.history if h["process"] == "dup-1"
            and h["f"] == "commit_transaction"][-1]["type"] == "ok"
    p.close()
