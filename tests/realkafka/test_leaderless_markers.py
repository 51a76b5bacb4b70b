"""A finding of the real-Kafka harness (docs/findings.md): Kafka 4.3 and 4.4 complete a commit
whose partition has no leader when the coordinator sends its markers, without writing the marker.

KAFKA-17573 (7d13e8b70d, 4.3: ``KRaftMetadataCache`` moved to the metadata module) changed
``getPartitionLeaderEndpoint``: a partition whose leader is not a registered broker (leader -1,
its only in-sync replica down and fenced) now gives ``Optional.empty`` where 3.6 .. 4.2 gave
``Node.noNode``. ``TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue`` takes empty for
"these partitions are likely deleted already and hence can be skipped": it removes the partition
from the transaction and writes CompleteCommit, though no COMMIT marker was written. When the
broker comes back, the partition's last stable offset stays at the transaction's first record
for good: the committed record is never read under read_committed, and every later record of the
partition waits behind it (a hanging transaction; only an admin's abort ends it). Upstream:
KAFKA-20734 (apache/kafka#22680, open). Before, the markers waited in the unknown-broker queue
until the leader came back.

Real brokers, the real Java client, no proxy: 3 KRaft nodes, the partition's only replica on a
broker other than the coordinator, killed and left down until fenced.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_mc.realkafka import releases
from kafka_mc.realkafka.client import Driver
from kafka_mc.realkafka.cluster import Cluster
from kafka_mc.realkafka.run import FENCED_AFTER_S

VULNERABLE, FIXED = "4.4.0", "4.2.2"     # 4.3.1 is vulnerable too (same code); 4.2.2 the last before
SKIPPED = "these partitions are likely deleted already"


def _need(version: str) -> None:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    if not releases.fetched(version):
        pytest.skip(f"Kafka {version} is not fetched (make kafka)")


def _state(admin, tid: str) -> str:
    return admin.describe_transaction(tid)["state"].replace("_", "").lower()


def _leader(admin, tp: int):
    return next(p["leader"] for p in admin.describe_topics(["t"])["t"] if p["partition"] == tp)


def _commit_while_the_partition_has_no_leader(version: str) -> dict:
    release = releases.release(version)
    seen: dict = {}
    with Cluster(release, brokers=3) as cluster, Driver(release, cluster.bootstrap) as driver:
        admin = driver.admin()
        coordinator = cluster.coordinator_node()
        leader = min(n for n in cluster.nodes if n != coordinator)
        tp = 1                                    # its only replica on another broker than the
        admin.create_topic("t", 2, 1, assignment={0: [coordinator], 1: [leader]})  # coordinator's
        assert [p["leader"] for p in admin.describe_topics(["t"])["t"]] == [coordinator, leader]
        producer = driver.producer("p", "tx-leaderless")
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("t", tp, "k", "committed")
        cluster.kill(leader)
        time.sleep(FENCED_AFTER_S)                # fenced: the partition's leader is -1 (under
        deadline = time.monotonic() + 30          # load the controller may take longer)
        while _leader(admin, tp) is not None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _leader(admin, tp) is None
        producer.commit_transaction()             # EndTxn answered once PrepareCommit is logged
        time.sleep(2)
        seen["state_while_down"] = _state(admin, "tx-leaderless")
        cluster.start_node(leader)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                seen["lso"], seen["hw"] = admin.lso("t", tp), admin.high_watermark("t", tp)
                seen["state"] = _state(admin, "tx-leaderless")
            except Exception:                     # the admin client meets the restart
                seen["lso"] = None
            if seen.get("lso") is not None and seen["lso"] == seen["hw"] \
                    and seen["state"] == "completecommit":
                break
            time.sleep(1)
        seen["read"] = [r["value"] for r in driver.consumer(
            "rc", None, isolation="read_committed").read_all("t", [tp], timeout_s=10)]
        seen["markers"] = [b.get("marker") for b in cluster.partition_log("t", tp)
                           if b.get("control")]
        seen["skipped"] = sum(SKIPPED in line for f in cluster.log_files()
                              for line in f.read_text(errors="replace").splitlines())
    return seen


def test_a_commit_whose_partition_has_no_leader_waits_for_it_on_4_2():
    _need(FIXED)
    seen = _commit_while_the_partition_has_no_leader(FIXED)
    assert seen["state_while_down"] == "preparecommit"     # the markers wait for the leader
    assert seen["state"] == "completecommit" and seen["skipped"] == 0
    assert seen["markers"] == ["COMMIT"] and seen["lso"] == seen["hw"] == 2
    assert seen["read"] == ["committed"]


def test_a_commit_whose_partition_has_no_leader_hangs_the_partition_on_4_4():
    """KAFKA-20734: CompleteCommit with no marker; the committed record is never read."""
    _need(VULNERABLE)
    seen = _commit_while_the_partition_has_no_leader(VULNERABLE)
    assert seen["state_while_down"] == "completecommit" and seen["skipped"] == 1
    assert seen["markers"] == [] and (seen["lso"], seen["hw"]) == (0, 1)
    assert seen["read"] == []


# --- the model's counterexample, replayed (kafka-mc real reproduce, issue 44) ------------------

TRACE = (Path(__file__).resolve().parents[1] / "model" / "leaderless-kafka-4.3.itf.json")
# the model's trace of 2026-11-26 (no_hanging_transactions, 17 steps on kafka-4.3; the client
# receives its Produce answer before the partition goes offline); regenerate it when the model's
# configuration keys change (the trace records them). `kafka-mc check leaderless` now prints
# another 17-step trace (the answer received after the partition went offline): the journey's
# test below makes it with the explorer
KAFKA_MC = [sys.executable, "-m", "kafka_mc"]     # this checkout's (run from its root)


def _reproduce(version: str, out: Path, trace: Path = TRACE
               ) -> tuple[subprocess.CompletedProcess, dict]:
    _need(version)
    run = subprocess.run(KAFKA_MC + ["real", "reproduce", str(trace), "--version", version,
                                     "--brokers", "3", "--out", str(out), "--json"],
                         capture_output=True, text=True, timeout=300)
    report = json.loads(run.stdout) if run.stdout.strip().startswith("{") else {}
    return run, report


def _conforms(run_dir: Path) -> None:
    conform = subprocess.run(KAFKA_MC + ["real", "conform", "--run", str(run_dir), "--json"],
                             capture_output=True, text=True, timeout=120)
    assert conform.returncode == 0, conform.stdout[-2000:] + conform.stderr[-2000:]


def _diverges_from_the_fixed_model(run_dir: Path, at_end: bool = True) -> None:
    """The run diverges from the model without the skip. ``at_end``: only at its end state --
    its requests alone are something that model can do (a marker never sent is no request),
    while the end state (CompleteCommit, the record and no marker) is not. (In a seeded run the
    client goes on to its next transaction, which the fixed model's coordinator, still waiting
    for the partition's leader, answers otherwise: a request diverges first.)"""
    from kafka_mc.explorers.cli.real import recorded_run, validate_folder
    release, cfg = recorded_run(run_dir)
    fixed = {"protocol.markers_skip_leaderless_partition": False}
    r, _, _, events = validate_folder(cfg, release, run_dir, **fixed)
    assert r.verdict == "diverges", r.summary()
    if not at_end:
        return
    assert events[r.divergence.event].get("type") == "end_state"
    assert r.divergence.label.startswith("end state: ")
    requests = [e for e in events if e.get("type") != "end_state"]
    model = validate_folder(cfg, release, run_dir, **fixed)[1]
    from kafka_mc.explorers.conformance import validate
    assert validate(model, requests).conforms


def test_the_model_s_leaderless_counterexample_reproduces_on_4_4(tmp_path):
    """The model's 17 steps (PartitionOffline before the marker send, ElectLeader never) on real
    4.4.0, 3 brokers: the commit completes (CompleteCommit) with no marker in the partition,
    LSO 0 < high watermark 1, the committed record never read; the run conforms to kafka-4.3."""
    run, report = _reproduce(VULNERABLE, tmp_path)
    assert run.returncode == 12, run.stdout[-2000:] + run.stderr[-2000:]
    assert report["verdict"] == "reproduced" and report["steps_run"] == report["steps"] == 17
    assert {a["name"] for a in report["anomalies"]} == {"lost-write", "hanging-transaction"}
    ev = report["evidence"]
    assert ev["offsets"]["0"] == {"high_watermark": 1, "lso": 0}
    assert [b.get("marker") for b in ev["logs"]["0"]] == [None]          # the record, no marker
    assert ev["read_committed"] == []
    assert [t["state"] for t in ev["transactions"].values()] == ["CompleteCommit"]
    _conforms(tmp_path / "conform")
    _diverges_from_the_fixed_model(tmp_path / "conform")


def test_the_trace_check_leaderless_prints_reproduces_on_4_4(tmp_path):
    """The journey (issue 59): `kafka-mc check leaderless --out DIR`, then `kafka-mc real
    reproduce` on its trace, 4.4.0, 3 brokers. In that trace the leader appends and answers
    (step 12), the partition goes offline (13: its broker killed and fenced), and only then does
    the client receive the answer (14): the proxy holds it past the broker's death and delivers
    it there, as a network may deliver what a process wrote before it died (the harness without
    that hold gave it to the client at once, before the kill; on main before the append was
    awaited the kill overtook the leader's answer, and the run diverged at step 14)."""
    _need(VULNERABLE)
    check = subprocess.run(KAFKA_MC + ["check", "leaderless", "--out", str(tmp_path / "check")],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 12, check.stdout[-2000:] + check.stderr[-2000:]
    trace = tmp_path / "check" / "no_hanging_transactions.itf.json"
    run, report = _reproduce(VULNERABLE, tmp_path / "real", trace)
    assert run.returncode == 12, run.stdout[-2000:] + run.stderr[-2000:]
    assert report["verdict"] == "reproduced" and report["steps_run"] == report["steps"] == 17
    assert {a["name"] for a in report["anomalies"]} == {"lost-write", "hanging-transaction"}
    steps = [json.loads(line) for line in (tmp_path / "real" / "steps.jsonl").open()]
    names = [s["action"] for s in steps]
    assert names[11:14] == ["HandleVerifyAddPartitionResponse", "PartitionOffline",
                            "ReceiveProduceResponse"]
    appended, receive = steps[11], steps[13]
    assert appended["appended"] == f"answered #{receive['released']}"   # held since step 12
    assert "broker_gone" in receive and receive["record"] == "t0.i0.x0.r0"
    ev = report["evidence"]
    assert ev["offsets"]["0"] == {"high_watermark": 1, "lso": 0}
    assert [b.get("marker") for b in ev["logs"]["0"]] == [None] and ev["read_committed"] == []
    _conforms(tmp_path / "real" / "conform")


def test_the_same_steps_do_no_harm_on_4_2(tmp_path):
    """The same schedule on 4.2.2: the marker waits for the leader and is written when it is
    back (the record, then COMMIT; LSO = high watermark = 2): not reproduced, and the run
    conforms to kafka-4.2.0."""
    run, report = _reproduce(FIXED, tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert report["verdict"] == "not-reproduced" and report["steps_run"] == 17
    ev = report["evidence"]
    assert ev["offsets"]["0"] == {"high_watermark": 2, "lso": 2}
    assert [b.get("marker") for b in ev["logs"]["0"]] == [None, "COMMIT"]
    assert [r["value"] for r in ev["read_committed"]] == ["t0.i0.x0.r0"]
    _conforms(tmp_path / "conform")


def test_a_seeded_real_run_with_an_offline_partition_meets_it_on_4_4(tmp_path):
    """`kafka-mc real run leaderless --brokers 3` (the budget faults.offline_partitions: the
    partition's broker killed once a Produce to it is answered, started after the next EndTxn
    answer); seed 0 plans the outage. On 4.4.0 the run ends with the committed record unread
    and the partition hanging, and the run conforms to kafka-4.3 (which has the flag)."""
    _need(VULNERABLE)
    out = tmp_path / "run"
    run = subprocess.run(KAFKA_MC + ["real", "run", "leaderless", "--version", VULNERABLE,
                                     "--brokers", "3", "--seed", "0", "--out", str(out), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 12, run.stdout[-2000:] + run.stderr[-2000:]
    assert json.loads((out / "plan.json").read_text())["outages"] == [{"partition": 0}]
    # Jepsen's queue checker (issue 55) names the same loss from the live consumer's side: the
    # committed record was never read (unseen)
    assert {a["name"] for a in json.loads(run.stdout)["anomalies"]} == {"lost-write",
                                                                        "hanging-transaction",
                                                                        "unseen"}
    _conforms(out)
    _diverges_from_the_fixed_model(out, at_end=False)
