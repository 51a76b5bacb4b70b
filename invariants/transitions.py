"""Conformance: every coordinator and client state change is in Kafka's own transition table for
the configured version (model/kafka/data/transitions.json, extracted from apache/kafka)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from model.core import Expectation, Property
from model.kafka.world import ClientState, TxnState

TABLES = Path(__file__).resolve().parent.parent / "model" / "kafka" / "data" / "transitions.json"


@lru_cache(maxsize=None)
def _tables():
    data = json.loads(TABLES.read_text())
    coord = {v["label"]: v["valid_previous_states"]
             for v in data["coordinator_transaction_state"]["versions"]}
    client = {v["label"]: v["valid_previous_states"]
              for v in data["producer_client_transaction_manager_state"]["versions"]}
    return coord, client


@lru_cache(maxsize=None)
def coordinator_table(features) -> dict[str, list[str]]:
    """target -> valid previous states: 0.11 (no fence), 1.0 .. 3.9 (TV1), or 4.x (TV2)."""
    coord, _ = _tables()
    key = ("newest" if features.transaction_version == 2
           else "Kafka 1.0.0" if features.bump_epoch_on_timeout else "Kafka 0.11")
    return next(v for label, v in coord.items() if label.startswith(key))


@lru_cache(maxsize=None)
def client_table(features) -> dict:
    _, client = _tables()
    key = ("Kafka 4.x" if features.transaction_version == 2
           else "Kafka 3.6" if features.partition_verification
           else "Kafka 2.5" if features.producer_epoch_bump else "Kafka 0.11")
    return next(v for label, v in client.items() if label.startswith(key))


def coordinator_edges(s, t):
    """Transitions the coordinator prepared in one step (Kafka checks validPreviousStates in
    prepareTransitionTo). A fence shows as Ongoing -> PrepareEpochFence -> PrepareAbort: the
    epoch is bumped in memory as the abort is prepared."""
    edges = []
    for a, b in zip(s.coordinator.txns, t.coordinator.txns):
        if a.pending_state != -1 or b.pending_state == -1:
            continue
        source, target = TxnState(a.state).name, TxnState(b.pending_state).name
        if b.producer_epoch > a.producer_epoch and source == "Ongoing" and target == "PrepareAbort":
            edges += [(source, "PrepareEpochFence"), ("PrepareEpochFence", target)]
        else:
            edges.append((source, target))
    return edges


def client_edges(s, t):
    return [(ClientState(a.state).name, ClientState(b.state).name)
            for a, b in zip(s.producers, t.producers) if a.state != b.state]


def _allowed(table, edges) -> bool:
    for source, target in edges:
        valid = table.get(target, [])
        if valid != "ANY" and source not in valid:
            return False
    return True


def coordinator_transitions(K, s, a, t) -> bool:
    if s.coordinator.txns is t.coordinator.txns or a[0] == "ElectCoordinator":
        return True  # unchanged, or a reload from the log (not a transition)
    return _allowed(coordinator_table(K.features), coordinator_edges(s, t))


def client_transitions(K, s, a, t) -> bool:
    if s.producers is t.producers:
        return True
    return _allowed(client_table(K.features), client_edges(s, t))


PROPERTIES = (
    Property("coordinator_transitions", Expectation.TRANSITION, coordinator_transitions,
             "every coordinator state change is allowed by Kafka's table for the configured "
             "version"),
    Property("client_transitions", Expectation.TRANSITION, client_transitions,
             "every producer client state change is allowed by Kafka's table for the configured "
             "version"),
)
