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

__all__ = ["THREADS_MAX", "K_MAX", "CONTAINERS", "shown", "arrow_type", "holds_containers", "count",
           "thread_count"]

#: The most worker threads an Engine, a batch search or an ingest may be given. Work is
#: split over at most this many OS threads (each with its own stack): more than all but the
#: largest machines have cores, so no useful setting is refused; a value above it is a mistake
#: (``threads=100_000`` asked the core for 100,000 thread starts and aborted the process
#: when one failed). A fixed number rather than a multiple of ``os.cpu_count()``, so that a
#: setting that works on one machine does not fail on a smaller one.
THREADS_MAX = 1024

#: The largest ``k`` a search takes: ranks are int32 in the result table.
K_MAX = 2**31 - 1

#: Never a scalar: a column of times, strings or numbers, or a vector, holding one of these
#: is of the wrong type there.
CONTAINERS = (list, tuple, dict, set, frozenset, np.ndarray, pa.Array, pa.ChunkedArray)

_REPR = reprlib.Repr()
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


def holds_containers(items: Any) -> bool:
    """Whether ``items`` (an iterable) holds a :data:`CONTAINERS` value, judged by the types
    present (one pass in C), without looking inside them: checked before Arrow's type
    inference, which recurses into nested values and overflows the C stack on a deeply
    nested one (``pa.array`` of a list nested ~20,000 deep crashes the process)."""
    return any(issubclass(t, CONTAINERS) for t in set(map(type, items)))


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
