"""Zombie fencing: a superseded producer instance can no longer change anything.

Two claims. ``zombie_fencing`` is the epoch claim Kafka's checks are written for: once a newer
instance holds a newer epoch of the same producer id, nothing sent with the older epoch is
appended or changes the coordinator. ``instance_fencing`` is what Kafka promises applications
(KafkaProducer.initTransactions: "ensures any transactions initiated by previous instances of the
producer with the same transactional.id are completed ... fenced"), stated over the
transactional.id's generations: an instance's initTransactions that returned gave it a
(producer id, epoch), and producer ids only grow, so generations are ordered by the pair. Once
another instance holds a later generation, nothing sent with an earlier one is appended or
changes the coordinator's state for the transactional.id, whatever producer id it carries. It is
stronger where the producer id changes (a transactional.id that expired and starts over with a
new id), and "previous" means initialized earlier, not started earlier: an instance whose
InitProducerId was held back initializes last and fences the one started after it.

Which presets meet them (tests/model/test_faults.py): kafka-0.11 meets neither (KAFKA-6119: the
fence does not bump the epoch, the zombie's late batch lands). 1.0 .. 2.7 meet both with crashes
alone, and break both when the older instance's batch is still in flight and no marker of the
newer epoch has reached the leader: after it expired on the client (``faults.batch_expiries``:
the instance aborts at its epoch, the newer instance initializes, the late batch is appended) or
after the leader forgot the producer id (``faults.producer_state_losses``: the batch passes an
unknown producer's checks). From 3.6 the leader verifies the batch with the coordinator first,
and both hold.

Not claimed: an older instance's own InitProducerId. From 2.5 (KIP-360) an instance whose
transaction failed sends InitProducerId(producer id, epoch) to bump its epoch; if a newer
instance's transaction is then Ongoing, the coordinator fences and aborts it
(prepareInitProducerIdTransit checks the producer id, not the epoch, before fencing): the older
instance fences the newer one. No record is exposed by it, and the newer instance's application
must handle a fenced producer; it is an availability hazard, shown in tests/model/test_faults.py,
not a safety violation.
"""
from __future__ import annotations

from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.world import ClientState

EPOCH_REQUESTS = ("HandleProduce", "HandleAddPartitionsToTxn", "HandleEndTxn")
# steps handling a client request, directly or for the leader that verifies it (KIP-890)
CLIENT_REQUESTS = EPOCH_REQUESTS + ("HandleTxnOffsetCommit",)
VERIFYING = ("HandleVerifyAddPartition", "HandleVerifyAddPartitionResponse")


def superseded(w, sender: int, producer_id: int, producer_epoch: int) -> bool:
    """A newer instance of the sender's transactional.id holds a newer epoch of the same id."""
    p = w.producers[sender]
    return any(q.tid == p.tid and q.instance > p.instance and q.producer_id == producer_id
               and q.producer_epoch > producer_epoch for q in w.producers)


def _unchanged(s, t, tid: int) -> bool:
    """No log appended to, and the coordinator's state for ``tid`` (cache and append) unchanged."""
    if s.partitions is not t.partitions and any(
            a.log != b.log for a, b in zip(s.partitions, t.partitions)):
        return False
    before, after = s.coordinator, t.coordinator
    return (before.txns[tid], before.appends[tid]) == (after.txns[tid], after.appends[tid])


def zombie_fencing(K, s, a, t) -> bool:
    if a[0] not in EPOCH_REQUESTS:
        return True
    m = a[1]
    if not superseded(s, m.producer, m.producer_id, m.producer_epoch):
        return True
    if a[0] == "HandleProduce":
        return t.partitions[m.partition].log == s.partitions[m.partition].log
    before, after = s.coordinator, t.coordinator
    return (before.txns[m.tid], before.appends[m.tid]) == (after.txns[m.tid], after.appends[m.tid])


def instance_fencing(K, s, a, t) -> bool:
    name = a[0]
    if name in CLIENT_REQUESTS:
        m = a[1]
    elif name in VERIFYING:
        m = a[1].produce
    else:
        return True
    p = s.producers[m.producer]
    sent = (m.producer_id, m.producer_epoch)
    if not any(q.tid == p.tid and q.instance != p.instance and q.producer_id != -1
               and (q.producer_id, q.producer_epoch) > sent for q in s.producers):
        return True
    return _unchanged(s, t, p.tid)


PROPERTIES = (
    Property("zombie_fencing", Expectation.TRANSITION, zombie_fencing,
             "once a newer producer instance of a transactional.id is initialized, nothing the "
             "older instance sends is appended or changes coordinator state",
             reads=reads("PLC")),
    Property("instance_fencing", Expectation.TRANSITION, instance_fencing,
             "once another instance of a transactional.id holds a later (producer id, epoch), "
             "nothing sent with an earlier one (but an InitProducerId) is appended or changes the "
             "coordinator's state for the transactional.id",
             reads=reads("PLC")),
    Property("a_zombie_is_fenced", Expectation.SOMETIMES,
             lambda K, w: any(p.replaced and p.state == ClientState.FATAL_ERROR for p in w.producers),
             "a replaced producer instance is fenced (fatal error)",
             # a zombie needs a second instance of a transactional.id and a crash to start it;
             # under two-phase commit the new instance asks keepPreparedTxn, which no
             # coordinator implements (UNSUPPORTED_VERSION): it never fences the old one
             applies=lambda K: K.producers_per_id > 1 and K.budgets.producer_crashes > 0
             and K.budgets.total > 0 and not K.two_phase,
             reads=reads("P")),
)
