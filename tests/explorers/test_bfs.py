"""Each property kind both ways, deadlock, bounds, model errors, coverage and determinism, on the
hand-built grid model of conftest.py (states (x, y), 0 <= x, y <= max)."""
import pytest

from tests.grid import grid, grid_spec
from kafka_mc.model.core import Expectation as E, ModelBase, Property
from kafka_mc.model.protocol import Rule
from kafka_mc.explorers.bfs.search import BfsOptions, explore

ALWAYS, TRANSITION, SOMETIMES, EVENTUALLY = E.ALWAYS, E.TRANSITION, E.SOMETIMES, E.EVENTUALLY


def test_always_holds_on_all_sixteen_states():
    out = explore(grid(Bounded=(ALWAYS, lambda p, s: max(s) <= p["max"])))
    assert (out.stats.distinct, out.stats.generated, out.stats.depth) == (16, 25, 6)
    assert out.exit_code == 0 and out.checked == ("Bounded",)


def test_always_violation_is_shortest():
    out = explore(grid(SumBelow5=(ALWAYS, lambda p, s: s[0] + s[1] < 5)))
    (v,) = out.violations
    assert out.exit_code == 12 and v.kind == "always" and len(v.path) == 5
    assert v.path.states[0] == (0, 0) and sum(v.path.states[-1]) == 5
    # BFS order: IncX before IncY, so the first state at depth 5 found is (3, 2)
    assert v.path.states[-1] == (3, 2)
    assert v.path.actions == (("IncX",), ("IncX",), ("IncX",), ("IncY",), ("IncY",))


def test_transition_property_both_ways():
    monotone = (TRANSITION, lambda p, s, a, t: a == ("Reset",) or t >= s)
    assert explore(grid(Monotone=monotone)).exit_code == 0
    out = explore(grid(NoReset=(TRANSITION, lambda p, s, a, t: a != ("Reset",))))
    (v,) = out.violations
    assert v.kind == "transition" and len(v.path) == 7
    assert v.path.actions[-1] == ("Reset",) and v.path.states[-1] == (0, 0)


def test_sometimes_witnessed_or_reported():
    assert explore(grid(Corner=(SOMETIMES, lambda p, s: s == (3, 3)))).exit_code == 0
    out = explore(grid(Far=(SOMETIMES, lambda p, s: s[0] > 3)))
    (v,) = out.violations
    assert out.exit_code == 12 and v.kind == "sometimes" and v.path is None


def test_a_witness_that_cannot_arise_is_not_applicable_not_a_violation():
    """The model says from the configuration whether a witness can arise (``applies``): one that
    cannot is listed as not applicable and is no violation; one that applies and is never reached
    stays a vacuity error."""
    far = Property("Far", SOMETIMES, lambda p, s: s[0] > p["max"],
                   applies=lambda p: p["max"] > 5)     # cannot arise on a 3 x 3 grid
    spec = grid_spec().derive("grid", add_properties=[far])
    out = explore(spec.bind({"max": 3, "reset": True}))
    assert out.exit_code == 0 and out.not_applicable == ("Far",) and "Far" not in out.checked
    out = explore(spec.bind({"max": 6, "reset": True}))   # applies, never reached: vacuous
    assert out.exit_code == 12 and [v.property for v in out.violations] == ["Far"]


def test_eventually_is_left_to_the_graph_explorer():
    out = explore(grid(Ends=(EVENTUALLY, lambda p, s: s == (3, 3))))
    assert out.exit_code == 0 and out.unchecked == ("Ends",) and out.checked == ()


def test_deadlock_found_with_its_shortest_path_or_ignored():
    out = explore(grid(reset=False))
    (v,) = out.violations
    assert out.exit_code == 11 and v.kind == "deadlock" and v.path.states[-1] == (3, 3)
    assert len(v.path) == 6
    assert explore(grid(reset=False), BfsOptions(check_deadlock=False)).exit_code == 0


def test_depth_bound_stops_expansion():
    out = explore(grid(), BfsOptions(max_depth=2))
    assert (out.stats.distinct, out.stats.depth, out.complete) == (6, 2, False)


def test_sometimes_is_not_reported_on_an_incomplete_search():
    out = explore(grid(Corner=(SOMETIMES, lambda p, s: s == (3, 3))), BfsOptions(max_depth=2))
    assert out.exit_code == 0 and not out.complete


def test_state_constraint_counts_but_does_not_expand():
    spec = grid_spec().derive("grid-bounded", within_bounds=lambda p, s: s[0] < 2)
    out = explore(spec.bind({"max": 3, "reset": True}))
    # x in 0..2 reached; states with x == 2 are counted but not expanded (and no deadlock there)
    assert out.stats.distinct == 12 and out.exit_code == 0


def test_model_error_reports_the_path_to_the_failing_state():
    def boom(p, s):
        if s == (1, 1):
            raise RuntimeError("bad state")
        return [()]
    spec = grid_spec().derive("grid-broken", add=[Rule("Boom", (), boom, lambda p, s: s)])
    out = explore(spec.bind({"max": 3, "reset": True}))
    (v,) = out.violations
    assert out.exit_code == 75 and v.kind == "model_error" and v.path.states[-1] == (1, 1)
    assert "RuntimeError: bad state" in v.detail


def test_coverage_counts_transitions_and_lists_never_enabled():
    out = explore(grid())
    cov = {c.name: (c.fired, c.distinct) for c in out.coverage}
    # each BFS level lists states by descending x, so (x, y-1) is expanded before (x-1, y):
    # IncY discovers every state off the y = 0 row, IncX only (1, 0), (2, 0), (3, 0)
    assert cov == {"IncX": (12, 3), "IncY": (12, 12), "Reset": (1, 0)}
    assert out.never_enabled == ("Never",)


def test_select_properties_by_name():
    m = grid(A=(ALWAYS, lambda p, s: True), B=(ALWAYS, lambda p, s: s[0] < 1))
    assert explore(m, BfsOptions(properties=["A"])).exit_code == 0
    assert explore(m, BfsOptions(properties=["B"])).exit_code == 12
    with pytest.raises(KeyError, match="unknown property 'C'"):
        explore(m, BfsOptions(properties=["C"]))


def test_same_model_same_result():
    def run():
        out = explore(grid(SumBelow5=(ALWAYS, lambda p, s: s[0] + s[1] < 5)))
        return out.violations, out.coverage, out.stats.distinct, out.stats.generated
    assert run() == run()


class Counter(ModelBase):
    """A model written directly against the contract (no rules): actions + step only."""
    name = "counter"
    action_params = {"Inc": (), "Dec": ()}

    def init_states(self):
        return [0]

    def actions(self, s):
        return [("Inc",)] if s < 4 else [("Dec",)]

    def step(self, s, a):
        return s + 1 if a == ("Inc",) else s - 1

    def properties(self):
        return [Property("Small", ALWAYS, lambda s: s < 4)]

    def view(self, s):
        return (s,)


def test_models_without_rules_or_fast_path_use_actions_and_step():
    out = explore(Counter())
    assert out.exit_code == 12 and out.violations[0].path.states == (0, 1, 2, 3, 4)
    assert explore(Counter(), BfsOptions(properties=[])).stats.distinct == 5


def test_progress_is_reported():
    seen = []
    explore(grid(max=60), BfsOptions(progress=seen.append, progress_interval=0.0))
    assert seen and seen[-1].distinct <= 61 * 61 and seen[0].depth == 0


class StringStates(Counter):
    name = "strings"

    def view(self, s):
        return ("n", s)  # a str in a view: its hash differs between processes


def test_unstable_views_are_a_model_error():
    out = explore(StringStates())
    (v,) = out.violations
    assert out.exit_code == 75 and "does not fingerprint stably" in v.detail


def test_continue_reports_every_violated_property_with_its_own_shortest_counterexample():
    """--continue (TLC's -continue): the search goes on after a violation; each property is
    reported once, with the same shortest counterexample a search for it alone finds, and the
    state space is exhausted (deadlock included)."""
    props = {"Near": (ALWAYS, lambda p, s: s != (1, 0)), "Far": (ALWAYS, lambda p, s: s != (3, 2)),
             "NoReset": (TRANSITION, lambda p, s, a, t: a != ("Reset",))}
    model = grid(**props)
    out = explore(model, BfsOptions(keep_going=True))
    assert [(v.property, v.kind, len(v.path)) for v in out.violations] == [
        ("Near", "always", 1), ("Far", "always", 5), ("NoReset", "transition", 7)]
    for v in out.violations:
        (alone,) = explore(model, BfsOptions(properties=[v.property])).violations
        assert alone.path == v.path
    assert out.complete and out.stats.distinct == 16 and out.exit_code == 12
    stuck = explore(grid(reset=False, Near=props["Near"]), BfsOptions(keep_going=True))
    assert [(v.property, len(v.path)) for v in stuck.violations] == [("Near", 1), ("deadlock", 6)]
    assert stuck.exit_code == 12    # the most severe kind found: safety over deadlock


def test_continue_reports_every_property_failing_in_one_state():
    """With --continue each property's counterexample is the first in BFS order that violates
    it, whatever the others do: two invariants failing in the initial state are both reported
    there, and a stuck state is a deadlock and a violation of each terminal property failing in
    it (here the only stuck state, so nothing would be found later)."""
    zero = (ALWAYS, lambda p, s: s != (0, 0))
    done = (E.TERMINAL, lambda p, s: False)
    out = explore(grid(reset=False, A=zero, B=zero, T1=done, T2=done), BfsOptions(keep_going=True))
    assert [(v.property, v.kind, len(v.path)) for v in out.violations] == [
        ("A", "always", 0), ("B", "always", 0), ("deadlock", "deadlock", 6),
        ("T1", "terminal", 6), ("T2", "terminal", 6)]
    assert out.complete and out.exit_code == 12
    stop = explore(grid(reset=False, A=zero, B=zero, T1=done, T2=done))
    assert [v.property for v in stop.violations] == ["A"]   # without it: the first, as before
