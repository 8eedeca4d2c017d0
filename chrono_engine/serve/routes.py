"""The ASGI app: the route table (path, handler, methods, the role a key needs), each route
guarded (auth, refusals as JSON, metrics and the log line; the key's filter, for a scoped
key, handed to the handler: :func:`~.context.scope_of`), the single search's fast path, and the
lifespan (a replica's refresh, the workers' counters, a checkpoint at shutdown)."""
from __future__ import annotations

import asyncio
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from ..errors import ConfigError
from .auth import READ, WRITE, Keys, need_keys, presented
from .context import SCOPE, UNSCOPED, Limits, Service


def routes() -> list[tuple[str, Callable, list[str], str | None]]:
    """(path, handler, methods, role: None = no auth) of every endpoint."""
    from . import handlers as h, search as s, snapshots as snap
    c = "/v1/collections/{c}"
    return [
        ("/livez", h.livez, ["GET"], None), ("/readyz", h.readyz, ["GET"], None),
        ("/metrics", h.metrics, ["GET"], READ), ("/openapi.json", h.openapi, ["GET"], None),
        ("/v1/collections", h.collections, ["GET"], READ), (c, h.info, ["GET"], READ),
        (c + "/search", s.search, ["POST"], READ), (c + "/search/batch", s.search_batch, ["POST"], READ),
        (c + "/validity", h.validity, ["POST"], READ), (c + "/history/{stem_id}", h.history, ["GET"], READ),
        (c + "/query", h.query, ["POST"], READ), (c + "/score", h.score, ["POST"], READ),
        (c + "/verify", h.verify, ["POST"], READ),
        (c + "/ingest", h.ingest, ["POST"], WRITE), (c + "/supersede", h.supersede, ["POST"], WRITE),
        (c + "/retract", h.retract, ["POST"], WRITE), (c + "/deprecate", h.deprecate, ["POST"], WRITE),
        (c + "/snapshots", snap.snapshot, ["POST"], WRITE), (c + "/snapshots", snap.snapshot_list, ["GET"], READ),
        (c + "/snapshots/{name}/restore", snap.snapshot_restore, ["POST"], WRITE),
    ]


def guarded(svc: Service, handler: Callable, role: str | None, endpoint: str) -> Callable:
    """``handler(svc, request)`` as a Starlette endpoint: the key checked for ``role``,
    a refusal (or a bug) answered as JSON, the request counted and logged."""
    from starlette.responses import Response

    unscoped = endpoint in UNSCOPED

    async def endpoint_fn(request: Any) -> Any:
        t0 = time.perf_counter()
        try:
            request.scope[SCOPE] = svc.authorize(role, lambda: presented(request.headers.get("authorization", ""),
                                                                         request.headers.get("x-api-key")),
                                                 unscoped=unscoped)
            resp = await handler(svc, request)
        except Exception as e:  # noqa: BLE001 - refusals and bugs alike get their answer
            status, body = svc.refusal(e, endpoint)
            resp = Response(body, status_code=status, media_type="application/json")
        svc.record(request.method, endpoint, resp.status_code, t0)
        return resp
    return endpoint_fn


def _refresh_every(refresh: tuple | None, read_only: bool) -> float | None:
    if refresh is None:
        return None
    try:
        every = float(refresh[1])
    except (TypeError, ValueError, IndexError):
        every = math.nan
    if not (read_only and 0 < every <= 86400):
        raise ConfigError("refresh is (store path, seconds) for a read-only service, every 0 to 86400 seconds")
    return every


def make_app(engine: Any, *, name: str = "default", keys: Keys | None = None, limits: Limits | None = None,
             allow_anonymous: bool = False, save_on_shutdown: bool = True, log: Any = None,
             snapshots: str | os.PathLike | None = None, read_only: bool = False,
             refresh: tuple[str | os.PathLike, float] | None = None, worker: int | None = None,
             shared_metrics: str | os.PathLike | None = None) -> Any:
    """The ASGI app serving ``engine`` as collection ``name`` (the package docstring).
    ``log``: a writable text stream for the JSON-lines request log (default stderr; None
    after ``log=False``), written in batches at most 50 ms apart and at shutdown.
    ``snapshots``: the directory of named snapshots (default ``<store>.snapshots`` beside
    the engine's store; none for an engine without a store). ``read_only``: every write
    endpoint answers 403 ``read_only``. ``refresh``: (store path, seconds): a read replica
    that opens the store again (read-only) when it has changed, checked every that many
    seconds (:func:`~.snapshots.store_version`). ``worker``: the worker process's index
    (``chrono serve --workers``), given in each log line; ``shared_metrics``: the workers'
    folder where each publishes its counters every second and from which ``/metrics`` sums
    them all."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.routing import Route

    from .search import SEARCH, fast_search
    keys = keys if keys is not None else Keys()
    need_keys(keys, allow_anonymous)
    every = _refresh_every(refresh, read_only)
    snap_dir = Path(snapshots) if snapshots is not None else (
        Path(engine.path).with_name(Path(engine.path).name + ".snapshots") if engine.path is not None else None)
    svc = Service(engine, name=name, keys=keys, allow_anonymous=allow_anonymous, limits=limits or Limits(),
                  log=sys.stderr if log is None else (None if log is False else log), snapshots=snap_dir,
                  read_only=read_only, worker=worker, save_on_shutdown=save_on_shutdown,
                  shared_metrics=Path(shared_metrics) if shared_metrics is not None and worker is not None else None)
    routed = Starlette(routes=[Route(p, guarded(svc, h, role, p), methods=m) for p, h, m, role in routes()],
                       lifespan=asynccontextmanager(lambda app: _lifespan(svc, refresh, every)))
    search_path = SEARCH.replace("{c}", name)

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == search_path and scope["method"] == "POST" \
                and not scope.get("root_path"):
            await fast_search(svc, scope, receive, send)
        else:
            await routed(scope, receive, send)
    app.state = routed.state  # type: ignore[attr-defined]
    app.state.engine = lambda: svc.engine  # the engine served now (a restore or a refresh replaces it)
    app.state.refreshes = lambda: svc.refreshes
    return app


async def _lifespan(svc: Service, refresh: tuple | None, every: float | None):
    """The app's lifespan: a replica's refresh and a worker's publication of its counters
    while it serves; at shutdown, the log flushed, a checkpoint of a writable store, the
    pool and the search coalescer stopped."""
    from .metrics import publish_forever
    from .snapshots import refresh_forever
    tasks = []
    if refresh is not None:
        tasks.append(asyncio.create_task(refresh_forever(svc, Path(refresh[0]), every)))
    if svc.shared_metrics is not None:
        tasks.append(asyncio.create_task(publish_forever(svc.metrics, svc.shared_metrics, svc.worker)))
    yield
    for task in tasks:
        task.cancel()
    svc.ready = False
    svc.log.flush()
    engine = svc.engine
    if svc.save_on_shutdown and engine.path is not None:  # path: None unless opened for writing
        await asyncio.get_running_loop().run_in_executor(svc.pool, engine.save)
    svc.pool.shutdown(wait=True)
    svc.searches.close()
