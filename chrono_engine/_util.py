"""Small helpers shared by the store format, the model and dataset downloads, and the
layers built on optional dependencies (internal)."""
from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

__all__ = ["sha256_file", "fsync_file", "fsync_dir", "cache_dir", "open_regular", "NotRegularFile", "import_extra"]


def import_extra(module: str, extra: str, what: str):
    """``module``, from the package's ``[extra]``, imported on first use so that the rest of
    the package works without it; a MissingDependencyError saying how to install it
    otherwise (``what`` names the part of chrono_engine that needs it)."""
    import importlib

    from .errors import MissingDependencyError
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(f"{what} needs {module}, which is not installed: "
                                     f'pip install "chrono_engine[{extra}]"') from e


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


class NotRegularFile(OSError):
    """A path that must be a regular file is a symlink, FIFO, device, directory..."""


#: open(2) flags where the platform has them: Windows' os has no O_NOFOLLOW (a symbolic link
#: is then refused by an lstat first) and no O_NONBLOCK (it has no FIFOs), and needs O_BINARY
#: (else reads and writes translate line ends)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
O_BINARY = getattr(os, "O_BINARY", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_regular(path: str | os.PathLike, flags: int = os.O_RDONLY) -> int:
    """An fd of ``path`` only if it is a regular file: never follows a symlink, never blocks
    (a FIFO), never reads a device. FileNotFoundError when absent; NotRegularFile (saying
    what it is) otherwise."""
    if not O_NOFOLLOW and os.path.islink(path):  # no O_NOFOLLOW (Windows): look first
        raise NotRegularFile(errno.ELOOP, "is not a regular file (a symbolic link)")
    try:
        fd = os.open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_BINARY | O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegularFile(errno.ELOOP, "is not a regular file (a symbolic link)") from None
        if e.errno == errno.EISDIR:
            raise NotRegularFile(errno.EISDIR, "is not a regular file (a directory)") from None
        raise NotRegularFile(e.errno, f"cannot be read ({e.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise NotRegularFile(errno.EINVAL, f"is not a regular file ({kind})")
    return fd
