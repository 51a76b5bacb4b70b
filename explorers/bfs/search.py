"""Single-process breadth-first search: the reference explorer, with shortest counterexamples.

The search is level-synchronous. What it keeps per distinct state is 20 bytes
(``explorers.bfs.visited``):

* the visited set: 64-bit fingerprints (``model.core.fingerprint`` of the view, or the state
  itself for packed models) in a sorted numpy array. Successors are fingerprinted once and
  deduplicated a chunk (``CHUNK``) at a time; the new ones are then checked one by one in the
  order they were generated, so everything is as if each had been looked up alone -- the same
  first violation, and at a stop the same counts (``rewind``);
* per level, the fingerprints in discovery order and int32 parent indices into the previous
  level. A counterexample is the chain of parent indices, rebuilt into states and actions by
  replaying (``explorers.core.adapter.rebuild``); no per-state parent dict, no stored actions.

Only the current and the next frontier hold full states (a packed model's frontier is its level's
fingerprints). ``--memory`` moves the tree and the frontiers to disk past a budget
(``fingerprints.Budget``); ``--checkpoint`` / ``--recover`` save and resume the search at level
boundaries (``explorers.bfs.checkpoint``).
Properties are checked as ``explorers.core.checking`` says: invariants and witnesses when a state is
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
from typing import Callable, Sequence

from model.config import shown
from model.core import Model, ModelBase
import numpy as np

from explorers.bfs import checkpoint as bfs_checkpoint

from explorers.bfs import workers as bfs_workers
from explorers.bfs.checkpoint import CheckpointOptions
from explorers.core.checking import Checks, Relevance, violation
from explorers.bfs.visited import Budget, Levels, PackedLevel, VisitedSet
from explorers.bfs.state_codec import model_package
from explorers.core.adapter import check_fingerprint_contract, gc_paused, key_function, rebuild, \
    successors_of
from explorers.core.progress import PROGRESS_EVERY, Progress
from explorers.core.result import (Outcome, Violation, action_coverage, edge_coverage,
                              machines_of, peak_rss_mb, search_stats)

CHUNK = 1 << 14        # candidate successors deduplicated at a time


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
    checks = Checks(model, options.properties, options.check_deadlock)
    always, transition = checks.always, checks.transition   # iterated inline: the hot loop
    max_depth = options.max_depth
    successors, key, packed = successors_of(model), key_function(model), getattr(model, "packed", False)
    within = model.within_bounds
    store = options.checkpoint
    identity = {**(store.identity if store else {}), "model": model.name,
                "checked": [p.name for p in checks.properties], "deadlock": checks.deadlock,
                "max_depth": max_depth, "partial_order": options.por}
    resumed = None
    if store is not None and store.recover:
        if options.por:   # the frontier's fingerprints are of the reduction view
            from explorers.reductions.por import reduction_key
        resumed = bfs_checkpoint.load(store.run_dir, identity, model,
                                      reduction_key(model) if options.por else key, packed)
    visited, levels = (resumed.visited, resumed.levels) if resumed else (VisitedSet(), Levels())
    reducer = None
    if options.por:   # partial-order reduction: the reduced successors, deduplicated on their
        from explorers.reductions.por import Reducer, reduction_key, report_note   # the reduction view,
        reducer, key = Reducer(model, checks), reduction_key(model)   # with the proviso

        def successors(s, _reduced=reducer.successors, _old=visited.seen_before):
            return _reduced(s, _old, key)
    bounded = getattr(within, "__func__", None) is not ModelBase.within_bounds

    cov: dict = {}    # action name -> transitions generated (by name: a name's hash is cached,
    dcov: dict = {}   # an action's is not), and -> distinct states first reached by one
    machines = machines_of(model)
    edges_taken = [set() for _ in machines]
    edges = tuple((m.taken, got.update) for m, got in zip(machines, edges_taken))
    generated = 0
    depth = 0
    violations: list[Violation] = []
    interrupted = complete = False
    # A level's states: a list, a file (``--memory``) or, for a packed model, its fingerprints.
    frontier: Sequence = []
    budget = Budget(options.memory_mb, store.run_dir if store else None, model_package(model))
    nxt = None if packed else []

    def next_level() -> Sequence:
        """Close the level just discovered and start the next; the states to expand next."""
        before = len(levels)
        levels.close()
        visited.end_level()
        if packed:
            states = PackedLevel(levels.fps[-1]) if len(levels) > before else []
        else:
            states = nxt
        budget.level_done(levels, frontier)
        return states

    def new_level():
        return None if packed else budget.new_frontier(len(levels))
    # The chunk of candidate successors not yet deduplicated: each one's (action, state) and
    # fingerprint; per expanded state, its index in the frontier and where its candidates start.
    pending_fps, owners, starts = array("q"), array("q"), array("q")
    outs: list = []   # per entry of ``owners``: the state's successors, candidate ``c`` of the
                      # entry being ``outs[m][c - starts[m]]`` (a start is negative when a flush
                      # cut the state's successors: the chunk then begins inside them)
    expanded: list = []                        # the states of ``owners``
    chunk_edges = [set() for _ in machines]   # the edges taken before the chunk (``rewind``)
    overcount = 0                              # states added past a stop (``rewind``)
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()
    last_report = t0

    def path_to(d: int, i: int):
        """The behaviour from an initial state to state ``i`` of depth ``d``."""
        return rebuild(model, levels.path(d, i), key if reducer else None)

    def found(what, path) -> None:
        """A violation: the end of the search, or with ``keep_going`` one more to report and a
        property no longer checked (the caller rereads ``checks``' tuples)."""
        v = violation(what, path)
        if not options.keep_going:
            raise _Stop(v)
        violations.append(v)
        checks.retire(what)

    witnesses = checks.witnesses()
    relevance = Relevance.of_model(model)   # the properties a step can change the verdict of
    relevant = relevance.of if relevance else None
    if resumed:   # the counters, witnesses and reports of the checkpointed search
        meta, where = resumed.meta, f"--recover {store.run_dir}"
        for what, path in bfs_checkpoint.reported(meta, model, checks, options.keep_going, where):
            violations.append(violation(what, path))
            checks.retire(what)
        always, transition = checks.always, checks.transition
        if set(meta["pending"]) - {p.name for p in witnesses.pending}:
            raise bfs_checkpoint.CheckpointError(f"{where}: the checkpoint waits for a witness "
                                                 "this search does not check")
        witnesses.open[:] = [e for e in witnesses.open if e[0].name in meta["pending"]]
        generated, depth = meta["generated"], resumed.depth
        cov.update(meta["fired"])
        dcov.update(meta["found"])
        for got, pairs in zip(edges_taken, meta["edges"]):
            got.update(map(tuple, pairs))
        chunk_edges[:] = [set(e) for e in edges_taken]
        if reducer:
            reducer.reduced_states = meta["reduced_states"]
    witness, unseen = witnesses.see, witnesses.open   # the list ``see`` shrinks
    last_checkpoint = time.monotonic()

    def checkpoint(frontier) -> None:
        """Save the search at this level boundary when ``--checkpoint``'s minutes are up."""
        nonlocal last_checkpoint
        if not frontier or store is None or store.minutes is None \
                or time.monotonic() - last_checkpoint < 60 * store.minutes:
            return
        try:
            save(frontier)
        except OSError as e:   # not the model's: the search cannot go on as asked
            raise bfs_checkpoint.CheckpointError(
                f"--checkpoint: cannot save in {shown(store.run_dir)} ({e})") from None
        last_checkpoint = time.monotonic()

    def save(frontier) -> None:
        bfs_checkpoint.save(store.run_dir, model, levels, frontier, packed, {
            "identity": identity, "generated": generated, "distinct": len(visited),
            "fired": dict(cov), "found": dict(dcov),
            "edges": [sorted(map(list, got)) for got in edges_taken],
            "pending": [p.name for p in witnesses.pending],
            "violations": [{"kind": v.kind, "property": v.property,
                            "path": bfs_checkpoint.positions(model, v.path)} for v in violations],
            "reduced_states": reducer.reduced_states if reducer else 0}, store.digests)

    def flush() -> None:
        """Deduplicate the pending candidates; the new states join the next level in the
        order they were generated and are checked there, as if each had been looked up alone."""
        nonlocal always, expanding
        if not pending_fps:
            return
        fps = np.array(pending_fps, dtype=np.int64)
        new = visited.add_new(fps)
        if len(new):
            first = np.searchsorted(np.array(starts, dtype=np.int64), new, side="right") - 1
            base = levels.open_size
            levels.add(fps[new],
                       np.array(owners, dtype=np.int64)[first])
            keep, dcov_get = (nxt.append if nxt is not None else None), dcov.get
            begins = starts.tolist()
            for n, (j, k) in enumerate(zip(new.tolist(), first.tolist())):
                a, t = outs[k][j - begins[k]]
                if keep is not None:
                    keep(t)
                dcov[a[0]] = dcov_get(a[0], 0) + 1
                try:
                    for p, holds in relevant(a, always) if relevant else always:
                        if not holds(t):
                            if not options.keep_going:
                                rewind(j, int((new > j).sum()))
                            found(p, path_to(depth + 1, base + n))
                            always = checks.always
                    if unseen:
                        witness(t)
                except _Stop:
                    raise
                except Exception:   # a model error in a property: where the search was then
                    rewind(j, int((new > j).sum()))
                    expanding = (depth, owners[k])
                    raise
        outs.clear()
        expanded.clear()
        del pending_fps[:], owners[:], starts[:]
        if edges:
            chunk_edges[:] = [set(e) for e in edges_taken]

    def rewind(j: int, new_after: int) -> None:
        """The search stops at candidate ``j`` of the chunk: count what a search looking up each
        candidate as it is generated would have, had it stopped there (the chunk's later
        candidates are forgotten; their state's own transitions were all counted already)."""
        nonlocal generated, overcount
        k = bisect_right(starts, j) - 1
        owner = owners[k]
        later = owner   # the states expanded after it: all their transitions were counted
        for m in range(k + 1, len(starts)):
            if owners[m] != later:
                later = owners[m]
                generated -= len(outs[m])
        overcount += new_after
        later = candidates(0, len(starts))[j + 1:]
        c = len(pending_fps) - starts[-1]   # the last state's candidate being generated, if
        if c < len(outs[-1]):               # any: counted, not yet pending (a flush or an
            later.append(outs[-1][c])       # error at it)
        for a, _ in later:
            cov[a[0]] -= 1
            if not cov[a[0]]:
                del cov[a[0]]
        if edges:
            for got, before in zip(edges_taken, chunk_edges):
                got.intersection_update(before)
            for m in range(k + 1):
                s = expanded[m]
                for a, t in candidates(m, m + 1)[:j + 1 - max(starts[m], 0)]:
                    for taken, note in edges:
                        note(taken(s, a, t))

    def candidates(lo: int, hi: int) -> list:
        """The pending candidates of entries ``lo`` to ``hi`` of ``owners``, in order."""
        out = []
        for m in range(lo, hi):
            end = starts[m + 1] if m + 1 < len(starts) else len(pending_fps)
            out += outs[m][max(starts[m], 0) - starts[m]:end - starts[m]]
        return out

    def expanded_by_workers(frontier) -> int:
        """Expand the level with ``options.workers`` processes (``explorers.bfs.workers``), up
        to where something is to be reported: the index of the state the sequential loop goes on
        from (0: the whole level is its; the level's size: none)."""
        nonlocal parallel_levels
        if not (parallel and isinstance(frontier, list)
                and len(frontier) >= bfs_workers.PARALLEL_MIN):
            return 0

        def tick(i: int, more: int) -> None:   # the counts of the BFS process's own slice
            nonlocal last_report
            now = time.perf_counter()
            if options.progress is not None and now - last_report >= options.progress_interval:
                last_report = now
                options.progress(Progress(generated + more, len(visited), depth,
                                          len(frontier) - i + levels.open_size, now - t0))

        def merge(p: bfs_workers.Slice) -> None:
            """A slice of the level, in order: its new states join the next level, its counts the
            search's (a child's states come relative to their parents, ``bfs_workers.relative``)."""
            nonlocal generated
            fps = np.frombuffer(p.fps, dtype=np.int64)
            new = visited.add_new(fps)
            levels.add(fps[new], np.frombuffer(p.owners, dtype=np.int64)[new])
            dcov_get, patch, owner, found = dcov.get, bfs_workers.patch, p.owners, p.found
            for j in new.tolist():
                a, t = found[j]
                if type(t) is list:   # a child's state, relative to its parent (``delta``)
                    t = patch(frontier[owner[j]], t)
                nxt.append(t)
                dcov[a[0]] = dcov_get(a[0], 0) + 1
                if unseen:
                    witness(t)
            generated += p.generated   # (the coverage's first-fired order is the sequential one)
            for a, n in p.fired.items():
                cov[a] = cov.get(a, 0) + n
            for got, more in zip(edges_taken, p.edges):
                got.update(more)
            if reducer:
                reducer.reduced_states += p.reduced

        work = bfs_workers.Expansion(
            successors, key, within if bounded else None, tuple(always), tuple(unseen),
            tuple(transition), relevant, checks.stuck_failures, tuple(m.taken for m in machines),
            visited.sorted_fingerprints(), reducer)
        resume = bfs_workers.expand_level(frontier, options.workers, work, merge, balance, tick)
        if edges:
            chunk_edges[:] = [set(e) for e in edges_taken]
        parallel_levels += resume == len(frontier)
        return resume

    parallel_levels = 0
    parallel = bfs_workers.usable(options.workers) and not packed
    balance = bfs_workers.Balance()   # how a level is cut between the processes
    expanding = None  # (depth, index) of the state being expanded, for model errors
    with gc_paused():
        try:
            check_fingerprint_contract(model)
            if resumed:
                frontier = resumed.frontier
            else:
                inits = list(model.init_states())
                init_fps = np.array([key(s) for s in inits], dtype=np.int64)
                new = visited.add_new(init_fps)
                levels.add(init_fps[new],
                           np.zeros(len(new), dtype=np.int32))
                for n, j in enumerate(new.tolist()):
                    if nxt is not None:
                        nxt.append(inits[j])
                    try:
                        for p, holds in always:
                            if not holds(inits[j]):
                                if not options.keep_going:   # the later ones were not reached
                                    overcount += int((new > j).sum())
                                found(p, path_to(0, n))
                                always = checks.always
                        witness(inits[j])
                    except _Stop:
                        raise
                    except Exception:   # a model error in a property: nor were they then
                        overcount += int((new > j).sum())
                        raise
                frontier = next_level()
                nxt = new_level()
                checkpoint(frontier)
            while frontier:
                if max_depth and depth >= max_depth:
                    break
                resume = expanded_by_workers(frontier)
                if not resume or resume < len(frontier):
                    fps_append = pending_fps.append
                    cov_get = cov.get
                    for i, s in enumerate(frontier[resume:] if resume else frontier, resume):
                        expanding = (depth, i)
                        if not i % PROGRESS_EVERY and options.progress is not None:
                            now = time.perf_counter()
                            if now - last_report >= options.progress_interval:
                                last_report = now
                                options.progress(Progress(
                                    generated, len(visited), depth,
                                    len(frontier) - i + levels.open_size, now - t0))
                        if bounded and not within(s):
                            continue
                        out = successors(s)
                        if not out:
                            for stuck in checks.stuck_failures(s):
                                flush()
                                found(stuck, path_to(depth, i))
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
                                for p, holds in relevant(a, transition) if relevant \
                                        else transition:
                                    if not holds(s, a, t):
                                        flush()
                                        base = path_to(depth, i)
                                        # (reduced: the rebuilt state may differ from s outside its
                                        # reduction view, so the step is taken again from it)
                                        last = model.step(base.states[-1], a) if reducer else t
                                        found(p, type(base)(base.states + (last,), base.actions + (a,)))
                                        transition = checks.transition
                                        # flush emptied the chunk: it goes on inside this
                                        # state's successors, at this one
                                        starts.append(-out.index((a, t)))
                                        owners.append(i)
                                        expanded.append(s)
                                        outs.append(out)
                            fps_append(t if packed else key(t))
                        if len(pending_fps) >= CHUNK:
                            flush()
                    expanding = None
                    flush()
                frontier = next_level()
                nxt = new_level()
                if frontier:
                    depth += 1
                    checkpoint(frontier)
            complete = not frontier
            violations += checks.unwitnessed(witnesses.pending) if complete else []
        except _Stop as stop:
            violations.append(stop.violation)
        except bfs_checkpoint.CheckpointError:
            raise
        except KeyboardInterrupt:
            interrupted = True
            try:   # the states generated before it are checked and counted, as they were
                flush()
            except _Stop as stop:   # a violation met before the interrupt ends the search
                interrupted = False
                violations.append(stop.violation)
            except Exception:   # noqa: BLE001 -- the interrupt is reported
                pass
        except Exception as exc:  # an exception in model code: a model error, with its path
            error = Violation("model_error", "model_error", "the model raised an exception",
                              path_to(*expanding) if expanding else None,
                              "".join(traceback.format_exception(exc)).rstrip())
            try:   # what the states generated before it violate is found first
                flush()
            except _Stop as stop:
                error = stop.violation
            except Exception:   # noqa: BLE001 -- the model error is reported
                pass
            violations.append(error)
        finally:
            budget.close()

    seconds = time.perf_counter() - t0
    depth += bool(levels.open_size)  # a level cut short by a violation
    fired = dict(cov)
    kinds = list(getattr(model, "action_kinds", lambda: ())())
    stats = search_stats(generated, len(visited) - overcount, depth, seconds, rss0, packed)
    memory = {"visited_bytes": visited.nbytes, "tree_bytes": levels.nbytes,
              "on_disk": budget.spilled}
    return Outcome(
        model=model.name, explorer="bfs", stats=stats,
        coverage=action_coverage(fired, dict(dcov), kinds),
        never_enabled=tuple(k for k in kinds if k not in fired),
        checked=checks.checked, unchecked=checks.unchecked,
        not_applicable=checks.not_applicable,
        violations=tuple(violations), edges=edge_coverage(machines, edges_taken),
        interrupted=interrupted, complete=complete,
        extra={"memory": memory,
               **(report_note(reducer, reducer.reduced_states) if reducer else {}),
               **({"workers": {"processes": options.workers, "levels": parallel_levels}}
                  if parallel else {})})
