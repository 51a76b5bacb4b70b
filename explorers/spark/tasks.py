"""What Spark's Python workers run for the Spark explorer (``explorers/spark/search.py``): one BFS level.

Layout. A state belongs to one partition of ``P`` (``placement``: the one its fingerprint picks,
or the fingerprint of its model's ``locality``). A *level RDD* holds, in partition
``i``, the search state of the states partition ``i`` owns, as a few large records:

* ``("V", bytes)``     the visited set: 64-bit fingerprints (``array("q")`` bytes), in chunks;
* ``("F", bytes)``     the frontier (the states found in that level), pickled in chunks of
  ``(key, fp, state)`` sorted by ``key``.

One level is two partition functions. ``expand`` (map side) runs on partition ``i`` of level
``d``: it expands the frontier, checks deadlocks, terminal and transition properties, counts
transitions, drops the successors it has already produced and those it owns and has visited, and emits one
pickled bucket of candidate successors per owner (plus its own counts, in the bucket for ``i``).
Spark's shuffle moves only those buckets.
``merge`` (reduce side) gets partition ``j``'s level-``d`` records and every bucket addressed to
``j`` (a partitioner-aware union, so the visited set is never shuffled), keeps per fingerprint
the candidate that comes first in BFS order, drops the visited ones, checks invariants and
witnesses on the new states, writes their parent pointers and returns level ``d + 1``. What a
partition did in a level (a ``Summary``) goes to the driver through a Spark accumulator, so the
driver reads it without another pass over the level.

BFS order, exactly. The single-process BFS expands each level in discovery order, so a state's
position in its level is the sequence of successor indices along its BFS-tree path. That sequence
is the state's ``key``: the initial state's index (4 bytes) then one 2-byte index per step, big
endian, so comparing keys as bytes is comparing BFS positions. Keeping the minimal key per
fingerprint therefore picks the same parent, the same action and the same first violation as
``explorers/bfs/search.py``, without any global ranking. An event (a violation or a model error) is
placed in that order too (``Event.at``): ``key`` for one that happens before the state's
successors are visited (deadlock, an exception in ``successors``), ``key + index + 0`` for one at
a transition (transition property, fingerprinting), ``key + index + 1`` for one at a newly found
state (invariant, witness). With ``stop_at`` set to the first event of a level, the same
functions count only what the BFS had done when it stopped there. Several checks at one place
(the invariants of one new state, say) are ordered by ``Event.rank``: the model's order of the
properties, the witnesses after them.

With ``keep_going`` (``--continue``) a partition does not stop at a violation: ``Reports`` keeps
the first of each property not yet reported (``Level.retired``), and the first exception of each
property's check, which the driver may find void (a violation of that property came first).

Partial-order reduction (``Job.por``, ``explorers/reductions/por.py``). States are fingerprinted on the
model's reduction view and expanded with their reduced successors, under the BFS's proviso: a
state is expanded fully when one of its reduced successors is on its level or an earlier one,
i.e. in some owner's visited set at the level's start. A level then takes two more partition
functions before ``expand``: ``probe`` sends each reduced successor's fingerprint to its owner,
``answer`` returns to each state's partition the states one of whose reduced successors the
owner has visited; ``expand`` expands those fully. The visited sets are those the BFS reads (its
levels so far, the frontier's included), so the reduced search is the BFS's, counts and all.
A step's position is its place among all the state's successors (what ``paths.follow`` replays),
so keys order the reduced steps as the BFS takes them.

Every function is deterministic and writes its files atomically, so Spark may re-run any task.
"""
from __future__ import annotations

import pickle
import traceback
from array import array
from collections import Counter
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any, Callable, Iterable, Iterator

from kafka_mc.model.core import Expectation, fingerprint
from kafka_mc.explorers.core.checking import DEADLOCK, Checks, violation
from kafka_mc.explorers.core.adapter import gc_paused
from kafka_mc.explorers.core.setup import SearchSetup
from kafka_mc.explorers.spark import store as spark_store

INIT_KEY_BYTES, STEP_KEY_BYTES = 4, 2
MAX_SUCCESSORS = 2 ** (8 * STEP_KEY_BYTES)
CHUNK = 1 << 16            # frontier states per ("F", ...) record
VISITED_CHUNK = 1 << 22    # fingerprints per ("V", ...) record (32 MiB)
_MIX = 0x9E3779B97F4A7C15  # Fibonacci hashing: packed states are poorly mixed ints
PICKLE = pickle.HIGHEST_PROTOCOL


def owner(fp: int, partitions: int) -> int:
    """The partition a fingerprint picks (the same on every machine)."""
    return (fp * _MIX >> 64) % partitions


def placement(model, partitions: int) -> Callable[[Any, int], int]:
    """``(state, fingerprint) -> the partition that owns the state``: the one its fingerprint
    picks, or the one the fingerprint of its ``locality`` picks when the model has one."""
    locality = model.locality
    if locality is None:
        return lambda s, fp: owner(fp, partitions)
    view = model.view  # states with one fingerprint (one view) must have one owner
    return lambda s, fp: owner(fingerprint(locality(view(s))), partitions)


def bucket(k: int) -> int:
    """Spark partition function for pre-bucketed records: the key is the partition."""
    return k


@dataclass(frozen=True)
class Job:
    """What every task of one search needs; small and picklable (the model is rebuilt from it)."""

    token: str                          # identifies the search (worker-side cache key)
    build: Callable[[], Any]            # -> Model, e.g. partial(registry.bind, config)
    partitions: int
    properties: tuple[str, ...] | None  # None: all the model has
    deadlock: bool | None               # None: the model's default
    run_dir: str                        # parent pointers go to run_dir/levels
    por: bool = False                   # partial-order reduction (explorers/reductions/por.py)


@dataclass(frozen=True)
class Event:
    """The first violation or model error a partition met, placed in BFS order by ``at``.

    The path runs through ``base`` = (level, partition, fingerprint) of a state in the level
    files, then ``last`` (a newly found state's fingerprint), then ``step`` = (action, state); no
    path when all three are None (an exception while computing the initial states)."""

    at: bytes
    kind: str                    # always, transition, terminal, deadlock, model_error
    property: str
    claim: str = ""
    base: tuple[int, int, int] | None = None
    last: int | None = None
    step: tuple | None = None
    detail: str = ""
    rank: int = -1               # the order of the checks made at one ``at`` (``Checker.rank``)

    @property
    def order(self) -> tuple[bytes, int]:
        """Where the event falls in BFS order, checks at one place included."""
        return self.at, self.rank


@dataclass(frozen=True)
class Expansion:
    """What ``expand`` did in one partition."""

    generated: int = 0
    fired: dict = field(default_factory=dict)   # action name -> transitions
    event: Event | None = None
    edges: tuple = ()                           # per machine of the model: edges taken (frozensets)
    reported: tuple = ()                        # keep_going: ``Reports.events``
    errors: dict = field(default_factory=dict)  # keep_going: ``Reports.errors``
    reduced: int = 0                            # por: states expanded with a reduced set


@dataclass(frozen=True)
class Summary:
    """What one partition did in one level (reported through ``Summaries``)."""

    new: int                                     # states found (owned by this partition)
    expansion: Expansion                         # of the level before, by the same partition
    found: dict                                  # action name -> new states it discovered first
    witnessed: dict                              # sometimes-property -> ``at`` of its first witness
    witness_errors: dict                         # sometimes-property -> Event (valid only if
                                                 # raised before any witness of it, in BFS order)
    event: Event | None = None
    reported: tuple = ()                         # keep_going: ``Reports.events``
    errors: dict = field(default_factory=dict)   # keep_going: ``Reports.errors``


class Checker:
    """The model and its checks, built once per Python worker process and search."""

    def __init__(self, job: Job):
        model = job.build()
        self.model = model
        setup = SearchSetup(model, job.properties, job.deadlock)
        self.checks = checks = setup.checks
        self.always, self.transition = checks.always, checks.transition
        self.sometimes = {p.name: (p, holds) for p, holds in checks.sometimes}
        self.successors, self.key = setup.successors, setup.key
        self.reducer = None
        if job.por:   # reduced successors, deduplicated on the reduction view
            from kafka_mc.explorers.reductions.por import Reducer, reduction_key
            self.reducer, self.key = Reducer(model, checks), reduction_key(model)
        self.packed = setup.packed
        self.within = setup.within
        self.place = placement(model, job.partitions)
        self.machines = setup.machines
        self.bounded = setup.bounded
        # the order of the checks at one place: properties in the model's order, witnesses after
        # them (a new state's invariants are checked before its witnesses); deadlock: -1
        n = len(checks.properties)
        self.rank = {p.name: i + n * (p.expectation is Expectation.SOMETIMES)
                     for i, p in enumerate(checks.properties)}
        self._live: dict = {}

    def live(self, retired: tuple) -> Checks:
        """The checks of a ``--continue`` search once ``retired`` ((kind, property) pairs) have
        been reported."""
        if retired not in self._live:
            self._live = {retired: self.checks.without(retired)}
        return self._live[retired]


class Reports:
    """A ``--continue`` level in one partition: the first violation of each property not yet
    reported (``events``, in BFS order) and the first exception each property's check raised
    (``errors``, by (kind, property)). Either one retires the property here. An exception is a
    model error only if no partition reported a violation of that property before it (the BFS
    no longer checks a reported property): the driver decides. All the checks at one place run,
    each placed by its ``rank``, so the driver can cut the level at the first model error."""

    def __init__(self, live: Checks, rank: dict):
        self.always, self.transition, self.terminal = live.always, live.transition, live.terminal
        self.deadlock, self.rank = live.deadlock, rank
        self.events: list[Event] = []
        self.errors: dict = {}

    def check(self, kind: str, args: tuple, at: bytes, base) -> tuple:
        """Check the live properties of ``kind`` (always, transition, terminal) on ``args`` at
        ``at``; ``base``: the state being expanded (a model error's path). Returns those left."""
        entries, met = getattr(self, kind), set()
        for p, holds in entries:
            try:
                ok = holds(*args)
            except Exception as exc:
                self.errors[(kind, p.name)] = _model_error(at, exc, base, self.rank[p.name])
                met.add(p.name)
                continue
            if not ok:
                self.events.append(Event(at, kind, p.name, p.claim, rank=self.rank[p.name]))
                met.add(p.name)
        if met:
            setattr(self, kind, tuple(e for e in entries if e[0].name not in met))
        return getattr(self, kind)

    def stuck(self, s, at: bytes, base) -> None:
        """An expanded state with no enabled action: a deadlock, and the terminal properties."""
        if self.deadlock:
            self.events.append(Event(at, DEADLOCK.kind, DEADLOCK.property, DEADLOCK.claim))
            self.deadlock = False
        if self.terminal:
            self.check("terminal", (s,), at, base)

    def found(self) -> dict:
        """What goes into the partition's ``Expansion`` or ``Summary``."""
        return {"reported": tuple(self.events), "errors": self.errors}


_CHECKERS: dict[str, Checker] = {}


def checker(job: Job) -> Checker:
    c = _CHECKERS.get(job.token)
    if c is None:
        _CHECKERS.clear()  # a reused worker keeps only the current search's model
        c = _CHECKERS[job.token] = Checker(job)
    return c


def _at(key: bytes, pos: int, phase: int) -> bytes:
    """Where an event at transition ``pos`` of the state with ``key`` falls in BFS order."""
    return key + pos.to_bytes(STEP_KEY_BYTES, "big") + bytes((phase,))


def path_positions(e: Event) -> list[int]:
    """The counterexample of a reported violation as successor positions (``paths.follow``):
    the key of the stuck state (deadlock, terminal), of the new state (always), or of the state
    expanded followed by the step's position (transition), which is the event's place without
    its phase byte."""
    key = e.at if e.kind in (DEADLOCK.kind, "terminal") else e.at[:-1]
    return [int.from_bytes(key[:INIT_KEY_BYTES], "big")] + [
        int.from_bytes(key[i:i + STEP_KEY_BYTES], "big")
        for i in range(INIT_KEY_BYTES, len(key), STEP_KEY_BYTES)]


def _cut(steps: list, rest: bytes, cov: dict, s=None, edges: tuple = ()) -> list:
    """The steps ``(position, (action, state))`` of the state ``s`` where the level's first
    event is (``rest``: the event's place after the state's key) that the BFS would have handed
    on before stopping."""
    at, phase = int.from_bytes(rest[:-1], "big"), rest[-1]
    kept = [step for step in steps if step[0] < at + phase]
    if not phase:  # stopped at this transition: it is counted (its action and the machines'
        for pos, (a, t) in steps:  # edges it takes, as the BFS notes them), its target is not
            if pos == at:          # looked at
                cov[a] = cov.get(a, 0) + 1
                for edges_of, note in edges:
                    note(edges_of(s, a, t))
    return kept


def _reduced_steps(reducer, s, expand_fully: Callable[[], bool]) -> tuple[list, bool]:
    """A reduced search's steps from ``s`` as ``(position, (action, state))`` and whether they
    are a proper subset; ``expand_fully()``: the proviso holds for ``s`` (take them all)."""
    out, kept = reducer.reduced_positions(s)
    if kept is None or expand_fully():
        return list(enumerate(out)), False
    return [(i, out[i]) for i in kept], True


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)).rstrip()


def _model_error(at: bytes, exc: BaseException, base=None, rank: int = -1) -> Event:
    return Event(at, "model_error", "model_error", "the model raised an exception", base=base,
                 detail=_trace(exc), rank=rank)


@dataclass(frozen=True)
class Level:
    """One level's tasks. ``depth``: depth of the frontier being expanded (the new level is
    ``depth + 1``; for the initial level, ``depth`` is -1)."""

    job: Job
    depth: int
    pending: tuple[str, ...]        # sometimes-properties not yet witnessed
    summaries: Any                  # a Spark accumulator of ``Summaries``
    stop_at: bytes | None = None    # count only what happens before this event (inclusive)
    keep_going: bool = False        # --continue: report every property (``Reports``)
    retired: tuple = ()             # keep_going: (kind, property) reported in earlier levels

    # --- map side -----------------------------------------------------------------------------

    def expand(self, index: int, records: Iterable) -> Iterator[tuple[int, bytes]]:
        with gc_paused():
            yield from self._expand(index, records)

    def _expand(self, index: int, records: Iterable) -> Iterator[tuple[int, bytes]]:
        c, P, stop, depth = checker(self.job), self.job.partitions, self.stop_at, self.depth
        visited, frontier, answers = read_level(records, with_answers=True)
        full = set()   # por: the states the proviso expands fully (``answer``)
        for blob in answers:
            full.update(pickle.loads(blob))
        del answers
        reducer, reduced = c.reducer, 0
        cands: dict = {}  # fingerprint -> its first candidate (the frontier is in key order)
        cov: dict = {}
        cov_get = cov.get
        taken = [set() for _ in c.machines]
        edges = tuple((m.taken, got.update) for m, got in zip(c.machines, taken))
        generated, event = 0, None
        successors, key, packed, within, bounded = c.successors, c.key, c.packed, c.within, c.bounded
        keep = self.keep_going and stop is None
        reports = Reports(c.live(self.retired), c.rank) if keep else None
        transition = () if stop is not None else reports.transition if keep else c.transition
        for k, fp, s in frontier:
            if stop is not None and k >= stop:
                break
            try:
                if bounded and not within(s):
                    continue
                if reducer is None:
                    out = list(enumerate(successors(s)))
                else:
                    out, cut = _reduced_steps(reducer, s, lambda: fp in full)
                    reduced += cut
                if out and out[-1][0] >= MAX_SUCCESSORS - 1:
                    raise ValueError(f"a state has {out[-1][0] + 1} successors; the Spark "
                                     f"explorer supports at most {MAX_SUCCESSORS - 1}")
            except Exception as exc:
                event = _model_error(k, exc, (depth, index, fp))
                break
            if not out:
                if keep:
                    reports.stuck(s, k, (depth, index, fp))
                    continue
                try:
                    found = c.checks.stuck(s) if stop is None else None
                except Exception as exc:
                    event = _model_error(k, exc, (depth, index, fp))
                    break
                if found:
                    v = violation(found)
                    event = Event(k, v.kind, v.property, v.claim, (depth, index, fp))
                    break
                continue
            generated += len(out)
            if stop is not None and stop.startswith(k):  # the level stops in this state
                out = _cut(out, stop[len(k):], cov, s, edges)
            pos = 0
            try:
                for pos, (a, t) in out:
                    cov[a] = cov_get(a, 0) + 1
                    for edges_of, note in edges:
                        note(edges_of(s, a, t))
                    ft = t if packed else key(t)
                    if keep and transition:
                        transition = reports.check("transition", (s, a, t), _at(k, pos, 0),
                                                   (depth, index, fp))
                    elif transition:
                        for p, holds in transition:
                            if not holds(s, a, t):
                                event = Event(_at(k, pos, 0), "transition", p.name, p.claim,
                                              (depth, index, fp), step=(a, t))
                                break
                        if event is not None:
                            break
                    if ft not in cands:
                        cands[ft] = (ft, k, pos, fp, a[0], t)
            except Exception as exc:
                event = _model_error(_at(k, pos, 0), exc, (depth, index, fp))
            if event is not None:
                break
        del frontier
        # Drop the successors this partition owns and has visited. One pass over the visited
        # fingerprints, probing the candidates (36 ns each), costs a quarter of building a set of
        # them (131 ns each) and never holds the visited set as Python ints.
        for ft in cands.keys() & visited:
            del cands[ft]
        del visited
        fired: Counter = Counter()
        for a, n in cov.items():
            fired[a[0]] += n
        summary = Expansion(generated, dict(fired), event, tuple(map(frozenset, taken)),
                            **(reports.found() if keep else {}), reduced=reduced)
        buckets: list[list] = [[] for _ in range(P)]
        if P == 1:
            buckets[0] = list(cands.values())
        else:
            place = c.place
            for cand in cands.values():
                buckets[place(cand[5], cand[0])].append(cand)
        del cands
        for j, b in enumerate(buckets):
            if b or j == index:  # the summary rides with the partition's own candidates
                yield j, pack(b, index, summary if j == index else None)

    # --- the proviso of a reduced search (por) ----------------------------------------------

    def probe(self, index: int, records: Iterable) -> Iterator[tuple[int, bytes]]:
        """Send each owner the fingerprints of the reduced successors it owns, with the
        fingerprint and partition of the state they are of."""
        with gc_paused():
            c, P, stop = checker(self.job), self.job.partitions, self.stop_at
            _, frontier = read_level(records, with_visited=False)
            key, packed, within, bounded, place = c.key, c.packed, c.within, c.bounded, c.place
            asked: list[list] = [[] for _ in range(P)]
            for k, fp, s in frontier:
                if stop is not None and k >= stop:
                    break
                try:   # (an exception here is raised again, and reported, by ``expand``)
                    if bounded and not within(s):
                        continue
                    out, kept = c.reducer.reduced_positions(s)
                    if kept is None:
                        continue
                    for i in kept:
                        t = out[i][1]
                        ft = t if packed else key(t)
                        asked[place(t, ft)].append((ft, fp))
                except Exception:   # noqa: BLE001
                    continue
            for j, q in enumerate(asked):
                if q:
                    yield j, pickle.dumps((index, q), PICKLE)

    def answer(self, index: int, records: Iterable) -> Iterator[tuple[int, bytes]]:
        """To each partition, the states of it with a reduced successor this one has visited."""
        with gc_paused():
            visited, asked = array("q"), {}
            for tag, data in records:
                if tag == "V":
                    visited.frombytes(data)
                elif isinstance(tag, int):
                    sender, q = pickle.loads(data)
                    for ft, pfp in q:
                        asked.setdefault(ft, []).append((sender, pfp))
            full: dict[int, set] = {}
            for ft in asked.keys() & visited:
                for sender, pfp in asked[ft]:
                    full.setdefault(sender, set()).add(pfp)
            for j in sorted(full):
                yield j, pickle.dumps(sorted(full[j]), PICKLE)

    # --- reduce side ----------------------------------------------------------------------------

    def merge(self, index: int, records: Iterable) -> Iterator[tuple[str, Any]]:
        with gc_paused():
            yield from self._merge(index, records)

    def _merge(self, index: int, records: Iterable) -> Iterator[tuple[str, Any]]:
        visited, blobs = array("q"), []
        for tag, data in records:  # read everything: a worker that stops early is not reused
            if tag == "V":
                visited.frombytes(data)
            elif isinstance(tag, int):
                blobs.append(data)
        best: dict = {}
        expansion, foreign = Expansion(), False
        for blob in blobs:
            cands, summary = unpack(blob)
            if summary is not None:
                expansion = summary
            else:
                foreign = True
            for cand in cands:
                ft = cand[0]
                cur = best.get(ft)
                if cur is None or (cand[1], cand[2]) < (cur[1], cur[2]):
                    best[ft] = cand
        del blobs
        if foreign:  # a partition's own candidates are checked already; the others' are not
            for ft in best.keys() & visited:
                del best[ft]
        new = sorted(best.values(), key=itemgetter(1, 2))
        del best
        yield from self._admit(index, visited, new, expansion, STEP_KEY_BYTES)

    def initial(self, index: int, records: Iterable) -> Iterator[tuple[str, Any]]:
        """Level 0: the initial states this partition owns, in the model's order."""
        for _ in records:
            pass
        c = checker(self.job)
        new, seen, event = [], set(), None
        try:
            states = list(c.model.init_states())
        except Exception as exc:
            states, event = [], _model_error(b"", exc)
        for i, s in enumerate(states):
            at = i.to_bytes(INIT_KEY_BYTES, "big")
            if self.stop_at is not None and at + b"\1" > self.stop_at:
                break
            try:
                fp = c.key(s)
            except Exception as exc:
                event = _model_error(at + b"\0", exc)
                break
            if fp not in seen:
                seen.add(fp)
                if c.place(s, fp) == index:
                    new.append((fp, b"", i, 0, 0, None, s))
        yield from self._admit(index, array("q"), new, Expansion(event=event), INIT_KEY_BYTES)

    @staticmethod
    def _witness(t, at: bytes, base, open_witnesses: list, witnessed: dict,
                 witness_errors: dict, rank: dict) -> None:
        """The witnesses still open, on a newly found state (one that satisfies the invariants,
        unless the search keeps going)."""
        for entry in open_witnesses[:]:
            p, holds = entry
            try:
                if holds(t):
                    witnessed[p.name] = at
                    open_witnesses.remove(entry)
            except Exception as exc:
                witness_errors[p.name] = _model_error(at, exc, base, rank[p.name])
                open_witnesses.remove(entry)

    def _admit(self, index, visited: array, new: list, expansion: Expansion, width: int):
        """Record the new states (in key order), check them, and yield the level's records."""
        c, level, stop = checker(self.job), self.depth + 1, self.stop_at
        checking, always = stop is None, c.always
        keep = self.keep_going and checking
        if keep:
            reports = Reports(c.live(self.retired), c.rank)
            always = reports.always
        open_witnesses = [c.sometimes[n] for n in self.pending if n in c.sometimes] if checking else []
        fps, parents, parent_parts, positions = array("q"), array("q"), array("i"), array("i")
        frontier, found = [], Counter()
        witnessed, witness_errors, event = {}, {}, None
        # Pickle shares a value only with itself (by identity), and each bucket unpickles into
        # its own copies: a coordinator that no step changed would be pickled once per bucket,
        # then once per copy, and so on every level. Interning the top-level fields of the new
        # states by equality keeps them shared (Kafka small, P = 2: pickling 25 s -> 7 s).
        canon: dict = {}
        intern = canon.setdefault
        for ft, pk, pos, pfp, ppart, name, t in new:
            if type(t) is not tuple and isinstance(t, tuple):  # a NamedTuple state
                try:
                    t = tuple.__new__(type(t), [intern(f, f) for f in t])
                except TypeError:  # an unhashable field: leave the state as it is
                    pass
            k = pk + pos.to_bytes(width, "big")
            if event is None and checking:  # invariants, then witnesses, as the BFS does
                base = (self.depth, ppart, pfp) if level else None
                if keep:
                    if always:
                        always = reports.check("always", (t,), k + b"\1", base)
                else:
                    try:
                        for p, holds in always:
                            if not holds(t):
                                event = Event(k + b"\1", "always", p.name, p.claim, base, last=ft)
                                break
                    except Exception as exc:
                        event = _model_error(k + b"\1", exc, base)
                if open_witnesses and event is None:
                    self._witness(t, k + b"\1", base, open_witnesses, witnessed, witness_errors,
                                  c.rank)
            fps.append(ft)
            parents.append(pfp)
            parent_parts.append(ppart)
            positions.append(pos)
            frontier.append((k, ft, t))
            if name is not None:
                found[name] += 1
        if checking:
            spark_store.write_parents(self.job.run_dir, level, index, fps, parents, parent_parts,
                                      positions)
        visited.extend(fps)
        self.summaries.add({(level, stop, index): Summary(
            len(fps), expansion, dict(found), witnessed, witness_errors, event,
            **(reports.found() if keep else {}))})
        yield from level_records(visited, frontier)


def pack(cands: list, sender: int, summary: Expansion | None) -> bytes:
    """One bucket: candidates ``(fp, parent key, position, parent fp, action name, state)`` from
    partition ``sender``, pickled column by column (fingerprints and positions as arrays: 1 us a
    candidate less than a list of tuples), and the sender's ``Expansion`` if the bucket is its own."""
    fps, keys, pos, parents, names, states = list(zip(*cands)) or [()] * 6
    return pickle.dumps((array("q", fps), keys, array("H", pos), array("q", parents), sender,
                         names, states, summary), PICKLE)


def unpack(blob: bytes) -> tuple[Iterator[tuple], Expansion | None]:
    """The candidates of a bucket as ``(fp, parent key, position, parent fp, parent partition,
    action name, state)``, and the sender's ``Expansion`` or None."""
    fps, keys, pos, parents, sender, names, states, summary = pickle.loads(blob)
    return zip(fps, keys, pos, parents, repeat(sender), names, states), summary


class Summaries:
    """The accumulator (pyspark's AccumulatorParam protocol) the level tasks report their
    ``Summary`` to, as ``{(level, stop_at, partition): Summary}``. A task that Spark runs again
    (a lost executor) reports the same entry again, which changes nothing."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:
        a.update(b)
        return a


def level_records(visited: array, frontier: list) -> Iterator[tuple[str, Any]]:
    data = visited.tobytes()
    step = VISITED_CHUNK * visited.itemsize
    for i in range(0, max(len(data), 1), step):
        yield "V", data[i:i + step]
    for i in range(0, len(frontier), CHUNK):
        yield "F", pickle.dumps(frontier[i:i + CHUNK], PICKLE)


def read_level(records: Iterable, with_visited: bool = True, with_answers: bool = False):
    """The visited set and frontier of a level partition (and with ``with_answers`` the
    ``answer`` blobs that came with them)."""
    visited, frontier, answers = array("q"), [], []
    for tag, data in records:
        if tag == "V":
            if with_visited:
                visited.frombytes(data)
        elif tag == "F":
            frontier.extend(pickle.loads(data))
        elif isinstance(tag, int):
            answers.append(data)
    return (visited, frontier, answers) if with_answers else (visited, frontier)


def save_checkpoint(job: Job, level: int, index: int, records: Iterable) -> Iterator[tuple[int, int]]:
    c = checker(job)
    with gc_paused():
        visited, frontier = read_level(records)
        yield spark_store.write_checkpoint_part(job.run_dir, level, index, visited, frontier,
                                                c.model, c.packed)


def load_checkpoint(job: Job, meta: dict, index: int, records: Iterable) -> Iterator[tuple[str, Any]]:
    for _ in records:
        pass
    c = checker(job)
    with gc_paused():
        visited, frontier = spark_store.read_checkpoint_part(job.run_dir, meta, index, c.model,
                                                             c.packed, c.key)
        yield from level_records(visited, frontier)
