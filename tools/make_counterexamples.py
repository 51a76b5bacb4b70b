"""Remake the counterexamples ``kafka-mc real reproduce`` is tested with (issue 58 item 4), and,
with ``--real``, the recorded runs of their reproductions that the verdict's tests judge offline.

    python tools/make_counterexamples.py           # the traces: the model only, seconds
    flock /work/scratch/realkafka.lock python tools/make_counterexamples.py --real   # + real runs

Run from the repository's root with the project's Python. The traces are the BFS's shortest
counterexamples, so they change only when the model does (re-run this after a model change and
commit what moved). ``--real`` needs the releases fetched (``make kafka``, or
``KAFKA_MC_KAFKA_CACHE``) and takes about two minutes: each reproduction is run with ``kafka-mc
real reproduce`` and its recording (``OUT/conform``) kept without the events no observation
reads (Metadata, ListOffsets, the harness's admin calls: the quiescence and evidence reads).

| trace | config | the bug |
|---|---|---|
| ``kafka-3.6-marker_closes_its_own_transaction`` | two-transactions, 2 partitions, a duplicated and a delayed request, kafka-3.6 | a duplicated ABORT WriteTxnMarkers' old copy lands after the next transaction's AddPartitionsToTxn was answered and its batch appended: it closes that transaction (30 steps) |
| ``kafka-4.0.2-aborted_writes_stay_aborted`` | the same, kafka-4.0.2 | a duplicated COMMIT marker's old copy (TV2, epoch 1) lands after the next transaction's abort was prepared at epoch 2: the aborted record is committed (before KIP-1228, 4.2.0) |
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "realkafka" / "counterexamples"
RUNS = ROOT / "tests" / "explorers" / "reproductions"
CONFIG = ["two-transactions", "--set", "cluster.partitions=2", "--set",
          "faults.request_duplicates=1", "--set", "faults.request_delays=1"]
COUNTEREXAMPLES = {   # name -> (preset, property)
    "kafka-3.6-marker_closes_its_own_transaction": ("kafka-3.6",
                                                    "marker_closes_its_own_transaction"),
    "kafka-4.0.2-aborted_writes_stay_aborted": ("kafka-4.0.2", "aborted_writes_stay_aborted"),
}
REPRODUCTIONS = (   # (trace, release): the runs the verdict's offline tests judge
    ("kafka-3.6-marker_closes_its_own_transaction", "3.6.2"),
    ("kafka-4.0.2-aborted_writes_stay_aborted", "4.0.2"),
    ("kafka-4.0.2-aborted_writes_stay_aborted", "4.4.0"),
)
# APIs no observation reads (model/kafka/capabilities/observations.py): dropped from the kept runs
UNREAD = {"Metadata", "ListOffsets", "FindCoordinator", "DescribeTransactions", "ApiVersions",
          "Fetch", "DescribeProducers", "CreateTopics", "OffsetFetch", "DescribeTopicPartitions",
          "ListTransactions", "DescribeCluster", "DescribeConfigs"}


def kafka_mc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_mc", *args], cwd=ROOT, text=True,
                          capture_output=True, check=check)


def make_trace(name: str) -> Path:
    preset, prop = COUNTEREXAMPLES[name]
    with tempfile.TemporaryDirectory() as tmp:
        run = kafka_mc("check", *CONFIG, "--protocol", preset, "--invariant", prop,
                       "--out", tmp, check=False)
        if run.returncode != 12:
            raise SystemExit(f"{name}: kafka-mc check exited {run.returncode}, not 12:\n"
                             f"{run.stderr[-2000:]}")
        TRACES.mkdir(parents=True, exist_ok=True)
        target = TRACES / f"{name}.itf.json"
        shutil.copy(Path(tmp) / f"{prop}.itf.json", target)
    return target


def keep_run(conform: Path, target: Path) -> None:
    """The recording ``conform`` copied to ``target`` without what no observation reads."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in ("run.json", "end_state.json"):
        shutil.copy(conform / name, target / name)
    with open(target / "events.jsonl", "w") as out:
        for line in (conform / "events.jsonl").read_text().splitlines():
            if line.strip() and json.loads(line).get("api") not in UNREAD:
                out.write(line + "\n")
    with open(target / "history.jsonl", "w") as out:
        for line in (conform / "history.jsonl").read_text().splitlines():
            if line.strip() and str(json.loads(line).get("process", "")).startswith("t"):
                out.write(line + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", action="store_true",
                    help="also run the reproductions on real Kafka and keep their recordings")
    args = ap.parse_args()
    for name in COUNTEREXAMPLES:
        print(f"{make_trace(name).relative_to(ROOT)}")
    if not args.real:
        return 0
    for name, version in REPRODUCTIONS:
        with tempfile.TemporaryDirectory() as tmp:
            run = kafka_mc("real", "reproduce", str(TRACES / f"{name}.itf.json"), "--version",
                           version, "--out", tmp, "--json", check=False)
            report = json.loads(run.stdout)
            target = RUNS / f"{name}-on-{version}"
            keep_run(Path(tmp) / "conform", target)
            print(f"{target.relative_to(ROOT)}: {report['verdict']} (exit {run.returncode}), "
                  f"{report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
