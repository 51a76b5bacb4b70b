"""Counterexamples people can read: a trace as text, a Mermaid sequence diagram, or one HTML page.

Every format first replays the trace (``kafka_mc.traces.replay``), so what is drawn is what the model does
and a tampered file is refused. Then:

* ``text``: TLC-style numbered states (``State 3: TM  commits (broadcasts Commit)``, the step in
  one line and its action below it, then ``/\\ var = value``), within the terminal's width; with
  ``diff``, the first state in full and, after it, only the fields each step changed.
* ``mermaid``: a ``sequenceDiagram``, one participant per lifeline of the model
  (``Model.lifelines``), requests and responses as arrows, internal events as notes, faults in an
  amber box, the violating step in a red box with the violated property.
* ``html``: one self-contained page (no script, no network): the sequence diagram as inline SVG
  drawn here, the violated property in one sentence, and the step table with each step's changes.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from kafka_mc.model import registry
from kafka_mc.model.core import Event
from kafka_mc.traces import explain, layout
from kafka_mc.traces.diff import Change, show, state_changes
from kafka_mc.traces.replay import Replay, replay
from kafka_mc.traces.trace import Trace

FORMATS = ("text", "mermaid", "html", "dot")


@dataclass(frozen=True)
class Step:
    number: int
    action: str
    events: tuple[Event, ...]   # as drawn (``explain.drawn``)
    changes: tuple[Change, ...]
    violating: bool  # the step where the violation shows (the last, when it reproduces)
    actor: str = ""  # the step in one line (``explain.step_line``): who acts, what it does
    said: str = ""


@dataclass(frozen=True)
class Story:
    """A replayed trace, ready to draw."""

    trace: Trace
    result: Replay
    steps: tuple[Step, ...]
    lifelines: tuple[str, ...]
    sentence: str       # the violation in one sentence
    violation: str      # a short label: "TCConsistent violated", "deadlock: ..."
    file: str = ""      # where the trace was read from, for the replay command

    @property
    def loop(self) -> int | None:
        """A lasso's loop start: after state ``loop`` the steps repeat forever."""
        return self.trace.loop

    @property
    def loop_end(self) -> str:
        """What closes the loop: TLC's "Back to state N", or stuttering."""
        t, model = self.trace, self.result.model
        if t.loop_action is None:
            return f"Stuttering: the behaviour stays in state {len(t.states) - 1} forever"
        return (f"Back to state {t.loop}: "
                f"{model.format_action(model.itf_decode_action(t.loop_action))}")

    @property
    def title(self) -> str:
        meta = self.trace.meta
        what = meta.get("kind") if meta.get("kind") in ("deadlock", "model_error") \
            else meta.get("property")
        verdict = "violated" if self.result.reproduced else "no longer violated"
        return f"{what} {verdict}: {meta.get('model')}, {len(self.steps)} steps"


def story(trace: Trace, file: str = "", result: Replay | None = None) -> Story:
    """``result``: the trace's replay, when the caller has it already."""
    result = result or replay(trace)
    model, states, n = result.model, result.states, len(result.actions)
    steps = tuple(
        Step(i, model.format_action(a),
             explain.drawn(explain.events(model, states[i - 1], a, states[i])),
             tuple(state_changes(trace.states[i - 1], trace.states[i], trace.vars)),
             result.reproduced and i == n and trace.loop is None,
             *explain.step_line(model, states[i - 1], a, states[i]))
        for i, a in enumerate(result.actions, start=1))
    lines = list(model.lifelines())
    for e in (e for s in steps for e in s.events):  # a lifeline the model forgot to list
        lines += [x for x in dict.fromkeys((e.source, e.target or e.source)) if x not in lines]
    prop, kind = trace.meta.get("property"), trace.meta.get("kind")
    said = explain.sentence(model, states, result.actions, prop, kind,
                            str(trace.meta.get("description", "")))
    if not result.reproduced:
        said = f"{result.message[:1].upper()}{result.message[1:]}. (The trace claimed: {said})"
    return Story(trace, result, steps, tuple(lines), said, explain.violation_text(prop, kind), file)


def render(trace: Trace, fmt: str, diff: bool = False, file: str = "") -> str:
    s = story(trace, file)
    return {"text": lambda: text(s, diff), "mermaid": lambda: mermaid(s),
            "html": lambda: page(s), "dot": lambda: dot(s)}[fmt]()


def dot(s: Story) -> str:
    """The trace as a Graphviz digraph (through networkx and pydot): a node per state, an edge
    per step labelled with its action; a lasso's closing step goes back to its loop start."""
    import networkx as nx

    g = nx.MultiDiGraph(name=s.title)
    for i in range(len(s.trace.states)):
        g.add_node(i, label=f"state {i}")
    for step in s.steps:
        g.add_edge(step.number - 1, step.number, label=step.action,
                   **({"color": "red"} if step.violating else {}))
    if s.loop is not None:
        last = len(s.trace.states) - 1
        label = s.loop_end.split(": ", 1)[-1] if s.trace.loop_action is not None else "stutter"
        g.add_edge(last, s.loop, label=label, style="dashed")
    return nx.nx_pydot.to_pydot(g).to_string()


def config_text(meta) -> str:
    """What the trace's configuration sets beyond the defaults
    (``kafka_mc.model.registry.summary``)."""
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    values = {f"{sec}.{k}": tuple(v) if isinstance(v, list) else v
              for sec, body in config.items() if sec != "check" and isinstance(body, dict)
              for k, v in body.items() if (sec, k) != ("model", "name")}
    return registry.summary(str(meta.get("model")), values)


# --- text -----------------------------------------------------------------------------------------

def text(s: Story, diff: bool = False, width: int | None = None) -> str:
    """TLC's numbered states within ``width`` (the terminal's, ``layout.columns``): each step
    headed by its one-line form (``State 17: leader-0  Produce(...) from p0 -> ...``) and its
    action in full, then every variable (``/\\ name = value``, laid out on as many lines as it
    needs), or with ``diff`` only what the step changed."""
    t, width = s.trace, width or layout.columns()
    out = layout.wrap(f"{s.title} ({config_text(t.meta)}), found by "
                      f"{t.meta.get('explorer', '?')}", width, 2)
    out += layout.wrap(s.sentence, width, 0) + ["", "State 0: initial state"]
    out += [ln for n in t.vars for ln in layout.value_lines(t.states[0][n], width, 0,
                                                            f"/\\ {n} = ")]
    if s.loop == 0:
        out.append(LOOP_TEXT)
    for step in s.steps:
        mark = f"  {explain.MARK}{s.violation}" if step.violating else ""
        head = f"State {step.number}: " + (f"{step.actor}  " if step.actor else "")
        out += ["", *layout.wrap(step.said + mark, width, len(head), head)]
        if step.actor or step.said != step.action:
            out += layout.wrap(step.action, width, 11, "   action: ")
        if diff:
            out += [ln for c in step.changes for ln in layout.change_lines(c, width, 3)] \
                or ["   (no change)"]
        else:
            out += [ln for n in t.vars
                    for ln in layout.value_lines(t.states[step.number][n], width, 0,
                                                 f"/\\ {n} = ")]
        if step.number == s.loop:
            out.append(LOOP_TEXT)
    if s.loop is not None:
        out += ["", *layout.wrap(s.loop_end, width, 2)]
    return "\n".join(out) + "\n"


LOOP_TEXT = "-- the loop starts here: from this state on the behaviour repeats forever --"


# --- mermaid --------------------------------------------------------------------------------------

_MERMAID_ESCAPES = {"#": "#35;", ";": "#59;", "<": "#lt;", ">": "#gt;", "\n": " ", "\r": " "}


def _m(label: str) -> str:
    return "".join(_MERMAID_ESCAPES.get(c, c) for c in label)


def mermaid(s: Story) -> str:
    ids = {name: f"L{i}" for i, name in enumerate(s.lifelines)}
    meta = s.trace.meta
    out = ["sequenceDiagram",
           f"    %% {_m(s.title)} ({_m(config_text(meta))}), drawn by kafka-mc render"]
    out += [f"    participant {ids[n]} as {_m(n)}" for n in s.lifelines]
    if s.loop == 0:
        out.append("    loop repeats forever")
    for step in s.steps:
        if step.violating:
            out.append("    rect rgb(255, 225, 225)")
        for e in step.events:
            label = _m(f"{step.number}. {e.label}")
            src, dst = ids[e.source], ids.get(e.target)
            if e.kind in ("request", "response") and dst and dst != src:
                out.append(f"    {src}{'->>' if e.kind == 'request' else '-->>'}{dst}: {label}")
            elif e.kind == "fault":
                out += ["    rect rgb(255, 240, 200)",
                        f"    Note over {_over(src, dst)}: FAULT {label}", "    end"]
            else:
                out.append(f"    Note over {_over(src, dst)}: {label}")
        if step.violating:
            span = _over(ids[s.lifelines[0]], ids[s.lifelines[-1]])
            out += [f"    Note over {span}: {_m(s.violation)}", "    end"]
        if step.number == s.loop:
            out.append("    loop repeats forever")
    if s.loop is not None:
        span = _over(ids[s.lifelines[0]], ids[s.lifelines[-1]])
        out += [f"    Note over {span}: {_m(s.loop_end)}", "    end"]
    return "\n".join(out) + "\n"


def _over(a: str, b: str | None) -> str:
    return f"{a},{b}" if b and b != a else a


# --- html -----------------------------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1d2330; max-width: 1400px; }
h1 { font-size: 1.4em; margin-bottom: .2em; } .bad { color: #b00020; } .ok { color: #1b7a2f; }
.sentence { font-size: 1.1em; background: #fff4f4; border-left: 4px solid #b00020;
            padding: .6em 1em; }
.clean .sentence { background: #f2fbf4; border-left-color: #1b7a2f; }
dl { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; font-size: .9em; }
dt { color: #5b6475; } dd { margin: 0; } code { font: 12px ui-monospace, monospace; }
.diagram { overflow-x: auto; border: 1px solid #dde1e8; padding: .5em; background: #fcfcfd; }
table { border-collapse: collapse; width: 100%; margin-top: 1em; }
th, td { border-bottom: 1px solid #e4e7ec; padding: .35em .6em; text-align: left;
         vertical-align: top; }
th { background: #f3f5f8; } tr.violation td { background: #ffe6e6; }
tr.loop td { background: #eef3ff; } tr.loop-start td, tr.loop-end td { font-weight: bold; color: #24478f; }
td.changes code { display: block; white-space: pre-wrap; }
details summary { cursor: pointer; color: #5b6475; font-size: .85em; }
"""


def page(s: Story) -> str:
    t, e = s.trace, html.escape
    meta = t.meta
    rows = [("model", meta.get("model")), ("configuration", config_text(meta)),
            ("property", f"{meta.get('property')} ({meta.get('kind')})"),
            ("explorer", meta.get("explorer")), ("seed", meta.get("seed")),
            ("minimized from", meta.get("minimized_from")), ("steps", len(s.steps)),
            ("replay", f"kafka-mc replay {s.file or 'TRACE'} --diff"),
            ("written by", meta.get("source"))]
    head = "".join(f"<dt>{e(k)}</dt><dd>{e(str(v))}</dd>" for k, v in rows if v not in (None, ""))
    body = [f"<h1 class=\"{'bad' if s.result.reproduced else 'ok'}\">{e(s.title)}</h1>",
            f"<p class=\"sentence\">{e(s.sentence)}</p>", f"<dl>{head}</dl>",
            "<h2>Sequence diagram</h2>", f"<div class=\"diagram\">{svg(s)}</div>",
            "<h2>Steps</h2>", _table(s)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(s.title)}</title><style>{CSS}</style></head>\n"
            f"<body class=\"{'violation' if s.result.reproduced else 'clean'}\">\n"
            + "\n".join(body) + "\n</body></html>\n")


def _table(s: Story) -> str:
    t, e = s.trace, html.escape

    def full(i):
        return "".join(f"<code>{e(n)} = {e(show(t.states[i][n]))}</code>" for n in t.vars)

    out = ["<table><tr><th>#</th><th>action</th><th>events</th><th>changes</th></tr>",
           "<tr><td>0</td><td>initial state</td><td></td>"
           f"<td class=\"changes\">{full(0)}</td></tr>"]
    for step in s.steps:
        changes = "".join(f"<code>{e(str(c))}</code>" for c in step.changes) or "(no change)"
        row = ('<tr class="violation">' if step.violating else
               '<tr class="loop">' if s.loop is not None and step.number > s.loop else "<tr>")
        out.append(
            f"{row}<td>{step.number}</td>"
            f"<td><code>{e(step.action)}</code></td>"
            f"<td>{'<br>'.join(e(explain.event_text(ev)) for ev in step.events)}</td>"
            f"<td class=\"changes\">{changes}<details><summary>state {step.number}</summary>"
            f"{full(step.number)}</details></td></tr>")
        if step.number == s.loop:
            out.append(f'<tr class="loop-start"><td colspan="4">{e(LOOP_TEXT)}</td></tr>')
    if s.loop is not None:
        if s.loop == 0:
            out.insert(2, f'<tr class="loop-start"><td colspan="4">{e(LOOP_TEXT)}</td></tr>')
        out.append(f'<tr class="loop-end"><td colspan="4">{e(s.loop_end)}</td></tr>')
    return "\n".join(out) + "</table>"


# The SVG: lifelines as columns (as wide as the longest label needs over the columns it spans,
# within bounds), one row per event, step numbers in the left margin; labels too long for their
# room end in "…" and show in full as a tooltip.
ROW, TOP, LEFT, CHAR = 34, 54, 44, 7.0  # px; CHAR: the width of a 12px character
MIN_COL, MAX_COL = 140, 320


def svg(s: Story) -> str:
    e = html.escape
    index = {n: i for i, n in enumerate(s.lifelines)}

    def need(ev):  # the column width this event's label asks for, over the columns it spans
        i, j = index[ev.source], index.get(ev.target, index[ev.source])
        span = abs(i - j) + (ev.kind not in ("request", "response") or i == j)
        return ((len(ev.label) + 2) * CHAR + 20) / span

    col = int(max(MIN_COL, min(MAX_COL, max((need(ev) for st in s.steps for ev in st.events),
                                            default=0))))
    x = {n: LEFT + col * i + col // 2 for n, i in index.items()}
    width = LEFT + col * len(s.lifelines) + 10
    rows: list[str] = []
    y = TOP + 20
    for step in s.steps:
        height = ROW * (len(step.events) + step.violating)
        if step.violating:
            rows.append(f'<rect x="2" y="{y - ROW // 2}" width="{width - 4}" height="{height}" '
                        'fill="#ffe1e1" stroke="#b00020" stroke-width="1" rx="4"/>')
        rows.append(f'<text x="10" y="{y + 4}" class="num">{step.number}</text>')
        for ev in step.events:
            rows.append(_svg_event(ev, x, y, col))
            y += ROW
        if step.violating:
            left, right = x[s.lifelines[0]] - col // 2 + 6, x[s.lifelines[-1]] + col // 2 - 6
            rows.append(_svg_box(left, right, y, f"✗ {s.violation}", "#b00020", "#fff", True))
            y += ROW
    height = y + 10
    heads = "".join(
        f'<line x1="{x[n]}" y1="{TOP}" x2="{x[n]}" y2="{height - 6}" class="life"/>'
        f'<rect x="{x[n] - col // 2 + 8}" y="8" width="{col - 16}" height="{TOP - 22}" rx="4" '
        f'class="head"/><text x="{x[n]}" y="{(TOP - 14) // 2 + 12}" text-anchor="middle" '
        f'class="headtext">{e(_fit(n, col - 20))}<title>{e(n)}</title></text>' for n in s.lifelines)
    style = ("<style>.life{stroke:#9aa3b2;stroke-dasharray:4 4}.head{fill:#eef1f6;stroke:#7b8598}"
             ".headtext{font:600 13px system-ui,sans-serif}.num{font:600 12px system-ui,sans-serif;"
             "fill:#5b6475}.lbl{font:12px system-ui,sans-serif}"
             ".req{stroke:#1d2330;stroke-width:1.4}"
             ".rsp{stroke:#1d2330;stroke-width:1.4;stroke-dasharray:6 4}</style>")
    marker = ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
              'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
              'fill="#1d2330"/></marker></defs>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(s.title)}">'
            + style + marker + heads + "".join(rows) + "</svg>")


def _svg_event(ev: Event, x: dict, y: int, col: int) -> str:
    e = html.escape
    xs, xt = x[ev.source], x.get(ev.target)
    if ev.kind in ("request", "response") and xt is not None and xt != xs:
        cls = "req" if ev.kind == "request" else "rsp"
        room = abs(xt - xs) - 10
        return (f'<line x1="{xs}" y1="{y}" x2="{xt}" y2="{y}" class="{cls}" '
                'marker-end="url(#arrow)"/>'
                f'<text x="{(xs + xt) // 2}" y="{y - 5}" text-anchor="middle" class="lbl">'
                f'{e(_fit(ev.label, room))}<title>{e(explain.event_text(ev))}</title></text>')
    lo, hi = (min(xs, xt), max(xs, xt)) if xt is not None else (xs, xs)
    label, fill = ("⚡ " + ev.label, "#ffe9b0") if ev.kind == "fault" else (ev.label, "#fff8d6")
    return _svg_box(lo - col // 2 + 6, hi + col // 2 - 6, y, label, fill, "#1d2330",
                    title=explain.event_text(ev))


def _svg_box(x0: float, x1: float, y: int, label: str, fill: str, ink: str, bold=False,
             title: str = "") -> str:
    e = html.escape
    weight = "font-weight:600;" if bold else ""
    return (f'<rect x="{x0}" y="{y - 11}" width="{x1 - x0}" height="22" rx="3" fill="{fill}" '
            f'stroke="#c9b458"/><text x="{(x0 + x1) / 2}" y="{y + 4}" text-anchor="middle" '
            f'class="lbl" style="{weight}fill:{ink}">{e(_fit(label, x1 - x0 - 8))}'
            f'<title>{e(title or label)}</title></text>')


def _fit(label: str, room: float) -> str:
    n = max(int(room / CHAR), 4)
    return label if len(label) <= n else label[:n - 1] + "…"
