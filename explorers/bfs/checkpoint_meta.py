"""What a checkpoint's meta file may hold, checked before anything in it is used: the validators
the BFS's checkpoints (``kafka_mc.explorers.bfs.checkpoint``) and Spark's (``kafka_mc.explorers.spark.store``)
share. Each takes a value decoded from JSON and says whether it has the shape asked for."""
from __future__ import annotations

import json
from pathlib import Path

from kafka_mc.model.config import UserFileError, read_user_file

# the kinds of violation a search reports before it ends (a witness is reported only at the end)
REPORTED_KINDS = ("always", "transition", "terminal", "deadlock")


def count(v) -> bool:
    """A count: a non-negative int (not a bool), below 2**62."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 62


def counts(v) -> bool:
    return isinstance(v, list) and all(map(count, v))


def names(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def tally(v) -> bool:
    """Counts by name (actions fired, found)."""
    return isinstance(v, dict) and all(isinstance(k, str) and count(n) for k, n in v.items())


def edges(v) -> bool:
    """Per state machine of the model, the edges taken: lists of [source, target] names."""
    return isinstance(v, list) and all(
        isinstance(e, list) and all(isinstance(x, list) and len(x) == 2
                                    and all(isinstance(n, str) for n in x) for x in e) for e in v)


def reports(v) -> bool:
    """Violations reported so far: ``{kind, property, path}``, ``path`` the successor positions
    from an initial state (``kafka_mc.explorers.core.adapter.follow``)."""
    return isinstance(v, list) and all(
        isinstance(r, dict) and set(r) == {"kind", "property", "path"}
        and r["kind"] in REPORTED_KINDS and isinstance(r["property"], str)
        and counts(r["path"]) and len(r["path"]) >= 1 for r in v)


MAX_META_BYTES = 256 * 2**20


def read_json(file: Path, where: str, error: type[Exception]):
    """A checkpoint's meta file as JSON, read as every user file is (``read_user_file``: a
    regular file only, never blocking on a FIFO, at most ``MAX_META_BYTES``); ``error`` (one
    line starting with ``where``) if it is not."""
    try:
        data = read_user_file(file, MAX_META_BYTES, where, "checkpoint")
        return json.loads(data.decode("utf-8"))
    except UserFileError as e:
        raise error(str(e)) from None
    except UnicodeDecodeError:
        raise error(f"{where}: is unreadable (not UTF-8 text)") from None
    except json.JSONDecodeError as e:
        raise error(f"{where}: is unreadable (not JSON: {e.msg} at line {e.lineno})") from None
    except (ValueError, RecursionError):
        raise error(f"{where}: is unreadable (nested too deeply, or a number too long)") from None
