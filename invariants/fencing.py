"""Zombie fencing: a superseded producer instance can no longer change anything."""
from __future__ import annotations

from model.core import Expectation, Property
from model.kafka.world import ClientState

EPOCH_REQUESTS = ("HandleProduce", "HandleAddPartitionsToTxn", "HandleEndTxn")


def superseded(w, sender: int, producer_id: int, producer_epoch: int) -> bool:
    """A newer instance of the sender's transactional.id holds a newer epoch of the same id."""
    p = w.producers[sender]
    return any(q.tid == p.tid and q.instance > p.instance and q.producer_id == producer_id
               and q.producer_epoch > producer_epoch for q in w.producers)


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


PROPERTIES = (
    Property("zombie_fencing", Expectation.TRANSITION, zombie_fencing,
             "once a newer producer instance of a transactional.id is initialized, nothing the "
             "older instance sends is appended or changes coordinator state"),
    Property("a_zombie_is_fenced", Expectation.SOMETIMES,
             lambda K, w: any(p.replaced and p.state == ClientState.FATAL_ERROR for p in w.producers),
             "a replaced producer instance is fenced (fatal error)",
             # a zombie needs a second instance of a transactional.id and a crash to start it
             applies=lambda K: K.producers_per_id > 1 and K.budgets.producer_crashes > 0
             and K.budgets.total > 0),
)
