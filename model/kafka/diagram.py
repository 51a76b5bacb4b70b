"""The Kafka model's sequence diagram (``kafka-mc render``, ``explain``).

Lifelines: one per producer instance (``p0``, ``p1``: transactional.id t, instance i), the
``coordinator``, one per partition leader (``leader-0``), the ``group-coordinator`` (leader of
``__consumer_offsets``) with consume-transform-produce, and one per consumer. A request or
response is drawn as an arrow when it is sent; handling it is a note on the receiver when it
changes something a reader needs (an append, a marker, a log entry); faults are highlighted.
A delivery's first event is its receipt (``received``: the message and its sender), which the
one-line form of a step (``kafka-mc check``) starts with and a diagram leaves to the arrow.
"""
from __future__ import annotations

from collections import Counter

from kafka_mc.model.core import Event, show
from kafka_mc.model.kafka.world import Errors, Rpc

COORDINATOR = "coordinator"
GROUP_COORDINATOR = "group-coordinator"
TO_COORDINATOR = (Rpc.InitProducerId, Rpc.AddPartitionsToTxn, Rpc.EndTxn)
SENDER = ("InitTransactions", "SendAddPartitionsToTxn", "SendProduce", "SendEndTxn",
          "SendTxnOffsetCommit")


def lifelines(K) -> tuple[str, ...]:
    return (*(f"p{i}" for i in range(K.producers)), COORDINATOR,
            *(f"leader-{k}" for k in range(K.partitions)),
            *((GROUP_COORDINATOR,) if K.ctp else ()),
            *(f"consumer-{c}" for c in range(K.consumers)))


def leader(K, k: int) -> str:
    return GROUP_COORDINATOR if k == K.partitions else f"leader-{k}"


def endpoints(K, m) -> tuple[str, str, str]:
    """(kind, source, target) of a message."""
    r = m.rpc
    if r in TO_COORDINATOR:
        return "request", f"p{m.producer}", COORDINATOR
    if r in (Rpc.InitProducerIdResponse, Rpc.AddPartitionsToTxnResponse, Rpc.EndTxnResponse):
        return "response", COORDINATOR, f"p{m.producer}"
    if r in (Rpc.Produce, Rpc.TxnOffsetCommit):
        return "request", f"p{m.producer}", leader(K, m.partition)
    if r in (Rpc.ProduceResponse, Rpc.TxnOffsetCommitResponse):
        return "response", leader(K, m.partition), f"p{m.producer}"
    if r == Rpc.WriteTxnMarkers:
        return "request", COORDINATOR, leader(K, m.partition)
    if r == Rpc.WriteTxnMarkersResponse:
        return "response", leader(K, m.partition), COORDINATOR
    if r == Rpc.VerifyAddPartition:
        return "request", leader(K, m.partition), COORDINATOR
    return "response", COORDINATOR, leader(K, m.partition)


def label(m) -> str:
    if getattr(m, "disconnected", False):   # a DuplicateRequest copy
        return f"{label(m._replace(disconnected=False))} (closed connection)"
    r = m.rpc
    if r == Rpc.Produce:
        return f"Produce(pid={m.producer_id}, epoch={m.producer_epoch}, seq={m.base_sequence})"
    if r == Rpc.WriteTxnMarkers:
        return (f"WriteTxnMarkers({'COMMIT' if m.committed else 'ABORT'}, epoch={m.producer_epoch}, "
                f"coordinatorEpoch={m.coordinator_epoch})")
    if r == Rpc.AddPartitionsToTxn:
        return f"AddPartitionsToTxn({show(m.partitions)}, epoch={m.producer_epoch})"
    if r == Rpc.EndTxn:
        return f"EndTxn({'COMMIT' if m.committed else 'ABORT'}, epoch={m.producer_epoch})"
    if r == Rpc.VerifyAddPartition:
        return f"AddPartitionsToTxn({'verifyOnly' if m.verify_only else 'add'}, epoch={m.producer_epoch})"
    if r == Rpc.TxnOffsetCommit:
        return (f"TxnOffsetCommit(offset={m.offset}, generation={m.generation}, "
                f"epoch={m.producer_epoch})")
    if r == Rpc.InitProducerId and m.producer_id != -1:
        return f"InitProducerId(pid={m.producer_id}, epoch={m.producer_epoch})"
    if r == Rpc.InitProducerIdResponse and m.error == Errors.NONE:
        return f"NONE (pid={m.producer_id}, epoch={m.producer_epoch})"
    if hasattr(m, "error"):
        return Errors(m.error).name
    return Rpc(r).name


def describe(K, s, a, t, faults) -> tuple[Event, ...]:
    """The events of step ``s --a--> t``; ``faults``: rule name -> its row of the fault table
    (``kafka_mc.model.kafka.faults``), which says where a fault is drawn and what its note says."""
    events = []
    name = a[0]
    if name.startswith(("Handle", "Receive")) and len(a) > 1 and hasattr(a[1], "rpc"):
        events.append(received(K, a))
    if name in faults:
        fault = faults[name]
        events.append(Event("fault", fault.lifeline(K, a), label=fault.label(a, s)))
    elif not (name in SENDER or name.startswith("Handle") or name.startswith("Receive")):
        events.append(Event("note", _actor(K, a), label=_note(s, a, t)))
    elif name.startswith("Handle") and (note := _handled(s, a, t)):
        events.append(Event("note", endpoints(K, a[1])[2], label=note))
    sent = Counter(t.network) - Counter(s.network)
    for m in t.network:
        if sent[m]:
            sent[m] -= 1
            kind, source, target = endpoints(K, m)
            events.append(Event(kind, source, target, label(m)))
    return tuple(events) or (Event("note", _actor(K, a), label=name),)


def received(K, a) -> Event:
    """A delivery's receipt (``Handle<Rpc>``, ``Receive<Rpc>Response``): the message, from whom
    (a producer or a leader; the coordinator and the group coordinator are one each), and whether it is a copy left on a closed connection (``DuplicateRequest``) or was held back
    (``DelayRequest``, delivered late)."""
    m = a[1]
    kind, source, target = endpoints(K, m)
    copy = getattr(m, "disconnected", False)
    said = label(m._replace(disconnected=False) if copy else m)
    what = said if kind == "request" else f"{Rpc(m.rpc).name} {said}"
    how = [x for x, on in (("a copy on a closed connection", copy),
                           ("held back", len(a) > 2 and a[2] is True)) if on]
    sender = "" if source in (COORDINATOR, GROUP_COORDINATOR) else f" from {source}"  # (the one)
    return Event("receive", target, label=what + sender + (f" ({', '.join(how)})" if how else ""))


def _actor(K, a) -> str:
    """The lifeline a non-fault action happens on."""
    name, args = a[0], a[1:]
    if name in ("CommitTxnLogAppend", "ForceTerminateTransaction"):
        return COORDINATOR
    if name == "Fetch":
        return f"consumer-{args[0]}"
    if args and hasattr(args[0], "rpc"):  # the delivery of a message
        return endpoints(K, args[0])[2]
    return f"p{args[0]}"


def _note(s, a, t) -> str:
    name = a[0]
    if name == "CommitTxnLogAppend":
        txn = t.coordinator.log[a[1]]
        return f"log: {txn.state.name} (epoch {txn.producer_epoch}, partitions {show(txn.partitions)})"
    if name == "Fetch":
        got = t.consumers[a[1]].returned[len(s.consumers[a[1]].returned):]
        return f"read_committed from leader-{a[2]}: {len(got)} record(s)"
    if name == "ExpireVerificationRetry":
        return "verification retry time passed: the produce is answered CONCURRENT_TRANSACTIONS"
    if name == "OffsetFetch":
        gone = " (no group: INVALID_OFFSET, auto.offset.reset)" if s.group.deleted else ""
        return f"OffsetFetch: position {t.producers[a[1]].position}{gone}"
    return {"BeginTransaction": "beginTransaction()", "Send": f"send() to partition {a[2]}"
            if len(a) > 2 else "send()", "CommitTransaction": "commitTransaction()",
            "AbortTransaction": "abortTransaction()",
            "CompleteTransaction": "no partition added: completes without EndTxn",
            "SendOffsetsToTransaction": "sendOffsetsToTransaction()"}.get(name, name)


def _handled(s, a, t) -> str:
    """What handling a message changed, when a reader needs it."""
    m = a[1]
    if a[0] in ("HandleProduce", "HandleWriteTxnMarkers", "HandleVerifyAddPartitionResponse",
                "HandleTxnOffsetCommit"):
        k = m.partition
        added = t.partitions[k].log[len(s.partitions[k].log):]
        if added:
            b = added[-1]
            what = b.control.name + " marker" if b.control else "batch"
            return f"{what} appended at offset {len(t.partitions[k].log) - 1}"
    return ""
