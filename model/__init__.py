"""kafka-mc models: the contract (core, protocol, config), the registry, and the models.

Importing it changes no process-wide setting: the compiled builds' finder
(model/build/compiled.py) is installed by a process's entry (``kafka_mc.explorers.main``), not here."""
