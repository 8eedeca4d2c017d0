"""Read scale-out on one machine: N ``chrono serve --read-only`` processes (read replicas)
on one store, against in-process ``search_batch`` over the same queries, in the same run
(docs/serve.md, "Threads, processes, cores": one process serves ~5 k requests/s whatever
the core count, its event loop's Python under one GIL).

For each N, N replicas (each with ``cores // N`` engine threads; each holds its own copy of
the vectors and graph in memory) and N client processes, each client holding ``--clients //
N`` keep-alive connections to its own replica (the closed-loop HTTP clients of
:mod:`chrono_engine.bench.serve_load`); reported: the summed QPS, its share of
``search_batch``, the worst p99, recall@10 against the NumPy oracle and each server's CPU
use::

    python benches/bench_serve_replicas.py                        # 200k x 384 steep, as_of 10%
    python benches/bench_serve_replicas.py --processes 1,2,4,8 --seconds 5

The store is built once under ``--work`` (default ``bench_out/replicas``) and reused.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import chrono_engine as ce
from chrono_engine.bench import machine_info, write_json
from chrono_engine.bench.serve_load import closed_loop, free_port, recall, search_batch_qps, start, workload

_BODIES: list = []  # the request bodies, set before the client processes fork


def _client(args: tuple) -> dict:
    url, conc, seconds, max_requests, pid = args
    return closed_loop(url, _BODIES, conc, seconds, max_requests, pid)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--selectivity", type=float, default=0.1)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--processes", default="1,2,4,8", help="server process counts to measure")
    p.add_argument("--clients", type=int, default=64, help="connections in all")
    p.add_argument("--seconds", type=float, default=5.0, help="per process count")
    p.add_argument("--max-requests", type=int, default=200_000, help="per client process")
    p.add_argument("--work", default="bench_out/replicas")
    p.add_argument("--json", default="bench_out/bench_serve_replicas.json")
    ns = p.parse_args(argv)
    try:
        counts = [int(x) for x in ns.processes.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1 or max(counts) > ns.clients:
        p.error(f"--processes must be counts from 1 to --clients ({ns.clients})")
    if not 1 <= ns.clients <= 256 or not 0 < ns.seconds <= 120 or not 1 <= ns.max_requests <= 1_000_000:
        p.error("--clients 1-256, --seconds up to 120, --max-requests 1-1e6 (every loop is bounded)")
    cores = os.cpu_count() or 1
    work = Path(ns.work)
    work.mkdir(parents=True, exist_ok=True)

    base, qv, T, fusion, oracle = workload("steep", ns.n, ns.dim, ns.selectivity, ns.queries, work)

    eng = ce.Engine.open(base, read_only=True)
    kw = dict(mode="as_of", fusion=fusion)
    batch_qps = search_batch_qps(eng, qv, T, kw)
    eng.close()
    del eng
    print(f"in process: search_batch {batch_qps:.0f} QPS on {cores} cores", flush=True)

    _BODIES[:] = [json.dumps({"vector": qv[i].tolist(), "k": 10, **kw, "as_of": int(T[i])}).encode()
                  for i in range(ns.queries)]

    report: dict = {"config": vars(ns), "machine": machine_info(), "search_batch_qps": batch_qps, "rows": []}
    for n_proc in counts:
        threads = max(1, cores // n_proc)
        procs, urls = [], []
        try:
            for i in range(n_proc):
                port = free_port()
                cmd = [sys.executable, "-m", "chrono_engine.cli", "serve", str(base), "--read-only", "--no-auth",
                       "--port", str(port), "--name", "c", "--threads", str(threads)]
                procs.append(start(cmd, f"http://127.0.0.1:{port}", work / f"server{i}.log"))
                urls.append(f"http://127.0.0.1:{port}/v1/collections/c/search")
            split = [ns.clients // n_proc + (i < ns.clients % n_proc) for i in range(n_proc)]
            with mp.get_context("fork").Pool(n_proc) as pool:
                rows = pool.map(_client, [(urls[i], split[i], ns.seconds, ns.max_requests, procs[i].pid)
                                          for i in range(n_proc)])
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
        answers: dict = {}
        for r in rows:
            answers.update(r.pop("answers"))
        qps = sum(r["qps"] for r in rows)
        row = {"processes": n_proc, "threads_each": threads, "qps": qps, "share_of_search_batch": qps / batch_qps,
               "p99_ms": max((r["p99_ms"] or 0.0) for r in rows), "errors": sum(r["errors"] for r in rows),
               "requests": sum(r["requests"] for r in rows), "recall": recall(answers, oracle),
               "server_cores": [r["server_cores"] for r in rows]}
        report["rows"].append(row)
        print(f"{n_proc} process(es) x {threads} threads, {ns.clients} clients: {qps:8.0f} QPS = "
              f"{row['share_of_search_batch']:.2f} of search_batch; p99 {row['p99_ms']:.1f} ms; recall "
              f"{row['recall']:.3f}; errors {row['errors']}; server cores "
              f"{', '.join(f'{c:.2f}' for c in row['server_cores'])}", flush=True)
    if ns.json:
        write_json(ns.json, report)
        print(f"JSON written to {ns.json}")
    return report


if __name__ == "__main__":
    main()
