"""Puts the repository root on sys.path, so tests import ``tests.grid`` and run in subprocesses;
makes the process-wide settings the ``kafka-mc`` command's entry makes (explorers/main.py:
OpenBLAS's threads, the compiled builds' finder), which importing kafka-mc does not; sets the
output's width (``COLUMNS=120``, as when standard output is not a terminal); skips the
long fuzz suite (``@pytest.mark.fuzz``) unless asked for: ``-m fuzz`` or KAFKA_MC_FUZZ=1."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Output's width, the same whatever the terminal the suite runs in: readline may have exported the
# terminal's own (ncurses sets COLUMNS), which the commands the tests start would follow.
os.environ["COLUMNS"] = "120"
from kafka_mc.model.build.compiled import install  # noqa: E402

install()


def pytest_collection_modifyitems(config, items):
    import pytest

    if os.environ.get("KAFKA_MC_FUZZ") or "fuzz" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="the long fuzz suite: -m fuzz or KAFKA_MC_FUZZ=1")
    for item in items:
        if "fuzz" in item.keywords:
            item.add_marker(skip)
