"""The client's view of anomalies (invariants/anomalies.py): each invariant holds on the model
and is violated by a hand-built state showing the anomaly."""
import pytest

from kafka_mc.invariants import anomalies
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.world import Batch, Control, Outcome, ProducerStateEntry, RecordId
from kafka_mc.explorers.bfs.search import BfsOptions, explore

NAMES = ["no_lost_writes", "no_aborted_reads", "aborted_writes_stay_aborted",
         "read_committed_polls"]


def bind(preset="latest", **settings):
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides={"protocol.version": preset, **settings})
    return registry.bind(cfg)


def data(n, txn=0, epoch=0, instance=0):
    return Batch(0, epoch, n, Control.DATA, -1, RecordId(0, instance, txn, n))


def marker(control, epoch=0):
    return Batch(0, epoch, -1, control, 0, RecordId(-1, -1, -1, -1))


def world(log=(), outcomes=(), returned=(), position=0):
    """The initial state of tiny with partition 0's log, the first producer's outcomes and the
    consumer's reads replaced."""
    model = bind()
    w = model.init_states()[0]
    part = w.partitions[0]._replace(log=tuple(log), producers=(
        ProducerStateEntry(0, 0, len(log) - 1, len(log) - 1, 0, -1),) if log else ())
    p = w.producers[0]._replace(outcomes=tuple(outcomes), started=True)
    c = w.consumers[0]._replace(positions=(position,), returned=tuple(returned))
    return model.params, w._replace(partitions=(part,) + w.partitions[1:],
                                    producers=(p,) + w.producers[1:], consumers=(c,))


@pytest.mark.parametrize("preset", ["kafka-2.7", "latest"])
def test_every_anomaly_invariant_holds_on_the_model(preset):
    out = explore(bind(preset, **{"faults.transaction_timeouts": 1}),
                  BfsOptions(properties=NAMES))
    assert out.violations == () and set(NAMES) <= set(out.checked)


def test_kafka_0_11_shows_an_aborted_read():
    """KAFKA-6119: the abort that does not bump the epoch lets the old instance's late batch join
    the next transaction, which commits: the application was told its transaction aborted."""
    out = explore(bind("kafka-0.11"), BfsOptions(properties=NAMES, keep_going=True))
    assert [(v.property, len(v.path)) for v in out.violations] == [
        ("aborted_writes_stay_aborted", 42), ("no_aborted_reads", 43)]


def test_a_committed_transaction_without_its_record_is_a_lost_write():
    K, w = world(log=[], outcomes=[Outcome.COMMITTED])
    assert not anomalies.no_lost_writes(K, w)
    K, w = world(log=[data(0)], outcomes=[Outcome.COMMITTED])      # undecided: not lost
    assert anomalies.no_lost_writes(K, w)


def test_a_record_of_a_transaction_the_application_saw_abort_must_not_be_read():
    """The record was appended after the ABORT marker and committed with a later transaction."""
    log = [marker(Control.ABORT), data(0), marker(Control.COMMIT)]
    K, w = world(log=log, outcomes=[Outcome.ABORTED], returned=[RecordId(0, 0, 0, 0)], position=3)
    assert not anomalies.no_aborted_reads(K, w)
    assert not anomalies.aborted_writes_stay_aborted(K, w)
    K, w = world(log=log, outcomes=[Outcome.COMMITTED], returned=[RecordId(0, 0, 0, 0)], position=3)
    assert anomalies.no_aborted_reads(K, w) and anomalies.aborted_writes_stay_aborted(K, w)


@pytest.mark.parametrize("returned, position, holds", [
    ([], 0, True),
    ([RecordId(0, 0, 0, 0), RecordId(0, 0, 1, 0)], 4, True),
    ([RecordId(0, 0, 1, 0)], 4, False),                             # skipped a committed record
    ([RecordId(0, 0, 1, 0), RecordId(0, 0, 0, 0)], 4, False),       # out of order
    ([RecordId(0, 0, 0, 0), RecordId(0, 0, 0, 0), RecordId(0, 0, 1, 0)], 4, False),  # twice
    ([RecordId(0, 0, 0, 0), RecordId(0, 0, 1, 0)], 2, False),       # returned beyond its position
])
def test_polls_return_every_committed_record_below_the_position_once_in_order(
        returned, position, holds):
    log = [data(0, txn=0), marker(Control.COMMIT), data(0, txn=1), marker(Control.COMMIT)]
    K, w = world(log=log, returned=returned, position=position)
    assert anomalies.read_committed_polls(K, w) == holds
