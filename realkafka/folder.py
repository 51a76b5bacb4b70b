"""A real run's folder, said plainly: what each file holds (``FILES``: ``kafka-mc real run`` lists
what a run wrote, the manual's Real Kafka page the same table) and the faults a run injected
(``faults``: its plan's, with whether the proxy met each one)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from kafka_mc.model.display import columns

# Every file a run folder may hold, in the order they are listed: what writes it, what it holds.
FILES = {
    "run.json": "the run: release, preset, seed, brokers and the whole config "
                "(what `real conform --run` reads back)",
    "plan.json": "the schedule the seed gave: each instance's transactions, where one crashes, "
                 "the pauses, the network faults, failovers and outages",
    "events.jsonl": "the proxy's event log: every request and response between the clients and "
                    "the brokers and between brokers, decoded, with the faults applied to them",
    "history.jsonl": "the client's history (Jepsen style): each call's invocation and what it "
                     "returned or threw",
    "report.json": "the end state (each partition's log of batches and markers, LSO and high "
                   "watermark, DescribeTransactions, DescribeProducers, what read_committed read), "
                   "the anomalies, and each fault with the events it was applied to",
    "steps.jsonl": "(real reproduce) each step of the trace: what was done on the cluster and "
                   "what was seen",
    "end_state.json": "(real reproduce's conform/) the end state as conformance reads it",
    "conformance.json": "(real conform) the validation's verdict: conforms, diverges (the "
                        "divergence: the last event explained, the first that is not, the steps "
                        "enabled there) or undecided",
    "behaviour.itf.json": "(real conform, when the run conforms) the model's behaviour that "
                          "explains it: an ITF trace that kafka-mc replay and explore open",
    "timeline.html": "(real timeline) the run drawn on one time axis: clients, broker senders "
                     "and the proxy's connections, each request a mark to its response, faults, "
                     "COMMIT/ABORT markers and transaction outcomes (open it in a browser)",
    "server.log": "the broker's own log (log4j)",
    "stdout.log": "the broker JVM's standard output and error",
    "kafka-mc-run.json": "the manifest (realkafka/runfolder/): marks the folder as kafka-mc's, "
                         "lists what the run writes, says whether it is complete or why not",
}


def listing(folder: Path, indent: str = "  ", width: int | None = None) -> list[str]:
    """Each file the folder holds: its name and what it holds (``FILES`` order, then any other
    file by name), within ``width`` (the terminal's), continued under the description."""
    try:
        present = {p.name for p in Path(folder).iterdir() if p.is_file()}
    except OSError:
        return []
    width = width or columns()
    names = max((len(n) for n in present), default=0)
    known = [n for n in FILES if n in present]
    other = sorted(present - set(FILES))
    out = []
    for n in known + other:
        head = f"{indent}{n:<{names}}  "
        out += textwrap.wrap(FILES.get(n, ""), width, initial_indent=head,
                             subsequent_indent=" " * len(head)) or [head.rstrip()]
    return out


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def faults(folder: Path) -> list[str]:
    """The faults the run's plan injected, one line each (and whether the proxy met the
    network ones: ``report.json``); ``["none"]`` for a plan without faults."""
    try:
        plan = json.loads((Path(folder) / "plan.json").read_text())
    except (OSError, ValueError):
        return []
    try:   # the proxy's faults, installed in the plan's order (realkafka.run._install_faults)
        applied = [f.get("applied_to_events") or []
                   for f in json.loads((Path(folder) / "report.json").read_text())
                   .get("end_state", {}).get("faults", [])]
    except (OSError, ValueError, AttributeError):
        applied = []
    out = []
    for inst in plan.get("instances", []):
        crash = inst.get("crash")
        name = f"t{inst.get('tid')}.i{inst.get('number')}"
        if crash:
            out.append(f"producer crash: {name} abandoned {crash[1]} its transaction {crash[0]}; "
                       "the next instance starts, this one goes on as a zombie")
        for txn in inst.get("txns", []):
            if txn.get("pause"):
                out.append(f"transaction timeout: {name} pauses in transaction {txn.get('number')} "
                           "past transaction.timeout.ms")
    kinds = {"delay": "held back", "duplicate": "duplicated (retried on a new connection, the "
             "old copy delivered)", "drop-request": "dropped", "drop-response": "answer dropped"}
    for i, nf in enumerate(plan.get("network", [])):
        hold = f" {nf.get('hold_ms')} ms" if nf.get("kind") == "delay" else ""
        where = applied[i] if i < len(applied) else None
        met = ("" if where is None else
               f" (applied to event {', '.join(map(str, where))})" if where else " (never met)")
        out.append(f"network: the {_nth(nf.get('occurrence', 0))} {nf.get('api')} "
                   f"{kinds.get(nf.get('kind'), nf.get('kind'))}{hold}{met}")
    for f in plan.get("failovers", []):
        out.append(f"coordinator failover after the {_nth(f.get('after_end_txn', 0))} EndTxn "
                   f"answer: its broker {'killed' if f.get('hard') else 'shut down'} and "
                   "restarted")
    for o in plan.get("outages", []):
        out.append(f"partition {o.get('partition')} offline: its broker killed after a Produce "
                   "to it, down until fenced")
    return out or ["none"]
