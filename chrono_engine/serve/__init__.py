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

    GET  /livez  /readyz  /openapi.json
    GET  /metrics                                  [read, unscoped]
    GET  /v1/collections                           [read]
    GET  /v1/collections/{c}                       [read]  info
    POST /v1/collections/{c}/search                [read]  {"vector", "k", options...} (where, columns among them)
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
    POST /v1/collections/{c}/snapshots             [write, unscoped] {"name"?}: a checkpoint, and a named copy
    GET  /v1/collections/{c}/snapshots             [read, unscoped]  the named copies
    POST /v1/collections/{c}/snapshots/{name}/restore  [write, unscoped] the store back to a named copy

A key may be scoped to a filter (keys file: ``read KEY {"tenant": "acme"}``): every request
it makes is limited to the rows the filter passes (ANDed into each search's ``where``; a row
outside it answered as a missing one; writes only of rows inside it), and the ``unscoped``
endpoints, which describe or change every row, refuse it (docs/serve.md, "Scoped keys").

Search answers are JSON (``{"hits": [...]}``) or, with ``Accept:
application/vnd.apache.arrow.stream``, the result table as an Arrow IPC stream.

The package, one concern per module: :mod:`.context` (the :class:`Service` a handler
receives: the engine served now, limits, the pool, the coalescer; request bodies and their
checks), :mod:`.search` (the search endpoints and their fast path), :mod:`.handlers` (the
other reads and the writes), :mod:`.snapshots` (named copies, restore, a replica's
refresh), :mod:`.auth` (API keys), :mod:`.metrics` (counters and the request log),
:mod:`.encode` (answers as JSON or Arrow), :mod:`.routes` (the route table and the app),
:mod:`.openapi`, :mod:`.workers` (``serve``: one process, or read replicas on one port).
docs/serve.md describes auth, limits, snapshots and replicas.
"""
from __future__ import annotations

from .auth import Keys
from .context import Limits
from .encode import ARROW
from .routes import make_app
from .workers import serve

__all__ = ["ARROW", "Keys", "Limits", "make_app", "serve"]
