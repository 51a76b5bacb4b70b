"""Invariants of the Kafka model, one module per concern; each module exports PROPERTIES."""
