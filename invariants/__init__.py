"""The Kafka model's properties, one module per concern, each with a ``sometimes`` witness so that
no check passes vacuously. Names are stable (CLI flags, trace metadata, tests): docs/design.md section 4.

``PROPERTIES`` is registered for the model ``kafka`` (pyproject.toml, entry point group
``kafka_mc.properties``); the registry adds it to the model when it binds a configuration. These
modules import the model; nothing in ``model/`` imports them. A new concern: a module exporting
``PROPERTIES``, and its line below.
"""
from __future__ import annotations

from kafka_mc.invariants import (anomalies, atomicity, availability, duplicates, fencing, hanging,
                                isolation, markers, offsets, transitions, two_phase)

# Each property declares what it reads where it is defined (``reads=reads("OL")``:
# model.kafka.capabilities.footprints.reads); one without (an ``eventually`` property) reads everything.
PROPERTIES = (atomicity.PROPERTIES + isolation.PROPERTIES + fencing.PROPERTIES
              + duplicates.PROPERTIES + transitions.PROPERTIES + hanging.PROPERTIES
              + offsets.PROPERTIES + anomalies.PROPERTIES + two_phase.PROPERTIES
              + markers.PROPERTIES
              # the claims checked only when named (Property.default False)
              + availability.CLAIMS + duplicates.CLAIMS)
