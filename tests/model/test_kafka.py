"""The Kafka model: pinned state counts per preset, the known weaknesses of old versions found
from generic fault budgets, and the fast path agreeing with the rules."""
import multiprocessing

import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.spec import spec_for
from kafka_mc.model.kafka.params import kafka_params
from kafka_mc.model.kafka.versions import PRESETS
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from tests.presets import PINNED
from tests.reachable import bfs_order


def load(name="tiny", **settings):
    return registry.load(resolve_config_path(name), overrides=settings)


TINY = [(preset, *pin.tiny) for preset, pin in PINNED.items()]
SMALL = [(preset, *pin.small) for preset, pin in PINNED.items()]


def test_every_preset_is_pinned():
    assert list(PINNED) == list(PRESETS)


def _small(preset):
    out = explore(registry.bind(load("small", **{"protocol.version": preset})))
    return (preset, (out.stats.distinct, out.stats.generated, out.stats.depth),
            [v.property for v in out.violations], out.never_enabled)


@pytest.fixture(scope="module")
def small_runs():
    """Every preset's exhaustive run of the default config, two at a time (3.6, the largest at
    three and a half million states, first)."""
    order = sorted(PRESETS, key=lambda p: p != "kafka-3.6")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        return {r[0]: r[1:] for r in pool.imap_unordered(_small, order)}


@pytest.mark.parametrize("preset, distinct, generated, depth", SMALL)
def test_small_counts_and_verdicts(small_runs, preset, distinct, generated, depth):
    counts, violations, never_enabled = small_runs[preset]
    assert counts == (distinct, generated, depth)
    expected = list(PINNED[preset].weakness)
    assert violations == expected
    if not expected:
        # every rule fires but KillProducer: small has no faults.producer_kills budget (a process
        # killed for good, issue 62: tests/model/test_faults.py spends one)
        assert never_enabled == ("KillProducer",)


@pytest.mark.parametrize("preset, distinct, generated, depth", TINY)
def test_tiny_counts_and_verdicts(preset, distinct, generated, depth):
    out = explore(registry.bind(load(**{"protocol.version": preset})))
    assert (out.stats.distinct, out.stats.generated, out.stats.depth) == (distinct, generated, depth)
    if preset == "kafka-0.11":  # KAFKA-6119: the abort is not fenced (see below)
        assert [v.property for v in out.violations] == list(PINNED[preset].weakness)
    else:
        assert out.exit_code == 0, out.violations
        assert "eventual_completion" in out.unchecked


def test_kafka_0_11_unfenced_abort_leaves_a_hanging_transaction():
    """KAFKA-6119, found with the generic crash budget: InitProducerId of the new instance aborts
    the open transaction without an epoch bump, so the old instance's produce, still in flight,
    is appended after the ABORT marker and opens a transaction no coordinator knows of."""
    cfg = load(**{"protocol.version": "kafka-0.11"})
    model = registry.bind(cfg)
    (v,) = explore(model, BfsOptions(properties=["no_hanging_transactions"])).violations
    names = [a[0] for a in v.path.actions]
    assert len(names) == 19 and names[1] == "CrashProducer"
    marker, produce = names.index("HandleWriteTxnMarkers"), names.index("HandleProduce")
    assert marker < produce  # the old instance's batch is appended after the ABORT marker
    assert v.path.actions[marker][1].producer_epoch == v.path.actions[produce][1].producer_epoch
    assert v.path.actions[produce][1].producer == 0  # the replaced instance
    assert names[-1] == "CommitTxnLogAppend"  # CompleteAbort: the coordinator forgets it


def test_kafka_4_2_strict_marker_epoch_rejects_a_resent_marker():
    """KAFKA-19999, found by the default config: the coordinator resends a COMMIT marker the
    leader already wrote (first found: it retried the marker over a new connection and the copy
    on the closed one was written; a lost response does the same, tests/model/test_faults.py);
    KIP-1228's strict check (marker epoch must exceed the stored one) rejects the retry, the
    coordinator stops sending markers and the transaction stays in PrepareCommit. ``latest``
    accepts the equal-epoch retry and writes it again (ProducerAppendInfo.checkProducerEpoch:
    "allowing duplicate marker write"). (The failover path is test_faults.py's too.)"""
    cfg = load("small", **{"protocol.version": "kafka-4.2"})
    (v,) = explore(registry.bind(cfg), BfsOptions(properties=["quiescent_completion"])).violations
    names = [a[0] for a in v.path.actions]
    assert len(names) == 23 and "DuplicateRequest" in names
    markers = [a[1] for a in v.path.actions if a[0] == "HandleWriteTxnMarkers"]
    assert len(markers) == 2 and markers[0] == markers[1]._replace(disconnected=True)
    assert v.path.actions[-1][1].error.name == "INVALID_PRODUCER_EPOCH"
    w = v.path.states[-1]
    assert w.coordinator.txns[0].state.name == "PrepareCommit"


def test_timeout_fence_protects_from_1_0_on():
    cfg = load(**{"protocol.version": "kafka-1.0", "faults.transaction_timeouts": 1})
    assert explore(registry.bind(cfg)).exit_code == 0


def test_rules_follow_the_version():
    names = lambda v: {r.name for r in spec_for(kafka_params(load(**{"protocol.version": v}))).rules}
    assert "SendAddPartitionsToTxn" not in names("latest")
    assert "HandleVerifyAddPartition" in names("latest") and "HandleVerifyAddPartition" in names("kafka-3.6")
    assert "HandleVerifyAddPartition" not in names("kafka-2.6")
    assert "SendAddPartitionsToTxn" in names("kafka-3.6")


def _reachable(model, limit):
    seen, todo = {model.init_states()[0]}, list(model.init_states())
    while todo and len(seen) < limit:
        s = todo.pop()
        for _, t in model.successors(s):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


@pytest.mark.parametrize("preset", ["kafka-2.6", "kafka-3.6", "latest"])
def test_fast_path_agrees_with_actions_and_step(preset):
    """The fused successors and their actions alone against the rules' own (``model.actions``)."""
    model = registry.bind(load("small", **{"protocol.version": preset}))
    for s in sorted(_reachable(model, 600), key=repr)[:600]:
        ref = [(a, model.step(s, a)) for a in model.actions(s)]
        assert sorted(model.successors(s), key=repr) == sorted(ref, key=repr)
        assert sorted(model.successors.actions(s), key=repr) == sorted(model.actions(s), key=repr)


def _by_rules(model, K, w):
    """The fast path's successors computed from the rules alone, in its order: the rules that
    are not deliveries in rule order, then each deliverable message (network.deliverable)."""
    from kafka_mc.model.kafka import network
    from kafka_mc.model.kafka.spec import DELIVERIES
    rules = spec_for(K).rules
    out = [((r.name, *args), r.apply(K, w, *args))
           for r in rules if r not in DELIVERIES.values() for args in r.enabled(K, w)]
    return out + [((DELIVERIES[m.rpc].name, m, bool(held)),
                   DELIVERIES[m.rpc].apply(K, w, m, bool(held)))
                  for held, _, m in network.deliverable(w.network, w.delayed)]


@pytest.mark.parametrize("config, settings", [
    ("small", {"protocol.version": "latest"}),
    ("small", {"protocol.version": "kafka-2.6"}),
    ("ctp", {}),
    # a simple group that may expire with a pending offset commit (KAFKA-19163, kafka-4.1)
    ("simple-group", {"protocol.version": "kafka-4.1"}),
    ("medium", {}),
    # KIP-939 with the operator's forceTerminateTransaction (a coordinator rule of its own)
    ("small", {"workload.two_phase_commit": True, "workload.force_terminate": True}),
    # two batches in flight to a partition (workload.max_in_flight): the Sender resends a batch
    # kept to retry (SendProduce of a reenqueued batch)
    ("inflight", {"protocol.version": "kafka-4.0.2"}),
    # two kinds of fault of six, two faults in all: most fault rules are left out from the start
    # and the others stop being asked once the total is spent
    ("tiny", {"cluster.partitions": 2, "faults.total": 2, "faults.request_duplicates": 1,
              "faults.response_losses": 1, "faults.producer_crashes": 0,
              "faults.request_delays": 0, "faults.transaction_timeouts": 0})])
def test_fast_path_in_bfs_order_is_the_rules_in_order(config, settings):
    """Exactly the rules' successors, in the same order, on states met as the BFS meets them
    (consecutive states share producers, so the memo of the client's rules is used) and on the
    same states in another order (so it is not)."""
    model = registry.bind(load(config, **settings))
    K = kafka_params(model.cfg)
    states = bfs_order(model, 3000)
    shuffled = states[::-1]
    for n, s in enumerate(states + shuffled):
        ref = _by_rules(model, K, s)
        # (the fused actions share the memo: asked before the successors, after them, or not)
        if n % 3 == 1:
            assert model.successors.actions(s) == [a for a, _ in ref]
        assert model.successors(s) == ref
        if n % 3 == 2:
            assert model.successors.actions(s) == [a for a, _ in ref]
    if "faults.total" in settings:
        assert any(not s.budgets.total for s in states), "the total is never spent here"


def test_fast_path_keeps_the_idle_timeout_without_a_budget():
    """``ExpireTransaction`` fires unbudgeted once nothing else can happen (faults.UNBUDGETED):
    on states made idle (nothing in flight, every client failed, no budget left) with a
    transaction Ongoing, the fast path still has it, in the rules' order."""
    from kafka_mc.model.kafka.world import ClientState, TxnState
    model = registry.bind(load("small", **{"faults.transaction_timeouts": 0}))
    K = kafka_params(model.cfg)
    idle = [w._replace(network=(), delayed=(), budgets=w.budgets._replace(total=0),
                       producers=tuple(p._replace(state=ClientState.FATAL_ERROR)
                                       for p in w.producers))
            for w in bfs_order(model, 3000)
            if any(t.state == TxnState.Ongoing and t.pending_state == -1
                   for t in w.coordinator.txns) and not any(w.coordinator.appends)]
    assert idle
    for w in idle:
        got = model.successors(w)
        assert got == _by_rules(model, K, w)
        assert any(a[0] == "ExpireTransaction" and a[-1] is True for a, _ in got)


def test_fault_rules_need_their_budget():
    """faults.gate: every fault rule but those in UNBUDGETED is disabled while its budget, or the
    total, is spent (the fast path leaves them out then)."""
    from kafka_mc.model.kafka import faults
    model = registry.bind(load("small", **{"protocol.version": "kafka-3.6"}))
    K = kafka_params(model.cfg)
    states = bfs_order(model, 2000)
    gated = [r for f in faults.FAULTS for r in f.rules if faults.gate(r.name) is not None]
    assert {r.name for f in faults.FAULTS for r in f.rules} - {r.name for r in gated} \
        == faults.UNBUDGETED
    fired = set()
    for w in states:
        for r in gated:
            kind = faults.BY_RULE[r.name].budget
            fired |= {r.name} if r.enabled(K, w) else set()
            for b in (w.budgets._replace(**{kind: 0}), w.budgets._replace(total=0)):
                assert r.enabled(K, w._replace(budgets=b)) == [], (r.name, b)
    assert fired >= {"CrashProducer", "DuplicateRequest", "LoseRequest", "LoseResponse",
                     "ElectCoordinator"}


def test_expired_transactional_id_starts_over_with_a_new_producer_id():
    """transactional.id expiration: Empty / CompleteCommit / CompleteAbort -> Dead, the metadata
    removed once the tombstone is replicated; the next InitProducerId gets a new producer id, and
    every invariant still holds (tiny, latest)."""
    from kafka_mc.model.core import Expectation, Property

    model = registry.bind(load(**{"faults.transactional_id_expirations": 1}))
    model._properties += (Property("new_producer_id", Expectation.SOMETIMES,
                                   lambda w: any(p.producer_id == 1 for p in w.producers)),)
    out = explore(model)
    # 56,041 before KAFKA-18654's guard epoch (marker_keeps_tv2_guard): the 504 more differ
    # from those only in a guard's epoch
    assert out.violations == () and out.stats.distinct == 55_861
    assert "ExpireTransactionalId" not in out.never_enabled


def test_quiescent_completion_judges_the_model_being_checked():
    """A terminal property sees the successors of the model being checked, not a global rule
    table: a variant whose coordinator never handles marker responses leaves its transaction in
    PrepareCommit / PrepareAbort once nothing can move (the responses pile up undelivered), and
    quiescent_completion reports it; the model itself holds."""
    from kafka_mc import invariants
    from kafka_mc.model.kafka.spec import KafkaModel

    cfg = load(**{"protocol.version": "latest"})
    stuck = spec_for(kafka_params(cfg)).derive(
        "kafka-without-marker-responses", remove=["HandleWriteTxnMarkersResponse"],
        add_properties=invariants.PROPERTIES)
    (v,) = explore(KafkaModel(stuck, cfg), BfsOptions(properties=["quiescent_completion"])).violations
    assert (v.property, v.kind) == ("quiescent_completion", "terminal")
    last = v.path.states[-1]
    assert any(t.state.name.startswith("Prepare") for t in last.coordinator.txns)
    assert last.network    # marker responses in flight: the old check called this "not quiescent"
    assert explore(registry.bind(cfg), BfsOptions(properties=["quiescent_completion"])).exit_code == 0


def test_witnesses_that_cannot_arise_are_not_applicable():
    """One producer instance (no zombie to fence), no consumer, no consume-transform-produce, no
    abort and no fault: those witnesses cannot arise, are listed as not applicable, and the check
    passes; with them possible again they apply and are witnessed."""
    quiet = {"cluster.producers_per_id": 1, "cluster.consumers": 0,
             "workload.abort_transactions": False, "faults.producer_crashes": 0}
    out = explore(registry.bind(load(**quiet)))
    assert out.exit_code == 0, out.violations
    assert set(out.not_applicable) == {"a_zombie_is_fenced", "a_read_returns_committed_data",
                                       "an_abort_happens", "an_offset_commit_is_committed",
                                       "a_transaction_is_prepared",
                                       "a_transaction_is_force_terminated"}
    assert "a_commit_happens" in out.checked
    out = explore(registry.bind(load()))
    assert out.exit_code == 0 and out.not_applicable == ("an_offset_commit_is_committed",
                                                         "a_transaction_is_prepared",
                                                         "a_transaction_is_force_terminated")


def test_continue_finds_what_the_first_violation_hid():
    """KAFKA-6119 on kafka-0.11: the 19-step hanging transaction hides a zombie's append
    (zombie_fencing and instance_fencing, 23 steps), a transaction stuck for good
    (quiescent_completion, 32 steps) and a record of a transaction the application saw abort
    that is committed (42 steps) and read (43); --continue reports them all, each with the
    counterexample a search for it alone finds."""
    model = registry.bind(load(**{"protocol.version": "kafka-0.11"}))
    out = explore(model, BfsOptions(keep_going=True))
    assert [(v.property, v.kind, len(v.path)) for v in out.violations] == [
        ("no_hanging_transactions", "always", 19), ("zombie_fencing", "transition", 23),
        ("instance_fencing", "transition", 23), ("quiescent_completion", "terminal", 32),
        ("aborted_writes_stay_aborted", "always", 42), ("no_aborted_reads", "always", 43)]
    assert out.complete    # the whole space, as if nothing were checked
    assert (out.stats.distinct, out.stats.generated, out.stats.depth) == (23986, 72937, 46)
    for v in out.violations[1:]:
        (alone,) = explore(model, BfsOptions(properties=[v.property])).violations
        assert len(alone.path) == len(v.path)


def test_tv2_aborts_a_transaction_started_at_send_with_an_empty_abort():
    """configs/two-transactions.toml: a TV2 client starts the transaction at send()
    (maybeAddPartition, transactionStarted), so aborting before the batch was drained still sends
    EndTxn(abort); the coordinator meets it in Empty or Complete* and aborts with an epoch bump
    (KAFKA-18464). A TV1 client sends no EndTxn for a transaction with no partition added."""
    tv2 = registry.bind(load("two-transactions"))
    out = explore(tv2)
    assert out.exit_code == 0 and out.stats.distinct == 954   # 1,344 before KAFKA-18654's kept guard, 808 before the
    # pending CompleteAbort of the marker round (issue 62): the empty abort is retried, not fenced
    (coordinator,) = [e for e in out.edges if e.machine == "TransactionState"]
    assert {("Empty", "PrepareAbort"), ("CompleteCommit", "PrepareAbort"),
            ("CompleteAbort", "PrepareAbort")} <= set(coordinator.taken)
    tv1 = explore(registry.bind(load("two-transactions", **{"protocol.version": "kafka-3.6"})))
    (coordinator,) = [e for e in tv1.edges if e.machine == "TransactionState"]
    assert tv1.exit_code == 0 and ("Empty", "PrepareAbort") not in coordinator.taken


def test_connections_are_named_by_their_ends():
    """``network.connection`` computes a message's connection from its Rpc's number (the hot
    path); here it is spelled out by message kind, so a renumbered ``Rpc`` fails."""
    from kafka_mc.model.kafka import network
    from kafka_mc.model.kafka.spec import MESSAGES
    from kafka_mc.model.kafka.world import Rpc
    ends = {"InitProducerId": (0, "producer", None), "AddPartitionsToTxn": (0, "producer", None),
            "EndTxn": (0, "producer", None), "Produce": (2, "producer", "partition"),
            "WriteTxnMarkers": (4, None, "partition"), "VerifyAddPartition": (6, None, "partition"),
            "TxnOffsetCommit": (8, "producer", None)}
    assert len(MESSAGES) == 2 * len(ends)
    for name, cls in MESSAGES.items():
        request = name.removesuffix("Response")
        direction, producer, partition = ends[request]
        m = cls(Rpc[name], *range(3, 2 + len(cls._fields)))
        assert network.connection(m) == (direction + (name != request),
                                          getattr(m, producer) if producer else -1,
                                          getattr(m, partition) if partition else -1), name
