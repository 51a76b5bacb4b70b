"""Availability claims (issue 46 item 6, invariants/availability.py): an application following
Kafka's documented handling (Kafka Streams) is not left with a fatal InvalidTxnStateException
where the protocol could go on. The fixes that turn it into a fenced or abortable error
(KAFKA-19690, KIP-1050, KAFKA-20785) are what the claim tells apart."""
import pytest

from kafka_mc import invariants
from kafka_mc.invariants.availability import CLAIMS, no_fatal_invalid_txn_state
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.world import Errors, Rpc, TxnState
from kafka_mc.explorers.bfs.search import BfsOptions, explore

CLAIM = "no_fatal_invalid_txn_state"


def build(preset, **settings):
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides={"protocol.version": preset, **settings})
    return registry.models()["kafka"].build(cfg, invariants.PROPERTIES + CLAIMS)


def test_the_claim_is_not_among_the_default_properties():
    assert CLAIM not in {p.name for p in invariants.PROPERTIES}


@pytest.mark.parametrize("preset, states", [
    ("kafka-4.2.0", {TxnState.PrepareAbort, TxnState.CompleteAbort}),
    ("latest", {TxnState.PrepareAbort})])
def test_a_commit_overtaken_by_the_new_instances_abort_is_invalid_txn_state(preset, states):
    """The replaced instance's commit, at the epoch before the fence, meets the abort and passes
    TV2's retry-epoch check: endTransaction answers it INVALID_TXN_STATE in PrepareAbort and,
    before KAFKA-20785, in CompleteAbort (the fix names CompleteAbort only: latest still breaks
    the claim, in PrepareAbort, the shortest way on both)."""
    model = build(preset)
    (v,) = explore(model, BfsOptions(properties=[CLAIM])).violations
    last = v.path.actions[-1][1]
    assert last.rpc == Rpc.EndTxnResponse and last.error == Errors.INVALID_TXN_STATE
    seen = set()

    def invalid(s, a, t):
        if (a[0] == "HandleEndTxn" and a[1].committed and t.network
                and t.network[-1].rpc == Rpc.EndTxnResponse
                and t.network[-1].error == Errors.INVALID_TXN_STATE):
            seen.add(s.coordinator.txns[a[1].tid].state)
        return True
    from kafka_mc.model.core import Expectation, Property
    model._properties += (Property("invalid", Expectation.TRANSITION, invalid),)
    explore(model, BfsOptions(properties=["invalid"]))
    assert seen & {TxnState.PrepareAbort, TxnState.CompleteAbort} == states


@pytest.mark.parametrize("preset, settings, fatal", [
    ("kafka-4.1", {}, True),                                     # INVALID_TXN_STATE surfaced
    ("kafka-4.0.2", {}, False),                                  # KAFKA-19690: fenced instead
    ("kafka-4.1", {"protocol.abortable_error_classification": True}, False)])   # KIP-1050
def test_a_batch_whose_guard_the_timeouts_marker_removed(preset, settings, fatal):
    """A transaction timeout's marker removes the guard of a batch being verified: the batch is
    answered INVALID_TXN_STATE, which the application sees as fatal until KAFKA-19690 (the
    leader answers INVALID_PRODUCER_EPOCH) or KIP-1050's client (TransactionAbortableException)."""
    model = build(preset, **{"faults.transaction_timeouts": 1, "faults.producer_crashes": 0},
                  **settings)
    failed = []

    def batch_half(s, a, t):
        if a[0] == "ReceiveProduceResponse" and not no_fatal_invalid_txn_state(
                model.params, s, a, t):
            failed.append(a)
        return True
    from kafka_mc.model.core import Expectation, Property
    model._properties += (Property("batches", Expectation.TRANSITION, batch_half),)
    explore(model, BfsOptions(properties=["batches"]))
    assert bool(failed) == fatal
