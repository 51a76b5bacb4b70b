"""The parts of ``kafka-mc real explore`` (explorers/guided/explore.py, issue 58 item 3) that need
no JVM: a class's model path written as a trace the reproduce machinery loads (it replays, and
claims nothing), the classes the harness cannot drive and why, a recorded run judged for the
class it was sent to witness, and the session saved and resumed. tests/realkafka/test_explore.py
runs the loop on real Kafka."""
import json
import shutil
from pathlib import Path

import pytest

from kafka_mc.explorers.guided import coverage as cov, explore as ex
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.realkafka import reproduce as repro

RUNS = Path(__file__).parent / "reproductions"
MARKER = RUNS / "kafka-3.6-marker_closes_its_own_transaction-on-3.6.2"
STALE = "HandleWriteTxnMarkers: late copy; ABORT appended over an open transaction; answers NONE"


def small(preset="kafka-3.6", **values):
    """two-transactions (one producer, two transactions, no fault): a few thousand states."""
    cfg = registry.load(resolve_config_path("two-transactions")).with_values(
        **{"protocol.version": preset, "check.symmetry": False, **values})
    return registry.bind(cfg), cfg


def test_a_class_s_path_is_a_trace_the_reproduce_machinery_loads(tmp_path):
    model, cfg = small()
    r = cov.reach(model, walks=0)
    c = "HandleWriteTxnMarkers: ABORT appended, nothing open; answers NONE"
    steps = ex.path_trace(model, cfg, r.classes[c], tmp_path / "path.itf.json")
    loaded = repro.load(str(tmp_path / "path.itf.json"), counterexample=False)
    assert steps == len(loaded.trace.actions) == len(r.classes[c]) - 1
    assert loaded.preset == "kafka-3.6" and loaded.trace.actions[-1][0] == "HandleWriteTxnMarkers"
    # a path claims nothing: as a counterexample it is refused
    with pytest.raises(repro.ReproduceError, match="does not show its claim"):
        repro.load(str(tmp_path / "path.itf.json"))


def test_a_class_only_steps_the_harness_cannot_run_reach_is_named_with_why():
    model, cfg = small()
    everything = cov.reach(model, walks=0)
    drivable = cov.reach(model, walks=0, allowed=cov.Allowed(
        "one broker", lambda a: repro.drivable(model.itf_encode_action(a), 1)))
    # TransactionManager's completion without EndTxn is driven too: every class here is
    assert everything.exhaustive and set(drivable.classes) == set(everything.classes)
    assert "CompleteTransaction: ABORTING_TRANSACTION -> READY" in drivable.classes
    timeouts, _ = small(**{"faults.transaction_timeouts": 1})
    r = cov.reach(timeouts, max_states=3000, walks=0)
    c = next(c for c in r.classes if c.startswith("ExpireTransaction"))
    why = ex.undrivable(timeouts, r.classes[c], 1)
    assert "ExpireTransaction" in why and "has no real counterpart in the harness" in why


def test_a_recorded_run_witnesses_the_class_it_took(tmp_path):
    shutil.copytree(MARKER, tmp_path / "conform")
    outcome, why, classes = ex.judge_run(tmp_path / "conform", STALE, 100_000)
    assert outcome == "witnessed" and "every behaviour" in why and STALE in classes
    assert json.loads((tmp_path / "conform" / "conformance.json").read_text())["verdict"] == \
        "conforms"
    assert (tmp_path / "conform" / "behaviour.itf.json").is_file()
    # a class the run did not take: missed, the run conforming
    outcome, why, classes = ex.judge_run(tmp_path / "conform", "CrashProducer", 100_000)
    assert outcome == "missed" and "CrashProducer" not in classes and STALE in classes


def test_a_session_is_saved_after_each_run_and_goes_on_from_it(tmp_path):
    session = ex.Exploration("3.6.2", "kafka-3.6", {"A": (0, 1), "B": (0, 2), "C": (0, 1, 1)},
                             {"A": (0, 1), "B": (0, 2)})
    session.attempts.append(ex.Attempt("A", "witnessed", "every behaviour", 1, 12.0,
                                       str(tmp_path / "001-A"), ["A", "B"]))
    session.witnessed.update(A=1, B=1)
    session.runs = 1
    ex.save(session, tmp_path)
    d = json.loads((tmp_path / "explore.json").read_text())
    assert (d["runs"], d["witnessed"], d["reached"], d["coverage"]) == (1, 2, 3, 0.6667)
    assert d["never_witnessed"] == [{"class": "C", "why": "cannot-drive: no path found takes "
                                                          "only steps the harness runs"}]
    attempts, runs = ex.resumed(tmp_path)
    assert [a.cls for a in attempts] == ["A"] and runs == 1
    # the next target: the path taking the most classes not witnessed (C's takes A, B and C)
    assert ex.next_target(session, {"A": {"A"}, "B": {"B"}, "C": {"A", "C"}}, set()) is None
    session.drivable["C"] = (0, 1, 1)
    assert ex.next_target(session, {"A": {"A"}, "B": {"B"}, "C": {"A", "C"}}, set()) == "C"
    text = "\n".join(ex.table(session))
    assert "witnessed 2 of the 3 classes" in text and "never witnessed (1)" in text
