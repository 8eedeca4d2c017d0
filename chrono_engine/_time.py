"""Time in chrono_engine: every instant is int64 microseconds since 1970-01-01T00:00:00Z.

This module is the one place where time values from users become those integers (ingest
columns, search arguments, candidate columns of ``ce.score``, lifecycle times, embedder
batches, fits), and the one place the constants of that representation are defined.

Accepted, everywhere:

- ``datetime.datetime`` and pandas ``Timestamp``: aware values are converted to UTC;
  **naive values are read as UTC** (the one rule for naive times, in every layer);
- ``datetime.date``: midnight UTC;
- ISO-8601 strings (``"2024-03-01"``, ``"2024-03-01 12:00"``, ``"2024-03-01T12:00:00.5+08:00"``,
  ``"...Z"``), read by Arrow's parser; no offset = UTC;
- NumPy ``datetime64`` of any unit and Arrow ``timestamp`` of any unit (zone-aware or naive:
  both are UTC instants) and ``date32`` / ``date64``; NaT / null is a missing value;
- integers: microseconds since the epoch (integral floats too; NaN = missing).

Sub-microsecond precision is floored. Unit conversions never wrap: a value whose
microseconds do not fit int64 is an error, not a silently wrong time.

Range: *stored* times (ingest columns, lifecycle times) must lie within years 1..9999,
whatever their kind, with the single exception of :data:`OPEN_END` given as an integer in a
column that may be open (``valid_to``, ``retracted_at``). *Query instants* (``as_of``,
``known_at``, window ends, the ``at`` of ``validity``, ``ce.score``'s candidate times) may
be any value whose microseconds fit int64, so that sentinels such as :data:`OPEN_END` can
ask for "everything known" (dates, datetimes and strings lie within years 1..9999 anyway).

Every converter raises :class:`TimeInputError` (a :class:`~chrono_engine.errors.TimeParseError`,
so a ``ValueError``) naming the argument or column, the row when there is one, and the rule;
each layer re-raises it as its own error class (``SchemaError`` at ingest, ``QueryError`` in
search and scoring, ``LifecycleError``, ``EmbeddingError``, ``FitError``).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import time as _time
from math import gcd
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._args import arrow_type, holds_containers, shown
from ._columns import canonical, is_series
from .errors import TimeParseError

__all__ = ["OPEN_END", "MIN_TIME_US", "MAX_TIME_US", "US_PER_SECOND", "US_PER_DAY", "TimeInputError",
           "errors_as", "now_us", "scalar_column", "scalar_us", "array_us", "column_us", "from_us", "iso"]

#: Stored end of an open interval (``valid_to`` / ``retracted_at`` null): the int64 maximum.
OPEN_END = int(np.iinfo(np.int64).max)
#: 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z in µs since the epoch: the range of
#: every time a user may give (``OPEN_END`` aside).
MIN_TIME_US = -62_135_596_800_000_000
MAX_TIME_US = 253_402_300_799_999_999
US_PER_SECOND = 1_000_000
US_PER_DAY = 86_400 * US_PER_SECOND

_INT64_MIN = int(np.iinfo(np.int64).min)
# (numerator, denominator) of one unit in microseconds
_UNIT_US = {"W": (7 * US_PER_DAY, 1), "D": (US_PER_DAY, 1), "h": (3_600 * US_PER_SECOND, 1),
            "m": (60 * US_PER_SECOND, 1), "s": (US_PER_SECOND, 1), "ms": (1_000, 1), "us": (1, 1),
            "ns": (1, 1_000), "ps": (1, 10**6), "fs": (1, 10**9), "as": (1, 10**12)}
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_ONE_US = _dt.timedelta(microseconds=1)
# a zone offset after a time of day: "T12:00Z", " 12:00:00.5+08:00", "T12-0500"
_OFFSET_RE = r"[0-9][Tt ][0-9][0-9:.,]*([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$"
_SUBMICRO_RE = r"(\.[0-9]{6})[0-9]+"
_TS_NAIVE = pa.timestamp("us")
_TS_UTC = pa.timestamp("us", tz="UTC")
_INT64_LIMIT = 1 << 62   # |raw| <= 2**62 / num cannot overflow int64 once multiplied by num


class TimeInputError(TimeParseError):
    """A time argument or column value that cannot be read as an instant.

    ``name`` is the argument or column, ``row`` the 0-based position of the first bad value
    (None for a scalar or a whole column), ``rule`` one of "wrong type", "bad time string",
    "time out of range", "null in required column", and ``detail`` the message without
    its location.
    """

    def __init__(self, detail: str, *, name: str, rule: str, row: int | None = None,
                 row_label: str = "row"):
        where = name if row is None else f"{name}, {row_label} {row}"
        super().__init__(f"{where}: {detail}")
        self.detail, self.name, self.rule, self.row = detail, name, rule, row


@contextlib.contextmanager
def errors_as(cls: type[Exception]):
    """Re-raise a :class:`TimeInputError` of the block as ``cls`` with the same message: how
    each layer names a bad time with its own error class (``with errors_as(QueryError):``)."""
    try:
        yield
    except TimeInputError as e:
        raise cls(str(e)) from None


def now_us() -> int:
    """The wall clock, in µs since the epoch."""
    return _time.time_ns() // 1000


# ----------------------------------------------------------------------------- columns

class _Times:
    """int64 µs values plus masks for nulls and for values beyond int64 once scaled."""

    __slots__ = ("us", "nulls", "oob", "exact")

    def __init__(self, us, nulls=None, oob=None, exact=True):
        # exact: the values are the user's own integers (µs, unscaled), so OPEN_END in them
        # is the open sentinel rather than a converted time
        self.us, self.nulls, self.oob, self.exact = us, nulls, oob, exact


def _scale(raw: np.ndarray, num: int, den: int, count: int = 1) -> tuple[np.ndarray, np.ndarray | None]:
    """raw * num * count / den (floored) with an overflow mask instead of wrapping."""
    num *= count
    g = gcd(num, den)
    num, den = num // g, den // g
    oob = None
    if num != 1:
        lim = _INT64_LIMIT // num
        oob = (raw > lim) | (raw < -lim)
        if oob.any():
            raw = np.where(oob, 0, raw)
        else:
            oob = None
        raw = raw * np.int64(num)
    if den != 1:
        raw = np.floor_divide(raw, np.int64(den))
    return raw.astype(np.int64, copy=False), oob


def _fail(detail: str, name: str, row: int | None, rule: str):
    raise TimeInputError(detail, name=name, row=row, rule=rule)


def _nulls(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return arr.is_null().to_numpy(zero_copy_only=False)


def _numpy(name: str, a: np.ndarray) -> _Times:
    kind = a.dtype.kind
    if kind == "M":
        unit, count = np.datetime_data(a.dtype)
        raw = a.view(np.int64)
        nulls = raw == _INT64_MIN
        nulls = nulls if nulls.any() else None
        clean = raw if nulls is None else np.where(nulls, 0, raw)
        if unit in ("Y", "M"):
            years = clean * count / (1 if unit == "Y" else 12)  # float: only for the range test
            oob = (years < -1970) | (years > 8031)
            if nulls is not None:
                oob &= ~nulls
            safe = np.where(oob, 0, clean).view(a.dtype)
            days = safe.astype("datetime64[D]").view(np.int64)
            us, _ = _scale(days, *_UNIT_US["D"])
            return _Times(us, nulls, oob if oob.any() else None, exact=False)
        if unit not in _UNIT_US:
            _fail("datetime64 without a unit cannot be read as a time", name, None, "wrong type")
        us, oob = _scale(clean, *_UNIT_US[unit], count)
        return _Times(us, nulls, oob, exact=(unit == "us" and count == 1))
    if kind in "iu":
        if kind == "u" and a.dtype.itemsize == 8:
            oob = a > np.uint64(OPEN_END)
            us = np.where(oob, 0, a).astype(np.int64)
            return _Times(us, None, oob if oob.any() else None)
        return _Times(a.astype(np.int64, copy=False))
    if kind == "f":
        nulls = np.isnan(a)
        with np.errstate(invalid="ignore"):
            bad = ~nulls & ((a != np.floor(a)) | ~np.isfinite(a))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            _fail(f"{a[row].item()!r} is not a whole number of microseconds", name, row, "wrong type")
        oob = ~nulls & (np.abs(a) > float(_INT64_LIMIT))
        us = np.where(nulls | oob, 0, a).astype(np.int64)
        return _Times(us, nulls if nulls.any() else None, oob if oob.any() else None)
    _fail(f"expected times, got dtype {a.dtype}", name, 0 if len(a) else None, "wrong type")


def _parse_iso(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, int | None]:
    """ISO-8601 strings -> (µs, nulls, first unparseable row or None)."""
    if not pa.types.is_string(arr.type):
        arr = arr.cast(pa.string())
    if pc.any(pc.match_substring_regex(arr, _SUBMICRO_RE)).as_py():
        # Arrow parses at most 6 fractional digits; dropping the rest floors to the µs
        arr = pc.replace_substring_regex(arr, _SUBMICRO_RE, r"\1")
    n = len(arr)
    nulls = _nulls(arr)
    has_offset = pc.fill_null(pc.match_substring_regex(arr, _OFFSET_RE), False)
    has_offset = has_offset.to_numpy(zero_copy_only=False)
    us = np.zeros(n, dtype=np.int64)
    bad = None
    for mask, typ in ((has_offset, _TS_UTC), (~has_offset & ~nulls, _TS_NAIVE)):
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            continue
        sub = arr if len(idx) == n else arr.take(pa.array(idx))
        try:
            ts = pc.cast(sub, typ)
        except pa.ArrowInvalid:
            row = int(idx[_first_failing(sub, typ)])
            bad = row if bad is None else min(bad, row)
            continue
        us[idx] = pc.cast(ts, pa.int64()).to_numpy(zero_copy_only=False)
    return us, nulls, bad


def _first_failing(arr: pa.Array, typ: pa.DataType) -> int:
    """Index of the first element that does not cast (bisection: O(n) work, O(log n) casts)."""
    lo, hi = 0, len(arr)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(arr.slice(lo, mid - lo), typ)
        except pa.ArrowInvalid:
            hi = mid
        else:
            lo = mid
    return lo


def _arrow(name: str, arr: pa.Array) -> _Times:
    t = arr.type
    if pa.types.is_null(t):
        return _Times(np.zeros(len(arr), np.int64), np.ones(len(arr), bool))
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_integer(t):
        nulls = _nulls(arr) if arr.null_count else None
        if pa.types.is_uint64(t):
            # compared as uint64: against an int64 scalar Arrow casts the column, which fails above it
            big = pc.fill_null(pc.greater(arr, pa.scalar(OPEN_END, pa.uint64())), False).to_numpy(zero_copy_only=False)
            if big.any():
                row = int(np.flatnonzero(big)[0])
                _fail(f"{arr[row].as_py()} µs is beyond the int64 range", name, row, "time out of range")
        raw_arr = arr.cast(pa.int32() if pa.types.is_date32(t) else pa.int64())
        if nulls is not None:
            raw_arr = raw_arr.fill_null(0)
        raw = raw_arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        if pa.types.is_timestamp(t):
            num, den = _UNIT_US[t.unit]
        elif pa.types.is_date32(t):
            num, den = _UNIT_US["D"]
        elif pa.types.is_date64(t):
            num, den = _UNIT_US["ms"]
        else:
            num, den = 1, 1
        us, oob = _scale(raw, num, den)
        return _Times(us, nulls, oob, exact=(num == den == 1))
    if pa.types.is_floating(t):
        return _numpy(name, arr.to_numpy(zero_copy_only=False).astype(np.float64))  # nulls -> NaN
    if pa.types.is_string(t) or pa.types.is_large_string(t) or (
            hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)):
        us, nulls, bad = _parse_iso(arr)
        if bad is not None:
            _fail(f"cannot read {shown(arr[bad].as_py())} as an ISO-8601 time", name, bad, "bad time string")
        return _Times(us, nulls if nulls.any() else None, exact=False)
    row = 0 if not arr.null_count else int(np.flatnonzero(~_nulls(arr))[0])
    _fail(f"expected a timestamp, date, ISO-8601 string or int64 microseconds, got Arrow type {arrow_type(t)}",
          name, row, "wrong type")


def _scalar_kind(x) -> str:
    if x is None or (isinstance(x, float) and x != x) or type(x).__name__ == "NaTType":
        return "null"
    if isinstance(x, np.datetime64):
        return "null" if np.isnat(x) else "datetime64"
    if isinstance(x, (bool, np.bool_)):
        return "bad"
    if isinstance(x, (int, np.integer)):
        return "int"
    if isinstance(x, (float, np.floating)):
        return "float" if float(x).is_integer() else "bad"
    if isinstance(x, _dt.datetime):
        return "datetime"
    if isinstance(x, _dt.date):
        return "date"
    if isinstance(x, str):
        return "str"
    return "bad"


def _calendar_us(x: _dt.date) -> int:
    """A datetime (naive = UTC; a pandas Timestamp floored to the µs) or a date (midnight
    UTC) as µs since the epoch."""
    if isinstance(x, _dt.datetime):
        if hasattr(x, "nanosecond") and hasattr(x, "to_pydatetime"):  # pandas.Timestamp
            x = x.to_pydatetime(warn=False)
        return (x - (_EPOCH_NAIVE if x.tzinfo is None else _EPOCH_UTC)) // _ONE_US
    return (x - _EPOCH_DATE).days * US_PER_DAY


def _objects(name: str, items: list) -> _Times:
    """Mixed Python objects (only when Arrow could not convert the list in one go)."""
    n = len(items)
    us = np.zeros(n, dtype=np.int64)
    nulls = np.zeros(n, dtype=bool)
    oob = np.zeros(n, dtype=bool)
    exact = np.zeros(n, dtype=bool)
    str_rows, str_vals = [], []
    for i, x in enumerate(items):
        kind = _scalar_kind(x)
        if kind == "null":
            nulls[i] = True
        elif kind == "bad":
            _fail(f"expected a time, got {type(x).__name__} {shown(x)}", name, i, "wrong type")
        elif kind == "str":
            str_rows.append(i)
            str_vals.append(x)
        elif kind in ("int", "float"):
            v = int(x)
            if -(1 << 63) <= v < (1 << 63):
                us[i], exact[i] = v, True
            else:
                oob[i] = True
        elif kind == "datetime64":
            t = _numpy(name, np.asarray([x]))
            us[i] = t.us[0]
            oob[i] = t.oob is not None and t.oob[0]
        else:  # datetime, date
            us[i] = _calendar_us(x)
    if str_rows:
        rows = np.asarray(str_rows)
        # ISO-8601 is ASCII; anything else cannot parse (and a lone surrogate cannot even
        # become an Arrow string), so it is blanked to fail below at its own row
        ascii_vals = [v if v.isascii() else "" for v in str_vals]
        vals, _, bad = _parse_iso(pa.array(ascii_vals, type=pa.string()))
        if bad is not None:
            _fail(f"cannot read {shown(str_vals[bad])} as an ISO-8601 time", name, int(rows[bad]), "bad time string")
        us[rows] = vals
    return _Times(us, nulls if nulls.any() else None, oob if oob.any() else None, exact)


def scalar_column(col: Any):
    """:func:`~chrono_engine._columns.canonical` for a column that should hold scalars (times,
    strings, numbers, ids), except that Python objects it cannot take stay a list of them,
    for the caller to name the row: containers (see :func:`~chrono_engine._args.holds_containers`)
    and strings that are not valid Unicode (a lone surrogate, which Arrow cannot encode)."""
    objs = None
    if isinstance(col, (list, tuple)):
        objs = col
    elif (isinstance(col, np.ndarray) and col.dtype.kind == "O" and col.ndim == 1) or (
            is_series(col) and col.dtype == object):
        objs = col
    if objs is not None and holds_containers(objs):
        return list(objs)
    try:
        return canonical(col)
    except UnicodeError:  # NumPy str arrays: Arrow refuses lone surrogates
        return list(col)


def _read(name: str, col: Any) -> _Times:
    col = scalar_column(col)  # as ingest reads every column: one Arrow conversion where it can
    if isinstance(col, np.ndarray):
        if col.ndim != 1:
            _fail(f"expected a 1-D column of times, got shape {col.shape}", name, None, "wrong type")
        return _numpy(name, col)
    if isinstance(col, pa.Array):
        return _arrow(name, col)
    return _objects(name, col)


def column_us(name: str, col: Any, *, nullable: bool = False, stored: bool = True,
              open_end: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """A column of times -> (int64 µs, null mask or None); nulls are left as 0.

    ``col``: an Arrow array, a NumPy array, a pandas Series or a sequence of scalars (see the
    module docstring for what each may hold). ``nullable``: nulls are allowed (else the
    first null is an error). ``stored``: values must lie within years 1..9999 (else only
    within int64, as query instants may); ``open_end``: :data:`OPEN_END` given as an integer
    is allowed (the open end of ``valid_to`` / ``retracted_at``). Raises
    :class:`TimeInputError` naming ``name`` and the first bad row.

    A column of int64 µs or ``timestamp[us]`` without nulls is returned without a copy when
    ``stored`` is False (the hot path of ``ce.score``).
    """
    t = _read(name, col)
    if not nullable and t.nulls is not None:
        _fail("a time is required, got null", name, int(np.flatnonzero(t.nulls)[0]), "null in required column")
    us = t.us
    bad = t.oob
    if stored:
        out = (us < MIN_TIME_US) | (us > MAX_TIME_US)
        if open_end and t.exact is not False:
            # OPEN_END as the user's own integer is the open sentinel, not a converted time
            out &= ~((us == OPEN_END) & t.exact)
        bad = out if bad is None else (bad | out)
    if bad is not None:
        if t.nulls is not None:
            bad = bad & ~t.nulls
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            shown = "beyond int64" if t.oob is not None and t.oob[row] else f"{us[row]} µs"
            _fail(f"time ({shown}) is outside years 1..9999" if stored else f"time ({shown}) does not fit int64 µs",
                  name, row, "time out of range")
    return us, t.nulls


# ----------------------------------------------------------------------------- scalars

@functools.lru_cache(maxsize=1024)
def _iso_us(text: str) -> int | None:
    us, _, bad = _parse_iso(pa.array([text], pa.string()))
    return None if bad is not None else int(us[0])


def scalar_us(value: Any, name: str, *, stored: bool = False) -> int:
    """One instant -> int µs since the epoch. ``stored``: as :func:`column_us` (years
    1..9999 for every kind of value); otherwise integers may be any int64 (a query instant).
    Raises :class:`TimeInputError` naming ``name``."""
    kind = _scalar_kind(value)
    if value is None:
        _fail("a time is required", name, None, "null in required column")
    if kind == "null":
        _fail(f"{shown(value)} is not a time", name, None, "null in required column")
    if kind == "bad":
        _fail(f"expected a datetime, date, ISO-8601 string, datetime64 or int µs, got "
              f"{type(value).__name__} {shown(value)}", name, None, "wrong type")
    if kind == "int":
        v = int(value)
        if not -(1 << 63) <= v < (1 << 63):
            _fail(f"{shown(v)} µs does not fit int64", name, None, "time out of range")
        if stored and not MIN_TIME_US <= v <= MAX_TIME_US:
            _fail(f"time ({v} µs) is outside years 1..9999", name, None, "time out of range")
        return v
    if kind == "str":
        # no ISO-8601 time is longer, or not ASCII (nor can a lone surrogate become Arrow text)
        us = _iso_us(value) if len(value) <= 64 and value.isascii() else None
        if us is None:
            _fail(f"cannot read {shown(value)} as an ISO-8601 time", name, None, "bad time string")
        return us
    if kind in ("datetime", "date"):
        return _calendar_us(value)
    us, _ = column_us(name, [value], stored=stored)  # int, float, datetime64: range checks
    return int(us[0])


def array_us(value: Any, n: int, name: str, default: int | None = None) -> np.ndarray:
    """One instant or one per query -> int64 µs array of length ``n`` (query instants:
    integers may be any int64). None takes ``default`` (None: the argument is required).
    Errors name the query (``as_of, query 3: ...``)."""
    if value is None:
        if default is None:
            _fail("is required for this mode", name, None, "null in required column")
        return np.full(n, default, dtype=np.int64)
    if type(value) is int and -(1 << 63) <= value < (1 << 63):  # the common call: int µs
        return np.full(n, value, dtype=np.int64)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (np.ndarray, list, tuple, pa.Array, pa.ChunkedArray)) or is_series(value):
        if len(value) != n:
            _fail(f"expected {n} times (one per query), got {len(value)}", name, None, "wrong type")
        try:
            us, _ = column_us(name, value, stored=False)
        except TimeInputError as e:
            raise TimeInputError(e.detail, name=name, row=e.row, rule=e.rule, row_label="query") from None
        return np.ascontiguousarray(us, dtype=np.int64)
    return np.full(n, scalar_us(value, name), dtype=np.int64)


# ----------------------------------------------------------------------------- back to datetimes

def from_us(us: int) -> _dt.datetime:
    """µs since the epoch -> aware UTC datetime (open ends clamp to years 1 / 9999)."""
    us = min(max(int(us), MIN_TIME_US), MAX_TIME_US)
    return _EPOCH_UTC + _dt.timedelta(microseconds=us)


def iso(us: int) -> str:
    """µs since the epoch as ISO-8601 UTC (``...Z``); :data:`OPEN_END` reads "open"."""
    if int(us) == OPEN_END:
        return "open"
    return from_us(us).isoformat().replace("+00:00", "Z")
