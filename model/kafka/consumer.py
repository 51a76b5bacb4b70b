"""read_committed consumers.

Follows ``UnifiedLog.read`` with ``FetchIsolation.TXN_COMMITTED`` (records up to the LSO, the
aborted transactions overlapping the range from the .txnindex) and the Java consumer's filtering
(``CompletedFetch`` / 2.0 ``Fetcher``): aborted transactions whose first offset is at or below a
batch enter ``abortedProducerIds``; an ABORT marker removes its producer id; a transactional
batch of a producer id in the set is skipped; control batches are never returned.

Abstraction: a fetch is one atomic step (request and response are not separate messages), and it
reads everything up to the LSO. A real fetch is made in two moments (``Partition.readRecords``:
the high watermark and LSO it answers with are read first, the log then up to the LSO of that
moment, so a marker appended in between -- a fetch racing a marker -- makes the batches reach past
the LSO named) and may be cut below the LSO by ``max.partition.fetch.bytes``. Held against real
runs (``kafka_mc.model.kafka.capabilities.fetches``), the first moment is a state of the model and the
read is this step, which covers the race; a cut fetch is not modelled (the harness's records are a
few bytes, never cut). The real consumer returns a fetch's records when the application polls;
the model's returns them at the fetch (``returned``), which the mapping compares poll by poll.
"""
from __future__ import annotations

from kafka_mc.model.kafka.partition import last_stable_offset
from kafka_mc.model.kafka.world import Control, World, replace_at


def fetch_enabled(K, w):
    """A consumer fetches what it has not read below the LSO, from a partition with a leader (one
    without, the fault ``offline_partitions``, answers NOT_LEADER_OR_FOLLOWER: nothing to read)."""
    return [(c, k) for c, consumer in enumerate(w.consumers)
            for k in range(K.partitions)
            if consumer.positions[k] < last_stable_offset(w.partitions[k])
            and not w.partitions[k].offline]


def fetch(K, w: World, c: int, k: int) -> World:
    consumer, part = w.consumers[c], w.partitions[k]
    start, lso = consumer.positions[k], last_stable_offset(part)
    returned = read_committed(part, start, lso)
    consumer = consumer._replace(positions=replace_at(consumer.positions, k, lso),
                                 returned=consumer.returned + returned)
    return w._replace(consumers=replace_at(w.consumers, c, consumer))


def read_committed(part, start: int, upper: int) -> tuple:
    """The records a read_committed consumer returns from offsets [start, upper)."""
    index = sorted((a.first_offset, a.producer_id) for a in part.aborted
                   if a.last_offset >= start and a.first_offset < upper)
    aborting: set[int] = set()
    out = []
    for offset in range(start, upper):
        b = part.log[offset]
        while index and index[0][0] <= offset:
            aborting.add(index.pop(0)[1])
        if b.control == Control.ABORT:
            aborting.discard(b.producer_id)
        elif b.control == Control.DATA and b.producer_id not in aborting:
            out.append(b.record)
    return tuple(out)
