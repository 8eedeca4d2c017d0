"""The per-call fast path of ``Engine.search`` (``search.query_vector_one`` and
``search.options_for_call``): the same vector bits and the same options as the general
path, whatever order calls come in."""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine import search as S
from chrono_engine.errors import QueryError


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_one_vector_has_the_bits_of_the_general_path(metric):
    rng = np.random.default_rng(0)
    for scale in (1.0, 1e-3, 1e3, 1e10):
        v = (rng.normal(size=384) * scale).astype(np.float32)
        fast = S.query_vector_one(v, 384, metric)
        assert fast is not None and fast is not v
        assert np.array_equal(fast.view(np.uint32), S.query_vectors(v[None, :], 384, metric)[0].view(np.uint32))


@pytest.mark.parametrize("v", [np.zeros(4, np.float32), np.array([np.nan, 1, 1, 1], np.float32),
                               np.array([3e19, 1, 1, 1], np.float32), np.array([1e-20, 0, 0, 0], np.float32),
                               np.array([2e15, 1, 1, 1], np.float32),  # sum of squares past 1e30
                               np.ones(4), np.ones(5, np.float32), [1.0, 0, 0, 0], np.ones((1, 4), np.float32)])
def test_other_vectors_take_the_general_path(v):
    assert S.query_vector_one(v, 4, "cosine") is None


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
    S._OPTIONS_CACHE.clear()
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
