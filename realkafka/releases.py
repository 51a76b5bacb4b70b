"""The Apache Kafka releases kafka-mc runs for real, and the model preset each stands for.

One place: ``make kafka`` fetches these (``python -m kafka_mc.realkafka.fetch``), ``kafka-mc real versions``
prints them, a run on a release checks it against its preset. A release stands for the preset
whose flags are the Kafka changes the release contains (model/kafka/versions.py declares each
preset by the KIPs and fixes it turned on).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple


class ReleaseError(ValueError):
    """An unknown or unfetched release: one line for the user, exit 2."""


class Release(NamedTuple):
    version: str              # the Maven version of org.apache.kafka:kafka_2.13
    transaction_version: int  # the transaction.version its storage is formatted with (1 or 2)
    # the model's coordinator failovers one hard failover of the one combined node is: 4.x leads
    # again at the old epoch, then the controller fences the old incarnation (a bounce, then a
    # failover: realkafka.losses.restarts_failing_over, conformance #19); 3.x a bounce (#15)
    hard_restart_failovers: int = 1

    @property
    def preset(self) -> str:
        """The model preset (protocol.version) the release stands for: the Kafka model says
        (``kafka_mc.model.kafka.versions.RELEASES``, through the registry), since which fixes a release
        contains is knowledge of the model's, not the harness's."""
        return _presets()[self.version]

    @property
    def why(self) -> str:
        """What the preset turned on: its doc."""
        return _preset_docs().get(self.preset, "")


def _entry():
    from kafka_mc.model import registry
    return registry.entry("kafka")


def _presets() -> dict[str, str]:
    mapping = dict(_entry().releases)
    missing = [r.version for r in RELEASES if r.version not in mapping]
    if missing:
        raise ReleaseError(f"the Kafka model names no preset for release {missing[0]}")
    return mapping


def _preset_docs() -> dict[str, str]:
    return dict(_entry().preset_docs)


# The releases `make kafka` fetches, oldest first: one of every line the model distinguishes, and
# the newest served. 3.x has no transaction.version (TV1); 4.x is formatted with TV2.
RELEASES: tuple[Release, ...] = (
    Release("3.5.2", 1),     # the last before KIP-890: a hanging transaction is possible
    Release("3.6.2", 1),
    Release("3.9.2", 1),
    Release("4.0.2", 2, 2),
    Release("4.1.2", 2, 2),
    Release("4.2.2", 2, 2),
    Release("4.3.1", 2, 2),
    Release("4.4.0", 2, 2),
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
    """True when ``make kafka`` completed the release (its marker is written last) and this
    user may read it (a cache fetched by another user with folders of mode 0700 is not)."""
    folder = home(version)
    return (folder / "FETCHED").is_file() and all(
        os.access(folder / name, os.R_OK | os.X_OK) for name in ("lib", "driver"))


def classpath(version: str) -> str:
    """The release's jars as a Java classpath (a wildcard: the JVM lists the folder)."""
    return str(home(version) / "lib" / "*")


def release(version: str) -> Release:
    """The supported release ``version``, fetched; else a ``ReleaseError`` naming the fix."""
    r = BY_VERSION.get(version)
    if r is None:
        known = ", ".join(BY_VERSION)
        raise ReleaseError(f"Kafka {version[:40]!r} is not a supported release (supported: {known})")
    if not fetched(version):
        if (home(version) / "FETCHED").is_file():
            raise ReleaseError(f"Kafka {version} is fetched into {home(version)} but this user "
                               "cannot read its lib/ or driver/ (mode 0700?): run `make kafka` "
                               "as its owner, which makes them readable")
        raise ReleaseError(f"Kafka {version} is not fetched: run `make kafka` (it fetches every "
                           f"supported release from Maven Central into {cache_root()})")
    return r
