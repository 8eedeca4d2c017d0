"""Decay families D(age) and per-fact-type decay policies.

The validity of an evidence item e at query time T is (paper eq. 2/3)

    V(e, T) = q_e · D_j(age),    age = T − t_e  (days)

where q_e is the source reliability and D_j the decay profile of the item's fact type j
(its "sensitivity class"). This module holds the decay families, their vectorised NumPy
references (``Decay.evaluate``), the exact parameter contract of the C++ kernel
(``Decay._kernel_spec`` and its NumPy reference :func:`evaluate_spec`) and
:class:`DecayPolicy`, which picks a family per fact type.

Conventions shared by every family:

* the caller passes ``age_days = T − t_e`` in days (float, scalar or array; NaN gives NaN;
  ``numpy.timedelta64`` values are converted to days);
* ``unit=`` says in which unit the *parameters* are given ("days", "hours" or "seconds");
  internally the age is converted to that unit (``a = age_days · 24`` for hours);
* a non-symmetric family clamps negative ages (items observed after T) to 0, so D = 1;
  ``symmetric=True`` uses the distance |T − t_e| instead, for window-centred decay (the
  Elasticsearch / Milvus / Qdrant behaviour, which measure |value − origin|);
* formulas match the ``chronofy`` reference package (0.1.9) where it has the family.

>>> from chrono_engine.decay import Exponential, DecayPolicy, NoDecay
>>> news = Exponential(half_life=7)            # β = ln 2 / 7 per day
>>> [round(float(v), 4) for v in news([0, 7, 14])]
[1.0, 0.5, 0.25]
>>> policy = DecayPolicy({"news": news}, default=NoDecay())
>>> policy.evaluate([7, 7], ["news", "demographic"]).tolist()
[0.5, 1.0]
"""
from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from numbers import Real
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from chrono_engine._args import array, shown
from chrono_engine.errors import NotFoundError, QueryError

__all__ = [
    "Decay",
    "Exponential",
    "HalfLife",
    "Gaussian",
    "Linear",
    "PowerLaw",
    "Weibull",
    "NoDecay",
    "DecayPolicy",
    "parse_decay",
    "evaluate_spec",
    "CHRONOFY_DEFAULT_BETA",
]

_LN2 = math.log(2.0)

# How many of the parameter's unit fit in one day: a = age_days * factor.
_UNIT_FACTORS: dict[str, float] = {"days": 1.0, "hours": 24.0, "seconds": 86400.0}

# Kernel codes shared with the C++ decay kernel in cpp/ (see evaluate_spec).
_CODE_NONE, _CODE_EXP, _CODE_GAUSS, _CODE_LINEAR, _CODE_POWER, _CODE_WEIBULL = range(6)

KernelSpec = tuple[int, float, float, float, bool]

_POLICY_FORMAT_VERSION = 1

#: chronofy 0.1.9's default β table (``chronofy.decay.exponential.DEFAULT_BETA``), per day;
#: β = 0 does not decay. :meth:`DecayPolicy.from_chronofy` lays a user's table over it.
CHRONOFY_DEFAULT_BETA: Mapping[str, float] = MappingProxyType({
    "vital_sign": 5.0, "lab_result": 2.0, "medication": 1.0, "diagnosis": 0.5,
    "chronic_condition": 0.01, "demographic": 0.0, "general": 0.5})

# chronofy's time_unit as the divisor of an age in seconds -> our unit name.
_CHRONOFY_UNITS = {1.0: "seconds", 3600.0: "hours", 86400.0: "days"}


# --------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------

def _float(value: Real) -> float:
    """A real number as a float; one beyond the float range (an int of 400 digits) is inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _number(value: object, name: str, owner: str, *, positive: bool) -> float:
    """A finite real number, > 0 (positive) or >= 0; bools are refused on purpose."""
    rule = "> 0" if positive else ">= 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise QueryError(f"{owner}: {name} must be a finite number {rule}, got {shown(value)}")
    x = _float(value)
    if not math.isfinite(x) or (x <= 0.0 if positive else x < 0.0):
        raise QueryError(f"{owner}: {name} must be a finite number {rule}, got {shown(value)}")
    return x


def _fraction(value: object, name: str, owner: str, *, allow_zero: bool = False) -> float:
    """A number in the open interval (0, 1) (or [0, 1) with allow_zero)."""
    interval = "[0, 1)" if allow_zero else "(0, 1)"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise QueryError(f"{owner}: {name} must be a number in {interval}, got {shown(value)}")
    x = _float(value)
    low_ok = x >= 0.0 if allow_zero else x > 0.0
    if not (math.isfinite(x) and low_ok and x < 1.0):
        raise QueryError(f"{owner}: {name} must be a number in {interval}, got {shown(value)}")
    return x


def _unit(unit: object, owner: str) -> str:
    if not isinstance(unit, str) or unit not in _UNIT_FACTORS:
        raise QueryError(f"{owner}: unit must be one of 'days', 'hours' or 'seconds', "
                         f"got {shown(unit)}")
    return unit


def _flag(value: object, name: str, owner: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise QueryError(f"{owner}: {name} must be True or False, got {shown(value)}")
    return bool(value)


def _one_of(owner: str, first: tuple[str, object], second: tuple[str, object]) -> None:
    (n1, v1), (n2, v2) = first, second
    if v1 is None and v2 is None:
        raise QueryError(f"{owner} needs exactly one of {n1} or {n2}; got neither")
    if v1 is not None and v2 is not None:
        raise QueryError(f"{owner} needs exactly one of {n1} or {n2}; got both "
                         f"({n1}={shown(v1)}, {n2}={shown(v2)})")


# Elasticsearch time units (TimeValue.parseTimeValue, the parser of a date decay's scale
# and offset) in nanoseconds, in the order it tries the suffixes.
_ES_TIME_UNITS = (("nanos", 1), ("micros", 10**3), ("ms", 10**6), ("s", 10**9),
                  ("m", 60 * 10**9), ("h", 3600 * 10**9), ("d", 86400 * 10**9))
_ES_MS_PER_UNIT = {"days": 86_400_000, "hours": 3_600_000, "seconds": 1000}
_F32_MAX = float(np.finfo(np.float32).max)


def _es_duration(value: object, name: str, owner: str) -> tuple[int, str]:
    """An Elasticsearch duration ("10d", "12h", "90m") as (whole milliseconds, its unit).

    The rules of Elasticsearch's TimeValue parser, which reads a date decay's scale and
    offset: a whole number (no fraction, not negative) and one of nanos, micros, ms, s, m,
    h, d, case-insensitive except m ("M" is months elsewhere); a bare "0" is zero; the
    value is truncated to whole milliseconds, as ``TimeValue.getMillis`` does.
    """
    rule = ("an Elasticsearch duration: a whole number and a unit d, h, m, s, ms, micros or "
            "nanos, such as '10d' or '12h'")
    if not isinstance(value, str):
        raise QueryError(f"{owner}: {name} must be {rule}; got {shown(value)}")
    text = value.strip()
    norm = text.lower()
    for suffix, ns in _ES_TIME_UNITS:
        if (text if suffix == "m" else norm).endswith(suffix):
            number = norm[:-len(suffix)].strip()
            break
    else:
        if re.fullmatch(r"0+", norm):
            return 0, ""
        raise QueryError(f"{owner}: {name} must be {rule}; got {shown(value)} (no such unit)")
    if not re.fullmatch(r"[+-]?[0-9]+", number):
        try:
            fractional = math.isfinite(float(number))
        except ValueError:
            fractional = False
        why = ("fractional durations are not supported, as in Elasticsearch: write '36h' for "
               "'1.5d'" if fractional else "not a whole number")
        raise QueryError(f"{owner}: {name} must be {rule}; got {shown(value)} ({why})")
    n = int(number)
    if n < 0:
        raise QueryError(f"{owner}: {name} must not be negative; got {shown(value)}")
    return n * ns // 10**6, suffix


def _f32(value: object, name: str, owner: str) -> float:
    """A finite number rounded to float32, as Qdrant stores a decay's scale and midpoint."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise QueryError(f"{owner}: {name} must be a finite number, got {shown(value)}")
    x = _float(value)
    if not (math.isfinite(x) and abs(x) <= _F32_MAX):
        raise QueryError(f"{owner}: {name} must be a finite number within Qdrant's 32-bit "
                         f"float range, got {shown(value)}")
    return float(np.float32(x))


def _description(data: Mapping[str, Any], kinds: tuple[str, ...], owner: str,
                 keywords: Mapping[str, Any]) -> tuple[str, Any]:
    """The one ``{kind: body}`` entry of a JSON decay description; ``keywords`` (the
    parameters also given as keywords) must all be None."""
    given = [k for k, v in keywords.items() if v is not None]
    if given:
        raise QueryError(f"{owner}: give the parameters in the description or as "
                         f"keywords, not both (got keywords {given})")
    found = [k for k in data if k in kinds]
    unknown = [k for k in data if k not in kinds]
    if unknown:
        raise QueryError(f"{owner}: unsupported key {shown(unknown[0])} in {shown(dict(data))}; "
                         f"expected one of {list(kinds)}")
    if len(found) != 1:
        raise QueryError(f"{owner} needs exactly one of {list(kinds)}, got {shown(dict(data))}")
    return found[0], data[found[0]]


def _family(cls: type, name: Any, families: Mapping[str, type], owner: str, label: str,
            mismatch: str) -> type:
    """The decay family ``name`` selects (a QueryError naming ``label`` otherwise); called on
    a family class rather than on :class:`Decay`, it must be that family (``mismatch``)."""
    family = families.get(name) if isinstance(name, str) else None
    if family is None:
        raise QueryError(f"{owner}: {label} must be one of {list(families)}, got {shown(name)}")
    if cls is not Decay and family is not cls:
        raise QueryError(f"{owner} got {mismatch}")
    return family


def _as_age_days(age_days: npt.ArrayLike) -> np.ndarray:
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


# --------------------------------------------------------------------------------------
# kernel contract reference
# --------------------------------------------------------------------------------------

def evaluate_spec(spec: KernelSpec, age_days: npt.ArrayLike) -> np.ndarray:
    """NumPy reference of the C++ decay kernel for one ``(code, p0, p1, scale, symmetric)``.

    The kernel first forms ``a = (|age| if symmetric else max(age, 0)) · scale`` and then

    ====  ============  =======================================
    code  family        D(a)
    ====  ============  =======================================
    0     none          1 (NaN for a NaN age)
    1     exponential   exp(−p0 · max(0, a − p1))
    2     gaussian      exp(−max(0, a − p1)² / (2 · p0²))
    3     linear        max(0, 1 − p0 · max(0, a − p1))
    4     power law     (1 + a)^(−p0)
    5     weibull       exp(−(a / p1)^p0)
    ====  ============  =======================================

    Every family's ``_kernel_spec()`` produces such a tuple, and
    ``family.evaluate(x) == evaluate_spec(family._kernel_spec(), x)`` (tests check 1e-12).

    >>> evaluate_spec((1, math.log(2) / 7, 0.0, 1.0, False), [-3.0, 14.0]).round(6).tolist()
    [1.0, 0.25]
    """
    if not isinstance(spec, tuple) or len(spec) != 5:
        raise QueryError(f"a decay kernel spec is a 5-tuple (code, p0, p1, scale, symmetric), "
                         f"got {shown(spec)}")
    code, p0, p1, scale, symmetric = spec
    if isinstance(code, (bool, np.bool_)) or not isinstance(code, Real) or code not in range(6):
        raise QueryError(f"unknown decay kernel code {shown(code)}; expected 0..5")
    for name, value in (("p0", p0), ("p1", p1), ("scale", scale)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
            raise QueryError(f"decay kernel spec: {name} must be a number, got {shown(value)}")
    x = _as_age_days(age_days)
    with np.errstate(over="ignore", under="ignore"):
        a = (np.abs(x) if symmetric else np.maximum(x, 0.0)) * float(scale)
        code = int(code)
        if code == _CODE_NONE:
            out = np.where(np.isnan(a), np.nan, 1.0)
        elif code == _CODE_EXP:
            out = np.exp(-p0 * np.maximum(0.0, a - p1))
        elif code == _CODE_GAUSS:
            d = np.maximum(0.0, a - p1)
            out = np.exp(-(d * d) / (2.0 * p0 * p0))
        elif code == _CODE_LINEAR:
            out = np.maximum(0.0, 1.0 - p0 * np.maximum(0.0, a - p1))
        elif code == _CODE_POWER:
            out = (1.0 + a) ** (-p0)
        else:
            out = np.exp(-((a / p1) ** p0))
    return np.asarray(out, dtype=np.float64)


# --------------------------------------------------------------------------------------
# families
# --------------------------------------------------------------------------------------

_FAMILIES: dict[str, type[Decay]] = {}


class Decay(ABC):
    """Base class of the decay families D(age) ∈ [0, 1], D(0) = 1, non-increasing in age.

    A decay object is immutable, hashable, comparable (same family and parameters) and
    picklable. ``d(age_days)`` is the same as ``d.evaluate(age_days)``.

    >>> from chrono_engine.decay import Decay, Weibull
    >>> d = Weibull(shape=2.0, scale=30.0)
    >>> Decay.from_dict(d.to_dict()) == d
    True
    """

    __slots__ = ("_unit", "_symmetric")

    #: name used in ``to_dict`` / ``from_dict``
    family: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.family:
            _FAMILIES[cls.family] = cls

    def __init__(self, *, unit: str = "days", symmetric: bool = False) -> None:
        owner = type(self).__name__
        self._unit = _unit(unit, owner)
        self._symmetric = _flag(symmetric, "symmetric", owner)

    # -- immutability ------------------------------------------------------------------
    def __setattr__(self, name: str, value: object) -> None:
        # Parameters are set once in __init__; afterwards a decay is a value object that
        # engines may share between threads and cache by hash.
        if hasattr(self, name):
            raise AttributeError(f"{type(self).__name__} is immutable")
        object.__setattr__(self, name, value)

    # -- common properties -------------------------------------------------------------
    @property
    def unit(self) -> str:
        """Unit of the parameters: "days", "hours" or "seconds"."""
        return self._unit

    @property
    def symmetric(self) -> bool:
        """True when D uses |T − t_e| (window-centred); False clamps negative ages to 0."""
        return self._symmetric

    @property
    def _unit_factor(self) -> float:
        return _UNIT_FACTORS[self._unit]

    @property
    @abstractmethod
    def half_life(self) -> float:
        """Age (in ``unit``) at which D first equals 0.5, computed analytically."""

    @property
    def half_life_days(self) -> float:
        """:attr:`half_life` converted to days."""
        return self.half_life / self._unit_factor

    # -- evaluation --------------------------------------------------------------------
    def evaluate(self, age_days: npt.ArrayLike) -> np.ndarray:
        """Vectorised NumPy reference: D at ``age_days`` (T − t_e in days) as float64.

        Accepts scalars, sequences, arrays and timedelta64 arrays; the result has the
        input's shape (0-d for a scalar). NaN ages give NaN.
        """
        x = _as_age_days(age_days)
        with np.errstate(over="ignore", under="ignore"):
            a = (np.abs(x) if self._symmetric else np.maximum(x, 0.0)) * self._unit_factor
            out = self._evaluate_units(a)
        return np.asarray(out, dtype=np.float64)

    def __call__(self, age_days: npt.ArrayLike) -> np.ndarray:
        """Alias of :meth:`evaluate`."""
        return self.evaluate(age_days)

    @abstractmethod
    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        """D at non-negative ages ``a`` already in ``unit`` (NaN passes through)."""

    @abstractmethod
    def _kernel_spec(self) -> KernelSpec:
        """(code, p0, p1, scale, symmetric) for the C++ kernel; see :func:`evaluate_spec`."""

    # -- parameters, equality, persistence ---------------------------------------------
    @abstractmethod
    def _params(self) -> dict[str, float]:
        """Canonical parameters, in constructor keyword form."""

    def _key(self) -> tuple[Any, ...]:
        return (type(self), tuple(self._params().items()), self._unit, self._symmetric)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decay):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self._params().items()]
        if self._unit != "days":
            parts.append(f"unit={self._unit!r}")
        if self._symmetric:
            parts.append("symmetric=True")
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description; :meth:`Decay.from_dict` rebuilds an equal object.

        >>> from chrono_engine.decay import HalfLife
        >>> HalfLife(12, unit="hours").to_dict()
        {'family': 'half_life', 'half_life': 12.0, 'unit': 'hours', 'symmetric': False}
        """
        return {"family": self.family, **self._params(), "unit": self._unit,
                "symmetric": self._symmetric}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decay:
        """Rebuild a decay from :meth:`to_dict` output (any family when called on Decay).

        >>> from chrono_engine.decay import Decay
        >>> Decay.from_dict({"family": "power_law", "exponent": 1.5})
        PowerLaw(exponent=1.5)
        """
        if not isinstance(data, Mapping):
            raise QueryError(f"a decay description must be a mapping, got {shown(data)}")
        fields = dict(data)
        family = fields.pop("family", None)
        target = _FAMILIES.get(family) if isinstance(family, str) else None
        if target is None:
            raise QueryError(f"unknown decay family {shown(family)}; expected one of "
                             f"{sorted(_FAMILIES)}")
        if cls is not Decay and target is not cls:
            raise QueryError(f"{cls.__name__}.from_dict got a {shown(family)} description")
        try:
            return target(**fields)
        except TypeError as exc:
            raise QueryError(f"bad {shown(family)} decay description {shown(dict(data))}: "
                             f"{exc}") from None

    def __reduce__(self) -> tuple[Any, ...]:
        return (Decay.from_dict, (self.to_dict(),))

    # -- other systems' parameters -----------------------------------------------------
    @classmethod
    def from_elasticsearch(cls, function: str | Mapping[str, Any], *,
                           scale: str | None = None, offset: str | None = None,
                           decay: float | None = None, origin: str | None = None,
                           symmetric: bool = True) -> Decay:
        """An Elasticsearch ``function_score`` decay on a date field, as the same curve.

        ``function`` is ``"exp"``, ``"gauss"`` or ``"linear"`` with the parameters as
        keywords, or the function's JSON as Elasticsearch takes it,
        ``{"gauss": {"<field>": {"origin": "now", "scale": "10d", "offset": "2d",
        "decay": 0.5}}}`` (the field name is not read: here it is the item's
        ``observed_at``; ``multi_value_mode`` is accepted and has no effect, an item has
        one time). Elasticsearch's formulas, with d = max(0, |x − origin| − offset):

        * exp: exp(ln(decay) / scale · d);
        * gauss: exp(−d² / 2σ²), σ² = −scale² / (2 ln(decay));
        * linear: max(0, (s − d) / s), s = scale / (1 − decay).

        ``scale`` (required) and ``offset`` (default "0d") are Elasticsearch durations: a
        whole number and a unit d, h, m, s, ms, micros or nanos, truncated to whole
        milliseconds; "1.5d" is refused as Elasticsearch refuses it ("36h"). ``decay``
        (default 0.5) is in (0, 1). The origin is the query time T, so ``origin`` may only
        be ``"now"`` (Elasticsearch's default); a fixed date or date math such as
        ``"now-1d"`` is refused: pass that time as the search's ``as_of`` instead. The
        result's ``unit`` is that of ``scale`` (days for "d", hours for "h", seconds for
        the rest) and, as in Elasticsearch, it measures |T − t_e| (``symmetric=True``);
        ``symmetric=False`` keeps items observed after T at D = 1.

        >>> Decay.from_elasticsearch({"gauss": {"timestamp": {
        ...     "origin": "now", "scale": "10d", "offset": "2d", "decay": 0.5}}})
        Gaussian(sigma=8.493218002880191, offset=2.0, symmetric=True)
        >>> round(float(Decay.from_elasticsearch("exp", scale="12h", decay=0.25)(0.5)), 12)
        0.25
        """
        owner = f"{cls.__name__}.from_elasticsearch"
        if isinstance(function, Mapping):
            function, body = _description(function, ("exp", "gauss", "linear"), owner,
                                          {"scale": scale, "offset": offset, "decay": decay, "origin": origin})
            if not isinstance(body, Mapping):
                raise QueryError(f"{owner}: {function!r} must map one field name to its "
                                 f"parameters, got {shown(body)}")
            fields = {k: v for k, v in body.items() if k != "multi_value_mode"}
            if len(fields) != 1 or not isinstance(next(iter(fields.values())), Mapping):
                raise QueryError(f"{owner}: {function!r} must map one field name to its "
                                 f"parameters, got {shown(dict(body))}")
            ((field, params),) = fields.items()
            for key in params:
                if key not in ("origin", "scale", "offset", "decay"):
                    raise QueryError(f"{owner}: unsupported parameter {shown(key)} for field "
                                     f"{shown(field)}; expected origin, scale, offset, decay")
            scale, offset, decay, origin = (params.get(k) for k in
                                            ("scale", "offset", "decay", "origin"))
        family = _family(cls, function, {"exp": Exponential, "gauss": Gaussian, "linear": Linear}, owner,
                         "function", f"the {function!r} function; use Decay.from_elasticsearch")
        if origin is not None and origin != "now":
            raise QueryError(f"{owner}: origin must be 'now' (the query time T; pass another "
                             f"time as the search's as_of), got {shown(origin)}")
        if scale is None:
            raise QueryError(f"{owner}: scale is required (a duration such as '10d')")
        scale_ms, suffix = _es_duration(scale, "scale", owner)
        offset_ms, _ = _es_duration("0d" if offset is None else offset, "offset", owner)
        if scale_ms <= 0:
            raise QueryError(f"{owner}: scale must be at least one millisecond, "
                             f"got {shown(scale)}")
        dec = _fraction(0.5 if decay is None else decay, "decay", owner)
        unit = {"d": "days", "h": "hours"}.get(suffix, "seconds")
        per = _ES_MS_PER_UNIT[unit]
        return family.from_scale(scale_ms / per, offset=offset_ms / per, decay=dec, unit=unit,
                                 symmetric=_flag(symmetric, "symmetric", owner))

    @classmethod
    def from_qdrant(cls, kind: str | Mapping[str, Any], *, scale: float | None = None,
                    midpoint: float | None = None, unit: str = "seconds",
                    symmetric: bool = True) -> Decay:
        """A Qdrant score-boosting decay expression, as the same curve.

        ``kind`` is ``"exp_decay"``, ``"gauss_decay"`` or ``"lin_decay"`` with the
        parameters as keywords, or the expression's JSON, ``{"exp_decay": {"x":
        {"datetime_key": "updated"}, "target": {"datetime": "…"}, "scale": 86400,
        "midpoint": 0.5}}``. ``x`` is the item's ``observed_at`` and ``target`` the query
        time T (the search's ``as_of``), so their values are not read. Qdrant's formulas
        (lib/segment, rescore_formula), with d = |x − target|:

        * exp_decay: exp(ln(midpoint) / scale · d);
        * gauss_decay: exp(ln(midpoint) / scale² · d²);
        * lin_decay: max(0, 1 − (1 − midpoint) / scale · d).

        Defaults as in Qdrant: ``scale`` 1, ``midpoint`` 0.5; scale > 0, midpoint in
        (0, 1), or [0, 1] for lin_decay, where midpoint 1 never decays
        (:class:`NoDecay`). Qdrant measures datetimes in seconds, hence
        ``unit="seconds"``; give another ``unit`` for a scale in days or hours. Qdrant
        holds scale and midpoint as 32-bit floats; they are rounded the same way here,
        so the curve is Qdrant's to double precision. D uses |T − t_e|
        (``symmetric=True``), as Qdrant does.

        >>> Decay.from_qdrant({"exp_decay": {"x": {"datetime_key": "updated"},
        ...                                  "scale": 86400, "midpoint": 0.5}})
        Exponential(beta=8.022536812036404e-06, unit='seconds', symmetric=True)
        >>> float(Decay.from_qdrant("lin_decay", scale=2, midpoint=0.0, unit="days")(1.0))
        0.5
        """
        owner = f"{cls.__name__}.from_qdrant"
        if isinstance(kind, Mapping):
            kind, body = _description(kind, ("exp_decay", "gauss_decay", "lin_decay"), owner,
                                      {"scale": scale, "midpoint": midpoint})
            if not isinstance(body, Mapping):
                raise QueryError(f"{owner}: {kind!r} must map to its parameters, "
                                 f"got {shown(body)}")
            for key in body:
                if key not in ("x", "target", "scale", "midpoint"):
                    raise QueryError(f"{owner}: unsupported parameter {shown(key)} in {kind!r}; "
                                     f"expected x, target, scale, midpoint")
            scale, midpoint = body.get("scale"), body.get("midpoint")
        family = _family(cls, kind, {"exp_decay": Exponential, "gauss_decay": Gaussian, "lin_decay": Linear},
                         owner, "kind", f"{kind!r}; use Decay.from_qdrant")
        s = _f32(1.0 if scale is None else scale, "scale", owner)
        m = _f32(0.5 if midpoint is None else midpoint, "midpoint", owner)
        _unit(unit, owner)
        if not s > 0.0:
            raise QueryError(f"{owner}: scale must be > 0, got {shown(scale)}")
        if family is Linear:
            if not 0.0 <= m <= 1.0:
                raise QueryError(f"{owner}: lin_decay midpoint must be in [0, 1], "
                                 f"got {shown(midpoint)}")
            if m == 1.0:
                return NoDecay()
        elif not 0.0 < m < 1.0:
            raise QueryError(f"{owner}: {kind} midpoint must be in (0, 1), got {shown(midpoint)}")
        return family.from_midpoint(s, midpoint=m, unit=unit,
                                    symmetric=_flag(symmetric, "symmetric", owner))


class Exponential(Decay):
    """Exponential decay D(age) = exp(−β · max(0, age − offset)).

    The paper's decay (eq. 2) and the Bayes-optimal surrogate under an Ornstein–Uhlenbeck
    latent process, with β = 2κ (κ the mean-reversion rate). Give exactly one of
    ``beta`` (β ≥ 0, per ``unit``) or ``half_life`` (h ⇒ β = ln 2 / h). ``offset`` is a
    grace period with D = 1; the :attr:`half_life` property is ``offset + ln 2 / β``.

    β = 0 means "does not decay", as in chronofy's tables (``demographic: 0.0``): D = 1 at
    every age (NaN for a NaN age), :attr:`half_life` is ``math.inf``, and the kernels
    receive the :class:`NoDecay` record (a rate of 0 would put 0/0 into the indexes'
    inverse of D).

    >>> d = Exponential(half_life=30)
    >>> round(d.beta, 6), round(float(d(30)), 6)
    (0.023105, 0.5)
    >>> float(Exponential(beta=1.0, offset=2)(1.5))   # inside the grace period
    1.0
    >>> Exponential(beta=0)([0.0, 1e9]).tolist(), Exponential(beta=0).half_life
    ([1.0, 1.0], inf)
    """

    __slots__ = ("_beta", "_offset")
    family = "exponential"

    def __init__(self, beta: float | None = None, half_life: float | None = None, *,
                 offset: float = 0.0, unit: str = "days", symmetric: bool = False) -> None:
        super().__init__(unit=unit, symmetric=symmetric)
        _one_of("Exponential", ("beta (β)", beta), ("half_life", half_life))
        if beta is not None:
            # + 0.0 turns a β of -0.0 into 0.0, so it prints and saves as "no decay"
            self._beta = _number(beta, "beta (β)", "Exponential", positive=False) + 0.0
        else:
            h = _number(half_life, "half_life", "Exponential", positive=True)
            self._beta = _LN2 / h
        self._offset = _number(offset, "offset", "Exponential", positive=False)

    @classmethod
    def from_scale(cls, scale: float, offset: float = 0.0, decay: float = 0.5, *,
                   unit: str = "days", symmetric: bool = True) -> Exponential:
        """Elasticsearch / Milvus ``exp`` decay (origin = query time, scale, offset, decay).

        Documented formula (Elasticsearch function_score "decay functions"; Milvus
        "Exponential Decay" ranker): S = exp(λ · max(0, |x − origin| − offset)),
        λ = ln(decay) / scale, so D = ``decay`` at |age| = offset + scale. Here β = −λ.

        >>> float(Exponential.from_scale(10, offset=5, decay=0.3)(-15))
        0.3
        """
        s = _number(scale, "scale", "Exponential.from_scale", positive=True)
        dec = _fraction(decay, "decay", "Exponential.from_scale")
        return cls(beta=-math.log(dec) / s, offset=offset, unit=unit, symmetric=symmetric)

    @classmethod
    def from_midpoint(cls, scale: float, midpoint: float = 0.5, *, unit: str = "days",
                      symmetric: bool = True) -> Exponential:
        """Qdrant ``exp_decay`` (target = query time, scale, midpoint).

        Qdrant's score-boosting formula (documentation "Hybrid queries → decay functions";
        lib/segment rescore_formula): exp(ln(midpoint) / scale · |x − target|), so
        D = ``midpoint`` at |age| = scale. Here β = −ln(midpoint) / scale.

        >>> round(float(Exponential.from_midpoint(2.0, midpoint=0.2)(2.0)), 12)
        0.2
        """
        s = _number(scale, "scale", "Exponential.from_midpoint", positive=True)
        m = _fraction(midpoint, "midpoint", "Exponential.from_midpoint")
        return cls(beta=-math.log(m) / s, unit=unit, symmetric=symmetric)

    @classmethod
    def from_mean_reversion_rate(cls, kappa: float, *, unit: str = "days",
                                 symmetric: bool = False) -> Exponential:
        """β = 2κ from the mean-reversion rate κ ≥ 0 of an OU latent process (paper, Prop. 1).

        κ = 0 (no mean reversion, an invariant fact) gives β = 0, as in chronofy.

        >>> Exponential.from_mean_reversion_rate(0.25).beta
        0.5
        """
        k = _number(kappa, "kappa (κ)", "Exponential.from_mean_reversion_rate", positive=False)
        return cls(beta=2.0 * k, unit=unit, symmetric=symmetric)

    @property
    def beta(self) -> float:
        """β, the decay rate per ``unit``."""
        return self._beta

    @property
    def offset(self) -> float:
        """Grace period (in ``unit``) before decay starts."""
        return self._offset

    @property
    def half_life(self) -> float:
        """Age at which D = 0.5: offset + ln 2 / β (``math.inf`` when β = 0)."""
        return self._offset + _LN2 / self._beta if self._beta > 0.0 else math.inf

    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        if self._beta == 0.0:  # exp(-0 · inf) would be NaN
            return np.where(np.isnan(a), np.nan, 1.0)
        return np.exp(-self._beta * np.maximum(0.0, a - self._offset))

    def _kernel_spec(self) -> KernelSpec:
        if self._beta == 0.0:
            # The core's inverse of D (freshness_index.hpp, decay_reach_days) divides by
            # β; the NoDecay record is the same function without that division.
            return (_CODE_NONE, 0.0, 0.0, 1.0, False)
        return (_CODE_EXP, self._beta, self._offset, self._unit_factor, self._symmetric)

    def _params(self) -> dict[str, float]:
        return {"beta": self._beta, "offset": self._offset}

    def __repr__(self) -> str:
        parts = [f"beta={self._beta!r}"]
        if self._offset:
            parts.append(f"offset={self._offset!r}")
        if self._unit != "days":
            parts.append(f"unit={self._unit!r}")
        if self._symmetric:
            parts.append("symmetric=True")
        return f"Exponential({', '.join(parts)})"


class HalfLife(Decay):
    """Half-life decay D(age) = 0.5^(age / h) (chronofy ``HalfLifeDecay``).

    The same curve as :class:`Exponential` with β = ln 2 / h, parameterised the way
    pharmacology and many teams think about freshness ("halves every h").

    >>> d = HalfLife(6, unit="hours")
    >>> float(d(0.25))          # 6 hours = 0.25 days
    0.5
    """

    __slots__ = ("_h",)
    family = "half_life"

    def __init__(self, half_life: float, *, unit: str = "days",
                 symmetric: bool = False) -> None:
        super().__init__(unit=unit, symmetric=symmetric)
        self._h = _number(half_life, "half_life", "HalfLife", positive=True)

    @property
    def half_life(self) -> float:
        """h, the age (in ``unit``) at which D = 0.5."""
        return self._h

    @property
    def beta(self) -> float:
        """Equivalent exponential rate β = ln 2 / h."""
        return _LN2 / self._h

    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        return 0.5 ** (a / self._h)

    def _kernel_spec(self) -> KernelSpec:
        return (_CODE_EXP, _LN2 / self._h, 0.0, self._unit_factor, self._symmetric)

    def _params(self) -> dict[str, float]:
        return {"half_life": self._h}


class Gaussian(Decay):
    """Gaussian decay D(age) = exp(−max(0, age − offset)² / (2σ²)).

    Flat near the anchor, then falling fast: the article's "Gaussian half-life" decay and
    the Elasticsearch / Milvus ``gauss`` function. Give exactly one of ``sigma`` (σ) or
    ``half_life`` (h ⇒ σ = h / √(2 ln 2)); the :attr:`half_life` property is
    ``offset + σ·√(2 ln 2)``.

    >>> round(float(Gaussian(half_life=10)(10)), 12)
    0.5
    """

    __slots__ = ("_sigma", "_offset")
    family = "gaussian"

    def __init__(self, sigma: float | None = None, half_life: float | None = None,
                 offset: float = 0.0, *, unit: str = "days", symmetric: bool = False) -> None:
        super().__init__(unit=unit, symmetric=symmetric)
        _one_of("Gaussian", ("sigma (σ)", sigma), ("half_life", half_life))
        if sigma is not None:
            self._sigma = _number(sigma, "sigma (σ)", "Gaussian", positive=True)
        else:
            h = _number(half_life, "half_life", "Gaussian", positive=True)
            self._sigma = h / math.sqrt(2.0 * _LN2)
        self._offset = _number(offset, "offset", "Gaussian", positive=False)

    @classmethod
    def from_scale(cls, scale: float, offset: float = 0.0, decay: float = 0.5, *,
                   unit: str = "days", symmetric: bool = True) -> Gaussian:
        """Elasticsearch / Milvus ``gauss`` decay.

        Documented formula: S = exp(−max(0, |x − origin| − offset)² / (2σ²)) with
        σ² = −scale² / (2 ln(decay)), so D = ``decay`` at |age| = offset + scale.

        >>> round(float(Gaussian.from_scale(7, offset=1, decay=0.25)(8)), 12)
        0.25
        """
        s = _number(scale, "scale", "Gaussian.from_scale", positive=True)
        dec = _fraction(decay, "decay", "Gaussian.from_scale")
        return cls(sigma=s / math.sqrt(-2.0 * math.log(dec)), offset=offset, unit=unit,
                   symmetric=symmetric)

    @classmethod
    def from_midpoint(cls, scale: float, midpoint: float = 0.5, *, unit: str = "days",
                      symmetric: bool = True) -> Gaussian:
        """Qdrant ``gauss_decay``: exp(ln(midpoint) / scale² · (x − target)²).

        D = ``midpoint`` at |age| = scale; here σ = scale / √(−2 ln(midpoint)).

        >>> round(float(Gaussian.from_midpoint(3.0, midpoint=0.1)(-3.0)), 12)
        0.1
        """
        s = _number(scale, "scale", "Gaussian.from_midpoint", positive=True)
        m = _fraction(midpoint, "midpoint", "Gaussian.from_midpoint")
        return cls(sigma=s / math.sqrt(-2.0 * math.log(m)), unit=unit, symmetric=symmetric)

    @property
    def sigma(self) -> float:
        """σ, the width (in ``unit``) of the bell after the offset."""
        return self._sigma

    @property
    def offset(self) -> float:
        """Plateau (in ``unit``) with D = 1 before the bell starts."""
        return self._offset

    @property
    def half_life(self) -> float:
        """Age at which D = 0.5: offset + σ·√(2 ln 2)."""
        return self._offset + self._sigma * math.sqrt(2.0 * _LN2)

    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        d = np.maximum(0.0, a - self._offset)
        return np.exp(-(d * d) / (2.0 * self._sigma * self._sigma))

    def _kernel_spec(self) -> KernelSpec:
        return (_CODE_GAUSS, self._sigma, self._offset, self._unit_factor, self._symmetric)

    def _params(self) -> dict[str, float]:
        return {"sigma": self._sigma, "offset": self._offset}


class Linear(Decay):
    """Linear decay D(age) = max(0, 1 − rate · max(0, age − offset)) (chronofy α = rate).

    A hard expiry at ``offset + 1/rate``. Give exactly one of ``rate`` (α, per ``unit``) or
    ``scale`` (Elasticsearch form: rate = (1 − decay) / scale, i.e. D = ``decay`` at
    age = offset + scale; ``decay`` only applies with ``scale``).

    >>> d = Linear(scale=10, decay=0.5)
    >>> d.rate, float(d(10)), float(d(25))
    (0.05, 0.5, 0.0)
    """

    __slots__ = ("_rate", "_offset")
    family = "linear"

    def __init__(self, rate: float | None = None, scale: float | None = None,
                 offset: float = 0.0, decay: float = 0.5, *, unit: str = "days",
                 symmetric: bool = False) -> None:
        super().__init__(unit=unit, symmetric=symmetric)
        _one_of("Linear", ("rate (α)", rate), ("scale", scale))
        dec = _fraction(decay, "decay", "Linear")
        if rate is not None:
            if dec != 0.5:
                raise QueryError("Linear: decay only applies together with scale; "
                                 f"got rate={shown(rate)} and decay={shown(decay)}")
            self._rate = _number(rate, "rate (α)", "Linear", positive=True)
        else:
            s = _number(scale, "scale", "Linear", positive=True)
            self._rate = (1.0 - dec) / s
        self._offset = _number(offset, "offset", "Linear", positive=False)

    @classmethod
    def from_scale(cls, scale: float, offset: float = 0.0, decay: float = 0.5, *,
                   unit: str = "days", symmetric: bool = True) -> Linear:
        """Elasticsearch / Milvus ``linear`` decay.

        Documented formula: S = max(0, (s − max(0, |x − origin| − offset)) / s) with
        s = scale / (1 − decay), i.e. rate = (1 − decay) / scale.

        >>> round(float(Linear.from_scale(4, offset=1, decay=0.2)(-5)), 12)
        0.2
        """
        _number(scale, "scale", "Linear.from_scale", positive=True)
        _fraction(decay, "decay", "Linear.from_scale")
        return cls(scale=scale, offset=offset, decay=decay, unit=unit, symmetric=symmetric)

    @classmethod
    def from_midpoint(cls, scale: float, midpoint: float = 0.5, *, unit: str = "days",
                      symmetric: bool = True) -> Linear:
        """Qdrant ``lin_decay``: max(0, 1 − (1 − midpoint) / scale · |x − target|).

        Qdrant accepts midpoint = 0 (zero at |age| = scale); midpoint = 1 would never
        decay, so use :class:`NoDecay` for that.

        >>> float(Linear.from_midpoint(10.0, midpoint=0.0)(10.0))
        0.0
        """
        s = _number(scale, "scale", "Linear.from_midpoint", positive=True)
        m = _fraction(midpoint, "midpoint", "Linear.from_midpoint", allow_zero=True)
        return cls(rate=(1.0 - m) / s, unit=unit, symmetric=symmetric)

    @property
    def rate(self) -> float:
        """α, the loss of validity per ``unit`` after the offset."""
        return self._rate

    @property
    def offset(self) -> float:
        """Grace period (in ``unit``) before decay starts."""
        return self._offset

    @property
    def half_life(self) -> float:
        """Age at which D = 0.5: offset + 0.5 / rate."""
        return self._offset + 0.5 / self._rate

    @property
    def expiry(self) -> float:
        """Age (in ``unit``) from which D = 0: offset + 1 / rate."""
        return self._offset + 1.0 / self._rate

    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        return np.maximum(0.0, 1.0 - self._rate * np.maximum(0.0, a - self._offset))

    def _kernel_spec(self) -> KernelSpec:
        return (_CODE_LINEAR, self._rate, self._offset, self._unit_factor, self._symmetric)

    def _params(self) -> dict[str, float]:
        return {"rate": self._rate, "offset": self._offset}


class PowerLaw(Decay):
    """Power-law decay D(age) = (1 + age)^(−α) (chronofy ``PowerLawDecay``).

    Heavy-tailed: old evidence keeps residual value (citations, precedents). ``exponent``
    is α; the age is in ``unit``, so the "+1" is one ``unit``.

    >>> float(PowerLaw(1.0)(1.0))
    0.5
    """

    __slots__ = ("_exponent",)
    family = "power_law"

    def __init__(self, exponent: float, *, unit: str = "days",
                 symmetric: bool = False) -> None:
        super().__init__(unit=unit, symmetric=symmetric)
        self._exponent = _number(exponent, "exponent (α)", "PowerLaw", positive=True)

    @property
    def exponent(self) -> float:
        """α, the power-law exponent."""
        return self._exponent

    @property
    def half_life(self) -> float:
        """Age at which D = 0.5: 2^(1/α) − 1."""
        return math.expm1(_LN2 / self._exponent)

    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        return (1.0 + a) ** (-self._exponent)

    def _kernel_spec(self) -> KernelSpec:
        return (_CODE_POWER, self._exponent, 0.0, self._unit_factor, self._symmetric)

    def _params(self) -> dict[str, float]:
        return {"exponent": self._exponent}


class Weibull(Decay):
    """Weibull decay D(age) = exp(−(age / λ)^k) (chronofy ``WeibullDecay``).

    The survival function of a Weibull hazard: ``shape`` k > 1 accelerates obsolescence,
    k < 1 decelerates it, k = 1 is exponential with β = 1/λ; ``scale`` is λ.

    >>> round(float(Weibull(shape=1.0, scale=10.0)(10.0)), 6)   # e^-1
    0.367879
    """

    __slots__ = ("_shape", "_scale")
    family = "weibull"

    def __init__(self, shape: float, scale: float, *, unit: str = "days",
                 symmetric: bool = False) -> None:
        super().__init__(unit=unit, symmetric=symmetric)
        self._shape = _number(shape, "shape (k)", "Weibull", positive=True)
        self._scale = _number(scale, "scale (λ)", "Weibull", positive=True)

    @property
    def shape(self) -> float:
        """k, the Weibull shape."""
        return self._shape

    @property
    def scale(self) -> float:
        """λ, the characteristic life (in ``unit``): D(λ) = 1/e."""
        return self._scale

    @property
    def half_life(self) -> float:
        """Age at which D = 0.5: λ · (ln 2)^(1/k)."""
        return self._scale * _LN2 ** (1.0 / self._shape)

    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        return np.exp(-((a / self._scale) ** self._shape))

    def _kernel_spec(self) -> KernelSpec:
        return (_CODE_WEIBULL, self._shape, self._scale, self._unit_factor, self._symmetric)

    def _params(self) -> dict[str, float]:
        return {"shape": self._shape, "scale": self._scale}


class NoDecay(Decay):
    """D(age) = 1: time-invariant facts (blood type, a birth date); chronofy's β = 0.

    NaN ages still give NaN, like every family, so missing timestamps stay visible.

    >>> NoDecay()([0.0, 1e6]).tolist()
    [1.0, 1.0]
    """

    __slots__ = ()
    family = "none"

    def __init__(self) -> None:
        super().__init__()

    @property
    def half_life(self) -> float:
        """Never reaches 0.5: ``math.inf``."""
        return math.inf

    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(a), np.nan, 1.0)

    def _kernel_spec(self) -> KernelSpec:
        return (_CODE_NONE, 0.0, 0.0, 1.0, False)

    def _params(self) -> dict[str, float]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        """``{"family": "none"}``."""
        return {"family": self.family}


# --------------------------------------------------------------------------------------
# policies
# --------------------------------------------------------------------------------------

def _fact_type_array(fact_types: npt.ArrayLike) -> np.ndarray:
    """Fact type names as a NumPy str array; non-strings are named by position."""
    if isinstance(fact_types, str):
        return np.asarray(fact_types)
    arr = np.asarray(fact_types, dtype=object) if not isinstance(fact_types, np.ndarray) \
        else fact_types
    if arr.dtype.kind == "U":
        return arr
    if arr.dtype.kind == "T":  # NumPy 2 StringDType
        return arr.astype(str)
    if arr.dtype.kind == "O":
        flat = arr.ravel()
        for i, value in enumerate(flat.tolist()):
            if not isinstance(value, str):
                raise QueryError(f"fact_types[{i}] must be a str, got {shown(value)}")
        if flat.size == 0:
            return np.zeros(arr.shape, dtype="<U1")
        return arr.astype(str)
    raise QueryError(f"fact_types must be strings, got dtype {arr.dtype}")


class DecayPolicy:
    """Chooses the decay profile D_j by fact type j (the paper's sensitivity classes).

    ``profiles`` maps fact type names to decays; types without a profile use ``default``
    (``NoDecay()`` unless given; ``default=None`` makes unknown types an error). Like a
    dict, ``len``, iteration and ``in`` cover the explicit profiles only; :meth:`knows`
    also counts the default. Policies are immutable and compare by content.

    >>> p = DecayPolicy({"vital_sign": HalfLife(6, unit="hours"),
    ...                  "diagnosis": Exponential(half_life=180)}, default=None)
    >>> p["vital_sign"]
    HalfLife(half_life=6.0, unit='hours')
    >>> p.knows("blood_type")
    False
    >>> p.evaluate([0.25, 180.0], ["vital_sign", "diagnosis"]).round(6).tolist()
    [0.5, 0.5]
    """

    __slots__ = ("_profiles", "_default")

    def __init__(self, profiles: Mapping[str, Decay] | None = None,
                 default: Decay | None = NoDecay()) -> None:
        if profiles is None:
            profiles = {}
        if not isinstance(profiles, Mapping):
            raise QueryError(f"DecayPolicy: profiles must be a mapping of fact type to "
                             f"decay, got {shown(profiles)}")
        checked: dict[str, Decay] = {}
        for name, decay in profiles.items():
            if not isinstance(name, str) or not name:
                raise QueryError(f"DecayPolicy: fact type names must be non-empty str, "
                                 f"got {shown(name)}")
            if not isinstance(decay, Decay):
                raise QueryError(f"DecayPolicy: profile for fact type {shown(name)} must be a "
                                 f"Decay (Exponential, HalfLife, ...), got {shown(decay)}")
            checked[name] = decay
        if default is not None and not isinstance(default, Decay):
            raise QueryError(f"DecayPolicy: default must be a Decay or None, "
                             f"got {shown(default)}")
        self._profiles = MappingProxyType(checked)
        self._default = default

    @classmethod
    def from_half_lives(cls, half_lives: Mapping[str, float], *,
                        default: Decay | None = NoDecay(), unit: str = "days") -> DecayPolicy:
        """One :class:`Exponential` per fact type from its half-life (β_j = ln 2 / h_j).

        >>> p = DecayPolicy.from_half_lives({"news": 7, "law": 3650})
        >>> round(p["news"].half_life, 9)
        7.0
        """
        if not isinstance(half_lives, Mapping):
            raise QueryError(f"DecayPolicy.from_half_lives needs a mapping of fact type to "
                             f"half-life, got {shown(half_lives)}")
        profiles: dict[str, Decay] = {}
        for name, h in half_lives.items():
            try:
                profiles[name] = Exponential(half_life=h, unit=unit)
            except QueryError as exc:
                raise QueryError(f"fact type {shown(name)}: {exc}") from None
        return cls(profiles, default=default)

    @classmethod
    def from_chronofy(cls, source: Any = None, *, default_beta: float | None = None,
                      time_unit: str | None = None) -> DecayPolicy:
        """The policy of a chronofy (0.1.9) decay configuration, with chronofy's values.

        ``source`` is one of

        * None: chronofy's default ``ExponentialDecay()``, i.e. :data:`CHRONOFY_DEFAULT_BETA`;
        * a mapping fact type → β (≥ 0; 0 does not decay): read as chronofy's
          ``ExponentialDecay(beta=source, default_beta=…, time_unit=…)`` reads it, laid
          over :data:`CHRONOFY_DEFAULT_BETA`;
        * a chronofy decay object (``ExponentialDecay``, ``HalfLifeDecay``,
          ``LinearDecay``, ``PowerLawDecay`` or ``WeibullDecay``): its per-type table, its
          fallback for other types and its ``time_unit``. A rate or exponent of 0 (which
          chronofy allows for the linear and power-law families) becomes :class:`NoDecay`.

        ``default_beta`` (default 0.5) and ``time_unit`` (default "days") go with the first
        two forms; an object carries its own. Types outside the table get chronofy's
        fallback as the policy's ``default``. Ages are clamped at 0 as in chronofy;
        chronofy's ``source_quality`` is the item's ``reliability``.

        >>> p = DecayPolicy.from_chronofy({"news": 0.3})
        >>> p["news"], p["demographic"], p["unseen"]
        (Exponential(beta=0.3), Exponential(beta=0.0), Exponential(beta=0.5))
        >>> p.evaluate([10.0, 10.0], ["demographic", "vital_sign"]).tolist()[0]
        1.0
        """
        owner = "DecayPolicy.from_chronofy"
        if source is None or isinstance(source, Mapping):
            unit = "days" if time_unit is None else time_unit
            if not isinstance(unit, str) or unit not in _UNIT_FACTORS:
                raise QueryError(f"{owner}: time_unit must be one of 'days', 'hours' or "
                                 f"'seconds', got {shown(time_unit)}")
            table = dict(CHRONOFY_DEFAULT_BETA)
            table.update({} if source is None else source)
            fallback = 0.5 if default_beta is None else default_beta
            make = lambda beta: Exponential(beta=beta, unit=unit)  # noqa: E731
            try:
                default = make(fallback)
            except QueryError as exc:
                raise QueryError(f"{owner}: default_beta: {exc}") from None
            return cls._from_table(table, make, default, owner)
        name = type(source).__name__
        if (type(source).__module__ or "").split(".")[0] != "chronofy" or name not in (
                "ExponentialDecay", "HalfLifeDecay", "LinearDecay", "PowerLawDecay",
                "WeibullDecay"):
            raise QueryError(f"{owner} takes a mapping of fact type to β, None, or a chronofy "
                             f"ExponentialDecay, HalfLifeDecay, LinearDecay, PowerLawDecay or "
                             f"WeibullDecay; got {type(source).__name__}")
        if default_beta is not None or time_unit is not None:
            raise QueryError(f"{owner}: a chronofy {name} carries its own default and "
                             f"time_unit; do not pass default_beta or time_unit with it")
        try:  # chronofy 0.1.9 keeps its tables in these attributes
            unit = _CHRONOFY_UNITS[float(source._time_divisor)]
            if name == "WeibullDecay":
                shapes, scales = dict(source._shape), dict(source._scale)
                ks, lam = source._default_shape, source._default_scale
                table = {t: (shapes.get(t, ks), scales.get(t, lam)) for t in {**shapes, **scales}}
                fallback = (ks, lam)
            else:
                attr = {"ExponentialDecay": "beta", "HalfLifeDecay": "half_life",
                        "LinearDecay": "rate", "PowerLawDecay": "exponent"}[name]
                table = dict(getattr(source, "_" + attr))
                fallback = getattr(source, "_default_" + attr)
        except (AttributeError, KeyError, TypeError):
            raise QueryError(f"{owner}: cannot read this chronofy {name}; chrono_engine reads "
                             f"chronofy 0.1.9's") from None
        makers = {
            "ExponentialDecay": lambda b: Exponential(beta=b, unit=unit),
            "HalfLifeDecay": lambda h: HalfLife(h, unit=unit),
            "LinearDecay": lambda r: Linear(rate=r, unit=unit) if r else NoDecay(),
            "PowerLawDecay": lambda a: PowerLaw(a, unit=unit) if a else NoDecay(),
            "WeibullDecay": lambda p: Weibull(shape=p[0], scale=p[1], unit=unit),
        }
        make = makers[name]
        return cls._from_table(table, make, make(fallback), owner)

    @classmethod
    def _from_table(cls, table: Mapping[str, Any], make: Any, default: Decay,
                    owner: str) -> DecayPolicy:
        profiles: dict[str, Decay] = {}
        for name, value in table.items():
            try:
                profiles[name] = make(value)
            except QueryError as exc:
                raise QueryError(f"{owner}: fact type {shown(name)}: {exc}") from None
        return cls(profiles, default=default)

    # -- lookup ------------------------------------------------------------------------
    @property
    def profiles(self) -> Mapping[str, Decay]:
        """The explicit profiles (read-only)."""
        return self._profiles

    @property
    def default(self) -> Decay | None:
        """Decay for fact types without a profile, or None (then they are an error)."""
        return self._default

    def _profile(self, fact_type: Any) -> Decay | None:
        """The explicit profile of ``fact_type``, or None (an unhashable value has none)."""
        try:
            return self._profiles.get(fact_type)
        except TypeError:
            return None

    def __getitem__(self, fact_type: str) -> Decay:
        decay = self._profile(fact_type)
        if decay is not None:
            return decay
        if self._default is not None:
            return self._default
        raise NotFoundError(f"no decay profile for fact type {shown(fact_type)} and the policy "
                            f"has no default; known types: {sorted(self._profiles)}")

    def knows(self, fact_type: str) -> bool:
        """True when ``policy[fact_type]`` gives a decay (explicit profile or default).

        >>> DecayPolicy({}, default=None).knows("news"), DecayPolicy().knows("news")
        (False, True)
        """
        return self._profile(fact_type) is not None or self._default is not None

    def __contains__(self, fact_type: object) -> bool:
        return self._profile(fact_type) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._profiles)

    def __len__(self) -> int:
        return len(self._profiles)

    # -- evaluation --------------------------------------------------------------------
    def evaluate(self, age_days: npt.ArrayLike, fact_types: npt.ArrayLike) -> np.ndarray:
        """D_j(age) per item: ages and fact type names broadcast together.

        ``fact_types`` may be one name for all items. An unknown type (with no default)
        raises :class:`~chrono_engine.errors.NotFoundError` naming it and its position.

        >>> p = DecayPolicy({"news": Linear(rate=0.1)})
        >>> p.evaluate([5.0, 5.0], ["news", "other"]).tolist()
        [0.5, 1.0]
        """
        ages = _as_age_days(age_days)
        names = _fact_type_array(fact_types)
        ages_b, names_b = np.broadcast_arrays(ages, names)
        flat_ages = ages_b.ravel()
        flat_names = names_b.ravel()
        out = np.empty(flat_ages.shape, dtype=np.float64)
        if flat_ages.size == 0:
            return out.reshape(ages_b.shape)
        uniq, inverse = np.unique(flat_names, return_inverse=True)
        inverse = inverse.ravel()
        unknown = [i for i, name in enumerate(uniq.tolist()) if not self.knows(name)]
        if unknown:
            rows = np.flatnonzero(np.isin(inverse, unknown))
            first = int(rows[0])
            raise NotFoundError(f"fact_types[{first}] = {str(flat_names[first])!r} has no "
                                f"decay profile and the policy has no default; known "
                                f"types: {sorted(self._profiles)}")
        # Evaluate each distinct decay once, over all the types that share it.
        groups: dict[Decay, list[int]] = {}
        for i, name in enumerate(uniq.tolist()):
            groups.setdefault(self[name], []).append(i)
        if len(groups) == 1:
            (decay,) = groups
            return decay.evaluate(flat_ages).reshape(ages_b.shape)
        for decay, members in groups.items():
            mask = np.isin(inverse, members)
            out[mask] = decay.evaluate(flat_ages[mask])
        return out.reshape(ages_b.shape)

    def kernel_table(self, fact_type_names: list[str]) -> np.ndarray:
        """Kernel parameters per fact type: float64 rows [code, p0, p1, scale, symmetric].

        Row i describes ``fact_type_names[i]`` (e.g. the dictionary of the ``fact_type``
        column), as :func:`evaluate_spec` reads it. Raises NotFoundError naming the first
        unknown type when the policy has no default.

        >>> DecayPolicy({"news": Exponential(beta=0.5)}).kernel_table(["news", "x"]).tolist()
        [[1.0, 0.5, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0]]
        """
        if isinstance(fact_type_names, str):
            raise QueryError("kernel_table needs a list of fact type names, got one str")
        names = list(fact_type_names)
        table = np.empty((len(names), 5), dtype=np.float64)
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise QueryError(f"fact_type_names[{i}] must be a str, got {shown(name)}")
            if not self.knows(name):
                raise NotFoundError(f"fact type {shown(name)} (fact_type_names[{i}]) has no decay "
                                    f"profile and the policy has no default; known types: "
                                    f"{sorted(self._profiles)}")
            code, p0, p1, scale, symmetric = self[name]._kernel_spec()
            table[i] = (code, p0, p1, scale, 1.0 if symmetric else 0.0)
        return table

    # -- value semantics and persistence -----------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DecayPolicy):
            return NotImplemented
        return dict(self._profiles) == dict(other._profiles) and self._default == other._default

    def __hash__(self) -> int:
        return hash((frozenset(self._profiles.items()), self._default))

    def __repr__(self) -> str:
        return f"DecayPolicy({dict(self._profiles)!r}, default={self._default!r})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description, for saving a store; see :meth:`from_dict`.

        >>> import json
        >>> p = DecayPolicy.from_half_lives({"news": 7}, default=None)
        >>> DecayPolicy.from_dict(json.loads(json.dumps(p.to_dict()))) == p
        True
        """
        return {
            "version": _POLICY_FORMAT_VERSION,
            "profiles": {name: d.to_dict() for name, d in self._profiles.items()},
            "default": None if self._default is None else self._default.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DecayPolicy:
        """Rebuild a policy from :meth:`to_dict` output."""
        if not isinstance(data, Mapping):
            raise QueryError(f"a decay policy description must be a mapping, "
                             f"got {shown(data)}")
        version = data.get("version", _POLICY_FORMAT_VERSION)
        if version != _POLICY_FORMAT_VERSION:
            raise QueryError(f"unsupported decay policy format version {shown(version)}; "
                             f"this chrono_engine reads version {_POLICY_FORMAT_VERSION}")
        raw_profiles = data.get("profiles", {})
        if not isinstance(raw_profiles, Mapping):
            raise QueryError(f"decay policy 'profiles' must be a mapping, "
                             f"got {shown(raw_profiles)}")
        profiles = {name: Decay.from_dict(d) for name, d in raw_profiles.items()}
        raw_default = data.get("default")
        default = None if raw_default is None else Decay.from_dict(raw_default)
        return cls(profiles, default=default)

    def __reduce__(self) -> tuple[Any, ...]:
        return (DecayPolicy.from_dict, (self.to_dict(),))


def parse_decay(obj: Decay | DecayPolicy | Mapping[str, Decay] | None) -> DecayPolicy:
    """Normalise an engine's ``decay=`` argument to a :class:`DecayPolicy`.

    A Decay applies to every fact type; a DecayPolicy is returned as is; a mapping of fact
    type to Decay becomes the profiles (default ``NoDecay()``); None means no decay.

    >>> parse_decay(Exponential(half_life=7))["anything"]
    Exponential(beta=0.09902102579427789)
    >>> parse_decay(None) == DecayPolicy()
    True
    """
    if obj is None:
        return DecayPolicy()
    if isinstance(obj, DecayPolicy):
        return obj
    if isinstance(obj, Decay):
        return DecayPolicy(default=obj)
    if isinstance(obj, Mapping):
        return DecayPolicy(obj)
    raise QueryError(f"decay must be a Decay, a DecayPolicy, a mapping of fact type to "
                     f"Decay, or None; got {type(obj).__name__}")
