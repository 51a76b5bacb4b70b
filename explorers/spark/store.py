"""Files of a Spark search (its *run directory*): parent pointers and level checkpoints.

Executors write and the driver reads these files, so on a real cluster the run directory must be
on a filesystem every machine sees at the same path (NFS, a mounted bucket). Layout::

    levels/00007/part-00003.ptr      parent pointers of the states of level 7 owned by partition 3
    checkpoint.json                  the last complete checkpoint (written last: the commit point;
                                     counts, witnesses pending, violations reported so far)
    checkpoint-00007/part-00003.*    that checkpoint's per-partition data

A ``.ptr`` file is the magic ``KMCPTR2\\n``, the count ``n`` (uint64), then four columns, all
little-endian: ``n`` fingerprints (int64), ``n`` parent fingerprints (int64), ``n`` partitions of
the parents (int32) and ``n`` action positions (int32: the index of the transition among the
parent's successors, in the model's order; for level 0, the index among the initial states).
A checkpoint partition is raw columns: ``.visited`` and ``.fps`` (int64), ``.keys`` (the
BFS-order keys, fixed width) and ``.states`` (int64 for packed models, else one canonical ITF
JSON object per line, the trace encoding).
Nothing is pickled: reading a run directory only parses numbers and JSON, and sizes are checked
against ``checkpoint.json`` before anything is loaded.
"""
from __future__ import annotations

import json
import shutil
import sys
from array import array
from pathlib import Path
from typing import Any, Iterable

from kafka_mc.model.config import shown
from kafka_mc.explorers.bfs import checkpoint_meta as meta_types
from kafka_mc.explorers.core.run_dir import RunDirError as CheckpointError  # (one class)
from kafka_mc.explorers.core.run_dir import is_directory

from kafka_mc.traces.files import write_atomically
from kafka_mc.traces.itf import ItfError, canonical, decode, encode

MAGIC = b"KMCPTR2\n"
FORMAT = 4  # 2: states are placed by their model's locality; 3: Kafka's fault budgets in the
           # fault table's order (fingerprints and placement changed); 4: the violations a
           # --continue search reported (``violations``) and the edges of the model's state
           # machines taken (``edges``)
SCAN = 1 << 20  # fingerprints read at a time when looking one up


def _little(a: array) -> bytes:
    if sys.byteorder == "big":
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _from_little(typecode: str, data: bytes) -> array:
    a = array(typecode)
    a.frombytes(data)
    if sys.byteorder == "big":
        a.byteswap()
    return a


def _write_atomically(path: Path, parts: Iterable[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, parts)


# --- parent pointers ------------------------------------------------------------------------------

def parents_file(run_dir: str, level: int, part: int) -> Path:
    return Path(run_dir) / "levels" / f"{level:05d}" / f"part-{part:05d}.ptr"


def write_parents(run_dir: str, level: int, part: int, fps: array, parents: array,
                  parent_parts: array, positions: array) -> None:
    n = len(fps)
    _write_atomically(parents_file(run_dir, level, part),
                      [MAGIC, n.to_bytes(8, "little"), _little(fps), _little(parents),
                       _little(parent_parts), _little(positions)])


def parent_of(run_dir: str, level: int, part: int, fp: int) -> tuple[int, int]:
    """The parent fingerprint and the parent's partition recorded for ``fp`` at ``level`` in
    partition ``part`` (read in bounded chunks)."""
    path = parents_file(run_dir, level, part)
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise CheckpointError(f"{path}: not a parent-pointer file")
        n = int.from_bytes(f.read(8), "little")
        start = f.tell()
        for first in range(0, n, SCAN):
            chunk = _from_little("q", f.read(8 * min(SCAN, n - first)))
            try:
                i = first + chunk.index(fp)
            except ValueError:
                continue
            f.seek(start + 8 * (n + i))
            parent = _from_little("q", f.read(8))[0]
            f.seek(start + 16 * n + 4 * i)
            return parent, _from_little("i", f.read(4))[0]
    raise CheckpointError(f"{path}: no state with fingerprint {fp} (incomplete run directory?)")


# --- checkpoints ----------------------------------------------------------------------------------

def checkpoint_dir(run_dir: str, level: int) -> Path:
    return Path(run_dir) / f"checkpoint-{level:05d}"


def write_checkpoint_part(run_dir: str, level: int, part: int, visited: array,
                          frontier: list, model, packed: bool) -> tuple[int, int]:
    """One partition's visited set and frontier ``[(key, fp, state)]``; returns their sizes."""
    base = checkpoint_dir(run_dir, level) / f"part-{part:05d}"
    _write_atomically(base.with_suffix(".visited"), [_little(visited)])
    _write_atomically(base.with_suffix(".keys"), [k for k, _, _ in frontier])
    _write_atomically(base.with_suffix(".fps"), [_little(array("q", [fp for _, fp, _ in frontier]))])
    if packed:
        states = [_little(array("q", [s for _, _, s in frontier]))]
    else:
        states = [(canonical({k: encode(v) for k, v in model.itf_encode(s).items()}) + "\n")
                  .encode("utf-8") for _, _, s in frontier]
    _write_atomically(base.with_suffix(".states"), states)
    return len(visited), len(frontier)


def read_checkpoint_part(run_dir: str, meta: dict, part: int, model, packed: bool, key):
    """The visited set (``array("q")``) and frontier of one partition, as written."""
    level = meta["level"]
    n_visited, n_frontier = meta["visited"][part], meta["frontier"][part]
    width = meta["key_bytes"]
    base = checkpoint_dir(run_dir, level) / f"part-{part:05d}"
    visited = _from_little("q", base.with_suffix(".visited").read_bytes())
    keys = base.with_suffix(".keys").read_bytes()
    fps = _from_little("q", base.with_suffix(".fps").read_bytes())
    raw = base.with_suffix(".states").read_bytes()
    if packed:
        states = list(_from_little("q", raw))
    else:
        try:
            states = [model.itf_decode({k: decode(v) for k, v in json.loads(line).items()})
                      for line in raw.decode("utf-8").splitlines()]
        except (ValueError, ItfError, KeyError, TypeError) as e:
            raise CheckpointError(f"{base}.states: not a state of this model ({e})") from None
    if (len(visited), len(fps), len(states), len(keys)) != (n_visited, n_frontier, n_frontier,
                                                             n_frontier * width):
        raise CheckpointError(f"{base}: sizes differ from checkpoint.json")
    frontier = []
    for i, (fp, s) in enumerate(zip(fps, states)):
        if key(s) != fp:
            raise CheckpointError(f"{base}.states: state {i} does not match its fingerprint")
        frontier.append((keys[i * width:(i + 1) * width], fp, s))
    return visited, frontier


def write_meta(run_dir: str, meta: dict) -> None:
    """Commit a checkpoint, then drop the older ones."""
    body = json.dumps({"format": FORMAT, **meta}, indent=1, sort_keys=True).encode("utf-8")
    _write_atomically(Path(run_dir) / "checkpoint.json", [body])
    for old in Path(run_dir).glob("checkpoint-*"):
        if old.is_dir() and old != checkpoint_dir(run_dir, meta["level"]):
            shutil.rmtree(old, ignore_errors=True)


# What checkpoint.json holds, checked before anything of the checkpoint is used.
_count = meta_types.count
_META_TYPES = {
    "level": _count, "partitions": lambda v: _count(v) and 1 <= v <= 1 << 16,
    "key_bytes": lambda v: _count(v) and 1 <= v <= 1 << 20, "visited": meta_types.counts,
    "frontier": meta_types.counts, "config": lambda v: isinstance(v, dict), "generated": _count,
    "distinct": _count, "depth": _count, "fired": meta_types.tally, "found": meta_types.tally,
    "pending": meta_types.names, "checked": meta_types.names, "violations": meta_types.reports,
    "edges": meta_types.edges,
}


def read_meta(run_dir: str) -> dict[str, Any]:
    """The committed checkpoint of a run directory, with its part files checked for size."""
    path = Path(run_dir) / "checkpoint.json"
    if not is_directory(run_dir, f"--recover {shown(run_dir)}"):
        raise CheckpointError(f"--recover {shown(run_dir)}: no such directory")
    if not path.exists() and not path.is_symlink():
        raise CheckpointError(f"--recover {shown(run_dir)}: no checkpoint in it (checkpoint.json "
                              "missing; was the run started with --checkpoint?)")
    meta = meta_types.read_json(path, shown(path), CheckpointError)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{shown(path)}: not a kafka-mc Spark checkpoint (format {FORMAT})")
    for key, ok in _META_TYPES.items():
        if key not in meta:
            raise CheckpointError(f"{shown(path)}: {key} is missing")
        if not ok(meta[key]):
            raise CheckpointError(f"{shown(path)}: {key} has the wrong type or value")
    P = meta["partitions"]
    for key in ("visited", "frontier"):
        if len(meta[key]) != P:
            raise CheckpointError(f"{shown(path)}: {key} must have one count per partition ({P})")
    for part in range(P):
        base = checkpoint_dir(run_dir, meta["level"]) / f"part-{part:05d}"
        sizes = {".visited": 8 * meta["visited"][part], ".fps": 8 * meta["frontier"][part],
                 ".keys": meta["key_bytes"] * meta["frontier"][part]}
        for suffix, size in sizes.items():
            file = base.with_suffix(suffix)
            if not file.is_file() or file.stat().st_size != size:
                raise CheckpointError(f"{file}: missing or truncated")
        if not base.with_suffix(".states").is_file():
            raise CheckpointError(f"{base}.states: missing")
    return meta


def start_fresh(run_dir: str) -> None:
    """Prepare a run directory for a new search: refuse one that holds a checkpoint (a new search
    never deletes a checkpoint it did not write), and drop the parent pointers an interrupted,
    uncheckpointed search left."""
    if (Path(run_dir) / "checkpoint.json").exists():
        raise CheckpointError(
            f"{shown(run_dir)} holds the checkpoint of an earlier search: resume it with "
            f"--recover {shown(run_dir)}, or to start afresh delete that directory or give "
            "another --out")
    remove_levels(run_dir)


def remove_levels(run_dir: str) -> None:
    """Remove the parent pointers of a search (files this module wrote, nothing else)."""
    shutil.rmtree(Path(run_dir) / "levels", ignore_errors=True)
