"""User metadata columns: tenant, department, access groups, source system, document id —
whatever a deployment filters on beside time (docs/data-model.md, "Metadata columns").

A column of an ingested batch that is not one of the engine's own (:data:`schema.COLUMNS
<chrono_engine.schema.COLUMNS>`) is user metadata, of one of six kinds:

============== ============================================ ============================
kind           Arrow types taken                             bytes per row in the core
============== ============================================ ============================
string         string, large_string, string_view,            4 (an int32 code; each
               dictionary<_, string>                         distinct value once)
int64          int8..int64, uint8..uint64 (≤ 2^63 − 1)        8
float64        float16, float32, float64 (no NaN)            8
bool           bool                                          1
timestamp      timestamp (any unit, any zone: UTC), date,    8 (µs since the epoch)
               or any time the time columns take
list<string>   list / large_list / fixed_size_list of        4 + 4 per element
               strings (tags, access groups)
============== ============================================ ============================

int64, float64, timestamp and list columns add one validity byte per row once they hold a
null. A column's kind comes from the first batch that carries it (or from the engine's
``metadata=`` declaration); a later batch may add a column (null for earlier rows) but
never change a kind (an int64 batch into a float64 column is widened; anything else is a
SchemaError naming the column).
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._args import shown
from ._columns import string_array
from ._time import MAX_TIME_US, MIN_TIME_US
from .errors import ConfigError, SchemaError

__all__ = ["KINDS", "KIND_CODES", "RESERVED", "MAX_COLUMNS", "check_name", "declared_kinds", "kind_of_type",
           "normalize_column", "core_part", "arrow_of"]

#: the kinds, by their names (the core's codes: user_columns.hpp UserKind)
KIND_CODES = {"string": 0, "int64": 1, "float64": 2, "bool": 3, "timestamp": 4, "list<string>": 5}
KINDS = tuple(KIND_CODES)
_KIND_NAMES = {v: k for k, v in KIND_CODES.items()}

#: the most metadata columns a store holds (the core's bound)
MAX_COLUMNS = 1024
_NAME_MAX = 128
_NAME_BAD = re.compile(r"[\x00-\x1f\x7f]")

#: names a metadata column cannot take: the engine's own columns and the result tables'
RESERVED = frozenset((
    "id", "vector", "valid_from", "valid_to", "observed_at", "ingested_at", "retracted_at", "reliability",
    "fact_type", "stem_id", "version", "supersedes", "deprecated", "content", "title", "source", "modality",
    "query", "rank", "score", "similarity", "validity", "citation", "certified", "decay", "penalty", "plan",
    "reason", "robustness", "satisfied", "refetch", "row", "deprecated_from", "known_at", "version_key"))

#: the Arrow type each kind is stored and logged as
ARROW_TYPES = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
               "timestamp": pa.timestamp("us", tz="UTC"), "list<string>": pa.list_(pa.string())}


def _fail(detail: str, *, rule: str, column: str | None = None, row: int | None = None, error=SchemaError):
    where = f"column {column!r}, row {row}: " if row is not None else (f"column {column!r}: " if column else "")
    if error is SchemaError:
        raise SchemaError(f"{where}{detail} ({rule})", column=column, row=row, rule=rule)
    raise error(f"{where}{detail}")


def check_name(name: Any, builtin: tuple = (), *, error=SchemaError) -> str:
    """``name`` as a metadata column's name, or the error naming why not: a string of 1 to
    128 characters, no control characters, not starting with ``$`` (the filter
    operators'), not one of :data:`RESERVED`."""
    if not isinstance(name, str):
        _fail(f"column names must be strings, got {shown(name)}", rule="unsupported input", error=error)
    if not name or len(name) > _NAME_MAX or _NAME_BAD.search(name) or name.startswith("$"):
        _fail(f"metadata column name {shown(name)} must be 1 to {_NAME_MAX} characters, without control "
              "characters, not starting with '$'", column=name[:_NAME_MAX], rule="unknown column", error=error)
    if name in RESERVED:
        _fail(f"{name!r} is reserved (an engine column or a result column); name the metadata column "
              "otherwise", column=name, rule="unknown column", error=error)
    return name


def declared_kinds(metadata: Any) -> dict[str, str]:
    """The engine's ``metadata=`` declaration ({name: kind}) checked; a ConfigError names
    what is wrong."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ConfigError(f"metadata must be a dict of column name -> kind ({', '.join(KINDS)}), got "
                          f"{type(metadata).__name__}")
    if len(metadata) > MAX_COLUMNS:
        raise ConfigError(f"metadata declares {len(metadata)} columns; at most {MAX_COLUMNS}")
    out = {}
    for name, kind in metadata.items():
        check_name(name, error=ConfigError)
        if not isinstance(kind, str) or kind not in KIND_CODES:
            raise ConfigError(f"metadata column {name!r}: kind must be one of {', '.join(KINDS)}, got {shown(kind)}")
        out[name] = kind
    return out


def kind_of_type(t: pa.DataType) -> str | None:
    """The kind an Arrow type maps to, or None (not a metadata type; null: unknown)."""
    if pa.types.is_dictionary(t):
        return "string" if _is_string(t.value_type) else None
    if _is_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int64"
    if pa.types.is_floating(t):
        return "float64"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "timestamp"
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) \
            and (_is_string(t.value_type) or pa.types.is_null(t.value_type)):
        return "list<string>"
    return None


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t)


def _as_arrow(name: str, col: Any, n: int) -> pa.Array:
    """A user column (Arrow, NumPy, pandas, list) as one Arrow array of n rows."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if isinstance(col, pa.Array):
        return col
    try:
        if isinstance(col, np.ndarray) and col.dtype.kind in "OUS":
            return pa.array(col.tolist() if col.dtype.kind != "O" else col, from_pandas=True)
        return pa.array(col, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError) as e:
        _fail(f"a metadata column must hold one of the kinds {', '.join(KINDS)}: {shown(str(e))}",
              column=name, rule="wrong type")


def _first_null(arr: pa.Array) -> int | None:
    if not arr.null_count:
        return None
    return int(np.flatnonzero(np.asarray(arr.is_null()))[0])


def normalize_column(name: str, col: Any, n: int, kind: str | None, times: Any) -> tuple[str, pa.Array]:
    """One metadata column as (kind, Arrow array of :data:`ARROW_TYPES` [kind]) of n rows.
    ``kind``: the store's kind for the column (None: a new column, its kind inferred).
    ``times(name, col)``: the time columns' reader (int64 µs, nulls) for timestamp columns
    given as strings or Python datetimes. SchemaError names the column and the first bad row."""
    if kind == "timestamp" and not isinstance(col, (pa.Array, pa.ChunkedArray)):
        return "timestamp", _read_times(name, col, times)  # the time columns' inputs: strings, datetimes, µs
    arr = _as_arrow(name, col, n)
    got = kind_of_type(arr.type)
    if got is None and pa.types.is_null(arr.type):
        if kind is None:
            _fail("every value is null, so the column's kind is unknown: declare it (Engine(metadata={...}))",
                  column=name, rule="wrong type")
        return kind, pa.nulls(len(arr), ARROW_TYPES[kind])
    if got is None:
        _fail(f"Arrow type {arr.type} is not a metadata kind ({', '.join(KINDS)})", column=name, rule="wrong type")
    if kind is None:
        kind = got
    elif got != kind and not (kind == "float64" and got == "int64"):
        if kind == "timestamp" and got == "string":
            return "timestamp", _read_times(name, arr, times)
        _fail(f"the column is {kind}; this batch gives {got} (Arrow {arr.type}): a column keeps its kind",
              column=name, rule="wrong type")
    return kind, _converted(name, arr, kind)


def _timestamps(us: np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    """int64 µs (and where they are null) as the timestamp kind's Arrow array."""
    return pa.array(us, pa.int64(), mask=nulls).cast(ARROW_TYPES["timestamp"])


def _read_times(name: str, col: Any, times: Any) -> pa.Array:
    """A timestamp column given as the time columns take it, read by ``times``."""
    us, nulls = times(name, col)
    return _timestamps(us, None if nulls is None else np.asarray(nulls, bool))


def _converted(name: str, arr: pa.Array, kind: str) -> pa.Array:
    t = arr.type
    if kind == "string":
        if pa.types.is_dictionary(t):
            arr = arr.cast(t.value_type) if not pa.types.is_string(t.value_type) else arr.dictionary_decode()
        if not pa.types.is_string(arr.type):
            try:
                arr = arr.cast(pa.string())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                _fail("strings beyond 2 GiB in one batch", column=name, rule="wrong type")
        return arr
    if kind == "int64":
        if pa.types.is_uint64(t):
            big = pc.greater(arr, pa.scalar(2**63 - 1, pa.uint64()))
            if pc.any(big).as_py():
                row = int(np.flatnonzero(np.asarray(big.fill_null(False)))[0])
                _fail(f"{arr[row].as_py()} is beyond int64", column=name, row=row, rule="wrong type")
        return arr.cast(pa.int64())
    if kind == "float64":
        arr = arr.cast(pa.float64())
        nan = pc.is_nan(arr).fill_null(False)
        if pc.any(nan).as_py():
            row = int(np.flatnonzero(np.asarray(nan))[0])
            _fail("NaN is not a value (use null)", column=name, row=row, rule="wrong type")
        return arr
    if kind == "bool":
        return arr
    if kind == "timestamp":
        if pa.types.is_date(t):
            arr = arr.cast(pa.timestamp("ms")) if pa.types.is_date32(t) or pa.types.is_date64(t) else arr
        if t != ARROW_TYPES["timestamp"]:
            unit = arr.type.unit
            scale = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}[unit]
            raw = arr.cast(pa.int64())
            v = np.asarray(raw.fill_null(0), np.int64)
            if scale is None:
                us = np.floor_divide(v, 1000)
            else:
                lim = np.iinfo(np.int64).max // scale
                if (np.abs(v) > lim).any():
                    row = int(np.flatnonzero(np.abs(v) > lim)[0])
                    _fail("time out of range", column=name, row=row, rule="time out of range")
                us = v * scale
            arr = _timestamps(us, np.asarray(arr.is_null()) if arr.null_count else None)
        v = np.asarray(arr.cast(pa.int64()).fill_null(0), np.int64)
        bad = (v < MIN_TIME_US) | (v > MAX_TIME_US)
        if arr.null_count:  # a null (read as 0 above) is never out of range
            bad &= ~np.asarray(arr.is_null())
        if bad.any():
            _fail("time outside years 1..9999", column=name, row=int(np.flatnonzero(bad)[0]), rule="time out of range")
        return arr
    # list<string>
    if pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t) or not pa.types.is_string(t.value_type):
        arr = arr.cast(pa.list_(pa.string()))
    flat = arr.flatten() if arr.offset or arr.null_count else arr.values
    if flat.null_count:
        # the row of the first null element
        vals = arr.values
        offs = np.asarray(arr.offsets)
        el = int(np.flatnonzero(np.asarray(vals.is_null()))[0])
        row = int(np.searchsorted(offs, el, side="right") - 1)
        _fail("a null inside a list (drop it, or make the row's list null)", column=name, row=row, rule="wrong type")
    return arr


def core_part(col_index: int, kind: str, arr: pa.Array) -> tuple:
    """A normalized column as ``Store.append_user`` takes it: (col, idx, dict_offsets,
    dict_data, list_offsets, i64, f64, b, valid), None where the kind has no such array."""
    n = len(arr)
    valid = np.asarray(arr.is_valid(), np.uint8) if arr.null_count else None
    if kind in ("string", "list<string>"):
        if kind == "list<string>":
            if arr.offset:
                arr = pa.concat_arrays([arr])  # offsets from 0
            offs = np.asarray(arr.offsets, np.int64)
            offs = offs - offs[0]
            values = arr.values.slice(int(arr.offsets[0].as_py()), int(offs[-1])) if n else pa.array([], pa.string())
        else:
            offs, values = None, arr
        enc = pc.dictionary_encode(values) if len(values) else pa.DictionaryArray.from_arrays(
            pa.array([], pa.int32()), pa.array([], pa.string()))
        idx = np.asarray(enc.indices.cast(pa.int32()).fill_null(-1), np.int32)
        d = enc.dictionary
        if d.offset or not pa.types.is_string(d.type):
            d = pa.concat_arrays([d.cast(pa.string())])
        _, doff, ddata = d.buffers()
        do = np.frombuffer(doff, np.int32)[: len(d) + 1].copy() if doff is not None else np.zeros(1, np.int32)
        dd = np.frombuffer(ddata, np.uint8).copy() if ddata is not None else np.zeros(0, np.uint8)
        return (col_index, idx, do, dd, offs, None, None, None, valid)
    if kind in ("int64", "timestamp"):
        v = np.asarray(arr.cast(pa.int64()).fill_null(0), np.int64)
        return (col_index, None, None, None, None, v, None, None, valid)
    if kind == "float64":
        v = np.asarray(arr.fill_null(0.0), np.float64)
        return (col_index, None, None, None, None, None, v, None, valid)
    v = np.asarray(arr.fill_null(False), np.uint8)
    return (col_index, None, None, None, None, None, None, v, valid)


def arrow_of(taken: tuple) -> pa.Array:
    """``Store.user_take``'s answer (kind code, values, validity) as an Arrow array of
    :data:`ARROW_TYPES`."""
    code, values, valid = taken
    kind = _KIND_NAMES[code]
    if kind == "string":
        return string_array(values[0], values[1], valid)
    bitmap = None if valid is None else pa.py_buffer(np.packbits(np.asarray(valid, bool), bitorder="little"))
    if kind == "list<string>":  # from the buffers, as the strings are: no conversion of the offsets
        lo, off, data = values
        return pa.ListArray.from_buffers(ARROW_TYPES[kind], len(lo) - 1, [bitmap, pa.py_buffer(lo)],
                                         children=[string_array(off, data, None)])
    if kind == "bool":
        mask = None if valid is None else ~np.asarray(valid, bool)
        return pa.array(values, pa.bool_(), mask=mask)
    # int64, timestamp (µs), float64: the values' buffer as it is
    v = np.ascontiguousarray(values)
    return pa.Array.from_buffers(ARROW_TYPES[kind], len(v), [bitmap, pa.py_buffer(v)])


def close_builtin(name: str, builtin: tuple) -> str | None:
    """The engine column ``name`` is likely a typo of, or None."""
    close = difflib.get_close_matches(name, builtin, n=1, cutoff=0.8)
    return close[0] if close else None
