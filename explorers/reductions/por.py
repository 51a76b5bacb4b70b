"""Partial-order reduction for safety checking: stubborn sets from the model's footprints.

The model declares, through ``kafka_mc.model.core`` only, the groups of actions that can still occur
(``footprints(s)``: group -> ``Footprint(reads, writes)``), which group an action belongs to
(``group(a)``) and the view states are deduplicated on (``reduction_view``). Two groups are
dependent when one writes a location the other reads or writes (``kafka_mc.model.core.dependent``).

In a state ``s`` the reduced set is the enabled part of a stubborn set ``T`` of groups, grown from
one enabled seed group (Valmari's conditions, computed on groups):

* an enabled group in ``T`` brings every group dependent on it, enabled or not;
* a disabled group in ``T`` brings a necessary enabling set: every group writing a location of
  its guard (``Footprint.guard``, else its reads: its actions stay disabled until one changes);
* visibility: a ``T`` with an enabled group writing a location a checked ``always``,
  ``transition`` or ``sometimes`` property reads (``Property.reads``; None: everything) is
  rejected, so a reduced set never contains a visible action; without a seed giving a smaller
  invisible set the state is expanded fully.

The enabled part of such a ``T`` is persistent (no sequence of actions outside it can reach an
action dependent on it), and it is empty only if no action is enabled, so deadlocks (and with them
``terminal`` properties) are exactly those of the full search. The cycle (ignoring) proviso is
the explorer's: the BFS expands a state fully when one of its reduced successors is on the current
or an earlier level, so every cycle of the reduced graph has a fully expanded state (C3). With
C0-C3 every sequence of visible steps of the full graph is one of the reduced graph (stuttering
equivalence for the checked properties): invariants, transition properties and witnesses keep
their verdicts. A state constraint (``within_bounds``) is read by the search, so a bounded model
is never reduced; a depth bound is not preserved (reduced paths may be longer). Under symmetry
reduction the keys are those of the canonicalised reduction view (``kafka_mc.model.canonical.with_symmetry``):
the stubborn set is the concrete kept state's, the proviso is the quotient's.

``self_check`` samples states and confirms the declaration: declared-independent enabled actions
commute and neither enables nor disables the other, a step changes only locations it declares it
writes, a group's enabled actions do not change under a step writing nothing it reads, and every
group is in ``footprints_anywhere`` (when the model says it) writing no more than it says there.
When the checked properties read something every group of ``footprints_anywhere`` writes, no
stubborn set is computed (each would be the full set).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

from kafka_mc.model.capabilities import offers
from kafka_mc.model.core import Expectation, Model, ModelBase, dependent, fingerprint
from kafka_mc.explorers.core.adapter import key_function, successors_of


def supports_reduction(model: Model) -> bool:
    """Whether the model offers the reduction capability (otherwise a reduced search is the full
    one: every action is dependent on every other)."""
    return offers(model, "reduction")


def reduction_key(model: Model) -> Callable:
    """state -> fingerprint of its ``reduction_view`` (what a reduced search deduplicates on)."""
    if model.packed:
        return key_function(model)
    view = model.reduction_view
    remembered = model.reduction_fingerprint   # (model.canonical.remembered)
    if remembered is not None:
        return remembered
    return lambda s: fingerprint(view(s))


class _Derived:
    """What a reducer derives from one footprint table, group by group as the closures ask:
    the groups dependent on it and its necessary enabling set."""

    def __init__(self, table):
        self.table, self.groups = table, list(table)   # (kept alive: its id is the cache key)
        self._dep: dict = {}
        self._nes: dict = {}
        self.chosen: dict = {}   # frozenset of (enabled group, its action count) -> the best T

    def dep(self, g) -> list:
        r = self._dep.get(g)
        if r is None:
            f, table = self.table[g], self.table
            r = self._dep[g] = [h for h in self.groups if h != g and dependent(f, table[h])]
        return r

    def nes(self, g) -> list:
        r = self._nes.get(g)
        if r is None:
            f, table = self.table[g], self.table
            guard = f.reads if f.guard is None else f.guard
            r = self._nes[g] = [h for h in self.groups
                                if h != g and not table[h].writes.isdisjoint(guard)]
        return r


class Reducer:
    """The reduced successor function of ``model`` for the properties ``checks`` checks."""

    def __init__(self, model: Model, checks):
        self.model = model
        self.group = model.group
        self.all_successors = successors_of(model)
        self.footprints = model.footprints
        props = [p for p, _ in checks.always + checks.transition + checks.sometimes]
        reads = [p.reads for p in props]
        self.reads_all = any(r is None for r in reads)
        self.reads = frozenset().union(*[r for r in reads if r is not None])
        within = getattr(model, "within_bounds", None)
        self.bounded = getattr(within, "__func__", None) not in (None, ModelBase.within_bounds)
        self.enabled = supports_reduction(model) and not self.reads_all and not self.bounded
        anywhere = model.footprints_anywhere() if self.enabled else None
        # every group visible wherever it occurs: no stubborn set can leave one out, so skip them
        # (this only ever turns the reduction off: a wrong bound costs reductions, not verdicts)
        self.all_visible = anywhere is not None and all(
            not f.writes.isdisjoint(self.reads) for f in anywhere.values())
        self.enabled = self.enabled and not self.all_visible
        self._cache: dict[int, _Derived] = {}
        self._visible: dict = {}    # Footprint -> whether it writes what a property reads
        self.reduced_states = 0   # states expanded with a proper subset of their actions

    def _derive(self, table) -> _Derived:
        d = self._cache.get(id(table))
        if d is None or d.table is not table:
            if len(self._cache) > 100_000:
                self._cache.clear()
            d = self._cache[id(table)] = _Derived(table)
        return d

    def _is_visible(self, f) -> bool:
        v = self._visible.get(f)
        if v is None:
            v = self._visible[f] = not f.writes.isdisjoint(self.reads)
        return v

    def reduce_successors(self, s) -> tuple[list, bool]:
        """(the reduced successors ``[(action, state)]`` in the model's order, whether they are
        all of them). The full successors are computed (the model's fused function is the
        fastest way to enumerate the enabled actions) and the stubborn set picks among them."""
        out, kept = self.reduced_positions(s)
        if kept is None:
            return out, True
        return [out[i] for i in kept], False

    def reduced_positions(self, s) -> tuple[list, list | None]:
        """(every successor ``[(action, state)]`` in the model's order, the positions in it of
        the reduced set's; None: the full set). Positions are what a path is replayed by
        (``kafka_mc.explorers.core.adapter.follow``), whatever part of the successors a search took."""
        out = self._last = self.all_successors(s)
        if not self.enabled or len(out) < 2:
            return out, None
        table = self.footprints(s)
        if table is None:
            return out, None
        group = self.group
        groups = [group(a) for a, _ in out]
        by_group: dict[Hashable, int] = {}
        for g in groups:
            by_group[g] = by_group.get(g, 0) + 1
        visible = self._is_visible
        seeds = [g for g in by_group if not visible(table[g])]
        if not seeds:
            return out, None
        d = self._derive(table)
        state_key = frozenset(by_group.items())
        if state_key in d.chosen:
            best = d.chosen[state_key]
        else:
            best = d.chosen[state_key] = self._choose(table, d, by_group, seeds, len(out))
        if best is None:
            return out, None
        return out, [i for i, g in enumerate(groups) if g in best]

    def _choose(self, table, d, by_group, seeds, best_n):
        """The stubborn set of groups with the fewest enabled actions grown from an invisible
        seed, with no enabled visible group and fewer than ``best_n`` actions; None: none."""
        visible = self._is_visible
        best = None
        # (ties broken by the group's repr: the choice depends on the enabled groups only)
        for seed in sorted(seeds, key=lambda g: (by_group[g], repr(g))):
            if by_group[seed] >= best_n:
                break
            stubborn = {seed}
            work = [seed]
            n = 0
            ok = True
            while work:
                x = work.pop()
                k = by_group.get(x, 0)
                if k:
                    if visible(table[x]):
                        ok = False
                        break
                    n += k
                    if n >= best_n:
                        ok = False
                        break
                    more = d.dep(x)
                else:
                    more = d.nes(x)
                for y in more:
                    if y not in stubborn:
                        stubborn.add(y)
                        work.append(y)
            if ok:
                best, best_n = stubborn, n
        return best and frozenset(best)

    def reduce(self, s) -> tuple[list, bool]:
        """(the actions of the reduced set in the model's order, whether it is every enabled one)."""
        out, full = self.reduce_successors(s)
        return [a for a, _ in out], full

    def successors(self, s, old: Callable[[object], bool] | None = None,
                   key: Callable | None = None) -> list:
        """The reduced successors ``[(action, state)]``; with ``old`` (fingerprint -> whether it
        is on the current or an earlier level) and ``key``, the BFS proviso: the full set when a
        reduced successor is old."""
        out, full = self.reduce_successors(s)
        if full:
            return out
        if old is not None and any(old(key(t)) for _, t in out):
            return self._last
        self.reduced_states += 1
        return out


# --- the independence self-check ----------------------------------------------------------------

@dataclass(frozen=True)
class Breach:
    """One way a state contradicts the model's footprint declaration."""

    kind: str        # "commute", "disable", "enable", "writes", "reads", "group", "anywhere"
    state: object
    actions: tuple
    detail: str = ""


def sample_states(model: Model, n: int, seed: int = 0, depth: int = 60) -> list:
    """``n`` states from seeded random walks (each from a random initial state)."""
    rng = random.Random(seed)
    inits = list(model.init_states())
    out = []
    while len(out) < n:
        s = rng.choice(inits)
        for _ in range(depth):
            out.append(s)
            acts = model.actions(s)
            if not acts or len(out) >= n:
                break
            s = model.step(s, rng.choice(acts))
    return out


def self_check(model: Model, states: Sequence, max_pairs: int = 200) -> list[Breach]:
    """Check the footprint declaration on ``states``; the breaches found (none: consistent)."""
    key = reduction_key(model)
    group = model.group
    anywhere = model.footprints_anywhere() if supports_reduction(model) else None
    breaches: list[Breach] = []
    for s in states:
        table = model.footprints(s)
        if table is None:
            continue
        acts = model.actions(s)
        by_group: dict = {}
        for a in acts:
            by_group.setdefault(group(a), []).append(a)
        missing = [g for g in by_group if g not in table]
        if missing:
            breaches.append(Breach("group", s, tuple(by_group[missing[0]][:1]),
                                   f"group {missing[0]!r} has no footprint"))
            continue
        for g, f in table.items() if anywhere is not None else ():
            if g not in anywhere or not f.writes <= anywhere[g].writes:
                breaches.append(Breach("anywhere", s, (), f"group {g!r} writes more than "
                                       "footprints_anywhere says" if g in anywhere else
                                       f"group {g!r} is not in footprints_anywhere"))
        after = {a: model.step(s, a) for a in acts}
        for a, t in after.items():
            g = group(a)
            for loc in _changed(model, s, t, table):
                if loc not in table[g].writes:
                    breaches.append(Breach("writes", s, (a,), f"changes {loc!r}"))
            # a group whose reads a step leaves alone keeps exactly its enabled actions
            t_acts = model.actions(t)
            t_by: dict = {}
            for b in t_acts:
                t_by.setdefault(group(b), []).append(b)
            t_table = model.footprints(t)
            for h, f in table.items():
                if h == g or not table[g].writes.isdisjoint(f.reads if f.guard is None else f.guard):
                    continue
                if sorted(map(repr, by_group.get(h, []))) != sorted(map(repr, t_by.get(h, []))):
                    breaches.append(Breach("reads", s, (a,),
                                           f"changes which actions of {h!r} are enabled"))
            if t_table is not None:
                extra = [h for h in t_table if h not in table]
                if extra:
                    breaches.append(Breach("group", s, (a,), f"group {extra[0]!r} appears"))
        pairs = 0
        for i, a in enumerate(acts):
            for b in acts[i + 1:]:
                ga, gb = group(a), group(b)
                if ga == gb or dependent(table[ga], table[gb]):
                    continue
                pairs += 1
                if pairs > max_pairs:
                    break
                sa, sb = after[a], after[b]
                if b not in model.actions(sa):
                    breaches.append(Breach("disable", s, (a, b), f"{a[0]} disables {b[0]}"))
                    continue
                if a not in model.actions(sb):
                    breaches.append(Breach("disable", s, (b, a), f"{b[0]} disables {a[0]}"))
                    continue
                if key(model.step(sa, b)) != key(model.step(sb, a)):
                    breaches.append(Breach("commute", s, (a, b),
                                           f"{a[0]} and {b[0]} do not commute"))
    return breaches


def _changed(model, s, t, table) -> list:
    locs = set()
    for f in table.values():
        locs |= f.reads | f.writes
    out = []
    for loc in locs:
        x, y = model.location(s, loc), model.location(t, loc)
        if x is None and y is None:
            continue
        if x != y:
            out.append(loc)
    return out


def report_note(reducer: Reducer, reduced_states: int) -> dict:
    """What a report says about a reduced search (the BFS's and Spark's)."""
    return {"reduction": {"partial_order": True, "active": reducer.enabled,
                          "every_action_visible": reducer.all_visible,
                          "reduced_states": reduced_states}}


def properties_read(checks) -> str:
    """A short note for reports: which checked properties make every action visible."""
    names = [p.name for p, _ in checks.always + checks.transition + checks.sometimes
             if p.reads is None]
    return ", ".join(names)


__all__ = ["Reducer", "reduction_key", "report_note", "supports_reduction", "self_check",
           "sample_states", "Breach", "Expectation"]
