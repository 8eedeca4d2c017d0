"""Metadata filters joined with time: the engine's ``where=`` against a NumPy prefilter and
PostgreSQL + pgvector with the same filter in SQL, in the same run.

One store of n items (default 200k x 384: the search harness's synthetic corpus, clustered
unit vectors valid from 2015 to 2026; an exponential decay with a half-life of one year,
product fusion, each row its own lineage) with three metadata columns: ``tenant``
(string: one tenant holds 50% of the rows, others 10%, 1%, 0.1%), ``level`` (int64, uniform
in [0, 100000)) and ``acl`` (list<string>: tags held by 50%, 10%, 1%, 0.1% of the rows,
independently). Filters keeping a share s of the rows, s in 50 / 10 / 1 / 0.1%:

* ``eq``    ``{"tenant": "t<s>"}``
* ``range`` ``{"level": {"$lt": s * 100000}}``
* ``tag``   ``{"acl": {"$in": ["g<s>", "nobody"]}}``
* ``and``   ``{"$and": [{"level": {"$lt": 2 s * 100000}}, {"acl": {"$in": ["g50"]}}]}``

crossed with query times T at which 50 / 10 / 1% of the rows are in force (``as_of`` mode).
Per row, one thread:

* the engine, ``search_batch`` over the row's queries (``batch``) and ``search`` one query
  per call (``lone``), ``columns=[]`` (ids and scores, as the peers return), default plan;
  recall@10 against ``exact=True``, whose answers are checked against the NumPy prefilter's
  (the same ids, or ties within 1e-6);
* ``numpy``: per query, the rows in force and known at T masked, ANDed with the filter's
  mask (computed once per filter: the peer's best case), gathered and scored (exact);
* ``pg_exact``: PostgreSQL 15 + pgvector 0.8, the fused score ORDER BY over the rows the
  WHERE keeps (btree / GIN indexes on the metadata, the planner's choice of scan);
* ``pg_hnsw``: pgvector's HNSW with ``hnsw.iterative_scan = relaxed_order``, the C = 100
  nearest rows passing the WHERE reranked by the fused score (ef_search 100); its recall.

Each row prints QPS, the engine's recall, and the engine's QPS over the best peer's (the
fastest peer whose recall@10 is >= 0.95), batch and lone. PostgreSQL runs when pgvector is
installed (``bash benches/setup_pgvector.sh``) and psycopg imports; ``--no-pg`` skips it::

    python benches/bench_filters.py                      # 200k x 384, everything
    python benches/bench_filters.py --n 20000 --dim 64 --queries 50 --pg-queries 10
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

import chrono_engine as ce
from chrono_engine.bench.timing import best_time
from chrono_engine.synthetic import make_corpus, times_for_selectivity

sys.path.insert(0, str(Path(__file__).resolve().parent))

US_PER_DAY = 86_400_000_000
T0 = int(np.datetime64("2015-01-01", "us").astype(np.int64))
SHARES = (0.5, 0.1, 0.01, 0.001)
IN_FORCE = (0.5, 0.1, 0.01)
HALF_LIFE_DAYS = 365.0
LEVELS = 100_000


def _tag(s: float) -> str:
    return {0.5: "50", 0.1: "10", 0.01: "1", 0.001: "01"}[s]


def corpus(n: int, dim: int, seed: int) -> dict:
    """The search harness's synthetic corpus (chrono_engine.synthetic: clustered vectors,
    items valid from 2015 to 2026, most open-ended, so the share in force rises with T),
    each row its own lineage (the peers do not arbitrate), with the metadata columns."""
    syn = make_corpus(n, dim, seed=seed)
    rng = np.random.default_rng(seed + 100)
    u = rng.random(n)
    tenant = np.where(u < 0.5, "t50", np.where(u < 0.6, "t10", np.where(u < 0.61, "t1", np.where(
        u < 0.611, "t01", np.char.add("o", (rng.integers(0, 500, n)).astype(str))))))
    flags = {s: rng.random(n) < s for s in SHARES}
    filler = rng.integers(0, 40, n)
    tags = [[f"g{_tag(s)}" for s in SHARES if flags[s][i]] + [f"x{filler[i]}"] for i in range(n)]
    return {"corpus": syn, "X": syn.vector, "valid_from": syn.valid_from, "valid_to": syn.valid_to,
            "observed_at": syn.observed_at, "ingested_at": syn.ingested_at,
            "retracted_at": np.full(n, np.iinfo(np.int64).max, np.int64),
            "reliability": syn.reliability.astype(np.float64), "tenant": tenant.astype(object),
            "level": rng.integers(0, LEVELS, n).astype(np.int64), "acl": tags}


def filters() -> list:
    out = []
    for s in SHARES:
        out.append(("eq", s, {"tenant": f"t{_tag(s)}"}))
        out.append(("range", s, {"level": {"$lt": int(s * LEVELS)}}))
        out.append(("tag", s, {"acl": {"$in": [f"g{_tag(s)}", "nobody"]}}))
        out.append(("and", s, {"$and": [{"level": {"$lt": int(min(1.0, 2 * s) * LEVELS)}}, {"acl": {"$in": ["g50"]}}]}))
    return out


def mask_of(where: dict, c: dict) -> np.ndarray:
    """The filter's rows, computed with NumPy (the peer's filter mask; the oracle's)."""
    if "$and" in where:
        m = np.ones(len(c["X"]), bool)
        for w in where["$and"]:
            m &= mask_of(w, c)
        return m
    (field, cond), = where.items()
    if field == "tenant":
        return c["tenant"] == cond
    if field == "level":
        return c["level"] < cond["$lt"]
    want = set(cond["$in"])
    return np.fromiter((any(t in want for t in row) for row in c["acl"]), bool, len(c["acl"]))


class NumpyPrefilter:
    """Per query: rows in force and known at T, ANDed with the filter's mask, scored exactly."""

    def __init__(self, c: dict) -> None:
        self.c = c
        self.beta = math.log(2) / HALF_LIFE_DAYS

    def search(self, q: np.ndarray, T: int, K: int, fmask: np.ndarray, k: int = 10):
        c = self.c
        idx = np.flatnonzero((c["valid_from"] <= T) & (T < c["valid_to"]) & (c["ingested_at"] <= K)
                             & (K < c["retracted_at"]) & fmask)
        s = (c["X"][idx] @ q).astype(np.float64)
        age = np.maximum(0.0, (T - c["observed_at"][idx]) / US_PER_DAY)
        f = np.clip(s, 0, 1) * c["reliability"][idx] * np.exp(-self.beta * age)
        kk = min(k, len(idx))
        if kk < len(idx):
            part = np.argpartition(-f, kk - 1)[:kk]
            cand = np.flatnonzero(f >= f[part].min())
        else:
            cand = np.arange(len(idx))
        o = np.lexsort((idx[cand], -f[cand]))[:kk]
        return idx[cand[o]], f[cand[o]]


def timed(fn, reps: int = 1) -> float:
    """The best of ``reps`` runs of ``fn`` (the harness's rule: chrono_engine.bench.timing)."""
    return best_time(fn, min_time=0.0, max_repeat=reps, min_repeat=reps)[0]


def recall(got: list, want: list) -> float:
    """Mean recall@k; 1.0 where the exact answers are empty (no row passes: nothing to miss)."""
    total = sum(len(w) for w in want)
    if total == 0:
        return 1.0
    return sum(len(set(g) & set(w)) for g, w in zip(got, want)) / total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=100, help="queries per row (engine, NumPy)")
    ap.add_argument("--pg-queries", type=int, default=10, help="queries per row for PostgreSQL")
    ap.add_argument("--no-pg", action="store_true", help="skip PostgreSQL + pgvector")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", help="write the rows as JSON here")
    args = ap.parse_args(argv)

    c = corpus(args.n, args.dim, args.seed)
    n = args.n
    eng = ce.Engine(dim=args.dim, decay=ce.HalfLife(HALF_LIFE_DAYS), threads=1)
    t = time.perf_counter()
    eng.ingest({"vector": c["X"], "valid_from": c["valid_from"].astype("datetime64[us]"),
                "valid_to": c["valid_to"].astype("datetime64[us]"),
                "ingested_at": c["ingested_at"].astype("datetime64[us]"), "reliability": c["reliability"],
                "id": np.arange(n, dtype=np.uint64), "tenant": c["tenant"], "level": c["level"], "acl": c["acl"]},
               order="input")
    print(f"engine: {n:,} x {args.dim} ingested in {time.perf_counter() - t:.1f} s; metadata "
          f"{eng.memory()['user_metadata_per_item']:.1f} B/row", flush=True)
    K = int(c["ingested_at"].max()) + 1  # known at: after every ingest
    peer = NumpyPrefilter(c)
    pg = None
    if not args.no_pg:
        try:
            from pgvector_peer import PgPeer
            pg = PgPeer()
            t = time.perf_counter()
            pg.load(np.arange(n), c["X"], c["valid_from"], c["valid_to"], c["ingested_at"], c["retracted_at"],
                    c["observed_at"], c["reliability"], np.full(n, math.log(2) / HALF_LIFE_DAYS),
                    {"tenant": ("string", list(c["tenant"])), "level": ("int64", c["level"]),
                     "acl": ("list<string>", c["acl"])})
            print(f"postgres: loaded and indexed in {time.perf_counter() - t:.1f} s", flush=True)
        except Exception as e:  # noqa: BLE001 - the peer is optional; say why it is missing
            print(f"postgres: not run ({type(e).__name__}: {e})", flush=True)
            pg = None
    rng = np.random.default_rng(args.seed + 1)
    rows = []
    hdr = (f"{'filter':>6} {'keeps':>6} {'force':>6} | {'batch':>8} {'lone':>8} {'recall':>6} | {'numpy':>7} "
           f"{'pg_ex':>7} {'pg_hnsw':>7} {'pg_rec':>6} | {'x batch':>7} {'x lone':>7}  best peer")
    print(hdr)
    try:
        for kind, share, where in filters():
            fmask = mask_of(where, c)
            for force in IN_FORCE:
                nq = args.queries
                seed = int(rng.integers(0, 1 << 30))
                Q = c["corpus"].queries(nq, seed=seed)  # unit vectors near cluster centres
                T = times_for_selectivity(c["corpus"], force, nq, seed=seed)  # the harness's query-time rule
                kw = dict(mode="as_of", as_of=T, known_at=np.full(nq, K), where=where, columns=[])
                exact = eng.search_batch(Q, 10, exact=True, **kw)
                qcol = exact.column("query").to_numpy()
                ex_ids = [exact.column("id").to_numpy()[qcol == i].tolist() for i in range(nq)]
                # the oracle's answers are the NumPy prefilter's (ties within 1e-6 aside)
                for i in range(min(nq, 10)):
                    ids, sc = peer.search(Q[i], int(T[i]), K, fmask)
                    got_sc = exact.column("score").to_numpy()[qcol == i]
                    assert len(ids) == len(ex_ids[i]) and np.allclose(sc, got_sc, atol=1e-6), (kind, share, force, i)
                b_s = timed(lambda: eng.search_batch(Q, 10, **kw), 2)
                res = eng.search_batch(Q, 10, **kw)
                qc = res.column("query").to_numpy()
                rec = recall([res.column("id").to_numpy()[qc == i].tolist() for i in range(nq)], ex_ids)
                lone_kw = dict(mode="as_of", known_at=K, where=where, columns=[])

                def lone():
                    for i in range(nq):
                        eng.search(Q[i], 10, as_of=int(T[i]), **lone_kw)
                l_s = timed(lone, 2)
                n_s = timed(lambda: [peer.search(Q[i], int(T[i]), K, fmask) for i in range(nq)], 1)
                peers = {"numpy": (nq / n_s, 1.0)}
                if pg is not None:
                    m = min(args.pg_queries, nq)
                    t = time.perf_counter()
                    for i in range(m):
                        pg.search_exact(Q[i], 10, int(T[i]), K, where)
                    peers["pg_exact"] = (m / (time.perf_counter() - t), 1.0)
                    got = []
                    t = time.perf_counter()
                    for i in range(m):
                        got.append(pg.search_hnsw(Q[i], 10, int(T[i]), K, where, ef_search=100, candidates=100).tolist())
                    peers["pg_hnsw"] = (m / (time.perf_counter() - t), recall(got, ex_ids[:m]))
                ok = {p: qps for p, (qps, r) in peers.items() if r >= 0.95}
                best = max(ok, key=ok.get)
                row = {"filter": kind, "keeps": share, "in_force": force, "batch_qps": nq / b_s, "lone_qps": nq / l_s,
                       "recall": rec, "peers": {p: {"qps": q, "recall": r} for p, (q, r) in peers.items()},
                       "best_peer": best, "x_batch": nq / b_s / ok[best], "x_lone": nq / l_s / ok[best]}
                rows.append(row)
                pq = lambda p: f"{peers[p][0]:7.1f}" if p in peers else f"{'-':>7}"  # noqa: E731
                pr = f"{peers['pg_hnsw'][1]:6.3f}" if "pg_hnsw" in peers else f"{'-':>6}"
                print(f"{kind:>6} {share:6.1%} {force:6.0%} | {row['batch_qps']:8.0f} {row['lone_qps']:8.0f} {rec:6.3f} | "
                      f"{pq('numpy')} {pq('pg_exact')} {pq('pg_hnsw')} {pr} | {row['x_batch']:6.1f}x {row['x_lone']:6.1f}x  "
                      f"{best}", flush=True)
    finally:
        if pg is not None:
            pg.close()
    worst_b = min(r["x_batch"] for r in rows)
    worst_l = min(r["x_lone"] for r in rows)
    low = min(r["recall"] for r in rows)
    print(f"rows: {len(rows)}; least recall {low:.3f}; least ratio to the best peer: batch {worst_b:.1f}x, "
          f"lone {worst_l:.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"n": n, "dim": args.dim, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
