"""A real run's timeline (``kafka-mc real timeline``) in a real headless Chromium, as the explorer is
tested (``tests/explorers/test_explore_browser.py``: its browser fixture, its screenshots, the
same skip with its reason when the browser is missing): the page of a recorded run with faults
opened from its file, its lanes, marks and fault marks read through the DOM, and a screenshot
that is not blank. One page load."""
from __future__ import annotations

import struct
import zlib

from tests.explorers.test_explore_browser import browser, shoot  # noqa: F401  (the fixture)
from tests.realkafka.test_timeline import FAULTS, copy, events
from tests.explorers.test_bad_input import kmc


def colours(png: bytes) -> int:
    """How many different colours the screenshot has (an 8-bit RGB or RGBA PNG, as Chromium
    writes them, unfiltered row by row)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, colour_type = head[:4]
    assert depth == 8 and colour_type in (2, 6), head
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    previous, seen = bytearray(stride), set()
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = row[i - bpp] if i >= bpp else 0
            b, c = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                row[i] = (row[i] + a) & 255
            elif kind == 2:
                row[i] = (row[i] + b) & 255
            elif kind == 3:
                row[i] = (row[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        seen.update(bytes(row[i:i + 3]) for i in range(0, stride, bpp * 4))
        previous = row
    return len(seen)


def test_a_run_with_faults_renders_in_chromium(browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    folder = copy(FAULTS, tmp_path)
    code, _, _ = kmc("real", "timeline", folder)
    assert code == 0
    d = browser
    d.get((folder / "timeline.html").as_uri())
    css = lambda selector: d.find_elements(By.CSS_SELECTOR, selector)  # noqa: E731
    lanes = [g.get_attribute("data-lane") for g in css("g.lane")]
    assert lanes == ["admin", "t0.i0", "reader-read_committed", "AddPartitionsManager-client-1",
                     "broker-1-txn-marker-sender", "broker-1/CLIENT", "broker-1/INTERNAL"]
    requests = [e for e in events(folder) if e["direction"] == "request"]
    marks = css('g.mark[data-kind="request"]')
    assert len(marks) == len(requests) == 59
    assert int(d.find_element(By.TAG_NAME, "body").get_attribute("data-requests")) == 59
    faults = css('g.mark[data-fault="drop"]')
    assert [f.get_attribute("data-api") for f in faults] == ["EndTxn", "WriteTxnMarkers"]
    assert len(css('g.mark[data-marker="COMMIT"]')) == 3
    # drawn, not only present: the fault's outline has its size on the page
    rect = faults[0].find_element(By.TAG_NAME, "rect")
    assert rect.size["width"] >= 3 and rect.size["height"] > 10
    assert "Kafka 4.4.0, preset kafka-4.3, seed 2" in d.find_element(By.TAG_NAME, "body").text
    shoot(d, tmp_path, "timeline-faults.png")
    png = (tmp_path / "timeline-faults.png").read_bytes()
    assert len(png) > 20_000 and colours(png) > 50, "the screenshot is blank"   # blank: 1
