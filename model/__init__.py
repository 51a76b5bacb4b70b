"""kafka-mc models: the contract (core, protocol, config), the registry, and the models."""

from model.compiled import install as _compiled

_compiled()   # the compiled builds of the hot modules, where fresh (model/compiled.py)
