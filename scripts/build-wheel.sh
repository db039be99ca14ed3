#!/usr/bin/env bash
# Builds gpuenv's wheel and sdist (maturin, `bin` bindings: both binaries as scripts) into
# dist/ or $1, and checks both with `twine check --strict`. maturin and twine come from
# PyPI into a venv outside the checkout, made once: $GPUENV_PY_TOOLS, default
# ~/.cache/gpuenv-py-tools. The release build in target/ is reused when it is current.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
tools="${GPUENV_PY_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuenv-py-tools}"
if [ ! -x "$tools/bin/maturin" ] || [ ! -x "$tools/bin/twine" ]; then
    python3 -m venv "$tools"
    "$tools/bin/pip" install -q --upgrade maturin twine
fi
mkdir -p "$out"
rm -f "$out"/gpuenv-*.whl "$out"/gpuenv-*.tar.gz
# Two commands: `build --sdist` would build the wheel from the unpacked sdist in a temp
# dir, compiling everything again; in the tree it reuses target/release.
"$tools/bin/maturin" sdist --out "$out"
"$tools/bin/maturin" build --release --out "$out"
"$tools/bin/twine" check --strict "$out"/gpuenv-*.whl "$out"/gpuenv-*.tar.gz
ls "$out"/gpuenv-*
