"""Checkpoints of the breadth-first search: ``--checkpoint MIN`` saves, ``--recover DIR`` resumes.

A checkpoint is taken at a level boundary (the level of depth ``d`` complete, none of it
expanded), in the search's run directory (``OUT/bfs``)::

    levels/level-00007.fps.npy       depth 7's fingerprints in discovery order (int64), and
    levels/level-00007.parents.npy   their parents' indices in depth 6 (int32): the BFS tree,
                                     written once when a checkpoint first needs the level
    frontier-00007.states            depth 7's states, a block of them a line
                                     (``kafka_mc.explorers.bfs.state_codec``); none for a packed model, whose
                                     states are their own fingerprints
    checkpoint.json                  the commit point, written last

``checkpoint.json`` names the search (model, config, properties checked, kafka-mc version and
this format), its counters and the violations a ``--continue`` search reported (as successor
positions, ``kafka_mc.explorers.core.adapter.follow``), and every file it needs with its size and SHA-256. Each
file is written to a temporary name and renamed, and the previous checkpoint's frontier is removed
only after the new ``checkpoint.json`` is in place, so a crash at any moment leaves the last
committed checkpoint whole. The visited set is not written: it is the union of the levels'
fingerprints, sorted again on recovery.

Recovery refuses (``CheckpointError``, one line) a checkpoint of another search, one whose
``checkpoint.json`` is not as written (its own digest), and one whose files are missing, truncated
or altered; frontier states must decode to their recorded fingerprints. Nothing is unpickled or
evaluated: the files are numbers (``.npy`` without objects) and JSON.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from kafka_mc.model.config import shown
from kafka_mc.explorers.bfs import checkpoint_meta as meta_types
from kafka_mc.explorers.core.checking import DEADLOCK, shows
from kafka_mc.explorers.core.run_dir import is_directory
from kafka_mc.explorers.bfs.visited import Levels, PackedLevel, VisitedSet, level_files
from kafka_mc.explorers.core.adapter import follow, successors_of
from kafka_mc.explorers.core.result import Path as Behaviour
from kafka_mc.traces.files import write_atomically
from kafka_mc.explorers.bfs.state_codec import BLOCK, decode_block, encode_block, model_package

FORMAT = 1
META = "checkpoint.json"


class CheckpointError(ValueError):
    """An unusable checkpoint or run directory; the message is one line."""


@dataclass
class CheckpointOptions:
    run_dir: str
    minutes: float | None = None   # None: never; 0: after every level
    recover: bool = False
    identity: dict = field(default_factory=dict)   # config, version: what must match to resume
    digests: dict = field(default_factory=dict)    # level file -> its digest (levels are final)


@dataclass
class Resumed:
    """A search as a checkpoint left it."""
    depth: int
    levels: Levels
    visited: VisitedSet
    frontier: Sequence
    meta: dict


# --- files ----------------------------------------------------------------------------------------

def _digest(file: Path) -> dict:
    h = hashlib.sha256()
    with open(file, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return {"bytes": file.stat().st_size, "sha256": h.hexdigest()}


def _meta_digest(meta: dict) -> str:
    body = {k: v for k, v in meta.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def _blocks(states):
    block = []
    for s in states:
        block.append(s)
        if len(block) == BLOCK:
            yield block
            block = []
    if block:
        yield block


def frontier_file(run_dir: Path, d: int) -> Path:
    return run_dir / f"frontier-{d:05d}.states"


def positions(model, path: Behaviour) -> list[int]:
    """A behaviour as successor positions from an initial state (``kafka_mc.explorers.core.adapter.follow``)."""
    inits = list(model.init_states())
    out = [inits.index(path.states[0])]
    succ = successors_of(model)
    for s, a, t in zip(path.states, path.actions, path.states[1:]):
        out.append(next(i for i, (b, u) in enumerate(succ(s)) if b == a and u == t))
    return out


# --- saving ---------------------------------------------------------------------------------------

def save(run_dir: str, model, levels: Levels, frontier: Sequence, packed: bool,
         counters: dict, digests: dict) -> None:
    """Commit a checkpoint of the search whose depth ``len(levels) - 1`` is complete and not
    expanded (its states: ``frontier``)."""
    root = Path(run_dir)
    depth = len(levels) - 1
    files = {}
    for d in range(len(levels)):
        for f in level_files(root / "levels", d):
            if str(f) not in digests:
                levels.spill(root / "levels", d)
                break
        for f in level_files(root / "levels", d):
            files[str(f.relative_to(root))] = f
            if str(f) not in digests:
                digests[str(f)] = _digest(f)
    if not packed:
        states = frontier_file(root, depth)
        write_atomically(states, ((encode_block(block) + "\n").encode("utf-8")
                                  for block in _blocks(frontier)))
        files[states.name] = states
    meta = {"format": FORMAT, "depth": depth, **counters,
            "files": {name: digests.get(str(f)) or _digest(f) for name, f in sorted(files.items())},
            "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    meta["digest"] = _meta_digest(meta)
    write_atomically(root / META, json.dumps(meta, indent=1, sort_keys=True) + "\n")
    for old in root.glob("frontier-*.states"):
        if old.name not in meta["files"]:
            old.unlink(missing_ok=True)


# --- recovering -----------------------------------------------------------------------------------

def _files(v) -> bool:
    return isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(x, dict) and set(x) == {"bytes", "sha256"}
        and meta_types.count(x["bytes"]) and isinstance(x["sha256"], str) for k, x in v.items())


_TYPES = {"format": meta_types.count, "identity": lambda v: isinstance(v, dict),
          "depth": meta_types.count, "generated": meta_types.count, "distinct": meta_types.count,
          "fired": meta_types.tally, "found": meta_types.tally, "edges": meta_types.edges,
          "pending": meta_types.names, "violations": meta_types.reports,
          "reduced_states": meta_types.count, "files": _files,
          "digest": lambda v: isinstance(v, str)}


def flat(d: dict, prefix: str = "") -> dict:
    """A nested dict as dotted keys (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``): what a checkpoint's
    identity is compared on, key by key."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out |= flat(v, f"{prefix}{k}.")
        else:
            out[prefix + k] = v
    return out


def read_meta(run_dir: str, identity: dict) -> dict:
    """The committed checkpoint of ``run_dir``, if it is whole and belongs to this search."""
    root = Path(run_dir)
    where = f"--recover {shown(run_dir)}"
    if not is_directory(run_dir, where):
        raise CheckpointError(f"{where}: no such directory")
    if not (root / META).exists() and not (root / META).is_symlink():
        raise CheckpointError(f"{where}: no checkpoint in it ({META} missing; was the search "
                              "started with --checkpoint?)")
    meta = meta_types.read_json(root / META, f"{where}: {META}", CheckpointError)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{where}: not a kafka-mc BFS checkpoint (format {FORMAT})")
    for key, ok in _TYPES.items():
        if key not in meta or not ok(meta[key]):
            raise CheckpointError(f"{where}: {META}: {key} is missing or has the wrong type")
    try:
        altered = meta["digest"] != _meta_digest(meta)
        theirs = flat(meta["identity"])
    except RecursionError:
        raise CheckpointError(f"{where}: {META} is nested too deeply") from None
    if altered:
        raise CheckpointError(f"{where}: {META} was altered (its digest does not match)")
    mine = flat(identity)
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) != theirs.get(key):
            raise CheckpointError(f"{where}: the checkpoint was made with {key} = "
                                  f"{theirs.get(key)!r}, this search has {mine.get(key)!r}")
    for name, want in meta["files"].items():
        file = root / name
        if Path(name).is_absolute() or ".." in Path(name).parts or not file.is_file():
            raise CheckpointError(f"{where}: {name} is missing")
        if file.stat().st_size != want["bytes"] or _digest(file)["sha256"] != want["sha256"]:
            raise CheckpointError(f"{where}: {name} is truncated or altered")
    return meta


def load(run_dir: str, identity: dict, model, key, packed: bool) -> Resumed:
    """The search a checkpoint saved: its levels (mapped from their files), visited set and
    frontier, and its ``checkpoint.json`` (counters, witnesses pending, violations)."""
    meta = read_meta(run_dir, identity)
    root, where = Path(run_dir), f"--recover {shown(run_dir)}"
    for f in root.glob("live/frontier-*.states"):   # a killed search's --memory frontiers
        f.unlink(missing_ok=True)
    depth = meta["depth"]
    levels = Levels()
    for d in range(depth + 1):
        fps_file, parents_file = level_files(root / "levels", d)
        if (str(fps_file.relative_to(root)) not in meta["files"]
                or str(parents_file.relative_to(root)) not in meta["files"]):
            raise CheckpointError(f"{where}: level {d} is not in the checkpoint")
        try:
            fps, parents = (np.load(f, mmap_mode="r", allow_pickle=False)
                            for f in (fps_file, parents_file))
        except (OSError, ValueError) as e:
            raise CheckpointError(f"{where}: level {d} is unreadable ({e})") from None
        if (fps.dtype != np.int64 or parents.dtype != np.int32 or fps.ndim != 1
                or fps.shape != parents.shape
                or (d and len(parents) and (parents.min() < 0 or parents.max() >= len(levels.fps[-1])))):
            raise CheckpointError(f"{where}: level {d} is malformed")
        levels.fps.append(fps)
        levels.parents.append(parents)
    everything = np.concatenate(levels.fps)
    if len(everything) != meta["distinct"]:
        raise CheckpointError(f"{where}: the levels hold {len(everything)} states, "
                              f"{META} says {meta['distinct']}")
    visited = VisitedSet.of(everything)
    del everything
    last = levels.fps[depth]
    if packed:
        frontier = PackedLevel(last)
    else:
        frontier = []
        try:
            with open(frontier_file(root, depth), encoding="utf-8") as f:
                for line in f:
                    for s in decode_block(line, model_package(model)):
                        i = len(frontier)
                        if i >= len(last) or key(s) != int(last[i]):
                            raise CheckpointError(f"{where}: frontier state {i} does not match "
                                                  "its fingerprint")
                        frontier.append(s)
        except CheckpointError:
            raise
        except (OSError, ValueError, TypeError) as e:
            raise CheckpointError(f"{where}: the frontier is unreadable ({e})") from None
        if len(frontier) != len(last):
            raise CheckpointError(f"{where}: the frontier has {len(frontier)} states, level "
                                  f"{depth} has {len(last)}")
    return Resumed(depth, levels, visited, frontier, meta)


def reported(meta: dict, model, checks, keep_going: bool, where: str) -> list:
    """The violations a checkpointed ``--continue`` search had reported, as (what, path): each
    a property this search checks, once, on a path that replays."""
    if meta["violations"] and not keep_going:
        raise CheckpointError(f"{where}: the checkpoint has reported violations already (a "
                              "--continue search): recover it with --continue")
    named = {(p.expectation.value, p.name): p for p in checks.properties}
    if checks.deadlock:
        named[(DEADLOCK.kind, DEADLOCK.property)] = DEADLOCK
    out, seen = [], set()
    for r in meta["violations"]:
        what = (r["kind"], r["property"])
        if what not in named or what in seen:
            raise CheckpointError(f"{where}: the checkpoint reports a violation of "
                                  f"{shown(what[1], 80)} ({what[0]}) this search cannot have "
                                  "reported")
        seen.add(what)
        try:
            path = follow(model, r["path"])
        except (IndexError, StopIteration):
            raise CheckpointError(f"{where}: the counterexample of {shown(what[1], 80)} in the "
                                  "checkpoint does not replay") from None
        if not shows(model, what[0], what[1], path.states, path.actions):
            raise CheckpointError(f"{where}: the counterexample of {shown(what[1], 80)} in the "
                                  "checkpoint does not violate it")
        out.append((named[what], path))
    return out


def start_fresh(run_dir: str) -> None:
    """Prepare a run directory for a new checkpointed search: refuse one holding a checkpoint (a
    new search never deletes a checkpoint it did not write) and drop what an interrupted search
    left before its first checkpoint (files of this module only)."""
    root = Path(run_dir)
    if (root / META).exists():
        raise CheckpointError(
            f"{shown(run_dir)} holds the checkpoint of an earlier search: resume it with "
            f"--recover {shown(run_dir)}, or to start afresh delete that directory or give "
            "another --out")
    for f in [*root.glob("frontier-*.states"), *root.glob("levels/level-*.npy"),
              *root.glob("live/frontier-*.states")]:
        f.unlink(missing_ok=True)
