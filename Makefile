# make check: set up .venv (if missing) and run the default check; make test: set up and run pytest.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: check test bench clean

check: $(STAMP)
	$(BIN)/kafka-mc check

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/twophase.py 8

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kafka-mc needs Python 3.11+")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
