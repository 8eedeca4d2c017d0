"""Type stub of chrono_engine's private compiled core (built from cpp/; do not import directly).

Array arguments are converted to the C-contiguous dtype named here (numpy's forcecast): passing
that dtype avoids a copy. Times are int64 microseconds since the Unix epoch; "open" ends are
int64 max. The bindings only convert types, release the GIL and map errors (ValueError for
bad shapes and values, IndexError for rows and codes out of range); checking and defaults
live in the Python layer, except :class:`SearchParams`, which checks its fields once when
made so that the searches it is passed to need not. tests/test_core_stub.py keeps this file
and the module in step.
"""
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

_F32 = npt.NDArray[np.float32]
_F64 = npt.NDArray[np.float64]
_I8 = npt.NDArray[np.int8]
_I32 = npt.NDArray[np.int32]
_I64 = npt.NDArray[np.int64]
_U8 = npt.NDArray[np.uint8]
_U16 = npt.NDArray[np.uint16]
_U32 = npt.NDArray[np.uint32]
_U64 = npt.NDArray[np.uint64]
_Bool = npt.NDArray[np.bool_]


class _BuildInfo(TypedDict):
    compiler: str
    flags: str
    baseline: str
    simd: str
    simd_available: list[str]
    hnswlib_version: str
    hnswlib_simd: str
    hardware_threads: int


class _SearchResult(TypedDict):
    query: _I32
    rank: _I32
    row: _U32
    id: _U64
    score: _F64
    similarity: _F32
    validity: _F32
    decay: _F32
    penalty: _F32
    certified: npt.NDArray[np.bool_]
    plan: _U8
    scored: _U64
    in_force: _U64
    candidates: _U64


class _Columns(TypedDict):
    valid_from: _I64
    valid_to: _I64
    observed_at: _I64
    ingested_at: _I64
    retracted_at: _I64
    version: _U64
    reliability: _F32
    stem: _I32
    fact_type: _U16
    deprecated: _U8
    id: _U64


class _BoundRows(TypedDict):
    kept: _U32
    best: _F64
    validity: _F32
    penalty: _F32
    count: _U32


class _Memory(TypedDict):
    metadata: int
    interval_index: int
    freshness_index: int
    graph: int
    vectors: int
    compact_vectors: int


class _PprResult(TypedDict):
    node: _I32
    mass: _F64
    edge: _I64
    flow: _F64
    weight: _F64
    pushes: int
    edges_scanned: int


class Names:
    """An append-only table of UTF-8 names (the stems), each with a dense int32 code."""

    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def __getitem__(self, code: int) -> str:
        """The name of ``code`` (IndexError out of range)."""
    def find(self, name: str) -> int:
        """The code of ``name``, or -1."""
    def add_all(self, names: Sequence[str]) -> _I32:
        """The codes of ``names``, adding the new ones in order; all or nothing."""
    def take(self, codes: _I32) -> tuple[_I32, _U8]:
        """The names of ``codes`` as Arrow string buffers (int32 offsets, UTF-8 data); -1: empty."""
    def take_valid(self, codes: _I32) -> tuple[_I32, _U8, _Bool | None]:
        """:meth:`take` and the validity (False for code -1), None when no code is -1."""
    def truncate(self, n: int) -> None:
        """Keep the first ``n`` names."""
    def tolist(self) -> list[str]: ...
    def memory_bytes(self) -> int: ...


class StringColumns:
    """The title, version and content string columns of a store's Arrow table, viewed for
    :meth:`Store.search_one`: per column, one (int32 offsets, uint8 data, uint8 bitmap or
    None, bit offset) per record batch, the batches' first rows in ``starts`` (then the row
    count); checked when made (ValueError), the arrays kept referenced."""

    def __init__(self, columns: Sequence[Sequence[tuple]], starts: _I64) -> None: ...
    @property
    def rows(self) -> int:
        """The rows the columns hold."""
    def take(self, rows: _I64) -> list[tuple[_I32, _U8, _Bool | None]]:
        """Per column, the strings of ``rows`` as :func:`take_strings` gives them."""


def citation(title: str | None, version: str | None, valid_from: int, zh: bool) -> str | None:
    """One hit's citation as :meth:`Store.search_one` writes it (search.py's
    ``_few_citations`` text); None where it defers to Python (a version string
    ``parse_version`` refuses; a day outside years 1-9999)."""


class SearchParams:
    """One search's description as the planner takes it: every option but the per-query
    times, made once per set of options (keywords only; each defaults to the core's) and
    passed whole to :meth:`Store.search_one` and :meth:`Store.search_batch`. Every field is
    checked when it is made (ValueError naming it) and read-only afterwards. Codes: mode 0
    latest, 1 as_of, 2 window, 3 all; fusion 0 product, 1 linear; deprecated (items no
    longer in force) and future (items not yet valid) 0 penalize, 1 exclude, 2 include;
    scan 0 auto, 1 bounds, 2 similarity. ``type_mask``: None (every fact type) or one flag
    (0 or 1) per fact-type code, 1 to 65536 of them. ``alpha``, ``tau`` and
    ``deprecation_penalty`` in [0, 1]; ``k`` in [1, 2**31 - 1]; ``ef`` and ``ef_max`` at
    least 1; the other counts at least 0; all at most 2**62. ``group``: queries per planner
    group in :meth:`Store.search_batch` (0 counts as 1, at most 64); a lone search ignores it."""

    def __init__(self, *, mode: int = 0, fusion: int = 0, alpha: float = 0.75, tau: float = 0.0,
                 deprecated: int = 0, future: int = 1, deprecation_penalty: float = 0.1, arbitrate: bool = True,
                 type_mask: _U8 | None = None, k: int = 10, exact: bool = False, ef: int = 64, ef_max: int = 4096,
                 scan_limit: int = 150000, seed_ef: int = 32, seed_min: int = 150000, group: int = 64,
                 scan: int = 0, filter: Filter | None = None) -> None: ...
    def __repr__(self) -> str: ...
    def __eq__(self, other: object) -> bool:
        """Every field equal (the type mask flag for flag)."""
    def __hash__(self) -> int: ...
    @property
    def mode(self) -> int: ...
    @property
    def fusion(self) -> int: ...
    @property
    def alpha(self) -> float: ...
    @property
    def tau(self) -> float: ...
    @property
    def deprecated(self) -> int: ...
    @property
    def future(self) -> int: ...
    @property
    def deprecation_penalty(self) -> float: ...
    @property
    def arbitrate(self) -> bool: ...
    @property
    def type_mask(self) -> _U8 | None:
        """A copy of the flags, or None (every fact type)."""
    @property
    def k(self) -> int: ...
    @property
    def exact(self) -> bool: ...
    @property
    def ef(self) -> int: ...
    @property
    def ef_max(self) -> int: ...
    @property
    def scan_limit(self) -> int: ...
    @property
    def seed_ef(self) -> int: ...
    @property
    def seed_min(self) -> int: ...
    @property
    def group(self) -> int: ...
    @property
    def scan(self) -> int: ...
    @property
    def filter(self) -> Filter | None:
        """The where= filter (None: none), resolved to rows under the store's lock at each search."""


class Filter:
    """A where= filter compiled by chrono_engine/search/filters.py: postfix operations over
    a store's metadata columns (user_columns.hpp), each checked when made (ValueError).
    ``("in", col, kind, values)``, ``("range", col, kind, lo, hi)``, ``("frange", col, lo,
    lo_incl, hi, hi_incl)``, ``("exists", col, kind)``, ``("and", n)``, ``("or", n)``,
    ``("not",)``, ``("const", bool)``; kinds are the metadata kind codes."""

    def __init__(self, ops: Sequence[tuple]) -> None: ...
    @property
    def key(self) -> bytes:
        """The canonical bytes: equal programs, equal keys (the filter cache's key)."""
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def __repr__(self) -> str: ...


class Store:
    """Items' vectors (HNSW graph and compact int8 copy), bitemporal metadata, the interval
    and freshness indexes, and the planner that searches them."""

    def __init__(self, dim: int, metric: str, M: int, ef_construction: int, seed: int) -> None:
        """``metric``: "cosine", "ip" or "l2"; ``dim`` in [1, 2**20], ``M`` at least 2 (ValueError otherwise)."""
    def set_decay(self, table: _F64) -> None:
        """Decay per fact-type code: rows (code, p0, p1, scale, symmetric)."""
    def ingest(self, vectors: _F32, valid_from: _I64, valid_to: _I64, observed_at: _I64,
               ingested_at: _I64, retracted_at: _I64, version: _U64, reliability: _F32, stem: _I32,
               fact_type: _U16, deprecated: _U8, ids: _U64 | None, threads: int,
               amend_rows: _U32 | None = None, amend_tx: _I64 | None = None,
               amend_valid_to: _I64 | None = None, amend_deprecated_from: _I64 | None = None) -> int:
        """Append n items (vectors (n, dim)) and apply the amendments of existing rows, if
        given, in one write (no reader sees one without the other); returns the first new row."""
    def amend(self, rows: _U32, tx: _I64, valid_to: _I64, deprecated_from: _I64) -> None:
        """Amendments (lifecycle events in transaction time) of existing rows, all or nothing:
        known from ``tx``, the end of validity brought to ``valid_to`` (INT64_MAX: unchanged),
        deprecated from valid time ``deprecated_from`` (INT64_MAX: not). ValueError naming the
        first bad one (row unknown, tx before its ingested_at, valid_to <= valid_from, more
        than 64 per row)."""
    def amendments(self) -> tuple[_U32, _I64, _I64, _I64]:
        """Every amendment (rows ascending, oldest first per row): rows, tx, valid_to,
        deprecated_from."""
    def stem_rows(self, stem: int) -> _U32:
        """The rows of a stem code, ascending (O(rows of the stem))."""
    def restore(self, path: str, valid_from: _I64, valid_to: _I64, observed_at: _I64,
                ingested_at: _I64, retracted_at: _I64, version: _U64, reliability: _F32, stem: _I32,
                fact_type: _U16, deprecated: _U8, ids: _U64, n_stems: int | None = None) -> None:
        """Fill this empty store from a saved graph (save_graph) and the metadata of its rows,
        both treated as untrusted. The columns are checked first (ValueError naming the column
        and row: ingest's rules, ids unique, stem codes below ``n_stems`` when given), then
        graph.bin (ValueError starting "graph.bin:" naming the field, element and level; a
        failing system call is a RuntimeError). All or nothing: on error the store stays empty."""
    def search_batch(self, queries: _F32, t: _I64, known_at: _I64, win_start: _I64, win_end: _I64,
                     params: SearchParams, threads: int) -> _SearchResult:
        """Fused temporal top-k for each query (n, dim) at its own times (as_of T, known_at,
        window start and end, one each per query), as ``params`` describes the search, on
        up to ``threads`` threads. Hits ordered by query, rank."""
    def search_one(self, query: _F32, t: int, known_at: int, win_start: int, win_end: int, params: SearchParams,
                   strings: StringColumns, stems: Names, zh: bool, with_schema: bool) -> tuple[Any, Any] | None:
        """One query (dim,) as :meth:`search_batch` answers it, and its result table (no query
        column) as an Arrow record batch: (schema capsule, array capsule) ``with_schema``,
        else (array capsule, its address). None where the Python path must answer: a
        similarity that overflowed float32 (ip, l2), a hit row ``strings`` does not hold, a
        citation :func:`citation` defers."""
    def update(self, rows: _U32, valid_to: _I64 | None = None, deprecated: _U8 | None = None,
               retracted_at: _I64 | None = None) -> None:
        """Edits in place, all or nothing: retract rows (retracted_at); valid_to and deprecated
        only replay logs written before amendments existed."""
    def rows_of(self, ids: _U64) -> _I64:
        """The row of each id, -1 for an unknown one."""
    def columns(self, known_at: _I64 | None = None) -> _Columns:
        """Every row's metadata: as ingested (None), or as known at a transaction time (one
        value), amendments applied, with deprecated_from and amended_at."""
    def columns_at(self, rows: _U32, known_at: _I64 | None = None) -> _Columns:
        """The metadata of ``rows`` (IndexError out of range); ``known_at`` as in columns,
        one value or one per row."""
    def hit_meta(self, rows: _U32, known_at: _I64) -> tuple[_I64, _I64, _Bool | None, _I32]:
        """What a result table reads of ``rows``: valid_from, valid_to as known at
        ``known_at`` (one value or one per row), valid_to's validity (False where open; None
        when none is) and the stem codes (-1: none); IndexError for a row out of range."""
    def validities(self, rows: _U32, t: int, variant: str = "") -> tuple[_F64, _F64]:
        """Kernels::validities of ``rows`` at ``t`` (the lone scan's, kernel ``variant``;
        "": the dispatched one) and the same rows' reliability x decay by Kernels::decay one
        at a time (the exact path); equal bit for bit. Rows out of range: IndexError."""
        ...
    def bound_rows(self, rows: _U32, t: _F64, known_at: _I64, x1: _I64, x2: _I64, theta: _F64,
                   a: _F64, b: _F64, tau: float, out_pen: float, latest: bool,
                   mask: _U8 | None = None, variant: str = "", fut_pen: float | None = None) -> _BoundRows:
        """The certified plan's metadata pass (Kernels::bound_rows) on ``rows`` for 1-64
        queries, on a kernel variant ("" the one chosen at run time); for tests."""
    def vectors(self, rows: _U32) -> _F32:
        """The stored vectors of ``rows``, (n, dim)."""
    def vector_hashes(self, weights: _U64, threads: int) -> _U64:
        """Per row, sum_j bits(x_j) * weights[j] mod 2**64 (the float32 bit patterns): the
        fingerprints that bind meta.arrow to graph.bin (storage/checkpoint.py). GIL released."""
    def set_partition(self, centroids: _F32, delta: float) -> None:
        """New centroids (C, dim) and δ for the probe plan (probe.hpp); every row unassigned."""
    def assign_partition(self, first: int, assignment: _U16) -> None:
        """Rows [first, first + n) to centroids (65535: none), from the first unassigned row."""
    def clear_partition(self) -> None:
        """Drop the partition (searches take the certified plan)."""
    def add_user_column(self, name: str, kind: int) -> int:
        """A new metadata column (kind code), null for every row so far; its index."""
    def drop_user_columns_from(self, n: int) -> None:
        """Forget the metadata columns from index n on (a refused batch added them)."""
    def append_user(self, first: int, n: int, parts: list[tuple]) -> None:
        """The metadata of rows [first, first + n) (first: the store's size), before the rows:
        per column (col, idx, dict_offsets, dict_data, list_offsets, i64, f64, b, valid),
        None where the kind has no such array. All or nothing; GIL released."""
    def truncate_user(self) -> None:
        """Metadata back to the store's rows (the rows it was given for were refused)."""
    def user_columns(self) -> list[tuple[str, int]]:
        """(name, kind code) of each metadata column, in index order."""
    def user_take(self, col: int, rows: _I64) -> tuple[int, Any, npt.NDArray[np.bool_] | None]:
        """Column ``col`` of ``rows``: (kind code, values, validity or None)."""
    def user_bytes(self) -> int:
        """Bytes of the metadata columns and their dictionaries."""
    def filter_rows(self, filter: Filter) -> _U32:
        """The rows that pass ``filter`` now, ascending (cached per program)."""
    def filter_count(self, filter: Filter) -> int:
        """How many rows pass ``filter`` now."""
    def filter_cache_bytes(self) -> int:
        """Bytes of the cached filter results."""
    def partition_info(self) -> tuple[int, int, float]:
        """(centroids, rows assigned, δ)."""
    def partition_members(self, centroid: int) -> _U32:
        """The rows of one centroid, ascending."""
    def compact(self, rows: _U32) -> tuple[_I8, _F32, _F32]:
        """(codes, scale, err) of the compact int8 copy of ``rows``; for tests."""
    def rows_valid_at(self, t: int) -> _U32:
        """Rows with valid_from <= t < valid_to, sorted (the interval index)."""
    def rows_overlapping(self, start: int, end: int) -> _U32:
        """Rows whose validity overlaps [start, end), sorted (the interval index)."""
    def rows_observed_between(self, type: int, lo: int, hi: int) -> tuple[_U32, int]:
        """Rows of a fact-type code observed in [lo, hi], sorted, and the freshness list's
        own count of them; for tests."""
    def valid_at_upper_bound(self, t: int) -> int:
        """An upper bound on count_valid_at(t) read from the index's shape alone."""
    def count_valid_at(self, t: int, known_at: int | None = None) -> int: ...
    def count_overlapping(self, start: int, end: int, known_at: int | None = None) -> int: ...
    def save_graph(self, path: str) -> None:
        """Write the HNSW graph and vectors to ``path``."""
    def memory(self) -> _Memory:
        """Bytes held per structure."""
    @property
    def size(self) -> int: ...
    def id_state(self) -> tuple[int, bool]:
        """(the next automatic id, whether the automatic ids are exhausted)."""
    @property
    def id_map_mode(self) -> str:
        """How ids are kept: "identity" (equal to rows), "dense" (arrays) or "hash"."""
    @property
    def dim(self) -> int: ...
    @property
    def M(self) -> int: ...
    @property
    def ef_construction(self) -> int: ...


def build_info() -> _BuildInfo:
    """What was built (compiler, flags, baseline) and chosen at run time (simd)."""
def decay_eval(ages: _F64, spec: _F64, variant: str = "") -> _F64:
    """D(age) for ages in days and one decay spec (code, p0, p1, scale, symmetric)."""
def score(similarity: _F32, observed_at: _I64, reliability: _F32 | None, fact_type: _I32 | None,
          valid_from: _I64 | None, valid_to: _I64 | None, deprecated: _U8 | None, specs: _F64, t: int,
          fusion: int, alpha: float, penalty: float, invalid_policy: int, tau: float, threads: int = 1,
          out_score: _F32 | None = None, out_validity: _F32 | None = None,
          future_policy: int = -1) -> tuple[_F32, _F32]:
    """ce.score's kernel: (fused score, validity) per candidate; ``out_*`` are written in
    place when given (float32, C-contiguous, writable, one value per candidate);
    ``future_policy`` for rows with valid_from > t (-1: ``invalid_policy``)."""
def probe_choice(n: int, f: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    """Which queries of a group the planner sends to the probe plan (probe.hpp), given
    each one's rows in force (0: the probe does not apply) and the store's ``n`` rows."""
def take_strings(columns: Sequence[Sequence[tuple[_I32, _U8, _U8 | None, int]]], starts: _I64,
                 rows: _I64) -> list[tuple[_I32, _U8, npt.NDArray[np.bool_] | None]]:
    """The strings of ``rows`` from string columns stored as Arrow buffers in the same parts
    (per column, one (int32 offsets, uint8 data, uint8 validity bitmap or None, its first
    bit) tuple per part; ``starts``: each part's first row, then the row count): per column,
    (offsets, data, valid or None when every row taken is valid), the rows in order."""
def record_batch(columns: Sequence[tuple[str, str, Any, npt.NDArray[np.bool_] | None]],
                 schema: bool = True) -> tuple[Any, Any]:
    """(name, format, values, valid) columns as one Arrow record batch, as the PyCapsules
    ("arrow_schema", "arrow_array") of the Arrow C data interface; formats i, l, L, g, f,
    b, tsu:<tz>, and u with (int32 offsets, uint8 data) or a list of str. ``schema=False``:
    (the "arrow_array" capsule, the address of its ArrowArray) without the schema, for
    ``pa.RecordBatch._import_from_c(address, schema)`` with a schema imported before (the
    capsule must outlive the import; the struct is freed with the capsule)."""
def list_f32(values: Any) -> npt.NDArray[np.float32] | None:
    """A list of Python floats (and ints of magnitude at most 2**24) as float32, bit for bit
    as ``np.asarray(values).astype(np.float32)``; None for anything else."""
def unit_rows(m: _F32, cosine: bool) -> tuple[_F32, int, int]:
    """Query vectors (n, d) as the search takes them: (a new array: under cosine each row
    scaled to unit length in double and rounded, else a copy; the first bad row or -1;
    1 for a non-finite component, 2 for a zero row under cosine)."""
def json_rows(columns: Sequence[tuple[str, str, Any, npt.NDArray[np.bool_] | None]], starts: _I64,
              key: str) -> list[bytes]:
    """The columns (as ``record_batch`` takes them; timestamps UTC) written as JSON: per
    range ``[starts[i], starts[i + 1])`` one body ``{key: [{column: value, ...}, ...]}``."""
def ppr(ptr: _I64, rel: _I32, dst: _I32, time: _I64, quality: _F32 | None, conf: _F64, beta: _F64,
        seeds: _I32, seed_mass: _F64, T: int, alpha: float = 0.15, eps: float = 1e-06, tau: float = 0.001,
        k: int = 50) -> _PprResult:
    """Decay-weighted seeded personalised PageRank over a temporal CSR graph at time T."""

# Kernel test bindings ("" = the variant chosen at run time, else a name from
# build_info()["simd_available"]), compared against NumPy in tests/test_compact.py.
def dot(a: _F32, b: _F32, variant: str = "") -> float:
    """The engine's float similarity <a, b>."""
def dot_i8_some(c: _I8, Q: _F32, which: _U32, variant: str = "") -> _F32:
    """<Q[which[j]], c> for an int8 row c and queries Q (G, len(c))."""
def dot_qt_i8(C: _I8, Q: _F32, variant: str = "") -> _F32:
    """C @ Q.T for int8 rows C (R, d) and 1-64 float queries Q (G, d), as (R, G)."""
def quantise_queries(Q: _F32) -> tuple[_I8, _F64, _F64]:
    """The planner's int8 query quantisation of Q (G, d): (q8, scale, residual norm)."""
def dot_s8_1(C: _I8, q8: _I8, variant: str = "") -> _I32:
    """Exact int32 C @ q8 for int8 rows C (R, d) and one int8 query (a lone query's kernel; AVX512-VNNI only)."""
def dot_qt_s8(C: _I8, Q8: _I8, variant: str = "") -> _I32:
    """Exact int32 C @ Q8.T for int8 rows C (R, d) and 1-64 int8 queries (AVX512-VNNI only)."""
