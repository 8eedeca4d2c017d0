"""Persistence: ``engine.save(path)`` / ``ce.Engine.open(path)``.

A store is a directory: ``CURRENT`` names the live ``snap-<hex>/`` holding ``graph.bin``,
``meta.arrow`` and ``manifest.json``. A round trip must keep every column, id, stem,
string and the decay policy, and answer every search identically; a save that fails or
crashes part-way must leave the previous copy loadable; a corrupt, truncated or foreign
store must raise CorruptStoreError / StorageError with a clear message, never crash.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import chrono_engine as ce
import chrono_engine.storage.checkpoint as storage_module
from chrono_engine.errors import ChronoError, CorruptStoreError, StorageError
from chrono_engine.synthetic import US_PER_DAY, make_corpus, times_for_selectivity
from storefiles import reseal, snap_dir

DIM = 16
KNOWN_AT = np.iinfo(np.int64).max - 1
OPEN_END = np.iinfo(np.int64).max


# ----------------------------------------------------------------------------- fixtures

def _policy(corpus):
    fams = [lambda h: ce.Exponential(half_life=h), lambda h: ce.Gaussian(half_life=h),
            lambda h: ce.Weibull(shape=1.5, scale=h), lambda h: ce.HalfLife(h, unit="days"),
            lambda h: ce.Linear(scale=h, decay=0.5, offset=1.0), lambda h: ce.PowerLaw(0.5)]
    return ce.DecayPolicy({f"type{i:02d}": fams[i % len(fams)](float(h)) for i, h in enumerate(corpus.half_lives)},
                          default=ce.Exponential(half_life=90.0, symmetric=True))


def _rows(corpus, lo, hi, rng):
    """Corpus rows [lo, hi) with every optional column filled, and random large user ids."""
    d = {k: v[lo:hi] for k, v in corpus.to_dict().items()}
    n = hi - lo
    d["id"] = (rng.choice(2**40, n, replace=False).astype(np.uint64) * np.uint64(4096)
               + np.uint64(2**63 if lo == 0 else 7))  # beyond int64 for the first batch
    d["source"] = np.asarray([f"src{i % 7}" for i in range(lo, hi)], dtype=object)
    d["modality"] = np.asarray(["text", None, "table"] * (n // 3) + ["text"] * (n % 3), dtype=object)
    d["content"] = np.asarray([f"content {i} — ünïcode 时间" for i in range(lo, hi)], dtype=object)
    sup = np.asarray([None if v == "v1" else f"v{int(v[1:]) - 1}" for v in d["version"]], dtype=object)
    d["supersedes"] = sup
    ft = d["fact_type"].copy()
    ft[::11] = "unprofiled"  # the policy's default profile
    d["fact_type"] = ft
    ret = np.full(n, np.datetime64("NaT", "us"), "datetime64[us]")
    pick = rng.random(n) < 0.05
    ret[pick] = d["ingested_at"][pick] + np.timedelta64(30, "D")
    d["retracted_at"] = ret
    return d


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(3000, DIM, clusters=16, seed=31)


def _build(corpus) -> ce.Engine:
    rng = np.random.default_rng(5)
    eng = ce.Engine(DIM, decay=_policy(corpus), M=12, ef_construction=80, threads=2, seed=7)
    a, b = _rows(corpus, 0, 2000, rng), _rows(corpus, 2000, 3000, rng)
    # lifecycle-like edits, written into the rows (stored in the order given): close some
    # intervals and deprecate those rows, retract others
    rows = {k: np.concatenate([a[k], b[k]]) for k in a}
    closed = np.flatnonzero(np.isnat(rows["valid_to"]))[:150]
    rows["valid_to"][closed] = rows["valid_from"][closed] + np.timedelta64(200, "D")
    rows["deprecated"][closed] = True
    gone = np.arange(5, 3000, 97)
    rows["retracted_at"][gone] = rows["ingested_at"][gone] + np.timedelta64(10, "D")
    eng.ingest({k: v[:2000] for k, v in rows.items()})
    eng.ingest({k: v[2000:] for k, v in rows.items()})
    return eng


@pytest.fixture(scope="module")
def engine(corpus):
    return _build(corpus)


@pytest.fixture(scope="module")
def saved(engine, tmp_path_factory):
    """A pristine saved store; tests that damage a store work on a copy."""
    path = tmp_path_factory.mktemp("store") / "db"
    engine.save(path)
    return path


@pytest.fixture
def copy_of(saved, tmp_path):
    dst = tmp_path / "db"
    shutil.copytree(saved, dst)
    return dst


def _snap(path: Path) -> Path:
    return snap_dir(path)


def _snaps(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.name.startswith("snap-"))


# ----------------------------------------------------------------------------- comparisons

def _queries(corpus, n=24):
    q = corpus.queries(n, seed=4)
    t = times_for_selectivity(corpus, 0.3, n)
    return q, t


SEARCHES = [
    dict(mode="latest"),
    dict(mode="latest", deprecated="exclude", fusion="linear", alpha=0.6),
    dict(mode="as_of"),
    dict(mode="as_of", tau=0.3, arbitrate=False),
    dict(mode="all", fact_types=["type01", "type02", "unprofiled"]),
    dict(mode="window"),
]


def _run(eng, corpus, kw, *, exact=True, known_at=KNOWN_AT):
    q, t = _queries(corpus)
    kw = dict(kw)
    if kw["mode"] == "window":
        kw["window"] = (t - 90 * US_PER_DAY, t)
    else:
        kw["as_of"] = t
    return eng.search_batch(q, 10, known_at=known_at, exact=exact, explain=True, **kw)


def _diff(a: pa.Table, b: pa.Table) -> str:
    """Where two result tables differ (for assertion messages)."""
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return f"schemas/rows differ: {a.schema} {a.num_rows} vs {b.schema} {b.num_rows}"
    out = []
    for name in a.column_names:
        x, y = a.column(name).to_pylist(), b.column(name).to_pylist()
        d = [(i, x[i], y[i]) for i in range(len(x)) if x[i] != y[i]]
        if d:
            out.append(f"{name}: {len(d)} rows differ, e.g. {d[:3]}")
    return "; ".join(out)


def assert_same_engine(a: ce.Engine, b: ce.Engine, corpus, *, graph_too: bool = True) -> None:
    assert len(a) == len(b)
    assert (a.dim, a.metric) == (b.dim, b.metric)
    assert a.decay == b.decay
    assert a.params == b.params
    assert a.fact_types == b.fact_types
    assert a.stems == b.stems
    ca, cb = a.columns(), b.columns()
    assert set(ca) == set(cb)
    for k in ca:
        np.testing.assert_array_equal(ca[k], cb[k], err_msg=k)
    np.testing.assert_array_equal(a.vectors(), b.vectors())
    sa, sb = a.strings(), b.strings()
    assert sa.select(sorted(sa.column_names)).equals(sb.select(sorted(sb.column_names)))
    np.testing.assert_array_equal(a.rows_of(ca["id"]), b.rows_of(ca["id"]))
    for kw in SEARCHES:
        ra, rb = _run(a, corpus, kw), _run(b, corpus, kw)
        assert ra.num_rows > 0
        assert ra.equals(rb), (kw, _diff(ra, rb))
    if graph_too:  # the graph itself came back: the approximate plan answers identically
        old = (a.scan_limit, b.scan_limit)
        a.scan_limit = b.scan_limit = 0
        try:
            for kw in SEARCHES[:3]:
                ra, rb = _run(a, corpus, kw, exact=False), _run(b, corpus, kw, exact=False)
                assert not ra.column("certified").to_numpy().any()
                assert ra.equals(rb), (kw, _diff(ra, rb))
        finally:
            a.scan_limit, b.scan_limit = old


# ----------------------------------------------------------------------------- round trips

def test_round_trip_is_identical(engine, saved, corpus):
    opened = ce.Engine.open(saved, read_only=True)
    assert isinstance(opened, ce.Engine)
    assert_same_engine(engine, opened, corpus)


def test_round_trip_keeps_lifecycle_edits_and_large_ids(engine, saved):
    opened = ce.Engine.open(saved, read_only=True)
    c = opened.columns()
    assert (c["deprecated"] == 1).sum() >= 150
    assert (c["retracted_at"] != OPEN_END).sum() > 0
    assert (c["id"] >= np.uint64(2**63)).sum() == 2000
    some = c["id"][[0, 1999, 2000, 2999]]
    np.testing.assert_array_equal(opened.rows_of(some), [0, 1999, 2000, 2999])


def test_round_trip_open_takes_threads(saved):
    assert ce.Engine.open(saved, threads=1, read_only=True).threads == 1


def test_round_trip_keeps_search_knobs(corpus, tmp_path):
    e = ce.Engine(corpus.vector.shape[1], scan="bounds", seed_min=7, group=16)
    e.ingest({k: v[:50] for k, v in corpus.to_dict().items()})
    e.save(tmp_path / "knobs")
    o = ce.Engine.open(tmp_path / "knobs")
    assert (o.scan, o.seed_min, o.group) == ("bounds", 7, 16)


def test_opened_engine_keeps_ingesting_like_the_original(corpus, saved, tmp_path):
    """New rows (no ids: assigned after the largest) and new versions of saved stems behave
    as if the store had never been closed."""
    original = _build(corpus)
    shutil.copytree(saved, tmp_path / "db")
    opened = ce.Engine.open(tmp_path / "db")
    rng = np.random.default_rng(77)
    extra = {k: v[:300] for k, v in corpus.to_dict().items()}
    extra["vector"] = (extra["vector"] + 0.05 * rng.standard_normal(extra["vector"].shape)).astype(np.float32)
    extra["version"] = np.asarray([f"v{i + 10}" for i in range(300)], dtype=object)  # newer versions of old stems
    extra["fact_type"] = np.asarray(["brand_new_type"] * 300, dtype=object)
    for e in (original, opened):
        e.ingest(dict(extra))
    ids_o = original.columns()["id"][-300:]
    ids_r = opened.columns()["id"][-300:]
    np.testing.assert_array_equal(ids_o, ids_r)
    assert opened.stems == original.stems
    assert opened.fact_types == original.fact_types
    # the graph grows differently after a reload (hnswlib's level generator is not saved),
    # so compare the certified plan only
    assert_same_engine(original, opened, corpus, graph_too=False)


def test_save_in_place_after_open(corpus, saved, tmp_path):
    """open -> ingest -> save to the same path (the old snapshot, memory-mapped by the open
    engine, is deleted underneath it) -> open again."""
    path = tmp_path / "db"
    shutil.copytree(saved, path)
    eng = ce.Engine.open(path)
    d = {k: v[:50] for k, v in corpus.to_dict().items()}
    eng.ingest(d)
    eng.save(path)
    assert len(_snaps(path)) == 1
    # the open engine still works after its snapshot directory was removed
    assert _run(eng, corpus, SEARCHES[0]).num_rows > 0
    again = ce.Engine.open(path, read_only=True)  # the writer holds the lock; a reader never waits
    assert_same_engine(eng, again, corpus)
    eng.close()
    again.save(path)
    assert_same_engine(eng, ce.Engine.open(path), corpus)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_round_trip_other_metrics_and_minimal_columns(metric, tmp_path, corpus):
    eng = ce.Engine(DIM, metric=metric, threads=1)
    eng.ingest({"vector": corpus.vector[:400] * 2.0, "valid_from": corpus.valid_from[:400]})
    eng.save(tmp_path / "db")
    opened = ce.Engine.open(tmp_path / "db")
    assert opened.metric == metric
    q, t = _queries(corpus, 8)
    for mode in ("all", "as_of"):
        a = eng.search_batch(q, 5, mode=mode, as_of=t, known_at=KNOWN_AT, exact=True)
        b = opened.search_batch(q, 5, mode=mode, as_of=t, known_at=KNOWN_AT, exact=True)
        assert a.equals(b)


def test_round_trip_empty_engine(tmp_path):
    eng = ce.Engine(4, decay=ce.Exponential(half_life=3), threads=1)
    eng.save(tmp_path / "db")
    opened = ce.Engine.open(tmp_path / "db")
    assert len(opened) == 0 and opened.dim == 4 and opened.decay == eng.decay
    res = opened.search(np.ones(4, np.float32), k=3)
    assert res.num_rows == 0
    ids = opened.ingest({"vector": np.eye(4, dtype=np.float32), "valid_from": ["2024-01-01"] * 4})
    assert ids.tolist() == [0, 1, 2, 3]
    assert opened.search(np.array([1, 0, 0, 0], np.float32), k=1, mode="all").column("id").to_pylist() == [0]


# ----------------------------------------------------------------------------- layout

def test_store_layout(engine, saved):
    names = sorted(p.name for p in saved.iterdir())
    snaps = [n for n in names if n.startswith("snap-")]
    assert len(snaps) == 1
    assert set(names) == {"CURRENT", "LOCK", snaps[0]}
    seal = json.loads((saved / "CURRENT").read_text())
    assert seal["snapshot"] == snaps[0] and seal["format"] == "chrono_engine.store"
    snap = saved / snaps[0]
    assert sorted(p.name for p in snap.iterdir()) == ["amend.arrow", "centroids.arrow", "graph.bin", "log.wal",
                                                      "manifest.json", "meta.arrow", "metadata.arrow",
                                                      "partition.arrow"]
    assert seal["manifest_sha256"] == hashlib.sha256((snap / "manifest.json").read_bytes()).hexdigest()
    manifest = json.loads((snap / "manifest.json").read_text())
    assert manifest["format"] == "chrono_engine.store"
    assert isinstance(manifest["format_version"], int)
    assert manifest["dim"] == DIM and manifest["metric"] == "cosine"
    assert manifest["rows"] == len(engine)
    assert ce.DecayPolicy.from_dict(manifest["decay"]) == engine.decay
    assert set(manifest["files"]) == {"graph.bin", "meta.arrow", "amend.arrow", "partition.arrow", "centroids.arrow",
                                      "metadata.arrow"}
    for name, digest in manifest["files"].items():
        assert digest == hashlib.sha256((snap / name).read_bytes()).hexdigest()
    with pa.memory_map(str(snap / "meta.arrow")) as src:
        table = ipc.open_file(src).read_all()
    assert table.num_rows == len(engine)
    for col in ("id", "valid_from", "valid_to", "observed_at", "ingested_at", "retracted_at", "reliability",
                "deprecated", "content", "title", "stem_id", "version"):
        assert col in table.column_names, col
    np.testing.assert_array_equal(table.column("id").to_numpy(), engine.columns()["id"])


def test_saving_twice_leaves_one_snapshot(corpus, tmp_path):
    eng = ce.Engine(DIM, threads=1)
    eng.ingest({"vector": corpus.vector[:100], "valid_from": corpus.valid_from[:100]})
    path = tmp_path / "db"
    eng.save(path)
    first = _snap(path).name
    eng.ingest({"vector": corpus.vector[100:150], "valid_from": corpus.valid_from[100:150]})
    eng.save(path)
    assert len(_snaps(path)) == 1
    assert _snap(path).name != first
    assert len(ce.Engine.open(path)) == 150
    eng.save(path)
    assert len(_snaps(path)) == 1


def test_saving_another_engine_over_a_store_replaces_it(corpus, saved, tmp_path):
    path = tmp_path / "db"
    shutil.copytree(saved, path)
    small = ce.Engine(8, metric="l2", threads=1)
    small.ingest({"vector": np.ones((3, 8), np.float32), "valid_from": ["2024-01-01"] * 3})
    small.save(path)
    opened = ce.Engine.open(path)
    assert (len(opened), opened.dim, opened.metric) == (3, 8, "l2")
    assert len(_snaps(path)) == 1


# ----------------------------------------------------------------------------- atomicity

def _grown(corpus, base: Path) -> ce.Engine:
    eng = ce.Engine.open(base)
    eng.ingest({k: v[:40] for k, v in corpus.to_dict().items()})
    return eng


def _assert_previous_copy(path: Path, engine, corpus):
    """The store opens (read-only: a writer may still hold it) with exactly ``engine``'s
    content: a failed checkpoint of an opened engine loses none of its logged writes."""
    opened = ce.Engine.open(path, read_only=True)
    assert len(opened) == len(engine)
    assert_same_engine(engine, opened, corpus, graph_too=False)


def test_failed_rename_keeps_previous_copy(engine, corpus, copy_of, monkeypatch):
    eng = _grown(corpus, copy_of)

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage_module.os, "replace", boom)
    with pytest.raises(StorageError, match="No space left"):
        eng.save(copy_of)
    monkeypatch.undo()
    _assert_previous_copy(copy_of, eng, corpus)
    assert len(_snaps(copy_of)) == 1  # the half-made snapshot was removed


def test_failed_fsync_after_snapshot_written_keeps_previous_copy(engine, corpus, copy_of, monkeypatch):
    eng = _grown(corpus, copy_of)
    real = storage_module.fsync_file

    def fsync(path):
        if Path(path).name.startswith("CURRENT"):  # the snapshot is complete by now
            raise OSError(5, "Input/output error")
        real(path)

    monkeypatch.setattr(storage_module, "fsync_file", fsync)
    with pytest.raises(StorageError):
        eng.save(copy_of)
    monkeypatch.undo()
    _assert_previous_copy(copy_of, eng, corpus)


def test_failure_while_writing_metadata_keeps_previous_copy(engine, corpus, copy_of, monkeypatch):
    eng = _grown(corpus, copy_of)

    def new_file(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage_module.ipc, "new_file", new_file)
    with pytest.raises(StorageError):
        eng.save(copy_of)
    monkeypatch.undo()
    _assert_previous_copy(copy_of, eng, corpus)
    assert len(_snaps(copy_of)) == 1


def test_failure_after_rename_leaves_a_loadable_store(engine, corpus, copy_of, monkeypatch):
    eng = _grown(corpus, copy_of)
    real = storage_module.fsync_dir

    def fsync_dir(path):
        if Path(path) == copy_of:
            raise OSError(5, "Input/output error")
        real(path)

    monkeypatch.setattr(storage_module, "fsync_dir", fsync_dir)
    with pytest.raises(StorageError):
        eng.save(copy_of)
    monkeypatch.undo()
    # committed, only not known durable: the engine writes to the new snapshot's log now
    eng.ingest({k: v[40:45] for k, v in corpus.to_dict().items()})
    _assert_previous_copy(copy_of, eng, corpus)


def test_failed_save_leaves_no_stray_files_after_next_save(corpus, copy_of, monkeypatch):
    eng = _grown(corpus, copy_of)
    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage_module.os, "replace", boom)
    with pytest.raises(StorageError):
        eng.save(copy_of)
    monkeypatch.undo()
    eng.save(copy_of)
    names = sorted(p.name for p in copy_of.iterdir())
    assert names[:2] == ["CURRENT", "LOCK"] and len(names) == 3 and names[2].startswith("snap-"), names


_CRASH_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import chrono_engine as ce
    import chrono_engine.storage.checkpoint as em
    path = sys.argv[1]
    eng = ce.Engine.open(path)
    eng.ingest({"vector": np.ones((5, eng.dim), np.float32), "valid_from": ["2030-01-01"] * 5})
    def die(*a, **k):
        os._exit(41)   # the process dies: no cleanup, no exception handlers
    em.os.replace = die
    eng.save(path)
    os._exit(0)
""")


@pytest.mark.slow
def test_process_killed_mid_save_keeps_previous_copy(engine, corpus, copy_of):
    # cwd outside the checkout: `python -c` puts the cwd first on sys.path, and the source
    # tree's chrono_engine/ (no compiled core) must not shadow the installed package
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, str(copy_of)], capture_output=True,
                          text=True, timeout=120, cwd=str(Path(copy_of).parent))
    assert proc.returncode == 41, proc.stderr
    assert len(_snaps(copy_of)) == 2  # the dead process left its finished snapshot behind
    # the previous snapshot and its log: the five acknowledged rows survive the crash
    eng = ce.Engine.open(copy_of)
    assert len(eng) == len(engine) + 5
    np.testing.assert_array_equal(eng.columns()["id"][:len(engine)], engine.columns()["id"])
    assert (eng.columns()["valid_from"][len(engine):] == eng.columns()["valid_from"][-1]).all()
    # the next successful save cleans up the orphan
    eng.save(copy_of)
    assert len(_snaps(copy_of)) == 1
    eng.close()
    assert len(ce.Engine.open(copy_of, read_only=True)) == len(engine) + 5


# ----------------------------------------------------------------------------- corruption

def _flip(path: Path, pos: int) -> None:
    b = bytearray(path.read_bytes())
    b[pos % len(b)] ^= 0x5A
    path.write_bytes(bytes(b))


def _truncate(path: Path, frac: float) -> None:
    b = path.read_bytes()
    path.write_bytes(b[: int(len(b) * frac)])


def _set_manifest(path: Path, **changes) -> None:
    m = json.loads((_snap(path) / "manifest.json").read_text())
    for k, v in changes.items():
        if v is _DROP:
            m.pop(k, None)
        else:
            m[k] = v
    (_snap(path) / "manifest.json").write_text(json.dumps(m))
    reseal(path, files=False)


_DROP = object()


def _expect_corrupt(path: Path, *words: str, cls=CorruptStoreError):
    with pytest.raises(cls) as info:
        ce.Engine.open(path)
    err = info.value
    assert isinstance(err, OSError) and isinstance(err, ChronoError)
    msg = str(err)
    assert str(path) in msg, msg
    for w in words:
        assert w in msg, msg
    return err


@pytest.mark.parametrize("where", [0, 17, 100, 0.5, -1], ids=["first", "header", "early", "middle", "last"])
def test_flipped_byte_in_graph(copy_of, where):
    f = _snap(copy_of) / "graph.bin"
    pos = int(where * f.stat().st_size) if isinstance(where, float) else where
    _flip(f, pos)
    _expect_corrupt(copy_of, "graph.bin")


@pytest.mark.parametrize("where", [0, 10, 0.5, -1], ids=["magic", "early", "middle", "footer"])
def test_flipped_byte_in_metadata(copy_of, where):
    f = _snap(copy_of) / "meta.arrow"
    pos = int(where * f.stat().st_size) if isinstance(where, float) else where
    _flip(f, pos)
    _expect_corrupt(copy_of, "meta.arrow")


@pytest.mark.parametrize("name", ["graph.bin", "meta.arrow"])
@pytest.mark.parametrize("frac", [0.0, 0.5, 0.999])
def test_truncated_file(copy_of, name, frac):
    _truncate(_snap(copy_of) / name, frac)
    _expect_corrupt(copy_of, name)


def test_appended_garbage(copy_of):
    with open(_snap(copy_of) / "graph.bin", "ab") as f:
        f.write(b"\0" * 64)
    _expect_corrupt(copy_of, "graph.bin")


@pytest.mark.parametrize("name", ["graph.bin", "meta.arrow"])
def test_deleted_data_file(copy_of, name):
    (_snap(copy_of) / name).unlink()
    _expect_corrupt(copy_of, name, "missing")


def test_deleted_manifest(copy_of):
    (_snap(copy_of) / "manifest.json").unlink()
    _expect_corrupt(copy_of, "manifest.json", cls=StorageError)


def test_deleted_current(copy_of):
    (copy_of / "CURRENT").unlink()
    _expect_corrupt(copy_of, "CURRENT", cls=StorageError)


def test_current_names_a_missing_snapshot(copy_of):
    (copy_of / "CURRENT").write_text("snap-0000")
    _expect_corrupt(copy_of, cls=StorageError)


def test_a_snapshot_folder_that_is_a_link_is_refused(copy_of, tmp_path):
    """The live snapshot's folder is a symbolic link (here to an identical copy elsewhere,
    so every checksum holds): refused, as a link in place of any of its files is."""
    snap = _snap(copy_of)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(snap), elsewhere)
    snap.symlink_to(elsewhere, target_is_directory=True)
    _expect_corrupt(copy_of, "symbolic link")
    with pytest.raises(CorruptStoreError, match="symbolic link"):
        ce.Engine.open(copy_of, read_only=True)


def test_deleted_snapshot_directory(copy_of):
    shutil.rmtree(_snap(copy_of))
    _expect_corrupt(copy_of, cls=StorageError)


@pytest.mark.parametrize("text", ["{not json", "", '{"format": "chrono_engine.store", "format_', "\xff\xfe"])
def test_bad_manifest_json(copy_of, text):
    (_snap(copy_of) / "manifest.json").write_bytes(text.encode("latin-1"))
    _expect_corrupt(copy_of, "manifest.json")


@pytest.mark.parametrize("version", [1, 6, 0, "2", "3", "4", "5", None, 2.5, 3.0, 4.0, 5.0])
def test_unknown_format_version(copy_of, version):
    _set_manifest(copy_of, format_version=version)
    _expect_corrupt(copy_of, "version")


def test_missing_format_version(copy_of):
    _set_manifest(copy_of, format_version=_DROP)
    _expect_corrupt(copy_of, "version")


@pytest.mark.parametrize("fmt", ["someone.else", None, ""])
def test_unknown_format_name(copy_of, fmt):
    _set_manifest(copy_of, format=fmt)
    _expect_corrupt(copy_of, "format")


def test_manifest_checksum_mismatch(copy_of):
    m = json.loads((_snap(copy_of) / "manifest.json").read_text())
    m["files"]["meta.arrow"] = "0" * 64
    (_snap(copy_of) / "manifest.json").write_text(json.dumps(m))
    reseal(copy_of, files=False)
    _expect_corrupt(copy_of, "meta.arrow", "checksum")


def test_manifest_row_count_mismatch(copy_of):
    _set_manifest(copy_of, rows=12)
    _expect_corrupt(copy_of, "rows")


@pytest.mark.parametrize("case", ["list", "no files", "no params", "no rows", "no dim"])
def test_malformed_manifest(copy_of, case):
    mf = _snap(copy_of) / "manifest.json"
    if case == "list":
        mf.write_text("[1, 2, 3]")
    else:
        _set_manifest(copy_of, **{case.split()[1]: _DROP})
    _expect_corrupt(copy_of, "manifest")


@pytest.mark.parametrize("change", [dict(decay={"version": 1, "profiles": {"x": {"family": "bogus"}}}),
                                    dict(dim="sixteen"), dict(metric="hamming")])
def test_manifest_with_invalid_parameters(copy_of, change):
    _set_manifest(copy_of, **change)
    _expect_corrupt(copy_of)


def test_open_missing_path(tmp_path):
    _expect_corrupt(tmp_path / "does-not-exist", "not a chrono_engine store", cls=StorageError)


def test_open_empty_directory(tmp_path):
    _expect_corrupt(tmp_path, "not a chrono_engine store", cls=StorageError)


def test_open_unrelated_directory(tmp_path):
    (tmp_path / "CURRENT.txt").write_text("hello")
    (tmp_path / "notes").mkdir()
    _expect_corrupt(tmp_path, cls=StorageError)


def test_open_a_regular_file(tmp_path):
    f = tmp_path / "store.bin"
    f.write_bytes(b"not a store")
    _expect_corrupt(f, cls=StorageError)


def test_error_classes_are_catchable_as_oserror(copy_of):
    (_snap(copy_of) / "graph.bin").unlink()
    with pytest.raises(OSError):
        ce.Engine.open(copy_of)


# Files damaged *and* re-checksummed (a buggy writer, a manual edit): the checksums no longer
# help, so the readers themselves must refuse. Opened in a child process so that a crash in
# hnswlib's loader fails the test instead of killing the test run.

_OPEN_SCRIPT = textwrap.dedent("""
    import sys
    import chrono_engine as ce
    from chrono_engine.errors import StorageError
    try:
        eng = ce.Engine.open(sys.argv[1])
    except StorageError as e:
        print("STORAGE_ERROR", type(e).__name__, e)
    except Exception as e:
        print("OTHER_ERROR", type(e).__name__, e)
    else:
        print("OPENED", len(eng))
""")


def _open_in_child(path: Path) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-c", _OPEN_SCRIPT, str(path)], capture_output=True, text=True,
                          timeout=120, cwd=str(Path(path).parent))
    return proc.returncode, proc.stdout.strip() + proc.stderr[-500:]


def _rechecksum(path: Path) -> None:
    reseal(path)


@pytest.mark.slow
def test_rechecksummed_truncated_metadata(copy_of):
    _truncate(_snap(copy_of) / "meta.arrow", 0.5)
    _rechecksum(copy_of)
    rc, out = _open_in_child(copy_of)
    assert rc == 0, out
    assert out.startswith("STORAGE_ERROR CorruptStoreError") and "meta.arrow" in out, out


@pytest.mark.slow
def test_rechecksummed_metadata_of_another_store(copy_of, tmp_path):
    other = ce.Engine(DIM, threads=1)
    other.ingest({"vector": np.ones((7, DIM), np.float32), "valid_from": ["2024-01-01"] * 7})
    other.save(tmp_path / "other")
    shutil.copy(_snap(tmp_path / "other") / "meta.arrow", _snap(copy_of) / "meta.arrow")
    _rechecksum(copy_of)
    rc, out = _open_in_child(copy_of)
    assert rc == 0, out
    assert out.startswith("STORAGE_ERROR CorruptStoreError"), out


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "other store"])
def test_rechecksummed_bad_graph(copy_of, tmp_path, damage):
    g = _snap(copy_of) / "graph.bin"
    if damage == "truncate":
        _truncate(g, 0.5)
    else:
        other = ce.Engine(DIM, threads=1)
        other.ingest({"vector": np.ones((7, DIM), np.float32), "valid_from": ["2024-01-01"] * 7})
        other.save(tmp_path / "other")
        shutil.copy(_snap(tmp_path / "other") / "graph.bin", g)
    _rechecksum(copy_of)
    rc, out = _open_in_child(copy_of)
    assert rc == 0, out  # never a crash
    assert out.startswith("STORAGE_ERROR CorruptStoreError") and "graph" in out, out


def test_corrupt_copy_does_not_affect_other_copies(saved, engine, corpus, copy_of):
    _flip(_snap(copy_of) / "graph.bin", 1234)
    with pytest.raises(CorruptStoreError):
        ce.Engine.open(copy_of)
    assert len(ce.Engine.open(saved, read_only=True)) == len(engine)


def test_open_does_not_modify_the_store(saved):
    """A reader changes nothing; a writer that writes nothing changes only the LOCK file."""
    def files():
        return {p.relative_to(saved): p.read_bytes() for p in saved.rglob("*") if p.is_file() and p.name != "LOCK"}
    before = files()
    ce.Engine.open(saved, read_only=True)
    assert files() == before
    with ce.Engine.open(saved):
        pass
    assert files() == before


def test_save_to_a_path_that_is_a_file(tmp_path, engine):
    f = tmp_path / "file"
    f.write_text("x")
    try:
        with pytest.raises(StorageError):
            engine.save(f)
    finally:
        assert f.read_text() == "x"
