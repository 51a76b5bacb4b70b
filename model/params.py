"""The Kafka model's parameters: the configuration schema and its precomputed form."""
from __future__ import annotations

from typing import NamedTuple

from model.config import Param
from model.world import Budgets
from model.versions import DEFAULT_PRESET, FLAGS, PRESETS, Features, features

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
    Param("workload.transactions_per_producer", int, 1, "transactions each instance runs", min=1, max=4),
    Param("workload.records_per_transaction", int, 1, "records per transaction", min=1, max=3),
    Param("workload.abort_transactions", bool, True, "the application may choose to abort"),
    Param("workload.consume_transform_produce", bool, False,
          "each transaction consumes an input record and commits its offset (a consumer group)"),
    Param("workload.input_records", int, 2, "input records (consume-transform-produce)",
          min=1, max=4),
    Param("faults.producer_crashes", int, 1, "producer crash/restart (old instance may be a zombie)",
          min=0, max=4),
    Param("faults.coordinator_failovers", int, 0, "transaction coordinator failovers", min=0, max=3),
    Param("faults.transaction_timeouts", int, 0, "transaction timeout aborts", min=0, max=3),
    Param("faults.request_delays", int, 0, "requests held back and delivered out of order",
          min=0, max=3),
    Param("faults.request_duplicates", int, 0, "requests delivered twice", min=0, max=3),
    Param("faults.rebalances", int, 0, "consumer group rebalances (consume-transform-produce)",
          min=0, max=3),
    Param("faults.transactional_id_expirations", int, 0,
          "transactional.id.expiration.ms passes for an idle transactional.id (-> Dead)",
          min=0, max=3),
    Param("faults.request_losses", int, 0,
          "a client request is lost: request.timeout.ms, the client resends it", min=0, max=3),
    Param("faults.response_losses", int, 0,
          "a response to a client is lost: request.timeout.ms, the client resends its request",
          min=0, max=3),
    Param("faults.batch_expiries", int, 0,
          "delivery.timeout.ms expires a batch while its Produce request is in flight",
          min=0, max=3),
    Param("faults.producer_state_losses", int, 0,
          "a leader drops an idle producer id's state (producer.id.expiration.ms)", min=0, max=3),
    Param("faults.total", int, None,
          "at most this many faults of any kinds in one execution (default: the budgets' sum)",
          min=0, max=40),
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
    budgets: tuple[int, ...]

    @property
    def producers(self) -> int:
        return self.tids * self.producers_per_id

    @property
    def tv2(self) -> bool:
        return self.features.transaction_version == 2


def kafka_params(cfg) -> KafkaParams:
    version = cfg["protocol.version"]
    flags = {f: cfg[f"protocol.{f}"] for f in FLAGS if cfg.get(f"protocol.{f}") is not None}
    return KafkaParams(
        version=version, features=features(version, flags),
        tids=cfg["cluster.transactional_ids"], producers_per_id=cfg["cluster.producers_per_id"],
        partitions=cfg["cluster.partitions"], consumers=cfg["cluster.consumers"],
        transactions=cfg["workload.transactions_per_producer"],
        records=cfg["workload.records_per_transaction"],
        abort_allowed=cfg["workload.abort_transactions"],
        ctp=cfg["workload.consume_transform_produce"], inputs=cfg["workload.input_records"],
        budgets=_budgets(cfg))


def _budgets(cfg) -> tuple[int, ...]:
    each = tuple(cfg[f"faults.{f}"] for f in Budgets._fields[:-1])
    total = cfg.get("faults.total")
    return (*each, sum(each) if total is None else total)
