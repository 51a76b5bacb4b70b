"""Real runs stopped before their end (issue 60): a signal at every phase (the cluster starting,
the workload, the end state, a validation, a reproduction's steps) and a failure from outside (a
broker's or the client's JVM killed, the disk full) end the command with one line and its exit
code (128 + the signal, 69 for a failure), no JVM or temporary folder left, and the run folder
marked incomplete with why; a run killed outright is found and marked by the next command; a
following run into the same folder works. One small ``tiny`` run per case (10-20 s each).

The long measurement, ``-m fuzz`` (``KAFKA_MC_KILL_RUNS`` runs, 20 by default): ``real run``
SIGKILLed at a seeded moment, again and again, each next run cleaning what the last one left
(docs/guide/real-kafka.md has the figures)."""
from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_mc.realkafka import releases
from kafka_mc.realkafka.cluster import TMP_PREFIX, _port_free, sweep_stale
from kafka_mc.realkafka.runfolder import NAME, manifest
from tests.explorers.test_bad_input import _caught

KAFKA_MC = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or "kafka-mc"
NEWEST = releases.NEWEST
LEGACY = Path(__file__).resolve().parents[1] / "model" / "conformance_runs" / \
    "kafka-4.4.0-failover-open"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / \
    "kafka-3.6-two-transactions.committed_writes_visible.itf.json"


class Command:
    """``kafka-mc ARGS`` in the background, its output in files (no pipe to fill)."""

    def __init__(self, tmp_path: Path, *args, shell_redirect: str = ""):
        self.out, self.err = tmp_path / "stdout", tmp_path / "stderr"
        line = " ".join(f"'{a}'" for a in (KAFKA_MC, *map(str, args)))
        self.proc = subprocess.Popen(
            ["bash", "-c", f"exec {line} >{self.out} 2>{self.err} {shell_redirect}"],
            cwd=tmp_path)
        self.children: set[int] = set()
        self.ports: set[int] = set()

    @property
    def pid(self) -> int:
        return self.proc.pid        # bash exec'd into kafka-mc: the same process

    def until(self, ready, what: str, timeout: float = 120) -> None:
        """Wait until ``ready()``, noting the JVMs the command started meanwhile."""
        deadline = time.monotonic() + timeout
        while not ready():
            self.children |= _children(self.pid)
            assert self.proc.poll() is None, f"ended before {what}: {self.stderr()[-2000:]}"
            assert time.monotonic() < deadline, f"never {what}"
            time.sleep(0.05)
        self.children |= _children(self.pid)
        self.note_ports()

    def signal(self, sig) -> int:
        os.kill(self.pid, sig)
        return self.wait()

    def wait(self, timeout: float = 120) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def stderr(self) -> str:
        return self.err.read_text() if self.err.exists() else ""

    def stdout(self) -> str:
        return self.out.read_text() if self.out.exists() else ""

    def note_ports(self) -> None:
        """The brokers' listening ports (their server.properties), to check after the end."""
        for props in (f for c in _cluster_folders(self.pid)
                      for f in c.glob("broker-*/server.properties")):
            for line in props.read_text().splitlines():
                if line.startswith("listeners="):
                    self.ports |= {int(x.rsplit(":", 1)[1]) for x in line[10:].split(",")}

    def left_nothing(self) -> None:
        """No JVM it started is alive (within 10 s: a killed process's JVMs get SIGKILL from
        the kernel) and no broker port it had is listening."""
        deadline = time.monotonic() + 10    # (a JVM started in the last moment: not yet seen)
        while (any(_alive(p) for p in self.children) or not all(map(_port_free, self.ports))) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in self.children if _alive(p)], self.children
        assert all(_port_free(port) for port in self.ports), self.ports


def _children(pid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cluster_folders(pid: int) -> list[Path]:
    return list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"{TMP_PREFIX}{pid}-*"))


def _has(path: Path, text: str) -> bool:
    try:
        return text in path.read_text(errors="replace")
    except OSError:
        return False


def _manifest(folder: Path) -> dict:
    return json.loads((folder / NAME).read_text())


def one_line(stderr: str, start: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("kafka-mc: ")]
    assert len(lines) == 1 and lines[0].startswith(start), stderr[-3000:]
    assert "Traceback" not in stderr and "destroyed but it is pending" not in stderr, stderr
    return lines[0]


def run_args(out: Path, seed: int = 0):
    return ("real", "run", "tiny", "--version", NEWEST, "--seed", seed, "--out", out)


# --- a signal at every phase ------------------------------------------------------------------------

PHASES = {    # phase -> (the signal, when it is sent, the manifest's phase)
    "cluster": (signal.SIGTERM, lambda c, out: any(
        (f / "broker-1" / "pid").is_file() for f in _cluster_folders(c.pid)),
        "starting the cluster"),
    "workload": (signal.SIGINT, lambda c, out: _has(out / "events.jsonl", '"InitProducerId"'),
                 "running the workload"),
    "end state": (signal.SIGHUP, lambda c, out: _has(out / "history.jsonl",
                                                     '"reader-read_committed"'),
                  "reading the end state"),
}


@pytest.mark.parametrize("phase", sorted(PHASES))
def test_a_signal_at_each_phase_of_a_run(tmp_path, phase):
    """Exit 128 + the signal, one line naming the folder, no JVM or temporary folder left, the
    folder marked incomplete with the phase; ``conform --run`` refuses it. After the workload's
    interrupt a run into the same folder works (its standard output closed: the verdict is the
    exit code all the same)."""
    sig, ready, said = PHASES[phase]
    out = tmp_path / "run"
    c = Command(tmp_path, *run_args(out))
    c.until(lambda: ready(c, out), f"reached {phase}")
    code = c.signal(sig)
    assert code == 128 + sig, c.stderr()[-3000:]
    line = one_line(c.stderr(), f"kafka-mc: interrupted by {sig.name}; marked incomplete: ")
    assert str(out) in line
    c.left_nothing()
    assert not _cluster_folders(c.pid)
    doc = _manifest(out)
    assert doc["status"] == "incomplete" and doc["why"] == f"interrupted by {sig.name} while {said}"
    refused = subprocess.run([KAFKA_MC, "real", "conform", "--run", out], capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode == 2 and "validate the part that exists with --partial" in \
        refused.stderr
    if phase != "workload":
        return
    again = Command(tmp_path, *run_args(out), "--json", shell_redirect=">&-")
    assert again.wait(240) == 0, again.stderr()[-3000:]
    assert "Traceback" not in again.stderr() and "pending" not in again.stderr()
    assert _manifest(out)["status"] == "complete"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [NAME, "run.json", "plan.json", "events.jsonl", "history.jsonl", "report.json",
         "server.log", "stdout.log"])


def test_a_signal_during_a_validation_writes_nothing(tmp_path):
    """A validation interrupted (a run whose first marker was taken out: the search runs long)
    ends 130 with one line and leaves the folder as it was."""
    run = tmp_path / "run"
    shutil.copytree(LEGACY, run)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines)
                 if '"direction":"request","api":"WriteTxnMarkers"' in line)
    (run / "events.jsonl").write_text("".join(lines[:first] + lines[first + 1:]))
    before = sorted(p.name for p in run.iterdir())
    c = Command(tmp_path, "real", "conform", "--run", run)
    c.until(lambda: _caught(c.pid, signal.SIGHUP), "in the command (its SIGHUP handler)")
    time.sleep(2)
    assert c.proc.poll() is None, c.stderr()        # still searching
    assert c.signal(signal.SIGINT) == 130
    one_line(c.stderr(), "kafka-mc: interrupted by SIGINT")
    assert sorted(p.name for p in run.iterdir()) == before


def test_a_signal_during_a_reproduction_marks_its_folder(tmp_path):
    """A reproduction's steps interrupted (SIGQUIT, exit 131): no JVM left, the folder
    incomplete, no ``conform/`` folder (nothing to validate)."""
    out = tmp_path / "repro"
    c = Command(tmp_path, "real", "reproduce", GOLDEN, "--version", "3.6.2", "--out", out)
    c.until(lambda: (out / "steps.jsonl").is_file() and
            len((out / "steps.jsonl").read_text().splitlines()) >= 5, "played 5 steps")
    assert c.signal(signal.SIGQUIT) == 131
    one_line(c.stderr(), "kafka-mc: interrupted by SIGQUIT; marked incomplete: ")
    c.left_nothing()
    doc = _manifest(out)
    assert doc["status"] == "incomplete" and doc["kind"] == "reproduce"
    assert doc["why"] == "interrupted by SIGQUIT while reproducing the trace"
    assert not (out / "conform").exists()


def test_a_run_killed_outright_is_marked_by_the_next_command(tmp_path):
    """SIGKILL: nothing in the process can act, so its JVMs die with it (the kernel's parent-
    death signal, a driver whose stdin closes) and its manifest still says ``running``, naming a
    process that is gone: readers take it as killed; the next command's start marks it and
    removes the cluster's temporary folder (what ``real run`` does first, called here)."""
    out = tmp_path / "run"
    c = Command(tmp_path, *run_args(out))
    c.until(lambda: _has(out / "events.jsonl", '"InitProducerId"'), "reached the workload")
    assert c.signal(signal.SIGKILL) == -9
    c.left_nothing()
    assert _manifest(out)["status"] == "running"
    refused = subprocess.run([KAFKA_MC, "real", "conform", "--run", out], capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode == 2 and f"killed: its process {c.pid} ended" in refused.stderr
    assert out in manifest.sweep_killed()
    left = _cluster_folders(c.pid)
    assert left and set(left) <= set(sweep_stale()) and not _cluster_folders(c.pid)
    doc = _manifest(out)
    assert doc["status"] == "incomplete" and doc["why"].startswith(
        f"killed: its process {c.pid} ended before the run finished")


# --- failures from outside ----------------------------------------------------------------------------

def _kill_broker(c: Command) -> None:
    pid = int(next(f for f in _cluster_folders(c.pid)).joinpath("broker-1", "pid").read_text())
    os.kill(pid, signal.SIGKILL)


def _kill_driver(c: Command) -> None:
    out = subprocess.run(["pgrep", "-P", str(c.pid), "-f", "KafkaMcDriver"],
                         capture_output=True, text=True).stdout.split()
    os.kill(int(out[0]), signal.SIGKILL)


def _fill_the_disk(c: Command) -> None:
    """The run's files may grow no more (RLIMIT_FSIZE on the command's process alone, set once
    its JVMs run: a write past it fails as a full disk's does)."""
    size = (c.out.parent / "run" / "events.jsonl").stat().st_size
    resource.prlimit(c.pid, resource.RLIMIT_FSIZE, (size + 2048, size + 2048))


@pytest.mark.parametrize("failure, said", [
    (_kill_broker, "broker 1's JVM was killed by SIGKILL though the run did not stop it"),
    (_kill_driver, "the client driver's JVM was killed by signal 9"),
    (_fill_the_disk, "cannot write events.jsonl (File too large)"),
])
def test_a_failure_from_outside_is_one_line_and_exit_69(tmp_path, failure, said):
    """Issue 60: a JVM dying was a Python traceback and exit 1; a full disk printed 83 asyncio
    tracebacks and left half a line in events.jsonl."""
    out = tmp_path / "run"
    c = Command(tmp_path, *run_args(out))
    c.until(lambda: _has(out / "events.jsonl", '"InitProducerId"'), "reached the workload")
    failure(c)
    assert c.wait(180) == 69, c.stderr()[-3000:]
    line = one_line(c.stderr(), "kafka-mc: error: the run could not finish: ")
    assert said in line and str(out) in line
    c.left_nothing()
    doc = _manifest(out)
    assert doc["status"] == "incomplete" and said in doc["why"]
    events = (out / "events.jsonl").read_bytes()
    assert events.endswith(b"\n") and all(json.loads(x) for x in events.splitlines())


# --- the measurement: SIGKILL at random moments, again and again --------------------------------------

KILL_RUNS = int(os.environ.get("KAFKA_MC_KILL_RUNS", "20"))


@pytest.mark.fuzz
def test_sigkill_at_random_moments_in_a_row(tmp_path):
    """``real run`` SIGKILLed at a seeded moment (0 to 20 s from its start: the cluster starting,
    the workload, the end state, or after it ended), ``KAFKA_MC_KILL_RUNS`` times in a row, each
    into its own folder: after each kill no JVM it started is alive; each next run says what it
    cleaned (the killed run's folder marked, its temporary cluster folder removed); at the end
    every folder is marked (complete, or incomplete and why) and no temporary folder is left."""
    rng = random.Random(60)
    folders, said, moments = [], [], []
    for i in range(KILL_RUNS):
        out = tmp_path / f"run-{i}"
        folders.append(out)
        c = Command(tmp_path, *run_args(out, seed=i))
        moments.append(round(rng.uniform(0, 20), 1))
        deadline = time.monotonic() + moments[-1]
        while time.monotonic() < deadline and c.proc.poll() is None:
            c.children |= _children(c.pid)
            c.note_ports()
            time.sleep(0.05)
        if c.proc.poll() is None:
            os.kill(c.pid, signal.SIGKILL)
        c.wait()
        c.left_nothing()
        said.append(c.stderr())
    manifest.sweep_killed()         # what the next command's start does
    sweep_stale()
    states = []
    for out, moment in zip(folders, moments):
        doc = _manifest(out) if (out / NAME).exists() else {"status": "no folder yet",
                                                             "why": ""}
        assert doc["status"] in ("complete", "incomplete", "no folder yet"), (out, doc)
        states.append(doc["status"])
        print(f"{out.name}: killed at {moment} s: {doc['status']} {doc['why']}")
    for f in Path(os.environ.get("TMPDIR", "/tmp")).glob(f"{TMP_PREFIX}*"):   # others' only
        assert manifest.alive({"pid": int(f.name[len(TMP_PREFIX):].split("-")[0])}), f
    cleaned = sum("removed what a killed run left" in s for s in said)
    marked = sum("a killed run's folder marked incomplete" in s for s in said)
    print(f"{KILL_RUNS} runs: {cleaned} said they removed a killed run's cluster folder, "
          f"{marked} marked a killed run's folder; "
          + ", ".join(f"{states.count(x)} {x}" for x in sorted(set(states))))
