"""Explorers: search a model's state space and check its properties (they see kafka_mc.model.core only).

Importing them changes no process-wide setting; the command's settings (its early interrupt
handlers, OpenBLAS's threads, the compiled builds' finder) are made by its entry,
``kafka_mc.explorers.main``."""
