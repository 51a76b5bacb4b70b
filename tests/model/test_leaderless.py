"""KAFKA-17573 (found on real 4.4.0 by the harness, then by the model): a partition without a
leader while the coordinator sends its markers. configs/leaderless.toml."""
import subprocess
import sys

import pytest


def _check(preset, tmp_path):
    out = subprocess.run([sys.executable, "-m", "kafka_mc.explorers.cli", "check", "configs/leaderless.toml",
                          "--protocol", preset, "--out", str(tmp_path)],
                         capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


@pytest.mark.parametrize("preset", ["kafka-4.3", "latest"])
def test_a_leaderless_partition_is_dropped_and_its_transaction_hangs(preset, tmp_path):
    code, text = _check(preset, tmp_path)
    assert code != 0
    assert "invariant no_hanging_transactions is violated" in text
    assert "shortest counterexample: 17 steps" in text
    assert "75 distinct states, 125 generated, depth 17" in text


def test_before_kafka_17573_the_marker_waits_for_the_leader(tmp_path):
    code, text = _check("kafka-4.2.0", tmp_path)
    assert code == 0, text
    assert "130 distinct states, 240 generated, depth 23" in text


@pytest.mark.parametrize("preset, expected", [("kafka-4.2.0", "130 distinct states, 240 generated, depth 23"),
                                              ("kafka-4.3", "75 distinct states, 125 generated, depth 17")])
def test_the_graph_explorer_agrees_and_kafka_4_2_0_completes_every_transaction(preset, expected,
                                                                              tmp_path):
    out = subprocess.run([sys.executable, "-m", "kafka_mc.explorers.cli", "check", "configs/leaderless.toml",
                          "--protocol", preset, "--explorer", "graph", "--out", str(tmp_path)],
                         capture_output=True, text=True)
    assert expected in out.stdout + out.stderr
    assert (out.returncode == 0) == (preset == "kafka-4.2.0")
