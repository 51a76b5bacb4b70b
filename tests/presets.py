"""Every per-preset expectation of the tests, in one table keyed by protocol preset.

A new preset is one row here (the tests check every preset of kafka_mc.model.kafka.versions has one).

- ``tiny``, ``small``: (distinct, generated, depth) of configs/tiny.toml and configs/small.toml
  (the default). A preset with a known weakness stops at its violation, so ``small`` counts what
  was explored up to it.
- ``weakness``: what the default config finds on a preset with a known weakness relative to
  latest. Before KIP-890 a batch that expired in flight, or a zombie's batch at a leader that
  forgot its producer id, opens a hanging transaction (tests/model/test_faults.py); 4.2's strict
  marker epoch rejects a marker resent after a lost response, a retry over a new connection or a
  coordinator failover (KAFKA-19999).
- ``unexercised_client``: the edges of Kafka's client table for the version that the model
  never takes (tests/model/test_conformance.py says why for each set).
"""
from __future__ import annotations

from typing import NamedTuple

# Client (a second failure while ABORTABLE_ERROR is taken, reported by ``tables.client_step``
# from the step although it leaves no trace in the state): READY -> UNINITIALIZED is the idempotent (non-transactional) producer's
# epoch bump; KIP-890's InitProducerId abortable errors (-> ABORTABLE_ERROR from INITIALIZING,
# ABORTABLE_ERROR -> UNINITIALIZED) are not modelled; a TV2 client never bumps the epoch itself
# (needToTriggerEpochBumpFromClient is false), so -> INITIALIZING is TV1's only.
IDEMPOTENT = frozenset({("READY", "UNINITIALIZED")})
KIP_890 = frozenset({("ABORTABLE_ERROR", "UNINITIALIZED"), ("INITIALIZING", "ABORTABLE_ERROR")})
TV2_BUMP = frozenset({("ABORTING_TRANSACTION", "INITIALIZING"),
                      ("COMMITTING_TRANSACTION", "INITIALIZING")})

HANGING = ("no_hanging_transactions",)

# From kafka-4.1 on (KAFKA-18654 [1/2], marker_keeps_tv2_guard) a TV2 verification guard carries
# its epoch: the small counts grew by states that differ only in it (kafka-4.1 from 1,228,502 /
# 4,368,920, kafka-4.0.2 1,225,222 / 4,357,214, kafka-4.1.1 .. kafka-4.3 928,744 / 3,262,177,
# kafka-4.2 221,158 / 691,902, latest 930,539 / 3,267,288); tiny's are unchanged.


# Issue 62 (the coordinator's pending Complete* through the marker round, the ghost
# TxnMetadata.epoch_owner of no_self_fencing, a producer expiry taking the guards made before its
# last write, the transaction timer fair whatever the budget): small grew on every preset, 3 to 7%
# (latest 1,080,309 -> 1,115,516; kafka-3.6 3,781,459 -> 4,033,364; kafka-2.7 44,196 -> 46,118 to
# its weakness, of which epoch_owner 1,722), and tiny shrank on the TV2 presets (latest 16,420 ->
# 16,044: an EndTxn meeting the marker round is retried where it was fenced, and the states after
# that fatal answer are gone); tiny on TV1 presets is unchanged.


class Pinned(NamedTuple):
    tiny: tuple[int, int, int]
    small: tuple[int, int, int]
    weakness: tuple[str, ...]
    unexercised_client: frozenset


PINNED = {
    "kafka-0.11": Pinned((2121, 4995, 19), (24741, 57737, 17), HANGING, frozenset()),
    "kafka-1.0": Pinned((17994, 55269, 46), (36783, 89304, 18), HANGING, frozenset()),
    "kafka-2.5": Pinned((17994, 55269, 46), (37374, 90225, 18), HANGING, IDEMPOTENT),
    "kafka-2.6": Pinned((17994, 55269, 46), (37374, 90225, 18), HANGING, IDEMPOTENT),
    # From here on the coordinator may bounce (conformance #15, BounceCoordinator: KRaft; on
    # 4.x a bounce, then a failover, #19), which small's failover budget takes: 35,624 -> 44,196
    # states on kafka-2.7 before its weakness (still at depth 18), 3,389,020 -> 3,781,459 on
    # kafka-3.6 and 3,388,738 -> 3,781,177 on kafka-3.8; with #19 kafka-4.0 1,199,319 /
    # 4,223,385 -> 1,376,217 / 4,807,106, kafka-4.1 1,234,524 -> 1,412,520, kafka-4.0.2
    # 1,231,244 -> 1,408,160, kafka-4.1.1 .. kafka-4.3 930,254 / 3,267,345 -> 1,078,374 /
    # 3,753,030, latest 932,049 -> 1,080,309, kafka-4.2 222,006 / 694,262 -> 222,745 / 670,581
    # (still its weakness at depth 24); tiny has no failover: unchanged.
    "kafka-2.7": Pinned((21610, 65665, 46), (46118, 110633, 18), HANGING, IDEMPOTENT),
    # Before KAFKA-16386 a produce whose verification was lost is answered NETWORK_EXCEPTION,
    # after it NOT_ENOUGH_REPLICAS (both resent): on small, 3.6 has 282 states more, where that
    # answer and a NOT_ENOUGH_REPLICAS one to the same produce are in flight together.
    "kafka-3.6": Pinned((37582, 118593, 50), (4033364, 15231074, 58), (),
                        IDEMPOTENT | KIP_890),
    "kafka-3.8": Pinned((37582, 118593, 50), (4033082, 15230243, 58), (),
                        IDEMPOTENT | KIP_890),
    # KAFKA-19690 backported (conformance #20): a batch whose guard a marker removed, at a stale
    # epoch, is fenced (INVALID_PRODUCER_EPOCH) rather than refused INVALID_TXN_STATE
    "kafka-3.9.2": Pinned((36184, 113485, 50), (3862930, 14495842, 58), (),
                          IDEMPOTENT | KIP_890),
    "kafka-4.0": Pinned((18584, 54643, 44), (1430967, 5001467, 48), (),
                        IDEMPOTENT | KIP_890 | TV2_BUMP),
    "kafka-4.1": Pinned((18584, 54805, 44), (1467188, 5171908, 49), (),
                        IDEMPOTENT | KIP_890 | TV2_BUMP),
    "kafka-4.0.2": Pinned((18584, 54805, 44), (1462828, 5156344, 49), (),
                          IDEMPOTENT | KIP_890 | TV2_BUMP),
    "kafka-4.1.1": Pinned((16272, 47725, 44), (1129888, 3935383, 49), (),
                          IDEMPOTENT | KIP_890 | TV2_BUMP),
    # KAFKA-19999: the marker the coordinator retries once the copy on the connection it closed
    # was written (or after a lost response) is rejected by KIP-1228's strict epoch check (23
    # steps; after a failover, 24).
    "kafka-4.2": Pinned((18584, 54805, 44), (229394, 690840, 24), ("quiescent_completion",),
                        IDEMPOTENT | KIP_890 | TV2_BUMP),
    # 4.2.0 on: KAFKA-19999's equal-epoch retry is written again, as 4.1.1 writes any equal-epoch
    # marker; on small no marker meets an open transaction at its own epoch, so 4.1.1's counts.
    "kafka-4.2.0": Pinned((16272, 47725, 44), (1129888, 3935383, 49), (),
                          IDEMPOTENT | KIP_890 | TV2_BUMP),
    "kafka-4.3": Pinned((16272, 47725, 44), (1129888, 3935383, 49), (),
                        IDEMPOTENT | KIP_890 | TV2_BUMP),
    "latest": Pinned((16044, 47071, 44), (1115516, 3886422, 49), (),
                     IDEMPOTENT | KIP_890 | TV2_BUMP),
}
