"""The anomalies of a real run, each shown absent on a clean history and present on one that has
it (the histories are written by hand: what a real run records, in its shape)."""
import pytest

from kafka_mc.realkafka.anomalies import check, parse_value, record_value

T1, T2 = (0, 0, 0), (0, 1, 0)
V = {t: [record_value(*t, r) for r in range(2)] for t in (T1, T2)}


def reads(*values):
    return [{"partition": 0, "offset": n, "value": v} for n, v in enumerate(values)]


SETTLED = {0: {"lso": 4, "high_watermark": 4}}


def names(found):
    return sorted(a.name for a in found)


def test_record_values_name_their_transaction():
    assert parse_value(record_value(1, 2, 3, 4)) == ((1, 2, 3), 4, False)
    assert parse_value(record_value(1, 2, 3, 4, zombie=True)) == ((1, 2, 3), 4, True)
    assert parse_value("foreign") is None


def test_a_clean_history_has_no_anomaly():
    found = check({T1: "committed", T2: "aborted"}, V, reads(*V[T1]), SETTLED, False)
    assert found == []


@pytest.mark.parametrize("outcomes, read, anomaly", [
    ({T1: "committed", T2: "aborted"}, V[T1] + V[T2][:1], "aborted-read"),
    ({T1: "committed", T2: "aborted"}, V[T1][:1], "lost-write"),
    ({T1: "committed", T2: "aborted"}, V[T1] + V[T1][:1], "duplicate"),
    ({T1: "unknown", T2: "aborted"}, V[T1][:1], "torn-transaction"),
    ({T1: "committed", T2: "failed"}, V[T1] + [record_value(*T2, 0, zombie=True)], "zombie-write"),
])
def test_each_anomaly_is_found(outcomes, read, anomaly):
    found = check(outcomes, V, reads(*read), SETTLED, False)
    assert anomaly in names(found)
    prop = {"aborted-read": "read_committed_isolation", "lost-write": "committed_writes_visible",
            "duplicate": "no_duplicates", "torn-transaction": "txn_atomicity",
            "zombie-write": "zombie_fencing"}[anomaly]
    assert prop in {a.property for a in found}


def test_a_hanging_transaction_is_an_lso_held_with_nothing_open_at_the_coordinator():
    held = {0: {"lso": 2, "high_watermark": 4}}
    assert names(check({T1: "committed"}, {T1: V[T1]}, reads(*V[T1]), held, False)) == \
        ["hanging-transaction"]
    # while the coordinator still completes a transaction, a held LSO is no anomaly
    assert check({T1: "committed"}, {T1: V[T1]}, reads(*V[T1]), held, True) == []
