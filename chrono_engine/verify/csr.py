"""Batches of reasoning chains in CSR form, the one layout the chain kernels read.

A chain is a list of steps and a step a list of fact ids. A batch of chains is three flat
integer arrays (the same layout as an Arrow ``list<list<int>>`` column):

- ``chain_offsets`` (n_chains + 1): chain ``c`` owns steps ``chain_offsets[c]:chain_offsets[c+1]``;
- ``step_offsets`` (n_steps + 1): step ``s`` owns ``fact_ids[step_offsets[s]:step_offsets[s+1]]``;
- ``fact_ids``: positions into the per-fact validity array.

>>> b = ChainBatch.from_lists([[[0, 1], [2]], []])
>>> b.chain_offsets.tolist(), b.step_offsets.tolist(), b.fact_ids.tolist()
([0, 2, 2], [0, 2, 3], [0, 1, 2])
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numba as nb
import numpy as np
import pyarrow as pa

from .._args import array, holds_bools, shown
from ..errors import QueryError

__all__ = ["ChainBatch", "as_chain_batch"]

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


@nb.njit(cache=True, nogil=True)
def _scan_offsets(offsets):  # pragma: no cover - compiled
    """(first i with offsets[i+1] < offsets[i] or -1, the common width offsets[i+1] -
    offsets[i] of every group or -1 when they differ or there is none)."""
    n = offsets.shape[0] - 1
    width = offsets[1] - offsets[0] if n > 0 else -1
    for i in range(n):
        d = offsets[i + 1] - offsets[i]
        if d < 0:
            return i, -1
        if d != width:
            width = -1
    return -1, width


def _index_array(values: Any, name: str) -> np.ndarray:
    """A 1-D int32/int64 array view of ``values`` (copied only when the dtype needs it)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        if values.null_count:
            raise QueryError(f"{name} has a null at position {_first_null(values)}")
        values = values.to_numpy(zero_copy_only=False)
    arr = array(values, name, QueryError)
    if arr.ndim != 1:
        raise QueryError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind == "b" or (arr.dtype.kind not in "iu" and arr.size):
        raise QueryError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype not in _INDEX_DTYPES:
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise QueryError(f"{name} holds a value above the int64 range")
        arr = arr.astype(np.int64)
    return np.ascontiguousarray(arr)


def _first_null(arr: pa.Array) -> int:
    return int(np.flatnonzero(~np.asarray(arr.is_valid()))[0])


def _check_offsets(offsets: np.ndarray, name: str, length: int, what: str) -> int:
    """Validate CSR offsets; return the common group width (-1 when groups differ)."""
    if offsets.shape[0] == 0:
        raise QueryError(f"{name} is empty: CSR offsets need at least one entry (a 0)")
    if offsets[0] != 0:
        raise QueryError(f"{name}[0] is {int(offsets[0])}: CSR offsets must start at 0")
    bad, width = _scan_offsets(offsets)
    if bad >= 0:
        raise QueryError(
            f"{name}[{bad + 1}] = {int(offsets[bad + 1])} is below {name}[{bad}] = "
            f"{int(offsets[bad])}: CSR offsets must be non-decreasing")
    if offsets[-1] != length:
        raise QueryError(
            f"{name}[-1] is {int(offsets[-1])} but there are {length} {what}: "
            f"the last offset must equal the number of {what}")
    return int(width)


@dataclass(frozen=True, eq=False)
class ChainBatch:
    """Many reasoning chains as CSR arrays (validated on construction).

    Build one with :meth:`from_lists` (ragged Python lists), :meth:`from_arrow` (a
    ``list<list<int>>`` array) or directly from the three arrays, which are used without a
    copy when they are int32 or int64 and contiguous.
    """

    chain_offsets: np.ndarray
    step_offsets: np.ndarray
    fact_ids: np.ndarray

    def __post_init__(self) -> None:
        chain_offsets = _index_array(self.chain_offsets, "chain_offsets")
        step_offsets = _index_array(self.step_offsets, "step_offsets")
        fact_ids = _index_array(self.fact_ids, "fact_ids")
        width = _check_offsets(step_offsets, "step_offsets", fact_ids.shape[0], "fact ids")
        _check_offsets(chain_offsets, "chain_offsets", step_offsets.shape[0] - 1, "steps")
        object.__setattr__(self, "_facts_per_step", width)
        object.__setattr__(self, "chain_offsets", chain_offsets)
        object.__setattr__(self, "step_offsets", step_offsets)
        object.__setattr__(self, "fact_ids", fact_ids)

    @property
    def n_chains(self) -> int:
        """Number of chains."""
        return self.chain_offsets.shape[0] - 1

    @property
    def facts_per_step(self) -> int | None:
        """The number of facts every step uses, or None when steps differ (or there are
        none). Batches of equal-width steps run a kernel specialised for that width."""
        return None if self._facts_per_step < 0 else self._facts_per_step

    @property
    def n_steps(self) -> int:
        """Number of steps over all chains."""
        return self.step_offsets.shape[0] - 1

    def __len__(self) -> int:
        return self.n_chains

    def __repr__(self) -> str:
        return (f"ChainBatch(n_chains={self.n_chains}, n_steps={self.n_steps}, "
                f"n_fact_uses={self.fact_ids.shape[0]})")

    @classmethod
    def from_offsets(cls, chain_offsets: Any, step_offsets: Any, fact_ids: Any) -> "ChainBatch":
        """The batch held by three CSR arrays (see the module docstring)."""
        return cls(chain_offsets, step_offsets, fact_ids)

    @classmethod
    def from_lists(cls, chains: Iterable[Sequence[Sequence[int]]]) -> "ChainBatch":
        """Convert Python lists, ragged or not: ``[[[fact, ...], ...step], ...chain]``. Every
        fact id is a Python object to convert (about 0.1 µs each, more than the kernels
        take): chains that are already arrays are faster as :meth:`from_dense`, CSR arrays
        or :meth:`from_arrow`. (Converting rectangular lists with one ``np.array`` call was
        measured: within ±25% of this path, faster for wide steps and slower for narrow
        ones, on NumPy 2.4; not worth a second path.)"""
        try:
            chains = chains if isinstance(chains, list) else list(chains)
        except TypeError:  # a NumPy 0-d array has __iter__ and cannot be iterated
            raise QueryError(f"chains must be a list of chains, got {type(chains).__name__} {shown(chains)}") from None
        chain_lens, c = _lengths(chains)
        if c >= 0:
            raise QueryError(f"chain {c} is {shown(chains[c])}: a chain must be a list of steps")
        steps = list(itertools.chain.from_iterable(chains))
        step_lens, s = _lengths(steps)
        if s >= 0:
            c, k = _locate(np.cumsum(chain_lens), s)
            raise QueryError(f"chain {c}, step {k} is {shown(steps[s])}: a step must be a list of fact ids")
        flat = list(itertools.chain.from_iterable(steps))
        try:
            ids = np.array(flat) if flat else np.zeros(0, np.int64)
        except Exception:  # noqa: BLE001 - ragged or nested values (or objects that raise): named below
            ids = None
        if ids is None or ids.ndim != 1 or ids.dtype.kind not in "iu" or holds_bools(flat):  # [1, True]: [1, 1]
            bad = next((i for i, f in enumerate(flat) if isinstance(f, (bool, np.bool_))
                        or not isinstance(f, (int, np.integer)) or not -2**63 <= f < 2**63), 0)
            s, _ = _locate(np.cumsum(step_lens), bad)
            c, k = _locate(np.cumsum(chain_lens), s)
            raise QueryError(f"chain {c}, step {k} holds {shown(flat[bad])}: fact ids must be integers "
                             "(int64)")
        chain_offsets = np.zeros(len(chain_lens) + 1, np.int64)
        np.cumsum(chain_lens, out=chain_offsets[1:])
        step_offsets = np.zeros(len(step_lens) + 1, np.int64)
        np.cumsum(step_lens, out=step_offsets[1:])
        return cls(chain_offsets, step_offsets, ids)

    @classmethod
    def from_dense(cls, chains: np.ndarray) -> "ChainBatch":
        """Chains of equal shape, an integer array (n_chains, steps, facts): no copy of the
        fact ids (they are the array, flattened)."""
        arr = array(chains, "chains", QueryError)
        if arr.ndim != 3:
            raise QueryError(f"a dense chain array must be (chains, steps, facts), got shape "
                             f"{arr.shape}")
        n, steps, facts = arr.shape
        dtype = np.int32 if arr.dtype == np.int32 and arr.size < 2**31 else np.int64
        return cls(np.arange(n + 1, dtype=dtype) * dtype(steps),
                   np.arange(n * steps + 1, dtype=dtype) * dtype(facts), arr.reshape(-1))

    @classmethod
    def from_arrow(cls, chains: pa.Array | pa.ChunkedArray) -> "ChainBatch":
        """Use a ``list<list<integer>>`` Arrow array without copying its values."""
        if isinstance(chains, pa.ChunkedArray):
            chains = chains.combine_chunks()
        t = chains.type
        if not (_is_list(t) and _is_list(t.value_type)
                and pa.types.is_integer(t.value_type.value_type)):
            raise QueryError(f"an Arrow chain column must be list<list<integer>>, got {t}")
        if chains.null_count:
            raise QueryError(f"chain {_first_null(chains)} is null")
        steps = chains.flatten()
        if steps.null_count:
            s = _first_null(steps)
            raise QueryError(f"step {s} (counting over all chains) is null")
        ids = steps.flatten()
        return cls(_rebased(chains.offsets), _rebased(steps.offsets), ids)

    def to_lists(self) -> list[list[list[int]]]:
        """The batch as ragged Python lists (for inspection and tests)."""
        co, so, ids = self.chain_offsets, self.step_offsets, self.fact_ids.tolist()
        return [[ids[so[s]:so[s + 1]] for s in range(co[c], co[c + 1])]
                for c in range(self.n_chains)]


def _lengths(items: list) -> tuple[list[int], int]:
    """``len`` of each item, and -1; or ``[]`` and the position of the first item without
    a length (a NumPy 0-d array has ``__len__`` and no length)."""
    try:
        return [len(x) for x in items], -1
    except TypeError:
        pass
    lens = []
    for i, x in enumerate(items):
        try:
            lens.append(len(x))
        except TypeError:
            return [], i
    return lens, -1


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _rebased(offsets: pa.Array) -> np.ndarray:
    """Offsets of a (possibly sliced) list array, shifted to start at 0."""
    arr = offsets.to_numpy()
    return arr - arr[0] if arr.shape[0] and arr[0] != 0 else arr


def _locate(ends: np.ndarray, position: int) -> tuple[int, int]:
    """(group, index within group) of a flat position, given cumulative group ends."""
    group = int(np.searchsorted(ends, position, side="right"))
    start = int(ends[group - 1]) if group else 0
    return group, position - start


def as_chain_batch(chains: Any) -> ChainBatch:
    """Accept a ChainBatch, a ``(chain_offsets, step_offsets, fact_ids)`` tuple of arrays,
    an Arrow ``list<list<int>>`` array, a dense (chains, steps, facts) integer array, or
    ragged Python lists."""
    if isinstance(chains, ChainBatch):
        return chains
    if isinstance(chains, (pa.Array, pa.ChunkedArray)):
        return ChainBatch.from_arrow(chains)
    if isinstance(chains, np.ndarray) and chains.ndim == 3:
        return ChainBatch.from_dense(chains)
    if (isinstance(chains, tuple) and len(chains) == 3
            and all(isinstance(a, (np.ndarray, pa.Array, pa.ChunkedArray)) for a in chains)):
        return ChainBatch(*chains)
    if isinstance(chains, (str, bytes)) or not hasattr(chains, "__iter__"):
        raise QueryError(f"chains must be a ChainBatch, a CSR tuple, an Arrow list<list<int>> "
                         f"array or a list of chains, got {type(chains).__name__}")
    return ChainBatch.from_lists(chains)
