"""``kafka-mc real``: the releases listed with their presets; bad input one line and exit 2 (an
unknown or unfetched release, no Java, a busy port, a config the harness cannot run); ``real
cluster`` serves a bootstrap address until Ctrl-C and leaves nothing behind."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
import shutil

import pytest

from kafka_mc.realkafka import releases
from kafka_mc.realkafka.cluster import TMP_PREFIX

KAFKA_MC = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or "kafka-mc"


def real(*args, env=None, timeout=60):
    return subprocess.run([KAFKA_MC, "real", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def one_line_exit_2(run, text):
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0] and "Traceback" not in run.stderr, run.stderr


def test_versions_lists_every_release_with_its_preset():
    run = real("versions", "--json")
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)["releases"]
    assert [(r["version"], r["preset"]) for r in rows] == \
        [(r.version, r.preset) for r in releases.RELEASES]
    assert all(r["fetched"] for r in rows)          # make test ran make kafka
    text = real("versions").stdout
    assert "3.6.2" in text and "kafka-3.6" in text and releases.NEWEST in text


@pytest.mark.parametrize("args, env, text", [
    (("run", "tiny", "--version", "9.9.9"), {}, "not a supported release"),
    (("run", "tiny", "--version", releases.NEWEST), {"KAFKA_MC_KAFKA_CACHE": "/nonexistent"},
     "make kafka"),
    (("run", "twophase", "--version", releases.NEWEST), {}, "not model 'twophase'"),
    (("run", "small", "--version", releases.NEWEST), {}, "cannot be injected on a real cluster"),
    (("run", "no-such-config", "--version", releases.NEWEST), {}, "no-such-config"),
    (("run", "tiny", "--version", releases.NEWEST, "--set", "faults.nope=1"), {}, "faults.nope"),
    (("cluster", "--version", releases.NEWEST, "--port", "70000"), {}, "not a port number"),
    (("frobnicate",), {}, "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(args, env, text):
    one_line_exit_2(real(*args, env=env), text)


def test_no_java_is_one_line():
    # the console script's interpreter is named by its full path; java is not on PATH
    one_line_exit_2(real("run", "tiny", "--version", releases.NEWEST,
                         env={"PATH": "/nonexistent"}), "no `java` on PATH")


def test_a_busy_port_is_one_line():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        port = s.getsockname()[1]
        one_line_exit_2(real("cluster", "--version", releases.NEWEST, "--port", str(port)),
                        f"port {port} on 127.0.0.1 is busy")
    finally:
        s.close()


def _jvms(owner: int) -> set[int]:
    """The broker JVMs of the cluster that process ``owner`` started (their data folder is
    named after it)."""
    out = subprocess.run(["pgrep", "-f", f"{TMP_PREFIX}{owner}-"], capture_output=True,
                         text=True).stdout
    return {int(p) for p in out.split()}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_real_cluster_serves_until_stopped_and_leaves_nothing(sig, tmp_path):
    events = tmp_path / "events.jsonl"
    proc = subprocess.Popen([KAFKA_MC, "real", "cluster", "--version", releases.NEWEST,
                             "--events", str(events)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "bootstrap.servers=127.0.0.1:" in line, line + proc.stderr.read()
        port = int(line.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        mine = _jvms(proc.pid)
        assert mine
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 128 + sig      # 130, 143: what its help says (issue 60)
        err = proc.stderr.read()
        assert "Traceback" not in err and f"stopped by {sig.name}" in err
        deadline = time.monotonic() + 10
        while _jvms(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _jvms(proc.pid)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        assert events.is_file()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
