#!/usr/bin/env bash
# Install the built wheels into fresh venvs, one per CPython, and run the test suite
# against the *installed* package (pytest runs from outside the repository; the source
# tree's python/ is never on sys.path, and each run checks where agent_rollout came from).
#
#   scripts/test_wheels.sh DIST [WORKDIR]
#
# DIST holds agent_rollout-*-cp310-abi3-manylinux2014_x86_64*.whl and
# agent_rollout-*-py3-none-any.whl (scripts/build_wheels.sh makes both). Per CPython:
#   1. a fresh venv gets the platform wheel with its [test] extra; the package must import
#      from that venv with implementation() == "rust" and no warning; then the tests:
#      the whole suite on FULL_PYTHONS (the release build, as users get it: `make test`
#      runs the suite on a dev-profile build; FULL_IGNORE is left out), the SMOKE subset on
#      SMOKE_PYTHONS (the oldest: the stable ABI's floor), the NATIVE subset (the engine's
#      own modules: the same abi3 binary, loaded by another interpreter) on NATIVE_PYTHONS;
#      any other version (3.11, the one `make test` runs the whole suite on, from source)
#      gets the install check alone;
#   2. on PURE_PYTHONS the same venv swaps in the pure-Python wheel (--no-deps: same
#      requirements); implementation() == "python", no _native, no warning; then
#      tests/test_engine.py and the ENGINE modules, the file paths whose behaviour depends on the engine
#      (the rest of the pure wheel is the platform wheel's files byte for byte, which
#      scripts/compare_wheels.py proves; `make test` runs every module on the twin too).
# The extras [art] and [openenv] are not installed: their tests skip (make test runs them).
# Hypothesis runs its quick profile here (make test runs the thorough one). Venvs are made
# and filled by uv (UV, default: uv on PATH), from its cache, one after another in the
# background from the start, ahead of the tests.
set -euo pipefail
DIST=$(cd "${1:?usage: test_wheels.sh DIST [WORKDIR]}" && pwd)
WORK=${2:-$(mktemp -d "${TMPDIR:-/tmp}/agent_rollout-wheels.XXXXXX")}
# Compiled bytecode (where it is written at all) stays with these venvs, in WORK: a cache
# shared with other runs would keep every run's copy under a path never used again.
export PYTHONPYCACHEPREFIX="$WORK/pycache"
REPO=$(cd "$(dirname "$0")/.." && pwd)
UV=${UV:-uv}
PYTHONS=${PYTHONS:-"3.10 3.11 3.12 3.13"}
FULL_PYTHONS=${FULL_PYTHONS:-"3.13"}
SMOKE_PYTHONS=${SMOKE_PYTHONS:-"3.10"}
NATIVE_PYTHONS=${NATIVE_PYTHONS:-"3.12"}
# Left out of the whole suite here (make test runs them; none depends on the build or
# the engine): the docs' snippets and the bundled configs with their scripted servers.
FULL_IGNORE=${FULL_IGNORE-"tests/test_docs_snippets.py tests/test_scripted_servers.py \
tests/test_bundled_configs.py"}
PURE_PYTHONS=${PURE_PYTHONS:-"3.10"}
SMOKE=${SMOKE:-"tests/test_engine.py tests/test_rows.py tests/test_parity.py tests/test_jsonl.py \
tests/test_loader.py tests/test_cli_check.py tests/test_codes.py"}
NATIVE=${NATIVE:-"tests/test_engine.py tests/test_rows.py tests/test_jsonl.py tests/test_codes.py"}
ENGINE=${ENGINE:-"tests/test_limits.py tests/test_destinations.py tests/test_arrow_files.py \
tests/test_cli_normalise.py"}
export HYPOTHESIS_PROFILE=${MATRIX_HYPOTHESIS_PROFILE:-quick}
export LITELLM_LOCAL_MODEL_COST_MAP=True
unset AGENT_ROLLOUT_PURE_PYTHON PYTHONPATH VIRTUAL_ENV

platform_wheel=$(ls "$DIST"/agent_rollout-*-cp310-abi3-manylinux2014_x86_64*.whl)
pure_wheel=$(ls "$DIST"/agent_rollout-*-py3-none-any.whl)
mkdir -p "$WORK"

find_python() {  # an interpreter for version $1: under pyenv, else on PATH; it must run
    local found=""
    if command -v pyenv >/dev/null; then
        found=$(ls -d "$(pyenv root)"/versions/"$1".*/bin/"python$1" 2>/dev/null | sort -V | tail -n 1)
    fi
    [[ -n "$found" ]] || found=$(command -v "python$1" 2>/dev/null || true)
    if [[ -z "$found" ]] || ! "$found" -c pass 2>/dev/null; then
        echo "test_wheels: no working CPython $1 found" >&2
        return 1
    fi
    echo "$found"
}

# Imports the installed package from outside the repository and checks where it came from,
# which engine it uses and that importing it warns about nothing.
CHECK_INSTALL='
import sys, sysconfig, warnings
want = sys.argv[1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import agent_rollout
site = sysconfig.get_paths()["purelib"]
assert agent_rollout.__file__.startswith(site), f"imported {agent_rollout.__file__}, not from {site}"
assert not caught, [str(w.message) for w in caught]
got = agent_rollout.implementation()
assert got == want, f"implementation() is {got!r}, expected {want!r}"
native = "agent_rollout._native" in sys.modules
assert native == (want == "rust"), f"_native imported: {native}"
print(f"  {sys.version.split()[0]}: agent_rollout {agent_rollout.__version__} from {site}: {got}")
'

run_tests() {  # $1 venv python, $2 version, $3 which wheel, $4 what, then the test paths
    local py=$1 version=$2 wheel=$3 what=$4
    shift 4
    local tests=()
    for t in "$@"; do tests+=("$REPO/$t"); done
    if [[ $what == "full suite" ]]; then
        for t in $FULL_IGNORE; do tests+=("--ignore=$REPO/$t"); done
    fi
    echo "  $what"
    local log="$WORK/pytest-$version-$wheel.log"
    if ! (cd "$WORK" && "$py" -m pytest -q -x -p no:cacheprovider -c "$REPO/pyproject.toml" \
        --rootdir "$REPO" -n auto --dist worksteal --durations=30 "${tests[@]}") >"$log" 2>&1; then
        tail -n 80 "$log"
        echo "test_wheels: the tests failed on CPython $version with the $wheel wheel (log: $log)" >&2
        return 1
    fi
    if [[ $what == "full suite" ]]; then
        sed -n '/slowest 30 durations/,/^=/p' "$log"
    fi
    tail -n 1 "$log"
}

prepare() {  # $1 version: a fresh venv in WORK with the platform wheel and its [test] extra
    local base venv="$WORK/venv-$1"
    base=$(find_python "$1") || return
    rm -rf "$venv" || return
    "$UV" venv --quiet --python "$base" "$venv" || return
    "$UV" pip install --quiet --python "$venv/bin/python" "$platform_wheel[test]"
}
# Each version once, in the order given.
# shellcheck disable=SC2086
PYTHONS=$(printf '%s\n' $PYTHONS | awk 'NF && !seen[$0]++' | tr '\n' ' ')
# The venvs are made one after another in the background from the start, ahead of the
# tests (uv mostly waits on the disk and its cache); each version's tests wait for its
# venv. Status files of an earlier run in the same WORK are cleared first. The job has a
# process group of its own (job control on for its start), so a run that stops early
# stops uv with it.
rm -f "$WORK"/prepare-*.status "$WORK"/prepare-*.log
set -m
(
    for version in $PYTHONS; do
        status=0
        prepare "$version" >"$WORK/prepare-$version.log" 2>&1 || status=$?
        echo "$status" >"$WORK/prepare-$version.status"
    done
) &
preparing=$!
set +m
trap 'kill -- -"$preparing" 2>/dev/null || true' EXIT
prepared() {  # $1 version: wait for its venv; fail with the job's output if it was not made
    while [[ ! -s "$WORK/prepare-$1.status" ]]; do
        if ! kill -0 "$preparing" 2>/dev/null && [[ ! -s "$WORK/prepare-$1.status" ]]; then
            echo "test_wheels: the venv for CPython $1 was never made (work folder: $WORK)" >&2
            return 1
        fi
        sleep 0.2
    done
    if [[ $(cat "$WORK/prepare-$1.status") != 0 ]]; then
        cat "$WORK/prepare-$1.log" >&2
        echo "test_wheels: making the venv for CPython $1 failed (log: $WORK/prepare-$1.log)" >&2
        return 1
    fi
}

for version in $PYTHONS; do
    start=$SECONDS
    base=$(find_python "$version")
    echo "== CPython $version ($base)"
    prepared "$version"
    py="$WORK/venv-$version/bin/python"
    (cd "$WORK" && "$py" -c "$CHECK_INSTALL" rust)
    if [[ " $FULL_PYTHONS " == *" $version "* ]]; then
        run_tests "$py" "$version" platform "full suite" tests
    elif [[ " $SMOKE_PYTHONS " == *" $version "* ]]; then
        # shellcheck disable=SC2086
        run_tests "$py" "$version" platform "smoke subset" $SMOKE
    elif [[ " $NATIVE_PYTHONS " == *" $version "* ]]; then
        # shellcheck disable=SC2086
        run_tests "$py" "$version" platform "the engine's modules" $NATIVE
    else
        echo "  the install check only (make test runs the suite on $version from source)"
    fi

    if [[ " $PURE_PYTHONS " == *" $version "* ]]; then
        "$UV" pip install --quiet --python "$py" --reinstall --no-deps "$pure_wheel"
        (cd "$WORK" && "$py" -c "$CHECK_INSTALL" python)
        (cd "$WORK" && "$py" -c 'import importlib.util as u; assert u.find_spec("agent_rollout._native") is None')
        # shellcheck disable=SC2086
        run_tests "$py" "$version" pure "test_engine and the engine's file paths" tests/test_engine.py $ENGINE
    fi
    echo "  CPython $version: $((SECONDS - start)) s"
done
wait "$preparing"
trap - EXIT
# Everything passed: a work folder made here goes, with its venvs and bytecode (one that
# failed is kept, and its log named above; one given as WORKDIR is the caller's).
if [[ -z "${2:-}" ]]; then
    rm -rf "$WORK"
fi
