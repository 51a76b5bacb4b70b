"""Explorers: search a model's state space and check its properties (they see model.core only)."""

from model.compiled import install as _compiled

_compiled()   # the compiled builds of the hot modules, where fresh (model/compiled.py)
