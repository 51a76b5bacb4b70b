"""Kafka protocol versions, declared by what each version changed (docs/design.md section 3).

A flag is one Kafka change (a KIP or a JIRA fix), off in KIP-98 as first shipped. A preset is the
previous preset plus the flags its version turned on, and says which Kafka releases it stands
for. ``protocol.version`` names a preset; each flag can also be set on its own in ``[protocol]``
(a flag given explicitly overrides the preset).

A new Kafka change: a field below (default: the old behaviour), and either a new preset built
from the last one by keyword or the flag added to the preset of the version that shipped it.
"""
from __future__ import annotations

from typing import NamedTuple


class Features(NamedTuple):
    bump_epoch_on_timeout: bool = False    # KAFKA-6119 (1.0): timeout abort fences via PrepareEpochFence
    producer_epoch_bump: bool = False      # KIP-360 (2.5): InitProducerId(pid, epoch); lastProducerEpoch
    unknown_producer_any_sequence: bool = False  # KIP-360 / KAFKA-8710 (2.5): a leader with no
                                           # state for a producer id accepts any first sequence
    stable_offset_fetch: bool = False      # KIP-447 (2.5): OffsetFetch(requireStable), generation fencing
    strict_end_txn_epoch: bool = False     # KAFKA-9600 (2.6): EndTxn epoch must equal the current one
    producer_fenced_error: bool = False    # KAFKA-9911 (2.7): the coordinator answers a fenced epoch
                                           # with PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before)
    partition_verification: bool = False   # KIP-890 part 1 (3.6): leaders verify before a txn's first write
    verification_guard: bool = False       # KAFKA-14884 (3.6): a verification guard cleared by markers
    verification_network_error_converted: bool = False  # KAFKA-16386 (3.7.1, 3.8.0): a
                                           # verification failed with NETWORK_EXCEPTION fails the
                                           # produce with NOT_ENOUGH_REPLICAS (3.6.x: as is);
                                           # found by conformance on real 3.6.2
    coordinator_bounce_keeps_epoch: bool = False  # KRaft (on the presets from kafka-2.7;
                                           # conformance #15 and #19): a killed
                                           # broker that restarts and re-registers before the
                                           # controller fenced it keeps its partitions' leadership
                                           # at the same leader epoch (ClusterControlManager
                                           # .registerBroker accepts a new incarnation once the
                                           # old session is invalid and writes no
                                           # PartitionChangeRecord; 3.8/3.9's
                                           # ReplicationControlManager.handleBrokerUncleanShutdown
                                           # returns unless the metadata version supports ELR,
                                           # which no production one does), so
                                           # TransactionCoordinator.onElection reloads
                                           # __transaction_state at the same coordinator epoch:
                                           # the fault BounceCoordinator. 4.0 (KAFKA-18106
                                           # 0ff55c316a, KAFKA-18635 226532a966) moves a new
                                           # incarnation's leadership away (handleBrokerShutdown:
                                           # "as if the broker was fenced"), bumping the epoch,
                                           # but on one node the restarted broker leads at the
                                           # old epoch until the controller fences the old
                                           # incarnation's session (ClusterControlManager
                                           # .activate gave it a fresh one): on 4.x a bounce,
                                           # then a failover (the time between abstracted)
    transaction_version: int = 1           # 1, or 2 = KIP-890 part 2 (4.0): epoch bump at every EndTxn
    verification_retry_at_leader: bool = False  # KAFKA-18654 (4.1): a TV2 leader retries
                                           # a produce's verification answered
                                           # CONCURRENT_TRANSACTIONS itself
    marker_keeps_tv2_guard: bool = False   # KAFKA-18654 [1/2] (4.0.0): a TV2 verification
                                           # guard is kept by a marker of the guard's own epoch
                                           # (UnifiedLog.updateProducers:
                                           # isV2NextTransactionStarted)
    strict_marker_epoch: bool = False      # KIP-1228 (4.2): TV2 leaders require marker epoch > stored
    idempotent_marker_retry: bool = False  # KAFKA-19999 (4.2.0): an equal-epoch TV2 marker with
                                           # no open txn passes the epoch check and is written
                                           # to the log again (a duplicate marker)
    early_epoch_rejection: bool = False    # KAFKA-18042 (4.1.0): a leader rejects a lower epoch
                                           # before verifying (maybeStartTransactionVerification)
    tv2_first_sequence: bool = False       # KAFKA-18202 (4.1.0): a TV2 first batch from a producer
                                           # id with no state must have sequence 0
                                           # (ProducerAppendInfo.checkSequence); before, a batch
                                           # whose earlier one was lost is written first (with
                                           # workload.max_in_flight > 1: batches_in_sequence)
    epoch_before_guard: bool = False       # KAFKA-19690 (3.9.2, 4.0.2, 4.1.1, 4.2.0): a batch
                                           # whose guard is gone is answered INVALID_PRODUCER_EPOCH, not
                                           # INVALID_TXN_STATE, when its epoch is stale
    fenced_commit_after_abort: bool = False  # KAFKA-20785 (trunk, 2026-08): a TV2 commit at the
                                           # retry epoch meeting CompleteAbort is PRODUCER_FENCED
    rotate_on_fence: bool = False          # KAFKA-20090 #21506 (4.3.0): TV2 endTransaction takes a
                                           # nextProducerId for an exhausted epoch on the fence
                                           # path too
    last_epoch_recovery: bool = False      # KAFKA-20090 #21469 (4.3.0): no bump past the last
                                           # epoch on a fence or a TV2 abort; a TV2 leader accepts
                                           # a marker at the last epoch over an open transaction
                                           # (a clause of KAFKA-19999's retry: with
                                           # idempotent_marker_retry only)
    persist_producer_ids: bool = False     # KAFKA-20310 (4.3.0): the transaction log keeps
                                           # prevProducerId and nextProducerId across a failover
    markers_skip_leaderless_partition: bool = False  # KAFKA-17573 (4.3.0, commit 7d13e8b70d):
                                           # KRaftMetadataCache.getPartitionLeaderEndpoint
                                           # answers Optional.empty for a partition whose leader
                                           # is NO_LEADER (Node.noNode before), so the
                                           # coordinator drops it from the transaction and
                                           # completes it with no marker written
                                           # (TransactionMarkerChannelManager
                                           # .addTxnMarkersToBrokerQueue): a hanging
                                           # transaction; KAFKA-20734 (apache/kafka#22680,
                                           # open) restores noNode; found on real 4.4.0
    end_txn_epoch_first: bool = False      # the 4.0 branch before KAFKA-18464 (Jan 2025, never
                                           # released): TV2 EndTxn checks the epoch before the
                                           # pending state, so an empty abort right after a commit
                                           # is fenced; no preset
    fence_double_bump: bool = False        # KAFKA-19367, only in 4.0.0 (fixed in 4.0.1): TV2's
                                           # fence bumps in memory and prepareAbortOrCommit bumps
                                           # again (epoch + 2, lastProducerEpoch + 1); no preset
    abortable_error_classification: bool = False  # KIP-1050 / KAFKA-19176 (4.1.0): a batch
                                           # failed with INVALID_TXN_STATE (or a retriable error)
                                           # surfaces as TransactionAbortableException; no rule
                                           # reads it (the client's state is the same), the
                                           # availability claim does
    forget_last_producer_epoch: bool = False  # what every Kafka since KIP-360 does, on no preset
                                           # yet: TransactionLog.valueToBytes never writes
                                           # lastProducerEpoch and readTxnRecord reads it back as
                                           # NO_PRODUCER_EPOCH, so a failover forgets it (a KIP-360
                                           # retry of a completed bump is then fenced); off, the
                                           # model keeps it (the presets' pinned counts)
    two_phase_commit: bool = False         # KIP-939's coordinator side, KAFKA-18953 #19193
                                           # (4.1.0): InitProducerId with enable2Pc sets
                                           # txnTimeoutMs to Int.MaxValue and
                                           # abortTimedOutTransactions skips such a transaction
                                           # (TransactionStateManager.timedOutTransactions:
                                           # isDistributedTwoPhaseCommitTxn); keepPreparedTxn is
                                           # answered UNSUPPORTED_VERSION on every branch and
                                           # trunk ("hasn't been implemented yet")
    prepare_transaction_api: bool = False  # KIP-939's client, KAFKA-19082 [1/4]..[4/4] and
                                           # KAFKA-19272 (public on 4.4 and trunk; removed again
                                           # before release from 4.1, 4.2, 4.3: KAFKA-19414
                                           # #19985, #21159, #21902): KafkaProducer.
                                           # prepareTransaction, completeTransaction(
                                           # PreparedTxnState), initTransactions(keepPreparedTxn);
                                           # only workload.two_phase_commit uses it
    group_expiry_ignores_pending_offsets: bool = False  # KAFKA-19163, 4.0.0 only (the Java group
                                           # coordinator, the default from 4.0; fixed in 4.0.1 by
                                           # 48f75616d7, 4.1.0 by 1293658cca): OffsetMetadataManager
                                           # .cleanupExpiredOffsets returns true for a group with
                                           # no committed offset without looking at
                                           # openTransactions, so GroupCoordinatorShard
                                           # .cleanupGroupMetadata deletes an empty group whose
                                           # only offsets are pending transactional ones (the
                                           # Scala coordinator's hasOffsets counts them); only
                                           # the fault group_expiries reads it


FLAGS = Features._fields
PRESETS: dict[str, tuple[Features, str]] = {}


def _preset(name: str, base: str | None, doc: str, **changes) -> None:
    """``name = base + changes``: the flags the version turned on."""
    flags = PRESETS[base][0] if base else Features()
    for flag, value in changes.items():
        if getattr(flags, flag) == value:
            raise ValueError(f"preset {name}: {flag} is already {value} in {base}")
    PRESETS[name] = (flags._replace(**changes), doc)


_preset("kafka-0.11", None,
        "KIP-98 as first shipped: a timed-out transaction is aborted without an epoch bump, so the "
        "old producer is not fenced (KAFKA-6119); TxnOffsetCommit fenced by epoch only; no "
        "partition verification.")
_preset("kafka-1.0", "kafka-0.11",
        "1.0 .. 2.4 (the seed era, Kafka 2.0): timeout and InitProducerId-while-Ongoing fence with "
        "PrepareEpochFence (epoch + 1); EndTxn accepts an epoch greater than the coordinator's; "
        "late produce after a marker can open a hanging transaction.",
        bump_epoch_on_timeout=True)
_preset("kafka-2.5", "kafka-1.0",
        "2.5: KIP-360 producer-initiated epoch bump (lastProducerEpoch) and a leader accepting any "
        "first sequence from a producer id it has no state for (UNKNOWN_PRODUCER_ID before), "
        "KIP-447 OffsetFetch requireStable and generation-fenced TxnOffsetCommit.",
        producer_epoch_bump=True, unknown_producer_any_sequence=True, stable_offset_fetch=True)
_preset("kafka-2.6", "kafka-2.5",
        "2.6: EndTxn from a client must carry exactly the current epoch (KAFKA-9600); a fenced "
        "epoch is still answered with INVALID_PRODUCER_EPOCH.",
        strict_end_txn_epoch=True)
_preset("kafka-2.7", "kafka-2.6",
        "2.7 .. 3.5: the coordinator answers a fenced epoch with PRODUCER_FENCED (KAFKA-9911). "
        "From here on a transaction coordinator's broker killed and restarted "
        "before the controller fenced it may come back leading __transaction_state at the same "
        "leader epoch, hence the same coordinator epoch: the fault BounceCoordinator "
        "(coordinator_bounce_keeps_epoch; seen on real 3.6.2, conformance #15). KRaft (3.3 .. "
        "3.9): ClusterControlManager.registerBroker takes the new incarnation and writes no "
        "PartitionChangeRecord. (The ZooKeeper controller of 2.7 .. 3.5 bumps the leader epoch "
        "of a broker it sees bounce, KafkaController.processBrokerChange: the flag is for the "
        "KRaft releases, 3.5.2 among them.)",
        producer_fenced_error=True, coordinator_bounce_keeps_epoch=True)
_preset("kafka-3.6", "kafka-2.7",
        "3.6.0 .. 3.7.0: KIP-890 part 1, leaders verify with the coordinator before a "
        "transaction's first write, with a verification guard cleared by markers; a verification "
        "answered with a retriable coordinator error fails the produce with NOT_ENOUGH_REPLICAS "
        "and the client resends it; one that failed with NETWORK_EXCEPTION (its request timed "
        "out or its connection closed) fails the produce with NETWORK_EXCEPTION, which the "
        "client retries too (ReplicaManager.appendRecords' unverifiedResults; Sender.canRetry: a "
        "RetriableException).",
        partition_verification=True, verification_guard=True)
_preset("kafka-3.8", "kafka-3.6",
        "3.7.1, 3.8 .. 3.9: a verification failed with NETWORK_EXCEPTION fails the produce with "
        "NOT_ENOUGH_REPLICAS as the coordinator's retriable errors do (KAFKA-16386, "
        "ReplicaManager.appendRecords: \"Convert NETWORK_EXCEPTIONs from KIP-890 transaction "
        "verification\"). Real 3.6.2 answered NETWORK_EXCEPTION where the model said "
        "NOT_ENOUGH_REPLICAS: kafka-mc real conform found it.",
        verification_network_error_converted=True)
_preset("kafka-3.9.2", "kafka-3.8",
        "3.9.2 .. 3.9.x: KAFKA-19690 backported to 3.9 (4dd3512665, September 2025, before 3.9.2): "
        "a batch whose verification guard a marker removed, and whose epoch is below the "
        "leader's, is answered INVALID_PRODUCER_EPOCH instead of INVALID_TXN_STATE "
        "(UnifiedLog.analyzeAndValidateProducerState checks the epoch first). Real 3.9.2 "
        "answered a zombie's verified batch INVALID_PRODUCER_EPOCH where kafka-3.8 said "
        "INVALID_TXN_STATE: a directed run of kafka-mc real explore found it (conformance #20).",
        epoch_before_guard=True)
_preset("kafka-4.0", "kafka-3.8",
        "The 4.0 branch with transaction.version=2 before KAFKA-18654 (Feb 2025; no release "
        "ships exactly this, 4.0.0 has the fix: see kafka-4.1): every EndTxn bumps the epoch, "
        "partitions are added implicitly by the leader, markers carry the bumped epoch; "
        "leaders accept a marker whose epoch equals the stored one. The group coordinator (the "
        "Java one, the default from 4.0) deletes an empty group whose only offsets are pending "
        "transactional ones (KAFKA-19163, OffsetMetadataManager.cleanupExpiredOffsets: "
        "group_expiry_ignores_pending_offsets, on until kafka-4.0.2). "
        "A broker restarted uncleanly loses its partitions' leadership when it registers again "
        "(KAFKA-18106, KAFKA-18635: ReplicationControlManager.handleBrokerShutdown), but on one "
        "node the restarted broker first leads again at the old leader epoch: the restarted "
        "controller gives the old incarnation a fresh session (ClusterControlManager.activate), "
        "the broker's metadata publishers replay the log where it still leads, and the "
        "coordinator reloads at the same coordinator epoch (a bounce, "
        "coordinator_bounce_keeps_epoch, still on); broker.session.timeout.ms later the "
        "controller fences the old incarnation (maybeFenceOneStaleBroker) and the coordinator "
        "reloads at a new epoch (a failover; the time between is abstracted: the model's budget "
        "allows a bounce followed by a failover, conformance #19).",
        transaction_version=2, group_expiry_ignores_pending_offsets=True)
# KAFKA-19163 (4.0.0 only; fixed in 4.0.1 by 48f75616d7 and in 4.1.0 by 1293658cca) is the flag
# group_expiry_ignores_pending_offsets, on kafka-4.0 and kafka-4.1 (which stand for 4.0.0) and off
# again from kafka-4.0.2 (and kafka-4.2, on the 4.1 line): OffsetMetadataManager
# .cleanupExpiredOffsets let GroupCoordinatorShard.cleanupGroupMetadata delete an empty group whose
# only offsets were pending transactional ones. 3.7 .. 3.9 had it only with the new coordinator
# enabled (internal); their default, the Scala GroupMetadataManager.cleanupGroupMetadata, deletes
# a group only if !group.hasOffsets, which counts pendingTransactionalOffsetCommits: kafka-3.8 and
# before are without it. It harms a simple group only (workload.simple_group: assign(), generation
# -1), whose fault group_expiries deletes the group; docs/findings.md ("KAFKA-19163").
_preset("kafka-4.1", "kafka-4.0",
        "4.0.0 .. 4.0.1 (the name is the branch KAFKA-18654 was first written for; it was "
        "backported to 4.0 before 4.0.0): a TV2 leader retries a produce's verification "
        "answered CONCURRENT_TRANSACTIONS itself (KAFKA-18654) instead of failing the produce. "
        "4.0.0 also fenced an Ongoing transaction at epoch + 2 (KAFKA-19367, fixed in 4.0.1): "
        "the flag fence_double_bump, on no preset (every TV2 preset fences at epoch + 1); and "
        "deleted an empty group whose only offsets were pending transactional ones (KAFKA-19163, "
        "fixed in 4.0.1: group_expiry_ignores_pending_offsets, on here). KAFKA-18654's first "
        "part (d119864f16, in 4.0.0 too) keeps a TV2 verification guard across a marker of the "
        "guard's own epoch, the marker that ends the transaction before (it carries the bumped "
        "epoch the next transaction's produce was verified with): marker_keeps_tv2_guard "
        "(UnifiedLog.updateProducers).",
        verification_retry_at_leader=True, marker_keeps_tv2_guard=True)
_preset("kafka-4.0.2", "kafka-4.1",
        "4.0.2 .. 4.0.x: a batch whose verification guard a marker removed, and whose epoch is "
        "below the leader's, is answered INVALID_PRODUCER_EPOCH (abortable) instead of "
        "INVALID_TXN_STATE (fatal to Kafka Streams) (KAFKA-19690, UnifiedLog.append); an empty "
        "group with pending transactional offsets is no longer deleted (KAFKA-19163, 4.0.1: "
        "cleanupExpiredOffsets returns !openTransactions.contains(groupId)).",
        epoch_before_guard=True, group_expiry_ignores_pending_offsets=False)
_preset("kafka-4.1.1", "kafka-4.0.2",
        "4.1.1 .. 4.1.x (4.1.0 is this without KAFKA-19690): a leader rejects a lower epoch "
        "before starting a verification (KAFKA-18042, UnifiedLog.maybeStartTransactionVerification) "
        "and a TV2 first batch with no producer state must have sequence 0 (KAFKA-18202, "
        "ProducerAppendInfo.checkSequence). KIP-1050's client error classification (KAFKA-19176: "
        "retriable and INVALID_TXN_STATE batch errors surface as TransactionAbortableException; "
        "KAFKA-19250: an abort answered TRANSACTION_ABORTABLE is fatal) changes the exception "
        "the application sees, not TransactionManager's state: the model's client already makes "
        "these batch errors abortable, and no coordinator answers EndTxn TRANSACTION_ABORTABLE "
        "(the flag abortable_error_classification says what the application sees, for the "
        "availability claim). KIP-939's coordinator side (KAFKA-18953, 4.1.0): a transaction "
        "whose InitProducerId asked enable2Pc has txnTimeoutMs Int.MaxValue and is never timed "
        "out (TransactionStateManager.timedOutTransactions); keepPreparedTxn is answered "
        "UNSUPPORTED_VERSION (not implemented on any branch).",
        early_epoch_rejection=True, tv2_first_sequence=True, abortable_error_classification=True,
        two_phase_commit=True)
_preset("kafka-4.2", "kafka-4.1",
        "The 4.2 branch between KIP-1228 (Nov 2025) and KAFKA-19999 (Dec 2025), never "
        "released: TV2 leaders require a marker epoch strictly greater than the stored epoch, "
        "so a marker retry is rejected (kept to show KAFKA-19999's livelock); with KAFKA-19163's "
        "fix (4.1.0).",
        strict_marker_epoch=True, group_expiry_ignores_pending_offsets=False)
_preset("kafka-4.2.0", "kafka-4.1.1",
        "4.2.0 .. 4.2.x: KIP-1228, TV2 leaders require a marker epoch strictly greater than the "
        "stored epoch, with KAFKA-19999's equal-epoch retry with no open transaction accepted "
        "and written to the log again, a second marker of the same epoch "
        "(ProducerAppendInfo.checkProducerEpoch: 'allowing duplicate marker write'; both "
        "shipped in 4.2.0).",
        strict_marker_epoch=True, idempotent_marker_retry=True)
_preset("kafka-4.3", "kafka-4.2.0",
        "4.3.0 .. 4.4.x, at the exhausted epoch (cluster.last_epoch stands for Short.MaxValue): "
        "a TV2 abort that fences an Ongoing transaction (timeout, InitProducerId) takes a "
        "nextProducerId too, so the client's late EndTxn retry is answered with the rotated id "
        "(KAFKA-20090 #21506: before, the id stayed at the last epoch, the client carried on at "
        "it, and its next EndTxn overflowed and left the transaction Ongoing for good); a fence "
        "or abort at the last epoch no longer bumps past it and a TV2 leader accepts a marker at "
        "the last epoch over an open transaction (KAFKA-20090 #21469); the transaction log keeps the "
        "previous and next producer ids, so a failover in the middle of a rotation no longer "
        "forgets it (KAFKA-20310, TransactionLog.valueToBytes). Not modelled: KIP-1251's "
        "member-epoch rule for TxnOffsetCommit (the model's group has generations, no member "
        "epochs); 4.4's KIP-1319 (TxnOffsetCommit v6 with topic ids: no topic ids here). "
        "And KAFKA-17573 (Move KRaftMetadataCache to the metadata module, Dec 2025): the "
        "metadata cache answers Optional.empty, not Node.noNode, for the leader endpoint of a "
        "partition without a leader (its broker down and fenced), which the coordinator's "
        "TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue takes for a deleted "
        "partition: it drops the partition from the transaction and writes CompleteCommit / "
        "CompleteAbort with no marker written, so the partition's transaction hangs and its LSO "
        "stays below the high watermark for good (KAFKA-20734; found on real 4.4.0).",
        rotate_on_fence=True, last_epoch_recovery=True, persist_producer_ids=True,
        markers_skip_leaderless_partition=True)
_preset("latest", "kafka-4.3",
        "Trunk (Aug 2026): every fix above, and KAFKA-20785: a TV2 commit at the retry epoch "
        "that meets CompleteAbort (the coordinator aborted the transaction on its own) is "
        "answered PRODUCER_FENCED, not INVALID_TXN_STATE. KIP-1319 (TxnOffsetCommit v6, 4.4: "
        "topic ids and their errors) is not modelled: the model has no topic ids. KIP-939's "
        "public client API (KAFKA-19082, KAFKA-19272: prepareTransaction, completeTransaction, "
        "initTransactions(keepPreparedTxn)), on trunk and the 4.4 branch (kafka-4.3 stands for "
        "4.4.x without it: set protocol.prepare_transaction_api for a 4.4 client), used by "
        "workload.two_phase_commit. Still with KAFKA-17573's leaderless-partition marker skip "
        "(markers_skip_leaderless_partition): its fix, KAFKA-20734 (apache/kafka#22680, \"Return "
        "noNode for known partitions without endpoints\"), is open upstream.",
        fenced_commit_after_abort=True, prepare_transaction_api=True)
DEFAULT_PRESET = "latest"

# The Kafka releases the real-Kafka harness runs, and the preset standing for each (the preset
# docs above say why; a release's fixes were found with ``git log --grep`` on its branch).
RELEASES = {
    "3.5.2": "kafka-2.7",     # 2.7 .. 3.5: no partition verification (KIP-890 is 3.6's)
    "3.6.2": "kafka-3.6",
    "3.9.2": "kafka-3.9.2",   # 3.7 .. 3.9 keep KIP-890 part 1 only (part 2 is 4.0's)
    "4.0.2": "kafka-4.0.2",
    "4.1.2": "kafka-4.1.1",
    "4.2.2": "kafka-4.2.0",
    "4.3.1": "kafka-4.3",
    "4.4.0": "kafka-4.3",     # 4.4's TxnOffsetCommit v6 (KIP-1319) is not modelled
}


def features(version: str, overrides: dict[str, object] | None = None) -> Features:
    """The preset's flags with explicit ``[protocol]`` flags applied."""
    base = PRESETS[version][0]
    return base._replace(**(overrides or {}))
