"""The claims of the Pulsar transactions model (model/pulsar), in the client's vocabulary;
registered for model ``pulsar`` through the ``kafka_mc.properties`` entry point, as a package
of one's own would register them. ``holds(p, w)`` reads the state only."""
from __future__ import annotations

from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.pulsar.claims import Claim
from kafka_mc.model.pulsar.world import (ABORTED, ABORTING, ACKED, COMMITTED, COMMITTING, NONE, OPEN,
                                RELEASED, M, MSG, N, marker)


def _outcomes(w) -> set:
    return {marker(t) for t in w.topics} - {None}


def atomic_writes(p, w):
    """No output topic commits the transaction while another aborts it."""
    return len(_outcomes(w)) < 2


def acks_with_writes(p, w):
    """m0's acknowledgement is committed exactly when the produced messages are."""
    outcomes = _outcomes(w)
    return not (w.sub == ACKED and "abort" in outcomes or w.sub == RELEASED and "commit" in outcomes)


def read_committed(p, w):
    """A consumer receives the transaction's message only once its commit marker is written."""
    return all(marker(t) == "commit" for t in w.topics if M in t.received)


def no_duplicate_message(p, w):
    return all(len(t.received) == len(set(t.received)) for t in w.topics)


def no_lost_message(p, w):
    """Quiescent: every consumer received the normal message and every committed message."""
    return all((M in t.received or marker(t) != "commit")
               and (N in t.received or (MSG, 0, N) not in t.ledger) for t in w.topics)


def resolved(p, w):
    return w.tc.status in (COMMITTED, ABORTED) and w.client.state not in (OPEN, COMMITTING, ABORTING)


def begun(p, w):
    return w.tc.status != NONE


def committed_and_read(p, w):
    return w.client.state == COMMITTED and all(M in t.received for t in w.topics)


def aborted_after_writes(p, w):
    return w.tc.status == ABORTED and w.sub == RELEASED and all(marker(t) == "abort" for t in w.topics)


def committing_after_failover(p, w):
    return w.tc.status == COMMITTING and w.budgets[0] == 0 and p.budgets[0] > 0


def _dedup_off(p):
    return ("" if p.deduplication else
            "Pulsar drops a resent message only with message deduplication on "
            "(brokerDeduplicationEnabled, off by default: PersistentTopic.publishTxnMessage asks "
            "MessageDeduplication.isDuplicate); set model.deduplication = true")


PROPERTIES = (
    Property("atomic_writes", Expectation.ALWAYS, atomic_writes,
             "a transaction's messages are committed on all its topics or aborted on all"),
    Property("acks_with_writes", Expectation.ALWAYS, acks_with_writes,
             "a transaction's acknowledgements and produced messages commit together"),
    Property("read_committed", Expectation.ALWAYS, read_committed,
             "a consumer never receives a message of an uncommitted or aborted transaction"),
    Claim("no_duplicate_message", Expectation.ALWAYS, no_duplicate_message,
          "a consumer never receives the same message twice", not_claimed=_dedup_off),
    Property("no_lost_message", Expectation.TERMINAL, no_lost_message,
             "once nothing more happens, every committed and every non-transactional message "
             "has been received"),
    Property("transaction_resolved", Expectation.EVENTUALLY, resolved,
             "every transaction begun is eventually committed or aborted at the coordinator, "
             "and the client learns it ended (under the transaction timeout's fairness)",
             when=begun),
    Property("committed_and_read", Expectation.SOMETIMES, committed_and_read,
             "a committed transaction's messages are read"),
    Property("aborted_after_writes", Expectation.SOMETIMES, aborted_after_writes,
             "an aborted transaction's writes and acknowledgement are rolled back"),
    Property("committing_after_failover", Expectation.SOMETIMES, committing_after_failover,
             "a coordinator failover happens while a transaction commits",
             applies=lambda p: p.budgets[0] > 0),
)
