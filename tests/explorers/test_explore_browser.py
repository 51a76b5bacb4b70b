"""``kafka-mc explore`` in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by Selenium): the page for the Kafka model's default configuration, steps taken by
clicking, the rendered state and the verdicts checked, then the README's KAFKA-6119
counterexample opened and stepped through, by clicking, to the state where
``no_hanging_transactions`` fails. The server is the real command (``kafka-mc explore --port 0``)
in a subprocess.

`make test` installs the browser (``make browser``). Without it this module fails, naming what is
missing (``KAFKA_MC_CHROMIUM`` and ``KAFKA_MC_CHROMEDRIVER`` name other binaries);
``KAFKA_MC_NO_BROWSER=1`` turns that into a skip whose reason pytest's summary lists
(``-rs``), never a silent pass. ``KAFKA_MC_SCREENSHOTS=DIR`` also writes the screenshots there
(the README's, in ``docs/``); they are always written to the test's temporary directory.
"""
import os
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KAFKA_6119 = ROOT / "tests" / "golden" / "kafka-0.11-tiny.no_hanging_transactions.itf.json"
CHROMIUM = os.environ.get("KAFKA_MC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = (os.environ.get("KAFKA_MC_CHROMEDRIVER") or shutil.which("chromedriver")
                or "/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1600,1200")
WAIT = 20  # seconds, for any one thing to show up


def _missing() -> str:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        return (f"no browser for the end-to-end test: {', '.join(missing)} missing "
                "(`make browser` installs Debian's chromium and chromium-driver)")
    try:
        import selenium
    except ImportError:
        return "no browser for the end-to-end test: selenium is not installed (make test)"
    return "" if selenium else "selenium is not importable"


@pytest.fixture(scope="module")
def server():
    p = subprocess.Popen([sys.executable, "-m", "kafka_mc.explorers.cli", "explore", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        p.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", p.stdout.readline())
        assert url, p.stderr.read()
        yield url[0]
    finally:
        p.terminate()
        p.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    missing = _missing()
    if missing:
        if os.environ.get("KAFKA_MC_NO_BROWSER") == "1":
            pytest.skip(f"SKIPPED, NOT RUN: {missing}")
        pytest.fail(missing + "; set KAFKA_MC_NO_BROWSER=1 to skip it (reported as a skip)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium')}")
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def shoot(driver, tmp_path, name):
    """A screenshot of the page's first 1,800 pixels (in the test's directory, and in
    KAFKA_MC_SCREENSHOTS)."""
    driver.set_window_size(1600, 1800)
    for d in filter(None, (tmp_path, os.environ.get("KAFKA_MC_SCREENSHOTS"))):
        Path(d).mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(Path(d) / name))
    driver.set_window_size(1600, 1200)


NARROW = 1280   # the page fits a laptop's 1,280 px without sideways scrolling


def fits(driver, width=NARROW):
    """The page's current state (its URL) loaded at ``width`` px: nothing wider than the window
    (wide content, the sequence diagram or a long table, scrolls inside its own box). Loaded, not
    resized: a table laid out wide keeps its width when the window narrows later."""
    from selenium.webdriver.support.ui import WebDriverWait
    steps = driver.find_element("tag name", "body").get_attribute("data-steps")

    def ready(_):
        body = driver.find_element("tag name", "body")
        return body.get_attribute("data-steps") == steps and not body.get_attribute("data-busy")

    driver.set_window_size(width, 1000)
    driver.refresh()
    WebDriverWait(driver, WAIT).until(ready)
    try:
        wide, window = driver.execute_script(
            "const e = document.documentElement; return [e.scrollWidth, e.clientWidth];")
        assert wide <= window, f"at {width} px the page is {wide} px wide: it scrolls sideways"
    finally:
        driver.set_window_size(1600, 1200)


def test_walk_the_kafka_model_and_its_6119_counterexample(browser, server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    d = browser
    wait = WebDriverWait(d, WAIT)
    css = lambda selector: d.find_elements(By.CSS_SELECTOR, selector)  # noqa: E731

    def at_step(n):
        wait.until(lambda _: d.find_element(By.TAG_NAME, "body").get_attribute("data-steps")
                   == str(n) and not d.find_element(By.TAG_NAME, "body").get_attribute("data-busy"))

    def verdict(prop):
        return d.find_element(By.CSS_SELECTOR, f'#properties tr[data-property="{prop}"]'
                              ).get_attribute("data-verdict")

    def field(component, key):  # the text of a component panel's field
        return d.find_element(By.XPATH, f'//section[@data-component="{component}"]/div/div'
                                        f'[span[@class="key" and text()="{key}"]]/*[2]')

    # The default configuration's initial state.
    d.get(server)
    wait.until(lambda _: len(css("#actions button.action")) == 4)
    at_step(0)
    assert [b.get_attribute("data-label") for b in css("#actions button.action")] == [
        "InitTransactions(producer=0)", "ElectCoordinator(replicated=False)",
        "BounceCoordinator(replicated=False)", "CrashProducer(producer=0)"]
    assert [p.get_attribute("data-component") for p in css("#components .panel")] == [
        "p0", "p1", "coordinator", "leader-0", "consumer-0", "network", "budgets"]
    assert field("p0", "state").text == "UNINITIALIZED"
    assert field("leader-0", "last_stable_offset").text == "0"
    assert verdict("no_hanging_transactions") == "holds"
    assert verdict("zombie_fencing") == "no step yet"
    assert not css("#properties tr.bad")
    first = d.find_element(By.ID, "fingerprint").text
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    fits(d)

    # Take InitTransactions, then the coordinator's HandleInitProducerId, by clicking.
    css('#actions button[data-name="InitTransactions"]')[0].click()
    at_step(1)
    assert field("p0", "state").text == "INITIALIZING"
    assert "changed" in field("p0", "state").get_attribute("class")
    assert "changed" not in field("p1", "state").get_attribute("class")
    assert verdict("zombie_fencing") == "holds"
    assert d.find_element(By.ID, "fingerprint").text != first
    assert d.current_url.endswith(f"#/path/0.0/fp/{d.find_element(By.ID, 'fingerprint').text}")
    css('#actions button[data-name="HandleInitProducerId"]')[0].click()
    at_step(2)
    assert [li.text for li in css("#crumbs li")] == [
        "initial state", "1. InitTransactions", "2. HandleInitProducerId"]
    assert "InitProducerId" in d.find_element(By.ID, "diagram").text

    # Back and forward along the breadcrumb.
    d.find_element(By.ID, "back").click()
    at_step(1)
    assert field("p0", "state").text == "INITIALIZING"
    assert len(css("#crumbs li.ahead")) == 1
    d.find_element(By.ID, "forward").click()
    at_step(2)
    shoot(d, tmp_path, "explore-walk.png")

    # A forged link: a clear message, the page still works.
    d.get(server + "#/path/0.0.9")
    wait.until(ec.visibility_of_element_located((By.ID, "message")))
    assert "stale or forged" in d.find_element(By.ID, "message-text").text

    # Open the README's KAFKA-6119 counterexample: of kafka-0.11 on tiny, not this
    # configuration, so the page offers to open it in its own.
    d.get(server)
    at_step(0)
    d.find_element(By.ID, "trace-file").send_keys(str(KAFKA_6119))
    wait.until(ec.visibility_of_element_located((By.ID, "adopt")))
    assert "this trace is of kafka" in d.find_element(By.ID, "message-text").text
    d.find_element(By.ID, "adopt").click()
    wait.until(ec.visibility_of_element_located((By.ID, "trace-panel")))
    at_step(0)
    assert "no_hanging_transactions violated: kafka, 19 steps" in d.find_element(
        By.ID, "trace-title").text
    assert "kafka-0.11" in d.find_element(By.ID, "label").text

    # Step through it by clicking forward, to its violation at step 19.
    for n in range(1, 20):
        assert verdict("no_hanging_transactions") == "holds"
        d.find_element(By.ID, "forward").click()
        at_step(n)
    assert verdict("no_hanging_transactions") == "violated"
    assert [r.get_attribute("data-property") for r in css("#properties tr.bad")] == [
        "no_hanging_transactions"]
    assert "the violation" in d.find_element(By.ID, "trace-where").text
    assert css("#crumbs li.violation")[0].get_attribute("data-step") == "19"
    assert field("coordinator", "txns").text.count("CompleteAbort") == 1
    assert "no_hanging_transactions violated" in d.find_element(By.ID, "diagram").text
    assert d.find_element(By.ID, "forward").get_attribute("disabled")
    shoot(d, tmp_path, "explore-counterexample.png")
    fits(d)   # (reloads the page at step 19 of the trace's configuration, without its panel)

    # A lasso trace (ITF "loop": 19, stuttering at its last state, of the same configuration, as
    # a liveness trace: only those carry a loop): where its loop starts is marked.
    lasso = tmp_path / "lasso.itf.json"
    doc = json.loads(KAFKA_6119.read_text())
    doc["#meta"].update(kind="eventually", property="eventual_completion")
    lasso.write_text(json.dumps({"loop": 19, **doc}))
    d.find_element(By.ID, "trace-file").send_keys(str(lasso))
    wait.until(lambda _: css('#crumbs li.loop-start[data-step="19"]'))
    at_step(0)
    assert "loop starts here" in css("#crumbs li.loop-start")[0].text
    css('#crumbs li[data-step="19"]')[0].click()
    at_step(19)
    assert "where the loop starts" in d.find_element(By.ID, "trace-where").text


@pytest.mark.parametrize("no_browser, outcome, said", [
    ("", "1 error", "no browser for the end-to-end test: /nonexistent/chromium missing"),
    ("1", "1 skipped", "SKIPPED, NOT RUN: no browser for the end-to-end test"),
])
def test_a_missing_browser_is_reported_never_a_silent_pass(no_browser, outcome, said):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KAFKA_MC_CHROMIUM": "/nonexistent/chromium",
           "KAFKA_MC_NO_BROWSER": no_browser}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          f"{__file__}::test_walk_the_kafka_model_and_its_6119_counterexample"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert outcome in run.stdout and said in run.stdout, run.stdout
    assert run.returncode == (1 if outcome == "1 error" else 0)
