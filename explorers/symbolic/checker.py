"""The symbolic explorer: bounded model checking and k-induction with z3 over a model's
``SymbolicSystem`` (``kafka_mc.model.core``, docs/design.md section 8). It knows no model: the variables,
actions and claims are the model's.

* ``bmc(system, depth)``: is a property violated within ``depth`` steps of a start state? Start
  states are those meeting the model's ``reachable`` claim and every state property (a run may
  start near epoch exhaustion), or with ``start="init"`` the initial states only.
* ``prove(system, max_k)``: k-induction for k = 1 .. max_k over the properties together with the
  model's auxiliary invariants and ``reachable``: the base case is BMC from the initial states to
  depth k - 1, the step case asks for k consecutive states where every claim holds followed by a
  step breaking one. Verdicts: ``proved`` (at k, with the auxiliary invariants used),
  ``counterexample`` (a path from an initial state) or ``unknown`` (the step case still fails at
  max_k: the counterexample to induction, a path whose first state may be unreachable).
* ``admitted(system, steps)``: which concrete steps (values of the variables before and after,
  and the action) the relation does not admit (the refinement tests).

Traces (a counterexample or a CTI) are ITF files whose states are the symbolic variables' values
(signed integers for bit-vectors, as the model's values); ``kafka-mc replay`` / ``render`` refuse
them (they are not states of the explicit model). Exit codes: 0 proved (or BMC found nothing), 12
counterexample, 14 unknown.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import z3

from kafka_mc.model.capabilities import require
from kafka_mc.model.symbolic import SymbolicAction, SymbolicClaim, SymbolicSystem
from kafka_mc.explorers.core import interrupts

EXIT_PROVED, EXIT_COUNTEREXAMPLE, EXIT_UNKNOWN = 0, 12, 14


def sort_of(name: str):
    if name == "bool":
        return z3.BoolSort()
    if name.startswith("bv") and name[2:].isdigit():
        return z3.BitVecSort(int(name[2:]))
    raise ValueError(f"unknown symbolic sort {name!r}")


def value_term(sort: str, value):
    if sort == "bool":
        return z3.BoolVal(bool(value))
    return z3.BitVecVal(int(value), int(sort[2:]))


def python_value(sort: str, term) -> Any:
    if sort == "bool":
        return z3.is_true(term)
    return term.as_signed_long()


@dataclass
class Step:
    """One step of a path: the action taken and its parameters' values."""
    action: str
    params: dict


@dataclass
class Path:
    states: list[dict]
    steps: list[Step]


@dataclass
class Verdict:
    verdict: str                 # proved, counterexample, unknown, bounded (BMC found nothing)
    depth: int                   # k of the proof / length of the path / BMC bound
    claim_name: str = ""         # the violated claim
    claim: str = ""
    path: Path | None = None
    auxiliary: tuple[str, ...] = ()
    timings: list[tuple[int, float]] = field(default_factory=list)   # (k or depth, seconds)

    @property
    def exit_code(self) -> int:
        return {"counterexample": EXIT_COUNTEREXAMPLE, "unknown": EXIT_UNKNOWN}.get(
            self.verdict, EXIT_PROVED)


class Unroller:
    """The system's variables at each step and the transition between consecutive steps."""

    def __init__(self, system: SymbolicSystem):
        self.system = system
        self.sorts = dict(system.variables)
        self.states: list[dict] = []
        self.selectors: list = []
        self.params: list[list[dict]] = []

    def state(self, i: int) -> dict:
        while len(self.states) <= i:
            n = len(self.states)
            self.states.append({v: z3.Const(f"{v}@{n}", sort_of(s)) for v, s in self.sorts.items()})
        return self.states[i]

    def _params(self, i: int, j: int, a: SymbolicAction) -> dict:
        p = {n: z3.Const(f"{a.label}.{n}@{i}", sort_of(s)) for n, s in a.params}
        return {**p, **dict(a.args)}

    def transition(self, i: int):
        """Step i -> i + 1: one action, chosen by ``action@i``."""
        v, w = self.state(i), self.state(i + 1)
        sel = z3.BitVec(f"action@{i}", 16)
        ps = [self._params(i, j, a) for j, a in enumerate(self.system.actions)]
        self.selectors.append(sel)
        self.params.append(ps)
        return z3.And(z3.ULT(sel, len(self.system.actions)), *[
            z3.Implies(sel == j, a.relation(v, ps[j], w))
            for j, a in enumerate(self.system.actions)])

    def only(self, i: int, j: int):
        """Step i -> i + 1 by action j alone (its relation, with the selector fixed)."""
        a = self.system.actions[j]
        while len(self.selectors) <= i:
            self.selectors.append(z3.BitVec(f"action@{len(self.selectors)}", 16))
            self.params.append([self._params(len(self.params), jj, aa)
                                for jj, aa in enumerate(self.system.actions)])
        return z3.And(self.selectors[i] == j,
                      a.relation(self.state(i), self.params[i][j], self.state(i + 1)))

    def step_claims_of(self, i: int, j: int, claims) -> list:
        a = self.system.actions[j]
        v, w, p = self.state(i), self.state(i + 1), self.params[i][j]
        return [(c, c.holds(a, v, p, w)) for c in claims if c.kind == "step"]

    def state_claims(self, i: int, claims) -> list:
        return [(c, c.holds(self.state(i))) for c in claims if c.kind == "state"]

    def step_claims(self, i: int, claims) -> list:
        """Each step claim at step i -> i + 1 (needs ``transition(i)`` first)."""
        v, w, sel = self.state(i), self.state(i + 1), self.selectors[i]
        out = []
        for c in claims:
            if c.kind != "step":
                continue
            out.append((c, z3.And(*[z3.Implies(sel == j, c.holds(a, v, self.params[i][j], w))
                                    for j, a in enumerate(self.system.actions)])))
        return out

    def free_terms(self, model, length: int) -> list:
        """The terms a path of ``length`` steps is read from that its constraints may leave
        free: the first state's variables, then each step's action parameters (of the action
        ``model`` selects there)."""
        out = list(self.state(0).values())
        for i in range(length):
            j = model.eval(self.selectors[i], model_completion=True).as_long()
            sorts = dict(self.system.actions[j].params)
            out += [t for n, t in self.params[i][j].items() if n in sorts]
        return out

    def path(self, model, length: int) -> Path:
        states = [{n: python_value(s, model.eval(self.state(i)[n], model_completion=True))
                   for n, s in self.sorts.items()} for i in range(length + 1)]
        steps = []
        for i in range(length):
            j = model.eval(self.selectors[i], model_completion=True).as_long()
            a = self.system.actions[j]
            sorts = dict(a.params)
            params = {n: python_value(sorts[n], model.eval(t, model_completion=True))
                      for n, t in self.params[i][j].items() if n in sorts}
            steps.append(Step(a.label, params))
        return Path(states, steps)


def solver():
    """Everything is bit-vectors and Booleans: z3's QF_BV solver (bit-blasting) is much faster
    than the default on these queries."""
    return z3.SolverFor("QF_BV")


def _smallest(solver, terms, model):
    """The model with each bit-vector term, in order, as near zero as the constraints allow:
    the least of -1, 0, 1, 2, ... (Kafka's "none" is -1) that keeps ``solver`` satisfiable with
    the terms before it fixed, found by bisection. A counterexample then reads as a person would
    write it (producer id 0, epoch 0, or 32767 where exhaustion needs it), not with whatever
    64-bit values z3 happened to pick."""
    for term in terms:
        if not z3.is_bv(term):
            continue
        shifted = term + 1                                   # -1 -> 0, 0 -> 1, ...
        lo, hi = 0, model.eval(shifted, model_completion=True).as_long()
        while lo < hi:
            mid = (lo + hi) // 2
            solver.push()
            solver.add(z3.ULE(shifted, mid))
            if _check(solver) == z3.sat:
                model = solver.model()
                hi = model.eval(shifted, model_completion=True).as_long()
            else:
                lo = mid + 1
            solver.pop()
        solver.add(shifted == hi)
        if _check(solver) != z3.sat:    # (cannot happen: hi was satisfiable)
            raise AssertionError("z3: a value found satisfiable no longer is")
        model = solver.model()
    return model


def _check(solver):
    """``solver.check()``. During a check z3 catches Ctrl-C itself (its ``ctrl_c`` parameter):
    the check stops and answers unknown, and Python never sees the signal; that unknown, read as
    "no model", went on to the next depth (issue 48: Ctrl-C swallowed, the search ran on). It is
    the interrupt: raised again."""
    result = solver.check()
    if result == z3.unknown and solver.reason_unknown() in ("interrupted from keyboard",
                                                            "canceled"):
        interrupts.ask()
        raise KeyboardInterrupt
    return result


def _violated(solver, checks, incremental: bool = False, small=None) -> tuple | None:
    """The first claim in ``checks`` (in their order) that can fail, with a model: (claim,
    model), or None. One query for all of them; only when one can fail, one query per claim in
    order, so which claim is reported does not depend on the model z3 happens to find (that can
    change with the queries a process made before). ``small(model)``: the terms to bring near
    zero in the model returned (``_smallest``)."""
    if not checks:
        return None
    if incremental:
        solver.push()
    solver.add(z3.Or(*[z3.Not(h) for _, h in checks]))
    try:
        if _check(solver) != z3.sat:
            return None
        for claim, holds in checks:
            solver.push()
            solver.add(z3.Not(holds))
            try:
                if _check(solver) == z3.sat:
                    model = solver.model()
                    return claim, _smallest(solver, small(model), model) if small else model
            finally:
                solver.pop()
        raise AssertionError("z3 found a violation of no single claim")
    finally:
        if incremental:
            solver.pop()


def bmc(system: SymbolicSystem, depth: int, start: str = "reachable", claims=None,
        progress=None) -> Verdict:
    """Bounded model checking to ``depth`` steps."""
    claims = system.properties if claims is None else claims
    u, s = Unroller(system), solver()
    v0 = u.state(0)
    if start == "init":
        s.add(system.init(v0))
    else:
        s.add(system.reachable(v0), *[h for _, h in u.state_claims(0, claims)])
    timings = []
    t0 = time.perf_counter()
    found = _violated(s, u.state_claims(0, claims), True,
                      lambda m: u.free_terms(m, 0)) if start == "init" else None
    if found:
        return Verdict("counterexample", 0, found[0].name, found[0].claim, u.path(found[1], 0))
    for k in range(depth):
        s.add(u.transition(k))
        found = _violated(s, u.step_claims(k, claims) + u.state_claims(k + 1, claims), True,
                          lambda m, k=k: u.free_terms(m, k + 1))
        timings.append((k + 1, time.perf_counter() - t0))
        if progress:
            progress(k + 1, timings[-1][1])
        if found:
            return Verdict("counterexample", k + 1, found[0].name, found[0].claim,
                           u.path(found[1], k + 1), timings=timings)
        # the claims hold up to here: assume them on the way to the next depth
        s.add(*[h for _, h in u.step_claims(k, claims) + u.state_claims(k + 1, claims)])
    return Verdict("bounded", depth, timings=timings)


def prove(system: SymbolicSystem, max_k: int = 3, progress=None) -> Verdict:
    """k-induction over the properties, the auxiliary invariants and ``reachable``."""
    reach = SymbolicClaim("reachable", "state", system.reachable,
                          "the model's claim about every reachable state")
    claims = tuple(system.properties) + tuple(system.auxiliary) + (reach,)
    timings = []
    t0 = time.perf_counter()
    cti = None
    for k in range(1, max_k + 1):
        base = bmc(system, k - 1, start="init", claims=claims)
        if base.verdict == "counterexample":
            base.timings = timings
            return base
        u, prefix = Unroller(system), []
        for i in range(k - 1):
            prefix += [h for _, h in u.state_claims(i, claims)]
            prefix.append(u.transition(i))
            prefix += [h for _, h in u.step_claims(i, claims)]
        prefix += [h for _, h in u.state_claims(k - 1, claims)]
        # the last step one action at a time, each query on a fresh solver: many small
        # non-incremental queries (z3 preprocesses them before bit-blasting) are much faster
        # than one with the disjunction of every action
        found = None
        for j in range(len(system.actions)):
            s = solver()
            s.add(*prefix, u.only(k - 1, j))
            found = _violated(s, u.step_claims_of(k - 1, j, claims) + u.state_claims(k, claims),
                              small=lambda m, k=k: u.free_terms(m, k))
            if found:
                break
        timings.append((k, time.perf_counter() - t0))
        if progress:
            progress(k, timings[-1][1])
        if not found:
            return Verdict("proved", k, auxiliary=tuple(c.name for c in system.auxiliary),
                           timings=timings)
        cti = Verdict("unknown", k, found[0].name, found[0].claim, u.path(found[1], k),
                      timings=timings)
    return cti


def admitted(system: SymbolicSystem, steps: Sequence[tuple]) -> list[tuple]:
    """The steps ``(before, (name, args, params), after)`` (variable values, the action by name,
    constant args and parameter values) that the relation does not admit, each with a reason.
    Every formula is ground, so z3 decides it by simplification, in one pass."""
    sorts = dict(system.variables)
    by_key = {(a.name, tuple(sorted(dict(a.args).items()))): a for a in system.actions}
    failures = []
    for before, (name, args, params), after in steps:
        a = by_key.get((name, tuple(sorted(args.items()))))
        if a is None:
            failures.append((before, (name, args, params), after, "no such symbolic action"))
            continue
        v = {n: value_term(sorts[n], x) for n, x in before.items()}
        w = {n: value_term(sorts[n], x) for n, x in after.items()}
        psorts = dict(a.params)
        p = {**{n: value_term(psorts[n], x) for n, x in params.items()}, **dict(a.args)}
        if not z3.is_true(z3.simplify(a.relation(v, p, w))):
            failures.append((before, (name, args, params), after, "not admitted"))
    return failures


# --- traces ----------------------------------------------------------------------------------------

def itf(system: SymbolicSystem, path: Path, meta: Mapping[str, Any]) -> dict:
    """An ITF document of a symbolic path (states: the symbolic variables)."""
    from kafka_mc.traces.itf import encode

    names = [n for n, _ in system.variables]
    states = []
    for i, st in enumerate(path.states):
        smeta = {"index": i}
        if i:
            step = path.steps[i - 1]
            args = ", ".join(f"{k}={v}" for k, v in step.params.items())
            smeta["action"] = f"{step.action}[{args}]" if args else step.action
            smeta["action_value"] = encode((step.action, *[
                (k, v) for k, v in sorted(step.params.items())]))
        states.append({"#meta": smeta, **{n: encode(st[n]) for n in names}})
    return {"#meta": {"format": "ITF", "format-description":
                      "https://apalache-mc.org/docs/adr/015adr-trace.html", **meta},
            "vars": names, "states": states}


def describe(path: Path, limit: int = 40) -> list[str]:
    """A path as text: the first state in full, then each step and what it changed."""
    lines = ["  state 0: " + ", ".join(f"{k}={v}" for k, v in path.states[0].items())]
    for i, step in enumerate(path.steps, 1):
        changed = {k: v for k, v in path.states[i].items() if path.states[i - 1][k] != v}
        args = ", ".join(f"{k}={v}" for k, v in step.params.items())
        lines.append(f"  {i}. {step.action}{f' [{args}]' if args else ''}: "
                     + (", ".join(f"{k}={v}" for k, v in changed.items()) or "(no change)"))
    return lines[:limit]


# --- the command line (kafka-mc check --explorer symbolic) ---------------------------------------------

class SymbolicUsageError(ValueError):
    """The configuration or model does not allow a symbolic check (one line)."""


def select(system: SymbolicSystem, names: Sequence[str] | None) -> SymbolicSystem:
    """The system with only the named properties (None: all)."""
    from dataclasses import replace

    if names is None:
        return system
    known = {c.name: c for c in system.properties}
    missing = [n for n in names if n not in known]
    if missing:
        raise SymbolicUsageError(f"unknown symbolic property {missing[0]!r} "
                                 f"(known: {', '.join(known)})")
    return replace(system, properties=tuple(known[n] for n in dict.fromkeys(names)))


def run(model, cfg, names, depth: int | None, induction: int, out, meta: Mapping[str, Any],
        emit=print) -> int:
    """Check ``model``'s symbolic system: BMC to ``depth`` when given, else k-induction up to
    ``induction``; print the verdict, write a counterexample or CTI as ITF in ``out``; the exit
    code."""
    import json
    from pathlib import Path

    from kafka_mc.traces.files import write_atomically

    try:
        require(model, "symbolic", "--explorer symbolic")
        system = model.symbolic()
    except ValueError as e:   # (MissingCapability is one)
        raise SymbolicUsageError(str(e)) from None
    if system is None:
        raise SymbolicUsageError(f"model {model.name} offers no symbolic system")
    system = select(system, names)
    t0 = time.perf_counter()
    if depth is not None:
        result = bmc(system, depth)
        emit(f"symbolic BMC to depth {depth} from any state meeting the model's reachable-state "
             f"claim ({len(system.variables)} variables, {len(system.actions)} actions)")
    else:
        result = prove(system, induction)
        emit(f"symbolic k-induction, k <= {induction} ({len(system.variables)} variables, "
             f"{len(system.actions)} actions, {len(system.auxiliary)} auxiliary invariants)")
    for k, seconds in result.timings:
        emit(f"  {'depth' if depth is not None else 'k'} {k}: {seconds:.2f} s (z3, cumulative)")
    elapsed = time.perf_counter() - t0
    claims = ", ".join(c.name for c in system.properties)
    if result.verdict == "proved":
        emit(f"proved at k = {result.depth}: {claims}, for every epoch and producer id value "
             f"({elapsed:.1f} s); auxiliary invariants: {', '.join(result.auxiliary)}")
    elif result.verdict == "bounded":
        emit(f"no violation within {depth} steps: {claims} ({elapsed:.1f} s)")
    else:
        what = ("counterexample" if result.verdict == "counterexample"
                else "unknown: induction failed; counterexample to induction")
        emit(f"{what} at depth {result.depth}: {result.claim_name} ({result.claim}) "
             f"({elapsed:.1f} s)")
        emit("\n".join(describe(result.path)))
        suffix = ".itf.json" if result.verdict == "counterexample" else ".cti.itf.json"
        file = Path(out) / f"{result.claim_name}{suffix}"
        doc = itf(system, result.path, {**meta, "property": result.claim_name,
                                        "kind": "safety" if result.verdict == "counterexample"
                                        else "cti", "description": result.claim,
                                        "explorer": "symbolic", "verdict": result.verdict})
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
            write_atomically(file, json.dumps(doc, indent=1, sort_keys=True) + "\n")
            emit(f"trace: {file}")
        except OSError as e:
            emit(f"cannot write the trace {file}: {e.strerror or e}")
    return result.exit_code


# --- tying the symbolic relation to the explicit model ----------------------------------------------------

def explicit_steps(model, system: SymbolicSystem, max_states: int = 200_000):
    """Explore ``model`` breadth-first (through the contract: ``init_states``, ``successors``,
    ``view``) and project every step onto the symbolic variables. Returns (states explored,
    the distinct projected steps that change the projection, as ``admitted`` takes them)."""
    seen, frontier = set(), []
    for s in model.init_states():
        if model.view(s) not in seen:
            seen.add(model.view(s))
            frontier.append(s)
    steps = {}
    while frontier:
        nxt = []
        for s in frontier:
            ps = system.project(s)
            for a, t in model.successors(s):
                pt = system.project(t)
                if ps != pt:
                    act = system.project_action(s, a, t) or (a[0], {}, {})
                    key = (tuple(sorted(ps.items())), repr(act), tuple(sorted(pt.items())))
                    steps.setdefault(key, (ps, act, pt))
                vt = model.view(t)
                if vt not in seen:
                    if len(seen) >= max_states:
                        raise ValueError(f"more than {max_states} states: use a smaller config")
                    seen.add(vt)
                    nxt.append(t)
        frontier = nxt
    return len(seen), list(steps.values())


def explicit_witness(model, system: SymbolicSystem, claim: str, max_states: int = 200_000):
    """The reachability question a counterexample to induction asks, put to the explicit model:
    is there a reachable step (or state) of ``model`` whose projection violates ``claim``? Returns
    (states explored, the first such (state, action, state) in BFS order, or None). None on a
    small configuration suggests a missing auxiliary invariant; a witness, a real violation."""
    c = next(x for x in system.properties + system.auxiliary if x.name == claim)
    sorts = dict(system.variables)
    by_key = {(a.name, tuple(sorted(dict(a.args).items()))): a for a in system.actions}

    def terms(values):
        return {n: value_term(sorts[n], x) for n, x in values.items()}

    seen, frontier = set(), list(model.init_states())
    seen.update(map(model.view, frontier))
    while frontier:
        nxt = []
        for s in frontier:
            ps = system.project(s)
            if c.kind == "state" and not z3.is_true(z3.simplify(c.holds(terms(ps)))):
                return len(seen), (s, None, None)
            for a, t in model.successors(s):
                if c.kind == "step":
                    act = system.project_action(s, a, t)
                    sym = by_key.get((act[0], tuple(sorted(act[1].items())))) if act else None
                    if sym is not None:
                        psorts = dict(sym.params)
                        p = {**{n: value_term(psorts[n], x) for n, x in act[2].items()},
                             **dict(sym.args)}
                        if not z3.is_true(z3.simplify(c.holds(sym, terms(ps), p,
                                                               terms(system.project(t))))):
                            return len(seen), (s, a, t)
                vt = model.view(t)
                if vt not in seen and len(seen) < max_states:
                    seen.add(vt)
                    nxt.append(t)
        frontier = nxt
    return len(seen), None
