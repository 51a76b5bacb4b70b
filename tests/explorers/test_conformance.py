"""The conformance validator (explorers/conformance.py) on a toy: TwoPhase and hand-written logs
of its nodes (model/toys/twophase_observations.py). A run the model can produce conforms, with
the behaviour written as a trace that replays; one with an impossible event diverges there, with
the step that is missing; streams merged in an order other than the model's still conform."""
import json

import pytest

from kafka_mc.model import registry
from kafka_mc.model.observations import NoObservations, Observations, observations_of, state, step
from kafka_mc.explorers.conformance import validate, write_trace
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read


def twophase(n=3):
    return registry.bind(registry.load(model="twophase", overrides={"model.resource_managers": n}))


def log(*lines):
    """``"alpha prepare"`` -> {"node": "alpha", "event": "prepare"}; a third word is a value."""
    out = []
    for line in lines:
        node, event, *value = line.split()
        out.append({"node": node, "event": event, **({"value": value[0]} if value else {})})
    return out


COMMITTED = log("alpha prepare", "beta prepare", "gamma prepare", "TM commit",
                "alpha rcv-commit", "beta rcv-commit", "gamma state prepared",
                "gamma rcv-commit", "gamma state committed", "alpha heartbeat")


def test_a_run_the_model_can_produce_conforms_and_its_behaviour_replays(tmp_path):
    model = twophase()
    r = validate(model, COMMITTED)
    assert r.conforms and r.divergence is None
    assert (r.records, r.observed, r.matched) == (10, 9, 9)     # the heartbeat is not observed
    names = [a[0] for a in r.actions]
    # the TM's receipts are silent: three taken, unrecorded, before its commit
    assert names.count("TMRcvPrepared") == 3 and names.index("TMCommit") > 2
    assert [e for e in r.steps if e >= 0] != [] and r.steps.count(-1) == 3
    # names are renamed in order: alpha, beta, gamma are r1, r2, r3
    assert r.actions[r.steps.index(0)] == ("RMPrepare", 1)
    assert r.actions[r.steps.index(7)] == ("RMRcvCommitMsg", 3)
    file = tmp_path / "run.itf.json"
    write_trace(r, model, model.cfg, file)
    trace = read(file)
    assert trace.meta["explorer"] == "conformance"
    assert trace.meta["conformance"]["observed"] == 9
    replayed = replay(trace)
    assert replayed.steps == len(r.actions) and not replayed.reproduced   # TCConsistent holds


def test_an_impossible_event_is_a_divergence_naming_the_event_and_what_is_enabled():
    # beta aborts on its own, yet the TM commits: TMCommit needs every RM prepared
    run = log("alpha prepare", "beta choose-abort", "gamma prepare", "TM commit",
              "alpha rcv-commit")
    r = validate(twophase(), run)
    assert r.verdict == "diverges" and not r.conforms
    d = r.divergence
    assert (d.event, d.label, d.matched) == (3, "TM: commit", 3)
    assert d.kinds == ("TMCommit",) and d.near == ()
    assert "TMAbort" in d.enabled and not any(a.startswith("TMCommit") for a in d.enabled)
    assert (4, "alpha: rcv-commit") in d.pending
    text = "\n".join(d.report())
    assert "diverges at event 3 (TM: commit)" in text and "(TMCommit)" in text


def test_a_wrong_state_is_reported_with_the_field_that_differs():
    run = log("alpha prepare", "alpha state committed")
    r = validate(twophase(2), run)
    d = r.divergence
    assert d.event == 1 and d.near
    assert d.near[0].reason == "rmState[r1]: recorded 'committed', model 'prepared'"


def test_streams_merged_out_of_the_model_order_still_conform():
    # each node's own log is in order, but the merge put alpha's receipt of Commit before the
    # other RMs prepared and before the TM committed: only each stream's order counts
    run = log("alpha prepare", "alpha rcv-commit", "beta prepare", "beta rcv-commit",
              "TM commit", "gamma prepare", "gamma rcv-commit")
    r = validate(twophase(), run)
    assert r.conforms
    order = [r.steps[i] for i, a in enumerate(r.actions) if a[0] != "TMRcvPrepared"]
    assert order.index(4) < order.index(1)      # the TM committed before alpha received it
    # the same events with one node's own order broken do not
    broken = log("alpha rcv-commit", "alpha prepare", "beta prepare", "TM commit")
    d = validate(twophase(2), broken).divergence
    assert d.event == 0 and d.kinds == ("RMRcvCommitMsg",)


def test_the_node_limit_gives_unknown_not_a_verdict():
    r = validate(twophase(), COMMITTED, max_nodes=3)
    assert r.verdict == "unknown" and "node limit 3" in r.summary()


def test_a_model_without_observations_is_one_clear_error():
    class Bare:
        name = "bare"
    with pytest.raises(NoObservations, match="model 'bare' declares no observations"):
        observations_of(Bare(), [])


def test_a_model_offering_its_own_observations_is_asked_first():
    """The hook: a bound model's ``observations(events)``."""
    model = twophase(1)
    calls = []

    def mine(events):
        calls.append(len(events))
        return Observations(observe=lambda e: step(e["event"], ("RMPrepare",), lambda s, a, t: None)
                            if e["event"] == "p" else state(e["event"], lambda s: None),
                            stream=lambda e: 0, silent=lambda name: False)
    model.observations = mine
    r = validate(model, [{"event": "p"}, {"event": "anything"}])
    assert r.conforms and calls == [2] and r.actions == (("RMPrepare", 1),)


def test_the_result_reads_as_json():
    r = validate(twophase(), log("alpha prepare", "TM commit"))
    out = json.loads(json.dumps(r.to_dict()))
    assert out["verdict"] == "diverges" and out["divergence"]["event"] == 1


def test_events_far_out_of_the_run_order_are_found_by_widening_the_window():
    """The TM's commit logged before every prepare it needs, with more than a window's worth of
    other lines between: the first search cannot reach the prepares, the widened one does."""
    from kafka_mc.explorers import conformance
    run = log("TM commit", *["alpha heartbeat"] * (2 * conformance.WINDOW),
              "alpha prepare", "beta prepare", "gamma prepare")
    r = validate(twophase(), run)
    assert r.conforms and [a[0] for a in r.actions][-1] == "TMCommit"


def test_runs_are_read_from_json_lines_and_bad_ones_are_one_line(tmp_path):
    from kafka_mc.explorers.conformance import RunError, read_events
    a, b = tmp_path / "events.jsonl", tmp_path / "history.jsonl"
    a.write_text('{"node": "alpha", "event": "prepare"}\n\n')
    b.write_text('{"node": "TM", "event": "abort"}\n')
    assert read_events(a, b) == [{"node": "alpha", "event": "prepare"},
                                 {"node": "TM", "event": "abort"}]
    b.write_text('{"node": "TM"}\n[1]\n')
    with pytest.raises(RunError, match=r"history.jsonl:2: not a JSON object"):
        read_events(a, b)
    b.write_text('{"node": \n')
    with pytest.raises(RunError, match=r"history.jsonl:1: not JSON"):
        read_events(b)
    with pytest.raises(RunError, match="no such file"):
        read_events(tmp_path / "missing.jsonl")


# --- the end state -------------------------------------------------------------------------------

def ended(*states):
    """The run's end state: ``"alpha committed"`` -> alpha showed committed once it was over."""
    return [{"event": "end", "states": dict(s.split() for s in states)}]


RECEIVED = log("alpha prepare", "beta prepare", "TM commit", "alpha rcv-commit",
               "beta rcv-commit")


def test_a_run_ending_where_the_model_can_end_conforms():
    r = validate(twophase(2), RECEIVED + ended("alpha committed", "beta committed"))
    assert r.conforms and (r.observed, r.matched) == (7, 7)


def test_an_end_state_the_model_cannot_reach_is_a_divergence_at_the_end():
    run = RECEIVED + ended("alpha committed", "beta prepared")
    r = validate(twophase(2), run)
    d = r.divergence
    assert r.verdict == "diverges" and d.event == len(run) - 1 and d.matched == 6
    assert d.label == "end: beta prepared"
    assert d.near[0].reason == "rmState[r2]: recorded 'prepared', model 'committed'"


def test_the_end_state_is_held_against_the_end_not_an_earlier_state():
    # alpha was working at the start, not at the end: consumed before alpha's prepare, the end
    # state would have been met
    r = validate(twophase(2), log("alpha prepare") + ended("alpha working"))
    assert r.verdict == "diverges" and r.divergence.label == "end: alpha working"
    # silent steps are still taken before it: the TM's receipt of alpha's Prepared is unlogged
    assert validate(twophase(1), log("alpha prepare") + ended("alpha prepared")).conforms
