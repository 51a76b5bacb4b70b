"""Real Apache Kafka in the loop: releases fetched from Maven Central, a KRaft cluster on
loopback, a proxy that injects the model's network faults and records every request, the real
Java client driven from Python, runs of a config's workload and the anomalies found in them.

Layer: beside the explorers. realkafka imports the model contract only (``kafka_mc.model.config``,
``kafka_mc.model.registry``), never ``kafka_mc.model.kafka``, ``invariants`` or ``explorers``; the CLI's ``real``
command group (``kafka_mc.realkafka.cli``) is the one entry.
"""
