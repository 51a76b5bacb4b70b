"""Counterexample traces as ITF files (docs/design.md section 7).

A file holds the trace metadata (``#meta``: model, configuration, protocol, property and kind,
explorer, seed when there is one, tool version; see ``trace_metadata``), the state variables
(``vars``) and the states; each state after the first records in its ``#meta`` the action that
led to it, both readable (``RMPrepare(rm=1)``) and as an ITF value (``action_value``) that replay
decodes. A lasso (a liveness counterexample) has the top-level ``loop``: the index of the state
the last state steps back to (Apalache ADR-015), by the action in ``#meta`` ``loop_action`` /
``loop_action_value``; without one the loop is stuttering (``loop`` is then the last index: the
behaviour stays there forever). ``#meta`` ``trigger``: the state where a leads-to claim's
``when`` held. The same trace always serialises to the same bytes. Reading a file only parses JSON into
plain values: nothing in it is executed or unpickled, and any defect is one ``TraceError`` line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any, Mapping

from kafka_mc.model.config import UserFileError, read_user_file, shown
from kafka_mc.traces.files import write_atomically
from kafka_mc.traces.itf import ItfError, decode, encode

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
MAX_TRACE_BYTES = 256 * 2**20


class TraceError(ValueError):
    """A malformed or mismatching trace file; the message is one line."""


@dataclass(frozen=True)
class Trace:
    meta: Mapping[str, Any]
    vars: tuple[str, ...]
    states: tuple[Mapping[str, Any], ...]   # decoded variable values per state
    actions: tuple[tuple, ...]              # actions[i] leads from states[i] to states[i + 1]
    labels: tuple[str, ...] = field(default=(), compare=False)  # readable actions, as read
    loop: int | None = None                 # a lasso: the last state steps back to states[loop]
    loop_action: tuple | None = None        # ... by this action (None: it stutters there)

    def __len__(self) -> int:  # number of steps
        return len(self.actions)

    @classmethod
    def from_path(cls, model, path, meta: Mapping[str, Any]) -> "Trace":
        """The trace of a behaviour (anything with ``states`` and ``actions``, and a lasso's
        ``loop``, ``loop_action`` and ``trigger``)."""
        loop = getattr(path, "loop", None)
        if loop is not None:
            meta = {**meta, "trigger": path.trigger}
        return cls.of(model, path.states, path.actions, meta, loop,
                      getattr(path, "loop_action", None))

    @classmethod
    def of(cls, model, states, actions, meta: Mapping[str, Any], loop: int | None = None,
           loop_action: tuple | None = None) -> "Trace":
        encoded = tuple(dict(model.itf_encode(s)) for s in states)
        return cls(dict(meta), tuple(encoded[0]), encoded, tuple(actions), loop=loop,
                   loop_action=loop_action)

    def to_json(self, model=None) -> str:
        """Canonical ITF text. ``model`` (optional) formats actions with parameter names."""
        fmt = model.format_action if model is not None else repr
        states = []
        for i, s in enumerate(self.states):
            meta: dict[str, Any] = {"index": i}
            if i:
                a = self.actions[i - 1]
                if model is not None:
                    a = model.itf_decode_action(a)  # as read from a file: the model's values
                value = model.itf_encode_action(a) if model is not None else a
                meta |= {"action": fmt(a), "action_value": encode(tuple(value))}
            states.append({"#meta": meta, **{k: encode(s[k]) for k in self.vars}})
        meta = {"format": "ITF", "format-description": FORMAT_DESCRIPTION, **self.meta}
        doc = {"#meta": meta, "vars": list(self.vars), "states": states}
        if self.loop is not None:
            doc["loop"] = self.loop
            if self.loop_action is not None:
                a = self.loop_action
                if model is not None:
                    a = model.itf_decode_action(a)
                value = model.itf_encode_action(a) if model is not None else a
                meta |= {"loop_action": fmt(a), "loop_action_value": encode(tuple(value))}
        return json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"

    def write(self, file: str | FsPath, model=None) -> None:
        """Write the trace atomically (``kafka_mc.traces.files``); ``OSError`` if it cannot be."""
        write_atomically(file, self.to_json(model))


def read_bytes(file: str | FsPath) -> bytes:
    """The bytes of a trace file (``kafka_mc.model.config.read_user_file``: a regular file only, never
    blocking on a FIFO, at most ``MAX_TRACE_BYTES``); ``TraceError`` (one line) if unreadable."""
    try:
        return read_user_file(file, MAX_TRACE_BYTES, shown(file), "trace")
    except UserFileError as e:
        raise TraceError(str(e)) from None


def read(file: str | FsPath, data: bytes | None = None) -> Trace:
    """Parse an ITF trace file (or ``data``, its bytes already read); ``TraceError`` (one line)
    when it is not a valid kafka-mc trace."""
    if data is None:
        data = read_bytes(file)
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise TraceError(f"{shown(file)}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise TraceError(f"{shown(file)}: not JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise TraceError(f"{shown(file)}: nested too deeply") from None
    except ValueError as e:  # e.g. an integer literal too long to convert
        raise TraceError(f"{shown(file)}: not valid JSON ({shown(e, 80)})") from None
    try:
        return _parse(doc)
    except ItfError as e:
        raise TraceError(f"{shown(file)}: {e}") from None
    except RecursionError:
        raise TraceError(f"{shown(file)}: nested too deeply") from None


def from_document(doc: Any) -> Trace:
    """A trace from an ITF document already parsed from JSON (an upload); ``TraceError`` (one
    line) when it is not a valid kafka-mc trace."""
    try:
        return _parse(doc)
    except ItfError as e:
        raise TraceError(str(e)) from None
    except RecursionError:
        raise TraceError("nested too deeply") from None


def _parse(doc: Any) -> Trace:
    if not isinstance(doc, dict):
        raise ItfError("the top level must be a JSON object")
    meta, names, states = doc.get("#meta"), doc.get("vars"), doc.get("states")
    if not isinstance(meta, dict):
        raise ItfError("#meta is missing")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ItfError("vars must be a list of names")
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise ItfError(f"vars: {shown(twice, 80)} is listed twice")
    if not isinstance(states, list) or not states:
        raise ItfError("states must be a non-empty list")
    values, actions, labels = [], [], []
    for i, st in enumerate(states):
        if not isinstance(st, dict):
            raise ItfError(f"state {i} is not an object")
        missing = [n for n in names if n not in st]
        if missing:
            raise ItfError(f"state {i} lacks variable {missing[0]}")
        smeta = st.get("#meta", {})
        if not isinstance(smeta, dict):
            raise ItfError(f"state {i}: #meta must be an object")
        if smeta.get("index", i) != i:
            raise ItfError(f"state {i}: its #meta index is {smeta['index']!r} (states reordered?)")
        if i:
            if "action_value" not in smeta:
                raise ItfError(f"state {i} does not record its action")
            a = decode(smeta["action_value"], f"state {i} action")
            if not (isinstance(a, tuple) and a and isinstance(a[0], str)):
                raise ItfError(f"state {i}: action must be a tuple starting with its name")
            actions.append(a)
            labels.append(smeta["action"] if isinstance(smeta.get("action"), str) else "")
        values.append({n: decode(st[n], f"state {i} {n}") for n in names})
    loop, loop_action = doc.get("loop"), None
    if loop is not None:
        if isinstance(loop, bool) or not isinstance(loop, int) or not 0 <= loop < len(states):
            raise ItfError(f"loop must be the index of a state (0..{len(states) - 1})")
        if "loop_action_value" in meta:
            loop_action = decode(meta["loop_action_value"], "loop action")
            if not (isinstance(loop_action, tuple) and loop_action
                    and isinstance(loop_action[0], str)):
                raise ItfError("loop action must be a tuple starting with its name")
        elif loop != len(states) - 1:
            raise ItfError("a loop without a loop_action (stuttering) must be at the last state")
    if "trigger" in meta:   # a lasso's: the state where the leads-to claim's trigger held
        trigger = meta["trigger"]
        if loop is None:
            raise ItfError("#meta trigger: only a lasso (a trace with a loop) has one")
        if isinstance(trigger, bool) or not isinstance(trigger, int) \
                or not 0 <= trigger < len(states):
            raise ItfError(f"#meta trigger must be the index of a state (0..{len(states) - 1}), "
                           f"got {shown(json.dumps(trigger), 80)}")
    skip = ("format", "format-description", "loop_action", "loop_action_value")
    return Trace({k: v for k, v in meta.items() if k not in skip},
                 tuple(names), tuple(values), tuple(actions), tuple(labels), loop, loop_action)


def trace_metadata(cfg, *, property: str, kind: str, claim: str, explorer: str, source: str,
             seed: int | None = None, model=None) -> dict[str, Any]:
    """A trace's ``#meta``: enough to rebuild the model (``config``; the ``protocol`` preset and
    flags are repeated on their own for readers) and to re-check the violation. ``settings``:
    what the configuration meant to the model that wrote it (``ModelBase.settings``, e.g. the
    flags a preset stood for), so replay can refuse a trace whose configuration no longer means
    the same."""
    meta = {"model": cfg.model, "config": cfg.to_dict(), "property": property, "kind": kind,
            "description": claim, "explorer": explorer, "source": source}
    settings = dict(model.settings()) if model is not None else {}
    if settings:
        meta["settings"] = settings
    protocol = meta["config"].get("protocol")
    if protocol:
        meta["protocol"] = protocol
    if seed is not None:
        meta["seed"] = seed
    return meta

