"""The Kafka model's coverage classes, and its state as Kafka's own tools show it (issue 58; the
``observations`` capability's ``coverage`` and ``observed_state`` hooks).

A coverage class is one branch of the Kafka handler (or client call, or fault) a step takes,
named ``Action: branch``, the branch in Kafka's words, with no identifier or number in it (no
producer id, epoch value, offset or partition index): two steps that differ only in those are
the same class. What a step's branch is made of, in this order, each part where it applies:

| part | from | e.g. |
|---|---|---|
| the message handled was a late copy (a duplicate's, on a closed connection) or held back | the delivery's message, its ``disconnected`` flag, the action's ``held_back`` | ``late copy``, ``delayed`` |
| the coordinator's state change of the step's transactional.id: an append begun (``TransactionMetadata.prepareTransitionTo``), or completed (``CommitTxnLogAppend``: the log's state) | ``Coordinator.txns`` / ``appends`` / ``log`` | ``Ongoing -> PrepareCommit``, ``epoch bump``, ``new producer id`` |
| a marker or batch appended to a partition's log, or not | ``Partition.log``, the open transaction of its producer id (``ProducerStateEntry.current_txn_first_offset``) | ``ABORT appended over an open transaction``, ``COMMIT appended, nothing open``, ``batch appended`` |
| the client's ``TransactionManager`` state change | ``Producer.state`` | ``IN_TRANSACTION -> COMMITTING_TRANSACTION`` |
| the answers the step sends, by error (a handler's, a log append's callback's; a late copy's, which its closed connection drops, as its handler gave it) | responses new in the network | ``answers CONCURRENT_TRANSACTIONS`` |
| the requests the step sends | requests new in the network | ``sends WriteTxnMarkers``, ``sends VerifyAddPartition`` |
| for a network fault, the request or response it hits; for a response the client receives, its error | the fault's message | ``DuplicateRequest: WriteTxnMarkers``, ``ReceiveEndTxnResponse: NONE`` |

So ``HandleWriteTxnMarkers: late copy; ABORT appended over an open transaction; answers NONE``
is a stale marker's copy closing an open transaction (what ``marker_closes_its_own_transaction``
judges), ``HandleWriteTxnMarkers: late copy; answers INVALID_PRODUCER_EPOCH`` one KIP-1228
rejects, ``HandleEndTxn: answers CONCURRENT_TRANSACTIONS`` a client's EndTxn meeting a
transaction still being completed, ``CommitTxnLogAppend: Ongoing -> PrepareAbort; epoch bump;
sends WriteTxnMarkers`` TV2's abort. A step whose branch has none of these parts is its
action's name.

``observed_state``: per transactional.id what DescribeTransactions answers (the coordinator's
cached ``TransactionMetadata``: state, producer id and epoch, partitions; an append in flight
noted), per partition its log as DumpLogSegments lists it with the LSO and high watermark, per
producer instance its ``TransactionManager`` state.
"""
from __future__ import annotations

from collections import Counter

from kafka_mc.model.kafka.partition import entry_of, last_stable_offset
from kafka_mc.model.kafka.world import Control, Rpc, World

NETWORK_FAULTS = ("DelayRequest", "DuplicateRequest", "LoseRequest", "LoseResponse")


def _message(a):
    """The message a delivery or network fault acts on (its first argument), else None."""
    m = a[1] if len(a) > 1 else None
    return m if isinstance(m, tuple) and m and isinstance(m[0], Rpc) else None


def _tid_of(K, w: World, a, m) -> int:
    """The transactional.id the step is about (-1: none)."""
    if a[0] in ("CommitTxnLogAppend", "ExpireTransaction", "ExpireTransactionalId",
                "ForceTerminateTransaction"):
        return a[1]
    if m is not None and "tid" in m._fields:
        return m.tid
    return -1


def _coordinator_parts(w: World, t: World, tid: int, append: bool) -> list[str]:
    out = []
    if tid < 0 or tid >= len(w.coordinator.txns):
        return out
    if append:    # a log append completed: the log's state change
        before, after = w.coordinator.log[tid], t.coordinator.log[tid]
    else:         # a transition begun (an append in flight) or made in the cache
        before, after = w.coordinator.txns[tid], t.coordinator.txns[tid]
        begun = t.coordinator.appends[tid]
        if begun and begun != w.coordinator.appends[tid]:
            after = begun.target
    if after == before:
        return out
    if after.state != before.state or not append:
        out.append(f"{before.state.name} -> {after.state.name}")
    if after.producer_id != before.producer_id and before.producer_id >= 0:
        out.append("new producer id")
    elif after.producer_epoch > before.producer_epoch >= 0:
        out.append("epoch bump")
    return out


def _log_parts(w: World, t: World) -> list[str]:
    out = []
    for k, (before, after) in enumerate(zip(w.partitions, t.partitions)):
        if len(after.log) <= len(before.log):
            continue
        for b in after.log[len(before.log):]:
            if b.control == Control.DATA:
                out.append("batch appended")
                continue
            e = entry_of(before, b.producer_id)
            open_ = e is not None and e.current_txn_first_offset >= 0
            out.append(f"{b.control.name} appended"
                       + (" over an open transaction" if open_ else ", nothing open"))
    return out


def _client_parts(w: World, t: World) -> list[str]:
    return [f"{p.state.name} -> {q.state.name}" for p, q in zip(w.producers, t.producers)
            if p.state != q.state]


def _sent(w: World, t: World, handled) -> list:
    """The messages the step put in flight (new in the network or held back)."""
    new = Counter(t.network) + Counter(t.delayed)
    new.subtract(Counter(w.network) + Counter(w.delayed))
    return [m for m, n in sorted(new.items(), key=lambda kv: repr(kv[0])) if n > 0
            and m is not handled and not getattr(m, "disconnected", False)]


def _would_answer(K, w: World, a, rules) -> list:
    """The answer a late copy's handler gives, which its closed connection drops
    (``network.answer``): the same delivery of the copy as a live request (a marker's copy
    rejected INVALID_PRODUCER_EPOCH is a rejection, not nothing)."""
    rule, m = rules.get(a[0]), a[1]
    if rule is None or m not in w.delayed:
        return []
    live = m._replace(disconnected=False)
    i = w.delayed.index(m)
    w2 = w._replace(delayed=w.delayed[:i] + (live,) + w.delayed[i + 1:])
    return _sent(w2, rule.apply(K, w2, live, True), live)


def classes(K, w: World, a, t: World, rules=None) -> tuple[str, ...]:
    """The coverage class of step ``w --a--> t`` (the module's docstring; ``rules``: the
    model's rules by name, to tell what a late copy's handler answered)."""
    name = a[0]
    m = _message(a)
    parts: list[str] = []
    if name in NETWORK_FAULTS:
        return (f"{name}: {m.rpc.name}" if m is not None else name,)
    if m is not None and name.startswith("Receive"):
        parts.append(m.error.name if "error" in m._fields else "")
    if m is not None and getattr(m, "disconnected", False):
        parts.append("late copy")
    elif m is not None and len(a) > 2 and a[2] is True:
        parts.append("delayed")
    parts += _coordinator_parts(w, t, _tid_of(K, w, a, m), name == "CommitTxnLogAppend")
    parts += _log_parts(w, t)
    parts += _client_parts(w, t)
    sent = _sent(w, t, m)
    if m is not None and getattr(m, "disconnected", False) and rules is not None:
        sent += _would_answer(K, w, a, rules)
    answers = sorted({x.error.name for x in sent if x.rpc & 1 and "error" in x._fields})
    requests = sorted({x.rpc.name for x in sent if not x.rpc & 1})
    parts += [f"answers {e}" for e in answers] + [f"sends {r}" for r in requests]
    parts = [p for p in dict.fromkeys(parts) if p]
    return (f"{name}: {'; '.join(parts)}" if parts else name,)


def observed_state(K, w: World) -> dict[str, str]:
    """``w`` as Kafka's tools show it (the module's docstring)."""
    out: dict[str, str] = {}
    for tid, txn in enumerate(w.coordinator.txns):
        text = (f"{txn.state.name}, producer id {txn.producer_id}, epoch {txn.producer_epoch}, "
                f"partitions {sorted(txn.partitions)}")
        ap = w.coordinator.appends[tid]
        if ap:
            text += f" (an append to {ap.target.state.name} in flight)"
        out[f"DescribeTransactions t{tid}"] = text
    for k, part in enumerate(w.partitions[:K.partitions]):
        log = []
        for offset, b in enumerate(part.log):
            if b.control == Control.DATA:
                r = b.record
                log.append(f"{offset}: data t{r.tid}.i{r.instance}.x{r.txn}.r{r.n} (producer "
                           f"{b.producer_id} epoch {b.producer_epoch} seq {b.base_sequence})")
            else:
                log.append(f"{offset}: {b.control.name} (producer {b.producer_id} epoch "
                           f"{b.producer_epoch}, coordinator epoch {b.coordinator_epoch})")
        out[f"partition {k}"] = (f"log [{', '.join(log)}], LSO {last_stable_offset(part)}, "
                                 f"high watermark {len(part.log)}"
                                 + (", offline" if part.offline else ""))
    for i, p in enumerate(w.producers):
        if p.started:
            out[f"p{i} (t{p.tid}.i{p.instance})"] = (
                f"{p.state.name}, producer id {p.producer_id}, epoch {p.producer_epoch}")
    return out
