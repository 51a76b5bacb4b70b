"""The BFS with ``--workers`` (explorers/bfs/workers.py): a level expanded by forked processes
gives exactly what the sequential loop gives -- counts, coverage, edges, verdicts and
counterexamples -- with and without the reduction and symmetry; a level holding something to
report, or a child that fails, is expanded again by one process; an interrupt leaves no child
behind."""
from __future__ import annotations

import os
import pickle

import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.kafka.capabilities import mutants
from kafka_mc.explorers.bfs import workers as bfs_workers
from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.explorers.reductions.por import sample_states

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="--workers forks")


@pytest.fixture(autouse=True)
def small_levels(monkeypatch):
    """Levels of a few states already go to the workers (by default: 2,048 and more)."""
    monkeypatch.setattr(bfs_workers, "PARALLEL_MIN", 8)


def kafka(preset="latest", config="tiny", **overrides):
    return registry.bind(registry.load(resolve_config_path(config),
                                       overrides={"protocol.version": preset, **overrides}))


def summary(o):
    """Everything an outcome says but its timings, its memory and the workers' note."""
    return (o.stats.distinct, o.stats.generated, o.stats.depth, o.complete, o.interrupted,
            o.coverage, o.never_enabled, o.edges, o.checked, o.unchecked, o.not_applicable,
            [(v.property, v.kind, v.detail, v.path and (v.path.states, v.path.actions))
             for v in o.violations],
            o.extra.get("reduction"))


def both(model, workers=2, **options):
    one = explore(model, BfsOptions(**options))
    many = explore(model, BfsOptions(workers=workers, **options))
    assert "workers" not in one.extra
    return one, many


@pytest.mark.parametrize("por", [False, True])
def test_workers_give_the_sequential_search_exactly(por):
    m = kafka("kafka-3.6")
    one, two = both(m, por=por)
    assert summary(one) == summary(two)
    assert two.extra["workers"] == {"processes": 2, "levels": two.extra["workers"]["levels"]}
    assert two.extra["workers"]["levels"] >= 10   # the levels did go to the workers
    three = explore(m, BfsOptions(por=por, workers=3))
    assert summary(three) == summary(one) and three.extra["workers"]["processes"] == 3


def test_workers_with_symmetry_and_the_reduction():
    m = kafka("kafka-4.0", **{"cluster.partitions": 2, "check.symmetry": True})
    one, two = both(m, por=True, properties=["txn_atomicity", "no_hanging_transactions"])
    assert summary(one) == summary(two) and two.extra["workers"]["levels"] >= 10


@pytest.mark.parametrize("workers, own", [(2, 0.05), (2, 20.0), (3, 1.15)],
                         ids=["in-a-child", "in-the-bfs-process", "three"])
def test_a_violation_is_reported_as_by_one_process(workers, own, monkeypatch):
    """The first violation, its counterexample and the counts at the stop are the sequential
    search's: the workers expand its level up to the chunk holding it, one process the rest.
    ``own``: the BFS process's share against a child's, held (the violation falls in a child's
    slice, or in the BFS process's own)."""
    takeovers = []
    level = bfs_workers.expand_level

    def spy(frontier, *args):
        resume = level(frontier, *args)
        takeovers.append((resume, len(frontier)))
        return resume
    monkeypatch.setattr(bfs_workers, "expand_level", spy)
    monkeypatch.setattr(bfs_workers, "CHUNK", 64)
    monkeypatch.setattr(bfs_workers, "OWN_SHARE", own)
    monkeypatch.setattr(bfs_workers, "ADAPTIVE", False)
    m = kafka("kafka-0.11")
    one, two = both(m, workers=workers, properties=["no_hanging_transactions"])
    assert [v.property for v in one.violations] == ["no_hanging_transactions"]
    assert summary(one) == summary(two)
    assert all(resume == size for resume, size in takeovers[:-1])
    assert two.extra["workers"]["levels"] == len(takeovers) - 1 >= 8
    resume, size = takeovers[-1]
    assert 0 < resume < size   # the violation's level: partly the workers', partly one's
    if workers == 2:           # and the slice it stopped in is the one meant (the BFS process's
        assert (resume < round(size * own / (1 + own))) == (own > 1)   # is the first)


def test_the_cut_follows_the_processes_rates(monkeypatch):
    """``Balance``: the first level is cut by ``OWN_SHARE``, the next ones so that the BFS
    process and the children would be done together at the last level's rates (smoothed);
    fixed with ``ADAPTIVE`` off. Every cut gives the sequential search (the test above)."""
    b = bfs_workers.Balance()
    assert b.bounds(2150, 2) == [0, round(2150 / 2.15 * 1.15), 2150]
    assert b.bounds(3150, 3) == [0, 1150, 2150, 3150]
    b.update([0, 1000, 2000], ready=2.0, finished=[1.0])   # the BFS process at half the rate
    assert b.own == 0.5 and b.bounds(3000, 2) == [0, 1000, 3000]
    b.update([0, 1000, 3000], ready=1.0, finished=[2.0])   # then at the child's: halfway
    assert b.own == 0.75
    b.update([0, 1000, 3000], ready=1.0, finished=[0.0])   # an unmeasured child: no change
    assert b.own == 0.75
    monkeypatch.setattr(bfs_workers, "ADAPTIVE", False)
    assert b.bounds(2150, 2) == [0, 1150, 2150]
    seen = []
    level = bfs_workers.expand_level

    def spy(frontier, workers, e, merge, balance, tick=None):
        seen.append(balance.bounds(len(frontier), workers))
        return level(frontier, workers, e, merge, balance, tick)
    monkeypatch.setattr(bfs_workers, "ADAPTIVE", True)
    monkeypatch.setattr(bfs_workers, "expand_level", spy)
    one, two = both(kafka("kafka-3.6"))
    assert summary(one) == summary(two) and len(seen) >= 10
    assert seen[0][1] == round(seen[0][2] / 2.15 * 1.15)
    assert len({round(cut[1] / cut[2], 3) for cut in seen}) > 3   # the cut moved


@pytest.mark.parametrize("mut", mutants.MUTANTS[:4], ids=[x.name for x in mutants.MUTANTS[:4]])
def test_workers_keep_going_report_every_violation_as_one_does(mut):
    cfg = registry.load(resolve_config_path("tiny"),
                        overrides=mut.settings | {"model.mutant": mut.name})
    one, two = both(registry.bind(cfg), keep_going=True)
    assert summary(one) == summary(two) and one.violations


def test_a_failing_child_hands_its_level_back(monkeypatch):
    """A child that cannot send its result (here: its states cannot be encoded) costs time,
    not a verdict: every level is expanded by one process."""
    def broken(got, frontier):
        raise RuntimeError("cannot encode")
    monkeypatch.setattr(bfs_workers, "relative", broken)
    one, two = both(kafka("kafka-3.6"))
    assert summary(one) == summary(two) and two.extra["workers"]["levels"] == 0


def test_a_child_failing_at_once_hands_its_slice_back(monkeypatch):
    """A child that fails at once: the BFS process's slice (the first) is merged, and one
    process expands the child's from its start."""
    parent, expand, resumed = os.getpid(), bfs_workers.expand, []

    def failing_in_children(frontier, lo, hi, e, tick=None):
        if os.getpid() != parent:
            raise RuntimeError("a child that fails at once")
        return expand(frontier, lo, hi, e, tick)
    level = bfs_workers.expand_level

    def spy(frontier, workers, e, merge, balance, tick=None):
        resume = level(frontier, workers, e, merge, balance, tick)
        resumed.append((resume, balance.bounds(len(frontier), workers)[1]))
        return resume
    monkeypatch.setattr(bfs_workers, "expand", failing_in_children)
    monkeypatch.setattr(bfs_workers, "expand_level", spy)
    one, two = both(kafka("kafka-3.6"))
    assert summary(one) == summary(two) and two.extra["workers"]["levels"] == 0
    assert len(resumed) >= 5 and all(0 < resume == cut for resume, cut in resumed)


def test_no_fork_while_another_thread_runs():
    """A fork copies only the calling thread: with another one running, one process."""
    import threading
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        one, two = both(kafka("kafka-3.6"))
    finally:
        stop.set()
        other.join()
    assert summary(one) == summary(two) and "workers" not in two.extra


def test_an_interrupt_during_a_level_stops_the_children():
    """Ctrl-C in a level the workers expand: the counts of the last complete level are reported,
    and no child is left running or unwaited."""
    calls = []

    def progress(p):
        calls.append(p)
        if p.depth >= 6:
            raise KeyboardInterrupt

    o = explore(kafka("kafka-3.6"), BfsOptions(workers=2, progress=progress,
                                                progress_interval=0.0))
    assert o.interrupted and not o.complete and o.stats.depth == 6
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_a_state_relative_to_its_parent_rebuilds_it():
    """``delta`` / ``patch`` on Kafka states and their successors (pickled, as a child sends
    them): the very state, sharing the parent's unchanged components."""
    m = kafka("latest", **{"cluster.partitions": 2})
    pairs = 0
    for s in sample_states(m, 200, seed=5):
        for a in m.actions(s):
            t = m.step(s, a)
            d = pickle.loads(pickle.dumps(bfs_workers.delta(t, s, bfs_workers.DEPTH)))
            back = bfs_workers.patch(s, d)
            assert back == t and type(back) is type(t)
            assert all(x is y for x, y, z in zip(back, s, t) if z is y)
            pairs += 1
    assert pairs > 300
    assert bfs_workers.patch((1, (2, 3)), bfs_workers.delta((1, (2, 4)), (1, (2, 3)), 2)) \
        == (1, (2, 4))


def test_workers_on_a_toy_with_plain_tuple_states():
    """A model that is not Kafka's: plain tuples of ints, in full and reduced."""
    from tests.explorers.test_por import Counters
    m = Counters(n=5, k=3)
    one, two = both(m)
    assert summary(one) == summary(two) and one.stats.distinct == 4 ** 5
    assert two.extra["workers"]["levels"] > 3
    one, two = both(m, por=True)
    assert summary(one) == summary(two) and one.stats.distinct < 4 ** 5


def test_cli_workers_flag(tmp_path, capsys):
    from kafka_mc.explorers import cli
    args = ["check", "tiny", "--set", "protocol.version=kafka-3.6", "--out", str(tmp_path)]
    assert cli.main(args) == 0
    alone = capsys.readouterr().out
    assert cli.main(args + ["--workers", "2"]) == 0
    two = capsys.readouterr().out
    assert "workers:" in two and "workers:" not in alone
    strip = lambda text: [ln for ln in text.splitlines() if "workers:" not in ln
                          and " s (" not in ln and "peak memory" not in ln]
    assert strip(alone) == strip(two)
    assert cli.main(args + ["--workers", "auto"]) == 0
    capsys.readouterr()
    for bad in (["--workers", "0"], ["--workers", "many"], ["--workers", "2", "--explorer", "graph"]):
        with pytest.raises(SystemExit) as e:
            code = cli.main(args + bad)
            raise SystemExit(code)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_workers_with_a_memory_budget_and_checkpoints(tmp_path):
    """A level spilled to disk (``--memory``) is expanded by one process; checkpoints at every
    level boundary, and a search recovered from the last one, end as the sequential search."""
    from kafka_mc.explorers.bfs.checkpoint import CheckpointOptions, start_fresh
    m = kafka("kafka-3.6")
    one, disk = both(m, memory_mb=1)
    assert summary(one) == summary(disk) and disk.extra["workers"]["levels"] == 0
    run_dir = tmp_path / "bfs"
    start_fresh(str(run_dir))
    saved = explore(m, BfsOptions(workers=2, checkpoint=CheckpointOptions(
        run_dir=str(run_dir), minutes=0, recover=False, identity={})))
    again = explore(m, BfsOptions(workers=2, checkpoint=CheckpointOptions(
        run_dir=str(run_dir), minutes=0, recover=True, identity={})))
    assert summary(saved)[:2] == summary(one)[:2] and saved.extra["workers"]["levels"] > 5
    assert summary(again)[:2] == summary(one)[:2]


@pytest.mark.parametrize("expectation", ["always", "sometimes"])
def test_a_property_raising_is_a_model_error_as_with_one_process(expectation):
    """A property that raises on some state (an invariant, or a witness the BFS process sees as
    it merges): the same model error, path and counts as the sequential search."""
    from kafka_mc.model.core import Expectation, Property
    from tests.explorers.test_por import Counters

    def boom(s):
        if s == (2, 1, 3, 0, 1):
            raise ZeroDivisionError("a property's bug")
        return expectation == "always"
    m = Counters(n=5, k=3, extra=(Property("boom", Expectation(expectation), boom),))
    one, two = both(m, keep_going=True)
    assert [v.kind for v in one.violations] == ["model_error"]
    assert summary(one) == summary(two) and two.extra["workers"]["levels"] >= 3


def _threads_after_importing_the_cli(**env) -> int:
    import subprocess
    import sys
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    run = subprocess.run([sys.executable, "-c", "import os, kafka_mc.explorers.main; "
                          "kafka_mc.explorers.main.prepare(); import kafka_mc.explorers.cli; "
                          "print(len(os.listdir('/proc/self/task')))"], capture_output=True,
                         text=True, env={**base, **env}, timeout=120)
    assert run.returncode == 0, run.stderr
    return int(run.stdout)


def test_numpys_blas_pool_does_not_spin_beside_the_workers():
    """OpenBLAS's thread pool (numpy's) spins between calls and took the core a second process
    needs; the explorers make no BLAS call, so they start numpy with one BLAS thread (a caller's
    own OPENBLAS_NUM_THREADS wins)."""
    assert _threads_after_importing_the_cli() == 1
    assert _threads_after_importing_the_cli(OPENBLAS_NUM_THREADS="2") == 2
