"""Epoch exhaustion (issue 46 item 2): ``cluster.last_epoch`` stands for Short.MaxValue so that a
small search reaches it. At the exhausted epoch (``isEpochExhausted``: last - 1) InitProducerId
rotates the producer id (prepareProducerIdRotation), a TV2 EndTxn takes a nextProducerId that
completion applies, and 4.3 fixes the fence path (KAFKA-20090)."""
import time

import pytest

from tests.model.test_faults import _recording as recording

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka import partition
from kafka_mc.model.kafka.network import WriteTxnMarkers
from kafka_mc.model.kafka.params import LAST_EPOCH, kafka_params
from kafka_mc.model.kafka.world import (Errors, Partition, ProducerStateEntry, Rpc, TxnState)
from kafka_mc.explorers.bfs.search import BfsOptions, explore

# One instance, two transactions, one timeout: the coordinator's own abort meets the last epoch.
KAFKA_20090 = {"cluster.producers_per_id": 1, "faults.producer_crashes": 0,
               "workload.transactions_per_producer": 2, "faults.transaction_timeouts": 1,
               "cluster.last_epoch": 1}


def bind(preset, **settings):
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides={"protocol.version": preset, **settings})
    return registry.bind(cfg)


def test_the_last_epoch_defaults_to_short_max_value():
    cfg = registry.load(resolve_config_path("tiny"))
    assert cfg["cluster.last_epoch"] == LAST_EPOCH == 32767
    assert kafka_params(cfg).last_epoch == 32767


def test_kafka_20090_a_fenced_abort_at_the_exhausted_epoch_leaves_the_transaction_ongoing():
    """Before 4.3 the coordinator's own abort (a timeout) of a transaction at the exhausted epoch
    took no nextProducerId (``!isEpochFence``): the abort ends at the last epoch, the client's
    EndTxn(abort), overtaken, is answered as a retry with that epoch, its next transaction runs
    at the last epoch and its EndTxn overflows (UNKNOWN_SERVER_ERROR, fatal); the transaction is
    Ongoing for good, as no fence can bump the last epoch either. 4.3 rotates the id on the
    fence path and the same search is clean."""
    start = time.perf_counter()
    (v,) = explore(bind("kafka-4.2.0", **KAFKA_20090),
                   BfsOptions(properties=["quiescent_completion"])).violations
    assert time.perf_counter() - start < 60
    names = [a[0] for a in v.path.actions]
    assert len(names) == 34 and "ExpireTransaction" in names
    last = v.path.actions[-1][1]
    assert last.rpc == Rpc.EndTxnResponse and last.error == Errors.UNKNOWN_SERVER_ERROR
    txn = v.path.states[-1].coordinator.txns[0]
    assert txn.state == TxnState.Ongoing and txn.producer_epoch == 1     # the last epoch
    assert explore(bind("kafka-4.3", **KAFKA_20090)).violations == ()


@pytest.mark.parametrize("preset", ["kafka-2.7", "kafka-3.6", "latest"])
def test_init_producer_id_rotates_the_producer_id_at_the_exhausted_epoch(preset):
    """prepareProducerIdRotation: InitProducerId meeting an exhausted epoch in Empty / Complete*
    answers a new producer id at epoch 0 (the previous one kept as prevProducerId)."""
    model = bind(preset, **{"cluster.last_epoch": 1})
    seen = recording(model, lambda s, a, t: a[0] == "ReceiveInitProducerIdResponse"
                     and a[1].error == Errors.NONE and a[1].producer_epoch == 0
                     and a[1].producer_id > 0)
    assert explore(model).violations == ()
    assert seen
    for s, a, t in seen:
        txn = t.coordinator.txns[0]
        assert txn.producer_id == a[1].producer_id and txn.producer_epoch == 0
    assert explore(bind(preset)).violations == ()


def test_a_tv2_end_txn_at_the_exhausted_epoch_answers_the_next_producer_id():
    """TV2 endTransaction takes a nextProducerId when the epoch is exhausted; the EndTxn response
    carries prepareComplete's id and epoch 0, and Complete* applies them."""
    model = bind("latest", **{"cluster.last_epoch": 1, "cluster.producers_per_id": 1,
                              "faults.producer_crashes": 0,
                              "workload.transactions_per_producer": 2})
    answered = recording(model, lambda s, a, t: a[0] == "ReceiveEndTxnResponse"
                         and a[1].error == Errors.NONE)
    assert explore(model).violations == ()
    rotated = [a[1] for s, a, t in answered
               if a[1].producer_id != s.producers[a[1].producer].producer_id]
    assert rotated and all(m.producer_epoch == 0 for m in rotated)


def test_a_tv2_leader_accepts_a_marker_at_the_last_epoch_over_an_open_transaction_from_4_3():
    """ProducerAppendInfo (KAFKA-20090 #21469): KIP-1228 requires a marker epoch above the
    stored one, but a transaction already open at Short.MaxValue can only be closed by a marker
    at that epoch; 4.3 accepts it."""
    for preset, error in [("kafka-4.2.0", Errors.INVALID_PRODUCER_EPOCH),
                          ("kafka-4.3", Errors.NONE)]:
        K = kafka_params(registry.load(resolve_config_path("tiny"), overrides={
            "protocol.version": preset, "cluster.last_epoch": 5}))
        part = Partition(producers=(ProducerStateEntry(0, 5, 0, 0, 0, 0),))
        marker = WriteTxnMarkers(Rpc.WriteTxnMarkers, 0, 0, 0, 5, False, 0)
        assert partition.append_marker(K, part, marker)[0] == error
        below = part._replace(producers=(ProducerStateEntry(0, 4, 0, 0, 0, 0),))
        assert partition.append_marker(K, below, marker._replace(producer_epoch=4))[0] == \
            Errors.INVALID_PRODUCER_EPOCH


FAILOVER = {"cluster.producers_per_id": 1, "faults.producer_crashes": 0,
            "workload.transactions_per_producer": 2, "faults.coordinator_failovers": 1,
            "cluster.last_epoch": 1}


def test_kafka_20310_a_failover_forgot_the_next_producer_id_before_4_3():
    """Before 4.3 TransactionLog.valueToBytes wrote neither prevProducerId nor nextProducerId: a
    coordinator elected while an exhausted transaction is in PrepareAbort reloads it without the
    next id, completes it at the last epoch, and the client's EndTxn retry is answered with that
    epoch; its next EndTxn overflows and the transaction stays Ongoing (on 4.2, which has no
    recovery at the last epoch either). With the ids persisted the same search is clean."""
    (v,) = explore(bind("kafka-4.2.0", **FAILOVER),
                   BfsOptions(properties=["quiescent_completion"])).violations
    names = [a[0] for a in v.path.actions]
    assert len(names) == 26 and "ElectCoordinator" in names
    assert v.path.actions[-1][1].error == Errors.UNKNOWN_SERVER_ERROR
    assert explore(bind("kafka-4.2.0", **FAILOVER, **{"protocol.persist_producer_ids": True})
                   ).violations == ()
    assert explore(bind("kafka-4.3", **FAILOVER)).violations == ()


@pytest.mark.parametrize("preset, kept", [("kafka-4.2.0", False), ("kafka-4.3", True)])
def test_the_log_keeps_the_producer_ids_from_4_3(preset, kept):
    """What a new coordinator reloads (TransactionLog.readTxnRecord): the ids as written."""
    from kafka_mc.model.kafka import coordinator
    from kafka_mc.model.kafka.world import TxnMetadata

    K = kafka_params(registry.load(resolve_config_path("tiny"),
                                   overrides={"protocol.version": preset}))
    txn = TxnMetadata(producer_id=1, producer_epoch=0, prev_producer_id=0, next_producer_id=-1,
                      state=TxnState.CompleteAbort)
    assert (coordinator.written(K, txn) == txn) == kept
    assert coordinator.written(K, txn._replace(prev_producer_id=-1)) == \
        txn._replace(prev_producer_id=-1)


@pytest.mark.parametrize("double, failed", [(False, False), (True, True)])
def test_kafka_19367_the_double_fence_bump_overflows_at_the_exhausted_epoch(double, failed):
    """4.0.0 (flag fence_double_bump, no preset): InitProducerId fencing an Ongoing TV2
    transaction bumped the epoch twice, so from Short.MaxValue - 1 the abort overflowed and the
    new instance's InitProducerId failed (UNKNOWN_SERVER_ERROR, fatal to it); 4.0.1 bumps once."""
    model = bind("kafka-4.1", **{"cluster.last_epoch": 1, "protocol.fence_double_bump": double})
    seen = recording(model, lambda s, a, t: a[0] == "ReceiveInitProducerIdResponse"
                     and a[1].error == Errors.UNKNOWN_SERVER_ERROR)
    assert explore(model).violations == ()
    assert bool(seen) == failed
    from kafka_mc.model.kafka import coordinator
    from kafka_mc.model.kafka.world import TxnMetadata
    K = kafka_params(registry.load(resolve_config_path("tiny"), overrides={
        "protocol.version": "kafka-4.1", "protocol.fence_double_bump": double}))
    assert coordinator.fence_epoch(K, TxnMetadata(producer_id=0, producer_epoch=3)) == \
        (5 if double else 4)
