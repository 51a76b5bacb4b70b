"""Conformance to Kafka's own transition tables (model/kafka/data/transitions.json, copied from
shared/kafka): every coordinator and client transition the model takes, on every preset, is in
the table of that version (the ``*_transitions`` properties), and the edges a run takes are
reported (``Outcome.edges``): together the configurations below take every edge of both tables
but the ones pinned per preset, each with the reason it is unreachable in the model."""
import json
from pathlib import Path

import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.tables import TABLES
from kafka_mc.model.kafka.versions import PRESETS
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from tests.presets import PINNED

SINGLE = {"cluster.producers_per_id": 1, "faults.producer_crashes": 0, "cluster.consumers": 0}
CONFIGS = [{},                                                         # tiny: restart, fence
           SINGLE | {"workload.transactions_per_producer": 2},        # Complete* -> Ongoing
           SINGLE | {"cluster.partitions": 2, "workload.records_per_transaction": 2},  # Ongoing -> Ongoing
           SINGLE | {"workload.consume_transform_produce": True, "workload.input_records": 1,
                     "faults.rebalances": 1},     # a stale generation: -> ABORTABLE_ERROR (2.5+)
           SINGLE | {"faults.transactional_id_expirations": 1},  # Empty / Complete* -> Dead
           SINGLE | {"faults.batch_expiries": 1,     # -> ABORTABLE_ERROR; KIP-360 epoch
                     "workload.transactions_per_producer": 2},  # bump; TV2's empty abort
           SINGLE | {"faults.batch_expiries": 2, "cluster.partitions": 2,
                     "workload.records_per_transaction": 2}]  # a second failed
                                                    # batch: ABORTABLE_ERROR -> ABORTABLE_ERROR

# Every coordinator edge is exercised (TV2's "empty abort", EndTxn(abort) for a transaction the
# coordinator never saw, by an abort before the first batch was drained).
UNEXERCISED_COORDINATOR = {p: () for p in PRESETS}
# The client edges never taken, per preset, and why: tests/presets.py.


def exercised(preset: str):
    """Per machine, the edges the configurations took together and the table's edges."""
    taken: dict[str, set] = {}
    table: dict[str, tuple] = {}
    for settings in CONFIGS:
        cfg = registry.load(resolve_config_path("tiny"),
                            overrides={"protocol.version": preset, **settings})
        out = explore(registry.bind(cfg), BfsOptions(properties=["coordinator_transitions",
                                                                 "client_transitions"]))
        assert out.violations == ()
        for e in out.edges:
            taken.setdefault(e.machine, set()).update(e.taken)
            table[e.machine] = tuple(sorted(e.taken + e.not_taken))
    return taken, table


def test_tables_are_kafkas():
    shared = Path(__file__).resolve().parents[3] / "shared" / "kafka" / "transitions.json"
    if shared.exists():
        assert json.loads(shared.read_text()) == json.loads(TABLES.read_text())


def _version_edges(machine: str, label: str) -> set:
    """The edges of one version of Kafka's table, read from the JSON here (not through the
    model's ``tables``), so the coverage the explorers report is checked against the source."""
    key = {"TransactionState": "coordinator_transaction_state",
           "TransactionManager.State": "producer_client_transaction_manager_state"}[machine]
    (version,) = [v for v in json.loads(TABLES.read_text())[key]["versions"]
                  if v["label"].startswith(label)]
    return {(src, dst) for dst, srcs in version["valid_previous_states"].items() if srcs != "ANY"
            for src in srcs}


# The version of each table a preset stands for (Kafka's own labels in transitions.json).
TABLE_OF = {"kafka-0.11": ("Kafka 0.11", "Kafka 0.11"), "kafka-1.0": ("Kafka 1.0", "Kafka 0.11"),
            "kafka-2.5": ("Kafka 1.0", "Kafka 2.5"), "kafka-2.6": ("Kafka 1.0", "Kafka 2.5"),
            "kafka-2.7": ("Kafka 1.0", "Kafka 2.5"), "kafka-3.6": ("Kafka 1.0", "Kafka 3.6"),
            "kafka-3.8": ("Kafka 1.0", "Kafka 3.6"), "kafka-3.9.2": ("Kafka 1.0", "Kafka 3.6"),
            "kafka-4.0": ("newest", "Kafka 4.x"), "kafka-4.1": ("newest", "Kafka 4.x"),
            "kafka-4.0.2": ("newest", "Kafka 4.x"), "kafka-4.1.1": ("newest", "Kafka 4.x"),
            "kafka-4.2": ("newest", "Kafka 4.x"), "kafka-4.2.0": ("newest", "Kafka 4.x"),
            "kafka-4.3": ("newest", "Kafka 4.x"),
            "latest": ("newest", "Kafka 4.x")}


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_edge_of_kafkas_tables_is_taken_or_named(preset):
    taken, table = exercised(preset)
    coordinator, client = TABLE_OF[preset]
    assert set(table["TransactionState"]) == _version_edges("TransactionState", coordinator)
    assert set(table["TransactionManager.State"]) == _version_edges("TransactionManager.State",
                                                                     client)
    never = {m: {e for e in table[m] if e not in taken[m]} for m in table}
    assert never["TransactionState"] == set(UNEXERCISED_COORDINATOR[preset])
    assert never["TransactionManager.State"] == PINNED[preset].unexercised_client
    assert list(PINNED) == list(PRESETS)
