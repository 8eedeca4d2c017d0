"""Coalescing: many threads (or asyncio tasks) calling ``search()`` at once, against one
``search_batch`` over the same queries, in the same run.

A server thread answers one request at a time; the engine gathers concurrent ``search()``
calls into groups for the planner (chrono_engine/_coalesce.py). This measures, on a
synthetic corpus (the search bench's steep regime), the throughput of

* ``search_batch``: all queries in one call (the bound: the planner's best case);
* ``C threads``: C threads each calling ``search()`` on its share of the queries;
* ``C tasks``: C asyncio tasks awaiting ``asearch()``;
* ``one by one``: one thread calling ``search()`` for each query (no concurrency),
* ``batches of C``: ``search_batch`` over C queries at a time, in arrival order: the most a
  group of C concurrent calls can get from the planner (``search_batch`` over all queries
  sorts them by time before it cuts its groups of 64, so its groups share more rows than C
  calls that arrive at random times can),

and prints each as QPS, as a share of ``search_batch`` (the issue's goal at C = 64: ≥ 80%)
and, for C threads / tasks, as a share of ``batches of C`` (what coalescing itself costs),
plus whether every answer equals the one-by-one answer. Rounds alternate the
configurations; the median round is reported::

    python benches/bench_coalesce.py                     # 200k x 384, as_of at 10% in force
    python benches/bench_coalesce.py --n 50000 --dim 128 --queries 2000 --concurrency 1 8 64
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time

import numpy as np

import chrono_engine as ce
from chrono_engine import synthetic as syn
from chrono_engine.bench import machine_info, write_json
from chrono_engine.bench.corpus import policy_for


def threaded(eng, Q, T, c: int, kw: dict) -> tuple[float, list]:
    out = [None] * len(Q)

    def work(start: int) -> None:
        for i in range(start, len(Q), c):
            out[i] = eng.search(Q[i], 10, as_of=int(T[i]), **kw)
    ts = [threading.Thread(target=work, args=(j,)) for j in range(c)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, out


def tasks(eng, Q, T, c: int, kw: dict) -> tuple[float, list]:
    async def main():
        sem = asyncio.Semaphore(c)

        async def one(i):
            async with sem:
                return await eng.asearch(Q[i], 10, as_of=int(T[i]), **kw)
        return await asyncio.gather(*[one(i) for i in range(len(Q))])
    t0 = time.perf_counter()
    out = asyncio.run(main())
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--selectivity", type=float, default=0.1)
    ap.add_argument("--mode", default="as_of", choices=["as_of", "latest"])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--threads", type=int, default=1, help="the engine's worker threads")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wait", type=float, default=0.0, help="the engine's coalesce_wait (seconds)")
    ap.add_argument("--switch-interval", type=float, default=None,
                    help="sys.setswitchinterval for the run (seconds; Python's default is 0.005)")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    if a.switch_interval is not None:
        sys.setswitchinterval(a.switch_interval)
    corpus = syn.make_corpus(a.n, a.dim, half_lives=syn.STEEP_HALF_LIVES, seed=0)
    eng = ce.Engine(dim=a.dim, decay=policy_for(corpus.half_lives), threads=a.threads)
    eng.coalesce_wait = a.wait
    t0 = time.perf_counter()
    eng.ingest(corpus.to_dict())
    print(f"N={a.n:,} d={a.dim} ({time.perf_counter() - t0:.0f} s ingest), {a.queries} queries, {a.mode} at "
          f"{a.selectivity:.0%} in force, engine threads {a.threads}, coalesce_wait {a.wait} s, "
          f"switch interval {sys.getswitchinterval()} s", flush=True)
    Q = corpus.queries(a.queries, seed=1)
    T = syn.times_for_selectivity(corpus, a.selectivity, a.queries, seed=2)
    kw = {"mode": a.mode, "exact": True}
    # the reference answers: one by one
    ref = [eng.search(Q[i], 10, as_of=int(T[i]), **kw) for i in range(len(Q))]
    configs = ["search_batch", "one by one"] + [f"batches of {c}" for c in a.concurrency] + \
        [f"{c} threads" for c in a.concurrency] + [f"{c} tasks" for c in a.concurrency]
    secs = {c: [] for c in configs}
    same = {c: True for c in configs}
    for r in range(a.rounds):
        for name in configs[r % len(configs):] + configs[:r % len(configs)]:
            if name == "search_batch":
                t0 = time.perf_counter()
                tab = eng.search_batch(Q, 10, as_of=T, **kw)
                dt, out = time.perf_counter() - t0, None
                qcol = tab.column("query").to_numpy()
                ids = tab.column("id").to_numpy()
                same[name] &= all(np.array_equal(ids[qcol == i], ref[i].column("id").to_numpy())
                                  for i in range(len(Q)))
            elif name.startswith("batches of"):
                c = int(name.split()[-1])
                t0 = time.perf_counter()
                parts = [eng.search_batch(Q[i:i + c], 10, as_of=T[i:i + c], **kw) for i in range(0, len(Q), c)]
                dt, out = time.perf_counter() - t0, None
                ids = [p.column("id").to_numpy() for p in parts]
                qcols = [p.column("query").to_numpy() for p in parts]
                same[name] &= all(np.array_equal(ids[i // c][qcols[i // c] == i % c], ref[i].column("id").to_numpy())
                                  for i in range(len(Q)))
            elif name == "one by one":
                t0 = time.perf_counter()
                out = [eng.search(Q[i], 10, as_of=int(T[i]), **kw) for i in range(len(Q))]
                dt = time.perf_counter() - t0
            else:
                c = int(name.split()[0])
                dt, out = (threaded if name.endswith("threads") else tasks)(eng, Q, T, c, kw)
            if out is not None:
                same[name] &= all(x.equals(y) for x, y in zip(out, ref))
            secs[name].append(dt)
    qps = {c: a.queries / statistics.median(v) for c, v in secs.items()}
    print(f"\n{'configuration':<16} {'QPS':>9} {'share of search_batch':>22} {'of batches of C':>16}"
          f"  same answers as one by one")
    for c in configs:
        n = c.split()[0]
        bound = qps.get(f"batches of {n}") if n.isdigit() else None
        share = f"{qps[c] / bound:>16.0%}" if bound else f"{'':>16}"
        print(f"{c:<16} {qps[c]:>9,.0f} {qps[c] / qps['search_batch']:>21.0%} {share}  {same[c]}")
    print(f"(groups run by the coalescer over all rounds: {eng._coalescer.groups:,} for "
          f"{eng._coalescer.calls:,} calls)")
    if a.json:
        write_json(a.json, {"bench": "coalesce", "machine": machine_info(), "args": vars(a), "qps": qps,
                            "same": same})
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
