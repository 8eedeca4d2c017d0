"""Column containers users pass in (Arrow, NumPy, pandas, polars, Python lists), brought to one of
three canonical forms that the converters of :mod:`.schema` and :mod:`._time` read.

Internal: no public names. Knows nothing about errors; callers check what they need.
"""
from __future__ import annotations

import datetime as _dt
import sys
from typing import Any

import numpy as np
import pyarrow as pa

# what a failed Arrow conversion of user data raises
ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError,
                ValueError, OverflowError)


def numpy_dtype(t: pa.DataType) -> np.dtype:
    """The NumPy dtype of a primitive Arrow type (``DataType.to_pandas_dtype`` needs pandas
    with pyarrow < 26, which the core does not depend on)."""
    return pa.array([], t).to_numpy(zero_copy_only=False).dtype


def pandas_type(obj: Any, name: str):
    """pandas' class ``name`` if pandas is imported (it is optional: if it is not imported,
    ``obj`` is not a pandas object), else None."""
    pd = sys.modules.get("pandas")
    return getattr(pd, name, None) if pd is not None else None


def is_dataframe(obj: Any) -> bool:
    cls = pandas_type(obj, "DataFrame")
    return cls is not None and isinstance(obj, cls)


def is_series(obj: Any) -> bool:
    cls = pandas_type(obj, "Series")
    return cls is not None and isinstance(obj, cls)


def polars_type(name: str):
    """polars' class ``name`` if polars is imported (else no object can be a polars one)."""
    pl = sys.modules.get("polars")
    return getattr(pl, name, None) if pl is not None else None


def is_polars(obj: Any, name: str = "DataFrame") -> bool:
    cls = polars_type(name)
    return cls is not None and isinstance(obj, cls)


def frame_kind(obj: Any) -> str | None:
    """"pandas" or "polars" for a DataFrame of either, else None."""
    return "pandas" if is_dataframe(obj) else "polars" if is_polars(obj) else None


def frame_to_arrow(obj: Any) -> pa.Table:
    """A pandas or polars DataFrame as an Arrow table: polars' ``to_arrow`` (zero-copy for
    its numeric, temporal and list columns), pandas' columns by ``pa.Table.from_pandas``
    without the index (zero-copy where NumPy's layout is Arrow's)."""
    if is_polars(obj):
        return obj.to_arrow()
    return pa.Table.from_pandas(obj, preserve_index=False)


def as_frame(table: pa.Table, kind: str | None) -> Any:
    """``table`` in the kind of frame a caller passed: pandas (``to_pandas``), polars
    (``polars.from_arrow``, zero-copy) or, for anything else, the Arrow table itself."""
    if kind == "pandas":
        return table.to_pandas()
    if kind == "polars":
        return sys.modules["polars"].from_arrow(table)
    return table


def combine(ch: pa.ChunkedArray) -> pa.Array:
    """One Array from a ChunkedArray (zero-copy when it has a single chunk)."""
    if ch.num_chunks == 1:
        return ch.chunk(0)
    if ch.num_chunks == 0:
        return pa.array([], type=ch.type)
    return ch.combine_chunks()


def _arrow_from_objects(items: Any, **kw) -> pa.Array:
    """``pa.array`` of Python objects, refusing one lossy inference: Arrow types a sequence
    that starts with a ``date`` as date32 and then truncates any ``datetime`` in it to its
    day (a ``datetime`` is a ``date``). Such a mix is left to the caller's per-object path."""
    arr = pa.array(items, **kw)
    if pa.types.is_date(arr.type) and any(isinstance(x, _dt.datetime) for x in items):
        raise TypeError("dates mixed with datetimes")
    return arr


def canonical(col: Any):
    """One column as a ``pa.Array`` (dictionaries decoded), a non-object ``np.ndarray`` (of
    any ndim: the caller checks the shape) or a list of Python objects (only when Arrow
    could not convert it in one go: mixed types, so that a converter can name the bad row).

    Object columns (pandas ``object`` dtype, NumPy object arrays) follow pandas'
    missing-value convention: None, NaN and NaT are null.
    """
    if is_polars(col, "Series"):
        col = col.to_arrow()  # zero-copy where polars' buffers are Arrow's
    if isinstance(col, pa.ChunkedArray):
        col = combine(col)
    if isinstance(col, pa.Array):
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        return col
    if is_series(col):
        dt = col.dtype
        if isinstance(dt, np.dtype) and dt.kind in "biufM":
            return col.to_numpy()
        try:
            return canonical(_arrow_from_objects(col, from_pandas=True))
        except ARROW_ERRORS:
            return list(col)
    if isinstance(col, np.ndarray):
        if col.ndim != 1:
            return col
        if col.dtype.kind == "O":
            try:
                return canonical(_arrow_from_objects(col, from_pandas=True))
            except ARROW_ERRORS:
                return col.tolist()
        if col.dtype.kind in "US":
            return pa.array(col)
        return col
    items = list(col)
    try:
        return canonical(_arrow_from_objects(items))
    except ARROW_ERRORS:
        return items


def string_array(offsets: np.ndarray, data: np.ndarray, valid: Any) -> pa.Array:
    """An Arrow string array of (int32 offsets, uint8 data, bool validity or None) buffers,
    zero-copy (the core's answers: stem names, string columns, metadata strings)."""
    bitmap = None if valid is None else pa.py_buffer(np.packbits(np.asarray(valid, bool), bitorder="little"))
    return pa.StringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data), bitmap)
