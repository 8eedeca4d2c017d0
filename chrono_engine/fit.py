"""Estimating decay rates from data.

- :func:`fit_ou` — the mean-reversion rate κ of an Ornstein-Uhlenbeck process from samples
  at irregular times (exact-discretisation maximum likelihood). The paper's Proposition 1
  sets a fact's decay to β = 2κ: the autocorrelation of an OU process decays as e^{-κΔ},
  its squared correlation (explained variance) as e^{-2κΔ}.
- :func:`fit_beta_bernoulli` — chronofy's estimator: each observation (age a, still valid v)
  is a Bernoulli trial with P(v = 1) = e^{-β a}; β maximises the likelihood on [0, 50]
  (chronofy's bounds and edge cases: all valid → 0, none valid → 50).

Both take plain arrays and return floats in the time unit of the input (days for
datetime64 input to :func:`fit_ou`). Samples they cannot fit raise
:class:`~chrono_engine.errors.FitError` (a ``ValueError``) naming the argument and index.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ._time import US_PER_DAY, column_us, errors_as
from .errors import ArgumentTypeError, FitError

__all__ = ["OUFit", "fit_ou", "fit_beta_bernoulli", "MAX_BETA"]

#: Upper bound of :func:`fit_beta_bernoulli` (chronofy's ``_MAX_BETA``).
MAX_BETA = 50.0


@dataclass(frozen=True)
class OUFit:
    """An Ornstein-Uhlenbeck fit: dX = κ (μ − X) dt + σ dW."""

    kappa: float       # mean-reversion rate, per time unit of the input
    mu: float          # long-run mean
    sigma: float       # diffusion (per sqrt time unit)
    loglik: float      # maximised log-likelihood of the transitions
    n: int             # samples used

    @property
    def beta(self) -> float:
        """Decay rate per Proposition 1: β = 2κ."""
        return 2.0 * self.kappa

    @property
    def half_life(self) -> float:
        """ln 2 / β: the age at which the fitted validity falls to one half."""
        return math.log(2.0) / self.beta


def _times(times: Any) -> np.ndarray:
    """Sample times as float64: numbers as given (their unit is the fit's), anything
    time-like (datetime64, datetimes, dates, ISO strings, Arrow timestamps; the rules of
    :mod:`chrono_engine._time`) as days since the first sample."""
    t = np.asarray(times) if not isinstance(times, (pa.Array, pa.ChunkedArray)) else times
    if isinstance(t, np.ndarray) and t.dtype.kind in "iuf":
        return t.astype(np.float64)
    with errors_as(FitError):
        us, _ = column_us("times", t)
    return (us - us[0]) / US_PER_DAY if len(us) else us.astype(np.float64)


def _floats(name: str, a: Any) -> np.ndarray:
    """``a`` as float64, or the family's error naming ``name`` (numpy's own would not)."""
    try:
        return np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as e:  # keep the built-in numpy raised catchable
        raise (ArgumentTypeError if isinstance(e, TypeError) else FitError)(
            f"{name}: expected numbers ({e})") from None


def _profile(kappa: float, dt: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> tuple[float, float, float]:
    """Profile log-likelihood at κ, with μ and σ² at their conditional maxima."""
    a = np.exp(-kappa * dt)
    v = -np.expm1(-2.0 * kappa * dt) / (2.0 * kappa)  # Var / σ², accurate for small κΔ
    w = 1.0 / v
    b = 1.0 - a
    mu = float(np.sum(w * b * (x1 - a * x0)) / np.sum(w * b * b))
    r = x1 - a * x0 - mu * b
    n = len(dt)
    s2 = float(np.sum(r * r * w) / n)
    if not s2 > 1e-300:  # an exact fit: the likelihood is unbounded there (degenerate)
        return -math.inf, mu, s2
    ll = -0.5 * n * (math.log(2 * math.pi * s2) + 1.0) - 0.5 * float(np.sum(np.log(v)))
    return ll, mu, s2


def fit_ou(times: Any, values: Any) -> OUFit:
    """Maximum-likelihood OU fit from samples ``values`` at strictly increasing ``times``.

    Uses the exact transition density X_{i+1} | X_i ~ N(μ + (X_i − μ) e^{-κΔ_i},
    σ² (1 − e^{-2κΔ_i}) / 2κ), so irregular gaps need no approximation. μ and σ² are
    profiled out in closed form; κ maximises the profile likelihood (a log-spaced grid over
    [10^-4 / max gap, 10^3 / min gap], then golden-section refinement). κ is per time unit
    of ``times`` (days for datetime64).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0); t = np.cumsum(rng.exponential(1.0, 5000)); x = np.zeros(5000)
    >>> for i in range(1, 5000):
    ...     a = np.exp(-0.5 * (t[i] - t[i-1])); x[i] = a * x[i-1] + np.sqrt((1 - a*a) / 1.0) * 0.3 * rng.standard_normal()
    >>> round(fit_ou(t, x).kappa, 1)
    0.5
    """
    t = _times(times)
    x = _floats("values", values)
    if t.ndim != 1 or x.ndim != 1 or len(t) != len(x):
        raise FitError(f"times and values must be 1-D of equal length, got {np.shape(times)} and {np.shape(values)}")
    if len(t) < 3:
        raise FitError(f"times and values: need at least 3 samples, got {len(t)}")
    bad = ~np.isfinite(t) | ~np.isfinite(x)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        name, v = ("times", t[i]) if not np.isfinite(t[i]) else ("values", x[i])
        raise FitError(f"non-finite time or value at index {i}: {name}[{i}] is {v}")
    dt = np.diff(t)
    if (dt <= 0).any():
        i = int(np.flatnonzero(dt <= 0)[0])
        raise FitError(f"times must be strictly increasing: index {i + 1} ({t[i + 1]}) is not after {t[i]}")
    if np.ptp(x) == 0:
        raise FitError("values are constant: κ is not identifiable")
    x0, x1 = x[:-1], x[1:]
    lo, hi = math.log(1e-4 / dt.max()), math.log(1e3 / dt.min())
    grid = np.linspace(lo, hi, 241)
    lls = np.array([_profile(math.exp(g), dt, x0, x1)[0] for g in grid])
    if not np.isfinite(lls).any():
        raise FitError("values form a degenerate path: every κ fits it exactly (too few distinct transitions)")
    i = int(np.nanargmax(lls))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    phi = (math.sqrt(5) - 1) / 2
    c, d = b - phi * (b - a), a + phi * (b - a)
    fc, fd = _profile(math.exp(c), dt, x0, x1)[0], _profile(math.exp(d), dt, x0, x1)[0]
    while b - a > 1e-10:
        if fc < fd:
            a, c, fc = c, d, fd
            d = a + phi * (b - a)
            fd = _profile(math.exp(d), dt, x0, x1)[0]
        else:
            b, d, fd = d, c, fc
            c = b - phi * (b - a)
            fc = _profile(math.exp(c), dt, x0, x1)[0]
    kappa = math.exp((a + b) / 2)
    ll, mu, s2 = _profile(kappa, dt, x0, x1)
    return OUFit(kappa=kappa, mu=mu, sigma=math.sqrt(s2), loglik=ll, n=len(t))


def fit_beta_bernoulli(ages: Any, valid: Any) -> float:
    """β maximising Σ log P(valid_i | age_i) with P(valid) = e^{-β·age} (chronofy's MLE).

    The log-likelihood is concave in β, so the maximiser on [0, 50] is the root of the score
    −Σ_valid a + Σ_invalid a e^{-βa} / (1 − e^{-βa}) (bisection to machine precision), or a
    bound. All valid → 0; none valid → 50 (chronofy's conventions). Ages ≥ 0, any unit.
    """
    a = _floats("ages", ages)
    v = np.asarray(valid)
    if a.ndim != 1 or v.ndim != 1 or len(a) != len(v):
        raise FitError(f"ages and valid must be 1-D of equal length, got {np.shape(ages)} and {np.shape(valid)}")
    if len(a) == 0:
        raise FitError("ages must not be empty")
    if v.dtype != np.bool_:
        if not np.isin(v, (0, 1)).all():
            raise FitError("valid must be booleans (or 0/1)")
        v = v.astype(bool)
    bad = ~np.isfinite(a) | (a < 0)
    if bad.any():
        raise FitError(f"ages must be finite and >= 0: index {int(np.flatnonzero(bad)[0])} is {a[bad][0]}")
    if v.all():
        return 0.0
    if not v.any():
        return MAX_BETA
    sum_valid = float(a[v].sum())
    ai = a[~v]
    ai = ai[ai > 0]  # an invalid observation at age 0 has likelihood 0 for every β (constant)

    def score(beta: float) -> float:
        e = np.exp(-beta * ai)
        return float(np.sum(ai * e / -np.expm1(-beta * ai))) - sum_valid

    if not len(ai):
        return 0.0
    lo, hi = 0.0, MAX_BETA
    if score(hi) >= 0:
        return MAX_BETA
    # score(0+) = +inf whenever an invalid observation has a > 0; bisect in β
    lo = 1e-300
    for _ in range(200):
        mid = 0.5 * (lo + hi) if hi / max(lo, 1e-300) < 4 else math.sqrt(lo * hi)
        if score(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return 0.5 * (lo + hi)
