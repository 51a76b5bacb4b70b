"""A BFS level expanded by forked worker processes (``--workers N``, TLC's ``-workers``).

The level's states are cut into ``N`` contiguous slices. ``N - 1`` children are forked at the
level's start, so each inherits the frontier and the visited set of the complete levels without
copying them (copy-on-write); the BFS process expands the first slice itself and merges it while
the children still work (``Balance`` sizes it so that both are done together). A slice's expansion
(``expand``) computes the successors, their fingerprints, the transition properties, the coverage
and the edges taken, and keeps the candidates that no complete level holds, each at its first
occurrence in the slice, after checking the invariants on them. The BFS then deduplicates the
slices' candidates slice by slice, in order (``VisitedSet.add_new``): the new states, their
order, the counts and the coverage are exactly those of the sequential search.

Something to report -- a violated invariant or transition property, a stuck state that fails a
check, a model error -- ends a slice before the chunk of candidates holding it (``Slice.stop``);
a child that died or could not send its result ends the level before its slice. The BFS merges
the slices up to there and its sequential loop expands the rest of the level, reporting as a
search without workers does; the later slices are dropped. So the workers change the time a
search takes and nothing else: its verdicts, counts, counterexamples and traces are the same
(the tests compare them). The one difference: an interrupt during a level reports the counts of
the slices merged by then, not of every state generated before it.

A child's result comes back pickled through a pipe: the child is a fork of this process, not a
user's file. Fork is POSIX-only, and unsafe in a process running other threads (a Spark session,
a server): there ``usable`` says no and the search stays sequential.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import threading
import time
from array import array
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from kafka_mc.explorers.bfs.visited import first_occurrences, member

CHUNK = 1 << 14        # candidates deduplicated against the complete levels at a time
PARALLEL_MIN = 2048    # a smaller level is expanded sequentially: forking would cost more
PROGRESS_EVERY = 2048  # states between progress reports
POLL_EVERY = 256       # states between looks at the children (a finished one is read early)
OWN_SHARE = 1.15       # the BFS process's first slice, relative to a child's (``Balance``)
ADAPTIVE = True        # later levels cut by the last one's rates (off: OWN_SHARE throughout)


def usable(workers: int) -> bool:
    """Whether levels can be forked: POSIX, and no other thread running (a fork copies only the
    calling thread, and a lock another thread holds would stay held in the child)."""
    return workers > 1 and hasattr(os, "fork") and threading.active_count() == 1


@dataclass(frozen=True)
class Expansion:
    """What expanding a state needs, as the search holds it at the level's start."""
    successors: Callable          # state -> [(action, state)] (reduced under --por)
    key: Callable                 # state -> fingerprint
    within: Callable | None       # the state constraint, None when there is none
    always: tuple                 # (property, holds(state)) pairs
    witnesses: tuple              # the witnesses not yet seen: (property, holds(state)) pairs
    transition: tuple             # (property, holds(state, action, state)) pairs
    relevant: Callable | None     # (action, pairs) -> those the step can change (Relevance.of)
    stuck: Callable               # state -> iterator of what a state without successors fails
    taken: tuple                  # per state machine: (s, a, t) -> the edges it takes
    done: np.ndarray              # the complete levels' fingerprints, sorted
    reducer: object | None        # the partial-order reducer (its count of reduced states)


@dataclass(frozen=True)
class Slice:
    """A slice's expansion, up to the first chunk holding something to report."""
    generated: int
    fired: dict                   # action name -> transitions generated, in first-fired order
    edges: list                   # per state machine, the set of edges taken
    reduced: int                  # states expanded with a proper subset of their actions
    fps: array                    # the candidates' fingerprints, in generation order
    owners: array                 # their parents' indices in the level
    found: list                   # their (action, state)
    stop: int | None = None       # where the sequential loop takes over (None: the slice's end)


class _Report(Exception):
    """Something in the slice is to be reported (or a model error): the sequential loop expands
    the level from the chunk holding it."""


def expand(frontier: Sequence, lo: int, hi: int, e: Expansion,
           tick: Callable[[int, int], None] | None = None) -> Slice:
    """Expand states ``lo`` to ``hi`` of the level (``tick(i, generated)`` now and then). On a
    report, or a model error, in a chunk (``CHUNK`` candidates), the slice ends before the state
    that started the chunk: the counts up to there were saved as the chunk began."""
    successors, key, within, always, transition, witnesses, relevant = (
        e.successors, e.key, e.within, e.always, e.transition, e.witnesses, e.relevant)
    edges = [set() for _ in e.taken]
    notes = tuple(zip(e.taken, (got.update for got in edges)))
    fired: dict = {}
    fired_get = fired.get
    fps, owners, found = array("q"), array("q"), []
    cand_fps, cand_owners, cands = array("q"), array("q"), []
    local: set = set()
    reducer = e.reducer
    reduced0 = reducer.reduced_states if reducer is not None else 0
    generated = 0

    def saved() -> tuple:
        """The slice's counts as a chunk begins (its first state's index first)."""
        return (i + 1, generated, dict(fired), [set(x) for x in edges], len(found),
                reducer.reduced_states if reducer is not None else 0)

    def sift() -> None:
        """Keep the chunk's candidates in no complete level, at their first occurrence."""
        if not cands:
            return
        chunk = np.array(cand_fps, dtype=np.int64)
        uniq, first = first_occurrences(chunk)
        first = np.sort(first[~member(e.done, uniq)])
        for j, fp in zip(first.tolist(), chunk[first].tolist()):
            if fp in local:
                continue
            local.add(fp)
            a, t = cands[j]
            for _, holds in relevant(a, always) if relevant else always:
                if not holds(t):
                    raise _Report()
            for _, holds in witnesses:   # evaluated for a model error only: the BFS sees the
                holds(t)                 # witnesses on the level's new states as it merges
            fps.append(fp)
            owners.append(cand_owners[j])
            found.append(cands[j])
        del cand_fps[:], cand_owners[:], cands[:]

    i = lo - 1
    mark = saved()
    try:
        for i in range(lo, hi):
            if tick is not None and not (i - lo) % POLL_EVERY:
                tick(i - lo, generated)
            s = frontier[i]
            if within is not None and not within(s):
                continue
            out = successors(s)
            if not out:
                if next(e.stuck(s), None) is not None:
                    raise _Report()
                continue
            generated += len(out)
            for a, t in out:
                fired[a[0]] = fired_get(a[0], 0) + 1
                for taken, note in notes:
                    note(taken(s, a, t))
                for _, holds in relevant(a, transition) if relevant else transition:
                    if not holds(s, a, t):
                        raise _Report()
                cand_fps.append(key(t))
                cand_owners.append(i)
                cands.append((a, t))
            if len(cands) >= CHUNK:
                sift()
                mark = saved()
        sift()
        stop = None
        reduced = reducer.reduced_states if reducer is not None else 0
    except Exception:   # noqa: BLE001 -- a report or a model error: one process takes over
        stop, generated, fired, edges, kept, reduced = mark
        del fps[kept:], owners[kept:], found[kept:]
    finally:   # the count goes back in the ``Slice``, to be added when the slice is merged
        if reducer is not None:
            reducer.reduced_states = reduced0
    return Slice(generated, fired, edges, reduced - reduced0, fps, owners, found, stop)


def expand_level(frontier: Sequence, workers: int, e: Expansion, merge: Callable[[Slice], None],
                 balance: "Balance", tick: Callable[[int, int], None] | None = None) -> int:
    """Expand the level with ``workers`` processes: the BFS process the first slice, a child
    each later one. ``merge(slice)`` takes each slice in order as soon as the ones before it are
    merged (the BFS process's own as soon as it is expanded, while the children still work), up
    to the first that stops short (it holds something to report, or its child failed). Returns
    the index where the sequential loop takes over (the level's size: nowhere)."""
    n = len(frontier)
    bounds = balance.bounds(n, workers)
    running: dict = {}   # read end -> (child, pid)
    got: dict = {}       # child -> (its Slice, when it finished), None if it failed

    # (No inner function calls another: compiled (model/build/compiled.py), the two would share one
    # closure holding both, a cycle that, with the collector paused, kept every level's slices.)
    def poll(i: int, generated: int) -> None:
        """Progress, and the results of the children done so far (read early: a child blocks
        on a full pipe, and its result is unpickled now rather than after this slice)."""
        if tick is not None and not i % PROGRESS_EVERY:
            tick(i, generated)
        if running:
            for fd in select.select(list(running), [], [], 0)[0]:
                _receive(running, got, fd)
    try:
        start = time.perf_counter()
        for k in range(1, workers):
            pid, fd = _fork(lambda k=k: relative(
                expand(frontier, bounds[k], bounds[k + 1], e), frontier))
            running[fd] = (k, pid)
        mine = expand(frontier, 0, bounds[1], e, poll)
        merge(mine)
        if mine.stop is not None:
            return mine.stop
        ready = time.perf_counter() - start
        finished = []
        for k in range(1, workers):
            if k not in got:
                _receive(running, got, next(fd for fd, (c, _) in running.items() if c == k))
            if got[k] is None:
                return bounds[k]
            child, end = got[k]
            merge(child)
            if child.stop is not None:
                return child.stop
            finished.append(end - start)
        balance.update(bounds, ready, finished)
        return n
    finally:
        for fd, (_, pid) in running.items():   # stopped short, or an interrupt: not waited for
            _stop(pid, fd)


def _receive(running: dict, got: dict, fd: int) -> None:
    """A child's result, read from its pipe ``fd``."""
    k, pid = running.pop(fd)
    got[k] = _collect(pid, fd)


class Balance:
    """How a level is cut: the BFS process's slice, then the children's equal ones. The BFS
    process's share starts at ``OWN_SHARE`` of a child's and then follows the last level's
    rates, so that the BFS process has expanded and merged its slice when the children have
    expanded and pickled theirs (the BFS process waits for them, then merges their slices while
    they idle). The cut changes when a search ends, never what it finds: the slices are merged
    in order, as the sequential loop would meet their states."""

    def __init__(self):
        self.own = None   # the BFS process's states a second, against a child's (None: unknown)

    def bounds(self, n: int, workers: int) -> list[int]:
        ratio = OWN_SHARE if self.own is None or not ADAPTIVE else self.own
        share = n / (workers - 1 + ratio)   # a child's
        first = min(n, round(share * ratio))
        return [0] + [first + round(share * k) for k in range(workers - 1)] + [n]

    def update(self, bounds: list[int], ready: float, finished: list[float]) -> None:
        """After a level merged in full: the BFS process took ``ready`` seconds for its slice,
        child ``k`` ``finished[k - 1]`` for its (from the forks)."""
        if ready <= 0 or bounds[1] == 0 or any(t <= 0 for t in finished):
            return
        own = bounds[1] / ready
        child = sum((hi - lo) / t for lo, hi, t in zip(bounds[1:], bounds[2:], finished)) \
            / len(finished)
        if child <= 0:
            return
        ratio = min(max(own / child, 0.1), 10.0)
        self.own = ratio if self.own is None else (self.own + ratio) / 2   # (noise: smoothed)


SAME = ...   # a component equal to (the very object of) the parent state's: no state holds ...
DEPTH = 2    # a successor's components and theirs are compared with its parent state's


def relative(got: Slice, frontier: Sequence) -> Slice:
    """``got`` with each state as its difference from its parent state (``delta``): a step
    changes a few components of a state, and the BFS process holds the parent states."""
    found = [(a, delta(t, frontier[i], DEPTH)) for (a, t), i in zip(got.found, got.owners)]
    return replace(got, found=found)


def delta(t, s, depth: int):
    """``t`` as ``patch(s, delta(t, s))`` rebuilds it: a list (never a state's value: states
    are NamedTuples, tuples, frozensets, IntEnums and atoms) of the parts' deltas, SAME for a part
    that is ``s``'s own object."""
    if t is s:
        return SAME
    if depth and type(t) is type(s) and (type(t) is tuple or hasattr(t, "_fields")) \
            and len(t) == len(s):
        return [delta(x, y, depth - 1) for x, y in zip(t, s)]
    return t


def patch(s, d):
    """The state ``delta`` encoded as ``d`` relative to ``s``."""
    if d is SAME:
        return s
    if type(d) is not list:
        return d
    # (tuple.__new__ builds a NamedTuple as its own __new__ does, without that Python call: the
    # BFS process patches every new state of a child's slice while the children wait)
    return tuple.__new__(type(s), [x if y is SAME else y if type(y) is not list else patch(x, y)
                                   for x, y in zip(s, d)])


def _fork(work: Callable[[], Slice]) -> tuple[int, int]:
    """A child computing ``work()`` and writing it, pickled, to a pipe: (pid, read end)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        return pid, r
    try:   # the child: never returns
        os.close(r)
        signal.signal(signal.SIGINT, signal.SIG_DFL)   # the parent handles Ctrl-C and stops it
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            payload = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:   # noqa: BLE001 -- a report, a model error, an unpicklable state
            payload = b""
        with os.fdopen(w, "wb") as out:   # when the work was done (``Balance``), then the work
            out.write(struct.pack("d", time.perf_counter()))
            out.write(payload)
    finally:
        os._exit(0)


def _collect(pid: int, fd: int) -> tuple[Slice, float] | None:
    """A child's slice and when (``time.perf_counter``) it was pickled; None: it failed."""
    read = False
    try:
        with os.fdopen(fd, "rb") as src:
            payload = src.read()
        read = True
    finally:
        if not read:   # an interrupt while waiting: the child is stopped
            _kill(pid)
        os.waitpid(pid, 0)
    if len(payload) <= 8:
        return None
    try:
        got = pickle.loads(payload[8:])   # written by our own fork (above), never a user's file
    except Exception:   # noqa: BLE001 -- a child killed mid-write: the level goes sequential
        return None
    return (got, struct.unpack("d", payload[:8])[0]) if isinstance(got, Slice) else None


def _stop(pid: int, fd: int) -> None:
    _kill(pid)
    os.waitpid(pid, 0)
    os.close(fd)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
