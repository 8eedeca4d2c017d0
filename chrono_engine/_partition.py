"""The coarse partition of the vectors that the probe plan reads (internal).

A lone query with ``exact=False`` reads the rows of the clusters nearest to it first and
stops when no unread cluster can plausibly beat its k-th score
(``cpp/include/chrono/probe.hpp``). Any assignment of rows to centroids is valid; a good one
only makes the probe stop sooner. So this module may be approximate and fast: k-means++
seeding on a small sample, three Lloyd steps on a larger one, then each row to its nearest
centroid (NumPy/BLAS, in chunks).

The partition is derived data: built when a store reaches ``partition_min`` rows (on
ingest, or on open of a store saved before format 4), extended to new rows on every write,
rebuilt with more centroids when the store has doubled, saved with the store
(``storage.checkpoint._partition_tables``) so that an open reproduces it. Cosine and ip only.
"""
from __future__ import annotations

import numpy as np

__all__ = ["PARTITION_MIN", "refresh", "n_centroids"]

#: rows below which a store keeps no partition (the probe plan needs more than 8,192 in force)
PARTITION_MIN = 20_000
#: the probe plan's allowance in standard deviations of a residual's projection (_allowance)
Z_ALLOW = 6.0
_CHUNK = 16_384


def n_centroids(n: int) -> int:
    """Centroids for ``n`` rows: about one per 512 rows, 16 to 256 (the per-query cost is
    one dot per centroid)."""
    return int(min(256, max(16, n // 512)))


def refresh(state, minimum: int = PARTITION_MIN) -> None:
    """Bring the store's partition up to date: build it once the store has ``minimum`` rows,
    rebuild it with more centroids when the store has doubled since, else assign the rows
    added since the last call. The caller holds the state's write lock (or owns it alone)."""
    core = state.core
    if state.metric == "l2":
        return
    n = len(state)
    C, covered = core.partition_info()[:2]
    if n < max(int(minimum), 1):
        if C:
            core.clear_partition()
            state.partition_built_at = 0
        return
    if C == 0 or (n >= 2 * state.partition_built_at and n_centroids(n) > C):
        cents, delta = _centroids(core, n, n_centroids(n), state.dim)
        core.set_partition(cents, delta)
        state.partition_centroids = cents
        state.partition_built_at = n
        covered = 0
    if covered < n:
        cents = state.partition_centroids
        half_norm = 0.5 * np.einsum("ij,ij->i", cents, cents)
        for lo in range(covered, n, _CHUNK):
            hi = min(n, lo + _CHUNK)
            x = core.vectors(np.arange(lo, hi, dtype=np.uint32))
            core.assign_partition(lo, _nearest(x, cents, half_norm))


def _nearest(x: np.ndarray, cents: np.ndarray, half_norm: np.ndarray) -> np.ndarray:
    """Each row's nearest centroid in L2 (argmax ⟨x, c⟩ − |c|²/2) as uint16."""
    return np.argmax(x @ cents.T - half_norm, axis=1).astype(np.uint16)


def _centroids(core, n: int, C: int, dim: int, seed: int = 0x5EED) -> tuple[np.ndarray, float]:
    """C centroids of the stored vectors and the probe's delta: k-means++ seeding on 8·C
    sampled rows, then three Lloyd steps on 64·C (empty clusters keep their seed)."""
    rng = np.random.default_rng(seed)
    m = min(n, 64 * C)
    sample = core.vectors(np.sort(rng.choice(n, m, replace=False)).astype(np.uint32)).astype(np.float32)
    small = sample[rng.choice(m, min(m, 8 * C), replace=False)]
    cents = np.empty((C, dim), np.float32)
    cents[0] = small[rng.integers(len(small))]
    d2 = np.einsum("ij,ij->i", small - cents[0], small - cents[0]).astype(np.float64)
    for j in range(1, C):
        total = d2.sum()
        i = int(rng.choice(len(small), p=d2 / total)) if total > 0 else int(rng.integers(len(small)))
        cents[j] = small[i]
        diff = small - cents[j]
        d2 = np.minimum(d2, np.einsum("ij,ij->i", diff, diff))
    for _ in range(3):
        a = _nearest(sample, cents, 0.5 * np.einsum("ij,ij->i", cents, cents)).astype(np.int64)
        counts = np.bincount(a, minlength=C)
        order = np.argsort(a, kind="stable")
        filled = np.flatnonzero(counts)
        starts = np.searchsorted(a[order], filled)
        sums = np.add.reduceat(sample[order].astype(np.float64), starts, axis=0)
        cents[filled] = (sums / counts[filled, None]).astype(np.float32)
    cents = np.ascontiguousarray(cents)
    return cents, _allowance(sample, cents, rng)


def _allowance(sample: np.ndarray, cents: np.ndarray, rng) -> float:
    """The probe plan's delta (relative to |q|): Z_ALLOW standard deviations of the
    projection <u, x - c(x)> of a residual on a direction u it is independent of,
    |x - c| / sqrt(d) for isotropic residuals, from the sample's RMS residual. An
    estimate, not a bound: the bench measures the recall it gives."""
    x = sample[rng.choice(len(sample), min(8192, len(sample)), replace=False)]
    r = x - cents[_nearest(x, cents, 0.5 * np.einsum("ij,ij->i", cents, cents))]
    rms = float(np.sqrt(np.mean(np.einsum("ij,ij->i", r, r, dtype=np.float64))))
    return Z_ALLOW * rms / np.sqrt(sample.shape[1])
