"""The symbolic model of Kafka's fencing core (model/kafka/symbolic.py) held to the explicit
model: every step of tiny and small explicit configurations, projected onto the symbolic
variables, is admitted by the symbolic relation; a one-line change to either side breaks it."""
from dataclasses import replace

import pytest
import z3

from kafka_mc.explorers.symbolic.checker import admitted, explicit_steps
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path

# tiny plus every fault kind the symbolic model has an action for (one fault per execution)
SMALL = {"faults.transaction_timeouts": 1, "faults.coordinator_failovers": 1,
         "faults.transactional_id_expirations": 1, "faults.producer_state_losses": 1,
         "faults.request_duplicates": 1, "faults.total": 1}


def bound(**overrides):
    cfg = registry.load(resolve_config_path("tiny"), overrides=list(overrides.items()))
    model = registry.bind(cfg)
    return model, model.symbolic()


def flat(**kw):
    return {k.replace("__", "."): v for k, v in kw.items()}


@pytest.fixture(scope="module")
def tiny_latest():
    model, system = bound()
    return system, explicit_steps(model, system)


def test_every_step_of_tiny_latest_is_admitted(tiny_latest):
    system, (states, steps) = tiny_latest
    assert (states, len(steps)) == (16420, 584)
    assert admitted(system, steps) == []


@pytest.mark.parametrize("version, states, steps", [("kafka-2.6", 19795, 295)])
def test_every_step_of_a_small_tv1_config_is_admitted(version, states, steps):
    model, system = bound(**flat(protocol__version=version), **SMALL)
    n, projected = explicit_steps(model, system)
    assert (n, len(projected)) == (states, steps)
    assert admitted(system, projected) == []


def test_a_one_line_change_to_the_symbolic_relation_is_caught(tiny_latest):
    """Produce no longer opening a transaction at the leader (``set_leader(k, rp, re, False)``
    in ``produce``): the explicit leader's first batch opens one."""
    system, (_, steps) = tiny_latest
    produce = [a for a in system.actions if a.name == "Produce"]

    def strict(a):
        def rel(v, p, w):
            k = dict(a.args)["partition"]
            return z3.And(a.relation(v, p, w), z3.Not(w[f"leader{k}.open"]))
        return replace(a, relation=rel)

    broken = replace(system, actions=tuple(strict(a) if a in produce else a
                                           for a in system.actions))
    failures = admitted(broken, steps)
    assert failures and {f[1][0] for f in failures} == {"Produce"}


def test_a_model_mutant_is_caught():
    """The explicit coordinator completing EndTxn from a fenced epoch (mutants.py) takes steps
    the symbolic relation does not admit."""
    model, system = bound(**flat(protocol__version="kafka-2.6",
                                 model__mutant="end-txn-skips-epoch-check"))
    _, steps = explicit_steps(model, system)
    failures = admitted(system, steps)
    assert failures and {f[1][0] for f in failures} == {"EndTxn"}


def test_a_changed_version_flag_is_caught(tiny_latest):
    """The symbolic model built for TV1 (transaction_version = 1) does not admit latest's TV2
    steps: EndTxn bumps the epoch there."""
    model, _ = bound()
    system, (_, steps) = tiny_latest
    from kafka_mc.model.kafka import symbolic
    tv1 = symbolic.build(model.params.features._replace(transaction_version=1), 2, 1,
                         model.params.budgets._asdict())
    assert {f[1][0] for f in admitted(tv1, steps)} >= {"EndTxn"}
