"""kafka-mc's installed name: one top-level package, so that nothing generic (``model``,
``explorers``, ...) is put into a user's environment (docs/design.md section 10).

The repository keeps its folders at the top (``model/``, ``invariants/``, ``explorers/``,
``traces/``, ``realkafka/``, ``configs/``); this package's entries are symbolic links to them, so
a checkout imports ``kafka_mc.model.core`` from ``model/core.py`` exactly as an installed wheel
(where they are real folders) does. Importing it changes no process-wide setting.
"""
