"""The Kafka state as ``kafka-mc explore`` shows it: one panel per component, named as the
sequence diagram's lifelines (``diagram.lifelines``), values in trace form (``kafka_mc.model.codec``).

Each producer instance (``p0``: its TransactionManager state, epoch, sequences, what is in
flight), the transaction ``coordinator`` (cache, transaction log, pending markers), each partition
leader (``leader-0``: the log of batches and control markers, ProducerStateManager's entries, the
aborted index, and its last stable offset, ``UnifiedLog.lastStableOffset``), the group
coordinator with consume-transform-produce, each consumer, then the network (requests and
responses in flight, delayed ones) and the fault budgets left.
"""
from __future__ import annotations

from typing import Any

from kafka_mc.model.codec import to_itf
from kafka_mc.model.core import Record
from kafka_mc.model.kafka import diagram
from kafka_mc.model.kafka.partition import last_stable_offset
from kafka_mc.model.kafka.world import World


def components(K, w: World) -> dict[str, Any]:
    out: dict[str, Any] = {f"p{i}": to_itf(p) for i, p in enumerate(w.producers)}
    out[diagram.COORDINATOR] = to_itf(w.coordinator)
    for k, part in enumerate(w.partitions):
        shown = Record(last_stable_offset=last_stable_offset(part), log_end_offset=len(part.log))
        shown.update(to_itf(part))
        if k == K.partitions:  # __consumer_offsets, at the group coordinator
            shown["group"] = to_itf(w.group)
        out[diagram.leader(K, k)] = shown
    out.update({f"consumer-{c}": to_itf(x) for c, x in enumerate(w.consumers)})
    out["network"] = Record(in_flight=to_itf(w.network), delayed=to_itf(w.delayed))
    out["budgets"] = to_itf(w.budgets)
    return out
