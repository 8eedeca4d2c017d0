"""Ingest time of the engine against raw hnswlib ``add_items`` on the same vectors, with
the same M, ef_construction and threads, measured side by side; plus the metadata bytes
per item the engine keeps beyond the vectors and the graph (``Engine.memory()``).

Three timings per thread count:

* ``hnswlib``: ``hnswlib.Index(space="cosine")`` ``init_index`` + ``add_items`` (vectors only);
* ``engine (full rows)``: ``Engine.ingest`` of the synthetic corpus with every column
  (vector, valid/observed/ingested times, reliability, fact type, stem, version,
  deprecated, title, content): validation, metadata columns, interval index and graph;
* ``engine (vector + valid_from)``: the smallest ingestible rows, to show what the
  metadata costs.

It checks that every engine got every item (ids 0..n-1, numbered as stored), that hnswlib
and the engine agree on exact nearest neighbours of a few vectors, prints the ratio
engine / hnswlib (goal ≤ 1.2) and metadata bytes per item (goal ≤ 64), and writes JSON::

    python benches/bench_ingest.py --json bench_ingest.json
    python benches/bench_ingest.py --n 20000 --dim 128 --threads 1,2
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import chrono_engine as ce
from chrono_engine.bench import KNOWN_ALL, machine_info, policy_for, write_json
from chrono_engine.synthetic import make_corpus


def run(args) -> dict:
    import hnswlib

    t0 = time.perf_counter()
    corpus = make_corpus(args.n, args.dim, seed=args.seed)
    full = corpus.to_dict()
    minimal = {"vector": corpus.vector, "valid_from": full["valid_from"]}
    pol = policy_for(corpus.half_lives)
    print(f"N={args.n:,}, d={args.dim}, M={args.M}, ef_construction={args.ef_construction} "
          f"(corpus made in {time.perf_counter() - t0:.1f} s)")
    report: dict = {"benchmark": "ingest", "n": args.n, "dim": args.dim, "M": args.M,
                    "ef_construction": args.ef_construction, "machine": machine_info(), "rows": []}
    for th in args.threads:
        row: dict = {"threads": th, "repeat": args.repeat}
        variants = [("engine_full", full)] + ([] if args.no_minimal else [("engine_minimal", minimal)])
        engines: dict = {}
        index = None
        # builds alternate (hnswlib, engine, engine, hnswlib, ...) and the fastest of each counts,
        # so a burst of load from elsewhere on the machine hits one run, not one side
        for rep in range(args.repeat):
            index = None
            t0 = time.perf_counter()
            index = hnswlib.Index(space="cosine", dim=args.dim)
            index.init_index(max_elements=args.n, M=args.M, ef_construction=args.ef_construction, random_seed=100)
            index.add_items(corpus.vector, np.arange(args.n), num_threads=th)
            row["hnswlib_s"] = min(row.get("hnswlib_s", float("inf")), time.perf_counter() - t0)
            for name, rows in variants:
                engines.pop(name, None)
                eng = ce.Engine(args.dim, decay=pol if name == "engine_full" else None, M=args.M,
                                ef_construction=args.ef_construction, threads=th)
                t0 = time.perf_counter()
                ids = eng.ingest(rows)
                row[f"{name}_s"] = min(row.get(f"{name}_s", float("inf")), time.perf_counter() - t0)
                # automatic ids number the rows as stored (by valid_from: the default order)
                if len(eng) != args.n or not np.array_equal(np.sort(np.asarray(ids)), np.arange(args.n)):
                    raise AssertionError(f"{name}: expected ids 0..{args.n - 1}, got {len(ids)} ids")
                engines[name] = eng
        mem = engines["engine_full"].memory()
        row["engine_memory"] = mem
        row["ratio_full"] = row["engine_full_s"] / row["hnswlib_s"]
        if "engine_minimal_s" in row:
            row["ratio_minimal"] = row["engine_minimal_s"] / row["hnswlib_s"]
        # sanity: both graphs find a stored vector as its own nearest neighbour
        probe = corpus.vector[:: max(1, args.n // 20)][:20]
        index.set_ef(100)  # hnswlib's default ef (10) misses a stored vector's own row on clustered data
        labels, _ = index.knn_query(probe, k=1, num_threads=1)
        self_hit = float(np.mean(labels[:, 0] == np.arange(0, args.n, max(1, args.n // 20))[:20]))
        res = engines["engine_full"].search_batch(probe, 1, mode="all", fusion="linear", alpha=1.0,
                                                  arbitrate=False, known_at=KNOWN_ALL, threads=1, exact=True)
        eng_hit = float(np.mean(res.column("similarity").to_numpy() > 0.999))
        if self_hit < 0.9 or eng_hit < 0.9:
            raise AssertionError(f"graphs look broken: hnswlib self-recall {self_hit}, engine {eng_hit}")
        row["hnswlib_self_recall"] = self_hit
        report["rows"].append(row)
        del engines, index

    print(f"\n{'threads':>7} {'hnswlib s':>10} {'engine s':>10} {'ratio':>7} {'engine min s':>13} {'ratio':>7} "
          f"{'items/s engine':>15}")
    for r in report["rows"]:
        mn = f"{r['engine_minimal_s']:>13.2f} {r['ratio_minimal']:>6.2f}x" if "engine_minimal_s" in r else f"{'-':>13} {'-':>7}"
        print(f"{r['threads']:>7} {r['hnswlib_s']:>10.2f} {r['engine_full_s']:>10.2f} {r['ratio_full']:>6.2f}x "
              f"{mn} {args.n / r['engine_full_s']:>15,.0f}")
    mem = report["rows"][-1]["engine_memory"]
    meta = mem.get("temporal_per_item")
    extra = {k: v for k, v in mem.items() if k.endswith("_per_item")}
    print("\nengine memory (bytes): " + ", ".join(f"{k} {v:,.0f}" for k, v in mem.items() if not k.endswith("_per_item")))
    print("per item: " + ", ".join(f"{k} {v:.1f}" for k, v in extra.items()) +
          (f"  (goal: temporal metadata and its indexes <= 64 B/item: {meta:.1f}, "
           f"{'met' if meta <= 64 else 'not met'}; the string columns are the user's text)"
           if meta is not None else ""))
    print("ratio = engine ingest time / hnswlib add_items time, same data, M, ef_construction and threads "
          "(goal <= 1.2)")
    report["ratio_goal"] = 1.2
    report["metadata_goal_bytes_per_item"] = 64
    if args.json:
        print(f"JSON written to {write_json(args.json, report)}")
    return report


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=50_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--M", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=200)
    p.add_argument("--threads", type=lambda s: tuple(int(x) for x in s.split(",")), default=(os.cpu_count() or 1,),
                   help="thread counts (each builds hnswlib and the engine again)")
    p.add_argument("--repeat", type=int, default=1, help="builds per side (alternating; the fastest counts)")
    p.add_argument("--no-minimal", action="store_true", help="skip the vector + valid_from engine variant")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default="bench_out/bench_ingest.json",
                   help="where to write the JSON report ('' = nowhere)")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
