"""The Spark explorer on a real local[2] session (one for the module): exact agreement with the
single-process BFS -- counts, depth, verdict, per-action coverage, the counterexample itself --
on TwoPhase and on every property kind of the grid model; checkpoints and recovery; the CLI."""
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.grid import grid, grid_spec
from tests.explorers.test_por import Counters, replays
from kafka_mc.model import registry
from kafka_mc.traces.trace import Trace, trace_metadata
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.core import Expectation as E, Machine
from kafka_mc.model.protocol import Rule
from kafka_mc.explorers.bfs import search as bfs
from kafka_mc.explorers.spark import search as spark_explorer
from kafka_mc.explorers.core.adapter import key_function
from kafka_mc.explorers.spark.search import SparkOptions
from kafka_mc.explorers.spark.tasks import placement

EXE = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or shutil.which("kafka-mc")


@pytest.fixture(scope="module")
def spark():
    # the workers import tests.grid, so they need the repository root on their path
    options = SparkOptions(workers=2, conf=(("spark.executorEnv.PYTHONPATH", str(ROOT)),))
    with spark_explorer.session(options) as session:
        yield session


def summary(out):
    """Everything an explorer's result says, except timings and memory."""
    s = out.stats
    return {"counts": (s.distinct, s.generated, s.depth), "exit": out.exit_code,
            "complete": out.complete, "coverage": out.coverage, "never": out.never_enabled,
            "checked": (out.checked, out.unchecked, out.not_applicable), "edges": out.edges,
            "violations": [(v.property, v.kind, v.path, v.detail.splitlines()[-1:])
                           for v in out.violations]}


def agree(spark, build, options=bfs.BfsOptions()):
    """Run both explorers; they must say exactly the same. Returns the Spark outcome."""
    expected = bfs.explore(build(), options)
    got = spark_explorer.explore(build, options, spark=spark)
    assert summary(got) == summary(expected)
    assert got.explorer == "spark"
    return got


def twophase(name, n):
    return registry.load(model=name, overrides={"model.resource_managers": n})


@pytest.mark.parametrize("n, partitions", [(3, None), (5, 3), (7, None)])
def test_twophase_agrees_with_bfs(spark, tmp_path, n, partitions):
    cfg = twophase("twophase", n)
    expected = bfs.explore(registry.bind(cfg))
    got = spark_explorer.explore(cfg, spark_options=SparkOptions(
        partitions=partitions, run_dir=str(tmp_path / "run")), spark=spark)
    assert summary(got) == summary(expected)
    assert got.stats.distinct == {3: 288, 5: 8_832, 7: 296_448}[n]
    assert got.extra["partitions"] == (partitions or 2)
    # parent pointers are dropped without checkpoints; the lock file stays
    assert [f.name for f in (tmp_path / "run").iterdir()] == [".lock"]


@pytest.mark.parametrize("name, settings", [("tiny", {}), ("small", {"faults.total": 1}),
                                            ("tiny", {"workload.two_phase_commit": True})])
def test_shipped_kafka_config_agrees_with_bfs(spark, name, settings):
    cfg = registry.load(resolve_config_path(name), overrides=settings)
    expected = bfs.explore(registry.bind(cfg))
    assert summary(spark_explorer.explore(cfg, spark=spark)) == summary(expected)
    assert not expected.violations and expected.stats.distinct > 40


def test_kafka_counterexample_through_both_partitions_is_the_bfs_one(spark):
    """A mutant (the executors rebuild it from the configuration, scoped helper swap included)
    whose shortest counterexample visits states of both partitions: the trace is rebuilt through
    the parents' partitions recorded with the parent pointers."""
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides={"model.mutant": "lso-ignores-open-transactions"})
    expected = bfs.explore(registry.bind(cfg))
    got = spark_explorer.explore(cfg, spark=spark)
    assert summary(got) == summary(expected) and got.extra["partitions"] == 2
    (v,) = got.violations
    model = registry.bind(cfg)
    place, key = placement(model, 2), key_function(model)
    assert {place(s, key(s)) for s in v.path.states} == {0, 1}


@pytest.mark.parametrize("cfg, distinct", [
    (twophase("twophase", 3).with_values(**{"check.symmetry": True}), 80),
    (registry.load(resolve_config_path("tiny"), overrides={
        "protocol.version": "kafka-0.11", "cluster.partitions": 2, "check.symmetry": True}), 1830)])
def test_symmetry_agrees_with_bfs(spark, cfg, distinct):
    """Symmetry reduction goes through the bound model's view: the executors bind the same
    canonicalising view, and the counterexample is the BFS's concrete one."""
    expected = bfs.explore(registry.bind(cfg))
    got = spark_explorer.explore(cfg, spark=spark)
    assert summary(got) == summary(expected) and got.stats.distinct == distinct


POR_CASES = {
    # the reduction active (txn_atomicity reads only the logs): the pinned reduced BFS counts
    "kafka-3.6 tiny, txn_atomicity": (
        lambda: registry.bind(registry.load(resolve_config_path("tiny"),
                                            overrides={"protocol.version": "kafka-3.6"})),
        bfs.BfsOptions(properties=["txn_atomicity"], por=True), (27071, 73372, 10120)),
    # the proviso decides: the last counter cycles without touching what the property reads
    "cycling counters, a violation": (
        partial(Counters, n=2, k=2, limit=1, cyclic=True),
        bfs.BfsOptions(properties=["c0_below"], por=True), None),
    "counters, --continue": (partial(Counters, limit=2),
                             bfs.BfsOptions(keep_going=True, por=True), None),
}


@pytest.mark.parametrize("case", POR_CASES)
def test_partial_order_reduction_agrees_with_the_reduced_bfs(spark, case):
    """--por: the same reduced graph as the BFS's (the proviso's "on this level or an earlier
    one" asked of each successor's owner), so the same counts, states expanded with a reduced
    set, coverage and counterexamples, which replay."""
    build, options, pinned = POR_CASES[case]
    got = agree(spark, build, options)
    expected = bfs.explore(build(), options)
    assert got.extra["reduction"] == expected.extra["reduction"]
    assert got.extra["reduction"]["reduced_states"] > 0
    if pinned:
        assert (got.stats.distinct, got.stats.generated,
                got.extra["reduction"]["reduced_states"]) == pinned
    else:
        assert got.violations
    model = build()
    for v in got.violations:
        replays(model, v.path)


def test_the_same_spark_run_twice_gives_the_same_trace_bytes(spark):
    """Determinism: the same configuration twice gives the same counts, the same counterexample
    and byte-identical trace files (the BFS, simulate and stateful twins: test_bad_input.py)."""
    cfg = registry.load(resolve_config_path("tiny"), overrides={"protocol.version": "kafka-0.11"})
    model = registry.bind(cfg)
    runs = []
    for _ in range(2):
        got = spark_explorer.explore(cfg, spark=spark)
        (v,) = got.violations
        meta = trace_metadata(cfg, property=v.property, kind=v.kind, claim=v.claim,
                              explorer="spark", source="test", model=model)
        runs.append((summary(got), Trace.from_path(model, v.path, meta).to_json(model)))
    assert runs[0] == runs[1]


def test_kafka_locality_keeps_most_transitions_in_their_partition():
    """Kafka places a state by its coordinator's and partition leaders' state and its fault
    budgets (``_locality``): on tiny, 2 partitions, 6,067 of its 47,071 transitions cross
    partitions, against 23,638 when the whole fingerprint places states. (Which transitions
    cross depends on the hash values, so on the order of the budgets' fields: the fault table's,
    and on the World's fields: the coordinator's ghost ``force_terminated`` moved them from
    6,270 and 23,980; a TV2 guard's epoch, KAFKA-18654's marker_keeps_tv2_guard, from 5,059 and
    24,271; the marker round's pending Complete* and the ghost ``epoch_owner``, issue 62, from
    5,145 and 24,218 of 48,189.)"""
    cfg = registry.load(resolve_config_path("tiny"))
    model, plain = registry.bind(cfg), registry.bind(cfg)
    plain.locality = None
    key = key_function(model)
    by_locality, by_fingerprint = placement(model, 2), placement(plain, 2)
    seen, level, cross = set(), list(model.init_states()), [0, 0, 0]
    seen.update(map(key, level))
    while level:
        nxt = []
        for s in level:
            fs = key(s)
            for _, t in model.successors(s):
                ft = key(t)
                cross[0] += 1
                cross[1] += by_locality(s, fs) != by_locality(t, ft)
                cross[2] += by_fingerprint(s, fs) != by_fingerprint(t, ft)
                if ft not in seen:
                    seen.add(ft)
                    nxt.append(t)
        level = nxt
    assert (len(seen), *cross) == (16_044, 47_071, 6_067, 23_638)


def test_placement_follows_the_view():
    """States with one view (one fingerprint) have one owner, whatever their locality says."""
    class Swap:
        locality = staticmethod(lambda v: v[0])
        view = staticmethod(lambda s: tuple(sorted(s)))

    place = placement(Swap(), 7)
    owners = {place(s, hash(Swap.view(s))) for s in [(a, b) for a in range(40) for b in range(40)]
              if sorted(s) == [3, 29]}
    assert len(owners) == 1
    assert len({place((a, 99), 0) for a in range(40)}) == 7  # yet localities spread over all 7


def test_broken_twophase_gives_the_bfs_counterexample(spark):
    got = agree(spark, partial(registry.bind, twophase("twophase-broken", 3)),
                bfs.BfsOptions(properties=["TCConsistent"]))
    (v,) = got.violations
    assert len(v.path) == 5 and not got.complete  # counts stop where the BFS stopped


ALWAYS, TRANSITION, SOMETIMES, EVENTUALLY = E.ALWAYS, E.TRANSITION, E.SOMETIMES, E.EVENTUALLY


def _boom(p, s):
    if s == (1, 1):
        raise RuntimeError("bad state")
    return [()]


def _raise_after(limit):
    """A witness that holds at (1, 0) and raises on states of sum >= limit."""
    def holds(p, s):
        if sum(s) >= limit:
            raise ValueError("witness broke")
        return s == (1, 0)
    return holds


SMALL = {"max": 2, "reset": True}


def _moves(s, a, t):
    return ((repr(s), repr(t)),)


def _grid_with_moves(**props):
    """The grid with one state machine whose edges are its moves (each transition a distinct
    edge), so edge coverage shows exactly which transitions an explorer counted."""
    model = grid(max=2, **props)
    table = tuple(sorted({(repr((x, y)), repr(t)) for x in range(3) for y in range(3)
                          for _, t in model.successors((x, y))}))
    model.machines = lambda: (Machine("moves", table, _moves),)
    return model


GRID_CASES = {
    # name: (model builder, BfsOptions)
    "always violated": (partial(grid, max=2, Sum=(ALWAYS, lambda p, s: s[0] + s[1] < 3)), {}),
    "violated in the initial state": (partial(grid, max=2, Moved=(ALWAYS, lambda p, s: sum(s) > 0)),
                                      {}),
    "transition violated": (partial(grid, max=2, NoReset=(TRANSITION,
                                                         lambda p, s, a, t: a != ("Reset",))), {}),
    "kinds that hold, and a missing witness": (partial(
        grid, max=2, Bounded=(ALWAYS, lambda p, s: max(s) <= 2),
        Monotone=(TRANSITION, lambda p, s, a, t: a == ("Reset",) or t >= s),
        Corner=(SOMETIMES, lambda p, s: s == (2, 2)), Far=(SOMETIMES, lambda p, s: s[0] > 2),
        Ends=(EVENTUALLY, lambda p, s: s == (2, 2))), {}),
    # the violating step is counted and its edge noted before the search stops (Spark: ``_cut``)
    "transition violated at a new edge": (partial(_grid_with_moves, NoStep=(
        TRANSITION, lambda p, s, a, t: (s, t) != ((1, 1), (2, 1)))), {}),
    "edges of a clean run": (partial(_grid_with_moves), {}),
    "deadlock": (partial(grid, max=2, reset=False), {}),
    "deadlock ignored, depth bound": (partial(grid, max=3, reset=False),
                                      {"check_deadlock": False, "max_depth": 3}),
    "state constraint": (lambda: grid_spec().derive(
        "grid-bounded", within_bounds=lambda p, s: s[0] < 1).bind(SMALL), {}),
    "model error": (lambda: grid_spec().derive(
        "grid-broken", add=[Rule("Boom", (), _boom, lambda p, s: s)]).bind(SMALL), {}),
    "unstable view": (lambda: grid_spec().derive(
        "grid-str", view=lambda p, s: ("n", s)).bind(SMALL), {}),
    "witness raises after it was seen": (partial(grid, max=2, W=(SOMETIMES, _raise_after(2))), {}),
    "witness raises before it is seen": (partial(grid, max=2, W=(SOMETIMES, _raise_after(1))), {}),
    "properties selected by name": (partial(grid, max=2, A=(ALWAYS, lambda p, s: True),
                                            B=(ALWAYS, lambda p, s: s[0] < 1)),
                                    {"properties": ["A"]}),
}


@pytest.mark.parametrize("case", GRID_CASES)
def test_grid_property_kinds_agree_with_bfs(spark, case):
    build, options = GRID_CASES[case]
    got = agree(spark, build, bfs.BfsOptions(**options))
    if case == "model error":
        assert got.exit_code == 75 and got.violations[0].path.states[-1] == (1, 1)
    if case == "witness raises before it is seen":
        assert got.exit_code == 75


def _fails_then_raises(p, s):
    """Violated at (3, 1), the first state of sum 4 (partition 1 of 2); raises at the next
    two, (2, 2) (partition 1) and (1, 3) (partition 0), which the BFS no longer checks."""
    if sum(s) == 4 and s != (3, 1):
        raise ValueError("property broke")
    return s != (3, 1)


def _raises_at_sum_3(p, s):
    if sum(s) == 3:
        raise ValueError("property broke")
    return True


ZERO, DONE = (ALWAYS, lambda p, s: s != (0, 0)), (E.TERMINAL, lambda p, s: False)
CONTINUE_CASES = {
    # name: model builder (each searched with keep_going)
    "the bfs test's toy": partial(grid, Near=(ALWAYS, lambda p, s: s != (1, 0)),
                                  Far=(ALWAYS, lambda p, s: s != (3, 2)),
                                  NoReset=(TRANSITION, lambda p, s, a, t: a != ("Reset",))),
    "deadlock, witnesses, liveness": partial(   # Corner is witnessed where Top fails
        grid, reset=False, Near=(ALWAYS, lambda p, s: s != (1, 0)),
        Top=(ALWAYS, lambda p, s: s != (3, 3)),
        Corner=(SOMETIMES, lambda p, s: s == (3, 3)), Far=(SOMETIMES, lambda p, s: s[0] > 3),
        Ends=(EVENTUALLY, lambda p, s: s == (3, 3))),
    "several in one state": partial(grid, reset=False, A=ZERO, B=ZERO, T1=DONE, T2=DONE),
    "a property raises once reported": partial(grid, P=(ALWAYS, _fails_then_raises),
                                               Q=(ALWAYS, lambda p, s: s != (0, 2))),
    # at (3, 0), the first state of sum 3, A fails, B raises (the search ends), C is not looked
    # at; so at (1, 2), in the other partition
    "a model error ends it": partial(grid, Near=(ALWAYS, lambda p, s: s != (1, 0)),
                                     A=(ALWAYS, lambda p, s: sum(s) != 3),
                                     B=(ALWAYS, _raises_at_sum_3),
                                     C=(ALWAYS, lambda p, s: sum(s) != 3)),
}


@pytest.mark.parametrize("case", CONTINUE_CASES)
def test_continue_agrees_with_bfs(spark, case):
    """--continue: every violated property once, the same shortest counterexample as the BFS's,
    in the same order, the same counts (the whole space, unless a model error ends it)."""
    got = agree(spark, CONTINUE_CASES[case], bfs.BfsOptions(keep_going=True))
    reported = [(v.property, None if v.path is None else len(v.path)) for v in got.violations]
    assert reported == {
        "the bfs test's toy": [("Near", 1), ("Far", 5), ("NoReset", 7)],
        "deadlock, witnesses, liveness": [("Near", 1), ("Top", 6), ("deadlock", 6),
                                          ("Far", None)],
        "several in one state": [("A", 0), ("B", 0), ("deadlock", 6), ("T1", 6), ("T2", 6)],
        "a property raises once reported": [("Q", 2), ("P", 4)],
        "a model error ends it": [("Near", 1), ("A", 3), ("model_error", 2)],
    }[case]


def test_per_action_coverage_follows_bfs_discovery_order_and_progress_is_per_level(spark):
    seen = []
    got = agree(spark, partial(grid, max=3), bfs.BfsOptions(progress=seen.append))
    cov = {c.name: (c.fired, c.distinct) for c in got.coverage}
    assert cov == {"IncX": (12, 3), "IncY": (12, 12), "Reset": (1, 0)}  # as in test_bfs
    assert got.never_enabled == ("Never",)
    spark_levels = seen[len(seen) - 8:]  # the BFS reported first (at most a line per 2 s)
    assert [p.depth for p in spark_levels] == [0, 1, 2, 3, 4, 5, 6, 6]  # the last level is empty
    assert [p.queue for p in spark_levels] == [1, 2, 3, 4, 3, 2, 1, 0]
    assert spark_levels[-1].distinct == 16


def test_interrupted_search_resumes_from_its_checkpoint(spark, tmp_path):
    cfg = twophase("twophase", 5)

    def stop_at_level_6(p):
        if p.depth == 6:
            raise KeyboardInterrupt

    run_dir = str(tmp_path / "run")
    first = spark_explorer.explore(cfg, bfs.BfsOptions(progress=stop_at_level_6),
                                   SparkOptions(run_dir=run_dir, checkpoint_minutes=0), spark=spark)
    assert first.interrupted and first.exit_code == 130
    assert json.loads((tmp_path / "run" / "checkpoint.json").read_text())["level"] == 5
    with pytest.raises(spark_explorer.CheckpointError, match="model.resource_managers = 5"):
        spark_explorer.explore(twophase("twophase", 4), spark_options=SparkOptions(
            run_dir=run_dir, recover=True), spark=spark)
    resumed = spark_explorer.explore(cfg, spark_options=SparkOptions(run_dir=run_dir, recover=True),
                                     spark=spark)
    assert summary(resumed) == summary(bfs.explore(registry.bind(cfg)))


def test_continue_resumes_from_its_checkpoint_with_what_it_reported(spark, tmp_path):
    """A --continue search interrupted after its first report resumes from its checkpoint: the
    report survives (checkpoint.json's ``violations``, the property stays retired) and the result
    is the uninterrupted BFS's. Without --continue that checkpoint is refused."""
    build = CONTINUE_CASES["the bfs test's toy"]

    def stop_at_level_3(p):
        if p.depth == 3:
            raise KeyboardInterrupt

    run_dir = str(tmp_path / "run")
    keep_going = bfs.BfsOptions(keep_going=True)
    first = spark_explorer.explore(build, replace(keep_going, progress=stop_at_level_3),
                                   SparkOptions(run_dir=run_dir, checkpoint_minutes=0), spark=spark)
    assert first.interrupted and [v.property for v in first.violations] == ["Near"]
    meta = json.loads((tmp_path / "run" / "checkpoint.json").read_text())
    assert (meta["level"], meta["violations"]) == (
        2, [{"kind": "always", "property": "Near", "path": [0, 0]}])  # (0, 0), then IncX
    with pytest.raises(spark_explorer.CheckpointError, match="recover it with --continue"):
        spark_explorer.explore(build, spark_options=SparkOptions(run_dir=run_dir, recover=True),
                               spark=spark)
    for report, message in [({"property": "Gone"}, "Gone .always., which this search does not"),
                            ({"path": [0, 9]}, "counterexample of Near in the checkpoint does not")]:
        edited = {**meta, "violations": [{**meta["violations"][0], **report}]}
        (tmp_path / "run" / "checkpoint.json").write_text(json.dumps(edited))
        with pytest.raises(spark_explorer.CheckpointError, match=message):
            spark_explorer.explore(build, keep_going, SparkOptions(run_dir=run_dir, recover=True),
                                   spark=spark)
    (tmp_path / "run" / "checkpoint.json").write_text(json.dumps(meta))
    resumed = spark_explorer.explore(build, keep_going, SparkOptions(run_dir=run_dir, recover=True),
                                     spark=spark)
    assert summary(resumed) == summary(bfs.explore(build(), keep_going))
    assert [v.property for v in resumed.violations] == ["Near", "Far", "NoReset"]


# --- the command line (each run starts its own Spark) ------------------------------------------

def run(*args, cwd, env=None, timeout=300):
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)


def test_cli_violation_trace_and_checkpoint(tmp_path):
    r = run("check", "twophase-broken", "--explorer", "spark", "--workers", "2",
            "--checkpoint", "0", "--out", "o", cwd=tmp_path)
    assert r.returncode == 12, r.stderr
    assert "shortest counterexample: 5 steps" in r.stdout and "explorer spark" in r.stdout
    # the figures after the counterexample (issue 59: the counterexample comes first)
    assert any(ln.startswith("  167 distinct states, 468 generated, depth 5,")
               for ln in r.stdout.splitlines()), r.stdout
    progress = [ln for ln in r.stderr.splitlines() if ln.startswith("progress:")]
    assert progress[0].startswith("progress: depth 0,") and len(progress) == 5  # one per level
    noise = [ln for ln in r.stderr.splitlines()
             if not ln.startswith("progress:") and "incubator modules" not in ln]
    assert noise == []  # Spark's own logging stays quiet
    trace = tmp_path / "o" / "TCConsistent.itf.json"
    assert json.loads(trace.read_text())["#meta"]["explorer"] == "spark"
    replay = run("replay", str(trace), cwd=tmp_path)
    assert replay.returncode == 12, replay.stdout + replay.stderr
    checkpoint = json.loads((tmp_path / "o" / "spark" / "checkpoint.json").read_text())
    assert checkpoint["level"] == 4 and checkpoint["distinct"] == 141  # the last complete level


def _comparable(doc: dict) -> dict:
    """A --json result without what differs between explorers: names, timings, memory, where
    the traces went."""
    stats = {k: doc["stats"][k]
             for k in ("generated", "distinct", "depth", "collision_probability")}
    violations = [{**v, "trace": Path(v["trace"]).name} for v in doc["violations"]]
    return {**doc, "explorer": None, "stats": stats, "violations": violations,
            "memory": None}   # the BFS's store (explorers/bfs/visited.py)


def test_cli_continue_on_kafka_0_11_tiny_is_the_bfs_result(tmp_path):
    """--continue --explorer spark on tiny with kafka-0.11, the full graph (--no-por): the BFS's
    figures (23,986 distinct states, 72,937 generated, depth 46, complete; the 19-step hanging
    transaction and the five violations it hid: tests/model/test_kafka.py), and the same --json
    result (the edges of Kafka's tables taken included) and traces as --explorer bfs but for the
    explorer's name and timings."""
    docs = {}
    for explorer, extra in (("bfs", ()), ("spark", ("--workers", "2"))):
        r = run("check", "tiny", "--protocol", "kafka-0.11", "--continue", "--json", "--no-por",
                "--explorer", explorer, *extra, "--out", explorer, cwd=tmp_path)
        assert r.returncode == 12, r.stderr
        docs[explorer] = json.loads(r.stdout)
    got = docs["spark"]
    assert (got["stats"]["distinct"], got["stats"]["generated"], got["stats"]["depth"],
            got["complete"]) == (23986, 72937, 46, True)
    assert [(v["property"], v["kind"], v["steps"]) for v in got["violations"]] == [
        ("no_hanging_transactions", "always", 19), ("zombie_fencing", "transition", 23),
        ("instance_fencing", "transition", 23), ("quiescent_completion", "terminal", 32),
        ("aborted_writes_stay_aborted", "always", 42), ("no_aborted_reads", "always", 43)]
    assert got["edges"]["TransactionState"]["taken"]
    assert _comparable(got) == _comparable(docs["bfs"])
    for v in got["violations"]:
        traces = [json.loads((tmp_path / e / Path(v["trace"]).name).read_text()) for e in docs]
        assert [t["#meta"].pop("explorer") for t in traces] == ["bfs", "spark"]
        assert traces[0] == traces[1]


@pytest.mark.parametrize("args, message", [
    (["--explorer", "bfs", "--partitions", "2"], "--partitions does not apply to --explorer bfs"),
    (["--explorer", "spark", "--spark-conf", "oops"], "expected KEY=VALUE"),
    (["--explorer", "spark", "--checkpoint", "-1"], "must be >= 0"),
    (["--explorer", "spark", "--recover", "nowhere"], "nowhere: no such directory"),
])
def test_cli_bad_spark_flags_are_one_line_errors(tmp_path, args, message):
    r = run("check", *args, cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_without_java_is_one_line_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)  # the venv's bin: no java there
    r = run("check", "--explorer", "spark", cwd=tmp_path, env=env)
    assert r.returncode == 2 and r.stderr.strip() == (
        "kafka-mc: error: the spark explorer needs Java 17 or newer: install it, or set JAVA_HOME")


def test_cli_without_pyspark_is_one_line_error(tmp_path):
    code = ("import sys; sys.modules['pyspark'] = None; from kafka_mc.explorers.cli import main; "
            "sys.exit(main(['check', '--explorer', 'spark']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == ("kafka-mc: error: the spark explorer needs pyspark, which comes "
                                "with the spark extra: pip install 'kafka-mc[spark]'")


class _Accumulator:
    """Stands in for the Spark accumulator when a task function runs outside Spark."""

    def __init__(self):
        self.value = {}

    def add(self, entry):
        self.value.update(entry)


def test_merge_makes_equal_fields_of_new_states_one_object(tmp_path):
    """Buckets from different partitions unpickle into separate copies of the same values; the
    merge interns the new states' fields, so the next level's pickles write each value once
    (pickling on Kafka small with 2 partitions: 25 s -> 7 s, bench/RESULTS.md)."""
    from kafka_mc.explorers.spark.tasks import Expansion, Job, Level, pack, read_level, unpack

    build = partial(registry.bind, registry.load(resolve_config_path("tiny")))
    model = build()
    s0 = next(iter(model.init_states()))
    (a0, t0), (a1, t1) = model.successors(s0)[:2]
    key = key_function(model)
    k0 = (0).to_bytes(4, "big")
    own = pack([(key(t0), k0, 0, key(s0), a0[0], t0)], 0, Expansion())
    other = pack([(key(t1), k0, 1, key(s0), a1[0], t1)], 1, None)
    c0, c1 = next(unpack(own)[0])[-1], next(unpack(other)[0])[-1]
    shared = [i for i, (x, y) in enumerate(zip(c0, c1)) if x == y and x is not y]  # copies
    assert shared
    acc = _Accumulator()
    level = Level(Job("t", build, 2, None, None, str(tmp_path)), 0, (), acc)
    records = list(level.merge(0, [("V", b""), (0, own), (1, other)]))
    _, frontier = read_level(records)
    (_, f0, n0), (_, f1, n1) = frontier
    assert (f0, f1) == (key(t0), key(t1)) and (n0, n1) == (t0, t1)
    assert all(n0[i] is n1[i] for i in shared)
    assert acc.value[(1, None, 0)].new == 2


def test_gc_paused_restores_the_collector_as_it_was():
    import gc
    from kafka_mc.explorers.core.adapter import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
