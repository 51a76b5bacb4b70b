"""RocketMQ releases whose transactional-message behaviour differs, as presets of flags.

Each flag's default is the older behaviour; a preset turns on what its release shipped. Read from
apache/rocketmq at the tags named (``git show <tag>:<file>``):

* ``discard_to_maxtime_topic`` (4.5.2, ISSUE #598 / PR #633, commit d66243c03c):
  ``DefaultTransactionalMessageCheckListener.resolveDiscardMsg`` puts a half message checked
  ``transactionCheckMax`` times into the system topic ``TRANS_CHECK_MAXTIME_TOPIC`` (an operator
  can resume its check); before, it only logged "has been checked too many times, so discard it"
  and the message was gone (rocketmq-all-4.3.0 .. 4.5.1).
* ``op_batch`` (5.1.0, RIP-50 / PR #5386, commit 5d0db77f0c):
  ``TransactionalMessageServiceImpl.deletePrepareMessage`` queues the op data in memory
  (``MessageQueueOpContext``) and ``TransactionalOpBatchService`` writes the op message to
  ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` later; in 4.x it writes it at once (``putOpMessage``).
* ``reject_late_end`` (5.1.1, ISSUE #6402 / PR #6401, commit c5fec3af41):
  ``EndTransactionProcessor.rejectCommitOrRollback`` refuses (``ILLEGAL_OPERATION``) a producer's
  own EndTransaction (not ``fromTransactionCheck``) that arrives after the message's
  ``CHECK_IMMUNITY_TIME_IN_SECONDS``; the model's producer sets that property on every message.

Read and not a difference here: 5.x's escape of half messages (``escapeMessage``, only on a slave
acting as master: one broker is modelled), ``TransactionMetrics`` (counts, no behaviour), and the
``checkImmunityTime`` property itself (read by ``check`` since 4.3; time is not modelled).
5.1.0 has ``op_batch`` without ``reject_late_end`` and maps to no preset.
"""
from __future__ import annotations

from typing import NamedTuple


class Features(NamedTuple):
    discard_to_maxtime_topic: bool = False
    op_batch: bool = False
    reject_late_end: bool = False


PRESETS = {
    "rocketmq-4.3": (Features(),
                     "4.3.0 .. 4.5.1: a half message checked transactionCheckMax times is "
                     "dropped (ISSUE #598)"),
    "rocketmq-4.9": (Features(discard_to_maxtime_topic=True),
                     "4.5.2 .. 5.0.x: it goes to TRANS_CHECK_MAXTIME_TOPIC instead (PR #633)"),
    "rocketmq-5.1": (Features(discard_to_maxtime_topic=True, op_batch=True, reject_late_end=True),
                     "5.1.1 ..: op messages written in batches (RIP-50); a producer's late "
                     "EndTransaction refused past checkImmunityTime (ISSUE #6402)"),
}
DEFAULT_PRESET = "rocketmq-5.1"
RELEASES = {"4.3.0": "rocketmq-4.3", "4.5.1": "rocketmq-4.3", "4.5.2": "rocketmq-4.9",
            "4.9.8": "rocketmq-4.9", "5.0.0": "rocketmq-4.9", "5.1.1": "rocketmq-5.1",
            "5.3.3": "rocketmq-5.1"}
