"""Jepsen's queue checker: each anomaly triggered by a crafted history and silent on a clean one,
and a client history (the driver's records) read into Jepsen's operations."""
import pytest

from kafka_mc.realkafka.queue_checker import (ALLOWED, CHECKED, Op, check, check_history,
                                              history_ops, version_orders)

# p0's log in the histories below: A at 0, B at 1, C at 2 (three committed transactions)
A, B, C, D = "t0.i0.x0.r0", "t0.i0.x1.r0", "t0.i0.x2.r0", "t0.i0.x3.r0"


def txn(index, name, sends, type_="ok", process="t0.i0", polls=()):
    return Op(index, process, type_, "txn", name, sends=tuple(sends), polls=tuple(polls))


def poll(index, reads, process="c0"):
    return Op(index, process, "ok", "poll", f"{process} poll #{index}", polls=tuple(reads))


WRITES = [txn(1, "x0", [(0, 0, A)]), txn(2, "x1", [(0, 1, B)]), txn(3, "x2", [(0, 2, C)])]
ALL = poll(90, [(0, 0, A), (0, 1, B), (0, 2, C)], process="reader")


def found(ops, allowed=False):
    report = check(ops)
    return sorted({a.name for a in (report.allowed if allowed else report.anomalies)})


def test_a_clean_history_has_no_anomaly():
    ops = WRITES + [poll(10, [(0, 0, A)]), poll(11, [(0, 1, B), (0, 2, C)]), ALL]
    report = check(ops)
    assert report.anomalies == [] and report.allowed == []
    assert report.checked == CHECKED


def test_offsets_of_aborted_records_and_markers_are_gaps_of_the_version_order():
    ops = [txn(1, "x0", [(0, 0, A)]), txn(2, "x1", [(0, 2, B)], "fail"),
           txn(3, "x2", [(0, 4, C)]), poll(10, [(0, 0, A), (0, 4, C)])]
    orders, errors = version_orders(ops)
    assert orders[0].by_index == (A, C) and errors == []
    assert found(ops) == []


@pytest.mark.parametrize("reads, anomaly", [
    ([[(0, 0, A)], [(0, 2, C)]], "poll-skip"),
    ([[(0, 0, A), (0, 1, B)], [(0, 1, B), (0, 2, C)]], "nonmonotonic-poll"),
    ([[(0, 0, A), (0, 2, C)]], "int-poll-skip"),
    ([[(0, 1, B), (0, 0, A), (0, 2, C)]], "int-nonmonotonic-poll"),
])
def test_each_poll_anomaly_is_found(reads, anomaly):
    ops = WRITES + [poll(10 + n, r) for n, r in enumerate(reads)] + [ALL]
    assert anomaly in found(ops)
    assert {a.property for a in check(ops).anomalies if a.name == anomaly} == \
        {"read_committed_polls"}


def test_a_new_assignment_forgets_where_a_consumer_was():
    assign = Op(11, "c0", "ok", "assign", "c0 assign #11", keys=frozenset({1}))
    ops = WRITES + [poll(10, [(0, 0, A)]), assign, poll(12, [(0, 2, C)]), ALL]
    assert found(ops) == []


def test_a_transaction_sending_before_its_predecessor_is_a_nonmonotonic_send():
    ops = [txn(1, "x0", [(0, 1, B)]), txn(2, "x1", [(0, 0, A)]),
           poll(10, [(0, 0, A), (0, 1, B)])]
    assert found(ops) == ["nonmonotonic-send"]


def test_sends_of_one_transaction_out_of_order_are_an_int_nonmonotonic_send():
    ops = [txn(1, "x0", [(0, 1, B), (0, 0, A)]), poll(10, [(0, 0, A), (0, 1, B)])]
    assert found(ops) == ["int-nonmonotonic-send"]


def test_interleaved_transactions_are_an_allowed_int_send_skip_and_g0():
    ops = [txn(1, "x0", [(0, 0, A), (0, 2, C)]), txn(2, "x1", [(0, 1, B)], process="t0.i1"),
           ALL]
    assert found(ops) == []
    assert found(ops, allowed=True) == ["G0", "int-send-skip"]
    assert {"G0", "int-send-skip"} <= ALLOWED


def test_two_values_at_one_offset_are_inconsistent_offsets():
    ops = WRITES + [poll(10, [(0, 0, "t9.i0.x0.r0"), (0, 1, B), (0, 2, C)]), ALL]
    report = check(ops)
    assert "inconsistent-offsets" in {a.name for a in report.anomalies}
    assert any("offset 0 holds" in a.evidence for a in report.anomalies)


def test_a_committed_value_no_poll_returned_is_unseen():
    ops = WRITES + [txn(4, "x3", [(0, 3, D)]), ALL]
    report = check(ops)
    assert [a.name for a in report.anomalies] == ["unseen"]
    assert report.anomalies[0].property == "committed_writes_visible"
    assert D in report.anomalies[0].evidence
    # an aborted transaction's value is not expected to be seen
    assert found(WRITES + [txn(4, "x3", [(0, 3, D)], "fail"), ALL]) == []


def test_writes_interleaved_on_two_partitions_are_a_g0_cycle_printed():
    # T1 before T2 on p0, T2 before T1 on p1
    t1 = txn(1, "T1", [(0, 0, A), (1, 1, "t1.i0.x0.r1")], process="t1.i0")
    t2 = txn(2, "T2", [(0, 1, B), (1, 0, "t2.i0.x0.r1")], process="t2.i0")
    ops = [t1, t2, poll(90, [(0, 0, A), (0, 1, B), (1, 0, "t2.i0.x0.r1"),
                             (1, 1, "t1.i0.x0.r1")], process="reader")]
    report = check(ops)
    assert report.anomalies == []
    [g0] = [a for a in report.allowed if a.name == "G0"]
    assert g0.evidence == ("T1 -ww(p0: t0.i0.x0.r0 < t0.i0.x1.r0)-> T2 "
                           "-ww(p1: t2.i0.x0.r1 < t1.i0.x0.r1)-> T1")


def test_transactions_reading_each_others_writes_are_a_g1c_cycle():
    t1 = txn(1, "T1", [(0, 0, A)], polls=[(1, 0, B)])
    t2 = txn(2, "T2", [(1, 0, B)], polls=[(0, 0, A)], process="t0.i1")
    report = check([t1, t2])
    [g1c] = [a for a in report.allowed if a.name == "G1c"]
    assert "-wr(" in g1c.evidence and g1c.evidence.startswith("T")


def test_a_g_single_cycle_on_one_partition_is_an_anomaly():
    # the poll reads C, then A: its last read of p0 is A, B (x1) comes next, and x1 -ww-> x2
    ops = WRITES + [poll(10, [(0, 2, C), (0, 0, A)]), ALL]
    report = check(ops)
    assert "G-single" in {a.name for a in report.anomalies}
    [cycle] = [a for a in report.anomalies if a.name == "G-single"]
    assert cycle.evidence == ("c0 poll #10 -rw(p0: read up to t0.i0.x0.r0, not t0.i0.x1.r0)-> "
                              "x1 -ww(p0: t0.i0.x1.r0 < t0.i0.x2.r0)-> x2 "
                              "-wr(p0: t0.i0.x2.r0)-> c0 poll #10")


def test_a_g_single_cycle_across_partitions_is_allowed():
    # W2 wrote p0 and p1; the poll saw p1 past W2 (W1's D) but p0 only up to W0's A
    w0 = txn(1, "W0", [(0, 0, A)])
    w2 = txn(2, "W2", [(0, 1, B), (1, 0, C)], process="t1.i0")
    w1 = txn(3, "W1", [(1, 1, D)], process="t2.i0")
    ops = [w0, w2, w1, poll(10, [(0, 0, A), (1, 0, C), (1, 1, D)]),
           poll(90, [(0, 0, A), (0, 1, B), (1, 0, C), (1, 1, D)], process="reader")]
    report = check(ops)
    assert report.anomalies == []
    assert "G-single" in {a.name for a in report.allowed}


# --- the client history -----------------------------------------------------------------------

def _history():
    """A client history as the driver records it: t0.i0 commits x0 (p0, p1), aborts x1 (p0),
    commits x2 (p0); c0 polls during the run; the end reader reads everything."""
    rows = []

    def op(process, f, value=None, result=None, kind="ok"):
        rows.append({"index": len(rows), "process": process, "type": "invoke", "f": f,
                     "value": value or {}})
        rows.append({"index": len(rows), "process": process, "type": kind, "f": f,
                     "value": result})

    def send(v, p, offset):
        args = {"topic": "t", "partition": p, "key": v, "value": v}
        op("t0.i0", "send", args, {**args, "offset": offset})

    def rec(p, offset, v):
        return {"topic": "t", "partition": p, "offset": offset, "key": v, "value": v}

    op("c0", "assign", {"partitions": [{"topic": "t", "partition": 0},
                                       {"topic": "t", "partition": 1}]})
    op("t0.i0", "init_transactions")
    for x, sends, end in ((0, [(0, 0), (1, 0)], "commit"), (1, [(0, 2)], "abort"),
                          (2, [(0, 4)], "commit")):
        op("t0.i0", "begin_transaction")
        for r, (p, o) in enumerate(sends):
            send(f"t0.i0.x{x}.r{r}", p, o)
        op("t0.i0", f"{end}_transaction")
        if x == 0:
            op("c0", "poll", {"timeout_ms": 200}, [rec(0, 0, "t0.i0.x0.r0")])
    op("c0", "poll", {"timeout_ms": 200}, [rec(1, 0, "t0.i0.x0.r1"), rec(0, 4, "t0.i0.x2.r0")])
    op("reader", "poll", {"timeout_ms": 200},
       [rec(0, 0, "t0.i0.x0.r0"), rec(1, 0, "t0.i0.x0.r1"), rec(0, 4, "t0.i0.x2.r0")])
    return rows


def test_a_client_history_becomes_jepsen_operations():
    ops = history_ops(_history())
    txns = [(o.name, o.type, o.sends) for o in ops if o.f == "txn"]
    assert txns == [("t0.i0.x0", "ok", ((0, 0, "t0.i0.x0.r0"), (1, 0, "t0.i0.x0.r1"))),
                    ("t0.i0.x1", "fail", ((0, 2, "t0.i0.x1.r0"),)),
                    ("t0.i0.x2", "ok", ((0, 4, "t0.i0.x2.r0"),))]
    assert [o.f for o in ops if o.process == "c0"] == ["assign", "poll", "poll"]
    assert check_history(_history()).anomalies == []


def test_a_commit_that_failed_then_was_aborted_is_a_failed_transaction():
    rows = _history()
    # x2's commit failed (an abortable error) and the application aborted
    [*_, last] = [r for r in rows if r["f"] == "commit_transaction" and r["type"] == "ok"]
    last["type"] = "info"
    rows += [{"index": len(rows), "process": "t0.i0", "type": "invoke",
              "f": "abort_transaction", "value": {}},
             {"index": len(rows) + 1, "process": "t0.i0", "type": "ok",
              "f": "abort_transaction", "value": None}]
    types = {o.name: o.type for o in history_ops(rows) if o.f == "txn"}
    assert types["t0.i0.x2"] == "fail"
