"""The compiled core's interval index (valid time: stabbing, overlap, counts) and
freshness lists (rows per fact type by ``observed_at``) against NumPy masks, through
appends, rebuilds and in-place edits of ``valid_to`` and flags.

Internal: these query the core's indexes directly and edit rows in place as only a log
written before amendments can (``Store.update``), through tests/_internal.py; the public
counts (``Engine.count_valid_at``) are checked beside them.
"""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from _internal import core
from chrono_engine.synthetic import US_PER_DAY, make_corpus

OPEN_END = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


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
        got = core(eng).rows_valid_at(t)
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, want, err_msg=f"{label}: rows_valid_at({t})")
        assert eng.count_valid_at(t) == len(want), f"{label}: count_valid_at({t})"
        assert core(eng).valid_at_upper_bound(t) >= len(want), f"{label}: valid_at_upper_bound({t})"
    for _ in range(50):
        a, b = np.sort(rng.choice(ts, 2, replace=False))
        a, b = int(a), int(b)
        if a == b:
            continue
        want = np.flatnonzero((vf < b) & (vt > a))
        got = core(eng).rows_overlapping(a, b)
        np.testing.assert_array_equal(got, want, err_msg=f"{label}: rows_overlapping({a}, {b})")
        assert core(eng).count_overlapping(a, b) == len(want), f"{label}: count_overlapping({a}, {b})"
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
            "valid_to": np.where(vt == OPEN_END, np.datetime64("NaT", "us"), vt.astype("datetime64[us]"))}


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
    core(eng).update(rows, valid_to=vf[rows] + rng.integers(1, 90, len(rows)) * US_PER_DAY)
    _check_index(eng, rng, "after update")
    # 3. appends after a rebuild: static part + delta
    for _ in range(3):
        eng.ingest(_interval_batch(rng, 300, coarse=coarse))
        _check_index(eng, rng, "static + delta")
    # 4. updates that close intervals living in the delta and reopen nothing
    vf, vt = _intervals_from_core(eng)
    rows = np.arange(len(eng) - 400, len(eng), 3, dtype=np.uint32)
    core(eng).update(rows, valid_to=vf[rows] + US_PER_DAY)
    _check_index(eng, rng, "update of delta rows")
    # 5. updates that only touch flags leave the intervals alone
    before = _intervals_from_core(eng)
    core(eng).update(rows[:10], deprecated=np.ones(10, np.uint8))
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
    core(eng).update(closed, valid_to=np.full(len(closed), OPEN_END, np.int64))
    core(eng).update(opened, valid_to=vf[opened] + 5 * US_PER_DAY)
    _check_index(eng, rng, "reopened/closed")
    eng.ingest({k: v[2000:] for k, v in d.items()})
    _check_index(eng, rng, "corpus 3000")


def test_interval_index_empty_store():
    eng = ce.Engine(4, threads=1)
    assert eng.count_valid_at(0) == 0
    assert len(core(eng).rows_valid_at(0)) == 0
    assert core(eng).count_overlapping(0, 10) == 0
    assert len(core(eng).rows_overlapping(0, 10)) == 0


def test_interval_update_is_all_or_nothing():
    rng = np.random.default_rng(8)
    eng = ce.Engine(8, metric="l2", M=8, ef_construction=32, threads=1)
    eng.ingest(_interval_batch(rng, 500, coarse=False))
    vf, vt = _intervals_from_core(eng)
    rows = np.array([3, 10, 20], np.uint32)
    bad = np.array([vf[3] + US_PER_DAY, vf[10] + US_PER_DAY, vf[20]], np.int64)  # last: valid_to == valid_from
    with pytest.raises(ValueError, match="valid_to <= valid_from"):
        core(eng).update(rows, valid_to=bad)
    np.testing.assert_array_equal(_intervals_from_core(eng)[1], vt)
    with pytest.raises(IndexError):
        core(eng).update(np.array([1, 10_000], np.uint32), valid_to=np.array([OPEN_END, OPEN_END]))
    np.testing.assert_array_equal(_intervals_from_core(eng)[1], vt)
    _check_index(eng, rng, "after rejected updates")


def test_interval_overlap_with_empty_range_counts_zero():
    rng = np.random.default_rng(9)
    eng = ce.Engine(8, metric="l2", M=8, ef_construction=32, threads=1)
    eng.ingest(_interval_batch(rng, 5000, coarse=True))  # rebuilt: static part populated
    eng.ingest(_interval_batch(rng, 100, coarse=True))   # and a delta
    vf, _ = _intervals_from_core(eng)
    t = int(np.median(vf))
    assert len(core(eng).rows_overlapping(t, t)) == 0
    assert len(core(eng).rows_overlapping(t + US_PER_DAY, t)) == 0
    assert core(eng).count_overlapping(t, t) == 0
    assert core(eng).count_overlapping(t + US_PER_DAY, t) == 0


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
            rows, count = core(eng).rows_observed_between(code, lo, hi)
            np.testing.assert_array_equal(rows, want, err_msg=f"{label}: type {code} [{lo}, {hi}]")
            assert count == len(want), f"{label}: count, type {code} [{lo}, {hi}]"
    rows, count = core(eng).rows_observed_between(0, INT64_MIN, OPEN_END)
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
