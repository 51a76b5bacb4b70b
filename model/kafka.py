"""The Kafka transaction model: the components' rules assembled into one ProtocolSpec.

Actions are named after Kafka's events: the application's calls (``InitTransactions``,
``BeginTransaction``, ``Send``, ``CommitTransaction``, ``AbortTransaction``), the client's
requests (``Send<Rpc>``), the handlers that receive them (``Handle<Rpc>``), the client receiving
responses (``Receive<Rpc>Response``), internal events (``CommitTxnLogAppend``,
``ExpireTransaction``, ``ExpireTransactionalId``, ``ElectCoordinator``, ``Fetch``) and faults (``CrashProducer``,
``DelayRequest``, ``DuplicateRequest``, ``LoseRequest``, ``LoseResponse``, ``ExpireBatch``,
``LoseProducerState``). A delivery action's arguments are the message and
whether it was held back.
"""
from __future__ import annotations

import typing
from functools import partial

from model import (consumer, coordinator, diagram, group_coordinator, mutants, network, partition,
                   producer)
from model.codec import from_itf, to_itf
from model.config import Config, Param
from model.network import REQUESTS, Rpc
from model.params import PARAMS, KafkaParams, kafka_params
from model.protocol import ProtocolSpec, Rule, RuleModel
from model.registry import ModelEntry
from model.versions import PRESETS
from model.world import (Budgets, Consumer, Coordinator, Partition, Producer, TxnMetadata, World,
                         budget, spend)


def initial_world(K: KafkaParams) -> World:
    producers = tuple(Producer(tid=t, instance=j, started=j == 0, replaced=False)
                      for t in range(K.tids) for j in range(K.producers_per_id))
    empty = (TxnMetadata(),) * K.tids
    return World(
        producers=producers,
        coordinator=Coordinator(0, empty, empty, ((),) * K.tids, (frozenset(),) * K.tids),
        partitions=(Partition(),) * (K.partitions + K.ctp),   # + __consumer_offsets
        consumers=(Consumer((0,) * K.partitions),) * K.consumers,
        network=(), delayed=(), budgets=Budgets(*K.budgets))


def _init(K):
    return [initial_world(K)]


# --- message delivery -------------------------------------------------------------------------------

def _delivery(rpc: Rpc, handler, to_producer: bool):
    """enabled/apply for delivering messages of one Rpc to its handler."""
    def enabled(K, w):
        return [(m, bool(held)) for held, _, m in network.deliverable(w.network, w.delayed)
                if m.rpc == rpc]

    def apply(K, w, m, held):
        if held:
            w = w._replace(delayed=network.remove(w.delayed, w.delayed.index(m)))
        else:
            w = w._replace(network=network.remove(w.network, w.network.index(m)))
        return handler(K, w, m.producer, m) if to_producer else handler(K, w, m)

    return enabled, apply


def _deliver_rule(name, rpc, handler, to_producer=False, doc=""):
    enabled, apply = _delivery(rpc, handler, to_producer)
    rule = Rule(name, ("message", "held_back"), enabled, apply, doc)
    DELIVERIES[rpc] = rule
    return rule


DELIVERIES: dict = {}


# --- network faults ---------------------------------------------------------------------------------------

def _delay_enabled(K, w):
    if not budget(w, "request_delays"):
        return []
    return [(m,) for _, i, m in network.deliverable(w.network, ()) if m.rpc in REQUESTS]


def _delay(K, w, m):
    net, delayed = network.hold_back(w.network, w.delayed, w.network.index(m))
    return spend(w._replace(network=net, delayed=delayed), "request_delays")


def _duplicate_enabled(K, w):
    if not budget(w, "request_duplicates"):
        return []
    return [(m,) for m in dict.fromkeys(w.network + w.delayed) if m.rpc in REQUESTS]


def _duplicate(K, w, m):
    return spend(w._replace(delayed=network.duplicate(w.delayed, m)), "request_duplicates")


def _idle(K, w) -> bool:
    """Nothing but a timer can fire: no message or append in flight, no client action."""
    if w.network or w.delayed or any(w.coordinator.appends):
        return False
    return not any(any(True for _ in r.enabled(K, w)) for r in CLIENT_RULES)


def _expire_enabled(K, w):
    budgeted = coordinator.expire_transaction_enabled(K, w)
    if budgeted:
        return [(tid, False) for (tid,) in budgeted]
    return [(tid, True) for (tid,) in coordinator.expire_transaction_enabled(K, w, idle=_idle(K, w))]


P = ("producer",)
CLIENT_RULES = (
    # the application
    Rule("InitTransactions", P, producer.init_transactions_enabled, producer.init_transactions),
    Rule("BeginTransaction", P, producer.begin_transaction_enabled, producer.begin_transaction),
    Rule("Send", ("producer", "partition"), producer.send_enabled, producer.send_record),
    Rule("CommitTransaction", P, producer.commit_transaction_enabled, producer.commit_transaction),
    Rule("AbortTransaction", P, producer.abort_transaction_enabled, producer.abort_transaction),
    Rule("OffsetFetch", P, group_coordinator.offset_fetch_enabled, group_coordinator.offset_fetch),
    Rule("SendOffsetsToTransaction", P, producer.send_offsets_enabled,
         producer.send_offsets_to_transaction),
    # the client's Sender
    Rule("SendAddPartitionsToTxn", P, producer.send_add_partitions_enabled,
         producer.send_add_partitions),
    Rule("SendProduce", ("producer", "partition", "record"), producer.send_produce_enabled,
         producer.send_produce),
    Rule("SendTxnOffsetCommit", P, producer.send_txn_offset_commit_enabled,
         producer.send_txn_offset_commit),
    Rule("SendEndTxn", P, producer.send_end_txn_enabled, producer.send_end_txn),
    Rule("CompleteTransaction", P, producer.complete_transaction_enabled,
         producer.complete_transaction),
)
RULES = CLIENT_RULES + (
    # the coordinator
    _deliver_rule("HandleInitProducerId", Rpc.InitProducerId, coordinator.handle_init_producer_id),
    _deliver_rule("HandleAddPartitionsToTxn", Rpc.AddPartitionsToTxn,
                  coordinator.handle_add_partitions),
    _deliver_rule("HandleEndTxn", Rpc.EndTxn, coordinator.handle_end_txn),
    _deliver_rule("HandleVerifyAddPartition", Rpc.VerifyAddPartition,
                  coordinator.handle_verify_add_partition),
    Rule("CommitTxnLogAppend", ("transactional_id",), coordinator.commit_append_enabled,
         coordinator.commit_append),
    _deliver_rule("HandleWriteTxnMarkersResponse", Rpc.WriteTxnMarkersResponse,
                  coordinator.handle_write_txn_markers_response),
    Rule("ExpireTransaction", ("transactional_id", "idle"), _expire_enabled,
         coordinator.expire_transaction),
    Rule("ElectCoordinator", ("replicated",), coordinator.elect_coordinator_enabled,
         coordinator.elect_coordinator),
    Rule("ExpireTransactionalId", ("transactional_id",), coordinator.expire_transactional_id_enabled,
         coordinator.expire_transactional_id),
    # partition leaders
    _deliver_rule("HandleProduce", Rpc.Produce, partition.handle_produce),
    _deliver_rule("HandleWriteTxnMarkers", Rpc.WriteTxnMarkers, partition.handle_write_txn_markers),
    _deliver_rule("HandleVerifyAddPartitionResponse", Rpc.VerifyAddPartitionResponse,
                  partition.handle_verify_response),
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
    Rule("Fetch", ("consumer", "partition"), consumer.fetch_enabled, consumer.fetch),
    # faults
    Rule("CrashProducer", P, producer.crash_producer_enabled, producer.crash_producer),
    Rule("DelayRequest", ("message",), _delay_enabled, _delay),
    Rule("DuplicateRequest", ("message",), _duplicate_enabled, _duplicate),
    Rule("LoseRequest", ("message",), producer.lose_request_enabled, producer.lose_request),
    Rule("LoseResponse", ("message",), producer.lose_response_enabled, producer.lose_response),
    Rule("ExpireBatch", ("producer", "partition"), producer.expire_batch_enabled,
         producer.expire_batch),
    Rule("LoseProducerState", ("partition", "producer_id"), partition.lose_producer_state_enabled,
         partition.lose_producer_state),
    Rule("Rebalance", (), group_coordinator.rebalance_enabled, group_coordinator.rebalance),
)


def _fused(K):
    """All successors in one pass: the network is scanned once and each deliverable message goes
    to its handler (the per-Rpc delivery rules would each rescan it). Same successors as RULES."""
    rules = spec_for(K).rules
    others = [(r.name, partial(r.enabled, K), partial(r.apply, K))
              for r in rules if r not in DELIVERIES.values()]
    handlers = {rpc: (r.name, partial(r.apply, K)) for rpc, r in DELIVERIES.items() if r in rules}

    def successors(w):
        out = [((name, *args), apply(w, *args))
               for name, enabled, apply in others for args in enabled(w)]
        for held, _, m in network.deliverable(w.network, w.delayed):
            name, apply = handlers[m.rpc]
            out.append(((name, m, bool(held)), apply(w, m, bool(held))))
        return out

    return successors


MESSAGES = {cls.__name__: cls for cls in (
    network.InitProducerId, network.InitProducerIdResponse, network.AddPartitionsToTxn,
    network.AddPartitionsToTxnResponse, network.EndTxn, network.EndTxnResponse, network.Produce,
    network.ProduceResponse, network.WriteTxnMarkers, network.WriteTxnMarkersResponse,
    network.VerifyAddPartition, network.VerifyAddPartitionResponse, network.TxnOffsetCommit,
    network.TxnOffsetCommitResponse)}


class _Codec:
    """Trace variables: the World's fields, records named as in Kafka."""

    @staticmethod
    def encode(K, w):
        return {f: to_itf(getattr(w, f)) for f in World._fields}

    @staticmethod
    def decode(K, v):
        hints = typing.get_type_hints(World)
        return World(**{f: from_itf(v[f], hints[f], MESSAGES, f) for f in World._fields})

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


def _properties():
    from invariants import all_properties
    return all_properties()


def build_spec() -> ProtocolSpec:
    return ProtocolSpec(
        name="kafka", init=_init, rules=RULES, properties=_properties(), params=kafka_params,
        fast_successors=_fused, itf_codec=_Codec, locality=_locality,
        check_deadlock=False, doc="Kafka's transaction protocol (producers, coordinator, "
        "partition leaders, read_committed consumers) with faults")


SPEC = build_spec()

TV1_CLIENT_RULES = ("SendAddPartitionsToTxn", "HandleAddPartitionsToTxn",
                    "ReceiveAddPartitionsToTxnResponse")
VERIFICATION_RULES = ("HandleVerifyAddPartition", "HandleVerifyAddPartitionResponse")
CTP_RULES = ("OffsetFetch", "SendOffsetsToTransaction", "SendTxnOffsetCommit",
             "HandleTxnOffsetCommit", "ReceiveTxnOffsetCommitResponse", "Rebalance")


def spec_for(K: KafkaParams) -> ProtocolSpec:
    """The rules that exist in the configured version and workload: TV2 clients never send
    AddPartitionsToTxn; leaders verify only from KIP-890 (3.6, or TV2) on; the group
    coordinator's rules only with consume-transform-produce (TV1 still needs AddPartitionsToTxn
    for its AddOffsetsToTxn)."""
    remove = ((TV1_CLIENT_RULES if K.tv2 else ())
              + (() if K.tv2 or K.features.partition_verification else VERIFICATION_RULES)
              + (() if K.ctp else CTP_RULES))
    return SPEC.derive("kafka", remove=remove, fast_successors=_fused) if remove else SPEC


class KafkaModel(RuleModel):
    """The Kafka spec bound to a configuration, with its sequence diagram."""

    def lifelines(self):
        return diagram.lifelines(self.params)

    def describe(self, s, a, t):
        return diagram.describe(self.params, s, a, t)


def _build(cfg: Config):
    return KafkaModel(mutants.mutate(spec_for(kafka_params(cfg)), cfg["model.mutant"]), cfg)


MUTANT = Param("model.mutant", str, mutants.NONE, "a deliberately broken variant (model/mutants.py)",
               choices=mutants.NAMES)
MODELS = (ModelEntry("kafka", SPEC.doc, PARAMS + (MUTANT,), _build, presets=tuple(PRESETS),
                     mutants=tuple((m.name, m.invariant, m.doc) for m in mutants.MUTANTS)),)
