"""What a run's killed brokers cost, on top of the faults its plan injected: the budgets a
run's validation must give the model (``kafka-mc real conform``, explorers/cli/real.py).

A hard failover (``kafka_mc.realkafka.run``) kills the coordinator's broker, which on one broker also
leads the data partitions: the requests in flight on its connections die with it (their senders
see the connection fail and retry), and a client's batch waiting for the broker to come back may
expire (delivery.timeout.ms). A killed replica can also stall a live broker (an append waiting
for the ISR to shrink) past a client's request timeout, and the client gives the request up on
a closed connection. The model's failover moves the coordinator alone and its leaders never go
away, so these are faults of their own to it: a loss per request left unanswered
(``LoseRequest``, or handled and its answer lost: ``LoseResponse``), a batch expiry per
``Expiring ... record(s)`` the client reported (``ExpireBatch``). An answer the proxy could not
deliver because its client had closed the connection is a response loss too.
"""
from __future__ import annotations

import re

# The APIs whose requests the Kafka model's mapping observes (model.kafka.capabilities.observations.APIS)
TRANSACTIONAL_APIS = ("InitProducerId", "AddPartitionsToTxn", "Produce", "EndTxn",
                      "WriteTxnMarkers")
_EXPIRING = re.compile(r"^Expiring \d+ record")


def unanswered_at_close(events, apis=None) -> frozenset:
    """(endpoint, conn, correlation id) of every request this proxy forwarded (of ``apis``, or
    any) that had no response when the broker or the client closed its connection: a killed
    broker's (``run``'s hard failover, an outage) requests in flight, and those a client gave up
    on (its request timeout: NetworkClient.handleTimedOutRequests disconnects), which their
    senders see fail and retry. The model's mapping sees each as a loss
    (``kafka_mc.model.kafka.capabilities.observations.lost_in_flight``), so a run's validation adds one
    request and one response loss per request to its budgets."""
    pending: dict = {}      # (endpoint, conn) -> the keys of its requests not answered yet
    died = set()
    for e in events:
        conn = (e.get("endpoint"), e.get("conn"))
        direction = e.get("direction")
        if direction == "connection" and e.get("action") == "closed":
            if e.get("by") in ("broker", "client"):
                died.update(pending.get(conn, ()))
            pending.pop(conn, None)
        elif (direction == "request" and e.get("action") == "forwarded"
              and (apis is None or e.get("api") in apis)):
            pending.setdefault(conn, set()).add(conn + (e.get("correlation_id"),))
        elif direction == "response":
            pending.get(conn, set()).discard(conn + (e.get("correlation_id"),))
    return frozenset(died)


def answered_not_leader(events) -> int:
    """The Produce and WriteTxnMarkers partitions answered NOT_LEADER_OR_FOLLOWER (code 6): a
    leader that stopped leading with them in flight (a controlled shutdown, ``run``'s soft
    failover on one broker). Nothing was appended and the sender retries on the next leader;
    the model's leaders never stop leading with a request in flight, so the mapping sees each
    as lost (``kafka_mc.model.kafka.capabilities.observations.not_leader_answers``), and a run's
    validation adds a request and a response loss per partition."""
    n = 0
    for e in events:
        if e.get("direction") != "response" or e.get("api") not in ("Produce", "WriteTxnMarkers") \
                or e.get("action") not in ("forwarded", "released"):
            continue
        n += sum(1 for x in e.get("errors") or () if x.get("code") == 6)
    return n


def answered_without_coordinator(events) -> int:
    """The Produce partitions answered NOT_ENOUGH_REPLICAS (code 19) "Unable to verify the
    partition has been added to the transaction. Underlying error: COORDINATOR_NOT_AVAILABLE": a
    leader that found no leader for the transaction coordinator's ``__transaction_state``
    partition (AddPartitionsToTxnManager.verifyTransaction answers locally, no AddPartitionsToTxn
    sent; one broker's controlled shutdown, ``run``'s soft failover: conformance #18). Nothing
    was appended and the client retries; the model's coordinator is never without a leader, so
    the mapping sees each as lost
    (``kafka_mc.model.kafka.capabilities.observations.coordinator_not_found_answers``), and a
    run's validation adds a request and a response loss per partition."""
    n = 0
    for e in events:
        if e.get("direction") != "response" or e.get("api") != "Produce" \
                or e.get("action") not in ("forwarded", "released"):
            continue
        for t in (e.get("fields") or {}).get("responses") or ():
            n += sum(1 for p in t.get("partition_responses") or ()
                     if p.get("error_code") == 19 and "Underlying error: COORDINATOR_NOT_AVAILABLE"
                     in str(p.get("error_message") or ""))
    return n


def frame_messages(e) -> int:
    """How many of the model's messages one request frame carries: the model sends one
    message per partition (a Produce's batches, a WriteTxnMarkers' markers, a leader's
    verification of each partition), where Kafka puts them all in one request."""
    f = e.get("fields") or {}
    api = e.get("api")
    if api == "Produce":
        n = sum(len(t.get("partition_data") or ()) for t in f.get("topic_data") or ())
    elif api == "WriteTxnMarkers":
        n = sum(len(t.get("partition_indexes") or ()) for m in f.get("markers") or ()
                for t in m.get("topics") or ())
    elif api == "AddPartitionsToTxn" and f.get("transactions"):
        n = sum(len(t.get("partitions") or ()) for x in f.get("transactions") or ()
                for t in x.get("topics") or ())
    else:
        n = 1
    return max(n, 1)


def frames_beyond_first(events, kind: str, direction: str = "request") -> int:
    """The model's faults a plan's ``kind`` faults (``hold``: a delay, ``duplicate``, ``drop``)
    on frames going ``direction`` cost beyond one each: a fault takes a whole frame, which is
    one fault per message to the model (its ``DelayRequest``, ``DuplicateRequest``,
    ``LoseResponse`` take one message), so a frame of n messages costs n - 1 more: a duplicated
    WriteTxnMarkers of two partitions appends both markers twice, a dropped answer to one makes
    the coordinator resend both (conformance, round 4). A dropped request frame costs one: its
    sender resends the frame, so the model's other messages are delivered once, with the resent
    one (``kafka_mc.model.kafka.capabilities.observations``, ``_request``)."""
    requests = {}
    n = 0
    for e in events:
        key = (e.get("endpoint"), e.get("conn"), e.get("correlation_id"))
        if e.get("direction") == "request" and e.get("api") in TRANSACTIONAL_APIS:
            requests.setdefault(key, e)
        if e.get("direction") != direction or e.get("api") not in TRANSACTIONAL_APIS \
                or (e.get("fault") or {}).get("kind") != kind \
                or e.get("action") != ("held" if direction == "request" else "dropped"):
            continue
        n += frame_messages(requests.get(key, e)) - 1
    return n


def expired_batches(events) -> int:
    """The batches the client reports expired (Sender.sendProducerData -> failBatch with a
    TimeoutException "Expiring N record(s) for <partition>: ... has passed since batch
    creation"): a send recorded as failed (or unknown) with that error in the history."""
    n = 0
    for e in events:
        error = e.get("error")
        if e.get("f") == "send" and e.get("type") in ("info", "fail") and isinstance(error, list) \
                and len(error) > 1 and error[0] == "TimeoutException" \
                and _EXPIRING.match(str(error[1])):
            n += 1
    return n


def answers_without_client(events, apis=TRANSACTIONAL_APIS) -> int:
    """Responses the proxy dropped because their client had closed the connection (a request
    held by a delay and released after the client gave up on it): the model's mapping sees each
    as nothing or a ``LoseResponse`` (the answer never reached its sender), which no fault of
    the plan pays for. (A duplicate's copy is paid by its fault: the model's copy is sent on a
    closed connection and its answer goes nowhere, ``network.duplicate_request``.)"""
    return sum(1 for e in events if e.get("direction") == "response"
               and e.get("action") == "dropped" and e.get("reason") == "client closed"
               and e.get("api") in apis
               and (e.get("fault") or {}).get("kind") not in ("drop", "duplicate"))


def leaders_stopped(plan: dict | None, brokers: int) -> int:
    """Partition outages a run's failovers cause: on one broker the coordinator's broker is also
    every data partition's leader, and both failovers stop it (a hard one kills it, a soft one
    is a controlled shutdown, whose controller leaves the partitions with no leader: Metadata
    answers LEADER_NOT_AVAILABLE until the restart), so each partition is leaderless until the
    broker is back (the model's PartitionOffline, then ElectLeader). The restarted coordinator
    may reload a transaction in PrepareCommit/PrepareAbort before its partitions have a leader
    again; 4.3+ then skips their markers and completes it without them (KAFKA-20734, "these
    partitions are likely deleted already": conformance #13). Several brokers: outages are the
    plan's own."""
    if not plan or brokers != 1:
        return 0
    return len(plan.get("failovers") or ()) * int(plan.get("partitions") or 0)


def restarts_failing_over(plan: dict | None, brokers: int, per_hard: int = 1) -> int:
    """Coordinator failovers a run's hard failovers cost beyond one each: ``per_hard`` is the
    release's (``Release.hard_restart_failovers``). On 4.x one killed and restarted combined
    node first leads again at the old leader epoch (the restarted controller's
    ``ClusterControlManager.activate`` gives the old incarnation a fresh session, and the
    broker's metadata publishers replay the log where it still leads: the coordinator reloads
    at the same coordinator epoch, the model's BounceCoordinator), then
    ``broker.session.timeout.ms`` later the controller fences the old incarnation
    (``ReplicationControlManager.maybeFenceOneStaleBroker``) and the coordinator reloads at a
    new epoch (ElectCoordinator): two failovers for the model (conformance #19). 3.x's
    re-registration wins the race and writes no leader change: one (a bounce, #15). Several
    brokers: the plan's own."""
    if not plan or brokers != 1 or per_hard <= 1:
        return 0
    return (per_hard - 1) * sum(1 for f in plan.get("failovers") or () if f.get("hard"))


def budgets(cfg_budget, events, plan: dict | None = None, brokers: int = 1,
            hard_restart_failovers: int = 1) -> dict:
    """``faults.<budget>`` -> value: the budgets (``cfg_budget(name)``: the config's) raised by
    what the run's stopped brokers cost (``plan``: the run's plan.json, for its failovers;
    ``hard_restart_failovers``: the coordinator failovers one hard failover is on the
    release)."""
    requests = {(e.get("endpoint"), e.get("conn"), e.get("correlation_id")): e for e in events
                if e.get("direction") == "request" and e.get("action") == "forwarded"}
    # a frame left unanswered is one loss per message it carries (the model's are per partition)
    lost = sum(frame_messages(requests.get(key, {})) for key in
               unanswered_at_close(events, TRANSACTIONAL_APIS)) + answered_not_leader(events) \
        + answered_without_coordinator(events)
    unheard = answers_without_client(events)
    expired = expired_batches(events)
    offline = leaders_stopped(plan, brokers)
    restarts = restarts_failing_over(plan, brokers, hard_restart_failovers)
    delays, copies = frames_beyond_first(events, "hold"), frames_beyond_first(events, "duplicate")
    unanswered = frames_beyond_first(events, "drop", "response")
    out = {}
    if delays:
        out["faults.request_delays"] = cfg_budget("request_delays") + delays
    if copies:
        out["faults.request_duplicates"] = cfg_budget("request_duplicates") + copies
    if lost:
        out["faults.request_losses"] = cfg_budget("request_losses") + lost
    if lost or unheard or unanswered:
        out["faults.response_losses"] = (cfg_budget("response_losses") + lost + unheard
                                         + unanswered)
    if expired:
        out["faults.batch_expiries"] = cfg_budget("batch_expiries") + expired
    if offline:
        out["faults.offline_partitions"] = (cfg_budget("offline_partitions") or 0) + offline
    if restarts:
        out["faults.coordinator_failovers"] = (cfg_budget("coordinator_failovers") or 0) + restarts
    total = cfg_budget("total")
    if out and total is not None:
        out["faults.total"] = (total + 2 * lost + unheard + expired + offline + delays + copies
                                + unanswered + restarts)
    return out
