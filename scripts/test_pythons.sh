#!/usr/bin/env bash
# Install the package from this checkout into a fresh venv of each CPython and run the core
# tests there: what "supported" means for 3.10-3.13 (README). CI runs it for every
# interpreter but the one that runs the full suite (.ci/run).
#
#   scripts/test_pythons.sh                 # every CPython 3.10-3.13 under $(pyenv root)/versions
#   scripts/test_pythons.sh 3.10 3.13       # those (a prefix of a version under pyenv, or a path to python)
#   CHRONO_TEST_FILES="tests/test_search.py" scripts/test_pythons.sh 3.12   # other tests
#   CHRONO_TEST_ALL=1 scripts/test_pythons.sh 3.13   # the whole suite (-m "not slow" dropped too)
#   CHRONO_INSTALL_FROM=dist/chrono_engine-0.x.tar.gz scripts/test_pythons.sh   # install the sdist (or a wheel) instead
#
# Each interpreter: a venv under $WORK (default build/pythons/<version>), `pip install .`
# with pip's default resolution of the dependencies (what a user gets on that Python), the
# light test dependencies, then pytest from the checkout with the console script of the
# venv (the installed package is imported, not the source tree). One line per interpreter at
# the end; exit status 1 if any failed or could not install.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=${WORK:-$root/build/pythons}
files=${CHRONO_TEST_FILES:-"tests/test_build.py tests/test_cpu_check.py tests/test_search.py tests/test_where.py
  tests/test_metadata.py tests/test_persistence.py tests/test_schema.py tests/test_engine_errors.py
  tests/test_bitemporal.py tests/test_lifecycle.py tests/test_decay.py tests/test_timelang.py tests/test_verify.py
  tests/test_score.py tests/test_query.py tests/test_cli.py tests/test_imports.py tests/test_hostile_args.py
  tests/test_ingest_order.py tests/test_probe.py tests/test_stl.py tests/test_tkg_ppr.py tests/test_demo.py"}
# the tests' own needs beyond the package's (pyproject's [test] less the heavy extras)
test_deps=(pytest hypothesis pandas pytz "pytest-asyncio>=1.0")

pythons=()
want=("$@")
if [ ${#want[@]} -eq 0 ]; then want=(3.10 3.11 3.12 3.13); fi
pyenv_root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for w in "${want[@]}"; do
  if [ -x "$w" ]; then pythons+=("$w"); continue; fi
  found=$(ls -d "$pyenv_root"/versions/"$w"* 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$found" ] && [ -x "$found/bin/python" ]; then
    pythons+=("$found/bin/python")
  else
    echo "test_pythons: no CPython $w under $pyenv_root/versions" >&2
    [ $# -eq 0 ] || exit 1  # asked for by name: its absence is a failure
  fi
done

summary=()
status=0
for py in "${pythons[@]}"; do
  ver=$("$py" -c 'import platform; print(platform.python_version())')
  venv="$work/$ver"
  log="$work/$ver.log"
  mkdir -p "$work"
  t0=$(date +%s)
  echo "test_pythons: CPython $ver ($py): installing" >&2
  rm -rf "$venv"
  if ! { "$py" -m venv "$venv" &&
         "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${CHRONO_INSTALL_FROM:-.}" "${test_deps[@]}"; } >"$log" 2>&1; then
    tail -20 "$log" >&2
    summary+=("CPython $ver: install FAILED ($(( $(date +%s) - t0 )) s; $log)")
    status=1
    continue
  fi
  t1=$(date +%s)
  echo "test_pythons: CPython $ver: installed in $((t1 - t0)) s; testing" >&2
  marks=(-m "not slow")
  sel=($files)
  if [ -n "${CHRONO_TEST_ALL:-}" ]; then marks=(); sel=(); fi
  # shellcheck disable=SC2086
  if "$venv/bin/pytest" -q -p no:cacheprovider "${marks[@]}" "${sel[@]}" >>"$log" 2>&1; then
    result="passed"
  else
    result="FAILED"
    status=1
    tail -40 "$log" >&2
  fi
  line=$(grep -E "^[0-9]+ (passed|failed)|^=+ .*(passed|failed)|passed|failed" "$log" | tail -1 | tr -d '=' | xargs)
  numpy=$("$venv/bin/python" -c 'import numpy, pyarrow; print(f"numpy {numpy.__version__}, pyarrow {pyarrow.__version__}")')
  summary+=("CPython $ver: $result: $line (install $((t1 - t0)) s, tests $(( $(date +%s) - t1 )) s; $numpy)")
done
printf '%s\n' "${summary[@]}"
exit $status
