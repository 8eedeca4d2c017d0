"""Plain NumPy reference for STL robustness: each operator from its definition, O(n·w).

Independent of the rewrites in :mod:`.plan` and of the kernels, and vectorised over traces
only, so it is slow for long windows; tests compare it with the fast path for exact
equality. Semantics are RTAMT 0.4.10's discrete-time offline ones, per sample i of a trace
of n samples (windows are clipped to the trace; an empty one gives the identity):

- ``G[a,b] φ`` (i) = min φ over [i+a, i+b], +∞ if i + a ≥ n; ``F`` likewise with max, −∞;
- ``H[a,b] φ`` (i) = min φ over [i−b, i−a], +∞ if i − a < 0; ``O`` likewise with max, −∞;
- ``φ U[a,b] ψ`` (i) = max over t in [i+a, i+b] of min(ψ(t), min φ over [i, t)), −∞ if none;
- ``φ S[a,b] ψ`` (i) = max over t in [i−b, i−a] of min(ψ(t), min φ over (t, i]);
- unbounded operators take the whole future or past; ``X``/``Y`` read the next/previous
  sample (+∞ past the ends); ``rise``/``fall`` as RTAMT.
"""
from __future__ import annotations

import numpy as np

from .syntax import Node

__all__ = ["evaluate_reference"]

INF = np.inf


def _shifted(x: np.ndarray, k: int, fill: float) -> np.ndarray:
    """out[:, i] = x[:, i + k], ``fill`` outside the trace."""
    n = x.shape[1]
    out = np.full_like(x, fill)
    if 0 <= k < n:
        out[:, :n - k] = x[:, k:]
    elif -n < k < 0:
        out[:, -k:] = x[:, :n + k]
    return out


def _future_window(x: np.ndarray, a: int, b: int, agg, fill: float) -> np.ndarray:
    out = np.full_like(x, fill)
    for k in range(a, min(b, x.shape[1] - 1) + 1):
        out = agg(out, _shifted(x, k, fill))
    return out


def _past_window(x: np.ndarray, a: int, b: int, agg, fill: float) -> np.ndarray:
    out = np.full_like(x, fill)
    for k in range(a, min(b, x.shape[1] - 1) + 1):
        out = agg(out, _shifted(x, -k, fill))
    return out


def _until(left: np.ndarray, right: np.ndarray, a: int, b: int) -> np.ndarray:
    out = np.full_like(left, -INF)
    held = np.full_like(left, INF)  # min of left over [i, i + k)
    for k in range(0, min(b, left.shape[1] - 1) + 1):
        if k >= a:
            out = np.maximum(out, np.minimum(_shifted(right, k, -INF), held))
        held = np.minimum(held, _shifted(left, k, INF))
    return out


def _since(left: np.ndarray, right: np.ndarray, a: int, b: int) -> np.ndarray:
    out = np.full_like(left, -INF)
    held = np.full_like(left, INF)  # min of left over (i − k, i]
    for k in range(0, min(b, left.shape[1] - 1) + 1):
        if k >= a:
            out = np.maximum(out, np.minimum(_shifted(right, -k, -INF), held))
        held = np.minimum(held, _shifted(left, -k, INF))
    return out


def evaluate_reference(tree: Node, signals: dict[str, np.ndarray],
                       shape: tuple[int, int]) -> np.ndarray:
    """Robustness of ``tree`` at every sample, for float64 signals of shape (traces, steps)."""
    n = shape[1]
    with np.errstate(all="ignore"):
        return _eval(tree, signals, shape, n)


def _eval(t: Node, env: dict[str, np.ndarray], shape: tuple[int, int], n: int) -> np.ndarray:
    op = t.op
    if op == "var":
        return env[t.name]
    if op == "const":
        return np.full(shape, t.value)
    x = [_eval(c, env, shape, n) for c in t.args]
    lo, hi = (0, n) if t.lo is None else (t.lo, t.hi)
    simple = {
        "add": lambda: x[0] + x[1], "sub": lambda: x[0] - x[1], "mul": lambda: x[0] * x[1],
        "div": lambda: x[0] / x[1], "pow": lambda: np.power(x[0], x[1]),
        "abs": lambda: np.abs(x[0]), "sqrt": lambda: np.sqrt(x[0]), "exp": lambda: np.exp(x[0]),
        "ge": lambda: x[0] - x[1], "gt": lambda: x[0] - x[1],
        "le": lambda: x[1] - x[0], "lt": lambda: x[1] - x[0],
        "eq": lambda: -np.abs(x[0] - x[1]), "ne": lambda: np.abs(x[0] - x[1]),
        "not": lambda: -x[0], "and": lambda: np.minimum(x[0], x[1]),
        "or": lambda: np.maximum(x[0], x[1]), "implies": lambda: np.maximum(-x[0], x[1]),
        "iff": lambda: -np.abs(x[0] - x[1]), "xor": lambda: np.abs(x[0] - x[1]),
        "prev": lambda: _shifted(x[0], -1, INF), "next": lambda: _shifted(x[0], 1, INF),
        "rise": lambda: np.minimum(-_shifted(x[0], -1, -INF), x[0]),
        "fall": lambda: np.minimum(_shifted(x[0], -1, INF), -x[0]),
        "always": lambda: _future_window(x[0], lo, hi, np.minimum, INF),
        "eventually": lambda: _future_window(x[0], lo, hi, np.maximum, -INF),
        "historically": lambda: _past_window(x[0], lo, hi, np.minimum, INF),
        "once": lambda: _past_window(x[0], lo, hi, np.maximum, -INF),
        "until": lambda: _until(x[0], x[1], lo, hi),
        "since": lambda: _since(x[0], x[1], lo, hi),
        "unless": lambda: np.maximum(_future_window(x[0], 0, hi, np.minimum, INF),
                                     _until(x[0], x[1], lo, hi)),
    }
    return simple[op]()
