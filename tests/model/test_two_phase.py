"""Two-phase commit, KIP-939 (issue 46 item 4), as far as Kafka ships it.

Shipped: the coordinator's side of enable2Pc (KAFKA-18953, 4.1.0: txnTimeoutMs Int.MaxValue, never
timed out; keepPreparedTxn answered UNSUPPORTED_VERSION on every branch and trunk) and the client's
prepareTransaction / completeTransaction(PreparedTxnState) / initTransactions(keepPreparedTxn)
(KAFKA-19082, KAFKA-19272; public on 4.4 and trunk only, removed before release from 4.1 .. 4.3).
The property ``prepared_transaction_kept`` (invariants/two_phase.py) holds on tiny, fails with a
coordinator that times the transaction out, and fails on small from a late duplicate of the
producer's own first InitProducerId."""
import pytest

from tests.model.test_faults import _recording as recording

from kafka_mc.model import registry
from kafka_mc.model.codec import to_itf
from kafka_mc.model.config import ConfigError, resolve_config_path
from kafka_mc.model.kafka.network import InitProducerId
from kafka_mc.model.kafka.params import kafka_params
from kafka_mc.model.kafka.spec import spec_for
from kafka_mc.model.kafka.tables import client_table, table_edges
from kafka_mc.model.kafka.versions import PRESETS
from kafka_mc.model.kafka.world import ClientState, Errors, Rpc, TxnState
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.graph import search as graph

TWO_PC = {"workload.two_phase_commit": True}
TIMEOUT = {"faults.transaction_timeouts": 1, "faults.total": 2}
WITHOUT_KAFKA_18953 = {"protocol.two_phase_commit": False}


def load(name="tiny", **settings):
    return registry.load(resolve_config_path(name), overrides=settings)


def bind(name="tiny", **settings):
    return registry.bind(load(name, **settings))


def counts(out):
    return out.stats.distinct, out.stats.generated, out.stats.depth


def test_the_flags_are_on_the_presets_whose_kafka_has_them():
    coordinator = {p for p, (f, _) in PRESETS.items() if f.two_phase_commit}
    client = {p for p, (f, _) in PRESETS.items() if f.prepare_transaction_api}
    assert coordinator == {"kafka-4.1.1", "kafka-4.2.0", "kafka-4.3", "latest"}
    assert client == {"latest"}


def test_the_workload_needs_the_client_api():
    with pytest.raises(ConfigError, match="workload.two_phase_commit needs KafkaProducer"):
        kafka_params(load(**TWO_PC, **{"protocol.version": "kafka-4.3"}))
    K = kafka_params(load(**TWO_PC, **{"protocol.version": "kafka-4.3",
                                       "protocol.prepare_transaction_api": True}))
    assert K.two_phase


def test_without_the_workload_nothing_moves():
    """The 2PC rules are not in the spec and latest's tiny count is its pinned one."""
    names = lambda **s: {r.name for r in spec_for(kafka_params(load(**s))).rules}
    assert not {"PrepareTransaction", "CompletePreparedTransaction"} & names()
    assert {"PrepareTransaction", "CompletePreparedTransaction"} <= names(**TWO_PC)
    out = explore(bind())
    assert counts(out) == (16044, 47071, 44) and not out.violations


def test_a_prepared_transaction_is_kept_on_latest():
    """tiny (a restart, no other fault): every transaction is prepared, then decided both ways;
    the budget of a transaction timeout changes nothing (KAFKA-18953: never timed out)."""
    out = explore(bind(**TWO_PC))
    assert counts(out) == (388, 902, 26) and out.exit_code == 0, out.violations
    fired = {c.name: c.fired for c in out.coverage}
    assert fired["PrepareTransaction"] == 5 and fired["CompletePreparedTransaction"] == 10
    assert "CommitTransaction" in out.never_enabled
    with_timeout = explore(bind(**TWO_PC, **TIMEOUT))
    assert counts(with_timeout) == (388, 902, 26) and with_timeout.exit_code == 0
    assert "ExpireTransaction" in with_timeout.never_enabled


def test_a_coordinator_without_kafka_18953_times_a_prepared_transaction_out():
    """The 4.4 client against a coordinator that times the 2PC transaction out as any other: the
    timeout fences and aborts the transaction, and prepareTransaction (flush, no request) hands
    the external manager a PreparedTxnState of a transaction that can no longer commit (the
    shortest trace: the timeout comes first, the prepare last)."""
    out = explore(bind(**TWO_PC, **TIMEOUT, **WITHOUT_KAFKA_18953))
    (v,) = out.violations
    assert v.property == "prepared_transaction_kept" and len(v.path) == 14
    assert counts(out) == (196, 377, 14)
    names = [a[0] for a in v.path.actions]
    assert names[-1] == "PrepareTransaction" and "ExpireTransaction" in names
    txn, p = v.path.states[-1].coordinator.txns[0], v.path.states[-1].producers[0]
    assert txn.state in (TxnState.PrepareAbort, TxnState.CompleteAbort) or \
        txn.pending_state == TxnState.PrepareAbort
    assert txn.producer_epoch == p.producer_epoch + 1


def test_a_restarted_instance_asks_keep_prepared_txn_and_is_answered_unsupported_version():
    """handleInitProducerId: keepPreparedTxn "hasn't been implemented yet" on any branch; the
    client's InitProducerIdHandler makes it fatal, so the new instance never takes over (nor
    fences) the prepared transaction."""
    model = bind(**TWO_PC)
    answered = recording(model, lambda s, a, t: a[0] == "ReceiveInitProducerIdResponse"
                         and a[1].error == Errors.UNSUPPORTED_VERSION)
    asked = recording(model, lambda s, a, t: a[0] == "HandleInitProducerId"
                      and a[1].keep_prepared_txn)
    assert explore(model).exit_code == 0
    assert answered and asked
    assert all(a[1].producer == 1 for _, a, _ in asked)   # only the restarted instance asks
    for _, a, t in answered:
        assert t.producers[a[1].producer].state == ClientState.FATAL_ERROR


def test_a_late_duplicate_of_the_first_init_producer_id_aborts_a_prepared_transaction():
    """small (every fault kind, two at most) on latest: the producer's initTransactions()
    (keepPreparedTxn false, as it must be while no coordinator implements it) is duplicated; the
    copy left on the closed connection reaches the coordinator after the transaction was
    prepared, meets it Ongoing and fences and aborts it: the external manager can no longer
    commit it. Without duplicated requests small is clean."""
    out = explore(bind("small", **TWO_PC))
    (v,) = out.violations
    assert v.property == "prepared_transaction_kept" and len(v.path) == 15
    # with latest's bounce (#19): 5,882 / 12,452 -> 7,528 / 15,821, clean 12,865 / 34,563 ->
    # 18,056 / 48,342, without KAFKA-18953 2,460 / 4,998 -> 3,375 / 6,819
    assert counts(out) == (7528, 15821, 15)
    names = [a[0] for a in v.path.actions]
    assert names[1] == "DuplicateRequest" and v.path.actions[1][1].rpc == Rpc.InitProducerId
    last = v.path.actions[-1]
    assert last[0] == "HandleInitProducerId" and last[1].disconnected and last[2] is True
    clean = explore(bind("small", **TWO_PC, **{"faults.request_duplicates": 0}))
    assert counts(clean) == (18056, 48342, 29) and clean.exit_code == 0, clean.violations
    broken = explore(bind("small", **TWO_PC, **WITHOUT_KAFKA_18953,
                          **{"faults.request_duplicates": 0}),
                     BfsOptions(properties=["prepared_transaction_kept"]))
    assert counts(broken) == (3375, 6819, 14)
    assert [v.property for v in broken.violations] == ["prepared_transaction_kept"]


@pytest.mark.parametrize("settings, expected", [
    (TWO_PC, (388, 902, 26)), ({**TWO_PC, **TIMEOUT, **WITHOUT_KAFKA_18953}, (196, 377, 14))])
def test_the_graph_explorer_agrees(settings, expected):
    out, g = explore(bind(**settings)), graph.explore(bind(**settings))
    assert counts(out) == counts(g) == expected
    assert [(v.property, len(v.path)) for v in out.violations] == \
        [(v.property, len(v.path)) for v in g.violations]


def test_the_client_table_has_prepared_transaction_only_with_the_workload():
    K = kafka_params(load(**TWO_PC))
    edges = set(table_edges(client_table(K.features, True)))
    assert {("IN_TRANSACTION", "PREPARED_TRANSACTION"), ("INITIALIZING", "PREPARED_TRANSACTION"),
            ("PREPARED_TRANSACTION", "COMMITTING_TRANSACTION"),
            ("PREPARED_TRANSACTION", "ABORTING_TRANSACTION")} <= edges
    assert not any("PREPARED" in e for edge in table_edges(client_table(K.features))
                   for e in edge)


def test_an_init_producer_id_without_keep_prepared_txn_is_written_as_before():
    """Traces written before KIP-939 still decode and new ones name the field only when set."""
    m = InitProducerId(Rpc.InitProducerId, 0, 0, 0, -1, -1)
    assert "keep_prepared_txn" not in dict(to_itf(m))
    assert dict(to_itf(m._replace(keep_prepared_txn=True)))["keep_prepared_txn"] is True


@pytest.mark.parametrize("settings", [TWO_PC, {**TWO_PC, **TIMEOUT, **WITHOUT_KAFKA_18953}])
def test_the_reduction_keeps_the_declaration_and_the_verdicts(settings):
    """The new client rules' footprints (kafka_mc.model.kafka.capabilities.footprints' generic client groups) pass the
    self-check, and the reduced search says what the full one does."""
    from kafka_mc.explorers.reductions.por import sample_states, self_check
    from tests.explorers.test_por import replays, verdicts
    m = bind(**settings)
    assert self_check(m, sample_states(m, 400, seed=7)) == []
    full = explore(m, BfsOptions(keep_going=True))
    red = explore(m, BfsOptions(keep_going=True, por=True))
    assert verdicts(full) == verdicts(red) and red.stats.distinct <= full.stats.distinct
    for v in red.violations:
        replays(m, v.path)


# --- Admin.forceTerminateTransaction (KIP-939, workload.force_terminate) -------------------------------

FORCE = {**TWO_PC, "workload.force_terminate": True}


def test_force_terminate_is_a_rule_only_with_its_workload_and_needs_two_phase_commit():
    names = lambda **s: {r.name for r in spec_for(kafka_params(load(**s))).rules}
    assert "ForceTerminateTransaction" not in names(**TWO_PC)
    assert "ForceTerminateTransaction" in names(**FORCE)
    with pytest.raises(ConfigError, match="workload.force_terminate needs workload.two_phase"):
        kafka_params(load(**{"workload.force_terminate": True}))


def test_a_force_terminated_transaction_is_aborted_on_latest():
    """tiny: the operator force-terminates the transaction while it is ongoing, prepared or being
    completed (Ongoing at the coordinator): fenced (epoch + 1) and aborted, never committed.
    The producer's completeTransaction then commits into PRODUCER_FENCED (fatal; latest has
    KAFKA-20785, and through the abort's marker round the pending CompleteAbort answers
    CONCURRENT_TRANSACTIONS, where INVALID_TXN_STATE was answered before issue 62) or aborts as
    a retry of the abort (NONE); prepared_transaction_kept holds for the transactions nobody
    terminated."""
    model = bind(**FORCE)
    fenced = recording(model, lambda s, a, t: a[0] == "ForceTerminateTransaction")
    ended = recording(model, lambda s, a, t: a[0] == "ReceiveEndTxnResponse"
                      and s.coordinator.force_terminated)
    out = explore(model)
    assert counts(out) == (1518, 4587, 27) and out.exit_code == 0, out.violations
    assert "force_terminated_aborted" in out.checked
    assert "a_transaction_is_force_terminated" not in out.not_applicable
    assert {c.name: c.fired for c in out.coverage}["ForceTerminateTransaction"] == 62
    prepared = False
    for s, a, t in fenced:
        txn, (ghost,) = t.coordinator.txns[0], t.coordinator.force_terminated
        before = s.coordinator.txns[0]
        assert ghost == (0, before.producer_id, before.producer_epoch)
        assert txn.producer_epoch == before.producer_epoch + 1
        assert t.coordinator.appends[0].target.state == TxnState.PrepareAbort
        prepared |= s.producers[0].state == ClientState.PREPARED_TRANSACTION
    assert prepared
    assert {(a[1].error, t.producers[a[1].producer].state) for s, a, t in ended
            if s.producers[a[1].producer].state == ClientState.COMMITTING_TRANSACTION
            and a[1].error != Errors.CONCURRENT_TRANSACTIONS} == {
        (Errors.PRODUCER_FENCED, ClientState.FATAL_ERROR)}
    assert counts(graph.explore(bind(**FORCE))) == (1518, 4587, 27)


def test_force_terminate_on_small_keeps_the_duplicate_finding():
    """small: the operator's action adds states but the first violation is still the late
    duplicate of the producer's own InitProducerId (a client request, not the operator);
    without duplicates small is clean with the operator, failovers included: one that loses the
    fence's PrepareAbort leaves the transaction Ongoing, the admin (NOT_COORDINATOR) retries,
    and until it does the producer's completeTransaction may commit it, which is then not a
    terminated transaction (the admin's retry fences a completed one)."""
    out = explore(bind("small", **FORCE))
    (v,) = out.violations
    assert v.property == "prepared_transaction_kept" and len(v.path) == 15
    # with latest's bounce (#19): 6,962 / 14,594 -> 9,034 / 18,831, clean 59,438 / 194,448 ->
    # 81,447 / 265,877
    assert counts(out) == (9034, 18831, 15)
    assert "ForceTerminateTransaction" not in [a[0] for a in v.path.actions]
    model = bind("small", **FORCE, **{"faults.request_duplicates": 0})
    lost = recording(model, lambda s, a, t: a[0] == "ElectCoordinator"
                     and s.coordinator.force_terminated and not t.coordinator.force_terminated)
    clean = explore(model)
    assert counts(clean) == (78677, 257607, 30) and clean.exit_code == 0, clean.violations
    assert lost and all(not a[1] for _, a, _ in lost)   # the fence's append not replicated


def test_the_ghost_is_written_only_when_set():
    """Traces of configurations without the workload keep their bytes (and old ones decode)."""
    from kafka_mc.model.kafka.world import Coordinator, TxnMetadata
    c = Coordinator(0, (TxnMetadata(),), (TxnMetadata(),), ((),), (frozenset(),))
    assert "force_terminated" not in dict(to_itf(c))
    assert "force_terminated" in dict(to_itf(c._replace(force_terminated=frozenset({(0, 0, 0)}))))


def test_force_terminate_keeps_the_reduction_declaration_and_the_verdicts():
    test_the_reduction_keeps_the_declaration_and_the_verdicts(FORCE)
