"""``kafka-mc real run``: a config's workload and seeded faults on a real cluster of one release.

A run starts a cluster whose listeners (the clients' and the inter-broker one) go through the
recording proxy, creates a topic of the config's partitions, starts the config's live read_committed
consumers (``kafka_mc.realkafka.consumers``: polling while the producers run), runs each
transactional.id's producer instances (one thread per transactional.id, as one application thread
each) through the real Java client, spends the plan's faults (``kafka_mc.realkafka.plan``), waits for the cluster to quiesce, reads every
partition with a read_committed consumer and takes the end state (each partition's log read with
Kafka's DumpLogSegments, LSO and high watermark, DescribeTransactions, DescribeProducers). It writes,
under the run folder: ``run.json`` (the release, seed and config), ``plan.json`` (the schedule
the seed gave), ``events.jsonl`` (the proxy's
event log), ``history.jsonl`` (the client history), ``report.json`` (end state, anomalies) and the
brokers' logs. Real runs are not deterministic; the seed fixes the plan, and the files explain the
run. The run folder is a ``kafka_mc.realkafka.runfolder`` one: taken only when new, empty or a
run folder, its manifest written first and its completion last; an interrupt or a failure from
outside (``RunFailed``: a broker's or the client's JVM gone, a file that cannot be written, a
failover that cannot restart its broker) stops the run, every JVM and the proxy with it, and
leaves the folder marked incomplete, saying why.
"""
from __future__ import annotations

import secrets
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_mc.realkafka import anomalies, plan as planning, queue_checker
from kafka_mc.realkafka.releases import Release

# Client timers: short, so that a fault's consequence (a timeout and a retry) comes within seconds
# on this machine, long enough that an unfaulted request on two busy cores does not time out.
REQUEST_TIMEOUT_MS = 4000
TRANSACTION_TIMEOUT_MS = 6000
CLIENT_SETTINGS = {
    "request.timeout.ms": str(REQUEST_TIMEOUT_MS),
    "delivery.timeout.ms": str(3 * REQUEST_TIMEOUT_MS),
    "transaction.timeout.ms": str(TRANSACTION_TIMEOUT_MS),
    "max.block.ms": str(4 * REQUEST_TIMEOUT_MS),
    "retry.backoff.ms": "100",
    "linger.ms": "0",
}
# The live consumers' (``kafka_mc.realkafka.consumers``): the clients' request timeout
CONSUMER_SETTINGS = {"request.timeout.ms": str(REQUEST_TIMEOUT_MS)}
BROKER_SETTINGS = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "transaction.max.timeout.ms": "60000",
    "request.timeout.ms": str(REQUEST_TIMEOUT_MS),   # the marker channel's and verifications'
}
# What a run writes in its folder (its manifest lists them: a rerun replaces them, and nothing
# else), and of those what a validation reads (their digests are recorded: a change is seen).
RUN_FILES = ("run.json", "plan.json", "events.jsonl", "history.jsonl", "report.json")
INPUTS = RUN_FILES
# A transaction timeout fault: the application pauses past the timeout and the abort's cleanup.
PAUSE_S = (TRANSACTION_TIMEOUT_MS + 2500) / 1000
OP_TIMEOUT_S = 30.0
FENCED_AFTER_S = 4.5    # past the cluster's broker.session.timeout.ms (3 s, realkafka.cluster)
QUIESCE_S = 30.0
# The exceptions after which the Java client's documented handling is to close the producer.
FATAL = {"ProducerFencedException", "InvalidProducerEpochException", "FencedInstanceIdException",
         "OutOfOrderSequenceException", "AuthorizationException",
         "TransactionalIdAuthorizationException", "UnsupportedVersionException",
         "IllegalStateException", "KafkaException", "InvalidTxnStateException"}


@dataclass
class RunResult:
    version: str
    seed: int
    out: Path
    transactions: int
    events: int
    operations: int
    anomalies: list[anomalies.Anomaly]
    seconds: float
    outcomes: dict = field(default_factory=dict)
    # Every anomaly checked (the run's own and Jepsen's queue checker's), and the cases of
    # Jepsen's anomalies that Kafka's model allows (reported, no anomaly)
    checked: tuple = anomalies.CHECKED + queue_checker.CHECKED
    allowed: list = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 12 if self.anomalies else 0

    def to_dict(self) -> dict:
        return {"version": self.version, "seed": self.seed, "out": str(self.out),
                "transactions": self.transactions, "events": self.events,
                "operations": self.operations, "seconds": round(self.seconds, 1),
                "anomalies": [a.to_dict() for a in self.anomalies],
                "checked": list(self.checked), "allowed": [a.to_dict() for a in self.allowed],
                "outcomes": {anomalies._txn_name(k): v for k, v in sorted(self.outcomes.items())},
                "verdict": "anomaly" if self.anomalies else "clean"}


def _error_class(e: BaseException) -> str:
    return getattr(e, "cls", None) or type(e).__name__


class _Workload:
    """The instances of the plan, run through the driver; what each transaction's end returned
    (``outcomes``) and which values were acknowledged (``sent``)."""

    def __init__(self, plan: planning.Plan, driver, topic: str, run_id: str, log):
        self.plan, self.driver, self.topic, self.run_id, self.log = plan, driver, topic, run_id, log
        self.outcomes: dict[tuple, str] = {}
        self.sent: dict[tuple, list[str]] = {}
        self.stopped: dict[int, str] = {}      # tid -> the error its thread ended with
        self.lock = threading.Lock()

    def transactional_id(self, tid: int) -> str:
        return f"kmc-{self.run_id}-t{tid}"

    def run(self, failed=lambda: None) -> None:
        """Every transactional.id's instances, one thread each, until they are done (at most
        300 s) or ``failed()`` names a failure from outside (a JVM died, a file cannot be
        written): then the threads are left to end with the driver."""
        threads = [threading.Thread(target=self._guarded, args=(t,), name=f"tid-{t}",
                                    daemon=True)
                   for t in sorted({i.tid for i in self.plan.instances})]
        for th in threads:
            th.start()
        deadline = time.monotonic() + 300
        for th in threads:
            while th.is_alive() and time.monotonic() < deadline and failed() is None:
                th.join(min(0.5, max(0.0, deadline - time.monotonic())))

    def _guarded(self, tid: int) -> None:
        """One transactional.id's instances; a client call failing because the run is being
        stopped (an interrupt, a failure: the driver closed) ends the thread quietly."""
        try:
            self._tid(tid)
        except Exception as e:          # the driver lost or closed under the thread
            self.stopped[tid] = _error_class(e)

    def _send(self, producer, ident, txn, zombie=False) -> None:
        for r, partition in enumerate(txn.partitions):
            value = anomalies.record_value(*ident, r, zombie)
            producer.send(self.topic, partition, value, value)
            with self.lock:
                self.sent.setdefault(ident, []).append(value)

    def _end(self, producer, ident, how: str) -> bool:
        """commit or abort as the application asked; on an abortable commit error the documented
        handling (abortTransaction). Returns whether the instance can go on."""
        try:
            (producer.commit_transaction if how == "commit" else producer.abort_transaction)()
            self.outcomes[ident] = "committed" if how == "commit" else "aborted"
            return True
        except Exception as e:   # a ClientError: the Java exception's class
            cls = _error_class(e)
            self.log(f"  {how} of {anomalies._txn_name(ident)}: {cls}")
            if "Timeout" in cls:
                self.outcomes[ident] = "unknown"
                return False
            if cls in FATAL:
                self.outcomes[ident] = "failed"
                return False
            try:
                producer.abort_transaction()
                self.outcomes[ident] = "aborted"
                return True
            except Exception:
                self.outcomes[ident] = "failed"
                return False

    def _tid(self, tid: int) -> None:
        zombie = None   # (producer, instance, transaction, crash point) of the last crashed one
        for inst in (i for i in self.plan.instances if i.tid == tid):
            name = f"t{tid}.i{inst.number}"
            producer = self.driver.producer(name, self.transactional_id(tid), **CLIENT_SETTINGS)
            try:
                producer.init_transactions()
            except Exception as e:
                self.log(f"  {name} initTransactions: {_error_class(e)}")
                continue
            if zombie is not None:
                self._zombie(*zombie)
                zombie = None
            for txn in inst.txns:
                ident = (tid, inst.number, txn.number)
                point = inst.crash[1] if inst.crash and inst.crash[0] == txn.number else None
                if point == "before-begin":
                    zombie = (producer, inst, txn, point)
                    break
                try:
                    producer.begin_transaction()
                    if point == "before-send":
                        zombie = (producer, inst, txn, point)
                        break
                    self._send(producer, ident, txn)
                    if txn.pause:
                        time.sleep(PAUSE_S)
                except Exception as e:
                    self.log(f"  {name} transaction {txn.number}: {_error_class(e)}")
                    if not self._end(producer, ident, "abort"):
                        break
                    continue
                if point == "before-commit":
                    zombie = (producer, inst, txn, point)
                    break
                if not self._end(producer, ident, txn.end):
                    break
                if point == "after-commit":
                    zombie = (producer, inst, txn, point)
                    break

    def _zombie(self, producer, inst, txn, point) -> None:
        """The crashed instance goes on after its successor initialized, as the model's zombie
        does: with what is left of its own workload (``CrashProducer`` replaces an instance; the
        old one keeps its transactions to run, no more). Whatever it sends now is marked ``z`` and
        must never be visible (zombie fencing)."""
        if point == "after-commit":
            txn = next((t for t in inst.txns if t.number == txn.number + 1), None)
            if txn is None:
                return           # its workload is done: a zombie with nothing left to do
            point = "before-begin"
        ident = (inst.tid, inst.number, txn.number)
        try:
            if point == "before-begin":
                producer.begin_transaction()
            if point != "before-commit":
                self._send(producer, ident, txn, zombie=True)
            if txn.end == "commit":
                producer.commit_transaction()
                self.outcomes[ident] = "committed"
            else:
                producer.abort_transaction()
                self.outcomes[ident] = "aborted"
        except Exception as e:
            self.log(f"  zombie t{inst.tid}.i{inst.number}: {_error_class(e)}")
            self.outcomes.setdefault(ident, "failed")


def _install_faults(proxy, plan: planning.Plan) -> list:
    from kafka_mc.realkafka import proxy as proxies
    installed = []
    for nf in plan.network:
        installed.append(proxy.add_fault(proxies.fault_for(nf)))
    return installed


def _watching(name: str, watch, failures: list) -> threading.Thread:
    """A harness thread (failovers, outages) started: an error in it is the run's failure
    (``failures``, which the run checks), never a traceback."""
    def body():
        try:
            watch()
        except Exception as e:
            failures.append(f"the {name} thread failed ({_error_class(e)}: "
                            f"{' '.join(str(e).split())[:200]})")
    th = threading.Thread(target=body, name=name, daemon=True)
    th.start()
    return th


def _failovers(proxy, cluster, plan: planning.Plan, log, stop: threading.Event,
               failures: list) -> threading.Thread:
    """Restart the coordinator's broker after the n-th EndTxn response, for each failover."""
    def watch():
        for f in plan.failovers:
            seen = 0
            def nth_end_txn(e, f=f):
                nonlocal seen
                if e.get("api") == "EndTxn" and e.get("direction") == "response":
                    seen += 1
                return seen >= f.after_end_txn
            try:
                proxy.wait_for(nth_end_txn, timeout=120)
            except Exception:
                return
            if stop.is_set():
                return
            node = cluster.coordinator_node()
            log(f"  failover: broker {node} {'killed' if f.hard else 'shut down'} and restarted")
            if f.hard:
                # It stays down until a live controller would have fenced it (a new leader
                # epoch, hence coordinator epoch: the model's ElectCoordinator). On one broker the
                # controller dies with it, so the restart is a bounce at the same coordinator
                # epoch (3.x), or a bounce and, once the old incarnation's session has timed out,
                # a failover (4.x): the model's BounceCoordinator (docs/conformance.md #15, #19).
                cluster.kill(node)
                time.sleep(FENCED_AFTER_S)
                cluster.start_node(node)
            else:       # a controlled shutdown moves the leadership itself
                cluster.restart(node, hard=False)
    return _watching("failovers", watch, failures)


def _outages(proxy, cluster, admin, plan: planning.Plan, topic: str, log,
             stop: threading.Event, failures: list) -> threading.Thread:
    """For each outage: once a Produce to its partition is answered, kill the partition's only
    replica's broker and keep it down until the controller fenced it (leader -1, NO_LEADER: the
    model's PartitionOffline), then start it again after the next EndTxn answer or when the
    workload ends (the model's ElectLeader)."""
    def leader(k):
        return next(p["leader"] for p in admin.describe_topics([topic])[topic]
                    if p["partition"] == k)

    def watch():
        for o in plan.outages:
            def produced(e, k=o.partition):
                return (e.get("api") == "Produce" and e.get("direction") == "response"
                        and any(pr.get("index") == k and pr.get("error_code") == 0
                                for t in (e.get("fields") or {}).get("responses") or ()
                                for pr in t.get("partition_responses") or ()))
            try:
                proxy.wait_for(produced, timeout=120)
            except Exception:
                return
            if stop.is_set():
                return
            node = cluster.leader(topic, o.partition)
            ends = sum(1 for e in proxy.events()
                       if e.get("api") == "EndTxn" and e.get("direction") == "response")
            log(f"  outage: partition {o.partition}'s broker {node} killed until fenced")
            cluster.kill(node)
            deadline = time.monotonic() + 30
            while leader(o.partition) is not None and time.monotonic() < deadline:
                time.sleep(0.5)

            # down until the next EndTxn is answered (its markers then meet the partition
            # without a leader) and a little more, or until the workload ended
            until = time.monotonic() + 60
            while not stop.is_set() and time.monotonic() < until:
                answered = sum(1 for e in proxy.events() if e.get("api") == "EndTxn"
                               and e.get("direction") == "response")
                if answered > ends:
                    time.sleep(3)
                    break
                time.sleep(0.2)
            log(f"  outage: broker {node} started again")
            cluster.start_node(node)
            cluster.leader(topic, o.partition, timeout=60)
    return _watching("outages", watch, failures)


def quiesce(admin, tids: list[str], partitions: list, topic: str) -> tuple[bool, dict]:
    """Wait until no transaction is ongoing or being completed at its coordinator and every LSO
    reached its high watermark (or QUIESCE_S passed); the last states seen."""
    deadline = time.monotonic() + QUIESCE_S
    while True:
        states = admin.describe_transactions(tids)
        open_ = any(s.get("state") in anomalies.ONGOING for s in states.values())
        offsets = {p: {"lso": admin.list_offsets(topic, p, "read_committed"),
                       "high_watermark": admin.list_offsets(topic, p, "read_uncommitted")}
                   for p in partitions}
        settled = not open_ and all(o["lso"] == o["high_watermark"] for o in offsets.values())
        if settled or time.monotonic() > deadline:
            return open_, {"transactions": states, "offsets": offsets}
        time.sleep(0.5)


def read_all(driver, topic: str, partitions: list, offsets: dict, isolation: str) -> list[dict]:
    consumer = driver.consumer(f"reader-{isolation}", f"kmc-reader-{secrets.token_hex(3)}",
                               isolation=isolation)
    try:
        consumer.assign(topic, partitions)
        records: list[dict] = []
        end = {p: offsets[p]["lso" if isolation == "read_committed" else "high_watermark"]
               for p in partitions}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            records.extend(consumer.poll(0.5))
            if all(consumer.position(topic, p) >= end[p] for p in partitions):
                break
        return [{"partition": r["partition"], "offset": r["offset"], "value": r["value"]}
                for r in records]
    finally:
        consumer.close()


def log_names(brokers: int) -> list[str]:
    """The brokers' logs a run folder keeps: ``server.log`` and ``stdout.log`` of one broker,
    ``broker-<n>-server.log`` ... of several."""
    names = ("server.log", "stdout.log")
    if brokers == 1:
        return list(names)
    return [f"broker-{n}-{name}" for n in range(1, brokers + 1) for name in names]


def _failure(proxy, cluster, driver, failures: list) -> str | None:
    """What failed the run from outside, if anything: a file the proxy or the client history
    could not write (a full disk), the client driver's JVM or a broker's JVM gone though the
    run did not stop it, a harness thread (a failover, an outage) that could not do its part."""
    for name, error in (("events.jsonl", proxy.write_error), ("history.jsonl",
                                                              driver.write_error)):
        if error is not None:
            return f"cannot write {name} ({getattr(error, 'strerror', None) or error})"
    if driver.lost:
        return driver.lost
    for node, code in sorted(cluster.dead_nodes().items()):
        return (f"broker {node}'s JVM {exited(code)} though the run did not stop it (from "
                "outside, or out of memory: see its server.log)")
    return failures[0] if failures else None


def exited(code: int) -> str:
    """How a process ended, from its return code (a negative one: the signal that killed it)."""
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited (code {code})"


def run(cfg, release: Release, seed: int, out: Path, *, brokers: int = 1, log=lambda s: None
        ) -> RunResult:
    """One run of ``cfg`` on ``release``; its files under ``out``, a run folder
    (``kafka_mc.realkafka.runfolder``: taken only when new, empty or a run folder; its
    manifest written first and its completion last). An interrupt or an outside failure
    (``RunFailed``) leaves the folder marked incomplete, saying why."""
    from kafka_mc.realkafka.runfolder import RunFailed, RunFolder

    the_plan = planning.make_plan(cfg, seed, transaction_version=release.transaction_version)
    planning.check_brokers(the_plan, brokers)
    with RunFolder.take(out, "run", files=(*RUN_FILES, *log_names(brokers))) as folder:
        for marked in folder.marked:
            log(f"  a killed run's folder marked incomplete: {marked}")
        try:
            folder.write_text("plan.json", the_plan.to_json())
            folder.write_json("run.json", {"version": release.version,
                                           "preset": release.preset, "seed": seed,
                                           "brokers": brokers, "config": cfg.to_dict(),
                                           **({"kafka_home": release.home_dir}
                                              if release.own else {})})
            result, state, sent = _run(cfg, release, seed, folder, the_plan, brokers, log)
            folder.phase = "writing report.json"
            folder.write_json("report.json", {**result.to_dict(), "end_state": state,
                                              "sent": sent})
            folder.complete(INPUTS)
        except OSError as e:        # a full disk, a folder made read-only meanwhile
            raise RunFailed(f"cannot write in the run folder ({e.strerror or e})") from None
    return result


def _run(cfg, release, seed, folder, the_plan, brokers, log):
    """The run itself, in ``folder``: (RunResult, end state, values sent)."""
    from kafka_mc.realkafka.client import ClientError, Driver
    from kafka_mc.realkafka.cluster import Cluster, ClusterError, sweep_stale
    from kafka_mc.realkafka.consumers import LiveConsumers
    from kafka_mc.realkafka.logdump import partition_log
    from kafka_mc.realkafka.proxy import Proxy
    from kafka_mc.realkafka.runfolder import RunFailed

    started = time.monotonic()
    out = folder.path
    run_id = f"{seed}-{secrets.token_hex(3)}"
    topic = f"kmc-{run_id}"
    partitions = list(range(the_plan.partitions))
    stop = threading.Event()
    failures: list[str] = []
    for left in sweep_stale():
        log(f"  removed what a killed run left: {left}")
    folder.phase = "starting the cluster"
    with Proxy(out / "events.jsonl") as proxy, \
            Cluster(release, brokers=brokers, proxy=proxy, settings=BROKER_SETTINGS) as cluster, \
            Driver(release, cluster.bootstrap, history_path=out / "history.jsonl",
                   origin_ns=proxy.origin_ns) as driver:   # one time line with the proxy's
        def failed():
            return _failure(proxy, cluster, driver, failures)
        live = None
        try:
            folder.phase = "creating the topic"
            admin = driver.admin()
            if the_plan.outages:    # one replica each, none on the coordinator's broker
                coordinator = cluster.coordinator_node()
                others = [n for n in sorted(cluster.nodes) if n != coordinator]
                admin.create_topic(topic, the_plan.partitions, 1, assignment={
                    k: [others[k % len(others)]] for k in partitions})
            else:
                admin.create_topic(topic, the_plan.partitions, min(brokers, 3))
            live = LiveConsumers(driver, topic, partitions, the_plan.consumers, log,
                                 CONSUMER_SETTINGS)
            live.start()            # polling while the producers write (issue 55)
            installed = _install_faults(proxy, the_plan)
            watcher = _failovers(proxy, cluster, the_plan, log, stop, failures)
            outages = _outages(proxy, cluster, admin, the_plan, topic, log, stop, failures)
            folder.phase = "running the workload"
            work = _Workload(the_plan, driver, topic, run_id, log)
            work.run(failed)
            stop.set()
            if failed() is None:
                outages.join(timeout=150)     # every broker back before the end state is read
            if failed() is not None:
                raise RunFailed(failed())
            folder.phase = "reading the end state"
            tids = sorted({work.transactional_id(i.tid) for i in the_plan.instances})
            open_, state = quiesce(admin, tids, partitions, topic)
            state["consumers"] = live.finish({p: o["lso"] for p, o in state["offsets"].items()})
            state["producers"] = {p: admin.describe_producers(topic, p) for p in partitions}
            reads = read_all(driver, topic, partitions, state["offsets"], "read_committed")
            state["read_committed"] = reads
            state["logs"] = {p: partition_log(cluster, topic, p) for p in partitions}
            if failed() is not None:
                raise RunFailed(failed())
            found = anomalies.check(work.outcomes, work.sent, reads, state["offsets"], open_)
            queue = queue_checker.check_history(driver.history)
            found += queue.anomalies
            state["faults"] = [{"id": f.id, "kind": f.kind, "api": f.api,
                                "direction": f.direction, "occurrence": f.occurrence,
                                "applied_to_events": list(f.applied)} for f in installed]
            events = len(proxy.events())
            operations = len(driver.history)
            watcher.join(timeout=1)
            folder.phase = "copying the brokers' logs"
            for f in cluster.log_files():
                name = f.name if brokers == 1 else f"{f.parent.name}-{f.name}"
                folder.copy_in(f, name)
        except (ClientError, ClusterError, TimeoutError, OSError, RuntimeError) as e:
            if isinstance(e, RunFailed):
                raise
            why = failed() or f"{_error_class(e)}: {' '.join(str(e).split())[:200]}"
            raise RunFailed(why) from None
        finally:
            stop.set()
            if live is not None:
                live.stop.set()     # the polling threads end (the driver closes the consumers)
    if proxy.write_error is not None or driver.write_error is not None:
        raise RunFailed(_failure(proxy, cluster, driver, failures))
    result = RunResult(release.version, seed, out, the_plan.transactions, events, operations,
                       found, time.monotonic() - started, dict(work.outcomes),
                       allowed=list(queue.allowed))
    sent = {anomalies._txn_name(k): v for k, v in sorted(work.sent.items())}
    return result, state, sent
