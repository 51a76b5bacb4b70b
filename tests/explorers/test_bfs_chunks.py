"""The chunked BFS against the one-at-a-time one (explorers/graph/search.py) where the chunk is cut short:
a violation at an initial state that is not the last, a model error in a property, an interrupt."""
import dataclasses
import json

import pytest

from kafka_mc.explorers.bfs import search as bfs

from kafka_mc.explorers.graph import search as graph
from kafka_mc.explorers.bfs.state_codec import decode_block, encode_block
from kafka_mc.model.core import Expectation as E, Property
from kafka_mc.model.protocol import ProtocolSpec, Rule
from tests.explorers.test_graph import _same
from tests.grid import grid, grid_spec

MODEL = Property.__module__.rpartition(".")[0]   # the model package, as imported


def test_a_violation_at_an_initial_state_counts_only_the_initial_states_before_it():
    spec = grid_spec(Inv=(E.ALWAYS, lambda p, s: s != (1, 0)))
    model = dataclasses.replace(spec, init=lambda p: [(0, 0), (1, 0), (2, 0), (0, 1)]).bind(
        {"max": 3, "reset": True})
    out = bfs.explore(model)
    assert out.stats.distinct == graph.explore(model).stats.distinct == 2


def _raises_at_2_2(p, s):
    if s == (2, 2):
        raise RuntimeError("boom")
    return True


def test_a_model_error_in_an_invariant_has_the_path_to_the_state_expanded_and_its_counts():
    model = grid(max=3, Inv=(E.ALWAYS, _raises_at_2_2))
    for keep_going in (False, True):
        out = bfs.explore(model, bfs.BfsOptions(keep_going=keep_going))
        [error] = out.violations
        assert error.kind == "model_error"
        assert error.path is not None and error.path.states[-1] in ((1, 2), (2, 1))
        assert error.path.actions == (("IncX",), ("IncX",), ("IncY",))   # as before the chunks
        assert (out.stats.distinct, out.stats.generated) == (12, 15)


def _interrupt_at_0_3(p, s):
    if s == (0, 3):
        raise KeyboardInterrupt
    return []


def test_an_interrupt_checks_and_counts_the_successors_generated_before_it():
    spec = grid_spec(I=(E.ALWAYS, lambda p, s: s != (3, 1)))
    spec = dataclasses.replace(spec, rules=spec.rules + (Rule("Kb", (), _interrupt_at_0_3,
                                                              lambda p, s: s),))
    model = spec.bind({"max": 4, "reset": False})
    out = bfs.explore(model)
    _same(graph.explore(model), out)   # (3, 1) fails before (0, 3) is expanded
    assert [v.property for v in out.violations] == ["I"] and not out.interrupted


@pytest.mark.parametrize("line", [
    "[" * 100_000,                                                  # nested past the recursion limit
    json.dumps({"c": ["tuple"], "n": [[0, 1.5]], "r": [[0]]}),      # a float component
    json.dumps({"c": ["tuple"], "n": [[0, {"a": 1}]], "r": [[0]]}),  # a JSON object
    json.dumps({"c": [], "n": [], "r": [2.0]}),                      # a float state
])
def test_a_malformed_state_block_raises_value_error_only(line):
    with pytest.raises(ValueError):
        decode_block(line, MODEL)


def test_state_blocks_round_trip_atoms_and_tuples():
    states = [(1, "a", None, True, (2, frozenset({3}))), 7]
    assert decode_block(encode_block(states), MODEL) == states


def test_a_reduced_search_resumes_from_a_checkpoint_past_where_reduction_views_differ(tmp_path):
    from kafka_mc.explorers.bfs.checkpoint import CheckpointOptions
    from kafka_mc.model import registry
    from kafka_mc.model.config import resolve_config_path
    cfg = registry.load(resolve_config_path("tiny")).with_values(**{"protocol.version": "kafka-0.11"})
    model = registry.bind(cfg)

    def stop_at_7(p):
        if p.depth >= 7:
            raise KeyboardInterrupt

    first = bfs.explore(model, bfs.BfsOptions(por=True, max_depth=9, progress=stop_at_7,
                                              progress_interval=0,
                                              checkpoint=CheckpointOptions(str(tmp_path), minutes=0)))
    assert first.interrupted
    resumed = bfs.explore(model, bfs.BfsOptions(por=True, max_depth=9, checkpoint=CheckpointOptions(
        str(tmp_path), recover=True)))
    whole = bfs.explore(model, bfs.BfsOptions(por=True, max_depth=9))
    _same(whole, resumed)


def test_a_checkpoint_json_nested_past_the_recursion_limit_is_refused_in_one_line(tmp_path):
    from kafka_mc.explorers.bfs.checkpoint import CheckpointError, read_meta
    (tmp_path / "checkpoint.json").write_text("[" * 100_000)
    with pytest.raises(CheckpointError, match="unreadable"):
        read_meta(str(tmp_path), {})


def test_a_violation_found_when_a_transition_property_fails_later_in_the_chunk_counts_as_before():
    # 1 -> 10 (fails I), 1 -> 11; 2 -> 12 (A), 2 -> 13 (B, fails T). Expanding 2 flushes the chunk
    # at the failing step, which meets 10 first: 2's transitions are not counted.
    succ = {1: [("A", 10), ("A", 11)], 2: [("A", 12), ("B", 13)]}

    def enabled(name):
        return lambda p, s: [(i,) for i, (a, _) in enumerate(succ.get(s, ())) if a == name]

    def apply(p, s, i):
        return succ[s][i][1]

    spec = ProtocolSpec("chunk", init=lambda p: [1, 2], rules=(
        Rule("A", ("i",), enabled("A"), apply), Rule("B", ("i",), enabled("B"), apply)),
        properties=(Property("I", E.ALWAYS, lambda p, s: s != 10),
                    Property("T", E.TRANSITION, lambda p, s, a, t: t != 13)), check_deadlock=False)
    out = bfs.explore(spec.bind({}))
    assert [v.property for v in out.violations] == ["I"]
    assert (out.stats.distinct, out.stats.generated) == (3, 2)
    assert [(c.name, c.fired) for c in out.coverage if c.fired] == [("A", 1)]


def test_a_model_error_in_an_invariant_of_an_initial_state_counts_the_ones_before_it():
    spec = dataclasses.replace(grid_spec(Inv=(E.ALWAYS, _raises_at_2_2)),
                               init=lambda p: [(0, 0), (2, 2), (1, 1)])
    out = bfs.explore(spec.bind({"max": 3, "reset": True}))
    assert [v.kind for v in out.violations] == ["model_error"] and out.stats.distinct == 2


def test_recovering_removes_the_memory_frontiers_a_killed_search_left(tmp_path):
    from kafka_mc.explorers.bfs.checkpoint import CheckpointOptions
    model = grid(max=3)
    bfs.explore(model, bfs.BfsOptions(max_depth=2, checkpoint=CheckpointOptions(str(tmp_path),
                                                                               minutes=0)))
    stale = tmp_path / "live" / "frontier-00003.states"   # as a search killed with --memory leaves
    stale.parent.mkdir()
    stale.write_text("{}\n")
    bfs.explore(model, bfs.BfsOptions(max_depth=2, checkpoint=CheckpointOptions(str(tmp_path),
                                                                               recover=True)))
    assert not stale.exists()


@pytest.mark.parametrize("name", ["kafka_mc.model.registry:metadata.Pair",    # importlib.metadata's
                                  "kafka_mc.model.kafka.world:IntEnum"])      # enum's
def test_a_state_block_names_only_classes_of_the_model_itself(name):
    from kafka_mc import model
    import kafka_mc.model.kafka.world  # noqa: F401 -- the modules the names go through are imported
    import kafka_mc.model.registry  # noqa: F401
    assert name.startswith(model.__name__ + ".")   # (the model's own package, named as imported)
    line = json.dumps({"c": [name], "n": [[0, "a", "b"]], "r": [[0]]})
    with pytest.raises(ValueError, match="not"):
        decode_block(line, model.__name__)


def test_a_checkpoint_that_cannot_be_written_is_not_a_model_error(tmp_path, monkeypatch):
    from kafka_mc.explorers.bfs import checkpoint as bfs_checkpoint
    from kafka_mc.explorers.bfs.checkpoint import CheckpointError, CheckpointOptions

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bfs_checkpoint, "save", disk_full)
    with pytest.raises(CheckpointError, match="cannot save"):
        bfs.explore(grid(max=3), bfs.BfsOptions(checkpoint=CheckpointOptions(str(tmp_path),
                                                                            minutes=0)))


def _raises_at_0x22(p, s):
    if s == 0x22:
        raise RuntimeError("boom")
    return True


def _packed_grid(max=5, reset=True, **props):
    """The grid with its state packed in an int, x * 16 + y: its own fingerprint."""
    rules = (
        Rule("IncX", (), lambda p, s: [()] if s >> 4 < p["max"] else [], lambda p, s: s + 16),
        Rule("IncY", (), lambda p, s: [()] if s & 15 < p["max"] else [], lambda p, s: s + 1),
        Rule("Reset", (), lambda p, s: [()] if p["reset"] and s == 17 * p["max"] else [],
             lambda p, s: 0),
    )
    properties = tuple(Property(name, kind, holds) for name, (kind, holds) in props.items())
    return ProtocolSpec("packed-grid", init=lambda p: [0], rules=rules, properties=properties,
                        packed=True).bind({"max": max, "reset": reset})


@pytest.mark.parametrize("chunk", [1, 5, 1 << 14])
@pytest.mark.parametrize("props, reset, keep_going", [
    ({}, True, False),
    ({}, False, False),   # (5, 5) is a deadlock
    ({"Sum": (E.ALWAYS, lambda p, s: (s >> 4) + (s & 15) < 6)}, True, False),
    ({"Sum": (E.ALWAYS, lambda p, s: (s >> 4) + (s & 15) < 6),
      "Not33": (E.ALWAYS, lambda p, s: s != 0x33)}, False, True),
    ({"Witness": (E.SOMETIMES, lambda p, s: s == 0x45),
      "Never": (E.SOMETIMES, lambda p, s: s == 0x66)}, True, False),
    ({"Raises": (E.ALWAYS, _raises_at_0x22)}, True, False),
])
def test_a_packed_model_s_successors_join_the_chunk_whole_as_if_looked_up_one_at_a_time(
        monkeypatch, chunk, props, reset, keep_going):
    monkeypatch.setattr(bfs, "CHUNK", chunk)
    model = _packed_grid(reset=reset, **props)
    one_at_a_time = graph.explore(model, graph.GraphOptions(keep_going=keep_going))
    chunked = bfs.explore(model, bfs.BfsOptions(keep_going=keep_going))
    _same(one_at_a_time, chunked)


@pytest.mark.parametrize("size", [0, 1, 7, 5000])
def test_a_chunk_s_first_occurrences_are_numpy_s_unique_with_its_indices(size):
    import numpy as np

    from kafka_mc.explorers.bfs.visited import first_occurrences
    fps = np.random.default_rng(size).integers(-50, 50, size)
    got, want = first_occurrences(fps), np.unique(fps, return_index=True)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
