"""The module-level memos the Kafka model and its properties keep (the last state asked about:
``kafka_mc.model.kafka.producer.running``, ``kafka_mc.invariants.history``) answer every caller with its own state's
answer when callers run concurrently, as the web explorer's requests do (threads)."""
import sys
import threading

from kafka_mc.model import registry
from kafka_mc.model.kafka import producer
from kafka_mc.invariants import history
from tests.reachable import bfs_order


def test_the_memos_answer_each_thread_for_its_own_state():
    model = registry.bind(registry.load(None))
    K = model.params
    states = bfs_order(model, 8000)[::4]
    expect = [([(i, p) for i, p in enumerate(w.producers) if p.started],
               history.record_fates(K, w), history.txn_fates(K, w)) for w in states]
    assert len({id(w.producers) for w in states}) > 20 and len({id(w.partitions) for w in states}) > 20
    wrong = []

    def ask(order):
        for _ in range(5):
            for k in order:
                w = states[k]
                got = (producer.running(K, w), history.record_fates(K, w), history.txn_fates(K, w))
                if got != expect[k]:
                    wrong.append(k)
                    return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as the interpreter lets them
    try:
        n = len(states)
        threads = [threading.Thread(target=ask, args=(order,))
                   for order in (range(n), range(n - 1, -1, -1), range(0, n, 2), range(1, n, 2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not wrong, f"{len(wrong)} answers of another state's (first: state {wrong[0]})"


def test_a_memo_handed_out_is_never_changed_under_its_holder():
    """What one caller got stays its state's while another caller (another thread) asks about
    another state: the memo is replaced, never overwritten in place."""
    model = registry.bind(registry.load(None))
    K = model.params
    states = bfs_order(model, 8000)
    a = states[0]
    b = next(w for w in states if w.partitions is not a.partitions
             and history.record_fates(K, w) != history.record_fates(K, a))
    held = history._memo(K, a)
    expect = history.record_fates(K, a)
    history._memo(K, b)
    assert held[0] is a.partitions and held[1] == expect
