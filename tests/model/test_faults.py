"""The faults that make a client time out or a leader forget: request and response loss with the
client's retry, batch expiry while the Produce request is in flight, producer-state loss at a
leader; the KIP-360 epoch bump they exercise; and the protocol weaknesses they expose before
KIP-890, each found from a generic budget (no scripted scenario)."""
import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka import network
from kafka_mc.model.kafka.world import ClientState as C, Errors, Outcome, Rpc, TxnState
from kafka_mc.explorers.bfs.search import BfsOptions, explore

BEFORE_KIP_890 = ["kafka-1.0", "kafka-2.5", "kafka-2.6", "kafka-2.7"]
COORDINATOR_ANSWERS = (Rpc.InitProducerIdResponse, Rpc.AddPartitionsToTxnResponse,
                       Rpc.EndTxnResponse)


def bind(preset, config="tiny", **settings):
    cfg = registry.load(resolve_config_path(config),
                        overrides={"protocol.version": preset, **settings})
    return registry.bind(cfg)


def hanging(model):
    (v,) = explore(model, BfsOptions(properties=["no_hanging_transactions"])).violations
    return [a[0] for a in v.path.actions], v.path.actions


@pytest.mark.parametrize("preset", BEFORE_KIP_890)
def test_a_batch_that_expired_in_flight_lands_after_the_abort_before_kip_890(preset):
    """The expired batch's Produce request is still on its way; the client aborts, the ABORT
    marker is written, then the batch arrives with the same epoch and the next sequence and
    opens a transaction the coordinator has finished (hanging: the LSO is stuck)."""
    names, actions = hanging(bind(preset, **{"faults.batch_expiries": 1}))
    expired, marker = names.index("ExpireBatch"), names.index("HandleWriteTxnMarkers")
    produce = len(names) - 1 - names[::-1].index("HandleProduce")
    assert expired < marker < produce
    assert actions[produce][1].producer_epoch == actions[marker][1].producer_epoch
    assert not actions[marker][1].committed


@pytest.mark.parametrize("preset", BEFORE_KIP_890)
def test_a_forgotten_producer_id_lets_a_zombie_open_a_transaction_before_kip_890(preset):
    """Once the leader has forgotten the producer id, the fenced instance's late batch (sequence
    0) passes the checks of an unknown producer: no epoch to compare with."""
    names, actions = hanging(bind(preset, **{"faults.producer_state_losses": 1}))
    lost, marker = names.index("LoseProducerState"), names.index("HandleWriteTxnMarkers")
    produce = len(names) - 1 - names[::-1].index("HandleProduce")
    assert marker < lost < produce and "CrashProducer" in names
    assert actions[produce][1].producer_epoch < actions[marker][1].producer_epoch  # a zombie


# (batch expiries: 82,823 before KAFKA-18654's guard epoch, marker_keeps_tv2_guard; the 28 more
# are states that differ only in a guard's epoch, no marker keeping a guard here)
@pytest.mark.parametrize("fault, distinct", [("faults.batch_expiries", 81_617),
                                             ("faults.producer_state_losses", 31_704)])
def test_kip_890_verification_closes_both(fault, distinct):
    out = explore(bind("latest", **{fault: 1}))
    assert out.violations == () and out.stats.distinct == distinct


def _recording(model, predicate):
    seen = []

    def record(s, a, t):
        if predicate(s, a, t):
            seen.append((s, a, t))
        return True

    model._properties += (Property("record", Expectation.TRANSITION, record),)
    return seen


def test_kip_360_the_abort_ends_with_an_epoch_bump():
    """2.5+ TV1: a failed batch requires an epoch bump (abortable error while not completing);
    EndTxn(ABORT) succeeds, the client goes ABORTING -> INITIALIZING and sends InitProducerId
    with its producer id and epoch; abortTransaction() returns once the bumped epoch arrives,
    with sequences reset. A bump the coordinator rejects because a new instance took over is
    fatal, and the application never learns the abort succeeded."""
    model = bind("kafka-2.7", **{"faults.batch_expiries": 1})

    def bumped(s, a, t):
        if a[0] != "ReceiveInitProducerIdResponse":
            return False
        p = s.producers[a[1].producer]
        return p.state == C.INITIALIZING and p.producer_id != -1

    seen = _recording(model, bumped)
    explore(model, BfsOptions(properties=["record", "client_transitions",
                                          "coordinator_transitions"]))
    ok = [(s, a, t) for s, a, t in seen if a[1].error == Errors.NONE]
    fenced = [(s, a, t) for s, a, t in seen if a[1].error == Errors.PRODUCER_FENCED]
    assert ok and fenced
    for s, a, t in ok:
        before, after = s.producers[a[1].producer], t.producers[a[1].producer]
        assert (after.state, after.producer_epoch) == (C.READY, before.producer_epoch + 1)
        assert after.outcomes == before.outcomes + (Outcome.ABORTED,)
        assert set(after.next_sequence) == {0}
    for s, a, t in fenced:
        after = t.producers[a[1].producer]
        assert after.state == C.FATAL_ERROR and after.outcomes[-1] == Outcome.FAILED


def test_kip_360_is_tv1_only():
    """TV2 clients never bump the epoch themselves (every EndTxn does)."""
    model = bind("latest", **{"faults.batch_expiries": 1})
    seen = _recording(model, lambda s, a, t: any(p.epoch_bump_required for p in t.producers))
    explore(model, BfsOptions(properties=["record"]))
    assert seen == []


@pytest.mark.parametrize("preset", ["kafka-2.6", "latest"])
def test_a_lost_end_txn_response_is_retried_and_answered_as_a_retry(preset):
    """The EndTxn took effect but its response was lost: the client resends the EndTxn, which
    meets a transaction already being or done completing and must be answered as the retry it
    is (CONCURRENT_TRANSACTIONS while Prepare*, then NONE; TV2 matches the bumped epoch).
    Every invariant holds."""
    model = bind(preset, **{"faults.response_losses": 1})

    def retried(s, a, t):
        """An EndTxn meeting the very completion it caused (same id, epoch; TV2: the epoch it
        bumped)."""
        m = a[1]
        if a[0] != "HandleEndTxn":
            return False
        txn = s.coordinator.txns[m.tid]
        return (txn.state == (TxnState.CompleteCommit if m.committed else TxnState.CompleteAbort)
                and txn.pending_state == -1 and txn.producer_id == m.producer_id
                and txn.producer_epoch - m.producer_epoch == (preset == "latest"))

    seen = _recording(model, retried)
    out = explore(model)
    assert out.violations == () and "LoseResponse" not in out.never_enabled
    answers = {t.network[-1].error for _, _, t in seen}
    assert answers == {Errors.NONE}


@pytest.mark.parametrize("preset", ["kafka-2.6", "latest"])
def test_lost_requests_are_resent_and_every_invariant_holds(preset):
    out = explore(bind(preset, **{"faults.request_losses": 1}))
    assert out.violations == () and "LoseRequest" not in out.never_enabled


def test_total_caps_the_faults_of_one_execution():
    """faults.total: at most that many faults of any kinds per execution; by default the sum of
    the budgets (no further limit)."""
    two = {"faults.request_losses": 1, "faults.request_duplicates": 1, "faults.producer_crashes": 0}
    model = bind("latest", **two, **{"faults.total": 1})
    both = _recording(model, lambda s, a, t: t.budgets.request_losses == 0
                      and t.budgets.request_duplicates == 0)
    capped = explore(model)
    assert both == [] and not {"LoseRequest", "DuplicateRequest"} & set(capped.never_enabled)
    model = bind("latest", **two)
    both = _recording(model, lambda s, a, t: t.budgets.request_losses == 0
                      and t.budgets.request_duplicates == 0)
    uncapped = explore(model)
    assert both and uncapped.stats.distinct > capped.stats.distinct
    assert model.init_states()[0].budgets.total == 2


def test_a_request_is_held_back_only_once_a_later_one_can_overtake_it():
    """DelayRequest is taken at the head of a connection with a later message behind it (that
    message overtakes the held one). A client sends one request at a time on a connection and
    the coordinator one marker per partition, so on tiny with delays alone a delay has nothing
    to overtake; after a coordinator failover the new coordinator's WriteTxnMarkers queues
    behind the old one's on the connection to the partition."""
    delays = {"faults.request_delays": 1, "faults.producer_crashes": 0}
    assert "DelayRequest" in explore(bind("latest", **delays)).never_enabled
    model = bind("latest", **delays, **{"faults.coordinator_failovers": 1})
    steps = _recording(model, lambda s, a, t: a[0] == "DelayRequest")
    assert "DelayRequest" not in explore(model).never_enabled and steps
    assert {a[1].rpc for _, a, _ in steps} == {network.Rpc.WriteTxnMarkers}
    for s, a, t in steps:
        held = a[1]
        behind = [m for m in s.network[s.network.index(held) + 1:]
                  if network.connection(m) == network.connection(held)]
        assert behind and t.delayed.count(held) == s.delayed.count(held) + 1


def _reachable(model, extra=lambda s: ()):
    """Every reachable state, with the delays ``extra(s)`` adds (``network.delay_request``)."""
    seen, todo = set(model.init_states()), list(model.init_states())
    while todo:
        s = todo.pop()
        held = list(extra(s))
        for a in list(model.actions(s)) + held:
            t = network.delay_request(model.params, s, a[1]) if a in held else model.step(s, a)
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


@pytest.mark.parametrize("faults", [{"faults.coordinator_failovers": 1},
                                    {"faults.request_duplicates": 1}])
def test_holding_back_only_what_can_be_overtaken_keeps_every_verdict(faults):
    """The model against one that may hold back any request at the head of its connection
    (``network.delay_request_enabled``'s argument, checked): the same states up to where the
    requests wait (in their FIFO or held back) and the budgets left, and each state property has
    the same value on states that agree on the rest."""
    model = bind("latest", **{"faults.request_delays": 1, "faults.producer_crashes": 0}, **faults)
    K = model.params

    def eager(s):   # the delays the model leaves out
        return [("DelayRequest", m) for _, i, m in network.deliverable(s.network, ())
                if m.rpc in network.REQUESTS and s.budgets.total and s.budgets.request_delays
                and ("DelayRequest", m) not in model.actions(s)]

    def rest(s):
        return (s.producers, s.coordinator, s.partitions, s.consumers, s.group,
                tuple(sorted(map(repr, s.network + s.delayed))))

    def values(s):
        return tuple(p.holds(s) for p in model.properties()
                     if p.expectation in (Expectation.ALWAYS, Expectation.SOMETIMES,
                                          Expectation.TERMINAL))

    lazy, full = _reachable(model), _reachable(model, eager)
    assert lazy < full
    by_rest = {rest(s): values(s) for s in lazy}
    assert {rest(s) for s in full} == set(by_rest)
    assert all(values(s) == by_rest[rest(s)] for s in full)


def test_a_request_left_on_a_closed_connection_is_handled_but_never_answered():
    """DuplicateRequest is a retry over a new connection: the copy left on the closed one
    (``disconnected``) still reaches the broker, whose answer is lost with the connection. So a
    client never has two answers of the coordinator on their way (it sends one request at a
    time), a copy's delivery sends no answer, and a copy is neither lost nor copied again."""
    model = bind("latest", **{"faults.request_duplicates": 1, "faults.request_losses": 1,
                              "faults.producer_crashes": 0})
    states = _reachable(model)
    copies = [m for s in states for m in s.delayed]
    assert copies and all(m.disconnected for m in copies)
    assert not any(getattr(m, "disconnected", False) for s in states for m in s.network)

    def answers(s, i):
        return [m for m in s.network if m.rpc in COORDINATOR_ANSWERS and m.producer == i]
    assert all(len(answers(s, i)) <= 1 for s in states for i in range(len(s.producers)))
    handled = _recording(model, lambda s, a, t: len(a) == 3 and a[2] and a[1].disconnected)
    faulty = _recording(model, lambda s, a, t: a[0] in ("DuplicateRequest", "LoseRequest")
                        and a[1].disconnected)
    explore(model)
    assert {a[0] for _, a, _ in handled} >= {"HandleEndTxn", "HandleProduce",
                                             "HandleWriteTxnMarkers"}
    responses = lambda w: [m for m in w.network if m.rpc & 1]
    assert all(responses(t) == responses(s) for s, _, t in handled)
    assert all(after.reply.rpc == -1 for s, _, t in handled   # nor does the append's callback
               for before, after in zip(s.coordinator.appends, t.coordinator.appends)
               if after != before and after)
    assert faulty == []


@pytest.mark.parametrize("preset, error", [("kafka-2.6", Errors.INVALID_PRODUCER_EPOCH),
                                           ("kafka-2.7", Errors.PRODUCER_FENCED)])
def test_a_fenced_bump_is_answered_as_the_version_does(preset, error):
    """KAFKA-9911 (2.7) split PRODUCER_FENCED out of INVALID_PRODUCER_EPOCH: a KIP-360 bump
    that a new instance's InitProducerId has fenced is answered with the error of the version
    (the client treats both as fatal, so the state counts are the same)."""
    model = bind(preset, **{"faults.batch_expiries": 1})
    seen = _recording(model, lambda s, a, t: a[0] == "ReceiveInitProducerIdResponse"
                      and a[1].error not in (Errors.NONE, Errors.CONCURRENT_TRANSACTIONS,
                                             Errors.NOT_COORDINATOR))
    explore(model, BfsOptions(properties=["record"]))
    assert seen and {a[1].error for _, a, _ in seen} == {error}


# --- inter-broker requests: markers and verification ------------------------------------------

def _after_a_lost_marker_response(preset):
    """States right after LoseResponse dropped a successful marker's response (the marker was
    appended), with the marker the coordinator sent again."""
    model = bind(preset, **{"faults.response_losses": 1, "faults.producer_crashes": 0})
    seen = _recording(model, lambda s, a, t: a[0] == "LoseResponse"
                      and a[1].rpc.name == "WriteTxnMarkersResponse" and a[1].error == Errors.NONE)
    explore(model, BfsOptions(properties=["record"]))
    return model, seen


@pytest.mark.parametrize("preset, answer, appended", [
    ("kafka-2.6", Errors.NONE, True),                 # TV1: the same epoch is accepted again
    ("kafka-4.0", Errors.NONE, True),                 # TV2: an equal epoch is accepted
    ("kafka-4.2", Errors.INVALID_PRODUCER_EPOCH, False),   # KIP-1228: must exceed the stored one
    ("latest", Errors.NONE, True)])                   # KAFKA-19999: written again
def test_a_marker_whose_response_is_lost_is_retried_and_answered_by_the_versions_checks(
        preset, answer, appended):
    """TransactionMarkerRequestCompletionHandler re-enqueues a marker whose request timed out;
    the leader, which appended it, meets it a second time and answers as its version checks."""
    model, seen = _after_a_lost_marker_response(preset)
    assert seen
    for s, a, t in seen:
        lost = a[1]
        assert t.budgets.response_losses == s.budgets.response_losses - 1
        (resent,) = [m for m in t.network if m.rpc.name == "WriteTxnMarkers"]
        assert (resent.partition, resent.producer_id, resent.producer_epoch, resent.committed,
                resent.coordinator_epoch) == (lost.partition, lost.producer_id,
                                              lost.producer_epoch, lost.committed,
                                              lost.coordinator_epoch)
        (deliver,) = [b for b in model.actions(t) if b[0] == "HandleWriteTxnMarkers"]
        u = model.step(t, deliver)
        log = u.partitions[resent.partition].log
        assert u.network[-1].error == answer
        assert (len(log) > len(t.partitions[resent.partition].log)) == appended
        if appended:   # a second marker of a transaction already ended: nothing changes for readers
            assert log[-1].control == log[-2].control and u.partitions[0].aborted == \
                t.partitions[0].aborted


@pytest.mark.parametrize("fault, rule", [("faults.response_losses", "LoseResponse"),
                                         ("faults.request_duplicates", "DuplicateRequest"),
                                         ("faults.coordinator_failovers", "BounceCoordinator")])
def test_kafka_4_2_hangs_in_prepare_commit_on_a_resent_marker(fault, rule):
    """KAFKA-19999 from three generic faults: the marker resent after a lost response, retried
    over a new connection once the copy on the closed one was written, or resent by the
    restarted coordinator after a failover (the shortest: a bounce, on 4.x too since #19, the
    killed incarnation's marker written from its closed connection), is rejected by KIP-1228's strict epoch check, the coordinator
    stops sending markers and the transaction stays in Prepare*. ``latest`` (the fix) is clean
    on all three."""
    settings = {fault: 1, "faults.producer_crashes": 0}
    (v,) = explore(bind("kafka-4.2", **settings),
                   BfsOptions(properties=["quiescent_completion"])).violations
    names = [a[0] for a in v.path.actions]
    assert rule in names
    assert v.path.actions[-1][1].error == Errors.INVALID_PRODUCER_EPOCH
    assert v.path.states[-1].coordinator.txns[0].state in (TxnState.PrepareCommit,
                                                            TxnState.PrepareAbort)
    assert explore(bind("latest", **settings)).violations == ()


@pytest.mark.parametrize("preset, retried", [("kafka-3.6", "NETWORK_EXCEPTION"),
                                             ("kafka-3.8", "NOT_ENOUGH_REPLICAS"),
                                             ("kafka-4.0", "NOT_ENOUGH_REPLICAS"),
                                             ("latest", "NOT_ENOUGH_REPLICAS")])
def test_a_lost_verification_fails_the_produce_and_the_client_resends_it(preset, retried):
    """A leader's verification (AddPartitionsToTxn v4+) or its answer is lost: its callbacks get
    NETWORK_EXCEPTION, the produce fails with NOT_ENOUGH_REPLICAS (NETWORK_EXCEPTION itself
    before KAFKA-16386, kafka-3.6) and the client resends the batch with the same sequence number, which is verified again with the same guard."""
    for fault in ("faults.request_losses", "faults.response_losses"):
        model = bind(preset, **{fault: 1, "faults.producer_crashes": 0})
        seen = _recording(model, lambda s, a, t: a[0] in ("LoseRequest", "LoseResponse")
                          and a[1].rpc.name.startswith("VerifyAddPartition"))
        resent = _recording(model, lambda s, a, t: a[0] == "ReceiveProduceResponse"
                            and a[1].error.name == retried)
        out = explore(model)
        assert out.violations == () and seen and resent
        for s, a, t in seen:
            assert t.network[-1].error.name == retried and t.network[-1].request == a[1].produce
        for s, a, t in resent:
            assert t.network[-1] == a[1].request
            assert t.producers[a[1].producer] == s.producers[a[1].producer]


@pytest.mark.parametrize("preset, at_leader", [("kafka-4.0", False), ("kafka-4.1", True),
                                               ("latest", True)])
def test_concurrent_transactions_on_verification_is_retried_where_the_version_retries(
        preset, at_leader):
    """A verification answered CONCURRENT_TRANSACTIONS (the previous transaction still
    completing): a TV2 leader from 4.1 asks again itself (KAFKA-18654); 4.0 fails the produce
    with NOT_ENOUGH_REPLICAS for the client to resend. (A TV1 client adds the partition before it
    produces, so its verification meets no completing transaction here.)"""
    model = bind(preset, config="tiny", **{"workload.transactions_per_producer": 2,
                                          "cluster.producers_per_id": 1,
                                          "faults.producer_crashes": 0, "cluster.consumers": 0})
    seen = _recording(model, lambda s, a, t: a[0] == "HandleVerifyAddPartitionResponse"
                      and a[1].error == Errors.CONCURRENT_TRANSACTIONS)
    assert explore(model).violations == ()
    assert seen
    for s, a, t in seen:
        sent = t.network[-1]
        if at_leader:
            assert sent.rpc.name == "VerifyAddPartition" and sent.guard == a[1].guard
        else:
            assert sent.rpc.name == "ProduceResponse" and sent.error == Errors.NOT_ENOUGH_REPLICAS


@pytest.mark.parametrize("preset, state", [("kafka-2.6", C.FATAL_ERROR),
                                           ("kafka-2.7", C.ABORTABLE_ERROR),
                                           ("latest", C.ABORTABLE_ERROR)])
def test_a_produce_rejected_for_an_old_epoch_is_abortable_from_2_7(preset, state):
    """A leader answers a batch of an old epoch with INVALID_PRODUCER_EPOCH: before KIP-588 the
    client maps it to ProducerFencedException (fatal), from 2.7 to InvalidProducerEpochException,
    which TransactionManager.maybeTransitionToErrorState makes abortable: the application aborts
    (its EndTxn then meets the newer epoch and is fenced at the coordinator)."""
    model = bind(preset, **{"faults.transaction_timeouts": 1})
    seen = _recording(model, lambda s, a, t: a[0] == "ReceiveProduceResponse"
                      and a[1].error == Errors.INVALID_PRODUCER_EPOCH
                      and a[1].request in s.producers[a[1].producer].in_flight
                      and s.producers[a[1].producer].state == C.IN_TRANSACTION)
    assert explore(model).violations == ()
    assert seen and {t.producers[a[1].producer].state for s, a, t in seen} == {state}


def test_an_older_instance_epoch_bump_fences_the_newer_instance_an_availability_hazard():
    """KIP-360 (2.5+): an instance whose batch failed bumps its epoch with InitProducerId(producer
    id, epoch) after its abort; if a newer instance's transaction is Ongoing by then, the
    coordinator checks the producer id only, fences the epoch and aborts the newer instance's
    transaction. No record is exposed (every safety property holds, instance_fencing included,
    which does not claim an InitProducerId): the newer application sees its producer fenced."""
    model = bind("kafka-3.6", **{"faults.batch_expiries": 1, "cluster.consumers": 0})

    def hazard(s, a, t):
        if a[0] != "HandleInitProducerId" or a[1].producer_id == -1:
            return False
        m, txn = a[1], s.coordinator.txns[a[1].tid]
        newer = [q for q in s.producers if q.tid == m.tid and q.instance != s.producers[
            m.producer].instance and (q.producer_id, q.producer_epoch) > (m.producer_id,
                                                                         m.producer_epoch)]
        return bool(newer) and txn.state == TxnState.Ongoing and txn.pending_state == -1

    seen = _recording(model, hazard)
    out = explore(model)
    assert out.violations == () and seen
    for s, a, t in seen:
        before, after = s.coordinator.txns[a[1].tid], t.coordinator.txns[a[1].tid]
        assert after.producer_epoch == before.producer_epoch + 1
        assert after.pending_state == TxnState.PrepareAbort


@pytest.mark.parametrize("preset, settings, violated", [
    ("kafka-0.11", {}, {"zombie_fencing", "instance_fencing"}),            # KAFKA-6119
    ("kafka-1.0", {}, set()),
    ("kafka-1.0", {"faults.producer_state_losses": 1}, {"zombie_fencing", "instance_fencing"}),
    ("kafka-1.0", {"faults.batch_expiries": 1}, {"zombie_fencing", "instance_fencing"}),
    ("kafka-2.7", {"faults.producer_state_losses": 1}, {"zombie_fencing", "instance_fencing"}),
    ("kafka-3.6", {"faults.producer_state_losses": 1}, set()),
    ("kafka-3.6", {"faults.batch_expiries": 1, "cluster.consumers": 0}, set()),
    ("latest", {"faults.producer_state_losses": 1, "faults.transactional_id_expirations": 1},
     set())])
def test_which_presets_meet_the_fencing_claims(preset, settings, violated):
    """invariants/fencing.py's table: the epoch claim and the instance claim, per preset."""
    out = explore(bind(preset, **settings), BfsOptions(
        properties=["zombie_fencing", "instance_fencing"], keep_going=True))
    assert {v.property for v in out.violations} == violated


@pytest.mark.parametrize("preset", ["kafka-3.6", "latest"])
def test_a_lost_offset_commit_verification_is_retried_by_the_client(preset):
    """The group coordinator verifies a TxnOffsetCommit too; a lost verification calls back
    NETWORK_EXCEPTION, which it converts to COORDINATOR_LOAD_IN_PROGRESS
    (maybeConvertOffsetCommitError) and the client's TxnOffsetCommitHandler resends."""
    model = bind(preset, **{"cluster.producers_per_id": 1, "faults.producer_crashes": 0,
                            "cluster.consumers": 0, "workload.consume_transform_produce": True,
                            "workload.input_records": 1, "faults.request_losses": 1})
    lost = _recording(model, lambda s, a, t: a[0] == "LoseRequest"
                      and a[1].rpc.name == "VerifyAddPartition"
                      and a[1].produce.rpc.name == "TxnOffsetCommit")
    retried = _recording(model, lambda s, a, t: a[0] == "ReceiveTxnOffsetCommitResponse"
                         and a[1].error == Errors.COORDINATOR_LOAD_IN_PROGRESS)
    assert explore(model).violations == ()
    assert lost and retried
    for s, a, t in retried:
        assert t.network[-1].rpc.name == "TxnOffsetCommit"    # sent again
        assert t.producers[a[1].producer].in_flight_request == s.producers[
            a[1].producer].in_flight_request


@pytest.mark.parametrize("preset, error", [("kafka-1.0", Errors.UNKNOWN_PRODUCER_ID),
                                           ("kafka-2.5", Errors.NONE)])
def test_an_unknown_producer_id_with_a_later_sequence_is_accepted_from_2_5(preset, error):
    """After the leader forgot the producer id, the next transaction's batch (same epoch, next
    sequence) is rejected with UNKNOWN_PRODUCER_ID before 2.5 and accepted from 2.5 (KIP-360,
    KAFKA-8710: checkSequence accepts any sequence when there is no producer epoch)."""
    model = bind(preset, **{"faults.producer_state_losses": 1, "cluster.producers_per_id": 1,
                            "faults.producer_crashes": 0, "cluster.consumers": 0,
                            "workload.transactions_per_producer": 2})
    seen = _recording(model, lambda s, a, t: a[0] == "HandleProduce"
                      and not s.partitions[a[1].partition].producers
                      and a[1].base_sequence > 0)
    explore(model, BfsOptions(properties=["record"]))
    assert seen and {t.network[-1].error for _, _, t in seen} == {error}


# --- issue 62: a kill for good, the timer fair whatever the budget, guards that expire ---------

KILLED = {"cluster.producers_per_id": 1, "faults.producer_crashes": 0, "faults.producer_kills": 1,
          "faults.transaction_timeouts": 1}


def _with_rule(model, rule):
    """``model`` with one rule replaced (a test's broken variant of the model)."""
    from kafka_mc import invariants
    spec = model.spec.derive(model.spec.name + "-variant", replace=[rule])
    out = type(model)(spec, model.cfg)
    assert {p.name for p in out.properties()} >= {p.name for p in invariants.PROPERTIES}
    return out


def test_a_killed_producer_never_acts_again_and_the_timer_aborts_its_transaction():
    """KillProducer (faults.producer_kills): the instance's process is gone, no zombie. No rule
    of it fires again and nothing changes it (its connections closed: requests in flight may
    still land, answered into nothing); its Ongoing transaction is aborted by
    transaction.timeout.ms once nothing else can happen, so every terminal state is complete."""
    from kafka_mc.model.kafka import client
    model = bind("latest", **KILLED)
    client_rules = {r.name for r in client.CLIENT_RULES}
    seen = {"dead": 0, "timer": 0}

    def dead_is_dead(s, a, t):
        if s.producers[0].replaced and not s.producers[0].started:
            seen["dead"] += 1
            assert not (a[0] in client_rules and a[1] == 0)
            assert t.producers[0] == s.producers[0]   # an answer to it reaches nobody
            if a[0] == "ExpireTransaction" and a[-1]:
                seen["timer"] += 1
        return True
    model._properties += (Property("dead", Expectation.TRANSITION, dead_is_dead),)
    out = explore(model, BfsOptions(properties=["dead", "quiescent_completion", "txn_atomicity",
                                                "no_hanging_transactions"]))
    assert out.violations == () and seen["dead"] and seen["timer"]


def test_the_transaction_timer_is_fair_whatever_the_budget():
    """Once nothing but a timer can fire, transaction.timeout.ms aborts an Ongoing transaction
    (the fair, unbudgeted ExpireTransaction), with budget left or not: a killed producer's
    transaction is always completed (eventual_completion on the graph). Offered only once the
    budget is spent, as before issue 62, the timer is held back and a lasso stays Ongoing."""
    from kafka_mc.explorers.graph import search as graph
    from kafka_mc.model.kafka import coordinator, faults
    from kafka_mc.model.protocol import Rule
    model = bind("latest", **KILLED)
    assert graph.explore(model, graph.GraphOptions(properties=["eventual_completion"])
                         ).violations == ()

    def before(K, w):
        budgeted = coordinator.expire_transaction_enabled(K, w)
        if budgeted:
            return [(tid, False) for (tid,) in budgeted]
        ongoing = coordinator.expire_transaction_enabled(K, w, idle=True)
        return [(tid, True) for (tid,) in ongoing] if ongoing and faults.client.idle(K, w) else []
    (old,) = [r for r in model.spec.rules if r.name == "ExpireTransaction"]
    held = _with_rule(model, Rule(old.name, old.params, before, old.apply, fair=old.fair))
    (v,) = graph.explore(held, graph.GraphOptions(properties=["eventual_completion"])).violations
    assert v.property == "eventual_completion"
    assert "KillProducer" in [a[0] for a in v.path.actions]


GUARDS = {"cluster.producers_per_id": 1, "faults.producer_crashes": 0,
          "workload.transactions_per_producer": 2, "faults.producer_state_losses": 1,
          "faults.batch_expiries": 1}


def test_a_producer_expiry_takes_the_verification_guards_made_before_its_last_write():
    """ProducerStateManager.removeExpiredProducers removes, with an idle producer id, the
    verification entries older than producer.id.expiration.ms: a TV2 guard a marker of its
    epoch kept (KAFKA-18654) was made before that marker, the producer's last write, so it
    goes too. Kept (the model before issue 62), it lets a late verification answer of a batch
    the client had expired and aborted open a transaction its coordinator knows nothing of: a
    25-step hanging transaction on latest that Kafka cannot have."""
    from kafka_mc.model.kafka import partition
    from kafka_mc.model.kafka.world import replace_at, spend
    from kafka_mc.model.protocol import Rule
    model = bind("latest", **GUARDS)
    assert explore(model, BfsOptions(properties=["no_hanging_transactions"])).violations == ()

    def keeps_guards(K, w, k, producer_id):
        part = w.partitions[k]
        part = part._replace(producers=tuple(e for e in part.producers
                                             if e.producer_id != producer_id))
        return spend(w._replace(partitions=replace_at(w.partitions, k, part)),
                     "producer_state_losses")
    (old,) = [r for r in model.spec.rules if r.name == "LoseProducerState"]
    kept = _with_rule(model, Rule(old.name, old.params, old.enabled, keeps_guards))
    names, actions = hanging(kept)
    assert len(names) == 25 and "LoseProducerState" in names and "ExpireBatch" in names
    assert partition.OLDER is True
