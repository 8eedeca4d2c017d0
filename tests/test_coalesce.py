"""Coalescing of concurrent search() / asearch() calls (chrono_engine/_coalesce.py): the
answers equal the same calls made one after another, whatever the mix of options, times and
errors; groups really form under concurrency; the knobs are checked."""
from __future__ import annotations

import asyncio
import sys
import threading
import time

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine._coalesce import Coalescer
from chrono_engine.errors import ConfigError, QueryError

DIM = 8
DAY = 86_400_000_000
T0 = 1_577_836_800_000_000  # 2020-01-01


@pytest.fixture(scope="module")
def eng():
    rng = np.random.default_rng(0)
    n = 3000
    e = ce.Engine(dim=DIM, threads=1)
    e.ingest({"vector": rng.normal(size=(n, DIM)).astype(np.float32),
              "valid_from": T0 + rng.integers(0, 1500, n) * DAY,
              "valid_to": [None if i % 3 else T0 + (1500 + i % 400) * DAY for i in range(n)],
              "stem_id": [f"s{i % 700}" if i % 2 else None for i in range(n)],
              "version": [str(1 + i // 700) if i % 2 else None for i in range(n)],
              "fact_type": ["news", "policy", "general"] * (n // 3),
              "title": [f"t{i}" for i in range(n)]})
    return e


def _calls(seed: int, n: int) -> list:
    """Random single-search calls: vector, k and options, a few of them bad."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        kw = {"mode": ["latest", "as_of", "window", "all"][i % 4], "k": int(rng.integers(1, 12))}
        t = int(T0 + rng.integers(0, 1800) * DAY)
        if kw["mode"] == "window":
            kw["window"] = (t - 60 * DAY, t)
        else:
            kw["as_of"] = t
        if i % 5 == 0:
            kw["known_at"] = int(T0 + rng.integers(-10, 10) * DAY)
        if i % 7 == 0:
            kw["fusion"] = "linear"
        if i % 11 == 0:
            kw["fact_types"] = ["news"]
        if i % 13 == 0:  # refused (a window that ends before it starts): this call only
            kw = {"mode": "window", "k": kw["k"], "window": (t, t - 60 * DAY)}
        out.append((rng.normal(size=DIM).astype(np.float32), kw))
    return out


def _one(e, call):
    v, kw = call
    kw = dict(kw)
    k = kw.pop("k")
    try:
        return e.search(v, k, exact=True, **kw)
    except QueryError as err:
        return ("QueryError", str(err))


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return a.equals(b)


def test_concurrent_calls_equal_the_same_calls_one_after_another(eng):
    calls = _calls(1, 400)
    seq = [_one(eng, c) for c in calls]
    before = eng.stats()["search"]
    got = [None] * len(calls)

    def work(start):
        for i in range(start, len(calls), 32):
            got[i] = _one(eng, calls[i])
    _in_threads(work, 32)
    assert all(_same(a, b) for a, b in zip(got, seq))
    assert sum(isinstance(x, tuple) for x in seq) >= 20  # the bad calls failed alone
    after = eng.stats()["search"]
    assert after["calls"] - before["calls"] == len(calls) - sum(isinstance(x, tuple) for x in seq)
    # calls with one set of options are coalesced: random options (above) meet their like
    # only when many calls wait at once, which a loaded machine's timing may never give
    same = [(v, {"k": 5, "mode": "as_of", "as_of": T0 + 700 * DAY}) for v, _ in calls[:256]]
    want = [_one(eng, c) for c in same]
    got = [None] * len(same)
    before = eng.stats()["search"]

    def alike(start):
        for i in range(start, len(same), 32):
            got[i] = _one(eng, same[i])
    _in_threads(alike, 32)
    assert all(_same(a, b) for a, b in zip(got, want))
    after = eng.stats()["search"]
    groups, served = after["groups"] - before["groups"], after["calls"] - before["calls"]
    assert served == len(same)
    assert groups < served  # calls were coalesced


def _in_threads(work, n: int) -> None:
    """``work(j)`` on ``n`` threads started together, switching every 20 us (not every 5
    ms: the calls overlap whatever the machine's load)."""
    start = threading.Barrier(n)
    threads = [threading.Thread(target=lambda j=j: (start.wait(), work(j))) for j in range(n)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(2e-5)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)


def test_asearch_equals_search(eng):
    calls = [c for i, c in enumerate(_calls(2, 200)) if i % 13]

    async def main():
        return await asyncio.gather(*[eng.asearch(v, kw["k"], exact=True, **{x: y for x, y in kw.items() if x != "k"})
                                      for v, kw in calls])
    got = asyncio.run(main())
    assert all(a.equals(_one(eng, c)) for a, c in zip(got, calls))


def test_a_query_that_fails_in_a_group_fails_alone():
    """Under ip, a query whose similarity overflows float32 is refused; the calls grouped
    with it still get their answers."""
    e = ce.Engine(dim=2, metric="ip", threads=1)
    e.ingest({"vector": [[1e20, 0.0], [0.0, 1.0]], "valid_from": ["2024-01-01"] * 2})
    ok = np.array([0.0, 1.0], np.float32)
    bad = np.array([1e20, 0.0], np.float32)
    batch = [(ok if i % 2 else bad) for i in range(20)]
    out = [None] * len(batch)

    def work(i):
        try:
            out[i] = e.search(batch[i], 1, mode="all").column("id").to_pylist()
        except QueryError as err:
            out[i] = "overflow" if "overflows" in str(err) else str(err)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(batch))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == ["overflow" if i % 2 == 0 else [1] for i in range(len(batch))]


def test_the_group_waits_and_sizes():
    seen = []

    def run(batch):
        seen.append(len(batch))
        return [r.payload for r in batch]
    c = Coalescer(run, max_group=4, wait=0.0)
    out = [None] * 40
    barrier = threading.Barrier(40)

    def work(i):
        barrier.wait()
        out[i] = c.submit("k", i)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(40)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == list(range(40))
    assert max(seen) <= 4 and sum(seen) == 40
    # keys never mix
    c2 = Coalescer(lambda b: [(r.key, r.payload) for r in b if len({x.key for x in b}) == 1], max_group=64)
    res = [None] * 30
    ts = [threading.Thread(target=lambda i=i: res.__setitem__(i, c2.submit(i % 3, i))) for i in range(30)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert res == [(i % 3, i) for i in range(30)]


def test_a_lone_call_runs_itself_only_when_the_engine_is_idle():
    """``alone()`` (the lone call's fast path of ``Engine.search``) claims the engine only
    when no group runs, none is queued and the last group was a lone call (a leader that
    saw company waits for it instead); a call that arrives meanwhile queues and leads the
    next group once ``release()`` is called; the counters count the lone call."""
    c = Coalescer(lambda b: [r.payload for r in b], max_group=8)
    assert c.alone() and (c.groups, c.calls) == (1, 1)
    assert not c.alone()  # busy
    got = []
    t = threading.Thread(target=lambda: got.append(c.submit("k", 7)))
    t.start()
    deadline = time.monotonic() + 10
    while not c._queue and time.monotonic() < deadline:
        time.sleep(0.001)
    assert len(c._queue) == 1 and not got  # queued behind the lone call
    c.release()
    t.join(10)
    assert got == [7] and (c.groups, c.calls) == (2, 2)
    assert c.alone()
    c.release()
    c._last_size = 3  # the last group had company: the next call submits (and lets it come back)
    assert not c.alone()
    assert c.submit("k", 1) == 1 and c.alone()
    c.release()


def test_search_alone_equals_search_through_the_coalescer(eng, monkeypatch):
    """A lone ``search()`` (the engine idle: run by the caller, natively where it can)
    returns the table the coalescer's group path returns, with and without ``verify``."""
    rng = np.random.default_rng(3)
    for i in range(12):
        v = rng.standard_normal(DIM).astype(np.float32)
        kw = dict(as_of=T0 + i * 30 * DAY, known_at=T0 + 4000 * DAY, verify=0.2 if i % 3 == 0 else None,
                  lang="zh" if i % 2 else "en")
        fast = eng.search(v, 5, **kw)
        with monkeypatch.context() as m:
            m.setattr(Coalescer, "alone", lambda self: False)
            slow = eng.search(v, 5, **kw)
        assert fast.equals(slow) and fast.schema.equals(slow.schema)


@pytest.mark.parametrize("name, value", [("coalesce_group", 0), ("coalesce_group", 10**6), ("coalesce_group", "8"),
                                         ("coalesce_wait", -1), ("coalesce_wait", 1.0), ("coalesce_wait", "0"),
                                         ("coalesce_wait", float("nan"))])
def test_bad_knobs_are_named(name, value):
    e = ce.Engine(dim=2)
    e.ingest([{"vector": [1, 0], "valid_from": "2020-01-01"}])
    setattr(e, name, value)
    with pytest.raises(ConfigError, match=name):
        e.search([1, 0])


def test_a_dropped_engine_is_freed_at_once(tmp_path):
    """The coalescer holds no reference to its engine: a writable engine dropped after a
    search releases its store's writer lock at once (no cycle for the collector to find)."""
    import gc
    gc.disable()
    try:
        e = ce.Engine.create(tmp_path / "s", 2)
        e.ingest([{"vector": [1, 0], "valid_from": "2020-01-01"}])
        e.search([1, 0])
        del e
        ce.Engine.open(tmp_path / "s").close()  # would raise StoreLockedError
    finally:
        gc.enable()


def test_asearch_groups_form_and_answers_equal_one_by_one(eng):
    """Concurrent awaits on one loop are coalesced (fewer groups than calls) and every
    answer, errors included, equals the same call made alone."""
    calls = _calls(3, 160)

    async def one(v, kw):
        kw = dict(kw)
        k = kw.pop("k")
        try:
            return await eng.asearch(v, k, exact=True, **kw)
        except QueryError as err:
            return ("QueryError", str(err))

    async def main():
        return await asyncio.gather(*[one(v, kw) for v, kw in calls])
    got = asyncio.run(main())
    assert all(_same(a, _one(eng, c)) for a, c in zip(got, calls))
    c = eng.stats()["asearch"]
    assert c["loops"] == 1  # this loop's coalescer alone: those of closed loops were dropped
    assert c["calls"] == len(calls) - sum(isinstance(x, tuple) for x in got)
    assert c["groups"] < c["calls"]  # coalesced


def test_asearch_from_several_event_loops():
    """Each event loop (here one per thread) gets its own coalescer; the answers are those
    of search(), and the coalescers of closed loops are dropped."""
    e = ce.Engine(dim=DIM, threads=1)
    rng = np.random.default_rng(2)
    e.ingest({"vector": rng.normal(size=(200, DIM)).astype(np.float32), "valid_from": T0 + np.arange(200) * DAY})
    qs = rng.normal(size=(40, DIM)).astype(np.float32)
    want = [e.search(q, 5, mode="all").column("id").to_pylist() for q in qs]
    out = {}

    def work(j):
        async def main():
            return await asyncio.gather(*[e.asearch(q, 5, mode="all") for q in qs[j::4]])
        out[j] = [t.column("id").to_pylist() for t in asyncio.run(main())]
    ts = [threading.Thread(target=work, args=(j,)) for j in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert [out[i % 4][i // 4] for i in range(40)] == want
    assert 1 <= e.stats()["asearch"]["loops"] <= 4
    asyncio.run(e.asearch(qs[0], 5, mode="all"))  # a new loop: the closed loops' coalescers go
    assert e.stats()["asearch"]["loops"] == 1


def test_asearch_a_query_that_fails_in_a_group_fails_alone():
    e = ce.Engine(dim=2, metric="ip", threads=1)
    e.ingest({"vector": [[1e20, 0.0], [0.0, 1.0]], "valid_from": ["2024-01-01"] * 2})
    ok, bad = np.array([0.0, 1.0], np.float32), np.array([1e20, 0.0], np.float32)

    async def one(v):
        try:
            return (await e.asearch(v, 1, mode="all")).column("id").to_pylist()
        except QueryError as err:
            return "overflow" if "overflows" in str(err) else str(err)

    async def main():
        return await asyncio.gather(*[one(bad if i % 2 == 0 else ok) for i in range(20)])
    assert asyncio.run(main()) == ["overflow" if i % 2 == 0 else [1] for i in range(20)]


@pytest.mark.slow
def test_async_coalescer_inline_timeout_and_group_errors():
    """The service's mode (inline=True): a lone call runs on the loop's thread, concurrent
    ones on the worker; a timed-out call raises TimeoutError while its group runs on; an
    error of the whole group is every call's."""
    import time
    from chrono_engine._coalesce import AsyncCoalescer
    seen = []

    def run(batch):
        seen.append((threading.current_thread().name, len(batch)))
        if batch[0].key == "slow":
            time.sleep(0.3)
        if batch[0].key == "boom":
            raise RuntimeError("boom")
        return [r.payload * 2 for r in batch]

    async def main():
        c = AsyncCoalescer(inline=True, name="test-groups")
        alone = await c.submit("k", 1, run)
        many = await asyncio.gather(*[c.submit("k", i, run) for i in range(10)])
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.gather(c.submit("slow", 0, run, timeout=0.05), c.submit("slow", 1, run, timeout=0.05))
        after = await c.submit("k", 5, run, timeout=5)  # queued behind the slow group, then served
        errs = await asyncio.gather(*[c.submit("boom", i, run) for i in range(3)], return_exceptions=True)
        c.close()
        return alone, many, after, errs
    alone, many, after, errs = asyncio.run(main())
    assert alone == 2 and many == [2 * i for i in range(10)] and after == 10
    assert all(isinstance(x, RuntimeError) for x in errs)
    assert seen[0] == ("MainThread", 1)  # the lone call, on the loop
    assert any(name.startswith("test-groups") and n > 1 for name, n in seen)  # a group on the worker


def test_a_dropped_engine_after_asearch_is_freed_at_once(tmp_path):
    import gc
    gc.disable()
    try:
        e = ce.Engine.create(tmp_path / "s", 2)
        e.ingest([{"vector": [1, 0], "valid_from": "2020-01-01"}])
        asyncio.run(e.asearch([1, 0]))
        del e
        ce.Engine.open(tmp_path / "s").close()  # would raise StoreLockedError
    finally:
        gc.enable()


def test_a_leader_after_company_lets_the_callers_come_back(monkeypatch):
    """With no coalesce_wait, a leader whose last groups had company waits while calls keep
    arriving (the quiet period and the cap widened here, so the test does not race thread
    start-up), up to as many as the last two groups held; then it runs them as one group."""
    import chrono_engine._coalesce as co
    monkeypatch.setattr(co, "SETTLE_QUIET", 0.2)
    monkeypatch.setattr(co, "SETTLE_MAX", 5.0)
    seen = []

    def run(batch):
        seen.append(len(batch))
        return [r.payload for r in batch]
    c = Coalescer(run, max_group=64, wait=0.0)
    c._last_size = c._prev_size = 4  # as after two groups of four: eight callers
    out = [None] * 8

    def work(i):
        out[i] = c.submit("k", i)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
        time.sleep(0.01)  # arrivals spread out, each well inside the quiet period
    for t in ts:
        t.join()
    assert out == list(range(8))
    assert seen == [8]
    # alone, a leader does not wait for anyone: its last group had no company
    c._last_size = c._prev_size = 1
    assert c.submit("k", 99) == 99 and seen == [8, 1]
