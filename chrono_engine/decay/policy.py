"""Per-fact-type decay: :class:`DecayPolicy` (the decay D_j of each fact type j, the
paper's sensitivity classes), its saved format (``to_dict`` / ``from_dict``) and
:func:`parse_decay`, which turns an engine's ``decay=`` argument into a policy."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from chrono_engine._args import shown
from chrono_engine.errors import NotFoundError, QueryError

from . import interop as _interop
from ._checks import ages_in_days
from .families import Decay, Exponential, HalfLife, Linear, NoDecay, PowerLaw, Weibull

__all__ = ["DecayPolicy", "parse_decay"]

_POLICY_FORMAT_VERSION = 1


def _chronofy_family(family: str, unit: str) -> Callable[[Any], Decay]:
    """Our decay for one value of a chronofy table of ``family`` (chronofy's class name).

    A rate or exponent of 0, which chronofy allows for the linear and power-law families,
    does not decay: :class:`NoDecay`.
    """
    makers: dict[str, Callable[[Any], Decay]] = {
        "ExponentialDecay": lambda b: Exponential(beta=b, unit=unit),
        "HalfLifeDecay": lambda h: HalfLife(h, unit=unit),
        "LinearDecay": lambda r: Linear(rate=r, unit=unit) if r else NoDecay(),
        "PowerLawDecay": lambda a: PowerLaw(a, unit=unit) if a else NoDecay(),
        "WeibullDecay": lambda p: Weibull(shape=p[0], scale=p[1], unit=unit),
    }
    return makers[family]


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
        read = _interop.read_chronofy(source, default_beta, time_unit, owner)
        make = _chronofy_family(read.family, read.unit)
        try:
            default = make(read.fallback)
        except QueryError as exc:
            if not read.from_keyword:
                raise
            raise QueryError(f"{owner}: default_beta: {exc}") from None
        return cls._from_table(read.values, make, default, owner)

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
        ages = ages_in_days(age_days)
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
