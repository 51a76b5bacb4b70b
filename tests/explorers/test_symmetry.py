"""Symmetry reduction (issue 22): reduced counts on TwoPhase against orbits counted by brute force,
the Kafka model's declared permutations confirmed to be automorphisms (and wrong declarations
caught), reduced Kafka counts, the same verdicts and shortest counterexample lengths with and
without it on the historical bugs, concrete replayable traces, and the CLI's refusals."""
from __future__ import annotations

import json
import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import ConfigError, resolve_config_path
from kafka_mc.model.canonical import with_symmetry
from kafka_mc.model.symmetry import group_elements, group_order
from kafka_mc.model.kafka.capabilities import symmetry as kafka_symmetry
from kafka_mc.model.kafka.versions import PRESETS
from kafka_mc.model.protocol import Rule
from kafka_mc.model.toys import twophase
from kafka_mc.explorers import cli
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.core.adapter import successors_of
from kafka_mc.explorers.reductions.symmetry_check import self_check
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import Trace, from_document, trace_metadata
from tests.presets import PINNED


def kafka(*, symmetry=False, **settings):
    return registry.load(resolve_config_path("tiny"), overrides={**settings,
                                                                 "check.symmetry": symmetry})


def reachable(model) -> set:
    """Every reachable state of the unreduced model (small configurations only)."""
    succ, seen = successors_of(model), set(model.init_states())
    frontier = list(seen)
    while frontier:
        nxt = []
        for s in frontier:
            for _, t in succ(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return seen


def run(cfg):
    return explore(registry.bind(cfg))


def verdict(outcome):
    return [(v.property, v.kind, len(v.path)) for v in outcome.violations]


# --- TwoPhase: the reduced state graph has one state per orbit --------------------------------------

def twophase_orbits(n: int) -> int:
    """Orbits of the reachable TwoPhase states under renaming the RMs, counted without the
    model's symmetry code: a state's orbit is its TM part with the multiset of its RMs'
    (state, tmPrepared, Prepared message) triples."""
    L = twophase.Layout(n)
    full = registry.bind(registry.load(model="twophase", overrides={"model.resource_managers": n}))
    keys = {(s >> L.tm & 3, s >> L.mc & 1, s >> L.ma & 1,
             tuple(sorted((L.rm(s, r), L.flag(s, L.tmp, r), L.flag(s, L.mp, r)) for r in L.rms)))
            for s in reachable(full)}
    return len(keys)


@pytest.mark.parametrize("n, orbits", [(1, 12), (2, 34), (3, 80), (4, 166), (5, 314)])
def test_twophase_reduced_count_is_the_number_of_orbits(n, orbits):
    assert twophase_orbits(n) == orbits
    cfg = registry.load(model="twophase", overrides={"model.resource_managers": n,
                                                     "check.symmetry": True})
    got = run(cfg)
    assert got.stats.distinct == orbits and got.complete and not got.violations
    full = run(cfg.with_values(**{"check.symmetry": False}))
    assert full.checked == got.checked and full.stats.depth == got.stats.depth


def test_twophase_canonical_is_the_least_image_over_the_whole_group():
    """TwoPhase's fast canonical form (sorted RMs) picks one state per orbit, as trying every
    permutation does: the reduced counts agree."""
    cfg = registry.load(model="twophase", overrides={"model.resource_managers": 4,
                                                     "check.symmetry": True})
    model = registry.bind(cfg.with_values(**{"check.symmetry": False}))
    model.canonical = None   # fall back to the minimum fingerprint over all 24 permutations
    assert explore(with_symmetry(model)).stats.distinct == 166


def test_broken_twophase_same_counterexample_length_and_it_replays():
    cfg = registry.load(model="twophase-broken", overrides={"model.resource_managers": 3})
    full, reduced = run(cfg), run(cfg.with_values(**{"check.symmetry": True}))
    assert verdict(full) == verdict(reduced) == [("TCConsistent", "always", 5)]
    assert reduced.stats.distinct < full.stats.distinct
    assert_replays(cfg.with_values(**{"check.symmetry": True}), reduced)


def test_self_check_holds_for_twophase_and_fails_for_a_wrong_declaration():
    cfg = registry.load(model="twophase", overrides={"model.resource_managers": 3})
    assert self_check(registry.bind(cfg)) == []
    # only r1 may abort spontaneously: the RMs are no longer interchangeable
    spec = twophase.SPEC.derive("twophase-r1", replace=[Rule(
        "RMChooseToAbort", ("rm",), lambda L, s: ((r,) for r in L.rms[:1]
                                                  if L.rm(s, r) == twophase.WORKING),
        twophase._rm_choose_to_abort)])
    problems = self_check(twophase.TwoPhase(spec, cfg))
    assert problems and "actions enabled differ" in problems[0]


def test_group_elements_and_order():
    syms = registry.bind(kafka(**{"cluster.transactional_ids": 3, "cluster.partitions": 2,
                                  "cluster.consumers": 2, "cluster.producers_per_id": 1})
                         ).symmetries()
    assert [x.size for x in syms] == [3, 2, 2] and group_order(syms) == 24
    elements = group_elements(syms)
    assert len(set(elements)) == 24 and elements[0] == ((0, 1, 2), (0, 1), (0, 1))


# --- Kafka: the declared permutations are automorphisms --------------------------------------------

SOME_FAULTS = {f"faults.{f}": 1 for f in (
    "request_delays", "request_duplicates", "request_losses", "response_losses", "batch_expiries",
    "producer_state_losses", "transaction_timeouts", "transactional_id_expirations")}


@pytest.mark.parametrize("version", ["kafka-0.11", "kafka-2.6", "kafka-3.6", "latest"])
def test_kafka_permutations_commute_with_every_step(version):
    cfg = kafka(**{"protocol.version": version, "cluster.transactional_ids": 2,
                   "cluster.partitions": 2, "workload.records_per_transaction": 2,
                   **SOME_FAULTS, "faults.total": 2})
    model = registry.bind(cfg)
    assert [x.size for x in model.symmetries()] == [2, 2, 1]
    assert self_check(model, limit=200, walks=30) == []


@pytest.mark.parametrize("version", ["kafka-3.8", "latest"])
def test_kafka_permutations_commute_with_batches_in_flight(version):
    """Partitions renamed in what several batches in flight add: a producer's batches to retry,
    resequenced batches and last acknowledged sequences (model/kafka/capabilities/symmetry.py)."""
    cfg = kafka(**{"protocol.version": version, "cluster.partitions": 2,
                   "cluster.producers_per_id": 1, "workload.records_per_transaction": 2,
                   "workload.max_in_flight": 2, **SOME_FAULTS, "faults.total": 2})
    model = registry.bind(cfg)
    assert [x.size for x in model.symmetries()] == [1, 2, 1]
    assert self_check(model, limit=300, walks=40) == []


def test_kafka_consumers_commute():
    model = registry.bind(kafka(**{"cluster.consumers": 2, "cluster.partitions": 2}))
    assert [x.size for x in model.symmetries()] == [1, 2, 2]
    assert self_check(model, limit=200, walks=30) == []


def test_kafka_ids_are_not_declared_where_they_are_not_interchangeable(monkeypatch):
    """With coordinator failovers (markers resent in id order) or consume-transform-produce
    (the input handed to the next id), the transactional.ids are not declared; declaring them
    anyway is caught by the self-check."""
    failover = kafka(**{"cluster.transactional_ids": 2, "cluster.producers_per_id": 1,
                        "faults.coordinator_failovers": 1, "faults.transaction_timeouts": 1,
                        "faults.total": 2})
    ctp = registry.load(resolve_config_path("ctp"))
    for cfg in (failover, ctp):
        model = registry.bind(cfg)
        assert model.symmetries()[0].size == 1 and "not with" in model.symmetries()[0].why
    monkeypatch.setattr(kafka_symmetry, "tids_interchangeable", lambda K: "")
    kafka_symmetry._sizes.cache_clear()
    try:
        problems = self_check(registry.bind(failover), limit=300, walks=0)
        assert problems and "ElectCoordinator" in problems[0]
        assert self_check(registry.bind(ctp), limit=300, walks=0)
    finally:
        kafka_symmetry._sizes.cache_clear()


def test_a_mutant_declares_no_symmetry():
    with pytest.raises(ConfigError, match="declares no symmetry"):
        registry.bind(kafka(symmetry=True, **{"model.mutant": "lso-ignores-open-transactions"}))


# --- Kafka: reduced counts ------------------------------------------------------------------------

@pytest.mark.parametrize("settings, full, reduced", [
    ({"cluster.transactional_ids": 2, "cluster.producers_per_id": 1}, 17_787, 8_894),
    ({"cluster.partitions": 2, "cluster.producers_per_id": 1}, 124, 67),
    ({"cluster.consumers": 2, "cluster.partitions": 2, "cluster.producers_per_id": 1}, 172, 79),
])
def test_kafka_reduced_counts_are_the_orbits(settings, full, reduced):
    """The reduced search keeps exactly one state per orbit of the full reachable set (counted
    here from the full set, not by the reduced search), with the same verdicts."""
    plain, sym = run(kafka(**settings)), run(kafka(symmetry=True, **settings))
    assert (plain.stats.distinct, sym.stats.distinct) == (full, reduced)
    assert plain.checked == sym.checked and verdict(plain) == verdict(sym) == []
    assert plain.stats.depth == sym.stats.depth
    model = registry.bind(kafka(symmetry=True, **settings))
    assert len({model.view(s) for s in reachable(registry.bind(kafka(**settings)))}) == reduced


@pytest.mark.parametrize("settings", [
    {"cluster.partitions": 2, "cluster.producers_per_id": 1},
    {"cluster.partitions": 3, "cluster.producers_per_id": 1, "workload.records_per_transaction": 2},
    {"cluster.partitions": 2, "cluster.consumers": 2, "cluster.producers_per_id": 1},
    {"cluster.transactional_ids": 2, "cluster.partitions": 2, "cluster.producers_per_id": 1},
])
def test_kafka_canonical_is_the_same_state_of_the_orbit_from_every_image(settings):
    """``kafka_mc.model.kafka.capabilities.symmetry.canonical`` (leaders ordered by their hash, ties and ids by the
    least image): every image of a sampled state has the same canonical state, one of the
    images, whether leaders differ or tie (empty logs) and with ids or consumers renamed too."""
    from kafka_mc.explorers.reductions.por import sample_states
    model = registry.bind(kafka(**settings))
    elements = group_elements(model.symmetries())
    ties = 0
    for s in sample_states(model, 300, seed=5):
        images = [model.permute(s, g) for g in elements]
        got = {model.canonical(x) for x in images}
        assert len(got) == 1 and got <= set(images)
        ties += len({hash(x) for x in s.partitions[:2]}) == 1
    assert ties > 0


def test_remembered_fingerprints_are_the_canonical_views_fingerprints(monkeypatch):
    """The keys explorers use under symmetry (``kafka_mc.model.canonical.remembered``: the canonical view's
    fingerprint, looked up by the concrete one) equal the fingerprints of the canonical views,
    met the first time, again (remembered) and after the memory turned over twice; and they are
    not the concrete fingerprints, which a memory that forgot to canonicalise would return."""
    from kafka_mc.model import canonical
    from kafka_mc.explorers.core.adapter import key_function
    from kafka_mc.explorers.reductions.por import reduction_key, sample_states
    monkeypatch.setattr(canonical, "REMEMBERED", 64)
    model = registry.bind(kafka(symmetry=True, **{"cluster.partitions": 2,
                                                  "cluster.producers_per_id": 1}))
    key, rkey = key_function(model), reduction_key(model)
    assert key is model.view_fingerprint and rkey is model.reduction_fingerprint
    states = sample_states(model, 400, seed=3)
    moved = 0
    for _ in range(2):
        for s in states:
            assert key(s) == hash(model.view(s))
            assert rkey(s) == hash(model.reduction_view(s))
            moved += rkey(s) != hash(kafka_symmetry._normal(s))
    assert moved > 100


def test_kafka_two_ids_halve_the_state_space_burnside():
    """Renaming two ids is an exact automorphism (no normal form): orbits = (states + fixed) / 2."""
    cfg = kafka(**{"cluster.transactional_ids": 2, "cluster.producers_per_id": 1})
    model = registry.bind(cfg)
    swap = ((1, 0), (0,), (0,))
    states = reachable(model)
    fixed = sum(model.permute(s, swap) == s for s in states)
    assert (len(states) + fixed) // 2 == 8_894 and fixed == 1


def test_factor_one_on_the_shipped_configs():
    """tiny and small have one id, one partition and one consumer: the group has one element and
    the view is left alone (the search is the unreduced one, counts as pinned)."""
    for name in ("tiny", "small"):
        model = registry.bind(registry.load(resolve_config_path(name),
                                            overrides={"check.symmetry": True}))
        assert model.symmetric and group_order(model.symmetries()) == 1
        assert getattr(model.view, "is_identity", False)
    assert run(kafka(symmetry=True)).stats.distinct == PINNED["latest"].tiny[0]


# --- the historical bugs: same verdict, same shortest counterexample length --------------------------

@pytest.mark.parametrize("version", [v for v in PRESETS if PINNED[v].weakness])
def test_weakness_presets_have_order_one_on_small(version):
    """The pinned weaknesses are found on small (one id, one partition): symmetry changes
    nothing there (the variants below rename ids and partitions)."""
    model = registry.bind(registry.load(resolve_config_path("small"), overrides={
        "protocol.version": version, "check.symmetry": True}))
    assert group_order(model.symmetries()) == 1


BUGS = [
    # 0.11: a zombie's batch opens a hanging transaction (tests/golden), two partitions
    ({"protocol.version": "kafka-0.11", "cluster.partitions": 2},
     ("no_hanging_transactions", 19), (4_573, 1_830)),
    # 2.6: a batch expired in flight opens a hanging transaction (before KIP-890)
    ({"protocol.version": "kafka-2.6", "cluster.partitions": 2, "faults.batch_expiries": 1,
      "faults.producer_crashes": 0}, ("no_hanging_transactions", 20), (336, 160)),
    # 4.2: KAFKA-19999, the marker resent after a lost response is rejected
    ({"protocol.version": "kafka-4.2", "cluster.transactional_ids": 2,
      "cluster.producers_per_id": 1, "faults.producer_crashes": 0, "faults.response_losses": 1},
     ("quiescent_completion", 29), (44_955, 23_540)),
]


@pytest.mark.parametrize("settings, bug, counts", BUGS)
def test_historical_bugs_same_verdict_and_length(settings, bug, counts):
    plain, sym = run(kafka(**settings)), run(kafka(symmetry=True, **settings))
    assert [(p, n) for p, _, n in verdict(plain)] == [bug]
    assert verdict(sym) == verdict(plain)
    assert (plain.stats.distinct, sym.stats.distinct) == counts
    assert_replays(kafka(symmetry=True, **settings), sym)


def test_continue_reports_the_same_properties_with_the_same_lengths():
    """--continue: every violated property, each with its shortest counterexample, is the same
    with and without symmetry (0.11 with two partitions: hanging transaction, zombie and
    instance fencing, quiescent completion)."""
    settings = {"protocol.version": "kafka-0.11", "cluster.partitions": 2}
    options = BfsOptions(keep_going=True)
    plain = explore(registry.bind(kafka(**settings)), options)
    sym = explore(registry.bind(kafka(symmetry=True, **settings)), options)
    assert verdict(sym) == verdict(plain) and len(verdict(plain)) >= 4
    assert sym.stats.distinct < plain.stats.distinct


def assert_replays(cfg, outcome):
    """The counterexample is a concrete behaviour: its trace replays and reproduces."""
    model = registry.bind(cfg)
    (v,) = outcome.violations
    meta = trace_metadata(cfg, property=v.property, kind=v.kind, claim=v.claim, explorer="bfs",
                          source="test", model=model)
    trace = Trace.from_path(model, v.path, meta)
    assert replay(from_document(json.loads(trace.to_json(model)))).reproduced


# --- the CLI -------------------------------------------------------------------------------------

def test_cli_reports_symmetry(capsys, tmp_path):
    code = cli.main(["check", "--model", "twophase", "--set", "model.resource_managers=3",
                     "--symmetry", "--json", "--out", str(tmp_path)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["stats"]["distinct"] == 80
    assert doc["symmetry"] == {"groups": [{"name": "resource manager", "size": 3}], "order": 6}
    assert cli.main(["check", "--model", "twophase", "--set", "model.resource_managers=3",
                     "--set", "check.symmetry=true", "--out", str(tmp_path)]) == 0
    assert "symmetry: resource manager x3 (group of 6 permutations)" in capsys.readouterr().out


def test_cli_graph_with_safety_only_agrees_with_bfs(capsys, tmp_path):
    code = cli.main(["check", "--model", "twophase", "--set", "model.resource_managers=3",
                     "--symmetry", "--explorer", "graph", "--json", "--out", str(tmp_path)])
    assert code == 0 and json.loads(capsys.readouterr().out)["stats"]["distinct"] == 80


@pytest.mark.parametrize("args, message", [
    (["tiny", "--explorer", "graph"], "unsound for liveness (eventual_completion)"),
    (["tiny", "--explorer", "stateful"], "the stateful explorer does not deduplicate"),
    (["tiny", "--set", "model.mutant=lso-ignores-open-transactions"], "declares no symmetry"),
])
def test_cli_refusals_are_one_line_exit_2(capsys, tmp_path, args, message):
    assert cli.main(["check", *args, "--symmetry", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
