"""A real run's plan: the same config and seed give the same plan, budgets are upper bounds, and a
config the harness cannot run is refused in one line."""
import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.realkafka.plan import PlanError, make_plan


def config(name="tiny", **sets):
    return registry.load(resolve_config_path(name), overrides=list(sets.items()))


def test_the_same_seed_gives_the_same_plan_bytes():
    cfg = config(**{"faults.request_delays": 2, "faults.coordinator_failovers": 1})
    assert make_plan(cfg, 7).to_json() == make_plan(cfg, 7).to_json()
    assert len({make_plan(cfg, s).to_json() for s in range(20)}) > 5


def test_tiny_plans_one_transactional_id_and_a_crash_only_within_the_budget():
    cfg = config()
    plans = [make_plan(cfg, s) for s in range(30)]
    for p in plans:
        assert {i.tid for i in p.instances} == {0}
        crashed = [i for i in p.instances if i.crash]
        assert len(crashed) <= 1 and len(p.instances) == len(crashed) + 1
        assert all(len(i.txns) == 1 and len(i.txns[0].partitions) == 1 for i in p.instances)
    assert any(i.crash for p in plans for i in p.instances)            # the budget is spent ...
    assert any(not any(i.crash for i in p.instances) for p in plans)   # ... or not


def test_network_faults_aim_at_transactional_requests_tv2_has_no_add_partitions():
    cfg = config("two-transactions", **{"faults.request_delays": 3, "faults.request_losses": 3,
                                        "faults.response_losses": 3, "faults.request_duplicates": 3})
    apis = {f.api for s in range(40) for f in make_plan(cfg, s, transaction_version=2).network}
    assert "AddPartitionsToTxn" not in apis and {"EndTxn", "Produce"} <= apis
    apis1 = {f.api for s in range(40) for f in make_plan(cfg, s, transaction_version=1).network}
    assert "AddPartitionsToTxn" in apis1
    kinds = {f.kind for s in range(40) for f in make_plan(cfg, s).network}
    assert kinds == {"delay", "duplicate", "drop-request", "drop-response"}


@pytest.mark.parametrize("sets, message", [
    ({"faults.batch_expiries": 1}, "faults.batch_expiries cannot be injected"),
    ({"faults.producer_state_losses": 1}, "faults.producer_state_losses cannot be injected"),
    ({"workload.consume_transform_produce": True}, "consume_transform_produce"),
    ({"workload.max_in_flight": 2}, "workload.max_in_flight > 1 is not run"),
])
def test_a_config_the_harness_cannot_run_is_refused(sets, message):
    with pytest.raises(PlanError, match=message):
        make_plan(config(**sets), 0)


def test_another_model_is_refused():
    with pytest.raises(PlanError, match="not model 'twophase'"):
        make_plan(config("twophase"), 0)
