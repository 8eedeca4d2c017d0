"""Timestamps for the embedders: a batch of instants -> int64 µs since the epoch (UTC).

The rules are the package's own (:mod:`chrono_engine._time`), as at ingest and search:
naive values are UTC, dates are midnight UTC, integers are µs, every time within years
1..9999. The embedders add only what a batch needs: a 1-D, non-empty sequence.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np

from .._time import column_us, errors_as
from ..errors import EmbeddingError


def as_utc_us(values: Any, name: str = "times") -> np.ndarray:
    """A batch of instants -> int64 µs (1-D). Raises EmbeddingError naming the row."""
    if isinstance(values, (str, bytes)) or np.isscalar(values) or isinstance(values, (_dt.datetime, _dt.date)):
        raise EmbeddingError(f"{name}: expected a sequence of times, got one {type(values).__name__}")
    shape = getattr(values, "shape", None)
    if shape is not None and len(shape) != 1:
        raise EmbeddingError(f"{name}: expected a 1-D batch of times, got shape {tuple(shape)}")
    if len(values) == 0:
        raise EmbeddingError(f"{name}: empty batch (nothing to encode)")
    with errors_as(EmbeddingError):
        us, _ = column_us(name, values)
    return np.ascontiguousarray(us, dtype=np.int64)
