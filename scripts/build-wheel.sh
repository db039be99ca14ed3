#!/usr/bin/env bash
# Builds gpuenv's wheels and sdist (maturin, `bin` bindings: both binaries as scripts) into
# dist/ or OUT, and checks them with `twine check --strict`.
#
#   scripts/build-wheel.sh [OUT]
#       the sdist and a wheel for this machine, linked against this machine's glibc (its tag
#       says which: quick, for trying a change here)
#   scripts/build-wheel.sh --zig [--target ARCH]... [OUT]
#       what a release publishes: the sdist and manylinux2014 (manylinux_2_17: glibc >= 2.17)
#       wheels for x86_64 and aarch64, cross-linked with zig against glibc 2.17's symbols;
#       `auditwheel show` must call each manylinux_2_17 with no external libraries. Their
#       proxy (gpuenv-shim: every nvcc call, every prompt after a `cd`) is linked static
#       against musl instead of glibc (docs/performance.md): built by
#       scripts/static-proxy.sh and put in the wheel in place of maturin's (`wheel unpack`,
#       `wheel pack`, which writes RECORD again).
#       --target x86_64 or aarch64 (repeatable) builds only those.
#   --profile NAME   the cargo profile (default release, what ships; .ci/run builds its test
#       wheels with `ci`: the same code without LTO, see docs/performance.md)
#
# maturin, twine (and with --zig: ziglang, cargo-zigbuild, auditwheel, wheel) come from PyPI into a
# venv outside the checkout, made once: $GPUENV_PY_TOOLS, default ~/.cache/gpuenv-py-tools.
# With --zig, rustup adds the Rust targets it lacks. The builds in cargo's target directory
# (target/<profile>, target/<triple>/<profile>; CARGO_TARGET_DIR moves it) are reused when
# they are current.
set -euo pipefail
cd "$(dirname "$0")/.."
zig=0 out="" archs=() profile=release
while [ $# -gt 0 ]; do
    case "$1" in
    --zig) zig=1 ;;
    --target)
        [ $# -ge 2 ] || { echo "build-wheel.sh: --target needs x86_64 or aarch64" >&2; exit 2; }
        case "$2" in
        x86_64 | aarch64) archs+=("$2") ;;
        *) echo "build-wheel.sh: --target $2: only x86_64 and aarch64 are built" >&2; exit 2 ;;
        esac
        shift
        ;;
    --profile)
        [ $# -ge 2 ] || { echo "build-wheel.sh: --profile needs a name" >&2; exit 2; }
        profile=$2
        shift
        ;;
    -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "build-wheel.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out="$1" ;;
    esac
    shift
done
out="${out:-dist}"
[ ${#archs[@]} -eq 0 ] || [ $zig -eq 1 ] || { echo "build-wheel.sh: --target goes with --zig" >&2; exit 2; }
[ ${#archs[@]} -gt 0 ] || archs=(x86_64 aarch64)

tools="${GPUENV_PY_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuenv-py-tools}"
need=(maturin twine)
[ $zig -eq 0 ] || need+=(python-zig cargo-zigbuild auditwheel wheel)
for t in "${need[@]}"; do
    if [ ! -x "$tools/bin/$t" ]; then
        [ -x "$tools/bin/pip" ] || python3 -m venv "$tools"
        pkgs=(maturin twine)
        [ $zig -eq 0 ] || pkgs+=(ziglang cargo-zigbuild auditwheel wheel)
        "$tools/bin/pip" install -q --upgrade "${pkgs[@]}"
        break
    fi
done
# maturin finds zig (the ziglang package) through the venv's python.
export PATH="$tools/bin:$PATH"

mkdir -p "$out"
rm -f "$out"/gpuenv-*.whl "$out"/gpuenv-*.tar.gz
# Separate commands: `build --sdist` would build the wheel from the unpacked sdist in a temp
# dir, compiling everything again; in the tree it reuses target/.
maturin sdist --out "$out"
if [ $zig -eq 0 ]; then
    maturin build --profile "$profile" --out "$out"
else
    installed=$(rustup target list --installed)
    for arch in "${archs[@]}"; do
        triple="$arch-unknown-linux-gnu"
        grep -qx "$triple" <<<"$installed" || rustup target add "$triple"
        maturin build --profile "$profile" --zig --target "$triple" --compatibility manylinux2014 --out "$out"
        whl=$(ls "$out"/gpuenv-*manylinux_2_17_"$arch"*.whl)
        # The static musl proxy in place of the glibc one (same profile, same target dir).
        proxy=$(GPUENV_PY_TOOLS="$tools" scripts/static-proxy.sh "$profile" "$arch")
        unpacked=$(mktemp -d)
        wheel unpack --dest "$unpacked" "$whl" >/dev/null
        scripts=("$unpacked"/gpuenv-*/gpuenv-*.data/scripts)
        [ -x "${scripts[0]}/gpuenv-shim" ] || { echo "build-wheel.sh: $whl has no gpuenv-shim script" >&2; exit 1; }
        install -m 755 "$proxy" "${scripts[0]}/gpuenv-shim"
        rm "$whl"
        wheel pack --dest-dir "$out" "$unpacked"/gpuenv-* >/dev/null
        rm -rf "$unpacked"
        whl=$(ls "$out"/gpuenv-*manylinux_2_17_"$arch"*.whl)
        # -v: without it auditwheel stops after the symbol policy when glibc's versions
        # constrain the tag, and never says whether other libraries are needed.
        shown=$(auditwheel -v show "$whl" 2>/dev/null)
        # The policy is quoted ("manylinux_2_17_aarch64"); the wheel's name also holds the tag.
        if ! grep -q "\"manylinux_2_17_$arch\"" <<<"$shown" || ! grep -q 'requires no external shared libraries' <<<"$shown"; then
            printf 'build-wheel.sh: auditwheel does not call %s manylinux_2_17:\n%s\n' "$whl" "$shown" >&2
            exit 1
        fi
    done
fi
twine check --strict "$out"/gpuenv-*.whl "$out"/gpuenv-*.tar.gz
ls "$out"/gpuenv-*
