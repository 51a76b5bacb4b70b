"""What changed between two trace states, field by field, and how trace values are shown.

Values are the decoded ITF values of ``kafka_mc.traces.itf`` (ints, strings, bools, tuples, frozensets,
dicts). ``diff`` descends into maps (by key), tuples (by index) and records, and reports a set by
what it gained and lost, so a change deep inside a Kafka partition log reads as
``partitions.p0.log[3]: (absent) -> <<...>>`` rather than two whole states. ``show`` prints values
in TLA+ notation, as TLC does: ``<<1, "a">>``, ``{1, 2}``, ``[state |-> "Ongoing"]``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from kafka_mc.model.core import Record
from kafka_mc.traces.itf import canonical, encode


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING = _Missing()


@dataclass(frozen=True)
class Change:
    """``path`` changed from ``before`` to ``after`` (``MISSING`` when absent). For a set
    (``is_set``), ``before`` holds the elements it lost and ``after`` those it gained."""

    path: str
    before: Any
    after: Any
    is_set: bool = False

    def __str__(self) -> str:
        if self.is_set:
            parts = [f"- {show(v)}" for v in _sorted(self.before)]
            parts += [f"+ {show(v)}" for v in _sorted(self.after)]
            return f"{self.path}: {', '.join(parts)}"
        return f"{self.path}: {show(self.before)} -> {show(self.after)}"


def state_changes(before: Mapping[str, Any], after: Mapping[str, Any],
                  names: Sequence[str], older: bool = False) -> list[Change]:
    """Every change between two states, variable by variable in ``names`` order. ``older``:
    ``before`` was recorded by an older model, and a record field it lacks (one added since,
    which decoding filled with its default) is no change."""
    return [c for n in names
            for c in diff(before.get(n, MISSING), after.get(n, MISSING), n, older)]


def diff(a: Any, b: Any, path: str, older: bool = False) -> Iterator[Change]:
    if a == b and isinstance(a, bool) == isinstance(b, bool):  # ITF tells 1 from TRUE
        return
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) if older and isinstance(a, Record) else set(a) | set(b)
        for k in _sorted(keys):
            yield from diff(a.get(k, MISSING), b.get(k, MISSING), key_path(path, k), older)
    elif isinstance(a, tuple) and isinstance(b, tuple):
        for i in range(max(len(a), len(b))):
            yield from diff(a[i] if i < len(a) else MISSING, b[i] if i < len(b) else MISSING,
                            f"{path}[{i}]", older)
    elif isinstance(a, frozenset) and isinstance(b, frozenset):
        yield Change(path, a - b, b - a, is_set=True)
    else:
        yield Change(path, a, b)


def key_path(path: str, key: Any) -> str:
    """The path of a map entry or record field below ``path`` (``rmState.r2``, ``log[3]``)."""
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{show(key)}]"


def _sorted(values) -> list:
    return sorted(values, key=lambda v: canonical(encode(v)))


def show(v: Any) -> str:
    """A value in TLA+ notation (the notation of TLC's traces)."""
    if v is MISSING:
        return "(absent)"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, tuple):
        return f"<<{', '.join(map(show, v))}>>"
    if isinstance(v, frozenset):
        return f"{{{', '.join(map(show, _sorted(v)))}}}"
    if isinstance(v, dict):
        keys = _sorted(v)
        if all(isinstance(k, str) for k in keys):
            return f"[{', '.join(f'{k} |-> {show(v[k])}' for k in keys)}]"
        return f"({' @@ '.join(f'{show(k)} :> {show(v[k])}' for k in keys)})"
    return repr(v)
