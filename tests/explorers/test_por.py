"""Partial-order reduction (explorers/reductions/por.py): the reduced search keeps every verdict of the full
one (property by property, on a toy, Kafka tiny on every preset, a preset's known violation and
every model mutant), counterexamples replay, and the independence self-check passes on the Kafka
model and catches a deliberately wrong declaration."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kafka_mc.model import registry
from kafka_mc.model.core import Capabilities, Expectation, Footprint, ModelBase, Property
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.capabilities import footprints, mutants
from kafka_mc.model.kafka.network import Rpc
from kafka_mc.model.kafka.versions import PRESETS
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.reductions.por import Reducer, sample_states, self_check
from kafka_mc.explorers.core.checking import Checks
from tests.reachable import bfs_order

F = frozenset


class Counters(ModelBase):
    """N counters counting to K, each step one increment: (K + 1) ** N states, every order of
    increments of different counters commutes. ``wrong``: Inc(1) also resets counter 0 once
    counter 1 reaches 1, but is still declared independent of counter 0."""

    name = "counters"
    capabilities = Capabilities(reduction=True)
    check_deadlock = False
    action_params = {"Inc": ("i",)}

    def __init__(self, n=3, k=3, limit=None, wrong=False, reads0=True, cyclic=False, extra=()):
        self.n, self.k, self.limit, self.wrong, self.cyclic = n, k, limit, wrong, cyclic
        reads = F([("c", 0)]) if reads0 else None
        lim = k + 1 if limit is None else limit
        self._props = (
            Property("c0_below", Expectation.ALWAYS, lambda s: s[0] < lim, reads=reads),
            Property("c0_reaches_k", Expectation.SOMETIMES, lambda s: s[0] == k, reads=reads),
            Property("all_done", Expectation.TERMINAL, lambda s: all(x == k for x in s)),
        ) + tuple(extra)
        self._table = {i: Footprint(F([("c", i)]), F([("c", i)])) for i in range(n)}

    def init_states(self):
        return [(0,) * self.n]

    def actions(self, s):
        last = self.n - 1 if self.cyclic else self.n   # a cyclic last counter never stops
        return [("Inc", i) for i in range(self.n) if s[i] < self.k or i == last]

    def step(self, s, a):
        i = a[1]
        t = s[:i] + ((s[i] + 1) % (self.k + 1),) + s[i + 1:]
        if self.wrong and i == 1 and t[1] == 1:
            t = (0,) + t[1:]
        return t

    def properties(self):
        return self._props

    def footprints(self, s):
        return self._table

    def group(self, a):
        return a[1]

    def location(self, s, loc):
        return s[loc[1]]


def verdicts(outcome):
    return sorted((v.property, v.kind) for v in outcome.violations)


def replays(model, path):
    s = path.states[0]
    assert s in list(model.init_states())
    for a, t in zip(path.actions, path.states[1:]):
        assert a in model.actions(s) and model.step(s, a) == t
        s = t


def test_counters_reduce_and_keep_verdicts():
    m = Counters()
    full, red = explore(m, BfsOptions()), explore(m, BfsOptions(por=True))
    assert full.stats.distinct == 64 and verdicts(full) == verdicts(red) == []
    assert red.stats.distinct < full.stats.distinct and red.extra["reduction"]["reduced_states"] > 0
    # the terminal state (deadlock) is reached exactly
    assert Counters(limit=2).properties()
    bad = Counters(limit=2)
    f, r = explore(bad, BfsOptions(keep_going=True)), explore(bad, BfsOptions(keep_going=True, por=True))
    assert verdicts(f) == verdicts(r) == [("c0_below", "always")]
    replays(bad, r.violations[0].path)


def test_visibility_keeps_an_order_of_two_components():
    """A property over counters 0 and 1 fails only if counter 1 moves first: both are visible to
    it, so a reduced set never holds one of them alone."""
    first = Property("c1_not_first", Expectation.ALWAYS, lambda s: not (s[1] == 1 and s[0] == 0),
                     reads=F([("c", 0), ("c", 1)]))
    m = Counters(extra=(first,))
    f = explore(m, BfsOptions(properties=["c1_not_first"]))
    r = explore(m, BfsOptions(properties=["c1_not_first"], por=True))
    assert verdicts(f) == verdicts(r) == [("c1_not_first", "always")]
    assert r.extra["reduction"]["reduced_states"] > 0


def test_the_cycle_proviso_expands_a_state_whose_reduced_successors_are_old():
    """The last counter cycles for ever without touching what the property reads: without the
    proviso the reduced search would ignore counter 0 and miss its violation."""
    m = Counters(n=2, k=2, limit=1, cyclic=True)
    f = explore(m, BfsOptions(properties=["c0_below"]))
    r = explore(m, BfsOptions(properties=["c0_below"], por=True))
    assert verdicts(f) == verdicts(r) == [("c0_below", "always")]
    replays(m, r.violations[0].path)


def test_a_property_reading_everything_turns_the_reduction_off():
    m = Counters(reads0=False)
    full, red = explore(m, BfsOptions()), explore(m, BfsOptions(por=True))
    assert red.stats.distinct == full.stats.distinct == 64
    assert red.extra["reduction"]["active"] is False


def test_a_model_without_footprints_is_not_reduced():
    m = registry.bind(registry.load(resolve_config_path("twophase")))
    full, red = explore(m, BfsOptions()), explore(m, BfsOptions(por=True))
    assert (red.stats.distinct, red.stats.generated) == (full.stats.distinct, full.stats.generated)
    assert red.extra["reduction"]["reduced_states"] == 0


def test_self_check_passes_on_a_right_declaration_and_catches_a_wrong_one():
    assert self_check(Counters(), sample_states(Counters(), 100)) == []
    wrong = Counters(wrong=True)
    kinds = {b.kind for b in self_check(wrong, sample_states(wrong, 100))}
    assert "writes" in kinds and "commute" in kinds


def kafka(preset="latest", **overrides):
    return registry.bind(registry.load(resolve_config_path("tiny"),
                                       overrides={"protocol.version": preset, **overrides}))


@pytest.mark.parametrize("preset", ["kafka-0.11", "kafka-2.7", "kafka-3.6", "kafka-4.2", "latest"])
def test_kafka_self_check(preset):
    m = kafka(preset)
    assert self_check(m, sample_states(m, 400, seed=7)) == []


@pytest.mark.parametrize("preset", ["kafka-4.1", "kafka-4.0.2"])
def test_kafka_self_check_simple_group(preset):
    """A simple group (workload.simple_group) whose group can expire (ExpireGroup: reads the
    group and the offsets partition's log, writes the group), with and without KAFKA-19163."""
    m = registry.bind(registry.load(resolve_config_path("ctp"), overrides={
        "protocol.version": preset, "workload.simple_group": True, "faults.rebalances": 0,
        "faults.group_expiries": 1, "cluster.transactional_ids": 1,
        "cluster.producers_per_id": 2, "faults.producer_crashes": 1,
        "workload.transactions_per_producer": 2, "workload.input_records": 2}))
    states = sample_states(m, 400, seed=7)
    assert any(a[0] == "ExpireGroup" for s in states for a in m.actions(s))
    assert any(s.group.deleted for s in states)
    assert self_check(m, states) == []


@pytest.mark.parametrize("faults", [{"faults.coordinator_failovers": 1},
                                    {"faults.request_duplicates": 1, "faults.request_losses": 1}])
def test_kafka_self_check_with_delays(faults):
    """Where a request can be held back (a later message behind it on its connection): every
    reachable state (a few thousand), some of which can hold one back, keeps the declaration."""
    m = kafka(**{"faults.request_delays": 1, "faults.producer_crashes": 0}, **faults)
    states, todo = set(m.init_states()), list(m.init_states())
    while todo:
        for a in m.actions(s := todo.pop()):
            if (t := m.step(s, a)) not in states:
                states.add(t)
                todo.append(t)
    states = sorted(states, key=repr)
    assert any(a[0] == "DelayRequest" for s in states for a in m.actions(s))
    assert self_check(m, states) == []


@pytest.mark.parametrize("preset", ["kafka-3.8", "latest"])
def test_kafka_self_check_with_batches_in_flight(preset):
    """Two batches in flight to a partition (workload.max_in_flight): batches kept to retry
    (``reenqueued``) and resent by the Sender, sequences changed by a failed batch, the leader's
    window and lowest sequence; every reachable state keeps the declaration."""
    m = kafka(preset, **{"workload.max_in_flight": 2, "workload.records_per_transaction": 2,
                         "cluster.producers_per_id": 1, "faults.producer_crashes": 0,
                         "faults.request_losses": 1, "faults.transaction_timeouts": 1,
                         "faults.total": 1})
    states, todo = set(m.init_states()), list(m.init_states())
    while todo:
        for a in m.actions(s := todo.pop()):
            if (t := m.step(s, a)) not in states:
                states.add(t)
                todo.append(t)
    states = sorted(states, key=repr)
    assert any(p.reenqueued for s in states for p in s.producers)
    assert any(p.resequenced for s in states for p in s.producers)
    assert self_check(m, states) == []


@pytest.mark.parametrize("preset", ["kafka-2.6", "kafka-3.6", "kafka-4.2", "latest"])
def test_kafka_same_verdicts_where_a_request_can_be_held_back(preset):
    m = kafka(preset, **{"faults.request_delays": 1, "faults.producer_crashes": 0,
                         "faults.coordinator_failovers": 1})
    full = explore(m, BfsOptions(keep_going=True))
    red = explore(m, BfsOptions(keep_going=True, por=True))
    assert "DelayRequest" not in full.never_enabled
    assert verdicts(full) == verdicts(red)


def _alike_twins(model, limit):
    """(state, twin): reachable states with a response whose error has another its client
    handles alike (footprints.ALIKE), and the state with that other error."""
    classes: dict = {}
    for (rpc, e), first in footprints.ALIKE.items():
        classes.setdefault(rpc, {}).setdefault(first, {first}).add(e)
    for s in bfs_order(model, limit):
        for i, m in enumerate(s.network):
            for members in classes.get(m.rpc, {}).values() if m.rpc & 1 else ():
                for e in sorted(members - {m.error}) if m.error in members else ():
                    net = s.network[:i] + (m._replace(error=e),) + s.network[i + 1:]
                    yield s, s._replace(network=net)


def _alike(x):
    """An action's or a message's arguments with each response error as its class's first."""
    if isinstance(x, tuple) and hasattr(x, "rpc") and x.rpc & 1:
        return x._replace(error=footprints.ALIKE.get((x.rpc, x.error), x.error))
    return tuple(map(_alike, x)) if type(x) is tuple else x


@pytest.mark.parametrize("config, settings, rpcs", [
    ("medium", {}, {"InitProducerIdResponse", "EndTxnResponse"}),
    ("tiny", {"cluster.partitions": 2, "faults.request_duplicates": 1,
              "faults.response_losses": 1, "faults.producer_crashes": 0,
              "faults.request_delays": 0, "faults.transaction_timeouts": 0},
     {"ProduceResponse"})])
def test_responses_handled_alike_are_bisimilar(config, settings, rpcs):
    """The reduction view merges states whose responses differ only in errors their client
    handles alike (footprints.ALIKE): a state and its twin have the same view, every property
    the same verdict, and their steps pair up (the same action up to that error) with the same
    view after them and the same transition verdicts."""
    model = registry.bind(registry.load(resolve_config_path(config), overrides=settings))
    view = model.reduction_view
    props = model.properties()
    always = [p for p in props if p.expectation is Expectation.ALWAYS]
    transition = [p for p in props if p.expectation is Expectation.TRANSITION]
    met = set()
    for s, twin in _alike_twins(model, 6000):
        met |= {type(m).__name__ for m in s.network if m not in twin.network}
        assert view(s) == view(twin)
        assert [p.holds(s) for p in always] == [p.holds(twin) for p in always]
        steps = [sorted(((repr(_alike(a)), view(t), [p.holds(x, a, t) for p in transition])
                         for a, t in model.successors(x)), key=lambda z: z[0])
                 for x in (s, twin)]
        assert steps[0] == steps[1]
    assert rpcs <= met


def test_responses_handled_alike_have_one_canonical_view():
    """With symmetry the canonical form is taken of the reduction view: a state and its twin
    (footprints.ALIKE) get the same canonical view even where the leaders tie and the orbit's
    representative is chosen by fingerprint, so the remembered key of a state does not depend
    on which twin a search (or a worker) met first (with the canonical form of the state, 520 of
    7,733 twins here had different keys, and medium counted 1,911,205 states with 3 workers and
    1,911,208 with 2)."""
    model = registry.bind(registry.load(resolve_config_path("medium"),
                                        overrides={"check.symmetry": True}))
    twins = list(_alike_twins(model, 20000))
    assert len(twins) > 1000
    view = model.reduction_view
    assert all(view(s) == view(twin) for s, twin in twins)


@pytest.mark.parametrize("n", [2, 3])
def test_the_reduction_view_orders_connections_and_keeps_each_fifo(n):
    """Two (or three) messages of different connections give one view in either order, and two
    on one connection keep theirs (a later batch must not overtake an earlier one); a network
    already in connection order is the state itself."""
    from kafka_mc.model.kafka.network import Produce, WriteTxnMarkers
    from kafka_mc.model.kafka.world import Rpc
    model = kafka()
    view, w = model.reduction_view, next(iter(model.init_states()))
    first, later = (Produce(Rpc.Produce, 0, 1, 0, 0, seq, 0, seq) for seq in (0, 1))
    other = [WriteTxnMarkers(Rpc.WriteTxnMarkers, 0, 0, 0, 0, True, 0)][:n - 2]
    same = [w._replace(network=tuple(net)) for net in ([first, later] + other,
                                                       other + [first, later])]
    assert view(same[0]) == view(same[1])
    assert [m for m in view(same[0]).network if m in (first, later)] == [first, later]
    assert view(w._replace(network=(later, first))).network == (later, first)
    apart = w._replace(network=(first, *other, Produce(Rpc.Produce, 0, 0, 0, 0, 0, 0, 0)))
    assert view(apart) == view(apart._replace(network=apart.network[::-1]))
    ordered = view(same[0])
    assert view(ordered) is ordered


def test_kafka_self_check_catches_a_wrong_declaration(monkeypatch):
    """Fetch declared as not reading its partition: a leader's append changes what it can read."""
    m = kafka()
    build = footprints.Layout._build

    def wrong(self, *args):
        table = dict(build(self, *args))
        for g, f in table.items():
            if g[0] == "Fetch":
                table[g] = Footprint(f.reads - {("L", g[2])}, f.writes)
        return table

    monkeypatch.setattr(footprints.Layout, "_build", wrong)
    monkeypatch.setattr(footprints, "_LAYOUTS", {})
    breaches = self_check(m, sample_states(m, 600, seed=7))
    assert any(b.kind == "reads" and "Fetch" in b.detail for b in breaches)


def test_kafka_self_check_catches_a_group_missing_from_footprints_anywhere(monkeypatch):
    """``footprints_anywhere`` leaving out the consumer's Fetch groups (which would let a search
    skip the stubborn sets when the checked properties read only what the others write)."""
    m = kafka()
    anywhere = footprints.Layout.anywhere
    monkeypatch.setattr(footprints.Layout, "anywhere", lambda self: {
        g: f for g, f in anywhere(self).items() if g[0] != "Fetch"})
    monkeypatch.setattr(footprints, "_LAYOUTS", {})
    breaches = self_check(m, sample_states(m, 200, seed=7))
    assert any(b.kind == "anywhere" and "Fetch" in b.detail for b in breaches)


def test_every_action_visible_skips_the_stubborn_sets_and_keeps_the_counts():
    """With every property checked, every Kafka group writes what one of them reads
    (``footprints_anywhere``): no stubborn set is computed, and the reduced search is the one it
    was (the full set everywhere, deduplicated on the reduction view); with one property the
    sets are computed."""
    m = kafka("kafka-3.6")
    every = Reducer(m, Checks(m, None))
    assert every.all_visible and not every.enabled
    red = explore(m, BfsOptions(por=True))   # (the full search: 37,582 states)
    assert (red.stats.distinct, red.stats.generated) == (28573, 87049)
    assert red.extra["reduction"] == {"partial_order": True, "active": False,
                                      "every_action_visible": True, "reduced_states": 0}
    one = Reducer(m, Checks(m, ["txn_atomicity"]))
    assert one.enabled and not one.all_visible


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_kafka_tiny_same_verdicts_on_every_preset(preset):
    m = kafka(preset)
    full = explore(m, BfsOptions(keep_going=True))
    red = explore(m, BfsOptions(keep_going=True, por=True))
    assert verdicts(full) == verdicts(red)
    assert red.stats.distinct <= full.stats.distinct
    for v in red.violations:
        replays(m, v.path)


@pytest.mark.parametrize("prop", ["txn_atomicity", "zombie_fencing", "no_hanging_transactions",
                                  "a_commit_happens"])
def test_kafka_tiny_same_verdict_per_property_with_the_reduction_active(prop):
    m = kafka("kafka-0.11")
    full = explore(m, BfsOptions(properties=[prop]))
    red = explore(m, BfsOptions(properties=[prop], por=True))
    assert verdicts(full) == verdicts(red)


def test_a_presets_known_violation_is_found_reduced():
    m = kafka("kafka-0.11")
    red = explore(m, BfsOptions(properties=["no_hanging_transactions"], por=True))
    assert verdicts(red) == [("no_hanging_transactions", "always")]
    replays(m, red.violations[0].path)


# The safety mutants: a reduced search preserves safety verdicts (a liveness mutant is the graph
# explorer's, tests/explorers/test_graph.py).
SAFETY_MUTANTS = [m for m in mutants.MUTANTS if m.invariant != "eventual_completion"]


@pytest.mark.parametrize("mut", SAFETY_MUTANTS, ids=[x.name for x in SAFETY_MUTANTS])
def test_every_mutant_is_caught_reduced(mut):
    cfg = registry.load(resolve_config_path("tiny"), overrides=mut.settings | {"model.mutant": mut.name})
    m = registry.bind(cfg)
    red = explore(m, BfsOptions(properties=[mut.invariant], por=True))
    assert [v.property for v in red.violations] == [mut.invariant]
    replays(m, red.violations[0].path)


def test_the_reducer_never_returns_an_empty_set_for_a_live_state():
    m = kafka("latest")
    r = Reducer(m, Checks(m, ["txn_atomicity"]))
    for s in sample_states(m, 300, seed=3):
        acts, _ = r.reduce(s)
        assert bool(acts) == bool(m.actions(s))


def test_cli_por_flag_and_config_key(tmp_path, capsys):
    from kafka_mc.explorers import cli
    import json

    out = str(tmp_path / "out")
    assert cli.main(["check", "tiny", "--protocol", "kafka-0.11", "--invariant",
                     "no_hanging_transactions", "--por", "--json", "--out", out]) == 12
    doc = json.loads(capsys.readouterr().out)
    assert doc["reduction"]["partial_order"] is True
    cfg = tmp_path / "c.toml"
    cfg.write_text(open(resolve_config_path("tiny")).read() + '\n[check]\npor = true\n')
    assert cli.main(["check", str(cfg), "--invariant", "txn_atomicity", "--out", out]) == 0
    text = capsys.readouterr().out
    flat = " ".join(text.split())        # (lines are wrapped within COLUMNS)
    assert "partial-order reduction:" in flat and "shortest within the reduced graph" in flat
    # on by default (unset), off with --no-por, [check] por = false or a depth bound
    assert cli.main(["check", "tiny", "--out", out]) == 0
    assert "partial-order reduction:" in capsys.readouterr().out
    for off in (["--no-por"], ["--set", "check.por=false"], ["--depth", "5"]):
        assert cli.main(["check", "tiny", *off, "--out", out]) == 0
        assert "partial-order" not in capsys.readouterr().out
    assert cli.main(["check", "tiny", "--depth", "5", "--por", "--out", out]) == 0
    assert "partial-order reduction:" in capsys.readouterr().out
    assert cli.main(["check", "tiny", "--por", "--no-por", "--out", out]) == 2


def test_cli_por_with_spark_is_the_reduced_bfs(tmp_path):
    """``--explorer spark --por`` (a real local Spark session): the reduced BFS's counts."""
    def run(*extra):
        r = subprocess.run([sys.executable, "-m", "kafka_mc.explorers.cli", "check", "tiny", "--protocol",
                            "kafka-3.6", "--invariant", "txn_atomicity", "--por", "--json",
                            "--out", str(tmp_path), *extra], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()})
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        return doc["stats"]["distinct"], doc["stats"]["generated"], doc["reduction"]

    assert run("--explorer", "spark") == run() == (27071, 73372, {
        "partial_order": True, "active": True, "every_action_visible": False,
        "reduced_states": 10120})


def test_reduced_counts_are_pinned_and_deterministic():
    """Same configuration, same reduced graph (the stubborn set depends on the enabled groups
    only, ties broken by name); the reduction view alone merges network orders."""
    m = kafka("kafka-3.6")
    runs = [explore(m, BfsOptions(properties=["txn_atomicity"], por=True)) for _ in range(2)]
    assert [(o.stats.distinct, o.stats.generated) for o in runs] == [(27071, 73372)] * 2
    assert runs[0].extra["reduction"]["reduced_states"] == 10120


# --- with symmetry reduction (model.canonical.with_symmetry canonicalises the reduction view) -------

def kafka_two_partitions(preset, symmetry):
    """tiny with two partitions: the partitions are interchangeable (a group of order 2)."""
    return registry.bind(registry.load(resolve_config_path("tiny"), overrides={
        "protocol.version": preset, "cluster.partitions": 2, "check.symmetry": symmetry}))


@pytest.mark.parametrize("preset", ["kafka-0.11", "kafka-3.6", "latest"])
def test_symmetry_and_the_reduction_together_keep_every_verdict(preset):
    full = explore(kafka_two_partitions(preset, False), BfsOptions(keep_going=True))
    m = kafka_two_partitions(preset, True)
    both = explore(m, BfsOptions(keep_going=True, por=True))
    assert verdicts(full) == verdicts(both)
    assert both.stats.distinct * 2 <= full.stats.distinct
    for v in both.violations:
        replays(m, v.path)


def test_symmetry_and_the_reduction_compose_with_the_reduction_active():
    """With one property the stubborn sets reduce, and the orbits of reduction views are fewer
    than either reduction's alone (the reduction view is canonicalised, the proviso checked on
    canonical keys)."""
    def run(preset, prop, symmetry, por):
        o = explore(kafka_two_partitions(preset, symmetry), BfsOptions(properties=[prop], por=por))
        return o.stats.distinct, o.stats.generated, [(v.property, len(v.path)) for v in o.violations]

    assert run("kafka-3.6", "txn_atomicity", False, False) == (141643, 464338, [])
    assert run("kafka-3.6", "txn_atomicity", False, True) == (99196, 275442, [])
    assert run("kafka-3.6", "txn_atomicity", True, False) == (53237, 168540, [])
    assert run("kafka-3.6", "txn_atomicity", True, True) == (49685, 137895, [])
    # kafka-0.11's hanging transaction and aborted writes read back, found under both
    for prop, steps in (("no_hanging_transactions", 19), ("aborted_writes_stay_aborted", 42)):
        m = kafka_two_partitions("kafka-0.11", True)
        o = explore(m, BfsOptions(properties=[prop], por=True))
        assert [(v.property, len(v.path)) for v in o.violations] == [(prop, steps)]
        replays(m, o.violations[0].path)


def test_cli_por_and_symmetry_with_spark_is_the_reduced_bfs(tmp_path):
    """``--por --symmetry`` under a real local Spark session: the BFS's counts."""
    def run(*extra):
        r = subprocess.run([sys.executable, "-m", "kafka_mc.explorers.cli", "check", "tiny", "--protocol",
                            "kafka-3.6", "--set", "cluster.partitions=2", "--invariant",
                            "txn_atomicity", "--por", "--symmetry", "--json", "--out",
                            str(tmp_path), *extra], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()})
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        return (doc["stats"]["distinct"], doc["stats"]["generated"],
                doc["reduction"]["reduced_states"], doc["symmetry"]["order"])

    assert run("--explorer", "spark") == run() == (49685, 137895, 19116, 2)


def test_kafka_self_check_bounce():
    """BounceCoordinator (kafka-3.6, conformance #15) keeps the coordinator epoch and takes the
    markers on the wire and their answers off every marker connection: its declaration holds
    on the states it is taken in with markers, held-back messages or answers in flight, and on
    the states it leads to."""
    from tests.model.test_faults import _recording as recording
    m = kafka("kafka-3.6", **{"faults.coordinator_failovers": 1, "faults.request_delays": 1,
                              "faults.producer_crashes": 0})

    def wire(s, a, t):
        return a[0] == "BounceCoordinator" and any(
            x.rpc in (Rpc.WriteTxnMarkers, Rpc.WriteTxnMarkersResponse)
            for x in s.network + s.delayed)
    seen = recording(m, wire)
    explore(m, BfsOptions(keep_going=True))
    assert len(seen) == 18
    assert any(x.disconnected for _, _, t in seen for x in t.delayed)
    assert self_check(m, [s for s, _, _ in seen] + [t for _, _, t in seen]) == []
