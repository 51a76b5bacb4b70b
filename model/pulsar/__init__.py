"""Apache Pulsar's transactions as a kafka-mc model (model/pulsar/spec.py)."""
