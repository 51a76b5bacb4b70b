"""The state-graph explorer: the BFS's counts and verdicts exactly, and liveness under fairness on
toys with known answers (a fair and an unfair cycle, a stuttering end, weak against strong
fairness, Emerson-Lei's re-split, fairness judged on the loop itself, leads-to), then the Kafka
model (KAFKA-19999 as a lasso that replays, a broken variant, `latest` clean)."""
import json

import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.core import Expectation as E, Property, SF, WF
from kafka_mc.model.kafka.capabilities import mutants
from kafka_mc.model.protocol import ProtocolSpec, Rule
from kafka_mc.explorers.bfs import search as bfs
from kafka_mc.explorers.graph import search as graph
from kafka_mc.explorers.graph.search import GraphOptions
from tests.grid import grid
from kafka_mc.traces.replay import lasso_verdict


def lts(edges, fair=None, init=(0,), **props):
    """A labelled transition system: ``edges[state]`` lists ``(action, target)``; one rule per
    action name, with ``fair[name]`` its fairness; ``props``: name -> (holds, when)."""
    fair = fair or {}
    names = sorted({n for outs in edges.values() for n, _ in outs})

    def rule(n):
        return Rule(n, (), lambda p, s: [()] if any(m == n for m, _ in edges.get(s, ())) else [],
                    lambda p, s: next(t for m, t in edges[s] if m == n), fair=fair.get(n))
    properties = tuple(Property(k, E.EVENTUALLY, (lambda p, s, h=h: h(s)), f"claim {k}",
                                when=None if w is None else (lambda p, s, w=w: w(s)))
                       for k, (h, w) in props.items())
    spec = ProtocolSpec("lts", init=lambda p: list(init), rules=tuple(map(rule, names)),
                        properties=properties, check_deadlock=False)
    return spec.bind({})


def lasso(model, **options):
    out = graph.explore(model, GraphOptions(**options))
    assert out.explorer == "graph"
    return [v for v in out.violations if v.kind == "eventually"], out


def is_fair_lasso(model, v) -> bool:
    p = next(p for p in model.properties() if p.name == v.property)
    trigger, why = lasso_verdict(model, p, v.path.states, v.path.actions, v.path.loop,
                                 v.path.loop_action)
    return trigger is not None


W = WF("test")
S = SF("test")
GOAL = {"Goal": ((lambda s: s == 9), None)}


# --- the same search as the BFS ------------------------------------------------------------------

def _same(a, b):
    assert (a.stats.distinct, a.stats.generated, a.stats.depth) == \
           (b.stats.distinct, b.stats.generated, b.stats.depth)
    assert a.coverage == b.coverage and a.never_enabled == b.never_enabled
    assert a.edges == b.edges and a.complete == b.complete
    assert [(v.property, v.kind, v.path.actions if v.path else None) for v in a.violations] == \
           [(v.property, v.kind, v.path.actions if v.path else None) for v in b.violations]


@pytest.mark.parametrize("props", [
    {}, {"Bounded": (E.ALWAYS, lambda p, s: s[0] + s[1] < 5)},
    {"Diag": (E.TRANSITION, lambda p, s, a, t: t != (2, 2))},
    {"Witness": (E.SOMETIMES, lambda p, s: s == (9, 9))},
])
def test_graph_equals_bfs_on_the_grid(props):
    _same(graph.explore(grid(**props)), bfs.explore(grid(**props)))


@pytest.mark.parametrize("name", ["twophase", "twophase-broken"])
def test_graph_equals_bfs_on_twophase(name):
    model = registry.bind(registry.load(resolve_config_path(name)))
    _same(graph.explore(model), bfs.explore(model))


@pytest.mark.parametrize("preset", ["kafka-0.11", "kafka-2.7", "kafka-3.6", "kafka-4.2", "latest"])
def test_graph_equals_bfs_on_kafka_tiny(preset):
    model = registry.bind(registry.load(resolve_config_path("tiny"),
                                        overrides={"protocol.version": preset}))
    safety = [p.name for p in model.properties() if p.expectation is not E.EVENTUALLY]
    g = graph.explore(model, GraphOptions(properties=safety, keep_going=True))
    b = bfs.explore(model, bfs.BfsOptions(properties=safety, keep_going=True))
    _same(g, b)


def test_graph_equals_bfs_with_a_depth_bound_and_leaves_liveness_unchecked():
    model = grid(Ends=(E.EVENTUALLY, lambda p, s: s == (3, 3)))
    g = graph.explore(model, GraphOptions(max_depth=3))
    _same(g, bfs.explore(model, bfs.BfsOptions(max_depth=3)))
    assert not g.complete and g.unchecked == ("Ends",) and "graph" not in g.extra


# --- liveness on toys ----------------------------------------------------------------------------

def test_a_stuttering_start_violates_without_fairness_and_not_with_it():
    edges = {0: [("Go", 9)]}
    found, _ = lasso(lts(edges, **GOAL))
    assert len(found) == 1 and found[0].path.loop == 0 and found[0].path.loop_action is None
    found, out = lasso(lts(edges, {"Go": W}, **GOAL))
    assert found == [] and out.exit_code == 0 and "Goal" in out.checked


def test_a_final_state_stutters_forever_even_when_everything_is_fair():
    found, out = lasso(lts({0: [("A", 1)], 1: [("B", 2)]}, {"A": W, "B": W}, **GOAL))
    [v] = found
    assert v.path.actions == (("A",), ("B",)) and v.path.loop == 2 and out.exit_code == 13


def test_an_unfair_self_loop_is_no_counterexample_and_a_fair_one_is():
    edges = {0: [("Spin", 0), ("Go", 9)]}
    assert lasso(lts(edges, {"Spin": W, "Go": W}, **GOAL))[0] == []
    [v] = lasso(lts(edges, {"Spin": W}, **GOAL))[0]
    assert v.path.loop == 0 and v.path.loop_action == ("Spin",) and v.path.actions == ()


def test_weak_and_strong_fairness_give_different_verdicts():
    """Go is enabled at 0 only: on the loop 0 <-> 1 it is not continuously enabled (weak
    fairness allows never taking it) but enabled again and again (strong fairness does not)."""
    edges = {0: [("A", 1), ("Go", 9)], 1: [("B", 0)]}
    [v] = lasso(lts(edges, {"A": W, "B": W, "Go": W}, **GOAL))[0]
    assert set(v.path.states) == {0, 1} and v.path.loop_action is not None
    assert lasso(lts(edges, {"A": W, "B": W, "Go": S}, **GOAL))[0] == []


def test_emerson_lei_drops_the_states_where_a_strong_family_is_enabled_and_splits_again():
    edges = {0: [("A", 1), ("Go", 9)], 1: [("B", 0), ("C", 2)], 2: [("D", 1)]}
    model = lts(edges, {"A": W, "B": W, "C": W, "D": W, "Go": S}, **GOAL)
    [v] = lasso(model)[0]
    loop_states = set(v.path.states[v.path.loop:])
    assert loop_states <= {1, 2} and 0 not in loop_states and is_fair_lasso(model, v)


def test_fairness_is_judged_on_the_loop_reported_not_only_on_its_component():
    """In the component {0, 1, 2} the family E is disabled only at 2: the shortest loop 0 <-> 1
    is unfair to it, so the loop reported must pass through 2."""
    edges = {0: [("A", 1), ("E", 9)], 1: [("B", 0), ("C", 2), ("E", 9)], 2: [("D", 1)]}
    model = lts(edges, {"A": W, "B": W, "C": W, "D": W, "E": W}, **GOAL)
    [v] = lasso(model)[0]
    assert 2 in v.path.states[v.path.loop:] and is_fair_lasso(model, v)


def test_a_weak_family_enabled_throughout_and_never_taken_rules_a_component_out():
    edges = {0: [("A", 1), ("E", 9)], 1: [("B", 0), ("E", 9)]}
    assert lasso(lts(edges, {"A": W, "B": W, "E": W}, **GOAL))[0] == []


def test_leads_to_is_checked_from_every_trigger():
    """Request ~> Granted: the first request is granted, the second one can wait forever."""
    edges = {0: [("Req", 1)], 1: [("Grant", 2)], 2: [("Req", 3)],
             3: [("Spin", 3), ("Grant2", 4)]}
    claim = {"Granted": ((lambda s: s in (2, 4)), (lambda s: s in (1, 3)))}
    model = lts(edges, {"Req": W, "Spin": W, "Grant": W}, **claim)
    [v] = lasso(model)[0]
    assert v.path.states == (0, 1, 2, 3) and v.path.trigger == 3
    assert v.path.loop == 3 and v.path.loop_action == ("Spin",) and is_fair_lasso(model, v)
    model = lts(edges, {"Req": W, "Spin": W, "Grant": W, "Grant2": W}, **claim)
    assert lasso(model)[0] == []


def test_continue_reports_safety_and_liveness_together():
    edges = {0: [("A", 1)], 1: []}
    spec = lts(edges, {"A": W}, **GOAL).spec
    spec = spec.derive("lts", add_properties=[Property("Small", E.ALWAYS, lambda p, s: s < 1)])
    out = graph.explore(spec.bind({}), GraphOptions(keep_going=True))
    assert [(v.property, v.kind) for v in out.violations] == [("Small", "always"),
                                                                ("Goal", "eventually")]
    assert out.exit_code == 13


def test_graph_statistics():
    _, out = lasso(grid(Ends=(E.EVENTUALLY, lambda p, s: s == (3, 3))))
    assert out.extra["graph"] | {"liveness_seconds": 0} == {
        "states": 16, "edges": 25, "sccs": 1, "largest_scc": 16, "terminal_sccs": 1,
        "nontrivial_sccs": 1, "diameter": 6, "liveness_seconds": 0}


# --- the Kafka model -----------------------------------------------------------------------------

LIVENESS = ["eventual_completion", "markers_close_transactions", "lso_reaches_high_watermark"]


def kafka(preset, **settings):
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides={"protocol.version": preset, "faults.response_losses": 1}
                        | settings)
    return registry.bind(cfg)


def test_kafka_latest_completes_every_transaction_under_fairness():
    out = graph.explore(kafka("latest"), GraphOptions(properties=LIVENESS))
    assert out.exit_code == 0 and set(LIVENESS) <= set(out.checked)
    assert out.stats.distinct == 109492 and out.stats.generated == 354277


def test_kafka_4_2_strict_marker_check_hangs_a_transaction_kafka_19999():
    """A lost WriteTxnMarkers answer makes the coordinator resend the marker; 4.2's strict epoch
    check (KIP-1228) rejects the copy with INVALID_PRODUCER_EPOCH and the transaction stays in
    PrepareAbort forever."""
    model = kafka("kafka-4.2")
    out = graph.explore(model, GraphOptions(properties=LIVENESS))
    [v] = out.violations
    assert (v.property, v.kind, out.exit_code) == ("eventual_completion", "eventually", 13)
    names = [a[0] for a in v.path.actions]
    assert "LoseResponse" in names and len(v.path) == 22 and is_fair_lasso(model, v)


def test_a_coordinator_that_never_resends_a_lost_marker_is_caught():
    m = mutants.BY_NAME["marker-not-resent"]
    cfg = registry.load(resolve_config_path("tiny"), overrides=m.settings | {"model.mutant": m.name})
    model = registry.bind(cfg)
    out = graph.explore(model, GraphOptions(properties=[m.invariant]))
    [v] = out.violations
    assert v.property == "eventual_completion" and is_fair_lasso(model, v)
    same = registry.bind(registry.load(resolve_config_path("tiny"), overrides=m.settings))
    assert graph.explore(same, GraphOptions(properties=[m.invariant])).exit_code == 0


def test_the_kafka_fairness_is_declared_with_its_reasons():
    model = kafka("latest")
    fair = model.fairness()
    assert {"HandleWriteTxnMarkers", "CommitTxnLogAppend", "SendEndTxn", "EndTransaction",
            "ExpireTransaction"} <= set(fair)
    assert all(f.why and f.kind.value == "weak" for f in fair.values())
    assert model.fair_family(("ExpireTransaction", 0, True)) == "ExpireTransaction"
    assert model.fair_family(("ExpireTransaction", 0, False)) is None   # the budgeted fault
    assert model.fair_family(("CrashProducer", 0)) is None
    assert model.fair_family(("AbortTransaction", 0)) == "EndTransaction"


def test_cli_writes_a_lasso_that_replays_with_exit_13(tmp_path):
    from tests.explorers.test_stateful import kafka_mc

    r = kafka_mc("check", "tiny", "--protocol", "kafka-4.2", "--set", "faults.response_losses=1",
                 "--explorer", "graph", "--invariant", "eventual_completion",
                 "--out", str(tmp_path))
    assert r.returncode == 13, r.stderr
    assert "-- loop: from state 22" in r.stdout and "stuttering" in r.stdout
    file = tmp_path / "eventual_completion.itf.json"
    doc = json.loads(file.read_text())
    assert doc["loop"] == 22 and len(doc["states"]) == 23 and doc["#meta"]["kind"] == "eventually"
    import itf_py.itf as itf
    assert itf.trace_from_json(doc).loop == 22
    r = kafka_mc("replay", str(file))
    assert r.returncode == 13 and "fair lasso" in r.stdout, r.stdout + r.stderr
    broken = dict(doc, loop=5)   # a stuttering loop can only be the last state
    (tmp_path / "bad.itf.json").write_text(json.dumps(broken))
    r = kafka_mc("replay", str(tmp_path / "bad.itf.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1


# --- exports and renderings ----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["dot", "graphml", "json"])
def test_graph_export_parses_back_with_networkx(tmp_path, fmt):
    import networkx as nx
    from tests.explorers.test_stateful import kafka_mc

    file = tmp_path / f"g.{fmt}"
    r = kafka_mc("graph", "tiny", "--depth", "8", "--format", fmt, "--out", str(file))
    assert r.returncode == 0 and "75 states, 114 edges" in r.stdout, r.stderr
    read = {"dot": nx.nx_pydot.read_dot, "graphml": nx.read_graphml,
            "json": lambda f: nx.node_link_graph(json.loads(open(f).read()), edges="edges")}[fmt]
    g = read(str(file))
    assert (g.number_of_nodes(), g.number_of_edges()) == (75, 114)
    if fmt == "json":
        assert json.loads(g.nodes[0]["state"])["producers"] and g.nodes[0]["initial"]
        assert {d["action"] for _, _, d in g.edges(data=True)} >= {"InitTransactions(producer=0)"}


def test_the_graph_explorer_refuses_partial_order_reduction(tmp_path):
    from tests.explorers.test_stateful import kafka_mc

    r = kafka_mc("check", "tiny", "--explorer", "graph", "--por", "--out", str(tmp_path))
    assert r.returncode == 2 and "liveness on the full state graph" in r.stderr
    assert r.stderr.count("\n") == 1


def test_graph_export_refuses_a_graph_too_big_to_read(tmp_path):
    from tests.explorers.test_stateful import kafka_mc

    r = kafka_mc("graph", "tiny", "--out", str(tmp_path / "g.dot"))
    assert r.returncode == 2 and "more than 10,000 states" in r.stderr
    assert r.stderr.count("\n") == 1 and not (tmp_path / "g.dot").exists()
    r = kafka_mc("graph", "tiny", "--max-states", "20000", "--out", str(tmp_path / "g.dot"))
    assert r.returncode == 0 and "16,044 states" in r.stdout


def test_a_lasso_renders_with_its_loop_in_every_format(tmp_path):
    from kafka_mc.traces.render import render
    from kafka_mc.traces.trace import Trace, read
    from kafka_mc.explorers.cli.check import write_traces

    model = kafka("kafka-4.2")
    out = graph.explore(model, GraphOptions(properties=["eventual_completion"]))
    cfg = registry.load(resolve_config_path("tiny"), overrides={
        "protocol.version": "kafka-4.2", "faults.response_losses": 1})
    file = write_traces(out, cfg, model, tmp_path)["eventual_completion"]
    trace = read(file)
    assert trace.loop == 22 and trace.loop_action is None
    assert "-- the loop starts here" in render(trace, "text")
    assert "Stuttering: the behaviour stays in state 22 forever" in render(trace, "text")
    assert "loop repeats forever" in render(trace, "mermaid")
    assert 'class="loop-end"' in render(trace, "html")
    assert "22 -> 22" in render(trace, "dot") and "stutter" in render(trace, "dot")
    assert Trace.to_json(trace, model) == open(file).read()   # the same bytes again


def test_minimize_shrinks_a_lasso_stem_and_keeps_the_loop(monkeypatch, tmp_path):
    """Stem A, Detour, Back, B to state 2, then the fair self-loop Spin forever (Goal never
    holds): the detour goes, the loop stays, and the result replays as a lasso."""
    from kafka_mc.traces.minimize import minimize
    from kafka_mc.traces.replay import replay
    from kafka_mc.traces.trace import Trace, read, trace_metadata

    edges = {0: [("A", 1)], 1: [("B", 2), ("Detour", 3)], 3: [("Back", 1)], 2: [("Spin", 2)]}
    spec = lts(edges, {n: W for n in ("A", "B", "Back", "Spin")}, **GOAL).spec
    monkeypatch.setitem(registry.REGISTERED, "lassotoy", registry.spec_entry(
        spec.derive("lassotoy", params=lambda cfg: {}), (), name="lassotoy"))
    cfg = registry.load(None, model="lassotoy")
    model = registry.bind(cfg)
    meta = trace_metadata(cfg, property="Goal", kind="eventually", claim="", explorer="test",
                          source="test", model=model) | {"trigger": 0}
    long = Trace.of(model, (0, 1, 3, 1, 2), (("A",), ("Detour",), ("Back",), ("B",)), meta,
                    loop=4, loop_action=("Spin",))
    long.write(tmp_path / "long.itf.json", model)
    assert replay(read(tmp_path / "long.itf.json")).reproduced
    model, states, small = minimize(read(tmp_path / "long.itf.json"))
    assert small.actions == (("A",), ("B",)) and small.loop == 2
    assert small.loop_action == ("Spin",) and small.meta["minimized_from"] == 4
    small.write(tmp_path / "small.itf.json", model)
    assert replay(read(tmp_path / "small.itf.json")).reproduced
    # A loop that does not close is refused (one line, exit 2 from the CLI).
    bad = Trace.of(model, (0, 1, 2), (("A",), ("B",)), meta, loop=1, loop_action=("Spin",))
    bad.write(tmp_path / "bad.itf.json", model)
    with pytest.raises(Exception, match="the loop does not close"):
        replay(read(tmp_path / "bad.itf.json"))


# --- interrupts (issue 48) -----------------------------------------------------------------------

def _interrupt_at(state):
    def holds(s):
        if s == state:
            raise KeyboardInterrupt
        return False
    return holds


@pytest.mark.parametrize("state", [1, 2, 3])
def test_an_interrupt_between_a_states_records_keeps_a_whole_graph(state):
    """A Ctrl-C landing after a new state is numbered and before its discovering edge is
    recorded (here: while its liveness values are computed) left an edge array one short of the
    discovery index, and the coverage count raised IndexError: the result was lost."""
    model = lts({0: [("A", 1)], 1: [("B", 2)], 2: [("C", 3)], 3: [("D", 0)]},
                Goal=(_interrupt_at(state), None))
    out = graph.explore(model, GraphOptions())
    assert out.interrupted and not out.complete and out.stats.distinct == state
    assert sum(c.distinct for c in out.coverage) == state - 1   # one discovering edge a state


def test_state_graph_raises_the_interrupt_rather_than_return_part_of_a_graph(monkeypatch):
    """``kafka-mc graph``: an interrupted search is no graph to write (it wrote a partial one,
    said it was cut at a depth bound none was given, and exited 0)."""
    model = lts({0: [("A", 1)], 1: [("B", 2)], 2: [("C", 0)]})
    calls = []

    def key(s):
        calls.append(s)
        if len(calls) > 3:
            raise KeyboardInterrupt
        return s
    from kafka_mc.explorers.core import setup
    monkeypatch.setattr(setup, "key_function", lambda m: key)
    with pytest.raises(KeyboardInterrupt):
        graph.state_graph(model)
