"""What the build says about itself, the SIMD decay kernels against their NumPy reference,
and the interval index against NumPy masks (issue 2, items 1 and 3).

``chrono_engine._core`` is private; these tests reach into it on purpose because the
kernels and the interval index have no public face of their own.
"""
from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine import _core
from chrono_engine.errors import NotFoundError
from chrono_engine.decay import (Exponential, Gaussian, HalfLife, Linear, NoDecay, PowerLaw,
                                 Weibull, evaluate_spec)
from chrono_engine.synthetic import US_PER_DAY, make_corpus

OPEN_END = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
TINY = 1e-300  # values below this are not compared (the kernels flush them towards 0)


# ----------------------------------------------------------------------------- build_info

def test_build_info_fields():
    info = ce.build_info()
    for key in ("compiler", "flags", "simd", "simd_available", "hnswlib_version", "baseline"):
        assert key in info, key
    assert isinstance(info["compiler"], str) and info["compiler"] and info["compiler"] != "unknown"
    assert info["hnswlib_version"] == "0.8.0"
    assert isinstance(info["simd_available"], list) and info["simd_available"]
    assert info["simd"] in info["simd_available"]
    # a fresh dict every call: callers may not mutate the build's record
    info["simd"] = "tampered"
    assert ce.build_info()["simd"] != "tampered"


def test_build_flags_are_portable():
    flags = ce.build_info()["flags"]
    assert isinstance(flags, str) and flags
    assert "-march=native" not in flags and "-mtune=native" not in flags
    for unsafe in ("-ffast-math", "-Ofast", "-funsafe-math-optimizations", "-ffinite-math-only"):
        assert unsafe not in flags, unsafe
    # the shipped baseline is named and is not newer than x86-64-v3 (docs/architecture.md)
    baseline = ce.build_info()["baseline"]
    m = re.search(r"-march=(\S+)", flags)
    if m:  # x86 builds pin -march; other architectures may not
        assert m.group(1) == baseline
        assert baseline in ("x86-64", "x86-64-v2", "x86-64-v3")


def test_unknown_kernel_variant_is_refused():
    with pytest.raises(ValueError, match="not available"):
        _core.decay_eval(np.zeros(3), np.array([1.0, 0.1, 0.0, 1.0, 0.0]), "x86-64-v99")


# ----------------------------------------------------------------------------- decay kernels

VARIANTS = [""] + list(ce.build_info()["simd_available"])  # "" = the dispatched one

FAMILY_SPECS = {
    "none": NoDecay(),
    "exponential": Exponential(half_life=30.0),
    "exponential_offset_hours_sym": Exponential(beta=0.2, offset=5.0, unit="hours", symmetric=True),
    "half_life": HalfLife(365.0),
    "gaussian": Gaussian(sigma=40.0),
    "gaussian_offset_sym": Gaussian(half_life=3.0, offset=2.0, symmetric=True),
    "linear": Linear(rate=0.004),
    "linear_offset_hours": Linear(scale=48.0, offset=6.0, decay=0.3, unit="hours"),
    "power_law": PowerLaw(1.5),
    "power_law_seconds": PowerLaw(0.05, unit="seconds"),
    "weibull": Weibull(shape=2.0, scale=90.0),
    "weibull_sublinear_sym": Weibull(shape=0.4, scale=500.0, symmetric=True),
}


def _edge_ages(rng: np.random.Generator) -> np.ndarray:
    """Random ages (days) with negative, zero, tiny, huge, infinite and NaN values."""
    return np.concatenate([
        rng.uniform(-2_000.0, 20_000.0, 3000),
        rng.lognormal(0.0, 6.0, 2000),           # 1e-8 .. 1e8 days
        -rng.lognormal(0.0, 6.0, 300),
        np.array([0.0, -0.0, -1.0, 1e-300, 1e-12, 0.5, 1.0, 700.0, 745.0, 1e6, 1e15,
                  1e300, -1e300, np.finfo(np.float64).max, np.inf, -np.inf, np.nan, np.nan]),
    ])


def _assert_close_to_reference(got: np.ndarray, ref: np.ndarray, what: str) -> None:
    """Relative 1e-12, NaN where the reference is NaN, values below 1e-300 ignored.

    In the deep tail exp(-x) is ill-conditioned (a relative error e in x becomes x·e in
    exp(-x)), so beyond D < e^-100 the tolerance grows with |ln D|: it allows the same
    error in the exponent, not a looser kernel.
    """
    assert got.shape == ref.shape and got.dtype == np.float64
    nan_ref = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan_ref), f"{what}: NaN pattern differs"
    ok = ~nan_ref
    g, r = got[ok], ref[ok]
    small = (np.abs(r) < TINY) & (np.abs(g) < TINY)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(g - r) / np.abs(r)
        tol = 1e-12 * np.maximum(1.0, np.abs(np.log(np.abs(r))) / 100.0)
    bad = ~small & ~(rel <= tol)
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        raise AssertionError(f"{what}: {bad.sum()} values differ, e.g. "
                             + ", ".join(f"got {g[j]!r} want {r[j]!r}" for j in i))
    assert ((g >= 0.0) & (g <= 1.0)).all(), f"{what}: decay outside [0, 1]"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", sorted(FAMILY_SPECS))
def test_decay_kernel_matches_reference(variant, name):
    spec = FAMILY_SPECS[name]._kernel_spec()
    ages = _edge_ages(np.random.default_rng(zlib.crc32(name.encode())))
    got = _core.decay_eval(ages, np.array(spec[:4] + (float(spec[4]),)), variant)
    _assert_close_to_reference(got, evaluate_spec(spec, ages), f"{name} [{variant or 'dispatched'}]")


@pytest.mark.parametrize("variant", VARIANTS)
def test_decay_kernel_random_parameters_every_family(variant):
    rng = np.random.default_rng(12)
    ages = _edge_ages(rng)
    for trial in range(120):
        code = trial % 6  # every family code 0..5
        p0 = float(np.exp(rng.uniform(np.log(1e-3), np.log(50.0))))
        p1 = (float(np.exp(rng.uniform(np.log(1e-2), np.log(1e3)))) if code == 5
              else float(rng.choice([0.0, rng.uniform(0.0, 100.0)])))
        scale = float(rng.choice([1.0, 24.0, 86_400.0]))
        symmetric = bool(rng.integers(0, 2))
        spec = (code, p0, p1, scale, symmetric)
        got = _core.decay_eval(ages, np.array([code, p0, p1, scale, float(symmetric)]), variant)
        _assert_close_to_reference(got, evaluate_spec(spec, ages), f"spec {spec} [{variant or 'dispatched'}]")


@pytest.mark.parametrize("variant", VARIANTS)
def test_decay_kernel_variants_agree_and_keep_shape(variant):
    ages = np.random.default_rng(3).uniform(-10, 5000, (7, 11))
    spec = np.array(Weibull(shape=1.3, scale=200.0)._kernel_spec()[:4] + (0.0,))
    got = _core.decay_eval(ages, spec, variant)
    assert got.shape == (7, 11)
    base = _core.decay_eval(ages, spec, "")
    np.testing.assert_array_equal(got, base)  # bit for bit: the build does not fuse a * b + c
    assert _core.decay_eval(np.zeros(0), spec, variant).shape == (0,)


@pytest.mark.parametrize("variant", VARIANTS[1:])
def test_every_kernel_variant_computes_the_same_bits(variant):
    """Every variant of this build rounds the same operations in the same order
    (``-ffp-contract=off``, fixed-lane reductions): decay values of every family, float
    and int8 dot products, equal bit for bit to the first (baseline) variant's.
    ``scripts/compare_builds.py`` compares whole builds of other instruction set levels."""
    base = VARIANTS[1]
    rng = np.random.default_rng(77)
    ages = _edge_ages(rng)
    for name, fam in sorted(FAMILY_SPECS.items()):
        spec = fam._kernel_spec()
        spec = np.array(spec[:4] + (float(spec[4]),))
        np.testing.assert_array_equal(_core.decay_eval(ages, spec, variant), _core.decay_eval(ages, spec, base),
                                      err_msg=name)
    for d in (1, 15, 16, 17, 100, 384):
        a, b = rng.normal(size=d).astype(np.float32), rng.normal(size=d).astype(np.float32)
        assert _core.dot(a, b, variant) == _core.dot(a, b, base)
        C = rng.integers(-127, 128, (9, d), dtype=np.int8)
        Q = rng.normal(size=(5, d)).astype(np.float32)
        np.testing.assert_array_equal(_core.dot_qt_i8(C, Q, variant), _core.dot_qt_i8(C, Q, base))
        which = np.array([4, 0, 2], np.uint32)
        np.testing.assert_array_equal(_core.dot_i8_some(C[0], Q, which, variant),
                                      _core.dot_i8_some(C[0], Q, which, base))


@pytest.mark.parametrize("variant", VARIANTS)
def test_decay_kernel_subnormal_ages(variant):
    ages = np.array([5e-324, 1e-310, 2e-308])
    spec = (5, 0.01, 1.0, 1.0, False)
    got = _core.decay_eval(ages, np.array([5, 0.01, 1.0, 1.0, 0.0]), variant)
    _assert_close_to_reference(got, evaluate_spec(spec, ages), f"subnormal [{variant}]")


@pytest.mark.parametrize("bad", [[1.0, 0.1, 0.0, 1.0], [6.0, 0.1, 0.0, 1.0, 0.0], [1.5, 0.1, 0.0, 1.0, 0.0],
                                 [-1.0, 0.1, 0.0, 1.0, 0.0]])
def test_decay_kernel_rejects_bad_specs(bad):
    with pytest.raises(ValueError):
        _core.decay_eval(np.zeros(2), np.array(bad))


# ----------------------------------------------------------------------------- interval index

def _intervals_from_core(eng):
    c = eng.columns()
    return c["valid_from"], c["valid_to"]


def _probe_times(vf, vt, rng, n=60):
    """Query times: random, exactly at endpoints (half-open edges), and the extremes."""
    finite_to = vt[vt != OPEN_END]
    pts = [rng.integers(vf.min() - 100 * US_PER_DAY, vf.max() + 3000 * US_PER_DAY, n),
           rng.choice(vf, n // 3), rng.choice(vf, n // 6) - 1,
           rng.choice(finite_to, n // 3) if len(finite_to) else np.zeros(0, np.int64),
           rng.choice(finite_to, n // 6) - 1 if len(finite_to) else np.zeros(0, np.int64),
           np.array([INT64_MIN, INT64_MIN + 1, 0, OPEN_END - 1, OPEN_END])]
    return np.concatenate(pts).astype(np.int64)


def _check_index(eng, rng, label):
    vf, vt = _intervals_from_core(eng)
    ts = _probe_times(vf, vt, rng)
    for t in ts:
        t = int(t)
        want = np.flatnonzero((vf <= t) & (t < vt))
        got = eng._state.core.rows_valid_at(t)
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, want, err_msg=f"{label}: rows_valid_at({t})")
        assert eng.count_valid_at(t) == len(want), f"{label}: count_valid_at({t})"
        assert eng._state.core.valid_at_upper_bound(t) >= len(want), f"{label}: valid_at_upper_bound({t})"
    for _ in range(50):
        a, b = np.sort(rng.choice(ts, 2, replace=False))
        a, b = int(a), int(b)
        if a == b:
            continue
        want = np.flatnonzero((vf < b) & (vt > a))
        got = eng._state.core.rows_overlapping(a, b)
        np.testing.assert_array_equal(got, want, err_msg=f"{label}: rows_overlapping({a}, {b})")
        assert eng._state.core.count_overlapping(a, b) == len(want), f"{label}: count_overlapping({a}, {b})"
    # the public wrapper agrees with the core
    t0 = int(np.median(vf))
    assert eng.count_valid_at(t0) == int(((vf <= t0) & (t0 < vt)).sum())


def _interval_batch(rng, n, *, coarse: bool):
    """Items with intervals on a coarse grid (many tied endpoints) or at random µs."""
    t0 = 1_500_000_000_000_000
    if coarse:
        step = 30 * US_PER_DAY
        vf = t0 + rng.integers(0, 200, n) * step
        life = rng.integers(1, 40, n) * step
    else:
        vf = t0 + rng.integers(0, 5 * 365 * US_PER_DAY, n)
        life = rng.integers(1, 400 * US_PER_DAY, n)
    vt = np.where(rng.random(n) < 0.3, OPEN_END, vf + life).astype(np.int64)
    return {"vector": rng.standard_normal((n, 8)).astype(np.float32),
            "valid_from": vf.astype("datetime64[us]"),
            "valid_to": np.where(vt == OPEN_END, np.datetime64("NaT"), vt.astype("datetime64[us]"))}


@pytest.mark.parametrize("coarse", [False, True], ids=["fine", "tied-endpoints"])
def test_interval_index_matches_numpy_through_appends_and_updates(coarse):
    rng = np.random.default_rng(21 if coarse else 22)
    eng = ce.Engine(8, metric="l2", M=8, ef_construction=32, threads=2)
    # 1. first batch below the rebuild threshold: everything lives in the unsorted delta
    eng.ingest(_interval_batch(rng, 1500, coarse=coarse))
    _check_index(eng, rng, "delta only")
    # 2. an update rebuilds: everything static
    rows = rng.choice(len(eng), 200, replace=False).astype(np.uint32)
    vf, _ = _intervals_from_core(eng)
    eng._state.core.update(rows, valid_to=vf[rows] + rng.integers(1, 90, len(rows)) * US_PER_DAY)
    _check_index(eng, rng, "after update")
    # 3. appends after a rebuild: static part + delta
    for _ in range(3):
        eng.ingest(_interval_batch(rng, 300, coarse=coarse))
        _check_index(eng, rng, "static + delta")
    # 4. updates that close intervals living in the delta and reopen nothing
    vf, vt = _intervals_from_core(eng)
    rows = np.arange(len(eng) - 400, len(eng), 3, dtype=np.uint32)
    eng._state.core.update(rows, valid_to=vf[rows] + US_PER_DAY)
    _check_index(eng, rng, "update of delta rows")
    # 5. updates that only touch flags leave the intervals alone
    before = _intervals_from_core(eng)
    eng._state.core.update(rows[:10], deprecated=np.ones(10, np.uint8))
    np.testing.assert_array_equal(_intervals_from_core(eng)[1], before[1])
    _check_index(eng, rng, "flag update")
    # 6. a batch large enough to trigger a rebuild from within ingest
    eng.ingest(_interval_batch(rng, 4200, coarse=coarse))
    _check_index(eng, rng, "rebuilt by ingest")
    eng.ingest(_interval_batch(rng, 50, coarse=coarse))
    _check_index(eng, rng, "rebuilt + small delta")


def test_interval_index_on_synthetic_corpus_with_reopening_updates():
    c = make_corpus(3000, 16, clusters=8, seed=4)
    eng = ce.Engine(16, M=8, ef_construction=32, threads=2)
    d = c.to_dict()
    eng.ingest({k: v[:2000] for k, v in d.items()})
    rng = np.random.default_rng(5)
    _check_index(eng, rng, "corpus 2000")
    # reopen some closed intervals and close some open ones
    vf, vt = _intervals_from_core(eng)
    closed = np.flatnonzero(vt != OPEN_END)[:100].astype(np.uint32)
    opened = np.flatnonzero(vt == OPEN_END)[:100].astype(np.uint32)
    eng._state.core.update(closed, valid_to=np.full(len(closed), OPEN_END, np.int64))
    eng._state.core.update(opened, valid_to=vf[opened] + 5 * US_PER_DAY)
    _check_index(eng, rng, "reopened/closed")
    eng.ingest({k: v[2000:] for k, v in d.items()})
    _check_index(eng, rng, "corpus 3000")


def test_interval_index_empty_store():
    eng = ce.Engine(4, threads=1)
    assert eng.count_valid_at(0) == 0
    assert len(eng._state.core.rows_valid_at(0)) == 0
    assert eng._state.core.count_overlapping(0, 10) == 0
    assert len(eng._state.core.rows_overlapping(0, 10)) == 0


def test_interval_update_is_all_or_nothing():
    rng = np.random.default_rng(8)
    eng = ce.Engine(8, metric="l2", M=8, ef_construction=32, threads=1)
    eng.ingest(_interval_batch(rng, 500, coarse=False))
    vf, vt = _intervals_from_core(eng)
    rows = np.array([3, 10, 20], np.uint32)
    bad = np.array([vf[3] + US_PER_DAY, vf[10] + US_PER_DAY, vf[20]], np.int64)  # last: valid_to == valid_from
    with pytest.raises(ValueError, match="valid_to <= valid_from"):
        eng._state.core.update(rows, valid_to=bad)
    np.testing.assert_array_equal(_intervals_from_core(eng)[1], vt)
    with pytest.raises(IndexError):
        eng._state.core.update(np.array([1, 10_000], np.uint32), valid_to=np.array([OPEN_END, OPEN_END]))
    np.testing.assert_array_equal(_intervals_from_core(eng)[1], vt)
    _check_index(eng, rng, "after rejected updates")


def test_interval_overlap_with_empty_range_counts_zero():
    rng = np.random.default_rng(9)
    eng = ce.Engine(8, metric="l2", M=8, ef_construction=32, threads=1)
    eng.ingest(_interval_batch(rng, 5000, coarse=True))  # rebuilt: static part populated
    eng.ingest(_interval_batch(rng, 100, coarse=True))   # and a delta
    vf, _ = _intervals_from_core(eng)
    t = int(np.median(vf))
    assert len(eng._state.core.rows_overlapping(t, t)) == 0
    assert len(eng._state.core.rows_overlapping(t + US_PER_DAY, t)) == 0
    assert eng._state.core.count_overlapping(t, t) == 0
    assert eng._state.core.count_overlapping(t + US_PER_DAY, t) == 0


# ----------------------------------------------------------------------------- freshness lists

def _fresh_batch(rng, n, *, t0=1_600_000_000_000_000):
    """Items of three fact types; observed_at on a coarse day grid (many ties) or at random µs."""
    coarse = rng.random(n) < 0.5
    obs = np.where(coarse, t0 + rng.integers(0, 50, n) * US_PER_DAY, t0 + rng.integers(0, 50 * US_PER_DAY, n))
    return {"vector": rng.standard_normal((n, 8)).astype(np.float32),
            "valid_from": np.full(n, t0 - US_PER_DAY).astype("datetime64[us]"),
            "observed_at": obs.astype("datetime64[us]"),
            "fact_type": rng.choice(["a", "b", "c"], n)}


def _check_fresh(eng, rng, label):
    c = eng.columns()
    ft, obs = c["fact_type"], c["observed_at"]
    grid = np.unique(obs)
    for _ in range(40):
        lo, hi = np.sort(rng.choice(grid, 2))
        lo, hi = int(lo) - int(rng.integers(0, 2)), int(hi) + int(rng.integers(0, 2))  # on and off the keys
        for code in range(int(ft.max()) + 2):  # and a code with no list
            want = np.flatnonzero((ft == code) & (obs >= lo) & (obs <= hi))
            rows, count = eng._state.core.rows_observed_between(code, lo, hi)
            np.testing.assert_array_equal(rows, want, err_msg=f"{label}: type {code} [{lo}, {hi}]")
            assert count == len(want), f"{label}: count, type {code} [{lo}, {hi}]"
    rows, count = eng._state.core.rows_observed_between(0, INT64_MIN, OPEN_END)
    assert count == len(rows) == int((ft == 0).sum())


def test_freshness_lists_match_numpy_through_appends_and_rebuilds():
    rng = np.random.default_rng(31)
    pol = ce.DecayPolicy({t: ce.Exponential(half_life=30) for t in "abc"}, default=None)
    eng = ce.Engine(8, metric="l2", decay=pol, M=8, ef_construction=32, threads=2)
    eng.ingest(_fresh_batch(rng, 1000))       # delta only
    _check_fresh(eng, rng, "delta only")
    eng.ingest(_fresh_batch(rng, 5000))       # outgrows the delta: rebuilt
    _check_fresh(eng, rng, "rebuilt")
    eng.ingest(_fresh_batch(rng, 300))        # static lists + delta
    _check_fresh(eng, rng, "static + delta")


def test_ids_stored_only_once_they_differ_from_rows():
    """Ids equal to rows are not stored; the first other id materialises the id map, and
    ids (not rows) still break score ties."""
    eng = ce.Engine(8, metric="l2", M=8, ef_construction=32, threads=1)
    v = np.ones((3, 8), np.float32)  # identical vectors: every score ties
    batch = {"vector": v, "valid_from": ["2024-01-01"] * 3}
    assert list(eng.ingest(batch)) == [0, 1, 2]
    dense = eng.memory()["metadata"]
    assert list(eng.ingest({**batch, "id": np.array([10, 3, 7], np.uint64)})) == [10, 3, 7]
    assert list(eng.ingest(batch)) == [11, 12, 13]
    np.testing.assert_array_equal(eng.rows_of([0, 1, 2, 10, 3, 7, 11, 12, 13]), np.arange(9))
    np.testing.assert_array_equal(eng.columns()["id"], [0, 1, 2, 10, 3, 7, 11, 12, 13])
    assert eng.memory()["metadata"] > dense  # the id map now exists
    with pytest.raises(NotFoundError, match="unknown id 4"):
        eng.rows_of([4])
    res = eng.search(v[0], k=9, mode="all", as_of="2025-01-01")
    assert res.column("id").to_pylist() == [0, 1, 2, 3, 7, 10, 11, 12, 13]
