"""The sharded engine on Ray actors (chrono_engine.distributed.ShardedEngine) against one
Engine on the same data and calls: every mode, arbitration on and off, supersede /
retract / deprecate / history / get through it, save and open, a killed shard, and
rejected calls that change nothing. A local Ray instance (2 CPUs) is started for the
module and stopped after."""
from __future__ import annotations

import hashlib
import time

import numpy as np
import pyarrow as pa
import pytest

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")

import chrono_engine as ce  # noqa: E402
from chrono_engine.errors import NotFoundError, SchemaError, ShardError  # noqa: E402

pytestmark = pytest.mark.ray

DIM = 16
POLICY = ce.DecayPolicy({"news": ce.Exponential(half_life=60), "policy": ce.Gaussian(half_life=400)},
                        default=ce.HalfLife(900))


def _rows(n, seed, stems=60):
    rng = np.random.default_rng(seed)
    start = np.datetime64("2019-01-01", "us") + rng.integers(0, 2000, n).astype("timedelta64[D]")
    end = start + rng.integers(20, 1500, n).astype("timedelta64[D]")
    open_end = rng.random(n) < 0.3
    stem = [None if i % 7 == 0 else f"doc-{rng.integers(0, stems)}" for i in range(n)]
    return {"vector": rng.standard_normal((n, DIM)).astype(np.float32),
            "valid_from": start, "valid_to": [None if o else e for o, e in zip(open_end, end)],
            "stem_id": stem, "version": [f"{i}" for i in range(n)],
            "fact_type": [("news", "policy", "other")[i % 3] for i in range(n)],
            "reliability": rng.uniform(0.4, 1.0, n).astype(np.float32),
            "title": [f"t{i}" for i in range(n)], "content": [f"c{i}" for i in range(n)],
            "ingested_at": np.full(n, np.datetime64("2018-06-01", "us"))}


def _apply(eng):
    """The same calls on either engine; returns what they returned."""
    a = eng.ingest(_rows(400, 1))
    b = eng.ingest(_rows(300, 2))
    stem = "doc-5"
    new = eng.supersede(stem, {"vector": np.ones((2, DIM), np.float32), "content": ["n1", "n2"],
                               "ingested_at": ["2025-01-01", "2025-01-01"]},
                        "2025-02-01", version="1000")
    eng.retract([3, 250, 555], at="2024-03-01")
    eng.deprecate([10, 11], effective_at="2023-01-01", at="2024-01-01")
    return a, b, new


def _tables_equal(got: pa.Table, ref: pa.Table) -> None:
    assert got.column_names == ref.column_names
    for name in ref.column_names:
        g, r = got.column(name).to_pylist(), ref.column(name).to_pylist()
        if name in ("score", "similarity", "validity", "decay", "penalty", "robustness"):
            np.testing.assert_allclose(np.array(g, float), np.array(r, float), rtol=1e-6, atol=1e-7, err_msg=name)
        else:
            assert g == r, name


@pytest.fixture(scope="module")
def single():
    eng = ce.Engine(DIM, decay=POLICY, threads=1)
    _apply(eng)
    return eng


QUERIES = np.random.default_rng(7).standard_normal((24, DIM)).astype(np.float32)
CASES = [dict(mode="latest", as_of="2024-06-01"),
         dict(mode="latest", as_of="2024-06-01", known_at="2024-02-01"),
         dict(mode="as_of", as_of="2022-03-15"),
         dict(mode="as_of", as_of=np.array([f"202{i % 5}-0{1 + i % 9}-01" for i in range(24)], "datetime64[us]")),
         dict(mode="window", window=("2021-01-01", "2021-09-01")),
         dict(mode="all", as_of="2024-06-01"),
         dict(mode="latest", as_of="2024-06-01", arbitrate=False),
         dict(mode="as_of", as_of="2023-03-15", exact=True, fact_types=["news", "policy"]),
         dict(mode="as_of", as_of="2023-03-15", explain=True, verify=0.3)]


@pytest.mark.slow
@pytest.mark.parametrize("n_shards", [2, 4])
def test_sharded_equals_single_engine(local_ray, single, n_shards):
    sh = ce.distributed.ShardedEngine(n_shards, DIM, decay=POLICY, cpus_per_shard=2 / n_shards)
    try:
        got_ids, ref_ids = _apply(sh), _apply(ce.Engine(DIM, decay=POLICY, threads=1))
        for g, r in zip(got_ids, ref_ids):
            np.testing.assert_array_equal(g, r)
        assert len(sh) == len(single) and sum(sh.shard_sizes()) == len(single)
        assert min(sh.shard_sizes()) > 0
        for case in CASES:
            _tables_equal(sh.search_batch(QUERIES, 10, **case), single.search_batch(QUERIES, 10, **case))
        _tables_equal(sh.search(QUERIES[0], 5, mode="as_of", as_of="2022-01-01"),
                      single.search(QUERIES[0], 5, mode="as_of", as_of="2022-01-01"))
        for stem in ("doc-5", "doc-17", "doc-40"):
            _tables_equal(sh.history(stem), single.history(stem))
        ids = [699, 3, 0, 250, 701]
        _tables_equal(sh.get(ids), single.get(ids))
        np.testing.assert_array_equal(sh.contains([1, 702, 10**9]), single.contains([1, 702, 10**9]))
    finally:
        sh.shutdown()


def test_placement_is_blake2b_of_the_stem():
    def ref(stem, n):
        return int.from_bytes(hashlib.blake2b(stem.encode(), digest_size=8).digest(), "little") % n
    for stem in ("doc-1", "travel-policy", "差旅报销管理制度", ""):
        for n in (1, 2, 3, 4, 32):
            assert ce.distributed.shard_of(stem, n) == ref(stem, n)
    assert ce.distributed.shard_of(None, 4, 10) == 2


@pytest.mark.slow
def test_save_open_and_a_killed_shard(local_ray, single, tmp_path):
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=1, timeout=60)
    _apply(sh)
    sh.save(tmp_path / "sharded")
    before = sh.search_batch(QUERIES, 10, mode="as_of", as_of="2022-03-15")
    ray.kill(sh._actors[1])
    t0 = time.monotonic()
    with pytest.raises(ShardError, match="shard 1 is dead") as e:
        sh.search_batch(QUERIES, 10, mode="as_of", as_of="2022-03-15")
    assert e.value.shard == 1 and time.monotonic() - t0 < 60
    sh.shutdown()
    back = ce.distributed.ShardedEngine.open(tmp_path / "sharded", cpus_per_shard=1)
    try:
        _tables_equal(back.search_batch(QUERIES, 10, mode="as_of", as_of="2022-03-15"), before)
        _tables_equal(back.search_batch(QUERIES, 10, mode="as_of", as_of="2022-03-15"),
                      single.search_batch(QUERIES, 10, mode="as_of", as_of="2022-03-15"))
        assert back.ingest(_rows(3, 9)).tolist() == [702, 703, 704]  # ids go on from the save
        n = len(back)
    finally:
        back.shutdown()
    again = ce.distributed.ShardedEngine.open(tmp_path / "sharded", cpus_per_shard=1)
    try:  # the writes after the save were logged by the shards' stores and replay on open
        assert len(again) == n and again.get([703]).column("content").to_pylist() == ["c1"]
        assert again.ingest(_rows(1, 10)).tolist() == [705]
    finally:
        again.shutdown()
    (tmp_path / "sharded" / "shard-1" / "CURRENT").write_text("garbage")  # a shard store that does not open
    with pytest.raises(ShardError, match="shard 1 could not start: .*CURRENT is unreadable"):
        ce.distributed.ShardedEngine.open(tmp_path / "sharded", cpus_per_shard=1)


@pytest.mark.slow
def test_rejected_calls_change_nothing(local_ray, tmp_path):
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=1)
    try:
        sh.ingest(_rows(50, 3))
        sizes = sh.shard_sizes()
        bad = _rows(20, 4)
        bad["valid_to"][13] = np.datetime64("2000-01-01", "us")  # before its valid_from
        with pytest.raises(SchemaError, match="row 13"):
            sh.ingest(bad)
        dup = _rows(2, 5)
        dup["id"] = [7, 1000]
        with pytest.raises(ce.errors.QueryError, match="id 7 is already in the store"):
            sh.ingest(dup)
        assert sh.shard_sizes() == sizes
        with pytest.raises(NotFoundError, match="id 999"):
            sh.retract([1, 999], at="2024-01-01")
        assert sh.get([1]).column("retracted_at")[0].as_py() is None
        with pytest.raises(ce.errors.StorageError, match="not a saved sharded engine"):
            ce.distributed.ShardedEngine.open(tmp_path / "nothing")
        saved = tmp_path / "saved"
        sh.save(saved)
        good = (saved / "sharded.json").read_text()
        for text, match in ((good[:len(good) // 2], "cannot read the manifest"), ("[1, 2]", "not a format-1"),
                            (good.replace('"n_shards": 2', '"n_shards": true'), "bad n_shards"),
                            (good.replace('"n_shards": 2', '"n_shards": 3'), "shard-2 is missing"),
                            (good.replace('"next_id": 50', '"next_id": -1'), "bad n_shards or next_id")):
            (saved / "sharded.json").write_text(text)
            with pytest.raises(ce.errors.StorageError, match=match):
                ce.distributed.ShardedEngine.open(saved)
        # the 2 CPUs are held by this engine's shards: another is refused, not left waiting
        with pytest.raises(ce.errors.ConfigError, match="need 2 CPUs; the Ray cluster has 0 free of 2"):
            ce.distributed.ShardedEngine(2, DIM, cpus_per_shard=1)
    finally:
        sh.shutdown()


@pytest.mark.slow
def test_ingest_order_per_shard(local_ray):
    """``order`` goes to every shard's part: each shard stores its rows by valid_from, and
    the ids and answers are the single engine's stored by valid_from."""
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=1)
    try:
        rows = _rows(400, 11)
        with pytest.raises(SchemaError, match="order must be one of"):
            sh.ingest(rows, order="sorted")
        assert len(sh) == 0
        ref = ce.Engine(DIM, decay=POLICY, threads=1)
        ids = sh.ingest(rows, order="valid_from")
        np.testing.assert_array_equal(ids, ref.ingest(rows, order="valid_from"))
        assert np.any(np.diff(ids.astype(np.int64)) < 0)  # numbered as stored, not as given
        for cols in sh._all("columns"):
            # each shard's rows by valid_from, their global ids in the same order
            assert len(cols["id"]) > 0 and np.all(np.diff(cols["valid_from"]) >= 0)
            assert np.all(np.diff(cols["id"].astype(np.int64)) > 0)
        for case in CASES[:6]:
            _tables_equal(sh.search_batch(QUERIES, 10, **case), ref.search_batch(QUERIES, 10, **case))
        _tables_equal(sh.get([0, 399, 17]), ref.get([0, 399, 17]))
    finally:
        sh.shutdown()


@pytest.mark.slow
def test_default_order_numbers_a_large_batch_as_one_engine(local_ray):
    """The default ("auto"): a batch of at least CLUSTER_MIN rows out of order gets the ids
    one engine gives it (numbering the rows by valid_from), and every shard stores its
    part by valid_from even where the part alone is smaller than that."""
    from chrono_engine import _state
    n = _state.CLUSTER_MIN + 500
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=1)
    try:
        rows = _rows(n, 12)
        ref = ce.Engine(DIM, decay=POLICY, threads=1)
        ids = sh.ingest(rows)
        np.testing.assert_array_equal(ids, ref.ingest(rows))
        np.testing.assert_array_equal(ref.columns()["id"], np.arange(n))  # one engine: by valid_from, no id map
        parts = sh._all("columns")
        assert all(len(c["id"]) < _state.CLUSTER_MIN for c in parts)  # no part reorders on its own ...
        for cols in parts:  # ... yet each is stored by valid_from
            assert np.all(np.diff(cols["valid_from"]) >= 0) and np.all(np.diff(cols["id"].astype(np.int64)) > 0)
        for case in CASES[:3]:
            _tables_equal(sh.search_batch(QUERIES, 10, **case), ref.search_batch(QUERIES, 10, **case))
    finally:
        sh.shutdown()


def test_merge_keeps_the_global_top_k_and_ands_certified():
    from chrono_engine.distributed._sharded import _merge
    a = pa.table({"query": pa.array([0, 0, 1], pa.int32()), "rank": pa.array([1, 2, 1], pa.int32()),
                  "id": pa.array([4, 2, 9], pa.uint64()), "score": [0.9, 0.5, 0.7], "certified": [True, True, False]})
    b = pa.table({"query": pa.array([0, 0, 1], pa.int32()), "rank": pa.array([1, 2, 1], pa.int32()),
                  "id": pa.array([1, 3, 8], pa.uint64()), "score": [0.9, 0.6, 0.2], "certified": [True, True, True]})
    m = _merge(pa.concat_tables([a, b]), 2, 2)
    assert m.column("id").to_pylist() == [1, 4, 9, 8]  # ties by id; the k best of each query
    assert m.column("rank").to_pylist() == [1, 2, 1, 2]
    assert m.column("certified").to_pylist() == [True, True, False, False]


# ---------------------------------------------------------------------- metadata and where=

TENANTS = ["acme", "globex", "initech", None]
TAGS = ["hr", "eng", "all", "legal"]


def _with_metadata(rows, seed):
    """``rows`` with a tenant (string, nulls), acl (list<string>, empty lists and nulls) and
    year (int64) column."""
    rng = np.random.default_rng(seed)
    n = len(rows["vector"])
    rows = dict(rows)
    rows["tenant"] = [TENANTS[i] for i in rng.integers(0, len(TENANTS), n)]
    rows["acl"] = pa.array([None if rng.random() < 0.1 else sorted({TAGS[j] for j in rng.integers(0, 4, rng.integers(0, 3))})
                            for _ in range(n)], pa.list_(pa.string()))
    rows["year"] = rng.integers(2015, 2026, n)
    return rows


def _placed(stem, n_shards=2):
    """The shard a new sharded engine of ``n_shards`` places a stem in (ranges of its key)."""
    from chrono_engine.distributed._sharded import _Layout
    return _Layout("ranges", n_shards).of_stem(stem)


def _in_shard(rows, shard, n_shards=2):
    """The rows (all with a stem) that the placement sends to ``shard``."""
    keep = [i for i, s in enumerate(rows["stem_id"])
            if s is not None and _placed(s, n_shards) == shard]
    return {k: (v.take(pa.array(keep)) if isinstance(v, pa.Array) else
                v[keep] if isinstance(v, np.ndarray) else [v[i] for i in keep]) for k, v in rows.items()}


def _apply_metadata(eng):
    """Metadata columns arriving every way: with the first batch; ``region`` in a batch whose
    rows all go to shard 0 (so shard 1 holds none of it); ``w`` (float64) null in every row
    shard 1 gets (its part alone would not tell the kind); ``owner`` with a supersede."""
    eng.ingest(_with_metadata(_rows(300, 21), 1))
    only0 = _in_shard(_with_metadata(_rows(200, 22), 2), 0)
    only0["region"] = [("north", "south", None)[i % 3] for i in range(len(only0["vector"]))]
    eng.ingest(only0)
    third = _with_metadata(_rows(120, 23), 3)
    third["w"] = [None if s is None or _placed(s, 2) == 1 else float(i % 10) / 10
                  for i, s in enumerate(third["stem_id"])]
    eng.ingest(third)
    eng.supersede("doc-5", {"vector": np.ones((2, DIM), np.float32), "content": ["n1", "n2"], "owner": ["zed", "amy"],
                            "ingested_at": ["2025-01-01", "2025-01-01"]}, "2025-02-01", version="1000")


WHERES = [{"tenant": "acme"}, {"tenant": {"$ne": "acme"}}, {"acl": {"$in": ["hr", "legal"]}},
          {"$or": [{"year": {"$gte": 2023}}, {"region": "north"}]}, {"region": {"$exists": False}},
          {"region": {"$ne": "north"}}, {"region": {"$in": ["north", "south"]}}, {"w": {"$lt": 0.5}},
          {"w": {"$exists": True}}, {"owner": "zed"}, {"$not": {"tenant": {"$in": ["acme", "globex"]}}},
          {"$and": [{"acl": "eng"}, {"year": {"$lt": 2020}}]}]
WHERE_CASES = [dict(mode="latest", as_of="2024-06-01"), dict(mode="as_of", as_of="2022-03-15", exact=True),
               dict(mode="all", as_of="2025-06-01", arbitrate=False)]


@pytest.mark.slow
def test_where_over_shards_equals_one_engine(local_ray, tmp_path):
    """A filtered search over shards equals it on one engine, on columns every shard's rows
    carry and on columns only some do (null in the others, as for one engine's rows before
    the column came), through save and open; ``columns=`` selects as on one engine."""
    sh = ce.distributed.ShardedEngine(2, DIM, decay=POLICY, cpus_per_shard=1, metadata={"dept": "string"})
    one = ce.Engine(DIM, decay=POLICY, threads=1, metadata={"dept": "string"})
    try:
        _apply_metadata(sh)
        _apply_metadata(one)
        assert sh.metadata == one.metadata == {"dept": "string", "tenant": "string", "acl": "list<string>",
                                               "year": "int64", "region": "string", "w": "float64",
                                               "owner": "string"}
        hidden = ce.distributed._sharded.HIDDEN  # each item's placement key, kept out of the results
        assert all({k: v for k, v in kinds.items() if k != hidden} == one.metadata
                   for kinds in sh._wait([a.kinds.remote() for a in sh._actors]))
        assert not any(sh._all("search", QUERIES[0], 5, where={"region": {"$exists": True}}, mode="all")[1]
                       .column("region").to_pylist())  # shard 1: the column, and no row of it
        for where in WHERES:
            for case in WHERE_CASES:
                got = sh.search_batch(QUERIES, 10, where=where, **case)
                _tables_equal(got, one.search_batch(QUERIES, 10, where=where, **case))
        assert sh.search_batch(QUERIES, 10, where={"region": "north"}, mode="all", arbitrate=False).num_rows > 0
        for cols in (["tenant", "region"], []):
            _tables_equal(sh.search_batch(QUERIES, 10, where={"tenant": "acme"}, columns=cols),
                          one.search_batch(QUERIES, 10, where={"tenant": "acme"}, columns=cols))
        ids = [0, 305, 17, len(one) - 1]  # a row of each batch, the superseding one last
        _tables_equal(sh.get(ids), one.get(ids))
        with pytest.raises(ce.errors.QueryError, match="unknown field"):
            sh.search(QUERIES[0], 5, where={"nope": 1})
        sh.save(tmp_path / "sh")
        sh.shutdown()
        sh = ce.distributed.ShardedEngine.open(tmp_path / "sh", cpus_per_shard=1)  # its shards log their writes
        assert sh.metadata == one.metadata
        # a column only shard 0's rows carry, then one only shard 1's: each shard's log
        # holds its own column, not the other's declaration
        for shard, name in ((0, "late0"), (1, "late1")):
            part = _in_shard(_rows(60, 30 + shard), shard)
            part[name] = [f"v{i % 3}" for i in range(len(part["vector"]))]
            sh.ingest(part)
            one.ingest(part)
        sh.shutdown()
        sh = ce.distributed.ShardedEngine.open(tmp_path / "sh", cpus_per_shard=1)
        kinds = sh._wait([a.kinds.remote() for a in sh._actors])
        assert [list(k)[-2:] for k in kinds] == [["late0", "late1"], ["late1", "late0"]]  # declared again on open
        assert sh.metadata == one.metadata and list(one.metadata)[-2:] == ["late0", "late1"]
        for where in ({"late0": "v1"}, {"late1": {"$ne": "v1"}}, {"$or": [{"late0": "v0"}, {"late1": "v2"}]}):
            _tables_equal(sh.search_batch(QUERIES, 10, where=where, mode="all"),
                          one.search_batch(QUERIES, 10, where=where, mode="all"))
    finally:
        sh.shutdown()


def test_concat_orders_the_shards_metadata_columns():
    from chrono_engine.distributed._sharded import _concat
    a = pa.table({"id": pa.array([1], pa.uint64()), "x": ["a"], "y": [1]})
    b = pa.table({"id": pa.array([2], pa.uint64()), "y": [2], "x": ["b"]})
    t = _concat([b, a], {"x": "string", "y": "int64"})
    assert t.column_names == ["id", "x", "y"] and t.column("x").to_pylist() == ["b", "a"]
    c = pa.table({"id": pa.array([3], pa.uint64()), "x": ["c"]})
    assert _concat([a, c], {"x": "string", "y": "int64"}).column("y").to_pylist() == [1, None]


@pytest.mark.slow
def test_two_phase_merge_equals_one_phase_and_brings_back_less(local_ray):
    """The default merge (each shard's top-k keys, then only the final rows) gives the one-phase
    tables exactly, every column, in every mode; the shards send back fewer bytes."""
    sh = ce.distributed.ShardedEngine(4, DIM, decay=POLICY, cpus_per_shard=0.5)
    try:
        _apply(sh)
        assert sh.merge == "two_phase"
        sizes = {}
        for merge in ("one_phase", "two_phase"):
            sh.merge = merge
            sh.received_bytes = 0
            got = [sh.search_batch(QUERIES, 10, **case) for case in CASES]
            got.append(sh.search_batch(QUERIES, 3, mode="window", window=("2020-01-01", "2022-01-01")))
            sizes[merge] = sh.received_bytes
            if merge == "one_phase":
                ref = got
        for g, r in zip(got, ref):
            assert g.equals(r)
        assert sizes["two_phase"] < sizes["one_phase"]
        # a copy asked for a table it does not keep (it died and came back, or dropped it)
        # answers None, and the driver then searches again in one phase
        assert ray.get(sh._actors[0].take_rows.remote("no-such-call", np.arange(1))) is None
    finally:
        sh.shutdown()
    with pytest.raises(ce.errors.ConfigError, match="merge"):
        ce.distributed.ShardedEngine(2, DIM, merge="three_phase")
