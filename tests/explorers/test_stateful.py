"""Hypothesis stateful exploration, for real: twophase (correct and broken), grid variants, the
shrunk counterexample written and replayed as the CLI does, determinism, and ``as_state_machine``
as a user's pytest suite would use it."""

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from kafka_mc.explorers.cli.check import write_traces
from kafka_mc.explorers.walks.stateful import CI_PROFILE, StatefulOptions, as_state_machine, explore
from kafka_mc.model import registry
from kafka_mc.model.core import Expectation as E
from kafka_mc.model.protocol import ProtocolSpec, Rule
from tests.grid import grid, grid_spec
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read


def twophase(name="twophase", n=3):
    cfg = registry.load(model=name, overrides={"model.resource_managers": n})
    return cfg, registry.bind(cfg)


def _overshoot(p, s):  # BROKEN: IncX jumps by two on row y == 2
    return (s[0] + (2 if s[1] == 2 else 1), s[1])


BOUNDED = (E.ALWAYS, lambda p, s: max(s) <= p["max"])
# The grid with a broken IncX; its shortest counterexample to Bounded has 4 steps.
GRID_BROKEN = grid_spec(Bounded=BOUNDED).derive("grid-broken", replace=[
    Rule("IncX", (), lambda p, s: [()] if s[0] < p["max"] else [], _overshoot)])


# The Kafka mutants: tests/explorers/test_random_kafka.py.
@pytest.mark.parametrize("name", ["twophase-broken"])
def test_broken_toy_shrinks_to_the_minimum_and_replays(tmp_path, name):
    cfg, model = twophase(name)
    out = explore(model, StatefulOptions(seed=0))
    (v,) = out.violations
    assert out.exit_code == 12 and out.explorer == "stateful"
    assert (v.property, v.kind, len(v.path)) == ("TCConsistent", "always", 5)  # BFS's length
    assert out.extra["found_steps"] == 5  # hypothesis's shrinking alone, before delta debugging
    assert out.stats.generated > 0 and out.stats.distinct > 0 and out.extra["walks"] > 0
    traces = write_traces(out, cfg, model, tmp_path)  # the CLI's code path
    trace = read(traces["TCConsistent"])
    assert trace.meta["explorer"] == "stateful" and trace.actions == v.path.actions
    r = replay(trace)
    assert r.reproduced and r.steps == 5


def test_correct_twophase_runs_hundreds_of_examples_cleanly():
    # SomeRMCommitted needs every RM to prepare before the TM aborts, which random behaviours
    # rarely do: with other seeds 300 examples can miss it (and report it as never witnessed).
    _, model = twophase()
    out = explore(model, StatefulOptions(max_examples=300, steps=30, seed=2))
    assert out.exit_code == 0 and out.violations == ()
    assert out.extra["walks"] >= 300 and not out.complete
    assert set(out.checked) == {"TCConsistent", "SomeRMCommitted", "SomeRMAborted"}
    assert out.never_enabled == () and sum(c.fired for c in out.coverage) == out.stats.generated
    assert out.stats.depth == 30 and out.stats.distinct <= 288


def test_same_seed_same_result():
    _, model = twophase("twophase-broken", n=4)
    a, b = (explore(model, StatefulOptions(seed=7, max_examples=100)) for _ in range(2))
    assert a.violations == b.violations and a.coverage == b.coverage
    assert (a.stats.generated, a.stats.distinct) == (b.stats.generated, b.stats.distinct)


def _pick(p, s):
    return [(i,) for i in range(150)] if len(s) < 3 else []


# 150 enabled actions: index draws reach the range where hypothesis mixes in source literals.
WIDE = ProtocolSpec("wide", init=lambda p: [()], check_deadlock=False,
                    rules=(Rule("Pick", ("i",), _pick, lambda p, s, i: s + (i,)),))


def test_result_does_not_depend_on_the_modules_loaded(tmp_path, monkeypatch):
    """Hypothesis would mix the literals of every loaded project module into its draws."""
    model = WIDE.bind({})
    before = explore(model, StatefulOptions(seed=5, max_examples=100))
    literals = ", ".join(str(i) for i in range(100, 150))
    (tmp_path / "kmc_literals.py").write_text(f"LITERALS = ({literals})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("kmc_literals")
    after = explore(model, StatefulOptions(seed=5, max_examples=100))
    assert (after.stats.distinct, after.stats.generated) == (before.stats.distinct,
                                                             before.stats.generated)


def test_broken_grid_is_found():
    model = GRID_BROKEN.bind({"max": 3, "reset": True})
    out = explore(model, StatefulOptions(seed=0))
    (v,) = out.violations
    assert v.property == "Bounded" and max(v.path.states[-1]) == 4
    assert out.never_enabled == ("Never",)
    assert_behaviour(model, v.path)
    assert 4 <= len(v.path) <= 6  # 4 is the shortest; shrinking does not promise it here


def assert_behaviour(model, path):
    """The path is a real behaviour of the model, through model.actions and model.step."""
    assert path.states[0] in model.init_states()
    for s, a, t in zip(path.states, path.actions, path.states[1:]):
        assert a in model.actions(s) and model.step(s, a) == t


def test_deadlock_is_reported_or_ignored():
    out = explore(grid(reset=False), StatefulOptions(seed=0, max_examples=200, steps=10))
    (v,) = out.violations
    assert out.exit_code == 11 and v.kind == "deadlock" and v.path.states[-1] == (3, 3)
    assert len(v.path) == 6
    quiet = explore(grid(reset=False), StatefulOptions(seed=0, max_examples=50, steps=10,
                                                       check_deadlock=False))
    assert quiet.exit_code == 0


def test_transition_property_violation():
    model = grid(NoReset=(E.TRANSITION, lambda p, s, a, t: a != ("Reset",)))
    (v,) = explore(model, StatefulOptions(seed=0, steps=20)).violations
    assert v.kind == "transition" and v.path.actions[-1] == ("Reset",) and len(v.path) == 7


def test_model_error_carries_the_path_to_the_failing_state():
    def boom(p, s):
        if s == (1, 1):
            raise RuntimeError("bad state")
        return [()]
    spec = grid_spec().derive("grid-boom", add=[Rule("Boom", (), boom, lambda p, s: s)])
    out = explore(spec.bind({"max": 3, "reset": True}), StatefulOptions(seed=0))
    (v,) = out.violations
    assert out.exit_code == 75 and v.path.states[-1] == (1, 1)
    assert "RuntimeError: bad state" in v.detail


def test_sometimes_never_witnessed_is_reported_as_a_weaker_claim():
    model = grid(Corner=(E.SOMETIMES, lambda p, s: s == (3, 3)),
                 Far=(E.SOMETIMES, lambda p, s: s[0] > 3))
    out = explore(model, StatefulOptions(seed=0, max_examples=100, steps=10))
    (v,) = out.violations
    assert out.exit_code == 12 and (v.property, v.kind, v.path) == ("Far", "sometimes", None)
    assert "random walks" in v.detail and "does not show" in v.detail


# --- as_state_machine in a user's suite: pytest collects and runs this TestCase ---------------

TestTwoPhaseMachine = as_state_machine(registry.load(model="twophase")).TestCase
TestTwoPhaseMachine.settings = settings(settings.get_profile(CI_PROFILE), max_examples=50)


def test_as_state_machine_fails_a_users_test_on_the_broken_model():
    cfg, _ = twophase("twophase-broken")
    test = as_state_machine(cfg).TestCase
    test.settings = settings.get_profile(CI_PROFILE)
    with pytest.raises(AssertionError, match=r"TCConsistent \[always\] fails after \d+ steps"):
        test("runTest").runTest()


def test_ci_profile_is_derandomized():
    profile = settings.get_profile(CI_PROFILE)
    assert profile.derandomize and profile.database is None and profile.deadline is None


# --- the real console script --------------------------------------------------------------------

EXE = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or shutil.which("kafka-mc")


def kafka_mc(*args, cwd=None):
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_cli_stateful_violation_is_deterministic_and_replays(tmp_path):
    files = []
    for run in ("a", "b"):
        r = kafka_mc("check", "twophase-broken", "--explorer", "stateful", "--seed", "3",
                     "--max-examples", "300", "--out", str(tmp_path / run))
        assert r.returncode == 12, r.stderr
        assert "explorer stateful" in r.stdout and "TCConsistent is violated" in r.stdout
        files.append(tmp_path / run / "TCConsistent.itf.json")
    assert files[0].read_bytes() == files[1].read_bytes()
    rp = kafka_mc("replay", str(files[0]))
    assert rp.returncode == 12 and "violated" in rp.stdout


def test_cli_stateful_clean_run(tmp_path):
    r = kafka_mc("check", "--model", "twophase", "--set", "model.resource_managers=3",
                 "--explorer", "stateful", "--max-examples", "100", "--steps", "20",
                 "--invariant", "TCConsistent", "--json", cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["explorer"] == "stateful" and doc["violations"] == []
    assert doc["stats"]["depth"] == 20 and doc["never_enabled"] == []


def test_an_interrupt_something_swallowed_still_stops_the_search(monkeypatch):
    """Issue 48: hypothesis's gc callback caught the KeyboardInterrupt of a Ctrl-C (an exception
    in a gc callback is reported and ignored) and the search ran on. The handler also remembers
    the interrupt (``kafka_mc.explorers.core.interrupts``); the next step raises it again."""
    from kafka_mc.explorers.core import interrupts
    from kafka_mc.explorers.walks import simulate

    _, model = twophase()
    steps = []
    advance = simulate.Walks.advance

    def swallowed_at_step_50(self, s, a, t):
        steps.append(a)
        if len(steps) == 50:
            interrupts.ask()   # the handler ran; its exception went to a gc callback
        return advance(self, s, a, t)
    monkeypatch.setattr(simulate.Walks, "advance", swallowed_at_step_50)
    try:
        out = explore(model, StatefulOptions(max_examples=300, steps=30, seed=2))
    finally:
        interrupts.clear()
    assert out.interrupted and len(steps) == 50 and out.extra["walks"] < 300


def test_an_interrupt_in_a_gc_callback_is_not_printed_as_an_error(capsys):
    """Round 2's fuzz suite: SIGTERM landing in hypothesis's gc callback printed "Exception
    ignored in: ... gc_callback ... Traceback" (the exit code was right). The interrupt is the
    user's: raised again at the next step, not printed."""
    import gc

    from kafka_mc.explorers.core import interrupts

    _, model = twophase()
    fired = []

    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(1)
            interrupts.ask()
            raise KeyboardInterrupt
    gc.callbacks.append(callback)
    hook, sys.unraisablehook = sys.unraisablehook, sys.__unraisablehook__   # Python's, not pytest's
    try:
        out = explore(model, StatefulOptions(max_examples=50, steps=10, seed=2))
    finally:
        sys.unraisablehook = hook
        gc.callbacks.remove(callback)
        interrupts.clear()
    assert fired and out.interrupted   # (a collection happens within the first examples)
    assert "Exception ignored" not in capsys.readouterr().err
