"""kafka_mc.realkafka.wire on frames built with kio's own writers (Kafka's JSON schemas) and v2 record
batches built with kio's batch writer: headers per API version, bodies of the transactional
APIs, the batch header's producer id / epoch / sequence and transactional and control bits, a
control record's COMMIT/ABORT, error names, and bodies that do not decode."""
from __future__ import annotations

import datetime
import io
import json
import struct

from kio.index import load_request_schema, load_response_schema
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from kafka_mc.realkafka import wire


def _write(entity) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def request(api_key: int, version: int, correlation_id: int, body_fields: dict,
            client_id: str | None = "producer-1") -> bytes:
    """A request payload (header + body, no size prefix) as the Java client writes it."""
    schema = load_request_schema(api_key, version)
    header_cls = schema.__header_schema__
    header = header_cls(request_api_key=api_key, request_api_version=version,
                        correlation_id=correlation_id, client_id=client_id)
    return _write(header) + _write(schema(**body_fields))


def response(api_key: int, version: int, correlation_id: int, body) -> bytes:
    schema = load_response_schema(api_key, version)
    header_cls = schema.__header_schema__
    if api_key == 18:
        from kio.schema.response_header.v0.header import ResponseHeader
        header_cls = ResponseHeader
    return _write(header_cls(correlation_id=correlation_id)) + _write(body)


def nested(api_key: int, version: int, request_: bool, name: str):
    schema = (load_request_schema if request_ else load_response_schema)(api_key, version)
    module = __import__(schema.__module__, fromlist=[name])
    return getattr(module, name)


def batch(producer_id=1000, epoch=3, sequence=7, attributes=0x10, records=None) -> bytes:
    now = TZAwareMicros.parse(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    if records is None:
        records = tuple(Record(attributes=i8(0), timestamp=now, offset=i64(i), key=b"k",
                               value=b"v%d" % i, headers=()) for i in range(2))
    buf = io.BytesIO()
    write_new_batch(buf, NewRecordBatch(producer_id=i64(producer_id), producer_epoch=i16(epoch),
                                        base_sequence=i32(sequence), records=records,
                                        attributes=i16(attributes)))
    return buf.getvalue()


def control_batch(kind: int, producer_id=1000, epoch=3, coordinator_epoch=5) -> bytes:
    now = TZAwareMicros.parse(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    record = Record(attributes=i8(0), timestamp=now, offset=i64(0),
                    key=struct.pack(">hh", 0, kind), value=struct.pack(">hi", 0, coordinator_epoch),
                    headers=())
    return batch(producer_id, epoch, -1, 0x30, (record,))


def test_header_versions_follow_flexible_versions():
    assert wire.request_header_version(22, 1) == 1 and wire.request_header_version(22, 2) == 2
    assert wire.response_header_version(22, 1) == 0 and wire.response_header_version(22, 2) == 1
    assert wire.request_header_version(0, 8) == 1 and wire.request_header_version(0, 9) == 2
    assert wire.request_header_version(24, 2) == 1 and wire.request_header_version(24, 3) == 2
    # ApiVersions answers with header v0 whatever its version (KIP-511)
    assert wire.request_header_version(18, 3) == 2 and wire.response_header_version(18, 3) == 0
    # a version newer than kio knows keeps the newest known flexibility
    assert wire.request_header_version(26, 99) == 2 and wire.response_header_version(26, 99) == 1
    assert wire.API_NAMES[27] == "WriteTxnMarkers" and wire.API_KEYS["EndTxn"] == 26


def test_error_names():
    for code, name in [(90, "PRODUCER_FENCED"), (47, "INVALID_PRODUCER_EPOCH"),
                       (51, "CONCURRENT_TRANSACTIONS"), (48, "INVALID_TXN_STATE"),
                       (120, "TRANSACTION_ABORTABLE"), (16, "NOT_COORDINATOR"),
                       (14, "COORDINATOR_LOAD_IN_PROGRESS"), (45, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
                       (46, "DUPLICATE_SEQUENCE_NUMBER"), (59, "UNKNOWN_PRODUCER_ID"),
                       (49, "INVALID_PRODUCER_ID_MAPPING"), (19, "NOT_ENOUGH_REPLICAS"),
                       (7, "REQUEST_TIMED_OUT"), (0, "NONE")]:
        assert wire.error_name(code) == name
    assert wire.error_name(999) == "UNKNOWN_999"


def test_init_producer_id_request_v1_and_v5():
    for version in (1, 5):
        fields = {"transactional_id": "tx-1",
                  "transaction_timeout": datetime.timedelta(seconds=60)}
        if version >= 3:
            fields.update(producer_id=-1, producer_epoch=-1)
        d = wire.decode_request(request(22, version, 11, fields))
        assert d["api"] == "InitProducerId" and d["version"] == version
        assert d["correlation_id"] == 11 and d["client_id"] == "producer-1"
        assert d["header_version"] == (1 if version < 2 else 2)
        assert d["fields"]["transactional_id"] == "tx-1"
        assert d["fields"]["transaction_timeout_ms"] == 60000
        assert "decode_error" not in d
        json.dumps(d)


def test_init_producer_id_response_with_error():
    cls = load_response_schema(22, 5)
    body = cls(throttle_time=datetime.timedelta(0), error_code=ErrorCode.concurrent_transactions,
               producer_id=-1, producer_epoch=-1)
    d = wire.decode_response(response(22, 5, 11, body), 22, 5)
    assert d["api"] == "InitProducerId" and d["correlation_id"] == 11
    assert d["fields"]["error_code"] == 51 and d["fields"]["throttle_time_ms"] == 0
    assert d["errors"] == [{"path": "error_code", "code": 51, "name": "CONCURRENT_TRANSACTIONS"}]


def test_add_partitions_client_form_and_verification_form():
    topic3 = nested(24, 3, True, "AddPartitionsToTxnTopic")
    d = wire.decode_request(request(24, 3, 5, {
        "v3_and_below_transactional_id": "tx-1", "v3_and_below_producer_id": 1000,
        "v3_and_below_producer_epoch": 2, "v3_and_below_topics": (topic3(name="t", partitions=(0, 1)),)}))
    assert d["fields"]["v3_and_below_producer_id"] == 1000
    assert d["fields"]["v3_and_below_topics"] == [{"name": "t", "partitions": [0, 1]}]
    txn = nested(24, 4, True, "AddPartitionsToTxnTransaction")
    topic4 = nested(24, 4, True, "AddPartitionsToTxnTopic")
    d = wire.decode_request(request(24, 4, 6, {"transactions": (txn(
        transactional_id="tx-1", producer_id=1000, producer_epoch=2, verify_only=True,
        topics=(topic4(name="t", partitions=(0,)),)),)}, client_id="broker-1-txn"))
    t = d["fields"]["transactions"][0]
    assert t["verify_only"] is True and t["producer_epoch"] == 2 and t["topics"][0]["name"] == "t"
    # the verification answer: a partition error named with its path
    pr = nested(24, 4, False, "AddPartitionsToTxnPartitionResult")
    tr = nested(24, 4, False, "AddPartitionsToTxnTopicResult")
    rr = nested(24, 4, False, "AddPartitionsToTxnResult")
    body = load_response_schema(24, 4)(
        throttle_time=datetime.timedelta(0), error_code=ErrorCode.none,
        results_by_transaction=(rr(transactional_id="tx-1", topic_results=(tr(
            name="t", results_by_partition=(pr(partition_index=0,
                                               partition_error_code=ErrorCode.invalid_txn_state),)),)),))
    d = wire.decode_response(response(24, 4, 6, body), 24, 4)
    assert d["errors"] == [{
        "path": "results_by_transaction[tx-1].topic_results[t].results_by_partition[0]"
                ".partition_error_code", "code": 48, "name": "INVALID_TXN_STATE"}]


def test_end_txn_and_write_txn_markers():
    d = wire.decode_request(request(26, 5, 9, {"transactional_id": "tx-1", "producer_id": 1000,
                                               "producer_epoch": 4, "committed": True}))
    assert d["api"] == "EndTxn" and d["fields"]["committed"] is True
    body = load_response_schema(26, 5)(throttle_time=datetime.timedelta(0),
                                       error_code=ErrorCode.producer_fenced,
                                       producer_id=1000, producer_epoch=5)
    d = wire.decode_response(response(26, 5, 9, body), 26, 5)
    assert d["fields"]["producer_epoch"] == 5 and d["errors"][0]["name"] == "PRODUCER_FENCED"
    marker = nested(27, 1, True, "WritableTxnMarker")
    topic = nested(27, 1, True, "WritableTxnMarkerTopic")
    d = wire.decode_request(request(27, 1, 3, {"markers": (marker(
        producer_id=1000, producer_epoch=4, transaction_result=True,
        topics=(topic(name="t", partition_indexes=(0, 2)),), coordinator_epoch=0),)},
        client_id="broker-1-txn-marker-sender"))
    m = d["fields"]["markers"][0]
    assert (m["producer_id"], m["producer_epoch"], m["transaction_result"]) == (1000, 4, True)
    assert m["topics"] == [{"name": "t", "partition_indexes": [0, 2]}]


def test_produce_with_transactional_batch():
    pd = nested(0, 9, True, "PartitionProduceData")
    td = nested(0, 9, True, "TopicProduceData")
    records = batch(producer_id=1000, epoch=3, sequence=7) + batch(4000, 0, 0, attributes=0)
    d = wire.decode_request(request(0, 9, 21, {
        "transactional_id": "tx-1", "acks": -1, "timeout": datetime.timedelta(seconds=30),
        "topic_data": (td(name="t", partition_data=(pd(index=0, records=records),)),)}))
    assert d["api"] == "Produce" and d["fields"]["transactional_id"] == "tx-1"
    assert d["fields"]["timeout_ms"] == 30000
    b1, b2 = d["fields"]["topic_data"][0]["partition_data"][0]["records"]
    assert (b1["producer_id"], b1["producer_epoch"], b1["base_sequence"], b1["records_count"]) \
        == (1000, 3, 7, 2)
    assert b1["transactional"] is True and b1["control"] is False and b1["compression"] == "none"
    assert b2["transactional"] is False and b2["producer_id"] == 4000
    json.dumps(d)


def test_record_batches_control_markers_and_truncation():
    commit = control_batch(1, coordinator_epoch=5)
    abort = control_batch(0, producer_id=2000, epoch=9, coordinator_epoch=2)
    got = wire.record_batches(commit + abort + batch()[:30])
    assert got[0]["control"] and got[0]["transactional"] and got[0]["control_type"] == "COMMIT"
    assert got[0]["coordinator_epoch"] == 5
    assert got[1]["control_type"] == "ABORT" and (got[1]["producer_id"], got[1]["producer_epoch"]) \
        == (2000, 9)
    assert got[2]["truncated"] is True and len(got) == 3


def test_fetch_response_lso_and_aborted_transactions():
    mod = __import__(load_response_schema(1, 13).__module__, fromlist=["x"])
    part = mod.PartitionData(partition_index=0, error_code=ErrorCode.none, high_watermark=10,
                             last_stable_offset=4, log_start_offset=0,
                             aborted_transactions=(mod.AbortedTransaction(producer_id=1000,
                                                                          first_offset=2),),
                             records=batch() + control_batch(0))
    import uuid
    body = mod.FetchResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none,
                             session_id=0, responses=(mod.FetchableTopicResponse(
                                 topic_id=uuid.UUID(int=7), partitions=(part,)),))
    d = wire.decode_response(response(1, 13, 77, body), 1, 13)
    p = d["fields"]["responses"][0]["partitions"][0]
    assert p["last_stable_offset"] == 4 and p["high_watermark"] == 10
    assert p["aborted_transactions"] == [{"producer_id": 1000, "first_offset": 2}]
    assert [b.get("control_type") for b in p["records"]] == [None, "ABORT"]
    json.dumps(d)


def test_other_apis_header_only_and_bad_bodies():
    # ApiVersions: header only
    d = wire.decode_request(request(18, 3, 1, {"client_software_name": "x",
                                               "client_software_version": "1"}))
    assert d["api"] == "ApiVersions" and d["fields"] == {} and "decode_error" not in d
    assert d["header_version"] == 2 and d["client_id"] == "producer-1"
    # Metadata: decoded (the topic ids Produce v13+ and Fetch v13+ use)
    d = wire.decode_request(request(3, 12, 1, {"topics": None,
                                               "allow_auto_topic_creation": True,
                                               "include_topic_authorized_operations": False}))
    assert d["fields"]["allow_auto_topic_creation"] is True and d["fields"]["topics"] is None
    # a cut EndTxn body: recorded with its header and the error
    full = request(26, 3, 2, {"transactional_id": "tx-1", "producer_id": 1, "producer_epoch": 0,
                              "committed": False})
    d = wire.decode_request(full[:-3])
    assert d["api"] == "EndTxn" and d["correlation_id"] == 2 and d["decode_error"]
    # a version kio has no schema for
    raw = struct.pack(">hhih", 26, 42, 3, 1) + b"c" + b"\x00" + b"\x01\x02"
    d = wire.decode_request(raw)
    assert d["api"] == "EndTxn" and "no EndTxn v42" in d["decode_error"]
    # garbage and empty frames, and a response to no known request
    assert wire.decode_request(b"\x00")["decode_error"]
    d = wire.decode_response(b"\x00\x00\x00\x05rest", None, None)
    assert d["correlation_id"] == 5 and d["decode_error"]
    assert wire.decode_request(struct.pack(">hhi", 500, 0, 1) + b"\xff\xff")["api"] == \
        "UNKNOWN_500"
