"""A search's run directory (``--out``'s ``bfs`` or ``spark``, ``--recover DIR``): its lock, so
that a second search on the same directory is refused instead of deleting or corrupting the first
one's files, and the one error an unusable run directory or checkpoint raises."""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kafka_mc.model.config import shown


class RunDirError(ValueError):
    """An unusable run directory or checkpoint; the message is one line."""


def is_directory(run_dir: str, where: str) -> bool:
    """Whether ``run_dir`` is a directory (False: nothing there); ``RunDirError`` (one line
    starting with ``where``) when the path cannot even be looked at: a name too long for the
    file system, a NUL byte (``Path.is_dir`` raised those)."""
    try:
        return Path(run_dir).is_dir()
    except (OSError, ValueError) as e:
        raise RunDirError(f"{where}: {getattr(e, 'strerror', None) or shown(e, 80)}") from None


@contextmanager
def locked(run_dir: str | None, create: bool = True) -> Iterator[None]:
    """Hold the run directory's lock (``.lock``, an exclusive ``flock``) for a search: a second
    search on the same directory is refused instead of deleting or corrupting its files. The
    kernel drops the lock if the process dies. ``None``: a private temporary directory, no lock.
    ``create``: make the directory if missing (a new search), else refuse (a recovery)."""
    if run_dir is None:
        yield
        return
    root = Path(run_dir)
    if not create and not is_directory(run_dir, f"--recover {shown(run_dir)}"):
        raise RunDirError(f"--recover {shown(run_dir)}: no such directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        raise RunDirError(f"run directory {shown(run_dir)}: {e.strerror or e}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RunDirError(f"run directory {shown(run_dir)} is in use by another kafka-mc "
                                  "search (give another --out)") from None
        yield
    finally:
        os.close(fd)
