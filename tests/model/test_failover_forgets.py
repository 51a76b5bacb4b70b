"""What a coordinator failover forgets (issue 46 item 3): TransactionLog.valueToBytes never writes
lastProducerEpoch and readTxnRecord reads it back as NO_PRODUCER_EPOCH in every version since
KIP-360 (4.4 and trunk included). The flag ``forget_last_producer_epoch`` (on no preset yet: it
moves the pinned counts) makes a reload forget it, so a KIP-360 InitProducerId(producer id,
epoch) retried after its response was lost and the coordinator failed over is fenced, where the
model with the flag off answers it as the retry of a completed bump."""
from tests.model.test_faults import _recording as recording

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.world import Errors, Rpc
from kafka_mc.explorers.bfs.search import explore

SETTINGS = {"protocol.version": "kafka-3.6", "cluster.producers_per_id": 1,
            "faults.producer_crashes": 0, "faults.batch_expiries": 1, "faults.response_losses": 1,
            "faults.coordinator_failovers": 1, "faults.total": 3}


def _bump_fenced(s, a, t):
    """A KIP-360 InitProducerId (it carries the client's producer id) answered fenced."""
    return (a[0] == "HandleInitProducerId" and a[1].producer_id != -1
            and any(r.rpc == Rpc.InitProducerIdResponse
                    and r.error in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH)
                    for r in t.network if r not in s.network))


def test_a_failover_forgets_last_producer_epoch_and_a_bump_retry_is_fenced():
    counts = {}
    for flag in (False, True):
        model = registry.bind(registry.load(resolve_config_path("tiny"), overrides={
            **SETTINGS, "protocol.forget_last_producer_epoch": flag}))
        fenced = recording(model, _bump_fenced)
        out = explore(model)
        assert out.exit_code == 0, out.violations
        counts[flag] = (out.stats.distinct, out.stats.generated, out.stats.depth), bool(fenced)
        for s, a, t in fenced:
            assert s.budgets.coordinator_failovers == 0    # only after the failover (on
            # kafka-3.6 a bounce too, at the same coordinator epoch: conformance #15)
    assert counts == {False: ((111024, 378592, 35), False), True: ((113155, 383152, 35), True)}
