"""``kafka-mc real reproduce TRACE``: a model counterexample executed on a real cluster.

The trace (ITF, read by ``traces``; checked to replay on the model first, so a tampered trace is
refused) names its preset; the run uses the newest supported release standing for that preset
(``kafka_mc.realkafka.releases``), or ``--version``. One broker (it is the transaction coordinator and the
leader of every partition), its CLIENT and INTERNAL listeners behind the recording proxy, the
release's own Java client (one ``KafkaProducer`` per producer instance of the trace, client.id
``t<tid>.i<instance>``, transactional.id ``kmc-repro-<run>-t<tid>``) and a topic of the trace's partitions.

Its concerns have their own homes: the proxy's holds (``kafka_mc.realkafka.holds``: which frames
are gated, found, released, copied, dropped), the client calls (``kafka_mc.realkafka.calls``: the
real producers and what the application was told), the evidence and the harness's own verdict
(``kafka_mc.realkafka.evidence``); this module reads the trace and maps each step onto them.

Gating. The proxy holds, with ``Fault(HOLD, count=None)``, every request and response of the
transactional APIs the trace orders: on the clients' listener InitProducerId, AddPartitionsToTxn
(the client's form), AddOffsetsToTxn, EndTxn, TxnOffsetCommit; on the inter-broker listener
WriteTxnMarkers. Each held frame goes on only when the trace delivers it. Everything else
(Metadata, FindCoordinator, Produce, Fetch, the leaders' KIP-890 verifications and TV2's implicit
adds) passes: the trace's steps on them are waited for through their visible effect. In a trace
with a PartitionOffline the Produce responses are held too (``gate_produce_responses``): the
trace may deliver a leader's answer after its broker was killed, as a network may (the bytes
were written before the process died; ``holds``).

| trace step | on the real cluster |
|---|---|
| InitTransactions(p) / BeginTransaction(p) / Send(p, k) / CommitTransaction(p) / AbortTransaction(p) | the Java client's ``initTransactions()`` (a future), ``beginTransaction()``, ``send(topic, k, value)`` (a future; value ``t<tid>.i<instance>.x<txn>.r<n>``), ``commitTransaction()`` / ``abortTransaction()`` (futures) on instance p; where the trace orders its Produce, send(record, callback) (the application goes on at once) and a send or an end of transaction awaited until the client entered the call (ENTER_S after its invoke) |
| Send<Rpc>(p) (AddPartitionsToTxn, EndTxn, ...) | wait until the client's request is held at the proxy (the real Sender sends it on its own) |
| Handle<Rpc>(msg) on the coordinator, a client's request | release the held request (the newest copy, on a live connection; ``disconnected``: the old copy of a DuplicateRequest) |
| CommitTxnLogAppend(tid) (the coordinator's log append, internal) | wait for its visible effect: its answer held at the proxy (when the model replies: the coordinator answers only once the append completed), its WriteTxnMarkers held (when the model sends markers), else DescribeTransactions showing the model's new state (CompleteCommit/CompleteAbort) |
| Receive<Rpc>Response(msg) | check the held response's error against the trace's, release it; InitProducerId / EndTxn: the client's call returns as the trace says |
| HandleWriteTxnMarkers(msg) | release the held WriteTxnMarkers request carrying the partition's marker (one request per broker carries every partition's marker: the first step releases it, the others find it delivered); ``disconnected`` / ``held_back``: the old copy of the DuplicateRequest, delivered on its old connection (its answer has no one to go to) |
| HandleWriteTxnMarkersResponse(msg) | check and release the held WriteTxnMarkers response |
| SendProduce(p, k, n) / HandleProduce / HandleVerifyAddPartition(Response) | not gated: wait for the client's Produce carrying partition k sent after the trace's send() (one Produce per broker carries every partition); the leader's verification (3.6+, TV1) or implicit add (TV2) happens unforced, and a step whose model appends the batch waits for the Produce's answer (the append). In a trace with an ExpireBatch the Produce is gated: HandleProduce releases the oldest held copy (its client may have given up on it) and waits for its answer (the append) |
| HandleWriteTxnMarkers / HandleProduce (released), where the Produce is gated | the step ends when the broker answered (its append done, at most APPEND_WAIT_S): a marker and a produce released one after the other on two connections do not race in the broker |
| ExpireBatch(p, k) | (``--brokers 3``, the partitions off the coordinator's broker) the batch's Produce held while the client's delivery.timeout.ms passes (request.timeout.ms = delivery.timeout.ms = 4 s for such a trace: the request times out as the batch expires, never resent); wait for ``send()`` to fail with ``TimeoutException: Expiring 1 record(s)`` |
| ReceiveProduceResponse(msg) | in a trace with a PartitionOffline, check the held Produce response's error against the trace's and release it (its broker may be down by then: the proxy kept the client's connection open for it); then wait for the ``send()`` future of the record: acknowledged (error NONE) or failed as the trace says |
| CompleteTransaction(p) | the commit or abort of a transaction that added no partition returns without an EndTxn |
| DuplicateRequest(msg) | the first copy stays held until its sender's request.timeout.ms closes the connection and the sender retries on a new connection (held too); the old copy is delivered when the trace handles it ``disconnected`` |
| DelayRequest(msg) | nothing: the request stays held until the trace handles it |
| LoseRequest(msg) / LoseResponse(msg) | the held frame's connection is closed (the frame dropped): the sender retries |
| CrashProducer(p) | instance p is abandoned by its application and left running (the model's zombie: its requests in flight still arrive, gated as the trace orders them, and the trace may still drive it); the next instance of its transactional.id starts at its InitTransactions |
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
makes a duplicate: 4 s here where the trace has a fault of a marker, else 60 s: BROKER_SETTINGS,
``broker_settings``; transaction.timeout.ms), the real client's own
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
read_committed records), the broker's log, ``conform/`` (the run as ``real conform --run``
reads one) and the manifest: ``--out`` is a run folder (``kafka_mc.realkafka.runfolder``), taken
only when new, empty or a run folder, marked incomplete when a signal or a failure from outside
stops the reproduction.
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

from kafka_mc.realkafka import evidence as ev, releases
from kafka_mc.realkafka.client import ClientError
from kafka_mc.realkafka.cluster import ClusterError
from kafka_mc.realkafka.calls import CLIENT_OPS, Calls, client_settings
from kafka_mc.realkafka.evidence import (EXIT_DIVERGED, EXIT_NOT_REPRODUCED,  # noqa: F401
                                         EXIT_REPRODUCED, LASSO_BOUND_S, conform_folder)
from kafka_mc.realkafka.holds import (BROKER_REQUEST_TIMEOUT_MS, CLIENT_APIS,  # noqa: F401
                                      STEP_TIMEOUT_S, Diverged, Holds, Where, marker_parts)
from kafka_mc.realkafka.releases import Release
from kafka_mc.realkafka.runfolder import RunFailed

EXIT_USAGE = 2
BROKER_SETTINGS = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "transaction.max.timeout.ms": "600000",
    "request.timeout.ms": str(BROKER_REQUEST_TIMEOUT_MS),   # the marker channel's: a duplicate
}
# A trace whose markers no fault times out: the marker channel's request.timeout.ms long, so that
# a WriteTxnMarkers the trace holds over many steps is not resent on a new connection (a
# duplicate the trace has not)
QUIET_BROKER_REQUEST_TIMEOUT_MS = 60000


def broker_settings(actions) -> dict:
    """BROKER_SETTINGS, with the marker channel's request timeout short (a duplicate, a lost
    marker or answer is its resend) only where the trace has such a fault of WriteTxnMarkers."""
    def marker_fault(a):
        m = a[1] if len(a) > 1 and isinstance(a[1], dict) else {}
        return a[0] in ("DuplicateRequest", "LoseRequest", "LoseResponse") \
            and str(m.get("rpc", "")).startswith("WriteTxnMarkers")
    if any(marker_fault(a) for a in actions):
        return dict(BROKER_SETTINGS)
    return {**BROKER_SETTINGS, "request.timeout.ms": str(QUIET_BROKER_REQUEST_TIMEOUT_MS)}


ONE_COPY = {   # one copy of everything: a three-broker run is for separate leaders, not replication
    "default.replication.factor": "1", "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1"}
FAULTS = {"DuplicateRequest", "DelayRequest", "LoseRequest", "LoseResponse", "CrashProducer",
          "ElectCoordinator", "PartitionOffline", "ElectLeader", "ExpireBatch"}
OFFLINE_WAIT_S = 30.0   # past FENCED_AFTER_S: a loaded controller may take longer to fence
INTERNAL = {"CommitTxnLogAppend", "Fetch", "SendProduce", "HandleProduce", "HandleVerifyAddPartition",
            "HandleVerifyAddPartitionResponse", "ReceiveProduceResponse",
            "HandleWriteTxnMarkers", "HandleWriteTxnMarkersResponse", "CompleteTransaction"}
RPC_STEPS = {f"{k}{r}" for r in ("InitProducerId", "AddPartitionsToTxn", "EndTxn")
             for k in ("Send", "Handle", "Receive")}
SUPPORTED = CLIENT_OPS | FAULTS | INTERNAL | {s if not s.startswith("Receive") else s + "Response"
                                              for s in RPC_STEPS}
SUPPORTED -= {"SendInitProducerId"}


class ReproduceError(ValueError):
    """A trace this command cannot run: one line, exit 2."""


# ---------------------------------------------------------------------------- the trace


@dataclass
class Loaded:
    trace: Any
    path: str
    property: str
    preset: str
    partitions: int


def load(path: str, counterexample: bool = True) -> Loaded:
    """The trace, checked: a trace of the explicit Kafka model that replays (to its claimed
    violation, for a ``counterexample``; a directed run's path need not violate anything),
    every step of which has a real counterpart here; else ``ReproduceError``."""
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
    workload = (meta.get("config") or {}).get("workload") if isinstance(meta.get("config"), dict) \
        else None
    if isinstance(workload, dict) and workload.get("max_in_flight", 1) != 1:
        raise ReproduceError(f"{path}: a trace with workload.max_in_flight "
                             f"{str(workload.get('max_in_flight'))[:20]}; the harness's producers "
                             "send one record at a time (one batch in flight)")
    try:
        r = replays.replay(t)
    except (traces.TraceError, ValueError) as e:
        raise ReproduceError(f"{path}: the trace does not replay on the model "
                             f"({' '.join(str(e).split())[:200]}): tampered or of another "
                             "kafka-mc") from None
    if counterexample and not r.reproduced:
        raise ReproduceError(f"{path}: the trace replays but does not show its claim "
                             f"({r.message[:160]})")
    if t.loop is not None and (t.loop != len(t.states) - 1 or t.loop_action is not None):
        raise ReproduceError(f"{path}: a lasso whose loop has steps (back to state {t.loop}): "
                             "only a lasso that stutters in its last state runs on real Kafka "
                             "yet")
    unsupported = first_unsupported(t.actions)
    if unsupported is not None:
        i, name = unsupported
        raise ReproduceError(f"{path}: step {i} {name} has no real counterpart in this "
                             "harness yet")
    cfg = _section(meta.get("config"))
    preset = _section(meta.get("protocol")).get("version") or \
        _section(cfg.get("protocol")).get("version")
    partitions = _section(cfg.get("cluster")).get("partitions", 1)
    tv = _section(meta.get("settings")).get("protocol.transaction_version", 1)
    if not isinstance(preset, str) or type(partitions) is not int or not 1 <= partitions <= 64 \
            or tv not in (1, 2) or isinstance(tv, bool):
        raise ReproduceError(f"{path}: its #meta names no preset, partitions or transaction "
                             "version this command can run (a trace kafka-mc wrote does)")
    return Loaded(t, str(path), meta["property"], preset, partitions)


def _section(value) -> dict:
    """A part of a trace's ``#meta`` that should be an object (anything else: empty)."""
    return value if isinstance(value, dict) else {}


def first_unsupported(actions) -> tuple[int, str] | None:
    """(step, action name) of the first step with no real counterpart here, or None."""
    for i, a in enumerate(actions, 1):
        if a[0] not in SUPPORTED:
            return i, a[0]
    return None


def drivable(action, brokers: int = 1) -> bool:
    """Whether this harness runs the step (an ITF-encoded action: a trace's) on a cluster of
    ``brokers``: one with a real counterpart, and on one broker none that needs a partition
    on a broker of its own (``PartitionOffline``, a step that gates the client's Produce)."""
    if action[0] not in SUPPORTED:
        return False
    return brokers >= 3 or not (action[0] == "PartitionOffline" or gates_produce([action]))


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


def release_for(preset: str, version: str | Release | None) -> Release:
    """``--version`` (checked), a distribution of the user's (``--kafka-home``), or the newest
    supported release standing for ``preset``."""
    if isinstance(version, Release):
        return releases.usable(version)
    if version:
        return releases.release(version)
    standing = [r for r in releases.RELEASES if r.preset == preset]
    if not standing:
        have = sorted({r.preset for r in releases.RELEASES})
        raise ReproduceError(f"no supported Kafka release stands for preset {preset!r} (releases "
                             f"stand for {', '.join(have)}); pick one with --version")
    return releases.release(standing[-1].version)


def _needs_three(loaded: Loaded, path: str, brokers: int) -> None:
    """``ReproduceError`` for a trace one broker cannot run."""
    actions = loaded.trace.actions
    offline = [i for i, a in enumerate(actions, 1) if a[0] == "PartitionOffline"]
    if offline and brokers < 3:
        raise ReproduceError(f"{path}: step {offline[0]} PartitionOffline needs the partition on "
                             "a broker of its own, other than the coordinator's: --brokers 3")
    if gates_produce(actions) and brokers < 3:
        # the held Produce would hold the client's later EndTxn on their shared connection
        first = next(i for i, a in enumerate(actions, 1) if gates_produce([a]))
        raise ReproduceError(f"{path}: step {first} {actions[first - 1][0]} orders the client's "
                             "Produce, which needs the partitions on brokers other than the "
                             "coordinator's: --brokers 3")


# ---------------------------------------------------------------------------- the result


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


# ---------------------------------------------------------------------------- the run


class _Run:
    """One trace on a fresh cluster: each step mapped onto the proxy's holds (``Holds``), the
    client calls (``Calls``) or the cluster itself (failovers, partitions offline)."""

    def __init__(self, loaded: Loaded, release: Release, out: Path, log, brokers: int = 1,
                 gate_verification: bool = False):
        self.brokers = brokers
        # the leaders' verifications held too (a directed run: its path orders them)
        self.gate_verification = gate_verification
        self.t, self.loaded, self.release, self.out, self.log = \
            loaded.trace, loaded, release, out, log
        self.tv2 = release.transaction_version >= 2
        self.trace_tv = int((self.t.meta.get("settings") or {}).get(
            "protocol.transaction_version", 1))
        self.run_id = secrets.token_hex(3)
        self.topic = f"kmc-repro-{self.run_id}"
        self.down: dict[int, int] = {}            # partition -> its broker, killed (offline)
        self.leaders: dict = {}
        # Produce gated (released at the trace's HandleProduce) where the trace orders it
        self.gate_produce = gates_produce(self.t.actions)
        # Produce responses gated (released at the trace's ReceiveProduceResponse) where a
        # partition goes offline: the trace may deliver the answer after the leader died
        self.gate_produce_responses = any(a[0] == "PartitionOffline" for a in self.t.actions)
        # short client timeouts: a batch must expire while its Produce is held
        self.expiring = any(a[0] == "ExpireBatch" for a in self.t.actions)
        self.notes: list[str] = []
        self.where = Where()
        self.steps_file = None

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

    def _coordinator_state(self, tid: int, want: str, timeout: float = STEP_TIMEOUT_S) -> str:
        norm = ev.norm
        deadline = time.monotonic() + timeout
        last = None
        while True:
            d = self.admin.describe_transactions([self.tid_name(tid)]).get(self.tid_name(tid), {})
            last = d.get("state")
            if norm(last) == norm(want):
                return last
            if norm(want).startswith("complete") and last and not norm(last).startswith(
                    "prepare"):
                # it left Prepare*: the next transaction (its add is not gated: the leader's
                # implicit add under TV2) may already have made it Ongoing
                return f"{last} (past {want})"
            if time.monotonic() > deadline:
                raise self.where.diverged(f"the coordinator's state for transactional.id "
                                          f"t{tid} stayed {last!r}; the trace's log append "
                                          f"makes it {want}")
            time.sleep(0.1)

    # -- steps
    def step(self, i: int, action: tuple, before: dict, after: dict, label: str) -> None:
        """Step i of the trace on the real cluster: a client call, a message released or a
        fault, each in its group (``Calls.call``, ``_message``, ``_environment``); logged."""
        self.where.i, self.where.name = i, action[0]
        done = self.calls.call(action[0], action, before, after)
        if done is None:
            done = self._message(action[0], action, before, after)
        if done is None:
            done = self._environment(action[0], action)
        if done is None:   # load() refuses these
            raise ReproduceError(f"step {i} {action[0]}: no real counterpart")
        self._step_log(i, action, label, **done)

    def _message(self, name: str, action: tuple, before: dict, after: dict) -> dict | None:
        """A request or response of the client APIs, Produce or WriteTxnMarkers held by the
        proxy and released (or mapped), and the log append; None if the step is not one."""
        holds = self.holds
        done: dict = {}
        kind = next((k for k in ("Send", "Handle", "Receive") if name.startswith(k)), "")
        rpc = name[len(kind):]
        if kind == "Receive" and rpc.endswith("Response"):
            rpc = rpc[:-len("Response")]
        if rpc == "AddPartitionsToTxn" and self.tv2:
            done["mapped"] = {
                "Send": "TV2: no client AddPartitionsToTxn (the leader adds the partition)",
                "Handle": "TV2: the add happens in the leader's Produce handling",
                "Receive": "TV2: no client AddPartitionsToTxn answer"}[kind]
        elif name.startswith("Send") and rpc in CLIENT_APIS:
            h = holds.held(holds.client_frame(action[1], rpc, "request"),
                           f"the client's {rpc} request")
            done["held"] = h.event["seq"]
        elif name.startswith("Handle") and rpc in CLIENT_APIS:
            done.update(holds.handle_request(rpc, action[1]))
        elif name.startswith("Receive") and rpc in CLIENT_APIS:
            msg = action[1]
            h = holds.held(holds.client_frame(msg["producer"], rpc, "response"),
                           f"the {rpc} response")
            holds.check_error(msg, h.event)
            done["released"] = holds.release(h)["seq"]
            self.calls.answered(rpc, msg["producer"], msg.get("error") == "NONE", after)
        elif name == "CommitTxnLogAppend":
            done.update(self._log_append(action[1], before, after))
        elif name == "SendProduce":
            done.update(holds.seen_produce_request(action[1], action[2]))
        elif name == "HandleProduce" and self.gate_produce:
            done.update(holds.handle_produce(action[1]))
        elif name == "HandleVerifyAddPartition" and self.gate_verification:
            done.update(holds.handle_verification(action[1]))
        elif name == "HandleVerifyAddPartitionResponse" and self.gate_verification:
            done.update(holds.verification_response(action[1]))
            done.update(holds.appended_unforced(action[1], before, after))
        elif name in ("HandleProduce", "HandleVerifyAddPartition",
                      "HandleVerifyAddPartitionResponse"):
            done["mapped"] = "not gated: the leader handles it unforced"
            done.update(holds.appended_unforced(action[1], before, after))
        elif name == "ReceiveProduceResponse":
            if self.gate_produce_responses:
                done.update(holds.produce_response(action[1]))
            done.update(self.calls.produce_answered(action[1]))
        elif name == "CompleteTransaction":
            done.update(self.calls.complete(action[1], after))
        elif name == "HandleWriteTxnMarkers":
            done.update(holds.handle_markers(action[1], await_append=self.gate_produce))
        elif name == "HandleWriteTxnMarkersResponse":
            done.update(holds.markers_response(action[1]))
        else:
            return None
        return done

    def _environment(self, name: str, action: tuple) -> dict | None:
        """Network faults, a producer crash, a consumer's read and the brokers' failovers;
        None if the step is not one."""
        done: dict = {}
        if name == "DuplicateRequest":
            done.update(self.holds.duplicate(action[1]))
        elif name == "DelayRequest":
            done["mapped"] = "kept held until the trace handles it"
        elif name == "ExpireBatch":
            done.update(self.calls.expire_batch(action[1], action[2]))
        elif name in ("LoseRequest", "LoseResponse"):
            done.update(self.holds.lose(action[1], "request" if name == "LoseRequest"
                                        else "response"))
        elif name == "CrashProducer":
            done.update(self.calls.crash(action[1]))
        elif name == "Fetch":
            done.update(self.calls.consumer_poll(action[1], self.loaded.partitions))
        elif name == "ElectCoordinator":
            node = self.cluster.coordinator_node()
            self.cluster.restart(node)
            done["mapped"] = f"broker {node} (the coordinator) restarted"
        elif name == "PartitionOffline":
            done.update(self._partition_offline(action[1]))
        elif name == "ElectLeader":
            k = action[1]
            node = self.down.pop(k)
            self.cluster.start_node(node)
            done["leader"] = self.cluster.leader(self.topic, k, timeout=60)
            done["mapped"] = f"broker {node} started again, partition {k}'s leader elected"
        else:
            return None
        return done

    def _partition_offline(self, k: int) -> dict:
        node = self.leaders[k]
        self.cluster.kill(node)
        self.down[k] = node
        deadline = time.monotonic() + OFFLINE_WAIT_S
        while self._leader_of(k) is not None:
            if time.monotonic() > deadline:
                raise self.where.diverged(f"partition {k} still has a leader {OFFLINE_WAIT_S:g} "
                                          f"s after broker {node} was killed")
            time.sleep(0.5)
        return {"mapped": f"broker {node} (partition {k}'s only replica) killed and fenced: no "
                          "leader"}

    def _leader_of(self, k: int):
        """Partition k's leader as the controller's metadata says (None: NO_LEADER)."""
        return next(p["leader"] for p in self.admin.describe_topics([self.topic])[self.topic]
                    if p["partition"] == k)

    def _log_append(self, tid: int, before: dict, after: dict) -> dict:
        holds = self.holds
        want = after["coordinator"]["log"][tid]["state"]
        done: dict = {}
        ap = before["coordinator"]["appends"][tid]   # the pending append: a record or <<>>
        reply = ap.get("reply") if isinstance(ap, dict) else None
        new_markers = [m for m in after["network"] if m.get("rpc") == "WriteTxnMarkers"
                       and m not in before["network"]]
        rpc = reply.get("rpc") if reply else None
        request = reply.get("request") if reply else None
        if rpc == "VerifyAddPartitionResponse" and self.gate_verification \
                and isinstance(request, dict):
            done.update(holds.verification_answer_held(request.get("partition")))
        elif isinstance(rpc, str) and rpc.endswith("Response") and reply.get("producer", -1) >= 0:
            api = reply["rpc"][:-8]
            if not (api == "AddPartitionsToTxn" and self.tv2):
                h = holds.held(holds.client_frame(reply["producer"], api, "response"),
                               f"the coordinator's {api} answer")
                done["answer_held"] = h.event["seq"]
        for m in new_markers:
            wanted = (bool(m["committed"]), m["partition"])
            h = holds.held(lambda h, w=wanted: h.event["api"] == "WriteTxnMarkers"
                           and h.event["direction"] == "request" and h.conn.client_open
                           and w in marker_parts(h.event, self.topic),
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
        out.mkdir(parents=True, exist_ok=True)   # (taken as a run folder: run_path)
        steps = list(zip(self.t.actions, self.t.states, self.t.states[1:],
                         self.t.labels or [""] * len(self.t.actions)))
        divergence = None
        ran = 0
        evidence: dict = {}
        found: list = []
        with open(out / "steps.jsonl", "w") as self.steps_file, \
                Proxy(out / "events.jsonl") as self.proxy, \
                Cluster(self.release, brokers=self.brokers, proxy=self.proxy,
                        settings={**broker_settings(self.t.actions), **ONE_COPY}) as self.cluster, \
                Driver(self.release, self.cluster.bootstrap, history_path=out / "history.jsonl",
                       origin_ns=self.proxy.origin_ns) as self.driver:
            self.admin = self.driver.admin()
            self.holds = Holds(self.proxy, self.topic, self.client, self.where)
            self.calls = Calls(self.driver, self.topic, self.client, self.tid_name, self.where,
                               self.holds, self.gate_produce or self.gate_verification,
                               client_settings(self.t.actions, self.expiring))
            self._create_topic()
            self.calls.warm_up(self.run_id)
            gates = self.holds.gate(self.gate_produce, self.gate_verification,
                                    self.gate_produce_responses)
            self.log(f"Kafka {self.release.version}: {len(steps)} steps of "
                     f"{self.loaded.path} ({self.loaded.property})")
            ran, divergence = self._play(steps)
            self.holds.lift(gates)
            lasso = None
            if self.t.loop is not None and divergence is None:
                lasso = ev.stutter(self, self.t.states[-1])
                self.log(f"  lasso: {lasso['verdict']}")
            self.calls.settle()
            evidence, found = ev.read_evidence(self, self.calls, self.holds)
            for f in self.cluster.log_files():
                shutil.copy(f, out / Path(f).name)
        verdict, code = ev.anomaly_verdict(self.loaded.property, found, evidence, lasso,
                                           divergence)
        if self.tv2 != (self.trace_tv >= 2):
            self.notes.append(f"the trace is TV{self.trace_tv}, Kafka {self.release.version} runs "
                              f"TV{self.release.transaction_version}: client AddPartitionsToTxn "
                              "steps mapped onto the leader's implicit add; epochs not compared")
        result = Result(verdict, code, self.loaded.path, self.loaded.property,
                        self.release.version, self.release.preset, ran, len(steps),
                        round(time.monotonic() - self.t0, 1), str(out), divergence,
                        [a.to_dict() for a in found], ev.jsonable(evidence), self.notes)
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

    def _play(self, steps: list) -> tuple[int, dict | None]:
        """Every step in order until one diverges; returns (steps run, the divergence)."""
        from kafka_mc.realkafka.client import ClientError

        divergence = None
        ran = 0
        try:
            for i, (action, before, after, label) in enumerate(steps, 1):
                # progress (issue 59): which step, of how many, since the start
                what = f": {' '.join(label.split())[:72]}" if label else ""
                self.log(f"  [{i}/{len(steps)}] {time.monotonic() - self.t0:5.1f} s  "
                         f"{action[0]}{what}")
                self.step(i, action, before, after, label)
                ran = i
        except (TimeoutError, RuntimeError, KeyError, ClientError) as e:
            d = self.where.diverged(f"{type(e).__name__}: {' '.join(str(e).split())[:300]}")
            divergence = d.to_dict()
            self._step_log(d.step, (d.action,), "", diverged=d.what)
            self.log(f"  diverged at step {d.step} {d.action}: {d.what}")
        except Diverged as d:
            divergence = d.to_dict()
            self._step_log(d.step, (d.action,), "", diverged=d.what)
            self.log(f"  diverged at step {d.step} {d.action}: {d.what}")
        return ran, divergence

    def _write_report(self, result: Result) -> None:
        """The conform folder (noted), then report.json written atomically."""
        try:
            folder = conform_folder(self.out, self.release, dict(self.t.meta.get("config") or {}),
                                    self.brokers, result.evidence)
            self.notes.append(f"validate the real run against the model: kafka-mc real conform "
                              f"--run {folder}")
        except (OSError, ValueError) as e:
            self.notes.append(f"no conform folder ({type(e).__name__}: {e})")
        ev.write_report(self.out, result.to_dict(), self.calls.outcomes, self.calls.sent)


# What a reproduction writes in its folder (its manifest lists them: a rerun replaces them and
# nothing else), beside ``conform/``, a run folder of its own (``evidence.CONFORM_FILES``)
FILES = ("events.jsonl", "history.jsonl", "steps.jsonl", "report.json", "server.log",
         "stdout.log")


def reproduce(path: str, version: str | Release | None = None, out: Path | None = None,
              log=lambda s: None, brokers: int = 1) -> Result:
    """Run the trace at ``path`` on real Kafka; ``ReproduceError`` for bad input. ``out`` is a
    run folder (``kafka_mc.realkafka.runfolder``: new, empty or a run folder; its manifest
    written first, its completion last); an interrupt or an outside failure (``RunFailed``: a
    JVM that died, a full disk) leaves it marked incomplete, saying why."""
    loaded = load(path)
    release = release_for(loaded.preset, version)
    if out is None:
        out = Path("out") / f"reproduce-{Path(path).name.split('.itf')[0]}-{release.version}"
    return run_path(loaded, release, out, log, brokers)


def _outside(the_run) -> str | None:
    """What failed a reproduction from outside, if anything: the event log or the history not
    written (a full disk), the client driver's or a broker's JVM gone though the run did not
    stop it."""
    proxy, driver, cluster = (getattr(the_run, k, None) for k in ("proxy", "driver", "cluster"))
    for name, part in (("events.jsonl", proxy), ("history.jsonl", driver)):
        error = getattr(part, "write_error", None)
        if error is not None:
            return f"cannot write {name} ({getattr(error, 'strerror', None) or error})"
    if getattr(driver, "lost", None):
        return driver.lost
    for node, code in sorted((getattr(cluster, "died", None) or {}).items()):
        from kafka_mc.realkafka.run import exited
        return f"broker {node}'s JVM {exited(code)} though the run did not stop it"
    return None


def run_path(loaded: Loaded, release: Release, out: Path, log=lambda s: None,
             brokers: int = 1, gate_verification: bool = False) -> Result:
    """A loaded trace (a counterexample, or a directed run's path: ``load(...,
    counterexample=False)``) run on ``release`` (``gate_verification``: the leaders'
    verifications held until the trace delivers them); ``ReproduceError`` for one it cannot
    run."""
    from kafka_mc.realkafka.runfolder import RunFolder
    _needs_three(loaded, loaded.path, brokers)
    with RunFolder.take(out, "reproduce", files=FILES, folders=["conform"]) as folder:
        for marked in folder.marked:
            log(f"  a killed run's folder marked incomplete: {marked}")
        folder.phase = "reproducing the trace"
        the_run = _Run(loaded, release, folder.path, log, brokers, gate_verification)
        try:
            result = the_run.run()
        except (ClientError, ClusterError, TimeoutError, OSError, RuntimeError) as e:
            if getattr(the_run, "driver", None) is None:
                raise           # the cluster or the driver did not start: bad input, exit 2
            raise RunFailed(_outside(the_run) or f"{type(e).__name__}: "
                            f"{' '.join(str(e).split())[:200]}") from None
        failed = _outside(the_run)
        if failed:
            raise RunFailed(failed)
        try:
            folder.complete()
        except OSError as e:
            raise RunFailed(f"cannot write in the run folder ({e.strerror or e})") from None
    return result


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
