"""The comparison's contract (``kafka-mc compare``, issue 47): one set of claims in the client's
words, and small client workloads every transactional messaging model can run.

A model takes part by giving its ``ModelEntry`` two fields: ``claims`` (each claim of ``CLAIMS``
-> a ``Claim``: the model's properties that state it, or none with why the system does not make
it) and ``comparison`` (a ``Workload`` -> the model's configuration for it, or ``None`` when the
system has no such workload). A claim a system does not make is reported "not claimed", never as
a violation; a workload a model cannot express is reported "not run".

Why claims are declared by the model and not inferred from property names: the same words mean
different checks in different systems (Kafka's atomicity is over a transaction's partitions,
RocketMQ's is between the local transaction and the message), and only the model's author can say
which of its properties is the system's promise. The model layer holds this module so that a
model package can declare its claims without importing explorers (the import contract).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

# The claims, in the client's vocabulary: name -> what a client may rely on.
CLAIMS: Mapping[str, str] = MappingProxyType({
    "atomicity": "a transaction's messages become visible all together or not at all (RocketMQ: "
                 "the message is delivered iff the local transaction committed)",
    "isolation": "a consumer never reads a message of an uncommitted or aborted transaction",
    "no_loss": "a message of a transaction the producer saw committed is never lost",
    "no_duplicates": "a message is delivered at most once",
    "consume_produce": "a transaction's acknowledgements (consumed positions) and its produced "
                       "messages are committed together",
    "resolution": "every transaction is eventually resolved (liveness, under the fairness the "
                  "system's timers give)",
})
LIVENESS = frozenset({"resolution"})

# The fault kinds a comparison workload may budget, in words common to the three systems.
FAULTS: Mapping[str, str] = MappingProxyType({
    "producer_crashes": "the producer crashes and a new instance takes over",
    "request_losses": "a request lost on the network (the sender times out and retries)",
    "response_losses": "a response lost on the network",
    "request_duplicates": "a request delivered twice",
    "broker_failovers": "the broker (or coordinator) holding the transaction's state restarts",
    "transaction_timeouts": "a transaction outlives its timeout",
})


@dataclass(frozen=True)
class Claim:
    """How a model states one of ``CLAIMS``: its properties that state it (all must hold), or
    none and why the system does not make the claim (from its documentation)."""
    properties: tuple[str, ...] = ()
    note: str = ""

    @property
    def claimed(self) -> bool:
        return bool(self.properties)


@dataclass(frozen=True)
class Workload:
    """One client workload: a producer's transactions of records over partitions (Kafka
    partitions, RocketMQ queues, Pulsar topics), optionally consuming its input in the same
    transaction, under a fault budget (``FAULTS`` -> at most that many)."""
    name: str
    summary: str
    transactions: int = 1
    records: int = 1
    partitions: int = 1
    consume_produce: bool = False
    faults: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        unknown = sorted(set(self.faults) - set(FAULTS))
        if unknown:
            raise ValueError(f"workload {self.name}: unknown fault kind {unknown[0]!r}")
        object.__setattr__(self, "faults", MappingProxyType(dict(self.faults)))

    def budget(self, fault: str) -> int:
        return self.faults.get(fault, 0)


# The comparison's workloads, small enough that each model exhausts each in seconds.
WORKLOADS: tuple[Workload, ...] = (
    Workload("network", "one transaction of two messages on two partitions, one request and one "
             "response lost", records=2, partitions=2,
             faults={"request_losses": 1, "response_losses": 1}),
    Workload("crash", "one transaction of one message; the producer may crash and a new "
             "instance take over", faults={"producer_crashes": 1}),
    Workload("consume-produce", "consume one message, produce one and acknowledge the input in "
             "one transaction", consume_produce=True),
)


def config_sections(overrides: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"section.key": value}`` -> ``{"section": {"key": value}}`` (a config's TOML shape)."""
    out: dict[str, dict[str, Any]] = {}
    for dotted, value in overrides.items():
        section, key = dotted.split(".", 1)
        out.setdefault(section, {})[key] = value
    return out
