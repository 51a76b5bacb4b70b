"""What changed between two trace states, field by field, and how trace values are shown.

Values are the decoded ITF values of ``kafka_mc.traces.itf`` (ints, strings, bools, tuples, frozensets,
dicts). ``diff`` descends into maps (by key), records, and tuples: by index (an array of components),
or matched by value where that matches more (a queue, a log: a message consumed from the network
is taken out, not every message after it changed); it reports a set by what it gained and lost, so a change deep inside a Kafka partition log reads as
``partitions.p0.log[3]: (absent) -> <<...>>`` rather than two whole states. ``show`` prints values
in TLA+ notation, as TLC does: ``<<1, "a">>``, ``{1, 2}``, ``[state |-> "Ongoing"]``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from difflib import SequenceMatcher
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
        yield from _sequence(a, b, path, older)
    elif isinstance(a, frozenset) and isinstance(b, frozenset):
        yield Change(path, a - b, b - a, is_set=True)
    else:
        yield Change(path, a, b)


def _element(x: Any, y: Any, path: str, older: bool) -> Iterator[Change]:
    """Element ``path`` of two sequences: its fields' changes when both are the same kind of
    record (the same fields), else the whole value replaced (a message taken and another sent in
    its place is not a message whose fields changed)."""
    if isinstance(x, dict) and isinstance(y, dict) and not (
            x.keys() == y.keys() or older and isinstance(x, Record) and x.keys() <= y.keys()):
        yield Change(path, x, y)
    else:
        yield from diff(x, y, path, older)


def _sequence(a: tuple, b: tuple, path: str, older: bool) -> Iterator[Change]:
    """Two sequences: matched by value (a queue, a log: an element taken out reads as taken out,
    ``network[0]: <<...>> -> (absent)``, not as every element after it changing into its
    successor) when that matches more elements than comparing them index by index does (an
    array of components: ``producers[1].state``). Runs the match leaves unequal are compared
    pairwise (``_element``, at their new index), the rest taken out (old index) or added."""
    keys = [[canonical(encode(v)) for v in side] for side in (a, b)]
    matcher = SequenceMatcher(None, *keys, autojunk=False)
    in_place = sum(x == y for x, y in zip(*keys))
    if len(a) == len(b) and sum(m.size for m in matcher.get_matching_blocks()) <= in_place:
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _element(x, y, f"{path}[{i}]", older)
        return
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for k in range(pairs):
            yield from _element(a[i1 + k], b[j1 + k], f"{path}[{j1 + k}]", older)
        for i in range(i1 + pairs, i2):
            yield Change(f"{path}[{i}]", a[i], MISSING)
        for j in range(j1 + pairs, j2):
            yield Change(f"{path}[{j}]", MISSING, b[j])


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
