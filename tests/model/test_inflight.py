"""Several batches in flight per partition (``workload.max_in_flight``, issue 62 item 2): the
leader's five-batch window and a verification's lowest sequence, the client's retries in
sequence order, its OUT_OF_ORDER_SEQUENCE_NUMBER handling and its sequence adjustment after a
failed batch; and KAFKA-18202, a TV2 first batch with no producer state, which the claim
``batches_in_sequence`` (invariants/duplicates.py) tells apart on the presets before and after
its fix (docs/findings.md). Each scenario is found in a small reachable state space, never
scripted."""
import pytest

from kafka_mc import invariants
from kafka_mc.invariants.duplicates import CLAIMS
from kafka_mc.model import registry
from kafka_mc.model.config import ConfigError, resolve_config_path
from kafka_mc.model.kafka.partition import entry_of
from kafka_mc.model.kafka.world import ClientState as C, Errors, Rpc
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.graph.search import GraphOptions, explore as explore_graph

CLAIM = "batches_in_sequence"
# the smallest configuration that shows KAFKA-18202: one instance, two records on one partition,
# both in flight, and one lost request
SMALLEST = {"workload.max_in_flight": 2, "workload.records_per_transaction": 2,
            "cluster.producers_per_id": 1, "faults.producer_crashes": 0,
            "faults.request_losses": 1}


def build(preset, config="tiny", **settings):
    cfg = registry.load(resolve_config_path(config),
                        overrides={"protocol.version": preset, **settings})
    return registry.models()["kafka"].build(cfg, invariants.PROPERTIES)


def steps(model):
    """Every step (s, a, t) of the reachable state space."""
    seen, todo = set(model.init_states()), list(model.init_states())
    while todo:
        s = todo.pop()
        for a, t in model.successors(s):
            yield s, a, t
            if t not in seen:
                seen.add(t)
                todo.append(t)


def answer(t, request):
    """The error the leader answered ``request`` with in ``t`` (None: not answered)."""
    return next((m.error for m in t.network
                 if m.rpc == Rpc.ProduceResponse and m.request == request), None)


def test_the_claim_is_checked_only_when_named():
    """The claim is a property of the model (``check --properties batches_in_sequence``) but not
    a default one: TV1 keeps KAFKA-15591's reorder on purpose (docs/findings.md)."""
    (claim,) = [p for p in invariants.PROPERTIES if p.name == CLAIM]
    assert claim in CLAIMS and not claim.default


def test_one_batch_in_flight_keeps_none_of_the_window_state():
    """At the default (one in flight) the model is what it was: nothing of the window is kept
    (tests/presets.py pins every preset's counts)."""
    model = build("latest", **{"faults.request_losses": 1, "faults.producer_crashes": 0})
    assert not model.params.window
    for s, a, t in steps(model):
        assert not any(p.reenqueued or p.resequenced or p.last_acked for p in t.producers)
        assert not any(x.lowest or any(e.batches for e in x.producers) for x in t.partitions)


def test_kafka_0_11_keeps_one_request_in_flight():
    """0.11's idempotent producer refuses max.in.flight.requests.per.connection > 1
    (KafkaProducer.configureInflightRequests, lifted by KAFKA-5494 in 1.0)."""
    with pytest.raises(ConfigError, match="KAFKA-5494"):
        build("kafka-0.11", **{"workload.max_in_flight": 2})


@pytest.mark.parametrize("preset", ["kafka-4.0.2", "kafka-4.1"])
def test_kafka_18202_a_later_batch_written_first(preset):
    """Before KAFKA-18202 (4.1.0): the first batch's Produce is lost, its retry queues behind the
    second; the second, verified with no producer state at the leader, is accepted with sequence
    1 (KIP-360's any first sequence); the first can then never be written (14 steps)."""
    (v,) = explore(build(preset, **SMALLEST), BfsOptions(properties=[CLAIM])).violations
    names = [a[0] for a in v.path.actions]
    assert len(names) == 14 and names[9] == "LoseRequest" and v.path.actions[9][1].base_sequence == 0
    assert names[-1] == "HandleVerifyAddPartitionResponse"
    assert [b.base_sequence for b in v.path.states[-1].partitions[0].log] == [1]


def test_kafka_18202_the_fix_refuses_it_and_the_batches_land_in_order():
    """From 4.1.1 (tv2_first_sequence) the second batch is answered OUT_OF_ORDER_SEQUENCE_NUMBER,
    kept to retry until the first is written, and both land in order: the claim holds."""
    model = build("kafka-4.1.1", **SMALLEST)
    assert explore(model, BfsOptions(properties=[CLAIM])).exit_code == 0
    refused = [(s, a, t) for s, a, t in steps(model) if a[0] == "HandleVerifyAddPartitionResponse"
               and answer(t, a[1].produce) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER]
    assert any(not s.partitions[0].producers for s, a, t in refused)   # no state: KAFKA-18202


def test_kafka_18202_before_the_fix_the_first_batch_is_retried_for_ever():
    """The consequence, as liveness: the first batch, answered OUT_OF_ORDER_SEQUENCE_NUMBER, is
    not the next after the acknowledged 1 (TransactionManager.canRetry), so the client retries it
    without end (a fair lasso; in Kafka until delivery.timeout.ms or the transaction timeout
    aborts the transaction). With the fix the transaction completes."""
    def lasso(preset):
        return explore_graph(build(preset, **SMALLEST),
                             GraphOptions(properties=["eventual_completion"])).violations
    (v,) = lasso("kafka-4.0.2")
    loop = list(v.path.actions[v.path.loop:]) + [v.path.loop_action]
    assert {a[0] for a in loop} == {"HandleProduce", "ReceiveProduceResponse"}
    assert all(a[1].base_sequence == 0 for a in loop if a[0] == "HandleProduce")
    assert lasso("kafka-4.1.1") == ()


def test_tv1_accepts_a_later_batch_first_too():
    """A TV1 producer keeps KIP-360's any first sequence (KAFKA-18202 is TV2's; KAFKA-15591,
    after the releases modelled, is the TV1 fix): kafka-3.8 breaks the claim (17 steps)."""
    (v,) = explore(build("kafka-3.8", **SMALLEST), BfsOptions(properties=[CLAIM])).violations
    assert len(v.path.actions) == 17
    assert [b.base_sequence for b in v.path.states[-1].partitions[0].log] == [1]


def test_a_retry_of_a_batch_before_the_last_is_a_duplicate():
    """The leader's window (ProducerStateEntry.batchMetadata, five batches): the first batch's
    answer is lost, the second is written, then the first's retry arrives: a duplicate
    (DUPLICATE_SEQUENCE_NUMBER, success to the client), where the last sequence alone would say
    out of order."""
    model = build("latest", **{**SMALLEST, "faults.request_losses": 0, "faults.response_losses": 1})
    found = [a[1] for s, a, t in steps(model) if a[0] == "HandleProduce"
             and answer(t, a[1]) == Errors.DUPLICATE_SEQUENCE_NUMBER
             and entry_of(s.partitions[0], a[1].producer_id).last_sequence != a[1].base_sequence]
    assert found and all(m.base_sequence == 0 for m in found)


def test_a_verified_batch_above_the_lowest_sequence_is_refused():
    """VerificationStateEntry.lowestSequence (KIP-890): a batch verified on a guard a lower
    sequence of its epoch also started verifying on is refused, OUT_OF_ORDER_SEQUENCE_NUMBER, and
    the guard stays for the lower one (UnifiedLog.updateProducers clears it only once a batch is
    written)."""
    model = build("latest", **{**SMALLEST, "faults.request_losses": 0, "faults.request_delays": 1})
    refused = [(s, a, t) for s, a, t in steps(model) if a[0] == "HandleVerifyAddPartitionResponse"
               and answer(t, a[1].produce) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
               and s.partitions[0].lowest[0][2] < a[1].produce.base_sequence]
    assert refused
    for s, a, t in refused:
        assert t.partitions[0].guards == s.partitions[0].guards and not t.partitions[0].log
        assert t.partitions[0].lowest == s.partitions[0].lowest


def test_an_out_of_order_batch_that_is_not_the_next_is_retried_in_sequence_order():
    """TransactionManager.canRetry: an OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that is not the
    next after the last acknowledged sequence is retried; RecordAccumulator keeps it until it is
    its partition's first in flight (``reenqueued``), then the Sender resends it."""
    model = build("kafka-4.1.1", **SMALLEST)
    kept = [(s, a, t) for s, a, t in steps(model) if a[0] == "ReceiveProduceResponse"
            and a[1].error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER]
    assert kept
    for s, a, t in kept:
        assert t.producers[0].state == s.producers[0].state != C.ABORTABLE_ERROR
        (again,) = t.producers[0].reenqueued
        assert again == a[1].request and again.base_sequence == 1
    resent = [a for s, a, t in steps(model) if a[0] == "SendProduce" and s.producers[0].reenqueued
              and not t.producers[0].reenqueued]
    assert resent


def test_a_failed_batch_gives_its_sequence_to_the_batches_after_it():
    """TxnPartitionEntry.adjustSequencesDueToFailedBatch: the first batch, refused
    INVALID_PRODUCER_EPOCH after a transaction timeout's abort, fails; the second, still in
    flight with sequence 1, takes 0 for its retry (``resequenced``), and the next sequence goes
    back to 1."""
    model = build("latest", **{**SMALLEST, "faults.request_losses": 0,
                               "faults.transaction_timeouts": 1})
    adjusted = [(s, a, t) for s, a, t in steps(model) if a[0] == "ReceiveProduceResponse"
                and a[1].error == Errors.INVALID_PRODUCER_EPOCH and t.producers[0].resequenced]
    assert adjusted
    for s, a, t in adjusted:
        assert a[1].request.base_sequence == 0 and t.producers[0].next_sequence == (1,)
        assert t.producers[0].resequenced == ((0, 0, 1, 0),)


def test_window_states_round_trip_through_traces():
    """Every field added for several batches in flight is written to and read back from ITF."""
    model = build("kafka-3.8", **{**SMALLEST, "faults.request_delays": 1,
                                  "faults.transaction_timeouts": 1, "faults.total": 2})
    kinds = set()
    for s, a, t in steps(model):
        p, part = t.producers[0], t.partitions[0]
        new = {name for name, v in (("reenqueued", p.reenqueued), ("resequenced", p.resequenced),
                                    ("last_acked", p.last_acked), ("lowest", part.lowest),
                                    ("batches", any(e.batches for e in part.producers))) if v}
        if new - kinds:
            kinds |= new
            assert model.itf_decode(model.itf_encode(t)) == t
            assert model.itf_decode_action(model.itf_encode_action(a)) == a
    assert kinds == {"reenqueued", "resequenced", "last_acked", "lowest", "batches"}
