#!/usr/bin/env bash
# A venv with torch, TRL and this project, for examples/train_grpo.py (GRPOTrainer trained on
# agent_rollout rows) and tests/test_train_grpo.py. Kept apart from .venv, which has no torch.
#
#   venv=$(scripts/setup_train_venv.sh)
#   "$venv/bin/python" examples/train_grpo.py
#   "$venv/bin/python" -m pytest tests/test_train_grpo.py -q -p no:cacheprovider
#
# Usage: setup_train_venv.sh [CACHE_DIR] [PROJECT]   (prints the venv's path on stdout)
#   CACHE_DIR  where the venv lives (default: ~/.cache/agent-rollout)
#   PROJECT    the source tree (default: this clone) or a built wheel
#   PYTHON     the 3.10+ interpreter to build the venv with (default: python3)
#   UV         the uv to install with (default: uv on PATH, else .venv/bin/uv)
#   ENGINE     rust (default: the source tree built by maturin, release profile) or pure
#              (the pure-Python wheel: no Rust toolchain, a few seconds faster to install;
#              the example runs the same way on either engine)
#
# torch comes from PyPI, whose Linux x86_64 wheel is the CUDA build: it needs the nvidia-*
# and cuda-* wheels to import, even on a machine without a GPU (measured with torch 2.15:
# installed without them, `import torch` fails on libcudart.so.13). PyPI has no CPU-only
# build of torch for Linux x86_64, so the venv is about 5.7 GB. The example runs on the CPU.
# Where PyTorch's own package index can be reached, UV_TORCH_BACKEND=cpu makes uv take the
# CPU-only build from there (not tried here: only PyPI is reachable from this project's machines).
#
# The venv is cached under CACHE_DIR, named after what it depends on (the interpreter's
# version and the requirements below); a change to any of them makes a new venv and removes
# the stale ones. The project itself is reinstalled each time (not editable), as a user's
# install would be.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-$HOME/.cache/agent-rollout}
project=${2:-$here}
python=${PYTHON:-python3}
engine=${ENGINE:-rust}
if [[ -n "${UV:-}" ]]; then
    uv=$UV
elif command -v uv >/dev/null 2>&1; then
    uv=uv
else
    uv=$here/.venv/bin/uv
fi
# TRL 1.16 (the version the example is written for) and what it needs: torch, transformers,
# accelerate and datasets come with it; pyarrow for the Parquet file; pytest and hypothesis
# (tests/conftest.py imports it) for the test.
requirements=('trl>=1.16,<1.17' 'datasets>=3' 'pyarrow>=15' 'pytest>=8' 'hypothesis>=6.100')

case $engine in
    rust) build=() ;;
    pure) build=(--config-settings pure=true) ;;
    *) echo "setup_train_venv: ENGINE=$engine; expected rust or pure" >&2; exit 2 ;;
esac
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "setup_train_venv: $python is not a Python 3.10+ interpreter" >&2
    exit 2
fi
if ! "$uv" --version >/dev/null 2>&1; then
    echo "setup_train_venv: no uv ($uv); install it (pip install uv) or set UV" >&2
    exit 2
fi

start=$(date +%s)
version=$("$python" -c 'import platform; print(platform.python_version())')
key=$(printf '%s\n' "$version" "${requirements[@]}" "torch backend: ${UV_TORCH_BACKEND:-}" |
    sha256sum | cut -c1-12)
venv="$cache/train-venv-$key"
mkdir -p "$cache"
for stale in "$cache"/train-venv-*; do
    [[ -e "$stale" && "$stale" != "$venv" ]] && rm -rf "$stale"
done
if [[ ! -f "$venv/.complete" ]]; then
    echo "setup_train_venv: new venv $venv (CPython $version; ${requirements[*]})" >&2
    rm -rf "$venv"
    # Built in place (its scripts hold absolute paths); marked complete only at the end,
    # so an interrupted setup is redone next time.
    "$uv" venv --quiet --python "$python" "$venv" >&2
    "$uv" pip install --quiet --python "$venv/bin/python" "${requirements[@]}" >&2
    touch "$venv/.complete"
fi
# The project, built and installed like a user's install (not editable), with its dependencies
# and the [openenv] extra (openenv-core), for the example's --online run through the drill server.
"$uv" pip install --quiet --python "$venv/bin/python" --reinstall-package agent-rollout \
    ${build[@]+"${build[@]}"} "$project[openenv]" >&2
"$venv/bin/python" - "$venv" "$(( $(date +%s) - start ))" >&2 <<'EOF'
import sys
from importlib.metadata import version

import agent_rollout

venv, seconds = sys.argv[1:]
names = ("torch", "trl", "transformers", "datasets", "openenv-core")
packages = ", ".join(f"{name} {version(name)}" for name in names)
print(
    f"setup_train_venv: {venv} ready in {seconds} s ({sys.version.split()[0]}, {packages}, "
    f"agent-rollout {version('agent-rollout')} on the {agent_rollout.implementation()} engine)"
)
EOF
echo "$venv"
