"""Availability claims that are not safety (issue 46 item 6): an application that follows Kafka's
documented error handling is not left with a fatal error where the protocol could go on.

Kafka Streams, the reference application (``RecordCollectorImpl``, ``StreamsProducer``), handles a
fenced producer (ProducerFencedException, InvalidProducerEpochException) by migrating its tasks
and a TransactionAbortableException by aborting; an InvalidTxnStateException is fatal to the
stream thread. ``no_fatal_invalid_txn_state`` claims that no producer instance is answered
INVALID_TXN_STATE where it surfaces as InvalidTxnStateException: an EndTxn (fatal at every
version, ``EndTxnHandler``), or a batch before KIP-1050's client (4.1, KAFKA-19176) wraps it in
TransactionAbortableException (``TransactionManager.maybeTransitionToErrorState``).

Which presets meet it: ``latest``. A commit overtaken by the coordinator's own abort is answered
INVALID_TXN_STATE until KAFKA-20785 (trunk); a batch whose verification guard the abort's marker
removed is answered INVALID_TXN_STATE until KAFKA-19690 (4.0.2), and surfaces as such until 4.1's
client (tests/model/test_availability.py).

Not in the model's default properties (``invariants.PROPERTIES``): adding a claim there would move
the verdicts pinned for every older preset. It is checked by naming it (``CLAIMS``).
"""
from __future__ import annotations

from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.network import Rpc
from kafka_mc.model.kafka.world import Errors


def no_fatal_invalid_txn_state(K, s, a, t) -> bool:
    if a[0] == "ReceiveEndTxnResponse":
        m = a[1]
        return not (m.error == Errors.INVALID_TXN_STATE
                    and s.producers[m.producer].in_flight_request == Rpc.EndTxn)
    if a[0] == "ReceiveProduceResponse":
        m = a[1]
        return not (m.error == Errors.INVALID_TXN_STATE
                    and not K.features.abortable_error_classification
                    and m.request in s.producers[m.producer].in_flight)
    return True


CLAIMS = (
    Property("no_fatal_invalid_txn_state", Expectation.TRANSITION, no_fatal_invalid_txn_state,
             "no producer is answered INVALID_TXN_STATE where its application (Kafka Streams) "
             "must treat it as fatal: an EndTxn, or a batch before KIP-1050's client"),
)
