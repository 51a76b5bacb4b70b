"""A marker only closes its own transaction (issue 46 item 7).

``marker_closes_its_own_transaction``: a WriteTxnMarkers that a partition leader appends over an
open transaction of its producer id closes the transaction its coordinator is ending with it: the
coordinator's metadata for the transactional.id is still PrepareCommit / PrepareAbort for the
marker's result, producer id and epoch (any coordinator epoch: a marker sent before a failover
ends the same transaction as the one resent after it). A marker that arrives after its own
transaction completed -- a duplicate, a retry whose first copy was appended -- and finds the
producer id's next transaction open would end that one with a decision that was not its
coordinator's for it. The TV2 leader's answer is KIP-1228 (a marker's epoch must be greater than
the stored one, 4.2.0); TV1 relies on the next transaction never having the same epoch and result
open while an old marker is in flight.

Where it stops short: "its own" is the coordinator's view. Before KIP-890 (kafka-0.11 .. 2.7) a
batch can land after its own transaction's abort marker (the hanging transaction that
``no_hanging_transactions`` reports first, at a smaller depth); a late copy of that marker then
closes it and is reported here (small: 19 steps on 0.11, 22 on 1.0 .. 2.7) although the batch is
the same client transaction's. Telling those apart needs a ghost naming the client transaction
each marker ends (not modelled: it would change every trace).

Kafka's carve-outs: an equal-epoch marker with no open transaction is accepted as a no-op
(KAFKA-19999, 4.2.0): it closes nothing, so this property does not speak of it and it is safe;
a marker at the last epoch equal to the stored one is accepted over an open transaction
(KAFKA-20090 #21469, 4.3.0): safe where the checks meet it -- with 4.3's rotation on the fence
path (#21506) no batch is written at the last epoch and it is not met; without it
(``protocol.rotate_on_fence = false``) it is met and closes its own transaction
(tests/model/test_markers.py). Caught: the mutant marker-ignores-coordinator-epoch (a marker
delayed over a failover closes the next transaction, 29 steps).
"""
from __future__ import annotations

from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.kafka.partition import entry_of
from kafka_mc.model.kafka.world import TxnState


def _own(s, m) -> bool:
    txn = s.coordinator.txns[m.tid]
    return (txn.state == (TxnState.PrepareCommit if m.committed else TxnState.PrepareAbort)
            and txn.producer_id == m.producer_id and txn.producer_epoch == m.producer_epoch)


def marker_closes_its_own_transaction(K, s, a, t) -> bool:
    if a[0] != "HandleWriteTxnMarkers":
        return True
    m = a[1]
    before, after = s.partitions[m.partition], t.partitions[m.partition]
    e = entry_of(before, m.producer_id)
    if e is None or e.current_txn_first_offset < 0 or len(after.log) == len(before.log):
        return True     # nothing open for it to close, or the marker was rejected
    return _own(s, m)


PROPERTIES = (
    Property("marker_closes_its_own_transaction", Expectation.TRANSITION,
             marker_closes_its_own_transaction,
             "a marker appended over an open transaction ends the transaction its coordinator "
             "is ending with it (PrepareCommit / PrepareAbort for its result, producer id and "
             "epoch), never the producer id's next one",
             reads=reads("CL")),
)
