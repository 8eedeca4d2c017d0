"""Store files as untrusted input: the manifest is sealed, every
manifest field and metadata column is checked before use, and only regular files are read.

Each case either edits a file and leaves the checksums stale (the seal must catch it), or
edits it and recomputes every checksum (``reseal``: a careless tool or an attacker without
the key), so that the checks behind the checksums must refuse it. Opens that could hang or
crash run in a child process with a timeout.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import chrono_engine as ce
from chrono_engine.errors import CorruptStoreError
from storefiles import as_format, copy_store, reseal, snap_dir, write_manifest

DIM = 8


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 60
    eng = ce.Engine(DIM, decay=ce.DecayPolicy({"news": ce.Exponential(half_life=30.0)},
                                              default=ce.HalfLife(365.0)), threads=1)
    eng.ingest({"vector": rng.normal(size=(n, DIM)).astype(np.float32),
                "valid_from": np.datetime64("2024-01-01", "us") + np.arange(n).astype("timedelta64[D]"),
                "stem_id": [f"s{i % 9}" if i % 4 else None for i in range(n)],
                "version": [f"v{i}" for i in range(n)], "fact_type": ["news", "other"] * (n // 2),
                "title": [f"title {i}" for i in range(n)]})
    path = tmp_path_factory.mktemp("pristine") / "s"
    eng.save(path)
    return path


@pytest.fixture
def copy(pristine, tmp_path):
    return copy_store(pristine, tmp_path / "s")


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(CorruptStoreError) as info:
        ce.Engine.open(path, read_only=True)
    msg = str(info.value)
    for w in words:
        assert w in msg, msg
    return msg


_CHILD = textwrap.dedent("""
    import sys
    import chrono_engine as ce
    from chrono_engine.errors import ChronoError
    try:
        e = ce.Engine.open(sys.argv[1], read_only=True)
        e.search_batch(__import__("numpy").ones((2, e.dim), "float32"), 5, mode="all")
    except ChronoError as e:
        print("REFUSED", type(e).__name__, e)
    else:
        print("OPENED", len(e))
""")


def _open_in_child(path: Path, timeout: float = 60) -> str:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True,
                          timeout=timeout, cwd=str(Path(path).parent))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


# ----------------------------------------------------------------------------- the seal

def test_every_single_byte_flip_of_the_manifest_is_caught(copy):
    mf = snap_dir(copy) / "manifest.json"
    good = mf.read_bytes()
    for pos in range(0, len(good), max(1, len(good) // 300)):
        b = bytearray(good)
        b[pos] ^= 0x01
        mf.write_bytes(bytes(b))
        _refused(copy, "manifest.json", "checksum")
    mf.write_bytes(good)
    assert len(ce.Engine.open(copy, read_only=True)) == 60


def test_the_issues_silent_manifest_edits_are_caught(copy):
    """β, stem names and profiles changed without resealing (the issue's 6 of 48)."""
    mf = snap_dir(copy) / "manifest.json"
    text = mf.read_text()
    for a, b in (('"s1"', '"s7x"'), ('"profiles"', '"profiFes"'), ('"news"', '"newz"')):
        assert a in text
        mf.write_text(text.replace(a, b, 1))
        _refused(copy, "checksum")


@pytest.mark.parametrize("seal", ["snap-" + "0" * 32, "", "{}", "[1]", '{"format": "chrono_engine.store"}',
                                  '{"format": "x", "snapshot": "snap-%s", "manifest_sha256": "%s"}' % ("0" * 32, "0" * 64),
                                  '{"format": "chrono_engine.store", "snapshot": "../../etc", "manifest_sha256": "%s"}'
                                  % ("0" * 64)])
def test_a_bad_seal_is_refused(copy, seal):
    (copy / "CURRENT").write_text(seal)
    _refused(copy, "CURRENT")


# ----------------------------------------------------------------------------- manifest fields

def _edit_manifest(path: Path, **changes) -> None:
    mf = snap_dir(path) / "manifest.json"
    m = json.loads(mf.read_text())
    m.update(changes)
    mf.write_text(json.dumps(m))
    reseal(path, files=False)


@pytest.mark.slow
@pytest.mark.parametrize("field,value,word", [
    ("dim", 1_000_000, "dim"), ("dim", 0, "dim"), ("dim", True, "dim"), ("dim", 9, "graph.bin"),
    ("metric", "hamming", "metric"), ("params", {"M": 10**9, "ef_construction": 10, "seed": 1}, "params.M"),
    ("params", {"M": 16}, "params"), ("rows", -1, "rows"), ("rows", 61, "rows"), ("rows", 2**40, "rows"),
    ("fact_types", ["news", "news"], "fact_types"), ("fact_types", ["news", 3], "fact_types"),
    ("stems", ["s1", "s1"], "stems"), ("stems", [], "stem"), ("keyed", True, "keyed"),
    ("files", {"graph.bin": "0" * 64, "meta.arrow": "0" * 64, "../../etc/passwd": "0" * 64}, "files"),
    ("files", {"graph.bin": "/dev/zero", "meta.arrow": "0" * 64}, "files"),
    ("search", {"group": 10**30}, "settings"), ("search", {"nonsense": 1}, "settings"),
    ("search", {"scan": "sideways"}, "settings"), ("search", [], "search"),
    ("decay", {"version": 1, "profiles": {"news": {"family": "exponential", "beta": -1}}}, "decay"),
    ("decay", {"version": 1, "profiles": {"news": {"family": "exponential", "beta": "fast"}}}, "decay"),
    ("decay", [[[[[]]]]], "decay"),
])
def test_manifest_fields_are_checked(copy, field, value, word):
    _edit_manifest(copy, **{field: value})
    out = _open_in_child(copy)  # "dim": 1000000 used to segfault
    assert out.startswith("REFUSED CorruptStoreError") and word in out, out


@pytest.mark.slow
@pytest.mark.parametrize("text", ['{"dim": 1e400}', '{"dim": NaN}', "[" * 100_000 + "]" * 100_000,
                                  '{"dim": ' + "9" * 5000 + "}", "\udcff"],
                         # short ids: pytest puts the test id in PYTEST_CURRENT_TEST, which the
                         # child inherits, and a 200 kB variable fails exec with E2BIG
                         ids=["huge-float", "nan", "deep-nesting", "long-int", "bad-utf8"])
def test_manifest_json_that_breaks_parsers(copy, text):
    (snap_dir(copy) / "manifest.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    reseal(copy, files=False)
    out = _open_in_child(copy)
    assert out.startswith("REFUSED CorruptStoreError") and "manifest.json" in out, out


# ----------------------------------------------------------------------------- metadata

def _edit_meta(path: Path, edit) -> None:
    f = snap_dir(path) / "meta.arrow"
    t = ipc.open_file(pa.BufferReader(f.read_bytes())).read_all()  # not mapped: the file is rewritten
    t = edit(t)
    with pa.OSFile(str(f), "wb") as sink, ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    reseal(path)


def _set(t: pa.Table, name: str, values) -> pa.Table:
    i = t.column_names.index(name)
    return t.set_column(i, name, pa.array(values, t.schema.field(name).type))


def _strings_from(n: int, data: bytes, step: int) -> pa.Array:
    """A string array built from raw buffers, unchecked: offsets i * step into ``data``
    (step -1: offsets that go down, 5, 3, 5, 3, ...)."""
    offsets = (np.arange(0, (n + 1) * step, step, dtype=np.int32) if step > 0
               else np.tile(np.array([5, 3], np.int32), n + 1)[:n + 1])
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))


def _set_raw(t: pa.Table, name: str, arr: pa.Array) -> pa.Table:
    return t.set_column(t.column_names.index(name), name, arr)


def _with(name, fn):
    def edit(t):
        v = t.column(name).to_numpy(zero_copy_only=False).copy()
        return _set(t, name, fn(v))
    return edit


@pytest.mark.slow
@pytest.mark.parametrize("name,edit,word", [
    ("reliability 7.5", _with("reliability", lambda v: np.where(np.arange(len(v)) == 3, 7.5, v)), "reliability"),
    ("reliability NaN", _with("reliability", lambda v: np.where(np.arange(len(v)) == 3, np.nan, v)), "reliability"),
    ("reliability 0", _with("reliability", lambda v: np.where(np.arange(len(v)) == 3, 0, v)), "reliability"),
    ("duplicate id", _with("id", lambda v: np.where(np.arange(len(v)) == 5, v[2], v)), "duplicate id"),
    ("valid_to < valid_from", lambda t: _set(t, "valid_to", np.where(np.arange(len(t)) == 0,
                                                                    t.column("valid_from").to_numpy() - 1,
                                                                    t.column("valid_to").to_numpy())), "valid_to"),
    ("time out of range", _with("observed_at", lambda v: np.where(np.arange(len(v)) == 1, -2**62, v)), "observed_at"),
    ("retracted before ingest", lambda t: _set(t, "retracted_at", t.column("ingested_at").to_numpy()), "retracted_at"),
    ("stem code too big", _with("stem_code", lambda v: np.where(np.arange(len(v)) == 2, 2**31 - 1, v)), "stem_code"),
    ("stem code negative", _with("stem_code", lambda v: np.where(np.arange(len(v)) == 2, -7, v)), "stem_code"),
    ("fact type code", _with("fact_type_code", lambda v: np.where(np.arange(len(v)) == 2, 9, v)), "fact_type_code"),
    ("stem name", lambda t: _set(t, "stem_id", ["zzz"] + t.column("stem_id").to_pylist()[1:]), "stem_id"),
    ("fact type name", lambda t: _set(t, "fact_type", ["news"] * len(t)), "fact_type"),
    ("version key", _with("version_key", lambda v: v + 1), "version_key"),
    ("null in a number column", lambda t: _set(t, "reliability", [None] + t.column("reliability").to_pylist()[1:]),
     "nulls"),
    ("wrong type", lambda t: t.set_column(t.column_names.index("reliability"), "reliability",
                                          t.column("reliability").cast(pa.float64())), "types"),
    ("extra column", lambda t: t.append_column("x", pa.array(np.zeros(len(t)))), "columns"),
    ("fewer rows", lambda t: t.slice(0, 59), "rows"),
    ("rows reordered", lambda t: t.take(pa.array(np.roll(np.arange(len(t)), 1))), ""),
    ("invalid UTF-8", lambda t: _set_raw(t, "title", _strings_from(len(t), b"\xff\xfe" * len(t), 2)), "Arrow"),
    ("string offsets decreasing", lambda t: _set_raw(t, "title", _strings_from(len(t), b"ab" * 400, -1)), "Arrow"),
])
def test_metadata_is_checked_behind_the_checksum(copy, name, edit, word):
    _edit_meta(copy, edit)
    out = _open_in_child(copy)
    assert out.startswith("REFUSED CorruptStoreError"), (name, out)
    assert word in out, (name, out)


# ----------------------------------------------------------------------------- files that are not files

def _replace_with(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink to a good copy":
        other = path.parent.parent / ("saved-" + path.name)
        path.symlink_to(other)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dev/zero", "fifo", "directory"])
@pytest.mark.parametrize("name", ["CURRENT", "manifest.json", "graph.bin", "meta.arrow", "log.wal"])
def test_only_regular_files_are_read(copy, name, kind):
    target = copy / name if name == "CURRENT" else snap_dir(copy) / name
    _replace_with(target, kind)
    out = _open_in_child(copy, timeout=60)  # a FIFO used to block forever, /dev/zero to read forever
    assert out.startswith("REFUSED CorruptStoreError") and name in out, out
    assert "is not a regular file" in out, out


def test_column_names_that_are_not_utf8(copy):
    """A fuzzing finding: reading the names of a schema that is not UTF-8 raised
    UnicodeDecodeError out of Engine.open."""
    _edit_meta(copy, lambda t: t.rename_columns([("tit\u00e9" if n == "title" else n) for n in t.column_names]))
    f = snap_dir(copy) / "meta.arrow"
    f.write_bytes(f.read_bytes().replace("tit\u00e9".encode(), b"tit\x9b\x9b"))
    reseal(copy)
    _refused(copy, "meta.arrow")


# ----------------------------------------------------------------------------- lifecycle events

@pytest.fixture(scope="module")
def amended(tmp_path_factory):
    """A store with lifecycle events: two supersedes and a deprecation."""
    eng = ce.Engine(DIM, threads=1)
    rng = np.random.default_rng(4)
    eng.ingest({"vector": rng.normal(size=(6, DIM)).astype(np.float32),
                "valid_from": ["2024-01-01"] * 6, "ingested_at": ["2024-01-01"] * 6,
                "stem_id": ["a", "a", "b", "b", "c", None], "version": ["1"] * 5 + [None]})
    eng.supersede("a", {"vector": rng.normal(size=(1, DIM)).astype(np.float32), "ingested_at": ["2024-03-01"]},
                  "2024-02-01", version="2")
    eng.supersede("b", {"vector": rng.normal(size=(1, DIM)).astype(np.float32), "ingested_at": ["2024-05-01"]},
                  "2024-06-01", version="2")
    eng.deprecate([5], effective_at="2024-04-01", at="2024-04-15")
    path = tmp_path_factory.mktemp("amended") / "s"
    eng.save(path)
    return path, {k: eng.columns(known_at=k) for k in ("2024-02-15", "2024-04-20", "2024-12-01")}


def test_lifecycle_events_round_trip(amended):
    path, views = amended
    eng = ce.Engine.open(path, read_only=True)
    for k, want in views.items():
        got = eng.columns(known_at=k)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} at {k}")
    assert eng.history("b", known_at="2024-04-20").column("valid_to").null_count == 3  # before the supersede
    assert eng.history("b").column("valid_to").null_count == 1


def _edit_amend(path: Path, edit) -> None:
    f = snap_dir(path) / "amend.arrow"
    t = ipc.open_file(pa.BufferReader(f.read_bytes())).read_all()
    t = edit(t)
    with pa.OSFile(str(f), "wb") as sink, ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    reseal(path)


def _set_amend(name, fn):
    def edit(t):
        v = t.column(name).to_numpy().copy()
        return t.set_column(t.column_names.index(name), name, pa.array(fn(v), t.schema.field(name).type))
    return edit


_MAX = np.iinfo(np.int64).max


@pytest.mark.slow
@pytest.mark.parametrize("edit, word", [
    (_set_amend("row", lambda v: v + 1000), "no such row"),
    (_set_amend("tx", lambda v: v - 10**15), "before the row's ingested_at"),
    (_set_amend("tx", lambda v: np.full_like(v, _MAX)), "tx"),
    (_set_amend("valid_to", lambda v: np.full_like(v, 1_700_000_000_000_000)), "valid_to <= valid_from"),
    (_set_amend("valid_to", lambda v: np.full_like(v, -2**62)), "years 1..9999"),
    (_set_amend("deprecated_from", lambda v: np.full_like(v, 2**62)), "years 1..9999"),
    (lambda t: t.drop_columns(["tx"]), "columns or types"),
    (lambda t: t.set_column(1, "tx", pa.array([None] * len(t), pa.int64())), "nulls"),
    (lambda t: pa.concat_tables([t.slice(0, 1)] * 70), "more than 64"),
], ids=["row", "tx-early", "tx-open", "empty-interval", "valid_to-range", "deprecated_from-range", "schema",
        "nulls", "too-many"])
def test_lifecycle_events_file_is_checked(amended, tmp_path, edit, word):
    path = copy_store(amended[0], tmp_path / "s")
    _edit_amend(path, edit)
    out = _open_in_child(path)
    assert out.startswith("REFUSED CorruptStoreError") and "amend.arrow" in out and word in out, out


def test_a_format_2_store_opens(pristine, tmp_path):
    """Stores saved before lifecycle events had their own file (format 2) still open."""
    path = copy_store(pristine, tmp_path / "s")
    m = as_format(path, 2)
    eng = ce.Engine.open(path, read_only=True)
    assert len(eng) == 60
    np.testing.assert_array_equal(eng.columns()["id"], ce.Engine.open(pristine, read_only=True).columns()["id"])
    # a format-2 manifest that lists amend.arrow, or a format-3 one that does not, is refused
    m["files"]["amend.arrow"] = "0" * 64
    write_manifest(path, m)
    _refused(path, "files")


def test_store_opens_and_refuses_links_without_o_nofollow(tmp_path, monkeypatch):
    """Windows' os has no O_NOFOLLOW or O_NONBLOCK: with them absent (0), a store still opens
    and writes, and a symbolic link where a store file or the lock should be is still refused
    (an lstat before the open)."""
    import chrono_engine._util as util
    import chrono_engine.storage.lock as lock
    from chrono_engine.errors import CorruptStoreError, StorageError

    monkeypatch.setattr(util, "O_NOFOLLOW", 0)
    monkeypatch.setattr(util, "O_NONBLOCK", 0)
    monkeypatch.setattr(lock, "O_NOFOLLOW", 0)
    rng = np.random.default_rng(0)
    eng = ce.Engine.create(tmp_path / "st", dim=4)
    eng.ingest({"vector": rng.standard_normal((3, 4)).astype(np.float32), "valid_from": ["2024-01-01"] * 3})
    eng.close()
    back = ce.Engine.open(tmp_path / "st")
    assert len(back) == 3
    back.close()
    seal = tmp_path / "st" / "CURRENT"
    real = tmp_path / "CURRENT.real"
    seal.rename(real)
    seal.symlink_to(real)
    with pytest.raises(StorageError, match="symbolic link|not a regular file|unreadable"):
        ce.Engine.open(tmp_path / "st", read_only=True)
    seal.unlink()
    real.rename(seal)
    (tmp_path / "st" / "LOCK").unlink()
    (tmp_path / "st" / "LOCK").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(CorruptStoreError, match="LOCK is not a regular file"):
        ce.Engine.open(tmp_path / "st")
    assert not (tmp_path / "elsewhere").exists()
