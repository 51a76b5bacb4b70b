"""``marker_closes_its_own_transaction`` (issue 46 item 7, invariants/markers.py): a marker
appended over an open transaction ends the transaction its coordinator is ending with it. It holds
on every preset's tiny run and where markers are retried; a leader that accepts a marker from an
older coordinator epoch (the mutant marker-ignores-coordinator-epoch) lets a marker delayed over
a failover close the producer's next transaction. Kafka's carve-outs: KAFKA-19999's equal-epoch
marker with no open transaction is written again and closes nothing (safe: the property does not
apply to it, and it happens); KAFKA-20090's marker at the last epoch over an open transaction (#21469) closes its own (safe:
met where 4.3's rotation on the fence path, #21506, is off, and the property holds; with it on, no
batch is written at the last epoch and the carve-out is not met)."""
import pytest

from tests.model.test_faults import _recording as recording
from tests.model.test_exhaustion import KAFKA_20090

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.capabilities import mutants
from kafka_mc.model.kafka import partition
from kafka_mc.model.kafka.network import WriteTxnMarkers
from kafka_mc.model.kafka.params import kafka_params
from kafka_mc.model.kafka.partition import entry_of
from kafka_mc.model.kafka.world import (NO_RECORD, Batch, Control, Errors, Partition,
                                        ProducerStateEntry, RecordId, Rpc)
from kafka_mc.explorers.bfs.search import BfsOptions, explore

PROPERTY = ["marker_closes_its_own_transaction"]
RECORDED = PROPERTY + ["record"]   # tests.model.test_faults._recording's property


def bind(preset="latest", **settings):
    return registry.bind(registry.load(resolve_config_path("tiny"),
                                       overrides={"protocol.version": preset, **settings}))


def counts(out):
    return out.stats.distinct, out.stats.generated, out.stats.depth


def _marker(a):
    return a[0] == "HandleWriteTxnMarkers"


def _closes(s, a, t):
    """The marker step appended over an open transaction of its producer id."""
    m = a[1]
    e = entry_of(s.partitions[m.partition], m.producer_id)
    return (e is not None and e.current_txn_first_offset >= 0
            and len(t.partitions[m.partition].log) > len(s.partitions[m.partition].log))


def _equal_epoch_retry(s, a, t):
    """KAFKA-19999: a marker at the leader's epoch with no open transaction, answered NONE and
    appended again (a second control batch of the same epoch)."""
    if not _marker(a):
        return False
    m = a[1]
    e = entry_of(s.partitions[m.partition], m.producer_id)
    before, after = s.partitions[m.partition].log, t.partitions[m.partition].log
    return (e is not None and e.producer_epoch == m.producer_epoch
            and e.current_txn_first_offset < 0
            and len(after) == len(before) + 1 and after[-1].producer_epoch == m.producer_epoch
            and after[-1].control != Control.DATA
            and any(r.rpc == Rpc.WriteTxnMarkersResponse and r.error == Errors.NONE
                    for r in t.network if r not in s.network))


@pytest.mark.parametrize("preset", ["kafka-0.11", "kafka-2.7", "kafka-3.6", "kafka-4.1", "latest"])
def test_it_holds_on_tiny(preset):
    out = explore(bind(preset), BfsOptions(properties=PROPERTY))
    assert out.exit_code == 0, out.violations


def test_a_marker_delayed_over_a_failover_closes_the_next_transaction_on_the_mutant():
    m = mutants.BY_NAME["marker-ignores-coordinator-epoch"]
    cfg = lambda name: registry.load(resolve_config_path("tiny"),
                                     overrides=m.settings | {"model.mutant": name})
    out = explore(registry.bind(cfg(m.name)), BfsOptions(properties=PROPERTY))
    (v,) = out.violations
    assert v.property == PROPERTY[0] and len(v.path) == 29
    names = [a[0] for a in v.path.actions]
    assert "ElectCoordinator" in names and "DelayRequest" in names
    last = v.path.actions[-1]
    assert _marker(last) and last[1].coordinator_epoch == 0     # the old coordinator's marker
    assert v.path.states[-1 - 1].producers[0].txn == 1          # the next transaction is open
    fixed = explore(registry.bind(cfg(mutants.NONE)), BfsOptions(properties=PROPERTY))
    assert counts(fixed) == (12805, 33358, 43) and fixed.exit_code == 0


def _append(preset, entry, marker, **settings):
    K = kafka_params(registry.load(resolve_config_path("tiny"),
                                   overrides={"protocol.version": preset, **settings}))
    data = Batch(0, 5, 0, Control.DATA, -1, RecordId(0, 0, 0, 0))
    commit = Batch(0, 5, -1, Control.COMMIT, 0, NO_RECORD)
    part = Partition(log=(data, commit) if entry.current_txn_first_offset < 0 else (data,),
                     producers=(entry,))
    return part, partition.append_marker(K, part, marker)


@pytest.mark.parametrize("preset", ["kafka-4.2.0", "kafka-4.3", "latest"])
def test_kafka_19999_an_equal_epoch_marker_with_no_open_transaction_is_written_again(preset):
    """ProducerAppendInfo.checkProducerEpoch (4.2.0 .. 4.4): an equal-epoch TV2 marker with no
    open transaction only skips the epoch rejection ("allowing duplicate marker write"); the
    coordinator-epoch check still applies, and the marker batch is appended to the log."""
    closed = ProducerStateEntry(0, 5, 0, 1, 0, -1)
    marker = WriteTxnMarkers(Rpc.WriteTxnMarkers, 0, 0, 0, 5, True, 0)
    part, (error, new) = _append(preset, closed, marker)
    assert error == Errors.NONE
    assert new.log == part.log + (Batch(0, 5, -1, Control.COMMIT, 0, NO_RECORD),)
    assert new.aborted == () and entry_of(new, 0) == ProducerStateEntry(0, 5, 0, 2, 0, -1)
    part, (error, new) = _append(preset, closed, marker._replace(committed=False))
    assert error == Errors.NONE and new.log[-1].control == Control.ABORT and new.aborted == ()
    fenced = closed._replace(coordinator_epoch=1)                     # checkCoordinatorEpoch
    part, (error, new) = _append(preset, fenced, marker)
    assert (error, new) == (Errors.TRANSACTION_COORDINATOR_FENCED, part)
    opened = ProducerStateEntry(0, 5, 0, 0, 0, 0)                     # an open transaction
    part, (error, new) = _append(preset, opened, marker)
    assert (error, new) == (Errors.INVALID_PRODUCER_EPOCH, part)


def test_before_kafka_19999_an_equal_epoch_marker_is_rejected():
    """The 4.2 branch between KIP-1228 and KAFKA-19999: the same marker is rejected."""
    closed = ProducerStateEntry(0, 5, 0, 1, 0, -1)
    marker = WriteTxnMarkers(Rpc.WriteTxnMarkers, 0, 0, 0, 5, True, 0)
    part, (error, new) = _append("kafka-4.2", closed, marker)
    assert (error, new) == (Errors.INVALID_PRODUCER_EPOCH, part)


def test_kafka_19999_an_equal_epoch_marker_retry_is_written_again_and_closes_nothing():
    """4.2.0: a marker retried after its answer was lost meets no open transaction at an equal
    epoch, is answered NONE and appended a second time: it closes nothing."""
    model = bind("kafka-4.2.0", **{"faults.response_losses": 1})
    retries = recording(model, _equal_epoch_retry)
    out = explore(model, BfsOptions(properties=RECORDED))
    assert out.exit_code == 0, out.violations
    assert retries
    assert counts(out) == RETRY_COUNTS


RETRY_COUNTS = (111054, 359223, 47)
LAST_EPOCH = [  # preset, flags, (distinct, generated, depth), the carve-out met
    ("kafka-4.2.0", {}, (11670, 30981, 41), False),
    ("kafka-4.3", {}, (12410, 32567, 41), False),
    ("kafka-4.3", {"protocol.rotate_on_fence": False}, (12212, 32019, 42), True)]


@pytest.mark.parametrize("preset, flags, expected, met", LAST_EPOCH)
def test_kafka_20090_the_last_epoch_carve_out_closes_its_own_transaction(preset, flags, expected,
                                                                         met):
    """One instance, two transactions, one timeout, a lost response, cluster.last_epoch = 1.
    4.3 accepts a marker at the last epoch equal to the leader's over an open transaction
    (#21469); with #21506's rotation no batch is ever written at the last epoch, so the carve-out
    is not met; without it (rotate_on_fence off: the client carries on at the last epoch) it is
    met, and the marker closes its own transaction. 4.2.0 rejects such a marker."""
    model = bind(preset, **KAFKA_20090, **{"faults.response_losses": 1, "faults.total": 2},
                 **flags)
    at_last = recording(model, lambda s, a, t: _marker(a) and _closes(s, a, t)
                        and a[1].producer_epoch == entry_of(
                            s.partitions[a[1].partition], a[1].producer_id).producer_epoch)
    out = explore(model, BfsOptions(properties=RECORDED))
    assert out.exit_code == 0, out.violations
    assert bool(at_last) == met
    assert counts(out) == expected


def _first(model, found, limit=50_000):
    """A breadth-first search of ``model`` for the first state ``found`` accepts."""
    from collections import deque
    s0 = next(iter(model.init_states()))
    seen, todo = {s0}, deque([s0])
    while todo and len(seen) < limit:
        s = todo.popleft()
        if found(s):
            return s
        for a in model.actions(s):
            t = model.step(s, a)
            if t not in seen:
                seen.add(t)
                todo.append(t)
    raise AssertionError("no such state")


def test_a_bounce_keeps_the_coordinator_epoch_and_the_old_marker_still_writes():
    """Conformance #15 (KRaft before 4.0, coordinator_bounce_keeps_epoch): the coordinator's
    broker restarts leading the transaction log at the same epoch. Its marker on the wire is
    left on a closed connection (``disconnected``: the leader may still write it, its answer is
    lost), the reloaded coordinator resends it at the same coordinator epoch, and the leader
    takes either (appendEndTxnMarker fences only a lower one). ``ElectCoordinator`` from the
    same state takes epoch 1. On 4.x the bounce is a step too (#19: the restarted node leads at
    the old epoch until the controller fences the old incarnation); with the flag off it is
    none."""
    model = bind("kafka-3.6", **{"faults.coordinator_failovers": 1, "faults.producer_crashes": 0})
    sent = lambda s: [m for m in s.network if m.rpc == Rpc.WriteTxnMarkers]
    s = _first(model, lambda s: sent(s) and ("BounceCoordinator", False) in model.actions(s))
    (old,) = sent(s)
    assert old.coordinator_epoch == s.coordinator.coordinator_epoch == 0
    t = model.step(s, ("BounceCoordinator", False))
    assert t.coordinator.coordinator_epoch == 0 and t.budgets.coordinator_failovers == 0
    assert sent(t) == [old]                                     # the new incarnation's resend
    assert t.delayed == (old._replace(disconnected=True),)      # the old one, on a closed conn
    copy = ("HandleWriteTxnMarkers", old._replace(disconnected=True), True)
    assert copy in model.actions(t)
    u = model.step(t, copy)
    k = old.partition
    assert len(u.partitions[k].log) == len(t.partitions[k].log) + 1      # written
    assert u.partitions[k].log[-1].control != Control.DATA
    assert not any(m.rpc == Rpc.WriteTxnMarkersResponse for m in u.network)   # answer lost
    # the coordinator still waits for its own marker's answer, then completes
    (resent,) = [a for a in model.actions(u) if a[0] == "HandleWriteTxnMarkers"]
    v = model.step(u, resent)
    assert any(m.rpc == Rpc.WriteTxnMarkersResponse for m in v.network)
    e = model.step(s, ("ElectCoordinator", False))
    assert e.coordinator.coordinator_epoch == 1 and sent(e)[0] == old    # still in its FIFO
    assert ("BounceCoordinator", False) in bind(
        "kafka-4.0", **{"faults.coordinator_failovers": 1}).actions(s)
    assert ("BounceCoordinator", False) not in bind(
        "kafka-4.0", **{"faults.coordinator_failovers": 1,
                        "protocol.coordinator_bounce_keeps_epoch": False}).actions(s)


@pytest.mark.parametrize("preset", ["kafka-3.6", "latest"])
def test_it_holds_with_a_failover_on_tiny(preset):
    """The marker property with a failover budgeted: on kafka-3.6 a bounce besides."""
    out = explore(bind(preset, **{"faults.coordinator_failovers": 1}),
                  BfsOptions(properties=PROPERTY))
    assert out.exit_code == 0, out.violations
