"""RocketMQ in ``kafka-mc compare`` (model/comparison.py): its claims and the comparison
workloads as RocketMQ configurations.

RocketMQ's promise (its transactional message docs, ``TransactionMQProducer``): the message is
delivered iff the application's local transaction committed (the half message, then commit or
rollback, and check-back when the outcome is unknown); a rolled-back message is never consumed;
a committed one is not lost; every half message is resolved by check-back (or, past
``transactionCheckMax``, set aside). Delivery is at least once: a message may be "checked or
consumed more than once"; a consumer's own acknowledgement is not part of the transaction.

A RocketMQ transaction is one message and the producer's local transaction, so the comparison's
workloads map onto one message: a lost request or response is a lost one-way EndTransaction or a
lost check-back (its answer); the crash is the producer's crash after the half message. There is
no consume-produce transaction: that workload is not run.
"""
from __future__ import annotations

from kafka_mc.model.comparison import Claim, Workload

CLAIMS = {
    "atomicity": Claim(("MessageOnlyIfCommitted",)),
    "isolation": Claim(("NoReadOfRolledBack",)),
    "no_loss": Claim(("CommittedMessageNotLost",)),
    "no_duplicates": Claim(note="at-least-once delivery: RocketMQ's docs say a message may be "
                                "checked or consumed more than once (witnessed by "
                                "NoDuplicateNotClaimed)"),
    "consume_produce": Claim(note="a transaction is one produced message and the producer's "
                                  "local transaction; consuming is acknowledged on its own"),
    "resolution": Claim(("EveryTransactionResolved",)),
}


def comparison(w: Workload) -> dict | None:
    if w.consume_produce:
        return None
    budgets = {"producer_crash": w.budget("producer_crashes"),
               "lost_end_transaction": min(w.budget("request_losses"), 2),
               "lost_check": min(w.budget("response_losses"), 2),
               "broker_restart": min(w.budget("broker_failovers"), 2)}
    return {**{f"faults.{k}": v for k, v in budgets.items()},
            "faults.total": min(sum(budgets.values()), 8)}
