"""Decay-rate estimation: fit_ou on simulated Ornstein-Uhlenbeck paths (and against the
closed-form AR(1) estimate on regular grids), fit_beta_bernoulli against chronofy's MLE."""
import math

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine.errors import ArgumentTypeError, FitError


def ou_path(kappa, n, seed, mean_gap, mu=2.0, sigma=0.3, regular=False):
    rng = np.random.default_rng(seed)
    gaps = np.full(n, mean_gap) if regular else rng.exponential(mean_gap, n)
    t = np.cumsum(gaps)
    z = rng.standard_normal(n)
    a = np.exp(-kappa * np.diff(t))
    sd = sigma * np.sqrt((1 - a * a) / (2 * kappa))
    x = np.empty(n)
    x[0] = mu
    for i in range(1, n):  # exact OU transition
        x[i] = mu + (x[i - 1] - mu) * a[i - 1] + sd[i - 1] * z[i]
    return t, x


@pytest.mark.parametrize("kappa, gap, seed", [(1.0, 0.8, 0), (0.1, 8.0, 1), (10.0, 0.08, 2), (0.5, 1.6, 3)])
def test_fit_ou_recovers_kappa_within_5_percent(kappa, gap, seed):
    """10k irregular samples (exponential gaps, κ·E[Δ] = 0.8); the estimator's own spread
    here is about 2.5% (40 paths: 39 within 5%), so 5% is a 2-sigma check."""
    t, x = ou_path(kappa, 10_000, seed, gap)
    f = ce.fit_ou(t, x)
    assert abs(f.kappa / kappa - 1) < 0.05
    assert abs(f.mu - 2.0) < 0.05 and abs(f.sigma / 0.3 - 1) < 0.05
    assert f.beta == pytest.approx(2 * f.kappa) and f.half_life == pytest.approx(math.log(2) / f.beta)
    assert f.n == 10_000


def test_fit_ou_equals_ar1_on_a_regular_grid():
    """With equal gaps the exact MLE is the AR(1) least-squares fit: κ = −ln φ / Δ."""
    t, x = ou_path(0.7, 3000, 5, 0.5, regular=True)
    X = np.stack([np.ones(len(x) - 1), x[:-1]], axis=1)
    c, phi = np.linalg.lstsq(X, x[1:], rcond=None)[0]
    f = ce.fit_ou(t, x)
    assert f.kappa == pytest.approx(-math.log(phi) / 0.5, rel=1e-6)
    assert f.mu == pytest.approx(c / (1 - phi), rel=1e-6)


def test_fit_ou_datetimes_are_days():
    t, x = ou_path(0.2, 4000, 7, 2.0)
    days = np.datetime64("2020-01-01", "us") + (t * 86_400e6).astype("timedelta64[us]")
    assert ce.fit_ou(days, x).kappa == pytest.approx(ce.fit_ou(t - t[0], x).kappa, rel=1e-6)


@pytest.mark.parametrize("times, values, error, match", [
    ([0, 1], [1.0, 2.0], FitError, "times and values: need at least 3"),
    ([0, 1, 1], [1.0, 2.0, 3.0], FitError, "times must be strictly increasing: index 2"),
    ([0, 1, 2], [1.0, float("nan"), 3.0], FitError, r"non-finite .* index 1: values\[1\] is nan"),
    ([0, float("inf"), 2], [1.0, 2.0, 3.0], FitError, r"non-finite .* index 1: times\[1\] is inf"),
    ([0, 1, 2], [1.0, 1.0, 1.0], FitError, "values are constant"),
    ([0, 1, 2], [1e-200, 0.0, 2e-200], FitError, "values form a degenerate path"),
    ([0, 1, 2], [1.0, 2.0], FitError, "times and values must be 1-D of equal length"),
    ([0, 1, 2], ["a", "b", "c"], FitError, "values: expected numbers"),
    ([0, 1, 2], [{}, {}, {}], ArgumentTypeError, "values: expected numbers"),
    (["a", "b", "c"], [1.0, 2.0, 3.0], FitError, r"times, row 0: cannot read 'a'"),
    (np.array([True, False, True]), [1.0, 2.0, 3.0], FitError, "dtype bool"),
])
def test_fit_ou_errors(times, values, error, match):
    with pytest.raises(error, match=match):
        ce.fit_ou(times, values)


def chronofy_mle():
    mod = pytest.importorskip("chronofy.analysis.beta_estimator")
    return mod.MLEBernoulli()


@pytest.mark.parametrize("seed", range(6))
def test_fit_beta_bernoulli_matches_chronofy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 3000))
    beta = rng.uniform(0.001, 3)
    a = rng.exponential(rng.uniform(0.05, 200), n)
    if seed == 5:
        a[:10] = 0.0  # invalid at age 0: a constant term of the likelihood
    v = rng.random(n) < np.exp(-beta * a)
    ours = ce.fit_beta_bernoulli(a, v)
    ref = chronofy_mle().fit(a.tolist(), v.tolist())
    assert abs(ours - ref) <= 1e-7 * max(1.0, ref)  # chronofy's golden-section tolerance is 1e-8


def test_fit_beta_bernoulli_edge_cases():
    ref = chronofy_mle()
    for a, v in (([1.0, 2.0], [True, True]), ([1.0, 2.0], [False, False]), ([0.0, 3.0], [False, True])):
        assert ce.fit_beta_bernoulli(a, v) == pytest.approx(ref.fit(a, v), abs=1e-7)
    assert ce.fit_beta_bernoulli([1.0, 2.0], [1, 0]) > 0


def test_fit_beta_bernoulli_errors():
    with pytest.raises(FitError, match="ages must not be empty"):
        ce.fit_beta_bernoulli([], [])
    with pytest.raises(FitError, match="ages must be finite and >= 0: index 1 is -2.0"):
        ce.fit_beta_bernoulli([1.0, -2.0], [True, False])
    with pytest.raises(FitError, match=r"valid must be booleans \(or 0/1\)"):
        ce.fit_beta_bernoulli([1.0, 2.0], [0.5, 1])
    with pytest.raises(FitError, match="ages and valid must be 1-D of equal length"):
        ce.fit_beta_bernoulli([1.0, 2.0], [True])
    with pytest.raises(FitError, match="ages: expected numbers"):
        ce.fit_beta_bernoulli(["one", "two"], [True, False])
    with pytest.raises(ArgumentTypeError, match="ages: expected numbers"):
        ce.fit_beta_bernoulli([{}, {}], [True, False])
