"""Reading and writing one file of a run folder, and nothing outside it.

Read: a name of the folder (no path), opened without following a link (``O_NOFOLLOW``) and
without blocking (``O_NONBLOCK``: a FIFO is refused, never waited on), a regular file only
(what was checked is what was opened: ``fstat`` on the descriptor), at most a cap of bytes; JSON
without ``NaN``, integers Python can hold, nesting at most ``MAX_DEPTH`` deep. Written: to a new
temporary file of the folder (``O_EXCL``), synced, renamed over the name (a link there is
replaced, never followed; a reader sees the old file or the whole new one); a name where
something other than a file or a link stands (a folder, a FIFO, a device) is refused. Every
error is a ``FolderError``: one line naming the folder and the file, for exit 2.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path

from kafka_mc.model.config import shown
from kafka_mc.realkafka.runfolder.schema import SchemaError, check, depth

MAX_DEPTH = 64                    # a run's files nest about 8 deep
MAX_PATH = 4096                   # PATH_MAX: a longer path names no folder
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class FolderError(ValueError):
    """A run folder (or a file of one) that cannot be used: one line, exit 2."""


def plain(name: object) -> bool:
    """Whether ``name`` is a plain file name a run writes (no path, no ``..``, no hidden file):
    a manifest naming anything else is not kafka-mc's."""
    return isinstance(name, str) and bool(_NAME.match(name)) and ".." not in name


def folder_path(text: str | os.PathLike, flag: str) -> Path:
    """``text`` as a folder path given with ``flag``, or ``FolderError`` (empty, too long, a
    NUL byte)."""
    raw = os.fspath(text)
    if not raw:
        raise FolderError(f"{flag} is empty")
    if "\x00" in raw:
        raise FolderError(f"{flag} {shown(raw)}: not a usable path (a NUL byte)")
    if len(os.fsencode(raw)) >= MAX_PATH:
        raise FolderError(f"{flag} {shown(raw)}: a path of {len(raw):,} characters is longer "
                          f"than a path can be ({MAX_PATH - 1:,} bytes)")
    return Path(raw)


def read_bytes(folder: Path, name: str, cap: int) -> bytes | None:
    """The bytes of ``folder/name`` (None: there is no such file), a regular file of at most
    ``cap`` bytes, never a link, a FIFO, a device or a folder."""
    path = folder / name
    where = f"{shown(folder)}: {name}"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise FolderError(f"{where}: {e.strerror or e}") from None
    _regular(st, where)
    if st.st_size > cap:
        raise FolderError(f"{where}: {st.st_size:,} bytes, more than a run writes ({cap:,})")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY
                     | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FolderError(f"{where}: a link, not a file the run wrote") from None
        raise FolderError(f"{where}: {e.strerror or e}") from None
    try:
        _regular(os.fstat(fd), where)            # swapped since the lstat
        os.set_blocking(fd, True)
        chunks, left = [], cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        raise FolderError(f"{where}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > cap:
        raise FolderError(f"{where}: more than a run writes ({cap:,} bytes)")
    return data


def _regular(st: os.stat_result, where: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise FolderError(f"{where}: a link, not a file the run wrote")
    if stat.S_ISDIR(st.st_mode):
        raise FolderError(f"{where}: is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise FolderError(f"{where}: not a regular file")


def parse_json(data: bytes, where: str):
    """A JSON document of a run's file: UTF-8, no NaN or Infinity, integers Python holds,
    at most ``MAX_DEPTH`` deep; ``FolderError`` naming ``where`` otherwise."""
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise FolderError(f"{where}: not UTF-8 text") from None
    except RecursionError:
        raise FolderError(f"{where}: nested too deeply") from None
    except json.JSONDecodeError as e:
        raise FolderError(f"{where}: not JSON ({e.msg} at column {e.colno})") from None
    except ValueError as e:           # an integer literal too long, a NaN
        raise FolderError(f"{where}: not JSON a run writes ({shown(e, 80)})") from None
    if not depth(value, MAX_DEPTH):
        raise FolderError(f"{where}: nested more than {MAX_DEPTH} deep")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is no JSON number")


def read_json(folder: Path, name: str, cap: int, shape):
    """``folder/name`` as JSON of ``shape`` (None: no such file)."""
    data = read_bytes(folder, name, cap)
    if data is None:
        return None
    where = f"{shown(folder)}: {name}"
    value = parse_json(data, where)
    try:
        check(value, shape)
    except SchemaError as e:
        raise FolderError(f"{where}: {e}") from None
    return value


def digest(folder: Path, name: str, cap: int) -> str | None:
    """The SHA-256 of ``folder/name`` (None: no such file), read as ``read_bytes`` reads."""
    data = read_bytes(folder, name, cap)
    return None if data is None else hashlib.sha256(data).hexdigest()


def write(folder: Path, name: str, data: bytes | str) -> None:
    """``data`` as ``folder/name``, whole or not at all (a temporary file of the folder renamed
    over the name); ``OSError`` if it cannot be written, ``FolderError`` if something that is
    no file stands at the name."""
    target = folder / name
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "no regular file"
        raise FolderError(f"{shown(folder)}: {name} is {kind}: kafka-mc writes no file over it")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json(folder: Path, name: str, value) -> None:
    write(folder, name, json.dumps(value, indent=1, sort_keys=True, default=str) + "\n")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temporary(name: str, entry: str) -> bool:
    """Whether ``entry`` is a temporary file ``write`` left for ``name`` (a write cut short)."""
    return entry.startswith(f".{name}.") and entry.endswith(".tmp")


def remove(folder: Path, name: str) -> None:
    """``folder/name`` removed when a file or a link stands there (a link itself, never what it
    names); something else there (a folder, a FIFO) is refused (``FolderError``)."""
    target = folder / name
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise FolderError(f"{shown(folder)}: {name} is no regular file: kafka-mc removes only "
                          "the files it wrote")
    try:
        os.unlink(target)
    except FileNotFoundError:
        pass
