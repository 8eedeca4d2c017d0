"""The options every search takes, defined once in :class:`SearchOptions`; their codes in the core,
the per-call cache of checked options, the grouping key, and the query instants."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._args import shown
from .._time import MIN_TIME_US, OPEN_END, array_us, errors_as, scalar_us
from ..errors import QueryError
from . import filters



#: Search modes and their codes in the core.
MODES = {"latest": 0, "as_of": 1, "window": 2, "all": 3}


#: Fusions of similarity and validity.
FUSIONS = {"product": 0, "linear": 1}


#: What ``latest`` mode does with items not in force: the ``deprecated=`` option (items no
#: longer in force: expired or deprecated at T) and the ``future=`` option (items not yet valid).
OUT_OF_FORCE = {"penalize": 0, "exclude": 1, "include": 2}


#: Orders of the certified scan (the Engine's ``scan=``).
SCAN_ORDERS = {"auto": 0, "bounds": 1, "similarity": 2}


_LANGS = ("en", "zh")


def choice(value: Any, options: dict, name: str) -> int:
    """The code of ``value`` among ``options``, or QueryError naming the argument."""
    if not isinstance(value, str) or value not in options:
        raise QueryError(f"{name} must be one of {sorted(options)}, got {shown(value)}")
    return options[value]


def real(value: Any, name: str, lo: float, hi: float, *, open_lo: bool = False) -> float:
    """A real number in [lo, hi] — (lo, hi] with ``open_lo`` — (bools refused), or
    QueryError naming the argument."""
    bounds = f"{'(' if open_lo else '['}{lo:g}, {hi:g}]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise QueryError(f"{name} must be a number in {bounds}, got {shown(value)}")
    try:
        v = float(value)
    except OverflowError:  # an int beyond the float range
        v = float("inf") if value > 0 else float("-inf")
    if not ((lo < v) if open_lo else (lo <= v)) or not v <= hi:  # NaN fails too
        raise QueryError(f"{name} must be in {bounds}, got {shown(value)}")
    return v


def unit_float(value: Any, name: str) -> float:
    """A real number in [0, 1] (bools refused), or QueryError naming the argument."""
    return real(value, name, 0.0, 1.0)


@dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """What a search asks for, beside the query vectors and k. Checked when made (a bad
    value raises :class:`~chrono_engine.errors.QueryError` naming the option); times are
    read when the search runs (one value, or one per query).

    Modes: ``latest`` (T = ``as_of`` or now; items no longer in force — expired or
    deprecated at T — are penalised ×``deprecation_penalty``, excluded or included as
    ``deprecated`` says; items not yet valid at T (valid_from > T) as ``future`` says,
    excluded by default: "valid now" does not answer with a rule that takes effect next
    year; per stem the highest version in force wins);
    ``as_of`` (hard filter valid_from ≤ T < valid_to; per stem the version in force at T);
    ``window`` (valid interval overlaps ``window=(start, end)``; either end may be None,
    open: a None start is the beginning of time, a None end never closes; decay measured
    from T = ``as_of``, else the window's end, else — end open — now); ``all`` (no validity
    filter). Every mode sees the
    store as known at ``known_at`` (default now): ingested_at ≤ known_at < retracted_at.

    ``fusion``: "product" (s⁺·V, the paper) or "linear" (α·s + (1−α)·V, the article,
    α = ``alpha``); ``tau`` (τ): items with V < τ never qualify; ``arbitrate=False``
    returns every version of a stem; ``fact_types`` restricts the search to those types (a
    type that no stored row carries and the decay policy does not name is a QueryError
    listing the known ones, when the search runs);
    ``exact=True`` forces the certified scan plan; ``explain=True`` adds decay, penalty,
    plan and reason columns; ``lang`` is the citations' language ("en" / "zh");
    ``where`` filters on the items' metadata columns (the dict form of Chroma and LangChain:
    ``{"tenant": "acme", "acl": {"$in": ["hr", "all"]}}``; :mod:`chrono_engine.search.filters`),
    exactly, joined with the time predicate inside the planner; ``columns`` names the
    metadata columns the result carries (None: all; ``[]``: none);
    ``verify=γ`` gates the retrieved context (layer 3): each query's hits form one chain,
    and the result gains ``robustness`` (ρ = min over the query's hits of V − γ; 0 for a
    query without hits), ``satisfied`` (ρ ≥ 0) and ``refetch`` (this hit's V < γ).
    """

    # when: the mode and its instants
    mode: str = "latest"
    as_of: Any = None
    known_at: Any = None
    window: Any = None
    # what qualifies
    fact_types: Sequence[str] | None = None
    where: Any = None
    tau: float = 0.0
    deprecated: str = "penalize"
    future: str = "exclude"
    deprecation_penalty: float = 0.1
    arbitrate: bool = True
    # how it is scored and planned
    fusion: str = "product"
    alpha: float = 0.75
    exact: bool = False
    # what comes back
    explain: bool = False
    lang: str = "en"
    verify: float | None = None
    columns: Sequence[str] | None = None

    def __post_init__(self) -> None:
        choice(self.mode, MODES, "mode")
        choice(self.fusion, FUSIONS, "fusion")
        choice(self.deprecated, OUT_OF_FORCE, "deprecated")
        choice(self.future, OUT_OF_FORCE, "future")
        for name in ("alpha", "tau", "deprecation_penalty"):
            object.__setattr__(self, name, unit_float(getattr(self, name), name))
        if self.verify is not None:
            object.__setattr__(self, "verify", unit_float(self.verify, "verify"))
        if self.lang not in _LANGS:
            raise QueryError(f"lang must be 'en' or 'zh', got {shown(self.lang)}")
        if self.fact_types is not None:
            object.__setattr__(self, "fact_types", name_list(self.fact_types, "fact_types"))
        object.__setattr__(self, "where", filters.parse(self.where))
        if self.columns is not None:
            cols = name_list(self.columns, "columns")
            object.__setattr__(self, "columns", (cols,) if isinstance(cols, str) else cols)
        if self.mode == "window" and not _pair(self.window):
            raise QueryError(f"window mode needs window=(start, end) (None for an open end), got {shown(self.window)}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every option's name, in order."""
        return _OPTION_NAMES

    @classmethod
    def of(cls, options: SearchOptions | None = None, **overrides: Any) -> SearchOptions:
        """``options`` (default: the defaults) with ``overrides`` applied; an unknown name is
        a QueryError listing the known ones."""
        if options is not None and not isinstance(options, SearchOptions):
            raise QueryError(f"options must be a SearchOptions, got {type(options).__name__}")
        unknown = [n for n in overrides if n not in _OPTION_SET]
        if unknown:
            unknown.sort()
            raise QueryError(f"unknown search option {unknown[0]!r} (known: {', '.join(cls.names())})")
        if options is None:
            return cls(**overrides)
        return dataclasses.replace(options, **overrides) if overrides else options

    def replace(self, **overrides: Any) -> SearchOptions:
        """A copy with some options changed (checked like a new one)."""
        return SearchOptions.of(self, **overrides)


_OPTION_NAMES = tuple(f.name for f in dataclasses.fields(SearchOptions))


_OPTION_SET = frozenset(_OPTION_NAMES)


_KEY_NAMES = tuple(n for n in _OPTION_NAMES if n not in ("as_of", "known_at", "window"))


def _pair(value: Any) -> bool:
    """Whether ``value`` has two items (a NumPy 0-d array has ``__len__`` and no length)."""
    try:
        return value is not None and not isinstance(value, (str, bytes)) and len(value) == 2
    except TypeError:
        return False


def name_list(value: Any, name: str) -> str | tuple[str, ...]:
    """A name or a sequence of names (``fact_types``), as a str or a tuple of str."""
    if isinstance(value, str):
        return value
    try:
        names = tuple(value) if not isinstance(value, (bytes, dict)) else None
    except TypeError:
        names = None
    if names is None:
        raise QueryError(f"{name} must be a string or a sequence of strings, got {type(value).__name__} "
                         f"{shown(value)}")
    for i, x in enumerate(names):
        if not isinstance(x, str):
            raise QueryError(f"{name}[{i}] must be a string, got {type(x).__name__} {shown(x)}")
    return names


#: search options by their non-time arguments: a single search() builds and checks its
#: SearchOptions once per distinct set of options (bounded; cleared when full)
_OPTIONS_CACHE: dict = {}


_OPTIONS_CACHE_MAX = 512


_TIME_OPTIONS = ("as_of", "known_at", "window")


def _frozen(v: Any, depth: int = 0) -> Any:
    """A hashable stand-in of an option's value that tells apart every value the options
    read differently: a list, tuple or dict (a ``where`` filter, ``columns``, ``fact_types``)
    by its items, each by type and value (``True``, ``1`` and ``1.0`` stay apart); a value
    nested deeper than ``where`` allows, or one of another kind (an array), raises
    TypeError (the call is then checked uncached)."""
    if depth > 40:
        raise TypeError("nested too deeply to cache")
    t = type(v)
    if t is dict:
        return (dict, tuple((k, type(k), type(x), _frozen(x, depth + 1)) for k, x in v.items()))
    if t is list or t is tuple:
        return (t, tuple((type(x), _frozen(x, depth + 1)) for x in v))
    hash(v)
    return v


def options_for_call(options: SearchOptions | None, kwargs: dict) -> tuple[SearchOptions, tuple]:
    """The :class:`SearchOptions` of one :meth:`Engine.search` call and its grouping key
    (:func:`options_key`), as ``SearchOptions.of(options, **kwargs)`` gives them; the
    checked options are cached by the other options' values (types included: ``alpha=True``
    is refused even after ``alpha=1`` was accepted) and the names of the times the call
    gives; a later call's times (checked when the search runs, :func:`query_times`) are set
    on a copy."""
    times = {n: kwargs[n] for n in _TIME_OPTIONS if n in kwargs}
    rest = {n: v for n, v in kwargs.items() if n not in _TIME_OPTIONS} if times else kwargs
    try:  # the key: the other options by value and type, and which times the call gives
        ck = (options, tuple(sorted((n, type(v), _frozen(v)) for n, v in rest.items())), tuple(times))
        hit = _OPTIONS_CACHE.get(ck)
    except TypeError:  # an option that does not freeze (an array of fact types): no cache
        opts = SearchOptions.of(options, **kwargs)
        return opts, options_key(opts)
    if hit is None:  # checked whole, with this call's times; later calls set their own
        opts = SearchOptions.of(options, **kwargs)
        if len(_OPTIONS_CACHE) >= _OPTIONS_CACHE_MAX:
            _OPTIONS_CACHE.clear()
        key = options_key(opts)
        _OPTIONS_CACHE[ck] = (opts, key)
        return opts, key
    base, key = hit
    if not times:
        return base, key
    opts = object.__new__(SearchOptions)  # copy.copy's result, without its reduce protocol (~2 us)
    fields = opts.__dict__
    fields.update(base.__dict__)
    fields.update(times)
    if opts.mode == "window" and not _pair(opts.window):
        raise QueryError(f"window mode needs window=(start, end) (None for an open end), got {shown(opts.window)}")
    return opts, key


def instant(value: Any, name: str) -> int:
    """One query instant (``as_of``, ``at``, a window end) as µs; a bad one is a QueryError
    naming ``name`` (the rules: :mod:`chrono_engine._time`)."""
    with errors_as(QueryError):
        return scalar_us(value, name)


def _filled(n: int, value: int) -> np.ndarray:
    """``n`` int64 copies of ``value`` (one, a lone call's, without np.full's Python layer)."""
    return np.array((value,), np.int64) if n == 1 else np.full(n, value, dtype=np.int64)


def _instants(value: Any, n: int, name: str, default: int | None) -> np.ndarray:
    if value is None and default is not None:  # the common calls, without the error context
        return _filled(n, default)
    if type(value) is int and -(1 << 63) <= value < (1 << 63):
        return _filled(n, value)
    with errors_as(QueryError):
        return array_us(value, n, name, default)


def query_times(opts: SearchOptions, nq: int, now: int) -> tuple[np.ndarray, ...]:
    """(T, known_at, window start, window end) per query, int64 µs. An open window start
    (None) is :data:`MIN_TIME_US`, before every stored time; an open end is
    :data:`OPEN_END` (as :meth:`Engine.query <chrono_engine.Engine.query>` sends them)."""
    ws = we = np.zeros(nq, np.int64)
    if opts.mode == "as_of":
        t = _instants(opts.as_of, nq, "as_of", None)
    elif opts.mode == "window":
        ws = _instants(opts.window[0], nq, "window start", MIN_TIME_US)
        we = _instants(opts.window[1], nq, "window end", OPEN_END)
        if (ws >= we).any():
            raise QueryError(f"window start must be before its end (query {int(np.flatnonzero(ws >= we)[0])})")
        if opts.as_of is not None:
            t = _instants(opts.as_of, nq, "as_of", None)
        else:  # the window's end; an open one: now
            t = np.where(we == OPEN_END, np.int64(now), we)
    else:
        t = _instants(opts.as_of, nq, "as_of", now)
    return t, _instants(opts.known_at, nq, "known_at", now), ws, we


def options_key(opts: SearchOptions) -> tuple:
    """Every option but the per-query times (as_of, known_at, window): calls with equal keys
    can run as one batch, their times as arrays (the coalescer's grouping key)."""
    return tuple([getattr(opts, name) for name in _KEY_NAMES])
