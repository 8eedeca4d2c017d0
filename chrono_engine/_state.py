"""The store in memory and its one write path (internal).

:class:`StoreState` is what an :class:`~chrono_engine.Engine` holds: the compiled core
(vectors, graph, temporal metadata and its indexes), the names behind the core's codes
(fact types, stems), the string columns returned with results, and the write lock. The
lifecycle (:mod:`.lifecycle`), the store format (:mod:`.storage`) and search
(:mod:`.search`) work through its methods, never through the Engine's attributes.

Concurrency: one writer at a time (``write``); readers never take the lock. The string
table is immutable and replaced (never mutated) by writers, so a reader holding a reference
sees every row the core had when it read.

Durability: every write is one :meth:`StoreState.commit` — new rows and/or an edit of
existing rows, validated, then appended to the store's write-ahead log (:mod:`._wal`) when
the state belongs to an opened store, then applied.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pyarrow as pa

from . import _core, _partition, _wal
from . import metadata as _metadata
from ._columns import string_array as _string_array
from ._args import id_array, shown
from ._embedder import is_temporal, text_vectors
from ._time import MAX_TIME_US, MIN_TIME_US, OPEN_END, now_us
from .decay import DecayPolicy
from .errors import EmbeddingError, NotFoundError, QueryError, SchemaError, StorageError
from .schema import IngestBatch, _times, canonical_column, columns_of, normalize_rows

#: with Engine.ingest's ``order="auto"``, a batch of at least this many rows whose
#: valid_from is out of order is stored in valid_from order (docs/data-model.md)
CLUSTER_MIN = 4096
#: Engine.ingest's ``order`` values
INGEST_ORDERS = ("auto", "valid_from", "input")


def storage_order(valid_from: np.ndarray, order: str) -> np.ndarray | None:
    """The permutation in which an ingest stores a batch of rows with ``valid_from`` under
    ``order`` (:meth:`Engine.ingest`), or None to store them as given."""
    n = len(valid_from)
    if order == "input" or (order == "auto" and n < CLUSTER_MIN) or not (valid_from[1:] < valid_from[:-1]).any():
        return None
    return np.argsort(valid_from, kind="stable")


def ingest_order(order: Any) -> str:
    """``order`` of an ingest (:data:`INGEST_ORDERS`), or the SchemaError naming it."""
    if not isinstance(order, str) or order not in INGEST_ORDERS:
        raise SchemaError(f"order must be one of {', '.join(map(repr, INGEST_ORDERS))}, got {shown(order)}",
                          rule="order")
    return order

__all__ = ["StoreState", "STRING_COLUMNS", "AMEND_FIELDS", "ALL_KNOWN", "embed_content", "strings_at"]

#: String columns kept by row (fact_type and stem_id names are not: the core holds their codes).
STRING_COLUMNS = ("content", "title", "source", "modality", "version", "supersedes")
# the most fact-type names an error message lists
_KNOWN_SHOWN = 20


def strings_at(strings: pa.Table | None, rows: np.ndarray, columns: tuple = STRING_COLUMNS) -> pa.Table:
    """The string ``columns`` of ``rows`` from a snapshot of the table (None: no row yet), in
    O(len(rows) + chunks): Arrow's ``take`` on a column of several chunks concatenates them
    first (pyarrow 26), which would make every search and history call O(store)."""
    if strings is None or not len(rows):
        return pa.table({c: pa.array([], pa.string()) for c in columns})
    rows = np.asarray(rows, np.int64)
    cols = [strings.column(name) for name in columns]
    if all(c.num_chunks == 1 for c in cols):  # one index array for every column
        idx = pa.array(rows)
        return pa.table([c.chunk(0).take(idx) for c in cols], names=list(columns))
    return pa.table({name: take_rows(strings.column(name), rows) for name in columns})


def _take_parts(parts: list, rows: np.ndarray, concat: Any, starts: np.ndarray | None = None) -> Any:
    """Rows (int64, in range) of something stored as consecutive ``parts`` (Arrow arrays or
    record batches; ``starts``: each part's first row, then the row count, computed when
    None): one ``take`` per part that holds some, then ``concat`` of those pieces (a list,
    possibly empty) put back in the rows' order. O(len(rows) + parts); a ``take`` across
    chunks would concatenate them first (pyarrow 26), making every search O(store)."""
    if len(parts) == 1:
        return parts[0].take(pa.array(rows))
    if starts is None:
        starts = np.cumsum([0] + [len(p) for p in parts])
    which = np.searchsorted(starts, rows, side="right") - 1
    if len(rows) and (which == which[0]).all():  # one part holds them all (a search's few hits, often)
        return parts[int(which[0])].take(pa.array(rows - starts[which[0]]))
    perm = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[perm], np.arange(len(parts) + 1))
    pieces = [parts[k].take(pa.array(rows[perm[lo:hi]] - starts[k]))
              for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])) if hi > lo]
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(len(perm))
    return concat(pieces).take(pa.array(inverse))


def take_rows(col: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``col.take(rows)`` chunk by chunk (rows: int64, in range)."""
    return _take_parts(col.chunks, rows, lambda ps: pa.concat_arrays(ps) if ps else pa.array([], col.type))


def _string_views(table: pa.Table, columns: tuple) -> tuple:
    """The buffers of the string ``columns`` of ``table`` as NumPy views, as
    ``_core.StringColumns`` takes them: per column, one (int32 offsets, uint8 data, uint8 validity
    bitmap or None, its first row's bit) tuple per record batch of the selection (the
    batches split every column at the same rows); and the batches' first rows, then the
    row count. O(batches): nothing is read row by row."""
    batches = table.select(list(columns)).to_batches()
    starts = np.cumsum([0] + [b.num_rows for b in batches]).astype(np.int64)
    parts = []
    for c in range(len(columns)):
        views = []
        for b in batches:
            a = b.column(c)
            if a.type != pa.string():
                a = a.cast(pa.string())
            bits, off, data = a.buffers()
            o = np.frombuffer(off, np.int32)[a.offset:a.offset + len(a) + 1] if off is not None else np.zeros(1, np.int32)
            d = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
            v = np.frombuffer(bits, np.uint8) if bits is not None and a.null_count else None
            views.append((o, d, v, a.offset))
        parts.append(views)
    return parts, starts


#: the string columns a search reads of its hits, in Store.search_one's order
HIT_STRINGS = ("title", "version", "content")


class StoreState:
    """Vectors, metadata, names and strings of one store, with the write path."""

    def __init__(self, dim: int, metric: str, policy: DecayPolicy, *, M: int, ef_construction: int,
                 seed: int, threads: int) -> None:
        self.dim, self.metric, self.policy = dim, metric, policy
        #: HNSW construction parameters, as saved with the store
        self.params = dict(M=M, ef_construction=ef_construction, seed=seed)
        self.threads = threads
        self.core = _core.Store(dim, metric, M, ef_construction, seed)
        self.fact_types: list[str] = []
        self.fact_code: dict[str, int] = {}
        # stem names by code (the core's stem column holds the codes): one character buffer
        # and a hash table in the core, not a Python list and dict
        self.stems = _core.Names()
        self.table: pa.Table | None = None
        #: row counts of the string table's parts, each one contiguous (see :func:`_appended`)
        self.parts: list[int] = []
        #: (table, columns, their _core.StringColumns): see :meth:`hit_strings`
        self._views: tuple | None = None
        #: hit citations by language and row (chrono_engine.search.results._hit_citations)
        self.cited: dict[str, dict[int, str]] = {}
        self.write = threading.Lock()
        #: the log of the store this state was opened from for writing (None: in memory only)
        self.log: _wal.LogWriter | None = None
        #: why writes are refused (opened read-only, closed), or None
        self.frozen: str | None = None
        #: rows from which the store keeps the probe plan's partition (:mod:`._partition`),
        #: the store's size when its centroids were chosen, and those centroids (the core
        #: holds them too; these assign new rows)
        self.partition_min = _partition.PARTITION_MIN
        self.partition_built_at = 0
        self.partition_centroids: np.ndarray | None = None
        #: user metadata columns (:mod:`.metadata`): name -> (the core's column index, kind)
        self.user: dict[str, tuple[int, str]] = {}

    def declare(self, kinds: dict) -> None:
        """Add metadata columns of the given kinds ({name: kind}, checked), null for every
        row so far; a column that exists keeps its kind (another is a SchemaError)."""
        for name, kind in kinds.items():
            have = self.user.get(name)
            if have is not None:
                if have[1] != kind:
                    raise SchemaError(f"column {name!r}: the store's column is {have[1]}, not {kind} (wrong type)",
                                      column=name, rule="wrong type")
                continue
            # a new dict each time: a reader holds the old one or the new one, whole
            self.user = {**self.user, name: (int(self.core.add_user_column(name, _metadata.KIND_CODES[kind])), kind)}

    def user_kinds(self) -> dict[str, str]:
        """The metadata columns' kinds by name, in column order."""
        return {name: kind for name, (_, kind) in self.user.items()}

    def user_table(self, rows: np.ndarray, columns: Any = None) -> dict:
        """The metadata ``columns`` (None: every one) of ``rows`` as Arrow arrays by name."""
        names = list(self.user) if columns is None else columns
        rows = np.ascontiguousarray(rows, np.int64)
        return {name: _metadata.arrow_of(self.core.user_take(self.user[name][0], rows)) for name in names}

    def __len__(self) -> int:
        return int(self.core.size)

    # ------------------------------------------------------------------ reads
    def columns(self, known_at: Any = None) -> dict:
        """Every metadata column of every row (NumPy arrays; a consistent copy): as ingested
        (``known_at`` None), or as known at a transaction time (µs; :data:`ALL_KNOWN`: every
        event), which also gives ``deprecated_from`` (see :func:`_known`)."""
        return self.core.columns(_known(known_at))

    def columns_at(self, rows: np.ndarray, known_at: Any = None) -> dict:
        """The metadata columns of the given rows (``known_at``: as :meth:`columns`, one time
        or one per row)."""
        return self.core.columns_at(np.asarray(rows).astype(np.uint32), _known(known_at))

    def hit_meta(self, rows: np.ndarray, known_at: np.ndarray) -> dict:
        """What a result table reads of its hits' metadata, in one native call: the rows'
        ``valid_from``, ``valid_to`` as known at ``known_at`` (int64 µs: one, or one per
        row), ``valid_to_valid`` (bool, False where open; None when none is) and ``stem``
        (codes, -1: none) — the same values as :meth:`columns_at` gives."""
        vf, vt, valid, stem = self.core.hit_meta(rows, known_at)
        return {"valid_from": vf, "valid_to": vt, "valid_to_valid": valid, "stem": stem}

    def stem_rows(self, code: int) -> np.ndarray:
        """The rows of a stem code, ascending: O(rows of the stem), from the core's per-stem lists."""
        return self.core.stem_rows(int(code))

    def amendments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every amendment (rows, tx, valid_to, deprecated_from), oldest first per row."""
        return self.core.amendments()

    def strings(self) -> pa.Table | None:
        """The string columns (:data:`STRING_COLUMNS`) of every row, or None before any ingest."""
        return self.table

    def hit_string_buffers(self, rows: np.ndarray, columns: tuple = HIT_STRINGS) -> list[tuple]:
        """The string ``columns`` of ``rows`` (int64, in range; read after the call that
        returned them, so the table holds them) as Arrow string buffers, per column
        (int32 offsets, uint8 data, bool validity or None when no row is null): one native
        gather over the table's buffers (``StringColumns.take``), for a search's few hits
        or a batch's many (Arrow's ``take`` on a record batch cost ~2x more per lone search
        in place, most of it in the calls around it)."""
        strings = self.hit_strings(columns)
        if strings is None or not len(rows):
            return [(np.zeros(1, np.int32), np.zeros(0, np.uint8), None) for _ in columns]
        return strings.take(rows)

    def hit_strings(self, columns: tuple = HIT_STRINGS) -> Any:
        """The string ``columns`` of the current string table as ``_core.StringColumns``
        (what ``Store.search_one`` reads a lone search's hits from, :data:`HIT_STRINGS`;
        :meth:`hit_string_buffers` gathers from it), viewed once per table snapshot
        (zero-copy; a write makes a new table, hence new views); None before any ingest."""
        table = self.table
        if table is None:
            return None
        cached = self._views
        if cached is None or cached[0] is not table or cached[1] != columns:
            cached = self._views = (table, columns, _core.StringColumns(*_string_views(table, columns)))
        return cached[2]

    def stem_code(self, stem_id: str) -> int:
        """The core's code of a stem name, or -1 when the store has no such stem (a name that
        is not valid Unicode text, such as one with a lone surrogate, cannot be stored)."""
        try:
            return int(self.stems.find(stem_id))
        except UnicodeEncodeError:
            return -1

    def stem_buffers(self, codes: np.ndarray) -> tuple:
        """The stem ids of stem codes (-1: null) as Arrow string buffers (int32 offsets,
        uint8 data, bool validity or None when none is null)."""
        return self.stems.take_valid(np.ascontiguousarray(codes, dtype=np.int32))

    def stem_names(self, codes: np.ndarray) -> pa.Array:
        """The stem ids of stem codes (-1: null) as an Arrow string array."""
        return _string_array(*self.stem_buffers(codes))

    def rows_of(self, ids: Any, where: Any = None) -> np.ndarray:
        """Row numbers of ids (one id, or a sequence or array of them, flattened); raises
        NotFoundError naming the first unknown id (an integer below 0 or beyond uint64 is
        one), QueryError for anything but integer ids. ``where``: a filter (a dict or a
        :class:`~chrono_engine.search.filters.Where`); an id whose row it does not pass is
        unknown alike, with the same error."""
        arr, impossible = id_array(ids, "ids", QueryError)
        rows = self.core.rows_of(arr)
        if impossible:
            rows[list(impossible)] = -1
        if where is not None:
            found = rows >= 0
            rows[found & ~self.passing(where, np.where(found, rows, 0))] = -1
        if (rows < 0).any():
            i = int(np.flatnonzero(rows < 0)[0])
            raise NotFoundError(f"unknown id {shown(impossible.get(i, int(arr[i])))}")
        return rows

    def contains(self, ids: Any) -> np.ndarray:
        """Whether each id is in the store (as :meth:`rows_of` reads ids; an integer below 0
        or beyond uint64 is not)."""
        arr, impossible = id_array(ids, "ids", QueryError)
        found = self.core.rows_of(arr) >= 0
        if impossible:
            found[list(impossible)] = False
        return found

    def filter_of(self, where: Any) -> Any:
        """``where`` (a dict or a Where) compiled against this store's metadata columns
        (``_core.Filter``); QueryError for a bad filter or an unknown field."""
        from .search import filters
        return filters.compile(filters.parse(where), self.user)

    def where_rows(self, where: Any) -> np.ndarray:
        """The rows (uint32, ascending) that pass ``where`` now."""
        return self.core.filter_rows(self.filter_of(where))

    def passing(self, where: Any, rows: np.ndarray) -> np.ndarray:
        """Whether each of ``rows`` (row numbers, in range) passes ``where``: the core's
        rows of the filter (cached per filter; O(rows passing) to copy) searched."""
        sel = self.where_rows(where)
        rows = np.asarray(rows, np.int64)
        if not len(sel):
            return np.zeros(len(rows), bool)
        i = np.minimum(np.searchsorted(sel, rows), len(sel) - 1)
        return sel[i] == rows

    def check_within(self, batch: IngestBatch, where: Any) -> None:
        """SchemaError (rule ``outside where``) naming the first row of ``batch`` that
        ``where`` does not pass, as the row would be stored: the batch's metadata columns,
        the store's others null, and a field neither has null too
        (:func:`~chrono_engine.search.filters.evaluate`); then the first row naming a stem
        that holds a row ``where`` does not pass (a new version there would change which of
        that stem's rows every search arbitrates to). O(rows + the named stems' rows)."""
        from .search import filters
        w = filters.parse(where)
        fields = ", ".join(repr(f) for f in sorted(w.fields())[:20])
        cols: dict = {name: (kind, None) for name, (_, kind) in self.user.items()}
        for name, (kind, arr) in batch.metadata.items():
            cols[name] = (kind, arr)
        ok = filters.evaluate(filters.absent_as_null(w, cols), cols, batch.n)
        if not ok.all():
            row = int(np.flatnonzero(~ok)[0])
            raise SchemaError(f"row {row}: outside where= (this write stores only rows the filter passes; "
                              f"it reads {fields}) (outside where)", row=row, rule="outside where")
        codes = [self.stem_code(name) for name in batch.stem_names]
        if not any(c >= 0 for c in codes):
            return
        sel = self.where_rows(filters.absent_as_null(w, self.user))
        for i, code in enumerate(codes):
            if code < 0:
                continue
            rows = self.stem_rows(code).astype(np.int64)
            at = np.minimum(np.searchsorted(sel, rows), max(len(sel) - 1, 0))
            if not len(sel) or not (sel[at] == rows).all():
                row = int(np.flatnonzero(batch.stem_codes == i)[0])
                raise SchemaError(f"row {row}: stem {shown(batch.stem_names[i])} holds rows outside where= "
                                  f"(a stem is one namespace: a write limited by the filter adds to a stem only "
                                  f"when it passes every row; it reads {fields}) (outside where)",
                                  row=row, rule="outside where")

    def validity_of_rows(self, t_us: int, rows: np.ndarray) -> np.ndarray:
        """V = q · D_j(T − t_e) of the given rows at ``t_us``, with the core's decay kernels."""
        out = np.empty(rows.shape[0], dtype=np.float64)
        if rows.shape[0] == 0:
            return out
        cols = self.columns_at(rows)
        # the core's age: difference taken in double, in days
        age = (float(t_us) - cols["observed_at"].astype(np.float64)) / 86_400_000_000.0
        table = self.policy.kernel_table(self.fact_types)
        codes = cols["fact_type"]
        for code in np.unique(codes):
            sel = codes == code
            out[sel] = _core.decay_eval(age[sel], table[int(code)])
        out *= cols["reliability"].astype(np.float64)
        return out

    def type_mask(self, fact_types: Any) -> np.ndarray | None:
        """The core's fact-type mask for a search restricted to ``fact_types`` (None: all).
        A type the decay policy names but no row carries yet selects nothing; a type that
        is neither (one the policy's default alone would cover included: a typo would
        otherwise select nothing, silently) is a QueryError naming every unknown type and
        listing the known ones."""
        if fact_types is None:
            return None
        if isinstance(fact_types, str):
            fact_types = [fact_types]
        mask = np.zeros(max(len(self.fact_types), 1), np.uint8)
        unknown: dict = {}  # each unknown name once, in order (a dict: a list's `in` made this quadratic)
        for name in fact_types:
            code = self.fact_code.get(name)
            if code is not None:
                mask[code] = 1
            elif name not in unknown and name not in self.policy:
                unknown[name] = None
        if unknown:
            known = list(self.fact_types) + [t for t in self.policy if t not in self.fact_code]
            listed = ", ".join(shown(t) for t in known[:_KNOWN_SHOWN]) or "none"
            more = f" and {len(known) - _KNOWN_SHOWN} more" if len(known) > _KNOWN_SHOWN else ""
            names = ", ".join(shown(t) for t in list(unknown)[:_KNOWN_SHOWN])
            many = len(unknown) > 1
            raise QueryError(f"fact_types: unknown fact type{'s' if many else ''} {names}: no stored row carries "
                             f"{'them' if many else 'it'} and the decay policy does not name "
                             f"{'them' if many else 'it'} (known: {listed}{more})")
        return mask

    # ------------------------------------------------------------------ the write path
    def normalize(self, rows: Any, now: int | None = None) -> IngestBatch:
        """Validate user rows for this store (:func:`~chrono_engine.schema.normalize_rows`)."""
        return normalize_rows(rows, dim=self.dim, metric=self.metric, known_fact_type=self.policy.knows,
                              now_us=now_us() if now is None else now, metadata=self.user_kinds())

    def time_ordered(self, batch: IngestBatch, order: str) -> tuple[IngestBatch, np.ndarray | None]:
        """The batch as it is to be stored (``order``: "auto", "valid_from" or "input",
        see :meth:`Engine.ingest`), and where each input row went (None: in input order).
        Rows in ``valid_from`` order (ties in input order) keep their given ids; automatic
        ids are the core's, which numbers the rows as they are stored (an identity id map,
        no bytes per row). The caller holds ``write``."""
        perm = storage_order(batch.valid_from, order)
        if perm is None:
            return batch, None
        inv = np.empty(batch.n, np.intp)
        inv[perm] = np.arange(batch.n)
        return batch.take(perm), inv

    def append(self, batch: IngestBatch, amend: dict | None = None) -> np.ndarray:
        """Add a validated batch, and apply ``amend`` (``rows`` and the :data:`AMEND_FIELDS`
        of existing rows) in the same core call, so no reader sees one without the other;
        returns the batch's ids. All or nothing: a batch the core refuses leaves names,
        strings and core unchanged. The caller holds ``write``.

        ``amend`` may also name rows of the batch itself (row numbers from ``len(self)``: an
        import of rows with their events, :mod:`._transfer`); those are checked against the
        batch before anything changes and applied by a second core call right after the
        rows, so a reader may see such rows without their events for that moment."""
        n = batch.n
        amend, own = _own_amendments(batch, len(self), amend)
        # codes for fact types and stems (dictionary-encoded by the schema, remapped here
        # without a per-row loop); remembered only once the core accepted the batch
        new_types = [t for t in batch.fact_type_names if t not in self.fact_code]
        types = self.fact_types + new_types
        code_of = {t: i for i, t in enumerate(types)}
        remap = np.array([code_of[t] for t in batch.fact_type_names], dtype=np.uint16)
        ft = remap[batch.fact_type_codes] if n else np.zeros(0, np.uint16)
        if new_types:
            self.core.set_decay(self.policy.kernel_table(types))
        # New stem names get the next codes and the strings are published before the core
        # has the rows (readers may see them early, harmless, never late); a failure undoes both.
        old_table, old_parts, n_stems = self.table, list(self.parts), len(self.stems)
        pending: dict = {}  # new metadata columns: published once the core holds the rows
        try:
            if batch.metadata:
                pending = self._append_user(batch)
            smap = np.append(self.stems.add_all(batch.stem_names), np.int32(-1))
            stem = smap[batch.stem_codes]  # code -1 (no stem) picks the trailing -1
            self.table = _appended(old_table, batch.table.select(list(STRING_COLUMNS)), self.parts)
            first = self.core.ingest(
                batch.vector, batch.valid_from, batch.valid_to, batch.observed_at, batch.ingested_at,
                batch.retracted_at, batch.version_key, batch.reliability, stem, ft,
                batch.deprecated.astype(np.uint8), batch.ids, self.threads, **_amend_args(amend))
            if own is not None:  # checked above against the batch: cannot fail now the rows exist
                self.core.amend(own["amend_rows"], own["amend_tx"], own["amend_valid_to"],
                                own["amend_deprecated_from"])
        except BaseException as e:
            self.table, self.parts = old_table, old_parts
            self.stems.truncate(n_stems)
            if batch.metadata:
                self.core.truncate_user()
                self.core.drop_user_columns_from(len(self.user))
            if not isinstance(e, ValueError):
                raise
            msg = str(e)
            if msg.startswith("duplicate id"):
                row = int(msg.rsplit(" ", 1)[1])
                raise SchemaError(f"column 'id', row {row}: {msg.split(' at row')[0]} is already in the store "
                                  "(duplicate id)", column="id", row=row, rule="duplicate id") from None
            if msg.startswith("automatic ids exhausted"):
                raise SchemaError(f"column 'id': {msg} (automatic ids exhausted)", column="id",
                                  rule="automatic ids exhausted") from None
            raise SchemaError(msg) from None
        self.fact_types = types
        self.fact_code = code_of
        if pending:  # a new dict: a reader holds the old one or this one, whole
            self.user = {**self.user, **pending}
        # ids given, or assigned by the core (largest id so far + 1 onwards)
        return self.core.columns_at(np.arange(first, first + n, dtype=np.uint32))["id"]

    def _append_user(self, batch: IngestBatch) -> dict:
        """The batch's metadata into the core, before its rows (Store.append_user): kinds
        checked against the store's, new columns added to the core; returns those (name ->
        (index, kind)), which the caller publishes in :attr:`user` only once the core holds
        the rows, so that no filter or result reads a column a refused batch added (its index
        would be another column's later). The caller undoes it on failure."""
        for name, (kind, _) in batch.metadata.items():
            have = self.user.get(name)
            if have is not None and have[1] != kind:
                raise SchemaError(f"column {name!r}: the store's column is {have[1]}, this batch's {kind} (wrong type)",
                                  column=name, rule="wrong type")
        new = {name: kind for name, (kind, _) in batch.metadata.items() if name not in self.user}
        if len(self.user) + len(new) > _metadata.MAX_COLUMNS:
            raise SchemaError(f"the store would hold {len(self.user) + len(new)} metadata columns; at most "
                              f"{_metadata.MAX_COLUMNS} (unknown column)", rule="unknown column")
        pending = {name: (int(self.core.add_user_column(name, _metadata.KIND_CODES[kind])), kind)
                   for name, kind in new.items()}
        where = {**self.user, **pending}
        parts = [_metadata.core_part(where[name][0], kind, arr) for name, (kind, arr) in batch.metadata.items()]
        self.core.append_user(len(self), batch.n, parts)
        return pending

    def update(self, rows: np.ndarray, **columns: np.ndarray) -> None:
        """Change metadata of existing rows, checked by the core before anything changes:
        ``retracted_at`` (a retraction), the :data:`AMEND_FIELDS` (amendments: lifecycle
        events with their own transaction time), or — only from a log written before
        amendments existed — ``valid_to`` / ``deprecated`` in place. The caller holds ``write``."""
        rows = np.asarray(rows).astype(np.uint32)
        amend = {k: columns.pop(k) for k in AMEND_FIELDS if k in columns}
        if amend:
            if len(amend) != len(AMEND_FIELDS):
                raise SchemaError(f"edited rows: an amendment needs all of {list(AMEND_FIELDS)}")
            a = _amend_args(dict(amend, rows=rows))
            self.core.amend(rows, a["amend_tx"], a["amend_valid_to"], a["amend_deprecated_from"])
        if columns:
            self.core.update(rows, **columns)

    # ------------------------------------------------------------------ commits (the log)
    def commit(self, batch: IngestBatch | None = None, rows: np.ndarray | None = None,
               **columns: np.ndarray) -> np.ndarray | None:
        """One write: the validated ``batch`` appended and/or ``columns`` of existing
        ``rows`` changed; returns the new ids (None without a batch). With a log, the write
        is logged (and synced by its policy) before it is applied; a write the core then
        refuses is cut from the log again. The caller holds ``write``."""
        if self.frozen:
            raise StorageError(f"this engine does not write: {self.frozen}")
        start = None
        if self.log is not None:
            c = _wal.Commit(append=None if batch is None else batch_table(batch), rows=rows,
                            update=columns or None)
            start = self.log.append(_wal.encode_commit(c))
        try:
            amend = {k: columns[k] for k in AMEND_FIELDS if k in columns}
            if batch is not None and amend and rows is not None:
                ids = self.append(batch, dict(amend, rows=rows))  # one core call: atomic for readers
                columns = {k: v for k, v in columns.items() if k not in AMEND_FIELDS}
            else:
                ids = self.append(batch) if batch is not None else None
            if rows is not None and len(rows) and columns:
                self.update(rows, **columns)
        except BaseException:
            if start is not None:
                self.log.undo(start)
            raise
        if start is not None:
            self.log.acknowledge()
        if batch is not None:
            self.refresh_partition()
        return ids

    def refresh_partition(self) -> None:
        """Bring the probe plan's partition up to date with the rows (:mod:`._partition`).
        It is derived data: when it cannot be built (memory), the store drops it and
        searches take the certified plan, with a warning; the write stands."""
        try:
            _partition.refresh(self, self.partition_min)
        except Exception as e:  # noqa: BLE001 - derived data; never fail a committed write
            import warnings
            self.core.clear_partition()
            self.partition_built_at = 0
            warnings.warn(f"the probe plan's partition was dropped ({type(e).__name__}: {e}); "
                          f"searches take the certified plan", RuntimeWarning, stacklevel=3)

    def apply(self, c: _wal.Commit, *, replay: bool = False) -> None:
        """Apply a commit read back from the log (not logged again). The new rows are
        validated as any ingest is; vectors were normalised when first written, so under
        cosine they must already be of unit length."""
        if c.append is not None:
            metric = "ip" if self.metric == "cosine" else self.metric
            batch = normalize_rows(c.append, dim=self.dim, metric=metric, known_fact_type=self.policy.knows,
                                   now_us=now_us(), metadata=self.user_kinds())
            if self.metric == "cosine":
                norms = np.einsum("ij,ij->i", batch.vector.astype(np.float64), batch.vector.astype(np.float64))
                off = np.flatnonzero(np.abs(norms - 1.0) > 1e-4)
                if len(off):
                    raise SchemaError(f"column 'vector', row {int(off[0])}: not of unit length in a cosine "
                                      "store", column="vector", row=int(off[0]), rule="vector dimension")
        update = dict(c.update or {}) if c.rows is not None else {}
        for name, v in update.items():  # the rules every stored value keeps (as meta.arrow's)
            bad = (v > 1) if name == "deprecated" else \
                ((v < MIN_TIME_US) | (v > MAX_TIME_US)) & (v != OPEN_END)
            if name == "amend_tx":
                bad |= v == OPEN_END
            if bad.any():
                raise SchemaError(f"edited rows: {name} {int(v[np.flatnonzero(bad)[0]])} is out of range")
        amend = {k: update.pop(k) for k in AMEND_FIELDS if k in update}
        if amend and len(amend) != len(AMEND_FIELDS):
            raise SchemaError(f"edited rows: an amendment needs all of {list(AMEND_FIELDS)}")
        try:
            if c.append is not None:
                self.append(batch, dict(amend, rows=c.rows) if amend else None)
            elif amend:
                self.update(c.rows, **amend)
            if update:
                self.update(c.rows, **update)
        except (ValueError, IndexError) as e:
            raise SchemaError(f"edited rows: {e}") from None


#: The fields of an amendment (:meth:`StoreState.update`): its transaction time, the end of
#: validity it sets (OPEN_END: unchanged) and the valid time the row is deprecated from
#: (OPEN_END: not deprecated).
AMEND_FIELDS = ("amend_tx", "amend_valid_to", "amend_deprecated_from")
#: ``known_at`` for "every event recorded" (:meth:`StoreState.columns`).
ALL_KNOWN = OPEN_END


def _known(known_at: Any) -> np.ndarray | None:
    return None if known_at is None else np.atleast_1d(np.asarray(known_at, dtype=np.int64))


def _amend_args(amend: dict | None) -> dict:
    """The core's keyword arguments for amendments of ``amend["rows"]``."""
    if not amend:
        return {}
    return {"amend_rows": np.asarray(amend["rows"]).astype(np.uint32),
            "amend_tx": np.asarray(amend["amend_tx"], np.int64),
            "amend_valid_to": np.asarray(amend["amend_valid_to"], np.int64),
            "amend_deprecated_from": np.asarray(amend["amend_deprecated_from"], np.int64)}


#: the most lifecycle events one row takes (the core's MetaTable::kMaxAmendments)
MAX_AMENDMENTS = 64


def _own_amendments(batch: IngestBatch, first: int, amend: dict | None) -> tuple[dict | None, dict | None]:
    """``amend`` split into the amendments of existing rows (below ``first``, for the core's
    ingest call) and those of the batch's own rows (row ``first + i``: the core's arguments,
    or None), the latter checked against the batch by the core's rules (the row is in the
    batch, the transaction time a time not before its ``ingested_at``, a new end after its
    ``valid_from``, at most :data:`MAX_AMENDMENTS` per row); SchemaError naming the first
    that breaks one, before anything changes."""
    if not amend or not len(amend["rows"]):
        return amend, None
    rows = np.asarray(amend["rows"]).astype(np.int64)
    own = rows >= first
    if not own.any():
        return amend, None
    a = _amend_args(dict({k: np.asarray(v)[own] for k, v in amend.items() if k != "rows"}, rows=rows[own]))
    i = rows[own] - first
    tx, vt = a["amend_tx"], a["amend_valid_to"]
    bad = i >= batch.n
    i = np.where(bad, 0, i)
    checks = (("no such row", bad),
              ("transaction time is not a time", (tx < MIN_TIME_US) | (tx > MAX_TIME_US)),
              ("transaction time before the row's ingested_at", tx < batch.ingested_at[i]),
              ("valid_to <= valid_from", (vt != OPEN_END) & (vt <= batch.valid_from[i])),
              (f"more than {MAX_AMENDMENTS} amendments of one row",
               np.bincount(i, minlength=max(batch.n, 1))[i] > MAX_AMENDMENTS))
    for what, fails in checks:
        if fails.any():
            j = int(np.flatnonzero(fails)[0])
            raise SchemaError(f"edited rows: amendment of new row {int(rows[own][j]) - first}: {what}")
    return {k: np.asarray(v)[~own] for k, v in amend.items()}, a


def _appended(table: pa.Table | None, rows: pa.Table, parts: list[int]) -> pa.Table:
    """``table`` with ``rows`` appended, and ``parts`` (its parts' row counts) updated. Like a
    binary counter, a part as large as the one before it is merged into it (copied into
    one contiguous chunk), so a table of n rows has O(log n) parts and each row is copied
    O(log n) times over any sequence of appends: a one-row supersede into a 10M-row store
    does not copy the store's strings."""
    if rows.num_rows == 0:
        return rows if table is None else table
    if table is None or not parts:
        parts[:] = [rows.num_rows]
        return rows.combine_chunks()
    parts.append(rows.num_rows)
    merged = False
    while len(parts) > 1 and parts[-1] >= parts[-2]:
        last = parts.pop()
        parts[-1] += last
        merged = True
    out = pa.concat_tables([table, rows])
    if merged:
        start = out.num_rows - parts[-1]
        out = pa.concat_tables([out.slice(0, start), out.slice(start).combine_chunks()])
    return out


def batch_table(b: IngestBatch) -> pa.Table:
    """A validated batch as rows in the ingest schema, every value explicit, so that
    :func:`~chrono_engine.schema.normalize_rows` gives the same batch back (the log's form)."""
    n, dim = b.vector.shape
    vec = pa.FixedSizeListArray.from_arrays(pa.array(b.vector.reshape(-1), pa.float32()), dim)
    cols = {} if b.ids is None else {"id": pa.array(b.ids, pa.uint64())}
    cols.update({
        "vector": vec, "valid_from": b.valid_from, "valid_to": b.valid_to, "observed_at": b.observed_at,
        "ingested_at": b.ingested_at, "retracted_at": b.retracted_at, "reliability": b.reliability,
        "deprecated": np.asarray(b.deprecated, bool)})
    for name in b.table.column_names:
        cols[name] = b.table.column(name)
    for name, (_, arr) in b.metadata.items():
        cols[name] = arr
    return pa.table(cols)


def embed_content(embedder: Any, rows: Any, at_us: int | None = None) -> Any:
    """Rows that carry ``content`` and no ``vector``, with vectors from the engine's
    embedder: a time-aware one (a :class:`~chrono_engine.TemporalEmbedder`) embeds each row
    at its ``observed_at`` (else ``valid_from``), or every row at ``at_us`` when given (a new
    version, at its effective time); a plain text embedder (``str -> vector``, e.g.
    :class:`~chrono_engine.TextEncoder`) embeds the text alone
    (:func:`~chrono_engine._embedder.text_vectors`). Any other rows, or no embedder, come
    back unchanged (validation then names what is missing). Raises SchemaError (rule
    "embedding") naming the row."""
    if embedder is None:
        return rows
    raw = columns_of(rows)
    if "vector" in raw or "content" not in raw:
        return rows
    n = len(raw["content"])
    if n == 0 or (at_us is None and "valid_from" not in raw):
        return rows
    content = canonical_column("content", raw["content"])
    texts = content.to_pylist() if isinstance(content, pa.Array) else list(content)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise SchemaError(f"column 'content', row {i}: a row without 'vector' needs 'content' text to embed "
                              "(embedding)", column="content", row=i, rule="embedding")
    if not is_temporal(embedder):
        def fail(row: int | None, detail: str) -> None:
            where = "embedding the 'content' column" if row is None else f"column 'content', row {row}"
            raise SchemaError(f"{where}: {detail} (embedding)", column="content", row=row, rule="embedding")
        return dict(raw, vector=text_vectors(embedder, texts, fail))
    if at_us is not None:
        t_us = np.full(n, at_us, np.int64)
    else:
        t_us, _ = _times("valid_from", canonical_column("valid_from", raw["valid_from"]), nullable=False)
        if "observed_at" in raw:
            obs, nulls = _times("observed_at", canonical_column("observed_at", raw["observed_at"]), nullable=True)
            t_us = obs if nulls is None else np.where(nulls, t_us, obs)
    modality = None
    if embedder.temporal.modalities:
        if "modality" not in raw:
            raise SchemaError(f"column 'modality' is required: the embedder encodes modalities "
                              f"{embedder.temporal.modalities} (embedding)", column="modality", rule="embedding")
        mc = canonical_column("modality", raw["modality"])
        modality = mc.to_pylist() if isinstance(mc, pa.Array) else list(mc)
    try:
        vectors = embedder.embed(texts, t_us, modality)
    except EmbeddingError as e:
        raise SchemaError(f"embedding the 'content' column failed: {e} (embedding)",
                          column="content", rule="embedding") from None
    return dict(raw, vector=vectors)
