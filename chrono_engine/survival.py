"""Decay learned from a store's own history: censored survival fits of validity durations.

Every supersede and retract records when a fact stopped being valid (an observed *event*);
an item still valid when the store is looked at has lasted *at least* its age (a
right-censored observation). Per fact type, :func:`fit_validity` fits the survival of
validity S(t) = P(still valid after t days) by maximum likelihood with right-censoring
and returns a :class:`ValidityFit` whose :meth:`~ValidityFit.policy` is a
:class:`~chrono_engine.decay.DecayPolicy` ready for an Engine (the decay D_j of the paper's
eq. 2/3 is the survival of the fact type's validity).

For one fact type with durations t_i, events d_i (1 = ended), D = Σ d_i events and
exposure T = Σ t_i (days):

* **exponential** S(t) = e^(−βt): ℓ(β) = D ln β − βT, so β̂ = D / T in closed form and the
  half-life is ln 2 / β̂. The confidence interval is the likelihood-ratio (profile) interval
  {β : 2[ℓ(β̂) − ℓ(β)] ≤ χ²₁(level)}; the gamma pivot 2βT ~ χ²(2D) is exact only when the
  censoring is fixed in advance (type II), which a store's is not.
* **Weibull** S(t) = exp(−(t/λ)^k): λ^k = Σ t_i^k / D for a given shape k, and k̂ is the
  unique root of the profile score 1/k + mean_events(ln t) − Σ t^k ln t / Σ t^k (safeguarded
  Newton in ln k). The interval for k is the profile-likelihood interval; the interval for
  λ is a Wald interval on ln λ from the observed information (delta method).
* **Bernoulli on age** (the paper's / chronofy's estimator,
  :func:`~chrono_engine.fit_beta_bernoulli`): each item is one trial "still valid at its
  age", P = e^(−β·age). It is reported beside the others, not chosen: it is consistent for
  current-status data (``ages`` = each item's age when the store is looked at, as
  :func:`fit_validity_intervals` passes), and biased upward when an ended item's age is
  taken to be its duration (the default when ``ages`` is not given).
* **comparison**: log-likelihoods, AIC = 2p − 2ℓ and the likelihood-ratio test of the
  exponential inside the Weibull (k = 1): LR = 2(ℓ_W − ℓ_E), p = P(χ²₁ > LR) = erfc(√(LR/2)).
  The Weibull is chosen only when p < ``alpha`` (0.01 unless given), else the exponential:
  the simpler family stands unless the data reject it.

Edge cases, per fact type:

* **no events** (nothing ended yet): β̂ = 0 with interval [0, χ²₁(level) / 2T]; the Weibull
  is not identified (its fields are NaN) and the family is ``"none"``: the policy gives the
  type :class:`~chrono_engine.decay.NoDecay` (nothing ever observed to expire).
* **all ended**: no special case; both families fit.
* **a Weibull that is not identified** (a single event, or every event at the longest
  duration: the likelihood grows without bound as k → ∞): its fields are NaN, the LR
  p-value is NaN and the exponential is chosen.
* **zero durations**: a censored item of duration 0 adds nothing to any likelihood (S(0) = 1)
  and is counted in ``n`` only. An *ended* item of duration 0 (valid_to == valid_from) says
  nothing about how long validity lasts and makes the Weibull likelihood degenerate (its
  density at 0 is 0 or ∞ for k ≠ 1), so it is left out of every family's likelihood and
  counted in ``zero_ended``; it still counts as not valid for the Bernoulli estimator.
* **all durations 0**: no information: β̂ = 0, interval [0, ∞), family ``"none"``.

>>> import numpy as np, chrono_engine as ce
>>> rng = np.random.default_rng(0)
>>> life, seen = rng.exponential(30.0, 5000), rng.uniform(0, 60, 5000)
>>> fit = ce.fit_validity(np.minimum(life, seen), life <= seen, ["news"] * 5000)
>>> round(fit["news"].half_life), fit["news"].family
(21, 'exponential')
>>> fit.policy()["news"]  # doctest: +ELLIPSIS
Exponential(beta=0.03...)
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import pyarrow as pa

from ._args import array, shown
from ._time import OPEN_END, US_PER_DAY, column_us, errors_as, scalar_us
from .decay import Decay, DecayPolicy, Exponential, NoDecay, Weibull
from .errors import FitError, NotFoundError
from .fit import fit_beta_bernoulli
from .schema import DEFAULT_FACT_TYPE

__all__ = ["FactTypeFit", "ValidityFit", "fit_validity", "fit_validity_intervals",
           "chi2_sf1", "chi2_quantile1"]

_LN2 = math.log(2.0)
#: The shape k is searched in [1e-4, 1e4]; a root beyond it counts as not identified.
_K_MIN, _K_MAX = 1e-4, 1e4
#: Profile intervals stop widening here (reported as 0 or inf beyond).
_K_CI_MIN, _K_CI_MAX = 1e-8, 1e8
_FAMILIES = ("exponential", "weibull")


# --------------------------------------------------------------------------------------
# chi-square(1) without scipy
# --------------------------------------------------------------------------------------

def chi2_sf1(x: float) -> float:
    """P(χ²₁ > x) = erfc(√(x / 2)): the p-value of a one-parameter likelihood-ratio test.

    >>> round(chi2_sf1(3.841458820694124), 6)
    0.05
    """
    return 1.0 if not x > 0.0 else math.erfc(math.sqrt(0.5 * x))


def chi2_quantile1(level: float) -> float:
    """The ``level`` quantile of χ²₁ (3.841... for 0.95): the root of :func:`chi2_sf1` − (1 − level).

    >>> round(chi2_quantile1(0.95), 6)
    3.841459
    """
    def excess(x: float) -> float:
        return chi2_sf1(x) - (1.0 - level)

    return _crossing(excess, 0.0, 1.0, 1e4)


def _root(f, lo: float, hi: float, flo: float, fhi: float, *, tol: float = 1e-13) -> float:
    """A root of ``f`` in [lo, hi] given values of opposite sign at the ends (Illinois
    regula falsi: bisection's guarantee, close to the secant's speed)."""
    side = 0
    for _ in range(200):
        x = (lo * fhi - hi * flo) / (fhi - flo)
        if not lo < x < hi:
            x = 0.5 * (lo + hi)
        fx = f(x)
        if fx == 0.0:
            return x
        if (fx > 0) == (flo > 0):
            lo, flo = x, fx
            if side == -1:
                fhi *= 0.5
            side = -1
        else:
            hi, fhi = x, fx
            if side == 1:
                flo *= 0.5
            side = 1
        if hi - lo <= tol * max(1.0, abs(lo), abs(hi)):
            break
    return 0.5 * (lo + hi)


def _crossing(f, x0: float, step: float, limit: float) -> float:
    """Where ``f`` (positive at ``x0``) first falls to 0 walking from ``x0`` by ``step``
    (either sign) towards ``limit``; ``limit`` itself when it never does."""
    a, fa = x0, f(x0)
    while True:
        b = a + step
        if (step > 0 and b >= limit) or (step < 0 and b <= limit):
            b = limit
        fb = f(b)
        if fb <= 0.0:
            return _root(f, a, b, fa, fb) if a < b else _root(f, b, a, fb, fa)
        if b == limit:
            return limit
        a, fa = b, fb
        step *= 2.0


# --------------------------------------------------------------------------------------
# one fact type
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FactTypeFit:
    """The fits of one fact type's validity durations (days; rates per day).

    NaN marks what the data do not identify (the Weibull without at least two distinct
    event durations below the longest one, see the module docstring). Intervals are at the
    :class:`ValidityFit`'s ``level``.
    """

    fact_type: str
    n: int                              # items of this type
    events: int                         # ended items in the likelihood (duration > 0)
    zero_ended: int                     # ended at duration 0: left out of the likelihoods
    exposure: float                     # Σ durations (days)
    beta: float                         # exponential β̂ = events / exposure (per day)
    beta_ci: tuple[float, float]        # likelihood-ratio interval
    loglik_exponential: float
    shape: float                        # Weibull k̂
    shape_ci: tuple[float, float]       # profile-likelihood interval
    scale: float                        # Weibull λ̂ (days)
    scale_ci: tuple[float, float]       # Wald interval on ln λ (observed information)
    loglik_weibull: float
    lr_statistic: float                 # 2(ℓ_W − ℓ_E), the test of k = 1
    lr_pvalue: float                    # P(χ²₁ > LR)
    bernoulli_beta: float               # fit_beta_bernoulli(ages, not ended)
    family: str                         # "exponential", "weibull" or "none"

    @property
    def censored(self) -> int:
        """Items still valid when observed (right-censored)."""
        return self.n - self.events - self.zero_ended

    @property
    def half_life(self) -> float:
        """ln 2 / β̂ (days); inf when nothing ended."""
        return _LN2 / self.beta if self.beta > 0 else math.inf

    @property
    def half_life_ci(self) -> tuple[float, float]:
        """ln 2 / β at the ends of ``beta_ci`` (the interval maps through monotonically)."""
        lo, hi = self.beta_ci
        return (_LN2 / hi if hi > 0 else math.inf, _LN2 / lo if lo > 0 else math.inf)

    @property
    def weibull_half_life(self) -> float:
        """The Weibull median λ (ln 2)^(1/k) (days): where its D falls to one half."""
        return self.scale * _LN2 ** (1.0 / self.shape)

    @property
    def aic_exponential(self) -> float:
        """2·1 − 2ℓ_E."""
        return 2.0 - 2.0 * self.loglik_exponential

    @property
    def aic_weibull(self) -> float:
        """2·2 − 2ℓ_W (NaN when the Weibull is not identified)."""
        return 4.0 - 2.0 * self.loglik_weibull

    def decay(self, family: str | None = None) -> Decay:
        """The fitted decay (days) of ``family`` ("exponential" or "weibull"; None: the chosen
        one). No events gives :class:`~chrono_engine.decay.NoDecay`; asking for a Weibull
        the data do not identify is a :class:`~chrono_engine.errors.FitError`."""
        family = self.family if family is None else _family(family)
        if family == "none" or self.beta <= 0.0:
            return NoDecay()
        if family == "weibull":
            if not math.isfinite(self.shape):
                raise FitError(f"fact type {self.fact_type!r}: the data do not identify a Weibull "
                               f"({self.events} events); use the exponential")
            return Weibull(shape=self.shape, scale=self.scale)
        return Exponential(beta=self.beta)

    def to_dict(self) -> dict[str, Any]:
        """Every field and the derived figures, JSON-safe (NaN and inf stay floats)."""
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}
        out.update(censored=self.censored, half_life=self.half_life, half_life_ci=list(self.half_life_ci),
                   weibull_half_life=self.weibull_half_life, aic_exponential=self.aic_exponential,
                   aic_weibull=self.aic_weibull)
        return out


def _family(family: object) -> str:
    if family not in _FAMILIES:
        raise FitError(f"family must be one of {_FAMILIES} or None, got {shown(family)}")
    return str(family)


def _exponential(events: int, exposure: float, q: float) -> tuple[float, tuple[float, float], float]:
    """β̂, its likelihood-ratio interval and ℓ(β̂)."""
    if exposure <= 0.0:
        return 0.0, (0.0, math.inf), 0.0
    if events == 0:  # ℓ(β) = −βT, maximal at 0; the interval is βT ≤ q/2
        return 0.0, (0.0, 0.5 * q / exposure), 0.0
    beta = events / exposure
    # 2[ℓ(β̂) − ℓ(xβ̂)] = −2D(ln x − x + 1): solve ln x − x + 1 + q/2D = 0 either side of 1
    c = 0.5 * q / events

    def g(u: float) -> float:  # in u = ln x
        return u - math.expm1(u) + c

    lo = _crossing(g, 0.0, -1.0, -745.0)
    hi = _crossing(g, 0.0, 1.0, 700.0)
    return beta, (beta * math.exp(lo), beta * math.exp(hi)), events * math.log(beta) - events


class _Weibull:
    """The Weibull profile likelihood of one fact type, in durations scaled by the longest
    (s = t / t_max ≤ 1, so s^k never overflows; k does not depend on the scale)."""

    def __init__(self, t: np.ndarray, ended: np.ndarray) -> None:
        self.tmax = float(t.max())
        self.ls = np.log(t / self.tmax)          # ≤ 0
        self.events = int(ended.sum())
        self.sum_ls_events = float(self.ls[ended].sum())

    def _weights(self, k: float) -> np.ndarray:
        """s^k; below e^-700 (relative to the longest duration's 1) counted as e^-700, so
        that no subnormal number slows every later operation down a hundredfold."""
        return np.exp(np.maximum(k * self.ls, -700.0))

    def _moments(self, k: float) -> tuple[float, float, float]:
        w = self._weights(k)
        s0 = float(w.sum())
        m1 = float(np.dot(w, self.ls)) / s0
        m2 = float(np.dot(w, self.ls * self.ls)) / s0
        return s0, m1, max(m2 - m1 * m1, 0.0)

    def score(self, u: float) -> float:
        """d ℓ_p / dk divided by D, at k = e^u (decreasing in k)."""
        k = math.exp(u)
        return 1.0 / k + self.sum_ls_events / self.events - self._moments(k)[1]

    def loglik(self, k: float) -> float:
        """The profile log-likelihood ℓ_p(k) = max over λ of ℓ(k, λ)."""
        d = self.events
        s0 = float(self._weights(k).sum())
        return (d * math.log(k) - d * math.log(s0) + d * math.log(d) + (k - 1.0) * self.sum_ls_events
                - d * math.log(self.tmax) - d)

    def shape(self) -> float | None:
        """k̂, or None when the profile score has no root in [_K_MIN, _K_MAX]."""
        # the score falls to mean_events(ln s) − max(ln s) = mean_events(ln s) as k → ∞:
        # a root exists only when some event lasted less than the longest duration
        if self.events < 1 or self.sum_ls_events / self.events > -1e-12:
            return None
        lo, hi = math.log(_K_MIN), math.log(_K_MAX)
        flo, fhi = self.score(lo), self.score(hi)
        if fhi >= 0.0 or flo <= 0.0:
            return None
        u = 0.0
        for _ in range(100):  # Newton in u = ln k, kept inside the bracket
            k = math.exp(u)
            s0, m1, var = self._moments(k)
            f = 1.0 / k + self.sum_ls_events / self.events - m1
            if f > 0:
                lo = u
            else:
                hi = u
            df = -1.0 / k - k * var  # d f / d u = k · (−1/k² − var)
            step = -f / df
            nxt = u + step
            if not lo < nxt < hi:
                nxt = 0.5 * (lo + hi)
            if abs(nxt - u) <= 1e-14 * max(1.0, abs(u)):
                u = nxt
                break
            u = nxt
        return math.exp(u)

    def scale(self, k: float) -> float:
        """λ̂(k) = t_max (Σ s^k / D)^(1/k)."""
        s0 = float(self._weights(k).sum())
        return self.tmax * math.exp((math.log(s0) - math.log(self.events)) / k)

    def shape_ci(self, k: float, q: float) -> tuple[float, float]:
        """{k : 2[ℓ_p(k̂) − ℓ_p(k)] ≤ q}, in ln k."""
        top = self.loglik(k) - 0.5 * q

        def g(u: float) -> float:
            return self.loglik(math.exp(u)) - top

        u = math.log(k)
        lo = _crossing(g, u, -0.25, math.log(_K_CI_MIN))
        hi = _crossing(g, u, 0.25, math.log(_K_CI_MAX))
        return (0.0 if lo <= math.log(_K_CI_MIN) else math.exp(lo),
                math.inf if hi >= math.log(_K_CI_MAX) else math.exp(hi))

    def scale_ci(self, k: float, lam: float, q: float) -> tuple[float, float]:
        """λ̂ · exp(∓ z · se(ln λ̂)) with se from the inverse observed information."""
        d = self.events
        L = self.ls + math.log(self.tmax) - math.log(lam)       # ln(t/λ)
        z = np.exp(np.maximum(k * L, -700.0))                    # (t/λ)^k, Σ z = D at the MLE
        i_kk = d / (k * k) + float(np.dot(z, L * L))
        i_ll = d * k * k / (lam * lam)
        i_kl = -(k / lam) * float(np.dot(z, L))
        det = i_kk * i_ll - i_kl * i_kl
        if not det > 0.0:
            return (math.nan, math.nan)
        se_log = math.sqrt(i_kk / det) / lam
        half = math.sqrt(q) * se_log
        return (lam * math.exp(-half), lam * math.exp(half))


def _fit_one(name: str, t: np.ndarray, ended: np.ndarray, ages: np.ndarray, q: float,
             alpha: float) -> FactTypeFit:
    n = len(t)
    zero_ended = ended & (t == 0.0)
    keep = (t > 0.0)                     # zero durations add nothing to any likelihood
    tk, ek = t[keep], ended[keep]
    events = int(ek.sum())
    exposure = float(tk.sum())
    beta, beta_ci, ll_e = _exponential(events, exposure, q)
    nan2 = (math.nan, math.nan)
    shape, shape_ci, scale, scale_ci, ll_w, lr, p = math.nan, nan2, math.nan, nan2, math.nan, math.nan, math.nan
    if events:
        w = _Weibull(tk, ek)
        k = w.shape()
        if k is not None:
            shape, scale = k, w.scale(k)
            ll_w = w.loglik(k)
            shape_ci, scale_ci = w.shape_ci(k, q), w.scale_ci(k, scale, q)
            lr = max(0.0, 2.0 * (ll_w - ll_e))
            p = chi2_sf1(lr)
    family = "none" if events == 0 else ("weibull" if p < alpha else "exponential")
    return FactTypeFit(fact_type=name, n=n, events=events, zero_ended=int(zero_ended.sum()),
                       exposure=exposure, beta=beta, beta_ci=beta_ci, loglik_exponential=ll_e,
                       shape=shape, shape_ci=shape_ci, scale=scale, scale_ci=scale_ci,
                       loglik_weibull=ll_w, lr_statistic=lr, lr_pvalue=p,
                       bernoulli_beta=fit_beta_bernoulli(ages, ~ended), family=family)


# --------------------------------------------------------------------------------------
# the result
# --------------------------------------------------------------------------------------

class ValidityFit(Mapping[str, FactTypeFit]):
    """Per fact type, the fits of :func:`fit_validity` (a read-only mapping of fact type
    name to :class:`FactTypeFit`, in name order), and the policy they give.

    ``level`` is the confidence level of every interval; ``alpha`` the level of the
    likelihood-ratio test that picks the Weibull over the exponential.
    """

    __slots__ = ("_fits", "level", "alpha")

    def __init__(self, fits: Mapping[str, FactTypeFit], *, level: float, alpha: float) -> None:
        self._fits = dict(fits)
        self.level = level
        self.alpha = alpha

    def __getitem__(self, fact_type: str) -> FactTypeFit:
        try:
            return self._fits[fact_type]
        except (KeyError, TypeError):
            raise NotFoundError(f"no fit for fact type {shown(fact_type)}; fitted: "
                                f"{sorted(self._fits)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._fits)

    def __len__(self) -> int:
        return len(self._fits)

    def policy(self, family: str | None = None, *, default: Decay | None = NoDecay()) -> DecayPolicy:
        """A :class:`~chrono_engine.decay.DecayPolicy` with each fact type's fitted decay
        (days): the chosen family, or ``family`` ("exponential" / "weibull") for every type;
        types with no events get :class:`~chrono_engine.decay.NoDecay`. ``default`` is the
        policy's decay for fact types not fitted here (as in ``DecayPolicy``)."""
        if family is not None:
            _family(family)
        return DecayPolicy({name: f.decay(family) for name, f in self._fits.items()}, default=default)

    decay_policy = policy

    def to_dict(self) -> dict[str, Any]:
        """``{"level", "alpha", "fact_types": {name: FactTypeFit.to_dict()}}``."""
        return {"level": self.level, "alpha": self.alpha,
                "fact_types": {name: f.to_dict() for name, f in self._fits.items()}}

    def summary(self) -> str:
        """A table: one row per fact type (β per day; the exponential half-life, the Weibull
        scale λ and its median λ (ln 2)^(1/k) in days)."""
        pct = f"{100 * self.level:g}%"
        head = (f"{'fact type':<16} {'n':>8} {'events':>8} {'family':<11} {'beta/day':>10} "
                f"{pct + ' CI':>23} {'half-life':>9} {'k':>7} {pct + ' CI':>17} {'lambda':>9} {'W median':>9} "
                f"{'LR p':>8} {'dAIC':>8} {'beta Bern.':>10}")
        rows = [head, "-" * len(head)]
        for f in self._fits.values():
            d_aic = f.aic_exponential - f.aic_weibull
            rows.append(f"{_cut(f.fact_type, 16):<16} {f.n:>8} {f.events:>8} {f.family:<11} "
                        f"{_g(f.beta):>10} {_ci(f.beta_ci):>23} {_g(f.half_life):>9} {_g(f.shape, 3):>7} "
                        f"{_ci(f.shape_ci, 3):>17} {_g(f.scale):>9} {_g(f.weibull_half_life):>9} {_p(f.lr_pvalue):>8} {_g(d_aic, 3):>8} "
                        f"{_g(f.bernoulli_beta):>10}")
        rows.append(f"(Weibull chosen when the LR test of k = 1 gives p < {self.alpha:g}; "
                    f"dAIC = AIC_exp - AIC_Weibull)")
        return "\n".join(rows)

    def __repr__(self) -> str:
        parts = []
        for f in self._fits.values():
            if f.family == "weibull":
                parts.append(f"{f.fact_type!r}: Weibull(k={_g(f.shape, 3)}, lambda={_g(f.scale)}d)")
            elif f.family == "exponential":
                parts.append(f"{f.fact_type!r}: exponential(half_life={_g(f.half_life)}d)")
            else:
                parts.append(f"{f.fact_type!r}: none")
        return f"ValidityFit({{{', '.join(parts)}}}, level={self.level:g})"

    def __str__(self) -> str:
        return self.summary()


def _g(x: float, digits: int = 4) -> str:
    return "-" if math.isnan(x) else ("inf" if math.isinf(x) else f"{x:.{digits}g}")


def _ci(ci: tuple[float, float], digits: int = 4) -> str:
    return "-" if math.isnan(ci[0]) else f"[{_g(ci[0], digits)}, {_g(ci[1], digits)}]"


def _p(p: float) -> str:
    return "-" if math.isnan(p) else (f"{p:.2g}" if p >= 1e-99 else "<1e-99")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


# --------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------

def _days(value: Any, name: str) -> np.ndarray:
    """A 1-D float64 array of days ≥ 0 (timedelta64 converted), or FitError at the first
    bad index."""
    a = array(value, name, FitError)
    if a.dtype.kind == "m":
        with np.errstate(invalid="ignore"):
            a = a / np.timedelta64(1, "D")
    elif a.dtype.kind == "O":
        a = array(a, name, FitError, np.float64)
    elif a.dtype.kind not in "iuf":
        raise FitError(f"{name} must be numbers of days, got dtype {a.dtype} ({shown(value)})")
    a = a.astype(np.float64, copy=False)
    if a.ndim != 1:
        raise FitError(f"{name} must be 1-D (one entry per item), got shape {a.shape}")
    bad = ~(np.isfinite(a) & (a >= 0.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise FitError(f"{name} must be finite and >= 0 (days): {name}[{i}] is {float(a[i])!r}")
    return a


def _flags(value: Any, name: str) -> np.ndarray:
    """A 1-D bool array; anything but booleans is FitError at the first bad index."""
    a = array(value, name, FitError)
    if a.ndim != 1:
        raise FitError(f"{name} must be 1-D (one entry per item), got shape {a.shape}")
    if a.dtype == np.bool_:
        return a
    if a.dtype.kind == "O":
        for i, x in enumerate(a.tolist()):
            if not isinstance(x, (bool, np.bool_)):
                raise FitError(f"{name} must be booleans (True when the validity ended): "
                               f"{name}[{i}] is {type(x).__name__} {shown(x)}")
        return a.astype(bool)
    at = f"; {name}[0] is {shown(a[0].item())}" if len(a) else ""
    raise FitError(f"{name} must be booleans (True when the validity ended), got dtype {a.dtype}{at}")


def _groups(value: Any, n: int) -> tuple[np.ndarray, list[str]]:
    """Fact type names, one per item (None: all the default type), as codes into sorted
    unique names. An Arrow dictionary array (codes and names, as a store keeps them) is
    read without making a string per item."""
    if value is None:
        return np.zeros(n, np.intp), [DEFAULT_FACT_TYPE]
    if isinstance(value, str):
        raise FitError(f"fact_types must hold one name per item, got the single str {shown(value)} "
                       f"(pass [name] * n, or None for {DEFAULT_FACT_TYPE!r})")
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks() if value.num_chunks else pa.array([], value.type)
    if isinstance(value, pa.DictionaryArray):
        if len(value) != n:
            raise FitError(f"fact_types must have one name per item: {len(value)} names for {n} items")
        if value.null_count:
            i = int(np.flatnonzero(value.is_null().to_numpy(zero_copy_only=False))[0])
            raise FitError(f"fact_types[{i}] must be a non-empty str, got None")
        words = value.dictionary.to_pylist()
        for j, x in enumerate(words):
            if not isinstance(x, str) or not x:
                at = np.flatnonzero(value.indices.to_numpy(zero_copy_only=False) == j)
                if len(at):
                    raise FitError(f"fact_types[{int(at[0])}] must be a non-empty str, got {shown(x)}")
        names, remap = np.unique(np.array([w if isinstance(w, str) else "" for w in words], dtype=object)
                                 .astype(str), return_inverse=True)
        codes = remap.reshape(-1)[value.indices.to_numpy(zero_copy_only=False).astype(np.intp)]
        return codes, names.tolist()
    if isinstance(value, pa.Array):
        value = value.to_pylist()
    # object dtype for sequences: NumPy would turn ["a", 3] into the strings "a" and "3"
    a = value if isinstance(value, np.ndarray) else array(value, "fact_types", FitError, object)
    if a.ndim != 1:
        raise FitError(f"fact_types must be 1-D (one name per item), got shape {a.shape}")
    if len(a) != n:
        raise FitError(f"fact_types must have one name per item: {len(a)} names for {n} items")
    if a.dtype.kind in "UT":
        a = a.astype(object)
    elif a.dtype.kind != "O":
        raise FitError(f"fact_types must be strings, got dtype {a.dtype}")
    for i, x in enumerate(a.tolist()):
        if not isinstance(x, str) or not x:
            raise FitError(f"fact_types[{i}] must be a non-empty str, got {shown(x)}")
    names, codes = np.unique(a.astype(str), return_inverse=True)
    return codes.reshape(-1), names.tolist()


def _unit_interval(value: object, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real) or not 0.0 < float(value) < 1.0:
        raise FitError(f"{name} must be a number in (0, 1), got {shown(value)}")
    return float(value)


# --------------------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------------------

def fit_validity(durations: Any, ended: Any, fact_types: Any = None, *, ages: Any = None,
                 level: float = 0.95, alpha: float = 0.01) -> ValidityFit:
    """Fit, per fact type, the survival of validity by maximum likelihood with right-censoring.

    ``durations``: how long each item has been (or was) valid, days ≥ 0 (or timedelta64);
    ``ended``: True when its validity ended (an observed event), False when it is still
    valid (right-censored); ``fact_types``: one name per item (a sequence, an array, or an
    Arrow dictionary array of codes and names), or None for one group ``"general"``; ``ages``: each item's age when the store was looked at (≥ its duration),
    for the Bernoulli-on-age estimator only (default: the durations). ``level``: of the
    confidence intervals; ``alpha``: the LR test level at which the Weibull replaces the
    exponential. The families, intervals and edge cases are in the module docstring.

    Raises :class:`~chrono_engine.errors.FitError` naming the argument and the first bad
    index (NaN, negative, not 1-D, lengths that differ, ``ended`` not booleans, empty).
    """
    t = _days(durations, "durations")
    if not len(t):
        raise FitError("durations must not be empty: nothing to fit")
    e = _flags(ended, "ended")
    if len(e) != len(t):
        raise FitError(f"durations and ended must have equal length, got {len(t)} and {len(e)}")
    codes, names = _groups(fact_types, len(t))
    if ages is None:
        a = t
    else:
        a = _days(ages, "ages")
        if len(a) != len(t):
            raise FitError(f"ages and durations must have equal length, got {len(a)} and {len(t)}")
        short = a < t
        if short.any():
            i = int(np.flatnonzero(short)[0])
            raise FitError(f"ages must be >= durations (an item is observed no younger than it has "
                           f"been valid): ages[{i}] is {float(a[i])!r}, durations[{i}] is {float(t[i])!r}")
    return _fit_groups(t, e, a, codes, names, level, alpha)


def _fit_groups(t: np.ndarray, e: np.ndarray, a: np.ndarray, codes: np.ndarray, names: list[str],
                level: object, alpha: object) -> ValidityFit:
    """One :func:`_fit_one` per fact type that has items (``names[codes[i]]`` is item i's)."""
    level = _unit_interval(level, "level")
    alpha = _unit_interval(alpha, "alpha")
    q = chi2_quantile1(level)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    fits = {}
    for g, name in enumerate(names):
        idx = order[bounds[g]:bounds[g + 1]]
        if len(idx):
            fits[name] = _fit_one(name, t[idx], e[idx], a[idx], q, alpha)
    return ValidityFit(fits, level=level, alpha=alpha)


def fit_validity_intervals(valid_from_us: Any, valid_to_us: Any, fact_types: Any = None, *,
                           now_us: Any, level: float = 0.95, alpha: float = 0.01) -> ValidityFit:
    """:func:`fit_validity` from a store's validity intervals as they stand at ``now_us``.

    ``valid_from_us`` / ``valid_to_us``: int64 µs since the epoch (or any time column
    :mod:`chrono_engine._time` reads); ``valid_to`` :data:`~chrono_engine._time.OPEN_END`
    (or null) is open. Items with valid_from > now are skipped (not valid yet: they say
    nothing about durations). An item has *ended* iff valid_to != OPEN_END and
    valid_to ≤ now; its duration is (min(valid_to, now) − valid_from) / 1 day and its age
    (for the Bernoulli estimator: current-status data) is (now − valid_from) / 1 day.

    >>> import chrono_engine as ce
    >>> day = 86_400_000_000
    >>> f = ce.fit_validity_intervals([0, 0, 0], [10 * day, 30 * day, ce._time.OPEN_END],
    ...                               ["a", "a", "a"], now_us=20 * day)
    >>> f["a"].events, f["a"].exposure, round(f["a"].beta, 4)   # 1 event in 10 + 20 + 20 days
    (1, 50.0, 0.02)
    """
    with errors_as(FitError):
        vf, _ = column_us("valid_from", valid_from_us, stored=False)
        vt, open_ = column_us("valid_to", valid_to_us, nullable=True, stored=False)
        now = scalar_us(now_us, "now_us")
    if vf.ndim != 1 or vt.ndim != 1 or len(vf) != len(vt):
        raise FitError(f"valid_from and valid_to must be 1-D of equal length, got {len(vf)} and {len(vt)}")
    if open_ is not None:
        vt = np.where(open_, OPEN_END, vt)
    before = vt < vf
    if before.any():
        i = int(np.flatnonzero(before)[0])
        raise FitError(f"valid_to must not be before valid_from: valid_to[{i}] is {int(vt[i])} µs, "
                       f"valid_from[{i}] is {int(vf[i])} µs")
    codes, names = _groups(fact_types, len(vf))
    keep = vf <= now
    if not keep.any():
        raise FitError(f"no item is valid from at or before now_us ({now} µs): nothing to fit")
    vf, vt, codes = vf[keep], vt[keep], codes[keep]
    ended = (vt != OPEN_END) & (vt <= now)
    # differences of int64 can exceed int64 (now = OPEN_END, valid_from near year 1); they
    # are >= 0 here and below 2**64, so uint64 arithmetic (wrapping) gives them exactly
    u_from = vf.view(np.uint64)
    dur = (np.minimum(vt, now).view(np.uint64) - u_from).astype(np.float64) / US_PER_DAY
    age = (np.uint64(now & 0xFFFF_FFFF_FFFF_FFFF) - u_from).astype(np.float64) / US_PER_DAY
    return _fit_groups(dur, ended, np.maximum(age, dur), codes, names, level, alpha)
