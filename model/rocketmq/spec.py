"""RocketMQ transactional messages: one transaction of a ``TransactionMQProducer``, a broker with
its half and op queues and its check-back, the application's local transaction, a consumer.

Written from apache/rocketmq (tags rocketmq-all-4.3.0, 4.9.8, 5.3.3; ``versions.py`` says what
differs). The flow, as ``DefaultMQProducerImpl.sendMessageInTransaction`` runs it:

1. ``SendHalfMessage``: the producer sends the message with ``PROPERTY_TRANSACTION_PREPARED``;
   ``SendMessageProcessor`` hands it to ``TransactionalMessageService.asyncPrepareMessage``, and
   ``TransactionalMessageBridge.parseHalfMessageInner`` stores it in the half topic
   ``RMQ_SYS_TRANS_HALF_TOPIC`` (its real topic kept as ``PROPERTY_REAL_TOPIC``): consumers of
   the real topic cannot see it.
2. ``ExecuteLocalTransaction``: ``TransactionListener.executeLocalTransaction`` runs the
   application's local (database) transaction and returns ``COMMIT_MESSAGE``,
   ``ROLLBACK_MESSAGE`` or ``UNKNOW``; an unknown local transaction may finish later
   (``LocalTransactionResolves``).
3. ``EndTransaction``: ``DefaultMQProducerImpl.endTransaction`` sends the returned state one-way
   (``endTransactionOneway``); ``EndTransactionProcessor`` ignores ``TRANSACTION_NOT_TYPE``
   (UNKNOW), so an unknown one is not sent here. On COMMIT the broker reads the half message back
   from the commit log (``commitMessage``: by commit-log offset, whether or not it was already
   resolved), writes it to its real topic (``sendFinalMessage``) and marks it done with an op
   message in ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (``deletePrepareMessage``); on ROLLBACK only the op
   message is written.
4. ``TransactionCheck``: ``TransactionalMessageCheckService`` runs
   ``TransactionalMessageServiceImpl.check`` every ``transactionCheckInterval``: a half message
   without an op message is put back in the half queue with its check count
   (``putBackHalfMsgQueue``, ``PROPERTY_TRANSACTION_CHECK_TIMES``) and checked back
   (``AbstractTransactionalMessageCheckListener.resolveHalfMsg`` -> ``CheckTransactionState``),
   unless it was checked ``transactionCheckMax`` times (``needDiscard``), when it is discarded
   (``resolveDiscardMsg``: dropped, or kept in ``TRANS_CHECK_MAXTIME_TOPIC`` from 4.5.2).
5. ``CheckTransactionState``: the producer group's ``checkTransactionState`` asks
   ``TransactionListener.checkLocalTransaction`` and answers with a one-way EndTransaction
   marked ``fromTransactionCheck``.

Abstractions, each made here:

* One transaction. The broker checks and resolves each half message on its own (its op message
  names its queue offset), so one transaction shows every interleaving a transaction has.
* Time is not modelled: the check timer may fire at any point after the half message is stored
  (``transactionTimeOut`` / ``checkImmunityTime`` only delay it), so a check-back may overtake a
  slow local transaction or a delayed EndTransaction. "Past checkImmunityTime" (5.1's
  ``rejectCommitOrRollback``) is "after the first check-back": the check service checks a
  message only once that time has passed.
* Requests in flight are a multiset delivered in any order: any one-way EndTransaction may be
  delayed past any other step. An answer to a check-back is a one-way EndTransaction
  (``fromTransactionCheck``), lost by the same fault as the producer's own; losing it before it is
  sent is losing the check-back (answering only reads the local transaction).
* The producer group answers check-backs whatever happened to the producer instance that sent
  the half message (another instance, or the restarted one, reads the same database). A producer
  crash before its local transaction commits rolls that transaction back (the database aborts
  it); after, only the EndTransaction is lost.
* A broker restart loses what is in memory: the requests in flight on its connections and, from
  5.1, op data not yet flushed by ``TransactionalOpBatchService``. The commit log (half, op and
  real-topic messages, the check count) survives. It is enabled only where it loses something.
* The consumer reads the real topic in order and succeeds (``CONSUME_SUCCESS``): ``consumed``
  counts the copies it read. Consumer-side redelivery (offsets, rebalances) is not modelled, so
  every duplicate the model shows comes from the transaction protocol itself.
"""
from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from kafka_mc.model.capabilities import Capabilities
from kafka_mc.model.config import Config, Param
from kafka_mc.model.core import Event, WF
from kafka_mc.model.protocol import ProtocolSpec, RuleModel, Rule
from kafka_mc.model.registry import ModelEntry
from kafka_mc.model.rocketmq import comparison
from kafka_mc.model.rocketmq import claims
from kafka_mc.model.rocketmq.versions import DEFAULT_PRESET, PRESETS, RELEASES, Features
from kafka_mc.model.rocketmq.world import (COMMIT, COMMIT_MESSAGE, COMMITTED, CRASHED, DONE, DROPPED,
                                  ENDED, EXECUTED, EXECUTING, HALF, IDLE, LOCAL, MAXTIME, NONE,
                                  PENDING, PRODUCER, ROLLBACK, ROLLBACK_MESSAGE, ROLLED_BACK, UNKNOW,
                                  IN_DOUBT, CommitOrRollback, Local, LocalTransactionState, World)

FAULTS = ("producer_crash", "lost_end_transaction", "lost_check", "broker_restart")
MUTANTS = {
    "none": ("", ""),
    "unknown-as-commit": ("MessageOnlyIfCommitted",
                          "checkLocalTransaction answers COMMIT_MESSAGE for an unknown local "
                          "transaction"),
    "discard-commits": ("MessageOnlyIfCommitted",
                        "a half message past transactionCheckMax is committed instead of "
                        "discarded"),
    "check-never-discards": ("EveryTransactionResolved",
                             "needDiscard never holds: an unknown transaction is checked back "
                             "forever"),
}


class Params(NamedTuple):
    features: Features
    check_max: int
    budget: tuple
    total: int
    mutant: str


def params(cfg: Config) -> Params:
    return Params(PRESETS[cfg["protocol.version"]][0], cfg["broker.transaction_check_max"],
                  tuple(cfg[f"faults.{f}"] for f in FAULTS), cfg["faults.total"],
                  cfg["model.mutant"])


def _init(p):
    return [World(budget=p.budget)]


def _spend(p, w, fault):
    i = FAULTS.index(fault)
    return w._replace(budget=w.budget[:i] + (w.budget[i] - 1,) + w.budget[i + 1:],
                      faults=w.faults + 1)


def _can(p, w, fault):
    return w.budget[FAULTS.index(fault)] > 0 and w.faults < p.total


def _remove(t, x):
    i = t.index(x)
    return t[:i] + t[i + 1:]


def _add(t, x):
    return tuple(sorted(t + (x,)))


# --- the producer and the application -----------------------------------------------------------

def _send_half_enabled(p, w):
    return [()] if w.producer == IDLE else []


def _send_half(p, w):
    """SendMessageProcessor -> TransactionalMessageBridge.parseHalfMessageInner: the message is
    stored in RMQ_SYS_TRANS_HALF_TOPIC (a failed send makes the producer roll back without running
    the local transaction: nothing of it remains, so it is left out)."""
    return w._replace(producer=EXECUTING, half=PENDING)


def _execute_enabled(p, w):
    return [(s,) for s in (COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW)] if w.producer == EXECUTING else []


def _execute(p, w, state):
    """TransactionListener.executeLocalTransaction: the local transaction commits, rolls back or
    stays unknown (still running, or its outcome not known to the listener)."""
    local = {COMMIT_MESSAGE: COMMITTED, ROLLBACK_MESSAGE: ROLLED_BACK, UNKNOW: IN_DOUBT}[state]
    return w._replace(producer=EXECUTED, local=local, state=state)


def _resolve_local_enabled(p, w):
    return [(COMMITTED,), (ROLLED_BACK,)] if w.local == IN_DOUBT else []


def _resolve_local(p, w, local):
    """An in-doubt local transaction finishes later (what checkLocalTransaction will read)."""
    return w._replace(local=local)


def _end_enabled(p, w):
    return [()] if w.producer == EXECUTED else []


def _end(p, w):
    """DefaultMQProducerImpl.endTransaction: endTransactionOneway with the returned state
    (TRANSACTION_NOT_TYPE for UNKNOW, which EndTransactionProcessor ignores: not sent here)."""
    w = w._replace(producer=ENDED)
    if w.state == UNKNOW:
        return w
    end = COMMIT if w.state == COMMIT_MESSAGE else ROLLBACK
    return w._replace(ends=_add(w.ends, (end, False)))


def _crash_enabled(p, w):
    return [()] if w.producer in (EXECUTING, EXECUTED) and _can(p, w, "producer_crash") else []


def _crash(p, w):
    """The producer dies after the half message: before its local transaction ends (the database
    rolls it back) or before it sends EndTransaction."""
    w = _spend(p, w, "producer_crash")
    if w.producer == EXECUTING:
        return w._replace(producer=CRASHED, local=ROLLED_BACK)
    return w._replace(producer=CRASHED)


def _check_state_enabled(p, w):
    return [()] if w.checks else []


def _answer(p, local):
    if local == COMMITTED or p.mutant == "unknown-as-commit" and local in (NONE, IN_DOUBT):
        return COMMIT
    return ROLLBACK if local == ROLLED_BACK else None


def _check_state(p, w):
    """ClientRemotingProcessor.checkTransactionState -> DefaultMQProducerImpl.checkTransactionState:
    TransactionListener.checkLocalTransaction reads the local transaction and the answer goes back
    one-way with fromTransactionCheck (UNKNOW: TRANSACTION_NOT_TYPE, ignored, not sent)."""
    w = w._replace(checks=w.checks - 1)
    answer = _answer(p, w.local)
    return w._replace(ends=_add(w.ends, (answer, True))) if answer else w


# --- the broker ----------------------------------------------------------------------------------

def _deliver_end_enabled(p, w):
    return sorted(set(w.ends))


def _op(p, w):
    """deletePrepareMessage: the op message marks the half message done (5.1: queued first)."""
    if w.half != PENDING:
        return w
    return w._replace(op_pending=True) if p.features.op_batch else w._replace(half=DONE)


def _deliver_end(p, w, end, from_check):
    """EndTransactionProcessor.processRequest: commitMessage / rollbackMessage find the half
    message by its commit-log offset (resolved or not); COMMIT writes it to its real topic
    (sendFinalMessage) and both write the op message. From 5.1.1 a producer's own request past
    checkImmunityTime is refused (rejectCommitOrRollback: ILLEGAL_OPERATION)."""
    w = w._replace(ends=_remove(w.ends, (end, from_check)))
    if p.features.reject_late_end and not from_check and w.check_times > 0:
        return w
    if end == COMMIT:
        w = w._replace(real=w.real + 1)
    return _op(p, w)


def _flush_enabled(p, w):
    return [()] if w.op_pending else []


def _flush(p, w):
    """TransactionalOpBatchService.batchSendOpMessage writes the queued op data (5.1)."""
    return w._replace(op_pending=False, half=DONE)


def _check_enabled(p, w):
    if w.half != PENDING:
        return []
    if p.mutant == "check-never-discards" and w.check_times >= p.check_max and (
            w.checks or w.ends or w.op_pending):
        return []   # the mutant checks again once the last check-back is answered (keeps it finite)
    return [()]


def _check(p, w):
    """TransactionalMessageServiceImpl.check on a half message with no op message in the op
    topic: needDiscard past transactionCheckMax (resolveDiscardMsg), else putBackHalfMsgQueue with
    the check count raised and resolveHalfMsg (a CheckTransactionState request)."""
    if w.check_times >= p.check_max:
        if p.mutant == "check-never-discards":
            return w._replace(checks=w.checks + 1)
        if p.mutant == "discard-commits":
            return w._replace(half=DONE, op_pending=False, real=w.real + 1)
        return w._replace(half=MAXTIME if p.features.discard_to_maxtime_topic else DROPPED,
                          op_pending=False)
    return w._replace(check_times=w.check_times + 1, checks=w.checks + 1)


def _lose_end_enabled(p, w):
    return sorted(set(w.ends)) if _can(p, w, "lost_end_transaction") else []


def _lose_end(p, w, end, from_check):
    """A one-way EndTransaction lost (endTransactionOneway has no response to retry on)."""
    return _spend(p, w, "lost_end_transaction")._replace(ends=_remove(w.ends, (end, from_check)))


def _lose_check_enabled(p, w):
    return [()] if w.checks and _can(p, w, "lost_check") else []


def _lose_check(p, w):
    """A CheckTransactionState request lost (an answer already sent is a one-way EndTransaction:
    LoseEndTransaction loses it)."""
    return _spend(p, w, "lost_check")._replace(checks=w.checks - 1)


def _restart_enabled(p, w):
    return [()] if (w.ends or w.checks or w.op_pending) and _can(p, w, "broker_restart") else []


def _restart(p, w):
    """The broker restarts: its connections' requests and (5.1) unflushed op data are lost; the
    commit log (half, op, real-topic messages, check counts) is recovered."""
    return _spend(p, w, "broker_restart")._replace(ends=(), checks=0, op_pending=False)


# --- the consumer --------------------------------------------------------------------------------

def _consume_enabled(p, w):
    return [()] if w.consumed < w.real else []


def _consume(p, w):
    """DefaultMQPushConsumer reads the next copy in the real topic (CONSUME_SUCCESS)."""
    return w._replace(consumed=w.consumed + 1)


RULES = (
    Rule("SendHalfMessage", (), _send_half_enabled, _send_half, "the producer stores a half message",
         WF("the application sends its transactional message")),
    Rule("ExecuteLocalTransaction", ("state",), _execute_enabled, _execute,
         "the local transaction commits, rolls back or stays unknown",
         WF("executeLocalTransaction returns")),
    Rule("LocalTransactionResolves", ("local",), _resolve_local_enabled, _resolve_local,
         "an unknown local transaction finishes"),
    Rule("EndTransaction", (), _end_enabled, _end, "the producer sends EndTransaction one-way",
         WF("sendMessageInTransaction calls endTransaction after the local transaction")),
    Rule("ProducerCrash", (), _crash_enabled, _crash, "the producer crashes after the half message"),
    Rule("DeliverEndTransaction", ("end", "from_check"), _deliver_end_enabled, _deliver_end,
         "the broker handles an EndTransaction", WF("the network delivers what it does not lose")),
    Rule("LoseEndTransaction", ("end", "from_check"), _lose_end_enabled, _lose_end,
         "a one-way EndTransaction is lost"),
    Rule("TransactionCheck", (), _check_enabled, _check,
         "the check service checks back (or discards) a half message",
         WF("TransactionalMessageCheckService runs every transactionCheckInterval")),
    Rule("CheckTransactionState", (), _check_state_enabled, _check_state,
         "the producer group answers a check-back",
         WF("the producer group's check thread answers what reaches it")),
    Rule("LoseCheck", (), _lose_check_enabled, _lose_check, "a check-back or its answer is lost"),
    Rule("OpBatchFlush", (), _flush_enabled, _flush, "queued op data is written (5.1)",
         WF("TransactionalOpBatchService wakes up every transactionOpBatchInterval")),
    Rule("BrokerRestart", (), _restart_enabled, _restart, "the broker restarts"),
    Rule("ConsumeMessage", (), _consume_enabled, _consume, "the consumer reads the real topic",
         WF("the consumer keeps pulling")),
)


# --- traces, panels, diagrams ---------------------------------------------------------------------

class _Codec:
    @staticmethod
    def encode(p, w):
        return {"producer": PRODUCER[w.producer], "local": LOCAL[w.local], "state": LocalTransactionState(w.state).name if w.state else "",
                "half": HALF[w.half], "check_times": w.check_times, "op_pending": w.op_pending,
                "real": w.real, "consumed": w.consumed,
                "ends": tuple(f"{CommitOrRollback(e).name}{'/check' if c else ''}" for e, c in w.ends),
                "checks": w.checks, "budget": dict(zip(FAULTS, w.budget)), "faults": w.faults}

    @staticmethod
    def decode(p, v):
        ends = tuple(sorted((CommitOrRollback[s.split("/")[0]], s.endswith("/check"))
                           for s in v["ends"]))
        return World(PRODUCER.index(v["producer"]), LOCAL.index(v["local"]),
                     LocalTransactionState[v["state"]] if v["state"] else 0, HALF.index(v["half"]), v["check_times"],
                     v["op_pending"], v["real"], v["consumed"], ends, v["checks"],
                     tuple(v["budget"][f] for f in FAULTS), v["faults"])


    # Actions in traces name their arguments' values (ExecuteLocalTransaction("COMMIT_MESSAGE")).
    ARGS = {"ExecuteLocalTransaction": (LocalTransactionState,), "LocalTransactionResolves": (Local,),
            "DeliverEndTransaction": (CommitOrRollback, bool),
            "LoseEndTransaction": (CommitOrRollback, bool)}

    @staticmethod
    def encode_action(p, a):
        return (a[0], *(x.name if isinstance(x, IntEnum) else x for x in a[1:]))

    @staticmethod
    def decode_action(p, v):
        kinds = _Codec.ARGS.get(v[0], ())
        return (v[0], *(k[x] if isinstance(x, str) and k is not bool else x
                        for k, x in zip(kinds, v[1:])))


SPEC = ProtocolSpec(
    name="rocketmq", init=_init, rules=RULES, properties=claims.PROPERTIES, params=params,
    check_deadlock=False, itf_codec=_Codec,
    doc="RocketMQ transactional messages (half/op topics, check-back, local transaction) with faults")


class RocketMQModel(RuleModel):
    """The RocketMQ spec bound to a configuration, with its panels and sequence diagram."""

    capabilities = Capabilities(diagrams=True)

    def lifelines(self):
        return ("application", "producer", "broker", "consumer")

    def components(self, s):
        v = _Codec.encode(self.params, s)
        return {"producer": {k: v[k] for k in ("producer", "state")},
                "application": {"local transaction": v["local"]},
                "broker": {k: v[k] for k in ("half", "check_times", "op_pending", "real")},
                "network": {"EndTransaction": v["ends"], "CheckTransactionState": v["checks"]},
                "consumer": {"consumed": v["consumed"]},
                "faults": {"left": v["budget"], "taken": v["faults"]}}

    def describe(self, s, a, t):
        name, args = a[0], a[1:]
        end = (f"EndTransaction({CommitOrRollback(args[0]).name}"
               f"{', fromTransactionCheck' if args[1] else ''})") if len(args) == 2 else ""
        sent = [e for e in t.ends if e not in s.ends]
        answer = f"EndTransaction({CommitOrRollback(sent[0][0]).name})" if sent else "UNKNOW (not sent)"
        if name == "ExecuteLocalTransaction":
            return (Event("note", "application", label=LocalTransactionState(args[0]).name),)
        if name == "LocalTransactionResolves":
            return (Event("note", "application", label=LOCAL[args[0]]),)
        if name == "TransactionCheck":
            return ((Event("request", "broker", "producer", "CheckTransactionState"),)
                    if t.checks > s.checks else
                    (Event("note", "broker", label=f"discarded: {HALF[t.half]}"),))
        events = {
            "SendHalfMessage": Event("request", "producer", "broker", "SendMessage(half)"),
            "EndTransaction": Event("note", "producer", label=f"one-way {answer}"),
            "ProducerCrash": Event("fault", "producer", label="crash"),
            "DeliverEndTransaction": Event("request", "producer", "broker", end),
            "LoseEndTransaction": Event("fault", "producer", "broker", f"lost {end}"),
            "CheckTransactionState": Event("note", "producer", label=f"checkLocalTransaction: "
                                           f"{LOCAL[s.local]}, answers {answer}"),
            "LoseCheck": Event("fault", "broker", "producer", "lost check-back"),
            "OpBatchFlush": Event("note", "broker", label="op message written"),
            "BrokerRestart": Event("fault", "broker", label="restart"),
            "ConsumeMessage": Event("response", "broker", "consumer", "message"),
        }
        return (events[name],) if name in events else super().describe(s, a, t)

    def settings(self):
        return {f"protocol.{k}": v for k, v in self.params.features._asdict().items()}

    def setting_defaults(self):
        return {f"protocol.{k}": v for k, v in Features()._asdict().items()}


PARAMS = (
    Param("protocol.version", str, DEFAULT_PRESET, "RocketMQ release preset", choices=tuple(PRESETS)),
    Param("broker.transaction_check_max", int, 2,
          "transactionCheckMax: check-backs before a half message is discarded (RocketMQ: 15)",
          min=1, max=4),
    *(Param(f"faults.{f}", int, 1, f"budget of {f.replace('_', ' ')}", min=0, max=2)
      for f in FAULTS),
    Param("faults.total", int, 2, "faults in one execution at most", min=0, max=8),
    Param("model.mutant", str, "none", "a deliberately broken variant (model/rocketmq/spec.py)",
          choices=tuple(MUTANTS)),
)


def _build(cfg: Config, properties=()):
    spec = SPEC.derive(SPEC.name, add_properties=properties) if properties else SPEC
    return RocketMQModel(spec, cfg)


# Registered in pyproject.toml (entry point group kafka_mc.models).
MODEL = ModelEntry("rocketmq", SPEC.doc, PARAMS, _build, presets=tuple(PRESETS),
                   preset_docs={name: doc for name, (_, doc) in PRESETS.items()},
                   releases=RELEASES,
                   mutants=tuple((m, inv, doc) for m, (inv, doc) in MUTANTS.items() if m != "none"),
                   claims=comparison.CLAIMS, comparison=comparison.comparison)
