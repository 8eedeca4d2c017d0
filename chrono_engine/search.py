"""Search: the options every search takes (defined once, in :class:`SearchOptions`), their
resolution into the planner's arguments, and the result table with its citations.

:meth:`Engine.search <chrono_engine.Engine.search>`, :meth:`~chrono_engine.Engine.search_batch`,
:meth:`~chrono_engine.Engine.query` and the ``chrono search`` command all take these options,
as keywords or as one :class:`SearchOptions`:

>>> import chrono_engine as ce
>>> opts = ce.SearchOptions(mode="as_of", as_of="2024-08-15", exact=True)
>>> opts.replace(mode="latest").mode, opts.mode
('latest', 'as_of')
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from ._args import K_MAX, as_float32, count, shown
from ._embedder import is_temporal, text_vectors
from ._state import StoreState, _string_array
from ._time import MIN_TIME_US, OPEN_END, US_PER_DAY, array_us, errors_as, from_us, now_us, scalar_us
from .errors import ConfigError, QueryError
from .schema import format_version, parse_version

__all__ = ["SearchOptions", "QueryResult", "MODES", "FUSIONS", "OUT_OF_FORCE", "SCAN_ORDERS"]

#: Search modes and their codes in the core.
MODES = {"latest": 0, "as_of": 1, "window": 2, "all": 3}
#: Fusions of similarity and validity.
FUSIONS = {"product": 0, "linear": 1}
#: What ``latest`` mode does with items not in force: the ``deprecated=`` option (items no
#: longer in force: expired or deprecated at T) and the ``future=`` option (items not yet valid).
OUT_OF_FORCE = {"penalize": 0, "exclude": 1, "include": 2}
#: Orders of the certified scan (the Engine's ``scan=``).
SCAN_ORDERS = {"auto": 0, "bounds": 1, "similarity": 2}
# The planner's settings (Engine attributes) and their least values; each is a size_t in
# the core, where the graph walk's width may grow to 4·k, so 2**62 bounds them all.
_PLANNER_MIN = {"ef": 1, "ef_max": 1, "scan_limit": 0, "seed_ef": 0, "seed_min": 0, "group": 0}
_LANGS = ("en", "zh")
_UTC = _dt.timezone.utc
_TS = pa.timestamp("us", tz="UTC")


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
            object.__setattr__(self, "fact_types", _names(self.fact_types, "fact_types"))
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


def _names(value: Any, name: str) -> str | tuple[str, ...]:
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


# ----------------------------------------------------------------------------- running one

def query_vectors(vectors: Any, dim: int, metric: str) -> np.ndarray:
    """Query vectors as C-contiguous float32 (n, dim), a new array, unit length under
    cosine; bad ones (not numbers, wrong shape, non-finite or beyond float32, zero under
    cosine) raise QueryError naming the query. Each row is scaled natively
    (``_core.unit_rows``: its sum of squares in double, where no float32 row over- or
    underflows, each component times 1/sqrt of it in double, rounded to float32), the one
    routine :func:`query_vector_one` calls too, so a lone ``search()`` and ``search_batch``
    ask with the same bits."""
    try:
        q = np.ascontiguousarray(as_float32(vectors))
    except (TypeError, ValueError) as e:
        raise QueryError(f"vectors must be numbers of shape (n, {dim}), got {type(vectors).__name__} "
                         f"{shown(vectors)} ({shown(str(e))})") from None
    if q.ndim != 2 or q.shape[1] != dim:
        raise QueryError(f"vectors must have shape (n, {dim}), got {q.shape}")
    out, row, why = _core.unit_rows(q, metric == "cosine")
    if row >= 0:
        what = "is a zero vector (cosine)" if why == 2 else "has a non-finite value (NaN, inf, or beyond float32)"
        raise QueryError(f"query {row} {what}")
    return out


#: a list of Python floats (and ints up to 2^24 in magnitude) as float32 with NumPy's bits
#: (``np.asarray(x).astype(np.float32)``), natively; None for any other list
list_f32 = _core.list_f32


def query_vector_one(vector: Any, dim: int, metric: str) -> np.ndarray | None:
    """One search's query vector as :func:`query_vectors` makes it (the same native
    routine, so the same bits), for the common call — a C-contiguous float32 NumPy vector
    of length ``dim`` — without the general path's checks (one native call); None for any
    other input, and for a bad vector (the caller takes the general path, which names the
    problem)."""
    if type(vector) is not np.ndarray or vector.dtype != np.float32 or vector.shape != (dim,) \
            or not vector.flags.c_contiguous:
        return None
    out, row, _ = _core.unit_rows(vector[None, :], metric == "cosine")
    return None if row >= 0 else out[0]


#: search options by their non-time arguments: a single search() builds and checks its
#: SearchOptions once per distinct set of options (bounded; cleared when full)
_OPTIONS_CACHE: dict = {}
_OPTIONS_CACHE_MAX = 512
_TIME_OPTIONS = ("as_of", "known_at", "window")


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
        ck = (options, tuple(sorted((n, type(v), v) for n, v in rest.items())), tuple(times))
        hit = _OPTIONS_CACHE.get(ck)
    except TypeError:  # an unhashable option (a list of fact types): no cache
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


def _overflowed(out: dict, metric: str) -> None:
    """QueryError when a hit's similarity overflowed float32 in the core: under ip an inner
    product beyond ±3.4e38 is inf (or NaN); under l2 a distance beyond ~1.8e19 is inf and
    its similarity 1 / (1 + distance) exactly 0, which no finite distance gives. Cosine
    cannot overflow (unit vectors). Items that overflowed without being returned cannot
    have displaced a returned one (inf is the top under ip; 0 is the bottom under l2)."""
    if metric == "cosine":
        return
    sim = out["similarity"]
    bad = (~np.isfinite(sim) | ~np.isfinite(out["score"])) if metric == "ip" else sim == 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "inner product with" if metric == "ip" else "distance to"
        raise QueryError(f"query {int(out['query'][i])}: its {what} item {int(out['id'][i])} overflows float32; "
                         f"scale the query (or the stored vectors) down")


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


def search_params(state: StoreState, opts: SearchOptions, k: int, planner: dict) -> _core.SearchParams:
    """The core's description of a search (:class:`_core.SearchParams`, checked once when
    made): every option of ``opts`` but the per-query times, ``k`` and the planner
    settings (an Engine's ``_planner()``: ef, ef_max, scan_limit, seed_ef, seed_min, group,
    scan). A bad ``k`` or fact type is a QueryError, a bad planner setting a ConfigError.
    Made once per distinct set of these values (:data:`_PARAMS_CACHE`)."""
    k = count(k, "k", lo=1, hi=K_MAX, error=QueryError)
    planned = planner_args(planner)
    mask = state.type_mask(opts.fact_types)
    # the reals by their bits: -0.0 == 0.0, but the core would compute with the one given
    key = (opts.mode, opts.fusion, opts.deprecated, opts.future, bool(opts.arbitrate), bool(opts.exact), k, planned,
           _REAL_BITS(opts.alpha, opts.tau, opts.deprecation_penalty), None if mask is None else mask.tobytes())
    params = _PARAMS_CACHE.get(key)
    if params is None:
        ef, ef_max, scan_limit, seed_ef, seed_min, group, scan = planned
        params = _core.SearchParams(
            mode=MODES[opts.mode], fusion=FUSIONS[opts.fusion], alpha=opts.alpha, tau=opts.tau,
            deprecated=OUT_OF_FORCE[opts.deprecated], future=OUT_OF_FORCE[opts.future],
            deprecation_penalty=opts.deprecation_penalty, arbitrate=bool(opts.arbitrate), type_mask=mask, k=k,
            exact=bool(opts.exact), ef=max(ef, 4 * k), ef_max=ef_max, scan_limit=scan_limit, seed_ef=seed_ef,
            seed_min=seed_min, group=group, scan=scan)
        if len(_PARAMS_CACHE) >= 256:
            _PARAMS_CACHE.clear()
        _PARAMS_CACHE[key] = params
    return params


#: core search descriptions by what :func:`search_params` makes them of (bounded, cleared
#: when full): a lone search does not rebuild its one (~1.6-3.4 us) for options already seen
_PARAMS_CACHE: dict = {}
_REAL_BITS = struct.Struct("<3d").pack


def core_search(state: StoreState, q: np.ndarray, k: int, opts: SearchOptions, planner: dict,
                threads: int, times: tuple | None = None) -> tuple[dict, np.ndarray]:
    """One batch of queries through the core's planner: its raw answer (NumPy arrays by
    hit: query, rank, row, id, score, similarity, validity, decay, penalty; by query:
    certified, plan) and each query's T.

    ``planner``: the Engine's settings (:func:`search_params`). ``times``: (T, known_at,
    window start, window end) per query, already resolved (:func:`query_times`), instead
    of reading them from ``opts``."""
    params = search_params(state, opts, k, planner)
    t, ka, ws, we = query_times(opts, q.shape[0], now_us()) if times is None else times
    out = state.core.search_batch(q, t, ka, ws, we, params, max(int(threads), 1))
    _overflowed(out, state.metric)
    out["known_at"] = ka  # per query: the result table shows each hit as known then
    return out, t


def lone_table(state: StoreState, q: np.ndarray, k: int, opts: SearchOptions, planner: dict,
               times: tuple | None = None) -> pa.Table | None:
    """One query's result table without its ``query`` column (no ``explain``, no gate) in
    one native call (``Store.search_one``: the planner, the hits' metadata, strings and
    citations, and the Arrow batch), the table :func:`core_search` then
    :func:`result_table` make, column for column; None where that path must answer
    instead (the core says which: an overflowed similarity, whose QueryError it raises; a
    write that raced the search; a citation only Python writes) or before any ingest."""
    strings = state.hit_strings()
    if strings is None:
        return None
    params = search_params(state, opts, k, planner)
    t, ka, ws, we = query_times(opts, 1, now_us()) if times is None else times
    return _native_table(False, lambda with_schema: state.core.search_one(
        q, int(t[0]), int(ka[0]), int(ws[0]), int(we[0]), params, strings, state.stems, opts.lang == "zh",
        with_schema))


def planner_args(planner: dict) -> tuple:
    """The planner settings (an Engine's ``_planner()``) checked, as the core takes them:
    ef, ef_max, scan_limit, seed_ef, seed_min, group, the scan order's code; a bad one is a
    ConfigError naming it."""
    key = tuple(planner.items())
    kinds = tuple([type(v) for v in planner.values()])  # True == 1 and 64.0 == 64: types too
    try:
        hit = _PLANNER_CHECKED.get(key)
    except TypeError:  # an unhashable setting: checked below (and refused)
        key = hit = None
    if hit is not None and hit[0] == kinds:
        return hit[1]
    args = tuple(count(planner[name], name, lo=lo, hi=2**62, error=ConfigError) for name, lo in _PLANNER_MIN.items())
    args += (choice(planner["scan"], SCAN_ORDERS, "scan"),)
    if key is not None:
        if len(_PLANNER_CHECKED) >= 64:
            _PLANNER_CHECKED.clear()
        _PLANNER_CHECKED[key] = (kinds, args)
    return args


#: planner settings already checked (:func:`planner_args`): by their items, with their types
_PLANNER_CHECKED: dict = {}


def run(state: StoreState, q: np.ndarray, k: int, opts: SearchOptions, planner: dict,
        threads: int, times: tuple | None = None, *, table: bool | str = True,
        with_query: bool = True) -> pa.Table | dict | list:
    """:func:`core_search`, then its answer as the result table (and the layer-3 gate);
    with ``table=False`` and no gate, as :func:`result_columns` (no Arrow); with
    ``table="json"``, each query's JSON body (:func:`result_json`) where it applies (no
    ``explain``, no gate, at most :data:`_NATIVE_MAX` hits), else as ``table=False``;
    ``with_query=False``: without the ``query`` column (one query; no gate)."""
    out, t = core_search(state, q, k, opts, planner, threads, times)
    if opts.verify is None:
        if table == "json" and not opts.explain:
            bodies = result_json(state, out, opts.lang, q.shape[0])
            if bodies is not None:
                return bodies
        if table is not True:  # False, or "json" past the native bodies
            return result_columns(state, out, opts.explain, opts.lang, t, MODES[opts.mode])
        return result_table(state, out, opts.explain, opts.lang, t, MODES[opts.mode], with_query=with_query)
    table = _gate(result_table(state, out, opts.explain, opts.lang, t, MODES[opts.mode]), opts.verify, q.shape[0])
    return table if with_query else table.drop_columns(["query"])


# ----------------------------------------------------------------------------- the result table

#: the core's plan codes (searcher.hpp Plan): the certified scan, the graph walk, the probe
_PLANS = np.array(["scan", "graph", "probe"], dtype=object)


#: the result columns that come from the core's NumPy arrays, with their Arrow types
NUMERIC_COLUMNS = {"query": pa.int32(), "rank": pa.int32(), "id": pa.uint64(), "score": pa.float64(),
                   "similarity": pa.float32(), "validity": pa.float32(), "certified": pa.bool_(),
                   "decay": pa.float32(), "penalty": pa.float32()}


def result_table(state: StoreState, out: dict, explain: bool, lang: str, t: np.ndarray, mode: int,
                 *, with_query: bool = True) -> pa.Table:
    """The core's hits as the documented Arrow table (see Engine.search_batch); without
    its ``query`` column when ``with_query`` is False (a lone search).

    Up to :data:`_NATIVE_MAX` hits without ``explain`` (a lone search, a coalesced group),
    the table is built in one native call (``_core.record_batch``, through the Arrow C
    data interface) from the same columns as :func:`result_columns` gives; more, or with
    ``explain``, through :func:`to_table` (zero-copy from NumPy)."""
    if explain or len(out["row"]) > _NATIVE_MAX:
        table = to_table(result_columns(state, out, explain, lang, t, mode))
        return table if with_query else table.drop_columns(["query"])
    columns = _native_columns(state, out, lang, with_query)
    return _native_table(with_query, lambda with_schema: _core.record_batch(columns, with_schema))


def _native_table(with_query: bool, export: Callable[[bool], tuple | None]) -> pa.Table | None:
    """The table of a natively built record batch: ``export(with_schema)`` gives its two
    capsules, or (array capsule, address) without the schema, or None (no table). The first
    table of its kind (:data:`_NATIVE_SCHEMAS`) imports its schema, which is kept; later
    ones import the array alone against it (pyarrow parses no schema: ~8 µs a call)."""
    schema = _NATIVE_SCHEMAS.get(with_query)
    got = export(schema is None)
    if got is None:
        return None
    if schema is None:
        batch = pa.RecordBatch._import_from_c_capsule(*got)
        _NATIVE_SCHEMAS[with_query] = batch.schema
    else:
        capsule, address = got
        batch = pa.RecordBatch._import_from_c(address, schema)
        del capsule  # after the import, which moved the array out of it
    return pa.Table.from_batches([batch])


#: the native result table's schema by ``with_query``: :func:`_native_columns` gives each
#: column a fixed name and format, so a table's schema depends on nothing else
_NATIVE_SCHEMAS: dict = {}


def query_cuts(query: np.ndarray, n: int) -> np.ndarray:
    """Where each of ``n`` queries' rows start in a ``search_batch`` answer (its ``query``
    column, ordered), and its end: rows ``cuts[i]:cuts[i + 1]`` answer query ``i``."""
    return np.searchsorted(query, np.arange(n + 1))


def result_json(state: StoreState, out: dict, lang: str, n_queries: int) -> list[bytes] | None:
    """Each query's hits as the service's JSON body ``{"hits": [{column: value, ...}, ...]}``
    (the result table's columns without ``query``; timestamps ISO 8601 UTC, open ends and
    non-finite numbers null), written by one native call (``_core.json_rows``); None beyond
    :data:`_NATIVE_MAX` hits (the caller takes :func:`result_columns`)."""
    if len(out["row"]) > _NATIVE_MAX:
        return None
    starts = query_cuts(out["query"], n_queries).astype(np.int64)
    return _core.json_rows(_native_columns(state, out, lang, False), starts, "hits")


def _native_columns(state: StoreState, out: dict, lang: str, with_query: bool) -> list:
    """The result table's columns (without ``explain``'s) as ``_core.record_batch`` and
    ``_core.json_rows`` take them: (name, format, values, valid or None)."""
    q = out["query"]
    rows, cols, text, cites = _hits(state, out, lang)
    columns = [("query", "i", q, None)] if with_query else []
    columns += [
        ("rank", "i", out["rank"], None), ("id", "L", out["id"], None), ("score", "g", out["score"], None),
        ("similarity", "f", out["similarity"], None), ("validity", "f", out["validity"], None),
        ("stem_id", "u") + _text(text["stem_id"]),
        ("version", "u") + _text(text["version"]),
        ("valid_from", _TS_FORMAT, cols["valid_from"], None),
        ("valid_to", _TS_FORMAT, cols["valid_to"], cols["valid_to_valid"]),
        ("title", "u") + _text(text["title"]),
        ("content", "u") + _text(text["content"]),
        ("citation", "u", cites if isinstance(cites, list) else cites.to_pylist(), None),
        ("certified", "b", out["certified"][q], None),
    ]
    return columns


#: the most hits :func:`result_table` builds natively (a lone search's, a coalesced group's)
_NATIVE_MAX = 4096
#: the C data interface's format of the result's timestamps (:data:`_TS`)
_TS_FORMAT = "tsu:UTC"


def _text(buffers: tuple) -> tuple:
    """(offsets, data, validity) as the (values, valid) of a ``_core.record_batch`` column."""
    return (buffers[0], buffers[1]), buffers[2]


def _hits(state: StoreState, out: dict, lang: str) -> tuple:
    """What both result forms read per hit, after the search (the table then holds every
    row the core returned): the rows (int64), the metadata the table reads
    (:meth:`StoreState.hit_meta`, as known at each query's ``known_at``), the string
    buffers of stem_id, version, title and content, and the citations
    (:func:`_hit_citations`)."""
    ka = out["known_at"]  # per query; one query's is the one time of all its hits
    cols = state.hit_meta(out["row"], ka if len(ka) == 1 else ka[out["query"]])
    rows = out["row"].astype(np.int64)
    title, version, content = state.hit_string_buffers(rows)
    text = {"stem_id": state.stem_buffers(cols["stem"]), "version": version, "title": title, "content": content}
    return rows, cols, text, _hit_citations(state, rows, title, version, cols["valid_from"], lang)


def result_columns(state: StoreState, out: dict, explain: bool, lang: str, t: np.ndarray, mode: int) -> dict:
    """The result table's columns before Arrow (:func:`to_table` makes the table): NumPy
    arrays for the :data:`NUMERIC_COLUMNS`, int64 µs for ``valid_from`` and ``valid_to``
    (``OPEN_END`` when open), Arrow string arrays or lists of str for the text. A service
    answering in JSON converts these without the round trip through Arrow."""
    rows, cols, text, cites = _hits(state, out, lang)
    data = {
        "query": out["query"], "rank": out["rank"], "id": out["id"], "score": out["score"],
        "similarity": out["similarity"], "validity": out["validity"],
        "stem_id": _string_array(*text["stem_id"]),
        "version": _string_array(*text["version"]),
        "valid_from": cols["valid_from"],
        "valid_to": cols["valid_to"],
        "title": _string_array(*text["title"]),
        "content": _string_array(*text["content"]),
        "citation": cites,
        "certified": out["certified"][out["query"]],
    }
    if explain:
        data["decay"] = out["decay"]
        data["penalty"] = out["penalty"]
        data["plan"] = _PLANS[out["plan"][out["query"]]].tolist()
        data["reason"] = _reasons(out, cols, t, mode)
    return data


def to_table(data: dict) -> pa.Table:
    """The Arrow result table of :func:`result_columns`."""
    cols = {}
    for name, v in data.items():
        if name in NUMERIC_COLUMNS:
            cols[name] = pa.array(v, NUMERIC_COLUMNS[name])
        elif name == "valid_from":
            # int64 arrays viewed as timestamps: pa.array(..., timestamp) takes a pandas-compat
            # path that costs ~4x more per call
            cols[name] = pa.array(v, pa.int64()).view(_TS)
        elif name == "valid_to":
            open_ = v == OPEN_END
            cols[name] = (pa.array(np.where(open_, 0, v), pa.int64(), mask=open_) if open_.any()
                          else pa.array(v, pa.int64())).view(_TS)
        else:
            cols[name] = v if isinstance(v, (pa.Array, pa.ChunkedArray)) else pa.array(v, pa.string())
    return pa.table(cols)


def _reasons(out: dict, cols: dict, t: np.ndarray, mode: int) -> list[str]:
    reasons = []
    for i in range(len(out["row"])):
        tq = t[out["query"][i]]
        parts = []
        if out["penalty"][i] < 1.0:
            parts.append(f"penalised ×{out['penalty'][i]:.3g}: " + (
                "not yet valid at T" if cols["valid_from"][i] > tq else
                "no longer valid at T" if cols["valid_to"][i] <= tq else "deprecated at T"))
        elif mode in (0, 1):
            parts.append("in force at T" if cols["valid_from"][i] <= tq < cols["valid_to"][i] else "not in force at T")
        if cols["stem"][i] >= 0:
            parts.append("arbitration winner of its stem" if mode != 1 else "the version in force at T for its stem")
        reasons.append("; ".join(parts) if parts else "eligible")
    return reasons


def _gate(table: pa.Table, gamma: float, n_queries: int) -> pa.Table:
    """Layer-3 gate over a result table (SearchOptions ``verify=``)."""
    from .verify import verify_hits

    report = verify_hits(table.column("validity").to_numpy(), table.column("id").to_numpy(), gamma,
                         query=table.column("query").to_numpy(), n_queries=n_queries)
    q = table.column("query").to_numpy()
    rho = report.column("robustness").to_numpy()[q]
    ok = report.column("satisfied").to_numpy(zero_copy_only=False)[q]
    refetch = table.column("validity").to_numpy() < gamma
    return (table.append_column("robustness", pa.array(rho, pa.float64()))
                 .append_column("satisfied", pa.array(ok, pa.bool_()))
                 .append_column("refetch", pa.array(refetch, pa.bool_())))


def citations(titles: Any, versions: Any, valid_from: np.ndarray, lang: str,
              tz: _dt.tzinfo | None = None) -> pa.Array:
    """Citation strings (Arrow), vectorised: title, canonical version (``"2.0"`` ->
    ``v2.0.0``) and the effective date (``valid_from``'s calendar day in ``tz``, default UTC).

    zh: ``依据《差旅报销管理制度》v2.0.0（2026-03-01 起施行）``;
    en: ``per Travel Expense Policy v2.0.0, effective 2026-03-01``.
    A missing title reads 未命名文档 / untitled; a missing version is left out.
    ``titles`` / ``versions``: Arrow string arrays (or lists); ``valid_from``: int64 µs.
    """
    def arrow(x: Any) -> pa.Array:
        a = x if isinstance(x, (pa.Array, pa.ChunkedArray)) else pa.array(list(x), pa.string())
        a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
        return a.cast(pa.string())

    if 0 < len(titles) <= _FEW and (tz is None or tz is _UTC):
        def pylist(x: Any) -> list:
            return x.to_pylist() if isinstance(x, (pa.Array, pa.ChunkedArray)) else list(x)
        return pa.array(_few_citations(pylist(titles), pylist(versions), valid_from, lang), pa.string())
    title, ver = arrow(titles), arrow(versions)
    n = len(title)
    if n == 0:
        return pa.array([], pa.string())
    enc = pc.dictionary_encode(ver)  # canonical form of each distinct version string once
    canon = pa.array([_canonical_version(v) for v in enc.dictionary.to_pylist()], pa.string())
    ver = canon.take(enc.indices).fill_null("") if len(canon) else pa.nulls(n, pa.string()).fill_null("")
    vf = np.asarray(valid_from, dtype=np.int64)
    if tz is None or tz is _UTC:
        day = pa.array(vf.astype("datetime64[us]").astype("datetime64[D]").astype(str), pa.string())
    else:
        day = pa.array([from_us(u).astimezone(tz).date().isoformat() for u in vf], pa.string())
    join = pc.binary_join_element_wise
    if lang == "zh":
        return join("依据《", title.fill_null("未命名文档"), "》", ver, "（", day, " 起施行）", "")
    sep = pc.if_else(pc.equal(ver, ""), "", " ")
    return join("per ", title.fill_null("untitled"), sep, ver, ", effective ", day, "")


#: below this many citations, Python string joins cost less than Arrow's kernels (a
#: search's few hits: ~10 µs against ~150 µs); the two paths give the same strings
_FEW = 64


#: citations kept per store state and language, by row (a row's title, version and
#: valid_from never change: amendments move valid_to and deprecation only); cleared when full
_CITED_MAX = 65536


def _hit_citations(state: StoreState, rows: np.ndarray, title: tuple, version: tuple,
                   valid_from: np.ndarray, lang: str) -> list[str] | pa.Array:
    """:func:`citations` of a search's hits (UTC days) from their titles' and versions'
    string buffers (:meth:`StoreState.hit_string_buffers`), as a list: each row's text is
    made once per store state and language and kept (at most :data:`_CITED_MAX` rows, then
    cleared), so a search's hits cost a dict lookup each; the rows not kept yet are made
    together (Python's joins up to :data:`_FEW` of them, Arrow's kernels beyond). More hits
    than the cache holds: an Arrow array, without the cache."""
    if not 0 < len(rows) <= _CITED_MAX:
        return citations(_string_array(*title), _string_array(*version), valid_from, lang)
    cache = state.cited.get(lang)
    if cache is None:
        cache = state.cited[lang] = {}
    keys = rows.tolist()
    got = [cache.get(r) for r in keys]
    if None in got:
        miss = [i for i, g in enumerate(got) if g is None]
        titles, versions, vf = _string_array(*title), _string_array(*version), valid_from
        if len(miss) < len(keys):
            at = pa.array(miss, pa.int64())
            titles, versions, vf = titles.take(at), versions.take(at), np.asarray(valid_from)[miss]
        made = (_few_citations(titles.to_pylist(), versions.to_pylist(), vf, lang) if len(miss) <= _FEW
                else citations(titles, versions, vf, lang).to_pylist())
        if len(cache) + len(miss) > _CITED_MAX:
            cache.clear()
        for i, text in zip(miss, made):
            got[i] = cache[keys[i]] = text
    return got


@functools.lru_cache(maxsize=4096)
def _canonical_version(v: str) -> str:
    return format_version(parse_version(v))


@functools.lru_cache(maxsize=65536)
def _day_text(day: int) -> str:
    """Day ``day`` since the epoch as ``YYYY-MM-DD`` (NumPy's text, as the Arrow path's)."""
    return str(np.datetime64(day, "D"))


def _few_citations(titles: list, versions: list, valid_from: Any, lang: str) -> list[str]:
    days = [_day_text(d) for d in (np.asarray(valid_from, dtype=np.int64) // US_PER_DAY).tolist()]
    out = []
    for t, v, day in zip(titles, versions, days):
        ver = "" if v is None else _canonical_version(v)
        if lang == "zh":
            out.append(f"依据《{'未命名文档' if t is None else t}》{ver}（{day} 起施行）")
        else:
            out.append(f"per {'untitled' if t is None else t}{' ' if ver else ''}{ver}, effective {day}")
    return out


# ----------------------------------------------------------------------------- natural language

@dataclass(frozen=True)
class QueryResult:
    """What :meth:`Engine.query <chrono_engine.Engine.query>` returns: the ``hits`` table
    (as :meth:`~chrono_engine.Engine.search` returns it, citations in ``lang``) and the
    :class:`~chrono_engine.TemporalIntent` the search ran with; ``as_of`` / ``window`` are
    the instants actually used (UTC datetimes; ``as_of`` is T, the decay anchor, in every
    mode; ``window`` only in window mode) and ``lang`` the citation language.
    """

    hits: pa.Table
    intent: Any
    lang: str
    as_of: _dt.datetime
    window: tuple[_dt.datetime, _dt.datetime] | None = None

    @property
    def citations(self) -> list[str]:
        """The hits' citations, in rank order."""
        return self.hits.column("citation").to_pylist()

    def __len__(self) -> int:
        return self.hits.num_rows


def _has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK ideograph (then citations default to Chinese)."""
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\uf900" <= ch <= "\ufaff"
               for ch in text)


# the options a text query takes from its time intent rather than from the caller
_FROM_INTENT = ("mode", "as_of", "window")


#: undated items in a text query: left out when the question has a time constraint ("auto"),
#: always left out, or always kept
UNDATED = ("auto", "exclude", "include")
#: the most rows a text query's post-stage asks the core for before it settles for an
#: uncertified answer (then ``certified`` is False on its hits)
POST_FETCH_MAX = 4096


#: the default ``window_fit`` of :meth:`Engine.query <chrono_engine.Engine.query>`: a
#: half-life in days (chosen on the TimeQA tune part: benches/bench_temporal_qa.py)
WINDOW_FIT_DAYS = 730.0
#: with the window fit on, how long before the window's start a fact may begin and still
#: qualify (µs): texts date the event that starts a state ("In June 2017 he replaced ...")
#: shortly before the span a question names ("from Jul 2017 to Jul 2018"); the fit then
#: ranks such facts by that distance. A quarter, chosen on the TimeQA tune part.
WINDOW_LEAD_US = 92 * US_PER_DAY
#: the most an end's distance from the window's end counts in the window fit: a text dates
#: the start of what it tells more often than its end, and a fact's stored end is often just
#: its expression's grain ("in 2004" ends with 2004)
FIT_END_CAP_US = 365 * US_PER_DAY


def window_closeness(valid_from: Any, valid_to: Any, start: int, end: int, half_life_us: float,
                     now: int) -> np.ndarray:
    """How well each item's validity fits the window ``[start, end)``, in (0, 1]: 2^(−d / h)
    with d = |valid_from − start| + min(|min(valid_to, now) − end|, :data:`FIT_END_CAP_US`)
    (the end term only for a window with an end) and h = ``half_life_us``. An open
    ``valid_to`` (the fact still holds) counts as ``now``. Every argument but the bounds is
    int64 µs (``valid_to``: an array or Arrow column, open = :data:`OPEN_END` or null)."""
    vf = np.asarray(valid_from, dtype=np.int64).astype(np.float64)
    d = np.abs(vf - float(start))
    if end != OPEN_END:
        if isinstance(valid_to, (pa.Array, pa.ChunkedArray)):
            valid_to = valid_to.cast(pa.int64()).fill_null(OPEN_END).to_numpy(zero_copy_only=False)
        vt = np.minimum(np.asarray(valid_to, dtype=np.int64), np.int64(now)).astype(np.float64)
        d += np.minimum(np.abs(vt - float(end)), float(FIT_END_CAP_US))
    return np.exp2(-d / half_life_us)


def _post(hits: pa.Table, k: int, *, drop_undated: bool, distinct: bool, fit: tuple | None,
          alpha: float) -> tuple[pa.Table, float | None]:
    """The k best rows of ``hits`` (ranked by score) after the text query's post-stage:
    undated rows dropped, the window fit fused into the score, one row per distinct
    content. Returns the rows and the k-th final score (None when fewer than k)."""
    vf = hits.column("valid_from").cast(pa.int64()).to_numpy(zero_copy_only=False)
    score = hits.column("score").to_numpy(zero_copy_only=False).astype(np.float64)
    keep = np.ones(hits.num_rows, bool)
    vt = None
    if drop_undated or fit is not None:
        vt = hits.column("valid_to").cast(pa.int64()).fill_null(OPEN_END).to_numpy(zero_copy_only=False)
    if drop_undated:  # undated: valid from the beginning of time, open-ended (ground_rows' mark)
        keep &= (vf != MIN_TIME_US) | (vt != OPEN_END)
    if fit is not None:
        score = alpha * score + (1.0 - alpha) * window_closeness(vf, vt, *fit)
    order = np.flatnonzero(keep)
    order = order[np.argsort(-score[order], kind="stable")]
    if distinct and len(order):
        content = hits.column("content").to_pylist()
        seen, picked = set(), []
        for i in order.tolist():
            c = content[i]
            key = ("id", i) if c is None else c
            if key not in seen:
                seen.add(key)
                picked.append(i)
                if len(picked) == k:
                    break
        order = np.asarray(picked, np.int64)
    order = order[:k]
    out = hits.take(pa.array(order, pa.int64()))
    if fit is not None:
        out = out.set_column(out.column_names.index("score"), "score", pa.array(score[order], pa.float64()))
    out = out.set_column(out.column_names.index("rank"), "rank",
                         pa.array(np.arange(1, len(order) + 1), out.schema.field("rank").type))
    return out, (float(score[order[-1]]) if len(order) == k else None)


def post_search(search: Callable[..., pa.Table], vec: np.ndarray, k: int, opts: SearchOptions, *,
                drop_undated: bool, distinct: bool, fit: tuple | None, alpha: float) -> pa.Table:
    """``search`` with the text query's post-stage (:func:`_post`), asking the core for more
    rows until the answer is exact: k rows found and, with a window fit, no row not yet
    fetched could reach the k-th final score (its core score is at most the last fetched
    one and its closeness at most 1). Past :data:`POST_FETCH_MAX` rows the answer is
    returned with ``certified`` False."""
    if not (drop_undated or distinct or fit is not None):
        return search(vec, k, opts)
    m = min(max(4 * k, k + 16), K_MAX)
    while True:
        hits = search(vec, m, opts)
        out, kth = _post(hits, k, drop_undated=drop_undated, distinct=distinct, fit=fit, alpha=alpha)
        if hits.num_rows < m:
            return out  # every qualifying row was seen
        if kth is not None:
            if fit is None:
                return out
            last = float(hits.column("score")[hits.num_rows - 1].as_py())
            if kth >= alpha * last + (1.0 - alpha):
                return out
        if m >= POST_FETCH_MAX or m >= K_MAX:
            cert = pa.array(np.zeros(out.num_rows, bool))
            return out.set_column(out.column_names.index("certified"), "certified", cert)
        m = min(m * 4, POST_FETCH_MAX, K_MAX)



def _check_embedder(fn: Any) -> None:
    if fn is None:
        raise QueryError("query needs an embedder: pass embed= (a callable str -> vector) "
                         "or set engine.embedder")
    if not callable(fn) and not is_temporal(fn) and not callable(getattr(fn, "encode", None)):
        raise QueryError(f"embed must be callable (str -> vector), got {type(fn).__name__}")


def _embed_failed(row: int | None, detail: str) -> None:
    raise QueryError(f"embed returned something that is not a vector ({detail})")


def embed_question(fn: Any, question: str, t: int, dim: int) -> np.ndarray:
    """The question's float32 vector from ``fn``: a time-aware embedder (a
    :class:`~chrono_engine.TemporalEmbedder`: ``embed_query`` embeds it at T = ``t`` µs) or
    a plain one as ingest calls it (``encode([question])`` when it has ``encode``, else
    ``fn(question)``; :mod:`chrono_engine._embedder`), checked to be ``dim`` wide; anything
    else is a QueryError."""
    _check_embedder(fn)
    if is_temporal(fn):
        try:
            vec = as_float32(fn.embed_query(question, at=np.array([t], np.int64)))
        except (TypeError, ValueError) as e:
            raise QueryError(f"embed returned something that is not a vector: {shown(str(e))}") from None
    else:
        vec = text_vectors(fn, [question], _embed_failed)[0]
    if vec.shape != (dim,):
        raise QueryError(f"embed returned shape {vec.shape}, expected ({dim},)")
    return vec

def query_text(search: Callable[..., pa.Table], dim: int, embedder: Any, text: str, k: int, *, now: Any,
               tz: Any, embed: Callable[[str], Any] | None, lang: str | None,
               options: SearchOptions | None, overrides: dict, embed_text: str = "full",
               distinct: bool = True, undated: str = "auto", window_fit: Any = WINDOW_FIT_DAYS) -> QueryResult:
    """The body of :meth:`Engine.query <chrono_engine.Engine.query>`; ``search(vector, k,
    options)`` runs one search, ``embedder`` is the engine's."""
    from .timelang import parse_temporal_intent
    from .timelang.parser import context

    if not isinstance(text, str) or not text.strip():
        raise QueryError(f"text must be a non-empty string, got {shown(text)}")
    for name in overrides:
        if name in _FROM_INTENT:
            raise QueryError(f"query: {name} comes from the text's time intent; use search() to set it")
        if name not in SearchOptions.names():
            known = [n for n in SearchOptions.names() if n not in _FROM_INTENT + ("lang",)]
            raise QueryError(f"query: unknown option {name!r} (known: {', '.join(known)})")
    if lang is None:
        lang = "zh" if _has_cjk(text) else "en"
    elif lang not in _LANGS:
        raise QueryError(f"lang must be 'en', 'zh' or None, got {shown(lang)}")
    if embed_text not in ("full", "cleaned"):
        raise QueryError(f"embed_text must be 'full' or 'cleaned', got {shown(embed_text)}")
    if not isinstance(distinct, (bool, np.bool_)):
        raise QueryError(f"distinct must be True or False, got {shown(distinct)}")
    if not isinstance(undated, str) or undated not in UNDATED:
        raise QueryError(f"undated must be one of {', '.join(UNDATED)}, got {shown(undated)}")
    if window_fit is not None:  # a half-life in days
        window_fit = real(window_fit, "window_fit", 0.0, 1e7, open_lo=True)
    k = count(k, "k", lo=1, hi=K_MAX, error=QueryError)
    fn = embed if embed is not None else embedder
    _check_embedder(fn)
    ctx = context(now, tz)
    intent = parse_temporal_intent(text, now=ctx.now, tz=ctx.tz)
    with errors_as(QueryError):
        now_at = scalar_us(ctx.now, "now")
        window = None
        if intent.mode == "as_of":
            t = scalar_us(intent.anchor, "anchor")
            kw = {"mode": "as_of", "as_of": t}
        elif intent.mode == "window":
            start, end = intent.window
            ws = scalar_us(start, "window start") if start is not None else MIN_TIME_US
            we = scalar_us(end, "window end") if end is not None else OPEN_END
            t = min(we, now_at)
            window = (ws, we)
            kw = {"mode": "window", "window": window, "as_of": t}
        else:
            t = now_at
            kw = {"mode": "latest", "as_of": t}
    vec = embed_question(fn, text if embed_text == "full" else (intent.cleaned_query or text), t, dim)
    fit = None
    if window_fit is not None and window is not None and window[0] != MIN_TIME_US:
        fit = (window[0], window[1], window_fit * US_PER_DAY, now_at)
        # the core's window starts a quarter early; the fit measures from the real start
        kw["window"] = (max(MIN_TIME_US, window[0] - WINDOW_LEAD_US), window[1])
    opts = SearchOptions.of(options, **overrides, **kw, lang=lang)
    drop = undated == "exclude" or (undated == "auto" and intent.mode != "latest")
    hits = post_search(search, vec, k, opts, drop_undated=drop, distinct=bool(distinct), fit=fit,
                       alpha=opts.alpha)
    if ctx.tz is not _UTC and hits.num_rows:
        vf = hits.column("valid_from").cast(pa.int64()).to_numpy()
        cites = citations(hits.column("title"), hits.column("version"), vf, lang, ctx.tz)
        hits = hits.set_column(hits.column_names.index("citation"), "citation", cites)
    return QueryResult(hits=hits, intent=intent, lang=lang, as_of=from_us(t),
                       window=None if window is None else (from_us(window[0]), from_us(window[1])))
