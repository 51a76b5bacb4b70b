"""Replay: the first divergence reported precisely, every replayable kind, and the exit codes of
``kafka-mc replay`` (the violation reproduces / the trace is clean now / it does not replay)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.explorers import cli
from kafka_mc.explorers.core.result import EXIT_DEADLOCK, EXIT_MODEL_ERROR, EXIT_OK, EXIT_SAFETY, EXIT_USAGE
from tests.traces.conftest import bfs_trace, bound, meta_for
from kafka_mc.traces.replay import Divergence, replay
from kafka_mc.traces.trace import Trace, TraceError, read

EXE = str(Path(sys.executable).with_name("kafka-mc"))


@pytest.fixture
def broken(write):
    model, trace = bfs_trace("twophase-broken", resource_managers=3)
    return model, write(model, trace)


def _edit(file, edit):
    doc = json.loads(file.read_text())
    edit(doc)
    file.write_text(json.dumps(doc))
    return read(file)


def test_divergence_names_the_step_the_field_and_both_values(broken):
    _, file = broken
    trace = _edit(file, lambda d: d["states"][4]["rmState"]["#map"][1].__setitem__(1, "prepared"))
    with pytest.raises(Divergence) as err:
        replay(trace)
    d = err.value
    assert (d.step, d.action) == (4, "RMChooseToAbort(rm=2)")
    assert str(d) == ('step 4 (RMChooseToAbort(rm=2)): rmState.r2 differs: recorded "prepared", '
                      'model gives "aborted"')


def test_divergence_in_a_set_shows_what_is_missing_and_lists_every_difference(broken):
    _, file = broken

    def edit(d):  # state 3 loses the Commit message and claims the TM aborted
        d["states"][3]["msgs"]["#set"] = [m for m in d["states"][3]["msgs"]["#set"]
                                          if m != {"#tup": ["Commit"]}]
        d["states"][3]["tmState"] = "aborted"
    with pytest.raises(Divergence) as err:
        replay(_edit(file, edit))
    d = err.value
    assert str(d).startswith('step 3 (TMCommit): tmState differs: recorded "aborted", model gives '
                             '"committed" (and 1 more differences')
    assert d.report() == ['divergence at step 3 (TMCommit): recorded -> model',
                          '  tmState: "aborted" -> "committed"',
                          '  msgs: + <<"Commit">>']


def test_a_disabled_action_lists_what_is_enabled(broken):
    _, file = broken
    trace = _edit(file, lambda d: (d["#meta"]["config"]["model"].update(name="twophase"),
                                   d["#meta"].update(model="twophase")))   # the two agree
    with pytest.raises(Divergence) as err:
        replay(trace)
    assert err.value.report() == [
        "divergence at step 3: TMCommit is not enabled; enabled there: TMRcvPrepared(rm=1), "
        "TMAbort, RMPrepare(rm=2), RMPrepare(rm=3), RMChooseToAbort(rm=2), RMChooseToAbort(rm=3)"]


def test_a_trace_the_fixed_model_runs_without_the_violation_is_clean(write):
    cfg, model = bound("twophase", resource_managers=3)
    s = model.init_states()[0]
    states, actions = [s], [("RMPrepare", 1), ("TMAbort",), ("RMRcvAbortMsg", 1)]
    for a in actions:
        states.append(model.step(states[-1], a))
    file = write(model, Trace.of(model, states, actions, meta_for(cfg, "TCConsistent", "always")))
    r = replay(read(file))
    assert not r.reproduced and r.steps == 3
    assert r.message == "TCConsistent holds in the last state: the violation no longer reproduces"
    assert cli.main(["replay", str(file)]) == EXIT_OK


def test_deadlock_model_error_and_transition_traces_replay(grid_models, tmp_path, capsys):
    out = str(tmp_path)
    assert cli.main(["check", "--model", "grid", "--set", "model.reset=false", "--out", out]) == 11
    assert cli.main(["check", "--model", "gridboom", "--out", out]) == 75
    assert cli.main(["check", "--model", "gridmono", "--out", out]) == 12
    capsys.readouterr()
    for name, code, message in [
            ("deadlock", EXIT_DEADLOCK, "the last state has no enabled action (deadlock)"),
            ("model_error", EXIT_MODEL_ERROR, "the model raises an exception"),
            ("NoReset", EXIT_SAFETY, "NoReset is violated by the last step")]:
        assert cli.main(["replay", str(tmp_path / f"{name}.itf.json")]) == code
        assert message in capsys.readouterr().out
    # the deadlock "fixed": with reset enabled, the same steps end in a state that can move on
    file = tmp_path / "deadlock.itf.json"
    _edit(file, lambda d: d["#meta"]["config"]["model"].update(reset=True))
    assert cli.main(["replay", str(file)]) == EXIT_OK


def test_replay_diff_shows_each_step_and_the_divergence(broken, capsys):
    _, file = broken
    assert cli.main(["replay", str(file), "--diff"]) == EXIT_SAFETY
    out = capsys.readouterr().out
    assert 'State 4: r2  chooses to abort\n   action: RMChooseToAbort(rm=2)\n' \
           '   rmState.r2: "working" -> "aborted"' in out
    assert out.rstrip().endswith("replayed 5 steps: TCConsistent is violated in the last state")
    _edit(file, lambda d: d["states"][2].update(tmPrepared={"#set": ["r2"]}))
    assert cli.main(["replay", str(file), "--diff"]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "divergence at step 2 (TMRcvPrepared(rm=1)): recorded -> model",
        '  tmPrepared: - "r2", + "r1"']
    assert captured.err == (
        'kafka-mc: error: step 2 (TMRcvPrepared(rm=1)): tmPrepared differs: the recorded value '
        'has {"r2"} and the model\'s has {"r1"}\n')


def test_console_script_exit_codes(broken, tmp_path):
    _, file = broken
    r = subprocess.run([EXE, "replay", str(file)], capture_output=True, text=True)
    assert r.returncode == 12 and "TCConsistent is violated" in r.stdout
    _edit(file, lambda d: d["states"][5].update(tmState="init"))
    r = subprocess.run([EXE, "replay", str(file), "--diff"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "step 5 (RMRcvCommitMsg(rm=1)): tmState differs" in r.stderr


# Traces survive the model growing (model.codec): a field added since decodes with its declared
# default; a field the model no longer has, or a configuration that now means something else,
# is refused with one line naming it.

KAFKA_GOLDEN = Path(__file__).resolve().parents[1] / "golden" / \
    "kafka-0.11-tiny.no_hanging_transactions.itf.json"


def _edited(tmp_path, edit):
    doc = json.loads(KAFKA_GOLDEN.read_text())
    edit(doc)
    path = tmp_path / "edited.itf.json"
    path.write_text(json.dumps(doc))
    return read(path)


def test_a_trace_written_before_a_fault_was_added_still_replays(tmp_path):
    def drop_budget(doc):  # as if faults.batch_expiries had not existed when it was written
        for st in doc["states"]:
            del st["budgets"]["batch_expiries"]
        del doc["#meta"]["config"]["faults"]["batch_expiries"]
    assert replay(_edited(tmp_path, drop_budget)).reproduced


def test_a_trace_with_a_field_the_model_lacks_is_refused(tmp_path):
    def add_field(doc):
        doc["states"][0]["budgets"]["meteor_strikes"] = 1
    with pytest.raises(TraceError, match="Budgets has no field 'meteor_strikes'"):
        replay(_edited(tmp_path, add_field))


def test_a_trace_whose_configuration_means_something_else_is_refused(tmp_path):
    def claim_pf(doc):  # written by a kafka-mc whose kafka-0.11 answered PRODUCER_FENCED
        doc["#meta"]["settings"] = {"protocol.producer_fenced_error": True}
    with pytest.raises(TraceError, match="protocol.producer_fenced_error = True; this kafka-mc's "
                                         "model has False"):
        replay(_edited(tmp_path, claim_pf))


# --- issue 48: malformed metadata and states are one line, never a crash -----------------------

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
KAFKA_GOLDEN = GOLDEN / "kafka-0.11-tiny.no_hanging_transactions.itf.json"


def _golden(tmp_path, edit):
    doc = json.loads(KAFKA_GOLDEN.read_text())
    edit(doc)
    f = tmp_path / "t.itf.json"
    f.write_text(json.dumps(doc))
    return f


def test_an_emptied_record_in_state_0_is_a_divergence_naming_its_fields(tmp_path):
    """``states[0].budgets = {}``: decoding fills the record's fields with defaults (as for a
    field added since the trace was written), which tells the state from every initial one; the
    divergence names the fields the file lacks (it crashed on an empty list of differences)."""
    f = _golden(tmp_path, lambda d: d["states"][0].update(budgets={}))
    with pytest.raises(Divergence) as err:
        replay(read(f))
    assert str(err.value).startswith("state 0 is not an initial state of the model: budgets.")
    assert "recorded (absent)" in str(err.value)
    assert err.value.report()[0].startswith("divergence at state 0")


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["#meta"].update(kind=["always"]), "cannot replay a trace of kind ['always']"),
    (lambda d: d["#meta"].update(kind={"a": 1}), "cannot replay a trace of kind {'a': 1}"),
    (lambda d: d["#meta"].update(property=["x"]), "property must be a name, got ['x']"),
    (lambda d: d["#meta"].update(model="twophase"),
     "model is 'twophase' but its configuration is of 'kafka'"),
    (lambda d: d.update(loop=19), "a trace of kind always has no loop"),
    (lambda d: d["#meta"].update(explorer="symbolic"), "a symbolic trace"),
])
def test_metadata_replay_cannot_use_is_one_line(tmp_path, edit, message):
    with pytest.raises(TraceError) as err:
        replay(read(_golden(tmp_path, edit)))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("trigger", [None, -1, 20, 99, "3", 1.5, True])
def test_a_lasso_trigger_must_be_a_state_index(tmp_path, trigger):
    f = _golden(tmp_path, lambda d: d["#meta"].update(trigger=trigger) or d.update(loop=19))
    with pytest.raises(TraceError, match=r"#meta trigger must be the index of a state \(0..19\)"):
        read(f)


def test_a_trigger_without_a_loop_is_refused(tmp_path):
    with pytest.raises(TraceError, match="only a lasso"):
        read(_golden(tmp_path, lambda d: d["#meta"].update(trigger=3)))


def test_duplicate_vars_are_refused(tmp_path):
    with pytest.raises(TraceError, match="vars: producers is listed twice"):
        read(_golden(tmp_path, lambda d: d["vars"].append("producers")))


@pytest.mark.parametrize("value, says", [(None, "null is not an ITF value"),
                                         (1.5, "a number with a fraction"),
                                         ([1], "a bare array")])
def test_itf_errors_speak_json_not_python(tmp_path, value, says):
    f = _golden(tmp_path, lambda d: d["states"][0].update(budgets=value))
    with pytest.raises(TraceError) as err:
        read(f)
    assert says in str(err.value) and "NoneType" not in str(err.value) \
        and "float" not in str(err.value) and "list" not in str(err.value)


@pytest.mark.parametrize("command", [["replay"], ["replay", "--diff"], ["minimize"],
                                     *(["render", "--format", f] for f in
                                       ("text", "mermaid", "html", "dot"))])
def test_every_trace_command_refuses_the_malformed_state_in_one_line(tmp_path, command, capsys):
    f = _golden(tmp_path, lambda d: d["states"][0].update(budgets={}))
    code = cli.main([command[0], str(f), *command[1:]])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "Traceback" not in err
    assert err.startswith("kafka-mc: error: state 0 is not an initial state") \
        and err.count("\n") == 1


def test_a_fifo_is_refused_without_blocking(tmp_path):
    """A FIFO named as a trace: refused at once (it hung, blocked opening it for reading)."""
    import os
    fifo = tmp_path / "f.itf.json"
    os.mkfifo(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        read(fifo)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["#meta"].update(kind=["always"]), "cannot replay a trace of kind ['always']"),
    (lambda d: d["states"][0].update(budgets={}), "state 0 is not an initial state"),
    (lambda d: d["#meta"].update(explorer="symbolic"), "a symbolic trace"),
])
def test_explore_refuses_what_replay_refuses(tmp_path, edit, message, capsys):
    """Issue 48: ``explore --trace`` with ``#meta.kind = ["always"]`` crashed in
    traces/explain.py (unhashable type); it opened symbolic traces replay refuses."""
    f = _golden(tmp_path, edit)
    code = cli.main(["explore", "--trace", str(f), "--host", "256.0.0.1"])  # (never serves)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "Traceback" not in err and err.count("\n") == 1
    assert message in err, err


def test_a_terminal_escape_in_a_record_key_is_escaped_in_the_error(tmp_path, capsys):
    """Found by round 2's fuzz suite at a larger budget: a record key holding ESC went raw into
    the error line (the path of the value ITF refused)."""
    f = _golden(tmp_path, lambda d: d["states"][0].update(budgets={"\x1b[31m": None}))
    with pytest.raises(TraceError) as err:
        read(f)
    assert "\x1b" not in str(err.value) and "budgets.\\x1b[31m: null" in str(err.value)
    assert cli.main(["replay", str(f)]) == EXIT_USAGE
    assert "\x1b" not in capsys.readouterr().err
