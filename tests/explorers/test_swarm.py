"""Swarm simulation (explorers/walks/swarm.py): per-walk seeds and swarm configurations, determinism,
replay of one walk from its seed, the stuck-state policy (a walk its families end is not stuck),
a Kafka bug swarm finds far sooner than plain simulation, coverage per walk family, the CLI."""
import json
import random

import pytest

from kafka_mc.explorers import cli

from kafka_mc.explorers.walks import simulate

from kafka_mc.explorers.walks import swarm
from kafka_mc.explorers.cli.check import write_traces
from kafka_mc.explorers.walks.simulate import SimulateOptions
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.core import Expectation as E
from kafka_mc.model.kafka import faults
from kafka_mc.model.kafka.capabilities import mutants
from tests.explorers.test_stateful import assert_behaviour, twophase
from tests.grid import grid
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read


def config_of(model, seed: int, i: int) -> swarm.SwarmConfig:
    """The swarm configuration walk ``i`` of a run with ``seed`` draws."""
    return swarm.draw(random.Random(swarm.walk_seed(seed, i)), model.swarm_families(),
                      model.action_kinds())


def test_walk_seeds_start_at_the_run_seed_and_differ():
    assert swarm.walk_seed(7, 0) == 7
    seeds = {swarm.walk_seed(s, i) for s in range(3) for i in range(1000)}
    assert len(seeds) == 3000 and all(0 <= x < 2**63 for x in seeds)


def test_swarm_families_are_the_rules_no_fairness_covers():
    _, toy = twophase()   # no fairness declared: every rule may be left out
    assert toy.swarm_families() == toy.action_kinds()
    kafka = registry.bind(registry.load(resolve_config_path("small")))
    fault_rules = tuple(r.name for f in faults.FAULTS for r in f.rules
                        if r.name in kafka.action_kinds())
    # and the 4.x leader's answer past its verification retry time (a choice, not a fault: a
    # swarm may leave it out, a leader that always retries in time)
    assert sorted(kafka.swarm_families()) == sorted(fault_rules + ("ExpireVerificationRetry",))
    assert "HandleEndTxn" not in kafka.swarm_families()
    # the idle transaction timeout is fair (it must fire), the budgeted early one is a fault
    assert kafka.swarm_family(("ExpireTransaction", 0, True)) is None
    assert kafka.swarm_family(("ExpireTransaction", 0, False)) == "ExpireTransaction"
    assert kafka.swarm_family(("HandleEndTxn", None, True)) is None


def test_kafka_held_back_deliveries():
    kafka = registry.bind(registry.load(resolve_config_path("small")))
    assert kafka.held_back(("HandleEndTxn", "m", True))
    assert not kafka.held_back(("HandleEndTxn", "m", False))
    assert not kafka.held_back(("DelayRequest", "m"))
    assert not kafka.held_back(("ExpireTransaction", 0, True))   # not a delivery
    _, toy = twophase()
    assert not toy.held_back(("TMCommit",))                      # the default: none


def test_same_seed_same_walks_counts_and_trace_bytes(tmp_path):
    cfg, model = twophase("twophase-broken", n=6)
    outs = [swarm.explore(model, SimulateOptions(seed=11, runs=500)) for _ in range(2)]
    a, b = outs
    assert a.violations == b.violations and a.coverage == b.coverage and a.edges == b.edges
    assert (a.stats.generated, a.stats.distinct, a.extra["walks"]) == (
        b.stats.generated, b.stats.distinct, b.extra["walks"])
    assert a.extra["swarm"] == b.extra["swarm"]
    files = [write_traces(o, cfg, model, tmp_path / d)["TCConsistent"]
             for o, d in zip(outs, "ab")]
    assert open(files[0], "rb").read() == open(files[1], "rb").read()
    other = swarm.explore(model, SimulateOptions(seed=12, runs=500))
    assert other.extra["swarm"] != a.extra["swarm"]   # the seed matters


def test_a_found_walk_replays_alone_from_its_seed(tmp_path):
    cfg, model = twophase("twophase-broken", n=6)
    out = swarm.explore(model, SimulateOptions(seed=11, runs=500))
    (v,) = out.violations
    by = out.extra["swarm"]["found_by"]
    assert by["walk"] > 0 and by["walk_seed"] == swarm.walk_seed(11, by["walk"])
    assert f"--swarm --seed {by['walk_seed']} --runs 1" in v.detail
    assert sorted(config_of(model, 11, by["walk"]).off) == by["families_off"]
    alone = swarm.explore(model, SimulateOptions(seed=by["walk_seed"], runs=1))
    (w,) = alone.violations
    assert w.path == v.path and alone.extra["walks"] == 1
    assert alone.extra["swarm"]["found_by"] == {**by, "walk": 0}
    trace = read(write_traces(out, cfg, model, tmp_path)["TCConsistent"])
    assert trace.meta["swarm"] == by and trace.meta["seed"] == 11
    assert replay(trace).reproduced
    assert_behaviour(model, v.path)


def test_walks_only_take_their_families():
    _, model = twophase(n=3)
    out = swarm.explore(model, SimulateOptions(seed=4, runs=64, depth=30))
    rows = out.extra["swarm"]["by_family"]
    assert sum(r["walks"] for r in rows) == 64
    assert sum(r["steps"] for r in rows) == out.stats.generated
    for r in rows:   # a rule taken by a walk is a family that walk allowed
        assert set(r["rules"]) <= set(r["families_on"])
    per = {r["family"]: r for r in out.extra["swarm"]["per_family"]}
    for f, r in per.items():
        assert r["on"]["walks"] + r["off"]["walks"] == 64
        assert f not in r["off"]["rules"]


def test_a_walk_its_families_end_is_not_stuck():
    """Without Reset the grid's only state with no enabled action is (3, 3); a walk that leaves
    out IncX or IncY ends at the edge, which is neither a deadlock nor checked as terminal."""
    at_corner = (E.TERMINAL, lambda p, s: s == (3, 3))
    model = grid(reset=False, AtCorner=at_corner)
    def first_both_on(seed):
        return next(i for i in range(100) if not {"IncX", "IncY"} & config_of(model, seed, i).off)
    seed = next(s for s in range(100) if first_both_on(s) >= 2)
    first = first_both_on(seed)   # the walks before it left one out and ended at an edge
    out = swarm.explore(model, SimulateOptions(seed=seed, runs=100))
    (v,) = out.violations
    assert v.kind == "deadlock" and v.path.states[-1] == (3, 3)
    assert out.extra["swarm"]["found_by"]["walk"] == first == out.extra["walks"] - 1
    quiet = swarm.explore(model, SimulateOptions(seed=seed, runs=200, check_deadlock=False))
    assert quiet.exit_code == 0 and quiet.extra["walks"] == 200   # AtCorner held where stuck
    ended = [r for r in quiet.extra["swarm"]["by_family"] if "IncY" not in r["families_on"]]
    assert ended and all(r["steps"] <= 3 * r["walks"] for r in ended)


def test_late_deliveries_wait():
    """With a late probability, a held-back delivery is chosen only with that probability while
    anything else is allowed."""
    config = swarm.SwarmConfig(frozenset(), {}, 1 / 8)
    allowed = [("Deliver", 1, True), ("Other",), ("Other2",)]
    rng = random.Random(0)
    picks = [swarm.choose(rng, allowed, config, lambda a: a[-1] is True)[0]
             for _ in range(8000)]
    assert abs(picks.count("Deliver") / 8000 - 1 / 8) < 0.02
    only = [("Deliver", 1, True)]
    assert swarm.choose(rng, only, config, lambda a: a[-1] is True) == only[0]


# A mutant of model/kafka/capabilities/mutants.py: the partition leader skips the epoch check (a zombie's
# batch is appended). On configs/tiny.toml with its settings (kafka-2.6, a producer restart),
# seed 0, checking zombie_fencing: swarm finds it in walk 134, plain simulation in walk 1,932.
# (Swarm draws a weight per rule of the model, enabled or not: a new rule moves its walks; 103
# before BounceCoordinator, 349 before KillProducer.)
LEADER = mutants.BY_NAME["leader-skips-epoch-check"]


def tiny_mutant():
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides={"model.mutant": LEADER.name, **LEADER.settings})
    return cfg, registry.bind(cfg)


def test_swarm_finds_a_mutant_plain_simulation_finds_much_later(tmp_path):
    cfg, model = tiny_mutant()
    options = SimulateOptions(seed=0, runs=1000, properties=[LEADER.invariant])
    plain = simulate.explore(model, options)
    assert plain.violations == () and plain.extra["walks"] == 1000
    out = swarm.explore(model, options)
    (v,) = out.violations
    assert (v.property, out.extra["walks"]) == (LEADER.invariant, 134)
    assert simulate.explore(model, SimulateOptions(
        seed=0, runs=3000, properties=[LEADER.invariant])).extra["walks"] == 1932
    r = replay(read(write_traces(out, cfg, model, tmp_path)[LEADER.invariant]))
    assert r.reproduced and r.steps == len(v.path)


def test_cli_swarm_json_and_text(tmp_path, capsys):
    args = ["check", "twophase-broken", "--explorer", "simulate", "--swarm", "--seed", "3",
            "--out", str(tmp_path)]
    assert cli.main(args + ["--json"]) == 12
    doc = json.loads(capsys.readouterr().out)
    sw = doc["swarm"]
    assert sw["families"] and sw["by_family"] and doc["random"]["seed"] == 3
    by = sw["found_by"]
    trace = read(str(tmp_path / "TCConsistent.itf.json"))
    assert trace.meta["swarm"] == by
    assert cli.main(args) == 12
    text = capsys.readouterr().out
    assert "Coverage per walk family" in text or "Coverage per swarm family" in text
    assert f"replay that walk alone: --swarm --seed {by['walk_seed']} --runs 1" in text
    assert cli.main(["check", "twophase-broken", "--explorer", "simulate", "--swarm", "--seed",
                     str(by["walk_seed"]), "--runs", "1", "--out", str(tmp_path / "alone")]) == 12
    assert "found by walk 0" in capsys.readouterr().out


@pytest.mark.parametrize("explorer", ["bfs", "stateful", "graph"])
def test_swarm_with_another_explorer_is_a_usage_error(tmp_path, capsys, explorer):
    assert cli.main(["check", "twophase", "--explorer", explorer, "--swarm",
                     "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--swarm does not apply" in err and "simulate" in err
