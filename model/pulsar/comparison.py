"""Pulsar in ``kafka-mc compare`` (model/comparison.py): its claims and the comparison workloads
as Pulsar configurations.

Pulsar's promise (PIP-31, the transaction docs): a transaction's produced messages and its
acknowledgements commit or abort together, across topics and subscriptions; a consumer never
receives a message of an open or aborted transaction (maxReadPosition, the aborted set); a
committed message is delivered; every transaction ends (the coordinator's timeout aborts one its
client abandoned). Duplicates are not promised away: a resent message is dropped only with
message deduplication on (brokerDeduplicationEnabled, off by default).

The model's transaction always consumes its input and acknowledges it (consume-transform-produce
is Pulsar's transaction); a lost request or response is a resend in Pulsar's client (the send
times out and is sent again, and the first copy may still arrive), so the comparison's losses
are the model's duplicated requests. The model has no producer crash (an abandoned client is its
transaction timeout, always enabled), so the crash workload is not run.
"""
from __future__ import annotations

from kafka_mc.model.comparison import Claim, Workload

CLAIMS = {
    "atomicity": Claim(("atomic_writes",)),
    "isolation": Claim(("read_committed",)),
    "no_loss": Claim(("no_lost_message",)),
    "no_duplicates": Claim(note="not promised with Pulsar's default configuration: a resent "
                                "message is dropped only with message deduplication on "
                                "(brokerDeduplicationEnabled, off by default)"),
    "consume_produce": Claim(("acks_with_writes",)),
    "resolution": Claim(("transaction_resolved",)),
}


def comparison(w: Workload) -> dict | None:
    if w.budget("producer_crashes"):
        return None
    losses = w.budget("request_losses") + w.budget("response_losses") \
        + w.budget("request_duplicates")
    return {"model.topics": min(w.partitions, 2), "model.normal_message": False,
            "model.deduplication": False,
            "faults.tc_failovers": w.budget("broker_failovers"), "faults.broker_failovers": 0,
            "faults.duplicates": min(losses, 1)}
