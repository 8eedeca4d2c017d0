"""The Engine: versioned, timestamped evidence beside its vectors, searched by fused
similarity × validity with exact (certified) or graph (approximate) plans.

>>> import numpy as np, chrono_engine as ce
>>> eng = ce.Engine(dim=4, decay=ce.DecayPolicy(default=ce.Exponential(half_life=365)))
>>> ids = eng.ingest({"vector": np.eye(4, dtype=np.float32),
...                   "valid_from": ["2024-01-01", "2024-06-01", "2025-01-01", "2025-06-01"]})
>>> hits = eng.search(np.array([1, 0, 0, 0], np.float32), k=1, mode="as_of", as_of="2024-03-01")
>>> hits.column("id").to_pylist()
[0]
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from . import _core
from .decay import DecayPolicy, parse_decay
from .errors import (CorruptStoreError, NotFoundError, QueryError, SchemaError,
                     StorageError)
from .schema import MAX_TIME_US, MIN_TIME_US, format_version, normalize_rows, parse_version

__all__ = ["Engine", "QueryResult"]

OPEN_END = np.iinfo(np.int64).max
_MODES = {"latest": 0, "as_of": 1, "window": 2, "all": 3}
_FUSIONS = {"product": 0, "linear": 1}
_INVALID = {"penalize": 0, "exclude": 1, "include": 2}
_FORMAT = "chrono_engine.store"
_FORMAT_VERSION = 1
# String columns kept by row (fact_type and stem_id names are not: the core holds their codes)
_STRING_COLUMNS = ("content", "title", "source", "modality", "version", "supersedes")
# engine.query fills mode / as_of / window from the query's intent; these pass through
_QUERY_OPTIONS = ("known_at", "fusion", "alpha", "tau", "deprecated", "deprecation_penalty", "arbitrate",
                  "fact_types", "exact", "explain")


@dataclass(frozen=True)
class QueryResult:
    """What :meth:`Engine.query` returns: the ``hits`` table (as :meth:`Engine.search`
    returns it, citations in ``lang``) and the :class:`~chrono_engine.TemporalIntent` the
    search ran with; ``as_of`` / ``window`` are the instants actually used (UTC datetimes;
    ``as_of`` is T, the decay anchor, in every mode; ``window`` only in window mode) and
    ``lang`` the citation language.
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


def _now_us() -> int:
    return time.time_ns() // 1000


def to_us(value: Any, name: str) -> int:
    """One instant as int64 µs since the epoch (UTC). Naive datetimes and strings are UTC."""
    if value is None:
        raise QueryError(f"{name}: a time is required")
    if isinstance(value, (bool, np.bool_)):
        raise QueryError(f"{name}: expected a time, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, _dt.date):
        return to_us(_dt.datetime(value.year, value.month, value.day), name)
    if isinstance(value, str):
        try:
            return to_us(_dt.datetime.fromisoformat(value.replace("Z", "+00:00")), name)
        except ValueError:
            raise QueryError(f"{name}: cannot read {value!r} as an ISO-8601 time") from None
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            raise QueryError(f"{name}: NaT is not a time")
        return int(value.astype("datetime64[us]").astype(np.int64))
    if hasattr(value, "to_pydatetime"):  # pandas.Timestamp
        return to_us(value.to_pydatetime(), name)
    raise QueryError(f"{name}: expected a datetime, date, ISO string, datetime64 or int µs, got {type(value).__name__}")


def _us_array(value: Any, n: int, name: str, default: int | None) -> np.ndarray:
    """A scalar or per-query array of instants -> int64 µs array of length n."""
    if value is None:
        if default is None:
            raise QueryError(f"{name} is required for this mode")
        return np.full(n, default, dtype=np.int64)
    if isinstance(value, (np.ndarray, list, tuple, pa.Array, pa.ChunkedArray)) and not isinstance(value, str):
        arr = value.to_numpy(zero_copy_only=False) if isinstance(value, (pa.Array, pa.ChunkedArray)) else value
        arr = np.asarray(arr)
        if len(arr) != n:
            raise QueryError(f"{name}: expected {n} times (one per query), got {len(arr)}")
        if arr.dtype.kind == "M":
            if np.isnat(arr).any():
                raise QueryError(f"{name}: NaT at query {int(np.flatnonzero(np.isnat(arr))[0])}")
            return arr.astype("datetime64[us]").astype(np.int64)
        if arr.dtype.kind in "iu":
            return arr.astype(np.int64)
        return np.array([to_us(v, f"{name}[{i}]") for i, v in enumerate(arr)], dtype=np.int64)
    return np.full(n, to_us(value, name), dtype=np.int64)


def _unit_float(value: Any, name: str) -> float:
    """A real number in [0, 1] (bools refused), or QueryError naming the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise QueryError(f"{name} must be a number in [0, 1], got {value!r}")
    v = float(value)
    if not (0.0 <= v <= 1.0):
        raise QueryError(f"{name} must be in [0, 1], got {value!r}")
    return v


def _choice(value: str, options: dict, name: str) -> int:
    if value not in options:
        raise QueryError(f"{name} must be one of {sorted(options)}, got {value!r}")
    return options[value]


_SCAN_ORDERS = {"auto": 0, "bounds": 1, "similarity": 2}


class Engine:
    """A temporal-validity store and search engine.

    Parameters
    ----------
    dim : vector dimension.
    metric : "cosine" (vectors normalised at ingest and query), "ip" or "l2". Similarity is
        the inner product for cosine/ip and 1 / (1 + distance) for l2.
    decay : a :class:`~chrono_engine.DecayPolicy` (per fact type), a single decay family,
        or None (no decay).
    M, ef_construction : HNSW graph parameters (hnswlib).
    threads : worker threads for ingest and batch search (default: all cores).
    ef, ef_max : first and widest HNSW walk of the graph plan.
    scan_limit : the certified plan scores at most this many candidates (after metadata
        pruning) per query; beyond it, and unless ``exact=True``, the query walks the
        graph instead (approximate).
    seed_ef, seed_min : width of the short HNSW walk that seeds the certified plan's
        threshold, taken when more than ``seed_min`` items are in force (seed_ef=0: never).
        The seed lets the metadata pass prune candidates below ``scan_limit``; below that
        the scan's best-first order raises the threshold faster than a walk does.
    group : queries of a batch that share vector loads (sorted by T, at most 64).
    scan : the order of the certified scan (answers are the same; only speed differs).
        "similarity": rows in storage order, each row's compact int8 copy dotted with every
        query of the group first; its validity, penalty and full vector are read only for
        the queries whose similarity cap still reaches their k-th score. "bounds": every
        row's metadata bound per query first, then rows best bound first (l2 always uses
        it). "auto" (default): similarity for cosine / ip when a stage of the scan has at
        least 8,192 rows and they are to be scanned anyway (``exact=True`` or at most
        ``scan_limit`` of them), else bounds.
    seed : HNSW level generator seed (ingest in one thread is then deterministic).

    Times are UTC: naive datetimes and strings without an offset are read as UTC.
    """

    def __init__(self, dim: int | None = None, metric: str = "cosine", decay: Any = None, *, M: int = 16,
                 ef_construction: int = 200, threads: int | None = None, ef: int = 64,
                 ef_max: int = 4096, scan_limit: int = 150_000, seed_ef: int = 32,
                 seed_min: int = 150_000, group: int = 64, seed: int = 100,
                 scan: str = "auto", embedder: Any = None) -> None:
        if embedder is not None and hasattr(embedder, "embed"):
            if dim is None:
                dim = embedder.dim
            elif dim != embedder.dim:
                raise QueryError(f"dim={dim} but the embedder produces {embedder.dim}-dimensional vectors")
        elif dim is None:
            raise QueryError("dim is required (or pass embedder= a TemporalEmbedder, whose width is used)")
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim <= 0:
            raise QueryError(f"dim must be a positive integer, got {dim!r}")
        if metric not in ("cosine", "ip", "l2"):
            raise QueryError(f"metric must be 'cosine', 'ip' or 'l2', got {metric!r}")
        for name, v in (("M", M), ("ef_construction", ef_construction), ("ef", ef), ("ef_max", ef_max)):
            if not isinstance(v, (int, np.integer)) or v <= 0:
                raise QueryError(f"{name} must be a positive integer, got {v!r}")
        self._dim = int(dim)
        self._metric = metric
        self._policy: DecayPolicy = parse_decay(decay)
        self._params = dict(M=int(M), ef_construction=int(ef_construction), seed=int(seed))
        self.threads = int(threads) if threads else (os.cpu_count() or 1)
        self.ef, self.ef_max, self.scan_limit = int(ef), int(ef_max), int(scan_limit)
        self.seed_ef, self.seed_min, self.group = int(seed_ef), int(seed_min), int(group)
        _choice(scan, _SCAN_ORDERS, "scan")
        self.scan = scan
        self._core = _core.Store(self._dim, metric, int(M), int(ef_construction), int(seed))
        self._fact_types: list[str] = []
        self._fact_code: dict[str, int] = {}
        # stem names by code (the core's stem column holds the codes): one character
        # buffer and a hash table in the core, not a Python list and dict
        self._stems = _core.Names()
        # String columns by row: an immutable table replaced (never mutated) by writers, so
        # a reader holding a reference always sees every row the core had when it read.
        self._table: pa.Table | None = None
        self._write = threading.Lock()  # one writer at a time; readers never block on it
        #: Text embedder :meth:`query` uses when no ``embed=`` is given: a callable
        #: ``str -> vector`` of length ``dim``, or a time-aware
        #: :class:`~chrono_engine.TemporalEmbedder` (then :meth:`ingest` also embeds rows
        #: that have ``content`` and no ``vector``, at their ``observed_at`` / ``valid_from``,
        #: and :meth:`query` embeds the question at its query time). None: query needs ``embed=``.
        self.embedder: Any = embedder

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    @property
    def metric(self) -> str:
        """Similarity metric: "cosine", "ip" or "l2"."""
        return self._metric

    @property
    def decay(self) -> DecayPolicy:
        """The decay policy (per fact type)."""
        return self._policy

    def __len__(self) -> int:
        return int(self._core.size)

    def __repr__(self) -> str:
        return f"Engine(dim={self._dim}, metric={self._metric!r}, items={len(self)})"

    # ------------------------------------------------------------------ ingest
    def ingest(self, rows: Any) -> np.ndarray:
        """Add evidence items; returns their ids (uint64).

        ``rows`` is a pyarrow Table/RecordBatch, a pandas DataFrame, a dict of arrays or a
        list of dicts with the columns of DESIGN.md (``vector`` and ``valid_from``
        required). A rejected batch raises :class:`~chrono_engine.errors.SchemaError`
        naming the column, row and rule, and changes nothing.
        """
        rows = self._with_vectors(rows)  # embedding runs before the write lock
        with self._write:
            batch = normalize_rows(rows, dim=self._dim, metric=self._metric,
                                   known_fact_type=self._policy.knows, now_us=_now_us())
            return self._append(batch)

    def _with_vectors(self, rows: Any) -> Any:
        """Rows with ``content`` and no ``vector`` embedded by a time-aware embedder."""
        emb = self.embedder
        if emb is None or not hasattr(emb, "embed"):
            return rows
        from .schema import _canon, _raw_columns, _times
        raw = _raw_columns(rows)
        if "vector" in raw or "content" not in raw:
            return rows  # normal validation names what is missing
        n = len(raw["content"])
        if n == 0 or "valid_from" not in raw:
            return rows
        content = _canon("content", raw["content"])
        texts = content.to_pylist() if isinstance(content, pa.Array) else list(content)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise SchemaError(f"column 'content', row {i}: no text to embed and no 'vector' (embedding)",
                                  column="content", row=i, rule="embedding")
        t_us, _ = _times("valid_from", _canon("valid_from", raw["valid_from"]), nullable=False)
        if "observed_at" in raw:
            obs, nulls = _times("observed_at", _canon("observed_at", raw["observed_at"]), nullable=True)
            t_us = obs if nulls is None else np.where(nulls, t_us, obs)
        modality = None
        if emb.temporal.modalities:
            if "modality" not in raw:
                raise SchemaError(f"column 'modality' is required: the embedder encodes modalities "
                                  f"{emb.temporal.modalities} (embedding)", column="modality", rule="embedding")
            mc = _canon("modality", raw["modality"])
            modality = mc.to_pylist() if isinstance(mc, pa.Array) else list(mc)
        from .errors import EmbeddingError
        try:
            vectors = emb.embed(texts, t_us, modality)
        except EmbeddingError as e:
            raise SchemaError(f"embedding the 'content' column failed: {e} (embedding)",
                              column="content", rule="embedding") from None
        out = dict(raw)
        out["vector"] = vectors
        return out

    def _append(self, batch) -> np.ndarray:
        n = batch.n
        # codes for fact types and stems (dictionary-encoded by the schema, remapped here
        # without a per-row loop); remembered only once the core accepted the batch
        new_types = [t for t in batch.fact_type_names if t not in self._fact_code]
        types = self._fact_types + new_types
        code_of = {t: i for i, t in enumerate(types)}
        remap = np.array([code_of[t] for t in batch.fact_type_names], dtype=np.uint16)
        ft = remap[batch.fact_type_codes] if n else np.zeros(0, np.uint16)
        if new_types:
            self._core.set_decay(self._policy.kernel_table(types))
        # New stem names get the next codes and the strings are published before the core
        # has the rows (readers may see them early, harmless, never late); a failure undoes both.
        old_table, n_stems = self._table, len(self._stems)
        try:
            smap = np.append(self._stems.add_all(batch.stem_names), np.int32(-1))
            stem = smap[batch.stem_codes]  # code -1 (no stem) picks the trailing -1
            kept = batch.table.select(list(_STRING_COLUMNS))
            new_table = kept if old_table is None else pa.concat_tables([old_table, kept])
            if new_table.column(0).num_chunks > 64:
                new_table = new_table.combine_chunks()
            self._table = new_table
            first = self._core.ingest(
                batch.vector, batch.valid_from, batch.valid_to, batch.observed_at, batch.ingested_at,
                batch.retracted_at, batch.version_key, batch.reliability, stem, ft,
                batch.deprecated.astype(np.uint8), batch.ids, self.threads)
        except BaseException as e:
            self._table = old_table
            self._stems.truncate(n_stems)
            if not isinstance(e, ValueError):
                raise
            msg = str(e)
            if msg.startswith("duplicate id"):
                row = int(msg.rsplit(" ", 1)[1])
                raise SchemaError(f"column 'id', row {row}: {msg.split(' at row')[0]} is already in the store "
                                  "(duplicate id)", column="id", row=row, rule="duplicate id") from None
            raise SchemaError(msg) from None
        self._fact_types = types
        self._fact_code = code_of
        # ids given, or assigned by the core (largest id so far + 1 onwards)
        return self._core.columns_at(np.arange(first, first + n, dtype=np.uint32))["id"]

    def _strings(self) -> pa.Table | None:
        return self._table

    def _stem_names(self, codes: np.ndarray) -> pa.Array:
        """The stem ids of stem codes (-1: null) as an Arrow string array."""
        codes = np.ascontiguousarray(codes, dtype=np.int32)
        offsets, data = self._stems.take(codes)
        valid = codes >= 0
        bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.StringArray.from_buffers(len(codes), pa.py_buffer(offsets), pa.py_buffer(data), bitmap)

    # ------------------------------------------------------------------ search
    def search(self, vector: Any, k: int = 10, *, mode: str = "latest", as_of: Any = None,
               known_at: Any = None, window: Any = None, fusion: str = "product", alpha: float = 0.75,
               tau: float = 0.0, deprecated: str = "penalize", deprecation_penalty: float = 0.1,
               arbitrate: bool = True, fact_types: Sequence[str] | None = None, exact: bool = False,
               explain: bool = False, lang: str = "en", verify: float | None = None) -> pa.Table:
        """Top-k items by fused score for one query vector; see :meth:`search_batch`."""
        v = np.asarray(vector, dtype=np.float32)
        if v.ndim != 1:
            raise QueryError(f"vector must be 1-D of length {self._dim}, got shape {v.shape}")
        t = self.search_batch(v[None, :], k, mode=mode, as_of=as_of, known_at=known_at, window=window,
                              fusion=fusion, alpha=alpha, tau=tau, deprecated=deprecated,
                              deprecation_penalty=deprecation_penalty, arbitrate=arbitrate,
                              fact_types=fact_types, exact=exact, explain=explain, lang=lang, threads=1,
                              verify=verify)
        return t.drop_columns(["query"])

    def search_batch(self, vectors: Any, k: int = 10, *, mode: str = "latest", as_of: Any = None,
                     known_at: Any = None, window: Any = None, fusion: str = "product",
                     alpha: float = 0.75, tau: float = 0.0, deprecated: str = "penalize",
                     deprecation_penalty: float = 0.1, arbitrate: bool = True,
                     fact_types: Sequence[str] | None = None, exact: bool = False,
                     explain: bool = False, lang: str = "en", threads: int | None = None,
                     verify: float | None = None) -> pa.Table:
        """Top-k per query by fused score (similarity × validity), as one Arrow table.

        Modes (DESIGN.md): ``latest`` (T = ``as_of`` or now; items not in force — expired,
        not yet valid or deprecated — are penalised ×``deprecation_penalty``, excluded or
        included as ``deprecated`` says; per stem the highest non-deprecated version in
        force wins); ``as_of`` (hard filter valid_from ≤ T < valid_to; per stem the version
        in force at T); ``window`` (valid interval overlaps ``window=(start, end)``; decay
        measured from T = ``as_of`` or the window's end); ``all`` (no validity filter).
        Every mode sees the store as known at ``known_at`` (default now): ingested_at ≤
        known_at < retracted_at. ``as_of``/``known_at`` take one time or one per query.

        ``fusion``: "product" (s⁺·V, the paper) or "linear" (α·s + (1−α)·V, the article);
        ``tau`` (τ): items with V < τ never qualify; ``arbitrate=False`` returns every
        version; ``exact=True`` forces the certified scan plan.

        Returns columns query, rank (1-based), id, score, similarity, validity, stem_id,
        version, valid_from, valid_to, title, citation, certified (and decay, penalty,
        plan, reason with ``explain=True``), ordered by query, rank. Ties are broken by id.

        ``verify=γ`` gates the retrieved context (layer 3): each query's hits form one
        chain, one step per hit, and the result gains ``robustness`` (ρ = min over the
        query's hits of V − γ; 0 for a query without hits), ``satisfied`` (ρ ≥ 0) and
        ``refetch`` (this hit's V < γ: re-acquire it before trusting the answer).
        The GIL is released; queries run on ``threads`` workers.
        """
        q = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        if q.ndim != 2 or q.shape[1] != self._dim:
            raise QueryError(f"vectors must have shape (n, {self._dim}), got {q.shape}")
        if not np.isfinite(q).all():
            raise QueryError(f"query {int(np.flatnonzero(~np.isfinite(q).all(axis=1))[0])} has a non-finite value")
        if self._metric == "cosine":
            norms = np.linalg.norm(q, axis=1, keepdims=True)
            if (norms == 0).any():
                raise QueryError(f"query {int(np.flatnonzero(norms[:, 0] == 0)[0])} is a zero vector (cosine)")
            q = np.ascontiguousarray(q / norms, dtype=np.float32)
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k <= 0:
            raise QueryError(f"k must be a positive integer, got {k!r}")
        nq = q.shape[0]
        m = _choice(mode, _MODES, "mode")
        f = _choice(fusion, _FUSIONS, "fusion")
        inv = _choice(deprecated, _INVALID, "deprecated")
        alpha = _unit_float(alpha, "alpha")
        tau = _unit_float(tau, "tau")
        deprecation_penalty = _unit_float(deprecation_penalty, "deprecation_penalty")
        if lang not in ("en", "zh"):
            raise QueryError(f"lang must be 'en' or 'zh', got {lang!r}")
        now = _now_us()
        ws = we = np.zeros(nq, np.int64)
        if mode == "as_of":
            t = _us_array(as_of, nq, "as_of", None)
        elif mode == "window":
            if window is None or len(window) != 2:
                raise QueryError("window mode needs window=(start, end)")
            ws = _us_array(window[0], nq, "window start", None)
            we = _us_array(window[1], nq, "window end", None)
            if (ws >= we).any():
                raise QueryError(f"window start must be before its end (query {int(np.flatnonzero(ws >= we)[0])})")
            t = _us_array(as_of, nq, "as_of", None) if as_of is not None else we.copy()
        else:
            t = _us_array(as_of, nq, "as_of", now)
        ka = _us_array(known_at, nq, "known_at", now)
        mask = None
        if fact_types is not None:
            if isinstance(fact_types, str):
                fact_types = [fact_types]
            mask = np.zeros(max(len(self._fact_types), 1), np.uint8)
            for name in fact_types:
                if name in self._fact_code:
                    mask[self._fact_code[name]] = 1
                elif not self._policy.knows(name):
                    raise QueryError(f"fact_types: unknown fact type {name!r}")
        threads = self.threads if threads is None else int(threads)
        out = self._core.search_batch(q, t, ka, ws, we, m, f, float(alpha), float(tau), inv,
                                      float(deprecation_penalty), bool(arbitrate), mask, int(k),
                                      bool(exact), max(self.ef, 4 * int(k)), self.ef_max,
                                      self.scan_limit, self.seed_ef, self.seed_min, self.group,
                                      _choice(self.scan, _SCAN_ORDERS, "scan"), max(threads, 1))
        table = self._result_table(out, explain, lang, t, m)
        if verify is not None:
            table = _gate(table, verify, nq)
        return table

    def _result_table(self, out: dict, explain: bool, lang: str, t: np.ndarray, mode: int) -> pa.Table:
        rows = out["row"].astype(np.int64)
        strings = self._strings()  # read after the search: holds every row the core returned
        cols = self._core_columns_at(rows)
        if strings is not None and len(rows):
            s = strings.take(pa.array(rows))
        else:
            s = pa.table({c: pa.array([], pa.string()) for c in _STRING_COLUMNS})
        vf = cols["valid_from"]
        vt = cols["valid_to"]
        vf_ts = pa.array(vf, pa.timestamp("us", tz="UTC"))
        vt_ts = pa.array(np.where(vt == OPEN_END, 0, vt), pa.timestamp("us", tz="UTC"),
                         mask=vt == OPEN_END)
        version = s.column("version")
        title = s.column("title")
        citation = _citations(title, version, vf, lang)
        cert = out["certified"][out["query"]]
        data = {
            "query": pa.array(out["query"], pa.int32()),
            "rank": pa.array(out["rank"], pa.int32()),
            "id": pa.array(out["id"], pa.uint64()),
            "score": pa.array(out["score"], pa.float64()),
            "similarity": pa.array(out["similarity"], pa.float32()),
            "validity": pa.array(out["validity"], pa.float32()),
            "stem_id": self._stem_names(cols["stem"]),
            "version": version,
            "valid_from": vf_ts,
            "valid_to": vt_ts,
            "title": title,
            "content": s.column("content"),
            "citation": citation,
            "certified": pa.array(cert, pa.bool_()),
        }
        if explain:
            data["decay"] = pa.array(out["decay"], pa.float32())
            data["penalty"] = pa.array(out["penalty"], pa.float32())
            data["plan"] = pa.array(np.where(out["plan"][out["query"]] == 0, "scan", "graph").astype(object), pa.string())
            data["reason"] = pa.array(self._reasons(out, cols, t, mode), pa.string())
        return pa.table(data)

    def _core_columns_at(self, rows: np.ndarray) -> dict:
        return self._core.columns_at(rows.astype(np.uint32))

    def _reasons(self, out: dict, cols: dict, t: np.ndarray, mode: int) -> list[str]:
        reasons = []
        for i in range(len(out["row"])):
            tq = t[out["query"][i]]
            parts = []
            if out["penalty"][i] < 1.0:
                parts.append(f"penalised ×{out['penalty'][i]:.3g}: " +
                             ("deprecated" if cols["deprecated"][i] else "not valid at T"))
            elif mode in (0, 1):
                parts.append("in force at T" if cols["valid_from"][i] <= tq < cols["valid_to"][i] else "not in force at T")
            if cols["stem"][i] >= 0:
                parts.append("arbitration winner of its stem" if mode != 1 else "the version in force at T for its stem")
            reasons.append("; ".join(parts) if parts else "eligible")
        return reasons

    # ------------------------------------------------------------------ lifecycle
    def supersede(self, stem_id: str, rows: Any, effective_at: Any, *, version: str | None = None,
                  supersedes: str | None = None, deprecate: bool | None = None) -> np.ndarray:
        """Add a new version of a document lineage; closes and deprecates its predecessor.

        ``rows`` (any form :meth:`ingest` takes) are the new version's rows; ``stem_id``,
        ``valid_from`` (= ``effective_at``), ``version`` and ``supersedes`` (= the
        predecessor's version) are filled in when absent. Every version of the stem still
        valid at ``effective_at`` gets ``valid_to = effective_at`` and ``deprecated``
        (``deprecate=None``: only when ``effective_at`` is not in the future). Rejects an
        unknown stem, a version not greater than every existing one, an ``effective_at`` not
        after the predecessor's start, a ``supersedes`` edge that would make a cycle, and
        malformed rows — raising :class:`~chrono_engine.errors.LifecycleError` (or
        NotFoundError / SchemaError) with nothing changed. Returns the new ids. Rules and
        atomicity: :mod:`chrono_engine.lifecycle`.

        >>> eng = Engine(dim=2)
        >>> _ = eng.ingest([{"vector": [1, 0], "valid_from": "2023-01-01", "stem_id": "T",
        ...                  "version": "v1.0.0"}])
        >>> eng.supersede("T", [{"vector": [1, 0]}], "2026-03-01", version="v2.0.0").tolist()
        [1]
        """
        from . import lifecycle
        return lifecycle.supersede(self, stem_id, rows, effective_at, version=version,
                                   supersedes=supersedes, deprecate=deprecate)

    def retract(self, ids: Any, at: Any = None) -> np.ndarray:
        """Stop believing items from transaction time ``at`` (default now): sets
        ``retracted_at``; nothing is deleted and searches with an earlier ``known_at`` still
        see them. Unknown ids raise NotFoundError; ids already retracted, given twice, or
        ``at`` not after ``ingested_at`` raise LifecycleError (nothing changed). Returns the ids.
        """
        from . import lifecycle
        return lifecycle.retract(self, ids, at)

    def history(self, stem_id: str) -> pa.Table:
        """Every version (row) of a document lineage with both time axes, ordered by version:
        id, stem_id, version, supersedes, valid_from, valid_to, ingested_at, retracted_at
        (open ends null), deprecated, title, content."""
        from . import lifecycle
        return lifecycle.history(self, stem_id)

    # ------------------------------------------------------------------ natural-language query
    def query(self, text: str, k: int = 5, *, now: Any = None, tz: Any = None,
              embed: Callable[[str], Any] | None = None, lang: str | None = None,
              **options: Any) -> QueryResult:
        """Answer a natural-language question: parse its time intent, embed, search, cite.

        1. :func:`~chrono_engine.parse_temporal_intent` (``now``, ``tz`` as for
           :func:`~chrono_engine.parse_time`; ``now`` None = the wall clock) gives the mode;
        2. the cleaned query (time words removed; the whole text if nothing is left) is
           embedded with ``embed`` or else :attr:`embedder` (neither: QueryError);
        3. the search runs in the intent's mode: ``latest`` at T = now; ``as_of`` at the
           intent's anchor; ``window`` over the intent's window (an open start is the
           beginning of time, an open end stays open) with decay anchored at
           T = min(window end, now);
        4. citations are in ``lang`` ("en" / "zh"; None: "zh" when the text has CJK
           ideographs) with the effective date's day in ``tz``.

        ``options`` pass through to :meth:`search` (known_at, fusion, alpha, tau,
        deprecated, deprecation_penalty, arbitrate, fact_types, exact, explain); ``mode``,
        ``as_of`` and ``window`` come from the intent and are refused. Returns a
        :class:`QueryResult` (hits table + the intent used).
        """
        from .timelang import parse_temporal_intent
        from .timelang.parser import context

        if not isinstance(text, str) or not text.strip():
            raise QueryError(f"text must be a non-empty string, got {text!r}")
        for name in options:
            if name in ("mode", "as_of", "window"):
                raise QueryError(f"query: {name} comes from the text's time intent; use search() to set it")
            if name not in _QUERY_OPTIONS:
                raise QueryError(f"query: unknown option {name!r} (known: {', '.join(_QUERY_OPTIONS)})")
        if lang is None:
            lang = "zh" if _has_cjk(text) else "en"
        elif lang not in ("en", "zh"):
            raise QueryError(f"lang must be 'en', 'zh' or None, got {lang!r}")
        fn = embed if embed is not None else self.embedder
        if fn is None:
            raise QueryError("query needs an embedder: pass embed= (a callable str -> vector) "
                             "or set engine.embedder")
        if not callable(fn) and not hasattr(fn, "embed_query"):
            raise QueryError(f"embed must be callable (str -> vector), got {type(fn).__name__}")
        ctx = context(now, tz)
        intent = parse_temporal_intent(text, now=ctx.now, tz=ctx.tz)
        now_us = to_us(ctx.now, "now")
        window = None
        if intent.mode == "as_of":
            t = to_us(intent.anchor, "anchor")
            kw = {"mode": "as_of", "as_of": t}
        elif intent.mode == "window":
            start, end = intent.window
            ws = to_us(start, "window start") if start is not None else MIN_TIME_US
            we = to_us(end, "window end") if end is not None else OPEN_END
            t = min(we, now_us)
            window = (ws, we)
            kw = {"mode": "window", "window": window, "as_of": t}
        else:
            t = now_us
            kw = {"mode": "latest", "as_of": t}
        question = intent.cleaned_query or text
        try:
            if hasattr(fn, "embed_query"):  # time-aware: the question is embedded at T
                vec = np.asarray(fn.embed_query(question, at=np.array([t], np.int64)), dtype=np.float32)
            else:
                vec = np.asarray(fn(question), dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise QueryError(f"embed returned something that is not a vector: {e}") from None
        if vec.shape != (self._dim,):
            raise QueryError(f"embed returned shape {vec.shape}, expected ({self._dim},)")
        hits = self.search(vec, k, lang=lang, **kw, **options)
        if ctx.tz is not _dt.timezone.utc and hits.num_rows:
            vf = hits.column("valid_from").cast(pa.int64()).to_numpy()
            cites = _citations(hits.column("title"), hits.column("version"), vf, lang, ctx.tz)
            hits = hits.set_column(hits.column_names.index("citation"), "citation", cites)
        return QueryResult(hits=hits, intent=intent, lang=lang, as_of=_from_us(t),
                           window=None if window is None else (_from_us(window[0]), _from_us(window[1])))

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Save to a directory, atomically.

        Layout: ``<path>/CURRENT`` names the live snapshot directory ``<path>/snap-<uuid>/``
        holding ``graph.bin`` (hnswlib), ``meta.arrow`` (Arrow IPC: every column) and
        ``manifest.json`` (format version, parameters, decay policy, SHA-256 of each
        file). The snapshot is written and fsynced first, then CURRENT is replaced with
        os.replace, so a crash at any point leaves the previous snapshot loadable.
        """
        root = Path(path)
        snap = root / f"snap-{uuid.uuid4().hex}"
        tmp = root / f"CURRENT.{uuid.uuid4().hex}.tmp"
        try:
            root.mkdir(parents=True, exist_ok=True)
            snap.mkdir()
        except OSError as e:
            raise StorageError(f"could not save to {root}: {e}") from e
        try:
            with self._write:
                cols = self._core.columns()
                strings = self._strings()
                self._core.save_graph(str(snap / "graph.bin"))
            table = pa.table({
                "id": cols["id"], "valid_from": cols["valid_from"], "valid_to": cols["valid_to"],
                "observed_at": cols["observed_at"], "ingested_at": cols["ingested_at"],
                "retracted_at": cols["retracted_at"], "version_key": cols["version"],
                "reliability": cols["reliability"], "fact_type_code": cols["fact_type"],
                "stem_code": cols["stem"], "deprecated": cols["deprecated"].astype(bool),
            })
            if strings is not None:
                strings = strings.slice(0, len(table))
                for name in strings.column_names:
                    table = table.append_column(name, strings.column(name))
                # the names behind the codes, so that meta.arrow reads on its own
                types = np.asarray(self._fact_types, dtype=object)
                table = table.append_column("fact_type", pa.array(types[cols["fact_type"]], pa.string()))
                table = table.append_column("stem_id", self._stem_names(cols["stem"]))
            with pa.OSFile(str(snap / "meta.arrow"), "wb") as sink:
                with ipc.new_file(sink, table.schema) as w:
                    w.write_table(table)
            manifest = {
                "format": _FORMAT, "format_version": _FORMAT_VERSION, "chrono_engine": "0.1.0",
                "dim": self._dim, "metric": self._metric, "params": self._params,
                "search": {"ef": self.ef, "ef_max": self.ef_max, "scan_limit": self.scan_limit,
                           "seed_ef": self.seed_ef, "seed_min": self.seed_min, "group": self.group,
                           "scan": self.scan},
                "decay": self._policy.to_dict(), "fact_types": self._fact_types, "stems": self._stems.tolist(),
                "rows": int(len(table)),
                "files": {name: _sha256(snap / name) for name in ("graph.bin", "meta.arrow")},
            }
            (snap / "manifest.json").write_text(json.dumps(manifest, indent=1))
            for name in ("graph.bin", "meta.arrow", "manifest.json"):
                _fsync(snap / name)
            _fsync_dir(snap)
            tmp.write_text(snap.name)
            _fsync(tmp)
        except BaseException as e:
            shutil.rmtree(snap, ignore_errors=True)
            tmp.unlink(missing_ok=True)
            if isinstance(e, OSError):
                raise StorageError(f"could not save to {root}: {e}") from e
            raise
        try:
            os.replace(tmp, root / "CURRENT")  # the commit point
        except OSError as e:
            shutil.rmtree(snap, ignore_errors=True)
            tmp.unlink(missing_ok=True)
            raise StorageError(f"could not save to {root}: {e}") from e
        try:
            _fsync_dir(root)
        except OSError as e:  # committed, but not known to be durable: say so, keep both copies
            raise StorageError(f"saved to {root}, but syncing the directory failed ({e}); "
                               "the store opens, durability is not guaranteed") from e
        # only now drop older snapshots
        for old in root.glob("snap-*"):
            if old.name != snap.name:
                shutil.rmtree(old, ignore_errors=True)
        for stale in root.glob("CURRENT.*.tmp"):
            stale.unlink(missing_ok=True)

    @classmethod
    def open(cls, path: str | os.PathLike, *, threads: int | None = None) -> "Engine":
        """Open a store written by :meth:`save` (metadata memory-mapped, checksums verified)."""
        root = Path(path)
        if not root.is_dir():
            raise StorageError(f"{root} is not a chrono_engine store (not a directory)")
        try:
            name = (root / "CURRENT").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise StorageError(f"{root} is not a chrono_engine store (missing CURRENT)") from None
        except (UnicodeDecodeError, OSError) as e:
            raise CorruptStoreError(f"{root}: CURRENT is unreadable ({e})") from None
        if not re.fullmatch(r"snap-[0-9a-f]{32}", name):
            raise CorruptStoreError(f"{root}: CURRENT names {name[:80]!r}, not a snapshot of this store")
        snap = root / name
        try:
            manifest = json.loads((snap / "manifest.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CorruptStoreError(f"{root}: snapshot {name} has no manifest.json") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise CorruptStoreError(f"{root}: {name}/manifest.json is unreadable ({e})") from None
        if not isinstance(manifest, dict):
            raise CorruptStoreError(f"{root}: {name}/manifest.json is not a JSON object")
        if manifest.get("format") != _FORMAT or manifest.get("format_version") != _FORMAT_VERSION:
            raise CorruptStoreError(f"{root}: unknown format {manifest.get('format')!r} "
                                    f"version {manifest.get('format_version')!r}")
        try:
            files = dict(manifest["files"])
            p = dict(manifest["params"])
            rows = int(manifest["rows"])
            dim, metric = int(manifest["dim"]), manifest["metric"]
            fact_types, stems = list(manifest["fact_types"]), list(manifest["stems"])
            policy = DecayPolicy.from_dict(manifest["decay"])
            search = dict(manifest.get("search", {}))
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptStoreError(f"{root}: manifest.json lacks or mangles a field ({e!r})") from None
        for fname, digest in files.items():
            f = snap / fname
            if not f.exists():
                raise CorruptStoreError(f"{root}: {fname} is missing")
            if _sha256(f) != digest:
                raise CorruptStoreError(f"{root}: {fname} is corrupt (checksum mismatch)")
        if set(files) != {"graph.bin", "meta.arrow"}:
            raise CorruptStoreError(f"{root}: manifest lists {sorted(files)}, expected graph.bin and meta.arrow")
        try:
            eng = cls(dim, metric, policy, M=p["M"], ef_construction=p["ef_construction"], seed=p["seed"],
                      threads=threads, **search)
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptStoreError(f"{root}: manifest.json holds invalid parameters ({e})") from None
        try:
            table = ipc.open_file(pa.memory_map(str(snap / "meta.arrow"), "r")).read_all()
        except pa.ArrowInvalid as e:
            raise CorruptStoreError(f"{root}: meta.arrow is unreadable ({e})") from None
        if len(table) != rows:
            raise CorruptStoreError(f"{root}: meta.arrow has {len(table)} rows, manifest says {rows}")
        eng._fact_types = fact_types
        eng._fact_code = {t: i for i, t in enumerate(eng._fact_types)}
        try:
            eng._stems.add_all(stems)
        except TypeError as e:
            raise CorruptStoreError(f"{root}: manifest.json lists a stem that is not a string ({e})") from None
        if len(eng._stems) != len(stems):
            raise CorruptStoreError(f"{root}: manifest.json lists a stem id twice")
        if eng._fact_types:
            eng._core.set_decay(eng._policy.kernel_table(eng._fact_types))
        col = lambda name, dt: np.ascontiguousarray(table.column(name).to_numpy(), dtype=dt)  # noqa: E731
        if len(table):
            try:
                eng._core.restore(str(snap / "graph.bin"), col("valid_from", np.int64), col("valid_to", np.int64),
                                  col("observed_at", np.int64), col("ingested_at", np.int64),
                                  col("retracted_at", np.int64), col("version_key", np.uint64),
                                  col("reliability", np.float32), col("stem_code", np.int32),
                                  col("fact_type_code", np.uint16), col("deprecated", np.uint8),
                                  col("id", np.uint64))
            except (RuntimeError, ValueError, KeyError, pa.ArrowException) as e:
                raise CorruptStoreError(f"{root}: the saved graph or metadata is damaged ({e})") from None
            eng._table = table.select(list(_STRING_COLUMNS))
        return eng

    # ------------------------------------------------------------------ introspection
    def memory(self) -> dict:
        """Bytes used by the parts of the store, and bytes per item.

        - ``metadata``: the core's per-item metadata (times, reliability, fact type and
          flags, version codes, stems; ids only when they differ from rows), with the stem
          lists; ``interval_index`` and ``freshness_index``: the two indexes over it.
          ``temporal_per_item`` is the three together per item: what the engine keeps
          beyond the vectors and the graph to answer temporal queries.
        - ``strings``: the Arrow table of string columns (content, title, source,
          modality, version, supersedes) returned with results and saved with the store;
          its size follows the user's text.
        - ``names``: the stem names behind the stem codes (a character buffer and a hash
          table in the core, ~len + 16 bytes per stem) and the fact-type names.
        - ``compact_vectors``: the int8 copy of the vectors (plus a scale and an error
          bound per item) that certified scans read before the full vectors.
        """
        m = dict(self._core.memory())
        strings = self._strings()
        m["strings"] = int(strings.nbytes) if strings is not None else 0
        m["names"] = (self._stems.memory_bytes() + sys.getsizeof(self._fact_types) + sys.getsizeof(self._fact_code)
                      + sum(sys.getsizeof(x) for x in self._fact_types))
        n = max(len(self), 1)
        m["metadata_per_item"] = m["metadata"] / n
        m["interval_index_per_item"] = m["interval_index"] / n
        m["freshness_index_per_item"] = m["freshness_index"] / n
        m["temporal_per_item"] = (m["metadata"] + m["interval_index"] + m["freshness_index"]) / n
        m["strings_per_item"] = m["strings"] / n
        m["names_per_item"] = m["names"] / n
        return m

    def validity(self, at: Any, ids: Any = None) -> np.ndarray:
        """V(e, T) = q_e · D_j(T − t_e) (paper eqs. 2-3) for the items ``ids`` (default:
        every item, in ingest order): reliability times the decay of the item's fact type
        at its age at ``at``, with the engine's decay kernels (the values search uses).

        Raises NotFoundError naming the first unknown id.
        """
        rows = np.arange(len(self), dtype=np.int64) if ids is None else self.rows_of(ids)
        return self._validity_of_rows(at, rows)

    def _validity_of_rows(self, at: Any, rows: np.ndarray) -> np.ndarray:
        """:meth:`validity` for row numbers already looked up."""
        t = to_us(at, "at")
        out = np.empty(rows.shape[0], dtype=np.float64)
        if rows.shape[0] == 0:
            return out
        cols = self._core.columns_at(rows.astype(np.uint32))
        # the core's age: difference taken in double, in days
        age = (float(t) - cols["observed_at"].astype(np.float64)) / 86_400_000_000.0
        table = self._policy.kernel_table(self._fact_types)
        codes = cols["fact_type"]
        for code in np.unique(codes):
            sel = codes == code
            out[sel] = _core.decay_eval(age[sel], table[int(code)])
        out *= cols["reliability"].astype(np.float64)
        return out

    def count_valid_at(self, t: Any) -> int:
        """How many items are valid at T (interval index; microseconds)."""
        return int(self._core.count_valid_at(to_us(t, "t")))

    def rows_of(self, ids: Any) -> np.ndarray:
        """Row numbers of ids; raises NotFoundError naming the first unknown id."""
        ids = np.asarray(ids, dtype=np.uint64).reshape(-1)
        rows = self._core.rows_of(ids)
        if (rows < 0).any():
            raise NotFoundError(f"unknown id {int(ids[np.flatnonzero(rows < 0)[0]])}")
        return rows


def _has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK ideograph (then citations default to Chinese)."""
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\uf900" <= ch <= "\ufaff"
               for ch in text)


def _from_us(us: int) -> _dt.datetime:
    """µs since the epoch -> aware UTC datetime (open ends clamp to year 1 / 9999)."""
    us = min(max(int(us), MIN_TIME_US), MAX_TIME_US)
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=us)


def _gate(table: pa.Table, gamma: float, n_queries: int) -> pa.Table:
    """Layer-3 gate over a result table (see Engine.search_batch, ``verify=``)."""
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


def _citations(titles: Any, versions: Any, valid_from: np.ndarray, lang: str,
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

    title, ver = arrow(titles), arrow(versions)
    n = len(title)
    if n == 0:
        return pa.array([], pa.string())
    enc = pc.dictionary_encode(ver)  # canonical form of each distinct version string once
    canon = pa.array([format_version(parse_version(v)) for v in enc.dictionary.to_pylist()], pa.string())
    ver = canon.take(enc.indices).fill_null("") if len(canon) else pa.nulls(n, pa.string()).fill_null("")
    vf = np.asarray(valid_from, dtype=np.int64)
    if tz is None or tz is _dt.timezone.utc:
        day = pa.array(vf.astype("datetime64[us]").astype("datetime64[D]").astype(str), pa.string())
    else:
        epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        day = pa.array([(epoch + _dt.timedelta(microseconds=int(u))).astimezone(tz).date().isoformat()
                        for u in vf], pa.string())
    join = pc.binary_join_element_wise
    if lang == "zh":
        return join("依据《", title.fill_null("未命名文档"), "》", ver, "（", day, " 起施行）", "")
    sep = pc.if_else(pc.equal(ver, ""), "", " ")
    return join("per ", title.fill_null("untitled"), sep, ver, ", effective ", day, "")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
