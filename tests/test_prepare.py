"""The per-call fast path of ``Engine.search`` (``search.query_vector_one`` and
``search.options_for_call``): the same vector bits and the same options as the general
path, whatever order calls come in."""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine import search as S
from chrono_engine.errors import ConfigError, QueryError


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_one_vector_has_the_bits_of_the_general_path(metric):
    rng = np.random.default_rng(0)
    for scale in (1.0, 1e-3, 1e3, 1e10):
        v = (rng.normal(size=384) * scale).astype(np.float32)
        fast = S.query_vector_one(v, 384, metric)
        assert fast is not None and fast is not v
        assert np.array_equal(fast.view(np.uint32), S.query_vectors(v[None, :], 384, metric)[0].view(np.uint32))


def test_one_vector_scale_is_the_unit_vector_rounded():
    """Query vectors (both paths: ``_core.unit_rows``) are the float64 unit vector rounded
    to float32 (within an ulp: the sum of squares is taken in double in another order than
    NumPy's) for vectors across float32's whole range, subnormal components and components
    near its largest included, where a float32 sum of squares would over- or underflow;
    the lone path and the batch path give the same bits."""
    rng = np.random.default_rng(7)
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    cases = [(rng.standard_normal(1 + i % 64) * 10.0 ** rng.uniform(-44, 37)).astype(np.float32) for i in range(3000)]
    cases += [np.array([tiny, 0, 0], np.float32), np.array([3.4e38, -3.4e38, 1], np.float32),
              np.array([tiny, 3.4e38], np.float32), np.full(384, 1e-40, np.float32)]
    for v in cases:
        if not v.any():
            continue
        fast = S.query_vector_one(v, v.shape[0], "cosine")
        assert fast is not None
        assert np.array_equal(fast.view(np.uint32), S.query_vectors(v[None, :], v.shape[0], "cosine")[0].view(np.uint32))
        v64 = v.astype(np.float64)
        want = (v64 / np.sqrt(np.sum(v64 * v64))).astype(np.float32)
        ulps = np.abs(fast.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
        assert ulps.max() <= 1, (v, fast, want)
        assert abs(float(np.sum(fast.astype(np.float64) ** 2)) - 1.0) < 1e-6


def test_planner_settings_are_checked_by_value_and_type():
    """The planner settings are checked once per distinct set (the engine keeps the core's
    parameters by their values and types): True or 1.0 after 1 are still refused."""
    eng = ce.Engine(2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2024-01-01"}])
    for good, bad in ((1, True), (1, 1.0), (64, np.float64(64)), (4096, [4096])):
        eng.ef = good
        assert eng.search([1, 0], 1).num_rows == 1
        eng.ef = bad
        with pytest.raises(ConfigError, match="ef must be an integer"):
            eng.search([1, 0], 1)
    eng.ef = np.int64(7)  # a NumPy integer is an integer
    assert eng.search([1, 0], 1).num_rows == 1


@pytest.mark.parametrize("v", [np.zeros(4, np.float32), np.array([np.nan, 1, 1, 1], np.float32),
                               np.array([np.inf, 1, 1, 1], np.float32), np.ones(8, np.float32)[::2],  # strided
                               np.ones(4), np.ones(5, np.float32), [1.0, 0, 0, 0], np.ones((1, 4), np.float32)])
def test_other_vectors_take_the_general_path(v):
    assert S.query_vector_one(v, 4, "cosine") is None


def test_a_list_of_numbers_has_numpy_bits():
    """``list_f32`` (a JSON body's vector): NumPy's float32 bits for floats of any scale,
    the float32 range's rounding edge, zeros and small ints; None (NumPy's general path)
    for bools, big ints, strings, tuples, nested lists; a search with the list equals one
    with the array."""
    rng = np.random.default_rng(3)
    top = float(np.finfo(np.float32).max)
    edge = top + 2.0 ** (127 - 24)  # halfway to the next float32: the first double NumPy makes inf
    for scale in (1.0, 1e-40, 1e-46, 1e20, 1e38, 1e39, 1e300):
        xs = (rng.standard_normal(500) * scale).tolist() + [top, -top, float(np.nextafter(edge, 0)), edge, -edge,
                                                             0.0, -0.0, 3, -(2 ** 24), 2 ** 24]
        with np.errstate(over="ignore"):
            want = np.asarray(xs).astype(np.float32)
        got = S.list_f32(xs)
        assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert S.list_f32([1.0, np.float64(2.0)]) is None  # NumPy scalars: the general path
    for other in ([1.0, True], [1.0, 2 ** 24 + 1], [1.0, 2 ** 80], [1.0, "2"], (1.0, 2.0), [[1.0]], [1.0, None]):
        assert S.list_f32(other) is None
    assert S.list_f32([]).shape == (0,)
    eng = ce.Engine(8)
    eng.ingest([{"vector": rng.standard_normal(8), "valid_from": "2024-01-01"} for _ in range(50)])
    v = rng.standard_normal(8)
    assert eng.search(v.tolist(), 5).equals(eng.search(v.astype(np.float32), 5))
    with pytest.raises(QueryError, match="non-finite"):
        eng.search([1e39] + [0.0] * 7, 5)
    with pytest.raises(QueryError, match="8"):
        eng.search([1.0] * 7, 5)


CALLS = [
    {}, {"mode": "as_of", "as_of": 5}, {"mode": "as_of", "as_of": 7}, {"mode": "as_of"},
    {"alpha": 1, "fusion": "linear"}, {"alpha": True, "fusion": "linear"}, {"alpha": 1.0, "fusion": "linear"},
    {"mode": "window", "window": (1, 2)}, {"mode": "window", "window": (3, None)}, {"mode": "window"},
    {"mode": "window", "window": 3}, {"known_at": 9}, {"fact_types": ["a", "b"]}, {"fact_types": "a"},
    {"explain": True, "as_of": 4, "known_at": 2}, {"tau": 2.0}, {"bogus": 1}, {"exact": True, "as_of": 3},
]


def _same(kwargs, options=None):
    try:
        want = S.SearchOptions.of(options, **kwargs)
    except QueryError as e:
        with pytest.raises(QueryError) as got:
            S.options_for_call(options, kwargs)
        assert str(got.value) == str(e)
        return
    got, key = S.options_for_call(options, kwargs)
    assert got == want and key == S.options_key(want)


@pytest.mark.parametrize("seed", range(4))
def test_options_match_the_general_path_in_any_order(seed):
    S.options._OPTIONS_CACHE.clear()
    order = np.random.default_rng(seed).permutation(len(CALLS) * 3) % len(CALLS)
    base = S.SearchOptions(mode="as_of", as_of=1, explain=True)
    for i in order.tolist():
        _same(CALLS[i])
        _same(CALLS[i], base)


def test_search_answers_as_the_general_path():
    rng = np.random.default_rng(1)
    eng = ce.Engine(dim=8)
    eng.ingest({"vector": rng.normal(size=(200, 8)).astype(np.float32),
                "valid_from": rng.integers(0, 10 ** 15, 200)})
    for i in range(20):
        q = rng.normal(size=8).astype(np.float32)
        t = int(rng.integers(0, 10 ** 15))
        fast = eng.search(q, 5, mode="as_of", as_of=t)
        general = eng.search(q.astype(np.float64), 5, mode="as_of", as_of=t)  # float64: the general path
        assert fast.column("id").equals(general.column("id"))
        assert fast.column("score").equals(general.column("score"))


def test_search_prepared_refuses_calls_it_cannot_run_as_one_batch():
    """``Engine.search_prepared`` runs every call with the first one's options: an empty
    list, a call that is not a PreparedSearch, or calls with other options or k are a
    QueryError naming the call; the engine answers on as before."""
    eng = ce.Engine(2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2024-01-01"}, {"vector": [0, 1], "valid_from": "2025-01-01"}])
    a = eng.prepare_search([1, 0], 1, mode="as_of", as_of="2024-06-01")
    for calls, what in (([], "non-empty"), ((), "non-empty"), (a, "non-empty"), ([a, "x"], r"calls\[1\] must be"),
                        ([a, eng.prepare_search([1, 0], 2, mode="as_of", as_of="2024-06-01")], r"calls\[1\] has other"),
                        ([a, eng.prepare_search([1, 0], 1, mode="all")], r"calls\[1\] has other")):
        with pytest.raises(QueryError, match=what):
            eng.search_prepared(calls)
    with pytest.raises(QueryError, match="form must be"):
        eng.search_prepared([a], form="arrow")
    b = eng.prepare_search([0, 1], 1, mode="as_of", as_of="2025-06-01")
    got = eng.search_prepared([a, b])
    assert [t.column("id").to_pylist() for t in got] == [[0], [1]]
    assert got[0].equals(eng.search([1, 0], 1, mode="as_of", as_of="2024-06-01"))
