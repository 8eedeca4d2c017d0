#!/usr/bin/env bash
# Run the fuzz harnesses (fuzz/fuzz_*.py) for SECONDS each, default 60 (docs/safety.md).
#
#   scripts/fuzz.sh             # parse_time, ingest, open, wal: 60 s each
#   scripts/fuzz.sh 300 open    # one harness, 5 minutes
#   scripts/fuzz.sh 0           # nothing (CI: CHRONO_FUZZ_SECONDS=0)
#
# Needs atheris (pip install "chrono_engine[fuzz]"). chrono_engine is imported as Python
# finds it: the installed package, or the source tree with PYTHONPATH=$PWD. Each run starts
# from the committed seeds (fuzz/corpus/<target>, read only) and what earlier runs found
# (build/fuzz/corpus/<target>, where new inputs go). Exit status 1 at the first finding;
# the input that caused it is build/fuzz/artifacts/<target>-crash-<sha1> (replay it with
# `python fuzz/fuzz_<target>.py <file>`) and the log build/fuzz/<target>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
seconds=${1:-60}
shift || true
# 0 skips (libFuzzer's -max_total_time=0 would mean "no limit")
[ "$seconds" -gt 0 ] || { echo "fuzz: 0 seconds, skipped" >&2; exit 0; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse_time ingest open wal)
out=build/fuzz
mkdir -p "$out/artifacts"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t"
  echo "fuzz: $t for ${seconds}s" >&2
  # timeout: libFuzzer's own clock starts after the imports and the harness's set-up
  if timeout $((seconds + 120)) "$PYTHON" "fuzz/fuzz_$t.py" -max_total_time="$seconds" -print_final_stats=1 \
       -artifact_prefix="$out/artifacts/$t-" "$out/corpus/$t" "fuzz/corpus/$t" >"$out/$t.log" 2>&1; then
    grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$out/$t.log" | tr '\n' ' ' >&2
    echo >&2
  else
    echo "fuzz: $t FOUND A PROBLEM (or could not run); end of $out/$t.log:" >&2
    grep -v "^INFO: Instrumenting" "$out/$t.log" | tail -n 60 >&2
    status=1
  fi
done
exit "$status"
