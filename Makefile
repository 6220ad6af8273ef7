# Two commands, each sets up what it needs on a fresh machine:
#   make demo   - create .venv, install, index a small shipped corpus and answer questions
#   make test   - create .venv, install, run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HAYSTACK_TELEMETRY_ENABLED := False
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test bench clean

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

demo: setup
	$(BIN)/python examples/demo.py

# unit + integration tests, then the example notebooks executed top to bottom
test: setup
	$(BIN)/python -m pytest -q --nbmake --nbmake-timeout=900 tests examples/01_quickstart.ipynb examples/02_train_small_dcsr.ipynb

clean:
	rm -rf $(VENV) *.egg-info
