"""Run inputs through a harness once each, without libFuzzer (atheris need not be installed):
to reproduce a finding, or to check that a corpus still passes after a change.

    python fuzz/replay.py open build/fuzz/artifacts/open-crash-1234
    python fuzz/replay.py ingest fuzz/corpus/ingest        # every file of a folder

Prints each failing input's traceback; exit status 1 when any failed.
"""
from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str]) -> int:
    """Replay the files and folders ``argv[1:]`` through harness ``argv[0]``."""
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    harness = importlib.import_module(f"fuzz_{argv[0]}")
    files = [f for a in argv[1:] for f in (sorted(Path(a).iterdir()) if Path(a).is_dir() else [Path(a)])]
    failed = 0
    for f in files:
        try:
            harness.test_one_input(f.read_bytes())
        except Exception:  # noqa: BLE001 - every failure is reported, then the next input runs
            failed += 1
            print(f"--- {f}", file=sys.stderr)
            traceback.print_exc()
    print(f"{len(files)} inputs, {failed} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
