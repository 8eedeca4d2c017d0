"""Lifecycle at scale: supersede, retract and history cost per call as the store grows.

A server taking a stream of revisions must not pay for the size of the store on each one.
Every lifecycle call works on the rows of one lineage (the core's per-stem row lists) and
records its change as an event (no column is rewritten, no index rebuilt), so the time per
call should stay flat from 100k to 10M items. Per store size N this builds an engine of N
items (small vectors, a thin HNSW graph: the graph is not what is measured), then times:

* ``supersede``: a 3-row version of a lineage whose previous version has 3 rows;
* ``retract``: one id;
* ``history``: a lineage of 5 versions;
* ``full copy`` (the reference): ``Engine.columns()``, the all-rows copy each of those calls
  made before (one per call), measured on the same store in the same run.

Calls of the three kinds are interleaved, so a slow spell of the shared machine falls on
all of them; the median per call is reported, and the ratio of each size to the smallest
(the issue's goal: 10M / 100k ≤ 2)::

    python benches/bench_lifecycle.py                       # 100k, 1M, 10M
    python benches/bench_lifecycle.py --sizes 100000 1000000 --calls 200 --json out.json
"""
from __future__ import annotations

import argparse
import gc
import sys
import time

import numpy as np

import chrono_engine as ce
from chrono_engine.bench import machine_info, write_json

DIM = 4
T0 = np.datetime64("2020-01-01", "us")


def build(n: int, lineages: int, threads: int, seed: int = 0) -> ce.Engine:
    """N items: ``lineages`` stems of one 3-row version each, the rest without a stem,
    ingested in batches of 200k."""
    rng = np.random.default_rng(seed)
    eng = ce.Engine(dim=DIM, M=4, ef_construction=8, threads=threads or None)
    stems = np.full(n, None, dtype=object)
    stems[:3 * lineages] = np.repeat([f"L{i}" for i in range(lineages)], 3)
    for lo in range(0, n, 200_000):
        hi = min(n, lo + 200_000)
        m = hi - lo
        s = stems[lo:hi]
        eng.ingest({"vector": rng.normal(size=(m, DIM)).astype(np.float32),
                    "valid_from": T0 + rng.integers(0, 3 * 365, m).astype("timedelta64[D]"),
                    "stem_id": list(s), "version": ["1" if x is not None else None for x in s],
                    "ingested_at": np.full(m, T0)})
    return eng


def measure(eng: ce.Engine, calls: int, seed: int = 1) -> dict:
    """Per-call seconds of each operation (lists)."""
    rng = np.random.default_rng(seed)
    n = len(eng)
    vec3 = rng.normal(size=(3, DIM)).astype(np.float32)
    # a 5-version lineage for history
    hist = "L0"
    for v in range(2, 6):
        eng.supersede(hist, {"vector": vec3}, T0 + np.timedelta64(2000 + v, "D"), version=str(v))
    times = {"supersede": [], "retract": [], "history": [], "full copy": []}
    victims = rng.choice(np.arange(3 * (calls + 2), n), size=calls, replace=False)
    for i in range(calls):
        t = time.perf_counter()
        eng.supersede(f"L{i + 1}", {"vector": vec3}, T0 + np.timedelta64(3000, "D"), version="2")
        times["supersede"].append(time.perf_counter() - t)
        t = time.perf_counter()
        eng.retract([int(victims[i])])
        times["retract"].append(time.perf_counter() - t)
        t = time.perf_counter()
        h = eng.history(hist)
        times["history"].append(time.perf_counter() - t)
        assert h.num_rows == 15
        if i % max(1, calls // 10) == 0:  # the old cost, sampled (it is slow)
            t = time.perf_counter()
            eng.columns()
            times["full copy"].append(time.perf_counter() - t)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    ap.add_argument("--calls", type=int, default=300, help="calls of each kind per size")
    ap.add_argument("--threads", type=int, default=0, help="ingest threads (0: all cores)")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    print(f"lifecycle cost per call, dim {DIM}, {a.calls} calls of each kind per size", flush=True)
    rows = []
    for n in a.sizes:
        t = time.perf_counter()
        eng = build(n, a.calls + 2, a.threads)
        built = time.perf_counter() - t
        times = measure(eng, a.calls)
        med = {k: float(np.median(v)) for k, v in times.items()}
        mean = {k: float(np.mean(v)) for k, v in times.items()}
        rows.append({"n": n, "build_s": built, "median_s": med, "mean_s": mean})
        print(f"N = {n:>11,}  (built in {built:.0f} s)  " +
              "  ".join(f"{k} {med[k] * 1e3:.3f} ms (mean {mean[k] * 1e3:.3f})" for k in times), flush=True)
        del eng
        gc.collect()
    base = rows[0]["median_s"]
    print(f"\nratio of the median per call to N = {rows[0]['n']:,}:")
    for r in rows:
        print(f"N = {r['n']:>11,}  " + "  ".join(f"{k} {r['median_s'][k] / base[k]:.2f}x" for k in base))
    last = rows[-1]["median_s"]
    print(f"\nat N = {rows[-1]['n']:,}, each call against one full-column copy (the cost per call before): " +
          "  ".join(f"{k} {last['full copy'] / last[k]:.0f}x faster" for k in ("supersede", "retract", "history")))
    if a.json:
        write_json(a.json, {"bench": "lifecycle", "machine": machine_info(), "dim": DIM, "calls": a.calls,
                            "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
