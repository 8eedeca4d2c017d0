"""Other systems' decay parameters read as ours: Elasticsearch ``function_score`` date
decays, Qdrant score-boosting decay expressions and chronofy (0.1.9) decay configurations.

Each reader checks a foreign description (its JSON or keywords, with that system's own
rules: Elasticsearch durations, Qdrant's 32-bit floats, chronofy's tables) and returns plain
parameters; the family that takes them is chosen and built by :meth:`Decay.from_elasticsearch`,
:meth:`Decay.from_qdrant` (``families.py``) and :meth:`DecayPolicy.from_chronofy`
(``policy.py``), which the readers do not import: the families call them.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from numbers import Real
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from chrono_engine._args import shown
from chrono_engine.errors import QueryError

from ._checks import UNIT_FACTORS, fraction, to_float, unit_name

__all__ = ["CHRONOFY_DEFAULT_BETA", "ElasticsearchCurve", "ChronofyTable", "elasticsearch_function",
           "elasticsearch_curve", "qdrant_expression", "qdrant_curve", "read_chronofy"]

# --------------------------------------------------------------------------------------
# Elasticsearch
# --------------------------------------------------------------------------------------

# Elasticsearch time units (TimeValue.parseTimeValue, the parser of a date decay's scale
# and offset) in nanoseconds, in the order it tries the suffixes.
_ES_TIME_UNITS = (("nanos", 1), ("micros", 10**3), ("ms", 10**6), ("s", 10**9),
                  ("m", 60 * 10**9), ("h", 3600 * 10**9), ("d", 86400 * 10**9))
_ES_MS_PER_UNIT = {"days": 86_400_000, "hours": 3_600_000, "seconds": 1000}


class ElasticsearchCurve(NamedTuple):
    """An Elasticsearch decay's parameters in the unit of its scale."""

    scale: float
    offset: float
    decay: float
    unit: str


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


def elasticsearch_function(function: str | Mapping[str, Any], owner: str, *, scale: Any,
                           offset: Any, decay: Any, origin: Any) -> tuple[Any, Any, Any, Any, Any]:
    """``(function, scale, offset, decay, origin)`` of a function given by name with its
    parameters as keywords, or as Elasticsearch's JSON (then no keyword may be given)."""
    if not isinstance(function, Mapping):
        return function, scale, offset, decay, origin
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
    scale, offset, decay, origin = (params.get(k) for k in ("scale", "offset", "decay", "origin"))
    return function, scale, offset, decay, origin


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


def elasticsearch_curve(scale: Any, offset: Any, decay: Any, origin: Any,
                        owner: str) -> ElasticsearchCurve:
    """Scale and offset (Elasticsearch durations) and decay checked as Elasticsearch does,
    in the unit of the scale: days for "d", hours for "h", seconds for the rest."""
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
    dec = fraction(0.5 if decay is None else decay, "decay", owner)
    unit = {"d": "days", "h": "hours"}.get(suffix, "seconds")
    per = _ES_MS_PER_UNIT[unit]
    return ElasticsearchCurve(scale_ms / per, offset_ms / per, dec, unit)


# --------------------------------------------------------------------------------------
# Qdrant
# --------------------------------------------------------------------------------------

_F32_MAX = float(np.finfo(np.float32).max)


def _f32(value: object, name: str, owner: str) -> float:
    """A finite number rounded to float32, as Qdrant stores a decay's scale and midpoint."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise QueryError(f"{owner}: {name} must be a finite number, got {shown(value)}")
    x = to_float(value)
    if not (math.isfinite(x) and abs(x) <= _F32_MAX):
        raise QueryError(f"{owner}: {name} must be a finite number within Qdrant's 32-bit "
                         f"float range, got {shown(value)}")
    return float(np.float32(x))


def qdrant_expression(kind: str | Mapping[str, Any], owner: str, *, scale: Any,
                      midpoint: Any) -> tuple[Any, Any, Any]:
    """``(kind, scale, midpoint)`` of an expression given by kind with its parameters as
    keywords, or as Qdrant's JSON (then no keyword may be given; ``x`` and ``target`` are
    the item's and the query's times, so their values are not read)."""
    if not isinstance(kind, Mapping):
        return kind, scale, midpoint
    kind, body = _description(kind, ("exp_decay", "gauss_decay", "lin_decay"), owner,
                              {"scale": scale, "midpoint": midpoint})
    if not isinstance(body, Mapping):
        raise QueryError(f"{owner}: {kind!r} must map to its parameters, "
                         f"got {shown(body)}")
    for key in body:
        if key not in ("x", "target", "scale", "midpoint"):
            raise QueryError(f"{owner}: unsupported parameter {shown(key)} in {kind!r}; "
                             f"expected x, target, scale, midpoint")
    return kind, body.get("scale"), body.get("midpoint")


def qdrant_curve(kind: str, scale: Any, midpoint: Any, unit: Any,
                 owner: str) -> tuple[float, float]:
    """Scale and midpoint as Qdrant holds them (32-bit floats, defaults 1 and 0.5), checked:
    scale > 0, midpoint in (0, 1), or [0, 1] for ``lin_decay``; ``unit`` is checked too."""
    s = _f32(1.0 if scale is None else scale, "scale", owner)
    m = _f32(0.5 if midpoint is None else midpoint, "midpoint", owner)
    unit_name(unit, owner)
    if not s > 0.0:
        raise QueryError(f"{owner}: scale must be > 0, got {shown(scale)}")
    if kind == "lin_decay":
        if not 0.0 <= m <= 1.0:
            raise QueryError(f"{owner}: lin_decay midpoint must be in [0, 1], "
                             f"got {shown(midpoint)}")
    elif not 0.0 < m < 1.0:
        raise QueryError(f"{owner}: {kind} midpoint must be in (0, 1), got {shown(midpoint)}")
    return s, m


# --------------------------------------------------------------------------------------
# chronofy
# --------------------------------------------------------------------------------------

#: chronofy 0.1.9's default β table (``chronofy.decay.exponential.DEFAULT_BETA``), per day;
#: β = 0 does not decay. :meth:`DecayPolicy.from_chronofy` lays a user's table over it.
CHRONOFY_DEFAULT_BETA: Mapping[str, float] = MappingProxyType({
    "vital_sign": 5.0, "lab_result": 2.0, "medication": 1.0, "diagnosis": 0.5,
    "chronic_condition": 0.01, "demographic": 0.0, "general": 0.5})

# chronofy's time_unit as the divisor of an age in seconds -> our unit name.
_CHRONOFY_UNITS = {1.0: "seconds", 3600.0: "hours", 86400.0: "days"}

_CHRONOFY_CLASSES = ("ExponentialDecay", "HalfLifeDecay", "LinearDecay", "PowerLawDecay",
                     "WeibullDecay")


class ChronofyTable(NamedTuple):
    """A chronofy decay configuration as read: its family, unit, per-type values and fallback."""

    #: chronofy's class name: "ExponentialDecay", "HalfLifeDecay", "LinearDecay",
    #: "PowerLawDecay" or "WeibullDecay" (a mapping of β is read as an ExponentialDecay)
    family: str
    #: "days", "hours" or "seconds"
    unit: str
    #: fact type -> β, half-life, rate, exponent, or (shape, scale) for WeibullDecay
    values: dict[str, Any]
    #: the value for fact types outside ``values``
    fallback: Any
    #: True when the fallback is the caller's ``default_beta``, False when an object's own
    from_keyword: bool


def read_chronofy(source: Any, default_beta: Any, time_unit: Any, owner: str) -> ChronofyTable:
    """The table of a chronofy configuration: None, a mapping fact type → β laid over
    :data:`CHRONOFY_DEFAULT_BETA`, or a chronofy decay object (see
    :meth:`DecayPolicy.from_chronofy`)."""
    if source is None or isinstance(source, Mapping):
        unit = "days" if time_unit is None else time_unit
        if not isinstance(unit, str) or unit not in UNIT_FACTORS:
            raise QueryError(f"{owner}: time_unit must be one of 'days', 'hours' or "
                             f"'seconds', got {shown(time_unit)}")
        table = dict(CHRONOFY_DEFAULT_BETA)
        table.update({} if source is None else source)
        fallback = 0.5 if default_beta is None else default_beta
        return ChronofyTable("ExponentialDecay", unit, table, fallback, True)
    name = type(source).__name__
    if (type(source).__module__ or "").split(".")[0] != "chronofy" or name not in _CHRONOFY_CLASSES:
        raise QueryError(f"{owner} takes a mapping of fact type to β, None, or a chronofy "
                         f"ExponentialDecay, HalfLifeDecay, LinearDecay, PowerLawDecay or "
                         f"WeibullDecay; got {type(source).__name__}")
    if default_beta is not None or time_unit is not None:
        raise QueryError(f"{owner}: a chronofy {name} carries its own default and "
                         f"time_unit; do not pass default_beta or time_unit with it")
    try:
        unit, table, fallback = _chronofy_attributes(source, name)
    except (AttributeError, KeyError, TypeError):
        raise QueryError(f"{owner}: cannot read this chronofy {name}; chrono_engine reads "
                         f"chronofy 0.1.9's") from None
    return ChronofyTable(name, unit, table, fallback, False)


def _chronofy_attributes(source: Any, name: str) -> tuple[str, dict[str, Any], Any]:
    """(unit, per-type table, fallback) of a chronofy 0.1.9 decay object.

    chronofy has no public accessors for these: its objects keep the time divisor in
    ``_time_divisor``, the per-type tables in ``_beta``, ``_half_life``, ``_rate``,
    ``_exponent`` (``_shape`` and ``_scale`` for Weibull) and the fallbacks in
    ``_default_<name>``; another version may name them otherwise (the caller turns the
    AttributeError, KeyError or TypeError into a QueryError).
    """
    unit = _CHRONOFY_UNITS[float(source._time_divisor)]
    if name == "WeibullDecay":
        shapes, scales = dict(source._shape), dict(source._scale)
        ks, lam = source._default_shape, source._default_scale
        table = {t: (shapes.get(t, ks), scales.get(t, lam)) for t in {**shapes, **scales}}
        return unit, table, (ks, lam)
    attr = {"ExponentialDecay": "beta", "HalfLifeDecay": "half_life",
            "LinearDecay": "rate", "PowerLawDecay": "exponent"}[name]
    return unit, dict(getattr(source, "_" + attr)), getattr(source, "_default_" + attr)
