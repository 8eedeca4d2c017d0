"""Decay learned from validity histories (chrono_engine/survival.py): the censored
exponential MLE against its closed form, the Weibull MLE against scipy's censored fit, the
family choice and the estimates over simulated stores, the Bernoulli-on-age estimator
against ce.fit_beta_bernoulli, the edge cases, the policy and hostile input."""
import doctest
import json
import math

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine import survival
from chrono_engine._time import OPEN_END, US_PER_DAY
from chrono_engine.errors import FitError, NotFoundError
from chrono_engine.synthetic import validity_sample

stats = pytest.importorskip("scipy.stats")  # the [test] extra installs scipy; the package never needs it

Q95 = 3.841458820694124  # χ²₁ 0.95 quantile


def exp_loglik(beta, t, e):
    return e.sum() * math.log(beta) - beta * t.sum()


def weibull_loglik_scipy(k, lam, t, e):
    return float(stats.weibull_min.logpdf(t[e], k, 0, lam).sum() + stats.weibull_min.logsf(t[~e], k, 0, lam).sum())


def test_chi2_helpers_match_scipy():
    for x in (1e-6, 0.5, 3.84, 10.0, 50.0):
        assert survival.chi2_sf1(x) == pytest.approx(stats.chi2.sf(x, 1), rel=1e-12)
    for level in (0.5, 0.9, 0.95, 0.99, 0.999):
        assert survival.chi2_quantile1(level) == pytest.approx(stats.chi2.ppf(level, 1), rel=1e-10)
    assert survival.chi2_sf1(0.0) == 1.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exponential_is_the_closed_form_censored_mle(seed):
    t, e, _ = validity_sample(3000, scale=40.0, seed=seed)
    f = ce.fit_validity(t, e)["general"]
    assert f.events == e.sum() and f.exposure == pytest.approx(t.sum(), rel=1e-15)
    assert f.beta == e.sum() / t.sum()
    assert f.loglik_exponential == pytest.approx(exp_loglik(f.beta, t, e), rel=1e-12)
    for eps in (1e-1, 1e-3, 1e-5):  # the closed form maximises the likelihood
        assert exp_loglik(f.beta * (1 + eps), t, e) < f.loglik_exponential
        assert exp_loglik(f.beta * (1 - eps), t, e) < f.loglik_exponential
    # the interval is where the likelihood ratio reaches the χ²₁ quantile, on either side
    lo, hi = f.beta_ci
    assert lo < f.beta < hi
    for b in (lo, hi):
        assert 2 * (f.loglik_exponential - exp_loglik(b, t, e)) == pytest.approx(Q95, rel=1e-9)
    assert f.half_life == pytest.approx(math.log(2) / f.beta)
    assert f.half_life_ci == pytest.approx((math.log(2) / hi, math.log(2) / lo))


@pytest.mark.parametrize("shape, n, censored, seed", [
    (0.7, 5000, 0.3, 0), (1.0, 5000, 0.3, 1), (1.5, 5000, 0.3, 2), (3.0, 2000, 0.6, 3),
    (0.4, 400, 0.1, 4), (1.2, 40, 0.5, 5)])
def test_weibull_mle_agrees_with_scipy_censored_fit(shape, n, censored, seed):
    """scipy.stats.weibull_min.fit(CensoredData, floc=0) is a generic numerical optimiser;
    ours solves the profile score to machine precision, so its likelihood is never lower."""
    t, e, _ = validity_sample(n, shape=shape, scale=25.0, censored=censored, seed=seed)
    f = ce.fit_validity(t, e)["general"]
    k, _, lam = stats.weibull_min.fit(stats.CensoredData(uncensored=t[e], right=t[~e]), floc=0)
    assert f.shape == pytest.approx(k, rel=1e-4)
    assert f.scale == pytest.approx(lam, rel=1e-4)
    assert f.loglik_weibull == pytest.approx(weibull_loglik_scipy(f.shape, f.scale, t, e), rel=1e-12)
    assert f.loglik_weibull >= weibull_loglik_scipy(k, lam, t, e) - 1e-9
    # the profile interval of k: the likelihood ratio at each end is the χ²₁ quantile
    lo, hi = f.shape_ci
    assert lo < f.shape < hi and f.scale_ci[0] < f.scale < f.scale_ci[1]
    for kk in (lo, hi):
        lam_k = (np.sum(t ** kk) / e.sum()) ** (1 / kk)
        assert 2 * (f.loglik_weibull - weibull_loglik_scipy(kk, lam_k, t, e)) == pytest.approx(Q95, rel=1e-6)
    # the exponential is the Weibull at k = 1: the LR statistic compares the same likelihood
    assert f.loglik_exponential == pytest.approx(weibull_loglik_scipy(1.0, 1 / f.beta, t, e), rel=1e-12)
    assert f.lr_statistic == pytest.approx(2 * (f.loglik_weibull - f.loglik_exponential), abs=1e-9)
    assert f.lr_pvalue == pytest.approx(stats.chi2.sf(f.lr_statistic, 1), rel=1e-9, abs=1e-300)
    assert f.aic_exponential == pytest.approx(2 - 2 * f.loglik_exponential)
    assert f.aic_weibull == pytest.approx(4 - 2 * f.loglik_weibull)


def test_intervals_cover_the_truth_about_as_often_as_stated():
    """200 small stores (n = 300): each 95% interval holds the true value in 88-99% of them
    (the binomial spread of 200 draws at 0.95 is ±1.5%; the asymptotic intervals are a
    little liberal at this size)."""
    hits = np.zeros(3)
    for seed in range(200):
        t, e, _ = validity_sample(300, shape=1.0, scale=20.0, seed=seed)
        f = ce.fit_validity(t, e)["general"]
        hits += [f.beta_ci[0] <= 1 / 20 <= f.beta_ci[1], f.shape_ci[0] <= 1.0 <= f.shape_ci[1],
                 f.scale_ci[0] <= 20.0 <= f.scale_ci[1]]
    assert ((hits / 200 >= 0.88) & (hits / 200 <= 0.99)).all(), hits / 200


def test_fifty_simulated_stores_recover_beta_and_pick_the_family():
    """The issue's check: 50 stores of 20k items, ~30% right-censored at random ages, per
    truth (exponential; Weibull k = 0.7 and 1.5): median relative error of β̂ (of k̂ and λ̂
    for the Weibull truths) ≤ 5% and the right family in ≥ 90% of the stores.
    benches/fit_decay_demo.py prints the figures."""
    for shape in (1.0, 0.7, 1.5):
        errs, right = [], 0
        for seed in range(50):
            t, e, _ = validity_sample(20_000, shape=shape, scale=30.0, censored=0.3, seed=1000 + seed)
            assert 0.27 < 1 - e.mean() < 0.33
            f = ce.fit_validity(t, e)["general"]
            if shape == 1.0:
                errs.append(abs(f.beta * 30.0 - 1))
                right += f.family == "exponential"
            else:
                errs.append(max(abs(f.shape / shape - 1), abs(f.scale / 30.0 - 1)))
                right += f.family == "weibull"
        assert np.median(errs) <= 0.05, (shape, np.median(errs))
        assert right >= 45, (shape, right)


def test_bernoulli_beta_is_fit_beta_bernoulli_and_agrees_on_current_status_data():
    t, e, age = validity_sample(20_000, shape=1.0, scale=30.0, seed=7)
    f = ce.fit_validity(t, e, ages=age)["general"]
    assert f.bernoulli_beta == ce.fit_beta_bernoulli(age, ~e)
    # current status (age at the look, still valid) from exponential lifetimes: the
    # Bernoulli MLE estimates the same β as the censored MLE; its standard error is
    # 1 / √I with I = Σ a² e^{-βa} / (1 − e^{-βa}), and the two estimates differ by less
    # than 4 of the larger-of-both errors combined
    b = f.beta
    info = np.sum(age ** 2 * np.exp(-b * age) / -np.expm1(-b * age))
    se = math.hypot(1 / math.sqrt(info), b / math.sqrt(f.events))
    assert abs(f.bernoulli_beta - f.beta) < 4 * se
    assert abs(f.bernoulli_beta * 30 - 1) < 0.05
    # without ages the ended items are seen at the age they ended: chronofy's estimator on
    # (duration, not ended), as the docstring warns (biased upward)
    g = ce.fit_validity(t, e)["general"]
    assert g.bernoulli_beta == ce.fit_beta_bernoulli(t, ~e)
    assert g.bernoulli_beta > f.bernoulli_beta * 1.2
    assert g.beta == f.beta  # ages feed the Bernoulli estimator only


def test_fact_types_are_fitted_separately():
    t1, e1, _ = validity_sample(2000, scale=10.0, seed=1)
    t2, e2, _ = validity_sample(3000, shape=2.0, scale=100.0, seed=2)
    t, e = np.r_[t1, t2], np.r_[e1, e2]
    names = np.array(["news"] * 2000 + ["law"] * 3000)
    perm = np.random.default_rng(0).permutation(5000)
    fit = ce.fit_validity(t[perm], e[perm], names[perm].tolist())
    assert list(fit) == ["law", "news"] and len(fit) == 2 and "news" in fit
    for name, (tt, ee) in {"news": (t1, e1), "law": (t2, e2)}.items():
        alone = ce.fit_validity(tt, ee)["general"]
        assert fit[name].beta == pytest.approx(alone.beta, rel=1e-14)
        assert fit[name].shape == pytest.approx(alone.shape, rel=1e-10)
    assert fit["news"].family == "exponential" and fit["law"].family == "weibull"
    with pytest.raises(NotFoundError, match="no fit for fact type 'sports'"):
        fit["sports"]
    # names from Arrow and NumPy arrays give the same fit
    assert ce.fit_validity(t[perm], e[perm], pa.array(names[perm].tolist()))["law"] == fit["law"]


def test_policy_is_a_ready_decay_policy():
    t1, e1, _ = validity_sample(5000, scale=10.0, seed=3)
    t2, e2, _ = validity_sample(5000, shape=0.6, scale=50.0, seed=4)
    t = np.r_[t1, t2, [3.0, 5.0]]
    e = np.r_[e1, e2, [False, False]]
    names = ["news"] * 5000 + ["docs"] * 5000 + ["static"] * 2
    fit = ce.fit_validity(t, e, names)
    pol = fit.policy()
    assert isinstance(pol, ce.DecayPolicy) and fit.decay_policy() == pol
    assert pol["news"] == ce.Exponential(beta=fit["news"].beta)
    assert pol["docs"] == ce.Weibull(shape=fit["docs"].shape, scale=fit["docs"].scale)
    assert pol["static"] == ce.NoDecay() and pol["unseen"] == ce.NoDecay()
    np.testing.assert_allclose(pol.evaluate([10.0, 10.0], ["news", "docs"]),
                               [math.exp(-10 * fit["news"].beta),
                                math.exp(-(10 / fit["docs"].scale) ** fit["docs"].shape)], rtol=1e-12)
    assert fit.policy("exponential")["docs"] == ce.Exponential(beta=fit["docs"].beta)
    assert fit.policy("weibull")["news"] == ce.Weibull(shape=fit["news"].shape, scale=fit["news"].scale)
    assert fit.policy(default=None).default is None
    with pytest.raises(FitError, match="family must be one of"):
        fit.policy("gaussian")
    # the policy works in an engine
    eng = ce.Engine(4, decay=pol)
    assert eng.decay == pol


def test_summary_repr_and_dict():
    t, e, _ = validity_sample(3000, shape=1.5, scale=30.0, seed=9)
    fit = ce.fit_validity(t, e, ["a"] * 1500 + ["b"] * 1500)
    text = fit.summary()
    assert text.splitlines()[0].split()[:4] == ["fact", "type", "n", "events"]
    assert "weibull" in text and "p < 0.01" in text and str(fit) == text
    assert repr(fit).startswith("ValidityFit({'a': Weibull(k=")
    d = json.loads(json.dumps(fit.to_dict()))
    assert d["level"] == 0.95 and d["fact_types"]["a"]["events"] == fit["a"].events
    assert d["fact_types"]["b"]["half_life"] == pytest.approx(fit["b"].half_life)


# -- edge cases ------------------------------------------------------------------------

def test_no_events_means_no_decay():
    f = ce.fit_validity([1.0, 2.0, 5.0], [False, False, False])["general"]
    assert (f.beta, f.events, f.family, f.loglik_exponential) == (0.0, 0, "none", 0.0)
    assert f.beta_ci == pytest.approx((0.0, Q95 / 2 / 8.0))      # βT ≤ q/2
    assert math.isnan(f.shape) and math.isnan(f.lr_pvalue) and f.half_life == math.inf
    assert f.bernoulli_beta == 0.0 and f.decay() == ce.NoDecay() and f.decay("exponential") == ce.NoDecay()
    assert "none" in repr(ce.fit_validity([1.0], [False]))


def test_all_ended_fits_both_families():
    t = np.random.default_rng(0).exponential(10.0, 500)
    f = ce.fit_validity(t, np.ones(500, bool))["general"]
    assert f.beta == 500 / t.sum() and f.censored == 0
    k, _, lam = stats.weibull_min.fit(t, floc=0)
    assert f.shape == pytest.approx(k, rel=1e-4) and f.scale == pytest.approx(lam, rel=1e-4)
    assert f.bernoulli_beta == ce.fit_beta_bernoulli(t, np.zeros(500, bool)) == 50.0  # chronofy's bound


@pytest.mark.parametrize("t, e", [([4.0], [True]), ([2.0, 2.0, 1.0], [True, True, False]),
                                  ([3.0, 3.0], [True, True])])
def test_weibull_not_identified_falls_back_to_exponential(t, e):
    """A single event, or every event at the longest duration: the Weibull likelihood grows
    without bound as k → ∞, so its fields are NaN and the exponential is chosen."""
    f = ce.fit_validity(t, e)["general"]
    assert f.beta == sum(e) / sum(t) and f.family == "exponential"
    assert math.isnan(f.shape) and math.isnan(f.scale) and math.isnan(f.lr_pvalue)
    assert f.decay() == ce.Exponential(beta=f.beta)
    with pytest.raises(FitError, match="do not identify a Weibull"):
        f.decay("weibull")
    with pytest.raises(FitError, match="do not identify a Weibull"):
        ce.fit_validity(t, e).policy("weibull")


def test_zero_durations():
    t = np.array([0.0, 0.0, 2.0, 3.0, 7.0, 0.0])
    e = np.array([True, True, True, False, True, False])
    f = ce.fit_validity(t, e)["general"]
    # ended at 0: left out of the likelihoods (counted); censored at 0: adds nothing
    assert (f.n, f.events, f.zero_ended, f.censored) == (6, 2, 2, 2)
    assert f.beta == 2 / 12
    ref = ce.fit_validity(t[2:5], e[2:5])["general"]
    assert (f.beta, f.shape, f.loglik_weibull) == (ref.beta, ref.shape, ref.loglik_weibull)
    assert f.bernoulli_beta == ce.fit_beta_bernoulli(t, ~e)
    nothing = ce.fit_validity([0.0, 0.0], [True, False])["general"]
    assert (nothing.beta, nothing.beta_ci, nothing.family) == (0.0, (0.0, math.inf), "none")


def test_timedelta_durations_are_days():
    t = np.array([36, 48, 60], "timedelta64[h]")
    assert ce.fit_validity(t, [True, False, True])["general"].exposure == 6.0


# -- from a store's intervals -------------------------------------------------------------

def test_intervals_give_durations_events_and_ages():
    day = US_PER_DAY
    now = 100 * day
    vf = np.array([0, 10, 20, 50, 150, 90], np.int64) * day
    vt = np.array([30 * day, OPEN_END, 120 * day, 100 * day, OPEN_END, 95 * day], np.int64)
    names = ["a", "a", "b", "b", "a", "b"]
    fit = ce.fit_validity_intervals(vf, vt, names, now_us=now)
    # item 4 starts after now: skipped; item 3 ends exactly at now: ended
    ref = ce.fit_validity([30, 90, 80, 50, 5], [True, False, False, True, True], ["a", "a", "b", "b", "b"],
                          ages=[100, 90, 80, 50, 10])
    assert fit.to_dict() == ref.to_dict()
    # null valid_to is open, times may be any column the time module reads
    vt_null = pa.array([30 * day, None, 120 * day, 100 * day, None, 95 * day], pa.int64())
    assert ce.fit_validity_intervals(vf, vt_null, names, now_us="1970-04-11").to_dict() == ref.to_dict()
    # "everything known" as now: OPEN_END, with starts near year 1, does not overflow
    far = ce.fit_validity_intervals([-62_135_596_800_000_000], [OPEN_END], None, now_us=OPEN_END)
    assert far["general"].exposure == pytest.approx((OPEN_END + 62_135_596_800_000_000) / day)


@pytest.mark.parametrize("vf, vt, now, match", [
    ([0, 5], [10], 20, "equal length"),
    ([0, 5], [10, 4], 20, r"valid_to\[1\] is 4 µs, valid_from\[1\] is 5 µs"),
    ([30, 40], [OPEN_END, OPEN_END], 20, "no item is valid from at or before now_us"),
    ([0, "x"], [10, 20], 20, "valid_from"),
    ([0], [10], "not a time", "now_us"),
    ([0], [10], None, "now_us"),
])
def test_intervals_hostile(vf, vt, now, match):
    with pytest.raises(FitError, match=match):
        ce.fit_validity_intervals(vf, vt, now_us=now)


# -- hostile input ------------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs, match", [
    (([1.0, float("nan")], [True, False]), {}, r"durations\[1\] is nan"),
    (([1.0, 2.0, float("inf")], [True, False, True]), {}, r"durations\[2\] is inf"),
    (([1.0, -2.0], [True, False]), {}, r"durations must be finite and >= 0 \(days\): durations\[1\] is -2.0"),
    (([[1.0, 2.0]], [True, False]), {}, r"durations must be 1-D .* shape \(1, 2\)"),
    (([1.0, 2.0], [[True, False]]), {}, r"ended must be 1-D .* shape \(1, 2\)"),
    (([1.0, 2.0], [True]), {}, "durations and ended must have equal length, got 2 and 1"),
    (([1.0, 2.0], [1, 0]), {}, r"ended must be booleans .* dtype int64; ended\[0\] is 1"),
    (([1.0, 2.0], [True, None]), {}, r"ended must be booleans .* ended\[1\] is NoneType None"),
    (([1.0, 2.0], ["yes", "no"]), {}, r"ended must be booleans .* dtype <U3"),
    (([], []), {}, "durations must not be empty"),
    ((["a", "b"], [True, False]), {}, "durations must be numbers of days, got dtype <U1"),
    (([True, False], [True, False]), {}, "durations must be numbers of days, got dtype bool"),
    (([1.0, 2.0], [True, False], ["a"]), {}, "one name per item: 1 names for 2 items"),
    (([1.0, 2.0], [True, False], ["a", 3]), {}, r"fact_types\[1\] must be a non-empty str, got 3"),
    (([1.0, 2.0], [True, False], ["a", ""]), {}, r"fact_types\[1\] must be a non-empty str"),
    (([1.0, 2.0], [True, False], "news"), {}, "the single str 'news'"),
    (([1.0, 2.0], [True, False], np.array([1, 2])), {}, "fact_types must be strings, got dtype int64"),
    (([1.0, 2.0], [True, False], [1, 2]), {}, r"fact_types\[0\] must be a non-empty str, got 1"),
    (([1.0, 2.0], [True, False], [["a"], ["b"]]), {}, "fact_types must be 1-D"),
    (([1.0, 2.0], [True, False]), {"ages": [1.0]}, "ages and durations must have equal length"),
    (([1.0, 2.0], [True, False]), {"ages": [1.0, 1.5]}, r"ages\[1\] is 1.5, durations\[1\] is 2.0"),
    (([1.0, 2.0], [True, False]), {"ages": [1.0, float("nan")]}, r"ages\[1\] is nan"),
    (([1.0], [True]), {"level": 1.0}, r"level must be a number in \(0, 1\), got 1.0"),
    (([1.0], [True]), {"alpha": True}, r"alpha must be a number in \(0, 1\), got True"),
    (([1.0, [2.0, 3.0]], [True, False]), {}, "durations"),
])
def test_hostile_input_is_a_fit_error(args, kwargs, match):
    with pytest.raises(FitError, match=match):
        ce.fit_validity(*args, **kwargs)


def test_doctests():
    failures, tried = doctest.testmod(survival, optionflags=doctest.ELLIPSIS)
    assert tried >= 4 and failures == 0


def test_fact_types_as_an_arrow_dictionary():
    """A store keeps fact types as codes and names: read without a string per item; a name
    listed twice is one group, an unused or bad name that no item uses is ignored."""
    t, e, _ = validity_sample(600, scale=10.0, seed=11)
    codes = np.arange(600) % 3
    words = np.array(["news", "law", "news"])
    ref = ce.fit_validity(t, e, words[codes].tolist())
    dic = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(["news", "law", "news", ""]))
    assert ce.fit_validity(t, e, dic).to_dict() == ref.to_dict()
    chunked = pa.chunked_array([dic.slice(0, 100), dic.slice(100)])
    assert ce.fit_validity(t, e, chunked).to_dict() == ref.to_dict()
    with_null = pa.DictionaryArray.from_arrays(pa.array([0, None, 1], pa.int32()), pa.array(["a", "b"]))
    with pytest.raises(FitError, match=r"fact_types\[1\] must be a non-empty str, got None"):
        ce.fit_validity([1.0, 2.0, 3.0], [True, False, True], with_null)
    empty_name = pa.DictionaryArray.from_arrays(pa.array([0, 0, 1], pa.int32()), pa.array(["a", ""]))
    with pytest.raises(FitError, match=r"fact_types\[2\] must be a non-empty str, got ''"):
        ce.fit_validity([1.0, 2.0, 3.0], [True, False, True], empty_name)
    with pytest.raises(FitError, match="2 names for 3 items"):
        ce.fit_validity([1.0, 2.0, 3.0], [True, False, True], empty_name.slice(0, 2))
    # the intervals route drops items not yet valid, and the groups they leave empty
    day = US_PER_DAY
    fit = ce.fit_validity_intervals([0, 50 * day], [10 * day, OPEN_END],
                                    pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["a", "b"])),
                                    now_us=20 * day)
    assert list(fit) == ["a"]
