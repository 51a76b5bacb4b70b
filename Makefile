# make check: set up .venv with the core (if missing), run the default check, then build the compiled
# modules for the next runs; make test: every extra, then pytest. Neither needs Kafka for `check`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.installed-core
STAMP := $(VENV)/.installed

.PHONY: check test bench clean browser compiled kafka examples

# The verdict first (about a minute, as source), then the compiled builds (a few minutes of C
# compilation, with progress): the next check, test and bench run 1.3-1.4x faster. No Kafka
# release is fetched and no Maven is needed: those are for `kafka-mc real` (make kafka).
check: $(CORE)
	$(BIN)/kafka-mc check
	@echo "make check: the verdict is above; now the compiled builds for the next runs (Ctrl-C skips them)"
	$(BIN)/python -m kafka_mc.model.build.cython_build

test: compiled browser kafka
	$(BIN)/python -m pytest -q

# The hot modules compiled with Cython (model/build/compiled.py): rebuilds only what changed, with a
# line of progress per module; without a C compiler it says so and everything runs as source.
compiled: $(STAMP)
	$(BIN)/python -m kafka_mc.model.build.cython_build

# The README's and the manual's examples rewritten with what the tool prints (tools/examples.py;
# tests/test_readme.py fails while they differ).
examples: $(STAMP)
	$(BIN)/python tools/examples.py

# The end-to-end test of `kafka-mc explore` drives Debian's chromium through chromium-driver
# (tests/explorers/test_explore_browser.py); installed here when missing. Where it cannot be,
# say so: that test then fails, naming what is missing (KAFKA_MC_NO_BROWSER=1: a listed skip).
APT_BROWSER := env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing chromium and chromium-driver (apt-get) for the browser test"; \
	  apt-get update -qq && $(APT_BROWSER) >/dev/null || echo "make browser: apt-get failed" >&2; \
	elif command -v apt-get >/dev/null && sudo -n true 2>/dev/null; then \
	  sudo -n apt-get update -qq && sudo -n $(APT_BROWSER) >/dev/null || \
	    echo "make browser: apt-get failed" >&2; \
	else echo "make browser: cannot install chromium and chromium-driver here (needs root and" \
	  "apt-get): the browser test will fail" >&2; fi

# Real Apache Kafka for `kafka-mc real` and its tests: every supported release (realkafka/releases.py)
# fetched from Maven Central into build/kafka/<version> (or $$KAFKA_MC_KAFKA_CACHE) by Maven, and
# the client driver compiled against it (`kafka-mc real fetch`, which a pip install runs the same
# way into a per-user cache). Only what is missing is fetched; needs mvn and a JDK 17+.
kafka: $(STAMP)
	$(BIN)/kafka-mc real fetch

bench: compiled
	$(BIN)/python bench/twophase.py 8

# The core and Cython: what `make check` needs (pip install of the core alone is a few MB).
$(CORE): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kafka-mc needs Python 3.11+")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "make: installing kafka-mc's core into $(VENV) (numpy, scipy, networkx, pydot, Cython)"
	$(BIN)/python -m pip install --progress-bar off -e '.[compiled]'
	touch $(CORE)

# Every extra, the test suite's tools and the manual's: what `make test` needs.
$(STAMP): $(CORE)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,test,docs]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
