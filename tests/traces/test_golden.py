"""The golden corpus (tests/golden): every trace replays as its name says, re-serialises to the
same bytes, and renders; the random walk still minimizes to its checked-in minimal length."""
from pathlib import Path

import pytest

from kafka_mc.traces.minimize import minimize
from kafka_mc.traces.render import FORMATS, render
from kafka_mc.traces.replay import replay
from kafka_mc.traces.trace import read

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
FILES = sorted(GOLDEN.glob("*.itf.json"))


def test_the_corpus_is_there():
    assert len(FILES) >= 4


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.name)
def test_golden_trace_replays_and_is_canonical(file):
    trace = read(file)
    result = replay(trace)
    assert result.reproduced is (".clean." not in file.name), result.message
    assert trace.to_json(result.model) == file.read_text(encoding="utf-8")
    for fmt in FORMATS:
        assert render(trace, fmt, diff=True)


def test_the_golden_walk_still_minimizes_to_its_minimal_length():
    walk = GOLDEN / "twophase-broken-10-walk.TCConsistent.itf.json"
    small = read(GOLDEN / "twophase-broken-10-walk.TCConsistent.min.itf.json")
    assert len(minimize(read(walk)).trace) == len(small) == 5 < len(read(walk))
