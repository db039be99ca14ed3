#!/usr/bin/env bash
# gpuenv on a real example, in a scratch GPUENV_HOME (your own state is not touched):
# install CUDA 13.0 from NVIDIA's wheels on PyPI (downloads cached in
# ~/.cache/gpuenv-tests/downloads), pin it in a project, print its environment, compile and
# link a kernel through the proxy, and watch the torch guard refuse a mismatched extension
# build.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

cargo build --release --workspace --quiet
# Wherever cargo puts its builds (CARGO_TARGET_DIR, a config's build.target-dir), ask it.
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
gpuenv="$target/release/gpuenv"
[ -x "$gpuenv" ] || { echo "demo: no gpuenv binary at $gpuenv" >&2; exit 1; }
gpuenv() { "$gpuenv" "$@"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GPUENV_HOME="$work/gpuenv"
export GPUENV_DOWNLOAD_CACHE="${GPUENV_TEST_CACHE:-$HOME/.cache/gpuenv-tests}/downloads"
mkdir -p "$work/proj" && cd "$work/proj"

step gpuenv install cuda-13.0 --source pypi --profile minimal
gpuenv install cuda-13.0 --source pypi --profile minimal
step gpuenv list
gpuenv list
step gpuenv pin cuda-13.0 --arch 9.0
gpuenv pin cuda-13.0 --arch 9.0
cat gpuenv.toml
step gpuenv show
gpuenv show
step gpuenv env
gpuenv env

cat >k.cu <<'CU'
#include <cstdio>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
int main() {
    float* d = nullptr;
    printf("cudaMalloc: %s\n", cudaGetErrorName(cudaMalloc(&d, 16)));
    return 0;
}
CU
step gpuenv run -- nvcc --version
gpuenv run -- nvcc --version
step gpuenv run -- nvcc k.cu -o k -lcudart
gpuenv run -- nvcc k.cu -o k -lcudart
step 'gpuenv run -- ./k   # no GPU here: CUDA says so'
gpuenv run -- ./k

# A PyTorch extension build against a torch built for CUDA 12.1: refused before compiling.
site="$work/venv/lib/python3.11/site-packages"
mkdir -p "$site/torch/include"
printf "__version__ = '2.5.1+cu121'\ncuda = '12.1'\nhip = None\n" >"$site/torch/version.py"
step "\$CUDA_HOME/bin/nvcc -I$site/torch/include -DTORCH_EXTENSION_NAME=ext -c k.cu"
if gpuenv run -- sh -c "\"\$CUDA_HOME/bin/nvcc\" -I'$site/torch/include' -DTORCH_EXTENSION_NAME=ext -c k.cu"; then
    echo "unexpected: the guard let a mismatched build through" >&2
    exit 1
fi
printf '\nDone. This build is %s; to use gpuenv yourself, install it (gpuenv and its proxy go to\n~/.cargo/bin) and follow "First steps" in README.md:\n  cargo install --path .\n  ~/.cargo/bin/gpuenv --help\n' "$gpuenv"
