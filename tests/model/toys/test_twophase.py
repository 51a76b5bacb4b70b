"""TwoPhase: the same state graph as shared/bench/TwoPhase.tla, pinned; the broken variant's
shortest counterexample, exactly."""
import pytest

from kafka_mc.model import registry
from kafka_mc.model.toys.twophase import SPEC, BROKEN_SPEC
from kafka_mc.explorers.bfs.search import BfsOptions, explore


def bind(n, spec=SPEC):
    return spec.bind(registry.load(model="twophase", overrides={"model.resource_managers": n}))


@pytest.mark.parametrize("n, distinct, generated, depth", [
    (3, 288, 1_145, 10), (5, 8_832, 58_145, 16), (7, 296_448, 2_744_705, 22)])
def test_pinned_counts_as_tlc(n, distinct, generated, depth):
    out = explore(bind(n))
    s = out.stats
    assert (s.distinct, s.generated, s.depth) == (distinct, generated, depth)
    assert out.exit_code == 0 and out.complete and not out.never_enabled
    assert set(out.checked) == {"TCConsistent", "SomeRMCommitted", "SomeRMAborted"}


@pytest.mark.parametrize("n", [3, 5])
def test_reference_rules_explore_the_same_graph(n):
    slow = SPEC.derive("twophase-rules", fast_successors=None)  # same rules, no fast path
    assert slow.fast_successors is None
    a, b = explore(bind(n)), explore(bind(n, slow))
    assert (a.stats.distinct, a.stats.generated) == (b.stats.distinct, b.stats.generated)
    # transitions per action agree; which action discovers a state first depends on the order
    assert [(c.name, c.fired) for c in a.coverage] == [(c.name, c.fired) for c in b.coverage]


def _reachable(m):
    seen, todo = set(m.init_states()), list(m.init_states())
    while todo:
        s = todo.pop()
        for _, t in m.successors(s):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_fast_path_agrees_with_actions_and_step_in_every_state():
    m = bind(4)
    for s in _reachable(m):
        assert sorted(m.successors(s)) == sorted((a, m.step(s, a)) for a in m.actions(s))


def test_trace_codec_round_trips_every_state():
    m = bind(3)
    for s in _reachable(m):
        assert m.itf_decode(m.itf_encode(s)) == s
    assert m.itf_encode(0) == {"rmState": {"r1": "working", "r2": "working", "r3": "working"},
                               "tmState": "init", "tmPrepared": frozenset(), "msgs": frozenset()}


def test_broken_twophase_has_a_five_step_counterexample():
    m = bind(3, BROKEN_SPEC)
    out = explore(m)
    assert out.exit_code == 12
    (v,) = out.violations
    assert (v.property, v.kind) == ("TCConsistent", "always")
    assert [m.format_action(a) for a in v.path.actions] == [
        "RMPrepare(rm=1)", "TMRcvPrepared(rm=1)", "TMCommit", "RMChooseToAbort(rm=2)",
        "RMRcvCommitMsg(rm=1)"]
    last = m.itf_encode(v.path.states[-1])
    assert last["rmState"] == {"r1": "committed", "r2": "aborted", "r3": "working"}
    # every state before the last satisfies the invariant: the counterexample is minimal here
    tc = next(p for p in m.properties() if p.name == "TCConsistent")
    assert all(tc.holds(s) for s in v.path.states[:-1])


def test_broken_variant_is_found_at_the_same_depth_for_larger_n():
    out = explore(bind(6, BROKEN_SPEC), BfsOptions(properties=["TCConsistent"]))
    assert len(out.violations[0].path) == 5
