"""States on disk: the BFS's frontier past a memory budget, and a checkpoint's frontier.

States are values built of NamedTuples, IntEnums, tuples, frozensets, ints, strings, booleans and
None (the model contract). A *block* of states is one line of JSON::

    {"c": ["tuple", "kafka_mc.model.kafka.world:Batch", ...],   classes, by index
     "n": [[1, 5, -1, [0]], ...],                       nodes: class index, then the children
     "r": [[7], [9], ...]}                              each state's node

A child is a JSON scalar (an int, string, boolean or null) or ``[k]``, a reference to an earlier
node; an IntEnum node holds its value. Sub-values the states of a block share (states of one level
share most of their components: a step replaces a few) are written once, so a block costs a
fraction of the trace encoding and decodes to states that share them again.

Decoding builds only ``tuple``, ``frozenset`` and NamedTuple or IntEnum classes of modules already
imported under the model's own package; nothing is imported, unpickled or evaluated. A malformed
block raises ``ValueError``.
"""
from __future__ import annotations

import json
import os
import sys
from enum import IntEnum
from pathlib import Path
from typing import Iterable, Iterator

BLOCK = 1024          # states a line
_ATOMS = (int, str, bool, type(None))


def encode_block(states: Iterable) -> str:
    classes: dict = {}
    nodes: list = []
    memo: dict = {}

    def ref(v):
        t = type(v)
        if t in _ATOMS:
            return v
        k = memo.get(id(v))
        if k is not None:
            return [k]
        c = classes.get(t)
        if c is None:
            c = classes[t] = len(classes)
        if isinstance(v, IntEnum):
            node = [c, int(v)]
        elif isinstance(v, (tuple, frozenset)):
            node = [c, *map(ref, v)]
        else:
            raise TypeError(f"a state holds a {t.__name__}, which the state codec cannot store")
        memo[id(v)] = k = len(nodes)
        nodes.append(node)
        return [k]

    try:
        roots = [ref(s) for s in states]
    finally:
        ref = None   # noqa: F841 -- break the closure's cycle: the search pauses the collector
    names = [_name(t) for t in classes]
    return json.dumps({"c": names, "n": nodes, "r": roots}, separators=(",", ":"))


def _name(t: type) -> str:
    if t in (tuple, frozenset):
        return t.__name__
    return f"{t.__module__}:{t.__qualname__}"


def _resolve(name: str, package: str):
    """The class a block names, if decoding may build it."""
    if name == "tuple":
        return tuple
    if name == "frozenset":
        return frozenset
    module, _, qual = name.partition(":")
    if not (module == package or module.startswith(package + ".")) or module not in sys.modules:
        raise ValueError(f"class {name!r} is not one of the model's")
    cls = sys.modules[module]
    for part in qual.split("."):
        cls = getattr(cls, part, None)
    ok = isinstance(cls, type) and (issubclass(cls, IntEnum) or (
        issubclass(cls, tuple) and hasattr(cls, "_fields")))
    # (the class itself, not one another module it imports has: what encode_block names)
    ok = ok and cls.__module__ == module and cls.__qualname__ == qual
    if not ok:
        raise ValueError(f"class {name!r} is not a NamedTuple or IntEnum")
    return cls


def decode_block(line: str, package: str) -> list:
    """The states of a block; ``package``: the model's top-level package (``model``)."""
    try:
        data = json.loads(line)
        builders = []
        for name in data["c"]:
            cls = _resolve(name, package)
            if cls is tuple or cls is frozenset:
                builders.append(cls)
            elif issubclass(cls, IntEnum):
                builders.append(lambda args, cls=cls: cls(*args))
            else:
                builders.append(cls._make)
        objs: list = []
        for node in data["n"]:
            build = builders[node[0]]
            args = [objs[x[0]] if type(x) is list else _atom(x) for x in node[1:]]
            objs.append(build(args))
        return [objs[r[0]] if type(r) is list else _atom(r) for r in data["r"]]
    except (KeyError, IndexError, TypeError, AttributeError, RecursionError) as e:
        raise ValueError(f"malformed state block ({type(e).__name__}: {e})") from None


def _atom(x):
    """A scalar of a block, if a state may hold it (not a float, not a JSON object)."""
    if type(x) not in _ATOMS:
        raise TypeError(f"a {type(x).__name__} is not a state component")
    return x


def model_package(model) -> str:
    """Where a model's state classes live: the top-level package of its class, or for one of
    kafka-mc's own models its package under kafka-mc's (``kafka_mc.model``)."""
    ours = __name__.split(".")[0]   # kafka-mc's top-level package, this module's
    parts = type(model).__module__.split(".")
    return ".".join(parts[:2]) if parts[0] == ours and ours != "explorers" else parts[0]


class DiskFrontier:
    """A level's states in a file, appended a block at a time and read back in order."""

    def __init__(self, file: Path, package: str):
        self.file, self.package = file, package
        self._buffer: list = []
        self._count = 0
        self._out = open(file, "w", encoding="utf-8")

    def append(self, s) -> None:
        self._buffer.append(s)
        self._count += 1
        if len(self._buffer) >= BLOCK:
            self._write()

    def _write(self) -> None:
        if self._buffer:
            self._out.write(encode_block(self._buffer) + "\n")
            self._buffer = []

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator:
        if not self._out.closed:
            self._write()
            self._out.close()
        with open(self.file, encoding="utf-8") as f:
            for line in f:
                yield from decode_block(line, self.package)

    def remove(self) -> None:
        if not self._out.closed:
            self._out.close()
        try:
            os.unlink(self.file)
        except FileNotFoundError:
            pass
