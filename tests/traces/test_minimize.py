"""Minimize: long random counterexamples shrink to no longer than the BFS's shortest, the result
is a valid trace of the same violation, and every kind of violation can be minimized."""
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kafka_mc.explorers import cli
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from tests.traces.conftest import bound, meta_for, random_walk
from kafka_mc.traces.minimize import _components, minimize, shrink
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import Trace, TraceError, read

EXE = str(Path(sys.executable).with_name("kafka-mc"))


def _shortest(model, prop="TCConsistent"):
    return len(explore(model, BfsOptions(properties=[prop])).violations[0].path)


def test_a_long_random_walk_shrinks_to_the_bfs_shortest_length(write):
    cfg, model = bound("twophase-broken", resource_managers=10)
    shortest = _shortest(model)
    states, actions = random_walk(model, seed=2024, min_length=60)
    assert len(actions) >= 60
    long = write(model, Trace.of(model, states, actions,
                                 meta_for(cfg, "TCConsistent", "always", "simulate", seed=2024)))
    small_model, small_states, small = minimize(read(long))
    assert len(small) <= shortest == 5
    assert small.meta["minimized_from"] == len(actions) and small.meta["seed"] == 2024
    again = replay(read(write(small_model, small, "small.itf.json")))  # itself a valid trace
    assert again.reproduced and again.states == small_states


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32), st.integers(5, 30), st.integers(8, 12))
def test_any_seeded_walk_shrinks_to_a_shortest_counterexample(seed, length, n):
    _, model = bound("twophase-broken", resource_managers=n)
    states, actions = random_walk(model, seed, length)
    small_states, small_actions = shrink(model, states[0], actions, "TCConsistent", "always")
    assert len(small_actions) == 5
    tc = next(p for p in model.properties() if p.name == "TCConsistent")
    assert not tc.holds(small_states[-1]) and all(tc.holds(s) for s in small_states[:-1])
    for s, a, t in zip(small_states, small_actions, small_states[1:]):
        assert a in model.actions(s) and model.step(s, a) == t


def test_components_are_lifelines_and_parameter_values():
    _, model = bound("twophase-broken", resource_managers=3)
    s = model.init_states()[0]
    states, actions = [s], [("RMPrepare", 1), ("RMPrepare", 2), ("TMRcvPrepared", 2), ("TMCommit",)]
    for a in actions:
        states.append(model.step(states[-1], a))
    groups = _components(model, states, actions)
    # lifeline TM: steps 2-3; r1: 0; r2: 1-2; rm=1: 0; rm=2: 1-2 (same as r2)
    assert groups == [frozenset({2, 3}), frozenset({0}), frozenset({1, 2}), frozenset({0}),
                      frozenset({1, 2})]


def test_a_transition_violation_and_a_model_error_minimize(grid_models):
    _, model = bound("gridmono")
    rng = random.Random(5)
    s, states, actions = (0, 0), [(0, 0)], []
    while len(actions) < 30 or actions[-1] != ("Reset",):  # wander, reset, wander, ... reset
        a = rng.choice(model.actions(s))
        s = model.step(s, a)
        states.append(s)
        actions.append(a)
    small_states, small_actions = shrink(model, (0, 0), actions, "NoReset", "transition")
    assert len(small_actions) == 7 and small_actions[-1] == ("Reset",)
    _, boom = bound("gridboom")
    walk = [("IncY",), ("IncX",), ("IncX",), ("IncY",), ("IncX",), ("IncY",), ("IncY",), ("Reset",),
            ("IncX",), ("IncX",)]  # reaches (2, 0), where the model raises, only after the reset
    assert shrink(boom, (0, 0), walk, "model_error", "model_error")[1] == (("IncX",), ("IncX",))


def test_minimize_command(write, tmp_path):
    cfg, model = bound("twophase-broken", resource_managers=10)
    states, actions = random_walk(model, seed=3, min_length=25)
    long = write(model, Trace.of(model, states, actions, meta_for(cfg, "TCConsistent", "always")),
                 "TCConsistent.itf.json")
    r = subprocess.run([EXE, "minimize", str(long)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "TCConsistent.min.itf.json"
    assert r.stdout.startswith(f"minimized {len(actions)} steps to 5: {out}\n")
    assert r.stdout.rstrip().endswith("<- TCConsistent violated")
    assert subprocess.run([EXE, "replay", str(out)], capture_output=True).returncode == 12
    # minimizing is deterministic: the same input gives the same bytes
    assert cli.main(["minimize", str(long), "--out", str(tmp_path / "again.json")]) == 0
    assert (tmp_path / "again.json").read_bytes() == out.read_bytes()


def test_a_trace_that_no_longer_violates_is_not_minimized(write):
    cfg, model = bound("twophase", resource_managers=3)
    states = [0, model.step(0, ("TMAbort",))]
    meta = meta_for(cfg, "TCConsistent", "always")
    file = write(model, Trace.of(model, states, [("TMAbort",)], meta))
    with pytest.raises(TraceError, match="nothing to minimize: TCConsistent holds in the last"):
        minimize(read(file))
    r = subprocess.run([EXE, "minimize", str(file)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_a_message_whose_fields_changed_is_handled_in_its_new_form():
    """Actions carry messages: dropping a Bump changes the epoch of the message Send puts in
    flight, and the recorded Handle(message with epoch 1) becomes Handle(message with epoch 0)."""
    from kafka_mc.model.core import Expectation, Property
    from kafka_mc.model.protocol import ProtocolSpec, Rule
    rules = (  # state: (epoch, messages in flight, handled)
        Rule("Bump", (), lambda p, s: [()] if s[0] < 3 else [], lambda p, s: (s[0] + 1, *s[1:])),
        Rule("Send", (), lambda p, s: [()],
             lambda p, s: (s[0], s[1] | {(s[0], "Produce", "p0")}, s[2])),
        Rule("Handle", ("message",), lambda p, s: sorted((m,) for m in s[1]),
             lambda p, s, m: (s[0], s[1] - {m}, s[2] + 1)))
    spec = ProtocolSpec("mail", init=lambda p: [(0, frozenset(), 0)], rules=rules, properties=(
        Property("NothingHandled", Expectation.ALWAYS, lambda p, s: s[2] == 0),))
    model = spec.bind({})
    walk = [("Bump",), ("Send",), ("Bump",), ("Handle", (1, "Produce", "p0"))]
    states, actions = shrink(model, (0, frozenset(), 0), walk, "NothingHandled", "always")
    assert actions == (("Send",), ("Handle", (0, "Produce", "p0")))
