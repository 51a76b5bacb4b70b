"""A real run's timeline: one self-contained HTML page (inline SVG, no script, no network) that
draws a recorded run folder on one time axis (``kafka-mc real timeline RUN_DIR``).

One horizontal lane per participant, in this order: each client (a ``history.jsonl`` process or a
``client_id`` that talks to a broker's CLIENT listener: ``t0.i0``, ``c0``, ``admin``,
``reader-read_committed``), each broker's own senders (``broker-1-txn-marker-sender``,
``AddPartitionsManager-client-1``: client ids seen only on a broker's INTERNAL listener), then the
proxy's view of each broker endpoint (``broker-1/CLIENT``: its connections, opened to closed).
The x axis is the run's clock (ns from the run's start, shared by the proxy's ``events.jsonl``
and the client's ``history.jsonl``), drawn linearly.

* Each request is one mark on its sender's lane (``data-kind="request"``), a bar from the request
  to its response, the two joined by (endpoint, conn, correlation_id) as Kafka's
  ``NetworkClient`` joins them; labelled by its API (``EndTxn(commit)``; a WriteTxnMarkers
  request by its markers' ``transaction_result``: COMMIT or ABORT, drawn in their own colours).
  A request no response answered is drawn to the last event's time, hatched.
* A fault the proxy applied to the request or its response (``fault`` not null: ``drop``,
  ``hold`` for a delay, ``duplicate``) outlines the mark in the fault's colour
  (``data-fault``); a response carrying error codes is outlined dark (``data-errors``).
* The client history: each operation a thin bar above the lane's requests (invocation to its
  completion; ``data-kind="operation"``), and each transaction's outcome
  (``commit_transaction``/``abort_transaction`` ok, fail or info) a diamond at its completion
  (``data-kind="outcome"``).
* Every mark has a ``<title>`` tooltip (its seq and essentials) and ``data-seq``,
  ``data-api``, ``data-lane`` attributes a test can count.

The page's header names the release, preset, seed, brokers, the command that made the run (its
manifest), the run's anomaly verdict (``report.json``) and conformance verdict
(``conformance.json``, when ``real conform`` validated it), and what is missing of an
incomplete run. Same folder, same bytes. Bounded: at most ``MAX_REQUESTS`` requests,
``MAX_OPERATIONS`` client operations and ``MAX_CONNECTIONS`` connections are drawn (the first,
in time order; the header says how many were left out), and the drawing at most ``MAX_WIDTH``
pixels wide (it scrolls inside its own box).
"""
from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path

from kafka_mc.model.config import shown
from kafka_mc.realkafka.runfolder import files as fs, manifest
from kafka_mc.realkafka.runfolder.files import FolderError
from kafka_mc.realkafka.runfolder.reader import MAX_LINES, Recorded, read
from kafka_mc.realkafka.runfolder.schema import ANY, REPORT

NAME = "timeline.html"
MAX_REQUESTS, MAX_OPERATIONS, MAX_CONNECTIONS = 5000, 5000, 2000
MIN_WIDTH, MAX_WIDTH, PX_PER_REQUEST = 1300, 24000, 30
LEFT, RIGHT, TOP = 230, 40, 34          # the lanes' names; the margin; the time axis
ROW, GAP = 16, 8                        # a row of marks; between lanes
LABEL_PX = 6                            # a label's character, about (10 px sans-serif)

API_COLOURS = {"Produce": "#4e79a7", "Fetch": "#76b7b2", "InitProducerId": "#b07aa1",
               "AddPartitionsToTxn": "#f28e2b", "AddOffsetsToTxn": "#edc948",
               "TxnOffsetCommit": "#9c755f", "EndTxn": "#59a14f", "FindCoordinator": "#bab0ac",
               "Metadata": "#d4d4d4", "ApiVersions": "#e5e5e5", "ListOffsets": "#a0cbe8",
               "DescribeTransactions": "#ffbe7d", "DescribeProducers": "#8cd17d",
               "OffsetFetch": "#86bcb6", "OffsetCommit": "#f1ce63", "JoinGroup": "#d37295",
               "SyncGroup": "#fabfd2", "Heartbeat": "#d7b5a6", "CreateTopics": "#79706e"}
OTHER_API = "#c9c9c9"
MARKER_COLOURS = {"COMMIT": "#1a7f37", "ABORT": "#b42318"}
FAULT_COLOURS = {"drop": "#e00000", "hold": "#ff8c00", "duplicate": "#8a2be2"}
OTHER_FAULT, ERROR_OUTLINE = "#e00000", "#222222"
OUTCOME_COLOURS = {"commit ok": "#1a7f37", "abort ok": "#b42318", "fail": "#000000",
                   "info": "#7f7f7f"}
CONFORMANCE = "conformance.json"
KINDS = {"client": "client", "broker": "a broker's own sender", "endpoint": "the proxy's view: "
         "connections"}


@dataclass(frozen=True)
class Exchange:
    """A request and what answered it: its response's events (the first forwarded or dropped,
    a held one's release), the proxy's later events of the request itself (released, its
    duplicate's copy), the fault applied to either (None: none)."""

    request: dict
    responses: tuple
    again: tuple
    fault: dict | None

    @property
    def end(self) -> int | None:
        times = [e["time"] for e in self.responses if e.get("action") != "held"]
        return max(times) if times else None

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(sorted({x["name"] for e in self.responses for x in e.get("errors") or ()}))

    @property
    def markers(self) -> tuple[str, ...]:
        """A WriteTxnMarkers request's markers, COMMIT or ABORT (``transaction_result``)."""
        if self.request.get("api") != "WriteTxnMarkers":
            return ()
        return tuple("COMMIT" if m.get("transaction_result") else "ABORT"
                     for m in (self.request.get("fields") or {}).get("markers") or ()
                     if isinstance(m, dict))

    @property
    def label(self) -> str:
        if self.markers:
            return "/".join(dict.fromkeys(self.markers))
        api = self.request.get("api") or f"api {self.request.get('api_key')}"
        committed = (self.request.get("fields") or {}).get("committed")
        if api == "EndTxn" and isinstance(committed, bool):
            return f"EndTxn({'commit' if committed else 'abort'})"
        return api


@dataclass(frozen=True)
class Operation:
    """A client call of the history: its invocation and completion (None: none recorded)."""

    invoke: dict
    completion: dict | None

    @property
    def outcome(self) -> str | None:
        """A transaction's outcome: ``commit ok``, ``abort ok``, ``fail``, ``info`` (None: not a
        commit or abort, or not completed)."""
        f, done = self.invoke["f"], self.completion
        if f not in ("commit_transaction", "abort_transaction") or done is None:
            return None
        return f"{f.split('_')[0]} ok" if done["type"] == "ok" else done["type"]


def exchanges(events) -> list[Exchange]:
    """The run's requests, each joined to its response by (endpoint, conn, correlation_id), in
    the order the proxy saw the requests."""
    first: dict[tuple, dict] = {}
    responses: dict[tuple, list] = {}
    again: dict[tuple, list] = {}
    for e in events:
        if e["direction"] == "connection" or e.get("correlation_id") is None:
            continue
        key = (e["endpoint"], e["conn"], e["correlation_id"])
        if e["direction"] == "request":
            if key not in first:
                first[key] = e
            else:
                again.setdefault(key, []).append(e)
        elif key in first:
            responses.setdefault(key, []).append(e)
    out = []
    for key, req in first.items():
        rs, ag = tuple(responses.get(key, ())), tuple(again.get(key, ()))
        fault = next((e["fault"] for e in (req, *ag, *rs) if e.get("fault")), None)
        out.append(Exchange(req, rs, ag, fault))
    return out


def operations(history) -> list[Operation]:
    """The history's calls: each invocation joined to the next completion of the same process
    and function (a process's calls of one function complete in order)."""
    pending: dict[tuple, list] = {}
    out: list[list] = []
    for h in history:
        key = (h.get("process"), h["f"])
        if h["type"] == "invoke":
            slot = [h, None]
            out.append(slot)
            pending.setdefault(key, []).append(slot)
        elif pending.get(key):
            pending[key].pop(0)[1] = h
    return [Operation(i, c) for i, c in out]


def lanes(exs, ops, conns=()) -> list[tuple[str, str]]:
    """(name, kind) of each lane: ``client``, ``broker`` (a broker's own sender), ``endpoint``."""
    clients: dict[str, None] = {}
    internal: dict[str, None] = {}
    for op in ops:
        clients.setdefault(_lane_of(op.invoke.get("process")))
    for x in exs:
        cid = _lane_of(x.request.get("client_id"))
        (clients if x.request["endpoint"].endswith("/CLIENT") else internal).setdefault(cid)
    endpoints = sorted({x.request["endpoint"] for x in exs} | {c[0]["endpoint"] for c in conns})
    return ([(c, "client") for c in clients]
            + [(c, "broker") for c in internal if c not in clients]
            + [(e, "endpoint") for e in endpoints])


def _lane_of(name) -> str:
    return name if name else "(no client id)"


def connections(events) -> list[tuple[dict, dict | None]]:
    """Each connection the proxy saw: its ``opened`` (or first) event and its ``closed`` one."""
    opened: dict[tuple, list] = {}
    for e in events:
        if e["direction"] != "connection":
            continue
        key = (e["endpoint"], e["conn"])
        if key not in opened:
            opened[key] = [e, None]
        elif e.get("action") in ("closed", "refused"):
            opened[key][1] = e
    return [tuple(v) for v in opened.values()]


# --- the page ---------------------------------------------------------------------------------

def page(folder: str | os.PathLike, flag: str = "RUN_DIR") -> str:
    """The timeline of the run folder ``folder``, read by the one reader of run folders (the
    part that exists of an incomplete run, said in the header)."""
    recorded = read(folder, partial=True, flag=flag)
    report = fs.read_json(recorded.folder, "report.json", MAX_LINES, REPORT)
    verdict = fs.read_json(recorded.folder, CONFORMANCE, MAX_LINES, {"verdict": str, ...: ANY})
    return render(recorded, report, verdict, manifest.read(recorded.folder))


def render(recorded: Recorded, report: dict | None = None, verdict: dict | None = None,
           doc: dict | None = None) -> str:
    """The page (see the module docstring) of a run as read."""
    exs_all, ops_all = exchanges(recorded.events), operations(recorded.history)
    conns_all = connections(recorded.events)
    exs, ops = exs_all[:MAX_REQUESTS], ops_all[:MAX_OPERATIONS]
    conns = conns_all[:MAX_CONNECTIONS]
    times = [e["time"] for e in recorded.events] + [h["time"] for h in recorded.history]
    t0, t1 = (min(times), max(times)) if times else (0, 1)
    width = max(MIN_WIDTH, min(MAX_WIDTH, PX_PER_REQUEST * len(exs)))
    scale = _Scale(t0, max(t1, t0 + 1), width)
    lane_list = lanes(exs, ops, conns)
    svg, height = _lanes_svg(lane_list, exs, ops, conns, scale)
    left_out = [f"{len(x) - len(y)} of {len(x)} {what}" for x, y, what in (
        (exs_all, exs, "requests"), (ops_all, ops, "client operations"),
        (conns_all, conns, "connections")) if len(x) > len(y)]
    head = _header(recorded, report, verdict, doc, exs, left_out)
    total = LEFT + width + RIGHT
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{_e(_title(recorded))}</title><style>{_CSS}</style></head>\n",
        f"<body data-requests=\"{len(exs)}\" data-lanes=\"{len(lane_list)}\">\n",
        head, _legend(exs, ops),
        f"<div class=\"scroll\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total}\" "
        f"height=\"{height}\" viewBox=\"0 0 {total} {height}\" font-family=\"sans-serif\" "
        f"font-size=\"10\">\n<defs><pattern id=\"open\" width=\"6\" height=\"6\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"3\" "
        "height=\"6\" fill=\"#999\"/></pattern></defs>\n",
        scale.axis(height), svg, "</svg></div>\n</body></html>\n"])


_CSS = ("body{font-family:sans-serif;margin:12px;color:#222}h1{font-size:18px;margin:0 0 4px}"
        ".meta{font-size:13px;margin:2px 0}.missing{color:#b42318}.scroll{overflow-x:auto;"
        "border:1px solid #ddd}.legend{font-size:12px;margin:8px 0;display:flex;flex-wrap:wrap;"
        "gap:4px 14px}.legend span{white-space:nowrap}.legend svg{vertical-align:middle}"
        ".verdict-conforms{color:#1a7f37}.verdict-diverges{color:#b42318}"
        ".verdict-unknown,.verdict-partial{color:#b26b00}")


def _title(recorded: Recorded) -> str:
    run = recorded.run
    return f"kafka-mc timeline: Kafka {run.get('version')} seed {run.get('seed')}"


def _header(recorded, report, verdict, doc, exs, left_out) -> str:
    run = recorded.run
    brokers = run.get("brokers", 1)
    line = (f"Kafka {run.get('version')}, preset {run.get('preset') or '(not recorded)'}, "
            f"seed {run.get('seed')}, {brokers} broker{'s' if brokers != 1 else ''}")
    faults = sum(1 for x in exs if x.fault)
    markers = sum(len(x.markers) for x in exs)
    counts = (f"{len(recorded.events)} proxy events, {len(exs)} requests drawn, {faults} with a "
              f"fault, {markers} transaction markers; {len(recorded.history)} history records")
    out = [f"<h1>{_e(_title(recorded))}</h1>", f"<p class=\"meta\">{_e(line)}</p>"]
    if doc is not None:
        out.append(f"<p class=\"meta\">run by <code>{_e(doc.get('command', ''))}</code></p>")
    elif not recorded.manifest:
        out.append("<p class=\"meta\">read by its files: recorded before run folders had a "
                   "manifest</p>")
    if report is not None and "verdict" in report:
        anomalies = [a.get("name", "?") for a in report.get("anomalies") or ()
                     if isinstance(a, dict)]
        out.append(f"<p class=\"meta\">anomalies (report.json): {_e(report['verdict'])}"
                   f"{_e(': ' + ', '.join(anomalies)) if anomalies else ''}</p>")
    if verdict is not None:
        v = str(verdict["verdict"])
        extra = ", ".join(f"{k} {verdict[k]}" for k in ("records", "matched", "nodes", "seconds")
                          if k in verdict)
        out.append(f"<p class=\"meta\">conformance ({CONFORMANCE}): <b class=\"verdict-{_e(v)}\" "
                   f"data-verdict=\"{_e(v)}\">{_e(v)}</b> ({_e(extra)})</p>")
    out.append(f"<p class=\"meta\">{_e(counts)}</p>")
    requests = [x.request["time"] for x in exs]
    if recorded.history and requests and \
            max(h["time"] for h in recorded.history) < min(requests):
        out.append("<p class=\"meta missing\">the client history ends before the proxy's first "
                   "request: its clock is not the proxy's (a run recorded before they shared "
                   "one), so the two are not aligned here</p>")
    for why in recorded.missing:
        out.append(f"<p class=\"meta missing\">{_e(why)}</p>")
    if left_out:
        out.append(f"<p class=\"meta missing\">not drawn (the first are): "
                   f"{_e('; '.join(left_out))}</p>")
    return "\n".join(out) + "\n"


def _legend(exs, ops) -> str:
    apis = sorted({x.request.get("api") or "" for x in exs} - {"WriteTxnMarkers", ""})
    items = [(_swatch(API_COLOURS.get(a, OTHER_API)), a) for a in apis]
    items += [(_swatch(MARKER_COLOURS[m]), f"WriteTxnMarkers {m}") for m in MARKER_COLOURS]
    items += [(_swatch("#fff", FAULT_COLOURS[f]), f"fault: {f}") for f in FAULT_COLOURS]
    items += [(_swatch("#fff", ERROR_OUTLINE), "response with an error code"),
              (_swatch("url(#open)"), "no response"),
              (_swatch("#555", height=4), "client operation (history)"),
              (_swatch("#9ab", height=6), "connection (proxy)")]
    items += [(_diamond(c), f"transaction {o}") for o, c in OUTCOME_COLOURS.items()]
    return ("<div class=\"legend\">"
            + "".join(f"<span>{s} {_e(t)}</span>" for s, t in items) + "</div>\n")


def _swatch(fill, stroke="none", height=10) -> str:
    pattern = ("<defs><pattern id=\"open\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
               "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"#999\"/>"
               "</pattern></defs>") if fill.startswith("url") else ""
    return (f"<svg width=\"22\" height=\"12\">{pattern}<rect x=\"1\" y=\"{(12 - height) / 2}\" "
            f"width=\"20\" height=\"{height}\" fill=\"{fill}\" stroke=\"{stroke}\" "
            "stroke-width=\"2\"/></svg>")


def _diamond(colour) -> str:
    return (f"<svg width=\"14\" height=\"12\"><path d=\"M7 0L13 6L7 12L1 6Z\" "
            f"fill=\"{colour}\"/></svg>")


class _Scale:
    """Times (ns from the run's start) to x pixels, and the axis with its ticks."""

    def __init__(self, t0: int, t1: int, width: int):
        self.t0, self.span, self.width = t0, t1 - t0, width

    def x(self, t: int) -> float:
        return LEFT + (t - self.t0) * self.width / self.span

    def axis(self, height: int) -> str:
        seconds = self.span / 1e9
        step = next((s for s in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120,
                                 300, 600) if s * self.width / seconds >= 90), 1200)
        out = ["<g class=\"axis\" fill=\"#555\">"]
        n = int(self.t0 / 1e9 / step) + 1
        while n * step * 1e9 <= self.t0 + self.span:
            x = self.x(round(n * step * 1e9))
            out.append(f"<line x1=\"{x:.1f}\" y1=\"{TOP - 6}\" x2=\"{x:.1f}\" y2=\"{height}\" "
                       f"stroke=\"#eee\"/><text x=\"{x:.1f}\" y=\"{TOP - 10}\" "
                       f"text-anchor=\"middle\">{n * step:.2f} s</text>")
            n += 1
        return "".join(out) + "</g>\n"


class _Rows:
    """Marks packed into rows so that none overlaps another (the first row with room)."""

    def __init__(self):
        self.ends: list[float] = []

    def place(self, x0: float, x1: float) -> int:
        for i, end in enumerate(self.ends):
            if end + 2 <= x0:
                self.ends[i] = x1
                return i
        self.ends.append(x1)
        return len(self.ends) - 1


def _lanes_svg(lane_list, exs, ops, conns, scale) -> tuple[str, int]:
    by_lane: dict[str, list] = {name: [] for name, _ in lane_list}
    end_of_run = scale.t0 + scale.span
    for x in exs:
        by_lane[_lane_of(x.request.get("client_id"))].append(("request", x))
    for op in ops:
        by_lane[_lane_of(op.invoke.get("process"))].append(("operation", op))
    for c in conns:
        by_lane[c[0]["endpoint"]].append(("connection", c))
    out, y = [], TOP
    for index, (name, kind) in enumerate(lane_list):
        marks, op_rows, rows = [], _Rows(), _Rows()
        for what, item in by_lane[name]:
            if what == "operation":
                marks.append(("operation", item, op_rows, *_span(
                    scale, item.invoke["time"], item.completion and item.completion["time"],
                    end_of_run, item.invoke["f"])))
            elif what == "request":
                marks.append(("request", item, rows, *_span(scale, item.request["time"], item.end,
                                                              end_of_run, item.label)))
            else:
                opened, closed = item
                marks.append(("connection", item, rows, *_span(
                    scale, opened["time"], closed and closed["time"], end_of_run, "")))
        placed = [(what, item, group.place(x0, max(x1, x0 + len(label) * LABEL_PX)), x0, x1)
                  for what, item, group, x0, x1, label in marks]
        op_height = len(op_rows.ends) * 8
        height = max(op_height + max(1, len(rows.ends)) * ROW, 24) + GAP
        shade = "#f7f7f7" if index % 2 == 0 else "#ffffff"
        out.append(f"<g class=\"lane\" data-lane=\"{_e(name)}\" data-kind=\"{kind}\">"
                   f"<rect x=\"0\" y=\"{y}\" width=\"{LEFT + scale.width + RIGHT}\" "
                   f"height=\"{height}\" fill=\"{shade}\"/><text x=\"6\" y=\"{y + 13}\" "
                   f"font-size=\"11\" font-weight=\"bold\"><title>{_e(name)}</title>"
                   f"{_e(name[:34])}</text><text x=\"6\" y=\"{y + 24}\" font-size=\"9\" "
                   f"fill=\"#777\">{KINDS[kind]}</text>")
        for what, item, row, x0, x1 in placed:
            if what == "operation":
                out.append(_operation(item, name, x0, x1, y + 2 + row * 8))
            elif what == "request":
                out.append(_request(item, name, x0, x1, y + op_height + 2 + row * ROW))
            else:
                out.append(_connection(item, name, x0, x1, y + 2 + row * ROW))
        out.append("</g>\n")
        y += height
    return "".join(out), y + 10


def _span(scale, start, end, end_of_run, label) -> tuple[float, float, str]:
    x0 = scale.x(start)
    return x0, max(scale.x(end if end is not None else end_of_run), x0 + 3), label


def _seconds(t: int) -> str:
    return f"{t / 1e9:.3f} s"


def _request(x: Exchange, lane: str, x0: float, x1: float, y: float) -> str:
    r = x.request
    marker = x.markers[0] if x.markers else None
    fill = MARKER_COLOURS[marker] if marker else API_COLOURS.get(r.get("api"), OTHER_API)
    end = x.end
    if end is None:
        fill = "url(#open)"
    stroke, dash = "none", ""
    if x.fault:
        stroke = FAULT_COLOURS.get(x.fault.get("kind"), OTHER_FAULT)
    elif x.errors:
        stroke, dash = ERROR_OUTLINE, " stroke-dasharray=\"3 2\""
    attrs = (f"data-seq=\"{r['seq']}\" data-api=\"{_e(r.get('api') or '')}\" "
             f"data-lane=\"{_e(lane)}\" data-kind=\"request\"")
    if marker:
        attrs += f" data-marker=\"{'/'.join(x.markers)}\""
    if x.fault:
        attrs += f" data-fault=\"{_e(x.fault.get('kind', ''))}\""
    if x.errors:
        attrs += f" data-errors=\"{_e(' '.join(x.errors))}\""
    text_fill = "#fff" if marker else "#111"
    label = (f"<text x=\"{x0 + 2:.1f}\" y=\"{y + 10}\" fill=\"{text_fill if x1 - x0 > 40 else '#111'}\""
             f" pointer-events=\"none\">{_e(x.label)}</text>")
    return (f"<g class=\"mark\" {attrs}><title>{_e(_request_tip(x))}</title>"
            f"<rect x=\"{x0:.1f}\" y=\"{y}\" width=\"{x1 - x0:.1f}\" height=\"{ROW - 3}\" "
            f"fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"2\"{dash}/>{label}</g>")


def _request_tip(x: Exchange) -> str:
    r = x.request
    lines = [f"#{r['seq']} {r.get('api')} v{r.get('version')} from {r.get('client_id')} to "
             f"{r['endpoint']} (conn {r['conn']}, correlation id {r.get('correlation_id')}), "
             f"at {_seconds(r['time'])}, {r.get('action')}"]
    essentials = _essentials(r.get("fields") or {})
    if x.markers:
        essentials = f"markers: {', '.join(x.markers)}; {essentials}"
    if essentials:
        lines.append(essentials)
    for e in x.again:
        lines.append(f"#{e['seq']} the request again at {_seconds(e['time'])}: {e.get('action')}")
    for e in x.responses:
        lines.append(f"#{e['seq']} response at {_seconds(e['time'])}: {e.get('action')}"
                     + (f" ({e['reason']})" if e.get("reason") else "")
                     + (f", errors {', '.join(sorted({y['name'] for y in e['errors']}))}"
                        if e.get("errors") else ""))
    if not x.responses:
        lines.append("no response")
    if x.fault:
        lines.append(f"fault {x.fault.get('kind')} ({x.fault.get('id')})")
    return "\n".join(lines)


def _essentials(fields: dict) -> str:
    """A request's top-level scalar fields (transactional_id, producer_id, epoch, committed)."""
    parts = [f"{k}={v}" for k, v in fields.items()
             if isinstance(v, (str, int, float, bool)) or v is None]
    text = ", ".join(parts)
    return text if len(text) <= 240 else text[:237] + "..."


def _operation(op: Operation, lane: str, x0: float, x1: float, y: float) -> str:
    inv, done = op.invoke, op.completion
    end = f"{done['type']} at {_seconds(done['time'])}" if done else "no completion recorded"
    error = f": {done['error']}" if done and done.get("error") else ""
    tip = f"history #{inv['index']} {lane} {inv['f']} at {_seconds(inv['time'])}, {end}{error}"
    colour = {"ok": "#555", "fail": "#b42318", "info": "#b26b00"}.get(
        done["type"] if done else "", "#bbb")
    out = (f"<g class=\"mark\" data-seq=\"h{inv['index']}\" data-api=\"{_e(inv['f'])}\" "
           f"data-lane=\"{_e(lane)}\" data-kind=\"operation\"><title>{_e(tip)}</title>"
           f"<rect x=\"{x0:.1f}\" y=\"{y}\" width=\"{x1 - x0:.1f}\" height=\"5\" "
           f"fill=\"{colour}\"/></g>")
    outcome = op.outcome
    if outcome is not None:
        c = OUTCOME_COLOURS[outcome]
        out += (f"<g class=\"mark\" data-seq=\"h{done['index']}\" data-api=\"{_e(inv['f'])}\" "
                f"data-lane=\"{_e(lane)}\" data-kind=\"outcome\" data-outcome=\"{outcome}\">"
                f"<title>{_e(f'transaction {outcome}: {tip}')}</title><path d=\"M{x1:.1f} "
                f"{y - 2}l6 6l-6 6l-6 -6Z\" fill=\"{c}\" stroke=\"#fff\"/></g>")
    return out


def _connection(conn, lane: str, x0: float, x1: float, y: float) -> str:
    opened, closed = conn
    end = (f"{closed.get('action')} by {closed.get('by', '?')} at {_seconds(closed['time'])}"
           if closed else "open at the end")
    tip = (f"#{opened['seq']} {lane} conn {opened['conn']}: {opened.get('action')} at "
           f"{_seconds(opened['time'])}, {end}")
    return (f"<g class=\"mark\" data-seq=\"{opened['seq']}\" data-api=\"\" data-lane=\"{_e(lane)}\" "
            f"data-kind=\"connection\"><title>{_e(tip)}</title><rect x=\"{x0:.1f}\" "
            f"y=\"{y + 3}\" width=\"{x1 - x0:.1f}\" height=\"6\" fill=\"#9ab\"/>"
            f"<text x=\"{x0 + 2:.1f}\" y=\"{y + 2}\" font-size=\"8\" pointer-events=\"none\">"
            f"conn {opened['conn']}</text></g>")


def _e(text) -> str:
    return html.escape(str(text), quote=True)


# --- writing ----------------------------------------------------------------------------------

def write(folder: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """The timeline of the run folder written to ``out`` (default ``folder/timeline.html``,
    then listed among the folder's outputs in its manifest, so that a rerun replaces it and a
    validation does not take it for a change), whole or not at all; the path written. A
    campaign's folder (``real conform --runs N --out DIR``): each run's timeline written into
    its run folder, and the campaign's page (``campaign_page``) to ``out``."""
    path = fs.folder_path(folder, "RUN_DIR")
    target = path / NAME if out is None else fs.folder_path(out, "--out")
    if out is not None:
        try:
            if not target.parent.is_dir():
                raise FolderError(f"--out {shown(target)}: no such folder {shown(target.parent)}")
            if target.is_dir():
                raise FolderError(f"--out {shown(target)}: is a folder (give a file name)")
        except OSError as e:
            raise FolderError(f"--out {shown(target)}: {e.strerror or e}") from None
    doc = manifest.read(path) if path.is_dir() else None
    if doc is not None and doc["kind"] == "campaign":
        text = campaign_page(path, doc, target.parent)
    else:
        text = page(path)
    try:
        fs.write(target.parent, target.name, text)
    except OSError as e:
        raise FolderError(f"{shown(target)}: cannot write ({e.strerror or e})") from None
    if target.parent.resolve() == path.resolve():
        manifest.record_outputs(target.parent, [target.name])
    return target


# --- a campaign's page ------------------------------------------------------------------------

VERDICT_COLOURS = {"conforms": "#1a7f37", "diverges": "#b42318", "unknown": "#b26b00",
                   "partial": "#b26b00", "not validated": "#7f7f7f", "unreadable": "#7f7f7f"}


def campaign_page(path: Path, doc: dict, where: Path) -> str:
    """A campaign's runs, one row each (its seed, events, verdict coloured, run and validation
    seconds, a bar of each, a link to its timeline, written now into its run folder; links
    relative to ``where``, the page's folder)."""
    rows = []
    for name in doc["folders"]:
        sub = path / name
        row = {"name": name, "seed": "", "events": "", "verdict": "unreadable", "run_s": None,
               "validate_s": None, "anomalies": "", "link": None, "why": ""}
        try:
            written = write(sub)
            recorded = read(sub, partial=True, flag="RUN_DIR")
            report = fs.read_json(sub, "report.json", MAX_LINES, REPORT) or {}
            verdict = fs.read_json(sub, CONFORMANCE, MAX_LINES, {"verdict": str, ...: ANY})
            row.update(seed=recorded.run.get("seed"), events=len(recorded.events),
                       verdict=verdict["verdict"] if verdict else "not validated",
                       run_s=_number(report.get("seconds")),
                       validate_s=_number((verdict or {}).get("seconds")),
                       anomalies=str(report.get("verdict", "")),
                       link=os.path.relpath(written, where),
                       why="; ".join(recorded.missing))
            if verdict and verdict.get("complete") is False and row["verdict"] == "conforms":
                row["verdict"] = "partial"
        except FolderError as e:
            row["why"] = str(e)
        rows.append(row)
    longest = max([r["run_s"] or 0 for r in rows] + [r["validate_s"] or 0 for r in rows] + [1])
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICT_COLOURS}
    state, why = manifest.status(doc)
    summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    out = ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>kafka-mc campaign: {_e(path.name)}</title><style>{_CSS}"
           "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;"
           "border-bottom:1px solid #eee;text-align:right}td.l,th.l{text-align:left}</style>"
           f"</head>\n<body data-runs=\"{len(rows)}\">\n",
           f"<h1>kafka-mc campaign: {_e(path.name)}</h1>",
           f"<p class=\"meta\">run by <code>{_e(doc.get('command', ''))}</code>; {_e(state)}"
           f"{_e(': ' + why) if why else ''}</p>",
           f"<p class=\"meta\">{len(rows)} runs: {_e(summary)}</p>",
           "<table><tr><th>seed</th><th>events</th><th class=\"l\">verdict</th>"
           "<th>run s</th><th>validation s</th><th class=\"l\">seconds</th>"
           "<th class=\"l\">anomalies</th><th class=\"l\">timeline</th></tr>\n"]
    for r in rows:
        colour = VERDICT_COLOURS.get(r["verdict"], "#7f7f7f")
        bars = "".join(
            f"<rect x=\"0\" y=\"{y}\" width=\"{(v or 0) * 200 / longest:.1f}\" height=\"6\" "
            f"fill=\"{c}\"><title>{what} {v} s</title></rect>"
            for y, v, c, what in ((1, r["run_s"], "#4e79a7", "run"),
                                  (9, r["validate_s"], "#f28e2b", "validation")))
        link = (f"<a href=\"{_e(r['link'])}\">{_e(r['name'])}</a>" if r["link"]
                else _e(r["name"]))
        out.append(f"<tr class=\"run\" data-seed=\"{_e(r['seed'])}\" data-verdict=\""
                   f"{_e(r['verdict'])}\"><td>{_e(r['seed'])}</td><td>{_e(r['events'])}</td>"
                   f"<td class=\"l\" style=\"color:{colour};font-weight:bold\" title=\""
                   f"{_e(r['why'])}\">{_e(r['verdict'])}</td><td>{_e(_or_dash(r['run_s']))}</td>"
                   f"<td>{_e(_or_dash(r['validate_s']))}</td><td class=\"l\"><svg width=\"204\" "
                   f"height=\"16\">{bars}</svg></td><td class=\"l\">{_e(r['anomalies'])}</td>"
                   f"<td class=\"l\">{link}</td></tr>\n")
    out.append("</table>\n<p class=\"meta\">seconds: the run (blue, report.json) and its "
               "validation (orange, conformance.json)</p>\n</body></html>\n")
    return "".join(out)


def _number(value) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _or_dash(value) -> str:
    return "-" if value is None else str(value)
