"""Build the compiled modules that ``kafka_mc.model.build.compiled`` loads (Cython; ``make`` runs this).

    python -m kafka_mc.model.build.cython_build [build]   # compile what changed, rewrite the manifest
    python -m kafka_mc.model.build.cython_build status    # in use, stale, not built

The modules are ``kafka_mc.model.build.compiled.MODULES``. Each is cythonized on its own (a module Cython
refuses runs as source), the C is compiled in parallel, a batch of as many modules as jobs at a
time, with a line of progress on stderr per module cythonized and per batch compiled (the whole
build takes minutes: ``make check`` runs it after the check's verdict), and each build is moved into the build
folder (``kafka_mc.model.build.compiled.BUILD``: a checkout's ``build/compiled/``, an installed copy's in
the user's cache folder) under a name carrying its source's digest; the manifest is written last, by
rename, and builds it no longer names are removed. Cython and setuptools come with the
``compiled`` extra (``pip install -e '.[compiled]'``); without them, or without a C compiler, this
says so and exits 0: everything then runs as source, only slower.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from pathlib import Path

from kafka_mc.model.build.compiled import (BUILD, MANIFEST, MODULES, ROOT, SUFFIX, SWITCH, digest, enabled,
                                  fresh, read_manifest, source_of)


# Python's semantics, unchanged: annotations are documentation (Cython would otherwise coerce an
# argument annotated ``int`` to a plain int, an IntEnum member included), and functions keep
# Python's introspection (binding).
DIRECTIVES = {"binding": True, "annotation_typing": False}


def listed() -> list[str]:
    """The modules to compile."""
    return list(MODULES)


def build(modules: list[str], root: Path = ROOT, out: Path = BUILD, jobs: int = 2,
          log=sys.stderr) -> dict:
    """Compile those of ``modules`` whose source changed since the manifest (or whose build is
    missing) and rewrite the manifest; returns its modules (those compiled and fresh)."""
    old = read_manifest(out)
    want = {m: digest(source_of(root, m)) for m in modules}
    built = {m: e for m, e in old.items() if m in want and fresh(root, out, m, e)}
    todo = [m for m in modules if m not in built]
    if todo:
        try:
            from Cython.Build import cythonize
            from setuptools import Distribution, Extension
        except ImportError as e:
            print(f"kafka_mc.model.build.cython_build: {e.name or e} is not installed, so every module runs as "
                  "source (pip install 'kafka-mc[compiled]')", file=log)
            todo = []
    if todo:
        out.mkdir(parents=True, exist_ok=True)
        lib = out / "lib"
        shutil.rmtree(lib, ignore_errors=True)
        exts = []
        print(f"kafka_mc.model.build.cython_build: {len(todo)} of {len(modules)} modules to "
              f"compile into {out} (Cython, then the C compiler with {jobs} jobs; a few "
              "minutes; until then they run as source)", file=log, flush=True)
        for i, m in enumerate(todo, start=1):   # one by one: a module Cython refuses costs it only
            print(f"  cython {i}/{len(todo)}: {m}", file=log, flush=True)
            try:
                with contextlib.chdir(root), contextlib.redirect_stderr(io.StringIO()):
                    # (relative sources, so the C goes under build_dir)
                    exts += _quietly(lambda: cythonize(
                        [Extension(m, [str(source_of(root, m).relative_to(root))])],
                        build_dir=str(out / "c"),
                        quiet=True, force=True, language_level=3,
                        compiler_directives=DIRECTIVES))
            except Exception as e:
                _refused(m, e, log)
        done = []
        for k in range(0, len(exts), jobs):   # a batch per job: progress between batches
            batch = exts[k:k + jobs]
            if _compile(batch, root, out, jobs, Distribution):   # a failure: find which
                for x in batch:
                    failure = _compile([x], root, out, 1, Distribution)
                    if failure:
                        _refused(x.name, f"the C compiler failed: {failure}", log)
                    else:
                        done.append(x.name)
            else:
                done += [x.name for x in batch]
            print(f"  cc {min(k + jobs, len(exts))}/{len(exts)}: "
                  f"{', '.join(x.name.rsplit('.', 1)[-1] for x in batch)}", file=log, flush=True)
        for m in done:
            if digest(source_of(root, m)) != want[m]:   # edited meanwhile: built next time
                continue
            binary = f"{m}-{want[m][:16]}{SUFFIX}"
            *package, name = m.split(".")
            os.replace(lib.joinpath(*package, name + SUFFIX), out / binary)
            built[m] = {"sha256": want[m], "binary": binary}
        shutil.rmtree(lib, ignore_errors=True)
    _write_manifest(out, built)
    for f in out.glob(f"*{SUFFIX}"):   # (a running search keeps its loaded file: unlinked only)
        if f.name not in {e["binary"] for e in built.values()}:
            f.unlink()
    return built


def _quietly(f):
    with contextlib.redirect_stdout(io.StringIO()):
        return f()


def _compile(exts, root: Path, out: Path, jobs: int, Distribution) -> str | None:
    """Compile ``exts`` into ``out/lib``; None, or why the compiler failed."""
    if not exts:
        return None

    def run():
        dist = Distribution({"ext_modules": exts, "script_name": "kafka_mc.model.build.cython_build"})
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib, cmd.build_temp, cmd.parallel = str(out / "lib"), str(out / "tmp"), jobs
        cmd.ensure_finalized()
        cmd.run()
    try:
        with contextlib.chdir(root), contextlib.redirect_stderr(io.StringIO()):
            _quietly(run)
    except (Exception, SystemExit) as e:   # (distutils reports a compiler error as SystemExit)
        return str(e) or type(e).__name__
    return None


def _refused(m: str, why, log) -> None:
    reason = str(why).strip().splitlines()
    print(f"kafka_mc.model.build.cython_build: {m} not compiled ({reason[-1] if reason else type(why).__name__});"
          " it runs as source", file=log)


def _write_manifest(out: Path, modules: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps({"suffix": SUFFIX, "modules": dict(sorted(modules.items()))},
                              indent=1) + "\n")
    os.replace(tmp, out / MANIFEST)


def status(root: Path = ROOT, out: Path = BUILD) -> tuple[list[str], list[str], list[str]]:
    """(fresh, stale, not built) among the listed modules."""
    entries = read_manifest(out)
    in_use, stale, missing = [], [], []
    for m in listed():
        e = entries.get(m)
        if e is None or not (out / e["binary"]).is_file():
            missing.append(m)
        elif fresh(root, out, m, e):
            in_use.append(m)
        else:
            stale.append(m)
    return in_use, stale, missing


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    modules = listed()
    if argv in ([], ["build"]):
        built = build(modules)
        print(f"kafka_mc.model.build.cython_build: {len(built)} of {len(modules)} listed modules compiled "
              f"({BUILD})")
        return 0
    if argv == ["status"]:
        in_use, stale, missing = status()
        off = "" if enabled() else f"; all switched off ({SWITCH}=0)"
        print(f"compiled and in use: {len(in_use)}; stale, run as source: {', '.join(stale) or 0}; "
              f"not built: {', '.join(missing) or 0}{off} ({BUILD})")
        return 0
    print("usage: python -m kafka_mc.model.build.cython_build [build|status]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
