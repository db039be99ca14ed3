#!/usr/bin/env bash
# Benchmark: what the gpuenv proxy adds to a tool call, side by side with rustup's proxy.
# Prints median wall times (hyperfine) and the ratios through-proxy / direct.
# Needs hyperfine (apt-get install hyperfine) and a release build (this script makes one).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install -y hyperfine" >&2; exit 2; }
cargo build --release --workspace --quiet

# rustup finds its toolchains through these; keep them before HOME moves to the sandbox.
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GPUENV_HOME="$work/gpuenv" HOME="$work/home"
mkdir -p "$HOME"

# A toolchain whose tools are tiny real programs: one compiled C program as nvcc and tiny.
root="$work/cuda-12.4"
mkdir -p "$root/bin" "$root/lib64" "$root/include"
echo 'CUDA Version 12.4.131' >"$root/version.txt"
printf 'int main(void) { return 0; }\n' >"$work/tiny.c"
cc -O2 -o "$root/bin/tiny" "$work/tiny.c"
cp "$root/bin/tiny" "$root/bin/nvcc"
# The floor for any proxy written in Rust: an empty Rust program, exec'd.
printf 'fn main() {}\n' >"$work/empty.rs"
rustc -O -o "$work/rust-empty" "$work/empty.rs"

gpuenv=target/release/gpuenv
"$gpuenv" link cuda-12.4 "$root" 2>/dev/null
mkdir -p "$work/proj/src"
printf '[toolchain]\ncuda = "12.4"\n' >"$work/proj/gpuenv.toml"
cd "$work/proj/src"

rustc_direct="$(rustc --print sysroot)/bin/rustc"
rustc_proxy="$(command -v rustc)"

json="$work/times.json"
hyperfine -N --warmup 20 --runs 300 --export-json "$json" \
    -n direct "$root/bin/tiny" \
    -n rust-empty "$work/rust-empty" \
    -n gpuenv-shim "$GPUENV_HOME/shims/tiny" \
    -n gpuenv-view-nvcc "$GPUENV_HOME/views/cuda-12.4/bin/nvcc" \
    -n rustc-direct "$rustc_direct --version" \
    -n rustup-proxy "$rustc_proxy --version" >/dev/null

python3 - "$json" <<'PY'
import json, sys
r = {x["command"]: x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]}
print(f"{'command':<24}{'median ms':>10}")
for name, ms in r.items():
    print(f"{name:<24}{ms:>10.3f}")
shim, view, direct = r["gpuenv-shim"], r["gpuenv-view-nvcc"], r["direct"]
rd, rp = r["rustc-direct"], r["rustup-proxy"]
print()
print(f"gpuenv shim adds        {shim - direct:7.3f} ms   ratio {shim / direct:5.2f}x  (resolves gpuenv.toml)")
print(f"gpuenv view nvcc adds   {view - direct:7.3f} ms   ratio {view / direct:5.2f}x  (no resolution)")
print(f"an empty Rust exe costs  {r['rust-empty']:7.3f} ms   (the floor of one more exec of a Rust binary here)")
print(f"rustup proxy adds       {rp - rd:7.3f} ms   ratio {rp / rd:5.2f}x")
PY
