"""What the ghost history says about a world: the fate of every record in every log.

A data batch belongs to the transaction its producer id had open at that partition; the next
transaction marker of that producer id in the log decides it (COMMIT or ABORT). This is computed
from the logs alone, independently of the leaders' producer state, LSO and index, so the
invariants do not trust the structures they check.
"""
from __future__ import annotations

from functools import lru_cache

from kafka_mc.model.kafka.world import Control, Partition, World

UNDECIDED = Control.DATA


@lru_cache(maxsize=1 << 14)
def fates(part: Partition) -> tuple[tuple[int, object, Control], ...]:
    """(offset, record id, fate) of every data batch: COMMIT, ABORT or UNDECIDED."""
    out, open_by_pid = [], {}
    for offset, b in enumerate(part.log):
        if b.control == Control.DATA:
            open_by_pid.setdefault(b.producer_id, []).append(len(out))
            out.append([offset, b.record, UNDECIDED])
        else:
            for j in open_by_pid.pop(b.producer_id, ()):
                out[j][2] = b.control
    return tuple(tuple(x) for x in out)


def open_transactions(part: Partition) -> dict[int, int]:
    """producer id -> first offset of its undecided data at this partition."""
    first: dict[int, int] = {}
    for offset, b in enumerate(part.log):
        if b.control == Control.DATA:
            first.setdefault(b.producer_id, offset)
        else:
            first.pop(b.producer_id, None)
    return first


# The partitions tuple last asked about, then the four maps below: one tuple replaced whole, read
# once by each caller, so concurrent callers (the web explorer's requests) never mix two states'.
_last: tuple = (None, None, None, None, None)


def _memo(K, w: World):
    """Several invariants ask about the same state in a row: compute once per partitions tuple
    (held here, so its identity cannot be reused). The data partitions come first; with
    consume-transform-produce the last partition is ``__consumer_offsets``, whose batches are
    offset commits, kept apart."""
    global _last
    last = _last
    if last[0] is not w.partitions:
        records: dict = {}
        for part in w.partitions[:K.partitions]:
            for _, rid, fate in fates(part):
                records.setdefault(rid, set()).add(fate)
        outputs: dict = {}
        for rid, fs in records.items():
            outputs.setdefault(rid[:3], set()).update(fs)
        commits: dict = {}
        for part in w.partitions[K.partitions:]:
            for _, rid, fate in fates(part):
                commits.setdefault(rid[:3], set()).add(fate)
        txns = {key: outputs.get(key, set()) | commits.get(key, set())
                for key in outputs.keys() | commits.keys()} if commits else outputs
        _last = last = (w.partitions, records, outputs, commits, txns)
    return last


def record_fates(K, w: World) -> dict:
    """record id -> set of fates over the data partitions."""
    return _memo(K, w)[1]


def output_fates(K, w: World) -> dict:
    """(tid, instance, txn) -> set of fates of its data records."""
    return _memo(K, w)[2]


def offset_commit_fates(K, w: World) -> dict:
    """(tid, instance, txn) -> set of fates of its offset commits (consume-transform-produce)."""
    return _memo(K, w)[3]


def txn_fates(K, w: World) -> dict:
    """(tid, instance, txn) -> set of fates of everything it wrote, offset commits included."""
    return _memo(K, w)[4]
