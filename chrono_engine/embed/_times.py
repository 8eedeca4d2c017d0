"""Timestamps for the embedders: anything time-like -> int64 µs since the epoch (UTC).

The embedders are stricter than ingest: a value that *can* carry a time zone must carry
one (a naive ``datetime``, pandas ``Timestamp``, ISO string without an offset or Arrow
timestamp type without ``tz`` is refused), because a silently wrong zone shifts every
encoding. NumPy ``datetime64`` has no zone by definition and is read as UTC; integers
are µs since the epoch. Years 1..9999 only.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import EmbeddingError
from ..schema import MAX_TIME_US, MIN_TIME_US

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _one(value: Any, where: str) -> int:
    if isinstance(value, (bool, np.bool_)) or value is None:
        raise EmbeddingError(f"{where}: expected a time, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise EmbeddingError(f"{where}: cannot read {value!r} as an ISO-8601 time") from None
    if hasattr(value, "to_pydatetime") and not isinstance(value, _dt.datetime):
        value = value.to_pydatetime()
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise EmbeddingError(f"{where}: naive datetime {value.isoformat()} (attach a time zone, "
                                 "e.g. tzinfo=datetime.timezone.utc)")
        d = value - _EPOCH
        return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds
    if isinstance(value, _dt.date):
        raise EmbeddingError(f"{where}: a date has no time zone; pass an aware datetime")
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            raise EmbeddingError(f"{where}: NaT is not a time")
        return _datetime64_us(np.asarray([value]), where)[0]
    raise EmbeddingError(f"{where}: expected an aware datetime, ISO string with offset, "
                         f"datetime64 or int µs, got {type(value).__name__}")


def _datetime64_us(a: np.ndarray, name: str) -> np.ndarray:
    nat = np.isnat(a)
    if nat.any():
        raise EmbeddingError(f"{name}: NaT at row {int(np.flatnonzero(nat)[0])}")
    unit, _ = np.datetime_data(a.dtype)
    raw = a.astype(np.int64)
    # range check in the array's own unit, before a conversion that could overflow
    lo = np.datetime64(MIN_TIME_US, "us").astype(a.dtype).astype(np.int64)
    hi = np.datetime64(MAX_TIME_US, "us").astype(a.dtype).astype(np.int64)
    if unit not in ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"):
        raise EmbeddingError(f"{name}: unsupported datetime64 unit {unit!r}")
    bad = (raw < lo) | (raw > hi)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise EmbeddingError(f"{name}: row {row} ({a[row]}) is outside years 1..9999")
    return a.astype("datetime64[us]").astype(np.int64)


def as_utc_us(values: Any, name: str = "times") -> np.ndarray:
    """A batch of instants -> int64 µs (1-D). Raises EmbeddingError naming the row."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if not pa.types.is_timestamp(values.type):
            raise EmbeddingError(f"{name}: expected an Arrow timestamp array, got {values.type}")
        if values.type.tz is None:
            raise EmbeddingError(f"{name}: Arrow timestamp without a time zone (cast to timestamp[us, UTC])")
        if values.null_count:
            row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            raise EmbeddingError(f"{name}: null at row {row}")
        values = values.cast(pa.timestamp(values.type.unit)).to_numpy(zero_copy_only=False)
    if hasattr(values, "dt") and hasattr(values, "to_numpy"):  # pandas Series
        if getattr(values.dt, "tz", None) is None:
            raise EmbeddingError(f"{name}: pandas times without a time zone (use .dt.tz_localize('UTC'))")
        values = values.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
    if isinstance(values, (str, bytes)) or np.isscalar(values) or isinstance(values, (_dt.datetime, _dt.date)):
        raise EmbeddingError(f"{name}: expected a sequence of times, got one {type(values).__name__}")
    a = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if a.ndim != 1:
        raise EmbeddingError(f"{name}: expected a 1-D batch of times, got shape {a.shape}")
    if a.shape[0] == 0:
        raise EmbeddingError(f"{name}: empty batch (nothing to encode)")
    if a.dtype.kind == "M":
        return _datetime64_us(a, name)
    if a.dtype.kind in "iu":
        if a.dtype == np.uint64 and (a > np.uint64(MAX_TIME_US)).any():
            raise EmbeddingError(f"{name}: integer µs outside years 1..9999")
        out = a.astype(np.int64)
    elif a.dtype.kind == "O":
        out = np.fromiter((_one(v, f"{name}[{i}]") for i, v in enumerate(a)), dtype=np.int64, count=len(a))
    elif a.dtype.kind in "US":
        out = np.fromiter((_one(str(v), f"{name}[{i}]") for i, v in enumerate(a)), dtype=np.int64, count=len(a))
    else:
        raise EmbeddingError(f"{name}: wrong dtype {a.dtype} (expected datetime64, int64 µs, "
                             "aware datetimes or ISO strings with an offset)")
    bad = (out < MIN_TIME_US) | (out > MAX_TIME_US)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise EmbeddingError(f"{name}: row {row} ({int(out[row])} µs) is outside years 1..9999")
    return np.ascontiguousarray(out)
