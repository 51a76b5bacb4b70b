"""Trace encoding of NamedTuple/IntEnum states, driven by the type annotations.

``to_itf`` turns a state into trace values: a NamedTuple becomes a ``Record`` of its fields, an
IntEnum its name, tuples and frozensets stay. ``from_itf`` rebuilds the exact value from those and
the annotated type; where a field holds messages (annotated ``tuple``), a record's ``rpc`` names
the message class. Malformed input raises ValueError naming the path.

Traces outlive the model: a record written before a field was added decodes with that field's
declared default (the NamedTuple's default; a field without one is required), so a model may
grow a state field, a message field or a fault budget without making saved traces unreadable.
A field a type lists in ``_only_if_set`` is written only when it differs from its default (a
request's ``disconnected``), so traces of behaviours that never set it keep their bytes.
A field the type no longer has is an error naming it: its value meant something the model can no
longer represent.
"""
from __future__ import annotations

import typing
from enum import IntEnum
from functools import lru_cache
from types import UnionType
from typing import Any

from kafka_mc.model.core import Record


def to_itf(value: Any) -> Any:
    if isinstance(value, IntEnum):
        return value.name
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        quiet = getattr(type(value), "_only_if_set", ())   # written only when not the default
        return Record((f, to_itf(getattr(value, f))) for f in value._fields
                      if not (f in quiet and getattr(value, f) == value._field_defaults[f]))
    if isinstance(value, tuple):
        return tuple(to_itf(v) for v in value)
    if isinstance(value, frozenset):
        return frozenset(to_itf(v) for v in value)
    return value


@lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def from_itf(data: Any, hint: Any, messages: dict, where: str = "state",
             hints: dict | None = None) -> Any:
    """The value of type ``hint`` that ``to_itf`` encoded as ``data``; ``hints`` overrides the
    field types of a top-level record (a field annotated loosely in its class)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, IntEnum):
        if not isinstance(data, str) or data not in hint.__members__:
            raise ValueError(f"{where}: {data!r} is not a {hint.__name__}")
        return hint[data]
    if isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields"):
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a {hint.__name__} record")
        unknown = sorted(set(data) - set(hint._fields))
        if unknown:
            raise ValueError(f"{where}: {hint.__name__} has no field {unknown[0]!r}")
        missing = [f for f in hint._fields if f not in data and f not in hint._field_defaults]
        if missing:
            raise ValueError(f"{where}: the {hint.__name__} record lacks {missing[0]!r}")
        hints = hints or _hints(hint)
        return hint(**{f: from_itf(data[f], hints[f], messages, f"{where}.{f}")
                       for f in hint._fields if f in data})
    if origin is UnionType or origin is typing.Union:
        wanted = next((a for a in args if _fits(data, a)), None)
        if wanted is None:
            raise ValueError(f"{where}: {data!r} fits none of {hint}")
        return from_itf(data, wanted, messages, where)
    if origin is tuple or hint is tuple:
        if not isinstance(data, tuple):
            raise ValueError(f"{where}: expected a tuple")
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else Any
        return tuple(from_itf(x, item, messages, f"{where}[{i}]") for i, x in enumerate(data))
    if origin is frozenset or hint is frozenset:
        if not isinstance(data, frozenset):
            raise ValueError(f"{where}: expected a set")
        return frozenset(from_itf(x, args[0] if args else Any, messages, where) for x in data)
    if hint is Any or hint is object:
        if isinstance(data, tuple) and hasattr(data, "_fields"):
            return data  # already a model value
        if isinstance(data, dict) and "rpc" in data:
            if data["rpc"] not in messages:
                raise ValueError(f"{where}: unknown message {data['rpc']!r}")
            return from_itf(data, messages[data["rpc"]], messages, where)
        if isinstance(data, (tuple, frozenset)):
            return from_itf(data, type(data), messages, where)
        if isinstance(data, bool) or isinstance(data, int):
            return data
        raise ValueError(f"{where}: unexpected {data!r}")
    if hint is bool:
        if not isinstance(data, bool):
            raise ValueError(f"{where}: expected true or false")
        return data
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise ValueError(f"{where}: expected an integer")
        return data
    raise ValueError(f"{where}: cannot decode into {hint}")


def _fits(data, hint) -> bool:
    if isinstance(hint, type) and issubclass(hint, IntEnum):
        return isinstance(data, str)
    if isinstance(hint, type) and hasattr(hint, "_fields"):
        return isinstance(data, dict)
    origin = typing.get_origin(hint) or hint
    return isinstance(data, origin) if isinstance(origin, type) else False
