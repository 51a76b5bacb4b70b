"""The README fits on a screen, and its examples (and the tutorial's and the liveness guide's) are
the tool's own output: every ``$ kafka-mc`` command in them runs as printed, gives the exit code
the page says, and prints what the page shows under it (tools/examples.py says how a page shows
an output, and which figures are compared as placeholders). A model change that moves a count
or a counterexample fails here until the pages are regenerated: ``make examples``."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_BYTES = 12 * 1024

spec = importlib.util.spec_from_file_location("kafka_mc_examples", ROOT / "tools" / "examples.py")
examples = sys.modules[spec.name] = importlib.util.module_from_spec(spec)   # (its dataclass)
spec.loader.exec_module(examples)

EXAMPLES = [(page, i, ex) for page in examples.PAGES
            for i, ex in enumerate(examples.examples(page.read_text()))]
FIX = "run `make examples` (python tools/examples.py) to write the tool's output into the pages"


def test_readme_fits_on_a_screen():
    size = len(README.read_bytes())
    assert size <= MAX_BYTES, f"README.md is {size} bytes, more than {MAX_BYTES}"


def test_readme_has_examples_and_no_design_md():
    assert len([e for e in EXAMPLES if e[0] == README and e[2].skip is None]) >= 4
    assert "DESIGN.md" not in README.read_text()


def test_the_page_parser_reads_commands_exit_codes_skips_and_outputs():
    text = ("```console\n$ kafka-mc check tiny   # exit 12\nError: x\n...\n$ ls\nfoo\n"
            "$ kafka-mc real run tiny --version 4.4.0   # needs real Kafka\nclean\n```\n"
            "```\n$ kafka-mc not-a-command\n```\n")
    got = [(e.command, e.expected, e.skip, e.shown, e.cut) for e in examples.examples(text)]
    assert got == [("kafka-mc check tiny", 12, None, ["Error: x", "..."], True),
                   ("kafka-mc real run tiny --version 4.4.0", 0,
                    examples.SKIP["# needs real Kafka"], ["clean"], False)]
    assert examples.shown("a\nb\n\nc\n", cut=True) == ["a", "b", "..."]
    assert examples.shown("a\nb\n\nc\n", cut=False) == ["a", "b", "", "c"]
    assert examples.normal(["  12 distinct states, 3 generated, depth 4, 1.84 s "
                            "(6,867 distinct states/s)"]) == [
        "  12 distinct states, 3 generated, depth 4, <time>"]


def test_the_readme_states_the_releases_it_runs():
    from kafka_mc.realkafka import releases
    text = README.read_text()
    assert releases.RELEASES[0].version in text and releases.NEWEST in text


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Per page, its folder (laid out like the checkout's root) and the commands run there."""
    return {page: (examples.checkout(tmp_path_factory.mktemp(page.stem)), {})
            for page in examples.PAGES}


@pytest.mark.parametrize("page,index", [(p, i) for p, i, _ in EXAMPLES],
                         ids=[f"{p.stem}:{e.command[len('kafka-mc '):]}" for p, _, e in EXAMPLES])
def test_an_example_prints_what_its_page_shows(page, index, ran):
    listed = examples.examples(page.read_text())
    ex = listed[index]
    if ex.skip:
        pytest.skip(f"{page.name}: {ex.command}: {ex.skip}")
    cwd, done = ran[page]
    for earlier in range(index):   # what a reader ran before (a test selected alone with -k)
        if earlier not in done and listed[earlier].skip is None:
            done[earlier] = examples.run(listed[earlier].command, cwd)
    result = done[index] = examples.run(ex.command, cwd)
    assert result.returncode == ex.expected, (
        f"{page.name}: {ex.command}: exit {result.returncode}, the page says {ex.expected}\n"
        f"{result.stderr[-2000:]}")
    assert "Traceback" not in result.stderr, result.stderr
    printed = examples.normal(examples.shown(result.stdout, ex.cut))
    if printed != examples.normal(ex.shown):
        pytest.fail(f"{page.name}: {ex.command}: prints other than the page shows; {FIX}\n"
                    + "\n".join(f"  page:  {a}\n  tool:  {b}" for a, b in
                                zip(examples.normal(ex.shown) + [""] * len(printed),
                                    printed + [""] * len(ex.shown)) if a != b)[:3000])
