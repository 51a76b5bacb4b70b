"""The Pulsar transactions model (model/pulsar): registered through the entry points, its default
configuration exhausted with exact counts, every claim held there and broken by a mutant (shortest
counterexamples pinned), apache/pulsar#12382 found on pulsar-2.9.0 and absent on pulsar-2.9.1,
a claim Pulsar does not make reported as not claimed, and traces that round-trip."""
from importlib import metadata

import pytest

from kafka_mc.model import registry
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.graph.search import GraphOptions, explore as graph

DEFAULT = (50_636, 189_750, 22)


def bind(**overrides):
    return registry.bind(registry.load(None, model="pulsar", overrides=overrides))


def steps(model, v):
    return [model.format_action(a) for a in v.path.actions]


def test_pulsar_is_registered_through_the_entry_points_as_a_package_would_be():
    (model,) = [ep for ep in metadata.entry_points(group="kafka_mc.models") if ep.name == "pulsar"]
    (props,) = [ep for ep in metadata.entry_points(group="kafka_mc.properties")
                if ep.name == "pulsar"]
    assert (model.value, props.value) == ("kafka_mc.model.pulsar.spec:MODEL", "kafka_mc.invariants.pulsar:PROPERTIES")
    assert "pulsar" in registry.models() and "pulsar" not in registry.REGISTERED
    assert registry.entry("pulsar").presets == ("pulsar-2.9.0", "pulsar-2.9.1", "latest")


def test_the_default_config_exhausts_and_every_claim_made_holds():
    m = bind()
    out = explore(m)
    s = out.stats
    assert (s.distinct, s.generated, s.depth) == DEFAULT
    assert out.exit_code == 0 and out.complete and not out.violations
    assert out.checked == ("atomic_writes", "acks_with_writes", "read_committed",
                           "no_lost_message", "committed_and_read", "aborted_after_writes",
                           "committing_after_failover")
    assert out.never_enabled == ("Duplicate",)


def test_a_claim_pulsar_does_not_make_is_not_claimed_never_a_violation():
    m = bind()
    assert "no_duplicate_message" not in [p.name for p in m.properties()]
    assert "brokerDeduplicationEnabled" in m.not_claimed()["no_duplicate_message"]
    on = bind(**{"model.deduplication": True})
    assert on.not_claimed() == {} and "no_duplicate_message" in [p.name for p in on.properties()]


def test_the_liveness_claim_holds_under_the_timeouts_fairness():
    out = graph(bind())
    assert out.exit_code == 0 and "transaction_resolved" in out.checked
    assert (out.stats.distinct, out.stats.generated) == DEFAULT[:2]


@pytest.mark.parametrize("mutant, prop, distinct, generated, length", [
    ("read_past_max_read", "read_committed", 69, 104, 4),
    ("no_abort_filter", "read_committed", 450, 968, 6),
    ("timeout_committing", "acks_with_writes", 16_711, 53_286, 12),
    ("ack_on_abort", "acks_with_writes", 749, 1_766, 7),
    ("recover_without_aborts", "read_committed", 2_069, 5_137, 8),
    ("no_first_snapshot", "read_committed", 507, 1_111, 6),
])
def test_each_mutant_is_caught_with_its_shortest_counterexample(mutant, prop, distinct,
                                                                generated, length):
    out = explore(bind(**{"model.mutant": mutant}))
    (v,) = out.violations
    assert (v.property, len(v.path.actions)) == (prop, length)
    assert (out.stats.distinct, out.stats.generated) == (distinct, generated)
    assert (mutant, prop) in [(n, i) for n, i, _ in registry.entry("pulsar").mutants]


def test_without_the_timeout_tracker_a_transaction_stays_open_forever():
    m = bind(**{"model.mutant": "no_timeout"})
    out = graph(m, GraphOptions(properties=["transaction_resolved"]))
    (v,) = out.violations
    assert v.property == "transaction_resolved" and out.stats.distinct == 4_848
    assert steps(m, v) == ["NewTxn", "ClientTimeout"]


def test_pulsar_12382_is_found_on_2_9_0_and_absent_on_2_9_1():
    m = bind(**{"protocol.version": "pulsar-2.9.0"})
    out = explore(m)
    (v,) = out.violations
    assert v.property == "read_committed" and out.stats.distinct == 552
    assert steps(m, v) == ["NewTxn", "Produce(topic=0)", "HandleSend(topic=0)",
                           "BrokerFailover(topic=0)", "NormalPublish", "Deliver(topic=0)"]
    fixed = explore(bind(**{"protocol.version": "pulsar-2.9.1"}))
    assert fixed.exit_code == 0 and (fixed.stats.distinct, fixed.stats.generated) == DEFAULT[:2]


def test_a_duplicated_send_after_the_commit_marker_reopens_the_transaction_on_its_topic():
    """One transaction: no later marker carries a low water mark past it (world.py), so a resent
    message landing after the commit marker holds maxReadPosition below it for good."""
    faults = {"faults.duplicates": 1, "faults.tc_failovers": 0, "faults.broker_failovers": 0}
    m = bind(**faults)
    out = explore(m, BfsOptions(keep_going=True))
    assert [v.property for v in out.violations] == ["no_lost_message"]
    assert len(out.violations[0].path) == 19 and out.stats.distinct == 43_092
    dedup = explore(bind(**faults, **{"model.deduplication": True}))
    assert dedup.exit_code == 0 and dedup.stats.distinct == 37_266
    assert "no_duplicate_message" in dedup.checked


def test_traces_round_trip_every_state_of_a_small_config():
    m = bind(**{"faults.tc_failovers": 0})
    seen, todo = set(m.init_states()), list(m.init_states())
    while todo:
        s = todo.pop()
        assert m.itf_decode(m.itf_encode(s)) == s
        for _, t in m.successors(s):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    assert len(seen) == 11_629


def test_two_topics_commit_together_and_a_timeout_aborting_a_commit_splits_them():
    cfg = registry.load("configs/pulsar-two-topics.toml")
    out = explore(registry.bind(cfg))
    assert out.exit_code == 0 and (out.stats.distinct, out.stats.generated) == (40_148, 170_246)
    m = registry.bind(registry.load("configs/pulsar-two-topics.toml",
                                    overrides={"model.mutant": "timeout_committing"}))
    out = explore(m)
    (v,) = out.violations
    assert (v.property, len(v.path.actions), out.stats.distinct) == ("atomic_writes", 15, 29_704)
    assert steps(m, v)[-3:] == ["TransactionTimeout", "EndTxnOnPartition(topic=0, action='COMMIT')",
                                "EndTxnOnPartition(topic=1, action='ABORT')"]
