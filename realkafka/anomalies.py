"""The client-visible anomalies of a real run, in Jepsen's vocabulary and named after the model's
property where they are the same claim.

A run writes records whose value names the transaction that wrote them (``record_value``); what
the application saw of each transaction (its commit or abort answered, failed or unknown) comes
from the client history, what was visible from a read_committed consumer that read every partition
to its end after the run quiesced, and the hanging check from the end state (each partition's LSO
and high watermark, each transactional.id's state at its coordinator).

| anomaly | the model's property | evidence |
|---|---|---|
| aborted-read | read_committed_isolation | a record of a transaction whose abort the client saw succeed, read under read_committed |
| lost-write | committed_writes_visible | a record of a transaction whose commit the client saw succeed, never read |
| duplicate | no_duplicates | a record read twice |
| torn-transaction | txn_atomicity | a transaction some of whose records were read and some not |
| zombie-write | zombie_fencing | a record a fenced instance sent after its successor initialized, read |
| hanging-transaction | no_hanging_transactions | an LSO held below the high watermark after the run quiesced, no transaction ongoing at its coordinator |
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

PROPERTIES = {"aborted-read": "read_committed_isolation", "lost-write": "committed_writes_visible",
              "duplicate": "no_duplicates", "torn-transaction": "txn_atomicity",
              "zombie-write": "zombie_fencing", "hanging-transaction": "no_hanging_transactions"}
CHECKED = tuple(PROPERTIES)
VALUE = re.compile(r"^t(\d+)\.i(\d+)\.x(\d+)\.r(\d+)(z?)$")
ONGOING = {"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence", "ONGOING",
           "PREPARE_COMMIT", "PREPARE_ABORT", "PREPARE_EPOCH_FENCE"}


def record_value(tid: int, instance: int, txn: int, record: int, zombie: bool = False) -> str:
    """A record's value: the transaction that wrote it and its place in it (``z``: sent by an
    instance after it was fenced)."""
    return f"t{tid}.i{instance}.x{txn}.r{record}{'z' if zombie else ''}"


def parse_value(value: str) -> tuple[tuple[int, int, int], int, bool] | None:
    m = VALUE.match(value or "")
    if not m:
        return None
    t, i, x, r, z = m.groups()
    return (int(t), int(i), int(x)), int(r), bool(z)


@dataclass(frozen=True)
class Anomaly:
    name: str
    property: str
    transaction: str
    evidence: str

    def to_dict(self) -> dict:
        return asdict(self)


def _txn_name(ident) -> str:
    return "t{}.i{}.x{}".format(*ident)


def check(outcomes: Mapping[tuple, str], sent: Mapping[tuple, Iterable[str]],
          reads: Iterable[Mapping], partitions: Mapping[int, Mapping],
          open_at_coordinator: bool) -> list[Anomaly]:
    """The anomalies of one run.

    ``outcomes``: transaction -> "committed" | "aborted" | "failed" | "unknown" (what its commit or
    abort returned to the application); ``sent``: transaction -> the values whose send was
    acknowledged; ``reads``: the read_committed consumer's records ({"partition", "offset",
    "value"}); ``partitions``: partition -> {"lso", "high_watermark"}; ``open_at_coordinator``:
    whether any transaction is still ongoing or being completed at its coordinator.
    """
    found: list[Anomaly] = []
    reads = list(reads)
    counts = Counter(r["value"] for r in reads)
    seen_by_txn: dict[tuple, set[str]] = defaultdict(set)
    for value in counts:
        parsed = parse_value(value)
        if parsed is None:
            continue
        ident, _, zombie = parsed
        seen_by_txn[ident].add(value)
        if zombie:
            found.append(Anomaly("zombie-write", PROPERTIES["zombie-write"], _txn_name(ident),
                                 f"{value} was sent after the instance was fenced and is visible "
                                 "to read_committed"))
        if outcomes.get(ident) == "aborted":
            at = [(r["partition"], r["offset"]) for r in reads if r["value"] == value]
            found.append(Anomaly("aborted-read", PROPERTIES["aborted-read"], _txn_name(ident),
                                 f"{value} (partition, offset {at[0]}) read under read_committed; "
                                 "the client's abortTransaction succeeded"))
    for value, n in sorted(counts.items()):
        if n > 1:
            at = [(r["partition"], r["offset"]) for r in reads if r["value"] == value]
            found.append(Anomaly("duplicate", PROPERTIES["duplicate"],
                                 _txn_name(parse_value(value)[0]) if parse_value(value) else "?",
                                 f"{value} read {n} times at (partition, offset) {at}"))
    for ident in sorted(set(sent) | set(seen_by_txn)):
        acked = {v for v in sent.get(ident, ()) if not v.endswith("z")}
        visible = {v for v in seen_by_txn.get(ident, ()) if not v.endswith("z")}
        if outcomes.get(ident) == "committed" and acked - visible:
            found.append(Anomaly("lost-write", PROPERTIES["lost-write"], _txn_name(ident),
                                 f"commitTransaction succeeded but {sorted(acked - visible)} never "
                                 "read under read_committed"))
        elif visible and acked - visible:
            found.append(Anomaly("torn-transaction", PROPERTIES["torn-transaction"],
                                 _txn_name(ident),
                                 f"{sorted(visible)} visible, {sorted(acked - visible)} not "
                                 f"(client outcome: {outcomes.get(ident, 'none')})"))
    if not open_at_coordinator:
        for p, state in sorted(partitions.items()):
            if state["lso"] < state["high_watermark"]:
                found.append(Anomaly("hanging-transaction", PROPERTIES["hanging-transaction"], "",
                                     f"partition {p}: LSO {state['lso']} < high watermark "
                                     f"{state['high_watermark']} after the run quiesced, no "
                                     "transaction ongoing at its coordinator"))
    return found
