"""What every handler shares: the :class:`Service` (the engine served now, the limits, the
pool, the search coalescer, the write gate, metrics and log), request bodies, their checks,
and how a refusal is answered.

Limits (:class:`Limits`): request body size (413), vectors per batch, rows per ingest or
supersede and ids, candidates, chains per request, fact types per search, characters of a
query's text, ``k`` (422), and a timeout for reads (504). Every refusal names the field and
the limit and changes nothing. Every list a body holds is counted before anything reads it,
and what grows with a body runs on the thread pool, not the event loop (a read's under the
timeout).

A request's ``where`` (a body's filter, :func:`request_where`) is ANDed with its key's
filter (a scoped key, :mod:`.auth`); a bad filter is a 422 naming ``where`` and its path.
"""
from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import orjson

from .._args import shown
from .._coalesce import AsyncCoalescer
from ..errors import ChronoError, QueryError
from ..metadata import MAX_COLUMNS
from ..search import SearchOptions, filters
from .auth import Keys, authorize
from .metrics import Metrics, RequestLog
from .refusals import HTTPError, status_of


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


def parse_json(raw: bytes) -> dict:
    """A body as a JSON object (400 when it is not one)."""
    try:
        obj = orjson.loads(raw)  # rejects NaN / Infinity, invalid UTF-8, nesting past 1024
    except ValueError as e:
        raise HTTPError(400, "body", f"body is not JSON ({type(e).__name__}: {str(e)[:120]})") from None
    if not isinstance(obj, dict):
        raise HTTPError(400, "body", "body must be a JSON object")
    return obj


def require(obj: dict, name: str) -> Any:
    if name not in obj:
        raise HTTPError(422, name, f"field {name!r} is required")
    return obj[name]


def no_unknown(obj: dict, known: Any) -> None:
    """A 422 naming the first (in sort order) of ``obj``'s fields not in ``known``."""
    unknown = [kk for kk in obj if kk not in known]
    if unknown:
        first = min(unknown)
        raise HTTPError(422, first[:80], f"unknown field {shown(first)}")


def counted(value: Any, field_: str, limit: int, what: str) -> None:
    """A 422 naming ``field_`` and the limit when the list ``value`` holds more than
    ``limit`` items: checked before anything reads them."""
    if isinstance(value, list) and len(value) > limit:
        raise HTTPError(422, field_, f"{len(value)} {what} exceed the limit of {limit}")


def check_k(obj: dict, limits: Limits) -> int:
    """A body's ``k`` (default 10) within the service's limit."""
    k = obj.get("k", 10)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= limits.max_k:
        raise HTTPError(422, "k", f"k must be an integer in [1, {limits.max_k}]")
    return k


_OPTION_NAMES = frozenset(SearchOptions.names())


def search_options(obj: dict, skip: tuple, limits: Limits, engine: Any = None,
                   scope: filters.Where | None = None) -> dict:
    """A body's search options (its fields but ``skip``): every other field is a 422 naming
    it (one the engine would take, but not from a body, included); the fact types and the
    metadata columns counted; ``where`` checked and ANDed with the key's filter ``scope``
    (:func:`request_where`, for ``engine``)."""
    opts = {kk: v for kk, v in obj.items() if kk not in skip}
    no_unknown(opts, _OPTION_NAMES)
    counted(opts.get("fact_types"), "fact_types", limits.max_fact_types, "fact types")
    counted(opts.get("columns"), "columns", MAX_COLUMNS, "columns")
    if isinstance(opts.get("window"), list):
        opts["window"] = tuple(opts["window"])
    if isinstance(opts.get("columns"), list):  # hashable: the checked options are cached by value
        opts["columns"] = tuple(opts["columns"])
    where = request_where(engine, scope, opts.get("where"))
    if where is not None:
        opts["where"] = where
    return opts


#: where a routed request carries its key's filter (None: an unscoped key)
SCOPE = "chrono.where"
#: the routes a scoped key may not take: they describe or change every row
#: (metrics count them all; a snapshot copies, and a restore replaces, the whole store)
UNSCOPED = ("/metrics", "/v1/collections/{c}/snapshots", "/v1/collections/{c}/snapshots/{name}/restore")


def scope_of(request: Any) -> filters.Where | None:
    """The filter of the key a routed request presents (None: every row)."""
    return request.scope.get(SCOPE)


def request_where(engine: Any, scope: filters.Where | None, given: Any) -> filters.Where | None:
    """A request's filter ``given`` (the body's ``where``: checked in time linear in its
    size, at most 32 levels and 10,000 terms; QueryError naming its path) ANDed with its
    key's filter ``scope`` (None: an unscoped key). The key's filter reads a field the
    store does not have yet as null (:func:`~chrono_engine.search.filters.absent_as_null`:
    a key set up before its tenants' column exists selects nothing, rather than failing)."""
    where = filters.parse(given)
    if scope is None:
        return where
    scope = key_where(engine, scope)
    return scope if where is None else scope & where


def key_where(engine: Any, scope: filters.Where | None) -> filters.Where | None:
    """A key's filter as it reads ``engine``'s rows: a field the store does not have is
    null on every row (:func:`~chrono_engine.search.filters.absent_as_null`)."""
    if scope is None:
        return None
    return filters.absent_as_null(scope, engine.metadata)


class Service:
    """One served engine and what its handlers share. ``engine`` is the engine served now:
    a restore or a replica's refresh replaces it (a handler reads it once and keeps that
    one for its request). See :func:`~chrono_engine.serve.make_app` for the arguments."""

    def __init__(self, engine: Any, *, name: str, keys: Keys, allow_anonymous: bool, limits: Limits, log: Any,
                 snapshots: Path | None, read_only: bool, worker: int | None, shared_metrics: Path | None,
                 save_on_shutdown: bool) -> None:
        self.engine, self.name, self.limits = engine, name, limits
        self.keys, self.allow_anonymous = keys, allow_anonymous
        self.read_only, self.worker, self.save_on_shutdown = read_only, worker, save_on_shutdown
        self.snapshots = snapshots
        self.shared_metrics = shared_metrics
        self.metrics = Metrics()
        self.log = RequestLog(log, worker)
        self.ready, self.refreshes = True, 0
        self.pool = ThreadPoolExecutor(max_workers=max(1, int(engine.coalesce_group)), thread_name_prefix="chrono-serve")
        # single searches coalesced on the loop, groups on one worker thread, a lone one on the loop
        self.searches = AsyncCoalescer(inline=True, settle=0, name="chrono-serve-search")
        self.gate = threading.Lock()  # writes, snapshots and restores, one at a time

    async def body(self, request: Any) -> bytes:
        """A routed request's body (:meth:`body_received`)."""
        return await self.body_received(request.headers.get("content-length"), request.receive)

    async def body_received(self, declared: str | None, receive: Any) -> bytes:
        """A request body from its ASGI ``receive`` (the routes' and the fast path's):
        a declared or streamed length past the limit is a 413, a client gone before its
        body ended a 400."""
        most = self.limits.max_body
        if declared is not None and declared.isdigit() and int(declared) > most:
            raise HTTPError(413, "body", f"body of {declared} bytes exceeds the limit of {most}")
        chunks, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                raise HTTPError(400, "body", "the client went away before its body ended")
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > most:
                raise HTTPError(413, "body", f"body exceeds the limit of {most} bytes")
            chunks.append(chunk)
            if not msg.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _gated(self, fn: Callable, *args: Any) -> Any:
        with self.gate:
            return fn(*args)

    async def run(self, fn: Callable, *args: Any, read: bool = True) -> Any:
        """``fn(*args)`` on the pool: a read (and a write's parse and checks) under the
        timeout; a write under the gate, to its end."""
        loop = asyncio.get_running_loop()
        if not read:  # a write, once started, runs to its end: it is acknowledged or refused whole
            return await loop.run_in_executor(self.pool, lambda: self._gated(fn, *args))
        fut = loop.run_in_executor(self.pool, lambda: fn(*args))
        try:
            return await asyncio.wait_for(fut, self.limits.timeout)
        except asyncio.TimeoutError:
            raise self.timed_out() from None

    def timed_out(self) -> HTTPError:
        return HTTPError(504, "timeout", f"the request took longer than {self.limits.timeout} s")

    async def pooled(self, request: Any, work: Callable[[dict], bytes]) -> bytes:
        """A read's answer: the body received on the loop, then ``work`` of its JSON object
        (parsed, checked, run and encoded) on the pool, under the timeout."""
        raw = await self.body(request)
        return await self.run(lambda: work(parse_json(raw)))

    def authorize(self, role: str | None, given: Callable[[], bytes | None], *,
                  unscoped: bool = False) -> filters.Where | None:
        """Refuse a request whose key may not take ``role`` (:func:`.auth.authorize`; a
        scoped key on an ``unscoped`` route too); the key's filter (None: every row)."""
        return authorize(self.keys, self.allow_anonymous, self.read_only, role, given, unscoped=unscoped)

    def collection(self, request: Any) -> None:
        """A 404 for a path naming another collection than this one."""
        c = request.path_params.get("c")
        if c is not None and c != self.name:
            raise HTTPError(404, "collection", f"no collection {c[:80]!r} (this server has {self.name!r})")

    def refusal(self, e: Exception, endpoint: str) -> tuple[int, bytes]:
        """A failed request's status and JSON body (as Starlette's JSONResponse writes it);
        anything but a refusal is a bug: answered 500 and logged."""
        if isinstance(e, HTTPError):
            status, obj = e.status, {"error": e.field, "message": e.message}
        elif isinstance(e, QueryError) and str(e).startswith("where"):  # a filter: the field it names
            status, obj = 422, {"error": "where", "message": str(e)[:2000]}
        elif isinstance(e, ChronoError):
            status, obj = status_of(e), {"error": type(e).__name__, "message": str(e)[:2000]}
        else:
            status, obj = 500, {"error": "internal", "message": "internal error"}
            self.log.event(event="error", endpoint=endpoint, type=type(e).__name__, message=str(e)[:500])
        return status, json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()

    def record(self, method: str, endpoint: str, status: int, t0: float) -> None:
        """A request's metrics and its log line."""
        dt = time.perf_counter() - t0
        self.metrics.observe(endpoint, status, dt)
        self.log.line(method, endpoint, status, dt)
