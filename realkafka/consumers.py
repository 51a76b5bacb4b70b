"""A real run's live read_committed consumers: the config's ``cluster.consumers``, polling while the
producers run (issue 55).

Each consumer is a ``KafkaConsumer`` of the client driver (its own thread in the JVM) with
isolation.level read_committed, no group (``assign`` of every partition of the run's topic, from
the beginning: auto.offset.reset earliest), named ``c<N>`` (the model's consumer N: the client.id
of its Fetch requests and the process of its history records). A Python thread per consumer
calls ``poll`` in a loop while the workload runs, so its fetches meet transactions as they are
written, committed and aborted; every poll is in the client history with the records it
returned (partition, offset, value). Once the run has settled, ``finish`` lets each consumer
poll on until its position reached the end offsets the harness read (each partition's LSO), then
records its positions (``position`` of each partition: the offset of the next record the
application would get, so every record below it has been returned) and closes it.

Why assign, not subscribe: a group's rebalance would move partitions between consumers and reset
positions, which the model's consumers (fixed positions, every partition each) do not do, and
Jepsen's poll-skip and nonmonotonic-poll then hold without exception.
"""
from __future__ import annotations

import threading
import time

POLL_S = 0.2            # one poll's timeout: the fetches go on in the client meanwhile
FINISH_S = 20.0         # how long finish() lets a consumer catch up with the end offsets


class LiveConsumers:
    """``n`` consumers of ``topic``'s ``partitions`` on ``driver``; ``start`` them before the
    workload, ``finish`` them once the end offsets are known (or ``close`` on the way out)."""

    def __init__(self, driver, topic: str, partitions: list[int], n: int, log=lambda s: None,
                 settings: dict | None = None):
        self.driver, self.topic, self.partitions, self.log = driver, topic, partitions, log
        self.settings = dict(settings or {})
        self.n = n
        self.consumers: list = []
        self.threads: list[threading.Thread] = []
        self.stop = threading.Event()
        self.polls = [0] * n
        self.positions: list[dict] = [{} for _ in range(n)]

    def start(self) -> None:
        for c in range(self.n):
            consumer = self.driver.consumer(f"c{c}", None, "read_committed", **self.settings)
            consumer.assign(self.topic, self.partitions)
            self.consumers.append(consumer)
        self.threads = [threading.Thread(target=self._poll, args=(c,), name=f"consumer-c{c}",
                                         daemon=True) for c in range(self.n)]
        for th in self.threads:
            th.start()

    def _poll(self, c: int) -> None:
        consumer = self.consumers[c]
        while not self.stop.is_set():
            try:
                consumer.poll(POLL_S)
                self.polls[c] += 1
            except Exception as e:    # a ClientError: the driver lost, a timeout; keep polling
                if getattr(e, "cls", "") in ("DriverLost", "DriverClosed"):
                    return
                time.sleep(POLL_S)

    def finish(self, ends: dict[int, int]) -> list[dict]:
        """Stop the live loops; each consumer polls on until its position reached ``ends``
        (partition -> offset) or FINISH_S passed, records its positions and is closed. Returns
        each consumer's last positions."""
        self.stop.set()
        for th in self.threads:
            th.join(30)
        for c, consumer in enumerate(self.consumers):
            deadline = time.monotonic() + FINISH_S
            try:
                while True:
                    positions = {p: consumer.position(self.topic, p) for p in self.partitions}
                    self.positions[c] = positions
                    if all(positions[p] >= ends.get(p, 0) for p in self.partitions) or \
                            time.monotonic() > deadline:
                        break
                    consumer.poll(POLL_S)
                    self.polls[c] += 1
            except Exception as e:
                self.log(f"  consumer c{c}: {getattr(e, 'cls', type(e).__name__)}")
            if self.positions[c] != {p: ends.get(p, 0) for p in self.partitions}:
                self.log(f"  consumer c{c} ended at {self.positions[c]}, not {ends}")
        self.close()
        return self.positions

    def close(self) -> None:
        self.stop.set()
        for consumer in self.consumers:
            try:
                consumer.close()
            except Exception:
                pass
        self.consumers = []
