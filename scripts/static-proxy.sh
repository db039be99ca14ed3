#!/usr/bin/env bash
# Builds the proxy (gpuenv-shim) as the release wheels ship it, linked static against musl
# (docs/performance.md), and prints its path:
#
#   scripts/static-proxy.sh [PROFILE [ARCH]]
#       PROFILE: a cargo profile (default release); ARCH: x86_64 or aarch64 (default this
#       machine's)
#
# cargo-zigbuild and zig (the ziglang package) come from PyPI into the venv build-wheel.sh
# uses ($GPUENV_PY_TOOLS, default ~/.cache/gpuenv-py-tools); rustup adds the target if it is
# missing. The build goes to cargo's target directory (CARGO_TARGET_DIR moves it).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-release} arch=${2:-$(uname -m)}
case "$arch" in
x86_64 | aarch64) ;;
*) echo "static-proxy.sh: $arch: only x86_64 and aarch64 are built" >&2; exit 2 ;;
esac
tools="${GPUENV_PY_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuenv-py-tools}"
if [ ! -x "$tools/bin/cargo-zigbuild" ] || [ ! -x "$tools/bin/python-zig" ]; then
    [ -x "$tools/bin/pip" ] || python3 -m venv "$tools"
    "$tools/bin/pip" install -q --upgrade ziglang cargo-zigbuild >&2
fi
# cargo-zigbuild finds zig (the ziglang package) through the venv's python.
export PATH="$tools/bin:$PATH"
musl="$arch-unknown-linux-musl"
rustup target list --installed | grep -qx "$musl" || rustup target add "$musl" >&2
cargo zigbuild --quiet --profile "$profile" --target "$musl" --bin gpuenv-shim >&2
case "$profile" in dev) dir=debug ;; *) dir=$profile ;; esac
target=$(realpath "${CARGO_TARGET_DIR:-target}")
echo "$target/$musl/$dir/gpuenv-shim"
