import enum
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_mc.model.display import format_action
from kafka_mc.model.fingerprints import ViewError, check_view, collision_probability, fingerprint
from kafka_mc.model import registry

ROOT = Path(__file__).resolve().parents[2]


class Color(enum.IntEnum):
    RED = 1


class Plain(enum.Enum):
    A = "a"


@dataclass(frozen=True)
class Rec:
    a: int
    b: tuple


VIEW = (1, -1, True, Color.RED, frozenset({(2, 3), (4, 5)}), (0, (7, 8)), Rec(3, (4,)))


def test_stable_views_pass_the_check():
    check_view(VIEW)


@pytest.mark.parametrize("bad, where", [
    (("x",), "view[0]"), ((None,), "view[0]"), ((1, -2), "view[1]"), (2**61, "view"),
    (frozenset({Plain.A}), "view{"), (Rec(1, ("s",)), "view.b[0]"), ([1], "view"),
])
def test_unstable_views_are_named(bad, where):
    with pytest.raises(ViewError) as err:
        check_view(bad)
    assert str(err.value).startswith(where)


def test_fingerprint_is_the_same_in_other_processes_with_other_hash_seeds():
    code = ("from tests.model.test_core import VIEW; from kafka_mc.model.fingerprints import fingerprint; "
            "print(fingerprint(VIEW))")
    here = fingerprint(VIEW)
    for seed in ("0", "1", "12345"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)})
        assert int(out.stdout) == here
    assert -2**63 <= here < 2**63


def test_format_action_names_parameters():
    assert format_action(("RMPrepare", 3), ("rm",)) == "RMPrepare(rm=3)"
    assert format_action(("TMCommit",)) == "TMCommit"
    assert format_action(("X", 1, "a"), ("n",)) == "X(n=1, arg1='a')"


def test_collision_probability_grows_quadratically():
    assert collision_probability(0) == 0
    assert collision_probability(2**20) == pytest.approx(2**40 / 2**65)


def test_states_actions_configs_and_models_pickle():
    cfg = registry.load(model="twophase", overrides={"model.resource_managers": 3})
    m = registry.bind(cfg)
    s = m.init_states()[0]
    for value in (s, m.actions(s), cfg):
        assert pickle.loads(pickle.dumps(value)) == value
    again = pickle.loads(pickle.dumps(cfg))
    assert hash(again) == hash(cfg) and again["model.resource_managers"] == 3
