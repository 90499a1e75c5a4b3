#!/usr/bin/env bash
# Each backend extra (and [lsp]) installs from scratch and imports: a fresh venv per extra gets the
# built platform wheel with that extra (uv resolves the extra's pins anew, from its cache
# of downloaded packages), then the backend's own imports run. For [art] this includes
# the openai<3 pin that keeps art.Model(...).openai_client() working
# (tests/test_backend_art.py calls it). Last, `make demo`'s own package set (openenv-core
# less scripts/demo-excludes.txt) in a fresh venv, with the wheel: the demo runs live.
#
#   scripts/check_extras.sh DIST        (UV: the uv to use, default: uv on PATH; 0.9.10+)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
DIST=$(cd "${1:?usage: check_extras.sh DIST}" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/agent_rollout-extras.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# Compiled bytecode (where it is written at all) goes with these venvs.
export PYTHONPYCACHEPREFIX="$WORK/pycache"
wheel=$(ls "$DIST"/agent_rollout-*-cp310-abi3-manylinux2014_x86_64*.whl)
UV=${UV:-uv}
export LITELLM_LOCAL_MODEL_COST_MAP=True
unset PYTHONPATH AGENT_ROLLOUT_PURE_PYTHON VIRTUAL_ENV

check() {  # $1 extra, $2 python code to run in that venv
    local venv="$WORK/$1"
    "$UV" venv --quiet --python python3 "$venv"
    "$UV" pip install --quiet --python "$venv/bin/python" "${wheel}[$1]"
    (cd "$WORK" && "$venv/bin/python" -c "$2")
    echo "  [$1]: installs and imports"
}

check art '
from importlib.metadata import version
import openai, art
import agent_rollout.backends.art, agent_rollout.examples.art_rollout
major = int(openai.__version__.split(".")[0])
assert major < 3, f"openai {openai.__version__}: ART needs openai 2 (the [art] pin)"
print("  openpipe-art", version("openpipe-art") + ", openai", openai.__version__)
'
check openenv '
import openenv
import agent_rollout.examples.openenv_drill.server
print("  openenv-core imports")
'
check arrow '
import pyarrow, agent_rollout
table = agent_rollout.rows_to_arrow([{"prompt": "2+2?", "answer": "4"}])
assert table.num_rows == 1
print("  pyarrow", pyarrow.__version__)
'
check lsp '
import pygls, lsprotocol.types
from agent_rollout.lsp._server import build_server
build_server("0")
print("  pygls", pygls.__version__ if hasattr(pygls, "__version__") else "2")
'

# make demo's packages: the Makefile's requirements and excludes, the wheel without its
# dependencies (maturin is left out: the wheel is built).
demo="$WORK/demo"
"$UV" venv --quiet --python python3 "$demo"
python3 "$REPO/scripts/requirements.py" openenv >"$WORK/requirements-demo.txt"
"$UV" pip install --quiet --python "$demo/bin/python" -r "$WORK/requirements-demo.txt" \
    --excludes "$REPO/scripts/demo-excludes.txt"
"$UV" pip install --quiet --python "$demo/bin/python" --no-deps "$wheel"
out=$(cd "$WORK" && "$demo/bin/agent-rollout" demo --rows 1000 2>&1) || { echo "$out"; exit 1; }
grep -q "seed prompts, live, OpenEnv drill server" <<<"$out" || {
    echo "$out"
    echo "check_extras: make demo's packages do not run the demo's rollout live" >&2
    exit 1
}
count=$("$UV" pip list --quiet --python "$demo/bin/python" --format freeze | wc -l)
echo "  make demo's packages ($count with the wheel): the demo runs live"
