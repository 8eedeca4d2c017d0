"""Synthetic temporal corpora for tests, benchmarks and the built-in demo job.

The generator follows the engine-core issue's recipe: clustered unit vectors, stems
(document lineages) of 1-5 versions whose intervals chain without overlap, lognormal
lifetimes with open ends, 16 fact types whose half-lives run from 14 days to 10 years and
reliability in (0.5, 1].  Versions of one stem are near-duplicates of each other, as edited
documents are, so a plain similarity search happily returns a superseded version.

Selectivity (the fraction of items valid at T) is a property of the query time, not of the
corpus: valid_from is spread over ``[start, end)``, so an early T sees few valid items and a
late one many. :func:`times_for_selectivity` picks query times that hit a target fraction.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ._time import OPEN_END, US_PER_DAY
from .errors import ConfigError

__all__ = ["Corpus", "make_corpus", "times_for_selectivity", "fraction_valid", "validity_sample",
           "STEEP_HALF_LIVES", "GENTLE_HALF_LIVES", "US_PER_DAY"]


#: 16 half-lives (days), log-spaced from two weeks to ten years: the "steep" regime.
STEEP_HALF_LIVES = np.geomspace(14.0, 3652.5, 16)
#: 16 half-lives (days), log-spaced from one to twenty years: the "gentle" regime.
GENTLE_HALF_LIVES = np.geomspace(365.25, 7305.0, 16)


@dataclass
class Corpus:
    """Columns of a synthetic corpus (NumPy arrays; times are int64 µs since the epoch, UTC)."""

    vector: np.ndarray          # (n, dim) float32, unit norm
    valid_from: np.ndarray      # int64 µs
    valid_to: np.ndarray        # int64 µs, OPEN_END = open
    observed_at: np.ndarray     # int64 µs
    ingested_at: np.ndarray     # int64 µs
    reliability: np.ndarray     # float32 in (0.5, 1]
    fact_type: np.ndarray       # int32 code into fact_types
    fact_types: list            # names, "type00" ...
    stem_id: np.ndarray         # int64 stem number
    version: np.ndarray         # int32 version number (1-based) within the stem
    deprecated: np.ndarray      # bool
    half_lives: np.ndarray      # days per fact type
    centers: np.ndarray         # (clusters, dim) cluster centres (for query generation)
    start: int                  # µs: first valid_from
    end: int                    # µs: last valid_from

    def __len__(self) -> int:
        return len(self.valid_from)

    def to_dict(self) -> dict:
        """Columns as the engine's ingest accepts them (dict of arrays)."""
        n = len(self)
        valid_to = self.valid_to.astype("datetime64[us]")
        valid_to[self.valid_to == OPEN_END] = np.datetime64("NaT", "us")
        return {
            "vector": self.vector,
            "valid_from": self.valid_from.astype("datetime64[us]"),
            "valid_to": valid_to,
            "observed_at": self.observed_at.astype("datetime64[us]"),
            "ingested_at": self.ingested_at.astype("datetime64[us]"),
            "reliability": self.reliability,
            "fact_type": np.asarray(self.fact_types, dtype=object)[self.fact_type],
            "stem_id": np.char.add("s", self.stem_id.astype(str)).astype(object),
            "version": np.char.add("v", self.version.astype(str)).astype(object),
            "deprecated": self.deprecated,
            "title": np.char.add("doc ", self.stem_id.astype(str)).astype(object),
            "content": np.full(n, "", dtype=object),
        }

    #: the per-item columns (the rest describe the corpus as a whole)
    ROW_COLUMNS = ("vector", "valid_from", "valid_to", "observed_at", "ingested_at", "reliability", "fact_type",
                   "stem_id", "version", "deprecated")

    def in_time_order(self) -> Corpus:
        """The same items in ``valid_from`` order (ties in generated order), as a store
        written while time passes holds them; the generated order spreads the items valid
        at one time over the whole corpus. Queries and query times do not depend on the
        order (:meth:`queries`, :func:`times_for_selectivity`)."""
        order = np.argsort(self.valid_from, kind="stable")
        return replace(self, **{name: getattr(self, name)[order] for name in self.ROW_COLUMNS})

    def queries(self, n: int, *, seed: int = 1, noise: float = 0.6) -> np.ndarray:
        """``n`` unit query vectors near random cluster centres."""
        rng = np.random.default_rng(seed)
        c = self.centers[rng.integers(0, len(self.centers), n)]
        q = c + noise * rng.standard_normal(c.shape).astype(np.float32) / np.sqrt(c.shape[1])
        return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def make_corpus(n: int = 100_000, dim: int = 384, *, clusters: int = 256, seed: int = 0,
                half_lives=STEEP_HALF_LIVES, start: str = "2015-01-01", end: str = "2026-01-01",
                p_open: float = 0.85, median_life_days: float = 400.0, sigma_life: float = 1.0,
                cluster_noise: float = 1.0, version_noise: float = 0.15) -> Corpus:
    """Generate a corpus of about ``n`` items (exactly ``n``; the last stem is cut to fit)."""
    rng = np.random.default_rng(seed)
    t0 = int(np.datetime64(start, "us").astype(np.int64))
    t1 = int(np.datetime64(end, "us").astype(np.int64))
    # stems: 1-5 versions, skewed to single-version documents (mean ~1.55)
    sizes = rng.choice(np.arange(1, 6), size=n, p=[0.7, 0.15, 0.08, 0.04, 0.03])
    cs = np.cumsum(sizes)
    n_stems = int(np.searchsorted(cs, n)) + 1
    sizes = sizes[:n_stems].copy()
    sizes[-1] -= int(cs[n_stems - 1] - n)
    stem = np.repeat(np.arange(n_stems), sizes)
    first = np.r_[0, np.cumsum(sizes)[:-1]]
    version = (np.arange(n) - np.repeat(first, sizes) + 1).astype(np.int32)
    last = np.r_[stem[1:] != stem[:-1], True]

    # vectors: stem base near a cluster centre, versions near the stem base
    centers = rng.standard_normal((clusters, dim)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    stem_cluster = rng.integers(0, clusters, n_stems)
    base = centers[stem_cluster] + cluster_noise * rng.standard_normal((n_stems, dim)).astype(np.float32) / np.sqrt(dim)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    vec = base[stem] + version_noise * rng.standard_normal((n, dim)).astype(np.float32) / np.sqrt(dim)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)

    # time: a stem starts uniformly in [t0, t1); versions follow after lognormal gaps
    life = (median_life_days * np.exp(sigma_life * rng.standard_normal(n)) * US_PER_DAY).astype(np.int64)
    life = np.maximum(life, US_PER_DAY)
    stem_start = rng.integers(t0, t1, n_stems)
    # valid_from of version i = stem start + sum of previous lifetimes (within the stem)
    cum = np.cumsum(life)
    cum_before = cum - life
    stem_offset = np.repeat(cum_before[first], sizes)
    valid_from = np.repeat(stem_start, sizes) + (cum_before - stem_offset)
    valid_to = valid_from + life
    is_open = last & (rng.random(n) < p_open)
    valid_to = np.where(is_open, OPEN_END, valid_to).astype(np.int64)
    deprecated = ~last  # superseded versions are marked deprecated

    fact_type_stem = rng.integers(0, len(half_lives), n_stems)
    fact_type = fact_type_stem[stem].astype(np.int32)
    reliability = (1.0 - 0.5 * rng.random(n)).astype(np.float32)  # (0.5, 1]
    observed_at = valid_from.copy()
    ingested_at = valid_from + rng.integers(0, 7 * US_PER_DAY, n)
    return Corpus(vector=vec.astype(np.float32), valid_from=valid_from.astype(np.int64),
                  valid_to=valid_to, observed_at=observed_at.astype(np.int64),
                  ingested_at=ingested_at.astype(np.int64), reliability=reliability,
                  fact_type=fact_type, fact_types=[f"type{i:02d}" for i in range(len(half_lives))],
                  stem_id=stem.astype(np.int64), version=version, deprecated=deprecated,
                  half_lives=np.asarray(half_lives, dtype=np.float64), centers=centers,
                  start=t0, end=t1)


def fraction_valid(c: Corpus, t: int) -> float:
    """Fraction of items with valid_from <= t < valid_to."""
    return float(np.mean((c.valid_from <= t) & (t < c.valid_to)))


def times_for_selectivity(c: Corpus, target: float, n: int, *, seed: int = 2,
                          spread: float = 0.1) -> np.ndarray:
    """``n`` query times (int64 µs) at which about ``target`` of the items are valid.

    Finds the time ``t*`` where the fraction valid crosses ``target`` (bisection over the
    stabbing count) and draws times within ``spread`` of that fraction around it.
    """
    vf = np.sort(c.valid_from)
    vt = np.sort(c.valid_to)
    n_items = len(vf)

    def frac(t):
        return (np.searchsorted(vf, t, "right") - np.searchsorted(vt, t, "right")) / n_items

    grid = np.linspace(c.start, c.end + 20 * 365 * US_PER_DAY, 4001).astype(np.int64)
    f = np.array([frac(t) for t in grid])
    ok = np.flatnonzero(np.abs(f - target) <= spread * target)
    if len(ok) == 0:
        raise ConfigError(f"no query time reaches selectivity {target}; max is {f.max():.3f}")
    rng = np.random.default_rng(seed)
    # prefer the earliest stretch of acceptable times (the rising edge)
    ok = ok[ok <= ok[0] + 200] if target < f.max() * 0.9 else ok
    return grid[rng.choice(ok, n)]


def validity_sample(n: int, *, shape: float = 1.0, scale: float = 30.0, censored: float = 0.3,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validity histories of ``n`` items, for the survival fits (``ce.fit_validity``).

    Each item becomes valid at a uniform time in a window of W days and is looked at the
    window's end, so its age then is C ~ U(0, W) (random right-censoring); its validity
    lasts a Weibull(``shape``, ``scale``) time L (``shape`` 1: exponential with
    β = 1 / ``scale`` per day). W is set so that the expected fraction still valid at the
    end is ``censored``. Returns ``(durations, ended, ages)``: min(L, C), L ≤ C and C.
    """
    if not (0.0 < censored < 1.0 and shape > 0 and scale > 0 and n >= 1):
        raise ConfigError(f"validity_sample needs n >= 1, shape > 0, scale > 0 and censored in "
                          f"(0, 1); got n={n}, shape={shape}, scale={scale}, censored={censored}")

    def still_valid(w: float) -> float:  # P(L > C) = (1/W) ∫_0^W S(t) dt, by the trapezoid rule
        t = np.linspace(0.0, w, 20_001)
        s = np.exp(-((t / scale) ** shape))
        return float(np.sum(s[1:] + s[:-1]) * 0.5 * (t[1] - t[0])) / w

    lo, hi = 1e-9 * scale, scale
    while still_valid(hi) > censored:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if still_valid(mid) > censored else (lo, mid)
    rng = np.random.default_rng(seed)
    life = scale * rng.weibull(shape, n)
    age = rng.uniform(0.0, 0.5 * (lo + hi), n)
    return np.minimum(life, age), life <= age, age
