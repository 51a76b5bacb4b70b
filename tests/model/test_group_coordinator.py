"""The group coordinator's materialised offset against Kafka's own rules: ``committed_offset``
replays the ``__consumer_offsets`` log, and ``OffsetMetadataManager`` (4.0+, read on the 4.4
branch) replays the same records into ``pendingTransactionalOffsets`` (keyed by producer id) and
``offsets``. ``kafka_replay`` below transliterates ``OffsetMetadataManager.replay`` (a
transactional offset commit: ``pendingTransactionalOffsets.computeIfAbsent(producerId).put``)
and ``replayEndTransactionMarker`` (COMMIT: materialise a pending offset only if its record offset
is greater than the committed one's; ABORT: drop it) for the model's one group and partition, and
every small log is checked against it."""
import itertools

from kafka_mc.model.kafka.group_coordinator import committed_offset, has_pending
from kafka_mc.model.kafka.world import (Batch, Control, Partition, ProducerStateEntry, RecordId,
                                        NO_RECORD)


def commit(pid: int, n: int) -> Batch:
    """A transactional offset commit of offset ``n`` by producer id ``pid``."""
    return Batch(pid, 0, 0, Control.DATA, -1, RecordId(0, 0, 0, n))


def marker(pid: int, control: Control) -> Batch:
    return Batch(pid, 0, -1, control, 0, NO_RECORD)


def kafka_replay(log) -> int:
    """OffsetMetadataManager.replay / replayEndTransactionMarker for one group and partition:
    the committed offset (0 when none, as the model's application starts at the beginning)."""
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
    return 0 if committed is None else committed[1]


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
            checked += 1
    assert checked == sum(8 ** k for k in range(6)) == 37449


def test_has_pending_is_an_open_transaction_on_the_offsets_partition():
    """hasPendingTransactionalOffsets: openTransactions holds the partition while a producer
    id's transaction is open there (ProducerStateEntry.currentTxnFirstOffset)."""
    assert not has_pending(Partition())
    idle = ProducerStateEntry(5, 0, 0, 0, -1, -1)
    assert not has_pending(Partition(producers=(idle,)))
    assert has_pending(Partition(producers=(idle._replace(current_txn_first_offset=0),)))
