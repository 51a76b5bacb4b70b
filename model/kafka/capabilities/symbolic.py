"""A symbolic model of Kafka's fencing core over z3 terms (docs/design.md section 8), for
``explorers/symbolic.py``: bounded model checking and k-induction over real 16-bit producer
epochs and 64-bit producer ids, which no explicit search reaches (epoch 32,766 is
``TransactionMetadata.isEpochExhausted``).

State, for one transactional.id (the explicit model's first), its producer instances and its data
partitions' leaders; epochs are signed 16-bit bit-vectors and producer ids signed 64-bit ones, as
Kafka's ``short`` and ``long`` (so ``epoch + 1`` at 32,767 wraps to -32,768 as in Java):

- the coordinator's cache (``txn.*``: producerId, producerEpoch, lastProducerEpoch, state, and
  whether a ``pendingState`` is set), the transaction-log append in flight (``append.*``: its
  target metadata), the replicated log (``log.*``), ``nextProducerId`` (the ProducerIdManager)
  and whether markers are awaited (``markersPending``);
- per producer instance the (producer id, epoch) it holds (``producer<i>.*``);
- per partition leader the ProducerStateManager entry of the highest producer id it has
  (``leader<k>.*``: producerId, producerEpoch, whether a transaction is open).

Actions (each cites the Kafka method it follows; ``model/kafka/coordinator.py`` and
``partition.py`` are the explicit versions): ``InitProducerId`` (prepareInitProducerIdTransit:
new metadata, fencing an Ongoing transaction with prepareFenceProducerEpoch, the KIP-360 bump and
its retry, and ``prepareProducerIdRotation`` when the epoch is exhausted), ``EndTxn``
(endTransactionWithTV1; TV2's endTransaction bumping the epoch at every end, with the next
producer id taken at completion when the epoch is exhausted, KIP-890), ``AddPartitionsToTxn``
(TV1, and TV2's implicit add by a leader's verification), ``CommitTxnLogAppend``
(appendTransactionToLog's callback, with markers sent and completion prepared),
``MarkerAck`` (TransactionMarkerRequestCompletionHandler), ``ExpireTransaction``
(abortTimedOutTransactions), ``ExpireTransactionalId``, ``ElectCoordinator`` (reload from the
log, the in-flight append replicated or lost), ``ReceiveProducerId`` (InitProducerId / TV2 EndTxn
responses), ``WriteTxnMarker`` (appendEndTxnMarker's epoch checks, KIP-1228, KAFKA-19999),
``Produce`` (checkProducerEpoch), ``LoseProducerState``; ``Stutter`` is every step that leaves
the projection alone. Faults are actions only if the configuration's budget for them is not 0,
and then without a bound on their number.

Abstractions (what this model leaves out):

- messages are not kept: a request from instance i carries a (producer id, epoch) it holds or
  held (its current id, any epoch from 0 to its current one); a response or marker carries a pair
  the coordinator issued (an id below ``nextProducerId``, its epoch at most the log's and cache's
  when the id is theirs). Network order, duplicates and losses are therefore all covered, and so
  is any interleaving of them, including ones the explicit model cannot produce;
- sequence numbers, duplicate detection, the coordinator epoch (NOT_COORDINATOR,
  TRANSACTION_COORDINATOR_FENCED), the partitions of a transaction, verification guards (and
  their epochs, which decide whether a TV2 marker keeps one: KAFKA-18654) and KIP-890
  verification itself: each can only refuse a request, which is a ``Stutter`` here, so a
  step the explicit model refuses is still admitted; but the symbolic Produce accepts whatever
  passes the leader's epoch check, so the leader half of ``zombie_fencing`` (the zombie's batch
  not appended) is not claimed here: it rests on markers and verification, not on epochs;
- a leader keeps only its highest producer id's entry (older ids' appends are stutters);
  the coordinator's ``previousProducerId`` (the retry of a rotated InitProducerId) is not kept;
- a TV2 Prepare* that took a nextProducerId is known by its epochs (``next_id_taken``: a
  client's EndTxn from 32,766, or from 4.3 a fence at 32,767), the id being the last generated;
  before 4.3 a reload forgets that id (KAFKA-20310), which this model does not (its TV2 claims
  are 4.3's); KAFKA-9666's failed fence appends are the
  ``fence_retry_bump`` variant only (there is no version flag for the 2.6 fix).

Claims: ``zombie_fencing`` (its coordinator half: an EndTxn or AddPartitionsToTxn carrying an
epoch older than one a newer instance holds under the same id changes nothing),
``marker_fencing`` (no marker of an older epoch ends a newer open transaction at a leader),
``fence_bumps_epoch`` (the abort that fences an Ongoing transaction carries an epoch no instance
holds: KAFKA-6119's fix) and ``no_epoch_overflow`` (no epoch wraps below -1). Broken variants
(``symbolic.variant``): ``no_rotation`` (the epoch is bumped past 32,767 instead of rotating the
producer id) and ``fence_retry_bump`` (KAFKA-9666: a fence whose append fails leaves the bumped
epoch in the cache and the next timeout bumps again).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import z3

from kafka_mc.model.core import SymbolicAction, SymbolicClaim, SymbolicSystem
from kafka_mc.model.kafka.world import TxnState as T

VARIANTS = ("none", "no_rotation", "fence_retry_bump")
NO_PID, NO_EPOCH = -1, -1
SHORT_MAX = 32767
LONG_MAX = 2**63 - 1
EXHAUSTED = SHORT_MAX - 1      # TransactionMetadata.isEpochExhausted: epoch >= Short.MaxValue - 1
META = ("producerId", "producerEpoch", "lastProducerEpoch", "state")
SORTS = {"producerId": "bv64", "producerEpoch": "bv16", "lastProducerEpoch": "bv16", "state": "bv8",
         "pending": "bool", "on": "bool", "open": "bool"}
PREPARE = (T.PrepareCommit, T.PrepareAbort)
COMPLETE = (T.Empty, T.CompleteCommit, T.CompleteAbort)
DONE = (T.CompleteCommit, T.CompleteAbort)


def _pid(x):
    return z3.BitVecVal(x, 64)


def _ep(x):
    return z3.BitVecVal(x, 16)


def _st(x):
    return z3.BitVecVal(int(x), 8)


def _in(term, states):
    return z3.Or(*[term == _st(s) for s in states])


def variables(instances: int, partitions: int) -> tuple[tuple[str, str], ...]:
    out = [(f"txn.{f}", SORTS[f]) for f in META] + [("txn.pending", "bool")]
    out += [("append.on", "bool")] + [(f"append.{f}", SORTS[f]) for f in META]
    out += [(f"log.{f}", SORTS[f]) for f in META]
    out += [("nextProducerId", "bv64"), ("markersPending", "bool")]
    for i in range(instances):
        out += [(f"producer{i}.producerId", "bv64"), (f"producer{i}.producerEpoch", "bv16")]
    for k in range(partitions):
        out += [(f"leader{k}.producerId", "bv64"), (f"leader{k}.producerEpoch", "bv16"),
                (f"leader{k}.open", "bool")]
    return tuple(out)


def _exhausted(epoch):
    return epoch >= _ep(EXHAUSTED)


def _meta(prefix, pid, epoch, last, state) -> dict:
    """The update of the metadata variables ``prefix.*`` (dots written as __, as in ``frame``)."""
    return {f"{prefix}__producerId": pid, f"{prefix}__producerEpoch": epoch,
            f"{prefix}__lastProducerEpoch": last, f"{prefix}__state": state}


def _no_append() -> dict:
    """The update that clears the append in flight."""
    return {"append__on": z3.BoolVal(False),
            **_meta("append", _pid(NO_PID), _ep(NO_EPOCH), _ep(NO_EPOCH), _st(T.Empty))}


def _txn(v) -> tuple:
    return tuple(v[f"txn.{f}"] for f in META)


def _leader(v, k) -> tuple:
    return (v[f"leader{k}.producerId"], v[f"leader{k}.producerEpoch"], v[f"leader{k}.open"])


def _set_leader(k, pid, epoch, open_) -> dict:
    return {f"leader{k}__producerId": pid, f"leader{k}__producerEpoch": epoch,
            f"leader{k}__open": z3.BoolVal(open_)}


def _behind(v, j_pid, j_epoch, prefix):
    return z3.Implies(z3.And(j_pid == v[f"{prefix}.producerId"], j_pid != _pid(NO_PID)),
                      j_epoch <= v[f"{prefix}.producerEpoch"])


@dataclass(frozen=True)
class Encoding:
    """What the formulas of one symbolic system depend on: the version's flags, the variant and
    the sizes. Its methods build the formulas, grouped by the Kafka component they encode; an
    action's relation is a method taking (its constant arguments,) ``v``, ``p``, ``w``."""

    features: Any
    variant: str
    names: tuple[str, ...]
    I: range
    P: range

    @classmethod
    def of(cls, features, instances: int, partitions: int, variant: str = "none") -> Encoding:
        if variant not in VARIANTS:
            raise ValueError(f"unknown symbolic variant {variant!r} (known: {', '.join(VARIANTS)})")
        names = tuple(n for n, _ in variables(instances, partitions))
        return cls(features, variant, names, range(instances), range(partitions))

    @property
    def tv2(self) -> bool:
        return self.features.transaction_version == 2

    @property
    def rotate(self) -> bool:
        return self.variant != "no_rotation"

    # --- frames and messages ----------------------------------------------------------------------------

    def frame(self, v, w, **upd):
        """w equals v but for the updated variables (dots in names written as __)."""
        upd = {k.replace("__", "."): x for k, x in upd.items()}
        return z3.And(*[w[n] == upd.get(n, v[n]) for n in self.names])

    def cases(self, v, w, *alternatives):
        """One of the (condition, update) alternatives."""
        return z3.Or(*[z3.And(cond, self.frame(v, w, **upd)) for cond, upd in alternatives])

    @staticmethod
    def sent(v, i, p_, e):
        """A request from instance i: its producer id, an epoch it held under it."""
        return z3.And(v[f"producer{i}.producerId"] == p_, p_ != _pid(NO_PID), e >= _ep(0),
                      e <= v[f"producer{i}.producerEpoch"])

    def issued(self, v, p_, e, marker=False):
        """A pair the coordinator handed out (in a response or, ``marker``, a marker). A response
        never carries Short.MaxValue (InitProducerId rotates at 32,766, a fence answers none, a
        TV2 EndTxn from 32,766 answers the next producer id); a marker may: a fence or a TV2
        EndTxn at 32,766 writes Prepare* at 32,767 (prepareFenceProducerEpoch,
        prepareAbortOrCommit) and its markers carry it."""
        below = e < _ep(SHORT_MAX) if self.rotate and not marker else True
        taken = z3.Implies(z3.And(p_ == v["nextProducerId"] - 1, self.next_id_out(v)), e == _ep(0))
        return z3.And(p_ >= _pid(0), p_ < v["nextProducerId"], e >= _ep(0), below, taken,
                      z3.Implies(p_ == v["log.producerId"], e <= v["log.producerEpoch"]),
                      z3.Implies(p_ == v["txn.producerId"], e <= v["txn.producerEpoch"]),
                      z3.Implies(z3.And(v["append.on"], p_ == v["append.producerId"]), z3.And(
                          e <= v["append.producerEpoch"],
                          z3.Or(p_ == v["txn.producerId"], _in(v["append.state"], DONE)))))

    # --- the coordinator's transitions (TransactionMetadata) --------------------------------------------

    @staticmethod
    def prepare(v, pid, epoch, last, state, cache=None, **more) -> dict:
        """prepareTransitionTo + appendTransactionToLog: the cache keeps its metadata (``cache``
        overrides it, e.g. a fence's bumped epoch) with pendingState set; the target in flight."""
        c = _meta("txn", *(cache or ()))
        return {**c, "txn__pending": z3.BoolVal(True), "append__on": z3.BoolVal(True),
                **_meta("append", pid, epoch, last, state), **more}

    def fence(self, v, pid, epoch, state, **more) -> dict:
        """prepareFenceProducerEpoch + endTransaction(ABORT, isFromClient = false): from 1.0
        (KAFKA-6119) the epoch is bumped in memory and PrepareAbort written with it. From 4.3
        (KAFKA-20090) a TV2 fence of an exhausted epoch takes a nextProducerId as a client's
        EndTxn does (generateTxnTransitMetadataForTxnCompletion on the fence path)."""
        nxt = more.pop("nextProducerId", v["nextProducerId"])
        if self.tv2 and self.rotate and self.features.rotate_on_fence:
            nxt = z3.If(z3.And(_exhausted(epoch), nxt < _pid(LONG_MAX - 1)), nxt + 1, nxt)
        if self.features.bump_epoch_on_timeout:
            epoch, last = epoch + 1, _ep(NO_EPOCH)
        else:
            last = v["txn.lastProducerEpoch"]
        return self.prepare(v, pid, epoch, last, _st(T.PrepareAbort),
                            cache=(pid, epoch, last, state), nextProducerId=nxt, **more)

    def next_id_taken(self, epoch, last):
        """Whether the TV2 Prepare* (epoch, lastProducerEpoch) took a nextProducerId: a
        client's EndTxn (prepareAbortOrCommit sets lastProducerEpoch to the epoch it bumped)
        from an exhausted epoch, or from 4.3 a fence (lastProducerEpoch -1) of one, whose
        PrepareAbort is at Short.MaxValue. The id is the last one generated (one
        transactional.id: no other is generated while it is in Prepare*)."""
        fence = z3.And(last == _ep(NO_EPOCH), epoch == _ep(SHORT_MAX)) \
            if self.features.rotate_on_fence else False
        return z3.Or(z3.And(last != _ep(NO_EPOCH), _exhausted(last)), fence)

    def complete_target(self, v, pid, epoch, last, state, next_pid):
        """prepareComplete: CompleteCommit / CompleteAbort; in TV2 the nextProducerId the
        Prepare* took (``next_id_taken``) at epoch 0, lastProducerEpoch kept ("the last epoch
        visible to the client"). Returns (metadata, nextProducerId): the id was generated at
        Prepare*, so nextProducerId stays."""
        done = z3.If(state == _st(T.PrepareCommit), _st(T.CompleteCommit), _st(T.CompleteAbort))
        if self.tv2 and self.rotate:
            r = self.next_id_taken(epoch, last)
            return (z3.If(r, next_pid - 1, pid), z3.If(r, _ep(0), epoch), last, done), next_pid
        return (pid, epoch, last, done), next_pid

    def prepare_complete(self, v, pid, epoch, last, state, next_pid, **more) -> dict:
        """The completion prepared (its target in flight) after the markers."""
        target, nxt = self.complete_target(v, pid, epoch, last, state, next_pid)
        return self.prepare(v, *target, cache=(pid, epoch, last, state), nextProducerId=nxt, **more)

    def after_prepare_logged(self, v, logged, base) -> list:
        """Markers sent (some awaited), or none to send and completion prepared at once
        (addTxnMarkersToSend, then TransactionMarkerChannelManager's completion). Either way
        prepareComplete has set the pending state first (sendTxnMarkersCallback,
        loadTransactionsForTxnTopicPartition): it stays set through the marker round."""
        pid, epoch, last, state = logged
        rest = {k: x for k, x in base.items()
                if not k.startswith(("txn__", "append__")) and k != "markersPending"}
        return [{**base, "markersPending": z3.BoolVal(True), "txn__pending": z3.BoolVal(True)},
                {**base, **self.prepare_complete(v, pid, epoch, last, state, v["nextProducerId"],
                                                 markersPending=z3.BoolVal(False), **rest)}]

    # --- the coordinator's requests (TransactionCoordinator) --------------------------------------------

    def init_producer_id(self, i, v, p, w):
        """handleInitProducerId / prepareInitProducerIdTransit from instance i."""
        rp, re = p["P"], p["E"]
        request = z3.Or(z3.And(rp == _pid(NO_PID), re == _ep(NO_EPOCH)), self.sent(v, i, rp, re))
        new = v["txn.producerId"] == _pid(NO_PID)
        pid = z3.If(new, v["nextProducerId"], v["txn.producerId"])
        epoch = z3.If(new, _ep(NO_EPOCH), v["txn.producerEpoch"])
        last = z3.If(new, _ep(NO_EPOCH), v["txn.lastProducerEpoch"])
        state = z3.If(new, _st(T.Empty), v["txn.state"])
        pending = z3.And(z3.Not(new), v["txn.pending"])
        nxt = z3.If(new, v["nextProducerId"] + 1, v["nextProducerId"])
        bump = rp != _pid(NO_PID)
        # ProducerIdManager: ids are not exhausted (it fails the request when they are)
        request = z3.And(request, v["nextProducerId"] < _pid(LONG_MAX - 1))
        fenced = z3.And(bump, epoch != _ep(NO_EPOCH), rp != pid)
        go = z3.And(z3.Not(pending), z3.Not(fenced), z3.Not(_in(state, PREPARE)))
        alts = [(z3.And(go, state == _st(T.Ongoing)),
                 self.fence(v, pid, epoch, state, nextProducerId=nxt))]
        # prepareIncrementProducerEpoch: a new instance, the client's bump, its retry
        incr = z3.Or(z3.Not(bump), re == epoch, epoch == _ep(NO_EPOCH))
        retry = z3.And(z3.Not(incr), re == last)
        for cond, new_epoch, new_last in ((incr, epoch + 1, z3.If(bump, epoch, _ep(NO_EPOCH))),
                                          (retry, epoch, last)):
            ok = z3.And(go, _in(state, COMPLETE), cond)
            if self.rotate and new_epoch is not epoch:   # prepareProducerIdRotation
                # (recordLastEpoch: a request carrying its producer id and epoch)
                alts.append((z3.And(ok, _exhausted(epoch)),
                             self.prepare(v, nxt, _ep(0), z3.If(bump, epoch, _ep(NO_EPOCH)),
                                          _st(T.Empty), cache=(pid, epoch, last, state),
                                          nextProducerId=nxt + 1)))
                ok = z3.And(ok, z3.Not(_exhausted(epoch)))
            elif new_epoch is epoch:   # prepareIncrementProducerEpoch throws at an exhausted epoch
                ok = z3.And(ok, z3.Not(_exhausted(epoch)))
            alts.append((ok, self.prepare(v, pid, new_epoch, new_last, _st(T.Empty),
                                          cache=(pid, epoch, last, state), nextProducerId=nxt)))
        # new metadata that is then refused leaves the new id in the cache
        alts.append((z3.And(new, z3.Not(go)), {**_meta("txn", pid, epoch, last, state),
                                               "txn__pending": pending, "nextProducerId": nxt}))
        return z3.And(request, self.cases(v, w, *alts))

    def end_txn(self, i, v, p, w):
        """handleEndTransaction from instance i (endTransactionWithTV1, or TV2's epoch bump)."""
        rp, re, commit = p["P"], p["E"], p["commit"]
        pid, epoch, last, state = _txn(v)
        mapped = z3.And(pid == rp, pid != _pid(NO_PID), z3.Not(v["txn.pending"]))
        prep = z3.If(commit, _st(T.PrepareCommit), _st(T.PrepareAbort))
        more = {}
        if self.tv2:
            ok = z3.And(mapped, re == epoch, _in(state, (T.Ongoing,) + COMPLETE),
                        z3.Implies(commit, state == _st(T.Ongoing)))
            target = (pid, epoch + 1, epoch, prep)
            if self.rotate:   # generateTxnTransitMetadataForTxnCompletion: isProducerEpochExhausted
                take = _exhausted(epoch)
                ok = z3.And(ok, z3.Implies(take, v["nextProducerId"] < _pid(LONG_MAX - 1)))
                more = {"nextProducerId": z3.If(take, v["nextProducerId"] + 1, v["nextProducerId"])}
        else:
            fresh = re == epoch if self.features.strict_end_txn_epoch else re >= epoch
            ok = z3.And(mapped, fresh, state == _st(T.Ongoing))
            target = (pid, epoch, last, prep)
        return z3.And(self.sent(v, i, rp, re),
                      self.cases(v, w, (ok, self.prepare(v, *target, cache=_txn(v), **more))))

    def add_partitions(self, i, v, p, w):
        """handleAddPartitionsToTransaction from instance i (or TV2's implicit add)."""
        rp, re = p["P"], p["E"]
        pid, epoch, last, state = _txn(v)
        ok = z3.And(pid == rp, pid != _pid(NO_PID), re == epoch, z3.Not(v["txn.pending"]),
                    z3.Not(_in(state, PREPARE)))
        return z3.And(self.sent(v, i, rp, re), self.cases(v, w, (ok, self.prepare(
            v, pid, epoch, last, _st(T.Ongoing), cache=_txn(v)))))

    def commit_append(self, v, p, w):
        """appendTransactionToLog's callback: the target replicated, cached and acted on."""
        dead = v["append.state"] == _st(T.Dead)
        target = tuple(v[f"append.{f}"] for f in META)
        logged = (z3.If(dead, _pid(NO_PID), target[0]), z3.If(dead, _ep(NO_EPOCH), target[1]),
                  z3.If(dead, _ep(NO_EPOCH), target[2]), z3.If(dead, _st(T.Empty), target[3]))
        base = {**_meta("log", *logged), **_meta("txn", *logged), "txn__pending": z3.BoolVal(False),
                **_no_append()}
        prep = _in(logged[3], PREPARE)
        alts = [(z3.Not(prep), base)]
        alts += [(prep, upd) for upd in self.after_prepare_logged(v, logged, base)]
        return z3.And(v["append.on"], self.cases(v, w, *alts))

    def marker_ack(self, v, p, w):
        """TransactionMarkerRequestCompletionHandler: some markers acknowledged, or the last."""
        pid, epoch, last, state = _txn(v)
        ok = z3.And(v["markersPending"], _in(state, PREPARE), z3.Not(v["append.on"]))
        return self.cases(v, w, (ok, {"markersPending": z3.BoolVal(False)}),
                          (ok, self.prepare_complete(v, pid, epoch, last, state, v["nextProducerId"],
                                                     markersPending=z3.BoolVal(False))))

    def expire_transaction(self, v, p, w):
        """abortTimedOutTransactions: an Ongoing transaction fenced."""
        pid, epoch, last, state = _txn(v)
        ok = z3.And(state == _st(T.Ongoing), z3.Not(v["txn.pending"]))
        return self.cases(v, w, (ok, self.fence(v, pid, epoch, state)))

    def failed_fence(self, v, p, w):
        """KAFKA-9666 (before 2.6): the fence's append fails, the bumped epoch stays in the
        cache (pendingState cleared), and the next timeout bumps it again."""
        return z3.And(v["append.on"], v["append.state"] == _st(T.PrepareAbort),
                      self.frame(v, w, txn__pending=z3.BoolVal(False), **_no_append(),
                                 txn__state=_st(T.Ongoing)))

    def expire_transactional_id(self, v, p, w):
        """The transactional.id expired: Dead written."""
        pid, epoch, last, state = _txn(v)
        ok = z3.And(pid != _pid(NO_PID), _in(state, COMPLETE), z3.Not(v["txn.pending"]))
        return self.cases(v, w, (ok, self.prepare(v, pid, epoch, last, _st(T.Dead), cache=_txn(v))))

    def elect_coordinator(self, v, p, w):
        """A new coordinator reloads from the log, the append in flight replicated or lost."""
        rep = z3.And(p["replicated"], v["append.on"])
        dead = v["append.state"] == _st(T.Dead)
        log = tuple(z3.If(rep, z3.If(dead, empty, v[f"append.{f}"]), v[f"log.{f}"])
                    for f, empty in zip(META, (_pid(NO_PID), _ep(NO_EPOCH), _ep(NO_EPOCH),
                                               _st(T.Empty))))
        base = {**_meta("log", *log), **_meta("txn", *log), "txn__pending": z3.BoolVal(False),
                **_no_append(), "markersPending": z3.BoolVal(False)}
        prep = _in(log[3], PREPARE)
        alts = [(z3.Not(prep), base)]
        alts += [(prep, upd) for upd in self.after_prepare_logged(v, log, base)]
        return self.cases(v, w, *alts)

    # --- producers and partition leaders (ProducerStateManager) -----------------------------------------

    def receive(self, i, v, p, w):
        """Instance i takes a pair the coordinator issued (InitProducerId / TV2 EndTxn response)."""
        return z3.And(self.issued(v, p["P"], p["E"]), self.frame(v, w, **{
            f"producer{i}__producerId": p["P"], f"producer{i}__producerEpoch": p["E"]}))

    def write_marker(self, k, v, p, w):
        """appendEndTxnMarker's epoch checks at leader k (ProducerAppendInfo.checkProducerEpoch:
        KIP-1228; KAFKA-19999's equal-epoch retry with no open transaction, and from KAFKA-20090
        #21469 at Short.MaxValue over an open one, is written like any marker)."""
        rp, re = p["P"], p["E"]
        lp, le, lo = _leader(v, k)
        same = z3.And(rp == lp, lp != _pid(NO_PID))
        if self.tv2 and self.features.strict_marker_epoch:                  # KIP-1228
            ok = re > le
            if self.features.idempotent_marker_retry:                       # KAFKA-19999
                closed = z3.Not(lo)
                if self.features.last_epoch_recovery:                       # KAFKA-20090
                    closed = z3.Or(closed, re == _ep(SHORT_MAX))
                ok = z3.Or(ok, z3.And(re == le, closed))
        else:
            ok = re >= le
        accept = z3.Or(z3.And(same, ok), rp > lp)
        return z3.And(self.issued(v, rp, re, marker=True),
                      self.cases(v, w, (accept, _set_leader(k, rp, re, False))))

    def produce(self, i, k, v, p, w):
        """checkProducerEpoch at leader k for a batch from instance i."""
        rp, re = p["P"], p["E"]
        lp, le, lo = _leader(v, k)
        accept = z3.Or(z3.And(rp == lp, lp != _pid(NO_PID), re >= le), rp > lp)
        return z3.And(self.sent(v, i, rp, re),
                      self.cases(v, w, (accept, _set_leader(k, rp, re, True))))

    def lose_producer_state(self, k, v, p, w):
        """Leader k loses its entry (of a producer id with no open transaction)."""
        lp, le, lo = _leader(v, k)
        np_, ne, no = (w[f"leader{k}.producerId"], w[f"leader{k}.producerEpoch"],
                       w[f"leader{k}.open"])
        # What is left is an older producer id's entry, one the coordinator issued, or none.
        left = z3.Or(z3.And(np_ == _pid(NO_PID), ne == _ep(NO_EPOCH), z3.Not(no)),
                     z3.And(np_ != _pid(NO_PID), self.issued(v, np_, ne)))
        return z3.And(lp != _pid(NO_PID), z3.Not(lo), np_ < lp, np_ >= _pid(NO_PID), left,
                      self.frame(v, w, **{f"leader{k}__producerId": np_,
                                          f"leader{k}__producerEpoch": ne,
                                          f"leader{k}__open": no}))

    def stutter(self, v, p, w):
        """Every step that leaves the projection alone."""
        return self.frame(v, w)

    # --- the actions, faults among them when their budget is not 0 --------------------------------------

    def actions(self, faults: dict) -> tuple[SymbolicAction, ...]:
        """The actions in the order the explorer numbers them."""
        I, P = self.I, self.P
        pe = (("P", "bv64"), ("E", "bv16"))
        out = [SymbolicAction("Stutter", (), self.stutter)]
        out += [SymbolicAction("InitProducerId", pe, partial(self.init_producer_id, i),
                               (("producer", i),)) for i in I]
        out += [SymbolicAction("EndTxn", pe + (("commit", "bool"),), partial(self.end_txn, i),
                               (("producer", i),)) for i in I]
        out += [SymbolicAction("AddPartitionsToTxn", pe, partial(self.add_partitions, i),
                               (("producer", i),)) for i in I]
        out += [SymbolicAction("CommitTxnLogAppend", (), self.commit_append),
                SymbolicAction("MarkerAck", (), self.marker_ack)]
        if faults.get("transaction_timeouts"):
            out.append(SymbolicAction("ExpireTransaction", (), self.expire_transaction))
            if self.variant == "fence_retry_bump":
                out.append(SymbolicAction("FailedFenceAppend", (), self.failed_fence))
        if faults.get("transactional_id_expirations"):
            out.append(SymbolicAction("ExpireTransactionalId", (), self.expire_transactional_id))
        if faults.get("coordinator_failovers"):
            out.append(SymbolicAction("ElectCoordinator", (("replicated", "bool"),),
                                      self.elect_coordinator))
        out += [SymbolicAction("ReceiveProducerId", pe, partial(self.receive, i),
                               (("producer", i),)) for i in I]
        out += [SymbolicAction("WriteTxnMarker", pe + (("commit", "bool"),),
                               partial(self.write_marker, k), (("partition", k),)) for k in P]
        out += [SymbolicAction("Produce", pe, partial(self.produce, i, k),
                               (("producer", i), ("partition", k))) for i in I for k in P]
        if faults.get("producer_state_losses"):
            out += [SymbolicAction("LoseProducerState", (), partial(self.lose_producer_state, k),
                                   (("partition", k),)) for k in P]
        return tuple(out)

    # --- the claims -------------------------------------------------------------------------------------

    def coordinator_unchanged(self, v, w):
        return z3.And(*[w[n] == v[n] for n in self.names if n.startswith(("txn.", "append."))])

    def zombie_fencing(self, action, v, p, w):
        """A request superseded by a newer instance's epoch changes nothing at the coordinator."""
        if action.name not in ("EndTxn", "AddPartitionsToTxn"):
            return z3.BoolVal(True)
        i = dict(action.args)["producer"]
        superseded = z3.Or(False, *[z3.And(v[f"producer{j}.producerId"] == p["P"],
                                           v[f"producer{j}.producerEpoch"] > p["E"])
                                    for j in self.I if j > i])
        return z3.Implies(superseded, self.coordinator_unchanged(v, w))

    def marker_fencing(self, action, v, p, w):
        """An older epoch's marker leaves a newer open transaction's leader alone."""
        if action.name != "WriteTxnMarker":
            return z3.BoolVal(True)
        lp, le, lo = _leader(v, dict(action.args)["partition"])
        ends_newer = z3.And(lp == p["P"], lo, le > p["E"])
        return z3.Implies(ends_newer,
                          z3.And(*[w[n] == v[n] for n in self.names if n.startswith("leader")]))

    def fence_bumps_epoch(self, action, v, p, w):
        """A fence's PrepareAbort carries an epoch above every instance's under its id."""
        if action.name not in ("ExpireTransaction", "InitProducerId"):
            return z3.BoolVal(True)
        fenced = z3.And(z3.Not(v["append.on"]), w["append.on"],
                        w["append.state"] == _st(T.PrepareAbort))
        return z3.Implies(fenced, z3.And(*[z3.Implies(
            v[f"producer{j}.producerId"] == w["append.producerId"],
            v[f"producer{j}.producerEpoch"] < w["append.producerEpoch"]) for j in self.I]))

    def epochs(self, v) -> list:
        out = [v["txn.producerEpoch"], v["log.producerEpoch"], v["append.producerEpoch"]]
        out += [v[f"producer{i}.producerEpoch"] for i in self.I]
        return out + [v[f"leader{k}.producerEpoch"] for k in self.P]

    def no_epoch_overflow(self, v):
        """No epoch below -1."""
        return z3.And(*[e >= _ep(NO_EPOCH) for e in self.epochs(v)])

    def properties(self) -> tuple[SymbolicClaim, ...]:
        return (
            SymbolicClaim("zombie_fencing", "step", self.zombie_fencing,
                          "an EndTxn or AddPartitionsToTxn carrying an epoch older than one a newer "
                          "instance holds under the same producer id changes nothing at the coordinator"),
            SymbolicClaim("marker_fencing", "step", self.marker_fencing,
                          "no transaction marker of an older epoch ends a newer open transaction"),
            SymbolicClaim("fence_bumps_epoch", "step", self.fence_bumps_epoch,
                          "the abort that fences an Ongoing transaction carries an epoch greater than "
                          "any instance holds under its producer id (KAFKA-6119)"),
            SymbolicClaim("no_epoch_overflow", "state", self.no_epoch_overflow,
                          "no producer epoch wraps past Short.MaxValue (rotation on exhaustion)"),
        )

    # --- the auxiliary invariants (each one's claim text is its docstring, shown in reports) ------------

    def ids_issued(self, v):
        ids = [v["txn.producerId"], v["log.producerId"]] + [
            v[f"producer{i}.producerId"] for i in self.I] + [
            v[f"leader{k}.producerId"] for k in self.P]
        return z3.And(v["nextProducerId"] >= _pid(0), z3.Implies(v["append.on"], z3.And(
            v["append.producerId"] >= _pid(0), v["append.producerId"] < v["nextProducerId"])),
            *[z3.And(x >= _pid(NO_PID), x < v["nextProducerId"]) for x in ids])

    def holders_behind_coordinator(self, v):
        return z3.And(*[z3.And(_behind(v, v[f"producer{i}.producerId"],
                                       v[f"producer{i}.producerEpoch"], "txn"),
                               _behind(v, v[f"producer{i}.producerId"],
                                       v[f"producer{i}.producerEpoch"], "log"))
                        for i in self.I])

    def log_behind_cache(self, v):
        return _behind(v, v["log.producerId"], v["log.producerEpoch"], "txn")

    def cache_behind_append(self, v):
        return z3.Implies(v["append.on"], z3.And(
            v["txn.pending"], v["txn.producerId"] != _pid(NO_PID),
            z3.Or(z3.And(v["append.producerId"] == v["txn.producerId"],
                         v["append.producerEpoch"] >= v["txn.producerEpoch"]),
                  v["append.producerId"] > v["txn.producerId"])))

    def ongoing_below_max(self, v):
        """With rotation, an Ongoing transaction's epoch is below Short.MaxValue (a client's,
        which InitProducerId never makes 32,767), so its fence does not wrap."""
        if not self.rotate:
            return z3.BoolVal(True)
        return z3.And(*[z3.Implies(v[f"{x}.state"] == _st(T.Ongoing),
                                   v[f"{x}.producerEpoch"] < _ep(SHORT_MAX))
                        for x in ("log", "append")],
                      z3.Implies(z3.And(v["txn.state"] == _st(T.Ongoing), z3.Not(v["txn.pending"])),
                                 v["txn.producerEpoch"] < _ep(SHORT_MAX)),
                      *[v[f"producer{i}.producerEpoch"] < _ep(SHORT_MAX) for i in self.I])

    def others(self, v) -> list:
        return ([v[f"producer{i}.producerId"] for i in self.I]
                + [v[f"leader{k}.producerId"] for k in self.P])

    def held(self, v) -> list:
        return ([(v[f"producer{i}.producerId"], v[f"producer{i}.producerEpoch"]) for i in self.I]
                + [(v[f"leader{k}.producerId"], v[f"leader{k}.producerEpoch"]) for k in self.P])

    def new_ids_fresh(self, v):
        """A producer id the coordinator just generated (a new transactional.id's in the cache,
        a rotation's in the append) is above every other id, and no epoch of it is out yet but
        epoch 0 of a TV2 EndTxn's next producer id (answered before its completion)."""
        return z3.And(
            z3.Implies(v["txn.producerId"] != v["log.producerId"], z3.And(
                v["txn.producerId"] == v["nextProducerId"] - 1, v["txn.state"] == _st(T.Empty),
                v["log.producerId"] == _pid(NO_PID), v["txn.producerEpoch"] == _ep(NO_EPOCH),
                *[x < v["txn.producerId"] for x in self.others(v)])),
            z3.Implies(z3.And(v["append.on"], v["append.producerId"] != v["txn.producerId"]), z3.And(
                v["append.producerId"] > v["txn.producerId"], v["append.producerEpoch"] == _ep(0),
                v["append.producerId"] == v["nextProducerId"] - 1,
                _in(v["append.state"], COMPLETE),
                v["append.producerId"] > v["log.producerId"],
                *[z3.Or(x < v["append.producerId"], z3.And(
                    x == v["append.producerId"], e == _ep(0), _in(v["append.state"], DONE)))
                  for x, e in self.held(v)])))

    def next_id_pending(self, v):
        """TV2: a Prepare*'s lastProducerEpoch is its epoch - 1 (a client's EndTxn) or -1 (a
        fence); while one that took a nextProducerId is not complete, that id is the last one
        generated, above its own, and held by nobody but at epoch 0 (the EndTxn response)."""
        if not (self.tv2 and self.rotate):
            return z3.BoolVal(True)
        nxt = v["nextProducerId"] - 1
        out = []
        for x, prep, (pid, epoch, last, state) in self.prepares(v):
            out.append(z3.Implies(prep, z3.Or(last == _ep(NO_EPOCH), last + 1 == epoch)))
            out.append(z3.Implies(z3.And(prep, self.next_id_taken(epoch, last)), z3.And(
                nxt > pid, *[z3.Implies(h == nxt, e == _ep(0)) for h, e in self.held(v)])))
        a_prep = self.prepares(v)[2][1]
        a_last, t_epoch = v["append.lastProducerEpoch"], v["txn.producerEpoch"]
        out.append(z3.Implies(a_prep, z3.If(a_last == _ep(NO_EPOCH),
                                            v["append.producerEpoch"] == t_epoch,
                                            a_last == t_epoch)))
        return z3.And(*out)

    @staticmethod
    def prepares(v) -> list:
        """(name, whether it is a Prepare*, its metadata) of the cache, the log and the append."""
        out = []
        for x in ("txn", "log", "append"):
            md = tuple(v[f"{x}.{f}"] for f in META)
            prep = _in(md[3], PREPARE)
            out.append((x, z3.And(v["append.on"], prep) if x == "append" else prep, md))
        return out

    def next_id_out(self, v):
        """A TV2 Prepare* not yet complete took nextProducerId - 1 (``next_id_taken``)."""
        if not (self.tv2 and self.rotate):
            return z3.BoolVal(False)
        return z3.Or(*[z3.And(prep, self.next_id_taken(md[1], md[2]))
                       for _, prep, md in self.prepares(v)])

    @staticmethod
    def cache_is_log(v):
        """The cache equals the log but while an append is in flight, when it may hold a
        fence's bumped epoch (prepareFenceProducerEpoch changes it in memory), or a new
        transactional.id's id."""
        same = v["txn.producerId"] == v["log.producerId"]
        eq = z3.And(*[v[f"txn.{f}"] == v[f"log.{f}"] for f in META])
        fenced = z3.And(v["txn.state"] == _st(T.Ongoing), v["log.state"] == _st(T.Ongoing),
                        v["txn.producerEpoch"] == v["log.producerEpoch"] + 1,
                        v["append.state"] == _st(T.PrepareAbort),
                        v["append.producerEpoch"] == v["txn.producerEpoch"])
        return z3.Implies(same, z3.Or(eq, z3.And(v["txn.pending"], fenced)))

    def no_metadata_is_empty(self, v):
        """A transactional.id without a producer id has no epoch, state or append (a new
        id's metadata, or the tombstone's)."""
        return z3.And(*[z3.Implies(v[f"{x}.producerId"] == _pid(NO_PID), z3.And(
            v[f"{x}.producerEpoch"] == _ep(NO_EPOCH), v[f"{x}.state"] == _st(T.Empty)))
            for x in ("txn", "log")], z3.Implies(z3.Not(v["append.on"]), z3.And(
                v["append.producerId"] == _pid(NO_PID), v["append.producerEpoch"] == _ep(NO_EPOCH),
                v["append.lastProducerEpoch"] == _ep(NO_EPOCH), v["append.state"] == _st(T.Empty))),
            *[z3.Implies(v[f"producer{i}.producerId"] == _pid(NO_PID),
                         v[f"producer{i}.producerEpoch"] == _ep(NO_EPOCH)) for i in self.I])

    @staticmethod
    def pending_with_append_or_markers(v):
        """A pending state is set while an append is in flight, and otherwise only through a
        Prepare*'s marker round (prepareComplete)."""
        return z3.And(z3.Implies(v["append.on"], v["txn.pending"]),
                      z3.Implies(z3.And(v["txn.pending"], z3.Not(v["append.on"])),
                                 _in(v["txn.state"], PREPARE)))

    @staticmethod
    def states_valid(v):
        return z3.And(*[z3.ULE(v[f"{x}.state"], _st(max(T))) for x in ("txn", "log", "append")])

    def epochs_valid(self, v):
        """Epochs of a producer id are >= 0 once it is held (a new id's metadata has -1)."""
        held = [(v[f"producer{i}.producerId"], v[f"producer{i}.producerEpoch"]) for i in self.I]
        return z3.And(*[z3.Implies(x != _pid(NO_PID), e >= _ep(0)) for x, e in held],
                      z3.Implies(v["log.producerId"] != _pid(NO_PID), v["log.producerEpoch"] >= _ep(0)),
                      z3.Implies(z3.And(v["append.on"], v["append.state"] != _st(T.Dead)),
                                 v["append.producerEpoch"] >= _ep(0)),
                      z3.Implies(z3.And(v["txn.producerId"] == v["log.producerId"],
                                        v["txn.producerId"] != _pid(NO_PID)),
                                 v["txn.producerEpoch"] >= _ep(0)),
                      *[z3.Implies(v[f"leader{k}.producerId"] != _pid(NO_PID),
                                   v[f"leader{k}.producerEpoch"] >= _ep(0)) for k in self.P])

    def auxiliary(self) -> tuple[SymbolicClaim, ...]:
        return tuple(SymbolicClaim(f.__name__, "state", f, (f.__doc__ or "").strip()) for f in (
            self.ids_issued, self.holders_behind_coordinator, self.log_behind_cache,
            self.cache_behind_append, self.pending_with_append_or_markers, self.states_valid,
            self.epochs_valid, self.no_metadata_is_empty, self.ongoing_below_max,
            self.new_ids_fresh, self.cache_is_log, self.next_id_pending))

    # --- initial and reachable states -------------------------------------------------------------------

    def init(self, v):
        """No metadata, no producer id handed out, no entry at any leader."""
        none = {f"{x}.{f}": val for x in ("txn", "append", "log")
                for f, val in zip(META, (_pid(NO_PID), _ep(NO_EPOCH), _ep(NO_EPOCH), _st(T.Empty)))}
        eqs = [v[n] == x for n, x in none.items()]
        eqs += [v["txn.pending"] == False, v["append.on"] == False,  # noqa: E712
                v["nextProducerId"] == _pid(0), v["markersPending"] == False]  # noqa: E712
        for i in self.I:
            eqs += [v[f"producer{i}.producerId"] == _pid(NO_PID),
                    v[f"producer{i}.producerEpoch"] == _ep(NO_EPOCH)]
        for k in self.P:
            eqs += [v[f"leader{k}.producerId"] == _pid(NO_PID),
                    v[f"leader{k}.producerEpoch"] == _ep(NO_EPOCH), v[f"leader{k}.open"] == False]  # noqa: E712
        return z3.And(*eqs)

    def reachable(self, v):
        """Where bounded checks start: any state meeting the auxiliary invariants (any epoch and
        producer id, e.g. one step from exhaustion)."""
        return z3.And(*[c.holds(v) for c in self.auxiliary()])


def build(features, instances: int, partitions: int, faults: dict, variant: str = "none"
          ) -> SymbolicSystem:
    """The symbolic system for the flags ``features`` (kafka_mc.model.kafka.versions.Features),
    ``instances`` producer instances, ``partitions`` leaders, and the fault kinds whose budget in
    ``faults`` (budget name -> int) is not 0."""
    enc = Encoding.of(features, instances, partitions, variant)
    return SymbolicSystem(variables=variables(instances, partitions), init=enc.init,
                          reachable=enc.reachable, actions=enc.actions(faults),
                          properties=enc.properties(), auxiliary=enc.auxiliary(), doc=__doc__)


# --- projection of the explicit model (for the refinement test) --------------------------------------------

def project(K, w) -> dict:
    """The explicit World's values of the symbolic variables (transactional.id 0)."""
    c = w.coordinator
    t, a, lg = c.txns[0], c.appends[0], c.log[0]
    out = {}
    for prefix, md in (("txn", t), ("log", lg), ("append", a.target if a else None)):
        vals = (md.producer_id, md.producer_epoch, md.last_producer_epoch, int(md.state)) if md \
            else (NO_PID, NO_EPOCH, NO_EPOCH, int(T.Empty))
        out.update({f"{prefix}.{f}": x for f, x in zip(META, vals)})
    out["txn.pending"] = t.pending_state != -1
    out["append.on"] = bool(a)
    out["nextProducerId"] = c.next_producer_id
    out["markersPending"] = bool(c.markers[0])
    for i, p in enumerate(x for x in w.producers if x.tid == 0):
        out[f"producer{i}.producerId"] = p.producer_id
        out[f"producer{i}.producerEpoch"] = p.producer_epoch
    for k in range(K.partitions):
        entries = w.partitions[k].producers
        e = max(entries, key=lambda e: e.producer_id) if entries else None
        out[f"leader{k}.producerId"] = e.producer_id if e else NO_PID
        out[f"leader{k}.producerEpoch"] = e.producer_epoch if e else NO_EPOCH
        out[f"leader{k}.open"] = bool(e and e.current_txn_first_offset >= 0)
    return out


def project_action(K, s, a, t):
    """The symbolic action an explicit step is (name, constant args, parameter values), or None
    for a step that must leave the projection unchanged."""
    name, m = a[0], (a[1] if len(a) > 1 else None)
    if name == "HandleInitProducerId":
        return "InitProducerId", {"producer": m.producer}, {"P": m.producer_id, "E": m.producer_epoch}
    if name == "ForceTerminateTransaction":   # the admin's InitProducerId carries no producer id
        return "InitProducerId", {"producer": 0}, {"P": NO_PID, "E": NO_EPOCH}
    if name == "HandleEndTxn":
        return "EndTxn", {"producer": m.producer}, {"P": m.producer_id, "E": m.producer_epoch,
                                                    "commit": bool(m.committed)}
    if name == "HandleAddPartitionsToTxn":
        return "AddPartitionsToTxn", {"producer": m.producer}, {"P": m.producer_id,
                                                                "E": m.producer_epoch}
    if name == "HandleVerifyAddPartition":
        return "AddPartitionsToTxn", {"producer": m.produce.producer}, {
            "P": m.producer_id, "E": m.producer_epoch}
    if name in ("HandleProduce", "HandleVerifyAddPartitionResponse"):
        r = m if name == "HandleProduce" else m.produce
        return "Produce", {"producer": r.producer, "partition": r.partition}, {
            "P": r.producer_id, "E": r.producer_epoch}
    if name == "HandleWriteTxnMarkers":
        return "WriteTxnMarker", {"partition": m.partition}, {
            "P": m.producer_id, "E": m.producer_epoch, "commit": bool(m.committed)}
    if name in ("ReceiveInitProducerIdResponse", "ReceiveEndTxnResponse"):
        p = t.producers[m.producer]
        return "ReceiveProducerId", {"producer": m.producer}, {"P": p.producer_id,
                                                               "E": p.producer_epoch}
    if name == "HandleWriteTxnMarkersResponse":
        return "MarkerAck", {}, {}
    # the explicit BounceCoordinator (conformance #15) differs from ElectCoordinator only in the
    # coordinator epoch and the messages on the wire, neither of which this model keeps
    if name in ("ElectCoordinator", "BounceCoordinator"):
        return "ElectCoordinator", {}, {"replicated": bool(a[1])}
    if name == "LoseProducerState":
        return "LoseProducerState", {"partition": a[1]}, {}
    if name in ("CommitTxnLogAppend", "ExpireTransaction", "ExpireTransactionalId"):
        return name, {}, {}
    return None


def for_model(K, variant: str = "none") -> SymbolicSystem:
    """The symbolic system of a Kafka configuration (one transactional.id)."""
    if K.tids != 1:
        raise ValueError("the symbolic model covers one transactional.id "
                         "(set cluster.transactional_ids = 1)")
    if K.ctp:
        raise ValueError("the symbolic model does not cover consume-transform-produce")
    system = build(K.features, K.producers_per_id, K.partitions, K.budgets._asdict(), variant)
    return replace(system, project=partial(project, K), project_action=partial(project_action, K))
