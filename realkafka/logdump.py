"""A partition's log as Kafka's own ``DumpLogSegments`` reads it: batches, records and markers.

``DumpLogSegments --files <segments> --deep-iteration --print-data-log`` prints, per segment, one
line per batch (``baseOffset: .. lastOffset: .. count: .. baseSequence: .. producerId: ..
producerEpoch: .. isTransactional: .. isControl: ..``) and, under it, one ``| offset: ..`` line per
record: ``key: .. payload: ..`` for data, ``endTxnMarker: COMMIT|ABORT coordinatorEpoch: N`` for a
control record (``EndTransactionMarker``). One JVM reads every segment of a call.

The tool's class moved: ``kafka.tools.DumpLogSegments`` (Scala, in kafka_2.13) up to 4.2,
``org.apache.kafka.tools.DumpLogSegments`` (Java, in the kafka-tools jar) from 4.3 - a release's
classpath needs ``org.apache.kafka:kafka-tools`` for 4.3+. The batch and record lines read the same
in 3.6 and 4.4; ``--transaction-log-decoder`` does not: 3.x prints
``transaction_metadata::transactionalId=T`` / ``producerId:0,producerEpoch:0,state=Ongoing,
partitions=[t-0],...``, 4.x prints the records as JSON (``TransactionLogKey``/``Value``; 4.1 ..
4.3 print the status as TransactionState's id, 4.0 and 4.4 as its name).
``transaction_log`` reads ``__transaction_state`` in every form into one shape.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
import zipfile
from pathlib import Path

from kafka_mc.realkafka import releases
from kafka_mc.realkafka.releases import Release

# The JVM base the cluster shares (realkafka.cluster imports it from here: the cluster is above)

JVM_OPTIONS = ("-Xmx384m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-XX:-UsePerfData", "-Djava.awt.headless=true")


class ClusterError(ValueError):
    """A cluster that cannot start or answer, or Kafka's tools that cannot read its files: one line
    for the user (the CLI exits 2); ``details`` holds the log's last lines when there is one.
    Defined here, below the cluster, and the same class as ``kafka_mc.realkafka.cluster.ClusterError``."""

    def __init__(self, message: str, details: str = ""):
        super().__init__(" ".join(str(message).split())[:400])
        self.details = details


LOGGING_FOLDER = "logging"


def broker_classpath(release: Release | str) -> str:
    """The brokers' and tools' classpath: the release's ``lib/`` and, when the fetch put one there,
    its ``logging/`` folder (an SLF4J binding - slf4j-reload4j + reload4j - kept out of ``lib/``
    so that the client driver's own binding stays the only one on its classpath); a
    distribution's ``libs/`` (its own binding in it)."""
    cp = releases.classpath(release)
    logging = releases.home(release) / LOGGING_FOLDER
    if not _own(release) and any(logging.glob("*.jar")):
        cp += os.pathsep + str(logging / "*")
    return cp


def _own(release: Release | str) -> bool:
    return isinstance(release, Release) and release.own


def _jar_names(release: Release | str) -> list[str]:
    folders = [releases.lib(release)] + ([] if _own(release)
                                         else [releases.home(release) / LOGGING_FOLDER])
    return sorted(p.name for d in folders for p in d.glob("*.jar"))


def logging_binding(release: Release | str) -> str | None:
    """Which SLF4J binding the release's classpath holds: ``"log4j"`` (reload4j / log4j 1),
    ``"log4j2"`` or None (then Kafka logs nothing: slf4j-api alone is a no-op logger)."""
    names = _jar_names(release)
    if any(n.startswith(("slf4j-reload4j", "slf4j-log4j12")) for n in names):
        return "log4j"
    if any(n.startswith(("log4j-slf4j-impl", "log4j-slf4j2-impl")) for n in names):
        return "log4j2"
    return None


def has_class(release: Release | str, class_name: str) -> bool:
    """Whether one of the release's Kafka jars holds ``class_name`` (dotted)."""
    entry = class_name.replace(".", "/") + ".class"
    for jar in sorted(releases.lib(release).glob("kafka*.jar")):
        try:
            with zipfile.ZipFile(jar) as z:
                z.getinfo(entry)
                return True
        except (KeyError, zipfile.BadZipFile, OSError):
            continue
    return False


TOOL_CLASSES = ("kafka.tools.DumpLogSegments", "org.apache.kafka.tools.DumpLogSegments")
_PAIR = re.compile(r"(\w+): (\S+)")
_INT_FIELDS = {"baseOffset": "base_offset", "lastOffset": "last_offset", "count": "count",
               "baseSequence": "base_sequence", "lastSequence": "last_sequence",
               "producerId": "producer_id", "producerEpoch": "producer_epoch",
               "partitionLeaderEpoch": "partition_leader_epoch", "position": "position",
               "CreateTime": "create_time", "size": "size", "magic": "magic"}
_BOOL_FIELDS = {"isTransactional": "transactional", "isControl": "control"}
_RECORD = re.compile(r"\|\s*offset: (-?\d+)(?: (?:Create|LogAppend|NoTimestamp)\w*: -?\d+)?"
                     r"(?: keySize: (-?\d+))?(?: valueSize: (-?\d+))?(?: sequence: (-?\d+))?"
                     r"(?: headerKeys: \[[^\]]*\])?(.*)$")


def tool_class(release: Release | str) -> str:
    """The DumpLogSegments class of the release's classpath; ClusterError when it has none."""
    for name in TOOL_CLASSES:
        if has_class(release, name):
            return name
    version = release.name if isinstance(release, Release) else release
    raise ClusterError(
        f"Kafka {version}'s classpath has no DumpLogSegments (kafka.tools in kafka_2.13 up to "
        f"4.2, org.apache.kafka.tools in the kafka-tools jar from 4.3): the release's fetch needs "
        f"org.apache.kafka:kafka-tools")


def segments(folder: Path) -> list[Path]:
    """A partition folder's segment files, in offset order (their names are base offsets)."""
    return sorted(Path(folder).glob("*.log"), key=lambda p: p.name)


def _record(line: str) -> dict | None:
    m = _RECORD.match(line)
    if m is None:
        return None
    offset, key_size, value_size, sequence, rest = m.groups()
    rec: dict = {"offset": int(offset)}
    if sequence is not None:
        rec["sequence"] = int(sequence)
    rest = rest.strip()
    marker = re.match(r"endTxnMarker: (\w+) coordinatorEpoch: (-?\d+)", rest)
    if marker:
        rec["marker"] = marker.group(1)
        rec["coordinator_epoch"] = int(marker.group(2))
        return rec
    if rest.startswith("key: "):
        body = rest[len("key: "):]
        key, sep, value = body.partition(" payload: ")
        rec["key"] = key
        if sep:
            rec["value"] = value
    elif rest.startswith("payload: "):
        rec["value"] = rest[len("payload: "):]
    if key_size is not None and int(key_size) < 0:
        rec.pop("key", None)
    if value_size is not None and int(value_size) < 0:
        rec["value"] = None
    return rec


def _batch(line: str) -> dict:
    batch: dict = {}
    for name, value in _PAIR.findall(line):
        if name in _INT_FIELDS:
            try:
                batch[_INT_FIELDS[name]] = int(value)
            except ValueError:
                pass
        elif name in _BOOL_FIELDS:
            batch[_BOOL_FIELDS[name]] = value == "true"
        elif name == "compresscodec":
            batch["compression"] = value
    batch.setdefault("transactional", False)
    batch.setdefault("control", False)
    batch["records"] = []
    return batch


def parse(text: str) -> dict[str, list[dict]]:
    """DumpLogSegments' output (``--deep-iteration``): ``{segment file: [batch, ...]}``. A control
    batch carries its marker (``"COMMIT"``/``"ABORT"``) and ``coordinator_epoch``."""
    out: dict[str, list[dict]] = {}
    current: list[dict] | None = None
    for line in text.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(line[len("Dumping "):].strip(), [])
        elif line.startswith("baseOffset: ") and current is not None:
            current.append(_batch(line))
        elif line.startswith("|") and current:
            rec = _record(line)
            if rec is None:
                continue
            batch = current[-1]
            if "marker" in rec:
                batch["marker"] = rec.pop("marker")
                batch["coordinator_epoch"] = rec.pop("coordinator_epoch")
            batch["records"].append(rec)
    return out


def dump(version: Release | str, files: list[Path], decoder: str = "data", java: str = "java",
         timeout: float = 120.0) -> dict[str, list[dict]]:
    """Read ``files`` (segment ``.log`` files) with one DumpLogSegments JVM of the release;
    ``decoder`` ``"data"`` (keys and values as UTF-8 strings) or ``"transaction"``
    (``--transaction-log-decoder``)."""
    files = [Path(f) for f in files]
    if not files:
        return {}
    flag = {"data": "--print-data-log", "transaction": "--transaction-log-decoder"}[decoder]
    release, version = version, version.name if isinstance(version, Release) else version
    cmd = [java, *JVM_OPTIONS, "-cp", broker_classpath(release), tool_class(release),
           "--files", ",".join(str(f) for f in files), "--deep-iteration", flag]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                             timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ClusterError(f"DumpLogSegments of Kafka {version} did not run: {e}") from None
    if run.returncode != 0:
        lines = [ln for ln in (run.stderr + run.stdout).splitlines()
                 if ln.strip() and not ln.startswith(("SLF4J", "log4j"))]
        raise ClusterError(f"DumpLogSegments of Kafka {version} failed: "
                           f"{lines[-1] if lines else 'exit ' + str(run.returncode)}",
                           "\n".join(lines[-30:]))
    parsed = parse(run.stdout)
    return {str(f): parsed.get(str(f), []) for f in files}


def _folder(cluster, topic: str, partition: int, node: int | None) -> Path:
    if node is None:
        node = _pick_node(cluster, topic, partition)
    folder = cluster.data_dir(node) / f"{topic}-{partition}"
    deadline = time.monotonic() + 10.0       # a new leader creates its log just after Metadata
    while not folder.is_dir() and cluster.alive(node) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not folder.is_dir():
        raise ClusterError(f"broker {node} holds no log of {topic}-{partition}")
    return folder


def _pick_node(cluster, topic: str, partition: int) -> int:
    """The partition's leader while the cluster answers; else the first node holding it."""
    if cluster.pids():
        try:
            return cluster.leader(topic, partition, timeout=5.0)
        except ClusterError:
            pass
    for n in sorted(cluster.nodes):
        if (cluster.data_dir(n) / f"{topic}-{partition}").is_dir():
            return n
    raise ClusterError(f"no broker holds a log of {topic}-{partition}")


def partition_logs(cluster, partitions: list[tuple[str, int]], node: int | None = None
                   ) -> dict[tuple[str, int], list[dict]]:
    """Several partitions' logs read by one JVM: ``{(topic, partition): [batch, ...]}`` (the
    leader's replica unless ``node`` is given)."""
    folders = {tp: _folder(cluster, tp[0], tp[1], node) for tp in partitions}
    files = {tp: segments(f) for tp, f in folders.items()}
    dumped = dump(cluster.release, [f for fs in files.values() for f in fs],
                  java=getattr(cluster, "java", None) or "java")
    return {tp: [b for f in fs for b in dumped[str(f)]] for tp, fs in files.items()}


def partition_log(cluster, topic: str, partition: int, node: int | None = None) -> list[dict]:
    """``topic``-``partition``'s batches, in offset order: ``{base_offset, last_offset, count,
    producer_id, producer_epoch, base_sequence, last_sequence, transactional, control, records:
    [{offset, sequence, key?, value?}]}``, and for a control batch ``marker`` (COMMIT/ABORT) and
    ``coordinator_epoch``."""
    return partition_logs(cluster, [(topic, partition)], node)[(topic, partition)]


# --- __transaction_state, 3.x text or 4.x JSON --------------------------------------------------

_V3_KEY = re.compile(r"transaction_metadata::transactionalId=(.*)$")


def _v3_value(value: str) -> dict:
    m = re.match(r"producerId:(-?\d+),producerEpoch:(-?\d+),state=(\w+),partitions=\[(.*?)\],"
                 r"txnLastUpdateTimestamp=(-?\d+),txnTimeoutMs=(-?\d+)", value)
    if not m:
        return {"raw": value}
    pid, epoch, state, parts, _ts, timeout = m.groups()
    return {"producer_id": int(pid), "producer_epoch": int(epoch), "state": state,
            "partitions": [p for p in parts.split(",") if p], "timeout_ms": int(timeout)}


# TransactionState's ids (org.apache.kafka.coordinator.transaction.TransactionState): 4.1 .. 4.3
# print transactionStatus as this byte, 4.0 and 4.4 as the name.
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort",
                      4: "CompleteCommit", 5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}


def _v4_value(value: dict) -> dict:
    data = value.get("data", {})
    state = data.get("transactionStatus")
    if isinstance(state, int) or (isinstance(state, str) and state.isdigit()):
        state = TRANSACTION_STATES.get(int(state), state)
    parts = []
    for tp in data.get("transactionPartitions") or []:
        parts += [f"{tp['topic']}-{i}" for i in tp.get("partitionIds", [])]
    out = {"producer_id": data.get("producerId"), "producer_epoch": data.get("producerEpoch"),
           "state": state, "partitions": parts,
           "timeout_ms": data.get("transactionTimeoutMs")}
    if "previousProducerId" in data:
        out["previous_producer_id"] = data["previousProducerId"]
    if "nextProducerId" in data:
        out["next_producer_id"] = data["nextProducerId"]
    if "clientTransactionVersion" in data:
        out["client_transaction_version"] = data["clientTransactionVersion"]
    return out


def transaction_record(key: str | None, value: str | None) -> dict | None:
    """One ``__transaction_state`` record as ``--transaction-log-decoder`` prints it (either
    form): ``{transactional_id, producer_id, producer_epoch, state, partitions, timeout_ms}``;
    ``state`` None for a tombstone (an expired transactional.id)."""
    if key is None:
        return None
    tid = None
    m = _V3_KEY.match(key)
    if m:
        tid = m.group(1)
    elif key.startswith("{"):
        try:
            tid = json.loads(key).get("data", {}).get("transactionalId")
        except ValueError:
            return None
    if tid is None:
        return None
    if value is None or value in ("<DELETE>", "null", ""):
        return {"transactional_id": tid, "state": None}
    if value.startswith("{"):
        try:
            return {"transactional_id": tid, **_v4_value(json.loads(value))}
        except ValueError:
            return {"transactional_id": tid, "raw": value}
    return {"transactional_id": tid, **_v3_value(value)}


def transaction_log(cluster, node: int | None = None) -> list[dict]:
    """``__transaction_state-0`` (the coordinator's log) decoded: one dict per record, in offset
    order, with its ``offset``."""
    folder = _folder(cluster, "__transaction_state", 0, node)
    files = segments(folder)
    dumped = dump(cluster.release, files, decoder="transaction",
                  java=getattr(cluster, "java", None) or "java")
    out = []
    for f in files:
        for batch in dumped[str(f)]:
            for rec in batch["records"]:
                t = transaction_record(rec.get("key"), rec.get("value"))
                if t is not None:
                    out.append({"offset": rec["offset"], **t})
    return out
