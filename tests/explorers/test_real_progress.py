"""A ``real conform`` campaign's progress line after each run (issue 59 item 5): runs done of how
many, the verdicts so far, the time spent and the time left at the mean time a run took."""
import time

from kafka_mc.explorers.cli.real import _progress


def test_the_progress_line_counts_the_verdicts_and_the_time_left():
    rows = [{"verdict": v} for v in ("conforms", "diverges", "conforms", "unknown")]
    started = time.monotonic() - 40.0         # 4 runs in 40 s: 10 s a run
    line = _progress(rows, 10, started)
    head, _, times = line.partition("; ")
    assert head == "[4/10] 2 conforming, 1 divergent, 1 undecided"
    spent, left = (int(w) for w in times.replace(",", "").split() if w.isdigit())
    assert 40 <= spent <= 41 and 60 <= left <= 62          # 6 runs left at 10 s each
    assert _progress(rows, 4, started).endswith("about 0 s left")
