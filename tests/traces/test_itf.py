import json

import itf_py
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafka_mc.model import registry
from kafka_mc.explorers.bfs.search import explore
from kafka_mc.traces.itf import ItfError, canonical, decode, encode
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import Trace, TraceError, read
from tests.traces.conftest import bfs_trace, bound, meta_for


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
    doc["#meta"]["model"] = "twophase"   # (the two must agree: issue 48)
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


# --- metadata, interoperability with itf-py, hardening ------------------------------------------


def test_metadata_names_model_config_property_explorer_and_seed(tmp_path):
    cfg, model = bound("twophase-broken", resource_managers=4)
    meta = meta_for(cfg, "TCConsistent", "always", explorer="simulate", seed=7)
    assert meta | {"config": None} == {
        "model": "twophase-broken", "config": None, "property": "TCConsistent", "kind": "always",
        "description": "", "explorer": "simulate", "source": "kafka-mc tests", "seed": 7}
    assert meta["config"]["model"] == {"name": "twophase-broken", "resource_managers": 4}
    assert "seed" not in meta_for(cfg, "TCConsistent", "always")


def test_itf_py_parses_our_files_and_sees_the_same_values(tmp_path):
    model, trace = bfs_trace("twophase-broken", resource_managers=4)
    file = tmp_path / "t.itf.json"
    trace.write(file, model)
    theirs = itf_py.trace_from_json(json.loads(file.read_text()))
    assert theirs.vars == list(trace.vars) and len(theirs.states) == len(trace.states)
    for ours, their in zip(trace.states, theirs.states):
        assert dict(their.values) == ours
    assert [s.meta["action"] for s in theirs.states[1:]] == list(map(model.format_action,
                                                                      trace.actions))
    assert theirs.meta["property"] == "TCConsistent"
    # and the other way round: what itf-py writes (every int as #bigint), we read back exactly
    f2 = tmp_path / "theirs.itf.json"
    f2.write_text(json.dumps(itf_py.trace_to_json(theirs)))
    again = read(f2)
    assert again.states == trace.states and again.actions == trace.actions


hashable_values = st.recursive(
    st.integers(-2**70, 2**70) | st.booleans() | st.text(max_size=5),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4), max_leaves=8)
itf_values = st.recursive(
    hashable_values,
    lambda inner: st.tuples(inner, inner) | st.dictionaries(hashable_values, inner, max_size=3),
    max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(itf_values)
def test_any_value_round_trips_and_itf_py_agrees(value):
    data = json.loads(json.dumps(encode(value)))
    assert decode(data) == value
    assert itf_py.value_from_json(data) == value
    assert decode(json.loads(json.dumps(itf_py.value_to_json(value)))) == value


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-5, 5) | st.text(max_size=2), max_size=8), st.randoms())
def test_encoding_ignores_construction_order(items, rnd):
    shuffled = list(items)
    rnd.shuffle(shuffled)
    a = {x: i % 2 for i, x in enumerate(dict.fromkeys(items))}
    b = dict(sorted(a.items(), key=lambda kv: rnd.random()))
    assert canonical(encode(frozenset(items))) == canonical(encode(frozenset(shuffled)))
    assert canonical(encode(a)) == canonical(encode(b))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["states"].reverse(), "index is 5"),
    (lambda d: d["states"][2]["#meta"].update(action="TMAbort"),
     "recorded action 'TMAbort' does not match its action_value TMRcvPrepared"),
    (lambda d: d["states"][1].update(tmState={"#bigint": "9" * 5000}), "at most 4300 digits"),
    (lambda d: d["states"][1]["#meta"].update(action_value={"#tup": []}),
     "action must be a tuple starting with its name"),
    (lambda d: d.update(vars=["rmState", "tmState", "msgs"]), "are not the model's"),
    (lambda d: d["#meta"].update(kind="eventually"), "is a always property, not eventually"),
    (lambda d: d.update(loop=99), "loop must be the index of a state"),
    (lambda d: d["#meta"].update(kind="transition"), "TCConsistent is a always property"),
    (lambda d: d["#meta"].update(property="Nope"), "no property 'Nope'"),
    (lambda d: d["#meta"]["config"]["model"].update(resource_managers=99), "out of range"),
    (lambda d: d["states"][0]["rmState"]["#map"][0].__setitem__(1, "weird"),
     "state 0: cannot rebuild the model state"),
    (lambda d: d["states"][0]["rmState"]["#map"][0].__setitem__(1, "prepared"),
     r'state 0 is not an initial state of the model: rmState.r1 differs: recorded "prepared", '
     r'model gives "working"'),
])
def test_tampered_traces_are_one_clear_error(broken_trace, edit, message):
    _, file, _ = broken_trace
    doc = json.loads(file.read_text())
    edit(doc)
    file.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=message):
        replay(read(file))


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"#meta": {}, "vars": [], "states": [{"x": ' + "1" * 5000 + "}]}", "not valid JSON"),
    (b"\xff\xfe{", "not UTF-8"),
])
def test_hostile_files(tmp_path, text, message):
    f = tmp_path / "bad.json"
    (f.write_bytes if isinstance(text, bytes) else f.write_text)(text)
    with pytest.raises(TraceError, match=message):
        read(f)
    with pytest.raises(TraceError, match="is a directory"):
        read(tmp_path)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_damage_is_a_trace_error_or_a_clean_replay(broken_trace, data):
    """Truncate the file, or replace one JSON value anywhere in it: reading and replaying either
    works or raises TraceError (one line), never anything else."""
    _, file, _ = broken_trace
    text = file.read_text()
    doc = json.loads(text)
    if data.draw(st.booleans()):
        damaged = text[:data.draw(st.integers(0, len(text) - 1))]
    else:
        paths = list(_json_paths(doc))
        path = data.draw(st.sampled_from(paths))
        junk = data.draw(st.none() | st.integers(-3, 300) | st.text(max_size=4) | st.booleans()
                         | st.lists(st.integers(0, 3), max_size=2)
                         | st.sampled_from([{"#set": []}, {"#tup": [1]}, {"#map": []}, {}]))
        target = doc
        for k in path[:-1]:
            target = target[k]
        target[path[-1]] = junk
        damaged = json.dumps(doc)
    bad = file.with_name("damaged.json")
    bad.write_text(damaged)
    try:
        r = replay(read(bad))
    except TraceError as e:
        assert "\n" not in str(e)
    else:
        assert r.steps <= 5


def _json_paths(doc, prefix=()):
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) \
        else ()
    for k, v in items:
        yield prefix + (k,)
        yield from _json_paths(v, prefix + (k,))
