"""What RocketMQ claims for transactional messages, in the client's vocabulary, and what it does not.

RocketMQ's own statement (docs/en/Example_Transaction.md, "Usage Constraint"): a half message is
checked back at most ``transactionCheckMax`` times, then "broker will discard this message"; and
"a transactional message maybe checked or consumed more than once". So the model claims:

* ``MessageOnlyIfCommitted`` / ``NoReadOfRolledBack``: the message reaches its real topic, and a
  consumer, only if the local transaction committed (atomicity, the safety half).
* ``CommittedMessageNotLost``: where nothing more can happen, a committed local transaction's
  message was consumed, or is kept in ``TRANS_CHECK_MAXTIME_TOPIC`` for an operator (the
  documented escape past ``transactionCheckMax``; never silently dropped).
* ``EveryTransactionResolved``: every half message is eventually committed, rolled back or
  discarded (liveness, under the check timer's and the network's fairness).

``NOT_CLAIMED`` lists what RocketMQ does not promise. The contract has no "not claimed" verdict
(``Property.applies`` marks a witness that cannot arise, which is something else), so the
smallest mechanism is kept here: a claim RocketMQ does not make is not a checked invariant (its
failure is no violation) but a ``SOMETIMES`` witness named ``<claim>NotClaimed`` whose claim text
starts "not claimed:", showing that the behaviour really happens; ``NOT_CLAIMED`` maps each to its
source, for a comparison table (``kafka-mc list invariants --model rocketmq`` prints them).
"""
from __future__ import annotations

from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.rocketmq.world import ABSENT, COMMITTED, DONE, MAXTIME, RESOLVED, ROLLED_BACK


def message_only_if_committed(p, w):
    return w.real == 0 or w.local == COMMITTED


def no_read_of_rolled_back(p, w):
    return w.consumed == 0 or w.local != ROLLED_BACK


def committed_message_not_lost(p, w):
    return w.local != COMMITTED or w.consumed > 0 or w.half == MAXTIME


def resolved(p, w):
    return w.half in RESOLVED


def half_stored(p, w):
    return w.half != ABSENT


def duplicate_consumed(p, w):
    return w.consumed >= 2


def committed_only_by_operator(p, w):
    return w.local == COMMITTED and w.half == MAXTIME and w.real == 0


NOT_CLAIMED = {
    "NoDuplicate": ("a consumer may read a transactional message twice (docs/en/"
                    "Example_Transaction.md: 'checked or consumed more than once')",
                    "NoDuplicateNotClaimed"),
    "AtomicityPastCheckMax": ("past transactionCheckMax a committed transaction's message is "
                              "discarded (kept in TRANS_CHECK_MAXTIME_TOPIC from 4.5.2), not "
                              "delivered", "AtomicityPastCheckMaxNotClaimed"),
}

PROPERTIES = (
    Property("MessageOnlyIfCommitted", Expectation.ALWAYS, message_only_if_committed,
             "the message is in its real topic only if the local transaction committed"),
    Property("NoReadOfRolledBack", Expectation.ALWAYS, no_read_of_rolled_back,
             "no consumer reads a message whose local transaction rolled back"),
    Property("CommittedMessageNotLost", Expectation.TERMINAL, committed_message_not_lost,
             "a committed local transaction's message is consumed, or kept in "
             "TRANS_CHECK_MAXTIME_TOPIC past transactionCheckMax (never dropped)"),
    Property("EveryTransactionResolved", Expectation.EVENTUALLY, resolved,
             "every half message is eventually committed, rolled back or discarded",
             when=half_stored),
    Property("MessageConsumed", Expectation.SOMETIMES, lambda p, w: w.consumed > 0,
             "a consumer reads the message"),
    Property("ResolvedAfterCheckBack", Expectation.SOMETIMES,
             lambda p, w: w.check_times > 0 and w.half == DONE,
             "a half message is committed or rolled back after a check-back"),
    Property("NoDuplicateNotClaimed", Expectation.SOMETIMES, duplicate_consumed,
             "not claimed: a consumer reads the message twice (RocketMQ: at-least-once)"),
    Property("AtomicityPastCheckMaxNotClaimed", Expectation.SOMETIMES,
             committed_only_by_operator,
             "not claimed: a committed transaction's message waits in TRANS_CHECK_MAXTIME_TOPIC "
             "for an operator",
             applies=lambda p: p.features.discard_to_maxtime_topic),   # no such topic before 4.5.2
)
