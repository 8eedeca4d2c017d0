"""The Engine's read-only introspection: ``strings()`` (the stored string columns),
``stats()`` (id map, partition, coalescing counts) and ``partition()`` (the probe plan's
centroids and members), each against a reference: the rows ingested, the id-map rule, the
calls made, NumPy's nearest centroids and the partition files a saved store holds."""
from __future__ import annotations

import asyncio
import doctest

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import chrono_engine as ce
from chrono_engine._partition import n_centroids
from chrono_engine.errors import NotFoundError
from storefiles import snap_dir

STRINGS = ["content", "title", "source", "modality", "version", "supersedes"]


def test_the_new_methods_docstring_examples_run():
    for name in ("stats", "partition", "strings"):
        finder = doctest.DocTestFinder(recurse=False)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        for t in finder.find(getattr(ce.Engine, name), name, globs={"Engine": ce.Engine, "np": np}):
            assert t.examples, name
            runner.run(t)
        assert runner.failures == 0, name


# ----------------------------------------------------------------------------- strings

def _string_rows(n, start, rng):
    rows = []
    for i in range(start, start + n):
        rows.append({"vector": rng.standard_normal(4).astype(np.float32), "valid_from": "2024-01-01",
                     "content": None if i % 6 == 0 else f"内容 {i}", "title": None if i % 4 == 0 else f"t{i}",
                     "source": f"src{i % 3}" if i % 5 else None, "modality": ["text", None, "table"][i % 3],
                     "version": None if i % 7 == 0 else f"v{i}", "stem_id": f"s{i}"})
    return rows


def test_strings_are_the_rows_ingested():
    """Every row's strings in ingest order, across a string table in several parts, nulls
    kept; ``ids`` in the order given (repeats too); the engine's own table (its bytes are
    what memory() counts); a supersede's ``supersedes``; unknown ids named."""
    rng = np.random.default_rng(1)
    eng = ce.Engine(4)
    empty = eng.strings()
    assert empty.num_rows == 0 and empty.column_names == STRINGS
    want = []
    start = 0
    for n in (5, 3, 1, 7):  # parts merged like a binary counter: several chunks
        rows = _string_rows(n, start, rng)
        eng.ingest(rows)
        want += [{c: r.get(c) for c in STRINGS} for r in rows]
        start += n
    eng.supersede("s3", [{"vector": rng.standard_normal(4).astype(np.float32), "title": "new"}], "2025-01-01",
                  version="v99")
    want.append({"content": None, "title": "new", "source": None, "modality": None, "version": "v99",
                 "supersedes": "v3"})
    got = eng.strings()
    assert got.column("content").num_chunks > 1
    assert got.column_names == STRINGS
    assert got.to_pylist() == want
    assert eng.memory()["strings"] == got.nbytes
    ids = eng.columns()["id"]
    pick = [9, 0, 16, 9, 3]
    assert eng.strings(ids[pick]).to_pylist() == [want[i] for i in pick]
    assert eng.strings(int(ids[4])).to_pylist() == [want[4]]
    assert eng.strings([]).num_rows == 0
    with pytest.raises(NotFoundError, match="unknown id 12345"):
        eng.strings([int(ids[0]), 12345])
    # get() reads the same title and content
    g = eng.get(ids[pick])
    assert g.column("title").to_pylist() == [want[i]["title"] for i in pick]
    assert g.column("content").to_pylist() == [want[i]["content"] for i in pick]


def test_strings_survive_a_save_and_open(tmp_path):
    rng = np.random.default_rng(2)
    eng = ce.Engine(4)
    eng.ingest(_string_rows(12, 0, rng))
    eng.save(tmp_path / "s")
    back = ce.Engine.open(tmp_path / "s", read_only=True)
    a, b = eng.strings(), back.strings()
    assert a.select(STRINGS).equals(b.select(STRINGS))


# ----------------------------------------------------------------------------- stats

def _one(i, id_=None):
    row = {"vector": [1.0, float(i)], "valid_from": "2024-01-01"}
    if id_ is not None:
        row["id"] = id_
    return row


def test_stats_id_map_follows_the_ids():
    """identity while ids equal rows; dense once one differs (within 2 * rows + 2^16);
    hash once an id lies far beyond; rows counted."""
    eng = ce.Engine(2)
    s = eng.stats()
    assert s["rows"] == 0 and s["id_map"] == "identity"
    eng.ingest([_one(i) for i in range(3)])
    assert eng.stats()["id_map"] == "identity"
    eng.ingest([_one(3, 10), _one(4, 3)])
    assert eng.stats()["id_map"] == "dense"
    eng.ingest([_one(5, 2**63)])
    s = eng.stats()
    assert s["id_map"] == "hash" and s["rows"] == len(eng) == 6
    np.testing.assert_array_equal(eng.rows_of([0, 1, 2, 10, 3, 2**63]), np.arange(6))


def test_stats_count_the_search_calls():
    """Lone search() calls each run as their own group; search_batch is not coalesced;
    a call refused before it is grouped is not counted; asearch counts per event loop."""
    eng = ce.Engine(2, threads=1)
    eng.ingest([_one(i) for i in range(20)])
    assert eng.stats()["search"] == {"groups": 0, "calls": 0}
    assert eng.stats()["asearch"] == {"loops": 0, "groups": 0, "calls": 0}
    for i in range(5):
        eng.search([1.0, float(i)], 3)
    eng.search_batch(np.ones((4, 2), np.float32), 3)
    with pytest.raises(ce.errors.QueryError):
        eng.search([1.0, 0.0], 3, mode="bogus")
    assert eng.stats()["search"] == {"groups": 5, "calls": 5}

    async def main():
        return await asyncio.gather(*[eng.asearch([1.0, float(i)], 3) for i in range(12)])
    got = asyncio.run(main())
    assert len(got) == 12
    a = eng.stats()["asearch"]
    assert a["loops"] == 1 and a["calls"] == 12 and 1 <= a["groups"] <= 12
    assert eng.stats()["search"] == {"groups": 5, "calls": 5}


# ----------------------------------------------------------------------------- partition

@pytest.fixture(scope="module")
def partitioned():
    rng = np.random.default_rng(7)
    eng = ce.Engine(8, threads=2)
    eng.partition_min = 0
    centres = rng.standard_normal((6, 8))
    x = centres[rng.integers(0, 6, 1200)] + 0.3 * rng.standard_normal((1200, 8))
    eng.ingest({"vector": x.astype(np.float32), "valid_from": np.zeros(1200, np.int64)})
    return eng


def test_partition_members_are_each_rows_nearest_centroid(partitioned):
    eng = partitioned
    p, s = eng.partition(), eng.stats()["partition"]
    C = n_centroids(len(eng))
    assert p["centroids"].shape == (C, 8) and p["centroids"].dtype == np.float32
    assert len(p["members"]) == C == s["centroids"]
    assert s["rows"] == len(eng) and p["built_at"] == s["built_at"] == len(eng)
    assert p["delta"] == s["delta"] > 0
    assert all(m.dtype == np.uint32 and (np.diff(m.astype(np.int64)) > 0).all() for m in p["members"])
    got = np.full(len(eng), -1)
    for j, m in enumerate(p["members"]):
        assert (got[m] == -1).all()  # no row in two centroids
        got[m] = j
    assert (got >= 0).all()
    # NumPy's nearest centroid (argmax <x, c> - |c|^2 / 2), float32 BLAS ties aside
    x, c = eng.vectors().astype(np.float64), p["centroids"].astype(np.float64)
    score = x @ c.T - 0.5 * (c ** 2).sum(1)
    assert (score[np.arange(len(eng)), got] >= score.max(1) - 1e-4).all()


def test_partition_is_a_copy_and_follows_new_rows():
    eng = ce.Engine(8, threads=1)
    eng.partition_min = 0
    rng = np.random.default_rng(8)
    eng.ingest({"vector": rng.standard_normal((300, 8)).astype(np.float32), "valid_from": np.zeros(300, np.int64)})
    p = eng.partition()
    p["centroids"][:] = 0
    p["members"][0][:] = 0
    q = eng.partition()
    assert np.abs(q["centroids"]).sum() > 0 and (np.diff(q["members"][0].astype(np.int64)) > 0).all()
    eng.ingest({"vector": rng.standard_normal((50, 8)).astype(np.float32), "valid_from": np.zeros(50, np.int64)})
    r = eng.partition()  # below double the size: the same centroids, the new rows assigned
    np.testing.assert_array_equal(r["centroids"], q["centroids"])
    assert r["built_at"] == 300 and sum(len(m) for m in r["members"]) == 350
    assert eng.stats()["partition"]["rows"] == 350


def test_partition_equals_the_saved_partition_files(partitioned, tmp_path):
    """The saved store's centroids.arrow is partition()'s centroids and partition.arrow
    each row's centroid; the manifest holds its delta and built_at."""
    import json
    eng = partitioned
    eng.save(tmp_path / "s")
    snap = snap_dir(tmp_path / "s")
    read = lambda name: ipc.open_file(pa.BufferReader((snap / name).read_bytes())).read_all()  # noqa: E731
    p = eng.partition()
    flat = read("centroids.arrow").column("centroid").combine_chunks().values.to_numpy()
    np.testing.assert_array_equal(flat.reshape(-1, 8), p["centroids"])
    assignment = read("partition.arrow").column("centroid").to_numpy()
    for j, m in enumerate(p["members"]):
        assert (assignment[m] == j).all()
    assert sum(len(m) for m in p["members"]) == len(assignment)
    manifest = json.loads((snap / "manifest.json").read_text())
    assert manifest["partition"] == {"delta": p["delta"], "built_at": p["built_at"]}
    back = ce.Engine.open(tmp_path / "s", read_only=True)
    back.partition_min = 0
    b = back.partition()
    np.testing.assert_array_equal(b["centroids"], p["centroids"])
    assert all(np.array_equal(x, y) for x, y in zip(b["members"], p["members"]))


@pytest.mark.parametrize("metric, minimum", [("l2", 0), ("cosine", 10_000), ("ip", 10_000)])
def test_no_partition_is_empty(metric, minimum):
    eng = ce.Engine(4, metric=metric)
    eng.partition_min = minimum
    eng.ingest({"vector": np.eye(4, dtype=np.float32), "valid_from": np.zeros(4, np.int64)})
    p = eng.partition()
    assert p["centroids"].shape == (0, 4) and p["members"] == [] and p["built_at"] == 0
    assert eng.stats()["partition"] == {"centroids": 0, "rows": 0, "delta": 0.0, "built_at": 0}
    if metric != "l2":
        eng.partition_min = 0  # built at once
        assert eng.stats()["partition"]["centroids"] == n_centroids(4)
        eng.partition_min = 100  # and dropped
        assert eng.partition()["members"] == [] and eng.stats()["partition"]["built_at"] == 0
