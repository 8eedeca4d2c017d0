#!/usr/bin/env bash
# The compiled core on 64-bit Arm (aarch64), proven on an x86-64 Debian machine: cross-build
# _core with Debian's cross compiler, then run the core tests with an arm64 CPython under
# qemu-user (docs/architecture.md, "Runtime SIMD dispatch"; results in benches/RESULTS.md).
#
#   scripts/aarch64_qemu.sh            # the core tests (CORE_FILES below; ~16 min on 2 cores)
#   scripts/aarch64_qemu.sh --quick    # a short pass (QUICK_FILES; a few minutes: CI runs it)
#   scripts/aarch64_qemu.sh --all      # the core tests in full and more (ALL_FILES; ~2 h)
#   scripts/aarch64_qemu.sh [--work DIR] [--jobs N] [-- any pytest arguments instead of the files]
#
# What it does, each step skipped when its result is already in the work folder (default
# ~/.cache/chrono_engine/aarch64, or CHRONO_AARCH64_WORK; about 700 MB, most of it the wheels):
#   1. apt-get installs g++-aarch64-linux-gnu and qemu-user-static where they are missing;
#   2. an arm64 root is unpacked (dpkg -x) from Debian's arm64 packages of python3.X (the
#      version the host's Debian release ships), its libraries and its headers, fetched by the
#      host's apt sources into the work folder (the system's dpkg and apt state are untouched);
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
# Exit status: pytest's (1: a test failed), 2 when the cross build or the NEON check fails,
# 3 when this machine cannot run it (no apt-get, not root, a download failed, no arm64
# python3 in the apt sources): .ci/run skips on 3 and fails on anything else.
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
ALL_FILES=("${CORE_FILES[@]}" tests/test_internal_search.py tests/test_internal_probe.py
  tests/test_partition_store.py tests/test_ingest_order.py tests/test_hostile_args.py tests/test_prepare.py
  tests/test_coalesce.py tests/test_core_stub.py)

WORK=${CHRONO_AARCH64_WORK:-$HOME/.cache/chrono_engine/aarch64}
JOBS=${JOBS:-2}
QUICK=0
PYTEST_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --all) QUICK=2 ;;
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
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$WORK/debs"
APT_OPTS=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o "Dir::State::Lists=$APT_DIR/lists"
  -o "Dir::Cache=$APT_DIR/cache" -o Dir::State::status=/dev/null -o APT::Sandbox::User=root -q)
apt_update() { apt-get "${APT_OPTS[@]}" update >"$WORK/apt-update.log" 2>&1 \
  || { tail -5 "$WORK/apt-update.log" >&2; absent "apt-get update (arm64) failed (log: $WORK/apt-update.log)"; }
  touch "$APT_DIR/updated"; }
# lists older than a week are refreshed (a package's version gone from the mirror would 404)
if [ -z "$(find "$APT_DIR/updated" -mtime -7 2>/dev/null)" ]; then
  say "arm64 package lists (apt-get update)"
  apt_update
fi
# the host release's Python: python3-minimal's dependency names it (python3.11 on Debian 12)
PYV=$(apt-cache "${APT_OPTS[@]}" depends python3-minimal 2>/dev/null | sed -n 's/.*Depends: python\(3\.[0-9]*\)-minimal.*/\1/p' | head -1)
[ -n "$PYV" ] || absent "no arm64 python3-minimal in the apt sources (Debian's arm64 packages are needed; Ubuntu keeps them on ports.ubuntu.com)"
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
# the versions from the wheels' .dist-info names (importing them under qemu takes seconds)
versions=$(cd "$SITE" && for d in numpy-*.dist-info pyarrow-*.dist-info numba-*.dist-info pytest-[0-9]*.dist-info; do
  d=${d%.dist-info}; printf '%s %s, ' "${d%%-*}" "${d#*-}"; done)
versions=${versions%, }
phase "wheels: $versions"

# ---- 4. the cross build ----------------------------------------------------------------------
pybind11_dir=$("$HOST_PYTHON" -c 'import pybind11; print(pybind11.get_cmake_dir())' 2>/dev/null || true)
if [ -z "$pybind11_dir" ]; then
  [ -d "$WORK/host-pybind11/pybind11" ] || "$HOST_PYTHON" -m pip install --disable-pip-version-check -q \
    --target "$WORK/host-pybind11" "pybind11>=2.13" >"$WORK/pip-pybind11.log" 2>&1 \
    || absent "pip could not fetch pybind11 (log: $WORK/pip-pybind11.log)"
  pybind11_dir=$(PYTHONPATH=$WORK/host-pybind11 "$HOST_PYTHON" -c 'import pybind11; print(pybind11.get_cmake_dir())')
fi
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
cp -r chrono_engine tests pyproject.toml CMakeLists.txt cpp "$STAGE/"  # the sources: test_build.py reads them
find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$STAGE"/chrono_engine/_core*.so "$STAGE"/chrono_engine/_native.json
cp "$SO" "$BUILD/_native.json" "$STAGE/chrono_engine/"
say "pytest under qemu: ${PYTEST_ARGS[*]}"
test_started=$SECONDS
set +e
(cd "$STAGE" && env -u CHRONO_DATA_DIR CI=1 PYTHONPATH="$STAGE:$SITE" \
  "$PY" -m pytest -q -p no:cacheprovider -m "not slow" "${PYTEST_ARGS[@]}") 2>&1 | tee "$WORK/pytest.log"
rc=${PIPESTATUS[0]}
set -e
test_s=$((SECONDS - test_started))
counts=$(grep -E '[0-9]+ (passed|failed|errors?|skipped|deselected)' "$WORK/pytest.log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
echo "aarch64 under qemu: ${counts:-no pytest summary} (pytest rc $rc); tests ${test_s} s, build ${build_s} s, total $((SECONDS - started)) s; python$PYV, $versions; $(aarch64-linux-gnu-g++ -dumpfullversion), $(qemu-aarch64-static --version | head -1 | sed 's/ *Copyright.*//')"
exit "$rc"
}
