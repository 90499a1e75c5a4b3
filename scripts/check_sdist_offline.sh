#!/usr/bin/env bash
# Install the sdist where Rust cannot be had: no `cargo` on PATH and no network
# (`unshare -n`: the process sees no network interfaces; needs root). The build
# backend (maturin) comes from a local wheelhouse, as on an offline mirror.
#   1. `pip install SDIST` must fail with the backend's one line naming the pure wheel,
#      and no Python traceback;
#   2. with AGENT_ROLLOUT_PURE_WHEEL=1 the same sdist builds and installs the pure wheel,
#      which imports with implementation() == "python" and no warning.
#
#   scripts/check_sdist_offline.sh DIST [PYTHON]
set -euo pipefail
DIST=$(cd "${1:?usage: check_sdist_offline.sh DIST [PYTHON]}" && pwd)
PYTHON=${2:-python3}
sdist=$(ls "$DIST"/agent_rollout-*.tar.gz)
work=$(mktemp -d "${TMPDIR:-/tmp}/agent_rollout-offline.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Compiled bytecode (where it is written at all) goes with this venv.
export PYTHONPYCACHEPREFIX="$work/pycache"

"$PYTHON" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip download --quiet --dest "$work/wheelhouse" "maturin>=1.9.4,<2" \
    "tomli>=1.1; python_version < '3.11'"
# PATH without cargo: the venv and the system directories only.
offline=(unshare -n env -u PIP_FIND_LINKS PATH="$work/venv/bin:/usr/bin:/bin" HOME="$work")
if "${offline[@]}" sh -c 'command -v cargo' >/dev/null; then
    echo "check_sdist_offline: cargo is still on the restricted PATH" >&2
    exit 1
fi
pip_offline=("${offline[@]}" "$py" -m pip install --no-index --find-links "$work/wheelhouse"
    --no-cache-dir --no-deps)

echo "== sdist, no cargo, no network: must fail with one line"
if "${pip_offline[@]}" "$sdist" >"$work/out.txt" 2>&1; then
    cat "$work/out.txt"
    echo "check_sdist_offline: the install succeeded without Rust" >&2
    exit 1
fi
message=$(grep -c '^ *agent-rollout: cannot build the Rust engine from source' "$work/out.txt" || true)
if [[ $message != 1 ]] || grep -q 'Traceback' "$work/out.txt" \
    || ! grep -q 'pure-Python wheel' "$work/out.txt" \
    || ! grep -q '\[1 lines of output\]' "$work/out.txt"; then
    cat "$work/out.txt"
    echo "check_sdist_offline: expected the backend's one line, and no traceback" >&2
    exit 1
fi
grep '^ *agent-rollout: cannot build' "$work/out.txt" | sed 's/^ *//'

echo "== the same sdist with AGENT_ROLLOUT_PURE_WHEEL=1: the pure wheel, offline"
AGENT_ROLLOUT_PURE_WHEEL=1 "${pip_offline[@]}" --quiet "$sdist"
(cd "$work" && "$py" -W error -c '
import agent_rollout, importlib.util, os
assert agent_rollout.implementation() == "python", agent_rollout.implementation()
assert importlib.util.find_spec("agent_rollout._native") is None
here = os.path.dirname(agent_rollout.__file__)
assert os.path.exists(os.path.join(here, "_pure_python_wheel"))
print("installed from the sdist without Rust:", agent_rollout.__file__, agent_rollout.implementation())
')
