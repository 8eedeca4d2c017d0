"""A sharded engine on Ray actors: N :class:`~chrono_engine.Engine` shards, items placed by
stem, the single engine's calls routed or fanned out (docs/distributed.md).

Placement: every item has a placement key (:func:`placement_key`: BLAKE2b-64 of its stem,
shifted to int64), kept in a hidden metadata column; each shard owns ranges of the key space
(:class:`_Layout`). A lineage (every version of a stem) lives in one shard, so arbitration,
supersede, retract and history run there unchanged. :meth:`ShardedEngine.add_shards` gives
the tail of every range to new shards: only those items move, with their history; the old
shards keep hidden copies, filtered out of every read. Format-1 engines (BLAKE2b mod n,
:func:`shard_of`) still open, and cannot grow.

Ids are global: the driver assigns them (0, 1, 2, ... in the order one engine stores the
rows, see ``Engine.ingest``'s ``order``, or the rows' own ``id`` column) and each shard
stores them as given, so every shard's top-k list is ordered by (score, global id) and the
merge of the lists is the single engine's answer exactly (certified when every shard's was).

Replicas (``path=``, ``replicas=``): each shard is a store written by its primary and
followed (:meth:`Engine.follow <chrono_engine.Engine.follow>`) by its replicas; reads go to
any live copy, which catches up with the last acknowledged write first; a dead copy is
retried within the call and replaced; a dead primary hands writing to a replica.

Metadata columns are declared on every shard: a column that first arrives in a batch is
declared on all of them before the batch's parts go out (in the batch's order, so every
shard's columns are in one order), so a ``where=`` on it reads null in a shard none of whose
rows carry it — as one engine's rows before the column came — instead of failing there as
an unknown field, and every shard's result table has the same columns.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._args import K_MAX, as_float32, count, id_array, shown, thread_count
from .._state import embed_content, ingest_order, storage_order
from .._time import now_us, scalar_us
from ..errors import (ConfigError, NotFoundError, QueryError, SchemaError, ShardError, StorageError,
                      StoreLockedError)
from ..grounding import _take
from ..metadata import MAX_COLUMNS
from ..schema import COLUMNS, columns_of, normalize_rows
from .. import search as _search
from .._util import import_extra

ray = import_extra("ray", "ray", "chrono_engine.distributed.ShardedEngine")

__all__ = ["ShardedEngine", "shard_of", "placement_key"]

#: the manifest of a saved sharded engine (beside its shard stores shard-0, shard-1, ...)
MANIFEST = "sharded.json"
#: 2: placement by ranges of the placement key, kept in a hidden column; 1 (still opens):
#: BLAKE2b-64 mod n, no hidden column, no add_shards
_FORMAT = 2
#: format 2 with the shards' store names ("stores"), once compact() renamed one
_FORMAT_STORES = 3
_STORE_NAME = re.compile(r"shard-[0-9]{1,4}(\.c[0-9]{1,9})?")
#: the hidden metadata column holding each row's placement key (int64) in a format-2 engine
HIDDEN = "__placement"
_I64 = 1 << 63
#: seconds a new sharded engine waits for enough free CPUs before it is refused
_FREE_WAIT = 10.0


def shard_of(stem_id: str | None, n: int, id_: int = 0) -> int:
    """The shard of an item in a format-1 sharded engine (saved before placement by ranges):
    BLAKE2b-64 of its stem (UTF-8) mod ``n``; ``id_`` mod ``n`` for an item without a stem."""
    if stem_id is None:
        return int(id_) % n
    h = hashlib.blake2b(stem_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(h, "little") % n


def placement_key(stem_id: str | None, id_: int = 0) -> int:
    """An item's placement key: the first 8 bytes of BLAKE2b(stem_id, UTF-8) as a
    little-endian integer, shifted to the int64 range (minus 2**63, so the order is the
    hash's); an item without a stem: the same of its id's decimal digits after a zero byte.
    Every version of a stem has the same key, so a lineage never spans shards."""
    data = (b"\0" + str(int(id_)).encode()) if stem_id is None else stem_id.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") - _I64


class _Layout:
    """Which shard owns which placement keys: ``starts`` (int64, ascending, the first
    -2**63) with the shard owning each range up to the next start; ``dirty``: the shards
    that still hold rows they gave away in a re-sharding (their reads filter on the hidden
    column). ``kind`` "mod" is format 1's BLAKE2b mod n. Immutable: a change makes a new one,
    swapped in whole, so a read uses one layout from start to end."""

    __slots__ = ("kind", "n", "starts", "owners", "dirty")

    def __init__(self, kind: str, n: int, starts: list[int] | None = None, owners: list[int] | None = None,
                 dirty: frozenset = frozenset()) -> None:
        self.kind, self.n, self.dirty = kind, n, frozenset(dirty)
        if kind == "ranges" and starts is None:
            starts = [-_I64 + (i << 64) // n for i in range(n)]
            owners = list(range(n))
        self.starts = np.asarray(starts if starts is not None else [], np.int64)
        self.owners = np.asarray(owners if owners is not None else [], np.int64)

    def place(self, stems: list, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(shard of each item, its placement key or None for format 1)."""
        if self.kind == "mod":
            return np.array([shard_of(st, self.n, int(i)) for st, i in zip(stems, ids)], np.int64), None
        keys = np.array([placement_key(st, int(i)) for st, i in zip(stems, ids)], np.int64)
        return self.owners[np.searchsorted(self.starts, keys, side="right") - 1], keys

    def of_stem(self, stem_id: str) -> int:
        if self.kind == "mod":
            return shard_of(stem_id, self.n)
        return int(self.owners[np.searchsorted(self.starts, placement_key(stem_id), side="right") - 1])

    def ranges(self, shard: int) -> list[tuple[int, int | None]]:
        """The key ranges ``shard`` owns, [lo, hi) with None for 2**63, adjacent ones joined."""
        out: list = []
        for j in np.flatnonzero(self.owners == shard):
            lo = int(self.starts[j])
            hi = int(self.starts[j + 1]) if j + 1 < len(self.starts) else None
            if out and out[-1][1] == lo:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        return out

    def own_ranges(self, shard: int) -> list[tuple[int, int | None]] | None:
        """The ranges a dirty shard's reads keep (:meth:`ranges`); None for a clean one (it
        holds its own rows only)."""
        return self.ranges(shard) if shard in self.dirty else None

    def owner_where(self, shard: int) -> dict | None:
        """The filter a dirty shard's reads take (its own keys only); None for a clean one."""
        own = self.own_ranges(shard)
        if own is None:
            return None
        parts = [{HIDDEN: {"$gte": lo}} if hi is None else {HIDDEN: {"$gte": lo, "$lt": hi}} for lo, hi in own]
        return parts[0] if len(parts) == 1 else {"$or": parts}

    def grown(self, m: int) -> tuple[_Layout, dict[int, list[tuple[int, int | None, int]]]]:
        """This layout with ``m`` shards more: each shard gives the tail m / (n + m) of every
        range it owns, cut in m equal pieces, one to each new shard; so about m / (n + m) of
        the keys (and items) move, each to a new shard only. Returns the new layout and, per
        old shard, the pieces it gives: (lo, hi, new shard)."""
        n, total = self.n, self.n + m
        starts, owners = [], []
        gives: dict[int, list] = {}
        for j, lo in enumerate(self.starts.tolist()):
            hi = int(self.starts[j + 1]) if j + 1 < len(self.starts) else _I64
            owner = int(self.owners[j])
            cut = lo + (hi - lo) * n // total
            starts.append(lo)
            owners.append(owner)
            edges = [cut + (hi - cut) * q // m for q in range(m + 1)]
            for q in range(m):
                if edges[q] < edges[q + 1]:
                    starts.append(edges[q])
                    owners.append(n + q)
                    gives.setdefault(owner, []).append((edges[q], None if edges[q + 1] == _I64 else edges[q + 1], n + q))
        return _Layout("ranges", total, starts, owners, self.dirty | {s for s in gives}), gives

    def cleaned(self, shard: int) -> _Layout:
        """This layout with ``shard`` no longer dirty (compacted: it holds its own rows only)."""
        return _Layout(self.kind, self.n, self.starts.tolist(), self.owners.tolist(), self.dirty - {shard})

    def manifest(self) -> dict:
        if self.kind == "mod":
            return {"placement": "blake2b-64(stem_id, utf-8) mod n; id mod n without a stem"}
        return {"placement": "ranges of placement_key (blake2b-64 of the stem)", "starts": self.starts.tolist(),
                "owners": self.owners.tolist(), "dirty": sorted(self.dirty)}

    @classmethod
    def from_manifest(cls, m: dict, n: int, where: str) -> _Layout:
        if m.get("format") == 1:
            return cls("mod", n)
        starts, owners, dirty = m.get("starts"), m.get("owners"), m.get("dirty", [])
        ok = (isinstance(starts, list) and isinstance(owners, list) and isinstance(dirty, list)
              and len(starts) == len(owners) and len(starts) >= n
              and all(type(x) is int and -_I64 <= x < _I64 for x in starts)
              and all(type(x) is int and 0 <= x < n for x in owners + dirty)
              and starts and starts[0] == -_I64 and all(a < b for a, b in zip(starts, starts[1:]))
              and set(owners) == set(range(n)))
        if not ok:
            raise StorageError(f"{where}: the placement's ranges are malformed")
        return cls("ranges", n, starts, owners, frozenset(dirty))


#: ShardedEngine._wait's timeout for a call that must not be cut off (ShardedEngine.compact)
_NO_LIMIT = object()
#: seconds a replica waits for the store's log to show a write its primary acknowledged
_CATCH_UP = 10.0
#: seconds a write waits for a promoted or restarted primary
_PROMOTE_WAIT = 120.0
#: seconds a promotion waits for a dead primary's process to release the store's lock
_LOCK_GRACE = 30.0
#: two-phase searches a shard copy keeps between their phases (the oldest dropped past it)
_KEPT = 256


#: calls a shard copy runs at once (searches run in parallel in the engine; writes take its
#: write lock): a copy answers many clients' queries without queueing them one by one
_CONCURRENCY = 16


@ray.remote(max_restarts=0, max_task_retries=0, max_concurrency=_CONCURRENCY)
class _Shard:
    """One Engine in an actor; reads are ``run(method, *args, _at=position, **kwargs)``,
    writes ``write(method, ...)`` (the result and the store's position after it).

    ``mode``: ``"memory"`` (an Engine of ``kwargs``, no store), ``"create"`` (a new store at
    ``path``: ``Engine.create``), ``"open"`` (``Engine.open``: the store's writer, the
    primary), ``"follow"`` (``Engine.follow``: a replica of the store the primary writes)."""

    def __init__(self, mode: str = "memory", kwargs: dict | None = None, path: str | None = None,
                 threads: int | None = None, kinds: dict | None = None, fsync: str = "call") -> None:
        from chrono_engine import Engine
        self.path, self.threads, self.fsync = path, threads, fsync
        if mode == "memory":
            self.eng = Engine(**kwargs)
        elif mode == "create":
            self.eng = Engine.create(path, fsync=fsync, **kwargs)
        elif mode == "open":
            self.eng = Engine.open(path, threads=threads, fsync=fsync)
        elif mode == "follow":
            self.eng = Engine.follow(path, threads=threads)
        else:
            raise ValueError(f"unknown shard mode {mode!r}")
        self._declared: dict = {}
        self._kept: dict = {}  # two-phase searches between their phases
        self._kept_lock = threading.Lock()
        if kinds:
            self.declare(kinds)

    def _catch_up(self, at: tuple | None) -> None:
        """A replica answers only once it holds every write up to ``at`` (the primary's
        position after the caller's last acknowledged write): read-your-writes."""
        eng = self.eng
        if at is None or getattr(eng, "_follower", None) is None:
            return
        pos = eng.position
        if pos[0] == at[0] and pos[1] >= at[1]:
            return
        deadline = time.monotonic() + _CATCH_UP
        while True:
            if eng.refresh() == -1:  # a new checkpoint: declarations are not in the log
                self._redeclare()
            pos = eng.position
            # on another snapshot after a refresh: the live one, newer than the one of ``at``
            if pos[0] != at[0] or pos[1] >= at[1]:
                return
            if time.monotonic() > deadline:
                raise ShardError(f"a replica could not catch up with its primary within {_CATCH_UP:g} s "
                                 f"(it holds record {pos[1]} of {pos[0]}, the primary acknowledged {at[1]})")
            time.sleep(0.002)

    def run(self, method: str, *args: Any, _at: tuple | None = None, **kwargs: Any) -> Any:
        self._catch_up(_at)
        return getattr(self.eng, method)(*args, **kwargs)

    def search_keys(self, call: str, *args: Any, _at: tuple | None = None, **kwargs: Any) -> pa.Table:
        """Phase one of a two-phase search: ``search_batch(*args, **kwargs)``, its table kept
        here under ``call`` and only what the merge needs returned (query, score, id, rank,
        certified and the row's place in the table)."""
        self._catch_up(_at)
        table = self.eng.search_batch(*args, **kwargs)
        with self._kept_lock:
            self._kept[call] = table
            while len(self._kept) > _KEPT:  # phase two never came (its caller died): the oldest go
                self._kept.pop(next(iter(self._kept)))
        return pa.table({"query": table.column("query"), "score": table.column("score"),
                         "id": table.column("id"), "rank": table.column("rank"), "certified": table.column("certified"),
                         "row": pa.array(np.arange(table.num_rows, dtype=np.int32))})

    def _keys(self, rows: np.ndarray) -> np.ndarray:
        """The placement keys (hidden column) of ``rows``."""
        col = self.eng._state.user_table(rows, [HIDDEN])[HIDDEN]
        return np.asarray(col.to_numpy(zero_copy_only=False), np.int64)

    @staticmethod
    def _in(keys: np.ndarray, ranges: list) -> np.ndarray:
        inside = np.zeros(len(keys), bool)
        for lo, hi in ranges:
            inside |= (keys >= lo) if hi is None else ((keys >= lo) & (keys < hi))
        return inside

    def owned(self, ids: Any, ranges: list | None = None, _at: tuple | None = None) -> np.ndarray:
        """Whether each id is here and (``ranges`` given: a shard that gave rows away) owned."""
        self._catch_up(_at)
        has = np.asarray(self.eng.contains(ids), bool)
        if ranges is not None and has.any():
            arr = np.asarray(ids, np.uint64).reshape(-1)
            rows = self.eng._state.rows_of(arr[has])
            sub = has.copy()
            sub[has] = self._in(self._keys(rows), ranges)
            has = sub
        return has

    def owned_count(self, ranges: list | None = None, _at: tuple | None = None) -> int:
        self._catch_up(_at)
        n = len(self.eng)
        if ranges is None or n == 0:
            return n
        return int(self._in(self._keys(np.arange(n)), ranges).sum())

    def export_ranges(self, ranges: list) -> Any:
        """Every row whose placement key is in ``ranges``, with its history
        (:func:`chrono_engine._transfer.export_rows`)."""
        from chrono_engine._transfer import export_rows
        n = len(self.eng)
        rows = np.flatnonzero(self._in(self._keys(np.arange(n)), ranges)) if n else np.zeros(0, np.int64)
        ids = self.eng.columns()["id"][rows] if len(rows) else np.zeros(0, np.uint64)
        return export_rows(self.eng, ids)

    def import_rows(self, payload: Any) -> tuple:
        """Rows exported by another shard, appended with their history (a logged write)."""
        from chrono_engine._transfer import import_rows
        out = import_rows(self.eng, payload)
        return out, self.eng.position

    def compact(self, ranges: list, path: str | None) -> tuple:
        """This copy's store rewritten with the rows whose placement key is in ``ranges``
        (the shard's own, each with its whole history: :mod:`chrono_engine._transfer`), a
        new store at ``path`` (checkpointed: its snapshot holds them all, its log is empty)
        or a new engine in memory, swapped in for the old one, which is closed (its store
        and log stay as they were: the driver removes them once no copy reads them). Reads
        meanwhile are answered by the old engine. Returns (rows kept, rows dropped, the new
        store's position)."""
        from chrono_engine import Engine
        from chrono_engine._transfer import import_rows
        old = self.eng
        payload = self.export_ranges(ranges)
        kwargs = self.engine_kwargs()
        new = None
        try:
            new = Engine.create(path, fsync=self.fsync, **kwargs) if path is not None else Engine(**kwargs)
            import_rows(new, payload)
            if path is not None:
                new.save()
            self._redeclare(new)
        except BaseException:
            if path is not None:  # the new store goes: the old one stays in use
                if new is not None:
                    new.close()
                shutil.rmtree(path, ignore_errors=True)
            raise
        kept = len(new)
        self.eng, self.path = new, path  # nothing after the swap raises: the driver names the new store
        try:
            old.close()
        except Exception:  # noqa: BLE001 - its log's last sync; the rows it held are in the new store
            pass
        return kept, len(old) - kept, new.position

    def refollow(self, path: str) -> tuple:
        """A replica follows the store at ``path`` instead (its primary's, after
        :meth:`compact`); reads meanwhile are answered by the old one. Returns its position."""
        from chrono_engine import Engine
        eng = Engine.follow(path, threads=self.threads)
        self.eng, self.path = eng, path
        self._redeclare()
        return eng.position

    def take_rows(self, call: str, rows: np.ndarray) -> pa.Table | None:
        """Phase two: the kept table's ``rows`` (all its columns); None when it is gone."""
        with self._kept_lock:
            table = self._kept.pop(call, None)
        return None if table is None else table.take(pa.array(rows))

    def write(self, method: str, *args: Any, **kwargs: Any) -> tuple:
        out = getattr(self.eng, method)(*args, **kwargs)
        return out, self.eng.position

    def position(self) -> tuple | None:
        return self.eng.position

    def applied(self, ids: np.ndarray, at: int | None = None) -> Any:
        """Whether a write whose primary died is in this (new) primary's store: ``ids`` all
        stored (an ingest or supersede), or all amended at transaction time ``at`` (a
        retract or deprecate). The write's ids when it is, None when it is not."""
        if at is None:
            has = np.asarray(self.eng.contains(ids), bool)
        else:
            has = self.eng.columns(ids)["amended_at"] == at
        if has.all():
            return ids
        if not has.any():
            return None
        raise ShardError(f"a write is in the store for {int(has.sum())} of its {len(has)} rows (a write is atomic: "
                         f"the store is damaged)")

    def node(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def promote(self) -> tuple:
        """This replica becomes its store's writer: the store is opened for writing (its
        lock taken without waiting: a StoreLockedError while the old primary lives), with
        every write the log holds; returns its position."""
        from chrono_engine import Engine
        eng = Engine.open(self.path, threads=self.threads, fsync=self.fsync)
        self.eng = eng
        self._redeclare()
        return eng.position

    def size(self) -> int:
        return len(self.eng)

    def settings(self) -> tuple:
        """(dim, metric, decay policy) of the shard's engine."""
        return self.eng.dim, self.eng.metric, self.eng.decay

    def engine_kwargs(self) -> dict:
        """The constructor's arguments that make an empty engine like this one (a new shard)."""
        e = self.eng
        return dict(dim=e.dim, metric=e.metric, decay=e.decay, ef=e.ef, ef_max=e.ef_max, scan_limit=e.scan_limit,
                    seed_ef=e.seed_ef, seed_min=e.seed_min, group=e.group, scan=e.scan, threads=self.threads,
                    metadata=e.metadata, **e.params)

    def next_id(self) -> int:
        """One past the largest id stored (0 when empty)."""
        return int(self.eng.columns()["id"].max()) + 1 if len(self.eng) else 0

    def kinds(self) -> dict:
        """The engine's metadata columns and kinds, in column order."""
        return self.eng.metadata

    def declare(self, kinds: dict) -> dict:
        """Add the metadata columns ``kinds`` lacks from the engine (null for every row so
        far; a column it has keeps its kind, another kind is a SchemaError); returns
        :meth:`kinds`."""
        st = self.eng._state
        with st.write:
            st.declare(kinds)
        self._declared.update(kinds)
        return st.user_kinds()

    def _redeclare(self, eng: Any = None) -> None:
        if self._declared:
            st = (self.eng if eng is None else eng)._state
            with st.write:
                st.declare({k: v for k, v in self._declared.items() if k not in st.user_kinds()})


class _Member:
    """The driver's record of one copy of a shard: its actor, the placement group bundle it
    runs in, its role, and whether it is started (``ready``) and alive."""

    __slots__ = ("actor", "bundle", "role", "ready", "alive", "ready_ref", "since", "served_in")

    def __init__(self, actor: Any, bundle: int, role: str, ready_ref: Any = None) -> None:
        self.actor, self.bundle, self.role = actor, bundle, role
        self.ready, self.alive, self.ready_ref = ready_ref is None, True, ready_ref
        self.since, self.served_in = time.monotonic(), None


class _Group:
    """One shard: its members (one primary, the others replicas), the placement group that
    spreads them, the primary's position after the last acknowledged write, a turn counter."""

    __slots__ = ("members", "pg", "at", "turn")

    def __init__(self, pg: Any = None) -> None:
        self.members: list[_Member] = []
        self.pg, self.at, self.turn = pg, None, 0


def _unwrap(e: BaseException) -> BaseException:
    """An exception raised inside an actor, as the caller's own (QueryError, not Ray's
    RayTaskError wrapping it)."""
    cause = e.as_instanceof_cause() if isinstance(e, ray.exceptions.RayTaskError) else e
    inner = getattr(cause, "cause", None)
    return inner if isinstance(inner, BaseException) else cause


class ShardedEngine:
    """N engine shards in Ray actors behind the single :class:`~chrono_engine.Engine`'s API.

    ``ShardedEngine(n_shards, dim, metric, decay, **engine_kwargs)`` starts ``n_shards``
    actors (``cpus_per_shard`` CPUs each in Ray's accounting; ``threads`` per shard engine),
    each holding an ``Engine(dim, metric, decay, **engine_kwargs)``; ``ray.init()`` must
    have run (or Ray starts a local instance on first use). ``embedder`` stays on the
    driver (rows without vectors and :meth:`query` are embedded there). ``timeout``: the
    most seconds a call waits for one shard copy (None: no limit).

    **Durable and replicated** (``path=``, ``replicas=``): each shard is a store at
    ``path/shard-<i>`` (a directory every node can reach) written by its primary, and
    ``replicas - 1`` followers of it (:meth:`Engine.follow <chrono_engine.Engine.follow>`)
    spread across nodes by a placement group. Reads go to any live copy, which first catches
    up with the primary's last acknowledged write (read-your-writes); a copy that dies is
    retried on another within the call and replaced from the store; a dead primary hands
    writing to a live replica, which opens the store (every acknowledged write is in its
    log). docs/distributed.md, "Replicas".

    Calls and results are the single engine's: :meth:`ingest` (validated on the driver
    first, with the batch's row numbers, then split by placement; ids global),
    :meth:`search` / :meth:`search_batch` (times resolved once on the driver, every shard's
    exact top-k merged; the ``verify`` gate applied after the merge), :meth:`query`,
    :meth:`supersede`, :meth:`retract`, :meth:`deprecate`, :meth:`history`, :meth:`get`,
    :meth:`contains`, :meth:`save` and :meth:`open`. A shard none of whose copies answers
    (or a call past ``timeout`` on every copy) is a
    :class:`~chrono_engine.errors.ShardError` naming it.

    Metadata columns (``metadata=`` declarations, or a batch's columns beyond the engine's)
    are declared on every shard, so ``where=`` filters and ``columns=`` work as on one
    engine: a column only some shards' rows carry reads null in the others.
    """

    def __init__(self, n_shards: int, dim: int, metric: str = "cosine", decay: Any = None, *,
                 cpus_per_shard: float = 1.0, threads: int | None = 1, embedder: Any = None,
                 timeout: float | None = None, replicas: int = 1, path: str | os.PathLike | None = None,
                 fsync: str = "call", merge: str = "two_phase", **engine_kwargs: Any) -> None:
        n = count(n_shards, "n_shards", lo=1, hi=4096, error=ConfigError)
        r = self._replication(replicas, path, fsync)
        self._setup(n, cpus_per_shard, timeout, embedder, r, path, fsync, merge)
        threads = thread_count(threads, "threads", ConfigError)
        kwargs = dict(dim=dim, metric=metric, decay=decay, threads=threads, **engine_kwargs)
        from chrono_engine import Engine
        probe = Engine(**kwargs)  # checks every argument here, with the single engine's errors
        self.dim, self.metric, self.decay = probe.dim, probe.metric, probe.decay
        if HIDDEN in probe.metadata:
            raise ConfigError(f"metadata column {HIDDEN!r} is reserved by ShardedEngine (each item's placement key)")
        # every shard's metadata columns, in their order: the hidden placement key first
        self._kinds = {HIDDEN: "int64", **probe.metadata}
        kwargs["metadata"] = dict(self._kinds)
        self._threads = threads
        self._next_id = 0
        if self._path is not None:
            self._path.mkdir(parents=True, exist_ok=True)
            if (self._path / MANIFEST).exists():
                raise StorageError(f"{self._path} already holds a sharded engine (open it with ShardedEngine.open)")
            for i in range(n):
                if (self._path / f"shard-{i}").exists():
                    raise StorageError(f"{self._path / f'shard-{i}'} already exists")
        self._start_groups()

        def first() -> None:
            for i in range(n):
                g = self._groups[i]
                if self._path is None:
                    g.members.append(_Member(self._spawn(i, 0, "memory", kwargs=kwargs), 0, "primary"))
                else:
                    g.members.append(_Member(self._spawn(i, 0, "create", kwargs=kwargs, path=self._shard_path(i)),
                                             0, "primary"))
            self._wait([self._groups[i].members[0].actor.position.remote() for i in range(n)])  # up, or say why not
            for i in range(n):
                for j in range(1, r):
                    self._groups[i].members.append(self._follower(i, j, wait=False))
            self._wait_ready()
            if self._path is not None:
                self._write_manifest()
        self._started(first)

    @staticmethod
    def _replication(replicas: Any, path: Any, fsync: Any) -> int:
        r = count(replicas, "replicas", lo=1, hi=64, error=ConfigError)
        if r > 1 and path is None:
            raise ConfigError("replicas need path=: a directory every node can reach, where each shard's primary "
                              "writes its store and log and its replicas follow them")
        if fsync not in ("call", "interval"):
            raise ConfigError(f"fsync must be 'call' or 'interval' for a sharded store (its replicas follow "
                              f"acknowledged, synced writes), got {shown(fsync)}")
        return r

    def _setup(self, n: int, cpus: float, timeout: float | None, embedder: Any, replicas: int = 1,
               path: Any = None, fsync: str = "call", merge: str = "two_phase") -> None:
        if merge not in ("two_phase", "one_phase"):
            raise ConfigError(f"merge must be 'two_phase' or 'one_phase', got {shown(merge)}")
        #: "two_phase" (default): shards return their top-k keys, then the final rows only;
        #: "one_phase": shards return their top-k rows whole (docs/distributed.md)
        self.merge = merge
        #: bytes of the Arrow tables the shards sent back to searches so far (Arrow's nbytes)
        self.received_bytes = 0
        if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not 0 < cpus <= 1024:
            raise ConfigError(f"cpus_per_shard must be a number in (0, 1024], got {shown(cpus)}")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not timeout > 0):
            raise ConfigError(f"timeout must be a positive number of seconds or None, got {shown(timeout)}")
        self.n_shards, self._cpus, self.timeout, self.embedder = n, float(cpus), timeout, embedder
        self.replicas, self._fsync = replicas, fsync
        self._path = None if path is None else Path(os.path.abspath(path))  # actors run elsewhere
        self._lock = threading.RLock()
        self._write_lock = threading.RLock()  # writes, checkpoints and re-sharding, one at a time
        self._layout = _Layout("ranges", n)
        #: each shard's store directory under the path: shard-<i>, or shard-<i>.c<g> once
        #: compact() rewrote it (the manifest's "stores")
        self._stores = [f"shard-{i}" for i in range(n)]
        self._groups: list[_Group] = []
        self._events: list[tuple[float, str]] = []

    def _started(self, first_call: Any) -> Any:
        """``first_call()`` on the new actors; if a shard fails to start, the others are
        stopped too (their CPUs go back to Ray) before the error is raised."""
        try:
            return first_call()
        except BaseException:
            self.shutdown()
            raise

    def _start_groups(self, count_: int | None = None) -> None:
        """Check that the cluster's free CPUs hold every copy of ``count_`` shards more
        (default: all; instead of waiting forever), then one placement group per shard when
        it has replicas (``SPREAD``: its copies on different nodes where the cluster has them)."""
        if not ray.is_initialized():
            ray.init()
        count_ = self.n_shards if count_ is None else count_
        need = count_ * self.replicas * self._cpus
        deadline = time.monotonic() + _FREE_WAIT
        while (free := ray.available_resources().get("CPU", 0.0)) < need - 1e-9 and time.monotonic() < deadline:
            time.sleep(0.1)
        if need > free + 1e-9:
            total = ray.cluster_resources().get("CPU", 0.0)
            copies = f"{count_} shards" + (f" x {self.replicas} copies" if self.replicas > 1 else "")
            raise ConfigError(f"{copies} of {self._cpus:g} CPU(s) need {need:g} CPUs; the Ray cluster has "
                              f"{free:g} free of {total:g} (shut other actors down, or lower cpus_per_shard)")
        first = len(self._groups)
        for _ in range(count_):
            pg = None
            if self.replicas > 1:
                from ray.util.placement_group import placement_group
                pg = placement_group([{"CPU": self._cpus}] * self.replicas, strategy="SPREAD")
            self._groups.append(_Group(pg))
        for i, g in enumerate(self._groups[first:], first):
            if g.pg is not None:
                try:
                    ray.get(g.pg.ready(), timeout=60)
                except ray.exceptions.GetTimeoutError:
                    raise ConfigError(f"shard {i}'s placement group was not placed within 60 s") from None

    def _shard_path(self, i: int) -> str:
        return str(self._path / self._stores[i])

    def _spawn(self, shard: int, bundle: int, mode: str, **init: Any) -> Any:
        opts: dict = {"num_cpus": self._cpus}
        pg = self._groups[shard].pg
        if pg is not None:
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
            opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=bundle)
        return _Shard.options(**opts).remote(mode, fsync=self._fsync, **init)

    def _follower(self, shard: int, bundle: int, *, wait: bool) -> _Member:
        actor = self._spawn(shard, bundle, "follow", path=self._shard_path(shard), threads=self._threads,
                            kinds=dict(self._kinds))
        m = _Member(actor, bundle, "replica", actor.position.remote())
        if wait:
            self._wait_ready([m])
        return m

    def _wait_ready(self, members: list[_Member] | None = None, timeout: float | None = None) -> None:
        """Wait until ``members`` (default: every copy not yet started) answer."""
        members = [m for g in self._groups for m in g.members if not m.ready and m.alive] if members is None else members
        for m in members:
            shard = next(i for i, g in enumerate(self._groups) if m in g.members)
            self._wait([m.ready_ref], [shard], timeout=timeout)
            m.ready, m.ready_ref = True, None

    # ------------------------------------------------------------------ membership
    @property
    def _actors(self) -> list:
        """Each shard's primary actor."""
        return [self._primary_member(i).actor for i in range(len(self._groups))]

    def _primary_member(self, shard: int) -> _Member:
        return next((m for m in self._groups[shard].members if m.role == "primary"),
                    self._groups[shard].members[0])

    def _event(self, text: str) -> None:
        with self._lock:
            if self._events and self._events[-1][1].startswith(text):  # a repeat: counted
                when, last = self._events[-1]
                times = int(last.rsplit(" (x", 1)[1][:-1]) + 1 if last.endswith(")") and " (x" in last else 2
                self._events[-1] = (when, f"{text} (x{times})")
                return
            self._events.append((time.time(), text))
            del self._events[:-200]

    def _poll(self) -> None:
        """Copies started since the last call join the rotation; one that failed to start
        is dropped (and started again from the store, at most once per call)."""
        with self._lock:
            waiting = [(i, m) for i, g in enumerate(self._groups) for m in g.members
                       if m.alive and not m.ready and m.ready_ref is not None]
        if not waiting:
            return
        done, _ = ray.wait([m.ready_ref for _, m in waiting], num_returns=len(waiting), timeout=0)
        done = set(done)
        for i, m in waiting:
            if m.ready_ref not in done:
                continue
            try:
                ray.get(m.ready_ref)
            except Exception as e:  # noqa: BLE001 - it did not start: dropped, started again
                self._event(f"shard {i}: a new copy failed to start ({type(e).__name__})")
                self._lost(i, m)
                continue
            with self._lock:
                if m.ready:  # another thread's poll took it in
                    continue
                m.ready, m.ready_ref = True, None
                m.served_in = time.monotonic() - m.since
            self._event(f"shard {i}: a new {m.role} serves ({m.served_in:.2f} s after it was started)")

    def _lost(self, shard: int, m: _Member) -> None:
        """Copy ``m`` of ``shard`` died: out of the rotation, and (a durable shard) a new
        replica started in its place from the store, in the same placement group bundle."""
        with self._lock:
            if not m.alive:
                return
            m.alive = False
            g = self._groups[shard]
            self._event(f"shard {shard}: a {m.role} died")
            if self._path is None:
                return
            try:
                ray.kill(m.actor)
            except Exception:  # noqa: BLE001 - already gone
                pass
            g.members.remove(m)
            if m.role == "primary" and not any(x.alive for x in g.members):
                # no copy left to promote: the primary again, from the store
                actor = self._spawn(shard, m.bundle, "open", path=self._shard_path(shard), threads=self._threads,
                                    kinds=dict(self._kinds))
                g.members.append(_Member(actor, m.bundle, "primary", actor.position.remote()))
            else:
                g.members.append(self._follower(shard, m.bundle, wait=False))

    def _pick(self, shard: int, tried: set) -> _Member | None:
        with self._lock:
            g = self._groups[shard]
            live = [m for m in g.members if m.alive and m.ready and id(m) not in tried]
            if not live:
                return None
            g.turn += 1
            return live[g.turn % len(live)]

    def _await_copy(self, shard: int, tried: set) -> _Member | None:
        """A copy of ``shard`` to try next: a started one, else (a durable shard) one being
        started, waited for up to the timeout."""
        m = self._pick(shard, tried)
        if m is not None or self._path is None:
            return m
        deadline = time.monotonic() + (self.timeout or _PROMOTE_WAIT)
        while time.monotonic() < deadline:
            with self._lock:
                pending = [x for x in self._groups[shard].members if x.alive and not x.ready]
            if not pending:
                return None
            self._poll()
            m = self._pick(shard, tried)
            if m is not None:
                return m
            time.sleep(0.02)
        return None

    # ------------------------------------------------------------------ plumbing
    def _wait(self, refs: list, shards: list[int] | None = None, timeout: float | None = None) -> list:
        """Results of one call per shard (in ``shards`` order), no retry: a dead copy or a
        call past the timeout is a ShardError naming the shard; an engine error comes back
        as raised."""
        shards = list(range(len(refs))) if shards is None else shards
        out = []
        limit = self.timeout if timeout is None else (None if timeout is _NO_LIMIT else timeout)
        for i, ref in zip(shards, refs):
            try:
                out.append(ray.get(ref, timeout=limit))
            except ray.exceptions.GetTimeoutError:
                raise ShardError(f"shard {i} did not answer within {limit} s", shard=i) from None
            except ray.exceptions.RayActorError as e:  # ActorDiedError among them
                raise self._dead_error(i, e) from None
            except ray.exceptions.RayTaskError as e:
                raise _unwrap(e) from None
        return out

    def _dead_error(self, i: int, e: BaseException) -> ShardError:
        if getattr(e, "actor_init_failed", False):  # its engine did not start: Ray's text ends with why
            why = (getattr(e, "error_msg", "") or str(e)).strip().splitlines()[-1]
            return ShardError(f"shard {i} could not start: {why[:500]}", shard=i)
        if self._path is None:
            return ShardError(f"shard {i} is dead ({type(e).__name__}); restart from the last save with "
                              f"ShardedEngine.open(path)", shard=i)
        return ShardError(f"shard {i}: no copy answers ({type(e).__name__})", shard=i)

    def _reads(self, calls: dict[int, tuple], answered: dict | None = None) -> dict[int, Any]:
        """One read per shard (``{shard: (actor method, args, kwargs)}``: ``run`` with the
        engine's method first in args, or another of :class:`_Shard`'s reads), each on a live
        copy, which first catches up with the shard's last acknowledged write; a copy that
        dies or times out is replaced by another within the call (a dead one is also started
        again from the store). ShardError when no copy of a shard answers. ``answered``
        receives the copy that answered for each shard."""
        self._poll()
        tried: dict[int, set] = {s: set() for s in calls}
        pending: dict[int, tuple] = {}

        def submit(s: int) -> None:
            m = self._await_copy(s, tried[s])
            if m is None:
                raise ShardError(f"shard {s}: no live copy to answer" + (
                    "; restart from the last save with ShardedEngine.open(path)" if self._path is None else ""),
                    shard=s)
            remote, args, kwargs = calls[s]
            at = None if m.role == "primary" else self._groups[s].at
            pending[s] = (m, getattr(m.actor, remote).remote(*args, _at=at, **kwargs))

        for s in calls:
            submit(s)
        out = {}
        for s in calls:
            while True:
                m, ref = pending[s]
                try:
                    out[s] = ray.get(ref, timeout=self.timeout)
                    if answered is not None:
                        answered[s] = m
                    break
                except ray.exceptions.GetTimeoutError:
                    failure: BaseException = ShardError(f"shard {s} did not answer within {self.timeout} s", shard=s)
                    dead = False
                except ray.exceptions.RayActorError as e:
                    if getattr(e, "actor_init_failed", False):
                        raise self._dead_error(s, e) from None
                    failure, dead = self._dead_error(s, e), True
                except ray.exceptions.RayTaskError as e:
                    raise _unwrap(e) from None
                tried[s].add(id(m))
                if dead:
                    self._lost(s, m)
                try:
                    submit(s)
                except ShardError:
                    raise failure from None
        return out

    def _all(self, method: str, *args: Any, **kwargs: Any) -> list:
        n = self._layout.n
        got = self._reads({s: ("run", (method, *args), kwargs) for s in range(n)})
        return [got[s] for s in range(n)]

    def _one(self, shard: int, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._reads({shard: ("run", (method, *args), kwargs)})[shard]

    def _primary(self, shard: int) -> _Member:
        """The shard's live primary: a replica promoted (it opens the store for writing) or
        the primary started again from the store when the old one died."""
        with self._lock:
            g = self._groups[shard]
            p = self._primary_member(shard)
            if p.role == "primary" and p.alive and p.ready:
                return p
        if self._path is None:
            raise ShardError(f"shard {shard} is dead; restart from the last save with ShardedEngine.open(path)",
                             shard=shard)
        deadline = time.monotonic() + _PROMOTE_WAIT
        locked_since = None
        while time.monotonic() < deadline:
            self._poll()
            with self._lock:
                p = self._primary_member(shard)
                if p.role == "primary" and p.alive:
                    if p.ready:
                        return p
                    candidate = None
                elif p.role == "primary":
                    candidate = next((m for m in g.members if m.alive and m.ready and m.role == "replica"), None)
                    if candidate is None:
                        self._lost(shard, p)  # restarts it from the store when no replica lives
                        continue
                else:  # every member is a replica (the dead primary was removed)
                    candidate = next((m for m in g.members if m.alive and m.ready), None)
            if candidate is None:
                time.sleep(0.02)
                continue
            t0 = time.monotonic()
            try:
                pos = ray.get(candidate.actor.promote.remote(), timeout=_PROMOTE_WAIT)
            except ray.exceptions.RayActorError:
                self._lost(shard, candidate)
                continue
            except ray.exceptions.RayTaskError as e:
                err = _unwrap(e)
                if not isinstance(err, StoreLockedError):
                    raise err from None
                # Ray says the primary died, but its process still holds the store's lock:
                # exiting, or alive somewhere (cut off). Never two writers: wait for the lock
                # to be released, and refuse writes if it is not
                if locked_since is None:
                    locked_since = time.monotonic()
                if time.monotonic() - locked_since > _LOCK_GRACE:
                    raise ShardError(f"shard {shard}: its primary does not answer but still holds the store's lock "
                                     f"after {_LOCK_GRACE:g} s (alive somewhere): writes are refused until it exits "
                                     f"({err})", shard=shard) from None
                time.sleep(0.1)
                continue
            with self._lock:
                old = self._primary_member(shard)
                if old is not candidate and old.role == "primary":
                    old.role = "replica"  # the dead one, replaced by _lost as a replica
                candidate.role = "primary"
                g.at = pos
            self._event(f"shard {shard}: a replica became the primary in {time.monotonic() - t0:.2f} s")
            with self._lock:
                dead = [m for m in g.members if not m.alive]
            for m in dead:
                self._lost(shard, m)
            return candidate
        raise ShardError(f"shard {shard}: no primary within {_PROMOTE_WAIT:g} s", shard=shard)

    def _write(self, shard: int, method: str, *args: Any, applied: tuple | None = None, **kwargs: Any) -> Any:
        """A write on the shard's primary (:meth:`_writes` of one)."""
        return self._writes({shard: ((method, *args), kwargs, applied)})[shard]

    def _writes(self, calls: dict[int, tuple]) -> dict[int, Any]:
        """Writes on the shards' primaries, in parallel (``{shard: ((method, *args), kwargs,
        applied)}``); each primary's position after its write is what the shard's replicas
        catch up with. When a primary dies during the call its write may or may not be in the
        store's log: a replica is promoted (or the primary started again from the store) and
        ``applied`` (ids, and a transaction time for an amendment: :meth:`_Shard.applied`)
        says whether it is there; if not, it is made again. Without ``applied`` that is a
        ShardError saying the write may or may not be applied."""
        submitted = {}
        for s, (args, kwargs, _) in calls.items():
            m = self._primary(s)
            submitted[s] = (m, m.actor.write.remote(*args, **kwargs))
        out = {}
        for s, (args, kwargs, applied) in calls.items():
            m, ref = submitted[s]
            for attempt in range(3):
                try:
                    res, pos = ray.get(ref, timeout=self.timeout)
                except ray.exceptions.GetTimeoutError:
                    raise ShardError(f"shard {s} did not acknowledge a write within {self.timeout} s: it may or may "
                                     f"not be applied", shard=s) from None
                except ray.exceptions.RayActorError as e:
                    self._lost(s, m)
                    if applied is None:
                        raise ShardError(f"shard {s}'s primary died during a write ({type(e).__name__}): it may or "
                                         f"may not be applied", shard=s) from None
                    m = self._primary(s)
                    try:
                        done = ray.get(m.actor.applied.remote(*applied), timeout=self.timeout)
                    except ray.exceptions.RayActorError:
                        continue
                    except ray.exceptions.RayTaskError as e2:
                        raise _unwrap(e2) from None
                    if done is not None:  # the dead primary logged it: it stands
                        self._event(f"shard {s}: a write the dead primary had logged stands")
                        res, pos = done, ray.get(m.actor.position.remote(), timeout=self.timeout)
                    else:
                        ref = m.actor.write.remote(*args, **kwargs)
                        continue
                except ray.exceptions.RayTaskError as e:
                    raise _unwrap(e) from None
                with self._lock:
                    g = self._groups[s]
                    if g.at is None or g.at[0] != pos[0] or g.at[1] < pos[1]:
                        g.at = pos
                out[s] = res
                break
            else:
                raise ShardError(f"shard {s}: the write failed on three primaries", shard=s)
        return out

    def status(self) -> list[list[dict]]:
        """Per shard, its copies: ``role`` ("primary" / "replica"), ``alive``, ``ready``
        (started and in the rotation), ``node`` (Ray's node id, None when it does not
        answer) and ``position`` (snapshot, acknowledged writes applied)."""
        self._poll()
        out = []
        for i, g in enumerate(self._groups):
            rows = []
            for m in list(g.members):
                info = {"role": m.role, "alive": m.alive, "ready": m.ready, "node": None, "position": None}
                if m.alive and m.ready:
                    try:
                        info["node"], info["position"] = ray.get([m.actor.node.remote(), m.actor.position.remote()],
                                                                 timeout=self.timeout or 30)
                    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                        info["alive"] = False
                rows.append(info)
            out.append(rows)
        return out

    @property
    def events(self) -> list[tuple[float, str]]:
        """What happened to the copies (deaths, promotions, replacements serving), newest
        last: (unix time, text); the last 200."""
        return list(self._events)

    def wait_replicas(self, timeout: float = 120.0) -> None:
        """Wait until every shard has all its copies started (after a failure: the
        replacements serve); ShardError past ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self._poll()
            with self._lock:
                short = [i for i, g in enumerate(self._groups)
                         if sum(m.alive and m.ready for m in g.members) < self.replicas]
            if not short:
                return
            if time.monotonic() > deadline:
                raise ShardError(f"shards {short} lack copies after {timeout:g} s", shard=short[0])
            time.sleep(0.05)

    def _shards_of_ids(self, ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """(ids as uint64, the shard holding each), read as Engine reads ids; NotFoundError
        naming the first unknown one (an integer no item can have included)."""
        arr, impossible = id_array(ids, "ids", QueryError)
        where = np.full(len(arr), -1, np.int64)
        for i, has in enumerate(self._owned(arr)):
            where[np.asarray(has, bool)] = i
        where[list(impossible)] = -1
        if (where < 0).any():
            i = int(np.flatnonzero(where < 0)[0])
            raise NotFoundError(f"id {shown(impossible.get(i, int(arr[i])))} is not in the store")
        return arr, where

    def _owned(self, arr: np.ndarray) -> list[np.ndarray]:
        """Per shard, whether each id is there and its own (not a copy left by a re-sharding)."""
        lay = self._layout
        got = self._reads({s: ("owned", (arr, lay.own_ranges(s)), {}) for s in range(lay.n)})
        return [got[s] for s in range(lay.n)]

    def __len__(self) -> int:
        return sum(self.shard_sizes())

    def __repr__(self) -> str:
        return f"ShardedEngine(n_shards={self.n_shards}, dim={self.dim}, metric={self.metric!r})"

    def shard_sizes(self) -> list[int]:
        """Items per shard (those it owns)."""
        lay = self._layout
        got = self._reads({s: ("owned_count", (lay.own_ranges(s),), {}) for s in range(lay.n)})
        return [got[s] for s in range(lay.n)]

    @property
    def metadata(self) -> dict[str, str]:
        """The user metadata columns and their kinds (:attr:`Engine.metadata
        <chrono_engine.Engine.metadata>`), declared on every shard (a new dict)."""
        return {k: v for k, v in self._kinds.items() if k != HIDDEN}

    def _declare(self, kinds: dict[str, str], shards: list[int] | None = None) -> None:
        """Declare ``kinds`` (in order) on ``shards`` (None: every one)."""
        shards = list(range(self.n_shards)) if shards is None else shards
        if kinds and shards:
            with self._lock:  # every copy, those still starting too (their calls queue)
                targets = [(s, m) for s in shards for m in self._groups[s].members if m.alive]
            refs = [m.actor.declare.remote(kinds) for _, m in targets]
            for (s, m), ref in zip(targets, refs):
                try:
                    ray.get(ref, timeout=self.timeout)
                except ray.exceptions.RayActorError:
                    if self._path is None:
                        raise self._dead_error(s, RuntimeError("dead")) from None
                    self._lost(s, m)  # its replacement is started with every column declared
                except ray.exceptions.RayTaskError as e:
                    raise _unwrap(e) from None
        self._kinds.update(kinds)

    def _adopt(self, shard: int) -> None:
        """Metadata columns ``shard`` added on its own (a supersede's new columns) declared on
        the other shards too."""
        have = self._wait([self._primary(shard).actor.kinds.remote()], [shard])[0]
        new = {name: have[name] for name in have if name not in self._kinds}
        self._declare(new, [s for s in range(self.n_shards) if s != shard])

    # ------------------------------------------------------------------ ingest
    def ingest(self, rows: Any, *, order: str = "auto") -> np.ndarray:
        """:meth:`Engine.ingest <chrono_engine.Engine.ingest>`: the batch is validated on the
        driver (a SchemaError names the batch's own row), given global ids (numbering the
        rows in the order one engine would store them, or its ``id`` column, checked
        against every shard) and one ``ingested_at`` (now, unless given), then split by
        placement; each shard stores its part in the order one engine would store the
        batch under ``order`` (``Engine.ingest``'s: ``"auto"``, ``"valid_from"`` or
        ``"input"``). Returns the ids."""
        ingest_order(order)
        rows = embed_content(self.embedder, rows)
        if HIDDEN in columns_of(rows):
            raise SchemaError(f"column {HIDDEN!r} is reserved by ShardedEngine (each item's placement key)",
                              column=HIDDEN, rule="unknown column")
        with self._write_lock:
            return self._ingest(rows, order)

    def _ingest(self, rows: Any, order: str) -> np.ndarray:
        now = now_us()
        batch = normalize_rows(rows, dim=self.dim, metric=self.metric, known_fact_type=self.decay.knows, now_us=now,
                               metadata=self._kinds)
        raw = {k: v for k, v in columns_of(rows).items() if not re.fullmatch(r"__index_level_\d+__", str(k))}
        n = batch.n
        perm = storage_order(batch.valid_from, order)  # None: stored as given
        if batch.ids is not None:
            ids = np.asarray(batch.ids, np.uint64)
            held = np.zeros(n, bool)
            for has in self._all("contains", ids):  # a copy a re-sharding left counts: ids stay unique
                held |= np.asarray(has, bool)
            if held.any():
                i = int(np.flatnonzero(held)[0])
                raise QueryError(f"column 'id', row {i}: id {int(ids[i])} is already in the store")
        else:
            ids = np.arange(self._next_id, self._next_id + n, dtype=np.uint64)
            if perm is not None:  # as one engine numbers the rows it stores by valid_from
                ids[perm] = ids.copy()
            raw["id"] = ids
        if "ingested_at" not in raw:
            raw["ingested_at"] = np.full(n, now, np.int64)
        new = {name: kind for name, (kind, _) in batch.metadata.items() if name not in self._kinds}
        if len(self._kinds) + len(new) > MAX_COLUMNS:
            raise SchemaError(f"the store would hold {len(self._kinds) + len(new)} metadata columns; at most "
                              f"{MAX_COLUMNS} (unknown column)", rule="unknown column")
        self._declare(new)  # on every shard, before any part: a shard whose rows all lack it reads null
        place, keys = self._layout.place(batch.stem_id, ids)
        if keys is not None:
            raw[HIDDEN] = keys
        stored = np.arange(n) if perm is None else perm  # the rows in the order one engine stores them
        parts = {}
        for s in range(self._layout.n):
            src = stored[place[stored] == s]
            if len(src):  # each part in that order already: the shard stores it as given
                parts[s] = ({name: _take(name, col, src) for name, col in raw.items()}, ids[src])
        self._writes({s: (("ingest", part), {"order": "input"}, (part_ids,)) for s, (part, part_ids)
                      in parts.items()})
        self._next_id = max(self._next_id, int(ids.max()) + 1)
        return ids

    # ------------------------------------------------------------------ search
    def search_batch(self, vectors: Any, k: int = 10, options: Any = None, *, threads: int | None = None,
                     **kwargs: Any) -> pa.Table:
        """:meth:`Engine.search_batch <chrono_engine.Engine.search_batch>` over every shard:
        the options and query vectors are checked on the driver and the query times
        resolved there once (so every shard scores at the same T and known_at); each shard
        returns its exact top-k and the lists are merged by (score desc, id asc) into the
        global top-k, with ``certified`` true for a query only when every shard's was."""
        opts = _search.SearchOptions.of(options, **kwargs)
        _refuse_hidden(opts)
        q = _search.query_vectors(vectors, self.dim, self.metric)
        k = count(k, "k", lo=1, hi=K_MAX, error=QueryError)
        nq = q.shape[0]
        t, ka, ws, we = _search.query_times(opts, nq, now_us())
        fixed = {"as_of": t, "known_at": ka, "verify": None}
        if opts.mode == "window":
            fixed["window"] = (ws, we)
        sub = _search.SearchOptions.of(opts, **fixed)
        lay = self._layout  # one layout for the whole call
        subs = {s: _owned_options(sub, lay.owner_where(s)) for s in range(lay.n)}
        kw = {} if threads is None else {"threads": threads}
        table = self._two_phase(q, k, subs, kw, nq) if self.merge == "two_phase" else None
        if table is None:
            got = self._reads({s: ("run", ("search_batch", q, k, subs[s]), kw) for s in subs})
            parts = [got[s] for s in subs]
            self.received_bytes += sum(p.nbytes for p in parts)
            table = _merge(_concat(parts, self._kinds), nq, k)
        table = _public(table)
        if opts.verify is not None:
            table = _search.gate(table, opts.verify, nq)
        return table

    def _two_phase(self, q: np.ndarray, k: int, subs: dict, kw: dict, nq: int) -> pa.Table | None:
        """Each shard's top-k keys (query, score, id, rank, certified) first, merged here; then
        only the final k rows per query from the copies that hold them, so the bytes back
        per query are shards x k keys plus k rows, not shards x k rows. None when a copy died
        between the phases (the caller searches again in one phase)."""
        call = os.urandom(12).hex()
        answered: dict = {}
        shards = list(subs)
        keys = self._reads({s: ("search_keys", (call, q, k, subs[s]), kw) for s in shards}, answered)
        parts = [keys[s].append_column("shard", pa.array(np.full(keys[s].num_rows, s, np.int32))) for s in shards]
        self.received_bytes += sum(p.nbytes for p in parts)
        merged = _merge(pa.concat_tables(parts), nq, k)
        shard = merged.column("shard").to_numpy()
        row = merged.column("row").to_numpy()
        refs = {}
        for s in shards:  # every copy drops its kept table, even with no row kept
            refs[s] = answered[s].actor.take_rows.remote(call, row[shard == s])
        taken = {}
        for s, ref in refs.items():
            try:
                taken[s] = ray.get(ref, timeout=self.timeout)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                taken[s] = None
            except ray.exceptions.RayTaskError as e:
                raise _unwrap(e) from None
        if any(t is None for t in taken.values()):
            self._event("a copy died between the phases of a search: searched again in one phase")
            return None
        self.received_bytes += sum(t.nbytes for t in taken.values())
        table = _concat([taken[s] for s in shards], self._kinds)
        # the taken rows, shard after shard, back in the merged order
        starts = np.concatenate([[0], np.cumsum([taken[s].num_rows for s in shards])])
        order = np.empty(len(shard), np.int64)
        for i, s in enumerate(shards):
            sel = np.flatnonzero(shard == s)
            order[sel] = starts[i] + np.arange(len(sel))
        table = table.take(pa.array(order))
        table = table.set_column(table.column_names.index("rank"), "rank", merged.column("rank"))
        return table.set_column(table.column_names.index("certified"), "certified", merged.column("certified"))

    def search(self, vector: Any, k: int = 10, options: Any = None, **kwargs: Any) -> pa.Table:
        """:meth:`Engine.search <chrono_engine.Engine.search>`: one query through
        :meth:`search_batch`, without the ``query`` column."""
        try:
            v = as_float32(vector)
        except (TypeError, ValueError):
            raise QueryError(f"vector must be {self.dim} numbers, got {type(vector).__name__} {shown(vector)}") from None
        if v.shape != (self.dim,):
            raise QueryError(f"vector must be 1-D of length {self.dim}, got shape {v.shape}")
        return self.search_batch(v[None, :], k, options, **kwargs).drop_columns(["query"])

    def query(self, text: str, k: int = 5, *, now: Any = None, tz: Any = None, embed: Any = None,
              lang: str | None = None, embed_text: str = "full", distinct: bool = True, undated: str = "auto",
              window_fit: float | None = _search.WINDOW_FIT_DAYS, options: Any = None, **kwargs: Any) -> Any:
        """:meth:`Engine.query <chrono_engine.Engine.query>`: the question's intent and
        embedding on the driver, its searches through :meth:`search`."""
        return _search.query_text(self.search, self.dim, self.embedder, text, k, now=now, tz=tz, embed=embed,
                                  lang=lang, options=options, overrides=kwargs, embed_text=embed_text,
                                  distinct=distinct, undated=undated, window_fit=window_fit)

    # ------------------------------------------------------------------ lifecycle
    def supersede(self, stem_id: str, rows: Any, effective_at: Any, **kwargs: Any) -> np.ndarray:
        """:meth:`Engine.supersede <chrono_engine.Engine.supersede>` in the stem's shard; the
        new rows get the next global ids (or their own ``id`` column)."""
        if not isinstance(stem_id, str):
            raise QueryError(f"stem_id must be a string, got {shown(stem_id)}")
        raw = dict(columns_of(embed_content(self.embedder, rows)))
        if HIDDEN in raw:
            raise SchemaError(f"column {HIDDEN!r} is reserved by ShardedEngine (each item's placement key)",
                              column=HIDDEN, rule="unknown column")
        with self._write_lock:
            return self._supersede(stem_id, raw, effective_at, **kwargs)

    def _supersede(self, stem_id: str, raw: dict, effective_at: Any, **kwargs: Any) -> np.ndarray:
        s = self._layout.of_stem(stem_id)
        n = len(next(iter(raw.values()))) if raw else 0
        if self._layout.kind == "ranges" and n:
            raw[HIDDEN] = np.full(n, placement_key(stem_id), np.int64)
        if "id" not in raw and n:
            raw["id"] = np.arange(self._next_id, self._next_id + n, dtype=np.uint64)
        given = np.asarray(raw["id"], np.uint64) if "id" in raw and n else None
        ids = np.asarray(self._write(s, "supersede", stem_id, raw, effective_at,
                                     applied=None if given is None else (given,), **kwargs), np.uint64)
        added = [c for c in raw if isinstance(c, str) and c not in COLUMNS and c not in self._kinds]
        if added:  # the stem's shard added them: the others declare them too
            self._adopt(s)
        if len(ids):
            self._next_id = max(self._next_id, int(ids.max()) + 1)
        return ids

    def _by_shard(self, method: str, ids: Any, *args: Any) -> np.ndarray:
        """A per-id lifecycle call (retract, deprecate): every id's shard is found first (an
        unknown id changes nothing), then each shard applies its ids."""
        with self._write_lock:
            arr, where = self._shards_of_ids(ids)
            at = args[-1]  # the event's transaction time, resolved on the driver: a replayed write shows it
            self._writes({s: ((method, arr[where == s], *args), {}, (arr[where == s], at))
                          for s in range(self._layout.n) if (where == s).any()})
        return arr

    def retract(self, ids: Any, at: Any = None) -> np.ndarray:
        """:meth:`Engine.retract <chrono_engine.Engine.retract>` in each id's shard (``at``
        resolved once on the driver)."""
        return self._by_shard("retract", ids, now_us() if at is None else scalar_us(at, "at"))

    def deprecate(self, ids: Any, effective_at: Any = None, at: Any = None) -> np.ndarray:
        """:meth:`Engine.deprecate <chrono_engine.Engine.deprecate>` in each id's shard."""
        return self._by_shard("deprecate", ids, effective_at, now_us() if at is None else scalar_us(at, "at"))

    def history(self, stem_id: str, known_at: Any = None) -> pa.Table:
        """:meth:`Engine.history <chrono_engine.Engine.history>` from the stem's shard."""
        if not isinstance(stem_id, str):
            raise QueryError(f"stem_id must be a string, got {shown(stem_id)}")
        return _public(self._one(self._layout.of_stem(stem_id), "history", stem_id, known_at))

    def get(self, ids: Any, known_at: Any = None) -> pa.Table:
        """:meth:`Engine.get <chrono_engine.Engine.get>`: rows in the order given."""
        arr, where = self._shards_of_ids(ids)
        parts, order = [], []
        for s in range(self._layout.n):
            sel = np.flatnonzero(where == s)
            if len(sel):
                parts.append(self._one(s, "get", arr[sel], known_at))
                order.append(sel)
        table = _concat(parts, self._kinds)
        pos = np.empty(len(arr), np.int64)
        pos[np.concatenate(order)] = np.arange(len(arr))
        return _public(table.take(pa.array(pos)))  # row i of the answer: the id given i-th

    def contains(self, ids: Any) -> np.ndarray:
        """Whether each id is in some shard."""
        out = None
        for has in self._all("contains", ids):  # a copy a re-sharding left holds only ids another shard has
            out = np.asarray(has, bool) if out is None else out | np.asarray(has, bool)
        return out

    # ------------------------------------------------------------------ re-sharding
    def add_shards(self, m: int) -> dict:
        """Grow to ``n_shards + m`` shards, online: each shard gives the tail m / (n + m) of
        every range of placement keys it owns to the new shards, so only the items whose key
        changes owner move (about m / (n + m) of them), each with its whole history
        (:mod:`chrono_engine._transfer`: ids, vectors, both time axes, amendments,
        retractions, metadata), to a new shard only. Writes wait while it runs; reads go on
        and are answered by the old placement until every item is copied, then by the new one
        (the shards that gave items away keep their copies, hidden from every read by a filter
        on the placement key, until :meth:`compact`). Returns ``{"moved", "total",
        "fraction", "seconds"}``."""
        lay = self._layout
        if lay.kind != "ranges":
            raise ConfigError("this sharded engine places items by BLAKE2b mod n (format 1, saved before "
                              "placement by ranges): it cannot grow; save its items into a new one")
        m = count(m, "m", lo=1, hi=4096 - lay.n, error=ConfigError)
        t0 = time.monotonic()
        with self._write_lock:
            lay = self._layout
            n = lay.n
            grown, gives = lay.grown(m)
            if self._path is not None:
                for i in range(n, n + m):
                    if (self._path / f"shard-{i}").exists():
                        raise StorageError(f"{self._path / f'shard-{i}'} already exists (a re-sharding that did not "
                                           f"finish?): remove it first")
            kwargs = self._wait([self._primary(0).actor.engine_kwargs.remote()], [0])[0]
            kwargs["metadata"] = dict(self._kinds)
            self.n_shards = n + m  # for _start_groups' count; the layout (what reads use) switches last
            self._stores[n:] = [f"shard-{i}" for i in range(n, n + m)]
            try:
                self._start_groups(m)
                for i in range(n, n + m):
                    g = self._groups[i]
                    if self._path is None:
                        g.members.append(_Member(self._spawn(i, 0, "memory", kwargs=kwargs), 0, "primary"))
                    else:
                        g.members.append(_Member(self._spawn(i, 0, "create", kwargs=kwargs,
                                                             path=self._shard_path(i)), 0, "primary"))
                self._wait([self._groups[i].members[0].actor.position.remote() for i in range(n, n + m)],
                           list(range(n, n + m)))
                for i in range(n, n + m):
                    for j in range(1, self.replicas):
                        self._groups[i].members.append(self._follower(i, j, wait=False))
                moved = 0
                for src, pieces in sorted(gives.items()):
                    targets: dict[int, list] = {}
                    for lo, hi, dst in pieces:
                        targets.setdefault(dst, []).append((lo, hi))
                    for dst, ranges in sorted(targets.items()):
                        payload = self._primary(src).actor.export_ranges.remote(ranges)  # shard to shard
                        ids, pos = self._wait([self._primary(dst).actor.import_rows.remote(payload)], [dst])[0]
                        moved += len(ids)
                        self._groups[dst].at = pos
                self._wait_ready()
            except BaseException:
                self._drop_groups(n)
                raise
            with self._lock:
                self._layout = grown
            if self._path is not None:
                self._write_manifest()
            self._event(f"re-sharded from {n} to {n + m} shards: {moved} items moved")
        total = len(self)
        return {"moved": moved, "total": total, "fraction": moved / total if total else 0.0,
                "seconds": round(time.monotonic() - t0, 3)}

    def compact(self) -> dict:
        """Drop the copies that the shards which gave items away in :meth:`add_shards` still
        hold (hidden from reads by a filter on the placement key, but kept in their memory,
        indexes and stores). Each such shard, one at a time: its primary rewrites it as a new
        engine of the rows it owns, each with its whole history (a new store,
        ``shard-<i>.c<g>``, checkpointed), swaps it in and closes the old one; its replicas
        then follow the new store; the manifest names it (format 3) and the old store is
        removed. Writes wait while it runs; reads go on (answered by the old engine, then the
        new one; both give the same answers: no write is made meanwhile), and the shard's
        reads stop filtering once every copy reads the new store. Returns ``{"dropped",
        "kept", "shards", "seconds"}``: rows dropped and kept in the compacted shards."""
        t0 = time.monotonic()
        dropped = kept = 0
        done = []
        with self._write_lock:
            for s in sorted(self._layout.dirty):
                lay = self._layout
                old_name = self._stores[s]
                new_path = None
                if self._path is not None:
                    gen = int(old_name.split(".c")[1]) + 1 if ".c" in old_name else 1
                    while (self._path / f"shard-{s}.c{gen}").exists():  # a compaction that did not finish
                        gen += 1
                    new_name = f"shard-{s}.c{gen}"
                    new_path = str(self._path / new_name)
                m = self._primary(s)
                # no time limit: a compaction cut off by the driver's timeout could still swap
                # the new store in, unnamed by the manifest
                k, d, pos = self._wait([m.actor.compact.remote(lay.ranges(s), new_path)], [s], timeout=_NO_LIMIT)[0]
                with self._lock:
                    self._groups[s].at = pos
                    if new_path is not None:
                        self._stores[s] = new_name  # copies started from now on read the new store
                    replicas = [x for x in self._groups[s].members if x is not m and x.alive]
                for r in replicas:
                    if not r.ready:  # still starting, from the old store: started again from the new one
                        self._lost(s, r)
                        continue
                    try:
                        self._wait([r.actor.refollow.remote(new_path)], [s])
                    except Exception as e:  # noqa: BLE001 - it does not read the new store: replaced
                        self._event(f"shard {s}: a replica could not follow the compacted store "
                                    f"({type(e).__name__}): started again")
                        self._lost(s, r)
                self._wait_ready([x for x in self._groups[s].members if x.alive and not x.ready])
                with self._lock:
                    self._layout = self._layout.cleaned(s)
                if self._path is not None:
                    self._write_manifest()
                    shutil.rmtree(self._path / old_name, ignore_errors=True)
                dropped += d
                kept += k
                done.append(s)
                self._event(f"shard {s}: compacted ({d} rows it gave away dropped, {k} kept)")
        return {"dropped": dropped, "kept": kept, "shards": done, "seconds": round(time.monotonic() - t0, 3)}

    def _drop_groups(self, keep: int) -> None:
        """Stop the shards from ``keep`` on (a re-sharding that failed) and remove their stores."""
        with self._lock:
            extra = self._groups[keep:]
            del self._groups[keep:]
            self.n_shards = keep
        for i, g in enumerate(extra, keep):
            for mem in g.members:
                try:
                    ray.kill(mem.actor)
                except Exception:  # noqa: BLE001
                    pass
            if g.pg is not None:
                from ray.util.placement_group import remove_placement_group
                try:
                    remove_placement_group(g.pg)
                except Exception:  # noqa: BLE001
                    pass
            if self._path is not None:
                shutil.rmtree(self._path / self._stores[i], ignore_errors=True)
        del self._stores[keep:]

    # ------------------------------------------------------------------ persistence
    def _write_manifest(self, root: Path | None = None) -> None:
        root = self._path if root is None else root
        lay = self._layout
        manifest = {"format": _FORMAT if lay.kind == "ranges" else 1, "n_shards": lay.n, **lay.manifest(),
                    "next_id": self._next_id}
        if root == self._path and self._stores != [f"shard-{i}" for i in range(lay.n)]:
            # a compacted shard's store has another name: code that reads only format 2
            # (which would open shard-<i>) refuses the manifest instead
            manifest["format"] = _FORMAT_STORES
            manifest["stores"] = list(self._stores)
        tmp = root / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(tmp, root / MANIFEST)

    def checkpoint(self) -> None:
        """Each shard's primary checkpoints its store (:meth:`Engine.save
        <chrono_engine.Engine.save>` in place: a new snapshot, its log empty; replicas load it
        on their next read), then the manifest is written again. Only for a sharded engine
        with a store (``path=`` or :meth:`open`)."""
        if self._path is None:
            raise StorageError("checkpoint() needs a sharded engine with a store (path=, or ShardedEngine.open)")
        with self._write_lock:
            self._writes({s: (("save",), {}, None) for s in range(self._layout.n)})
            self._write_manifest()

    def save(self, path: str | os.PathLike) -> None:
        """Each shard saves its store to ``path/shard-<i>``, then the manifest
        (``path/sharded.json``: shard count, placement, next id) is written
        atomically, last: a directory without it is not a saved sharded engine. The engine's
        own path (``path=`` or :meth:`open`'s): :meth:`checkpoint`."""
        root = Path(os.path.abspath(path))  # the actors do not run in this working directory
        if self._path is not None and root == self._path:
            self.checkpoint()
            return
        root.mkdir(parents=True, exist_ok=True)
        with self._write_lock:
            self._writes({s: (("save", str(root / f"shard-{s}")), {}, None) for s in range(self._layout.n)})
            self._write_manifest(root)

    @classmethod
    def open(cls, path: str | os.PathLike, *, cpus_per_shard: float = 1.0, threads: int | None = 1,
             embedder: Any = None, timeout: float | None = None, replicas: int = 1,
             fsync: str = "call", merge: str = "two_phase") -> ShardedEngine:
        """A sharded engine saved by :meth:`save` (or made with ``path=``): each shard's
        primary opens its store for writing (:meth:`Engine.open
        <chrono_engine.Engine.open>`, every check of a single store) and ``replicas - 1``
        followers of it start; writes go to the stores' logs."""
        root = Path(os.path.abspath(path))  # the actors do not run in this working directory
        try:
            manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StorageError(f"{root} is not a saved sharded engine (no {MANIFEST})") from None
        except (OSError, ValueError) as e:
            raise StorageError(f"{root / MANIFEST}: cannot read the manifest ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") not in (1, _FORMAT, _FORMAT_STORES):
            raise StorageError(f"{root / MANIFEST}: not a format-1, -{_FORMAT} or -{_FORMAT_STORES} manifest")
        n, next_id = manifest.get("n_shards"), manifest.get("next_id")
        if type(n) is not int or not 1 <= n <= 4096 or type(next_id) is not int or next_id < 0:
            raise StorageError(f"{root / MANIFEST}: bad n_shards or next_id")
        stores = [f"shard-{i}" for i in range(n)]
        if manifest.get("format") == _FORMAT_STORES:
            got = manifest.get("stores")
            if not (isinstance(got, list) and len(got) == n and all(
                    type(x) is str and _STORE_NAME.fullmatch(x) and x.split(".")[0] == f"shard-{i}"
                    for i, x in enumerate(got))):
                raise StorageError(f"{root / MANIFEST}: bad stores (one name per shard: shard-<i> or shard-<i>.c<g>)")
            stores = got
        for i in range(n):
            if not (root / stores[i]).is_dir():
                raise StorageError(f"{root}: {stores[i]} is missing (the manifest names {n} shards)")
        layout = _Layout.from_manifest(manifest, n, str(root / MANIFEST))
        r = cls._replication(replicas, root, fsync)
        self = cls.__new__(cls)
        self._setup(n, cpus_per_shard, timeout, embedder, r, root, fsync, merge)
        self._layout = layout
        self._stores = list(stores)
        self._threads = thread_count(threads, "threads", ConfigError)
        self._kinds = {}
        self._start_groups()

        def first() -> list:
            for i in range(n):
                actor = self._spawn(i, 0, "open", path=self._shard_path(i), threads=self._threads)
                self._groups[i].members.append(_Member(actor, 0, "primary"))
            # writes after the save went to the shards' logs (each store was opened for writing)
            return self._wait([self._groups[i].members[0].actor.next_id.remote() for i in range(n)])
        ends = self._started(first)
        self._next_id = max([next_id, *ends])
        self.dim, self.metric, self.decay = self._wait([self._actors[0].settings.remote()], [0])[0]
        # a column declared on a shard after its last save, that none of its rows carry, is
        # not in its log: declare again what any shard has on every shard that lacks it
        per = self._wait([a.kinds.remote() for a in self._actors])
        for i, kinds in enumerate(per):
            for name, kind in kinds.items():
                if self._kinds.setdefault(name, kind) != kind:
                    self.shutdown()
                    raise StorageError(f"{root}: metadata column {name!r} is {self._kinds[name]} in one shard and "
                                       f"{kind} in shard-{i}")
        if layout.kind == "ranges":
            self._kinds = {HIDDEN: "int64", **{k: v for k, v in self._kinds.items() if k != HIDDEN}}
        for i, kinds in enumerate(per):
            lack = {name: kind for name, kind in self._kinds.items() if name not in kinds}
            if lack:
                self._wait([self._actors[i].declare.remote(lack)], [i])

        def followers() -> None:
            for i in range(n):
                for j in range(1, r):
                    self._groups[i].members.append(self._follower(i, j, wait=False))
            self._wait_ready()
        self._started(followers)
        return self

    def shutdown(self) -> None:
        """Stop every shard actor (an engine without a store loses its writes: :meth:`save`
        first) and wait (up to 10 s) until Ray has their CPUs back, so that the next engine
        can start at once."""
        with self._lock:
            members = [m for g in self._groups for m in g.members]
            pgs = [g.pg for g in self._groups if g.pg is not None]
            self._groups = []
        held = (len(members) if not pgs else 0) * self._cpus + sum(self.replicas for _ in pgs) * self._cpus
        free = ray.available_resources().get("CPU", 0.0)
        for m in members:
            try:
                ray.kill(m.actor)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if pgs:
            from ray.util.placement_group import remove_placement_group
            for pg in pgs:
                try:
                    remove_placement_group(pg)
                except Exception:  # noqa: BLE001
                    pass
        deadline = time.monotonic() + 10.0
        while held and ray.available_resources().get("CPU", 0.0) < free + held - 1e-9 and time.monotonic() < deadline:
            time.sleep(0.05)


def _concat(parts: list[pa.Table], kinds: dict[str, str]) -> pa.Table:
    """The shards' tables as one: the first one's columns, its metadata columns in the
    order of ``kinds`` (every shard holds the same metadata columns, though not always in
    one order after :meth:`ShardedEngine.open` declared again those a shard's log lacked);
    a column a table lacks (none should) is null there."""
    types: dict[str, pa.DataType] = {}
    for p in parts:
        for f in p.schema:
            types.setdefault(f.name, f.type)
    names = list(types)
    order = {name: i for i, name in enumerate(kinds)}
    slots = [i for i, name in enumerate(names) if name in order]
    for i, name in zip(slots, sorted((names[i] for i in slots), key=order.__getitem__)):
        names[i] = name
    out = []
    for p in parts:
        if p.column_names != names:
            p = pa.table([p.column(n) if n in p.column_names else pa.nulls(p.num_rows, types[n]) for n in names],
                         names=names)
        out.append(p)
    return pa.concat_tables(out)


def _merge(table: pa.Table, nq: int, k: int) -> pa.Table:
    """Every shard's top-k per query -> the global top-k: sorted by (query, score desc, id
    asc), the first k of each query kept, ranks renumbered; ``certified`` per query is
    true only when every shard's answer for it was."""
    if table.num_rows == 0:
        return table
    qcol = table.column("query").to_numpy()
    cert = table.column("certified").to_numpy(zero_copy_only=False)
    all_cert = np.ones(nq, bool)
    np.logical_and.at(all_cert, qcol, cert)
    table = table.sort_by([("query", "ascending"), ("score", "descending"), ("id", "ascending")])
    qs = table.column("query").to_numpy()
    first = np.searchsorted(qs, qs, side="left")
    rank = np.arange(len(qs)) - first + 1
    keep = np.flatnonzero(rank <= k)
    table = table.take(pa.array(keep))
    table = table.set_column(table.column_names.index("rank"), "rank", pa.array(rank[keep].astype(np.int32)))
    qk = qs[keep]
    return table.set_column(table.column_names.index("certified"), "certified", pa.array(all_cert[qk]))


def _public(table: pa.Table) -> pa.Table:
    """A result table without the hidden placement key column."""
    return table.drop_columns([HIDDEN]) if HIDDEN in table.column_names else table


def _mentions(spec: Any, name: str) -> bool:
    if isinstance(spec, dict):
        return name in spec or any(_mentions(v, name) for v in spec.values())
    if isinstance(spec, (list, tuple)):
        return any(_mentions(v, name) for v in spec)
    return False


def _refuse_hidden(opts: Any) -> None:
    """A filter or column list naming the hidden placement key is refused as one engine
    refuses an unknown field."""
    if opts.where is not None and _mentions(opts.where.spec, HIDDEN):
        raise QueryError(f"where: {HIDDEN!r} is reserved by ShardedEngine (unknown field)")
    if opts.columns is not None and HIDDEN in opts.columns:
        raise QueryError(f"columns: {HIDDEN!r} is reserved by ShardedEngine")


def _owned_options(sub: Any, owner: dict | None) -> Any:
    """A shard's options: ``sub``, its ``where`` ANDed with the shard's own keys when it
    still holds rows a re-sharding moved away."""
    if owner is None:
        return sub
    where = owner if sub.where is None else {"$and": [sub.where.spec, owner]}
    return _search.SearchOptions.of(sub, where=where)
