"""The write-ahead log of a store (internal).

Every write of an engine opened from a store (ingest, supersede, retract, an approval
event) is one *commit*: at most one batch of new rows and one edit of existing rows,
validated first, appended to the log as one record, synced to disk by the fsync policy,
and only then applied in memory and acknowledged. ``Engine.open`` replays the log that
follows the live snapshot; a checkpoint (``Engine.save``) writes a new snapshot with an
empty log beside it.

File ``snap-<hex>/log.wal`` (version 3; logs of version 2 are read and appended to as they
were written, and the next checkpoint starts a version 3 log)::

    header   b"CHRONOWAL\\x00v3\n" | u16 length | snapshot name (ascii) | 32-byte digest
    marks    two slots, each  b"ACK3" | u64 seq | u64 end | 16-byte digest
    record   b"REC3" | u64 seq | u64 payload length | 16-byte digest | payload | 32-byte digest

The digests are BLAKE2b (32 bytes: of everything before it in the header / record; 16
bytes: of the slot's or the record head's first 20 bytes): checksums, or MACs when the
store has a key (``key=`` of :meth:`Engine.open`), so that nothing can be altered or forged
without it. ``seq`` counts records from 1, so a record from another log or a reordering is
refused. The payload: u32 length + a JSON object
``{"append": bytes, "update": bytes, "update_fields": [...], "update_rows": n}`` giving
what follows: the new rows as an Arrow IPC stream in the ingest schema, then the edited
rows' numbers (uint32) and each field's new values as raw little-endian arrays: a
retraction (``retracted_at``) or lifecycle events (``amend_tx``, ``amend_valid_to``,
``amend_deprecated_from``; with new rows, a supersede, applied together in one core call).
Logs of format-2 stores may hold in-place ``valid_to`` / ``deprecated`` edits, replayed as
they were written.

**Torn or damaged.** A write the process died in the middle of leaves a prefix of its
record at the end of the file; a damaged file can look the same. Two things tell them apart:

- the record head has its own digest, so a damaged length or sequence number is refused
  before anything trusts it (a length cannot send the reader past the records after it);
- the *mark*: after a write is synced and acknowledged, the writer records (seq, end) of
  the last record that is both in a slot of the header (the two slots alternate, so one is
  always whole). Every record up to the mark must be there and intact: a log cut or damaged
  before it is a CorruptStoreError, never a shorter store. Only what lies after the mark
  (the write in progress when the process died; under ``"interval"`` or ``"off"``, also the
  writes not yet synced, which a power loss may have left as anything) is read up to its
  first incomplete or failing record, which is dropped as torn (a writable open cuts it).

A reader reads the marks before the records, so a writer appending meanwhile cannot make a
complete log look cut short.

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

from ._ipc import check_compressed
from ._util import NotRegularFile, open_regular
from .errors import ConfigError, CorruptStoreError, StorageError

__all__ = ["LOG_NAME", "FSYNC_POLICIES", "UPDATE_FIELDS", "VERSION", "Commit", "LogWriter", "create", "read",
           "parse", "encode_commit", "decode_commit", "encode_record", "header", "records_start", "blake_key"]

LOG_NAME = "log.wal"
FSYNC_POLICIES = ("call", "interval", "off")
#: the log format written by new snapshots
VERSION = 3
_MAGIC = {2: b"CHRONOWAL\x00v2\n", 3: b"CHRONOWAL\x00v3\n"}
_REC = {2: b"REC2", 3: b"REC3"}
_DIGEST = 32  # of a header, of a record
_SHORT = 16  # of a version 3 record head, of a mark
_REC_HEAD = struct.Struct("<4sQQ")  # magic, seq, payload length
_HEAD = {2: _REC_HEAD.size, 3: _REC_HEAD.size + _SHORT}  # a record's bytes before its payload
_ACK = b"ACK3"
_MARK = struct.Struct("<4sQQ")  # magic, seq, end
_MARK_SIZE = _MARK.size + _SHORT
#: the edits a record may carry, with their dtypes
UPDATE_FIELDS = {"retracted_at": np.int64, "amend_tx": np.int64, "amend_valid_to": np.int64,
                 "amend_deprecated_from": np.int64,
                 # in-place edits, written only by stores before amendments (format 2); replayed as then
                 "valid_to": np.int64, "deprecated": np.uint8}
#: a reader that finds a mark slot failing retries this often (a writer may be writing it)
_MARK_READS = 5
# fdatasync where the platform has it (not macOS), fsync elsewhere
_datasync = getattr(os, "fdatasync", os.fsync)


def _digest(key: bytes | None, *parts: bytes, size: int = _DIGEST) -> bytes:
    h = hashlib.blake2b(digest_size=size, key=key or b"")
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
        # the writer never compresses: buffers that would decompress past the record's own
        # bytes are a crafted record (a few kB of zstd can carry gigabytes)
        check_compressed(blob, len(blob))
        t = ipc.open_stream(pa.py_buffer(blob)).read_all()
        t.validate(full=True)
        return t
    except (pa.ArrowException, ValueError, OSError) as e:  # TooLarge and StreamError are ValueErrors
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


def encode_record(seq: int, payload: bytes, key: bytes | None, version: int = VERSION) -> bytes:
    """Record ``seq`` of a log of ``version`` holding ``payload`` (a digest key from
    :func:`blake_key`)."""
    head = _REC_HEAD.pack(_REC[version], seq, len(payload))
    if version >= 3:
        head += _digest(key, head, size=_SHORT)
    body = head + payload
    return body + _digest(key, body)


def _mark(seq: int, end: int, key: bytes | None) -> bytes:
    body = _MARK.pack(_ACK, seq, end)
    return body + _digest(key, body, size=_SHORT)


# ----------------------------------------------------------------------------- files

def header(name: str, key: bytes | None, version: int = VERSION) -> bytes:
    """The bytes a log of ``version`` for snapshot ``name`` starts with (version 3: before
    its two mark slots)."""
    body = _MAGIC[version] + struct.pack("<H", len(name)) + name.encode("ascii")
    return body + _digest(key, body)


def records_start(name: str, version: int = VERSION) -> int:
    """The byte offset of a log's first record."""
    return len(_MAGIC[version]) + 2 + len(name) + _DIGEST + (2 * _MARK_SIZE if version >= 3 else 0)


def _slots_at(name: str) -> int:
    """The byte offset of a version 3 log's first mark slot."""
    return records_start(name) - 2 * _MARK_SIZE


def create(path: Path, snapshot: str, key: bytes | None) -> None:
    """Write an empty log for ``snapshot`` at ``path`` (synced)."""
    start = records_start(snapshot)
    with open(path, "wb") as f:
        f.write(header(snapshot, key) + _mark(0, start, key) * 2)
        f.flush()
        os.fsync(f.fileno())


def _open_regular(path: Path, flags: int) -> int:
    try:
        return open_regular(path, flags)
    except NotRegularFile as e:
        raise CorruptStoreError(f"{path.parent.name}/{path.name} {e.strerror}") from None


def _version(data: bytes, snapshot: str, key: bytes | None, where: str) -> int:
    for version in (3, 2):
        if data.startswith(header(snapshot, key, version)):
            return version
    # written and synced before the snapshot was committed
    raise CorruptStoreError(f"{where}: header does not match this snapshot" + (" or the key" if key else ""))


def _marks(data: bytes, snapshot: str, key: bytes | None) -> list:
    """The two mark slots of a version 3 log's first bytes: (seq, end), or None for a slot
    that fails its digest."""
    at = _slots_at(snapshot)
    out = []
    for i in range(2):
        slot = data[at + i * _MARK_SIZE:at + (i + 1) * _MARK_SIZE]
        if len(slot) != _MARK_SIZE or slot[:4] != _ACK or _digest(key, slot[:_MARK.size], size=_SHORT) != slot[_MARK.size:]:
            out.append(None)
        else:
            out.append(_MARK.unpack_from(slot)[1:])
    return out


def read(path: Path, snapshot: str, key: bytes | None) -> tuple[list[tuple[int, Commit]], int]:
    """The commits of the log at ``path`` (with each one's byte offset) and the offset where
    the valid records end (a torn tail after it). Raises CorruptStoreError, or
    FileNotFoundError when there is no log."""
    fd = _open_regular(path, os.O_RDONLY)  # FileNotFoundError passes through
    with os.fdopen(fd, "rb") as f:
        # the marks first, then the records: whatever a mark read here covers was written
        # before it, so the read below sees it
        first = _first_bytes(fd, snapshot, key)
        data = f.read()
    return parse(data, snapshot, key, first=first)


def _first_bytes(fd: int, snapshot: str, key: bytes | None) -> bytes:
    """A log's header and mark slots, read again (a few times) while a slot fails its digest:
    a writer may be writing it."""
    want = records_start(snapshot)
    first = b""
    for attempt in range(_MARK_READS):
        first = os.pread(fd, want, 0)
        if len(first) < want or not first.startswith(_MAGIC[3]) or None not in _marks(first, snapshot, key):
            break
        time.sleep(0.001 * (attempt + 1))
    return first


def parse(data: bytes, snapshot: str, key: bytes | None, *, first: bytes | None = None
          ) -> tuple[list[tuple[int, Commit]], int]:
    """:func:`read` of a log's bytes ``data``; ``first``: its first bytes as read before
    ``data`` (the marks; default: those of ``data``)."""
    where = f"{snapshot}/{LOG_NAME}"
    want = records_start(snapshot)
    first = data[:want] if first is None else first
    version = _version(data, snapshot, key, where)
    if version == 2:
        return _read_v2(data, snapshot, key, where)
    if len(first) < want:
        raise CorruptStoreError(f"{where}: the header ends at byte {len(first)}, before its marks")
    marks = _marks(first, snapshot, key)
    if None in marks:
        raise CorruptStoreError(f"{where}: mark slot {marks.index(None)} fails its checksum"
                                + (" (or the key is wrong)" if key else ""))
    mseq, mend = max(marks)
    if mend < want or (mend == want) != (mseq == 0):
        raise CorruptStoreError(f"{where}: the mark (record {mseq}, byte {mend}) is not a record's end")
    out, at, seq = [], want, 0
    while at < len(data):
        rec = _record(data, at, key)
        if isinstance(rec, str):
            if at >= mend:
                break  # a torn (or never synced) tail after every acknowledged record
            raise CorruptStoreError(f"{where}: the record at byte {at} {rec}; records up to byte {mend} "
                                    f"(record {mseq}) were acknowledged" + (" (or the key is wrong)" if key else ""))
        rseq, payload, end = rec
        if rseq != seq + 1:
            raise CorruptStoreError(f"{where}: record {rseq} at byte {at} follows record {seq}")
        if at < mend < end:
            raise CorruptStoreError(f"{where}: the mark (byte {mend}) falls inside record {rseq}")
        seq = rseq
        out.append((at, decode_commit(payload, f"{where} record {rseq}")))
        at = end
        if at == mend and seq != mseq:
            raise CorruptStoreError(f"{where}: record {seq} ends at the mark of record {mseq}")
    if at < mend:
        raise CorruptStoreError(f"{where}: the log ends at byte {at} (record {seq}), but records up to byte "
                                f"{mend} (record {mseq}) were acknowledged: it was cut short")
    return out, at


def read_acknowledged(path: Path, snapshot: str, key: bytes | None, after: tuple[int, int] | None = None
                      ) -> list[tuple[Commit, tuple[int, int]]]:
    """The commits a follower may apply: those after record ``after = (seq, end byte)``
    (None: from the first record) up to the log's mark, i.e. every write the writer has
    acknowledged (and synced, under its policy), never one in progress or one it may still
    cut (:meth:`LogWriter.undo`). Returns each with its position (seq, end byte). Every
    record up to the mark must be whole: CorruptStoreError otherwise; FileNotFoundError when
    there is no log. A version 2 log (no marks) has nothing to follow: CorruptStoreError."""
    where = f"{snapshot}/{LOG_NAME}"
    start = records_start(snapshot)
    seq, at = (0, start) if after is None else after
    fd = _open_regular(path, os.O_RDONLY)  # FileNotFoundError passes through
    try:
        first = _first_bytes(fd, snapshot, key)
        if _version(first, snapshot, key, where) != 3:
            raise CorruptStoreError(f"{where}: a version 2 log has no marks; a follower needs a checkpoint first")
        if len(first) < start:
            raise CorruptStoreError(f"{where}: the header ends at byte {len(first)}, before its marks")
        valid = [m for m in _marks(first, snapshot, key) if m is not None]
        if not valid:
            raise CorruptStoreError(f"{where}: both mark slots fail their checksums" + (" (or the key is wrong)" if key else ""))
        mseq, mend = max(valid)
        if (mseq, mend) < (seq, at):
            raise CorruptStoreError(f"{where}: the mark (record {mseq}, byte {mend}) is behind a record already "
                                    f"read (record {seq}, byte {at})")
        if mend == at:
            if mseq != seq:
                raise CorruptStoreError(f"{where}: the mark (record {mseq}) ends where record {seq} ends")
            return []
        data = os.pread(fd, mend - at, at)
    finally:
        os.close(fd)
    out, pos = [], 0
    while pos < len(data):
        rec = _record(data, pos, key)
        if isinstance(rec, str):
            raise CorruptStoreError(f"{where}: the record at byte {at + pos} {rec}; records up to byte {mend} "
                                    f"(record {mseq}) were acknowledged" + (" (or the key is wrong)" if key else ""))
        rseq, payload, end = rec
        if rseq != seq + 1:
            raise CorruptStoreError(f"{where}: record {rseq} at byte {at + pos} follows record {seq}")
        seq, pos = rseq, end
        out.append((decode_commit(payload, f"{where} record {rseq}"), (seq, at + end)))
    if len(data) != mend - at or seq != mseq:
        raise CorruptStoreError(f"{where}: the log ends at byte {at + len(data)} (record {seq}), but records up to "
                                f"byte {mend} (record {mseq}) were acknowledged: it was cut short")
    return out


def _record(data: bytes, at: int, key: bytes | None) -> tuple[int, bytes, int] | str:
    """The version 3 record at byte ``at``: (seq, payload, end), or why it is not one."""
    head = _HEAD[3]
    if len(data) - at < head:
        return "is cut short in its head"
    if data[at:at + 4] != _REC[3]:
        return "does not start with a record's magic"
    if _digest(key, data[at:at + _REC_HEAD.size], size=_SHORT) != data[at + _REC_HEAD.size:at + head]:
        return "has a head that fails its checksum"
    _, rseq, n = _REC_HEAD.unpack_from(data, at)
    end = at + head + n + _DIGEST
    if end > len(data):
        return f"runs past the end of the file ({n} bytes of payload)"
    if _digest(key, data[at:end - _DIGEST]) != data[end - _DIGEST:end]:
        return f"(record {rseq}) fails its checksum"
    return rseq, data[at + head:end - _DIGEST], end


def _read_v2(data: bytes, snapshot: str, key: bytes | None, where: str) -> tuple[list, int]:
    """A version 2 log: no marks, no head digest; a record cut short at the end of the
    file, or a last record whose digest fails, is taken for a torn write."""
    out, at, seq = [], len(header(snapshot, key, 2)), 0
    while at < len(data):
        if len(data) - at < _REC_HEAD.size:
            break  # torn
        magic, rseq, n = _REC_HEAD.unpack_from(data, at)
        end = at + _REC_HEAD.size + n + _DIGEST
        if magic != _REC[2]:
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
    the store's write lock), and keeps the log's mark (version 3) on the last record that is
    both synced and acknowledged (:meth:`acknowledge`)."""

    def __init__(self, path: Path, snapshot: str, key: bytes | None, *, fsync: str, interval: float,
                 seq: int, end: int) -> None:
        check_policy(fsync, interval)
        self.path, self.snapshot, self.key = path, snapshot, key
        self.fsync, self.interval = fsync, float(interval)
        self.seq = seq
        fd = _open_regular(path, os.O_RDWR)
        try:
            first = os.pread(fd, records_start(snapshot), 0)
            self.version = 3 if first.startswith(_MAGIC[3]) else 2
            size = os.fstat(fd).st_size
            if end < 0:
                end = size
            elif size != end:
                os.ftruncate(fd, end)  # drop a torn tail: it was never acknowledged
            if size != end or self.version >= 3:
                _datasync(fd)  # the mark below covers only synced records
            os.lseek(fd, 0, os.SEEK_END)
        except OSError as e:
            os.close(fd)
            raise StorageError(f"cannot prepare the log {snapshot}/{LOG_NAME}: {e}") from None
        self.fd = fd
        self.broken: str | None = None
        self.end = end
        self._dirty = False
        self._last_sync = time.monotonic()
        self._cv = threading.Condition()
        self._flusher: threading.Thread | None = None
        self._closing = False
        # (seq, end) of the last record written, synced, acknowledged, and in the mark
        self._synced = self._acked = (seq, end)
        self._marked = (-1, -1)
        self._slot = 0
        if self.version >= 3:
            marks = _marks(first, snapshot, key)
            if None not in marks:  # write over the older slot first
                self._slot = int(marks[1] < marks[0])
            with self._cv:
                self._mark_locked()

    def append(self, payload: bytes) -> int:
        """Write one record and sync it by the policy; returns the offset it starts at (for
        :meth:`undo`). On failure the file is cut back to where it was (the record was never
        acknowledged) and StorageError is raised."""
        if self.broken:
            raise StorageError(f"the log is unusable ({self.broken}); reopen the store")
        rec = encode_record(self.seq + 1, payload, self.key, self.version)
        start = self.end
        try:
            view = memoryview(rec)
            while view:
                view = view[os.write(self.fd, view):]
            if self.fsync == "call":
                _datasync(self.fd)
        except OSError as e:
            try:
                os.ftruncate(self.fd, start)
                os.lseek(self.fd, start, os.SEEK_SET)
            except OSError as e2:
                self.broken = f"a failed write could not be undone: {e2}"
            raise StorageError(f"writing the log {self.snapshot}/{LOG_NAME} failed ({e}); "
                               "nothing was changed") from None
        with self._cv:
            self.seq += 1
            self.end = start + len(rec)
            if self.fsync == "call":
                self._synced = (self.seq, self.end)
        if self.fsync == "interval":
            self._schedule()
        return start

    def acknowledge(self) -> None:
        """The last record's write was applied and is being acknowledged: the mark may now
        cover it (at once under ``"call"``; under the other policies once it is synced)."""
        with self._cv:
            self._acked = (self.seq, self.end)
            self._mark_locked()

    def undo(self, start: int) -> None:
        """Cut the last record (written at ``start``) again: its write was refused after it
        was logged, and was never acknowledged (nor marked)."""
        try:
            os.ftruncate(self.fd, start)
            os.lseek(self.fd, start, os.SEEK_SET)
            if self.fsync == "call":
                _datasync(self.fd)
            with self._cv:
                self.seq -= 1
                self.end = start
                self._synced = min(self._synced, (self.seq, self.end))
        except OSError as e:
            self.broken = f"a refused write could not be cut from the log: {e}"

    def _mark_locked(self) -> None:
        """Advance the mark to the last record both synced and acknowledged (caller holds
        ``_cv``). A failed mark write leaves the older, still valid mark: the log stays
        readable, only less of it is protected against being cut."""
        target = min(self._synced, self._acked)
        if self.version < 3 or target <= self._marked or self.broken:
            return
        try:
            os.pwrite(self.fd, _mark(*target, self.key), _slots_at(self.snapshot) + self._slot * _MARK_SIZE)
        except OSError:
            return
        self._marked = target
        self._slot ^= 1

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
        written = (self.seq, self.end)
        try:
            _datasync(self.fd)
        except OSError as e:
            self.broken = f"fsync failed: {e}"
        else:
            self._synced = written
            self._mark_locked()
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
                    with self._cv:
                        self._sync_locked()
            finally:
                os.close(self.fd)
                self.fd = -1


def blake_key(key: bytes | None) -> bytes | None:
    """A store key as a BLAKE2b key (at most 64 bytes: longer keys are hashed down)."""
    if key is None or len(key) <= 64:
        return key
    return hashlib.sha512(key).digest()
