"""Checking call arguments that are counts, and showing a caller's value in a message
(internal).

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

__all__ = ["THREADS_MAX", "shown", "count", "thread_count"]

#: The most worker threads an Engine, a batch search or an ingest may be given. Work is
#: split over at most this many OS threads (each with its own stack): more than all but the
#: largest machines have cores, so no useful setting is refused; a value above it is a mistake
#: (``threads=100_000`` asked the core for 100,000 thread starts and aborted the process
#: when one failed). A fixed number rather than a multiple of ``os.cpu_count()``, so that a
#: setting that works on one machine does not fail on a smaller one.
THREADS_MAX = 1024

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 80


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, bounded: at most ~80 characters, nesting cut
    after a few levels (a deeply nested list would make ``repr`` raise RecursionError), and
    never an exception of its own (an object whose ``__repr__`` raises is shown by type)."""
    return _REPR.repr(value)


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
