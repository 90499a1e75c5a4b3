#!/usr/bin/env bash
# Fetch the NeMo Gym wheel (data only: it is never installed) and unpack it into DIR,
# for tests/test_backend_nemo_gym.py (point AGENT_ROLLOUT_NEMO_GYM_DATA at DIR).
#
#   scripts/fetch_nemo_gym_data.sh DIR
#
# NEMO_GYM_VERSION picks the release (default 0.4.0, the one the test's table of
# expected failures was measured on). Running it again with the same version is a
# no-op; the unpacking happens in a scratch folder that is renamed into place, so
# an interrupted run leaves no half-filled DIR behind.
set -euo pipefail

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dest=$1
version=${NEMO_GYM_VERSION:-0.4.0}
python=${PYTHON:-python3}
marker="$dest/nemo_gym-$version.dist-info"

if [ -d "$marker" ]; then
    echo "nemo-gym $version data already in $dest"
    exit 0
fi
if [ -e "$dest" ] && [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
    echo "$0: $dest exists and does not hold nemo-gym $version; remove it first" >&2
    exit 1
fi

parent=$(dirname -- "$dest")
mkdir -p -- "$parent"
scratch=$(mktemp -d "$parent/.nemo_gym_fetch.XXXXXX")
trap 'rm -rf -- "$scratch"' EXIT

# nemo-gym requires Python >= 3.12, so ask for a 3.12 wheel whatever runs pip.
"$python" -m pip download "nemo-gym==$version" --no-deps --only-binary=:all: \
    --python-version 3.12 --disable-pip-version-check -q -d "$scratch/wheel"
wheel=$(ls "$scratch"/wheel/nemo_gym-"$version"-*.whl)
"$python" -m zipfile -e "$wheel" "$scratch/tree"

if [ ! -d "$scratch/tree/nemo_gym-$version.dist-info" ]; then
    echo "$0: $wheel has no nemo_gym-$version.dist-info" >&2
    exit 1
fi
rmdir -- "$dest" 2>/dev/null || true
mv -- "$scratch/tree" "$dest"
echo "nemo-gym $version data unpacked into $dest ($(find "$dest" -name '*.jsonl' | wc -l) JSONL files)"
