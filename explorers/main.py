"""The ``kafka-mc`` command's entry (the console script; ``python -m kafka_mc.explorers.cli``): the
process-wide settings that belong to the command and not to importing kafka-mc, then the CLI.

* From the command's first milliseconds on, an interrupt is its exit code (130, 143), not a
  KeyboardInterrupt traceback from the middle of an import
  (``kafka_mc.explorers.core.interrupts.interrupted_early``; ``kafka_mc.explorers.cli.main`` then puts its own).
* OpenBLAS (numpy's) starts a pool of threads on import that spins between calls; the explorers
  make no BLAS call (numpy sorts and searches fingerprints), and the pool's spinning took the
  core a second BFS process needs: --workers 2 ran 12% slower with it (bench/RESULTS.md,
  "Twelfth round"). Set before numpy is first imported; a caller's own setting wins.
* The compiled builds of the hot modules, where fresh (model/build/compiled.py), before any of
  them is imported.
"""
from __future__ import annotations

import os
import signal
import sys


def prepare() -> None:
    """The command's process-wide settings (above); call before importing anything else of
    kafka-mc's."""
    from kafka_mc.explorers.core.interrupts import interrupted_early
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted_early)
        signal.signal(signal.SIGTERM, interrupted_early)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from kafka_mc.model.build.compiled import install
    install()


def main(argv: list[str] | None = None) -> int:
    """The ``kafka-mc`` command; its exit code."""
    prepare()
    from kafka_mc.explorers.cli import main as command
    return command(argv)


if __name__ == "__main__":
    sys.exit(main())
