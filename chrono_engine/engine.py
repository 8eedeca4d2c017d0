"""The Engine: versioned, timestamped evidence beside its vectors, searched by fused
similarity × validity with exact (certified) or graph (approximate) plans.

The Engine is the public face; the work happens in its rooms: :mod:`._state` (the store in
memory and its write path), :mod:`.search` (options, planner arguments, result tables),
:mod:`.lifecycle` (supersede, retract, history), :mod:`.storage` (the format on disk) and
:mod:`._time` (every time argument).

>>> import numpy as np, chrono_engine as ce
>>> eng = ce.Engine(dim=4, decay=ce.DecayPolicy(default=ce.Exponential(half_life=365)))
>>> ids = eng.ingest({"vector": np.eye(4, dtype=np.float32),
...                   "valid_from": ["2024-01-01", "2024-06-01", "2025-01-01", "2025-06-01"]})
>>> hits = eng.search(np.array([1, 0, 0, 0], np.float32), k=1, mode="as_of", as_of="2024-03-01")
>>> hits.column("id").to_pylist()
[0]
"""
from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from . import _wal, lifecycle, search as _search, storage
from ._coalesce import AsyncCoalescer, Coalescer
from ._embedder import declared_dim, embedder_dim
from ._args import as_float32, count, id_array, shown, thread_count
from ._state import ALL_KNOWN, StoreState, embed_content, ingest_order
from ._time import OPEN_END, errors_as, now_us, scalar_us
from .decay import DecayPolicy, parse_decay
from .metadata import declared_kinds
from .errors import ConfigError, CorruptStoreError, EmbeddingError, QueryError, SchemaError, StorageError
from .search import PreparedSearch, QueryResult, SearchOptions, query_cuts
from .search import filters as _filters

__all__ = ["Engine", "QueryResult", "SearchOptions"]

# the planner settings: Engine attributes, saved with the store
_PLANNER = ("ef", "ef_max", "scan_limit", "seed_ef", "seed_min", "group", "scan")
_PLANNER_SET = frozenset(_PLANNER)
# the constructor's integer settings and their ranges: a saved store's manifest feeds them
# too, and each sizes an allocation or a loop in the core
_SIZES = {"dim": (1, storage.MAX_DIM), "M": (2, 2048), "ef_construction": (1, 1 << 20), "ef": (1, 1 << 24),
          "ef_max": (1, 1 << 24), "group": (1, 1 << 16), "scan_limit": (0, 1 << 32), "seed_ef": (0, 1 << 24),
          "seed_min": (0, 1 << 62), "seed": (0, (1 << 63) - 1)}


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
    threads : worker threads for ingest and batch search: an integer from 1 to 1024 (more
        is refused: each is an OS thread), or None for every core (``os.cpu_count()``).
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
    metadata : user metadata columns declared up front, ``{name: kind}`` with kinds "string",
        "int64", "float64", "bool", "timestamp", "list<string>" (:mod:`chrono_engine.metadata`).
        Undeclared columns of an ingested batch are metadata too, of the kind their values
        have; ``where=`` filters on them and results carry them.
    embedder : the text embedder :meth:`query` and :meth:`ingest` use (see :attr:`embedder`).
        Without ``dim``, the engine takes its width from it: its ``dim`` attribute
        (:class:`~chrono_engine.TextEncoder`, :class:`~chrono_engine.TemporalEmbedder`), else
        the length of the vector it returns for one probe text.

    Times are UTC: naive datetimes and strings without an offset are read as UTC.
    """

    def __init__(self, dim: int | None = None, metric: str = "cosine", decay: Any = None, *, M: int = 16,
                 ef_construction: int = 200, threads: int | None = None, ef: int = 64,
                 ef_max: int = 4096, scan_limit: int = 150_000, seed_ef: int = 32,
                 seed_min: int = 150_000, group: int = 64, seed: int = 100,
                 scan: str = "auto", embedder: Any = None, metadata: Any = None) -> None:
        if dim is None:
            if embedder is None:
                raise ConfigError("dim is required (or pass embedder=, whose width is used)")
            try:
                dim = embedder_dim(embedder)
            except EmbeddingError as e:
                raise ConfigError(f"dim is required: the embedder's width is unknown ({e})") from None
        given = dict(dim=dim, M=M, ef_construction=ef_construction, ef=ef, ef_max=ef_max, group=group,
                     scan_limit=scan_limit, seed_ef=seed_ef, seed_min=seed_min, seed=seed)
        sizes = {name: count(given[name], name, lo=lo, hi=hi, error=ConfigError) for name, (lo, hi) in _SIZES.items()}
        dim = sizes["dim"]
        declared = declared_dim(embedder) if embedder is not None else None
        if declared is not None and dim != declared:
            raise ConfigError(f"dim={dim} but the embedder produces {declared}-dimensional vectors")
        if not isinstance(metric, str) or metric not in ("cosine", "ip", "l2"):
            raise ConfigError(f"metric must be 'cosine', 'ip' or 'l2', got {shown(metric)}")
        if not isinstance(scan, str) or scan not in _search.SCAN_ORDERS:
            raise ConfigError(f"scan must be one of {sorted(_search.SCAN_ORDERS)}, got {shown(scan)}")
        try:
            policy = parse_decay(decay)
        except QueryError as e:
            raise ConfigError(str(e)) from None
        self._state = StoreState(dim, metric, policy, M=sizes["M"], ef_construction=sizes["ef_construction"],
                                 seed=sizes["seed"], threads=thread_count(threads, "threads", ConfigError))
        self._state.declare(declared_kinds(metadata))
        self.ef, self.ef_max, self.scan_limit = sizes["ef"], sizes["ef_max"], sizes["scan_limit"]
        self.seed_ef, self.seed_min, self.group = sizes["seed_ef"], sizes["seed_min"], sizes["group"]
        self.scan = scan
        #: Coalescing of concurrent :meth:`search` / :meth:`asearch` calls: at most
        #: ``coalesce_group`` calls per group, and a leader that saw company in the previous
        #: group waits up to ``coalesce_wait`` seconds for its group to fill (0: never waits;
        #: calls that arrive while a group runs form the next one). See docs/search.md.
        self.coalesce_group, self.coalesce_wait = 64, 0.0
        self._coalescer = Coalescer()  # given self._run_group per call: no cycle through it
        self._params: dict = {}  # the core's parameters by options, k and settings (_core_params)
        self._async: dict = {}  # event loop -> AsyncCoalescer (asearch)
        self._async_lock = threading.Lock()
        self._store: dict | None = None  # the store opened for writing: root, lock, key, fsync
        self._replayed = (0, -1)
        #: Text embedder :meth:`query` uses when no ``embed=`` is given, and :meth:`ingest` /
        #: :meth:`supersede` use for rows that have ``content`` and no ``vector``: a callable
        #: ``str -> vector`` of length ``dim`` (e.g. :class:`~chrono_engine.TextEncoder`; at
        #: ingest, one with an ``encode(list[str])`` method embeds the batch in one call,
        #: any other is called per row), or a time-aware
        #: :class:`~chrono_engine.TemporalEmbedder` (then rows are embedded at their
        #: ``observed_at`` / ``valid_from`` and the question at its query time). None:
        #: query needs ``embed=`` and rows need ``vector``.
        self.embedder: Any = embedder

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._state.dim

    @property
    def metric(self) -> str:
        """Similarity metric: "cosine", "ip" or "l2"."""
        return self._state.metric

    @property
    def decay(self) -> DecayPolicy:
        """The decay policy (per fact type)."""
        return self._state.policy

    @property
    def params(self) -> dict:
        """The HNSW graph's construction parameters: M, ef_construction and seed."""
        return dict(self._state.params)

    @property
    def threads(self) -> int:
        """Worker threads for ingest and batch search (set: an integer from 1 to 1024, or None
        for every core; anything else is a ConfigError)."""
        return self._state.threads

    @threads.setter
    def threads(self, value: int | None) -> None:
        self._state.threads = thread_count(value, "threads", ConfigError)

    @property
    def partition_min(self) -> int:
        """Rows from which the store keeps a coarse partition of its vectors for the probe
        plan (docs/search.md, "One query per call"; default 20,000; 0 or 1: always; cosine
        and ip only). Derived data, not saved: built on ingest or open. Set: an integer
        >= 0 (a ConfigError otherwise); the partition is built or dropped at once."""
        return self._state.partition_min

    @partition_min.setter
    def partition_min(self, value: int) -> None:
        v = count(value, "partition_min", lo=0, hi=1 << 62, error=ConfigError)
        st = self._state
        with st.write:
            st.partition_min = v
            st.refresh_partition()

    @property
    def fact_types(self) -> tuple[str, ...]:
        """The fact types the stored rows carry, in order of first ingest."""
        return tuple(self._state.fact_types)

    @property
    def metadata(self) -> dict[str, str]:
        """The user metadata columns and their kinds ("string", "int64", "float64", "bool",
        "timestamp", "list<string>"), in the order they were added (a new dict)."""
        return self._state.user_kinds()

    @property
    def stems(self) -> list[str]:
        """The document lineages (distinct ``stem_id``) the store holds, in order of first
        ingest (a new list)."""
        return self._state.stems.tolist()

    def __len__(self) -> int:
        return len(self._state)

    def __repr__(self) -> str:
        return f"Engine(dim={self.dim}, metric={self.metric!r}, items={len(self)})"

    # ------------------------------------------------------------------ ingest
    def ingest(self, rows: Any, *, order: str = "auto", where: Any = None) -> np.ndarray:
        """Add evidence items; returns their ids (uint64), in the order of ``rows``.

        ``rows`` is a pyarrow Table/RecordBatch, a pandas DataFrame, a dict of arrays or a
        list of dicts with the columns of :mod:`chrono_engine.schema` (``vector`` and
        ``valid_from`` required; with an :attr:`embedder`, ``content`` may stand in for
        ``vector`` and is embedded). A rejected batch raises
        :class:`~chrono_engine.errors.SchemaError` naming the column, row and rule, and
        changes nothing.

        ``order``: how the rows are laid out in the store. ``"auto"`` (the default) stores
        a batch of at least 4,096 rows whose ``valid_from`` is out of order in ``valid_from``
        order (ties in input order), so that the items in force at one time lie together
        and a search at that time reads them in sequence (docs/data-model.md, "Storage
        order"), and any other batch as given; ``"valid_from"`` reorders every batch that is
        out of order; ``"input"`` stores the rows as given. Given ids go with their rows
        (a reordered batch's ids are then no longer its row numbers: the store keeps an id
        map, 8 bytes a row while they stay dense). Automatic ids number the rows as they
        are stored (the largest id so far + 1 onwards): ``ingest`` returns each row's id
        beside it, but a reordered batch's ids do not rise with its input order; give
        ``id`` to fix them. :meth:`columns`, :meth:`vectors` and the store's files list
        the rows in the stored order.

        ``where``: a filter (``where=`` of :meth:`search`) every row must pass as it would
        be stored (its metadata columns; the store's others, and a field neither has, null):
        the first that does not is a SchemaError (rule ``outside where``, naming the row and
        the fields the filter reads) and nothing is written; so is a row naming a stem that
        holds a row the filter does not pass (a new version there would change which of
        that stem's rows every search arbitrates to). A write limited to one tenant's rows.
        """
        ingest_order(order)
        scope = _filters.parse(where)
        st = self._state
        rows = embed_content(self.embedder, rows)  # embedding runs before the write lock
        with st.write:
            batch = st.normalize(rows)
            if scope is not None:
                st.check_within(batch, scope)
            stored, placed = st.time_ordered(batch, order)
            if placed is None:
                return st.commit(batch)
            del batch  # a copy of the vectors (unit length, float32) not held during the commit
            try:
                return st.commit(stored)[placed]
            except SchemaError:
                # the refusal names a row of the reordered batch; nothing was written:
                # the rows as given are refused alike, naming the caller's row
                del stored
                return st.commit(st.normalize(rows))

    # ------------------------------------------------------------------ search
    def search(self, vector: Any, k: int = 10, options: SearchOptions | None = None, **kwargs: Any) -> pa.Table:
        """Top-k items by fused score for one query vector; the table of
        :meth:`search_batch` without its ``query`` column.

        Options (:class:`~chrono_engine.SearchOptions`, as one object or as keywords:
        mode, as_of, known_at, window, fusion, alpha, tau, deprecated, future,
        deprecation_penalty, arbitrate, fact_types, exact, explain, lang, verify).
        """
        call = self.prepare_search(vector, k, options, **kwargs)
        c = self._coalescer
        c.max_group = self._max_group()
        c.wait = _seconds(self.coalesce_wait, "coalesce_wait", 0.01)
        if not c.alone():
            return c.submit(call.key, call, self._run_group)
        try:  # the engine idle: this call runs now, alone, as the coalescer would run it
            return self.search_prepared([call])[0]
        finally:
            c.release()

    def prepare_search(self, vector: Any, k: int = 10, options: SearchOptions | None = None,
                       **kwargs: Any) -> PreparedSearch:
        """One :meth:`search` call checked and described once, its times ("now" included)
        fixed when the call is made: the query vector, the options, ``k`` and the core's
        parameters (the fact-type mask among them), ready for :meth:`search_prepared`.
        Raises the call's QueryError. The seam of every single search (``search``,
        ``asearch``, the coalescer, ``chrono serve``); docs/search.md.

        >>> eng = Engine(dim=2); _ = eng.ingest([{"vector": [1, 0], "valid_from": "2024-01-01"}])
        >>> call = eng.prepare_search([1, 0], k=1, mode="all")
        >>> eng.search_prepared([call])[0].column("id").to_pylist()
        [0]
        """
        q = self._query_vector(vector)
        opts, okey = _search.options_for_call(options, kwargs)
        k = count(k, "k", lo=1, hi=_search.K_MAX, error=QueryError)
        times = _search.query_times(opts, 1, now_us())  # "now" is when the call was made
        key = (k, okey)
        return PreparedSearch(q, times, opts, k, self._core_params(opts, key), key)

    def _query_vector(self, vector: Any) -> np.ndarray:
        """One search's query vector, checked (a QueryError names what is wrong)."""
        # the common calls cheaply: a float32 array, or a list of floats (a JSON body's)
        # converted natively with NumPy's bits; anything else, and every odd vector, by NumPy
        v = _search.list_f32(vector) if type(vector) is list else vector
        q = None if v is None else _search.query_vector_one(v, self.dim, self.metric)
        if q is not None:
            return q
        try:
            v = as_float32(vector)
        except (TypeError, ValueError) as e:
            raise QueryError(f"vector must be {self.dim} numbers, got {type(vector).__name__} {shown(vector)} "
                             f"({shown(str(e))})") from None
        if v.ndim != 1:
            raise QueryError(f"vector must be 1-D of length {self.dim}, got shape {v.shape}")
        return _search.query_vectors(v[None, :], self.dim, self.metric)[0]

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PLANNER_SET and "_params" in self.__dict__:
            self._params.clear()  # the core's parameters hold the planner's settings
        object.__setattr__(self, name, value)

    def _core_params(self, opts: SearchOptions, key: tuple) -> Any:
        """The core's parameters for options ``opts`` (:func:`~chrono_engine.search.core_params`),
        built once per distinct options, k and count of fact types (a new fact type can
        make a restricting mask select more), and reused until a planner setting is set."""
        ck = (key, len(self._state.fact_types))
        try:
            hit = self._params.get(ck)
        except TypeError:  # an unhashable option: built (and refused) below
            ck = hit = None
        if hit is None:
            hit = _search.core_params(self._state, opts, key[0], self._planner())
            if ck is not None:
                if len(self._params) >= 256:
                    self._params.clear()
                self._params[ck] = hit
        return hit

    def search_prepared(self, calls: Sequence[PreparedSearch], finish: Callable[[Any, Any], list] | None = None,
                        *, form: str = "table") -> list:
        """The answers of calls prepared by :meth:`prepare_search` with one ``key``, run as
        one batch: by default each call's result table (that of :meth:`search`). A query
        the batch cannot answer (its similarity overflows float32) makes the group run its
        calls one by one, so that only that call fails (its result is its QueryError).

        ``finish(answer, calls)`` turns the batch's answer for the calls ``calls``
        (indices into ``calls``) into one result per call; ``answer`` is, by ``form``:
        the ``search_batch`` table ("table", its ``query`` column numbering the calls),
        its columns before Arrow ("columns", :func:`~chrono_engine.search.result_columns`;
        the table where a call asks for the layer-3 gate), or each call's JSON body
        where the core writes them ("json", else as "columns")."""
        if form not in _search.FORMS:
            raise QueryError(f"form must be one of {', '.join(_search.FORMS)}, got {shown(form)}")
        _same_key(calls)
        if finish is None and form == "table":
            if len(calls) == 1 and calls[0].options.verify is None:
                return [self._run_lone(calls[0])]
            finish = _split
        return self._answers(calls, finish, form=form)

    async def asearch(self, vector: Any, k: int = 10, options: SearchOptions | None = None,
                      **kwargs: Any) -> pa.Table:
        """:meth:`search` for asyncio: the call's checks run on the event loop, then
        concurrent awaits on one loop are coalesced there into groups that run on one
        worker thread (:class:`~chrono_engine._coalesce.AsyncCoalescer`: the same groups
        and answers as concurrent :meth:`search` calls, without a thread per call); the
        event loop never blocks on a search.

        >>> import asyncio
        >>> eng = Engine(dim=2); _ = eng.ingest([{"vector": [1, 0], "valid_from": "2024-01-01"}])
        >>> asyncio.run(eng.asearch([1, 0], k=1)).column("id").to_pylist()
        [0]
        """
        import asyncio
        call = self.prepare_search(vector, k, options, **kwargs)
        c = self._async_coalescer(asyncio.get_running_loop())
        c.max_group = self._max_group()
        return await c.submit(call.key, call, self._run_group)

    def _max_group(self) -> int:
        return count(self.coalesce_group, "coalesce_group", lo=1, hi=1024, error=ConfigError)

    def _async_coalescer(self, loop: Any) -> AsyncCoalescer:
        """This engine's coalescer for the calls of one event loop (asyncio futures belong
        to their loop); those of closed loops are dropped."""
        with self._async_lock:
            c = self._async.get(loop)
            if c is None:
                for old in [lp for lp in self._async if lp.is_closed()]:
                    self._async.pop(old).close()
                c = self._async[loop] = AsyncCoalescer(name="chrono-asearch")
        return c

    def _run_group(self, batch: list) -> list:
        """One coalesced group (:mod:`chrono_engine._coalesce`): its calls' answers."""
        return self.search_prepared([r.payload for r in batch])

    def _run_lone(self, call: PreparedSearch) -> pa.Table:
        """One prepared call, without ``verify``, run alone: its table without the
        ``query`` column, in one native call (:func:`~chrono_engine.search.lone_table`)
        without ``explain`` where that answers, else by :meth:`_answers`. Raises the
        call's QueryError."""
        if not call.options.explain:
            table = _search.lone_table(self._state, call)
            if table is not None:
                return table
        return self._answers([call], lambda table, calls: [table], with_query=False)[0]

    def _answers(self, calls: Sequence[PreparedSearch], finish: Callable[[Any, Any], list], *, form: str = "table",
                 with_query: bool = True) -> list:
        """:meth:`search_prepared`'s batch, and its calls one by one where the batch raises
        a QueryError."""
        try:
            return finish(self._batch_answer(calls, form, with_query), range(len(calls)))
        except QueryError:
            if len(calls) == 1:
                raise
        out = []
        for i, call in enumerate(calls):
            try:
                out += finish(self._batch_answer([call], form, with_query), [i])
            except QueryError as e:
                out.append(e)
        return out

    def _batch_answer(self, calls: Sequence[PreparedSearch], form: str, with_query: bool) -> Any:
        return _search.run(self._state, _search.joined(calls), self.threads, form=form, with_query=with_query)

    def search_batch(self, vectors: Any, k: int = 10, options: SearchOptions | None = None, *,
                     threads: int | None = None, **kwargs: Any) -> pa.Table:
        """Top-k per query by fused score (similarity × validity), as one Arrow table.

        ``options``: a :class:`~chrono_engine.SearchOptions` and/or its fields as keywords
        (keywords override): the mode (``latest``, ``as_of``, ``window``, ``all``) and its
        times (``as_of`` / ``known_at``: one time or one per query; ``window=(start,
        end)``, either end None: open), the fusion, τ, the out-of-force policy, arbitration,
        fact types (an unknown one is a QueryError),
        ``exact=True`` (force the certified scan plan), ``explain``, ``lang`` and
        ``verify=γ`` (the layer-3 gate). See :class:`~chrono_engine.SearchOptions`.

        Returns columns query, rank (1-based), id, score, similarity, validity, stem_id,
        version, valid_from, valid_to, title, content, citation, certified (and decay,
        penalty, plan, reason with ``explain=True``; robustness, satisfied, refetch with
        ``verify``), ordered by query, rank. Ties are broken by id.

        The GIL is released; queries run on ``threads`` workers (default: the engine's; an
        integer from 1 to 1024, else a QueryError).
        """
        threads = self.threads if threads is None else thread_count(threads, "threads", QueryError)
        return _search.run(self._state, self.prepare_batch(vectors, k, options, **kwargs), threads)

    def prepare_batch(self, vectors: Any, k: int = 10, options: SearchOptions | None = None,
                      **kwargs: Any) -> PreparedSearch:
        """:meth:`search_batch`'s queries checked and described once (:meth:`prepare_search`
        for many queries; ``as_of`` / ``known_at`` may give one time per query)."""
        opts = SearchOptions.of(options, **kwargs)
        q = _search.query_vectors(vectors, self.dim, self.metric)
        k = count(k, "k", lo=1, hi=_search.K_MAX, error=QueryError)
        times = _search.query_times(opts, q.shape[0], now_us())
        key = (k, _search.options_key(opts))
        return PreparedSearch(q, times, opts, k, self._core_params(opts, key), key)

    def _planner(self) -> dict:
        return {name: getattr(self, name) for name in _PLANNER}

    # ------------------------------------------------------------------ lifecycle
    def supersede(self, stem_id: str, rows: Any, effective_at: Any, *, version: str | None = None,
                  supersedes: str | None = None, deprecate: bool | None = None, where: Any = None) -> np.ndarray:
        """Add a new version of a document lineage; closes and deprecates its predecessor.

        ``rows`` (any form :meth:`ingest` takes) are the new version's rows; ``stem_id``,
        ``valid_from`` (= ``effective_at``), ``version`` and ``supersedes`` (= the
        predecessor's version) are filled in when absent. Every version of the stem still
        valid at ``effective_at`` is closed there and deprecated from then
        (``deprecate=False``: closed only) by an event with the supersede's own transaction
        time (the new rows' ``ingested_at``, default now): a search with an earlier
        ``known_at`` sees the predecessor exactly as before. Rejects an
        unknown stem, a version not greater than every existing one, an ``effective_at`` not
        after the predecessor's start, a ``supersedes`` edge that would make a cycle, and
        malformed rows — raising :class:`~chrono_engine.errors.LifecycleError` (or
        NotFoundError / SchemaError) with nothing changed. Returns the new ids. Rules and
        atomicity: :mod:`chrono_engine.lifecycle`. ``where``: a filter limiting the write
        (as :meth:`ingest`'s): a stem with a row outside it is unknown (NotFoundError, as
        an unknown stem), a new row outside it (its inherited metadata included) a
        SchemaError (rule ``outside where``).

        >>> eng = Engine(dim=2)
        >>> _ = eng.ingest([{"vector": [1, 0], "valid_from": "2023-01-01", "stem_id": "T",
        ...                  "version": "v1.0.0"}])
        >>> eng.supersede("T", [{"vector": [1, 0]}], "2026-03-01", version="v2.0.0").tolist()
        [1]
        """
        return lifecycle.supersede(self._state, stem_id, rows, effective_at, version=version,
                                   supersedes=supersedes, deprecate=deprecate, embedder=self.embedder,
                                   where=where)

    def retract(self, ids: Any, at: Any = None, *, where: Any = None) -> np.ndarray:
        """Stop believing items from transaction time ``at`` (default now): sets
        ``retracted_at``; nothing is deleted and searches with an earlier ``known_at`` still
        see them. Unknown ids raise NotFoundError; ids already retracted, given twice, or
        ``at`` not after ``ingested_at`` raise LifecycleError (nothing changed). Returns the ids.
        ``where``: a filter limiting the write; an id whose row it does not pass is
        unknown (the same NotFoundError).
        """
        return lifecycle.retract(self._state, ids, at, where)

    def deprecate(self, ids: Any, effective_at: Any = None, at: Any = None, *, where: Any = None) -> np.ndarray:
        """Deprecate items from valid time ``effective_at`` (default: each item's
        ``valid_from``), an event known from transaction time ``at`` (default now): ``latest``
        searches at T ≥ ``effective_at`` with ``known_at`` ≥ ``at`` treat them as out of force
        (the ``deprecated=`` option); earlier views are unchanged. Returns the ids; see
        :func:`chrono_engine.lifecycle.deprecate`. ``where``: as :meth:`retract`'s."""
        return lifecycle.deprecate(self._state, ids, effective_at, at, where)

    def history(self, stem_id: str, known_at: Any = None, *, where: Any = None) -> pa.Table:
        """Every version (row) of a document lineage with both time axes, ordered by version,
        as known at ``known_at`` (default: every event recorded): id, stem_id, version,
        supersedes, valid_from, valid_to, ingested_at, retracted_at (open ends null),
        deprecated, deprecated_from, amended_at, title, content, then the metadata columns
        (:func:`chrono_engine.lifecycle.history`). O(rows of the lineage). ``where``: only
        the rows that filter passes; a stem with none is unknown (the same NotFoundError)."""
        return lifecycle.history(self._state, stem_id, known_at, where)

    def get(self, ids: Any, known_at: Any = None, *, where: Any = None) -> pa.Table:
        """The stored rows of ``ids``, in the order given, with both time axes: the columns
        of :meth:`history`. Raises NotFoundError naming the first unknown id (``where``: an
        id whose row that filter does not pass is unknown alike).

        >>> eng = Engine(dim=2)
        >>> _ = eng.ingest({"vector": [[1, 0], [0, 1]], "valid_from": ["2024-01-01"] * 2,
        ...                 "tenant": ["acme", "globex"]})
        >>> eng.get([0], where={"tenant": "acme"}).column("tenant").to_pylist()
        ['acme']
        >>> eng.get([1], where={"tenant": "acme"})
        Traceback (most recent call last):
        ...
        chrono_engine.errors.NotFoundError: unknown id 1
        """
        return lifecycle.get(self._state, ids, known_at, where)

    def on_approval_event(self, event: Any, *, embed: Callable[[str], Any] | None = None) -> np.ndarray:
        """Apply one lifecycle event from an external system (an approval webhook's JSON):
        see :func:`chrono_engine.lifecycle.on_approval_event`."""
        return lifecycle.apply_event(self._state, event, embed=embed, embedder=self.embedder)

    # ------------------------------------------------------------------ natural-language query
    def query(self, text: str, k: int = 5, *, now: Any = None, tz: Any = None,
              embed: Callable[[str], Any] | None = None, lang: str | None = None,
              embed_text: str = "full", distinct: bool = True, undated: str = "auto",
              window_fit: float | None = _search.WINDOW_FIT_DAYS, options: SearchOptions | None = None,
              **kwargs: Any) -> QueryResult:
        """Answer a natural-language question: parse its time intent, embed, search, cite.

        1. :func:`~chrono_engine.parse_temporal_intent` (``now``, ``tz`` as for
           :func:`~chrono_engine.parse_time`; ``now`` None = the wall clock) gives the mode;
        2. the question is embedded with ``embed`` or else :attr:`embedder` (neither:
           QueryError): the whole text by default (``embed_text="full"``: its years and
           dates are content too — "2018 oscar nominations" — and on the TimeQA benchmark
           the full question ranks better than the cleaned one, see
           ``benches/bench_temporal_qa.py``), or the intent's cleaned query with the time
           words removed (``embed_text="cleaned"``; the whole text if nothing is left);
        3. the search runs in the intent's mode: ``latest`` at T = now; ``as_of`` at the
           intent's anchor; ``window`` over the intent's window (an open start is the
           beginning of time, an open end stays open) with decay anchored at
           T = min(window end, now);
        4. the hits pass a post-stage made for items stored as several rows
           (:func:`~chrono_engine.ground_rows`: one row per fact of a chunk): ``distinct``
           (default True) returns each ``content`` once, its best row; ``undated``
           ("auto", default: left out when the question has a time constraint, kept in
           ``latest`` mode; "exclude"; "include") decides about undated items (valid from
           the beginning of time, open-ended); ``window_fit`` (a half-life h in days,
           default 730; None: off) fuses, in ``window`` mode with a start, how well an
           item's validity fits the window: score = α·score + (1 − α)·2^(−d / h), d =
           |valid_from − start| + min(|valid_to − end|, 365 days) (the end term when the
           window has one; an open valid_to counts as now) — "from 2004 to 2008" prefers
           the fact that began in 2004, and of those the one that ended in 2008
           (:func:`~chrono_engine.search.window_closeness`; the default was chosen on the
           TimeQA benchmark's tune part, ``benches/bench_temporal_qa.py``). With the fit
           on, a fact that began up to a quarter before the window's start also qualifies
           (``search.text.WINDOW_LEAD_US``): "In June 2017 he replaced ..." answers "from Jul
           2017 to Jul 2018", and the fit ranks it by that distance.
           The core is asked for more rows until this answer is exact (up to 4,096 rows;
           past that ``certified`` is False);
        5. citations are in ``lang`` ("en" / "zh"; None: "zh" when the text has CJK
           ideographs) with the effective date's day in ``tz``.

        ``options`` / keywords: the other :class:`~chrono_engine.SearchOptions` (known_at,
        fusion, alpha, tau, deprecated, future, deprecation_penalty, arbitrate, fact_types,
        exact, explain, verify); ``mode``, ``as_of`` and ``window`` come from the intent and are
        refused. Returns a :class:`QueryResult` (hits table + the intent used).
        """
        return _search.query_text(self.search, self.dim, self.embedder, text, k, now=now, tz=tz, embed=embed,
                                  lang=lang, options=options, overrides=kwargs, embed_text=embed_text,
                                  distinct=distinct, undated=undated, window_fit=window_fit)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike | None = None, *, key: Any = None) -> None:
        """Write the store to a directory as its live snapshot, atomically (format and
        promises: :mod:`chrono_engine.storage`, docs/storage.md).

        ``path`` None: the store this engine was opened from (a *checkpoint*: the new
        snapshot holds every write so far and the log starts empty). Another path: a copy
        is written there (taking that store's writer lock for the save:
        :class:`~chrono_engine.errors.StoreLockedError` when another writer has it); this
        engine stays attached to the store it came from, if any. ``key`` (bytes or str;
        default ``CHRONO_STORE_KEY``, or the key the store was opened with): seal the
        manifest with HMAC-SHA256 and the log records with keyed BLAKE2b, so that the store
        opens only with the key. Writers wait for the save; searches go on.
        """
        st = self._state
        attached = self._store is not None
        if path is None and not attached:
            raise StorageError("save() needs a path: this engine was not opened from a store")
        same = attached and (path is None or _same_dir(path, self._store["root"]))
        with st.write:
            if same:
                k = storage.store_key(key) if key is not None else self._store["key"]
                try:
                    name = storage.save(st, self._planner(), self._store["root"], key=k, lock=self._store["lock"])
                except StorageError as e:
                    if getattr(e, "committed", None):
                        self._attach_log(e.committed, k)
                    raise
                self._attach_log(name, k)
            else:
                storage.save(st, self._planner(), path, key=storage.store_key(key))

    @classmethod
    def open(cls, path: str | os.PathLike, *, threads: int | None = None, read_only: bool = False,
             fsync: str = "call", fsync_interval: float = 0.1, key: Any = None) -> Engine:
        """Open a store written by :meth:`save`: its live snapshot, verified (seal, checksums,
        every field and structure: a damaged or altered store raises
        :class:`~chrono_engine.errors.CorruptStoreError` naming the file and field, never
        opens with wrong data), plus the writes logged since.

        Writable (default): the engine holds the store's one-writer lock until :meth:`close`
        (a second writer gets :class:`~chrono_engine.errors.StoreLockedError`); each ingest,
        supersede and retract is written to the store's log before it returns, synced by
        ``fsync``: ``"call"`` (default; every acknowledged write survives a crash or a power
        loss), ``"interval"`` (synced at most every ``fsync_interval`` seconds: a power loss
        can lose that much; a process crash loses nothing), ``"off"`` (the OS writes back when
        it chooses). ``save()`` then checkpoints. ``read_only=True``: no lock, never waits,
        sees the last checkpoint plus every complete logged write; writes are refused.
        ``key``: the store's key when it was saved with one (default ``CHRONO_STORE_KEY``).
        """
        root = Path(path)
        k = storage.store_key(key)
        threads = thread_count(threads, "threads", ConfigError)  # the caller's, not the manifest's: checked first
        if not isinstance(read_only, (bool, np.bool_)):
            raise ConfigError(f"read_only must be True or False, got {read_only!r}")
        _wal.check_policy(fsync, fsync_interval)
        storage.current(root)  # "not a store" before a lock file is made
        if read_only:
            eng, _ = cls._load(root, k, threads, retry=True)
            eng._state.frozen = f"{root} was opened read_only"
            return eng
        lock = storage.StoreLock(root)
        try:
            eng, snap = cls._load(root, k, threads, retry=False)
            eng._attach(root, lock, k, fsync, fsync_interval, snap.name, eng._replayed)
        except BaseException:
            lock.release()
            raise
        return eng

    @classmethod
    def follow(cls, path: str | os.PathLike, *, threads: int | None = None, key: Any = None) -> Engine:
        """A read-only engine that follows a store another engine writes (a replica, in this
        process or another, e.g. on another node over a shared file system): it holds the
        live snapshot and the writes the writer has **acknowledged** (its log up to the
        mark: never a write in progress, nor one the writer may still cut), and
        :meth:`refresh` brings it up to date. Takes no lock and never waits; writes are
        refused (:class:`~chrono_engine.errors.StorageError`). What a follower sees lags its
        writer by the writer's fsync policy: under ``"call"`` every acknowledged write, under
        ``"interval"`` those synced (at most ``fsync_interval`` seconds behind), under
        ``"off"`` none made after the writer opened the store (docs/storage.md,
        "Followers")."""
        root = Path(path)
        k = storage.store_key(key)
        threads = thread_count(threads, "threads", ConfigError)
        storage.current(root)
        eng, snap = cls._load(root, k, threads, retry=True, follow=True)
        eng._state.frozen = f"{root} is followed read-only"
        eng._follower = {"root": root, "key": k, "snapshot": snap.name, "threads": threads,
                         "lock": threading.Lock(), "checkpoints": 0}
        return eng

    @property
    def position(self) -> tuple[str, int] | None:
        """A follower's place in its store (:meth:`follow`): (snapshot name, acknowledged
        writes of its log applied); a writable engine's the same for its own writes; None for
        an engine without a store."""
        f = getattr(self, "_follower", None)
        if f is not None:
            return f["snapshot"], int(self._replayed[0])
        log = self._state.log
        if self._store is None or log is None:
            return None
        return log.snapshot, int(log.seq)

    def refresh(self) -> int:
        """Bring a follower (:meth:`follow`) up to date with its store: apply the writes
        acknowledged since it last looked, or, when a checkpoint replaced the snapshot it
        follows, load the new snapshot (and its log) in its place. Returns how many writes
        were applied (-1: a new snapshot was loaded). Searches go on meanwhile and see each
        write whole. StorageError for an engine that is not a follower; CorruptStoreError
        when the store is damaged (what was applied before stays)."""
        f = getattr(self, "_follower", None)
        if f is None:
            raise StorageError("refresh() is for an engine made by Engine.follow")
        with f["lock"]:
            root, name = f["root"], f["snapshot"]
            if storage.current(root)["snapshot"] == name:
                st = self._state
                before = self._replayed
                try:
                    with st.write:
                        try:
                            self._replayed = storage.follow(st, root, name, f["key"], before)
                        except CorruptStoreError as e:
                            if getattr(e, "position", None) is not None:
                                self._replayed = e.position
                            raise
                    return self._replayed[0] - before[0]
                except FileNotFoundError:  # a checkpoint removed the log after the seal was read
                    pass
            fresh, snap = type(self)._load(root, f["key"], f["threads"], retry=True, follow=True)
            fresh._state.frozen = self._state.frozen
            self._state, self._replayed, self._params = fresh._state, fresh._replayed, {}
            f["snapshot"] = snap.name
            f["checkpoints"] += 1
            return -1

    @classmethod
    def create(cls, path: str | os.PathLike, dim: int | None = None, metric: str = "cosine", decay: Any = None, *,
               exist_ok: bool = False, fsync: str = "call", fsync_interval: float = 0.1, key: Any = None,
               **kwargs: Any) -> Engine:
        """Create a store at ``path`` (an empty engine's first snapshot) and open it for
        writing, as :meth:`open` does; ``dim``, ``metric``, ``decay`` and ``kwargs`` are the
        constructor's. The check and the creation happen under the store's writer lock, so
        two processes creating one store cannot both succeed. A path that already holds a
        store raises StorageError, unless ``exist_ok`` (then it is opened; its own dim and
        metric must match the ones given)."""
        root = Path(path)
        k = storage.store_key(key)
        _wal.check_policy(fsync, fsync_interval)
        eng = cls(dim, metric, decay, **kwargs)  # argument errors before anything is made
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageError(f"cannot create {root}: {e}") from None
        lock = storage.StoreLock(root)
        try:
            if (root / "CURRENT").exists() or (root / "CURRENT").is_symlink():
                if not exist_ok:
                    raise StorageError(f"{root} already holds a store (open it with Engine.open, or pass "
                                       "exist_ok=True)")
                eng, snap = cls._load(root, k, kwargs.get("threads"), retry=False)
                if (eng.dim, eng.metric) != (dim if dim is not None else eng.dim, metric):
                    raise ConfigError(f"{root} holds a {eng.metric} store of dim {eng.dim}, not {metric} "
                                      f"of dim {dim}")
                eng._attach(root, lock, k, fsync, fsync_interval, snap.name, eng._replayed)
            else:
                with eng._state.write:
                    name = storage.save(eng._state, eng._planner(), root, key=k, lock=lock)
                eng._attach(root, lock, k, fsync, fsync_interval, name, (0, -1))
        except BaseException:
            lock.release()
            raise
        return eng

    def _attach(self, root: Path, lock: Any, key: bytes | None, fsync: str, interval: float, name: str,
                position: tuple[int, int]) -> None:
        """Write to the store at ``root`` from now on: its lock held, its log open."""
        self._store = {"root": root, "lock": lock, "key": None, "fsync": fsync, "interval": interval}
        self._attach_log(name, key, position)
        # an engine dropped without close() still syncs its log and frees the lock
        self._store["finalizer"] = weakref.finalize(self, _detach, self._state, lock)

    @classmethod
    def _load(cls, root: Path, key: bytes | None, threads: Any, *, retry: bool,
              follow: bool = False) -> tuple[Engine, Any]:
        """Snapshot + log into a new engine. A reader (no lock) retries when a writer's
        checkpoint replaced the snapshot it was reading, so it never reports a damage
        that is only a concurrent save. ``follow``: only the log's acknowledged writes
        (:meth:`follow`), the position reached in ``eng._replayed``."""
        for attempt in range(20 if retry else 1):
            seal = storage.current(root)
            try:
                snap = storage.read_snapshot(root, key, seal=seal, check_files=False)
                check = storage.FileCheck(snap)  # the checksums, while the files load
                try:
                    eng = cls._from_snapshot(snap, threads)
                    if follow:
                        eng._replayed = storage.follow(eng._state, root, snap.name, key, None)
                    else:
                        eng._replayed = storage.replay(eng._state, snap)
                        eng._state.refresh_partition()
                except BaseException:
                    check.result()  # a file that fails its checksum is the error to report
                    raise
                check.result()
                return eng, snap
            except (StorageError, FileNotFoundError) as e:
                try:
                    moved = storage.current(root) != seal
                except StorageError:
                    moved = False
                if not (retry and moved):
                    if isinstance(e, FileNotFoundError):  # a follower's log, gone without a new seal
                        raise CorruptStoreError(f"{root}: {seal['snapshot']}/log.wal is missing") from None
                    raise
        raise StorageError(f"{root}: the store changed under 20 consecutive reads; try again")

    @classmethod
    def _from_snapshot(cls, snap: Any, threads: Any) -> Engine:
        p = snap.params
        unknown = set(snap.search) - set(_PLANNER)
        try:
            if unknown:
                raise ConfigError(f"unknown settings {sorted(unknown)}")
            eng = cls(snap.dim, snap.metric, snap.policy, M=p["M"], ef_construction=p["ef_construction"],
                      seed=p["seed"], threads=threads, **snap.search)
        except ConfigError as e:
            raise CorruptStoreError(f"{snap.root}: {snap.name}/manifest.json holds invalid settings ({e})") from None
        storage.restore(eng._state, snap)
        return eng

    def _attach_log(self, name: str, key: bytes | None, position: tuple[int, int] = (0, -1)) -> None:
        """Write to snapshot ``name``'s log, after record ``position[0]`` (byte ``position[1]``;
        a checkpoint's new log is empty); the previous log, if any, is closed."""
        st, s = self._state, self._store
        old = st.log
        st.log = storage.open_log(s["root"] / name, name, key, fsync=s["fsync"], interval=s["interval"],
                                  seq=position[0], end=position[1])
        s["key"] = key
        if old is not None:
            old.close()

    @property
    def path(self) -> Path | None:
        """The store this engine writes to (opened writable and not closed), else None."""
        return None if self._store is None else self._store["root"]

    def close(self) -> None:
        """Sync the log and release the store's writer lock (idempotent). The engine stays
        readable; writes are refused afterwards. An engine opened writable closes itself
        when garbage-collected, but close it (or use ``with``) to release the lock at once."""
        s, st = self._store, self._state
        if s is None:
            return
        s["finalizer"].detach()
        _detach(st, s["lock"])
        st.frozen = f"{s['root']} was closed"
        self._store = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

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
        - ``user_metadata``: the user metadata columns (:attr:`metadata`; per kind in
          :mod:`chrono_engine.metadata`), dictionaries included; ``filter_cache``: the
          ``where=`` filters' cached rows (a bit per row each, at most 64 MiB).
        """
        st = self._state
        m = dict(st.core.memory())
        strings = self._state.strings()
        m["strings"] = int(strings.nbytes) if strings is not None else 0
        m["names"] = (st.stems.memory_bytes() + sys.getsizeof(st.fact_types) + sys.getsizeof(st.fact_code)
                      + sum(sys.getsizeof(x) for x in st.fact_types))
        n = max(len(self), 1)
        m["metadata_per_item"] = m["metadata"] / n
        m["interval_index_per_item"] = m["interval_index"] / n
        m["freshness_index_per_item"] = m["freshness_index"] / n
        m["temporal_per_item"] = (m["metadata"] + m["interval_index"] + m["freshness_index"]) / n
        m["strings_per_item"] = m["strings"] / n
        m["names_per_item"] = m["names"] / n
        m["user_metadata"] = int(st.core.user_bytes())
        m["user_metadata_per_item"] = m["user_metadata"] / n
        m["filter_cache"] = int(st.core.filter_cache_bytes())
        return m

    def stats(self) -> dict:
        """How the store keeps its rows and how its searches were served, as counts (O(1);
        read without the write lock, so parts may straddle a concurrent write).

        - ``rows``: the items stored (``len(engine)``).
        - ``id_map``: how ids lead to rows: ``"identity"`` (every id equals its row: nothing
          is stored), ``"dense"`` (arrays over the id range) or ``"hash"`` (a hash table,
          once ids lie far beyond the row count).
        - ``partition``: the probe plan's partition (:meth:`partition`): ``centroids`` (0:
          the store keeps none), ``rows`` (rows assigned to them), ``delta`` (the probe's
          allowance δ) and ``built_at`` (the store's size when the centroids were chosen).
        - ``search``: ``calls`` to :meth:`search` served and the ``groups`` they ran in
          (coalescing, docs/search.md: calls / groups is the mean group size).
        - ``asearch``: the same for :meth:`asearch`, over the event ``loops`` whose
          coalescers are alive (those of closed loops go when another loop calls).

        >>> eng = Engine(dim=2); _ = eng.ingest([{"vector": [1, 0], "valid_from": "2024-01-01", "id": 7}])
        >>> s = eng.stats(); s["id_map"], s["partition"]["centroids"], s["search"]
        ('dense', 0, {'groups': 0, 'calls': 0})
        """
        st, c = self._state, self._coalescer
        C, covered, delta = st.core.partition_info()
        with self._async_lock:
            loops = list(self._async.values())
        return {"rows": len(st), "id_map": str(st.core.id_map_mode),
                "partition": {"centroids": int(C), "rows": int(covered), "delta": float(delta),
                              "built_at": int(st.partition_built_at) if C else 0},
                "search": {"groups": c.groups, "calls": c.calls},
                "asearch": {"loops": len(loops), "groups": sum(a.groups for a in loops),
                            "calls": sum(a.calls for a in loops)}}

    def partition(self) -> dict:
        """The coarse partition of the vectors that a lone approximate :meth:`search` probes
        (the probe plan, docs/search.md), a consistent copy: ``centroids`` (float32,
        (C, dim); C = 0 when the store keeps none: under l2, or below
        :attr:`partition_min` rows), ``members`` (C uint32 arrays: each centroid's rows,
        in ingest order, ascending), ``delta`` and ``built_at`` (as :meth:`stats`). Derived
        data: every row goes to its nearest centroid; the centroids are chosen again once
        the store has doubled. O(rows); waits for a write in progress.

        >>> eng = Engine(dim=2); eng.partition_min = 0
        >>> _ = eng.ingest({"vector": [[1, 0], [0, 1], [1, 1]], "valid_from": ["2024-01-01"] * 3})
        >>> p = eng.partition(); p["centroids"].shape[1], sorted(np.concatenate(p["members"]).tolist())
        (2, [0, 1, 2])
        """
        st = self._state
        with st.write:
            C, _, delta = st.core.partition_info()
            cents = st.partition_centroids
            if not C or cents is None:
                return {"centroids": np.zeros((0, self.dim), np.float32), "members": [], "delta": 0.0,
                        "built_at": 0}
            return {"centroids": np.array(cents, np.float32), "delta": float(delta),
                    "members": [st.core.partition_members(j) for j in range(int(C))],
                    "built_at": int(st.partition_built_at)}

    def strings(self, ids: Any = None) -> pa.Table:
        """The stored string columns (``content``, ``title``, ``source``, ``modality``,
        ``version``, ``supersedes``; null where a row has none) as an Arrow table, of every
        item in ingest order (the store's own table, immutable: no copy) or of ``ids``, in
        the order given (NotFoundError names the first unknown id). Stem ids and fact types
        are not among them: :meth:`history` and :attr:`fact_types` name those.

        >>> eng = Engine(dim=2)
        >>> _ = eng.ingest([{"vector": [1, 0], "valid_from": "2024-01-01", "title": "a", "content": "x"}])
        >>> eng.strings().select(["title", "content", "source"]).to_pylist()
        [{'title': 'a', 'content': 'x', 'source': None}]
        """
        from ._state import strings_at

        table = self._state.strings()
        if ids is None:
            return table if table is not None else strings_at(None, np.zeros(0, np.int64))
        return strings_at(table, self.rows_of(ids))

    def validity(self, at: Any, ids: Any = None, *, where: Any = None) -> np.ndarray:
        """V(e, T) = q_e · D_j(T − t_e) (paper eqs. 2-3) for the items ``ids`` (default:
        every item, in ingest order): reliability times the decay of the item's fact type
        at its age at ``at``, with the engine's decay kernels (the values search uses).

        Raises NotFoundError naming the first unknown id. ``where``: an id whose row that
        filter does not pass is unknown alike (without ``ids``: the items it passes).
        """
        st = self._state
        if ids is not None:
            rows = st.rows_of(ids, where)
        elif where is not None:
            rows = st.where_rows(where).astype(np.int64)
        else:
            rows = np.arange(len(self), dtype=np.int64)
        return st.validity_of_rows(_search.instant(at, "at"), rows)

    def count(self, where: Any = None) -> int:
        """How many items the store holds (``len``), or how many pass the filter ``where``
        (``where=`` of :meth:`search`: an unknown field or a bad filter is a QueryError):
        the core's rows of the filter, cached per filter and extended for new rows.

        >>> eng = Engine(dim=2)
        >>> _ = eng.ingest({"vector": [[1, 0], [0, 1], [1, 1]], "valid_from": ["2024-01-01"] * 3,
        ...                 "tenant": ["acme", "globex", "acme"]})
        >>> eng.count(), eng.count({"tenant": "acme"})
        (3, 2)
        """
        if where is None:
            return len(self)
        return int(self._state.core.filter_count(self._state.filter_of(where)))

    def filter_ids(self, where: Any, ids: Any) -> np.ndarray:
        """Whether each id is in the store and its row passes the filter ``where`` (a bool
        array, the shape of ``ids`` flattened, as :meth:`contains`; an unknown field or a
        bad filter is a QueryError).

        >>> eng = Engine(dim=2)
        >>> _ = eng.ingest({"vector": [[1, 0], [0, 1]], "valid_from": ["2024-01-01"] * 2,
        ...                 "tenant": ["acme", "globex"]})
        >>> eng.filter_ids({"tenant": "acme"}, [0, 1, 7]).tolist()
        [True, False, False]
        """
        st = self._state
        arr, impossible = id_array(ids, "ids", QueryError)
        rows = st.core.rows_of(arr)
        if impossible:
            rows[list(impossible)] = -1
        found = rows >= 0
        return found & st.passing(where, np.where(found, rows, 0))

    def count_valid_at(self, t: Any, known_at: Any = None) -> int:
        """How many items are valid at T: valid_from ≤ T < valid_to. Without ``known_at``:
        every item, retracted ones included, with every supersede recorded applied (the
        interval index, less the closed rows it counts); with it: the items known then
        (ingested_at ≤ known_at < retracted_at) with the supersedes known then."""
        k = None if known_at is None else _search.instant(known_at, "known_at")
        return int(self._state.core.count_valid_at(_search.instant(t, "t"), k))

    def count_overlapping(self, start: Any, end: Any, known_at: Any = None) -> int:
        """How many items' valid intervals overlap [start, end): what ``window`` mode
        considers (as :meth:`count_valid_at`, ``known_at`` included)."""
        k = None if known_at is None else _search.instant(known_at, "known_at")
        return int(self._state.core.count_overlapping(_search.instant(start, "start"), _search.instant(end, "end"), k))

    def rows_of(self, ids: Any) -> np.ndarray:
        """Row numbers (ingest order) of ids (one id, or a sequence or array of them,
        flattened); raises NotFoundError naming the first unknown id (an integer below 0 or
        beyond uint64 is one), QueryError for anything but integer ids (whole floats are ids,
        as at ingest)."""
        return self._state.rows_of(ids)

    def contains(self, ids: Any) -> np.ndarray:
        """Whether each id is in the store (bool array, the shape of ``ids`` flattened; an
        integer below 0 or beyond uint64 is not). Anything but integer ids is a QueryError."""
        return self._state.contains(ids)

    def __contains__(self, id_: Any) -> bool:
        """``id_ in engine``: whether the store holds that id (an integer, or a whole float, as
        :meth:`rows_of` reads ids); False for anything else (as ``"a" in range(3)`` is),
        bools and sequences included."""
        if isinstance(id_, np.ndarray) and id_.ndim == 0:
            id_ = id_.item()
        if isinstance(id_, (bool, np.bool_)) or not isinstance(id_, (int, float, np.integer, np.floating)):
            return False
        try:
            arr, impossible = id_array(id_, "id", QueryError)
        except QueryError:
            return False
        return not impossible and bool(self._state.contains(arr)[0])

    def fit_decay(self, known_at: Any = None, *, at: Any = None, fact_types: Any = None,
                  level: float = 0.95, alpha: float = 0.01) -> Any:
        """Each fact type's decay, learned from this store's own history: how long its
        items stayed valid (:func:`chrono_engine.fit_validity_intervals`).

        Every supersede (and any item ingested with a closed ``valid_to``) records when a
        fact stopped being valid; items still valid are right-censored. Per fact type this
        fits, by maximum likelihood with censoring, an exponential (β, half-life) and a
        Weibull, with confidence intervals at ``level``, the likelihood-ratio test between
        them (the Weibull is chosen when it rejects k = 1 at ``alpha``), and the paper's
        Bernoulli-on-age β beside them. The store is read as known at ``known_at`` (default:
        every event; items retracted by then, or not yet ingested, are left out) and observed
        at ``at`` (default: ``known_at``, else now). Returns a
        :class:`~chrono_engine.ValidityFit`; ``.policy()`` is a
        :class:`~chrono_engine.DecayPolicy` ready to pass as ``decay=``.

        >>> eng = Engine(dim=2)
        >>> _ = eng.ingest({"vector": [[1, 0]] * 4, "valid_from": ["2020-01-01"] * 4,
        ...                 "valid_to": ["2020-01-11", "2020-01-21", None, None], "fact_type": ["news"] * 4})
        >>> fit = eng.fit_decay(at="2020-01-31")
        >>> fit["news"].events, fit["news"].exposure   # 2 ended; 10 + 20 + 30 + 30 days
        (2, 90.0)
        """
        from .survival import fit_validity_intervals

        with errors_as(QueryError):
            k = ALL_KNOWN if known_at is None else scalar_us(known_at, "known_at")
            now = scalar_us(at, "at") if at is not None else (now_us() if known_at is None else k)
        with self._state.write:
            c = self._state.columns(k)
            names = list(self._state.fact_types)
        keep = (c["ingested_at"] <= k) & (c["retracted_at"] > k) if known_at is not None else \
            c["retracted_at"] == OPEN_END
        if fact_types is not None:
            wanted = _search.name_list(fact_types, "fact_types")
            wanted = [wanted] if isinstance(wanted, str) else list(wanted)
            unknown = [t for t in wanted if t not in names]
            if unknown:
                raise QueryError(f"fact_types: the store has no items of fact type {unknown[0]!r}")
            keep &= np.isin(c["fact_type"], [names.index(t) for t in wanted])
        types = pa.DictionaryArray.from_arrays(pa.array(c["fact_type"][keep].astype(np.int32)),
                                               pa.array(names or [""], pa.string()))
        return fit_validity_intervals(c["valid_from"][keep], c["valid_to"][keep], types, now_us=now,
                                      level=level, alpha=alpha)

    def columns(self, ids: Any = None, known_at: Any = None) -> dict:
        """The stored temporal metadata as NumPy arrays (a copy), of every item in ingest
        order or of ``ids``, as known at transaction time ``known_at`` (default: every event
        recorded): ``id``; ``valid_from``, ``valid_to`` (brought forward by the supersedes
        known then), ``observed_at``, ``ingested_at``, ``retracted_at`` (int64 µs; an open end
        is ``OPEN_END``, the int64 maximum); ``reliability``; ``fact_type`` (an index into
        :attr:`fact_types`); ``stem`` (a code, -1 for none; names through :meth:`history`'s
        ``stem_id``); ``version`` (the packed key of
        :func:`~chrono_engine.schema.parse_version`, 0 for none); ``deprecated_from`` (the
        valid time deprecated from: the int64 minimum for always, ``OPEN_END`` for never),
        ``deprecated`` (0/1: deprecated from some time) and ``amended_at`` (transaction time
        of the latest lifecycle event applied, ``OPEN_END`` for none)."""
        if known_at is None:
            k = ALL_KNOWN
        else:
            with errors_as(QueryError):
                k = scalar_us(known_at, "known_at")
        return self._state.columns(k) if ids is None else self._state.columns_at(self.rows_of(ids), k)

    def vectors(self, ids: Any = None) -> np.ndarray:
        """The stored vectors (float32, (n, dim); unit length under cosine), of every item in
        ingest order or of ``ids``."""
        rows = np.arange(len(self), dtype=np.int64) if ids is None else self.rows_of(ids)
        return self._state.core.vectors(rows.astype(np.uint32))


def _same_key(calls: Any) -> None:
    """A QueryError unless ``calls`` is a non-empty list of prepared searches with one key
    (a batch runs every call with the first one's options: another key would be answered
    with them, silently)."""
    if not isinstance(calls, (list, tuple)) or not calls:
        raise QueryError(f"calls must be a non-empty list of PreparedSearch, got {shown(calls)}")
    key = None
    for i, c in enumerate(calls):
        if not isinstance(c, PreparedSearch):
            raise QueryError(f"calls[{i}] must be a PreparedSearch (Engine.prepare_search), got {type(c).__name__}")
        if i == 0:
            key = c.key
        elif c.key != key:
            raise QueryError(f"calls[{i}] has other options or k than calls[0]: a batch runs calls with one key")


def _split(table: pa.Table, calls: Any) -> list:
    """A batch's table as one table per call, without the ``query`` column."""
    cuts = query_cuts(table.column("query").to_numpy(), len(calls))
    table = table.drop_columns(["query"])
    return [table.slice(int(a), int(b - a)) for a, b in zip(cuts[:-1], cuts[1:])]


def _seconds(value: Any, name: str, most: float) -> float:
    """A wait in seconds in [0, most], or a ConfigError naming the setting."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(value) <= most:
        raise ConfigError(f"{name} must be a number of seconds in [0, {most}], got {shown(value)}")
    return float(value)


def _detach(st: StoreState, lock: Any) -> None:
    """Close a store's log (syncing it) and release its writer lock."""
    with st.write:
        if st.log is not None:
            st.log.close()
            st.log = None
        lock.release()


def _same_dir(a: Any, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == b.resolve()
