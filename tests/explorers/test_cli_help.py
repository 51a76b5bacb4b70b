"""The command line explains itself: every flag of every command has help, ``kafka-mc --help``
ends with every exit code (one table, ``EXIT_CODES``, which the README's and the manual's tables
hold too), and ``--protocol`` takes a release for the preset that stands for it, saying so."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kafka_mc.explorers.cli import build_parser
from kafka_mc.explorers.core.result import EXIT_CODES
from tests.explorers.test_bad_input import kmc, one_line_error

ROOT = Path(__file__).resolve().parents[2]


def _parsers(parser, name="kafka-mc"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_every_flag_of_every_command_has_help():
    missing = [f"{name} {a.option_strings[0] if a.option_strings else a.dest}"
               for name, parser in _parsers(build_parser()) for a in parser._actions
               if not isinstance(a, argparse._SubParsersAction) and not a.help]
    assert missing == []


def test_help_ends_with_every_exit_code():
    text = build_parser().format_help()
    codes = text[text.index("exit codes:"):].splitlines()[1:]
    assert [ln.split()[0].rstrip(",") for ln in codes if not ln.startswith("     ")] == \
        [code.split(",")[0] for code, _ in EXIT_CODES]


@pytest.mark.parametrize("page", ["README.md", "docs/commands.md"])
def test_the_exit_code_tables_of_the_pages_are_the_clis(page):
    text = (ROOT / page).read_text()
    table = text[text.index("| exit | meaning |"):].split("\n\n")[0].splitlines()[2:]
    assert table == [f"| {code} | {meaning} |" for code, meaning in EXIT_CODES], (
        f"{page}: its exit codes differ from EXIT_CODES (kafka_mc/explorers/core/result.py)")


def test_a_release_given_as_protocol_is_the_preset_that_stands_for_it(tmp_path):
    code, out, err = kmc("check", "tiny", "--protocol", "4.4.0", "--out", tmp_path)
    assert code == 0 and "protocol.version=kafka-4.3" in out.splitlines()[0]
    assert "--protocol 4.4.0: the release 4.4.0 stands for preset kafka-4.3" in err
    one_line_error(*kmc("check", "tiny", "--protocol", "4.4.1", "--out", tmp_path),
                   expect="not a release a preset of kafka stands for (3.5.2")
    code, out, _ = kmc("check", "twophase", "--protocol", "4.4.0")   # no releases: as given
    assert code == 2


def test_the_header_says_only_what_differs_from_the_defaults(tmp_path):
    _, out, _ = kmc("check", "tiny", "--set", "faults.request_delays=1", "--out", tmp_path)
    assert out.splitlines()[0] == ("kafka-mc check: model kafka (cluster.partitions=1, "
                                   "faults.request_delays=1), explorer bfs [configs/tiny.toml]")


def test_a_mutant_of_a_rule_the_configuration_lacks_is_one_line():
    one_line_error(*kmc("check", "tiny", "--set", "model.mutant=add-partitions-skips-epoch-check"),
                   expect="changes HandleAddPartitionsToTxn, which this configuration's")
