"""Writing output files safely.

``write_atomically`` writes to a new temporary file in the target's directory (created with
``O_EXCL``, so never through a link someone planted) and renames it over the target: a reader
sees the old file or the whole new one, a failed write (a full disk) leaves the old file as it
was and no partial one, and an existing symlink at the target is replaced, never followed.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(file: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``file``; ``OSError`` if it cannot be written."""
    target = Path(file)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:64]}.", suffix=".tmp",
                               dir=target.parent if str(target.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same existing file (an output that would overwrite an input)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()
