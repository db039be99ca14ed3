#!/usr/bin/env bash
# Benchmark: what the shell hook costs at a prompt, side by side with direnv.
# Times `gpuenv hook-env --shell bash` and `direnv export bash` in the same project, which
# pins CUDA 12.4 (gpuenv.toml) and has an allowed .envrc exporting the same variables:
#   no change   the last prompt was in this directory (its state exported), nothing to do;
#   switch      the last prompt was in another directory, the project's environment is applied.
# Prints median wall times (hyperfine) and the ratios gpuenv / direnv.
# Needs hyperfine and direnv (apt-get install -y hyperfine direnv) and a release build (this
# script makes one).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in hyperfine direnv; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "${missing[*]} needed: apt-get install -y hyperfine direnv" >&2
    exit 2
fi
cargo build --release --workspace --quiet
gpuenv="$PWD/target/release/gpuenv"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The floor for any hook written in Rust: an empty Rust program, exec'd.
printf 'fn main() {}\n' >"$work/empty.rs"
rustc -O -o "$work/rust-empty" "$work/empty.rs"

export HOME="$work/home" GPUENV_HOME="$work/gpuenv"
export XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share"
export XDG_CACHE_HOME="$work/home/.cache"
mkdir -p "$HOME"
# Nothing from the calling shell's hooks: no previous state, no active toolchain.
unset __GPUENV_STATE GPUENV_TOOLCHAIN GPUENV_ACTIVE VIRTUAL_ENV CONDA_PREFIX "${!DIRENV_@}"
export PATH=/usr/local/bin:/usr/bin:/bin DIRENV_LOG_FORMAT=

root="$work/cuda-12.4"
mkdir -p "$root/bin" "$root/lib64" "$root/include"
echo 'CUDA Version 12.4.131' >"$root/version.txt"
printf '#!/bin/sh\necho "Cuda compilation tools, release 12.4, V12.4.131"\n' >"$root/bin/nvcc"
chmod +x "$root/bin/nvcc"
"$gpuenv" link cuda-12.4 "$root" 2>/dev/null

proj="$work/proj"
mkdir -p "$proj/src" "$work/elsewhere"
printf '[toolchain]\ncuda = "12.4"\n' >"$proj/gpuenv.toml"
# The .envrc exports exactly what gpuenv sets on entering (its own state variable aside).
(cd "$proj/src" && "$gpuenv" hook-env --shell bash) | grep -v '^export __GPUENV_STATE=' >"$proj/.envrc"
direnv allow "$proj"

hook_gpuenv="$gpuenv hook-env --shell bash"
hook_direnv="direnv export bash"

# Rounds of every benchmark in turn, so that load from elsewhere on the machine falls on
# all of them alike; the medians are over the runs of all rounds.
rounds=5 runs=60
time_it() {
    hyperfine -N --warmup 20 --runs "$runs" --export-json "$work/$1-$round.json" -n "$1" "$2" \
        >/dev/null 2>"$work/$1.log" || { cat "$work/$1.log" >&2; exit 1; }
}

# bench NAME LAST_PROMPT_DIR DIR CMD nothing|switch: times CMD in DIR with the state that a
# prompt in LAST_PROMPT_DIR left behind, after checking that CMD takes the intended path
# (prints nothing, or prints the project's environment).
bench() {
    local name=$1 last_prompt=$2 dir=$3 cmd=$4 expect=$5 out
    (
        cd "$last_prompt"
        eval "$($cmd)"
        cd "$dir"
        out=$($cmd)
        case "$expect" in
            nothing) [ -z "$out" ] || { echo "$name: expected no output, got: $out" >&2; exit 1; } ;;
            switch) [[ "$out" == *"CUDA_HOME="*"/views/cuda-12.4"* ]] || { echo "$name: expected the project's environment, got: $out" >&2; exit 1; } ;;
        esac
        time_it "$name" "$cmd"
    )
}

for round in $(seq "$rounds"); do
    bench gpuenv-no-change "$proj/src" "$proj/src" "$hook_gpuenv" nothing
    bench direnv-no-change "$proj/src" "$proj/src" "$hook_direnv" nothing
    bench gpuenv-switch "$work/elsewhere" "$proj/src" "$hook_gpuenv" switch
    bench direnv-switch "$work/elsewhere" "$proj/src" "$hook_direnv" switch
    time_it true /bin/true
    time_it rust-empty "$work/rust-empty"
done

python3 - "$work" "$((rounds * runs))" <<'PY'
import json, pathlib, statistics, sys
times = {}
for f in pathlib.Path(sys.argv[1]).glob("*.json"):
    for r in json.load(open(f))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
ms = {name: statistics.median(t) * 1000 for name, t in times.items()}
print(f"{'prompt':<12}{'gpuenv ms':>11}{'direnv ms':>11}{'gpuenv/direnv':>15}")
for path in ("no-change", "switch"):
    g, d = ms[f"gpuenv-{path}"], ms[f"direnv-{path}"]
    print(f"{path:<12}{g:>11.3f}{d:>11.3f}{g / d:>14.2f}x")
print(f"(medians of {sys.argv[2]} runs; the floor of starting a process here: /bin/true "
      f"{ms['true']:.3f} ms, an empty Rust program {ms['rust-empty']:.3f} ms)")
g, d = ms["gpuenv-no-change"], ms["direnv-no-change"]
met = g * 2 <= d and g < 5
print(f"target (no-change at least 2x faster than direnv, well under 5 ms): {'met' if met else 'NOT met'}")
PY
