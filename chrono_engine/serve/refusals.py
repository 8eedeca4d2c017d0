"""A refused request: its status, the field it names and the message; the status of each
engine error."""
from __future__ import annotations

from ..errors import ChronoError, LifecycleError, NotFoundError, QueryError, SchemaError, StorageError


class HTTPError(Exception):
    """A refusal: its status, the field it names, and the message."""

    def __init__(self, status: int, field_: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field, self.message = status, field_, message


def status_of(e: BaseException) -> int:
    """The status of an engine error (the rest are bugs: 500)."""
    if isinstance(e, NotFoundError):
        return 404
    if isinstance(e, (QueryError, SchemaError, LifecycleError)):
        return 422
    if isinstance(e, StorageError):
        return 503
    return 400 if isinstance(e, ChronoError) else 500
