#!/usr/bin/env bash
# A Python 3.12 venv with nemo-gym and this project, for tests/test_nemo_gym_live.py
# (NeMo Gym live). CI step:
#
#   venv=$(scripts/setup_nemo_gym_venv.sh CACHE_DIR dist/agent_rollout-*-manylinux*.whl)
#   "$venv/bin/python" -m pytest tests/test_nemo_gym_live.py -q -p no:cacheprovider
#
# Usage: setup_nemo_gym_venv.sh CACHE_DIR [PROJECT]   (prints the venv's path on stdout)
#   PYTHON   the 3.12+ interpreter to build the venv with (default: python3.12)
#   UV       the uv to install with (default: uv on PATH)
#
# The venv is cached under CACHE_DIR, named after what it depends on: the interpreter's
# version, the nemo-gym requirement and the test's own packages. A change to any of them
# makes a new venv (and removes the stale ones); otherwise only the project is
# reinstalled, non-editable, as a user's install would do: PROJECT may be the source
# tree (a maturin build) or a built wheel (what .ci/run passes).
set -euo pipefail

cache=${1:?usage: setup_nemo_gym_venv.sh CACHE_DIR [PROJECT]}
project=${2:-$(cd "$(dirname "$0")/.." && pwd)}
python=${PYTHON:-python3.12}
uv=${UV:-uv}
gym_spec='nemo-gym>=0.4,<0.5'
# pytest-asyncio: pyproject.toml's pytest settings name its option (for the language
# server's tests), which pytest otherwise warns is unknown (PytestConfigWarning).
test_deps=(pytest hypothesis psutil pytest-asyncio)

start=$(date +%s)
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    echo "setup_nemo_gym_venv: $python is $("$python" -V 2>&1); nemo-gym needs Python 3.12+" >&2
    exit 2
fi
version=$("$python" -c 'import platform; print(platform.python_version())')
key=$(printf '%s\n' "$version" "$gym_spec" "${test_deps[@]}" | sha256sum | cut -c1-12)
venv="$cache/gym-venv-$key"
mkdir -p "$cache"
for stale in "$cache"/gym-venv-*; do
    [[ -e "$stale" && "$stale" != "$venv" ]] && rm -rf "$stale"
done
if [[ ! -f "$venv/.complete" ]]; then
    echo "setup_nemo_gym_venv: new venv $venv (CPython $version, $gym_spec)" >&2
    rm -rf "$venv"
    # Built in place (its scripts hold absolute paths); marked complete only at the end,
    # so an interrupted setup is redone next time.
    "$uv" venv --quiet --python "$python" "$venv" >&2
    "$uv" pip install --quiet --python "$venv/bin/python" "$gym_spec" "${test_deps[@]}" >&2
    touch "$venv/.complete"
fi
# The project, built and installed like a user's install (not editable), with its dependencies.
"$uv" pip install --quiet --python "$venv/bin/python" --reinstall-package agent-rollout "$project" >&2
echo "setup_nemo_gym_venv: $venv ready in $(( $(date +%s) - start )) s" \
    "($("$venv/bin/python" -V), nemo-gym $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("nemo-gym"))'))" >&2
echo "$venv"
