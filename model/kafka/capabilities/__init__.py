"""What the Kafka model offers the explorers and tools beyond its transitions: the capabilities
of ``kafka_mc.model.capabilities``, each in its module.

- ``footprints``: each action's reads and writes (partial-order reduction).
- ``symmetry``: renaming producer instances and transactional.ids (symmetry reduction).
- ``symbolic``: the z3 encoding (``--explorer symbolic``).
- ``observations``: a real run's events as the model's actions (``kafka-mc real conform``).
- ``components``: the explorer's panels (the sequence diagram is ``kafka_mc.model.kafka.diagram``, beside the rules that draw themselves with it).
- ``comparison``: the model's claims beside RocketMQ's and Pulsar's (``kafka-mc compare``).
- ``mutants``: deliberately broken variants (``model.mutant``).

The transition system itself (``world``, ``spec`` and the components' rules) lives one level up
and does not import from here, but for ``spec``, which binds these to the model.
"""
