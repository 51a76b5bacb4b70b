"""The symmetry self-check: do a model's declared permutations really commute with its steps?

Symmetry reduction (``kafka_mc.model.canonical.with_symmetry``) is sound when every permutation ``g`` of the
declared group is an automorphism of the transition system that every property respects. This
samples reachable states of the unreduced model (breadth first, up to ``limit``) and, for each
permutation, confirms on each of them:

* every property (``always``, ``sometimes``, ``terminal``, ``eventually`` and its ``when``) has
  the same verdict in ``s`` and ``permute(s, g)``;
* the actions enabled in ``permute(s, g)`` are the renamed actions enabled in ``s``;
* for each step ``s --a--> t``: stepping ``permute(s, g)`` with the renamed action reaches
  ``permute(t, g)`` (compared in the model's normal form, ``permute(_, identity)``), and every
  ``transition`` property has the same verdict on both steps.
"""
from __future__ import annotations

import random

from kafka_mc.model.core import Expectation, Model
from kafka_mc.model.symmetry import group_elements
from kafka_mc.explorers.core.adapter import successors_of


def sample(model: Model, limit: int, walks: int = 0, seed: int = 0, depth: int = 80) -> list:
    """Up to ``limit`` reachable states breadth first, then the states of ``walks`` random walks
    of up to ``depth`` steps (deep states: several transactions and faults in flight)."""
    succ, seen, out = successors_of(model), set(), []
    frontier = list(model.init_states())
    while frontier and len(out) < limit:
        nxt = []
        for s in frontier:
            if s in seen:
                continue
            seen.add(s)
            out.append(s)
            if len(out) >= limit:
                break
            nxt.extend(t for _, t in succ(s))
        frontier = nxt
    rng = random.Random(seed)
    for _ in range(walks):
        s = rng.choice(list(model.init_states()))
        for _ in range(depth):
            if s not in seen:
                seen.add(s)
                out.append(s)
            nexts = succ(s)
            if not nexts:
                break
            s = rng.choice(nexts)[1]
    return out


def self_check(model: Model, limit: int = 500, walks: int = 50, seed: int = 0,
               stop_after: int = 5) -> list[str]:
    """The ways the declared symmetries fail on a sample of reachable states (``sample``; at
    most ``stop_after``); empty when they hold there."""
    elements = group_elements(model.symmetries())
    identity, moving = elements[0], elements[1:]
    succ = successors_of(model)
    props = model.properties()
    on_states = [p for p in props if p.expectation is not Expectation.TRANSITION]
    on_steps = [p for p in props if p.expectation is Expectation.TRANSITION]
    problems: list[str] = []

    def fail(text: str) -> bool:
        problems.append(text)
        return len(problems) >= stop_after

    for s in sample(model, limit, walks, seed):
        out = succ(s)
        for g in moving:
            ps = model.permute(s, g)
            for p in on_states:
                for f in (p.holds, p.when):
                    if f is not None and bool(f(s)) != bool(f(ps)):
                        if fail(f"{p.name} differs in a state and its image under {g}"):
                            return problems
            renamed = {model.permute_action(a, g): t for a, t in out}
            theirs = dict(succ(ps))
            if set(renamed) != set(theirs):
                extra = sorted(map(repr, set(theirs) ^ set(renamed)))[:1]
                if fail(f"the actions enabled differ under {g}: {extra[0][:200]}"):
                    return problems
                continue
            for a, t in out:
                pa = model.permute_action(a, g)
                pt = theirs[pa]
                if model.permute(pt, identity) != model.permute(t, g):
                    if fail(f"{model.format_action(a)} does not commute with {g}"):
                        return problems
                    continue
                for p in on_steps:
                    if bool(p.holds(s, a, t)) != bool(p.holds(ps, pa, pt)):
                        if fail(f"{p.name} differs on {model.format_action(a)} and its image "
                                f"under {g}"):
                            return problems
    return problems
