"""Claims a system may not make: the smallest mechanism the Pulsar model needs for them.

The contract (``kafka_mc.model.core.Property``) can say that a *witness* cannot arise in a configuration
(``applies``: reported as not applicable), but not that a system does not *claim* an invariant
there. A ``Claim`` is a ``Property`` with one more field, ``not_claimed(p)``: "" where the system
makes the claim, else one sentence saying why it does not. ``PulsarModel`` checks the claims made
and lists the others in ``not_claimed()`` (and its summary), so a claim Pulsar does not make is
reported as such, never as a violation. Registries and explorers see plain ``Property`` values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafka_mc.model.core import Property


@dataclass(frozen=True)
class Claim(Property):
    not_claimed: Callable[[Any], str] | None = None   # p -> "" (claimed) or why not


def split(properties, p) -> tuple[tuple, dict]:
    """The properties claimed under parameters ``p``, and {name: why not} for the others."""
    kept, dropped = [], {}
    for prop in properties:
        why = prop.not_claimed(p) if isinstance(prop, Claim) and prop.not_claimed else ""
        if why:
            dropped[prop.name] = why
        else:
            kept.append(prop)
    return tuple(kept), dropped
