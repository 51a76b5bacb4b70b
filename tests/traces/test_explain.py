"""Explain: what ``kafka-mc check`` says on a violation, in the protocol's own words."""
from kafka_mc.explorers import cli
from kafka_mc.explorers.bfs.search import explore
from kafka_mc.model.core import Event
from tests.traces.conftest import bound
from kafka_mc.traces import explain


def test_check_prints_the_claim_the_events_of_each_step_and_the_commands(tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    assert cli.main(["check", "twophase-broken", "--out", "o"]) == 12
    text = capsys.readouterr().out
    trace = "o/TCConsistent.itf.json"
    lines = text.splitlines()
    assert lines[0] == ("kafka-mc check: model twophase-broken (the defaults), explorer bfs "
                        "[configs/twophase-broken.toml]")
    tail = lines[1:lines.index("")]
    assert tail == [
        "Error: invariant TCConsistent is violated.",
        "  claim: no resource manager has committed while another has aborted",
        "  shortest counterexample: 5 steps",
        "  1. r1  prepares (sends Prepared)",
        "  2. r1  Prepared to TM",
        "  3. TM  commits (broadcasts Commit)",
        "  4. r2  chooses to abort",
        "  5. TM  Commit to r1  <- TCConsistent violated",
        f"  trace written to {trace}",
        f"  replay it: kafka-mc replay {trace} --diff",
        f"  render it: kafka-mc render {trace} --format html --out TCConsistent.html",
        "             (or --format text --diff, --format mermaid)",
        "  each step's action in full and what it changed: add --verbose"]
    assert "distinct states" in lines[lines.index("") + 1]   # the statistics after it


def test_verbose_shows_each_steps_action_and_what_it_changed(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "twophase-broken", "--out", "o", "--verbose"]) == 12
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("  5. TM  Commit to r1  <- TCConsistent violated")
    assert lines[at - 3:at + 3] == [
        "  4. r2  chooses to abort",
        "     action: RMChooseToAbort(rm=2)",
        '     rmState.r2: "working" -> "aborted"',
        "  5. TM  Commit to r1  <- TCConsistent violated",
        "     action: RMRcvCommitMsg(rm=1)",
        '     rmState.r1: "prepared" -> "committed"']
    assert "add --verbose" not in "\n".join(lines)


def test_sentences_for_each_kind(grid_models):
    _, mono = bound("gridmono")
    v = explore(mono).violations[0]
    assert explain.sentence(mono, v.path.states, v.path.actions, v.property, v.kind) == (
        "NoReset claims that the grid never resets; it fails after step 7, Reset.")
    _, grid = bound("grid", reset=False)
    v = explore(grid).violations[0]
    assert explain.sentence(grid, v.path.states, v.path.actions, v.property, v.kind) == (
        "The system is stuck after step 6, IncY: no action is enabled (a deadlock).")
    _, boom = bound("gridboom")
    v = explore(boom).violations[0]
    assert explain.sentence(boom, v.path.states, v.path.actions, v.property, v.kind).startswith(
        "The model raises an exception computing the successors of the state after step 2")
    assert explain.steps(boom, v.path.states, v.path.actions, v.property, v.kind) == [
        "  1. IncX", "  2. IncX  <- the model raises an exception here"]


def test_a_violation_in_the_initial_state_and_a_step_without_events():
    _, m = bound("twophase", resource_managers=2)
    assert explain.steps(m, [0], [], "TCConsistent", "always") == [
        "  the initial state  <- TCConsistent violated"]
    assert explain.sentence(m, [0], [], "TCConsistent", "always").endswith(
        "it fails in the initial state.")
    m.describe = lambda s, a, t: ()  # a model that says nothing about a step
    assert explain.events(m, 0, ("TMAbort",), 0) == (Event("note", "TM", label="TMAbort"),)
    assert explain.events_text(m, 0, ("TMAbort",), 0) == "TM: TMAbort"


def test_a_property_without_a_claim_is_named_by_its_kind():
    _, m = bound("twophase-broken", resource_managers=2)
    v = explore(m).violations[0]
    assert explain.sentence(m, v.path.states, v.path.actions, "Unclaimed", "transition") == (
        "The transition property Unclaimed fails after step 5, RMRcvCommitMsg(rm=1) "
        "(TM -> r1: Commit).")
