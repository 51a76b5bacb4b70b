"""The Kafka model's properties, one module per concern, each with a ``sometimes`` witness so that
no check passes vacuously. Names are stable (CLI flags, trace metadata, tests): docs/design.md section 4.

``PROPERTIES`` is registered for the model ``kafka`` (pyproject.toml, entry point group
``kafka_mc.properties``); the registry adds it to the model when it binds a configuration. These
modules import the model; nothing in ``model/`` imports them. A new concern: a module exporting
``PROPERTIES``, and its line below.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import model   # noqa: F401  (first: it installs the compiled builds' finder, model/build/compiled.py)
from invariants import (anomalies, atomicity, duplicates, fencing, hanging, isolation, markers,
                        offsets, transitions, two_phase)
from model.kafka.footprints import locations

# What each property reads, as kinds of model.kafka.footprints locations (partial-order reduction:
# a step writing one of them is visible to the property). P producers, O what their applications
# were told (Producer.outcomes), C coordinator, L partition
# logs, R consumers, N connections, D held-back messages. A transition property fails only on a
# step that changes what it reads.
READS = {
    "txn_atomicity": "L", "committed_writes_visible": "OL", "a_commit_happens": "O",
    "an_abort_happens": "L", "read_committed_isolation": "LR", "lso_safety": "LR",
    "a_read_returns_committed_data": "R", "zombie_fencing": "PLC", "instance_fencing": "PLC",
    "a_zombie_is_fenced": "P", "no_duplicates": "L", "coordinator_transitions": "C",
    "client_transitions": "P", "no_hanging_transactions": "CLND", "quiescent_completion": "CL",
    "exactly_once_offsets": "PL", "an_offset_commit_is_committed": "L", "no_lost_writes": "OL",
    "no_aborted_reads": "OR", "aborted_writes_stay_aborted": "OL", "read_committed_polls": "LR",
    "prepared_transaction_kept": "PC", "a_transaction_is_prepared": "P",
    "marker_closes_its_own_transaction": "CL",
}


def _reads(kinds, K):
    return locations(K, *kinds)


PROPERTIES = tuple(
    replace(p, reads=partial(_reads, READS[p.name])) if p.name in READS else p
    for p in (atomicity.PROPERTIES + isolation.PROPERTIES + fencing.PROPERTIES
              + duplicates.PROPERTIES + transitions.PROPERTIES + hanging.PROPERTIES
              + offsets.PROPERTIES + anomalies.PROPERTIES + two_phase.PROPERTIES
              + markers.PROPERTIES))
