"""The contract's capabilities (model/capabilities.py, docs/design.md section 2): a model declares
what it offers beyond the core; explorers ask the declaration, never the model's attributes; an
explorer that needs a capability the model lacks is one line and exit 2; a model defining hooks
of a capability it does not declare is refused when bound, naming the declaration to add."""
import pytest

from kafka_mc.model import registry
from kafka_mc.model.capabilities import (CAPABILITIES, Capabilities, MissingCapability, check_declared,
                                offers, require)
from kafka_mc.model.config import ConfigError
from kafka_mc.model.core import Event, ModelBase
from kafka_mc.model.observations import NoObservations, observations_of
from kafka_mc.model.toys import twophase
from tests.explorers.test_bad_input import kmc, one_line_error


def bound(name, **sets):
    return registry.bind(registry.load(model=name, overrides=sets))


def test_every_field_of_capabilities_is_a_capability_with_hooks_modelbase_defines():
    assert Capabilities.__dataclass_fields__.keys() == CAPABILITIES.keys()
    for c in CAPABILITIES.values():
        assert c.hooks and c.serves
        assert all(hasattr(ModelBase, h) for h in c.hooks if h != "observations")


def test_the_models_declare_what_they_offer():
    assert bound("kafka").capabilities.offered() == (
        "reduction", "symmetry", "fairness", "swarm", "diagrams", "symbolic", "observations")
    assert bound("twophase").capabilities.offered() == (
        "symmetry", "fairness", "swarm", "diagrams", "observations")
    assert ModelBase().capabilities == Capabilities()
    assert Capabilities(fairness=True) | Capabilities(symbolic=True) == \
        Capabilities(fairness=True, symbolic=True)


def test_an_explorer_needing_a_capability_the_model_lacks_is_one_line_and_exit_2(tmp_path):
    err = one_line_error(*kmc("check", "--model", "twophase", "--explorer", "symbolic",
                              "--out", tmp_path),
                         expect="model 'twophase' does not offer the symbolic capability")
    assert "which --explorer symbolic needs" in err
    one_line_error(*kmc("check", "--model", "twophase", "--por", "--out", tmp_path),
                   expect="does not offer the reduction capability (footprints, group, "
                          "reduction_view, location, footprints_anywhere), which --por / "
                          "[check] por needs")
    assert not list(tmp_path.iterdir())   # refused before any search


def test_without_a_capability_an_explorer_with_a_fallback_uses_it():
    """No fairness: liveness owes nothing; no swarm: nothing left out; no reduction: the
    reduced search is the full one (the default --por of a configuration without a depth)."""
    class Bare(ModelBase):
        name = "bare"

        def init_states(self):
            return [0]

        def actions(self, s):
            return [("Inc",)] if s < 3 else []

        def step(self, s, a):
            return s + 1

        def properties(self):
            return ()

    from kafka_mc.explorers.bfs.search import BfsOptions, explore
    m = Bare()
    assert not any(offers(m, c) for c in CAPABILITIES)
    full, reduced = explore(m, BfsOptions(check_deadlock=False)), \
        explore(m, BfsOptions(check_deadlock=False, por=True))
    assert full.stats.distinct == reduced.stats.distinct == 4
    with pytest.raises(MissingCapability, match="does not offer the fairness capability"):
        require(m, "fairness", "a test")
    with pytest.raises(NoObservations, match="model 'bare' declares no observations"):
        observations_of(m, [])


class Undeclared(twophase.TwoPhase):
    """A model written to the contract before capabilities: it defines a hook (of symbolic)
    without declaring it."""

    def symbolic(self):
        return None


def test_a_model_defining_hooks_it_does_not_declare_is_refused_when_bound(monkeypatch):
    entry = registry.spec_entry(twophase.SPEC, twophase.PARAMS, name="undeclared",
                                model=Undeclared)
    monkeypatch.setitem(registry.REGISTERED, "undeclared", entry)
    with pytest.raises(ConfigError, match="model 'twophase' defines symbolic but does not declare "
                                          "the symbolic capability: add symbolic=True"):
        bound("undeclared")
    code, out, err = kmc("check", "--model", "undeclared")
    one_line_error(code, out, err, expect="add symbolic=True to its capabilities")

    class Declared(Undeclared):
        capabilities = Capabilities(symbolic=True)
    check_declared(Declared(twophase.SPEC, registry.load(model="twophase")), ModelBase)


def test_a_hook_set_on_an_instance_counts_as_defined():
    m = ModelBase()
    m.describe = lambda s, a, t: (Event("note", "x"),)
    with pytest.raises(MissingCapability, match="defines describe but does not declare the "
                                                "diagrams capability"):
        check_declared(m, ModelBase)
