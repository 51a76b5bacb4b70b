"""Full against reduced search (``--por``), side by side in one run (issue 20).

    PYTHONPATH=$PWD nice -n 5 .venv/bin/python bench/por.py [RUN ...] [--seconds 600] [--explorer bfs] \\
        [--also ARG ...] [--only reduced]

A RUN is ``CONFIG[@PRESET]`` (a shipped config or a TOML file, e.g. ``small@kafka-4.2``,
``medium``) or ``issue@PRESET:FAULT+FAULT``: the issue's configuration (one transactional.id, one
producer instance, two partitions, two transactions of two records, the application may abort,
two network faults of the given kinds with a budget of one each and two in all, every other
fault off), e.g. ``issue@kafka-3.6:request_delays+request_duplicates``. Default: the issue's
configuration with delays and duplicates on kafka-3.6, kafka-4.0 and latest. ``--also`` passes
more arguments to every search (``--also=--set --also=workload.transactions_per_producer=1``,
``--also=--invariant --also=txn_atomicity``); ``--only reduced`` (or ``full``) runs one search
of each pair.

Each search is ``kafka-mc check ... --json`` in its own child process, full then reduced, one
after the other (so the two of a pair meet about the same load on a shared machine), stopped
after ``--seconds`` as Ctrl-C would stop it (SIGTERM: the explorer reports its partial counts).
Reported: distinct and generated states, depth, seconds (the explorer's: to the first violation
when there is one, as the BFS stops there), peak RSS of the child (``wait4``), the verdict and
the reduction factor (full distinct / reduced distinct; on a cut search, of states reached in
the same time, which is not a factor of the whole space).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULTS = ("request_delays", "request_duplicates", "request_losses", "response_losses")
OTHER_FAULTS = ("producer_crashes", "coordinator_failovers", "transaction_timeouts",
                "transactional_id_expirations", "batch_expiries", "producer_state_losses",
                "rebalances")
DEFAULT = tuple(f"issue@{p}:request_delays+request_duplicates"
                for p in ("kafka-3.6", "kafka-4.0", "latest"))


def arguments(run: str) -> list[str]:
    """The ``kafka-mc check`` arguments of RUN (see the module's docstring)."""
    name, _, preset = run.partition("@")
    if name != "issue":
        return [name] + (["--protocol", preset] if preset else [])
    preset, _, faults = preset.partition(":")
    chosen = faults.split("+")
    if len(chosen) != 2 or not set(chosen) <= set(FAULTS):
        raise SystemExit(f"bench/por.py: {run!r}: issue@PRESET:FAULT+FAULT with two of {FAULTS}")
    sets = {"cluster.transactional_ids": 1, "cluster.producers_per_id": 1,
            "cluster.partitions": 2, "workload.transactions_per_producer": 2,
            "workload.records_per_transaction": 2, "workload.abort_transactions": "true",
            "faults.total": 2, **{f"faults.{f}": int(f in chosen) for f in FAULTS + OTHER_FAULTS}}
    out = ["--model", "kafka", "--protocol", preset]
    for key, value in sets.items():
        out += ["--set", f"{key}={value}"]
    return out


def search(args: list[str], seconds: float) -> dict:
    """One ``kafka-mc check`` in a child process, stopped after ``seconds``."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "kafka_mc.explorers.cli", "check", *args, "--json", "--out", out]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        timer = _Timer(child, seconds)
        stdout = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        timer.cancel()
        wall = time.perf_counter() - t0
    try:
        got = json.loads(stdout)
    except ValueError:
        raise SystemExit(f"bench/por.py: {' '.join(cmd)} printed no report "
                         f"(exit {child.returncode})") from None
    stats = got["stats"]
    first = got["violations"][0]["property"] if got["violations"] else None
    return {"distinct": stats["distinct"], "generated": stats["generated"],
            "depth": stats["depth"], "seconds": stats["seconds"], "wall": wall,
            "rss_mb": usage.ru_maxrss / 1024, "complete": got["complete"],
            "violation": first, "reduced": got.get("reduction", {}).get("reduced_states")}


class _Timer:
    def __init__(self, child: subprocess.Popen, seconds: float):
        import threading
        self._t = threading.Timer(seconds, lambda: child.poll() is None
                                  and child.send_signal(signal.SIGTERM))
        self._t.start()

    def cancel(self) -> None:
        self._t.cancel()


def verdict(r: dict) -> str:
    if r["violation"]:
        return f"{r['violation']} (first violation)"
    return "ok (exhausted)" if r["complete"] else "none yet (cut)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", default=list(DEFAULT))
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--explorer", default="bfs", choices=("bfs", "spark"))
    ap.add_argument("--also", action="append", default=[], metavar="ARG")
    ap.add_argument("--only", choices=("full", "reduced"))
    args = ap.parse_args()
    builds = subprocess.run([sys.executable, "-m", "kafka_mc.model.build.cython_build", "status"], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                            text=True)
    print(f"compiled builds (model/build/compiled.py): {builds.stdout.strip() or builds.stderr.strip()}")
    print("| run | search | distinct | generated | depth | seconds | peak RSS MB | verdict "
          "| states expanded reduced | factor |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for run in args.runs:
        base = arguments(run) + ["--explorer", args.explorer] + args.also
        full = None if args.only == "reduced" else search(base + ["--no-por"], args.seconds)
        reduced = None if args.only == "full" else search(base + ["--por"], args.seconds)
        for name, r in (("full", full), ("reduced", reduced)):
            if r is None:
                continue
            factor = f"{full['distinct'] / r['distinct']:.2f}" if name == "reduced" and full else ""
            print(f"| {run} | {name} | {r['distinct']:,} | {r['generated']:,} | {r['depth']} "
                  f"| {r['seconds']:.1f} | {r['rss_mb']:.0f} | {verdict(r)} "
                  f"| {'' if name == 'full' else format(r['reduced'] or 0, ',')} | {factor} |",
                  flush=True)


if __name__ == "__main__":
    main()
