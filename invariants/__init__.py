"""Invariants of the Kafka model, one module per concern; each module exports PROPERTIES.

Names are stable (CLI flags, trace metadata, tests): see DESIGN.md section 4. Each concern has a
``sometimes`` witness so that no check passes vacuously.
"""
from __future__ import annotations

MODULES = ("atomicity", "isolation", "fencing", "duplicates", "transitions", "hanging",
           "offsets")


def all_properties():
    import importlib
    return tuple(p for m in MODULES for p in importlib.import_module(f"invariants.{m}").PROPERTIES)
