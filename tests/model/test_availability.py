"""Availability claims (invariants/availability.py; issue 46 item 6, issue 62): an application
following Kafka's documented handling (Kafka Streams) is not left with a fatal error, or fenced by
an epoch it made itself, where the protocol could go on. Each claim is checked only when named
and holds where Kafka has the fix; each is broken by the preset or flag that has the bug, found
from generic budgets (docs/findings.md, "The 2025-26 bugs")."""
import collections

import pytest

from kafka_mc import invariants
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.core.checking import select_properties
from kafka_mc.invariants.availability import CLAIMS
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.world import Errors, Rpc, TxnState

NAMES = ("no_fatal_invalid_txn_state", "no_fatal_batch_error", "no_fatal_unknown_server_error",
         "no_self_fencing")
TV2 = ("kafka-4.0", "kafka-4.1", "kafka-4.0.2", "kafka-4.1.1", "kafka-4.2", "kafka-4.2.0",
       "kafka-4.3", "latest")


def build(preset, config="tiny", **settings):
    cfg = registry.load(resolve_config_path(config),
                        overrides={"protocol.version": preset, **settings})
    return registry.models()["kafka"].build(cfg, invariants.PROPERTIES)


def check(model, claim):
    """(distinct states, the violation's path or None) of a BFS checking ``claim`` alone."""
    out = explore(model, BfsOptions(properties=[claim]))
    (v,) = out.violations or (None,)
    return out.stats.distinct, (v.path if v else None)


def test_the_claims_are_registered_and_checked_only_when_named():
    model = build("latest")
    names = {p.name for p in model.properties()}
    assert set(NAMES) <= names and {p.name for p in CLAIMS} == set(NAMES)
    assert not set(NAMES) & {p.name for p in select_properties(model, None)}
    assert [p.name for p in select_properties(model, ["no_self_fencing"])] == ["no_self_fencing"]
    both = [p.name for p in select_properties(model, ["all", "no_self_fencing"])]
    assert both[-1] == "no_self_fencing" and "txn_atomicity" in both


@pytest.mark.parametrize("preset", TV2)
def test_an_empty_abort_during_the_commits_marker_round_is_told_to_retry(preset):
    """Kafka's TransactionsTest.testEmptyAbortAfterCommit on every TV2 preset: the commit's
    EndTxn is answered once PrepareCommit is written and prepareComplete has set the pending
    CompleteCommit; the next transaction's abort, at the epoch that answer carried, meets the
    marker round and is answered CONCURRENT_TRANSACTIONS (retried), never PRODUCER_FENCED. With
    the 4.0 branch before KAFKA-18464 (end_txn_epoch_first) the epoch is checked first and the
    same request is fenced."""
    for flag, expected in ((False, Errors.CONCURRENT_TRANSACTIONS), (True, Errors.PRODUCER_FENCED)):
        model = build(preset, "two-transactions", **{"protocol.end_txn_epoch_first": flag})
        seen = collections.Counter()

        def met(s, a, t):
            if a[0] == "HandleEndTxn":
                m, txn = a[1], s.coordinator.txns[a[1].tid]
                if txn.state in (TxnState.PrepareCommit, TxnState.PrepareAbort) \
                        and m.producer_epoch == txn.producer_epoch:
                    assert txn.pending_state in (TxnState.CompleteCommit, TxnState.CompleteAbort)
                    (r,) = [x for x in t.network if x.rpc == Rpc.EndTxnResponse]
                    seen[(txn.state, r.error)] += 1
            return True
        model._properties += (Property("met", Expectation.TRANSITION, met),)
        explore(model, BfsOptions(properties=["met"]))
        assert {e for _, e in seen} == {expected}
        assert (TxnState.PrepareCommit, expected) in seen


def test_kafka_18464_an_empty_abort_after_a_commit_fences_its_own_producer():
    """From generic budgets (none): two transactions of one producer, the 4.0 branch before
    KAFKA-18464 fences the second abort with the epoch the first one's EndTxn made; latest
    answers CONCURRENT_TRANSACTIONS and the claim holds."""
    states, path = check(build("latest", "two-transactions",
                               **{"protocol.end_txn_epoch_first": True}), "no_self_fencing")
    assert len(path.actions) == 16 and path.actions[-1][0] == "HandleEndTxn"
    assert check(build("latest", "two-transactions"), "no_self_fencing") == (954, None)


def test_kafka_19367_a_double_bump_overflows_at_the_fencing_init_producer_id():
    """4.0.0's TV2 fence bumped the epoch twice: the new instance's InitProducerId, meeting an
    Ongoing transaction at Short.MaxValue - 1 (``cluster.last_epoch`` 1), threw and was answered
    UNKNOWN_SERVER_ERROR, fatal; with 4.0.1's fix the same search is clean."""
    settings = {"cluster.last_epoch": 1}
    _, path = check(build("kafka-4.1", **settings, **{"protocol.fence_double_bump": True}),
                    "no_fatal_unknown_server_error")
    assert len(path.actions) == 14
    assert path.actions[-1][1].error == Errors.UNKNOWN_SERVER_ERROR
    assert path.actions[-1][0] == "ReceiveInitProducerIdResponse"
    assert check(build("kafka-4.1", **settings), "no_fatal_unknown_server_error") == (19758, None)


FORGETS = {"cluster.producers_per_id": 1, "faults.producer_crashes": 0,
           "faults.coordinator_failovers": 1, "faults.batch_expiries": 1}


def test_a_failover_that_forgets_last_producer_epoch_fences_a_kip_360_retry():
    """KIP-360 on TV1: a failed batch makes the abort bump the epoch (InitProducerId with the
    producer id and epoch); the bump is written, the coordinator fails over before the client
    hears of it, and the client's retry meets the reloaded metadata without lastProducerEpoch
    (TransactionLog.readTxnRecord: NO_PRODUCER_EPOCH, every release): fenced by the epoch it
    made itself. Kept (the flag off), the retry is answered as the completed bump's."""
    _, path = check(build("kafka-3.8", **FORGETS, **{"protocol.forget_last_producer_epoch": True}),
                    "no_self_fencing")
    assert len(path.actions) == 24 and "ElectCoordinator" in [a[0] for a in path.actions]
    assert path.actions[-1][0] == "HandleInitProducerId"
    assert check(build("kafka-3.8", **FORGETS), "no_self_fencing") == (17813, None)


def test_kafka_20785_a_commit_overtaken_by_the_coordinators_abort_is_fatal_until_trunk():
    """A replaced instance's commit, at the epoch before the new instance's fence, meets the
    abort: until KAFKA-20785 (trunk) endTransaction answers it INVALID_TXN_STATE in
    CompleteAbort (fatal to Kafka Streams); latest answers PRODUCER_FENCED. Through the marker
    round it is CONCURRENT_TRANSACTIONS on both (the pending CompleteAbort)."""
    _, path = check(build("kafka-4.3"), "no_fatal_invalid_txn_state")
    assert len(path.actions) == 23
    last = path.actions[-1][1]
    assert last.rpc == Rpc.EndTxnResponse and last.error == Errors.INVALID_TXN_STATE
    assert check(build("latest"), "no_fatal_invalid_txn_state") == (16044, None)


@pytest.mark.parametrize("preset, settings, fatal, steps", [
    ("kafka-4.1", {}, True, 15),                                 # INVALID_TXN_STATE surfaced
    ("kafka-4.0.2", {}, False, None),                            # KAFKA-19690: fenced instead
    ("kafka-4.1", {"protocol.abortable_error_classification": True}, False, None),  # KIP-1050
    ("kafka-3.8", {}, True, 18),                                 # TV1: 3.7 .. 3.9.1
    ("kafka-3.9.2", {}, False, None)])                           # backported to 3.9 (4dd3512665)
def test_kafka_19690_a_batch_whose_guard_the_timeouts_marker_removed(preset, settings, fatal,
                                                                      steps):
    """A transaction timeout's marker removes the guard of a batch being verified: the batch is
    answered INVALID_TXN_STATE, which the application sees as fatal until KAFKA-19690 (the
    leader answers INVALID_PRODUCER_EPOCH; 4.0.2, 4.1.1, 4.2.0 and, backported, 3.9.2) or
    KIP-1050's client (TransactionAbortableException)."""
    model = build(preset, **{"faults.transaction_timeouts": 1, "faults.producer_crashes": 0},
                  **settings)
    _, path = check(model, "no_fatal_batch_error")
    assert (path is not None) == fatal
    if fatal:
        assert len(path.actions) == steps and path.actions[-1][0] == "ReceiveProduceResponse"
        assert path.actions[-1][1].error == Errors.INVALID_TXN_STATE


def test_the_claims_hold_on_latest_with_a_crash():
    """tiny on latest: none of the four claims is broken (and they are cheap to check)."""
    out = explore(build("latest"), BfsOptions(properties=list(NAMES)))
    assert out.violations == () and out.stats.distinct == 16044


def test_what_kafka_20310_leaves_a_rotation_retried_after_a_failover_at_transaction_version_0():
    """KAFKA-20310 (4.3) writes prevProducerId and nextProducerId only at transaction log value
    version 1 (TransactionLog.valueToBytes: logValueVersion >= 1, which transaction.version >= 1
    gives). At transaction.version 0 a TV1 client's KIP-360 bump that rotated the producer id at
    the exhausted epoch, retried after a failover, fails isValidProducerId: fenced by the
    rotation its own request made. Written (persist_producer_ids), the retry passes."""
    settings = {**FORGETS, "cluster.last_epoch": 1}
    _, path = check(build("kafka-3.8", **settings), "no_self_fencing")
    assert len(path.actions) == 24 and "ElectCoordinator" in [a[0] for a in path.actions]
    assert path.actions[-1][0] == "HandleInitProducerId" and path.actions[-1][1].producer_id == 0
    persisted = check(build("kafka-3.8", **settings, **{"protocol.persist_producer_ids": True}),
                      "no_self_fencing")
    assert persisted[1] is None


def test_a_copy_of_a_producers_own_init_transactions_fences_it_on_latest():
    """What a search of latest shows (docs/findings.md): initTransactions' InitProducerId is
    retried over a new connection (request_duplicates) and answered; the copy left on the closed
    connection is handled later and, carrying no producer id and epoch, is taken for a new
    instance's: the epoch is bumped and the producer's next request is fenced by an epoch its
    own request made. Kafka's InitProducerId cannot tell the two apart."""
    _, path = check(build("latest", **{"cluster.producers_per_id": 1,
                                       "faults.producer_crashes": 0,
                                       "faults.request_duplicates": 1}), "no_self_fencing")
    names = [a[0] for a in path.actions]
    assert len(names) == 12 and names[1] == "DuplicateRequest"
    (copy,) = [a[1] for a in path.actions if a[0] == "HandleInitProducerId" and a[1].disconnected]
    assert copy.producer_id == -1 and path.actions[-1][0] == "HandleEndTxn"
