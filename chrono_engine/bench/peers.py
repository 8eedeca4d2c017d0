"""The peers the engine is measured against, each answering the search definition
(validity/transaction filter, per-stem arbitration, decay, fused score, ties by id):

``numpy`` (:class:`NumpyExact`)
    NumPy batch exact: query blocks matmul'd against every vector, masks, decay, fusion,
    arbitration (segment max over stems), argpartition. It is also the recall oracle.
``numpy_prefilter`` (:class:`NumpyPrefilter`)
    ``as_of`` only: per query, the items in force are masked first and only they are scored.
``numba`` (:class:`chrono_engine.bench.numba_scan.NumbaScan`)
    A fused Numba scan; in its own module because it compiles a kernel.
``hnswlib`` (:class:`HnswlibFiltered`)
    The hnswlib Python package searched with its ``filter=`` callable, then a NumPy rerank.
``faiss`` (:class:`FaissFiltered`)
    FAISS ``IndexHNSWFlat`` searched with an ``IDSelectorBitmap``, then a NumPy rerank.
``usearch`` (:class:`UsearchOverfetch`)
    A USearch HNSW index (its Python search has no predicate): over-fetch, drop the
    ineligible, NumPy rerank.
``lancedb`` (:class:`LanceDBPrefilter`)
    An embedded LanceDB table: exact vector search under an SQL pre-filter on the time
    columns, then arbitration and the NumPy rerank.
"""
from __future__ import annotations

import tempfile
import time

import numpy as np

from .._time import US_PER_DAY
from ..errors import ConfigError
from .corpus import Answers, Queries, Workload
from .definition import decay_eval, decay_rows, static_rank

__all__ = ["ALL_PEERS", "FaissFiltered", "HnswlibFiltered", "LanceDBPrefilter", "NumpyExact", "NumpyPrefilter",
           "UsearchOverfetch", "numpy_exact"]

#: every peer's name, in the order the harness builds and times them
ALL_PEERS = ("numpy", "numpy_prefilter", "numba", "hnswlib", "faiss", "usearch", "lancedb")


# --------------------------------------------------------------------------------------
# NumPy batch exact (the oracle)
# --------------------------------------------------------------------------------------

class NumpyExact:
    """The search definition, vectorised over blocks of queries with NumPy.

    Items are reordered once so that each stem's versions are contiguous (stems first,
    items without a stem last); per-stem arbitration is then one ``maximum.reduceat``
    over an int64 key (in force, version, valid_from, row) per block.
    """

    name = "numpy"

    def __init__(self, w: Workload, block_elems: int = 2_000_000) -> None:
        cols = w.cols
        n = len(w)
        stem = np.asarray(cols["stem"], np.int64)
        perm = np.lexsort((np.arange(n), np.where(stem < 0, np.iinfo(np.int64).max, stem)))
        self.perm = perm
        c = {k: np.asarray(v)[perm] for k, v in cols.items()}
        self.n = n
        self.ids = c["id"].astype(np.uint64)
        self.vf, self.vt, self.obs = c["valid_from"], c["valid_to"], c["observed_at"].astype(np.float64)
        self.ing, self.retr = c["ingested_at"], c["retracted_at"]
        self.rel = c["reliability"].astype(np.float64)
        self.dep = c["deprecated"].astype(bool)
        self.srank = static_rank(c)
        st = c["stem"]
        self.n_stemmed = int((st >= 0).sum())
        s = st[: self.n_stemmed]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if self.n_stemmed else np.zeros(0, np.int64)
        self.starts = starts
        self.sizes = np.diff(np.r_[starts, self.n_stemmed])
        self.decay = decay_rows(w.specs, c["fact_type"])
        self.xt = np.ascontiguousarray(w.vectors[perm].T)  # (d, n): one GEMM per block
        self.block = max(1, int(block_elems // max(n, 1)))

    def _masks(self, T: np.ndarray, K: np.ndarray, mode: str, penalty: float, tau: float,
               validity: bool = True, future_penalty: float = 0.0):
        """(ok, pen, V) for a block of query times: eligibility, penalty, validity.
        ``validity=False`` skips V (None) where τ = 0 makes it irrelevant to eligibility."""
        T = T[:, None]
        K = K[:, None]
        known = (self.ing <= K) & (K < self.retr)
        valid = (self.vf <= T) & (T < self.vt)
        in_force = valid & ~self.dep if mode == "latest" else valid
        if mode == "latest":
            pen = np.where(in_force, 1.0, np.where(self.vf > T, future_penalty, penalty))
        else:
            pen = np.where(in_force, 1.0, 0.0)
        ok = known & (pen > 0)
        V = None
        if validity or tau > 0:
            V = self.validity(T, slice(None))
            ok &= V >= tau
        m = self.n_stemmed
        if m:
            key = np.where(known[:, :m], in_force[:, :m] * np.int64(self.n) + self.srank[:m], -1)
            best = np.maximum.reduceat(key, self.starts, axis=1)
            ok[:, :m] &= key == np.repeat(best, self.sizes, axis=1)
        return ok, pen, V

    def validity(self, T: np.ndarray, cols) -> np.ndarray:
        """V = q · D(age) at times ``T`` (B, 1) for the item columns ``cols``."""
        age = (T.astype(np.float64) - self.obs[cols]) / US_PER_DAY
        return self.rel[cols] * decay_eval(age, *(p[cols] for p in self.decay))

    def fuse(self, S: np.ndarray, V: np.ndarray, pen: np.ndarray, fusion: str, alpha: float) -> np.ndarray:
        """Fused scores from similarities ``S``, validities ``V`` and penalties ``pen``."""
        S = S.astype(np.float64)
        if fusion == "product":
            f = np.clip(S, 0.0, 1.0) * V
        else:
            f = alpha * S + (1.0 - alpha) * V
        return f * pen

    def topk(self, f: np.ndarray, k: int, out_ids: list, out_scores: list, cols=None) -> None:
        """Top-k of each row of ``f`` (-inf = ineligible), ties broken by ascending id."""
        ids = self.ids if cols is None else self.ids[cols]
        n = f.shape[1]
        kk = min(k, n)
        if kk == 0:
            for _ in range(f.shape[0]):
                out_ids.append(np.zeros(0, np.uint64))
                out_scores.append(np.zeros(0))
            return
        part = np.argpartition(-f, kk - 1, axis=1)[:, :kk]
        kth = np.take_along_axis(f, part, 1).min(axis=1)
        ties = (f >= kth[:, None]).sum(axis=1)
        for r in range(f.shape[0]):
            if ties[r] == kk and np.isfinite(kth[r]):
                cand = part[r]
            else:  # ties at the k-th score, or fewer than k eligible
                cand = np.flatnonzero((f[r] >= kth[r]) & np.isfinite(f[r]))
            sc = f[r, cand]
            o = np.lexsort((ids[cand], -sc))[:kk]
            out_ids.append(ids[cand[o]])
            out_scores.append(sc[o])

    def search(self, q: Queries) -> Answers:
        """The exact top-k of every query, a block of queries per GEMM."""
        ids: list = []
        scores: list = []
        for b0 in range(0, len(q), self.block):
            b1 = min(b0 + self.block, len(q))
            ok, pen, V = self._masks(q.t[b0:b1], q.known_at[b0:b1], q.mode, q.penalty, q.tau,
                                     future_penalty=q.future_penalty)
            S = q.vectors[b0:b1] @ self.xt
            f = self.fuse(S, V, pen, q.fusion, q.alpha)
            f[~ok] = -np.inf
            self.topk(f, q.k, ids, scores)
        return Answers(ids, scores)

    # used by the hnswlib peer: the same masks for one query, in the original id order
    def eligibility(self, t: int, known_at: int, mode: str, penalty: float, tau: float,
                    future_penalty: float = 0.0):
        """(ok, pen) for one query, in this helper's column order."""
        ok, pen, _ = self._masks(np.array([t]), np.array([known_at]), mode, penalty, tau, validity=False,
                                 future_penalty=future_penalty)
        return ok[0], pen[0]


def numpy_exact(w: Workload, q: Queries) -> Answers:
    """Exact answers for ``q`` (the oracle), in one call."""
    return NumpyExact(w).search(q)


class NumpyPrefilter:
    """``as_of`` only: per query, NumPy masks the items in force and known at T, keeps each
    stem's arbitration winner among them, and scores just those (gather + matvec).

    This is what a NumPy user does when few items are valid; in ``latest`` mode every
    stem's winner stays a (penalised) candidate, so there is nothing to pre-filter and the
    peer is not run.
    """

    name = "numpy_prefilter"

    def __init__(self, w: Workload) -> None:
        c = w.cols
        self.X = np.ascontiguousarray(w.vectors, np.float32)
        self.vf, self.vt = c["valid_from"], c["valid_to"]
        self.ing, self.retr = c["ingested_at"], c["retracted_at"]
        self.obs = c["observed_at"].astype(np.float64)
        self.rel = c["reliability"].astype(np.float64)
        self.stem = np.asarray(c["stem"], np.int64)
        self.srank = static_rank(c)
        self.ids = np.asarray(c["id"], np.uint64)
        self.decay = decay_rows(w.specs, np.asarray(c["fact_type"], np.int64))

    def search(self, q: Queries) -> Answers:
        """The exact top-k of every ``as_of`` query, one query at a time."""
        if q.mode != "as_of":
            raise ConfigError("the pre-filter peer answers as_of queries only")
        ids_out, sc_out = [], []
        for i in range(len(q)):
            T, K = int(q.t[i]), int(q.known_at[i])
            idx = np.flatnonzero((self.vf <= T) & (T < self.vt) & (self.ing <= K) & (K < self.retr))
            st = self.stem[idx]
            if len(idx):  # arbitration: the in-force version of highest (version, valid_from, row)
                o = np.lexsort((self.srank[idx], st))
                so = st[o]
                last = np.r_[so[1:] != so[:-1], True] | (so < 0)
                idx = np.sort(idx[o[last]])
            par = tuple(p[idx] for p in self.decay)
            age = ((T - self.obs[idx]) / US_PER_DAY)[None, :]
            V = self.rel[idx] * decay_eval(age, *par)[0]
            keep = V >= q.tau
            idx, V = idx[keep], V[keep]
            s = (self.X[idx] @ q.vectors[i]).astype(np.float64)
            if q.fusion == "product":
                f = np.clip(s, 0.0, 1.0) * V
            else:
                f = q.alpha * s + (1.0 - q.alpha) * V
            kk = min(q.k, len(idx))
            if kk < len(idx):
                part = np.argpartition(-f, kk - 1)[:kk]
                cand = np.flatnonzero(f >= f[part].min())
            else:
                cand = np.arange(len(idx))
            o = np.lexsort((self.ids[idx[cand]], -f[cand]))[:kk]
            ids_out.append(self.ids[idx[cand[o]]])
            sc_out.append(f[cand[o]])
        return Answers(ids_out, sc_out)


# --------------------------------------------------------------------------------------
# vector indexes with a filter, then a NumPy rerank: hnswlib (a Python filter), FAISS (a
# native selector), USearch (over-fetch), LanceDB (an SQL pre-filter)
# --------------------------------------------------------------------------------------

class _GraphPeer:
    """What the filtered index peers share: per query, the eligibility mask (transaction
    time, validity, arbitration — NumPy, O(n)) by row, and the NumPy fused rerank of the
    candidates the index returns. Subclasses build the index and define ``_candidates``;
    ``ef`` is the size of the candidate pool they hand to the rerank."""

    def __init__(self, w: Workload, oracle: NumpyExact | None) -> None:
        self.w = w
        self.X = np.ascontiguousarray(w.vectors, np.float32)
        self.np = oracle or NumpyExact(w)
        # the NumPy helper works in its stem order; map rows to its columns
        self.col_of_row = np.empty(len(w), np.int64)
        self.col_of_row[self.np.perm] = np.arange(len(w))

    def _candidates(self, q: Queries, i: int, ok_rows: np.ndarray, kq: int, ef: int) -> np.ndarray:
        """Rows of eligible candidates (``ok_rows``) for query ``i`` of ``q``: at most ``ef``,
        ``kq`` = min(ef, eligible rows) wanted."""
        raise NotImplementedError

    def search(self, q: Queries, ef: int) -> Answers:
        """The top-k of every query among the ``ef`` eligible candidates the index returns."""
        ids_out, sc_out = [], []
        for i in range(len(q)):
            ok, pen = self.np.eligibility(int(q.t[i]), int(q.known_at[i]), q.mode, q.penalty, q.tau,
                                          q.future_penalty)
            ok_rows = ok[self.col_of_row]  # by row
            kq = min(ef, int(ok_rows.sum()))
            if kq == 0:
                ids_out.append(np.zeros(0, np.uint64))
                sc_out.append(np.zeros(0))
                continue
            rows = self._candidates(q, i, ok_rows, kq, ef)
            colsel = self.col_of_row[rows]
            S = (self.X[rows] @ q.vectors[i])[None, :]
            V = self.np.validity(np.array([[q.t[i]]]), colsel)
            f = self.np.fuse(S, V, pen[colsel][None, :], q.fusion, q.alpha)
            self.np.topk(f, q.k, ids_out, sc_out, cols=colsel)
        return Answers(ids_out, sc_out)


class HnswlibFiltered(_GraphPeer):
    """hnswlib (same M / ef_construction / vectors) with ``knn_query(filter=...)``.

    Per query: the eligibility mask (NumPy, O(n)) becomes the filter, a Python callable;
    hnswlib returns ``ef`` candidates (fewer if fewer are eligible); NumPy reranks them by
    fused score. The mask and rerank are timed too.
    """

    name = "hnswlib"

    def __init__(self, w: Workload, *, M: int = 16, ef_construction: int = 200, threads: int = 1,
                 oracle: NumpyExact | None = None, seed: int = 100) -> None:
        import hnswlib
        super().__init__(w, oracle)
        n, d = w.vectors.shape
        self.index = hnswlib.Index(space="cosine", dim=d)
        self.index.init_index(max_elements=max(n, 1), M=M, ef_construction=ef_construction, random_seed=seed)
        t0 = time.perf_counter()
        self.index.add_items(w.vectors, np.arange(n), num_threads=threads)
        self.build_s = time.perf_counter() - t0

    def search(self, q: Queries, ef: int) -> Answers:
        self.index.set_ef(ef)
        return super().search(q, ef)

    def _candidates(self, q: Queries, i: int, ok_rows: np.ndarray, kq: int, ef: int) -> np.ndarray:
        allow = ok_rows.tolist()
        while True:
            try:
                labels, _ = self.index.knn_query(q.vectors[i], k=kq, num_threads=1, filter=allow.__getitem__)
                return labels[0].astype(np.int64)
            except RuntimeError:  # the filtered walk found fewer than kq: ask for fewer
                if kq == 1:
                    return np.zeros(0, np.int64)
                kq = max(1, kq // 2)


class FaissFiltered(_GraphPeer):
    """FAISS ``IndexHNSWFlat`` (inner product on the unit vectors) searched with an
    ``IDSelectorBitmap`` of the query's eligible rows, then the NumPy fused rerank.

    Per query: the eligibility mask (NumPy, O(n), as for the hnswlib peer) packed into a
    bitmap; FAISS walks its graph keeping only selected ids (a native filter, unlike the
    hnswlib peer's Python callable) and returns ``ef`` candidates; NumPy reranks them by
    fused score. The mask, the bitmap and the rerank are timed too. One thread.
    """

    name = "faiss"

    def __init__(self, w: Workload, *, M: int = 16, ef_construction: int = 200, threads: int = 1,
                 oracle: NumpyExact | None = None) -> None:
        import faiss
        super().__init__(w, oracle)
        self.faiss = faiss
        self.index = faiss.IndexHNSWFlat(self.X.shape[1], M, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = ef_construction
        old = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(max(1, threads))
        t0 = time.perf_counter()
        self.index.add(self.X)
        self.build_s = time.perf_counter() - t0
        faiss.omp_set_num_threads(old)

    def search(self, q: Queries, ef: int) -> Answers:
        old = self.faiss.omp_get_max_threads()
        self.faiss.omp_set_num_threads(1)
        try:
            return super().search(q, ef)
        finally:
            self.faiss.omp_set_num_threads(old)

    def _candidates(self, q: Queries, i: int, ok_rows: np.ndarray, kq: int, ef: int) -> np.ndarray:
        faiss = self.faiss
        bitmap = np.packbits(ok_rows, bitorder="little")  # alive for the search below
        params = faiss.SearchParametersHNSW(sel=faiss.IDSelectorBitmap(len(ok_rows), faiss.swig_ptr(bitmap)),
                                            efSearch=max(ef, kq))
        _, labels = self.index.search(q.vectors[i][None, :], kq, params=params)
        return labels[0][labels[0] >= 0].astype(np.int64)


class UsearchOverfetch(_GraphPeer):
    """USearch ``Index`` (HNSW, ``metric="ip"`` on the unit vectors, ``dtype="f32"``,
    ``connectivity`` = M, ``expansion_add`` = ef_construction) with the filter applied to
    an over-fetch, then the NumPy fused rerank.

    USearch's Python ``Index.search`` (2.26) takes no filter or predicate argument, so per
    query: the eligibility mask (NumPy, O(n), as for the other graph peers); a search with
    ``expansion_search = ef`` for ``count`` neighbours, ``count`` starting at ``ef`` scaled
    by n / eligible rows (the share the mask gives); the ineligible neighbours dropped, and
    while fewer than ``ef`` eligible remain, ``count`` doubled (up to n, or until the graph
    returns fewer than asked); the first ``ef`` eligible neighbours reranked by fused score.
    The mask, the searches and the rerank are timed. One thread.
    """

    name = "usearch"

    def __init__(self, w: Workload, *, M: int = 16, ef_construction: int = 200, threads: int = 1,
                 oracle: NumpyExact | None = None) -> None:
        from usearch.index import Index
        super().__init__(w, oracle)
        self.index = Index(ndim=self.X.shape[1], metric="ip", connectivity=M, expansion_add=ef_construction,
                           dtype="f32")
        t0 = time.perf_counter()
        self.index.add(np.arange(len(self.X), dtype=np.uint64), self.X, threads=max(1, threads))
        self.build_s = time.perf_counter() - t0

    def search(self, q: Queries, ef: int) -> Answers:
        self.index.expansion_search = ef
        return super().search(q, ef)

    def _candidates(self, q: Queries, i: int, ok_rows: np.ndarray, kq: int, ef: int) -> np.ndarray:
        n = len(ok_rows)
        count = min(n, -(-kq * n // int(np.count_nonzero(ok_rows))))
        while True:
            keys = self.index.search(q.vectors[i], count, threads=1).keys.astype(np.int64)
            rows = keys[ok_rows[keys]]
            if len(rows) >= kq or count >= n or len(keys) < count:
                return rows[:kq]
            count = min(n, 2 * count)


class LanceDBPrefilter(_GraphPeer):
    """An embedded LanceDB table (in a temporary directory) of row, vector (float32) and
    the time columns valid_from, valid_to, ingested_at, retracted_at (int64 µs) and
    deprecated, searched exactly (no vector index: a flat scan, ``distance_type("dot")``)
    under an SQL pre-filter, then arbitration and the NumPy fused rerank.

    Per query: the eligibility mask (NumPy, O(n), as for the graph peers); the SQL
    ``where`` holds what is decided row by row (:meth:`where`: known at the transaction
    time, in force or, in ``latest`` mode, penalised rather than excluded) with
    ``prefilter=True``; LanceDB returns the ``ef`` rows most similar to the query among
    those passing it (``ef`` is the over-fetch k'); the rows the mask rejects are dropped
    (arbitration losers within a stem, which depend on the stem's other rows, and a validity
    below τ, which needs the decay kernels); NumPy reranks the rest by fused score. The
    mask, the search and the rerank are timed. LanceDB runs the scan on its own thread
    pools (``LANCE_CPU_THREADS``); the queries go one at a time.
    """

    name = "lancedb"

    def __init__(self, w: Workload, *, oracle: NumpyExact | None = None) -> None:
        import lancedb
        import pyarrow as pa
        super().__init__(w, oracle)
        c = w.cols
        n, d = self.X.shape
        data = pa.table({
            "row": pa.array(np.arange(n, dtype=np.int64)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(self.X.reshape(-1)), d),
            **{k: pa.array(np.asarray(c[k], np.int64))
               for k in ("valid_from", "valid_to", "ingested_at", "retracted_at")},
            "deprecated": pa.array(np.asarray(c["deprecated"], bool)),
        })
        self._dir = tempfile.TemporaryDirectory(prefix="chrono-bench-lancedb-")  # removed with the peer
        t0 = time.perf_counter()
        self.table = lancedb.connect(self._dir.name).create_table("items", data=data)
        self.build_s = time.perf_counter() - t0

    @staticmethod
    def where(q: Queries, i: int) -> str:
        """The SQL filter of query ``i``: known at its transaction time, and in force at T
        (``as_of``) or, in ``latest`` mode, with a penalty above zero (in force; valid from
        T or before when ``penalty`` > 0; not yet valid when ``future`` keeps those)."""
        T, K = int(q.t[i]), int(q.known_at[i])
        known = f"ingested_at <= {K} AND {K} < retracted_at"
        if q.mode == "as_of":
            return f"{known} AND valid_from <= {T} AND {T} < valid_to"
        cond = f"valid_from <= {T}" if q.penalty > 0 else \
            f"(valid_from <= {T} AND {T} < valid_to AND NOT deprecated)"
        if q.future_penalty > 0:
            cond = f"({cond} OR valid_from > {T})"
        return f"{known} AND {cond}"

    def _candidates(self, q: Queries, i: int, ok_rows: np.ndarray, kq: int, ef: int) -> np.ndarray:
        tab = (self.table.search(q.vectors[i]).distance_type("dot").where(self.where(q, i), prefilter=True)
               .select(["row", "_distance"]).limit(ef).to_arrow())
        rows = tab.column("row").to_numpy()
        return rows[ok_rows[rows]]
