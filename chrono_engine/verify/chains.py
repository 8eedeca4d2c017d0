"""Layer 3 of the paper, batched: STL robustness of knowledge validity over reasoning chains.

For a chain π = (s_1, …, s_n) whose steps use facts with validity V(e, T) = q_e · D_j(age)
(paper eq. 3), the validity signal is v(s_i) = min over the step's facts of V, the
specification is φ_valid = G_[0,n](v(s_i) ≥ γ) (eq. 4) and its robustness is
ρ = min_i (v(s_i) − γ) (eq. 5). Theorem 1 bounds the answer's confidence by the weakest
link, C_out ≤ min V over every fact used, and ρ < 0 triggers re-acquisition of the facts
below γ (section III-D4).

>>> import numpy as np
>>> t = verify_chains([[[0, 1], [2]], [[1]]], np.array([0.9, 0.4, 0.7]), gamma=0.5)
>>> t.column("robustness").to_pylist()
[-0.09999999999999998, -0.09999999999999998]
>>> t.column("targets").to_pylist()
[[1], [1]]
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pyarrow as pa

from .._args import array, count, shown
from ..errors import QueryError
from . import chains_kernel as _k
from ._parallel import run
from .csr import ChainBatch, as_chain_batch

__all__ = ["verify_chains", "verify_hits", "REPORT_SCHEMA"]

_INT32_MAX = np.iinfo(np.int32).max

REPORT_SCHEMA = pa.schema([
    pa.field("robustness", pa.float64(), nullable=False),
    pa.field("satisfied", pa.bool_(), nullable=False),
    pa.field("bound", pa.float64(), nullable=False),
    pa.field("weakest_step", pa.int64()),
    pa.field("weakest_fact", pa.int64()),
    pa.field("trigger", pa.bool_(), nullable=False),
    pa.field("targets", pa.list_(pa.int64())),
    pa.field("step_validity", pa.list_(pa.float64())),
])
"""Columns of a verification report (list columns become large lists past 2**31 items)."""


def check_gamma(gamma: Any) -> float:
    """γ as a float, or a :class:`QueryError` unless it is a number in [0, 1]."""
    if isinstance(gamma, (bool, np.bool_)) or not isinstance(gamma, numbers.Real):
        raise QueryError(f"gamma (γ, the validity threshold) must be a number in [0, 1], "
                         f"got {shown(gamma)}")
    try:
        g = float(gamma)
    except OverflowError:  # an int beyond the float range
        g = math.inf
    if not (0.0 <= g <= 1.0):  # also rejects NaN
        raise QueryError(f"gamma (γ, the validity threshold) must be in [0, 1], got {shown(gamma)}")
    return g


def as_validity(validity: Any, name: str = "validity") -> np.ndarray:
    """A 1-D float32/float64 array of V(e, T) per fact (copied only if the dtype needs it)."""
    if isinstance(validity, pa.ChunkedArray):
        validity = validity.combine_chunks()
    if isinstance(validity, pa.Array):
        if validity.null_count:
            pos = int(np.flatnonzero(~np.asarray(validity.is_valid()))[0])
            raise QueryError(f"{name}[{pos}] is null: every fact needs a validity")
        validity = validity.to_numpy(zero_copy_only=False)
    arr = array(validity, name, QueryError)
    if arr.ndim != 1:
        raise QueryError(f"{name} must be a 1-D array of V(e, T) per fact, got shape {arr.shape}")
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise QueryError(f"{name} must hold numbers, got dtype {arr.dtype}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return np.ascontiguousarray(arr)


def _raise_bad_fact(batch: ChainBatch, validity: np.ndarray, status: np.ndarray,
                    status_at: np.ndarray) -> None:
    c = int(np.flatnonzero(status)[0])
    k = int(status_at[c])
    step = int(np.searchsorted(batch.step_offsets, k, side="right")) - 1
    where = f"chain {c}, step {step - int(batch.chain_offsets[c])}"
    fid = int(batch.fact_ids[k])
    if status[c] == _k.BAD_FACT_ID:
        raise QueryError(f"{where}: fact id {fid} is out of range for a validity array of "
                         f"{validity.shape[0]} facts")
    raise QueryError(f"{where}: validity[{fid}] is {validity[fid]}; validity must be a finite "
                     f"number (NaN and infinities are rejected)")


def _kernel_inputs(batch: ChainBatch, validity: np.ndarray) -> tuple[np.ndarray, ...]:
    """One index dtype for the three CSR arrays and float64 validity, so the kernels are
    compiled for two signatures only (all int32, or all int64)."""
    arrays = (batch.chain_offsets, batch.step_offsets, batch.fact_ids)
    if any(a.dtype != np.int32 for a in arrays):
        arrays = tuple(a.astype(np.int64, copy=False) for a in arrays)
    return (*arrays, validity.astype(np.float64, copy=False))


def _long_targets(chains: np.ndarray, step_offsets: np.ndarray, chain_offsets: np.ndarray,
                  fact_ids: np.ndarray, validity: np.ndarray, gamma: float,
                  upper: np.ndarray, targets: np.ndarray, counts: np.ndarray) -> None:
    """Targets of the chains the kernel left (many facts below γ), vectorised: first use of
    each fact, then least valid first, ties in reading order."""
    starts = step_offsets[chain_offsets[chains]].astype(np.int64)
    ends = step_offsets[chain_offsets[chains + 1]].astype(np.int64)
    lens = ends - starts
    owner = np.repeat(np.arange(chains.shape[0]), lens)
    pos = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + \
        np.repeat(starts, lens)
    fid = fact_ids[pos].astype(np.int64)
    v = validity[fid]
    below = v < gamma
    owner, pos, fid, v = owner[below], pos[below], fid[below], v[below]
    order = np.lexsort((pos, fid, owner))
    first = np.ones(order.shape[0], bool)
    first[1:] = (owner[order][1:] != owner[order][:-1]) | (fid[order][1:] != fid[order][:-1])
    kept = order[first]
    kept = kept[np.lexsort((pos[kept], v[kept], owner[kept]))]
    n = np.bincount(owner[kept], minlength=chains.shape[0])
    counts[chains] = n
    dest = np.repeat(upper[chains], n) + np.arange(kept.shape[0]) - np.repeat(np.cumsum(n) - n, n)
    targets[dest] = fid[kept]


# Widest step the specialised kernels are compiled for (one compilation per width).
MAX_UNIFORM_WIDTH = 16


def _uniform_ok(width: int | None, uses: int, validity: np.ndarray) -> bool:
    """Whether the equal-width kernel applies: steps of 1 .. MAX_UNIFORM_WIDTH facts and a
    validity array known to be finite. That check reads the whole array, so it is made only
    when the array is no longer than the batch's fact uses (else the checking kernel runs)."""
    return (width is not None and 1 <= width <= MAX_UNIFORM_WIDTH
            and validity.shape[0] <= uses and bool(np.isfinite(validity).all()))


def verify_arrays(batch: ChainBatch, validity: np.ndarray, gamma: float) -> dict[str, np.ndarray]:
    """The kernel path on validated inputs: the same dictionary as the NumPy reference."""
    n = batch.n_chains
    args = (*_kernel_inputs(batch, validity), gamma)
    chain_off, step_off, fact_ids = args[0], args[1], args[2]
    robustness = np.empty(n)
    bound = np.empty(n)
    weakest_step = np.empty(n, np.int64)
    weakest_fact = np.empty(n, np.int64)
    step_validity = np.empty(batch.n_steps)
    status = np.zeros(n, np.int8)
    status_at = np.empty(n, np.int64)  # read only where status is set
    # room for every fact use (+1: the kernel writes before it counts); only the part
    # that holds uses below γ is ever touched
    scratch = np.empty(fact_ids.shape[0] + 1, fact_ids.dtype)
    tstart = np.empty(n, np.int64)   # set for chains with targets
    counts = np.zeros(n, np.int64)   # zero pages until a chain has targets
    outputs = (robustness, bound, weakest_step, weakest_fact, step_validity, status, status_at,
               scratch, tstart, counts)
    work = fact_ids.shape[0] + batch.n_steps
    width = batch.facts_per_step
    if _uniform_ok(width, fact_ids.shape[0], args[3]):
        run(_k.uniform_range, _k.uniform_pass, n, work, (0,) * width, chain_off, fact_ids,
            *args[3:], *outputs)
    else:
        run(_k.chain_range, _k.chain_pass, n, work, *args, *outputs)
    if status.any():
        _raise_bad_fact(batch, validity, status, status_at)
    offsets = np.empty(n + 1, np.int64)  # long chains (many uses below γ: minus their
    n_long = _k.target_offsets(counts, offsets)  # number) get room for all their uses
    long = np.flatnonzero(counts < 0) if n_long else np.zeros(0, np.int64)
    targets = np.empty(int(offsets[-1]), np.int64)
    run(_k.gather_range, _k.gather_pass, n, int(offsets[-1]) + n, tstart, scratch, counts,
        offsets, targets)
    if long.size:
        long_counts = np.zeros(n, np.int64)
        _long_targets(long, step_off, chain_off, fact_ids, validity, gamma, offsets, targets,
                      long_counts)
        counts[long] = long_counts[long]
        if int(counts.sum()) != targets.shape[0]:  # close the gaps left by duplicates
            new = np.zeros(n + 1, np.int64)
            np.cumsum(counts, out=new[1:])
            src = np.arange(int(new[-1])) + np.repeat(offsets[:-1] - new[:-1], counts)
            targets = targets[src]
            offsets = new
    trigger = robustness < 0.0
    return {
        "robustness": robustness,
        "satisfied": ~trigger,
        "bound": bound,
        "weakest_step": weakest_step,
        "weakest_fact": weakest_fact,
        "trigger": trigger,
        "target_offsets": offsets,
        "targets": targets,
        "step_validity": step_validity,
    }


def _list_column(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    """A list column over ``values`` without copying them (only the offsets may be cast)."""
    if offsets[-1] <= _INT32_MAX:
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32, copy=False)),
                                        pa.array(values))
    return pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64, copy=False)),
                                         pa.array(values))


def _nullable(values: np.ndarray) -> pa.Array:
    """Int column where -1 means "none" (null)."""
    missing = values < 0
    return pa.array(values, mask=missing) if missing.any() else pa.array(values)


def report_table(arrays: dict[str, np.ndarray], chain_offsets: np.ndarray,
                 gamma: float) -> pa.Table:
    """Arrow table (one row per chain) from the kernel's or the reference's arrays."""
    columns = [
        pa.array(arrays["robustness"]),
        pa.array(arrays["satisfied"]),
        pa.array(arrays["bound"]),
        _nullable(arrays["weakest_step"]),
        _nullable(arrays["weakest_fact"]),
        pa.array(arrays["trigger"]),
        _list_column(arrays["target_offsets"], arrays["targets"]),
        _list_column(chain_offsets, arrays["step_validity"]),
    ]
    fields = [pa.field(f.name, c.type, nullable=f.nullable)
              for f, c in zip(REPORT_SCHEMA, columns, strict=True)]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata={"gamma": repr(gamma)}))


def _engine_and_time(validity: Any) -> tuple[Any, Any] | None:
    """``(engine, T)`` when ``validity`` names a store and a time instead of an array."""
    if isinstance(validity, tuple) and len(validity) == 2 and \
            hasattr(validity[0], "validity") and hasattr(validity[0], "contains"):
        return validity
    return None


def _verify_against_engine(batch: ChainBatch, engine: Any, t: Any, gamma: float) -> pa.Table:
    """Fact ids are the engine's ids; V is computed from the store at T for the facts used."""
    ids = batch.fact_ids
    if ids.shape[0] and int(ids.min()) < 0:
        k = int(np.flatnonzero(ids < 0)[0])
        raise QueryError(f"{_location(batch, k)}: fact id {int(ids[k])} is not an engine id")
    uniq, inv = np.unique(ids, return_inverse=True)
    known = engine.contains(uniq)
    if not known.all():
        missing = uniq[np.flatnonzero(~known)[0]]
        k = int(np.flatnonzero(ids == missing)[0])
        raise QueryError(f"{_location(batch, k)}: fact id {int(missing)} is not in the engine")
    v = engine.validity(t, uniq)
    local = ChainBatch(batch.chain_offsets, batch.step_offsets, inv.astype(np.int64).reshape(-1))
    arrays = verify_arrays(local, v, gamma)
    wf = arrays["weakest_fact"]
    # chains without facts have no weakest one (-1 everywhere; nothing to index)
    arrays["weakest_fact"] = (np.where(wf >= 0, uniq[np.maximum(wf, 0)], -1) if len(uniq)
                              else np.full(wf.shape, -1)).astype(np.int64)
    arrays["targets"] = uniq[arrays["targets"]].astype(np.int64)
    return report_table(arrays, batch.chain_offsets, gamma)


def _location(batch: ChainBatch, k: int) -> str:
    """'chain c, step s' of the fact use at position k of the CSR fact ids."""
    step = int(np.searchsorted(batch.step_offsets, k, side="right")) - 1
    chain = int(np.searchsorted(batch.chain_offsets, step, side="right")) - 1
    return f"chain {chain}, step {step - int(batch.chain_offsets[chain])}"


def is_chain_list(chains: Any) -> bool:
    """Whether decoded JSON chains are lists of steps, each a list of integer fact ids (the
    shape :func:`verify_chains` takes from ``chrono verify`` and the HTTP service)."""
    return isinstance(chains, list) and all(
        isinstance(chain, list) and all(
            isinstance(step, list) and all(isinstance(f, int) and not isinstance(f, bool) for f in step)
            for step in chain)
        for chain in chains)


def verify_chains(chains: Any, validity: Any, gamma: float) -> pa.Table:
    """Verify many reasoning chains at once against φ_valid = G(v(s_i) ≥ γ).

    Args:
        chains: a :class:`ChainBatch`, a ``(chain_offsets, step_offsets, fact_ids)`` tuple of
            integer arrays (CSR, used without copying when int32/int64), a dense integer
            array ``(chains, steps, facts)`` when every chain has as many steps and every
            step as many facts (its ids used without a copy when int32/int64), an Arrow
            ``list<list<integer>>`` array (no copy), or Python lists
            ``[[[fact_id, ...], ...], ...]`` (ragged or not). The array forms are the fast
            ones (millions of short chains per second); lists cost a Python conversion of
            every fact id (about 0.1 µs each: 10-30x the kernels' time for chains of 4 × 3
            facts), so keep chains that are already arrays as arrays.
        validity: V(e, T) = q_e · D_j(age) per fact (1-D, float32 or float64), indexed by
            the fact ids. Every fact a chain uses must have a finite validity. Or a tuple
            ``(engine, T)``: the fact ids are then the engine's item ids and V is computed
            from the store at T (:meth:`Engine.validity`); ``weakest_fact`` and ``targets``
            name engine ids.
        gamma: γ, the minimum acceptable validity, in [0, 1].

    Returns:
        A table with one row per chain:

        - ``robustness`` ρ = min_i (v(s_i) − γ) (eq. 5), with v(s_i) the least validity
          among the step's facts;
        - ``satisfied`` ρ ≥ 0, and ``trigger`` ρ < 0 (re-acquire, section III-D4);
        - ``bound`` the weakest-link bound C_out ≤ min V over every fact used (Theorem 1);
        - ``weakest_step`` (0-based, first on ties) and ``weakest_fact`` (the fact id with
          the least V, first in reading order on ties);
        - ``targets`` every fact below γ, once, least valid first (empty unless triggered);
        - ``step_validity`` the signal v(s_i) for each step.

        Conventions (those of chronofy 0.1.9's ``STLVerifier``): a step that uses no facts
        has v = 1.0; a chain with no steps has ρ = 0.0 (satisfied), bound 1.0 and null
        weakest step and fact; a chain whose steps use no facts has bound 1.0 and a null
        weakest fact. The schema metadata records γ.

    Raises:
        QueryError: γ outside [0, 1], malformed CSR offsets, a fact id outside the validity
            array, or a non-finite validity for a fact that a chain uses (the message names
            the chain and step).

    >>> import numpy as np
    >>> t = verify_chains([[[0], [1, 2]]], np.array([0.8, 0.9, 0.3]), gamma=0.5)
    >>> t.column("weakest_step").to_pylist(), t.column("bound").to_pylist()
    ([1], [0.3])
    """
    g = check_gamma(gamma)
    batch = as_chain_batch(chains)
    store = _engine_and_time(validity)
    if store is not None:
        return _verify_against_engine(batch, store[0], store[1], g)
    v = as_validity(validity)
    return report_table(verify_arrays(batch, v, g), batch.chain_offsets, g)


def verify_hits(validity: Any, fact_ids: Any, gamma: float, *, query: Any = None,
                n_queries: int | None = None) -> pa.Table:
    """Gate retrieved context: each query's hits form one chain, one step per hit.

    Building block for ``engine.search(..., verify=γ)``: pass the ``validity`` and ``id``
    columns of a result table (and its ``query`` column for batch results, sorted as result
    tables are). ρ is then min over the hits of (V − γ) and ``targets`` names the hits to
    re-fetch, least valid first.

    Args:
        validity: V(e, T) of each hit (1-D, finite).
        fact_ids: the id of each hit (any integer dtype, e.g. the engine's uint64 ids);
            ``weakest_fact`` and ``targets`` report these ids, each at most once per query.
        gamma: γ in [0, 1].
        query: optional non-decreasing query index (0-based) per hit; without it all hits
            form one chain.
        n_queries: number of queries (default: max(query) + 1), so that a query with no
            hits still gets its row (an empty chain: ρ = 0, satisfied, as in chronofy).

    Returns:
        The :func:`verify_chains` table, with a leading ``query`` column when ``query`` is given.

    >>> import numpy as np
    >>> t = verify_hits(np.array([0.9, 0.2, 0.6]), np.array([7, 8, 9], np.uint64), 0.5)
    >>> t.column("targets").to_pylist()
    [[8]]
    """
    g = check_gamma(gamma)
    v = as_validity(validity, "validity")
    ids = array(fact_ids.combine_chunks() if isinstance(fact_ids, pa.ChunkedArray) else fact_ids,
                "fact_ids", QueryError)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise QueryError(f"fact_ids must be a 1-D integer array, got {ids.dtype} {ids.shape}")
    if not ids.size:
        ids = ids.astype(np.int64)
    if ids.shape[0] != v.shape[0]:
        raise QueryError(f"validity has {v.shape[0]} hits but fact_ids has {ids.shape[0]}")
    finite = np.isfinite(v)
    if not finite.all():
        k = int(np.flatnonzero(~finite)[0])
        raise QueryError(f"validity of hit {k} (fact id {ids[k]}) is {v[k]}; validity must be "
                         f"a finite number")
    n = v.shape[0]
    if query is None:
        if n_queries is not None:
            raise QueryError("n_queries needs query")
        hit_chain = np.zeros(n, np.int64)
        chain_offsets = np.array([0, n], np.int64)
    else:
        q = array(query.combine_chunks() if isinstance(query, pa.ChunkedArray) else query, "query", QueryError)
        if q.shape != (n,) or (n and q.dtype.kind not in "iu"):
            raise QueryError(f"query must be a 1-D integer array with one entry per hit "
                             f"({n}), got {q.dtype} {q.shape}")
        q = q.astype(np.int64)
        if n and (q[0] < 0 or np.any(q[1:] < q[:-1])):
            raise QueryError("query must be non-negative and non-decreasing (hits grouped by "
                             "query, as result tables are ordered)")
        nq = int(q[-1]) + 1 if n else 0
        if n_queries is not None:  # (the largest query index + 1) at least; one chain each
            nq = count(n_queries, "n_queries", lo=nq, hi=_INT32_MAX, error=QueryError)
        hit_chain = q
        chain_offsets = np.searchsorted(q, np.arange(nq + 1)).astype(np.int64)

    # One code per (query, id): a fact retrieved twice for a query is one fact there.
    order = np.lexsort((ids, hit_chain))
    new = np.ones(n, bool)
    new[1:] = (hit_chain[order][1:] != hit_chain[order][:-1]) | (ids[order][1:] != ids[order][:-1])
    codes = np.empty(n, np.int64)
    codes[order] = np.cumsum(new) - 1
    code_ids = ids[order][new]
    code_v = np.full(code_ids.shape[0], np.inf)
    np.minimum.at(code_v, codes, v.astype(np.float64))

    batch = ChainBatch(chain_offsets, np.arange(n + 1, dtype=np.int64), codes)
    arrays = verify_arrays(batch, code_v, g)
    table = report_table(arrays, batch.chain_offsets, g)
    wf = arrays["weakest_fact"]
    weakest = (pa.array(code_ids[np.maximum(wf, 0)], mask=wf < 0) if code_ids.size
               else pa.nulls(len(wf), pa.from_numpy_dtype(ids.dtype)))
    targets = _list_column(arrays["target_offsets"], code_ids[arrays["targets"]])
    table = table.set_column(table.schema.get_field_index("weakest_fact"), "weakest_fact", weakest)
    table = table.set_column(table.schema.get_field_index("targets"), "targets", targets)
    if query is not None:
        table = table.add_column(0, "query", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    return table
