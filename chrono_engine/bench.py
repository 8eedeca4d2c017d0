"""Benchmark harness: fused temporal top-k search, the engine against its peers, side by side.

One run generates the synthetic corpus (:mod:`chrono_engine.synthetic`), builds the engine
and the peers on the same vectors and metadata, and for every (mode, selectivity, threads)
measures queries per second and recall@k against an exact NumPy implementation of the
search definition (DESIGN.md "Scoring" and "Query modes"; tests/reference.py is the
slow, obviously-correct version this one is tested against). It prints a table with the
ratio *engine QPS / best peer QPS among peers reaching recall ≥ 0.95*, and writes JSON::

    python -m chrono_engine.bench                      # N=20k, d=128, 200 queries (~1 min)
    python -m chrono_engine.bench --regime gentle --json gentle.json
    python benches/bench_search.py                     # N=200k, d=384, 1000 queries

Peers (each answers the same definition: validity/transaction filter, per-stem
arbitration, decay, fused score, ties by id):

``numpy``
    NumPy batch exact: query blocks matmul'd against every vector, masks, decay, fusion,
    arbitration (segment max over stems), argpartition. It is also the recall oracle.
``numba``
    A fused Numba scan (imported lazily; skipped when missing): per query one metadata
    pass for stem arbitration, then one pass that checks eligibility, evaluates the
    decay, skips the dot product when the validity alone cannot beat the current k-th
    score, and keeps a top-k heap. The kernel releases the GIL; a batch is split into
    one slice of queries per thread.
``hnswlib``
    The hnswlib Python package (same M, ef_construction, vectors), searched with its
    ``filter=`` callable for the validity/transaction/arbitration filter at several ef,
    returning ef candidates that NumPy reranks by fused score. The filter is a Python
    callable, so it runs on one thread (hnswlib's own advice) and on fewer queries.

QPS is per query, so peers measured on fewer queries are comparable; the output says
which ran on fewer queries and on how many threads. Timings take the best of a few
repeats: at least ``--min-repeat`` runs and ``--min-time`` seconds in all, the same rule for
every contender (the engine and each peer). The NumPy peer's BLAS is
limited to the row's thread count where the OpenBLAS library can be found.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "Answers",
    "Config",
    "HnswlibFiltered",
    "NumbaScan",
    "NumpyExact",
    "NumpyPrefilter",
    "Queries",
    "Workload",
    "answers_from_table",
    "blas_threads",
    "machine_info",
    "main",
    "numpy_exact",
    "policy_for",
    "recall_at_k",
    "run",
    "same_topk",
    "workload_from_corpus",
    "workload_from_engine",
]

OPEN_END = np.iinfo(np.int64).max
#: a transaction time after everything: the bitemporal filter passes every item
KNOWN_ALL = np.iinfo(np.int64).max - 1
US_PER_DAY = 86_400_000_000
RECALL_TARGET = 0.95
#: two scores closer than this are a tie for the top-k comparisons (float32 similarity)
SCORE_TOL = 1e-5


# --------------------------------------------------------------------------------------
# inputs: the corpus as any store would hold it, and a batch of queries
# --------------------------------------------------------------------------------------

@dataclass
class Workload:
    """Vectors and metadata columns as the search definition reads them.

    ``cols``: valid_from, valid_to, observed_at, ingested_at, retracted_at (int64 µs;
    open ends int64 max), reliability (float), fact_type (int codes into ``specs``), stem
    (int, -1 = no stem), version (orderable int), deprecated (bool), id (uint64).
    ``specs``: decay kernel rows [code, p0, p1, scale, symmetric] per fact-type code
    (:meth:`chrono_engine.DecayPolicy.kernel_table`, read as
    :func:`chrono_engine.decay.evaluate_spec` does).
    """

    vectors: np.ndarray
    cols: dict
    specs: np.ndarray

    def __len__(self) -> int:
        return len(self.cols["valid_from"])


@dataclass
class Queries:
    """One batch of queries: vectors, T and known_at per query, and the scoring knobs."""

    vectors: np.ndarray
    t: np.ndarray
    known_at: np.ndarray
    mode: str = "as_of"            # "as_of" | "latest"
    fusion: str = "product"        # "product" | "linear"
    alpha: float = 0.75
    tau: float = 0.0
    penalty: float = 0.1           # latest: items not in force are multiplied by this
    k: int = 10

    def __len__(self) -> int:
        return len(self.vectors)

    def subset(self, n: int) -> Queries:
        """The first ``n`` queries, same knobs."""
        return Queries(self.vectors[:n], self.t[:n], self.known_at[:n], self.mode, self.fusion,
                       self.alpha, self.tau, self.penalty, self.k)


@dataclass
class Answers:
    """Top-k per query: ``ids`` (list of uint64 arrays) and ``scores`` (float64 arrays)."""

    ids: list
    scores: list

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, n: int) -> Answers:
        return Answers(self.ids[:n], self.scores[:n])


def policy_for(half_lives: Sequence[float]):
    """The benchmark's decay policy: fact type ``typeNN`` decays exponentially with the
    NN-th half-life (days); no default, so an unknown type is an error."""
    import chrono_engine as ce
    return ce.DecayPolicy({f"type{i:02d}": ce.Exponential(half_life=float(h))
                           for i, h in enumerate(half_lives)}, default=None)


def workload_from_corpus(corpus, policy) -> Workload:
    """A :class:`Workload` straight from a synthetic corpus (ids = ingest order)."""
    n = len(corpus)
    cols = {
        "valid_from": corpus.valid_from.astype(np.int64),
        "valid_to": corpus.valid_to.astype(np.int64),
        "observed_at": corpus.observed_at.astype(np.int64),
        "ingested_at": corpus.ingested_at.astype(np.int64),
        "retracted_at": np.full(n, OPEN_END, np.int64),
        "reliability": corpus.reliability.astype(np.float32),
        "fact_type": corpus.fact_type.astype(np.int64),
        "stem": corpus.stem_id.astype(np.int64),
        "version": corpus.version.astype(np.uint64),
        "deprecated": corpus.deprecated.astype(bool),
        "id": np.arange(n, dtype=np.uint64),
    }
    return Workload(np.ascontiguousarray(corpus.vector, np.float32), cols,
                    policy.kernel_table(list(corpus.fact_types)))


def workload_from_engine(eng) -> Workload:
    """A :class:`Workload` read back from an engine's core (what the engine stored)."""
    c = eng.columns()
    cols = {"valid_from": c["valid_from"], "valid_to": c["valid_to"], "observed_at": c["observed_at"],
            "ingested_at": c["ingested_at"], "retracted_at": c["retracted_at"],
            "reliability": c["reliability"], "fact_type": c["fact_type"].astype(np.int64),
            "stem": c["stem"].astype(np.int64), "version": c["version"],
            "deprecated": c["deprecated"].astype(bool), "id": c["id"]}
    vecs = eng.vectors()
    names = list(eng.fact_types) or ["general"]
    return Workload(np.ascontiguousarray(vecs, np.float32), cols, eng.decay.kernel_table(names))


# --------------------------------------------------------------------------------------
# shared pieces of the definition
# --------------------------------------------------------------------------------------

def _decay_rows(specs: np.ndarray, codes: np.ndarray):
    """Per-item kernel parameters (code, p0, p1, scale, symmetric) from per-type specs."""
    s = np.asarray(specs, np.float64)[codes]
    return (s[:, 0].astype(np.int64), s[:, 1].copy(), s[:, 2].copy(), s[:, 3].copy(), s[:, 4] != 0)


def _decay_eval(age: np.ndarray, code, p0, p1, scale, sym) -> np.ndarray:
    """evaluate_spec vectorised over items with per-item parameters; ``age`` is (B, n)
    days and the parameter arrays (n,). Same formulas as chrono_engine.decay.evaluate_spec."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        a = np.where(sym, np.abs(age), np.maximum(age, 0.0)) if sym.any() else np.maximum(age, 0.0)
        a = a * scale
        present = np.unique(code)
        out = None
        for c in present:
            if c == 0:
                d = np.ones_like(a)
            elif c == 1:
                d = np.exp(-p0 * np.maximum(0.0, a - p1))
            elif c == 2:
                x = np.maximum(0.0, a - p1)
                d = np.exp(-(x * x) / (2.0 * p0 * p0))
            elif c == 3:
                d = np.maximum(0.0, 1.0 - p0 * np.maximum(0.0, a - p1))
            elif c == 4:
                d = (1.0 + a) ** (-p0)
            else:
                d = np.exp(-((a / p1) ** p0))
            out = d if out is None else np.where(code == c, d, out)
    return out


def _static_rank(cols: dict) -> np.ndarray:
    """Rank of each row by (version, valid_from, row): the arbitration order inside one
    in-force class (tests/reference.py ``winners``)."""
    n = len(cols["valid_from"])
    order = np.lexsort((np.arange(n), cols["valid_from"], cols["version"]))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    return rank


# --------------------------------------------------------------------------------------
# peer 1: NumPy batch exact (the oracle)
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
        self.srank = _static_rank(c)
        st = c["stem"]
        self.n_stemmed = int((st >= 0).sum())
        s = st[: self.n_stemmed]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if self.n_stemmed else np.zeros(0, np.int64)
        self.starts = starts
        self.sizes = np.diff(np.r_[starts, self.n_stemmed])
        self.decay = _decay_rows(w.specs, c["fact_type"])
        self.xt = np.ascontiguousarray(w.vectors[perm].T)  # (d, n): one GEMM per block
        self.block = max(1, int(block_elems // max(n, 1)))

    def _masks(self, T: np.ndarray, K: np.ndarray, mode: str, penalty: float, tau: float,
               validity: bool = True):
        """(ok, pen, V) for a block of query times: eligibility, penalty, validity.
        ``validity=False`` skips V (None) where τ = 0 makes it irrelevant to eligibility."""
        T = T[:, None]
        K = K[:, None]
        known = (self.ing <= K) & (K < self.retr)
        valid = (self.vf <= T) & (T < self.vt)
        in_force = valid & ~self.dep if mode == "latest" else valid
        pen = np.where(in_force, 1.0, penalty if mode == "latest" else 0.0)
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
        return self.rel[cols] * _decay_eval(age, *(p[cols] for p in self.decay))

    def _fuse(self, S: np.ndarray, V: np.ndarray, pen: np.ndarray, fusion: str, alpha: float) -> np.ndarray:
        S = S.astype(np.float64)
        if fusion == "product":
            f = np.clip(S, 0.0, 1.0) * V
        else:
            f = alpha * S + (1.0 - alpha) * V
        return f * pen

    def _topk(self, f: np.ndarray, k: int, out_ids: list, out_scores: list, cols=None) -> None:
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
        ids: list = []
        scores: list = []
        for b0 in range(0, len(q), self.block):
            b1 = min(b0 + self.block, len(q))
            ok, pen, V = self._masks(q.t[b0:b1], q.known_at[b0:b1], q.mode, q.penalty, q.tau)
            S = q.vectors[b0:b1] @ self.xt
            f = self._fuse(S, V, pen, q.fusion, q.alpha)
            f[~ok] = -np.inf
            self._topk(f, q.k, ids, scores)
        return Answers(ids, scores)

    # used by the hnswlib peer: the same masks for one query, in the original id order
    def eligibility(self, t: int, known_at: int, mode: str, penalty: float, tau: float):
        """(ok, pen) for one query, in this helper's column order."""
        ok, pen, _ = self._masks(np.array([t]), np.array([known_at]), mode, penalty, tau, validity=False)
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
        self.srank = _static_rank(c)
        self.ids = np.asarray(c["id"], np.uint64)
        self.decay = _decay_rows(w.specs, np.asarray(c["fact_type"], np.int64))

    def search(self, q: Queries) -> Answers:
        if q.mode != "as_of":
            raise ValueError("the pre-filter peer answers as_of queries only")
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
            V = self.rel[idx] * _decay_eval(age, *par)[0]
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
# peer 2: a fused Numba scan
# --------------------------------------------------------------------------------------

_NUMBA_KERNEL = None


def _numba_kernel():
    """Compile (once) and return the fused scan kernel; raises ImportError without numba."""
    global _NUMBA_KERNEL
    if _NUMBA_KERNEL is not None:
        return _NUMBA_KERNEL
    import numba
    from numba import njit

    no_id = np.uint64(np.iinfo(np.uint64).max)
    fm = {"reassoc", "contract", "nsz", "arcp"}  # dot product only: lets LLVM vectorise it

    @njit(fastmath=fm)
    def dot(a, b):
        s = np.float32(0.0)
        for j in range(a.shape[0]):
            s += a[j] * b[j]
        return s

    @njit
    def decay(code, p0, p1, scale, sym, age):
        a = abs(age) if sym else max(age, 0.0)
        a *= scale
        if code == 0:
            return 1.0
        if code == 1:
            return np.exp(-p0 * max(0.0, a - p1))
        if code == 2:
            x = max(0.0, a - p1)
            return np.exp(-(x * x) / (2.0 * p0 * p0))
        if code == 3:
            return max(0.0, 1.0 - p0 * max(0.0, a - p1))
        if code == 4:
            return (1.0 + a) ** (-p0)
        return np.exp(-((a / p1) ** p0))

    @njit(nogil=True)
    def scan(Q, T, K, X, vf, vt, obs, ing, retr, rel, ft, stem, srank, dep, specs,
             latest, linear, alpha, tau, penalty, k, n_stems, ids, out_ids, out_scores, q0, q1):
        n = X.shape[0]
        out_pen = penalty if latest else 0.0
        for qi in range(q0, q1):
            q = Q[qi]
            t = T[qi]
            kn = K[qi]
            # pass 1 (metadata only): the arbitration winner's key per stem
            best = np.full(n_stems, -1, np.int64)
            for i in range(n):
                s = stem[i]
                if s >= 0 and ing[i] <= kn and kn < retr[i]:
                    inf = vf[i] <= t and t < vt[i] and not (latest and dep[i])
                    key = srank[i] + (n if inf else 0)
                    if key > best[s]:
                        best[s] = key
            # pass 2: eligibility, decay, (bounded) dot product, top-k heap
            hs = np.full(k, -np.inf)
            hi = np.full(k, no_id, np.uint64)
            worst = 0  # slot of the worst entry (lowest score, then highest id)
            for i in range(n):
                if not (ing[i] <= kn and kn < retr[i]):
                    continue
                inf = vf[i] <= t and t < vt[i] and not (latest and dep[i])
                pen = 1.0 if inf else out_pen
                if pen <= 0.0:
                    continue
                s = stem[i]
                if s >= 0 and srank[i] + (n if inf else 0) != best[s]:
                    continue
                c = ft[i]
                V = rel[i] * decay(np.int64(specs[c, 0]), specs[c, 1], specs[c, 2], specs[c, 3],
                                   specs[c, 4] != 0.0, (t - obs[i]) / 86400000000.0)
                if V < tau:
                    continue
                # the similarity is at most 1: skip the dot product when even that loses
                bound = (V if not linear else alpha + (1.0 - alpha) * V) * pen
                if bound + 1e-6 < hs[worst]:
                    continue
                sim = np.float64(dot(q, X[i]))
                if linear:
                    f = (alpha * sim + (1.0 - alpha) * V) * pen
                else:
                    f = min(max(sim, 0.0), 1.0) * V * pen
                idv = ids[i]
                if f > hs[worst] or (f == hs[worst] and idv < hi[worst]):
                    hs[worst] = f
                    hi[worst] = idv
                    w = 0
                    for j in range(1, k):
                        if hs[j] < hs[w] or (hs[j] == hs[w] and hi[j] > hi[w]):
                            w = j
                    worst = w
            # sort the heap: score descending, id ascending
            for a in range(k):
                for b in range(a + 1, k):
                    if hs[b] > hs[a] or (hs[b] == hs[a] and hi[b] < hi[a]):
                        hs[a], hs[b] = hs[b], hs[a]
                        hi[a], hi[b] = hi[b], hi[a]
            out_scores[qi] = hs
            out_ids[qi] = hi

    _NUMBA_KERNEL = (numba, scan)
    return _NUMBA_KERNEL


class NumbaScan:
    """The definition as one fused Numba loop per query (see the module docstring)."""

    name = "numba"

    def __init__(self, w: Workload) -> None:
        self.numba, self.kernel = _numba_kernel()
        c = w.cols
        self.X = np.ascontiguousarray(w.vectors, np.float32)
        self.vf = np.ascontiguousarray(c["valid_from"], np.int64)
        self.vt = np.ascontiguousarray(c["valid_to"], np.int64)
        self.obs = np.ascontiguousarray(c["observed_at"], np.int64)
        self.ing = np.ascontiguousarray(c["ingested_at"], np.int64)
        self.retr = np.ascontiguousarray(c["retracted_at"], np.int64)
        self.rel = np.ascontiguousarray(c["reliability"], np.float64)
        self.ft = np.ascontiguousarray(c["fact_type"], np.int64)
        stem = np.asarray(c["stem"], np.int64)
        self.stem = np.ascontiguousarray(stem)
        self.n_stems = int(stem.max()) + 1 if len(stem) and stem.max() >= 0 else 1
        self.srank = _static_rank(c)
        self.dep = np.ascontiguousarray(c["deprecated"], np.bool_)
        self.specs = np.ascontiguousarray(w.specs, np.float64)
        self.ids = np.ascontiguousarray(c["id"], np.uint64)

    def search(self, q: Queries, threads: int = 1) -> Answers:
        nq = len(q)
        out_ids = np.zeros((nq, q.k), np.uint64)
        out_scores = np.zeros((nq, q.k), np.float64)
        args = (np.ascontiguousarray(q.vectors, np.float32), np.ascontiguousarray(q.t, np.int64),
                np.ascontiguousarray(q.known_at, np.int64), self.X, self.vf, self.vt, self.obs,
                self.ing, self.retr, self.rel, self.ft, self.stem, self.srank, self.dep, self.specs,
                q.mode == "latest", q.fusion == "linear", float(q.alpha), float(q.tau),
                float(q.penalty), int(q.k), self.n_stems, self.ids, out_ids, out_scores)
        threads = max(1, min(int(threads), nq))
        if threads == 1:
            self.kernel(*args, 0, nq)
        else:  # the kernel releases the GIL: one contiguous slice of queries per thread
            cuts = np.linspace(0, nq, threads + 1).astype(int)
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(lambda i: self.kernel(*args, int(cuts[i]), int(cuts[i + 1])), range(threads)))
        ids, scores = [], []
        for r in range(nq):
            keep = np.isfinite(out_scores[r])
            ids.append(out_ids[r][keep])
            scores.append(out_scores[r][keep])
        return Answers(ids, scores)


# --------------------------------------------------------------------------------------
# peer 3: hnswlib with a Python filter, then a NumPy rerank
# --------------------------------------------------------------------------------------

class HnswlibFiltered:
    """hnswlib (same M / ef_construction / vectors) with ``knn_query(filter=...)``.

    Per query: the eligibility mask (transaction time, validity, arbitration — NumPy,
    O(n)) becomes the filter; hnswlib returns ``ef`` candidates (fewer if fewer are
    eligible); NumPy reranks them by fused score. The mask and rerank are timed too.
    """

    name = "hnswlib"

    def __init__(self, w: Workload, *, M: int = 16, ef_construction: int = 200, threads: int = 1,
                 oracle: NumpyExact | None = None, seed: int = 100) -> None:
        import hnswlib
        self.w = w
        n, d = w.vectors.shape
        self.index = hnswlib.Index(space="cosine", dim=d)
        self.index.init_index(max_elements=max(n, 1), M=M, ef_construction=ef_construction, random_seed=seed)
        t0 = time.perf_counter()
        self.index.add_items(w.vectors, np.arange(n), num_threads=threads)
        self.build_s = time.perf_counter() - t0
        self.np = oracle or NumpyExact(w)
        # the NumPy helper works in its stem order; map labels (rows) to its columns
        self.col_of_row = np.empty(n, np.int64)
        self.col_of_row[self.np.perm] = np.arange(n)
        self.X = w.vectors

    def search(self, q: Queries, ef: int) -> Answers:
        self.index.set_ef(ef)
        ids_out, sc_out = [], []
        for i in range(len(q)):
            ok, pen = self.np.eligibility(int(q.t[i]), int(q.known_at[i]), q.mode, q.penalty, q.tau)
            ok_rows = ok[self.col_of_row]  # by label (row)
            n_ok = int(ok_rows.sum())
            kq = min(ef, n_ok)
            if kq == 0:
                ids_out.append(np.zeros(0, np.uint64))
                sc_out.append(np.zeros(0))
                continue
            allow = ok_rows.tolist()
            labels = None
            while labels is None:
                try:
                    labels, _ = self.index.knn_query(q.vectors[i], k=kq, num_threads=1, filter=allow.__getitem__)
                except RuntimeError:  # the filtered walk found fewer than kq: ask for fewer
                    if kq == 1:
                        labels = np.zeros((1, 0), np.int64)
                    kq = max(1, kq // 2)
            rows = labels[0].astype(np.int64)
            colsel = self.col_of_row[rows]
            S = (self.X[rows] @ q.vectors[i])[None, :]
            V = self.np.validity(np.array([[q.t[i]]]), colsel)
            f = self.np._fuse(S, V, pen[colsel][None, :], q.fusion, q.alpha)
            self.np._topk(f, q.k, ids_out, sc_out, cols=colsel)
        return Answers(ids_out, sc_out)


# --------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------

def recall_at_k(got: Answers | Sequence, ref: Answers | Sequence) -> float:
    """Mean recall@k: retrieved ids that are in the exact top-k, over all queries
    (total hits / total exact answers; the same as tests/reference.py ``recall``)."""
    g = got.ids if isinstance(got, Answers) else got
    r = ref.ids if isinstance(ref, Answers) else [x[0] for x in ref]
    hits = total = 0
    for gi, ri in zip(g, r):
        hits += len(np.intersect1d(np.asarray(gi, np.uint64), np.asarray(ri, np.uint64)))
        total += len(ri)
    return hits / max(total, 1)


def same_topk(g_ids, g_scores, r_ids, r_scores, tol: float = SCORE_TOL) -> bool:
    """The same top-k up to rounding: scores agree within ``tol`` rank by rank, and any
    id that differs sits at the k-th score (a tie)."""
    if len(g_ids) != len(r_ids):
        return False
    if len(r_ids) == 0:
        return True
    if not np.allclose(np.asarray(g_scores, np.float64), np.asarray(r_scores, np.float64), rtol=0, atol=tol):
        return False
    diff = set(np.asarray(g_ids).tolist()) ^ set(np.asarray(r_ids).tolist())
    if not diff:
        return True
    kth = float(r_scores[-1])
    gmap = dict(zip(np.asarray(g_ids).tolist(), np.asarray(g_scores, np.float64).tolist()))
    rmap = dict(zip(np.asarray(r_ids).tolist(), np.asarray(r_scores, np.float64).tolist()))
    return all(abs({**rmap, **gmap}[i] - kth) < tol for i in diff)


def answers_from_table(table, nq: int) -> tuple[Answers, np.ndarray]:
    """Answers and the per-query ``certified`` flags from a search_batch result table."""
    qcol = table.column("query").to_numpy()
    ids = table.column("id").to_numpy()
    sc = table.column("score").to_numpy()
    cert_rows = table.column("certified").to_numpy(zero_copy_only=False)
    bounds = np.searchsorted(qcol, np.arange(nq + 1))
    cert = np.ones(nq, bool)
    out_i, out_s = [], []
    for r in range(nq):
        a, b = bounds[r], bounds[r + 1]
        out_i.append(ids[a:b].astype(np.uint64))
        out_s.append(sc[a:b].astype(np.float64))
        if b > a:
            cert[r] = bool(cert_rows[a:b].all())
    return Answers(out_i, out_s), cert


def _agreement(got: Answers, ref: Answers) -> float:
    """Fraction of queries whose top-k equals the oracle's (up to ties, :func:`same_topk`)."""
    ok = [same_topk(g, gs, r, rs) for g, gs, r, rs in zip(got.ids, got.scores, ref.ids, ref.scores)]
    return float(np.mean(ok)) if ok else 1.0


# --------------------------------------------------------------------------------------
# timing and the machine
# --------------------------------------------------------------------------------------

def _best_time(fn: Callable[[], Any], min_time: float, max_repeat: int = 5, min_repeat: int = 1):
    """(best seconds, last result): repeat ``fn`` until ``min_time`` has passed in all and it
    ran ``min_repeat`` times, or it ran ``max(max_repeat, min_repeat)`` times, whichever
    first; the best run counts (least disturbed)."""
    best = float("inf")
    spent = 0.0
    out = None
    for i in range(max(1, max_repeat, min_repeat)):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        if spent >= min_time and i + 1 >= min_repeat:
            break
    return best, out


_BLAS = None


def _blas_functions():
    """(set, get) of the OpenBLAS library NumPy loaded, or (None, None)."""
    global _BLAS
    if _BLAS is not None:
        return _BLAS
    _BLAS = (None, None)
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return _BLAS
    for p in sorted(paths):
        try:
            lib = ctypes.CDLL(p)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                s, g = f"{prefix}_set_num_threads{suffix}", f"{prefix}_get_num_threads{suffix}"
                if hasattr(lib, s) and hasattr(lib, g):
                    setter, getter = getattr(lib, s), getattr(lib, g)
                    setter.argtypes, setter.restype = [ctypes.c_int], None
                    getter.argtypes, getter.restype = [], ctypes.c_int
                    _BLAS = (setter, getter)
                    return _BLAS
    return _BLAS


@contextlib.contextmanager
def blas_threads(n: int):
    """Limit OpenBLAS (NumPy's matmul) to ``n`` threads inside the block, where possible."""
    setter, getter = _blas_functions()
    if setter is None:
        yield False
        return
    old = getter()
    setter(int(n))
    try:
        yield True
    finally:
        setter(old)


def machine_info() -> dict:
    """What ran the benchmark: CPU, cores, Python, NumPy, the engine's build info."""
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "numpy": np.__version__}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        info["load_average"] = os.getloadavg()
    except OSError:
        pass
    try:
        import chrono_engine as ce
        info["chrono_engine"] = ce.__version__
        info["build_info"] = ce.build_info()
    except Exception as e:  # noqa: BLE001 - the report still runs without it
        info["build_info_error"] = repr(e)
    return info


def write_json(path: str | os.PathLike, data: dict) -> Path:
    """Write ``data`` as indented JSON (NumPy scalars converted); returns the path."""
    def conv(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, Path):
            return str(o)
        raise TypeError(f"not JSON serialisable: {type(o).__name__}")
    p = Path(path)
    if p.parent != Path(""):
        p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=1, default=conv))
    return p


# --------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------

REGIMES = {"steep": ("STEEP_HALF_LIVES", "product"), "gentle": ("GENTLE_HALF_LIVES", "linear")}
ALL_PEERS = ("numpy", "numpy_prefilter", "numba", "hnswlib")


@dataclass
class Config:
    n: int = 20_000
    dim: int = 128
    queries: int = 200
    slow_queries: int = 30
    selectivity: tuple = (0.5, 0.1, 0.01)
    regimes: tuple = ("steep",)
    modes: tuple = ("as_of", "latest")
    threads: tuple = (1, 2)
    peers: tuple = ALL_PEERS
    efs: tuple = (100, 200, 400, 800)
    fusion: str | None = None     # None: the regime's
    alpha: float = 0.75
    k: int = 10
    M: int = 16
    ef_construction: int = 200
    build_threads: int = 0        # 0: all cores
    engine_exact: bool = True
    engine_ef: int | None = None
    scan_limit: int | None = None
    engine_batch: int = 0         # queries per engine search_batch call (0: all in one call)
    min_time: float = 0.3
    min_repeat: int = 1           # every timing runs at least this often (all contenders alike)
    seed: int = 0
    json: str | None = "bench_out/bench_search.json"
    plot: str | None = "auto"     # "auto": beside the JSON, when matplotlib is importable
    quiet: bool = False


def _log(cfg: Config, *a) -> None:
    if not cfg.quiet:
        print(*a, flush=True)


def run(cfg: Config) -> dict:
    """Run the benchmark described by ``cfg``; returns the report (also written as JSON)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    import chrono_engine as ce
    from chrono_engine import synthetic as syn

    build_threads = cfg.build_threads or os.cpu_count() or 1
    report: dict = {"benchmark": "search", "config": dict(cfg.__dict__),
                    "machine": machine_info(), "regimes": {}, "results": [], "notes": []}
    blas_ok = _blas_functions()[0] is not None
    if not blas_ok:
        report["notes"].append("OpenBLAS thread control not found: NumPy matmul used its default threads")
    peers = [p for p in cfg.peers if p in ALL_PEERS]
    numba_kernel_ok = True
    if "numba" in peers:
        try:
            t0 = time.perf_counter()
            _numba_kernel()
            report["numba_import_s"] = time.perf_counter() - t0
        except ImportError:
            numba_kernel_ok = False
            peers.remove("numba")
            report["notes"].append("numba is not installed: the Numba scan peer was skipped")
            _log(cfg, "numba not installed: skipping the Numba peer")
    if "hnswlib" in peers:
        try:
            import hnswlib  # noqa: F401
        except ImportError:
            peers.remove("hnswlib")
            report["notes"].append("hnswlib is not installed: the hnswlib peer was skipped")
            _log(cfg, "hnswlib not installed: skipping the hnswlib peer")
    nslow = min(cfg.slow_queries, cfg.queries)

    for regime in cfg.regimes:
        hl_name, regime_fusion = REGIMES[regime]
        fusion = cfg.fusion or regime_fusion
        half_lives = getattr(syn, hl_name)
        _log(cfg, f"\n== regime {regime}: half-lives {half_lives[0]:.0f}-{half_lives[-1]:.0f} days, "
                  f"fusion {fusion}{f' (alpha={cfg.alpha})' if fusion == 'linear' else ''}; "
                  f"N={cfg.n}, d={cfg.dim}, {cfg.queries} queries")
        t0 = time.perf_counter()
        corpus = syn.make_corpus(cfg.n, cfg.dim, half_lives=half_lives, seed=cfg.seed)
        data = corpus.to_dict()
        gen_s = time.perf_counter() - t0
        pol = policy_for(corpus.half_lives)
        w = workload_from_corpus(corpus, pol)

        ekw = {}
        if cfg.engine_ef:
            ekw["ef"] = cfg.engine_ef
        if cfg.scan_limit is not None:
            ekw["scan_limit"] = cfg.scan_limit
        eng = ce.Engine(cfg.dim, decay=pol, M=cfg.M, ef_construction=cfg.ef_construction,
                        threads=build_threads, **ekw)
        t0 = time.perf_counter()
        ids = eng.ingest(data)
        ingest_s = time.perf_counter() - t0
        if not np.array_equal(np.asarray(ids, np.uint64), w.cols["id"]):
            raise AssertionError("engine ids are not 0..n-1 in ingest order; the harness relies on it")
        mem = eng.memory()
        _log(cfg, f"corpus {gen_s:.1f} s; engine ingest {ingest_s:.1f} s on {build_threads} threads; "
                  f"temporal metadata + indexes {mem.get('temporal_per_item', float('nan')):.1f} B/item, "
                  f"string columns {mem.get('strings_per_item', float('nan')):.1f} B/item")

        t0 = time.perf_counter()
        oracle = NumpyExact(w)
        np_build_s = time.perf_counter() - t0
        pre_peer = NumpyPrefilter(w) if "numpy_prefilter" in peers else None
        numba_peer = None
        if "numba" in peers and numba_kernel_ok:
            t0 = time.perf_counter()
            numba_peer = NumbaScan(w)
            numba_build_s = time.perf_counter() - t0
        hnsw_peer = None
        if "hnswlib" in peers:
            hnsw_peer = HnswlibFiltered(w, M=cfg.M, ef_construction=cfg.ef_construction,
                                        threads=build_threads, oracle=oracle)
            _log(cfg, f"hnswlib add_items {hnsw_peer.build_s:.1f} s on {build_threads} threads "
                      f"(engine ingest / hnswlib = {ingest_s / hnsw_peer.build_s:.2f})")
        report["regimes"][regime] = {
            "fusion": fusion, "alpha": cfg.alpha, "half_lives_days": [float(h) for h in half_lives],
            "corpus_s": gen_s, "engine_ingest_s": ingest_s, "engine_memory": mem,
            "numpy_prepare_s": np_build_s,
            "hnswlib_build_s": hnsw_peer.build_s if hnsw_peer else None,
            "build_threads": build_threads,
        }

        qv = corpus.queries(cfg.queries, seed=cfg.seed + 1)
        known = np.full(cfg.queries, KNOWN_ALL, np.int64)
        compiled = False
        for sel in cfg.selectivity:
            T = syn.times_for_selectivity(corpus, sel, cfg.queries, seed=cfg.seed + 2)
            measured_sel = float(np.mean([syn.fraction_valid(corpus, int(t)) for t in T[:50]]))
            for mode in cfg.modes:
                q = Queries(qv, T, known, mode=mode, fusion=fusion, alpha=cfg.alpha, k=cfg.k)
                qs = q.subset(nslow)
                # the oracle (NumPy exact on one thread); it is also peer 1's 1-thread row
                with blas_threads(1):
                    np1_s, exact = _best_time(lambda: oracle.search(q), cfg.min_time, min_repeat=cfg.min_repeat)
                exact_slow = exact.subset(nslow)
                # warm the engine (first call builds lazy tables) and compile numba on tiny input
                eng.search_batch(qv[:2], cfg.k, mode=mode, as_of=T[:2], known_at=known[:2], fusion=fusion,
                                 alpha=cfg.alpha, threads=1)
                if numba_peer is not None and not compiled:
                    t0 = time.perf_counter()
                    numba_peer.search(q.subset(1), 1)
                    report["regimes"][regime]["numba_compile_s"] = time.perf_counter() - t0
                    report["regimes"][regime]["numba_prepare_s"] = numba_build_s
                    compiled = True
                pre_row = None
                if pre_peer is not None and mode == "as_of":  # one thread: a Python loop of matvecs
                    with blas_threads(1):
                        s, a = _best_time(lambda: pre_peer.search(q), cfg.min_time, min_repeat=cfg.min_repeat)
                    pre_row = {"qps": cfg.queries / s, "recall": recall_at_k(a, exact),
                               "same_topk": _agreement(a, exact), "queries": cfg.queries, "threads": 1}
                hnsw_rows = {}
                if hnsw_peer is not None:  # GIL-bound filter: measured once, on one thread
                    for ef in cfg.efs:
                        s, a = _best_time(lambda: hnsw_peer.search(qs, ef), cfg.min_time, max_repeat=2,
                                          min_repeat=cfg.min_repeat)
                        hnsw_rows[ef] = {"qps": nslow / s, "recall": recall_at_k(a, exact_slow),
                                         "queries": nslow, "threads": 1}
                for th in cfg.threads:
                    row: dict = {"regime": regime, "fusion": fusion, "mode": mode, "selectivity": sel,
                                 "selectivity_measured": measured_sel, "threads": th,
                                 "queries": cfg.queries, "peers": {}}

                    def eng_run(exact_flag):
                        b = cfg.engine_batch or cfg.queries
                        parts = []
                        for lo in range(0, cfg.queries, b):  # calls of b queries, one after another
                            hi = min(cfg.queries, lo + b)
                            tab = eng.search_batch(qv[lo:hi], cfg.k, mode=mode, as_of=T[lo:hi],
                                                   known_at=known[lo:hi], fusion=fusion, alpha=cfg.alpha,
                                                   threads=th, exact=exact_flag)
                            if lo:
                                i = tab.schema.get_field_index("query")
                                tab = tab.set_column(i, "query", pc.add(tab.column("query"), pa.scalar(lo, pa.int32())))
                            parts.append(tab)
                        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

                    s, tab = _best_time(lambda: eng_run(False), cfg.min_time, min_repeat=cfg.min_repeat)
                    got, cert = answers_from_table(tab, cfg.queries)
                    agree = np.array([same_topk(g, gs, r, rs) for g, gs, r, rs
                                      in zip(got.ids, got.scores, exact.ids, exact.scores)])
                    row["engine"] = {"qps": cfg.queries / s, "recall": recall_at_k(got, exact),
                                     "certified": float(cert.mean()),
                                     "certified_but_wrong": int((cert & ~agree).sum()),
                                     "same_topk": float(agree.mean())}
                    if cfg.engine_exact:
                        s, tab = _best_time(lambda: eng_run(True), cfg.min_time, min_repeat=cfg.min_repeat)
                        gx, cx = answers_from_table(tab, cfg.queries)
                        row["engine_exact"] = {"qps": cfg.queries / s, "recall": recall_at_k(gx, exact),
                                               "certified": float(cx.mean()), "same_topk": _agreement(gx, exact)}
                    if "numpy" in peers:
                        if th == 1:
                            s = np1_s
                        else:
                            with blas_threads(th):
                                s, a = _best_time(lambda: oracle.search(q), cfg.min_time, min_repeat=cfg.min_repeat)
                            if _agreement(a, exact) < 1.0:  # BLAS threads may only reorder float sums
                                report["notes"].append(f"NumPy exact on {th} threads differs from one thread "
                                                       f"beyond ties ({regime}, {mode}, {sel})")
                        row["peers"]["numpy"] = {"qps": cfg.queries / s, "recall": 1.0, "queries": cfg.queries,
                                                 "threads": th if blas_ok else None}
                    if pre_row is not None:
                        row["peers"]["numpy_prefilter"] = dict(pre_row)
                    if numba_peer is not None:
                        s, a = _best_time(lambda: numba_peer.search(q, th), cfg.min_time, min_repeat=cfg.min_repeat)
                        row["peers"]["numba"] = {"qps": cfg.queries / s, "recall": recall_at_k(a, exact),
                                                 "same_topk": _agreement(a, exact), "queries": cfg.queries,
                                                 "threads": th}
                    for ef, r in hnsw_rows.items():
                        row["peers"][f"hnswlib_ef{ef}"] = dict(r)
                    good = {p: v["qps"] for p, v in row["peers"].items() if v["recall"] >= RECALL_TARGET}
                    if good:
                        best = max(good, key=good.get)
                        row["best_peer"] = best
                        row["best_peer_qps"] = good[best]
                        row["ratio"] = row["engine"]["qps"] / good[best]
                    else:
                        row["best_peer"] = None
                        row["ratio"] = None
                    row["engine_meets_recall"] = row["engine"]["recall"] >= RECALL_TARGET
                    report["results"].append(row)
                    _log(cfg, _row_line(row))
    _check_report(report)
    _print_table(report, cfg, nslow)
    if cfg.json:
        p = write_json(cfg.json, report)
        _log(cfg, f"\nJSON written to {p}")
        report["json_path"] = str(p)
    plot = cfg.plot
    if plot == "auto":
        plot = str(Path(cfg.json).with_suffix(".png")) if cfg.json else None
    if plot:
        _plot(report, plot, cfg, quiet_missing=cfg.plot == "auto")
    return report


def _check_report(report: dict) -> None:
    """Sanity checks on the measured results (the harness checks itself too)."""
    for row in report["results"]:
        for name, v in [("engine", row["engine"])] + list(row["peers"].items()):
            if not (0.0 <= v["recall"] <= 1.0) or not np.isfinite(v["qps"]) or v["qps"] <= 0:
                raise AssertionError(f"insane figure for {name}: {v}")
        for exact_peer in ("numba", "numpy_prefilter"):
            if exact_peer in row["peers"] and row["peers"][exact_peer]["recall"] < 0.99:
                raise AssertionError(f"the exact {exact_peer} peer disagrees with the NumPy oracle: "
                                     f"{row['peers'][exact_peer]}")


def _row_line(row: dict) -> str:
    e = row["engine"]
    r = f"{row['ratio']:.1f}x vs {row['best_peer']}" if row["ratio"] else "no peer reached recall 0.95"
    return (f"  {row['mode']:<6} sel {row['selectivity']:<5} thr {row['threads']}: engine {e['qps']:>9.0f} QPS "
            f"recall {e['recall']:.3f} certified {e['certified']:.0%}; {r}")


def _print_table(report: dict, cfg: Config, nslow: int) -> None:
    if cfg.quiet:
        return
    rows = report["results"]
    if not rows:
        return
    hn = [f"hnswlib_ef{ef}" for ef in cfg.efs]
    print(f"\nSearch: QPS (recall@{cfg.k} vs the exact NumPy oracle); ratio = engine QPS / best peer QPS "
          f"with recall >= {RECALL_TARGET:.2f}, peers measured in this run")
    if cfg.engine_batch:
        print(f"engine: {cfg.engine_batch} queries per search_batch call, calls one after another")
    head = (f"{'regime':<7}{'mode':<7}{'sel':>6}{'thr':>4} | {'engine':>16} {'cert':>5} | "
            f"{'eng exact':>9} | {'numpy':>7} | {'np-prefilt':>10} | {'numba':>16} | "
            f"{'hnswlib+rerank':>24} | ratio")
    print(head)
    print("-" * len(head))
    for row in rows:
        e = row["engine"]
        ex = row.get("engine_exact")
        p = row["peers"]
        def one_thread(v):
            return "*" if v.get("threads") == 1 and row["threads"] > 1 else " "
        np_s = f"{p['numpy']['qps']:>7.0f}" if "numpy" in p else f"{'-':>7}"
        pf_s = (f"{p['numpy_prefilter']['qps']:>9.0f}{one_thread(p['numpy_prefilter'])}"
                if "numpy_prefilter" in p else f"{'-':>10}")
        nb_s = f"{p['numba']['qps']:>8.0f} ({p['numba']['recall']:.3f})" if "numba" in p else f"{'-':>16}"
        hs = [(k, p[k]) for k in hn if k in p]
        if hs:
            ok = [kv for kv in hs if kv[1]["recall"] >= RECALL_TARGET]  # fastest that reaches the target,
            k, v = (max(ok, key=lambda kv: kv[1]["qps"]) if ok  # else the most accurate
                    else max(hs, key=lambda kv: (kv[1]["recall"], kv[1]["qps"])))
            h_s = f"{v['qps']:>7.0f} ({v['recall']:.3f}) ef{k[10:]}{one_thread(v)}"
        else:
            h_s = "-"
        ratio = f"{row['ratio']:.1f}x {row['best_peer']}" if row["ratio"] else "n/a"
        ex_s = f"{ex['qps']:>9.0f}" if ex else f"{'-':>9}"
        print(f"{row['regime']:<7}{row['mode']:<7}{row['selectivity']:>6}{row['threads']:>4} | "
              f"{e['qps']:>8.0f} ({e['recall']:.3f}) {e['certified']:>5.0%} | {ex_s} | {np_s} | {pf_s} | {nb_s} | "
              f"{h_s:>24} | {ratio}")
    print("(recall in brackets; * = measured on one thread, the peer cannot use more; np-prefilt: as_of only;\n"
          f" hnswlib+rerank: the fastest ef reaching recall {RECALL_TARGET}, else the most accurate)")
    if any(k in rows[0]["peers"] for k in hn):
        print(f"\nhnswlib filtered search + NumPy rerank, per ef (QPS / recall@{cfg.k}); measured on the first "
              f"{nslow} queries, one thread (its filter is a Python callable), reused for every thread row:")
        seen = set()
        for row in rows:
            key = (row["regime"], row["mode"], row["selectivity"])
            if key in seen:
                continue
            seen.add(key)
            cells = "  ".join(f"ef{k[10:]}: {row['peers'][k]['qps']:.0f}/{row['peers'][k]['recall']:.3f}"
                              for k in hn if k in row["peers"])
            print(f"  {row['regime']:<7}{row['mode']:<7}sel {row['selectivity']:<6} {cells}")
    exact_rows = [r for r in rows if "engine_exact" in r]
    bad = [r for r in rows if r["engine"]["certified_but_wrong"]]
    if exact_rows:
        worst = min(r["engine_exact"]["same_topk"] for r in exact_rows)
        print(f"\nengine exact=True: identical top-{cfg.k} to the oracle (ties within {SCORE_TOL:g}) in "
              f"{worst:.1%} of queries in the worst row")
    if bad:
        print(f"WARNING: {sum(r['engine']['certified_but_wrong'] for r in bad)} certified engine answers differ "
              f"from the oracle (rows: {[(r['mode'], r['selectivity'], r['threads']) for r in bad]})")
    miss = [r for r in rows if r["ratio"] is not None and (r["ratio"] < 10 or not r["engine_meets_recall"])]
    print(f"target (recall >= {RECALL_TARGET} at >= 10x the best peer reaching it): met in "
          f"{len(rows) - len(miss)} of {len(rows)} rows")
    for note in report["notes"]:
        print("note:", note)


def _plot(report: dict, path: str, cfg: Config, quiet_missing: bool = False) -> None:
    """QPS vs recall per selectivity (only when matplotlib is importable)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if not quiet_missing:
            _log(cfg, "matplotlib is not installed: no plot")
        return
    th = min(r["threads"] for r in report["results"]) if report["results"] else 1
    rows = [r for r in report["results"] if r["threads"] == th]
    groups = list(dict.fromkeys((r["regime"], r["mode"]) for r in rows))
    sels = sorted({r["selectivity"] for r in rows}, reverse=True)
    fig, axes = plt.subplots(len(groups), len(sels), figsize=(4.2 * len(sels), 3.2 * len(groups)), squeeze=False)
    colors = {"engine": "C3", "engine exact": "C1", "numpy": "C0", "numpy_prefilter": "C4", "numba": "C2",
              "hnswlib": "C7"}
    for gi, (regime, mode) in enumerate(groups):
        for si, sel in enumerate(sels):
            ax = axes[gi][si]
            for r in [r for r in rows if r["regime"] == regime and r["mode"] == mode and r["selectivity"] == sel]:
                ax.scatter([r["engine"]["recall"]], [r["engine"]["qps"]], marker="*", s=160,
                           color=colors["engine"], label="engine", zorder=3)
                if "engine_exact" in r:
                    ax.scatter([r["engine_exact"]["recall"]], [r["engine_exact"]["qps"]], marker="x",
                               color=colors["engine exact"], label="engine exact=True", zorder=3)
                for name in ("numpy", "numpy_prefilter", "numba"):
                    if name in r["peers"]:
                        ax.scatter([r["peers"][name]["recall"]], [r["peers"][name]["qps"]],
                                   color=colors[name], label=name)
                hs = sorted((int(k[10:]), v) for k, v in r["peers"].items() if k.startswith("hnswlib_ef"))
                if hs:
                    ax.plot([v["recall"] for _, v in hs], [v["qps"] for _, v in hs], "o-", color=colors["hnswlib"],
                            label="hnswlib filter + rerank (ef)")
                    for ef, v in hs:
                        ax.annotate(str(ef), (v["recall"], v["qps"]), fontsize=6)
            ax.set_yscale("log")
            ax.set_xlabel(f"recall@{cfg.k}")
            ax.set_ylabel("QPS")
            ax.set_title(f"{regime} / {mode} / selectivity {sel}", fontsize=9)
            ax.axvline(RECALL_TARGET, color="grey", lw=0.5)
    handles, labels = axes[0][0].get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    fig.legend(uniq.values(), uniq.keys(), loc="lower center", ncol=len(uniq), fontsize=8)
    fig.suptitle(f"QPS vs recall, {th} thread(s), N={cfg.n}, d={cfg.dim}", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(path, dpi=120)
    _log(cfg, f"plot written to {path}")


def _floats(s: str) -> tuple:
    return tuple(float(x) for x in s.split(",") if x.strip())


def _ints(s: str) -> tuple:
    return tuple(int(x) for x in s.split(",") if x.strip())


def _words(s: str) -> tuple:
    return tuple(x.strip() for x in s.split(",") if x.strip())


def parser(defaults: Config | None = None) -> argparse.ArgumentParser:
    """The command line (``benches/bench_search.py`` reuses it with larger defaults)."""
    d = defaults or Config()
    p = argparse.ArgumentParser(prog="python -m chrono_engine.bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=d.n, help="items in the synthetic corpus")
    p.add_argument("--dim", type=int, default=d.dim, help="vector dimension")
    p.add_argument("--queries", type=int, default=d.queries, help="queries per (mode, selectivity)")
    p.add_argument("--slow-queries", type=int, default=d.slow_queries,
                   help="queries for the slow hnswlib peer (the first ones of the same set)")
    p.add_argument("--selectivity", type=_floats, default=",".join(map(str, d.selectivity)),
                   help="fractions of items valid at T")
    p.add_argument("--regime", type=_words, default=",".join(d.regimes),
                   help="steep (14 d - 10 y half-lives, product fusion), gentle (1-20 y, linear alpha 0.75), or both")
    p.add_argument("--modes", type=_words, default=",".join(d.modes), help="as_of, latest")
    p.add_argument("--threads", type=_ints, default=",".join(map(str, d.threads)), help="search thread counts")
    p.add_argument("--peers", type=_words, default=",".join(d.peers), help="numpy, numba, hnswlib")
    p.add_argument("--ef", type=_ints, default=",".join(map(str, d.efs)), help="hnswlib ef values")
    p.add_argument("--fusion", choices=["product", "linear"], default=d.fusion, help="override the regime's fusion")
    p.add_argument("--alpha", type=float, default=d.alpha, help="linear fusion weight")
    p.add_argument("--k", type=int, default=d.k)
    p.add_argument("--M", type=int, default=d.M)
    p.add_argument("--ef-construction", type=int, default=d.ef_construction)
    p.add_argument("--build-threads", type=int, default=d.build_threads, help="0: all cores")
    p.add_argument("--no-engine-exact", action="store_true", help="skip timing the engine with exact=True")
    p.add_argument("--engine-ef", type=int, default=d.engine_ef, help="Engine(ef=...) (default: the engine's)")
    p.add_argument("--scan-limit", type=int, default=d.scan_limit, help="Engine(scan_limit=...)")
    p.add_argument("--engine-batch", type=int, default=d.engine_batch,
                   help="queries per engine search_batch call, calls one after another (0: all in one call; "
                        "1: one query per call, the latency of a server answering queries one by one)")
    p.add_argument("--min-time", type=float, default=d.min_time, help="seconds of repeats per timing")
    p.add_argument("--min-repeat", type=int, default=d.min_repeat,
                   help="runs per timing at least (the best counts; the same for every contender)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--json", default=d.json, help="where to write the JSON report ('' = nowhere)")
    p.add_argument("--plot", default=d.plot,
                   help="PNG of QPS vs recall (needs matplotlib); 'auto': beside the JSON; '' = none")
    p.add_argument("--quiet", action="store_true")
    return p


def config_from_args(ns: argparse.Namespace) -> Config:
    def tup(v, conv):
        return conv(v) if isinstance(v, str) else tuple(v)
    cfg = Config(n=ns.n, dim=ns.dim, queries=ns.queries, slow_queries=ns.slow_queries,
                 selectivity=tup(ns.selectivity, _floats), regimes=tup(ns.regime, _words),
                 modes=tup(ns.modes, _words), threads=tup(ns.threads, _ints), peers=tup(ns.peers, _words),
                 efs=tup(ns.ef, _ints), fusion=ns.fusion, alpha=ns.alpha, k=ns.k, M=ns.M,
                 ef_construction=ns.ef_construction, build_threads=ns.build_threads,
                 engine_exact=not ns.no_engine_exact, engine_ef=ns.engine_ef, scan_limit=ns.scan_limit,
                 engine_batch=ns.engine_batch,
                 min_time=ns.min_time, min_repeat=ns.min_repeat, seed=ns.seed, json=ns.json or None,
                 plot=ns.plot, quiet=ns.quiet)
    for r in cfg.regimes:
        if r not in REGIMES:
            raise SystemExit(f"--regime: unknown regime {r!r} (steep, gentle)")
    for m in cfg.modes:
        if m not in ("as_of", "latest"):
            raise SystemExit(f"--modes: unknown mode {m!r} (as_of, latest)")
    for pn in cfg.peers:
        if pn not in ALL_PEERS:
            raise SystemExit(f"--peers: unknown peer {pn!r} ({', '.join(ALL_PEERS)})")
    if cfg.n <= 0 or cfg.dim <= 0 or cfg.queries <= 0 or cfg.k <= 0:
        raise SystemExit("--n, --dim, --queries and --k must be positive")
    return cfg


def main(argv: Sequence[str] | None = None, defaults: Config | None = None) -> dict:
    """Command-line entry point; returns the report."""
    ns = parser(defaults).parse_args(argv)
    return run(config_from_args(ns))


if __name__ == "__main__":
    main()
    sys.exit(0)
