"""Availability claims that are not safety (issue 46 item 6, issue 62 item 3): an application that
follows Kafka's documented error handling is not left with a fatal error, or fenced, where the
protocol could go on.

Kafka Streams, the reference application (``RecordCollectorImpl``, ``StreamsProducer``), handles a
fenced producer (ProducerFencedException, InvalidProducerEpochException) by migrating its tasks
and a TransactionAbortableException by aborting; an InvalidTxnStateException and any other fatal
error (an UNKNOWN_SERVER_ERROR answered to InitProducerId or EndTxn: ``InitProducerIdHandler``,
``EndTxnHandler`` make it fatal) stop the stream thread.

- ``no_fatal_invalid_txn_state``: no producer instance is answered INVALID_TXN_STATE where it
  surfaces as InvalidTxnStateException: an EndTxn (fatal at every version, ``EndTxnHandler``),
  or a batch before KIP-1050's client (4.1, KAFKA-19176) wraps it in TransactionAbortableException
  (``TransactionManager.maybeTransitionToErrorState``). Broken by KAFKA-20785 (a commit overtaken
  by the coordinator's own abort, until trunk) and KAFKA-19690 (a batch whose guard a marker
  removed, until 4.0.2; surfaced as such until 4.1's client). ``no_fatal_batch_error`` is its
  batch half alone (KAFKA-19690 without KAFKA-20785's EndTxn).
- ``no_fatal_unknown_server_error``: no producer instance is answered UNKNOWN_SERVER_ERROR by its
  coordinator (InitProducerId, AddPartitionsToTxn, EndTxn: fatal to the client): the coordinator
  answers it where a transition throws (an epoch bumped past Short.MaxValue,
  prepareFenceProducerEpoch's IllegalStateException, prepareTransitionTo's
  IllegalArgumentException). Broken by KAFKA-19367 (4.0.0's double bump at a fencing
  InitProducerId, ``fence_double_bump``) and KAFKA-20090 (before 4.3: a TV2 EndTxn or fence at the
  exhausted epoch), both reached with a small ``cluster.last_epoch``.
- ``no_self_fencing``: no producer instance is fenced (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH
  before 2.7) by its coordinator with an epoch its own requests made: a fence is for an instance
  that another instance (its InitProducerId) or the coordinator's own abort (a transaction
  timeout, a forced termination) has superseded. Which request made the current epoch is the
  ghost ``TxnMetadata.epoch_owner``. Broken by KAFKA-18464 (``end_txn_epoch_first``: an empty
  abort right after a commit, before the pending CompleteCommit is checked) and by a failover
  that forgets lastProducerEpoch (``forget_last_producer_epoch``: a KIP-360 InitProducerId retried
  after its bump completed is fenced).

Not in the model's default properties (``Property.default`` False): adding a claim there would
move the verdicts pinned for every older preset. Each is checked by naming it (``--invariant``,
``[check] invariants``; ``kafka-mc list invariants`` marks them), and registered with the model's
properties (``invariants.PROPERTIES``), so a trace of one replays and renders like any other.
"""
from __future__ import annotations

from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.kafka.capabilities.footprints import reads
from kafka_mc.model.kafka.network import Rpc
from kafka_mc.model.kafka.world import Errors

COORDINATOR_RESPONSES = (Rpc.InitProducerIdResponse, Rpc.AddPartitionsToTxnResponse,
                         Rpc.EndTxnResponse)
COORDINATOR_REQUESTS = {"HandleInitProducerId": Rpc.InitProducerIdResponse,
                        "HandleAddPartitionsToTxn": Rpc.AddPartitionsToTxnResponse,
                        "HandleEndTxn": Rpc.EndTxnResponse}


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


def no_fatal_batch_error(K, s, a, t) -> bool:
    if a[0] != "ReceiveProduceResponse":
        return True
    return no_fatal_invalid_txn_state(K, s, a, t)


def no_fatal_unknown_server_error(K, s, a, t) -> bool:
    if not a[0].startswith("Receive") or len(a) < 2:
        return True
    m = a[1]
    return not (m.rpc in COORDINATOR_RESPONSES and m.error == Errors.UNKNOWN_SERVER_ERROR
                and s.producers[m.producer].in_flight_request == m.rpc & ~1)


def answer_of(s, a, t):
    """The answer a coordinator's handling step ``a`` sent its client (None: none yet, as for a
    transition appended first, or none at all, as for a copy on a closed connection)."""
    rpc = COORDINATOR_REQUESTS.get(a[0])
    if rpc is None:
        return None
    m = a[1]
    new = [x for x in t.network if x.rpc == rpc and x.producer == m.producer]
    old = [x for x in s.network if x.rpc == rpc and x.producer == m.producer]
    return new[-1] if len(new) > len(old) else None


def no_self_fencing(K, s, a, t) -> bool:
    r = answer_of(s, a, t)
    if r is None or r.error not in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH):
        return True
    m = a[1]
    owner = s.coordinator.txns[m.tid].epoch_owner
    return owner != s.producers[m.producer].instance


CLAIMS = (
    Property("no_fatal_invalid_txn_state", Expectation.TRANSITION, no_fatal_invalid_txn_state,
             "no producer is answered INVALID_TXN_STATE where its application (Kafka Streams) "
             "must treat it as fatal: an EndTxn, or a batch before KIP-1050's client",
             reads=reads("PN"), default=False),
    Property("no_fatal_batch_error", Expectation.TRANSITION, no_fatal_batch_error,
             "no batch fails with INVALID_TXN_STATE where its application must treat it as "
             "fatal (before KIP-1050's client): the batch half of no_fatal_invalid_txn_state",
             reads=reads("PN"), default=False),
    Property("no_fatal_unknown_server_error", Expectation.TRANSITION,
             no_fatal_unknown_server_error,
             "no producer is answered UNKNOWN_SERVER_ERROR by its coordinator (fatal to the "
             "client: a transition that threw)", reads=reads("PN"), default=False),
    Property("no_self_fencing", Expectation.TRANSITION, no_self_fencing,
             "no producer instance is fenced by an epoch its own requests made: only another "
             "instance or the coordinator's own abort (a timeout, a forced termination) fences it",
             reads=reads("CN"), default=False),
)
