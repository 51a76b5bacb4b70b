"""The README fits on a screen and every command in it runs as printed; so do the tutorial's and
the liveness guide's (the manual's pages with commands and their output; docs/extending.md's run
in tests/test_docs.py, with its example package on the path).

Commands are the lines starting with ``$ kafka-mc`` in a page's fenced ``console`` and ``sh``
blocks. Each page's run, in order, in one temporary folder laid out like the checkout's root (``configs``
and ``tests`` link to the repository's, so a README path such as ``tests/golden/...`` resolves,
and ``out/`` written by one command is read by the next), with a timeout of its own. A trailing
``# exit N`` comment is the exit code the command must give (without one: 0). A command marked
``# needs real Kafka`` or ``# needs a browser`` is not run: a real cluster and a browser session
are tested elsewhere (tests/realkafka/, tests/explorers/test_explore_browser.py). These two
markers are the only way to skip one.

The output printed under a command is shortened by hand, so only its verdict lines are compared:
every ``Error: ...`` and ``Model checking completed...`` line shown must be in what the command
prints, and so must the ``claim:`` and ``shortest counterexample:`` lines under it.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = (README, ROOT / "docs" / "tutorial.md", ROOT / "docs" / "guide" / "liveness.md")
MAX_BYTES = 12 * 1024
TIMEOUT = 120          # seconds, per command
SKIP = {"# needs real Kafka": "needs a real Kafka cluster (tests/realkafka/ runs one)",
        "# needs a browser": "serves a page for a browser (tests/explorers/test_explore_browser.py "
                             "drives one)"}
CHECKED = re.compile(r"^\s*(Error: .*|Model checking completed\..*|claim: .*|"
                     r"shortest counterexample: .*)$")


def commands(text: str) -> list[tuple[str, int | None, str | None, list[str]]]:
    """(command, expected exit, reason to skip, shown output lines) for each ``$ kafka-mc`` line
    of the fenced console/sh blocks, in order."""
    out = []
    for block in re.findall(r"^```(?:console|sh)\n(.*?)^```", text, re.S | re.M):
        current = None
        for line in block.splitlines():
            if line.startswith("$ "):
                current = None
            if line.startswith("$ kafka-mc"):
                command = line[2:]
                skip = next((why for mark, why in SKIP.items() if command.rstrip().endswith(mark)),
                            None)
                expected = 0
                m = re.search(r"\s+#\s*exit (\d+)\s*$", command)
                if m:
                    expected = int(m.group(1))
                command = re.sub(r"\s+#.*$", "", command)
                current = [command, expected, skip, []]
                out.append(current)
            elif current is not None:
                current[3].append(line)
    return [tuple(c) for c in out]


COMMANDS = [(page, i, *c) for page in PAGES for i, c in enumerate(commands(page.read_text()))]


def test_readme_fits_on_a_screen():
    size = len(README.read_bytes())
    assert size <= MAX_BYTES, f"README.md is {size} bytes, more than {MAX_BYTES}"


def test_readme_has_commands_and_no_design_md():
    assert len([c for c in COMMANDS if c[0] == README and c[4] is None]) >= 5
    assert "DESIGN.md" not in README.read_text()


def test_readme_parser():
    text = ("```console\n$ kafka-mc check tiny   # exit 12\nError: x\n$ ls\n"
            "$ kafka-mc real run tiny --version 4.4.0   # needs real Kafka\n```\n"
            "```\n$ kafka-mc not-a-command\n```\n")
    assert commands(text) == [("kafka-mc check tiny", 12, None, ["Error: x"]),
                              ("kafka-mc real run tiny --version 4.4.0", 0,
                               SKIP["# needs real Kafka"], [])]


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory):
    """Per page, a folder laid out like the checkout's root for its commands to run in, and the
    indices of the commands run there so far."""
    out = {}
    for page in PAGES:
        here = tmp_path_factory.mktemp(page.stem)
        for name in ("configs", "tests"):
            (here / name).symlink_to(ROOT / name)
        out[page] = here, {}
    return out


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert not set("|;&<>`$") & set(command), f"{command}: a shell construct; the test runs argv"
    exe = Path(sys.executable).parent / "kafka-mc"
    env = dict(os.environ, COLUMNS="200")
    try:
        return subprocess.run([str(exe), *argv[1:]], cwd=cwd, env=env, text=True,
                              capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"README: {command}: still running after {TIMEOUT} s")


@pytest.mark.parametrize("page,index", [(c[0], c[1]) for c in COMMANDS],
                         ids=[f"{c[0].stem}:{c[2][len('kafka-mc '):]}" for c in COMMANDS])
def test_command_runs_as_printed(page, index, checkouts):
    listed = commands(page.read_text())
    command, expected, skip, shown = listed[index]
    if skip:
        pytest.skip(f"{page.name}: {command}: {skip}")
    cwd, ran = checkouts[page]
    for earlier in range(index):   # what a reader ran before (a test selected alone with -k)
        if earlier not in ran and listed[earlier][2] is None:
            ran[earlier] = _run(listed[earlier][0], cwd)
    done = ran[index] = _run(command, cwd)
    assert done.returncode == expected, (
        f"{page.name}: {command}: exit {done.returncode}, the page says {expected}\n"
        f"{done.stderr[-2000:]}")
    assert "Traceback" not in done.stderr, done.stderr
    printed = {line.strip() for line in done.stdout.splitlines()}
    for line in shown:
        if CHECKED.match(line):
            assert line.strip() in printed, f"{page.name}: {command}: shows {line.strip()!r}, " \
                                            "which the command does not print"
