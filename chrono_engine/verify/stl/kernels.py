"""Numba kernels for STL robustness over many traces (rows of a C-contiguous 2-D array).

Every bounded temporal operator reduces to :func:`window_rows` (a sliding min, van Herk /
Gil-Werman: three passes per row whatever the window length, so O(n) and not O(n·w)) plus
the unbounded recursions :func:`until_rows` and :func:`since_rows`; see :mod:`.plan` for how bounded
until and since are rewritten into those. Only min, max and selection touch the values, so
results equal RTAMT's bit for bit. NaN cannot come in (signals are checked) but can arise
inside a formula (∞ − ∞ in ``iff``, ``xor``, ``==``, ``!==`` or arithmetic); it then
propagates through min and max as in NumPy (RTAMT's Python ``min`` keeps or drops it
depending on argument order). Each ``*_rows`` kernel handles a range of rows; its parallel
wrapper splits all rows into chunks. The GIL is released.

The NumPy reference that tests compare against is :mod:`.reference` (direct definitions).
"""
from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(nogil=True, cache=True)
def _edge(x, i, off, w, g, h):  # pragma: no cover - compiled
    """A window cut by either end of the row, or missing it (+inf, the identity of min)."""
    n = x.shape[0]
    lo = i + off
    hi = lo + w - 1
    if lo > n - 1 or hi < 0:
        return np.inf
    lo = max(lo, 0)
    hi = min(hi, n - 1)
    if lo // w != hi // w:
        a = h[lo]
        b = g[hi]
        return b if b < a else a
    if lo % w == 0:
        return g[hi]  # starts a block: the block's running minimum
    return h[lo]  # ends the row inside lo's block


@nb.njit(nogil=True, cache=True)
def _window_row(x, out, off, w, g, h):  # pragma: no cover - compiled
    """out[i] = min of x over [i + off, i + off + w - 1] ∩ [0, n - 1] (+inf if empty)."""
    n = x.shape[0]
    if w == 1:  # a shifted copy
        for i in range(n):
            j = i + off
            out[i] = x[j] if 0 <= j < n else np.inf
        return
    # g: running minimum from each block's start; h: from each block's end (blocks of w).
    # `b if b < a else a` compiles to one minsd, no branch; it skips NaN, which is fine
    # because every aggregate read below covers only samples inside its window, and
    # windows holding a NaN are set to NaN by the caller.
    for b0 in range(0, n, w):
        b1 = min(b0 + w, n)
        acc = x[b0]
        g[b0] = acc
        for i in range(b0 + 1, b1):
            b = x[i]
            acc = b if b < acc else acc
            g[i] = acc
        acc = x[b1 - 1]
        h[b1 - 1] = acc
        for i in range(b1 - 2, b0 - 1, -1):
            b = x[i]
            acc = b if b < acc else acc
            h[i] = acc
    # windows wholly inside the row have length exactly w: they span at most two blocks
    first = max(0, -off)
    last = min(n - 1, n - off - w)  # last i with i + off + w - 1 <= n - 1
    if last >= first:
        for i in range(first, last + 1):
            a = h[i + off]
            b = g[i + off + w - 1]
            out[i] = b if b < a else a
        for i in range(0, first):
            out[i] = _edge(x, i, off, w, g, h)
        for i in range(last + 1, n):
            out[i] = _edge(x, i, off, w, g, h)
    else:
        for i in range(n):
            out[i] = _edge(x, i, off, w, g, h)


@nb.njit(nogil=True, cache=True)
def window_rows(x, out, off, w, r0, r1):  # pragma: no cover - compiled
    """Sliding minimum over ``[i + off, i + off + w - 1]`` for rows r0 .. r1 - 1, clipped
    to the row; +inf where the window misses the row. (A maximum is ``-min(-x)``:
    negation is exact, so one kernel serves both.) Windows holding a NaN are unspecified
    here (see ``plan._window``)."""
    n = x.shape[1]
    if n == 0 or r1 <= r0:
        return
    g = np.empty(n)
    h = np.empty(n)
    for r in range(r0, r1):
        _window_row(x[r], out[r], off, w, g, h)


@nb.njit(parallel=True, nogil=True, cache=True)
def window_min(x, out, off, w, chunks):  # pragma: no cover - compiled
    """:func:`window_rows` over every row, split into ``chunks`` parallel tasks."""
    rows = x.shape[0]
    for ch in nb.prange(chunks):
        window_rows(x, out, off, w, ch * rows // chunks, (ch + 1) * rows // chunks)


@nb.njit(nogil=True, cache=True)
def until_rows(left, right, out, r0, r1):  # pragma: no cover - compiled
    """Unbounded until, RTAMT's recursion: out[i] = max(r[i], min(l[i], out[i + 1])),
    with out[n] = -inf (NaN propagates as in np.minimum/np.maximum)."""
    n = left.shape[1]
    for r in range(r0, r1):
        nxt = -np.inf
        for i in range(n - 1, -1, -1):
            a = left[r, i]
            v = a if (a <= nxt or a != a) else nxt
            b = right[r, i]
            v = v if (v >= b or v != v) else b
            out[r, i] = v
            nxt = v


@nb.njit(nogil=True, cache=True)
def since_rows(left, right, out, r0, r1):  # pragma: no cover - compiled
    """Unbounded since: out[i] = max(r[i], min(l[i], out[i - 1])), with out[-1] = -inf."""
    n = left.shape[1]
    for r in range(r0, r1):
        prev = -np.inf
        for i in range(n):
            a = left[r, i]
            v = a if (a <= prev or a != a) else prev
            b = right[r, i]
            v = v if (v >= b or v != v) else b
            out[r, i] = v
            prev = v


@nb.njit(parallel=True, nogil=True, cache=True)
def until(left, right, out, chunks):  # pragma: no cover - compiled
    """:func:`until_rows` over every row, in ``chunks`` parallel tasks."""
    rows = left.shape[0]
    for ch in nb.prange(chunks):
        until_rows(left, right, out, ch * rows // chunks, (ch + 1) * rows // chunks)


@nb.njit(parallel=True, nogil=True, cache=True)
def since(left, right, out, chunks):  # pragma: no cover - compiled
    """:func:`since_rows` over every row, in ``chunks`` parallel tasks."""
    rows = left.shape[0]
    for ch in nb.prange(chunks):
        since_rows(left, right, out, ch * rows // chunks, (ch + 1) * rows // chunks)
