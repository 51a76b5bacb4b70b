"""The code passes the linter: ``ruff check`` with the rules pyproject.toml selects ([tool.ruff])."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


def test_ruff_check_passes():
    assert RUFF, "ruff is not installed (pip install -e . installs it with kafka-mc)"
    run = subprocess.run([RUFF, "check", "--no-cache", "--output-format", "concise", str(ROOT)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
