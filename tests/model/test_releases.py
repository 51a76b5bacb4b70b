"""The presets of the releases since 4.0 (issue 46): each flag they turn on changes what the
model does where the release changed Kafka, and nowhere else; the releases the real-Kafka
harness runs each have the preset standing for them."""
from pathlib import Path

import pytest

from tests.model.test_faults import _recording as recording

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka import partition
from kafka_mc.model.kafka.network import Produce, WriteTxnMarkers
from kafka_mc.model.kafka.params import kafka_params
from kafka_mc.model.kafka.versions import FLAGS, PRESETS, RELEASES, Features
from kafka_mc.model.kafka.world import Errors, Partition, ProducerStateEntry, Rpc, TxnState
from kafka_mc.explorers.bfs.search import explore


def bind(preset, config="tiny", **settings):
    cfg = registry.load(resolve_config_path(config),
                        overrides={"protocol.version": preset, **settings})
    return registry.bind(cfg)


def test_every_harness_release_has_a_preset_and_every_preset_says_what_it_changed():
    assert set(RELEASES) == {"3.5.2", "3.6.2", "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1",
                             "4.4.0"}
    assert set(RELEASES.values()) <= set(PRESETS)
    entry = registry.models()["kafka"]
    assert set(entry.preset_docs) == set(PRESETS) and all(entry.preset_docs.values())
    for name, fix in [("kafka-3.9.2", "KAFKA-19690"), ("kafka-4.0.2", "KAFKA-19690"),
                      ("kafka-4.1.1", "KAFKA-18042"),
                      ("kafka-4.1.1", "KAFKA-18202"), ("kafka-4.1.1", "KIP-1050"),
                      ("kafka-4.2.0", "KAFKA-19999"), ("kafka-4.3", "KAFKA-20090"),
                      ("kafka-4.3", "KIP-1251"), ("latest", "KAFKA-20785")]:
        assert fix in PRESETS[name][1]


def test_new_flags_default_to_the_old_behaviour_and_leave_the_old_presets_alone():
    new = ("early_epoch_rejection", "tv2_first_sequence", "epoch_before_guard",
           "fenced_commit_after_abort", "rotate_on_fence", "last_epoch_recovery",
           "persist_producer_ids", "fence_double_bump", "abortable_error_classification")
    assert all(f in FLAGS and getattr(Features(), f) is False for f in new)
    for name in ("kafka-0.11", "kafka-1.0", "kafka-2.5", "kafka-2.6", "kafka-2.7", "kafka-3.6",
                 "kafka-4.0", "kafka-4.1", "kafka-4.2"):
        assert not any(getattr(PRESETS[name][0], f) for f in new)


def test_kafka_19163_is_on_the_presets_standing_for_4_0_0_only():
    """group_expiry_ignores_pending_offsets: on the presets standing for 4.0.0 (kafka-4.0,
    kafka-4.1), off from 4.0.1 on every line, never before 4.0 (the Scala coordinator's
    hasOffsets counts pending offsets); only the fault group_expiries reads it."""
    assert {p for p, (f, _) in PRESETS.items() if f.group_expiry_ignores_pending_offsets} == \
        {"kafka-4.0", "kafka-4.1"}
    assert all("KAFKA-19163" in PRESETS[p][1] for p in ("kafka-4.0", "kafka-4.1", "kafka-4.0.2"))


def _stale_produce_at_a_leader(preset):
    """Steps where a leader with state for a producer id at a newer epoch and no open
    transaction meets a batch of an older epoch (the replaced instance's, a zombie)."""
    model = bind(preset, **{"faults.transaction_timeouts": 1})

    def stale(s, a, t):
        if a[0] != "HandleProduce" or a[1].rpc != Rpc.Produce:
            return False
        e = partition.entry_of(s.partitions[a[1].partition], a[1].producer_id)
        return e is not None and a[1].producer_epoch < e.producer_epoch
    return model, recording(model, stale)


@pytest.mark.parametrize("preset, early", [("kafka-4.0.2", False), ("kafka-4.1.1", True)])
def test_a_lower_epoch_is_rejected_before_verification_from_4_1(preset, early):
    """KAFKA-18042 (UnifiedLog.maybeStartTransactionVerification): 4.1 answers a batch whose
    epoch is below the leader's INVALID_PRODUCER_EPOCH at once; before, the leader made a guard
    and asked the coordinator, which fenced the epoch."""
    model, seen = _stale_produce_at_a_leader(preset)
    assert explore(model).violations == ()
    assert seen
    for s, a, t in seen:
        sent = t.network[-1]
        if early:
            assert sent.rpc == Rpc.ProduceResponse and sent.error == Errors.INVALID_PRODUCER_EPOCH
            assert t.partitions == s.partitions          # no guard made
        else:
            assert sent.rpc == Rpc.VerifyAddPartition


@pytest.mark.parametrize("preset, error", [("kafka-4.1", Errors.INVALID_TXN_STATE),
                                           ("kafka-4.0.2", Errors.INVALID_PRODUCER_EPOCH)])
def test_a_batch_whose_guard_a_newer_marker_removed_is_fenced_not_invalid_from_4_0_2(
        preset, error):
    """KAFKA-19690 (UnifiedLog.append): the coordinator verified the batch, then aborted the
    transaction on its own (a timeout: epoch + 1) and its marker removed the guard before the
    verification's answer came back. 4.0.2 checks the epoch first: INVALID_PRODUCER_EPOCH, which
    the client (and Kafka Streams) handle as abortable; before, INVALID_TXN_STATE, fatal to
    Streams."""
    model = bind(preset, **{"faults.transaction_timeouts": 1, "faults.producer_crashes": 0})

    def guard_gone(s, a, t):
        if a[0] != "HandleVerifyAddPartitionResponse" or a[1].error != Errors.NONE:
            return False
        part = s.partitions[a[1].partition]
        return partition.guard_of(part, a[1].produce.producer_id) != a[1].guard
    seen = recording(model, guard_gone)
    assert explore(model).violations == ()
    assert seen
    for s, a, t in seen:
        assert t.network[-1].rpc == Rpc.ProduceResponse and t.network[-1].error == error


@pytest.mark.parametrize("preset, error", [("kafka-4.0.2", Errors.NONE),
                                           ("kafka-4.1.1", Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)])
def test_a_tv2_first_batch_with_no_producer_state_must_start_at_sequence_0_from_4_1(preset,
                                                                                   error):
    """KAFKA-18202 (ProducerAppendInfo.checkSequence): since KIP-360 a leader with no state for
    a producer id accepts any sequence; 4.1 refuses a verified TV2 batch that does not start at
    0. (Shown here on the leader's own function; with two batches in flight the model finds
    what it is for: tests/model/test_inflight.py.)"""
    K = kafka_params(registry.load(resolve_config_path("tiny"),
                                   overrides={"protocol.version": preset}))
    producer = next(iter(bind(preset).init_states())).producers[0]
    m = Produce(Rpc.Produce, 0, 0, 7, 3, 1, 0, 1)
    assert partition.validate_and_append(K, Partition(), None, m, producer)[0] == error
    first = m._replace(base_sequence=0)
    assert partition.validate_and_append(K, Partition(), None, first, producer)[0] == Errors.NONE
    known = ProducerStateEntry(7, 3, 0, 0, -1, 0)     # state at the same epoch: in order
    assert partition.validate_and_append(K, Partition(), known, m, producer)[0] == Errors.NONE


@pytest.mark.parametrize("preset, error", [("kafka-4.2.0", Errors.INVALID_TXN_STATE),
                                           ("latest", Errors.PRODUCER_FENCED)])
def test_a_commit_overtaken_by_the_coordinators_abort_is_fenced_on_latest(preset, error):
    """KAFKA-20785 (TransactionCoordinator.endTransaction, TV2): the client's commit, at the
    epoch before the coordinator's own abort (a new instance's InitProducerId, or a timeout),
    arrives in CompleteAbort; it passes the retry-epoch check and was answered INVALID_TXN_STATE
    (fatal to Kafka Streams); trunk answers PRODUCER_FENCED."""
    model = bind(preset)

    def overtaken(s, a, t):
        if a[0] != "HandleEndTxn" or not a[1].committed:
            return False
        txn = s.coordinator.txns[a[1].tid]
        return (txn.state == TxnState.CompleteAbort and txn.pending_state == -1
                and txn.producer_epoch == a[1].producer_epoch + 1)
    seen = recording(model, overtaken)
    assert explore(model).violations == ()
    assert seen
    for s, a, t in seen:
        assert t.network[-1].rpc == Rpc.EndTxnResponse and t.network[-1].error == error


def test_the_harness_fetches_the_releases_the_model_maps_formatted_as_their_presets_say():
    """kafka_mc.realkafka.releases (what make kafka fetches, the transaction.version a cluster is
    formatted with) and the model's RELEASES (the preset each stands for) name the same releases,
    and a release is formatted with its preset's transaction version."""
    from kafka_mc.model.kafka.versions import features
    from kafka_mc.realkafka import releases
    assert [r.version for r in releases.RELEASES] == sorted(RELEASES, key=lambda v: tuple(map(int, v.split("."))))
    for r in releases.RELEASES:
        assert r.preset == RELEASES[r.version]
        assert r.transaction_version == features(r.preset).transaction_version, r


@pytest.mark.parametrize("epoch_first, error", [(False, Errors.CONCURRENT_TRANSACTIONS),
                                                (True, Errors.PRODUCER_FENCED)])
def test_an_empty_abort_right_after_a_commit_before_and_after_kafka_18464(epoch_first, error):
    """KAFKA-18464 (in 4.0.0; the flag end_txn_epoch_first is the branch before it): the commit's
    EndTxn was answered once PrepareCommit was written, with the bumped epoch; the application's
    next transaction aborts before its batch is drained (an empty abort) while CompleteCommit is
    still pending. Checking the epoch first (PrepareCommit accepts only a retry epoch) fences the
    producer; the pending state first makes it retry."""
    model = bind("kafka-4.1", **{"cluster.producers_per_id": 1, "faults.producer_crashes": 0,
                                 "workload.transactions_per_producer": 2,
                                 "protocol.end_txn_epoch_first": epoch_first})

    def early_abort(s, a, t):
        if a[0] != "HandleEndTxn" or a[1].committed:
            return False
        txn = s.coordinator.txns[a[1].tid]
        return (txn.state == TxnState.PrepareCommit and txn.pending_state != -1
                and txn.producer_epoch == a[1].producer_epoch)
    seen = recording(model, early_abort)
    explore(model)
    assert seen
    assert {t.network[-1].error for s, a, t in seen} == {error}


@pytest.mark.parametrize("preset, error", [("kafka-3.6", Errors.NETWORK_EXCEPTION),
                                           ("kafka-3.8", Errors.NOT_ENOUGH_REPLICAS),
                                           ("latest", Errors.NOT_ENOUGH_REPLICAS)])
def test_a_lost_verification_fails_the_produce_as_the_release_did(preset, error):
    """KAFKA-16386 (3.7.1, 3.8.0), found by `kafka-mc real conform` on real 3.6.2: a leader whose
    verification request is lost (AddPartitionsToTxnManager: NETWORK_EXCEPTION) answered the
    produce NETWORK_EXCEPTION before it, NOT_ENOUGH_REPLICAS after; the client resends the batch
    on either (Sender.canRetry)."""
    model = bind(preset, **{"faults.request_losses": 1, "faults.producer_crashes": 0,
                            "cluster.producers_per_id": 1})

    def answer(s, a, t):
        return a[0] == "LoseRequest" and a[1].rpc == Rpc.VerifyAddPartition
    lost = recording(model, answer)
    answers = recording(model, lambda s, a, t: a[0] == "ReceiveProduceResponse"
                        and a[1].error in (Errors.NETWORK_EXCEPTION, Errors.NOT_ENOUGH_REPLICAS))
    out = explore(model)
    assert out.exit_code == 0 and lost
    assert {a[1].error for _, a, _ in answers} == {error}
    resent = [t for s, a, t in answers if any(m.rpc == Rpc.Produce for m in t.network)]
    assert resent      # the client resent the batch
    assert RELEASES["3.6.2"] == "kafka-3.6" and RELEASES["3.9.2"] == "kafka-3.9.2"


def _two_transactions(flag):
    return registry.bind(registry.load(resolve_config_path("two-transactions"), overrides={
        "protocol.version": "kafka-4.1", "protocol.marker_keeps_tv2_guard": flag}))


@pytest.mark.parametrize("flag, counts, invalid", [(True, (954, 2317, 37), 0),
                                                   (False, (1322, 3181, 41), 12)])
def test_kafka_18654_a_tv2_guard_survives_the_marker_of_its_own_epoch(flag, counts, invalid):
    """KAFKA-18654 [1/2] (4.0.0, UnifiedLog.updateProducers: isV2NextTransactionStarted): the
    producer's next transaction sends its batch at the bumped epoch while the markers of the one
    before, carrying that epoch, are still on their way; the leader starts a verification (its
    guard's epoch is the batch's) and the marker arrives before the answer. From 4.0.0 the
    marker keeps the guard and the verified batch is appended; before (the 4.0 branch in Jan
    2025, marker_keeps_tv2_guard off) the marker cleared it and the answer met no guard:
    INVALID_TXN_STATE (UnifiedLog.append: batchMissingRequiredVerification), so the client
    aborts a transaction the coordinator had accepted its partition into."""
    model = _two_transactions(flag)

    def marker_over_a_guard(s, a, t):
        m = a[1]
        return (a[0] == "HandleWriteTxnMarkers"
                and partition.guard_of(s.partitions[m.partition], m.producer_id) != -1
                and len(t.partitions[m.partition].log) > len(s.partitions[m.partition].log))

    def verified(s, a, t):
        return a[0] == "HandleVerifyAddPartitionResponse" and a[1].error == Errors.NONE
    markers, answers = recording(model, marker_over_a_guard), recording(model, verified)
    out = explore(model)
    assert out.violations == ()
    assert (out.stats.distinct, out.stats.generated, out.stats.depth) == counts
    assert markers
    for s, a, t in markers:
        before = s.partitions[a[1].partition].guards
        after = t.partitions[a[1].partition].guards
        if flag:   # (producer id, guard, epoch): the marker's own epoch, kept, and marked
            # older than the producer's last write (it expires with the producer's state)
            assert [x[2] for x in before] == [a[1].producer_epoch]
            assert after == tuple(x[:3] + (partition.OLDER,) for x in before)
        else:
            assert len(before[0]) == 2 and after == ()
    errors = [t.network[-1].error for s, a, t in answers]
    assert errors.count(Errors.INVALID_TXN_STATE) == invalid
    assert set(errors) == ({Errors.NONE} if flag else {Errors.NONE, Errors.INVALID_TXN_STATE})


@pytest.mark.parametrize("preset, tv, epoch, kept", [
    ("kafka-4.1", 2, 5, True),      # TV2, the marker's own epoch: the next transaction's guard
    ("kafka-4.1", 2, 4, False),     # any other epoch is cleared (the comparison is ==)
    ("kafka-4.1", 2, 6, False),
    ("kafka-4.1", 1, 5, False),     # a TV1 guard (supportsEpochBump false): always cleared
    ("kafka-4.0", 2, 5, False)])    # before KAFKA-18654: always cleared
def test_kafka_18654_which_guard_a_marker_keeps(preset, tv, epoch, kept):
    """append_marker on the leader's own function: a COMMIT at epoch 5 meets the producer id's
    guard made by a batch at ``epoch``."""
    K = kafka_params(registry.load(resolve_config_path("tiny"), overrides={
        "protocol.version": preset, "protocol.transaction_version": tv}))
    entry = partition._guard_entry(K, 0, 3, epoch)
    assert len(entry) == (3 if preset == "kafka-4.1" and tv == 2 else 2)
    part = Partition(producers=(ProducerStateEntry(0, 4, 0, 0, 0, 0),), guards=(entry,),
                     next_guard=4)
    marker = WriteTxnMarkers(Rpc.WriteTxnMarkers, 0, 0, 0, 5, True, 0)
    error, new = partition.append_marker(K, part, marker)
    assert error == Errors.NONE and new.guards == ((entry + (partition.OLDER,),) if kept else ())
    assert partition.guard_of(new, 0) == (3 if kept else -1)


def test_kafka_18654_a_reverification_raises_the_guards_epoch_and_keeps_the_guard():
    """ProducerStateManager.maybeCreateVerificationStateEntry reuses the producer id's entry and
    VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch raises its epoch to a higher one
    (never lowers it); the guard is the same."""
    K = kafka_params(registry.load(resolve_config_path("tiny"),
                                   overrides={"protocol.version": "kafka-4.1"}))
    w = next(iter(bind("kafka-4.1").init_states()))
    part = Partition(guards=((0, 3, 5),), next_guard=4)
    for epoch, expected in [(6, 6), (4, 5), (5, 5)]:
        m = Produce(Rpc.Produce, 0, 0, 0, epoch, 0, 0, 0)
        t = partition._start_verification(K, w, part, m)
        assert t.partitions[0].guards == ((0, 3, expected),) and t.partitions[0].next_guard == 4
        assert t.network[-1].rpc == Rpc.VerifyAddPartition and t.network[-1].guard == 3


def test_kafka_18654_the_kept_guard_is_on_every_preset_from_4_0_0():
    """marker_keeps_tv2_guard: off by default and before KAFKA-18654 (kafka-4.0, the branch in
    Jan 2025), on every preset standing for 4.0.0 or later (d119864f16 is on the 4.0 .. 4.4
    branches and trunk)."""
    assert Features().marker_keeps_tv2_guard is False
    assert {p for p, (f, _) in PRESETS.items() if f.marker_keeps_tv2_guard} == {
        "kafka-4.1", "kafka-4.0.2", "kafka-4.1.1", "kafka-4.2", "kafka-4.2.0", "kafka-4.3",
        "latest"}
    assert "marker_keeps_tv2_guard" in PRESETS["kafka-4.1"][1]


RUN_392 = Path(__file__).parents[1] / "realkafka" / "runs" / "kafka-3.9.2-epoch-before-guard"


def test_20_a_zombie_batch_whose_guard_is_gone_is_fenced_on_3_9_2():
    """docs/conformance.md #20: a directed run of ``real explore`` (the class
    ``ReceiveProduceResponse: INVALID_TXN_STATE`` on kafka-3.8) on 3.9.2: the crashed
    instance's batch, verified before the next instance's InitProducerId aborted its
    transaction (whose marker removed the guard), was answered INVALID_PRODUCER_EPOCH: KAFKA-19690
    was backported to 3.9 (4dd3512665, before 3.9.2). The run (its reproduction's conform/
    folder) conforms on kafka-3.9.2 and diverges at that answer on kafka-3.8."""
    from kafka_mc.explorers.guided import runs
    release, cfg = runs.recorded_run(RUN_392)
    assert (release.version, release.preset) == ("3.9.2", "kafka-3.9.2")
    r, _, _, _ = runs.validate_folder(cfg, release, RUN_392)
    assert r.conforms, "\n".join(r.divergence.report())
    assert [a[1].error for a in r.actions if a[0] == "ReceiveProduceResponse"] == \
        [Errors.INVALID_PRODUCER_EPOCH]
    old, _, _, _ = runs.validate_folder(cfg, release, RUN_392,
                                        **{"protocol.version": "kafka-3.8"})
    assert not old.conforms
    assert old.divergence.near[0].reason == \
        "error: recorded INVALID_PRODUCER_EPOCH, model INVALID_TXN_STATE"
