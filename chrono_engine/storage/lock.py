"""One writer per store: the store key and the writer lock (an exclusive ``flock`` on
``<path>/LOCK``)."""
from __future__ import annotations

import os
import stat
import weakref
from pathlib import Path
from typing import Any

from .._util import O_BINARY, O_CLOEXEC, O_NOFOLLOW
from ..errors import ConfigError, CorruptStoreError, StorageError, StoreLockedError

__all__ = ["StoreLock", "store_key"]


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


class StoreLock:
    """The one-writer lock of a store directory: an exclusive, non-blocking ``flock`` on
    ``<path>/LOCK``, held until :meth:`release` (or until the process ends — the operating
    system drops it, so a crashed writer never leaves the store locked). A second writer,
    in this process or another, gets :class:`~chrono_engine.errors.StoreLockedError`."""

    def __init__(self, root: Path) -> None:
        path = root / "LOCK"
        if not O_NOFOLLOW and path.is_symlink():  # no O_NOFOLLOW (Windows): look first
            raise CorruptStoreError(f"{root}: LOCK is not a regular file")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | O_NOFOLLOW | O_BINARY | O_CLOEXEC, 0o644)
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

