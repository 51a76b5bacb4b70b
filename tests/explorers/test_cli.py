"""The real console script, in subprocesses: results, exit codes, one-line errors."""
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_mc.explorers import cli
from kafka_mc.model import registry
from tests.grid import grid_spec
from kafka_mc.model.config import Param

EXE = shutil.which("kafka-mc", path=str(Path(sys.executable).parent)) or shutil.which("kafka-mc")


def run(*args, cwd=None, timeout=120):
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_console_script_is_installed():
    assert EXE, "kafka-mc is not installed (make test installs it)"


def test_twophase_seven_holds(tmp_path):
    r = run("check", "--model", "twophase", "--set", "model.resource_managers=7", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "296,448 distinct states" in r.stdout and "No error has been found" in r.stdout
    assert "never enabled: none" in r.stdout


def test_default_check_runs_the_builtin_kafka_config(tmp_path):
    r = run("check", "--depth", "6", "--json", cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["model"] == "kafka" and doc["stats"]["depth"] == 6
    assert doc["config"]["protocol"]["version"] == "latest"


def test_broken_toy_exits_12_and_writes_a_replayable_trace(tmp_path):
    r = run("check", "twophase-broken", "--out", str(tmp_path / "o"))
    assert r.returncode == 12, r.stderr
    trace = tmp_path / "o" / "TCConsistent.itf.json"
    assert trace.exists() and f"kafka-mc replay {trace}" in r.stdout
    assert "shortest counterexample: 5 steps" in r.stdout
    doc = json.loads(trace.read_text())
    assert doc["#meta"]["property"] == "TCConsistent" and len(doc["states"]) == 6
    rp = run("replay", str(trace))
    assert rp.returncode == 12 and "violated" in rp.stdout


def test_json_output(tmp_path):
    r = run("check", "twophase-broken", "--json", "--out", str(tmp_path))
    doc = json.loads(r.stdout)
    assert doc["exit_code"] == 12 and doc["verdict"] == "violation"
    assert doc["violations"][0]["steps"] == 5 and doc["stats"]["distinct"] > 0
    assert doc["config"]["model"] == {"name": "twophase-broken", "resource_managers": 3}


def test_depth_and_invariant_flags(tmp_path):
    r = run("check", "--model", "twophase-broken", "--depth", "4", "--invariant", "TCConsistent",
            "--json", "--out", str(tmp_path))
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["checked"] == ["TCConsistent"] and doc["complete"] is False
    assert doc["stats"]["depth"] == 4


@pytest.mark.parametrize("args, message", [
    (["check", "--bogus"], "unrecognized arguments: --bogus"),
    (["check", "--model", "nope"], "unknown model 'nope'"),
    (["check", "--model", "twophase", "--set", "model.resource_managers=99"], "out of range"),
    (["check", "--protocol", "kafka-9"], "protocol.version = 'kafka-9' is not one of"),
    (["check", "--set", "oops"], "expected section.key=value"),
    (["check", "--depth", "-3"], "must be >= 0"),
    (["check", "--explorer", "warp"], "invalid choice: 'warp'"),
    (["check", "--invariant", "Nope"], "unknown property 'Nope'"),
    (["check", "--model", "twophase", "--protocol", "kafka-2.5"],
     "unknown key protocol.version for model twophase"),
    (["check", "no/such/file.toml"], "no such file"),
    (["replay", "no-such-trace.json"], "no such file"),
    ([], "a command is required"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    r = run(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and message in r.stderr and "Traceback" not in r.stderr


def test_bad_config_file_names_the_key(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[model]\nname = "twophase"\nresource_manager = 3\n')
    r = run("check", str(f))
    assert r.returncode == 2 and "unknown key model.resource_manager" in r.stderr
    f.write_text("[model\n")
    r = run("check", str(f))
    assert r.returncode == 2 and "invalid TOML" in r.stderr and r.stderr.count("\n") == 1


def test_list(tmp_path):
    assert "twophase-broken" in run("list", "models").stdout
    inv = run("list", "invariants", "--model", "twophase").stdout
    assert "TCConsistent" in inv and "sometimes" in inv
    assert "twophase" in run("list", "configs").stdout.split()
    protocols = run("list", "protocols").stdout.splitlines()
    # each preset with what it changed (the start of its doc)
    assert any(line.startswith("kafka-3.8 ") and "3.7.1, 3.8 .. 3.9" in line for line in protocols)
    assert any(line.startswith("kafka-4.3 ") and "4.3.0 .. 4.4.x" in line for line in protocols)


def test_interrupt_exits_130_with_partial_results(tmp_path):
    p = subprocess.Popen([EXE, "check", "--model", "twophase", "--set", "model.resource_managers=12"],
                         cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Interrupted" in out and "Traceback" not in err


# In-process runs with test-only models registered: deadlock (11) and model error (75).

def _register(monkeypatch, **specs):
    params = (Param("model.max", int, 3), Param("model.reset", bool, True))
    for name, spec in specs.items():
        monkeypatch.setitem(registry.REGISTERED, name, registry.spec_entry(spec, params, name=name))


def _grid_params(cfg):
    return {"max": cfg["model.max"], "reset": cfg["model.reset"]}


def _boom(p, s):
    if s == (2, 0):
        raise ZeroDivisionError("division by zero in a rule")
    return []


def test_deadlock_and_model_error_exit_codes(monkeypatch, tmp_path, capsys):
    from kafka_mc.model.protocol import Rule
    spec = grid_spec().derive("grid", params=_grid_params)
    _register(monkeypatch, grid=spec,
              gridboom=spec.derive("gridboom", add=[Rule("Boom", (), _boom, lambda p, s: s)]))
    out = str(tmp_path)
    assert cli.main(["check", "--model", "grid", "--set", "model.reset=false", "--out", out]) == 11
    assert "deadlock reached" in capsys.readouterr().out
    assert cli.main(["check", "--model", "grid", "--set", "model.reset=false", "--no-deadlock",
                     "--out", out]) == 0
    capsys.readouterr()
    assert cli.main(["check", "--model", "gridboom", "--out", out]) == 75
    text = capsys.readouterr().out
    assert "the model raised an exception" in text and "ZeroDivisionError" in text
    assert (tmp_path / "model_error.itf.json").exists()


def test_report_and_json_list_the_edges_of_kafkas_tables_taken_and_not(tmp_path):
    """Per state machine (TransactionState, TransactionManager.State): which edges of Kafka's
    table for the configured version the run took, and which not (tiny: one transaction per
    producer, so Complete* -> Ongoing is among the edges not taken; TV1's 2.6 table has no
    TV2 edge)."""
    r = run("check", "tiny", "--protocol", "kafka-2.6", "--json", cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    coord, client = doc["edges"]["TransactionState"], doc["edges"]["TransactionManager.State"]
    assert ["Ongoing", "PrepareCommit"] in coord["taken"] and ["Empty", "Ongoing"] in coord["taken"]
    assert ["CompleteCommit", "Ongoing"] in coord["not_taken"]
    assert ["IN_TRANSACTION", "COMMITTING_TRANSACTION"] in client["taken"]
    assert len(coord["taken"]) + len(coord["not_taken"]) == 16
    t = run("check", "tiny", "--protocol", "kafka-2.6", cwd=tmp_path)
    n = len(coord["taken"])
    assert f"  TransactionState: {n} of 16; not taken: " in t.stdout
    assert "CompleteCommit -> Ongoing" in t.stdout
    toy = json.loads(run("check", "twophase", "--json", cwd=tmp_path).stdout)
    assert toy["edges"] == {}           # a model without machines reports none


def test_a_command_group_of_another_package_plugs_in(monkeypatch, capsys):
    """A command group is ``add_parser(subparsers)`` and ``main(args) -> int`` (as
    ``real`` is): added to ``cli.GROUPS`` its commands parse, run, list in the
    usage error and give one-line errors like the others."""
    import types

    def add_parser(sub):
        r = sub.add_parser("plugin", help="a group of another package")
        r.add_argument("what", choices=["run"])

    group = types.SimpleNamespace(add_parser=add_parser,
                                  main=lambda args: print(f"ran {args.command} {args.what}") or 7)
    monkeypatch.setattr(cli, "GROUPS", (*cli.GROUPS, group))
    assert cli.main(["plugin", "run"]) == 7 and capsys.readouterr().out == "ran plugin run\n"
    assert cli.main(["plugin", "nothing"]) == 2
    assert "invalid choice: 'nothing'" in capsys.readouterr().err
    assert cli.main([]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "a command is required: check, graph, list, replay, minimize, render, explore, compare, "
        "real or plugin "
        "(see kafka-mc --help)")
