# make check: set up .venv (if missing) and run the default check; make test: set up and run pytest.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: check test bench clean browser compiled kafka

check: compiled kafka
	$(BIN)/kafka-mc check

test: compiled browser kafka
	$(BIN)/python -m pytest -q

# The hot modules compiled with Cython (model/build/compiled.py): rebuilds only what changed; without a C
# compiler it says so and everything runs as source.
compiled: $(STAMP)
	$(BIN)/python -m kafka_mc.model.build.cython_build

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
# the client driver compiled against it. Only what is missing is fetched; needs mvn and a JDK 17+.
kafka: $(STAMP)
	$(BIN)/python -m kafka_mc.realkafka.fetch

bench: compiled
	$(BIN)/python bench/twophase.py 8

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kafka-mc needs Python 3.11+")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,test,docs]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
