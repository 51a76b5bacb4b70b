"""Counterexamples fit the reader's terminal: every line ``check``, ``replay --diff`` and ``render
--format text`` print for the shipped configurations' counterexamples that are cheap to find
(and for the golden traces) is at most 120 columns when standard output is not a terminal, and
each step of ``check`` is one line there, but for the few that send several messages at once.
(The lines that name a trace file are whole, to be copied: they are as long as the path, short
here.)"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.explorers import cli

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = sorted((ROOT / "tests" / "golden").glob("*.itf.json"))
WIDTH = 120
# (config and flags, exit code): each shipped configuration with a violation found in seconds,
# on the preset it stands for or one that violates, and the Kafka mutants caught on tiny
CHECKS = [
    (["tiny", "--protocol", "kafka-0.11", "--continue"], 12),
    (["tiny", "--protocol", "kafka-0.11", "--verbose"], 12),
    (["leaderless"], 12),
    (["pulsar-2.9.0"], 12),
    (["twophase-broken", "--continue"], 12),
    *((["tiny", "--set", f"model.mutant={m}"], 12)
      for m in ("consumer-ignores-aborted-index", "lso-ignores-open-transactions",
                "abort-marker-without-index-entry", "end-txn-skips-epoch-check",
                "fence-without-epoch-bump", "end-txn-with-batches-in-flight",
                "abort-skips-end-txn")),
]


@pytest.fixture(autouse=True)
def _not_a_terminal(monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "120")   # (as when standard output is not a terminal)
    monkeypatch.chdir(tmp_path)                    # (short paths: out/...)


def _run(capsys, *argv) -> tuple[int, list[str]]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out.splitlines()


def _too_wide(lines: list[str]) -> list[str]:
    return [ln for ln in lines if len(ln) > WIDTH]


@pytest.mark.parametrize("argv, code", CHECKS, ids=[" ".join(a) for a, _ in CHECKS])
def test_a_counterexample_fits_120_columns_in_check_replay_and_render(argv, code, tmp_path,
                                                                        capsys):
    out = Path("out")
    got, lines = _run(capsys, "check", *argv, "--out", str(out))
    assert got == code and any(ln.startswith("Error:") for ln in lines)
    assert _too_wide(lines) == []
    for trace in sorted(out.glob("*.itf.json")):
        for command in (["replay", str(trace), "--diff"], ["render", str(trace)]):
            _, printed = _run(capsys, *command)
            assert len(printed) > 10 and _too_wide(printed) == [], command


def test_each_step_is_one_line_but_for_one_that_sends_several_messages(tmp_path, capsys):
    """tiny on kafka-0.11: 19 steps, two of which (the coordinator's PrepareAbort sending its
    marker, the leader writing it and answering) take a second line at 120 columns."""
    _, lines = _run(capsys, "check", "tiny", "--protocol", "kafka-0.11", "--out", "out")
    first = lines.index("  shortest counterexample: 19 steps") + 1
    steps = lines[first:lines.index("  trace written to out/no_hanging_transactions.itf.json")]
    continued = [ln for ln in steps if ln.startswith("     ")]
    assert len(steps) - len(continued) == 19 and len(continued) == 2


@pytest.mark.parametrize("trace", GOLDEN, ids=[t.name for t in GOLDEN])
def test_a_golden_trace_fits_120_columns_replayed_and_rendered(trace, capsys):
    for command in (["replay", str(trace), "--diff"], ["render", str(trace)],
                    ["render", str(trace), "--diff"]):
        _, printed = _run(capsys, *command)
        assert len(printed) > 5 and _too_wide(printed) == [], command


def test_columns_sets_the_width(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    _, lines = _run(capsys, "check", "tiny", "--protocol", "kafka-0.11", "--out", "o")
    assert max(map(len, lines)) <= 80 and "   1. p0           InitProducerId to coordinator" in lines


def test_without_columns_output_that_is_not_a_terminal_is_120_wide(tmp_path):
    """The default itself, in a process of its own (standard output a pipe, no COLUMNS)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    run = subprocess.run([sys.executable, "-m", "kafka_mc", "check", "tiny", "--protocol",
                          "kafka-0.11", "--out", "out"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    lines = run.stdout.splitlines()
    assert run.returncode == 12 and 100 < max(map(len, lines)) <= 120, run.stderr
