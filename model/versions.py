"""Kafka protocol versions: presets of feature flags (DESIGN.md section 3).

``protocol.version`` names a preset; each flag can also be set on its own in ``[protocol]``
(a flag given explicitly overrides the preset). Each preset says which Kafka behaviour it stands for.
"""
from __future__ import annotations

from typing import NamedTuple


class Features(NamedTuple):
    bump_epoch_on_timeout: bool     # KAFKA-6119 (1.0): timeout abort fences via PrepareEpochFence
    producer_epoch_bump: bool       # KIP-360 (2.5): InitProducerId(pid, epoch); lastProducerEpoch
    stable_offset_fetch: bool       # KIP-447 (2.5): OffsetFetch(requireStable), generation fencing
    strict_end_txn_epoch: bool      # KAFKA-9600 (2.6): EndTxn epoch must equal the current one
    partition_verification: bool    # KIP-890 part 1 (3.6): leaders verify before a txn's first write
    verification_guard: bool        # KAFKA-14884 (3.6): a verification guard cleared by markers
    transaction_version: int        # 1, or 2 = KIP-890 part 2 (4.0): epoch bump at every EndTxn
    strict_marker_epoch: bool       # KIP-1228 (4.2): TV2 leaders require marker epoch > stored
    idempotent_marker_retry: bool   # KAFKA-19999: equal-epoch marker with no open txn is a no-op


FLAGS = Features._fields

PRESETS: dict[str, tuple[Features, str]] = {
    "kafka-0.11": (Features(False, False, False, False, False, False, 1, False, False),
                   "KIP-98 as first shipped: a timed-out transaction is aborted without an epoch "
                   "bump, so the old producer is not fenced (KAFKA-6119); TxnOffsetCommit fenced "
                   "by epoch only; no partition verification."),
    "kafka-1.0": (Features(True, False, False, False, False, False, 1, False, False),
                  "1.0 .. 2.4 (the seed era, Kafka 2.0): timeout and InitProducerId-while-Ongoing "
                  "fence with PrepareEpochFence (epoch + 1); EndTxn accepts an epoch greater than "
                  "the coordinator's; late produce after a marker can open a hanging transaction."),
    "kafka-2.5": (Features(True, True, True, False, False, False, 1, False, False),
                  "2.5: KIP-360 producer-initiated epoch bump (lastProducerEpoch), KIP-447 "
                  "OffsetFetch requireStable and generation-fenced TxnOffsetCommit."),
    "kafka-2.6": (Features(True, True, True, True, False, False, 1, False, False),
                  "2.6 .. 3.5: EndTxn from a client must carry exactly the current epoch "
                  "(KAFKA-9600)."),
    "kafka-3.6": (Features(True, True, True, True, True, True, 1, False, False),
                  "3.6 .. 3.9: KIP-890 part 1, leaders verify with the coordinator before a "
                  "transaction's first write, with a verification guard cleared by markers."),
    "kafka-4.0": (Features(True, True, True, True, True, True, 2, False, False),
                  "4.0 .. 4.1 with transaction.version=2: every EndTxn bumps the epoch, partitions "
                  "are added implicitly by the leader, markers carry the bumped epoch; leaders "
                  "accept a marker whose epoch equals the stored one."),
    "kafka-4.2": (Features(True, True, True, True, True, True, 2, True, False),
                  "4.2: KIP-1228, TV2 leaders require a marker epoch strictly greater than the "
                  "stored epoch."),
    "latest": (Features(True, True, True, True, True, True, 2, True, True),
               "All fixes, including KAFKA-19999: an equal-epoch marker retry with no open "
               "transaction is accepted as a no-op."),
}
DEFAULT_PRESET = "latest"


def features(version: str, overrides: dict[str, object] | None = None) -> Features:
    """The preset's flags with explicit ``[protocol]`` flags applied."""
    base = PRESETS[version][0]
    return base._replace(**(overrides or {}))
