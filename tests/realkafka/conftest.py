"""The real-Kafka tests run real brokers: every supported release must be fetched (`make test`
runs `make kafka` first) and a JDK on PATH. Missing either is a failure naming the fix, never a
skip: a suite that skipped them would pass without having met Kafka."""
import shutil

import pytest

from kafka_mc.realkafka import releases


@pytest.fixture(autouse=True, scope="session")
def _real_kafka_is_here():
    if shutil.which("java") is None:
        pytest.fail("no `java` on PATH: the real-Kafka tests need a JDK 17+", pytrace=False)
    missing = [r.version for r in releases.RELEASES if not releases.fetched(r.version)]
    if missing:
        pytest.fail(f"Kafka {', '.join(missing)} not fetched into {releases.cache_root()}: run "
                    "`make kafka`", pytrace=False)
