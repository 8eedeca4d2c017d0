"""The certified plan's metadata pass (Kernels::bound_rows) against NumPy, on every compiled
kernel variant: validity, penalty, the bound and the rows kept, for groups of 1-64 queries
with every decay family, bitemporal edges, deprecated rows, tau and type masks.

Exponential decay is computed in factorised form (one exp per row), an upper bound of the
direct value within ~1e-11 relative: for those rows the kernel's validity and bound may sit
one float / a hair above the reference, and rows whose bound ties theta within that margin
may be kept in addition. Everything else is compared for equality.

Internal: the kernels are called on the engine's compiled store, reached through
tests/_internal.py."""
import numpy as np
import pytest

import chrono_engine as ce
from _internal import core as core_of
from chrono_engine import _core

VARIANTS = ce.build_info()["simd_available"]
DAY = 86_400_000_000
OPEN_END = np.iinfo(np.int64).max


def _round_up_f32(x):
    f = x.astype(np.float32)
    up = np.nextafter(f, np.float32(np.inf))
    return np.where(f.astype(np.float64) < x, up, f)


@pytest.fixture(scope="module")
def store():
    rng = np.random.default_rng(5)
    n = 3000
    fams = [ce.Exponential(half_life=30), ce.Gaussian(half_life=200), ce.Linear(rate=0.001),
            ce.PowerLaw(0.5), ce.Weibull(1.5, 400), ce.NoDecay(),
            ce.Gaussian(half_life=100, symmetric=True), ce.Exponential(half_life=60, unit="hours"),
            ce.Exponential(half_life=2, offset=10), ce.Exponential(half_life=0.01),
            ce.Exponential(half_life=20, symmetric=True)]
    names = [f"t{i}" for i in range(len(fams))]
    eng = ce.Engine(8, decay=ce.DecayPolicy(dict(zip(names, fams)), default=None))
    t0 = 1_600_000_000 * 1_000_000
    vf = t0 + rng.integers(-400, 400, n) * DAY
    life = rng.integers(1, 300, n) * DAY
    vt = np.where(rng.random(n) < 0.3, OPEN_END, vf + life)
    ing = vf + rng.integers(0, 5, n) * DAY
    ret = np.where(rng.random(n) < 0.2, ing + rng.integers(1, 200, n) * DAY, OPEN_END)
    data = {
        "vector": rng.standard_normal((n, 8)).astype(np.float32),
        "valid_from": vf.astype("datetime64[us]"),
        "valid_to": np.where(vt == OPEN_END, np.datetime64("NaT", "us"), vt.astype("datetime64[us]")),
        "observed_at": (vf + rng.integers(-30, 30, n) * DAY).astype("datetime64[us]"),
        "ingested_at": ing.astype("datetime64[us]"),
        "retracted_at": np.where(ret == OPEN_END, np.datetime64("NaT", "us"), ret.astype("datetime64[us]")),
        "reliability": rng.uniform(0.05, 1.0, n).astype(np.float32),
        "fact_type": np.array(names)[rng.integers(0, len(names), n)],
        "deprecated": rng.random(n) < 0.2,
    }
    eng.ingest(data)
    return eng, t0


def _reference(eng, rows, t, K, X1, X2, theta, a, b, tau, out_pen, latest, mask, fut_pen=None):
    cols = core_of(eng).columns_at(rows)
    table = eng.decay.kernel_table(list(eng.fact_types))
    obs = cols["observed_at"].astype(np.float64)
    age = (t[None, :] - obs[:, None]) / float(DAY)
    dec = np.empty_like(age)
    for code in np.unique(cols["fact_type"]):
        sel = cols["fact_type"] == code
        dec[sel] = _core.decay_eval(age[sel].ravel(), table[int(code)]).reshape(-1, len(t))
    v = cols["reliability"].astype(np.float64)[:, None] * dec
    known = (cols["ingested_at"][:, None] <= K) & (K < cols["retracted_at"][:, None])
    live = ~(latest & cols["deprecated"].astype(bool))
    inf = (cols["valid_from"][:, None] <= X1) & (cols["valid_to"][:, None] > X2) & live[:, None]
    fut = out_pen if fut_pen is None else fut_pen  # rows not yet valid (valid_from > X1)
    p = np.where(inf, 1.0, np.where(cols["valid_from"][:, None] > X1, fut, out_pen))
    p = np.where(known, p, 0.0)
    p = np.where((v < tau) | np.isnan(v), 0.0, p)
    bound = (a + b * v) * p
    ok = (p > 0) & (bound >= theta)
    if mask is not None:
        ok &= (mask[cols["fact_type"]] != 0)[:, None]
    keep = ok.any(axis=1)
    best = np.where(ok, bound, -np.inf).max(axis=1)
    return (rows[keep], best[keep], _round_up_f32(v[keep]), _round_up_f32(np.where(ok, p, 0.0)[keep]),
            ok.sum(axis=0))


def _assert_bound_pass(got, want, theta, rel=1e-9):
    """`got` equals the reference `want` up to the factorised exponential's upper bound."""
    w_kept, w_best, w_val, w_pen, w_cnt = want
    assert np.isin(w_kept, got["kept"]).all(), "a row the reference keeps was dropped"
    both = np.isin(got["kept"], w_kept)
    # rows kept only by the kernel: some lane's bound ties theta within the margin
    for i in np.flatnonzero(~both):
        b = got["best"][i]
        assert np.any(np.abs(b - theta) <= rel * np.maximum(1.0, np.abs(theta))), f"row {got['kept'][i]} kept"
    np.testing.assert_array_equal(got["kept"][both], w_kept)  # same order
    gb = got["best"][both]
    assert (gb >= w_best).all()
    np.testing.assert_allclose(gb, w_best, rtol=rel, atol=1e-300)
    gv = got["validity"][both]
    assert (gv >= w_val).all(), "validity below the reference"
    assert (gv <= np.nextafter(w_val, np.float32(np.inf))).all(), "validity more than one float above"
    np.testing.assert_array_equal(got["penalty"][both], w_pen)
    assert (got["count"] >= w_cnt).all()
    if both.all():  # no extra rows: the same counts
        np.testing.assert_array_equal(got["count"], w_cnt)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("G", [1, 7, 8, 13, 32, 64])
def test_bound_rows_matches_numpy(store, variant, G):
    eng, t0 = store
    rng = np.random.default_rng(G)
    n = len(eng)
    for trial in range(6):
        rows = rng.permutation(n)[: rng.integers(1, n)].astype(np.uint32)
        t = (t0 + rng.integers(-500, 500, G) * DAY).astype(np.int64)
        K = t + rng.integers(-100, 100, G) * DAY
        window = trial % 3 == 2
        X1 = t + (rng.integers(0, 60, G) * DAY if window else 0)
        X2 = t - (rng.integers(0, 60, G) * DAY if window else 0)
        theta = rng.uniform(-0.1, 0.6, G)
        if trial < 3:  # fewer than k rows scored yet; later trials keep every theta finite, so
            theta[rng.random(G) < 0.2] = -np.inf  # the kernel's row-level test can drop rows
        linear = trial % 2 == 1
        a = np.full(G, 0.75 if linear else 0.0)
        b = np.full(G, 0.25 if linear else 1.0)
        tau = [0.0, 0.05, 0.2][trial % 3]
        out_pen = [0.0, 0.1, 1.0][(trial + 1) % 3]
        fut_pen = [0.0, 0.1, 1.0][(trial * 2 + G) % 3]  # the future= policy, independent of out_pen
        latest = trial % 2 == 0
        mask = None
        if trial == 5:
            mask = (rng.random(len(eng.fact_types)) < 0.6).astype(np.uint8)
        want = _reference(eng, rows, t.astype(np.float64), K, X1, X2, theta, a, b, tau, out_pen, latest, mask,
                          fut_pen)
        got = core_of(eng).bound_rows(rows, t.astype(np.float64), K, X1, X2, theta, a, b, tau, out_pen, latest,
                                   mask, variant, fut_pen)
        _assert_bound_pass(got, want, theta)
        assert 0 < len(want[0]) < len(rows) or trial == 5  # both outcomes exercised


def test_bound_rows_rejects_bad_groups(store):
    eng, _ = store
    one = np.zeros(1)
    rows = np.zeros(1, np.uint32)
    with pytest.raises(ValueError, match="G must be"):
        core_of(eng).bound_rows(rows, np.zeros(65), *(np.zeros(65, np.int64),) * 3, *(np.zeros(65),) * 3,
                             0.0, 0.0, False)
    with pytest.raises(IndexError, match="row out of range"):
        core_of(eng).bound_rows(np.array([len(eng)], np.uint32), one, *(np.zeros(1, np.int64),) * 3, one, one, one,
                             0.0, 0.0, False)
    with pytest.raises(ValueError, match="theta: expected 1 values"):
        core_of(eng).bound_rows(rows, one, *(np.zeros(1, np.int64),) * 3, np.zeros(2), one, one, 0.0, 0.0, False)


def _exp_only_store():
    """Rows whose families are all exponential and asymmetric (the validities kernel's
    vector loop): rates, offsets and units that differ per type, ages before and after T."""
    rng = np.random.default_rng(9)
    n = 700
    fams = [ce.Exponential(half_life=30), ce.Exponential(half_life=60, unit="hours"),
            ce.Exponential(half_life=2, offset=10), ce.Exponential(half_life=0.01), ce.Exponential(half_life=3652)]
    names = [f"e{i}" for i in range(len(fams))]
    eng = ce.Engine(4, decay=ce.DecayPolicy(dict(zip(names, fams)), default=None))
    t0 = 1_600_000_000 * 1_000_000
    vf = t0 + rng.integers(-4000, 400, n) * DAY + rng.integers(0, DAY, n)
    eng.ingest({"vector": rng.standard_normal((n, 4)).astype(np.float32),
                "valid_from": vf.astype("datetime64[us]"), "observed_at": vf.astype("datetime64[us]"),
                "reliability": rng.uniform(0.05, 1.0, n).astype(np.float32),
                "fact_type": np.array(names)[rng.integers(0, len(names), n)]})
    return eng, t0


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("which", ["mixed", "exponential"])
def test_validities_equal_the_exact_path_bit_for_bit(store, variant, which):
    """The lone scan's validities (Kernels::validities: blocks of exponential, asymmetric
    rows in one vectorised loop, any other family row by row) equal reliability x decay
    by Kernels::decay one row at a time, the exact path every score takes, bit for bit:
    the scan's tau test reads them. Blocks of 1 to 700 rows, T before, among and after
    the rows' observation times."""
    eng, t0 = store if which == "mixed" else _exp_only_store()
    core = core_of(eng)
    n = len(eng)
    rng = np.random.default_rng(11)
    for t in (t0 - 5000 * DAY, t0 - 17, t0, t0 + 123_456_789, t0 + 900 * DAY):
        for m in (1, 7, 63, 64, 65, 129, n):
            rows = rng.choice(n, m, replace=False).astype(np.uint32)
            got, exact = core.validities(rows, int(t), variant)
            assert np.array_equal(got.view(np.uint64), exact.view(np.uint64)), (variant, which, t, m)
    with pytest.raises(IndexError):
        core.validities(np.array([n], np.uint32), int(t0), variant)
