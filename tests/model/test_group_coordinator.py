"""The group coordinator's materialised offset against Kafka's own rules: ``committed_offset``
replays the ``__consumer_offsets`` log, and ``OffsetMetadataManager`` (4.0+, read on the 4.4
branch) replays the same records into ``pendingTransactionalOffsets`` (keyed by producer id) and
``offsets``. ``kafka_replay`` below transliterates ``OffsetMetadataManager.replay`` (a
transactional offset commit: ``pendingTransactionalOffsets.computeIfAbsent(producerId).put``)
and ``replayEndTransactionMarker`` (COMMIT: materialise a pending offset only if its record offset
is greater than the committed one's; ABORT: drop it) for the model's one group and partition, and
every small log is checked against it. ``has_materialised`` (the group has an entry in
``offsets``) is checked the same way, and the group expiry of a simple group
(``workload.simple_group``, the fault ``group_expiries``) against
``OffsetMetadataManager.cleanupExpiredOffsets`` before and after KAFKA-19163."""
import itertools

import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka import group_coordinator
from kafka_mc.model.kafka.group_coordinator import committed_offset, has_materialised, has_pending
from kafka_mc.model.kafka.spec import initial_world
from kafka_mc.model.kafka.world import (Batch, ClientState, Control, Partition, ProducerStateEntry, RecordId,
                                        NO_RECORD)


def commit(pid: int, n: int) -> Batch:
    """A transactional offset commit of offset ``n`` by producer id ``pid``."""
    return Batch(pid, 0, 0, Control.DATA, -1, RecordId(0, 0, 0, n))


def marker(pid: int, control: Control) -> Batch:
    return Batch(pid, 0, -1, control, 0, NO_RECORD)


def kafka_replay(log) -> int:
    """OffsetMetadataManager.replay / replayEndTransactionMarker for one group and partition:
    the committed offset (0 when none, as the model's application starts at the beginning)."""
    committed = kafka_offsets(log)
    return 0 if committed is None else committed[1]


def kafka_offsets(log) -> tuple[int, int] | None:
    """The group's entry in ``offsets`` after the replay: (recordOffset, offset), None when
    none."""
    pending: dict[int, tuple[int, int]] = {}       # pendingTransactionalOffsets: pid -> (recordOffset, offset)
    committed: tuple[int, int] | None = None       # offsets: (recordOffset, offset)
    for record_offset, b in enumerate(log):
        if b.control == Control.DATA:
            pending[b.producer_id] = (record_offset, b.record.n)       # Offsets.put replaces
        else:
            p = pending.pop(b.producer_id, None)
            if p is None:
                continue                                               # "Ignoring it."
            if b.control == Control.COMMIT and (committed is None or p[0] > committed[0]):
                committed = p
    return committed


def test_a_later_marker_for_an_earlier_commit_does_not_win():
    """Producer 5 commits offset 100 (record 0), producer 6 offset 101 (record 1); 6's
    transaction completes first, 5's marker comes later: 101 stays (record 0 < 1), as
    testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset."""
    log = (commit(5, 100), commit(6, 101), marker(6, Control.COMMIT), marker(5, Control.COMMIT))
    assert committed_offset(Partition(log=log)) == kafka_replay(log) == 101


def test_record_offset_not_committed_offset_decides():
    """A later commit of a smaller input offset wins: Kafka compares record offsets."""
    log = (commit(5, 100), marker(5, Control.COMMIT), commit(5, 99), marker(5, Control.COMMIT))
    assert committed_offset(Partition(log=log)) == kafka_replay(log) == 99


def test_pending_and_aborted_commits_are_not_materialised():
    assert committed_offset(Partition(log=(commit(5, 100),))) == 0
    log = (commit(5, 100), marker(5, Control.COMMIT), commit(6, 101), marker(6, Control.ABORT))
    assert committed_offset(Partition(log=log)) == kafka_replay(log) == 100


def test_committed_offset_is_kafkas_on_every_small_log():
    """Every log of up to 5 batches (two producer ids, two offsets, both markers)."""
    batches = [commit(pid, n) for pid in (5, 6) for n in (1, 2)] + \
              [marker(pid, c) for pid in (5, 6) for c in (Control.COMMIT, Control.ABORT)]
    checked = 0
    for length in range(6):
        for log in itertools.product(batches, repeat=length):
            assert committed_offset(Partition(log=log)) == kafka_replay(log), log
            assert has_materialised(Partition(log=log)) == (kafka_offsets(log) is not None), log
            checked += 1
    assert checked == sum(8 ** k for k in range(6)) == 37449


def test_has_pending_is_an_open_transaction_on_the_offsets_partition():
    """hasPendingTransactionalOffsets: openTransactions holds the partition while a producer
    id's transaction is open there (ProducerStateEntry.currentTxnFirstOffset)."""
    assert not has_pending(Partition())
    idle = ProducerStateEntry(5, 0, 0, 0, -1, -1)
    assert not has_pending(Partition(producers=(idle,)))
    assert has_pending(Partition(producers=(idle._replace(current_txn_first_offset=0),)))


def _simple(preset: str, **settings):
    cfg = registry.load(resolve_config_path("ctp"), overrides={
        "protocol.version": preset, "workload.simple_group": True, "faults.rebalances": 0,
        "faults.group_expiries": 1, "cluster.transactional_ids": 1, **settings})
    return registry.bind(cfg).params


@pytest.mark.parametrize("preset, bug", [("kafka-3.8", False), ("kafka-4.0", True),
                                         ("kafka-4.1", True), ("kafka-4.0.2", False),
                                         ("kafka-4.1.1", False), ("kafka-4.2", False),
                                         ("latest", False)])
def test_a_group_with_only_pending_offsets_expires_on_4_0_0_only(preset, bug):
    """KAFKA-19163: cleanupExpiredOffsets returned true for a group with no entry in ``offsets``
    (4.0.0); the fix returns ``!openTransactions.contains(groupId)``, and the Scala coordinator
    (to 3.9) deleted a group only if ``!group.hasOffsets``, which counts pending ones. A group
    with a materialised offset never expires here (the model keeps committed offsets), nor a
    deleted one again; no offsets at all: every version deletes it."""
    K = _simple(preset)
    assert K.features.group_expiry_ignores_pending_offsets == bug
    w = initial_world(K)
    o = K.partitions
    open_txn = ProducerStateEntry(5, 0, 0, 0, -1, 0)

    def at(log, producers=()):
        return w._replace(partitions=w.partitions[:o] + (Partition(log=log, producers=producers),))
    assert group_coordinator.expire_group_enabled(K, at(())) == [()]
    pending = at((commit(5, 1),), (open_txn,))
    assert group_coordinator.expire_group_enabled(K, pending) == ([()] if bug else [])
    done = at((commit(5, 1), marker(5, Control.COMMIT)))
    assert group_coordinator.expire_group_enabled(K, done) == []
    gone = group_coordinator.expire_group(K, pending if bug else at(()))
    assert gone.group.deleted and gone.budgets.group_expiries == 0
    assert group_coordinator.expire_group_enabled(K, gone) == []


def test_a_deleted_group_answers_no_offset_until_an_offset_commit_creates_it():
    """OffsetFetch of a deleted group: INVALID_OFFSET (GroupIdNotFoundException), so the
    application starts at auto.offset.reset, earliest; the offsets stay materialised under the
    group's id and are found again once the group exists."""
    K = _simple("kafka-4.1")
    w = initial_world(K)
    o = K.partitions
    log = (commit(5, 1), marker(5, Control.COMMIT))
    w = w._replace(partitions=w.partitions[:o] + (Partition(log=log),),
                   producers=(w.producers[0]._replace(state=ClientState.READY),) + w.producers[1:])
    assert group_coordinator.offset_fetch_enabled(K, w) == [(0,)]
    assert group_coordinator.offset_fetch(K, w, 0).producers[0].position == 1
    gone = w._replace(group=w.group._replace(deleted=True))
    assert group_coordinator.offset_fetch(K, gone, 0).producers[0].position == 0


def test_the_simple_group_and_its_expiry_are_rules_only_with_their_option_and_budget():
    """ExpireGroup exists only with workload.simple_group and faults.group_expiries, and a simple
    group has no Rebalance; the options refuse what they cannot mean (one line, exit 2 on the
    command line: ConfigError)."""
    from kafka_mc.model.config import ConfigError
    from kafka_mc.model.kafka.params import kafka_params
    from kafka_mc.model.kafka.spec import spec_for

    def names(**settings):
        cfg = registry.load(resolve_config_path("ctp"), overrides=settings)
        return {r.name for r in spec_for(kafka_params(cfg)).rules}
    simple = {"workload.simple_group": True, "faults.rebalances": 0}
    assert "ExpireGroup" not in names() and "Rebalance" in names()
    assert "ExpireGroup" not in names(**simple) and "Rebalance" not in names(**simple)
    assert "ExpireGroup" in names(**simple, **{"faults.group_expiries": 1})
    for settings, message in [(simple | {"faults.rebalances": 1}, "has no rebalances"),
                              ({"faults.group_expiries": 1}, "needs workload.simple_group"),
                              (simple | {"workload.consume_transform_produce": False},
                               "needs workload.consume_transform_produce")]:
        with pytest.raises(ConfigError, match=message):
            kafka_params(registry.load(resolve_config_path("ctp"), overrides=settings))


def test_a_group_never_deleted_and_an_unspent_expiry_budget_leave_traces_as_they_were():
    """Group.deleted and Budgets.group_expiries are written only when set (codec.to_itf:
    ``_only_if_set``), so the traces of configurations without them keep their bytes."""
    from kafka_mc.model.codec import to_itf
    from kafka_mc.model.kafka.faults import Budgets
    from kafka_mc.model.kafka.world import Group
    assert to_itf(Group()) == to_itf(Group(0, 0)) and "deleted" not in str(to_itf(Group()))
    assert "deleted" in str(to_itf(Group(deleted=True)))
    assert "group_expiries" not in str(to_itf(Budgets(producer_crashes=1, total=1)))
    assert "group_expiries" in str(to_itf(Budgets(group_expiries=1, total=1)))
