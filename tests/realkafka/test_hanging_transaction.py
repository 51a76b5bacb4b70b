"""The hanging transaction KIP-890 closed, from the model's own counterexample, on real Kafka.

``kafka-mc check tiny --protocol kafka-2.7 --set faults.batch_expiries=1 --set
faults.producer_crashes=0 --set cluster.producers_per_id=1`` finds it in 20 steps
(tests/model/hanging-kafka-2.7.itf.json, no_hanging_transactions): the producer's batch is in
flight when the application aborts; the batch expires in the client (delivery.timeout.ms), the
abort completes (ABORT marker), and only then does the batch reach the leader, which appends it
at the same epoch: a transaction the coordinator does not know of holds the partition's LSO for
good. Kafka 3.5.2 (the last release before KIP-890; preset kafka-2.7) does just that; on 3.6.2
(KIP-890 part 1) the leader verifies the late batch with the coordinator first and refuses it.

``kafka-mc real reproduce`` gates the Produce for such a trace (its batch must expire while the
proxy holds it: request.timeout.ms = delivery.timeout.ms = 4 s for the trace's producers) and
needs ``--brokers 3`` (the partition off the coordinator's broker, so that the held Produce
does not hold the client's EndTxn on a shared connection).

The same hang from a client-side duplicate (tests/model/hanging-endtxn-kafka-2.7.itf.json:
``kafka-mc check two-transactions --protocol kafka-2.7 --set faults.request_duplicates=1``, 32
steps): the first transaction's EndTxn(ABORT) times out in the client, which resends it; the
old copy, held by the proxy, reaches the coordinator while the second transaction is Ongoing at
the same epoch (TV1) and aborts it; the second transaction's record, held too, lands after that
ABORT marker.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.realkafka import releases

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "model" / "hanging-kafka-2.7.itf.json"
STALE_END_TXN = ROOT / "tests" / "model" / "hanging-endtxn-kafka-2.7.itf.json"
KAFKA_MC = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or "kafka-mc"
VULNERABLE, FIXED = "3.5.2", "3.6.2"


def real(*args, timeout=300):
    return subprocess.run([KAFKA_MC, "real", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ), cwd=ROOT)


def _need(version: str) -> None:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    if not releases.fetched(version):
        pytest.skip(f"Kafka {version} is not fetched (make kafka)")


def _conforms(folder: Path) -> None:
    conform = real("conform", "--run", str(folder), "--json", timeout=120)
    assert conform.returncode == 0, conform.stdout[-2000:] + conform.stderr[-2000:]


def _log(ev, k="0"):
    return [b.get("marker") or b["records"][0]["value"] for b in ev["logs"][k]]


def test_the_expired_batch_lands_after_the_abort_and_hangs_the_partition_on_3_5_2(tmp_path):
    _need(VULNERABLE)
    run = real("reproduce", str(TRACE), "--version", VULNERABLE, "--brokers", "3",
               "--out", str(tmp_path), "--json")
    assert run.returncode == 12, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["verdict"] == "reproduced" and report["steps_run"] == report["steps"] == 20
    assert [a["name"] for a in report["anomalies"]] == ["hanging-transaction"]
    ev = report["evidence"]
    assert _log(ev) == ["ABORT", "t0.i0.x0.r0"]          # the record after its own abort
    assert ev["offsets"]["0"] == {"lso": 1, "high_watermark": 2}
    # the abort completed; the client's epoch bump after it (KIP-360) may have run too
    assert [t["state"] for t in ev["transactions"].values()] in (["CompleteAbort"], ["Empty"])
    steps = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    expired = next(s for s in steps if s["action"] == "ExpireBatch")
    assert "Expiring 1 record(s)" in expired["error"]
    handled = next(s for s in steps if s["action"] == "HandleProduce")
    assert handled["appended"].startswith("answered")     # appended before the next step
    _conforms(tmp_path / "conform")


def test_the_same_schedule_is_refused_by_the_leader_s_verification_on_3_6_2(tmp_path):
    _need(FIXED)
    run = real("reproduce", str(TRACE), "--version", FIXED, "--brokers", "3",
               "--out", str(tmp_path), "--json")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["verdict"] == "not-reproduced" and report["steps_run"] == 20
    ev = report["evidence"]
    assert _log(ev) == ["ABORT"]
    assert ev["offsets"]["0"] == {"lso": 1, "high_watermark": 1}
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    late = [e for e in events if e.get("api") == "Produce" and e["direction"] == "response"]
    assert [x["name"] for e in late for x in e["errors"]] == ["NOT_ENOUGH_REPLICAS"]
    verify = [e for e in events if e.get("api") == "AddPartitionsToTxn"
              and e["direction"] == "request" and "INTERNAL" in e["endpoint"]]
    assert verify and verify[0]["fields"]["transactions"][0]["verify_only"] is True
    _conforms(tmp_path / "conform")


def test_a_stale_end_txn_copy_aborts_the_next_transaction_and_hangs_it_on_3_5_2(tmp_path):
    _need(VULNERABLE)
    run = real("reproduce", str(STALE_END_TXN), "--version", VULNERABLE, "--brokers", "3",
               "--out", str(tmp_path), "--json")
    assert run.returncode == 12, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["verdict"] == "reproduced" and report["steps_run"] == report["steps"] == 32
    assert [a["name"] for a in report["anomalies"]] == ["hanging-transaction"]
    ev = report["evidence"]
    # the first transaction's ABORT, the stale copy's ABORT of the second, then its record
    assert _log(ev) == ["ABORT", "ABORT", "t0.i0.x1.r0"]
    assert ev["offsets"]["0"] == {"lso": 2, "high_watermark": 3}
    assert ev["duplicate_old_copy_answer"]["errors"] == []     # the stale EndTxn accepted
    steps = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    dup = next(s for s in steps if s["action"] == "DuplicateRequest")
    assert dup["old_conn"] != dup["retry_conn"]               # resent on a new connection
    _conforms(tmp_path / "conform")


def test_the_stale_end_txn_copy_does_not_hang_3_6_2(tmp_path):
    _need(FIXED)
    run = real("reproduce", str(STALE_END_TXN), "--version", FIXED, "--brokers", "3",
               "--out", str(tmp_path), "--json")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    ev = json.loads(run.stdout)["evidence"]
    assert _log(ev) == ["ABORT", "ABORT"]        # the late record refused by verification
    assert ev["offsets"]["0"] == {"lso": 2, "high_watermark": 2}
    _conforms(tmp_path / "conform")


def test_an_expiring_batch_on_one_broker_is_refused_in_one_line():
    run = real("reproduce", str(TRACE), "--version", VULNERABLE)
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "ExpireBatch orders the client's Produce, which needs the " \
        "partitions on brokers other than the coordinator's: --brokers 3" in lines[0]
