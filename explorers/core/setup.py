"""What every search of a bound model sets up alike (``SearchSetup``): the checks
(``kafka_mc.explorers.core.checking``), the model's successor and key functions (``adapter``), the state
constraint (tested only when the model has its own), the properties a step can change
(``Relevance``), the state machines whose edges a run notes, the action coverage counters, and the
progress cadence. The engines bind what they use to locals before their hot loops."""
from __future__ import annotations

import time
from typing import Callable, Sequence

from kafka_mc.model.core import Model, ModelBase
from kafka_mc.explorers.core.adapter import key_function, successors_of
from kafka_mc.explorers.core.checking import Checks, Relevance
from kafka_mc.explorers.core.progress import Progress
from kafka_mc.explorers.core.result import machines_of


class SearchSetup:
    """One search's set-up. ``fired``: action name -> transitions generated; ``found``: -> distinct
    states first reached by one (by name: a name's hash is cached, an action's is not).
    ``edges``: per state machine of the model, ``(taken, note)``: ``note(taken(s, a, t))`` adds
    the edges step ``s --a--> t`` takes to ``edges_taken``."""

    def __init__(self, model: Model, properties: Sequence[str] | None,
                 check_deadlock: bool | None,
                 progress: Callable[[Progress], None] | None = None,
                 progress_interval: float = 2.0):
        self.model = model
        self.checks = Checks(model, properties, check_deadlock)
        self.successors, self.key = successors_of(model), key_function(model)
        self.packed = model.packed
        self.within = model.within_bounds
        self.bounded = getattr(self.within, "__func__", None) is not ModelBase.within_bounds
        self.machines = machines_of(model)
        self.edges_taken: list[set] = [set() for _ in self.machines]
        self.edges = tuple((m.taken, got.update)
                           for m, got in zip(self.machines, self.edges_taken))
        self.fired: dict = {}
        self.found: dict = {}
        self.relevant = None   # (action, pairs) -> the pairs whose verdict the step can change
        self.progress, self.progress_interval = progress, progress_interval
        self.t0 = self.last_report = time.perf_counter()

    def relevance(self) -> None:
        """Look up which properties each step can change (``Relevance``: None when the model
        declares no footprints); the engines call it where their set-up always did."""
        relevance = Relevance.of_model(self.model)
        self.relevant = relevance.of if relevance else None

    def start_clock(self) -> None:
        self.t0 = self.last_report = time.perf_counter()

    def report(self, generated: int, distinct: int, depth: int, queue: int) -> None:
        """A progress report, when one is asked for and its interval has passed."""
        now = time.perf_counter()
        if self.progress is not None and now - self.last_report >= self.progress_interval:
            self.last_report = now
            self.progress(Progress(generated, distinct, depth, queue, now - self.t0))
