"""Kafka in ``kafka-mc compare`` (model/comparison.py): its claims and the comparison workloads
as Kafka configurations.

Kafka's promise (KIP-98, KIP-447): a transaction's records on every partition are committed or
aborted together; read_committed consumers read only committed data; a record the producer saw
committed stays (idempotence: at most once per partition); with consume-transform-produce the
consumed offsets commit with the outputs; every transaction ends (the coordinator's timeout aborts
one its producer abandoned).
"""
from __future__ import annotations

from kafka_mc.model.comparison import Claim, Workload
from kafka_mc.model.kafka.faults import FAULTS

CLAIMS = {
    "atomicity": Claim(("txn_atomicity",)),
    "isolation": Claim(("read_committed_isolation",)),
    "no_loss": Claim(("committed_writes_visible", "no_lost_writes")),
    "no_duplicates": Claim(("no_duplicates",)),
    "consume_produce": Claim(("exactly_once_offsets",)),
    "resolution": Claim(("eventual_completion",)),
}

# The common fault kinds as Kafka's budgets (model/kafka/faults.py); the broker that holds a
# transaction's state is its coordinator.
_BUDGETS = {"producer_crashes": "producer_crashes", "request_losses": "request_losses",
            "response_losses": "response_losses", "request_duplicates": "request_duplicates",
            "broker_failovers": "coordinator_failovers",
            "transaction_timeouts": "transaction_timeouts"}


def comparison(w: Workload) -> dict:
    """The workload as a Kafka configuration: one transactional.id (a crash starts a second
    instance of it), one read_committed consumer, every other fault budget zero."""
    cfg = {"cluster.transactional_ids": 1,
           "cluster.producers_per_id": 1 + w.budget("producer_crashes"),
           "cluster.partitions": w.partitions, "cluster.consumers": 1,
           "workload.transactions_per_producer": w.transactions,
           "workload.records_per_transaction": w.records,
           "workload.abort_transactions": True,
           **{f"faults.{f.budget}": 0 for f in FAULTS}}
    for common, budget in _BUDGETS.items():
        cfg[f"faults.{budget}"] = w.budget(common)
    if w.consume_produce:
        cfg.update({"workload.consume_transform_produce": True, "workload.input_records": 1})
    return cfg
