"""Coalescing through the Engine's private runner and coalescer state: a call's "now" is
fixed when it is made even when its group runs later (the group runner slowed), and a
leader that saw company waits for its group to fill (the coalescer's memory of the last
group set). The public behaviour is tested in test_coalesce.py."""
from __future__ import annotations

import threading

import chrono_engine as ce


def test_now_is_when_the_call_was_made():
    """A call's default "now" (latest mode's T and known_at) is read when it is made, not
    when its group runs: an item ingested after the call started is not in its view."""
    e = ce.Engine(dim=2, threads=1)
    e.ingest([{"vector": [1, 0], "valid_from": "2020-01-01"}])
    gate = threading.Event()
    orig = e._run_group

    def slow(batch):
        gate.wait(5)
        return orig(batch)
    e._run_group = slow  # the engine passes its runner per call
    res = {}
    t = threading.Thread(target=lambda: res.setdefault("hits", e.search([1, 0], 5, mode="all")))
    t.start()
    while e.stats()["search"]["groups"] == 0:  # the call is in its group, its times already read
        threading.Event().wait(0.001)
    e.ingest([{"vector": [1, 0], "valid_from": "2020-01-01"}])
    gate.set()
    t.join()
    assert res["hits"].column("id").to_pylist() == [0]


def test_a_wait_gathers_companions():
    """With coalesce_wait, a leader that saw company waits for its group to fill."""
    e = ce.Engine(dim=2, threads=1)
    e.ingest([{"vector": [1, 0], "valid_from": "2020-01-01"}])
    e.coalesce_wait, e.coalesce_group = 0.01, 8
    e._coalescer._last_size = 2  # as after a group of two
    out = [None] * 8
    barrier = threading.Barrier(8)

    def work(i):
        barrier.wait()
        out[i] = e.search([1, 0], 1, mode="all").column("id").to_pylist()
    before = e.stats()["search"]["groups"]
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == [[0]] * 8
    assert e.stats()["search"]["groups"] - before <= 2
