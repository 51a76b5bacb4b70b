"""The client calls of a reproduction (``kafka_mc.realkafka.reproduce``): the real Java producer of
each producer instance of the trace (client.id ``t<tid>.i<instance>``, the names the conformance
mapping reads), its application's calls started where the trace makes them, their outcomes
awaited where the trace receives them, and what the application was told (``outcomes``) and
sent (``sent``), which the anomaly checks read.

| trace step | call |
|---|---|
| InitTransactions(p) | ``initTransactions()`` on instance p (its producer created first), a future |
| BeginTransaction(p) | ``beginTransaction()`` |
| Send(p, k) | ``send(topic, k, value)``: value ``t<tid>.i<instance>.x<txn>.r<n>``; a future, or (where the trace orders the Produce) ``send(record, callback)``: the application goes on at once |
| CommitTransaction(p) / AbortTransaction(p) | ``commitTransaction()`` / ``abortTransaction()``, futures |
| Receive{InitProducerId,EndTxn}Response | the call's outcome, as the trace has it (``await_call``) |
| ReceiveProduceResponse | the ``send()`` future: acknowledged, or failed as the trace says |
| ExpireBatch(p, k) | the ``send()`` fails with ``TimeoutException: Expiring 1 record(s)`` |
| CompleteTransaction(p) | the commit or abort, with no partition added, returns without an EndTxn |
| CrashProducer(p) | instance p abandoned by its application and left running, a zombie the trace may still drive |
"""
from __future__ import annotations

import time
from typing import Any, Callable

from kafka_mc.realkafka import anomalies
from kafka_mc.realkafka.holds import CLIENT_REQUEST_TIMEOUT_MS, STEP_TIMEOUT_S, Holds, Where

ENTER_S = 0.1          # a client call's synchronous part, after its invoke (see entered)
CLIENT_SETTINGS = {
    "request.timeout.ms": str(CLIENT_REQUEST_TIMEOUT_MS),
    "delivery.timeout.ms": "120000",
    "transaction.timeout.ms": "120000",   # no broker timer aborts a transaction the trace holds
    "max.block.ms": "120000",
    "retry.backoff.ms": "100",
    "linger.ms": "0",
}
# A trace with ExpireBatch: the batch must expire while its Produce is held at the proxy, so
# the client's delivery.timeout.ms is short, and its request.timeout.ms equal to it
# (KafkaProducer needs delivery >= linger + request timeout): the request times out when the
# batch expires, so the client never resends it (Sender.canRetry: hasReachedDeliveryTimeout)
EXPIRE_TIMEOUT_MS = 4000
EXPIRING_CLIENT_SETTINGS = {**CLIENT_SETTINGS, "request.timeout.ms": str(EXPIRE_TIMEOUT_MS),
                            "delivery.timeout.ms": str(EXPIRE_TIMEOUT_MS)}
# A trace with no fault of a client's request: request.timeout.ms longer than a step's longest
# wait (a divergence's), so that a request the trace holds is never resent on a new connection
QUIET_CLIENT_REQUEST_TIMEOUT_MS = 60000


def client_settings(actions, expiring: bool) -> dict:
    """The producers' settings: EXPIRING_CLIENT_SETTINGS for a trace with ExpireBatch,
    CLIENT_SETTINGS (a 15 s request timeout: a duplicate, a loss is the client's resend) for one
    with a fault of a client's request, else a request timeout of 60 s."""
    if expiring:
        return dict(EXPIRING_CLIENT_SETTINGS)
    client_fault = any(a[0] in ("DuplicateRequest", "LoseRequest", "LoseResponse", "DelayRequest")
                       and not str((a[1] if len(a) > 1 and isinstance(a[1], dict) else {})
                                   .get("rpc", "")).startswith(("WriteTxnMarkers",
                                                                "VerifyAddPartition"))
                       for a in actions)
    return dict(CLIENT_SETTINGS) if client_fault else {
        **CLIENT_SETTINGS, "request.timeout.ms": str(QUIET_CLIENT_REQUEST_TIMEOUT_MS)}
CLIENT_OPS = {"InitTransactions", "BeginTransaction", "Send", "CommitTransaction",
              "AbortTransaction"}


class Calls:
    """The application's calls on the real producers (the module's docstring)."""

    def __init__(self, driver, topic: str, client: Callable[[int], str],
                 tid_name: Callable[[int], str], where: Where, holds: Holds,
                 async_sends: bool, settings: dict):
        self.driver, self.topic, self.client, self.tid_name = driver, topic, client, tid_name
        self.where, self.holds = where, holds
        # where the trace orders the Produce (or its verification): send(record, callback)
        self.async_sends, self.settings = async_sends, settings
        self.producers: dict[int, Any] = {}
        self.ops: dict[tuple, Any] = {}          # ("init"|"end", p) / ("send", p, txn, n)
        self.send_ident: dict[tuple, tuple] = {}
        self.send_partition: dict[tuple, int] = {}   # ("send", p, txn, n) -> its partition
        self.expired: set[tuple] = set()             # ... of the batches expired
        self.outcomes: dict[tuple, str] = {}
        self.sent: dict[tuple, list[str]] = {}
        self.crashed: set[int] = set()

    def warm_up(self, run_id: str) -> None:
        """The transaction log loaded by an ungated producer (else the trace's first
        InitProducerId is answered COORDINATOR_LOAD_IN_PROGRESS, a state the model has not)."""
        warm = self.driver.producer("warmup", f"kmc-repro-{run_id}-warmup", **CLIENT_SETTINGS)
        warm.init_transactions(timeout=120)
        warm.close()

    def call(self, name: str, action: tuple, before: dict, after: dict) -> dict | None:
        """The producer calls (initTransactions, beginTransaction, send, commit/abort),
        started, not awaited; None if the step is not one."""
        done: dict = {}
        if name == "InitTransactions":
            p = action[1]
            pr = after["producers"][p]
            if p not in self.producers:
                self.producers[p] = self.driver.producer(
                    self.client(p), self.tid_name(pr["tid"]), **self.settings)
            self.ops[("init", p)] = self.producers[p].start_init_transactions()
        elif name == "BeginTransaction":
            self.producers[action[1]].begin_transaction(timeout=STEP_TIMEOUT_S)
        elif name == "Send":
            done["value"] = self._send(action[1], action[2], before)
        elif name in ("CommitTransaction", "AbortTransaction"):
            p = action[1]
            pr = before["producers"][p]
            op = self.producers[p].start_commit_transaction() if name == "CommitTransaction" \
                else self.producers[p].start_abort_transaction()
            self.ops[("end", p)] = op
            self.ops[("end-ident", p)] = (pr["tid"], pr["instance"], pr["txn"],
                                          name == "CommitTransaction")
            self.entered(op)
        else:
            return None
        return done

    def _send(self, p: int, k: int, before: dict) -> str:
        pr = before["producers"][p]
        ident = (pr["tid"], pr["instance"], pr["txn"])
        n = pr["records"]
        value = anomalies.record_value(*ident, n)
        # Where the trace orders the Produce (gated), send(record, callback): the application
        # goes on at once, as the model's does (a blocking send would queue its next call, an
        # abort say, behind the answer it waits for). Elsewhere a blocking send(), each record
        # its own Produce (one request per record, released as the trace has them; async sends
        # to two partitions of a broker share one)
        producer = self.producers[p]
        start = producer.send_async if self.async_sends else producer.start_send
        key = ("send", p, pr["txn"], n)
        self.ops[key] = start(self.topic, k, value, value)
        self.send_ident[key] = (ident, value)
        self.send_partition[key] = k
        self.holds.mark_send(p, k)
        self.entered(self.ops[key])
        return value

    def entered(self, op) -> None:
        """Where the trace orders its Produce (``async_sends``): a client call started, not
        awaited, has entered the client's method (the driver's invoke) and had ENTER_S to do
        what it does at once (send() appends to the accumulator, abortTransaction() moves to
        ABORTING), so that the trace's next step (an answer released) meets the client in the
        state the trace has it in. (Elsewhere sends block, and a call queued behind one is
        entered only once it is answered: not awaited, as before.)"""
        invoked = getattr(op, "invoked", None)
        if self.async_sends and invoked is not None and invoked.wait(STEP_TIMEOUT_S):
            time.sleep(ENTER_S)

    def wait(self, key, ok: bool, what: str):
        """The call's outcome (None: it succeeded); one that fails where the trace has it
        succeed is a divergence."""
        op = self.ops.get(key)
        if op is None:
            return None
        err = op.exception(timeout=STEP_TIMEOUT_S)
        if ok and err is not None:
            raise self.where.diverged(f"{what} failed on the real client ({err.cls}: "
                                      f"{str(err)[:160]}); the trace has it succeed")
        return err

    def answered(self, api: str, p: int, ok: bool, after: dict | None = None) -> None:
        """InitProducerId / EndTxn answered (released): the client's call returns as the trace
        says; an EndTxn's outcome is what the application was told. An error the client retries
        (the trace's client sends the request again: CONCURRENT_TRANSACTIONS) returns nothing:
        its call is not awaited (its retry, held at the proxy, must not outwait the client's
        request.timeout.ms, or the client resends it on a new connection, a duplicate the trace
        has not)."""
        if not ok and after is not None and \
                after["producers"][p].get("in_flight_request") == api:
            return
        if api == "InitProducerId":
            self.wait(("init", p), ok, "initTransactions()")
        elif api == "EndTxn":
            err = self.wait(("end", p), ok, "commitTransaction()/abortTransaction()")
            tid, inst, txn, commit = self.ops[("end-ident", p)]
            self.outcomes[(tid, inst, txn)] = ("committed" if commit else "aborted") \
                if err is None else "failed"

    def complete(self, p: int, after: dict) -> dict:
        """CompleteTransaction(p): no partition was added, so the client ends the transaction
        without an EndTxn (TransactionManager.completeTransaction): its commit or abort returns
        (with an epoch bump required, after the InitProducerId it sends, a later step)."""
        if str(after["producers"][p]["state"]) != "READY":
            return {"mapped": "the client completes it without EndTxn; its InitProducerId "
                              "(an epoch bump) goes on at the trace's next steps"}
        self.answered("EndTxn", p, True)
        return {"mapped": "the client's commit/abort returned without an EndTxn (nothing added)"}

    def produce_answered(self, msg: dict) -> dict:
        """ReceiveProduceResponse: the record's ``send()`` future, as the trace has it."""
        req = msg["request"]
        key = ("send", msg["producer"], req["txn"], req["n"])
        err = self.wait(key, msg.get("error") == "NONE", f"send() of record {req['n']}")
        if err is None and key in self.send_ident:
            ident, value = self.send_ident[key]
            self.sent.setdefault(ident, []).append(value)
        return {"record": self.send_ident.get(key, (None, None))[1]}

    def expire_batch(self, p: int, k: int) -> dict:
        """ExpireBatch(p, k): p's batch for partition k, its Produce held at the proxy, expires
        in the client (delivery.timeout.ms, EXPIRING_CLIENT_SETTINGS): its send() fails with a
        TimeoutException ("Expiring 1 record(s)"), which the real client reports as an
        abortable error and which needs an epoch bump (TransactionManager.handleFailedBatch)."""
        keys = [key for key, part in self.send_partition.items()
                if key[1] == p and part == k and key not in self.expired]
        if not keys:
            raise self.where.diverged(f"p{p} has no record sent to partition {k}")
        key = keys[-1]
        err = self.ops[key].exception(timeout=EXPIRE_TIMEOUT_MS / 1000 + STEP_TIMEOUT_S)
        if err is None or "Timeout" not in err.cls:
            raise self.where.diverged(f"p{p}'s send() to partition {k} "
                                      + ("succeeded" if err is None else f"failed with {err.cls}")
                                      + "; the trace has its batch expire")
        self.expired.add(key)
        return {"expired": self.send_ident.get(key, (None, None))[1],
                "error": f"{err.cls}: {str(err)[:120]}"}

    def crash(self, p: int) -> dict:
        """CrashProducer(p): the application abandons instance p and starts the next one; the
        old instance lives on as the model's zombie does (its requests in flight still arrive,
        gated where the trace orders them, and the trace may still drive its calls). A
        crashed process's requests still on the wire are what makes a zombie: closing its
        connections would lose them."""
        self.crashed.add(p)
        return {"mapped": f"instance p{p} abandoned by its application, left running (a zombie)"}

    def settle(self) -> None:
        """The calls still pending awaited: records sent and transactions' outcomes."""
        for key, op in list(self.ops.items()):
            if key[0] in ("init", "send", "end") and hasattr(op, "exception"):
                try:
                    err = op.exception(timeout=STEP_TIMEOUT_S)
                except Exception:
                    err = "pending"
                if key[0] == "send" and err is None and key in self.send_ident:
                    ident, value = self.send_ident[key]
                    if value not in self.sent.get(ident, []):
                        self.sent.setdefault(ident, []).append(value)
                if key[0] == "end":
                    tid, inst, txn, commit = self.ops[("end-ident", key[1])]
                    self.outcomes.setdefault((tid, inst, txn), (
                        "committed" if commit else "aborted") if err is None else "unknown")

    def consumer_poll(self, c: int, partitions: int) -> dict:
        """Fetch(c, k): a read_committed consumer's poll (what it returns is kept, not
        compared)."""
        if ("consumer", c) not in self.ops:
            self.ops[("consumer", c)] = self.driver.consumer(f"c{c}", None)
            self.ops[("consumer", c)].assign(self.topic, list(range(partitions)))
        got = self.ops[("consumer", c)].poll(0.5)
        return {"read": [r["value"] for r in got],
                "mapped": "a read_committed poll (what it returns is kept, not compared)"}
