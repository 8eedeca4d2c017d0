"""Compile a formula's syntax tree once into a flat plan, then run the plan on signals.

Lowering rewrites every operator into a few primitives whose kernels are O(n) per trace:

- predicates and Boolean operators become arithmetic, min and max, as in RTAMT
  (``a >= b`` → a − b, ``a <= b`` → b − a, ``a == b`` → −|a − b|, ``a -> b`` → max(−a, b));
- ``G[a,b]``/``F[a,b]`` (future) and ``H[a,b]``/``O[a,b]`` (past) become sliding windows,
  unbounded ones running min/max;
- bounded until and since become windows around the unbounded recursions, using the
  identities (exact for max-min robustness, with truncation at the ends of the trace)

      (φ U[a,b] ψ)(i) = min( min φ[i, i+a−1],  (φ U ψ)(i+a),  max ψ[i+a, i+b] )
      (φ S[a,b] ψ)(i) = min( min φ[i−a+1, i], (φ S ψ)(i−a),  max ψ[i−b, i−a] )

  (−∞ where i + a or i − a leaves the trace). With t₀ the first (last) time in the window
  where ψ reaches a level ρ, the left operand only has to hold up to t₀, which gives both
  inequalities;
- ``φ W[a,b] ψ`` is ``G[0,b] φ or φ U[a,b] ψ`` (RTAMT's definition).

Equal subtrees are computed once. Plans are cached per formula text by :func:`.parse`.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._parallel import run
from . import kernels as _k
from .syntax import Node

__all__ = ["Plan", "lower", "execute"]

INF = float("inf")


class Instr(NamedTuple):
    """One step of a plan: ``slots[out] = kind(slots[args...], *params)``."""

    kind: str
    args: tuple[int, ...]
    params: tuple[Any, ...]


class Plan(NamedTuple):
    """Instructions in evaluation order; the result is the last one's slot."""

    instrs: tuple[Instr, ...]
    last_use: tuple[int, ...]  # for each slot, the index of the last instruction reading it


class _Lowering:
    def __init__(self) -> None:
        self.instrs: list[Instr] = []
        self.memo: dict[Instr, int] = {}

    def emit(self, kind: str, args: tuple[int, ...] = (), params: tuple[Any, ...] = ()) -> int:
        ins = Instr(kind, args, params)
        slot = self.memo.get(ins)
        if slot is None:
            slot = len(self.instrs)
            self.instrs.append(ins)
            self.memo[ins] = slot
        return slot

    # helpers for the rewrites
    def neg(self, a: int) -> int:
        return self.emit("neg", (a,))

    def min(self, a: int, b: int) -> int:
        return self.emit("min", (a, b))

    def max(self, a: int, b: int) -> int:
        return self.emit("max", (a, b))

    def window(self, a: int, is_max: bool, lo: int, hi: int, future: bool) -> int:
        """min/max over [i+lo, i+hi] (future) or [i−hi, i−lo] (past)."""
        return self.emit("window", (a,), (is_max, lo, hi, future))

    def shift(self, a: int, by: int, fill: float) -> int:
        """out[i] = a[i + by] (fill outside the trace)."""
        return a if by == 0 else self.emit("shift", (a,), (by, fill))

    def node(self, n: Node) -> int:
        op = n.op
        if op == "var":
            return self.emit("var", (), (n.name,))
        if op == "const":
            return self.emit("const", (), (n.value,))
        a = [self.node(c) for c in n.args]
        if op in ("add", "sub", "mul", "div", "pow"):
            return self.emit(op, tuple(a))
        if op in ("abs", "sqrt", "exp"):
            return self.emit(op, tuple(a))
        if op in ("ge", "gt"):
            return self.emit("sub", (a[0], a[1]))
        if op in ("le", "lt"):
            return self.emit("sub", (a[1], a[0]))
        if op in ("eq", "iff"):
            return self.neg(self.emit("abs", (self.emit("sub", (a[0], a[1])),)))
        if op in ("ne", "xor"):
            return self.emit("abs", (self.emit("sub", (a[0], a[1])),))
        if op == "not":
            return self.neg(a[0])
        if op == "and":
            return self.min(a[0], a[1])
        if op == "or":
            return self.max(a[0], a[1])
        if op == "implies":
            return self.max(self.neg(a[0]), a[1])
        if op == "prev":
            return self.shift(a[0], -1, INF)
        if op == "next":
            return self.shift(a[0], 1, INF)
        if op == "rise":
            return self.min(self.neg(self.shift(a[0], -1, -INF)), a[0])
        if op == "fall":
            return self.min(self.shift(a[0], -1, INF), self.neg(a[0]))
        if op in ("always", "eventually", "historically", "once"):
            is_max = op in ("eventually", "once")
            future = op in ("always", "eventually")
            if n.lo is None:
                return self.emit("scan", (a[0],), (is_max, future))
            return self.window(a[0], is_max, n.lo, n.hi, future)
        if op == "until":
            return self.until(a[0], a[1], n.lo, n.hi)
        if op == "since":
            return self.since(a[0], a[1], n.lo, n.hi)
        if op == "unless":
            if n.lo is None:
                return self.max(self.emit("scan", (a[0],), (False, True)), self.until(a[0], a[1]))
            return self.max(self.window(a[0], False, 0, n.hi, True),
                            self.until(a[0], a[1], n.lo, n.hi))
        raise AssertionError(f"unknown operator {op}")  # the parser produces no other

    def until(self, left: int, right: int, lo: int | None = None, hi: int | None = None) -> int:
        unbounded = self.emit("until", (left, right))
        if lo is None:
            return unbounded
        inner = self.min(unbounded, self.window(right, True, 0, hi - lo, True))
        out = self.shift(inner, lo, -INF)
        return self.min(self.window(left, False, 0, lo - 1, True), out) if lo > 0 else out

    def since(self, left: int, right: int, lo: int | None = None, hi: int | None = None) -> int:
        unbounded = self.emit("since", (left, right))
        if lo is None:
            return unbounded
        inner = self.min(unbounded, self.window(right, True, 0, hi - lo, False))
        out = self.shift(inner, -lo, -INF)
        return self.min(self.window(left, False, 0, lo - 1, False), out) if lo > 0 else out


def lower(tree: Node) -> Plan:
    """Compile a syntax tree into a :class:`Plan`."""
    low = _Lowering()
    low.node(tree)
    instrs = tuple(low.instrs)
    last_use = [len(instrs)] * len(instrs)  # the result lives to the end
    for i, ins in enumerate(instrs):
        for a in ins.args:
            last_use[a] = i
    last_use[-1] = len(instrs)
    return Plan(instrs, tuple(last_use))


# ------------------------------------------------------------------------------ execution

def _array(v: Any, shape: tuple[int, int]) -> np.ndarray:
    if isinstance(v, np.ndarray):
        return v
    return np.full(shape, v, dtype=np.float64)


_BINARY_UFUNC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
                 "pow": np.power, "min": np.minimum, "max": np.maximum}
_UNARY_UFUNC = {"neg": np.negative, "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp}


def _window(x: np.ndarray, is_max: bool, lo: int, hi: int, future: bool) -> np.ndarray:
    n = x.shape[1]
    lo, hi = min(lo, n + 1), min(hi, n + 1)  # beyond the trace a window is empty anyway
    off, w = (lo if future else -hi), hi - lo + 1
    out = np.empty_like(x)
    run(_k.window_rows, _k.window_min, x.shape[0], x.size,
        np.negative(x) if is_max else x, out, off, w)
    if is_max:
        np.negative(out, out=out)
    nan = np.isnan(x)
    if nan.any():  # rare (∞ − ∞ inside the formula): a window holding NaN is NaN
        seen = np.zeros((x.shape[0], n + 1), np.int64)
        np.cumsum(nan, axis=1, out=seen[:, 1:])
        i = np.arange(n)
        first = np.clip(i + off, 0, n)
        stop = np.clip(i + off + w, 0, n)
        hit = (seen[:, stop] - seen[:, first]) > 0
        out[hit & (stop > first)] = np.nan
    return out


def _shift(x: np.ndarray, by: int, fill: float) -> np.ndarray:
    n = x.shape[1]
    out = np.full_like(x, fill)
    if by > 0 and by < n:
        out[:, :n - by] = x[:, by:]
    elif by < 0 and -by < n:
        out[:, -by:] = x[:, :n + by]
    return out


def execute(plan: Plan, signals: dict[str, np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """Run a plan on validated float64 signals of one (traces, steps) shape."""
    slots: list[Any] = [None] * len(plan.instrs)
    with np.errstate(all="ignore"):  # IEEE results (inf, nan) as RTAMT's floats would give
        for i, ins in enumerate(plan.instrs):
            kind, args, params = ins
            vals = [slots[a] for a in args]
            if kind == "var":
                out = signals[params[0]]
            elif kind == "const":
                out = float(params[0])
            elif kind in _BINARY_UFUNC:
                out = _BINARY_UFUNC[kind](vals[0], vals[1])
                if not isinstance(out, np.ndarray):
                    out = float(out)
            elif kind in _UNARY_UFUNC:
                out = _UNARY_UFUNC[kind](vals[0])
                if not isinstance(out, np.ndarray):
                    out = float(out)
            else:
                x = _array(vals[0], shape)
                if kind == "window":
                    out = _window(x, *params)
                elif kind == "scan":  # running min/max to the end (future) or from the start
                    acc = np.maximum if params[0] else np.minimum
                    out = (np.ascontiguousarray(acc.accumulate(x[:, ::-1], axis=1)[:, ::-1])
                           if params[1] else acc.accumulate(x, axis=1))
                elif kind == "shift":
                    out = _shift(x, *params)
                elif kind in ("until", "since"):
                    out = np.empty_like(x)
                    serial, parallel = ((_k.until_rows, _k.until) if kind == "until"
                                        else (_k.since_rows, _k.since))
                    run(serial, parallel, x.shape[0], x.size, x, _array(vals[1], shape), out)
                else:  # pragma: no cover - lowering emits no other kind
                    raise AssertionError(kind)
            slots[i] = out
            for a in args:  # drop intermediates as soon as they are dead
                if plan.last_use[a] == i:
                    slots[a] = None
    return _array(slots[-1], shape)
