"""Coverage classes and ``kafka-mc real coverage`` (explorers/guided/coverage.py, issue 58 items
1 and 2). On the TwoPhase toy (its classes declared beside its observations): the model's
classes reached exhaustively with their shortest paths, and those a validated log of its nodes
witnessed. On Kafka: a step's class is its handler's branch (a stale marker's late copy closing
an open transaction), and ``real coverage`` over the recorded reproductions of three releases
(tests/explorers/reproductions) tells reached, witnessed and never witnessed per release, with
JSON, a DOT picture and a cache. Bad input is one line and exit 2. No JVM."""
import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from kafka_mc.explorers import cli
from kafka_mc.explorers.conformance import validate
from kafka_mc.explorers.guided import coverage as cov, runs, verdict
from kafka_mc.model import registry

RUNS = Path(__file__).parent / "reproductions"
MARKER = RUNS / "kafka-3.6-marker_closes_its_own_transaction-on-3.6.2"
OTHER_CONFIG = Path(__file__).parents[1] / "model" / "conformance_runs" / "kafka-3.6.2-commit"


def kmc(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def one_line_exit_2(code, out, err, expect):
    assert code == 2, (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafka-mc: error: ") and expect in err, err


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_MC_COVERAGE_CACHE", str(tmp_path / "cache"))


def test_the_toy_declares_its_classes_and_the_model_reaches_each_by_a_shortest_path():
    model = registry.bind(registry.load(model="twophase", overrides={"model.resource_managers": 2}))
    r = cov.reach(model)
    assert r.exhaustive and (r.states, r.transitions) == (56, 153)
    assert sorted(r.classes) == [
        "RMChooseToAbort: working -> aborted", "RMPrepare: working -> prepared",
        "RMRcvAbortMsg: aborted -> aborted", "RMRcvAbortMsg: prepared -> aborted",
        "RMRcvAbortMsg: working -> aborted", "RMRcvCommitMsg: committed -> committed",
        "RMRcvCommitMsg: prepared -> committed", "TMAbort: TM init -> aborted",
        "TMCommit: TM init -> committed", "TMRcvPrepared: TM init -> init"]
    states, actions = cov.walk(model, r.classes["TMCommit: TM init -> committed"])
    assert [a[0] for a in actions] == ["RMPrepare", "TMRcvPrepared", "RMPrepare",
                                       "TMRcvPrepared", "TMCommit"]
    assert model.coverage(states[-2], actions[-1], states[-1]) == \
        ("TMCommit: TM init -> committed",)
    # a log of the nodes where both commit: what its behaviour witnessed
    run = [{"node": n, "event": e} for n, e in (("alpha", "prepare"), ("beta", "prepare"),
                                                 ("TM", "commit"), ("alpha", "rcv-commit"))]
    c = validate(model, run)
    seen, edges = cov.behaviour_classes(model, c.states, c.actions)
    assert seen == {"RMPrepare: working -> prepared", "TMRcvPrepared: TM init -> init",
                    "TMCommit: TM init -> committed", "RMRcvCommitMsg: prepared -> committed"}
    assert len(seen & set(r.classes)) / len(r.classes) == 0.4 and edges == {}


def test_a_kafka_class_is_the_handler_s_branch():
    release, cfg = runs.recorded_run(MARKER)
    events = runs.read_run(MARKER)
    model, _ = runs.model_for(cfg, release, MARKER, events)
    j = verdict.judge(model, events, verdict.judged_property(model,
                                                             "marker_closes_its_own_transaction"))
    c = j.violating
    i = j.violation["step"]
    assert model.coverage(c.states[i - 1], c.actions[i - 1], c.states[i]) == (
        "HandleWriteTxnMarkers: late copy; ABORT appended over an open transaction; answers NONE",)
    classes, edges = cov.behaviour_classes(model, c.states, c.actions)
    assert "DuplicateRequest: WriteTxnMarkers" in classes
    assert "CommitTxnLogAppend: Ongoing -> PrepareAbort; answers NONE; sends WriteTxnMarkers" \
        in classes
    assert ("Ongoing", "PrepareAbort") in edges["TransactionState"]


def test_real_coverage_tells_reached_witnessed_and_never_witnessed_per_release(tmp_path):
    dot = tmp_path / "machines.dot"
    code, out, err = kmc("real", "coverage", RUNS, "--max-states", 3000, "--walks", 0, "--json",
                         "--dot", dot)
    assert code == 0, err
    report = json.loads(out)
    assert [r["version"] for r in report["releases"]] == ["3.6.2", "4.0.2", "4.4.0"]
    for r in report["releases"]:
        assert (r["runs"], r["conforming"]) == (1, 1)
        assert not r["model"]["exhaustive"] and r["model"]["states"] >= 3000
        classes = {c["class"]: c for c in r["classes"]}
        assert r["witnessed"] == sum(c["runs"] > 0 for c in classes.values())
        assert r["coverage"] == round(r["witnessed"] / len(classes), 4)
        never = [c for c in classes.values() if not c["runs"]]
        assert never and all(len(c["path"]) == c["path_steps"] for c in never)
        # the second transaction is beyond a search of 3,000 states: the runs witnessed more
        assert any("Complete" in c["class"] for c in r["beyond_the_model_search"])
    beyond = [c["class"] for c in report["releases"][0]["beyond_the_model_search"]]
    assert "HandleWriteTxnMarkers: late copy; ABORT appended over an open transaction; " \
        "answers NONE" in beyond
    # on 4.4.0 the copy is rejected, and the class says why (its answer, dropped by the proxy)
    beyond = [c["class"] for c in report["releases"][2]["beyond_the_model_search"]]
    assert "HandleWriteTxnMarkers: late copy; answers INVALID_PRODUCER_EPOCH" in beyond
    assert "digraph coverage" in dot.read_text() and "style=solid" in dot.read_text()
    # the same again comes from the cache, and reads as a table
    code, out, err = kmc("real", "coverage", RUNS / MARKER.name, "--max-states", 3000,
                         "--walks", 0)
    assert code == 0 and "Kafka 3.6.2 (preset kafka-3.6)" in out and "never witnessed:" in out
    assert "the model's classes on this config" not in err     # cached
    # random walks after the bounded search reach deeper classes
    code, out, err = kmc("real", "coverage", MARKER, "--max-states", 3000, "--walks", 50, "--json")
    walked = json.loads(out)["releases"][0]
    assert walked["model"]["walks"] == 50
    assert walked["model"]["classes"] > report["releases"][0]["model"]["classes"]


def test_bad_input_to_real_coverage_is_one_line(tmp_path):
    one_line_exit_2(*kmc("real", "coverage", tmp_path / "missing"), "no such folder")
    one_line_exit_2(*kmc("real", "coverage", tmp_path), "holds no run folders")
    shutil.copytree(OTHER_CONFIG, tmp_path / "other")
    (tmp_path / "other" / "run.json").write_text(json.dumps(
        {"version": "3.6.2", "seed": 0, "config": {"model": {"name": "kafka"}}}))
    one_line_exit_2(*kmc("real", "coverage", MARKER, tmp_path / "other"), "runs of two configs")
    one_line_exit_2(*kmc("real", "coverage", RUNS, "--version", "3.6.2"),
                    "a run of Kafka 4.0.2, not 3.6.2")
    one_line_exit_2(*kmc("real", "coverage", MARKER, "--config", "tiny"),
                    "a run of another config than tiny")
    (tmp_path / "other" / "run.json").write_text(json.dumps(
        {"version": "3.6.2", "seed": 0, "config": {"model": {"name": "pulsar"}}}))
    # a run of another model: refused by the reader of run folders before any model is bound
    one_line_exit_2(*kmc("real", "coverage", tmp_path / "other"),
                    "run.json's config is of model 'pulsar', not kafka")
