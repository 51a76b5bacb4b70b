"""``kafka-mc real timeline``: a recorded run folder drawn as one HTML page
(``kafka_mc.realkafka.timeline``), its marks counted against the run's own event log and history; a campaign's page; bad input. No
real Kafka: the run folders recorded in the repository, copied (the command writes into them).

``kafka-4.4.0-faults`` was recorded before run folders had a ``run.json``; its copy gets one
(release 4.4.0, seed 2, the tiny config of the crash run: the page draws no config)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kafka_mc.realkafka import runfolder, timeline
from tests.explorers.test_bad_input import kmc, one_line_error

ROOT = Path(__file__).resolve().parents[2]
CRASH = ROOT / "tests" / "realkafka" / "runs" / "kafka-4.4.0-tiny-crash"
RUNS = ROOT / "tests" / "model" / "conformance_runs"
FAULTS, LIVE = RUNS / "kafka-4.4.0-faults", RUNS / "kafka-4.4.0-live-consumer-aborts"


def copy(source: Path, tmp_path: Path) -> Path:
    out = tmp_path / source.name
    shutil.copytree(source, out)
    if not (out / "run.json").exists():
        run = json.loads((CRASH / "run.json").read_text())
        (out / "run.json").write_text(json.dumps(dict(run, seed=2)))
    return out


def events(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def marks(text: str, kind: str) -> list[dict]:
    """Each mark of ``kind`` on the page: its data- attributes."""
    return [dict(re.findall(r'data-([a-z]+)="([^"]*)"', m))
            for m in re.findall(rf'<g class="mark" ([^>]*data-kind="{kind}"[^>]*)>', text)]


def test_every_request_is_a_mark_on_its_senders_lane_joined_to_its_response(tmp_path):
    folder = copy(CRASH, tmp_path)
    text = timeline.page(folder)
    requests = [e for e in events(folder) if e["direction"] == "request"]
    drawn = marks(text, "request")
    assert len(drawn) == len(requests) == 48
    assert {m["seq"]: m["lane"] for m in drawn} == {str(e["seq"]): e["client_id"]
                                                    for e in requests}   # lane by lane
    assert not [m for m in drawn if "fault" in m]              # a run without network faults
    assert [m["marker"] for m in drawn if "marker" in m] == ["ABORT", "ABORT"]
    lanes = re.findall(r'<g class="lane" data-lane="([^"]*)" data-kind="([a-z]*)"', text)
    assert lanes == [("admin", "client"), ("t0.i0", "client"), ("t0.i1", "client"),
                     ("reader-read_committed", "client"),
                     ("AddPartitionsManager-client-1", "broker"),
                     ("broker-1-txn-marker-sender", "broker"),
                     ("broker-1/CLIENT", "endpoint"), ("broker-1/INTERNAL", "endpoint")]
    # the crashed instance's abort is unknown (info), its successor's aborted
    assert [(m["lane"], m["outcome"]) for m in marks(text, "outcome")] == [
        ("t0.i0", "info"), ("t0.i1", "abort ok")]
    assert len(marks(text, "operation")) == 17 and len(marks(text, "connection")) == 11
    assert "Kafka 4.4.0, preset kafka-4.3, seed 0, 1 broker" in text
    assert "kafka-mc real conform tiny --version 4.4.0 --seed 0" in text   # its manifest's
    # a tooltip: the request's seq, API and essentials, its response joined by correlation id
    assert ("<title>#54 EndTxn v5 from t0.i0 to broker-1/CLIENT (conn 4, correlation id 10), at "
            "12.640 s, forwarded\ntransactional_id=kmc-0-66c6d4-t0, producer_id=0, "
            "producer_epoch=0, committed=False\n#55 response at 12.651 s: forwarded, errors "
            "PRODUCER_FENCED</title>") in text
    assert [m["seq"] for m in drawn if m.get("errors") == "PRODUCER_FENCED"] == ["54"]


def test_faults_and_commit_markers_are_marked(tmp_path):
    folder = copy(FAULTS, tmp_path)
    text = timeline.page(folder)
    faulted = [m for m in marks(text, "request") if "fault" in m]
    # seq 64: a WriteTxnMarkers request dropped; seq 40 is the response to EndTxn #39, dropped
    assert [(m["seq"], m["api"], m["fault"]) for m in faulted] == [
        ("39", "EndTxn", "drop"), ("64", "WriteTxnMarkers", "drop")]
    sent = [e["seq"] for e in events(folder)
            if e["api"] == "WriteTxnMarkers" and e["direction"] == "request"]
    assert [(m["seq"], m["marker"]) for m in marks(text, "request") if "marker" in m] == \
        [(str(s), "COMMIT") for s in sent] == [("47", "COMMIT"), ("64", "COMMIT"),
                                              ("73", "COMMIT")]
    assert [m["outcome"] for m in marks(text, "outcome")] == ["commit ok", "commit ok"]
    assert "fault drop (drop-1)" in text and "2 with a fault, 3 transaction markers" in text
    assert "recorded before run folders had a manifest" in text
    assert "its clock is not the proxy's" in text    # history 1.6-6.2 s, proxy 9.6-16.1 s
    assert "its clock is not the proxy's" not in timeline.page(copy(LIVE, tmp_path))                  # read by its files, said


def test_the_same_folder_gives_the_same_bytes(tmp_path):
    folder = copy(LIVE, tmp_path)
    first = timeline.write(folder).read_bytes()
    assert timeline.write(folder).read_bytes() == first
    assert timeline.page(folder).encode() == first
    assert len(marks(first.decode(), "request")) == 72
    assert "<script" not in first.decode() and "http://" not in first.decode().replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


def test_written_into_the_run_folder_as_an_output_the_run_stays_complete(tmp_path, capsys):
    folder = copy(CRASH, tmp_path)
    code, out, err = kmc("real", "timeline", folder)
    assert code == 0 and out == f"timeline: {folder / 'timeline.html'}\n" and err == ""
    doc = json.loads((folder / runfolder.NAME).read_text())
    assert doc["outputs"] == ["timeline.html"] and doc["status"] == "complete"
    assert runfolder.read(folder).complete          # not "changed": a validation reads it whole
    code, out, _ = kmc("real", "timeline", folder, "--out", tmp_path / "t.html")
    assert code == 0 and (tmp_path / "t.html").read_bytes() == \
        (folder / "timeline.html").read_bytes()


def test_a_cap_on_what_is_drawn_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(timeline, "MAX_REQUESTS", 10)
    text = timeline.page(copy(CRASH, tmp_path))
    assert len(marks(text, "request")) == 10
    assert "not drawn (the first are): 38 of 48 requests" in text


def test_a_campaign_is_a_page_of_its_runs_each_with_its_timeline(tmp_path):
    camp = tmp_path / "camp"
    with runfolder.RunFolder.take(camp, "campaign", folders=["run-0", "run-12"]) as c:
        shutil.copytree(CRASH, camp / "run-0")
        shutil.copytree(LIVE, camp / "run-12")
        c.complete()
    (camp / "run-0" / "conformance.json").write_text(json.dumps(
        {"verdict": "conforms", "records": 153, "seconds": 0.03}))
    code, out, _ = kmc("real", "timeline", camp)
    assert code == 0 and out == f"timeline: {camp / 'timeline.html'}\n"
    text = (camp / "timeline.html").read_text()
    rows = re.findall(r'<tr class="run" data-seed="(\d+)" data-verdict="([^"]*)">', text)
    assert rows == [("0", "conforms"), ("12", "not validated")]
    assert 'href="run-0/timeline.html"' in text and 'href="run-12/timeline.html"' in text
    assert (camp / "run-12" / "timeline.html").exists()
    assert json.loads((camp / runfolder.NAME).read_text())["outputs"] == ["timeline.html"]
    assert 'data-verdict="conforms"' in (camp / "run-0" / "timeline.html").read_text()


@pytest.mark.parametrize("argv, expect", [
    (["no-such-folder"], "RUN_DIR no-such-folder: not a run folder (no such folder)"),
    ([str(FAULTS)], "not a run folder (no run.json)"),
    ([str(CRASH / "run.json")], "not a run folder (not a folder)"),
    ([str(CRASH), "--out", "/no/such/dir/t.html"], "--out /no/such/dir/t.html: no such folder"),
    ([str(CRASH), "--out", str(CRASH)], "is a folder (give a file name)"),
])
def test_bad_input_is_one_line_and_exit_2(argv, expect):
    before = sorted(p.name for p in CRASH.iterdir())
    one_line_error(*kmc("real", "timeline", *argv), expect=expect)
    assert sorted(p.name for p in CRASH.iterdir()) == before
