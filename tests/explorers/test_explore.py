"""``kafka-mc explore``'s API through Starlette's test client: every endpoint, the Kafka model's
KAFKA-6119 counterexample opened and walked, a toy model through the generic rendering, and bad
input (forged, stale and unknown paths, traces of another configuration, that do not replay or
are too large) answered with a 4xx and one line, never a server error. The CLI in subprocesses."""
import json
import os
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from kafka_mc.model import registry
from kafka_mc.model.config import resolve_config_path
from kafka_mc.model.core import Expectation, ModelBase, Property
from kafka_mc.explorers.web.app import create_app
from kafka_mc.explorers.web.session import Explorer, hex_fp
from kafka_mc.explorers.core.adapter import key_function
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
KAFKA_6119 = GOLDEN / "kafka-0.11-tiny.no_hanging_transactions.itf.json"
TWOPHASE = GOLDEN / "twophase-broken-3.TCConsistent.itf.json"
# The golden trace's 19 steps as choices among the enabled actions (the initial state first).
PATH_6119 = [0, 0, 1, 0, 0, 1, 1, 0, 0, 2, 3, 3, 2, 2, 4, 2, 3, 3, 2, 2]


@pytest.fixture(scope="module")
def kafka():
    return TestClient(create_app(Explorer(registry.load(None))))


def dotted(path):
    return ".".join(map(str, path))


def test_the_page_and_its_assets_are_served_without_any_network_reference(kafka):
    page = kafka.get("/")
    assert page.status_code == 200 and "kafka-mc explore" in page.text
    for asset in ("/static/app.js", "/static/style.css"):
        r = kafka.get(asset)
        assert r.status_code == 200 and len(r.text) > 1000
    for text in (page.text, kafka.get("/static/app.js").text, kafka.get("/static/style.css").text):
        assert not re.search(r"https?://|//cdn|@import", text)


def test_the_initial_state_of_the_default_config(kafka):
    r = kafka.get("/api/state")
    assert r.status_code == 200
    d = r.json()
    assert d["session"] == "main" and d["path"] == [0] and d["crumbs"] == []
    assert [a["label"] for a in d["actions"]] == [
        "InitTransactions(producer=0)", "ElectCoordinator(replicated=False)",
        "BounceCoordinator(replicated=False)", "CrashProducer(producer=0)"]
    assert d["actions"][0]["params"] == [{"name": "producer", "value": "0"}]
    assert [c["name"] for c in d["components"]] == [
        "p0", "p1", "coordinator", "leader-0", "consumer-0", "network", "budgets"]
    leader = dict(d["components"][3]["tree"]["c"])
    assert leader["last_stable_offset"] == {"t": "int", "v": "0", "ch": 0}
    verdicts = {p["name"]: p["verdict"] for p in d["properties"]}
    assert verdicts["no_hanging_transactions"] == "holds"
    assert verdicts["zombie_fencing"] == "no step yet"
    assert verdicts["a_commit_happens"] == "not witnessed here"
    assert verdicts["an_offset_commit_is_committed"] == "not applicable"
    assert verdicts["quiescent_completion"] == "not terminal"
    assert verdicts["eventual_completion"] == "liveness (state graph)"
    assert d["violated"] is None and d["diagram"] == "" and d["changes"] == []
    model = registry.bind(registry.load(None))
    assert d["fingerprint"] == hex_fp(key_function(model)(next(iter(model.init_states()))))


def test_a_step_marks_what_it_changed_and_a_link_reproduces_it(kafka):
    d = kafka.get("/api/state", params={"path": "0.0"}).json()
    assert [c["action"] for c in d["crumbs"]] == ["InitTransactions(producer=0)"]
    assert "p0.state: \"UNINITIALIZED\" -> \"INITIALIZING\"" in d["changes"]
    p0 = d["components"][0]["tree"]
    assert p0["ch"] == 1 and dict(p0["c"])["state"] == {"t": "str", "v": "INITIALIZING", "ch": 2}
    assert dict(p0["c"])["tid"]["ch"] == 0
    assert {p["name"]: p["verdict"] for p in d["properties"]}["zombie_fencing"] == "holds"
    assert "<svg" in d["diagram"] and "InitProducerId" in d["diagram"]
    again = kafka.get("/api/state", params={"path": "0.0", "fp": d["fingerprint"]})
    assert again.status_code == 200 and again.json()["fingerprint"] == d["fingerprint"]
    assert kafka.get("/api/sessions").json() == {
        "sessions": [{"key": "main", "label": "kafka (<built-in>, protocol latest)",
                      "model": "kafka"}]}


def test_the_kafka_6119_counterexample_opens_in_its_configuration_and_fails_at_step_19(kafka):
    data = KAFKA_6119.read_bytes()
    refused = kafka.post("/api/trace", content=data)
    assert refused.status_code == 409
    assert refused.json()["error"].startswith("this trace is of kafka (a trace, protocol "
                                              "kafka-0.11), not of the configuration explored")
    r = kafka.post("/api/trace", params={"adopt": "1", "name": KAFKA_6119.name}, content=data)
    assert r.status_code == 200
    t = r.json()
    assert t["path"] == PATH_6119 and t["violation_step"] == 19 and t["loop"] is None
    assert t["property"] == "no_hanging_transactions" and len(t["steps"]) == 19
    assert t["steps"][-1] == "CommitTxnLogAppend(transactional_id=0)"
    assert "✗ no_hanging_transactions violated" in t["svg"] and "sequenceDiagram" in t["mermaid"]
    again = kafka.post("/api/trace", params={"adopt": "1"}, content=data).json()
    assert again["session"] == t["session"] != "main"
    at = kafka.get("/api/state", params={"s": t["session"], "path": dotted(PATH_6119)}).json()
    verdicts = {p["name"]: p["verdict"] for p in at["properties"]}
    assert at["violated"] == "no_hanging_transactions"
    assert [n for n, v in verdicts.items() if v == "violated"] == ["no_hanging_transactions"]
    before = kafka.get("/api/state", params={"s": t["session"], "path": dotted(PATH_6119[:-1])})
    assert {p["name"]: p["verdict"] for p in before.json()["properties"]}[
        "no_hanging_transactions"] == "holds"
    assert "kafka-0.11" in at["label"] and len(kafka.get("/api/sessions").json()["sessions"]) == 2
    leader = dict(next(c for c in at["components"] if c["name"] == "leader-0")["tree"]["c"])
    # the ABORT marker at offset 0, then the zombie's batch opens a transaction at offset 1
    assert (leader["last_stable_offset"]["v"], leader["log_end_offset"]["v"]) == ("1", "2")
    assert [dict(b[1]["c"])["control"]["v"] for b in leader["log"]["c"]] == ["ABORT", "DATA"]


def test_the_downloaded_path_replays(kafka, tmp_path):
    t = kafka.post("/api/trace", params={"adopt": "1"}, content=KAFKA_6119.read_bytes()).json()
    r = kafka.get("/api/download", params={"s": t["session"], "path": dotted(PATH_6119)})
    assert r.status_code == 200
    assert r.headers["content-disposition"] == \
        'attachment; filename="kafka-no_hanging_transactions-19.itf.json"'
    file = tmp_path / "walked.itf.json"
    file.write_text(r.text)
    assert read(file).actions == read(KAFKA_6119).actions
    assert replay(read(file)).reproduced
    run = subprocess.run([sys.executable, "-m", "kafka_mc.explorers.cli", "replay", str(file)],
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 12, run.stderr
    clean = kafka.get("/api/download", params={"path": "0.0.1"})
    file.write_text(clean.text)
    result = replay(read(file))
    assert result.steps == 2 and not result.reproduced   # a path that violates nothing: exit 0


def test_the_trace_given_on_the_command_line_is_served(kafka):
    assert kafka.get("/api/trace").status_code == 404
    cfg = registry.load(resolve_config_path("tiny"), overrides=[("protocol.version", "kafka-0.11")])
    client = TestClient(create_app(Explorer(cfg, trace=KAFKA_6119.read_bytes())))
    t = client.get("/api/trace").json()
    assert t["session"] == "main" and t["path"] == PATH_6119 and t["violation_step"] == 19


# --- a toy model through the generic rendering, with every kind of verdict ----------------------

class Counter(ModelBase):
    """n counts up by one (``Inc``); ``Jump`` adds two (breaks the transition property), ``Boom``
    raises in the model, and at 3 nothing is enabled."""

    name = "counter"
    action_params = {"Inc": (), "Jump": ("by",), "Boom": ()}

    def init_states(self):
        return [0]

    def actions(self, s):
        return [] if s >= 3 else [("Inc",), ("Jump", 2), ("Boom",)]

    def step(self, s, a):
        if a[0] == "Boom":
            raise ZeroDivisionError("boom")
        return s + (1 if a[0] == "Inc" else a[1])

    def properties(self):
        return (Property("small", Expectation.ALWAYS, lambda s: s <= 2, "n stays at most 2"),
                Property("by_one", Expectation.TRANSITION, lambda s, a, t: t == s + 1),
                Property("two_seen", Expectation.SOMETIMES, lambda s: s == 2),
                Property("ends_at_three", Expectation.TERMINAL, lambda s: s == 3),
                Property("odd", Expectation.ALWAYS, lambda s: 1 // (s - 1) or True))


@pytest.fixture(scope="module")
def counter():
    return TestClient(create_app(Explorer(registry.load(None, model="twophase"), Counter())))


def verdicts(client, path):
    r = client.get("/api/state", params={"path": path})
    assert r.status_code == 200, r.text
    return {p["name"]: p["verdict"] for p in r.json()["properties"]}


def test_a_toy_model_gets_generic_panels_and_every_kind_of_verdict(counter):
    d = counter.get("/api/state", params={"path": "0.1"}).json()
    assert d["components"] == [{"name": "state", "tree": {"t": "int", "v": "2", "ch": 2}}]
    assert d["changes"] == ["state: 0 -> 2"]
    assert d["actions"][1] == {"index": 1, "name": "Jump", "label": "Jump(by=2)",
                               "params": [{"name": "by", "value": "2"}]}
    assert verdicts(counter, "0") == {"small": "holds", "by_one": "no step yet",
                                      "two_seen": "not witnessed here", "ends_at_three":
                                      "not terminal", "odd": "holds"}
    assert verdicts(counter, "0.1") == {"small": "holds", "by_one": "violated",
                                        "two_seen": "witnessed", "ends_at_three": "not terminal",
                                        "odd": "holds"}
    assert verdicts(counter, "0.0")["odd"] == "error: ZeroDivisionError: integer division or " \
                                               "modulo by zero"
    assert verdicts(counter, "0.0.0.0")["ends_at_three"] == "holds"
    assert verdicts(counter, "0.1.0") == {"small": "violated", "by_one": "holds",
                                          "two_seen": "not witnessed here",
                                          "ends_at_three": "holds", "odd": "holds"}


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("params, status, message", [
    ({"path": "0.x"}, 400, "is not a list of choices such as 0.3.1"),
    ({"path": "0.-1"}, 400, "is not a list of choices"),
    ({"path": "0.²"}, 400, "is not a list of choices"),
    ({"path": "0." + ".".join(["0"] * 10_001)}, 400, "at most 10000 steps"),
    ({"path": "0.7"}, 400, "path step 1: there is no action 7 there (4 enabled): the link is "
                           "stale or forged"),
    # always the first action: a terminal state comes, where action 0 is not there
    ({"path": "0." + ".".join(["0"] * 60)}, 400, "(0 enabled): the link is stale or forged"),
    ({"path": "3"}, 400, "the model has 1 initial state(s), there is no initial state 3"),
    ({"path": "0.0", "fp": "0123456789abcdef"}, 409, "stale link: its path now reaches state"),
    ({"s": "tnosuchconfig"}, 404, "unknown configuration 'tnosuchconfig'"),
])
def test_a_bad_path_is_a_4xx_with_one_line(kafka, params, status, message):
    r = kafka.get("/api/state", params=params)
    assert r.status_code == status
    assert message in r.json()["error"] and "\n" not in r.json()["error"]
    if params.get("s") is None:
        d = kafka.get("/api/download", params=params)
        assert d.status_code == (status if status != 409 else 200)


def test_the_model_raising_on_a_step_is_a_4xx(counter):
    r = counter.get("/api/state", params={"path": "0.2"})
    assert r.status_code == 422
    assert r.json() == {"error": "step 1: the model raised ZeroDivisionError: boom"}


def tampered(text: str) -> bytes:
    doc = json.loads(text)
    doc["states"][5]["coordinator"]["next_producer_id"] = {"#bigint": "7"}
    return json.dumps(doc).encode()


@pytest.mark.parametrize("body, params, status, message", [
    (b"{not json", {}, 400, "the trace is not JSON (Expecting property name"),
    (b"\xff\xfe", {}, 400, "the trace is not UTF-8 text"),
    (b"[1, 2]", {}, 422, "cannot open the trace: the top level must be a JSON object"),
    (b'{"#meta": {}, "vars": ["x"], "states": [{"x": 1}]}', {}, 422,
     "cannot open the trace: trace metadata lacks the model and its configuration"),
    (TWOPHASE.read_bytes(), {}, 409, "this trace is of twophase-broken (a trace), not of the "
                                     "configuration explored here, kafka (<built-in>, protocol "
                                     "latest)"),
    (tampered(KAFKA_6119.read_text()), {"adopt": "1"}, 422, "the trace does not replay: step 5"),
    (KAFKA_6119.read_text().replace('"kafka-0.11"', '"kafka-0.10"').encode(), {"adopt": "1"},
     422, "cannot open the trace: "),
    (KAFKA_6119.read_text().replace('"#meta": {\n  "config"', '"loop": 20, "#meta": {\n  "config"',
                                    1).encode(), {"adopt": "1"}, 422,
     "cannot open the trace: loop must be the index of a state (0..19)"),
    (b"x" * 2000, {}, 413, "the trace is larger than"),
])
def test_a_bad_trace_is_a_4xx_with_one_line(body, params, status, message):
    client = TestClient(create_app(Explorer(registry.load(None)), max_upload=2**20 if
                                   len(body) != 2000 else 1000))
    r = client.post("/api/trace", params=params, content=body)
    assert r.status_code == status, r.text
    assert r.json()["error"].startswith(message) or message in r.json()["error"], r.json()
    assert "Traceback" not in r.text and "\n" not in r.json()["error"]
    assert client.get("/api/state").status_code == 200   # the server carries on


def test_a_lasso_trace_carries_its_loop():
    """A stuttering loop (ITF "loop" at the last state, no closing action). Only a liveness
    trace is a lasso (issue 48: a loop on a safety trace was drawn as one): the golden safety
    trace made a liveness one, whose stuttering end is unfair (EndTransaction stays enabled)."""
    doc = json.loads(KAFKA_6119.read_text())
    doc["loop"] = 19
    client = TestClient(create_app(Explorer(registry.load(None))))
    r = client.post("/api/trace", params={"adopt": "1"}, content=json.dumps(doc).encode())
    assert r.status_code == 422 and "a trace of kind always has no loop" in r.json()["error"]
    doc["#meta"] |= {"kind": "eventually", "property": "eventual_completion"}
    t = client.post("/api/trace", params={"adopt": "1"}, content=json.dumps(doc).encode()).json()
    assert t["loop"] == 19 and t["violation_step"] is None
    assert "the loop is unfair to EndTransaction" in t["message"]


@pytest.mark.parametrize("meta, message", [
    ({"kind": ["always"]}, "cannot replay a trace of kind ['always']"),
    ({"explorer": "symbolic"}, "a symbolic trace"),
    ({"kind": "cti"}, "cannot replay a trace of kind 'cti'"),
])
def test_a_trace_replay_refuses_is_refused_here_too(meta, message):
    """What replay refuses, opening a trace here refuses (issue 48: an unhashable kind crashed
    the rendering, symbolic traces and kinds replay refuses were opened)."""
    doc = json.loads(KAFKA_6119.read_text())
    doc["#meta"] |= meta
    client = TestClient(create_app(Explorer(registry.load(None))))
    r = client.post("/api/trace", params={"adopt": "1"}, content=json.dumps(doc).encode())
    assert r.status_code == 422 and message in r.json()["error"], r.text


def test_an_oversized_upload_is_refused_before_it_is_read():
    client = TestClient(create_app(Explorer(registry.load(None)), max_upload=1000))
    r = client.post("/api/trace", content=b"x" * 5000, headers={"content-length": "5000"})
    assert r.status_code == 413
    assert r.json() == {"error": "the trace is larger than the upload limit (1,000 bytes)"}


# --- the command --------------------------------------------------------------------------------

def explore(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "kafka_mc.explorers.cli", "explore", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_explore_serves_on_loopback_and_prints_its_url():
    p = subprocess.Popen([sys.executable, "-m", "kafka_mc.explorers.cli", "explore", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert p.stdout.readline() == "kafka-mc explore: kafka (<built-in>, protocol latest)\n"
        url = re.fullmatch(r"serving on (http://127\.0\.0\.1:(\d+)/) \(Ctrl-C stops\)\n",
                           p.stdout.readline())
        assert url
        with urllib.request.urlopen(url[1] + "api/sessions", timeout=10) as r:
            assert json.load(r)["sessions"][0]["key"] == "main"
        with urllib.request.urlopen(url[1] + "api/state?path=0.0", timeout=10) as r:
            assert json.load(r)["crumbs"][0]["action"] == "InitTransactions(producer=0)"
    finally:
        p.terminate()
        p.wait(timeout=10)


def test_explore_on_another_address_warns():
    p = subprocess.Popen([sys.executable, "-m", "kafka_mc.explorers.cli", "explore", "--port", "0",
                          "--host", "127.0.0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert p.stderr.readline() == ("kafka-mc: warning: listening on 127.0.0.2, not 127.0.0.1: "
                                       "anyone who can reach this address can use the explorer\n")
        p.stdout.readline()
        assert p.stdout.readline().startswith("serving on http://127.0.0.2:")
    finally:
        p.terminate()
        p.wait(timeout=10)


@pytest.mark.parametrize("args, message", [
    (["--trace", str(KAFKA_6119), "small"], "is of kafka (" + str(KAFKA_6119)),
    (["--trace", "nonexistent.itf.json"], "nonexistent.itf.json: no such file"),
    (["--port", "70000"], "70000 is not a port number (0 to 65535)"),
    (["--host", ""], "--host is empty"),
    (["--host", "192.0.2.1"], "cannot listen on 192.0.2.1 port 8023"),
    (["nosuchconfig"], "nosuchconfig"),
])
def test_explore_refuses_bad_input_with_one_line(args, message):
    r = explore(*args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""


def test_explore_refuses_a_port_in_use():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        r = explore("--port", str(s.getsockname()[1]))
    assert r.returncode == 2 and "cannot listen on 127.0.0.1 port" in r.stderr


def test_a_client_that_drops_mid_upload_is_no_server_error():
    """Issue 48: a client dropping mid-upload, or a malformed chunked body (the server then
    reports a disconnect to the application), raised ClientDisconnect out of the application:
    uvicorn printed an ASGI traceback. Now it is answered (to nobody) and the server carries on."""
    import asyncio

    app = create_app(Explorer(registry.load(None)))
    messages = [{"type": "http.request", "body": b'{"#meta": ', "more_body": True},
                {"type": "http.disconnect"}]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
    scope = {"type": "http", "method": "POST", "path": "/api/trace", "raw_path": b"/api/trace",
             "headers": [(b"transfer-encoding", b"chunked")], "query_string": b"",
             "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 8023),
             "client": ("127.0.0.1", 50000), "root_path": ""}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 400
