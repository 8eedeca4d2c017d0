"""Hostile arguments at the public entry points (issue 20, failures 5 and 8).

``threads`` (failure 5): an integer from 1 to the cap, or None for every core, wherever a
caller gives it; anything else is a ConfigError (or a QueryError for one batch search)
naming the argument, before any work starts.
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
