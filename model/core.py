"""The contract between models and explorers (docs/design.md section 2).

A model is a transition system over immutable values. Explorers see only this module:

* ``Model``: ``init_states``, ``actions`` / ``step`` (the reference semantics), optionally
  ``successors`` (a fused fast path explorers prefer; one with an ``actions`` attribute gives
  its enabled actions alone, in its order, for random walks), ``properties``, ``within_bounds`` (state
  constraint), ``view`` (the deduplication key) and ``action_kinds`` (every action name the model
  can take, so coverage can list the ones never enabled).
* ``Property``: a named claim with an ``Expectation``. Which states and steps each kind is
  checked on, and what a violation is, is one policy for every explorer (``kafka_mc.explorers.core.checking``).
* ``fingerprint``: the stable 64-bit key of a view (``kafka_mc.model.fingerprints``).
* ``Fairness`` / ``Fair``: the fairness a model declares for families of its actions
  (``ModelBase.fairness``, ``fair_family``), under which ``eventually`` properties are checked.
* ``Symmetry``: a set of interchangeable identifiers a model declares (``ModelBase.symmetries``,
  ``permute``; ``kafka_mc.model.symmetry``); ``kafka_mc.model.canonical.with_symmetry`` makes a bound model's
  ``view`` canonicalise under them (and gives it ``view_fingerprint`` / ``reduction_fingerprint``, the keys explorers then use).

* ``Capabilities``: the optional hooks of ``ModelBase`` grouped by what they serve (reduction,
  symmetry, fairness, swarm, diagrams, symbolic, observations); a model declares the ones it
  offers and explorers ask the declaration (``kafka_mc.model.capabilities``).

Actions are tuples ``(name, *args)`` such as ``("RMPrepare", 3)``: hashable, picklable, cheap to
build in the hot path and readable in traces. A model names each action's parameters in
``action_params`` so traces and reports can print ``RMPrepare(rm=3)``.

For people reading counterexamples, a model may also say what a step means as sequence-diagram
``Event``s between its ``lifelines`` (``describe``) and how a state reads per component
(``components``, for ``kafka-mc explore``); search explorers never call them.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import (Any, Callable, Hashable, Iterable, Mapping, NamedTuple, Protocol, Sequence, TypeVar,
                    runtime_checkable)

# The contract's helpers, each in its own module, named here too for models written against this
# module: fingerprints (``model.fingerprints``), actions and values as people read them
# (``model.display``), symmetry (``model.symmetry``; canonical views: ``model.canonical``) and the
# symbolic hook (``model.symbolic``).
from kafka_mc.model.capabilities import Capabilities  # noqa: F401
from kafka_mc.model.display import Action, action_name, format_action, show  # noqa: F401
from kafka_mc.model.fingerprints import (INT_MAX, INT_MIN, ViewError, check_view,  # noqa: F401
                                collision_probability, fingerprint)
from kafka_mc.model.symbolic import SYMBOLIC_SORTS, SymbolicAction, SymbolicClaim, SymbolicSystem  # noqa: F401
from kafka_mc.model.symmetry import (Symmetry, SymmetryError, group_elements, group_order,  # noqa: F401
                            least_fingerprint, symmetry_note)

S = TypeVar("S")


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
    # Partial-order reduction (``explorers.reductions.por``): the locations (``Footprint``) whose values the
    # verdict depends on; a transition property holds on every step writing none of them. None:
    # it reads everything (every action is visible to it, so a reduced search expands fully).
    reads: frozenset | None = None
    # Checked when no property is named (``--invariant``, ``[check] invariants``). False: a
    # claim checked only when named, as the availability claims are (their verdicts on older
    # presets would move every pinned default check).
    default: bool = True


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
    ``note`` (an internal event on ``source``, or spanning ``source`` and ``target``),
    ``fault`` (a crash, failover, timeout, delay or loss: a highlighted note) or ``receive``
    (``source`` takes a message, ``label`` saying which and from whom: what the step's one-line
    form starts with, ``leader-0  Produce(...) from p0 -> ...``; a diagram draws the message's
    arrow when it was sent, and a receipt only as a note when the step does nothing else).
    ``source`` and ``target`` are names from ``lifelines()``; ``label`` is in the protocol's
    vocabulary (``AddPartitionsToTxn(p0)``, ``PRODUCER_FENCED``, ``commits``).
    """

    kind: str
    source: str
    target: str = ""
    label: str = ""


EVENT_KINDS = ("request", "response", "note", "fault", "receive")


class Footprint(NamedTuple):
    """What one group of actions touches, for partial-order reduction (docs/design.md section 8).

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

    ``capabilities``: what the model offers beyond the core (``kafka_mc.model.capabilities``): the hook
    methods below are grouped into capabilities (reduction, symmetry, fairness, swarm, diagrams,
    symbolic, observations), and explorers call a capability's hooks only when the model
    declares it, in this value (their defaults below stand for "not offered").

    ``packed``: a model whose states are ints in ``[0, 2**61 - 1)`` and are their own view sets it,
    and explorers then use the state itself as its fingerprint (``hash`` of such an int is the int:
    no collisions, no hashing work). ``check_deadlock``: whether a state without enabled actions is
    an error by default (a configuration may override it).

    ``locality``: None, or ``view -> value``, the part of a state's view that places the state in
    a partition of a distributed search (``explorers/spark/search.py``): its fingerprint picks the owner.
    A step that leaves that part alone keeps its successor in its parent's partition, where it is
    deduplicated without being shipped. None: the whole fingerprint picks (spreads states evenly,
    but then with P partitions a fraction (P - 1) / P of all successors travel).
    """

    name = "model"
    capabilities = Capabilities()
    packed = False
    check_deadlock = True
    locality: Callable[[Any], Hashable] | None = None
    action_params: Mapping[str, tuple[str, ...]] = {}

    view = identity_view

    @classmethod   # (implicit in Python; said for the compiled build)
    def __init_subclass__(cls, **kw):
        """A subclass's ``capabilities`` adds to what its bases declare (a subclass of
        ``RuleModel`` declaring ``diagrams`` keeps ``fairness`` and ``swarm``)."""
        super().__init_subclass__(**kw)
        if "capabilities" in vars(cls):
            for base in cls.__mro__[1:]:
                cls.capabilities = cls.capabilities | getattr(base, "capabilities", Capabilities())

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

    # Fairness (capability ``fairness``; explorers/graph): liveness is checked under it.

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

    # Swarm simulation (capability ``swarm``; explorers/walks/swarm.py). A model that declares nothing gets swarm
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

    # Partial-order reduction (capability ``reduction``; explorers/reductions/por.py). A model that declares nothing is
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

    # Sequence diagrams (capability ``diagrams``): lifelines, left to right, and what a step does.
    # Producers, coordinators, partition leaders, the group coordinator and consumers are
    # lifelines of the Kafka model; by default the model is one lifeline and a step one note.

    def lifelines(self) -> tuple[str, ...]:
        return (self.name,)

    # Symmetry reduction (capability ``symmetry``; ``model.canonical.with_symmetry``). A model that declares nothing has none.

    symmetric = False   # set by ``with_symmetry``: ``view`` canonicalises under ``symmetries``
    # set by ``with_symmetry`` (``model.canonical.remembered``): state -> fingerprint of its
    # canonical view (reduction view), the keys explorers then use; None: fingerprint the view
    view_fingerprint: Callable[[Any], int] | None = None
    reduction_fingerprint: Callable[[Any], int] | None = None

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

    # Observations (optional, capability ``observations``; ``model.observations``): a model that
    # can be held against recorded runs of the real system defines ``observations(events) ->
    # Observations`` (no default: ``model.observations.observations_of`` refuses a model without),
    # and may refine the two hooks below.

    def coverage(self, s, a, t) -> tuple[str, ...]:
        """The coverage classes step ``s --a--> t`` takes (capability ``observations``, issue
        58): the classes of transitions whose being seen on the real system matters (``Action:
        branch``: the error a handler answers, the state change it makes). ``kafka-mc real
        coverage`` compares those the model reaches with those real runs were seen to take. By
        default the action's name alone."""
        return (a[0],)

    def observed_state(self, s) -> Mapping[str, Any]:
        """``s`` as the real system's own tools would show it, component by component (for
        Kafka: DescribeTransactions, each partition's log): what a verdict judged on the
        behaviours a real run conforms to shows at the step where a property fails (capability
        ``observations``). By default the components."""
        return self.components(s)

    def symbolic(self) -> "SymbolicSystem | None":
        """The model's symbolic transition system (``SymbolicSystem``), for the symbolic
        explorer (capability ``symbolic``); None: none in this configuration."""
        return None

    def describe(self, s, a: Action, t) -> tuple[Event, ...]:
        """The events of step ``s --a--> t``, in order (several for a step that both handles a
        request and answers it)."""
        return (Event("note", self.lifelines()[0], label=self.format_action(a)),)


class Record(dict):
    """A record for traces: field name -> value, written as an ITF record (a JSON object), where
    a plain dict is an ITF map. Models build them in ``itf_encode``; never part of a state."""
