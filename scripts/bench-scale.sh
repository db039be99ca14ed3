#!/usr/bin/env bash
# Benchmark: what a site's store costs each call. With 1, 30 and 300 registered toolkits (a
# site store has every CUDA patch release), registered in the user's own home and, again, in
# an upstream the user reads, and a project whose working directory is 40 directories below
# its gpuenv.toml, it times:
#   view nvcc    the proxy as a view's bin/nvcc (`nvcc --version`),
#   shim nvcc    the proxy as the shim `nvcc` (resolves the project first),
#   env          `gpuenv env --shell bash`,
#   run          `gpuenv run -- /bin/true`,
#   list         `gpuenv list`,
#   hook cd      the shell hook's prompt function after a `cd` into the project or out of it
#                (what every prompt after a `cd` costs), beside direnv's and mise's in the
#                same bash loop and the same project.
# The commands are timed by scripts/bench-runner.c, all of them taking turns (medians of RUNS,
# default 300); the hook inside bash with $EPOCHREALTIME (median of CALLS x ROUNDS prompts,
# default 100 x 3, each tool's bash in turn). Needs direnv (apt-get
# install -y direnv) and mise (installed from npm under ~/.cache/gpuenv-bench unless MISE is
# set), as scripts/bench-hook.sh; makes a release build.
# `scripts/bench-scale.sh --instructions` counts instructions instead (valgrind's callgrind;
# the proxy's up to its exec of the tool, loader included): the same calls, and `hook-env`
# as the hook runs it after a `cd` into the project (the proxy beside gpuenv answers it). Counts do not move with the machine's
# load, so this mode needs no peers and one run of each; it prints the 300/1 ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-300} calls=${CALLS:-100} rounds=${ROUNDS:-3} depth=40
mode=time
[ "${1:-}" = --instructions ] && mode=instructions
if [ $mode = instructions ]; then
    command -v valgrind >/dev/null || { echo "valgrind needed: apt-get install -y valgrind" >&2; exit 2; }
else
    command -v direnv >/dev/null || { echo "direnv needed: apt-get install -y direnv" >&2; exit 2; }
fi
if [ $mode = time ] && [ -z "${MISE:-}" ]; then
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
gpuenv="$PWD/target/release/gpuenv"
proxy="$PWD/target/release/gpuenv-shim"
if [ -n "${KEEP:-}" ]; then # KEEP=DIR: the homes are made and left there, to profile
    work=$KEEP
    rm -rf "$work" && mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
cc -O2 -o "$work/bench" scripts/bench-runner.c

export HOME="$work/home"
export XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share"
export XDG_CACHE_HOME="$work/home/.cache" XDG_STATE_HOME="$work/home/.local/state"
export GPUENV_SYSTEM_CONFIG="$work/no-system-config.toml"
mkdir -p "$HOME"
unset __GPUENV_STATE GPUENV_TOOLCHAIN GPUENV_ACTIVE GPUENV_UPSTREAMS VIRTUAL_ENV CONDA_PREFIX PROMPT_COMMAND
unset "${!DIRENV_@}" "${!MISE_@}" "${!__MISE_@}"
export PATH=/usr/local/bin:/usr/bin:/bin DIRENV_LOG_FORMAT=

# tree DIR VERSION: a toolkit tree whose nvcc is a tiny real program.
printf 'int main(void) { return 0; }\n' >"$work/tiny.c"
cc -O2 -o "$work/tiny" "$work/tiny.c"
tree() {
    mkdir -p "$1/bin" "$1/lib64" "$1/include"
    echo "CUDA Version $2" >"$1/version.txt"
    cp "$work/tiny" "$1/bin/nvcc"
    : >"$1/include/cuda_runtime.h"
}
tree "$work/cuda-12.4" 12.4.131

# store HOME N: HOME with the project's cuda-12.4 linked, and N-1 more toolkits (every patch
# release of 11.x, half of them also under a label) written into its settings as gpuenv
# writes them.
store() {
    local home=$1 n=$2
    GPUENV_HOME="$home" "$gpuenv" link cuda-12.4 "$work/cuda-12.4" 2>/dev/null
    python3 - "$home/settings.toml" "$n" "$work/trees" "$work/tiny" <<'PY'
import pathlib, shutil, sys
settings, n, trees = pathlib.Path(sys.argv[1]), int(sys.argv[2]), pathlib.Path(sys.argv[3])
out = [settings.read_text()]
for i in range(n - 1):
    version = f"11.{i // 40}.{(i // 2) % 20}"
    name = f"cuda-{version}" + ("-site" if i % 2 else "")
    root = trees / version
    if not root.exists():
        for d in ("bin", "lib64", "include"):
            (root / d).mkdir(parents=True)
        (root / "version.txt").write_text(f"CUDA Version {version}\n")
        (root / "include/cuda_runtime.h").write_text("")
        shutil.copy(sys.argv[4], root / "bin/nvcc")
    out.append(f'''
[toolchains."{name}"]
kind = "cuda"
version = "{version}"
root = "{root}"
source = "linked"
version_from = "version.txt"
include_dir = "{root}/include"
lib_dir = "{root}/lib64"
''')
settings.write_text("".join(out))
PY
    # Views and shims of them all, as a store has.
    GPUENV_HOME="$home" "$gpuenv" reshim >/dev/null 2>&1
}

proj="$work/proj" elsewhere="$work/elsewhere"
deep="$proj$(printf '/d%.0s' $(seq "$depth"))"
mkdir -p "$deep" "$elsewhere"
printf '[toolchain]\ncuda = "12.4"\n' >"$proj/gpuenv.toml"

for n in 1 30 300; do
    store "$work/own-$n" "$n"
    store "$work/site-$n" "$n"
    GPUENV_HOME="$work/user-site-$n" GPUENV_UPSTREAMS="$work/site-$n" "$gpuenv" reshim >/dev/null 2>&1
done
scenarios="own-1 own-30 own-300 site-1 site-30 site-300"

# env_of NAME: the GPUENV_HOME and GPUENV_UPSTREAMS of NAME (own-N or site-N), whose store
# $work/NAME holds the view of cuda-12.4 it uses.
env_of() {
    case $1 in
        own-*) echo "GPUENV_HOME=$work/$1 GPUENV_UPSTREAMS=" ;;
        site-*) echo "GPUENV_HOME=$work/user-$1 GPUENV_UPSTREAMS=$work/$1" ;;
    esac
}

# Settings older than two seconds: gpuenv keeps a compact copy of them from then on.
sleep 2.2
cd "$deep"
commands=()
for s in $scenarios; do
    e=$(env_of "$s")
    # The first calls make the views and the compact copies.
    env $e "$gpuenv" env --shell bash >/dev/null
    home=${e%% *}
    commands+=("$s/view-nvcc=$e $work/$s/views/cuda-12.4/bin/nvcc --version"
        "$s/shim-nvcc=$e ${home#GPUENV_HOME=}/shims/nvcc --version"
        "$s/env=$e $gpuenv env --shell bash"
        "$s/run=$e $gpuenv run -- /bin/true"
        "$s/list=$e $gpuenv list")
done

# instructions NAME VARIABLES COMMAND…: instructions callgrind counts for one run of COMMAND
# with VARIABLES (NAME=VALUE words) exported (a proxy's up to its exec of the tool: every
# dump of the process summed).
instructions() {
    local name=$1 vars=$2 out="$work/cg/$1"
    shift 2
    rm -rf "$out" && mkdir -p "$out"
    (export $vars; exec valgrind --tool=callgrind --dump-before=execve \
        --callgrind-out-file="$out/cg.%p" "$@" >/dev/null 2>"$out/log" </dev/null) ||
        { cat "$out/log" >&2; exit 1; }
    echo "$name $(cat "$out"/cg.* | sed -n 's/^summary: //p' | awk '{s += $1} END {print s}')"
}
if [ $mode = instructions ]; then
    for s in $scenarios; do
        e=$(env_of "$s")
        home=${e%% *}
        # The state the hook keeps after a prompt elsewhere: the `cd` into the project is
        # what hook-env then computes.
        state=$(cd "$elsewhere" && env $e "$gpuenv" hook-env --shell bash |
            sed -n "s/^export __GPUENV_STATE='\\(.*\\)'$/\\1/p")
        [ -n "$state" ] || { echo "no hook state elsewhere" >&2; exit 1; }
        for run in 1 2; do # the first run may write a cache (host compilers, the copy)
            instructions "$s/view-nvcc" "$e" "$work/$s/views/cuda-12.4/bin/nvcc" --version
            instructions "$s/shim-nvcc" "$e" "${home#GPUENV_HOME=}/shims/nvcc" --version
            instructions "$s/env" "$e" "$gpuenv" env --shell bash
            instructions "$s/hook-cd" "$e __GPUENV_STATE=$state" "$proxy" hook-env --shell bash
            instructions "$s/list" "$e" "$gpuenv" list
        done | tail -n 5 | sed 's|/| |' >>"$work/ir.txt"
    done
    python3 - "$work/ir.txt" "$depth" <<'PY'
import sys
r = {}
for line in open(sys.argv[1]):
    where, what, n = line.split()
    r[(where, what)] = int(n)
print(f"instructions per call (callgrind) with 1, 30 and 300 registered toolkits, {sys.argv[2]} directories deep")
print(f"{'':<24}{'1':>11}{'30':>11}{'300':>11}{'300/1':>8}")
rows = [("view nvcc --version", "view-nvcc"), ("shim nvcc --version", "shim-nvcc"),
        ("gpuenv env", "env"), ("hook-env after a cd", "hook-cd"), ("gpuenv list", "list")]
ok = True
for home, label in (("own", "in the own home"), ("site", "in an upstream")):
    print(label)
    for name, key in rows:
        v = [r[(f"{home}-{n}", key)] for n in (1, 30, 300)]
        ratio = v[2] / v[0]
        print(f"  {name:<22}" + "".join(f"{x:>11,}" for x in v) + f"{ratio:>7.2f}x")
        if key == "list":
            # Linear at worst: the cost of each toolkit past the first no higher at 300
            # than at 30 (with a margin for what rounds differently).
            ok &= (v[2] - v[0]) / 299 <= 1.25 * (v[1] - v[0]) / 29
        else:
            ok &= ratio <= 1.25
print("goal (300 toolkits within 1.25x of one; list linear at worst): " + ("met" if ok else "NOT met"))
PY
    exit 0
fi
"$work/bench" "$runs" "${commands[@]}" | sed 's|/| |' >"$work/times.txt"
cd "$work"

# hook TOOL HOOK-LINE PROMPT-FUNCTION: one bash, the hook loaded, a `cd` into the project's
# deep directory or out of it before each timed prompt; prints each prompt's microseconds.
hook() {
    HOOK=$2 FN=$3 PROJ=$deep ELSEWHERE=$elsewhere CALLS=$calls bash --norc --noprofile -c '
        eval "$HOOK"
        cd "$PROJ"; $FN; $FN
        [[ -n ${CUDA_HOME:-} ]] || { echo "'"$1"': the hook did not apply the project" >&2; exit 1; }
        out=()
        for ((i = 0; i < CALLS; i++)); do
            t0=$EPOCHREALTIME
            if ((i % 2)); then cd "$PROJ"; else cd "$ELSEWHERE"; fi
            $FN
            t1=$EPOCHREALTIME
            out+=("$(( (${t1/./} - ${t0/./}) ))")
        done
        echo "${out[*]}"
    '
}

# The peers, in the same project: what gpuenv exports, from direnv's .envrc and mise.toml.
wanted=$(cd "$deep" && env $(env_of own-1) "$gpuenv" env --shell bash)
printf '%s\n' "$wanted" >"$proj/.envrc"
direnv allow "$proj"
{
    echo '[env]'
    printf '%s\n' "$wanted" | sed -n "s/^export \([A-Za-z_]*\)='\(.*\)'$/\1 = \"\2\"/p" | grep -v '^PATH ='
    view_bin=$(printf '%s\n' "$wanted" | sed -n "s/^export CUDACXX='\(.*\)\/nvcc'$/\1/p")
    echo "_.path = [\"$view_bin\"]"
} >"$proj/mise.toml"
"$MISE" trust -q "$proj/mise.toml"
sleep 1.2
# Rounds of every prompt in turn, so a burst of load falls on all of them alike.
for round in $(seq "$rounds"); do
    for s in $scenarios; do
        (export $(env_of "$s"); hook gpuenv "eval \"\$('$gpuenv' hook bash)\"" _gpuenv_hook) >>"$work/hook-$s"
    done
    hook direnv "eval \"\$(direnv hook bash)\"" _direnv_hook >>"$work/hook-direnv"
    hook mise "eval \"\$('$MISE' activate bash)\"" _mise_hook_prompt_command >>"$work/hook-mise"
done
for f in "$work"/hook-*; do
    name=${f##*/hook-}
    python3 -c 'import statistics, sys; print(sys.argv[1], statistics.median(int(x) for x in open(sys.argv[2]).read().split()) / 1000)' \
        "$name" "$f" | sed 's/^\(own\|site\)-\([0-9]*\) /\1-\2 hook-cd /; s/^\(direnv\|mise\) /peer \1 /' >>"$work/times.txt"
done

python3 - "$work/times.txt" "$runs" "$calls x $rounds" "$depth" <<'PY'
import sys
r = {}
for line in open(sys.argv[1]):
    where, what, ms = line.split()
    r[(where, what)] = float(ms)
runs, calls, depth = sys.argv[2:5]
print(f"milliseconds per call with 1, 30 and 300 registered toolkits, in a project {depth} directories deep")
print(f"(commands: medians of {runs} runs; the hook: median of {calls} prompts after a cd)")
print(f"{'':<24}{'1':>8}{'30':>8}{'300':>8}{'300/1':>8}")
rows = [("view nvcc", "view-nvcc"), ("shim nvcc", "shim-nvcc"), ("gpuenv env", "env"),
        ("gpuenv run", "run"), ("gpuenv list", "list"), ("hook after a cd", "hook-cd")]
ok = True
for home, label in (("own", "in the own home"), ("site", "in an upstream")):
    print(label)
    for name, key in rows:
        v = [r[(f"{home}-{n}", key)] for n in (1, 30, 300)]
        ratio = v[2] / v[0]
        print(f"  {name:<22}" + "".join(f"{x:>8.3f}" for x in v) + f"{ratio:>7.2f}x")
        if key == "list":
            ok &= v[2] < 20
        else:
            ok &= ratio <= 1.25
print(f"peers, the prompt after a cd in the same project: direnv {r[('peer', 'direnv')]:.3f} ms, "
      f"mise {r[('peer', 'mise')]:.3f} ms")
print("goal (300 toolkits within 1.25x of one; list under 20 ms at 300): " + ("met" if ok else "NOT met"))
PY
