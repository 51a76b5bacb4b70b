"""TwoPhase: Gray and Lamport's two-phase commit, the engine benchmark shared with other checkers.

The same state graph as ``shared/bench/TwoPhase.tla`` (288 / 8,832 / 296,448 / 1,745,408
distinct states for N = 3 / 5 / 7 / 8 resource managers), with the spec's action names.

Encoding. A state is one int of 4N + 4 bits, which makes it its own collision-free fingerprint
(``packed``) and makes a step a couple of integer operations instead of rebuilding a tuple:

    bits 2i..2i+1   rmState[r(i+1)]: 0 working, 1 prepared, 2 committed, 3 aborted
    bits 2N..2N+1   tmState: 0 init, 1 committed, 2 aborted
    N bits at TMP   tmPrepared, bit i = r(i+1) has told the TM it is prepared
    N bits at MP    msgs contains [type |-> "Prepared", rm |-> r(i+1)]
    bit MC, bit MA  msgs contains [type |-> "Commit"] / [type |-> "Abort"]

Traces show the spec's variables instead (``_Codec``). Resource managers are numbered from 1 in
actions, as the model values r1..rN are. The rules below are the reference semantics; ``_fused``
enumerates the same successors in the same order in one pass (tests check they agree).

``twophase-broken`` is a deliberately broken variant: its TM commits as soon as one resource
manager is prepared. Its shortest counterexample to ``TCConsistent`` has 5 steps (RMPrepare,
TMRcvPrepared, TMCommit, RMRcvCommitMsg, RMChooseToAbort).

Symmetry (``--symmetry``): the resource managers are interchangeable (the spec's RM is a set of
model values, and every rule and property treats its members alike). ``_Symmetry.permute``
renames them in a packed state: RM r's state field and its tmPrepared and Prepared-message bits
move to r's new number; the TM's state and the Commit / Abort broadcasts stay.

Sequence diagrams (``TwoPhase.describe``) have lifelines TM, r1..rN; a message is drawn when it
takes effect at its receiver (messages are never consumed in the spec, and Commit and Abort are
broadcasts): Prepared as a request arrow r -> TM, Commit and Abort as response arrows TM -> r.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_mc.model.config import Param

from kafka_mc.model.capabilities import Capabilities
from kafka_mc.model.core import Event, Expectation, Property, Symmetry
from kafka_mc.model.protocol import ProtocolSpec, RuleModel, Rule
from kafka_mc.model.registry import spec_entry

WORKING, PREPARED, COMMITTED, ABORTED = 0, 1, 2, 3
TM_INIT, TM_COMMITTED, TM_ABORTED = 0, 1, 2
RM_NAMES = ("working", "prepared", "committed", "aborted")
TM_NAMES = ("init", "committed", "aborted")
MAX_RMS = 14  # 4N + 4 bits must stay below 2**61 for the int to be its own fingerprint


@dataclass(frozen=True)
class Layout:
    """Bit positions for N resource managers (the rules' parameters); RMs are numbered from 1."""

    n: int

    def __post_init__(self):
        n = self.n
        fields = dict(tm=2 * n, tmp=2 * n + 2, mp=3 * n + 2, mc=4 * n + 2, ma=4 * n + 3,
                      all_rms=(1 << n) - 1,
                      decided=sum(2 << 2 * i for i in range(n)),  # high bit: committed/aborted
                      low=sum(1 << 2 * i for i in range(n)))      # low bit: prepared/aborted
        for k, v in fields.items():
            object.__setattr__(self, k, v)

    @property
    def rms(self):
        return range(1, self.n + 1)

    def rm(self, s, r):
        return (s >> 2 * (r - 1)) & 3

    def set_rm(self, s, r, value):
        shift = 2 * (r - 1)
        return s & ~(3 << shift) | value << shift

    def tm_state(self, s):
        return (s >> self.tm) & 3

    def flag(self, s, base, r=1):
        return (s >> (base + r - 1)) & 1


def layout(cfg) -> Layout:
    return Layout(cfg["model.resource_managers"])


# --- rules (the spec's actions) ------------------------------------------------------------------

def _tm_rcv_prepared_enabled(L, s):
    if L.tm_state(s) == TM_INIT:
        yield from ((r,) for r in L.rms if L.flag(s, L.mp, r))


def _tm_rcv_prepared(L, s, r):
    return s | 1 << (L.tmp + r - 1)


def _tm_commit_enabled(L, s):
    if L.tm_state(s) == TM_INIT and (s >> L.tmp) & L.all_rms == L.all_rms:
        yield ()


def _tm_commit(L, s):
    return s | TM_COMMITTED << L.tm | 1 << L.mc


def _tm_abort_enabled(L, s):
    if L.tm_state(s) == TM_INIT:
        yield ()


def _tm_abort(L, s):
    return s | TM_ABORTED << L.tm | 1 << L.ma


def _rm_working(L, s):
    return ((r,) for r in L.rms if L.rm(s, r) == WORKING)


def _rm_prepare(L, s, r):
    return L.set_rm(s, r, PREPARED) | 1 << (L.mp + r - 1)


def _rm_choose_to_abort(L, s, r):
    return L.set_rm(s, r, ABORTED)


def _rm_rcv_commit_enabled(L, s):
    return ((r,) for r in L.rms) if L.flag(s, L.mc) else ()


def _rm_rcv_commit(L, s, r):
    return L.set_rm(s, r, COMMITTED)


def _rm_rcv_abort_enabled(L, s):
    return ((r,) for r in L.rms) if L.flag(s, L.ma) else ()


def _rm_rcv_abort(L, s, r):
    return L.set_rm(s, r, ABORTED)


RULES = (
    Rule("TMRcvPrepared", ("rm",), _tm_rcv_prepared_enabled, _tm_rcv_prepared,
         "the TM records a Prepared message"),
    Rule("TMCommit", (), _tm_commit_enabled, _tm_commit, "the TM commits once all RMs are prepared"),
    Rule("TMAbort", (), _tm_abort_enabled, _tm_abort, "the TM aborts spontaneously"),
    Rule("RMPrepare", ("rm",), _rm_working, _rm_prepare, "a working RM prepares"),
    Rule("RMChooseToAbort", ("rm",), _rm_working, _rm_choose_to_abort,
         "a working RM aborts spontaneously"),
    Rule("RMRcvCommitMsg", ("rm",), _rm_rcv_commit_enabled, _rm_rcv_commit,
         "an RM receives the Commit message"),
    Rule("RMRcvAbortMsg", ("rm",), _rm_rcv_abort_enabled, _rm_rcv_abort,
         "an RM receives the Abort message"),
)


# --- properties ------------------------------------------------------------------------------------

def some_committed(L, s):
    """Some rmState field is 2 (high bit set, low bit clear)."""
    return bool(s & L.decided & ~((s & L.low) << 1))


def some_aborted(L, s):
    """Some rmState field is 3 (both bits set)."""
    return bool(s & L.decided & (s & L.low) << 1)


def tc_consistent(L, s):
    decided = s & L.decided
    if not decided:
        return True
    low = (s & L.low) << 1
    return not (decided & ~low and decided & low)


PROPERTIES = (
    Property("TCConsistent", Expectation.ALWAYS, tc_consistent,
             "no resource manager has committed while another has aborted"),
    Property("SomeRMCommitted", Expectation.SOMETIMES, some_committed,
             "some resource manager commits"),
    Property("SomeRMAborted", Expectation.SOMETIMES, some_aborted, "some resource manager aborts"),
)


# --- the fused fast path ----------------------------------------------------------------------------

def _fused(L):
    """All successors of a state in one pass (the rules' successors, interleaved per RM)."""
    tm_mask, tmp, all_rms = 3 << L.tm, L.tmp, L.all_rms
    mc_bit, ma_bit = 1 << L.mc, 1 << L.ma
    commit, commit_bits = ("TMCommit",), TM_COMMITTED << L.tm | mc_bit
    abort, abort_bits = ("TMAbort",), TM_ABORTED << L.tm | ma_bit
    per_rm = []
    for r in L.rms:
        shift = 2 * (r - 1)
        per_rm.append((
            3 << shift, PREPARED << shift, ABORTED << shift, COMMITTED << shift,
            1 << (tmp + r - 1), 1 << (L.mp + r - 1),
            ("TMRcvPrepared", r), ("RMPrepare", r), ("RMChooseToAbort", r),
            ("RMRcvCommitMsg", r), ("RMRcvAbortMsg", r)))

    def successors(s):
        out = []
        append = out.append
        tm_init = not s & tm_mask
        if tm_init:
            if (s >> tmp) & all_rms == all_rms:
                append((commit, s | commit_bits))
            append((abort, s | abort_bits))
        decided_commit, decided_abort = s & mc_bit, s & ma_bit
        for (mask, prepared, aborted, committed, tm_prepared_bit, msg_prepared_bit,
             rcv_prepared, prepare, choose_abort, rcv_commit, rcv_abort) in per_rm:
            rm = s & mask
            if tm_init and s & msg_prepared_bit:
                append((rcv_prepared, s | tm_prepared_bit))
            if not rm:  # working
                append((prepare, s | prepared | msg_prepared_bit))
                append((choose_abort, s | aborted))
            if decided_commit:
                append((rcv_commit, s - rm + committed))
            if decided_abort:
                append((rcv_abort, s - rm + aborted))
        return out

    return successors


# --- traces: the spec's variables ----------------------------------------------------------------

class _Codec:
    @staticmethod
    def encode(L, s):
        msgs = {("Prepared", f"r{r}") for r in L.rms if L.flag(s, L.mp, r)}
        msgs |= {("Commit",)} if L.flag(s, L.mc) else set()
        msgs |= {("Abort",)} if L.flag(s, L.ma) else set()
        return {"rmState": {f"r{r}": RM_NAMES[L.rm(s, r)] for r in L.rms},
                "tmState": TM_NAMES[L.tm_state(s)],
                "tmPrepared": frozenset(f"r{r}" for r in L.rms if L.flag(s, L.tmp, r)),
                "msgs": frozenset(msgs)}

    @staticmethod
    def decode(L, v):
        s = TM_NAMES.index(v["tmState"]) << L.tm
        for name, value in v["rmState"].items():
            s = L.set_rm(s, _rm_number(L, name), RM_NAMES.index(value))
        for name in v["tmPrepared"]:
            s |= 1 << (L.tmp + _rm_number(L, name) - 1)
        for msg in v["msgs"]:
            if msg[0] == "Prepared":
                s |= 1 << (L.mp + _rm_number(L, msg[1]) - 1)
            else:
                s |= 1 << {"Commit": L.mc, "Abort": L.ma}[msg[0]]
        return s


def _rm_number(L, name):
    r = int(name[1:]) if name[:1] == "r" and name[1:].isdigit() else 0
    if not 1 <= r <= L.n:
        raise ValueError(f"no resource manager {name!r}")
    return r


# --- symmetry: the resource managers are interchangeable ------------------------------------------

class _Symmetry:
    @staticmethod
    def symmetries(L):
        return (Symmetry("resource manager", L.n, "RM is a set of model values: every rule and "
                         "property treats its members alike"),)

    @staticmethod
    def permute(L, s, g):
        perm = g[0]
        out = s & (3 << L.tm | 1 << L.mc | 1 << L.ma)
        tmp, mp = L.tmp, L.mp
        for x, y in enumerate(perm):
            out |= ((s >> 2 * x) & 3) << 2 * y
            out |= ((s >> (tmp + x)) & 1) << (tmp + y)
            out |= ((s >> (mp + x)) & 1) << (mp + y)
        return out

    @staticmethod
    def permute_action(L, a, g):
        return (a[0], g[0][a[1] - 1] + 1) if len(a) > 1 else a

    @staticmethod
    def canonical(L, s):
        """The orbit's representative without enumerating N! permutations: the RMs renamed so
        that their (state, tmPrepared, Prepared message) triples are in increasing order."""
        tmp, mp = L.tmp, L.mp
        triples = sorted(((s >> 2 * x) & 3, (s >> (tmp + x)) & 1, (s >> (mp + x)) & 1)
                         for x in range(L.n))
        out = s & (3 << L.tm | 1 << L.mc | 1 << L.ma)
        for y, (rm, prepared, message) in enumerate(triples):
            out |= rm << 2 * y | prepared << (tmp + y) | message << (mp + y)
        return out


def _init(L):
    return [0]  # all RMs working, TM init, no messages


SPEC = ProtocolSpec(
    name="twophase", init=_init, rules=RULES, properties=PROPERTIES, params=layout,
    fast_successors=_fused, packed=True, check_deadlock=True, itf_codec=_Codec, symmetry=_Symmetry,
    doc="two-phase commit with N resource managers (Gray and Lamport)")


def _broken_commit_enabled(L, s):
    if L.tm_state(s) == TM_INIT and (s >> L.tmp) & L.all_rms:
        yield ()


BROKEN_SPEC = SPEC.derive(
    "twophase-broken",
    replace=[Rule("TMCommit", (), _broken_commit_enabled, _tm_commit,
                  "BROKEN: the TM commits as soon as one RM is prepared")],
    doc="TwoPhase whose TM commits before all RMs are prepared (violates TCConsistent)")


class TwoPhase(RuleModel):
    """A TwoPhase spec bound to a configuration, with its sequence diagram and its observations
    of a recorded run (model/toys/twophase_observations.py)."""

    capabilities = Capabilities(diagrams=True, observations=True)

    def observations(self, events):
        from kafka_mc.model.toys import twophase_observations
        return twophase_observations.observations(self, events)

    def coverage(self, s, a, t):
        """The coverage class of a step (capability ``observations``, ``kafka-mc real
        coverage``): a resource manager's action with its state change (``RMRcvAbortMsg:
        prepared -> aborted`` is not ``working -> aborted``), the TM's with the TM's."""
        L = self.params
        if a[0].startswith("RM"):
            return (f"{a[0]}: {RM_NAMES[L.rm(s, a[1])]} -> {RM_NAMES[L.rm(t, a[1])]}",)
        return (f"{a[0]}: TM {TM_NAMES[L.tm_state(s)]} -> {TM_NAMES[L.tm_state(t)]}",)

    def lifelines(self):
        return ("TM", *(f"r{r}" for r in self.params.rms))

    def describe(self, s, a, t):
        name, rm = a[0], f"r{a[1]}" if len(a) > 1 else ""
        return {
            "TMRcvPrepared": (Event("request", rm, "TM", "Prepared"),),
            "TMCommit": (Event("note", "TM", label="commits (broadcasts Commit)"),),
            "TMAbort": (Event("note", "TM", label="aborts (broadcasts Abort)"),),
            "RMPrepare": (Event("note", rm, label="prepares (sends Prepared)"),),
            "RMChooseToAbort": (Event("note", rm, label="chooses to abort"),),
            "RMRcvCommitMsg": (Event("response", "TM", rm, "Commit"),),
            "RMRcvAbortMsg": (Event("response", "TM", rm, "Abort"),),
        }.get(name) or super().describe(s, a, t)


PARAMS = (Param("model.resource_managers", int, 3, "number of resource managers",
                min=1, max=MAX_RMS),)

# Registered in pyproject.toml (entry point group kafka_mc.models).
TWOPHASE = spec_entry(SPEC, PARAMS, model=TwoPhase)
TWOPHASE_BROKEN = spec_entry(BROKEN_SPEC, PARAMS, model=TwoPhase)
