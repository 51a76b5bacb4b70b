"""The Kafka model's faults: one table, the one place a fault is declared.

A row names the fault's budget (the ``Budgets`` field and the ``faults.<budget>`` config key,
with its help, default and maximum), the rules that spend it, the component it happens at
(``at``: the spec places the coordinator's timers among the coordinator's rules and the other
faults last), the lifeline it is drawn on and its label in the sequence diagram. ``Budgets``,
the ``faults.*`` parameters (``params``), the fault rules of the spec (``spec``) and the diagram's
fault notes (``diagram``) are all derived from ``FAULTS``. The enabled/apply functions live with
the component that suffers the fault (a crash in ``producer``, a failover in ``coordinator``) or
in ``network`` for the network's own faults; each spends its budget with ``world.spend``.

A new fault: its enabled/apply functions in its component, and a row here. Its budget defaults
to 0, so existing configurations, pinned counts and saved traces keep their meaning (a trace
written before the fault existed decodes with the budget's declared default, 0).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from kafka_mc.model.config import Param
from kafka_mc.model.core import WF
from kafka_mc.model.kafka import client, coordinator, group_coordinator, network, partition, producer
from kafka_mc.model.kafka import diagram
from kafka_mc.model.kafka.world import Rpc, budget, fast_replacer
from kafka_mc.model.protocol import Rule

COORDINATOR, PRODUCER, NETWORK, LEADER, GROUP = ("coordinator", "producer", "network", "leader",
                                                 "group-coordinator")


@dataclass(frozen=True)
class Fault:
    budget: str                          # Budgets field; config key faults.<budget>
    doc: str                             # the config key's help: what happens, in Kafka's terms
    rules: tuple[Rule, ...]              # the rules that spend the budget
    at: str                              # the component it happens at (COORDINATOR, ...)
    lifeline: Callable                   # (K, action) -> the lifeline it is drawn on
    label: Callable                      # (action, the state it is taken in) -> the diagram's note
    default: int = 0
    # A search's budgets stay small; a real run's validation (kafka-mc real conform) adds what
    # its killed brokers and closed connections cost (realkafka/losses.py), hence the room
    max: int = 8


def _on_coordinator(K, a):
    return diagram.COORDINATOR


def _on_producer(K, a):
    return f"p{a[1]}"


def _on_sender(K, a):
    """The lifeline of the sender that times out (of the request a lost response answers)."""
    kind, source, target = diagram.endpoints(K, a[1])
    return source if kind == "request" else target


# Who sent a request, by Rpc: (may it be lost? (its sender still awaits it, or, for a marker,
# its coordinator is gone), what the sender does when the request times out)
_SENDERS = {Rpc.WriteTxnMarkers: (coordinator.marker_may_be_lost, coordinator.marker_timed_out),
            Rpc.VerifyAddPartition: (partition.verification_awaited,
                                     partition.verification_timed_out)}
_CLIENT = (producer.awaited, producer.request_timed_out)


def _awaited(w, m) -> bool:
    return _SENDERS.get(m.rpc & ~1, _CLIENT)[0](w, m)


def _timed_out(K, w, m):
    return _SENDERS.get(m.rpc & ~1, _CLIENT)[1](K, w, m)


def _lost(a, s) -> str:
    m = a[1]
    then = {Rpc.WriteTxnMarkers: "the coordinator sends the marker again",
            Rpc.VerifyAddPartition: "the leader fails the produce with a retriable error"
            }.get(m.rpc & ~1, "the request is sent again")
    if m.rpc & ~1 == Rpc.WriteTxnMarkers and m.coordinator_epoch != s.coordinator.coordinator_epoch:
        then = "its coordinator is gone, nothing is sent again"
    what = diagram.label(m) if m.rpc % 2 == 0 else f"{Rpc(m.rpc).name} {diagram.label(m)}"
    return f"{what} lost: request.timeout.ms, {then}"   # (a response: named, not only its error)


def _on_receiver(K, a):
    return diagram.endpoints(K, a[1])[2]


def _expire_transaction_enabled(K, w):
    """Once nothing but a timer can fire (``client.idle``) an Ongoing transaction always may time
    out, unbudgeted and fair (``idle``): transaction.timeout.ms passes, whatever budget is left.
    Before that, within the budget, it may time out early, while its producer is still active
    (the budget bounds these early timeouts only). Until November 2026 the idle timeout was
    offered only once the budget was spent, so with budget left a liveness check reported
    lassos in which Kafka's timer was held back (issue 62)."""
    ongoing = coordinator.expire_transaction_enabled(K, w, idle=True)
    if not ongoing:
        return []
    if client.idle(K, w):
        return [(tid, True) for (tid,) in ongoing]
    return [(tid, False) for (tid,) in ongoing] if budget(w, "transaction_timeouts") else []


FAULTS = (
    # the coordinator's timers and elections (placed with the coordinator's rules)
    Fault("transaction_timeouts", "transaction timeout aborts",
          (Rule("ExpireTransaction", ("transactional_id", "idle"), _expire_transaction_enabled,
                coordinator.expire_transaction,
                # Only the idle timeout is fair (the early one is a fault within a budget).
                fair=WF("transaction.timeout.ms: TransactionCoordinator.abortTimedOutTransactions "
                        "runs every transaction.abort.timed.out.transaction.cleanup.interval.ms",
                        only=lambda tid, idle: idle)),),
          COORDINATOR, _on_coordinator, lambda a, s: "transaction timeout: abort"),
    Fault("coordinator_failovers", "transaction coordinator failovers",
          (Rule("ElectCoordinator", ("replicated",), coordinator.elect_coordinator_enabled,
                coordinator.elect_coordinator),
           # a failover back to the same broker at the same coordinator epoch (KRaft:
           # protocol.coordinator_bounce_keeps_epoch; on 4.x followed by a failover)
           Rule("BounceCoordinator", ("replicated",), coordinator.bounce_coordinator_enabled,
                coordinator.bounce_coordinator)),
          COORDINATOR, _on_coordinator,
          lambda a, s: ("failover" if a[0] == "ElectCoordinator" else
                        "bounce: restarted at the same coordinator epoch") +
          f" (an in-flight log append is {'replicated' if a[1] else 'lost'})"),
    Fault("transactional_id_expirations",
          "transactional.id.expiration.ms passes for an idle transactional.id (-> Dead)",
          (Rule("ExpireTransactionalId", ("transactional_id",),
                coordinator.expire_transactional_id_enabled, coordinator.expire_transactional_id),),
          COORDINATOR, _on_coordinator, lambda a, s: "transactional.id expired: Dead (tombstone)"),
    # everything else
    Fault("producer_crashes", "producer crash/restart (old instance may be a zombie)",
          (Rule("CrashProducer", ("producer",), producer.crash_producer_enabled,
                producer.crash_producer),),
          PRODUCER, _on_producer,
          lambda a, s: "crashes; a new instance starts (this one may live on as a zombie)",
          default=1, max=4),
    Fault("producer_kills",
          "a producer process killed for good (no zombie): a new instance starts if one is left "
          "(cluster.producers_per_id); its requests in flight may still land, answered into a "
          "closed connection",
          (Rule("KillProducer", ("producer",), producer.kill_producer_enabled,
                producer.kill_producer),),
          PRODUCER, _on_producer,
          lambda a, s: "killed for good (no zombie)" + (
              "; a new instance starts" if s.producers[a[1]].instance + 1 < len(
                  [p for p in s.producers if p.tid == s.producers[a[1]].tid])
              and not s.producers[a[1]].replaced else ""),
          max=4),
    Fault("request_delays", "requests held back and delivered out of order",
          (Rule("DelayRequest", ("message",), network.delay_request_enabled,
                network.delay_request),),
          NETWORK, _on_receiver, lambda a, s: f"{diagram.label(a[1])} held back"),
    Fault("request_duplicates",
          "a request is retried over a new connection (request.timeout.ms) and the copy left on "
          "the closed one may still arrive (its answer is lost)",
          (Rule("DuplicateRequest", ("message",), network.duplicate_request_enabled,
                network.duplicate_request),),
          NETWORK, _on_receiver, lambda a, s: f"{diagram.label(a[1])} retried on a new connection; "
          "the old copy may still arrive"),
    Fault("request_losses",
          "a request is lost (a client's, a marker, a leader's verification): request.timeout.ms, "
          "the sender retries",
          (Rule("LoseRequest", ("message",), *network.loss("request_losses", False, _awaited,
                                                           _timed_out)),),
          NETWORK, _on_sender, _lost),
    Fault("response_losses",
          "a response is lost (to a client, a marker's, a verification's): request.timeout.ms, "
          "the sender retries",
          (Rule("LoseResponse", ("message",), *network.loss("response_losses", True, _awaited,
                                                            _timed_out)),),
          NETWORK, _on_sender, _lost),
    Fault("batch_expiries", "delivery.timeout.ms expires a batch while its Produce request is in flight",
          (Rule("ExpireBatch", ("producer", "partition"), producer.expire_batch_enabled,
                producer.expire_batch),),
          PRODUCER, _on_producer,
          lambda a, s: f"batch to partition {a[2]} expired (delivery.timeout.ms) while in flight"),
    Fault("producer_state_losses",
          "a leader drops an idle producer id's state (producer.id.expiration.ms)",
          (Rule("LoseProducerState", ("partition", "producer_id"),
                partition.lose_producer_state_enabled, partition.lose_producer_state),),
          LEADER, lambda K, a: diagram.leader(K, a[1]),
          lambda a, s: f"producer id {a[2]} expired: its state is forgotten"),
    Fault("rebalances", "consumer group rebalances (consume-transform-produce)",
          (Rule("Rebalance", (), group_coordinator.rebalance_enabled,
                group_coordinator.rebalance),),
          GROUP, lambda K, a: diagram.GROUP_COORDINATOR,
          lambda a, s: "rebalance: the input partition moves to the next application, generation + 1"),
    Fault("offline_partitions",
          "a data partition has no leader for a while (NO_LEADER: its only in-sync replica's "
          "broker is down and fenced) until the broker is back and elected leader again; "
          "requests to it wait (the producer's batches, the coordinator's markers: "
          "markersQueueForUnknownBroker, or dropped from the transaction from 4.3, KAFKA-17573)",
          (Rule("PartitionOffline", ("partition",), partition.partition_offline_enabled,
                partition.partition_offline),
           Rule("ElectLeader", ("partition",), partition.elect_leader_enabled,
                partition.elect_leader,
                fair=WF("the broker restarts and the controller elects its replica leader "
                        "again (PartitionChangeBuilder.electLeader)"))),
          LEADER, lambda K, a: diagram.leader(K, a[1]),
          lambda a, s: (f"partition {a[1]}: no leader (its broker down and fenced)"
                        if a[0] == "PartitionOffline" else
                        f"partition {a[1]}: its broker is back, elected leader")),
    Fault("group_expiries",
          "the simple group (workload.simple_group), empty, is deleted by the group "
          "coordinator's offsets.retention.check.interval.ms cleanup when it has no committed "
          "offset and (but with KAFKA-19163, 4.0.0) none pending "
          "(GroupCoordinatorShard.cleanupGroupMetadata, GroupMetadataManager.maybeDeleteGroup)",
          (Rule("ExpireGroup", (), group_coordinator.expire_group_enabled,
                group_coordinator.expire_group),),
          GROUP, lambda K, a: diagram.GROUP_COORDINATOR,
          lambda a, s: "group expired: its tombstone written (cleanupGroupMetadata)"),
)

BY_RULE = {r.name: f for f in FAULTS for r in f.rules}

# The fault rules that may fire without their budget: the transaction timeout once nothing else
# can happen (``client.idle``), and the election that ends a partition's offline period (the
# budget was spent when it went offline). Every other fault rule is enabled only while its budget and the
# total last (each enabled function asks ``world.budget`` first; tests/model/test_kafka.py checks
# it), which the fused successor function uses to skip them (``gate``).
UNBUDGETED = frozenset({"ExpireTransaction", "ElectLeader"})

# Remaining fault budgets, per kind and in total (faults.total: at most that many faults of any
# kinds in one execution; by default the budgets' sum). Every field defaults to 0 (no fault), so
# a trace written before a fault was added still decodes.
Budgets = NamedTuple("Budgets", [(f.budget, int) for f in FAULTS] + [("total", int)])
Budgets.__module__ = __name__   # (said outright: compiled, the caller's frame is importlib's)
Budgets.__new__.__defaults__ = (0,) * len(Budgets._fields)
Budgets._field_defaults = dict.fromkeys(Budgets._fields, 0)
Budgets._replace = fast_replacer(Budgets)
# (written in a trace only when set: the traces of configurations without it keep their bytes)
Budgets._only_if_set = ("offline_partitions", "group_expiries")

PARAMS = tuple(Param(f"faults.{f.budget}", int, f.default, f.doc, min=0, max=f.max)
               for f in FAULTS) + (
    Param("faults.total", int, None,
          "at most this many faults of any kinds in one execution (default: the budgets' sum)",
          min=0, max=40),)


def gate(rule_name: str) -> int | None:
    """The index in ``Budgets`` of the budget rule ``rule_name`` cannot fire without (None: not
    a fault rule, or one in ``UNBUDGETED``)."""
    f = BY_RULE.get(rule_name)
    if f is None or rule_name in UNBUDGETED:
        return None
    return Budgets._fields.index(f.budget)


def rules(at: str | None = None, *, besides: str | None = None) -> tuple[Rule, ...]:
    """The fault rules, in table order: those happening ``at`` a component, or all ``besides``
    those of one."""
    return tuple(r for f in FAULTS if (at is None or f.at == at)
                 and (besides is None or f.at != besides) for r in f.rules)


def budgets(cfg) -> Budgets:
    """The initial budgets of a configuration."""
    each = [cfg[f"faults.{f.budget}"] for f in FAULTS]
    total = cfg.get("faults.total")
    return Budgets(*each, sum(each) if total is None else total)
