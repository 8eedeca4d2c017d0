"""Checking call arguments (counts; containers where scalars belong) and showing a
caller's value in a message (internal).

Every public entry point checks what a caller gives before it reaches NumPy, Arrow or the
core, whose own conversions fail with built-in errors (``OverflowError``, pybind11's
``TypeError``) or, for ``threads``, by aborting the process; these checks raise the entry
point's own :class:`~chrono_engine.errors.ChronoError` instead.
"""
from __future__ import annotations

import os
import reprlib
from typing import Any

import numpy as np
import pyarrow as pa

from . import _core

__all__ = ["THREADS_MAX", "K_MAX", "NESTING_MAX", "STRUCT_CELLS_MAX", "CONTAINERS", "as_float32", "shown", "arrow_type",
           "holds_containers", "holds_bools", "nested_deeper", "struct_cells_beyond", "count", "thread_count", "array",
           "id_array", "float32_rows"]

#: The most worker threads an Engine, a batch search or an ingest may be given. Work is
#: split over at most this many OS threads (each with its own stack): more than all but the
#: largest machines have cores, so no useful setting is refused; a value above it is a mistake
#: (``threads=100_000`` asked the core for 100,000 thread starts and aborted the process
#: when one failed). A fixed number rather than a multiple of ``os.cpu_count()``, so that a
#: setting that works on one machine does not fail on a smaller one.
THREADS_MAX = 1024

#: The largest ``k`` a search takes: ranks are int32 in the result table.
K_MAX = 2**31 - 1

#: The deepest nesting of lists, tuples, dicts and sets a column may bring to Arrow's type
#: inference, which recurses once per level and overflows the C stack some thousands of
#: levels down (a crash of the process). NumPy's own limit on dimensions.
NESTING_MAX = 64

#: The most cells the dicts of one column may make once Arrow's type inference makes them
#: a struct (their distinct keys times their number: 128 MiB of int64 at most).
STRUCT_CELLS_MAX = 1 << 24

#: Never a scalar: a column of times, strings or numbers, or a vector, holding one of these
#: is of the wrong type there.
CONTAINERS = (list, tuple, dict, set, frozenset, np.ndarray, pa.Array, pa.ChunkedArray)


class _Repr(reprlib.Repr):
    """reprlib's bounded repr, for an int too long for ``repr`` too."""

    def repr_int(self, x: int, level: int) -> str:
        # repr() refuses an int of more than 4,300 digits (sys.set_int_max_str_digits)
        if x.bit_length() > 10_000:
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_REPR = _Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 80


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, bounded: at most ~80 characters, nesting cut
    after a few levels (a deeply nested list would make ``repr`` raise RecursionError), and
    never an exception of its own (an object whose ``__repr__`` raises is shown by type)."""
    return _REPR.repr(value)


def arrow_type(t: Any) -> str:
    """``str(t)`` of an Arrow type for an error message, unless the type nests more than 8
    levels (Arrow's own ``ToString`` recurses and overflows the C stack on a type nested
    some thousands deep, as ``pa.array`` infers from a deeply nested list): then its kind."""
    todo, seen = [(t, 1)], 0
    while todo:
        typ, depth = todo.pop()
        seen += 1
        if depth > 8 or seen > 256:
            return f"{type(t).__name__} (nested more than 8 levels or 256 fields)"
        todo.extend((typ.field(i).type, depth + 1) for i in range(getattr(typ, "num_fields", 0)))
    return str(t)


# what :func:`nested_deeper` walks into
_NESTED = (list, tuple, dict, set, frozenset, np.ndarray)


def holds_containers(items: Any) -> bool:
    """Whether ``items`` (an iterable) holds a :data:`CONTAINERS` value, judged by the types
    present (one pass in C), without looking inside them: checked before Arrow's type
    inference, which recurses into nested values and overflows the C stack on a deeply
    nested one (``pa.array`` of a list nested ~20,000 deep crashes the process)."""
    return any(issubclass(t, CONTAINERS) for t in set(map(type, items)))


_BOOLS = (bool, np.bool_)


def holds_bools(value: Any) -> bool:
    """Whether ``value`` is or holds a boolean: a bool, a NumPy or Arrow array of bools (or
    anything with a bool ``dtype``), or a list, tuple or object array with a bool anywhere
    in it, walked without recursion (one pass in C per list). Booleans are not numbers,
    though NumPy and Arrow read them as 1 and 0 (``np.asarray([True, 0.5])`` is
    ``[1.0, 0.5]``), so every number array a caller gives is checked with this."""
    todo = [value]
    while todo:
        x = todo.pop()
        if isinstance(x, _BOOLS):
            return True
        if isinstance(x, np.ndarray):
            if x.dtype.kind == "b":
                return True
            if x.dtype != object:
                continue
            x = x.ravel().tolist()
        elif isinstance(x, (pa.Array, pa.ChunkedArray)):
            if pa.types.is_boolean(x.type):
                return True
            continue
        elif not isinstance(x, (list, tuple)):
            if getattr(getattr(x, "dtype", None), "kind", None) == "b":  # a pandas Series of bools
                return True
            continue
        types = set(map(type, x))
        if any(issubclass(t, _BOOLS) for t in types):
            return True
        if any(issubclass(t, (list, tuple, np.ndarray)) for t in types):
            todo.extend(c for c in x if isinstance(c, (list, tuple, np.ndarray)))
    return False


def _nested_in(x: Any, dict_items: list) -> list:
    """The containers directly inside ``x`` (a dict's: those among ``dict_items``, its keys
    and/or values); [] for a scalar, a NumPy array of numbers, or a sequence of scalars (one
    pass in C, :func:`holds_containers`). The step of the non-recursive walks below."""
    if isinstance(x, dict):
        x = dict_items
    elif isinstance(x, np.ndarray):
        if x.dtype != object:
            return []
        x = x.ravel().tolist()
    elif not isinstance(x, (list, tuple, set, frozenset)) or not holds_containers(x):
        return []
    return [c for c in x if isinstance(c, _NESTED)]


def nested_deeper(items: Any, limit: int = NESTING_MAX) -> bool:
    """Whether ``items`` (a list, tuple, dict, set or object array) nests containers more
    than ``limit`` levels deep, walked without recursion and left at the first such level.
    Only the containers are visited: a column of scalars costs one pass in C (through
    :func:`holds_containers`) and nothing more."""
    todo = [(items, 0)]
    while todo:
        x, depth = todo.pop()
        if depth > limit:
            return True
        inner = _nested_in(x, [*x.keys(), *x.values()] if isinstance(x, dict) else [])
        todo.extend((c, depth + 1) for c in inner)
    return False


def struct_cells_beyond(items: Any, limit: int = STRUCT_CELLS_MAX) -> bool:
    """Whether the dicts in ``items`` (a list, tuple or object array, at any depth) would
    make more than ``limit`` cells once Arrow's type inference makes them a struct: their
    distinct keys times their number (every key a field of every dict, mostly nulls: n
    dicts with a key each of their own take n × n). Walked without recursion, left once
    past the limit."""
    keys: set = set()
    dicts = 0
    todo = [items]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            keys.update(x.keys())
            dicts += 1
            if len(keys) * dicts > limit:
                return True
        todo.extend(_nested_in(x, list(x.values()) if isinstance(x, dict) else []))
    return False


def count(value: Any, name: str, *, lo: int, hi: int, error: type[Exception]) -> int:
    """``value`` as an int in [lo, hi], or ``error`` naming ``name``. Python and NumPy
    integers only: bools, floats (even integral ones), strings and objects with an
    ``__index__`` are refused, so nothing of the caller's runs and nothing is rounded."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise error(f"{name} must be an integer in [{lo}, {hi}], got {type(value).__name__} {shown(value)}")
    v = int(value)
    if not lo <= v <= hi:
        raise error(f"{name} must be an integer in [{lo}, {hi}], got {shown(v)}")
    return v


def thread_count(value: Any, name: str, error: type[Exception]) -> int:
    """A ``threads=`` argument: None is every core (``os.cpu_count()``, at most
    :data:`THREADS_MAX`); otherwise an integer in [1, THREADS_MAX], or ``error``."""
    if value is None:
        return min(os.cpu_count() or 1, THREADS_MAX)
    return count(value, name, lo=1, hi=THREADS_MAX, error=error)


def array(value: Any, name: str, error: type[Exception], dtype: Any = None) -> np.ndarray:
    """``np.asarray(value, dtype)`` (no copy when it is already such an array), or ``error``
    naming ``name``: NumPy refuses a ragged or too deeply nested sequence with its own
    ValueError, text that is not a number with another, and a caller's object may raise
    anything from ``__array__``, ``__float__``, ``__len__`` or ``__getitem__``. Booleans are
    not numbers: refused where ``dtype`` is numeric, and where they would become numbers
    beside others (``[True, 2]``); booleans alone stay a bool array, for the caller."""
    if isinstance(value, np.ndarray) and (dtype is None or value.dtype == dtype):
        return value
    numbers = dtype is not None and np.dtype(dtype).kind in "iufc"
    if numbers and holds_bools(value):
        raise error(f"{name}: {type(value).__name__} {shown(value)} holds booleans, which are not numbers")
    try:
        a = np.asarray(value, dtype)
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 - the caller's objects may raise anything
        what = "an array" if dtype is None else f"an array of {np.dtype(dtype)}"
        raise error(f"{name}: {type(value).__name__} {shown(value)} cannot be made {what} "
                    f"({shown(str(e))})") from None
    # numbers made from a list that held booleans (np.asarray([True, 2]) is [1, 2])
    if not numbers and a.dtype.kind in "iufc" and not isinstance(value, np.ndarray) and holds_bools(value):
        raise error(f"{name}: {type(value).__name__} {shown(value)} mixes booleans with numbers "
                    f"(booleans are not numbers)")
    return a


def id_array(value: Any, name: str, error: type[Exception]) -> tuple[np.ndarray, dict[int, int]]:
    """``value`` (one id, or a sequence or array of ids, flattened) as uint64, and the
    integers in it that no item can have (below 0 or above 2**64 - 1) by position: their
    places in the array hold 0, for the caller to report as unknown ids. Integral floats
    are ids, as they are at ingest; anything else (fractions, NaN, bools, text, nested
    sequences, objects) is ``error`` naming ``name`` and the position."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        value = [value]
    a = array(value, name, error).reshape(-1)
    kind = a.dtype.kind
    if kind == "u":
        return a.astype(np.uint64, copy=False), {}
    if a.size == 0:
        return np.zeros(0, np.uint64), {}
    if kind == "i":
        impossible = a < 0
    elif kind == "f":
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(a) & (a == np.floor(a))
        if not whole.all():
            i = int(np.flatnonzero(~whole)[0])
            raise error(f"{name}[{i}] must be an integer id, got {shown(a[i].item())}")
        impossible = (a < 0) | (a >= 2.0**64)
    elif kind == "O":
        items = a.tolist()
        for i, x in enumerate(items):
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
                raise error(f"{name}[{i}] must be an integer id, got {type(x).__name__} {shown(x)}")
        impossible = np.array([not 0 <= x < 1 << 64 for x in items], bool)
        a = np.array([0 if bad else int(x) for x, bad in zip(items, impossible, strict=True)], np.uint64)
    else:
        raise error(f"{name} must be integer ids, got {shown(value)} (dtype {a.dtype})")
    if not impossible.any():
        return a.astype(np.uint64), {}
    at = np.flatnonzero(impossible)
    given = [items[i] for i in at] if kind == "O" else a[at].tolist()
    bad = {int(i): int(v) for i, v in zip(at, given, strict=True)}
    return np.where(impossible, 0, a).astype(np.uint64), bad


# NumPy kinds that are not numbers (text, bytes, times, complex): never a vector
_NOT_NUMBERS = "USMmcV"


#: a list of Python floats (and ints up to 2^24 in magnitude) as float32 with NumPy's bits
#: (``np.asarray(x).astype(np.float32)``), natively; None for any other list (bools too)
list_f32 = _core.list_f32


def float32_rows(values: Any) -> np.ndarray | None:
    """A list of equally long lists of Python floats (and ints up to 2^24 in magnitude) as
    a float32 array (n, d) with NumPy's bits, one native call per row (:data:`list_f32`:
    a JSON body's vectors at ~1 µs per row against ~10 through NumPy); None for anything
    else, booleans included (the caller takes NumPy's path, which names the problem)."""
    if type(values) is not list or not values or type(values[0]) is not list:
        return None
    rows = [list_f32(r) for r in values]
    d = len(values[0])
    if any(r is None or len(r) != d for r in rows):
        return None
    return np.stack(rows) if d else np.zeros((len(rows), 0), np.float32)


def as_float32(values: Any) -> np.ndarray:
    """A caller's numbers as a float32 array (values beyond float32 become inf, for the
    caller's finite check). Anything that is not numbers — booleans included, which NumPy
    would read as 1 and 0 — is a TypeError or ValueError, whatever the conversion of the
    caller's objects raised (their ``__float__`` may raise anything), with the original as
    the cause. Lists of Python floats are converted natively (:func:`float32_rows`)."""
    if type(values) is list:
        native = float32_rows(values)
        native = list_f32(values) if native is None else native
        if native is not None:
            return native
    try:
        a = values if isinstance(values, np.ndarray) else np.asarray(values)
        if a.dtype.kind in _NOT_NUMBERS:
            raise TypeError(f"dtype {a.dtype} is not numbers")
        if a.dtype.kind in "bO" and holds_bools(a) or a is not values and holds_bools(values):
            raise TypeError("booleans are not numbers")
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(a, dtype=np.float32)
    except (MemoryError, TypeError, ValueError):
        raise
    except Exception as e:
        raise ValueError(f"{type(e).__name__}: {e}") from e
