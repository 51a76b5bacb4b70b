"""Kafka's own valid-transition tables (``data/transitions.json``, extracted from apache/kafka):
``TransactionState.validPreviousStates`` of the coordinator and ``TransactionManager.State``'s
``isTransitionValid`` of the producer client, per version; which edges a step of the model takes;
and the two state machines as the model declares them (``kafka_mc.model.core.Machine``), so explorers
report which of a table's edges a run took.
"""
from __future__ import annotations

import json
from functools import lru_cache, partial
from pathlib import Path

from kafka_mc.model.core import Machine
from kafka_mc.model.kafka import producer
from kafka_mc.model.kafka.world import ClientState, TxnState

TABLES = Path(__file__).resolve().parent / "data" / "transitions.json"


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
def client_table(features, two_phase: bool = False) -> dict:
    """The client's table for the version; with ``two_phase`` (workload.two_phase_commit) the
    PREPARED_TRANSACTION edges of KIP-939 (``with_prepared``)."""
    _, client = _tables()
    key = ("Kafka 4.x" if features.transaction_version == 2
           else "Kafka 3.6" if features.partition_verification
           else "Kafka 2.5" if features.producer_epoch_bump else "Kafka 0.11")
    table = next(v for label, v in client.items() if label.startswith(key))
    return with_prepared(table) if two_phase else table


def table_edges(table) -> tuple[tuple[str, str], ...]:
    """The (source, target) edges a table lists, sorted; a target valid from ANY state (the
    client's FATAL_ERROR) has no finite list of edges and is left out."""
    return tuple(sorted((src, dst) for dst, srcs in table.items() if srcs != "ANY"
                        for src in srcs))


_TXN = tuple(x.name for x in sorted(TxnState))            # names by value (0 .. 7)
_CLIENT = tuple(x.name for x in sorted(ClientState))


def coordinator_edges(s, t):
    """Transitions the coordinator prepared in one step (Kafka checks validPreviousStates in
    prepareTransitionTo). A fence shows as Ongoing -> PrepareEpochFence -> PrepareAbort: the
    epoch is bumped in memory as the abort is prepared. The Prepare* -> Complete* edge is
    prepared when the Prepare* append completes (prepareComplete, before the markers go out)."""
    edges = []
    for a, b in zip(s.coordinator.txns, t.coordinator.txns):
        if a is b or b.pending_state == -1 or (a.state, a.pending_state) == (b.state, b.pending_state):
            continue
        source, target = _TXN[b.state], _TXN[b.pending_state]
        if b.producer_epoch > a.producer_epoch and source == "Ongoing" and target == "PrepareAbort":
            edges += [(source, "PrepareEpochFence"), ("PrepareEpochFence", target)]
        else:
            edges.append((source, target))
    return edges


def client_edges(s, t):
    return [(_CLIENT[a.state], _CLIENT[b.state])
            for a, b in zip(s.producers, t.producers) if a is not b and a.state != b.state]


def coordinator_step(s, a, t):
    """The coordinator's edges of step ``a`` (none for a failover or a bounce: a reload from the
    log is not a transition)."""
    if s.coordinator.txns is t.coordinator.txns or a[0] in ("ElectCoordinator", "BounceCoordinator"):
        return ()
    return coordinator_edges(s, t)


def client_step(features, s, a, t, window: bool = False):
    """The client's edges of step ``a``, with the self-transition of a batch failing while the
    transaction is already abortable (``producer.fails_a_batch``; ``window``: several batches in
    flight, ``KafkaParams.window``)."""
    if s.producers is t.producers:
        return ()
    edges = client_edges(s, t)
    if a[0] in FAILING:
        i = producer.fails_a_batch(features, s, a, window)
        if i >= 0 and s.producers[i].state == t.producers[i].state == ClientState.ABORTABLE_ERROR:
            edges.append(("ABORTABLE_ERROR", "ABORTABLE_ERROR"))
    return edges


FAILING = frozenset({"ExpireBatch", "ReceiveProduceResponse"})   # steps that can fail a batch


def with_prepared(table: dict) -> dict:
    """KIP-939's PREPARED_TRANSACTION in TransactionManager.State.isTransitionValid (4.4, trunk):
    from IN_TRANSACTION (prepareTransaction) or INITIALIZING (keepPreparedTxn), and to
    COMMITTING_TRANSACTION / ABORTING_TRANSACTION. transitions.json predates it; the edges are
    listed only where the workload can take them (workload.two_phase_commit)."""
    t = dict(table)
    t["PREPARED_TRANSACTION"] = ["IN_TRANSACTION", "INITIALIZING"]
    for target in ("COMMITTING_TRANSACTION", "ABORTING_TRANSACTION"):
        t[target] = [*t[target], "PREPARED_TRANSACTION"]
    return t


def machines(features, two_phase: bool = False, window: bool = False) -> tuple[Machine, ...]:
    return (Machine("TransactionState", table_edges(coordinator_table(features)), coordinator_step),
            Machine("TransactionManager.State", table_edges(client_table(features, two_phase)),
                    partial(client_step, features, window=window)))
