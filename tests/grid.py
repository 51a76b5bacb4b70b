"""A tiny hand-built model whose every property kind can hold or fail (used by explorer tests)."""
from kafka_mc.model.core import Property
from kafka_mc.model.protocol import ProtocolSpec, Rule


def _inc_x(p, s):
    return [()] if s[0] < p["max"] else []


def _inc_y(p, s):
    return [()] if s[1] < p["max"] else []


def _reset(p, s):
    return [()] if p["reset"] and s == (p["max"], p["max"]) else []


def _never(p, s):
    return []


def grid_spec(**props):
    """States (x, y) in 0..max; IncX, IncY, Reset from (max, max) back to (0, 0); Never is never
    enabled. Without Reset, (max, max) is a deadlock."""
    rules = (
        Rule("IncX", (), _inc_x, lambda p, s: (s[0] + 1, s[1])),
        Rule("IncY", (), _inc_y, lambda p, s: (s[0], s[1] + 1)),
        Rule("Reset", (), _reset, lambda p, s: (0, 0)),
        Rule("Never", (), _never, lambda p, s: s),
    )
    properties = tuple(Property(name, kind, holds) for name, (kind, holds) in props.items())
    return ProtocolSpec("grid", init=lambda p: [(0, 0)], rules=rules, properties=properties)


def grid(max=3, reset=True, **props):
    return grid_spec(**props).bind({"max": max, "reset": reset})
