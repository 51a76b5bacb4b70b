"""What ``--diff`` says changed: arrays of components by index, queues and logs by identity (a
message consumed from the network is taken out, not every message after it changed), a record
replaced by another kind of record as a whole, and sets by what they gained and lost."""
from kafka_mc.model.core import Record
from kafka_mc.traces.diff import MISSING, Change, diff


def msg(rpc, producer, **fields):
    return Record(rpc=rpc, producer=producer, **fields)


def changes(a, b):
    return [str(c) for c in diff(a, b, "network")]


def test_a_message_taken_from_the_front_of_a_queue_is_taken_out():
    m0, m1 = msg("InitProducerId", 0, tid=0), msg("InitProducerId", 1, tid=0)
    assert list(diff((m0, m1), (m1,), "network")) == [Change("network[0]", m0, MISSING)]
    assert changes((m0, m1), (m1,)) == [
        'network[0]: [producer |-> 0, rpc |-> "InitProducerId", tid |-> 0] -> (absent)']


def test_a_message_sent_is_added_at_its_place():
    m0, m1, r = msg("A", 0), msg("A", 1), msg("AResponse", 0, error="NONE")
    assert changes((m0, m1), (m1, r, m0)) == [   # (m0 consumed, a response and a copy sent)
        'network[0]: (absent) -> [producer |-> 1, rpc |-> "A"]',
        'network[1]: (absent) -> [error |-> "NONE", producer |-> 0, rpc |-> "AResponse"]',
        'network[1]: [producer |-> 1, rpc |-> "A"] -> (absent)']
    assert changes((m0, m1), (m1, r)) == [
        'network[0]: [producer |-> 0, rpc |-> "A"] -> (absent)',
        'network[1]: (absent) -> [error |-> "NONE", producer |-> 0, rpc |-> "AResponse"]']


def test_a_message_answered_in_place_is_replaced_as_a_whole():
    request, response = msg("A", 0), msg("AResponse", 0, error="NONE")
    assert changes((request,), (response,)) == [
        'network[0]: [producer |-> 0, rpc |-> "A"] -> [error |-> "NONE", producer |-> 0, '
        'rpc |-> "AResponse"]']


def test_an_array_of_components_is_compared_by_index_and_field():
    p0, p1 = Record(state="READY", epoch=0), Record(state="READY", epoch=0)
    assert [str(c) for c in diff((p0, p1), (p0, Record(state="IN_TRANSACTION", epoch=0)),
                                 "producers")] == [
        'producers[1].state: "READY" -> "IN_TRANSACTION"']
    c = Record(positions=(0,), returned=())   # two consumers alike: the first one polls
    assert [str(x) for x in diff((c, c), (Record(positions=(1,), returned=("r",)), c),
                                 "consumers")] == [
        "consumers[0].positions[0]: 0 -> 1", 'consumers[0].returned[0]: (absent) -> "r"']


def test_a_log_that_grew_shows_the_appended_entry_only():
    log = ("b0", "b1")
    assert [str(c) for c in diff(log, log + ("m2",), "log")] == ['log[2]: (absent) -> "m2"']
    assert [str(c) for c in diff(frozenset({1}), frozenset({2}), "s")] == ["s: - 1, + 2"]
