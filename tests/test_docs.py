"""The manual (docs/, mkdocs.yml) builds in strict mode: a broken link, a missing page or a page
left out of the navigation fails. Its reference pages are generated from the code at build time
(docs/gen/reference.py, a MkDocs hook), so they cannot drift; the tests here check that they
cover what the code declares."""
from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("mkdocs", reason="the manual needs the docs extra: pip install -e '.[docs]' "
                                     "(make installs it)")


def _generator():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs/gen/reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_manual_builds_in_strict_mode(tmp_path):
    # (not --quiet: it hides the warnings that strict mode counts, and the build passes)
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    for page in ("index.html", "tutorial/index.html", "design/index.html",
                 "reference/cli/index.html", "reference/configuration/index.html",
                 "reference/kafka-model/index.html", "reference/traces/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "--site-dir", str(site)], cwd=ROOT, text=True, capture_output=True,
                          timeout=300, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))


def test_a_broken_link_fails_the_build(tmp_path):
    """The build is strict indeed: the same site with one broken link does not build."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    with open(tmp_path / "docs" / "tutorial.md", "a") as f:
        f.write("\nSee [a page that is not there](no-such-page.md).\n")
    config = (ROOT / "mkdocs.yml").read_text().replace(
        "docs_dir: docs", f"docs_dir: {tmp_path / 'docs'}").replace(
        "  - docs/gen/reference.py", f"  - {ROOT / 'docs/gen/reference.py'}")
    (tmp_path / "mkdocs.yml").write_text(config)
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stderr, done.stderr[-2000:]


def test_cli_reference_lists_every_command_and_flag():
    from kafka_mc.explorers.cli import build_parser
    import argparse
    page = _generator().cli_page()

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    assert f"## `{prefix} {name}`" in page or f"# `{prefix} {name}`" in page
                    walk(sub, f"{prefix} {name}")
            elif action.help != argparse.SUPPRESS:
                for option in action.option_strings:
                    if option not in ("-h", "--help"):
                        assert f"`{option}" in page, f"{prefix} {option}"
    walk(build_parser(), "kafka-mc")


def test_configuration_reference_lists_every_key():
    from kafka_mc.model import registry
    from kafka_mc.model.config import CHECK_PARAMS
    page = _generator().configuration_page()
    keys = [p.key for p in CHECK_PARAMS] + [p.key for e in registry.models().values()
                                            for p in e.params]
    for key in keys:
        assert f"`{key}`" in page, key


def test_model_reference_lists_faults_presets_and_properties():
    from kafka_mc import invariants
    from kafka_mc.model.kafka import faults, versions
    page = _generator().kafka_model_page()
    for f in faults.FAULTS:
        assert f"`faults.{f.budget}`" in page
    for preset in versions.PRESETS:
        assert f"### `{preset}`" in page
    for p in invariants.PROPERTIES:
        assert f"| `{p.name}` |" in page


def test_extending_worked_example_runs_as_printed(tmp_path):
    """docs/extending.md's package (its titled code blocks) installed as a distribution would be
    (a .dist-info with its entry points beside it on the path), then its console commands run
    as printed: exit codes from '# exit N', verdict lines compared."""
    text = (ROOT / "docs" / "extending.md").read_text()
    files = dict(re.findall(r'^```\w+ title="([^"]+)"\n(.*?)^```', text, re.S | re.M))
    assert {"pyproject.toml", "my_models/counter.py"} <= set(files)
    package = tmp_path / "pkg"
    for name, body in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(body)
    (package / "my_models" / "__init__.py").write_text("")
    project = tomllib.loads(files["pyproject.toml"])["project"]
    info = package / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
        for group, eps in project["entry-points"].items()))
    env = dict(os.environ, PYTHONPATH=str(package), COLUMNS="200")
    exe = Path(sys.executable).parent / "kafka-mc"
    blocks = re.findall(r"^```console\n(.*?)^```", text, re.S | re.M)
    ran = 0
    for block in blocks:
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("$ kafka-mc"):
                continue
            m = re.search(r"\s+#\s*exit (\d+)\s*$", line)
            command = re.sub(r"\s+#.*$", "", line[2:])
            shown = [x.strip() for x in itertools.takewhile(lambda x: not x.startswith("$"),
                                                             lines[i + 1:])]
            done = subprocess.run([str(exe), *shlex.split(command)[1:]], cwd=tmp_path, env=env,
                                  text=True, capture_output=True, timeout=120)
            assert done.returncode == (int(m.group(1)) if m else 0), (command, done.stderr)
            printed = done.stdout.splitlines()
            for x in shown:
                if x.startswith(("Error:", "claim:", "shortest counterexample:", "replayed",
                                 "Model checking completed", "counter")) or x[:1].isdigit():
                    assert any(p.strip() == x for p in printed), (command, x)
            ran += 1
    assert ran >= 4


PACKAGES = ("model", "invariants", "explorers", "traces", "realkafka")
PATH = re.compile(r"^(?:%s|tests|configs|docs|bench)/[\w./-]*$" % "|".join(PACKAGES))
MODULE = re.compile(r"^(?:%s)(?:\.\w+)+$" % "|".join(PACKAGES))


def _named(text: str):
    """The file paths and dotted module names in a page's code spans and code blocks."""
    for span in re.findall(r"`([^`\n]+)`", text) + re.findall(r"[\w./-]+\.py\b", text):
        for token in re.findall(r"[\w./:*-]+", span):
            token = token.rstrip(".:,")
            if PATH.match(token) or MODULE.match(token):
                yield token.split(":")[0]


def test_paths_and_modules_the_manual_names_exist():
    """Every path (model/kafka/faults.py, tests/golden/) and module (explorers.checking) that the
    README and the manual name exists, so a move shows here: one list of what to fix."""
    from kafka_mc.model import registry
    from kafka_mc.model.config import CHECK_PARAMS
    keys = {p.key for p in CHECK_PARAMS} | {p.key for e in registry.models().values()
                                           for p in e.params} | {"model.name", "model.mutant",
                                                               "model.clients"}  # extending.md's
    stale = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for name in _named(page.read_text()):
            if "/" in name:
                if not (ROOT / name.rstrip("/")).exists() and not list(ROOT.glob(name)) \
                        and not name.startswith("docs/reference/"):   # (generated at build)
                    stale.add(f"{page.relative_to(ROOT)}: {name}")
                continue
            if name in keys or any(name.startswith(k + ".") for k in keys):
                continue
            parts = name.split(".")   # a module, or an attribute of one (model.core.fingerprint)
            if not any(_module_exists(parts[:n]) for n in range(len(parts), 1, -1)):
                stale.add(f"{page.relative_to(ROOT)}: {name}")
    assert not stale, "named but not there:\n" + "\n".join(sorted(stale))


def _module_exists(parts) -> bool:
    """Whether the repository's folders hold that module (named by its folders: the manual names
    ``kafka_mc.model.core`` for model/core.py, installed as kafka_mc.model.core)."""
    base = ROOT.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def test_manual_names_no_design_md_outside_it():
    """DESIGN.md lives in the manual now (docs/design.md)."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        assert "DESIGN.md" not in path.read_text(), path
