"""The BFS's compact visited set and tree (explorers/bfs/visited.py) and its checkpoints
(explorers/bfs/checkpoint.py): a search killed with SIGKILL resumes from its last checkpoint with
the same counts, verdicts and trace bytes; a checkpoint that is not whole or not this search's is
refused with one line and exit 2."""
import json
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from kafka_mc.explorers.bfs.search import explore
from kafka_mc.explorers.bfs.visited import Levels, VisitedSet
from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from tests.explorers.test_cli import EXE, run

MODEL = registry.__name__.rpartition(".")[0]   # the model package, as imported

# Kafka tiny on kafka-0.11: 46 levels, six properties violated at different depths (with
# --continue some are reported before a checkpoint and some after).
KAFKA = ("check", "tiny", "--set", "protocol.version=kafka-0.11", "--continue", "--json")


# --- the visited set ----------------------------------------------------------------------------

def test_visited_set_keeps_first_occurrences_and_agrees_with_a_python_set():
    rng = np.random.default_rng(7)
    v, seen = VisitedSet(capacity=4), set()
    for level in range(6):
        for _ in range(5):
            chunk = rng.integers(-50, 50, size=40, dtype=np.int64) * 1_000_003
            new = v.add_new(chunk)
            want = []
            for i, fp in enumerate(chunk.tolist()):
                if fp not in seen:
                    seen.add(fp)
                    want.append(i)
            assert new.tolist() == want
            assert len(v) == len(seen)
        done = set(v.sorted_fingerprints().tolist())
        assert all(v.seen_before(fp) for fp in done)
        v.end_level()
        assert v.sorted_fingerprints().tolist() == sorted(seen)
    assert not v.seen_before(1) and v.nbytes == 8 * len(seen)


def test_levels_walk_parent_indices_back_to_an_initial_state():
    lv = Levels()
    lv.add(np.array([10, 11]), np.array([0, 0]))
    lv.close()
    lv.add(np.array([20]), np.array([1]))
    lv.add(np.array([21, 22]), np.array([0, 1]))
    assert lv.path(1, 2) == [11, 22]          # the open level, across its chunks
    lv.close()
    lv.add(np.array([30]), np.array([1]))
    assert lv.path(2, 0) == [10, 21, 30] and len(lv) == 2 and lv.open_size == 1


def test_compact_search_holds_20_bytes_a_state_on_twophase():
    model = registry.bind(registry.load(resolve_config_path("twophase")))
    out = explore(model)
    assert (out.stats.distinct, out.stats.generated, out.stats.depth) == (296_448, 2_744_705, 22)
    memory = out.extra["memory"]
    assert memory["visited_bytes"] == 8 * 296_448
    assert memory["tree_bytes"] == 12 * 296_448


# --- checkpoints --------------------------------------------------------------------------------

def _result(out_dir: Path, stdout: str) -> tuple[dict, dict]:
    """The JSON result without its timings and memory, and the bytes of every trace written."""
    data = json.loads(stdout)
    for k in ("seconds", "states_per_second", "peak_memory_mb", "bytes_per_state"):
        data["stats"].pop(k)
    data.pop("memory", None)
    for v in data["violations"]:
        v["trace"] = Path(v["trace"]).name
    traces = {f.name: f.read_bytes() for f in sorted(out_dir.glob("*.itf.json"))}
    return data, traces


def _checkpointed_depth(run_dir: Path) -> int:
    try:
        return json.loads((run_dir / "checkpoint.json").read_text())["depth"]
    except (OSError, ValueError, KeyError):
        return -1


def test_a_killed_search_resumes_with_identical_results(tmp_path):
    plain = run(*KAFKA, "--out", tmp_path / "plain", cwd=tmp_path)
    assert plain.returncode == 12, plain.stderr
    want = _result(tmp_path / "plain", plain.stdout)
    assert len(want[1]) == 6

    out = tmp_path / "killed"
    p = subprocess.Popen([EXE, *KAFKA, "--checkpoint", "0", "--out", out], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _checkpointed_depth(out / "bfs") < 20 and p.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL, "the search ended before it could be killed"
    depth = _checkpointed_depth(out / "bfs")
    assert 20 <= depth < 46
    for f in out.glob("*.itf.json"):   # the traces a killed search wrote are not the test's
        f.unlink()

    resumed = run(*KAFKA, "--recover", out / "bfs", "--out", out, cwd=tmp_path)
    assert resumed.returncode == 12, resumed.stderr
    assert _result(out, resumed.stdout) == want


def test_recovering_refuses_what_is_not_a_whole_checkpoint_of_this_search(tmp_path):
    out = tmp_path / "o"
    r = run("check", "twophase", "--checkpoint", "0", "--json", "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run_dir = out / "bfs"

    def refused(*extra, config="twophase"):
        r = run("check", config, "--recover", run_dir, "--out", out, *extra, cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (r.returncode, r.stderr)
        return r.stderr

    # a fresh search does not overwrite a checkpoint
    r = run("check", "twophase", "--checkpoint", "0", "--out", out, cwd=tmp_path)
    assert r.returncode == 2 and "--recover" in r.stderr
    # another configuration, another property selection
    assert "model.resource_managers" in refused("--set", "model.resource_managers=6")
    assert "checked =" in refused("--invariant", "TCConsistent")
    # a truncated level
    level = run_dir / "levels" / "level-00003.fps.npy"
    data = level.read_bytes()
    level.write_bytes(data[:-8])
    assert "truncated or altered" in refused()
    # altered in place (same size)
    level.write_bytes(data[:-8] + (12345).to_bytes(8, "little"))
    assert "truncated or altered" in refused()
    level.write_bytes(data)
    # checkpoint.json edited (a count) or garbled
    meta_file = run_dir / "checkpoint.json"
    meta = json.loads(meta_file.read_text())
    meta_file.write_text(json.dumps({**meta, "generated": meta["generated"] + 1}))
    assert "altered" in refused()
    meta_file.write_text("{not json")
    assert "unreadable" in refused()
    meta_file.write_text(json.dumps(meta))
    # no such directory, no checkpoint in it
    assert "no such directory" in run("check", "twophase", "--recover", tmp_path / "nope",
                                      cwd=tmp_path).stderr
    (tmp_path / "empty").mkdir()
    r = run("check", "twophase", "--recover", tmp_path / "empty", cwd=tmp_path)
    assert r.returncode == 2 and "no checkpoint" in r.stderr
    # and once whole again it resumes (at its last level: nothing left but the end)
    r = run("check", "twophase", "--recover", run_dir, "--json", "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["stats"]["distinct"] == 296_448


def test_a_tampered_frontier_state_is_refused(tmp_path):
    out = tmp_path / "o"
    p = subprocess.Popen([EXE, "check", "tiny", "--checkpoint", "0", "--out", out], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p.wait(timeout=120)
    run_dir = out / "bfs"
    states = next(run_dir.glob("frontier-*.states"))
    lines = states.read_text().splitlines()
    assert lines
    meta = json.loads((run_dir / "checkpoint.json").read_text())
    # a frontier edited consistently with its digest is still caught by its fingerprints
    import hashlib
    block = json.loads(lines[0])
    enum = block["c"].index("kafka_mc.model.kafka.world:ClientState")
    node = next(n for n in block["n"] if n[0] == enum)
    node[1] = 2 if node[1] != 2 else 3      # another valid client state
    lines[0] = json.dumps(block, separators=(",", ":"))
    body = ("\n".join(lines) + "\n").encode()
    states.write_bytes(body)
    meta["files"][states.name] = {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    from kafka_mc.explorers.bfs.checkpoint import _meta_digest
    meta["digest"] = _meta_digest(meta)
    (run_dir / "checkpoint.json").write_text(json.dumps(meta))
    r = run("check", "tiny", "--recover", run_dir, "--out", out, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "does not match its fingerprint" in r.stderr or "unreadable" in r.stderr


def test_checkpoint_options_are_for_exhaustive_explorers_only(tmp_path):
    r = run("check", "twophase", "--explorer", "simulate", "--checkpoint", "1", cwd=tmp_path)
    assert r.returncode == 2 and "--checkpoint" in r.stderr


# --- the memory budget and the state codec ------------------------------------------------------

def test_a_search_past_its_memory_budget_keeps_its_results(tmp_path):
    """--memory 1 moves the tree and every frontier to disk from the first level on."""
    plain = run(*KAFKA, "--out", tmp_path / "plain", cwd=tmp_path)
    disk = run(*KAFKA, "--memory", "1", "--out", tmp_path / "disk", cwd=tmp_path)
    assert disk.returncode == plain.returncode == 12, disk.stderr
    want, got = _result(tmp_path / "plain", plain.stdout), _result(tmp_path / "disk", disk.stdout)
    assert got == want
    assert json.loads(disk.stdout)["memory"]["on_disk"] is True
    assert json.loads(plain.stdout)["memory"]["on_disk"] is False
    assert not list(tmp_path.glob("disk/**/*.states"))   # its temporary files are gone


def test_state_blocks_round_trip_and_share_components():
    from kafka_mc.explorers.core.adapter import successors_of
    from kafka_mc.explorers.bfs.state_codec import decode_block, encode_block
    model = registry.bind(registry.load(resolve_config_path("tiny")))
    succ = successors_of(model)
    states = [t for s in model.init_states() for _, t in succ(s)]
    states += [u for t in states for _, u in succ(t)]
    line = encode_block(states)
    back = decode_block(line, MODEL)
    assert back == states and [hash(s) for s in back] == [hash(s) for s in states]
    assert [type(s) for s in back] == [type(s) for s in states]
    # components shared by the states are written once: the block is smaller than the states
    # written one by one
    assert len(line) < sum(len(encode_block([s])) for s in states) / 2


@pytest.mark.parametrize("evil", [
    '{"c": ["os:system"], "n": [[0, "ls"]], "r": [[0]]}',          # not the model's
    '{"c": ["kafka_mc.model.core:Footprint.__init__"], "n": [[0]], "r": [[0]]}',  # not a NamedTuple class
    '{"c": ["kafka_mc.model.kafka.nope:X"], "n": [[0]], "r": [[0]]}',       # not imported
    '{"c": ["tuple"], "n": [[0, [5]]], "r": [[0]]}',              # a dangling reference
    '{"c": ["tuple"], "n": [[3]], "r": [[0]]}',                   # no such class
    '[1, 2]',
])
def test_a_state_block_builds_only_the_models_classes(evil):
    from kafka_mc.explorers.bfs.state_codec import decode_block
    with pytest.raises(ValueError):
        decode_block(evil, MODEL)


def test_states_that_are_atoms_round_trip():
    from kafka_mc.explorers.bfs.state_codec import decode_block, encode_block
    states = [5, "x", None, True, (1, frozenset({2})), 5]
    assert decode_block(encode_block(states), MODEL) == states


def test_symmetry_with_the_budget_and_a_checkpoint_keeps_the_reduced_count(tmp_path):
    """TwoPhase under symmetry is no longer packed (its view sorts the resource managers): its
    frontier goes through the state codec as plain ints."""
    plain = run("check", "twophase", "--symmetry", "--json", "--out", tmp_path / "a", cwd=tmp_path)
    disk = run("check", "twophase", "--symmetry", "--memory", "1", "--checkpoint", "0", "--json",
               "--out", tmp_path / "b", cwd=tmp_path)
    assert plain.returncode == disk.returncode == 0, disk.stderr
    assert json.loads(disk.stdout)["stats"]["distinct"] == \
        json.loads(plain.stdout)["stats"]["distinct"] == 920
    again = run("check", "twophase", "--symmetry", "--recover", tmp_path / "b" / "bfs", "--json",
                "--out", tmp_path / "b", cwd=tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["stats"]["distinct"] == 920
    other = run("check", "twophase", "--recover", tmp_path / "b" / "bfs", cwd=tmp_path)
    assert other.returncode == 2 and "check.symmetry" in other.stderr


def test_a_forged_violation_with_its_digest_recomputed_is_refused(tmp_path, capsys):
    """Issue 48: a violation added to checkpoint.json, its digest recomputed, was reported on
    ``--recover --continue``: recovery replayed the recorded path but never re-checked the
    property at its end. Now the path must end in the violation it claims."""
    from kafka_mc.explorers import cli
    from kafka_mc.explorers.bfs import checkpoint as bfs_checkpoint

    out = tmp_path / "o"
    argv = ["check", "twophase", "--set", "model.resource_managers=3", "--continue"]
    assert cli.main([*argv, "--checkpoint", "0", "--out", str(out)]) == 0
    meta_file = out / "bfs" / "checkpoint.json"
    meta = json.loads(meta_file.read_text())
    assert meta["violations"] == []
    forged = {**meta, "violations": [{"kind": "always", "property": "TCConsistent",
                                      "path": [0, 1]}]}
    forged["digest"] = bfs_checkpoint._meta_digest(forged)
    meta_file.write_text(json.dumps(forged))
    capsys.readouterr()
    code = cli.main([*argv, "--recover", str(out / "bfs"), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "the counterexample of TCConsistent in the checkpoint does not violate it" in err


def test_a_fifo_as_checkpoint_json_is_refused_without_blocking(tmp_path):
    import os

    run_dir = tmp_path / "bfs"
    run_dir.mkdir()
    os.mkfifo(run_dir / "checkpoint.json")
    r = run("check", "twophase", "--recover", run_dir, "--out", tmp_path, cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "checkpoint.json: not a regular file" in r.stderr, r.stderr
