"""Deliberately broken variants of the Kafka model, selectable by name (``[model] mutant = ...``).

A mutant stands for one mistake an implementation of the protocol could make (a leader that skips
the epoch check, a consumer that ignores the aborted index, ...). Each names the invariant that
must catch it and a configuration, on top of ``configs/tiny.toml``, where BFS does. They exist to
show the invariants have teeth and to measure how fast each explorer finds a known bug; the tests
pin each one's shortest counterexample (tests/model/test_mutants.py).

A mutant is made in one of two ways:

- it **replaces rules** through ``ProtocolSpec.derive`` (a handler that skips a check); or
- it **swaps a helper** of a component module (``partition.validate_and_append``) for a broken
  one. The swap is scoped: the mutant spec's rules and successor function install it for the
  duration of each call and restore the original after, so the correct model, bound in the same
  process, never sees it, and the properties always judge with the correct helpers. (Module
  attributes are looked up at call time, which is what makes the swap reach every caller.)

Either way the mutant is an ordinary ``ProtocolSpec``: every explorer runs it, Spark workers and
trace replay rebuild it from the configuration (``model.mutant`` is written in trace metadata).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace as dc_replace
from typing import Callable

from kafka_mc.model.kafka import (consumer, coordinator, faults, group_coordinator, network, partition,
                         producer)
from kafka_mc.model.kafka.network import Rpc
from kafka_mc.model.config import ConfigError
from kafka_mc.model.protocol import ProtocolSpec, Rule
from kafka_mc.model.kafka.world import ClientState, Control, Outcome, TxnState, replace_at

NONE = "none"


@dataclass(frozen=True)
class Mutant:
    name: str                                   # the value of model.mutant
    invariant: str                              # the property that must catch it
    doc: str
    settings: dict = field(default_factory=dict)  # on top of configs/tiny.toml, where BFS finds it
    patches: Callable = lambda: {}              # -> {(module, attribute): broken replacement}
    rules: Callable = lambda: []                # -> rules replacing the model's


# --- broken helpers ------------------------------------------------------------------------------------

def _skip_leader_epoch_check():
    original = partition.validate_and_append

    def mutant(K, part, e, m, p):
        if e is not None and m.producer_epoch < e.producer_epoch:
            e = e._replace(producer_epoch=m.producer_epoch, last_sequence=-1)
        return original(K, part, e, m, p)
    return {(partition, "validate_and_append"): mutant}


def _skip_duplicate_check():
    original = partition.validate_and_append

    def mutant(K, part, e, m, p):
        if e is not None and e.producer_epoch == m.producer_epoch and (
                e.last_sequence == m.base_sequence or m.base_sequence in e.batches):
            e = e._replace(last_sequence=m.base_sequence - 1,
                           batches=tuple(x for x in e.batches if x < m.base_sequence))
        return original(K, part, e, m, p)
    return {(partition, "validate_and_append"): mutant}


def _ignore_aborted_index():
    def mutant(part, start, upper):
        return tuple(b.record for b in part.log[start:upper] if b.control == Control.DATA)
    return {(consumer, "read_committed"): mutant}


def _lso_ignores_open_transactions():
    return {(consumer, "last_stable_offset"): lambda part: len(part.log)}


def _no_aborted_index_entry():
    original = partition.append_marker

    def mutant(K, part, m):
        error, new = original(K, part, m)
        return error, new._replace(aborted=part.aborted)
    return {(partition, "append_marker"): mutant}


def _marker_ignores_coordinator_epoch():
    original = partition.append_marker

    def mutant(K, part, m):
        e = partition.entry_of(part, m.producer_id)
        if e is not None and e.coordinator_epoch > m.coordinator_epoch:
            part = partition.with_entry(part, e._replace(coordinator_epoch=m.coordinator_epoch))
        return original(K, part, m)
    return {(partition, "append_marker"): mutant}


def _fence_without_bump():
    original = coordinator.fence_and_abort

    def mutant(K, w, tid, txn, owner=-1):
        return original(K._replace(features=K.features._replace(bump_epoch_on_timeout=False)),
                        w, tid, txn, owner)
    return {(coordinator, "fence_and_abort"): mutant}


def _end_txn_answered_before_replication():
    original = coordinator.prepare_transition

    def mutant(w, tid, txn, target, reply):
        if reply.rpc == Rpc.EndTxnResponse and target.state in coordinator.PREPARE:
            w = coordinator.send_reply(w, coordinator.EndTxnResponse(
                Rpc.EndTxnResponse, reply.producer, coordinator.Errors.NONE,
                target.producer_id, target.producer_epoch))
            reply = coordinator.NO_REPLY
        return original(w, tid, txn, target, reply)
    return {(coordinator, "prepare_transition"): mutant}


def _markers_skip_a_partition():
    original = coordinator.send_markers

    def mutant(K, w, tid, txn):
        if len(txn.partitions) > 1:
            txn = txn._replace(partitions=frozenset(sorted(txn.partitions)[:-1]))
        return original(K, w, tid, txn)
    return {(coordinator, "send_markers"): mutant}


def _end_txn_with_batches_in_flight():
    def mutant(p):
        return (p.state in (ClientState.COMMITTING_TRANSACTION, ClientState.ABORTING_TRANSACTION)
                and p.in_flight_request == -1 and not p.queued and not p.new_partitions
                and not p.pending_partitions)
    return {(producer, "end_ready"): mutant}


def _offsets_materialised_on_abort():
    def mutant(part):
        best = (-1, 0)
        for offset, b in enumerate(part.log):
            if b.control == Control.DATA:
                best = max(best, (offset, b.record.n))
        return best[1]
    return {(group_coordinator, "committed_offset"): mutant}


def _offset_fetch_ignores_pending():
    return {(group_coordinator, "has_pending"): lambda part: False}


# --- broken rules --------------------------------------------------------------------------------------

def _delivery_rule(name, rpc, handler):
    return Rule(name, ("message", "held_back"), *network.delivery(rpc, handler))


def _end_txn_skips_the_epoch_check():
    def handler(K, w, m):
        txn = w.coordinator.txns[m.tid]
        return coordinator.handle_end_txn(K, w, m._replace(producer_epoch=txn.producer_epoch))
    return [_delivery_rule("HandleEndTxn", Rpc.EndTxn, handler)]


def _add_partitions_skips_epoch_check():
    def handler(K, w, m):
        txn = w.coordinator.txns[m.tid]
        return coordinator.handle_add_partitions(K, w, m._replace(producer_epoch=txn.producer_epoch))
    return [_delivery_rule("HandleAddPartitionsToTxn", Rpc.AddPartitionsToTxn, handler)]


def _abort_without_end_txn():
    def apply(K, w, i):
        p = w.producers[i]
        return producer.with_producer(w, i, state=ClientState.READY, queued=frozenset(),
                              new_partitions=frozenset(), outcomes=p.outcomes + (Outcome.ABORTED,))
    return [Rule("AbortTransaction", ("producer",), producer.abort_transaction_enabled, apply)]


def _force_terminate_commits():
    """The operator's force termination writes PrepareCommit: the prepared transaction is
    completed instead of aborted."""
    def apply(K, w, tid):
        w = coordinator.force_terminate_transaction(K, w, tid)
        c = w.coordinator
        a = c.appends[tid]
        target = a.target._replace(state=TxnState.PrepareCommit)
        txns = replace_at(c.txns, tid, c.txns[tid]._replace(pending_state=TxnState.PrepareCommit))
        return w._replace(coordinator=c._replace(
            txns=txns, appends=replace_at(c.appends, tid, a._replace(target=target))))
    return [Rule("ForceTerminateTransaction", ("transactional_id",),
                 coordinator.force_terminate_transaction_enabled, apply)]


def _marker_not_resent():
    """A liveness bug: nothing is unsafe, the transaction just never completes."""
    def dropped(K, w, m):
        return w

    senders = dict(faults._SENDERS)
    senders[Rpc.WriteTxnMarkers] = (senders[Rpc.WriteTxnMarkers][0], dropped)
    return {(faults, "_SENDERS"): senders}


V26 = {"protocol.version": "kafka-2.6"}
CTP = {"workload.consume_transform_produce": True, "workload.input_records": 1,
       "cluster.producers_per_id": 1, "faults.producer_crashes": 0, "cluster.consumers": 0}
MUTANTS = (
    Mutant("leader-skips-epoch-check", "zombie_fencing",
           "the partition leader accepts a batch from an older producer epoch", V26,
           _skip_leader_epoch_check),
    Mutant("leader-skips-duplicate-check", "no_duplicates",
           "the leader appends a retried batch whose sequence it already has",
           V26 | {"faults.request_duplicates": 1}, _skip_duplicate_check),
    Mutant("consumer-ignores-aborted-index", "read_committed_isolation",
           "the read_committed consumer returns every data batch below the LSO", {},
           _ignore_aborted_index),
    Mutant("lso-ignores-open-transactions", "read_committed_isolation",
           "the last stable offset is the log end, open transactions or not", {},
           _lso_ignores_open_transactions),
    Mutant("abort-marker-without-index-entry", "read_committed_isolation",
           "an ABORT marker adds no entry to the aborted-transaction index", {},
           _no_aborted_index_entry),
    Mutant("marker-ignores-coordinator-epoch", "committed_writes_visible",
           "the leader accepts a marker from a coordinator epoch older than the one it saw",
           V26 | {"faults.coordinator_failovers": 1, "faults.producer_crashes": 0,
                  "faults.request_delays": 1, "workload.transactions_per_producer": 2},
           _marker_ignores_coordinator_epoch),
    Mutant("end-txn-skips-epoch-check", "zombie_fencing",
           "the coordinator completes EndTxn from a fenced producer epoch", V26,
           rules=_end_txn_skips_the_epoch_check),
    Mutant("fence-without-epoch-bump", "no_hanging_transactions",
           "fencing aborts the transaction without bumping the epoch (KAFKA-6119 everywhere)", V26,
           _fence_without_bump),
    Mutant("add-partitions-skips-epoch-check", "zombie_fencing",
           "the coordinator adds partitions for a fenced producer epoch", V26,
           rules=_add_partitions_skips_epoch_check),
    Mutant("end-txn-answered-before-replication", "committed_writes_visible",
           "EndTxn is answered before PrepareCommit/PrepareAbort is replicated",
           V26 | {"faults.coordinator_failovers": 1}, _end_txn_answered_before_replication),
    Mutant("markers-skip-a-partition", "no_hanging_transactions",
           "the coordinator sends markers to all but one of the transaction's partitions",
           V26 | {"cluster.partitions": 2, "workload.records_per_transaction": 2,
                  "faults.producer_crashes": 0}, _markers_skip_a_partition),
    Mutant("end-txn-with-batches-in-flight", "no_hanging_transactions",
           "the client sends EndTxn while a produce request is still in flight", V26,
           _end_txn_with_batches_in_flight),
    Mutant("abort-skips-end-txn", "client_transitions",
           "abortTransaction returns to READY without sending EndTxn", V26,
           rules=_abort_without_end_txn),
    Mutant("offsets-materialised-on-abort", "exactly_once_offsets",
           "the group coordinator materialises a transactional offset commit on ABORT too",
           V26 | CTP, _offsets_materialised_on_abort),
    Mutant("offset-fetch-ignores-pending", "exactly_once_offsets",
           "OffsetFetch(requireStable) answers while a transactional offset commit is pending",
           V26 | CTP | {"cluster.transactional_ids": 2, "faults.rebalances": 1,
                        "workload.abort_transactions": False}, _offset_fetch_ignores_pending),
    Mutant("marker-not-resent", "eventual_completion",
           "a WriteTxnMarkers lost in flight (or its answer) is not sent again: the transaction "
           "stays in PrepareCommit/PrepareAbort",
           {"faults.request_losses": 1, "faults.producer_crashes": 0,
            "workload.transactions_per_producer": 2},
           _marker_not_resent),
    Mutant("force-terminate-commits", "force_terminated_aborted",
           "an operator's forceTerminateTransaction commits the prepared transaction instead of "
           "aborting it (KIP-939)",
           {"workload.two_phase_commit": True, "workload.force_terminate": True},
           rules=_force_terminate_commits),
)
BY_NAME = {m.name: m for m in MUTANTS}
NAMES = (NONE, *BY_NAME)


def mutate(spec: ProtocolSpec, name: str) -> ProtocolSpec:
    """The spec with mutant ``name`` applied (``none``: the spec itself)."""
    if name == NONE:
        return spec
    m = BY_NAME[name]
    missing = [r.name for r in m.rules() if r.name not in {x.name for x in spec.rules}]
    if missing:   # (a rule of a version or workload this configuration does not have)
        raise ConfigError(f"model.mutant = {name!r} changes {missing[0]}, which this "
                          "configuration's protocol.version and workload do not have (the "
                          "mutant's own settings: kafka-mc list mutants)")
    spec = spec.derive(f"{spec.name}+{name}", replace=m.rules(), doc=f"{spec.doc} -- mutant: {m.doc}")
    patches = tuple(m.patches().items())
    if not patches:
        return spec
    scoped = _scope(patches)
    rules = tuple(dc_replace(r, enabled=scoped(lambda K, w, f=r.enabled: list(f(K, w))),
                             apply=scoped(r.apply)) for r in spec.rules)
    fast = spec.fast_successors
    return dc_replace(spec, rules=rules, fast_successors=fast and (lambda K: scoped(fast(K))))


def _scope(patches) -> Callable[[Callable], Callable]:
    """A decorator installing ``patches`` for the duration of each call."""
    def scoped(f):
        def call(*args):
            saved = [getattr(module, attr) for (module, attr), _ in patches]
            for (module, attr), replacement in patches:
                setattr(module, attr, replacement)
            try:
                return f(*args)
            finally:
                for ((module, attr), _), original in zip(patches, saved):
                    setattr(module, attr, original)
        return call
    return scoped
