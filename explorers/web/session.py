"""What ``kafka-mc explore`` serves, without the web: walking a model one chosen action at a time.

A *path* is the list of choices from an initial state: ``[i0, k1, k2, ...]``, the initial state
``i0`` (in ``init_states`` order) and at step ``n`` the ``kn``-th enabled action (in ``actions``
order, the model's deterministic order), as in ``kafka_mc.explorers.core.adapter.follow``. A link to a state is its
path and, to catch a link that no longer means the same state (the model or its configuration
changed: *stale*), the state's fingerprint. Everything is recomputed from the initial state on
each request (the server keeps no per-user state), through ``kafka_mc.model.core`` only:

* ``Explorer.state``: the state rendered per component (``Model.components``), the fields the last
  step changed, the enabled actions with their parameters, every property's verdict here (and, for
  transition properties, on the last step), the breadcrumb and the sequence diagram of the path
  (``kafka_mc.traces.render``);
* ``Explorer.open_trace``: an ITF trace replayed (``kafka_mc.traces.replay``) into a path, with its
  violation's step, its lasso loop (ITF ``"loop": i``) and its diagram;
* ``Explorer.download``: the path as an ITF trace that ``kafka-mc replay`` accepts.

Bad input is an ``ExploreError`` with an HTTP status (4xx) and one line.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from kafka_mc.model import registry
from kafka_mc.model.config import Config, ConfigError, shown
from kafka_mc.model.core import Expectation, Record
from kafka_mc.model.display import show as show_value
from kafka_mc.explorers.core.adapter import key_function
from kafka_mc.traces import render
from kafka_mc.traces.diff import MISSING, Change, key_path, diff, show
from kafka_mc.traces.itf import canonical, encode
from kafka_mc.traces.replay import Replay, execute, model_of, replay, violation_check
from kafka_mc.traces.trace import Trace, TraceError, from_document, trace_metadata

MAX_STEPS = 10_000          # a path longer than this is refused (a forged link)
MAX_SESSIONS = 16           # configurations opened from traces, beyond the one served
MAIN = "main"


class ExploreError(Exception):
    """Bad input: ``status`` (4xx) and a one-line message; ``extra`` goes into the JSON answer."""

    def __init__(self, status: int, message: str, **extra: Any):
        super().__init__(" ".join(message.splitlines()))
        self.status, self.extra = status, extra


@dataclass
class Session:
    """One model bound to one configuration."""

    key: str
    cfg: Config
    model: Any
    label: str
    inits: list = field(default_factory=list)

    def __post_init__(self):
        self.inits = list(self.model.init_states())
        self.fingerprint = key_function(self.model)


def label_of(cfg: Config) -> str:
    values = dict(cfg.values)
    protocol = values.get("protocol.version")
    return f"{cfg.model} ({shown(cfg.source)}{f', protocol {protocol}' if protocol else ''})"


def model_values(cfg: Config) -> tuple:
    """What makes two configurations the same model (the [check] section only selects checks)."""
    return cfg.model, tuple((k, v) for k, v in cfg.values if not k.startswith("check."))


def hex_fp(fp: int) -> str:
    return f"{fp & (2**64 - 1):016x}"


class Explorer:
    def __init__(self, cfg: Config, model=None, trace: bytes | None = None):
        self.lock = threading.Lock()
        self.sessions: dict[str, Session] = {}
        main = Session(MAIN, cfg, model if model is not None else registry.bind(cfg),
                       label_of(cfg))
        self.sessions[MAIN] = main
        self.preloaded = self.open_trace(trace, MAIN) if trace is not None else None

    # --- sessions -------------------------------------------------------------------------------

    def session(self, key: str | None) -> Session:
        with self.lock:
            s = self.sessions.get(key or MAIN)
        if s is None:
            raise ExploreError(404, f"unknown configuration {shown(key, 40)!r}: it was opened "
                                    "from a trace on a server since restarted; open the trace "
                                    "again")
        return s

    def adopt(self, cfg: Config, model) -> Session:
        digest = hashlib.sha256(canonical(encode(model_values(cfg))).encode()).hexdigest()[:12]
        key = f"t{digest}"
        with self.lock:
            if key not in self.sessions:
                if len(self.sessions) > MAX_SESSIONS:   # forget the oldest opened from a trace
                    del self.sessions[next(k for k in self.sessions if k != MAIN)]
                self.sessions[key] = Session(key, cfg, model, label_of(cfg))
            return self.sessions[key]

    def sessions_json(self) -> list[dict]:
        with self.lock:
            return [{"key": s.key, "label": s.label, "model": s.cfg.model}
                    for s in self.sessions.values()]

    # --- walking --------------------------------------------------------------------------------

    def walk(self, s: Session, path: Sequence[int]) -> tuple[list, list]:
        model = s.model
        if not path:
            path = [0]
        if not 0 <= path[0] < len(s.inits):
            raise ExploreError(400, f"path: the model has {len(s.inits)} initial state(s), "
                                    f"there is no initial state {path[0]}")
        states, actions = [s.inits[path[0]]], []
        for n, k in enumerate(path[1:], start=1):
            enabled = _call(n, lambda: list(model.actions(states[-1])))
            if not 0 <= k < len(enabled):
                raise ExploreError(400, f"path step {n}: there is no action {k} there "
                                        f"({len(enabled)} enabled): the link is stale or forged")
            a = enabled[k]
            actions.append(a)
            states.append(_call(n, lambda: model.step(states[-1], a)))
        return states, actions

    def state(self, key: str | None, path: Sequence[int], fp: str | None = None) -> dict:
        s = self.session(key)
        model = s.model
        path = list(path) or [0]
        states, actions = self.walk(s, path)
        here = states[-1]
        fingerprint = hex_fp(s.fingerprint(here))
        if fp is not None and fp.lower() != fingerprint:
            raise ExploreError(409, f"stale link: its path now reaches state {fingerprint}, not "
                                    f"{shown(fp, 20)} (the model or its configuration changed "
                                    "since the link was made)", fingerprint=fingerprint)
        enabled = _call(len(actions), lambda: list(model.actions(here)))
        before = _call(len(actions) - 1, lambda: model.components(states[-2])) if actions else None
        after = _call(len(actions), lambda: model.components(here))
        changes = [c for name in after for c in diff(before.get(name, MISSING), after[name], name)
                   ] if before is not None else []
        verdicts = properties(model, states[-2] if actions else None,
                              actions[-1] if actions else None, here, bool(enabled))
        violated = next((v for v in verdicts if v["verdict"] == "violated"), None)
        return {
            "session": s.key, "label": s.label, "model": model.name, "path": path,
            "fingerprint": fingerprint,
            "crumbs": [{"step": n, "action": model.format_action(a),
                        "fingerprint": hex_fp(s.fingerprint(t))}
                       for n, (a, t) in enumerate(zip(actions, states[1:]), start=1)],
            "components": [{"name": name, "tree": tree(value, name, changes)}
                           for name, value in after.items()],
            "changes": [str(c) for c in changes],
            "actions": [action_json(model, k, a) for k, a in enumerate(enabled)],
            "properties": verdicts,
            "within_bounds": _call(len(actions), lambda: bool(model.within_bounds(here))),
            "violated": violated["name"] if violated else None,
            "diagram": diagram(model, states, actions, violated) if actions else "",
        }

    # --- traces ---------------------------------------------------------------------------------

    def open_trace(self, data: bytes, key: str | None, adopt: bool = False,
                   name: str | None = None) -> dict:
        """A trace (ITF bytes) as a path in its configuration's session: the one ``key`` names
        when the trace is of the same model and configuration, else (``adopt``) one opened for
        the trace's configuration; without ``adopt`` a trace of another one is refused (409)."""
        current = self.session(key)
        try:
            doc = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise ExploreError(400, "the trace is not UTF-8 text") from None
        except (json.JSONDecodeError, RecursionError) as e:
            where = f" ({e.msg} at line {e.lineno})" if isinstance(e, json.JSONDecodeError) else ""
            raise ExploreError(400, f"the trace is not JSON{where}") from None
        except ValueError as e:
            raise ExploreError(400, f"the trace is not valid JSON ({e})") from None
        try:
            trace = from_document(doc)
            model = model_of(trace)
            cfg = registry.from_dict(trace.meta["config"],
                                     source=f"trace {shown(name, 60)}" if name else "a trace")
        except (TraceError, ConfigError) as e:
            raise ExploreError(422, f"cannot open the trace: {e}") from None
        loop = trace.loop   # a lasso's (checked by the parser: a state's index)
        if model_values(cfg) != model_values(current.cfg):
            if not adopt:
                raise ExploreError(409, f"this trace is of {label_of(cfg)}, not of the "
                                        f"configuration explored here, {current.label}",
                                   adopt=label_of(cfg))
            current = self.adopt(cfg, model)
        try:
            model, states, actions = execute(trace)
        except TraceError as e:   # includes Divergence: the file and the model part ways
            raise ExploreError(422, f"the trace does not replay: {e}") from None
        path = [current.inits.index(states[0])]
        for n, (s, a) in enumerate(zip(states, actions), start=1):
            path.append(list(current.model.actions(s)).index(a))
        prop, kind = trace.meta.get("property"), trace.meta.get("kind")
        try:
            if kind == "eventually":   # a lasso: the loop closes, is fair, the claim fails
                replayed = replay(trace)
                reproduced, message = replayed.reproduced, replayed.message
            else:
                test = violation_check(model, prop, kind)
                reproduced = bool(test(states[-2] if actions else None,
                                       actions[-1] if actions else None, states[-1]))
                message = "" if reproduced else "the violation no longer reproduces"
        except TraceError as e:
            reproduced, message = False, f"not re-checked here: {e}"
        result = Replay(reproduced, len(actions), message, model, tuple(states), tuple(actions))
        st = render.story(trace, result=result)
        return {"session": current.key, "label": current.label, "path": path,
                "property": prop, "kind": kind, "title": st.title, "sentence": st.sentence,
                "steps": [model.format_action(a) for a in actions],
                "violation_step": len(actions) if reproduced else None, "loop": loop,
                "message": message, "svg": render.svg(st), "mermaid": render.mermaid(st)}

    def download(self, key: str | None, path: Sequence[int]) -> tuple[str, str]:
        """(file name, ITF text) of the path: the property it violates at its end, if any (replay
        then reproduces it), else the model's first invariant (replay then says it holds)."""
        s = self.session(key)
        model = s.model
        states, actions = self.walk(s, list(path) or [0])
        verdicts = properties(model, states[-2] if actions else None,
                              actions[-1] if actions else None, states[-1], True)
        bad = next((v for v in verdicts if v["verdict"] == "violated"
                    and v["kind"] in ("always", "transition")), None)
        first = next((p for p in model.properties() if p.expectation is Expectation.ALWAYS), None)
        if bad is not None:
            prop, kind, claim = bad["name"], bad["kind"], bad["claim"]
        elif first is not None:
            prop, kind, claim = first.name, "always", first.claim
        else:
            prop, kind, claim = "deadlock", "deadlock", "some action is enabled"
        meta = trace_metadata(s.cfg, property=prop, kind=kind, claim=claim, explorer="explore",
                              source="kafka-mc explore", model=model)
        text = Trace.of(model, states, actions, meta).to_json(model)
        name = f"{model.name}-{prop if bad else 'path'}-{len(actions)}.itf.json"
        return name, text


def _call(n: int, call):
    try:
        return call()
    except Exception as e:  # model code failing: a clear answer, not a server error
        raise ExploreError(422, f"step {n}: the model raised {type(e).__name__}: {e}") from None


def action_json(model, index: int, a: tuple) -> dict:
    names = list(model.action_params.get(a[0], ()))
    names += [f"arg{i}" for i in range(len(names), len(a) - 1)]
    return {"index": index, "name": a[0], "label": model.format_action(a),
            "params": [{"name": n, "value": show_value(v)} for n, v in zip(names, a[1:])]}


def properties(model, before, action, after, enabled: bool) -> list[dict]:
    """Every property's verdict in ``after`` (reached from ``before`` by ``action``, or initial)."""
    out = []
    for p in model.properties():
        kind = p.expectation
        try:
            if kind is Expectation.ALWAYS:
                verdict = "holds" if p.holds(after) else "violated"
            elif kind is Expectation.TRANSITION:
                verdict = ("no step yet" if action is None else
                           "holds" if p.holds(before, action, after) else "violated")
            elif kind is Expectation.SOMETIMES:
                verdict = ("not applicable" if p.applies is not None and not p.applies() else
                           "witnessed" if p.holds(after) else "not witnessed here")
            elif kind is Expectation.TERMINAL:
                verdict = ("not terminal" if enabled else
                           "holds" if p.holds(after) else "violated")
            else:
                verdict = "liveness (state graph)"
        except Exception as e:  # a property raising is the model's error, shown, not fatal
            verdict = f"error: {type(e).__name__}: {e}"
        out.append({"name": p.name, "kind": kind.value, "claim": p.claim, "verdict": verdict})
    return out


def tree(value: Any, path: str, changes: Sequence[Change]) -> dict:
    """A component value as nested nodes ``{t, c | v, ch}`` for the page: ``t`` the type (rec,
    map, seq, set, or a scalar), ``c`` the children ``[key, node]``, ``v`` the scalar as text,
    ``ch`` 2 where the last step changed this very value, 1 where it changed something inside."""
    exact = {c.path for c in changes}
    gained = {c.path: c.after for c in changes if c.is_set}

    def node(v: Any, p: str) -> dict:
        ch = 2 if p in exact else 1 if any(q.startswith(p + ".") or q.startswith(p + "[")
                                           for q in exact) else 0
        if isinstance(v, dict):
            keys = (list(v) if isinstance(v, Record)
                    else sorted(v, key=lambda k: canonical(encode(k))))
            named = all(isinstance(k, str) for k in keys)
            kids = [[k if isinstance(k, str) else show(k), node(v[k], key_path(p, k))]
                    for k in keys]
            return {"t": "rec" if named and isinstance(v, Record) else "map", "c": kids, "ch": ch}
        if isinstance(v, tuple):
            return {"t": "seq", "c": [[str(i), node(x, f"{p}[{i}]")] for i, x in enumerate(v)],
                    "ch": ch}
        if isinstance(v, frozenset):
            new = gained.get(p, frozenset())
            kids = [["", {**node(x, f"{p}{{}}"), "ch": 2 if x in new else 0}]
                    for x in sorted(v, key=lambda x: canonical(encode(x)))]
            return {"t": "set", "c": kids, "ch": ch}
        return {"t": type(v).__name__, "v": v if isinstance(v, str) else show(v), "ch": ch}

    return node(value, path)


def diagram(model, states: Sequence, actions: Sequence, violated: Mapping | None) -> str:
    """The path as ``kafka-mc render``'s sequence diagram (SVG), the violation boxed at its end."""
    meta = {"model": model.name, "property": violated["name"] if violated else None,
            "kind": violated["kind"] if violated else None}
    trace = Trace.of(model, states, actions, meta)
    result = Replay(violated is not None, len(actions), "", model, tuple(states), tuple(actions))
    return render.svg(render.story(trace, result=result))


def parse_path(text: str | None) -> list[int]:
    """``"0.3.1"`` -> ``[0, 3, 1]``; a malformed one is a 400."""
    if text is None or text == "":
        return [0]
    parts = text.split(".")
    if len(parts) > MAX_STEPS + 1 or not all(p.isascii() and p.isdigit() and len(p) <= 6
                                             for p in parts):
        raise ExploreError(400, f"path {shown(text, 40)!r} is not a list of choices such as "
                                f"0.3.1 (at most {MAX_STEPS} steps)")
    return [int(p) for p in parts]
