"""Decay families, their kernel contract and DecayPolicy.

The references here are written independently of chrono_engine.decay: scalar ``math``
formulas straight from the decay table (docs/scoring.md), the Elasticsearch / Milvus / Qdrant documented
formulas, and (when installed) the chronofy 0.1.9 reference package.
"""
from __future__ import annotations

import copy
import doctest
import json
import math
import pickle
from datetime import datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chrono_engine.decay as decay_module
from chrono_engine.decay import (
    Decay,
    DecayPolicy,
    Exponential,
    Gaussian,
    HalfLife,
    Linear,
    NoDecay,
    PowerLaw,
    Weibull,
    evaluate_spec,
    parse_decay,
)
from chrono_engine.errors import ChronoError, NotFoundError, QueryError

LN2 = math.log(2.0)
UNIT_PER_DAY = {"days": 1.0, "hours": 24.0, "seconds": 86400.0}
FAST = settings(max_examples=40, deadline=None)

positive = st.floats(min_value=1e-2, max_value=1e3, allow_nan=False, allow_infinity=False)
non_negative = st.floats(min_value=0.0, max_value=100.0, allow_nan=False,
                         allow_infinity=False)
fraction = st.floats(min_value=1e-3, max_value=1 - 1e-3)
units = st.sampled_from(["days", "hours", "seconds"])
flags = st.booleans()
ages = st.lists(st.floats(min_value=-1e4, max_value=1e4, allow_nan=False), min_size=1,
                max_size=20)


# ---------------------------------------------------------------------------------------
# independent scalar references (docs/scoring.md, the decay table)
# ---------------------------------------------------------------------------------------

def _age_in_unit(age_days: float, unit: str, symmetric: bool) -> float:
    a = abs(age_days) if symmetric else max(age_days, 0.0)
    return a * UNIT_PER_DAY[unit]


def ref_exponential(age, beta, offset, unit, symmetric):
    a = _age_in_unit(age, unit, symmetric)
    return math.exp(-beta * max(0.0, a - offset))


def ref_half_life(age, h, unit, symmetric):
    return 0.5 ** (_age_in_unit(age, unit, symmetric) / h)


def ref_gaussian(age, sigma, offset, unit, symmetric):
    d = max(0.0, _age_in_unit(age, unit, symmetric) - offset)
    return math.exp(-(d ** 2) / (2 * sigma ** 2))


def ref_linear(age, rate, offset, unit, symmetric):
    a = _age_in_unit(age, unit, symmetric)
    return max(0.0, 1.0 - rate * max(0.0, a - offset))


def ref_power(age, alpha, unit, symmetric):
    return (1.0 + _age_in_unit(age, unit, symmetric)) ** (-alpha)


def ref_weibull(age, k, lam, unit, symmetric):
    try:
        return math.exp(-((_age_in_unit(age, unit, symmetric) / lam) ** k))
    except OverflowError:
        return 0.0


def _close(got, want, rtol=1e-12, atol=1e-300):
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=rtol, atol=atol)


@FAST
@given(ages, positive, non_negative, units, flags)
def test_exponential_matches_formula(xs, beta, offset, unit, sym):
    beta = beta / 100  # keep exp() away from underflow for most draws
    d = Exponential(beta=beta, offset=offset, unit=unit, symmetric=sym)
    _close(d.evaluate(xs), [ref_exponential(x, beta, offset, unit, sym) for x in xs],
           rtol=1e-12)


@FAST
@given(ages, positive, units, flags)
def test_half_life_matches_formula(xs, h, unit, sym):
    d = HalfLife(h, unit=unit, symmetric=sym)
    _close(d(xs), [ref_half_life(x, h, unit, sym) for x in xs])


@FAST
@given(ages, positive, non_negative, units, flags)
def test_gaussian_matches_formula(xs, sigma, offset, unit, sym):
    d = Gaussian(sigma=sigma, offset=offset, unit=unit, symmetric=sym)
    _close(d(xs), [ref_gaussian(x, sigma, offset, unit, sym) for x in xs], rtol=1e-11)


@FAST
@given(ages, positive, non_negative, units, flags)
def test_linear_matches_formula(xs, rate, offset, unit, sym):
    rate = rate / 1000
    d = Linear(rate=rate, offset=offset, unit=unit, symmetric=sym)
    _close(d(xs), [ref_linear(x, rate, offset, unit, sym) for x in xs], atol=1e-12)


@FAST
@given(ages, st.floats(min_value=0.01, max_value=20.0), units, flags)
def test_power_law_matches_formula(xs, alpha, unit, sym):
    d = PowerLaw(alpha, unit=unit, symmetric=sym)
    _close(d(xs), [ref_power(x, alpha, unit, sym) for x in xs])


@FAST
@given(ages, st.floats(min_value=0.1, max_value=5.0), positive, units, flags)
def test_weibull_matches_formula(xs, k, lam, unit, sym):
    d = Weibull(shape=k, scale=lam, unit=unit, symmetric=sym)
    _close(d(xs), [ref_weibull(x, k, lam, unit, sym) for x in xs], rtol=1e-11)


def test_no_decay_is_one():
    assert NoDecay()([-5.0, 0.0, 3.0, 1e300]).tolist() == [1.0, 1.0, 1.0, 1.0]


def test_negative_ages_clamp_unless_symmetric():
    d = Exponential(beta=0.1)
    assert d(-10.0) == 1.0
    s = Exponential(beta=0.1, symmetric=True)
    assert float(s(-10.0)) == pytest.approx(math.exp(-1.0), rel=1e-15)
    assert float(s(-10.0)) == float(s(10.0))


def test_half_life_constructor_forms():
    assert Exponential(half_life=10).beta == pytest.approx(LN2 / 10, rel=1e-15)
    assert Gaussian(half_life=10).sigma == pytest.approx(10 / math.sqrt(2 * LN2), rel=1e-15)
    lin = Linear(scale=8, decay=0.25)
    assert lin.rate == pytest.approx(0.75 / 8, rel=1e-15)
    assert HalfLife(5).beta == pytest.approx(LN2 / 5, rel=1e-15)


def test_units_scale_the_age():
    assert float(Exponential(half_life=6, unit="hours")(0.25)) == pytest.approx(0.5, rel=1e-14)
    assert float(HalfLife(3600, unit="seconds")(1 / 24)) == pytest.approx(0.5, rel=1e-12)
    # same curve, parameters in different units
    x = np.linspace(0, 40, 17)
    _close(Weibull(2, 10)(x), Weibull(2, 240, unit="hours")(x), rtol=1e-13)


# ---------------------------------------------------------------------------------------
# half-life identities
# ---------------------------------------------------------------------------------------

def _families_with_half_life(p, unit="days", sym=False):
    """One decay per family, built from a few positive parameters."""
    a, b, c = p
    kw = {"unit": unit, "symmetric": sym}
    return [
        Exponential(beta=a, **kw),
        Exponential(half_life=a, offset=c, **kw),
        HalfLife(a, **kw),
        Gaussian(sigma=a, offset=c, **kw),
        Gaussian(half_life=b, **kw),
        Linear(rate=1 / a, offset=c, **kw),
        Linear(scale=a, decay=min(max(b / (b + 1), 0.01), 0.99), offset=c, **kw),
        PowerLaw(min(b, 30.0), **kw),
        Weibull(shape=min(b, 10.0), scale=a, **kw),
    ]


@FAST
@given(st.tuples(positive, positive, non_negative), units, flags)
def test_value_at_half_life_is_one_half(p, unit, sym):
    for d in _families_with_half_life(p, unit, sym):
        h = d.half_life_days
        assert h == pytest.approx(d.half_life / UNIT_PER_DAY[unit], rel=1e-15)
        assert float(d(h)) == pytest.approx(0.5, rel=1e-9), d
        if sym:
            assert float(d(-h)) == pytest.approx(0.5, rel=1e-9), d
        # D is non-increasing: just before the half-life it is above 0.5
        assert float(d(h * 0.9)) >= 0.5


def test_half_life_values():
    assert Exponential(half_life=7).half_life == pytest.approx(7.0, rel=1e-15)
    assert Exponential(half_life=7, offset=3).half_life == pytest.approx(10.0, rel=1e-15)
    assert HalfLife(7).half_life == 7.0
    assert Gaussian(half_life=7).half_life == pytest.approx(7.0, rel=1e-15)
    assert Linear(rate=0.1, offset=2).half_life == pytest.approx(7.0)
    assert Linear(rate=0.1, offset=2).expiry == pytest.approx(12.0)
    assert PowerLaw(1.0).half_life == pytest.approx(1.0, rel=1e-15)
    assert PowerLaw(2.0).half_life == pytest.approx(math.sqrt(2) - 1, rel=1e-15)
    assert Weibull(shape=1.0, scale=10.0).half_life == pytest.approx(10 * LN2, rel=1e-15)
    assert NoDecay().half_life == math.inf
    assert HalfLife(12, unit="hours").half_life_days == 0.5


# ---------------------------------------------------------------------------------------
# kernel contract
# ---------------------------------------------------------------------------------------

def _random_family(rng: np.random.Generator) -> Decay:
    unit = str(rng.choice(["days", "hours", "seconds"]))
    sym = bool(rng.integers(2))
    kw = {"unit": unit, "symmetric": sym}
    pos = lambda lo=1e-2, hi=1e2: float(np.exp(rng.uniform(np.log(lo), np.log(hi))))  # noqa: E731
    off = float(rng.uniform(0, 50)) * float(rng.integers(2))
    choice = int(rng.integers(11))
    return [
        lambda: Exponential(beta=pos(1e-4, 1.0), offset=off, **kw),
        lambda: Exponential(half_life=pos(1, 1e5), **kw),
        lambda: HalfLife(pos(1, 1e5), **kw),
        lambda: Gaussian(sigma=pos(1, 1e5), offset=off, **kw),
        lambda: Gaussian(half_life=pos(1, 1e5), **kw),
        lambda: Linear(rate=pos(1e-6, 1e-1), offset=off, **kw),
        lambda: Linear(scale=pos(1, 1e5), decay=float(rng.uniform(0.01, 0.99)), **kw),
        lambda: PowerLaw(pos(1e-2, 10.0), **kw),
        lambda: Weibull(shape=pos(0.2, 5.0), scale=pos(1, 1e5), **kw),
        lambda: NoDecay(),
        lambda: Exponential.from_scale(pos(), offset=off, decay=float(rng.uniform(.05, .95))),
    ][choice]()


def test_family_equals_kernel_reference_on_random_parameters():
    rng = np.random.default_rng(20240601)
    x = np.concatenate([rng.uniform(-400, 400, 200), [0.0, -0.0, 1e-9, -1e-9, 1e4]])
    for _ in range(300):
        d = _random_family(rng)
        spec = d._kernel_spec()
        code, p0, p1, scale, sym = spec
        assert type(code) is int and type(sym) is bool
        assert all(type(v) is float for v in (p0, p1, scale))
        assert scale == UNIT_PER_DAY[d.unit]
        assert sym == d.symmetric
        _close(d.evaluate(x), evaluate_spec(spec, x), rtol=1e-12)


def test_kernel_spec_exact_values():
    assert NoDecay()._kernel_spec() == (0, 0.0, 0.0, 1.0, False)
    assert Exponential(beta=0.5, offset=2, unit="hours")._kernel_spec() == (
        1, 0.5, 2.0, 24.0, False)
    assert HalfLife(10, unit="seconds", symmetric=True)._kernel_spec() == (
        1, LN2 / 10, 0.0, 86400.0, True)
    assert Gaussian(sigma=3, offset=1)._kernel_spec() == (2, 3.0, 1.0, 1.0, False)
    assert Linear(rate=0.25, offset=4)._kernel_spec() == (3, 0.25, 4.0, 1.0, False)
    assert PowerLaw(1.5)._kernel_spec() == (4, 1.5, 0.0, 1.0, False)
    assert Weibull(shape=2, scale=9)._kernel_spec() == (5, 2.0, 9.0, 1.0, False)


def test_evaluate_spec_reference_formulas():
    x = np.array([-2.0, 0.0, 1.5, 3.0, 10.0])
    a = np.maximum(x, 0) * 24
    _close(evaluate_spec((1, 0.1, 5.0, 24.0, False), x), np.exp(-0.1 * np.clip(a - 5, 0, None)))
    s = np.abs(x)
    _close(evaluate_spec((2, 2.0, 1.0, 1.0, True), x),
           np.exp(-np.clip(s - 1, 0, None) ** 2 / 8.0))
    _close(evaluate_spec((3, 0.2, 1.0, 1.0, True), x),
           np.clip(1 - 0.2 * np.clip(s - 1, 0, None), 0, None))
    _close(evaluate_spec((4, 0.7, 0.0, 1.0, False), x), (1 + np.maximum(x, 0)) ** -0.7)
    _close(evaluate_spec((5, 1.5, 4.0, 1.0, False), x), np.exp(-(np.maximum(x, 0) / 4) ** 1.5))
    assert evaluate_spec((0, 0.0, 0.0, 1.0, False), x).tolist() == [1.0] * 5
    # rows of a kernel table are accepted as specs too
    row = DecayPolicy({"a": Exponential(beta=0.3)}).kernel_table(["a"])[0]
    _close(evaluate_spec(tuple(row), x), Exponential(beta=0.3)(x))


@pytest.mark.parametrize("bad", [(9, 0.0, 0.0, 1.0, False), (1, 0.1, 0.0), "spec",
                                 (1.5, 0.1, 0.0, 1.0, False)])
def test_evaluate_spec_rejects_bad_specs(bad):
    with pytest.raises(QueryError):
        evaluate_spec(bad, [1.0])


# ---------------------------------------------------------------------------------------
# other engines' documented parametrisations
# ---------------------------------------------------------------------------------------

# Elasticsearch function_score decay functions (same text in Milvus' decay ranker docs):
#   gauss:  exp(-max(0, |x-origin| - offset)^2 / (2 sigma^2)),  sigma^2 = -scale^2 / (2 ln decay)
#   exp:    exp(lambda * max(0, |x-origin| - offset)),          lambda = ln(decay) / scale
#   linear: max((s - max(0, |x-origin| - offset)) / s, 0),       s = scale / (1 - decay)
def es_gauss(dist, scale, offset, decay):
    sigma2 = -scale ** 2 / (2 * math.log(decay))
    return math.exp(-max(0.0, abs(dist) - offset) ** 2 / (2 * sigma2))


def es_exp(dist, scale, offset, decay):
    return math.exp(math.log(decay) / scale * max(0.0, abs(dist) - offset))


def es_linear(dist, scale, offset, decay):
    s = scale / (1.0 - decay)
    return max((s - max(0.0, abs(dist) - offset)) / s, 0.0)


ES = [(Exponential, es_exp), (Gaussian, es_gauss), (Linear, es_linear)]


@pytest.mark.parametrize("cls, ref", ES)
@pytest.mark.parametrize("scale, offset, decay", [(5.0, 5.0, 0.5), (10.0, 0.0, 0.33),
                                                 (2.0, 1.0, 0.9), (30.0, 7.0, 0.01)])
def test_elasticsearch_documented_points(cls, ref, scale, offset, decay):
    d = cls.from_scale(scale, offset=offset, decay=decay)
    assert d.symmetric
    # at |x - origin| = offset + scale the score equals `decay`, on both sides
    for x in (offset + scale, -(offset + scale)):
        assert float(d(x)) == pytest.approx(decay, rel=1e-12)
    # inside the offset the score is 1
    assert d(np.array([0.0, offset, -offset])).tolist() == [1.0, 1.0, 1.0]
    xs = np.linspace(-5 * (offset + scale), 5 * (offset + scale), 41)
    _close(d(xs), [ref(x, scale, offset, decay) for x in xs], rtol=1e-12, atol=1e-15)


def test_elasticsearch_linear_hits_zero_where_documented():
    # linear reaches 0 at origin ± (offset + scale / (1 - decay)) and stays there
    d = Linear.from_scale(50, offset=5, decay=0.5)
    assert float(d(5 + 100)) == 0.0
    assert float(d(5 + 99)) > 0.0
    assert float(d(-1000)) == 0.0


def test_elasticsearch_example_from_docs():
    # origin 40, offset 5, scale 5, decay 0.5: all three curves give 0.5 at 30 and 50
    for cls, _ in ES:
        d = cls.from_scale(5, offset=5, decay=0.5)
        assert d(np.array([30 - 40, 50 - 40])) == pytest.approx([0.5, 0.5], rel=1e-12)


# Qdrant score-boosting decay expressions (lib/segment rescore_formula):
#   lambda_lin = (1 - midpoint) / scale;   lin   = max(0, 1 - lambda * |x - target|)
#   lambda_exp = ln(midpoint) / scale;     exp   = exp(lambda * |x - target|)
#   lambda_gau = ln(midpoint) / scale^2;   gauss = exp(lambda * (x - target)^2)
def qdrant_lin(diff, scale, midpoint):
    return max(0.0, -(1 - midpoint) / scale * abs(diff) + 1.0)


def qdrant_exp(diff, scale, midpoint):
    return math.exp(math.log(midpoint) / scale * abs(diff))


def qdrant_gauss(diff, scale, midpoint):
    return math.exp(math.log(midpoint) / scale ** 2 * diff * diff)


QDRANT = [(Exponential, qdrant_exp), (Gaussian, qdrant_gauss), (Linear, qdrant_lin)]


@pytest.mark.parametrize("cls, ref", QDRANT)
@FAST
@given(scale=positive, midpoint=fraction)
def test_qdrant_formulas(cls, ref, scale, midpoint):
    d = cls.from_midpoint(scale, midpoint=midpoint)
    assert d.symmetric
    assert float(d(scale)) == pytest.approx(midpoint, rel=1e-12)
    assert float(d(-scale)) == pytest.approx(midpoint, rel=1e-12)
    xs = np.linspace(-4 * scale, 4 * scale, 17)
    _close(d(xs), [ref(x, scale, midpoint) for x in xs], rtol=1e-11, atol=1e-15)


def test_qdrant_defaults_and_linear_zero_midpoint():
    assert float(Exponential.from_midpoint(1.0)(1.0)) == pytest.approx(0.5, rel=1e-15)
    assert float(Linear.from_midpoint(10.0, midpoint=0.0)(10.0)) == 0.0
    with pytest.raises(QueryError, match="midpoint"):
        Linear.from_midpoint(10.0, midpoint=1.0)
    with pytest.raises(QueryError, match="midpoint"):
        Exponential.from_midpoint(10.0, midpoint=0.0)


def test_seconds_scale_like_qdrant_datetime_example():
    # Qdrant's recency example: scale 86400 seconds, midpoint 0.5 -> half a day later 0.5
    d = Exponential.from_midpoint(86400, midpoint=0.5, unit="seconds", symmetric=False)
    assert float(d(1.0)) == pytest.approx(0.5, rel=1e-12)


# ---------------------------------------------------------------------------------------
# chronofy parity (the paper's reference package), skipped when absent
# ---------------------------------------------------------------------------------------

def _chronofy_scores(decay_fn, ages_days):
    chronofy = pytest.importorskip("chronofy")
    now = datetime(2026, 3, 15, 12, 0, 0)
    facts = [chronofy.TemporalFact(content="c", timestamp=now - timedelta(days=a),
                                   fact_type="t") for a in ages_days]
    got_ages = [(now - f.timestamp).total_seconds() / 86400.0 for f in facts]
    return np.array(got_ages), np.array([decay_fn.compute(f, now) for f in facts])


CHRONOFY_AGES = [0.0, 0.01, 0.5, 1.0, 3.25, 10.0, 365.0, -2.0]


@pytest.mark.parametrize("unit", ["days", "hours", "seconds"])
def test_chronofy_parity(unit):
    chronofy = pytest.importorskip("chronofy")
    ages_ = CHRONOFY_AGES if unit == "days" else [a / 50 for a in CHRONOFY_AGES]
    cases = [
        (chronofy.ExponentialDecay(beta={"t": 0.3}, time_unit=unit),
         Exponential(beta=0.3, unit=unit)),
        (chronofy.HalfLifeDecay(half_life={"t": 4.0}, time_unit=unit), HalfLife(4.0, unit=unit)),
        (chronofy.LinearDecay(rate={"t": 0.05}, time_unit=unit), Linear(rate=0.05, unit=unit)),
        (chronofy.PowerLawDecay(exponent={"t": 1.3}, time_unit=unit), PowerLaw(1.3, unit=unit)),
        (chronofy.WeibullDecay(scale={"t": 6.0}, shape={"t": 1.7}, time_unit=unit),
         Weibull(shape=1.7, scale=6.0, unit=unit)),
    ]
    for theirs, ours in cases:
        age_days, want = _chronofy_scores(theirs, ages_)
        _close(ours(age_days), want, rtol=1e-12, atol=1e-15)


def test_chronofy_derived_quantities():
    chronofy = pytest.importorskip("chronofy")
    theirs = chronofy.ExponentialDecay(beta={"t": 0.2})
    assert Exponential(beta=0.2).half_life == pytest.approx(theirs.half_life("t"), rel=1e-15)
    kappa = chronofy.ExponentialDecay.from_mean_reversion_rate({"t": 0.35})
    assert Exponential.from_mean_reversion_rate(0.35).beta == kappa.get_beta("t")
    assert HalfLife(9.0).beta == pytest.approx(
        chronofy.HalfLifeDecay(half_life={"t": 9.0}).get_beta("t"), rel=1e-15)
    assert Linear(rate=0.04).expiry == pytest.approx(
        chronofy.LinearDecay(rate={"t": 0.04}).expiry_time("t"), rel=1e-15)


# ---------------------------------------------------------------------------------------
# evaluation edge cases
# ---------------------------------------------------------------------------------------

ALL_FAMILIES = [Exponential(beta=0.2, offset=1), HalfLife(3), Gaussian(sigma=2, offset=1),
                Linear(rate=0.1, offset=1), PowerLaw(0.8), Weibull(shape=0.7, scale=5),
                NoDecay(), Exponential(beta=0.2, symmetric=True, unit="hours")]


@pytest.mark.parametrize("d", ALL_FAMILIES, ids=repr)
def test_nan_inf_shapes_and_dtypes(d):
    out = d([np.nan, 0.0, np.inf, -np.inf])
    assert out.dtype == np.float64
    assert np.isnan(out[0]) and out[1] == 1.0
    assert out[2] == (1.0 if isinstance(d, NoDecay) else 0.0)
    assert out[3] == (0.0 if d.symmetric else 1.0)
    assert np.isnan(evaluate_spec(d._kernel_spec(), [np.nan])[0])
    scalar = d(2)
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar.dtype == np.float64
    grid = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert d(grid).shape == (3, 4)
    assert d(np.array([])).shape == (0,)
    td = np.array([1, 36], dtype="timedelta64[h]")
    _close(d(td), d([1 / 24, 1.5]), rtol=1e-15)
    _close(d([timedelta(hours=36)]), d([1.5]), rtol=1e-15)
    assert np.all((d(np.linspace(-100, 100, 101)) >= 0) & (d(np.linspace(-100, 100, 101)) <= 1))
    assert d.evaluate(3.0) == d(3.0)


@pytest.mark.parametrize("d", ALL_FAMILIES, ids=repr)
def test_non_increasing_in_age(d):
    x = np.linspace(0, 500, 2001)
    assert np.all(np.diff(d(x)) <= 0)


def test_huge_ages_do_not_warn():
    # pytest runs with warnings as errors in CI; overflow in (a/λ)^k or d² must stay quiet
    with np.errstate(all="raise"):
        assert Weibull(shape=5, scale=1e-2)(1e300) == 0.0
        assert Gaussian(sigma=1e-2)(1e300) == 0.0
        assert evaluate_spec((5, 5.0, 1e-2, 86400.0, False), 1e300) == 0.0


@pytest.mark.parametrize("bad", ["ten", [1, "x"], {"a": 1}, np.array([1j])])
def test_bad_ages(bad):
    with pytest.raises(QueryError, match="ages"):
        Exponential(beta=1.0)(bad)


# ---------------------------------------------------------------------------------------
# construction errors
# ---------------------------------------------------------------------------------------

BAD_NUMBERS = [0, -1.0, math.nan, math.inf, -math.inf, "1", None, True]


@pytest.mark.parametrize("value", BAD_NUMBERS)
@pytest.mark.parametrize("make", [
    lambda v: Exponential(half_life=v),
    lambda v: HalfLife(v),
    lambda v: Gaussian(sigma=v),
    lambda v: Gaussian(half_life=v),
    lambda v: Linear(rate=v),
    lambda v: Linear(scale=v),
    lambda v: PowerLaw(v),
    lambda v: Weibull(shape=v, scale=1.0),
    lambda v: Weibull(shape=1.0, scale=v),
    lambda v: Exponential.from_scale(v),
    lambda v: Gaussian.from_midpoint(v),
])
def test_bad_parameters(make, value):
    with pytest.raises(QueryError) as info:
        make(value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, ChronoError)


# β and κ may be 0 (no decay, chronofy's invariant facts); every other bad number is refused
@pytest.mark.parametrize("value", [v for v in BAD_NUMBERS if v != 0] + [-1e-300])
@pytest.mark.parametrize("make, name", [
    (lambda v: Exponential(beta=v), "beta"),
    (lambda v: Exponential.from_mean_reversion_rate(v), "kappa"),
])
def test_bad_rates(make, name, value):
    with pytest.raises(QueryError, match=name) as info:
        make(value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, ChronoError)


@pytest.mark.parametrize("make", [
    lambda v: Exponential(beta=1.0, offset=v),
    lambda v: Gaussian(sigma=1.0, offset=v),
    lambda v: Linear(rate=1.0, offset=v),
])
@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, "0"])
def test_bad_offsets(make, value):
    with pytest.raises(QueryError, match="offset"):
        make(value)


def test_zero_offset_allowed():
    assert Exponential(beta=1.0, offset=0).offset == 0.0


@pytest.mark.parametrize("make, words", [
    (lambda: Exponential(), "neither"),
    (lambda: Exponential(beta=1.0, half_life=2.0), "both"),
    (lambda: Gaussian(), "neither"),
    (lambda: Gaussian(sigma=1.0, half_life=1.0), "both"),
    (lambda: Linear(), "neither"),
    (lambda: Linear(rate=0.1, scale=10.0), "both"),
    (lambda: Linear(rate=0.1, decay=0.3), "decay only applies"),
])
def test_exactly_one_parameterisation(make, words):
    with pytest.raises(QueryError, match=words):
        make()


@pytest.mark.parametrize("decay", [0.0, 1.0, -0.5, 1.5, math.nan])
@pytest.mark.parametrize("make", [
    lambda dec: Linear(scale=10, decay=dec),
    lambda dec: Exponential.from_scale(10, decay=dec),
    lambda dec: Gaussian.from_scale(10, decay=dec),
    lambda dec: Linear.from_scale(10, decay=dec),
])
def test_decay_outside_open_unit_interval(make, decay):
    with pytest.raises(QueryError, match=r"decay must be a number in \(0, 1\)"):
        make(decay)


@pytest.mark.parametrize("unit", ["day", "minutes", "", None, 24])
def test_unknown_unit(unit):
    with pytest.raises(QueryError, match="unit must be one of"):
        Exponential(beta=1.0, unit=unit)


def test_symmetric_must_be_bool():
    with pytest.raises(QueryError, match="symmetric"):
        HalfLife(3, symmetric="yes")


def test_error_messages_name_the_parameter():
    with pytest.raises(QueryError, match=r"Exponential: beta \(β\) must be a finite number >= 0, "
                                         r"got -2"):
        Exponential(beta=-2)
    with pytest.raises(QueryError, match=r"Weibull: scale \(λ\)"):
        Weibull(shape=1, scale=0)


# ---------------------------------------------------------------------------------------
# value semantics
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d", ALL_FAMILIES + [Linear(scale=3, decay=0.2, unit="seconds"),
                                              Gaussian(half_life=4, symmetric=True)], ids=repr)
def test_round_trips(d):
    ns = {c.__name__: c for c in (Exponential, HalfLife, Gaussian, Linear, PowerLaw, Weibull,
                                  NoDecay)}
    assert eval(repr(d), ns) == d
    assert Decay.from_dict(json.loads(json.dumps(d.to_dict()))) == d
    assert type(d).from_dict(d.to_dict()) == d
    assert pickle.loads(pickle.dumps(d)) == d
    assert copy.deepcopy(d) == d
    assert hash(Decay.from_dict(d.to_dict())) == hash(d)


def test_equality_and_immutability():
    assert Exponential(half_life=7) == Exponential(beta=LN2 / 7)
    assert Exponential(beta=1.0) != Exponential(beta=1.0, unit="hours")
    assert Exponential(beta=1.0) != Exponential(beta=1.0, symmetric=True)
    assert HalfLife(7) != Exponential(half_life=7)  # same curve, different family
    assert NoDecay() == NoDecay()
    assert len({Exponential(beta=1.0), Exponential(beta=1.0), NoDecay()}) == 2
    assert Exponential(beta=1.0) != "exp"
    d = Exponential(beta=1.0)
    with pytest.raises(AttributeError):
        d._beta = 2.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        d.beta = 2.0  # type: ignore[misc]


@pytest.mark.parametrize("bad", [{"family": "cosine"}, {"beta": 1.0}, "exponential",
                                 {"family": "exponential", "beta": 1.0, "colour": "red"},
                                 {"family": "exponential", "beta": -1.0}])
def test_from_dict_rejects_bad_descriptions(bad):
    with pytest.raises(QueryError):
        Decay.from_dict(bad)


def test_from_dict_on_a_subclass_checks_the_family():
    with pytest.raises(QueryError, match="Gaussian.from_dict"):
        Gaussian.from_dict(Exponential(beta=1.0).to_dict())


# ---------------------------------------------------------------------------------------
# DecayPolicy
# ---------------------------------------------------------------------------------------

@pytest.fixture
def policy():
    return DecayPolicy({"vital_sign": HalfLife(6, unit="hours"),
                        "diagnosis": Exponential(half_life=180),
                        "news": Gaussian(half_life=14, symmetric=True)},
                       default=Linear(rate=0.01))


def test_policy_lookup(policy):
    assert policy["vital_sign"] == HalfLife(6, unit="hours")
    assert policy["unknown"] == Linear(rate=0.01)
    assert policy.knows("unknown") and "unknown" not in policy
    assert "news" in policy and sorted(policy) == ["diagnosis", "news", "vital_sign"]
    assert len(policy) == 3
    strict = DecayPolicy({"a": NoDecay()}, default=None)
    assert not strict.knows("b") and strict.knows("a")
    with pytest.raises(NotFoundError, match="'b'") as info:
        strict["b"]
    assert isinstance(info.value, KeyError)
    assert "no decay profile for fact type 'b'" in str(info.value)
    assert DecayPolicy()["anything"] == NoDecay()
    with pytest.raises(TypeError):
        policy.profiles["x"] = NoDecay()  # type: ignore[index]


def test_policy_evaluate_matches_per_item(policy):
    rng = np.random.default_rng(7)
    names = rng.choice(["vital_sign", "diagnosis", "news", "other"], size=500)
    age = rng.uniform(-30, 400, size=500)
    got = policy.evaluate(age, names)
    want = [float(policy[n](a)) for a, n in zip(age, names)]
    # 1e-15: NumPy's SIMD exp on arrays and its scalar exp may differ in the last bit
    _close(got, want, rtol=1e-15, atol=0)
    # lists and object arrays too, and a single name broadcasts
    _close(policy.evaluate(age.tolist(), names.tolist()), got, rtol=0, atol=0)
    _close(policy.evaluate(age, "diagnosis"), Exponential(half_life=180)(age), rtol=0, atol=0)
    grid = policy.evaluate(np.ones((2, 3)), np.array([["news"], ["other"]]))
    assert grid.shape == (2, 3)
    assert policy.evaluate([], []).shape == (0,)


def test_policy_evaluate_unknown_and_bad_types():
    strict = DecayPolicy({"a": HalfLife(1)}, default=None)
    with pytest.raises(NotFoundError, match=r"fact_types\[2\] = 'zz'"):
        strict.evaluate([1, 2, 3, 4], ["a", "a", "zz", "yy"])
    with pytest.raises(QueryError, match=r"fact_types\[1\]"):
        strict.evaluate([1, 2], ["a", None])
    with pytest.raises(QueryError, match="fact_types"):
        strict.evaluate([1, 2], np.array([1, 2]))


def test_kernel_table(policy):
    names = ["news", "other", "vital_sign", "diagnosis"]
    table = policy.kernel_table(names)
    assert table.shape == (4, 5) and table.dtype == np.float64
    assert table[0].tolist() == [2.0, Gaussian(half_life=14).sigma, 0.0, 1.0, 1.0]
    assert table[1].tolist() == [3.0, 0.01, 0.0, 1.0, 0.0]
    assert table[2].tolist() == [1.0, LN2 / 6, 0.0, 24.0, 0.0]
    x = np.linspace(-10, 300, 50)
    for row, name in zip(table, names):
        _close(evaluate_spec(tuple(row), x), policy[name](x), rtol=1e-12)
    assert policy.kernel_table([]).shape == (0, 5)
    strict = DecayPolicy({"a": NoDecay()}, default=None)
    with pytest.raises(NotFoundError, match=r"'b' \(fact_type_names\[1\]\)"):
        strict.kernel_table(["a", "b", "c"])
    with pytest.raises(QueryError):
        strict.kernel_table("a")


def test_policy_persistence(policy):
    data = json.loads(json.dumps(policy.to_dict()))
    assert DecayPolicy.from_dict(data) == policy
    strict = DecayPolicy({"a": Weibull(2, 3)}, default=None)
    assert DecayPolicy.from_dict(strict.to_dict()) == strict
    assert DecayPolicy.from_dict(strict.to_dict()).default is None
    assert pickle.loads(pickle.dumps(policy)) == policy
    assert hash(DecayPolicy.from_dict(data)) == hash(policy)
    assert policy != strict and policy != 3
    with pytest.raises(QueryError, match="version"):
        DecayPolicy.from_dict({**policy.to_dict(), "version": 99})
    with pytest.raises(QueryError):
        DecayPolicy.from_dict({"profiles": {"a": {"family": "nope"}}})
    with pytest.raises(QueryError):
        DecayPolicy.from_dict([1, 2])


def test_from_half_lives():
    p = DecayPolicy.from_half_lives({"news": 7, "law": 3650}, default=None)
    assert p["news"] == Exponential(half_life=7)
    assert float(p.evaluate(3650, "law")) == pytest.approx(0.5, rel=1e-12)
    assert DecayPolicy.from_half_lives({"x": 6}, unit="hours")["x"].unit == "hours"
    with pytest.raises(QueryError, match="fact type 'bad'"):
        DecayPolicy.from_half_lives({"bad": 0})
    with pytest.raises(QueryError):
        DecayPolicy.from_half_lives([("a", 1)])  # type: ignore[arg-type]


@pytest.mark.parametrize("profiles, default", [
    ({"a": 1.0}, NoDecay()),
    ({"": NoDecay()}, NoDecay()),
    ({3: NoDecay()}, NoDecay()),
    ([("a", NoDecay())], NoDecay()),
    ({}, "none"),
])
def test_policy_rejects_bad_profiles(profiles, default):
    with pytest.raises(QueryError):
        DecayPolicy(profiles, default=default)


def test_parse_decay():
    d = Exponential(half_life=7)
    assert parse_decay(d) == DecayPolicy(default=d)
    assert parse_decay(d)["anything"] is d
    p = DecayPolicy({"a": d})
    assert parse_decay(p) is p
    assert parse_decay(None) == DecayPolicy({}, default=NoDecay())
    assert parse_decay({"a": d}) == DecayPolicy({"a": d})
    with pytest.raises(QueryError, match="got float"):
        parse_decay(0.5)  # type: ignore[arg-type]


def test_docstring_examples():
    result = doctest.testmod(decay_module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 20
