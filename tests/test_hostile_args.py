"""Hostile arguments at the public entry points (issue 20, failures 5 and 8).

``threads`` (failure 5): an integer from 1 to the cap, or None for every core, wherever a
caller gives it; anything else is a ConfigError (or a QueryError for one batch search)
naming the argument, before any work starts.

Query norms (failure 8): a query is normalised like an ingested vector, without overflow,
and a similarity that overflows float32 under ip or l2 is a QueryError.
"""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine._args import THREADS_MAX
from chrono_engine.errors import ConfigError, QueryError

DIM = 4
Q = np.array([1.0, 0.0, 0.0, 0.0], np.float32)


def _engine(metric: str = "cosine") -> ce.Engine:
    e = ce.Engine(DIM, metric, decay=ce.DecayPolicy({"news": ce.Exponential(half_life=7)}, default=ce.NoDecay()),
                  M=8, ef_construction=20, threads=1)
    e.ingest({"vector": np.eye(DIM, dtype=np.float32), "valid_from": ["2024-01-01"] * DIM,
              "stem_id": ["A", "B", "C", "D"], "version": ["v1"] * DIM, "title": ["t"] * DIM,
              "fact_type": ["news", "news", "general", "general"]})
    return e


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    e = _engine()
    e._saved = tmp_path_factory.mktemp("store") / "s"
    e.save(e._saved)
    return e


# ----------------------------------------------------------------------------- threads (failure 5)

@pytest.mark.parametrize("bad", [1.5, "2", -1, 0, True, THREADS_MAX + 1, 100_000, 2.0, np.float64(2)])
def test_threads_is_an_integer_from_1_to_the_cap(bad, shared):
    with pytest.raises(ConfigError, match="threads"):
        ce.Engine(DIM, threads=bad)
    e = _engine()
    with pytest.raises(ConfigError, match="threads"):
        e.threads = bad
    assert e.threads == 1
    with pytest.raises(QueryError, match="threads"):
        shared.search_batch(Q[None], threads=bad)
    with pytest.raises(ConfigError, match="threads"):  # the caller's argument: not a "corrupt store"
        ce.Engine.open(shared._saved, threads=bad)


def test_threads_accepts_numpy_integers_the_cap_and_none(shared):
    import os
    assert ce.Engine(DIM, threads=np.int64(3)).threads == 3
    assert ce.Engine(DIM, threads=THREADS_MAX).threads == THREADS_MAX
    assert ce.Engine(DIM, threads=None).threads == min(os.cpu_count() or 1, THREADS_MAX)
    e = _engine()
    e.threads = np.uint8(2)
    assert e.threads == 2 and isinstance(e.threads, int)
    e.threads = None
    assert e.threads == min(os.cpu_count() or 1, THREADS_MAX)
    assert ce.Engine.open(shared._saved, threads=np.int32(2)).threads == 2
    assert shared.search_batch(Q[None], 2, threads=np.int16(THREADS_MAX)).num_rows == 2


def test_a_hundred_thousand_threads_is_refused_before_any_work():
    """Failure 5: ``Engine(dim=4, threads=100_000).ingest(50k rows)`` aborted the process
    (100,000 thread starts); the setting is now refused where it is given."""
    with pytest.raises(ConfigError, match=r"threads must be an integer in \[1, 1024\], got 100000"):
        ce.Engine(dim=4, threads=100_000)


# ----------------------------------------------------------------------------- query norms (failure 8)

def _corpus(metric: str) -> tuple[ce.Engine, np.ndarray]:
    v = np.random.default_rng(3).standard_normal((64, 8)).astype(np.float32)
    e = ce.Engine(8, metric, M=8, ef_construction=40, threads=1)
    e.ingest({"vector": v, "valid_from": ["2024-01-01"] * 64})
    return e, v


@pytest.mark.parametrize("scale", [2e19, 1e38, 1e-40])
@pytest.mark.parametrize("exact", [True, False])
def test_cosine_query_with_huge_or_tiny_components_is_normalised(scale, exact):
    """A query with components ~2e19 overflowed the float32 norm: the query became 0 and
    every score 0 (and tiny components underflowed it to a "zero vector"). Its answer must
    be the answer of the same direction at unit length."""
    e, v = _corpus("cosine")
    q = v[7] / np.linalg.norm(v[7])
    want = e.search(q, 5, exact=exact)
    with np.errstate(over="ignore", under="ignore"):
        big = (q.astype(np.float64) * scale).astype(np.float32)
    assert np.isfinite(big).all() and (big != 0).any()
    got = e.search(big, 5, exact=exact)
    assert got.column("id").to_pylist()[0] == 7
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
    np.testing.assert_allclose(got.column("similarity").to_numpy(), want.column("similarity").to_numpy(),
                               rtol=1e-5, atol=1e-6)


def test_cosine_query_of_zeros_or_non_finite_values_is_still_refused():
    e, _ = _corpus("cosine")
    with pytest.raises(QueryError, match="query 1 is a zero vector"):
        e.search_batch(np.stack([np.ones(8), np.zeros(8)]).astype(np.float32))
    with pytest.raises(QueryError, match="query 0 has a non-finite value"):
        e.search_batch(np.full((1, 8), 1e39))  # beyond float32
    with pytest.raises(QueryError, match="query 0 has a non-finite value"):
        e.search(np.array([np.nan] + [1.0] * 7))


def test_ip_query_whose_inner_product_overflows_is_refused():
    """Under ip an inner product beyond float32 was returned as similarity inf; it is now a
    QueryError naming the query and the item. Large but finite products still answer."""
    e, v = _corpus("ip")
    ok = e.search(v[7] * np.float32(1e19), 3, exact=True)
    assert np.isfinite(ok.column("similarity").to_numpy()).all()
    q = np.zeros((2, 8), np.float32)
    q[0] = v[7]
    q[1] = np.sign(v[7]) * np.float32(3e38)
    for exact in (True, False):
        with pytest.raises(QueryError, match=r"query 1: its inner product with item \d+ overflows float32"):
            e.search_batch(q, 3, exact=exact)


def test_l2_query_whose_distance_overflows_is_refused():
    """Under l2 a distance beyond ~1.8e19 overflowed to inf and every similarity to 0 (ranks
    meaningless); it is now a QueryError. A far but finite query still answers."""
    e, v = _corpus("l2")
    ok = e.search(v[7] * np.float32(1e18), 3, exact=True)
    assert (ok.column("similarity").to_numpy() > 0).all()
    for exact in (True, False):
        with pytest.raises(QueryError, match=r"query 0: its distance to item \d+ overflows float32"):
            e.search(v[7] * np.float32(2e19), 3, exact=exact)
