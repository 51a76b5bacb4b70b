"""Deliberately broken variants of the Kafka model: each must be caught, in a small configuration,
by the invariant named for it, with a shortest counterexample.

A mutant either patches one helper a handler calls (module attributes are looked up at call time)
or replaces a rule through ``ProtocolSpec.derive``. Patches are undone after each test.
"""
from dataclasses import dataclass, field
from typing import Callable

import pytest

from model import consumer, coordinator, kafka, partition, producer, registry
from model.network import Rpc
from model.config import resolve_config_path
from model.kafka import spec_for
from model.params import kafka_params
from model.protocol import Rule
from model.world import ClientState, Control, Outcome
from explorers.bfs import BfsOptions, explore


@dataclass(frozen=True)
class Mutant:
    name: str
    invariant: str
    settings: dict
    patches: Callable = lambda: {}             # -> {(module, attribute): replacement}
    rules: Callable = lambda: []               # -> rules replacing the model's
    steps: int = 0                             # pinned length of the shortest counterexample
    doc: str = field(default="", compare=False)


# --- the broken helpers -----------------------------------------------------------------------------------

def _skip_leader_epoch_check():
    original = partition.validate_and_append

    def mutant(K, part, e, m, p):
        if e is not None and m.producer_epoch < e.producer_epoch:
            e = e._replace(producer_epoch=m.producer_epoch, last_sequence=-1)
        return original(K, part, e, m, p)
    return {(partition, "validate_and_append"): mutant}


def _skip_duplicate_check():
    original = partition.validate_and_append

    def mutant(K, part, e, m, p):
        if e is not None and e.producer_epoch == m.producer_epoch and e.last_sequence == m.base_sequence:
            e = e._replace(last_sequence=m.base_sequence - 1)
        return original(K, part, e, m, p)
    return {(partition, "validate_and_append"): mutant}


def _ignore_aborted_index():
    def mutant(part, start, upper):
        return tuple(b.record for b in part.log[start:upper] if b.control == Control.DATA)
    return {(consumer, "read_committed"): mutant}


def _lso_ignores_open_transactions():
    return {(consumer, "last_stable_offset"): lambda part: len(part.log)}


def _no_aborted_index_entry():
    original = partition.append_marker

    def mutant(K, part, m):
        error, new = original(K, part, m)
        return error, new._replace(aborted=part.aborted)
    return {(partition, "append_marker"): mutant}


def _marker_ignores_coordinator_epoch():
    original = partition.append_marker

    def mutant(K, part, m):
        e = partition.entry_of(part, m.producer_id)
        if e is not None and e.coordinator_epoch > m.coordinator_epoch:
            part = partition._with_entry(part, e._replace(coordinator_epoch=m.coordinator_epoch))
        return original(K, part, m)
    return {(partition, "append_marker"): mutant}


def _end_txn_skips_the_epoch_check():
    def handler(K, w, m):
        txn = w.coordinator.txns[m.tid]
        return coordinator.handle_end_txn(K, w, m._replace(producer_epoch=txn.producer_epoch))
    return [_delivery_rule("HandleEndTxn", Rpc.EndTxn, handler)]


def _fence_without_bump():
    original = coordinator._fence_and_abort

    def mutant(K, w, tid, txn):
        return original(K._replace(features=K.features._replace(bump_epoch_on_timeout=False)),
                        w, tid, txn)
    return {(coordinator, "_fence_and_abort"): mutant}


def _add_partitions_skips_epoch_check():
    def handler(K, w, m):
        txn = w.coordinator.txns[m.tid]
        return coordinator.handle_add_partitions(K, w, m._replace(producer_epoch=txn.producer_epoch))
    return [_delivery_rule("HandleAddPartitionsToTxn", Rpc.AddPartitionsToTxn, handler)]


def _delivery_rule(name, rpc, handler):
    enabled, apply = kafka._delivery(rpc, handler, False)
    return Rule(name, ("message", "held_back"), enabled, apply)


def _end_txn_answered_before_replication():
    original = coordinator._prepare

    def mutant(w, tid, txn, target, reply):
        if reply.rpc == coordinator.Rpc.EndTxnResponse and target.state in coordinator.PREPARE:
            w = coordinator._respond(w, coordinator.EndTxnResponse(
                coordinator.Rpc.EndTxnResponse, reply.producer, coordinator.Errors.NONE,
                target.producer_id, target.producer_epoch))
            reply = coordinator.NO_REPLY
        return original(w, tid, txn, target, reply)
    return {(coordinator, "_prepare"): mutant}


def _markers_skip_a_partition():
    original = coordinator.send_markers

    def mutant(w, tid, txn):
        if len(txn.partitions) > 1:
            txn = txn._replace(partitions=frozenset(sorted(txn.partitions)[:-1]))
        return original(w, tid, txn)
    return {(coordinator, "send_markers"): mutant}


def _end_txn_with_batches_in_flight():
    def mutant(p):
        return (p.state in (ClientState.COMMITTING_TRANSACTION, ClientState.ABORTING_TRANSACTION)
                and p.in_flight_request == -1 and not p.queued and not p.new_partitions
                and not p.pending_partitions)
    return {(producer, "_end_ready"): mutant}


def _abort_without_end_txn():
    def apply(K, w, i):
        p = w.producers[i]
        return producer._with(w, i, state=ClientState.READY, queued=frozenset(),
                              new_partitions=frozenset(), outcomes=p.outcomes + (Outcome.ABORTED,))
    return [Rule("AbortTransaction", ("producer",), producer.abort_transaction_enabled, apply)]


V26 = {"protocol.version": "kafka-2.6"}
MUTANTS = [
    Mutant("leader skips the epoch check", "zombie_fencing", V26, _skip_leader_epoch_check,
           steps=23),
    Mutant("leader skips duplicate detection", "no_duplicates",
           V26 | {"faults.request_duplicates": 1}, _skip_duplicate_check, steps=14),
    Mutant("consumer ignores the aborted index", "read_committed_isolation", {},
           _ignore_aborted_index, steps=17),
    Mutant("LSO ignores open transactions", "read_committed_isolation", {},
           _lso_ignores_open_transactions, steps=12),
    Mutant("abort marker writes no index entry", "read_committed_isolation", {},
           _no_aborted_index_entry, steps=17),
    Mutant("marker check ignores the coordinator epoch", "committed_writes_visible",
           V26 | {"faults.coordinator_failovers": 1, "faults.producer_crashes": 0,
                  "faults.request_delays": 1, "workload.transactions_per_producer": 2},
           _marker_ignores_coordinator_epoch, steps=35),
    Mutant("EndTxn skips the epoch check", "zombie_fencing", V26,
           rules=_end_txn_skips_the_epoch_check, steps=29),
    Mutant("fence without epoch bump", "no_hanging_transactions", V26, _fence_without_bump,
           steps=19),
    Mutant("AddPartitionsToTxn skips the epoch check", "zombie_fencing", V26,
           rules=_add_partitions_skips_epoch_check, steps=13),
    Mutant("EndTxn answered before Prepare* is replicated", "committed_writes_visible",
           V26 | {"faults.coordinator_failovers": 1}, _end_txn_answered_before_replication,
           steps=21),
    Mutant("markers skip a partition", "no_hanging_transactions",
           V26 | {"cluster.partitions": 2, "workload.records_per_transaction": 2,
                  "faults.producer_crashes": 0}, _markers_skip_a_partition, steps=21),
    Mutant("EndTxn sent with batches in flight", "no_hanging_transactions", V26,
           _end_txn_with_batches_in_flight, steps=19),
    Mutant("abortTransaction skips EndTxn", "client_transitions", V26,
           rules=_abort_without_end_txn, steps=6),
]


def _model(mutant: Mutant):
    cfg = registry.load(resolve_config_path("tiny"), overrides=mutant.settings)
    spec = spec_for(kafka_params(cfg))
    replaced = mutant.rules()
    if replaced:
        spec = spec.derive(f"kafka-{mutant.name}", replace=replaced, fast_successors=None)
    return spec.bind(cfg)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutant_is_caught(mutant, monkeypatch):
    for (module, attribute), replacement in mutant.patches().items():
        monkeypatch.setattr(module, attribute, replacement)
    out = explore(_model(mutant), BfsOptions(properties=[mutant.invariant]))
    assert [v.property for v in out.violations] == [mutant.invariant]
    assert len(out.violations[0].path) == mutant.steps


def test_at_least_twelve_mutants():
    assert len({m.name for m in MUTANTS}) >= 12
