"""The proxy's holds of a reproduction (``kafka_mc.realkafka.reproduce``): which frames are gated,
how the frame a trace's step delivers is found among those held, released, copied (a
DuplicateRequest's old copy), dropped (a loss) or awaited (its answer: the broker's append).

Gates: ``Fault(HOLD, count=None)`` on every request and response of the transactional APIs
(``CLIENT_APIS``) on the clients' listener and of WriteTxnMarkers on the inter-broker one, and,
where the trace orders the client's Produce (``gate_produce``), on Produce requests; for a
directed run (``gate_verification``) on the leaders' verifications too (AddPartitionsToTxn v4+
on the inter-broker listener), released at the trace's HandleVerifyAddPartition and answered at
its HandleVerifyAddPartitionResponse. A frame is
named by its API, direction, client.id (``t<tid>.i<instance>``) and the partitions it carries;
one broker's markers to several partitions share one WriteTxnMarkers request (``delivered``:
released at the first step that delivers one of them, the others find it delivered).

In a trace where a partition goes offline (``gate_produce_responses``) the leaders' Produce
responses are held too, and released at the trace's ReceiveProduceResponse: the leader answers
(its append done) at HandleProduce or HandleVerifyAddPartitionResponse, and the answer reaches
the client where the trace delivers it, which may be after the leader's broker was killed
(PartitionOffline). The proxy holds the answer's bytes as a network may hold a segment in
flight: the broker wrote them before it died, and a slow link or a retransmission delivers them
later (``proxy._broker_gone`` keeps the client's side open until its held responses are
released, then closes it; docs/conformance.md #21)."""
from __future__ import annotations

import time
from typing import Callable

STEP_TIMEOUT_S = 30.0
APPEND_WAIT_S = 5.0    # a released marker or produce: how long its answer (its append) is awaited
BROKER_REQUEST_TIMEOUT_MS = 4000
CLIENT_REQUEST_TIMEOUT_MS = 15000   # longer than any hold a trace makes without a client fault
CLIENT_APIS = ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
               "TxnOffsetCommit")
BROKER_APIS = ("WriteTxnMarkers",)


class Diverged(Exception):
    """Real Kafka did something the trace does not (or not what it does)."""

    def __init__(self, step: int, action: str, what: str, event: dict | None = None):
        super().__init__(what)
        self.step, self.action, self.what, self.event = step, action, what, event

    def to_dict(self) -> dict:
        e = self.event
        brief = None if e is None else {k: e.get(k) for k in (
            "seq", "endpoint", "conn", "direction", "api", "version", "client_id", "action",
            "errors", "fields")}
        return {"step": self.step, "action": self.action, "what": self.what, "event": brief}


class Where:
    """The trace's step being run (its number and action's name): what a divergence names."""

    def __init__(self):
        self.i, self.name = 0, ""

    def diverged(self, what: str, event: dict | None = None) -> Diverged:
        return Diverged(self.i, self.name, what, event)


def errors(event: dict) -> set[str]:
    return {e.get("name") for e in event.get("errors") or ()}


def marker_parts(event: dict, topic: str) -> list[tuple[bool | None, int]]:
    """(transaction_result, partition) of a WriteTxnMarkers request or response (a response:
    result None)."""
    out = []
    for m in (event.get("fields") or {}).get("markers") or ():
        for t in m.get("topics") or ():
            if t.get("name") not in (None, topic):
                continue
            for p in t.get("partition_indexes") or ():
                out.append((m.get("transaction_result"), p))
            for p in t.get("partitions") or ():
                out.append((None, p.get("partition_index")))
    return out


def produce_parts(event: dict) -> set[int]:
    return {pd.get("index") for t in (event.get("fields") or {}).get("topic_data") or ()
            for pd in t.get("partition_data") or ()}


def produce_response_parts(event: dict) -> set[int]:
    """The partitions a Produce response answers."""
    return {pr.get("index") for t in (event.get("fields") or {}).get("responses") or ()
            for pr in t.get("partition_responses") or ()}


def verify_parts(event: dict, topic: str) -> list[int]:
    """The partitions of a leader's verification (AddPartitionsToTxn v4+ on the inter-broker
    listener), request or response."""
    fields = event.get("fields") or {}
    out = []
    for t in fields.get("transactions") or ():
        for tp in t.get("topics") or ():
            if tp.get("name") in (None, topic):
                out += list(tp.get("partitions") or ())
    for t in fields.get("results_by_transaction") or ():
        for tr in t.get("topic_results") or ():
            if tr.get("name") in (None, topic):
                out += [p.get("partition_index") for p in tr.get("results_by_partition") or ()]
    return out


def _verification(h, direction: str) -> bool:
    e = h.event
    return e["api"] == "AddPartitionsToTxn" and e["direction"] == direction \
        and str(e.get("endpoint", "")).endswith("/INTERNAL")


def log_length(state: dict, k: int) -> int:
    """The length of partition k's log in a trace state."""
    try:
        return len(state["partitions"][k]["log"])
    except (KeyError, IndexError, TypeError):
        return 0


class Holds:
    """The proxy's held frames for one reproduction (the module's docstring)."""

    def __init__(self, proxy, topic: str, client: Callable[[int], str], where: Where):
        self.proxy, self.topic, self.client, self.where = proxy, topic, client, where
        self.stale: dict[tuple, object] = {}   # a DuplicateRequest's old copy (a Held)
        self.delivered: list[dict] = []        # released WriteTxnMarkers: result, parts left
        self.seen_produce: set[tuple] = set()
        self.send_mark: dict[tuple, int] = {}      # (p, k) -> proxy events before its send()
        self.produce_seen: dict[tuple, dict] = {}  # (p, k) -> the Produce SendProduce took
        self.verified: list[dict] = []             # released verifications: parts left
        self.produce_answers: list[dict] = []      # released Produce responses: parts left
        self.stale_answer = None

    # -- the gates
    def gate(self, gate_produce: bool, gate_verification: bool = False,
             gate_produce_responses: bool = False) -> list:
        """Every client and broker API held by the proxy (with ``gate_verification`` the
        leaders' verifications too, with ``gate_produce_responses`` the leaders' Produce
        responses); returns the gates."""
        from kafka_mc.realkafka.proxy import HOLD, Fault
        gates = [self.proxy.add_fault(Fault(HOLD, "AddPartitionsToTxn", d,
                                            endpoint="broker-*/INTERNAL", count=None))
                 for d in ("request", "response")] if gate_verification else []
        if gate_produce_responses:
            gates.append(self.proxy.add_fault(Fault(HOLD, "Produce", "response",
                                                    endpoint="broker-*/CLIENT", count=None)))
        return gates + self._gate(gate_produce)

    def _gate(self, gate_produce: bool) -> list:
        from kafka_mc.realkafka.proxy import HOLD, Fault
        gates = [self.proxy.add_fault(Fault(HOLD, api, d, endpoint="broker-*/CLIENT",
                                            count=None))
                 for api in CLIENT_APIS for d in ("request", "response")]
        gates += [self.proxy.add_fault(Fault(HOLD, api, d, endpoint="broker-*/INTERNAL",
                                             count=None))
                  for api in BROKER_APIS for d in ("request", "response")]
        if gate_produce:     # an ExpireBatch: the batch's Produce held until it is handled
            gates.append(self.proxy.add_fault(Fault(HOLD, "Produce", "request",
                                                    endpoint="broker-*/CLIENT", count=None)))
        return gates

    def lift(self, gates: list) -> None:
        """Every gate removed and every held frame released."""
        for g in gates:
            self.proxy.remove_fault(g)
        self.proxy.release(None)

    # -- finding and releasing held frames
    def held(self, pred, what: str, timeout: float = STEP_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while True:
            for h in self.proxy.held():
                try:
                    if pred(h):
                        return h
                except Exception:
                    continue
            if time.monotonic() > deadline:
                held = [f"{h.event['api']} {h.event['direction']} #{h.event['seq']}"
                        for h in self.proxy.held()]
                raise self.where.diverged(f"{what} never came within {timeout:.0f} s (held "
                                          f"now: {', '.join(held) or 'nothing'})")
            time.sleep(0.03)

    def client_frame(self, p: int, api: str, direction: str, live: bool = True):
        def pred(h):
            e = h.event
            return (e["api"] == api and e["direction"] == direction
                    and e["client_id"] == self.client(p) and (h.conn.client_open or not live))
        return pred

    def release(self, h) -> dict:
        self.proxy.release(h)
        return h.event

    def check_error(self, msg: dict, event: dict) -> None:
        want = msg.get("error", "NONE")
        got = errors(event)
        if (want == "NONE" and got) or (want != "NONE" and want not in got):
            raise self.where.diverged(f"the trace answers {want}, real Kafka answered "
                                      f"{', '.join(sorted(got)) or 'NONE'}", event)

    def rpc_match(self, api: str, msg: dict):
        if api == "WriteTxnMarkers":
            want = (bool(msg.get("committed")), msg.get("partition"))
            return lambda h: h.event["api"] == api and h.event["direction"] == "request" \
                and want in marker_parts(h.event, self.topic)
        return self.client_frame(msg.get("producer"), api, "request", live=False)

    def answered(self, request: dict, timeout: float = APPEND_WAIT_S) -> int | None:
        """The seq of the first response event to ``request`` (held, forwarded or dropped):
        the broker answers once it appended, so a step releasing a marker or a produce is
        over only then, and the next step cannot overtake its append (a marker and a produce
        released one after the other on two connections race in the broker otherwise). None
        if none came within ``timeout``."""
        try:
            return self.proxy.wait_for(
                lambda e: e["direction"] == "response" and e.get("conn") == request.get("conn")
                and e.get("endpoint") == request.get("endpoint")
                and e.get("correlation_id") == request.get("correlation_id"), timeout)["seq"]
        except TimeoutError:
            return None

    # -- the steps the proxy carries out
    def handle_request(self, api: str, msg: dict) -> dict:
        """A client's (or the coordinator's) request released to its broker: the newest copy on a
        live connection, or (``disconnected``) a DuplicateRequest's old copy on its old one."""
        key = (api, msg.get("producer"), msg.get("partition"), msg.get("committed"))
        if msg.get("disconnected") and key in self.stale:
            return self._old_copy(self.stale.pop(key))
        match = self.rpc_match(api, msg)
        h = self.held(lambda h: match(h) and h.conn.client_open, f"the {api} request")
        if api == "EndTxn" and bool(h.event["fields"].get("committed")) != bool(msg["committed"]):
            raise self.where.diverged(f"EndTxn committed={h.event['fields'].get('committed')}; "
                                      f"the trace's is {msg['committed']}", h.event)
        return {"released": self.release(h)["seq"]}

    def _old_copy(self, h) -> dict:
        n = self.proxy.release(h)
        copy = answer = None
        if n:
            try:
                copy = self.proxy.wait_for(lambda e: e.get("held_seq") == h.event["seq"]
                                           and e["action"] in ("duplicated-copy", "released",
                                                               "dropped"), 10)
                answer = self.proxy.wait_for(
                    lambda e: e["seq"] > copy["seq"] and e["conn"] == h.event["conn"]
                    and e["direction"] == "response", BROKER_REQUEST_TIMEOUT_MS / 1000 + 10)
            except TimeoutError:
                answer = None
        self.stale_answer = answer
        return {"released_old_copy": h.event["seq"], "copy": copy and copy["action"],
                "old_copy_answer": answer and {"seq": answer["seq"], "errors": answer["errors"],
                                               "fields": answer["fields"]}}

    def handle_markers(self, msg: dict, await_append: bool) -> dict:
        """The WriteTxnMarkers request carrying the partition's marker released (or already
        delivered with another partition's); with ``await_append`` its answer awaited."""
        want = (bool(msg.get("committed")), msg.get("partition"))
        if msg.get("disconnected"):
            return self.handle_request("WriteTxnMarkers", msg)
        for d in self.delivered:
            if d["result"] == want[0] and want[1] in d["left"]:
                d["left"].discard(want[1])
                return {"delivered_with": d["seq"]}
        match = self.rpc_match("WriteTxnMarkers", msg)
        h = self.held(lambda h: match(h) and h.conn.client_open,
                      f"WriteTxnMarkers({'COMMIT' if want[0] else 'ABORT'}) for partition "
                      f"{want[1]}")
        parts = {p for r, p in marker_parts(h.event, self.topic) if r == want[0]}
        extra = sorted(parts - {want[1]})
        self.delivered.append({"result": want[0], "left": parts - {want[1]},
                               "seq": h.event["seq"], "conn": h.event["conn"],
                               "corr": h.event["correlation_id"], "answer_left": set(parts)})
        done = {"released": self.release(h)["seq"]}
        if extra:
            done["also_carries_partitions"] = extra
        answered = self.answered(h.event) if await_append else None
        if answered is not None:
            done["appended"] = f"answered #{answered}"
        return done

    def markers_response(self, msg: dict) -> dict:
        part = msg.get("partition")
        for d in self.delivered:
            if part in d["answer_left"] and d.get("answered"):
                d["answer_left"].discard(part)
                return {"answered_with": d["answered"]}
        ds = [d for d in self.delivered if part in d["answer_left"]
              and d["result"] == bool(msg.get("committed"))]
        if not ds:
            raise self.where.diverged(f"no WriteTxnMarkers for partition {part} was delivered "
                                      "before its answer")
        d = ds[-1]
        h = self.held(lambda h: h.event["api"] == "WriteTxnMarkers"
                      and h.event["direction"] == "response" and h.event["conn"] == d["conn"]
                      and h.event["correlation_id"] == d["corr"], "the WriteTxnMarkers response")
        self.check_error(msg, h.event)
        d["answered"] = self.release(h)["seq"]
        d["answer_left"].discard(part)
        return {"released": d["answered"]}

    def handle_produce(self, msg: dict) -> dict:
        """A gated Produce released to its leader: the oldest held copy from the producer
        carrying the partition, its client's connection open or not (a batch that expired while
        held: its request timed out and the client closed the connection; the proxy still
        delivers it on the upstream one)."""
        p, k = msg.get("producer"), msg.get("partition")
        h = self.held(lambda h: h.event["api"] == "Produce" and h.event["direction"] == "request"
                      and h.event["client_id"] == self.client(p)
                      and k in produce_parts(h.event), f"p{p}'s Produce to partition {k}")
        done = {"released": self.release(h)["seq"]}
        if not h.conn.client_open:
            done["client_gone"] = "its client's connection closed (the request timed out)"
        answered = self.answered(h.event)
        if answered is not None:
            done["appended"] = f"answered #{answered}"
        return done

    def produce_response(self, msg: dict) -> dict:
        """ReceiveProduceResponse (Produce responses gated): the leader's held answer to p's
        Produce carrying partition k checked against the trace's error and released to the
        client, its leader's broker alive or not (one answer carries every partition of its
        request: released at the first step that receives one of them)."""
        p, k = msg.get("producer"), msg.get("partition")
        for d in self.produce_answers:
            if d["producer"] == p and k in d["left"]:
                d["left"].discard(k)
                return {"answered_with": d["seq"]}

        def pred(h):
            e = h.event
            return (e["api"] == "Produce" and e["direction"] == "response"
                    and e["client_id"] == self.client(p) and k in produce_response_parts(e))
        self.held(pred, f"the leader's answer to p{p}'s Produce to partition {k}")
        h = min((h for h in self.proxy.held() if pred(h)), key=lambda h: h.event["seq"])
        self.check_error(msg, h.event)
        up = h.conn.up_open
        self.produce_answers.append({"producer": p, "seq": h.event["seq"],
                                     "left": produce_response_parts(h.event) - {k}})
        done = {"released": self.release(h)["seq"]}
        if not up:
            done["broker_gone"] = "its broker's connection closed before: delivered all the same"
        return done

    def mark_send(self, p: int, k: int) -> None:
        """A send() to partition k by instance p: its Produce comes after this point
        (``seen_produce`` never takes an earlier one: a transaction's batch the trace never
        sends, drained anyway by the real client)."""
        self.send_mark[(p, k)] = len(self.proxy.events())

    def seen_produce_request(self, p: int, k: int) -> dict:
        """SendProduce: the client's Produce carrying partition k (not gated: awaited)."""
        since = self.send_mark.get((p, k), 0)

        def produce(e):
            return (e["api"] == "Produce" and e["direction"] == "request"
                    and e["client_id"] == self.client(p) and k in produce_parts(e)
                    and e["seq"] >= since and (e["seq"], k) not in self.seen_produce)
        try:
            e = self.proxy.wait_for(produce, timeout=STEP_TIMEOUT_S)
        except TimeoutError:
            raise self.where.diverged(f"no Produce to partition {k} from p{p}") from None
        self.seen_produce.add((e["seq"], k))
        self.produce_seen[(p, k)] = e
        return {"seen": e["seq"]}

    def appended_unforced(self, msg: dict, before: dict, after: dict) -> dict:
        """A step of the leader's unforced Produce handling that appends the batch in the trace
        (its partition's log grows): wait for the broker's answer to the Produce SendProduce
        took (it answers once it appended), so that the trace's next step (a stale marker's
        copy released, say) cannot overtake the append."""
        k = msg.get("partition")
        if not isinstance(k, int) or log_length(after, k) <= log_length(before, k):
            return {}
        produce = msg.get("produce") if isinstance(msg.get("produce"), dict) else msg
        request = self.produce_seen.get((produce.get("producer"), k))
        if request is None:
            return {}
        answered = self.answered(request)
        return {"appended": f"answered #{answered}" if answered is not None else
                f"no answer to Produce #{request['seq']} within {APPEND_WAIT_S:g} s"}

    def handle_verification(self, msg: dict) -> dict:
        """HandleVerifyAddPartition (verifications gated): the leader's AddPartitionsToTxn
        carrying the partition released to the coordinator (one request may carry several)."""
        k = msg.get("partition")
        for d in self.verified:
            if k in d["left"]:
                d["left"].discard(k)
                return {"delivered_with": d["seq"]}
        h = self.held(lambda h: _verification(h, "request") and k in verify_parts(h.event,
                                                                                   self.topic),
                      f"the leader's verification of partition {k}")
        parts = set(verify_parts(h.event, self.topic))
        self.verified.append({"left": parts - {k}, "seq": h.event["seq"],
                              "conn": h.event["conn"], "corr": h.event["correlation_id"],
                              "answer_left": set(parts)})
        return {"released": self.release(h)["seq"]}

    def verification_response(self, msg: dict) -> dict:
        """HandleVerifyAddPartitionResponse (verifications gated): the coordinator's answer to
        the partition's verification, checked and released to the leader."""
        k = msg.get("partition")
        for d in self.verified:
            if k in d["answer_left"] and d.get("answered"):
                d["answer_left"].discard(k)
                return {"answered_with": d["answered"]}
        ds = [d for d in self.verified if k in d["answer_left"]]
        if not ds:
            raise self.where.diverged(f"no verification of partition {k} was delivered before "
                                      "its answer")
        d = ds[-1]
        h = self.held(lambda h: _verification(h, "response") and h.event["conn"] == d["conn"]
                      and h.event["correlation_id"] == d["corr"], "the verification's answer")
        self.check_error(msg, h.event)
        d["answered"] = self.release(h)["seq"]
        d["answer_left"].discard(k)
        return {"released": d["answered"]}

    def verification_answer_held(self, k: int) -> dict:
        """A log append that answers a verification (TV2's implicit add): its answer held."""
        h = self.held(lambda h: _verification(h, "response") and k in verify_parts(h.event,
                                                                                    self.topic),
                      f"the coordinator's answer to the verification of partition {k}")
        return {"answer_held": h.event["seq"]}

    def duplicate(self, msg: dict) -> dict:
        """DuplicateRequest: the first copy stays held until its sender's request timeout
        closes the connection and the sender retries on a new one (held too)."""
        api = msg["rpc"]
        match = self.rpc_match(api, msg) if api in ("WriteTxnMarkers",) + CLIENT_APIS else None
        if match is None:
            raise self.where.diverged(f"a duplicate of {api} is not gated here")
        first = self.held(lambda h: match(h) and h.conn.client_open, f"the {api} request")
        timeout = (BROKER_REQUEST_TIMEOUT_MS if api == "WriteTxnMarkers"
                   else CLIENT_REQUEST_TIMEOUT_MS) / 1000 + STEP_TIMEOUT_S
        retry = self.held(lambda h: match(h) and h.conn is not first.conn,
                          f"the sender's retry of {api} on a new connection", timeout)
        self.stale[(api, msg.get("producer"), msg.get("partition"), msg.get("committed"))] = first
        return {"old_copy": first.event["seq"], "old_conn": first.event["conn"],
                "retry": retry.event["seq"], "retry_conn": retry.event["conn"]}

    def lose(self, msg: dict, direction: str) -> dict:
        """LoseRequest / LoseResponse: the held frame's connection closed, the frame dropped."""
        api = msg["rpc"][:-8] if direction == "response" else msg["rpc"]
        if direction == "request":
            match = self.rpc_match(api, msg)
        elif api == "WriteTxnMarkers":
            conns = {(d["conn"], d["corr"]) for d in self.delivered
                     if msg.get("partition") in d["answer_left"]}

            def match(h):
                return h.event["api"] == api and (h.event["conn"],
                                                  h.event["correlation_id"]) in conns
        else:
            match = self.client_frame(msg.get("producer"), api, "response")
        h = self.held(lambda h: match(h) and h.event["direction"] == direction,
                      f"the {api} {direction}")
        self.proxy.drop(h)
        return {"dropped": h.event["seq"], "conn_closed": h.event["conn"]}
