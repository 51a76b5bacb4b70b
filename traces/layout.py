"""Text within the width of the reader's terminal: ``COLUMNS`` (or the terminal's own width),
120 when standard output is not a terminal.

``wrap`` breaks a line of prose or a step at spaces, its continuation lines indented under its
text; ``value_lines`` lays a trace value out in TLA+ notation (``kafka_mc.traces.diff.show``) on
as many lines as it needs, each element of a sequence, set, record or map that does not fit on
one line given its own, indented under its brackets. Nothing is cut: a line longer than the
width is only ever a single word or value that has no room to break (a long name).
"""
from __future__ import annotations

import textwrap
from typing import Any

from kafka_mc.model.display import columns  # noqa: F401  (the width: COLUMNS, else 120)
from kafka_mc.traces.diff import MISSING, _sorted, show


def wrap(text: str, width: int, indent: int, first: str = "") -> list[str]:
    """``first + text`` within ``width``, continuation lines indented by ``indent`` spaces."""
    lines = textwrap.wrap(text, width, initial_indent=first, subsequent_indent=" " * indent,
                          break_long_words=False, break_on_hyphens=False)
    return lines or [first.rstrip()]


def command(text: str, width: int, indent: int, first: str = "") -> list[str]:
    """A command line within ``width`` as a shell takes it: broken between words with a
    trailing `` \\``, never inside one (a path stays whole, to be copied)."""
    lines, line, fresh = [], first, True   # fresh: no word on the line yet
    for w in text.split(" "):
        if not fresh and len(line) + 1 + len(w) + 2 > width:
            lines.append(line + " \\")
            line, fresh = " " * indent, True
        line, fresh = line + ("" if fresh else " ") + w, False
    return lines + [line]


def value_lines(v: Any, width: int, indent: int = 0, prefix: str = "",
                suffix: str = "") -> list[str]:
    """``prefix``, ``v`` in TLA+ notation and ``suffix``, from column ``indent``: one line when it
    fits, else one element (or a packed run of short ones) a line under its brackets."""
    pad = " " * indent
    one = f"{pad}{prefix}{show(v)}{suffix}"
    parts = _parts(v)
    if len(one) <= width or parts is None:
        return [one]
    opening, closing, sep, items = parts
    if not items:
        return [one]
    inner = indent + len(prefix) + len(opening)
    last = len(items) - 1
    laid = [value_lines(x, width, inner, p, sep if i < last else closing + suffix)
            for i, (p, x) in enumerate(items)]
    if all(len(item) == 1 for item in laid):   # short elements: as many a line as fit
        packed, line = [], ""
        for (item,) in laid:
            text = item.strip()
            if line and len(line) + 1 + len(text) > width:
                packed.append(line)
                line = ""
            line = f"{line} {text}" if line else " " * inner + text
        laid = [[*packed, line]]
    body = [ln for item in laid for ln in item]
    body[0] = f"{pad}{prefix}{opening}{body[0][inner:]}"
    return body


def _parts(v: Any):
    """(opening, closing, separator, [(prefix, element)]) of a value with elements; None for a
    scalar."""
    if isinstance(v, tuple):
        return "<<", ">>", ",", [("", x) for x in v]
    if isinstance(v, frozenset):
        return "{", "}", ",", [("", x) for x in _sorted(v)]
    if isinstance(v, dict):
        keys = _sorted(v)
        if all(isinstance(k, str) for k in keys):
            return "[", "]", ",", [(f"{k} |-> ", v[k]) for k in keys]
        return "(", ")", " @@", [(f"{show(k)} :> ", v[k]) for k in keys]
    return None


def change_lines(change, width: int, indent: int) -> list[str]:
    """A ``kafka_mc.traces.diff.Change`` from column ``indent``: one line when it fits, else the
    path, then what it was and what it became, each laid out below it."""
    one = " " * indent + str(change)
    if len(one) <= width:
        return [one]
    lines = [" " * indent + f"{change.path}:"]
    deeper = indent + 3
    if change.is_set:
        for sign, values in (("- ", change.before), ("+ ", change.after)):
            for x in _sorted(values):
                lines += value_lines(x, width, deeper, sign)
        return lines
    if change.before is not MISSING:
        lines += value_lines(change.before, width, deeper)
    lines += value_lines(change.after, width, deeper, "-> ")
    return lines
