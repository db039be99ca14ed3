#!/usr/bin/env bash
# bench-install.sh: times `gpuenv install` against the shell pipeline a person would write
# (`curl -o` + `sha256sum -c` + `tar -xJf`) for the same archives, served by a local HTTP
# server, and a reinstall from gpuenv's cache. Prints the times and the ratios.
#
#   scripts/bench-install.sh [SIZE_MB]        (default 300: the unpacked size of the fixture)
#   scripts/bench-install.sh disk [PROFILE]   (default profile: default)
#
# `disk` installs the newest CUDA 13.0, 13.1 and 13.2 from the package index (NVIDIA's
# wheels; GPUENV_PYPI_URL or PyPI) side by side into one fresh GPUENV_HOME and prints the
# disk they take together (each file once, as `du` counts hard links), against the sum of
# their trees measured one by one (what three separate copies, a venv each, would take), and
# what the download cache adds. It downloads about 1.2 GB per release with the default
# profile (BENCH_DIR keeps nothing of it between runs).
#
# The fixture is a fake CUDA release in NVIDIA's redist layout (redistrib_*.json and one
# tar.xz per component, several blocks each as `xz -T0` writes them), about as compressible
# as NVIDIA's libraries; it is built once into ${BENCH_DIR:-${TMPDIR:-/tmp}/gpuenv-bench} and
# reused. Needs python3, curl, xz, tar, sha256sum. Network: 127.0.0.1 only.
# Targets (issue 6): install <= 1.1x the pipeline; cached reinstall of 300 MB < 1 s.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH=${BENCH_DIR:-${TMPDIR:-/tmp}/gpuenv-bench}

if [[ ${1:-} == disk ]]; then
  profile=${2:-default}
  echo "building gpuenv (release)..." >&2
  cargo build --release --quiet --workspace
  mkdir -p "$BENCH"
  work=$(mktemp -d "$BENCH/disk.XXXXXX")
  trap '[[ -n ${BENCH_KEEP:-} ]] || rm -rf "$work"' EXIT
  export GPUENV_HOME=$work/home NO_COLOR=1
  unset GPUENV_DOWNLOAD_CACHE GPUENV_KEEP_ARCHIVES
  names=()
  for minor in 13.0 13.1 13.2; do
    t0=$(date +%s.%N)
    out=$("$PWD/target/release/gpuenv" install "cuda-$minor" --source pypi --profile "$profile" 2>&1) \
      || { echo "$out" >&2; exit 1; }
    name=$(cd "$GPUENV_HOME/toolchains" && ls -d "cuda-$minor".* | head -1)
    names+=("$name")
    python3 -c "import sys; print(f'installed {sys.argv[1]} in {float(sys.argv[3]) - float(sys.argv[2]):.0f} s')" \
      "$name" "$t0" "$(date +%s.%N)" >&2
  done
  kb() { du -sk "$@" | tail -1 | cut -f1; }
  apart=0
  for n in "${names[@]}"; do
    one=$(kb "$GPUENV_HOME/toolchains/$n")
    apart=$((apart + one))
    printf '%-14s %8d MB on its own\n' "$n" $((one / 1024))
  done
  together=$(du -skc "${names[@]/#/$GPUENV_HOME/toolchains/}" | tail -1 | cut -f1)
  cache_extra=$(( $(du -skc "${names[@]/#/$GPUENV_HOME/toolchains/}" "$GPUENV_HOME/downloads" | tail -1 | cut -f1) - together ))
  python3 - "$apart" "$together" "$cache_extra" "$profile" <<'PY'
import sys
apart, together, cache, profile = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
mb = lambda kb: f"{kb / 1024:.0f} MB"
print(f"three CUDA 13.x toolkits ({profile} profile), each file counted once:")
print(f"  sum of the three trees, one by one : {mb(apart):>9}")
print(f"  gpuenv, side by side               : {mb(together):>9}   ratio {together / apart:.2f}x ({mb(apart - together)} stored once)")
print(f"  the download cache adds            : {mb(cache):>9}   (no archive kept; its files are the toolkits')")
PY
  exit 0
fi

SIZE_MB=${1:-300}
RELEASE=12.8.1
FIX=$BENCH/fixture-$SIZE_MB
for tool in python3 curl xz tar sha256sum; do
  command -v "$tool" >/dev/null || { echo "bench-install: $tool is needed" >&2; exit 1; }
done

echo "building gpuenv (release)..." >&2
cargo build --release --quiet --workspace
GPUENV=$PWD/target/release/gpuenv

# --- the fixture -------------------------------------------------------------------------
if [[ ! -f $FIX/.complete ]]; then
  echo "building a ${SIZE_MB} MB fixture toolkit in $FIX (once)..." >&2
  rm -rf "$FIX" && mkdir -p "$FIX"
  python3 - "$FIX" "$SIZE_MB" "$RELEASE" <<'PY'
import hashlib, json, os, random, subprocess, sys
fix, size_mb, release = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rnd = random.Random(6)
words = [bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz_") for _ in range(rnd.randint(3, 12))) for _ in range(4000)]
def blob(n):
    # About as compressible as NVIDIA's shared libraries (xz: roughly 3-4x).
    out = bytearray()
    while len(out) < n:
        out += rnd.randbytes(1024)
        out += b" ".join(rnd.choice(words) for _ in range(400))[:3072]
    return bytes(out[:n])
plat = "linux-x86_64"
# (component, version, share of the size, files)
comps = [("cuda_nvcc", "12.8.93", 0.25, 40), ("cuda_cudart", "12.8.90", 0.05, 300),
         ("cuda_cccl", "12.8.90", 0.05, 3000), ("libcublas", "12.8.4.1", 0.40, 30),
         ("libcusparse", "12.5.8.93", 0.25, 30)]
manifest = {"release_date": "2025-03-05", "release_label": release, "release_product": "cuda"}
total = size_mb << 20
for comp, ver, share, nfiles in comps:
    top = f"{comp}-{plat}-{ver}-archive"
    root = os.path.join(fix, "src", top)
    per = int(total * share) // nfiles
    for i in range(nfiles):
        sub = "include" if comp == "cuda_cccl" or i % 3 == 0 else ("lib" if comp != "cuda_nvcc" else "bin")
        p = os.path.join(root, sub, f"d{i % 20}", f"{comp}_{i}.bin")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(blob(per))
    if comp == "cuda_nvcc":
        os.makedirs(os.path.join(root, "bin"), exist_ok=True)
        with open(os.path.join(root, "bin", "nvcc"), "w") as f:
            f.write("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
        os.chmod(os.path.join(root, "bin", "nvcc"), 0o755)
    rel = f"{comp}/{plat}/{top}.tar.xz"
    out = os.path.join(fix, "redist", rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(f"tar -C '{os.path.join(fix, 'src')}' -cf - '{top}' | xz -T0 -6 > '{out}'", shell=True, check=True)
    data = open(out, "rb").read()
    manifest[comp] = {"name": comp, "license": "CUDA Toolkit", "version": ver,
                      plat: {"relative_path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                             "md5": hashlib.md5(data).hexdigest(), "size": str(len(data))}}
with open(os.path.join(fix, "redist", f"redistrib_{release}.json"), "w") as f:
    json.dump(manifest, f, indent=2)
PY
  rm -rf "$FIX/src"
  touch "$FIX/.complete"
fi
archives=$(cd "$FIX/redist" && find . -name '*.tar.xz' | sort)
packed=$(du -cb $(cd "$FIX/redist" && find "$PWD" -name '*.tar.xz') | tail -1 | cut -f1)

# --- the server --------------------------------------------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$FIX/redist" >/dev/null 2>&1 &
server=$!
work=$(mktemp -d "$BENCH/run.XXXXXX")
trap 'kill $server 2>/dev/null; [[ -n ${BENCH_KEEP:-} ]] || rm -rf "$work"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$port

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }

# --- the shell pipeline ------------------------------------------------------------------
sync
t0=$(now)
mkdir -p "$work/shell/dl" "$work/shell/tree"
python3 - "$FIX/redist/redistrib_$RELEASE.json" >"$work/shell/SHA256SUMS" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for k, v in m.items():
    if isinstance(v, dict) and "linux-x86_64" in v:
        print(v["linux-x86_64"]["sha256"] + "  " + v["linux-x86_64"]["relative_path"].split("/")[-1])
PY
for a in $archives; do
  curl -sSfo "$work/shell/dl/$(basename "$a")" "$url/${a#./}"
done
(cd "$work/shell/dl" && sha256sum --quiet -c ../SHA256SUMS)
for a in "$work"/shell/dl/*.tar.xz; do tar -xJf "$a" -C "$work/shell/tree"; done
t1=$(now)
shell_s=$(secs "$t0" "$t1")
unpacked=$(du -sb "$work/shell/tree" | cut -f1)

# --- gpuenv ------------------------------------------------------------------------------
export GPUENV_HOME=$work/home GPUENV_CUDA_MIRROR=$url/ NO_COLOR=1
args=(install "cuda-$RELEASE" --source nvidia --profile minimal --component libcublas --component libcusparse --quiet)
sync
t0=$(now); "$GPUENV" "${args[@]}"; t1=$(now)
gpuenv_s=$(secs "$t0" "$t1")
"$GPUENV" uninstall "cuda-$RELEASE" 2>/dev/null
t0=$(now); "$GPUENV" "${args[@]}"; t1=$(now)
cached_s=$(secs "$t0" "$t1")
files=$(find "$GPUENV_HOME/toolchains/cuda-$RELEASE" -type f | wc -l)

python3 - "$packed" "$unpacked" "$files" "$shell_s" "$gpuenv_s" "$cached_s" "$(nproc)" <<'PY'
import sys
packed, unpacked, files = (int(x) for x in sys.argv[1:4])
shell, gpuenv, cached = (float(x) for x in sys.argv[4:7])
mb = lambda b: f"{b / 2**20:.0f} MB"
print(f"fixture: 5 archives, {mb(packed)} of tar.xz, {mb(unpacked)} unpacked, {files} files; {sys.argv[7]} cores")
print(f"curl + sha256sum + tar -xJf : {shell:6.2f} s")
print(f"gpuenv install (cold cache) : {gpuenv:6.2f} s   ratio {gpuenv / shell:.2f}x (target <= 1.10x)")
print(f"gpuenv reinstall from cache : {cached:6.2f} s   ratio {cached / shell:.2f}x (target < 1 s for 300 MB)")
PY
