"""Conformance to Kafka's own transition tables (model/data/transitions.json, copied from
shared/kafka): every coordinator and client transition the model takes, on every preset, is in
the table of that version, and the table edges never exercised are pinned with the reason."""
import json
from pathlib import Path

import pytest

from model import registry
from model.config import resolve_config_path
from model.core import Expectation, Property
from model.params import kafka_params
from model.versions import PRESETS
from invariants.transitions import (TABLES, client_edges, client_table, coordinator_edges,
                                    coordinator_table)
from explorers.bfs import BfsOptions, explore

SINGLE = {"cluster.producers_per_id": 1, "faults.producer_crashes": 0, "cluster.consumers": 0}
CONFIGS = [{},                                                         # tiny: restart, fence
           SINGLE | {"workload.transactions_per_producer": 2},        # Complete* -> Ongoing
           SINGLE | {"cluster.partitions": 2, "workload.records_per_transaction": 2},  # Ongoing -> Ongoing
           SINGLE | {"workload.consume_transform_produce": True, "workload.input_records": 1,
                     "faults.rebalances": 1},     # a stale generation: -> ABORTABLE_ERROR (2.5+)
           SINGLE | {"faults.transactional_id_expirations": 1}]  # Empty / Complete* -> Dead

TV2_EMPTY_ABORT = {("Empty", "PrepareAbort"), ("CompleteCommit", "PrepareAbort"),
                   ("CompleteAbort", "PrepareAbort")}
# Why they are not exercised: the TV2 client never sends an EndTxn(abort) for a transaction it
# did not start (the "empty abort").
UNEXERCISED_COORDINATOR = {p: TV2_EMPTY_ABORT if p in ("kafka-4.0", "kafka-4.2", "latest")
                           else set() for p in PRESETS}
# Client: before 2.5 ABORTABLE_ERROR needs a sequence error, unreachable without producer-state
# loss or batch expiry (not modelled yet); from 2.5 a TxnOffsetCommit with a stale generation
# (ILLEGAL_GENERATION) reaches it; a second abortable error while in ABORTABLE_ERROR
# likewise; KIP-360's epoch bump (ABORTING -> INITIALIZING, COMMITTING -> INITIALIZING in 4.x),
# idempotent-only READY -> UNINITIALIZED and InitProducerId's abortable errors are not modelled.
# From 3.6 on a failed verification (INVALID_TXN_STATE) does reach ABORTABLE_ERROR.
ABORTABLE = {("IN_TRANSACTION", "ABORTABLE_ERROR"), ("COMMITTING_TRANSACTION", "ABORTABLE_ERROR"),
             ("ABORTABLE_ERROR", "ABORTING_TRANSACTION")}
STUCK = {("ABORTABLE_ERROR", "ABORTABLE_ERROR")}
KIP_360 = {("ABORTING_TRANSACTION", "INITIALIZING"), ("READY", "UNINITIALIZED")}
KIP_890 = {("ABORTABLE_ERROR", "UNINITIALIZED"), ("INITIALIZING", "ABORTABLE_ERROR")}
UNEXERCISED_CLIENT = {
    "kafka-0.11": STUCK | ABORTABLE, "kafka-1.0": STUCK | ABORTABLE,
    "kafka-2.5": STUCK | KIP_360, "kafka-2.6": STUCK | KIP_360,
    "kafka-3.6": STUCK | KIP_360 | KIP_890,
    **{p: STUCK | KIP_360 | KIP_890 | {("COMMITTING_TRANSACTION", "INITIALIZING")}
       for p in ("kafka-4.0", "kafka-4.2", "latest")},
}


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
    assert ptable - client == UNEXERCISED_CLIENT[preset]
