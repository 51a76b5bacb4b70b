"""What a recorded run of real Kafka tells about the Kafka model (issue 43): the mapping of the
recording proxy's events (``realkafka/proxy.py``) and the Java client's history
(``realkafka/client.py``) to the model's actions, rule by rule (``kafka_mc.model.observations``).

Where a request is seen. The proxy sits on the wire between the sender's ``Send<Rpc>`` (the
client, or the coordinator's marker channel, or a leader's AddPartitionsToTxnManager, putting
the request on its connection) and the receiver's ``Handle<Rpc>``. The choice here: a request the
proxy *forwards* (or releases, or delivers as a duplicate's copy) is the receiver's
``Handle<Rpc>`` -- it is on its way to the broker and nothing else happens to it -- and the
sender's ``Send<Rpc>`` is silent, placed by the search anywhere before it (the request's fields
pin the message the model sent). A response the proxy forwards is the sender's
``Receive<Rpc>Response`` (a client) or ``Handle<Rpc>Response`` (the coordinator receiving a
marker's answer, a leader a verification's), and the reply the model's handler (or the
transaction-log append completing, ``CommitTxnLogAppend``) put in flight must have the recorded
error and producer id and epoch. So the request event constrains the message's fields (producer
id, epoch, transactional.id, partitions, transaction result, sequence), the response event the
handler's answer (error code, the producer id and epoch it returns). Why not the request event as
``Send``: the proxy's log across connections is not the brokers' handling order anyway, and a
``Send`` pinned to the event would leave the ``Handle`` unobserved, so a broker handling a request
twice or never would go unseen.

One event stream per proxy connection (``endpoint``, ``conn``: requests and responses of one TCP
connection in their order; a broker reads one request of a connection at a time and answers in
order, the client matches answers in order) and one per client process of the history.

| event | model action |
|---|---|
| InitProducerId request, CLIENT | ``HandleInitProducerId``: transactional.id, producer id and epoch (-1 for initTransactions, the current ones for a KIP-360 bump) |
| AddPartitionsToTxn v0-3 request, CLIENT (TV1) | ``HandleAddPartitionsToTxn``: transactional.id, producer id, epoch, partitions |
| Produce request, CLIENT | ``HandleProduce``, one per partition: producer id, epoch, base sequence |
| EndTxn request, CLIENT | ``HandleEndTxn``: transactional.id, producer id, epoch, committed |
| AddPartitionsToTxn v4+ request, INTERNAL | ``HandleVerifyAddPartition``, one per partition: transactional.id, producer id, epoch, verify_only |
| WriteTxnMarkers request, INTERNAL | ``HandleWriteTxnMarkers``, one per partition: producer id, epoch, result, coordinator epoch |
| a response, CLIENT | ``Receive<Rpc>Response``: error (InitProducerId, EndTxn v5: producer id and epoch; a Produce answered NONE may be the model's DUPLICATE_SEQUENCE_NUMBER, as Kafka answers a duplicate batch) |
| WriteTxnMarkers response, INTERNAL | ``HandleWriteTxnMarkersResponse``, per partition: error |
| AddPartitionsToTxn v4+ response, INTERNAL | ``HandleVerifyAddPartitionResponse`` or (a TV2 leader past its retry time, answering the produce CONCURRENT_TRANSACTIONS) ``ExpireVerificationRetry``, per partition: error |
| a request the proxy ``held`` (fault hold / duplicate) | ``DelayRequest`` / ``DuplicateRequest`` of that message, or nothing (nothing overtook it) |
| a request ``dropped`` by a fault | ``LoseRequest`` of its (first) message; a frame's further messages (the markers of a second partition) lost too or still in flight for the sender's resent frame (one fault, one loss in the model) |
| a response ``dropped`` by a fault | ``LoseResponse`` likewise |
| a response dropped for want of its client (a duplicate's copy, a held request released after its client left) | nothing, or ``LoseResponse`` |
| a request left unanswered when its connection closed (a killed broker, a client's request timeout), or a Produce / WriteTxnMarkers partition answered NOT_LEADER_OR_FOLLOWER (a leader that stopped leading: a controlled shutdown), or a Produce partition answered NOT_ENOUGH_REPLICAS for want of a coordinator to verify it with (no AddPartitionsToTxn sent), and that answer | ``LoseRequest``, or handled and its answer lost (``LoseResponse``, or taken by a sender no longer waiting for it); the answer is not observed (``lost_in_flight``, ``not_leader_answers``, ``coordinator_not_found_answers``) |
| a coordinator request answered COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE, and that answer | not observed: the coordinator was not loaded yet (after a broker start); the model's is loaded from the start, the client retries |
| a Fetch answer to a live consumer ``c<N>`` (issue 55, ``fetches.py``) | per partition: a state (its high watermark, LSO, the consumer's position at the fetch offset), then, when it returned batches, the consumer's ``Fetch`` step (the log's entries from the fetch offset to the batches' end, the aborted transactions overlapping them, the position left there) |
| ``queued`` frames, connection events, other APIs (ApiVersions, Metadata, FindCoordinator, ListOffsets, Describe*), the Fetch of any other client (the run's end reader) | not observed |
| history: invoke initTransactions / beginTransaction / send(partition) / commitTransaction / abortTransaction | ``InitTransactions`` / ``BeginTransaction`` / ``Send`` / ``CommitTransaction`` / ``AbortTransaction`` of the process's producer instance (a call that fails at once, in an error state, may be no step) |
| history: ok of initTransactions / beginTransaction / commitTransaction / abortTransaction | the instance's state there: READY / IN_TRANSACTION / READY having committed / READY having aborted |
| history: fail (but a timeout) | the instance is in ABORTABLE_ERROR or FATAL_ERROR there |
| history: ok poll (records returned) / ok position of a live consumer ``c<N>`` | a state: what it returned so far from each partition (records and offsets) is a prefix of what the model's consumer returned from it / exactly what it returned below that position (``fetches.py``) |
| history: ok send, info, a timeout, other processes (the end reader, admin) | not observed |
| the end state (``type`` ``end_state``: what the harness read once the run had settled) | the model's state after every other event, silent steps allowed: per transactional.id DescribeTransactions' state, producer id and epoch; per partition its log (each batch and marker: kind, producer id, epoch, sequence or coordinator epoch), DescribeProducers' entries, whether its LSO is below its high watermark |

Silent (nothing records them): the client's ``Send<Rpc>`` and ``CompleteTransaction`` (its
queue), ``CommitTxnLogAppend`` (a transaction-log append completing inside the coordinator's
broker), the coordinator's timers and elections (``ExpireTransaction``, ``ElectCoordinator``,
``BounceCoordinator``: the harness's hard failover is the one or, where the preset has
``coordinator_bounce_keeps_epoch`` (KRaft), the other, its markers resent at the same
coordinator epoch (on 4.x the bounce, then the failover: two in the budget), ``ExpireTransactionalId``), a partition's leader lost and elected again
(``PartitionOffline``, ``ElectLeader``: a broker killed and started by the harness, not a
request), ``CrashProducer`` (the application abandons an instance: seen only as
the next instance's calls), ``ExpireBatch``, ``LoseProducerState``, the consume-transform-produce
calls; and the application's calls when the run has no client history. Skipped, in a run
without live consumers: the model's readers' ``Fetch`` (they change only the readers, which no
rule reads; the run's end reader is judged by the anomaly checks, not here); a run with them
observes each of their fetches (``fetches.py``).

Real identifiers: transactional.ids are the model's by their ``-t<N>`` suffix (``kafka_mc.realkafka.run``
names them ``kmc-<run>-t<N>``), else in order of first appearance; producer instances by their
client.id / history process ``t<N>.i<M>`` (instance M of transactional.id N), else any instance of
the request's transactional.id; producer ids numbered in increasing order (the coordinator
allocates them increasingly, as the model does: 0, 1, ...); epochs as they are; coordinator
epochs (markers) in increasing order; data partitions by (topic, index) in order, internal
topics (``__consumer_offsets``) left out; a topic named by its id (Produce v13+, Kafka 4.x) is the
run's one data topic (the proxy does not decode Metadata, which pairs ids and names).

What it cannot see: appends inside a broker (the transaction log's and a partition's: only their
effect on later answers), timers, the client's internal queue and retries that never reach the
wire, FindCoordinator (folded into sending in the model), a batch of several records (the model
has one record per batch: such a Produce is matched on its base sequence only), a connection
closed by a fault failing the other requests in flight on it (the model loses one message per
fault), a body that failed to decode (``decode_error``: not observed), the end reader's Fetch
(the anomaly checks judge what it read; the live consumers' fetches are observed: they catch
the consumer mutants, docs/conformance.md).

One batch in flight: the harness's producers keep Kafka's default
max.in.flight.requests.per.connection (5) but send one record at a time (a blocking send:
``kafka_mc.realkafka.run``), so a run has one batch in flight at a time, which is the model's
default (``workload.max_in_flight`` = 1; ``kafka-mc real run`` and ``real reproduce`` refuse
more). The mapping itself does not count on it: a Produce is matched on its partition, producer
id, epoch and base sequence, whatever else is in flight.

Accepted abstractions, met on real runs (issue 43 item 4): a coordinator request answered
COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE right after a broker starts (not
observed: the model's coordinator is loaded from the start); a duplicate batch answered NONE (the
model's DUPLICATE_SEQUENCE_NUMBER). Found and fixed in the model (tests/model/
test_kafka_observations.py, conformance_runs/kafka-4.4.0-produce-concurrent): Kafka 4.x's leader
retries a TV2 verification answered CONCURRENT_TRANSACTIONS for a bounded time
(ReplicaManager.handleProduceAppend, KAFKA-18654) and then answers the Produce
CONCURRENT_TRANSACTIONS, which the client retries (Sender.canRetry); the model's leader retried
without end and its client failed such a batch; now the leader may take the answer either way
(``ExpireVerificationRetry``) and the client retries.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from kafka_mc.model.kafka.capabilities import fetches
from kafka_mc.model.kafka.network import Rpc
from kafka_mc.model.kafka.world import ClientState as C, Control, Errors, Outcome, TxnState
from kafka_mc.model.observations import (Observation, Observations, differs, either, end,
                                         in_order, state, step)

# --- normalising the proxy's decoded bodies ---------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def norm(value: Any) -> Any:
    """Field names as kio writes them (snake_case), whatever wrote them: Kafka's JSON schema
    names (``TransactionalId``, ``transactionalId``) become ``transactional_id``; kio's
    ``v3_and_below_`` prefixes (AddPartitionsToTxn v0-3) are dropped."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            k = _CAMEL.sub(r"_\1", str(k)).lower()
            if k.startswith("v3_and_below_"):
                k = k[len("v3_and_below_"):]
            out[k] = norm(v)
        return out
    if isinstance(value, list):
        return [norm(v) for v in value]
    return value


def _error(code_or_name) -> Errors | str:
    """A Kafka error, by its name, as the model's ``Errors`` member (its numbering is its own,
    so never by code); one the model does not have stays its name, and matches nothing."""
    if isinstance(code_or_name, str):
        return Errors.__members__.get(code_or_name, code_or_name)
    return Errors.NONE if not code_or_name else f"error code {code_or_name}"


class OneOf:
    """A recorded value the model may give as any of several (``differs`` compares with ==)."""

    def __init__(self, *values):
        self.values = values
        self.name = " or ".join(getattr(v, "name", repr(v)) for v in values)

    def __eq__(self, other):
        return other in self.values

    def __ne__(self, other):
        return other not in self.values

    __hash__ = None


def _produce_error(error):
    """A produce answered NONE may be the model's DUPLICATE_SEQUENCE_NUMBER: Kafka answers a
    duplicate batch (a retry of one already appended, ProducerStateManager's batch metadata)
    with NONE and the first append's offset (UnifiedLog.append: ``appendInfo`` of the
    duplicate); the model names the case, and the client's Sender.completeBatch takes both as
    success (accepted abstraction, issue 43 item 4)."""
    return OneOf(Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER) if error == Errors.NONE else error


def _api(e) -> str:
    return str(e.get("api") or "")


def _internal(e) -> bool:
    return str(e.get("endpoint", "")).upper().endswith("/INTERNAL")


def _verification(fields) -> bool:
    """AddPartitionsToTxn in its v4+ form (a leader's verification, or the implicit add)."""
    return "transactions" in fields


def _topic(t) -> str:
    return str(t.get("name") or t.get("topic") or t.get("topic_id") or "")


def _errors_by_name(e) -> dict[str, str]:
    """path -> error name, from the proxy's ``errors`` list."""
    return {str(x.get("path", "")): str(x.get("name", "")) for x in e.get("errors") or ()}


# --- the run's identifiers ------------------------------------------------------------------------

_TID = re.compile(r"t(\d+)$")
# The APIs observed (the rest: ApiVersions, Metadata, FindCoordinator, Fetch, ListOffsets, the
# admin's Describe*, are not)
APIS = ("InitProducerId", "AddPartitionsToTxn", "Produce", "EndTxn", "WriteTxnMarkers")
# The transaction coordinator's client APIs, and the errors they answer while no coordinator is
# loaded for the transactional.id's __transaction_state partition (TransactionCoordinator: the
# partition is being loaded, or has no leader yet, right after a broker starts); the client
# retries (TxnRequestHandler: retriable). The model's coordinator is loaded from the start, so
# such a request and its answer are not observed (accepted abstraction, issue 43 item 4).
COORDINATOR_APIS = ("InitProducerId", "AddPartitionsToTxn", "EndTxn")
NOT_LOADED = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE")
_INSTANCE = re.compile(r"t(\d+)\.i(\d+)$")
_HISTORY_TYPES = ("invoke", "ok", "fail", "info")


class _Run:
    """The real identifiers of a run, renamed to the model's (see the module docstring)."""

    def __init__(self, K, events):
        self.K = K
        pids, coordinator_epochs, tids, partitions = set(), set(), {}, set()
        names, ids = {}, {}           # topic names and topic ids, in order of appearance
        self.requests: dict = {}      # (endpoint, conn, correlation id) -> the request's fields
        self.not_loaded: set = set()  # ... of requests answered "no coordinator loaded yet"
        self.died = lost_in_flight(events)   # ... of requests whose connection closed first
        # ... -> partitions answered not leader, or unverified for want of a coordinator
        self.not_leader = not_leader_answers(events)
        for key, parts in coordinator_not_found_answers(events).items():
            self.not_leader[key] = parts | self.not_leader.get(key, frozenset())
        self.history = False
        self.fetches = fetches.scan(events, norm)     # the live consumers' sessions and polls
        for e in events:
            if e.get("type") in _HISTORY_TYPES and "f" in e:
                self.history = True
                v = e.get("value")
                if isinstance(v, Mapping) and v.get("topic") is not None and str(e.get(
                        "f", "")).replace("_", "").lower() == "send":
                    partitions.add((str(v["topic"]), int(v.get("partition") or 0)))
                    names.setdefault(str(v["topic"]), len(names))
                continue
            if _api(e) == fetches.FETCH and e.get("direction") == "request" and \
                    fetches.consumer_of(e.get("client_id")) is not None:
                for t in norm(e.get("fields") or {}).get("topics") or ():
                    if t.get("name") or t.get("topic"):    # a live consumer's partitions
                        names.setdefault(_topic(t), len(names))
                        partitions.update((_topic(t), p.get("partition"))
                                          for p in t.get("partitions") or ())
            if e.get("direction") not in ("request", "response") or _api(e) not in APIS:
                continue
            f = norm(e.get("fields") or {})
            key = (e.get("endpoint"), e.get("conn"), e.get("correlation_id"))
            if e.get("direction") == "request" and e.get("action") not in ("released",
                                                                              "duplicated-copy",
                                                                              "dropped"):
                self.requests.setdefault(key, (e, f))
            elif e.get("direction") == "response" and _api(e) in COORDINATOR_APIS and any(
                    x.get("name") in NOT_LOADED for x in e.get("errors") or ()):
                self.not_loaded.add(key)
            for tid in _values(f, "transactional_id"):
                if isinstance(tid, str):
                    tids.setdefault(tid, len(tids))
            pids.update(p for p in _values(f, "producer_id") if isinstance(p, int))
            coordinator_epochs.update(c for c in _values(f, "coordinator_epoch")
                                      if isinstance(c, int))
            for t in _topics(f):
                name = _topic(t)
                (names if t.get("name") or t.get("topic") else ids).setdefault(name, len(ids))
                partitions.update((name, k) for k in _partition_indexes(t)
                                  if isinstance(k, int) and not isinstance(k, bool))
        self.pids = in_order(pids)
        self.coordinator_epochs = in_order(coordinator_epochs)
        self.tids = {}
        for tid, first in tids.items():
            m = _TID.search(tid)
            self.tids[tid] = int(m.group(1)) if m else first
        # Produce v13+ (4.x) names topics by id; the proxy does not decode Metadata, so an id is
        # the run's one data topic, or (several) the topic named in the same order of appearance
        data_names = [n for n in names if not n.startswith("__")]
        self.topic_ids = {i: (data_names[0] if len(data_names) == 1 else
                              data_names[n] if n < len(data_names) else i)
                          for i, n in ids.items()}
        data = sorted({(self.topic_ids.get(n, n), k) for n, k in partitions
                       if n and not self.topic_ids.get(n, n).startswith("__")})
        self.partitions = {p: i for i, p in enumerate(data)}

    def partition_index(self, index) -> int | None:
        """The model's partition of the run's data topic's partition ``index`` (the end state
        names partitions by index alone: the run has one data topic)."""
        try:
            index = int(index)
        except (TypeError, ValueError):
            return None
        found = {i for (name, k), i in self.partitions.items() if k == index}
        return found.pop() if len(found) == 1 else None

    def pid(self, real):
        return self.pids.get(real, real) if isinstance(real, int) else real

    def partition(self, topic, index):
        return self.partitions.get((self.topic_ids.get(topic, topic), index))

    def instance(self, name) -> int | None:
        """The model's producer instance of a client.id / history process ``t<N>.i<M>``."""
        m = _INSTANCE.search(str(name or ""))
        if not m:
            return None
        tid, inst = int(m.group(1)), int(m.group(2))
        if tid >= self.K.tids or inst >= self.K.producers_per_id:
            return -2       # an instance the model does not have: matches nothing
        return tid * self.K.producers_per_id + inst


def lost_in_flight(events) -> frozenset:
    """(endpoint, conn, correlation id) of every observed request the proxy forwarded that was
    never answered because its connection closed first: the broker closed it (a killed broker,
    ``kafka_mc.realkafka.run``'s hard failover or an outage) or the client did (its request
    timed out: NetworkClient.handleTimedOutRequests disconnects, as when a killed replica holds
    an append in the ISR until replica.lag.time.max.ms). The sender sees the request fail
    (disconnected; a client's Sender and TxnRequestHandler, the coordinator's marker channel,
    retry on a new connection) and a killed broker's restart forgot whatever the request
    started in memory (a verification and its guard, a callback waiting for an append); a live
    broker may still handle it, its answer going nowhere. So the model sees it as lost:
    ``LoseRequest`` (or handled, and its answer lost: ``LoseResponse``), and a run's budgets
    allow one of each per such request (``kafka_mc.realkafka.losses.unanswered_at_close`` finds
    the same requests for ``kafka-mc real conform``; the model does not import the harness,
    tests/model/test_kafka_observations.py holds the two equal). Abstraction: the model's
    failover moves the coordinator alone and its leaders never go away; what dies with a killed
    broker or a timed-out connection is what was in flight, which the model has as losses. A
    connection the proxy closes (a fault of the plan) is not counted here: the plan's budgets
    hold it."""
    pending: dict = {}      # (endpoint, conn) -> the keys of its requests not answered yet
    died = set()
    for e in events:
        conn = (e.get("endpoint"), e.get("conn"))
        direction = e.get("direction")
        if direction == "connection" and e.get("action") == "closed":
            if e.get("by") in ("broker", "client"):
                died.update(pending.get(conn, ()))
            pending.pop(conn, None)
        elif direction == "request" and _api(e) in APIS and e.get("action") == "forwarded":
            pending.setdefault(conn, set()).add(conn + (e.get("correlation_id"),))
        elif direction == "response":
            pending.get(conn, set()).discard(conn + (e.get("correlation_id"),))
    return frozenset(died)


# The answer of a leader that has stopped leading (a controlled shutdown moved its partitions
# away, or a restart): the request had no effect and its sender retries it after a metadata
# refresh. Its code (Kafka's Errors.NOT_LEADER_OR_FOLLOWER), since the answers are read from
# their decoded bodies
NOT_LEADER_OR_FOLLOWER = 6


def not_leader_answers(events) -> dict:
    """(endpoint, conn, correlation id) -> the (topic, partition index) pairs a Produce or
    WriteTxnMarkers answer names NOT_LEADER_OR_FOLLOWER: a leader that stopped leading while
    they were in flight (one broker's controlled shutdown, the harness's soft failover:
    ReplicaManager.applyDelta makes it a follower, its delayed produces and pending
    verification callbacks complete with NOT_LEADER_OR_FOLLOWER, appendRecordsToLeader and
    the marker appends throw NotLeaderOrFollowerException). Nothing was appended; the sender
    retries on the new leader: the client's Sender.completeBatch (an InvalidMetadataException:
    reenqueueBatch, metadata refreshed), the coordinator's
    TransactionMarkerRequestCompletionHandler.onComplete (``retryAppends``, re-enqueued while the
    coordinator epoch is unchanged). Abstraction: the model's leaders never stop leading between
    its steps with a request in flight (``partition.partition_offline_enabled``), so such a
    message is, to the model, lost like one that died with its broker (``lost_in_flight``):
    ``LoseRequest``, or handled (what the leader began, a verification) and its answer lost;
    the answer itself is not observed. ``kafka_mc.realkafka.losses.answered_not_leader`` counts
    the same messages for the budgets (tests/model/test_kafka_observations.py holds the two
    equal)."""
    return _answered_partitions(events, ("Produce", "WriteTxnMarkers"),
                                lambda p: p.get("error_code") == NOT_LEADER_OR_FOLLOWER)


def _answered_partitions(events, apis, accept) -> dict:
    """(endpoint, conn, correlation id) -> the (topic, partition index) pairs of a delivered
    answer of ``apis`` whose partition result ``accept`` takes."""
    out: dict = {}
    for e in events:
        if e.get("direction") != "response" or _api(e) not in apis \
                or e.get("action") not in ("forwarded", "released"):
            continue
        f = norm(e.get("fields") or {})
        parts = set()
        for t in _topics(f):
            for p in (t.get("partition_responses") or ()) if _api(e) == "Produce" else (
                    t.get("partitions") or ()):
                if isinstance(p, Mapping) and accept(p):
                    parts.add((_topic(t), p.get("index", p.get("partition_index"))))
        if parts:
            key = (e.get("endpoint"), e.get("conn"), e.get("correlation_id"))
            out[key] = frozenset(parts) | out.get(key, frozenset())
    return out


# The answer of a leader whose AddPartitionsToTxnManager found no transaction coordinator to
# verify a batch with: ReplicaManager's postVerificationCallback turns the local
# COORDINATOR_NOT_AVAILABLE into NOT_ENOUGH_REPLICAS (Kafka's Errors code 19) with this message
NOT_ENOUGH_REPLICAS = 19
NO_COORDINATOR_TO_VERIFY = "Underlying error: COORDINATOR_NOT_AVAILABLE"


def coordinator_not_found_answers(events) -> dict:
    """(endpoint, conn, correlation id) -> the (topic, partition index) pairs a Produce answer
    names NOT_ENOUGH_REPLICAS "Unable to verify the partition has been added to the
    transaction. Underlying error: COORDINATOR_NOT_AVAILABLE": the leader started the batch's
    verification (its guard: UnifiedLog.maybeStartTransactionVerification) but found no leader
    for the transactional.id's ``__transaction_state`` partition in its metadata cache, so it
    sent no AddPartitionsToTxn and answered at once (AddPartitionsToTxnManager.verifyTransaction:
    ``getTransactionCoordinator`` empty -> the callback gets COORDINATOR_NOT_AVAILABLE, 3.7 to
    4.4; 3.6: ReplicaManager.appendRecords' own ``getTransactionCoordinator``), which
    ReplicaManager converts to NOT_ENOUGH_REPLICAS (the retriable errors it converts: 3.6
    CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR; from 3.7 NETWORK_EXCEPTION too; from 4.0 CONCURRENT_TRANSACTIONS only for a
    TV1 request). Nothing was appended and the client retries the batch (Sender.canRetry:
    NotEnoughReplicasException is retriable). Met on one broker's controlled shutdown (the
    harness's soft failover, conformance #18: the broker's metadata cache had the
    ``__transaction_state`` partition leaderless before ReplicaManager stopped it leading the data
    partition). Abstraction: the model's coordinator is never without a leader (a failover is
    one step, ``coordinator.elect_coordinator``, as for the coordinator requests answered
    COORDINATOR_NOT_AVAILABLE, ``NOT_LOADED``), so such a batch is, to the model, lost like one
    answered NOT_LEADER_OR_FOLLOWER (``not_leader_answers``): ``LoseRequest`` (the client resends
    it), or handled and its answer lost, the answer itself not observed. The guard the leader
    kept is not the model's: a retry reuses it or makes a new one alike, and a marker clears it
    either way (a restart, here, drops it with the process). A verification the coordinator
    itself answered COORDINATOR_NOT_AVAILABLE is on the wire (the INTERNAL listener) and stays
    observed. ``kafka_mc.realkafka.losses.answered_without_coordinator`` counts the same
    partitions for the budgets (tests/model/test_kafka_observations.py holds the two equal)."""
    return _answered_partitions(
        events, ("Produce",), lambda p: p.get("error_code") == NOT_ENOUGH_REPLICAS
        and NO_COORDINATOR_TO_VERIFY in str(p.get("error_message") or ""))


def _values(x, key):
    """Every value of ``key`` anywhere in a normalised body."""
    if isinstance(x, Mapping):
        for k, v in x.items():
            if k == key:
                yield v
            else:
                yield from _values(v, key)
    elif isinstance(x, list):
        for v in x:
            yield from _values(v, key)


def _topics(f):
    """Every topic entry (a dict with a name and partitions) in a normalised body."""
    for key in ("topics", "topic_data", "responses", "topic_results", "results_by_topic"):
        for t in f.get(key) or ():
            if isinstance(t, Mapping):
                yield t
    for group in ("markers", "transactions", "results_by_transaction"):
        for x in f.get(group) or ():
            if isinstance(x, Mapping):
                yield from _topics(x)


def _partition_indexes(t):
    for key in ("partitions", "partition_indexes"):
        for p in t.get(key) or ():
            yield p if isinstance(p, int) else p.get("partition_index", p.get("index"))
    for key in ("partition_data", "partition_responses", "results_by_partition"):
        for p in t.get(key) or ():
            yield p.get("index", p.get("partition_index"))


# --- matching a model step ------------------------------------------------------------------------

_MISSING = object()


def _get(s, m, name):
    """A field of the model's message ``m`` in state ``s``, by the name the observation uses."""
    if name == "tid":
        if hasattr(m, "tid"):
            return m.tid
        if hasattr(m, "producer") and 0 <= m.producer < len(s.producers):
            return s.producers[m.producer].tid
        return _MISSING
    for source in (m, getattr(m, "request", None), getattr(m, "produce", None)):
        if source is not None and hasattr(source, name):
            return getattr(source, name)
    return _MISSING


def _message(rpcs: tuple, fields: dict):
    """``match(s, a, t)`` of a step whose first argument is a message of one of ``rpcs`` with
    ``fields``."""
    def match(s, a, t):
        m = a[1] if len(a) > 1 else None
        if getattr(m, "rpc", None) not in rpcs:
            return f"a {Rpc(rpcs[0]).name}, not {type(m).__name__}"
        return differs(fields, lambda k: _get(s, m, k))
    return match


def _as_producer(rpcs, fields, instance):
    """As ``_message``, and (when the event names it) of that producer instance."""
    if instance is not None:
        fields = {**fields, "producer": instance}
    return _message(rpcs, fields)


REQUEST_FAULTS = ("DelayRequest", "DuplicateRequest")
# The request fields an answer carries (itself, or in the request it names) that the mapping
# compares when the answer is lost with a killed broker: its own producer id and epoch are the
# bumped ones for some (EndTxn v5, InitProducerId), so only these
_ANSWERED = {Rpc.Produce: ("partition", "producer_id", "producer_epoch", "base_sequence"),
             Rpc.WriteTxnMarkers: ("partition", "producer_id", "producer_epoch", "committed"),
             Rpc.VerifyAddPartition: ("partition",)}


# The rules that take a request's answer at its sender
_ANSWER_RULES = {Rpc.Produce: ("ReceiveProduceResponse",),
                 Rpc.WriteTxnMarkers: ("HandleWriteTxnMarkersResponse",),
                 Rpc.VerifyAddPartition: ("HandleVerifyAddPartitionResponse",)}


def _lost_answer(match):
    """``match`` of an answer that died with its broker: the model loses it (``LoseResponse``)
    or its sender takes it as one it no longer waits for, changing nothing but the network (a
    marker's answer reaching the coordinator after a failover:
    TransactionMarkerRequestCompletionHandler drops it): the answer reaching nobody, taken
    after the failover. The model's loss of a marker's answer resends the marker at once while
    its coordinator epoch is current (``coordinator.marker_timed_out``); after the failover it
    resends nothing (conformance #12), as the drop does, which spends no budget."""
    def lost(s, a, t):
        why = match(s, a, t)
        if why is not None or a[0] == "LoseResponse":
            return why
        if t._replace(network=s.network, delayed=s.delayed) != s:
            return f"{a[0]} changed the state: its sender still waited for the answer"
        return None
    return lost


def _request(label, action: str, rpc: Rpc, fields: dict, e, instance=None, first=True,
             died=False):
    """The observation of a request event by the proxy's ``action`` (``first``: of the model's
    messages the frame carries, the first; ``died``: its broker died before answering it)."""
    match = _as_producer((rpc,), fields, instance)
    what = e.get("action") or "forwarded"
    fault = (e.get("fault") or {}).get("kind") if isinstance(e.get("fault"), Mapping) else None
    if what == "forwarded" and died:
        # lost with its broker, or handled and its answer lost (when it has one yet): lost,
        # or, once no sender waits for it, dropped by the one it reaches
        answer = {k: v for k, v in fields.items() if k in _ANSWERED.get(rpc, ())}
        return [step(label + " (its broker died)", (action, "LoseRequest"), match),
                either(label + " (its answer lost with the broker)",
                       ("LoseResponse", *_ANSWER_RULES.get(rpc, ())),
                       _lost_answer(_as_producer((rpc + 1,), answer, instance)))]
    if what in ("forwarded", "released", "duplicated-copy"):
        return step(label, (action,), match)
    if what == "held":
        return either(label + " held", REQUEST_FAULTS, match)
    if what == "dropped" and fault == "drop":
        # one fault, one loss in the model: a frame's first message is lost; the others (the
        # markers of a second partition) may stay in flight, for the sender's resent frame
        return (step if first else either)(label + " dropped", ("LoseRequest",), match)
    return None     # queued (its release is the event), or dropped with its connection


def _response(label, action: str | tuple, rpc: Rpc, fields: dict, e, instance=None,
              first=True):
    """The observation of a response event (``action``: the receiver's rule, or its rules)."""
    match = _as_producer((rpc,), fields, instance)
    what = e.get("action") or "forwarded"
    fault = (e.get("fault") or {}).get("kind") if isinstance(e.get("fault"), Mapping) else None
    if what in ("forwarded", "released"):
        return step(label, (action,) if isinstance(action, str) else action, match)
    if what == "dropped" and fault == "drop":
        return (step if first else either)(label + " dropped", ("LoseResponse",), match)
    if what == "dropped":
        return either(label + " dropped (" + str(e.get("reason") or "no client") + ")",
                      ("LoseResponse",), match)
    return None


# --- the mapping ------------------------------------------------------------------------------------

APPLICATION = ("InitTransactions", "BeginTransaction", "Send", "CommitTransaction",
               "AbortTransaction")
SILENT = frozenset({"SendAddPartitionsToTxn", "SendProduce", "SendTxnOffsetCommit", "SendEndTxn",
                    "CompleteTransaction", "CommitTxnLogAppend", "ExpireTransaction",
                    "ElectCoordinator", "BounceCoordinator", "ExpireTransactionalId", "CrashProducer", "KillProducer",
                    "ExpireBatch",
                    "LoseProducerState", "Rebalance", "OffsetFetch", "SendOffsetsToTransaction",
                    "PartitionOffline", "ElectLeader", "ExpireGroup"})
SKIPPED = frozenset({"Fetch"})
UNSEEN = ("appends inside a broker (transaction log, partition logs), timers, the client's queue, "
          "FindCoordinator, batches of several records, the other requests a fault's closed "
          "connection fails, bodies that failed to decode")


def observations(model, events) -> Observations:
    """The Kafka model's observations of the run ``events`` (proxy events and history records,
    in any mix)."""
    K = model.params
    run = _Run(K, events)

    def silent(name: str) -> bool:
        return name in SILENT or (not run.history and name in APPLICATION)

    def observe(e):
        if e.get("type") in _HISTORY_TYPES and "f" in e:
            if fetches.consumer_of(e.get("process")) is not None:
                return fetches.history_observation(K, run, e)
            return _history(K, run, e)
        if e.get("type") == "end_state":
            return _end_state(K, run, e)
        if e.get("direction") not in ("request", "response") or "decode_error" in e:
            return None
        if _api(e) == fetches.FETCH:
            return fetches.fetch_observations(K, run, e, norm(e.get("fields") or {}))
        return _proxy(K, run, e)

    def stream(e):
        if e.get("type") in _HISTORY_TYPES and "f" in e:
            return ("history", str(e.get("process")))
        if e.get("type") == "end_state":
            return ("end state",)
        return ("proxy", str(e.get("endpoint")), e.get("conn"))

    # the readers' Fetch is skipped unless the run has live consumers whose answers it observes
    return Observations(observe=observe, stream=stream, silent=silent,
                        skipped=frozenset() if run.fetches.any else SKIPPED, unseen=UNSEEN)


def _label(e) -> str:
    where = str(e.get("endpoint", "?")).split("/")[-1]
    seq = e.get("seq")
    return (f"{_api(e)} {e.get('direction')} #{seq if seq is not None else '?'} ({where}, "
            f"conn {e.get('conn')}, correlation {e.get('correlation_id')})")


def _proxy(K, run: _Run, e):
    api, f = _api(e), norm(e.get("fields") or {})
    request = e.get("direction") == "request"
    if (e.get("endpoint"), e.get("conn"), e.get("correlation_id")) in run.not_loaded:
        return None     # no coordinator loaded yet: a retry before the model's first step
    if not request:
        found = run.requests.get((e.get("endpoint"), e.get("conn"), e.get("correlation_id")))
        if found is None:
            return None
        req_event, req = found
    else:
        req_event, req = e, f
    instance = run.instance(req_event.get("client_id"))
    label = _label(e)
    died = request and (e.get("endpoint"), e.get("conn"), e.get("correlation_id")) in run.died
    if api == "InitProducerId":
        tid = run.tids.get(req.get("transactional_id"))
        if request:
            return _request(label, "HandleInitProducerId", Rpc.InitProducerId,
                            {"tid": tid, "producer_id": run.pid(req.get("producer_id", -1)),
                             "producer_epoch": req.get("producer_epoch", -1)}, e, instance,
                            died=died)
        fields = {"tid": tid, "error": _error(_first_error(e, f)),
                  "producer_id": run.pid(f.get("producer_id", -1)),
                  "producer_epoch": f.get("producer_epoch", -1)}
        return _response(label, "ReceiveInitProducerIdResponse", Rpc.InitProducerIdResponse,
                         fields, e, instance)
    if api == "EndTxn":
        tid = run.tids.get(req.get("transactional_id"))
        if request:
            return _request(label, "HandleEndTxn", Rpc.EndTxn,
                            {"tid": tid, "producer_id": run.pid(req.get("producer_id")),
                             "producer_epoch": req.get("producer_epoch"),
                             "committed": bool(req.get("committed"))}, e, instance, died=died)
        fields = {"tid": tid, "error": _error(_first_error(e, f))}
        if "producer_id" in f and K.tv2:     # v5 (TV2): the bumped epoch
            fields |= {"producer_id": run.pid(f["producer_id"]),
                       "producer_epoch": f.get("producer_epoch")}
        return _response(label, "ReceiveEndTxnResponse", Rpc.EndTxnResponse, fields, e, instance)
    if api == "AddPartitionsToTxn" and not _verification(req):
        tid = run.tids.get(req.get("transactional_id"))
        if request:
            parts = frozenset(run.partition(_topic(t), k) for t in req.get("topics") or ()
                              for k in _partition_indexes(t))
            return _request(label, "HandleAddPartitionsToTxn", Rpc.AddPartitionsToTxn,
                            {"tid": tid, "producer_id": run.pid(req.get("producer_id")),
                             "producer_epoch": req.get("producer_epoch"), "partitions": parts},
                            e, instance, died=died)
        return _response(label, "ReceiveAddPartitionsToTxnResponse",
                         Rpc.AddPartitionsToTxnResponse,
                         {"tid": tid, "error": _error(_first_error(e, f))}, e, instance)
    if api == "AddPartitionsToTxn":
        return _verifications(K, run, e, f, req, request, label, died)
    if api == "Produce":
        return _produce(run, e, f, req, request, label, instance, died)
    if api == "WriteTxnMarkers":
        return _markers(run, e, f, req, request, label, died)
    return None


def _first_error(e, f):
    """The event's first error (a name), else its top-level ``error_code``."""
    names = _errors_by_name(e)
    if names:
        return next(iter(names.values()))
    return f.get("error_code", 0)


def _partition_error(e, path_part: str, default=0):
    """The error of the entry whose path names ``path_part`` (the proxy labels list elements by
    their topic, partition index, transactional.id)."""
    for path, name in _errors_by_name(e).items():
        if path_part in path:
            return name
    return default


def _add(out: list, o) -> None:
    """Append an observation, or the observations one message makes (``_request``)."""
    if isinstance(o, list):
        out.extend(o)
    elif o is not None:
        out.append(o)


def _produce(run, e, f, req, request, label, instance, died=False):
    """One observation per partition of a Produce request (or its response), in order."""
    batches = {}
    for t in req.get("topic_data") or ():
        for p in t.get("partition_data") or ():
            k = run.partition(_topic(t), p.get("index"))
            records = p.get("records") or []
            first = records[0] if records and isinstance(records[0], Mapping) else {}
            batches[k] = (_topic(t), p.get("index"), first)
    out = []
    stopped = run.not_leader.get((e.get("endpoint"), e.get("conn"), e.get("correlation_id")), ())
    if request:
        for k, (topic, index, b) in batches.items():
            fields = {"partition": k, "producer_id": run.pid(b.get("producer_id")),
                      "producer_epoch": b.get("producer_epoch"),
                      "base_sequence": b.get("base_sequence")}
            _add(out, _request(f"{label} p{k}", "HandleProduce", Rpc.Produce, fields, e,
                               instance, first=not out,
                               died=died or (topic, index) in stopped))
        return out or None
    for t in f.get("responses") or ():
        for p in t.get("partition_responses") or ():
            if (_topic(t), p.get("index")) in stopped:
                continue        # NOT_LEADER_OR_FOLLOWER, or NOT_ENOUGH_REPLICAS for want of a
                                # coordinator: its request was a loss to the model
            k = run.partition(_topic(t), p.get("index"))
            b = batches.get(k, (None, None, {}))[2]
            fields = {"partition": k, "error": _produce_error(_error(
                          p.get("error_code", 0) and _partition_error(e, f"[{p.get('index')}]",
                                                                       p.get("error_code")))),
                      "producer_id": run.pid(b.get("producer_id")),
                      "producer_epoch": b.get("producer_epoch"),
                      "base_sequence": b.get("base_sequence")}
            o = _response(f"{label} p{k}", "ReceiveProduceResponse", Rpc.ProduceResponse, fields,
                          e, instance, first=not out)
            if o is not None:
                out.append(o)
    return out or None


# A leader takes a verification's answer in one of two ways: it handles it (a retry, a
# failure or the append), or, answered CONCURRENT_TRANSACTIONS once its retry time has passed
# (KAFKA-18654, a TV2 leader), answers the produce with it (partition.expire_verification_retry)
VERIFICATION_ANSWERED = ("HandleVerifyAddPartitionResponse", "ExpireVerificationRetry")


def _verifications(K, run, e, f, req, request, label, died=False):
    """AddPartitionsToTxn v4+ (a leader's verification or implicit add): one observation per
    partition of each transaction."""
    out = []
    errors = {}
    if not request:
        for x in f.get("results_by_transaction") or ():
            for t in x.get("topic_results") or ():
                for p in t.get("results_by_partition") or ():
                    errors[(x.get("transactional_id"), _topic(t), p.get("partition_index"))] = \
                        p.get("partition_error_code", 0)
    top = f.get("error_code", 0)
    for x in req.get("transactions") or ():
        tid = run.tids.get(x.get("transactional_id"))
        for t in x.get("topics") or ():
            for k in _partition_indexes(t):
                part = run.partition(_topic(t), k)
                if part is None:
                    continue
                fields = {"tid": tid, "partition": part,
                          "producer_id": run.pid(x.get("producer_id")),
                          "producer_epoch": x.get("producer_epoch")}
                if request:
                    fields["verify_only"] = bool(x.get("verify_only"))
                    o = _request(f"{label} p{part}", "HandleVerifyAddPartition",
                                 Rpc.VerifyAddPartition, fields, e, first=not out, died=died)
                else:
                    code = top or errors.get((x.get("transactional_id"), _topic(t), k), 0)
                    error = _error(code and _partition_error(e, f"[{k}]", code))
                    if top:
                        error = _error(_first_error(e, f))
                    o = _response(f"{label} p{part}", VERIFICATION_ANSWERED,
                                  Rpc.VerifyAddPartitionResponse,
                                  {"partition": part, "error": error,
                                   "producer_id": fields["producer_id"]}, e, first=not out)
                _add(out, o)
    return out or None


def _markers(run, e, f, req, request, label, died=False):
    """WriteTxnMarkers: one observation per partition of each marker."""
    out = []
    errors = {}
    if not request:
        for x in f.get("markers") or ():
            for t in x.get("topics") or ():
                for p in t.get("partitions") or ():
                    errors[(x.get("producer_id"), _topic(t), p.get("partition_index"))] = \
                        p.get("error_code", 0)
    stopped = run.not_leader.get((e.get("endpoint"), e.get("conn"), e.get("correlation_id")), ())
    for x in req.get("markers") or ():
        for t in x.get("topics") or ():
            for k in t.get("partition_indexes") or ():
                part = run.partition(_topic(t), k)
                if part is None or (not request and (_topic(t), k) in stopped):
                    continue    # (NOT_LEADER_OR_FOLLOWER: its request was a loss to the model)
                fields = {"partition": part, "producer_id": run.pid(x.get("producer_id")),
                          "producer_epoch": x.get("producer_epoch"),
                          "committed": bool(x.get("transaction_result"))}
                # the coordinator epoch the request carried (its answer names the request)
                fields["coordinator_epoch"] = run.coordinator_epochs.get(
                    x.get("coordinator_epoch"), x.get("coordinator_epoch"))
                if request:
                    o = _request(f"{label} p{part}", "HandleWriteTxnMarkers",
                                 Rpc.WriteTxnMarkers, fields, e, first=not out,
                                 died=died or (_topic(t), k) in stopped)
                else:
                    code = errors.get((x.get("producer_id"), _topic(t), k), 0)
                    fields["error"] = _error(code and _partition_error(e, f"[{k}]", code))
                    o = _response(f"{label} p{part}", "HandleWriteTxnMarkersResponse",
                                  Rpc.WriteTxnMarkersResponse, fields, e, first=not out)
                _add(out, o)
    return out or None


# --- the end state ----------------------------------------------------------------------------------
#
# What the harness read once the run was over and the transactions had settled
# (``kafka_mc.realkafka.run.quiesce``): DescribeTransactions of each transactional.id
# (TransactionCoordinator.handleDescribeTransactions: the coordinator's in-memory
# TransactionMetadata), each partition's log (DumpLogSegments: every batch and marker in offset
# order), its producer states (DescribeProducers: ProducerStateManager's entries) and its last
# stable offset and high watermark (ListOffsets, read_committed and read_uncommitted). The model
# must end there too: requests are not all there is to see -- a marker the coordinator never
# sent is no request, but it is a partition whose transaction never closes (KAFKA-20734).


def _end_state(K, run: _Run, e):
    """One observation of the end state per transactional.id and per partition (its log, its
    producer states, whether its LSO is held by an open transaction)."""
    out = []
    for name, d in sorted((e.get("transactions") or {}).items()):
        tid = run.tids.get(name)
        if tid is None:
            m = _TID.search(name)
            tid = int(m.group(1)) if m else None
        if tid is None or not isinstance(d, Mapping) or d.get("state") is None:
            continue
        want = {"state": TxnState.__members__.get(str(d["state"]), str(d["state"])),
                "producer_id": run.pid(d.get("producer_id", -1)),
                "producer_epoch": d.get("producer_epoch", -1)}
        out.append(end(f"end state: DescribeTransactions {name}",
                       lambda s, tid=tid, want=want: _txn_differs(K, s, tid, want)))
    for key, batches in sorted((e.get("logs") or {}).items(), key=lambda kv: str(kv[0])):
        k = run.partition_index(key)
        if k is None or not isinstance(batches, list):
            continue
        log = tuple(_entry(run, b) for b in batches if isinstance(b, Mapping)
                    for _ in range(max(1, int(b.get("count") or 1))))
        out.append(end(f"end state: the log of partition {k}",
                       lambda s, k=k, log=log: _log_differs(s, k, log),
                       lambda s, k=k, log=log: _log_prefix(s, k, log)))
        offsets = (e.get("offsets") or {}).get(key) or (e.get("offsets") or {}).get(str(key))
        if isinstance(offsets, Mapping) and offsets.get("lso") is not None:
            open_ = offsets["lso"] < offsets.get("high_watermark", offsets["lso"])
            out.append(end(f"end state: partition {k}'s last stable offset "
                           f"({'below' if open_ else 'at'} its high watermark)",
                           lambda s, k=k, open_=open_: _open_differs(s, k, open_)))
        states = (e.get("producers") or {}).get(key) or (e.get("producers") or {}).get(str(key))
        if isinstance(states, list):
            want = tuple(sorted(_producer_state(run, x) for x in states if isinstance(x, Mapping)))
            out.append(end(f"end state: DescribeProducers of partition {k}",
                           lambda s, k=k, want=want: _producers_differ(s, k, want)))
    return out or None


def _txn_differs(K, s, tid, want):
    if not 0 <= tid < len(s.coordinator.txns):
        return f"transactional.id {tid}: the model has {len(s.coordinator.txns)}"
    t = s.coordinator.txns[tid]
    return differs(want, {"state": t.state, "producer_id": t.producer_id,
                          "producer_epoch": t.producer_epoch})


def _entry(run, b):
    """A batch of the real log as the model writes one: data (producer id, epoch, sequence) or
    a marker (COMMIT / ABORT, producer id, epoch, coordinator epoch). The model's batches hold
    one record each (a real batch of several would be several here: none was met)."""
    pid = run.pid(b.get("producer_id", -1))
    if b.get("control"):
        control = Control.__members__.get(str(b.get("marker")), str(b.get("marker")))
        cepoch = b.get("coordinator_epoch", -1)
        return (control, pid, b.get("producer_epoch"), run.coordinator_epochs.get(cepoch, cepoch))
    return (Control.DATA, pid, b.get("producer_epoch"), b.get("base_sequence"))


def _model_entry(b):
    if b.control == Control.DATA:
        return (Control.DATA, b.producer_id, b.producer_epoch, b.base_sequence)
    return (b.control, b.producer_id, b.producer_epoch, b.coordinator_epoch)


def _show_entry(x) -> str:
    kind = getattr(x[0], "name", x[0])
    last = "sequence" if x[0] == Control.DATA else "coordinator epoch"
    return f"{kind} (producer {x[1]}, epoch {x[2]}, {last} {x[3]})"


def _no_partition(s, k) -> str:
    return f"partition {k}: the model has {len(s.partitions)}"


def _log_differs(s, k, log):
    if not 0 <= k < len(s.partitions):
        return _no_partition(s, k)
    model = tuple(_model_entry(b) for b in s.partitions[k].log)
    if model == log:
        return None
    i = next((i for i, (x, y) in enumerate(zip(log, model)) if x != y), min(len(log), len(model)))
    recorded = _show_entry(log[i]) if i < len(log) else "the end of the log"
    has = _show_entry(model[i]) if i < len(model) else "the end of the log"
    return f"log[{i}]: recorded {recorded}, model {has}"


def _log_prefix(s, k, log) -> bool:
    """Whether the model's log of partition k is a prefix of the recorded one: a partition's
    log only grows (the model never truncates: its leaders keep their logs), so a state whose
    log is not cannot end where the run did."""
    if not 0 <= k < len(s.partitions):
        return True
    model = s.partitions[k].log
    return len(model) <= len(log) and all(_model_entry(b) == x for b, x in zip(model, log))


def _open_differs(s, k, open_):
    if not 0 <= k < len(s.partitions):
        return _no_partition(s, k)
    has = any(e.current_txn_first_offset >= 0 for e in s.partitions[k].producers)
    return None if has == open_ else (f"open transaction: recorded {open_}, model {has}")


def _producer_state(run, x):
    """A DescribeProducers entry as the model's ProducerStateEntry: a field the admin client
    gives as null (no marker yet: no coordinator epoch) is the model's -1."""
    def get(k):
        v = x.get(k)
        return -1 if v is None else v
    cepoch = get("coordinator_epoch")
    return (run.pid(get("producer_id")), get("producer_epoch"), get("last_sequence"),
            run.coordinator_epochs.get(cepoch, cepoch),
            x.get("current_transaction_start_offset") is not None)


def _producers_differ(s, k, want):
    if not 0 <= k < len(s.partitions):
        return _no_partition(s, k)
    has = tuple(sorted((e.producer_id, e.producer_epoch, e.last_sequence, e.coordinator_epoch,
                        e.current_txn_first_offset >= 0) for e in s.partitions[k].producers))
    if has == want:
        return None
    return ("producer states (id, epoch, last sequence, coordinator epoch, open): "
            f"recorded {list(want)}, model {list(has)}")


# --- the client history ------------------------------------------------------------------------------

_F = {"inittransactions": "InitTransactions", "begintransaction": "BeginTransaction",
      "send": "Send", "committransaction": "CommitTransaction",
      "aborttransaction": "AbortTransaction"}
ERROR_STATES = (C.ABORTABLE_ERROR, C.FATAL_ERROR)


def _history(K, run: _Run, e):
    name = _F.get(str(e.get("f", "")).replace("_", "").lower())
    i = run.instance(e.get("process"))
    if name is None or i is None:
        return None
    kind = e.get("type")
    label = f"history #{e.get('index')}: {e.get('process')} {kind} {e.get('f')}"
    if i < 0:
        return state(label, lambda s: f"process {e.get('process')} is no producer instance of "
                                      f"the model ({K.tids} x {K.producers_per_id})")
    if kind == "invoke":
        fields: dict = {"producer": i}
        if name == "Send":
            v = e.get("value") if isinstance(e.get("value"), Mapping) else {}
            fields["partition"] = run.partition(str(v.get("topic")), int(v.get("partition") or 0))

        def match(s, a, t, fields=fields):
            got = {"producer": a[1], "partition": a[2] if len(a) > 2 else None}
            return differs(fields, got)
        label += f"({fields['partition']})" if name == "Send" else ""
        if name == "InitTransactions":
            return step(label, (name,), match)
        # a call in an error state throws at once: no step (KafkaProducer's state checks)
        bad = (C.FATAL_ERROR,) if name == "BeginTransaction" else ERROR_STATES
        return either(label, (name,), match,
                      lambda s: None if s.producers[i].state in bad else
                      f"{_state(s, i)} is no error state: the call cannot fail at once")
    if kind == "ok":
        if name == "InitTransactions":
            return state(label, lambda s: _want(s, i, (C.READY,)))
        if name == "BeginTransaction":
            return state(label, lambda s: _want(s, i, (C.IN_TRANSACTION,)))
        if name in ("CommitTransaction", "AbortTransaction"):
            outcome = Outcome.COMMITTED if name == "CommitTransaction" else Outcome.ABORTED
            return state(label, lambda s: _want(s, i, (C.READY,), outcome))
        return None
    if kind == "fail":
        error = e.get("error")
        cls = str(error[0] if isinstance(error, (list, tuple)) and error else error or "")
        if "Timeout" in cls:
            return None
        return state(label + f" ({cls})", lambda s: _want(s, i, ERROR_STATES))
    return None


def _state(s, i) -> str:
    return f"producer {i} is {s.producers[i].state.name}"


def _want(s, i, states, outcome=None):
    p = s.producers[i]
    if p.state not in states:
        return f"{_state(s, i)}, not {' or '.join(x.name for x in states)}"
    if outcome is not None and (not p.outcomes or p.outcomes[-1] != outcome):
        return (f"producer {i}'s last transaction ended "
                f"{p.outcomes[-1].name if p.outcomes else 'never'}, not {outcome.name}")
    return None


__all__ = ["observations", "norm", "SILENT", "SKIPPED", "APPLICATION", "Observation"]
