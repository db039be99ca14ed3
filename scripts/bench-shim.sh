#!/usr/bin/env bash
# Benchmark: what the gpuenv proxy adds to a tool call, side by side with rustup's proxy and
# two exec trampolines (a static C program and a dynamic Rust one that only exec the tool).
# The proxy is measured as `cargo install --path .` builds it (dynamic, glibc) and as the
# release wheels ship it (static, musl: `cargo zigbuild --release --target
# <arch>-unknown-linux-musl`, as scripts/build-wheel.sh --zig builds it; see
# docs/performance.md), each as a view's `bin/nvcc` asked nothing (`nvcc`, as `nvcc
# --version`) and compiling (`nvcc -c x.cu -o x.o`: the proxy also reads gpuenv.toml and
# picks the host compiler), and as a shim.
# Each home is measured as its own user's (GPUENV_HOME names it): a view of another home
# is used as an upstream's, which reads the user's own settings too.
# The machine may be shared: the commands take turns (one run of each, then the next round,
# RUNS rounds, default 600) and each one's median counts, so a burst of load falls on all
# of them alike. The runner is a small C program (posix_spawn and wait, stdout to /dev/null).
# BEFORE=<a gpuenv-shim built from another commit> adds its rows (a third home), to compare
# a change in one run. NO_STATIC=1 skips the static build (it needs cargo-zigbuild and zig
# from PyPI, which this script installs as build-wheel.sh does): its rows then run a second
# copy of the default build, a control for the noise between two homes.
# `scripts/bench-shim.sh --instructions` counts instructions instead (valgrind's callgrind,
# up to the exec of the tool, the loader included): a count the machine's load does not
# move, one run of each.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=time
[ "${1:-}" = --instructions ] && mode=instructions

runs=${RUNS:-600}
target="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release --workspace --quiet
if [ "${NO_STATIC:-0}" = 1 ]; then
    static_shim="$target/release/gpuenv-shim"
else
    static_shim=$(scripts/static-proxy.sh release)
fi
gpuenv="$target/release/gpuenv"

# rustup finds its toolchains through these; keep them before HOME moves to the sandbox.
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work/home"
mkdir -p "$HOME"

# A toolchain whose tools are tiny real programs: one compiled C program as nvcc and as
# cuobjdump (a toolkit program: only those get shims).
root="$work/cuda-12.4"
mkdir -p "$root/bin" "$root/lib64" "$root/include"
echo 'CUDA Version 12.4.131' >"$root/version.txt"
printf 'int main(void) { return 0; }\n' >"$work/tiny.c"
cc -O2 -o "$root/bin/cuobjdump" "$work/tiny.c"
cp "$root/bin/cuobjdump" "$root/bin/nvcc"
# The floor for any proxy written in Rust: an empty Rust program, exec'd.
printf 'fn main() {}\n' >"$work/empty.rs"
rustc -O -o "$work/rust-empty" "$work/empty.rs"
# The runner: `bench RUNS name=command …`, prints `name median-ms` per command.
cc -O2 -o "$work/bench" scripts/bench-runner.c
# Trampolines that do nothing but exec the tool: the least any proxy can add.
printf '#include <unistd.h>\nint main(int c, char **v) { (void)c; execv("%s", v); return 127; }\n' "$root/bin/cuobjdump" >"$work/tramp.c"
cc -O2 -static -o "$work/tramp-c-static" "$work/tramp.c"
printf 'use std::os::unix::process::CommandExt;\nfn main() { let _ = std::process::Command::new("%s").exec(); }\n' "$root/bin/cuobjdump" >"$work/tramp.rs"
rustc -O -o "$work/tramp-rust-dynamic" "$work/tramp.rs"

# Two homes with the toolchain linked: one with the proxy as built by default, one with the
# static musl proxy. Each home gets its own copy of its proxy (the home's is a hard link to
# the build: unlink it first), as an install writes it: run from the linker's output file
# itself, the same proxy took 0.06-0.11 ms more per call than from a copy (Linux 6.18,
# ext4), a difference the rows compared must not have.
dyn="$work/gpuenv" static="$work/gpuenv-static"
GPUENV_HOME="$dyn" "$gpuenv" link cuda-12.4 "$root" 2>/dev/null
GPUENV_HOME="$static" "$gpuenv" link cuda-12.4 "$root" 2>/dev/null
rm "$dyn/bin/gpuenv-shim" "$static/bin/gpuenv-shim"
cp "$target/release/gpuenv-shim" "$dyn/bin/gpuenv-shim"
cp "$static_shim" "$static/bin/gpuenv-shim"
before=()
if [ -n "${BEFORE:-}" ]; then
    old="$work/gpuenv-before"
    GPUENV_HOME="$old" "$gpuenv" link cuda-12.4 "$root" 2>/dev/null
    rm "$old/bin/gpuenv-shim"
    cp "$BEFORE" "$old/bin/gpuenv-shim"
    before=("gpuenv-shim-before=GPUENV_HOME=$old $old/shims/cuobjdump"
        "gpuenv-view-nvcc-before=GPUENV_HOME=$old $old/views/cuda-12.4/bin/nvcc"
        "gpuenv-view-nvcc-compile-before=GPUENV_HOME=$old $old/views/cuda-12.4/bin/nvcc -c x.cu -o x.o")
fi
export GPUENV_HOME="$dyn"
mkdir -p "$work/proj/src"
printf '[toolchain]\ncuda = "12.4"\n' >"$work/proj/gpuenv.toml"
cd "$work/proj/src"

rustc_direct="$(rustc --print sysroot)/bin/rustc"
rustc_proxy="$(command -v rustc)"
compile="-c x.cu -o x.o"
# The first compile asks g++ its version; later ones read what it said.
"$dyn/views/cuda-12.4/bin/nvcc" $compile
GPUENV_HOME="$static" "$static/views/cuda-12.4/bin/nvcc" $compile

if [ $mode = instructions ]; then
    # count NAME [VAR=VALUE] COMMAND…: every dump up to and at the exec, summed.
    count() {
        local name=$1 out="$work/cg-$1"
        shift
        mkdir -p "$out"
        local vars=()
        while [[ $1 == *=* && $1 != /* ]]; do vars+=("$1"); shift; done
        env "${vars[@]}" valgrind --tool=callgrind --dump-before=execve \
            --callgrind-out-file="$out/cg.%p" "$@" >/dev/null 2>"$out/log"
        printf '%-38s%12s\n' "$name" "$(cat "$out"/cg.* | sed -n 's/^summary: //p' | awk '{s += $1} END {print s}')"
    }
    # Settings older than two seconds get their compact copy at the next call: each call
    # once first, so what is counted is a call like every later one.
    sleep 2.2
    for h in "$dyn" "$static" ${BEFORE:+"$old"}; do
        GPUENV_HOME="$h" "$h/shims/cuobjdump"
        GPUENV_HOME="$h" "$h/views/cuda-12.4/bin/nvcc" $compile
    done
    echo "instructions up to the exec of the tool (callgrind, loader included)"
    count "exec trampoline, static C" "$work/tramp-c-static"
    count "exec trampoline, dynamic Rust" "$work/tramp-rust-dynamic"
    count "gpuenv shim" "$dyn/shims/cuobjdump"
    count "gpuenv shim, static musl" GPUENV_HOME="$static" "$static/shims/cuobjdump"
    count "gpuenv view bin/nvcc" "$dyn/views/cuda-12.4/bin/nvcc"
    count "gpuenv view bin/nvcc, static musl" GPUENV_HOME="$static" "$static/views/cuda-12.4/bin/nvcc"
    count "gpuenv view bin/nvcc -c" "$dyn/views/cuda-12.4/bin/nvcc" $compile
    if [ -n "${BEFORE:-}" ]; then
        count "BEFORE's shim" GPUENV_HOME="$old" "$old/shims/cuobjdump"
        count "BEFORE's view bin/nvcc" GPUENV_HOME="$old" "$old/views/cuda-12.4/bin/nvcc"
        count "BEFORE's view bin/nvcc -c" GPUENV_HOME="$old" "$old/views/cuda-12.4/bin/nvcc" $compile
    fi
    exit 0
fi

"$work/bench" "$runs" \
    "direct=$root/bin/cuobjdump" \
    "direct-compile=$root/bin/cuobjdump $compile" \
    "rust-empty=$work/rust-empty" \
    "tramp-c-static=$work/tramp-c-static" \
    "tramp-rust-dynamic=$work/tramp-rust-dynamic" \
    "gpuenv-shim=$dyn/shims/cuobjdump" \
    "gpuenv-shim-static=GPUENV_HOME=$static $static/shims/cuobjdump" \
    "gpuenv-view-nvcc=$dyn/views/cuda-12.4/bin/nvcc" \
    "gpuenv-view-nvcc-static=GPUENV_HOME=$static $static/views/cuda-12.4/bin/nvcc" \
    "gpuenv-view-nvcc-compile=$dyn/views/cuda-12.4/bin/nvcc $compile" \
    "gpuenv-view-nvcc-compile-static=GPUENV_HOME=$static $static/views/cuda-12.4/bin/nvcc $compile" \
    "rustc-direct=$rustc_direct --version" \
    "rustup-proxy=$rustc_proxy --version" "${before[@]}" >"$work/times.txt"

python3 - "$work/times.txt" "$runs" <<'PY'
import os
import sys
r = {}
for line in open(sys.argv[1]):
    name, ms = line.split()
    r[name] = float(ms)
direct, dc, rd = r["direct"], r["direct-compile"], r["rustc-direct"]
rows = [
    ("exec trampoline, static C", "tramp-c-static", direct),
    ("exec trampoline, dynamic Rust", "tramp-rust-dynamic", direct),
    ("gpuenv shim (resolves gpuenv.toml)", "gpuenv-shim", direct),
    ("gpuenv shim, static musl", "gpuenv-shim-static", direct),
    ("gpuenv view bin/nvcc", "gpuenv-view-nvcc", direct),
    ("gpuenv view bin/nvcc, static musl", "gpuenv-view-nvcc-static", direct),
    ("gpuenv view bin/nvcc -c", "gpuenv-view-nvcc-compile", dc),
    ("gpuenv view bin/nvcc -c, static musl", "gpuenv-view-nvcc-compile-static", dc),
    ("rustup proxy (rustc --version)", "rustup-proxy", rd),
]
if "gpuenv-view-nvcc-before" in r:
    rows[6:6] = [("BEFORE's shim", "gpuenv-shim-before", direct),
                 ("BEFORE's view bin/nvcc", "gpuenv-view-nvcc-before", direct),
                 ("BEFORE's view bin/nvcc -c", "gpuenv-view-nvcc-compile-before", dc)]
c = r["tramp-c-static"] - direct
print(f"a tool that runs for {direct:.3f} ms, called directly and through each proxy")
print(f"(medians of {sys.argv[2]} runs each, the commands taking turns)")
print(f"{'through':<38}{'median':>9}{'adds':>9}{'vs C tramp':>12}")
for label, key, base in rows:
    adds = r[key] - base
    print(f"{label:<38}{r[key]:>7.3f}ms{adds:>7.3f}ms{adds / c:>11.1f}x")
print(f"(an empty Rust program costs {r['rust-empty']:.3f} ms here)")
if os.environ.get("NO_STATIC") == "1":
    print("(NO_STATIC=1: the static musl rows are a second copy of the default build)")
for label, key, base in [x for x in rows if x[1].startswith("gpuenv-view") and "before" not in x[1]]:
    goal = 0.5 if key.endswith("-static") else 0.9
    met = "met" if r[key] - base <= goal else "NOT met"
    print(f"goal (adds at most {goal} ms), {label}: {met}")
PY
