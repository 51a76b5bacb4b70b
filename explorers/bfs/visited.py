"""The breadth-first search's visited set and BFS tree, in numpy arrays: 20 bytes a state.

TLC keeps 8-byte fingerprints in an open-addressing table (on disk once it no longer fits) and
its queue on disk. A Python ``set`` of ints costs about 60 bytes an entry and is probed one
interpreter call at a time; here fingerprints are deduplicated a chunk of candidates at a time,
in C:

* ``VisitedSet``: the fingerprints of the levels already complete, as one sorted int64 array
  (8 bytes a state), and those of the level being discovered as a few sorted runs (merged like a
  binary counter, so there are O(log n) of them). A chunk is deduplicated within itself
  (``first_occurrences``) and against them (``np.searchsorted``); at a level's end its runs are
  merged into the sorted array in place (a stable sort of sorted runs is a merge: timsort). The array
  is reserved with room to grow; the operating system commits its pages only as they fill.
* ``Levels``: per depth, the fingerprints in discovery order (8 bytes) and the index of each
  state's parent in the previous depth (int32, 4 bytes): a shortest counterexample is the chain
  of parent indices, rebuilt by replaying (``kafka_mc.explorers.core.adapter.rebuild``). A complete level can be
  moved to a directory (``spill``: ``.npy`` files read back memory-mapped), which is how a
  checkpoint keeps them and how a memory budget drops them from RAM.

Why sorted arrays and not a hash table: 8 bytes a state exactly (a table at a sound load factor
takes 11 to 16), merging is sequential memory traffic, and the level being discovered stays
apart from the complete ones, which is what the partial-order reduction's proviso asks ("was this
state reached before the current level?", ``seen_before``).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from kafka_mc.explorers.bfs.state_codec import DiskFrontier

FP = np.int64
INITIAL_CAPACITY = 1 << 16


def member(sorted_fps: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Which of ``queries`` are in ``sorted_fps`` (a boolean array)."""
    if not len(sorted_fps):
        return np.zeros(len(queries), dtype=bool)
    pos = np.searchsorted(sorted_fps, queries)
    np.minimum(pos, len(sorted_fps) - 1, out=pos)
    return sorted_fps[pos] == queries


def first_occurrences(fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``fps``, sorted, and the position of each one's first occurrence
    (``np.unique(fps, return_index=True)``, whose stable argsort costs 6x this quicksort: the
    first of equal values is their least position, ``np.minimum.reduceat``)."""
    if not len(fps):
        return fps[:0], np.zeros(0, dtype=np.intp)
    perm = fps.argsort()
    ordered = fps[perm]
    head = np.empty(len(ordered), dtype=bool)
    head[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=head[1:])
    at = np.flatnonzero(head)
    return ordered[at], np.minimum.reduceat(perm, at)


class VisitedSet:
    """64-bit fingerprints seen so far; ``add_new`` a chunk, ``end_level`` between levels."""

    def __init__(self, capacity: int = INITIAL_CAPACITY):
        self._done = np.empty(max(capacity, 1), dtype=FP)   # sorted in [:_n]
        self._n = 0
        self._runs: list[np.ndarray] = []   # the open level's, sorted, sizes decreasing

    def __len__(self) -> int:
        return self._n + sum(len(r) for r in self._runs)

    @property
    def nbytes(self) -> int:
        """The bytes the fingerprints take (the reserved but untouched room is not counted)."""
        return 8 * len(self)

    def add_new(self, fps: np.ndarray) -> np.ndarray:
        """The positions in ``fps`` (ascending) of the fingerprints never seen before, each at its
        first occurrence; they are added to the set."""
        uniq, first = first_occurrences(fps)
        fresh = ~member(self._done[:self._n], uniq)
        for run in self._runs:
            fresh &= ~member(run, uniq)
        uniq, first = uniq[fresh], first[fresh]
        if len(uniq):
            self._runs.append(uniq)
            while len(self._runs) > 1 and 2 * len(self._runs[-1]) >= len(self._runs[-2]):
                top = self._runs.pop()
                merged = np.concatenate((self._runs.pop(), top))
                merged.sort(kind="stable")
                self._runs.append(merged)
        first.sort()
        return first

    def seen_before(self, fp: int) -> bool:
        """Whether ``fp`` belongs to a complete level (reached before the level now discovered)."""
        done = self._done[:self._n]
        i = int(np.searchsorted(done, fp))
        return i < self._n and int(done[i]) == fp

    def end_level(self) -> None:
        """Merge the level just discovered into the sorted array of complete levels."""
        m = sum(len(r) for r in self._runs)
        if not m:
            return
        need = self._n + m
        if need > len(self._done):
            grown = np.empty(max(need, 2 * len(self._done)), dtype=FP)
            grown[:self._n] = self._done[:self._n]
            self._done = grown
        at = self._n
        for run in self._runs:
            self._done[at:at + len(run)] = run
            at += len(run)
        self._runs = []
        self._done[:need].sort(kind="stable")   # sorted runs: timsort merges them
        self._n = need

    def sorted_fingerprints(self) -> np.ndarray:
        """Every fingerprint of the complete levels, sorted (a view, not a copy)."""
        return self._done[:self._n]

    @classmethod
    def of(cls, fps: np.ndarray) -> "VisitedSet":
        """The set of the complete levels holding exactly ``fps`` (distinct, any order)."""
        v = cls(max(INITIAL_CAPACITY, 2 * len(fps)))
        v._done[:len(fps)] = fps
        v._done[:len(fps)].sort()
        v._n = len(fps)
        return v


class PackedLevel:
    """A level of a packed model as its states (such a model's states are their own
    fingerprints), read a block at a time: no other copy of the frontier is kept."""

    BLOCK = 1 << 16

    def __init__(self, fps: np.ndarray):
        self.fps = fps

    def __len__(self) -> int:
        return len(self.fps)

    def __iter__(self):
        for at in range(0, len(self.fps), self.BLOCK):
            yield from self.fps[at:at + self.BLOCK].tolist()


class Levels:
    """The BFS tree: per depth, fingerprints in discovery order and parent indices (int32) into
    the previous depth. The open level grows a chunk at a time (``add``) until ``close``."""

    def __init__(self):
        self.fps: list[np.ndarray] = []
        self.parents: list[np.ndarray] = []
        self._open: list[tuple[np.ndarray, np.ndarray]] = []
        self._open_size = 0

    def __len__(self) -> int:
        """The complete levels."""
        return len(self.fps)

    @property
    def open_size(self) -> int:
        return self._open_size

    def add(self, fps: np.ndarray, parents: np.ndarray) -> None:
        self._open.append((fps.astype(FP, copy=False), parents.astype(np.int32, copy=False)))
        self._open_size += len(fps)

    def close(self) -> None:
        """End the open level (possibly empty: then it is dropped and nothing changes)."""
        if not self._open_size:
            self._open = []
            return
        self.fps.append(np.concatenate([f for f, _ in self._open]))
        self.parents.append(np.concatenate([p for _, p in self._open]))
        self._open, self._open_size = [], 0

    def _at(self, d: int, i: int) -> tuple[int, int]:
        """(fingerprint, parent index) of state ``i`` of depth ``d`` (the open level is d ==
        len(self))."""
        if d < len(self.fps):
            return int(self.fps[d][i]), int(self.parents[d][i])
        for fps, parents in self._open:
            if i < len(fps):
                return int(fps[i]), int(parents[i])
            i -= len(fps)
        raise IndexError("no such state in the open level")

    def path(self, d: int, i: int) -> list[int]:
        """The fingerprints from an initial state to state ``i`` of depth ``d``."""
        out = []
        while d >= 0:
            fp, parent = self._at(d, i)
            out.append(fp)
            i, d = parent, d - 1
        return out[::-1]

    @property
    def nbytes(self) -> int:
        """Bytes held in memory (levels spilled to files and mapped back are not counted)."""
        arrays = [*self.fps, *self.parents, *(a for pair in self._open for a in pair)]
        return sum(a.nbytes for a in arrays if not isinstance(a, np.memmap))

    def spill(self, directory: Path, d: int) -> tuple[Path, Path]:
        """Write complete level ``d`` to ``directory`` (atomically, once) and map it back from
        there; returns its two files."""
        files = level_files(directory, d)
        for array, file in zip((self.fps[d], self.parents[d]), files):
            if not isinstance(array, np.memmap) or Path(array.filename) != file.resolve():
                write_array(file, array)
        self.fps[d], self.parents[d] = (np.load(f, mmap_mode="r", allow_pickle=False)
                                        for f in files)
        return files


def resident_bytes() -> int:
    """This process's resident set now (Linux ``/proc``; elsewhere its peak so far)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class Budget:
    """``--memory MB``: once the resident set passes half the budget at a level's end, the
    complete levels of the BFS tree are moved to files (read back memory-mapped) and from then on
    each next level's states are written to a file as they are discovered and streamed back when
    it is expanded (``kafka_mc.explorers.bfs.state_codec``; a packed model's frontier is its level's
    fingerprints, so it moves with them). What stays in memory: the visited set (8 bytes a
    state), the block being read and the chunk being deduplicated. The files go to the
    checkpoint's run directory, else to a temporary directory removed at the end."""

    def __init__(self, megabytes: int | None, run_dir: str | None, package: str):
        self.limit = None if megabytes is None else megabytes * 2**20
        self.run_dir, self.package = run_dir, package
        self.spilled = False
        self._tmp = None
        self._live: list[DiskFrontier] = []

    def directory(self) -> Path:
        if self.run_dir is not None:
            return Path(self.run_dir)
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="kafka-mc-bfs-")
        return Path(self._tmp.name)

    def level_done(self, levels: "Levels", expanded) -> None:
        """A level was closed; ``expanded``: the states of the one before, no longer needed."""
        if isinstance(expanded, DiskFrontier):
            expanded.remove()
        if self.limit is None:
            return
        if self.spilled or resident_bytes() > self.limit // 2:
            self.spilled = True
            for d in range(len(levels)):
                if not isinstance(levels.fps[d], np.memmap):
                    levels.spill(self.directory() / "levels", d)

    def new_frontier(self, depth: int):
        """Where the states of level ``depth`` go as they are discovered."""
        if not self.spilled:
            return []
        live = self.directory() / "live"
        live.mkdir(parents=True, exist_ok=True)
        self._live.append(DiskFrontier(live / f"frontier-{depth:05d}.states", self.package))
        return self._live[-1]

    def close(self) -> None:
        for frontier in self._live:
            frontier.remove()
        if self._tmp is not None:
            self._tmp.cleanup()


def level_files(directory: Path, d: int) -> tuple[Path, Path]:
    return directory / f"level-{d:05d}.fps.npy", directory / f"level-{d:05d}.parents.npy"


def write_array(file: Path, array: np.ndarray) -> None:
    """``array`` as an ``.npy`` file (no objects), written to a fresh temporary file in the same
    directory and renamed: a reader sees no file or the whole one."""
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, np.ascontiguousarray(array), allow_pickle=False)
        os.replace(tmp, file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
