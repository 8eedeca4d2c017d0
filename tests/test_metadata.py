"""The core's metadata layout (and the memory goal): fields kept in narrower
form than their input — version codes into a dictionary of distinct versions, fact type and
flags in one 16-bit word, retracted_at as a sparse map — give back exactly what was
ingested, across the widening of version codes past 65,535 distinct versions and across
save / open, and the bytes per item stay within the goal.
"""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from storefiles import reseal, snap_dir
from chrono_engine import _core
from chrono_engine.errors import CorruptStoreError
from chrono_engine.schema import parse_version
from chrono_engine.synthetic import US_PER_DAY, make_corpus

T0 = 1_600_000_000_000_000


def _version_rows(lo: int, hi: int, half: int, dim: int = 4) -> dict:
    """Rows lo..hi-1: row i has version "v{i // 1000}.{i % 1000}" (all distinct) and shares
    stem s{i % half} (and its vector) with row i ± half, whose version is the other one."""
    i = np.arange(lo, hi)
    rng = np.random.default_rng(7)
    base = rng.normal(size=(half, dim)).astype(np.float32)
    return {
        "vector": base[i % half],
        "valid_from": (T0 + i * 1_000_000).astype("datetime64[us]"),
        "stem_id": [f"s{j}" for j in i % half],
        "version": [f"v{j // 1000}.{j % 1000}" for j in i],
    }


@pytest.mark.parametrize("reopen", [False, True])
def test_version_codes_widen_past_65535_distinct_versions(tmp_path, reopen):
    n, half = 70_000, 35_000
    eng = ce.Engine(4, M=4, ef_construction=16, threads=2)
    eng.ingest(_version_rows(0, 60_000, half))  # 60,000 distinct versions: 16-bit codes
    before = eng.columns()["version"].copy()
    eng.ingest(_version_rows(60_000, n, half))  # the 65,536th distinct version arrives mid-batch
    if reopen:
        eng.save(tmp_path / "e")
        eng = ce.Engine.open(tmp_path / "e")
    cols = eng.columns()
    want = np.array([parse_version(f"v{j // 1000}.{j % 1000}") for j in range(n)], dtype=np.uint64)
    np.testing.assert_array_equal(cols["version"], want)
    np.testing.assert_array_equal(cols["version"][:60_000], before)
    # arbitration compares the decoded versions: per stem the later row (higher version) wins,
    # for stems whose two rows sit on both sides of the widening (rows 30,000..34,999 and
    # 65,000..69,999) as for the others
    for row in (0, 29_999, 30_000, 34_999):
        q = eng.vectors([row])  # ids are the rows here (automatic, in time order)
        res = eng.search(q[0], 5, mode="all", exact=True)
        stems = res.column("stem_id").to_pylist()
        assert stems.count(f"s{row}") == 1, (row, stems)
        hit = stems.index(f"s{row}")
        assert res.column("version").to_pylist()[hit] == f"v{(row + half) // 1000}.{(row + half) % 1000}"
        assert res.column("id").to_pylist()[hit] == row + half


def test_fact_type_codes_are_limited_to_14_bits():
    st = _core.Store(4, "cosine", 4, 16, 0)
    st.set_decay(np.tile(np.array([[0.0, 0.0, 0.0, 1.0, 0.0]]), (20_000, 1)))
    n = 3

    def cols(ft):
        return (np.ones((n, 4), np.float32), np.full(n, T0, np.int64), np.full(n, np.iinfo(np.int64).max),
                np.full(n, T0, np.int64), np.full(n, T0, np.int64), np.full(n, np.iinfo(np.int64).max),
                np.zeros(n, np.uint64), np.ones(n, np.float32), np.full(n, -1, np.int32),
                np.array(ft, np.uint16), np.zeros(n, np.uint8), None, 1)

    with pytest.raises(ValueError, match=r"fact type code 16384 at row 2: a store holds at most 16,384"):
        st.ingest(*cols([0, 16_383, 16_384]))
    assert st.size == 0  # rejected whole
    st.ingest(*cols([0, 16_383, 5]))
    assert st.columns()["fact_type"].tolist() == [0, 16_383, 5]


def test_flags_and_sparse_retractions_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    n = 5_000
    retracted = np.where((rng.random(n) < 0.05) & (np.arange(n) >= 50), T0 + 10 * US_PER_DAY + rng.integers(0, US_PER_DAY, n),
                         np.iinfo(np.int64).max)
    rows = {
        "vector": rng.normal(size=(n, 8)).astype(np.float32),
        "valid_from": np.full(n, T0).astype("datetime64[us]"),
        "ingested_at": np.full(n, T0 + US_PER_DAY).astype("datetime64[us]"),
        "retracted_at": np.where(retracted == np.iinfo(np.int64).max, np.datetime64("NaT", "us"),
                                 retracted.astype("datetime64[us]")),
        "deprecated": rng.random(n) < 0.1,
        "fact_type": [f"t{j}" for j in rng.integers(0, 40, n)],
    }
    eng = ce.Engine(8, decay=ce.DecayPolicy(default=ce.HalfLife(30.0)), M=4, ef_construction=16)
    eng.ingest(rows)
    eng.retract(np.arange(0, 50, dtype=np.uint64), at=T0 + 20 * US_PER_DAY)
    want_ret = retracted.copy()
    want_ret[:50] = T0 + 20 * US_PER_DAY
    for e in (eng, eng.save(tmp_path / "e") or ce.Engine.open(tmp_path / "e")):
        cols = e.columns()
        np.testing.assert_array_equal(cols["retracted_at"], want_ret)
        np.testing.assert_array_equal(cols["deprecated"].astype(bool), rows["deprecated"])
        names = [e.fact_types[c] for c in cols["fact_type"]]
        assert names == rows["fact_type"]


def test_metadata_bytes_per_item_within_goal():
    """The issue's goal: metadata beyond vectors and graph (columns, stem lists, interval
    index, freshness lists) at most 64 bytes per item, on the benchmark's corpus shape."""
    c = make_corpus(20_000, dim=8, seed=1)
    eng = ce.Engine(8, decay=ce.DecayPolicy(default=ce.HalfLife(365.0)), M=4, ef_construction=16)
    eng.ingest(c.to_dict())
    m = eng.memory()
    per_item = m["temporal_per_item"]
    assert per_item == pytest.approx(m["metadata_per_item"] + m["interval_index_per_item"] + m["freshness_index_per_item"])
    assert 44 <= m["metadata_per_item"] <= 52, m
    assert per_item <= 64, m
    # reported apart: the Arrow string columns and the Python name dictionaries
    assert m["strings"] == eng.strings().nbytes > 0
    chars = sum(len(s.encode()) for s in eng.stems)
    assert m["names_per_item"] * len(eng) == m["names"]
    assert chars <= m["names"] <= chars + 24 * len(eng.stems) + 4096


def test_stem_names_intern_in_order_and_roll_back(tmp_path):
    names = _core.Names()
    batch = ["a", "b", "a", "ünïcödé", "", "b", "c" * 1000]
    assert names.add_all(batch).tolist() == [0, 1, 0, 2, 3, 1, 4]
    assert names.tolist() == ["a", "b", "ünïcödé", "", "c" * 1000] == list(names)
    assert [names.find(s) for s in ("ünïcödé", "c" * 1000, "zz", "c")] == [2, 4, -1, -1]
    many = [f"s{i}" for i in range(50_000)]  # past several rehashes
    assert names.add_all(many).tolist() == list(range(5, 50_005))
    assert names.find("s49999") == 50_004 and names[50_004] == "s49999"
    with pytest.raises(TypeError, match="name must be str"):
        names.add_all(["new1", "new2", 7])  # all or nothing: new1 and new2 are forgotten
    assert len(names) == 50_005 and names.find("new1") == -1
    names.truncate(3)
    assert names.tolist() == ["a", "b", "ünïcödé"] and names.find("s0") == -1 and names.find("b") == 1
    with pytest.raises(IndexError):
        names[3]


def test_open_refuses_a_manifest_naming_a_stem_twice(tmp_path):
    import json
    eng = ce.Engine(4, M=4, ef_construction=16)
    eng.ingest({"vector": np.eye(4, dtype=np.float32), "valid_from": np.full(4, T0).astype("datetime64[us]"),
                "stem_id": ["x", "y", "x", "z"], "version": ["v1", "v1", "v2", "v1"]})
    eng.save(tmp_path / "e")
    again = ce.Engine.open(tmp_path / "e", read_only=True)
    assert again.stems == ["x", "y", "z"]
    snap = snap_dir(tmp_path / "e")
    man = json.loads((snap / "manifest.json").read_text())
    man["stems"] = ["x", "y", "x"]
    (snap / "manifest.json").write_text(json.dumps(man))
    reseal(tmp_path / "e")
    with pytest.raises(CorruptStoreError, match="'stems' lists a name twice"):
        ce.Engine.open(tmp_path / "e")


def test_stem_and_fact_type_names_come_back_from_codes(tmp_path):
    """fact_type and stem_id are kept as codes only: results and meta.arrow rebuild the
    strings (null stems stay null)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    rng = np.random.default_rng(5)
    n = 300
    stems = [None if i % 7 == 0 else f"doc-{i % 40}-é" for i in range(n)]
    types = [f"type{i % 3}" for i in range(n)]
    eng = ce.Engine(8, decay=ce.DecayPolicy(default=ce.HalfLife(365.0)), M=4, ef_construction=16)
    ids = eng.ingest({"vector": rng.normal(size=(n, 8)).astype(np.float32),
                      "valid_from": np.full(n, T0).astype("datetime64[us]"),
                      "stem_id": stems, "fact_type": types, "version": [f"v{i}" for i in range(n)]})
    res = eng.search(rng.normal(size=8).astype(np.float32), n, mode="all", arbitrate=False, exact=True)
    assert len(res) == n
    got = dict(zip(res.column("id").to_pylist(), res.column("stem_id").to_pylist()))
    assert [got[int(i)] for i in ids] == stems
    assert "fact_type" not in eng.strings().column_names and "stem_id" not in eng.strings().column_names
    eng.save(tmp_path / "e")
    snap = snap_dir(tmp_path / "e")
    with pa.memory_map(str(snap / "meta.arrow")) as src:
        table = ipc.open_file(src).read_all()
    assert table.column("stem_id").to_pylist() == stems
    assert table.column("fact_type").to_pylist() == types
    again = ce.Engine.open(tmp_path / "e")
    res2 = again.search(np.ones(8, np.float32), n, mode="all", arbitrate=False, exact=True)
    got2 = dict(zip(res2.column("id").to_pylist(), res2.column("stem_id").to_pylist()))
    assert [got2[int(i)] for i in ids] == stems
