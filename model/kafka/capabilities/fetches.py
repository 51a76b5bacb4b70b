"""What a real run's live read_committed consumers tell about the Kafka model (issue 55): their
Fetch answers on the wire and their polls in the client history, mapped to the model's consumers
(``kafka_mc.model.kafka.consumer``). ``observations.py`` asks this module for the observations of
a consumer's events; it holds the rest of the mapping.

Who is a consumer: the harness names its live consumers ``c<N>`` (``kafka_mc.realkafka.consumers``:
the client.id of their requests and the process of their history records), the model's consumer
N; the run's end reader and any other client is not observed here.

A Fetch answer (``ReplicaManager.fetchMessages`` -> ``Partition.fetchRecords`` ->
``readRecords``) is made in two moments: the partition's high watermark and last stable offset
are read first (``initialHighWatermark``, ``initialLastStableOffset``, the values the answer
carries), then the log is read up to the LSO as it is then (``UnifiedLog.read`` with
``FetchIsolation.TXN_COMMITTED``: ``fetchLastStableOffsetMetadata``), with the aborted
transactions of the range from the .txnindex (``LocalLog.addAbortedTransactions``: entries whose
last offset is at or past the fetch offset and whose first offset is below the read's upper
bound, the offset of the first batch *not* read, or the log end). A marker appended in between
(a fetch racing a marker) makes the batches reach past the LSO the answer names. So one answer
per partition is two observations, in this order:

| what | the model |
|---|---|
| the answer's high watermark and LSO (and the fetch offset) | a state: the partition's log has high-watermark entries (the model's high watermark is its log end), its LSO (``partition.last_stable_offset``) is the recorded one, the consumer's position is the fetch offset |
| the batches returned, from the fetch offset to R (the end of the last) | the consumer's ``Fetch(consumer, partition)`` step: its position was the fetch offset, the log's entries [fetch offset, R) are the batches (kind, producer id, epoch, sequence or coordinator epoch), the aborted-transaction index entries overlapping the range and starting below R are the answer's (those starting at or past R are outside what was read: the real upper bound can be past the LSO), and the step leaves the position at R |

An answer with no batches makes no step (the model's Fetch is enabled only below the LSO: the
position was the LSO). An answer with a partition error, and the answers of clients that are no
model consumer, are not observed.

The fetch offset of a partition is the request's, or, in an incremental fetch session (KIP-227,
``FetchSessionHandler``: a partition whose fetch offset did not change is left out of the
request), the last one the client sent to that broker: ``offsets`` follows each consumer's
session per broker (a full request, session epoch 0 or -1, starts it again; forgotten topics
leave it).

What the consumer returned to the application is in the client history: each ``poll`` that
returned records is a state in which, per partition, what the consumer has returned so far (its
polls' records in order, each as the model's ``RecordId`` of the harness's value ``t<T>.i<I>.x<X>.r<N>``
and its offset) is a prefix of what the model's consumer has returned from that partition
(``Consumer.returned``, each record with its offset in the model's log): the model returns a
fetch's records at its step, the real consumer when the application polls. Each ``position``
the consumer reports (the harness asks for them once it caught up, ``LiveConsumers.finish``) is a
state in which what it returned from the partition is exactly what the model's consumer returned
below that offset, and the model's position is at or past it (a fetch answered and not yet
polled). So the broker's side of read_committed (the LSO, the aborted index, the log) is judged
on the wire, the client's (the filtering of ``CompletedFetch``) on what the application got.

Abstractions (``kafka_mc.model.kafka.consumer``): the model's fetch reads everything up to the
LSO in one step; a real fetch cut below the LSO by ``max.partition.fetch.bytes`` (the harness's
records are a few bytes: never met) would not match. The model's high watermark is the log end
(one replica, or the harness's one-replica topics): a replicated partition's lagging high
watermark is a state the model had a few appends before, which the search may pick. The
consumer's close, metadata, ListOffsets and fetch-session bookkeeping are not observed.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Callable, Mapping

from kafka_mc.model.kafka.partition import last_stable_offset
from kafka_mc.model.kafka.world import Control
from kafka_mc.model.observations import Observation, differs, state

CONSUMER = re.compile(r"^c(\d+)$")
VALUE = re.compile(r"^t(\d+)\.i(\d+)\.x(\d+)\.r(\d+)z?$")   # kafka_mc.realkafka.anomalies.record_value
FETCH = "Fetch"
_HISTORY = ("invoke", "ok", "fail", "info")


def consumer_of(name) -> int | None:
    """The model's consumer of a client.id / history process ``c<N>``."""
    m = CONSUMER.match(str(name or ""))
    return int(m.group(1)) if m else None


def record_of(value) -> tuple | None:
    """The model's RecordId (as a tuple) of a record value the harness wrote."""
    m = VALUE.match(str(value or ""))
    return tuple(int(x) for x in m.groups()) if m else None


def _topic(t) -> str:
    return str(t.get("name") or t.get("topic") or t.get("topic_id") or "")


class Fetches:
    """A run's live consumers, read once (``scan``): per Fetch request of a consumer its fetch
    offsets, per history record of a consumer what it had returned by then."""

    def __init__(self):
        self.offsets: dict = {}     # (endpoint, conn, correlation id) -> {(topic, index): offset}
        self.polled: dict = {}      # (process, history index) -> {(topic, index): ((offset, rid), ...)}
        self.position_of: dict = {}  # (process, history index) -> (topic, index) it asked for
        self.any = False            # the run has answers of a model consumer to observe


def scan(events, norm: Callable[[Any], Any]) -> Fetches:
    """The run's consumers' fetch sessions and polls (``norm``: the proxy bodies' normaliser)."""
    out = Fetches()
    sessions: dict = defaultdict(dict)     # (client, endpoint) -> {(topic, index): offset}
    returned: dict = defaultdict(lambda: defaultdict(list))   # process -> (topic, index) -> ...
    asked: dict = {}                        # process -> the args of its last invoke
    for e in events:
        if e.get("type") in _HISTORY and "f" in e:
            process = str(e.get("process"))
            if consumer_of(process) is None:
                continue
            if e.get("type") == "invoke":
                asked[process] = e.get("value") if isinstance(e.get("value"), Mapping) else {}
                continue
            key = (process, e.get("index"))
            if e.get("f") == "poll" and e.get("type") == "ok" and isinstance(e.get("value"), list):
                for r in e["value"]:
                    if isinstance(r, Mapping):
                        returned[process][(str(r.get("topic")), r.get("partition"))].append(
                            (r.get("offset"), record_of(r.get("value")) or r.get("value")))
                out.polled[key] = {tp: tuple(v) for tp, v in returned[process].items()}
            elif e.get("f") == "position" and e.get("type") == "ok":
                a = asked.get(process) or {}
                tp = (str(a.get("topic")), a.get("partition"))
                out.position_of[key] = tp
                out.polled[key] = {tp: tuple(returned[process].get(tp, ()))}
            continue
        if e.get("api") != FETCH or consumer_of(e.get("client_id")) is None:
            continue
        if e.get("direction") == "response" and e.get("action") in ("forwarded", "released"):
            out.any = True
        if e.get("direction") != "request" or e.get("action") not in ("forwarded", "released"):
            continue
        f = norm(e.get("fields") or {})
        session = sessions[(e.get("client_id"), e.get("endpoint"))]
        if f.get("session_epoch", 0) in (0, -1):
            session.clear()
        for t in f.get("forgotten_topics_data") or ():
            for k in t.get("partitions") or ():
                session.pop((_topic(t), k), None)
        for t in f.get("topics") or ():
            for p in t.get("partitions") or ():
                session[(_topic(t), p.get("partition"))] = p.get("fetch_offset")
        out.offsets[(e.get("endpoint"), e.get("conn"), e.get("correlation_id"))] = dict(session)
    return out


# --- the proxy's Fetch answers ---------------------------------------------------------------------

def fetch_observations(K, run, e, f: Mapping):
    """The observations of a Fetch answer of a model consumer (``f``: its normalised body)."""
    c = consumer_of(e.get("client_id"))
    if c is None or e.get("direction") != "response" or e.get("action") not in ("forwarded",
                                                                                  "released"):
        return None
    offsets = run.fetches.offsets.get((e.get("endpoint"), e.get("conn"), e.get("correlation_id")),
                                      {})
    label = (f"Fetch response #{e.get('seq')} (c{c}, conn {e.get('conn')}, correlation "
             f"{e.get('correlation_id')})")
    out = []
    for t in f.get("responses") or ():
        for p in t.get("partitions") or ():
            k = run.partition(_topic(t), p.get("partition_index"))
            if k is None or p.get("error_code"):
                continue
            at = offsets.get((_topic(t), p.get("partition_index")))
            batches = _batches(run, p.get("records") or (), at)
            if at is None and batches:
                at = batches[0][0]
            hw, lso = p.get("high_watermark"), p.get("last_stable_offset")
            where = f"{label} p{k}"
            out.append(Observation(
                f"{where}: high watermark {hw}, LSO {lso}"
                + (f", fetch offset {at}" if at is not None else ""),
                holds=lambda s, k=k, hw=hw, lso=lso, at=at, c=c:
                _offsets_differ(K, s, c, k, hw, lso, at),
                viable=lambda s, k=k, hw=hw, lso=lso, at=at, c=c:
                _not_past(K, s, c, k, hw, lso, at)))
            if batches:
                end = batches[-1][0] + 1
                aborted = tuple(sorted((run.pid(x.get("producer_id")), x.get("first_offset"))
                                       for x in p.get("aborted_transactions") or ()
                                       if isinstance(x, Mapping)
                                       and (x.get("first_offset") or 0) < end))
                log = tuple(entry for _, entry in batches)
                out.append(Observation(
                    f"{where}: offsets {at}..{end - 1}", frozenset((FETCH,)),
                    match=lambda s, a, t2, c=c, k=k, at=at, end=end, log=log, aborted=aborted:
                    _fetch_differs(K, s, a, t2, c, k, at, end, log, aborted),
                    viable=lambda s, k=k, end=end, at=at, c=c:
                    _not_past(K, s, c, k, None, end, at)))
    return out or None


def _batches(run, records, at) -> list[tuple[int, tuple]]:
    """(offset, the model's log entry) of each record of the answer's batches at or past the
    fetch offset (a batch of n records is n entries, as the model writes one record a batch)."""
    out = []
    for b in records:
        if not isinstance(b, Mapping) or b.get("truncated") or "producer_id" not in b:
            continue
        pid = run.pid(b.get("producer_id"))
        if b.get("control"):
            control = Control.__members__.get(str(b.get("control_type")),
                                              str(b.get("control_type")))
            cepoch = b.get("coordinator_epoch", -1)
            entry = (control, pid, b.get("producer_epoch"),
                     run.coordinator_epochs.get(cepoch, cepoch))
        else:
            entry = (Control.DATA, pid, b.get("producer_epoch"), b.get("base_sequence"))
        base = int(b.get("base_offset", 0))
        for n in range(int(b.get("last_offset_delta") or 0) + 1):
            if at is None or base + n >= at:
                out.append((base + n, entry))
    return out


def _model_entry(b) -> tuple:
    if b.control == Control.DATA:
        return (Control.DATA, b.producer_id, b.producer_epoch, b.base_sequence)
    return (b.control, b.producer_id, b.producer_epoch, b.coordinator_epoch)


def _no_consumer(K, s, c, k) -> str | None:
    if not 0 <= c < len(s.consumers):
        return f"consumer c{c}: the model has {len(s.consumers)}"
    if not 0 <= k < K.partitions:
        return f"partition {k}: the model has {K.partitions}"
    return None


def _offsets_differ(K, s, c, k, hw, lso, at) -> str | None:
    missing = _no_consumer(K, s, c, k)
    if missing:
        return missing
    part = s.partitions[k]
    want: dict = {"high_watermark": hw}
    if lso is not None and lso >= 0:
        want["last_stable_offset"] = lso
    if at is not None:
        want["position"] = at
    return differs(want, {"high_watermark": len(part.log),
                          "last_stable_offset": last_stable_offset(part),
                          "position": s.consumers[c].positions[k]})


def _not_past(K, s, c, k, hw, lso, at) -> bool:
    """Whether a state can still come to the answer's: a partition's log (its high watermark)
    and its LSO only grow, and so does a consumer's position, so a state already past the
    recorded ones never will (the validator drops it)."""
    if _no_consumer(K, s, c, k):
        return True
    part = s.partitions[k]
    return ((hw is None or len(part.log) <= hw)
            and (lso is None or lso < 0 or last_stable_offset(part) <= lso)
            and (at is None or s.consumers[c].positions[k] <= at))


def _fetch_differs(K, s, a, t, c, k, at, end, log, aborted) -> str | None:
    if a[1:] != (c, k):
        return f"Fetch(consumer={a[1]}, partition={a[2]}), not of c{c} p{k}"
    part = s.partitions[k]
    got = {"position": s.consumers[c].positions[k], "fetched up to": t.consumers[c].positions[k],
           "batches": tuple(_model_entry(b) for b in part.log[at:end]),
           "aborted transactions": tuple(sorted(
               (x.producer_id, x.first_offset) for x in part.aborted
               if x.last_offset >= at and x.first_offset < end))}
    return differs({"position": at, "fetched up to": end, "batches": log,
                    "aborted transactions": aborted}, got)


# --- the consumers' polls -----------------------------------------------------------------------

def history_observation(K, run, e):
    """A consumer's poll that returned records, or a position it reported: a state of the model's
    consumer (module docstring)."""
    process = str(e.get("process"))
    c = consumer_of(process)
    key = (process, e.get("index"))
    if c is None or e.get("type") != "ok" or key not in run.fetches.polled:
        return None
    polled = run.fetches.polled[key]
    label = f"history #{e.get('index')}: {process} ok {e.get('f')}"
    if e.get("f") == "position":
        tp = run.fetches.position_of[key]
        k = run.partition(*tp)
        if k is None:
            return None
        position = e.get("value")
        return state(f"{label} p{k} = {position}",
                     lambda s: _position_differs(K, s, c, k, position, polled[tp]))
    if not e.get("value"):
        return None
    parts = {run.partition(*tp): v for tp, v in polled.items() if run.partition(*tp) is not None}
    return state(label, lambda s: _polls_differ(K, s, c, parts))


def returned_by_partition(K, s, c) -> dict:
    """partition -> [(offset, RecordId as a tuple)] of what the model's consumer c returned, in
    order (each record at its first offset in its partition's log)."""
    where = {}
    for k in range(K.partitions):
        for offset, b in enumerate(s.partitions[k].log):
            if b.control == Control.DATA:
                where.setdefault(b.record, (k, offset))
    out: dict = defaultdict(list)
    for r in s.consumers[c].returned:
        k, offset = where.get(r, (None, None))
        out[k].append((offset, tuple(r)))
    return out


def _polls_differ(K, s, c, parts) -> str | None:
    if not 0 <= c < len(s.consumers):
        return f"consumer c{c}: the model has {len(s.consumers)}"
    model = returned_by_partition(K, s, c)
    for k, real in sorted(parts.items()):
        if tuple(model.get(k, ())[:len(real)]) != tuple(real):
            return (f"c{c} p{k} returned (offset, record) {list(real)}; the model's consumer "
                    f"{list(model.get(k, ()))}")
    return None


def _position_differs(K, s, c, k, position, real) -> str | None:
    missing = _no_consumer(K, s, c, k)
    if missing:
        return missing
    below = tuple(x for x in returned_by_partition(K, s, c).get(k, ()) if x[0] < position)
    if below != tuple(real):
        return (f"c{c} p{k} returned (offset, record) {list(real)} below position {position}; "
                f"the model's consumer {list(below)}")
    if s.consumers[c].positions[k] < position:
        return f"c{c} p{k} position: recorded {position}, model {s.consumers[c].positions[k]}"
    return None
