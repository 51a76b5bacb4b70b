"""Consume-transform-produce: the group coordinator, transactional offset commits, OffsetFetch
and rebalances. Two applications (one transactional.id each) in one group, one input record, a
rebalance that moves the input partition mid-flight. KIP-447 (2.5) fences the old owner's
TxnOffsetCommit by generation and makes OffsetFetch wait for pending offsets; before it, two
applications with different transactional.ids process the same input (exactly_once_offsets),
found here from the generic rebalance budget, not a script. (Before 2.5 exactly-once needed one
transactional.id per input partition, as Kafka Streams did.)"""
import pytest

from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.cli.check import write_traces
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka import group_coordinator
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read

TWO_APPS = {"workload.abort_transactions": False, "cluster.consumers": 0}
# No consumer and no producer restart here: those witnesses are exercised by the other configs.
CHECKED = ["txn_atomicity", "committed_writes_visible", "a_commit_happens", "lso_safety",
           "no_duplicates", "coordinator_transitions", "client_transitions",
           "no_hanging_transactions", "quiescent_completion", "exactly_once_offsets",
           "an_offset_commit_is_committed"]
CTP_RULES = {"OffsetFetch", "SendOffsetsToTransaction", "SendTxnOffsetCommit",
             "HandleTxnOffsetCommit", "ReceiveTxnOffsetCommitResponse", "Rebalance"}


def ctp(version: str, **settings):
    cfg = registry.load(resolve_config_path("ctp"),
                        overrides=TWO_APPS | {"protocol.version": version} | settings)
    return cfg, registry.bind(cfg)


@pytest.mark.parametrize("version, distinct", [("kafka-2.5", 164_642), ("latest", 814_391)])
def test_exactly_once_with_kip_447(version, distinct):
    _, model = ctp(version)
    out = explore(model, BfsOptions(properties=CHECKED))
    assert out.violations == () and out.complete
    assert out.stats.distinct == distinct
    fired = {c.name for c in out.coverage if c.fired}
    assert CTP_RULES <= fired
    assert ("SendAddPartitionsToTxn" in fired) == (version == "kafka-2.5")  # TV1 AddOffsetsToTxn
    assert ("HandleVerifyAddPartition" in fired) == (version == "latest")   # the GC verifies (TV2)


def test_before_kip_447_an_input_is_processed_twice(tmp_path):
    cfg, model = ctp("kafka-1.0")
    out = explore(model, BfsOptions(properties=["exactly_once_offsets"]))
    (v,) = out.violations
    assert v.property == "exactly_once_offsets" and len(v.path) == 47
    names = [a[0] for a in v.path.actions]
    # without generation fencing the old owner's offset commit (generation 0) is accepted after
    # the rebalance, and the new owner had fetched the old offset
    stale = [i for i, a in enumerate(v.path.actions)
             if a[0] == "HandleTxnOffsetCommit" and a[1].generation == 0]
    assert stale and stale[0] > names.index("Rebalance") > 0
    trace = read(write_traces(out, cfg, model, tmp_path)["exactly_once_offsets"])
    assert replay(trace).reproduced


def test_offset_commit_goes_with_the_outputs():
    """A committed transaction materialises its offset; an aborted one drops it and the
    application fetches the old offset again (one application, aborts allowed)."""
    _, model = ctp("kafka-2.6", **{"cluster.transactional_ids": 1, "faults.rebalances": 0,
                                   "workload.abort_transactions": True})
    out = explore(model, BfsOptions(properties=CHECKED + ["an_abort_happens"]))
    assert out.violations == () and out.stats.distinct == 455


# KAFKA-19163 (workload.simple_group): one application that assign()s the input, two input
# records, three transactions, aborts allowed (an abort before the offset commit makes it fetch
# again), no crash, and one group expiry (faults.group_expiries).
SIMPLE = {"workload.simple_group": True, "faults.rebalances": 0, "faults.group_expiries": 1,
          "cluster.transactional_ids": 1, "workload.abort_transactions": True,
          "workload.transactions_per_producer": 3, "workload.input_records": 2}


# (359,691 / 1,355,181 and 607,994 / 2,351,839 before KAFKA-18654's kept TV2 guard,
# marker_keeps_tv2_guard: a next transaction's verified batch is no longer refused; 176,574 /
# 669,679 and 200,163 / 779,631 before the coordinator's pending Complete* through the marker
# round (issue 62): a next transaction's EndTxn or verification meeting it is retried, where it
# was fenced and the application stopped, so more behaviours go on)
@pytest.mark.parametrize("version, distinct, generated", [("kafka-4.1", 254_874, 976_501),
                                                           ("kafka-4.0.2", 294_803, 1_166_778)])
def test_a_simple_group_deleted_with_only_pending_offsets_reprocesses_its_input(
        version, distinct, generated, tmp_path):
    """4.0.0 (kafka-4.1: group_expiry_ignores_pending_offsets): the group expires while its
    first offset commit is pending, the COMMIT marker materialises it under the deleted group,
    the application aborts its next transaction before committing offsets, fetches again, is
    answered no offset (the group is gone) and processes input 0 a second time. 4.0.1+
    (kafka-4.0.2) keeps the group while an offset is pending: every behaviour is exactly-once."""
    cfg, model = ctp(version, **SIMPLE)
    out = explore(model, BfsOptions(properties=["exactly_once_offsets"]))
    assert (out.stats.distinct, out.stats.generated) == (distinct, generated)
    if version == "kafka-4.0.2":
        assert out.violations == () and out.complete
        assert {c.name for c in out.coverage if c.fired} >= {"ExpireGroup", "OffsetFetch"}
        return
    (v,) = out.violations
    assert v.property == "exactly_once_offsets" and len(v.path) == 55
    names = [a[0] for a in v.path.actions]
    expired = names.index("ExpireGroup")
    states = v.path.states
    assert group_coordinator.has_pending(states[expired].partitions[-1])   # pending when deleted
    refetch = [i for i, a in enumerate(v.path.actions) if a[0] == "OffsetFetch"][-1]
    assert refetch > expired and states[refetch].group.deleted
    assert states[refetch + 1].producers[0].position == 0            # auto.offset.reset: earliest
    assert group_coordinator.committed_offset(states[refetch].partitions[-1]) == 1
    trace = read(write_traces(out, cfg, model, tmp_path)["exactly_once_offsets"])
    assert replay(trace).reproduced
