"""The random explorers on the Kafka model: seeded mutants (model/kafka/capabilities/mutants.py) are found on
``configs/large.toml``, which BFS does not exhaust in 10 minutes (bench/RESULTS.md), by both
explorers with a fixed seed and default settings; the minimized trace replays; the correct model
runs hundreds of behaviours cleanly."""
import json

import pytest

from kafka_mc.explorers.walks import simulate

from kafka_mc.explorers.walks import stateful
from kafka_mc.explorers.cli.check import write_traces
from kafka_mc.model import registry
from kafka_mc.model.kafka.capabilities import mutants
from kafka_mc.model.config import resolve_config_path
from tests.explorers.test_stateful import kafka_mc
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read

FOUND_FAST = ["add-partitions-skips-epoch-check", "lso-ignores-open-transactions"]
EXPLORE = {
    "simulate": lambda model, props: simulate.explore(
        model, simulate.SimulateOptions(seed=0, properties=props)),
    "stateful": lambda model, props: stateful.explore(
        model, stateful.StatefulOptions(seed=0, properties=props)),
}


def large(mutant: str = mutants.NONE, **settings):
    m = mutants.BY_NAME.get(mutant)
    version = {"protocol.version": m.settings["protocol.version"]} if m and "protocol.version" in m.settings else {}
    cfg = registry.load(resolve_config_path("large"),
                        overrides=version | {"model.mutant": mutant} | settings)
    return cfg, registry.bind(cfg)


@pytest.mark.parametrize("explorer", list(EXPLORE))
@pytest.mark.parametrize("mutant", FOUND_FAST)
def test_seeded_mutant_is_found_on_large_and_replays(tmp_path, explorer, mutant):
    invariant = mutants.BY_NAME[mutant].invariant
    cfg, model = large(mutant)
    out = EXPLORE[explorer](model, [invariant])
    (v,) = out.violations
    assert v.property == invariant and out.explorer == explorer
    assert out.extra["seconds_to_violation"] < 10
    assert len(v.path) <= out.extra["found_steps"]          # minimized, never longer
    trace = read(write_traces(out, cfg, model, tmp_path)[invariant])
    assert trace.meta["config"]["model"]["mutant"] == mutant
    r = replay(trace)                                        # rebuilt from the trace's config
    assert r.reproduced and r.steps == len(v.path)


def test_correct_model_runs_hundreds_of_stateful_examples_cleanly():
    cfg = registry.load(resolve_config_path("small"))
    out = stateful.explore(registry.bind(cfg), stateful.StatefulOptions(max_examples=300, seed=1))
    assert [v for v in out.violations if v.kind != "sometimes"] == []
    assert out.extra["walks"] >= 300 and out.stats.generated > 5_000
    assert "a_zombie_is_fenced" not in {v.property for v in out.violations}


def test_correct_model_simulates_cleanly_on_large():
    _, model = large()
    out = simulate.explore(model, simulate.SimulateOptions(runs=300, seed=0))
    assert out.violations == () and out.extra["walks"] == 300
    # the faults large has no budget for
    assert out.never_enabled == ("ExpireTransactionalId", "KillProducer")


def test_cli_finds_a_seeded_mutant_with_default_settings(tmp_path):
    mutant = "add-partitions-skips-epoch-check"
    r = kafka_mc("check", "large", "--explorer", "simulate", "--protocol", "kafka-2.6",
                 "--set", f"model.mutant={mutant}", "--invariant", "zombie_fencing", "--json",
                 "--out", str(tmp_path))
    assert r.returncode == 12, r.stderr
    doc = json.loads(r.stdout)
    assert doc["config"]["model"]["mutant"] == mutant
    assert doc["random"]["seed"] == 0 and doc["random"]["seconds_to_violation"] < 10
    (v,) = doc["violations"]
    assert v["property"] == "zombie_fencing" and v["steps"] <= doc["random"]["found_steps"]
    rp = kafka_mc("replay", v["trace"])
    assert rp.returncode == 12, rp.stdout + rp.stderr
