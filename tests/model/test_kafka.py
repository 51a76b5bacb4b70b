"""The Kafka model: pinned state counts per preset, the known weaknesses of old versions found
from generic fault budgets, and the fast path agreeing with the rules."""
import multiprocessing

import pytest

from model import registry
from model.config import resolve_config_path
from model.kafka import spec_for
from model.params import kafka_params
from model.versions import PRESETS
from explorers.bfs import BfsOptions, explore


def load(name="tiny", **settings):
    return registry.load(resolve_config_path(name), overrides=settings)


# (preset, distinct, generated, depth) of configs/tiny.toml
TINY = [
    ("kafka-0.11", 2121, 4995, 19),
    ("kafka-1.0", 17994, 55269, 46),
    ("kafka-2.5", 17994, 55269, 46),
    ("kafka-2.6", 17994, 55269, 46),
    ("kafka-3.6", 32842, 104973, 50),
    ("kafka-4.0", 14693, 44288, 44),
    ("kafka-4.2", 14693, 44288, 44),
    ("latest", 14693, 44288, 44),
]


# (preset, distinct, generated, depth) of configs/small.toml (a preset before KIP-890 stops at its
# violation)
SMALL = [
    ("kafka-0.11", 33218, 78120, 17),
    ("kafka-1.0", 49039, 120434, 18),
    ("kafka-2.5", 49761, 121616, 18),
    ("kafka-2.6", 49761, 121616, 18),
    ("kafka-3.6", 4041969, 16303110, 59),
    ("kafka-4.0", 1390331, 5227497, 49),
    ("kafka-4.2", 226924, 726106, 24),
    ("latest", 1328671, 5018800, 49),
]


# What the default config finds on the presets with a known weakness relative to latest: before
# KIP-890 a batch that expired in flight, or a zombie's batch at a leader that forgot its producer
# id, opens a hanging transaction (tests/model/test_faults.py); 4.2's strict marker epoch rejects
# a marker resent after a coordinator failover (KAFKA-19999, below).
KNOWN_WEAKNESS = {**{p: ["no_hanging_transactions"]
                     for p in ("kafka-0.11", "kafka-1.0", "kafka-2.5", "kafka-2.6")},
                  "kafka-4.2": ["quiescent_completion"]}


def test_every_preset_is_pinned():
    assert [p for p, *_ in TINY] == [p for p, *_ in SMALL] == list(PRESETS)


def _small(preset):
    out = explore(registry.bind(load("small", **{"protocol.version": preset})))
    return (preset, (out.stats.distinct, out.stats.generated, out.stats.depth),
            [v.property for v in out.violations], out.never_enabled)


@pytest.fixture(scope="module")
def small_runs():
    """Every preset's exhaustive run of the default config, two at a time (3.6, the largest at
    four million states, first)."""
    order = sorted(PRESETS, key=lambda p: p != "kafka-3.6")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        return {r[0]: r[1:] for r in pool.imap_unordered(_small, order)}


@pytest.mark.parametrize("preset, distinct, generated, depth", SMALL)
def test_small_counts_and_verdicts(small_runs, preset, distinct, generated, depth):
    counts, violations, never_enabled = small_runs[preset]
    assert counts == (distinct, generated, depth)
    expected = KNOWN_WEAKNESS.get(preset, [])
    assert violations == expected
    if not expected:
        assert never_enabled == ()      # every rule fires


@pytest.mark.parametrize("preset, distinct, generated, depth", TINY)
def test_tiny_counts_and_verdicts(preset, distinct, generated, depth):
    out = explore(registry.bind(load(**{"protocol.version": preset})))
    assert (out.stats.distinct, out.stats.generated, out.stats.depth) == (distinct, generated, depth)
    if preset == "kafka-0.11":  # KAFKA-6119: the abort is not fenced (see below)
        assert [v.property for v in out.violations] == ["no_hanging_transactions"]
    else:
        assert out.exit_code == 0, out.violations
        assert "eventual_completion" in out.unchecked


def test_kafka_0_11_unfenced_abort_leaves_a_hanging_transaction():
    """KAFKA-6119, found with the generic crash budget: InitProducerId of the new instance aborts
    the open transaction without an epoch bump, so the old instance's produce, still in flight,
    is appended after the ABORT marker and opens a transaction no coordinator knows of."""
    cfg = load(**{"protocol.version": "kafka-0.11"})
    model = registry.bind(cfg)
    (v,) = explore(model, BfsOptions(properties=["no_hanging_transactions"])).violations
    names = [a[0] for a in v.path.actions]
    assert len(names) == 19 and names[1] == "CrashProducer"
    marker, produce = names.index("HandleWriteTxnMarkers"), names.index("HandleProduce")
    assert marker < produce  # the old instance's batch is appended after the ABORT marker
    assert v.path.actions[marker][1].producer_epoch == v.path.actions[produce][1].producer_epoch
    assert v.path.actions[produce][1].producer == 0  # the replaced instance
    assert names[-1] == "CommitTxnLogAppend"  # CompleteAbort: the coordinator forgets it


def test_kafka_4_2_strict_marker_epoch_rejects_a_resent_marker():
    """KAFKA-19999, found by the default config: after a coordinator failover the new coordinator
    resends the COMMIT marker the leader already wrote; KIP-1228's strict check (marker epoch must
    exceed the stored one) rejects it, the coordinator stops sending markers and the transaction
    stays in PrepareCommit. ``latest`` accepts the equal-epoch retry as a no-op."""
    cfg = load("small", **{"protocol.version": "kafka-4.2"})
    (v,) = explore(registry.bind(cfg), BfsOptions(properties=["quiescent_completion"])).violations
    names = [a[0] for a in v.path.actions]
    assert len(names) == 24 and "ElectCoordinator" in names
    markers = [a[1] for a in v.path.actions if a[0] == "HandleWriteTxnMarkers"]
    assert [m.coordinator_epoch for m in markers] == [0, 1] and markers[0].producer_epoch == \
        markers[1].producer_epoch
    assert v.path.actions[-1][1].error.name == "INVALID_PRODUCER_EPOCH"
    w = v.path.states[-1]
    assert w.coordinator.txns[0].state.name == "PrepareCommit"


def test_timeout_fence_protects_from_1_0_on():
    cfg = load(**{"protocol.version": "kafka-1.0", "faults.transaction_timeouts": 1})
    assert explore(registry.bind(cfg)).exit_code == 0


def test_rules_follow_the_version():
    names = lambda v: {r.name for r in spec_for(kafka_params(load(**{"protocol.version": v}))).rules}
    assert "SendAddPartitionsToTxn" not in names("latest")
    assert "HandleVerifyAddPartition" in names("latest") and "HandleVerifyAddPartition" in names("kafka-3.6")
    assert "HandleVerifyAddPartition" not in names("kafka-2.6")
    assert "SendAddPartitionsToTxn" in names("kafka-3.6")


def _reachable(model, limit):
    seen, todo = {model.init_states()[0]}, list(model.init_states())
    while todo and len(seen) < limit:
        s = todo.pop()
        for _, t in model.successors(s):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


@pytest.mark.parametrize("preset", ["kafka-2.6", "kafka-3.6", "latest"])
def test_fast_path_agrees_with_actions_and_step(preset):
    model = registry.bind(load("small", **{"protocol.version": preset}))
    for s in sorted(_reachable(model, 600), key=repr)[:600]:
        fast = sorted(model.successors(s), key=repr)
        ref = sorted(((a, model.step(s, a)) for a in model.actions(s)), key=repr)
        assert fast == ref


def test_expired_transactional_id_starts_over_with_a_new_producer_id():
    """transactional.id expiration: Empty / CompleteCommit / CompleteAbort -> Dead, the metadata
    removed once the tombstone is replicated; the next InitProducerId gets a new producer id, and
    every invariant still holds (tiny, latest)."""
    from model.core import Expectation, Property

    model = registry.bind(load(**{"faults.transactional_id_expirations": 1}))
    model._properties += (Property("new_producer_id", Expectation.SOMETIMES,
                                   lambda w: any(p.producer_id == 1 for p in w.producers)),)
    out = explore(model)
    assert out.violations == () and out.stats.distinct == 44_336
    assert "ExpireTransactionalId" not in out.never_enabled
