"""Only the properties a step can change are checked on it (kafka_mc.explorers.core.checking.Relevance): the
BFS's verdicts, counterexamples and counts are those of checking every property everywhere, with
and without ``--continue`` (properties retired as they fail) and ``--workers``, and so are the
state-graph explorer's and the random walks' (simulation, swarm); the skipped checks are most of
them on Kafka; a model declaring no bound is checked everywhere."""
from __future__ import annotations

import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.capabilities import mutants
from kafka_mc.explorers.core import checking
from kafka_mc.explorers.graph import search as graph
from kafka_mc.explorers.walks import simulate
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.core.checking import Checks, Relevance


def kafka(preset, **overrides):
    return registry.bind(registry.load(resolve_config_path("tiny"),
                                       overrides={"protocol.version": preset, **overrides}))


def summary(o):
    return (o.stats.distinct, o.stats.generated, o.stats.depth, o.complete, o.coverage,
            [(v.property, v.kind, v.path and (v.path.states, v.path.actions))
             for v in o.violations])


def everywhere(monkeypatch):
    monkeypatch.setattr(Relevance, "of_model", classmethod(lambda cls, model: None))


@pytest.mark.parametrize("preset", ["kafka-0.11", "kafka-3.6", "latest"])
def test_the_same_verdicts_as_checking_every_property_everywhere(preset, monkeypatch):
    m = kafka(preset)
    skipping = explore(m, BfsOptions(keep_going=True, por=False))
    everywhere(monkeypatch)
    full = explore(m, BfsOptions(keep_going=True, por=False))
    assert summary(skipping) == summary(full)
    if preset == "kafka-0.11":   # several properties fail, each retired in turn
        assert len(full.violations) >= 4


SAFETY_MUTANTS = [m for m in mutants.MUTANTS if m.invariant != "eventual_completion"]


@pytest.mark.parametrize("mut", SAFETY_MUTANTS, ids=[x.name for x in SAFETY_MUTANTS])
def test_every_mutant_is_caught_as_when_every_property_is_checked(mut, monkeypatch):
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides=mut.settings | {"model.mutant": mut.name})
    m = registry.bind(cfg)
    one = BfsOptions(properties=[mut.invariant])
    skipping, skipping_all = explore(m, one), explore(m, BfsOptions())
    everywhere(monkeypatch)
    assert summary(skipping) == summary(explore(m, one))
    assert summary(skipping_all) == summary(explore(m, BfsOptions()))
    assert [v.property for v in skipping.violations] == [mut.invariant]


GRAPH_MUTANTS = [m for m in SAFETY_MUTANTS if m.name in (
    "leader-skips-epoch-check", "consumer-ignores-aborted-index", "abort-skips-end-txn")]


@pytest.mark.parametrize("mut", GRAPH_MUTANTS, ids=[x.name for x in GRAPH_MUTANTS])
def test_the_graph_explorer_catches_every_mutant_as_before(mut, monkeypatch):
    m = registry.bind(registry.load(resolve_config_path("tiny"),
                                    overrides=mut.settings | {"model.mutant": mut.name}))
    one = graph.GraphOptions(properties=[mut.invariant])
    skipping, skipping_all = graph.explore(m, one), graph.explore(m, graph.GraphOptions())
    everywhere(monkeypatch)
    assert summary(skipping) == summary(graph.explore(m, one))
    assert summary(skipping_all) == summary(graph.explore(m, graph.GraphOptions()))
    assert [v.property for v in skipping.violations] == [mut.invariant]


@pytest.mark.parametrize("preset", ["kafka-0.11", "latest"])
def test_the_graph_explorer_keeps_its_verdicts(preset, monkeypatch):
    m = kafka(preset)
    options = graph.GraphOptions(keep_going=True)
    skipping = graph.explore(m, options)
    everywhere(monkeypatch)
    full = graph.explore(m, options)
    assert summary(skipping) == summary(full)
    assert (len(full.violations) >= 4) == (preset == "kafka-0.11")


@pytest.mark.parametrize("preset,seed", [("kafka-0.11", 1), ("kafka-2.6", 4), ("latest", 2)])
def test_random_walks_keep_their_verdicts(preset, seed, monkeypatch):
    """Each walk's state was checked when the walk reached it, so a step is checked for what it
    can change; the first violation, its walk and the counts are the same."""
    m = kafka(preset, **{"faults.batch_expiries": 1, "faults.producer_state_losses": 1})
    options = simulate.SimulateOptions(runs=3000, depth=40, seed=seed)
    skipping = simulate.explore(m, options)
    everywhere(monkeypatch)
    full = simulate.explore(m, options)
    assert summary(skipping) == summary(full)
    if preset == "kafka-0.11":
        assert full.violations


def test_most_checks_are_skipped_on_kafka():
    m = kafka("kafka-3.6")
    checks = Checks(m)
    r = Relevance.of_model(m)
    calls = {p.name: 0 for p, _ in checks.always}
    seen = {p.name: 0 for p, _ in checks.always}
    from kafka_mc.explorers.reductions.por import sample_states
    for s in sample_states(m, 200, seed=2):
        for a in m.actions(s):
            for p, _ in r.of(a, checks.always):
                calls[p.name] += 1
            for p in seen:
                seen[p] += 1
    assert sum(calls.values()) < sum(seen.values()) / 3
    assert calls["txn_atomicity"] < seen["txn_atomicity"] / 2


def test_a_property_reading_everything_is_checked_on_every_step():
    m = kafka("kafka-3.6")
    anything = Property("anything", Expectation.ALWAYS, lambda s: True)   # reads: None
    props = ((anything, anything.holds),)
    r = Relevance.of_model(m)
    assert all(r.of(a, props) == props for a in m.actions(next(iter(m.init_states()))))


def test_no_bound_declared_checks_everywhere():
    from tests.explorers.test_por import Counters
    assert Relevance.of_model(Counters()) is None
    assert checking.Relevance.of_model(kafka("latest")) is not None
