"""Random simulation, for real: twophase (correct and broken), grid variants, the minimized
counterexample written and replayed as the CLI does, coverage, bounds and determinism."""
import json

import pytest

from kafka_mc.explorers.cli.check import write_traces
from kafka_mc.explorers.bfs.search import explore as bfs
from kafka_mc.explorers.walks.simulate import SimulateOptions, explore
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.core import Expectation as E
from kafka_mc.model.protocol import Rule
from tests.explorers.test_stateful import GRID_BROKEN, assert_behaviour, kafka_mc, twophase
from tests.grid import grid, grid_spec
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read


# The Kafka mutants: tests/explorers/test_random_kafka.py.
@pytest.mark.parametrize("name", ["twophase-broken"])
def test_broken_toy_is_found_minimized_and_replays(tmp_path, name):
    cfg, model = twophase(name)
    out = explore(model, SimulateOptions(seed=0))
    (v,) = out.violations
    assert out.exit_code == 12 and out.explorer == "simulate"
    assert (v.property, v.kind, len(v.path)) == ("TCConsistent", "always", 5)
    assert "minimized to 5 steps" in v.detail and out.extra["seconds_to_violation"] is not None
    traces = write_traces(out, cfg, model, tmp_path)  # the CLI's code path
    trace = read(traces["TCConsistent"])
    assert trace.meta["explorer"] == "simulate" and trace.meta["seed"] == 0
    r = replay(trace)
    assert r.reproduced and r.steps == 5


def test_broken_toy_beyond_comfortable_bfs():
    _, model = twophase("twophase-broken", n=12)
    (v,) = explore(model, SimulateOptions(seed=3)).violations
    assert v.property == "TCConsistent" and len(v.path) == 5


def test_correct_twophase_walks_cleanly_and_counts():
    _, model = twophase()
    out = explore(model, SimulateOptions(runs=2000, depth=30, seed=0))
    s = out.stats
    assert out.exit_code == 0 and out.extra["walks"] == 2000 and not out.complete
    assert s.depth == 30 and s.distinct <= 288 and s.generated >= 2000
    assert out.never_enabled == () and sum(c.fired for c in out.coverage) == s.generated
    assert sum(c.distinct for c in out.coverage) == s.distinct - 1  # all but the initial state


def test_same_seed_same_walks():
    _, model = twophase("twophase-broken", n=6)
    a, b = (explore(model, SimulateOptions(seed=11, runs=500)) for _ in range(2))
    assert a.violations == b.violations and a.coverage == b.coverage
    assert (a.stats.generated, a.stats.distinct) == (b.stats.generated, b.stats.distinct)


def test_broken_grid_is_found():
    model = GRID_BROKEN.bind({"max": 3, "reset": True})
    out = explore(model, SimulateOptions(seed=0))
    (v,) = out.violations
    assert v.property == "Bounded" and max(v.path.states[-1]) == 4
    assert_behaviour(model, v.path)
    assert out.never_enabled == ("Never",)
    assert {c.name for c in out.coverage} == {"IncX", "IncY", "Reset"}


def test_deadlock_is_reported_or_ignored():
    out = explore(grid(reset=False), SimulateOptions(seed=0))
    (v,) = out.violations
    assert out.exit_code == 11 and v.kind == "deadlock" and v.path.states[-1] == (3, 3)
    assert len(v.path) == 6  # every path to (3, 3) has 6 steps
    quiet = explore(grid(reset=False), SimulateOptions(seed=0, runs=50, check_deadlock=False))
    assert quiet.exit_code == 0 and quiet.stats.depth == 6


def test_depth_bound_and_state_constraint_end_walks():
    out = explore(grid(), SimulateOptions(seed=0, runs=100, depth=3))
    assert out.stats.depth == 3 and out.stats.generated == 300
    spec = grid_spec().derive("grid-bounded", within_bounds=lambda p, s: s[0] < 2)
    out = explore(spec.bind({"max": 3, "reset": True}), SimulateOptions(seed=0, runs=200))
    assert out.exit_code == 0 and out.stats.distinct <= 12  # x == 2 is reached, not expanded


def test_transition_property_violation():
    model = grid(NoReset=(E.TRANSITION, lambda p, s, a, t: a != ("Reset",)))
    (v,) = explore(model, SimulateOptions(seed=0)).violations
    assert v.kind == "transition" and v.path.actions[-1] == ("Reset",) and len(v.path) == 7


def test_model_error_carries_the_path_to_the_failing_state():
    def boom(p, s):
        if s == (1, 1):
            raise RuntimeError("bad state")
        return [()]
    spec = grid_spec().derive("grid-boom", add=[Rule("Boom", (), boom, lambda p, s: s)])
    out = explore(spec.bind({"max": 3, "reset": True}), SimulateOptions(seed=0))
    (v,) = out.violations
    assert out.exit_code == 75 and v.path.states[-1] == (1, 1)
    assert "RuntimeError: bad state" in v.detail


def test_sometimes_never_witnessed_is_reported_as_a_weaker_claim():
    model = grid(Corner=(E.SOMETIMES, lambda p, s: s == (3, 3)),
                 Far=(E.SOMETIMES, lambda p, s: s[0] > 3))
    out = explore(model, SimulateOptions(seed=0, runs=100, depth=10))
    (v,) = out.violations
    assert out.exit_code == 12 and (v.property, v.kind, v.path) == ("Far", "sometimes", None)
    assert "100 random walks" in v.detail and "does not show" in v.detail


# --- the real console script --------------------------------------------------------------------

def test_cli_simulate_violation_is_minimized_and_replays(tmp_path):
    r = kafka_mc("check", "twophase-broken", "--explorer", "simulate", "--runs", "100",
                 "--depth", "40", "--seed", "5", "--out", str(tmp_path))
    assert r.returncode == 12, r.stderr
    assert "explorer simulate" in r.stdout and "minimized to 5 steps" in r.stdout
    rp = kafka_mc("replay", str(tmp_path / "TCConsistent.itf.json"))
    assert rp.returncode == 12 and "violated" in rp.stdout


def test_cli_simulate_no_minimize_keeps_the_walk_as_found(tmp_path):
    """--no-minimize: the counterexample as the walk found it (28 steps on 10 resource
    managers, seed 2), which `kafka-mc minimize` then shrinks to 5 (the README's example);
    with the swarm too; without the flag, the same walk minimized."""
    args = ("check", "twophase-broken", "--set", "model.resource_managers=10", "--explorer",
            "simulate", "--seed", "2")
    r = kafka_mc(*args, "--no-minimize", "--out", str(tmp_path / "raw"))
    assert r.returncode == 12, r.stderr
    assert "unminimized counterexample: 28 steps" in r.stdout
    assert len(read(str(tmp_path / "raw" / "TCConsistent.itf.json")).actions) == 28
    m = kafka_mc("minimize", str(tmp_path / "raw" / "TCConsistent.itf.json"), "--out",
                 str(tmp_path / "min.itf.json"))
    assert m.returncode == 0 and m.stdout.startswith("minimized 28 steps to 5:"), m.stdout
    r = kafka_mc(*args, "--out", str(tmp_path / "min"))
    assert r.returncode == 12 and "minimized counterexample: 5 steps" in r.stdout
    assert "found as a 28-step behaviour" in r.stdout
    r = kafka_mc(*args, "--swarm", "--no-minimize", "--out", str(tmp_path / "swarm"))
    assert r.returncode == 12 and "unminimized counterexample" in r.stdout, r.stdout[-800:]


def test_cli_simulate_clean_run_reports_coverage(tmp_path):
    r = kafka_mc("check", "--model", "twophase", "--set", "model.resource_managers=3",
                 "--explorer", "simulate", "--runs", "2000", "--depth", "30", "--json",
                 cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["explorer"] == "simulate" and doc["stats"]["depth"] == 30
    assert set(doc["coverage"]) == {"TMRcvPrepared", "TMCommit", "TMAbort", "RMPrepare",
                                    "RMChooseToAbort", "RMRcvCommitMsg", "RMRcvAbortMsg"}


@pytest.mark.parametrize("args, message", [
    (["--runs", "5"], "--runs does not apply to --explorer bfs (only to simulate)"),
    (["--seed", "1"], "--seed does not apply to --explorer bfs"),
    (["--no-minimize"], "--no-minimize does not apply to --explorer bfs (only to simulate)"),
    (["--explorer", "stateful", "--runs", "5"], "--runs does not apply to --explorer stateful"),
    (["--explorer", "stateful", "--depth", "5"], "--depth does not apply to --explorer stateful"),
    (["--explorer", "simulate", "--steps", "5"], "--steps does not apply to --explorer simulate"),
    (["--explorer", "simulate", "--max-examples", "5"], "--max-examples does not apply"),
    (["--explorer", "simulate", "--continue"],
     "--continue does not apply to --explorer simulate (only to bfs, graph, spark)"),
    (["--explorer", "simulate", "--runs", "0"], "argument --runs: '0' must be >= 1"),
    (["--explorer", "stateful", "--max-examples", "x"], "'x' is not a whole number"),
    (["--explorer", "stateful", "--seed", "-2"], "argument --seed: '-2' must be >= 0"),
])
def test_cli_flags_for_another_explorer_are_usage_errors(tmp_path, args, message):
    r = kafka_mc("check", "twophase-broken", *args, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr
    assert not (tmp_path / "out").exists()


def test_random_walks_report_the_edges_they_took_a_subset_of_the_bfs():
    """Edge coverage of Kafka's tables is reported by every explorer; random walks take some of
    the edges an exhaustive search takes, never one it does not."""
    model = registry.bind(registry.load(resolve_config_path("tiny"),
                                        overrides={"protocol.version": "kafka-2.6"}))
    full = {e.machine: set(e.taken) for e in bfs(model).edges}
    walks = {e.machine: set(e.taken) for e in explore(model, SimulateOptions(runs=300, seed=1)).edges}
    assert set(walks) == set(full) == {"TransactionState", "TransactionManager.State"}
    assert all(walks[m] and walks[m] <= full[m] for m in full)


@pytest.mark.parametrize("preset,seed", [("kafka-0.11", 1), ("latest", 5)])
def test_walks_on_the_fused_actions_are_the_walks_on_the_successors(preset, seed):
    """With the fused successor function's actions (``successors.actions``) a walk applies only
    the action it picks; it is the same walk as on the successors: counts, coverage, edges and
    the violation with its path (twice: simulation and swarm)."""
    from kafka_mc.explorers.walks import swarm

    def kafka():
        return registry.bind(registry.load(resolve_config_path("tiny"), overrides={
            "protocol.version": preset, "faults.batch_expiries": 1}))

    def summary(o):
        return (o.stats.distinct, o.stats.generated, o.stats.depth, o.coverage, o.edges,
                [(v.property, v.path.states, v.path.actions) for v in o.violations])

    fused, plain = kafka(), kafka()
    assert hasattr(fused.successors, "actions")
    del plain.successors.actions
    options = SimulateOptions(runs=2000, depth=40, seed=seed)
    for search in (explore, swarm.explore):
        assert summary(search(fused, options)) == summary(search(plain, options))
    if preset == "kafka-0.11":
        assert explore(fused, options).violations
