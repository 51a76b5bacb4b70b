"""The wheel works anywhere (issue 45): built once per session from a copy of the checkout,
installed with only the core into a fresh environment outside the checkout, where `kafka-mc check
tiny`, `kafka-mc list models` and `replay` of a golden trace run from a temporary folder; a
feature of a missing extra says which; the compiled builds would go into the user's cache folder;
nothing is written into site-packages and no generic name is put there. A second environment
with every extra runs the Spark and symbolic explorers on small configurations.

Downloads go through pip's cache (make test's own install fills it), so after the first run
nothing is fetched; the full-extras environment is the slow part (pyspark: about 400 MB to
unpack). KAFKA_MC_NO_WHEEL=1: a listed skip (no network and an empty pip cache).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("kafka_mc", "model", "invariants", "explorers", "traces", "realkafka", "configs")
GOLDEN = ROOT / "tests" / "golden" / "kafka-0.11-tiny.no_hanging_transactions.itf.json"
GENERIC = {"model", "invariants", "explorers", "traces", "realkafka", "configs", "tests"}

pytestmark = pytest.mark.skipif(bool(os.environ.get("KAFKA_MC_NO_WHEEL")),
                                reason="KAFKA_MC_NO_WHEEL=1: the wheel's install test is off")


def _run(args, cwd, timeout=900, **env) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**_clean_env(), **env})


def _clean_env() -> dict:
    """This process's environment without what points into the checkout or its venv."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "KAFKA_MC_COMPILED_DIR", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    return env


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built once from a copy of the checkout's package folders (so no build/ or
    egg-info is written into the checkout)."""
    src = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src)
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, src / folder, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    out = tmp_path_factory.mktemp("wheel")
    started = time.monotonic()
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "--quiet", "-w", out, src], cwd=src, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    wheels = list(out.glob("kafka_mc-*.whl"))
    assert len(wheels) == 1, wheels
    print(f"wheel built in {time.monotonic() - started:.1f} s")
    return wheels[0]


def _environment(where: Path, requirement: str) -> tuple[Path, float]:
    """A fresh virtual environment at ``where`` with ``requirement`` installed (pip of this
    process installing into it); its bin folder and the install's seconds."""
    made = _run([sys.executable, "-m", "venv", "--without-pip", where], cwd=where.parent)
    assert made.returncode == 0, made.stderr
    python = where / "bin" / "python"
    started = time.monotonic()
    done = _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
                 "--disable-pip-version-check", requirement], cwd=where.parent, timeout=1500)
    if done.returncode != 0 and ("NewConnectionError" in done.stderr
                                 or "No matching distribution" in done.stderr):
        pytest.skip(f"cannot download the dependencies: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return where / "bin", time.monotonic() - started


def _site_packages(python: Path) -> Path:
    run = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               cwd=python.parent)
    return Path(run.stdout.strip())


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")
            if "__pycache__" not in p.parts}


def test_the_core_wheel_runs_the_readme_commands_from_any_folder(wheel, tmp_path):
    bin_, seconds = _environment(tmp_path / "core", str(wheel))
    print(f"core installed in {seconds:.1f} s")
    site = _site_packages(bin_ / "python")
    assert site.is_relative_to(tmp_path) and sysconfig.get_paths()["purelib"] != str(site)
    tops = {p.name for p in site.iterdir() if p.is_dir() and not p.name.endswith("-info")}
    assert "kafka_mc" in tops and not tops & GENERIC, tops
    before = _files(site / "kafka_mc")
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(GOLDEN, work / "golden.itf.json")
    kafka_mc = bin_ / "kafka-mc"
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home")}

    run = _run([kafka_mc, "check", "tiny"], cwd=work, **env)
    assert run.returncode == 0, run.stderr
    assert "Model checking completed. No error has been found." in run.stdout
    assert "[configs/tiny.toml]" in run.stdout.splitlines()[0]   # (the shipped name, not a path)

    run = _run([kafka_mc, "list", "models"], cwd=work, **env)
    assert run.returncode == 0, run.stderr
    assert {"kafka", "twophase", "twophase-broken"} <= {x.split()[0] for x in
                                                        run.stdout.splitlines() if x.strip()}

    run = _run([kafka_mc, "replay", "golden.itf.json"], cwd=work, **env)
    assert run.returncode == 12, run.stderr
    assert run.stdout.startswith("replayed 19 steps: no_hanging_transactions is violated")

    run = _run([kafka_mc, "list", "configs"], cwd=work, **env)
    assert run.returncode == 0 and "tiny" in run.stdout, run.stderr

    # the README's minimize example: a walk kept as found, then shrunk
    run = _run([kafka_mc, "check", "twophase-broken", "--set", "model.resource_managers=10",
                "--explorer", "simulate", "--no-minimize", "--seed", "2", "--out", "walk"],
               cwd=work, **env)
    assert run.returncode == 12, run.stderr
    run = _run([kafka_mc, "minimize", "walk/TCConsistent.itf.json", "--out",
                "walk.min.itf.json"], cwd=work, **env)
    assert run.returncode == 0 and run.stdout.startswith("minimized 28 steps to 5"), run.stderr

    # a feature whose extra is not installed: one line naming it, exit 2
    run = _run([kafka_mc, "check", "tiny", "--explorer", "symbolic"], cwd=work, **env)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == ("kafka-mc: error: this needs z3, which comes with the z3 extra: "
                          "pip install 'kafka-mc[z3]'\n")

    # the compiled builds would go into the user's cache folder, not into site-packages
    run = _run([bin_ / "python", "-m", "kafka_mc.model.build.cython_build", "status"], cwd=work,
               **env)
    assert run.returncode == 0, run.stderr
    assert f"({tmp_path / 'cache' / 'kafka-mc' / 'compiled'}" in run.stdout, run.stdout
    run = _run([bin_ / "python", "-m", "kafka_mc.model.build.cython_build"], cwd=work, **env)
    assert run.returncode == 0 and "Cython is not installed" in run.stderr, run.stderr

    # Kafka releases would be fetched into the user's cache folder too (kafka-mc real fetch)
    run = _run([kafka_mc, "real", "versions"], cwd=work, **env, KAFKA_MC_KAFKA_CACHE="")
    assert run.returncode == 0, run.stderr
    assert f"cache: {tmp_path / 'cache' / 'kafka-mc' / 'kafka'};" in run.stdout, run.stdout

    assert _files(site / "kafka_mc") == before   # nothing written beside the installed sources


def test_every_extra_runs_spark_and_the_symbolic_explorer(wheel, tmp_path):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("the Spark explorer needs Java 17+")
    bin_, seconds = _environment(tmp_path / "all", f"{wheel}[all]")
    print(f"every extra installed in {seconds:.1f} s")
    work = tmp_path / "elsewhere"
    work.mkdir()
    kafka_mc = bin_ / "kafka-mc"
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = _run([kafka_mc, "check", "twophase", "--set", "model.resource_managers=2",
                "--explorer", "spark", "--workers", "1"], cwd=work, timeout=600, **env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Model checking completed. No error has been found." in run.stdout
    run = _run([kafka_mc, "check", "tiny", "--explorer", "symbolic"], cwd=work, timeout=600,
               **env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "proved at k = 1" in run.stdout
