"""Ingest schema: user rows in, validated columnar arrays out.

:func:`normalize_rows` is the single gate every ingested batch goes through. It accepts a
``pyarrow.Table`` or ``RecordBatch``, a pandas ``DataFrame``, a dict of column -> array or
list, or a list of row dicts, checks every rule of the data model (``docs/data-model.md``)
and returns an :class:`IngestBatch` of NumPy arrays the core ingests as they are.

>>> import numpy as np
>>> from chrono_engine.schema import normalize_rows
>>> batch = normalize_rows({"vector": np.eye(2, dtype=np.float32),
...                         "valid_from": ["2024-03-01", "2024-03-01T12:00:00+08:00"]},
...                        dim=2, metric="cosine", known_fact_type=lambda t: True,
...                        now_us=1_700_000_000_000_000)
>>> batch.n, batch.valid_from.dtype
(2, dtype('int64'))

Columns
-------
Required: ``vector`` and ``valid_from``. Optional: ``content``, ``valid_to``,
``observed_at``, ``ingested_at``, ``retracted_at``, ``reliability``, ``fact_type``,
``stem_id``, ``version``, ``supersedes``, ``deprecated``, ``title``, ``source``, ``modality``
and ``id``. Any other name is an error (so a typo such as ``valid_form`` is caught), except
the ``__index_level_N__`` columns pandas leaves in Arrow tables, which are ignored.

Where a column allows nulls, a null means its default: ``valid_to`` / ``retracted_at`` null
= open (stored as ``INT64_MAX``); ``reliability`` null = 1.0; ``fact_type`` null =
``"general"``; ``deprecated`` null = False; string columns stay null. ``vector``,
``valid_from``, ``observed_at``, ``ingested_at`` and ``id`` never take nulls. Object columns
(pandas ``object`` dtype, NumPy object arrays) follow pandas' missing-value convention: None,
NaN and NaT are null. Float columns of plain NumPy dtype keep NaN as a value (so a NaN
reliability is rejected, not defaulted).

Times
-----
Every time column comes out as int64 microseconds since the Unix epoch, UTC. Accepted:
Arrow ``timestamp`` of any unit (time-zone aware values are UTC instants already; *naive
timestamps are read as UTC*), Arrow ``date32`` / ``date64`` (midnight UTC), NumPy
``datetime64`` of any unit (NaT = null), Python ``datetime`` / pandas ``Timestamp`` (naive =
UTC, aware converted to UTC), ``date``, ISO-8601 strings (``"2024-03-01"``,
``"2024-03-01 12:00"``, ``"2024-03-01T12:00:00.5+08:00"``, ``"...Z"``; no offset = UTC) and
integers (microseconds since the epoch; integral floats too, NaN = null). Sub-microsecond
precision is floored. Times must fall within years 1..9999; the single exception is the
integer ``INT64_MAX`` in ``valid_to`` / ``retracted_at``, which means "open" as it does in
the core.

Rules
-----
Every violation raises :class:`~chrono_engine.errors.SchemaError` with ``column``, ``row``
(0-based position in the batch of the first offending row; None when the whole column or
input is wrong) and ``rule``, one of :data:`RULES`; the message reads
``"column 'valid_to', row 3: valid_to must be after valid_from (valid_to <= valid_from)"``.
Only the first violation found is reported; columns are checked in the order of
:data:`COLUMNS`, each cross-column rule right after the later of its two columns.

Performance: every check is vectorised (NumPy / Arrow compute); Python-level loops happen
only over inputs that are already Python objects (a list of dicts, lists of mixed types),
and over the distinct values of ``fact_type`` / ``version``.
"""
from __future__ import annotations

import datetime as _dt
import itertools
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._args import arrow_type, float32_rows, holds_bools, holds_containers, shown
from ._columns import ARROW_ERRORS, combine, is_dataframe, is_polars, is_series
from ._time import MAX_TIME_US, MIN_TIME_US, OPEN_END, TimeInputError, column_us, scalar_column
from . import metadata as _metadata
from .errors import ArgumentTypeError, ConfigError, SchemaError

__all__ = ["IngestBatch", "normalize_rows", "parse_version", "format_version",
           "COLUMNS", "REQUIRED_COLUMNS", "STORAGE_SCHEMA", "RULES", "OPEN_END",
           "MIN_TIME_US", "MAX_TIME_US", "DEFAULT_FACT_TYPE"]

DEFAULT_FACT_TYPE = "general"

#: Every column an ingested batch may carry, in the order they are checked.
COLUMNS = ("id", "vector", "valid_from", "valid_to", "observed_at", "ingested_at",
           "retracted_at", "reliability", "fact_type", "stem_id", "version", "supersedes",
           "deprecated", "content", "title", "source", "modality")
REQUIRED_COLUMNS = ("vector", "valid_from")

#: Schema of :attr:`IngestBatch.table` (string and provenance columns kept for storage).
STORAGE_SCHEMA = pa.schema([(name, pa.string()) for name in (
    "content", "title", "source", "modality", "fact_type", "stem_id", "version", "supersedes")])

#: The ``rule`` strings :class:`SchemaError` carries.
RULES = ("unsupported input", "empty", "unknown column", "duplicate column", "missing column",
         "column length", "wrong type", "null in required column", "vector dimension",
         "non-finite vector", "zero vector", "bad time string", "time out of range",
         "valid_to <= valid_from", "retracted_at <= ingested_at", "reliability out of range",
         "unknown fact type policy", "bad version string", "duplicate id", "automatic ids exhausted",
         "outside where")

_VECTOR_BLOCK = 16384          # rows per block for norms: keeps temporaries in cache-sized slabs
_VECTOR_ROWS = pa.list_(pa.float64())


def _fail(detail: str, *, rule: str, column: str | None = None, row: int | None = None):
    if column is not None and row is not None:
        where = f"column '{column}', row {row}: "
    elif column is not None:
        where = f"column '{column}': "
    else:
        where = ""
    raise SchemaError(f"{where}{detail} ({rule})", column=column, row=row, rule=rule)


# --------------------------------------------------------------------------- version strings

# At most 5 significant digits per component keeps the Arrow cast below from overflowing;
# leading zeros are allowed ("v01" == "v1"). [0-9], not \d: Python's \d matches any Unicode digit.
def _version_pattern(named: bool) -> str:
    comps = [rf"0*(?P<c{i}>[0-9]{{1,5}})" if named else r"0*([0-9]{1,5})" for i in range(4)]
    return rf"[vV]?{comps[0]}(?:\.{comps[1]})?(?:\.{comps[2]})?(?:\.{comps[3]})?"


_VERSION_RE = re.compile(_version_pattern(named=False))
_VERSION_ARROW_RE = "^" + _version_pattern(named=True) + "$"   # RE2: $ is end of text
_COMPONENT_LIMIT = 1 << 16


def parse_version(s: str) -> int:
    """Numeric sort key of a version string.

    Up to four dot-separated non-negative integers, each below 65536, with an optional
    leading ``v`` / ``V`` and nothing else; missing components are 0 and the components are
    packed big-endian, 16 bits each, into one uint64. So ``"v2" == "v2.0.0"`` and
    ``"v10" > "v9"``:

    >>> parse_version("v2.1") == parse_version("2.1.0.0") == (2 << 48) | (1 << 32)
    True
    >>> parse_version("v10") > parse_version("v9.9.9")
    True

    Raises :class:`SchemaError` (rule ``"bad version string"``) for anything else, e.g.
    ``"2.x"``, ``"-1"``, ``""``, ``"1.0-rc1"`` or five components.
    """
    if not isinstance(s, str):
        _fail(f"version must be a string, got {type(s).__name__}", column="version",
              rule="wrong type")
    m = _VERSION_RE.fullmatch(s)
    parts = [int(g) if g else 0 for g in m.groups()] if m else None
    if parts is None or any(p >= _COMPONENT_LIMIT for p in parts):
        _fail(f"{shown(s)} is not a version: expected up to 4 dot-separated integers below 65536 "
              "with an optional leading 'v'", column="version", rule="bad version string")
    return (parts[0] << 48) | (parts[1] << 32) | (parts[2] << 16) | parts[3]


def format_version(key: int) -> str:
    """Inverse of :func:`parse_version` in canonical form: ``"v2.1.0"``, with a fourth
    component only when it is non-zero.

    >>> format_version(parse_version("2.1")), format_version(parse_version("1.2.3.4"))
    ('v2.1.0', 'v1.2.3.4')
    """
    key = int(key)
    if not 0 <= key < 1 << 64:
        raise SchemaError(f"version key {key} is outside uint64", column="version", rule="bad version string")
    parts = [(key >> shift) & 0xFFFF for shift in (48, 32, 16, 0)]
    if parts[3] == 0:
        parts = parts[:3]
    return "v" + ".".join(map(str, parts))


def _version_keys(arr: pa.Array, column: str) -> np.ndarray:
    """uint64 keys of a string column (null -> 0); parses each distinct value once."""
    n = len(arr)
    keys = np.zeros(n, dtype=np.uint64)
    if arr.null_count == n:
        return keys
    enc = pc.dictionary_encode(arr)
    uniq = enc.dictionary
    codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    ok = np.array(pc.match_substring_regex(uniq, _VERSION_ARROW_RE).to_numpy(
        zero_copy_only=False), dtype=bool)
    parts = pc.extract_regex(uniq.filter(pa.array(ok)) if not ok.all() else uniq,
                             _VERSION_ARROW_RE)
    ukeys = np.zeros(len(uniq), dtype=np.uint64)
    packed = np.zeros(len(parts), dtype=np.uint64)
    too_big = np.zeros(len(parts), dtype=bool)
    for i, shift in enumerate((48, 32, 16, 0)):
        digits = parts.field(f"c{i}")
        digits = pc.if_else(pc.equal(digits, ""), "0", digits)
        comp = pc.cast(digits, pa.uint64()).to_numpy(zero_copy_only=False)
        too_big |= comp >= _COMPONENT_LIMIT
        packed |= comp << np.uint64(shift)
    ok_idx = np.flatnonzero(ok)
    ok[ok_idx[too_big]] = False
    ukeys[ok_idx] = packed
    if not ok.all():
        bad_codes = np.flatnonzero(~ok)
        row = int(np.flatnonzero(np.isin(codes, bad_codes))[0])
        _fail(f"{shown(arr[row].as_py())} is not a version: expected up to 4 dot-separated "
              "integers below 65536 with an optional leading 'v'",
              column=column, row=row, rule="bad version string")
    valid = codes >= 0
    keys[valid] = ukeys[codes[valid]]
    return keys


# --------------------------------------------------------------------------- input containers

def columns_of(rows: Any) -> dict[str, Any]:
    """Split the supported containers into name -> column (not yet converted): a pyarrow
    Table or RecordBatch, a pandas or polars DataFrame, a dict of columns, a list of row
    dicts (whose keys must be columns the data model knows). SchemaError otherwise, or for
    a column named twice."""
    if isinstance(rows, (pa.Table, pa.RecordBatch)):
        names = list(rows.column_names)
        cols = {}
        for i, name in enumerate(names):
            if name in cols:
                _fail(f"column {name!r} appears more than once", column=name,
                      rule="duplicate column")
            cols[name] = rows.column(i)
        return cols
    if is_dataframe(rows):
        cols = {}
        for i, name in enumerate(rows.columns):
            if name in cols:
                _fail(f"column {name!r} appears more than once", column=str(name),
                      rule="duplicate column")
            cols[name] = rows.iloc[:, i]
        return cols
    if is_polars(rows):
        try:  # zero-copy for polars' numeric, temporal and list columns
            table = rows.to_arrow()
        except Exception as e:  # noqa: BLE001 - polars raises its own kinds (an Object column)
            _fail(f"the polars DataFrame does not convert to Arrow: {shown(str(e))}", rule="unsupported input")
        return columns_of(table)
    if is_polars(rows, "LazyFrame"):
        _fail("rows is a polars LazyFrame: collect() it first", rule="unsupported input")
    if isinstance(rows, Mapping):  # polars Series as Arrow arrays (zero-copy where polars allows)
        return {k: v.to_arrow() if is_polars(v, "Series") else v for k, v in rows.items()}
    if isinstance(rows, (list, tuple)):
        return _records_to_columns(rows)
    _fail(f"rows must be a pyarrow Table or RecordBatch, a pandas or polars DataFrame, a dict of "
          f"columns or a list of row dicts, got {type(rows).__name__}", rule="unsupported input")


# the most cells (metadata keys x rows) a list of row dicts may make
_MAX_SPARSE_CELLS = 1 << 24

# the columns pandas adds for an index (dropped)
_INDEX_LEVEL = re.compile(r"__index_level_\d+__")


def _check_names(names: Any, metadata: Any = None) -> None:
    """Every column name a string; one the data model knows (pandas' index columns aside)
    or a user metadata column (:mod:`chrono_engine.metadata`): SchemaError naming the first
    that is neither. ``metadata``: the store's metadata columns (None: names are checked
    only for being strings and for their count, as a list of row dicts is read). A new
    name close to an engine column (``valid_form``) is taken for a typo, unless the store
    has (or declared) a metadata column of that name."""
    extra = 0
    for name in names:
        if not isinstance(name, str):
            _fail(f"column names must be strings, got {shown(name)}", rule="unsupported input")
        if name not in COLUMNS:
            extra += 1
    if extra > _metadata.MAX_COLUMNS:
        _fail(f"{extra} columns beyond the engine's own; a store keeps at most {_metadata.MAX_COLUMNS} metadata "
              "columns", rule="unknown column")
    if metadata is None:
        return
    for name in names:
        if name in COLUMNS or _INDEX_LEVEL.fullmatch(name) or name in metadata:
            continue
        close = _metadata.close_builtin(name, COLUMNS)
        if close is not None:
            _fail(f"unknown column {shown(name)}; did you mean {close!r}? (a metadata column of this name must "
                  "be declared: Engine(metadata={...}))", column=name, rule="unknown column")
        _metadata.check_name(name)


def _records_to_columns(records) -> dict[str, Any]:
    for i, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            _fail(f"row {i} is a {type(rec).__name__}, expected a dict of column -> value",
                  row=i, rule="unsupported input")
    if not records:
        return {}
    # the rows' keys checked first (one pass): n rows with a key each of their own made a
    # table of n columns by n rows, nearly all nulls (10,000 rows: 9 s; 100,000 ran out of
    # memory), only for the first unknown column to be refused afterwards
    keys = dict.fromkeys(k for rec in records for k in rec)
    _check_names(keys)
    extra = sum(1 for k in keys if k not in COLUMNS)
    if extra * len(records) > _MAX_SPARSE_CELLS:  # sparse metadata: each row a key of its own
        _fail(f"{len(records)} rows with {extra} distinct metadata keys would make a table of "
              f"{extra * len(records):,} cells (at most {_MAX_SPARSE_CELLS:,}); give the rows as columns",
              rule="unknown column")
    if all(type(r) is dict for r in records):
        # One columnar conversion; Arrow's struct inference unions the keys of all rows. It
        # recurses into nested values (see chrono_engine._args.holds_containers), so it gets
        # the rows without their vectors, and only when no other value is a container; the
        # vectors are converted to their known type, which infers nothing.
        rest = [r if "vector" not in r else {k: v for k, v in r.items() if k != "vector"} for r in records]
        try:
            flat = not holds_containers(itertools.chain.from_iterable(map(dict.values, rest)))
            struct = pa.array(rest) if flat else None
        except ARROW_ERRORS:
            struct = None
        if struct is not None and pa.types.is_struct(struct.type):
            cols = {struct.type.field(i).name: struct.field(i) for i in range(struct.type.num_fields)}
            for name, col in cols.items():  # a date field may hide datetimes truncated to their day
                if pa.types.is_date(col.type):
                    values = [rec.get(name) for rec in records]
                    if any(isinstance(v, _dt.datetime) for v in values):
                        cols[name] = values
            if any("vector" in rec for rec in records):
                vectors = [rec.get("vector") for rec in records]
                native = float32_rows(vectors)  # lists of floats; a boolean among them: Arrow would make it 1.0
                typed = native if native is not None or holds_bools(vectors) else _typed_vectors(vectors)
                cols["vector"] = vectors if typed is None else typed
            return cols
    # Mixed types within a column: keep Python objects so each column can name its bad row.
    keys = dict.fromkeys(k for rec in records for k in rec)
    return {k: [rec.get(k) for rec in records] for k in keys}


def _typed_vectors(rows: list) -> pa.Array | None:
    """Per-row vectors as ``list<double>`` (nulls kept), or None when a row is not a flat
    sequence of numbers. The type is given, so Arrow infers nothing and never recurses
    into a nested row (its inference overflows the C stack on a deeply nested one)."""
    try:
        return pa.array(rows, type=_VECTOR_ROWS)
    except ARROW_ERRORS:
        return None


def column_length(name: str, col: Any) -> int:
    """The number of rows of column ``name`` (an Arrow, NumPy or pandas column, or a list);
    SchemaError "wrong type" for anything else, a 0-d array included."""
    if isinstance(col, (pa.Array, pa.ChunkedArray)):
        return len(col)
    if isinstance(col, np.ndarray):
        if col.ndim == 0:
            _fail("expected an array or list, got a 0-d array", column=name, rule="wrong type")
        return col.shape[0]
    if is_series(col) or isinstance(col, (list, tuple)):
        return len(col)
    _fail(f"expected an array or list, got {type(col).__name__}", column=name, rule="wrong type")


def canonical_column(name: str, col: Any):
    """One column as a pa.Array, a non-object 1-D np.ndarray, or a list of Python objects
    (:func:`._time.scalar_column`); SchemaError "wrong type" for an array of another shape."""
    col = scalar_column(col)
    if isinstance(col, np.ndarray) and col.ndim != 1:
        _fail(f"expected a 1-D column, got shape {col.shape}", column=name, rule="wrong type")
    return col


def _first_valid_row(arr: pa.Array) -> int | None:
    if arr.null_count == 0:
        return 0
    valid = np.flatnonzero(~_nulls(arr))
    return int(valid[0]) if len(valid) else None


def _nulls(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return arr.is_null().to_numpy(zero_copy_only=False)


def _all_null(col) -> bool:
    return isinstance(col, pa.Array) and col.null_count == len(col)


def _wrong_arrow_type(name: str, arr: pa.Array, expected: str):
    _fail(f"expected {expected}, got Arrow type {arrow_type(arr.type)}", column=name,
          row=_first_valid_row(arr), rule="wrong type")


def _first_null(name: str, nulls: np.ndarray | None, what: str = "may not be null"):
    if nulls is not None and nulls.any():
        row = int(np.flatnonzero(nulls)[0])
        _fail(f"{name} {what}", column=name, row=row, rule="null in required column")


# --------------------------------------------------------------------------- vectors

def _vectors(col: Any, n: int, dim: int, cosine: bool) -> np.ndarray:
    name = "vector"
    if isinstance(col, pa.ChunkedArray):
        col = combine(col)
    if is_series(col):
        col = col.to_numpy()
    if isinstance(col, np.ndarray) and col.dtype.kind == "O":
        col = list(col)
    if isinstance(col, (list, tuple)):
        col = _vector_list(col, dim)
    if isinstance(col, pa.Array):
        mat = _vector_arrow(col, n, dim)
    elif isinstance(col, np.ndarray):
        if col.ndim != 2:
            _fail(f"expected a 2-D array of shape (n, {dim}), got shape {col.shape}",
                  column=name, rule="wrong type")
        if col.dtype.kind not in "fiu":
            _fail(f"vector values must be numbers, got dtype {col.dtype}", column=name, row=0,
                  rule="wrong type")
        if col.shape[1] != dim:
            _fail(f"vector has {col.shape[1]} components, expected dim={dim}", column=name,
                  row=0, rule="vector dimension")
        mat = col
    else:  # pragma: no cover - _vector_list always returns an array or raises
        _fail(f"unsupported vector column {type(col).__name__}", column=name, rule="wrong type")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow shows up as inf, checked below
        mat = np.ascontiguousarray(mat, dtype=np.float32)
    return _check_and_normalise(mat, cosine)


def _vector_list(rows, dim: int):
    """A list of per-row vectors: natively where every row is a list of Python floats
    (:func:`~chrono_engine._args.float32_rows`), else one NumPy conversion, or find the row
    that spoils it (a boolean among the numbers included: NumPy and Arrow read it as 1)."""
    mat = float32_rows(rows)
    if mat is not None:
        return mat
    if holds_bools(rows):
        row = next(i for i, r in enumerate(rows) if holds_bools(r))
        _fail("vector values must be numbers, got a boolean", column="vector", row=row, rule="wrong type")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mat = np.asarray(rows)
        if mat.ndim == 2 and mat.dtype.kind in "fiu":
            return mat
    except (ValueError, TypeError):
        pass
    arr = _typed_vectors(rows)  # ragged rows or null values: the Arrow path names the row
    if arr is not None:
        return arr
    for i, r in enumerate(rows):  # only reached for malformed input: name the first bad row
        if r is None:
            _fail("vector may not be null", column="vector", row=i,
                  rule="null in required column")
        try:
            v = np.asarray(r)
        except (ValueError, TypeError):
            v = None
        if v is None or v.ndim != 1 or v.dtype.kind not in "fiu":
            _fail(f"vector must be a sequence of numbers, got {type(r).__name__}",
                  column="vector", row=i, rule="wrong type")
        if v.shape[0] != dim:
            _fail(f"vector has {v.shape[0]} components, expected dim={dim}", column="vector",
                  row=i, rule="vector dimension")
    _fail("vector column could not be converted", column="vector", rule="wrong type")


def _vector_arrow(arr: pa.Array, n: int, dim: int) -> np.ndarray:
    name = "vector"
    t = arr.type
    if not (pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)):
        _wrong_arrow_type(name, arr, f"fixed_size_list<float32>[{dim}] or a list of numbers")
    vt = t.value_type
    if not (pa.types.is_floating(vt) or pa.types.is_integer(vt)):
        _wrong_arrow_type(name, arr, "a list of numbers")
    _first_null(name, _nulls(arr))
    if pa.types.is_fixed_size_list(t):
        if t.list_size != dim:
            _fail(f"vector has {t.list_size} components, expected dim={dim}", column=name,
                  row=0, rule="vector dimension")
    else:
        lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
        bad = lengths != dim
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            _fail(f"vector has {lengths[row]} components, expected dim={dim}", column=name,
                  row=row, rule="vector dimension")
    values = arr.flatten()
    if values.null_count:
        row = int(np.flatnonzero(_nulls(values))[0]) // dim
        _fail("vector has a null component", column=name, row=row, rule="non-finite vector")
    return values.to_numpy(zero_copy_only=False).reshape(n, dim)


def _check_and_normalise(mat: np.ndarray, cosine: bool) -> np.ndarray:
    """Finite check (and, for cosine, zero check and unit scaling) in row blocks.

    A float32 sum of squares is finite iff every component is, except when huge finite
    values overflow it or tiny ones underflow it; those rows are re-checked in float64.
    """
    n = mat.shape[0]
    out = np.empty_like(mat) if cosine else mat
    for start in range(0, n, _VECTOR_BLOCK):
        block = mat[start:start + _VECTOR_BLOCK]
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            sq = np.einsum("ij,ij->i", block, block)
        odd = ~np.isfinite(sq) | (sq < 1e-30) | (sq > 1e30)
        if odd.any():
            idx = np.flatnonzero(odd)
            sub = block[idx].astype(np.float64)
            finite = np.isfinite(sub).all(axis=1)
            if not finite.all():
                row = start + int(idx[np.flatnonzero(~finite)[0]])
                _fail("vector has a non-finite component (NaN, inf, or a value beyond "
                      "float32 range)", column="vector", row=row, rule="non-finite vector")
            sq64 = np.einsum("ij,ij->i", sub, sub)
            if cosine and (sq64 == 0).any():
                row = start + int(idx[np.flatnonzero(sq64 == 0)[0]])
                _fail("vector is all zeros; cosine similarity needs a non-zero vector",
                      column="vector", row=row, rule="zero vector")
        if cosine:
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                inv = (1.0 / np.sqrt(sq)).astype(np.float32)
                np.multiply(block, inv[:, None], out=out[start:start + _VECTOR_BLOCK])
            if odd.any():  # scale extreme rows in float64 so 1/norm cannot overflow
                out[start + idx] = (sub / np.sqrt(sq64)[:, None]).astype(np.float32)
    return out


# --------------------------------------------------------------------------- times

def _times(name: str, col: Any, *, nullable: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """A time column -> (int64 µs, null mask or None); nulls left as 0 for the caller.
    The conversion rules are :mod:`chrono_engine._time`'s (stored times: years 1..9999, and
    ``OPEN_END`` as an integer where the column may be open)."""
    try:
        return column_us(name, col, nullable=nullable, stored=True, open_end=nullable)
    except TimeInputError as e:
        _fail(e.detail, column=e.name, row=e.row, rule=e.rule)


# --------------------------------------------------------------------------- other columns

def _reliability(col: Any, n: int) -> np.ndarray:
    name = "reliability"
    if col is None or _all_null(col):
        return np.ones(n, dtype=np.float32)
    nulls = None
    if isinstance(col, pa.Array):
        if not (pa.types.is_floating(col.type) or pa.types.is_integer(col.type)):
            _wrong_arrow_type(name, col, "numbers in (0, 1]")
        nulls = _nulls(col) if col.null_count else None
        vals = col.to_numpy(zero_copy_only=False).astype(np.float64)
    elif isinstance(col, np.ndarray):
        if col.dtype.kind not in "fiu":
            _fail(f"expected numbers in (0, 1], got dtype {col.dtype}", column=name, row=0,
                  rule="wrong type")
        vals = col.astype(np.float64, copy=False)
    else:
        vals = np.ones(n, dtype=np.float64)
        nulls = np.zeros(n, dtype=bool)
        for i, x in enumerate(col):
            if x is None:
                nulls[i] = True
            elif isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.number)):
                _fail(f"expected a number in (0, 1], got {type(x).__name__} {shown(x)}",
                      column=name, row=i, rule="wrong type")
            else:
                try:
                    vals[i] = float(x)
                except OverflowError:  # an int beyond the float range: out of (0, 1] below
                    vals[i] = np.inf
    if nulls is not None:
        vals = np.where(nulls, 1.0, vals)
    with np.errstate(under="ignore"):
        out = vals.astype(np.float32)
    bad = ~((vals > 0) & (vals <= 1)) | (out <= 0)  # NaN fails both comparisons
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        _fail(f"reliability must be in (0, 1], got {vals[row].item()!r}", column=name, row=row,
              rule="reliability out of range")
    return out


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strings(name: str, col: Any, n: int) -> pa.Array:
    """A nullable string column as pa.string()."""
    if col is None:
        return pa.nulls(n, pa.string())
    if isinstance(col, np.ndarray):
        _fail(f"expected strings, got dtype {col.dtype}", column=name, row=0, rule="wrong type")
    if isinstance(col, list):
        for i, x in enumerate(col):
            if x is not None and not isinstance(x, str):
                _fail(f"expected a string, got {type(x).__name__} {shown(x)}", column=name, row=i,
                      rule="wrong type")
        try:
            return pa.array(col, type=pa.string())
        except UnicodeError:  # Arrow keeps UTF-8: name the first string that has no encoding
            for i, x in enumerate(col):
                if x is not None and not _encodes(x):
                    _fail(f"{shown(x)} is not valid Unicode text (a lone surrogate has no UTF-8 encoding)",
                          column=name, row=i, rule="wrong type")
            raise
    t = col.type
    if pa.types.is_null(t) or col.null_count == len(col):
        return pa.nulls(n, pa.string())
    if pa.types.is_string(t):
        return col
    if pa.types.is_large_string(t) or (hasattr(pa.types, "is_string_view")
                                       and pa.types.is_string_view(t)):
        return col.cast(pa.string())
    _wrong_arrow_type(name, col, "strings")


def _deprecated(col: Any, n: int) -> np.ndarray:
    name = "deprecated"
    if col is None or _all_null(col):
        return np.zeros(n, dtype=bool)
    if isinstance(col, np.ndarray):
        if col.dtype.kind != "b":
            _fail(f"expected booleans, got dtype {col.dtype}", column=name, row=0,
                  rule="wrong type")
        return col
    if isinstance(col, list):
        for i, x in enumerate(col):
            if x is not None and not isinstance(x, (bool, np.bool_)):
                _fail(f"expected a bool, got {type(x).__name__} {shown(x)}", column=name, row=i,
                      rule="wrong type")
        return np.array([bool(x) for x in col], dtype=bool)
    if not pa.types.is_boolean(col.type):
        _wrong_arrow_type(name, col, "booleans")
    return col.fill_null(False).to_numpy(zero_copy_only=False)


def _ids(col: Any, n: int) -> np.ndarray:
    name = "id"
    if isinstance(col, list):
        out = np.zeros(n, dtype=np.uint64)
        for i, x in enumerate(col):
            if x is None:
                _fail("id may not be null", column=name, row=i, rule="null in required column")
            ok = (isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
                  and 0 <= int(x) < 1 << 64)
            if not ok:
                _fail(f"id must be an integer in [0, 2**64), got {shown(x)}", column=name, row=i,
                      rule="wrong type")
            out[i] = int(x)
        return out
    if isinstance(col, pa.Array):
        _first_null(name, _nulls(col))  # first: a column of nulls only has Arrow's null type
        t = col.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            _wrong_arrow_type(name, col, "non-negative integers (uint64)")
        col = col.to_numpy(zero_copy_only=False)
    kind = col.dtype.kind
    if kind == "u":
        return col.astype(np.uint64, copy=False)
    if kind == "i":
        neg = col < 0
        if neg.any():
            row = int(np.flatnonzero(neg)[0])
            _fail(f"id must be non-negative, got {col[row]}", column=name, row=row,
                  rule="wrong type")
        return col.astype(np.uint64)
    if kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(col) | (col != np.floor(col)) | (col < 0) | (col >= 2.0 ** 64)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            _fail(f"id must be a non-negative integer, got {col[row].item()!r}", column=name,
                  row=row, rule="wrong type")
        return col.astype(np.uint64)
    _fail(f"expected non-negative integers (uint64), got dtype {col.dtype}", column=name, row=0,
          rule="wrong type")


def _check_unique_ids(ids: np.ndarray) -> None:
    if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):  # already strictly increasing
        return
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    dup = np.flatnonzero(s[1:] == s[:-1])
    if len(dup):
        # within a run of equal ids the stable sort keeps rows in order: order[dup + 1] are
        # repeats; the smallest of them is the first row whose id was already used
        repeats = order[dup + 1]
        k = int(np.argmin(repeats))
        row = int(repeats[k])
        first = int(order[np.searchsorted(s, s[dup[k]], side="left")])
        _fail(f"id {ids[row]} already used by row {first}", column="id", row=row,
              rule="duplicate id")


def _fact_types(col: Any, n: int, known: Callable[[str], bool] | None):
    name = "fact_type"
    arr = _strings(name, col, n)
    if arr.null_count:
        arr = arr.fill_null(DEFAULT_FACT_TYPE)
    enc = pc.dictionary_encode(arr)
    names = enc.dictionary.to_pylist()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    if known is not None:
        unknown = np.array([not known(t) for t in names], dtype=bool)
        if unknown.any():
            row = int(np.flatnonzero(unknown[codes])[0])
            _fail(f"the decay policy has no profile for fact type {names[codes[row]]!r}",
                  column=name, row=row, rule="unknown fact type policy")
    return np.asarray(names, dtype=object)[codes], arr, names, codes.astype(np.int32)


def _stem_codes(arr: pa.Array) -> tuple[list, np.ndarray]:
    """Distinct stem ids and int32 codes into them (-1 = no stem)."""
    if arr.null_count == len(arr):
        return [], np.full(len(arr), -1, dtype=np.int32)
    enc = pc.dictionary_encode(arr)
    codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    return enc.dictionary.to_pylist(), codes


# --------------------------------------------------------------------------- the batch

def _first_seen(names: list, codes: np.ndarray | None, order: np.ndarray) -> tuple[list, np.ndarray | None]:
    """Dictionary ``names`` / ``codes`` (-1: none) of rows taken in ``order``, re-coded so
    that the names are in their first-seen order there."""
    if codes is None:
        return names, None
    codes = codes[order]
    present = codes >= 0
    old, first = np.unique(codes[present], return_index=True)
    old = old[np.argsort(first, kind="stable")]  # the names' codes by first appearance
    remap = np.full(len(names) + 1, -1, dtype=codes.dtype)
    remap[old] = np.arange(len(old), dtype=codes.dtype)
    return [names[i] for i in old], np.where(present, remap[codes], codes)


@dataclass(eq=False, repr=False)
class IngestBatch:
    """A validated batch, columnar, ready for the core.

    Times are int64 µs since the epoch (UTC); open ``valid_to`` / ``retracted_at`` are
    :data:`OPEN_END`. ``vector`` is float32, C-contiguous, shape ``(n, dim)``, unit length
    under the cosine metric. Arrays may share memory with the caller's input: treat them as
    read-only. ``table`` holds the string columns for storage (:data:`STORAGE_SCHEMA`).

    ``fact_type_names`` / ``fact_type_codes`` and ``stem_names`` / ``stem_codes`` are the
    same two columns dictionary-encoded (distinct values in first-seen order, int32 codes;
    stem code -1 = no stem), so callers can map them to their own codes without a per-row
    Python loop: ``remap = np.array([mine[t] for t in b.fact_type_names]);
    codes = remap[b.fact_type_codes]``.
    """

    n: int
    vector: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    observed_at: np.ndarray
    ingested_at: np.ndarray
    retracted_at: np.ndarray
    reliability: np.ndarray
    fact_type: np.ndarray
    stem_id: np.ndarray
    version_key: np.ndarray
    deprecated: np.ndarray
    ids: np.ndarray | None
    table: pa.Table
    fact_type_names: list = field(default_factory=list)
    fact_type_codes: np.ndarray | None = None
    stem_names: list = field(default_factory=list)
    stem_codes: np.ndarray | None = None
    #: user metadata columns: name -> (kind, Arrow array) (:mod:`chrono_engine.metadata`)
    metadata: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return self.n

    #: the per-row arrays (``table`` and the codes are per row too)
    ROW_ARRAYS = ("vector", "valid_from", "valid_to", "observed_at", "ingested_at", "retracted_at", "reliability",
                  "fact_type", "stem_id", "version_key", "deprecated")

    def take(self, order: np.ndarray) -> IngestBatch:
        """The batch's rows in ``order`` (a permutation of its rows), every column (given
        ids too) alike. The names of fact types and stems are listed in their first-seen
        order in ``order``, as :func:`normalize_rows` lists them for the reordered rows (a
        store's codes then follow its rows, whether the batch is written or replayed from
        the log)."""
        ft_names, ft_codes = _first_seen(self.fact_type_names, self.fact_type_codes, order)
        stem_names, stem_codes = _first_seen(self.stem_names, self.stem_codes, order)
        return replace(self, **{name: getattr(self, name)[order] for name in self.ROW_ARRAYS},
                       ids=None if self.ids is None else self.ids[order], table=self.table.take(order),
                       fact_type_names=ft_names, fact_type_codes=ft_codes, stem_names=stem_names,
                       stem_codes=stem_codes,
                       metadata={k: (kind, a.take(pa.array(order))) for k, (kind, a) in self.metadata.items()})

    def __repr__(self) -> str:
        return (f"IngestBatch(n={self.n}, dim={self.vector.shape[1]}, "
                f"ids={'given' if self.ids is not None else 'none'})")


def normalize_rows(rows: Any, *, dim: int, metric: str,
                   known_fact_type: Callable[[str], bool] | None, now_us: int,
                   metadata: Mapping[str, str] | None = None) -> IngestBatch:
    """Validate ``rows`` and convert them to an :class:`IngestBatch`.

    ``rows``: a pyarrow Table / RecordBatch, a pandas DataFrame, a dict of column -> array
    or list, or a list of row dicts. ``dim``: the vector width. ``metric``: under
    ``"cosine"`` vectors must be non-zero and are scaled to unit length.
    ``known_fact_type(name) -> bool`` says whether the decay policy has a profile for a fact
    type (None: every fact type is accepted). ``now_us``: the default ``ingested_at``.

    Raises :class:`~chrono_engine.errors.SchemaError` naming the column, the first
    offending row and the rule (see the module docstring and :data:`RULES`).
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim <= 0:
        raise ConfigError(f"dim must be a positive integer, got {shown(dim)}")
    if isinstance(now_us, bool) or not isinstance(now_us, (int, np.integer)):
        raise ArgumentTypeError(f"now_us must be an integer (µs since the epoch), got {shown(now_us)}")
    if not MIN_TIME_US <= int(now_us) <= MAX_TIME_US:
        raise ConfigError(f"now_us={now_us} is outside years 1..9999")
    dim = int(dim)

    raw = columns_of(rows)
    metadata = {} if metadata is None else metadata
    _check_names(raw, metadata)
    raw = {k: v for k, v in raw.items() if not _INDEX_LEVEL.fullmatch(k)}
    lengths = {name: column_length(name, col) for name, col in raw.items()}
    if not lengths or max(lengths.values()) == 0:
        _fail("no rows to ingest", rule="empty")
    for name in REQUIRED_COLUMNS:
        if name not in raw:
            _fail(f"required column {name!r} is missing", column=name, rule="missing column")
    n = lengths["vector"]
    for name, length in lengths.items():
        if length != n:
            _fail(f"has {length} rows but 'vector' has {n}", column=name, rule="column length")

    cols = {name: (canonical_column(name, col) if name != "vector" else col) for name, col in raw.items()}
    get = cols.get

    ids = None
    if "id" in cols:
        ids = _ids(cols["id"], n)
        _check_unique_ids(ids)

    vector = _vectors(cols["vector"], n, dim, metric == "cosine")

    valid_from, _ = _times("valid_from", cols["valid_from"], nullable=False)
    if "valid_to" in cols:
        valid_to, open_ = _times("valid_to", cols["valid_to"], nullable=True)
        if open_ is not None:
            valid_to = np.where(open_, OPEN_END, valid_to)
        bad = valid_to <= valid_from
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            _fail("valid_to must be after valid_from", column="valid_to", row=row,
                  rule="valid_to <= valid_from")
    else:
        valid_to = np.full(n, OPEN_END, dtype=np.int64)
    if "observed_at" in cols:
        observed_at, _ = _times("observed_at", cols["observed_at"], nullable=False)
    else:
        observed_at = valid_from.copy()
    if "ingested_at" in cols:
        ingested_at, _ = _times("ingested_at", cols["ingested_at"], nullable=False)
    else:
        ingested_at = np.full(n, int(now_us), dtype=np.int64)
    if "retracted_at" in cols:
        retracted_at, open_ = _times("retracted_at", cols["retracted_at"], nullable=True)
        if open_ is not None:
            retracted_at = np.where(open_, OPEN_END, retracted_at)
        bad = retracted_at <= ingested_at
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            _fail("retracted_at must be after ingested_at", column="retracted_at", row=row,
                  rule="retracted_at <= ingested_at")
    else:
        retracted_at = np.full(n, OPEN_END, dtype=np.int64)

    reliability = _reliability(get("reliability"), n)
    fact_type, fact_type_arr, ft_names, ft_codes = _fact_types(get("fact_type"), n,
                                                               known_fact_type)
    strings = {}
    for name in ("stem_id", "version", "supersedes"):
        strings[name] = _strings(name, get(name), n)
    stem_id = strings["stem_id"].to_numpy(zero_copy_only=False)
    stem_names, stem_codes = _stem_codes(strings["stem_id"])
    if stem_id.dtype != object:  # guard: an all-null array may not come back as objects
        stem_id = np.full(n, None, dtype=object)
    version_key = _version_keys(strings["version"], "version")
    _version_keys(strings["supersedes"], "supersedes")  # same grammar; catches typos early
    deprecated = _deprecated(get("deprecated"), n)
    for name in ("content", "title", "source", "modality"):
        strings[name] = _strings(name, get(name), n)

    table = pa.Table.from_arrays(
        [strings["content"], strings["title"], strings["source"], strings["modality"],
         fact_type_arr, strings["stem_id"], strings["version"], strings["supersedes"]],
        schema=STORAGE_SCHEMA)
    user = {}
    for name in raw:
        if name in COLUMNS:
            continue
        user[name] = _metadata.normalize_column(
            name, cols[name], n, metadata.get(name), lambda nm, c: _times(nm, c, nullable=True))
    return IngestBatch(n=n, vector=vector, valid_from=valid_from, valid_to=valid_to,
                       observed_at=observed_at, ingested_at=ingested_at,
                       retracted_at=retracted_at, reliability=reliability, fact_type=fact_type,
                       stem_id=stem_id, version_key=version_key, deprecated=deprecated,
                       ids=ids, table=table, fact_type_names=ft_names,
                       fact_type_codes=ft_codes, stem_names=stem_names, stem_codes=stem_codes, metadata=user)
