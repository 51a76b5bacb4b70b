import json

import pytest

from model import registry
from explorers.bfs import explore
from traces.itf import ItfError, decode, encode
from traces.replay import replay
from traces.trace import Trace, TraceError, read


def test_values_round_trip():
    value = (1, -1, 2**60, True, "s", frozenset({(1, "a"), (0, "b")}), {"k": frozenset()}, ())
    assert decode(encode(value)) == value
    assert encode(2**60) == {"#bigint": str(2**60)} and encode(7) == 7


def test_sets_and_maps_encode_canonically():
    a, b = frozenset(range(50)), frozenset(reversed(range(50)))
    assert json.dumps(encode(a)) == json.dumps(encode(b))
    assert encode({2: 1, 1: 2}) == encode({1: 2, 2: 1}) == {"#map": [[1, 2], [2, 1]]}


@pytest.mark.parametrize("data", [1.5, None, {"#bigint": 3}, {"#tup": 1}, {"#map": [[1]]},
                                  {"#set": [{"#map": []}]}, {"#unserializable": "x"}])
def test_invalid_itf_values_are_rejected(data):
    with pytest.raises(ItfError):
        decode(data)


@pytest.fixture
def broken_trace(tmp_path):
    cfg = registry.load(model="twophase-broken")
    model = registry.bind(cfg)
    v = explore(model).violations[0]
    meta = {"model": cfg.model, "config": cfg.to_dict(), "property": v.property, "kind": v.kind}
    trace = Trace.from_path(model, v.path, meta)
    file = tmp_path / "t.itf.json"
    trace.write(file, model)
    return trace, file, model


def test_trace_round_trip_is_exact_and_byte_stable(broken_trace, tmp_path):
    trace, file, model = broken_trace
    again = read(file)
    assert again.states == trace.states and again.actions == trace.actions
    assert again.to_json(model) == file.read_text()
    assert again.vars == ("rmState", "tmState", "tmPrepared", "msgs")  # the model's order


def test_replay_reproduces(broken_trace):
    _, file, _ = broken_trace
    r = replay(read(file))
    assert r.reproduced and r.steps == 5


def test_tampered_state_is_reported_precisely(broken_trace):
    _, file, _ = broken_trace
    doc = json.loads(file.read_text())
    doc["states"][3]["tmState"] = "aborted"
    file.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=r"step 3 \(TMCommit\): tmState differs"):
        replay(read(file))


def test_disabled_action_is_reported(broken_trace):
    _, file, _ = broken_trace
    doc = json.loads(file.read_text())
    doc["#meta"]["config"]["model"]["name"] = "twophase"  # the fixed model cannot commit early
    file.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match="step 3: TMCommit is not enabled"):
        replay(read(file))


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"), ("[]", "top level must be a JSON object"), ("{}", "#meta is missing"),
    ('{"#meta": {}, "vars": ["x"], "states": []}', "non-empty list"),
    ('{"#meta": {}, "vars": ["x"], "states": [{"y": 1}]}', "lacks variable x"),
    ('{"#meta": {}, "vars": ["x"], "states": [{"x": 1}, {"x": 2}]}', "does not record its action"),
])
def test_malformed_traces(tmp_path, text, message):
    f = tmp_path / "bad.json"
    f.write_text(text)
    with pytest.raises(TraceError, match=message):
        read(f)


def test_truncated_trace_is_rejected(broken_trace):
    _, file, _ = broken_trace
    file.write_text(file.read_text()[:300])
    with pytest.raises(TraceError, match="not JSON"):
        read(file)


def test_trace_without_model_metadata(tmp_path):
    f = tmp_path / "t.json"
    f.write_text('{"#meta": {}, "vars": ["state"], "states": [{"state": 0}]}')
    with pytest.raises(TraceError, match="lacks the model"):
        replay(read(f))
