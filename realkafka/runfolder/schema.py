"""The schemas of a run folder's files, checked before anything reads them.

A shape is plain data: a JSON type (``int``, ``str``, ``bool``, ``float``: a number), a dict (an
object: its keys; a key ending in ``?`` may be absent; no other key is allowed unless the dict
has ``...: shape`` for the others), a one-element list (an array of that shape), ``(None,
shape)`` (null or shape), a ``Range`` (an integer between bounds), a ``frozenset`` of strings (one
of them), ``ANY`` (any JSON value) or ``"records"`` (the record batches of a decoded body,
``kafka_mc.realkafka.wire.BATCH_SHAPE``). ``check`` says where a value leaves its shape, in one line.

The files' shapes are what the harness writes: ``run.json`` (``kafka_mc.realkafka.run``),
``plan.json`` (``kafka_mc.realkafka.plan.Plan``), the proxy's events
(``kafka_mc.realkafka.proxy``; a decoded body as kio's schema of its API and version says,
``wire.body_shape``), the client history (``kafka_mc.realkafka.client``), the end state
(``report.json``'s ``end_state``, or a reproduction's ``end_state.json``) and the manifest
(``kafka_mc.realkafka.runfolder.manifest``). An object may carry keys
a later kafka-mc adds where the shape says ``...``; a value of the wrong type never passes, so
no reader meets a string where it counts, a list where it looks a key up, or a count it would
loop over a billion times.
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

ANY = object()
MAX_COUNT = 100_000          # a batch's records, a log's batches: more is no run of the harness


class Range(NamedTuple):
    low: int
    high: int


class SchemaError(ValueError):
    """A value that leaves its shape: the path to it and what was expected, one line."""


def _kind(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


def _brief(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check(value, shape, path: str = "") -> None:
    """Raise ``SchemaError`` naming ``path`` where ``value`` is not of ``shape``."""
    where = f"{path}: " if path else ""
    if shape is ANY:
        return
    if isinstance(shape, tuple) and not isinstance(shape, Range) and shape[0] is None:
        if value is not None:
            check(value, shape[1], path)
        return
    if shape == "records":
        from kafka_mc.realkafka import wire    # kio: imported when a recorded run is read
        check(value, [wire.BATCH_SHAPE], path)
        return
    if isinstance(shape, frozenset):
        if not isinstance(value, str) or value not in shape:
            raise SchemaError(f"{where}{_brief(value)} is not one of {', '.join(sorted(shape))}")
        return
    if isinstance(shape, Range):
        if type(value) is not int or not shape.low <= value <= shape.high:
            raise SchemaError(f"{where}expected an integer from {shape.low} to {shape.high}, "
                              f"found {_brief(value)}")
        return
    if isinstance(shape, list):
        if type(value) is not list:
            raise SchemaError(f"{where}expected an array, found {_kind(value)}")
        for i, item in enumerate(value):
            check(item, shape[0], f"{path}[{i}]")
        return
    if isinstance(shape, dict):
        if type(value) is not dict:
            raise SchemaError(f"{where}expected an object, found {_kind(value)}")
        keys = {k.rstrip("?"): (k.endswith("?"), s) for k, s in shape.items() if k is not ...}
        for key, (optional, s) in keys.items():
            if key in value:
                check(value[key], s, f"{path}.{key}" if path else key)
            elif not optional:
                raise SchemaError(f"{where}no {key!r}")
        others = shape.get(..., None)
        for key, item in value.items():
            if key not in keys:
                if others is None:
                    raise SchemaError(f"{where}an unknown key {_brief(key)}")
                check(item, others, f"{path}.{key}" if path else str(key))
        return
    ok = (type(value) in (int, float) if shape is float else type(value) is shape)
    if not ok:
        raise SchemaError(f"{where}expected {_kind(shape())}, found {_kind(value)}")


def depth(value, limit: int) -> bool:
    """Whether ``value`` nests at most ``limit`` arrays and objects deep (walked without
    recursion, so a deep value is measured, not a crash)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            if d > limit:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


# --- the files ---------------------------------------------------------------------------------

SHORT = Range(-2**15, 2**15 - 1)
INT = Range(-2**63, 2**63 - 1)
COUNT = Range(0, MAX_COUNT)

RUN = {"version": str, "seed": INT, "config": {...: {...: ANY}}, "preset?": str,
       "brokers?": Range(1, 5), "reproduced_from?": str, "kafka_home?": str, ...: ANY}

PLAN = {"seed": INT, "partitions": Range(1, 64), "consumers": COUNT,
        "instances": [{"tid": COUNT, "number": COUNT,
                       "txns": [{"number": COUNT, "partitions": [COUNT], "end": str,
                                 "pause?": bool}],
                       "crash": (None, [ANY])}],
        "network": [{"kind": str, "api": str, "occurrence": INT, "hold_ms?": INT}],
        "failovers": [{"after_end_txn": INT, "hard": bool}],
        "notes?": [str], "outages?": [{"partition": COUNT}]}

EVENT = {"seq": INT, "time": INT, "endpoint": str, "conn": INT,
         "direction": frozenset({"request", "response", "connection"}),
         "api": (None, str), "action": (None, str),
         "api_key?": (None, INT), "version?": (None, INT), "correlation_id?": (None, INT),
         "client_id?": (None, str), "size?": INT, "fields?": {...: ANY},
         "errors?": [{"path": str, "code": INT, "name": str}],
         "fault?": (None, {"kind": str, "id": str}), "decode_error?": str, "held_seq?": INT,
         "reason?": str, "by?": str, "side?": str, "upstream?": [ANY], "client?": [ANY]}

HISTORY = {"index": INT, "time": INT, "process": (None, str),
           "type": frozenset({"invoke", "ok", "fail", "info"}), "f": str, "value": ANY,
           "error": (None, [ANY])}
SEND_VALUE = {"topic?": (None, str), "partition?": (None, INT), ...: ANY}

BATCH = {"control?": bool, "marker?": (None, str), "producer_id?": INT, "producer_epoch?": INT,
         "coordinator_epoch?": (None, INT), "base_sequence?": INT, "count?": COUNT, ...: ANY}
PRODUCER = {"producer_id?": (None, INT), "producer_epoch?": (None, INT),
            "last_sequence?": (None, INT), "coordinator_epoch?": (None, INT),
            "current_transaction_start_offset?": (None, INT), ...: ANY}
END_STATE = {"transactions?": {...: (None, {"state?": (None, str), "producer_id?": INT,
                                            "producer_epoch?": INT, ...: ANY})},
             "logs?": {...: [BATCH]},
             "offsets?": {...: {"lso?": (None, INT), "high_watermark?": INT, ...: ANY}},
             "producers?": {...: [PRODUCER]}, ...: ANY}
REPORT = {"end_state?": END_STATE, ...: ANY}


def check_event(e: dict, path: str) -> None:
    """A proxy event: its envelope, and a decoded body as kio's schema of its API and version
    says (``wire.body_shape``); a body that did not decode (``decode_error``) is not read."""
    from kafka_mc.realkafka import wire        # kio: imported when a recorded run is read
    check(e, EVENT, path)
    if e["direction"] == "connection" or "decode_error" in e or e.get("api_key") is None:
        return
    key, version = e["api_key"], e.get("version")
    if key not in wire.BODY_DECODED:
        return
    shape = wire.body_shape(key, version, e["direction"] == "request") \
        if type(version) is int else None
    if shape is None:
        raise SchemaError(f"{path}: no schema of {e.get('api')} v{version} and no decode_error")
    check(e.get("fields", {}), _named(key, version, e["direction"] == "request"),
          f"{path}.fields")


@lru_cache(maxsize=None)
def _named(key: int, version: int, request: bool) -> dict:
    from kafka_mc.realkafka import wire
    return _with_topic_names(wire.body_shape(key, version, request))


def _with_topic_names(shape):
    """The proxy writes a topic's ``name`` beside a ``topic_id`` it learnt from Metadata."""
    if isinstance(shape, dict):
        out = {k: _with_topic_names(v) for k, v in shape.items()}
        if "topic_id" in shape and "name" not in shape:
            out["name?"] = str
        return out
    if isinstance(shape, list):
        return [_with_topic_names(shape[0])]
    if isinstance(shape, tuple) and not isinstance(shape, Range):
        return (None, _with_topic_names(shape[1]))
    return shape


def check_history(e: dict, path: str) -> None:
    """A history record (``kafka_mc.realkafka.client``): a send's value names its topic and
    partition."""
    check(e, HISTORY, path)
    if e["f"] == "send" and e["type"] in ("invoke", "ok") and e["value"] is not None:
        check(e["value"], SEND_VALUE, f"{path}.value")

KINDS = frozenset({"run", "reproduce", "campaign"})
STATUSES = frozenset({"running", "complete", "incomplete"})
MANIFEST = {"kafka_mc_run_folder": Range(1, 1), "kind": KINDS, "status": STATUSES, "why": str,
            "command": str, "process": {"pid": INT, "start": (None, INT), "boot": (None, str)},
            "started": str, "ended": (None, str), "files": [str], "folders": [str],
            "digests": {...: str}, "outputs": [str], ...: ANY}
