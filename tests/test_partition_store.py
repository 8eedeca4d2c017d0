"""The probe plan's partition in a store (format 4: partition.arrow, centroids.arrow and the
manifest's ``partition`` field): saved, reopened without being rebuilt, equal to the live
engine's, damaged files refused, and format-3 stores (no saved partition) still open."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import chrono_engine as ce
import chrono_engine._partition as partition_module
from chrono_engine import synthetic as syn
from chrono_engine.bench.corpus import policy_for
from chrono_engine.errors import CorruptStoreError
from storefiles import as_format, copy_store, reseal, snap_dir, write_manifest

N, D = 21_000, 16


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    corpus = syn.make_corpus(N, D, half_lives=syn.STEEP_HALF_LIVES, seed=4, clusters=32)
    eng = ce.Engine(D, decay=policy_for(corpus.half_lives), threads=2)
    eng.ingest(corpus.to_dict())
    path = tmp_path_factory.mktemp("part") / "s"
    eng.save(path)
    return eng, path, corpus


def members(e) -> list:
    return [m.tolist() for m in e.partition()["members"]]


def info(e) -> tuple[int, int, float]:
    """(centroids, rows assigned, delta) of the engine's partition."""
    p = e.stats()["partition"]
    return p["centroids"], p["rows"], p["delta"]


def test_the_partition_is_saved_and_opened_without_a_rebuild(live, monkeypatch):
    eng, path, corpus = live
    C, covered, delta = info(eng)
    assert C > 0 and covered == N

    def no_kmeans(*a, **k):
        raise AssertionError("open rebuilt the partition")
    monkeypatch.setattr(partition_module, "_centroids", no_kmeans)
    back = ce.Engine.open(path, read_only=True)
    assert info(back) == (C, covered, delta)
    np.testing.assert_array_equal(back.partition()["centroids"], eng.partition()["centroids"])
    assert back.partition()["built_at"] == eng.partition()["built_at"]
    assert members(back) == members(eng)
    # the probe answers (approximate, plan-dependent) are the live engine's
    qv = corpus.queries(20, seed=5)
    T = syn.times_for_selectivity(corpus, 0.5, 20, seed=6)
    for i in range(20):
        a = eng.search(qv[i], 10, mode="as_of", as_of=int(T[i]), explain=True)
        b = back.search(qv[i], 10, mode="as_of", as_of=int(T[i]), explain=True)
        assert a.column("plan").to_pylist() == b.column("plan").to_pylist()
        assert a.column("id").to_pylist() == b.column("id").to_pylist()


def test_a_partition_built_at_fewer_rows_is_kept_as_it_was(live, tmp_path):
    """Rows added since the partition was built are assigned to its centroids (no rebuild
    until the store doubles); a reopened store keeps those centroids, where rebuilding on
    open would have changed them."""
    eng, path, corpus = live
    e = ce.Engine.open(copy_store(path, tmp_path / "s"))
    extra = syn.make_corpus(3000, D, half_lives=syn.STEEP_HALF_LIVES, seed=9).to_dict()
    extra["id"] = np.arange(10**9, 10**9 + 3000, dtype=np.uint64)
    extra.pop("stem_id", None)
    e.ingest(extra)
    before = e.partition()["centroids"], members(e), e.partition()["built_at"]
    assert before[2] == N
    e.save()
    e.close()
    back = ce.Engine.open(tmp_path / "s", read_only=True)
    np.testing.assert_array_equal(back.partition()["centroids"], before[0])
    assert members(back) == before[1] and back.partition()["built_at"] == N


def _rewrite(path: Path, name: str, table: pa.Table) -> None:
    with pa.OSFile(str(snap_dir(path) / name), "wb") as sink, ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    reseal(path)


def _read(path: Path, name: str) -> pa.Table:
    return ipc.open_file(pa.BufferReader((snap_dir(path) / name).read_bytes())).read_all()


def _refused(path: Path, *words: str) -> None:
    with pytest.raises(CorruptStoreError) as info:
        ce.Engine.open(path, read_only=True)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_a_row_naming_a_missing_centroid_is_refused(live, tmp_path):
    path = copy_store(live[1], tmp_path / "s")
    a = _read(path, "partition.arrow").column("centroid").to_numpy().copy()
    a[7] = 4000
    _rewrite(path, "partition.arrow", pa.table({"centroid": pa.array(a, pa.uint16())}))
    _refused(path, "partition.arrow", "row 7", "centroid 4000")


def test_more_assigned_rows_than_the_store_has_are_refused(live, tmp_path):
    path = copy_store(live[1], tmp_path / "s")
    a = _read(path, "partition.arrow").column("centroid").to_numpy()
    _rewrite(path, "partition.arrow", pa.table({"centroid": pa.array(np.concatenate([a, a[:5]]), pa.uint16())}))
    _refused(path, "partition.arrow")


@pytest.mark.parametrize("edit, word", [
    ("nan", "not finite"), ("schema", "columns or types"), ("nulls", "nulls"), ("none", "disagree")])
def test_damaged_centroids_are_refused(live, tmp_path, edit, word):
    path = copy_store(live[1], tmp_path / "s")
    c = _read(path, "centroids.arrow")
    flat = c.column("centroid").combine_chunks().values.to_numpy().copy()
    if edit == "nan":
        flat[3] = np.nan
        t = pa.table({"centroid": pa.FixedSizeListArray.from_arrays(pa.array(flat), D)})
    elif edit == "schema":
        t = pa.table({"centroid": pa.FixedSizeListArray.from_arrays(pa.array(flat.astype(np.float64)), D)})
    elif edit == "nulls":
        lists = pa.FixedSizeListArray.from_arrays(pa.array(flat), D)
        mask = np.zeros(len(lists), bool)
        mask[1] = True
        t = pa.table({"centroid": pa.FixedSizeListArray.from_arrays(pa.array(flat), D, mask=pa.array(mask))})
    else:  # centroids gone, the manifest and the rows still name some
        t = pa.table({"centroid": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(0, np.float32)), D)})
    _rewrite(path, "centroids.arrow", t)
    _refused(path, word)


@pytest.mark.parametrize("value, word", [({"delta": -1.0, "built_at": 5}, "partition.delta"),
                                         ({"delta": 0.1}, "partition"),
                                         ({"delta": 0.1, "built_at": 10**9}, "partition.built_at"),
                                         (None, "disagree"), ("x", "partition")])
def test_the_manifest_partition_field_is_checked(live, tmp_path, value, word):
    path = copy_store(live[1], tmp_path / "s")
    mf = snap_dir(path) / "manifest.json"
    m = json.loads(mf.read_text())
    m["partition"] = value
    mf.write_text(json.dumps(m))
    reseal(path, files=False)
    _refused(path, word)


def test_a_format_3_store_opens_and_builds_its_partition(live, tmp_path):
    """Stores saved before the partition was (format 3) still open; the partition is built
    on open as it was then."""
    eng, src, _ = live
    path = copy_store(src, tmp_path / "s")
    m = as_format(path, 3)
    back = ce.Engine.open(path, read_only=True)
    C, covered, _ = info(back)
    assert C == info(eng)[0] and covered == N
    # a format-3 manifest with a partition field, or a format-4 one without, is refused
    m["partition"] = None
    write_manifest(path, m)
    _refused(path, "partition")
