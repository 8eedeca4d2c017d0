"""Beyond one machine on Ray: ``chrono_engine.distributed`` against the same work in one
process, measured side by side in one run (docs/distributed.md).

``rescore``: Ray Data rescoring (:func:`chrono_engine.distributed.rescore`) of ``--rows``
candidates (default 10 M: id, similarity, observed_at, reliability, one of 16 fact types
with exponential half-lives of 14 days to 10 years, as ``bench_score.py``) on a local Ray
instance of ``--cpus`` CPUs, against in-process ``ce.score`` on one thread. Two sources:

* ``from_arrow``: the candidates made with NumPy, put in Ray's object store as blocks of
  ``--batch-size`` rows (not timed: a materialized dataset), rescored and materialized in
  the object store (timed: actor pool start, scheduling, the kernel, the outputs);
* ``parquet``: the candidates written to ``--files`` Parquet files in a temporary directory
  (not timed), then :func:`~chrono_engine.distributed.rescore_parquet` reads, rescores and
  writes Parquet (timed): the honest batch job. Its in-process peer reads, scores and writes
  the same files on one thread (``use_threads=False``).

Ray's figures are best of ``--repeat`` runs, each with a fresh actor pool, so its start is
charged to Ray. Every Ray output is checked to equal ``ce.score``'s bit for bit (rows
re-aligned by id). Rows/s, rows/s per core (Ray: divided by ``--cpus``; in-process: one
thread) and their ratio are printed and written as JSON::

    python benches/bench_ray.py rescore --rows 10000000 --cpus 2 --json bench_ray.json

``shards``: a :class:`~chrono_engine.distributed.ShardedEngine` of ``--shards`` shards (on
the same machine, ``--cpus`` CPUs shared among them) against one Engine on ``--cpus``
threads, same corpus and queries (``search_batch`` of ``--queries`` queries as of a time
with ~10% in force, default plan and ``exact=True``); the sharded answers are checked
identical to the one engine's under ``exact=True``. It reports the overhead honestly: on
one machine sharding only adds work (the fan-out, Ray's calls, the merge)::

    python benches/bench_ray.py shards --n 100000 --shards 2,4
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import chrono_engine as ce
from chrono_engine.bench import best_time, machine_info, write_json
from chrono_engine.synthetic import STEEP_HALF_LIVES, US_PER_DAY

T_QUERY = datetime(2025, 6, 1, tzinfo=timezone.utc)
TYPES = [f"type{i:02d}" for i in range(len(STEEP_HALF_LIVES))]


def make_table(n: int, seed: int = 0) -> pa.Table:
    """``n`` candidates observed over the ten years before T_QUERY (Arrow, dictionary fact_type)."""
    rng = np.random.default_rng(seed)
    t_us = int(T_QUERY.timestamp() * 1_000_000)
    return pa.table({
        "id": np.arange(n, dtype=np.int64),
        "similarity": rng.uniform(-0.2, 1.0, n).astype(np.float32),
        "observed_at": pa.array(t_us - rng.integers(0, 3650 * US_PER_DAY, n), pa.int64()).cast(
            pa.timestamp("us", tz="UTC")),
        "reliability": (1.0 - 0.5 * rng.random(n)).astype(np.float32),
        "fact_type": pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(TYPES), n).astype(np.int32)),
                                                    pa.array(TYPES)),
    })


def policy() -> ce.ScoringPolicy:
    return ce.ScoringPolicy(decay=ce.DecayPolicy({t: ce.Exponential(half_life=float(h))
                                                  for t, h in zip(TYPES, STEEP_HALF_LIVES)}))


def check_same(got: pa.Table, ref: pa.Table, what: str) -> None:
    """Raise unless ``got`` (any row order) has ``ref``'s validity and score bit for bit."""
    if got.num_rows != ref.num_rows:
        raise AssertionError(f"{what}: {got.num_rows:,} rows out, {ref.num_rows:,} in")
    order = np.argsort(got.column("id").to_numpy(), kind="stable")
    for col in ("validity", "score"):
        a = got.column(col).to_numpy()[order]
        if not np.array_equal(a, ref.column(col).to_numpy(), equal_nan=True):
            raise AssertionError(f"{what}: column {col!r} differs from ce.score")


def run_rescore(args) -> dict:
    """The ``rescore`` subcommand: Ray Data rescoring vs in-process ce.score."""
    import ray
    from chrono_engine.distributed import rescore, rescore_parquet

    pol, n = policy(), args.rows
    report: dict = {"benchmark": "ray_rescore", "rows": n, "cpus": args.cpus, "batch_size": args.batch_size,
                    "machine": machine_info(), "ray": ray.__version__, "results": {}, "notes": []}
    t0 = time.perf_counter()
    table = make_table(n, args.seed)
    print(f"{n:,} candidates, 16 fact types with exponential half-lives (made in {time.perf_counter() - t0:.1f} s); "
          f"Ray with {args.cpus} CPUs, batches of {args.batch_size:,} rows")

    s, ref = best_time(lambda: ce.score(table, as_of=T_QUERY, policy=pol, threads=1), args.min_time, args.repeat)
    res = report["results"]
    res["ce.score"] = {"seconds": s, "rows_per_s": n / s, "cores": 1}

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        kw = {"as_of": T_QUERY, "batch_size": args.batch_size}
        if args.actors:
            kw["actors"] = args.actors
        step = max(1, args.batch_size)
        ds = ray.data.from_arrow([table.slice(i, step) for i in range(0, n, step)] or [table])

        def from_arrow():
            return rescore(ds, pol, **kw).materialize()
        s, out = best_time(from_arrow, 0.0, args.repeat)
        check_same(pa.concat_tables(ray.get(list(out.to_arrow_refs()))), ref, "from_arrow")
        res["ray.from_arrow"] = {"seconds": s, "rows_per_s": n / s, "cores": args.cpus}
        busy = actor_seconds(out.stats())
        if busy is None:
            report["notes"].append("Ray's stats name no remote wall time for MapBatches(_Scorer): in-actor rate skipped")
        else:  # the actors' own time: what a job long enough to hide the fixed start converges to
            res["ray.from_arrow in actors"] = {"seconds": busy, "rows_per_s": n / busy, "cores": 1}
        ds = out = None  # free the object store before the Parquet run

        if args.files:
            with tempfile.TemporaryDirectory(prefix="bench_ray_") as tmp:
                src, per = os.path.join(tmp, "in"), -(-n // args.files)
                os.makedirs(src)
                for i in range(args.files):
                    pq.write_table(table.slice(i * per, per), os.path.join(src, f"part-{i:04d}.parquet"))

                def in_process():
                    t = pq.read_table(src, use_threads=False)
                    pq.write_table(ce.score(t, as_of=T_QUERY, policy=pol, threads=1), os.path.join(tmp, "one.parquet"))
                s, _ = best_time(in_process, 0.0, args.repeat)
                res["in-process parquet"] = {"seconds": s, "rows_per_s": n / s, "cores": 1}

                def parquet():
                    rows = rescore_parquet(src, os.path.join(tmp, "out"), pol, mode="overwrite", **kw)
                    if rows != n:
                        raise AssertionError(f"parquet: {rows:,} rows written, {n:,} read")
                s, _ = best_time(parquet, 0.0, args.repeat)
                check_same(pq.read_table(os.path.join(tmp, "out")), ref, "parquet")
                res["ray.parquet"] = {"seconds": s, "rows_per_s": n / s, "cores": args.cpus}
    finally:
        ray.shutdown()

    for r in res.values():
        r["rows_per_s_per_core"] = r["rows_per_s"] / r["cores"]
    one = res["ce.score"]["rows_per_s_per_core"]
    ratios = {f"{k} / ce.score (per core)": r["rows_per_s_per_core"] / one for k, r in res.items() if k.startswith("ray.")}
    if "ray.parquet" in res:
        ratios["ray.parquet / in-process parquet (per core)"] = (res["ray.parquet"]["rows_per_s_per_core"]
                                                                / res["in-process parquet"]["rows_per_s_per_core"])
    report["ratios"] = ratios
    goal = ratios["ray.from_arrow / ce.score (per core)"]
    if "ray.from_arrow in actors" in res:
        # end to end = fixed start + n / (cores × in-actor rate): the rows at which the
        # per-core ratio would reach one half, if that rate is above half of ce.score's
        per_core = res["ray.from_arrow in actors"]["rows_per_s"]
        fixed = max(0.0, res["ray.from_arrow"]["seconds"] - n / (args.cpus * per_core))
        report["fixed_seconds"] = fixed
        half = 0.5 * one * args.cpus
        report["rows_for_half"] = fixed * half / (1 - half / (args.cpus * per_core)) if per_core > 0.5 * one else None
    report["target"] = {"per_core_ratio": 0.5, "rows_min": 10_000_000, "ratio": goal,
                        "met": goal >= 0.5 and n >= 10_000_000}
    print(f"\n{'run':<26}{'cores':>6}{'seconds':>10}{'rows/s':>16}{'rows/s per core':>18}")
    for k, r in res.items():
        print(f"{k:<26}{r['cores']:>6}{r['seconds']:>10.3f}{r['rows_per_s']:>16,.0f}{r['rows_per_s_per_core']:>18,.0f}")
    print("\nratios (same run): " + ", ".join(f"{k} = {v:.3f}" for k, v in ratios.items()))
    if "fixed_seconds" in report:
        rh = report["rows_for_half"]
        print(f"Ray's fixed cost per job (actor pool start, scheduling) ~ {report['fixed_seconds']:.2f} s; "
              f"per core in the actors {ratios['ray.from_arrow in actors / ce.score (per core)']:.0%} of ce.score; "
              + (f"the 50% goal would be met from ~{rh / 1e6:,.0f} M rows" if rh else "the 50% goal is out of reach"))
    print(f"goal: Ray Data per core >= 50% of in-process ce.score at >= 10M rows: "
          f"{'met' if report['target']['met'] else 'not met'} ({goal:.0%}); outputs equal ce.score bit for bit")
    if args.json:
        print(f"JSON written to {write_json(args.json, report)}")
    return report


# --------------------------------------------------------------------------------------
# shards: a ShardedEngine's search_batch against one Engine on the same machine
# --------------------------------------------------------------------------------------

def run_shards(args) -> dict:
    """Sharded ``search_batch`` QPS against one Engine on the same data and queries, both
    in this run: the synthetic steep corpus (``chrono_engine.synthetic``), ``--queries``
    queries as of a time with ~10% in force; the sharded answers must equal the single
    engine's (exact=True, checked) and both are timed with the default plan too."""
    import ray

    import chrono_engine as ce
    from chrono_engine import synthetic as syn
    from chrono_engine.bench.corpus import policy_for

    corpus = syn.make_corpus(args.n, args.dim, half_lives=syn.STEEP_HALF_LIVES, seed=0)
    data, pol = corpus.to_dict(), policy_for(corpus.half_lives)
    q = corpus.queries(args.queries, seed=1)
    T = syn.times_for_selectivity(corpus, 0.1, args.queries, seed=2)
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    out = {"machine": machine_info(), "n": args.n, "dim": args.dim, "queries": args.queries, "cpus": args.cpus,
           "rows": []}
    try:
        ref = None

        def measure(name, eng):
            nonlocal ref
            got = eng.search_batch(q, 10, mode="as_of", as_of=T, exact=True)
            if ref is None:
                ref = got
            same = got.column("id").to_pylist() == ref.column("id").to_pylist()
            row = {"engine": name, "identical_exact": same}
            for label, kw in (("default", {}), ("exact", {"exact": True})):
                best = float("inf")
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    eng.search_batch(q, 10, mode="as_of", as_of=T, **kw)
                    best = min(best, time.perf_counter() - t0)
                row[f"{label}_qps"] = args.queries / best
            out["rows"].append(row)
            print(f"{name:>10}: default {row['default_qps']:,.0f} QPS, exact {row['exact_qps']:,.0f} QPS, "
                  f"identical to one engine (exact): {same}", flush=True)

        one = ce.Engine(args.dim, decay=pol, threads=args.cpus)
        t0 = time.perf_counter()
        one.ingest(data)
        out["single_ingest_s"] = time.perf_counter() - t0
        measure("one Engine", one)
        del one
        for n in args.shards:  # one sharded engine at a time: each holds the machine's CPUs
            sh = ce.distributed.ShardedEngine(n, args.dim, decay=pol, cpus_per_shard=args.cpus / n,
                                              threads=max(1, args.cpus // n))
            t0 = time.perf_counter()
            sh.ingest(data)
            out[f"shards{n}_ingest_s"] = time.perf_counter() - t0
            measure(f"{n} shards", sh)
            sh.shutdown()
        base = out["rows"][0]
        for row in out["rows"][1:]:
            row["default_vs_single"] = row["default_qps"] / base["default_qps"]
            row["exact_vs_single"] = row["exact_qps"] / base["exact_qps"]
            print(f"{row['engine']}: {row['default_vs_single']:.2f}x / {row['exact_vs_single']:.2f}x one engine's QPS "
                  f"(default / exact; same machine, {args.cpus} CPUs)")
    finally:
        ray.shutdown()
    if args.json:
        print(f"JSON written to {write_json(args.json, out)}")
    return out


def actor_seconds(stats: str) -> float | None:
    """Total remote wall time of the scoring tasks (reading each block from the object
    store, ``ce.score``, writing its output) in Ray Data's stats text, or None."""
    m = re.search(r"MapBatches\(_Scorer\)[^\n]*\n\* Remote wall time:[^\n]*?([\d.]+)(us|ms|s) total", stats)
    return None if m is None else float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def _pool(s: str):
    lo, _, hi = s.partition(",")
    return (int(lo), int(hi)) if hi else int(lo)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rescore", help="Ray Data rescoring vs in-process ce.score",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    r.add_argument("--rows", type=int, default=10_000_000, help="candidates")
    r.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    r.add_argument("--actors", type=_pool, default=None,
                   help="actor pool: N (fixed) or MIN,MAX (default: rescore's, 1 to --cpus)")
    r.add_argument("--batch-size", type=int, default=1 << 19, help="rows per block and per ce.score call")
    r.add_argument("--files", type=int, default=8, help="Parquet files for the parquet run (0: skip it)")
    r.add_argument("--repeat", type=int, default=2, help="runs per timing (best counts)")
    r.add_argument("--min-time", type=float, default=0.5, help="in-process: stop repeating after this many seconds")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--json", default="bench_out/bench_ray_rescore.json", help="JSON report ('' = nowhere)")
    r.set_defaults(run=run_rescore)
    h = sub.add_parser("shards", help="ShardedEngine search_batch vs one Engine",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    h.add_argument("--n", type=int, default=100_000, help="items (the steep synthetic corpus)")
    h.add_argument("--dim", type=int, default=384)
    h.add_argument("--queries", type=int, default=1000)
    h.add_argument("--shards", type=lambda s: [int(x) for x in s.split(",")], default=[2, 4],
                   help="shard counts, comma-separated")
    h.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance (and the one engine's threads)")
    h.add_argument("--repeat", type=int, default=3, help="runs per timing (best counts)")
    h.add_argument("--json", default="bench_out/bench_ray_shards.json", help="JSON report ('' = nowhere)")
    h.set_defaults(run=run_shards)
    args = p.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
