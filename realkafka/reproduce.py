"""``kafka-mc real reproduce TRACE``: a model counterexample executed on a real cluster.

The trace (ITF, read by ``traces``; checked to replay on the model first, so a tampered trace is
refused) names its preset; the run uses the newest supported release standing for that preset
(``kafka_mc.realkafka.releases``), or ``--version``. One broker (it is the transaction coordinator and the
leader of every partition), its CLIENT and INTERNAL listeners behind the recording proxy, the
release's own Java client (one ``KafkaProducer`` per producer instance of the trace, client.id
``t<tid>.i<instance>``, transactional.id ``kmc-repro-<run>-t<tid>``) and a topic of the trace's partitions.

Gating. The proxy holds, with ``Fault(HOLD, count=None)``, every request and response of the
transactional APIs the trace orders: on the clients' listener InitProducerId, AddPartitionsToTxn
(the client's form), AddOffsetsToTxn, EndTxn, TxnOffsetCommit; on the inter-broker listener
WriteTxnMarkers. Each held frame goes on only when the trace delivers it. Everything else
(Metadata, FindCoordinator, Produce, Fetch, the leaders' KIP-890 verifications and TV2's implicit
adds) passes: the trace's steps on them are waited for through their visible effect.

| trace step | on the real cluster |
|---|---|
| InitTransactions(p) / BeginTransaction(p) / Send(p, k) / CommitTransaction(p) / AbortTransaction(p) | the Java client's ``initTransactions()`` (a future), ``beginTransaction()``, ``send(topic, k, value)`` (a future; value ``t<tid>.i<instance>.x<txn>.r<n>``), ``commitTransaction()`` / ``abortTransaction()`` (futures) on instance p; where the trace orders its Produce, send(record, callback) (the application goes on at once) and a send or an end of transaction awaited until the client entered the call (ENTER_S after its invoke) |
| Send<Rpc>(p) (AddPartitionsToTxn, EndTxn, ...) | wait until the client's request is held at the proxy (the real Sender sends it on its own) |
| Handle<Rpc>(msg) on the coordinator, a client's request | release the held request (the newest copy, on a live connection; ``disconnected``: the old copy of a DuplicateRequest) |
| CommitTxnLogAppend(tid) (the coordinator's log append, internal) | wait for its visible effect: its answer held at the proxy (when the model replies: the coordinator answers only once the append completed), its WriteTxnMarkers held (when the model sends markers), else DescribeTransactions showing the model's new state (CompleteCommit/CompleteAbort) |
| Receive<Rpc>Response(msg) | check the held response's error against the trace's, release it; InitProducerId / EndTxn: the client's call returns as the trace says |
| HandleWriteTxnMarkers(msg) | release the held WriteTxnMarkers request carrying the partition's marker (one request per broker carries every partition's marker: the first step releases it, the others find it delivered); ``disconnected`` / ``held_back``: the old copy of the DuplicateRequest, delivered on its old connection (its answer has no one to go to) |
| HandleWriteTxnMarkersResponse(msg) | check and release the held WriteTxnMarkers response |
| SendProduce(p, k, n) / HandleProduce / HandleVerifyAddPartition(Response) | not gated: wait for the client's Produce carrying partition k (one Produce per broker carries every partition); the leader's verification (3.6+, TV1) or implicit add (TV2) happens unforced. In a trace with an ExpireBatch the Produce is gated: HandleProduce releases the oldest held copy (its client may have given up on it) and waits for its answer (the append) |
| HandleWriteTxnMarkers / HandleProduce (released), where the Produce is gated | the step ends when the broker answered (its append done, at most APPEND_WAIT_S): a marker and a produce released one after the other on two connections do not race in the broker |
| ExpireBatch(p, k) | (``--brokers 3``, the partitions off the coordinator's broker) the batch's Produce held while the client's delivery.timeout.ms passes (request.timeout.ms = delivery.timeout.ms = 4 s for such a trace: the request times out as the batch expires, never resent); wait for ``send()`` to fail with ``TimeoutException: Expiring 1 record(s)`` |
| ReceiveProduceResponse(msg) | wait for the ``send()`` future of the record: acknowledged (error NONE) or failed as the trace says |
| DuplicateRequest(msg) | the first copy stays held until its sender's request.timeout.ms closes the connection and the sender retries on a new connection (held too); the old copy is delivered when the trace handles it ``disconnected`` |
| DelayRequest(msg) | nothing: the request stays held until the trace handles it |
| LoseRequest(msg) / LoseResponse(msg) | the held frame's connection is closed (the frame dropped): the sender retries |
| CrashProducer(p) | instance p is closed at once and abandoned; the next instance of its transactional.id starts at its InitTransactions |
| ElectCoordinator | the coordinator's broker restarted (clean shutdown) |
| PartitionOffline(k) | (``--brokers 3``; every partition then placed on a broker other than the coordinator's) partition k's only replica's broker killed and kept down until the controller fenced it: the partition's leader is -1 (NO_LEADER) |
| ElectLeader(k) | that broker started again and elected partition k's leader (waited for); a broker still down when the trace ends is started before the evidence is read |
| Fetch(c, k) | a read_committed consumer's poll (its records kept in steps.jsonl, not compared) |
| a lasso stuttering in its last state (liveness) | the stem run as above; then every gate lifted and the transaction watched for LASSO_BOUND_S (30 s, 7x the marker channel's request.timeout.ms: a coordinator that would retry has retried several times by then): stuck in the loop's Prepare*/Ongoing state all along is reproduced, with the WriteTxnMarkers sent meanwhile counted; a lasso whose loop has steps is refused (exit 2) |

Mapping onto another release (``--version``): a TV1 trace on a TV2 release (4.x) has no client
AddPartitionsToTxn: the partition is added by the leader when the Produce arrives (KIP-890 part
2), so SendAddPartitionsToTxn / HandleAddPartitionsToTxn / ReceiveAddPartitionsToTxnResponse are
satisfied by nothing to do (their effect is waited for at the next CommitTxnLogAppend: the
coordinator's state); producer epochs differ (TV2 bumps at every EndTxn) and are not compared.

What cannot be forced: the broker's own timers (the marker channel's request.timeout.ms that
makes a duplicate: 4 s here, BROKER_SETTINGS; transaction.timeout.ms), the real client's own
order of Produce and transactional requests on one connection (a held frame holds every later
frame of its connection: a trace that needs them reordered on one connection waits and is
reported diverged), the leader's verification (not held), and the batching of one broker's
markers and one client's partitions into one request each. Transaction timeouts, broker
failover by kill, state loss, transactional.id expirations, rebalances and
consume-transform-produce steps are not mapped yet: such a trace is refused (exit 2) naming the
step.

``--brokers 3``: each partition led by its own broker (replication factor one everywhere), so the
markers of one transaction to two partitions and one client's records to two partitions are
separate requests, released at the trace's own steps. With one broker they share one request,
released at the first step that delivers one of them (steps.jsonl says ``also_carries_partitions``
and report.json's notes name the shared leaders): a trace that orders a stale marker between two
partitions' markers then depends on a race on the broker.

Found with it (command, verdict, evidence, seconds of the run; out/ holds the files):
- ``tests/golden/kafka-3.6-two-transactions.committed_writes_visible`` (kafka-3.6, KAFKA-17754's
  class) on 3.6.2 and 3.9.2: reproduced, exit 12, ~16 s: the stale ABORT copy (answered NONE)
  lands at partition 0 after the second transaction's record, whose commit succeeds; the record is
  never read under read_committed (partition 0: ABORT, record, ABORT, COMMIT). On 4.4.0: not
  reproduced, exit 0, ~17 s: TV2's markers carry the bumped epoch and the stale copy is answered
  INVALID_PRODUCER_EPOCH (KIP-1228).
- the TV2 late ABORT (``kafka-mc check two-transactions --protocol kafka-4.0.2 --set
  cluster.partitions=2 --set workload.records_per_transaction=2 --set faults.request_delays=1
  --set faults.request_duplicates=1 --explorer simulate --swarm``, txn_atomicity, 42 steps) on
  4.0.2 and 4.1.2 ``--brokers 3``: reproduced, exit 12, 19-24 s (partition 1: record at epoch
  1, the stale ABORT at epoch 1 accepted, then COMMIT at epoch 2; partition 0 committed); on
  4.2.2: not reproduced, exit 0, 21-26 s (the stale ABORT answered INVALID_PRODUCER_EPOCH).
- the KAFKA-19999 lasso (``kafka-mc check tiny --protocol kafka-4.2 --set
  faults.response_losses=1 --explorer graph --invariant eventual_completion``: PrepareAbort for
  good after a lost marker answer and a rejected equal-epoch retry): no release stands for
  kafka-4.2 (4.2 was never released; 4.2.0 shipped KIP-1228 with the fix); on 4.2.2 it diverges,
  exit 16, 13 s, at step 20 HandleWriteTxnMarkersResponse: the retry is answered NONE where the
  trace answers INVALID_PRODUCER_EPOCH, and the transaction completes (CompleteAbort).
- the hanging transaction KIP-890 closed (``tests/model/hanging-kafka-2.7.itf.json``:
  ``kafka-mc check tiny --protocol kafka-2.7 --set faults.batch_expiries=1 --set
  faults.producer_crashes=0 --set cluster.producers_per_id=1``, no_hanging_transactions, 20
  steps) on 3.5.2 ``--brokers 3``: reproduced, exit 12, ~47 s (30 s of it the quiescence that
  never comes): the batch expired in the client while held, the abort completed, then the batch
  was appended after its own ABORT marker (partition 0: ABORT, record; LSO 1 < high watermark 2
  for good). On 3.6.2: not reproduced, exit 0, ~18 s: the leader verified the late batch with
  the coordinator (verify_only, CONCURRENT_TRANSACTIONS) and answered it NOT_ENOUGH_REPLICAS.
- the same hang from a client-side duplicate (``tests/model/hanging-endtxn-kafka-2.7.itf.json``:
  ``kafka-mc check two-transactions --protocol kafka-2.7 --set faults.request_duplicates=1``, 32
  steps) on 3.5.2 ``--brokers 3``: reproduced, exit 12, ~60 s: the first transaction's
  EndTxn(ABORT), resent by the client after its request timeout, lands as the old copy while the
  second transaction is Ongoing at the same epoch and aborts it; its record lands after that
  ABORT (ABORT, ABORT, record; LSO 2 < high watermark 3). On 3.6.2: not reproduced, ~31 s.

Every one of these real runs also conforms to the model of its release's preset
(``kafka-mc real conform --run OUT/conform``, the run's end state included: 23 to 55
observations explained, under 0.1 s). Not run: the positive side of a lasso (no supported
release is stuck: every release with KIP-1228 has KAFKA-19999's fix), KAFKA-6119 (kafka-0.11)
and KIP-447 (kafka-1.0): no release stands for those presets, and ``--version`` maps them onto
releases that have the fixes.

Verdict: after the last step every gate is lifted, the cluster quiesces (a trace that leaves a
transaction Ongoing: until nothing is being completed), a read_committed consumer reads every
partition. Here, the anomalies of ``kafka_mc.realkafka.anomalies`` named after the trace's
property make it ``reproduced`` (exit 12); the schedule run to its end without that property
violated is ``not-reproduced`` (exit 0); a step whose awaited effect never came, or came with
other fields (an error, a failed call), is ``diverged`` (exit 16), naming the step, the event
and its fields. ``kafka-mc real reproduce`` then judges the trace's property on the model's
behaviours the recorded run (``OUT/conform``) conforms to and that judgement is the verdict
(``kafka_mc.explorers.guided.reproduction``: the harness sees no model).
Under ``--out``: events.jsonl (proxy), history.jsonl (client), steps.jsonl (each step: what was
done, the events released or awaited), report.json (verdict, end state: partition logs with
batches and markers, LSO and high watermark, DescribeTransactions, DescribeProducers, the
read_committed records), the broker's log.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_mc.realkafka import anomalies, releases
from kafka_mc.realkafka.releases import Release

EXIT_NOT_REPRODUCED, EXIT_USAGE, EXIT_REPRODUCED, EXIT_DIVERGED = 0, 2, 12, 16
STEP_TIMEOUT_S = 30.0
ENTER_S = 0.1          # a client call's synchronous part, after its invoke (see _entered)
APPEND_WAIT_S = 5.0    # a released marker or produce: how long its answer (its append) is awaited
LASSO_BOUND_S = 30.0   # a stuttering lasso: how long the real transaction must stay stuck
BROKER_REQUEST_TIMEOUT_MS = 4000
BROKER_SETTINGS = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "transaction.max.timeout.ms": "600000",
    "request.timeout.ms": str(BROKER_REQUEST_TIMEOUT_MS),   # the marker channel's: a duplicate
}
ONE_COPY = {   # one copy of everything: a three-broker run is for separate leaders, not replication
    "default.replication.factor": "1", "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1"}
CLIENT_REQUEST_TIMEOUT_MS = 15000   # longer than any hold a trace makes without a client fault
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
CLIENT_APIS = ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
               "TxnOffsetCommit")
BROKER_APIS = ("WriteTxnMarkers",)
CLIENT_OPS = {"InitTransactions", "BeginTransaction", "Send", "CommitTransaction",
              "AbortTransaction"}
FAULTS = {"DuplicateRequest", "DelayRequest", "LoseRequest", "LoseResponse", "CrashProducer",
          "ElectCoordinator", "PartitionOffline", "ElectLeader", "ExpireBatch"}
OFFLINE_WAIT_S = 30.0   # past FENCED_AFTER_S: a loaded controller may take longer to fence
INTERNAL = {"CommitTxnLogAppend", "Fetch", "SendProduce", "HandleProduce", "HandleVerifyAddPartition",
            "HandleVerifyAddPartitionResponse", "ReceiveProduceResponse",
            "HandleWriteTxnMarkers", "HandleWriteTxnMarkersResponse"}
RPC_STEPS = {f"{k}{r}" for r in ("InitProducerId", "AddPartitionsToTxn", "EndTxn")
             for k in ("Send", "Handle", "Receive")}
SUPPORTED = CLIENT_OPS | FAULTS | INTERNAL | {s if not s.startswith("Receive") else s + "Response"
                                              for s in RPC_STEPS}
SUPPORTED -= {"SendInitProducerId"}


class ReproduceError(ValueError):
    """A trace this command cannot run: one line, exit 2."""


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


# ---------------------------------------------------------------------------- the trace


@dataclass
class Loaded:
    trace: Any
    path: str
    property: str
    preset: str
    partitions: int


def load(path: str) -> Loaded:
    """The trace, checked: a trace of the explicit Kafka model that replays to its claimed
    violation, every step of which has a real counterpart here; else ``ReproduceError``."""
    from kafka_mc.traces import replay as replays
    from kafka_mc.traces import trace as traces
    try:
        t = traces.read(path)
    except traces.TraceError as e:
        raise ReproduceError(str(e)) from None
    meta = t.meta
    if meta.get("explorer") == "symbolic":
        raise ReproduceError(f"{path}: a symbolic trace (the symbolic model's variables); only "
                             "traces of the explicit Kafka model run on real Kafka")
    if meta.get("model") != "kafka":
        raise ReproduceError(f"{path}: a trace of model {str(meta.get('model'))[:40]!r}; real "
                             "Kafka runs traces of the kafka model only")
    try:
        r = replays.replay(t)
    except (traces.TraceError, ValueError) as e:
        raise ReproduceError(f"{path}: the trace does not replay on the model "
                             f"({' '.join(str(e).split())[:200]}): tampered or of another "
                             "kafka-mc") from None
    if not r.reproduced:
        raise ReproduceError(f"{path}: the trace replays but does not show its claim "
                             f"({r.message[:160]})")
    if t.loop is not None and (t.loop != len(t.states) - 1 or t.loop_action is not None):
        raise ReproduceError(f"{path}: a lasso whose loop has steps (back to state {t.loop}): "
                             "only a lasso that stutters in its last state runs on real Kafka "
                             "yet")
    for i, a in enumerate(t.actions, 1):
        if a[0] not in SUPPORTED:
            raise ReproduceError(f"{path}: step {i} {a[0]} has no real counterpart in this "
                                 "harness yet")
    cfg = meta.get("config") or {}
    preset = (meta.get("protocol") or {}).get("version") or \
        (cfg.get("protocol") or {}).get("version")
    return Loaded(t, str(path), meta["property"], str(preset),
                  int((cfg.get("cluster") or {}).get("partitions", 1)))


def gates_produce(actions) -> bool:
    """Whether the trace orders its Produce requests, so that they are held at the proxy until
    its HandleProduce: a batch that expires in the client (ExpireBatch), or a fault of a
    client's request (a duplicate, a loss, a delay: a stale EndTxn copy landing in the next
    transaction, after whose markers the trace then delivers that transaction's batch). Other
    traces let Produce pass (the leader handles it unforced)."""
    def client_fault(a):
        m = a[1] if len(a) > 1 and isinstance(a[1], dict) else {}
        return a[0] in ("DuplicateRequest", "LoseRequest", "DelayRequest") \
            and m.get("rpc") in CLIENT_APIS + ("Produce",)
    return any(a[0] == "ExpireBatch" or client_fault(a) for a in actions)


def release_for(preset: str, version: str | None) -> Release:
    """``--version`` (checked) or the newest supported release standing for ``preset``."""
    if version:
        return releases.release(version)
    standing = [r for r in releases.RELEASES if r.preset == preset]
    if not standing:
        have = sorted({r.preset for r in releases.RELEASES})
        raise ReproduceError(f"no supported Kafka release stands for preset {preset!r} (releases "
                             f"stand for {', '.join(have)}); pick one with --version")
    return releases.release(standing[-1].version)


# ---------------------------------------------------------------------------- the run


def _norm(state) -> str:
    return str(state or "").replace("_", "").lower()


def _errors(event: dict) -> set[str]:
    return {e.get("name") for e in event.get("errors") or ()}


def _marker_parts(event: dict, topic: str) -> list[tuple[bool | None, int]]:
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


def _log_length(state: dict, k: int) -> int:
    """The length of partition k's log in a trace state."""
    try:
        return len(state["partitions"][k]["log"])
    except (KeyError, IndexError, TypeError):
        return 0


def _produce_parts(event: dict) -> set[int]:
    return {pd.get("index") for t in (event.get("fields") or {}).get("topic_data") or ()
            for pd in t.get("partition_data") or ()}


@dataclass
class Result:
    verdict: str
    exit_code: int
    trace: str
    property: str
    version: str
    preset: str
    steps_run: int
    steps: int
    seconds: float
    out: str
    divergence: dict | None = None
    anomalies: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    # the property judged on the model's behaviours the run conforms to
    # (kafka_mc.explorers.guided.verdict; its ``lines`` for a person)
    judgement: dict | None = None

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in (
            "verdict", "exit_code", "trace", "property", "version", "preset", "steps_run",
            "steps", "seconds", "out", "divergence", "anomalies", "notes", "evidence",
            "judgement")}


def rewrite_report(result: Result) -> None:
    """report.json under the run folder with ``result``'s verdict, exit code, judgement and
    notes (the rest as the run wrote it), written atomically."""
    path = Path(result.out) / "report.json"
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        report = {}
    report.update({k: v for k, v in result.to_dict().items()
                   if k in ("verdict", "exit_code", "judgement", "notes")})
    tmp = path.with_name("report.json.tmp")
    tmp.write_text(json.dumps(report, indent=1, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


class _Run:
    def __init__(self, loaded: Loaded, release: Release, out: Path, log, brokers: int = 1):
        self.brokers = brokers
        self.t, self.loaded, self.release, self.out, self.log = \
            loaded.trace, loaded, release, out, log
        self.tv2 = release.transaction_version >= 2
        self.trace_tv = int((self.t.meta.get("settings") or {}).get(
            "protocol.transaction_version", 1))
        self.run_id = secrets.token_hex(3)
        self.topic = f"kmc-repro-{self.run_id}"
        self.producers: dict[int, Any] = {}
        self.ops: dict[tuple, Any] = {}          # ("init"|"end", p) / ("send", p, txn, n)
        self.send_ident: dict[tuple, tuple] = {}
        self.outcomes: dict[tuple, str] = {}
        self.sent: dict[tuple, list[str]] = {}
        self.stale: dict[tuple, Any] = {}         # a DuplicateRequest's old copy (a Held)
        self.down: dict[int, int] = {}            # partition -> its broker, killed (offline)
        self.delivered: list[dict] = []           # released WriteTxnMarkers: result, parts left
        self.seen_produce: set[tuple] = set()
        self.send_partition: dict[tuple, int] = {}   # ("send", p, txn, n) -> its partition
        self.expired: set[tuple] = set()             # ... of the batches expired
        self.send_mark: dict[tuple, int] = {}        # (p, k) -> proxy events before its send()
        self.produce_seen: dict[tuple, dict] = {}    # (p, k) -> the Produce SendProduce took
        # Produce gated (released at the trace's HandleProduce) where the trace orders it
        self.gate_produce = gates_produce(self.t.actions)
        # short client timeouts: a batch must expire while its Produce is held
        self.expiring = any(a[0] == "ExpireBatch" for a in self.t.actions)
        self.notes: list[str] = []
        self.steps_file = None

    # -- helpers
    def client(self, p: int) -> str:
        """Producer instance p's client.id and history process: ``t<tid>.i<instance>``, the
        names the conformance mapping (kafka_mc.model.kafka.capabilities.observations) reads."""
        pr = self.t.states[0]["producers"][p]
        return f"t{pr['tid']}.i{pr['instance']}"

    def tid_name(self, tid: int) -> str:
        return f"kmc-repro-{self.run_id}-t{tid}"

    def _step_log(self, i: int, action: tuple, label: str, **what) -> None:
        rec = {"step": i, "action": action[0], "label": label,
               "time_s": round(time.monotonic() - self.t0, 3), **what}
        self.steps_file.write(json.dumps(rec, default=str) + "\n")
        self.steps_file.flush()

    def _held(self, pred, what: str, timeout: float = STEP_TIMEOUT_S):
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
                raise Diverged(self.i, self.name, f"{what} never came within {timeout:.0f} s "
                               f"(held now: {', '.join(held) or 'nothing'})")
            time.sleep(0.03)

    def _client_frame(self, p: int, api: str, direction: str, live: bool = True):
        def pred(h):
            e = h.event
            return (e["api"] == api and e["direction"] == direction
                    and e["client_id"] == self.client(p) and (h.conn.client_open or not live))
        return pred

    def _release(self, h) -> dict:
        self.proxy.release(h)
        return h.event

    def _check_error(self, msg: dict, event: dict) -> None:
        want = msg.get("error", "NONE")
        got = _errors(event)
        if (want == "NONE" and got) or (want != "NONE" and want not in got):
            raise Diverged(self.i, self.name, f"the trace answers {want}, real Kafka answered "
                           f"{', '.join(sorted(got)) or 'NONE'}", event)

    def _wait_op(self, key, ok: bool, what: str):
        op = self.ops.get(key)
        if op is None:
            return None
        err = op.exception(timeout=STEP_TIMEOUT_S)
        if ok and err is not None:
            raise Diverged(self.i, self.name, f"{what} failed on the real client "
                           f"({err.cls}: {str(err)[:160]}); the trace has it succeed")
        return err

    def _coordinator_state(self, tid: int, want: str, timeout: float = STEP_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        last = None
        while True:
            d = self.admin.describe_transactions([self.tid_name(tid)]).get(self.tid_name(tid), {})
            last = d.get("state")
            if _norm(last) == _norm(want):
                return last
            if _norm(want).startswith("complete") and last and not _norm(last).startswith(
                    "prepare"):
                # it left Prepare*: the next transaction (its add is not gated: the leader's
                # implicit add under TV2) may already have made it Ongoing
                return f"{last} (past {want})"
            if time.monotonic() > deadline:
                raise Diverged(self.i, self.name, f"the coordinator's state for transactional.id "
                               f"t{tid} stayed {last!r}; the trace's log append makes it {want}")
            time.sleep(0.1)

    # -- steps
    def step(self, i: int, action: tuple, before: dict, after: dict, label: str) -> None:
        """Step i of the trace on the real cluster: a client call, a message released or a
        fault, each in its group (``_client_call``, ``_message``, ``_environment``); logged."""
        self.i, self.name = i, action[0]
        done = self._client_call(i, action[0], action, before, after)
        if done is None:
            done = self._message(i, action[0], action, before, after)
        if done is None:
            done = self._environment(i, action[0], action, before, after)
        if done is None:   # load() refuses these
            raise ReproduceError(f"step {i} {action[0]}: no real counterpart")
        self._step_log(i, action, label, **done)

    def _client_call(self, i: int, name: str, action: tuple, before: dict, after: dict
                     ) -> dict | None:
        """The producer calls (initTransactions, beginTransaction, send, commit/abort),
        started, not awaited; None if the step is not one."""
        done: dict = {}
        if name == "InitTransactions":
            p = action[1]
            pr = after["producers"][p]
            if p not in self.producers:
                self.producers[p] = self.driver.producer(
                    self.client(p), self.tid_name(pr["tid"]),
                    **(EXPIRING_CLIENT_SETTINGS if self.expiring else CLIENT_SETTINGS))
            self.ops[("init", p)] = self.producers[p].start_init_transactions()
        elif name == "BeginTransaction":
            self.producers[action[1]].begin_transaction(timeout=STEP_TIMEOUT_S)
        elif name == "Send":
            p, k = action[1], action[2]
            pr = before["producers"][p]
            ident = (pr["tid"], pr["instance"], pr["txn"])
            n = pr["records"]
            value = anomalies.record_value(*ident, n)
            # Where the trace orders the Produce (gated), send(record, callback): the
            # application goes on at once, as the model's does (a blocking send would queue
            # its next call, an abort say, behind the answer it waits for). Elsewhere a
            # blocking send(), each record its own Produce (one request per record, released
            # as the trace has them; async sends to two partitions of a broker share one)
            producer = self.producers[p]
            start = producer.send_async if self.gate_produce else producer.start_send
            self.ops[("send", p, pr["txn"], n)] = start(self.topic, k, value, value)
            self.send_ident[("send", p, pr["txn"], n)] = (ident, value)
            self.send_partition[("send", p, pr["txn"], n)] = k
            # its Produce comes after this point (SendProduce never takes an earlier one: a
            # transaction's batch the trace never sends, drained anyway by the real client)
            self.send_mark[(p, k)] = len(self.proxy.events())
            self._entered(self.ops[("send", p, pr["txn"], n)])
            done["value"] = value
        elif name in ("CommitTransaction", "AbortTransaction"):
            p = action[1]
            pr = before["producers"][p]
            op = self.producers[p].start_commit_transaction() if name == "CommitTransaction" \
                else self.producers[p].start_abort_transaction()
            self.ops[("end", p)] = op
            self.ops[("end-ident", p)] = (pr["tid"], pr["instance"], pr["txn"],
                                          name == "CommitTransaction")
            self._entered(op)
        else:
            return None
        return done

    def _entered(self, op) -> None:
        """Where the trace orders its Produce (``gate_produce``): a client call started, not
        awaited, has entered the client's method (the driver's invoke) and had ENTER_S to do
        what it does at once (send() appends to the accumulator, abortTransaction() moves to
        ABORTING), so that the trace's next step (an answer released) meets the client in the
        state the trace has it in. (Elsewhere sends block, and a call queued behind one is
        entered only once it is answered: not awaited, as before.)"""
        invoked = getattr(op, "invoked", None)
        if self.gate_produce and invoked is not None and invoked.wait(STEP_TIMEOUT_S):
            time.sleep(ENTER_S)

    def _message(self, i: int, name: str, action: tuple, before: dict, after: dict
                 ) -> dict | None:
        """A request or response of the client APIs, Produce or WriteTxnMarkers held by the
        proxy and released (or mapped), and the log append; None if the step is not one."""
        done: dict = {}
        if name.startswith("Send") and name[4:] in CLIENT_APIS:
            api = name[4:]
            if api == "AddPartitionsToTxn" and self.tv2:
                done["mapped"] = "TV2: no client AddPartitionsToTxn (the leader adds the partition)"
            else:
                h = self._held(self._client_frame(action[1], api, "request"),
                               f"the client's {api} request")
                done["held"] = h.event["seq"]
        elif name.startswith("Handle") and name[6:] in CLIENT_APIS:
            api, msg = name[6:], action[1]
            if api == "AddPartitionsToTxn" and self.tv2:
                done["mapped"] = "TV2: the add happens in the leader's Produce handling"
            else:
                done.update(self._handle_request(api, msg, action[2] if len(action) > 2 else False,
                                                 client=msg.get("producer")))
        elif name.startswith("Receive") and name.endswith("Response") \
                and name[7:-8] in CLIENT_APIS:
            api, msg = name[7:-8], action[1]
            if api == "AddPartitionsToTxn" and self.tv2:
                done["mapped"] = "TV2: no client AddPartitionsToTxn answer"
            else:
                p = msg["producer"]
                h = self._held(self._client_frame(p, api, "response"), f"the {api} response")
                self._check_error(msg, h.event)
                done["released"] = self._release(h)["seq"]
                if api == "InitProducerId":
                    self._wait_op(("init", p), msg.get("error") == "NONE", "initTransactions()")
                elif api == "EndTxn":
                    ok = msg.get("error") == "NONE"
                    err = self._wait_op(("end", p), ok, "commitTransaction()/abortTransaction()")
                    tid, inst, txn, commit = self.ops[("end-ident", p)]
                    self.outcomes[(tid, inst, txn)] = ("committed" if commit else "aborted") \
                        if err is None else "failed"
        elif name == "CommitTxnLogAppend":
            done.update(self._log_append(action[1], before, after))
        elif name == "SendProduce":
            p, k = action[1], action[2]

            since = self.send_mark.get((p, k), 0)

            def produce(e, p=p, k=k):
                return (e["api"] == "Produce" and e["direction"] == "request"
                        and e["client_id"] == self.client(p) and k in _produce_parts(e)
                        and e["seq"] >= since and (e["seq"], k) not in self.seen_produce)
            try:
                e = self.proxy.wait_for(produce, timeout=STEP_TIMEOUT_S)
            except TimeoutError:
                raise Diverged(i, name, f"no Produce to partition {k} from p{p}") from None
            self.seen_produce.add((e["seq"], k))
            self.produce_seen[(p, k)] = e
            done["seen"] = e["seq"]
        elif name == "HandleProduce" and self.gate_produce:
            done.update(self._handle_produce(action[1]))
        elif name in ("HandleProduce", "HandleVerifyAddPartition",
                      "HandleVerifyAddPartitionResponse"):
            done["mapped"] = "not gated: the leader handles it unforced"
            done.update(self._appended_unforced(action[1], before, after))
        elif name == "ReceiveProduceResponse":
            msg = action[1]
            req = msg["request"]
            key = ("send", msg["producer"], req["txn"], req["n"])
            err = self._wait_op(key, msg.get("error") == "NONE", f"send() of record {req['n']}")
            if err is None and key in self.send_ident:
                ident, value = self.send_ident[key]
                self.sent.setdefault(ident, []).append(value)
            done["record"] = self.send_ident.get(key, (None, None))[1]
        elif name == "HandleWriteTxnMarkers":
            done.update(self._handle_markers(action[1], action[2]))
        elif name == "HandleWriteTxnMarkersResponse":
            done.update(self._markers_response(action[1]))
        else:
            return None
        return done

    def _environment(self, i: int, name: str, action: tuple, before: dict, after: dict
                     ) -> dict | None:
        """Network faults, a producer crash, a consumer's read and the brokers' failovers;
        None if the step is not one."""
        done: dict = {}
        if name == "DuplicateRequest":
            done.update(self._duplicate(action[1]))
        elif name == "DelayRequest":
            done["mapped"] = "kept held until the trace handles it"
        elif name == "ExpireBatch":
            done.update(self._expire_batch(action[1], action[2]))
        elif name in ("LoseRequest", "LoseResponse"):
            done.update(self._lose(action[1], "request" if name == "LoseRequest" else "response"))
        elif name == "CrashProducer":
            p = action[1]
            pr = self.producers.pop(p, None)
            if pr is not None:
                pr.start_close(timeout_s=0, immediate=True)
            done["mapped"] = f"instance p{p} closed at once and abandoned"
        elif name == "Fetch":
            c, k = action[1], action[2]
            if ("consumer", c) not in self.ops:
                self.ops[("consumer", c)] = self.driver.consumer(f"c{c}", None)
                self.ops[("consumer", c)].assign(self.topic, list(range(self.loaded.partitions)))
            got = self.ops[("consumer", c)].poll(0.5)
            done["read"] = [r["value"] for r in got]
            done["mapped"] = "a read_committed poll (what it returns is kept, not compared)"
        elif name == "ElectCoordinator":
            node = self.cluster.coordinator_node()
            self.cluster.restart(node)
            done["mapped"] = f"broker {node} (the coordinator) restarted"
        elif name == "PartitionOffline":
            k = action[1]
            node = self.leaders[k]
            self.cluster.kill(node)
            self.down[k] = node
            deadline = time.monotonic() + OFFLINE_WAIT_S
            while self._leader_of(k) is not None:
                if time.monotonic() > deadline:
                    raise Diverged(i, name, f"partition {k} still has a leader "
                                            f"{OFFLINE_WAIT_S:g} s after broker {node} was killed")
                time.sleep(0.5)
            done["mapped"] = f"broker {node} (partition {k}'s only replica) killed and fenced: " \
                             "no leader"
        elif name == "ElectLeader":
            k = action[1]
            node = self.down.pop(k)
            self.cluster.start_node(node)
            done["leader"] = self.cluster.leader(self.topic, k, timeout=60)
            done["mapped"] = f"broker {node} started again, partition {k}'s leader elected"
        else:
            return None
        return done

    def _leader_of(self, k: int):
        """Partition k's leader as the controller's metadata says (None: NO_LEADER)."""
        return next(p["leader"] for p in self.admin.describe_topics([self.topic])[self.topic]
                    if p["partition"] == k)

    def _rpc_match(self, api: str, msg: dict):
        if api == "WriteTxnMarkers":
            want = (bool(msg.get("committed")), msg.get("partition"))
            return lambda h: h.event["api"] == api and h.event["direction"] == "request" \
                and want in _marker_parts(h.event, self.topic)
        return self._client_frame(msg.get("producer"), api, "request", live=False)

    def _handle_request(self, api: str, msg: dict, held_back: bool, client=None) -> dict:
        key = (api, msg.get("producer"), msg.get("partition"), msg.get("committed"))
        if msg.get("disconnected") and key in self.stale:
            h = self.stale.pop(key)
            n = self.proxy.release(h)
            copy = None
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
            else:
                answer = None
            self.stale_answer = answer
            return {"released_old_copy": h.event["seq"], "copy": copy and copy["action"],
                    "old_copy_answer": answer and {"seq": answer["seq"],
                                                   "errors": answer["errors"],
                                                   "fields": answer["fields"]}}
        match = self._rpc_match(api, msg)
        h = self._held(lambda h: match(h) and h.conn.client_open, f"the {api} request")
        if api == "EndTxn" and bool(h.event["fields"].get("committed")) != bool(msg["committed"]):
            raise Diverged(self.i, self.name, f"EndTxn committed={h.event['fields'].get('committed')}"
                           f"; the trace's is {msg['committed']}", h.event)
        return {"released": self._release(h)["seq"]}

    def _handle_markers(self, msg: dict, held_back: bool) -> dict:
        want = (bool(msg.get("committed")), msg.get("partition"))
        if msg.get("disconnected"):
            return self._handle_request("WriteTxnMarkers", msg, held_back)
        for d in self.delivered:
            if d["result"] == want[0] and want[1] in d["left"]:
                d["left"].discard(want[1])
                return {"delivered_with": d["seq"]}
        match = self._rpc_match("WriteTxnMarkers", msg)
        h = self._held(lambda h: match(h) and h.conn.client_open,
                       f"WriteTxnMarkers({'COMMIT' if want[0] else 'ABORT'}) for partition {want[1]}")
        parts = {p for r, p in _marker_parts(h.event, self.topic) if r == want[0]}
        extra = sorted(parts - {want[1]})
        self.delivered.append({"result": want[0], "left": parts - {want[1]},
                               "seq": h.event["seq"], "conn": h.event["conn"],
                               "corr": h.event["correlation_id"], "answer_left": set(parts)})
        done = {"released": self._release(h)["seq"]}
        if extra:
            done["also_carries_partitions"] = extra
        answered = self._answered(h.event) if self.gate_produce else None
        if answered is not None:
            done["appended"] = f"answered #{answered}"
        return done

    def _appended_unforced(self, msg: dict, before: dict, after: dict) -> dict:
        """A step of the leader's unforced Produce handling that appends the batch in the trace
        (its partition's log grows): wait for the broker's answer to the Produce SendProduce
        took (it answers once it appended), so that the trace's next step (a stale marker's
        copy released, say) cannot overtake the append."""
        k = msg.get("partition")
        if not isinstance(k, int) or _log_length(after, k) <= _log_length(before, k):
            return {}
        produce = msg.get("produce") if isinstance(msg.get("produce"), dict) else msg
        request = self.produce_seen.get((produce.get("producer"), k))
        if request is None:
            return {}
        answered = self._answered(request)
        return {"appended": f"answered #{answered}" if answered is not None else
                f"no answer to Produce #{request['seq']} within {APPEND_WAIT_S:g} s"}

    def _answered(self, request: dict, timeout: float = APPEND_WAIT_S) -> int | None:
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

    def _markers_response(self, msg: dict) -> dict:
        part = msg.get("partition")
        for d in self.delivered:
            if part in d["answer_left"] and d.get("answered"):
                d["answer_left"].discard(part)
                return {"answered_with": d["answered"]}
        ds = [d for d in self.delivered if part in d["answer_left"]
              and d["result"] == bool(msg.get("committed"))]
        if not ds:
            raise Diverged(self.i, self.name, f"no WriteTxnMarkers for partition {part} was "
                           "delivered before its answer")
        d = ds[-1]
        h = self._held(lambda h: h.event["api"] == "WriteTxnMarkers"
                       and h.event["direction"] == "response" and h.event["conn"] == d["conn"]
                       and h.event["correlation_id"] == d["corr"], "the WriteTxnMarkers response")
        for r, p in _marker_parts(h.event, self.topic):
            pass
        self._check_error(msg, h.event)
        d["answered"] = self._release(h)["seq"]
        d["answer_left"].discard(part)
        return {"released": d["answered"]}

    def _handle_produce(self, msg: dict) -> dict:
        """A gated Produce (the trace has an ExpireBatch) released to its leader: the oldest
        held copy from the producer carrying the partition, its client's connection open or not
        (a batch that expired while held: its request timed out and the client closed the
        connection; the proxy still delivers it on the upstream one)."""
        p, k = msg.get("producer"), msg.get("partition")
        h = self._held(lambda h: h.event["api"] == "Produce" and h.event["direction"] == "request"
                       and h.event["client_id"] == self.client(p)
                       and k in _produce_parts(h.event),
                       f"p{p}'s Produce to partition {k}")
        done = {"released": self._release(h)["seq"]}
        if not h.conn.client_open:
            done["client_gone"] = "its client's connection closed (the request timed out)"
        answered = self._answered(h.event)
        if answered is not None:
            done["appended"] = f"answered #{answered}"
        return done

    def _expire_batch(self, p: int, k: int) -> dict:
        """ExpireBatch(p, k): p's batch for partition k, its Produce held at the proxy, expires
        in the client (delivery.timeout.ms, EXPIRING_CLIENT_SETTINGS): its send() fails with a
        TimeoutException ("Expiring 1 record(s)"), which the real client reports as an
        abortable error and which needs an epoch bump (TransactionManager.handleFailedBatch)."""
        keys = [key for key, part in self.send_partition.items()
                if key[1] == p and part == k and key not in self.expired]
        if not keys:
            raise Diverged(self.i, self.name, f"p{p} has no record sent to partition {k}")
        key = keys[-1]
        op = self.ops[key]
        err = op.exception(timeout=EXPIRE_TIMEOUT_MS / 1000 + STEP_TIMEOUT_S)
        if err is None or "Timeout" not in err.cls:
            raise Diverged(self.i, self.name, f"p{p}'s send() to partition {k} "
                           + ("succeeded" if err is None else f"failed with {err.cls}")
                           + "; the trace has its batch expire")
        self.expired.add(key)
        return {"expired": self.send_ident.get(key, (None, None))[1],
                "error": f"{err.cls}: {str(err)[:120]}"}

    def _duplicate(self, msg: dict) -> dict:
        api = msg["rpc"]
        match = self._rpc_match(api, msg) if api in ("WriteTxnMarkers",) + CLIENT_APIS else None
        if match is None:
            raise Diverged(self.i, self.name, f"a duplicate of {api} is not gated here")
        first = self._held(lambda h: match(h) and h.conn.client_open, f"the {api} request")
        timeout = (BROKER_REQUEST_TIMEOUT_MS if api == "WriteTxnMarkers"
                   else CLIENT_REQUEST_TIMEOUT_MS) / 1000 + STEP_TIMEOUT_S
        retry = self._held(lambda h: match(h) and h.conn is not first.conn,
                           f"the sender's retry of {api} on a new connection", timeout)
        self.stale[(api, msg.get("producer"), msg.get("partition"), msg.get("committed"))] = first
        return {"old_copy": first.event["seq"], "old_conn": first.event["conn"],
                "retry": retry.event["seq"], "retry_conn": retry.event["conn"]}

    def _lose(self, msg: dict, direction: str) -> dict:
        api = msg["rpc"][:-8] if direction == "response" else msg["rpc"]
        if direction == "request":
            match = self._rpc_match(api, msg)
        elif api == "WriteTxnMarkers":
            conns = {(d["conn"], d["corr"]) for d in self.delivered
                     if msg.get("partition") in d["answer_left"]}

            def match(h):
                return h.event["api"] == api and (h.event["conn"],
                                                  h.event["correlation_id"]) in conns
        else:
            match = self._client_frame(msg.get("producer"), api, "response")
        h = self._held(lambda h: match(h) and h.event["direction"] == direction,
                       f"the {api} {direction}")
        self.proxy.drop(h)
        return {"dropped": h.event["seq"], "conn_closed": h.event["conn"]}

    def _stutter(self, last: dict) -> dict:
        """A lasso stuttering in its last state: every gate lifted, does the real coordinator
        stay in the loop's state for LASSO_BOUND_S (a transaction stuck in Prepare*), and does it
        keep sending markers meanwhile?"""
        stuck_in = {tid: t["state"] for tid, t in enumerate(last["coordinator"]["log"])
                    if _norm(t["state"]).startswith("prepare") or _norm(t["state"]) == "ongoing"}
        if not stuck_in:
            return {"stuck": False, "verdict": "the loop's state has no open transaction",
                    "transactional_id": ""}
        tid, want = next(iter(stuck_in.items()))
        name = self.tid_name(tid)
        start_seq = len(self.proxy.events())
        timeline, started = [], time.monotonic()
        stuck = True
        while time.monotonic() - started < LASSO_BOUND_S:
            state = self.admin.describe_transactions([name]).get(name, {}).get("state")
            if not timeline or timeline[-1][1] != state:
                timeline.append((round(time.monotonic() - started, 1), state))
            if _norm(state) != _norm(want):
                stuck = False
                break
            time.sleep(1.0)
        markers = [e for e in self.proxy.events()[start_seq:] if e.get("api") == "WriteTxnMarkers"
                   and e["direction"] == "request"]
        verdict = (f"{name} stayed {want} for {LASSO_BOUND_S:.0f} s "
                   f"({LASSO_BOUND_S * 1000 / BROKER_REQUEST_TIMEOUT_MS:.0f}x the marker "
                   f"channel's request.timeout.ms), {len(markers)} WriteTxnMarkers sent meanwhile"
                   if stuck else f"{name} left {want}: {timeline}")
        return {"stuck": stuck, "verdict": verdict, "transactional_id": name, "state": want,
                "timeline": timeline, "markers_sent": len(markers),
                "bound_s": LASSO_BOUND_S}

    def _log_append(self, tid: int, before: dict, after: dict) -> dict:
        want = after["coordinator"]["log"][tid]["state"]
        done: dict = {}
        ap = before["coordinator"]["appends"][tid]   # the pending append: a record or <<>>
        reply = ap.get("reply") if isinstance(ap, dict) else None
        new_markers = [m for m in after["network"] if m.get("rpc") == "WriteTxnMarkers"
                       and m not in before["network"]]
        rpc = reply.get("rpc") if reply else None
        if isinstance(rpc, str) and rpc.endswith("Response") and reply.get("producer", -1) >= 0:
            api = reply["rpc"][:-8]
            if not (api == "AddPartitionsToTxn" and self.tv2):
                h = self._held(self._client_frame(reply["producer"], api, "response"),
                               f"the coordinator's {api} answer")
                done["answer_held"] = h.event["seq"]
        for m in new_markers:
            wanted = (bool(m["committed"]), m["partition"])
            h = self._held(lambda h, w=wanted: h.event["api"] == "WriteTxnMarkers"
                           and h.event["direction"] == "request" and h.conn.client_open
                           and w in _marker_parts(h.event, self.topic),
                           f"WriteTxnMarkers({'COMMIT' if wanted[0] else 'ABORT'}) to partition "
                           f"{wanted[1]}")
            done.setdefault("markers_held", []).append(h.event["seq"])
        if not done:   # no answer, no marker: the new state is all there is to see
            done["coordinator_state"] = self._coordinator_state(tid, want)
        return done

    # -- the whole run
    def run(self) -> Result:
        """The trace on a fresh cluster of the release: set up, every step gated, the evidence
        read, the verdict and report.json written."""
        from kafka_mc.realkafka.client import Driver
        from kafka_mc.realkafka.cluster import Cluster
        from kafka_mc.realkafka.proxy import Proxy

        self.t0 = time.monotonic()
        out = self.out
        _fresh_folder(out)
        steps = list(zip(self.t.actions, self.t.states, self.t.states[1:],
                         self.t.labels or [""] * len(self.t.actions)))
        divergence = None
        ran = 0
        evidence: dict = {}
        self.leaders: dict = {}
        found: list = []
        with open(out / "steps.jsonl", "w") as self.steps_file, \
                Proxy(out / "events.jsonl") as self.proxy, \
                Cluster(self.release, brokers=self.brokers, proxy=self.proxy,
                        settings={**BROKER_SETTINGS, **ONE_COPY}) as self.cluster, \
                Driver(self.release, self.cluster.bootstrap, history_path=out / "history.jsonl",
                       origin_ns=self.proxy.origin_ns) as self.driver:
            self.admin = self.driver.admin()
            self._create_topic()
            gates = self._warm_up_and_gate()
            self.log(f"Kafka {self.release.version}: {len(steps)} steps of "
                     f"{self.loaded.path} ({self.loaded.property})")
            ran, divergence = self._play(steps)
            for g in gates:
                self.proxy.remove_fault(g)
            self.proxy.release(None)
            lasso = None
            if self.t.loop is not None and divergence is None:
                lasso = self._stutter(self.t.states[-1])
                self.log(f"  lasso: {lasso['verdict']}")
            self._settle_ops()
            evidence, found = self._evidence()
            for f in self.cluster.log_files():
                shutil.copy(f, out / Path(f).name)
        verdict, code = self._verdict(found, evidence, lasso, divergence)
        if self.tv2 != (self.trace_tv >= 2):
            self.notes.append(f"the trace is TV{self.trace_tv}, Kafka {self.release.version} runs "
                              f"TV{self.release.transaction_version}: client AddPartitionsToTxn "
                              "steps mapped onto the leader's implicit add; epochs not compared")
        result = Result(verdict, code, self.loaded.path, self.loaded.property,
                        self.release.version, self.release.preset, ran, len(steps),
                        round(time.monotonic() - self.t0, 1), str(out), divergence,
                        [a.to_dict() for a in found], _jsonable(evidence), self.notes)
        self._write_report(result)
        return result

    def _create_topic(self) -> None:
        """The data topic, one replica per partition (a partition that goes offline on another
        broker than the coordinator), and its leaders noted."""
        if self.gate_produce or any(a[0] == "PartitionOffline" for a in self.t.actions):
            # a partition that goes offline must not take the coordinator with it; a Produce
            # held while its batch expires must not hold the client's EndTxn on a shared
            # connection (a held frame holds every later frame of its connection)
            coordinator = self.cluster.coordinator_node()
            others = [n for n in sorted(self.cluster.nodes) if n != coordinator]
            self.admin.create_topic(self.topic, self.loaded.partitions, 1, assignment={
                k: [others[k % len(others)]] for k in range(self.loaded.partitions)})
        else:
            self.admin.create_topic(self.topic, self.loaded.partitions, 1)
        self.leaders = {k: self.cluster.leader(self.topic, k)
                        for k in range(self.loaded.partitions)}
        shared = len(set(self.leaders.values())) < len(self.leaders)
        if shared:
            self.notes.append(f"partition leaders {self.leaders}: a broker leading several "
                              "partitions gets their markers (and a client's records) in one "
                              "request, released at the first step that delivers one of them "
                              "(--brokers 3 gives each partition its own leader)")

    def _warm_up_and_gate(self) -> list:
        """The transaction log loaded by an ungated producer, then every client and broker API
        held by the proxy; returns the gates."""
        from kafka_mc.realkafka.proxy import HOLD, Fault

        # Warm-up, ungated: __transaction_state created and loaded (else the trace's first
        # InitProducerId is answered COORDINATOR_LOAD_IN_PROGRESS, a state the model has not).
        warm = self.driver.producer("warmup", f"kmc-repro-{self.run_id}-warmup",
                                    **CLIENT_SETTINGS)
        warm.init_transactions(timeout=120)
        warm.close()
        gates = [self.proxy.add_fault(Fault(HOLD, api, d, endpoint="broker-*/CLIENT",
                                            count=None))
                 for api in CLIENT_APIS for d in ("request", "response")]
        gates += [self.proxy.add_fault(Fault(HOLD, api, d, endpoint="broker-*/INTERNAL",
                                             count=None))
                  for api in BROKER_APIS for d in ("request", "response")]
        if self.gate_produce:     # an ExpireBatch: the batch's Produce held until it is handled
            gates.append(self.proxy.add_fault(Fault(HOLD, "Produce", "request",
                                                    endpoint="broker-*/CLIENT", count=None)))
        return gates

    def _play(self, steps: list) -> tuple[int, dict | None]:
        """Every step in order until one diverges; returns (steps run, the divergence)."""
        from kafka_mc.realkafka.client import ClientError

        divergence = None
        ran = 0
        try:
            for i, (action, before, after, label) in enumerate(steps, 1):
                self.step(i, action, before, after, label)
                ran = i
        except (TimeoutError, RuntimeError, KeyError, ClientError) as e:
            d = Diverged(self.i, self.name, f"{type(e).__name__}: "
                         f"{' '.join(str(e).split())[:300]}")
            divergence = d.to_dict()
            self._step_log(d.step, (d.action,), "", diverged=d.what)
            self.log(f"  diverged at step {d.step} {d.action}: {d.what}")
        except Diverged as d:
            divergence = d.to_dict()
            self._step_log(d.step, (d.action,), "", diverged=d.what)
            self.log(f"  diverged at step {d.step} {d.action}: {d.what}")
        return ran, divergence

    def _settle_ops(self) -> None:
        """The clients' calls still pending awaited: records sent and transactions' outcomes."""
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

    def _evidence(self) -> tuple[dict, list]:
        """Offline partitions brought back, the transactions quiesced, the topic read
        read_committed and its logs dumped; returns (evidence, anomalies found)."""
        from kafka_mc.realkafka import run as runs
        from kafka_mc.realkafka.logdump import partition_log

        for k, node in sorted(self.down.items()):   # offline when the trace ended
            self.cluster.start_node(node)
            self.cluster.leader(self.topic, k, timeout=60)
            self.notes.append(f"partition {k} was offline when the trace ended: broker "
                              f"{node} started again to read the evidence")
        self.down.clear()
        tids = sorted({self.tid_name(pr["tid"]) for pr in self.t.states[0]["producers"]})
        partitions = list(range(self.loaded.partitions))
        left_open = {self.tid_name(tid) for tid, txn in enumerate(
            self.t.states[-1]["coordinator"]["txns"]) if _norm(txn["state"]) == "ongoing"}
        if left_open:
            open_, state = self._settle(tids, partitions, left_open)
        else:
            open_, state = runs.quiesce(self.admin, tids, partitions, self.topic)
        state["producers"] = {p: self.admin.describe_producers(self.topic, p)
                              for p in partitions}
        reads = runs.read_all(self.driver, self.topic, partitions, state["offsets"],
                              "read_committed")
        state["read_committed"] = reads
        state["logs"] = {p: partition_log(self.cluster, self.topic, p) for p in partitions}
        found = anomalies.check(self.outcomes, self.sent, reads, state["offsets"], open_)
        old = getattr(self, "stale_answer", None)
        if old is not None:
            state["duplicate_old_copy_answer"] = {"seq": old["seq"], "errors": old["errors"]}
        state["leaders"] = self.leaders
        return state, found

    def _settle(self, tids: list, partitions: list, left_open: set) -> tuple[bool, dict]:
        """The run's end, when the trace leaves transactions Ongoing (no client call will end
        them: they stay so until transaction.timeout.ms): wait until no transaction is being
        completed (Prepare*) and only those are open (at most QUIESCE_S, as ``run.quiesce``
        waits for every one to end); the last states seen."""
        from kafka_mc.realkafka.run import QUIESCE_S
        deadline = time.monotonic() + QUIESCE_S
        while True:
            states = self.admin.describe_transactions(tids)
            open_ = {t for t, d in states.items() if d.get("state") in anomalies.ONGOING}
            settled = open_ <= left_open and not any(
                _norm(d.get("state")).startswith("prepare") for d in states.values())
            if settled or time.monotonic() > deadline:
                offsets = {p: {"lso": self.admin.list_offsets(self.topic, p, "read_committed"),
                               "high_watermark": self.admin.list_offsets(self.topic, p,
                                                                         "read_uncommitted")}
                           for p in partitions}
                return bool(open_), {"transactions": states, "offsets": offsets}
            time.sleep(0.5)

    def _verdict(self, found: list, evidence: dict, lasso, divergence) -> tuple[str, int]:
        """Reproduced (an anomaly of the trace's property, or a stuck lasso), diverged or not
        reproduced, with its exit code; a stuck lasso is added to ``found`` and ``evidence``."""
        hit = [a for a in found if a.property == self.loaded.property]
        if lasso is not None:
            evidence["lasso"] = lasso
            if lasso["stuck"]:
                hit.append(anomalies.Anomaly("stuck-transaction", self.loaded.property,
                                             lasso["transactional_id"], lasso["verdict"]))
                found.append(hit[-1])
        if self.loaded.property == "txn_atomicity":   # a lost write of which a part is visible
            hit += [a for a in found if a.name == "lost-write" and any(
                anomalies.parse_value(r["value"]) and anomalies._txn_name(
                    anomalies.parse_value(r["value"])[0]) == a.transaction
                for r in evidence.get("read_committed") or ())]
        if hit:
            return "reproduced", EXIT_REPRODUCED
        if divergence is not None:
            return "diverged", EXIT_DIVERGED
        return "not-reproduced", EXIT_NOT_REPRODUCED

    def _write_report(self, result: Result) -> None:
        """The conform folder (noted), then report.json written atomically."""
        out = self.out
        try:
            folder = conform_folder(out, self.release, dict(self.t.meta.get("config") or {}),
                                    self.brokers, result.evidence)
            self.notes.append(f"validate the real run against the model: kafka-mc real conform "
                              f"--run {folder}")
        except (OSError, ValueError) as e:
            self.notes.append(f"no conform folder ({type(e).__name__}: {e})")
        tmp = out / "report.json.tmp"
        tmp.write_text(json.dumps({**result.to_dict(), "outcomes": {
            anomalies._txn_name(k): v for k, v in sorted(self.outcomes.items())},
            "sent": {anomalies._txn_name(k): v for k, v in sorted(self.sent.items())}},
            indent=1, sort_keys=True, default=str) + "\n")
        os.replace(tmp, out / "report.json")


def _fresh_folder(out: Path) -> None:
    """``out`` created, or emptied of a previous run's files (a folder used again: this run only)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in ("events.jsonl", "history.jsonl", "steps.jsonl", "report.json", *out.glob(
            "*.log"), *(out / "conform").glob("*")):
        path = out / old
        if path.is_file():
            path.unlink()

def conform_folder(out: Path, release: Release, config: dict, brokers: int,
                   evidence: dict | None = None) -> Path:
    """``out/conform``: the run as ``kafka-mc real conform --run`` reads one (run.json, the event
    log and the history without the harness's warm-up producer, and the end state read as
    evidence), so that the real run is also validated step by step against the model with the
    release's preset, and its end state with it."""
    folder = out / "conform"
    folder.mkdir(exist_ok=True)
    if evidence:
        (folder / "end_state.json").write_text(json.dumps(
            {k: evidence.get(k) for k in ("transactions", "logs", "offsets", "producers")},
            indent=1, sort_keys=True, default=str) + "\n")
    (folder / "run.json").write_text(json.dumps({
        "version": release.version, "preset": release.preset, "seed": 0, "brokers": brokers,
        "config": config, "reproduced_from": "reproduce"}, indent=1) + "\n")
    lines = (out / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    warm = {(e["endpoint"], e["conn"]) for e in events if e.get("client_id") == "warmup"}
    with open(folder / "events.jsonl", "w") as f:
        for e in events:
            if (e.get("endpoint"), e.get("conn")) not in warm:
                f.write(json.dumps(e) + "\n")
    with open(folder / "history.jsonl", "w") as f:
        for line in (out / "history.jsonl").read_text().splitlines():
            if line.strip() and json.loads(line).get("process") != "warmup":
                f.write(line + "\n")
    return folder


def _jsonable(x):
    if isinstance(x, dict):
        return {(k if isinstance(k, str) else str(k)): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in x]
    return x


def reproduce(path: str, version: str | None = None, out: Path | None = None,
              log=lambda s: None, brokers: int = 1) -> Result:
    """Run the trace at ``path`` on real Kafka; ``ReproduceError`` for bad input."""
    loaded = load(path)
    release = release_for(loaded.preset, version)
    out = out or Path("out") / f"reproduce-{Path(path).name.split('.itf')[0]}-{release.version}"
    if out.exists() and not out.is_dir():
        raise ReproduceError(f"--out {str(out)[:200]}: not a folder")
    offline = [i for i, a in enumerate(loaded.trace.actions, 1) if a[0] == "PartitionOffline"]
    if offline and brokers < 3:
        raise ReproduceError(f"{path}: step {offline[0]} PartitionOffline needs the partition on "
                             "a broker of its own, other than the coordinator's: --brokers 3")
    if gates_produce(loaded.trace.actions) and brokers < 3:
        # the held Produce would hold the client's later EndTxn on their shared connection
        first = next(i for i, a in enumerate(loaded.trace.actions, 1)
                     if gates_produce([a]))
        raise ReproduceError(f"{path}: step {first} {loaded.trace.actions[first - 1][0]} "
                             "orders the client's Produce, which needs the partitions on "
                             "brokers other than the coordinator's: --brokers 3")
    return _Run(loaded, release, out, log, brokers).run()


def summary(result: Result) -> str:
    """The verdict and its evidence, for a person."""
    lines = [f"{result.verdict.upper()}: {result.property} on Kafka {result.version} "
             f"(preset {result.preset}), {result.steps_run}/{result.steps} steps, "
             f"{result.seconds} s"]
    if result.judgement:
        lines += result.judgement.get("lines") or [result.judgement.get("reason", "")]
    if result.divergence:
        d = result.divergence
        lines.append(f"diverged at step {d['step']} {d['action']}: {d['what']}")
        if d.get("event"):
            lines.append(f"  event: {json.dumps(d['event'], default=str)[:400]}")
    for a in result.anomalies:
        lines.append(f"ANOMALY {a['name']} ({a['property']}) {a['transaction']}: {a['evidence']}")
    ev = result.evidence
    for p, batches in sorted((ev.get("logs") or {}).items()):
        lines.append(f"partition {p} log:")
        for b in batches:
            what = f"{b['marker']} marker (coordinator epoch {b.get('coordinator_epoch')})" \
                if b.get("control") else "data " + ", ".join(
                    str(r.get("value")) for r in b.get("records") or ())
            lines.append(f"  offset {b.get('base_offset')}: producer {b.get('producer_id')} "
                         f"epoch {b.get('producer_epoch')} seq {b.get('base_sequence')}: {what}")
    for p, o in sorted((ev.get("offsets") or {}).items()):
        lines.append(f"partition {p}: LSO {o.get('lso')}, high watermark {o.get('high_watermark')}")
    if ev.get("read_committed") is not None:
        lines.append("read_committed: " + ", ".join(
            f"{r['value']}@{r['partition']}:{r['offset']}" for r in ev["read_committed"]))
    for tid, d in sorted((ev.get("transactions") or {}).items()):
        lines.append(f"DescribeTransactions {tid}: {d.get('state')} pid {d.get('producer_id')} "
                     f"epoch {d.get('producer_epoch')}")
    if ev.get("duplicate_old_copy_answer"):
        lines.append(f"the duplicate's old copy was answered: "
                     f"{ev['duplicate_old_copy_answer']}")
    for n in result.notes:
        lines.append(f"note: {n}")
    lines.append(f"run folder: {result.out} (events.jsonl, history.jsonl, steps.jsonl, "
                 "report.json)")
    return "\n".join(lines)
