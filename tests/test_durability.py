"""Durability and one writer: the write-ahead log, its replay and torn
tail, the fsync policies, the writer lock, readers during checkpoints, cleanup of only our
own files, and keyed stores.

The reference for "what the store should hold" is an in-memory engine given the same
calls: a store reopened after any sequence of acknowledged writes (no save) must equal it
column for column, vector for vector, and answer searches identically.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine.errors import ConfigError, CorruptStoreError, StorageError, StoreLockedError
from storefiles import reseal, snap_dir

DIM = 8
T0 = np.datetime64("2024-01-01T00:00:00", "us")
OPEN = np.iinfo(np.int64).max


def _rows(n, seed, stem=None, version="v1", start=0):
    rng = np.random.default_rng(seed)
    d = {"vector": rng.normal(size=(n, DIM)).astype(np.float32),
         "valid_from": T0 + np.arange(start, start + n).astype("timedelta64[D]"),
         "title": [f"t{seed}-{i} ü 时" for i in range(n)],
         "ingested_at": np.full(n, T0 + np.timedelta64(300, "D"))}
    if stem is not None:
        d["stem_id"] = [stem] * n
        d["version"] = [version] * n
    return d


def _calls(eng):
    """A fixed sequence of every kind of write."""
    eng.ingest(_rows(30, 1))
    eng.ingest(_rows(4, 2, stem="policy", version="v1.0.0"))
    eng.supersede("policy", {"vector": np.ones((2, DIM), np.float32)}, "2024-06-01", version="v2.0.0")
    eng.retract([3, 5], at="2040-01-01")
    eng.deprecate([7, 8], effective_at="2024-02-01")
    eng.on_approval_event({"stem_id": "policy", "version": "v3.0.0", "effective_at": "2024-09-01",
                           "rows": [{"vector": [0.5] * DIM, "title": "third"}]})
    eng.ingest({**_rows(3, 3), "id": [2**63 + 3, 2**63 + 2, 10**12]})


def _assert_same(a, b):
    ca, cb = a.columns(), b.columns()
    assert ca.keys() == cb.keys()
    for k in ca:
        np.testing.assert_array_equal(ca[k], cb[k], err_msg=k)
    np.testing.assert_array_equal(a.vectors(), b.vectors())
    assert a.stems == b.stems and a.fact_types == b.fact_types
    assert a.get(ca["id"]).equals(b.get(cb["id"]))
    q = np.random.default_rng(9).normal(size=(5, DIM)).astype(np.float32)
    for mode in ("latest", "all"):
        ra = a.search_batch(q, 10, mode=mode, exact=True, as_of="2025-01-01")
        rb = b.search_batch(q, 10, mode=mode, exact=True, as_of="2025-01-01")
        assert ra.equals(rb)


@pytest.fixture
def store(tmp_path):
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.close()
    return tmp_path / "s"


def _log(path: Path) -> Path:
    return snap_dir(path) / "log.wal"


# ----------------------------------------------------------------------------- the log

@pytest.mark.parametrize("fsync", ["call", "interval", "off"])
def test_every_acknowledged_write_survives_without_a_save(store, fsync):
    eng = ce.Engine.open(store, fsync=fsync, fsync_interval=0.01, threads=1)
    _calls(eng)
    again = ce.Engine.open(store, read_only=True)  # no save, no close: the log is all there is
    _assert_same(eng, again)
    del eng
    _assert_same(again, ce.Engine.open(store, threads=1))


def test_checkpoint_empties_the_log_and_keeps_everything(store):
    with ce.Engine.open(store, threads=1) as eng:
        _calls(eng)
        size_before = _log(store).stat().st_size
        eng.save()  # checkpoint
        assert _log(store).stat().st_size < size_before / 10
        eng.ingest(_rows(2, 7))
    assert len(list(store.glob("snap-*"))) == 1
    _assert_same(eng, ce.Engine.open(store, read_only=True))


def _validated(rows: dict):
    """``rows`` validated as an ingest into a new ``Engine(DIM)`` validates them (the
    store's dim, metric and decay policy), as the write path logs a batch."""
    from chrono_engine._time import now_us
    from chrono_engine.schema import normalize_rows
    e = ce.Engine(DIM)
    return normalize_rows(rows, dim=e.dim, metric=e.metric, known_fact_type=e.decay.knows, now_us=now_us())


def _unacknowledged_record(store, seq: int, rows: dict) -> bytes:
    """The record a writer would write next (``seq``) for ``rows``: what a process killed
    while writing it leaves a prefix of after the acknowledged records."""
    import chrono_engine._wal as wal
    from chrono_engine import _state
    batch = _validated(rows)
    return wal.encode_record(seq, wal.encode_commit(wal.Commit(append=_state.batch_table(batch))), None)


def test_a_torn_last_record_is_dropped_and_cut_by_the_next_writer(store):
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest(_rows(5, 1))
    log = _log(store)
    data = log.read_bytes()
    torn = _unacknowledged_record(store, 2, _rows(5, 2))
    for cut in (1, 17, 200, len(torn) - 30, len(torn) - 1):
        log.write_bytes(data + torn[:cut])  # the second write died part-way
        assert len(ce.Engine.open(store, read_only=True)) == 5
    log.write_bytes(data + torn)  # written whole, not acknowledged: replayed whole
    assert len(ce.Engine.open(store, read_only=True)) == 10
    log.write_bytes(data + torn[:-1])
    with ce.Engine.open(store, threads=1) as eng:
        assert len(eng) == 5
        eng.ingest(_rows(3, 3))  # appended after the cut, not after the torn bytes
    assert len(ce.Engine.open(store, read_only=True)) == 8


def test_a_log_cut_before_its_last_acknowledged_record_is_corruption(store):
    """A log cut anywhere before the end of its last acknowledged record (a copy cut
    short, a damaged file system) is refused; it would look like a torn write otherwise."""
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest(_rows(5, 1))
        eng.ingest(_rows(5, 2))
    log = _log(store)
    data = log.read_bytes()
    for cut in (1, 17, 200, len(data) // 2, len(data) - 100):
        log.write_bytes(data[:-cut])
        with pytest.raises(CorruptStoreError, match="log.wal"):
            ce.Engine.open(store, read_only=True)
        with pytest.raises(CorruptStoreError, match="log.wal"):
            ce.Engine.open(store, threads=1)
        assert log.read_bytes() == data[:-cut]  # a refused open cuts nothing
    log.write_bytes(data)
    assert len(ce.Engine.open(store, read_only=True)) == 10


def test_damage_before_the_last_record_is_corruption(store):
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest(_rows(5, 1))
        eng.ingest(_rows(5, 2))
    log = _log(store)
    b = bytearray(log.read_bytes())
    b[len(b) // 3] ^= 0x40  # inside the first record
    log.write_bytes(bytes(b))
    with pytest.raises(CorruptStoreError, match="log.wal"):
        ce.Engine.open(store, read_only=True)


def _twenty_records(store) -> tuple[bytes, str]:
    with ce.Engine.open(store, threads=1) as eng:
        for i in range(3):
            _calls(eng) if i == 0 else eng.ingest(_rows(2, 10 + i))
        for i in range(6):
            eng.retract(eng.ingest(_rows(1, 20 + i)), at="2040-01-01")
    return _log(store).read_bytes(), snap_dir(store).name


def test_every_damage_to_a_record_head_or_mark_is_refused(store):
    """Every bit of every record's head (magic, seq, length, the head's digest) and of the
    marks, a bit of each record's payload and digest, and a cut at every record's start,
    inside its head, its payload and its digest: each refused, none read as a shorter log
    (a damaged length once sent the reader past the end and every later record was dropped
    as a torn tail)."""
    import chrono_engine._wal as wal
    data, name = _twenty_records(store)
    commits, end = wal.parse(data, name, None)
    assert len(commits) >= 20 and end == len(data)
    starts = [at for at, _ in commits]
    head = wal._HEAD[3]
    marks = wal.records_start(name) - 2 * wal._MARK_SIZE
    flips = [(b, bit) for b in range(marks, wal.records_start(name)) for bit in range(8)]
    cuts = []
    for at, nxt in zip(starts, starts[1:] + [len(data)]):
        flips += [(at + b, bit) for b in range(head) for bit in range(8)]
        flips += [((at + head + nxt) // 2, 3), (nxt - 1, 0), (nxt - wal._DIGEST, 7)]
        cuts += [at, at + 5, at + head - 1, at + head, (at + head + nxt) // 2, nxt - 1]
    cuts = [c for c in cuts if c < len(data)]
    for b, bit in flips:
        bad = bytearray(data)
        bad[b] ^= 1 << bit
        with pytest.raises(CorruptStoreError):
            wal.parse(bytes(bad), name, None)
    for c in cuts:
        with pytest.raises(CorruptStoreError, match="cut short|acknowledged"):
            wal.parse(data[:c], name, None)
    assert len(flips) > 20 * head * 8 and len(cuts) >= 100


def test_a_version_2_log_opens_appends_and_is_replaced_at_the_checkpoint(store, tmp_path):
    """Stores written before the log had marks (log version 2) open as they did; a writer
    appends version 2 records to them; the next checkpoint starts a version 3 log. The
    reference: a copy of the store keeping its version 3 log, given the same writes."""
    import chrono_engine._wal as wal
    data, name = _twenty_records(store)
    ref = tmp_path / "ref"
    shutil.copytree(store, ref)
    commits, _ = wal.parse(data, name, None)
    old = wal.header(name, None, 2) + b"".join(
        wal.encode_record(i + 1, wal.encode_commit(c), None, 2) for i, (_, c) in enumerate(commits))
    _log(store).write_bytes(old)
    _assert_same(ce.Engine.open(ref, read_only=True), ce.Engine.open(store, read_only=True))
    _log(store).write_bytes(old + b"REC2\x01")  # a torn version 2 tail is dropped, as before
    _assert_same(ce.Engine.open(ref, read_only=True), ce.Engine.open(store, read_only=True))
    for path in (store, ref):
        with ce.Engine.open(path, threads=1) as eng:
            eng.ingest(_rows(2, 99))
    assert _log(store).read_bytes().startswith(wal.header(name, None, 2))
    assert len(wal.parse(_log(store).read_bytes(), name, None)[0]) == len(commits) + 1
    _assert_same(ce.Engine.open(ref, read_only=True), ce.Engine.open(store, read_only=True))
    for path in (store, ref):
        with ce.Engine.open(path, threads=1) as eng:
            eng.save()
            eng.ingest(_rows(1, 100))
    assert _log(store).read_bytes().startswith(wal.header(snap_dir(store).name, None, 3))
    _assert_same(ce.Engine.open(ref, read_only=True), ce.Engine.open(store, read_only=True))


@pytest.mark.parametrize("fsync", ["call", "interval", "off"])
def test_the_mark_covers_only_synced_acknowledged_writes(store, fsync):
    """Under "call" every acknowledged write is marked; under "interval" once synced (at
    the latest at close); under "off" only what was synced when the log was opened."""
    import chrono_engine._wal as wal
    with ce.Engine.open(store, fsync=fsync, fsync_interval=3600, threads=1) as eng:
        eng.ingest(_rows(2, 1))
        name = snap_dir(store).name
        first = _log(store).read_bytes()
        mark = max(wal._marks(first, name, None))
        assert mark == ((1, len(first)) if fsync == "call" else (0, wal.records_start(name)))
    data = _log(store).read_bytes()
    assert max(wal._marks(data, name, None)) == ((0, wal.records_start(name)) if fsync == "off" else (1, len(data)))


def test_a_missing_or_foreign_log_is_corruption(store, tmp_path):
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest(_rows(5, 1))
    other = ce.Engine.create(tmp_path / "other", DIM)
    other.ingest(_rows(5, 1))
    other.close()
    shutil.copy(_log(tmp_path / "other"), _log(store))  # a log of another snapshot
    with pytest.raises(CorruptStoreError, match="does not match this snapshot"):
        ce.Engine.open(store, read_only=True)
    _log(store).unlink()
    with pytest.raises(CorruptStoreError, match="log.wal is missing"):
        ce.Engine.open(store, read_only=True)


def test_a_forged_record_is_refused_by_the_same_rules_as_an_ingest(store):
    """A record rewritten with a valid checksum (no key): replay validates it as an ingest
    validates rows, so a vector of the wrong length or a bad interval cannot get in."""
    import chrono_engine._wal as wal
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest(_rows(2, 1))
    log = _log(store)
    name = snap_dir(store).name
    start = wal.records_start(name)
    head = wal.header(name, None) + wal._mark(0, start, None) * 2  # no acknowledged record
    from chrono_engine import _state
    rows = _validated(_rows(2, 1))
    table = _state.batch_table(rows)
    bad = table.set_column(table.column_names.index("valid_to"), "valid_to",
                           __import__("pyarrow").array(rows.valid_from - 1))
    payload = wal.encode_commit(wal.Commit(append=bad))
    log.write_bytes(head + wal.encode_record(1, payload, None))
    with pytest.raises(CorruptStoreError, match="record 1 cannot be applied.*valid_to"):
        ce.Engine.open(store, read_only=True)


def test_a_forged_record_that_decompresses_to_gigabytes_is_refused(store):
    """A record whose new rows are a zstd-compressed Arrow stream (the writer never
    compresses) that would decompress far past the record's own bytes: refused from the
    buffers' lengths, before anything is decompressed."""
    import io

    import pyarrow as pa
    import pyarrow.ipc as ipc

    import chrono_engine._wal as wal
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest(_rows(2, 1))
    log = _log(store)
    data = log.read_bytes()
    sink = io.BytesIO()
    table = pa.table({"title": pa.array(["x" * (64 << 20)])})
    with ipc.new_stream(sink, table.schema, options=ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table)
    blob = sink.getvalue()
    head = json.dumps({"append": len(blob), "update": 0, "update_fields": []}).encode()
    payload = len(head).to_bytes(4, "little") + head + blob
    assert len(payload) < 1 << 20
    log.write_bytes(data + wal.encode_record(2, payload, None))
    with pytest.raises(CorruptStoreError, match="record 2: new rows is unreadable.*decompressed"):
        ce.Engine.open(store, read_only=True)


def test_a_refused_write_is_not_logged(store):
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest({**_rows(2, 1), "id": [1, 2]})
        size = _log(store).stat().st_size
        with pytest.raises(ce.errors.SchemaError, match="duplicate id"):
            eng.ingest({**_rows(2, 2), "id": [3, 2]})  # refused by the core after logging
        with pytest.raises(ce.errors.LifecycleError):
            eng.retract([1], at="2000-01-01")
        assert _log(store).stat().st_size == size
        eng.ingest(_rows(1, 3))
    assert len(ce.Engine.open(store, read_only=True)) == 3


@pytest.mark.parametrize("kw", [dict(fsync="always"), dict(fsync=None), dict(fsync="interval", fsync_interval=0),
                                dict(fsync="interval", fsync_interval=float("nan")),
                                dict(fsync="interval", fsync_interval=True), dict(read_only="yes")])
def test_bad_open_options_are_config_errors(store, kw):
    with pytest.raises(ConfigError):
        ce.Engine.open(store, **kw)
    ce.Engine.open(store).close()  # and nothing stays locked


# ----------------------------------------------------------------------------- one writer

def test_a_second_writer_gets_a_clear_error_readers_never_wait(store):
    a = ce.Engine.open(store)
    with pytest.raises(StoreLockedError, match=f"pid {os.getpid()}.*read_only=True"):
        ce.Engine.open(store)
    with pytest.raises(StoreLockedError):
        ce.Engine(DIM).save(store)  # a save is a write too
    a.ingest(_rows(3, 1))
    r = ce.Engine.open(store, read_only=True)
    assert len(r) == 3
    with pytest.raises(StorageError, match="read_only"):
        r.ingest(_rows(1, 2))
    a.close()
    with pytest.raises(StorageError, match="closed"):
        a.ingest(_rows(1, 2))
    b = ce.Engine.open(store)  # the lock is free again
    del b  # and garbage collection frees it too
    ce.Engine.open(store).close()


def test_the_issues_two_saves_no_longer_destroy_the_store(store):
    with ce.Engine.open(store) as e:
        e.ingest(_rows(10, 1))
    a = ce.Engine.open(store, read_only=True)
    b = ce.Engine.open(store, read_only=True)
    errors = []

    def save(x):
        try:
            x.save(store)
        except StoreLockedError as err:
            errors.append(err)

    for _ in range(20):
        ts = [threading.Thread(target=save, args=(x,)) for x in (a, b)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        assert len(ce.Engine.open(store, read_only=True)) == 10
    assert all(isinstance(e, StoreLockedError) for e in errors)


_WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    import chrono_engine as ce
    from chrono_engine.errors import StoreLockedError
    try:
        eng = ce.Engine.open(sys.argv[1], threads=1)
    except StoreLockedError as e:
        print("LOCKED", e); sys.exit(0)
    print("OPEN", flush=True)
    eng.ingest({"vector": np.ones((3, 8), np.float32), "valid_from": ["2024-01-01"] * 3})
    if sys.argv[2] == "wait":
        sys.stdin.readline()  # hold the store until the parent says so
    eng.save()
    print("SAVED")
""")


@pytest.mark.slow
def test_writers_in_two_processes(store):
    first = subprocess.Popen([sys.executable, "-c", _WRITER, str(store), "wait"], stdout=subprocess.PIPE,
                             stdin=subprocess.PIPE, text=True, cwd=str(store.parent))
    assert first.stdout.readline().startswith("OPEN")
    second = subprocess.run([sys.executable, "-c", _WRITER, str(store), "go"], capture_output=True, text=True,
                            timeout=120, cwd=str(store.parent))
    assert second.stdout.startswith("LOCKED") and "open for writing by another writer" in second.stdout
    first.communicate("go\n", timeout=120)
    assert first.returncode == 0
    assert len(ce.Engine.open(store, read_only=True)) == 3


def test_readers_opening_during_checkpoints_never_see_an_error(store):
    with ce.Engine.open(store, threads=1) as w:
        w.ingest(_rows(50, 1))
        stop = threading.Event()
        seen, errors = [], []

        def read():
            while not stop.is_set():
                try:
                    seen.append(len(ce.Engine.open(store, read_only=True, threads=1)))
                except Exception as e:  # noqa: BLE001 - any error is the failure looked for
                    errors.append(repr(e))

        r = threading.Thread(target=read)
        r.start()
        for i in range(25):
            w.ingest(_rows(2, 100 + i))
            w.save()
        stop.set()
        r.join()
    assert errors == [] and len(seen) > 0
    assert all(50 <= n <= 100 for n in seen)


def test_cleanup_removes_only_what_the_store_made(store):
    (store / "snap-mine").mkdir()
    (store / "snap-mine" / "notes.txt").write_text("keep me")
    foreign = store / ("snap-" + "a" * 32)
    foreign.mkdir()
    (foreign / "photo.jpg").write_bytes(b"\xff\xd8")
    orphan = store / ("snap-" + "b" * 32)  # what an interrupted save leaves
    orphan.mkdir()
    (orphan / "graph.bin").write_bytes(b"x")
    (store / ("CURRENT." + "c" * 32 + ".tmp")).write_text("x")
    (store / "CURRENT.backup").write_text("keep")
    with ce.Engine.open(store) as e:
        e.ingest(_rows(3, 1))
        e.save()
    names = {p.name for p in store.iterdir()}
    assert {"snap-mine", foreign.name, "CURRENT.backup", "CURRENT", "LOCK"} <= names
    assert orphan.name not in names and ("CURRENT." + "c" * 32 + ".tmp") not in names
    assert (store / "snap-mine" / "notes.txt").read_text() == "keep me"


def test_create_refuses_an_existing_store_unless_asked(store):
    with pytest.raises(StorageError, match="already holds a store"):
        ce.Engine.create(store, DIM)
    with pytest.raises(ConfigError, match="dim 8"):
        ce.Engine.create(store, DIM + 1, exist_ok=True)
    ce.Engine.create(store, DIM, exist_ok=True).close()


# ----------------------------------------------------------------------------- keys

def test_a_keyed_store_opens_only_with_its_key(tmp_path, monkeypatch):
    path = tmp_path / "k"
    with ce.Engine.create(path, DIM, key=b"secret") as e:
        e.ingest(_rows(4, 1))  # a logged record, MACed with the key
    assert len(ce.Engine.open(path, key="secret", read_only=True)) == 4
    with pytest.raises(StorageError, match="saved with a key"):
        ce.Engine.open(path, read_only=True)
    with pytest.raises(CorruptStoreError, match="authentication"):
        ce.Engine.open(path, key=b"wrong", read_only=True)
    monkeypatch.setenv("CHRONO_STORE_KEY", "secret")
    assert len(ce.Engine.open(path, read_only=True)) == 4
    # without the key an edited store cannot be resealed: a recomputed checksum is not enough
    mf = snap_dir(path) / "manifest.json"
    mf.write_text(mf.read_text().replace('"rows": 0', '"rows": 1'))
    reseal(path)
    with pytest.raises(CorruptStoreError, match="authentication"):
        ce.Engine.open(path, read_only=True)
    # a store without a key does not open as authenticated
    monkeypatch.delenv("CHRONO_STORE_KEY")
    ce.Engine.create(tmp_path / "plain", DIM).close()
    with pytest.raises(CorruptStoreError, match="not authenticated"):
        ce.Engine.open(tmp_path / "plain", key="secret", read_only=True)


def test_a_keyed_log_record_cannot_be_forged(tmp_path):
    path = tmp_path / "k"
    with ce.Engine.create(path, DIM, key=b"secret") as e:
        e.ingest(_rows(4, 1))
        e.ingest(_rows(4, 2))
    log = _log(path)
    b = bytearray(log.read_bytes())
    b[len(b) // 3] ^= 1
    log.write_bytes(bytes(b))
    with pytest.raises(CorruptStoreError, match="checksum.*key"):
        ce.Engine.open(path, key=b"secret", read_only=True)


def test_manifest_and_seal_files_are_json_we_can_read(store):
    seal = json.loads((store / "CURRENT").read_text())
    assert set(seal) == {"format", "snapshot", "manifest_sha256"}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files through /proc")
@pytest.mark.parametrize("fsync", ["call", "interval"])
def test_no_descriptor_or_thread_leaks_over_open_and_drop_cycles(store, fsync):
    import gc

    def fds():
        return len(os.listdir("/proc/self/fd"))

    ce.Engine.open(store, fsync=fsync).ingest(_rows(1, 0))  # warm up
    gc.collect()
    before, threads = fds(), threading.active_count()
    for i in range(30):
        e = ce.Engine.open(store, fsync=fsync, threads=1)
        e.ingest(_rows(1, i + 1))
        del e  # never closed: the finalizer syncs the log and frees the lock
        gc.collect()
    assert fds() == before and threading.active_count() == threads
    assert len(ce.Engine.open(store, read_only=True)) == 31


def test_a_forged_edit_with_an_impossible_time_is_refused(store):
    """An edit record (retracted_at) rewritten with a valid checksum to a time no store
    holds (the mutation campaign's one escape: OverflowError when the row was read)."""
    import chrono_engine._wal as wal
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest(_rows(2, 1))
    log = _log(store)
    data = log.read_bytes()
    for value in (2**62, -2**62, 0):
        payload = wal.encode_commit(wal.Commit(rows=np.array([0], np.uint32),
                                               update={"retracted_at": np.array([value], np.int64)}))
        log.write_bytes(data + wal.encode_record(2, payload, None))
        with pytest.raises(CorruptStoreError, match="record 2 cannot be applied.*retracted_at"):
            ce.Engine.open(store, read_only=True)


@pytest.mark.parametrize("update, word", [
    ({"amend_tx": [2**62], "amend_valid_to": [OPEN], "amend_deprecated_from": [OPEN]}, "amend_tx"),
    ({"amend_tx": [OPEN], "amend_valid_to": [OPEN], "amend_deprecated_from": [OPEN]}, "amend_tx"),
    ({"amend_tx": [1], "amend_valid_to": [OPEN], "amend_deprecated_from": [OPEN]}, "ingested_at"),
    ({"amend_tx": [2_000_000_000_000_000], "amend_valid_to": [1], "amend_deprecated_from": [OPEN]}, "valid_to"),
    ({"amend_tx": [2_000_000_000_000_000]}, "amendment needs all"),
], ids=["tx-range", "tx-open", "tx-early", "empty-interval", "partial"])
def test_a_forged_lifecycle_event_is_refused(store, update, word):
    """A log record of lifecycle events (amendments), rewritten with a valid checksum to
    values the core never accepts, or with some of its fields missing, is refused by name."""
    import chrono_engine._wal as wal
    with ce.Engine.open(store, threads=1) as eng:
        eng.ingest(_rows(2, 1))
    log = _log(store)
    data = log.read_bytes()
    payload = wal.encode_commit(wal.Commit(rows=np.array([0], np.uint32),
                                           update={k: np.array(v, np.int64) for k, v in update.items()}))
    log.write_bytes(data + wal.encode_record(2, payload, None))
    with pytest.raises(CorruptStoreError, match=f"record 2 cannot be applied.*{word}"):
        ce.Engine.open(store, read_only=True)
