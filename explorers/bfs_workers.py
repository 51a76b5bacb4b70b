"""A BFS level expanded by forked worker processes (``--workers N``, TLC's ``-workers``).

The level's states are cut into ``N`` contiguous slices. ``N - 1`` children are forked at the
level's start, so each inherits the frontier and the visited set of the complete levels without
copying them (copy-on-write); the BFS process expands the last slice itself. A slice's expansion
(``expand``) computes the successors, their fingerprints, the transition properties, the coverage
and the edges taken, and keeps the candidates that no complete level holds, each at its first
occurrence in the slice, after checking the invariants on them. The BFS then deduplicates the
slices' candidates in slice order (``VisitedSet.add_new``): the new states, their order, the
counts and the coverage are exactly those of the sequential search.

Something to report -- a violated invariant or transition property, a stuck state that fails a
check, a model error -- ends a slice before the chunk of candidates holding it (``Slice.stop``);
a child that died or could not send its result ends the level before its slice. The BFS merges
the slices up to there and its sequential loop expands the rest of the level, reporting as a
search without workers does; the later slices are dropped (the BFS process's own slice as soon as
it sees an earlier one stop short). So the workers change the time a search takes and nothing
else: its verdicts, counts, counterexamples and traces are the same (the tests compare them). The
one difference: an interrupt during a level reports the counts of the last complete level.

A child's result comes back pickled through a pipe: the child is a fork of this process, not a
user's file. Fork is POSIX-only, and unsafe in a process running other threads (a Spark session,
a server): there ``usable`` says no and the search stays sequential.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import threading
from array import array
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from explorers.fingerprints import member

CHUNK = 1 << 14        # candidates deduplicated against the complete levels at a time
PARALLEL_MIN = 2048    # a smaller level is expanded sequentially: forking would cost more
PROGRESS_EVERY = 2048  # states between progress reports
POLL_EVERY = 256       # states between looks at the children (one may have stopped short)
OWN_SHARE = 1.15       # the BFS process's slice, relative to a child's: a child's result has to be
                       # pickled and sent (measured on configs/small.toml: a tenth of its work)


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


class _Abandon(Exception):
    """An earlier slice stops short: this later one is not needed."""


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
        uniq, first = np.unique(chunk, return_index=True)
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
    except _Abandon:
        raise
    except Exception:   # noqa: BLE001 -- a report or a model error: one process takes over
        stop, generated, fired, edges, kept, reduced = mark
        del fps[kept:], owners[kept:], found[kept:]
    finally:   # the count goes back in the ``Slice``, to be added when the slice is merged
        if reducer is not None:
            reducer.reduced_states = reduced0
    return Slice(generated, fired, edges, reduced - reduced0, fps, owners, found, stop)


def expand_level(frontier: Sequence, workers: int, e: Expansion,
                 tick: Callable[[int, int], None] | None = None) -> tuple[list[Slice], int]:
    """The level's slices expanded by ``workers`` processes, in order, up to the first that
    stops short (it holds something to report, or its child failed), and the index where the
    sequential loop takes over (the level's size: nowhere)."""
    n = len(frontier)
    share = n / (workers - 1 + OWN_SHARE)   # a child's; the BFS process's is OWN_SHARE of it
    bounds = [round(share * k) for k in range(workers)] + [n]
    running: dict = {}   # read end -> (child, pid)
    got: dict = {}       # child -> its Slice, None if it failed

    def receive(fd: int) -> None:
        k, pid = running.pop(fd)
        got[k] = _collect(pid, fd)

    def poll(i: int, generated: int) -> None:
        """Progress, and the children done so far: one stopping short ends this slice."""
        if tick is not None and not i % PROGRESS_EVERY:
            tick(i, generated)
        if running:
            for fd in select.select(list(running), [], [], 0)[0]:
                receive(fd)
        if any(x is None or x.stop is not None for x in got.values()):
            raise _Abandon()
    try:
        for k in range(workers - 1):
            pid, fd = _fork(lambda k=k: relative(
                expand(frontier, bounds[k], bounds[k + 1], e), frontier))
            running[fd] = (k, pid)
        try:
            mine = expand(frontier, bounds[-2], n, e, poll)
        except _Abandon:
            mine = None
        for fd in sorted(running, key=lambda fd: running[fd][0]):
            receive(fd)
        slices: list[Slice] = []
        for k in range(workers - 1):
            if got[k] is None:
                return slices, bounds[k]
            slices.append(got[k])
            if got[k].stop is not None:
                return slices, got[k].stop
        return slices + [mine], n if mine.stop is None else mine.stop
    finally:
        for fd, (_, pid) in running.items():   # an interrupt: stopped, not waited for
            _stop(pid, fd)


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
        with os.fdopen(w, "wb") as out:
            out.write(payload)
    finally:
        os._exit(0)


def _collect(pid: int, fd: int) -> Slice | None:
    read = False
    try:
        with os.fdopen(fd, "rb") as src:
            payload = src.read()
        read = True
    finally:
        if not read:   # an interrupt while waiting: the child is stopped
            _kill(pid)
        os.waitpid(pid, 0)
    if not payload:
        return None
    try:
        got = pickle.loads(payload)   # written by our own fork (above), never a user's file
    except Exception:   # noqa: BLE001 -- a child killed mid-write: the level goes sequential
        return None
    return got if isinstance(got, Slice) else None


def _stop(pid: int, fd: int) -> None:
    _kill(pid)
    os.waitpid(pid, 0)
    os.close(fd)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
