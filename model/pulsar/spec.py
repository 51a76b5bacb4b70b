"""pulsar: Apache Pulsar's transactions (PIP-31) as a kafka-mc model, registered through the
``kafka_mc.models`` entry point as a package of one's own would be (its claims through
``kafka_mc.properties``: invariants/pulsar.py).

Components: the client (``TransactionImpl``), the transaction coordinator
(``MLTransactionMetadataStore`` and its log, ``TransactionMetadataStoreService``), one or two
output topics (``TopicTransactionBuffer``: ongoing transactions, maxReadPosition, aborts,
snapshots), the input subscription's pending ack (``PendingAckHandleImpl``) and a consumer per
output topic. The steps are in model/pulsar/rules.py, the state and its abstractions in
model/pulsar/world.py.

Presets: ``pulsar-2.9.0`` moves maxReadPosition on a non-transactional publish while the
transaction buffer recovers, and lets consumers read up to it meanwhile (apache/pulsar#12382);
``pulsar-2.9.1`` waits for the recovery (PR #12386: ``syncMaxReadPositionForNormalPublish``
checks ``checkIfReady`` / ``checkIfNoSnapshot``, ``getMaxReadPosition`` answers EARLIEST while
recovering). ``latest`` is 2.9.1's behaviour, unchanged since in what is modelled.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_mc.model.capabilities import Capabilities
from kafka_mc.model.config import Param
from kafka_mc.model.core import WF, Event
from kafka_mc.model.protocol import ProtocolSpec, Rule, RuleModel
from kafka_mc.model.pulsar import comparison
from kafka_mc.model.pulsar import rules as r
from kafka_mc.model.pulsar.claims import split
from kafka_mc.model.pulsar.world import (ACK_NAMES, ACTION_NAMES, BUDGETS, CLIENT_STATES,
                                END_ON_PARTITION, ENTRY_NAMES, MESSAGE_NAMES, NET_NAMES,
                                OP_NAMES, SEND, TB_STATES,
                                TXN_STATUSES, Client, Coordinator, Topic, World, initial)
from kafka_mc.model.registry import spec_entry

PRESETS = {
    "pulsar-2.9.0": (False, "maxReadPosition moves on a normal publish while the transaction "
                            "buffer recovers, and is read meanwhile (apache/pulsar#12382)"),
    "pulsar-2.9.1": (True, "a normal publish moves maxReadPosition only once the buffer has "
                           "recovered; EARLIEST is read meanwhile (apache/pulsar#12386)"),
}
PRESETS["latest"] = (True, "the latest behaviour modelled (that of pulsar-2.9.1)")

MUTANTS = (
    ("read_past_max_read", "read_committed",
     "the dispatcher reads up to the last entry, ignoring maxReadPosition"),
    ("no_abort_filter", "read_committed",
     "the dispatcher does not filter aborted transactions' messages (isTxnAborted)"),
    ("timeout_committing", "acks_with_writes",
     "the timeout tracker aborts a COMMITTING transaction too (no OPEN check)"),
    ("ack_on_abort", "acks_with_writes",
     "PendingAckHandleImpl.abortTxn applies the pending ack instead of dropping it"),
    ("recover_without_aborts", "read_committed",
     "the buffer's recovery forgets the snapshot's aborted transactions"),
    ("no_first_snapshot", "read_committed",
     "the buffer writes no snapshot before the first transactional message, so a recovery "
     "replays nothing (noNeedToRecover)"),
    ("no_timeout", "transaction_resolved",
     "the coordinator's TransactionTimeoutTracker never fires (liveness: --explorer graph)"),
)


@dataclass(frozen=True)
class Params:
    topics: int
    normal_message: bool
    deduplication: bool
    sync_waits_for_recovery: bool   # PR #12386
    budgets: tuple
    mutant: str


def params(cfg) -> Params:
    return Params(cfg["model.topics"], cfg["model.normal_message"], cfg["model.deduplication"],
                  PRESETS[cfg["protocol.version"]][0],
                  tuple(cfg[f"faults.{b}"] for b in BUDGETS), cfg["model.mutant"])


_DELIVERY = WF("the network delivers every message in flight (TCP, the clients' resends)",
               family="delivery")
_BROKER = WF("a broker runs its pending work (recovery, dispatch)")

RULES = (
    Rule("NewTxn", (), r.new_txn_enabled, r.new_txn, "newTransaction"),
    Rule("Produce", ("topic",), r.produce_enabled, r.produce,
         "registerProducedTopic (addPublishPartitionToTxn), then sendAsync with the transaction"),
    Rule("Acknowledge", (), r.acknowledge_enabled, r.acknowledge,
         "registerAckedTopic (addSubscriptionToTxn), then acknowledgeAsync(m0, txn)"),
    Rule("EndTxn", ("action",), r.end_txn_enabled, r.end_txn, "commit / abort"),
    Rule("ClientTimeout", (), r.client_timeout_enabled, r.client_timeout,
         "TransactionImpl.run: OPEN -> TIME_OUT",
         WF("the client's transaction timer fires (TransactionImpl.run)")),
    Rule("SendReceipt", ("topic", "ok"), r.send_receipt_enabled, r.send_receipt, "", _DELIVERY),
    Rule("AckResponse", ("ok",), r.ack_response_enabled, r.ack_response, "", _DELIVERY),
    Rule("EndTxnResponse", ("outcome",), r.end_txn_response_enabled, r.end_txn_response, "",
         _DELIVERY),
    Rule("HandleEndTxn", ("action",), r.handle_end_txn_enabled, r.handle_end_txn, "", _DELIVERY),
    Rule("TransactionTimeout", (), r.tc_timeout_enabled, r.tc_timeout,
         "TransactionTimeoutTrackerImpl -> endTransactionForTimeout",
         WF("the coordinator's timeout tracker fires for an OPEN transaction")),
    Rule("EndTxnOnPartitionResponse", ("topic",), r.end_on_partition_response_enabled,
         r.end_on_partition_response, "", _DELIVERY),
    Rule("EndTxnOnSubscriptionResponse", (), r.end_on_subscription_response_enabled,
         r.end_on_subscription_response, "", _DELIVERY),
    Rule("HandleSend", ("topic",), r.handle_send_enabled, r.handle_send, "", _DELIVERY),
    Rule("EndTxnOnPartition", ("topic", "action"), r.handle_end_on_partition_enabled,
         r.handle_end_on_partition, "", _DELIVERY),
    Rule("HandleAck", (), r.handle_ack_enabled, r.handle_ack, "", _DELIVERY),
    Rule("EndTxnOnSubscription", ("action",), r.handle_end_on_subscription_enabled,
         r.handle_end_on_subscription, "", _DELIVERY),
    Rule("NormalPublish", (), r.normal_publish_enabled, r.normal_publish,
         "a non-transactional producer publishes to topic 0"),
    Rule("Recover", ("topic",), r.recover_enabled, r.recover, "", _BROKER),
    Rule("Deliver", ("topic",), r.deliver_enabled, r.deliver, "", _BROKER),
    Rule("CoordinatorFailover", (), r.tc_failover_enabled, r.tc_failover, "fault"),
    Rule("BrokerFailover", ("topic",), r.broker_failover_enabled, r.broker_failover, "fault"),
    Rule("Duplicate", ("message",), r.duplicate_enabled, r.duplicate, "fault"),
)


class _Codec:
    """The state in traces: one variable per component, with Pulsar's state names."""

    @staticmethod
    def encode(p, w):
        from kafka_mc.model.core import Record
        c, tc = w.client, w.tc
        return {
            "client": Record(state=CLIENT_STATES[c.state],
                             produced=tuple(OP_NAMES[o] for o in c.produced), ack=OP_NAMES[c.ack]),
            "coordinator": Record(status=TXN_STATUSES[tc.status], partitions=tc.partitions,
                                  subscribed=tc.subscribed, waiting=tc.waiting, answer=tc.answer),
            "topics": tuple(Record(t._asdict(), state=TB_STATES[t.state],
                                   ledger=tuple(_entry_out(e) for e in t.ledger),
                                   received=tuple(MESSAGE_NAMES[m] for m in t.received))
                            for t in w.topics),
            "subscription": ACK_NAMES[w.sub], "normal_published": w.normal,
            "network": tuple((NET_NAMES[m[0]], *m[1:]) for m in w.net),
            "faults_left": w.budgets}

    @staticmethod
    def decode(p, v):
        c, tc = v["client"], v["coordinator"]
        topics = tuple(Topic(**{**t, "state": TB_STATES.index(t["state"]),
                                "ledger": tuple(_entry_in(e) for e in t["ledger"]),
                                "received": tuple(MESSAGE_NAMES.index(m) for m in t["received"])})
                       for t in v["topics"])
        return World(Client(CLIENT_STATES.index(c["state"]),
                            tuple(OP_NAMES.index(o) for o in c["produced"]), OP_NAMES.index(c["ack"])),
                     Coordinator(TXN_STATUSES.index(tc["status"]), tc["partitions"],
                                 tc["subscribed"], tc["waiting"], tc["answer"]),
                     topics, ACK_NAMES.index(v["subscription"]), v["normal_published"],
                     tuple((NET_NAMES.index(m[0]), *m[1:]) for m in v["network"]),
                     tuple(v["faults_left"]))


def _entry_out(e):
    """A ledger entry in traces: ("msg", txn, "m") or ("commit" / "abort", txn)."""
    return (ENTRY_NAMES[e[0]], e[1], MESSAGE_NAMES[e[2]]) if len(e) == 3 else (ENTRY_NAMES[e[0]], e[1])


def _entry_in(e):
    return ((ENTRY_NAMES.index(e[0]), e[1], MESSAGE_NAMES.index(e[2])) if len(e) == 3
            else (ENTRY_NAMES.index(e[0]), e[1]))


SPEC = ProtocolSpec(
    name="pulsar", init=lambda p: [initial(p)], rules=RULES, params=params,
    check_deadlock=False, itf_codec=_Codec,
    doc="Pulsar's transactions (coordinator and log, transaction buffers, pending acks) with "
        "failovers, timeouts and duplicated requests")

def message_text(m) -> str:
    """A message in flight as Pulsar names it: Send(t0), EndTxnOnPartition(t0, COMMIT), ..."""
    args = [f"t{x}" if m[0] in (SEND, END_ON_PARTITION) and i == 0 else ACTION_NAMES[x]
            for i, x in enumerate(m[1:])]
    return f"{NET_NAMES[m[0]]}({', '.join(args)})" if args else NET_NAMES[m[0]]


class PulsarModel(RuleModel):
    """The spec bound to a configuration: claims Pulsar does not make here are set aside
    (``not_claimed``), a sequence diagram, the preset's setting."""

    capabilities = Capabilities(diagrams=True)

    def __init__(self, spec, cfg):
        super().__init__(spec, cfg)
        self._properties, self._not_claimed = split(self._properties, self.params)

    def not_claimed(self) -> dict:
        """{claim: why Pulsar does not make it in this configuration}."""
        return dict(self._not_claimed)

    def settings(self):
        return {"protocol.sync_waits_for_recovery": self.params.sync_waits_for_recovery}

    def format_action(self, a):
        """Actions with Pulsar's names for their arguments (TxnAction, TransactionImpl.State,
        the request a duplicate copies)."""
        name, args = a[0], a[1:]
        if name in _ACTIONS:
            a = (name, *args[:-1], ACTION_NAMES[args[-1]])
        elif name == "EndTxnResponse":
            a = (name, CLIENT_STATES[args[0]])
        elif name == "Duplicate":
            a = (name, message_text(args[0]))
        return super().format_action(a)

    def lifelines(self):
        return ("client", "coordinator", *(f"t{t}" for t in range(self.params.topics)), "sub")

    def describe(self, s, a, t):
        name, args = a[0], a[1:]
        topic = f"t{args[0]}" if args and isinstance(args[0], int) else ""
        what = ACTION_NAMES[args[-1]] if name in _ACTIONS else ""
        if name == "Duplicate":
            return (Event("fault", "client", label=f"{message_text(args[0])} duplicated"),)
        kind, source, target, label = _EVENTS.get(name, ("", "", "", ""))
        if not kind:
            return super().describe(s, a, t)
        fill = lambda x: x.format(topic=topic, action=what,
                                  outcome=CLIENT_STATES[args[0]] if args and isinstance(
                                      args[0], int) else "")
        return (Event(kind, fill(source), fill(target), fill(label)),)


_ACTIONS = ("EndTxn", "HandleEndTxn", "EndTxnOnPartition", "EndTxnOnSubscription")
# name -> (event kind, source, target, label), formatted with the action's topic and action
_EVENTS = {
    "NewTxn": ("request", "client", "coordinator", "NewTxn"),
    "Produce": ("request", "client", "coordinator", "AddPartitionToTxn({topic}), then Send"),
    "Acknowledge": ("request", "client", "coordinator", "AddSubscriptionToTxn(sub), then Ack"),
    "EndTxn": ("note", "client", "", "{action}"),
    "HandleSend": ("request", "client", "{topic}", "Send(m, txn)"),
    "SendReceipt": ("response", "{topic}", "client", "SendReceipt"),
    "HandleAck": ("request", "client", "sub", "Ack(m0, txn)"),
    "AckResponse": ("response", "sub", "client", "AckResponse"),
    "HandleEndTxn": ("request", "client", "coordinator", "EndTxn({action})"),
    "EndTxnResponse": ("response", "coordinator", "client", "EndTxnResponse({outcome})"),
    "EndTxnOnPartition": ("request", "coordinator", "{topic}", "EndTxnOnPartition({action})"),
    "EndTxnOnPartitionResponse": ("response", "{topic}", "coordinator", "ok"),
    "EndTxnOnSubscription": ("request", "coordinator", "sub", "EndTxnOnSubscription({action})"),
    "EndTxnOnSubscriptionResponse": ("response", "sub", "coordinator", "ok"),
    "TransactionTimeout": ("fault", "coordinator", "", "transaction timeout: abort"),
    "ClientTimeout": ("fault", "client", "", "TIME_OUT"),
    "CoordinatorFailover": ("fault", "coordinator", "", "failover: the log replayed"),
    "BrokerFailover": ("fault", "{topic}", "", "owner failover: the buffer recovers"),
    "Recover": ("note", "{topic}", "", "buffer recovered (snapshot + ledger)"),
    "Deliver": ("note", "{topic}", "", "the consumer receives"),
    "NormalPublish": ("note", "t0", "", "non-transactional publish n"),
}


PARAMS = (
    Param("protocol.version", str, "latest", "the Pulsar version whose behaviour is modelled",
          choices=tuple(PRESETS)),
    Param("model.topics", int, 1, "output topics the transaction produces to", min=1, max=2),
    Param("model.normal_message", bool, True,
          "a non-transactional producer publishes one message to topic 0"),
    Param("model.deduplication", bool, False,
          "brokerDeduplicationEnabled (off by default in Pulsar)"),
    Param("model.mutant", str, "none", "a deliberately broken variant (model/pulsar/spec.py)",
          choices=("none", *(m[0] for m in MUTANTS))),
    Param("faults.tc_failovers", int, 1, "coordinator failovers", min=0, max=2),
    Param("faults.broker_failovers", int, 1, "output topic owner failovers", min=0, max=2),
    Param("faults.duplicates", int, 0, "duplicated requests", min=0, max=2),
)

# Registered in pyproject.toml (entry point group kafka_mc.models).
MODEL = spec_entry(SPEC, PARAMS, model=PulsarModel, presets=tuple(PRESETS),
                   preset_docs={k: doc for k, (_, doc) in PRESETS.items()},
                   releases={"2.9.0": "pulsar-2.9.0", "2.9.1": "pulsar-2.9.1"},
                   mutants=MUTANTS, claims=comparison.CLAIMS,
                   comparison=comparison.comparison)
