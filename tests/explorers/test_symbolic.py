"""The symbolic explorer (explorers/symbolic/checker.py) on the Kafka fencing core: proofs for every
epoch value on latest, counterexamples on the broken variants and on 0.11 (KAFKA-6119), the
counterexample to induction put back to the explicit model, and the command line."""
import json

import pytest

from kafka_mc.explorers import cli
from kafka_mc.explorers.symbolic.checker import bmc, explicit_witness, prove
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path

TIMEOUTS = {"faults.transaction_timeouts": 1}


def bound(**overrides):
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides=[(k.replace("__", "."), v) for k, v in overrides.items()])
    model = registry.bind(cfg)
    return model, model.symbolic()


def test_latest_fencing_core_is_proved_for_every_epoch():
    _, system = bound()
    r = prove(system, 1)
    assert (r.verdict, r.depth) == ("proved", 1)
    assert "holders_behind_coordinator" in r.auxiliary and "ongoing_below_max" in r.auxiliary


def test_without_rotation_the_epoch_wraps():
    """The epoch bumped past Short.MaxValue: from a state one bump from it, the next
    InitProducerId writes -32,768."""
    _, system = bound(symbolic__variant="no_rotation")
    r = bmc(system, 2)   # the first claim in the model's order that fails at depth 1
    assert (r.verdict, r.depth, r.claim_name) == ("counterexample", 1, "fence_bumps_epoch")
    overflow = [c for c in system.properties if c.name == "no_epoch_overflow"]
    r = bmc(system, 2, claims=overflow)
    assert (r.verdict, r.depth, r.claim_name) == ("counterexample", 1, "no_epoch_overflow")
    assert r.path.states[1]["append.producerEpoch"] == -32768
    assert r.path.states[0]["txn.producerEpoch"] == 32767


def test_a_counterexample_reads_with_small_ids_and_epochs():
    """z3's first model has any 64-bit producer ids and 16-bit epochs the constraints allow
    (producerId=3734684484376247549, producerEpoch=32719); the path reported has each value as
    near zero as they allow, -1 (none) first: here the one producer id the coordinator gave out
    is 0, the next is 1, and only the epoch the overflow needs is large."""
    _, system = bound(symbolic__variant="no_rotation")
    r = bmc(system, 2)
    first = r.path.states[0]
    ids = {name: v for name, v in first.items() if name.endswith("roducerId")}
    epochs = {name: v for name, v in first.items() if name.endswith("Epoch")}
    assert set(ids.values()) <= {-1, 0, 1}, ids
    assert first["nextProducerId"] == 1
    assert {name for name, v in epochs.items() if v not in (-1, 0)} <= {
        "txn.producerEpoch", "log.producerEpoch"}, epochs
    assert first["txn.producerEpoch"] == 32767


def test_kafka_9666_fence_bumps_reach_exhaustion():
    """KAFKA-9666 (before 2.6): each failed fence append leaves its bump and the next timeout
    bumps again, up to the wrap; without failed fences (the 2.6 fix) nothing wraps."""
    _, broken = bound(protocol__version="kafka-2.5", symbolic__variant="fence_retry_bump",
                      **{k.replace(".", "__"): v for k, v in TIMEOUTS.items()})
    r = bmc(broken, 3)
    # the wrapped fence breaks both claims in one step; either may be reported
    assert (r.verdict, r.depth) == ("counterexample", 2)
    assert r.claim_name in ("no_epoch_overflow", "fence_bumps_epoch")
    # (which bump wraps second, a timeout's or an InitProducerId's, is z3's choice: it depends on
    # the queries the process made before; each CLI run is its own process and repeats itself)
    assert r.path.steps[0].action == "FailedFenceAppend"
    assert -32768 in [value for name, value in r.path.states[2].items() if name.endswith("Epoch")]
    _, fixed = bound(protocol__version="kafka-2.6", faults__transaction_timeouts=1)
    assert bmc(fixed, 2).verdict == "bounded"


def test_kafka_0_11_fence_does_not_bump_and_the_cti_is_reachable():
    """KAFKA-6119: on 0.11 the abort that fences an Ongoing transaction carries the epoch its
    producer holds. Induction fails on it, and the explicit model reaches such a step."""
    model, system = bound(protocol__version="kafka-0.11", faults__transaction_timeouts=1)
    r = bmc(system, 1)
    assert (r.verdict, r.claim_name) == ("counterexample", "fence_bumps_epoch")
    cti = prove(system, 1)
    assert (cti.verdict, cti.claim_name) == ("unknown", "fence_bumps_epoch")
    states, witness = explicit_witness(model, system, "fence_bumps_epoch")
    assert witness is not None and witness[1][0] in ("ExpireTransaction", "HandleInitProducerId")
    _, fixed = bound(protocol__version="kafka-1.0", faults__transaction_timeouts=1)
    assert bmc(fixed, 1).verdict == "bounded"


def test_cli_counterexample_trace_and_its_refusal_by_replay(tmp_path, capsys):
    code = cli.main(["check", "tiny", "--explorer", "symbolic", "--depth", "2",
                     "--set", "symbolic.variant=no_rotation", "--invariant", "no_epoch_overflow",
                     "--out", str(tmp_path)])
    assert code == 12
    out = capsys.readouterr().out
    assert "counterexample at depth 1: no_epoch_overflow" in out
    trace = tmp_path / "no_epoch_overflow.itf.json"
    doc = json.loads(trace.read_text())
    assert doc["#meta"]["explorer"] == "symbolic" and "txn.producerEpoch" in doc["vars"]
    assert doc["states"][1]["append.producerEpoch"] == -32768
    for command in ("replay", "render", "minimize"):
        assert cli.main([command, str(trace)]) == 2
        err = capsys.readouterr().err
        assert "a symbolic trace" in err and len(err.strip().splitlines()) == 1


def test_cli_unknown_writes_the_counterexample_to_induction(tmp_path, capsys):
    code = cli.main(["check", "tiny", "--explorer", "symbolic", "--protocol", "kafka-0.11",
                     "--set", "faults.transaction_timeouts=1", "--out", str(tmp_path)])
    assert code == 14
    assert "unknown: induction failed" in capsys.readouterr().out
    assert json.loads((tmp_path / "fence_bumps_epoch.cti.itf.json").read_text())[
        "#meta"]["kind"] == "cti"


@pytest.mark.parametrize("argv, message", [
    (["--explorer", "symbolic", "--set", "cluster.transactional_ids=2"], "one transactional.id"),
    (["--explorer", "symbolic", "--invariant", "nope"], "unknown symbolic property"),
    (["--explorer", "bfs", "--induction", "2"], "--induction does not apply"),
])
def test_cli_usage_errors(tmp_path, capsys, argv, message):
    assert cli.main(["check", "tiny", *argv, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_a_leader_losing_producer_state_keeps_the_core_proved():
    """LoseProducerState leaves an older producer id's entry, one the coordinator issued (or
    none): without that constraint induction failed on it (an entry with epoch -32,768)."""
    _, system = bound(faults__producer_state_losses=1)
    assert any(a.name == "LoseProducerState" for a in system.actions)
    assert prove(system, 1).verdict == "proved"


def test_ctrl_c_during_a_z3_check_is_the_interrupt():
    """Issue 48 (round 2's fuzz suite): z3 catches Ctrl-C during a check itself, answers unknown
    and Python never sees the signal; read as "no model", the search went on to the next depth
    (a k-induction ran a minute more and said "proved", exit 0). Now it is the interrupt."""
    import os
    import signal
    import threading

    import z3

    from kafka_mc.explorers.core import interrupts
    from kafka_mc.explorers.symbolic import checker

    holes = z3.Ints(" ".join(f"h{i}" for i in range(40)))   # 40 pigeons, 39 holes: hard
    solver = z3.Solver()
    solver.add(z3.Distinct(holes), *[z3.And(h >= 0, h < 39) for h in holes])
    previous = signal.signal(signal.SIGINT, lambda *a: None)   # a late one must not stop pytest
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            checker._check(solver)
        assert interrupts.asked()
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        interrupts.clear()
