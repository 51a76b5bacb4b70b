"""Conformance on real Kafka: ``kafka-mc real conform`` makes real runs on two releases and each
is a behaviour of the model with the release's preset (its behaviour an ITF trace ``replay``
re-runs); a recorded run validated again with ``--run`` conforms, and the same run tampered with
an event real Kafka never produces diverges there (``--partial``: its manifest says events.jsonl
changed since the run, so without it the folder is refused). (Recorded runs kept as fixtures are
validated without a cluster in tests/model/test_kafka_observations.py.)"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.realkafka import releases

KAFKA_MC = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or "kafka-mc"


def kafka_mc(*args, timeout=300):
    return subprocess.run([KAFKA_MC, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("version", [releases.RELEASES[0].version, releases.NEWEST])
def test_real_runs_conform_and_their_behaviour_replays(version, tmp_path):
    out = tmp_path / "conform"
    run = kafka_mc("real", "conform", "tiny", "--version", version, "--runs", "2", "--seed", "40",
                   "--out", str(out), "--json")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert summary["runs"] == summary["conforms"] == 2 and summary["diverges"] == 0
    assert summary["preset"] == releases.BY_VERSION[version].preset
    for row in summary["rows"]:
        assert row["validation_seconds"] < 30
        trace = Path(row["folder"]) / "behaviour.itf.json"
        replay = kafka_mc("replay", str(trace), timeout=120)
        assert replay.returncode == 0, replay.stdout[-2000:] + replay.stderr[-2000:]
    folder = Path(summary["rows"][0]["folder"])
    again = kafka_mc("real", "conform", "--run", str(folder), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["conforms"] == 1, again.stderr
    for change, api in ((_stale_marker, "WriteTxnMarkers"), (_answer_first, "EndTxn")):
        copy = _tampered(folder, tmp_path, change)
        refused = kafka_mc("real", "conform", "--run", str(copy))   # its manifest sees the change
        assert refused.returncode == 2 and "events.jsonl changed since the run wrote it" in \
            refused.stderr
        run = kafka_mc("real", "conform", "--run", str(copy), "--partial", "--json")
        assert run.returncode == 16, run.stdout[-3000:] + run.stderr[-3000:]
        assert json.loads(run.stdout)["diverges"] == 1
        # the tampered event is where the explained prefix ends: among the events pending there
        # (the divergence names the earliest; the others with their nearest miss)
        divergence = json.loads((copy / "conformance.json").read_text())["divergence"]
        pending = [label for _, label in divergence["pending"]]
        assert any(api in label for label in pending), divergence
        if api == "WriteTxnMarkers":
            assert any("WriteTxnMarkers" in label and "producer_epoch: recorded" in label
                       for label in pending), divergence
    other = next(r.version for r in releases.RELEASES if r.version != version)
    refused = kafka_mc("real", "conform", "--run", str(folder), "--version", other)
    assert refused.returncode == 2
    assert f"recorded on Kafka {version}, not {other}" in refused.stderr


def _tampered(folder: Path, tmp_path: Path, change) -> Path:
    copy = tmp_path / f"{folder.name}-{change.__name__}"
    shutil.copytree(folder, copy)
    events = [json.loads(line) for line in (copy / "events.jsonl").read_text().splitlines()]
    events = change(events)
    (copy / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return copy


def _stale_marker(events):
    """A WriteTxnMarkers the leader accepted carrying an epoch below the producer's: real Kafka
    never writes such a marker (the epoch check of ProducerStateManager / UnifiedLog)."""
    for e in events:
        if e.get("api") == "WriteTxnMarkers" and e["direction"] == "request":
            for m in e["fields"]["markers"]:
                m["producer_epoch"] = m["producer_epoch"] - 5
            return events
    raise AssertionError("no WriteTxnMarkers in the run")


def _answer_first(events):
    """The first EndTxn response moved before its request."""
    req = next(i for i, e in enumerate(events)
               if e.get("api") == "EndTxn" and e["direction"] == "request")
    res = next(i for i, e in enumerate(events)
               if e.get("api") == "EndTxn" and e["direction"] == "response")
    answer = events.pop(res)
    answer["time"] = events[req]["time"] - 1
    events.insert(req, answer)
    return events


@pytest.mark.parametrize("args, text", [
    (("--run", "/nonexistent-run"), "not a run folder"),
    (("tiny",), "needs --version"),
    (("tiny", "--version", "9.9.9"), "not a supported release"),
])
def test_bad_input_is_one_line_and_exit_2(args, text):
    run = kafka_mc("real", "conform", *args)
    assert run.returncode == 2 and text in run.stderr and len(run.stderr.splitlines()) == 1, \
        run.stderr
