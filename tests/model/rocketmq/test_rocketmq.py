"""The RocketMQ model (model/rocketmq), registered through its entry point as a third-party
package's would be: its presets, claims, mutants and seeded bug, and every explorer on it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from kafka_mc.explorers.bfs import search as bfs
from kafka_mc.explorers.cli.check import write_traces
from kafka_mc.explorers.graph import search as graph
from kafka_mc.explorers.walks import simulate, swarm
from kafka_mc.explorers.walks.simulate import SimulateOptions
from kafka_mc.explorers.web.app import create_app
from kafka_mc.explorers.web.session import Explorer
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.rocketmq import claims
from kafka_mc.model.rocketmq.world import (COMMIT, COMMIT_MESSAGE, COMMITTED, DONE, PENDING,
                                  ROLLBACK_MESSAGE, UNKNOW)
from tests.reachable import bfs_order
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read

EXE = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or "kafka-mc"
CLAIMED = ["MessageOnlyIfCommitted", "NoReadOfRolledBack", "CommittedMessageNotLost",
           "EveryTransactionResolved"]


def cfg(**overrides):
    return registry.load(None, model="rocketmq", overrides=overrides)


def model(**overrides):
    return registry.bind(cfg(**overrides))


def kafka_mc(*args):
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120)


def test_listed_through_its_entry_point_with_presets_and_mutants():
    assert "rocketmq" in registry.models()            # found among installed entry points
    assert registry.entry("rocketmq").presets == ("rocketmq-4.3", "rocketmq-4.9", "rocketmq-5.1")
    out = kafka_mc("list", "models").stdout
    assert any(line.split()[0] == "rocketmq" for line in out.splitlines())
    mutants = kafka_mc("list", "mutants").stdout
    assert all(f"{m} " in mutants for m in ("unknown-as-commit", "discard-commits",
                                             "check-never-discards"))


def test_check_exhausts_the_default_config_and_prints_its_claims():
    r = kafka_mc("check", "--model", "rocketmq")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1,714 distinct states, 4,995 generated, depth 15" in r.stdout
    assert ("Properties checked: MessageOnlyIfCommitted, NoReadOfRolledBack, "
            "CommittedMessageNotLost, MessageConsumed") in r.stdout
    claims_listed = kafka_mc("list", "invariants", "--model", "rocketmq").stdout
    assert "NoDuplicateNotClaimed" in claims_listed and "not claimed:" in claims_listed


# the presets: (distinct, generated, depth) by BFS, and the graph explorer's liveness verdict
PRESET_COUNTS = {"rocketmq-4.3": (565, 1_199, 8), "rocketmq-4.9": (1_126, 3_041, 14),
                 "rocketmq-5.1": (1_714, 4_995, 15)}


@pytest.mark.parametrize("version", ["rocketmq-4.9", "rocketmq-5.1"])
def test_every_claim_holds_on_the_fixed_presets_with_liveness(version):
    out = graph.explore(model(**{"protocol.version": version}))
    s = out.stats
    assert out.exit_code == 0 and out.complete and not out.violations
    assert (s.distinct, s.generated, s.depth) == PRESET_COUNTS[version]
    assert set(CLAIMED) <= set(out.checked) and not out.unchecked
    assert out.never_enabled == (() if version == "rocketmq-5.1" else ("OpBatchFlush",))
    assert bfs.explore(model(**{"protocol.version": version})).stats.distinct == s.distinct


def test_seeded_bug_issue_598_drops_a_committed_message_on_4_3_only():
    """ISSUE #598 (PR #633, 4.5.2): before it, resolveDiscardMsg only logged a half message
    checked transactionCheckMax times; its committed local transaction's message was gone."""
    out = bfs.explore(model(**{"protocol.version": "rocketmq-4.3"}))
    (v,) = out.violations
    assert (v.property, len(v.path), out.exit_code) == ("CommittedMessageNotLost", 7, 12)
    assert (out.stats.distinct, out.stats.generated, out.stats.depth) == PRESET_COUNTS["rocketmq-4.3"]
    assert [a[0] for a in v.path.actions] == [
        "SendHalfMessage", "ExecuteLocalTransaction", "EndTransaction", "TransactionCheck",
        "TransactionCheck", "TransactionCheck", "BrokerRestart"]
    # the same run without the fault: the local transaction stays in doubt past the check-backs
    out = bfs.explore(model(**{"protocol.version": "rocketmq-4.3", "faults.total": 0}))
    (v,) = out.violations
    assert (v.property, len(v.path)) == ("CommittedMessageNotLost", 9)
    assert v.path.actions[1] == ("ExecuteLocalTransaction", UNKNOW)
    assert v.path.actions[-1] == ("LocalTransactionResolves", COMMITTED)
    assert bfs.explore(model(**{"protocol.version": "rocketmq-4.9", "faults.total": 0})).exit_code == 0


# mutants: (property, shortest counterexample's length, states when found, loop start or None)
MUTANTS = {"unknown-as-commit": ("MessageOnlyIfCommitted", 4, 64, None),
           "discard-commits": ("MessageOnlyIfCommitted", 4, 58, None),
           "check-never-discards": ("EveryTransactionResolved", 7, 1_681, 6)}


@pytest.mark.parametrize("mutant", MUTANTS)
def test_mutant_is_caught_with_its_pinned_shortest_counterexample(mutant):
    out = graph.explore(model(**{"model.mutant": mutant}), graph.GraphOptions(properties=CLAIMED))
    (v,) = out.violations
    assert (v.property, len(v.path), out.stats.distinct, v.path.loop) == MUTANTS[mutant]


def test_no_read_of_rolled_back_fails_when_an_unknown_transaction_is_answered_commit():
    out = bfs.explore(model(**{"model.mutant": "unknown-as-commit"}),
                      bfs.BfsOptions(properties=["NoReadOfRolledBack"]))
    (v,) = out.violations
    assert len(v.path) == 6 and out.stats.distinct == 356
    assert v.path.actions[3] == ("ExecuteLocalTransaction", ROLLBACK_MESSAGE)
    assert v.path.actions[4] == ("DeliverEndTransaction", COMMIT, True)


def test_not_claimed_behaviours_are_witnessed_not_reported_as_violations():
    out = bfs.explore(model())
    assert out.exit_code == 0
    for name, (_, witness) in claims.NOT_CLAIMED.items():
        assert witness in out.checked and witness not in out.not_applicable, name
        prop = next(p for p in model().properties() if p.name == witness)
        assert prop.claim.startswith("not claimed:")


def test_every_reachable_state_round_trips_through_its_trace_form():
    m = model()
    states = bfs_order(m, 10_000)
    assert len(states) == 1_714
    for s in states:
        assert m.itf_decode(m.itf_encode(s)) == s
    for s in list(states)[:200]:
        for a, _ in m.successors(s):
            assert m.itf_decode_action(m.itf_encode_action(a)) == a
            assert m.describe(s, a, m.step(s, a))


def test_bfs_and_graph_traces_replay(tmp_path):
    c = cfg(**{"protocol.version": "rocketmq-4.3"})
    m = registry.bind(c)
    out = bfs.explore(m)
    trace = read(write_traces(out, c, m, tmp_path / "bfs")["CommittedMessageNotLost"])
    r = replay(trace)
    assert r.reproduced and r.steps == 7
    c = cfg(**{"model.mutant": "check-never-discards"})
    m = registry.bind(c)
    out = graph.explore(m, graph.GraphOptions(properties=["EveryTransactionResolved"]))
    trace = read(write_traces(out, c, m, tmp_path / "graph")["EveryTransactionResolved"])
    r = replay(trace)
    assert r.reproduced and r.steps == 7
    assert kafka_mc("render", str(tmp_path / "graph" / "EveryTransactionResolved.itf.json"),
                    "--format", "mermaid").returncode == 0


def test_simulate_and_swarm_walk_it_and_find_the_seeded_bug():
    m = model()
    out = simulate.explore(m, SimulateOptions(runs=500, seed=0))
    assert out.exit_code == 0 and (out.stats.distinct, out.stats.generated) == (677, 4_716)
    out = swarm.explore(m, SimulateOptions(runs=500, seed=0))
    assert out.exit_code == 0 and (out.stats.distinct, out.stats.generated) == (804, 4_589)
    assert out.extra["swarm"]["families"] == ["LocalTransactionResolves", "ProducerCrash",
                                              "LoseEndTransaction", "LoseCheck", "BrokerRestart"]
    old = model(**{"protocol.version": "rocketmq-4.3"})
    (v,) = simulate.explore(old, SimulateOptions(runs=2000, seed=0)).violations
    assert (v.property, len(v.path)) == ("CommittedMessageNotLost", 7)
    (v,) = swarm.explore(old, SimulateOptions(runs=2000, seed=0)).violations
    assert (v.property, len(v.path)) == ("CommittedMessageNotLost", 8)


def test_the_web_explorer_shows_its_panels():
    client = TestClient(create_app(Explorer(cfg())))
    d = client.get("/api/state", params={"path": "0.0"}).json()
    assert [c["name"] for c in d["components"]] == ["producer", "application", "broker",
                                                     "network", "consumer", "faults"]
    assert d["changes"] and any(a["name"] == "ExecuteLocalTransaction" for a in d["actions"])
    assert {p["name"] for p in d["properties"]} >= set(CLAIMED[:3])


def test_unknown_local_transaction_sends_no_end_transaction():
    m = model()
    s = m.step(m.step(m.init_states()[0], ("SendHalfMessage",)), ("ExecuteLocalTransaction", UNKNOW))
    assert m.step(s, ("EndTransaction",)).ends == ()


def test_spark_agrees_with_bfs_on_the_tiny_config():
    pytest.importorskip("pyspark")
    from kafka_mc.explorers.spark import search as spark_explorer
    from kafka_mc.explorers.spark.search import SparkOptions
    from tests.conftest import ROOT
    c = registry.load(resolve_config_path("rocketmq-tiny"))
    expected = bfs.explore(registry.bind(c))
    options = SparkOptions(workers=1, conf=(("spark.executorEnv.PYTHONPATH", str(ROOT)),))
    with spark_explorer.session(options) as session:
        got = spark_explorer.explore(c, spark=session)
    assert (got.stats.distinct, got.stats.generated, got.stats.depth) == (155, 299, 10)
    assert (expected.stats.distinct, expected.stats.generated) == (155, 299)
    assert got.exit_code == expected.exit_code == 0 and got.coverage == expected.coverage


def test_stateful_walks_it_and_finds_the_seeded_bug():
    from kafka_mc.explorers.walks.stateful import StatefulOptions, explore
    out = explore(model(), StatefulOptions(max_examples=50, seed=0))
    assert out.exit_code == 0 and (out.stats.distinct, out.stats.generated) == (192, 415)
    out = explore(model(**{"protocol.version": "rocketmq-4.3"}),
                  StatefulOptions(max_examples=300, seed=0))
    (v,) = out.violations
    assert (v.property, len(v.path)) == ("CommittedMessageNotLost", 8)


def _after(m, *actions):
    s = m.init_states()[0]
    for a in actions:
        assert a in m.actions(s), (a, m.actions(s))
        s = m.step(s, a)
    return s


LATE_COMMIT = (("SendHalfMessage",), ("ExecuteLocalTransaction", COMMIT_MESSAGE),
               ("EndTransaction",), ("TransactionCheck",), ("DeliverEndTransaction", COMMIT, False))


@pytest.mark.parametrize("version, real", [("rocketmq-4.9", 1), ("rocketmq-5.1", 0)])
def test_a_producers_end_transaction_past_check_immunity_is_refused_from_5_1(version, real):
    """ISSUE #6402 (5.1.1): rejectCommitOrRollback refuses it once the check-back has begun."""
    assert _after(model(**{"protocol.version": version}), *LATE_COMMIT).real == real


@pytest.mark.parametrize("version, half, pending", [("rocketmq-4.9", DONE, False),
                                                    ("rocketmq-5.1", PENDING, True)])
def test_op_messages_wait_for_the_batch_service_from_5_1_and_a_restart_loses_them(
        version, half, pending):
    """RIP-50 (5.1.0): deletePrepareMessage queues the op data for TransactionalOpBatchService."""
    m = model(**{"protocol.version": version})
    s = _after(m, *LATE_COMMIT[:3], ("DeliverEndTransaction", COMMIT, False))
    assert (s.real, s.half, s.op_pending) == (1, half, pending)
    if pending:   # the half message is checked back again: the answer commits it a second time
        s = _after(m, *LATE_COMMIT[:3], ("DeliverEndTransaction", COMMIT, False),
                   ("BrokerRestart",), ("TransactionCheck",), ("CheckTransactionState",),
                   ("DeliverEndTransaction", COMMIT, True))
        assert s.real == 2


def test_the_graph_command_writes_its_state_graph(tmp_path):
    r = kafka_mc("graph", "rocketmq-tiny", "--format", "json", "--out", str(tmp_path / "g.json"))
    assert r.returncode == 0 and "155 states, 299 edges" in r.stdout + r.stderr
