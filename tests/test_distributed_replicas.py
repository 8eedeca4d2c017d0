"""Replicas of a sharded engine on a local Ray (2 CPUs): every shard a store written by its
primary and followed by replicas. Their answers are one Engine's; a read sees every write
acknowledged before it (read-your-writes) on whichever copy answers; a killed replica's
reads are retried on another copy within the call and the copy is replaced from the store; a
killed primary hands writing to a replica that holds every acknowledged write, and a write in
flight when it died is applied exactly once. The multi-node versions (real Ray nodes killed):
tests/test_distributed_nodes.py."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")

import chrono_engine as ce  # noqa: E402
from chrono_engine.errors import ConfigError, QueryError  # noqa: E402

from test_distributed_sharded import DIM, POLICY, QUERIES, _apply, _rows, _tables_equal  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

CASES = [dict(mode="latest", as_of="2024-06-01"), dict(mode="as_of", as_of="2022-03-15", exact=True),
         dict(mode="all", as_of="2024-06-01"), dict(mode="latest", as_of="2024-06-01", known_at="2024-02-01")]


def _sharded(tmp_path, n=2, replicas=2, **kw):
    return ce.distributed.ShardedEngine(n, DIM, decay=POLICY, cpus_per_shard=2 / (n * replicas) - 1e-6,
                                        replicas=replicas, path=tmp_path / "sh", timeout=60, **kw)


def _copies(sh, shard):
    return [m for m in sh._groups[shard].members if m.alive]


def test_replicas_answer_as_one_engine_on_every_copy(local_ray, tmp_path):
    sh = _sharded(tmp_path)
    try:
        one = ce.Engine(DIM, decay=POLICY, threads=1)
        for g, r in zip(_apply(sh), _apply(one)):
            assert np.array_equal(g, r)
        st = sh.status()
        assert [sorted(c["role"] for c in shard) for shard in st] == [["primary", "replica"]] * 2
        assert all(c["alive"] and c["ready"] and c["position"] is not None for shard in st for c in shard)
        for case in CASES:
            ref = one.search_batch(QUERIES, 10, **case)
            for _ in range(3):  # the reads go round the copies of each shard
                _tables_equal(sh.search_batch(QUERIES, 10, **case), ref)
        for shard in range(2):  # and each copy alone
            for m in _copies(sh, shard):
                got = ray.get(m.actor.run.remote("columns", _at=sh._groups[shard].at))
                ref = ray.get(sh._primary_member(shard).actor.run.remote("columns"))
                assert all(np.array_equal(got[c], ref[c]) for c in ref)
        _tables_equal(sh.history("doc-5"), one.history("doc-5"))
        _tables_equal(sh.get([3, 250, 700]), one.get([3, 250, 700]))
    finally:
        sh.shutdown()


def test_replica_reads_see_every_acknowledged_write(local_ray, tmp_path):
    """Read-your-writes: after each write, reads on any copy (replicas catch up first) see it."""
    sh = _sharded(tmp_path)
    try:
        sh.ingest(_rows(50, 1))
        for step in range(8):
            ids = sh.ingest(_rows(3, 100 + step))
            for _ in range(2):
                assert sh.contains(ids).all()
                assert sh.get(ids).num_rows == 3
            sh.retract(ids[:1])
            got = sh.get(ids[:1])
            assert got.column("retracted_at").null_count == 0
            if step == 4:
                sh.checkpoint()  # replicas load the new snapshot on their next read
        assert len(sh) == 50 + 24
    finally:
        sh.shutdown()


def test_a_killed_replica_is_retried_within_the_call_and_replaced(local_ray, tmp_path):
    sh = _sharded(tmp_path)
    try:
        one = ce.Engine(DIM, decay=POLICY, threads=1)
        _apply(sh), _apply(one)
        ref = one.search_batch(QUERIES, 10, **CASES[0])
        replica = next(m for m in _copies(sh, 1) if m.role == "replica")
        ray.kill(replica.actor)
        for _ in range(4):  # never an error: a read that met the dead copy went to the other
            _tables_equal(sh.search_batch(QUERIES, 10, **CASES[0]), ref)
        sh.wait_replicas(timeout=120)
        assert any("a replica died" in e for _, e in sh.events)
        assert any("a new replica serves" in e for _, e in sh.events)
        assert replica not in sh._groups[1].members and len(_copies(sh, 1)) == 2
        new = next(m for m in _copies(sh, 1) if m.role == "replica")
        got = ray.get(new.actor.run.remote("search_batch", QUERIES, 10, mode="latest", as_of="2024-06-01",
                                           _at=sh._groups[1].at))
        want = ray.get(sh._primary_member(1).actor.run.remote("search_batch", QUERIES, 10, mode="latest",
                                                              as_of="2024-06-01"))
        assert got.column("id").equals(want.column("id"))
    finally:
        sh.shutdown()


def test_a_killed_primary_hands_writing_to_a_replica(local_ray, tmp_path):
    sh = _sharded(tmp_path)
    try:
        one = ce.Engine(DIM, decay=POLICY, threads=1)
        _apply(sh), _apply(one)
        old = sh._primary_member(0)
        ray.kill(old.actor)
        # the next write finds it dead, promotes the replica (every acknowledged write is in
        # the store's log) and goes on; nothing acknowledged is lost
        rows = _rows(40, 77)
        assert np.array_equal(sh.ingest(rows), one.ingest(rows))
        assert sh._primary_member(0) is not old and sh._primary_member(0).role == "primary"
        assert any("became the primary" in e for _, e in sh.events)
        for case in CASES:
            _tables_equal(sh.search_batch(QUERIES, 10, **case), one.search_batch(QUERIES, 10, **case))
        sh.wait_replicas(timeout=120)
        assert len(_copies(sh, 0)) == 2
    finally:
        sh.shutdown()
    back = ce.distributed.ShardedEngine.open(tmp_path / "sh", cpus_per_shard=0.49, replicas=2)
    try:  # the store holds it all
        _tables_equal(back.search_batch(QUERIES, 10, **CASES[1]), one.search_batch(QUERIES, 10, **CASES[1]))
    finally:
        back.shutdown()


def test_a_write_in_flight_when_its_primary_dies_is_applied_once(local_ray, tmp_path):
    sh = _sharded(tmp_path, n=1)
    try:
        sh.ingest(_rows(30, 1))
        for trial in range(3):
            primary = sh._primary_member(0)
            rows = _rows(2000, 50 + trial)
            out: dict = {}
            t = threading.Thread(target=lambda: out.update(ids=sh.ingest(rows)))
            t.start()
            time.sleep(0.05 * trial)
            ray.kill(primary.actor)
            t.join(timeout=300)
            ids = out["ids"]  # either the dead primary logged it (it stands) or it was made again
            assert sh.contains(ids).all()
            assert len(sh) == 30 + 2000 * (trial + 1)
            assert len(np.unique(sh.get(ids).column("id").to_numpy())) == 2000
            sh.wait_replicas(timeout=120)
    finally:
        sh.shutdown()


def test_one_copy_with_a_store_restarts_from_it(local_ray, tmp_path):
    sh = _sharded(tmp_path, replicas=1)
    try:
        sh.ingest(_rows(60, 3))
        before = sh.search_batch(QUERIES, 10, **CASES[1])
        ray.kill(sh._actors[1])
        _tables_equal(sh.search_batch(QUERIES, 10, **CASES[1]), before)  # waits for the restart
        assert sh.ingest(_rows(2, 4)).tolist() == [60, 61]
    finally:
        sh.shutdown()


def test_errors_inside_copies_are_the_engines_own(local_ray, tmp_path):
    sh = _sharded(tmp_path)
    try:
        sh.ingest(_rows(20, 5))
        with pytest.raises(QueryError, match="unknown field"):
            sh.search_batch(QUERIES, 5, mode="latest", as_of="2024-06-01", where={"nope": 1})
        with pytest.raises(QueryError):
            sh.search_batch(QUERIES, 5, mode="bogus")
    finally:
        sh.shutdown()


def test_replica_arguments_are_checked(local_ray, tmp_path):
    with pytest.raises(ConfigError, match="replicas need path="):
        ce.distributed.ShardedEngine(2, DIM, replicas=2)
    with pytest.raises(ConfigError, match="replicas"):
        ce.distributed.ShardedEngine(2, DIM, replicas=0, path=tmp_path / "a")
    with pytest.raises(ConfigError, match="fsync"):
        ce.distributed.ShardedEngine(2, DIM, path=tmp_path / "b", fsync="off")
    with pytest.raises(ConfigError, match="need 200 CPUs"):
        ce.distributed.ShardedEngine(2, DIM, replicas=2, path=tmp_path / "c", cpus_per_shard=50)
    assert not (tmp_path / "c" / "shard-0").exists()
