# make venv | make run | make test | make test-slow   (Python 3.11+; Debian packages for a real display: see README)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv run test test-slow clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(PY) main.py

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

test-slow: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) .pytest_cache
