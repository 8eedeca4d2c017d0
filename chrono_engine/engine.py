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
import shutil
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from . import _core
from .decay import DecayPolicy, parse_decay
from .errors import (CorruptStoreError, NotFoundError, QueryError, SchemaError,
                     StorageError)
from .schema import format_version, normalize_rows

__all__ = ["Engine"]

OPEN_END = np.iinfo(np.int64).max
_MODES = {"latest": 0, "as_of": 1, "window": 2, "all": 3}
_FUSIONS = {"product": 0, "linear": 1}
_INVALID = {"penalize": 0, "exclude": 1, "include": 2}
_FORMAT = "chrono_engine.store"
_FORMAT_VERSION = 1
_STRING_COLUMNS = ("content", "title", "source", "modality", "fact_type", "stem_id", "version", "supersedes")


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


def _choice(value: str, options: dict, name: str) -> int:
    if value not in options:
        raise QueryError(f"{name} must be one of {sorted(options)}, got {value!r}")
    return options[value]


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
    group : queries of a batch that share vector loads (sorted by T, at most 64).
    seed : HNSW level generator seed (ingest in one thread is then deterministic).

    Times are UTC: naive datetimes and strings without an offset are read as UTC.
    """

    def __init__(self, dim: int, metric: str = "cosine", decay: Any = None, *, M: int = 16,
                 ef_construction: int = 200, threads: int | None = None, ef: int = 64,
                 ef_max: int = 4096, scan_limit: int = 50_000, seed_ef: int = 32,
                 seed_min: int = 4096, group: int = 32, seed: int = 100) -> None:
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
        self._core = _core.Store(self._dim, metric, int(M), int(ef_construction), int(seed))
        self._fact_types: list[str] = []
        self._fact_code: dict[str, int] = {}
        self._stems: list[str] = []
        self._stem_code: dict[str, int] = {}
        self._chunks: list[pa.Table] = []
        self._table: pa.Table | None = None
        self._write = threading.Lock()  # one writer at a time; readers never block on it

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
        with self._write:
            batch = normalize_rows(rows, dim=self._dim, metric=self._metric,
                                   known_fact_type=self._policy.knows, now_us=_now_us())
            return self._append(batch)

    def _append(self, batch) -> np.ndarray:
        n = batch.n
        # codes for fact types and stems; remembered only once the core accepted the batch
        new_types = [t for t in dict.fromkeys(batch.fact_type) if t not in self._fact_code]
        types = self._fact_types + new_types
        code_of = {t: i for i, t in enumerate(types)}
        ft = np.fromiter((code_of[t] for t in batch.fact_type), dtype=np.uint16, count=n) \
            if len(types) > 1 or new_types else np.zeros(n, np.uint16)
        stem_names = [s for s in dict.fromkeys(batch.stem_id) if s is not None and s not in self._stem_code]
        stem_code = dict(self._stem_code)
        base = len(self._stems)
        for i, s in enumerate(stem_names):
            stem_code[s] = base + i
        stem = np.fromiter((-1 if s is None else stem_code[s] for s in batch.stem_id), dtype=np.int32, count=n)
        if new_types:
            self._core.set_decay(self._policy.kernel_table(types))
        try:
            first = self._core.ingest(
                batch.vector, batch.valid_from, batch.valid_to, batch.observed_at, batch.ingested_at,
                batch.retracted_at, batch.version_key, batch.reliability, stem, ft,
                batch.deprecated.astype(np.uint8), batch.ids, self.threads)
        except ValueError as e:
            msg = str(e)
            if msg.startswith("duplicate id"):
                row = int(msg.rsplit(" ", 1)[1])
                raise SchemaError(f"column 'id', row {row}: {msg.split(' at row')[0]} is already in the store "
                                  "(rule: duplicate id)", column="id", row=row, rule="duplicate id") from None
            raise SchemaError(msg) from None
        self._fact_types = types
        self._fact_code = code_of
        self._stems.extend(stem_names)
        self._stem_code = stem_code
        self._chunks.append(batch.table)
        self._table = None
        # ids given, or assigned by the core (largest id so far + 1 onwards)
        return self._core.columns_at(np.arange(first, first + n, dtype=np.uint32))["id"]

    def _strings(self) -> pa.Table:
        t = self._table
        if t is None:
            t = pa.concat_tables(self._chunks) if self._chunks else None
            if t is not None and len(self._chunks) > 1:
                t = t.combine_chunks()
                self._chunks = [t]
            self._table = t
        return t

    # ------------------------------------------------------------------ search
    def search(self, vector: Any, k: int = 10, *, mode: str = "latest", as_of: Any = None,
               known_at: Any = None, window: Any = None, fusion: str = "product", alpha: float = 0.75,
               tau: float = 0.0, deprecated: str = "penalize", deprecation_penalty: float = 0.1,
               arbitrate: bool = True, fact_types: Sequence[str] | None = None, exact: bool = False,
               explain: bool = False, lang: str = "en") -> pa.Table:
        """Top-k items by fused score for one query vector; see :meth:`search_batch`."""
        v = np.asarray(vector, dtype=np.float32)
        if v.ndim != 1:
            raise QueryError(f"vector must be 1-D of length {self._dim}, got shape {v.shape}")
        t = self.search_batch(v[None, :], k, mode=mode, as_of=as_of, known_at=known_at, window=window,
                              fusion=fusion, alpha=alpha, tau=tau, deprecated=deprecated,
                              deprecation_penalty=deprecation_penalty, arbitrate=arbitrate,
                              fact_types=fact_types, exact=exact, explain=explain, lang=lang, threads=1)
        return t.drop_columns(["query"])

    def search_batch(self, vectors: Any, k: int = 10, *, mode: str = "latest", as_of: Any = None,
                     known_at: Any = None, window: Any = None, fusion: str = "product",
                     alpha: float = 0.75, tau: float = 0.0, deprecated: str = "penalize",
                     deprecation_penalty: float = 0.1, arbitrate: bool = True,
                     fact_types: Sequence[str] | None = None, exact: bool = False,
                     explain: bool = False, lang: str = "en", threads: int | None = None) -> pa.Table:
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
        if not (0.0 <= float(alpha) <= 1.0):
            raise QueryError(f"alpha must be in [0, 1], got {alpha!r}")
        if not (0.0 <= float(tau) <= 1.0):
            raise QueryError(f"tau must be in [0, 1], got {tau!r}")
        if not (0.0 <= float(deprecation_penalty) <= 1.0):
            raise QueryError(f"deprecation_penalty must be in [0, 1], got {deprecation_penalty!r}")
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
                                      self.scan_limit, 0, self.seed_ef, self.seed_min, self.group,
                                      max(threads, 1))
        return self._result_table(out, explain, lang, t, m)

    def _result_table(self, out: dict, explain: bool, lang: str, t: np.ndarray, mode: int) -> pa.Table:
        rows = out["row"].astype(np.int64)
        strings = self._strings()
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
        citation = _citations(title.to_pylist(), version.to_pylist(), vf, lang)
        cert = out["certified"][out["query"]]
        data = {
            "query": pa.array(out["query"], pa.int32()),
            "rank": pa.array(out["rank"], pa.int32()),
            "id": pa.array(out["id"], pa.uint64()),
            "score": pa.array(out["score"], pa.float64()),
            "similarity": pa.array(out["similarity"], pa.float32()),
            "validity": pa.array(out["validity"], pa.float32()),
            "stem_id": s.column("stem_id"),
            "version": version,
            "valid_from": vf_ts,
            "valid_to": vt_ts,
            "title": title,
            "content": s.column("content"),
            "citation": pa.array(citation, pa.string()),
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
        root.mkdir(parents=True, exist_ok=True)
        snap = root / f"snap-{uuid.uuid4().hex}"
        snap.mkdir()
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
                for name in strings.column_names:
                    table = table.append_column(name, strings.column(name))
            with pa.OSFile(str(snap / "meta.arrow"), "wb") as sink:
                with ipc.new_file(sink, table.schema) as w:
                    w.write_table(table)
            manifest = {
                "format": _FORMAT, "format_version": _FORMAT_VERSION, "chrono_engine": "0.1.0",
                "dim": self._dim, "metric": self._metric, "params": self._params,
                "decay": self._policy.to_dict(), "fact_types": self._fact_types, "stems": self._stems,
                "rows": int(len(table)),
                "files": {name: _sha256(snap / name) for name in ("graph.bin", "meta.arrow")},
            }
            (snap / "manifest.json").write_text(json.dumps(manifest, indent=1))
            for name in ("graph.bin", "meta.arrow", "manifest.json"):
                _fsync(snap / name)
            _fsync_dir(snap)
            tmp = root / f"CURRENT.{uuid.uuid4().hex}.tmp"
            tmp.write_text(snap.name)
            _fsync(tmp)
            os.replace(tmp, root / "CURRENT")
            _fsync_dir(root)
        except OSError as e:
            shutil.rmtree(snap, ignore_errors=True)
            raise StorageError(f"could not save to {root}: {e}") from e
        # only now drop older snapshots
        for old in root.glob("snap-*"):
            if old.name != snap.name:
                shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def open(cls, path: str | os.PathLike, *, threads: int | None = None) -> "Engine":
        """Open a store written by :meth:`save` (metadata memory-mapped, checksums verified)."""
        root = Path(path)
        try:
            snap = root / (root / "CURRENT").read_text().strip()
            manifest = json.loads((snap / "manifest.json").read_text())
        except FileNotFoundError as e:
            raise StorageError(f"{root} is not a chrono_engine store (missing {e.filename})") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise CorruptStoreError(f"{root}: manifest.json is unreadable ({e})") from None
        if manifest.get("format") != _FORMAT or manifest.get("format_version") != _FORMAT_VERSION:
            raise CorruptStoreError(f"{root}: unknown format {manifest.get('format')!r} "
                                    f"version {manifest.get('format_version')!r}")
        for name, digest in manifest["files"].items():
            f = snap / name
            if not f.exists():
                raise CorruptStoreError(f"{root}: {name} is missing")
            if _sha256(f) != digest:
                raise CorruptStoreError(f"{root}: {name} is corrupt (checksum mismatch)")
        p = manifest["params"]
        eng = cls(manifest["dim"], manifest["metric"], DecayPolicy.from_dict(manifest["decay"]),
                  M=p["M"], ef_construction=p["ef_construction"], seed=p["seed"], threads=threads)
        try:
            table = ipc.open_file(pa.memory_map(str(snap / "meta.arrow"), "r")).read_all()
        except pa.ArrowInvalid as e:
            raise CorruptStoreError(f"{root}: meta.arrow is unreadable ({e})") from None
        if len(table) != manifest["rows"]:
            raise CorruptStoreError(f"{root}: meta.arrow has {len(table)} rows, manifest says {manifest['rows']}")
        eng._fact_types = list(manifest["fact_types"])
        eng._fact_code = {t: i for i, t in enumerate(eng._fact_types)}
        eng._stems = list(manifest["stems"])
        eng._stem_code = {s: i for i, s in enumerate(eng._stems)}
        if eng._fact_types:
            eng._core.set_decay(eng._policy.kernel_table(eng._fact_types))
        col = lambda name, dt: np.ascontiguousarray(table.column(name).to_numpy(), dtype=dt)  # noqa: E731
        if len(table):
            eng._core.restore(str(snap / "graph.bin"), col("valid_from", np.int64), col("valid_to", np.int64),
                              col("observed_at", np.int64), col("ingested_at", np.int64),
                              col("retracted_at", np.int64), col("version_key", np.uint64),
                              col("reliability", np.float32), col("stem_code", np.int32),
                              col("fact_type_code", np.uint16), col("deprecated", np.uint8),
                              col("id", np.uint64))
            eng._chunks = [table.select(list(_STRING_COLUMNS))]
        return eng

    # ------------------------------------------------------------------ introspection
    def memory(self) -> dict:
        """Bytes used by the parts of the store, and metadata bytes per item."""
        m = dict(self._core.memory())
        n = max(len(self), 1)
        m["metadata_per_item"] = m["metadata"] / n
        m["interval_index_per_item"] = m["interval_index"] / n
        return m

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


def _citations(titles: list, versions: list, valid_from: np.ndarray, lang: str) -> list[str]:
    days = valid_from.astype("datetime64[us]").astype("datetime64[D]").astype(str)
    out = []
    for title, ver, day in zip(titles, versions, days):
        title = title or "untitled"
        if lang == "zh":
            v = f"{ver}" if ver else ""
            out.append(f"依据《{title}》{v}（{day} 起施行）")
        else:
            v = f" {ver}" if ver else ""
            out.append(f"per {title}{v}, effective {day}")
    return out


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
