"""``chrono serve STORE``: the engine behind HTTP (an ASGI app: Starlette, served by uvicorn).

Why this stack: Starlette is a small, well-kept ASGI toolkit (routing, requests, responses,
lifespan) with no model layer to fight, so bodies are checked by the engine's own rules
(one set of error messages for Python, the CLI and HTTP); uvicorn is the reference ASGI
server; bodies are parsed and written by orjson. One process holds one engine: concurrent
single searches are gathered on the event loop into planner groups (the engine's
coalescing policy, :class:`~chrono_engine._coalesce.AsyncCoalescer`), each run and encoded
on one worker thread; other reads run on a thread pool; writes are serialised by the
engine's write lock and logged by its write-ahead log before they are acknowledged.

Paths follow the vector databases' collection style; the one collection is the store::

    GET  /livez  /readyz  /metrics  /openapi.json
    GET  /v1/collections                           [read]
    GET  /v1/collections/{c}                       [read]  info
    POST /v1/collections/{c}/search                [read]  {"vector", "k", options...}
    POST /v1/collections/{c}/search/batch          [read]  {"vectors", "k", options...}
    POST /v1/collections/{c}/validity              [read]  {"at", "ids"?}
    POST /v1/collections/{c}/query                 [read]  {"text", "k"?, "now"?, "tz"?, "distinct"?, "undated"?,
                                                            "window_fit"?, "embed_text"?, options...}
    POST /v1/collections/{c}/score                 [read]  {"candidates": {column: [...]}, "as_of", policy...}
    POST /v1/collections/{c}/verify                [read]  {"chains": [[[id, ...] per step] per chain], "at", "gamma"}
    GET  /v1/collections/{c}/history/{stem_id}     [read]  ?known_at=
    POST /v1/collections/{c}/ingest                [write] {"rows": [...], "order"?} or an Arrow IPC stream
                                                            (?order=: auto (default), valid_from or input)
    POST /v1/collections/{c}/supersede             [write] {"stem_id", "rows", "effective_at", "version"?, ...}
    POST /v1/collections/{c}/retract               [write] {"ids", "at"?}
    POST /v1/collections/{c}/deprecate             [write] {"ids", "effective_at"?, "at"?}
    POST /v1/collections/{c}/snapshots             [write] {"name"?}: a checkpoint, and a named copy
    GET  /v1/collections/{c}/snapshots             [read]  the named copies
    POST /v1/collections/{c}/snapshots/{name}/restore  [write] the store back to a named copy

Search answers are JSON (``{"hits": [...]}``) or, with ``Accept:
application/vnd.apache.arrow.stream``, the result table as an Arrow IPC stream.

Auth: ``Authorization: Bearer KEY`` (or ``X-API-Key: KEY``). Keys come from the environment
(``CHRONO_API_KEYS``: admin keys, ``CHRONO_READ_KEYS``: read-only keys, comma-separated) or a
file (lines ``admin KEY`` / ``read KEY``). No key or an unknown key: 401; a read-only key on
a write: 403. Keys are compared in constant time against every configured key and never
logged. A server without keys refuses to start unless ``allow_anonymous`` (``--no-auth``),
which only a loopback address may use.

Snapshots: ``POST .../snapshots`` checkpoints the store and writes a full copy of it, as a
store of its own, to ``<snapshots>/<name>`` (``snapshots``: default ``<store>.snapshots``
beside the store; ``name``: letters, digits, ``.``, ``_``, ``-``, at most 64, default the UTC
time). ``POST .../snapshots/{name}/restore`` verifies the copy (read-only open), writes the
live store as a named copy ``pre-restore-<time>`` first, then writes the copy into the live
store as its new live snapshot (the store's own atomic checkpoint: a crash leaves the old
state or the restored one, never a mixture) and serves it. Writes wait while a snapshot or
a restore runs; reads go on, on the old state until the restored one is open.

Limits (:class:`Limits`): request body size (413), vectors per batch, rows per ingest or
supersede and ids, candidates, chains per request, fact types per search, characters of a
query's text, ``k`` (422), and a timeout for reads (504). Every refusal names the field and
the limit and changes nothing. Every list a body holds is counted before anything reads it,
and what grows with a body runs on the thread pool, not the event loop (a read's under
the timeout).

Read replicas (``--read-only``): the store opened read-only (no writer lock, so any number of
processes can serve one store beside its writer); every write endpoint answers 403
``read_only``. With ``--refresh SECONDS`` the replica checks the store every that many
seconds and, when the writer has logged a write or checkpointed since, opens it again and
serves the new state (the old one answers the requests already under way; two copies are
in memory while it opens). One process's event loop serves ~5 k requests/s whatever the
core count; replicas are how reads scale past that on one machine: ``--read-only --workers
N`` runs N of them as one service on one port (:func:`_serve_workers`, docs/serve.md).
"""
from __future__ import annotations

import asyncio
import bisect
import datetime as _dt
import gc
import hmac
import io
import json
import math
import os
import re
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.ipc as ipc

from ._args import shown
from ._coalesce import AsyncCoalescer
from ._columns import numpy_dtype
from ._ipc import LayoutError, StreamError, TooLarge, read_stream
from ._util import open_regular
from ._state import INGEST_ORDERS, ingest_order
from ._time import OPEN_END
from .search import NUMERIC_COLUMNS, SearchOptions, query_cuts, to_table
from .errors import (ChronoError, ConfigError, LifecycleError, NotFoundError, QueryError, SchemaError, ServiceError,
                     StorageError)

__all__ = ["Limits", "Keys", "make_app", "serve"]

#: what a /query body may hold besides "text", "k" and the search options: Engine.query's own
#: arguments (checked by Engine.query)
_QUERY_FIELDS = ("now", "tz", "lang", "embed_text", "distinct", "undated", "window_fit")

ARROW = "application/vnd.apache.arrow.stream"
_NUMPY_TYPES = {name: numpy_dtype(t) for name, t in NUMERIC_COLUMNS.items()}
_READ, _WRITE = "read", "admin"
#: columns of a /score body's candidates (seven are read; the rest are kept and not answered)
_MAX_COLUMNS = 64
#: the request log's lines are written together, at most this many seconds after the first
_LOG_EVERY = 0.05


@dataclass(frozen=True)
class Limits:
    """What one request may ask (each refusal names the field)."""

    max_body: int = 16 * 2**20      # bytes of a request body
    max_batch: int = 1024           # vectors per search/batch
    max_rows: int = 100_000         # rows per ingest or supersede
    max_k: int = 1000               # k of a search
    timeout: float = 30.0           # seconds a read may take
    max_fact_types: int = 1024      # fact types a search names
    max_text: int = 10_000          # characters of a query's text


@dataclass
class Keys:
    """API keys by role. ``admin`` keys read and write; ``read`` keys only read."""

    admin: list[bytes] = field(default_factory=list)
    read: list[bytes] = field(default_factory=list)

    @classmethod
    def from_env(cls, path: str | os.PathLike | None = None) -> Keys:
        """Keys from ``CHRONO_API_KEYS`` / ``CHRONO_READ_KEYS`` and, when given, a file of
        ``admin KEY`` / ``read KEY`` lines (``#`` comments). A malformed line is a
        ConfigError naming its number (not its content)."""
        k = cls([s.strip().encode() for s in os.environ.get("CHRONO_API_KEYS", "").split(",") if s.strip()],
                [s.strip().encode() for s in os.environ.get("CHRONO_READ_KEYS", "").split(",") if s.strip()])
        if path is not None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"keys file {path}: cannot read it ({type(e).__name__})") from None
            for i, line in enumerate(text.splitlines(), 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                parts = line.split()
                if len(parts) != 2 or parts[0] not in ("admin", "read") or len(parts[1]) < 8:
                    raise ConfigError(f"keys file {path}, line {i}: expected 'admin KEY' or 'read KEY' "
                                      "(a key of at least 8 characters)")
                (k.admin if parts[0] == "admin" else k.read).append(parts[1].encode())
        return k

    def role(self, given: bytes | None) -> str | None:
        """The role of a presented key (None: none matches). Every configured key is
        compared, in constant time, whatever matches first."""
        if not given:
            return None
        found = None
        for role, keys in ((_WRITE, self.admin), (_READ, self.read)):
            for key in keys:
                if hmac.compare_digest(key, given) and found is None:
                    found = role
        return found

    def __bool__(self) -> bool:
        return bool(self.admin or self.read)


class _HTTPError(Exception):
    def __init__(self, status: int, field_: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field, self.message = status, field_, message


def _json_default(x: Any) -> Any:
    if isinstance(x, (_dt.datetime, _dt.date)):
        return x.isoformat()
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(type(x).__name__)


def _dumps(obj: Any) -> bytes:
    """JSON bytes (orjson: NaN / inf become null, datetimes ISO 8601); what orjson refuses
    (an integer beyond 64 bits, a lone surrogate in a string) goes through the standard
    library, escaped to ASCII."""
    try:
        return orjson.dumps(obj, default=_json_default)
    except TypeError:
        pass

    def clean(v: Any) -> Any:  # JSON has no NaN / inf: null
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v
    return json.dumps(clean(obj), default=_json_default, ensure_ascii=True, allow_nan=False).encode()


def _iso_utc(col: Any) -> list:
    """A UTC microsecond timestamp column (Arrow) as :func:`_iso_us` writes it."""
    a = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    us = np.frombuffer(a.buffers()[1], np.int64, count=len(a), offset=a.offset * 8)  # nulls: any value
    return _iso_us(us, a.is_null().to_numpy(zero_copy_only=False) if a.null_count else None)


def _iso_us(us: np.ndarray, nulls: np.ndarray | None) -> list:
    """UTC microsecond times (int64) as ``datetime.isoformat()`` writes them
    (``2024-03-01T00:00:00+00:00``; microseconds only when not zero), None where ``nulls``,
    without making a datetime per value (NumPy's ``datetime_as_string``: ~4x cheaper, and
    any year)."""
    text = np.datetime_as_string(us.astype("datetime64[us]"), unit="us").tolist()
    out = [(x[:-7] if x.endswith(".000000") else x) + "+00:00" for x in text]
    if nulls is not None:
        out = [None if z else x for x, z in zip(out, nulls)]
    return out


def _floats(a: np.ndarray) -> list:
    """Floats as Python floats, NaN / inf as None (JSON has neither)."""
    vals = a.tolist()
    if not np.isfinite(a).all():
        vals = [v if math.isfinite(v) else None for v in vals]
    return vals


def _json_columns(data: dict) -> list[list]:
    """:func:`chrono_engine.search.result_columns` as the Python lists :func:`_columns`
    makes of the table, without building the table."""
    cols = []
    for name, v in data.items():
        if name in _NUMPY_TYPES:
            a = np.asarray(v, _NUMPY_TYPES[name])
            cols.append(_floats(a) if a.dtype.kind == "f" else a.tolist())
        elif name == "valid_from":
            cols.append(_iso_us(np.asarray(v, np.int64), None))
        elif name == "valid_to":
            v = np.asarray(v, np.int64)
            open_ = v == OPEN_END
            cols.append(_iso_us(np.where(open_, 0, v), open_ if open_.any() else None))
        elif isinstance(v, (pa.Array, pa.ChunkedArray)):
            cols.append(v.to_pylist())
        else:
            cols.append(list(v))
    return cols


def _columns(table: pa.Table) -> list[list]:
    """The table's columns as Python lists, as a JSON answer carries them: floats as
    Python floats (NaN / inf as None), UTC timestamps as ISO strings, the rest as Arrow
    converts them (column-wise: 3-4x faster than ``Table.to_pylist``)."""
    cols = []
    for col in table.columns:
        t = col.type
        if pa.types.is_floating(t):
            vals = _floats(col.to_numpy(zero_copy_only=False))
        elif pa.types.is_timestamp(t) and t.unit == "us" and t.tz in ("UTC", "+00:00"):
            vals = _iso_utc(col)
        else:
            vals = col.to_pylist()
        cols.append(vals)
    return cols


def _records(table: pa.Table) -> list[dict]:
    """The table's rows as dicts (see :func:`_columns`)."""
    names = table.column_names
    return [dict(zip(names, row)) for row in zip(*_columns(table))]


def _arrow_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def _group_bodies(answer: dict | pa.Table, arrow: list) -> list:
    """One coalesced group's answer (result columns or the ``search_batch`` table, with
    its ``query`` column) as each call's response body: JSON ``{"hits": [...]}`` (the
    columns converted once for the whole group), or an Arrow IPC stream where
    ``arrow[i]``."""
    if isinstance(answer, dict):
        q = answer["query"]
        data = {name: v for name, v in answer.items() if name != "query"}
        names = list(data)
        table = to_table(data) if any(arrow) else None
        cols = _json_columns(data) if not all(arrow) else None
    else:
        q = answer.column("query").to_numpy()
        table = answer.drop_columns(["query"])
        names = table.column_names
        cols = _columns(table) if not all(arrow) else None
    cuts = query_cuts(q, len(arrow)).tolist()
    out = []
    for i, want_arrow in enumerate(arrow):
        a, b = cuts[i], cuts[i + 1]
        if want_arrow:
            out.append(_arrow_bytes(table.slice(a, b - a)))
        else:
            out.append(_dumps({"hits": [dict(zip(names, row)) for row in zip(*[c[a:b] for c in cols])]}))
    return out


def _search_group(batch: list) -> list:
    """The service's coalesced searches (:class:`~chrono_engine._coalesce.AsyncCoalescer`
    requests keyed by (engine, the call's key), each with its payload and whether it wants
    Arrow): every call's response body (:meth:`Engine._answers`: the answers of
    :meth:`Engine.search`): JSON bodies written by one native call
    (:func:`chrono_engine.search.result_json`) when no call of the group wants Arrow and
    none asks ``explain`` or ``verify``; else from the group's result columns."""
    eng, k = batch[0].key[0], batch[0].key[1][0]
    arrow = [r.payload[1] for r in batch]

    def bodies(answer: Any, calls: Any) -> list:
        if isinstance(answer, list):  # every call's JSON body, written natively
            return answer
        return _group_bodies(answer, [arrow[i] for i in calls])
    return eng._answers([r.payload[0] for r in batch], k, bodies, table="json" if not any(arrow) else False)


#: seconds between a worker's publications of its counters (``chrono serve --workers``)
_PUBLISH_EVERY = 1.0


#: the most bytes a worker's published counters are read to (a few kB in practice)
_COUNTERS_MAX = 1 << 20


def _read_regular(path: Path, limit: int) -> bytes:
    """A file's bytes if it is a regular file of at most ``limit`` bytes (opened without
    following a link or blocking on a FIFO, :func:`._util.open_regular`); OSError else."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path.name} is more than {limit} bytes")
    return data


class _Metrics:
    """Counters and a latency histogram per endpoint, in Prometheus' text format."""

    _BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count: dict = {}
        self.hist: dict = {}

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            self.count[(endpoint, status)] = self.count.get((endpoint, status), 0) + 1
            h = self.hist.setdefault(endpoint, [0] * (len(self._BUCKETS) + 1) + [0.0])
            h[bisect.bisect_left(self._BUCKETS, seconds)] += 1  # its bucket; cumulated in text()
            h[-1] += seconds

    def snapshot(self) -> dict:
        """The counters as JSON-able data (what :meth:`publish` writes)."""
        with self._lock:
            return {"count": [[ep, st, n] for (ep, st), n in self.count.items()],
                    "hist": {ep: list(h) for ep, h in self.hist.items()}}

    def publish(self, folder: Path, worker: int) -> None:
        """This worker's counters into ``folder`` (``chrono serve --workers``: the
        supervisor's private folder), whole: written beside, then renamed over."""
        tmp = folder / f".worker-{worker}.json"
        tmp.write_bytes(orjson.dumps(self.snapshot()))
        os.replace(tmp, folder / f"worker-{worker}.json")

    def merged(self, folder: Path, worker: int) -> _Metrics:
        """The service's counters: this worker's now, and every other worker's as it last
        published them (at most :data:`_PUBLISH_EVERY` seconds old); a file that does not
        read as counters is skipped."""
        out = _Metrics()
        snaps = [self.snapshot()]
        for f in folder.glob("worker-*.json"):
            if f.name != f"worker-{worker}.json":
                try:
                    snaps.append(orjson.loads(_read_regular(f, _COUNTERS_MAX)))
                except (OSError, orjson.JSONDecodeError):
                    continue
        width = len(self._BUCKETS) + 2
        for snap in snaps:
            try:  # the whole file read first: one that is not counters adds nothing
                counts = [(str(ep), int(st), int(n)) for ep, st, n in snap["count"]]
                hists = [(str(ep), [int(v) for v in h[:-1]] + [float(h[-1])]) for ep, h in snap["hist"].items()
                         if len(h) == width]
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
            for ep, st, n in counts:
                out.count[(ep, st)] = out.count.get((ep, st), 0) + n
            for ep, h in hists:
                mine = out.hist.setdefault(ep, [0] * (width - 1) + [0.0])
                for i, v in enumerate(h):
                    mine[i] += v
        return out

    def text(self, items: int) -> str:
        out = ["# HELP chrono_requests_total Requests answered, by endpoint and status.",
               "# TYPE chrono_requests_total counter"]
        with self._lock:
            for (ep, st), n in sorted(self.count.items()):
                out.append(f'chrono_requests_total{{endpoint="{ep}",status="{st}"}} {n}')
            out += ["# HELP chrono_request_seconds Request latency.", "# TYPE chrono_request_seconds histogram"]
            for ep, h in sorted(self.hist.items()):
                cum = 0
                for i, b in enumerate(self._BUCKETS):
                    cum += h[i]
                    out.append(f'chrono_request_seconds_bucket{{endpoint="{ep}",le="{b}"}} {cum}')
                total = cum + h[len(self._BUCKETS)]
                out.append(f'chrono_request_seconds_bucket{{endpoint="{ep}",le="+Inf"}} {total}')
                out.append(f'chrono_request_seconds_count{{endpoint="{ep}"}} {total}')
                out.append(f'chrono_request_seconds_sum{{endpoint="{ep}"}} {h[-1]:.6f}')
        out += ["# HELP chrono_items Items in the store.", "# TYPE chrono_items gauge", f"chrono_items {items}"]
        return "\n".join(out) + "\n"


def _status_of(e: BaseException) -> int:
    if isinstance(e, NotFoundError):
        return 404
    if isinstance(e, (QueryError, SchemaError, LifecycleError)):
        return 422
    if isinstance(e, StorageError):
        return 503
    return 400 if isinstance(e, ChronoError) else 500


_SNAPSHOT_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


def make_app(engine: Any, *, name: str = "default", keys: Keys | None = None, limits: Limits | None = None,
             allow_anonymous: bool = False, save_on_shutdown: bool = True, log: Any = None,
             snapshots: str | os.PathLike | None = None, read_only: bool = False,
             refresh: tuple[str | os.PathLike, float] | None = None, worker: int | None = None,
             shared_metrics: str | os.PathLike | None = None) -> Any:
    """The ASGI app serving ``engine`` as collection ``name`` (see the module docstring).
    ``log``: a writable text stream for the JSON-lines request log (default stderr; None
    after ``log=False``), written in batches at most 50 ms apart and at shutdown. ``snapshots``: the directory of named snapshots (default
    ``<store>.snapshots`` beside the engine's store; none for an engine without a store).
    ``read_only``: every write endpoint answers 403 ``read_only``. ``refresh``: (store path,
    seconds): a read replica that opens the store again (read-only) when it has changed,
    checked every that many seconds (:func:`store_version`). ``worker``: the worker
    process's index (``chrono serve --workers``), given in each log line;
    ``shared_metrics``: the workers' folder where each publishes its counters every
    :data:`_PUBLISH_EVERY` seconds and from which ``/metrics`` sums them all."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    keys = keys if keys is not None else Keys()
    limits = limits or Limits()
    _need_keys(keys, allow_anonymous)
    log = sys.stderr if log is None else (None if log is False else log)
    if refresh is not None:
        try:
            every = float(refresh[1])
        except (TypeError, ValueError, IndexError):
            every = math.nan
        if not (read_only and 0 < every <= 86400):
            raise ConfigError("refresh is (store path, seconds) for a read-only service, every 0 to 86400 seconds")
    metrics = _Metrics()
    state = {"ready": True, "refreshes": 0}
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(max_workers=max(1, int(engine.coalesce_group)), thread_name_prefix="chrono-serve")
    # single searches coalesced on the loop, groups on one worker thread, a lone one on the loop
    searches = AsyncCoalescer(inline=True, settle=0, name="chrono-serve-search")
    gate = threading.Lock()  # writes, snapshots and restores, one at a time
    snap_dir = Path(snapshots) if snapshots is not None else (
        Path(engine.path).with_name(Path(engine.path).name + ".snapshots") if engine.path is not None else None)

    async def body_of(request: Request) -> bytes:
        return await body_received(request.headers.get("content-length"), request.receive)

    async def body_received(declared: str | None, receive: Any) -> bytes:
        """A request body from its ASGI ``receive`` (the routes' and the fast path's):
        a declared or streamed length past the limit is a 413, a client gone before its
        body ended a 400."""
        if declared is not None and declared.isdigit() and int(declared) > limits.max_body:
            raise _HTTPError(413, "body", f"body of {declared} bytes exceeds the limit of {limits.max_body}")
        chunks, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                raise _HTTPError(400, "body", "the client went away before its body ended")
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > limits.max_body:
                raise _HTTPError(413, "body", f"body exceeds the limit of {limits.max_body} bytes")
            chunks.append(chunk)
            if not msg.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def parse_json(raw: bytes) -> dict:
        try:
            obj = orjson.loads(raw)  # rejects NaN / Infinity, invalid UTF-8, nesting past 1024
        except ValueError as e:
            raise _HTTPError(400, "body", f"body is not JSON ({type(e).__name__}: {str(e)[:120]})") from None
        if not isinstance(obj, dict):
            raise _HTTPError(400, "body", "body must be a JSON object")
        return obj

    def require(obj: dict, name: str) -> Any:
        if name not in obj:
            raise _HTTPError(422, name, f"field {name!r} is required")
        return obj[name]

    def no_unknown(obj: dict, known: Any) -> None:
        """A 422 naming the first (in sort order) of ``obj``'s fields not in ``known``."""
        unknown = [kk for kk in obj if kk not in known]
        if unknown:
            first = min(unknown)
            raise _HTTPError(422, first[:80], f"unknown field {shown(first)}")

    def counted(value: Any, field_: str, limit: int, what: str) -> None:
        """A 422 naming ``field_`` and the limit when the list ``value`` holds more than
        ``limit`` items: checked before anything reads them."""
        if isinstance(value, list) and len(value) > limit:
            raise _HTTPError(422, field_, f"{len(value)} {what} exceed the limit of {limit}")

    def check_k(obj: dict) -> int:
        k = obj.get("k", 10)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= limits.max_k:
            raise _HTTPError(422, "k", f"k must be an integer in [1, {limits.max_k}]")
        return k

    option_names = frozenset(SearchOptions.names())

    def options(obj: dict, skip: tuple) -> dict:
        opts = {kk: v for kk, v in obj.items() if kk not in skip}
        no_unknown(opts, option_names)
        counted(opts.get("fact_types"), "fact_types", limits.max_fact_types, "fact types")
        if isinstance(opts.get("window"), list):
            opts["window"] = tuple(opts["window"])
        return opts

    def gated(fn: Any, *args: Any) -> Any:
        with gate:
            return fn(*args)

    async def run(fn: Any, *args: Any, read: bool = True) -> Any:
        """``fn(*args)`` on the pool: a read (and a write's parse and checks) under the
        timeout; a write under the gate, to its end."""
        loop = asyncio.get_running_loop()
        if not read:  # a write, once started, runs to its end: it is acknowledged or refused whole
            return await loop.run_in_executor(pool, lambda: gated(fn, *args))
        fut = loop.run_in_executor(pool, lambda: fn(*args))
        try:
            return await asyncio.wait_for(fut, limits.timeout)
        except asyncio.TimeoutError:
            raise _HTTPError(504, "timeout", f"the request took longer than {limits.timeout} s") from None

    async def pooled(request: Request, work: Any, arrow: bool = False) -> Response:
        """A read: the body received on the loop, then ``work`` of its JSON object (parsed,
        checked, run and encoded) on the pool, under the timeout."""
        raw = await body_of(request)
        return answer(await run(lambda: work(parse_json(raw))), arrow)

    def wants_arrow(request: Request) -> bool:
        return ARROW in request.headers.get("accept", "")

    def hits_body(table: pa.Table, arrow: bool) -> bytes:
        return _arrow_bytes(table) if arrow else _dumps({"hits": _records(table)})

    def answer(body: bytes, arrow: bool = False) -> Response:
        return Response(body, media_type=ARROW if arrow else "application/json")

    def ids_body(ids: Any) -> bytes:
        return _dumps({"ids": np.asarray(ids, np.int64).tolist()})

    def collection(request: Request) -> None:
        c = request.path_params.get("c")
        if c is not None and c != name:
            raise _HTTPError(404, "collection", f"no collection {c[:80]!r} (this server has {name!r})")

    # ----------------------------------------------------------------- handlers
    # A handler receives the body on the loop (at most max_body bytes); what grows with the
    # body (the parse, the checks, the call and the answer's encoding) runs on the pool,
    # under the timeout for reads (run): the loop goes on answering meanwhile. The single
    # search alone is checked on the loop (search_answer), every list in it bounded first.
    async def info(request: Request) -> Response:
        collection(request)
        return JSONResponse({"name": name, "dim": engine.dim, "metric": engine.metric, "items": len(engine),
                             "fact_types": list(engine.fact_types), "stems": len(engine.stems),
                             "path": str(engine.path) if engine.path else None})

    async def collections(request: Request) -> Response:
        return JSONResponse({"collections": [name]})

    async def search(request: Request) -> Response:
        collection(request)
        arrow = wants_arrow(request)
        return answer(await search_answer(await body_of(request), arrow), arrow)

    async def search_answer(raw: bytes, arrow: bool) -> bytes:
        """One search's response body from its request body (both paths: Starlette's
        route and the raw fast path, :func:`fast_search`)."""
        obj = parse_json(raw)
        vec, k = require(obj, "vector"), check_k(obj)
        kw = options(obj, ("vector", "k"))
        eng = engine
        key, payload = eng._prepare(vec, k, None, kw)  # the call's own checks, its times fixed now
        searches.max_group = eng._max_group()
        try:
            return await searches.submit((eng, key), (payload, arrow), _search_group, limits.timeout)
        except asyncio.TimeoutError:
            raise _HTTPError(504, "timeout", f"the request took longer than {limits.timeout} s") from None

    async def search_batch(request: Request) -> Response:
        collection(request)
        arrow = wants_arrow(request)

        def work(obj: dict) -> bytes:
            vecs, k = require(obj, "vectors"), check_k(obj)
            if not isinstance(vecs, list) or not vecs:
                raise _HTTPError(422, "vectors", "vectors must be a non-empty list of vectors")
            counted(vecs, "vectors", limits.max_batch, "vectors")
            kw = options(obj, ("vectors", "k"))
            return hits_body(engine.search_batch(vecs, k, **kw), arrow)
        return await pooled(request, work, arrow)

    async def validity(request: Request) -> Response:
        collection(request)

        def work(obj: dict) -> bytes:
            at, ids = require(obj, "at"), obj.get("ids")
            if ids is None and len(engine) > limits.max_rows:
                raise _HTTPError(422, "ids", f"give ids: the store has more than {limits.max_rows} items")
            counted(ids, "ids", limits.max_rows, "ids")
            v = engine.validity(at, ids)
            return _dumps({"validity": np.asarray(v, np.float64).tolist()})
        return await pooled(request, work)

    async def query(request: Request) -> Response:
        collection(request)

        def work(obj: dict) -> bytes:
            text, k = require(obj, "text"), check_k(obj)
            if isinstance(text, str) and len(text) > limits.max_text:
                raise _HTTPError(422, "text", f"text of {len(text)} characters exceeds the limit of {limits.max_text}")
            if engine.embedder is None:
                raise _HTTPError(409, "embedder", "this engine has no text embedder: search with a vector instead")
            kw = options(obj, ("text", "k") + _QUERY_FIELDS)
            for name in _QUERY_FIELDS:
                if name in obj:
                    kw[name] = obj[name]
            res = engine.query(text, k, **kw)
            intent = res.intent
            return _dumps({"hits": _records(res.hits), "lang": res.lang, "as_of": res.as_of,
                           "window": list(res.window) if res.window else None,
                           "intent": {"mode": intent.mode, "anchor": intent.anchor,
                                      "window": list(intent.window) if intent.window else None,
                                      "cleaned_query": intent.cleaned_query}})
        return await pooled(request, work)

    async def score(request: Request) -> Response:
        from .scoring import ScoringPolicy, score as ce_score
        collection(request)

        def work(obj: dict) -> bytes:
            cand, as_of = require(obj, "candidates"), require(obj, "as_of")
            if not isinstance(cand, dict) or not cand or not all(isinstance(v, list) for v in cand.values()):
                raise _HTTPError(422, "candidates", "candidates must be an object of equal-length column lists")
            if len(cand) > _MAX_COLUMNS:
                raise _HTTPError(422, "candidates", f"{len(cand)} columns exceed the limit of {_MAX_COLUMNS}")
            n = max(len(v) for v in cand.values())
            if n > limits.max_rows:
                raise _HTTPError(422, "candidates", f"{n} candidates exceed the limit of {limits.max_rows}")
            pol = {kk: obj[kk] for kk in ("fusion", "alpha", "tau", "deprecated", "future", "penalty") if kk in obj}
            no_unknown(obj, {"candidates", "as_of", *pol})
            try:
                policy = ScoringPolicy(decay=engine.decay, **pol)
            except TypeError as e:
                raise _HTTPError(422, "policy", str(e)[:200]) from None
            out = ce_score(cand, as_of=as_of, policy=policy)
            return _dumps({"validity": out.column("validity").to_pylist(), "score": out.column("score").to_pylist()})
        return await pooled(request, work)

    async def verify(request: Request) -> Response:
        from .verify import verify_chains
        from .verify.chains import is_chain_list
        collection(request)

        def work(obj: dict) -> bytes:
            chains, at, gamma = require(obj, "chains"), require(obj, "at"), require(obj, "gamma")
            counted(chains, "chains", limits.max_rows, "chains")
            if not is_chain_list(chains):
                raise _HTTPError(422, "chains", "chains must be [[[item id, ...] per step] per chain]")
            for what, n in (("steps", sum(len(c) for c in chains)),
                            ("facts", sum(len(s) for c in chains for s in c))):
                if n > limits.max_rows:
                    raise _HTTPError(422, "chains", f"{n} {what} exceed the limit of {limits.max_rows}")
            if isinstance(gamma, bool) or not isinstance(gamma, (int, float)):
                raise _HTTPError(422, "gamma", "gamma must be a number in [0, 1]")
            return _dumps({"chains": _records(verify_chains(chains, (engine, at), float(gamma)))})
        return await pooled(request, work)

    async def history(request: Request) -> Response:
        collection(request)
        known = request.query_params.get("known_at")
        stem = request.path_params["stem_id"]
        return answer(await run(lambda: _dumps({"rows": _records(engine.history(stem, known))})))

    def rows_of(raw: bytes, content_type: str, order: str | None) -> tuple[Any, str]:
        """An ingest's rows (a JSON body's ``rows``, or an Arrow IPC stream) and its storage
        order (``order``: the JSON body's field or the query string's, not both)."""
        if content_type.split(";")[0].strip() == ARROW:
            try:  # what it decodes to (decompressed, dictionaries and views expanded): at most max_body
                table = read_stream(raw, limits.max_body)
            except TooLarge as e:
                raise _HTTPError(413, "body", f"Arrow IPC body: {e} (the body limit)") from None
            except LayoutError as e:
                raise _HTTPError(422, "body", f"Arrow IPC body: {str(e)[:200]}") from None
            except StreamError as e:
                raise _HTTPError(400, "body", f"body is not an Arrow IPC stream ({str(e)[:120]})") from None
            n = table.num_rows
            rows: Any = table
        else:
            obj = parse_json(raw)
            rows = require(obj, "rows")
            no_unknown(obj, ("rows", "order"))
            if not isinstance(rows, list):
                raise _HTTPError(422, "rows", "rows must be a list of row objects")
            counted(rows, "rows", limits.max_rows, "rows")
            if not all(isinstance(r, dict) for r in rows):
                raise _HTTPError(422, "rows", "rows must be a list of row objects")
            if "order" in obj:
                if order is not None:
                    raise _HTTPError(422, "order", "order given both in the body and in the query string")
                order = obj["order"]
            n = len(rows)
        if n > limits.max_rows:
            raise _HTTPError(422, "rows", f"{n} rows exceed the limit of {limits.max_rows}")
        try:
            return rows, ingest_order("auto" if order is None else order)
        except SchemaError as e:
            raise _HTTPError(422, "order", str(e)[:200]) from None

    async def ingest(request: Request) -> Response:
        collection(request)
        raw = await body_of(request)
        rows, order = await run(rows_of, raw, request.headers.get("content-type", ""),
                                request.query_params.get("order"))
        return answer(await run(lambda: ids_body(engine.ingest(rows, order=order)), read=False))

    async def supersede(request: Request) -> Response:
        collection(request)
        raw = await body_of(request)

        def checked() -> tuple:
            obj = parse_json(raw)
            stem, rows, eff = require(obj, "stem_id"), require(obj, "rows"), require(obj, "effective_at")
            if not isinstance(rows, list) or len(rows) > limits.max_rows:
                raise _HTTPError(422, "rows", f"rows must be a list of at most {limits.max_rows} row objects")
            extra = {kk: obj[kk] for kk in ("version", "supersedes", "deprecate") if kk in obj}
            no_unknown(obj, ("stem_id", "rows", "effective_at", "version", "supersedes", "deprecate"))
            return stem, rows, eff, extra
        stem, rows, eff, extra = await run(checked)
        return answer(await run(lambda: ids_body(engine.supersede(stem, rows, eff, **extra)), read=False))

    def ids_of(raw: bytes, fields: tuple) -> dict:
        """A retract's or deprecate's body: ``ids`` (at most max_rows of them) and ``fields``."""
        obj = parse_json(raw)
        ids = require(obj, "ids")
        counted(ids, "ids", limits.max_rows, "ids")
        no_unknown(obj, ("ids",) + fields)
        return obj

    async def retract(request: Request) -> Response:
        collection(request)
        obj = await run(ids_of, await body_of(request), ("at",))
        return answer(await run(lambda: ids_body(engine.retract(obj["ids"], obj.get("at"))), read=False))

    async def deprecate(request: Request) -> Response:
        collection(request)
        obj = await run(ids_of, await body_of(request), ("effective_at", "at"))
        out = await run(lambda: ids_body(engine.deprecate(obj["ids"], obj.get("effective_at"), obj.get("at"))),
                        read=False)
        return answer(out)

    def snapshot_name(raw: Any, field_: str = "name") -> str:
        if not isinstance(raw, str) or not _SNAPSHOT_NAME.fullmatch(raw):
            raise _HTTPError(422, field_, f"{field_} must be 1-64 letters, digits, '.', '_' or '-', not starting "
                                          f"with '.', got {shown(raw)}")
        return raw

    def stamp() -> str:
        return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")

    def need_store() -> Path:
        if engine.path is None or snap_dir is None:
            raise _HTTPError(409, "store", "this engine has no store to snapshot (serve a store path)")
        return snap_dir

    def copy_to(target: Path) -> None:
        """A full copy of the store as it is in memory, written to ``target`` (new: not even
        a symbolic link there, which the copy would be written through)."""
        if os.path.lexists(target):
            raise _HTTPError(409, "name", f"a snapshot named {target.name!r} exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        engine.save(target)

    def checkpoint_and_copy(target: Path) -> None:
        engine.save()
        copy_to(target)

    async def snapshot(request: Request) -> Response:
        collection(request)
        d = need_store()
        raw = await body_of(request)
        obj = parse_json(raw) if raw.strip() else {}
        snap = snapshot_name(obj.get("name", stamp()))
        await run(checkpoint_and_copy, d / snap, read=False)
        return JSONResponse({"name": snap, "path": str(d / snap), "items": len(engine), "saved": str(engine.path)})

    def listed(d: Path) -> bytes:
        """The named snapshots in ``d``: its entries that are snapshots (:func:`_not_a_snapshot`)."""
        out = []
        if d.is_dir():
            for p in sorted(d.iterdir()):
                if _SNAPSHOT_NAME.fullmatch(p.name) and _not_a_snapshot(p) is None:
                    t = _dt.datetime.fromtimestamp(os.lstat(p / "CURRENT").st_mtime, _dt.timezone.utc)
                    out.append({"name": p.name, "created": t.isoformat()})
        return _dumps({"snapshots": out})

    async def snapshot_list(request: Request) -> Response:
        collection(request)
        return answer(await run(listed, need_store()))

    def restore_from(src: Path) -> dict:
        nonlocal engine
        from .engine import Engine
        why = _not_a_snapshot(src)  # checked here, under the gate, just before the open
        if why == "missing":
            raise _HTTPError(404, "snapshot", f"no snapshot named {src.name!r}")
        if why is not None:
            raise _HTTPError(422, "snapshot", f"{src.name!r} in the snapshots folder is not a snapshot: {why}")
        old = engine
        restored = Engine.open(src, read_only=True)  # verified before anything changes
        before = snap_dir / f"pre-restore-{stamp()}"
        copy_to(before)  # no checkpoint first: the live store is about to be replaced
        live = Path(old.path)
        settings = {a: getattr(old, a) for a in ("coalesce_group", "coalesce_wait", "partition_min")}
        old.close()  # the writer lock is released; the old engine still answers reads
        try:
            restored.save(live)  # the store's atomic checkpoint: old state or restored, never a mixture
            new = Engine.open(live, threads=old.threads)
        except BaseException:
            engine = Engine.open(live, threads=old.threads)  # whichever state the store holds
            raise
        for a, v in settings.items():
            setattr(new, a, v)
        engine = new
        return {"restored": src.name, "items": len(new), "before": before.name}

    async def snapshot_restore(request: Request) -> Response:
        collection(request)
        d = need_store()
        snap = snapshot_name(request.path_params.get("name"), "snapshot")
        return JSONResponse(await run(restore_from, d / snap, read=False))

    async def livez(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        return JSONResponse({"ready": state["ready"]}, status_code=200 if state["ready"] else 503)

    shared = Path(shared_metrics) if shared_metrics is not None and worker is not None else None

    async def metrics_ep(request: Request) -> Response:
        m = metrics if shared is None else metrics.merged(shared, worker)
        return PlainTextResponse(m.text(len(engine)), media_type="text/plain; version=0.0.4")

    async def publisher() -> None:
        """A worker's counters published for the others' ``/metrics`` (a failed write is
        tried again at the next turn)."""
        while True:
            try:
                metrics.publish(shared, worker)
            except OSError:
                pass
            await asyncio.sleep(_PUBLISH_EVERY)

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_spec(name))

    # ----------------------------------------------------------------- wiring
    c = "/v1/collections/{c}"
    table_ = [  # (path, handler, methods, role: None = no auth)
        ("/livez", livez, ["GET"], None), ("/readyz", readyz, ["GET"], None),
        ("/metrics", metrics_ep, ["GET"], _READ), ("/openapi.json", openapi, ["GET"], None),
        ("/v1/collections", collections, ["GET"], _READ), (c, info, ["GET"], _READ),
        (c + "/search", search, ["POST"], _READ), (c + "/search/batch", search_batch, ["POST"], _READ),
        (c + "/validity", validity, ["POST"], _READ), (c + "/history/{stem_id}", history, ["GET"], _READ),
        (c + "/query", query, ["POST"], _READ), (c + "/score", score, ["POST"], _READ),
        (c + "/verify", verify, ["POST"], _READ),
        (c + "/ingest", ingest, ["POST"], _WRITE), (c + "/supersede", supersede, ["POST"], _WRITE),
        (c + "/retract", retract, ["POST"], _WRITE), (c + "/deprecate", deprecate, ["POST"], _WRITE),
        (c + "/snapshots", snapshot, ["POST"], _WRITE), (c + "/snapshots", snapshot_list, ["GET"], _READ),
        (c + "/snapshots/{name}/restore", snapshot_restore, ["POST"], _WRITE),
    ]

    def authorize(role: str | None, given: Any) -> None:
        """Refuse a request whose key (``given()``: the presented key) may not take
        ``role`` (401 / 403)."""
        if role is not None and (keys or not allow_anonymous):
            have = keys.role(given())
            if have is None:
                raise _HTTPError(401, "authorization", "a valid API key is required")
            if role == _WRITE and have != _WRITE:
                raise _HTTPError(403, "authorization", "this key may only read")
        if role == _WRITE and read_only:
            raise _HTTPError(403, "read_only", "this service is a read replica (chrono serve --read-only): "
                                               "send writes to the store's writer")

    def refusal(e: Exception, endpoint: str) -> tuple[int, bytes]:
        """A failed request's status and JSON body (as Starlette's JSONResponse writes it);
        anything but a refusal is a bug: answered 500 and logged."""
        if isinstance(e, _HTTPError):
            status, obj = e.status, {"error": e.field, "message": e.message}
        elif isinstance(e, ChronoError):
            status, obj = _status_of(e), {"error": type(e).__name__, "message": str(e)[:2000]}
        else:
            status, obj = 500, {"error": "internal", "message": "internal error"}
            if log is not None:
                print(json.dumps({"event": "error", "endpoint": endpoint, "type": type(e).__name__,
                                  "message": str(e)[:500]}), file=log, flush=True)
        return status, json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()

    pending: list[bytes] = []  # request log lines not yet written

    def flush_log() -> None:
        if pending and log is not None:
            # at most ~4 KiB a write, in whole lines: a pipe takes such a write whole, so the
            # lines of the workers sharing one (--workers) never interleave mid-line
            first = size = 0
            for i, line in enumerate(pending):
                if size + len(line) > 4000 and i > first:
                    log.write(b"".join(pending[first:i]).decode())
                    log.flush()
                    first, size = i, 0
                size += len(line)
            log.write(b"".join(pending[first:]).decode())
            log.flush()
            pending.clear()

    def record(method: str, endpoint: str, status: int, t0: float) -> None:
        """A request's metrics and its log line. Lines are written together, at most
        :data:`_LOG_EVERY` seconds after the first of them (or once 256 wait) and at
        shutdown: one write per batch, not one per request."""
        dt = time.perf_counter() - t0
        metrics.observe(endpoint, status, dt)
        if log is not None:
            line = {"ts": _dt.datetime.now(_dt.timezone.utc), "method": method, "endpoint": endpoint,
                    "status": status, "ms": round(dt * 1e3, 3)}
            if worker is not None:
                line["worker"] = worker
            pending.append(_dumps(line) + b"\n")
            if len(pending) >= 256:
                flush_log()
            elif len(pending) == 1:
                try:
                    asyncio.get_running_loop().call_later(_LOG_EVERY, flush_log)
                except RuntimeError:  # no loop (not the case under uvicorn): at once
                    flush_log()

    def guarded(handler: Any, role: str | None, endpoint: str) -> Any:
        async def endpoint_fn(request: Request) -> Response:
            t0 = time.perf_counter()
            try:
                authorize(role, lambda: _presented(request.headers.get("authorization", ""),
                                                   request.headers.get("x-api-key")))
                resp = await handler(request)
            except Exception as e:  # noqa: BLE001 - refusals and bugs alike get their answer
                status, body = refusal(e, endpoint)
                resp = Response(body, status_code=status, media_type="application/json")
            record(request.method, endpoint, resp.status_code, t0)
            return resp
        return endpoint_fn

    search_path = c.replace("{c}", name) + "/search"
    search_endpoint = c + "/search"
    json_headers = [(b"content-type", b"application/json")]
    arrow_headers = [(b"content-type", ARROW.encode())]

    async def fast_search(scope: dict, receive: Any, send: Any) -> None:
        """``POST /v1/collections/{name}/search`` without Starlette's routing, request and
        response objects (the busiest path: a single search per request): the same checks,
        refusals, metrics and log line as the routed endpoints (``guarded``)."""
        t0 = time.perf_counter()
        auth = xkey = accept = declared = None
        for hk, hv in scope["headers"]:  # the first of each, as Starlette's Headers.get
            if hk == b"authorization":
                auth = hv if auth is None else auth
            elif hk == b"x-api-key":
                xkey = hv if xkey is None else xkey
            elif hk == b"accept":
                accept = hv if accept is None else accept
            elif hk == b"content-length":
                declared = hv if declared is None else declared
        arrow = accept is not None and ARROW in accept.decode("latin-1")
        try:
            authorize(_READ, lambda: _presented(auth.decode("latin-1") if auth is not None else "",
                                                xkey.decode("latin-1") if xkey is not None else None))
            raw = await body_received(declared.decode("latin-1") if declared is not None else None, receive)
            status, body = 200, await search_answer(raw, arrow)
            headers = arrow_headers if arrow else json_headers
        except Exception as e:  # noqa: BLE001 - refusals and bugs alike get their answer
            status, body = refusal(e, search_endpoint)
            headers = json_headers
        record("POST", search_endpoint, status, t0)
        await send({"type": "http.response.start", "status": status,
                    "headers": headers + [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def reopen(root: Path, threads: int) -> Any:
        """The store opened again (read-only), with the served engine's settings."""
        from .engine import Engine
        new = Engine.open(root, read_only=True, threads=threads)
        for a in ("coalesce_group", "coalesce_wait", "partition_min"):
            setattr(new, a, getattr(engine, a))
        return new

    async def refresher(root: Path, every: float) -> None:
        """A replica's loop: every ``every`` seconds, the store opened again if it changed
        (a failed open is logged and tried again at the next change check)."""
        nonlocal engine
        loop = asyncio.get_running_loop()
        seen = await loop.run_in_executor(None, store_version, root)
        while True:
            await asyncio.sleep(every)
            now = await loop.run_in_executor(None, store_version, root)
            if now == seen:
                continue
            try:
                engine = await loop.run_in_executor(None, reopen, root, engine.threads)
                seen = now
                state["refreshes"] += 1
            except Exception as e:  # noqa: BLE001 - the old state is served on; logged, tried again
                if log is not None:
                    print(json.dumps({"event": "refresh failed", "type": type(e).__name__,
                                      "message": str(e)[:500]}), file=log, flush=True)

    async def lifespan(app: Any):
        tasks = ([asyncio.create_task(refresher(Path(refresh[0]), every))] if refresh else []) + \
            ([asyncio.create_task(publisher())] if shared is not None else [])
        yield
        for task in tasks:
            task.cancel()
        state["ready"] = False
        flush_log()
        if save_on_shutdown and engine.path is not None and getattr(engine, "_store", None) is not None:
            await asyncio.get_running_loop().run_in_executor(pool, engine.save)
        pool.shutdown(wait=True)
        searches.close()

    routes = [Route(p, guarded(h, role, p), methods=m) for p, h, m, role in table_]
    from contextlib import asynccontextmanager
    routed = Starlette(routes=routes, lifespan=asynccontextmanager(lifespan))

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == search_path and scope["method"] == "POST" \
                and not scope.get("root_path"):
            await fast_search(scope, receive, send)
        else:
            await routed(scope, receive, send)
    app.state = routed.state  # type: ignore[attr-defined]
    app.state.engine = lambda: engine  # the engine served now (a restore or a refresh replaces it)
    app.state.refreshes = lambda: state["refreshes"]
    return app


def _not_a_snapshot(entry: Path) -> str | None:
    """Why ``entry``, in the snapshots folder, is not a named snapshot ("missing" when there
    is nothing there), or None: it must be a folder, not a symbolic link, holding a store
    whose seal (``CURRENT``, opened as a regular file) names a folder in it that is no link
    either; the store's files are then opened without following links (storage/). A link
    anywhere from the snapshots folder down would let a restore replace the live store
    with whatever store it points to, anywhere."""
    from . import storage
    why = _not_a_folder(entry, "it")
    if why is not None:
        return why
    try:
        live = storage.current(entry)["snapshot"]
    except (ChronoError, OSError) as e:
        return f"not a store ({shown(str(e))})"
    why = _not_a_folder(entry / live, f"its snapshot folder {live}")
    return f"its snapshot folder {live} is missing" if why == "missing" else why


def _not_a_folder(path: Path, what: str) -> str | None:
    """Why ``path`` is not a folder ("missing" when absent), a symbolic link not followed."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"{what} cannot be read ({e.strerror})"
    if stat.S_ISLNK(mode):
        return f"{what} is a symbolic link"
    return None if stat.S_ISDIR(mode) else f"{what} is not a folder"


def store_version(root: Path) -> tuple:
    """What changes when the store's writer logs a write or checkpoints: the live snapshot
    its seal names (``CURRENT``, read as :func:`storage.current` reads it) and that
    snapshot's log's size and modification time; None parts where a file is missing or
    unreadable (between a checkpoint's steps, a damaged seal: the open then says why)."""
    from . import _wal, storage
    from .errors import ChronoError
    try:
        snap = storage.current(root)["snapshot"]
    except (ChronoError, OSError):
        return (None, None)
    try:
        st = (root / snap / _wal.LOG_NAME).stat()
        return (snap, (st.st_size, st.st_mtime_ns))
    except OSError:
        return (snap, None)


def _presented(auth: str, key: str | None) -> bytes | None:
    """The key a request presents: ``Authorization: Bearer KEY``, else ``X-API-Key``
    (header values as Starlette decodes them: latin-1)."""
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip().encode("utf-8", "surrogateescape")
    return key.encode("utf-8", "surrogateescape") if key else None


def openapi_spec(name: str) -> dict:
    """The OpenAPI 3.1 description of the service (served at /openapi.json)."""
    obj = {"type": "object"}
    err = {"description": "refused: the body names the field", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "string"}, "message": {"type": "string"}}}}}}
    ok = {"description": "ok", "content": {"application/json": {"schema": obj}}}

    def op(summary: str, body: dict | None = None, params: list | None = None) -> dict:
        o: dict = {"summary": summary, "responses": {"200": ok, "400": err, "401": err, "403": err, "404": err,
                                                      "413": err, "422": err}}
        if body is not None:
            o["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
        o["parameters"] = [{"name": "c", "in": "path", "required": True, "schema": {"type": "string"}}] + (params or [])
        return o

    vec = {"type": "array", "items": {"type": "number"}}
    # search options both search endpoints take (the others: SearchOptions' fields, as JSON);
    # a window end that is null is open
    when = {"mode": {"type": "string", "enum": ["latest", "as_of", "window", "all"]},
            "as_of": {"type": "string"}, "known_at": {"type": "string"},
            "window": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": ["string", "null"]}},
            "fact_types": {"type": "array", "items": {"type": "string"}}}
    search = {"type": "object", "required": ["vector"], "properties": {
        "vector": vec, "k": {"type": "integer", "minimum": 1}, **when}}
    batch = {"type": "object", "required": ["vectors"], "properties": {
        "vectors": {"type": "array", "items": vec}, "k": {"type": "integer", "minimum": 1}, **when}}
    rows = {"type": "object", "required": ["rows"], "properties": {"rows": {"type": "array", "items": obj}}}
    order = {"type": "string", "enum": list(INGEST_ORDERS), "default": "auto"}
    ids = {"type": "object", "required": ["ids"], "properties": {"ids": {"type": "array", "items": {"type": "integer"}},
                                                                 "at": {"type": "string"}}}
    c = "/v1/collections/{c}"
    health = {"get": {"summary": "health", "responses": {"200": ok}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "chrono_engine", "version": "1", "description": f"collection {name!r}"},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/livez": health, "/readyz": health,
            "/v1/collections": {"get": {"summary": "collections", "responses": {"200": ok, "401": err}}},
            c: {"get": op("collection info")},
            c + "/search": {"post": op("search one vector", search)},
            c + "/search/batch": {"post": op("search many vectors", batch)},
            c + "/validity": {"post": op("validity of items at a time", {
                "type": "object", "required": ["at"], "properties": {"at": {"type": "string"}, "ids": ids["properties"]["ids"]}})},
            c + "/query": {"post": op("a question in words (its time intent read from the text)", {
                "type": "object", "required": ["text"], "properties": {
                    "text": {"type": "string"}, "k": {"type": "integer", "minimum": 1},
                    "embed_text": {"type": "string", "enum": ["full", "cleaned"]}, "distinct": {"type": "boolean"},
                    "undated": {"type": "string", "enum": ["auto", "exclude", "include"]},
                    "window_fit": {"type": ["number", "null"], "exclusiveMinimum": 0}}})},
            c + "/score": {"post": op("rescore another retriever's candidates", {
                "type": "object", "required": ["candidates", "as_of"], "properties": {
                    "candidates": obj, "as_of": {"type": "string"}}})},
            c + "/verify": {"post": op("STL robustness of reasoning chains over the store's items", {
                "type": "object", "required": ["chains", "at", "gamma"], "properties": {
                    "chains": {"type": "array"}, "at": {"type": "string"}, "gamma": {"type": "number"}}})},
            c + "/history/{stem_id}": {"get": op("a lineage's versions", None, [
                {"name": "stem_id", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "known_at", "in": "query", "required": False, "schema": {"type": "string"}}])},
            c + "/ingest": {"post": op("add rows (JSON or an Arrow IPC stream); order: how they are stored", {
                "type": "object", "required": ["rows"], "properties": {"rows": rows["properties"]["rows"], "order": order}},
                [{"name": "order", "in": "query", "required": False, "schema": order}])},
            c + "/supersede": {"post": op("a new version of a lineage", {
                "type": "object", "required": ["stem_id", "rows", "effective_at"], "properties": {
                    "stem_id": {"type": "string"}, "rows": {"type": "array", "items": obj},
                    "effective_at": {"type": "string"}, "version": {"type": "string"}}})},
            c + "/retract": {"post": op("stop believing items", ids)},
            c + "/deprecate": {"post": op("deprecate items from a valid time", ids)},
            c + "/snapshots": {"post": op("checkpoint the store and write a named copy", {
                "type": "object", "properties": {"name": {"type": "string"}}}),
                               "get": op("the named snapshots")},
            c + "/snapshots/{name}/restore": {"post": op("restore the store from a named snapshot", None, [
                {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}])},
        },
    }


def serve(path: str, *, host: str = "127.0.0.1", port: int = 8000, name: str | None = None,
          keys_file: str | None = None, allow_anonymous: bool = False, limits: Limits | None = None,
          threads: int | None = None, snapshots: str | None = None, read_only: bool = False,
          refresh: float | None = None, workers: int = 1) -> None:
    """Open the store at ``path`` for writing and serve it until SIGINT/SIGTERM (uvicorn,
    one process, one engine; graceful: in-flight requests finish, then a checkpoint).
    ``read_only``: a read replica (no writer lock; writes answer 403), opening the store
    again every ``refresh`` seconds when it has changed. ``workers`` > 1 (read replicas
    only; Linux): that many worker processes, each its own engine and event loop, sharing
    the port, with ``threads`` engine threads each (default: the cores shared
    out among them); see :func:`_serve_workers`."""
    import uvicorn

    from .engine import Engine
    from ._args import count
    if allow_anonymous and host not in ("127.0.0.1", "::1", "localhost"):
        raise ConfigError("--no-auth serves only a loopback address (127.0.0.1, ::1)")
    if refresh is not None and not read_only:
        raise ConfigError("--refresh is for a read replica (--read-only)")
    workers = count(workers, "workers", lo=1, hi=256, error=ConfigError)
    if workers > 1 and not read_only:
        raise ConfigError("--workers N serves a read replica (--read-only): the store has one writer, so a "
                          "service that writes is one process; run the writer beside the replicas (docs/serve.md)")
    keys = Keys.from_env(keys_file)
    _need_keys(keys, allow_anonymous)  # before the store opens or any worker starts
    app_kw = dict(name=name or Path(path).name, keys=keys, allow_anonymous=allow_anonymous, limits=limits,
                  snapshots=snapshots, read_only=read_only, refresh=(path, refresh) if refresh is not None else None)
    if workers > 1:
        if threads is None:
            threads = max(1, (os.cpu_count() or 1) // workers)
        _serve_workers(workers, host, port, dict(path=path, threads=threads, app=app_kw, supervisor=os.getpid()))
        return
    engine = Engine.open(path, threads=threads, read_only=read_only)
    app = make_app(engine, **app_kw)
    # proxy_headers off: nothing here reads the client's address (the log has none), so
    # uvicorn's X-Forwarded-For middleware would only cost every request a pass
    server = _Server(uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False,
                                    timeout_graceful_shutdown=30, proxy_headers=False))
    # the engine's and the libraries' objects, made once, out of the cyclic collector's
    # sight: its full collections would walk them all (p99 at 64 clients: ~80 -> ~45 ms)
    gc.collect()
    gc.freeze()
    try:
        server.run()
    finally:
        app.state.engine().close()
        engine.close()


def _need_keys(keys: Keys, allow_anonymous: bool) -> None:
    if not keys and not allow_anonymous:
        raise ConfigError("no API keys (set CHRONO_API_KEYS / CHRONO_READ_KEYS or a keys file); "
                          "pass allow_anonymous=True (--no-auth) for a loopback-only development server")


def _reserve(host: str, port: int) -> Any:
    """The service's port, bound (not listening) by the supervisor of :func:`_serve_workers`:
    it holds the port (the one the OS picks for port 0) while each worker listens on its
    own socket at the same address (:func:`_port_socket`)."""
    import socket
    if not sys.platform.startswith("linux") or not hasattr(socket, "SO_REUSEPORT"):
        raise ConfigError("--workers needs Linux (its SO_REUSEPORT shares a port's connections out among processes)")
    family, _, _, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return _port_socket(family, addr, listen=False)


def _port_socket(family: int, addr: tuple, *, listen: bool) -> Any:
    """A TCP socket bound to ``addr`` with ``SO_REUSEPORT`` (the supervisor's, and each
    worker's, listening: the kernel hands each new connection to one of the listening
    sockets, by a hash of its addresses)."""
    import socket
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(addr)
        if listen:
            sock.listen(2048)  # uvicorn's backlog
    except BaseException:
        sock.close()
        raise
    return sock


def _serve_workers(workers: int, host: str, port: int, kw: dict) -> None:
    """``workers`` processes (started fresh: ``spawn``), each opening the store read-only and
    serving it with its own engine and event loop (:func:`_worker`) on its own listening
    socket at the port held here (``SO_REUSEPORT``; Linux): the kernel shares new
    connections out among them by a hash of their addresses (one socket shared by all
    would not: an asyncio loop accepts every pending connection at once, and one worker
    took all 16 of a test's). A worker that cannot start (the store
    unreadable, say) fails the whole start with its error. Then this process waits: SIGINT
    or SIGTERM is passed on to every worker as SIGTERM (each finishes its requests under
    way, as one process does); a worker that exits meanwhile stops the others and raises
    :class:`ServiceError` (a process manager restarts the service). The workers publish
    their counters to a private folder made here, and each one's ``/metrics`` sums them."""
    import builtins
    import multiprocessing
    import shutil
    import signal
    import tempfile
    from multiprocessing.connection import wait

    from . import errors
    ctx = multiprocessing.get_context("spawn")
    sock = _reserve(host, port)
    kw = dict(kw, family=sock.family, address=sock.getsockname(),
              metrics=tempfile.mkdtemp(prefix="chrono-serve-metrics-"))  # private (0700); removed at the end
    stop: list = []
    old = {s: signal.signal(s, lambda signum, frame: stop.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    procs: list = []
    try:
        conns = {}
        for i in range(workers):
            r, w = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(i, w, kw), name=f"chrono-serve-{i}")
            p.start()
            w.close()
            procs.append(p)
            conns[r] = i
        opened = []
        while conns and not stop:  # every worker has opened the store, or one could not
            for c in wait(list(conns), timeout=0.5):
                i = conns.pop(c)
                try:
                    msg = c.recv()
                except EOFError:
                    c.close()
                    procs[i].join(5)
                    raise ServiceError(f"worker {i} exited before it was ready (exit status {procs[i].exitcode})",
                                       worker=i) from None
                opened.append(c)
                if msg[0] == "error":  # the worker's own error (the store's, the engine's, the OS's): raised here
                    cls = getattr(errors, msg[1], None) or getattr(builtins, msg[1], None)
                    if not (isinstance(cls, type) and issubclass(cls, (errors.ChronoError, OSError))):
                        raise ServiceError(f"worker {i} could not start: {msg[1]}: {msg[2]}", worker=i)
                    raise cls(msg[2])
        for c in opened:  # all open: now they listen (no connection goes to a worker still opening)
            try:
                c.send("listen")
            except OSError:
                pass  # that worker is gone: seen below
            c.close()
        while not stop:
            done = wait([p.sentinel for p in procs], timeout=0.5)
            for i, p in enumerate(procs):
                if p.sentinel in done and not stop:
                    p.join(5)
                    raise ServiceError(f"worker {i} exited (exit status {p.exitcode}) while serving; "
                                       "the other workers were stopped", worker=i)
    finally:
        for p in procs:
            if p.is_alive():
                os.kill(p.pid, signal.SIGTERM)
        for p in procs:
            p.join(60)
            if p.is_alive():  # past uvicorn's own 30 s for requests under way
                p.kill()
                p.join()
        sock.close()
        shutil.rmtree(kw["metrics"], ignore_errors=True)
        for s, h in old.items():
            signal.signal(s, h)


def _end_with_parent(sig: int, parent: int) -> None:
    """Have the kernel send ``sig`` to this process when its parent (pid ``parent``) ends
    (Linux's ``PR_SET_PDEATHSIG``): a supervisor killed outright (SIGKILL, an OOM kill) must
    not leave its workers serving the port. Where the parent is already gone, ``sig`` now."""
    if sys.platform.startswith("linux"):
        import ctypes
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def _worker(index: int, ready: Any, kw: dict) -> None:
    """One worker process of :func:`_serve_workers`: the store opened read-only, the app
    made, "ready" (or the error) sent up the pipe ``ready``; once the supervisor says
    "listen" (every worker is ready), its socket listening (:func:`_port_socket`) and uvicorn on
    it until SIGTERM (SIGINT is the supervisor's to pass on: a terminal's Ctrl-C reaches
    every process of its group, and a second SIGINT would make uvicorn drop requests under
    way)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent(signal.SIGTERM, kw["supervisor"])
    import uvicorn

    from .engine import Engine
    try:
        engine = Engine.open(kw["path"], threads=kw["threads"], read_only=True)
        app = make_app(engine, worker=index, shared_metrics=kw["metrics"], **kw["app"])
    except Exception as e:  # noqa: BLE001 - the supervisor raises it
        ready.send(("error", type(e).__name__, str(e)))
        ready.close()
        sys.exit(1)
    server = _Server(uvicorn.Config(app, log_config=None, access_log=False, timeout_graceful_shutdown=30,
                                    proxy_headers=False), signals=(signal.SIGTERM,))
    gc.collect()
    gc.freeze()
    ready.send(("ready",))
    try:
        ready.recv()  # "listen", once every worker has opened the store
    except EOFError:  # the supervisor stopped before that
        sys.exit(0)
    ready.close()
    sock = _port_socket(kw["family"], kw["address"], listen=True)
    try:
        server.run(sockets=[sock])
    finally:
        app.state.engine().close()
        engine.close()
        folder = Path(kw["metrics"])  # the supervisor removes it; the last worker out, where it cannot
        for f in (folder / f"worker-{index}.json", folder / f".worker-{index}.json"):
            f.unlink(missing_ok=True)
        try:
            folder.rmdir()  # only once empty: the last worker out
        except OSError:
            pass


def _server_class() -> Any:
    import contextlib
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, but a SIGINT / SIGTERM ends it with exit status 0 once it has
        shut down gracefully (uvicorn re-raises the signal, which kills the process before
        the engine is closed)."""

        signals = (signal.SIGINT, signal.SIGTERM)

        @contextlib.contextmanager
        def capture_signals(self):
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            old = {s: signal.signal(s, self.handle_exit) for s in self.signals}
            try:
                yield
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
    return Server


def _Server(config: Any, signals: tuple | None = None) -> Any:
    server = _server_class()(config)
    if signals is not None:
        server.signals = signals
    return server
