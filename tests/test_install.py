"""What an installed kafka-mc must do wherever it runs (issue 45; the wheel itself:
tests/test_wheel.py): importing any of its modules changes no process-wide setting (the
command's entry makes them, explorers/main.py); a feature whose extra is not installed says which
in one line, exit 2; the compiled builds go into a checkout's build/compiled or the user's cache
folder, never beside installed sources.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.model.build import compiled

ROOT = Path(__file__).resolve().parent.parent

SIDE_EFFECTS = """
import importlib, os, pkgutil, signal, sys
def settings():
    return (list(sys.meta_path), dict(os.environ), signal.getsignal(signal.SIGINT),
            signal.getsignal(signal.SIGTERM), list(sys.path_hooks), sys.getswitchinterval())
before = settings()
from kafka_mc import model
from kafka_mc import invariants
from kafka_mc import explorers
from kafka_mc import traces
from kafka_mc import realkafka
names = []
for pkg in (model, invariants, explorers, traces, realkafka):
    names += [i.name for i in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
              if not i.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
after = settings()
print(len(names), *[i for i, (b, a) in enumerate(zip(before, after)) if b != a])
"""


def _python(code: str, cwd: Path, **env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS",)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env={**base, "PYTHONPATH": str(ROOT), **env}, timeout=300)


def test_importing_every_module_changes_no_process_wide_setting(tmp_path):
    """sys.meta_path (the compiled builds' finder), the environment (OpenBLAS's threads), the
    SIGINT and SIGTERM handlers, the path hooks: the same after importing every module."""
    run = _python(SIDE_EFFECTS, tmp_path)
    assert run.returncode == 0, run.stderr
    count, *changed = run.stdout.split()
    assert int(count) > 100 and changed == [], run.stdout


ENTRY = """
import os, signal, sys
from kafka_mc.explorers.main import prepare
prepare()
from kafka_mc.model.build.compiled import CompiledFinder
print(os.environ["OPENBLAS_NUM_THREADS"], signal.getsignal(signal.SIGINT).__name__,
      any(isinstance(f, CompiledFinder) for f in sys.meta_path))
"""


def test_the_commands_entry_makes_the_settings(tmp_path):
    run = _python(ENTRY, tmp_path, KAFKA_MC_COMPILED="1")
    assert run.returncode == 0, run.stderr
    threads, handler, finder = run.stdout.split()
    assert (threads, handler) == ("1", "interrupted_early")
    assert finder == str(bool(compiled.read_manifest(compiled.BUILD)))


BLOCKED = """
import sys
for m in sys.argv[1].split(","):
    sys.modules[m] = None
from kafka_mc.explorers.main import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("blocked, extra, command", [
    ("z3", "z3", "check twophase --explorer symbolic"),
    ("hypothesis", "stateful", "check twophase --explorer stateful"),
    ("uvicorn", "web", "explore tiny --port 0"),
    ("starlette", "web", "explore tiny --port 0"),
    ("kio", "real", "real run tiny --version 4.4.0"),
    ("kio", "real", "real cluster --version 4.4.0"),
])
def test_a_missing_extra_is_one_line_naming_it(tmp_path, blocked, extra, command):
    run = subprocess.run([sys.executable, "-c", BLOCKED, blocked, *command.split()],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == (f"kafka-mc: error: this needs {blocked}, which comes with the {extra} "
                          f"extra: pip install 'kafka-mc[{extra}]'\n")


def test_spark_without_pyspark_names_the_extra(tmp_path):
    run = subprocess.run([sys.executable, "-c", BLOCKED, "pyspark", "check", "twophase",
                          "--explorer", "spark"], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert run.returncode == 2
    assert run.stderr == ("kafka-mc: error: the spark explorer needs pyspark, which comes with "
                          "the spark extra: pip install 'kafka-mc[spark]'\n")


def test_the_builds_folder_is_never_beside_installed_sources(tmp_path, monkeypatch):
    """A checkout (pyproject.toml beside the packages) builds into its build/compiled; an
    installed copy into the user's cache folder, one folder per install."""
    monkeypatch.delenv(compiled.DIR_SWITCH, raising=False)
    assert compiled.build_folder(ROOT) == ROOT / "build" / "compiled"
    assert compiled.BUILD == compiled.build_folder(compiled.ROOT)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    site = tmp_path / "site-packages"
    site.mkdir()
    there = compiled.build_folder(site)
    assert there.parent == tmp_path / "cache" / "kafka-mc" / "compiled"
    assert compiled.build_folder(tmp_path / "other") != there
    monkeypatch.setenv(compiled.DIR_SWITCH, str(tmp_path / "mine"))
    assert compiled.build_folder(site) == tmp_path / "mine"


def test_the_compiled_list_names_modules_that_exist():
    """The list is code (kafka_mc.model.build.compiled.MODULES), not read from pyproject.toml at run
    time; each names a module of kafka-mc's."""
    assert len(compiled.MODULES) >= 20 and len(set(compiled.MODULES)) == len(compiled.MODULES)
    for m in compiled.MODULES:
        assert compiled.source_of(compiled.ROOT, m).is_file(), m
    assert "[tool.kafka-mc]" not in (ROOT / "pyproject.toml").read_text()
