"""A BFS level expanded by forked worker processes (``--workers N``, TLC's ``-workers``).

The level's states are cut into ``N`` contiguous slices. ``N - 1`` children are forked at the
level's start, so each inherits the frontier and the visited set of the complete levels without
copying them (copy-on-write); the BFS process expands the last slice itself. A slice's expansion
(``expand``) computes the successors, their fingerprints, the transition properties, the coverage
and the edges taken, and keeps the candidates that no complete level holds, each at its first
occurrence in the slice, after checking the invariants on them. The BFS then deduplicates the
slices' candidates in slice order (``VisitedSet.add_new``): the new states, their order, the
counts and the coverage are exactly those of the sequential search.

A level on which anything is to be reported -- a violated invariant or transition property, a
stuck state that fails a check, a model error, a child that died or could not send its result
-- is given up (``None``) and expanded again by the sequential loop, which reports it exactly as
a search without workers does. So the workers change the time a search takes and nothing else:
its verdicts, counts, counterexamples and traces are the same (the tests compare them). The one
difference: an interrupt during a level reports the counts of the last complete level.

A child's result comes back pickled through a pipe: the child is a fork of this process, not a
user's file. Fork is POSIX-only: elsewhere ``usable`` says no and the search stays sequential.
"""
from __future__ import annotations

import os
import pickle
import signal
from array import array
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from explorers.fingerprints import member

CHUNK = 1 << 14        # candidates deduplicated against the complete levels at a time
PARALLEL_MIN = 2048    # a smaller level is expanded sequentially: forking would cost more
PROGRESS_EVERY = 2048
OWN_SHARE = 1.15       # the BFS process's slice, relative to a child's: a child's result has to be
                       # pickled and sent (measured on configs/small.toml: a tenth of its work)


def usable(workers: int) -> bool:
    return workers > 1 and hasattr(os, "fork")


@dataclass(frozen=True)
class Expansion:
    """What expanding a state needs, as the search holds it at the level's start."""
    successors: Callable          # state -> [(action, state)] (reduced under --por)
    key: Callable                 # state -> fingerprint
    within: Callable | None       # the state constraint, None when there is none
    always: tuple                 # (property, holds(state)) pairs
    transition: tuple             # (property, holds(state, action, state)) pairs
    stuck: Callable               # state -> iterator of what a state without successors fails
    taken: tuple                  # per state machine: (s, a, t) -> the edges it takes
    done: np.ndarray              # the complete levels' fingerprints, sorted
    reducer: object | None        # the partial-order reducer (its count of reduced states)


@dataclass(frozen=True)
class Slice:
    """A slice's expansion, when nothing in it is to be reported."""
    generated: int
    fired: dict                   # action -> transitions generated, in first-fired order
    edges: list                   # per state machine, the set of edges taken
    reduced: int                  # states expanded with a proper subset of their actions
    fps: array                    # the candidates' fingerprints, in generation order
    owners: array                 # their parents' indices in the level
    found: list                   # their (action, state)


class _Report(Exception):
    """Something in the slice is to be reported: the sequential loop expands the level."""


def expand(frontier: Sequence, lo: int, hi: int, e: Expansion,
           tick: Callable[[int, int], None] | None = None) -> Slice:
    """Expand states ``lo`` to ``hi`` of the level (``tick(i, generated)`` now and then)."""
    successors, key, within, always, transition = (e.successors, e.key, e.within, e.always,
                                                   e.transition)
    edges = [set() for _ in e.taken]
    notes = tuple(zip(e.taken, (got.update for got in edges)))
    fired: dict = {}
    fired_get = fired.get
    fps, owners, found = array("q"), array("q"), []
    cand_fps, cand_owners, cands = array("q"), array("q"), []
    local: set = set()
    reduced0 = e.reducer.reduced_states if e.reducer is not None else 0
    generated = reduced = 0

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
            t = cands[j][1]
            for _, holds in always:
                if not holds(t):
                    raise _Report()
            fps.append(fp)
            owners.append(cand_owners[j])
            found.append(cands[j])
        del cand_fps[:], cand_owners[:], cands[:]

    try:
        for i in range(lo, hi):
            if tick is not None and not (i - lo) % PROGRESS_EVERY:
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
                fired[a] = fired_get(a, 0) + 1
                for taken, note in notes:
                    note(taken(s, a, t))
                for _, holds in transition:
                    if not holds(s, a, t):
                        raise _Report()
                cand_fps.append(key(t))
                cand_owners.append(i)
                cands.append((a, t))
            if len(cands) >= CHUNK:
                sift()
        sift()
    finally:   # the slice's count goes back in its ``Slice``, to be added when the level is
        if e.reducer is not None:   # merged (an abandoned level is expanded again)
            reduced = e.reducer.reduced_states - reduced0
            e.reducer.reduced_states = reduced0
    return Slice(generated, fired, edges, reduced, fps, owners, found)


def expand_level(frontier: Sequence, workers: int, e: Expansion,
                 tick: Callable[[int, int], None] | None = None) -> list[Slice] | None:
    """The level's slices expanded by ``workers`` processes, in order; ``None`` when one of
    them has something to report or failed."""
    n = len(frontier)
    share = n / (workers - 1 + OWN_SHARE)   # a child's; the BFS process's is OWN_SHARE of it
    bounds = [round(share * k) for k in range(workers)] + [n]
    children: list = []
    try:
        for k in range(workers - 1):
            children.append(_fork(lambda k=k: relative(
                expand(frontier, bounds[k], bounds[k + 1], e), frontier)))
        try:
            mine = expand(frontier, bounds[-2], bounds[-1], e, tick)
        except Exception:   # noqa: BLE001 -- a report or a model error: the sequential loop's
            return None
        slices = []
        while children:
            got = _collect(*children.pop(0))
            if got is None:
                return None
            slices.append(got)
        return slices + [mine]
    finally:
        for pid, fd in children:   # given up (a report, an interrupt): stopped, not waited for
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
    parts = [patch(x, y) for x, y in zip(s, d)]
    return tuple(parts) if type(s) is tuple else type(s)(*parts)


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
