"""The contract between models and explorers (DESIGN.md section 2).

A model is a transition system over immutable values. Explorers see only this module:

* ``Model``: ``init_states``, ``actions`` / ``step`` (the reference semantics), optionally
  ``successors`` (a fused fast path explorers prefer; one with an ``actions`` attribute gives
  its enabled actions alone, in its order, for random walks), ``properties``, ``within_bounds`` (state
  constraint), ``view`` (the deduplication key) and ``action_kinds`` (every action name the model
  can take, so coverage can list the ones never enabled).
* ``Property``: a named claim with an ``Expectation``. Which states and steps each kind is
  checked on, and what a violation is, is one policy for every explorer (``explorers.checking``).
* ``fingerprint``: the stable 64-bit key of a view.
* ``Fairness`` / ``Fair``: the fairness a model declares for families of its actions
  (``ModelBase.fairness``, ``fair_family``), under which ``eventually`` properties are checked.
* ``Symmetry``: a set of interchangeable identifiers a model declares (``ModelBase.symmetries``,
  ``permute``); ``with_symmetry`` makes a bound model's ``view`` canonicalise under them (and
  gives it ``view_fingerprint`` / ``reduction_fingerprint``, the keys explorers then use).

Actions are tuples ``(name, *args)`` such as ``("RMPrepare", 3)``: hashable, picklable, cheap to
build in the hot path and readable in traces. A model names each action's parameters in
``action_params`` so traces and reports can print ``RMPrepare(rm=3)``.

For people reading counterexamples, a model may also say what a step means as sequence-diagram
``Event``s between its ``lifelines`` (``describe``) and how a state reads per component
(``components``, for ``kafka-mc explore``); search explorers never call them.
"""
from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass
from typing import (Any, Callable, Hashable, Iterable, Mapping, NamedTuple, Protocol, Sequence, TypeVar,
                    runtime_checkable)

S = TypeVar("S")
Action = tuple  # (name, *args)


class Expectation(str, enum.Enum):
    """What a property claims, in Stateright's and TLC's vocabulary."""

    ALWAYS = "always"            # holds(state) in every reachable state (an invariant)
    TRANSITION = "transition"    # holds(before, action, after) for every reachable transition
    SOMETIMES = "sometimes"      # holds(state) in at least one reachable state (a witness)
    EVENTUALLY = "eventually"    # liveness: on every fair behaviour, a state where holds(state)
                                 # (from the start; with ``when``: after every state where
                                 # when(state), TLA+'s when ~> holds)
    TERMINAL = "terminal"        # holds(state) in every reachable state with no enabled action
                                 # (of the model being checked; one left unexpanded by the state
                                 # constraint or the depth bound is not terminal)


@dataclass(frozen=True)
class Property:
    """A named claim. ``holds`` takes ``(state)``, or ``(before, action, after)`` for TRANSITION.
    ``applies`` (witnesses): whether the claim can arise in the configuration at all."""

    name: str
    expectation: Expectation
    holds: Callable[..., bool]
    claim: str = ""  # one sentence, shown when the property is violated
    # A witness (SOMETIMES) that cannot arise in some configurations says so: ``applies()`` is
    # False there (a spec's property takes the model's parameters, ``applies(p)``), and the check
    # reports it as not applicable instead of never witnessed. None: it always applies.
    applies: Callable[..., bool] | None = None
    # EVENTUALLY only: a leads-to claim ``when ~> holds``. Every fair behaviour that reaches a
    # state where ``when`` holds reaches a state where ``holds`` does, then or later. None: from
    # the initial state (``<>holds``).
    when: Callable[..., bool] | None = None
    # Partial-order reduction (``explorers.por``): the locations (``Footprint``) whose values the
    # verdict depends on; a transition property holds on every step writing none of them. None:
    # it reads everything (every action is visible to it, so a reduced search expands fully).
    reads: frozenset | None = None


class Fairness(str, enum.Enum):
    """What a behaviour owes a family of actions (TLA+'s WF and SF)."""

    WEAK = "weak"      # enabled continuously from some point on: taken eventually
    STRONG = "strong"  # enabled again and again: taken again and again


@dataclass(frozen=True)
class Fair:
    """A fairness condition on a family of actions, declared next to the rules it covers.

    ``why``: the mechanism of the system modelled that guarantees it (a retry loop, a request
    timeout, a scheduled resend). ``family``: the family's name (default: the rule's name;
    rules that share one share the condition, e.g. the application's commit or abort).
    ``only``: which of the rule's actions belong, given their arguments (default: all)."""

    kind: Fairness
    why: str
    family: str = ""
    only: Callable[..., bool] | None = None


def WF(why: str, family: str = "", only: Callable[..., bool] | None = None) -> Fair:
    """Weak fairness (TLA+'s WF)."""
    return Fair(Fairness.WEAK, why, family, only)


def SF(why: str, family: str = "", only: Callable[..., bool] | None = None) -> Fair:
    """Strong fairness (TLA+'s SF)."""
    return Fair(Fairness.STRONG, why, family, only)


@dataclass(frozen=True)
class Event:
    """One thing a step does, as drawn in a sequence diagram (``kafka-mc render``, ``explain``).

    ``kind``: ``request`` (an arrow ``source -> target``), ``response`` (a dashed arrow back),
    ``note`` (an internal event on ``source``, or spanning ``source`` and ``target``) or
    ``fault`` (a crash, failover, timeout, delay or loss: a highlighted note). ``source`` and
    ``target`` are names from ``lifelines()``; ``label`` is in the protocol's vocabulary
    (``AddPartitionsToTxn(p0)``, ``PRODUCER_FENCED``, ``commits``).
    """

    kind: str
    source: str
    target: str = ""
    label: str = ""


EVENT_KINDS = ("request", "response", "note", "fault")


class Footprint(NamedTuple):
    """What one group of actions touches, for partial-order reduction (DESIGN.md section 8).

    A *location* is any hashable name of a part of the state (a component, a connection).
    ``reads``: every location whose value decides whether the group's actions are enabled, which
    ones, or what they do; ``writes``: every location its steps may change. Both over-approximate
    every state the group's footprint is declared for (a model may declare a footprint that holds
    only while the group's enabling conditions stay as in the state it is declared in, as a
    receiver of a non-empty FIFO connection reads only its head). Two groups are dependent when one writes
    what the other reads or writes; explorers derive everything else from that."""

    reads: frozenset
    writes: frozenset
    # the part of ``reads`` that decides whether (and with which arguments) the group's actions
    # are enabled: they stay as they are until a step writes one of these. None: all of ``reads``
    guard: frozenset | None = None


def dependent(f: Footprint, g: Footprint) -> bool:
    """Whether two groups may fail to commute or may enable or disable each other."""
    return not (f.writes.isdisjoint(g.reads) and f.writes.isdisjoint(g.writes)
                and g.writes.isdisjoint(f.reads))


class Machine(NamedTuple):
    """A state machine inside the model whose edge coverage explorers report (for the Kafka model,
    the coordinator's ``TransactionState`` and the client's ``TransactionManager.State`` against
    Kafka's tables): ``edges``, every (source, target) its table allows, and ``taken(s, a, t)``,
    the edges step ``s --a--> t`` takes. A run reports which of ``edges`` it took and which not."""

    name: str
    edges: tuple[tuple[str, str], ...]
    taken: Callable[[Any, Any, Any], Iterable[tuple[str, str]]]


@runtime_checkable
class Model(Protocol[S]):
    """What every explorer relies on. ``ModelBase`` supplies the optional parts."""

    name: str

    def init_states(self) -> Iterable[S]: ...
    def actions(self, s: S) -> Iterable[Action]: ...
    def step(self, s: S, a: Action) -> S: ...
    def properties(self) -> Sequence[Property]: ...
    def within_bounds(self, s: S) -> bool: ...
    def view(self, s: S) -> Hashable: ...


def identity_view(self, s):
    """The state is its own view (no symmetry, no counters to drop)."""
    return s


identity_view.is_identity = True


class ModelBase:
    """Defaults for the optional parts of the contract.

    ``packed``: a model whose states are ints in ``[0, 2**61 - 1)`` and are their own view sets it,
    and explorers then use the state itself as its fingerprint (``hash`` of such an int is the int:
    no collisions, no hashing work). ``check_deadlock``: whether a state without enabled actions is
    an error by default (a configuration may override it).

    ``locality``: None, or ``view -> value``, the part of a state's view that places the state in
    a partition of a distributed search (``explorers/spark.py``): its fingerprint picks the owner.
    A step that leaves that part alone keeps its successor in its parent's partition, where it is
    deduplicated without being shipped. None: the whole fingerprint picks (spreads states evenly,
    but then with P partitions a fraction (P - 1) / P of all successors travel).
    """

    name = "model"
    packed = False
    check_deadlock = True
    locality: Callable[[Any], Hashable] | None = None
    action_params: Mapping[str, tuple[str, ...]] = {}

    view = identity_view

    def within_bounds(self, s) -> bool:
        return True

    def successors(self, s) -> list[tuple[Action, Any]]:
        """Every enabled action with its successor, in ``actions`` order."""
        step = self.step
        return [(a, step(s, a)) for a in self.actions(s)]

    def action_kinds(self) -> tuple[str, ...]:
        return tuple(self.action_params)

    def format_action(self, a: Action) -> str:
        return format_action(a, self.action_params.get(a[0], ()))

    def fairness(self) -> Mapping[str, Fair]:
        """The fairness conditions, by family name: liveness is checked on the behaviours that
        meet them all. None by default: any behaviour may stop acting at any time."""
        return {}

    def fair_family(self, a: Action) -> str | None:
        """The family (a key of ``fairness``) action ``a`` belongs to, or None."""
        return None

    def machines(self) -> tuple[Machine, ...]:
        """The state machines whose edge coverage a run reports (none by default)."""
        return ()

    def settings(self) -> Mapping[str, Any]:
        """What the configuration means to the model beyond its keys (a preset's resolved flags),
        as JSON values: recorded in a trace, so that replaying it under a model whose same
        configuration means something else is refused, naming the difference."""
        return {}

    def setting_defaults(self) -> Mapping[str, Any]:
        """The value each setting had before it existed (the old behaviour a flag's default
        stands for): a trace that records settings but not this one meant that value."""
        return {}

    # Swarm simulation (optional; explorers/swarm.py). A model that declares nothing gets swarm
    # walks that only reweight its actions: no family is ever left out.

    def swarm_families(self) -> tuple[str, ...]:
        """The families of actions a swarm walk may leave out entirely (each walk omits each
        with probability 1/2), in a fixed order: actions no behaviour needs, such as faults."""
        return ()

    def swarm_family(self, a: Action) -> str | None:
        """The swarm family (one of ``swarm_families``) action ``a`` belongs to; None: every
        walk may take it."""
        return None

    def held_back(self, a: Action) -> bool:
        """Whether ``a`` delivers a message the network held back or duplicated (a swarm walk
        may deliver such messages late, after many other steps)."""
        return False

    # Partial-order reduction (optional; explorers/por.py). A model that declares nothing is
    # reduced to nothing: every action is dependent on every other.

    def footprints(self, s) -> Mapping[Hashable, Footprint] | None:
        """The groups of actions that can still occur in ``s`` or any state reachable from it,
        each with its ``Footprint`` valid in all those states (the same object for the same
        groups, so explorers can cache what they derive from it). None: no reduction."""
        return None

    def group(self, a: Action) -> Hashable:
        """The group (a key of ``footprints``) action ``a`` belongs to."""
        return a[0]

    def footprints_anywhere(self) -> Mapping[Hashable, Footprint] | None:
        """Every group that can occur in a reachable state, each with a footprint whose
        ``writes`` hold what the group writes in any of them (None: not said). A reduced search
        whose checked properties read something every group writes skips the stubborn sets:
        every action is visible, so every state would be expanded fully anyway."""
        return None

    def reduction_view(self, s) -> Hashable:
        """The view a reduced search deduplicates on: states with equal reduction views must be
        indistinguishable to every rule and property (a bisimulation), so that steps commuting
        up to it commute. By default the view itself."""
        return self.view(s)

    def location(self, s, loc: Hashable) -> Any:
        """The value of location ``loc`` in ``s`` (the independence self-check compares it to
        confirm ``writes``); None when the model does not say."""
        return None

    def itf_encode(self, s) -> Mapping[str, Any]:
        """The state as named trace variables (ITF ``vars``); one variable by default."""
        return {"state": s}

    def itf_decode(self, vars: Mapping[str, Any]):
        """Inverse of ``itf_encode``: rebuild the exact state value."""
        return vars["state"]

    def itf_encode_action(self, a: Action) -> tuple:
        """The action as trace values (actions whose arguments are records override this)."""
        return a

    def itf_decode_action(self, value: tuple) -> Action:
        """Inverse of ``itf_encode_action``."""
        return value

    def components(self, s) -> Mapping[str, Any]:
        """The state as people read it, one entry per component (``kafka-mc explore`` shows each
        as a panel, values in trace form: records, maps, tuples, sets). By default each trace
        variable is a component; a model may split or annotate (the Kafka model: one panel per
        producer, partition leader and consumer, each leader with its last stable offset)."""
        return dict(self.itf_encode(s))

    # The sequence-diagram hook (optional): lifelines, left to right, and what a step does.
    # Producers, coordinators, partition leaders, the group coordinator and consumers are
    # lifelines of the Kafka model; by default the model is one lifeline and a step one note.

    def lifelines(self) -> tuple[str, ...]:
        return (self.name,)

    # Symmetry reduction (optional; ``with_symmetry``). A model that declares nothing has none.

    symmetric = False   # set by ``with_symmetry``: ``view`` canonicalises under ``symmetries``

    def symmetries(self) -> tuple["Symmetry", ...]:
        """The sets of interchangeable identifiers in this configuration (none by default)."""
        return ()

    def permute(self, s, g: tuple[tuple[int, ...], ...]):
        """``s`` with its identifiers renamed by ``g`` (one permutation per declared
        ``Symmetry``: ``g[i][x]`` is the new name of identifier ``x`` of ``symmetries()[i]``)."""
        raise NotImplementedError(f"{self.name} declares no symmetry")

    def permute_action(self, a: Action, g: tuple[tuple[int, ...], ...]) -> Action:
        """Action ``a`` with its identifiers renamed by ``g`` (for the self-check)."""
        raise NotImplementedError(f"{self.name} declares no symmetry")

    # Optional: ``canonical(s)``, a state of ``s``'s orbit that is the same for every state of the
    # orbit, computed faster than by trying every permutation (TwoPhase sorts its RMs). None:
    # ``with_symmetry`` tries them all.
    canonical: Callable[[Any], Any] | None = None

    def symbolic(self) -> "SymbolicSystem | None":
        """The model's symbolic transition system (``SymbolicSystem``), for the symbolic
        explorer; None: the model offers none."""
        return None

    def describe(self, s, a: Action, t) -> tuple[Event, ...]:
        """The events of step ``s --a--> t``, in order (several for a step that both handles a
        request and answers it)."""
        return (Event("note", self.lifelines()[0], label=self.format_action(a)),)


# --- symmetry (DESIGN.md section 8) -----------------------------------------------------------------
#
# A model declares sets of interchangeable identifiers (transactional.ids with identical workloads,
# resource managers) and how to rename them in a state (``permute``). Each permutation ``g`` of the
# group they generate must be an automorphism of the transition system: ``permute(step(s, a), g)
# == permute(step(permute(s, g), permute_action(a, g)), identity)``, the actions enabled in
# ``permute(s, g)`` are the renamed actions enabled in ``s``, and every property has the same
# verdict in ``s`` and ``permute(s, g)`` (tests sample reachable states to confirm it). A model may
# return states in a normal form that every rule and property treats alike (a bisimulation: the
# Kafka model orders its network by connection when partitions are renamed), even for the
# identity. Then every state is equivalent to its images, and a search that deduplicates on the
# canonical view visits one state per orbit; the states it keeps are concrete states, and a
# counterexample is rebuilt from concrete successors whose canonical view is the next one on the
# path, so traces stay concrete and replayable. Liveness is not checked under symmetry (TLC's
# caveat: a lasso in the quotient need not be one in the model).
#
# With partial-order reduction too, a model's own ``reduction_view`` is canonicalised the same way
# (the images of ``reduction_view(permute(s, g))``), so the reduced search deduplicates on orbits
# of reduction views. This is sound for safety (Emerson, Jha and Peled, "Combining partial order
# and symmetry reductions", TACAS 1997): the stubborn set is computed on the concrete state the
# search keeps, so it is persistent there; every property reads the same in every member of an
# orbit; and the BFS proviso is checked on the canonical keys, so every cycle of the reduced
# quotient has a fully expanded state. (A path of the full graph from a kept state is carried,
# by the permutation, to one of the same length from the state kept for its orbit.)


@dataclass(frozen=True)
class Symmetry:
    """A set of ``size`` interchangeable identifiers (numbered 0 .. size - 1 in ``permute``),
    named as the system calls them, with ``why`` they are interchangeable."""

    name: str
    size: int
    why: str


def group_elements(symmetries: Sequence[Symmetry]) -> list[tuple[tuple[int, ...], ...]]:
    """Every permutation of the group the symmetries generate (their direct product), the
    identity first."""
    return list(itertools.product(*(itertools.permutations(range(x.size)) for x in symmetries)))


def group_order(symmetries: Sequence[Symmetry]) -> int:
    n = 1
    for x in symmetries:
        for i in range(2, x.size + 1):
            n *= i
    return n


class SymmetryError(ValueError):
    """Symmetry asked of a model that declares none."""


def with_symmetry(model):
    """``model`` with its ``view`` canonicalised under its declared symmetries: of the images of a
    state under every permutation of the group, the view whose fingerprint is smallest. (Not the
    lexicographically smallest: Kafka states hold frozensets, which have no total order, and the
    fingerprint is computed anyway; two images with equal fingerprints collide in the visited set
    whichever is chosen.) A packed model's states are ints: the canonical view is an int, its own
    fingerprint, but no longer the state itself, so the model is no longer ``packed``. With a
    group of order 1 (one transactional.id, one partition) the view is left as it is. A model's
    own ``reduction_view`` (partial-order reduction) is canonicalised likewise."""
    symmetries = tuple(model.symmetries())
    if not symmetries:
        raise SymmetryError(f"model {model.name} declares no symmetry: --symmetry / [check] "
                            "symmetry does not apply to it")
    model.symmetric = True
    elements = group_elements(symmetries)
    if len(elements) == 1:
        return model
    view, permute, canonical = model.view, model.permute, model.canonical
    if "reduction_view" in vars(model) or \
            type(model).reduction_view is not ModelBase.reduction_view:
        own = model.reduction_view
        # (a model's canonical form is taken of the view, not of the state: states with equal
        # views then have equal canonical views, so the remembered key is theirs whichever of
        # them was met first, and every search -- with workers or not -- counts the same states)
        model.reduction_view = (_least_image(own, permute, elements) if canonical is None
                                else lambda s: own(canonical(own(s))))
        model.reduction_fingerprint = remembered(
            own, model.reduction_view,
            None if canonical is None else lambda v: own(canonical(v)))   # (v: own(s))
    model.view = (_least_image(view, permute, elements) if canonical is None
                  else lambda s: view(canonical(s)))
    model.view_fingerprint = remembered(view, model.view)
    model.packed = False
    return model


# A canonical view costs a renaming and a sort (Kafka: about 20 us); the fingerprint of the view
# before it, a hash (2-4 us). Most successors a search generates are the same concrete state
# reached again in another order (two thirds on the issue-20 configurations, where almost every
# concrete state met for the first time is a new orbit too), so the canonical fingerprint is
# remembered by the concrete one, for the last REMEMBERED to 2 x REMEMBERED concrete states (a
# search meets a state again soon: the orders of a diamond are expanded from states one level
# apart). Two concrete views with one fingerprint are then taken for one orbit: a collision of the
# kind the visited set already accepts.
REMEMBERED = 1 << 20


def remembered(concrete: Callable, canonical_view: Callable,
               of_concrete: Callable | None = None) -> Callable:
    """s -> ``fingerprint(canonical_view(s))``, looked up by ``fingerprint(concrete(s))`` when
    it was computed lately (explorers prefer a model's ``view_fingerprint`` and
    ``reduction_fingerprint`` to fingerprinting its views, ``explorers.paths.key_function``).
    ``of_concrete``: v -> ``canonical_view(s)`` for ``v = concrete(s)``, when it can be taken
    of the concrete view (which is then not computed twice)."""
    new: dict = {}
    old: dict = {}

    def key(s):
        nonlocal new, old
        v = concrete(s)
        c = fingerprint(v)
        h = new.get(c)
        if h is None:
            h = old.get(c)
            if h is None:
                h = fingerprint(canonical_view(s) if of_concrete is None else of_concrete(v))
            if len(new) >= REMEMBERED:
                old, new = new, {}
            new[c] = h
        return h
    return key


def _least_image(view: Callable, permute: Callable, elements: Sequence) -> Callable:
    """s -> of ``view(permute(s, g))`` for every ``g`` in ``elements``, the one whose fingerprint
    is smallest."""
    return lambda s: least_fingerprint(view(permute(s, g)) for g in elements)


def least_fingerprint(images: Iterable) -> Any:
    """Of ``images`` (at least one), the one whose fingerprint is smallest (the first of equal
    ones): how a state's orbit picks its representative."""
    it = iter(images)
    best = next(it)
    least = fingerprint(best)
    for v in it:
        h = fingerprint(v)
        if h < least:
            best, least = v, h
    return best


def symmetry_note(model) -> dict | None:
    """What a report says about a search under symmetry (None: it was off)."""
    if not getattr(model, "symmetric", False):
        return None
    symmetries = tuple(model.symmetries())
    return {"groups": [{"name": x.name, "size": x.size} for x in symmetries],
            "order": group_order(symmetries)}


# --- the symbolic hook (DESIGN.md section 8) ----------------------------------------------------------
#
# A model may describe (part of) itself as a symbolic transition system over z3 terms. The contract
# names sorts as strings so that it needs no z3: "bool", or "bvN" (an N-bit bit-vector). Formulas
# are built by the model's functions from the term dicts an explorer passes them.

SYMBOLIC_SORTS = ("bool", "bv8", "bv16", "bv32", "bv64")


@dataclass(frozen=True)
class SymbolicAction:
    """A named action: ``relation(v, p, w)`` -> z3 Bool, with ``v`` and ``w`` the state terms
    before and after (name -> term) and ``p`` the action's parameter terms (name -> term)."""

    name: str
    params: tuple[tuple[str, str], ...]
    relation: Callable[..., Any]
    args: tuple[tuple[str, int], ...] = ()   # constant arguments (a producer instance), in ``p``

    @property
    def label(self) -> str:
        return format_action((self.name, *(v for _, v in self.args)), [n for n, _ in self.args])


@dataclass(frozen=True)
class SymbolicClaim:
    """A named claim: ``kind`` "state" (``holds(v)``) or "step" (``holds(action, v, p, w)``,
    with ``action`` the action's name)."""

    name: str
    kind: str
    holds: Callable[..., Any]
    claim: str = ""


@dataclass(frozen=True)
class SymbolicSystem:
    """A model's symbolic transition system.

    ``variables``: (name, sort) of the state; ``init(v)``: the initial states; ``reachable(v)``:
    a claim about every reachable state (bounded checks may start anywhere in it, e.g. near
    epoch exhaustion; proofs must prove it); ``actions``: the transition relation, the
    disjunction of the actions; ``properties``: the claims to check; ``auxiliary``: invariants
    a proof may need, proved together with the properties; ``doc``: what is modelled and what is
    abstracted. ``project(state)`` (optional) maps an explicit state to the symbolic variables'
    values, and ``project_action(s, a, t)`` an explicit step to (action name, parameter values),
    or None (the step should leave the projection unchanged): tests tie the symbolic relation to
    the explicit one with them."""

    variables: tuple[tuple[str, str], ...]
    init: Callable[..., Any]
    reachable: Callable[..., Any]
    actions: tuple[SymbolicAction, ...]
    properties: tuple[SymbolicClaim, ...]
    auxiliary: tuple[SymbolicClaim, ...] = ()
    doc: str = ""
    project: Callable[[Any], Mapping[str, Any]] | None = None
    project_action: Callable[[Any, Action, Any], tuple | None] | None = None


class Record(dict):
    """A record for traces: field name -> value, written as an ITF record (a JSON object), where
    a plain dict is an ITF map. Models build them in ``itf_encode``; never part of a state."""


def action_name(a: Action) -> str:
    return a[0]


def format_action(a: Action, params: Sequence[str] = ()) -> str:
    """``("RMPrepare", 3)`` with params ``("rm",)`` -> ``RMPrepare(rm=3)``."""
    args = a[1:]
    if not args:
        return a[0]
    names = list(params) + [f"arg{i}" for i in range(len(params), len(args))]
    return f"{a[0]}({', '.join(f'{n}={show(v)}' for n, v in zip(names, args))})"


def show(v) -> str:
    """A value as people read it in actions: enums by name, records as Type(field=value) without
    a field that only repeats the type (a message's ``rpc``) or one the type names in
    ``_only_if_set`` left at its default (``codec.to_itf`` leaves it out too), sets in braces."""
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        quiet = getattr(type(v), "_only_if_set", ())
        shown = [f"{f}={show(getattr(v, f))}" for f in v._fields
                 if not (isinstance(getattr(v, f), enum.Enum)
                         and getattr(v, f).name == type(v).__name__)
                 and not (f in quiet and getattr(v, f) == v._field_defaults[f])]
        return f"{type(v).__name__}({', '.join(shown)})"
    if isinstance(v, frozenset):
        return "{" + ", ".join(sorted(map(show, v))) + "}"
    if isinstance(v, tuple):
        return "(" + ", ".join(map(show, v)) + (",)" if len(v) == 1 else ")")
    return repr(v)


# --- fingerprints -------------------------------------------------------------------------------
#
# A fingerprint is CPython's hash of the view, which is stable across processes and machines for
# the value types below: the tuple hash (xxHash-based, the same since CPython 3.8 on 64-bit
# builds), the int hash (x mod 2**61 - 1) and the order-independent frozenset hash involve no
# per-process seed. str, bytes and None are excluded: str/bytes hashes are salted per process
# (PYTHONHASHSEED) and None's hash is its address before CPython 3.12. IntEnum members hash as
# their int and are allowed (use them for named states). Ints must lie in [-1, 2**61 - 1):
# hash(-1) == hash(-2), and larger ints wrap. A fingerprint computed this way costs one C call,
# which is what makes the visited set cheap; a cryptographic digest of an encoding costs ~1 µs
# per state, more than the rest of the search. Like TLC's, fingerprints can collide (probability
# about n²/2⁶⁵ for n states); the explorers report that estimate.

fingerprint = hash
INT_MIN, INT_MAX = -1, 2**61 - 2


class ViewError(TypeError):
    """A view contains a value whose hash is not stable across processes."""


def check_view(view: Any, path: str = "view") -> None:
    """Raise ``ViewError`` naming the first part of ``view`` that would fingerprint unstably."""
    if isinstance(view, bool):
        return
    if isinstance(view, int):
        if not INT_MIN <= view <= INT_MAX:
            raise ViewError(f"{path} = {view}: ints in views must lie in [-1, 2**61 - 2]")
        if isinstance(view, enum.Enum) and not isinstance(view, enum.IntEnum):
            raise ViewError(f"{path} = {view!r}: only IntEnum members hash stably")
        return
    if isinstance(view, float):
        return
    if isinstance(view, tuple):  # includes NamedTuples
        for i, item in enumerate(view):
            check_view(item, f"{path}[{i}]")
        return
    if isinstance(view, frozenset):
        for item in sorted(view, key=repr):
            check_view(item, f"{path}{{{item!r}}}")
        return
    if _is_plain_dataclass(view):
        for name in view.__dataclass_fields__:
            check_view(getattr(view, name), f"{path}.{name}")
        return
    raise ViewError(
        f"{path}: {type(view).__name__} does not fingerprint stably across processes "
        "(use ints, IntEnum, tuples, frozensets or frozen dataclasses of those)")


def _is_plain_dataclass(v: Any) -> bool:
    fields = getattr(type(v), "__dataclass_fields__", None)
    params = getattr(type(v), "__dataclass_params__", None)
    return fields is not None and params is not None and params.frozen and params.eq


def collision_probability(distinct: int) -> float:
    """TLC's optimistic estimate of a fingerprint collision having happened."""
    return distinct * distinct / 2.0**65
