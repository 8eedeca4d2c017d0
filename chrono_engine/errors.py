"""One error family for chrono_engine.

Every error raised on purpose derives from :class:`ChronoError` and from the built-in
exception a user would naturally catch, so ``except ValueError`` keeps working:

>>> import chrono_engine as ce
>>> issubclass(ce.errors.SchemaError, ValueError)
True
"""
from __future__ import annotations

__all__ = ["ChronoError", "SchemaError", "QueryError", "LifecycleError", "NotFoundError",
           "StorageError", "CorruptStoreError", "TimeParseError", "DataFileError",
           "EmbeddingError", "ModelFileError"]


class ChronoError(Exception):
    """Base class of every error chrono_engine raises on purpose."""


class SchemaError(ChronoError, ValueError):
    """Ingested rows break a rule of the data model.

    ``column``, ``row`` and ``rule`` say what was wrong (``row`` is the 0-based position
    within the rejected batch, or None when the whole column is wrong).
    """

    def __init__(self, message: str, *, column: str | None = None, row: int | None = None,
                 rule: str | None = None):
        super().__init__(message)
        self.column = column
        self.row = row
        self.rule = rule


class QueryError(ChronoError, ValueError):
    """A search or scoring call got arguments it cannot use."""


class LifecycleError(ChronoError, ValueError):
    """A supersede or retract would break the version history (cycle, non-increasing
    version, effective date before the predecessor's start, ...)."""


class NotFoundError(ChronoError, KeyError):
    """An id or stem that the store does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class StorageError(ChronoError, OSError):
    """Saving or opening a store failed."""


class CorruptStoreError(StorageError):
    """A saved store is truncated, altered or of an unknown format."""


class TimeParseError(ChronoError, ValueError):
    """A time expression or time argument could not be understood."""


class DataFileError(ChronoError, ValueError):
    """A dataset file is missing, empty or has a bad line; ``path`` and ``line`` (1-based,
    None for whole-file problems) say where."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line


class EmbeddingError(ChronoError, ValueError):
    """An embedder got input it cannot encode (naive or missing times, wrong dtype, empty
    batch, mismatched lengths); the message names the argument and row."""


class ModelFileError(ChronoError, OSError):
    """An ONNX model or tokenizer file is missing, unreadable, corrupted or not the graph
    expected; ``path`` says which."""

    def __init__(self, message: str, *, path: str | None = None):
        super().__init__(message)
        self.path = path


class DatasetNotFoundError(DataFileError):
    """A benchmark dataset asked for by name is not in the data directory (or the name is
    unknown); the message says where the loader looked and how to get the files."""


class DownloadError(ChronoError, OSError):
    """Fetching a dataset file failed (unreachable host, HTTP error, timeout, a body that is
    truncated, too large or not the pinned sha256); ``url`` says which file. Nothing of
    that file is left behind."""

    def __init__(self, message: str, *, url: str | None = None):
        super().__init__(message)
        self.url = url


__all__ += ["DatasetNotFoundError", "DownloadError"]
