"""``kafka-mc real reproduce`` judges the trace's property on the model's behaviours the real run
conforms to (issue 58 item 4; explorers/guided/reproduction.py), on real Kafka:

- the model's counterexample of ``aborted_writes_stay_aborted`` on kafka-4.0.2 (a duplicated
  COMMIT marker's old copy appended after the next transaction's abort was prepared, before
  KIP-1228) reproduces on 4.0.2 (exit 12; the client also sees an aborted read, an anomaly of
  another property) and not on the newest release (its copy answered INVALID_PRODUCER_EPOCH);
- the counterexample of ``marker_closes_its_own_transaction`` on kafka-3.6 (a stale ABORT copy
  closing the next transaction: the coordinator's state when the marker lands, which no client
  sees) reproduces on 3.6.2 with its evidence: the marker's offset and the coordinator's state
  then, as the conforming behaviour has it.

The traces are tests/realkafka/counterexamples/ (tools/make_counterexamples.py remakes them)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kafka_mc.realkafka import releases

ROOT = Path(__file__).resolve().parents[2]
TRACES = Path(__file__).parent / "counterexamples"
ABORTED = TRACES / "kafka-4.0.2-aborted_writes_stay_aborted.itf.json"
MARKER = TRACES / "kafka-3.6-marker_closes_its_own_transaction.itf.json"
KAFKA_MC = [sys.executable, "-m", "kafka_mc"]     # this checkout's (run from its root)


def reproduce(trace: Path, version: str, out: Path) -> tuple[subprocess.CompletedProcess, dict]:
    run = subprocess.run([*KAFKA_MC, "real", "reproduce", str(trace), "--version", version,
                          "--out", str(out), "--json"], capture_output=True, text=True,
                         timeout=180, cwd=ROOT, env=dict(os.environ))
    return run, json.loads(run.stdout) if run.stdout.strip() else {}


def test_the_late_commit_marker_reproduces_on_4_0_2(tmp_path):
    started = time.monotonic()
    run, report = reproduce(ABORTED, "4.0.2", tmp_path)
    assert run.returncode == 12, run.stdout[-2000:] + run.stderr[-2000:]
    assert report["verdict"] == "reproduced" and report["steps_run"] == report["steps"] == 35
    j = report["judgement"]
    assert j["answer"] == "all" and j["property"] == "aborted_writes_stay_aborted"
    # what the client saw, an anomaly of read_committed_isolation, is evidence, not the verdict
    assert [a["name"] for a in report["anomalies"]] == ["aborted-read"]
    log0 = [b.get("marker") or b["records"][0]["value"] for b in report["evidence"]["logs"]["0"]]
    assert log0 == ["t0.i0.x0.r0", "COMMIT", "t0.i0.x1.r0", "COMMIT", "ABORT"]
    assert (tmp_path / "judged-violating.itf.json").is_file()
    assert time.monotonic() - started < 60


def test_the_late_commit_marker_is_refused_on_the_newest_release(tmp_path):
    run, report = reproduce(ABORTED, releases.NEWEST, tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert report["verdict"] == "not-reproduced" and report["judgement"]["answer"] == "none"
    names = {e["name"] for e in report["evidence"]["duplicate_old_copy_answer"]["errors"]}
    assert names == {"INVALID_PRODUCER_EPOCH"}


def test_the_stale_abort_copy_closes_the_next_transaction_on_3_6_2(tmp_path):
    started = time.monotonic()
    run, report = reproduce(MARKER, "3.6.2", tmp_path)
    assert run.returncode == 12, run.stdout[-2000:] + run.stderr[-2000:]
    assert report["verdict"] == "reproduced" and report["steps_run"] == 30
    assert report["anomalies"] == []            # nothing a client sees
    v = report["judgement"]["violation"]
    assert v["name"] == "HandleWriteTxnMarkers" and v["event"]["api"] == "WriteTxnMarkers"
    assert "ABORT marker appended at offset 3" in v["events"]
    assert v["state"]["DescribeTransactions t0"].startswith("Ongoing")
    log0 = [b.get("marker") or b["records"][0]["value"] for b in report["evidence"]["logs"]["0"]]
    assert log0 == ["t0.i0.x0.r0", "ABORT", "t0.i0.x1.r0", "ABORT"]
    assert time.monotonic() - started < 60
