"""Writing output files safely (traces, renderings, and the Spark explorer's run directory).

``write_atomically`` writes to a new temporary file in the target's directory (created with
``O_EXCL``, so never through a link someone planted) and renames it over the target: a reader
sees the old file or the whole new one, a failed write (a full disk) leaves the old file as it
was and no partial one, and an existing symlink at the target is replaced, never followed.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable


def write_atomically(file: str | os.PathLike, data: str | Iterable[bytes]) -> None:
    """Write ``data`` (text, as UTF-8, or chunks of bytes streamed one by one) to ``file``;
    ``OSError`` if it cannot be written.

    A target that is a character device or a FIFO (``/dev/stdout``, a pipe), possibly behind a
    link, is written to directly: there is no file to replace. A new file gets the mode the
    umask allows; a replaced regular file keeps its own."""
    target = Path(file)
    try:
        st = target.stat()                      # follows a link
    except (FileNotFoundError, NotADirectoryError):
        st = None
    chunks = (data.encode("utf-8"),) if isinstance(data, str) else data
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        with open(target, "wb") as f:
            f.writelines(chunks)
        return
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(target))
    own = target.lstat() if st is not None else None   # the file itself, not a link's target
    mode = (stat.S_IMODE(own.st_mode) if own is not None and stat.S_ISREG(own.st_mode)
            else 0o666 & ~_umask())
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:64]}.", suffix=".tmp",
                               dir=target.parent if str(target.parent) else ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.writelines(chunks)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same existing file (an output that would overwrite an input)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()
