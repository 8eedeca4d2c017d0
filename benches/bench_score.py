"""``ce.score`` throughput: rescoring candidates with exponential decay, against NumPy and
chronofy, measured side by side in one run.

For ``--n`` candidates (default 10 M: similarity, observed_at, reliability and one of 16
fact types, each with its own exponential half-life, 14 days to 10 years) it times

* ``ce.score`` (Arrow in, Arrow out, product fusion, one thread unless ``--threads``),
  end to end, and its compiled kernel alone (writing into arrays it reuses) as a
  diagnostic. ce.score's outputs are buffers of Arrow's default memory pool (named in the
  report): a pool that keeps freed pages (mimalloc, jemalloc) serves repeated calls
  without fresh page faults; ``ARROW_DEFAULT_MEMORY_POOL=system`` measures without that;
* a NumPy reference of the same formula (score = clip(s, 0, 1) · q · exp(−β_j · age)),
  vectorised, float64;
* chronofy's ``ExponentialDecay.compute_batch`` (the paper's reference package, one
  Python object per fact) on ``--chronofy-n`` candidates, when chronofy is installed
  (object construction is timed apart and not charged to it);

checks that ce.score agrees with NumPy (and chronofy's validity) to 1e-6, prints
candidates per second and the ratios, and writes JSON::

    python benches/bench_score.py --json bench_score.json
    python benches/bench_score.py --n 1000000 --threads 1,2
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa

import chrono_engine as ce
from chrono_engine.bench import best_time, machine_info, write_json
from chrono_engine.synthetic import STEEP_HALF_LIVES, US_PER_DAY

TOL = 1e-6
T_QUERY = datetime(2025, 6, 1, tzinfo=timezone.utc)


def make_candidates(n: int, seed: int = 0) -> dict:
    """NumPy columns of ``n`` candidates observed over the ten years before T_QUERY."""
    rng = np.random.default_rng(seed)
    t_us = int(T_QUERY.timestamp() * 1_000_000)
    return {
        "similarity": rng.uniform(-0.2, 1.0, n).astype(np.float32),
        "observed_at": t_us - rng.integers(0, 3650 * US_PER_DAY, n),
        "reliability": (1.0 - 0.5 * rng.random(n)).astype(np.float32),
        "fact_type": rng.integers(0, len(STEEP_HALF_LIVES), n).astype(np.int32),
    }


def to_table(c: dict, types: list[str]) -> pa.Table:
    """The candidates as an Arrow table (timestamp[us, UTC], dictionary fact_type)."""
    return pa.table({
        "similarity": pa.array(c["similarity"]),
        "observed_at": pa.array(c["observed_at"], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "reliability": pa.array(c["reliability"]),
        "fact_type": pa.DictionaryArray.from_arrays(pa.array(c["fact_type"]), pa.array(types)),
    })


def numpy_score(c: dict, betas: np.ndarray, t_us: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference: (score, validity) with product fusion, float64."""
    age = np.maximum((t_us - c["observed_at"]) / US_PER_DAY, 0.0)
    v = c["reliability"].astype(np.float64) * np.exp(-betas[c["fact_type"]] * age)
    s = np.clip(c["similarity"].astype(np.float64), 0.0, 1.0) * v
    return s, v


def run(args) -> dict:
    types = [f"type{i:02d}" for i in range(len(STEEP_HALF_LIVES))]
    betas = math.log(2.0) / np.asarray(STEEP_HALF_LIVES, np.float64)
    policy = ce.ScoringPolicy(decay=ce.DecayPolicy({t: ce.Exponential(half_life=float(h))
                                                    for t, h in zip(types, STEEP_HALF_LIVES)}),
                              fusion="product")
    t_us = int(T_QUERY.timestamp() * 1_000_000)
    report: dict = {"benchmark": "score", "n": args.n, "machine": machine_info(), "rows": {}, "notes": [],
                    "arrow_memory_pool": pa.default_memory_pool().backend_name}

    t0 = time.perf_counter()
    cands = make_candidates(args.n, args.seed)
    table = to_table(cands, types)
    print(f"{args.n:,} candidates, 16 fact types with exponential half-lives "
          f"{STEEP_HALF_LIVES[0]:.0f}-{STEEP_HALF_LIVES[-1]:.0f} days (made in {time.perf_counter() - t0:.1f} s); "
          f"ce.score's outputs come from Arrow's {report['arrow_memory_pool']} memory pool")

    # NumPy reference (also the check)
    s_np, (ref_s, ref_v) = best_time(lambda: numpy_score(cands, betas, t_us), args.min_time, args.repeat)
    report["rows"]["numpy"] = {"seconds": s_np, "per_s": args.n / s_np, "n": args.n, "threads": 1}

    for th in args.threads:
        s, out = best_time(lambda: ce.score(table, as_of=T_QUERY, policy=policy, threads=th),
                           args.min_time, args.repeat)
        got_s = out.column("score").to_numpy()
        got_v = out.column("validity").to_numpy()
        err_s = float(np.max(np.abs(got_s - ref_s))) if args.n else 0.0
        err_v = float(np.max(np.abs(got_v - ref_v))) if args.n else 0.0
        if err_s > TOL or err_v > TOL:
            raise AssertionError(f"ce.score differs from the NumPy reference: max |Δscore| = {err_s:.2e}, "
                                 f"max |Δvalidity| = {err_v:.2e} (tolerance {TOL:g})")
        report["rows"][f"ce.score_t{th}"] = {"seconds": s, "per_s": args.n / s, "n": args.n, "threads": th,
                                             "max_abs_err_score": err_s, "max_abs_err_validity": err_v}
        # the compiled kernel alone (private; a diagnostic of the Python-side overhead)
        try:
            from chrono_engine import _core
            specs = policy.policy.kernel_table(types)
            sim = np.ascontiguousarray(cands["similarity"])
            obs = np.ascontiguousarray(cands["observed_at"], np.int64)
            rel = np.ascontiguousarray(cands["reliability"])
            ft = np.ascontiguousarray(cands["fact_type"])
            o_s, o_v = np.zeros(args.n, np.float32), np.zeros(args.n, np.float32)  # outputs written in place
            s_k, _ = best_time(lambda: _core.score(sim, obs, rel, ft, None, None, None, specs, t_us,
                                                   0, 0.75, 0.1, 0, 0.0, th, o_s, o_v), args.min_time, args.repeat)
            report["rows"][f"kernel_t{th}"] = {"seconds": s_k, "per_s": args.n / s_k, "n": args.n, "threads": th}
        except Exception as e:  # noqa: BLE001 - private signature may change; the bench goes on
            report["notes"].append(f"kernel-only timing skipped: {type(e).__name__}: {str(e).splitlines()[0]}")
    del ref_s

    # chronofy: one pydantic object per fact, a Python loop
    try:
        from chronofy import ExponentialDecay, TemporalFact
    except ImportError:
        report["notes"].append("chronofy is not installed: peer skipped")
    else:
        m = min(args.chronofy_n, args.n)
        decay = ExponentialDecay(beta={t: float(b) for t, b in zip(types, betas)})
        epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        t0 = time.perf_counter()
        facts = [TemporalFact(content="", timestamp=epoch + timedelta(microseconds=int(o)), fact_type=types[f],
                              source_quality=float(q))
                 for o, f, q in zip(cands["observed_at"][:m], cands["fact_type"][:m], cands["reliability"][:m])]
        build = time.perf_counter() - t0
        s_c, vals = best_time(lambda: decay.compute_batch(facts, T_QUERY), args.min_time, args.repeat)
        err = float(np.max(np.abs(np.asarray(vals) - ref_v[:m]))) if m else 0.0
        if err > TOL:
            raise AssertionError(f"chronofy's validity differs from the NumPy reference by {err:.2e}")
        report["rows"]["chronofy"] = {"seconds": s_c, "per_s": m / s_c, "n": m, "threads": 1,
                                      "object_construction_s": build, "max_abs_err_validity": err,
                                      "version": _version("chronofy")}
    del ref_v

    rows = report["rows"]
    print(f"\n{'implementation':<22}{'n':>12}{'threads':>8}{'seconds':>10}{'candidates/s':>15}")
    for name, r in rows.items():
        print(f"{name:<22}{r['n']:>12,}{r['threads']:>8}{r['seconds']:>10.4f}{r['per_s']:>15,.0f}")
    ratios = {}
    one = rows.get("ce.score_t1") or rows[next(k for k in rows if k.startswith("ce.score"))]
    ratios["ce.score / numpy"] = one["per_s"] / rows["numpy"]["per_s"]
    if "chronofy" in rows:
        ratios["ce.score / chronofy"] = one["per_s"] / rows["chronofy"]["per_s"]
    report["ratios"] = ratios
    report["target"] = {"candidates_per_s_per_core": 200e6, "met": one["per_s"] >= 200e6}
    print("\nratios (same run): " + ", ".join(f"{k} = {v:,.1f}x" for k, v in ratios.items()))
    print(f"ce.score on one thread: {one['per_s'] / 1e6:,.0f} M candidates/s (target 200 M/s: "
          f"{'met' if report['target']['met'] else 'not met'}); agreement with NumPy within {TOL:g}")
    for note in report["notes"]:
        print("note:", note)
    if args.json:
        print(f"JSON written to {write_json(args.json, report)}")
    return report


def _version(pkg: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(pkg)
    except Exception:  # noqa: BLE001
        return None


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=10_000_000, help="candidates")
    p.add_argument("--chronofy-n", type=int, default=200_000, help="candidates for chronofy (slow)")
    p.add_argument("--threads", type=lambda s: tuple(int(x) for x in s.split(",")), default=(1,),
                   help="ce.score thread counts, e.g. 1,2")
    p.add_argument("--repeat", type=int, default=5, help="at most this many runs per timing (best counts)")
    p.add_argument("--min-time", type=float, default=0.5, help="stop repeating after this many seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default="bench_out/bench_score.json",
                   help="where to write the JSON report ('' = nowhere)")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
