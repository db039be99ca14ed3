#!/usr/bin/env bash
# Benchmark: what a prompt costs the shell, side by side with direnv and mise. Inside one
# real bash per tool, the tool's own prompt function (what PROMPT_COMMAND runs) is called
# 300 times and each call is timed with $EPOCHREALTIME:
#   no change   in a project pinned to CUDA 12.4, the prompt after a command that changed
#               nothing (what almost every prompt is);
#   switch      `cd` back and forth between the project and a plain directory, so every
#               prompt applies or undoes the project's environment (the `cd` is timed too:
#               mise does its work in a `cd` wrapper). gpuenv's hook comes back to the
#               directory before the last run without a process (the way back, `hop`);
#   round       `cd` around three directories (the project and two plain ones), each `cd`
#               to a directory other than the one before. gpuenv's run outside projects
#               holds in every directory without a toolchain file above it, and the way
#               back from the project leads to any of them: after the first round, no
#               process;
#   projects    `cd` around three projects (each pinned to CUDA 12.4), each `cd` to a
#               project other than the one before: every prompt starts a process for
#               gpuenv (its proxy, below; no check and no way back applies). The prompt
#               after a `cd` that needs gpuenv.
# direnv's .envrc and mise's mise.toml export the same variables gpuenv sets.
# gpuenv runs as the release wheels ship it: each prompt after a change runs the proxy beside
# it (`gpuenv-shim hook-env`), there linked static against musl (scripts/static-proxy.sh,
# which needs cargo-zigbuild and zig from PyPI; NO_STATIC=1 skips it). The source build
# (`cargo install`, `uv tool install .`: its proxy is dynamic) gets a line of its own.
# The floor of a prompt that starts a process is printed beside: gpuenv's own hook with a static
# program that does nothing in the proxy's place (built with zig, as the proxy is), so the
# `projects` row minus it is what the proxy and its answer cost.
# BEFORE=<a gpuenv built from another commit> adds its row (its own GPUENV_HOME, the same
# toolkit linked), to compare a change in one run.
# Needs direnv (apt-get install -y direnv) and mise from npm (this script installs it under
# ~/.cache/gpuenv-bench with `npm install @jdxcode/mise` unless MISE is set); makes a release
# build.
set -euo pipefail
cd "$(dirname "$0")/.."

calls=${CALLS:-300} rounds=${ROUNDS:-5}
command -v direnv >/dev/null || { echo "direnv needed: apt-get install -y direnv" >&2; exit 2; }
if [ -z "${MISE:-}" ]; then
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpuenv-bench"
    MISE=$(find "$cache/node_modules" -path '*/bin/mise' -type f 2>/dev/null | head -n1 || true)
    if [ -z "$MISE" ]; then
        command -v npm >/dev/null || { echo "npm needed to install mise (or set MISE=/path/to/mise)" >&2; exit 2; }
        mkdir -p "$cache"
        (cd "$cache" && npm install --silent --no-audit --no-fund @jdxcode/mise >/dev/null)
        MISE=$(find "$cache/node_modules" -path '*/bin/mise' -type f | head -n1)
    fi
fi
cargo build --release --workspace --quiet
source_build="$PWD/target/release/gpuenv"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cp "$source_build" "$work/bin/gpuenv"
if [ "${NO_STATIC:-0}" = 1 ]; then
    cp "$PWD/target/release/gpuenv-shim" "$work/bin/gpuenv-shim"
else
    cp "$(scripts/static-proxy.sh release)" "$work/bin/gpuenv-shim"
    printf 'int main(void) { return 0; }\n' >"$work/noop.c"
    "${GPUENV_PY_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuenv-py-tools}/bin/python-zig" cc \
        -target "$(uname -m)-linux-musl" -O2 -static -s "$work/noop.c" -o "$work/bin/noop"
fi
gpuenv="$work/bin/gpuenv"

export HOME="$work/home" GPUENV_HOME="$work/gpuenv"
export XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share"
export XDG_CACHE_HOME="$work/home/.cache" XDG_STATE_HOME="$work/home/.local/state"
mkdir -p "$HOME"
# Nothing from the calling shell's hooks.
unset __GPUENV_STATE GPUENV_TOOLCHAIN GPUENV_ACTIVE VIRTUAL_ENV CONDA_PREFIX PROMPT_COMMAND
unset "${!DIRENV_@}" "${!MISE_@}" "${!__MISE_@}"
export PATH=/usr/local/bin:/usr/bin:/bin DIRENV_LOG_FORMAT=

root="$work/cuda-12.4"
mkdir -p "$root/bin" "$root/lib64" "$root/include"
echo 'CUDA Version 12.4.131' >"$root/version.txt"
printf '#!/bin/sh\necho "Cuda compilation tools, release 12.4, V12.4.131"\n' >"$root/bin/nvcc"
chmod +x "$root/bin/nvcc"
"$gpuenv" link cuda-12.4 "$root" 2>/dev/null
[ -z "${BEFORE:-}" ] || GPUENV_HOME="$work/gpuenv-before" "$BEFORE" link cuda-12.4 "$root" 2>/dev/null
GPUENV_HOME="$work/gpuenv-source" "$source_build" link cuda-12.4 "$root" 2>/dev/null

proj="$work/proj" elsewhere="$work/elsewhere"
mkdir -p "$proj/src" "$elsewhere" "$elsewhere-2"
printf '[toolchain]\ncuda = "12.4"\n' >"$proj/gpuenv.toml"
for p in "$proj-2" "$proj-3"; do mkdir -p "$p/src" && cp "$proj/gpuenv.toml" "$p/"; done
# The other tools export exactly what gpuenv sets on entering (its state variable aside).
wanted=$(cd "$proj/src" && "$gpuenv" env --shell bash)
printf '%s\n' "$wanted" >"$proj/.envrc"
direnv allow "$proj"
{
    echo '[env]'
    printf '%s\n' "$wanted" | sed -n "s/^export \([A-Za-z_]*\)='\(.*\)'$/\1 = \"\2\"/p" | grep -v '^PATH ='
    view_bin=$(printf '%s\n' "$wanted" | sed -n "s/^export CUDACXX='\(.*\)\/nvcc'$/\1/p")
    echo "_.path = [\"$view_bin\"]"
} >"$proj/mise.toml"
"$MISE" trust -q "$proj/mise.toml"
for p in "$proj-2" "$proj-3"; do
    cp "$proj/.envrc" "$proj/mise.toml" "$p/"
    direnv allow "$p"
    "$MISE" trust -q "$p/mise.toml"
done
# Files older than a second: gpuenv's check trusts their modification times from then on.
sleep 1.2

# run TOOL HOOK-LINE PROMPT-FUNCTION SCENARIO [APPLIES]: one bash, the hook loaded as its rc
# file would, prints one line of per-call milliseconds. APPLIES=no for the floor's hook,
# whose program answers nothing.
run() {
    local tool=$1 hook=$2 fn=$3 scenario=$4 applies=${5:-yes}
    HOOK=$hook FN=$fn SCENARIO=$scenario PROJ="$proj/src" ELSEWHERE=$elsewhere CALLS=$calls APPLIES=$applies \
        bash --norc --noprofile -c '
        eval "$HOOK"
        cd "$PROJ"; $FN; $FN
        [[ $APPLIES == no || -n ${CUDA_HOME:-} ]] || { echo "'"$tool"': the hook did not apply the project" >&2; exit 1; }
        out=()
        for ((i = 0; i < CALLS; i++)); do
            # A switch times the `cd` too: mise wraps `cd` and does its work there.
            t0=$EPOCHREALTIME
            if [[ $SCENARIO == switch ]]; then
                if ((i % 2)); then cd "$PROJ"; else cd "$ELSEWHERE"; fi
            elif [[ $SCENARIO == round ]]; then
                case $((i % 3)) in
                    0) cd "$ELSEWHERE" ;;
                    1) cd "$ELSEWHERE-2" ;;
                    2) cd "$PROJ" ;;
                esac
            elif [[ $SCENARIO == projects ]]; then
                case $((i % 3)) in
                    0) cd "${PROJ%/proj/src}/proj-2/src" ;;
                    1) cd "${PROJ%/proj/src}/proj-3/src" ;;
                    2) cd "$PROJ" ;;
                esac
            fi
            $FN
            t1=$EPOCHREALTIME
            out+=("$(( (${t1/./} - ${t0/./}) ))")
        done
        [[ $SCENARIO != no-change || -n ${CUDA_HOME:-} ]] || { echo "'"$tool"': lost the project" >&2; exit 1; }
        echo "${out[*]}"
    '
}

floor_hook='_true() { /bin/true; }'
# gpuenv's hook, the proxy's start replaced by the static no-op's: every prompt starts it.
noop_hook=
if [ -x "$work/bin/noop" ]; then
    noop_hook=$("$gpuenv" hook bash | sed "s|exec '$work/bin/gpuenv-shim' hook-env --shell bash|exec '$work/bin/noop'|")
    grep -q "exec '$work/bin/noop'" <<<"$noop_hook" || { echo "bench-hook.sh: the hook starts the proxy otherwise now" >&2; exit 1; }
fi
for round in $(seq "$rounds"); do
    for scenario in no-change switch round projects; do
        run gpuenv "eval \"\$('$gpuenv' hook bash)\"" _gpuenv_hook $scenario >"$work/gpuenv-$scenario-$round"
        [ -z "${BEFORE:-}" ] || GPUENV_HOME="$work/gpuenv-before" run before "eval \"\$('$BEFORE' hook bash)\"" _gpuenv_hook $scenario >"$work/before-$scenario-$round"
        GPUENV_HOME="$work/gpuenv-source" run source "eval \"\$('$source_build' hook bash)\"" _gpuenv_hook $scenario >"$work/source-$scenario-$round"
        run direnv "eval \"\$(direnv hook bash)\"" _direnv_hook $scenario >"$work/direnv-$scenario-$round"
        run mise "eval \"\$('$MISE' activate bash)\"" _mise_hook_prompt_command $scenario >"$work/mise-$scenario-$round"
    done
    [ -z "$noop_hook" ] || run hook-floor "$noop_hook" _gpuenv_hook projects no >"$work/hook-floor-$round"
    HOOK=$floor_hook bash --norc --noprofile -c 'eval "$HOOK"; out=(); for ((i = 0; i < '"$calls"'; i++)); do t0=$EPOCHREALTIME; _true; t1=$EPOCHREALTIME; out+=("$(( (${t1/./} - ${t0/./}) ))"); done; echo "${out[*]}"' >"$work/floor-$round"
done

python3 - "$work" "$calls" "$rounds" <<'PY'
import pathlib, statistics, sys
work, calls, rounds = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def ms(prefix):
    us = [int(x) for f in work.glob(prefix + "-*") for x in f.read_text().split()]
    return statistics.median(us) / 1000
print(f"a prompt in bash: median of {calls} calls x {rounds} rounds of each tool's prompt function")
print(f"{'prompt':<11}{'gpuenv':>10}{'mise':>10}{'direnv':>10}{'mise/gpuenv':>13}{'direnv/gpuenv':>15}")
res = {}
for s in ("no-change", "switch", "round", "projects"):
    g, m, d = ms(f"gpuenv-{s}"), ms(f"mise-{s}"), ms(f"direnv-{s}")
    res[s] = (g, m, d)
    print(f"{s:<11}{g:>8.3f}ms{m:>8.3f}ms{d:>8.3f}ms{m / g:>12.1f}x{d / g:>14.1f}x")
print(f"(starting one process from bash here, /bin/true: {ms('floor'):.3f} ms)")
if list(work.glob("hook-floor-*")):
    print(f"(gpuenv's hook starting a static program that does nothing in the proxy's place, projects: {ms('hook-floor'):.3f} ms)")
print("the source build (its proxy dynamic), same run: " + ", ".join(f"{s} {ms('source-' + s):.3f} ms" for s in res))
if list(work.glob("before-*")):
    print("BEFORE's gpuenv, same run: " + ", ".join(f"{s} {ms('before-' + s):.3f} ms" for s in res))
g, m, d = res["no-change"]
met = g < 1 and g < m and d >= 3 * g
print(f"goal (no change: under 1 ms, faster than mise, at least 3x faster than direnv): {'met' if met else 'NOT met'}")
for s in ("switch", "round", "projects"):
    print(f"goal (the prompt after a cd at most 1.5 ms), {s}: {'met' if res[s][0] <= 1.5 else 'NOT met'}")
PY
