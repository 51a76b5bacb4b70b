"""The group coordinator of consume-transform-produce: transactional offset commits, OffsetFetch
and rebalances; a simple group and its expiry (KAFKA-19163).

Follows ``GroupCoordinator.handleTxnCommitOffsets`` (the generation check of KIP-447, 2.5+, then
``GroupMetadataManager.storeOffsets``: a transactional batch appended to ``__consumer_offsets``
with origin COORDINATOR, epoch-only validation, verified with the transaction coordinator like a
produce from 3.6 / TV2), ``prepareTxnOffsetCommit`` / ``completePendingTxnOffsetCommit`` and
``handleFetchOffsets`` (``requireStable``, KIP-447): the Scala coordinator, Kafka's default up to
3.9. From 4.0 the default is the Java one of KIP-848 (``group-coordinator`` module;
``group.coordinator.new.enable`` defaults to true, the Scala one is deleted in 4.1, KAFKA-18329),
whose ``OffsetMetadataManager`` keeps the same rules: ``replay(recordOffset, producerId, key, value)``
puts a transactional offset commit in ``pendingTransactionalOffsets``, keyed by producer id (a
later commit of the same transaction and partition replaces the earlier one: ``Offsets.put``), and
in ``openTransactions`` (group, topic, partition -> producer ids); ``replayEndTransactionMarker``
removes the producer id's pending offsets and, on COMMIT, moves each into ``offsets`` only if its
``recordOffset`` is greater than the committed one's (otherwise "Skipped the materialization"),
on ABORT drops them; ``fetchOffsets`` with ``requireStable`` answers UNSTABLE_OFFSET_COMMIT while
``openTransactions`` holds the partition (read from the 4.4 branch; the rules are the same on
4.0 .. 4.4).

The ``__consumer_offsets`` partition is ``w.partitions[K.partitions]`` (after the data partitions);
the group coordinator leads it, TxnOffsetCommit appends to it through the partition leader's
checks (``kafka_mc.model.kafka.partition``) and the transaction coordinator's markers reach it like any other
partition. What the group coordinator holds follows from that log: a batch whose transaction has
no marker yet is a *pending* transactional offset commit, a committed one is materialised (the
latest by append offset wins, as ``completePendingTxnOffsetCommit`` and
``replayEndTransactionMarker`` compare them), an aborted one is dropped. So the model keeps no
second copy that could disagree with the log: ``committed_offset`` replays the log as
``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker`` do.

Abstractions: one group and one input partition, whose records are all committed and never
change (the application's consumer reads offset ``position`` and transforms it); JoinGroup /
SyncGroup are folded into ``OffsetFetch`` (a member whose group moved to a new generation rejoins
before it fetches); OffsetFetch is atomic (request and answer in one step, like ``Fetch``) and,
with ``requireStable``, a fetch answered UNSTABLE_OFFSET_COMMIT is retried until it is not (so it
is enabled only when no offset commit is pending); a rebalance (a fault, budgeted) moves the input
partition to the next transactional.id's application and bumps the generation; the group
coordinator does not fail over. Every offset commit is transactional (no OffsetCommit, whose
replay puts the offset in ``offsets`` whatever its record offset), and offsets do not expire (no
``offsets.retention.minutes`` for a committed offset).

A simple group (``workload.simple_group``, off by default): the applications ``assign()`` the
input partition (the group's ``owner``, transactional.id 0's, never moves: no JoinGroup, no
rebalance), fetch its committed offset without joining and commit with
``sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(groupId))``: generation -1, which
``ClassicGroup.validateOffsetCommit`` accepts while the group is Empty (always, it has no
members; the Scala ``GroupCoordinator.doTxnCommitOffsets`` the same: ``generationId < 0 &&
group.is(Empty)``). Its group can expire (the fault ``group_expiries``, budgeted:
``GroupCoordinatorShard.cleanupGroupMetadata``, every ``offsets.retention.check.interval.ms``,
runs ``OffsetMetadataManager.cleanupExpiredOffsets`` and, when that returns true,
``GroupMetadataManager.maybeDeleteGroup``, which writes the tombstone of an empty group): only
while no offset is materialised (the model does not expire a committed offset, which loses it by
configuration, not by a bug) and none is pending, unless the flag
``group_expiry_ignores_pending_offsets`` is set (KAFKA-19163, 4.0.0: ``cleanupExpiredOffsets``
returned true for a group with no entry in ``offsets`` without looking at ``openTransactions``;
the Scala coordinator's ``!group.hasOffsets`` counts ``pendingTransactionalOffsetCommits``). The
deleted group (``Group.deleted``) keeps its offsets partition's log, so a COMMIT marker still
materialises a pending offset commit (``replayEndTransactionMarker`` reads
``pendingTransactionalOffsets``, keyed by producer id, not by group), but OffsetFetch of a group
that does not exist answers INVALID_OFFSET (``fetchOffsets``: ``validateOffsetFetch`` throws
``GroupIdNotFoundException``, ``failAllPartitions``; the Scala ``handleFetchOffsets`` finds no
group either), and the application starts from ``auto.offset.reset``, here earliest (position
0). An offset commit appended for the group creates it again
(``validateTransactionalOffsetCommit`` / ``OffsetMetadataManager.replay``:
``getOrMaybeCreateClassicGroup``), after which its offsets are found. The group is simple, so no
JoinGroup recreates it.
"""
from __future__ import annotations

from kafka_mc.model.kafka import partition
from kafka_mc.model.kafka.producer import running, with_producer
from kafka_mc.model.kafka.world import ClientState as C, Control, Partition, World, budget, spend


def offsets_partition(K) -> int:
    return K.partitions


def committed_offset(part: Partition) -> int:
    """The materialised offset: the committed offset commit with the greatest append offset
    (0 when none: the application starts at the beginning of the input).

    The log replayed as ``OffsetMetadataManager`` does (4.0+; the Scala ``GroupMetadata`` the
    same way): a data batch is ``replay(recordOffset, producerId, ...)`` of a transactional
    offset commit, kept pending under its producer id (``pendingTransactionalOffsets``; of two
    in one transaction the later append replaces the earlier, which the max below picks too,
    append offsets growing); a COMMIT marker is ``replayEndTransactionMarker(producerId,
    COMMIT)``: the producer id's pending offset is materialised only if its record offset is
    greater than the materialised one's (``offsetAndMetadata.recordOffset >
    existingOffsetAndMetadata.recordOffset``), which is the max of (append offset, offset)
    pairs; an ABORT marker drops them. So a commit marker written later for an offset commit
    appended earlier does not win (OffsetMetadataManagerTest
    .testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset; tests/model/
    test_group_coordinator.py)."""
    pending: dict[int, list] = {}
    best = (-1, 0)
    for offset, b in enumerate(part.log):
        if b.control == Control.DATA:
            pending.setdefault(b.producer_id, []).append((offset, b.record.n))
        elif b.control == Control.COMMIT:
            best = max([best] + pending.pop(b.producer_id, []))   # (Cython: no * in a list)
        else:
            pending.pop(b.producer_id, None)
    return best[1]


def has_materialised(part: Partition) -> bool:
    """An offset commit is materialised (the group has an entry in ``offsets``): a COMMIT marker
    closed a transaction with an offset commit in the log."""
    pending: set[int] = set()
    for b in part.log:
        if b.control == Control.DATA:
            pending.add(b.producer_id)
        elif b.control == Control.COMMIT and b.producer_id in pending:
            return True
        else:
            pending.discard(b.producer_id)
    return False


def has_pending(part: Partition) -> bool:
    """A transactional offset commit awaits its marker (``pendingTransactionalOffsetCommits``;
    from 4.0 ``OffsetMetadataManager.hasPendingTransactionalOffsets``: ``openTransactions``
    holds the partition). One group and one input partition, so any open transaction on
    ``__consumer_offsets`` is one of this group's."""
    return any(e.current_txn_first_offset >= 0 for e in part.producers)


def offset_fetch_enabled(K, w: World):
    """A member that owns the input partition and has no position (or whose group moved on)
    fetches the committed offset; with requireStable only once nothing is pending. A simple
    group's application (``assign()``) has no generation: it fetches when it has no position."""
    if not K.ctp or K.features.stable_offset_fetch and has_pending(w.partitions[K.partitions]):
        return []
    g = w.group
    if K.simple_group:
        return [(i,) for i, p in running(K, w)
                if p.tid == g.owner and p.state == C.READY and p.position == -1]
    return [(i,) for i, p in running(K, w)
            if p.tid == g.owner and p.state == C.READY
            and (p.position == -1 or p.generation != g.generation)]


def offset_fetch(K, w: World, i: int) -> World:
    """KafkaConsumer.committed / the position after a rebalance: OffsetFetch
    (GroupCoordinator.handleFetchOffsets; from 4.0 OffsetMetadataManager.fetchOffsets). A simple
    group's member stays at generation -1, and a deleted group answers INVALID_OFFSET
    (``validateOffsetFetch``: GroupIdNotFoundException), so the application starts at
    ``auto.offset.reset`` (earliest: 0)."""
    if K.simple_group:
        return with_producer(w, i, position=0 if w.group.deleted
                             else committed_offset(w.partitions[K.partitions]))
    return with_producer(w, i, generation=w.group.generation,
                 position=committed_offset(w.partitions[K.partitions]))


def handle_txn_offset_commit(K, w: World, m) -> World:
    """GroupCoordinator.handleTxnCommitOffsets: verification with the transaction coordinator
    first (3.6+ / TV2), then, in one step, the member's generation (KIP-447) and the append that
    makes the offsets pending -- the leader's code path (``partition.handle_produce``)."""
    return partition.handle_produce(K, w, m)


def rebalance_enabled(K, w: World):
    return [()] if K.ctp and budget(w, "rebalances") else []


def rebalance(K, w: World) -> World:
    """A rebalance (a member left or timed out): the input partition moves to the next
    transactional.id's application and the generation is bumped. Members learn of it when they
    next poll (``OffsetFetch``) or when the group coordinator rejects their generation."""
    g = w.group
    return spend(w._replace(group=g._replace(generation=g.generation + 1,
                                             owner=(g.owner + 1) % K.tids)), "rebalances")


def expire_group_enabled(K, w: World):
    """GroupCoordinatorShard.cleanupGroupMetadata (every offsets.retention.check.interval.ms):
    ``OffsetMetadataManager.cleanupExpiredOffsets`` returns true for the simple group (always
    empty) when it has no materialised offset and, but with KAFKA-19163
    (``group_expiry_ignores_pending_offsets``, 4.0.0), none pending; then
    ``GroupMetadataManager.maybeDeleteGroup`` deletes it. Budgeted: how long the group stays
    empty is the model's to choose."""
    if not K.simple_group or w.group.deleted or not budget(w, "group_expiries"):
        return []
    part = w.partitions[K.partitions]
    if has_materialised(part):
        return []
    if not K.features.group_expiry_ignores_pending_offsets and has_pending(part):
        return []
    return [()]


def expire_group(K, w: World) -> World:
    """GroupMetadataManager.maybeDeleteGroup: the group's tombstone (createGroupTombstoneRecords);
    its pending offsets stay in ``pendingTransactionalOffsets`` (the log here)."""
    return spend(w._replace(group=w.group._replace(deleted=True)), "group_expiries")
