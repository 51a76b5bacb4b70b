"""The breadth-first search (``search``): its visited set and BFS tree of fingerprints
(``visited``), its states on disk (``state_codec``), its checkpoints (``checkpoint``,
``checkpoint_meta``) and the forked processes that expand a level with ``--workers``
(``workers``)."""
