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

The package holds

* ``layout.py``: the format's name and version, file names, limits, the data files' Arrow
  schemas, and reading a file as untrusted input;
* ``lock.py``: the writer lock (:class:`StoreLock`) and the store key (:func:`store_key`);
* ``checkpoint.py``: the seal (:func:`current`), :func:`save` and what it writes, the
  removal of replaced snapshots;
* ``open.py``: :class:`Snapshot`, :func:`read_snapshot` (every manifest field checked) and
  the data files' checksums (``FileCheck``);
* ``recovery.py``: :func:`restore` (meta.arrow, amendments and partition checked),
  :func:`replay` and :func:`open_log`.
"""
from __future__ import annotations

from .checkpoint import current, save
from .layout import FORMAT, FORMAT_VERSION, MAX_DIM
from .lock import StoreLock, store_key
from .open import FileCheck, Snapshot, read_snapshot
from .recovery import follow, open_log, replay, restore

__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_DIM", "Snapshot", "StoreLock", "store_key", "current", "save",
           "read_snapshot", "restore", "replay", "follow", "open_log"]
