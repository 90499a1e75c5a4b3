#!/usr/bin/env bash
# Build every artefact this Linux x86_64 machine can make, check each, into OUT:
#   the sdist, the pure-Python wheel (py3-none-any), and stable-ABI (abi3, CPython 3.10+)
#   wheels for manylinux2014 x86_64 and aarch64 and musllinux_1_2 x86_64, cross-linked
#   with `maturin build --zig` (no docker image). `auditwheel show` must report the
#   expected tag for each platform wheel; `twine check --strict` must pass for all;
#   scripts/compare_wheels.py proves the pure wheel is the platform wheel minus _native.
#
#   scripts/build_wheels.sh [OUT]          (OUT defaults to dist/)
#   TARGETS="x86_64-unknown-linux-gnu" scripts/build_wheels.sh   to build fewer platform wheels
#
# Tools (maturin, ziglang, auditwheel, twine, build, packaging) come from TOOLS_PYTHON's
# environment; when TOOLS_PYTHON is unset they are installed into .venv-tools (from PyPI,
# through uv's cache; UV names the uv, default: uv on PATH). The Rust targets are added
# with rustup. .ci/run builds the x86_64 manylinux wheel only; the release workflow
# builds all three targets and checks each tag.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-dist}
TARGETS=${TARGETS:-"x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl"}

if [[ -z "${TOOLS_PYTHON:-}" ]]; then
    UV=${UV:-uv}
    [[ -x .venv-tools/bin/python ]] || "$UV" venv --quiet --seed --python python3 .venv-tools
    "$UV" pip install --quiet --python .venv-tools/bin/python \
        "maturin>=1.9.4,<2" ziglang auditwheel twine build packaging
    TOOLS_PYTHON=.venv-tools/bin/python
fi
tools_bin=$(dirname "$TOOLS_PYTHON")
export PATH="$tools_bin:$PATH"   # maturin finds zig as `python -m ziglang` here
# pyproject.toml's build-backend is our wrapper of maturin (build_backend/), not maturin:
# maturin's warning that pip would then not use it does not apply.
export MATURIN_NO_MISSING_BUILD_BACKEND_WARNING=1
mkdir -p "$OUT"

step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "sdist (through the in-tree backend)"
"$TOOLS_PYTHON" -m build --sdist --no-isolation --outdir "$OUT" . 2>&1 | tail -n 1

step "pure-Python wheel (the documented command)"
"$TOOLS_PYTHON" -m pip wheel . --no-deps --quiet --wheel-dir "$OUT" --config-settings pure=true
pure=$(ls "$OUT"/agent_rollout-*-py3-none-any.whl)
echo "$pure"

for target in $TARGETS; do
    case $target in
        *-linux-musl) compat=musllinux_1_2 ;;
        *-linux-gnu) compat=manylinux2014 ;;
        *) echo "build_wheels: no Linux compatibility tag for $target" >&2; exit 2 ;;
    esac
    arch=${target%%-*}
    step "abi3 wheel for $target ($compat)"
    rustup target add "$target" >/dev/null 2>&1 || rustup target list --installed | grep -qx "$target"
    maturin build --release --locked --zig --target "$target" --compatibility "$compat" --out "$OUT" 2>&1 \
        | grep -v '^ *Compiling ' | tail -n 3
    wheel=$(ls "$OUT"/agent_rollout-*-cp310-abi3-"$compat"_"$arch"*.whl 2>/dev/null | head -n 1)
    [[ -n "$wheel" ]] || { echo "build_wheels: no $compat $arch wheel in $OUT" >&2; exit 1; }
    want=${compat/manylinux2014/manylinux_2_17}_$arch
    if [[ $compat == musllinux* ]] && ! "$tools_bin/auditwheel" show "$wheel" >/dev/null 2>&1; then
        # auditwheel on a glibc host resolves musl's libc.so to glibc's linker script and
        # stops (ELFError); check instead what it would: the tag and the libraries needed.
        needed=$(unzip -p "$wheel" 'agent_rollout/_native*.so' > "$OUT/.native.so" \
            && readelf -d "$OUT/.native.so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
        rm -f "$OUT/.native.so"
        tag=$(unzip -p "$wheel" '*.dist-info/WHEEL' | sed -n 's/^Tag: //p' | tr '\n' ' ')
        echo "auditwheel cannot analyse a musl wheel on this glibc host; WHEEL tag: $tag; needs: $needed"
        [[ "$tag" == "cp310-abi3-${want} " && "$needed" == "libc.so " ]] || {
            echo "build_wheels: $wheel is not a plain musllinux wheel" >&2
            exit 1
        }
        continue
    fi
    shown=$("$tools_bin/auditwheel" show "$wheel")
    echo "$shown" | tr '\n' ' ' | grep -q "consistent with the following platform tag: \"$want\"" || {
        echo "$shown" >&2
        echo "build_wheels: auditwheel does not confirm $want for $wheel" >&2
        exit 1
    }
    echo "auditwheel: $(basename "$wheel") is consistent with $want"
    if [[ $target == x86_64-unknown-linux-gnu ]]; then
        step "pure wheel = this wheel minus the Rust engine"
        "$TOOLS_PYTHON" scripts/compare_wheels.py "$wheel" "$pure"
    fi
done

step "twine check --strict"
# --no-color: twine colours its verdicts whether or not it writes to a terminal.
"$tools_bin/twine" --no-color check --strict "$OUT"/*.whl "$OUT"/*.tar.gz
ls -l "$OUT"
