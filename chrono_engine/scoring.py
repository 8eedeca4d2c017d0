"""Rescoring for users who keep their own vector store: ``ce.score`` fuses a retriever's
similarities with validity, vectorised in C++ (Arrow in, Arrow out).

>>> import pyarrow as pa, chrono_engine as ce
>>> cands = pa.table({"similarity": [0.9, 0.8],
...                   "observed_at": pa.array([0, 0], pa.timestamp("us", tz="UTC"))})
>>> pol = ce.ScoringPolicy(decay=ce.Exponential(half_life=1))
>>> [round(x, 6) for x in ce.score(cands, as_of="1970-01-02", policy=pol).column("score").to_pylist()]
[0.45, 0.4]
"""
from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from ._args import (NESTING_MAX, STRUCT_CELLS_MAX, arrow_type, holds_containers, nested_deeper, shown,
                    struct_cells_beyond, thread_count)
from ._columns import ARROW_ERRORS, as_frame, frame_kind, frame_to_arrow, is_polars
from ._time import OPEN_END, column_us, errors_as
from .decay import DecayPolicy, parse_decay
from .errors import QueryError
from .search import FUSIONS, OUT_OF_FORCE, choice, instant, unit_float
from .search import filters as _filters

__all__ = ["ScoringPolicy", "score"]


@dataclass(frozen=True)
class ScoringPolicy:
    """How similarity s and validity V = q·D_j(age) fuse into one score.

    ``fusion``: "product" (s⁺·V, the paper) or "linear" (α·s + (1−α)·V, the article);
    ``alpha`` (α): weight of similarity in the linear fusion; ``tau`` (τ): items with
    V < τ get score −inf; ``deprecated``: what happens to rows no longer valid at T or
    flagged deprecated ("penalize": × ``penalty``, "exclude": −inf, "include": nothing);
    ``future``: the same for rows not yet valid (valid_from > T), excluded by default as in
    the engine's ``latest`` mode (the article preset ignores it: its listing has no such
    rule and is reproduced as it is).
    """

    decay: Any = None
    fusion: str = "product"
    alpha: float = 0.75
    tau: float = 0.0
    deprecated: str = "penalize"
    penalty: float = 0.1
    preset: str | None = None
    future: str = "exclude"
    policy: DecayPolicy = field(init=False, repr=False, compare=False)

    @classmethod
    def article_reference(cls, semantic_weight: float = 0.75, half_life_days: float = 365) -> ScoringPolicy:
        """The enterprise article's TypeScript retriever, exactly (quirks included; see
        :mod:`chrono_engine.article`): Gaussian freshness on |T − valid_from| in days with
        σ = h / √(2 ln 2) clamped to [0.01, 1], linear fusion with α = ``semantic_weight``,
        ×0.1 for deprecated rows outside historical queries, rows outside a historical
        window scored similarity × 0.1 with freshness 0.001. With :func:`score`, pass the
        listing's clock as ``as_of`` and the user's question as ``query=`` (its own year
        parser) or a ``window=``; sorting and per-stem arbitration are
        :func:`~chrono_engine.article_reference_pipeline`'s.

        >>> import pyarrow as pa, chrono_engine as ce
        >>> pol = ce.ScoringPolicy.article_reference()
        >>> t = pa.table({"similarity": [0.8], "valid_from": pa.array([0], pa.timestamp("us"))})
        >>> round(ce.score(t, as_of=0, policy=pol).column("score")[0].as_py(), 12)
        0.85
        """
        from .decay import Gaussian
        return cls(decay=Gaussian(half_life=half_life_days, symmetric=True), fusion="linear",
                   alpha=unit_float(semantic_weight, "semantic_weight"), deprecated="penalize", penalty=0.1,
                   preset="article")

    def __post_init__(self) -> None:
        if self.preset not in (None, "article"):
            raise QueryError(f"preset must be None or 'article', got {shown(self.preset)}")
        if self.preset == "article":
            from .decay import Gaussian
            d = self.decay
            if not (isinstance(d, Gaussian) and d.offset == 0 and d.unit == "days"
                    and self.fusion == "linear" and self.tau == 0 and self.deprecated == "penalize"):
                raise QueryError("preset='article' needs a Gaussian decay in days without offset, linear "
                                 "fusion, tau=0 and deprecated='penalize' (use ScoringPolicy.article_reference)")
        choice(self.fusion, FUSIONS, "fusion")
        choice(self.deprecated, OUT_OF_FORCE, "deprecated")
        choice(self.future, OUT_OF_FORCE, "future")
        for name in ("alpha", "tau", "penalty"):
            unit_float(getattr(self, name), name)
        object.__setattr__(self, "policy", parse_decay(self.decay))


def _one_array(col: Any) -> pa.Array:
    """A column as one Array (zero-copy when it has a single chunk)."""
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def _table(candidates: Any) -> pa.Table:
    """The candidates as one Arrow table. A dict's columns go to Arrow's conversion only
    when they nest lists or dicts at most :data:`~chrono_engine._args.NESTING_MAX` levels
    deep (its type inference recurses per level and overflows the C stack thousands of
    levels down: a crash); a column Arrow cannot convert (ints beyond int64, lone
    surrogates, mixed types, objects) is a QueryError naming it."""
    if isinstance(candidates, pa.Table):
        return candidates
    if isinstance(candidates, pa.RecordBatch):
        return pa.Table.from_batches([candidates])
    if frame_kind(candidates) is not None:
        try:
            return frame_to_arrow(candidates)
        except ARROW_ERRORS as e:
            raise QueryError(f"candidates: the DataFrame does not convert to Arrow: {shown(str(e))}") from None
    if isinstance(candidates, dict):  # polars Series as Arrow arrays
        candidates = {k: v.to_arrow() if is_polars(v, "Series") else v for k, v in candidates.items()}
    else:
        raise QueryError(f"candidates must be a pyarrow Table or RecordBatch, a pandas or polars DataFrame or a dict, "
                         f"got {type(candidates).__name__}")
    for name, col in candidates.items():
        if isinstance(col, (pa.Array, pa.ChunkedArray)):
            continue
        if isinstance(col, np.ndarray) and col.dtype != object:
            continue
        if getattr(col, "dtype", None) == object:  # a pandas Series of objects
            col = np.asarray(col)
        if isinstance(col, (list, tuple, np.ndarray)) and holds_containers(col):
            if nested_deeper(col):
                raise QueryError(f"column {shown(name)} nests lists or dicts more than {NESTING_MAX} levels deep")
            if struct_cells_beyond(col):
                raise QueryError(f"column {shown(name)}: its dicts' distinct keys times their number pass "
                                 f"{STRUCT_CELLS_MAX:,} (Arrow would make every key a field of every dict)")
        if isinstance(col, (list, tuple, np.ndarray)) and _mixes_bools(col):
            raise QueryError(f"column {shown(name)} mixes booleans with numbers (booleans are not numbers; "
                             f"Arrow would read them as 1 and 0)")
    try:
        return pa.table(candidates)
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 - Arrow's conversion raises many kinds (and the caller's objects any)
        raise QueryError(f"candidates: {_unconvertible(candidates)}: {shown(str(e))}") from None


def _mixes_bools(col: Any) -> bool:
    """Whether a column of Python objects holds booleans beside numbers (one pass in C):
    Arrow makes ``[0.5, True]`` a double column."""
    types = set(map(type, col))
    return any(issubclass(t, (bool, np.bool_)) for t in types) and \
        any(issubclass(t, (int, float, np.number)) and not issubclass(t, (bool, np.bool_)) for t in types)


def _unconvertible(candidates: dict) -> str:
    """Which of a dict's columns Arrow cannot convert, for the message (the error path only)."""
    for name, col in candidates.items():
        if not isinstance(name, str):
            return f"column name {shown(name)} is not a string"
        if isinstance(col, (pa.Array, pa.ChunkedArray)):
            continue
        try:
            pa.array(col)
        except Exception:  # noqa: BLE001
            return f"column {shown(name)} cannot be made an Arrow array"
    return "the columns do not make one table"


def _check_type(col: Any, name: str, ok: Any, what: str) -> None:
    """QueryError unless the column's Arrow type passes ``ok`` (or is all null)."""
    if not (ok(col.type) or pa.types.is_null(col.type)):
        raise QueryError(f"column {name!r} must be {what}, got {arrow_type(col.type)}")


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _times(col: Any, name: str) -> np.ndarray:
    """A candidate time column as int64 µs (no copy for int64 µs or ``timestamp[us]``
    without nulls). Any time column :mod:`chrono_engine._time` reads is accepted; values are
    query-side instants (any int64), so no per-row range pass slows this hot path."""
    with errors_as(QueryError):
        us, _ = column_us(name, col, stored=False)
    return us


def _valid_to(col: Any) -> np.ndarray:
    """The ``valid_to`` column as int64 µs, a null the open end (as at ingest)."""
    t = col.type
    if col.null_count and (t == pa.int64() or (pa.types.is_timestamp(t) and t.unit == "us")):
        # the fast path: Arrow writes the open end (int64 max) into the nulls, and the
        # column is then read without a copy; in any other unit that value would not fit µs
        return _times(col.combine_chunks().fill_null(pa.scalar(OPEN_END, pa.int64()).cast(t)), "valid_to")
    with errors_as(QueryError):
        us, nulls = column_us("valid_to", col, nullable=True, stored=False)
    return us if nulls is None else np.where(nulls, OPEN_END, us)


def score(candidates: Any, *, as_of: Any, policy: ScoringPolicy | None = None,
          threads: int | None = 1, window: Any = None, query: str | None = None, where: Any = None) -> Any:
    """Rescore candidates from any retriever; returns the table with ``validity`` and
    ``score`` columns added (input order kept).

    ``candidates``: a pyarrow Table or RecordBatch, a dict of columns (arrays, lists,
    pandas or polars Series), or a pandas or polars DataFrame — then the answer is a
    DataFrame of the same library (polars: zero-copy from the Arrow answer; pandas:
    ``Table.to_pandas``), otherwise an Arrow table.

    Columns read: ``similarity`` (required), ``observed_at`` (or ``valid_from``),
    optional ``reliability`` (q), ``fact_type`` (selects the decay profile), ``valid_from``
    and ``valid_to`` (rows not valid at T are penalised), ``deprecated``.

    The two new float32 columns are buffers of Arrow's default memory pool (counted by
    ``pa.total_allocated_bytes()``), filled in place by one pass of the compiled kernel on
    ``threads`` threads (1 to 1024; None: every core) with the GIL released; large ones are advised to use transparent
    huge pages, as NumPy does for its own arrays.

    ``window`` / ``query`` are for :meth:`ScoringPolicy.article_reference` only (the
    listing's historical window, or the question its own parser reads; ``as_of`` is then
    its clock); that preset reads ``similarity``, ``valid_from``, ``valid_to`` and
    ``deprecated`` (see :func:`chrono_engine.article.score_table`).

    ``where``: a metadata filter in the engine's dict form (``{"tenant": "acme"}``,
    docs/search.md "Filters") over the candidates' columns, each read as a metadata column
    of its Arrow type's kind (strings, integers, floats, bools, timestamps, lists of
    strings; a column all null takes the kind the filter compares it with), with the
    engine's semantics. A row it does not pass is excluded as a row below τ is: kept in
    place, its ``validity`` computed, its ``score`` −inf.
    """
    w = _filters.parse(where)  # its shape checked before any work
    t = _table(candidates)
    out = _score_table(t, as_of, policy, threads, window, query)
    if w is not None:
        passing = _filters.rows_passing(w, t, "the candidates")
        if not passing.all():
            i = out.column_names.index("score")
            sc = out.column("score")
            out = out.set_column(i, "score", pc.if_else(pa.array(passing), sc, pa.scalar(-np.inf, sc.type)))
    return as_frame(out, frame_kind(candidates))


def _score_table(t: pa.Table, as_of: Any, policy: ScoringPolicy | None, threads: Any, window: Any,
                 query: str | None) -> pa.Table:
    policy = ScoringPolicy() if policy is None else policy
    if not isinstance(policy, ScoringPolicy):
        raise QueryError(f"policy must be a ScoringPolicy, got {type(policy).__name__}")
    threads = thread_count(threads, "threads", QueryError)
    if policy.preset == "article":
        from .article import score_table
        return score_table(t, as_of_us=instant(as_of, "as_of"), policy=policy, window=window, query=query)
    if window is not None or query is not None:
        raise QueryError("window= and query= are read only by ScoringPolicy.article_reference()")
    names = set(t.column_names)
    if "similarity" not in names:
        raise QueryError("candidates need a 'similarity' column")
    sim_col = t.column("similarity")
    if not _is_number(sim_col.type):
        raise QueryError(f"column 'similarity' must be numeric, got {arrow_type(sim_col.type)}")
    for name, ok, what in (("reliability", _is_number, "numeric"), ("fact_type", _is_text, "strings"),
                           ("deprecated", pa.types.is_boolean, "booleans")):
        if name in names:
            _check_type(t.column(name), name, ok, what)
    sim = np.ascontiguousarray(sim_col.to_numpy(zero_copy_only=False), dtype=np.float32)
    obs_name = "observed_at" if "observed_at" in names else "valid_from" if "valid_from" in names else None
    if obs_name is None:
        raise QueryError("candidates need an 'observed_at' (or 'valid_from') column")
    observed = _times(t.column(obs_name), obs_name)
    rel = None
    if "reliability" in names and not pa.types.is_null(t.column("reliability").type):  # null = 1.0, as at ingest
        rc = _one_array(t.column("reliability"))
        rel = np.ascontiguousarray((pc.fill_null(rc, 1.0) if rc.null_count else rc).to_numpy(zero_copy_only=False),
                                   dtype=np.float32)
    # (reliability outside (0, 1] is caught by the kernel, in its one pass: see below)
    if "fact_type" in names and not pa.types.is_null(t.column("fact_type").type):  # null = "general"
        fc = _one_array(t.column("fact_type"))
        ft_arr = fc if pa.types.is_dictionary(fc.type) and not fc.null_count \
            else pc.dictionary_encode(pc.fill_null(fc, "general"))
        types = ft_arr.dictionary.to_pylist() or ["general"]  # no rows (or none typed): a one-entry table
        codes = np.ascontiguousarray(ft_arr.indices.to_numpy(zero_copy_only=False), dtype=np.int32)
        specs = policy.policy.kernel_table(types)
    else:
        codes = None
        specs = policy.policy.kernel_table(["general"])
    vf = vt = None
    if "valid_from" in names and "valid_to" in names:
        vf = _times(t.column("valid_from"), "valid_from")
        vt = _valid_to(t.column("valid_to"))
    dep = None
    if "deprecated" in names and not pa.types.is_null(t.column("deprecated").type):  # null = False, as at ingest
        dep = np.ascontiguousarray(pc.fill_null(t.column("deprecated"), False).to_numpy(zero_copy_only=False), dtype=np.uint8)
    # The outputs are buffers of Arrow's default memory pool, as an Arrow compute kernel's
    # would be: counted by pa.total_allocated_bytes(), and a pool that keeps freed pages
    # (mimalloc, jemalloc) hands the next call memory that needs no fresh page faults.
    n = len(sim)
    buf_s, buf_v = pa.allocate_buffer(4 * n), pa.allocate_buffer(4 * n)
    try:
        _core.score(sim, observed, rel, codes, vf, vt, dep, specs, instant(as_of, "as_of"),
                    FUSIONS[policy.fusion], float(policy.alpha), float(policy.penalty),
                    OUT_OF_FORCE[policy.deprecated], float(policy.tau), threads,
                    np.frombuffer(buf_s, np.float32), np.frombuffer(buf_v, np.float32),
                    future_policy=OUT_OF_FORCE[policy.future])
    except ValueError as e:
        m = re.match(r"reliability must be in \(0, 1\] at row (\d+)", str(e))
        if m:
            raise QueryError(f"column 'reliability', row {m.group(1)}: must be in (0, 1]") from None
        raise
    v = pa.Array.from_buffers(pa.float32(), n, [None, buf_v])
    s = pa.Array.from_buffers(pa.float32(), n, [None, buf_s])
    return t.append_column("validity", v).append_column("score", s)
