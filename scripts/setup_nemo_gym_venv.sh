#!/usr/bin/env bash
# Create (or refresh) a Python 3.12 venv with nemo-gym and this project, for
# tests/test_nemo_gym_live.py (NeMo Gym live). CI step:
#
#   scripts/setup_nemo_gym_venv.sh ~/.cache/agent-rollout/gym-venv
#   ~/.cache/agent-rollout/gym-venv/bin/python -m pytest tests/test_nemo_gym_live.py -q -p no:cacheprovider
#
# Usage: setup_nemo_gym_venv.sh VENV_DIR [PROJECT_DIR]
#   PYTHON   the 3.12+ interpreter to build the venv with (default: python3.12)
#   PIP_CACHE_DIR  pip's cache (default ~/.cache/pip); keep it between CI runs.
#
# The venv itself can be cached too: when VENV_DIR already holds nemo-gym of
# the pinned range, only the project is reinstalled, non-editable, as a user's
# `pip install` would do: PROJECT_DIR may be the source tree (a maturin build)
# or a built wheel (what .ci/run passes).
set -euo pipefail

venv=${1:?usage: setup_nemo_gym_venv.sh VENV_DIR [PROJECT_DIR]}
project=${2:-$(cd "$(dirname "$0")/.." && pwd)}
python=${PYTHON:-python3.12}
gym_spec='nemo-gym>=0.4,<0.5'
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$HOME/.cache/pip}
export PIP_DISABLE_PIP_VERSION_CHECK=1

start=$(date +%s)
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    echo "setup_nemo_gym_venv: $python is $("$python" -V 2>&1); nemo-gym needs Python 3.12+" >&2
    exit 2
fi
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --quiet)
if ! "$venv/bin/python" - "$gym_spec" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    major, minor = (int(part) for part in version("nemo-gym").split(".")[:2])
except (PackageNotFoundError, ValueError):
    sys.exit(1)
sys.exit(0 if (major, minor) == (0, 4) else 1)
EOF
then
    "${pip[@]}" "$gym_spec"
fi
# The test's own needs (psutil already comes with Gym's Ray).
"${pip[@]}" pytest hypothesis psutil
# The project, built and installed like a user's install (not editable).
"${pip[@]}" --force-reinstall --no-deps "$project"
"${pip[@]}" "$project"  # its dependencies, if any are missing
echo "setup_nemo_gym_venv: $venv ready in $(( $(date +%s) - start )) s" \
    "($("$venv/bin/python" -V), nemo-gym $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("nemo-gym"))'))"
