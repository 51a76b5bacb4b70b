"""The global state of the Kafka model and the value types its components share.

Every value is an immutable NamedTuple, IntEnum, int or frozenset (hash-stable, so the tuple hash
is the fingerprint, and readable in traces); "absent" is -1 or ``()``, never None. Names follow Kafka: ``TransactionState``,
``TransactionManager.State``, ``Errors``, ``producerId``/``producerEpoch``.

Ghost state (history, for invariants only, never read by a rule's guard): every record carries
its identity ``(tid, instance, txn, n)`` -- transactional.id, producer instance, the instance's
n-th transaction, n-th record -- and each producer records what ``commitTransaction`` /
``abortTransaction`` returned to the application (``Producer.outcomes``).
"""
from __future__ import annotations

from enum import IntEnum
from typing import Callable, NamedTuple

NO_PRODUCER_ID = -1
NO_EPOCH = -1
NO_OFFSET = -1


class TxnState(IntEnum):
    """Coordinator TransactionState (TransactionMetadata.scala / TransactionState.java)."""
    Empty = 0
    Ongoing = 1
    PrepareCommit = 2
    PrepareAbort = 3
    CompleteCommit = 4
    CompleteAbort = 5
    Dead = 6
    PrepareEpochFence = 7


class ClientState(IntEnum):
    """Producer TransactionManager.State."""
    UNINITIALIZED = 0
    INITIALIZING = 1
    READY = 2
    IN_TRANSACTION = 3
    COMMITTING_TRANSACTION = 4
    ABORTING_TRANSACTION = 5
    ABORTABLE_ERROR = 6
    FATAL_ERROR = 7
    PREPARED_TRANSACTION = 8   # KIP-939 (4.4, trunk): prepareTransaction(); numbered last so
                               # that the older states keep their values in traces


class Errors(IntEnum):
    """The error codes the model returns (org.apache.kafka.common.protocol.Errors)."""
    NONE = 0
    NOT_COORDINATOR = 1
    CONCURRENT_TRANSACTIONS = 2
    INVALID_PRODUCER_ID_MAPPING = 3
    INVALID_PRODUCER_EPOCH = 4
    PRODUCER_FENCED = 5
    INVALID_TXN_STATE = 6
    TRANSACTION_COORDINATOR_FENCED = 7
    OUT_OF_ORDER_SEQUENCE_NUMBER = 8
    DUPLICATE_SEQUENCE_NUMBER = 9
    UNKNOWN_PRODUCER_ID = 10
    ILLEGAL_GENERATION = 11
    NOT_ENOUGH_REPLICAS = 12         # a leader's answer for a verification that must be retried
    NETWORK_EXCEPTION = 13           # an inter-broker request timed out (AddPartitionsToTxnManager)
    COORDINATOR_LOAD_IN_PROGRESS = 14  # the group coordinator's for NETWORK_EXCEPTION
                                       # (maybeConvertOffsetCommitError)
    UNKNOWN_SERVER_ERROR = 15        # an IllegalStateException / IllegalArgumentException of the
                                     # coordinator (Errors.forException): an epoch past the last
    UNSUPPORTED_VERSION = 16         # InitProducerId with keepPreparedTxn (KIP-939): not
                                     # implemented by any coordinator (handleInitProducerId)


class Rpc(IntEnum):
    """The requests and responses of the model (kafka_mc.model.kafka.network defines their fields)."""
    InitProducerId = 0
    InitProducerIdResponse = 1
    AddPartitionsToTxn = 2
    AddPartitionsToTxnResponse = 3
    EndTxn = 4
    EndTxnResponse = 5
    Produce = 6
    ProduceResponse = 7
    WriteTxnMarkers = 8
    WriteTxnMarkersResponse = 9
    VerifyAddPartition = 10          # AddPartitionsToTxn v4+, leader -> coordinator (KIP-890)
    VerifyAddPartitionResponse = 11
    TxnOffsetCommit = 12             # client -> group coordinator
    TxnOffsetCommitResponse = 13


class Outcome(IntEnum):
    """What the application was told about one of its transactions (ghost)."""
    COMMITTED = 1    # commitTransaction() returned
    ABORTED = 2      # abortTransaction() returned
    FAILED = 3       # a fatal error: the application does not know the result


class Control(IntEnum):
    """Batch kind in a partition log: data, or a control batch (transaction marker)."""
    DATA = 0
    COMMIT = 1
    ABORT = 2


class RecordId(NamedTuple):
    """Ghost identity of a record: which client transaction wrote it. In ``__consumer_offsets``
    a batch is an offset commit and ``n`` is the offset it commits (real data, not ghost)."""
    tid: int
    instance: int
    txn: int
    n: int


class Batch(NamedTuple):
    """A record batch in a partition log; one record per data batch (abstraction)."""
    producer_id: int
    producer_epoch: int
    base_sequence: int          # -1 for control batches
    control: Control
    coordinator_epoch: int      # control batches only, else -1
    record: RecordId            # data batches only (ghost); NO_RECORD for control batches


NO_RECORD = RecordId(-1, -1, -1, -1)


class ProducerStateEntry(NamedTuple):
    """ProducerStateManager's entry for one producer id at one partition leader.

    ``batches``: the sequences of its last five data batches of the entry's epoch
    (``ProducerStateEntry.batchMetadata``, NUM_BATCHES_TO_RETAIN), kept only with several batches
    in flight (``workload.max_in_flight`` > 1). Abstraction: with one, only the last batch is
    remembered for duplicate detection: a batch is sent only once the one before it on its
    partition is answered, so a request of an older batch than the last is a copy on a closed
    connection (``DuplicateRequest``) or one whose batch expired in the client, and whether it is
    found a duplicate or out of order nothing is appended and no waiting client reads the
    answer."""
    producer_id: int
    producer_epoch: int
    last_sequence: int          # -1: none in this epoch
    last_offset: int
    coordinator_epoch: int
    current_txn_first_offset: int   # -1: no open transaction
    batches: tuple[int, ...] = ()   # the last five sequences (workload.max_in_flight > 1)


ProducerStateEntry._only_if_set = ("batches",)   # traces of one batch in flight keep their bytes


class AbortedTxn(NamedTuple):
    """An entry of the aborted-transaction index (.txnindex)."""
    producer_id: int
    first_offset: int
    last_offset: int


class Partition(NamedTuple):
    """A data partition's leader. Abstraction: the high watermark is the log end (acks=all with
    replication folded into the append), so there are no unreplicated transactions.

    ``guards``: (producer id, guard) of verifications in progress (VerificationStateEntry); a
    guard is unique (``next_guard`` counts them) and is cleared by a marker (KAFKA-14884). With
    ``marker_keeps_tv2_guard`` under TV2 an entry is (producer id, guard, epoch): the entry's
    epoch, and a marker of that epoch keeps it (KAFKA-18654), marking it older than the
    producer's last write, (producer id, guard, epoch, True): it then expires with the producer's
    state (ProducerStateManager.removeExpiredProducers). Abstraction: of the
    VerificationStateEntry only the guard (and that epoch) is kept, not its timestamp; its lowest
    sequence (``lowest``) only with several batches in flight.

    ``lowest``: (producer id, epoch, lowest sequence) of each guard's VerificationStateEntry
    (``maybeUpdateLowestSequenceAndEpoch``), with ``workload.max_in_flight`` > 1. Abstraction:
    with one batch in flight it is not kept (the counts pinned for every preset predate it), so
    a batch verified on a guard that a lower sequence also started verifying on (a copy of an
    earlier batch, or another instance's first batch of a newer epoch) is appended where Kafka
    answers OUT_OF_ORDER_SEQUENCE_NUMBER."""
    log: tuple[Batch, ...] = ()
    producers: tuple[ProducerStateEntry, ...] = ()   # sorted by producer id
    aborted: tuple[AbortedTxn, ...] = ()
    guards: tuple[tuple[int, ...], ...] = ()
    next_guard: int = 0
    # The fault offline_partitions: the partition's leader is NO_LEADER (-1), its only in-sync
    # replica's broker down and fenced (an OfflinePartition); its log and producer state are on
    # that broker's disk and are there again when it is elected leader (``ElectLeader``).
    offline: bool = False
    lowest: tuple[tuple[int, int, int], ...] = ()   # sorted by producer id


Partition._only_if_set = ("offline", "lowest")   # traces without them keep their bytes


class TxnMetadata(NamedTuple):
    """TransactionMetadata for one transactional.id (``producer_id == -1``: no metadata yet)."""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH
    last_producer_epoch: int = NO_EPOCH
    state: TxnState = TxnState.Empty
    partitions: frozenset = frozenset()
    # a TxnState while a log append is in flight, and the Complete* state through a Prepare*'s
    # marker round (prepareComplete), else -1
    pending_state: TxnState | int = -1
    # Epoch exhaustion (``cluster.last_epoch``): prevProducerId, kept only while it differs from
    # producerId (the transition before rotated the id; Kafka sets it to the id before every
    # transition, so -1 here means "the same"), and TV2's nextProducerId, taken at Prepare* when
    # the epoch is exhausted and applied at Complete*.
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    # ghost (no rule reads it; the claim no_self_fencing does): the producer instance (its
    # ``Producer.instance`` within the transactional.id) whose request made this producer id and
    # epoch (InitProducerId, a TV2 EndTxn, an InitProducerId that fenced), -1 for none or the
    # coordinator's own fence (a transaction timeout, a forced termination)
    epoch_owner: int = -1


class Reply(NamedTuple):
    """Who to answer when a coordinator log append completes."""
    producer: int               # producer instance index, -1: none (internal transition)
    rpc: Rpc | int              # the Rpc of the response, -1: none
    request: object = ()        # the request being answered, when the response needs it


class Append(NamedTuple):
    """A transaction-log append in flight (TransactionStateManager.appendTransactionToLog)."""
    target: TxnMetadata
    reply: Reply


class Coordinator(NamedTuple):
    """The transaction coordinator: leader of the single ``__transaction_state`` partition.

    ``log`` is the replicated transaction log (last entry per transactional.id, as after
    compaction); ``txns`` is the leader's in-memory cache, which can run ahead of the log while an
    append is in flight (``appends``). ``markers``: partitions whose marker is not yet
    acknowledged, per transactional.id (transactionsWithPendingMarkers)."""
    coordinator_epoch: int
    log: tuple[TxnMetadata, ...]
    txns: tuple[TxnMetadata, ...]
    appends: tuple[Append | tuple, ...]     # () when no append is in flight
    markers: tuple[frozenset, ...]
    next_producer_id: int = 0
    # ghost (workload.force_terminate): (transactional.id, producer id, producer epoch) of each
    # transaction an operator force-terminated (Admin.forceTerminateTransaction), as it was then
    force_terminated: frozenset = frozenset()


Coordinator._only_if_set = ("force_terminated",)   # traces without the workload keep their bytes


class Producer(NamedTuple):
    """A producer instance (KafkaProducer + TransactionManager) and its application.

    Abstractions: FindCoordinator is folded into sending (a request goes to the current
    coordinator); one record per batch; at most ``workload.max_in_flight`` batches in flight per
    partition (max.in.flight.requests.per.connection, a connection per partition here).

    The batches of TxnPartitionEntry.inflightBatchesBySequence are ``in_flight`` (the Produce
    request of each batch whose attempt is out, as it was sent: its answer names it) and
    ``reenqueued`` (a batch to retry, RecordAccumulator.reenqueue, with its current sequence,
    waiting until it is its partition's first in flight: ``producer.send_produce_enabled``).
    ``resequenced``: (partition, txn, n, sequence) of a batch in ``in_flight`` whose sequence a
    failed batch before it changed (TxnPartitionEntry.adjustSequencesDueToFailedBatch:
    ``ProducerBatch.sequenceHasBeenReset``) while its attempt, with the old one, is out.
    ``last_acked``: lastAckedSequence per partition (() while none is acknowledged), kept only
    with several batches in flight (``workload.max_in_flight`` > 1)."""
    tid: int
    instance: int
    started: bool               # the application created this instance
    replaced: bool              # a newer instance was started (this one is a zombie if it runs)
    state: ClientState = ClientState.UNINITIALIZED
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH
    in_flight_request: Rpc | int = -1   # the one coordinator request in flight, else -1
    epoch_bump_required: bool = False   # KIP-360: the abort must end with InitProducerId(pid, epoch)
    partitions: frozenset = frozenset()          # partitionsInTransaction
    new_partitions: frozenset = frozenset()      # newPartitionsInTransaction (not yet sent)
    pending_partitions: frozenset = frozenset()  # pendingPartitionsInTransaction (sent)
    queued: frozenset = frozenset()              # partitions with an undrained record batch
    in_flight: tuple = ()        # the Produce requests in flight, by partition (inflightBatches)
    next_sequence: tuple[int, ...] = ()
    txn: int = -1               # number of the current / last transaction (ghost identity)
    records: int = 0            # records sent by the application in the current transaction
    outcomes: tuple[Outcome, ...] = ()   # ghost: per finished transaction, what the app was told
    # consume-transform-produce (the application's consumer, in the same group member)
    generation: int = -1        # the group generation of this member's assignment
    position: int = -1          # the input offset to process next; -1: to fetch (OffsetFetch)
    offsets: int = 0            # sendOffsetsToTransaction: OFFSETS_* below
    inputs: tuple[int, ...] = ()  # ghost: the input offset each transaction consumed
    # several batches in flight per partition (workload.max_in_flight > 1; see the docstring)
    reenqueued: tuple = ()        # Produce requests to resend, at their current sequence
    resequenced: tuple = ()       # (partition, txn, n, sequence) of batches whose attempt is out
    last_acked: tuple[int, ...] = ()   # lastAckedSequence per partition; (): none acknowledged


Producer._only_if_set = ("reenqueued", "resequenced", "last_acked")   # (traces keep their bytes)


OFFSETS_NONE, OFFSETS_QUEUED, OFFSETS_SENT, OFFSETS_DONE = range(4)


class Consumer(NamedTuple):
    """A read_committed consumer: fetch positions and what it returned to the application."""
    positions: tuple[int, ...]
    returned: tuple[RecordId, ...] = ()


class Group(NamedTuple):
    """The consumer group of consume-transform-produce, at its group coordinator: the generation
    and which transactional.id's application owns the one input partition. The committed and
    pending offsets are not kept here: they are the ``__consumer_offsets`` partition's log (see
    ``kafka_mc.model.kafka.group_coordinator``)."""
    generation: int = 0
    owner: int = 0
    # The fault group_expiries (workload.simple_group): GroupCoordinatorShard.cleanupGroupMetadata
    # wrote the group's tombstone (GroupMetadataManager.maybeDeleteGroup). The offsets partition
    # keeps its log: a COMMIT marker still materialises a pending offset commit (under the
    # deleted group's id), but OffsetFetch finds no group (GroupIdNotFoundException: INVALID_OFFSET)
    # until an offset commit's replay creates it again.
    deleted: bool = False


Group._only_if_set = ("deleted",)   # traces of behaviours without the fault keep their bytes


class World(NamedTuple):
    producers: tuple[Producer, ...]
    coordinator: Coordinator
    partitions: tuple[Partition, ...]
    consumers: tuple[Consumer, ...]
    network: tuple          # messages in flight, FIFO per connection (model.kafka.network)
    delayed: tuple          # messages held back: deliverable in any order, sorted
    budgets: tuple          # model.kafka.faults.Budgets: the fault budgets left (declared there)
    group: Group = Group()


def budget(w: World, fault: str) -> int:
    """How many more faults of this kind may happen."""
    return getattr(w.budgets, fault) if w.budgets.total else 0


def spend(w: World, fault: str) -> World:
    """A fault of this kind happened."""
    b = w.budgets
    return w._replace(budgets=b._replace(**{fault: getattr(b, fault) - 1}, total=b.total - 1))


def offline_partitions(w: World) -> tuple[int, ...]:
    """The partitions without a leader (the fault ``offline_partitions``)."""
    return tuple(k for k, part in enumerate(w.partitions) if part.offline)


def replace_at(items: tuple, i: int, value) -> tuple:
    return items[:i] + (value,) + items[i + 1:]


def fast_replacer(cls) -> Callable:
    """``cls._replace`` without NamedTuple's call layers (steps call it constantly): the fields
    copied at C speed, then the few changed ones set by their index (rather than every field
    looked up among the changes: a Producer has 22)."""
    index = {f: i for i, f in enumerate(cls._fields)}
    new = tuple.__new__

    def _replace(self, **changes):
        fields = list(self)
        try:
            for name, value in changes.items():
                fields[index[name]] = value
        except KeyError:
            raise ValueError(f"{cls.__name__} has no field {name!r}") from None
        return new(cls, fields)
    return _replace


for _cls in (ProducerStateEntry, Partition, TxnMetadata, Coordinator, Producer, Consumer, Group,
             World):
    _cls._replace = fast_replacer(_cls)
