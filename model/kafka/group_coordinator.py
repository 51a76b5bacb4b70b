"""The group coordinator of consume-transform-produce: transactional offset commits, OffsetFetch
and rebalances.

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
replay puts the offset in ``offsets`` whatever its record offset), and neither offsets nor the
group expire (no ``offsets.retention.minutes``, no ``GroupCoordinatorShard.cleanupGroupMetadata``,
no group deletion): so KAFKA-19163 (4.0.0: an empty group whose only offsets were pending
transactional ones was deleted, ``OffsetMetadataManager.cleanupExpiredOffsets``) is not
modelled; docs/findings.md says why and what it would take.
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


def has_pending(part: Partition) -> bool:
    """A transactional offset commit awaits its marker (``pendingTransactionalOffsetCommits``;
    from 4.0 ``OffsetMetadataManager.hasPendingTransactionalOffsets``: ``openTransactions``
    holds the partition). One group and one input partition, so any open transaction on
    ``__consumer_offsets`` is one of this group's."""
    return any(e.current_txn_first_offset >= 0 for e in part.producers)


def offset_fetch_enabled(K, w: World):
    """A member that owns the input partition and has no position (or whose group moved on)
    fetches the committed offset; with requireStable only once nothing is pending."""
    if not K.ctp or K.features.stable_offset_fetch and has_pending(w.partitions[K.partitions]):
        return []
    g = w.group
    return [(i,) for i, p in running(K, w)
            if p.tid == g.owner and p.state == C.READY
            and (p.position == -1 or p.generation != g.generation)]


def offset_fetch(K, w: World, i: int) -> World:
    """KafkaConsumer.committed / the position after a rebalance: OffsetFetch
    (GroupCoordinator.handleFetchOffsets)."""
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
