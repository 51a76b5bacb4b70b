"""The Kafka transaction model: the components' rules assembled into one ProtocolSpec.

Actions are named after Kafka's events: the application's calls (``InitTransactions``,
``BeginTransaction``, ``Send``, ``CommitTransaction``, ``AbortTransaction``), the client's
requests (``Send<Rpc>``), the handlers that receive them (``Handle<Rpc>``), the client receiving
responses (``Receive<Rpc>Response``), internal events (``CommitTxnLogAppend``,
``ExpireVerificationRetry``, ``Fetch``) and the faults of ``kafka_mc.model.kafka.faults`` (the
coordinator's ``ExpireTransaction``, ``ElectCoordinator`` / ``BounceCoordinator`` and
``ExpireTransactionalId`` among its rules; ``CrashProducer``, ``DelayRequest``, ``DuplicateRequest``, ``LoseRequest``,
``LoseResponse``, ``ExpireBatch``, ``LoseProducerState``, ``Rebalance``, ``PartitionOffline`` /
``ElectLeader`` and ``ExpireGroup`` last) and an
operator's ``ForceTerminateTransaction`` (KIP-939's Admin call, ``workload.force_terminate``,
among the coordinator's rules). A delivery
action's arguments are the message and whether it was held back. The rule order is the order
of successors, so it decides which of several shortest counterexamples the BFS reports.

The spec carries no property: ``invariants/`` registers the Kafka properties for the model
``kafka`` and the registry adds them (``_build``) when it binds a configuration.
"""
from __future__ import annotations

import typing
from functools import partial
from operator import is_

from kafka_mc.model.capabilities import Capabilities
from kafka_mc.model.codec import from_itf, to_itf
from kafka_mc.model.config import Config, Param
from kafka_mc.model.core import WF
from kafka_mc.model.kafka.capabilities import comparison
from kafka_mc.model.kafka import client, consumer, coordinator, faults, group_coordinator, network, partition, producer, tables
from kafka_mc.model.kafka import diagram
from kafka_mc.model.kafka.capabilities import components, coverage, footprints, mutants, symmetry
from kafka_mc.model.kafka.network import Rpc
from kafka_mc.model.kafka.params import PARAMS, KafkaParams, kafka_params
from kafka_mc.model.kafka.versions import PRESETS, RELEASES, Features
from kafka_mc.model.kafka.world import (Consumer, Coordinator, Partition, Producer, TxnMetadata, World,
                               offline_partitions)
from kafka_mc.model.protocol import ProtocolSpec, Rule, RuleModel
from kafka_mc.model.registry import ModelEntry


def initial_world(K: KafkaParams) -> World:
    producers = tuple(Producer(tid=t, instance=j, started=j == 0, replaced=False)
                      for t in range(K.tids) for j in range(K.producers_per_id))
    empty = (TxnMetadata(),) * K.tids
    return World(
        producers=producers,
        coordinator=Coordinator(0, empty, empty, ((),) * K.tids, (frozenset(),) * K.tids),
        partitions=(Partition(),) * (K.partitions + K.ctp),   # + __consumer_offsets
        consumers=(Consumer((0,) * K.partitions),) * K.consumers,
        network=(), delayed=(), budgets=K.budgets)


def _init(K):
    return [initial_world(K)]


# --- message delivery ------------------------------------------------------------------------------

# Every message the network does not lose is delivered: TCP delivers in order what it does not
# drop, and a request still in flight after request.timeout.ms is a loss here (the faults
# request_losses / response_losses, after which the sender retries). A held-back message
# (request_delays) is delivered later, but delivered.
DELIVERED = WF("the network delivers every message it does not lose (TCP; a loss is a fault, "
               "after which request.timeout.ms makes the sender retry)")


def _deliver_rule(name, rpc, handler, to_producer=False, doc=""):
    rule = Rule(name, ("message", "held_back"), *network.delivery(rpc, handler, to_producer), doc,
                fair=DELIVERED)
    DELIVERIES[rpc] = rule
    return rule


DELIVERIES: dict = {}   # Rpc -> the rule delivering it (the fused successor function's dispatch)

CLIENT_RULES = client.CLIENT_RULES
RULES = CLIENT_RULES + (
    # the coordinator
    _deliver_rule("HandleInitProducerId", Rpc.InitProducerId, coordinator.handle_init_producer_id),
    _deliver_rule("HandleAddPartitionsToTxn", Rpc.AddPartitionsToTxn,
                  coordinator.handle_add_partitions),
    _deliver_rule("HandleEndTxn", Rpc.EndTxn, coordinator.handle_end_txn),
    _deliver_rule("HandleVerifyAddPartition", Rpc.VerifyAddPartition,
                  coordinator.handle_verify_add_partition),
    Rule("CommitTxnLogAppend", ("transactional_id",), coordinator.commit_append_enabled,
         coordinator.commit_append,
         fair=WF("a transaction log append completes once replicated (acks=all to "
                 "min.insync.replicas); one that fails is a coordinator failover here")),
    _deliver_rule("HandleWriteTxnMarkersResponse", Rpc.WriteTxnMarkersResponse,
                  coordinator.handle_write_txn_markers_response),
    *faults.rules(faults.COORDINATOR),    # its timers and elections: the fault table's rows
    # an operator's Admin.forceTerminateTransaction, handled at the coordinator (KIP-939; no
    # fairness: the operator may never call it)
    Rule("ForceTerminateTransaction", ("transactional_id",),
         coordinator.force_terminate_transaction_enabled, coordinator.force_terminate_transaction),
    # partition leaders
    _deliver_rule("HandleProduce", Rpc.Produce, partition.handle_produce),
    _deliver_rule("HandleWriteTxnMarkers", Rpc.WriteTxnMarkers, partition.handle_write_txn_markers),
    _deliver_rule("HandleVerifyAddPartitionResponse", Rpc.VerifyAddPartitionResponse,
                  partition.handle_verify_response),
    # (not a delivery rule: the other way a leader may handle a CONCURRENT_TRANSACTIONS answer,
    # once its retry time has passed; no fairness: retrying for ever is what it stands against)
    Rule("ExpireVerificationRetry", ("message",), partition.expire_verification_retry_enabled,
         partition.expire_verification_retry),
    # the group coordinator
    _deliver_rule("HandleTxnOffsetCommit", Rpc.TxnOffsetCommit,
                  group_coordinator.handle_txn_offset_commit),
    # the client receiving responses
    _deliver_rule("ReceiveInitProducerIdResponse", Rpc.InitProducerIdResponse,
                  producer.receive_init_producer_id_response, to_producer=True),
    _deliver_rule("ReceiveAddPartitionsToTxnResponse", Rpc.AddPartitionsToTxnResponse,
                  producer.receive_add_partitions_response, to_producer=True),
    _deliver_rule("ReceiveEndTxnResponse", Rpc.EndTxnResponse, producer.receive_end_txn_response,
                  to_producer=True),
    _deliver_rule("ReceiveProduceResponse", Rpc.ProduceResponse, producer.receive_produce_response,
                  to_producer=True),
    _deliver_rule("ReceiveTxnOffsetCommitResponse", Rpc.TxnOffsetCommitResponse,
                  producer.receive_txn_offset_commit_response, to_producer=True),
    # consumers
    Rule("Fetch", ("consumer", "partition"), consumer.fetch_enabled, consumer.fetch,
         fair=WF("a read_committed consumer polls in a loop")),
    # the other faults (model.kafka.faults)
    *faults.rules(besides=faults.COORDINATOR),
)


def _fused(K):
    """All successors in one pass, the same as RULES' in the same order (tests/model/
    test_kafka.py), with three shortcuts:

    * the network is scanned once and each deliverable message goes to its handler (the per-Rpc
      delivery rules would each rescan it);
    * a fault rule whose budget is spent is not asked (``faults.gate``); one spent from the start
      is left out;
    * the client's rules read only the producers (and, with consume-transform-produce, the group
      and ``__consumer_offsets``): while those are the very objects of the state expanded last,
      as for siblings that a step of another component made, their enabled arguments are reused
      (a memo of one entry: the BFS expands siblings one after the other).

    The successor function carries ``actions``: the enabled actions alone, in its order (what a
    random walk needs: it applies only the one it picks)."""
    rules = spec_for(K).rules
    b0 = K.budgets
    others = []
    for r in rules:
        if r in DELIVERIES.values():
            continue
        gate = faults.gate(r.name)
        if gate is not None and not (b0.total and b0[gate]):
            continue   # never enabled: budgets only shrink
        others.append((r.name, partial(r.enabled, K), partial(r.apply, K), gate,
                       r in CLIENT_RULES))
    handlers = {rpc: (r.name, partial(r.apply, K)) for rpc, r in DELIVERIES.items() if r in rules}
    ctp = K.ctp
    leaderless = bool(b0.total and b0.offline_partitions)   # can a partition be offline at all
    # what the client's rules read then, and their enabled arguments in order (one tuple, so a
    # thread reading it meanwhile sees one pair or the other)
    last = [((), [])]

    def asked(w) -> list:
        """(rule name, apply, its enabled arguments) for each rule with any, in rule order."""
        read = (w.producers, w.group, w.partitions[-1]) if ctp else (w.producers,)
        seen, lists = last[0]
        if len(seen) == len(read) and all(map(is_, read, seen)):
            reused, fresh = iter(lists), None
        else:
            reused, fresh = None, []
        b = w.budgets
        out = []
        for name, enabled, apply, gate, is_client in others:
            if is_client:
                if reused is None:
                    args_list = enabled(w)
                    fresh.append(args_list)
                else:
                    args_list = next(reused)
            elif gate is not None and not (b[-1] and b[gate]):
                continue
            else:
                args_list = enabled(w)
            if args_list:
                out.append((name, apply, args_list))
        if fresh is not None:   # (only once every rule was asked: a model error keeps the old)
            last[0] = (read, fresh)
        return out

    def successors(w):
        out = [((name, *args), apply(w, *args))
               for name, apply, args_list in asked(w) for args in args_list]
        offline = offline_partitions(w) if leaderless else ()
        for held, _, m in network.deliverable(w.network, w.delayed, offline):
            name, apply = handlers[m.rpc]
            out.append(((name, m, bool(held)), apply(w, m, bool(held))))
        return out

    def actions(w):
        out = [(name, *args) for name, _, args_list in asked(w) for args in args_list]
        offline = offline_partitions(w) if leaderless else ()
        out += [(handlers[m.rpc][0], m, bool(held))
                for held, _, m in network.deliverable(w.network, w.delayed, offline)]
        return out

    successors.actions = actions
    return successors


DELIVERY_NAMES = frozenset(r.name for r in DELIVERIES.values())

MESSAGES = {cls.__name__: cls for cls in (
    network.InitProducerId, network.InitProducerIdResponse, network.AddPartitionsToTxn,
    network.AddPartitionsToTxnResponse, network.EndTxn, network.EndTxnResponse, network.Produce,
    network.ProduceResponse, network.WriteTxnMarkers, network.WriteTxnMarkersResponse,
    network.VerifyAddPartition, network.VerifyAddPartitionResponse, network.TxnOffsetCommit,
    network.TxnOffsetCommitResponse)}


# World's field types for the trace decoder; the budgets' record type is the fault table's.
WORLD_HINTS = {**typing.get_type_hints(World), "budgets": faults.Budgets}


class _Codec:
    """Trace variables: the World's fields, records named as in Kafka."""

    @staticmethod
    def encode(K, w):
        return {f: to_itf(getattr(w, f)) for f in World._fields}

    @staticmethod
    def decode(K, v):
        return from_itf(v, World, MESSAGES, "state", hints=WORLD_HINTS)

    @staticmethod
    def encode_action(K, a):
        return (a[0], *map(to_itf, a[1:]))

    @staticmethod
    def decode_action(K, v):
        if not (isinstance(v, tuple) and v and isinstance(v[0], str)):
            raise ValueError(f"not an action: {v!r}")
        return (v[0], *(from_itf(x, typing.Any, MESSAGES, v[0]) for x in v[1:]))


def _locality(K, w: World):
    """What places a state in a partition of a distributed search (``ModelBase.locality``): the
    transaction coordinator's and the partition leaders' state, and the fault budgets. Most steps
    (client sends, failed deliveries, consumer reads, replies) leave all three alone, so their
    successor stays in its parent's partition. Kafka ``small``, 2 partitions: 11% of transitions
    cross (50% when the whole state picks), and the larger half of a level holds 54% of it on
    average; the budgets add 1.5% of crossings and bring that down from 57%."""
    return w.coordinator, w.partitions, w.budgets


def build_spec() -> ProtocolSpec:
    """The Kafka spec. Its properties are not part of it: they are registered for the model
    ``kafka`` (``invariants/``, entry point group ``kafka_mc.properties``) and the registry adds
    them when it binds a configuration."""
    return ProtocolSpec(
        name="kafka", init=_init, rules=RULES, params=kafka_params,
        fast_successors=_fused, itf_codec=_Codec, locality=_locality,
        reduction=footprints.Reduction(DELIVERY_NAMES), symmetry=symmetry.KafkaSymmetry(RULES),
        check_deadlock=False, doc="Kafka's transaction protocol (producers, coordinator, "
        "partition leaders, read_committed consumers) with faults")


SPEC = build_spec()

TV1_CLIENT_RULES = ("SendAddPartitionsToTxn", "HandleAddPartitionsToTxn",
                    "ReceiveAddPartitionsToTxnResponse")
VERIFICATION_RULES = ("HandleVerifyAddPartition", "HandleVerifyAddPartitionResponse")
RETRY_AT_LEADER_RULES = ("ExpireVerificationRetry",)
TWO_PHASE_RULES = ("PrepareTransaction", "CompletePreparedTransaction")
FORCE_TERMINATE_RULES = ("ForceTerminateTransaction",)
CTP_RULES = ("OffsetFetch", "SendOffsetsToTransaction", "SendTxnOffsetCommit",
             "HandleTxnOffsetCommit", "ReceiveTxnOffsetCommitResponse", "Rebalance")
OFFLINE_RULES = ("PartitionOffline", "ElectLeader")
SIMPLE_GROUP_RULES = ("ExpireGroup",)


def spec_for(K: KafkaParams) -> ProtocolSpec:
    """The rules that exist in the configured version and workload: TV2 clients never send
    AddPartitionsToTxn; leaders verify only from KIP-890 (3.6, or TV2) on, and retry a
    verification themselves only with TV2 from KAFKA-18654; the group coordinator's rules only
    with consume-transform-produce (TV1 still needs AddPartitionsToTxn for its
    AddOffsetsToTxn); a partition goes offline and is elected a leader again only with the fault
    ``offline_partitions`` (``ElectLeader`` spends no budget of its own); a simple group
    (``workload.simple_group``) has no ``Rebalance``, and only it expires (``ExpireGroup``, with
    the fault ``group_expiries``)."""
    retry = K.tv2 and K.features.verification_retry_at_leader
    remove = ((TV1_CLIENT_RULES if K.tv2 else ())
              + (() if K.tv2 or K.features.partition_verification else VERIFICATION_RULES)
              + (() if retry else RETRY_AT_LEADER_RULES)
              + (() if K.ctp else CTP_RULES)
              + (() if K.two_phase else TWO_PHASE_RULES)
              + (() if K.force_terminate else FORCE_TERMINATE_RULES)
              + (() if K.budgets.total and K.budgets.offline_partitions else OFFLINE_RULES)
              + (() if K.simple_group and K.budgets.total and K.budgets.group_expiries
                 else SIMPLE_GROUP_RULES)
              + (("Rebalance",) if K.simple_group else ()))
    return SPEC.derive("kafka", remove=remove, fast_successors=_fused) if remove else SPEC


class KafkaModel(RuleModel):
    """The Kafka spec bound to a configuration, with its sequence diagram, its symbolic model and
    its observations of real runs."""

    capabilities = Capabilities(diagrams=True, symbolic=True, observations=True)

    def lifelines(self):
        return diagram.lifelines(self.params)

    def describe(self, s, a, t):
        return diagram.describe(self.params, s, a, t, faults.BY_RULE)

    def components(self, s):
        """One panel per producer, coordinator, leader (with its LSO) and consumer."""
        return components.components(self.params, s)

    def held_back(self, a):
        """A delivery (``(name, message, held_back)``) of a message ``DelayRequest`` held back or
        ``DuplicateRequest`` copied (network.deliverable's second source)."""
        return len(a) == 3 and a[2] is True and a[0] in DELIVERY_NAMES

    def machines(self):
        """The coordinator's and the client's state machines, against Kafka's tables for the
        configured version."""
        return tables.machines(self.params.features, self.params.two_phase, self.params.window)

    def settings(self):
        """The protocol flags the configured preset (and explicit flags) stand for."""
        return {f"protocol.{flag}": value for flag, value in self.params.features._asdict().items()}

    def symbolic(self):
        """The symbolic model of the fencing core (model/kafka/capabilities/symbolic.py) for this
        configuration, in its ``symbolic.variant``; ValueError where it does not apply."""
        from kafka_mc.model.kafka.capabilities import symbolic
        return symbolic.for_model(self.params, self.cfg.get("symbolic.variant") or "none")

    def setting_defaults(self):
        """A flag's default is the behaviour before the Kafka change it names."""
        return {f"protocol.{flag}": value for flag, value in Features()._asdict().items()}

    def observations(self, events):
        """What a recorded run of real Kafka observes (model/kafka/capabilities/observations.py)."""
        from kafka_mc.model.kafka.capabilities import observations
        return observations.observations(self, events)

    def coverage(self, s, a, t):
        """The coverage class of a step: its action and the handler's branch
        (model/kafka/capabilities/coverage.py)."""
        rules = self.__dict__.get("_rules_by_name")
        if rules is None:
            rules = self.__dict__["_rules_by_name"] = {r.name: r for r in self.spec.rules}
        return coverage.classes(self.params, s, a, t, rules)

    def observed_state(self, s):
        """The state as DescribeTransactions and the partitions' logs show it."""
        return coverage.observed_state(self.params, s)


def _build(cfg: Config, properties=()):
    spec = mutants.mutate(spec_for(kafka_params(cfg)), cfg["model.mutant"])
    if cfg["model.mutant"] != mutants.NONE:   # a mutant may single out a partition or an id
        spec = spec.derive(spec.name, symmetry=None, fast_successors=spec.fast_successors)
    return KafkaModel(spec.derive(spec.name, add_properties=properties), cfg)


MUTANT = Param("model.mutant", str, mutants.NONE,
               "a deliberately broken variant (model/kafka/capabilities/mutants.py)", choices=mutants.NAMES)
# The built-in configuration (`kafka-mc check` without CONFIG) is configs/small.toml: one
# partition and every fault kind with a budget of one, at most two faults in an execution
# (tests keep the two equal).
DEFAULTS = {"cluster.partitions": 1, "faults.total": 2,
            **{f"faults.{f.budget}": 1 for f in faults.FAULTS
               if f.budget not in ("rebalances", "offline_partitions", "group_expiries",
                                   "producer_kills")}}
SYMBOLIC_VARIANT = Param("symbolic.variant", str, "none",
                         "a deliberately broken variant of the symbolic model (model/kafka/capabilities/symbolic.py)",
                         choices=("none", "no_rotation", "fence_retry_bump"))
MODEL = ModelEntry("kafka", SPEC.doc, PARAMS + (MUTANT, SYMBOLIC_VARIANT), _build, presets=tuple(PRESETS),
                   preset_docs={name: doc for name, (_, doc) in PRESETS.items()},
                   releases=RELEASES,
                   mutants=tuple((m.name, m.invariant, m.doc) for m in mutants.MUTANTS),
                   defaults=DEFAULTS, claims=comparison.CLAIMS,
                   comparison=comparison.comparison)
