"""The search endpoints: one vector (coalesced with concurrent ones into planner groups on
the event loop; the busiest path, also served without Starlette's routing by
:func:`fast_search`) and a batch of vectors (on the pool). Both cross the engine's one
seam: :meth:`Engine.prepare_search <chrono_engine.Engine.prepare_search>` (the call
checked and described once) and :meth:`Engine.search_prepared
<chrono_engine.Engine.search_prepared>` (a group run as one batch).

A body's ``where`` is ANDed with a scoped key's filter before the call is prepared
(:func:`~.context.search_options`). Calls are grouped by the prepared call's key, which
holds every option but the times, the canonical filter among them: searches with different
filters (two tenants' keys) never share a group."""
from __future__ import annotations

import asyncio
import time
from typing import Any, NamedTuple

from starlette.requests import Request
from starlette.responses import Response

from .._args import count
from ..errors import ConfigError
from ..search import PreparedSearch
from .auth import READ, presented
from .context import HTTPError, Service, check_k, counted, parse_json, require, scope_of, search_options
from .encode import ARROW, group_bodies, hits_body

#: the single search's path template (its fast path answers it for this collection)
SEARCH = "/v1/collections/{c}/search"
_JSON_HEADERS = [(b"content-type", b"application/json")]
_ARROW_HEADERS = [(b"content-type", ARROW.encode())]


class Ask(NamedTuple):
    """A single search waiting for its group: the engine it asks, the prepared call, and
    whether it wants an Arrow answer."""

    engine: Any
    call: PreparedSearch
    arrow: bool


def wants_arrow(request: Request) -> bool:
    return ARROW in request.headers.get("accept", "")


def answer(body: bytes, arrow: bool = False) -> Response:
    return Response(body, media_type=ARROW if arrow else "application/json")


async def search(svc: Service, request: Request) -> Response:
    svc.collection(request)
    arrow = wants_arrow(request)
    return answer(await search_answer(svc, await svc.body(request), arrow, scope_of(request)), arrow)


async def search_answer(svc: Service, raw: bytes, arrow: bool, scope: Any = None) -> bytes:
    """One search's response body from its request body (both paths: the route and the
    fast path): checked on the loop (every list in it bounded first; the filter in time
    linear in its size, ANDed with the key's ``scope``), then coalesced."""
    obj = parse_json(raw)
    vec, k = require(obj, "vector"), check_k(obj, svc.limits)
    eng = svc.engine
    kw = search_options(obj, ("vector", "k"), svc.limits, eng, scope)
    call = eng.prepare_search(vec, k, **kw)  # the call's own checks, its times fixed now
    svc.searches.max_group = count(eng.coalesce_group, "coalesce_group", lo=1, hi=1024, error=ConfigError)
    try:
        return await svc.searches.submit((eng, call.key), Ask(eng, call, arrow), search_group, svc.limits.timeout)
    except asyncio.TimeoutError:
        raise svc.timed_out() from None


def search_group(batch: list) -> list:
    """A coalesced group's response bodies (:class:`~chrono_engine._coalesce.AsyncCoalescer`
    requests keyed by (engine, the call's key), each carrying its :class:`Ask`): JSON bodies
    written by one native call (:func:`chrono_engine.search.result_json`) when no call of
    the group wants Arrow and none asks ``explain`` or ``verify``; else from the group's
    result columns (:func:`~chrono_engine.serve.encode.group_bodies`)."""
    asks = [r.payload for r in batch]
    arrow = [a.arrow for a in asks]

    def bodies(answer: Any, calls: Any) -> list:
        if isinstance(answer, list):  # every call's JSON body, written natively
            return answer
        return group_bodies(answer, [arrow[i] for i in calls])
    return asks[0].engine.search_prepared([a.call for a in asks], bodies, form="columns" if any(arrow) else "json")


async def search_batch(svc: Service, request: Request) -> Response:
    svc.collection(request)
    arrow = wants_arrow(request)
    scope = scope_of(request)

    def work(obj: dict) -> bytes:
        vecs, k = require(obj, "vectors"), check_k(obj, svc.limits)
        if not isinstance(vecs, list) or not vecs:
            raise HTTPError(422, "vectors", "vectors must be a non-empty list of vectors")
        counted(vecs, "vectors", svc.limits.max_batch, "vectors")
        eng = svc.engine
        kw = search_options(obj, ("vectors", "k"), svc.limits, eng, scope)
        return hits_body(eng.search_batch(vecs, k, **kw), arrow)
    return answer(await svc.pooled(request, work), arrow)


async def fast_search(svc: Service, scope: dict, receive: Any, send: Any) -> None:
    """``POST /v1/collections/{name}/search`` without Starlette's routing, request and
    response objects (the busiest path: a single search per request): the same checks,
    refusals, metrics and log line as the routed endpoints (:func:`~.routes.guarded`)."""
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
        scope_ = svc.authorize(READ, lambda: presented(auth.decode("latin-1") if auth is not None else "",
                                                       xkey.decode("latin-1") if xkey is not None else None))
        raw = await svc.body_received(declared.decode("latin-1") if declared is not None else None, receive)
        status, body = 200, await search_answer(svc, raw, arrow, scope_)
        headers = _ARROW_HEADERS if arrow else _JSON_HEADERS
    except Exception as e:  # noqa: BLE001 - refusals and bugs alike get their answer
        status, body = svc.refusal(e, SEARCH)
        headers = _JSON_HEADERS
    svc.record("POST", SEARCH, status, t0)
    await send({"type": "http.response.start", "status": status,
                "headers": headers + [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
