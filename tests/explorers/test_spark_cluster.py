"""The Spark explorer on a real standalone cluster: a master and two one-core workers on 127.0.0.1,
started from the pyspark installation. One worker is killed in the middle of the search; Spark
reruns the lost work from lineage and the result is exactly the single-process BFS's. Every
process the fixture starts (master, workers, and their executors and Python workers, one process
group each) is killed at the end."""
import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pyspark
import pytest

from tests.explorers.test_spark import EXE, summary
from kafka_mc.model import registry
from kafka_mc.explorers.bfs import search as bfs

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
START_TIMEOUT = 120  # seconds for the master and each worker to come up


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(log: Path, text: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            pytest.fail(f"{log.name}: exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        time.sleep(0.5)
    pytest.fail(f"{log.name}: no {text!r} after {START_TIMEOUT} s")


class Cluster:
    def __init__(self, root: Path):
        self.root = root
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(root),
                    "SPARK_WORKER_DIR": str(root / "work")}
        self.url = f"spark://127.0.0.1:{free_port()}"

    def start(self, name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:  # its own session: killpg reaches its executors too
            proc = subprocess.Popen([str(SPARK_CLASS), *args], stdout=out, stderr=subprocess.STDOUT,
                                    env=self.env, start_new_session=True)
        self.procs[name] = proc
        return proc, log

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        for name in list(self.procs):
            try:
                os.killpg(self.procs[name].pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # the group is gone already
            self.procs[name].wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        port = c.url.rsplit(":", 1)[1]
        master, log = c.start("master", "org.apache.spark.deploy.master.Master", "--host",
                              "127.0.0.1", "--port", port, "--webui-port", str(free_port()))
        wait_for(log, "I have been elected leader", master)
        workers = [c.start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", c.url, "--host",
                           "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                           "--work-dir", str(c.root / f"work{i}")) for i in (1, 2)]
        for proc, log in workers:
            wait_for(log, "Successfully registered with master", proc)
        yield c
    finally:
        c.stop()


def test_search_survives_a_killed_worker(cluster, tmp_path):
    cfg = registry.load(model="twophase", overrides={"model.resource_managers": 5})
    expected = bfs.explore(registry.bind(cfg))
    cmd = [EXE, "check", "--model", "twophase", "--set", "model.resource_managers=5",
           "--explorer", "spark", "--master", cluster.url, "--partitions", "4",
           "--spark-conf", "spark.driver.host=127.0.0.1",
           "--spark-conf", "spark.driver.bindAddress=127.0.0.1",
           "--spark-conf", "spark.executor.memory=512m",
           # fail over at once rather than retrying the dead executor's shuffle files 3 x 5 s
           "--spark-conf", "spark.shuffle.io.maxRetries=0", "--json", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    timer = threading.Timer(300, proc.kill)  # a bounded wait, whatever happens
    timer.start()
    try:
        stderr, killed_at = [], None
        for line in proc.stderr:
            stderr.append(line)
            if killed_at is None and line.startswith("progress: depth 4,"):
                cluster.kill("worker2")  # the worker JVM, its executor and its Python workers
                killed_at = len(stderr)
        stdout = proc.stdout.read()
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
    assert killed_at is not None, "".join(stderr)
    assert proc.returncode == 0, "".join(stderr)
    levels_after_kill = [ln for ln in stderr[killed_at:] if ln.startswith("progress:")]
    assert len(levels_after_kill) >= 10  # the search went on, on the one worker left
    doc = json.loads(stdout)
    stats = doc["stats"]
    assert (stats["distinct"], stats["generated"], stats["depth"]) == summary(expected)["counts"]
    assert doc["verdict"] == "ok" and doc["complete"] and doc["explorer"] == "spark"
    assert doc["coverage"] == {c.name: {"fired": c.fired, "distinct": c.distinct}
                               for c in expected.coverage}
