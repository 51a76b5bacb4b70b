"""Single-process breadth-first search: the reference explorer, with shortest counterexamples.

The search is level-synchronous. What it keeps per distinct state is 20 bytes
(``kafka_mc.explorers.bfs.visited``):

* the visited set: 64-bit fingerprints (``kafka_mc.model.core.fingerprint`` of the view, or the state
  itself for packed models) in a sorted numpy array. Successors are fingerprinted once and
  deduplicated a chunk (``CHUNK``) at a time; the new ones are then checked one by one in the
  order they were generated, so everything is as if each had been looked up alone -- the same
  first violation, and at a stop the same counts (``rewind``);
* per level, the fingerprints in discovery order and int32 parent indices into the previous
  level. A counterexample is the chain of parent indices, rebuilt into states and actions by
  replaying (``kafka_mc.explorers.core.adapter.rebuild``); no per-state parent dict, no stored actions.

Two shortcuts keep a cheap model's transitions (TwoPhase's cost ~0.5 us) from paying for the
chunk one candidate at a time, with the same results: when nothing is checked on a step and the
model is packed, a state's successors join the chunk whole (``expand_packed``); when the model
declares no footprints and no invariant fails (nor raises) on any of a chunk's new states, they
are checked a property at a time and counted at once (``discover_clean``), else one by one
(``discover``).

Only the current and the next frontier hold full states (a packed model's frontier is its level's
fingerprints). ``--memory`` moves the tree and the frontiers to disk past a budget
(``fingerprints.Budget``); ``--checkpoint`` / ``--recover`` save and resume the search at level
boundaries (``kafka_mc.explorers.bfs.checkpoint``).
Properties are checked as ``kafka_mc.explorers.core.checking`` says: invariants and witnesses when a state is
first discovered (so the first violation found is at the smallest depth), transition properties
on every generated transition, terminal properties on expanded states without successors. The
cyclic garbage collector is paused during the search: states are immutable acyclic values, and
CPython would otherwise rescan the growing frontiers again and again.

With ``keep_going`` (``--continue``, TLC's ``-continue``) the search goes on after a violation:
each property is reported once, with the first counterexample met, which is a shortest one, and
is no longer checked after it. Every property failing at a state or step is reported there (an
initial state too; a stuck state: the deadlock and each failing terminal property), so each
property's counterexample is the first in BFS order that violates it, whatever the others do;
only a model error still ends the search.

TLC's semantics for the state constraint and the depth bound: a state outside ``within_bounds``
or at ``max_depth`` is counted and checked but not expanded, and is never a deadlock.
"""
from __future__ import annotations

import time
import traceback
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from operator import itemgetter
from typing import Callable, Sequence

from kafka_mc.model.config import shown
from kafka_mc.model.core import Model
import numpy as np

from kafka_mc.explorers.bfs import checkpoint as bfs_checkpoint
from kafka_mc.explorers.bfs import workers as bfs_workers
from kafka_mc.explorers.bfs.checkpoint import CheckpointOptions
from kafka_mc.explorers.bfs.state_codec import model_package
from kafka_mc.explorers.bfs.visited import Budget, Levels, PackedLevel, VisitedSet
from kafka_mc.explorers.core.adapter import check_fingerprint_contract, gc_paused, rebuild
from kafka_mc.explorers.core.checking import violation
from kafka_mc.explorers.core.progress import PROGRESS_EVERY, Progress
from kafka_mc.explorers.core.result import (Outcome, Violation, action_coverage, edge_coverage,
                                   peak_rss_mb, search_stats)
from kafka_mc.explorers.core.setup import SearchSetup

CHUNK = 1 << 14        # candidate successors deduplicated at a time
_STATE = itemgetter(1)   # (action, state) -> state


@dataclass(frozen=True)
class BfsOptions:
    properties: Sequence[str] | None = None      # names to check; None: all the model has
    max_depth: int = 0                            # 0: unbounded
    check_deadlock: bool | None = None            # None: the model's default
    progress: Callable[[Progress], None] | None = None
    progress_interval: float = 2.0                # seconds between progress reports
    keep_going: bool = False                      # --continue: report every violated property
    por: bool = False                             # --por: partial-order reduction (explorers.reductions.por)
    checkpoint: CheckpointOptions | None = None   # --checkpoint / --recover (explorers.bfs.checkpoint)
    memory_mb: int | None = None                  # --memory: past half of it, levels go to disk
    workers: int = 1                              # --workers: processes expanding a level


class _Stop(Exception):
    """Ends the search at the first violation."""

    def __init__(self, violation: Violation):
        self.violation = violation


def explore(model: Model, options: BfsOptions = BfsOptions()) -> Outcome:
    return Search(model, options).run()


def _reduced(reducer, seen_before: Callable, key: Callable) -> Callable:
    """The reduced successors of a state (``Reducer.successors``), deduplicated on the reduction
    view, with the proviso checked against the states seen before; when nothing is reducible
    (``Reducer.enabled`` false) every successor, as ``Reducer.successors`` then gives them."""
    if not reducer.enabled:
        return reducer.all_successors
    successors = reducer.successors
    return lambda s: successors(s, seen_before, key)


class Search:
    """One breadth-first search, in named phases: ``seed`` (the initial states) or a checkpoint's
    ``restore``, then per level ``expand_level`` (by ``expand_with_workers``, whose slices
    ``merge`` in, and the sequential loop or ``expand_packed``), whose candidates ``flush``
    deduplicates a chunk at a time (its new states checked by ``discover_clean`` or
    ``discover``; ``rewind`` at a stop), ``next_level`` and ``checkpoint`` at each level
    boundary, and ``outcome``. The set-up every search shares is ``self.setup`` (``SearchSetup``).

    The data the phases share are the search's attributes; the hot loop binds those it uses to
    locals once per level. The chunk of candidate successors not yet deduplicated: each one's
    fingerprint (``pending_fps``); per expanded state (an entry of ``owners``), its index in the
    frontier, where its candidates start (``starts``: negative when a flush cut the state's
    successors, the chunk then beginning inside them), its successors (``outs``: candidate ``c``
    of entry ``m`` is ``outs[m][c - starts[m]]``) and the state itself (``expanded``)."""

    def __init__(self, model: Model, options: BfsOptions):
        self.model, self.options = model, options
        self.setup = setup = SearchSetup(model, options.properties, options.check_deadlock,
                                         options.progress, options.progress_interval)
        checks = self.checks = setup.checks
        self.always, self.transition = checks.always, checks.transition
        self.successors, self.key, self.packed = setup.successors, setup.key, setup.packed
        store = self.store = options.checkpoint
        self.identity = {**(store.identity if store else {}), "model": model.name,
                         "checked": [p.name for p in checks.properties],
                         "deadlock": checks.deadlock, "max_depth": options.max_depth,
                         "partial_order": options.por}
        resumed = self.resumed = None
        if store is not None and store.recover:
            if options.por:   # the frontier's fingerprints are of the reduction view
                from kafka_mc.explorers.reductions.por import reduction_key
            resumed = self.resumed = bfs_checkpoint.load(
                store.run_dir, self.identity, model,
                reduction_key(model) if options.por else self.key, self.packed)
        self.visited, self.levels = ((resumed.visited, resumed.levels) if resumed
                                     else (VisitedSet(), Levels()))
        self.reducer = None
        if options.por:   # partial-order reduction: the reduced successors, deduplicated on
            from kafka_mc.explorers.reductions.por import Reducer, reduction_key   # the reduction view,
            self.reducer, self.key = Reducer(model, checks), reduction_key(model)   # with the
            self.successors = _reduced(self.reducer, self.visited.seen_before, self.key)
        self.generated = 0
        self.rewound = 0         # transitions counted past a stop (``rewind``)
        self.overcount = 0       # states added past a stop (``rewind``)
        self.depth = 0
        self.violations: list[Violation] = []
        self.interrupted = self.complete = False
        # A level's states: a list, a file (``--memory``) or, for a packed model, its fingerprints.
        self.frontier: Sequence = []
        self.budget = Budget(options.memory_mb, store.run_dir if store else None,
                             model_package(model))
        self.nxt = None if self.packed else []
        self.pending_fps, self.owners, self.starts = array("q"), array("q"), array("q")
        self.outs: list = []
        self.expanded: list = []
        self.chunk_edges = [set() for _ in setup.machines]   # the edges taken before the chunk
        self.rss0 = peak_rss_mb()
        setup.start_clock()
        self.witnesses = checks.witnesses()
        setup.relevance()   # the properties a step can change the verdict of
        if resumed:
            self.restore()
        self.witness, self.unseen = self.witnesses.see, self.witnesses.open   # (``see`` shrinks
        self.last_checkpoint = time.monotonic()                              # the list)
        self.parallel_levels = 0
        self.parallel = bfs_workers.usable(options.workers) and not self.packed
        self.balance = bfs_workers.Balance()   # how a level is cut between the processes
        self.expanding = None   # (depth, index) of the state being expanded, for model errors

    # --- the phases -----------------------------------------------------------------------------

    def run(self) -> Outcome:
        checks, options = self.checks, self.options
        with gc_paused():
            try:
                check_fingerprint_contract(self.model)
                if self.resumed:
                    self.frontier = self.resumed.frontier
                else:
                    self.seed()
                while self.frontier:
                    if options.max_depth and self.depth >= options.max_depth:
                        break
                    self.expand_level()
                    self.frontier = self.next_level()
                    self.nxt = self.new_level()
                    if self.frontier:
                        self.depth += 1
                        self.checkpoint(self.frontier)
                self.complete = not self.frontier
                if self.complete:
                    self.violations += checks.unwitnessed(self.witnesses.pending)
            except _Stop as stop:
                self.violations.append(stop.violation)
            except bfs_checkpoint.CheckpointError:
                raise
            except KeyboardInterrupt:
                self.interrupted = True
                try:   # the states generated before it are checked and counted, as they were
                    self.flush()
                except _Stop as stop:   # a violation met before the interrupt ends the search
                    self.interrupted = False
                    self.violations.append(stop.violation)
                except Exception:   # noqa: BLE001 -- the interrupt is reported
                    pass
            except Exception as exc:  # an exception in model code: a model error, with its path
                error = Violation("model_error", "model_error", "the model raised an exception",
                                  self.path_to(*self.expanding) if self.expanding else None,
                                  "".join(traceback.format_exception(exc)).rstrip())
                try:   # what the states generated before it violate is found first
                    self.flush()
                except _Stop as stop:
                    error = stop.violation
                except Exception:   # noqa: BLE001 -- the model error is reported
                    pass
                self.violations.append(error)
            finally:
                self.budget.close()
        return self.outcome()

    def restore(self) -> None:
        """The counters, witnesses and reports of the checkpointed search."""
        checks, setup, resumed, store = self.checks, self.setup, self.resumed, self.store
        meta, where = resumed.meta, f"--recover {store.run_dir}"
        for what, path in bfs_checkpoint.reported(meta, self.model, checks,
                                                  self.options.keep_going, where):
            self.violations.append(violation(what, path))
            checks.retire(what)
        self.always, self.transition = checks.always, checks.transition
        if set(meta["pending"]) - {p.name for p in self.witnesses.pending}:
            raise bfs_checkpoint.CheckpointError(f"{where}: the checkpoint waits for a witness "
                                                 "this search does not check")
        self.witnesses.open[:] = [e for e in self.witnesses.open if e[0].name in meta["pending"]]
        self.generated, self.depth = meta["generated"], resumed.depth
        setup.fired.update(meta["fired"])
        setup.found.update(meta["found"])
        for got, pairs in zip(setup.edges_taken, meta["edges"]):
            got.update(map(tuple, pairs))
        self.chunk_edges[:] = [set(e) for e in setup.edges_taken]
        if self.reducer:
            self.reducer.reduced_states = meta["reduced_states"]

    def seed(self) -> None:
        """The initial states: level 0, checked as they are discovered."""
        model, checks, visited, key = self.model, self.checks, self.visited, self.key
        always, nxt, keep_going = self.always, self.nxt, self.options.keep_going
        inits = list(model.init_states())
        init_fps = np.array([key(s) for s in inits], dtype=np.int64)
        new = visited.add_new(init_fps)
        self.levels.add(init_fps[new], np.zeros(len(new), dtype=np.int32))
        for n, j in enumerate(new.tolist()):
            if nxt is not None:
                nxt.append(inits[j])
            try:
                for p, holds in always:
                    if not holds(inits[j]):
                        if not keep_going:   # the later ones were not reached
                            self.overcount += int((new > j).sum())
                        self.found(p, self.path_to(0, n))
                        always = self.always = checks.always
                self.witness(inits[j])
            except _Stop:
                raise
            except Exception:   # a model error in a property: nor were they then
                self.overcount += int((new > j).sum())
                raise
        self.frontier = self.next_level()
        self.nxt = self.new_level()
        self.checkpoint(self.frontier)

    def expand_level(self) -> None:
        """Expand the frontier: its states' successors, each checked on its step and
        fingerprinted, join the chunk, deduplicated a chunk at a time."""
        frontier = self.frontier
        resume = self.expand_with_workers(frontier)
        if resume and resume >= len(frontier):
            return
        if self.packed and not self.transition and not self.setup.edges:
            return self.expand_packed(frontier, resume)
        setup, checks, model = self.setup, self.checks, self.model
        successors, key, packed = self.successors, self.key, self.packed
        within, bounded, edges, relevant = setup.within, setup.bounded, setup.edges, setup.relevant
        transition, reducer, depth, progress = self.transition, self.reducer, self.depth, \
            setup.progress
        pending_fps, owners, starts = self.pending_fps, self.owners, self.starts
        expanded, outs = self.expanded, self.outs
        fps_append = pending_fps.append
        cov = setup.fired
        cov_get = cov.get
        generated = self.generated
        i = None
        try:
            for i, s in enumerate(frontier[resume:] if resume else frontier, resume):
                if not i % PROGRESS_EVERY and progress is not None:
                    setup.report(generated, len(self.visited), depth,
                                 len(frontier) - i + self.levels.open_size)
                if bounded and not within(s):
                    continue
                out = successors(s)
                if not out:
                    for stuck in checks.stuck_failures(s):
                        self.flush()
                        self.found(stuck, self.path_to(depth, i))
                    continue
                generated += len(out)
                starts.append(len(pending_fps))
                owners.append(i)
                expanded.append(s)
                outs.append(out)
                for a, t in out:
                    cov[a[0]] = cov_get(a[0], 0) + 1
                    for taken, note in edges:
                        note(taken(s, a, t))
                    if transition:
                        for p, holds in relevant(a, transition) if relevant else transition:
                            if not holds(s, a, t):
                                self.flush()
                                base = self.path_to(depth, i)
                                # (reduced: the rebuilt state may differ from s outside its
                                # reduction view, so the step is taken again from it)
                                last = model.step(base.states[-1], a) if reducer else t
                                self.found(p, type(base)(base.states + (last,),
                                                         base.actions + (a,)))
                                transition = self.transition = checks.transition
                                # flush emptied the chunk: it goes on inside this state's
                                # successors, at this one
                                starts.append(-out.index((a, t)))
                                owners.append(i)
                                expanded.append(s)
                                outs.append(out)
                    fps_append(t if packed else key(t))
                if len(pending_fps) >= CHUNK:
                    self.flush()
        except BaseException:
            if self.expanding is None and i is not None:   # (a flush's property sets its own)
                self.expanding = (depth, i)
            raise
        finally:
            self.generated = generated
        self.flush()

    def expand_packed(self, frontier, resume: int) -> None:
        """``expand_level``'s loop when nothing is checked on a step (no transition property, no
        state machine's edges noted) and the model is packed (a state is its own fingerprint):
        a state's successors join the chunk whole, their states appended at once as their
        fingerprints; only their actions are counted one by one. The chunk is flushed at a
        state's end, as the general loop flushes it."""
        setup, checks = self.setup, self.checks
        successors, within, bounded, progress = (self.successors, setup.within, setup.bounded,
                                                 setup.progress)
        pending_fps, owners, starts = self.pending_fps, self.owners, self.starts
        expanded, outs, extend = self.expanded, self.outs, self.pending_fps.extend
        cov = setup.fired
        cov_get = cov.get
        generated, depth, i = self.generated, self.depth, None
        try:
            for i, s in enumerate(frontier[resume:] if resume else frontier, resume):
                if not i % PROGRESS_EVERY and progress is not None:
                    setup.report(generated, len(self.visited), depth,
                                 len(frontier) - i + self.levels.open_size)
                if bounded and not within(s):
                    continue
                out = successors(s)
                if not out:
                    for stuck in checks.stuck_failures(s):
                        self.flush()
                        self.found(stuck, self.path_to(depth, i))
                    continue
                generated += len(out)
                starts.append(len(pending_fps))
                owners.append(i)
                expanded.append(s)
                outs.append(out)
                for a, _ in out:
                    cov[a[0]] = cov_get(a[0], 0) + 1
                extend(map(_STATE, out))
                if len(pending_fps) >= CHUNK:
                    self.flush()
        except BaseException:
            if self.expanding is None and i is not None:   # (a flush's property sets its own)
                self.expanding = (depth, i)
            raise
        finally:
            self.generated = generated
        self.flush()

    def flush(self) -> None:
        """Deduplicate the pending candidates; the new states join the next level in the
        order they were generated and are checked there, as if each had been looked up alone."""
        pending_fps, starts, owners, setup = self.pending_fps, self.starts, self.owners, self.setup
        if not pending_fps:
            return
        fps = np.array(pending_fps, dtype=np.int64)
        new = self.visited.add_new(fps)
        if len(new):
            first = np.searchsorted(np.array(starts, dtype=np.int64), new, side="right") - 1
            base = self.levels.open_size
            self.levels.add(fps[new], np.array(owners, dtype=np.int64)[first])
            js, ks = new.tolist(), first.tolist()
            if not self.discover_clean(js, ks):
                self.discover(js, ks, new, base)
        self.outs.clear()
        self.expanded.clear()
        del pending_fps[:], owners[:], starts[:]
        if setup.edges:
            self.chunk_edges[:] = [set(e) for e in setup.edges_taken]

    def discover_clean(self, js: list, ks: list) -> bool:
        """The chunk's new states (candidate ``js[n]`` of entry ``ks[n]`` of ``owners``) at once,
        when the model declares no footprints and every invariant holds on every one of them:
        checked a property at a time (and the witnesses not yet seen), then kept and counted.
        False, with nothing kept, counted nor seen, when one fails or raises: ``discover`` then
        takes them one by one, to stop where a search looking each up alone would have."""
        if self.setup.relevant is not None:
            return False
        begins, outs = self.starts.tolist(), self.outs
        found = [outs[k][j - begins[k]] for j, k in zip(js, ks)]
        states = [t for _, t in found]
        unseen = self.unseen
        try:
            for _, holds in self.always:
                if not all(map(holds, states)):
                    return False
            seen = [entry for entry in unseen if any(map(entry[1], states))]
        except Exception:   # noqa: BLE001 -- ``discover`` meets it again, where it is
            return False
        if self.nxt is not None:
            keep = self.nxt.append
            for t in states:
                keep(t)
        dcov = self.setup.found
        dcov_get = dcov.get
        for a, _ in found:
            dcov[a[0]] = dcov_get(a[0], 0) + 1
        for entry in seen:   # (``Witnesses.see`` of each state)
            unseen.remove(entry)
        return True

    def discover(self, js: list, ks: list, new: np.ndarray, base: int) -> None:
        """The chunk's new states one by one, in the order they were generated: each kept,
        counted and checked as if it had been looked up alone (``base``: the first's index in
        the level being discovered; ``new``: the candidates' indices in the chunk)."""
        checks, setup, keep_going, outs = self.checks, self.setup, self.options.keep_going, \
            self.outs
        always, relevant, unseen, witness = self.always, setup.relevant, self.unseen, self.witness
        nxt, dcov = self.nxt, setup.found
        keep, dcov_get = (nxt.append if nxt is not None else None), dcov.get
        begins = self.starts.tolist()
        for n, (j, k) in enumerate(zip(js, ks)):
            a, t = outs[k][j - begins[k]]
            if keep is not None:
                keep(t)
            dcov[a[0]] = dcov_get(a[0], 0) + 1
            try:
                for p, holds in relevant(a, always) if relevant else always:
                    if not holds(t):
                        if not keep_going:
                            self.rewind(j, int((new > j).sum()))
                        self.found(p, self.path_to(self.depth + 1, base + n))
                        always = self.always = checks.always
                if unseen:
                    witness(t)
            except _Stop:
                raise
            except Exception:   # a model error in a property: where the search was then
                self.rewind(j, int((new > j).sum()))
                self.expanding = (self.depth, self.owners[k])
                raise

    def rewind(self, j: int, new_after: int) -> None:
        """The search stops at candidate ``j`` of the chunk: count what a search looking up each
        candidate as it is generated would have, had it stopped there (the chunk's later
        candidates are forgotten; their state's own transitions were all counted already)."""
        starts, owners, outs, setup = self.starts, self.owners, self.outs, self.setup
        k = bisect_right(starts, j) - 1
        owner = owners[k]
        later = owner   # the states expanded after it: all their transitions were counted
        for m in range(k + 1, len(starts)):
            if owners[m] != later:
                later = owners[m]
                self.rewound += len(outs[m])
        self.overcount += new_after
        later = self.candidates(0, len(starts))[j + 1:]
        c = len(self.pending_fps) - starts[-1]   # the last state's candidate being generated, if
        if c < len(outs[-1]):                    # any: counted, not yet pending (a flush or an
            later.append(outs[-1][c])            # error at it)
        cov = setup.fired
        for a, _ in later:
            cov[a[0]] -= 1
            if not cov[a[0]]:
                del cov[a[0]]
        if setup.edges:
            for got, before in zip(setup.edges_taken, self.chunk_edges):
                got.intersection_update(before)
            for m in range(k + 1):
                s = self.expanded[m]
                for a, t in self.candidates(m, m + 1)[:j + 1 - max(starts[m], 0)]:
                    for taken, note in setup.edges:
                        note(taken(s, a, t))

    def candidates(self, lo: int, hi: int) -> list:
        """The pending candidates of entries ``lo`` to ``hi`` of ``owners``, in order."""
        starts, outs, out = self.starts, self.outs, []
        for m in range(lo, hi):
            end = starts[m + 1] if m + 1 < len(starts) else len(self.pending_fps)
            out += outs[m][max(starts[m], 0) - starts[m]:end - starts[m]]
        return out

    def expand_with_workers(self, frontier) -> int:
        """Expand the level with ``options.workers`` processes (``kafka_mc.explorers.bfs.workers``), up
        to where something is to be reported: the index of the state the sequential loop goes on
        from (0: the whole level is its; the level's size: none)."""
        if not (self.parallel and isinstance(frontier, list)
                and len(frontier) >= bfs_workers.PARALLEL_MIN):
            return 0
        setup, checks = self.setup, self.checks
        work = bfs_workers.Expansion(
            self.successors, self.key, setup.within if setup.bounded else None,
            tuple(self.always), tuple(self.unseen), tuple(self.transition), setup.relevant,
            checks.stuck_failures, tuple(m.taken for m in setup.machines),
            self.visited.sorted_fingerprints(), self.reducer)
        resume = bfs_workers.expand_level(frontier, self.options.workers, work, self.merge,
                                          self.balance, self.tick)
        if setup.edges:
            self.chunk_edges[:] = [set(e) for e in setup.edges_taken]
        self.parallel_levels += resume == len(frontier)
        return resume

    def tick(self, i: int, more: int) -> None:
        """Progress, with the counts of the BFS process's own slice of a level."""
        self.setup.report(self.generated + more, len(self.visited), self.depth,
                          len(self.frontier) - i + self.levels.open_size)

    def merge(self, p: bfs_workers.Slice) -> None:
        """A slice of the level, in order: its new states join the next level, its counts the
        search's (a child's states come relative to their parents, ``bfs_workers.relative``)."""
        setup, frontier, nxt = self.setup, self.frontier, self.nxt
        fps = np.frombuffer(p.fps, dtype=np.int64)
        new = self.visited.add_new(fps)
        self.levels.add(fps[new], np.frombuffer(p.owners, dtype=np.int64)[new])
        dcov = setup.found
        dcov_get, patch, owner, found = dcov.get, bfs_workers.patch, p.owners, p.found
        unseen, witness = self.unseen, self.witness
        for j in new.tolist():
            a, t = found[j]
            if type(t) is list:   # a child's state, relative to its parent (``delta``)
                t = patch(frontier[owner[j]], t)
            nxt.append(t)
            dcov[a[0]] = dcov_get(a[0], 0) + 1
            if unseen:
                witness(t)
        self.generated += p.generated   # (the coverage's first-fired order is the sequential one)
        cov = setup.fired
        for a, n in p.fired.items():
            cov[a] = cov.get(a, 0) + n
        for got, more in zip(setup.edges_taken, p.edges):
            got.update(more)
        if self.reducer:
            self.reducer.reduced_states += p.reduced

    def next_level(self) -> Sequence:
        """Close the level just discovered and start the next; the states to expand next."""
        levels = self.levels
        before = len(levels)
        levels.close()
        self.visited.end_level()
        if self.packed:
            states = PackedLevel(levels.fps[-1]) if len(levels) > before else []
        else:
            states = self.nxt
        self.budget.level_done(levels, self.frontier)
        return states

    def new_level(self):
        return None if self.packed else self.budget.new_frontier(len(self.levels))

    def checkpoint(self, frontier) -> None:
        """Save the search at this level boundary when ``--checkpoint``'s minutes are up."""
        store = self.store
        if not frontier or store is None or store.minutes is None \
                or time.monotonic() - self.last_checkpoint < 60 * store.minutes:
            return
        try:
            self.save(frontier)
        except OSError as e:   # not the model's: the search cannot go on as asked
            raise bfs_checkpoint.CheckpointError(
                f"--checkpoint: cannot save in {shown(store.run_dir)} ({e})") from None
        self.last_checkpoint = time.monotonic()

    def save(self, frontier) -> None:
        setup, model = self.setup, self.model
        bfs_checkpoint.save(self.store.run_dir, model, self.levels, frontier, self.packed, {
            "identity": self.identity, "generated": self.generated,
            "distinct": len(self.visited), "fired": dict(setup.fired),
            "found": dict(setup.found),
            "edges": [sorted(map(list, got)) for got in setup.edges_taken],
            "pending": [p.name for p in self.witnesses.pending],
            "violations": [{"kind": v.kind, "property": v.property,
                            "path": bfs_checkpoint.positions(model, v.path)}
                           for v in self.violations],
            "reduced_states": self.reducer.reduced_states if self.reducer else 0},
            self.store.digests)

    def outcome(self) -> Outcome:
        setup, model, options, checks, reducer = (self.setup, self.model, self.options,
                                                  self.checks, self.reducer)
        seconds = time.perf_counter() - setup.t0
        depth = self.depth + bool(self.levels.open_size)  # a level cut short by a violation
        fired = dict(setup.fired)
        kinds = list(model.action_kinds())
        stats = search_stats(self.generated - self.rewound, len(self.visited) - self.overcount,
                             depth, seconds, self.rss0, self.packed)
        memory = {"visited_bytes": self.visited.nbytes, "tree_bytes": self.levels.nbytes,
                  "on_disk": self.budget.spilled}
        if reducer:
            from kafka_mc.explorers.reductions.por import report_note
        return Outcome(
            model=model.name, explorer="bfs", stats=stats,
            coverage=action_coverage(fired, dict(setup.found), kinds),
            never_enabled=tuple(k for k in kinds if k not in fired),
            checked=checks.checked, unchecked=checks.unchecked,
            not_applicable=checks.not_applicable,
            violations=tuple(self.violations), edges=edge_coverage(setup.machines,
                                                                   setup.edges_taken),
            interrupted=self.interrupted, complete=self.complete,
            extra={"memory": memory,
                   **(report_note(reducer, reducer.reduced_states) if reducer else {}),
                   **({"workers": {"processes": options.workers, "levels": self.parallel_levels}}
                      if self.parallel else {})})

    # --- what the phases share --------------------------------------------------------------------

    def path_to(self, d: int, i: int):
        """The behaviour from an initial state to state ``i`` of depth ``d``."""
        return rebuild(self.model, self.levels.path(d, i), self.key if self.reducer else None)

    def found(self, what, path) -> None:
        """A violation: the end of the search, or with ``keep_going`` one more to report and a
        property no longer checked (the caller rereads ``checks``' tuples)."""
        v = violation(what, path)
        if not self.options.keep_going:
            raise _Stop(v)
        self.violations.append(v)
        self.checks.retire(what)
