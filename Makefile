# One entry point per check. Everything runs inside .venv, made on first use;
# packages come from PyPI through uv (its cache in ~/.cache/uv), crates from crates.io.
#   make demo         set up what the demo needs, build (release), run the whole job on the bundled example
#   make test         set up the development set, build (dev profile), lint and the Rust tests side by side,
#                     the test suite, then the release build back into .venv (for the demo and your own use)
#   make test-fast    the unit tier on both engines, release build (no servers, Ray, ART, Gym; no download)
#   make bench        the benchmarks (release build)
#   make pure-wheel   the pure-Python wheel (py3-none-any) into dist/, no Rust needed
#   make wheels       sdist, pure wheel and the Linux x86_64 abi3 wheel into dist/, checked
#   make test-wheels  those wheels installed and tested on CPython 3.10-3.13; offline sdist
# After `make demo` (or `make test`), `source .venv/bin/activate` puts agent-rollout on PATH.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
UV     := $(BIN)/uv
# The oldest uv with `pip install --excludes` (the demo's packages). A .venv made with an
# older uv gets this one on its next install: the stamp is named after the floor.
UV_FLOOR := 0.9.10
UV_STAMP := $(VENV)/.uv-$(UV_FLOOR)
INSTALL := $(UV) pip install --python $(BIN)/python
NEMO_GYM_DATA ?= $(HOME)/.cache/agent_rollout/nemo_gym-0.4.0

export LITELLM_LOCAL_MODEL_COST_MAP := True
# Compiled bytecode: every Python process started here (pytest's workers, the CLI, Ray and
# servers the tests start) reads and writes it in one cache inside .venv, never beside the
# sources. A shell with PYTHONDONTWRITEBYTECODE set (this machine's is) otherwise compiles
# every module from source in every process: the suite took 5 min 28 s so, 3 min 24 s with
# the cache (docs/development.md).
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(CURDIR)/$(VENV)/pycache
export AGENT_ROLLOUT_NEMO_GYM_DATA  := $(NEMO_GYM_DATA)
# maturin finds uv (for --uv) and cargo finds nothing else of ours here.
export PATH := $(CURDIR)/$(BIN):$(PATH)
# pyproject.toml's build-backend is our wrapper of maturin (build_backend/), not maturin
# itself: maturin's warning on every build that pip would then not use it does not apply.
export MATURIN_NO_MISSING_BUILD_BACKEND_WARNING := 1

.PHONY: setup build build-release nemo-gym-data demo lint fmt-check clippy ruff mypy stubtest \
	workflows cargo-test pytest test test-fast bench reliability debug-allocator fuzz pure-wheel wheels \
	test-wheels train-grpo

$(UV_STAMP):
	@echo "== a virtual environment in $(VENV), and uv to install into it"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check --quiet "uv>=$(UV_FLOOR)"
	touch $@

# What the demo needs and nothing more: the package's requirements, openenv-core, maturin,
# less the packages of openenv-core the demo never imports (scripts/demo-excludes.txt says
# which and why): 73 packages, not 101.
$(VENV)/.deps-demo: $(UV_STAMP) pyproject.toml scripts/requirements.py scripts/demo-excludes.txt
	@echo "== the demo's packages: the package's own requirements, openenv-core (no web UI), maturin"
	$(BIN)/python scripts/requirements.py openenv > $(VENV)/requirements-demo.txt
	$(INSTALL) -r $(VENV)/requirements-demo.txt "maturin>=1.9.4,<2" --excludes scripts/demo-excludes.txt
	touch $@

# The development set: tests, linters and every backend's package (the demo's included).
# uv keeps each package already in .venv at its version unless the set's own requirements
# rule that version out (opentelemetry-sdk pins its opentelemetry-api, say); each one it
# changed is named at the end.
$(VENV)/.deps-dev: $(UV_STAMP) pyproject.toml scripts/requirements.py
	@echo "== the development set: tests, linters, every backend's package"
	$(BIN)/python scripts/requirements.py dev > $(VENV)/requirements-dev.txt
	$(UV) pip freeze --python $(BIN)/python > $(VENV)/installed-before-dev.txt
	$(INSTALL) -r $(VENV)/requirements-dev.txt
	# TRL's data utilities only (its full install pulls in torch): the Arrow tests
	# check that trl.data_utils.is_conversational recognises our rows.
	$(INSTALL) --no-deps "trl>=0.20"
	@$(UV) pip freeze --python $(BIN)/python \
		| $(BIN)/python scripts/requirements.py --changed $(VENV)/installed-before-dev.txt -
	touch $@ $(VENV)/.deps-demo

setup: $(VENV)/.deps-dev

# The extension, built and installed into .venv (editable: python/ is the package).
# Tests run on the dev profile (debug assertions on); demo and benchmarks on the release
# build, which is also what the wheels ship (.ci/run tests the installed release wheel;
# Cargo.toml's release profile, fat LTO: docs/development.md says why).
# Each replaces the other in .venv (`agent-rollout --version` names the one installed).
build: $(VENV)/.deps-dev
	@echo "== build (dev profile) and install the package"
	$(BIN)/maturin develop --uv

build-release: $(VENV)/.deps-demo
	@echo "== build (release) and install the package"
	$(BIN)/maturin develop --uv --release

demo: build-release
	@echo "== agent-rollout demo"
	$(BIN)/agent-rollout demo

fmt-check:
	@echo "== cargo fmt --check"
	cargo fmt --check

# The features the wheels are built with (abi3): one clippy run covers what ships.
clippy:
	@echo "== clippy"
	cargo clippy --all-targets --locked --features abi3 -- -D warnings

ruff: $(VENV)/.deps-dev
	@echo "== ruff"
	$(BIN)/ruff check python tests benches build_backend scripts examples
	$(BIN)/ruff format --check python tests benches build_backend scripts examples

# mypy's incremental cache lives outside the clone, beside uv's (CI starts from a fresh
# clone and keeps ~/.cache): a file whose contents it has seen is not checked again, and
# any other is (a cold cache: about a minute on one core; warm: a few seconds).
MYPY_CACHE_DIR ?= $(HOME)/.cache/agent-rollout/mypy
mypy: $(VENV)/.deps-dev
	@echo "== mypy"
	MYPY_CACHE_DIR=$(MYPY_CACHE_DIR) $(BIN)/mypy

stubtest: build
	@echo "== stubtest (the hand-written _native.pyi)"
	$(BIN)/python -m mypy.stubtest agent_rollout._native

# The release workflow: valid YAML, and valid against the GitHub Actions schema.
workflows: $(VENV)/.deps-dev
	@echo "== the release workflow (yamllint, GitHub Actions schema)"
	$(BIN)/yamllint --strict -d "{extends: default, rules: {line-length: {max: 120}, document-start: disable, truthy: {check-keys: false}}}" .github
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

# mypy first: under `make -j` (as `make test` runs it) the longest job starts at once.
lint: mypy fmt-check clippy ruff stubtest workflows

# The Rust unit tests (error codes, the JSON parser, float output), linked against the
# venv's interpreter.
cargo-test: $(VENV)/.deps-dev
	@echo "== the Rust tests"
	PYO3_PYTHON=$(CURDIR)/$(BIN)/python cargo test --locked --lib --features abi3 -q

# NeMo Gym's example data (the wheel is downloaded and unpacked, never installed).
nemo-gym-data: $(VENV)/.deps-dev
	@echo "== NeMo Gym's example data (downloaded once)"
	PYTHON=$(BIN)/python bash scripts/fetch_nemo_gym_data.sh $(NEMO_GYM_DATA)

# HYPOTHESIS_PROFILE=thorough runs the parity properties at 1,000 examples (600 for floats, 400 for JSONL files; tests/conftest.py).
# One pytest worker per core (pytest-xdist); PYTEST_WORKERS=0 runs in this process.
PYTEST_WORKERS ?= auto
pytest: build nemo-gym-data
	@echo "== the test suite"
	$(BIN)/python -c "import agent_rollout as a, sys; e = a.implementation(); print('engine in use:', e); sys.exit(e != 'rust')"
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal --durations=30

# The inner loop: every test but the integration tier (tests/conftest.py), no data download.
# On the release build, which stays in .venv (make demo and a user's scripts run on it);
# make test runs the suite on the dev profile, with debug assertions.
test-fast: build-release
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal -q -m "not integration"

# The development set and the dev build first, their output as it comes (the first
# install downloads about 1.6 GB); then lint and the Rust tests side by side (mypy, on one
# core, beside cargo), each step's output whole under its own `== step` header as that step
# ends (--output-sync=target); then the suite, which uses every core itself. The steps
# after the build take it as made (-o build): it is built once.
# Last, whether the checks passed or not, the release build goes back into .venv: the
# suite ran on the dev profile, several times slower, which `agent-rollout demo` or a user's
# script must not meet there afterwards. It costs a release build of the crate (25 s of
# CPU; about a minute the first time, for the dependencies); RESTORE_RELEASE=no skips it
# (.ci/run does: its clone is thrown away, its fuzzer and debug-allocator steps run on the
# dev build, and its wheels are release builds of their own).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
RESTORE_RELEASE ?= yes
test:
	@status=0; \
	{ $(MAKE) --no-print-directory build \
		&& echo "== lint and the Rust tests, side by side: each step's output as it ends" \
		&& $(MAKE) --no-print-directory -o build -j$(JOBS) --output-sync=target lint cargo-test \
		&& $(MAKE) --no-print-directory -o build pytest; } || status=$$?; \
	$(if $(filter yes,$(RESTORE_RELEASE)),$(MAKE) --no-print-directory build-release || status=$$?;) \
	exit $$status

# The hostile-input, row, JSONL and float tests again under CPython's debug allocator (a
# use-after-free faults instead of passing by luck), then the differential fuzzer of both
# engines for a fixed time budget.
FUZZ_SECONDS ?= 60
reliability: debug-allocator fuzz

debug-allocator: build
	PYTHONMALLOC=debug $(BIN)/python -X dev -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) \
		tests/test_reentrancy.py tests/test_rows.py tests/test_jsonl.py tests/test_jsonl_parity.py \
		tests/test_float_output.py tests/fuzz/test_fuzz.py

fuzz: build
	$(BIN)/python tests/fuzz/fuzz.py --seconds $(FUZZ_SECONDS)

bench: $(VENV)/.deps-dev build-release
	$(BIN)/python benches/bench_rows.py
	$(BIN)/python benches/bench_jsonl.py
	$(BIN)/python benches/bench_arrow.py
	$(BIN)/python benches/bench_goals.py
	$(BIN)/python benches/bench_stats.py
	$(BIN)/python benches/bench_check.py
	$(BIN)/python benches/bench_lsp.py

# TRL's GRPOTrainer, two CPU steps on launch_rollout rows (docs/training.md), in a venv of
# its own with torch (scripts/setup_train_venv.sh; about 5.7 GB under ~/.cache/agent-rollout).
train-grpo: $(UV_STAMP)
	venv=$$(UV=$(UV) bash scripts/setup_train_venv.sh) && \
		"$$venv/bin/python" examples/train_grpo.py && \
		"$$venv/bin/python" -m pytest tests/test_train_grpo.py -q -p no:cacheprovider

# The one command for the pure-Python wheel (any pip >= 23.1 with network for maturin).
pure-wheel:
	$(PYTHON) -m pip wheel . --no-deps --wheel-dir dist --config-settings pure=true

wheels:
	bash scripts/build_wheels.sh dist

test-wheels: wheels
	bash scripts/check_sdist_offline.sh dist
	AGENT_ROLLOUT_NEMO_GYM_DATA=$(NEMO_GYM_DATA) bash scripts/test_wheels.sh dist
