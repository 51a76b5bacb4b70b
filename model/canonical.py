"""Symmetry canonicalisation (docs/design.md section 8; ``kafka_mc.model.symmetry`` says when it is sound): a
bound model's ``view`` (and ``reduction_view``) made canonical under its declared symmetries, and
the canonical fingerprints remembered by the concrete ones."""
from __future__ import annotations

from typing import Callable, Sequence

from kafka_mc.model.capabilities import offers
from kafka_mc.model.core import ModelBase
from kafka_mc.model.fingerprints import fingerprint
from kafka_mc.model.symmetry import SymmetryError, group_elements, least_fingerprint


def with_symmetry(model):
    """``model`` with its ``view`` canonicalised under its declared symmetries: of the images of a
    state under every permutation of the group, the view whose fingerprint is smallest. (Not the
    lexicographically smallest: Kafka states hold frozensets, which have no total order, and the
    fingerprint is computed anyway; two images with equal fingerprints collide in the visited set
    whichever is chosen.) A packed model's states are ints: the canonical view is an int, its own
    fingerprint, but no longer the state itself, so the model is no longer ``packed``. With a
    group of order 1 (one transactional.id, one partition) the view is left as it is. A model's
    own ``reduction_view`` (partial-order reduction) is canonicalised likewise."""
    symmetries = tuple(model.symmetries()) if offers(model, "symmetry") else ()
    if not symmetries:
        raise SymmetryError(f"model {model.name} declares no symmetry: --symmetry / [check] "
                            "symmetry does not apply to it")
    model.symmetric = True
    elements = group_elements(symmetries)
    if len(elements) == 1:
        return model
    view, permute, canonical = model.view, model.permute, model.canonical
    if offers(model, "reduction") and ("reduction_view" in vars(model) or
                                       type(model).reduction_view is not ModelBase.reduction_view):
        own = model.reduction_view
        # (a model's canonical form is taken of the view, not of the state: states with equal
        # views then have equal canonical views, so the remembered key is theirs whichever of
        # them was met first, and every search -- with workers or not -- counts the same states)
        model.reduction_view = (_least_image(own, permute, elements) if canonical is None
                                else lambda s: own(canonical(own(s))))
        model.reduction_fingerprint = remembered(
            own, model.reduction_view,
            None if canonical is None else lambda v: own(canonical(v)))   # (v: own(s))
    model.view = (_least_image(view, permute, elements) if canonical is None
                  else lambda s: view(canonical(s)))
    model.view_fingerprint = remembered(view, model.view)
    model.packed = False
    return model


# A canonical view costs a renaming and a sort (Kafka: about 20 us); the fingerprint of the view
# before it, a hash (2-4 us). Most successors a search generates are the same concrete state
# reached again in another order (two thirds on the issue-20 configurations, where almost every
# concrete state met for the first time is a new orbit too), so the canonical fingerprint is
# remembered by the concrete one, for the last REMEMBERED to 2 x REMEMBERED concrete states (a
# search meets a state again soon: the orders of a diamond are expanded from states one level
# apart). Two concrete views with one fingerprint are then taken for one orbit: a collision of the
# kind the visited set already accepts.
REMEMBERED = 1 << 20


def remembered(concrete: Callable, canonical_view: Callable,
               of_concrete: Callable | None = None) -> Callable:
    """s -> ``fingerprint(canonical_view(s))``, looked up by ``fingerprint(concrete(s))`` when
    it was computed lately (explorers prefer a model's ``view_fingerprint`` and
    ``reduction_fingerprint`` to fingerprinting its views, ``kafka_mc.explorers.core.adapter.key_function``).
    ``of_concrete``: v -> ``canonical_view(s)`` for ``v = concrete(s)``, when it can be taken
    of the concrete view (which is then not computed twice)."""
    new: dict = {}
    old: dict = {}

    def key(s):
        nonlocal new, old
        v = concrete(s)
        c = fingerprint(v)
        h = new.get(c)
        if h is None:
            h = old.get(c)
            if h is None:
                h = fingerprint(canonical_view(s) if of_concrete is None else of_concrete(v))
            if len(new) >= REMEMBERED:
                old, new = new, {}
            new[c] = h
        return h
    return key


def _least_image(view: Callable, permute: Callable, elements: Sequence) -> Callable:
    """s -> of ``view(permute(s, g))`` for every ``g`` in ``elements``, the one whose fingerprint
    is smallest."""
    return lambda s: least_fingerprint(view(permute(s, g)) for g in elements)
