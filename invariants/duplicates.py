"""Idempotence: a record is exposed at most once per partition (``no_duplicates``), and a
producer's batches are written in the order of their sequence numbers (``batches_in_sequence``).

``batches_in_sequence`` claims what ProducerAppendInfo.checkSequence is written for: per producer
id and epoch, a partition's log holds the data batches with sequences 0, 1, 2, ... in log order,
so a batch is never appended before one its producer sent earlier on that partition (which would
then be refused for good: OUT_OF_ORDER_SEQUENCE_NUMBER, retried by the client until
delivery.timeout.ms or the transaction timeout aborts the transaction). From 2.5 (KIP-360) a
leader with no state for a producer id accepts any first sequence; with several batches in
flight (``workload.max_in_flight``) a later batch whose earlier one was lost or delayed is then
appended first. KAFKA-18202 (4.1.0, ``protocol.tv2_first_sequence``) refuses it from a TV2
producer; a TV1 producer (3.x, or ``transaction_version = 1``) still has it (KAFKA-15591, fixed
after the releases modelled here for a partition never written to). docs/findings.md
("KAFKA-18202").

Not in the model's default properties (``invariants.PROPERTIES``): it is checked by naming it
(``CLAIMS``).
"""
from __future__ import annotations

from kafka_mc.invariants.history import fates
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.world import Control


def no_duplicates(K, w) -> bool:
    for part in w.partitions[:K.partitions]:   # not __consumer_offsets: commits are not records
        exposed = [rid for _, rid, fate in fates(part) if fate != Control.ABORT]
        if len(exposed) != len(set(exposed)):
            return False
    return True


def batches_in_sequence(K, w) -> bool:
    for part in w.partitions[:K.partitions]:   # (__consumer_offsets: no sequences)
        last: dict = {}
        for b in part.log:
            if b.control == Control.DATA:
                key = (b.producer_id, b.producer_epoch)
                if b.base_sequence != last.get(key, -1) + 1:
                    return False
                last[key] = b.base_sequence
    return True


PROPERTIES = (
    Property("no_duplicates", Expectation.ALWAYS, no_duplicates,
             "a producer record appears at most once among the records a partition exposes",
             reads=reads("L"), default=False),
)

CLAIMS = (
    Property("batches_in_sequence", Expectation.ALWAYS, batches_in_sequence,
             "per producer id and epoch, a partition's data batches carry the sequences 0, 1, "
             "2, ... in log order: none is appended before one sent earlier",
             reads=reads("L"), default=False),
)
