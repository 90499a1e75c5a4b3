# One entry point per check. Everything runs inside .venv, made on first use.
#   make demo         set up, then run the whole job on the bundled example
#   make test         set up, build, lint, then run the test suite (both engines)
#   make pure-wheel   the pure-Python wheel (py3-none-any) into dist/, no Rust needed
#   make wheels       sdist, pure wheel and the Linux abi3 wheels into dist/, checked
#   make test-wheels  those wheels installed and tested on CPython 3.10-3.13; offline sdist
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
NEMO_GYM_DATA ?= $(HOME)/.cache/agent_rollout/nemo_gym-0.4.0

export LITELLM_LOCAL_MODEL_COST_MAP := True
export AGENT_ROLLOUT_NEMO_GYM_DATA  := $(NEMO_GYM_DATA)

.PHONY: setup build nemo-gym-data demo lint fmt-check clippy ruff mypy stubtest workflows pytest test bench reliability \
	pure-wheel wheels test-wheels

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# TRL's data utilities only (its full install pulls in torch): the Arrow tests
	# check that trl.data_utils.is_conversational recognises our rows.
	$(BIN)/python -m pip install --quiet --no-deps "trl>=0.20"
	touch $@

setup: $(VENV)/.installed

# Rebuild the extension (release) after any Rust change; fast when nothing changed.
build: setup
	$(BIN)/maturin develop --release --quiet --skip-install 2>/dev/null || $(BIN)/maturin develop --release

demo: build
	$(BIN)/agent-rollout demo

fmt-check:
	cargo fmt --check

clippy:
	cargo clippy --all-targets --locked -- -D warnings
	CARGO_TARGET_DIR=target/abi3 cargo clippy --all-targets --locked --features pyo3/abi3-py310 -- -D warnings

ruff: setup
	$(BIN)/ruff check python tests benches build_backend scripts
	$(BIN)/ruff format --check python tests benches build_backend scripts

mypy: setup
	$(BIN)/mypy

stubtest: build
	$(BIN)/python -m mypy.stubtest agent_rollout._native

# The release workflow: valid YAML, and valid against the GitHub Actions schema.
workflows: setup
	$(BIN)/yamllint --strict -d "{extends: default, rules: {line-length: {max: 120}, document-start: disable, truthy: {check-keys: false}}}" .github
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

lint: fmt-check clippy ruff mypy stubtest workflows

# NeMo Gym's example data (the wheel is downloaded and unpacked, never installed).
nemo-gym-data: setup
	PYTHON=$(BIN)/python bash scripts/fetch_nemo_gym_data.sh $(NEMO_GYM_DATA)

pytest: build nemo-gym-data
	$(BIN)/python -c "import agent_rollout as a, sys; e = a.implementation(); print('engine in use:', e); sys.exit(e != 'rust')"
	$(BIN)/python -m pytest

test: lint pytest

# Issue 8's second line of defence: the hostile-input, row, JSONL and float tests again
# under CPython's debug allocator (a use-after-free faults instead of passing by luck),
# then the differential fuzzer of both engines for a fixed time budget.
FUZZ_SECONDS ?= 60
reliability: build
	PYTHONMALLOC=debug $(BIN)/python -X dev -m pytest -q -p no:cacheprovider \
		tests/test_reentrancy.py tests/test_rows.py tests/test_jsonl.py tests/test_jsonl_parity.py \
		tests/test_float_output.py tests/fuzz/test_fuzz.py
	$(BIN)/python tests/fuzz/fuzz.py --seconds $(FUZZ_SECONDS)

bench: build
	$(BIN)/python benches/bench_rows.py
	$(BIN)/python benches/bench_jsonl.py
	$(BIN)/python benches/bench_arrow.py

# The one command for the pure-Python wheel (any pip >= 23.1 with network for maturin).
pure-wheel:
	$(PYTHON) -m pip wheel . --no-deps --wheel-dir dist --config-settings pure=true

wheels:
	bash scripts/build_wheels.sh dist

test-wheels: wheels
	bash scripts/check_sdist_offline.sh dist
	AGENT_ROLLOUT_NEMO_GYM_DATA=$(NEMO_GYM_DATA) bash scripts/test_wheels.sh dist
