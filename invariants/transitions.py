"""Conformance: every coordinator and client state change is in Kafka's own transition table for
the configured version (``kafka_mc.model.kafka.tables``, extracted from apache/kafka)."""
from __future__ import annotations

from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.tables import client_step, client_table, coordinator_step, coordinator_table


def _allowed(table, edges) -> bool:
    for source, target in edges:
        valid = table.get(target, [])
        if valid != "ANY" and source not in valid:
            return False
    return True


def coordinator_transitions(K, s, a, t) -> bool:
    return _allowed(coordinator_table(K.features), coordinator_step(s, a, t))


def client_transitions(K, s, a, t) -> bool:
    return _allowed(client_table(K.features, K.two_phase), client_step(K.features, s, a, t, K.window))


PROPERTIES = (
    Property("coordinator_transitions", Expectation.TRANSITION, coordinator_transitions,
             "every coordinator state change is allowed by Kafka's table for the configured "
             "version",
             reads=reads("C")),
    Property("client_transitions", Expectation.TRANSITION, client_transitions,
             "every producer client state change is allowed by Kafka's table for the configured "
             "version",
             reads=reads("P")),
)
