"""Explorers: search a model's state space and check its properties (they see model.core only)."""
import os

# OpenBLAS (numpy's) starts a pool of threads on import that spins between calls; the explorers
# make no BLAS call (numpy sorts and searches fingerprints), and the pool's spinning took the
# core a second BFS process needs: --workers 2 ran 12% slower with it (bench/RESULTS.md, "Twelfth
# round"). Set before numpy is first imported; a caller's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from model.build.compiled import install as _compiled  # noqa: E402

_compiled()   # the compiled builds of the hot modules, where fresh (model/build/compiled.py)
