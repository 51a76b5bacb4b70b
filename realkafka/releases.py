"""The Apache Kafka releases kafka-mc runs for real, and the model preset each stands for.

One place: ``make kafka`` fetches these (``python -m realkafka.fetch``), ``kafka-mc real versions``
prints them, a run on a release checks it against its preset. A release stands for the preset
whose flags are the Kafka changes the release contains (model/kafka/versions.py declares each
preset by the KIPs and fixes it turned on).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple


class Release(NamedTuple):
    version: str            # the Maven version of org.apache.kafka:kafka_2.13
    preset: str             # the model preset (protocol.version) it stands for
    transaction_version: int  # the transaction.version its storage is formatted with (1 or 2)
    why: str                # the KIPs and fixes that make it that preset


RELEASES: tuple[Release, ...] = (
    Release("3.6.2", "kafka-3.6", 1,
            "KIP-890 part 1 (partition verification with a verification guard) is in 3.6; "
            "transaction.version does not exist yet (TV1)."),
    Release("3.9.2", "kafka-3.6", 1,
            "3.7 .. 3.9 keep KIP-890 part 1 only; part 2 (TV2) shipped in 4.0."),
    Release("4.0.2", "kafka-4.0", 2,
            "KIP-890 part 2 (TV2: an epoch bump at every EndTxn, implicit partition add), formatted "
            "with transaction.version=2."),
    Release("4.1.2", "kafka-4.1", 2,
            "4.1: a TV2 leader retries a verification answered CONCURRENT_TRANSACTIONS itself "
            "(KAFKA-18654)."),
    Release("4.2.2", "kafka-4.2", 2,
            "4.2: KIP-1228, TV2 leaders require a marker epoch greater than the stored one."),
    Release("4.3.1", "latest", 2,
            "4.3: every fix the model knows, KAFKA-19999 (an equal-epoch marker retry with no "
            "open transaction is a no-op) included."),
    Release("4.4.0", "latest", 2,
            "The newest release served: every fix the model knows."),
)
BY_VERSION = {r.version: r for r in RELEASES}
NEWEST = RELEASES[-1].version


def cache_root() -> Path:
    """Where ``make kafka`` puts each release's classpath: ``$KAFKA_MC_KAFKA_CACHE`` or the
    checkout's git-ignored ``build/kafka``."""
    env = os.environ.get("KAFKA_MC_KAFKA_CACHE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "build" / "kafka"


def home(version: str) -> Path:
    """The folder of one fetched release: ``lib/`` (the jars) and ``driver/`` (the compiled
    client driver); complete only once ``fetched`` says so."""
    return cache_root() / version


def fetched(version: str) -> bool:
    """True when ``make kafka`` completed the release (its marker is written last)."""
    return (home(version) / "FETCHED").is_file()


def classpath(version: str) -> str:
    """The release's jars as a Java classpath (a wildcard: the JVM lists the folder)."""
    return str(home(version) / "lib" / "*")


class ReleaseError(ValueError):
    """An unknown or unfetched release: one line for the user, exit 2."""


def release(version: str) -> Release:
    """The supported release ``version``, fetched; else a ``ReleaseError`` naming the fix."""
    r = BY_VERSION.get(version)
    if r is None:
        known = ", ".join(BY_VERSION)
        raise ReleaseError(f"Kafka {version[:40]!r} is not a supported release (supported: {known})")
    if not fetched(version):
        raise ReleaseError(f"Kafka {version} is not fetched: run `make kafka` (it fetches every "
                           f"supported release from Maven Central into {cache_root()})")
    return r
