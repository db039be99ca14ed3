#!/usr/bin/env bash
# The peak memory of each step nvcc runs (cicc, ptxas, the host compiler, cudafe++), per
# target arch: what `facts/build_jobs.rs` sizes a build job by. Each step of `nvcc -dryrun`
# is run on its own under /usr/bin/time, so every figure is one process's peak RSS.
#
#   scripts/bench-build-memory.sh [NVCC] [ARCH...]      (default: the tests' CUDA 13 wheels)
#
# The kernel is the kind a PyTorch extension compiles: a dtype-dispatched elementwise op and
# reduction, and CUB's radix sort and scan instantiated for each dtype (CUB's templates are
# what make cicc and ptxas large; torch's own headers weigh on the host side).
set -euo pipefail
NVCC=${1:-$HOME/.cache/gpuenv-tests/cuda-13.0.2-wheels/nvidia/cu13/bin/nvcc}
shift || true
ARCHS=("$@")
[ ${#ARCHS[@]} -gt 0 ] || ARCHS=(75 80 86 89 90 100 120)
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian: time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > k.cu <<'CU'
#include <cub/cub.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

template <typename T>
__global__ void axpy_reduce(const T* x, T* y, float a, float* out, int n) {
    using Reduce = cub::BlockReduce<float, 256>;
    __shared__ typename Reduce::TempStorage tmp;
    float acc = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = a * static_cast<float>(x[i]) + static_cast<float>(y[i]);
        y[i] = static_cast<T>(v);
        acc += v * v;
    }
    float s = Reduce(tmp).Sum(acc);
    if (threadIdx.x == 0) atomicAdd(out, s);
}

template <typename K>
void sort_and_scan(K* keys, K* keys_out, int32_t* vals, int32_t* vals_out, int n) {
    size_t bytes = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, keys_out, vals, vals_out, n);
    cub::DeviceScan::InclusiveSum(nullptr, bytes, vals, vals_out, n);
    cub::DeviceReduce::Max(nullptr, bytes, keys, keys_out, n);
}

template <typename T>
void launch(const T* x, T* y, float* out, int n) {
    axpy_reduce<T><<<128, 256>>>(x, y, 2.f, out, n);
}

// What AT_DISPATCH_FLOATING_TYPES_AND2(Half, BFloat16, ...) instantiates.
template void launch<float>(const float*, float*, float*, int);
template void launch<double>(const double*, double*, float*, int);
template void launch<__half>(const __half*, __half*, float*, int);
template void launch<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, float*, int);
template void sort_and_scan<float>(float*, float*, int32_t*, int32_t*, int);
template void sort_and_scan<double>(double*, double*, int32_t*, int32_t*, int);
template void sort_and_scan<int64_t>(int64_t*, int64_t*, int32_t*, int32_t*, int);
template void sort_and_scan<uint32_t>(uint32_t*, uint32_t*, int32_t*, int32_t*, int);
CU
printf '%-6s %-10s %8s %8s\n' arch step 'peak MB' seconds
for arch in "${ARCHS[@]}"; do
    "$NVCC" -dryrun -c k.cu -o k.o -std=c++17 -O3 \
        -gencode "arch=compute_$arch,code=sm_$arch" 2>&1 | sed -n 's/^#\$ //p' > steps
    : > log
    while IFS= read -r line; do
        case $line in
            *=*) case ${line%%=*} in *[!A-Za-z0-9_]*) ;; *) declare -x "${line%%=*}=${line#*=}"; continue ;; esac ;;
        esac
        step=$(eval "set -- $line; basename \"\$1\"")
        [ "$step" = rm ] && { eval "$line" 2>/dev/null || true; continue; }
        eval "/usr/bin/time -f '%M %e' -o t $line" >/dev/null
        read -r kb secs < t
        echo "$step $kb $secs" >> log
    done < steps
    while read -r step kb secs; do
        printf '%-6s %-10s %8d %8s\n' "sm_$arch" "$step" $((kb / 1024)) "$secs"
    done < log
done
