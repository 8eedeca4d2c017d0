"""Bounded signal temporal logic (STL) robustness for many traces at once.

>>> import numpy as np
>>> from chrono_engine.verify import stl
>>> v = np.array([[0.9, 0.8, 0.4, 0.7]])
>>> stl.robustness("G[0,2](v >= 0.5)", {"v": v}).tolist()
[[-0.09999999999999998, -0.09999999999999998, -0.09999999999999998, 0.19999999999999996]]

Quantitative discrete-time semantics are RTAMT's offline ``evaluate`` (version 0.4.10),
sample by sample: a future window that runs past the end of a trace is cut there (so
``G[0,2]`` at the last sample looks at that sample only, and a window wholly past the end
gives +∞ for G, −∞ for F); past operators are cut at the start alike. Formulas are parsed
once and their compiled plans cached (see :mod:`.syntax` for the language and
:mod:`.plan` for how operators become O(n) kernels).
"""
from __future__ import annotations

import functools
from typing import Any, Mapping

import numpy as np

from ...errors import QueryError
from .plan import Plan, execute, lower
from .reference import evaluate_reference
from .syntax import Node, STLSyntaxError, parse_tree, signal_names, to_text

__all__ = ["Formula", "parse", "robustness", "reference_robustness", "STLSyntaxError", "Node"]


class Formula:
    """A parsed, compiled STL formula (immutable; get one from :func:`parse`).

    Attributes:
        text: the formula as written.
        tree: its syntax tree (:class:`Node`).
        signals: the signal names it reads, sorted.
    """

    __slots__ = ("text", "tree", "signals", "_plan")

    def __init__(self, text: str, tree: Node, plan: Plan):
        self.text = text
        self.tree = tree
        self.signals = signal_names(tree)
        self._plan = plan

    def robustness(self, signals: Mapping[str, Any]) -> np.ndarray:
        """Robustness at every sample; see :func:`robustness`."""
        env, shape, one_d = _signals(self, signals)
        out = execute(self._plan, env, shape)
        if any(out is a for a in env.values()):  # the formula is a bare signal
            out = out.copy()
        return out[0] if one_d else out

    def reference(self, signals: Mapping[str, Any]) -> np.ndarray:
        """The same values from the plain NumPy reference (slow; for tests and audits)."""
        env, shape, one_d = _signals(self, signals)
        out = np.array(evaluate_reference(self.tree, env, shape), dtype=np.float64)
        return out[0] if one_d else out

    def __str__(self) -> str:
        return to_text(self.tree)

    def __repr__(self) -> str:
        return f"Formula({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Formula) and self.tree == other.tree

    def __hash__(self) -> int:
        return hash(self.tree)


@functools.lru_cache(maxsize=1024)
def _compile(text: str) -> Formula:
    tree = parse_tree(text)
    return Formula(text, tree, lower(tree))


def parse(formula: str | Formula) -> Formula:
    """Parse and compile a formula once (cached by its text).

    Raises:
        STLSyntaxError: the formula is malformed (the message points at the column).
    """
    if isinstance(formula, Formula):
        return formula
    if not isinstance(formula, str):
        raise QueryError(f"an STL formula must be a string, got {type(formula).__name__}")
    return _compile(formula)


def robustness(formula: str | Formula, signals: Mapping[str, Any]) -> np.ndarray:
    """Quantitative robustness of ``formula`` at every sample of every trace.

    Args:
        formula: STL text (RTAMT syntax or the short forms ``G[a,b]``, ``F[a,b]``,
            ``U[a,b]``, ...) or a :class:`Formula`.
        signals: signal name → array of shape (traces, steps), or (steps,) for one trace.
            Every signal the formula reads must be present, all with the same shape and
            no NaN; other entries are ignored.

    Returns:
        float64 array of the signals' shape: ρ(φ, trace, i) for every sample i, as RTAMT's
        discrete-time ``evaluate`` reports it. ρ ≥ 0 means satisfied at that sample.

    Raises:
        STLSyntaxError: malformed formula. QueryError: unknown or ill-shaped signal, NaN.
    """
    return parse(formula).robustness(signals)


def reference_robustness(formula: str | Formula, signals: Mapping[str, Any]) -> np.ndarray:
    """:func:`robustness` from the plain NumPy reference (O(n·w); for tests)."""
    return parse(formula).reference(signals)


def _signals(f: Formula, signals: Mapping[str, Any]) -> tuple[dict[str, np.ndarray],
                                                              tuple[int, int], bool]:
    """Validated float64 (traces, steps) arrays for the signals ``f`` reads."""
    if hasattr(signals, "column_names") and not isinstance(signals, Mapping):
        signals = {name: signals[name] for name in signals.column_names}  # Arrow table
    if not isinstance(signals, Mapping):
        raise QueryError(f"signals must map names to arrays, got {type(signals).__name__}")
    missing = [s for s in f.signals if s not in signals]
    if missing:
        have = ", ".join(map(repr, sorted(map(str, signals)))) or "none"
        raise QueryError(f"formula {f.text!r} reads unknown signal {missing[0]!r} "
                         f"(signals given: {have})")
    names = f.signals or tuple(signals)[:1]
    if not names:
        raise QueryError(f"formula {f.text!r} reads no signal: pass at least one array in "
                         f"signals to give the shape of the result")
    env: dict[str, np.ndarray] = {}
    shape: tuple[int, ...] = ()
    first = None
    for name in names:
        raw = signals[name]
        if hasattr(raw, "to_numpy") and not isinstance(raw, np.ndarray):
            raw = raw.to_numpy()
        arr = np.asarray(raw)
        if arr.dtype.kind not in "fiub" or arr.dtype.kind == "b":
            raise QueryError(f"signal {name!r} must hold numbers, got dtype {arr.dtype}")
        if arr.ndim not in (1, 2):
            raise QueryError(f"signal {name!r} must be (steps,) or (traces, steps), got shape "
                             f"{arr.shape}")
        if not shape:
            shape, first = arr.shape, name
        elif arr.shape != shape:
            raise QueryError(f"signal {name!r} has shape {arr.shape} but {first!r} has "
                             f"{shape}: all signals must have one shape")
        arr = np.ascontiguousarray(np.atleast_2d(arr), dtype=np.float64)
        nan = np.isnan(arr)
        if nan.any():
            r, c = np.argwhere(nan)[0]
            where = f"step {c}" if len(shape) == 1 else f"trace {r}, step {c}"
            raise QueryError(f"signal {name!r} is NaN at {where}")
        env[name] = arr
    return env, (1, shape[0]) if len(shape) == 1 else shape, len(shape) == 1
