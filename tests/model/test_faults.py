"""The faults that make a client time out or a leader forget: request and response loss with the
client's retry, batch expiry while the Produce request is in flight, producer-state loss at a
leader; the KIP-360 epoch bump they exercise; and the protocol weaknesses they expose before
KIP-890, each found from a generic budget (no scripted scenario)."""
import pytest

from model import registry
from model.config import resolve_config_path
from model.core import Expectation, Property
from model.kafka.world import ClientState as C, Errors, Outcome, TxnState
from explorers.bfs import BfsOptions, explore

BEFORE_KIP_890 = ["kafka-1.0", "kafka-2.5", "kafka-2.6", "kafka-2.7"]


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


@pytest.mark.parametrize("fault, distinct", [("faults.batch_expiries", 78_852),
                                             ("faults.producer_state_losses", 28_817)])
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
    two = {"faults.request_delays": 1, "faults.request_duplicates": 1, "faults.producer_crashes": 0}
    model = bind("latest", **two, **{"faults.total": 1})
    both = _recording(model, lambda s, a, t: t.budgets.request_delays == 0
                      and t.budgets.request_duplicates == 0)
    capped = explore(model)
    assert both == [] and not {"DelayRequest", "DuplicateRequest"} & set(capped.never_enabled)
    model = bind("latest", **two)
    both = _recording(model, lambda s, a, t: t.budgets.request_delays == 0
                      and t.budgets.request_duplicates == 0)
    uncapped = explore(model)
    assert both and uncapped.stats.distinct > capped.stats.distinct
    assert model.init_states()[0].budgets.total == 2


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
