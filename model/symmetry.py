"""Symmetry (docs/design.md section 8): the sets of interchangeable identifiers a model declares
(``Symmetry``), the group they generate, how an orbit picks its representative
(``least_fingerprint``) and what a report says about a search under symmetry. Making a bound
model's view canonical under them is ``kafka_mc.model.canonical``."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from kafka_mc.model.fingerprints import fingerprint


# A model declares sets of interchangeable identifiers (transactional.ids with identical workloads,
# resource managers) and how to rename them in a state (``permute``). Each permutation ``g`` of the
# group they generate must be an automorphism of the transition system: ``permute(step(s, a), g)
# == permute(step(permute(s, g), permute_action(a, g)), identity)``, the actions enabled in
# ``permute(s, g)`` are the renamed actions enabled in ``s``, and every property has the same
# verdict in ``s`` and ``permute(s, g)`` (tests sample reachable states to confirm it). A model may
# return states in a normal form that every rule and property treats alike (a bisimulation: the
# Kafka model orders its network by connection when partitions are renamed), even for the
# identity. Then every state is equivalent to its images, and a search that deduplicates on the
# canonical view visits one state per orbit; the states it keeps are concrete states, and a
# counterexample is rebuilt from concrete successors whose canonical view is the next one on the
# path, so traces stay concrete and replayable. Liveness is not checked under symmetry (TLC's
# caveat: a lasso in the quotient need not be one in the model).
#
# With partial-order reduction too, a model's own ``reduction_view`` is canonicalised the same way
# (the images of ``reduction_view(permute(s, g))``), so the reduced search deduplicates on orbits
# of reduction views. This is sound for safety (Emerson, Jha and Peled, "Combining partial order
# and symmetry reductions", TACAS 1997): the stubborn set is computed on the concrete state the
# search keeps, so it is persistent there; every property reads the same in every member of an
# orbit; and the BFS proviso is checked on the canonical keys, so every cycle of the reduced
# quotient has a fully expanded state. (A path of the full graph from a kept state is carried,
# by the permutation, to one of the same length from the state kept for its orbit.)


@dataclass(frozen=True)
class Symmetry:
    """A set of ``size`` interchangeable identifiers (numbered 0 .. size - 1 in ``permute``),
    named as the system calls them, with ``why`` they are interchangeable."""

    name: str
    size: int
    why: str


def group_elements(symmetries: Sequence[Symmetry]) -> list[tuple[tuple[int, ...], ...]]:
    """Every permutation of the group the symmetries generate (their direct product), the
    identity first."""
    return list(itertools.product(*(itertools.permutations(range(x.size)) for x in symmetries)))


def group_order(symmetries: Sequence[Symmetry]) -> int:
    n = 1
    for x in symmetries:
        for i in range(2, x.size + 1):
            n *= i
    return n


class SymmetryError(ValueError):
    """Symmetry asked of a model that declares none."""


def least_fingerprint(images: Iterable) -> Any:
    """Of ``images`` (at least one), the one whose fingerprint is smallest (the first of equal
    ones): how a state's orbit picks its representative."""
    it = iter(images)
    best = next(it)
    least = fingerprint(best)
    for v in it:
        h = fingerprint(v)
        if h < least:
            best, least = v, h
    return best


def symmetry_note(model) -> dict | None:
    """What a report says about a search under symmetry (None: it was off)."""
    if not model.symmetric:
        return None
    symmetries = tuple(model.symmetries())
    return {"groups": [{"name": x.name, "size": x.size} for x in symmetries],
            "order": group_order(symmetries)}
