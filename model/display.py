"""Values and actions as people read them (traces, reports, ``kafka-mc explore``):
``RMPrepare(rm=3)``, enums by name, records as ``Type(field=value)``; and the width they are
written within (``columns``)."""
from __future__ import annotations

import enum
import shutil
from typing import Sequence

Action = tuple  # (name, *args)


def action_name(a: Action) -> str:
    return a[0]


def format_action(a: Action, params: Sequence[str] = ()) -> str:
    """``("RMPrepare", 3)`` with params ``("rm",)`` -> ``RMPrepare(rm=3)``."""
    args = a[1:]
    if not args:
        return a[0]
    names = list(params) + [f"arg{i}" for i in range(len(params), len(args))]
    return f"{a[0]}({', '.join(f'{n}={show(v)}' for n, v in zip(names, args))})"


def show(v) -> str:
    """A value as people read it in actions: enums by name, records as Type(field=value) without
    a field that only repeats the type (a message's ``rpc``) or one the type names in
    ``_only_if_set`` left at its default (``codec.to_itf`` leaves it out too), sets in braces."""
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        quiet = getattr(type(v), "_only_if_set", ())
        shown = [f"{f}={show(getattr(v, f))}" for f in v._fields
                 if not (isinstance(getattr(v, f), enum.Enum)
                         and getattr(v, f).name == type(v).__name__)
                 and not (f in quiet and getattr(v, f) == v._field_defaults[f])]
        return f"{type(v).__name__}({', '.join(shown)})"
    if isinstance(v, frozenset):
        return "{" + ", ".join(sorted(map(show, v))) + "}"
    if isinstance(v, tuple):
        return "(" + ", ".join(map(show, v)) + (",)" if len(v) == 1 else ")")
    return repr(v)


COLUMNS_DEFAULT = 120   # the width of output when standard output is not a terminal
COLUMNS_LEAST = 60


def columns() -> int:
    """The width to write to: ``COLUMNS`` when set, else the terminal's, else 120 (not a
    terminal: a file, a pipe, a test); never less than 60."""
    return max(COLUMNS_LEAST, shutil.get_terminal_size((COLUMNS_DEFAULT, 24)).columns)
