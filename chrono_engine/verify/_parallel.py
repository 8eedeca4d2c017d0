"""Launching Numba parallel kernels safely from many Python threads.

The kernels in this package are compiled with ``nogil=True`` so that a server can call
them from several threads at once. Numba's OpenMP and TBB threading layers allow that;
its fallback ``workqueue`` layer does not (a concurrent launch aborts the process). So
launches are serialised until the first one has told us which layer Numba picked, and
stay serialised only if that layer is ``workqueue``.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numba

# Below this much work (facts, samples) one thread beats a parallel launch, and on an
# oversubscribed machine a launch can wait a whole time slice for a descheduled worker.
PARALLEL_MIN_WORK = 200_000

_lock = threading.Lock()
_serialise = True  # until the threading layer is known


def launch(kernel: Callable[..., Any], *args: Any) -> Any:
    """Call a parallel kernel, holding a lock only where Numba's threading layer needs it."""
    global _serialise
    if not _serialise:
        return kernel(*args)
    with _lock:
        result = kernel(*args)
        try:
            _serialise = numba.threading_layer() == "workqueue"
        except ValueError:  # no parallel region has run yet (empty input): stay careful
            pass
        return result


def threading_layer() -> str | None:
    """The threading layer Numba chose, or None before the first parallel launch."""
    try:
        return str(numba.threading_layer())
    except ValueError:
        return None


def run(serial: Callable[..., Any], parallel: Callable[..., Any], n_items: int, work: int,
        *args: Any) -> Any:
    """Run ``serial(*args, 0, n_items)`` for small jobs or one thread, else
    ``parallel(*args, chunks)`` with a few chunks per thread for load balance."""
    threads = numba.get_num_threads()
    if threads == 1 or n_items < 2 or work < PARALLEL_MIN_WORK:
        return serial(*args, 0, n_items)
    return launch(parallel, *args, min(n_items, 4 * threads))
