"""The Kafka model's parameters: the configuration schema and its precomputed form."""
from __future__ import annotations

from typing import NamedTuple

from kafka_mc.model.config import ConfigError, Param
from kafka_mc.model.kafka import faults
from kafka_mc.model.kafka.versions import DEFAULT_PRESET, FLAGS, PRESETS, Features, features

LAST_EPOCH = 32767   # Short.MaxValue
# The presets whose client keeps one request in flight: 0.11's KafkaProducer
# .configureInflightRequests refuses an idempotent producer with any other
# max.in.flight.requests.per.connection; KAFKA-5494 (1.0) allows up to five, with the leader's
# five-batch window (ProducerStateEntry.batchMetadata), the client's OUT_OF_ORDER_SEQUENCE_NUMBER
# retry and its sequence adjustment after a failed batch (workload.max_in_flight)
ONE_IN_FLIGHT = ("kafka-0.11",)

PARAMS = (
    Param("protocol.version", str, DEFAULT_PRESET, "Kafka version preset", choices=tuple(PRESETS)),
    *(Param(f"protocol.{f}", int if f == "transaction_version" else bool, None,
            "feature flag (overrides the preset)",
            **({"min": 1, "max": 2} if f == "transaction_version" else {})) for f in FLAGS),
    Param("cluster.transactional_ids", int, 1, "transactional.ids", min=1, max=3),
    Param("cluster.producers_per_id", int, 2, "instances per transactional.id (2 = one restart)",
          min=1, max=3),
    Param("cluster.partitions", int, 2, "data partitions", min=1, max=4),
    Param("cluster.consumers", int, 1, "read_committed consumers", min=0, max=2),
    Param("cluster.last_epoch", int, LAST_EPOCH,
          "the last producer epoch (Short.MaxValue); a small one lets a search reach epoch "
          "exhaustion (isEpochExhausted: epoch >= last - 1)", min=1, max=LAST_EPOCH),
    Param("workload.transactions_per_producer", int, 1, "transactions each instance runs", min=1, max=4),
    Param("workload.records_per_transaction", int, 1, "records per transaction", min=1, max=3),
    Param("workload.max_in_flight", int, 1,
          "max.in.flight.requests.per.connection of the producers: Produce requests (one batch "
          "each) in flight per partition; above 1 the leaders keep the last five batches of a "
          "producer (DUPLICATE_SEQUENCE_NUMBER) and a verification's lowest sequence, and the "
          "client its last acknowledged sequence per partition (a second batch on a partition "
          "needs workload.records_per_transaction >= 2)", min=1, max=5),
    Param("workload.abort_transactions", bool, True, "the application may choose to abort"),
    Param("workload.consume_transform_produce", bool, False,
          "each transaction consumes an input record and commits its offset (a consumer group)"),
    Param("workload.input_records", int, 2, "input records (consume-transform-produce)",
          min=1, max=4),
    Param("workload.simple_group", bool, False,
          "consume-transform-produce with a simple group: the application assign()s the input "
          "partition (no JoinGroup, no rebalance), fetches its committed offset with OffsetFetch "
          "and commits with sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(groupId)) "
          "(generation -1), the one-transactional.id-per-input-partition pattern before KIP-447 "
          "(needs workload.consume_transform_produce; the fault group_expiries deletes its group)"),
    Param("workload.two_phase_commit", bool, False,
          "KIP-939: the producers set transaction.two.phase.commit.enable and end each "
          "transaction with prepareTransaction() and completeTransaction(PreparedTxnState) as an "
          "external transaction manager decides; a restarted instance calls "
          "initTransactions(keepPreparedTxn=true) (needs protocol.prepare_transaction_api)"),
    Param("workload.force_terminate", bool, False,
          "KIP-939: an operator may call Admin.forceTerminateTransaction (4.1+) once per "
          "transactional.id while its two-phase-commit transaction is ongoing or prepared "
          "(needs workload.two_phase_commit)"),
    *faults.PARAMS,
)


class KafkaParams(NamedTuple):
    version: str
    features: Features
    tids: int
    producers_per_id: int
    partitions: int
    consumers: int
    transactions: int
    records: int
    abort_allowed: bool
    ctp: bool                   # consume-transform-produce
    inputs: int                 # input records (ctp)
    budgets: faults.Budgets        # the initial fault budgets
    last_epoch: int = LAST_EPOCH   # Short.MaxValue, or a small stand-in
    two_phase: bool = False        # KIP-939 (workload.two_phase_commit)
    force_terminate: bool = False  # KIP-939's Admin.forceTerminateTransaction (workload.force_terminate)
    simple_group: bool = False     # assign(), generation -1 (workload.simple_group)
    max_in_flight: int = 1         # batches in flight per partition (workload.max_in_flight)

    @property
    def producers(self) -> int:
        return self.tids * self.producers_per_id

    @property
    def tv2(self) -> bool:
        return self.features.transaction_version == 2

    @property
    def window(self) -> bool:
        """Several batches may be in flight to a partition (``workload.max_in_flight`` > 1): the
        state that tells their sequences apart is kept (the leader's five-batch window and a
        verification's lowest sequence, the client's last acknowledged sequence). With one, it
        decides nothing a search can tell (``kafka_mc.model.kafka.partition`` and ``producer``
        say why), and is not kept."""
        return self.max_in_flight > 1


def kafka_params(cfg) -> KafkaParams:
    version = cfg["protocol.version"]
    flags = {f: cfg[f"protocol.{f}"] for f in FLAGS if cfg.get(f"protocol.{f}") is not None}
    two_phase = bool(cfg.get("workload.two_phase_commit"))
    if two_phase and not features(version, flags).prepare_transaction_api:
        raise ConfigError(f"workload.two_phase_commit needs KafkaProducer.prepareTransaction "
                          f"(protocol.prepare_transaction_api: latest, or 4.4), not in {version}")
    force_terminate = bool(cfg.get("workload.force_terminate"))
    if force_terminate and not two_phase:
        raise ConfigError("workload.force_terminate needs workload.two_phase_commit (it ends a "
                          "two-phase-commit transaction)")
    simple_group = bool(cfg.get("workload.simple_group"))
    if simple_group and not cfg["workload.consume_transform_produce"]:
        raise ConfigError("workload.simple_group needs workload.consume_transform_produce (it is "
                          "the consumer group of the input)")
    if simple_group and cfg["faults.rebalances"]:
        raise ConfigError("workload.simple_group has no rebalances (its applications assign() "
                          "the input): set faults.rebalances = 0")
    if cfg["faults.group_expiries"] and not simple_group:
        raise ConfigError("faults.group_expiries needs workload.simple_group (a managed group's "
                          "members rejoin, which recreates it, before they fetch)")
    max_in_flight = cfg.get("workload.max_in_flight") or 1
    if max_in_flight > 1 and version in ONE_IN_FLIGHT:
        raise ConfigError(f"workload.max_in_flight > 1 needs KAFKA-5494 (1.0): {version}'s "
                          "idempotent producer requires max.in.flight.requests.per.connection = 1")
    return KafkaParams(
        version=version, features=features(version, flags),
        tids=cfg["cluster.transactional_ids"], producers_per_id=cfg["cluster.producers_per_id"],
        partitions=cfg["cluster.partitions"], consumers=cfg["cluster.consumers"],
        transactions=cfg["workload.transactions_per_producer"],
        records=cfg["workload.records_per_transaction"],
        abort_allowed=cfg["workload.abort_transactions"],
        ctp=cfg["workload.consume_transform_produce"], inputs=cfg["workload.input_records"],
        budgets=faults.budgets(cfg), last_epoch=cfg["cluster.last_epoch"], two_phase=two_phase,
        force_terminate=force_terminate, simple_group=simple_group,
        max_in_flight=max_in_flight)
