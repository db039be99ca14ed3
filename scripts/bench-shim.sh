#!/usr/bin/env bash
# Benchmark: what the gpuenv proxy adds to a tool call, side by side with rustup's proxy and
# two exec trampolines (a static C program and a dynamic Rust one that only exec the tool).
# The proxy is measured as built by default (dynamic) and as a static-pie
# (`-C target-feature=+crt-static`, which needs an explicit --target so that proc-macros
# are still built for the host; see docs/performance.md).
# Prints median wall times (hyperfine) and what each adds to the direct call.
# Needs hyperfine (apt-get install hyperfine) and makes the release builds.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install -y hyperfine" >&2; exit 2; }
cargo build --release --workspace --quiet
host=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --quiet --target "$host" --bin gpuenv-shim
static_shim="$PWD/target/$host/release/gpuenv-shim"

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
# Trampolines that do nothing but exec the tool: the least any proxy can add.
printf '#include <unistd.h>\nint main(int c, char **v) { (void)c; execv("%s", v); return 127; }\n' "$root/bin/tiny" >"$work/tramp.c"
cc -O2 -static -o "$work/tramp-c-static" "$work/tramp.c"
printf 'use std::os::unix::process::CommandExt;\nfn main() { let _ = std::process::Command::new("%s").exec(); }\n' "$root/bin/tiny" >"$work/tramp.rs"
rustc -O -o "$work/tramp-rust-dynamic" "$work/tramp.rs"

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
    -n tramp-c-static "$work/tramp-c-static" \
    -n tramp-rust-dynamic "$work/tramp-rust-dynamic" \
    -n gpuenv-shim "$GPUENV_HOME/shims/tiny" \
    -n gpuenv-view-nvcc "$GPUENV_HOME/views/cuda-12.4/bin/nvcc" \
    -n rustc-direct "$rustc_direct --version" \
    -n rustup-proxy "$rustc_proxy --version" >/dev/null
# The same proxy, static: replace the home's copy (a hard link to the build: unlink first).
rm "$GPUENV_HOME/bin/gpuenv-shim"
cp "$static_shim" "$GPUENV_HOME/bin/gpuenv-shim"
json2="$work/times-static.json"
hyperfine -N --warmup 20 --runs 300 --export-json "$json2" \
    -n gpuenv-shim-static "$GPUENV_HOME/shims/tiny" \
    -n gpuenv-view-nvcc-static "$GPUENV_HOME/views/cuda-12.4/bin/nvcc" >/dev/null

python3 - "$json" "$json2" <<'PY'
import json, sys
r = {}
for f in sys.argv[1:]:
    r.update({x["command"]: x["median"] * 1000 for x in json.load(open(f))["results"]})
direct, rd = r["direct"], r["rustc-direct"]
rows = [
    ("exec trampoline, static C", "tramp-c-static", direct),
    ("exec trampoline, dynamic Rust", "tramp-rust-dynamic", direct),
    ("gpuenv shim (resolves gpuenv.toml)", "gpuenv-shim", direct),
    ("gpuenv shim, static-pie", "gpuenv-shim-static", direct),
    ("gpuenv view bin/nvcc", "gpuenv-view-nvcc", direct),
    ("gpuenv view bin/nvcc, static-pie", "gpuenv-view-nvcc-static", direct),
    ("rustup proxy (rustc --version)", "rustup-proxy", rd),
]
print(f"a tool that runs for {direct:.3f} ms, called directly and through each proxy (medians of 300)")
print(f"{'through':<38}{'median':>9}{'adds':>9}")
for label, key, base in rows:
    print(f"{label:<38}{r[key]:>7.3f}ms{r[key] - base:>7.3f}ms")
print(f"(an empty Rust program costs {r['rust-empty']:.3f} ms here)")
print(f"goal (the view's nvcc adds at most 0.9 ms): {'met' if r['gpuenv-view-nvcc-static'] - direct <= 0.9 else 'NOT met'}")
PY
