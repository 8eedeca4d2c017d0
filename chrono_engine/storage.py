"""The store on disk: format, one writer, atomic checkpoints, verified open, log replay.

Layout of a store directory (format 3; format 2, without amend.arrow, still opens)::

    <path>/LOCK                    held (flock) by the one writer; holds its pid
    <path>/CURRENT                 the seal: the live snapshot's name and its manifest's
                                   SHA-256 (and HMAC-SHA256 when the store has a key)
    <path>/snap-<uuid hex>/
        graph.bin                  the HNSW graph and vectors (hnswlib's format)
        meta.arrow                 Arrow IPC file: every metadata column, the string columns,
                                   and the fact type / stem names behind the core's codes
        amend.arrow                Arrow IPC file: the lifecycle events in transaction time
                                   (row, tx, valid_to, deprecated_from), oldest first per row
        manifest.json              format and version, dimension, metric, HNSW and search
                                   parameters, decay policy, fact types, stems, row count,
                                   SHA-256 of graph.bin, meta.arrow and amend.arrow
        log.wal                    the writes since this snapshot (:mod:`._wal`)

A checkpoint writes and fsyncs a new snapshot with an empty log, then replaces ``CURRENT``
with ``os.replace`` (the commit point) and fsyncs the directory; only then are the previous
snapshot and the leftovers of interrupted saves of this store removed. A crash at any point
leaves the previous snapshot and its log loadable. An open reads every file as untrusted:
regular files only (no symlink, FIFO or device), sizes bounded, the seal and every checksum
verified, and every manifest field, metadata column and graph structure checked against the
format's invariants before any of it is used (docs/storage.md lists them).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import shutil
import stat
import threading
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from . import _wal
from ._columns import numpy_dtype
from ._state import STRING_COLUMNS, StoreState
from ._time import MAX_TIME_US, MIN_TIME_US, OPEN_END
from ._util import NotRegularFile, fsync_dir, fsync_file, open_regular
from ._version import __version__
from .decay import DecayPolicy
from .errors import ChronoError, ConfigError, CorruptStoreError, StorageError, StoreLockedError

__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_DIM", "Snapshot", "StoreLock", "store_key", "current", "save",
           "read_snapshot", "restore", "replay", "open_log"]

FORMAT = "chrono_engine.store"
FORMAT_VERSION = 4
_FILES = ("graph.bin", "meta.arrow", "amend.arrow", "partition.arrow", "centroids.arrow")
# the data files of each format version that opens (2: before amendments; 3: before the
# probe plan's partition was saved)
_FILES_OF = {2: ("graph.bin", "meta.arrow"), 3: ("graph.bin", "meta.arrow", "amend.arrow"), 4: _FILES}
_SNAP = re.compile(r"snap-[0-9a-f]{32}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
#: files a snapshot directory of this store may hold (anything else: not ours, never deleted)
_OWN_FILES = {*_FILES, "manifest.json", _wal.LOG_NAME}
_CURRENT_LIMIT = 4096
_MANIFEST_LIMIT = 1 << 30
MAX_DIM = 65536
_MAX_ROWS = 0xFFFFFFF0
_MAX_M = 2048


def store_key(key: Any) -> bytes | None:
    """A store key as bytes: ``key`` (bytes, or str as UTF-8), else the environment variable
    ``CHRONO_STORE_KEY``, else None (no key). ConfigError for anything else."""
    if key is None:
        key = os.environ.get("CHRONO_STORE_KEY") or None
        if key is None:
            return None
    if isinstance(key, str):
        key = key.encode("utf-8", "surrogatepass")
    if not isinstance(key, (bytes, bytearray)) or not key:
        raise ConfigError("key must be non-empty bytes or str")
    return bytes(key)


# ----------------------------------------------------------------------------- the writer lock

class StoreLock:
    """The one-writer lock of a store directory: an exclusive, non-blocking ``flock`` on
    ``<path>/LOCK``, held until :meth:`release` (or until the process ends — the operating
    system drops it, so a crashed writer never leaves the store locked). A second writer,
    in this process or another, gets :class:`~chrono_engine.errors.StoreLockedError`."""

    def __init__(self, root: Path) -> None:
        path = root / "LOCK"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as e:
            raise StorageError(f"cannot lock {root} for writing: {e.strerror} ({path.name}); a store that is only "
                               "read opens with read_only=True") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise CorruptStoreError(f"{root}: LOCK is not a regular file")
            _flock(fd, root)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except BaseException:
            os.close(fd)
            raise
        self.root = root
        self._fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)

    def release(self) -> None:
        """Give the lock up (idempotent). The file stays: deleting a lock file races."""
        self._finalizer()


def _flock(fd: int, root: Path) -> None:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            raise StoreLockedError(f"{root} is open for writing by another writer") from None
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        except OSError:
            pid = "?"
        raise StoreLockedError(
            f"{root} is open for writing by another writer (pid {pid or '?'}); close it first, or "
            "open this store with read_only=True") from None
    except OSError as e:
        raise StorageError(f"cannot lock {root}: {e.strerror}") from None


# ----------------------------------------------------------------------------- reading files

def _open_regular(path: Path, root: Path) -> int:
    """An fd of a store file if it is a regular file (:func:`._util.open_regular`);
    CorruptStoreError naming it otherwise. FileNotFoundError passes through."""
    try:
        return open_regular(path)
    except NotRegularFile as e:
        raise CorruptStoreError(f"{root}: {path.relative_to(root)} {e.strerror}") from None


def _read_bounded(path: Path, root: Path, limit: int) -> bytes:
    fd = _open_regular(path, root)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(fd).st_size
        if size > limit:
            raise CorruptStoreError(f"{root}: {path.relative_to(root)} is {size} bytes, more than "
                                    f"a store writes ({limit})")
        data = f.read(limit + 1)
    if len(data) != size:
        raise CorruptStoreError(f"{root}: {path.relative_to(root)} changed while being read")
    return data


def _sha256_regular(path: Path, root: Path) -> str:
    fd = _open_regular(path, root)
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _json(data: bytes, what: str) -> Any:
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a number a store writes")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptStoreError(f"{what} is unreadable ({type(e).__name__}: {str(e)[:200]})") from None


# ----------------------------------------------------------------------------- the seal

def _seal(name: str, manifest: bytes, key: bytes | None) -> bytes:
    seal = {"format": FORMAT, "snapshot": name, "manifest_sha256": hashlib.sha256(manifest).hexdigest()}
    if key is not None:
        seal["manifest_hmac_sha256"] = hmac.new(key, manifest, hashlib.sha256).hexdigest()
    return json.dumps(seal).encode()


def current(root: Path) -> dict:
    """The store's seal (``CURRENT``), checked for form. StorageError when ``root`` is not a
    store, CorruptStoreError when the seal is damaged."""
    if not root.is_dir():
        raise StorageError(f"{root} is not a chrono_engine store (not a directory)")
    try:
        data = _read_bounded(root / "CURRENT", root, _CURRENT_LIMIT)
    except FileNotFoundError:
        raise StorageError(f"{root} is not a chrono_engine store (missing CURRENT)") from None
    if _SNAP.fullmatch(data.decode("latin-1").strip()):
        raise CorruptStoreError(f"{root}: CURRENT names a format 1 store (saved before chrono_engine 0.3, without a sealed "
                                "manifest); it cannot be verified: re-create it from its source data")
    seal = _json(data, f"{root}: CURRENT")
    if not isinstance(seal, dict) or set(seal) - {"format", "snapshot", "manifest_sha256", "manifest_hmac_sha256"}:
        raise CorruptStoreError(f"{root}: CURRENT is not a seal of this format")
    if seal.get("format") != FORMAT or not isinstance(seal.get("snapshot"), str) \
            or not _SNAP.fullmatch(seal["snapshot"]) or not isinstance(seal.get("manifest_sha256"), str) \
            or not _HEX64.fullmatch(seal["manifest_sha256"]):
        raise CorruptStoreError(f"{root}: CURRENT does not name a snapshot and its manifest checksum")
    mac = seal.get("manifest_hmac_sha256")
    if mac is not None and not (isinstance(mac, str) and _HEX64.fullmatch(mac)):
        raise CorruptStoreError(f"{root}: CURRENT's manifest_hmac_sha256 is malformed")
    return seal


# ----------------------------------------------------------------------------- save

def save(state: StoreState, search: dict, path: str | os.PathLike, *, key: bytes | None = None,
         lock: StoreLock | None = None) -> str:
    """Write ``state`` (with the engine's ``search`` settings) as the live snapshot of the
    store at ``path`` with an empty log, atomically (module docstring); returns the new
    snapshot's name. The caller holds ``state.write``. ``lock``: the store's lock when the
    caller holds it (an engine writing its own store); else it is taken for the save
    (StoreLockedError when another writer has it). Raises StorageError; on any failure the
    previous snapshot stays the live one."""
    root = Path(path)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StorageError(f"could not save to {root}: {e}") from e
    own = lock is None
    if own:
        lock = StoreLock(root)
    try:
        return _save_locked(state, search, root, key)
    finally:
        if own:
            lock.release()


def _save_locked(state: StoreState, search: dict, root: Path, key: bytes | None) -> str:
    snap = root / f"snap-{uuid.uuid4().hex}"
    tmp = root / f"CURRENT.{uuid.uuid4().hex}.tmp"
    try:
        previous = current(root)["snapshot"]
    except ChronoError:
        previous = None  # a new store, or one whose seal is damaged: replaced either way
    try:
        snap.mkdir()
        cols = state.columns()
        strings = state.strings()
        state.core.save_graph(str(snap / "graph.bin"))
        table = _meta_table(state, cols, strings)
        _write_arrow(snap / "meta.arrow", table)
        _write_arrow(snap / "amend.arrow", _amend_table(state))
        assignment, centroids, partition = _partition_tables(state)
        _write_arrow(snap / "partition.arrow", assignment)
        _write_arrow(snap / "centroids.arrow", centroids)
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "chrono_engine": __version__,
            "dim": state.dim, "metric": state.metric, "params": state.params, "search": dict(search),
            "decay": state.policy.to_dict(), "fact_types": state.fact_types, "stems": state.stems.tolist(),
            "rows": int(len(table)), "keyed": key is not None, "partition": partition,
            "files": {name: _sha256_regular(snap / name, root) for name in _FILES},
        }
        body = json.dumps(manifest, indent=1, allow_nan=False).encode("utf-8", "surrogatepass")
        (snap / "manifest.json").write_bytes(body)
        _wal.create(snap / _wal.LOG_NAME, snap.name, key)
        for name in (*_FILES, "manifest.json"):
            fsync_file(snap / name)
        fsync_dir(snap)
        tmp.write_bytes(_seal(snap.name, body, key))
        fsync_file(tmp)
    except BaseException as e:
        shutil.rmtree(snap, ignore_errors=True)
        tmp.unlink(missing_ok=True)
        if isinstance(e, (OSError, ValueError)) and not isinstance(e, ChronoError):
            raise StorageError(f"could not save to {root}: {e}") from e
        raise
    try:
        os.replace(tmp, root / "CURRENT")  # the commit point
    except OSError as e:
        shutil.rmtree(snap, ignore_errors=True)
        tmp.unlink(missing_ok=True)
        raise StorageError(f"could not save to {root}: {e}") from e
    try:
        fsync_dir(root)
    except OSError as e:  # committed, but not known to be durable: say so, keep both copies
        err = StorageError(f"saved to {root}, but syncing the directory failed ({e}); "
                           "the store opens, durability is not guaranteed")
        err.committed = snap.name  # the engine writes to this snapshot's log from now on
        raise err from e
    _cleanup(root, snap.name, previous)
    return snap.name


def _cleanup(root: Path, live: str, previous: str | None) -> None:
    """Remove the snapshot this save replaced and what interrupted saves of this store left
    (the caller holds the lock, so no other save is under way): snapshot directories named
    like ours that hold only files we write, and our temporary seals. Anything else —
    a user's folder, a directory with foreign files — stays."""
    for entry in root.iterdir():
        name = entry.name
        if name == live:
            continue
        if _SNAP.fullmatch(name) and entry.is_dir() and not entry.is_symlink():
            try:
                mine = all(f.name in _OWN_FILES and f.is_file() and not f.is_symlink() for f in entry.iterdir())
            except OSError:
                continue
            if mine or name == previous:
                shutil.rmtree(entry, ignore_errors=True)
        elif re.fullmatch(r"CURRENT\.[0-9a-f]{32}\.tmp", name) and entry.is_file() and not entry.is_symlink():
            entry.unlink(missing_ok=True)


def _write_arrow(path: Path, table: pa.Table) -> None:
    with pa.OSFile(str(path), "wb") as sink:
        with ipc.new_file(sink, table.schema) as w:
            w.write_table(table)


# the columns of amend.arrow: one lifecycle event (MetaTable::Amendment) per row
_AMEND_SCHEMA = pa.schema([("row", pa.uint32()), ("tx", pa.int64()), ("valid_to", pa.int64()),
                           ("deprecated_from", pa.int64())])


# partition.arrow: per row, its centroid (65535: none), for the rows assigned when saved;
# centroids.arrow: the centroids, one row each (the probe plan's partition, _partition.py)
_PARTITION_SCHEMA = pa.schema([("centroid", pa.uint16())])
_NO_CENTROID = 0xFFFF


def _centroid_schema(dim: int) -> pa.Schema:
    return pa.schema([("centroid", pa.list_(pa.float32(), dim))])


def _partition_tables(state: StoreState) -> tuple[pa.Table, pa.Table, dict | None]:
    """The probe plan's partition as saved: (partition.arrow's table, centroids.arrow's
    table, the manifest's ``partition`` field: None when the store keeps none, else its
    delta and the row count it was built at). Derived data, saved so that an open does not
    rebuild it (k-means and an assignment of every row: ~3 s at 1M × 384) and reproduces
    the partition the engine had."""
    C, covered, delta = state.core.partition_info()
    cents = state.partition_centroids
    if C == 0 or cents is None or cents.shape != (C, state.dim):
        empty = np.zeros(0, np.float32)
        return (pa.table([pa.array(np.zeros(0, np.uint16))], schema=_PARTITION_SCHEMA),
                pa.table([pa.FixedSizeListArray.from_arrays(pa.array(empty), state.dim)],
                         schema=_centroid_schema(state.dim)), None)
    a = np.full(covered, _NO_CENTROID, np.uint16)
    for j in range(C):
        a[state.core.partition_members(j)] = j
    flat = pa.array(np.ascontiguousarray(cents, np.float32).reshape(-1))
    return (pa.table([pa.array(a)], schema=_PARTITION_SCHEMA),
            pa.table([pa.FixedSizeListArray.from_arrays(flat, state.dim)], schema=_centroid_schema(state.dim)),
            {"delta": float(delta), "built_at": int(state.partition_built_at)})


def _amend_table(state: StoreState) -> pa.Table:
    rows, tx, vt, dep = state.amendments()
    return pa.table([rows, tx, vt, dep], schema=_AMEND_SCHEMA)


def _meta_table(state: StoreState, cols: dict, strings: pa.Table | None) -> pa.Table:
    """meta.arrow's table: the core's columns, the string columns, and the names behind the
    codes (so that the file reads on its own)."""
    table = pa.table({
        "id": cols["id"], "valid_from": cols["valid_from"], "valid_to": cols["valid_to"],
        "observed_at": cols["observed_at"], "ingested_at": cols["ingested_at"],
        "retracted_at": cols["retracted_at"], "version_key": cols["version"],
        "reliability": cols["reliability"], "fact_type_code": cols["fact_type"],
        "stem_code": cols["stem"], "deprecated": cols["deprecated"].astype(bool),
        "vector_hash": _vector_hashes(state),
    })
    n = len(table)
    if strings is None:
        strings = pa.table({c: pa.nulls(0, pa.string()) for c in STRING_COLUMNS})
    strings = strings.slice(0, n)
    for name in strings.column_names:
        table = table.append_column(name, strings.column(name))
    types = np.asarray(state.fact_types or [""], dtype=object)
    table = table.append_column("fact_type", pa.array(types[cols["fact_type"]] if n else [], pa.string()))
    table = table.append_column("stem_id", state.stem_names(cols["stem"]))
    return table


# ----------------------------------------------------------------------------- open

@dataclass
class Snapshot:
    """A verified snapshot's manifest: what :func:`restore` and the Engine need to rebuild it."""

    root: Path
    path: Path
    name: str
    dim: int
    metric: str
    params: dict
    search: dict
    policy: DecayPolicy
    fact_types: list
    stems: list
    rows: int
    key: bytes | None
    format_version: int = FORMAT_VERSION
    files: dict = field(default_factory=dict)  # data file -> SHA-256 (hex), from the manifest
    partition: dict | None = None  # format 4: the saved partition's delta and built_at (None: none)


def read_snapshot(path: str | os.PathLike, key: bytes | None = None, *, seal: dict | None = None,
                  check_files: bool = True) -> Snapshot:
    """The live snapshot of the store at ``path``: seal, manifest (checksum, HMAC when
    ``key`` is given, every field) and data file checksums verified. Raises StorageError
    (not a store) or CorruptStoreError naming the file and field. With
    ``check_files=False`` the data files are not read: the caller checks them with
    :class:`FileCheck` (``snapshot.files`` holds their digests)."""
    root = Path(path)
    seal = current(root) if seal is None else seal  # the caller's, when it read it already
    name = seal["snapshot"]
    snap = root / name
    if snap.is_symlink():  # its files are opened without following links; the folder too
        raise CorruptStoreError(f"{root}: snapshot {name} is a symbolic link, not a folder of the store")
    try:
        body = _read_bounded(snap / "manifest.json", root, _MANIFEST_LIMIT)
    except FileNotFoundError:
        raise CorruptStoreError(f"{root}: snapshot {name} has no manifest.json") from None
    if not hmac.compare_digest(hashlib.sha256(body).hexdigest(), seal["manifest_sha256"]):
        raise CorruptStoreError(f"{root}: {name}/manifest.json is corrupt (checksum mismatch)")
    mac = seal.get("manifest_hmac_sha256")
    if key is not None:
        if mac is None:
            raise CorruptStoreError(f"{root}: the store is not authenticated (saved without a key), "
                                    "but a key was given")
        if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).hexdigest(), mac):
            raise CorruptStoreError(f"{root}: {name}/manifest.json fails authentication (wrong key, "
                                    "or the store was altered)")
    elif mac is not None:
        raise StorageError(f"{root}: the store was saved with a key; open it with key= (or "
                           "CHRONO_STORE_KEY)")
    out = _manifest(_json(body, f"{root}: {name}/manifest.json"), root, snap, name, key)
    out.snapshot.files = out.files
    if check_files:
        _check_files(out.snapshot)
    return out.snapshot


def _check_files(snap: Snapshot) -> None:
    """Each data file of the snapshot against its SHA-256 in the (verified) manifest."""
    for fname, digest in snap.files.items():
        try:
            got = _sha256_regular(snap.path / fname, snap.root)
        except FileNotFoundError:
            raise CorruptStoreError(f"{snap.root}: {snap.name}/{fname} is missing") from None
        if not hmac.compare_digest(got, digest):
            raise CorruptStoreError(f"{snap.root}: {snap.name}/{fname} is corrupt (checksum mismatch)")


class FileCheck:
    """The data files' checksums (:func:`read_snapshot`'s last step) on a thread of their
    own, so that an open hashes the files while it loads them: at 1M × 384 the SHA-256 of
    ~1.9 GB takes ~4 s, about what restoring takes. Loading before the files are verified
    is safe because every loader treats the files as untrusted (docs/storage.md); the open
    is refused, and the loaded engine dropped, if a checksum then fails. :meth:`result`
    waits and raises the check's error. Made after the files were found to be regular
    files (a FIFO, device or link in place of one is refused at once, as before)."""

    def __init__(self, snap: Snapshot) -> None:
        for fname in snap.files:  # regular files only, before anything maps one (a FIFO would block)
            try:
                os.close(_open_regular(snap.path / fname, snap.root))
            except FileNotFoundError:
                raise CorruptStoreError(f"{snap.root}: {snap.name}/{fname} is missing") from None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                _check_files(snap)
            except BaseException as e:  # noqa: BLE001 - re-raised by result()
                self._error = e
        self._thread = threading.Thread(target=run, name="chrono-checksums", daemon=True)
        self._thread.start()

    def result(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


@dataclass
class _Manifest:
    snapshot: Snapshot
    files: dict


def _manifest(m: Any, root: Path, snap: Path, name: str, key: bytes | None) -> _Manifest:
    """Every manifest field checked for type and range; CorruptStoreError naming it."""
    where = f"{root}: {name}/manifest.json"

    def bad(field: str, why: str) -> CorruptStoreError:
        return CorruptStoreError(f"{where}: field {field!r} {why}")

    def integer(v: Any, field: str, lo: int, hi: int) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise bad(field, f"must be an integer in [{lo}, {hi}], got {str(v)[:40]}")
        return v

    def names(v: Any, field: str) -> list:
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise bad(field, "must be a list of strings")
        if len(set(v)) != len(v):
            raise bad(field, "lists a name twice")
        return v

    if not isinstance(m, dict):
        raise CorruptStoreError(f"{where} is not a JSON object")
    want = {"format", "format_version", "chrono_engine", "dim", "metric", "params", "search", "decay",
            "fact_types", "stems", "rows", "keyed", "files"}
    if m.get("format_version") == 4 and type(m.get("format_version")) is int:
        want.add("partition")
    if set(m) != want:
        missing, extra = sorted(want - set(m)), sorted(set(m) - want)
        raise CorruptStoreError(f"{where}: fields differ from format {FORMAT_VERSION} "
                                f"(missing {missing}, unknown {extra})")
    if m["format"] != FORMAT or type(m["format_version"]) is not int or m["format_version"] not in _FILES_OF:
        raise CorruptStoreError(f"{where}: unknown format {str(m['format'])[:40]!r} version "
                                f"{str(m['format_version'])[:20]}")
    dim = integer(m["dim"], "dim", 1, MAX_DIM)
    if m["metric"] not in ("cosine", "ip", "l2"):
        raise bad("metric", "must be 'cosine', 'ip' or 'l2'")
    p = m["params"]
    if not isinstance(p, dict) or set(p) != {"M", "ef_construction", "seed"}:
        raise bad("params", "must hold exactly M, ef_construction and seed")
    params = {"M": integer(p["M"], "params.M", 2, _MAX_M),
              "ef_construction": integer(p["ef_construction"], "params.ef_construction", 1, 1 << 20),
              "seed": integer(p["seed"], "params.seed", 0, (1 << 63) - 1)}
    search = m["search"]
    if not isinstance(search, dict):
        raise bad("search", "must be an object")
    try:
        policy = DecayPolicy.from_dict(m["decay"])
    except ChronoError as e:
        raise bad("decay", f"is not a decay policy ({e})") from None
    except (TypeError, ValueError, OverflowError, RecursionError) as e:
        raise bad("decay", f"is not a decay policy ({type(e).__name__}: {str(e)[:120]})") from None
    fact_types = names(m["fact_types"], "fact_types")
    if len(fact_types) > 65535:
        raise bad("fact_types", "holds more than 65535 names")
    for t in fact_types:
        if not policy.knows(t):
            raise bad("fact_types", f"names {t[:40]!r}, which the decay policy has no profile for")
    stems = names(m["stems"], "stems")
    rows = integer(m["rows"], "rows", 0, _MAX_ROWS)
    if not isinstance(m["keyed"], bool) or m["keyed"] != (key is not None):
        raise bad("keyed", "does not match the seal")
    partition = m.get("partition")
    if partition is not None:
        if not isinstance(partition, dict) or set(partition) != {"delta", "built_at"}:
            raise bad("partition", "must be null or hold exactly delta and built_at")
        d = partition["delta"]
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not (math.isfinite(d) and d >= 0):
            raise bad("partition.delta", "must be a finite number >= 0")
        partition = {"delta": float(d), "built_at": integer(partition["built_at"], "partition.built_at", 0, rows)}
    files = m["files"]
    want_files = _FILES_OF[m["format_version"]]
    if not isinstance(files, dict) or sorted(files) != sorted(want_files) or \
            not all(isinstance(v, str) and _HEX64.fullmatch(v) for v in files.values()):
        raise bad("files", f"must map {', '.join(want_files)} (only) to SHA-256 digests")
    return _Manifest(Snapshot(root=root, path=snap, name=name, dim=dim, metric=m["metric"], params=params,
                              search=search, policy=policy, fact_types=fact_types, stems=stems, rows=rows,
                              key=key, format_version=m["format_version"], partition=partition), files)


# the columns of meta.arrow and their types
_META_SCHEMA = pa.schema([
    ("id", pa.uint64()), ("valid_from", pa.int64()), ("valid_to", pa.int64()), ("observed_at", pa.int64()),
    ("ingested_at", pa.int64()), ("retracted_at", pa.int64()), ("version_key", pa.uint64()),
    ("reliability", pa.float32()), ("fact_type_code", pa.uint16()), ("stem_code", pa.int32()),
    ("deprecated", pa.bool_()), ("vector_hash", pa.uint64()), *[(c, pa.string()) for c in STRING_COLUMNS],
    ("fact_type", pa.string()), ("stem_id", pa.string())])


def _check_meta(table: pa.Table, snap: Snapshot) -> dict:
    """meta.arrow against the data model's invariants; returns its numeric columns as NumPy
    arrays. CorruptStoreError naming the column and the first bad row."""
    where = f"{snap.root}: {snap.name}/meta.arrow"
    if table.schema.remove_metadata() != _META_SCHEMA:
        try:
            names = ", ".join(table.schema.names)[:300]
        except UnicodeDecodeError:  # column names that are not UTF-8
            names = "names that are not UTF-8"
        raise CorruptStoreError(f"{where}: columns or types differ from the format ({names})")
    try:
        table.validate(full=True)
    except pa.ArrowException as e:
        raise CorruptStoreError(f"{where}: invalid Arrow data ({e})") from None
    if len(table) != snap.rows:
        raise CorruptStoreError(f"{where}: {len(table)} rows, manifest says {snap.rows}")
    numeric = [f.name for f in _META_SCHEMA if f.type != pa.string()]
    for name in numeric:
        if table.column(name).null_count:
            raise CorruptStoreError(f"{where}: column {name!r} has nulls")
    c = {name: np.ascontiguousarray(table.column(name).to_numpy(), dtype=numpy_dtype(table.schema.field(name).type))
         for name in numeric}

    def fail(col: str, bad: np.ndarray, rule: str) -> None:
        idx = np.flatnonzero(bad)
        if len(idx):
            raise CorruptStoreError(f"{where}: column {col!r}, row {int(idx[0])}: {rule}")

    for name in ("valid_from", "observed_at", "ingested_at"):
        fail(name, (c[name] < MIN_TIME_US) | (c[name] > MAX_TIME_US), "time outside years 1..9999")
    for name in ("valid_to", "retracted_at"):
        v = c[name]
        fail(name, ((v < MIN_TIME_US) | (v > MAX_TIME_US)) & (v != OPEN_END), "time outside years 1..9999")
    fail("valid_to", c["valid_to"] <= c["valid_from"], "valid_to <= valid_from")
    fail("retracted_at", c["retracted_at"] <= c["ingested_at"], "retracted_at <= ingested_at")
    r = c["reliability"]
    fail("reliability", ~(np.isfinite(r) & (r > 0) & (r <= 1)), "reliability outside (0, 1]")
    fail("fact_type_code", c["fact_type_code"] >= max(len(snap.fact_types), 1), "fact type code out of range")
    fail("stem_code", (c["stem_code"] < -1) | (c["stem_code"] >= len(snap.stems)), "stem code out of range")
    ids = c["id"]
    identity = len(ids) == 0 or (ids[0] == 0 and ids[-1] == len(ids) - 1 and bool((np.diff(ids) == 1).all()))
    if not identity and len(np.unique(ids)) != len(ids):  # ids 0..n-1 (the default) are unique
        order = np.argsort(ids, kind="stable")
        dup = order[1:][ids[order][1:] == ids[order][:-1]]
        raise CorruptStoreError(f"{where}: column 'id', row {int(dup.min())}: duplicate id")
    # the names beside the codes, and the version strings beside their keys, agree
    _agree(table.column("fact_type"), snap.fact_types, c["fact_type_code"].astype(np.int64), "fact_type", fail)
    _agree(table.column("stem_id"), snap.stems, c["stem_code"].astype(np.int64), "stem_id", fail)
    enc = table.column("version").combine_chunks().dictionary_encode()
    from .schema import parse_version
    known = np.array([_version_key_or(parse_version, v, -1) for v in enc.dictionary.to_pylist()] + [0],
                     dtype=np.float64)  # -1: unparsable; float so that -1 never equals a key
    idx = enc.indices.fill_null(len(enc.dictionary)).to_numpy(zero_copy_only=False)
    fail("version_key", known[idx] != c["version_key"].astype(np.float64) if len(idx) else np.zeros(0, bool),
         "disagrees with the version string")
    return c


def _agree(got: pa.ChunkedArray, names: list, codes: np.ndarray, col: str, fail: Any) -> None:
    """Row names equal ``names[code]`` (code -1 or an empty list: null)."""
    if not len(codes):
        return
    pick = np.where(codes < 0, len(names), codes)
    want = pa.array(names + [None], pa.string()).take(pa.array(pick))
    got = got.combine_chunks()
    same = pc.fill_null(pc.equal(want, got), False).to_numpy(zero_copy_only=False)
    both_null = (want.is_null().to_numpy(zero_copy_only=False) & got.is_null().to_numpy(zero_copy_only=False))
    fail(col, ~(same | both_null), "name disagrees with its code")


def _version_key_or(parse_version: Any, v: str, default: int) -> int:
    try:
        return parse_version(v)
    except ChronoError:
        return default


def restore(state: StoreState, snap: Snapshot) -> None:
    """Fill a new, empty ``state`` (made with the snapshot's dim, metric, policy and
    parameters) from a verified snapshot. Raises CorruptStoreError."""
    root = snap.root
    try:
        table = ipc.open_file(pa.memory_map(str(snap.path / "meta.arrow"), "r")).read_all()
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptStoreError(f"{root}: {snap.name}/meta.arrow is unreadable ({e})") from None
    c = _check_meta(table, snap)
    state.fact_types = list(snap.fact_types)
    state.fact_code = {t: i for i, t in enumerate(state.fact_types)}
    state.stems.add_all(snap.stems)
    if state.fact_types:
        state.core.set_decay(state.policy.kernel_table(state.fact_types))
    if not len(table):
        if "amend.arrow" in _FILES_OF[snap.format_version]:
            _restore_amendments(state, snap)  # none may name a row
        return
    try:
        state.core.restore(str(snap.path / "graph.bin"), c["valid_from"], c["valid_to"], c["observed_at"],
                           c["ingested_at"], c["retracted_at"], c["version_key"], c["reliability"],
                           c["stem_code"], c["fact_type_code"], c["deprecated"].astype(np.uint8), c["id"],
                           n_stems=len(snap.stems))
    except (RuntimeError, ValueError, KeyError, MemoryError, pa.ArrowException) as e:
        raise CorruptStoreError(f"{root}: {snap.name}/graph.bin or meta.arrow is damaged ({e})") from None
    # the two files belong together: each row's vector is the one its metadata was saved with
    # (catches rows reordered, swapped, or a graph.bin from another store of the same shape)
    off = np.flatnonzero(_vector_hashes(state) != c["vector_hash"])
    if len(off):
        raise CorruptStoreError(f"{root}: {snap.name}/graph.bin and meta.arrow disagree: row {int(off[0])} "
                                f"(id {int(c['id'][off[0]])}) has another vector than the one saved with it")
    state.table = table.select(list(STRING_COLUMNS))
    state.parts = [len(table)]
    if "amend.arrow" in _FILES_OF[snap.format_version]:
        _restore_amendments(state, snap)
    if "partition.arrow" in _FILES_OF[snap.format_version]:
        _restore_partition(state, snap)


def _restore_partition(state: StoreState, snap: Snapshot) -> None:
    """partition.arrow and centroids.arrow, checked (schemas, no nulls, finite centroids,
    each row's centroid in range; the core checks the rest), as the store's partition. Any
    assignment gives correct answers (it only decides how soon a probe stops), but a
    damaged one is refused like any damaged file."""
    where = f"{snap.root}: {snap.name}"
    try:
        a = ipc.open_file(pa.memory_map(str(snap.path / "partition.arrow"), "r")).read_all()
        c = ipc.open_file(pa.memory_map(str(snap.path / "centroids.arrow"), "r")).read_all()
        for t, schema, f in ((a, _PARTITION_SCHEMA, "partition.arrow"), (c, _centroid_schema(snap.dim), "centroids.arrow")):
            if t.schema.remove_metadata() != schema:
                raise CorruptStoreError(f"{where}/{f}: columns or types differ from the format")
            t.validate(full=True)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptStoreError(f"{where}/partition.arrow or centroids.arrow is unreadable ({e})") from None
    col = c.column("centroid").combine_chunks()
    if a.column("centroid").null_count or col.null_count or col.values.null_count:
        raise CorruptStoreError(f"{where}: the partition has nulls")
    C, info = len(c), snap.partition
    if (C == 0) != (info is None) or (C == 0 and len(a)):
        raise CorruptStoreError(f"{where}: centroids.arrow ({C} centroids), partition.arrow ({len(a)} rows) "
                                "and the manifest's partition field disagree")
    if C == 0:
        return
    if state.metric == "l2" or C >= _NO_CENTROID or len(a) > len(state):
        raise CorruptStoreError(f"{where}/partition.arrow: {C} centroids over {len(a)} rows do not fit "
                                f"a {state.metric} store of {len(state)} rows")
    cents = np.ascontiguousarray(col.values.to_numpy(zero_copy_only=False), np.float32).reshape(C, snap.dim)
    assignment = np.ascontiguousarray(a.column("centroid").combine_chunks().to_numpy(zero_copy_only=False), np.uint16)
    bad = np.flatnonzero((assignment >= C) & (assignment != _NO_CENTROID))
    if len(bad):
        raise CorruptStoreError(f"{where}/partition.arrow: row {int(bad[0])} names centroid "
                                f"{int(assignment[bad[0]])} of {C}")
    try:
        state.core.set_partition(cents, info["delta"])
        state.core.assign_partition(0, assignment)
    except (ValueError, IndexError) as e:
        state.core.clear_partition()
        raise CorruptStoreError(f"{where}: the partition is damaged ({e})") from None
    state.partition_centroids = cents
    state.partition_built_at = info["built_at"]


def _restore_amendments(state: StoreState, snap: Snapshot) -> None:
    """amend.arrow, checked (schema, ranges; the core checks rows, order against
    ingested_at and valid_from, and the per-row limit), applied to the restored rows."""
    where = f"{snap.root}: {snap.name}/amend.arrow"
    try:
        t = ipc.open_file(pa.memory_map(str(snap.path / "amend.arrow"), "r")).read_all()
        if t.schema.remove_metadata() != _AMEND_SCHEMA:
            raise CorruptStoreError(f"{where}: columns or types differ from the format")
        t.validate(full=True)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptStoreError(f"{where} is unreadable ({e})") from None
    if not len(t):
        return
    a = {}
    for name in _AMEND_SCHEMA.names:
        if t.column(name).null_count:
            raise CorruptStoreError(f"{where}: column {name!r} has nulls")
        a[name] = np.ascontiguousarray(t.column(name).to_numpy(), dtype=numpy_dtype(t.schema.field(name).type))
    for name in ("tx", "valid_to", "deprecated_from"):
        v = a[name]
        bad = (v < MIN_TIME_US) | (v > MAX_TIME_US)
        if name != "tx":
            bad &= v != OPEN_END
        if bad.any():
            raise CorruptStoreError(f"{where}: column {name!r}, row {int(np.flatnonzero(bad)[0])}: "
                                    "time outside years 1..9999")
    try:
        state.core.amend(a["row"], a["tx"], a["valid_to"], a["deprecated_from"])
    except (ValueError, IndexError) as e:
        raise CorruptStoreError(f"{where}: {e}") from None


_HASH_WEIGHTS: list = []


def _hash_weights() -> np.ndarray:
    if not _HASH_WEIGHTS:
        _HASH_WEIGHTS.append(np.random.default_rng(0x5EED_C4A0).integers(1, 2**63, MAX_DIM, dtype=np.uint64)
                             * np.uint64(2) + np.uint64(1))
    return _HASH_WEIGHTS[0]


def _vector_hashes(state: StoreState) -> np.ndarray:
    """A 64-bit fingerprint of each row's stored vector: a random linear form of its float32
    bit patterns, modulo 2**64 (any change of a row's bits changes it with probability about
    1 - 2**-63; not a MAC — the key's HMAC is). Computed by the core on every core (GIL
    released; ~0.2 s at 1M x 384 against ~2 s in NumPy blocks); tests/test_persistence.py
    holds the NumPy reference."""
    return state.core.vector_hashes(_hash_weights(), os.cpu_count() or 1)


# ----------------------------------------------------------------------------- the log

def replay(state: StoreState, snap: Snapshot) -> tuple[int, int]:
    """Apply the snapshot's log to a restored ``state``; returns (records applied, byte
    offset where the valid records end). Raises CorruptStoreError."""
    path = snap.path / _wal.LOG_NAME
    where = f"{snap.root}: {snap.name}/{_wal.LOG_NAME}"
    try:
        commits, end = _wal.read(path, snap.name, _wal.blake_key(snap.key))
    except FileNotFoundError:
        raise CorruptStoreError(f"{where} is missing") from None
    except CorruptStoreError as e:
        raise CorruptStoreError(f"{snap.root}: {e}") from None
    for i, (_, commit) in enumerate(commits):
        try:
            state.apply(commit, replay=True)
        except ChronoError as e:
            raise CorruptStoreError(f"{where}: record {i + 1} cannot be applied ({e})") from None
    return len(commits), end


def open_log(snap_path: Path, name: str, key: bytes | None, *, fsync: str, interval: float, seq: int,
             end: int) -> _wal.LogWriter:
    """The writer of a snapshot's log, positioned after record ``seq`` (byte ``end``; -1:
    the end of the file)."""
    return _wal.LogWriter(snap_path / _wal.LOG_NAME, name, _wal.blake_key(key), fsync=fsync,
                          interval=interval, seq=seq, end=end)
