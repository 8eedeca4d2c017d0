#!/usr/bin/env python3
"""Two writers at once on one store, as threads, as processes and as two ``chrono ingest``
commands, with a reader opening the store read-only throughout.

Each trial starts two writers together. A writer opens the store (or, for the CLI, runs
``chrono ingest``), adds its rows and checkpoints. Every writer must either succeed or get
StoreLockedError (the CLI: exit 1 and a one-line "open for writing by another writer");
afterwards the store must open and hold exactly the initial rows plus those of the writers
that succeeded. The reader must never get an error. Usage::

    python scripts/concurrent_writers.py --trials 100
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

DIM = 8
ROWS = 5

_PROC = textwrap.dedent("""
    import sys, time
    import numpy as np
    import chrono_engine as ce
    from chrono_engine.errors import StoreLockedError
    try:
        with ce.Engine.open(sys.argv[1], threads=1) as e:
            time.sleep(0.05)
            e.ingest({"vector": np.ones((%d, %d), np.float32), "valid_from": ["2024-01-01"] * %d})
            e.save()
    except StoreLockedError:
        print("LOCKED")
    else:
        print("OK")
""" % (ROWS, DIM, ROWS))


def _thread_writer(store: str, out: list, barrier: threading.Barrier) -> None:
    import numpy as np

    import chrono_engine as ce
    from chrono_engine.errors import StoreLockedError
    barrier.wait()
    try:
        with ce.Engine.open(store, threads=1) as e:
            time.sleep(0.05)
            e.ingest({"vector": np.ones((ROWS, DIM), np.float32), "valid_from": ["2024-01-01"] * ROWS})
            e.save()
    except StoreLockedError:
        out.append("LOCKED")
    else:
        out.append("OK")


def trial(kind: str, store: str, data: str) -> tuple[list, str | None]:
    if kind == "threads":
        out: list = []
        b = threading.Barrier(2)
        ts = [threading.Thread(target=_thread_writer, args=(store, out, b)) for _ in range(2)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        return out, None
    if kind == "processes":
        cmd = [sys.executable, "-c", _PROC, store]
    else:
        cmd = [sys.executable, "-m", "chrono_engine.cli", "ingest", store, data, "--threads", "1"]
    # cwd outside any checkout: `python -c` / `-m` put the cwd first on sys.path, and a source
    # tree's chrono_engine/ (no compiled core) must not shadow the installed package
    ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=str(Path(store).parent)) for _ in range(2)]
    out, bad = [], None
    for p in ps:
        so, se = p.communicate(timeout=300)
        if kind == "cli":
            if p.returncode == 0:
                out.append("OK")
            elif p.returncode == 1 and "open for writing by another writer" in se and len(se.strip().splitlines()) == 1:
                out.append("LOCKED")
            else:
                bad = f"cli exit {p.returncode}: {se.strip()[-300:]}"
        else:
            out.append(so.strip() or f"ERR {se.strip()[-300:]}")
    return out, bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=100)
    args = ap.parse_args()
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import chrono_engine as ce
    tmp = Path(tempfile.mkdtemp(prefix="chrono-writers-"))
    data = tmp / "rows.parquet"
    pq.write_table(pa.table({"vector": [np.ones(DIM, np.float32).tolist()] * ROWS,
                             "valid_from": ["2024-01-01"] * ROWS}), data)
    store = str(tmp / "store")
    ce.Engine.create(store, DIM, threads=1).close()
    expected = 0
    stop = threading.Event()
    reads, read_errors = [0], []

    def reader() -> None:
        while not stop.is_set():
            try:
                ce.Engine.open(store, read_only=True, threads=1)
                reads[0] += 1
            except Exception as e:  # noqa: BLE001 - any error is what is looked for
                read_errors.append(repr(e))

    r = threading.Thread(target=reader, daemon=True)
    r.start()
    kinds = ("threads", "processes", "cli")
    counts = {k: {"OK": 0, "LOCKED": 0} for k in kinds}
    problems = []
    t0 = time.time()
    for i in range(args.trials):
        kind = kinds[i % 3]
        out, bad = trial(kind, store, str(data))
        if bad or any(o not in ("OK", "LOCKED") for o in out):
            problems.append(f"trial {i} ({kind}): {bad or out}")
        for o in out:
            if o in counts[kind]:
                counts[kind][o] += 1
        expected += ROWS * out.count("OK")
        try:
            n = len(ce.Engine.open(store, read_only=True, threads=1))
        except Exception as e:  # noqa: BLE001
            problems.append(f"trial {i} ({kind}): the store no longer opens: {e!r}")
            break
        if n != expected:
            problems.append(f"trial {i} ({kind}): {n} rows, expected {expected}")
    stop.set()
    r.join()
    for p in problems[:10]:
        print(p)
    print(f"concurrent writers: {args.trials} trials, outcomes {counts}, store rows as expected: "
          f"{not problems}; reader: {reads[0]} opens, {len(read_errors)} errors "
          f"{read_errors[:2]}; {time.time() - t0:.0f} s")
    return 1 if problems or read_errors else 0


if __name__ == "__main__":
    sys.exit(main())
