"""kafka_mc.realkafka.losses: what a run's killed brokers cost the model's budgets, on hand-written
events as the proxy and the client driver write them (no broker needed; the recorded runs of
tests/model/test_kafka_observations.py hold it against real ones)."""
from kafka_mc.realkafka import losses

C = "broker-1/CLIENT"


def req(conn, corr, api="Produce", action="forwarded"):
    return {"endpoint": C, "conn": conn, "direction": "request", "api": api,
            "correlation_id": corr, "action": action}


def resp(conn, corr, api="Produce"):
    return {"endpoint": C, "conn": conn, "direction": "response", "api": api,
            "correlation_id": corr, "action": "forwarded"}


def closed(conn, by):
    return {"endpoint": C, "conn": conn, "direction": "connection", "action": "closed", "by": by}


def expired(process="t0.i0"):
    return {"process": process, "type": "info", "f": "send", "value": None,
            "error": ["TimeoutException", "Expiring 1 record(s) for t-0:12001 ms has passed"]}


def test_a_request_left_unanswered_when_its_connection_closed_is_lost():
    """Closed by the broker (killed) or by the client (its request timed out); not by the
    proxy (a fault of the plan, which its budgets hold)."""
    events = [req(1, 1), resp(1, 1), req(1, 2), req(2, 3, "EndTxn"), closed(1, "broker"),
              closed(2, "client"), req(3, 4, "Metadata"), closed(3, "broker"),
              req(4, 5, "EndTxn"), closed(4, "proxy")]
    assert losses.unanswered_at_close(events) == {(C, 1, 2), (C, 2, 3), (C, 3, 4)}
    assert losses.unanswered_at_close(events, losses.TRANSACTIONAL_APIS) == {(C, 1, 2),
                                                                             (C, 2, 3)}
    # a request the proxy dropped (a fault of the plan) or held is not the broker's loss
    assert not losses.unanswered_at_close([req(1, 1, action="dropped"),
                                                  closed(1, "broker")])


def test_the_budgets_grow_by_what_the_killed_broker_cost():
    config = {"request_losses": 1, "response_losses": 0, "batch_expiries": 0, "total": None}
    events = [req(1, 2), closed(1, "broker"), expired(), expired("reader")]
    assert losses.expired_batches(events) == 2
    assert losses.budgets(config.get, events) == {
        "faults.request_losses": 2, "faults.response_losses": 1, "faults.batch_expiries": 2}
    assert losses.budgets(config.get, [req(1, 2), resp(1, 2), closed(1, "broker")]) == {}
    config["total"] = 3
    assert losses.budgets(config.get, events)["faults.total"] == 3 + 2 + 2


def test_a_failover_on_one_broker_takes_every_partition_offline():
    """Hard (killed) or soft (a controlled shutdown, which leaves the partitions no leader:
    conformance #9): the one broker leads every partition."""
    plan = {"partitions": 2, "failovers": [{"after_end_txn": 1, "hard": True},
                                           {"after_end_txn": 2, "hard": False}]}
    assert losses.leaders_stopped(plan, brokers=1) == 4
    assert losses.leaders_stopped(plan, brokers=3) == 0      # outages are the plan's own there
    assert losses.leaders_stopped(None, brokers=1) == 0
    got = losses.budgets(lambda name: {"offline_partitions": 0, "total": 3}.get(name, 0), [],
                         plan, 1)
    assert got == {"faults.offline_partitions": 4, "faults.total": 7}


def test_a_hard_failover_on_4x_is_two_coordinator_failovers():
    """On 4.x the restarted combined node first leads at the old epoch (a bounce), then the
    controller fences the old incarnation (a failover): conformance #19. A soft failover, a
    3.x release (one per hard failover) or several brokers add none."""
    plan = {"partitions": 1, "failovers": [{"after_end_txn": 1, "hard": True},
                                           {"after_end_txn": 2, "hard": False}]}
    assert losses.restarts_failing_over(plan, 1, per_hard=2) == 1
    assert losses.restarts_failing_over(plan, 1, per_hard=1) == 0
    assert losses.restarts_failing_over(plan, 3, per_hard=2) == 0
    got = losses.budgets(lambda name: {"coordinator_failovers": 2, "total": 3}.get(name, 0), [],
                         plan, 1, 2)
    assert got == {"faults.offline_partitions": 2, "faults.coordinator_failovers": 3,
                   "faults.total": 6}


def test_a_partition_answered_not_leader_is_a_loss():
    """A Produce or WriteTxnMarkers partition answered NOT_LEADER_OR_FOLLOWER (a leader that
    stopped leading: conformance #9) had no effect and is retried: a request and a response
    loss each; other errors and other APIs are not."""
    def answered(corr, api, *codes):
        return dict(resp(1, corr, api), errors=[
            {"path": f"p[{i}].error_code", "code": c, "name": "x"} for i, c in enumerate(codes)])
    events = [answered(1, "Produce", 6, 6), answered(2, "WriteTxnMarkers", 6),
              answered(3, "Produce", 51), answered(4, "EndTxn", 6),
              dict(answered(5, "Produce", 6), action="dropped")]
    assert losses.answered_not_leader(events) == 3
    config = {"request_losses": 0, "response_losses": 1, "total": None}
    assert losses.budgets(config.get, events) == {"faults.request_losses": 3,
                                                  "faults.response_losses": 4}


def test_a_fault_on_a_frame_of_several_messages_is_one_fault_per_message():
    """A held (delayed or duplicated) frame carries one model message per partition, and the
    model's DelayRequest / DuplicateRequest take one message each."""
    markers = dict(req(1, 1, "WriteTxnMarkers", action="held"),
                   fault={"kind": "duplicate", "id": "duplicate-1"},
                   fields={"markers": [{"topics": [{"name": "t", "partition_indexes": [0, 1]}]}]})
    produce = dict(req(2, 2, action="held"), fault={"kind": "hold", "id": "hold-1"},
                   fields={"topic_data": [{"name": "t", "partition_data": [{"index": 1}]}]})
    assert losses.frame_messages(markers) == 2 and losses.frame_messages(produce) == 1
    assert losses.frames_beyond_first([markers, produce], "duplicate") == 1
    assert losses.frames_beyond_first([markers, produce], "hold") == 0
    config = {"request_duplicates": 1, "total": 4}
    assert losses.budgets(lambda n: config.get(n, 0), [markers, produce]) == {
        "faults.request_duplicates": 2, "faults.total": 5}
