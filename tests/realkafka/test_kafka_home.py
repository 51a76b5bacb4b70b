"""A Kafka of one's own (``--kafka-home DIR``): a distribution unpacked from a fetched release runs
and conforms exactly as the release does with ``--version`` (the same plan, the same preset, both
conforming; its recorded run validated again with ``--run``), ``real run`` says which faults it
injected and what each file of its folder holds, and a folder that is not a distribution is one
line and exit 2. ``real fetch`` of an unknown release is one line too."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.realkafka import folder, releases

ROOT = Path(__file__).resolve().parents[2]
VERSION = releases.NEWEST


def kafka_mc(*args, timeout=240):
    """The checkout's kafka-mc (its code first on the path)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, "-m", "kafka_mc", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def one_line_exit_2(run, text):
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0] and "Traceback" not in run.stderr, run.stderr


def unpacked(release: str, into: Path) -> Path:
    """The fetched release laid out as a distribution unpacks (``libs/`` holding the broker's
    jars and its logging binding, as Kafka's own tarball does; ``bin/``, ``config/``)."""
    home = into / f"kafka_2.13-{release}"
    (home / "libs").mkdir(parents=True)
    for sub in ("lib", "logging"):
        for jar in (releases.home(release) / sub).glob("*.jar"):
            shutil.copy(jar, home / "libs" / jar.name)
    (home / "bin").mkdir()
    (home / "config").mkdir()
    return home


@pytest.mark.parametrize("make, text", [
    (lambda d: d / "missing", "no such folder"),
    (lambda d: d, "not a Kafka distribution (no libs/kafka-clients-*.jar)"),
    (lambda d: (d / "libs").mkdir() or (d / "libs" / "kafka-clients-4.4.0.jar").touch() or d,
     "not a Kafka distribution (no libs/kafka_2.13-*.jar)"),
])
def test_a_folder_that_is_not_a_kafka_distribution_is_one_line(make, text, tmp_path):
    one_line_exit_2(kafka_mc("real", "run", "tiny", "--kafka-home", str(make(tmp_path))), text)


def test_kafka_home_and_its_protocol_are_checked_before_anything_runs(tmp_path):
    home = tmp_path / "kafka_2.13-9.9.0"
    (home / "libs").mkdir(parents=True)
    for name in ("kafka-clients-9.9.0.jar", "kafka_2.13-9.9.0.jar"):
        (home / "libs" / name).touch()
    one_line_exit_2(kafka_mc("real", "run", "tiny", "--kafka-home", str(home)),
                    "no preset stands for yet: name the one to judge it against with --protocol")
    one_line_exit_2(kafka_mc("real", "run", "tiny", "--kafka-home", str(home), "--protocol",
                             "9.9.0"), "neither a preset of the Kafka model")
    one_line_exit_2(kafka_mc("real", "run", "tiny", "--kafka-home", str(home), "--version",
                             VERSION), "give one")
    one_line_exit_2(kafka_mc("real", "run", "tiny", "--version", VERSION, "--protocol",
                             "latest"), "--protocol goes with --kafka-home")
    one_line_exit_2(kafka_mc("real", "fetch", "9.9.9"), "unknown release '9.9.9'")


def test_a_distribution_of_a_release_conforms_as_the_release(tmp_path):
    """One run of tiny (seed 40) on 4.4.0 unpacked and judged against the preset 4.4.0 stands
    for, one with ``--version 4.4.0``: the same plan, the same preset, both conform."""
    home = unpacked(VERSION, tmp_path)
    mine = kafka_mc("real", "run", "tiny", "--kafka-home", str(home), "--protocol", VERSION,
                    "--seed", "40", "--out", str(tmp_path / "home"))
    assert mine.returncode == 0, mine.stdout[-2000:] + mine.stderr[-2000:]
    text = mine.stdout
    assert f"Kafka {VERSION} at {home.resolve()}" in mine.stderr
    lines = text.splitlines()
    said = lines[lines.index("faults injected (plan.json):") + 1:]
    assert said[0].startswith("  producer crash: ") or said[0] == "  none"
    for name in ("run.json", "plan.json", "events.jsonl", "history.jsonl", "report.json"):
        assert any(ln.startswith(f"  {name}  ") and ln.split(None, 1)[1] for ln in lines), name
    recorded = json.loads((tmp_path / "home" / "run.json").read_text())
    assert recorded["kafka_home"] == str(home.resolve()) and recorded["preset"] == "kafka-4.3"
    again = kafka_mc("real", "conform", "--run", str(tmp_path / "home"), "--json")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    home_verdict = json.loads(again.stdout)
    theirs = kafka_mc("real", "conform", "tiny", "--version", VERSION, "--seed", "40",
                      "--out", str(tmp_path / "release"), "--json")
    assert theirs.returncode == 0, theirs.stdout[-2000:] + theirs.stderr[-2000:]
    release_verdict = json.loads(theirs.stdout)
    assert home_verdict["conforms"] == release_verdict["conforms"] == 1
    assert home_verdict["preset"] == release_verdict["preset"] == "kafka-4.3"
    assert (tmp_path / "home" / "plan.json").read_bytes() == \
        (tmp_path / "release" / "run-40" / "plan.json").read_bytes()


def test_a_run_folder_is_described_and_its_faults_said(tmp_path):
    (tmp_path / "plan.json").write_text(json.dumps({
        "instances": [{"tid": 0, "number": 0, "crash": [0, "before-commit"],
                       "txns": [{"number": 0, "pause": False}]},
                      {"tid": 0, "number": 1, "crash": None,
                       "txns": [{"number": 0, "pause": True}]}],
        "network": [{"kind": "delay", "api": "Produce", "occurrence": 2, "hold_ms": 300},
                    {"kind": "drop-response", "api": "EndTxn", "occurrence": 1, "hold_ms": 0}],
        "failovers": [{"after_end_txn": 1, "hard": True}]}))
    (tmp_path / "report.json").write_text(json.dumps({"end_state": {"faults": [
        {"applied_to_events": [12]}, {"applied_to_events": []}]}}))
    (tmp_path / "server.log").touch()
    (tmp_path / "mine.txt").touch()
    assert folder.faults(tmp_path) == [
        "producer crash: t0.i0 abandoned before-commit its transaction 0; the next instance "
        "starts, this one goes on as a zombie",
        "transaction timeout: t0.i1 pauses in transaction 0 past transaction.timeout.ms",
        "network: the 2nd Produce held back 300 ms (applied to event 12)",
        "network: the 1st EndTxn answer dropped (never met)",
        "coordinator failover after the 1st EndTxn answer: its broker killed and restarted"]
    listed = folder.listing(tmp_path, width=1000)
    assert [ln.split()[0] for ln in listed] == ["plan.json", "report.json", "server.log",
                                                "mine.txt"]
    assert listed[0] == "  plan.json    " + folder.FILES["plan.json"]
    assert max(map(len, folder.listing(tmp_path, width=80))) <= 80
    (tmp_path / "plan.json").write_text(json.dumps({"instances": [], "network": []}))
    assert folder.faults(tmp_path) == ["none"]


def test_the_manual_describes_every_file_of_a_run_folder_as_real_run_does():
    page = (ROOT / "docs" / "guide" / "real-kafka.md").read_text()
    table = page[page.index("| file | what it holds |"):].split("\n\n")[0].splitlines()[2:]
    assert table == [f"| `{name}` | {what} |" for name, what in folder.FILES.items()]
