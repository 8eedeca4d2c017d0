"""``where=``: the metadata filter, in the dict form Chroma, LangChain and MongoDB users write.

::

    {"tenant": "acme"}                                  equality by value
    {"year": {"$gte": 2020, "$lt": 2024}}               operators, ANDed
    {"acl": {"$in": ["hr", "all"]}}                     a list column matches when any element does
    {"$and": [{...}, {...}]}, {"$or": [...]}, {"$not": {...}}
    {"deleted": {"$exists": False}}

Operators: ``$eq $ne $gt $gte $lt $lte $in $nin $exists`` on a field; ``$and $or $not`` over
filters. Several keys in one dict are ANDed. A null (absent) value matches no ``$eq``,
``$in`` or range; ``$ne`` and ``$nin`` are their negations, so they match nulls (a row
without a tenant is "not acme"). Strings compare by equality only; ranges apply to int64,
float64 and timestamp columns (a timestamp's values: any time the time columns take).

:func:`parse` checks a filter's shape alone (no store): operators, value types, a nesting
of at most :data:`MAX_DEPTH` and at most :data:`MAX_TERMS` terms and values in all, in time
linear in its size, and gives a canonical, hashable :class:`Where`. :func:`compile` binds it
to a store's metadata columns (kinds, indexes), refusing an unknown field or an operator
on the wrong kind, and gives the core's program (``_core.Filter``, evaluated under the
store's lock; user_columns.hpp). :func:`absent_as_null` reads the fields a store does not
(yet) have as null on every row, as a row without the column is (a service's scoped key, set
before its column exists); :func:`evaluate` runs the same program in NumPy over rows not
yet in a store (what a write limited by a filter is about to store), and
:func:`rows_passing` over an Arrow table's columns (``ce.score``'s candidates), each read as
a metadata column.
"""
from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _core
from .._args import shown
from .._time import errors_as, scalar_us
from ..errors import QueryError, SchemaError
from ..metadata import ARROW_TYPES, KIND_CODES, normalize_column

__all__ = ["Where", "parse", "compile", "absent_as_null", "evaluate", "rows_passing", "MAX_DEPTH", "MAX_TERMS"]

#: the deepest nesting of a filter ($and / $or / $not / a field's operators)
MAX_DEPTH = 32
#: the most terms and values a filter holds in all ($in lists included)
MAX_TERMS = 10_000

_FIELD_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists")
_LOGIC_OPS = ("$and", "$or", "$not")
_RANGE = {"$gt", "$gte", "$lt", "$lte"}
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


class Where:
    """A checked filter: ``expr`` is its canonical form (nested tuples; equal filters,
    equal forms), ``spec`` the dict as given (for display and the service's echo)."""

    __slots__ = ("expr", "spec", "_hash")

    def __init__(self, expr: tuple, spec: Any) -> None:
        self.expr, self.spec = expr, spec
        self._hash = hash(expr)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Where) and other.expr == self.expr

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple:
        # rebuilt, not restored: a string's hash differs between processes (a Ray actor, a
        # service worker), so a pickled ``_hash`` would not be this process's hash of expr
        return (Where, (self.expr, self.spec))

    def __repr__(self) -> str:
        return f"Where({shown(self.spec)})"

    def fields(self) -> set[str]:
        """The fields the filter reads."""
        out: set[str] = set()
        _fields(self.expr, out)
        return out

    def __and__(self, other: Where) -> Where:
        """Both filters (a scoped key's filter ANDed into a request's)."""
        return Where(("and", (self.expr, other.expr)), {"$and": [self.spec, other.spec]})


def _fields(e: tuple, out: set) -> None:
    if e[0] in ("and", "or"):
        for c in e[1]:
            _fields(c, out)
    elif e[0] == "not":
        _fields(e[1], out)
    elif e[0] != "const":
        out.add(e[1])


def _fail(path: str, detail: str) -> None:
    raise QueryError(f"where{path}: {detail}")


def _value(v: Any, path: str) -> tuple:
    """A scalar as (type tag, value): str, bool, int, float, time (µs-able objects)."""
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, (bool, np.bool_)):
        return ("b", bool(v))
    if isinstance(v, (int, np.integer)):
        return ("i", int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            _fail(path, "NaN is not a value")
        return ("f", f)
    if isinstance(v, (_dt.datetime, _dt.date, np.datetime64)):
        return ("t", v)
    _fail(path, f"a value must be a string, number, bool or time, got {type(v).__name__} {shown(v)}")


class _Budget:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_TERMS

    def take(self, n: int, path: str) -> None:
        self.left -= n
        if self.left < 0:
            _fail(path, f"the filter holds more than {MAX_TERMS:,} terms and values")


def parse(where: Any) -> Where | None:
    """``where`` checked and in canonical form (None: no filter); QueryError naming the
    path to what is wrong (``where.$and[2].tenant``)."""
    if where is None:
        return None
    if isinstance(where, Where):
        return where
    budget = _Budget()
    expr = _node(where, "", 0, budget)
    return Where(expr, where)


def _node(d: Any, path: str, depth: int, budget: _Budget) -> tuple:
    if depth > MAX_DEPTH:
        _fail(path, f"nested deeper than {MAX_DEPTH} levels")
    if not isinstance(d, Mapping):
        _fail(path, f"a filter must be a dict, got {type(d).__name__} {shown(d)}")
    if not d:
        _fail(path, "an empty filter (write None for no filter)")
    budget.take(len(d), path)
    terms = []
    for key, val in d.items():
        if not isinstance(key, str):
            _fail(path, f"keys must be strings, got {shown(key)}")
        here = f"{path}.{key}"
        if key in ("$and", "$or"):
            if not isinstance(val, (list, tuple)) or not val:
                _fail(here, f"takes a non-empty list of filters, got {shown(val)}")
            budget.take(len(val), here)
            kids = tuple(_node(x, f"{here}[{i}]", depth + 1, budget) for i, x in enumerate(val))
            terms.append((key[1:], kids) if len(kids) > 1 else kids[0])
        elif key == "$not":
            terms.append(("not", _node(val, here, depth + 1, budget)))
        elif key.startswith("$"):
            _fail(here, f"unknown operator (filters: {', '.join(_LOGIC_OPS)}; fields: {', '.join(_FIELD_OPS)})")
        else:
            terms.extend(_field(key, val, here, depth + 1, budget))
    return terms[0] if len(terms) == 1 else ("and", tuple(terms))


def _field(name: str, val: Any, path: str, depth: int, budget: _Budget) -> list:
    if not isinstance(val, Mapping):
        return [("cmp", name, "$eq", _value(val, path))]
    if depth > MAX_DEPTH:
        _fail(path, f"nested deeper than {MAX_DEPTH} levels")
    if not val:
        _fail(path, "an empty operator dict")
    budget.take(len(val), path)
    out = []
    for op, x in val.items():
        here = f"{path}.{op}"
        if op not in _FIELD_OPS:
            _fail(here, f"unknown operator (on a field: {', '.join(_FIELD_OPS)})")
        if op in ("$in", "$nin"):
            if isinstance(x, (str, bytes, Mapping)) or not hasattr(x, "__len__"):
                _fail(here, f"takes a list of values, got {type(x).__name__} {shown(x)}")
            budget.take(len(x), here)  # before a value is read: a million-value list stops here
            vals = tuple(_value(v, f"{here}[{i}]") for i, v in enumerate(x))
            out.append((op[1:], name, tuple(sorted(set(vals), key=repr))))
        elif op == "$exists":
            if not isinstance(x, (bool, np.bool_)):
                _fail(here, f"takes true or false, got {shown(x)}")
            out.append(("exists", name, bool(x)))
        else:
            out.append(("cmp", name, op, _value(x, here)))
    return out


# ----------------------------------------------------------------------------- compile

def compile(where: Where, columns: Mapping[str, tuple[int, str]]) -> Any:
    """The core's program (``_core.Filter``) of ``where`` over a store's metadata columns
    (name -> (index, kind)); QueryError for an unknown field or an operator or value the
    field's kind does not take."""
    ops: list = []
    _emit(where.expr, columns, ops)
    try:
        return _core.Filter(ops)
    except ValueError as e:  # the core refused the program: a bug here, reported plainly
        raise QueryError(f"where: {e}") from None


def _emit(e: tuple, columns: Mapping, ops: list) -> None:
    tag = e[0]
    if tag == "const":  # a test of a field no row has (absent_as_null)
        ops.append(("const", bool(e[1])))
        return
    if tag in ("and", "or"):
        for c in e[1]:
            _emit(c, columns, ops)
        ops.append((tag, len(e[1])))
        return
    if tag == "not":
        _emit(e[1], columns, ops)
        ops.append(("not",))
        return
    name = e[1]
    col = columns.get(name)
    if col is None:
        known = ", ".join(repr(n) for n in list(columns)[:20]) or "none"
        _fail(f".{name}", f"unknown field (the store's metadata columns: {known})")
    index, kind = col
    code = KIND_CODES[kind]
    if tag == "exists":
        ops.append(("exists", index, code))
        if not e[2]:
            ops.append(("not",))
        return
    if tag in ("in", "nin"):
        values = [_typed(v, kind, f".{name}.${tag}") for v in e[2]]
        _emit_in(index, kind, code, [v for v in values if v is not _NONE], ops)
        if tag == "nin":
            ops.append(("not",))
        return
    op, v = e[2], e[3]
    path = f".{name}.{op}"
    if op in _RANGE:
        if kind in ("string", "list<string>", "bool"):
            _fail(path, f"{op} compares numbers and times; {name!r} is a {kind} column")
        _emit_range(index, kind, code, op, _typed(v, kind, path, ranged=True), ops)
        return
    x = _typed(v, kind, path)
    _emit_in(index, kind, code, [] if x is _NONE else [x], ops)
    if op == "$ne":
        ops.append(("not",))


_NONE = object()  # a value no row of the column can hold (2.5 in an int64 column)


def _typed(v: tuple, kind: str, path: str, *, ranged: bool = False) -> Any:
    tag, x = v
    if kind in ("string", "list<string>"):
        if tag != "s":
            _fail(path, f"the field is a {kind} column; compare it with strings, got {shown(x)}")
        return x
    if kind == "bool":
        if tag != "b":
            _fail(path, f"the field is a bool column; compare it with true or false, got {shown(x)}")
        return int(x)
    if kind == "timestamp":
        if tag in ("b", "f"):
            _fail(path, f"the field is a timestamp column; compare it with a time, got {shown(x)}")
        with errors_as(QueryError):
            return scalar_us(x, "where" + path)
    if tag not in ("i", "f"):
        _fail(path, f"the field is a {kind} column; compare it with a number, got {shown(x)}")
    if kind == "float64":
        try:
            return float(x)
        except OverflowError:
            return math.inf if x > 0 else -math.inf
    if ranged:
        return x  # int or float: _emit_range rounds to the integers
    if tag == "f" and not (math.isfinite(x) and x == math.floor(x)):
        return _NONE
    i = int(x)
    return i if _I64_MIN <= i <= _I64_MAX else _NONE


def _emit_in(index: int, kind: str, code: int, values: list, ops: list) -> None:
    if not values:
        ops.append(("const", False))
    else:
        ops.append(("in", index, code, values))


def _emit_range(index: int, kind: str, code: int, op: str, x: Any, ops: list) -> None:
    if kind == "float64":
        inf = math.inf
        lo, li, hi, hi_i = (-inf, True, inf, True)
        if op in ("$gt", "$gte"):
            lo, li = x, op == "$gte"
        else:
            hi, hi_i = x, op == "$lte"
        ops.append(("frange", index, lo, li, hi, hi_i))
        return
    # integers (int64, timestamp µs): the bound as the nearest integers it admits, exactly
    if isinstance(x, float):
        if math.isinf(x):
            big = x > 0
            empty = (op in ("$gt", "$gte")) == big
            ops.append(("const", False) if empty else ("exists", index, code))
            return
        lo_int, hi_int = math.ceil(x), math.floor(x)  # smallest >= x, largest <= x
        bound = {"$gt": hi_int + 1, "$gte": lo_int, "$lt": lo_int - 1, "$lte": hi_int}[op]
    else:
        bound = {"$gt": x + 1, "$gte": x, "$lt": x - 1, "$lte": x}[op]
    if op in ("$gt", "$gte"):
        lo, hi = bound, _I64_MAX
    else:
        lo, hi = _I64_MIN, bound
    if lo > _I64_MAX or hi < _I64_MIN or lo > hi:
        ops.append(("const", False))
        return
    ops.append(("range", index, code, max(lo, _I64_MIN), min(hi, _I64_MAX)))


# ----------------------------------------------------------------------------- absent fields

def absent_as_null(where: Where, fields: Any) -> Where:
    """``where`` with each test of a field not among ``fields`` (a store's metadata columns)
    replaced by its value on a null, as a row without the column holds: ``$eq``, ``$in``,
    ranges and ``$exists: true`` are false, ``$ne``, ``$nin`` and ``$exists: false`` true.
    ``where`` itself when it reads no such field. :func:`compile` refuses an unknown field
    (a typo); a filter set before its column exists (a service's scoped key) selects
    through this what it will select once the column is there."""
    missing = where.fields().difference(fields)
    if not missing:
        return where
    return Where(_nulled(where.expr, missing), where.spec)


def _nulled(e: tuple, missing: set) -> tuple:
    tag = e[0]
    if tag in ("and", "or"):
        return (tag, tuple(_nulled(c, missing) for c in e[1]))
    if tag == "not":
        return ("not", _nulled(e[1], missing))
    if tag == "const" or e[1] not in missing:
        return e
    if tag == "cmp":
        return ("const", e[2] == "$ne")
    if tag == "exists":
        return ("const", not e[2])
    return ("const", tag == "nin")


# ----------------------------------------------------------------------------- evaluate

def evaluate(where: Where, columns: Mapping[str, tuple[str, Any]], n: int) -> np.ndarray:
    """Which of ``n`` rows pass ``where`` (a bool array), for rows not in a store: the
    program :func:`compile` makes, run in NumPy with the core's rules (a null matches no
    ``$eq``, ``$in`` or range; a list matches when any element does). ``columns``: name ->
    (kind, the rows' Arrow array of :data:`~chrono_engine.metadata.ARROW_TYPES` [kind], or
    None: null on every row); a field not among them is a QueryError (unknown field), an
    operator or value the kind does not take too. Linear in the rows and the filter."""
    names = list(columns)
    index = {name: (i, columns[name][0]) for i, name in enumerate(names)}
    ops: list = []
    _emit(where.expr, index, ops)
    arrays = [columns[name][1] if columns[name][1] is not None else pa.nulls(n, ARROW_TYPES[columns[name][0]])
              for name in names]
    stack: list = []
    for op in ops:
        tag = op[0]
        if tag in ("and", "or"):
            parts = stack[-op[1]:]
            del stack[-op[1]:]
            out = parts[0].copy()
            for p in parts[1:]:
                if tag == "and":
                    out &= p
                else:
                    out |= p
            stack.append(out)
        elif tag == "not":
            stack[-1] = ~stack[-1]
        elif tag == "const":
            stack.append(np.full(n, bool(op[1])))
        else:
            stack.append(_leaf(op, arrays, n))
    return stack[0]


def _valid(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)


def _leaf(op: tuple, arrays: list, n: int) -> np.ndarray:
    """One test of the program over one column's rows (a bool per row; nulls False)."""
    tag = op[0]
    if tag == "frange":
        _, col, lo, lo_incl, hi, hi_incl = op
        arr = arrays[col]
        v = np.asarray(arr.fill_null(0.0).to_numpy(zero_copy_only=False), np.float64)
        ok = (v >= lo if lo_incl else v > lo) & (v <= hi if hi_incl else v < hi)
        return ok & _valid(arr)
    col, code = op[1], op[2]
    arr = arrays[col]
    kind = next(k for k, c in KIND_CODES.items() if c == code)
    if tag == "exists":
        return _valid(arr)
    if tag == "range":
        v = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        return (v >= op[3]) & (v <= op[4]) & _valid(arr)
    values = op[3]  # "in"
    if kind in ("string", "list<string>"):
        want = pa.array(values, pa.string())
        if kind == "string":
            return np.asarray(pc.is_in(arr, value_set=want).fill_null(False).to_numpy(zero_copy_only=False), bool)
        # a row's elements are values[offsets[i]:offsets[i + 1]] (a null row's ignored):
        # how many of them match, from a running count
        offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), np.int64)
        hit = np.asarray(pc.is_in(arr.values, value_set=want).fill_null(False).to_numpy(zero_copy_only=False), bool)
        running = np.concatenate([[0], np.cumsum(hit, dtype=np.int64)])
        return (running[offsets[1:]] > running[offsets[:-1]]) & _valid(arr)
    if kind == "float64":
        v = np.asarray(arr.fill_null(0.0).to_numpy(zero_copy_only=False), np.float64)
        return np.isin(v, np.asarray(values, np.float64)) & _valid(arr)
    if kind == "bool":
        v = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), bool).astype(np.int64)
        return np.isin(v, np.asarray(values, np.int64)) & _valid(arr)
    v = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.int64)  # int64, timestamp
    return np.isin(v, np.asarray(values, np.int64)) & _valid(arr)


# ----------------------------------------------------------------------------- rows of a table

def rows_passing(where: Where, table: pa.Table, what: str = "the table") -> np.ndarray:
    """One bool per row of ``table``: whether it passes ``where``, each field read as a
    metadata column of the kind its Arrow type has (:func:`~chrono_engine.metadata.kind_of_type`:
    strings, integers, floats, bools, timestamps and dates, lists of strings), by the very
    program :func:`compile` gives the core, evaluated in NumPy with the core's semantics (a
    null passes no ``$eq`` / ``$in`` / range; a list passes ``$eq`` / ``$in`` when an element
    does). A column all of whose values are null (Arrow type null) takes the kind of the
    values the filter compares it with. QueryError for a field ``table`` lacks, a column of
    no metadata kind, or what :func:`compile` refuses."""
    n = table.num_rows
    columns: dict[str, tuple[str, pa.Array]] = {}
    for name in sorted(where.fields()):
        if name not in table.column_names:
            known = ", ".join(repr(c) for c in table.column_names[:20]) or "none"
            _fail(f".{name}", f"unknown field (the columns of {what}: {known})")
        col = table.column(name)
        if pa.types.is_null(col.type):
            kind = _kind_for_nulls(where.expr, name)
            arr = pa.nulls(n, ARROW_TYPES[kind])
        else:
            try:
                kind, arr = normalize_column(name, col, n, None, _no_times)
            except SchemaError as e:
                _fail(f".{name}", f"the column of {what}: {e}")
        columns[name] = (kind, arr)
    return evaluate(where, columns, n)


def _no_times(name: str, col: Any) -> Any:  # pragma: no cover - a kind is never given, so never read
    raise AssertionError(name)


def _kind_for_nulls(e: tuple, name: str) -> str:
    """The kind of the first value the filter compares field ``name`` with (a string in a
    range: a time; "string" when it only asks whether it exists): a column of nulls passes
    the same under any kind."""
    found: list = []

    def walk(x: tuple) -> None:
        if found:
            return
        if x[0] in ("and", "or"):
            for c in x[1]:
                walk(c)
        elif x[0] == "not":
            walk(x[1])
        elif x[0] != "const" and x[1] == name:
            vals = x[2] if x[0] in ("in", "nin") else (x[3],) if x[0] == "cmp" else ()
            ranged = x[0] == "cmp" and x[2] in _RANGE
            found.extend("t" if ranged and v[0] == "s" else v[0] for v in vals[:1])

    walk(e)
    return {"s": "string", "b": "bool", "i": "int64", "f": "float64", "t": "timestamp"}.get(
        found[0] if found else "s", "string")
