"""The Apache Kafka releases kafka-mc runs for real, and the model preset each stands for.

One place: ``kafka-mc real fetch`` (``make kafka``) fetches these, ``kafka-mc real versions``
prints them, a run on a release checks it against its preset. A Kafka distribution of the
user's own (``--kafka-home DIR``, ``from_home``) runs as a release does, judged against the
preset ``--protocol`` names. A release stands for the preset
whose flags are the Kafka changes the release contains (model/kafka/versions.py declares each
preset by the KIPs and fixes it turned on).
"""
from __future__ import annotations

import hashlib
import os
import re
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
    # A Kafka distribution of the user's own (``--kafka-home``: a folder with libs/), judged
    # against ``stands_for`` (the preset ``--protocol`` names); "" for a fetched release.
    home_dir: str = ""
    stands_for: str = ""

    @property
    def preset(self) -> str:
        """The model preset (protocol.version) the release stands for: the Kafka model says
        (``kafka_mc.model.kafka.versions.RELEASES``, through the registry), since which fixes a release
        contains is knowledge of the model's, not the harness's; a home's, what ``--protocol``
        named."""
        return self.stands_for or _presets()[self.version]

    @property
    def why(self) -> str:
        """What the preset turned on: its doc."""
        return _preset_docs().get(self.preset, "")

    @property
    def own(self) -> bool:
        """A distribution of the user's (``--kafka-home``), not a fetched release."""
        return bool(self.home_dir)

    @property
    def name(self) -> str:
        """``4.4.0``, or ``4.4.0 at /path/to/kafka`` for a home."""
        return f"{self.version} at {self.home_dir}" if self.own else self.version


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
    """Where ``kafka-mc real fetch`` (``make kafka``) puts each release's classpath:
    ``$KAFKA_MC_KAFKA_CACHE``; in a checkout (a ``pyproject.toml`` beside the packages) its
    git-ignored ``build/kafka``; else (a pip install) the user's cache folder,
    ``$XDG_CACHE_HOME/kafka-mc/kafka`` or ``~/.cache/kafka-mc/kafka``, never site-packages."""
    env = os.environ.get("KAFKA_MC_KAFKA_CACHE")
    if env:
        return Path(env)
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file():
        return root / "build" / "kafka"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "kafka-mc" / "kafka"


def _of(release: Release | str) -> Release:
    """A release given by its version (a supported one, fetched or not) or as itself."""
    if isinstance(release, Release):
        return release
    return BY_VERSION.get(release) or Release(str(release), 2 if _major(release) >= 4 else 1)


def home(release: Release | str) -> Path:
    """The folder of one release: a fetched one's ``lib/`` (the jars) and ``driver/`` (the
    compiled client driver), complete only once ``fetched`` says so; or the user's distribution."""
    r = _of(release)
    return Path(r.home_dir) if r.own else cache_root() / r.version


def lib(release: Release | str) -> Path:
    """The folder of the release's jars: a fetched release's ``lib/``, a distribution's ``libs/``."""
    r = _of(release)
    return home(r) / ("libs" if r.own else "lib")


def driver_dir(release: Release | str) -> Path:
    """The client driver compiled against the release: beside a fetched release's jars; for a
    distribution of the user's, in the cache (``homes/<digest of its folder>/driver``), never in
    their Kafka folder."""
    r = _of(release)
    if not r.own:
        return home(r) / "driver"
    digest = hashlib.sha256(str(Path(r.home_dir).resolve()).encode()).hexdigest()[:16]
    return cache_root() / "homes" / digest / "driver"


def fetched(version: str) -> bool:
    """True when ``make kafka`` completed the release (its marker is written last) and this
    user may read it (a cache fetched by another user with folders of mode 0700 is not)."""
    folder = home(version)
    return (folder / "FETCHED").is_file() and all(
        os.access(folder / name, os.R_OK | os.X_OK) for name in ("lib", "driver")
        if (folder / name).exists())     # (one missing: the driver says what to run)


def classpath(release: Release | str) -> str:
    """The release's jars as a Java classpath (a wildcard: the JVM lists the folder)."""
    return str(lib(release) / "*")


def release(version: str) -> Release:
    """The supported release ``version``, fetched; else a ``ReleaseError`` naming the fix."""
    r = BY_VERSION.get(version)
    if r is None:
        known = ", ".join(BY_VERSION)
        raise ReleaseError(f"Kafka {version[:40]!r} is not a supported release (supported: {known}; "
                           "a build of your own: --kafka-home DIR)")
    if not fetched(version):
        if (home(version) / "FETCHED").is_file():
            raise ReleaseError(f"Kafka {version} is fetched into {home(version)} but this user "
                               "cannot read its lib/ or driver/ (mode 0700?): run `kafka-mc real "
                               "fetch` as its owner, which makes them readable")
        raise ReleaseError(f"Kafka {version} is not fetched: run `kafka-mc real fetch {version}` "
                           f"(`make kafka` in a checkout; Maven fetches it from Maven Central "
                           f"into {cache_root()})")
    return r


def usable(r: Release | str) -> Release:
    """A release to run: a supported one fetched (``release``), or a distribution of the user's
    that is still one (``from_home`` checked it)."""
    if isinstance(r, Release) and r.own:
        _distribution(Path(r.home_dir))
        return r
    return release(r.version if isinstance(r, Release) else r)


def _major(version: str) -> int:
    m = re.match(r"(\d+)\.", str(version))
    return int(m.group(1)) if m else 0


def preset_for(protocol: str) -> str:
    """The preset ``protocol`` names: a preset of the Kafka model, or a release (``4.4.0``) that
    one stands for (``kafka-4.3``); ``ReleaseError`` for neither."""
    presets = _entry().presets
    if protocol in presets:
        return protocol
    standing = dict(_entry().releases).get(protocol)
    if standing:
        return standing
    raise ReleaseError(f"--protocol {protocol[:40]!r} is neither a preset of the Kafka model "
                       f"({', '.join(presets)}) nor a release one stands for "
                       f"({', '.join(BY_VERSION)})")


def _distribution(folder: Path) -> str:
    """The Kafka version of a distribution folder (``libs/kafka-clients-<version>.jar`` beside
    the broker's ``libs/kafka_<scala>-<version>.jar``); ``ReleaseError`` (one line) when the
    folder is not one."""
    where = str(folder)[:200]
    if not folder.is_dir():
        raise ReleaseError(f"--kafka-home {where}: no such folder")
    libs = folder / "libs"
    clients = sorted(libs.glob("kafka-clients-*.jar")) if libs.is_dir() else []
    brokers = sorted(libs.glob("kafka_2.*-*.jar")) if libs.is_dir() else []
    if not clients or not brokers:
        raise ReleaseError(f"--kafka-home {where}: not a Kafka distribution (no libs/"
                           f"{'kafka-clients-*.jar' if not clients else 'kafka_2.13-*.jar'}): give "
                           "the folder a Kafka build unpacks to (bin/, config/, libs/; "
                           "./gradlew releaseTarGz makes one)")
    version = clients[-1].name[len("kafka-clients-"):-len(".jar")]
    if not re.match(r"\d+\.\d+", version):
        raise ReleaseError(f"--kafka-home {where}: cannot read a Kafka version from "
                           f"{clients[-1].name[:80]}")
    return version


def from_home(folder: str, protocol: str | None) -> Release:
    """A distribution of the user's (a branch, a patched release, a snapshot: ``--kafka-home``),
    judged against ``protocol`` (a preset, or a release one stands for; without it, the
    preset of the release the distribution's version names, when it is a supported one). Its
    storage is formatted with transaction.version 2 from 4.0 on, as every 4.x release is here,
    and a hard failover on one broker is a bounce then a failover there (as 4.x's)."""
    path = Path(folder).expanduser()
    version = _distribution(path)
    if protocol:
        preset = preset_for(protocol)
    elif version in BY_VERSION:
        preset = BY_VERSION[version].preset
    else:
        raise ReleaseError(f"--kafka-home {str(folder)[:200]} holds Kafka {version[:40]}, which "
                           "no preset stands for yet: name the one to judge it against with "
                           "--protocol PRESET (or the release it derives from, e.g. --protocol "
                           f"{NEWEST})")
    four = _major(version) >= 4
    return Release(version, 2 if four else 1, 2 if four else 1, str(path.resolve()), preset)


def recorded(run: dict) -> Release | None:
    """The release a run folder's ``run.json`` names: a supported one, or the distribution of
    the user's it ran (``kafka_home``, judged against the preset it records); None for neither."""
    version = str(run.get("version"))
    if run.get("kafka_home") and isinstance(run.get("preset"), str):
        four = _major(version) >= 4
        return Release(version, 2 if four else 1, 2 if four else 1, str(run["kafka_home"]),
                       run["preset"])
    return BY_VERSION.get(version)
