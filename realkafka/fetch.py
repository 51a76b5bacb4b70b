"""``kafka-mc real fetch`` (``make kafka``): fetch the supported releases from Maven Central and
compile the client driver.

``kafka-mc real fetch [VERSION ...]`` (or ``python -m kafka_mc.realkafka.fetch``) runs Maven on ``realkafka/maven/pom.xml`` for each
release not yet fetched (``dependency:copy-dependencies`` into a temporary folder renamed into
place, so an interrupted fetch leaves no half release), then compiles the Java driver
(``realkafka/driver/*.java``) against the release's kafka-clients whenever the driver's source
changed, into ``releases.cache_root()`` (a checkout's ``build/kafka``, a pip install's per-user
cache). Nothing else in kafka-mc downloads anything: a run on a release not fetched says to
fetch it. A distribution of the user's (``--kafka-home``) is never fetched: its driver is
compiled at its first run (``prepare_home``).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kafka_mc.realkafka import releases

POM = Path(__file__).resolve().parent / "maven" / "pom.xml"
DRIVER_SOURCES = Path(__file__).resolve().parent / "driver"


class FetchError(RuntimeError):
    """Maven or javac failed: the reason in one line."""


def _tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _publish(tmp: Path, target: Path) -> None:
    """A folder fetched into a temporary one (``mkdtemp``: mode 0700) moved into place with the
    mode the umask gives a new folder (0755 under 022), so that every user who may read the
    cache can run the release, not only whoever fetched it."""
    os.chmod(tmp, 0o777 & ~_umask())
    os.replace(tmp, target)


def share(root: Path, version: str) -> None:
    """The release's folders given the umask's mode again where an older fetch left them
    0700 (its temporary folder's), so that other users are not told "fetched" and then meet
    a ClassNotFoundException."""
    for name in ("lib", "driver", "logging"):
        folder = root / version / name
        try:
            if folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700:
                os.chmod(folder, 0o777 & ~_umask())
        except OSError:
            pass


def fetch_jars(version: str, root: Path) -> None:
    """``root/version/lib``: the release's classpath, fetched by Maven (atomically); fetched again
    when the pom changed since (its digest is kept beside the jars)."""
    lib = root / version / "lib"
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()
    stamp = root / version / "POM_SHA256"
    if lib.is_dir() and stamp.is_file() and stamp.read_text().strip() == digest:
        return
    if shutil.which("mvn") is None:
        raise FetchError("mvn is not on PATH (Maven fetches Kafka from Maven Central)")
    (root / version).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".lib-", dir=root / version))
    try:
        run = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(POM), f"-Dkafka.version={version}",
             "dependency:copy-dependencies", f"-DoutputDirectory={tmp}"],
            capture_output=True, text=True, timeout=1800)
        if run.returncode != 0:
            raise FetchError(f"Maven could not fetch Kafka {version}: {_tail(run.stdout + run.stderr)}")
        if not any(tmp.glob("kafka-clients-*.jar")):
            raise FetchError(f"Maven fetched Kafka {version} without kafka-clients")
        (root / version / "FETCHED").unlink(missing_ok=True)
        shutil.rmtree(lib, ignore_errors=True)
        _publish(tmp, lib)
        stamp.write_text(digest + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fetch_logging(version: str, root: Path) -> None:
    """``root/version/logging``: an SLF4J binding for the brokers when the release's own
    dependencies bring none (4.x: log4j-core without its SLF4J bridge, so a broker would log
    nothing). Kept out of ``lib/`` so the client driver's classpath holds no second binding."""
    lib, out = root / version / "lib", root / version / "logging"
    if any(out.glob("*.jar")):
        return
    if any(lib.glob("slf4j-reload4j-*.jar")) or any(lib.glob("log4j-slf4j*-impl-*.jar")):
        return          # 3.x: kafka-tools brings slf4j-reload4j into lib/
    core = sorted(lib.glob("log4j-core-*.jar"))
    if core:            # 4.1+: log4j 2 without its bridge
        log4j = core[-1].name[len("log4j-core-"):-len(".jar")]
        artifacts = [f"org.apache.logging.log4j:log4j-slf4j-impl:{log4j}"]
    else:               # 4.0: no logging backend at all; reload4j, as 3.x has
        artifacts = ["org.slf4j:slf4j-reload4j:1.7.36", "ch.qos.reload4j:reload4j:1.2.25"]
    tmp = Path(tempfile.mkdtemp(prefix=".logging-", dir=root / version))
    try:
        for artifact in artifacts:
            run = subprocess.run(
                ["mvn", "-q", "-B", "-f", str(POM), "dependency:copy", f"-Dartifact={artifact}",
                 f"-DoutputDirectory={tmp}"], capture_output=True, text=True, timeout=600)
            if run.returncode != 0:
                raise FetchError(f"Maven could not fetch {artifact} for Kafka {version}: "
                                 f"{_tail(run.stdout + run.stderr)}")
        shutil.rmtree(out, ignore_errors=True)
        _publish(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def driver_digest() -> str:
    """The SHA-256 of the driver's Java sources (a changed source is recompiled)."""
    h = hashlib.sha256()
    for path in sorted(DRIVER_SOURCES.glob("*.java")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def compile_driver(version: str, root: Path) -> None:
    """``root/version/driver``: the driver's classes, compiled against the release's jars."""
    _compile_driver(str(root / version / "lib" / "*"), root / version / "driver", version)


def prepare_home(release: releases.Release) -> None:
    """The client driver compiled against a distribution of the user's (``--kafka-home``), in
    the cache (``releases.driver_dir``), when it is missing or its source changed."""
    out = releases.driver_dir(release)
    out.parent.mkdir(parents=True, exist_ok=True)
    _compile_driver(releases.classpath(release), out, release.name)


def _compile_driver(classpath: str, out: Path, what: str) -> None:
    """``out``: the driver's classes compiled against ``classpath`` (atomically; again only
    when its sources changed)."""
    sources = sorted(DRIVER_SOURCES.glob("*.java"))
    if not sources:
        return
    digest = driver_digest()
    stamp = out / "SOURCE_SHA256"
    if stamp.is_file() and stamp.read_text().strip() == digest:
        return
    if shutil.which("javac") is None:
        raise FetchError("javac is not on PATH (the client driver is compiled with the JDK)")
    tmp = Path(tempfile.mkdtemp(prefix=".driver-", dir=out.parent))
    try:
        run = subprocess.run(
            ["javac", "-nowarn", "--release", "17", "-cp", classpath,
             "-d", str(tmp), *map(str, sources)], capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise FetchError(f"javac failed on the driver for Kafka {what}: "
                             f"{_tail(run.stdout + run.stderr)}")
        (tmp / "SOURCE_SHA256").write_text(digest + "\n")
        shutil.rmtree(out, ignore_errors=True)
        _publish(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fetch(version: str) -> None:
    """Fetch one release and compile its driver; the FETCHED marker is written last."""
    root = releases.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    fetch_jars(version, root)
    fetch_logging(version, root)
    compile_driver(version, root)
    share(root, version)
    marker = root / version / "FETCHED"
    if not marker.is_file():
        marker.write_text(f"org.apache.kafka:kafka_2.13:{version}\n")


def main(argv: list[str] | None = None, prog: str = "kafka_mc.realkafka.fetch") -> int:
    """Fetch the releases named (default: every supported one) into ``releases.cache_root()``,
    a line of progress each; exit 0, or 2 with one line naming what failed."""
    versions = list(argv if argv is not None else sys.argv[1:]) or [r.version for r in releases.RELEASES]
    unknown = [v for v in versions if v not in releases.BY_VERSION]
    if unknown:
        print(f"{prog}: unknown release {unknown[0][:40]!r} (supported: "
              f"{', '.join(releases.BY_VERSION)}; a build of your own runs with --kafka-home DIR)",
              file=sys.stderr)
        return 2
    for version in versions:
        if not releases.fetched(version):
            print(f"Kafka {version}: fetching (Maven, from Maven Central) ...", flush=True)
        try:
            fetch(version)
        except (FetchError, OSError, subprocess.TimeoutExpired) as e:
            print(f"{prog}: {e}", file=sys.stderr)
            return 2
        print(f"Kafka {version}: {releases.home(version)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
