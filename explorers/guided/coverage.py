"""How much of the model real runs have been seen to do (issue 58 items 1 and 2).

A model with observations names the *coverage classes* of its transitions (``coverage(s, a, t)``,
the observations capability: for Kafka the action with the branch of Kafka's handler it takes,
``model/kafka/capabilities/coverage.py``; by default the action's name). Two sides:

* **reached by the model** (``reach``): a breadth-first search of the config's model with the
  release's preset, every edge's classes kept with the first (so shortest) path to it, as
  indices of successors (``path``: replayed from an initial state, in ``successors`` order). It
  is exhaustive when it ends; a config too large for that is searched to ``max_states`` and says
  so, then walks seeded random walks for the classes deeper than it went (a path found by a
  walk is not the shortest). The actions the run's observations never take (``Observations.skipped``: Kafka's readers'
  ``Fetch``) are left out: no run can witness them. Results are cached per model source, config
  and bound (``cache_dir``);
* **witnessed on real Kafka** (``witnessed``): every run folder that conforms, the classes its
  behaviour takes (the behaviour ``real conform`` wrote, ``behaviour.itf.json``, replayed;
  validated again when there is none). The classes of a behaviour's silent steps (a log append,
  a client's send) are inferred, not seen: the validator placed them where the run needs them.

``report`` puts them together per release: reached, witnessed (with how many runs), never
witnessed (with the length of the shortest path), and witnessed beyond what the model search
reached (a run whose budgets were raised by its killed brokers, or a bounded search). The state
machines' edges (``Model.machines``) are counted the same way, for the picture (``dot``).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from kafka_mc.model.core import fingerprint
from kafka_mc.model.observations import observations_of

MAX_STATES = 100_000
WALKS = 2_000          # random walks after a bounded search, for the classes it did not reach
WALK_DEPTH = 400
CACHE_VERSION = 2


@dataclass(frozen=True)
class Reach:
    """The classes the model reaches: class -> its shortest path (``path``), the machines'
    edges reached, and how far the search went."""

    classes: Mapping[str, tuple[int, ...]]
    edges: Mapping[str, frozenset]
    states: int
    transitions: int
    depth: int
    exhaustive: bool
    seconds: float
    walks: int = 0          # random walks after the bounded search (none when exhaustive)
    cached: bool = False

    def to_json(self) -> dict:
        return {"version": CACHE_VERSION, "classes": {c: list(p) for c, p in self.classes.items()},
                "edges": {m: sorted(map(list, e)) for m, e in self.edges.items()},
                "states": self.states, "transitions": self.transitions, "depth": self.depth,
                "exhaustive": self.exhaustive, "seconds": round(self.seconds, 2),
                "walks": self.walks}

    @classmethod
    def from_json(cls, d: Mapping) -> "Reach":
        return cls({c: tuple(p) for c, p in d["classes"].items()},
                   {m: frozenset(tuple(x) for x in e) for m, e in d["edges"].items()},
                   d["states"], d["transitions"], d["depth"], d["exhaustive"], d["seconds"],
                   d.get("walks", 0), cached=True)


def unwitnessable(model) -> frozenset:
    """The actions no run can witness: those its observations skip."""
    return frozenset(observations_of(model, []).skipped)


def step_classes(model, s, a, t) -> tuple[str, ...]:
    return tuple(model.coverage(s, a, t))


class Allowed(NamedTuple):
    """The steps a search may take (``test(action)``), named for the cache (``key``): a
    directed run's harness drives only some."""

    key: str
    test: Callable[[tuple], bool]


def reach(model, max_states: int = MAX_STATES, walks: int = WALKS, seed: int = 0,
          max_depth: int = WALK_DEPTH, allowed: Allowed | None = None) -> Reach:
    """The breadth-first search of the module's docstring, then (when it was cut) ``walks``
    seeded random walks. With ``allowed`` only the steps it allows are taken: the classes
    reachable by them alone."""
    started = time.perf_counter()
    skip = unwitnessable(model)
    if allowed is not None:
        model = _Only(model, allowed)
    view, successors, bounded = model.view, model.successors, model.within_bounds
    machines = model.machines()
    parents: dict[int, tuple] = {}        # fingerprint -> (parent's, successor index)
    frontier = []
    for i, s in enumerate(model.init_states()):
        k = fingerprint(view(s))
        if k not in parents:
            parents[k] = (None, i)
            frontier.append((s, k))
    first: dict[str, tuple[int, int]] = {}   # class -> (fingerprint of the source, index)
    edges = {m.name: set() for m in machines}
    transitions = depth = 0
    while frontier and len(parents) < max_states:
        depth += 1
        nxt = []
        for s, k in frontier:
            if not bounded(s):
                continue
            for j, (a, t) in enumerate(successors(s)):
                if a is _SKIPPED:
                    continue
                transitions += 1
                if a[0] not in skip:
                    for c in model.coverage(s, a, t):
                        if c not in first:
                            first[c] = (k, j)
                    for m in machines:
                        edges[m.name].update(m.taken(s, a, t))
                kt = fingerprint(view(t))
                if kt not in parents:
                    parents[kt] = (k, j)
                    nxt.append((t, kt))
        frontier = nxt
    classes = {c: _path(parents, k) + (j,) for c, (k, j) in first.items()}
    exhaustive = not frontier
    if not exhaustive and walks:
        transitions += _walks(model, classes, edges, skip, walks, seed, max_depth)
    return Reach(dict(sorted(classes.items())), {m: frozenset(e) for m, e in edges.items()},
                 len(parents), transitions, depth, exhaustive, time.perf_counter() - started,
                 walks=0 if exhaustive else walks)


class _Only:
    """``model`` whose successors are only those ``allowed``, each with its index in the
    model's own successors (so a path of indices walks the model itself)."""

    def __init__(self, model, allowed: Allowed):
        self.model, self.allowed = model, allowed
        self.view, self.within_bounds = model.view, model.within_bounds
        self.init_states, self.machines, self.coverage = \
            model.init_states, model.machines, model.coverage

    def successors(self, s) -> list:
        test = self.allowed.test
        return [(a, t) if test(a) else (_SKIPPED, None) for a, t in self.model.successors(s)]


_SKIPPED = ("(not allowed)",)


def _walks(model, classes: dict, edges: dict, skip, walks: int, seed: int,
           max_depth: int) -> int:
    """Seeded random walks from the initial states (each step uniform among the enabled
    ones, to a state with none or ``max_depth`` steps): the classes the bounded search did
    not reach, each with the walk's path to it. Returns the transitions looked at."""
    import random
    rng = random.Random(seed)
    inits = list(model.init_states())
    machines = model.machines()
    transitions = 0
    for _ in range(walks):
        i = rng.randrange(len(inits))
        s, path = inits[i], [i]
        for _ in range(max_depth):
            if not model.within_bounds(s):
                break
            succ = model.successors(s)
            taken = [j for j, (a, _) in enumerate(succ) if a is not _SKIPPED]
            if not taken:
                break
            for j, (a, t) in enumerate(succ):
                if a is _SKIPPED:
                    continue
                transitions += 1
                if a[0] in skip:
                    continue
                for c in model.coverage(s, a, t):
                    if c not in classes:
                        classes[c] = tuple(path) + (j,)
                for m in machines:
                    edges[m.name].update(m.taken(s, a, t))
            j = taken[rng.randrange(len(taken))]
            path.append(j)
            s = succ[j][1]
    return transitions


def _path(parents: Mapping[int, tuple], k: int) -> tuple[int, ...]:
    """(initial state's index, successor indices ...) to the state of fingerprint ``k``."""
    out = []
    while True:
        parent, j = parents[k]
        out.append(j)
        if parent is None:
            return tuple(reversed(out))
        k = parent


def walk(model, path: Iterable[int]) -> tuple[tuple, tuple]:
    """The states and actions of a ``Reach`` path (initial state's index, successor indices)."""
    path = tuple(path)
    s = list(model.init_states())[path[0]]
    states, actions = [s], []
    for j in path[1:]:
        a, s = model.successors(s)[j]
        states.append(s)
        actions.append(a)
    return tuple(states), tuple(actions)


# --- the cache -----------------------------------------------------------------------------

def cache_dir() -> Path:
    """``$KAFKA_MC_COVERAGE_CACHE``, else the user's cache folder's ``kafka-mc/coverage``."""
    if os.environ.get("KAFKA_MC_COVERAGE_CACHE"):
        return Path(os.environ["KAFKA_MC_COVERAGE_CACHE"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "kafka-mc" / "coverage"


def _source_digest(model) -> str:
    """A digest of the model's package source (a change to any rule moves the classes)."""
    import importlib
    root = Path(importlib.import_module(type(model).__module__).__file__).parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cached_reach(model, cfg, max_states: int = MAX_STATES, log=None, walks: int = WALKS,
                 allowed: Allowed | None = None) -> Reach:
    """``reach`` from the cache when it holds this model source, config and bounds; else
    computed and cached (written atomically; a cache that cannot be written is skipped)."""
    key = hashlib.sha256(json.dumps([CACHE_VERSION, model.name, _source_digest(model),
                                     cfg.to_dict(), max_states, walks,
                                     allowed.key if allowed is not None else None],
                                    sort_keys=True,
                                    default=str).encode()).hexdigest()[:24]
    path = cache_dir() / f"{key}.json"
    try:
        return Reach.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if log is not None:
        log(f"  the model's classes on this config (a search to {max_states:,} states) ...")
    r = reach(model, max_states, walks, allowed=allowed)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(r.to_json()))
        os.replace(tmp, path)
    except OSError:
        pass
    return r


# --- what the runs witnessed ----------------------------------------------------------------

@dataclass(frozen=True)
class RunClasses:
    """One run folder: its release, seed, verdict and (conforming) the classes and machine
    edges its behaviour takes; ``source``: where the behaviour came from."""

    folder: str
    version: str
    seed: Any
    verdict: str
    classes: frozenset = frozenset()
    edges: Mapping[str, frozenset] = field(default_factory=dict)
    source: str = ""


def behaviour_classes(model, states, actions, skip=frozenset()) -> tuple[frozenset, dict]:
    classes, edges = set(), {m.name: set() for m in model.machines()}
    for s, a, t in zip(states, actions, states[1:]):
        if a[0] in skip:
            continue
        classes.update(model.coverage(s, a, t))
        for m in model.machines():
            edges[m.name].update(m.taken(s, a, t))
    return frozenset(classes), {m: frozenset(e) for m, e in edges.items()}


def run_classes(folder: Path, release, cfg, max_nodes: int | None = None) -> RunClasses:
    """The classes of the run folder's behaviour: ``behaviour.itf.json`` replayed when ``real
    conform`` left one (and ``conformance.json`` says it conforms), else the run validated
    (again: a run that did not conform then may now, the model fixed)."""
    from kafka_mc.explorers.guided import runs
    from kafka_mc.traces import replay as replays
    from kafka_mc.traces import trace as traces

    seed = _seed(folder)
    verdict_file, behaviour = folder / "conformance.json", folder / "behaviour.itf.json"
    if verdict_file.is_file():
        try:
            recorded = json.loads(verdict_file.read_text()).get("verdict")
        except (OSError, ValueError, AttributeError):
            recorded = None
        # a run that did not conform is validated again (the model may have been fixed since)
        if recorded == "conforms" and behaviour.is_file():
            try:
                model, states, actions = replays.execute(traces.read(behaviour))
                classes, edges = behaviour_classes(model, states, actions, unwitnessable(model))
                return RunClasses(str(folder), release.version, seed, "conforms", classes,
                                  edges, "behaviour.itf.json")
            except (traces.TraceError, ValueError):
                pass     # written by another model: validated again below
    c, model, _, _ = runs.validate_folder(cfg, release, folder, max_nodes)
    if not c.conforms:
        return RunClasses(str(folder), release.version, seed, c.verdict, source="validated")
    classes, edges = behaviour_classes(model, c.states, c.actions, unwitnessable(model))
    return RunClasses(str(folder), release.version, seed, "conforms", classes, edges,
                      "validated")


def _seed(folder: Path):
    try:
        return json.loads((folder / "run.json").read_text()).get("seed")
    except (OSError, ValueError, AttributeError):
        return None


# --- the report -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ReleaseCoverage:
    """One release's coverage: the model's reach and the runs'."""

    version: str
    preset: str
    reach: Reach
    runs: tuple[RunClasses, ...]
    paths: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # formatted actions

    @property
    def conforming(self) -> tuple[RunClasses, ...]:
        return tuple(r for r in self.runs if r.verdict == "conforms")

    def counts(self) -> dict[str, int]:
        """class -> how many conforming runs took it."""
        out: dict[str, int] = {}
        for r in self.conforming:
            for c in r.classes:
                out[c] = out.get(c, 0) + 1
        return out

    def witnessed(self) -> list[str]:
        counts = self.counts()
        return [c for c in self.reach.classes if counts.get(c)]

    def never(self) -> list[str]:
        counts = self.counts()
        return [c for c in self.reach.classes if not counts.get(c)]

    def beyond(self) -> list[str]:
        return sorted(set(self.counts()) - set(self.reach.classes))

    def ratio(self) -> float:
        return len(self.witnessed()) / len(self.reach.classes) if self.reach.classes else 0.0

    def edges(self) -> dict[str, dict[str, list]]:
        """machine -> {"witnessed", "reached", "table"} edges."""
        out = {}
        for m, reached in self.reach.edges.items():
            seen = set().union(*(r.edges.get(m, frozenset()) for r in self.conforming))
            out[m] = {"witnessed": sorted(seen), "reached": sorted(reached)}
        return out

    def to_dict(self) -> dict:
        counts = self.counts()
        r = self.reach
        return {"version": self.version, "preset": self.preset, "runs": len(self.runs),
                "conforming": len(self.conforming),
                "not_conforming": {v: sum(x.verdict == v for x in self.runs)
                                   for v in sorted({x.verdict for x in self.runs} - {"conforms"})},
                "model": {"classes": len(r.classes), "states": r.states,
                          "transitions": r.transitions, "depth": r.depth,
                          "exhaustive": r.exhaustive, "walks": r.walks},
                "witnessed": len(self.witnessed()), "coverage": round(self.ratio(), 4),
                "classes": [{"class": c, "runs": counts.get(c, 0),
                             "path_steps": len(p) - 1, "shortest": len(p) - 1 <= r.depth,
                             **({"path": list(self.paths[c])} if c in self.paths else {})}
                            for c, p in r.classes.items()],
                "beyond_the_model_search": [{"class": c, "runs": counts[c]}
                                            for c in self.beyond()],
                "machines": self.edges()}


def table(cov: ReleaseCoverage, config: str) -> list[str]:
    """The readable table of one release's coverage."""
    r = cov.reach
    counts = cov.counts()
    bad = len(cov.runs) - len(cov.conforming)
    how = (f"exhaustive, {r.states:,} states" if r.exhaustive
           else f"a search bounded at {r.states:,} states (depth {r.depth}), then {r.walks:,} "
                "random walks")
    lines = [f"Kafka {cov.version} (preset {cov.preset}), {config}: {len(cov.runs)} runs, "
             f"{len(cov.conforming)} conforming" + (f" ({bad} not: left out)" if bad else ""),
             f"  classes reached by the model: {len(r.classes)} ({how}); witnessed: "
             f"{len(cov.witnessed())} ({cov.ratio():.0%}); never witnessed: {len(cov.never())}"]
    width = max((len(c) for c in r.classes), default=10)
    width = min(width, 90)
    lines.append(f"  {'class':<{width}} {'runs':>5}  shortest model path")
    for c, p in sorted(r.classes.items(), key=lambda kv: (-counts.get(kv[0], 0), kv[0])):
        n = counts.get(c, 0)
        tail = "" if n else f"{len(p) - 1} steps" + ("" if len(p) - 1 <= r.depth else " (a walk)")
        lines.append(f"  {c[:width]:<{width}} {n if n else '-':>5}  {tail}".rstrip())
    for c in cov.beyond():
        lines.append(f"  {c[:width]:<{width}} {counts[c]:>5}  (beyond the model search)")
    for m, e in cov.edges().items():
        lines.append(f"  {m}: {len(set(map(tuple, e['witnessed'])) & set(map(tuple, e['reached'])))}"
                     f" of the {len(e['reached'])} edges the model takes witnessed")
    return lines


def dot(cov: ReleaseCoverage) -> str:
    """The model's state machines as DOT: an edge real runs were seen to take solid, one only
    the model takes dashed."""
    out = ["digraph coverage {", "  rankdir=LR; node [shape=box, fontname=Helvetica];",
           f'  label="Kafka {cov.version} (preset {cov.preset}): solid = witnessed on real '
           'Kafka, dashed = reached by the model only"; labelloc=t;']
    for i, (m, e) in enumerate(cov.edges().items()):
        seen = set(map(tuple, e["witnessed"]))
        pairs = sorted(set(map(tuple, e["reached"])) | seen)
        out.append(f'  subgraph cluster_{i} {{ label="{m}";')
        for x in sorted({x for pair in pairs for x in pair}):
            out.append(f'    "{m}:{x}" [label="{x}"];')
        for a, b in pairs:
            style = "solid" if (a, b) in seen else "dashed"
            out.append(f'    "{m}:{a}" -> "{m}:{b}" [style={style}];')
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"
