"""The planner across the share of the store in force: no point slower than ``exact=True``.

The search bench measures 50%, 10% and 1% in force. Between them the planner switches plans
(the probe, the certified scan, and on stores without a partition the graph walk), and a
switch in the wrong place is a cliff: before the probe/scan cost model (docs/search.md), a
group of 64 queries at 1M rows with 15-20% in force walked the graph at up to 2.5x the cost
of the certified scan. This sweeps the share in force on one synthetic store (the search
bench's steep regime) and prints, per mode and share, in the same run:

* the default search's QPS (``search_batch``, groups of 64, one thread), its recall@k
  against ``exact=True``, the share of answers certified and the plans taken;
* ``exact=True`` (the certified scan) QPS, and default / exact;
* the Numba peer (the harness's fused scan, the best peer of the 1M rows) on
  ``--peer-queries`` queries, and default / Numba.

The store is built once and saved (``--store``; reused when it exists, so a 1M store's
ingest is paid once)::

    python benches/bench_planner_sweep.py                                  # 200k x 384
    python benches/bench_planner_sweep.py --n 1000000 --store /tmp/sweep-1m
    python benches/bench_planner_sweep.py --regime gentle --fusion linear --store /tmp/sweep-gentle
    python benches/bench_planner_sweep.py --n 30000 --dim 64 --queries 64 --share 0.5,0.1   # smoke
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

import chrono_engine as ce
from chrono_engine import synthetic as syn
from chrono_engine.bench import machine_info, write_json
from chrono_engine.bench.checks import answers_from_table, recall_at_k
from chrono_engine.bench.corpus import KNOWN_ALL, Queries, policy_for, validity_spans, workload_from_engine
from chrono_engine.bench.timing import best_time

SHARES = (0.5, 0.3, 0.2, 0.15, 0.1, 0.05, 0.02, 0.01)


def open_or_build(args) -> tuple[ce.Engine, syn.Corpus | None, float]:
    """The engine (opened read-only from ``--store`` when it holds one, else built from the
    corpus and saved there), the corpus (None when opened) and the open or build seconds."""
    store = args.store or ""
    if store and os.path.exists(os.path.join(store, "CURRENT")):
        t0 = time.perf_counter()
        eng = ce.Engine.open(store, read_only=True, threads=1)
        return eng, None, time.perf_counter() - t0
    half_lives = syn.STEEP_HALF_LIVES if args.regime == "steep" else syn.GENTLE_HALF_LIVES
    corpus = syn.make_corpus(args.n, args.dim, half_lives=half_lives, seed=args.seed)
    eng = ce.Engine(args.dim, decay=policy_for(corpus.half_lives), threads=os.cpu_count() or 1)
    t0 = time.perf_counter()
    eng.ingest(corpus.to_dict())
    built = time.perf_counter() - t0
    if store:
        eng.save(store)
    eng.threads = 1
    return eng, corpus, built


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--peer-queries", type=int, default=20, help="queries timed for the Numba peer (0: none)")
    p.add_argument("--share", default=",".join(map(str, SHARES)), help="shares of the store in force")
    p.add_argument("--modes", default="as_of,latest")
    p.add_argument("--fusion", choices=["product", "linear"], default="product",
                   help="product (the steep regime's) or linear (the gentle regime's, alpha 0.75)")
    p.add_argument("--regime", choices=["steep", "gentle"], default="steep", help="the corpus' half-lives, when built")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--store", default="", help="where the store is saved and reused ('' = nowhere)")
    p.add_argument("--json", default="", help="write the figures here")
    args = p.parse_args(argv)

    eng, corpus, setup_s = open_or_build(args)
    print(f"store: {len(eng):,} rows x {eng.dim}; {'opened' if corpus is None else 'built'} in {setup_s:.1f} s")
    spans = corpus if corpus is not None else validity_spans(eng)
    qfile = args.store + ".queries.npy" if args.store else ""
    if corpus is not None:
        qv = corpus.queries(max(args.queries, 1000), seed=1)
        if qfile:
            np.save(qfile, qv)
    elif os.path.exists(qfile):
        qv = np.load(qfile)
    else:  # a store from elsewhere: its own vectors, perturbed
        rng = np.random.default_rng(1)
        qv = eng.vectors()[rng.choice(len(eng), args.queries, replace=False)]
        qv = qv + rng.normal(0, 0.5 / np.sqrt(eng.dim), qv.shape).astype(np.float32)
    if len(qv) < args.queries:
        raise SystemExit(f"{qfile} holds {len(qv)} queries; --queries {args.queries} needs more")
    qv = np.ascontiguousarray(qv[:args.queries], np.float32)
    peer = None
    if args.peer_queries > 0:
        try:
            from chrono_engine.bench.numba_scan import NumbaScan
            peer = NumbaScan(workload_from_engine(eng))
        except ImportError as e:  # the harness runs without numba
            print(f"Numba peer unavailable: {e}")
    rows = []
    print(f"{'mode':7s} {'in force':>8s} {'default':>9s} {'exact':>9s} {'dflt/exact':>10s} {'recall':>6s} "
          f"{'cert':>5s} {'numba':>8s} {'dflt/numba':>10s}  plans")
    for mode in args.modes.split(","):
        for share in (float(s) for s in args.share.split(",")):
            T = syn.times_for_selectivity(spans, share, args.queries, seed=2)
            kw = dict(mode=mode, as_of=T, threads=1, known_at=KNOWN_ALL, fusion=args.fusion)
            eng.search_batch(qv[:8], args.k, **{**kw, "as_of": T[:8]})  # warm
            s_x, x = best_time(lambda: eng.search_batch(qv, args.k, exact=True, **kw), 0.0, max_repeat=1)
            s_d, d = best_time(lambda: eng.search_batch(qv, args.k, **kw), 0.0, max_repeat=1)
            e = eng.search_batch(qv, args.k, explain=True, **kw)
            first = e.column("rank").to_numpy() == 1
            plans = collections.Counter(np.asarray(e.column("plan").to_pylist())[first].tolist())
            got, certified = answers_from_table(d, args.queries)
            recall = recall_at_k(got, answers_from_table(x, args.queries)[0])
            cert = float(certified.mean())
            row = {"mode": mode, "share": share, "default_qps": args.queries / s_d, "exact_qps": args.queries / s_x,
                   "recall": recall, "certified": cert, "plans": dict(plans)}
            if peer is not None:
                m = min(args.peer_queries, args.queries)
                q = Queries(qv[:m], T[:m].astype(np.int64), np.full(m, KNOWN_ALL, np.int64), mode=mode,
                            fusion=args.fusion, k=args.k)
                peer.search(Queries(qv[:1], T[:1].astype(np.int64), np.full(1, KNOWN_ALL, np.int64), mode=mode,
                                    fusion=args.fusion, k=args.k))
                s_p, _ = best_time(lambda: peer.search(q), 0.0, max_repeat=1)
                row["numba_qps"] = m / s_p
            rows.append(row)
            nb = f"{row['numba_qps']:8.1f} {row['default_qps'] / row['numba_qps']:9.1f}x" if "numba_qps" in row else f"{'-':>8s} {'-':>10s}"
            print(f"{mode:7s} {share:8.0%} {row['default_qps']:9.1f} {row['exact_qps']:9.1f} "
                  f"{row['default_qps'] / row['exact_qps']:9.2f}x {recall:6.3f} {cert:5.2f} {nb}  {dict(plans)}",
                  flush=True)
    worst = min(rows, key=lambda r: r["default_qps"] / r["exact_qps"])
    print(f"lowest default/exact: {worst['default_qps'] / worst['exact_qps']:.2f}x "
          f"({worst['mode']}, {worst['share']:.0%} in force)")
    if args.json:
        write_json(args.json, {"bench": "planner_sweep", "n": len(eng), "dim": eng.dim, "queries": args.queries,
                               "machine": machine_info(), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
