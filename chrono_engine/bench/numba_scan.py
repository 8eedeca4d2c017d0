"""The ``numba`` peer: the search definition as one fused Numba loop per query.

Per query one metadata pass finds each stem's arbitration winner, then one pass checks
eligibility, evaluates the decay, skips the dot product when the validity alone cannot beat
the current k-th score, and keeps a top-k heap. The kernel releases the GIL; a batch is
split into one slice of queries per thread. Numba is imported (and the kernel compiled)
on first use only, so the harness runs without it.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._time import US_PER_DAY
from .corpus import Answers, Queries, Workload
from .definition import static_rank

__all__ = ["NumbaScan", "numba_kernel"]

_KERNEL = None


def numba_kernel():
    """Compile (once) and return the fused scan kernel; raises ImportError without numba."""
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    import numba
    from numba import njit

    no_id = np.uint64(np.iinfo(np.uint64).max)
    us_per_day = float(US_PER_DAY)  # a closure constant: Numba freezes it into the kernel
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
             latest, linear, alpha, tau, penalty, fut_penalty, k, n_stems, ids, out_ids, out_scores, q0, q1):
        n = X.shape[0]
        out_pen = penalty if latest else 0.0
        fut_pen = fut_penalty if latest else 0.0
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
                pen = 1.0 if inf else (fut_pen if vf[i] > t else out_pen)
                if pen <= 0.0:
                    continue
                s = stem[i]
                if s >= 0 and srank[i] + (n if inf else 0) != best[s]:
                    continue
                c = ft[i]
                V = rel[i] * decay(np.int64(specs[c, 0]), specs[c, 1], specs[c, 2], specs[c, 3],
                                   specs[c, 4] != 0.0, (t - obs[i]) / us_per_day)
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

    _KERNEL = (numba, scan)
    return _KERNEL


class NumbaScan:
    """The definition as one fused Numba loop per query (see the module docstring)."""

    name = "numba"

    def __init__(self, w: Workload) -> None:
        self.numba, self.kernel = numba_kernel()
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
        self.srank = static_rank(c)
        self.dep = np.ascontiguousarray(c["deprecated"], np.bool_)
        self.specs = np.ascontiguousarray(w.specs, np.float64)
        self.ids = np.ascontiguousarray(c["id"], np.uint64)

    def search(self, q: Queries, threads: int = 1) -> Answers:
        """The exact top-k of every query, on ``threads`` threads (a slice of queries each)."""
        nq = len(q)
        out_ids = np.zeros((nq, q.k), np.uint64)
        out_scores = np.zeros((nq, q.k), np.float64)
        args = (np.ascontiguousarray(q.vectors, np.float32), np.ascontiguousarray(q.t, np.int64),
                np.ascontiguousarray(q.known_at, np.int64), self.X, self.vf, self.vt, self.obs,
                self.ing, self.retr, self.rel, self.ft, self.stem, self.srank, self.dep, self.specs,
                q.mode == "latest", q.fusion == "linear", float(q.alpha), float(q.tau),
                float(q.penalty), float(q.future_penalty), int(q.k), self.n_stems, self.ids, out_ids, out_scores)
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

