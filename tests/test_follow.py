"""Followers (Engine.follow / refresh): a read-only engine that tracks a store another engine
writes holds exactly the writer's acknowledged writes — the same rows, lifecycle and answers
as the writer after every refresh, across checkpoints — never a write the writer has not
acknowledged, and says so plainly when the store is damaged or it is not a follower."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine import _wal
from chrono_engine.errors import CorruptStoreError, StorageError

DIM = 8
MODES = [dict(mode="latest"), dict(mode="as_of", as_of="2024-06-01"), dict(mode="all"),
         dict(mode="as_of", as_of="2025-06-01", known_at="2025-01-01")]


def _rows(rng, n, stems=6, meta=False):
    out = {"vector": rng.standard_normal((n, DIM)).astype(np.float32),
           "valid_from": (np.datetime64("2022-07-01", "us")
                          + rng.integers(0, 900, n).astype("timedelta64[D]")),
           "stem_id": [f"s{int(i)}" for i in rng.integers(0, stems, n)],
           "version": [f"1.{int(i)}" for i in rng.integers(0, 60000, n)],
           "fact_type": ["news"] * n, "ingested_at": ["2022-06-01"] * n, "content": [f"c{int(i)}" for i in rng.integers(0, 10**6, n)]}
    if meta:
        out["tenant"] = [("acme", "globex", None)[int(i)] for i in rng.integers(0, 3, n)]
    return out


def _same(writer: ce.Engine, follower: ce.Engine, rng) -> None:
    assert len(follower) == len(writer)
    a, b = writer.columns(), follower.columns()
    assert list(a) == list(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    ids = a["id"]
    if len(ids):
        assert writer.get(ids).equals(follower.get(ids))
    q = rng.standard_normal((4, DIM)).astype(np.float32)
    for opts in MODES:
        for exact in (True, False):
            x = writer.search_batch(q, k=7, exact=exact, **opts)
            y = follower.search_batch(q, k=7, exact=exact, **opts)
            assert x.column("id").equals(y.column("id")), opts
            np.testing.assert_array_equal(x.column("score").to_numpy(), y.column("score").to_numpy())


def test_follower_holds_every_acknowledged_write_through_checkpoints(tmp_path):
    rng = np.random.default_rng(1)
    w = ce.Engine.create(tmp_path / "st", dim=DIM)
    w.ingest(_rows(rng, 40))
    f = ce.Engine.follow(tmp_path / "st")
    assert f.position == w.position
    _same(w, f, rng)
    ids = []
    for step in range(12):
        kind = step % 4
        if kind == 0:
            ids.extend(w.ingest(_rows(rng, int(rng.integers(1, 20)), meta=step > 4)).tolist())
        elif kind == 1:
            stem = f"s{int(rng.integers(0, 6))}"
            w.supersede(stem, {"vector": rng.standard_normal((1, DIM)).astype(np.float32), "content": ["new"]},
                        f"2026-0{1 + step % 9}-01", version=f"9.{step}")
        elif kind == 2:
            w.retract([int(rng.choice(ids))] if ids else [0], at="2025-03-01")
        else:
            w.save()  # a checkpoint: the follower loads the new snapshot
        if step % 3 == 2:
            continue  # two writes between refreshes sometimes
        got = f.refresh()
        assert got == -1 if kind == 3 else got >= 1
        assert f.position == w.position
        _same(w, f, rng)
    assert f.refresh() in (0, -1)
    assert f.position == w.position
    _same(w, f, rng)


def test_follower_never_applies_an_unacknowledged_write(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    w = ce.Engine.create(tmp_path / "st", dim=DIM)
    w.ingest(_rows(rng, 10))
    f = ce.Engine.follow(tmp_path / "st")
    # a write logged whole but not yet acknowledged (the writer stopped before its mark)
    monkeypatch.setattr(_wal.LogWriter, "acknowledge", lambda self: None)
    w.ingest(_rows(rng, 5))
    assert f.refresh() == 0 and len(f) == 10
    late = ce.Engine.follow(tmp_path / "st")  # a new follower stops at the mark too
    assert len(late) == 10
    monkeypatch.undo()
    w.ingest(_rows(rng, 3))  # its mark covers both writes
    assert f.refresh() == 2 and len(f) == 18
    assert late.refresh() == 2
    _same(w, f, rng)


def test_follower_of_an_interval_writer_sees_synced_writes(tmp_path):
    rng = np.random.default_rng(3)
    ce.Engine.create(tmp_path / "st", dim=DIM).close()
    w = ce.Engine.open(tmp_path / "st", fsync="interval", fsync_interval=0.05)
    f = ce.Engine.follow(tmp_path / "st")
    w.ingest(_rows(rng, 7))
    w.close()  # syncs (and marks) what is unsynced
    assert f.refresh() == 1 and len(f) == 7


def test_follower_in_another_process(tmp_path):
    """The writer is another process; the follower refreshes here between its writes."""
    rng = np.random.default_rng(4)
    w = ce.Engine.create(tmp_path / "st", dim=DIM)
    w.ingest(_rows(rng, 5))
    w.close()
    f = ce.Engine.follow(tmp_path / "st")
    code = textwrap.dedent(f"""
        import numpy as np, chrono_engine as ce
        w = ce.Engine.open({str(tmp_path / 'st')!r})
        w.ingest({{"vector": np.ones((3, {DIM}), np.float32), "valid_from": ["2024-01-01"] * 3,
                   "content": ["a", "b", "c"]}})
        w.retract([0])
        w.close()
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert f.refresh() == 2
    ref = ce.Engine.open(tmp_path / "st", read_only=True)
    _same(ref, f, rng)


def test_refresh_is_for_followers_only(tmp_path):
    rng = np.random.default_rng(5)
    w = ce.Engine.create(tmp_path / "st", dim=DIM)
    w.ingest(_rows(rng, 3))
    with pytest.raises(StorageError, match="Engine.follow"):
        w.refresh()
    with pytest.raises(StorageError, match="Engine.follow"):
        ce.Engine.open(tmp_path / "st", read_only=True).refresh()
    f = ce.Engine.follow(tmp_path / "st")
    with pytest.raises(StorageError, match="followed read-only"):
        f.ingest(_rows(rng, 1))
    assert len(f) == 3  # nothing changed
    assert ce.Engine(dim=DIM).position is None


def test_damaged_log_is_an_error_and_keeps_what_was_applied(tmp_path):
    rng = np.random.default_rng(6)
    w = ce.Engine.create(tmp_path / "st", dim=DIM)
    w.ingest(_rows(rng, 4))
    f = ce.Engine.follow(tmp_path / "st")
    w.ingest(_rows(rng, 4))
    w.ingest(_rows(rng, 4))
    name = w.position[0]
    log = tmp_path / "st" / name / "log.wal"
    data = bytearray(log.read_bytes())
    data[-40] ^= 0x01  # inside the last acknowledged record
    w.close()
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="record 3|acknowledged"):
        f.refresh()
    assert len(f) == 4 or len(f) == 8  # a prefix of the acknowledged writes, never a part of one
    with pytest.raises(CorruptStoreError):
        ce.Engine.follow(tmp_path / "st")


def test_follower_keeps_metadata_and_filters(tmp_path):
    rng = np.random.default_rng(7)
    w = ce.Engine.create(tmp_path / "st", dim=DIM)
    w.ingest(_rows(rng, 30))
    f = ce.Engine.follow(tmp_path / "st")
    w.ingest(_rows(rng, 30, meta=True))  # a column that first arrives after the follower opened
    f.refresh()
    assert f.metadata == w.metadata == {"tenant": "string"}
    q = rng.standard_normal((3, DIM)).astype(np.float32)
    a = w.search_batch(q, k=5, mode="all", where={"tenant": "acme"}, exact=True)
    b = f.search_batch(q, k=5, mode="all", where={"tenant": "acme"}, exact=True)
    assert a.column("id").equals(b.column("id"))
    assert pa.compute.all(pa.compute.equal(b.column("tenant"), "acme")).as_py()
