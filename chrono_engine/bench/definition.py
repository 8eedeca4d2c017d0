"""The pieces of the search definition that the NumPy peers share: per-item decay
parameters, the decay evaluated on NumPy arrays, and the arbitration order inside a stem.

The decay formulas are :func:`chrono_engine.decay.evaluate_spec`'s, vectorised over items
whose kernels differ; the Numba scan (:mod:`.numba_scan`) compiles the same formulas per
item.
"""
from __future__ import annotations

import numpy as np

__all__ = ["decay_eval", "decay_rows", "static_rank"]


def decay_rows(specs: np.ndarray, codes: np.ndarray):
    """Per-item kernel parameters (code, p0, p1, scale, symmetric) from per-type specs."""
    s = np.asarray(specs, np.float64)[codes]
    return (s[:, 0].astype(np.int64), s[:, 1].copy(), s[:, 2].copy(), s[:, 3].copy(), s[:, 4] != 0)


def decay_eval(age: np.ndarray, code, p0, p1, scale, sym) -> np.ndarray:
    """evaluate_spec vectorised over items with per-item parameters; ``age`` is (B, n)
    days and the parameter arrays (n,). Same formulas as chrono_engine.decay.evaluate_spec."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        a = np.where(sym, np.abs(age), np.maximum(age, 0.0)) if sym.any() else np.maximum(age, 0.0)
        a = a * scale
        present = np.unique(code)
        out = None
        for c in present:
            if c == 0:
                d = np.ones_like(a)
            elif c == 1:
                d = np.exp(-p0 * np.maximum(0.0, a - p1))
            elif c == 2:
                x = np.maximum(0.0, a - p1)
                d = np.exp(-(x * x) / (2.0 * p0 * p0))
            elif c == 3:
                d = np.maximum(0.0, 1.0 - p0 * np.maximum(0.0, a - p1))
            elif c == 4:
                d = (1.0 + a) ** (-p0)
            else:
                d = np.exp(-((a / p1) ** p0))
            out = d if out is None else np.where(code == c, d, out)
    return out


def static_rank(cols: dict) -> np.ndarray:
    """Rank of each row by (version, valid_from, row): the arbitration order inside one
    in-force class (tests/reference.py ``winners``)."""
    n = len(cols["valid_from"])
    order = np.lexsort((np.arange(n), cols["valid_from"], cols["version"]))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    return rank
