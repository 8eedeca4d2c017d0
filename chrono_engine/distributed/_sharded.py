"""A sharded engine on Ray actors: N :class:`~chrono_engine.Engine` shards, items placed by
stem, the single engine's calls routed or fanned out (docs/distributed.md).

Placement: an item goes to shard ``shard_of(stem_id, n)`` = the first 8 bytes of
BLAKE2b(stem_id, UTF-8) as a little-endian integer, mod n; an item without a stem to
``id mod n``. A lineage (every version of a stem) therefore lives in one shard, so
arbitration, supersede, retract and history run there unchanged. The placement depends on
the stem and n only: stable across runs, machines and Python versions.

Ids are global: the driver assigns them (0, 1, 2, ... in the order one engine stores the
rows, see ``Engine.ingest``'s ``order``, or the rows' own ``id`` column) and each shard
stores them as given, so every shard's top-k list is ordered by (score, global id) and the
merge of the lists is the single engine's answer exactly (certified when every shard's was).

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
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._args import K_MAX, as_float32, count, id_array, shown, thread_count
from .._state import embed_content, ingest_order, storage_order
from .._time import now_us
from ..errors import ConfigError, NotFoundError, QueryError, SchemaError, ShardError, StorageError
from ..grounding import _take
from ..metadata import MAX_COLUMNS
from ..schema import COLUMNS, columns_of, normalize_rows
from .. import search as _search
from .._util import import_extra

ray = import_extra("ray", "ray", "chrono_engine.distributed.ShardedEngine")

__all__ = ["ShardedEngine", "shard_of"]

#: the manifest of a saved sharded engine (beside its shard stores shard-0, shard-1, ...)
MANIFEST = "sharded.json"
_FORMAT = 1
#: seconds a new sharded engine waits for enough free CPUs before it is refused
_FREE_WAIT = 10.0


def shard_of(stem_id: str | None, n: int, id_: int = 0) -> int:
    """The shard of an item: BLAKE2b-64 of its stem (UTF-8) mod ``n``; ``id_`` mod ``n``
    for an item without a stem."""
    if stem_id is None:
        return int(id_) % n
    h = hashlib.blake2b(stem_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(h, "little") % n


@ray.remote
class _Shard:
    """One Engine in an actor; every call is ``run(method, *args, **kwargs)``."""

    def __init__(self, kwargs: dict | None = None, path: str | None = None, threads: int | None = None):
        from chrono_engine import Engine
        self.eng = Engine.open(path, threads=threads) if path is not None else Engine(**kwargs)

    def run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.eng, method)(*args, **kwargs)

    def size(self) -> int:
        return len(self.eng)

    def settings(self) -> tuple:
        """(dim, metric, decay policy) of the shard's engine."""
        return self.eng.dim, self.eng.metric, self.eng.decay

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
        return st.user_kinds()


class ShardedEngine:
    """N engine shards in Ray actors behind the single :class:`~chrono_engine.Engine`'s API.

    ``ShardedEngine(n_shards, dim, metric, decay, **engine_kwargs)`` starts ``n_shards``
    actors (``cpus_per_shard`` CPUs each in Ray's accounting; ``threads`` per shard engine),
    each holding an ``Engine(dim, metric, decay, **engine_kwargs)``; ``ray.init()`` must
    have run (or Ray starts a local instance on first use). ``embedder`` stays on the
    driver (rows without vectors and :meth:`query` are embedded there). ``timeout``: the
    most seconds a call waits for its shards (None: no limit).

    Calls and results are the single engine's: :meth:`ingest` (validated on the driver
    first, with the batch's row numbers, then split by placement; ids global),
    :meth:`search` / :meth:`search_batch` (times resolved once on the driver, every shard's
    exact top-k merged; the ``verify`` gate applied after the merge), :meth:`query`,
    :meth:`supersede`, :meth:`retract`, :meth:`deprecate`, :meth:`history`, :meth:`get`,
    :meth:`contains`, :meth:`save` and :meth:`open`. A shard that died (or a call past
    ``timeout``) is a :class:`~chrono_engine.errors.ShardError` naming it; restart from the
    last save with :meth:`open`.

    Metadata columns (``metadata=`` declarations, or a batch's columns beyond the engine's)
    are declared on every shard, so ``where=`` filters and ``columns=`` work as on one
    engine: a column only some shards' rows carry reads null in the others.
    """

    def __init__(self, n_shards: int, dim: int, metric: str = "cosine", decay: Any = None, *,
                 cpus_per_shard: float = 1.0, threads: int | None = 1, embedder: Any = None,
                 timeout: float | None = None, **engine_kwargs: Any) -> None:
        n = count(n_shards, "n_shards", lo=1, hi=4096, error=ConfigError)
        self._setup(n, cpus_per_shard, timeout, embedder)
        kwargs = dict(dim=dim, metric=metric, decay=decay, threads=thread_count(threads, "threads", ConfigError),
                      **engine_kwargs)
        from chrono_engine import Engine
        probe = Engine(**kwargs)  # checks every argument here, with the single engine's errors
        self.dim, self.metric, self.decay = probe.dim, probe.metric, probe.decay
        self._kinds = probe.metadata  # every shard's metadata columns, in their order
        actor = self._actor()
        self._actors = [actor.remote(kwargs=kwargs) for _ in range(n)]
        self._next_id = 0
        self._started(lambda: self._wait([a.size.remote() for a in self._actors]))  # up, or say why not

    def _setup(self, n: int, cpus: float, timeout: float | None, embedder: Any) -> None:
        if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not 0 < cpus <= 1024:
            raise ConfigError(f"cpus_per_shard must be a number in (0, 1024], got {shown(cpus)}")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not timeout > 0):
            raise ConfigError(f"timeout must be a positive number of seconds or None, got {shown(timeout)}")
        self.n_shards, self._cpus, self.timeout, self.embedder = n, float(cpus), timeout, embedder

    def _started(self, first_call: Any) -> Any:
        """``first_call()`` on the new actors; if a shard fails to start, the others are
        stopped too (their CPUs go back to Ray) before the error is raised."""
        try:
            return first_call()
        except BaseException:
            self.shutdown()
            raise

    def _actor(self):
        """The shard actor class with its CPUs; refuses (instead of waiting forever for) a set
        of shards the cluster's free CPUs cannot hold within ``_FREE_WAIT`` seconds (Ray frees
        the CPUs of finished jobs' actors asynchronously)."""
        if not ray.is_initialized():
            ray.init()
        need = self.n_shards * self._cpus
        deadline = time.monotonic() + _FREE_WAIT
        while (free := ray.available_resources().get("CPU", 0.0)) < need - 1e-9 and time.monotonic() < deadline:
            time.sleep(0.1)
        if need > free + 1e-9:
            total = ray.cluster_resources().get("CPU", 0.0)
            raise ConfigError(f"{self.n_shards} shards of {self._cpus:g} CPU(s) need {need:g} CPUs; the Ray cluster has "
                              f"{free:g} free of {total:g} (shut other actors down, or lower cpus_per_shard)")
        return _Shard.options(num_cpus=self._cpus)

    # ------------------------------------------------------------------ plumbing
    def _wait(self, refs: list, shards: list[int] | None = None) -> list:
        """Results of one call per shard (in ``shards`` order); a dead shard or a call past
        the timeout is a ShardError naming the shard; an engine error comes back as raised."""
        shards = list(range(len(refs))) if shards is None else shards
        out = []
        for i, ref in zip(shards, refs):
            try:
                out.append(ray.get(ref, timeout=self.timeout))
            except ray.exceptions.GetTimeoutError:
                raise ShardError(f"shard {i} did not answer within {self.timeout} s", shard=i) from None
            except ray.exceptions.RayActorError as e:  # ActorDiedError among them
                if getattr(e, "actor_init_failed", False):  # its engine did not start: Ray's text ends with why
                    why = (getattr(e, "error_msg", "") or str(e)).strip().splitlines()[-1]
                    raise ShardError(f"shard {i} could not start: {why[:500]}", shard=i) from None
                raise ShardError(f"shard {i} is dead ({type(e).__name__}); restart from the last save with "
                                 f"ShardedEngine.open(path)", shard=i) from None
            except ray.exceptions.RayTaskError as e:
                cause = e.as_instanceof_cause()
                raise (cause.cause if getattr(cause, "cause", None) is not None else cause) from None
        return out

    def _all(self, method: str, *args: Any, **kwargs: Any) -> list:
        return self._wait([a.run.remote(method, *args, **kwargs) for a in self._actors])

    def _one(self, shard: int, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._wait([self._actors[shard].run.remote(method, *args, **kwargs)], [shard])[0]

    def _shards_of_ids(self, ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """(ids as uint64, the shard holding each), read as Engine reads ids; NotFoundError
        naming the first unknown one (an integer no item can have included)."""
        arr, impossible = id_array(ids, "ids", QueryError)
        where = np.full(len(arr), -1, np.int64)
        for i, has in enumerate(self._all("contains", arr)):
            where[np.asarray(has, bool)] = i
        where[list(impossible)] = -1
        if (where < 0).any():
            i = int(np.flatnonzero(where < 0)[0])
            raise NotFoundError(f"id {shown(impossible.get(i, int(arr[i])))} is not in the store")
        return arr, where

    def __len__(self) -> int:
        return sum(self.shard_sizes())

    def __repr__(self) -> str:
        return f"ShardedEngine(n_shards={self.n_shards}, dim={self.dim}, metric={self.metric!r})"

    def shard_sizes(self) -> list[int]:
        """Items per shard."""
        return self._wait([a.size.remote() for a in self._actors])

    @property
    def metadata(self) -> dict[str, str]:
        """The user metadata columns and their kinds (:attr:`Engine.metadata
        <chrono_engine.Engine.metadata>`), declared on every shard (a new dict)."""
        return dict(self._kinds)

    def _declare(self, kinds: dict[str, str], shards: list[int] | None = None) -> None:
        """Declare ``kinds`` (in order) on ``shards`` (None: every one)."""
        shards = list(range(self.n_shards)) if shards is None else shards
        if kinds and shards:
            self._wait([self._actors[s].declare.remote(kinds) for s in shards], shards)
        self._kinds.update(kinds)

    def _adopt(self, shard: int) -> None:
        """Metadata columns ``shard`` added on its own (a supersede's new columns) declared on
        the other shards too."""
        have = self._wait([self._actors[shard].kinds.remote()], [shard])[0]
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
        now = now_us()
        batch = normalize_rows(rows, dim=self.dim, metric=self.metric, known_fact_type=self.decay.knows, now_us=now,
                               metadata=self._kinds)
        raw = {k: v for k, v in columns_of(rows).items() if not re.fullmatch(r"__index_level_\d+__", str(k))}
        n = batch.n
        perm = storage_order(batch.valid_from, order)  # None: stored as given
        if batch.ids is not None:
            ids = np.asarray(batch.ids, np.uint64)
            held = np.zeros(n, bool)
            for has in self._all("contains", ids):
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
        stems = batch.stem_id
        place = np.array([shard_of(s, self.n_shards, int(i)) for s, i in zip(stems, ids)], np.int64)
        stored = np.arange(n) if perm is None else perm  # the rows in the order one engine stores them
        refs, shards = [], []
        for s in range(self.n_shards):
            src = stored[place[stored] == s]
            if len(src):  # each part in that order already: the shard stores it as given
                part = {name: _take(name, col, src) for name, col in raw.items()}
                refs.append(self._actors[s].run.remote("ingest", part, order="input"))
                shards.append(s)
        self._wait(refs, shards)
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
        q = _search.query_vectors(vectors, self.dim, self.metric)
        k = count(k, "k", lo=1, hi=K_MAX, error=QueryError)
        nq = q.shape[0]
        t, ka, ws, we = _search.query_times(opts, nq, now_us())
        fixed = {"as_of": t, "known_at": ka, "verify": None}
        if opts.mode == "window":
            fixed["window"] = (ws, we)
        sub = _search.SearchOptions.of(opts, **fixed)
        kw = {} if threads is None else {"threads": threads}
        parts = self._all("search_batch", q, k, sub, **kw)
        table = _merge(_concat(parts, self._kinds), nq, k)
        if opts.verify is not None:
            table = _search.gate(table, opts.verify, nq)
        return table

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
        s = shard_of(stem_id, self.n_shards)
        raw = dict(columns_of(embed_content(self.embedder, rows)))
        n = len(next(iter(raw.values()))) if raw else 0
        if "id" not in raw and n:
            raw["id"] = np.arange(self._next_id, self._next_id + n, dtype=np.uint64)
        ids = np.asarray(self._one(s, "supersede", stem_id, raw, effective_at, **kwargs), np.uint64)
        added = [c for c in raw if isinstance(c, str) and c not in COLUMNS and c not in self._kinds]
        if added:  # the stem's shard added them: the others declare them too
            self._adopt(s)
        if len(ids):
            self._next_id = max(self._next_id, int(ids.max()) + 1)
        return ids

    def _by_shard(self, method: str, ids: Any, *args: Any) -> np.ndarray:
        """A per-id lifecycle call (retract, deprecate): every id's shard is found first (an
        unknown id changes nothing), then each shard applies its ids."""
        arr, where = self._shards_of_ids(ids)
        shards = [s for s in range(self.n_shards) if (where == s).any()]
        self._wait([self._actors[s].run.remote(method, arr[where == s], *args) for s in shards], shards)
        return arr

    def retract(self, ids: Any, at: Any = None) -> np.ndarray:
        """:meth:`Engine.retract <chrono_engine.Engine.retract>` in each id's shard (``at``
        resolved once on the driver)."""
        return self._by_shard("retract", ids, now_us() if at is None else at)

    def deprecate(self, ids: Any, effective_at: Any = None, at: Any = None) -> np.ndarray:
        """:meth:`Engine.deprecate <chrono_engine.Engine.deprecate>` in each id's shard."""
        return self._by_shard("deprecate", ids, effective_at, now_us() if at is None else at)

    def history(self, stem_id: str, known_at: Any = None) -> pa.Table:
        """:meth:`Engine.history <chrono_engine.Engine.history>` from the stem's shard."""
        if not isinstance(stem_id, str):
            raise QueryError(f"stem_id must be a string, got {shown(stem_id)}")
        return self._one(shard_of(stem_id, self.n_shards), "history", stem_id, known_at)

    def get(self, ids: Any, known_at: Any = None) -> pa.Table:
        """:meth:`Engine.get <chrono_engine.Engine.get>`: rows in the order given."""
        arr, where = self._shards_of_ids(ids)
        parts, order = [], []
        for s in range(self.n_shards):
            sel = np.flatnonzero(where == s)
            if len(sel):
                parts.append(self._one(s, "get", arr[sel], known_at))
                order.append(sel)
        table = _concat(parts, self._kinds)
        pos = np.empty(len(arr), np.int64)
        pos[np.concatenate(order)] = np.arange(len(arr))
        return table.take(pa.array(pos))  # row i of the answer: the id given i-th

    def contains(self, ids: Any) -> np.ndarray:
        """Whether each id is in some shard."""
        out = None
        for has in self._all("contains", ids):
            out = np.asarray(has, bool) if out is None else out | np.asarray(has, bool)
        return out

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Each shard saves its store to ``path/shard-<i>``, then the manifest
        (``path/sharded.json``: shard count, placement, next id) is written
        atomically, last: a directory without it is not a saved sharded engine."""
        root = Path(os.path.abspath(path))  # the actors do not run in this working directory
        root.mkdir(parents=True, exist_ok=True)
        self._wait([a.run.remote("save", str(root / f"shard-{i}")) for i, a in enumerate(self._actors)])
        manifest = {"format": _FORMAT, "n_shards": self.n_shards, "placement": "blake2b-64(stem_id, utf-8) mod n; "
                    "id mod n without a stem", "next_id": self._next_id}
        tmp = root / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(tmp, root / MANIFEST)

    @classmethod
    def open(cls, path: str | os.PathLike, *, cpus_per_shard: float = 1.0, threads: int | None = 1,
             embedder: Any = None, timeout: float | None = None) -> ShardedEngine:
        """A sharded engine saved by :meth:`save`: one actor per shard opens its store
        (:meth:`Engine.open <chrono_engine.Engine.open>`, every check of a single store)."""
        root = Path(os.path.abspath(path))  # the actors do not run in this working directory
        try:
            manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StorageError(f"{root} is not a saved sharded engine (no {MANIFEST})") from None
        except (OSError, ValueError) as e:
            raise StorageError(f"{root / MANIFEST}: cannot read the manifest ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
            raise StorageError(f"{root / MANIFEST}: not a format-{_FORMAT} manifest")
        n, next_id = manifest.get("n_shards"), manifest.get("next_id")
        if type(n) is not int or not 1 <= n <= 4096 or type(next_id) is not int or next_id < 0:
            raise StorageError(f"{root / MANIFEST}: bad n_shards or next_id")
        for i in range(n):
            if not (root / f"shard-{i}").is_dir():
                raise StorageError(f"{root}: shard-{i} is missing (the manifest names {n} shards)")
        self = cls.__new__(cls)
        self._setup(n, cpus_per_shard, timeout, embedder)
        threads = thread_count(threads, "threads", ConfigError)
        actor = self._actor()
        self._actors = [actor.remote(path=str(root / f"shard-{i}"), threads=threads) for i in range(n)]
        # writes after the save went to the shards' logs (each store was opened for writing)
        ends = self._started(lambda: self._wait([a.next_id.remote() for a in self._actors]))
        self._next_id = max([next_id, *ends])
        self.dim, self.metric, self.decay = self._wait([self._actors[0].settings.remote()], [0])[0]
        # a column declared on a shard after its last save, that none of its rows carry, is
        # not in its log: declare again what any shard has on every shard that lacks it
        per = self._wait([a.kinds.remote() for a in self._actors])
        self._kinds = {}
        for i, kinds in enumerate(per):
            for name, kind in kinds.items():
                if self._kinds.setdefault(name, kind) != kind:
                    raise StorageError(f"{root}: metadata column {name!r} is {self._kinds[name]} in one shard and "
                                       f"{kind} in shard-{i}")
        for i, kinds in enumerate(per):
            lack = {name: kind for name, kind in self._kinds.items() if name not in kinds}
            if lack:
                self._wait([self._actors[i].declare.remote(lack)], [i])
        return self

    def shutdown(self) -> None:
        """Stop the shard actors (their engines' unsaved writes are lost: :meth:`save` first)
        and wait (up to 10 s) until Ray has their CPUs back, so that the next engine can
        start at once."""
        held = len(self._actors) * self._cpus
        free = ray.available_resources().get("CPU", 0.0)
        for a in self._actors:
            ray.kill(a)
        self._actors = []
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
