"""A run folder's manifest, ``kafka-mc-run.json``: what marks a folder as kafka-mc's, what the
command writing it writes there, and whether it finished.

A command that writes a run folder (``real run``, ``real reproduce``, a ``real conform``
campaign) takes it first (``RunFolder.take``): a new or empty folder, or one whose manifest says
it is a run folder no live process is writing; anything else is refused (one line, exit 2) and
left as it was. Taking a run folder again removes exactly what its manifest lists (its files,
the files validating it wrote, the run folders inside it, each by its own manifest) and nothing
else. The manifest is written first (``status`` ``running``, the files the command will write,
the process writing it), rewritten atomically at every change, and its completion last:
``complete`` with the SHA-256 of each file a validation reads (a file changed since is seen), or
``incomplete`` with why (an interrupt and the phase it came in, a JVM that died, a full disk).
A run killed outright (SIGKILL) cannot say so: its manifest still says ``running``, naming a
process that is gone, which every reader takes as incomplete; and the next command that takes a
folder finds the killed one's claim in the temporary folder and writes it down
(``sweep_killed``).

    {"kafka_mc_run_folder": 1, "kind": "run" | "reproduce" | "campaign",
     "status": "running" | "complete" | "incomplete", "why": "...",
     "command": "kafka-mc real run tiny --version 4.4.0 --seed 3",
     "process": {"pid": 1234, "start": <clock ticks after boot>, "boot": "<boot id>"},
     "started": "2026-11-30T10:00:00Z", "ended": ..., "files": ["run.json", ...],
     "folders": ["conform"], "digests": {"events.jsonl": "<sha256>", ...},
     "outputs": ["conformance.json", "behaviour.itf.json"]}
"""
from __future__ import annotations

import errno
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from kafka_mc.model.config import shown
from kafka_mc.realkafka.runfolder import files as fs
from kafka_mc.realkafka.runfolder.files import FolderError
from kafka_mc.realkafka.runfolder.schema import MANIFEST

NAME = "kafka-mc-run.json"
MAX_MANIFEST = 1 << 20
MAX_INPUT = 256 << 20          # a file a validation reads (events.jsonl of a long run: ~1 MB)
CLAIM_PREFIX = "kafka-mc-run-"
MARKED: list[Path] = []        # the folders this process marked incomplete (named in its error)


class Interrupted(KeyboardInterrupt):
    """A signal stopped a real command (SIGINT, SIGTERM, SIGHUP, SIGQUIT): its exit code is
    128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


class RunFailed(RuntimeError):
    """Something outside kafka-mc failed a run (a JVM that died or was stopped, a full disk, a
    file that could not be written): one line naming it; the folder is marked incomplete."""


# --- the process writing a folder -----------------------------------------------------------------

def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _start(pid: int) -> int | None:
    """The process's start time in clock ticks after boot (/proc/PID/stat field 22): a pid the
    kernel gave again to another process has another."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text[text.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def this_process() -> dict:
    return {"pid": os.getpid(), "start": _start(os.getpid()), "boot": _boot_id()}


def alive(process: dict) -> bool:
    """Whether the process a manifest names is still running (the same boot, pid and start)."""
    pid = process.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    if process.get("boot") and _boot_id() and process["boot"] != _boot_id():
        return False
    start = _start(pid)
    if start is not None and process.get("start") is not None:
        return start == process["start"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def command_line() -> str:
    line = " ".join(["kafka-mc", *sys.argv[1:]])
    return shown(line, 500)


# --- reading a manifest ---------------------------------------------------------------------------

def read(folder: Path) -> dict | None:
    """The manifest of ``folder`` (None: it has none), checked: its shape, and every name it
    lists a plain file name of the folder (a manifest naming ``../x`` is not kafka-mc's)."""
    doc = fs.read_json(folder, NAME, MAX_MANIFEST, MANIFEST)
    if doc is None:
        return None
    for key in ("files", "folders", "outputs"):
        bad = [n for n in doc[key] if not fs.plain(n) or n == NAME]
        if bad:
            raise FolderError(f"{shown(folder)}: {NAME} lists {shown(bad[0], 60)!r}, no file "
                              "name of a run folder")
    bad = [n for n in doc["digests"] if not fs.plain(n)]
    if bad:
        raise FolderError(f"{shown(folder)}: {NAME} has a digest of {shown(bad[0], 60)!r}")
    return doc


def status(doc: dict) -> tuple[str, str]:
    """(status, why): ``complete``, ``incomplete`` (why), or ``running`` while its process
    lives; a run whose process is gone without saying so was killed."""
    if doc["status"] == "running":
        if alive(doc["process"]):
            return "running", f"a kafka-mc (process {doc['process']['pid']}) is writing it"
        return "incomplete", (f"killed: its process {doc['process']['pid']} ended before the "
                              "run finished")
    return doc["status"], doc["why"]


# --- taking a folder ------------------------------------------------------------------------------

class RunFolder:
    """A folder a command writes a run into (``take``), its manifest kept current. Leaving a
    ``with`` on an exception marks it incomplete, naming the exception and the phase."""

    def __init__(self, path: Path, doc: dict):
        self.path, self.doc = path, doc
        self.phase = "starting"
        self.marked: list[Path] = []     # killed runs' folders found when this one was taken

    @classmethod
    def take(cls, path: str | os.PathLike, kind: str, files=(), folders=(), *,
             flag: str = "--out") -> RunFolder:
        """Take ``path`` for a run of ``kind`` that writes ``files`` (and run folders
        ``folders``): created when missing; refused (``FolderError``) unless new, empty or a run
        folder no live process writes; what an old manifest lists removed; the new manifest
        written first (``running``)."""
        path = fs.folder_path(path, flag)
        where = f"{flag} {shown(path)}"
        marked = sweep_killed()
        if not usable(path, flag):
            try:
                os.makedirs(path)
            except OSError as e:
                raise FolderError(f"{where}: cannot create it ({e.strerror or e})") from None
        else:
            clear(path, where)
        doc = {"kafka_mc_run_folder": 1, "kind": kind, "status": "running", "why": "",
               "command": command_line(), "process": this_process(), "started": _now(),
               "ended": None, "files": sorted(set(files)), "folders": sorted(set(folders)),
               "digests": {}, "outputs": []}
        bad = [n for n in (*files, *folders) if not fs.plain(n)]
        if bad:
            raise ValueError(f"not a plain file name: {bad[0]!r}")
        folder = cls(path, doc)
        _claim(path)            # first: a kill right after the manifest is still found
        try:
            folder._save()
        except OSError as e:
            _unclaim(path)
            raise FolderError(f"{where}: cannot write in it ({e.strerror or e})") from None
        folder.marked = marked
        return folder

    def _save(self) -> None:
        fs.write_json(self.path, NAME, self.doc)

    def declare(self, *names: str) -> None:
        """More files this run writes (before it writes them, so a rerun replaces them)."""
        new = sorted(set(self.doc["files"]) | set(names))
        if new != self.doc["files"]:
            self.doc["files"] = new
            self._save()

    def write_json(self, name: str, value) -> None:
        """One of the run's files, written whole or not at all."""
        self.declare(name)
        fs.write_json(self.path, name, value)

    def write_text(self, name: str, text: str) -> None:
        self.declare(name)
        fs.write(self.path, name, text)

    def copy_in(self, source: Path, name: str) -> None:
        """A file from outside (a broker's log) copied in as ``name``."""
        self.declare(name)
        fs.write(self.path, name, Path(source).read_bytes())

    def complete(self, inputs=()) -> None:
        """The run finished: the files present and each of ``inputs``' digests recorded, the
        status written last."""
        present = [n for n in self.doc["files"] if (self.path / n).exists()]
        self.doc.update(status="complete", why="", ended=_now(), files=present,
                        digests={n: fs.digest(self.path, n, MAX_INPUT) for n in inputs
                                 if n in present})
        self._save()
        _unclaim(self.path)

    def incomplete(self, why: str) -> bool:
        """The run did not finish, for ``why``; whether that could be written down (a full
        disk or a read-only folder may prevent it: the manifest then still says ``running``,
        naming a process that will be gone, which readers take as incomplete)."""
        self.doc.update(status="incomplete", why=shown(why, 300), ended=_now())
        MARKED.append(self.path)
        try:
            self._save()
        except (OSError, FolderError):
            return self._save_in_place()
        finally:
            _unclaim(self.path)
        return True

    def _save_in_place(self) -> bool:
        """The manifest rewritten in place, when a new file cannot be made (a full disk has no
        block for one; the old manifest's blocks are reused): not atomic, the last resort."""
        data = (json.dumps(self.doc, indent=1, sort_keys=True) + "\n").encode()
        try:
            fd = os.open(self.path / NAME, os.O_WRONLY | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            os.ftruncate(fd, 0)
            os.write(fd, data)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, kind, e, tb) -> None:
        if e is not None and self.doc["status"] == "running":
            self.incomplete(why_of(e, self.phase))
        elif self.doc["status"] == "running":
            self.incomplete(f"it ended without finishing, while {self.phase}")


def usable(path: str | os.PathLike, flag: str = "--out") -> bool:
    """Whether ``path`` exists (a folder that ``take`` may take); ``FolderError`` if ``take``
    would refuse it. Changes nothing: a command checks its folder before it starts anything."""
    path = fs.folder_path(path, flag)
    where = f"{flag} {shown(path)}"
    try:
        os.stat(path)
    except FileNotFoundError:
        parent = Path(os.path.abspath(path)).parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if parent.is_dir() and not os.access(parent, os.W_OK | os.X_OK):
            raise FolderError(f"{where}: cannot create it ({shown(parent)} is not writable: "
                              f"{os.strerror(errno.EROFS if _read_only(parent) else errno.EACCES)})"
                              ) from None
        return False
    except NotADirectoryError:
        raise FolderError(f"{where}: a part of the path is a file, not a folder") from None
    except OSError as e:
        raise FolderError(f"{where}: {e.strerror or e}") from None
    if not os.path.isdir(path):
        raise FolderError(f"{where}: exists and is not a folder")
    try:
        entries = os.listdir(path)
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECTORY))
        fd, probe = tempfile.mkstemp(prefix=".kafka-mc-probe.", dir=path)   # writable?
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise FolderError(f"{where}: cannot write in it ({e.strerror or e})") from None
    if NAME not in entries:
        if entries:
            some = ", ".join(shown(n, 40) for n in sorted(entries)[:3]) + (
                ", ..." if len(entries) > 3 else "")
            raise FolderError(f"{where}: not empty and not a kafka-mc run folder (it holds "
                              f"{some}): give a new or empty folder")
        return True
    state, why = status(read(path))
    if state == "running":
        raise FolderError(f"{where}: in use ({why})")
    return True


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def why_of(e: BaseException, phase: str) -> str:
    """Why a run stopped, in a manifest's words."""
    if isinstance(e, Interrupted):
        return f"interrupted by {e.name} while {phase}"
    if isinstance(e, KeyboardInterrupt):
        return f"interrupted by SIGINT while {phase}"
    if isinstance(e, RunFailed):
        return f"{e} (while {phase})"
    return f"{type(e).__name__}: {' '.join(str(e).split())[:200]} (while {phase})"


def clear(path: Path, where: str) -> None:
    """Empty a folder of what its manifest lists, or refuse it: a folder that is neither empty
    nor a run folder is not kafka-mc's to write into."""
    try:
        entries = sorted(os.listdir(path))
    except OSError as e:
        raise FolderError(f"{where}: {e.strerror or e}") from None
    if NAME not in entries:
        if entries:
            raise FolderError(f"{where}: not empty and not a kafka-mc run folder (it holds "
                              f"{', '.join(shown(n, 40) for n in entries[:3])})")
        return
    doc = read(path)
    state, why = status(doc)
    if state == "running":
        raise FolderError(f"{where}: in use ({why})")
    names = set(doc["files"]) | set(doc["outputs"])
    for entry in entries:
        if entry in names or any(fs.temporary(n, entry) for n in (*names, NAME)):
            _remove(path / entry, where)
    for sub in doc["folders"]:
        if (path / sub).is_dir() and not (path / sub).is_symlink():
            clear(path / sub, f"{where}: {sub}")
            _remove(path / sub / NAME, where)
            try:
                os.rmdir(path / sub)
            except OSError:
                pass        # a file of the user's kept it
        elif os.path.lexists(path / sub):
            _remove(path / sub, where)


def _remove(path: Path, where: str) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            raise FolderError(f"{where}: {path.name} is a folder where the run wrote a file: "
                              "kafka-mc removes no folder it did not make")
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as e:
        raise FolderError(f"{where}: cannot remove {path.name} of the run before "
                          f"({e.strerror or e})") from None


def record_outputs(folder: Path, written=(), removed=()) -> None:
    """Validation wrote ``written`` (and removed ``removed``) in a run folder: its manifest lists
    them, so that a rerun replaces them (a folder without a manifest is left without one)."""
    doc = read(folder)
    if doc is None:
        return
    outputs = (set(doc["outputs"]) | set(written)) - set(removed)
    if sorted(outputs) != doc["outputs"]:
        doc["outputs"] = sorted(outputs)
        fs.write_json(folder, NAME, doc)


# --- runs killed outright ---------------------------------------------------------------------------

def _claim_dir() -> Path:
    return Path(tempfile.gettempdir())


def _claim_name(process: dict) -> str:
    return f"{CLAIM_PREFIX}{process['pid']}-{process['start']}.claim"


def _claim(path: Path) -> None:
    """A note in the temporary folder naming the folder this process writes, for the next
    command to find if this one is killed before it can mark the folder."""
    try:
        (_claim_dir() / _claim_name(this_process())).write_text(str(Path(path).absolute()))
    except OSError:
        pass


def _unclaim(path: Path) -> None:
    claim = _claim_dir() / _claim_name(this_process())
    try:
        if claim.read_text() == str(Path(path).absolute()):
            claim.unlink()
    except OSError:
        pass


def sweep_killed() -> list[Path]:
    """The folders of runs killed outright (their process gone, their manifest still
    ``running``), each marked incomplete; their claims removed."""
    marked = []
    for claim in _claim_dir().glob(f"{CLAIM_PREFIX}*.claim"):
        try:
            pid, start = claim.name[len(CLAIM_PREFIX):-len(".claim")].split("-")
            process = {"pid": int(pid), "start": None if start == "None" else int(start),
                       "boot": None}
        except ValueError:
            continue
        if alive(process):
            continue
        try:
            folder = Path(claim.read_text())
            doc = read(folder)
            if doc is not None and doc["status"] == "running" and \
                    doc["process"]["pid"] == process["pid"] and not alive(doc["process"]):
                doc.update(status="incomplete", ended=_now(), why=(
                    f"killed: its process {process['pid']} ended before the run finished "
                    f"(marked by kafka-mc process {os.getpid()})"))
                fs.write_json(folder, NAME, doc)
                marked.append(folder)
        except (OSError, ValueError):
            pass
        try:
            claim.unlink()
        except OSError:
            pass
    return marked
