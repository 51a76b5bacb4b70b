"""The deliberately broken variants of model/kafka/capabilities/mutants.py: each must be caught, in a small
configuration, by the invariant named for it, with a shortest counterexample of pinned length;
the correct model bound in the same process stays correct (the helper swaps are scoped)."""
import pytest

from kafka_mc.model import registry
from kafka_mc.model.kafka import partition
from kafka_mc.model.kafka.capabilities import mutants
from kafka_mc.model.config import ConfigError, resolve_config_path
from kafka_mc.explorers.graph import search as graph
from kafka_mc.explorers.bfs.search import BfsOptions, explore

LIVENESS = ("eventual_completion", "markers_close_transactions", "lso_reaches_high_watermark")

STEPS = {  # pinned length of each mutant's shortest counterexample
    "leader-skips-epoch-check": 23, "leader-skips-duplicate-check": 14,
    "consumer-ignores-aborted-index": 17, "lso-ignores-open-transactions": 12,
    "abort-marker-without-index-entry": 17, "marker-ignores-coordinator-epoch": 35,
    "end-txn-skips-epoch-check": 29, "fence-without-epoch-bump": 19,
    "add-partitions-skips-epoch-check": 13, "end-txn-answered-before-replication": 21,
    "markers-skip-a-partition": 21, "end-txn-with-batches-in-flight": 19,
    "abort-skips-end-txn": 6, "offsets-materialised-on-abort": 21,
    "offset-fetch-ignores-pending": 47, "marker-not-resent": 21,   # a lasso's stem
    "force-terminate-commits": 11,
}


def mutant_config(m: mutants.Mutant, mutant: str | None = None):
    return registry.load(resolve_config_path("tiny"),
                         overrides=m.settings | {"model.mutant": mutant or m.name})


@pytest.mark.parametrize("m", mutants.MUTANTS, ids=[m.name for m in mutants.MUTANTS])
def test_mutant_is_caught(m):
    model = registry.bind(mutant_config(m))
    if m.invariant in LIVENESS:   # a liveness bug: the state graph's lasso
        out = graph.explore(model, graph.GraphOptions(properties=[m.invariant]))
    else:
        out = explore(model, BfsOptions(properties=[m.invariant]))
    assert [v.property for v in out.violations] == [m.invariant]
    assert len(out.violations[0].path) == STEPS[m.name]


@pytest.mark.parametrize("m", [mutants.BY_NAME["leader-skips-epoch-check"],
                               mutants.BY_NAME["fence-without-epoch-bump"]], ids=lambda m: m.name)
def test_the_correct_model_is_untouched(m):
    """Binding a mutant and stepping it leaves the component modules as they were, and the same
    configuration without the mutant passes."""
    original = partition.validate_and_append
    explore(registry.bind(mutant_config(m)), BfsOptions(properties=[m.invariant], max_depth=6))
    assert partition.validate_and_append is original
    out = explore(registry.bind(mutant_config(m, mutants.NONE)), BfsOptions(properties=[m.invariant]))
    assert not out.violations and out.stats.distinct > 1000


def test_at_least_twelve_mutants_each_pinned():
    assert len(mutants.MUTANTS) >= 12 and set(STEPS) == set(mutants.BY_NAME)


def test_unknown_mutant_is_a_config_error():
    with pytest.raises(ConfigError, match="model.mutant = 'no-such' is not one of none"):
        registry.load(resolve_config_path("tiny"), overrides={"model.mutant": "no-such"})


def test_cli_lists_every_mutant_with_its_invariant():
    from tests.explorers.test_stateful import kafka_mc

    r = kafka_mc("list", "mutants")
    assert r.returncode == 0
    rows = [line.split()[:2] for line in r.stdout.splitlines() if line.endswith("(kafka)")]
    assert rows == [[m.name, m.invariant] for m in mutants.MUTANTS]   # other models' follow
