"""Threads ("4 Python threads searching while a fifth
ingests; results equal a sequential replay").

The replay: a second engine ingests the same batches one at a time, and the answers to a
fixed set of queries are recorded after every batch (states 0..B). Every answer a search
thread got while the fifth thread was ingesting must equal one of those states, and the
states one thread sees must never go backwards (a batch is visible whole or not at all,
and once visible it stays). The certified plan is used for the exact comparison: its
answer depends on the stored items only, not on the shape of the HNSW graph, which
differs between a concurrent and a sequential build.
"""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import chrono_engine as ce
from chrono_engine.errors import QueryError
from chrono_engine.synthetic import US_PER_DAY, make_corpus, times_for_selectivity

DIM = 16
KNOWN_AT = np.iinfo(np.int64).max - 1
N_BASE, N_BATCH, BATCHES = 1500, 150, 8
COMPARE = ["query", "rank", "id", "score", "similarity", "validity", "stem_id", "version",
           "valid_from", "valid_to", "title", "content", "citation", "certified"]


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(N_BASE + N_BATCH * BATCHES, DIM, clusters=12, seed=17)


def _policy(c):
    return ce.DecayPolicy({f"type{i:02d}": ce.Exponential(half_life=h) for i, h in enumerate(c.half_lives)},
                          default=None)


def _batches(c):
    d = c.to_dict()
    cut = lambda lo, hi: {k: v[lo:hi] for k, v in d.items()}  # noqa: E731
    base = cut(0, N_BASE)
    batches = [cut(N_BASE + i * N_BATCH, N_BASE + (i + 1) * N_BATCH) for i in range(BATCHES)]
    return base, batches


def _engine(c, threads=2, cls=ce.Engine):
    return cls(DIM, decay=_policy(c), M=12, ef_construction=60, threads=threads)


@pytest.fixture(scope="module")
def workload(corpus):
    q = corpus.queries(24, seed=3)
    t = times_for_selectivity(corpus, 0.4, 24)
    calls = [
        dict(mode="as_of", as_of=t),
        dict(mode="latest", as_of=t, fusion="linear"),
        dict(mode="all", as_of=t, tau=0.05, arbitrate=False),
    ]
    return q, calls


def _search(eng, q, kw, threads=1):
    res = eng.search_batch(q, 10, known_at=KNOWN_AT, exact=True, threads=threads, **kw)
    return res.select(COMPARE) if "citation" in res.column_names else res


def _replay(corpus, workload, cls):
    """Answers of every call after 0, 1, ..., BATCHES batches, ingested sequentially."""
    q, calls = workload
    base, batches = _batches(corpus)
    eng = _engine(corpus, threads=1, cls=cls)
    eng.ingest(base)
    states = [[_search(eng, q, kw) for kw in calls]]
    for b in batches:
        eng.ingest(b)
        states.append([_search(eng, q, kw) for kw in calls])
    return states


@pytest.fixture(scope="module")
def replay(corpus, workload):
    return _replay(corpus, workload, ce.Engine)


def _changes(states) -> int:
    """How many batches changed some answer of a replay."""
    return sum(not all(a.equals(b) for a, b in zip(states[i], states[i + 1])) for i in range(BATCHES))


def test_replay_states_are_distinguishable(replay):
    """Sanity of the test design: the batches do change the answers."""
    assert _changes(replay) >= BATCHES - 1


def _hammer(corpus, workload, replay, cls) -> None:
    """4 searcher threads + 1 ingesting thread; every answer must be a sequential state,
    and each searcher's states must be non-decreasing."""
    q, calls = workload
    base, batches = _batches(corpus)
    eng = _engine(corpus, cls=cls)
    eng.ingest(base)

    errors: list[BaseException] = []
    done = threading.Event()
    start = threading.Barrier(5)
    seen: list[list[tuple[int, pa.Table]]] = [[] for _ in range(4)]

    def searcher(i):
        try:
            start.wait()
            n = 0
            while not done.is_set() or n < 3:
                call = (i + n) % len(calls)
                seen[i].append((call, _search(eng, q, calls[call])))
                n += 1
        except BaseException as e:  # noqa: BLE001 - reported on the main thread
            errors.append(e)
            done.set()

    def ingester():
        try:
            start.wait()
            for b in batches:
                time.sleep(0.02)  # let the searchers run between batches
                eng.ingest(b)
            time.sleep(0.02)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            done.set()

    threads = [threading.Thread(target=searcher, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=ingester))
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    if errors:
        raise errors[0]

    assert len(eng) == N_BASE + BATCHES * N_BATCH
    observed = set()
    for i, results in enumerate(seen):
        assert results, f"searcher {i} never ran"
        level = 0
        for n, (call, res) in enumerate(results):
            states = [j for j, st in enumerate(replay) if res.equals(st[call])]
            assert states, (f"searcher {i}, search {n} (call {call}) matches no sequential state;\n"
                            f"{res.slice(0, 12).to_pandas()}")
            later = [j for j in states if j >= level]
            assert later, f"searcher {i} went back in time: states {states} after {level}"
            level = later[0]
            observed.add(level)
    # the searches did interleave with the ingest (not all before or all after it)
    assert len(observed) >= 2, observed
    # and the final state is the fully ingested one
    for call, kw in enumerate(calls):
        assert _search(eng, q, kw).equals(replay[-1][call])


def test_four_searchers_one_ingester_equal_sequential_replay(corpus, workload, replay):
    for _ in range(3):  # a race is timing-dependent: several rounds make one show reliably
        _hammer(corpus, workload, replay, ce.Engine)


# ----------------------------------------------------------------------------- batch threads

@pytest.fixture(scope="module")
def full_engine(corpus):
    base, batches = _batches(corpus)
    eng = _engine(corpus)
    eng.ingest(base)
    for b in batches:
        eng.ingest(b)
    return eng


@pytest.mark.parametrize("exact", [True, False], ids=["certified", "graph"])
@pytest.mark.parametrize("mode", ["as_of", "latest", "window"])
def test_threads_2_equals_threads_1(full_engine, corpus, exact, mode):
    q = corpus.queries(70, seed=8)
    t = times_for_selectivity(corpus, 0.2, 70)
    kw = dict(mode=mode, known_at=KNOWN_AT, exact=exact, explain=True)
    if mode == "window":
        kw["window"] = (t - 120 * US_PER_DAY, t)
    else:
        kw["as_of"] = t
    old = full_engine.group, full_engine.scan_limit
    full_engine.group = 8  # many groups, so both workers get work
    if not exact:
        full_engine.scan_limit = 0
    try:
        one = full_engine.search_batch(q, 10, threads=1, **kw)
        two = full_engine.search_batch(q, 10, threads=2, **kw)
        four = full_engine.search_batch(q, 10, threads=4, **kw)
    finally:
        full_engine.group, full_engine.scan_limit = old
    assert one.num_rows == 70 * 10
    assert one.equals(two)
    assert one.equals(four)
    if exact:  # and the batch equals the queries asked one at a time
        for i in (0, 33, 69):
            skw = dict(kw)
            if mode == "window":
                skw["window"] = (kw["window"][0][i], kw["window"][1][i])
            else:
                skw["as_of"] = t[i]
            single = full_engine.search(q[i], 10, **skw)
            mine = one.filter(pc.equal(one.column("query"), i)).drop_columns(["query"])
            assert single.equals(mine)


def test_error_in_a_threaded_batch_is_raised_once_on_the_caller(full_engine, corpus):
    q = corpus.queries(64, seed=9)
    q[37, 4] = np.nan
    hooked: list = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: hooked.append(args)
    old_unraisable = sys.unraisablehook
    sys.unraisablehook = lambda args: hooked.append(args)
    try:
        before = threading.active_count()
        caller = threading.get_ident()
        raised_on = []
        try:
            full_engine.search_batch(q, 5, known_at=KNOWN_AT, threads=2)
        except QueryError as e:
            raised_on.append((threading.get_ident(), str(e)))
        assert len(raised_on) == 1
        assert raised_on[0][0] == caller
        assert "query 37" in raised_on[0][1]
        assert threading.active_count() == before
    finally:
        threading.excepthook = old_hook
        sys.unraisablehook = old_unraisable
    assert hooked == []
    # the engine is fine afterwards
    q[37, 4] = 0.1
    assert full_engine.search_batch(q, 5, known_at=KNOWN_AT, threads=2).num_rows == 64 * 5


def test_a_failing_thread_does_not_disturb_the_others(full_engine, corpus):
    """One Python thread keeps sending bad batches while three search correctly: only the
    bad thread sees errors, each exactly once per call, and the others' answers are exact."""
    q = corpus.queries(16, seed=10)
    t = times_for_selectivity(corpus, 0.3, 16)
    want = full_engine.search_batch(q, 10, mode="as_of", as_of=t, known_at=KNOWN_AT, exact=True, threads=1)
    bad = q.copy()
    bad[5] = 0.0  # zero vector under cosine
    errors: list = []
    got: list = []
    raised = [0]

    def good_worker():
        try:
            for _ in range(15):
                got.append(full_engine.search_batch(q, 10, mode="as_of", as_of=t, known_at=KNOWN_AT, exact=True,
                                                    threads=2))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def bad_worker():
        for _ in range(15):
            try:
                full_engine.search_batch(bad, 10, mode="as_of", as_of=t, known_at=KNOWN_AT, threads=2)
            except QueryError as e:
                assert "query 5" in str(e)
                raised[0] += 1
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

    ths = [threading.Thread(target=good_worker) for _ in range(3)] + [threading.Thread(target=bad_worker)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(timeout=120)
    if errors:
        raise errors[0]
    assert raised[0] == 15
    assert len(got) == 45
    for res in got:
        assert res.equals(want)
