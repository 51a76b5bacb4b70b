"""Fingerprints: the stable 64-bit key of a view (part of the model contract, ``kafka_mc.model.core``
re-exports it), which values a view may hold so that it is stable across processes
(``check_view``), and the chance that two states met one fingerprint."""
from __future__ import annotations

import enum
from typing import Any


# --- fingerprints -------------------------------------------------------------------------------
#
# A fingerprint is CPython's hash of the view, which is stable across processes and machines for
# the value types below: the tuple hash (xxHash-based, the same since CPython 3.8 on 64-bit
# builds), the int hash (x mod 2**61 - 1) and the order-independent frozenset hash involve no
# per-process seed. str, bytes and None are excluded: str/bytes hashes are salted per process
# (PYTHONHASHSEED) and None's hash is its address before CPython 3.12. IntEnum members hash as
# their int and are allowed (use them for named states). Ints must lie in [-1, 2**61 - 1):
# hash(-1) == hash(-2), and larger ints wrap. A fingerprint computed this way costs one C call,
# which is what makes the visited set cheap; a cryptographic digest of an encoding costs ~1 µs
# per state, more than the rest of the search. Like TLC's, fingerprints can collide (probability
# about n²/2⁶⁵ for n states); the explorers report that estimate.

fingerprint = hash
INT_MIN, INT_MAX = -1, 2**61 - 2


class ViewError(TypeError):
    """A view contains a value whose hash is not stable across processes."""


def check_view(view: Any, path: str = "view") -> None:
    """Raise ``ViewError`` naming the first part of ``view`` that would fingerprint unstably."""
    if isinstance(view, bool):
        return
    if isinstance(view, int):
        if not INT_MIN <= view <= INT_MAX:
            raise ViewError(f"{path} = {view}: ints in views must lie in [-1, 2**61 - 2]")
        if isinstance(view, enum.Enum) and not isinstance(view, enum.IntEnum):
            raise ViewError(f"{path} = {view!r}: only IntEnum members hash stably")
        return
    if isinstance(view, float):
        return
    if isinstance(view, tuple):  # includes NamedTuples
        for i, item in enumerate(view):
            check_view(item, f"{path}[{i}]")
        return
    if isinstance(view, frozenset):
        for item in sorted(view, key=repr):
            check_view(item, f"{path}{{{item!r}}}")
        return
    if _is_plain_dataclass(view):
        for name in view.__dataclass_fields__:
            check_view(getattr(view, name), f"{path}.{name}")
        return
    raise ViewError(
        f"{path}: {type(view).__name__} does not fingerprint stably across processes "
        "(use ints, IntEnum, tuples, frozensets or frozen dataclasses of those)")


def _is_plain_dataclass(v: Any) -> bool:
    fields = getattr(type(v), "__dataclass_fields__", None)
    params = getattr(type(v), "__dataclass_params__", None)
    return fields is not None and params is not None and params.frozen and params.eq


def collision_probability(distinct: int) -> float:
    """TLC's optimistic estimate of a fingerprint collision having happened."""
    return distinct * distinct / 2.0**65
