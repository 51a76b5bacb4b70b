"""kafka-mc models: the contract (core, protocol, config), the registry, and the models."""

from model.build.compiled import install as _compiled

_compiled()   # the compiled builds of the hot modules, where fresh (model/build/compiled.py)
