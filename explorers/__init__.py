"""Explorers: search a model's state space and check its properties (they see model.core only)."""
import os
import signal
import sys


def _interrupted_early(signum, frame):  # pragma: no cover - exercised in subprocesses
    """Ctrl-C or SIGTERM while ``kafka-mc`` is still starting (importing: nothing computed, no
    file open): the exit code the command gives for it (130, 143), one line, no traceback.
    ``explorers.cli.main`` replaces this handler with its own before it does anything."""
    try:
        os.write(2, b"kafka-mc: interrupted\n")
    except OSError:
        pass
    os._exit(128 + signum)


def _is_the_command() -> bool:
    """Whether this process is the kafka-mc command: its console script, or ``python -m
    explorers.cli`` (not a test suite importing the package, not a Spark daemon or a worker)."""
    argv = getattr(sys, "orig_argv", [])
    module = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-m"), None)
    return os.path.basename(sys.argv[0] if sys.argv else "") == "kafka-mc" \
        or module == "explorers.cli"


# From the command's first milliseconds on, an interrupt is its exit code, not a
# KeyboardInterrupt traceback from the middle of an import.
if _is_the_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_early)
    signal.signal(signal.SIGTERM, _interrupted_early)

# OpenBLAS (numpy's) starts a pool of threads on import that spins between calls; the explorers
# make no BLAS call (numpy sorts and searches fingerprints), and the pool's spinning took the
# core a second BFS process needs: --workers 2 ran 12% slower with it (bench/RESULTS.md, "Twelfth
# round"). Set before numpy is first imported; a caller's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from model.build.compiled import install as _compiled  # noqa: E402

_compiled()   # the compiled builds of the hot modules, where fresh (model/build/compiled.py)
