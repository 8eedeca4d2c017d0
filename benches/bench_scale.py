"""A large store built in saved increments, then opened and searched (10M items
in 24 GiB).

Building a graph of 10M rows on 2 cores does not fit one sitting, so ``build`` appends
synthetic rows (the search bench's steep regime) in chunks to a store on disk and
checkpoints after each: a stopped build resumes where its last checkpoint left it. Every
chunk prints its rows, seconds, the rate, and the process's RSS and peak RSS. ``measure``
opens the store (open seconds, RSS right after open), then runs ``search_batch`` (groups of
64, one thread) at 50%, 10% and 1% in force, default and ``exact=True``, with recall@10
against exact, and the Numba peer (the harness's fused scan: it holds its own copy of the
vectors, which a 24 GiB machine fits at d = 128) on ``--peer-queries`` queries, printing
each ratio. Peak RSS is the process's high-water mark::

    python benches/bench_scale.py build --path /tmp/s10m --n 10000000 --dim 128
    python benches/bench_scale.py measure --path /tmp/s10m
    python benches/bench_scale.py build --path /tmp/s30k --n 30000 --dim 16 --chunk 10000   # smoke

``append`` measures what a write costs in a large store: on a scratch
copy of the store (data files hard-linked, the log and the seal copied), opened writable, it
appends batches of ``--rows`` new rows with ``ingest`` (each written to the write-ahead log,
synced, before the call returns: no checkpoint), and the same vectors to hnswlib's own
``Index`` loaded from the store's ``graph.bin`` (the same graph, hnswlib's format) with
``add_items`` on as many threads; then it reopens the store and reports the open time with
the appended rows in the log against the open before::

    python benches/bench_scale.py append --path /tmp/s1m --scratch /tmp/s1m-append --rows 1000 10000
"""
from __future__ import annotations

import argparse
import json
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


def rss_mb() -> dict:
    """The process's resident set and its peak (MB), from /proc (Linux); {} elsewhere."""
    try:
        with open("/proc/self/status") as f:
            d = dict(line.split(":", 1) for line in f if ":" in line)
        return {"rss": int(d["VmRSS"].split()[0]) // 1024, "peak": int(d["VmHWM"].split()[0]) // 1024}
    except (OSError, KeyError, ValueError):
        return {}


def chunk_rows(start: int, n: int, dim: int, seed: int) -> tuple[dict, np.ndarray]:
    """Rows [start, start + n) of the synthetic store: a corpus of its own per chunk (seeded
    by its start), stems renamed so that chunks share none. Returns (rows, 8 queries)."""
    c = syn.make_corpus(n, dim, half_lives=syn.STEEP_HALF_LIVES, seed=seed + start)
    d = c.to_dict()
    d["stem_id"] = np.char.add(f"c{start}-", d["stem_id"].astype(str)).astype(object)
    return d, c.queries(8, seed=1)


def build(args) -> int:
    path = args.path
    if os.path.exists(os.path.join(path, "CURRENT")):
        eng = ce.Engine.open(path, threads=os.cpu_count() or 1)
        print(f"resuming {path}: {len(eng):,} rows", flush=True)
    else:
        eng = ce.Engine.create(path, args.dim, decay=policy_for(syn.STEEP_HALF_LIVES), M=args.M,
                               ef_construction=args.ef_construction, threads=os.cpu_count() or 1)
        print(f"new store {path}: d = {args.dim}, M = {args.M}, ef_construction = {args.ef_construction}", flush=True)
    qfile = path + ".queries.npy"
    t_all = time.perf_counter()
    while len(eng) < args.n:
        start = len(eng)
        n = min(args.chunk, args.n - start)
        rows, q = chunk_rows(start, n, eng.dim, args.seed)
        if start == 0:
            np.save(qfile, q)
        t0 = time.perf_counter()
        eng.ingest(rows)
        t1 = time.perf_counter()
        eng.save()  # checkpoint: a stopped build resumes here
        t2 = time.perf_counter()
        del rows
        print(f"rows {len(eng):>11,}: ingest {t1 - t0:7.1f} s ({n / (t1 - t0):7.0f} rows/s), "
              f"checkpoint {t2 - t1:5.1f} s, MB {rss_mb()}", flush=True)
    print(f"done: {len(eng):,} rows in {time.perf_counter() - t_all:.0f} s this run; MB {rss_mb()}", flush=True)
    eng.close()
    return 0


def measure(args) -> int:
    t_open, eng = best_time(lambda: ce.Engine.open(args.path, read_only=True, threads=1), 0.0, max_repeat=1)
    after_open = rss_mb()
    print(f"store {args.path}: {len(eng):,} rows x {eng.dim}; open {t_open:.1f} s; MB after open {after_open}",
          flush=True)
    q8 = np.load(args.path + ".queries.npy")
    rng = np.random.default_rng(2)
    qv = q8[rng.integers(0, len(q8), args.queries)]
    qv = qv + rng.normal(0, 0.3 / np.sqrt(eng.dim), qv.shape).astype(np.float32)
    qv = np.ascontiguousarray(qv / np.linalg.norm(qv, axis=1, keepdims=True), np.float32)
    spans = validity_spans(eng)
    peer = None
    if args.peer_queries:
        try:
            from chrono_engine.bench.numba_scan import NumbaScan
            peer = NumbaScan(workload_from_engine(eng))
            peer.search(Queries(qv[:1], np.zeros(1, np.int64), np.full(1, KNOWN_ALL, np.int64), k=10))  # compile
        except (ImportError, MemoryError) as e:
            print(f"Numba peer could not run: {type(e).__name__}: {e}")
    rows = []
    for mode in ("as_of", "latest"):
        for share in (0.5, 0.1, 0.01):
            T = syn.times_for_selectivity(spans, share, args.queries, seed=2)
            kw = dict(mode=mode, as_of=T, known_at=KNOWN_ALL, threads=1)
            s_x, x = best_time(lambda: eng.search_batch(qv, 10, exact=True, **kw), 0.0, max_repeat=1)
            s_d, d = best_time(lambda: eng.search_batch(qv, 10, **kw), 0.0, max_repeat=1)
            row = {"mode": mode, "share": share, "default_qps": args.queries / s_d,
                   "exact_qps": args.queries / s_x,
                   "recall": recall_at_k(answers_from_table(d, args.queries)[0], answers_from_table(x, args.queries)[0])}
            line = (f"{mode:7s} {share:4.0%}: default {row['default_qps']:8.1f} QPS, exact {row['exact_qps']:8.1f} "
                    f"QPS, recall {row['recall']:.3f}")
            if peer is not None:
                m = args.peer_queries
                pq = Queries(qv[:m], T[:m].astype(np.int64), np.full(m, KNOWN_ALL, np.int64), mode=mode, k=10)
                s_p, _ = best_time(lambda: peer.search(pq), 0.0, max_repeat=1)
                row["numba_qps"] = m / s_p
                line += f", Numba {row['numba_qps']:.2f} QPS -> {row['default_qps'] / row['numba_qps']:.0f}x"
            rows.append(row)
            print(line, flush=True)
    peak = rss_mb()
    print(f"MB at the end (peak includes the Numba peer's copy of the vectors): {peak}")
    if args.json:
        write_json(args.json, {"bench": "scale", "rows_in_store": len(eng), "dim": eng.dim, "open_s": t_open,
                               "mb_after_open": after_open, "mb_end": peak, "machine": machine_info(),
                               "rows": rows})
    return 0


def _scratch_copy(src: str, dst: str) -> None:
    """A writable copy of the store ``src`` at ``dst``: the snapshot's data files
    hard-linked (a store never rewrites them), its log, the seal and the lock copied."""
    import shutil

    if os.path.exists(dst):
        shutil.rmtree(dst)

    def link_or_copy(a: str, b: str) -> None:
        if os.path.basename(a) in ("log.wal", "CURRENT", "LOCK", "manifest.json"):
            shutil.copy2(a, b)
        else:
            os.link(a, b)
    shutil.copytree(src, dst, copy_function=link_or_copy)


def append(args) -> int:
    import hnswlib

    threads = args.threads or os.cpu_count() or 1
    _scratch_copy(args.path, args.scratch)
    t_open0, eng = best_time(lambda: ce.Engine.open(args.scratch, threads=threads), 0.0, max_repeat=1)
    n0, dim, metric = len(eng), eng.dim, eng.metric
    with open(os.path.join(args.scratch, "CURRENT")) as f:
        graph = os.path.join(args.scratch, json.load(f)["snapshot"], "graph.bin")
    total = sum(args.rows)
    peer = hnswlib.Index(space="ip" if metric != "l2" else "l2", dim=dim)
    t0 = time.perf_counter()
    peer.load_index(graph, max_elements=n0 + total)
    t_peer_load = time.perf_counter() - t0
    peer.set_num_threads(threads)
    print(f"store {args.path}: {n0:,} rows x {dim} ({metric}); writable open of the copy {t_open0:.1f} s; "
          f"hnswlib load_index {t_peer_load:.1f} s; {threads} threads; MB {rss_mb()}", flush=True)
    out = []
    for r in args.rows:
        start = len(eng)
        rows, _ = chunk_rows(start, r, dim, args.seed + 7)
        vec = np.ascontiguousarray(rows["vector"], np.float32)
        if metric != "l2":
            vec = vec / np.linalg.norm(vec, axis=1, keepdims=True)
        t0 = time.perf_counter()
        eng.ingest(rows)
        t_eng = time.perf_counter() - t0
        t0 = time.perf_counter()
        peer.add_items(vec, np.arange(start, start + r))
        t_hnsw = time.perf_counter() - t0
        if peer.get_current_count() != len(eng):  # the same rows in both
            raise AssertionError(f"hnswlib holds {peer.get_current_count()} rows, the engine {len(eng)}")
        row = {"store_rows": start, "rows": r, "engine_s": t_eng, "hnswlib_s": t_hnsw,
               "engine_rows_per_s": r / t_eng, "ratio": t_eng / t_hnsw}
        out.append(row)
        print(f"append {r:>7,} rows into {start:>10,}: engine ingest {t_eng:6.2f} s ({r / t_eng:7.0f} rows/s, "
              f"logged and synced), hnswlib add_items {t_hnsw:6.2f} s -> {t_eng / t_hnsw:.2f}x", flush=True)
    eng.close()
    t_open1, eng = best_time(lambda: ce.Engine.open(args.scratch, read_only=True, threads=threads), 0.0,
                             max_repeat=1)
    print(f"reopen with {total:,} rows in the log: {t_open1:.1f} s (before: {t_open0:.1f} s); "
          f"{len(eng):,} rows", flush=True)
    eng.close()
    if args.json:
        write_json(args.json, {"bench": "scale-append", "rows_in_store": n0, "dim": dim, "threads": threads,
                               "open_s": t_open0, "reopen_s": t_open1, "machine": machine_info(), "rows": out})
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="append chunks to the store, checkpointing after each")
    b.add_argument("--path", required=True)
    b.add_argument("--n", type=int, default=10_000_000)
    b.add_argument("--dim", type=int, default=128)
    b.add_argument("--chunk", type=int, default=1_000_000)
    b.add_argument("--M", type=int, default=16)
    b.add_argument("--ef-construction", type=int, default=200)
    b.add_argument("--seed", type=int, default=0)
    m = sub.add_parser("measure", help="open the store and search it")
    m.add_argument("--path", required=True)
    m.add_argument("--queries", type=int, default=200)
    m.add_argument("--peer-queries", type=int, default=4)
    m.add_argument("--json", default="")
    a = sub.add_parser("append", help="append batches to a scratch copy of the store, beside hnswlib add_items")
    a.add_argument("--path", required=True)
    a.add_argument("--scratch", required=True, help="where the copy goes (replaced; same file system)")
    a.add_argument("--rows", type=int, nargs="+", default=[1000, 10000])
    a.add_argument("--threads", type=int, default=0, help="0: all cores")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--json", default="")
    args = p.parse_args(argv)
    return {"build": build, "measure": measure, "append": append}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
