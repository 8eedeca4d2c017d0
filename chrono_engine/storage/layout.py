"""What a store holds on disk (its layout is in :mod:`chrono_engine.storage`): the format's
name and version, the data files of each version, the names of snapshots, the limits an
open enforces, the Arrow schemas of the data files, and reading a file as untrusted input
(regular files only, sizes bounded)."""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from .. import _wal
from .._state import STRING_COLUMNS
from .._util import NotRegularFile, open_regular
from ..errors import CorruptStoreError

__all__ = ["FORMAT", "FORMAT_VERSION", "FILES", "FILES_OF", "SNAPSHOT_NAME", "HEX64", "OWN_FILES", "MAX_DIM",
           "META_SCHEMA", "AMEND_SCHEMA", "PARTITION_SCHEMA", "NO_CENTROID", "centroid_schema", "open_store_file",
           "read_bounded", "sha256_of", "parse_json"]

FORMAT = "chrono_engine.store"
FORMAT_VERSION = 5
FILES = ("graph.bin", "meta.arrow", "amend.arrow", "partition.arrow", "centroids.arrow", "metadata.arrow")
# the data files of each format version that opens (2: before amendments; 3: before the
# probe plan's partition was saved; 4: before user metadata columns)
FILES_OF = {2: ("graph.bin", "meta.arrow"), 3: ("graph.bin", "meta.arrow", "amend.arrow"), 4: FILES[:5], 5: FILES}
SNAPSHOT_NAME = re.compile(r"snap-[0-9a-f]{32}")
HEX64 = re.compile(r"[0-9a-f]{64}")
#: files a snapshot directory of this store may hold (anything else: not ours, never deleted)
OWN_FILES = {*FILES, "manifest.json", _wal.LOG_NAME}
MAX_DIM = 65536


# meta.arrow: the columns and their types
META_SCHEMA = pa.schema([
    ("id", pa.uint64()), ("valid_from", pa.int64()), ("valid_to", pa.int64()), ("observed_at", pa.int64()),
    ("ingested_at", pa.int64()), ("retracted_at", pa.int64()), ("version_key", pa.uint64()),
    ("reliability", pa.float32()), ("fact_type_code", pa.uint16()), ("stem_code", pa.int32()),
    ("deprecated", pa.bool_()), ("vector_hash", pa.uint64()), *[(c, pa.string()) for c in STRING_COLUMNS],
    ("fact_type", pa.string()), ("stem_id", pa.string())])

# the columns of amend.arrow: one lifecycle event (MetaTable::Amendment) per row
AMEND_SCHEMA = pa.schema([("row", pa.uint32()), ("tx", pa.int64()), ("valid_to", pa.int64()),
                          ("deprecated_from", pa.int64())])

# partition.arrow: per row, its centroid (65535: none), for the rows assigned when saved;
# centroids.arrow: the centroids, one row each (the probe plan's partition, _partition.py)
PARTITION_SCHEMA = pa.schema([("centroid", pa.uint16())])
NO_CENTROID = 0xFFFF


def centroid_schema(dim: int) -> pa.Schema:
    """centroids.arrow's schema for vectors of ``dim`` floats."""
    return pa.schema([("centroid", pa.list_(pa.float32(), dim))])


# ----------------------------------------------------------------------------- reading files

def open_store_file(path: Path, root: Path) -> int:
    """An fd of a store file if it is a regular file (:func:`._util.open_regular`);
    CorruptStoreError naming it otherwise. FileNotFoundError passes through."""
    try:
        return open_regular(path)
    except NotRegularFile as e:
        raise CorruptStoreError(f"{root}: {path.relative_to(root)} {e.strerror}") from None


def read_bounded(path: Path, root: Path, limit: int) -> bytes:
    """A store file's bytes, refused (CorruptStoreError) when over ``limit`` or changed
    while being read."""
    fd = open_store_file(path, root)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(fd).st_size
        if size > limit:
            raise CorruptStoreError(f"{root}: {path.relative_to(root)} is {size} bytes, more than "
                                    f"a store writes ({limit})")
        data = f.read(limit + 1)
    if len(data) != size:
        raise CorruptStoreError(f"{root}: {path.relative_to(root)} changed while being read")
    return data


def sha256_of(path: Path, root: Path) -> str:
    """The SHA-256 (hex) of a store file, read in 4 MiB blocks."""
    fd = open_store_file(path, root)
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def parse_json(data: bytes, what: str) -> Any:
    """JSON a store wrote (no NaN or Infinity); CorruptStoreError naming ``what`` otherwise."""
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a number a store writes")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptStoreError(f"{what} is unreadable ({type(e).__name__}: {str(e)[:200]})") from None

