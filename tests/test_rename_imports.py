"""tools/rename_imports.py (docs/design.md section 10): every import form and module name in
strings is rewritten to its kafka_mc name, once (a second run changes nothing), and the tree holds
no old name (a branch merged with code written with the old names: run the script again)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "rename_imports.py"
OLD = "model"

spec = importlib.util.spec_from_file_location("rename_imports", SCRIPT)
rename = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rename)


def test_the_tree_holds_no_old_import_name():
    run = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_form_is_rewritten_once():
    r = rename.Renamer(ROOT)
    before = (
        f"import {OLD}\n"
        f"import {OLD}.kafka.spec\n"
        f"import {OLD}.core as c\n"
        f"from {OLD} import registry\n"
        f"from {OLD}.config import (\n    Param,\n)\n"
        "from .x import y\n"
        "import os, traces\n"
        "def f():\n"
        f"    import {OLD}.registry  # noqa: F401 -- kept\n"
        f"    import {OLD}.codec\n"
        f"X = ['-m', 'explorers.cli', '{OLD}.kafka.spec:MODEL', '{OLD}.clients', 'tests/{OLD}.py']\n"
        f"CODE = 'import sys; from explorers.main import main; import {OLD}; explorers.main.x'\n")
    after = r.python(before)
    assert after == (
        f"from kafka_mc import {OLD}\n"
        f"from kafka_mc import {OLD}\nimport kafka_mc.{OLD}.kafka.spec  # noqa: F401\n"
        f"import kafka_mc.{OLD}.core as c\n"
        f"from kafka_mc.{OLD} import registry\n"
        f"from kafka_mc.{OLD}.config import (\n    Param,\n)\n"
        "from .x import y\n"
        "import os\nfrom kafka_mc import traces\n"
        "def f():\n"
        f"    from kafka_mc import {OLD}\n    import kafka_mc.{OLD}.registry  # noqa: F401 -- kept\n"
        f"    import kafka_mc.{OLD}.codec  # noqa: F401\n"
        f"X = ['-m', 'kafka_mc.explorers.cli', 'kafka_mc.{OLD}.kafka.spec:MODEL', '{OLD}.clients', "
        f"'tests/{OLD}.py']\n"
        "CODE = 'import sys; from kafka_mc.explorers.main import main; from kafka_mc import "
        f"{OLD}; kafka_mc.explorers.main.x'\n")
    assert r.python(after) == after


def test_pyproject_entry_points_and_the_contract():
    r = rename.Renamer(ROOT)
    before = (
        '[project.scripts]\n'
        'kafka-mc = "explorers.main:main"\n'
        '[project.entry-points."kafka_mc.models"]\n'
        f'kafka = "{OLD}.kafka.spec:MODEL"\n'
        '[project.entry-points."kafka_mc.properties"]\n'
        'kafka = "invariants:PROPERTIES"\n'
        "[tool.setuptools.package-data]\n"
        f'"{OLD}.kafka" = ["data/*.json"]\n'
        "[tool.importlinter]\n"
        f'root_packages = ["{OLD}", "explorers"]\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "Layers: explorers over traces"\n'
        'layers = ["explorers", "traces"]\n'
        "[[tool.importlinter.contracts]]\n"
        'containers = ["explorers"]\n'
        'layers = [\n    "cli",\n    "web | spark",\n]\n'
        'ignore_imports = ["explorers.cli.__main__ -> explorers.main"]\n'
        "[[tool.importlinter.contracts]]\n"
        f'source_modules = ["{OLD}"]\n'
        f'forbidden_modules = ["{OLD}.kafka", "invariants"]  # "explorers" stays in a comment\n')
    after = r.pyproject(before)
    assert after == (
        '[project.scripts]\n'
        'kafka-mc = "kafka_mc.explorers.main:main"\n'
        '[project.entry-points."kafka_mc.models"]\n'
        f'kafka = "kafka_mc.{OLD}.kafka.spec:MODEL"\n'
        '[project.entry-points."kafka_mc.properties"]\n'
        'kafka = "kafka_mc.invariants:PROPERTIES"\n'
        "[tool.setuptools.package-data]\n"
        f'"kafka_mc.{OLD}.kafka" = ["data/*.json"]\n'
        "[tool.importlinter]\n"
        'root_packages = ["kafka_mc"]\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "Layers: explorers over traces"\n'
        'layers = ["kafka_mc.explorers", "kafka_mc.traces"]\n'
        "[[tool.importlinter.contracts]]\n"
        'containers = ["kafka_mc.explorers"]\n'
        'layers = [\n    "cli",\n    "web | spark",\n]\n'
        'ignore_imports = ["kafka_mc.explorers.cli.__main__ -> kafka_mc.explorers.main"]\n'
        "[[tool.importlinter.contracts]]\n"
        f'source_modules = ["kafka_mc.{OLD}"]\n'
        f'forbidden_modules = ["kafka_mc.{OLD}.kafka", "kafka_mc.invariants"]  '
        '# "explorers" stays in a comment\n')
    assert r.pyproject(after) == after
