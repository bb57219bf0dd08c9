# Two entry points for a newcomer:  `make demo`  and  `make test`.
# Both create .venv and install everything on first use (offline-capable).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean
setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	# CPU torch first, from the local wheel: otherwise pip pulls a multi-GB CUDA build.
	$(PY) -m pip install -q --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install -q --disable-pip-version-check -e '.[all,dev]'
	# LangChain's standard tests for the adapters, without the pytest plugins it would pull in.
	$(PY) -m pip install -q --disable-pip-version-check --no-deps 'langchain-tests>=1.1'
	touch $(STAMP)

demo: setup
	$(VENV)/bin/hmem demo

test: setup
	$(PY) -m pytest -q -p no:cacheprovider

lint: setup
	$(VENV)/bin/ruff check --no-cache hmem tests bench conftest.py
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache hmem-data
