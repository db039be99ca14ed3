#!/usr/bin/env bash
# The real-GPU check: gpuenv's whole path on a Linux machine with an NVIDIA GPU and driver.
# Prints one PASS/FAIL/SKIP line per check and exits 1 if any check failed. Needs no network:
# it uses the machine's own CUDA Toolkit and, where installed, its Python's torch/JAX/CuPy.
#
#   scripts/gpu-check.sh                 # gpuenv and gpuenv-shim from PATH
#   GPUENV=target/release/gpuenv scripts/gpu-check.sh
#
# Variables: GPUENV (the gpuenv binary), PYTHON (default python3), CUDA_ROOT (the machine's
# toolkit; default: the nvcc on PATH, else /usr/local/cuda), KEEP=1 keeps the work dir.
# Everything gpuenv writes goes to a temporary GPUENV_HOME; nothing on the machine changes.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
GPUENV=${GPUENV:-$(command -v gpuenv || echo "$here/target/release/gpuenv")}
PYTHON=${PYTHON:-python3}
GPUENV=$(cd "$(dirname "$GPUENV")" && pwd)/$(basename "$GPUENV")
# The Python under test is the one on PATH for gpuenv too (the guard and the doctor look there).
case "$PYTHON" in */*) PATH="$(cd "$(dirname "$PYTHON")" && pwd):$PATH" ;; esac
[ -x "$GPUENV" ] || { echo "FAIL setup: no gpuenv binary at $GPUENV (set GPUENV)"; exit 1; }
[ -x "$(dirname "$GPUENV")/gpuenv-shim" ] || {
    echo "FAIL setup: gpuenv-shim is not beside $GPUENV"
    exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/gpuenv-gpu-check.XXXXXX")
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT
export GPUENV_HOME="$work/gpuenv-home"
# What the user's shell may have set must not steer the check (gpuenv's own variables).
unset GPUENV_TOOLCHAIN GPUENV_UPSTREAMS GPUENV_SYSTEM_CONFIG __GPUENV_STATE
log="$work/log"
failed=0

say() { printf '%s %s: %s\n' "$1" "$2" "$3"; }
pass() { say PASS "$@"; }
fail() {
    say FAIL "$@"
    failed=1
}
skip() { say SKIP "$@"; }
# Runs a command with a deadline, its output kept in $log for the detail lines.
t() { timeout "${TIMEOUT:-120}" "$@" >"$log" 2>&1; }
last() { tr '\n' ' ' <"$log" | tr -s ' ' | tail -c 400; }

# --- the machine -------------------------------------------------------------------------
if [ ! -r /proc/driver/nvidia/version ] || ! timeout 20 nvidia-smi -L >/dev/null 2>&1; then
    echo "FAIL setup: no NVIDIA driver or GPU here (/proc/driver/nvidia/version, nvidia-smi -L)"
    exit 1
fi
driver=$(timeout 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)
cc=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' ')
sm=sm_${cc/./}
if [ -z "${CUDA_ROOT:-}" ]; then
    if command -v nvcc >/dev/null; then
        CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    else
        CUDA_ROOT=/usr/local/cuda
    fi
fi
CUDA_ROOT=$(readlink -f "$CUDA_ROOT")
echo "# driver $driver, GPU compute capability $cc, toolkit $CUDA_ROOT, gpuenv $("$GPUENV" --version)"

# --- 1. discover the machine's toolkit ---------------------------------------------------
tc=
if t "$GPUENV" discover --register && "$GPUENV" list --json >"$work/list.json" 2>>"$log"; then
    tc=$("$PYTHON" - "$work/list.json" "$CUDA_ROOT" <<'PY'
import json, os, sys
rows = json.load(open(sys.argv[1]))
want = os.path.realpath(sys.argv[2])
print(next((r["name"] for r in rows if r["kind"] == "cuda" and os.path.realpath(r["root"]) == want), ""))
PY
)
fi
if [ -z "$tc" ] && [ -x "$CUDA_ROOT/bin/nvcc" ]; then
    # Not in a standard place: register it by hand, as a user would.
    ver=$("$CUDA_ROOT/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
    t "$GPUENV" link "cuda-$ver-machine" "$CUDA_ROOT" && tc="cuda-$ver-machine"
    [ -n "$tc" ] && fail discover "$CUDA_ROOT is not found by discover; linked as $tc"
elif [ -n "$tc" ]; then
    pass discover "$CUDA_ROOT registered as $tc"
fi
if [ -z "$tc" ]; then
    fail discover "no toolkit at $CUDA_ROOT could be registered: $(last)"
    exit 1
fi

# --- 2. pin --arch native ----------------------------------------------------------------
proj="$work/proj"
mkdir -p "$proj"
cd "$proj" || exit 1
if t "$GPUENV" pin "$tc" --arch native && grep -q "\"$cc\"" gpuenv.toml; then
    pass pin-native "gpuenv.toml pins $tc with cuda-arch $cc"
else
    fail pin-native "$(last) $(tr '\n' ' ' <gpuenv.toml 2>/dev/null)"
fi

# --- 3. compile through the proxy and run a kernel ----------------------------------------
cat >kernel.cu <<'CU'
#include <cstdio>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
int main() {
    float h[32];
    for (int i = 0; i < 32; i++) h[i] = i;
    float* d;
    cudaError_t e = cudaMalloc(&d, sizeof h);
    if (e) { printf("error %d %s\n", e, cudaGetErrorString(e)); return 2; }
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    twice<<<1, 32>>>(d);
    e = cudaGetLastError();
    if (!e) e = cudaDeviceSynchronize();
    if (e) { printf("error %d %s\n", e, cudaGetErrorString(e)); return 3; }
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 32; i++) if (h[i] != 2.0f * i) { printf("wrong\n"); return 4; }
    printf("ok\n");
    return 0;
}
CU
nvcc_via=$("$GPUENV" run -- sh -c 'command -v nvcc')
if t "$GPUENV" run -- nvcc kernel.cu -o native && t ./native && grep -qx ok "$log"; then
    pass compile-run "nvcc ($nvcc_via) built for the pin; the kernel ran on the GPU"
else
    fail compile-run "$(last)"
fi

# --- 4. audit agrees with what ran --------------------------------------------------------
# Audited outside the project and without the machine's TORCH_CUDA_ARCH_LIST, so only the
# GPU decides: a binary audit passes must run, one it refuses must fail.
cd "$work" || exit 1
agree=1
detail=
for build in "native:" "sm80sass:-gencode arch=compute_80,code=sm_80" \
    "ptx80:-gencode arch=compute_80,code=compute_80"; do
    name=${build%%:*}
    flags=${build#*:}
    if [ "$name" != native ]; then
        # shellcheck disable=SC2086
        (cd "$proj" && t "$GPUENV" run -- nvcc $flags kernel.cu -o "$work/$name") || {
            agree=0
            detail+=" $name: build failed ($(last))"
            continue
        }
    else
        cp "$proj/native" "$work/native" 2>/dev/null || continue
    fi
    env -u TORCH_CUDA_ARCH_LIST "$GPUENV" audit "./$name" >"$work/audit-$name" 2>&1
    audit=$?
    timeout 60 "./$name" >"$work/run-$name" 2>&1
    ran=$?
    predicted=$([ $audit = 0 ] && echo runs || echo fails)
    happened=$([ $ran = 0 ] && echo ran || echo "failed: $(tr '\n' ' ' <"$work/run-$name")")
    detail+=" $name: audit says $predicted, $happened;"
    if { [ $audit = 0 ] && [ $ran != 0 ]; } || { [ $audit != 0 ] && [ $ran = 0 ]; }; then
        agree=0
    fi
done
if [ $agree = 1 ]; then pass audit-agrees "$detail"; else fail audit-agrees "$detail"; fi

# --- 5. the guard refuses a mismatch --------------------------------------------------------
cd "$proj" || exit 1
mkdir -p torch-cu121/torch/include
printf "__version__ = '2.5.1+cu121'\ncuda = '12.1'\nhip = None\n" >torch-cu121/torch/version.py
t "$GPUENV" run -- nvcc -I torch-cu121/torch/include -DTORCH_EXTENSION_NAME=ext -c kernel.cu -o refused.o
status=$?
if [ $status = 1 ] && [ ! -e refused.o ] && grep -q "12.1" "$log"; then
    pass guard-refuses "an extension build for torch cu121 with $tc exits 1 before compiling"
else
    fail guard-refuses "exit $status: $(last)"
fi

# --- 6. a torch extension built through gpuenv runs -----------------------------------------
if "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.version.cuda else 1)' 2>/dev/null; then
    cat >"$work/ext.py" <<'PY'
import os, torch
from torch.utils.cpp_extension import load_inline, CUDA_HOME
cuda = r'''
__global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }
torch::Tensor twice(torch::Tensor x) {
    auto y = x.clone(); int n = y.numel();
    k<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), n);
    return y;
}
'''
m = load_inline("gpuenv_check_ext", cpp_sources="torch::Tensor twice(torch::Tensor x);",
                cuda_sources=cuda, functions=["twice"])
x = torch.arange(8, dtype=torch.float32, device="cuda")
print("ok" if torch.equal(m.twice(x), x * 2) else "wrong", "CUDA_HOME=" + str(CUDA_HOME))
PY
    if TIMEOUT=600 t "$GPUENV" run -- "$PYTHON" "$work/ext.py" && grep -q "^ok CUDA_HOME=$GPUENV_HOME/views/" "$log"; then
        pass torch-extension "load_inline built through $(grep -o 'CUDA_HOME=[^ ]*' "$log") and ran"
    else
        fail torch-extension "$(last)"
    fi
else
    skip torch-extension "no torch with CUDA in $PYTHON"
fi

# --- 7. torch, JAX, CuPy work inside gpuenv exactly as outside -------------------------------
cat >"$work/frameworks.py" <<'PY'
import json
r = {}
try:
    import torch
    r["torch"] = [torch.cuda.is_available(), torch.cuda.device_count(),
                  float((torch.ones(4, device="cuda") * 2).sum())]
except ImportError:
    pass
except Exception as e:
    r["torch"] = "error: " + type(e).__name__
try:
    import jax, jax.numpy as jnp
    r["jax"] = [jax.devices()[0].platform, float(jnp.sum(jnp.ones(4) * 2))]
except ImportError:
    pass
except Exception as e:
    r["jax"] = "error: " + type(e).__name__
try:
    import cupy
    r["cupy"] = [int(cupy.cuda.runtime.getDeviceCount()), float((cupy.ones(4) * 2).sum())]
except ImportError:
    pass
except Exception as e:
    r["cupy"] = "error: " + type(e).__name__
print(json.dumps(r, sort_keys=True))
PY
outside=$(timeout 300 "$PYTHON" "$work/frameworks.py" 2>"$work/fw-outside.err" | tail -n1)
inside=$(timeout 300 "$GPUENV" run -- "$PYTHON" "$work/frameworks.py" 2>"$work/fw-inside.err" | tail -n1)
hooked=$(timeout 300 bash --norc --noprofile -c 'eval "$("$0" env)" && exec "$@"' "$GPUENV" \
    "$PYTHON" "$work/frameworks.py" 2>"$work/fw-env.err" | tail -n1)
shadow=$(grep -h "Unable to load" "$work/fw-inside.err" "$work/fw-env.err" | head -n1)
if [ "$outside" = "{}" ]; then
    skip frameworks "none of torch, JAX, CuPy in $PYTHON"
elif [ -n "$outside" ] && [ "$outside" = "$inside" ] && [ "$outside" = "$hooked" ] && [ -z "$shadow" ]; then
    pass frameworks "same inside gpuenv run and gpuenv env as outside: $outside"
else
    fail frameworks "outside $outside; run $inside; env $hooked ${shadow:+; $shadow}"
fi

# --- 8. forward-compat and driver entries survive --------------------------------------------
compat=/usr/local/cuda/compat/lib.real:/usr/local/cuda-13.4/compat:/usr/local/nvidia/lib64:/.singularity.d/libs
got=$(LD_LIBRARY_PATH=$compat "$GPUENV" run -- printenv LD_LIBRARY_PATH 2>"$log")
missing=
for entry in ${compat//:/ }; do
    case ":$got:" in *":$entry:"*) ;; *) missing+=" $entry" ;; esac
done
if [ -z "$missing" ]; then
    pass compat-kept "LD_LIBRARY_PATH inside gpuenv run: $got"
else
    fail compat-kept "removed:$missing (got $got)"
fi

# --- 9. torch's CUDA_HOME guess with the hook and nothing pinned -----------------------------
if "$PYTHON" -c 'import torch' 2>/dev/null; then
    mkdir -p "$work/nopin"
    cd "$work/nopin" || exit 1
    probe='from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME)'
    without=$(env -u CUDA_HOME -u CUDA_PATH "$PYTHON" -c "$probe" 2>/dev/null | tail -n1)
    with=$(env -u CUDA_HOME -u CUDA_PATH bash --norc --noprofile -c \
        'eval "$("$0" hook bash)"; _gpuenv_hook; exec "$@"' "$GPUENV" "$PYTHON" -c "$probe" \
        2>/dev/null | tail -n1)
    case "$with" in
    "$GPUENV_HOME"*) fail torch-cuda-home "with the hook torch guesses $with (without: $without)" ;;
    "$without") pass torch-cuda-home "with the hook and no pin torch finds $with, as without gpuenv" ;;
    *) fail torch-cuda-home "with the hook $with, without $without" ;;
    esac
else
    skip torch-cuda-home "no torch in $PYTHON"
fi

# --- 10. the doctor, here ---------------------------------------------------------------------
cd "$proj" || exit 1
t "$GPUENV" doctor
status=$?
errors=$(grep -E '^error' "$log" | head -n5 | tr '\n' ' ')
if [ $status = 0 ]; then
    pass doctor "no error in the pinned project: $(tail -n1 "$log")"
else
    fail doctor "exit $status: ${errors:-$(last)}"
fi
echo "# doctor's report in the pinned project:"
sed 's/^/#   /' "$log"

exit $failed
