"""Argument checks shared by the decay families, the policy and the interop readers
(internal): numbers, fractions, units, flags and ages, each refused with a QueryError that
names its owner and the rule it broke."""
from __future__ import annotations

import math
from numbers import Real

import numpy as np
import numpy.typing as npt

from chrono_engine._args import array, shown
from chrono_engine.errors import QueryError

LN2 = math.log(2.0)

#: How many of the parameter's unit fit in one day: a = age_days * factor.
UNIT_FACTORS: dict[str, float] = {"days": 1.0, "hours": 24.0, "seconds": 86400.0}


def to_float(value: Real) -> float:
    """A real number as a float; one beyond the float range (an int of 400 digits) is inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def number(value: object, name: str, owner: str, *, positive: bool) -> float:
    """A finite real number, > 0 (positive) or >= 0; bools are refused on purpose."""
    rule = "> 0" if positive else ">= 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise QueryError(f"{owner}: {name} must be a finite number {rule}, got {shown(value)}")
    x = to_float(value)
    if not math.isfinite(x) or (x <= 0.0 if positive else x < 0.0):
        raise QueryError(f"{owner}: {name} must be a finite number {rule}, got {shown(value)}")
    return x


def fraction(value: object, name: str, owner: str, *, allow_zero: bool = False) -> float:
    """A number in the open interval (0, 1) (or [0, 1) with allow_zero)."""
    interval = "[0, 1)" if allow_zero else "(0, 1)"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise QueryError(f"{owner}: {name} must be a number in {interval}, got {shown(value)}")
    x = to_float(value)
    low_ok = x >= 0.0 if allow_zero else x > 0.0
    if not (math.isfinite(x) and low_ok and x < 1.0):
        raise QueryError(f"{owner}: {name} must be a number in {interval}, got {shown(value)}")
    return x


def unit_name(unit: object, owner: str) -> str:
    """One of the parameter units, "days", "hours" or "seconds"."""
    if not isinstance(unit, str) or unit not in UNIT_FACTORS:
        raise QueryError(f"{owner}: unit must be one of 'days', 'hours' or 'seconds', "
                         f"got {shown(unit)}")
    return unit


def flag(value: object, name: str, owner: str) -> bool:
    """True or False (a NumPy bool too); any other value is refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise QueryError(f"{owner}: {name} must be True or False, got {shown(value)}")
    return bool(value)


def exactly_one(owner: str, first: tuple[str, object], second: tuple[str, object]) -> None:
    """Refuse both or neither of two alternative (name, value) parameters."""
    (n1, v1), (n2, v2) = first, second
    if v1 is None and v2 is None:
        raise QueryError(f"{owner} needs exactly one of {n1} or {n2}; got neither")
    if v1 is not None and v2 is not None:
        raise QueryError(f"{owner} needs exactly one of {n1} or {n2}; got both "
                         f"({n1}={shown(v1)}, {n2}={shown(v2)})")


def ages_in_days(age_days: npt.ArrayLike) -> np.ndarray:
    """Ages as a float64 array (a copy only when a conversion is needed)."""
    arr = array(age_days, "ages", QueryError)
    kind = arr.dtype.kind
    if kind == "f" or kind in "iu":
        return arr.astype(np.float64, copy=False)
    if kind == "m":
        return arr / np.timedelta64(1, "D")
    if kind == "O":
        try:
            return arr.astype(np.float64)
        except Exception:  # noqa: BLE001 - a caller's __float__ may raise anything
            pass
        try:  # datetime.timedelta objects
            return arr.astype("timedelta64[us]") / np.timedelta64(1, "D")
        except Exception:  # noqa: BLE001
            pass
    raise QueryError(f"ages must be numbers of days or timedeltas, got dtype {arr.dtype} "
                     f"({shown(age_days)})")
