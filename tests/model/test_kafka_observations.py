"""The Kafka model's observations of real runs (model/kafka/capabilities/observations.py), on hand-written
event logs as realkafka's proxy and client driver write them: a committed transaction conforms on
kafka-3.6 (TV1: the client's AddPartitionsToTxn, the leader's verify-only check) and on latest
(TV2: the leader's implicit add, EndTxn's bumped epoch, markers at that epoch); the same log
tampered (a marker at a stale epoch accepted, a marker of the right epoch refused, a response
before its request) diverges at the tampered event with the field that differs; runs of several
transactions and producers conform, and take seconds at most. Real runs recorded by `kafka-mc real
run` (conformance_runs/) conform on 3.6.2 and 4.4.0, tampered they diverge, and one 4.4.0 run
shows a behaviour the model lacked (a produce answered CONCURRENT_TRANSACTIONS by a leader past
its verification retry time: it conforms now, and diverges on the model without the rule)."""
import json
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka import coordinator, faults
from kafka_mc.model.kafka.capabilities.observations import (APIS, coordinator_not_found_answers,
                                                             lost_in_flight, norm,
                                                             not_leader_answers, observations)
from kafka_mc.model.kafka.network import Rpc
from kafka_mc.model.kafka.world import Errors
from kafka_mc.realkafka import losses
from kafka_mc.realkafka.releases import BY_VERSION
from kafka_mc.explorers.conformance import read_events, validate, write_trace
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read

TOPIC = "kmc-7-a1b2c3"
CLIENT, INTERNAL = "broker-1/CLIENT", "broker-1/INTERNAL"


def tiny(preset=None, **overrides):
    if preset is not None:
        overrides["protocol.version"] = preset
    cfg = registry.load(resolve_config_path("tiny"), overrides=overrides)
    return registry.bind(cfg)


def several(preset, tids, txns, records, partitions):
    return tiny(preset, **{"cluster.transactional_ids": tids, "cluster.producers_per_id": 1,
                           "cluster.partitions": partitions, "cluster.consumers": 0,
                           "workload.transactions_per_producer": txns,
                           "workload.records_per_transaction": records,
                           "faults.producer_crashes": 0})


def ev(endpoint, conn, direction, api, corr, fields, client, errors=()):
    return {"endpoint": endpoint, "conn": conn, "direction": direction, "api": api,
            "correlation_id": corr, "client_id": client, "fields": fields, "errors": list(errors),
            "fault": None, "action": "forwarded"}


def op(process, type_, f, value=None):
    return {"process": process, "type": type_, "f": f, "value": value, "error": None}


def producer_run(t, tv2, txns, records, partitions, pid, corr, marker_epoch=None,
                 marker_error=None):
    """The events of transactional.id ``t`` committing ``txns`` transactions: its history, its
    client connection, the leader's verifications and the coordinator's markers (their own
    INTERNAL connections; ``corr`` numbers the brokers' requests)."""
    proc, conn, tid, out = f"t{t}.i0", 10 + t, f"{TOPIC}-t{t}", []
    c = iter(range(1, 10**6))

    def pair(api, req, resp):
        n = next(c)
        out.append(ev(CLIENT, conn, "request", api, n, req, proc))
        out.append(ev(CLIENT, conn, "response", api, n, resp, proc))

    def internal(conn_, api, req, resp, errors=()):
        n = next(corr)
        out.append(ev(INTERNAL, conn_, "request", api, n, req, "broker-1"))
        out.append(ev(INTERNAL, conn_, "response", api, n, resp, "broker-1", errors))
    out.append(op(proc, "invoke", "init_transactions"))
    pair("InitProducerId", {"transactional_id": tid, "transaction_timeout_ms": 6000,
                            "producer_id": -1, "producer_epoch": -1},
         {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": 0})
    out.append(op(proc, "ok", "init_transactions"))
    epoch, seq = 0, [0] * partitions
    for j in range(txns):
        out += [op(proc, "invoke", "begin_transaction"), op(proc, "ok", "begin_transaction")]
        parts = []
        for n in range(records):
            k = (t + j + n) % partitions
            out.append(op(proc, "invoke", "send", {"topic": TOPIC, "partition": k, "key": "k",
                                                   "value": "v"}))
            if not tv2 and k not in parts:      # kio's names for AddPartitionsToTxn v0-3
                pair("AddPartitionsToTxn", {
                    "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                    "v3_and_below_producer_epoch": epoch,
                    "v3_and_below_topics": [{"name": TOPIC, "partitions": [k]}]},
                    {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
                        {"name": TOPIC, "results_by_partition": [
                            {"partition_index": k, "partition_error_code": 0}]}]})
            n_ = next(c)
            out.append(ev(CLIENT, conn, "request", "Produce", n_, {
                "transactional_id": tid, "acks": -1, "timeout_ms": 4000, "topic_data": [
                    {"name": TOPIC, "partition_data": [{"index": k, "records": [
                        {"base_offset": 0, "producer_id": pid, "producer_epoch": epoch,
                         "base_sequence": seq[k], "records_count": 1, "transactional": True,
                         "control": False}]}]}]}, proc))
            if k not in parts:      # the leader's verification (3.6) / implicit add (TV2)
                internal(100 + t, "AddPartitionsToTxn", {"transactions": [
                    {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                     "verify_only": not tv2, "topics": [{"name": TOPIC, "partitions": [k]}]}]},
                    {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": [
                        {"transactional_id": tid, "topic_results": [
                            {"name": TOPIC, "results_by_partition": [
                                {"partition_index": k, "partition_error_code": 0}]}]}]})
            out.append(ev(CLIENT, conn, "response", "Produce", n_, {"responses": [
                {"name": TOPIC, "partition_responses": [{"index": k, "error_code": 0,
                                                         "base_offset": 0}]}],
                "throttle_time_ms": 0}, proc))
            out.append(op(proc, "ok", "send", {"partition": k, "offset": 0}))
            seq[k] += 1
            if k not in parts:
                parts.append(k)
        out.append(op(proc, "invoke", "commit_transaction"))
        pair("EndTxn", {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                        "committed": True},
             {"throttle_time_ms": 0, "error_code": 0,
              **({"producer_id": pid, "producer_epoch": epoch + 1} if tv2 else {})})
        out.append(op(proc, "ok", "commit_transaction"))
        marker = (epoch + 1 if tv2 else epoch) if marker_epoch is None else marker_epoch
        errors = [{"path": f"markers[{pid}].topics[{TOPIC}].partitions[{k}].error_code",
                   "code": 47, "name": marker_error} for k in sorted(parts)] if marker_error else []
        internal(200 + t, "WriteTxnMarkers", {"markers": [
            {"producer_id": pid, "producer_epoch": marker, "transaction_result": True,
             "topics": [{"name": TOPIC, "partition_indexes": sorted(parts)}],
             "coordinator_epoch": 0}]},
            {"markers": [{"producer_id": pid, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": k, "error_code": 47 if marker_error else 0}
                for k in sorted(parts)]}]}]}, errors)
        if tv2:
            epoch, seq = epoch + 1, [0] * partitions
    return out


def committed(tv2, tids=1, txns=1, records=1, partitions=1, seed=0, **tamper):
    """Every transactional.id's committed transactions, merged in a seeded order (each one's own
    order kept), the producer ids allocated in the order the InitProducerId requests come, and
    numbered as the proxy numbers its events."""
    corr = iter(range(1, 10**6))
    runs = [producer_run(t, tv2, txns, records, partitions, 1000 + t, corr, **tamper)
            for t in range(tids)]
    rng, merged = random.Random(seed), []
    while any(runs):
        r = rng.choice([r for r in runs if r])
        merged.append(r.pop(0))
    order = [e["fields"]["transactional_id"] for e in merged
             if e.get("api") == "InitProducerId" and e["direction"] == "request"]
    real = {1000 + int(tid.rsplit("-t", 1)[1]): 1000 + order.index(tid) for tid in order}

    def renumber(x):
        if isinstance(x, dict):
            return {k: (real.get(v, v) if k.endswith("producer_id") else renumber(v))
                    for k, v in x.items()}
        return [renumber(v) for v in x] if isinstance(x, list) else x
    merged = [renumber(e) for e in merged]
    for i, e in enumerate(merged):
        e["seq"] = i
    return merged


def index(events, api, direction, n=0):
    return [i for i, e in enumerate(events) if e.get("api") == api
            and e.get("direction") == direction][n]


# --- a committed transaction --------------------------------------------------------------------

@pytest.mark.parametrize("preset, tv2", [("kafka-3.6", False), ("latest", True)])
def test_a_committed_transaction_conforms_and_replays(preset, tv2, tmp_path):
    model = tiny(preset)
    run = committed(tv2)
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    assert r.observed == len(run) - 1        # "ok send" says nothing the model has
    names = [a[0] for a in r.actions]
    # every request the proxy saw is its receiver's Handle, every response its Receive
    assert names.count("HandleAddPartitionsToTxn") == (0 if tv2 else 1)
    for name in ("HandleInitProducerId", "ReceiveInitProducerIdResponse", "HandleProduce",
                 "HandleVerifyAddPartition", "HandleVerifyAddPartitionResponse",
                 "ReceiveProduceResponse", "HandleEndTxn", "ReceiveEndTxnResponse",
                 "HandleWriteTxnMarkers", "HandleWriteTxnMarkersResponse", "InitTransactions",
                 "BeginTransaction", "Send", "CommitTransaction"):
        assert names.count(name) == 1, name
    # the client's sends and the coordinator's log appends are silent
    assert {a[0] for a, e in zip(r.actions, r.steps) if e < 0} <= {
        "SendAddPartitionsToTxn", "SendProduce", "SendEndTxn", "CommitTxnLogAppend"}
    verify = next(a[1] for a in r.actions if a[0] == "HandleVerifyAddPartition")
    assert verify.verify_only is (not tv2)
    marker = next(a[1] for a in r.actions if a[0] == "HandleWriteTxnMarkers")
    assert (marker.producer_id, marker.producer_epoch) == (0, 1 if tv2 else 0)  # 1000 -> 0
    assert r.states[-1].producers[0].outcomes[-1].name == "COMMITTED"
    file = tmp_path / "run.itf.json"
    write_trace(r, model, model.cfg, file, run={"events": "hand-written"})
    assert replay(read(file)).steps == len(r.actions)


def test_a_marker_accepted_at_a_stale_epoch_diverges_at_the_marker():
    """TV2: the transaction's EndTxn bumped the epoch to 1; a WriteTxnMarkers at epoch 0
    answered NONE is no behaviour of the model (its coordinator writes markers at the bumped
    epoch, and a 4.2+ leader refuses an epoch not above the stored one)."""
    run = committed(True, marker_epoch=0)
    r = validate(tiny("latest"), run)
    d = r.divergence
    assert r.verdict == "diverges"
    assert d.event == index(run, "WriteTxnMarkers", "request")
    assert d.label.startswith("WriteTxnMarkers request") and d.kinds == ("HandleWriteTxnMarkers",)
    assert d.near[0].action.startswith("HandleWriteTxnMarkers(")
    assert d.near[0].reason == "producer_epoch: recorded 0, model 1"
    assert d.matched == r.observed - 2 == len(run) - 3   # all but the marker and its answer
    #                                                     ("ok send" is not observed)


def test_a_marker_refused_at_the_right_epoch_diverges_at_its_answer():
    run = committed(False, marker_error="INVALID_PRODUCER_EPOCH")
    d = validate(tiny("kafka-3.6"), run).divergence
    assert d.event == index(run, "WriteTxnMarkers", "response")
    assert d.near[0].action.startswith("HandleWriteTxnMarkersResponse(")
    assert d.near[0].reason == "error: recorded INVALID_PRODUCER_EPOCH, model NONE"


@pytest.mark.parametrize("preset, tv2", [("kafka-3.6", False), ("latest", True)])
def test_a_response_before_its_request_diverges_at_the_response(preset, tv2):
    run = committed(tv2)
    i = index(run, "EndTxn", "request")
    assert run[i + 1]["api"] == "EndTxn" and run[i + 1]["direction"] == "response"
    run[i], run[i + 1] = run[i + 1], run[i]
    d = validate(tiny(preset), run).divergence
    assert d.event == i and d.label.startswith("EndTxn response")
    assert d.kinds == ("ReceiveEndTxnResponse",) and d.near == ()
    assert not any(a.startswith("ReceiveEndTxnResponse") for a in d.enabled)
    assert "SendEndTxn(producer=0)" in d.enabled


def test_a_wrong_client_outcome_diverges_at_the_history_record():
    run = committed(False)
    i = next(i for i, e in enumerate(run) if e.get("f") == "commit_transaction"
             and e["type"] == "ok")
    run[i] = dict(run[i], f="abort_transaction")
    d = validate(tiny("kafka-3.6"), run).divergence
    assert d.event == i
    assert any("last transaction ended" in n.reason or "not ABORTED" in n.reason
               or "never" in n.reason for n in d.near)


# --- longer runs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("preset, tv2, shape, bound", [
    ("kafka-3.6", False, (1, 4, 3, 2), 2.0), ("latest", True, (1, 4, 3, 2), 2.0),
    ("latest", True, (2, 4, 3, 2), 5.0), ("kafka-3.6", False, (2, 2, 2, 2), 5.0),
    ("kafka-3.6", False, (3, 4, 3, 2), 15.0), ("latest", True, (3, 4, 3, 2), 15.0)])
def test_runs_of_several_transactions_and_producers_conform_in_seconds(preset, tv2, shape,
                                                                      bound):
    run = committed(tv2, *shape)
    started = time.perf_counter()
    r = validate(several(preset, *shape), run)
    assert r.conforms, "\n".join(r.divergence.report())
    assert time.perf_counter() - started < bound
    assert len(run) >= 100 and r.matched == r.observed


# --- the mapping itself --------------------------------------------------------------------------

def test_field_names_are_normalised_whoever_wrote_them():
    assert norm({"TransactionalId": "x", "producerEpoch": 1,
                 "v3_and_below_topics": [{"Name": "t", "Partitions": [0]}]}) == {
        "transactional_id": "x", "producer_epoch": 1, "topics": [{"name": "t", "partitions": [0]}]}


def test_what_is_not_observed():
    model = tiny("latest")
    run = committed(True)
    obs = observations(model, run)
    others = [{"endpoint": CLIENT, "conn": 1, "direction": "connection", "action": "opened"},
              {"endpoint": CLIENT, "conn": 1, "direction": "request", "api": "Metadata",
               "fields": {}, "action": "forwarded"},
              {"endpoint": CLIENT, "conn": 1, "direction": "request", "api": "EndTxn",
               "decode_error": "kio has no EndTxn v9 request schema", "action": "forwarded"},
              {"process": "reader-read_committed", "type": "invoke", "f": "poll"},
              {"process": "t0.i0", "type": "info", "f": "commit_transaction"}]
    assert [obs.observe(e) for e in others] == [None] * len(others)
    assert obs.silent("CommitTxnLogAppend") and obs.silent("SendEndTxn")
    assert not obs.silent("HandleEndTxn") and not obs.silent("CommitTransaction")
    assert "Fetch" in obs.skipped
    # without a client history the application's calls are silent
    assert observations(model, [e for e in run if "process" not in e]).silent("Send")


def test_proxy_faults_map_to_the_model_fault_actions():
    model = tiny("latest")
    run = committed(True)
    obs = observations(model, run)
    i = index(run, "EndTxn", "request")
    held = obs.observe(dict(run[i], action="held", fault={"kind": "hold", "id": "hold-1"}))
    assert held.actions == {"DelayRequest", "DuplicateRequest"} and held.holds is not None
    dropped = obs.observe(dict(run[i], action="dropped", fault={"kind": "drop", "id": "d"}))
    assert dropped.actions == {"LoseRequest"} and dropped.holds is None
    lost = obs.observe(dict(run[i + 1], action="dropped", fault={"kind": "drop", "id": "d"}))
    assert lost.actions == {"LoseResponse"}
    orphan = obs.observe(dict(run[i + 1], action="dropped", reason="client closed"))
    assert orphan.actions == {"LoseResponse"} and orphan.holds(None) is None
    assert obs.observe(dict(run[i], action="queued")) is None
    copy = obs.observe(dict(run[i], action="duplicated-copy"))
    assert copy.actions == {"HandleEndTxn"}
    assert obs.stream(run[i]) == obs.stream(run[i + 1]) != obs.stream(run[0])


def test_errors_are_compared_by_name():
    model = tiny("latest")
    run = committed(True)
    i = index(run, "EndTxn", "response")
    e = dict(run[i], fields={"error_code": 90}, errors=[{"path": "error_code", "code": 90,
                                                          "name": "PRODUCER_FENCED"}])
    o = observations(model, run).observe(e)
    assert o.actions == {"ReceiveEndTxnResponse"}
    assert Errors.PRODUCER_FENCED.name == "PRODUCER_FENCED"


# --- real recorded runs ----------------------------------------------------------------------------
#
# Runs of `kafka-mc real run` (realkafka/run.py) kept as they were written: the proxy's event log,
# the client history, the plan (the run's schedule of faults) and the report. Validated against the
# preset the release stands for, with the plan's faults as the model's budgets.

RUNS = Path(__file__).parent / "conformance_runs"
BUDGETS = {"delay": "request_delays", "duplicate": "request_duplicates",
           "drop-request": "request_losses", "drop-response": "response_losses"}


def recorded(name, timeouts=False, **protocol):
    """The model of run ``name`` (its preset, its plan's faults as budgets) and its events;
    ``timeouts``: the plan's pauses (an application past transaction.timeout.ms) count as
    transaction timeouts, as the run's configuration budgeted them; ``protocol``: flags set
    over the preset's."""
    folder = RUNS / name
    run = read_events(folder / "events.jsonl", folder / "history.jsonl")
    plan = json.loads((folder / "plan.json").read_text())
    version = json.loads((folder / "report.json").read_text())["version"]
    budgets = Counter(BUDGETS[f["kind"]] for f in plan["network"])
    budgets["coordinator_failovers"] += len(plan["failovers"])
    if timeouts:
        budgets["transaction_timeouts"] += sum(t.get("pause", False) for i in plan["instances"]
                                               for t in i["txns"])
    # what killed brokers cost besides (requests left unanswered, batches expired meanwhile)
    budgets.update({k.split(".")[1]: v for k, v in losses.budgets(
        lambda name: budgets[name], run, plan).items() if k != "faults.total"})
    # a 4.x hard failover is a bounce, then a failover (#19)
    budgets["coordinator_failovers"] += losses.restarts_failing_over(
        plan, 1, BY_VERSION[version].hard_restart_failovers)
    overrides = {"protocol.version": BY_VERSION[version].preset,
                 "cluster.partitions": plan["partitions"],
                 "workload.transactions_per_producer": max(len(i["txns"])
                                                           for i in plan["instances"]),
                 "workload.records_per_transaction": max(len(t["partitions"])
                                                         for i in plan["instances"]
                                                         for t in i["txns"]),
                 **{f"faults.{k}": v for k, v in budgets.items()},
                 **{f"protocol.{k}": v for k, v in protocol.items()}}
    return tiny(**overrides), run


@pytest.mark.parametrize("name, observed, faults", [
    ("kafka-3.6.2-commit", 19, set()),
    ("kafka-4.4.0-faults", 43, {"LoseRequest", "LoseResponse"}),
    ("kafka-4.4.0-hold-duplicate", 48, {"LoseResponse", "ElectCoordinator"}),
    ("kafka-4.4.0-marker-frame-dropped", 46, {"LoseRequest"})])
def test_real_runs_conform_and_their_behaviour_replays(name, observed, faults, tmp_path):
    """3.6.2: a committed transaction (TV1, verify-only), its first InitProducerId answered
    COORDINATOR_LOAD_IN_PROGRESS (the coordinator not loaded yet: not observed). 4.4.0 (TV2),
    Produce naming its topic by id: two committed transactions with a WriteTxnMarkers request
    and an EndTxn response dropped by the proxy (LoseRequest, LoseResponse); an abort and a
    commit with a Produce answer dropped (the retry answered NONE: the model's duplicate), an
    EndTxn held past nothing (no step), and one duplicated (the proxy's copy, handled after the
    client closed its connection, is the model's request itself, its answer dropped for want of
    its client: LoseResponse; the client's retry reaches the coordinator after the failover:
    a marker's answer names its request's coordinator epoch, which places ElectCoordinator
    before the new coordinator's marker), and a marker in flight when the failover killed the
    broker (lost_in_flight: two observations, the marker handled or lost, and its answer lost
    or dropped by the new coordinator); a WriteTxnMarkers frame
    carrying the markers of two partitions dropped (one fault: one marker lost, the other
    delivered by the coordinator's resent frame)."""
    model, run = recorded(name)
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    assert r.observed == observed and r.seconds < 5
    assert faults <= {a[0] for a in r.actions}
    file = tmp_path / "run.itf.json"
    write_trace(r, model, model.cfg, file, run={"name": name})
    assert replay(read(file)).steps == len(r.actions)


def test_a_real_produce_answered_concurrent_transactions_conforms():
    """Real 4.4.0 (TV2): the second transaction's first Produce meets the first's commit still
    completing; the leader's verification is answered CONCURRENT_TRANSACTIONS three times, it
    retries (ReplicaManager.handleProduceAppend, KAFKA-18654) and, its retry time past,
    answers the Produce CONCURRENT_TRANSACTIONS, which the client resends with the same sequence
    (Sender.canRetry). The model's leader takes one CONCURRENT_TRANSACTIONS answer by
    ExpireVerificationRetry and its client retries the batch. (Which one: the validator keeps
    the order of each connection's events, not the order across connections, so the giving up
    may be matched at the first answer and the two later ones to the resent Produce's own
    verification.)"""
    model, run = recorded("kafka-4.4.0-produce-concurrent")
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    names = [a[0] for a in r.actions]
    assert names.count("ExpireVerificationRetry") == 1
    i = names.index("ExpireVerificationRetry")
    assert r.actions[i][1].error == Errors.CONCURRENT_TRANSACTIONS
    answered = next(a[1] for a in r.actions[i:] if a[0] == "ReceiveProduceResponse")
    assert answered.error == Errors.CONCURRENT_TRANSACTIONS
    resent = [a[1] for a in r.actions[i:] if a[0] == "HandleProduce"][0]
    assert resent == answered.request          # the same batch, the same sequence
    assert r.seconds < 5


def test_the_real_produce_answered_concurrent_transactions_diverges_on_the_old_model():
    """The model before the fix: a leader that retries a verification answered
    CONCURRENT_TRANSACTIONS without end (no ExpireVerificationRetry) cannot answer the Produce
    as real Kafka did."""
    model, run = recorded("kafka-4.4.0-produce-concurrent")
    old = registry.bind(model.cfg)
    old = type(old)(old.spec.derive(old.spec.name, remove=("ExpireVerificationRetry",)),
                    model.cfg)
    d = validate(old, run).divergence
    assert run[d.event]["api"] == "Produce" and run[d.event]["direction"] == "response"
    assert [x["name"] for x in run[d.event]["errors"]] == ["CONCURRENT_TRANSACTIONS"]
    assert d.near[0].action.startswith("ReceiveProduceResponse(")
    assert d.near[0].reason == "error: recorded CONCURRENT_TRANSACTIONS, model NONE"


def test_a_leader_gives_up_its_verification_retries_only_where_it_has_them():
    """ExpireVerificationRetry exists with TV2 and KAFKA-18654 only (latest, kafka-4.1 and
    after); kafka-4.0 (TV2 before the fix) and TV1 presets convert the answer instead."""
    def rules(preset):
        return {r.name for r in tiny(preset).spec.rules}
    assert "ExpireVerificationRetry" in rules("latest")
    assert "ExpireVerificationRetry" in rules("kafka-4.1")
    assert "ExpireVerificationRetry" not in rules("kafka-4.0")
    assert "ExpireVerificationRetry" not in rules("kafka-3.6")


def test_the_real_runs_tampered_diverge_at_the_tampered_event():
    # a marker accepted at a stale epoch: the 4.4.0 run's last marker request (TV2: at the
    # second EndTxn's bumped epoch) set back to the first transaction's epoch
    model, run = recorded("kafka-4.4.0-faults")
    markers = [i for i, e in enumerate(run) if e.get("api") == "WriteTxnMarkers"
               and e["direction"] == "request" and e.get("action") == "forwarded"]
    i = markers[-1]
    marker = run[i]["fields"]["markers"][0]
    stale = marker["producer_epoch"] - 1
    run[i] = dict(run[i], fields={"markers": [dict(marker, producer_epoch=stale)]})
    d = validate(model, run).divergence
    assert d.event == i and d.label.startswith("WriteTxnMarkers request")
    assert d.near[0].reason == (f"producer_epoch: recorded {stale}, model "
                                f"{marker['producer_epoch']}")
    # a response before its request: the 3.6.2 run's EndTxn answer moved before the EndTxn
    model, run = recorded("kafka-3.6.2-commit")
    i = index(run, "EndTxn", "request")
    j = index(run, "EndTxn", "response")
    run.insert(i, run.pop(j))
    d = validate(model, run).divergence
    assert d.event == i and d.label.startswith("EndTxn response")
    assert d.kinds == ("ReceiveEndTxnResponse",) and d.near == ()


@pytest.mark.parametrize("run, mutant, where", [
    ("kafka-4.4.0-faults", "end-txn-skips-epoch-check", "EndTxn request"),
    ("kafka-4.4.0-faults", "markers-skip-a-partition", "EndTxn request"),
    ("kafka-4.4.0-faults", "marker-not-resent", "WriteTxnMarkers request"),
    ("kafka-4.4.0-hold-duplicate", "abort-skips-end-txn", "WriteTxnMarkers request")])
def test_mutants_lacking_a_behaviour_of_real_kafka_are_caught_on_a_real_run(run, mutant, where):
    """A mutant that cannot do what real Kafka did diverges on the run. (A mutant that does
    more than Kafka -- a check skipped -- is caught only by a run where Kafka refuses what it
    would accept, such as a zombie's stale write; the consumer's mutants never are: the readers'
    fetches are not observed.)"""
    model, events = recorded(run)
    assert validate(model, events).conforms
    broken = registry.bind(model.cfg.with_values(**{"model.mutant": mutant}))
    r = validate(broken, events)
    assert r.verdict == "diverges" and r.divergence.label.startswith(where)


def test_a_real_run_with_a_lost_end_txn_answer_and_a_failover_conforms():
    """Real 4.4.0, network faults seed 304 (docs/conformance.md #5): the first commit's EndTxn
    answer dropped, the client's retry answered NONE at the bumped epoch, then the second
    transaction's first Produce (epoch 1, sequence 0) forwarded just as the failover killed the
    one broker (coordinator and leader at once): the broker closed the connection unanswered,
    and the client resent the batch to the restarted broker. No fault of the plan lost it: the
    broker's death did, which the mapping sees as a loss (lost_in_flight), so the model
    explains it with LoseRequest and the resent Produce, and the failover with ElectCoordinator
    (the markers at the new coordinator epoch)."""
    model, run = recorded("kafka-4.4.0-failover-open")
    died = lost_in_flight(run)
    assert [(run[i]["api"], run[i]["seq"]) for i, e in enumerate(run)
            if (e.get("endpoint"), e.get("conn"), e.get("correlation_id")) in died
            and e.get("direction") == "request"] == [("Produce", 54)]
    assert died == losses.unanswered_at_close(run, APIS)   # what the budgets count
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    names = [a[0] for a in r.actions]
    lost = next(a[1] for a in r.actions if a[0] == "LoseRequest")
    assert (lost.rpc, lost.partition, lost.producer_epoch, lost.base_sequence) == (
        Rpc.Produce, 0, 1, 0)
    assert names.count("ElectCoordinator") == 1 and r.seconds < 5
    # without the broker's death seen as a loss (the mapping before: the connection as if the
    # proxy closed it) no behaviour of the model gets past that Produce
    blind = [dict(e, by="proxy") if e.get("direction") == "connection" else e for e in run]
    assert not lost_in_flight(blind)
    d = validate(model, run, observations=observations(model, blind)).divergence
    assert run[d.event]["api"] == "Produce" and run[d.event]["seq"] == 54


def test_a_batch_expired_while_the_killed_broker_was_down_conforms():
    """Real 4.4.0, network faults seed 304 again (round 2): the same Produce died with the
    killed broker, but the broker stayed down (until the controller fenced it) past the
    client's delivery.timeout.ms, so the batch expired ("Expiring 1 record(s)": Sender's
    failBatch with a TimeoutException) and the application aborted. The model has it as
    ExpireBatch, whose budget the killed broker's cost adds (kafka_mc.realkafka.losses.expired_batches)."""
    model, run = recorded("kafka-4.4.0-failover-batch-expired")
    assert losses.expired_batches(run) == 1
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    names = [a[0] for a in r.actions]
    assert {"LoseRequest", "ExpireBatch", "AbortTransaction"} <= set(names)


def test_9_a_controlled_shutdown_of_the_one_broker_conforms():
    """Real 4.4.0, network faults seed 303 (docs/conformance.md #9): the plan's soft failover, a
    controlled shutdown of the one broker, left the partitions without a leader (Metadata
    answered LEADER_NOT_AVAILABLE) and answered NOT_LEADER_OR_FOLLOWER to the second
    transaction's first Produce (whose verification the coordinator had answered
    CONCURRENT_TRANSACTIONS: the first transaction's ABORT markers were not written yet) and to
    the old coordinator's ABORT marker (coordinator epoch 0). Nothing was appended; the client
    resent the batch and the restarted coordinator its marker (epoch 2, the model's 1). The
    mapping sees such an answer as its request lost (``not_leader_answers``, as a killed
    broker's requests in flight), the budgets pay a request and a response loss for each
    (``losses.answered_not_leader``) and the stopped broker's partitions an offline period each
    (``losses.leaders_stopped``), and the end state holds it to one ABORT marker per
    transaction: the epoch-0 marker is lost and never resent (#12)."""
    model, run = ending("kafka-4.4.0-shutdown-not-leader")
    stopped = not_leader_answers(run)
    assert sorted((run[i]["api"], run[i]["seq"]) for i, e in enumerate(run)
                  if e.get("direction") == "response"
                  and (e.get("endpoint"), e.get("conn"), e.get("correlation_id")) in stopped) \
        == [("Produce", 54), ("WriteTxnMarkers", 57)]
    assert sum(map(len, stopped.values())) == losses.answered_not_leader(run) == 2
    assert model.cfg.get("faults.offline_partitions") == 2
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    markers = [a[1] for a in r.actions if a[0] == "HandleWriteTxnMarkers"]
    assert [(m.partition, m.coordinator_epoch) for m in markers if m.producer_epoch == 1] \
        == [(0, 1)]                 # the epoch-0 marker never reached the log


def test_9_without_the_not_leader_answers_seen_as_losses_the_run_diverges(monkeypatch):
    """The mapping before #9's fix: the Produce answered NOT_LEADER_OR_FOLLOWER (no model step
    answers so) is where the model stops."""
    from kafka_mc.model.kafka.capabilities import observations as mapping
    model, run = ending("kafka-4.4.0-shutdown-not-leader")
    monkeypatch.setattr(mapping, "not_leader_answers", lambda events: {})
    d = validate(model, run).divergence
    assert d is not None and run[d.event]["api"] == "Produce"
    assert run[d.event]["seq"] in (48, 54)



def test_18_a_produce_unverified_for_want_of_a_coordinator_conforms():
    """Real 3.9.2, network-faults seed 3026 (docs/conformance.md #18): in the plan's soft
    failover (a controlled shutdown of the one broker, broker and controller in one process) the
    second transaction's first Produce reached a leader whose metadata cache had the
    ``__transaction_state`` partition leaderless already: AddPartitionsToTxnManager
    .verifyTransaction found no coordinator, sent no AddPartitionsToTxn (nothing on the INTERNAL
    listener) and answered COORDINATOR_NOT_AVAILABLE, which ReplicaManager turned into
    NOT_ENOUGH_REPLICAS. The client resent the batch to the restarted broker, where it was
    verified and appended. The mapping sees such an answer as its request lost
    (``coordinator_not_found_answers``, as #9's NOT_LEADER_OR_FOLLOWER), the budgets pay a
    request and a response loss for it (``losses.answered_without_coordinator``); the paused
    transaction then timed out (epoch 1, the restarted coordinator's epoch 2: the model's 1)."""
    model, run = ending("kafka-3.9.2-shutdown-no-coordinator", timeouts=True)
    unverified = coordinator_not_found_answers(run)
    assert [(run[i]["api"], run[i]["seq"]) for i, e in enumerate(run)
            if e.get("direction") == "response"
            and (e.get("endpoint"), e.get("conn"), e.get("correlation_id")) in unverified] \
        == [("Produce", 63)]
    assert sum(map(len, unverified.values())) == losses.answered_without_coordinator(run) == 1
    assert losses.answered_not_leader(run) == 0
    assert model.cfg.get("faults.offline_partitions") == 2
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    assert r.observed == 59 and r.seconds < 5
    lost = [a[1] for a, i in zip(r.actions, r.steps) if i >= 0 and run[i].get("seq") == 62]
    assert [(m.rpc, m.partition, m.base_sequence) for m in lost] == [(Rpc.Produce, 0, 1)]
    assert [a[0] for a, i in zip(r.actions, r.steps) if i >= 0 and run[i].get("seq") == 62] \
        == ["LoseRequest"]
    assert ("ExpireTransaction", 0, False) in r.actions
    appended = [a[1] for a in r.actions if a[0] == "HandleProduce"]
    assert [(m.partition, m.base_sequence) for m in appended][-2:] == [(0, 1), (0, 2)]


def test_18_without_the_answer_seen_as_a_loss_the_produce_is_out_of_reach(monkeypatch):
    """The mapping before #18's fix, and why: the model's leader always asks the coordinator
    (partition._start_verification sends a VerifyAddPartition; no rule answers a verification
    locally, its coordinator never being without a leader), so a Produce answered
    NOT_ENOUGH_REPLICAS with no AddPartitionsToTxn on the INTERNAL listener is out of its
    reach: handled, the Produce leaves a verification in flight and no answer; the search runs
    past its node limit without matching the Produce (real conform: unknown at 500,000 nodes)."""
    from kafka_mc.model.kafka.capabilities import observations as mapping
    model, run = ending("kafka-3.9.2-shutdown-no-coordinator", timeouts=True)
    r = validate(model, run)
    i = next(i for a, i in zip(r.actions, r.steps) if i >= 0 and run[i].get("seq") == 62)
    k = r.steps.index(i)
    s, m = r.states[k], r.actions[k][1]
    handled = [t for a, t in model.successors(s) if a[0] == "HandleProduce" and a[1] == m]
    assert len(handled) == 1
    out = [x for x in handled[0].network if x not in s.network]
    assert [(x.rpc, x.partition, x.produce) for x in out] == [(Rpc.VerifyAddPartition, 0, m)]
    monkeypatch.setattr(mapping, "coordinator_not_found_answers", lambda events: {})
    r = validate(model, run, max_nodes=20_000)
    assert not r.conforms
    assert run[r.divergence.event]["api"] == "Produce"
    assert run[r.divergence.event]["seq"] in (62, 63)

# --- the end state ---------------------------------------------------------------------------------
#
# What the harness read once a run had settled (report.json's end_state: DescribeTransactions,
# the partitions' logs, DescribeProducers, LSO and high watermark), held against the model's
# state after every other event (model/kafka/capabilities/observations.py, "the end state").

from kafka_mc.explorers.cli.real import end_state  # noqa: E402


def ending(name, timeouts=False, **protocol):
    model, run = recorded(name, timeouts, **protocol)
    return model, run + end_state(RUNS / name)


@pytest.mark.parametrize("name, observed", [
    ("kafka-3.6.2-commit", 23), ("kafka-4.4.0-faults", 50),
    ("kafka-4.4.0-failover-open", 51), ("kafka-4.4.0-failover-batch-expired", 38),
    ("kafka-4.4.0-marker-frame-dropped", 53), ("kafka-4.4.0-produce-concurrent", 57),
    ("kafka-4.4.0-hold-duplicate", 55)])
def test_real_runs_end_where_the_model_ends(name, observed):
    """Per transactional.id its state, producer id and epoch; per partition its log, producer
    states and whether an open transaction holds its LSO (one partition: 3 observations more,
    two: 6, and one for the transactional.id)."""
    model, run = ending(name)
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    assert r.observed == observed and r.seconds < 5


def _tampered(run, **changes):
    *events, end = run
    return events + [{**end, **changes}]


def test_a_marker_missing_from_the_end_state_is_a_divergence_at_the_end():
    """KAFKA-20734's signature on a run where Kafka wrote every marker: partition 1's COMMIT
    marker taken out of its log and its LSO held below the high watermark. No request of the
    run changes, so only the end state tells: a partition's log only grows, so the step that
    appends that marker (the WriteTxnMarkers request) is where no behaviour of the model can
    go on, the end state's log out of reach after it."""
    model, run = ending("kafka-4.4.0-faults")
    end = run[-1]
    log = [b for b in end["logs"]["1"]]
    last = max(i for i, b in enumerate(log) if b.get("control"))
    tampered = _tampered(run, logs={**end["logs"], "1": log[:last] + log[last + 1:]},
                         offsets={**end["offsets"], "1": {"lso": 2, "high_watermark": 4}})
    d = validate(model, tampered).divergence
    assert d.label.startswith("WriteTxnMarkers request") and d.label.endswith(" p1")
    assert d.near[0].action.startswith("HandleWriteTxnMarkers(")
    assert d.near[0].reason.startswith("after it the run's end state is out of reach (end "
                                       "state: the log of partition 1: log[")
    assert "recorded the end of the log, model COMMIT" in d.near[0].reason
    assert validate(model, tampered[:-1]).conforms          # without the end state: unseen


def test_a_transaction_state_the_model_does_not_end_in_is_a_divergence():
    model, run = ending("kafka-3.6.2-commit")
    (name, txn), = run[-1]["transactions"].items()
    tampered = _tampered(run, transactions={name: {**txn, "state": "Ongoing"}})
    d = validate(model, tampered).divergence
    assert d.label == f"end state: DescribeTransactions {name}"
    # the nearest of the states the model can end in (PrepareCommit before the silent append
    # completing the commit, CompleteCommit after it)
    assert d.near[0].reason in ("state: recorded Ongoing, model PrepareCommit",
                                "state: recorded Ongoing, model CompleteCommit")


def test_12_a_marker_lost_with_its_coordinator_is_not_resent(monkeypatch):
    """4.4.0 (docs/conformance.md #12): the old coordinator's COMMIT marker (coordinator epoch 0)
    was on the wire when the hard failover killed the broker; it was never appended and never
    resent, and the restarted coordinator's marker (epoch 2 in Kafka, 1 in the model) is the one
    in the log. The model loses a marker of an older coordinator epoch with no resend
    (coordinator.marker_may_be_lost, marker_timed_out: TransactionMarkerRequestCompletionHandler.
    onComplete removes the markers of a changed coordinator epoch, removeMarkersForTxn). Without
    it a marker was lost only while its coordinator awaited it, and resent at once under its own
    epoch, so the leader had to take the epoch-0 COMMIT: the end state's log was out of reach.
    Held without the bounce (#19): with it the validator explains the kill as a bounce then a
    failover, the epoch-0 marker lost before the bounce and the bounce's resend dropped by the
    failover."""
    model, run = ending("kafka-4.4.0-hold-duplicate", coordinator_bounce_keeps_epoch=False)
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    after = r.actions[[a[0] for a in r.actions].index("ElectCoordinator"):]
    lost = [a[1] for a in after if a[0] == "LoseRequest" and a[1].rpc == Rpc.WriteTxnMarkers]
    assert [(m.coordinator_epoch, m.committed) for m in lost] == [(0, True)]
    appended = [a[1] for a in r.actions if a[0] == "HandleWriteTxnMarkers" and a[1].committed]
    assert [m.coordinator_epoch for m in appended] == [1]
    s, notes = next(iter(model.init_states())), []     # the diagram's note of that loss
    for a in r.actions:
        t = model.step(s, a)
        if a[0] == "LoseRequest" and a[1].rpc == Rpc.WriteTxnMarkers:
            notes += [e.label for e in model.describe(s, a, t)]
        s = t
    assert notes == ["WriteTxnMarkers(COMMIT, epoch=2, coordinatorEpoch=0) lost: "
                     "request.timeout.ms, its coordinator is gone, nothing is sent again"]
    # the model before: a marker lost only while awaited, and resent at once under the old
    # epoch, so the epoch-0 marker the killed broker never answered comes back ahead of the new
    # coordinator's (one connection, in order) and its leader must take it first
    monkeypatch.setitem(faults._SENDERS, Rpc.WriteTxnMarkers,
                        (coordinator.marker_awaited, coordinator.marker_timed_out))
    d = validate(model, run).divergence
    assert d.label.startswith("WriteTxnMarkers request") and " p0" in d.label
    assert d.near[0].reason == "coordinator_epoch: recorded 1, model 0"


def test_13_kafka_20734_met_through_the_harness_s_own_failover():
    """4.4.0, network-faults seed 2004 (round 3): the first commit's EndTxn answered, then the
    plan's hard failover killed the one broker before any marker went out. The restarted
    coordinator reloaded the transaction in PrepareCommit before the broker led its partitions
    again, skipped their markers ("likely deleted already", KAFKA-20734) and completed it: no
    marker of the first transaction in either log, whose records the second transaction's
    COMMIT then closes. The model has it once the budgets count what the kill did to the
    partitions' leader (kafka_mc.realkafka.losses.leaders_stopped: PartitionOffline before the reload's
    markers); without that, the second transaction's implicit add (answered NONE) is where it
    diverged."""
    model, run = ending("kafka-4.4.0-failover-verification")
    assert model.cfg.get("faults.offline_partitions") == 2
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    offline = [a for a in r.actions if a[0] == "PartitionOffline"]
    assert len(offline) == 2
    logs = run[-1]["logs"]
    assert [b.get("marker") for b in logs["0"]] == [None, None, "COMMIT"]
    old = registry.bind(model.cfg.with_values(**{"faults.offline_partitions": 0}))
    d = validate(old, run).divergence
    assert d.label.startswith("AddPartitionsToTxn response")


def test_14_a_leader_killed_with_marker_answers_in_flight():
    """4.4.0, network-faults seed 3041 (round 4): the second commit's WriteTxnMarkers (both
    partitions, coordinator epoch 0) was appended and the plan's hard failover killed the one
    broker before it answered; the restarted coordinator reloaded PrepareCommit while its
    partitions had no leader, skipped their markers (KAFKA-20734) and completed: each log holds
    one COMMIT per transaction. The model's partition could not go offline while an answer from
    it was in flight, nor could that answer be lost first without the coordinator resending at
    once; a leader may now go offline but in the middle of a verification
    (``partition.partition_offline_enabled``), the old answers arriving late (dropped by the
    new coordinator)."""
    from kafka_mc.model.kafka.network import Rpc
    model, run = ending("kafka-4.4.0-failover-markers-in-flight")
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    went = [i for i, a in enumerate(r.actions) if a[0] == "PartitionOffline"]
    assert len(went) == 2
    # taken while a marker's answer from that partition was still on its way
    assert any(m.rpc == Rpc.WriteTxnMarkersResponse and m.partition == r.actions[i][1]
               for i in went for m in r.states[i].network)
    assert [[b.get("marker") for b in log] for log in run[-1]["logs"].values()] == \
        [[None, "COMMIT", None, "COMMIT"]] * 2


def test_15_a_coordinator_bounced_at_the_same_epoch():
    """3.6.2, network-faults seed 3007 (round 4): the plan's hard failover killed the one broker
    (broker and controller in one process) right after the first abort's marker was answered;
    restarted, it led __transaction_state at the same leader epoch (0: no controller was left
    to fence it), so the coordinator reloaded the transaction in PrepareAbort and resent its
    marker with coordinator epoch 0. The model's failover bumps the coordinator epoch
    (coordinator.elect_coordinator: a new leader of the transaction log); on the presets of
    KRaft before 4.0 (coordinator_bounce_keeps_epoch: ClusterControlManager.registerBroker
    keeps a re-registered broker's leadership, KAFKA-18106 took it away in 4.0) the failover may
    be a bounce (coordinator.bounce_coordinator), at the same coordinator epoch. The plan's
    paused transaction timed out (its abort's marker, epoch 2, coordinator epoch 0 still)."""
    model, run = ending("kafka-3.6.2-bounce-same-epoch", timeouts=True)
    epochs = {m.get("coordinator_epoch") for e in run if e.get("api") == "WriteTxnMarkers"
              and e.get("direction") == "request"
              for m in (e.get("fields") or {}).get("markers") or ()}
    assert epochs == {0}           # one marker sent before the kill, four after it
    assert model.params.features.coordinator_bounce_keeps_epoch
    r = validate(model, run, max_nodes=30_000)
    assert r.conforms, "\n".join(r.divergence.report())
    assert [a for a in r.actions if a[0] in faults.BY_RULE
            and faults.BY_RULE[a[0]].budget == "coordinator_failovers"] == \
        [("BounceCoordinator", False)]      # the CompleteAbort in flight was lost
    resent = [a[1] for a in r.actions[[a[0] for a in r.actions].index("BounceCoordinator"):]
              if a[0] == "HandleWriteTxnMarkers"]
    assert {m.coordinator_epoch for m in resent} == {0}


def test_15_without_the_bounce_the_resent_marker_diverges():
    """The model before #15 (the flag off on the 3.6 preset): its only failover takes
    coordinator epoch 1, so the marker the restarted coordinator resent with epoch 0 (and every
    later one) is out of reach."""
    model, run = ending("kafka-3.6.2-bounce-same-epoch", timeouts=True,
                        coordinator_bounce_keeps_epoch=False)
    r = validate(model, run, max_nodes=30_000)
    assert not r.conforms
    assert "WriteTxnMarkers request" in r.divergence.report()[0]


def test_19_a_hard_restart_on_4x_is_a_bounce_then_a_failover():
    """4.0.2, network-faults seed 3040 (round 5), docs/conformance.md #19: the plan's hard
    failover killed the one broker (broker and KRaft controller in one process) after a
    duplicated EndTxn's commit marker (producer epoch 2, coordinator epoch 0) was answered,
    before CompleteCommit was written. Restarted, the controller's activation gave the old
    incarnation a fresh session (ClusterControlManager.activate), so the broker replayed the
    metadata log where it still led __transaction_state at leader epoch 0 and the coordinator
    reloaded at coordinator epoch 0 (a bounce: its marker, queued while the broker's listeners
    were closed, was delivered at coordinator epoch 0 and appended); broker.session.timeout.ms
    later the controller fenced the old incarnation (ReplicationControlManager
    .maybeFenceOneStaleBroker, handleBrokerFenced), the new one registered and was unfenced,
    and the coordinator reloaded at epoch 2 and resent the marker with it (a failover). The
    4.x presets bounce (coordinator_bounce_keeps_epoch) and a 4.x release's hard failover is
    budgeted as two coordinator failovers (Release.hard_restart_failovers): BounceCoordinator
    then ElectCoordinator explain it."""
    model, run = ending("kafka-4.0.2-bounce-then-failover")
    assert model.params.features.coordinator_bounce_keeps_epoch
    assert model.params.budgets.coordinator_failovers == 2
    r = validate(model, run)
    assert r.conforms, "\n".join(r.divergence.report())
    assert [a for a in r.actions if a[0] in faults.BY_RULE
            and faults.BY_RULE[a[0]].budget == "coordinator_failovers"] == \
        [("BounceCoordinator", False), ("ElectCoordinator", False)]
    epochs = [a[1].coordinator_epoch for a in r.actions if a[0] == "HandleWriteTxnMarkers"]
    assert epochs[-2:] == [0, 1]        # the bounce's resend, the failover's (Kafka's epoch 2)


def test_19_without_the_bounce_the_marker_resent_at_epoch_0_diverges():
    """Where the run diverged before #19 (no bounce on kafka-4.0.2): the restarted broker's
    WriteTxnMarkers at coordinator epoch 0 (the old incarnation's marker was delivered and
    answered before the kill); the model's only failover takes coordinator epoch 1."""
    model, run = ending("kafka-4.0.2-bounce-then-failover", coordinator_bounce_keeps_epoch=False)
    d = validate(model, run).divergence
    assert d is not None
    e = run[d.event]
    assert e["api"] == "WriteTxnMarkers" and e["direction"] == "request" and e["seq"] == 134
    assert [m["coordinator_epoch"] for m in e["fields"]["markers"]] == [0]
    assert d.near[0].action.startswith("HandleWriteTxnMarkers(")
    assert d.near[0].reason == "coordinator_epoch: recorded 0, model 1"
