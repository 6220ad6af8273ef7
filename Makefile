# Two commands, each sets up what it needs on a fresh machine:
#   make demo   - create .venv, install, index a small shipped corpus and answer questions
#   make test   - create .venv (Haystack 1.x) and .venv2 (Haystack 2.x), install, run both test suites
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# farm-haystack (1.x) and haystack-ai (2.x) are both the `haystack` package: each gets its own environment
VENV2 := .venv2
BIN2 := $(VENV2)/bin
export HAYSTACK_TELEMETRY_ENABLED := False
export TOKENIZERS_PARALLELISM := false
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup setup2 system-packages demo test docs bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# torch first and pinned: 2.13.0 is the CPU wheel this kind of machine has on disk; an unpinned
# torch would pull a multi-GB CUDA build. On a GPU machine, install your CUDA torch before `make`.
$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	# Qdrant's Haystack 1.x store pins torch<=2.0.0 (a CUDA build), which it never imports: no deps
	$(BIN)/pip install -q --no-deps "qdrant-haystack==1.0.11"
	touch $@

setup: $(VENV)/.installed

$(BIN2)/activate:
	$(PYTHON) -m venv $(VENV2)

$(VENV2)/.installed: pyproject.toml | $(BIN2)/activate
	$(BIN2)/pip install -q --upgrade pip
	$(BIN2)/python -c "import torch" 2>/dev/null || $(BIN2)/pip install -q torch==2.13.0
	$(BIN2)/pip install -q -e ".[dev2]"
	touch $@

setup2: $(VENV2)/.installed

# System packages some tests use, from Debian, installed as root where missing (a clean CI machine):
# PostgreSQL (the FAISS + PostgreSQL tests start a throwaway cluster on loopback) and Chromium (the
# evidence view's screenshot test). Elsewhere those tests are skipped, saying why.
system-packages:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || missing="$$missing postgresql"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) || \
	      echo "could not install$$missing: their tests will be skipped"; \
	  else echo "not installed:$$missing (their tests will be skipped)"; fi; \
	fi

demo: setup
	$(BIN)/python examples/demo.py

# the documentation site (mkdocs, in .venv): build/site; strict, so a broken link or reference fails (not
# --quiet: it hides the warnings that --strict counts, and a broken link would pass)
docs: setup
	$(BIN)/mkdocs build --strict

# both suites: Haystack 1.x (unit + integration tests, the example notebooks executed top to bottom),
# then Haystack 2.x in its own environment, with the framework-free core tests (tests/core) run in both.
# TEST_WORKERS pytest processes share each suite (pytest-xdist; a module's tests stay in one process, so a
# module-scoped fixture is built once), each on cores / TEST_WORKERS threads (tests/support/worker_threads.py);
# TEST_WORKERS=0 runs in one process. -rfEs names every failed, erroring and skipped test (and why skipped); --durations names the slowest.
TEST_WORKERS ?= 2
PYTEST_ARGS = -q -rfEs --nbmake --nbmake-timeout=900 -n $(TEST_WORKERS) --dist loadscope --durations=10
# the three set-ups run side by side (network and disk bound: 109 s against 187 s one after the other, both
# environments from an empty pip cache on a 2-core machine), then the checks and the two suites one after the other
test:
	$(MAKE) --no-print-directory -j3 setup setup2 system-packages
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/mkdocs build --strict
	$(BIN)/python -m pytest $(PYTEST_ARGS) tests examples/01_quickstart.ipynb examples/02_train_small_dcsr.ipynb
	$(BIN2)/python -m pytest $(PYTEST_ARGS) tests_haystack2 tests/core examples/03_haystack2_quickstart.ipynb

clean:
	rm -rf $(VENV) $(VENV2) *.egg-info
