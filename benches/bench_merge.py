"""What a sharded search brings back to the driver: the two-phase merge against one phase
(docs/distributed.md, "Small answers back").

A ShardedEngine of 2, 4, 8 shards (``--shards``) on a local Ray instance, ``--n`` items whose
``content`` is ``--content-bytes`` long (a chunk of text, as a RAG store holds), ``--queries``
queries of k = ``--k`` as of a time. For each shard count, the same searches with
``merge="one_phase"`` (every shard returns its top-k rows whole) and ``merge="two_phase"``
(every shard returns its top-k keys — query, score, id, rank, certified, its row — and then
only the final k rows per query come back from the shards that hold them). Reported per
query: the bytes of the Arrow tables the shards sent back (``ShardedEngine.received_bytes``),
and QPS on this machine; the two answers are checked equal to each other and to one Engine's.

    python benches/bench_merge.py --shards 2,4,8 --content-bytes 1000
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from chrono_engine.bench import write_json


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--shards", type=lambda s: [int(x) for x in s.split(",")], default=[2, 4, 8])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=1, help="queries per search_batch call")
    ap.add_argument("--content-bytes", type=int, default=1000)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    import ray

    import chrono_engine as ce
    os.chdir(tempfile.mkdtemp(prefix="chrono-merge-"))  # not a checkout on the workers' path
    ray.init(num_cpus=args.cpus, logging_level="ERROR", log_to_driver=False)
    rng = np.random.default_rng(0)
    n, dim = args.n, args.dim
    start = np.datetime64("2019-01-01", "us") + rng.integers(0, 2000, n).astype("timedelta64[D]")
    filler = "x" * max(0, args.content_bytes - 12)
    rows = {"vector": rng.standard_normal((n, dim)).astype(np.float32), "valid_from": start,
            "valid_to": start + rng.integers(30, 1500, n).astype("timedelta64[D]"),
            "stem_id": [f"doc-{int(i)}" for i in rng.integers(0, n // 4, n)],
            "version": [f"1.{i % 60000}" for i in range(n)],
            "title": [f"title {i}" for i in range(n)], "content": [f"{i:010d} {filler}" for i in range(n)]}
    q = rng.standard_normal((args.queries, dim)).astype(np.float32)
    opts = dict(mode="as_of", as_of="2022-03-15", exact=True)
    one = ce.Engine(dim, threads=1)
    one.ingest(rows)
    ref = one.search_batch(q, args.k, **opts)
    out: dict = {"n": n, "k": args.k, "content_bytes": args.content_bytes, "queries": args.queries,
                 "batch": args.batch, "rows": []}
    print(f"{'shards':>6} {'merge':>10} {'bytes/query':>12} {'QPS':>8}  equal", file=sys.stderr)
    for s in args.shards:
        sh = ce.distributed.ShardedEngine(s, dim, cpus_per_shard=args.cpus / s, threads=1)
        try:
            sh.ingest(rows)
            for merge in ("one_phase", "two_phase"):
                sh.merge = merge
                sh.search_batch(q[:args.batch], args.k, **opts)  # warm
                sh.received_bytes = 0
                parts = []
                t0 = time.perf_counter()
                for i in range(0, len(q), args.batch):
                    parts.append(sh.search_batch(q[i:i + args.batch], args.k, **opts))
                dt = time.perf_counter() - t0
                got = np.concatenate([p.column("id").to_numpy() for p in parts])
                equal = bool(np.array_equal(got, ref.column("id").to_numpy()))
                row = {"shards": s, "merge": merge, "bytes_per_query": round(sh.received_bytes / len(q)),
                       "qps": round(len(q) / dt, 1), "equal_to_one_engine": equal}
                out["rows"].append(row)
                print(f"{s:>6} {merge:>10} {row['bytes_per_query']:>12,} {row['qps']:>8}  {equal}", file=sys.stderr)
        finally:
            sh.shutdown()
    ray.shutdown()
    print(json.dumps(out))
    if args.json:
        write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
