"""A property judged on the behaviours a recorded run conforms to (explorers/guided/verdict.py,
issue 58 item 4): on the TwoPhase toy every answer (all, some, none, no behaviour, undecided),
and on three recorded reproductions of real Kafka (tests/explorers/reproductions, made by
tools/make_counterexamples.py --real): the late COMMIT marker over an aborted transaction on
4.0.2 violates aborted_writes_stay_aborted in every behaviour and on 4.4.0 in none; the stale
ABORT copy closing the next transaction on 3.6.2 violates marker_closes_its_own_transaction
(a property of state no client sees) at the marker's step, with the coordinator's state then.
No JVM: each judges a kept recording in about a second."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.explorers.conformance import validate
from kafka_mc.explorers.guided import runs, verdict
from kafka_mc.explorers.guided.reproduction import judge_reproduction
from kafka_mc.model import registry
from kafka_mc.model.core import Expectation, Property
from kafka_mc.realkafka import reproduce as repro
from tests.explorers.test_conformance import log   # the TwoPhase event log

ROOT = Path(__file__).resolve().parents[2]
RUNS = Path(__file__).parent / "reproductions"
MARKER = RUNS / "kafka-3.6-marker_closes_its_own_transaction-on-3.6.2"
ABORTED = RUNS / "kafka-4.0.2-aborted_writes_stay_aborted-on-4.0.2"
ABORTED_NEWEST = RUNS / "kafka-4.0.2-aborted_writes_stay_aborted-on-4.4.0"


def twophase(n=2, name="twophase"):
    return registry.bind(registry.load(model=name, overrides={"model.resource_managers": n}))


def prop(model, name):
    return next(p for p in model.properties() if p.name == name)


# TMRcvPrepared is silent: which resource manager's Prepared the TM took first no log shows
ALPHA_FIRST = Property("alpha_first", Expectation.TRANSITION,
                       lambda s, a, t: a != ("TMRcvPrepared", 2) or bool(s >> 6 & 1),  # r1 in tmPrepared (N = 2)
                       "the TM takes alpha's Prepared before beta's")
BOTH_COMMIT = log("alpha prepare", "beta prepare", "TM commit", "alpha rcv-commit",
                  "beta rcv-commit")


def test_a_violation_every_conforming_behaviour_shows_is_all():
    model = twophase(2, "twophase-broken")
    run = log("alpha prepare", "TM commit", "alpha rcv-commit", "beta choose-abort")
    j = verdict.judge(model, run, prop(model, "TCConsistent"))
    assert j.answer == "all" and j.violated
    assert j.holding.verdict == "diverges" and j.violating.conforms
    v = j.violation    # alpha committed and beta aborted: the second of the two is the violation
    assert v["name"] in ("RMChooseToAbort", "RMRcvCommitMsg") and v["event_index"] in (2, 3)
    assert v["event"] == {"node": ("alpha", "beta")[v["event_index"] - 2],
                          "event": ("rcv-commit", "choose-abort")[v["event_index"] - 2]}
    assert v["state"]["rmState"] == {"r1": "committed", "r2": "aborted"}   # its components
    assert "every behaviour the run conforms to violates TCConsistent" in j.reason


def test_a_violation_in_what_no_event_records_is_some_with_both_behaviours():
    j = verdict.judge(twophase(), BOTH_COMMIT, ALPHA_FIRST)
    assert j.answer == "some" and j.violated
    assert j.violation["name"] == "TMRcvPrepared" and j.violation["event"] is None
    assert j.holding.conforms and j.violating.conforms
    assert "the run does not tell them apart" in j.reason
    assert "silent" in "\n".join(j.lines())


def test_a_run_no_conforming_behaviour_violates_is_none():
    model = twophase()
    j = verdict.judge(model, BOTH_COMMIT, prop(model, "TCConsistent"))
    assert j.answer == "none" and not j.violated and j.violation is None
    assert j.violating.verdict == "diverges" and j.holding.conforms


def test_a_run_outside_the_model_is_no_behaviour_and_the_node_limit_undecided():
    model = twophase()
    impossible = log("alpha prepare", "beta choose-abort", "TM commit")
    assert verdict.judge(model, impossible, prop(model, "TCConsistent")).answer == "no-behaviour"
    j = verdict.judge(model, BOTH_COMMIT, prop(model, "TCConsistent"), max_nodes=3)
    assert j.answer == "undecided" and "node limit (3)" in j.reason


def test_only_invariants_and_transition_properties_are_judged():
    model = twophase()
    witness = next(p for p in model.properties() if p.expectation is Expectation.SOMETIMES)
    assert verdict.judged_property(model, witness.name) is None
    assert verdict.judged_property(model, "TCConsistent") is not None
    with pytest.raises(ValueError, match="only always and transition properties"):
        verdict.folds(witness)


def test_a_fold_that_accepts_everything_is_the_plain_validation():
    model = twophase()
    plain = validate(model, BOTH_COMMIT)
    folded = validate(model, BOTH_COMMIT, fold=verdict.folds(prop(model, "TCConsistent"))[1])
    assert plain.conforms and folded.conforms and folded.actions == plain.actions


# --- the recorded reproductions of real Kafka ------------------------------------------------

def judged(folder, name, **kw):
    release, cfg = runs.recorded_run(folder)
    events = runs.read_run(folder)
    model, _ = runs.model_for(cfg, release, folder, events, **kw)
    return verdict.judge(model, events, verdict.judged_property(model, name))


def test_the_late_commit_marker_on_4_0_2_violates_aborted_writes_stay_aborted_in_every_behaviour():
    j = judged(ABORTED, "aborted_writes_stay_aborted")
    assert j.answer == "all"
    v = j.violation
    # the violation shows when the application is told "aborted" while the record is committed
    assert v["name"] == "ReceiveEndTxnResponse" and v["event"]["api"] == "EndTxn"
    assert v["state"]["DescribeTransactions t0"].startswith("PrepareAbort, producer id 0, epoch 2")
    log0 = v["state"]["partition 0"]
    assert "2: data t0.i0.x1.r0" in log0 and "3: COMMIT (producer 0 epoch 1" in log0


def test_the_same_schedule_on_4_4_0_violates_it_in_no_behaviour():
    j = judged(ABORTED_NEWEST, "aborted_writes_stay_aborted")
    assert j.answer == "none" and j.holding.conforms


def test_the_4_0_2_run_held_against_the_fixed_preset_conforms_to_no_behaviour():
    """KIP-1228's model (kafka-4.3) rejects the stale COMMIT that real 4.0.2 appended."""
    assert judged(ABORTED, "aborted_writes_stay_aborted",
                  **{"protocol.version": "kafka-4.3"}).answer == "no-behaviour"


def test_the_stale_abort_copy_on_3_6_2_closes_the_next_transaction_with_its_evidence():
    j = judged(MARKER, "marker_closes_its_own_transaction")
    assert j.answer == "all"
    v = j.violation
    assert v["name"] == "HandleWriteTxnMarkers" and v["step"] == v["steps"]
    assert "ABORT marker appended at offset 3" in v["events"]        # the marker's offset
    assert v["event"]["api"] == "WriteTxnMarkers" and v["event"]["endpoint"].endswith("INTERNAL")
    # the coordinator then, as the conforming behaviour has it: the next transaction Ongoing
    assert v["state"]["DescribeTransactions t0"].startswith("Ongoing")
    assert "2: data t0.i0.x1.r0" in v["state"]["partition 0"]


def test_the_reproduce_verdict_is_the_judgement_and_its_behaviours_replay(tmp_path):
    shutil.copytree(MARKER, tmp_path / "conform")
    (tmp_path / "report.json").write_text("{}")
    result = repro.Result("not-reproduced", 0, "t.itf.json", "marker_closes_its_own_transaction",
                          "3.6.2", "kafka-3.6", 30, 30, 1.0, str(tmp_path))
    j = judge_reproduction(result)
    assert j.answer == "all" and (result.verdict, result.exit_code) == ("reproduced", 12)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "reproduced" and report["judgement"]["answer"] == "all"
    assert not (tmp_path / "judged-holding.itf.json").exists()
    replayed = subprocess.run([sys.executable, "-m", "kafka_mc", "replay",
                               str(tmp_path / "judged-violating.itf.json")],
                              capture_output=True, text=True, cwd=ROOT)
    assert replayed.returncode == 12, replayed.stdout + replayed.stderr
    assert "marker_closes_its_own_transaction" in replayed.stdout
    # the run left the trace (a divergence) and no behaviour violates: diverged
    shutil.rmtree(tmp_path / "conform")
    shutil.copytree(ABORTED_NEWEST, tmp_path / "conform")
    left = repro.Result("diverged", 16, "t.itf.json", "aborted_writes_stay_aborted", "4.4.0",
                        "kafka-4.3", 20, 35, 1.0, str(tmp_path), divergence={"step": 21})
    assert judge_reproduction(left).answer == "none" and left.exit_code == 16
    assert (tmp_path / "judged-holding.itf.json").exists()
    assert not (tmp_path / "judged-violating.itf.json").exists()
