#!/usr/bin/env bash
# Benchmark: what the gpuenv proxy adds to a tool call, side by side with rustup's proxy and
# two exec trampolines (a static C program and a dynamic Rust one that only exec the tool).
# The proxy is measured as `cargo install --path .` builds it (dynamic) and as a static-pie
# (`-C target-feature=+crt-static`, which needs an explicit --target so that proc-macros
# are still built for the host; see docs/performance.md), each as a view's `bin/nvcc`
# asked nothing (`nvcc`, as `nvcc --version`) and compiling (`nvcc -c x.cu -o x.o`: the
# proxy also reads gpuenv.toml and picks the host compiler), and as a shim.
# The machine may be shared: every command runs in each of ROUNDS rounds (default 3) and the
# lowest of its per-round medians counts, so a burst of load in one round does not decide.
# Needs hyperfine (apt-get install hyperfine) and makes the release builds.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v hyperfine >/dev/null || { echo "hyperfine is needed: apt-get install -y hyperfine" >&2; exit 2; }
rounds=${ROUNDS:-3}
cargo build --release --workspace --quiet
host=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --quiet --target "$host" --bin gpuenv-shim
static_shim="$PWD/target/$host/release/gpuenv-shim"
gpuenv="$PWD/target/release/gpuenv"

# rustup finds its toolchains through these; keep them before HOME moves to the sandbox.
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work/home"
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

# Two homes with the toolchain linked: one with the proxy as built by default, one with the
# static-pie proxy (the home's copy is a hard link to the build: unlink it first).
dyn="$work/gpuenv" static="$work/gpuenv-static"
GPUENV_HOME="$dyn" "$gpuenv" link cuda-12.4 "$root" 2>/dev/null
GPUENV_HOME="$static" "$gpuenv" link cuda-12.4 "$root" 2>/dev/null
rm "$static/bin/gpuenv-shim"
cp "$static_shim" "$static/bin/gpuenv-shim"
export GPUENV_HOME="$dyn"
mkdir -p "$work/proj/src"
printf '[toolchain]\ncuda = "12.4"\n' >"$work/proj/gpuenv.toml"
cd "$work/proj/src"

rustc_direct="$(rustc --print sysroot)/bin/rustc"
rustc_proxy="$(command -v rustc)"
compile="-c x.cu -o x.o"
# The first compile asks g++ its version; later ones read what it said.
"$dyn/views/cuda-12.4/bin/nvcc" $compile
"$static/views/cuda-12.4/bin/nvcc" $compile

for round in $(seq "$rounds"); do
    hyperfine -N --warmup 20 --runs 150 --export-json "$work/times-$round.json" \
        -n direct "$root/bin/tiny" \
        -n direct-compile "$root/bin/tiny $compile" \
        -n rust-empty "$work/rust-empty" \
        -n tramp-c-static "$work/tramp-c-static" \
        -n tramp-rust-dynamic "$work/tramp-rust-dynamic" \
        -n gpuenv-shim "$dyn/shims/tiny" \
        -n gpuenv-shim-static "$static/shims/tiny" \
        -n gpuenv-view-nvcc "$dyn/views/cuda-12.4/bin/nvcc" \
        -n gpuenv-view-nvcc-static "$static/views/cuda-12.4/bin/nvcc" \
        -n gpuenv-view-nvcc-compile "$dyn/views/cuda-12.4/bin/nvcc $compile" \
        -n gpuenv-view-nvcc-compile-static "$static/views/cuda-12.4/bin/nvcc $compile" \
        -n rustc-direct "$rustc_direct --version" \
        -n rustup-proxy "$rustc_proxy --version" >/dev/null 2>&1
done

python3 - "$work"/times-*.json <<'PY'
import json, sys
r = {}
for f in sys.argv[1:]:
    for x in json.load(open(f))["results"]:
        r[x["command"]] = min(r.get(x["command"], float("inf")), x["median"] * 1000)
direct, dc, rd = r["direct"], r["direct-compile"], r["rustc-direct"]
rows = [
    ("exec trampoline, static C", "tramp-c-static", direct),
    ("exec trampoline, dynamic Rust", "tramp-rust-dynamic", direct),
    ("gpuenv shim (resolves gpuenv.toml)", "gpuenv-shim", direct),
    ("gpuenv shim, static-pie", "gpuenv-shim-static", direct),
    ("gpuenv view bin/nvcc", "gpuenv-view-nvcc", direct),
    ("gpuenv view bin/nvcc, static-pie", "gpuenv-view-nvcc-static", direct),
    ("gpuenv view bin/nvcc -c", "gpuenv-view-nvcc-compile", dc),
    ("gpuenv view bin/nvcc -c, static-pie", "gpuenv-view-nvcc-compile-static", dc),
    ("rustup proxy (rustc --version)", "rustup-proxy", rd),
]
c = r["tramp-c-static"] - direct
print(f"a tool that runs for {direct:.3f} ms, called directly and through each proxy")
print(f"(the lowest of {len(sys.argv) - 1} per-round medians of 150 runs)")
print(f"{'through':<38}{'median':>9}{'adds':>9}{'vs C tramp':>12}")
for label, key, base in rows:
    adds = r[key] - base
    print(f"{label:<38}{r[key]:>7.3f}ms{adds:>7.3f}ms{adds / c:>11.1f}x")
print(f"(an empty Rust program costs {r['rust-empty']:.3f} ms here)")
for label, key, base in rows[4:8]:
    met = "met" if r[key] - base <= 0.9 else "NOT met"
    print(f"goal (adds at most 0.9 ms), {label}: {met}")
PY
