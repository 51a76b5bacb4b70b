"""The examples of the README and the manual are the tool's own output: this runs them and writes
what they print under them (``make examples``); ``--check`` only says which differ (exit 1).
tests/test_readme.py runs the same commands and fails while a page differs from what they print.

A page's examples are the ``$ kafka-mc ...`` lines of its fenced ``console`` blocks. Each page
runs them in order, in one temporary folder laid out like the checkout's root (``configs`` and
``tests`` link to the repository's; ``out/`` written by one command is read by the next), with
the checkout's code (``python -m kafka_mc``, the checkout first on the path), standard output
not a terminal and ``COLUMNS=120``. Under a command, its standard output:

* in full, when the lines shown under it do not end with a line ``...``;
* up to its first blank line (the verdict, the counterexample and the search's figures of a
  ``check``), then ``...``, when they do.

A trailing ``# exit N`` on the command is the exit code it must give (without one: 0). A command
marked ``# needs real Kafka`` or ``# needs a browser`` is not run: its output is written by hand
(real runs are tested in tests/realkafka/, the browser in tests/explorers/test_explore_browser.py).
Figures that change from run to run (seconds, states per second, memory) are compared as
placeholders, and written as the run printed them.

    python tools/examples.py [PAGE ...]        # rewrite the pages' examples (default: all)
    python tools/examples.py --force [PAGE ...]  # ... their run-to-run figures too
    python tools/examples.py --check [PAGE ...]
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = (ROOT / "README.md", ROOT / "docs" / "tutorial.md", ROOT / "docs" / "guide" / "liveness.md")
TIMEOUT = 600          # seconds, per command (the default check takes about a minute as source)
CUT = "..."
SKIP = {"# needs real Kafka": "needs a real Kafka cluster (tests/realkafka/ runs one)",
        "# needs a browser": "serves a page for a browser (tests/explorers/test_explore_browser.py "
                             "drives one)"}
# What differs from one run to the next: compared as a placeholder.
VOLATILE = (
    (re.compile(r"\d[\d,]*\.\d+ s \([\d,]+ distinct states/s\)"), "<time>"),
    (re.compile(r"peak memory \d+ MB \(\d+ bytes per state\)"), "peak memory <memory>"),
    (re.compile(r"\d+ bytes per state in memory"), "<bytes> per state in memory"),
    (re.compile(r"liveness \d+\.\d+ s"), "liveness <time>"),
    (re.compile(r"[\d,]+ steps/s"), "<rate> steps/s"),
)


@dataclass
class Example:
    """One ``$ kafka-mc`` line of a page and the lines shown under it (``start``, ``end``: their
    line numbers in the page, the command's own included at ``start``)."""
    command: str          # without its trailing comment
    expected: int         # the exit code it must give
    skip: str | None      # why it is not run
    shown: list[str]
    start: int
    end: int

    @property
    def cut(self) -> bool:
        return bool(self.shown) and self.shown[-1] == CUT


def examples(text: str) -> list[Example]:
    """The page's examples, in order."""
    out: list[Example] = []
    lines = text.splitlines()
    block, current = None, None
    for n, line in enumerate(lines):
        if line.startswith("```"):
            if block is None:
                block = line[3:].strip()
            else:
                block, current = None, None
            continue
        if block not in ("console", "sh"):
            continue
        if line.startswith("$ "):
            current = None
            if line.startswith("$ kafka-mc"):
                command = line[2:]
                skip = next((why for mark, why in SKIP.items()
                             if command.rstrip().endswith(mark)), None)
                m = re.search(r"\s+#\s*exit (\d+)\s*$", command)
                current = Example(re.sub(r"\s+#.*$", "", command), int(m.group(1)) if m else 0,
                                  skip, [], n, n + 1)
                out.append(current)
        elif current is not None and block == "console":
            current.shown.append(line)
            current.end = n + 1
    return out


def shown(stdout: str, cut: bool) -> list[str]:
    """What the page shows of a command's standard output (the module's docstring)."""
    lines = stdout.rstrip("\n").splitlines()
    if cut and "" in lines:
        return lines[:lines.index("")] + [CUT]
    return lines


def normal(lines: list[str]) -> list[str]:
    """The lines with what changes from run to run as placeholders."""
    out = []
    for line in lines:
        for pattern, placeholder in VOLATILE:
            line = pattern.sub(placeholder, line)
        out.append(line)
    return out


def checkout(folder: Path) -> Path:
    """``folder`` laid out like the checkout's root, for a page's commands to run in."""
    for name in ("configs", "tests"):
        if not (folder / name).exists():
            (folder / name).symlink_to(ROOT / name)
    return folder


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` (``kafka-mc ...``, no shell) run with the checkout's code in ``cwd``."""
    if set("|;&<>`$") & set(command):
        raise ValueError(f"{command}: a shell construct; examples run argv")
    argv = shlex.split(command)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(COLUMNS="120", PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, "-m", "kafka_mc", *argv[1:]], cwd=cwd, env=env,
                          text=True, capture_output=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)


def rewrite(page: Path, check: bool = False, log=print, force: bool = False) -> list[str]:
    """Run the page's examples and write what they print under them (unless ``check``; only
    when one differs beyond its volatile figures, unless ``force``); the commands whose output
    differs from what the page shows, or that failed."""
    text = page.read_text()
    lines = text.splitlines()
    differ = []
    with tempfile.TemporaryDirectory(prefix="kafka-mc-examples-") as tmp:
        cwd = checkout(Path(tmp))
        done = {}
        for ex in examples(text):
            if ex.skip:
                continue
            log(f"{page.name}: $ {ex.command}")
            result = run(ex.command, cwd)
            if result.returncode != ex.expected or "Traceback" in result.stderr:
                differ.append(f"{ex.command}: exit {result.returncode}, the page says "
                              f"{ex.expected}: {result.stderr.strip()[-500:]}")
                continue
            new = shown(result.stdout, ex.cut)
            if normal(new) != normal(ex.shown):
                differ.append(ex.command)
            done[ex.start] = (ex, new)
    for start in sorted(done, reverse=True):   # from the bottom: line numbers hold above
        ex, new = done[start]
        lines[ex.start + 1:ex.end] = new
    if not check and (differ or force):
        page.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""))
    return differ


def main(argv: list[str]) -> int:
    check, force = "--check" in argv, "--force" in argv
    pages = [Path(a).resolve() for a in argv if a not in ("--check", "--force")] or list(PAGES)
    differ = {page: rewrite(page, check, force=force) for page in pages}
    for page, commands in differ.items():
        for c in commands:
            print(f"{page.relative_to(ROOT)}: {'differs' if check else 'rewritten'}: {c}",
                  file=sys.stderr)
    return 1 if check and any(differ.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
