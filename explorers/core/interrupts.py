"""Whether an interrupt (Ctrl-C, SIGTERM) was asked for, remembered apart from the exception.

The ``kafka-mc`` command's handlers (``kafka_mc.explorers.cli``) call ``ask`` and then raise
``KeyboardInterrupt``. The exception is raised wherever Python happens to be, and code that is
not ours may swallow it: hypothesis's garbage-collector callback does (an exception in a gc
callback is reported and ignored), and the search then ran on. An explorer whose loop runs such
code checks ``asked`` too, so a search is never resumed after an interrupt was asked for.
"""
from __future__ import annotations

import os
import threading

_asked = threading.Event()


def ask() -> None:
    """An interrupt was asked for (called by the signal handlers, before they raise)."""
    _asked.set()


def asked() -> bool:
    return _asked.is_set()


def clear() -> None:
    """Forget it (the command is over)."""
    _asked.clear()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if an interrupt was asked for (one swallowed is raised again)."""
    if _asked.is_set():
        raise KeyboardInterrupt


def interrupted_early(signum, frame):  # pragma: no cover - exercised in subprocesses
    """Ctrl-C or SIGTERM while ``kafka-mc`` is still starting (importing: nothing computed, no
    file open): the exit code the command gives for it (130, 143), one line, no traceback.
    ``kafka_mc.explorers.main`` installs it first thing; ``kafka_mc.explorers.cli.main`` replaces it with its own
    handlers before it does anything."""
    try:
        os.write(2, b"kafka-mc: interrupted\n")
    except OSError:
        pass
    os._exit(128 + signum)
