"""kafka-mc compare (explorers/compare.py, model/comparison.py): the same workloads on every
messaging model, one table of claims. Each (model, workload) is a real ``kafka-mc check`` run."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.explorers.compare import Cell, Comparison, Cost, table
from kafka_mc.model import registry
from kafka_mc.model.comparison import CLAIMS, WORKLOADS, Claim, Workload

KAFKA_MC = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or "kafka-mc"


def _compare(*args, timeout=600):
    return subprocess.run([KAFKA_MC, "compare", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_every_claim_of_latest_kafka_holds_on_every_workload(tmp_path):
    run = _compare("--model", "kafka", "--json", "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert {(c["workload"], c["claim"], c["verdict"]) for c in result["cells"]} == {
        (w.name, c, "holds") for w in WORKLOADS for c in CLAIMS}
    costs = {c["workload"]: (c["states"], c["transitions"]) for c in result["costs"]}
    # network: one transaction of two records on two partitions, a request and a response lost;
    # crash: configs/tiny.toml exactly (the pinned tiny counts); consume-produce: one input
    assert costs == {"network": (14_189, 41_233), "crash": (16_044, 47_071),
                     "consume-produce": (469, 1_062)}


def test_a_broken_kafka_fails_its_claim_with_the_shortest_counterexample(tmp_path):
    run = _compare("--model", "kafka", "--workload", "crash", "--set",
                   "kafka:model.mutant=consumer-ignores-aborted-index", "--json",
                   "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr
    cells = {c["claim"]: c for c in json.loads(run.stdout)["cells"]}
    assert cells["isolation"]["verdict"] == "fails"
    assert (cells["isolation"]["steps"], cells["isolation"]["property"]) == \
        (17, "read_committed_isolation")
    assert Path(cells["isolation"]["trace"]).is_file()
    assert {c: cells[c]["verdict"] for c in CLAIMS if c != "isolation"} == \
        {c: "holds" for c in CLAIMS if c != "isolation"}
    text = _compare("--model", "kafka", "--workload", "crash", "--set",
                    "kafka:model.mutant=consumer-ignores-aborted-index", "--out", str(tmp_path))
    assert "| isolation | fails on crash (17 steps, `read_committed_isolation`) |" in text.stdout


def test_the_table_says_not_claimed_and_not_run():
    cmp = Comparison(("a", "b"), ("network", "crash"))
    for w in cmp.workloads:
        for c in CLAIMS:
            cmp.cells["a", w, c] = Cell("holds")
            cmp.cells["b", w, c] = (Cell("not claimed", note="at-least-once delivery")
                                    if c == "no_duplicates" else
                                    Cell("not run", note="no such workload") if w == "crash"
                                    else Cell("fails", 9, "p", None) if c == "atomicity"
                                    else Cell("holds"))
    cmp.costs["a", "network"] = Cost(10, 20, 0.5)
    text = table(cmp)
    assert "| no_duplicates | holds | not claimed |" in text
    assert "| atomicity | holds | fails on network (9 steps, `p`); not run on crash |" in text
    assert "| isolation | holds | holds; not run on crash |" in text
    assert "| a | network | 10 | 20 | 0.50 |" in text
    assert "- b, no_duplicates: at-least-once delivery" in text


def test_the_kafka_model_states_every_claim():
    entry = registry.entry("kafka")
    assert set(entry.claims) == set(CLAIMS)
    assert all(isinstance(c, Claim) and c.claimed for c in entry.claims.values())
    names = {p.name for p in registry.bind(registry.load(None, model="kafka")).properties()}
    assert {p for c in entry.claims.values() for p in c.properties} <= names


def test_a_workload_with_an_unknown_fault_is_refused():
    with pytest.raises(ValueError, match="unknown fault kind 'meteor'"):
        Workload("x", "y", faults={"meteor": 1})


@pytest.mark.parametrize("args, message", [
    (["--model", "nope"], "--model nope: no such model"),
    (["--model", "twophase"], "--model twophase: the model declares no claims"),
    (["--workload", "nope"], "--workload nope: no such workload"),
    (["--set", "kafka.protocol.version=x"], "expected MODEL:SECTION.KEY=VALUE"),
    (["--model", "kafka", "--set", "pulsar:a.b=1"], "model pulsar is not compared"),
    (["--timeout", "0"], "--timeout 0: must be positive"),
    (["--out", ""], "--out is empty"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    run = _compare(*args)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and message in run.stderr


def test_pulsar_holds_what_it_claims_and_does_not_claim_no_duplicates(tmp_path):
    run = _compare("--model", "pulsar", "--json", "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    verdicts = {(c["workload"], c["claim"]): c["verdict"] for c in result["cells"]}
    assert {v for (w, c), v in verdicts.items() if w == "crash"} == {"not run"}
    assert {c for (w, c), v in verdicts.items() if v == "not claimed"} == {"no_duplicates"}
    assert {v for (w, c), v in verdicts.items()
            if w != "crash" and c != "no_duplicates"} == {"holds"}
    costs = {c["workload"]: (c["states"], c["transitions"]) for c in result["costs"]}
    # network: two topics, one duplicated request (Pulsar's resend); consume-produce: one topic
    assert costs == {"network": (104_388, 433_851), "consume-produce": (639, 1_611)}


def test_rocketmq_on_its_vulnerable_preset_loses_a_committed_message(tmp_path):
    """ISSUE #598 (fixed by PR #633, 4.5.2): on rocketmq-4.3 a committed transaction's message
    is dropped after transactionCheckMax check-backs; no_duplicates and consume_produce are
    claims RocketMQ does not make."""
    run = _compare("--model", "rocketmq", "--set", "rocketmq:protocol.version=rocketmq-4.3",
                   "--json", "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    cells = {(c["workload"], c["claim"]): c for c in result["cells"]}
    assert {c for (w, c), cell in cells.items() if cell["verdict"] == "not claimed"} == \
        {"no_duplicates", "consume_produce"}
    assert {w for (w, c), cell in cells.items() if cell["verdict"] == "not run"} == \
        {"consume-produce"}
    lost = {w: (cells[w, "no_loss"]["steps"], cells[w, "no_loss"]["property"])
            for w in ("network", "crash")}
    assert lost == {"network": (9, "CommittedMessageNotLost"),
                    "crash": (8, "CommittedMessageNotLost")}
    assert {cells[w, c]["verdict"] for w in ("network", "crash")
            for c in ("atomicity", "isolation", "resolution")} == {"holds"}
    costs = {c["workload"]: (c["states"], c["transitions"]) for c in result["costs"]}
    assert costs == {"network": (614, 1_436), "crash": (470, 963)}
