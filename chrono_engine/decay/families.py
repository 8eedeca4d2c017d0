"""The decay families D(age): :class:`Decay` and its subclasses, their vectorised NumPy
references (``Decay.evaluate``) and the exact parameter contract of the C++ kernel
(``Decay._kernel_spec`` and its NumPy reference :func:`evaluate_spec`).

The conventions every family shares are in the package's docstring
(:mod:`chrono_engine.decay`).
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from chrono_engine._args import shown
from chrono_engine.errors import QueryError

from . import interop as _interop
from ._checks import LN2, UNIT_FACTORS, ages_in_days, exactly_one, flag, fraction, number, unit_name

__all__ = ["Decay", "Exponential", "HalfLife", "Gaussian", "Linear", "PowerLaw", "Weibull", "NoDecay",
           "evaluate_spec", "KernelSpec"]

# Kernel codes shared with the C++ decay kernel in cpp/ (see evaluate_spec).
_CODE_NONE, _CODE_EXP, _CODE_GAUSS, _CODE_LINEAR, _CODE_POWER, _CODE_WEIBULL = range(6)

KernelSpec = tuple[int, float, float, float, bool]


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

    >>> import math
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
    x = ages_in_days(age_days)
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
        self._unit = unit_name(unit, owner)
        self._symmetric = flag(symmetric, "symmetric", owner)

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
        return UNIT_FACTORS[self._unit]

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
        x = ages_in_days(age_days)
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
        function, scale, offset, decay, origin = _interop.elasticsearch_function(
            function, owner, scale=scale, offset=offset, decay=decay, origin=origin)
        family = _family(cls, function, {"exp": Exponential, "gauss": Gaussian, "linear": Linear}, owner,
                         "function", f"the {function!r} function; use Decay.from_elasticsearch")
        curve = _interop.elasticsearch_curve(scale, offset, decay, origin, owner)
        return family.from_scale(curve.scale, offset=curve.offset, decay=curve.decay, unit=curve.unit,
                                 symmetric=flag(symmetric, "symmetric", owner))

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
        kind, scale, midpoint = _interop.qdrant_expression(kind, owner, scale=scale, midpoint=midpoint)
        family = _family(cls, kind, {"exp_decay": Exponential, "gauss_decay": Gaussian, "lin_decay": Linear},
                         owner, "kind", f"{kind!r}; use Decay.from_qdrant")
        s, m = _interop.qdrant_curve(kind, scale, midpoint, unit, owner)
        if family is Linear and m == 1.0:
            return NoDecay()
        return family.from_midpoint(s, midpoint=m, unit=unit,
                                    symmetric=flag(symmetric, "symmetric", owner))


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
        exactly_one("Exponential", ("beta (β)", beta), ("half_life", half_life))
        if beta is not None:
            # + 0.0 turns a β of -0.0 into 0.0, so it prints and saves as "no decay"
            self._beta = number(beta, "beta (β)", "Exponential", positive=False) + 0.0
        else:
            h = number(half_life, "half_life", "Exponential", positive=True)
            self._beta = LN2 / h
        self._offset = number(offset, "offset", "Exponential", positive=False)

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
        s = number(scale, "scale", "Exponential.from_scale", positive=True)
        dec = fraction(decay, "decay", "Exponential.from_scale")
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
        s = number(scale, "scale", "Exponential.from_midpoint", positive=True)
        m = fraction(midpoint, "midpoint", "Exponential.from_midpoint")
        return cls(beta=-math.log(m) / s, unit=unit, symmetric=symmetric)

    @classmethod
    def from_mean_reversion_rate(cls, kappa: float, *, unit: str = "days",
                                 symmetric: bool = False) -> Exponential:
        """β = 2κ from the mean-reversion rate κ ≥ 0 of an OU latent process (paper, Prop. 1).

        κ = 0 (no mean reversion, an invariant fact) gives β = 0, as in chronofy.

        >>> Exponential.from_mean_reversion_rate(0.25).beta
        0.5
        """
        k = number(kappa, "kappa (κ)", "Exponential.from_mean_reversion_rate", positive=False)
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
        return self._offset + LN2 / self._beta if self._beta > 0.0 else math.inf

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
        self._h = number(half_life, "half_life", "HalfLife", positive=True)

    @property
    def half_life(self) -> float:
        """h, the age (in ``unit``) at which D = 0.5."""
        return self._h

    @property
    def beta(self) -> float:
        """Equivalent exponential rate β = ln 2 / h."""
        return LN2 / self._h

    def _evaluate_units(self, a: np.ndarray) -> np.ndarray:
        return 0.5 ** (a / self._h)

    def _kernel_spec(self) -> KernelSpec:
        return (_CODE_EXP, LN2 / self._h, 0.0, self._unit_factor, self._symmetric)

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
        exactly_one("Gaussian", ("sigma (σ)", sigma), ("half_life", half_life))
        if sigma is not None:
            self._sigma = number(sigma, "sigma (σ)", "Gaussian", positive=True)
        else:
            h = number(half_life, "half_life", "Gaussian", positive=True)
            self._sigma = h / math.sqrt(2.0 * LN2)
        self._offset = number(offset, "offset", "Gaussian", positive=False)

    @classmethod
    def from_scale(cls, scale: float, offset: float = 0.0, decay: float = 0.5, *,
                   unit: str = "days", symmetric: bool = True) -> Gaussian:
        """Elasticsearch / Milvus ``gauss`` decay.

        Documented formula: S = exp(−max(0, |x − origin| − offset)² / (2σ²)) with
        σ² = −scale² / (2 ln(decay)), so D = ``decay`` at |age| = offset + scale.

        >>> round(float(Gaussian.from_scale(7, offset=1, decay=0.25)(8)), 12)
        0.25
        """
        s = number(scale, "scale", "Gaussian.from_scale", positive=True)
        dec = fraction(decay, "decay", "Gaussian.from_scale")
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
        s = number(scale, "scale", "Gaussian.from_midpoint", positive=True)
        m = fraction(midpoint, "midpoint", "Gaussian.from_midpoint")
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
        return self._offset + self._sigma * math.sqrt(2.0 * LN2)

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
        exactly_one("Linear", ("rate (α)", rate), ("scale", scale))
        dec = fraction(decay, "decay", "Linear")
        if rate is not None:
            if dec != 0.5:
                raise QueryError("Linear: decay only applies together with scale; "
                                 f"got rate={shown(rate)} and decay={shown(decay)}")
            self._rate = number(rate, "rate (α)", "Linear", positive=True)
        else:
            s = number(scale, "scale", "Linear", positive=True)
            self._rate = (1.0 - dec) / s
        self._offset = number(offset, "offset", "Linear", positive=False)

    @classmethod
    def from_scale(cls, scale: float, offset: float = 0.0, decay: float = 0.5, *,
                   unit: str = "days", symmetric: bool = True) -> Linear:
        """Elasticsearch / Milvus ``linear`` decay.

        Documented formula: S = max(0, (s − max(0, |x − origin| − offset)) / s) with
        s = scale / (1 − decay), i.e. rate = (1 − decay) / scale.

        >>> round(float(Linear.from_scale(4, offset=1, decay=0.2)(-5)), 12)
        0.2
        """
        number(scale, "scale", "Linear.from_scale", positive=True)
        fraction(decay, "decay", "Linear.from_scale")
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
        s = number(scale, "scale", "Linear.from_midpoint", positive=True)
        m = fraction(midpoint, "midpoint", "Linear.from_midpoint", allow_zero=True)
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
        self._exponent = number(exponent, "exponent (α)", "PowerLaw", positive=True)

    @property
    def exponent(self) -> float:
        """α, the power-law exponent."""
        return self._exponent

    @property
    def half_life(self) -> float:
        """Age at which D = 0.5: 2^(1/α) − 1."""
        return math.expm1(LN2 / self._exponent)

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
        self._shape = number(shape, "shape (k)", "Weibull", positive=True)
        self._scale = number(scale, "scale (λ)", "Weibull", positive=True)

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
        return self._scale * LN2 ** (1.0 / self._shape)

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


