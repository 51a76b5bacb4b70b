"""Kafka's wire protocol, read (never written) for the recording proxy (realkafka/proxy.py).

A frame is an ``int32`` size and that many bytes. A request starts with its header
(``RequestHeader.json``: ``int16 api_key``, ``int16 api_version``, ``int32 correlation_id``,
nullable ``string client_id``; header v2 adds tagged fields; ``client_id`` stays a non-compact
string even in v2). A response starts with ``int32 correlation_id`` only (``ResponseHeader.json``;
v1 adds tagged fields), so its API and version come from the request with that correlation id on
the same connection: the proxy keeps that map (``Pending``). Which header version an API version
uses follows from its ``flexibleVersions`` (Kafka's ``ApiKeys.requestHeaderVersion`` /
``responseHeaderVersion``; ApiVersions answers with header v0 at every version so that an old
client can read the answer).

Why kio (PyPI ``kio``, 0.6.5): its dataclasses are generated from Kafka's own JSON message schemas
(clients/src/main/resources/common/message/*.json), every API and every version the schemas
list, with readers in a native extension; it was made for inspecting client-broker traffic and is
maintained. The header versions come from kio too (each schema class's ``__header_schema__``).
kafka-python's protocol classes are hand-written and stop at older versions.

Gaps found in kio 0.6.5 (and what this module does about them):
- Schemas stop at Kafka 4.3's versions and start where Kafka 4.x does (Produce v3+, Fetch v4+).
  A version kio lacks (a newer release may add one) is recorded with its header and a
  ``decode_error`` naming the missing schema; its header version is taken from the nearest known
  version (flexibility never goes away once introduced).
- kio's record batch reader (``kio.records.readers.read_batch``) reads uncompressed batches only
  and checks every record's timestamp; the proxy needs just the v2 batch header (producer id,
  epoch, base sequence, count, attributes) at its fixed offsets
  (``DefaultRecordBatch``: attributes at 21, producerId 43, producerEpoch 51, baseSequence 53,
  recordsCount 57), which is read here without decompressing, and a control batch's one record
  (never compressed; ``ControlRecordType``: key ``int16 version, int16 type``, value of
  ``EndTransactionMarker``: ``int16 version, int32 coordinatorEpoch``).
- kio names fields in snake_case from Kafka's JSON names and drops a duration's ``Ms`` suffix (its
  value is a ``timedelta``); here a duration is written back as integer milliseconds under its
  name with ``_ms`` (``transaction_timeout_ms``, ``throttle_time_ms``), as Kafka names it.
- Error codes Kafka added after kio's table are named ``UNKNOWN_<code>``.
- Seen on the wire here: Kafka 4.4.0 clients send ApiVersions v5, which kio lacks (its header
  is read, its body is not decoded anyway); every transactional API version 3.6.2 and 4.4.0 use
  (Produce v9/v13, Fetch v15/v18, InitProducerId v4/v5, AddPartitionsToTxn v3+v4 / v5,
  EndTxn v3/v5, WriteTxnMarkers v1/v2, FindCoordinator v4/v6, Metadata v12/v13) decodes.

Per version, what a reader of the decoded fields must know: AddPartitionsToTxn v3 and below is
the client's form (kio's names ``v3_and_below_transactional_id``, ``..._producer_id``,
``..._topics``); v4+ is the broker's batched form (``transactions[]`` with ``verify_only``: true
for a KIP-890 part 1 verification, false for TV2's implicit add sent by the partition leader).
EndTxn v5 answers with ``producer_id`` and the bumped ``producer_epoch`` (TV2). WriteTxnMarkers
v2 carries ``transaction_version``. Produce v13+ and Fetch v13+ name topics by ``topic_id``
only (the proxy adds the ``name`` it learnt from Metadata answers).

Every function here is pure: bytes in, a plain dict of JSON-able values out. A body that fails to
decode is reported (``decode_error``) beside its header, never raised: the proxy forwards the
original bytes unchanged whatever this module makes of them.
"""
from __future__ import annotations

import dataclasses
import datetime
import enum
import struct
import types
import typing
import uuid
from functools import lru_cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader
from kio.serial.readers import read_signed_varint, read_signed_varlong

__all__ = [
    "API_KEYS", "API_NAMES", "BODY_DECODED", "error_name", "request_header_version",
    "response_header_version", "decode_request", "decode_response", "correlation_id_of",
    "record_batches", "frame", "body_shape", "BATCH_SHAPE",
]


def _camel(snake: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


#: api_key -> Kafka's name of the API (``ApiKeys``: "InitProducerId", "WriteTxnMarkers" ...).
API_NAMES: dict[int, str] = {int(k): _camel(v) for k, v in api_key_map.items()}
API_KEYS: dict[str, int] = {v: k for k, v in API_NAMES.items()}

#: The APIs whose bodies are decoded; every other API is recorded by its header only.
BODY_DECODED: frozenset[int] = frozenset({
    0,    # Produce (record batches: producer id, epoch, sequence, transactional/control bits)
    1,    # Fetch (isolation level; LSO, aborted transactions, the batches returned)
    3,    # Metadata (the advertised brokers, the topic ids Produce v13+ / Fetch v13+ name topics by)
    10,   # FindCoordinator
    22,   # InitProducerId
    24,   # AddPartitionsToTxn (client form v<=3, the leaders' verification form v4+)
    25,   # AddOffsetsToTxn
    26,   # EndTxn
    27,   # WriteTxnMarkers
    28,   # TxnOffsetCommit
    61,   # DescribeProducers
    65,   # DescribeTransactions
    66,   # ListTransactions
})

_ERROR_NAMES: dict[int, str] = {int(e.value): e.name.upper() for e in ErrorCode}


def error_name(code: int) -> str:
    """Kafka's name of an error code (``Errors``: 90 -> ``PRODUCER_FENCED``)."""
    return _ERROR_NAMES.get(int(code), f"UNKNOWN_{int(code)}")


# ----------------------------------------------------------------------------- header versions

def _versions(api_key: int) -> list[int]:
    name = api_key_map.get(api_key)
    return sorted(schema_name_map[name]) if name in schema_name_map else []


def _nearest_version(api_key: int, version: int) -> int | None:
    known = _versions(api_key)
    if not known:
        return None
    if version in known:
        return version
    if version > known[-1]:
        return known[-1]
    return None     # older than kio knows: non-flexible


@lru_cache(maxsize=None)
def request_header_version(api_key: int, version: int) -> int:
    """The request header version of ``api_key`` at ``version`` (1, or 2 when flexible);
    ControlledShutdown v0 alone had header v0 (no client id)."""
    if api_key == 7 and version == 0:
        return 0
    v = _nearest_version(api_key, version)
    if v is None:
        return 1
    return int(load_request_schema(api_key, v).__header_schema__.__version__)


@lru_cache(maxsize=None)
def response_header_version(api_key: int, version: int) -> int:
    """The response header version of ``api_key`` at ``version`` (0, or 1 when flexible;
    ApiVersions is always 0)."""
    if api_key == 18:
        return 0
    v = _nearest_version(api_key, version)
    if v is None:
        return 0
    return int(load_response_schema(api_key, v).__header_schema__.__version__)


# ----------------------------------------------------------------------------- primitive reads

def _skip_tagged_fields(buf: bytes, offset: int) -> int:
    """Skip a tagged-field section (uvarint count, then per field uvarint tag, uvarint size,
    bytes); return the offset after it."""
    count, offset = _uvarint(buf, offset)
    for _ in range(count):
        _, offset = _uvarint(buf, offset)
        size, offset = _uvarint(buf, offset)
        offset += size
    if offset > len(buf):
        raise ValueError("tagged fields run past the frame")
    return offset


def _uvarint(buf: bytes, offset: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if offset >= len(buf):
            raise ValueError("varint runs past the frame")
        b = buf[offset]
        offset += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, offset
        shift += 7
        if shift > 35:
            raise ValueError("varint too long")


def frame(payload: bytes) -> bytes:
    """``payload`` with its int32 size prefix (what goes on the wire)."""
    return struct.pack(">i", len(payload)) + payload


def correlation_id_of(response: bytes) -> int:
    """The correlation id a response frame's payload (no size prefix) starts with."""
    return struct.unpack_from(">i", response, 0)[0]


# ----------------------------------------------------------------------------- JSON conversion

def _jsonable(value: Any, kafka_type: str | None = None) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        if kafka_type == "records":
            return record_batches(bytes(value))
        b = bytes(value)
        return b.hex() if len(b) <= 64 else {"bytes": len(b)}
    if dataclasses.is_dataclass(value):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            kt = f.metadata.get("kafka_type")
            name = f.name
            if kt in ("timedelta_i32", "timedelta_i64") and not name.endswith("_ms"):
                name += "_ms"
            out[name] = _jsonable(getattr(value, f.name), kt)
        return out
    if isinstance(value, (tuple, list, frozenset, set)):
        return [_jsonable(v, kafka_type) for v in value]
    return repr(value)


_IDENTITY = ("transactional_id", "name", "topic", "partition_index", "index", "partition",
             "producer_id", "key")


def _errors(value: Any, path: str, out: list[dict]) -> None:
    """Every non-zero error code in a decoded kio entity, with a readable path to it
    (list elements named by their topic / partition / transactional id when they have one)."""
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            p = f"{path}.{f.name}" if path else f.name
            if f.metadata.get("kafka_type") == "error_code":
                if v is not None and int(v) != 0:
                    out.append({"path": p, "code": int(v), "name": error_name(int(v))})
            elif dataclasses.is_dataclass(v) or isinstance(v, tuple):
                _errors(v, p, out)
    elif isinstance(value, tuple):
        for i, element in enumerate(value):
            if not dataclasses.is_dataclass(element):
                return
            label: Any = i
            for attr in _IDENTITY:
                if hasattr(element, attr):
                    label = _jsonable(getattr(element, attr))
                    break
            _errors(element, f"{path}[{label}]", out)


# ----------------------------------------------------------------------------- record batches

_COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                  4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_BATCH_HEADER = struct.Struct(">qiiBIhiqqqhii")   # DefaultRecordBatch, 61 bytes
_RECORDS_OFFSET = 61


def record_batches(records: bytes) -> list[dict]:
    """The v2 record batches in a ``records`` field, each summarised from its header
    (``DefaultRecordBatch``): no decompression, no CRC check. A control batch also gets its
    marker (``control_type`` COMMIT/ABORT and the ``coordinator_epoch``). A trailing partial
    batch (a Fetch answer cut at its size limit) is reported as ``{"truncated": True}``; a batch
    of an older magic only by its offset, magic and size."""
    out: list[dict] = []
    pos, end = 0, len(records)
    while pos + 17 <= end:
        base_offset, batch_length = struct.unpack_from(">qi", records, pos)
        size = 12 + batch_length
        magic = records[pos + 16]
        if pos + size > end or batch_length < 0:
            out.append({"base_offset": base_offset, "truncated": True})
            break
        if magic != 2 or size < _RECORDS_OFFSET:
            out.append({"base_offset": base_offset, "magic": magic, "size": size})
            pos += size
            continue
        (_, _, leader_epoch, _, _crc, attributes, last_offset_delta, _, _, producer_id,
         producer_epoch, base_sequence, count) = _BATCH_HEADER.unpack_from(records, pos)
        batch: dict[str, Any] = {
            "base_offset": base_offset,
            "last_offset_delta": last_offset_delta,
            "partition_leader_epoch": leader_epoch,
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "base_sequence": base_sequence,
            "records_count": count,
            "attributes": attributes,
            "compression": _COMPRESSION.get(attributes & 0x07, str(attributes & 0x07)),
            "transactional": bool(attributes & 0x10),
            "control": bool(attributes & 0x20),
        }
        if batch["control"]:
            try:
                batch.update(_control_record(records, pos + _RECORDS_OFFSET, pos + size))
            except (ValueError, IndexError, struct.error) as e:
                batch["control_error"] = str(e)
        out.append(batch)
        pos += size
    if 0 < end - pos < 17:
        out.append({"truncated": True})
    return out


def _control_record(buf: bytes, pos: int, end: int) -> dict:
    """The first record of a control batch (``ControlRecordType.parseTypeId``,
    ``EndTransactionMarker.deserializeValue``)."""
    _length, n = read_signed_varint(buf, pos)
    pos += n + 1                                  # the record's attributes (int8)
    _, n = read_signed_varlong(buf, pos)          # timestampDelta
    pos += n
    _, n = read_signed_varint(buf, pos)           # offsetDelta
    pos += n
    key_len, n = read_signed_varint(buf, pos)
    pos += n
    if key_len < 4 or pos + key_len > end:
        raise ValueError(f"control record key of {key_len} bytes")
    _key_version, type_id = struct.unpack_from(">hh", buf, pos)
    pos += key_len
    out: dict[str, Any] = {"control_type": _CONTROL_TYPES.get(type_id, f"UNKNOWN_{type_id}")}
    if type_id in (0, 1):
        value_len, n = read_signed_varint(buf, pos)
        pos += n
        if value_len >= 6 and pos + value_len <= end:
            _value_version, coordinator_epoch = struct.unpack_from(">hi", buf, pos)
            out["coordinator_epoch"] = coordinator_epoch
    return out


# ----------------------------------------------------------------------------- shapes

# What ``record_batches`` writes for one batch: every key optional (a truncated batch, one of an
# older magic and a control batch carry different ones), each of one JSON type.
BATCH_SHAPE: dict = {k + "?": t for k, t in (
    ("base_offset", int), ("last_offset_delta", int), ("partition_leader_epoch", int),
    ("producer_id", int), ("producer_epoch", int), ("base_sequence", int),
    ("records_count", int), ("attributes", int), ("compression", str), ("transactional", bool),
    ("control", bool), ("truncated", bool), ("magic", int), ("size", int),
    ("control_type", str), ("coordinator_epoch", int), ("control_error", str))}
_PRIMITIVE = {"int8": int, "int16": int, "int32": int, "int64": int, "uint16": int,
              "uint32": int, "uint64": int, "error_code": int, "float64": float, "string": str,
              "bool": bool, "uuid": str, "timedelta_i32": int, "timedelta_i64": int,
              "datetime_i64": int}


@lru_cache(maxsize=None)
def body_shape(api_key: int, version: int, request: bool) -> dict | None:
    """The JSON shape of a body this module decodes (``decode_request`` / ``decode_response``'s
    ``fields``), from kio's schema of ``api_key`` at ``version``: a dict of field name -> shape,
    where a shape is a JSON type (``int``, ``str``, ``bool``, ``float``), a dict (an entity),
    a one-element list (an array of that shape), ``(None, shape)`` (nullable) or ``"records"``
    (``record_batches``' list of ``BATCH_SHAPE``). None: an API whose body is not decoded, or
    a version kio has no schema of. Read back by the run-folder reader
    (``kafka_mc.realkafka.runfolder``) before anything uses a recorded event."""
    if api_key not in BODY_DECODED or version not in _versions(api_key):
        return None
    load = load_request_schema if request else load_response_schema
    return _entity_shape(load(api_key, version))


def _entity_shape(cls) -> dict:
    hints = typing.get_type_hints(cls)
    out: dict = {}
    for f in dataclasses.fields(cls):
        kt = f.metadata.get("kafka_type")
        name = f.name + ("_ms" if kt in ("timedelta_i32", "timedelta_i64")
                         and not f.name.endswith("_ms") else "")
        out[name] = _field_shape(hints[f.name], kt)
    return out


def _field_shape(hint, kafka_type):
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (types.UnionType, typing.Union) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return (None, _field_shape(inner[0], kafka_type))
    if typing.get_origin(hint) is tuple:
        return [_field_shape(args[0], kafka_type)]
    if dataclasses.is_dataclass(hint):
        return _entity_shape(hint)
    if kafka_type == "records":
        return "records"
    if kafka_type not in _PRIMITIVE:
        raise TypeError(f"kio field type {kafka_type!r} has no JSON shape here")
    return _PRIMITIVE[kafka_type]


# ----------------------------------------------------------------------------- bodies

@lru_cache(maxsize=None)
def _reader(api_key: int, version: int, request: bool):
    load = load_request_schema if request else load_response_schema
    return entity_reader(load(api_key, version))


def _decode_body(payload: bytes, offset: int, api_key: int, version: int, request: bool,
                 out: dict) -> None:
    if api_key not in BODY_DECODED:
        return
    try:
        entity, size = _reader(api_key, version, request)(payload, offset)
    except Exception as e:      # kio raises its own and builtin errors; none may stop the proxy
        what = "request" if request else "response"
        if api_key in api_key_map and version not in _versions(api_key):
            out["decode_error"] = (f"kio {_kio_version()} has no {API_NAMES[api_key]} v{version} "
                                   f"{what} schema (it knows v{_versions(api_key)[0]}.."
                                   f"v{_versions(api_key)[-1]})")
        else:
            out["decode_error"] = f"{type(e).__name__}: {e}"[:500]
        return
    try:
        out["fields"] = _jsonable(entity)
        errors: list[dict] = []
        _errors(entity, "", errors)
        out["errors"] = errors
        if offset + size != len(payload):
            out["decode_error"] = (f"{len(payload) - offset - size} bytes left after the body")
    except Exception as e:
        out["decode_error"] = f"{type(e).__name__}: {e}"[:500]


@lru_cache(maxsize=1)
def _kio_version() -> str:
    try:
        from kio._version import version
        return version
    except Exception:
        return "?"


def decode_request(payload: bytes) -> dict:
    """A request frame's payload (no size prefix) as a dict: ``api``, ``api_key``,
    ``version``, ``correlation_id``, ``client_id``, ``header_version``, ``fields`` (the body,
    for the APIs in ``BODY_DECODED``), ``errors`` (none in a request) and ``decode_error`` when
    the header or the body could not be read."""
    out: dict[str, Any] = {"api": None, "api_key": None, "version": None, "correlation_id": None,
                           "client_id": None, "header_version": None, "fields": {},
                           "errors": []}
    try:
        api_key, version, correlation_id = struct.unpack_from(">hhi", payload, 0)
    except struct.error:
        out["decode_error"] = f"a request of {len(payload)} bytes has no header"
        return out
    out.update(api=API_NAMES.get(api_key, f"UNKNOWN_{api_key}"), api_key=api_key,
               version=version, correlation_id=correlation_id)
    header_version = request_header_version(api_key, version)
    out["header_version"] = header_version
    offset = 8
    try:
        if header_version >= 1:
            (n,) = struct.unpack_from(">h", payload, offset)
            offset += 2
            if n >= 0:
                if offset + n > len(payload):
                    raise ValueError("client_id runs past the frame")
                out["client_id"] = payload[offset:offset + n].decode("utf-8", "replace")
                offset += n
        if header_version >= 2:
            if api_key not in API_NAMES:
                out["decode_error"] = f"unknown api key {api_key}"
                return out
            offset = _skip_tagged_fields(payload, offset)
    except (struct.error, ValueError) as e:
        out["decode_error"] = f"header: {e}"
        return out
    _decode_body(payload, offset, api_key, version, True, out)
    return out


def decode_response(payload: bytes, api_key: int | None, version: int | None) -> dict:
    """A response frame's payload (no size prefix) as a dict like ``decode_request``'s; its API
    and version are the request's (``api_key`` None: a response to no request seen, recorded by
    its correlation id only)."""
    out: dict[str, Any] = {"api": None, "api_key": api_key, "version": version,
                           "correlation_id": None, "header_version": None, "fields": {},
                           "errors": []}
    try:
        out["correlation_id"] = correlation_id_of(payload)
    except struct.error:
        out["decode_error"] = f"a response of {len(payload)} bytes has no header"
        return out
    if api_key is None or version is None:
        out["decode_error"] = "no request with this correlation id on this connection"
        return out
    out["api"] = API_NAMES.get(api_key, f"UNKNOWN_{api_key}")
    header_version = response_header_version(api_key, version)
    out["header_version"] = header_version
    offset = 4
    if header_version >= 1:
        try:
            offset = _skip_tagged_fields(payload, offset)
        except ValueError as e:
            out["decode_error"] = f"header: {e}"
            return out
    _decode_body(payload, offset, api_key, version, False, out)
    return out
