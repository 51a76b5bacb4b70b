"""Render: TLC-style text (full and --diff), Mermaid sequence diagrams, one self-contained HTML
page with an inline SVG diagram; the sequence-diagram hook of the model contract."""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kafka_mc.explorers import cli
from kafka_mc.model.core import Event
from tests.traces.conftest import bfs_trace, bound
from kafka_mc.traces.render import render
from kafka_mc.traces.trace import TraceError, read

EXE = str(Path(sys.executable).with_name("kafka-mc"))


@pytest.fixture
def broken(write):
    model, trace = bfs_trace("twophase-broken", resource_managers=3)
    return write(model, trace, "TCConsistent.itf.json")


def test_twophase_describes_its_messages_between_tm_and_rms():
    _, m = bound("twophase-broken", resource_managers=2)
    assert m.lifelines() == ("TM", "r1", "r2")
    s1 = m.step(0, ("RMPrepare", 2))
    assert m.describe(0, ("RMPrepare", 2), s1) == (
        Event("note", "r2", label="prepares (sends Prepared)"),)
    assert m.describe(s1, ("TMRcvPrepared", 2), 0) == (Event("request", "r2", "TM", "Prepared"),)
    assert m.describe(0, ("RMRcvAbortMsg", 1), 0) == (Event("response", "TM", "r1", "Abort"),)


def test_default_description_is_one_lifeline_and_a_note_per_step(grid_models):
    _, m = bound("grid")
    assert m.lifelines() == ("grid",)
    assert m.describe((0, 0), ("IncX",), (1, 0)) == (Event("note", "grid", label="IncX"),)


def test_text_is_tlc_style_and_diff_shows_only_changes(broken, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")   # (as when standard output is not a terminal)
    trace = read(broken)
    full = render(trace, "text").splitlines()
    assert full[:3] == [
        "TCConsistent violated: twophase-broken, 5 steps (the defaults), found by bfs",
        "TCConsistent claims that no resource manager has committed while another has aborted; "
        "it fails after step 5,",
        "RMRcvCommitMsg(rm=1) (TM -> r1: Commit)."]
    assert full[4:9] == ["State 0: initial state",
                         '/\\ rmState = [r1 |-> "working", r2 |-> "working", r3 |-> "working"]',
                         '/\\ tmState = "init"', "/\\ tmPrepared = {}", "/\\ msgs = {}"]
    assert sum(line.startswith("/\\ ") for line in full) == 6 * 4
    assert max(map(len, full)) <= 120
    diff = render(trace, "text", diff=True)
    assert diff.count("/\\ ") == 4  # the initial state only
    assert ('State 3: TM  commits (broadcasts Commit)\n   action: TMCommit\n'
            '   tmState: "init" -> "committed"\n   msgs: + <<"Commit">>\n') in diff
    assert 'State 5: TM  Commit to r1  <- TCConsistent violated\n   action: RMRcvCommitMsg(rm=1)\n' \
           '   rmState.r1: "prepared" -> "committed"\n' in diff


def test_text_lays_long_values_out_within_the_width():
    from kafka_mc.traces.layout import value_lines
    record = {"name": "x" * 30, "items": tuple(range(12)), "nested": {"a": frozenset({1, 2})}}
    assert value_lines(record, 200, 0, "/\\ v = ") == [
        '/\\ v = [items |-> <<0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11>>, name |-> "' + "x" * 30
        + '", nested |-> [a |-> {1, 2}]]']
    assert value_lines(record, 40, 0, "/\\ v = ") == [
        "/\\ v = [items |-> <<0, 1, 2, 3, 4, 5, 6,",
        "                    7, 8, 9, 10, 11>>,",
        '        name |-> "' + "x" * 30 + '",',   # (a word longer than the room: as it is)
        "        nested |-> [a |-> {1, 2}]]"]


def test_mermaid_has_a_participant_per_lifeline_arrows_notes_and_the_violation_boxed(broken):
    out = render(read(broken), "mermaid").splitlines()
    assert out[0] == "sequenceDiagram"
    assert [ln.strip() for ln in out if "participant" in ln] == [
        "participant L0 as TM", "participant L1 as r1", "participant L2 as r2",
        "participant L3 as r3"]
    body = [ln.strip() for ln in out[6:]]
    assert body == ["Note over L1: 1. prepares (sends Prepared)", "L1->>L0: 2. Prepared",
                    "Note over L0: 3. commits (broadcasts Commit)",
                    "Note over L2: 4. chooses to abort", "rect rgb(255, 225, 225)",
                    "L0-->>L1: 5. Commit", "Note over L0,L3: TCConsistent violated", "end"]


def test_mermaid_escapes_what_would_break_the_diagram():
    from kafka_mc.traces.render import _m
    assert _m("a;b#c<d>\ne") == "a#59;b#35;c#lt;d#gt; e"


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.refs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]


def test_html_is_one_self_contained_page_with_an_svg_diagram(broken, tmp_path):
    out = tmp_path / "t.html"
    r = subprocess.run([EXE, "render", str(broken), "--format", "html", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    parser = _Collect()
    parser.feed(page)
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    assert all(ref.startswith("url(#") or ref.startswith("#") for ref in parser.refs)
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    svg = ET.fromstring(re.search(r"<svg.*</svg>", page, re.S).group(0))  # well-formed XML
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in svg.iter(ns + "text")]  # without the tooltips (titles)
    assert {"TM", "r1", "r2", "r3"} <= set(texts)  # lifeline heads
    assert len(svg.findall(f".//{ns}line[@marker-end]")) == 2  # Prepared, Commit
    assert any("TCConsistent violated" in t for t in texts)
    assert "claims that no resource manager has committed while another has aborted" in page
    assert page.count('<tr class="violation">') == 1 and page.count("<tr") == 1 + 6
    assert 'rmState.r1: &quot;prepared&quot; -&gt; &quot;committed&quot;' in page


def test_html_escapes_trace_content(broken):
    doc = json.loads(broken.read_text())
    doc["#meta"]["explorer"] = "<script>alert(1)</script>"
    broken.write_text(json.dumps(doc))
    page = render(read(broken), "html")
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_render_refuses_a_tampered_trace(broken, capsys):
    doc = json.loads(broken.read_text())
    doc["states"][2]["tmState"] = "committed"
    broken.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=r"step 2 \(TMRcvPrepared\(rm=1\)\): tmState differs"):
        render(read(broken), "text")
    assert cli.main(["render", str(broken), "--format", "mermaid"]) == 2
    assert capsys.readouterr().err.startswith("kafka-mc: error: step 2")
