"""Threads against the core alone (tests/_internal.py): result tables built from the core's
answer with no string columns (``CoreOnly``), so that a failure points at the core's
snapshot consistency rather than the facade's string bookkeeping; and a search run exactly
between the core's ingest and the end of ``Engine.ingest`` (the core swapped for a
wrapper). The full-API versions are in test_threads.py, whose workload these share."""
from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from _internal import state
from chrono_engine import search
from chrono_engine.synthetic import times_for_selectivity
from test_threads import (BATCHES, KNOWN_AT, _batches, _changes, _engine, _hammer, _replay, _search,  # noqa: F401
                          corpus, replay, workload)


class CoreOnly(ce.Engine):
    """The Engine with a result table built from the core's answer alone (no string
    columns), to check the core's snapshot consistency apart from the Python facade's
    string bookkeeping (test_threads.py checks the two together)."""

    def search_batch(self, vectors, k=10, options=None, *, threads=None, **kwargs):
        call = self.prepare_batch(vectors, k, options, **kwargs)
        out, _ = search.core_search(state(self), call, self.threads if threads is None else threads)
        rows = out["row"].astype(np.int64)
        cols = state(self).columns_at(rows)
        return pa.table({
            "query": pa.array(out["query"], pa.int32()), "rank": pa.array(out["rank"], pa.int32()),
            "id": pa.array(out["id"], pa.uint64()), "score": pa.array(out["score"], pa.float64()),
            "similarity": pa.array(out["similarity"], pa.float32()),
            "validity": pa.array(out["validity"], pa.float32()),
            "valid_from": pa.array(cols["valid_from"], pa.int64()),
            "valid_to": pa.array(cols["valid_to"], pa.int64()), "stem": pa.array(cols["stem"], pa.int32()),
            "certified": pa.array(out["certified"][out["query"]], pa.bool_()),
        })


@pytest.fixture(scope="module")
def core_replay(corpus, workload):  # noqa: F811
    return _replay(corpus, workload, CoreOnly)


def test_core_replay_states_are_distinguishable(core_replay):
    """Sanity of the test design: the batches do change the core's answers."""
    assert _changes(core_replay) >= BATCHES - 1


def test_core_answers_under_concurrent_ingest_equal_sequential_replay(corpus, workload, core_replay):
    _hammer(corpus, workload, core_replay, CoreOnly)


def test_search_right_after_the_core_accepted_a_batch(corpus, workload, replay):
    """Deterministic version of the string-columns race: a search runs exactly between the
    core's ingest and the end of Engine.ingest (as a reader thread may at any time)."""
    q, calls = workload
    base, batches = _batches(corpus)
    eng = _engine(corpus)
    eng.ingest(base)
    seen = []

    class Core:
        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            return getattr(self._real, name)

        def ingest(self, *a, **k):
            out = self._real.ingest(*a, **k)
            box: list = []

            def reader():
                try:
                    box.append(_search(eng, q, calls[0]))
                except BaseException as e:  # noqa: BLE001 - re-raised below, on this thread
                    box.append(e)

            th = threading.Thread(target=reader)
            th.start()
            th.join()
            seen.extend(box)
            return out

    state(eng).core = Core(state(eng).core)
    eng.ingest(batches[0])
    assert len(seen) == 1
    if isinstance(seen[0], BaseException):
        raise seen[0]
    assert seen[0].equals(replay[1][0])


def test_concurrent_graph_plan_keeps_its_invariants(corpus, workload):
    """The approximate plan under concurrent ingest: no errors, well-formed answers
    (valid at T, one version per stem, ranked by score, τ respected). Core-only result
    tables, so a failure here points at the core, not at the facade's string columns."""
    q, _ = workload
    t = times_for_selectivity(corpus, 0.4, len(q))
    base, batches = _batches(corpus)
    eng = _engine(corpus, cls=CoreOnly)
    eng.ingest(base)
    eng.scan_limit = 0  # force the graph plan
    errors: list[BaseException] = []
    done = threading.Event()
    out: list[pa.Table] = []

    def searcher():
        try:
            while not done.is_set() and len(out) < 150:
                out.append(eng.search_batch(q, 10, mode="as_of", as_of=t, known_at=KNOWN_AT, tau=0.1, threads=1))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def ingester():
        try:
            for b in batches:
                eng.ingest(b)
                time.sleep(0.01)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            done.set()

    ths = [threading.Thread(target=searcher) for _ in range(4)] + [threading.Thread(target=ingester)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(timeout=120)
    if errors:
        raise errors[0]
    assert out
    for res in out:
        assert not res.column("certified").to_numpy().any()
        qi = res.column("query").to_numpy()
        vf = res.column("valid_from").to_numpy()
        vt = res.column("valid_to").to_numpy()
        assert ((vf <= t[qi]) & (t[qi] < vt)).all()
        assert (res.column("validity").to_numpy() >= 0.1 - 1e-7).all()
        ids = res.column("id").to_numpy()
        stem = res.column("stem").to_numpy()
        score = res.column("score").to_numpy()
        rank = res.column("rank").to_numpy()
        assert (np.diff(qi) >= 0).all()
        same = qi[1:] == qi[:-1]
        assert (score[1:][same] <= score[:-1][same]).all()
        first = np.r_[True, ~same]
        assert (rank[first] == 1).all() and (rank[1:][same] == rank[:-1][same] + 1).all()
        assert len(np.unique(np.stack([qi.astype(np.uint64), ids]), axis=1).T) == len(ids)
        with_stem = stem >= 0
        pairs = np.stack([qi[with_stem].astype(np.int64), stem[with_stem].astype(np.int64)])
        assert len(np.unique(pairs, axis=1).T) == int(with_stem.sum())
