"""Build tooling, not the model: the finder that loads the compiled builds of the hot modules
(``compiled``; imports nothing of kafka-mc's) and their builder (``cython_build``)."""
