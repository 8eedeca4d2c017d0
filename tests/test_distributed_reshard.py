"""Re-sharding a sharded engine (ShardedEngine.add_shards): placement by ranges of a
BLAKE2b-64 placement key moves about m / (n + m) of the items, each to a new shard only; the
items move with their whole history; answers equal one Engine's before, during (queries run
while items are copied) and after the move, and after writes that follow it, through save
and open. The layout's arithmetic is checked without Ray."""
from __future__ import annotations

import hashlib
import json
import threading

import numpy as np
import pytest

import chrono_engine as ce

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")

from chrono_engine.distributed._sharded import HIDDEN, _Layout, placement_key  # noqa: E402
from chrono_engine.errors import ConfigError, QueryError, SchemaError  # noqa: E402

from test_distributed_sharded import DIM, POLICY, QUERIES, _apply, _rows, _tables_equal  # noqa: E402

CASES = [dict(mode="latest", as_of="2024-06-01"), dict(mode="as_of", as_of="2022-03-15", exact=True),
         dict(mode="all", as_of="2024-06-01"), dict(mode="latest", as_of="2024-06-01", known_at="2024-02-01"),
         dict(mode="window", window=("2021-01-01", "2021-09-01"))]


def test_placement_key_is_blake2b_of_the_stem():
    for stem in ("doc-1", "差旅报销管理制度", ""):
        h = int.from_bytes(hashlib.blake2b(stem.encode(), digest_size=8).digest(), "little")
        assert placement_key(stem) == h - (1 << 63)
    h = int.from_bytes(hashlib.blake2b(b"\0" + b"12", digest_size=8).digest(), "little")
    assert placement_key(None, 12) == h - (1 << 63)


@pytest.mark.parametrize("n,m", [(1, 1), (2, 1), (2, 2), (3, 5), (7, 1), (4, 4)])
def test_reshard_layout_moves_m_over_n_plus_m_to_new_shards_only(n, m):
    keys = np.random.default_rng(n * 10 + m).integers(-(1 << 63), (1 << 63) - 1, 200_000, dtype=np.int64)
    lay = _Layout("ranges", n)
    stems = [None] * len(keys)

    def owner(layout):
        return layout.owners[np.searchsorted(layout.starts, keys, side="right") - 1]

    before = owner(lay)
    assert np.bincount(before, minlength=n).min() > len(keys) / n * 0.97  # balanced
    grown, gives = lay.grown(m)
    after = owner(grown)
    moved = before != after
    assert abs(moved.mean() - m / (n + m)) < 0.01
    assert (after[moved] >= n).all()  # to new shards only
    assert np.bincount(after, minlength=n + m).min() > len(keys) / (n + m) * 0.97
    # what each shard gives is exactly what moved out of it, and its filter keeps the rest
    for s in range(n):
        inside = np.zeros(len(keys), bool)
        for lo, hi, dst in gives.get(s, []):
            sel = (keys >= lo) & ((keys < hi) if hi is not None else True)
            inside |= sel & (before == s)
            assert (after[sel & (before == s)] == dst).all()
        assert np.array_equal(inside, moved & (before == s))
        kept = np.zeros(len(keys), bool)
        for lo, hi in grown.ranges(s):
            kept |= (keys >= lo) & ((keys < hi) if hi is not None else True)
        assert np.array_equal(kept, after == s)
    assert grown.dirty == frozenset(range(n))
    del stems


def _queries_equal(sh, one, k=10):
    for case in CASES:
        _tables_equal(sh.search_batch(QUERIES, k, **case), one.search_batch(QUERIES, k, **case))


def _while_reading(sh, one, change):
    """``change()``'s result, run while a reader compares every answer of ``sh`` with one
    Engine's in the five CASES; asserts the reader saw no error and no difference."""
    stop, seen, bad = threading.Event(), [0], []
    refs = [one.search_batch(QUERIES, 10, **case) for case in CASES]

    def reader():
        i = 0
        while not stop.is_set():
            try:
                _tables_equal(sh.search_batch(QUERIES, 10, **CASES[i % len(CASES)]), refs[i % len(CASES)])
                seen[0] += 1
            except Exception as e:  # noqa: BLE001 - collected, then asserted on
                bad.append(repr(e)[:300])
            i += 1

    t = threading.Thread(target=reader)
    t.start()
    try:
        out = change()
    finally:
        stop.set()
        t.join(timeout=300)
    assert not bad, bad[:3]
    assert seen[0] > 0
    return out


@pytest.mark.ray
@pytest.mark.slow
def test_reshard_online_moves_a_fraction_and_answers_stay_one_engines(local_ray):
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=0.5)
    one = ce.Engine(DIM, decay=POLICY, threads=1)
    try:
        for g, r in zip(_apply(sh), _apply(one)):
            assert np.array_equal(g, r)
        _queries_equal(sh, one)
        out = _while_reading(sh, one, lambda: sh.add_shards(2))
        assert sh.n_shards == 4 and out["total"] == len(one) == len(sh)
        assert 0.35 < out["fraction"] < 0.65  # about m / (n + m) = 1/2, by stems
        sizes = sh.shard_sizes()
        assert sum(sizes) == len(one) and min(sizes) > 0
        _queries_equal(sh, one)
        assert sh.metadata == one.metadata and HIDDEN not in sh.metadata
        for stem in ("doc-5", "doc-17", "doc-40"):
            _tables_equal(sh.history(stem), one.history(stem))
        ids = [3, 10, 250, 555, 700]
        _tables_equal(sh.get(ids), one.get(ids))
        # writes after the move go to the new owners; the old copies stay hidden
        rows = _rows(60, 21)
        assert np.array_equal(sh.ingest(rows), one.ingest(rows))
        moved_stem = next(f"doc-{i}" for i in range(60)
                          if sh._layout.of_stem(f"doc-{i}") >= 2 and len(one.history(f"doc-{i}")))
        new = {"vector": np.full((1, DIM), 0.5, np.float32), "content": ["moved"], "ingested_at": ["2025-01-01"]}
        assert np.array_equal(sh.supersede(moved_stem, new, "2025-06-01", version="2000"),
                              one.supersede(moved_stem, new, "2025-06-01", version="2000"))
        victim = int(one.history(moved_stem).column("id")[0].as_py())
        sh.retract([victim], at="2025-07-01"), one.retract([victim], at="2025-07-01")
        _queries_equal(sh, one)
        _tables_equal(sh.history(moved_stem), one.history(moved_stem))
        assert len(sh) == len(one)
        with pytest.raises(QueryError, match="reserved"):
            sh.search_batch(QUERIES, 5, mode="all", as_of="2024-01-01", where={HIDDEN: {"$gte": 0}})
        with pytest.raises(SchemaError, match="reserved"):
            sh.ingest({**_rows(2, 3), HIDDEN: [1, 2]})
        # without a store: the old shards compacted in memory
        assert sum(_stored_rows(sh)) > len(one)
        assert sh.compact()["shards"] == [0, 1]
        assert sum(_stored_rows(sh)) == len(one)
        _queries_equal(sh, one)
        _tables_equal(sh.history(moved_stem), one.history(moved_stem))
    finally:
        sh.shutdown()


@pytest.mark.ray
@pytest.mark.slow
def test_reshard_with_stores_and_replicas_survives_save_and_open(local_ray, tmp_path):
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=0.24, replicas=2, path=tmp_path / "sh")
    one = ce.Engine(DIM, decay=POLICY, threads=1)
    try:
        _apply(sh), _apply(one)
        out = sh.add_shards(1)
        assert 0.2 < out["fraction"] < 0.5  # about 1/3
        _queries_equal(sh, one)
        manifest = json.loads((tmp_path / "sh" / "sharded.json").read_text())
        assert manifest["format"] == 2 and manifest["n_shards"] == 3 and manifest["dirty"] == [0, 1]
        rows = _rows(30, 33)
        sh.ingest(rows), one.ingest(rows)
    finally:
        sh.shutdown()
    back = ce.distributed.ShardedEngine.open(tmp_path / "sh", cpus_per_shard=0.24, replicas=2)
    try:
        assert back.n_shards == 3 and len(back) == len(one)
        _queries_equal(back, one)
        back.add_shards(1)
        _queries_equal(back, one)
        assert len(back) == len(one)
    finally:
        back.shutdown()


def _stored_rows(sh):
    """Rows each shard's primary holds (its own and any hidden copies it gave away)."""
    return [ray.get(sh._primary(s).actor.size.remote()) for s in range(sh.n_shards)]


@pytest.mark.ray
@pytest.mark.slow
def test_compact_drops_the_copies_given_away_while_reads_go_on(local_ray, tmp_path):
    root = tmp_path / "sh"
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=0.24, replicas=2, path=root)
    one = ce.Engine(DIM, decay=POLICY, threads=1)
    try:
        _apply(sh), _apply(one)
        sh.add_shards(1)
        assert sum(_stored_rows(sh)) > len(one)  # the old shards keep hidden copies
        out = _while_reading(sh, one, sh.compact)
        assert out["shards"] == [0, 1] and out["kept"] + sh.shard_sizes()[2] == len(one) and out["dropped"] > 0
        assert sum(_stored_rows(sh)) == len(one)  # each row once: the copies given away are gone
        assert sh._layout.dirty == frozenset()
        manifest = json.loads((root / "sharded.json").read_text())
        assert manifest["format"] == 3 and manifest["stores"] == ["shard-0.c1", "shard-1.c1", "shard-2"]
        assert manifest["dirty"] == []
        assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["shard-0.c1", "shard-1.c1", "shard-2"]
        _queries_equal(sh, one)
        # every copy reads the new store: a replica killed now comes back from it
        rep = next(m for m in sh._groups[0].members if m.role == "replica")
        ray.kill(rep.actor)
        _queries_equal(sh, one)
        sh.wait_replicas()
        # writes after it, on compacted shards and moved stems alike
        rows = _rows(30, 41)
        assert np.array_equal(sh.ingest(rows), one.ingest(rows))
        victim = int(one.history("doc-3").column("id")[0].as_py())
        sh.retract([victim], at="2025-07-01"), one.retract([victim], at="2025-07-01")
        _queries_equal(sh, one)
        assert sh.compact()["shards"] == []  # nothing dirty: nothing to do
    finally:
        sh.shutdown()
    back = ce.distributed.ShardedEngine.open(root, cpus_per_shard=0.24, replicas=2)
    try:
        assert back.n_shards == 3 and len(back) == len(one)
        _queries_equal(back, one)
        back.add_shards(1)  # a compacted shard gives again; then compacts to .c2
        assert back.compact()["shards"] == [0, 1, 2]
        assert json.loads((root / "sharded.json").read_text())["stores"] == [
            "shard-0.c2", "shard-1.c2", "shard-2.c1", "shard-3"]
        assert sum(_stored_rows(back)) == len(one)
        _queries_equal(back, one)
    finally:
        back.shutdown()
    m = json.loads((root / "sharded.json").read_text())
    for bad_stores in (["../x", "shard-1.c2", "shard-2.c1", "shard-3"], ["shard-1.c2"] * 4, "shard-0", None):
        (root / "sharded.json").write_text(json.dumps({**m, "stores": bad_stores}))
        with pytest.raises(ce.errors.StorageError, match="bad stores"):
            ce.distributed.ShardedEngine.open(root, cpus_per_shard=0.24)


@pytest.mark.ray
@pytest.mark.slow
def test_compact_interrupted_leaves_the_named_stores_and_the_next_takes_a_new_name(local_ray, tmp_path):
    """A compaction cut off after its new store was made but before the manifest named it
    (here: a copy of the store standing where that compaction would have written) changes
    nothing: a reopen reads the stores the manifest names, and the next compaction skips
    the name that is taken."""
    import shutil
    root = tmp_path / "sh"
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=0.5, path=root)
    one = ce.Engine(DIM, decay=POLICY, threads=1)
    try:
        _apply(sh), _apply(one)
        sh.add_shards(1)
        sh.checkpoint()
    finally:
        sh.shutdown()
    shutil.copytree(root / "shard-0", root / "shard-0.c1")  # the cut-off compaction's store
    back = ce.distributed.ShardedEngine.open(root, cpus_per_shard=0.5)
    try:
        assert sum(_stored_rows(back)) > len(one)  # still the stores the manifest names
        _queries_equal(back, one)
        assert back.compact()["shards"] == [0, 1]
        assert json.loads((root / "sharded.json").read_text())["stores"] == ["shard-0.c2", "shard-1.c1", "shard-2"]
        assert (root / "shard-0.c1").is_dir() and not (root / "shard-0").exists()  # left as it was
        assert sum(_stored_rows(back)) == len(one)
        _queries_equal(back, one)
    finally:
        back.shutdown()


@pytest.mark.ray
@pytest.mark.slow
def test_reshard_refuses_format_1_and_bad_counts(local_ray, tmp_path):
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=0.5)
    try:
        with pytest.raises(ConfigError, match="m must be"):
            sh.add_shards(0)
        sh.save(tmp_path / "s")
    finally:
        sh.shutdown()
    path = tmp_path / "s" / "sharded.json"
    m = json.loads(path.read_text())
    path.write_text(json.dumps({"format": 1, "n_shards": 2, "placement": "mod", "next_id": m["next_id"]}))
    old = ce.distributed.ShardedEngine.open(tmp_path / "s", cpus_per_shard=0.5)
    try:
        with pytest.raises(ConfigError, match="cannot grow"):
            old.add_shards(1)
    finally:
        old.shutdown()
    m["starts"] = m["starts"][::-1]
    path.write_text(json.dumps(m))
    with pytest.raises(ce.errors.StorageError, match="malformed"):
        ce.distributed.ShardedEngine.open(tmp_path / "s", cpus_per_shard=0.5)
