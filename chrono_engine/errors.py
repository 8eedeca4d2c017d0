"""One error family for chrono_engine.

Every error raised on purpose derives from :class:`ChronoError` and from the built-in
exception a user would naturally catch, so ``except ValueError`` keeps working:

>>> import chrono_engine as ce
>>> issubclass(ce.errors.SchemaError, ValueError)
True

The family, by what went wrong (the built-in each one also is, in brackets):

- input data: :class:`SchemaError` (ingested rows break a rule of the data model),
  :class:`DataFileError` (a dataset file; :class:`DatasetNotFoundError` when a dataset asked
  for by name is not in the data directory), :class:`TimeParseError` (time text or a time
  argument), :class:`EmbeddingError` (input an embedder cannot encode),
  :class:`FitError` (samples an estimator cannot fit) [ValueError];
- call arguments: :class:`QueryError` (a search, scoring or retrieval call),
  :class:`LifecycleError` (a supersede or retract), :class:`ConfigError` (an Engine,
  component or learning step given parameters it cannot use) [ValueError];
  :class:`ArgumentTypeError` (an argument of the wrong type) [TypeError];
- lookups: :class:`NotFoundError` (a name or id that is not there) [KeyError];
- files: :class:`StorageError` and its :class:`CorruptStoreError` (a saved store) and
  :class:`StoreLockedError` (a second writer),
  :class:`ModelFileError` (an ONNX model or tokenizer file), :class:`DownloadError` (a
  dataset download) [OSError];
- installation: :class:`MissingDependencyError` (an optional dependency of one layer is
  not installed; the message names the extra to install) [ImportError];
- distribution: :class:`ShardError` (a shard of a sharded engine died or did not answer
  in time) [RuntimeError];
- serving: :class:`ServiceError` (a worker process of ``chrono serve --workers`` exited)
  [RuntimeError].
"""
from __future__ import annotations

__all__ = ["ChronoError", "SchemaError", "QueryError", "ConfigError", "FitError", "ArgumentTypeError",
           "LifecycleError", "NotFoundError", "StorageError", "CorruptStoreError", "StoreLockedError",
           "TimeParseError",
           "DataFileError", "EmbeddingError", "MissingDependencyError", "ModelFileError", "DatasetNotFoundError", "DownloadError",
           "ShardError", "ServiceError"]


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
    """A search, scoring or retrieval call got arguments it cannot use."""


class ConfigError(ChronoError, ValueError):
    """An Engine or component constructed with parameters it cannot use (``Engine(dim=0)``,
    a rule graph given a per-edge quality outside (0, 1]), or a learning or evaluation step
    called with settings it cannot use (a non-positive shrinkage, an unknown decay mode, a
    table of the wrong shape, sizes beyond its integer keys)."""


class FitError(ChronoError, ValueError):
    """An estimator got samples it cannot fit (:func:`~chrono_engine.fit_ou`,
    :func:`~chrono_engine.fit_beta_bernoulli`, the TKG rule learners): wrong shapes, too few
    samples, non-finite values, times not increasing, or data that identify nothing (a
    constant or exactly fitted path). The message names the argument and the index."""


class ArgumentTypeError(ChronoError, TypeError):
    """An argument of a type the call does not take (``parse_time(b"...")``); the message
    names the argument and the type it got."""


class LifecycleError(ChronoError, ValueError):
    """A supersede or retract would break the version history (cycle, non-increasing
    version, effective date before the predecessor's start, ...)."""


class NotFoundError(ChronoError, KeyError):
    """A name or id that is not there: an id or stem the store does not hold, a fact type
    without a decay profile, a split a dataset does not have."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class StorageError(ChronoError, OSError):
    """Saving or opening a store failed."""


class CorruptStoreError(StorageError):
    """A saved store is truncated, altered or of an unknown format."""


class StoreLockedError(StorageError):
    """Another writer (an engine, a CLI command, a service, in this process or another) has
    the store open for writing; a store has one writer at a time. Readers open it with
    ``Engine.open(path, read_only=True)``, which never waits."""


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


class MissingDependencyError(ChronoError, ImportError):
    """A layer needs an optional dependency that is not installed; the message says which
    extra installs it (``pip install "chrono_engine[embed]"``)."""


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


class ShardError(ChronoError, RuntimeError):
    """A shard of a :class:`~chrono_engine.distributed.ShardedEngine` died or did not answer
    in time; ``shard`` says which. Restart from the last save
    (``ShardedEngine.open(path)``)."""

    def __init__(self, message: str, *, shard: int | None = None):
        super().__init__(message)
        self.shard = shard


class ServiceError(ChronoError, RuntimeError):
    """A worker process of a multi-process service (``chrono serve --read-only --workers
    N``) exited while serving; ``worker`` says which. The supervisor stops the others and
    ends (docs/serve.md: a process manager restarts the service)."""

    def __init__(self, message: str, *, worker: int | None = None):
        super().__init__(message)
        self.worker = worker
