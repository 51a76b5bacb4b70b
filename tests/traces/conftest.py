"""Traces of real runs for the trace tests: BFS counterexamples and seeded random walks, written
as files the way ``kafka-mc check`` writes them; and test-only models (grid) in the registry."""
import random

import pytest

from kafka_mc.explorers.bfs.search import BfsOptions, explore
from kafka_mc.model import registry
from kafka_mc.model.config import Param
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.protocol import Rule
from tests.grid import grid_spec
from kafka_mc.traces.replay import violation_check
from kafka_mc.traces.trace import Trace, trace_metadata


def bound(model_name, **settings):
    cfg = registry.load(model=model_name, overrides={f"model.{k}": v for k, v in settings.items()})
    return cfg, registry.bind(cfg)


def meta_for(cfg, prop, kind, explorer="bfs", seed=None):
    return trace_metadata(cfg, property=prop, kind=kind, claim="", explorer=explorer,
                          source="kafka-mc tests", seed=seed)


def bfs_trace(model_name, prop=None, **settings):
    """(model, trace) of the BFS counterexample (of ``prop`` only, if given)."""
    cfg, model = bound(model_name, **settings)
    v = explore(model, BfsOptions(properties=[prop] if prop else None)).violations[0]
    return model, Trace.from_path(model, v.path, meta_for(cfg, v.property, v.kind))


def random_walk(model, seed, min_length, prop="TCConsistent", kind="always"):
    """A seeded random walk of at least ``min_length`` steps that ends at its first violation
    of ``prop`` after that many steps (a walk that finds none within 30 more is drawn again)."""
    rng = random.Random(seed)
    test = violation_check(model, prop, kind)
    while True:
        s = model.init_states()[0]
        states, actions = [s], []
        while len(actions) < min_length + 30:
            a = rng.choice(list(model.actions(s)))
            t = model.step(s, a)
            states.append(t)
            actions.append(a)
            if len(actions) >= min_length and test(s, a, t):
                return states, actions
            s = t


@pytest.fixture
def write(tmp_path):
    """write(model, trace, name="t.itf.json") -> the file, as kafka-mc writes it."""
    def _write(model, trace, name="t.itf.json"):
        file = tmp_path / name
        trace.write(file, model)
        return file
    return _write


def _grid_params(cfg):
    return {"max": cfg["model.max"], "reset": cfg["model.reset"]}


def _boom_enabled(p, s):
    if s == (2, 0):
        raise ZeroDivisionError("division by zero in a rule")
    return []


def _no_reset(p, s, a, t):
    return a[0] != "Reset"


@pytest.fixture
def grid_models(monkeypatch):
    """Registers ``grid`` (deadlocks at (max, max) without reset), ``gridboom`` (raises in
    state (2, 0)) and ``gridmono`` (transition property NoReset: Reset never fires)."""
    spec = grid_spec().derive("grid", params=_grid_params)
    boom = Rule("Boom", (), _boom_enabled, lambda p, s: s)
    specs = {"grid": spec,
             "gridboom": spec.derive("gridboom", add=[boom]),
             "gridmono": spec.derive("gridmono", add_properties=[
                 Property("NoReset", Expectation.TRANSITION, _no_reset, "the grid never resets")])}
    params = (Param("model.max", int, 3), Param("model.reset", bool, True))
    for n, spec in specs.items():
        monkeypatch.setitem(registry.REGISTERED, n, registry.spec_entry(spec, params, name=n))
    return specs
