"""Every explorer on the Pulsar model (model/pulsar), which none of them was changed for: the
CLI's list and check, the state graph, simulate, swarm, stateful, Spark on a tiny configuration,
the web explorer's state, and traces that replay and render with the model's lifelines."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from kafka_mc.model import registry
from kafka_mc.explorers.bfs.search import explore
from kafka_mc.explorers.web.app import create_app
from kafka_mc.explorers.web.session import Explorer

ROOT = Path(__file__).resolve().parents[2]
EXE = str(Path(sys.executable).with_name("kafka-mc"))
TINY = ("--set", "faults.tc_failovers=0", "--set", "faults.broker_failovers=0",
        "--set", "model.normal_message=false")


def kafka_mc(*args, cwd=ROOT):
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def as_json(*args):
    r = kafka_mc("check", *args, "--json")
    return r.returncode, json.loads(r.stdout)


def test_list_models_lists_pulsar_and_check_prints_its_claims():
    assert any(line.split()[:1] == ["pulsar"] for line in kafka_mc("list", "models").stdout.splitlines())
    r = kafka_mc("check", "--model", "pulsar")
    assert r.returncode == 0, r.stderr
    assert "50,636 distinct states, 189,750 generated, depth 22" in r.stdout
    flat = " ".join(r.stdout.split())    # (lines are wrapped within COLUMNS)
    assert ("Properties checked: atomic_writes, acks_with_writes, read_committed, "
            "no_lost_message, committed_and_read, aborted_after_writes, "
            "committing_after_failover") in flat
    assert "Not checked (liveness; --explorer graph checks them): transaction_resolved" in flat


def test_the_graph_explorer_checks_the_liveness_claim():
    code, d = as_json("--model", "pulsar", "--explorer", "graph")
    assert code == 0 and "transaction_resolved" in d["checked"]
    assert (d["stats"]["distinct"], d["stats"]["generated"]) == (50_636, 189_750)


@pytest.mark.parametrize("args, distinct, generated, walks", [
    (("--explorer", "simulate", "--runs", "200", "--seed", "1"), 706, 2_173, 200),
    (("--explorer", "simulate", "--swarm", "--runs", "200", "--seed", "1"), 282, 806, 200),
    (("--explorer", "stateful", "--seed", "1", "--max-examples", "100"), 638, 1_452, 112),
])
def test_random_explorers_walk_the_model_and_break_no_claim(args, distinct, generated, walks):
    """Random walks rarely reach a commit past both timeouts: the two rare witnesses are reported
    unwitnessed (exit 12), never an invariant."""
    code, d = as_json("--model", "pulsar", *args)
    assert code == 12
    assert [(v["kind"], v["property"]) for v in d["violations"]] == [
        ("sometimes", "committed_and_read"), ("sometimes", "committing_after_failover")]
    assert (d["stats"]["distinct"], d["stats"]["generated"], d["random"]["walks"]) == (
        distinct, generated, walks)


def test_simulate_finds_pulsar_12382_on_2_9_0():
    code, d = as_json("configs/pulsar-2.9.0.toml", "--explorer", "simulate", "--runs", "2000",
                      "--seed", "1")
    assert code == 12 and [v["property"] for v in d["violations"]] == ["read_committed"]
    assert (d["random"]["walks"], d["random"]["found_steps"]) == (118, 12)


def test_spark_on_a_tiny_config_agrees_with_the_bfs():
    code, d = as_json("--model", "pulsar", *TINY, "--explorer", "spark")
    bfs = explore(registry.bind(registry.load(None, model="pulsar", overrides={
        "faults.tc_failovers": 0, "faults.broker_failovers": 0, "model.normal_message": False})))
    assert code == 0 and (d["stats"]["distinct"], d["stats"]["generated"]) == (639, 1_611)
    assert (bfs.stats.distinct, bfs.stats.generated) == (639, 1_611)


def test_the_web_explorer_shows_the_models_state():
    client = TestClient(create_app(Explorer(registry.load(None, model="pulsar"))))
    d = client.get("/api/state").json()
    assert [c["name"] for c in d["components"]] == [
        "client", "coordinator", "topics", "subscription", "normal_published", "network",
        "faults_left"]
    assert [a["label"] for a in d["actions"]] == ["NewTxn", "NormalPublish",
                                                  "BrokerFailover(topic=0)"]
    d = client.get("/api/state", params={"path": "0.0"}).json()
    assert d["changes"] == ['client.state: "NONE" -> "OPEN"', 'coordinator.status: "NONE" -> "OPEN"']
    verdicts = {p["name"]: p["verdict"] for p in d["properties"]}
    assert verdicts["read_committed"] == "holds" and verdicts["no_lost_message"] == "not terminal"


def test_a_counterexample_replays_and_renders_with_the_models_lifelines(tmp_path):
    r = kafka_mc("check", "configs/pulsar-2.9.0.toml", "--out", str(tmp_path))
    assert r.returncode == 12 and "read_committed is violated" in r.stdout
    trace = tmp_path / "read_committed.itf.json"
    r = kafka_mc("replay", str(trace))
    assert r.returncode == 12
    assert r.stdout.strip() == "replayed 6 steps: read_committed is violated in the last state"
    r = kafka_mc("render", str(trace), "--format", "mermaid")
    assert r.returncode == 0
    for i, lifeline in enumerate(("client", "coordinator", "t0", "sub")):
        assert f"participant L{i} as {lifeline}" in r.stdout
    assert "L0->>L2: 3. Send(m, txn)" in r.stdout
