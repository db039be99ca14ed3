#!/usr/bin/env bash
# real-toolchains.sh: fetch real CUDA toolkits for gpuenv's tests (no GPU needed).
#
#   scripts/real-toolchains.sh [--cached-only] cuda13
#   scripts/real-toolchains.sh [--cached-only] cuda11.8
#
# Prints the absolute path of the toolkit root as the LAST line on stdout;
# progress and errors go to stderr. Exit codes: 0 ok, 1 error, 2 usage,
# 3 with --cached-only when the toolkit is not cached (nothing is fetched).
#
#   cuda13   -> <cache>/cuda-13.0.2-wheels/nvidia/cu13
#               CUDA 13.0 from NVIDIA's wheels on PyPI (`bin/nvcc`, `include/`, `lib/`, `nvvm/`).
#   cuda11.8 -> <cache>/cuda-11.8.89-debian/usr/lib/nvidia-cuda-toolkit
#               CUDA 11.8 from Debian bookworm's non-free nvidia-cuda-toolkit (`bin/nvcc`;
#               headers in <cache>/cuda-11.8.89-debian/usr/include, libs in .../usr/lib/x86_64-linux-gnu).
#               Host compiler: Debian's nvcc runs `gcc`/`g++` through its own wrappers in bin/ that
#               pick g++-11 (or older) and fail with "No supported gcc/g++ host compiler found" when
#               none is installed; CUDA 11.8 rejects gcc 12 (`-ccbin /usr/bin/g++` gives
#               "#error -- unsupported GNU version! gcc versions later than 11 are not supported!").
#               Install a usable one with `apt-get install -y g++-11`.
#
# Running a program linked with -lcudart needs the toolkit's lib dir on LD_LIBRARY_PATH
# (cuda13: <root>/lib; cuda11.8: <cache>/cuda-11.8.89-debian/usr/lib/x86_64-linux-gnu). Without
# a GPU/driver it prints cudaErrorInsufficientDriver, which is the expected outcome here.
#
# Cache: ${GPUENV_TEST_CACHE:-$HOME/.cache/gpuenv-tests}, outside the checkout. Each toolkit is
# built in a temp dir inside the cache and renamed into place only after it has been checked, with
# a stamp file written last; a later run trusts a tree only if its stamp matches this script's
# recipe, so a killed run never leaves a half tree that is used. A warm run only reads the stamp:
# no network, a few milliseconds. Concurrent runs (parallel tests) serialise on a flock per
# toolkit. Downloads are verified: the wheels against the sha256 pinned below (pip
# --require-hashes), the .debs by apt (InRelease signature -> Packages -> SHA256 of each .deb).
# Downloaded archives are deleted once unpacked; only the trees are kept.
#
# Environment: GPUENV_TEST_CACHE (cache dir), GPUENV_PYTHON (python with pip, default python3),
# GPUENV_DEBIAN_MIRROR (default http://deb.debian.org/debian).

set -euo pipefail

PROG=real-toolchains
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }
usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Bump when the fix-ups below change: a tree built by an older recipe is then rebuilt.
RECIPE=1

# ---------------------------------------------------------------------------------------------
# CUDA 13 from PyPI.
#
# Versions: the ones NVIDIA's metapackage `cuda-toolkit==13.0.2` pins (its METADATA Requires-Dist
# for the nvcc/cudart/crt/nvvm/cccl extras: `pip download --no-deps cuda-toolkit==13.0.2` and
# `unzip -p cuda_toolkit-13.0.2-*.whl '*/METADATA' | grep Requires-Dist`):
#   nvidia-cuda-nvcc==13.0.88.*  nvidia-cuda-runtime==13.0.96.*  nvidia-cuda-crt==13.0.88.*
#   nvidia-nvvm==13.0.88.*       nvidia-cuda-cccl==13.0.85.*
# The sha256 are those of the x86_64 wheels on PyPI (the same ones the index lists).
# Unsuffixed names are CUDA 13; CUDA 12's are the `-cu12` ones.
CUDA13_TOOLKIT=13.0.2
CUDA13_WHEELS=(
  "nvidia-cuda-nvcc==13.0.88 --hash=sha256:56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03"
  "nvidia-cuda-runtime==13.0.96 --hash=sha256:7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548"
  "nvidia-cuda-crt==13.0.88 --hash=sha256:2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4"
  "nvidia-nvvm==13.0.88 --hash=sha256:c5f41ffeb6466944a026dfa5317d7d85355c119bbec279205d22f1869d1054e0"
  "nvidia-cuda-cccl==13.0.85 --hash=sha256:e0da7ad981f3a8aff08241b5bfc1af868742a63e2762f53a5171c492ef242649"
)
# nvidia-nvvm is tagged manylinux_2_12 (manylinux2010), the others manylinux_2_17 (manylinux2014);
# pip does not widen an explicit --platform to older manylinux tags, so list each.
CUDA13_PLATFORMS=(manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_12_x86_64 manylinux2010_x86_64)

build_cuda13() { # $1 = empty dir to build in; leaves the merged tree in $1/tree
  local work=$1 py=${GPUENV_PYTHON:-python3} spec
  command -v "$py" >/dev/null || die "python ('$py') not found; set GPUENV_PYTHON to a python with pip"
  "$py" -m pip --version >/dev/null 2>&1 || die "'$py -m pip' does not work; set GPUENV_PYTHON to a python with pip"
  command -v unzip >/dev/null || die "unzip not found (apt-get install -y unzip)"

  : >"$work/requirements.txt"
  for spec in "${CUDA13_WHEELS[@]}"; do printf '%s\n' "$spec" >>"$work/requirements.txt"; done
  local plat_args=() p
  for p in "${CUDA13_PLATFORMS[@]}"; do plat_args+=(--platform "$p"); done

  log "downloading CUDA $CUDA13_TOOLKIT wheels from PyPI (about 100 MB)..."
  local t0=$SECONDS
  # --require-hashes: pip refuses any file whose sha256 differs from the pins above.
  "$py" -m pip download --disable-pip-version-check --no-cache-dir --progress-bar off \
    --no-deps --only-binary=:all: "${plat_args[@]}" --require-hashes \
    -r "$work/requirements.txt" -d "$work/wheels" >&2 \
    || die "pip download of the CUDA 13 wheels failed (see above)"
  local n
  n=$(find "$work/wheels" -name '*.whl' | wc -l)
  [[ $n -eq ${#CUDA13_WHEELS[@]} ]] || die "expected ${#CUDA13_WHEELS[@]} wheels, got $n"
  log "downloaded $(du -sh "$work/wheels" | cut -f1) in $((SECONDS - t0))s; unpacking..."

  # The wheels hold disjoint files under nvidia/cu13/; unzipped into one dir they merge.
  local whl
  for whl in "$work"/wheels/*.whl; do
    unzip -q -o "$whl" -d "$work/tree" || die "unzip $whl failed"
  done
  local root=$work/tree/nvidia/cu13
  [[ -x $root/bin/nvcc ]] || die "wheels did not produce nvidia/cu13/bin/nvcc"

  # Fix-ups (layout as unpacked: bin/{nvcc,ptxas,nvlink,fatbinary,cudafe++,bin2c,nvcc.profile,crt/},
  # include/ (runtime + crt/ + cccl/ + nvvm.h), lib/{libcudart.so.13,libcudart_static.a,
  # libcudadevrt.a,libnvvm.so.4,cmake/}, nvvm/{bin/cicc,libdevice/}; no version.json, no lib64):
  # 1. bin/nvcc.profile adds -L$(TOP)/lib64 (nvcc sets _TARGET_SIZE_=64), but the wheels ship lib/
  #    only, so linking (even the default -lcudart_static, and -lcudadevrt) fails. lib64 -> lib.
  ln -s lib "$root/lib64"
  # 2. The runtime wheel ships only libcudart.so.13; `-lcudart` needs the unversioned name.
  [[ -e $root/lib/libcudart.so ]] || ln -s libcudart.so.13 "$root/lib/libcudart.so"
  # 3. The wheels' executables are mode 0744 (owner only); let other users of the cache run them.
  chmod -R a+rX "$work/tree"

  "$root/bin/nvcc" --version >&2 || die "the unpacked nvcc does not run"
  local f
  for f in include/cuda_runtime.h include/crt/host_config.h include/cccl/cuda/std/version \
    lib/libcudart.so lib64/libcudart_static.a lib64/libcudadevrt.a nvvm/bin/cicc \
    nvvm/libdevice/libdevice.10.bc bin/ptxas bin/fatbinary bin/nvlink bin/cudafe++; do
    [[ -e $root/$f ]] || die "unpacked CUDA 13 tree lacks $f"
  done
}

# ---------------------------------------------------------------------------------------------
# CUDA 11.8 from Debian bookworm non-free (nvidia-cuda-toolkit 11.8.89~11.8.0-5~deb12u1).
#
# Minimal package set (dependencies of nvidia-cuda-toolkit such as nvidia-profiler,
# nvidia-opencl-dev, libnvvm4 (cicc is linked statically; nvcc does not load libnvvm) and the
# math libraries that nvidia-cuda-dev depends on are not needed to compile):
#   nvidia-cuda-toolkit (84 MB)  nvcc, cicc, ptxas, nvlink, fatbinary, cudafe++, libdevice, wrappers
#   nvidia-cuda-dev    (774 MB)  headers (usr/include) and libcudart.so/_static.a, libcudadevrt.a;
#                                only those are unpacked (the .deb is mostly static math libraries,
#                                2.8 GB installed), but apt can only fetch the whole .deb
#   libcudart11.0      (0.2 MB)  libcudart.so.11.0 (for -lcudart)
# Not fetched: libthrust-dev, libcub-dev, libcu++-dev (main; only for code that includes them).
CUDA118_UPSTREAM=11.8.89
CUDA118_PACKAGES=(nvidia-cuda-toolkit nvidia-cuda-dev libcudart11.0)
CUDA118_SUITES="bookworm bookworm-updates"
CUDA118_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# What is taken from nvidia-cuda-dev (tar wildcards; `*` also matches `/`).
CUDA118_DEV_MEMBERS=(
  './usr/include/*'
  './usr/lib/x86_64-linux-gnu/libcudart.so'
  './usr/lib/x86_64-linux-gnu/libcudart_static.a'
  './usr/lib/x86_64-linux-gnu/libcudadevrt.a'
  './usr/lib/x86_64-linux-gnu/stubs/libcuda.so'
  './usr/lib/x86_64-linux-gnu/pkgconfig/cuda.pc'
  './usr/share/doc/nvidia-cuda-dev/*'
)

build_cuda118() { # $1 = empty dir to build in; leaves the extracted tree in $1/tree
  local work=$1 tool
  for tool in apt-get apt-cache dpkg-deb tar flock; do
    command -v "$tool" >/dev/null || die "$tool not found (this needs a Debian-like system)"
  done
  [[ -r $CUDA118_KEYRING ]] || die "$CUDA118_KEYRING missing (apt-get install -y debian-archive-keyring)"
  [[ $(dpkg --print-architecture 2>/dev/null || echo unknown) == amd64 ]] \
    || die "only amd64 is supported for cuda11.8"

  # A private apt configuration: its own sources (non-free only, Packages indices only), lists
  # and cache dirs, so /etc/apt and /var/lib/apt are neither read for sources nor written.
  # APT_CONFIG replaces only /etc/apt/apt.conf; /etc/apt/apt.conf.d/ still applies (proxies).
  local apt=$work/apt
  mkdir -p "$apt/sources.list.d" "$apt/preferences.d" "$apt/lists/partial" \
    "$apt/cache/archives/partial" "$work/debs"
  cat >"$apt/sources.list.d/debian-non-free.sources" <<EOF
Types: deb
URIs: ${GPUENV_DEBIAN_MIRROR:-http://deb.debian.org/debian}
Suites: $CUDA118_SUITES
Components: non-free
Architectures: amd64
Targets: Packages
Signed-By: $CUDA118_KEYRING
EOF
  cat >"$apt/apt.conf" <<EOF
Dir::Etc::SourceList "/dev/null";
Dir::Etc::SourceParts "$apt/sources.list.d";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "$apt/preferences.d";
Dir::State::Lists "$apt/lists";
Dir::Cache "$apt/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
APT::Sandbox::User "$(id -un)";
EOF
  export APT_CONFIG=$apt/apt.conf

  local t0=$SECONDS
  log "updating a private apt index of Debian bookworm non-free..."
  apt-get -q update >&2 || die "apt-get update of the private bookworm non-free index failed (see above)"
  local ver
  ver=$(apt-cache show --no-all-versions nvidia-cuda-toolkit 2>/dev/null | sed -n 's/^Version: //p' | head -n1)
  [[ -n $ver ]] || die "nvidia-cuda-toolkit not found in bookworm non-free"
  # Take whatever Debian revision is current, but it must be CUDA 11.8.89; all three packages
  # are built from one source and carry the same version, which pins them together.
  [[ $ver == "$CUDA118_UPSTREAM~"* ]] || die "bookworm's nvidia-cuda-toolkit is $ver, expected $CUDA118_UPSTREAM~*"
  local pkgs=() p
  for p in "${CUDA118_PACKAGES[@]}"; do pkgs+=("$p=$ver"); done
  log "downloading ${pkgs[*]} (about 860 MB)..."
  (cd "$work/debs" && apt-get -q download "${pkgs[@]}") >&2 || die "apt-get download failed"
  log "downloaded $(du -sh "$work/debs" | cut -f1) in $((SECONDS - t0))s; unpacking (about 30s)..."

  local tree=$work/tree
  mkdir -p "$tree"
  dpkg-deb -x "$work"/debs/nvidia-cuda-toolkit_*.deb "$tree"
  dpkg-deb -x "$work"/debs/libcudart11.0_*.deb "$tree"
  # tar fails (and pipefail with it) if a member pattern matches nothing.
  dpkg-deb --fsys-tarfile "$work"/debs/nvidia-cuda-dev_*.deb \
    | tar -x -C "$tree" --wildcards "${CUDA118_DEV_MEMBERS[@]}" \
    || die "unpacking nvidia-cuda-dev failed"
  rm -rf "$work/debs" # 860 MB; not needed any more

  local root=$tree/usr/lib/nvidia-cuda-toolkit
  # Fix-up: Debian's bin/nvcc.profile is a symlink to /etc/nvcc.profile (absolute, so it dangles
  # or points to the host's) whose settings are absolute /usr paths:
  #   NVVMIR_LIBRARY_DIR = /usr/lib/nvidia-cuda-toolkit/libdevice
  #   PATH += /usr/lib/nvidia-cuda-toolkit/bin:          (cicc, and the gcc/g++ wrappers)
  #   LIBRARIES =+ -L/usr/lib/x86_64-linux-gnu/stubs -L/usr/lib/x86_64-linux-gnu
  # and it relies on /usr/bin being on PATH (ptxas, fatbinary, nvlink, cudafe++ live there) and
  # on /usr/include being the host compiler's default include dir (no INCLUDES). Without a
  # profile nvcc --version still works but -c fails (cuda_runtime.h not found, no cicc). The
  # replacement says the same relative to the extracted tree ($(_HERE_) = this bin/ dir).
  [[ -L $root/bin/nvcc.profile || -e $root/bin/nvcc.profile ]] || die "no bin/nvcc.profile in nvidia-cuda-toolkit"
  rm -f "$root/bin/nvcc.profile"
  cat >"$root/bin/nvcc.profile" <<'EOF'
# Written by gpuenv's scripts/real-toolchains.sh in place of Debian's symlink to /etc/nvcc.profile:
# the same settings, relative to this extracted tree (USR = the tree's usr/ dir).
USR             = $(_HERE_)/../../..

NVVMIR_LIBRARY_DIR = $(_HERE_)/../libdevice

PATH            += $(_HERE_):$(USR)/bin:

INCLUDES        += "-I$(USR)/include" $(_SPACE_)

LIBRARIES       =+ $(_SPACE_) "-L$(USR)/lib/x86_64-linux-gnu/stubs" "-L$(USR)/lib/x86_64-linux-gnu"
EOF

  "$root/bin/nvcc" --version >&2 || die "the extracted nvcc does not run"
  local f
  for f in usr/lib/nvidia-cuda-toolkit/bin/cicc usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc \
    usr/bin/ptxas usr/bin/fatbinary usr/bin/nvlink usr/bin/cudafe++ usr/include/cuda_runtime.h \
    usr/include/crt/host_config.h usr/lib/x86_64-linux-gnu/libcudart.so \
    usr/lib/x86_64-linux-gnu/libcudart.so.11.0 usr/lib/x86_64-linux-gnu/libcudart_static.a \
    usr/lib/x86_64-linux-gnu/libcudadevrt.a; do
    [[ -e $tree/$f ]] || die "extracted CUDA 11.8 tree lacks $f"
  done
  if ! command -v g++-11 >/dev/null; then
    log "note: CUDA 11.8's nvcc needs g++ <= 11 to compile (gcc 12 is rejected); apt-get install -y g++-11"
  fi
}

# ---------------------------------------------------------------------------------------------
cached_only=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --cached-only) cached_only=1; shift ;;
    -h|--help) usage ;;
    -*) log "unknown option: $1"; usage ;;
    *) break ;;
  esac
done
[[ $# -eq 1 ]] || usage

case $1 in
  cuda13)
    name=cuda-$CUDA13_TOOLKIT-wheels
    rel=nvidia/cu13
    key="recipe=$RECIPE cuda13 ${CUDA13_WHEELS[*]}"
    builder=build_cuda13 ;;
  cuda11.8)
    name=cuda-$CUDA118_UPSTREAM-debian
    rel=usr/lib/nvidia-cuda-toolkit
    key="recipe=$RECIPE cuda11.8 $CUDA118_UPSTREAM ${CUDA118_PACKAGES[*]} ${CUDA118_DEV_MEMBERS[*]}"
    builder=build_cuda118 ;;
  *) log "unknown toolkit: $1 (expected cuda13 or cuda11.8)"; usage ;;
esac

cache=${GPUENV_TEST_CACHE:-${HOME:?HOME is not set; set GPUENV_TEST_CACHE}/.cache/gpuenv-tests}
[[ $cache == /* ]] || cache=$PWD/$cache
dest=$cache/$name
stamp=$dest/.gpuenv-complete

is_cached() { [[ -f $stamp && "$(<"$stamp")" == "$key" ]]; }

# Fast path: a complete tree from this recipe; no lock, no network.
if is_cached; then
  printf '%s\n' "$dest/$rel"
  exit 0
fi
if [[ $cached_only -eq 1 ]]; then
  log "$1 is not cached in $cache"
  exit 3
fi

mkdir -p "$cache" || die "cannot create cache dir $cache"
exec 9>"$cache/.$name.lock"
if ! flock -n 9; then
  log "another run is preparing $1; waiting for it..."
  flock 9
fi
if is_cached; then # the other run finished it
  printf '%s\n' "$dest/$rel"
  exit 0
fi

# Leftovers of killed runs (we hold the lock, so no live run owns them).
rm -rf "$cache/.$name.tmp."*
work=$(mktemp -d "$cache/.$name.tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start=$SECONDS
log "preparing $1 in $dest"
"$builder" "$work"
printf '%s\n' "$key" >"$work/tree/.gpuenv-complete"

# Swap in atomically: the tree appears complete (stamp included) or not at all.
if [[ -e $dest || -L $dest ]]; then
  old=$cache/.$name.tmp.old.$$
  mv "$dest" "$old"
  mv "$work/tree" "$dest"
  rm -rf "$old"
else
  mv "$work/tree" "$dest"
fi
log "$1 ready in $((SECONDS - start))s ($(du -sh "$dest" | cut -f1)): $dest/$rel"
printf '%s\n' "$dest/$rel"
