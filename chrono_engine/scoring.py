"""Rescoring for users who keep their own vector store: ``ce.score`` fuses a retriever's
similarities with validity, vectorised in C++ (Arrow in, Arrow out).

>>> import pyarrow as pa, chrono_engine as ce
>>> cands = pa.table({"similarity": [0.9, 0.8],
...                   "observed_at": pa.array([0, 0], pa.timestamp("us", tz="UTC"))})
>>> pol = ce.ScoringPolicy(decay=ce.Exponential(half_life=1))
>>> ce.score(cands, as_of="1970-01-02", policy=pol).column("score").to_pylist()
[0.45, 0.4]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from .decay import DecayPolicy, parse_decay
from .errors import QueryError

__all__ = ["ScoringPolicy", "score"]

_FUSIONS = {"product": 0, "linear": 1}
_INVALID = {"penalize": 0, "exclude": 1, "include": 2}


@dataclass(frozen=True)
class ScoringPolicy:
    """How similarity s and validity V = q·D_j(age) fuse into one score.

    ``fusion``: "product" (s⁺·V, the paper) or "linear" (α·s + (1−α)·V, the article);
    ``alpha`` (α): weight of similarity in the linear fusion; ``tau`` (τ): items with
    V < τ get score −inf; ``deprecated``: what happens to rows not valid at T or flagged
    deprecated ("penalize": × ``penalty``, "exclude": −inf, "include": nothing).
    """

    decay: Any = None
    fusion: str = "product"
    alpha: float = 0.75
    tau: float = 0.0
    deprecated: str = "penalize"
    penalty: float = 0.1
    policy: DecayPolicy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.fusion not in _FUSIONS:
            raise QueryError(f"fusion must be one of {sorted(_FUSIONS)}, got {self.fusion!r}")
        if self.deprecated not in _INVALID:
            raise QueryError(f"deprecated must be one of {sorted(_INVALID)}, got {self.deprecated!r}")
        for name in ("alpha", "tau", "penalty"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not (0.0 <= float(v) <= 1.0):
                raise QueryError(f"{name} must be a number in [0, 1], got {v!r}")
        object.__setattr__(self, "policy", parse_decay(self.decay))


def _times(col: Any, name: str) -> np.ndarray:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_timestamp(arr.type):
        if arr.null_count:
            raise QueryError(f"column {name!r}: null at row {int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])}")
        return pc.cast(arr, pa.timestamp("us", tz=arr.type.tz)).cast(pa.int64()).to_numpy()
    if pa.types.is_integer(arr.type):
        return arr.to_numpy().astype(np.int64)
    raise QueryError(f"column {name!r} must be a timestamp or int64 µs, got {arr.type}")


def score(candidates: Any, *, as_of: Any, policy: ScoringPolicy | None = None,
          threads: int = 1) -> pa.Table:
    """Rescore candidates from any retriever; returns the table with ``validity`` and
    ``score`` columns added (input order kept).

    Columns read: ``similarity`` (required), ``observed_at`` (or ``valid_from``),
    optional ``reliability`` (q), ``fact_type`` (selects the decay profile), ``valid_from``
    and ``valid_to`` (rows not valid at T are penalised), ``deprecated``.
    """
    from .engine import to_us  # one time parser for the package

    policy = policy or ScoringPolicy()
    t = pa.table(candidates) if isinstance(candidates, dict) else candidates
    if isinstance(t, pa.RecordBatch):
        t = pa.Table.from_batches([t])
    if not isinstance(t, pa.Table):
        raise QueryError(f"candidates must be a pyarrow Table, RecordBatch or dict, got {type(candidates).__name__}")
    names = set(t.column_names)
    if "similarity" not in names:
        raise QueryError("candidates need a 'similarity' column")
    sim = np.ascontiguousarray(t.column("similarity").to_numpy(), dtype=np.float32)
    obs_name = "observed_at" if "observed_at" in names else "valid_from" if "valid_from" in names else None
    if obs_name is None:
        raise QueryError("candidates need an 'observed_at' (or 'valid_from') column")
    observed = _times(t.column(obs_name), obs_name)
    rel = np.ascontiguousarray(t.column("reliability").to_numpy(), dtype=np.float32) if "reliability" in names else None
    if rel is not None and not ((rel > 0) & (rel <= 1)).all():
        raise QueryError(f"column 'reliability', row {int(np.flatnonzero(~((rel > 0) & (rel <= 1)))[0])}: must be in (0, 1]")
    if "fact_type" in names:
        ft_arr = pc.dictionary_encode(t.column("fact_type").combine_chunks())
        types = ft_arr.dictionary.to_pylist()
        codes = np.ascontiguousarray(ft_arr.indices.to_numpy(zero_copy_only=False), dtype=np.int32)
        specs = policy.policy.kernel_table(types)
    else:
        codes = None
        specs = policy.policy.kernel_table(["general"])
    vf = vt = None
    if "valid_from" in names and "valid_to" in names:
        vf = _times(t.column("valid_from"), "valid_from")
        vto = t.column("valid_to").combine_chunks()
        vt = _times(vto.fill_null(pa.scalar(np.iinfo(np.int64).max, pa.int64()).cast(vto.type)) if vto.null_count else vto, "valid_to")
    dep = np.ascontiguousarray(t.column("deprecated").to_numpy(zero_copy_only=False), dtype=np.uint8) if "deprecated" in names else None
    s, v = _core.score(sim, observed, rel, codes, vf, vt, dep, specs, to_us(as_of, "as_of"),
                       _FUSIONS[policy.fusion], float(policy.alpha), float(policy.penalty),
                       _INVALID[policy.deprecated], float(policy.tau), int(threads))
    return t.append_column("validity", pa.array(v)).append_column("score", pa.array(s))
