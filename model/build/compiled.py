"""Compiled builds of the search's hot modules (Cython), used only while their sources are unchanged.

A search spends its time in the interpreter, spread thin over the model's handlers, the symmetry
and reduction views, the properties and the BFS loop (about 20 us a transition, no function above
a tenth of it: bench/RESULTS.md). Cython compiles those same ``.py`` files, unannotated, to C
extension modules that run them 1.3-1.4x faster; the Python source stays the only source, and
every behaviour (counts, order, traces) is the interpreted one's.

* ``python -m kafka_mc.model.build.cython_build`` (``make`` runs it) compiles the modules listed in
  ``MODULES`` (below) into the build folder (``BUILD``) and writes its ``MANIFEST.json``: each
  module's build and its source's SHA-256. It rebuilds only what changed. Without Cython or a C
  compiler it says so on stderr, and everything runs as source.
  ``python -m kafka_mc.model.build.cython_build status``: which builds are in use, and which are stale.
* The build folder: in a checkout (a ``pyproject.toml`` beside the packages) ``build/compiled/``
  of the checkout; in an installed copy the user's cache folder (``$XDG_CACHE_HOME``, else
  ``~/.cache``), ``kafka-mc/compiled/<a digest of the install's folder>``: never beside the
  installed sources (site-packages). ``KAFKA_MC_COMPILED_DIR`` names another.
* ``install()`` puts a finder first on ``sys.meta_path``. It is a process-wide setting, so only a
  process's entry calls it, before it imports the listed modules: the ``kafka-mc`` command
  (``kafka_mc.explorers.main``), Spark's Python daemon (``kafka_mc.explorers.spark.daemon``), the test suite
  (tests/conftest.py), the benchmarks; importing a kafka-mc module never does. The finder loads
  a listed module's build only if the source's digest still matches the manifest and the build
  is for this interpreter; otherwise the source, as always. An edited module runs as written,
  never a stale build.
* ``KAFKA_MC_COMPILED=0`` turns the builds off (to debug with pdb, or to compare;
  tests/test_compiled.py holds the two to the same counts and traces).

One difference is not a result but memory: compiled, the inner functions of a function share one
closure object, so an inner function calling another is a cycle through it, kept until the
search ends since the BFS pauses the cyclic collector (``kafka_mc.explorers.core.adapter.gc_paused``). Listed
modules keep inner functions from calling each other (tests/test_compiled.py measures the
garbage a search leaves, compiled and not).

A build's ``__file__`` is its source's (``tables.py`` finds its data beside it); its loader is
a ``CompiledLoader``. This module imports nothing of kafka-mc's and is never itself compiled.
A build's file name carries its source's digest and is written by rename, so rebuilding never
rewrites a file that a running search has loaded.
"""
from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
from pathlib import Path

# The modules compiled (the successor function, the views, the properties and the BFS loop): a
# module named here and edited runs as source until rebuilt.
MODULES = (
    "kafka_mc.model.core", "kafka_mc.model.fingerprints", "kafka_mc.model.display", "kafka_mc.model.symmetry", "kafka_mc.model.canonical",
    "kafka_mc.model.symbolic",
    "kafka_mc.model.kafka.world", "kafka_mc.model.kafka.spec", "kafka_mc.model.kafka.network", "kafka_mc.model.kafka.capabilities.symmetry",
    "kafka_mc.model.kafka.producer", "kafka_mc.model.kafka.coordinator", "kafka_mc.model.kafka.partition",
    "kafka_mc.model.kafka.tables", "kafka_mc.model.kafka.client", "kafka_mc.model.kafka.consumer", "kafka_mc.model.kafka.faults",
    "kafka_mc.model.kafka.capabilities.footprints", "kafka_mc.model.kafka.group_coordinator",
    "kafka_mc.invariants.anomalies", "kafka_mc.invariants.atomicity", "kafka_mc.invariants.duplicates", "kafka_mc.invariants.fencing",
    "kafka_mc.invariants.hanging", "kafka_mc.invariants.history", "kafka_mc.invariants.isolation", "kafka_mc.invariants.offsets",
    "kafka_mc.invariants.transitions",
    "kafka_mc.explorers.bfs.search", "kafka_mc.explorers.bfs.workers", "kafka_mc.explorers.core.checking",
    "kafka_mc.explorers.reductions.symmetry_check", "kafka_mc.explorers.reductions.por",
    "kafka_mc.model.toys.twophase",
)

# The folder that holds the top-level package (this module is <ROOT>/<package>/.../compiled.py,
# not resolved: a checkout's symbolic links stay as the import system sees them).
ROOT = Path(__file__).parents[__name__.count(".")] if "." in __name__ else Path(__file__).parent
DIR_SWITCH = "KAFKA_MC_COMPILED_DIR"


def build_folder(root: Path = ROOT) -> Path:
    """Where the builds of ``root``'s modules go: a checkout's ``build/compiled``, else the user's
    cache folder (never site-packages); ``$KAFKA_MC_COMPILED_DIR`` wins."""
    if os.environ.get(DIR_SWITCH):
        return Path(os.environ[DIR_SWITCH])
    if (root / "pyproject.toml").is_file():
        return root / "build" / "compiled"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    where = hashlib.sha256(str(root.absolute()).encode()).hexdigest()[:16]
    return Path(cache) / "kafka-mc" / "compiled" / where


BUILD = build_folder()
MANIFEST = "MANIFEST.json"
SWITCH = "KAFKA_MC_COMPILED"
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]   # this interpreter's (e.g. .cpython-311-...)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_of(root: Path, module: str) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def fresh(root: Path, build: Path, module: str, entry: dict) -> bool:
    """Whether ``module``'s build (its manifest ``entry``) is there and of its source as it is."""
    try:
        return (build / entry["binary"]).is_file() \
            and digest(source_of(root, module)) == entry["sha256"]
    except OSError:
        return False


def read_manifest(build: Path) -> dict:
    """module -> {"sha256": source digest, "binary": path under ``build``}; {} when there is no
    usable manifest (missing, unreadable, or built for another interpreter)."""
    try:
        data = json.loads((build / MANIFEST).read_text())
        if data.get("suffix") != SUFFIX or not isinstance(data.get("modules"), dict):
            return {}
        return {m: e for m, e in data["modules"].items()
                if isinstance(e, dict) and isinstance(e.get("sha256"), str)
                and isinstance(e.get("binary"), str)}
    except (OSError, ValueError, AttributeError):
        return {}


class CompiledLoader(importlib.machinery.ExtensionFileLoader):
    """Loads a module's build; its ``__file__`` is its source's."""

    def __init__(self, name: str, binary: str, source: str):
        super().__init__(name, binary)
        self.source = source

    def exec_module(self, module) -> None:
        module.__file__ = self.source   # (set from the build's path when the module was created)
        super().exec_module(module)


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds the fresh builds of one source tree; defers everything else to the usual finders."""

    def __init__(self, root: Path, build: Path):
        self.root, self.build = root, build
        self.entries = read_manifest(build)
        self.loaded: list[str] = []
        self.stale: list[str] = []

    def find_spec(self, fullname, path=None, target=None):
        entry = self.entries.get(fullname)
        if entry is None:
            return None
        if not fresh(self.root, self.build, fullname, entry):
            self.stale.append(fullname)
            return None
        self.loaded.append(fullname)
        source, binary = source_of(self.root, fullname), self.build / entry["binary"]
        loader = CompiledLoader(fullname, str(binary), str(source))
        return importlib.machinery.ModuleSpec(fullname, loader, origin=str(binary))


def enabled() -> bool:
    return os.environ.get(SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def install(root: Path = ROOT, build: Path = BUILD) -> CompiledFinder | None:
    """Put the finder of ``root``'s builds first on ``sys.meta_path`` (once); None when the builds
    are switched off or there are none."""
    for f in sys.meta_path:
        if isinstance(f, CompiledFinder) and f.root == root:
            return f
    if not enabled():
        return None
    finder = CompiledFinder(root, build)
    if not finder.entries:
        return None
    sys.meta_path.insert(0, finder)
    return finder
