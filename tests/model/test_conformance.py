"""Conformance to Kafka's own transition tables (model/kafka/data/transitions.json, copied from
shared/kafka): every coordinator and client transition the model takes, on every preset, is in
the table of that version, and the table edges never exercised are pinned with the reason."""
import json
from pathlib import Path

import pytest

from model import registry
from model.config import resolve_config_path
from model.core import Expectation, Property
from model.kafka.params import kafka_params
from model.kafka.versions import PRESETS
from invariants.transitions import (TABLES, client_edges, client_table, coordinator_edges,
                                    coordinator_table)
from explorers.bfs import BfsOptions, explore
from tests.presets import PINNED

SINGLE = {"cluster.producers_per_id": 1, "faults.producer_crashes": 0, "cluster.consumers": 0}
CONFIGS = [{},                                                         # tiny: restart, fence
           SINGLE | {"workload.transactions_per_producer": 2},        # Complete* -> Ongoing
           SINGLE | {"cluster.partitions": 2, "workload.records_per_transaction": 2},  # Ongoing -> Ongoing
           SINGLE | {"workload.consume_transform_produce": True, "workload.input_records": 1,
                     "faults.rebalances": 1},     # a stale generation: -> ABORTABLE_ERROR (2.5+)
           SINGLE | {"faults.transactional_id_expirations": 1},  # Empty / Complete* -> Dead
           SINGLE | {"faults.batch_expiries": 1,     # -> ABORTABLE_ERROR; KIP-360 epoch
                     "workload.transactions_per_producer": 2}]  # bump; TV2's empty abort

# Every coordinator edge is exercised (TV2's "empty abort", EndTxn(abort) for a transaction the
# coordinator never saw, needs a batch that expired before it was added).
UNEXERCISED_COORDINATOR = {p: set() for p in PRESETS}
# The client edges never taken, per preset, and why: tests/presets.py.


def table_edges(table) -> set:
    return {(src, dst) for dst, srcs in table.items() if srcs != "ANY" for src in srcs}


def exercised(preset: str):
    coordinator, client = set(), set()

    def record(s, a, t):
        if a[0] != "ElectCoordinator":
            coordinator.update(coordinator_edges(s, t))
        client.update(client_edges(s, t))
        return True

    for settings in CONFIGS:
        cfg = registry.load(resolve_config_path("tiny"),
                            overrides={"protocol.version": preset, **settings})
        model = registry.bind(cfg)
        model._properties += (Property("record", Expectation.TRANSITION, record),)
        explore(model, BfsOptions(properties=["record", "coordinator_transitions",
                                              "client_transitions"]))
    return coordinator, client, kafka_params(cfg).features


def test_tables_are_kafkas():
    shared = Path(__file__).resolve().parents[3] / "shared" / "kafka" / "transitions.json"
    if shared.exists():
        assert json.loads(shared.read_text()) == json.loads(TABLES.read_text())


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_transition_is_in_kafkas_table(preset):
    coordinator, client, features = exercised(preset)
    ctable, ptable = table_edges(coordinator_table(features)), table_edges(client_table(features))
    assert coordinator <= ctable and {e for e in client if e[1] != "FATAL_ERROR"} <= ptable
    assert ctable - coordinator == UNEXERCISED_COORDINATOR[preset]
    assert ptable - client == PINNED[preset].unexercised_client
