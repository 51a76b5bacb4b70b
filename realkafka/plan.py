"""A real run's plan: what a config's workload and fault budgets mean on a real cluster, drawn
from a seed (the same config and seed, the same plan, byte for byte).

The config sections mean here what they mean to the Kafka model (model/kafka/params.py):
``[cluster]`` transactional.ids, producer instances per transactional.id (a second instance
starts only after the first crashed, as ``CrashProducer`` makes one), partitions, consumers;
``[workload]`` transactions per instance, records per transaction, whether the application may
abort; ``[faults]`` the budgets, each spent as the proxy, the cluster or the application spends it
on a real cluster:

| budget | on the real cluster |
|---|---|
| request_delays | the proxy holds a request shorter than the sender's request.timeout.ms |
| request_duplicates | the proxy holds a request until the sender retries on a new connection, then delivers the old copy and drops its answer |
| request_losses / response_losses | the proxy drops the frame and closes the connection (the sender retries) |
| coordinator_failovers | the coordinator's broker restarted (clean or killed) after an EndTxn was answered |
| transaction_timeouts | the application pauses inside a transaction past transaction.timeout.ms |
| producer_crashes | an instance is abandoned mid-way (a zombie that later tries to go on) and the next instance of its transactional.id starts |
| offline_partitions | (`--brokers 3`: each partition's only replica on a broker other than the coordinator's) once a Produce to the partition is answered, its broker is killed and kept down until the controller fenced it (the partition's leader is -1), then started again after the next EndTxn answer (or when the workload ends) |

Budgets the real harness cannot spend (``UNSUPPORTED``) make the config one it cannot run.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field

# The transactional requests a network fault may hit, by the listener they travel on.
CLIENT_REQUESTS = ("InitProducerId", "AddPartitionsToTxn", "Produce", "EndTxn")
BROKER_REQUESTS = ("WriteTxnMarkers",)
NETWORK_KINDS = {"request_delays": "delay", "request_duplicates": "duplicate",
                 "request_losses": "drop-request", "response_losses": "drop-response"}
UNSUPPORTED = ("batch_expiries", "producer_state_losses", "rebalances",
               "transactional_id_expirations", "group_expiries",
               # a process killed for good: the driver would have to close an instance's
               # connections without its TransactionManager going on; not built yet
               "producer_kills")
# Workload switches the harness does not run (each changes what the application does: a run
# without it would be held against a model that does it)
UNRUN = ("consume_transform_produce", "simple_group", "two_phase_commit", "force_terminate")
# The moments an instance can crash at (the step it never takes).
CRASH_POINTS = ("before-begin", "before-send", "before-commit", "after-commit")


@dataclass(frozen=True)
class Txn:
    """One transaction of an instance: its records' partitions and what the application ends it
    with ("commit" or "abort"); ``pause`` is set when a transaction timeout is spent in it."""
    number: int
    partitions: tuple[int, ...]
    end: str
    pause: bool = False


@dataclass(frozen=True)
class Instance:
    """A producer instance of a transactional.id: its transactions, and where it crashes (None:
    it runs to the end)."""
    tid: int
    number: int
    txns: tuple[Txn, ...]
    crash: tuple[int, str] | None = None   # (transaction number, CRASH_POINTS entry)


@dataclass(frozen=True)
class NetworkFault:
    kind: str            # delay | duplicate | drop-request | drop-response
    api: str
    occurrence: int      # the n-th such request (or its response) the proxy sees
    hold_ms: int = 0     # delay: how long the request is held


@dataclass(frozen=True)
class Failover:
    after_end_txn: int   # the n-th EndTxn response
    hard: bool           # SIGKILL (True) or a clean shutdown


@dataclass(frozen=True)
class Outage:
    partition: int       # its only replica's broker killed (until fenced) after a Produce to it


@dataclass(frozen=True)
class Plan:
    seed: int
    partitions: int
    consumers: int
    instances: tuple[Instance, ...]
    network: tuple[NetworkFault, ...] = ()
    failovers: tuple[Failover, ...] = ()
    notes: tuple[str, ...] = field(default=())
    outages: tuple[Outage, ...] = ()

    def to_json(self) -> str:
        d = asdict(self)
        if not self.outages:      # the plans of configs without the budget keep their bytes
            del d["outages"]
        return json.dumps(d, sort_keys=True, indent=1) + "\n"

    @property
    def transactions(self) -> int:
        return sum(len(i.txns) for i in self.instances)


class PlanError(ValueError):
    """A config the real harness cannot run: one line."""


def check_brokers(plan: Plan, brokers: int) -> None:
    """A plan that needs more brokers than given is refused (``PlanError``)."""
    if plan.outages and brokers < 3:
        raise PlanError(f"seed {plan.seed}: faults.offline_partitions needs a partition on a "
                        "broker of its own, other than the coordinator's: --brokers 3")


def make_plan(cfg, seed: int, *, transaction_version: int = 2) -> Plan:
    """The seeded plan of ``cfg`` (a Kafka model ``Config``)."""
    if cfg.model != "kafka":
        raise PlanError(f"the real harness runs Kafka configurations, not model {cfg.model!r}")
    for budget in UNSUPPORTED:
        if cfg.get(f"faults.{budget}", 0):
            raise PlanError(f"faults.{budget} cannot be injected on a real cluster yet "
                            "(supported: " + ", ".join(sorted((*NETWORK_KINDS, "coordinator_failovers",
                                                               "transaction_timeouts",
                                                               "producer_crashes",
                                                               "offline_partitions"))) + ")")
    for switch in UNRUN:
        if cfg.get(f"workload.{switch}"):
            raise PlanError(f"workload.{switch} is not run on a real cluster yet")
    if (cfg.get("workload.max_in_flight") or 1) > 1:
        raise PlanError("workload.max_in_flight > 1 is not run on a real cluster yet (the "
                        "harness's producers send one record at a time: one batch in flight)")
    rng = random.Random(seed)
    tids, per_id = cfg["cluster.transactional_ids"], cfg["cluster.producers_per_id"]
    partitions, txns = cfg["cluster.partitions"], cfg["workload.transactions_per_producer"]
    records, may_abort = cfg["workload.records_per_transaction"], cfg["workload.abort_transactions"]
    # A budget is an upper bound, as it is to the model: each run spends 0..budget of each kind.
    crashes = rng.randint(0, min(cfg["faults.producer_crashes"], tids * (per_id - 1)))
    timeouts = rng.randint(0, cfg["faults.transaction_timeouts"])

    def transactions() -> list[Txn]:
        return [Txn(n, tuple(rng.randrange(partitions) for _ in range(records)),
                    rng.choice(("commit", "abort")) if may_abort else "commit")
                for n in range(txns)]

    # Which instances crash: spread over the transactional.ids, each crash starting the next one.
    crash_tids = [t for t in range(tids) for _ in range(per_id - 1)]
    rng.shuffle(crash_tids)
    crash_tids = sorted(crash_tids[:crashes])
    instances: list[Instance] = []
    for t in range(tids):
        n_crashes = crash_tids.count(t)
        for number in range(n_crashes + 1):
            crash = None
            if number < n_crashes:
                crash = (rng.randrange(txns), rng.choice(CRASH_POINTS))
            instances.append(Instance(t, number, tuple(transactions()), crash))
    # Transaction timeouts: a pause in a transaction that runs to its end.
    if timeouts:
        slots = [(i, x) for i, inst in enumerate(instances) for x in range(len(inst.txns))
                 if inst.crash is None or x < inst.crash[0]]
        for i, x in sorted(rng.sample(slots, min(timeouts, len(slots)))):
            inst = instances[i]
            txs = list(inst.txns)
            txs[x] = Txn(txs[x].number, txs[x].partitions, txs[x].end, pause=True)
            instances[i] = Instance(inst.tid, inst.number, tuple(txs), inst.crash)
    total = sum(len(i.txns) for i in instances)
    network = []
    apis = CLIENT_REQUESTS if transaction_version == 1 else tuple(
        a for a in CLIENT_REQUESTS if a != "AddPartitionsToTxn")   # TV2: the add is implicit
    for budget, kind in NETWORK_KINDS.items():
        for _ in range(rng.randint(0, cfg[f"faults.{budget}"])):
            api = rng.choice(apis + BROKER_REQUESTS)
            bound = len(instances) if api == "InitProducerId" else max(1, total)
            network.append(NetworkFault(kind, api, rng.randrange(bound) + 1,
                                        rng.randrange(100, 1500) if kind == "delay" else 0))
    failovers = [Failover(rng.randrange(max(1, total)) + 1, rng.random() < 0.5)
                 for _ in range(rng.randint(0, cfg["faults.coordinator_failovers"]))]
    # A partition offline: each at most once (the budget is at most the partitions).
    offline = sorted(rng.sample(range(partitions), min(partitions, rng.randint(
        0, cfg.get("faults.offline_partitions", 0) or 0))))
    return Plan(seed, partitions, cfg["cluster.consumers"], tuple(instances), tuple(network),
                tuple(failovers), outages=tuple(Outage(k) for k in offline))
