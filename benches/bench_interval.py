"""Interval-index counts (``Engine.count_valid_at``, ``Engine.count_overlapping``) over
10⁶ valid-time intervals, against the NumPy way of counting the same thing in the same run:
two sorted endpoint arrays and ``ndarray.searchsorted`` (valid at T = #{from <= T} - #{to <= T};
overlapping [a, b) = #{from < b} - #{to <= a}), which costs 16 bytes per item more than the
engine's index. Intervals start uniformly over 11 years with lognormal lifetimes (median
400 days) and 15% open ends, as in the search benchmark. Every count is checked against
NumPy; the times are per call through Python, best of ``--repeat``::

    python benches/bench_interval.py
    python benches/bench_interval.py --n 200000 --calls 5000
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import chrono_engine as ce

DAY = 86_400_000_000
OPEN_END = np.iinfo(np.int64).max


def run(args) -> dict:
    rng = np.random.default_rng(args.seed)
    n = args.n
    vf = (1_420_070_400_000_000 + rng.integers(0, 4018 * DAY, n)).astype(np.int64)
    life = (np.exp(rng.normal(np.log(400.0), 1.0, n)) * DAY).astype(np.int64) + 1
    vt = np.where(rng.random(n) < 0.15, OPEN_END, vf + life)
    eng = ce.Engine(2, metric="l2", M=4, ef_construction=16)
    t0 = time.perf_counter()
    eng.ingest({"vector": rng.normal(size=(n, 2)).astype(np.float32),
                "valid_from": vf.astype("datetime64[us]"),
                "valid_to": np.where(vt == OPEN_END, np.datetime64("NaT", "us"), vt.astype("datetime64[us]"))})
    print(f"{n:,} intervals ingested in {time.perf_counter() - t0:.1f} s; interval index "
          f"{eng.memory()['interval_index_per_item']:.1f} B/item")
    s_from, s_to = np.sort(vf), np.sort(vt)
    ts = rng.integers(vf.min(), vf.max() + 400 * DAY, args.calls)
    span = 30 * DAY
    cases = {
        "count_valid_at": (lambda t: eng.count_valid_at(int(t)),
                           lambda t: int(s_from.searchsorted(t, "right") - s_to.searchsorted(t, "right"))),
        "count_overlapping (30 days)": (
            lambda t: eng.count_overlapping(int(t), int(t) + span),  # what window mode counts
            lambda t: int(s_from.searchsorted(t + span, "left") - s_to.searchsorted(t, "right"))),
    }
    report = {"n": n, "calls": args.calls, "rows": []}
    print(f"\n{'query':<28} {'engine us':>10} {'numpy us':>10} {'ratio':>7}")
    for name, (f_eng, f_np) in cases.items():
        for t in ts[:200]:
            if f_eng(t) != f_np(t):
                raise AssertionError(f"{name} at {int(t)}: engine {f_eng(t)}, numpy {f_np(t)}")
        best = {}
        for _ in range(args.repeat):  # alternate the two sides
            for side, f in (("engine", f_eng), ("numpy", f_np)):
                t0 = time.perf_counter()
                for t in ts:
                    f(t)
                best[side] = min(best.get(side, np.inf), (time.perf_counter() - t0) / len(ts) * 1e6)
        ratio = best["numpy"] / best["engine"]
        report["rows"].append({"query": name, "engine_us": best["engine"], "numpy_us": best["numpy"], "ratio": ratio})
        print(f"{name:<28} {best['engine']:>10.2f} {best['numpy']:>10.2f} {ratio:>6.2f}x")
    print("ratio = numpy time / engine time per call (both through Python; > 1: the engine is faster)")
    return report


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
