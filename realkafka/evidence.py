"""The evidence of a reproduction (``kafka_mc.realkafka.reproduce``) and the verdict the harness
gives on its own: once every gate is lifted, the transactions settled, every partition read under
read_committed, its log dumped, DescribeTransactions and DescribeProducers read; the client's
anomalies named after the trace's property (or a lasso's stutter) make it ``reproduced``.
``kafka-mc real reproduce`` then judges the trace's property on the model's behaviours the run
conforms to (``kafka_mc.explorers.guided.reproduction``), which is the verdict it gives.

The run folder: events.jsonl (proxy), history.jsonl (client), steps.jsonl (each step),
report.json (verdict and evidence), the brokers' logs, and ``conform/`` (the run as ``kafka-mc
real conform --run`` reads one: without the warm-up producer, with the end state)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from kafka_mc.realkafka import anomalies
from kafka_mc.realkafka.holds import BROKER_REQUEST_TIMEOUT_MS
from kafka_mc.realkafka.releases import Release

EXIT_NOT_REPRODUCED, EXIT_REPRODUCED, EXIT_DIVERGED = 0, 12, 16
LASSO_BOUND_S = 30.0   # a stuttering lasso: how long the real transaction must stay stuck


def norm(state) -> str:
    return str(state or "").replace("_", "").lower()


def settle(admin, topic: str, tids: list, partitions: list, left_open: set
           ) -> tuple[bool, dict]:
    """The run's end when the trace leaves transactions Ongoing (``left_open``: no client call
    will end them, they stay so until transaction.timeout.ms): wait until no transaction is
    being completed (Prepare*) and only those are open (at most QUIESCE_S, as ``run.quiesce``
    waits for every one to end); the last states seen."""
    from kafka_mc.realkafka.run import QUIESCE_S, quiesce
    if not left_open:
        return quiesce(admin, tids, partitions, topic)
    deadline = time.monotonic() + QUIESCE_S
    while True:
        states = admin.describe_transactions(tids)
        open_ = {t for t, d in states.items() if d.get("state") in anomalies.ONGOING}
        settled = open_ <= left_open and not any(
            norm(d.get("state")).startswith("prepare") for d in states.values())
        if settled or time.monotonic() > deadline:
            offsets = {p: {"lso": admin.list_offsets(topic, p, "read_committed"),
                           "high_watermark": admin.list_offsets(topic, p, "read_uncommitted")}
                       for p in partitions}
            return bool(open_), {"transactions": states, "offsets": offsets}
        time.sleep(0.5)


def read_evidence(run, calls, holds) -> tuple[dict, list]:
    """Offline partitions brought back, the transactions settled, the topic read read_committed
    and its logs dumped; returns (evidence, anomalies found). ``run``: the reproduction (its
    cluster, admin, driver, topic, trace, leaders, partitions down, notes)."""
    from kafka_mc.realkafka import run as runs
    from kafka_mc.realkafka.logdump import partition_log

    for k, node in sorted(run.down.items()):   # offline when the trace ended
        run.cluster.start_node(node)
        run.cluster.leader(run.topic, k, timeout=60)
        run.notes.append(f"partition {k} was offline when the trace ended: broker {node} "
                         "started again to read the evidence")
    run.down.clear()
    t = run.t
    tids = sorted({run.tid_name(pr["tid"]) for pr in t.states[0]["producers"]})
    partitions = list(range(run.loaded.partitions))
    left_open = {run.tid_name(tid) for tid, txn in enumerate(t.states[-1]["coordinator"]["txns"])
                 if norm(txn["state"]) == "ongoing"}
    open_, state = settle(run.admin, run.topic, tids, partitions, left_open)
    state["producers"] = {p: run.admin.describe_producers(run.topic, p) for p in partitions}
    reads = runs.read_all(run.driver, run.topic, partitions, state["offsets"], "read_committed")
    state["read_committed"] = reads
    state["logs"] = {p: partition_log(run.cluster, run.topic, p) for p in partitions}
    found = anomalies.check(calls.outcomes, calls.sent, reads, state["offsets"], open_)
    old = holds.stale_answer
    if old is not None:
        state["duplicate_old_copy_answer"] = {"seq": old["seq"], "errors": old["errors"]}
    state["leaders"] = run.leaders
    return state, found


def stutter(run, last: dict) -> dict:
    """A lasso stuttering in its last state: every gate lifted, does the real coordinator stay
    in the loop's state for LASSO_BOUND_S (a transaction stuck in Prepare*), and does it keep
    sending markers meanwhile?"""
    stuck_in = {tid: t["state"] for tid, t in enumerate(last["coordinator"]["log"])
                if norm(t["state"]).startswith("prepare") or norm(t["state"]) == "ongoing"}
    if not stuck_in:
        return {"stuck": False, "verdict": "the loop's state has no open transaction",
                "transactional_id": ""}
    tid, want = next(iter(stuck_in.items()))
    name = run.tid_name(tid)
    start_seq = len(run.proxy.events())
    timeline, started = [], time.monotonic()
    stuck = True
    while time.monotonic() - started < LASSO_BOUND_S:
        state = run.admin.describe_transactions([name]).get(name, {}).get("state")
        if not timeline or timeline[-1][1] != state:
            timeline.append((round(time.monotonic() - started, 1), state))
        if norm(state) != norm(want):
            stuck = False
            break
        time.sleep(1.0)
    markers = [e for e in run.proxy.events()[start_seq:] if e.get("api") == "WriteTxnMarkers"
               and e["direction"] == "request"]
    verdict = (f"{name} stayed {want} for {LASSO_BOUND_S:.0f} s "
               f"({LASSO_BOUND_S * 1000 / BROKER_REQUEST_TIMEOUT_MS:.0f}x the marker "
               f"channel's request.timeout.ms), {len(markers)} WriteTxnMarkers sent meanwhile"
               if stuck else f"{name} left {want}: {timeline}")
    return {"stuck": stuck, "verdict": verdict, "transactional_id": name, "state": want,
            "timeline": timeline, "markers_sent": len(markers), "bound_s": LASSO_BOUND_S}


def anomaly_verdict(prop: str, found: list, evidence: dict, lasso, divergence
                    ) -> tuple[str, int]:
    """The harness's own verdict: reproduced (an anomaly of the trace's property, or a stuck
    lasso), diverged or not reproduced, with its exit code; a stuck lasso is added to
    ``found`` and ``evidence``."""
    hit = [a for a in found if a.property == prop]
    if lasso is not None:
        evidence["lasso"] = lasso
        if lasso["stuck"]:
            hit.append(anomalies.Anomaly("stuck-transaction", prop, lasso["transactional_id"],
                                         lasso["verdict"]))
            found.append(hit[-1])
    if prop == "txn_atomicity":   # a lost write of which a part is visible
        hit += [a for a in found if a.name == "lost-write" and any(
            anomalies.parse_value(r["value"]) and anomalies._txn_name(
                anomalies.parse_value(r["value"])[0]) == a.transaction
            for r in evidence.get("read_committed") or ())]
    if hit:
        return "reproduced", EXIT_REPRODUCED
    if divergence is not None:
        return "diverged", EXIT_DIVERGED
    return "not-reproduced", EXIT_NOT_REPRODUCED


def write_report(out: Path, result: dict, outcomes: dict, sent: dict) -> None:
    """report.json written atomically: the result, what the application was told and sent."""
    tmp = out / "report.json.tmp"
    tmp.write_text(json.dumps({**result, "outcomes": {
        anomalies._txn_name(k): v for k, v in sorted(outcomes.items())},
        "sent": {anomalies._txn_name(k): v for k, v in sorted(sent.items())}},
        indent=1, sort_keys=True, default=str) + "\n")
    os.replace(tmp, out / "report.json")


# What a reproduction's ``conform/`` holds (a run folder of its own: its manifest lists them)
CONFORM_FILES = ("run.json", "events.jsonl", "history.jsonl", "end_state.json")


def conform_folder(out: Path, release: Release, config: dict, brokers: int,
                   evidence: dict | None = None) -> Path:
    """``out/conform``: the run as ``kafka-mc real conform --run`` reads one (run.json, the event
    log and the history without the harness's warm-up producer, and the end state read as
    evidence), so that the real run is also validated step by step against the model with the
    release's preset, and its end state with it. A run folder of its own (its manifest
    complete once every file is written)."""
    from kafka_mc.realkafka.runfolder import RunFolder
    with RunFolder.take(out / "conform", "run", files=CONFORM_FILES) as folder:
        if evidence:
            folder.write_json("end_state.json", {k: evidence.get(k) for k in (
                "transactions", "logs", "offsets", "producers")})
        folder.write_json("run.json", {
            "version": release.version, "preset": release.preset, "seed": 0,
            "brokers": brokers, "config": config, "reproduced_from": "reproduce",
            **({"kafka_home": release.home_dir} if release.own else {})})
        lines = (out / "events.jsonl").read_text().splitlines()
        events = [json.loads(line) for line in lines if line.strip()]
        warm = {(e["endpoint"], e["conn"]) for e in events if e.get("client_id") == "warmup"}
        folder.write_text("events.jsonl", "".join(
            json.dumps(e) + "\n" for e in events
            if (e.get("endpoint"), e.get("conn")) not in warm))
        folder.write_text("history.jsonl", "".join(
            line + "\n" for line in (out / "history.jsonl").read_text().splitlines()
            if line.strip() and json.loads(line).get("process") != "warmup"))
        folder.complete(CONFORM_FILES)
    return folder.path


def jsonable(x):
    if isinstance(x, dict):
        return {(k if isinstance(k, str) else str(k)): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in x]
    return x
