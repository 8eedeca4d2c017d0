"""Small file helpers shared by the store format, the model and dataset downloads (internal)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["sha256_file", "fsync_file", "fsync_dir", "cache_dir"]


def cache_dir() -> Path:
    """The package's per-user cache (model tokenizer, downloaded datasets):
    ``$CHRONO_ENGINE_CACHE``, else ``$XDG_CACHE_HOME/chrono_engine``, else
    ``~/.cache/chrono_engine``."""
    if os.environ.get("CHRONO_ENGINE_CACHE"):
        return Path(os.environ["CHRONO_ENGINE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "chrono_engine"


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
