"""Timing and the machine: the best-of rule every contender is timed by, control of
NumPy's BLAS threads, and what the report says about the machine that ran it."""
from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["best_time", "blas_available", "blas_threads", "machine_info"]


def best_time(fn: Callable[[], Any], min_time: float, max_repeat: int = 5, min_repeat: int = 1):
    """(best seconds, last result): repeat ``fn`` until ``min_time`` has passed in all and it
    ran ``min_repeat`` times, or it ran ``max(max_repeat, min_repeat)`` times, whichever
    first; the best run counts (least disturbed).

    The harness times the engine and every peer by this rule; benches that compare their
    own contenders use it too, so that every figure is the best of the same kind of runs::

        seconds, result = best_time(lambda: fn(data), min_time=0.3, min_repeat=3)
    """
    best = float("inf")
    spent = 0.0
    out = None
    for i in range(max(1, max_repeat, min_repeat)):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        if spent >= min_time and i + 1 >= min_repeat:
            break
    return best, out


_BLAS = None


def _blas_functions():
    """(set, get) of the OpenBLAS library NumPy loaded, or (None, None)."""
    global _BLAS
    if _BLAS is not None:
        return _BLAS
    _BLAS = (None, None)
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return _BLAS
    for p in sorted(paths):
        try:
            lib = ctypes.CDLL(p)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                s, g = f"{prefix}_set_num_threads{suffix}", f"{prefix}_get_num_threads{suffix}"
                if hasattr(lib, s) and hasattr(lib, g):
                    setter, getter = getattr(lib, s), getattr(lib, g)
                    setter.argtypes, setter.restype = [ctypes.c_int], None
                    getter.argtypes, getter.restype = [], ctypes.c_int
                    _BLAS = (setter, getter)
                    return _BLAS
    return _BLAS


def blas_available() -> bool:
    """Whether :func:`blas_threads` can set NumPy's BLAS threads (OpenBLAS found)."""
    return _blas_functions()[0] is not None


@contextlib.contextmanager
def blas_threads(n: int):
    """Limit OpenBLAS (NumPy's matmul) to ``n`` threads inside the block, where possible."""
    setter, getter = _blas_functions()
    if setter is None:
        yield False
        return
    old = getter()
    setter(int(n))
    try:
        yield True
    finally:
        setter(old)


def machine_info() -> dict:
    """What ran the benchmark: CPU, cores, Python, NumPy, the engine's build info."""
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "numpy": np.__version__}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        info["load_average"] = os.getloadavg()
    except OSError:
        pass
    try:
        import chrono_engine as ce
        info["chrono_engine"] = ce.__version__
        info["build_info"] = ce.build_info()
    except Exception as e:  # noqa: BLE001 - the report still runs without it
        info["build_info_error"] = repr(e)
    return info

