"""A leader's answer delivered after its broker died (issue 59, KAFKA-20734's journey): the proxy
holds a Produce response (``reproduce``'s ``gate_produce_responses``), the broker process writes
it and dies (its connection closes), and ``Holds.produce_response`` still delivers it to the
client, whose connection the proxy kept open for it and closes once it is delivered. No JVM: a
stand-in broker on a plain socket answers one Produce (Kafka's schemas, written with kio) and
closes, as a killed broker's kernel closes its sockets after the bytes written before."""
from __future__ import annotations

import datetime
import io
import socket
import struct
import threading

from kafka_mc.realkafka import wire
from kafka_mc.realkafka.holds import Holds, Where
from kafka_mc.realkafka.proxy import Proxy


def _produce_request(corr: int, client_id: str) -> bytes:
    from kio.index import load_request_schema
    from kio.serial import entity_writer
    schema = load_request_schema(0, 9)
    mod = __import__(schema.__module__, fromlist=["TopicProduceData"])
    body = schema(transactional_id="tx", acks=-1, timeout=datetime.timedelta(seconds=10),
                  topic_data=(mod.TopicProduceData(name="t", partition_data=(
                      mod.PartitionProduceData(index=0, records=None),)),))
    header = schema.__header_schema__(request_api_key=0, request_api_version=9,
                                      correlation_id=corr, client_id=client_id)
    buf = io.BytesIO()
    entity_writer(type(header))(buf, header)
    entity_writer(schema)(buf, body)
    return wire.frame(buf.getvalue())


def _produce_response(corr: int) -> bytes:
    from kio.index import load_response_schema
    from kio.schema.errors import ErrorCode
    from kio.serial import entity_writer
    schema = load_response_schema(0, 9)
    mod = __import__(schema.__module__, fromlist=["TopicProduceResponse"])
    body = schema(responses=(mod.TopicProduceResponse(name="t", partition_responses=(
        mod.PartitionProduceResponse(index=0, error_code=ErrorCode(0), base_offset=0,
                                     log_append_time=None, log_start_offset=0,
                                     record_errors=(), error_message=None),)),),
                  throttle_time=datetime.timedelta(0))
    buf = io.BytesIO()
    buf.write(struct.pack(">i", corr))
    buf.write(b"\x00")                                  # v9: a flexible response header
    entity_writer(schema)(buf, body)
    return wire.frame(buf.getvalue())


def _exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _broker_that_answers_once_and_dies(listener: socket.socket) -> None:
    conn, _ = listener.accept()
    with conn:
        (size,) = struct.unpack(">i", _exactly(conn, 4))
        payload = _exactly(conn, size)
        conn.sendall(_produce_response(struct.unpack_from(">i", payload, 4)[0]))
    # the process is gone: the connection closed after what it wrote


def test_a_held_produce_answer_reaches_the_client_after_its_broker_died():
    with Proxy() as proxy, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(10)
        port = proxy.route("broker-1/CLIENT", listener.getsockname())
        holds = Holds(proxy, "t", lambda p: f"t0.i{p}", Where())
        gates = holds.gate(False, gate_produce_responses=True)
        broker = threading.Thread(target=_broker_that_answers_once_and_dies, args=(listener,))
        broker.start()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(_produce_request(7, "t0.i0"))
            broker.join(10)
            closed = proxy.wait_for(lambda e: e["action"] == "closed" and e["by"] == "broker", 10)
            held = [h.event for h in proxy.held()]
            assert [(e["api"], e["direction"], e["action"]) for e in held] == [
                ("Produce", "response", "held")]
            assert held[0]["seq"] < closed["seq"]        # written before the broker died
            client.settimeout(0.3)                        # nothing reaches the client meanwhile
            try:
                assert client.recv(1) == b"", "the held answer leaked"
                raise AssertionError("the client's connection closed with the answer held")
            except TimeoutError:
                pass
            done = holds.produce_response({"producer": 0, "partition": 0, "error": "NONE"})
            assert done == {"released": held[0]["seq"],
                            "broker_gone": "its broker's connection closed before: delivered "
                                           "all the same"}
            client.settimeout(10)
            (size,) = struct.unpack(">i", _exactly(client, 4))
            assert wire.correlation_id_of(_exactly(client, size)) == 7
            assert client.recv(1) == b""                  # then the proxy closes it
        # a second partition's receive of the same answer finds it delivered
        assert holds.produce_answers == [{"producer": 0, "seq": held[0]["seq"], "left": set()}]
        holds.lift(gates)
        assert proxy.held() == []
