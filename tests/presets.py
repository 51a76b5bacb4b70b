"""Every per-preset expectation of the tests, in one table keyed by protocol preset.

A new preset is one row here (the tests check every preset of model.kafka.versions has one).

- ``tiny``, ``small``: (distinct, generated, depth) of configs/tiny.toml and configs/small.toml
  (the default). A preset with a known weakness stops at its violation, so ``small`` counts what
  was explored up to it.
- ``weakness``: what the default config finds on a preset with a known weakness relative to
  latest. Before KIP-890 a batch that expired in flight, or a zombie's batch at a leader that
  forgot its producer id, opens a hanging transaction (tests/model/test_faults.py); 4.2's strict
  marker epoch rejects a marker resent after a coordinator failover (KAFKA-19999).
- ``unexercised_client``: the edges of Kafka's client table for the version that the model
  never takes (tests/model/test_conformance.py says why for each set).
"""
from __future__ import annotations

from typing import NamedTuple

# Client: a second failure while ABORTABLE_ERROR (STUCK) is taken, but a self-transition leaves
# no trace in the state; READY -> UNINITIALIZED is the idempotent (non-transactional) producer's
# epoch bump; KIP-890's InitProducerId abortable errors (-> ABORTABLE_ERROR from INITIALIZING,
# ABORTABLE_ERROR -> UNINITIALIZED) are not modelled; a TV2 client never bumps the epoch itself
# (needToTriggerEpochBumpFromClient is false), so -> INITIALIZING is TV1's only.
STUCK = frozenset({("ABORTABLE_ERROR", "ABORTABLE_ERROR")})
IDEMPOTENT = frozenset({("READY", "UNINITIALIZED")})
KIP_890 = frozenset({("ABORTABLE_ERROR", "UNINITIALIZED"), ("INITIALIZING", "ABORTABLE_ERROR")})
TV2_BUMP = frozenset({("ABORTING_TRANSACTION", "INITIALIZING"),
                      ("COMMITTING_TRANSACTION", "INITIALIZING")})

HANGING = ("no_hanging_transactions",)


class Pinned(NamedTuple):
    tiny: tuple[int, int, int]
    small: tuple[int, int, int]
    weakness: tuple[str, ...]
    unexercised_client: frozenset


PINNED = {
    "kafka-0.11": Pinned((2121, 4995, 19), (33218, 78120, 17), HANGING, STUCK),
    "kafka-1.0": Pinned((17994, 55269, 46), (49039, 120434, 18), HANGING, STUCK),
    "kafka-2.5": Pinned((17994, 55269, 46), (49761, 121616, 18), HANGING, STUCK | IDEMPOTENT),
    "kafka-2.6": Pinned((17994, 55269, 46), (49761, 121616, 18), HANGING, STUCK | IDEMPOTENT),
    "kafka-2.7": Pinned((17994, 55269, 46), (49761, 121616, 18), HANGING, STUCK | IDEMPOTENT),
    "kafka-3.6": Pinned((32842, 104973, 50), (4041969, 16303110, 59), (),
                        STUCK | IDEMPOTENT | KIP_890),
    "kafka-4.0": Pinned((14693, 44288, 44), (1390331, 5227497, 49), (),
                        STUCK | IDEMPOTENT | KIP_890 | TV2_BUMP),
    # quiescent_completion is a terminal property, judged (as deadlocks are) when the stuck state
    # is expanded: the search stops one level further than when it was an invariant judged on
    # discovery (226,924 states, depth 24), with the same 24-step counterexample.
    "kafka-4.2": Pinned((14693, 44288, 44), (262255, 860591, 25), ("quiescent_completion",),
                        STUCK | IDEMPOTENT | KIP_890 | TV2_BUMP),
    "latest": Pinned((14693, 44288, 44), (1328671, 5018800, 49), (),
                     STUCK | IDEMPOTENT | KIP_890 | TV2_BUMP),
}
