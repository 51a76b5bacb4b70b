"""Swarm simulation: random walks, each under its own random restriction of the model (swarm
testing, Groce et al., ISSTA 2012), biased toward the rare orders that matter.

Each walk has a seed of its own, ``walk_seed(seed, i)`` (walk 0's is the run's seed, so ``--seed
W --runs 1`` replays the walk whose seed is W), and draws from it, before its first step, a
``SwarmConfig``:

* ``off``: the swarm families (``Model.swarm_families``: for a rule model, its rules no fairness
  condition covers, i.e. faults and optional events) it leaves out, each with probability 1/2;
* ``weights``: a weight per action kind, log-uniform in [1/8, 8]: at each step a kind is drawn
  by weight among the allowed enabled kinds, then one of its actions uniformly (so a kind with
  many instances, a delay of any of ten messages, is not favoured for that);
* ``late``: None, or the probability per step of delivering a held-back message
  (``Model.held_back``: delayed or duplicated) while anything else is allowed: 1/32, 1/16 or 1/8,
  so such a message tends to land after many other steps (a duplicate after its original).

The policy of ``kafka_mc.explorers.core.checking`` is unchanged: every state a walk visits is checked against
the ALWAYS properties, every step against the TRANSITION ones; a state where the full model has
no enabled action is stuck (a deadlock, or checked against the TERMINAL properties). A state
where actions are enabled but none of the walk's families is allowed just ends the walk, as the
depth bound does: it is not stuck. Coverage is reported per walk family (the set of swarm families
a walk allowed, among those enabled somewhere in the run): walks, steps, rules taken and the
states of the model's state machines reached. Same model, options and seed: the same walks.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import NamedTuple

from kafka_mc.model.capabilities import offers
from kafka_mc.model.core import Model
from kafka_mc.explorers.core.result import Outcome, Path
from kafka_mc.explorers.walks.simulate import SimulateOptions, Walks, model_error, walk

LATE = (None, 1 / 32, 1 / 16, 1 / 8)
MAX_WEIGHT_EXPONENT = 3            # kind weights 2**u, u uniform in [-3, 3]
MIX = 0x9E3779B97F4A7C15           # the golden-ratio increment: walk seeds of nearby runs differ
SEEDS = 2**63


def walk_seed(seed: int, i: int) -> int:
    """The seed of walk ``i`` of a run with seed ``seed`` (walk 0's is ``seed`` itself)."""
    return (seed + i * MIX) % SEEDS if i else seed


class SwarmConfig(NamedTuple):
    """What one walk allows and favours (drawn from its seed before its first step)."""

    off: frozenset          # swarm families left out
    weights: MappingProxyType  # action kind -> weight (read-only)
    late: float | None      # per-step probability of a held-back delivery; None: by weight

    def describe(self) -> str:
        off = ", ".join(sorted(self.off)) or "none"
        late = "by weight" if self.late is None else f"1/{round(1 / self.late)} per step"
        return f"families off: {off}; held-back deliveries: {late}"


def draw(rng: random.Random, families: tuple[str, ...], kinds: tuple[str, ...]) -> SwarmConfig:
    off = frozenset(f for f in families if rng.random() < 0.5)
    weights = MappingProxyType({k: 2.0 ** rng.uniform(-MAX_WEIGHT_EXPONENT, MAX_WEIGHT_EXPONENT)
                                for k in kinds})
    return SwarmConfig(off, weights, LATE[rng.randrange(len(LATE))])


@dataclass
class Family:
    """What the walks of one swarm configuration (its families off) reached: counts, the rules
    taken, and per state machine of the model the edges of its table taken."""

    machines: int
    walks: int = 0
    steps: int = 0
    violations: int = 0
    rules: set = field(default_factory=set)
    edges: list = field(default_factory=list)

    def __post_init__(self):
        self.edges = [set() for _ in range(self.machines)]


def choose(rng: random.Random, allowed: list, config: SwarmConfig, held_back) -> tuple:
    """One of the ``allowed`` actions, as ``config`` says."""
    if config.late is not None:
        late = [x for x in allowed if held_back(x)]
        if late and len(late) < len(allowed):
            if rng.random() < config.late:
                return late[rng.randrange(len(late))]
            allowed = [x for x in allowed if not held_back(x)]
    by_kind: dict = {}
    for x in allowed:
        by_kind.setdefault(x[0], []).append(x)
    kinds = list(by_kind)
    if len(kinds) == 1:
        group = by_kind[kinds[0]]
    else:
        weights = [config.weights.get(k, 1.0) for k in kinds]
        r, acc = rng.random() * math.fsum(weights), 0.0
        group = by_kind[kinds[-1]]
        for k, w in zip(kinds, weights):
            acc += w
            if r < acc:
                group = by_kind[k]
                break
    return group[rng.randrange(len(group))]


def explore(model: Model, options: SimulateOptions = SimulateOptions()) -> Outcome:
    if options.depth < 1 or options.runs < 0:
        raise ValueError("simulate needs depth >= 1 and runs >= 0")
    walks = Walks(model, options.properties, options.check_deadlock, options.progress,
                  options.progress_interval)
    if offers(model, "swarm"):
        families, family_of = tuple(model.swarm_families()), model.swarm_family
        held_back = model.held_back
    else:   # walks that only reweight actions: no family is left out, nothing held back
        families, family_of, held_back = (), (lambda a: None), (lambda a: False)
    inits = list(model.init_states())
    machines, overall = walks.machines, walks.edges
    per: dict[frozenset, Family] = {}
    seen: set = set()   # swarm families enabled somewhere
    violation, interrupted, found = None, False, None
    states, actions = [], []
    try:
        for i in range(options.runs if inits else 0):
            seed = walk_seed(options.seed, i)
            rng = random.Random(seed)
            config = draw(rng, families, walks.kinds)
            fam = per.get(config.off)
            if fam is None:
                fam = per[config.off] = Family(len(machines))
            fam.walks += 1
            walks.edges = fam.edges   # Walks.advance records the machines' edges there
            s = inits[rng.randrange(len(inits))]

            def pick(out, rng=rng, config=config, fam=fam):
                allowed = []
                for x in out:
                    f = family_of(x)
                    if f is not None:
                        seen.add(f)
                        if f in config.off:
                            continue
                    allowed.append(x)
                if not allowed:   # the walk's families allow nothing here: it ends, not stuck
                    return None
                chosen = choose(rng, allowed, config, held_back)
                fam.rules.add(chosen[0])
                fam.steps += 1
                return chosen

            violation = walk(walks, model, s, options.depth, pick, states, actions)
            if violation is not None:
                fam.violations += 1
                found = (i, seed, config)
                break
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # in model code: the path to the state being expanded
        violation = model_error(exc, Path(tuple(states), tuple(actions)))
        found = (i, seed, config)
    for got in per.values():
        for all_edges, edges in zip(overall, got.edges):
            all_edges.update(edges)
    walks.edges = overall
    enabled = [f for f in families if f in seen]
    outcome = walks.outcome("simulate", violation, interrupted, options.minimize, seed=options.seed,
                            runs=options.runs, max_depth=options.depth)
    outcome.extra["swarm"] = summary(per, enabled, machines, found)
    if found is not None and outcome.violations and outcome.violations[0].path is not None:
        i, seed, config = found
        v = outcome.violations[0]
        line = (f"found by walk {i} (walk seed {seed}; {config.describe()})\n"
                f"replay that walk alone: --swarm --seed {seed} --runs 1")
        outcome = replace(outcome, violations=(
            replace(v, detail="\n".join(filter(None, (v.detail, line)))),
            *outcome.violations[1:]))
    return outcome


def summary(per: dict, enabled: list[str], machines, found) -> dict:
    """Coverage per walk family, as JSON values. ``by_family``: walks grouped by the families
    they allowed among ``enabled`` (those enabled somewhere in the run; a family never enabled
    changes nothing), most walks first. ``per_family``: for each family, the walks that allowed
    it and those that left it out (readable when there are too many groups to list)."""
    def merge(groups) -> dict:
        m = Family(len(machines))
        for fam in groups:
            m.walks, m.steps, m.violations = (m.walks + fam.walks, m.steps + fam.steps,
                                              m.violations + fam.violations)
            m.rules |= fam.rules
            for mine, theirs in zip(m.edges, fam.edges):
                mine |= theirs
        return {"walks": m.walks, "steps": m.steps, "violations": m.violations,
                "rules": sorted(m.rules),
                "states": {mc.name: sorted({x for e in edges for x in e})
                           for mc, edges in zip(machines, m.edges)}}

    keys: dict[tuple, list] = {}
    for off, fam in per.items():
        keys.setdefault(tuple(f for f in enabled if f not in off), []).append(fam)
    rows = [{"families_on": list(key), **merge(groups)} for key, groups in keys.items()]
    rows.sort(key=lambda r: (-r["walks"], r["families_on"]))
    per_family = [{"family": f, "on": merge(g for off, g in per.items() if f not in off),
                   "off": merge(g for off, g in per.items() if f in off)} for f in enabled]
    out = {"families": enabled, "by_family": rows, "per_family": per_family}
    if found is not None:
        i, seed, config = found
        out["found_by"] = {"walk": i, "walk_seed": seed, "families_off": sorted(config.off),
                           "late": config.late}
    return out
