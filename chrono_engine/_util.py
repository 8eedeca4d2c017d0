"""Small file helpers shared by the store format and the model downloads (internal)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["sha256_file", "fsync_file", "fsync_dir"]


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes, read in 4 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def fsync_file(path: str | os.PathLike) -> None:
    """Flush a written file's data to stable storage."""
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def fsync_dir(path: str | os.PathLike) -> None:
    """Flush a directory's entries (a rename or a new file in it) to stable storage; a
    directory that cannot be opened (some platforms) is skipped."""
    try:
        fd = os.open(Path(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
