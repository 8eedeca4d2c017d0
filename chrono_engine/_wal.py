"""The write-ahead log of a store (internal).

Every write of an engine opened from a store (ingest, supersede, retract, an approval
event) is one *commit*: at most one batch of new rows and one edit of existing rows,
validated first, appended to the log as one record, synced to disk by the fsync policy,
and only then applied in memory and acknowledged. ``Engine.open`` replays the log that
follows the live snapshot; a checkpoint (``Engine.save``) writes a new snapshot with an
empty log beside it.

File ``snap-<hex>/log.wal``::

    header   b"CHRONOWAL\\x00v2\\n" | u16 length | snapshot name (ascii) | 32-byte digest
    record   b"REC2" | u64 seq | u64 payload length | payload | 32-byte digest

The digest is BLAKE2b-256 of everything before it in the header / record: a checksum, or a
MAC when the store has a key (``key=`` of :meth:`Engine.open`), so a record cannot be
altered or forged without it. ``seq`` counts records from 1, so a record from another log or
a reordering is refused. The payload: u32 length + a JSON object
``{"append": bytes, "update": bytes, "update_fields": [...], "update_rows": n}`` giving
what follows: the new rows as an Arrow IPC stream in the ingest schema, then the edited
rows' numbers (uint32) and each field's new values as raw little-endian arrays: a
retraction (``retracted_at``) or lifecycle events (``amend_tx``, ``amend_valid_to``,
``amend_deprecated_from``; with new rows, a supersede, applied together in one core call).
Logs of format-2 stores may hold in-place ``valid_to`` / ``deprecated`` edits, replayed as
they were written.

A record cut short at the end of the file (its length runs past the end, or its digest
fails and nothing follows) is a write that was never acknowledged: replay stops before it
and a writable open truncates it. Damage anywhere else is a CorruptStoreError.

fsync policies (``fsync=`` of :meth:`Engine.open`): ``"call"`` syncs each record before the
call returns; ``"interval"`` syncs at most every ``fsync_interval`` seconds (a background
thread syncs the tail), so a power loss can lose the writes of the last interval;
``"off"`` never syncs (the operating system writes the file back when it chooses). Under
every policy the record is in the operating system's cache before the call returns, so a
process crash (``kill -9``) loses no acknowledged write.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ._util import NotRegularFile, open_regular
from .errors import ConfigError, CorruptStoreError, StorageError

__all__ = ["LOG_NAME", "FSYNC_POLICIES", "UPDATE_FIELDS", "Commit", "LogWriter", "create", "read",
           "encode_commit", "decode_commit", "blake_key"]

LOG_NAME = "log.wal"
FSYNC_POLICIES = ("call", "interval", "off")
_MAGIC = b"CHRONOWAL\x00v2\n"
_REC = b"REC2"
_DIGEST = 32
_REC_HEAD = struct.Struct("<4sQQ")  # magic, seq, payload length
#: the edits a record may carry, with their dtypes
UPDATE_FIELDS = {"retracted_at": np.int64, "amend_tx": np.int64, "amend_valid_to": np.int64,
                 "amend_deprecated_from": np.int64,
                 # in-place edits, written only by stores before amendments (format 2); replayed as then
                 "valid_to": np.int64, "deprecated": np.uint8}


def _digest(key: bytes | None, *parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=_DIGEST, key=key or b"")
    for p in parts:
        h.update(p)
    return h.digest()


@dataclass
class Commit:
    """One logged write: new rows (an Arrow table in the ingest schema) and/or an edit of
    existing rows (row numbers and new values of some of :data:`UPDATE_FIELDS`)."""

    append: pa.Table | None = None
    rows: np.ndarray | None = None
    update: dict | None = None


# ----------------------------------------------------------------------------- encoding

def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def encode_commit(c: Commit) -> bytes:
    """The payload of one record."""
    parts, head = [], {"append": 0, "update": 0, "update_fields": []}
    if c.append is not None:
        blob = _ipc(c.append)
        head["append"] = len(blob)
        parts.append(blob)
    if c.rows is not None and len(c.rows):
        # edits as raw little-endian arrays (row numbers, then each field): a retract is a
        # few dozen bytes, with no Arrow stream to build
        fields = sorted(c.update)
        arrays = [np.asarray(c.rows, "<u4")] + [np.asarray(c.update[f], UPDATE_FIELDS[f]).astype(
            np.dtype(UPDATE_FIELDS[f]).newbyteorder("<"), copy=False) for f in fields]
        blob = b"".join(a.tobytes() for a in arrays)
        head["update"], head["update_fields"], head["update_rows"] = len(blob), fields, len(c.rows)
        parts.append(blob)
    h = json.dumps(head).encode()
    return struct.pack("<I", len(h)) + h + b"".join(parts)


def _table(blob: bytes, what: str) -> pa.Table:
    try:
        t = ipc.open_stream(pa.py_buffer(blob)).read_all()
        t.validate(full=True)
        return t
    except (pa.ArrowException, ValueError, OSError) as e:
        raise CorruptStoreError(f"{what} is unreadable ({e})") from None


def decode_commit(payload: bytes, where: str) -> Commit:
    """A record's payload back into a :class:`Commit`; CorruptStoreError naming ``where``."""
    if len(payload) < 4:
        raise CorruptStoreError(f"{where}: record too short")
    (hl,) = struct.unpack_from("<I", payload)
    try:
        head = json.loads(payload[4:4 + hl].decode("utf-8"))
        na, nu, fields = int(head["append"]), int(head["update"]), list(head["update_fields"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptStoreError(f"{where}: record header is unreadable ({e!r})") from None
    if na < 0 or nu < 0 or 4 + hl + na + nu != len(payload) or not set(fields) <= set(UPDATE_FIELDS) \
            or len(set(fields)) != len(fields) or (nu > 0) != bool(fields):
        raise CorruptStoreError(f"{where}: record sizes or fields do not add up")
    c = Commit()
    at = 4 + hl
    if na:
        c.append = _table(payload[at:at + na], f"{where}: new rows")
        at += na
    if nu:
        n = head.get("update_rows")
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise CorruptStoreError(f"{where}: edited row count is missing")
        sizes = [4] + [np.dtype(UPDATE_FIELDS[f]).itemsize for f in fields]
        if n * sum(sizes) != nu:
            raise CorruptStoreError(f"{where}: edited rows do not fill their {nu} bytes")
        blob = payload[at:at + nu]
        c.rows = np.frombuffer(blob, "<u4", n, 0).astype(np.uint32)
        c.update, off = {}, 4 * n
        for f, size in zip(fields, sizes[1:]):
            c.update[f] = np.frombuffer(blob, np.dtype(UPDATE_FIELDS[f]).newbyteorder("<"), n, off).astype(
                UPDATE_FIELDS[f])
            off += size * n
    if c.append is None and c.rows is None:
        raise CorruptStoreError(f"{where}: empty record")
    return c


# ----------------------------------------------------------------------------- files

def _header(name: str, key: bytes | None) -> bytes:
    body = _MAGIC + struct.pack("<H", len(name)) + name.encode("ascii")
    return body + _digest(key, body)


def create(path: Path, snapshot: str, key: bytes | None) -> None:
    """Write an empty log for ``snapshot`` at ``path`` (synced)."""
    with open(path, "wb") as f:
        f.write(_header(snapshot, key))
        f.flush()
        os.fsync(f.fileno())


def _open_regular(path: Path, flags: int) -> int:
    try:
        return open_regular(path, flags)
    except NotRegularFile as e:
        raise CorruptStoreError(f"{path.parent.name}/{path.name} {e.strerror}") from None


def read(path: Path, snapshot: str, key: bytes | None) -> tuple[list[tuple[int, Commit]], int]:
    """The commits of the log at ``path`` (with each one's byte offset) and the offset where
    the valid records end (a torn tail after it). Raises CorruptStoreError, or
    FileNotFoundError when there is no log."""
    where = f"{snapshot}/{LOG_NAME}"
    fd = _open_regular(path, os.O_RDONLY)  # FileNotFoundError passes through
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    head = _header(snapshot, key)
    if data[:len(head)] != head:  # written and synced before the snapshot was committed
        raise CorruptStoreError(f"{where}: header does not match this snapshot"
                                + (" or the key" if key else ""))
    out, at, seq = [], len(head), 0
    while at < len(data):
        rest = len(data) - at
        if rest < _REC_HEAD.size:
            break  # torn
        magic, rseq, n = _REC_HEAD.unpack_from(data, at)
        end = at + _REC_HEAD.size + n + _DIGEST
        if magic != _REC:
            raise CorruptStoreError(f"{where}: no record at byte {at}")
        if end > len(data):
            break  # torn: the record runs past the end of the file
        body = data[at:end - _DIGEST]
        if _digest(key, body) != data[end - _DIGEST:end]:
            if end == len(data):
                break  # torn last record
            raise CorruptStoreError(f"{where}: record {rseq} at byte {at} fails its checksum"
                                    + (" (or the key is wrong)" if key else ""))
        if rseq != seq + 1:
            raise CorruptStoreError(f"{where}: record {rseq} at byte {at} follows record {seq}")
        seq = rseq
        out.append((at, decode_commit(body[_REC_HEAD.size:], f"{where} record {rseq}")))
        at = end
    return out, at


def check_policy(fsync: object, interval: object) -> None:
    """ConfigError unless ``fsync`` is a policy and ``interval`` a sane number of seconds."""
    if not isinstance(fsync, str) or fsync not in FSYNC_POLICIES:
        raise ConfigError(f"fsync must be one of {FSYNC_POLICIES}, got {fsync!r}")
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not 0 < interval <= 3600:
        raise ConfigError(f"fsync_interval must be seconds in (0, 3600], got {interval!r}")


class LogWriter:
    """Appends records to a store's log under an fsync policy (one writer: the caller holds
    the store's write lock)."""

    def __init__(self, path: Path, snapshot: str, key: bytes | None, *, fsync: str, interval: float,
                 seq: int, end: int) -> None:
        check_policy(fsync, interval)
        self.path, self.snapshot, self.key = path, snapshot, key
        self.fsync, self.interval = fsync, float(interval)
        self.seq = seq
        fd = _open_regular(path, os.O_RDWR)
        try:
            if end >= 0 and os.fstat(fd).st_size != end:
                os.ftruncate(fd, end)  # drop a torn tail: it was never acknowledged
                os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_END)
        except OSError as e:
            os.close(fd)
            raise StorageError(f"cannot prepare the log {snapshot}/{LOG_NAME}: {e}") from None
        self.fd = fd
        self.broken: str | None = None
        self._dirty = False
        self._last_sync = time.monotonic()
        self._cv = threading.Condition()
        self._flusher: threading.Thread | None = None
        self._closing = False

    def append(self, payload: bytes) -> int:
        """Write one record and sync it by the policy; returns the offset it starts at (for
        :meth:`undo`). On failure the file is cut back to where it was (the record was never
        acknowledged) and StorageError is raised."""
        if self.broken:
            raise StorageError(f"the log is unusable ({self.broken}); reopen the store")
        body = _REC_HEAD.pack(_REC, self.seq + 1, len(payload)) + payload
        rec = body + _digest(self.key, body)
        start = os.lseek(self.fd, 0, os.SEEK_CUR)
        try:
            view = memoryview(rec)
            while view:
                view = view[os.write(self.fd, view):]
            if self.fsync == "call":
                os.fdatasync(self.fd)
        except OSError as e:
            try:
                os.ftruncate(self.fd, start)
                os.lseek(self.fd, start, os.SEEK_SET)
            except OSError as e2:
                self.broken = f"a failed write could not be undone: {e2}"
            raise StorageError(f"writing the log {self.snapshot}/{LOG_NAME} failed ({e}); "
                               "nothing was changed") from None
        self.seq += 1
        if self.fsync == "interval":
            self._schedule()
        return start

    def undo(self, start: int) -> None:
        """Cut the last record (written at ``start``) again: its write was refused after it
        was logged, and was never acknowledged."""
        try:
            os.ftruncate(self.fd, start)
            os.lseek(self.fd, start, os.SEEK_SET)
            if self.fsync == "call":
                os.fdatasync(self.fd)
            self.seq -= 1
        except OSError as e:
            self.broken = f"a refused write could not be cut from the log: {e}"

    def _schedule(self) -> None:
        with self._cv:
            self._dirty = True
            if time.monotonic() - self._last_sync >= self.interval:
                self._sync_locked()
            elif self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_loop, name="chrono-wal-flush", daemon=True)
                self._flusher.start()
            self._cv.notify()

    def _sync_locked(self) -> None:
        try:
            os.fdatasync(self.fd)
        except OSError as e:
            self.broken = f"fsync failed: {e}"
        self._dirty = False
        self._last_sync = time.monotonic()

    def _flush_loop(self) -> None:
        with self._cv:
            while not self._closing:
                if self._dirty:
                    wait = self.interval - (time.monotonic() - self._last_sync)
                    if wait <= 0:
                        self._sync_locked()
                        continue
                    self._cv.wait(wait)
                else:
                    self._cv.wait()

    def close(self) -> None:
        """Sync what is unsynced (every policy but "off") and close the file."""
        with self._cv:
            self._closing = True
            self._cv.notify()
        if self._flusher is not None:
            self._flusher.join()
        if self.fd >= 0:
            try:
                if self.fsync != "off" and not self.broken:
                    os.fdatasync(self.fd)
            finally:
                os.close(self.fd)
                self.fd = -1


def blake_key(key: bytes | None) -> bytes | None:
    """A store key as a BLAKE2b key (at most 64 bytes: longer keys are hashed down)."""
    if key is None or len(key) <= 64:
        return key
    return hashlib.sha512(key).digest()
