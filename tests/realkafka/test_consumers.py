"""A real run with a live read_committed consumer (realkafka/consumers.py): two producers write
both partitions while c0 polls; its polls are in the history with partition and offset, its
Fetch requests and answers are decoded in the event log (fetch offsets, high watermark, LSO,
aborted transactions, the batches' producer ids and control types), it ends at the end offsets,
Jepsen's queue checker reports every anomaly it checked, and the run conforms to the model with
its fetches observed. The run's cluster, proxy and driver are stopped by ``run``'s ``with``."""
from __future__ import annotations

import json

from kafka_mc.explorers.cli.real import validate_folder
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.realkafka import releases
from kafka_mc.realkafka.queue_checker import CHECKED
from kafka_mc.realkafka.run import run


def test_a_live_consumer_polls_during_the_run_and_its_fetches_conform(tmp_path):
    release = releases.release(releases.NEWEST)
    cfg = registry.load(resolve_config_path("live-two-producers"),
                        overrides={"workload.transactions_per_producer": 1})
    result = run(cfg, release, 12, tmp_path / "run")
    assert not result.anomalies, result.anomalies
    assert set(CHECKED) <= set(result.checked)
    history = [json.loads(x) for x in (tmp_path / "run" / "history.jsonl").read_text().splitlines()]
    polls = [h for h in history if h["process"] == "c0" and h["f"] == "poll" and h["type"] == "ok"]
    assert len(polls) > 5
    assert all({"partition", "offset", "value"} <= set(r) for h in polls for r in h["value"])
    events = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    answers = [p for e in events if e.get("api") == "Fetch" and e.get("client_id") == "c0"
               and e["direction"] == "response"
               for t in e["fields"]["responses"] for p in t["partitions"]]
    assert answers and all({"high_watermark", "last_stable_offset", "aborted_transactions"}
                           <= set(p) for p in answers)
    batches = [b for p in answers for b in p["records"] or ()]
    assert any(b["control"] for b in batches) and all("producer_id" in b for b in batches)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    ends = {int(p): o["lso"] for p, o in report["end_state"]["offsets"].items()}
    assert {int(p): o for p, o in report["end_state"]["consumers"][0].items()} == ends
    verdict, _, _, _ = validate_folder(cfg, release, tmp_path / "run")
    assert verdict.conforms, "\n".join(verdict.divergence.report())
    assert sum(a[0] == "Fetch" for a in verdict.actions) >= 2
