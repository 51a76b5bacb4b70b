import pytest

from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.protocol import ProtocolSpec, Rule
from kafka_mc.model.toys.twophase import SPEC


def test_derive_replaces_in_place_adds_last_and_removes():
    extra = Rule("Extra", (), lambda p, s: [], lambda p, s: s)
    commit = SPEC.rule("TMCommit")
    v = SPEC.derive("v", replace=[Rule("TMCommit", (), commit.enabled, commit.apply, "x")],
                    add=[extra], remove=["TMAbort"])
    names = [r.name for r in v.rules]
    assert names == ["TMRcvPrepared", "TMCommit", "RMPrepare", "RMChooseToAbort",
                     "RMRcvCommitMsg", "RMRcvAbortMsg", "Extra"]
    assert v.rule("TMCommit").doc == "x"
    assert v.name == "v" and SPEC.name == "twophase"  # the original is untouched


def test_derive_drops_the_fast_path_only_when_rules_change():
    assert SPEC.fast_successors is not None
    assert SPEC.derive("a", remove=["TMAbort"]).fast_successors is None
    w = Property("W", Expectation.SOMETIMES, lambda p, s: True)
    assert SPEC.derive("b", add_properties=[w]).fast_successors is SPEC.fast_successors


def test_derive_rejects_unknown_and_duplicate_names():
    with pytest.raises(KeyError, match="Nope"):
        SPEC.derive("x", remove=["Nope"])
    with pytest.raises(KeyError, match="Nope"):
        SPEC.derive("x", remove_properties=["Nope"])
    with pytest.raises(ValueError, match="duplicate rule"):
        SPEC.derive("x", add=[SPEC.rule("TMAbort")])
    with pytest.raises(KeyError):
        SPEC.rule("Nope")


def test_bound_model_actions_step_and_successors_agree():
    m = SPEC.derive("slow", fast_successors=None).bind(_cfg(3))
    m_fast = SPEC.bind(_cfg(3))
    s = m.init_states()[0]
    for a in m.actions(s):
        s = m.step(s, a)
        assert sorted(m.successors(s)) == sorted((b, m.step(s, b)) for b in m.actions(s))
        assert sorted(m_fast.successors(s)) == sorted(m.successors(s))
    with pytest.raises(ValueError, match="no action"):
        m.step(s, ("Bogus",))


def test_properties_are_bound_to_the_models_parameters():
    m = SPEC.bind(_cfg(3))
    (p,) = [p for p in m.properties() if p.name == "TCConsistent"]
    assert p.holds(0) is True and p.expectation is Expectation.ALWAYS


def _cfg(n):
    from kafka_mc.model import registry
    return registry.load(model="twophase", overrides={"model.resource_managers": n})


def test_spec_without_params_hands_rules_the_config():
    seen = []
    spec = ProtocolSpec("c", init=lambda p: [p["k"]],
                        rules=(Rule("R", (), lambda p, s: seen.append(p) or [], lambda p, s: s),))
    m = spec.bind({"k": 4})
    assert m.init_states() == [4] and m.actions(4) == [] and seen == [{"k": 4}]
