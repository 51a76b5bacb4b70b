"""Apalache's Informal Trace Format (ITF) values, canonically encoded.

Python -> ITF: bool, str, int (``{"#bigint": "..."}`` beyond JSON's safe integers), tuple ->
``{"#tup": [...]}``, frozenset/set -> ``{"#set": [...]}``, dict -> ``{"#map": [[k, v], ...]}``,
``kafka_mc.model.core.Record`` -> a record (a JSON object; decoded as a Record).
Sets and maps are sorted by the canonical JSON of their elements and keys, so equal values encode
to the same bytes whatever their iteration order. Decoding is the exact inverse (sets come back as
frozensets). Nothing is evaluated or unpickled: decoding only builds these plain values.
"""
from __future__ import annotations

import json
from typing import Any

from kafka_mc.model.config import shown
from kafka_mc.model.core import Record

SAFE_INT = 2**53 - 1
MAX_DIGITS = 4300  # CPython's default limit for int(str)


class ItfError(ValueError):
    """A value that is not valid ITF (or cannot be encoded as ITF)."""


def encode(value: Any) -> Any:
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value) if -SAFE_INT <= value <= SAFE_INT else {"#bigint": str(int(value))}
    if isinstance(value, tuple):
        return {"#tup": [encode(v) for v in value]}
    if isinstance(value, (frozenset, set)):
        return {"#set": sorted((encode(v) for v in value), key=canonical)}
    if isinstance(value, Record):
        if not all(isinstance(k, str) and not k.startswith("#") for k in value):
            raise ItfError(f"record fields must be names, got {sorted(map(repr, value))}")
        return {k: encode(v) for k, v in sorted(value.items())}
    if isinstance(value, dict):
        pairs = [[encode(k), encode(v)] for k, v in value.items()]
        return {"#map": sorted(pairs, key=lambda kv: canonical(kv[0]))}
    raise ItfError(f"cannot encode {type(value).__name__} value {value!r} as ITF")


def decode(data: Any, where: str = "value") -> Any:
    if isinstance(data, bool) or isinstance(data, str):
        return data
    if isinstance(data, int):
        return data
    if isinstance(data, dict):
        if len(data) == 1:
            (tag, body), = data.items()
            if tag == "#bigint":
                digits = body[body[:1] == "-":] if isinstance(body, str) else ""
                if not (digits.isascii() and digits.isdigit() and len(digits) <= MAX_DIGITS):
                    raise ItfError(f"{where}: #bigint must be a decimal string of at most "
                                   f"{MAX_DIGITS} digits")
                return int(body)
            if tag in ("#tup", "#set", "#map") and not isinstance(body, list):
                raise ItfError(f"{where}: {tag} must hold a list")
            if tag == "#tup":
                return tuple(decode(v, f"{where}[{i}]") for i, v in enumerate(body))
            if tag == "#set":
                return frozenset(_hashable(decode(v, f"{where}{{}}"), where) for v in body)
            if tag == "#map":
                if not all(isinstance(kv, list) and len(kv) == 2 for kv in body):
                    raise ItfError(f"{where}: #map entries must be [key, value] pairs")
                return {_hashable(decode(k, f"{where} key"), where):
                        decode(v, f"{where}[{shown(repr(k), 80)}]") for k, v in body}
            if tag.startswith("#"):
                raise ItfError(f"{where}: unsupported ITF tag {tag}")
        return Record((k, decode(v, f"{where}.{shown(k, 80)}"))   # a record
                      for k, v in data.items())
    raise ItfError(f"{where}: {_json_kind(data)} is not an ITF value")


def _json_kind(data: Any) -> str:
    """What a JSON value that is no ITF value is, in JSON's words (not Python's)."""
    if data is None:
        return "null"
    if isinstance(data, float):
        return "a number with a fraction or an exponent"
    if isinstance(data, list):
        return "a bare array (ITF writes #tup or #set)"
    return "this value"


def _hashable(v: Any, where: str) -> Any:
    try:
        hash(v)
    except TypeError:
        raise ItfError(f"{where}: set elements and map keys must be hashable values") from None
    return v


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
