"""The endpoints but search and snapshots: the collection's info, validity, the question in
words, rescoring, chain verification, history (reads, on the pool under the timeout), and
the writes (ingest, supersede, retract, deprecate: parsed and checked on the pool, then run
under the write gate to their end); health, metrics and the OpenAPI description.

A handler receives the body on the loop (at most ``max_body`` bytes); what grows with the
body (the parse, the checks, the call and the answer's encoding) runs on the pool, so the
loop goes on answering meanwhile.

A scoped key's filter (:func:`~.context.scope_of`) limits every call that reads or writes
items, through the engine's own ``where=``: a row outside it is as if it were not there
(the same 404 as an unknown id or stem), and a write of rows outside it is a 403 naming the
first (docs/serve.md, "Scoped keys")."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from .._ipc import LayoutError, StreamError, TooLarge, read_stream
from .._state import ingest_order
from ..errors import SchemaError
from .context import (HTTPError, Service, check_k, counted, key_where, no_unknown, parse_json, require,
                      scope_of, search_options)
from .encode import ARROW, dumps, ids_body, records
from .metrics import Metrics
from .openapi import openapi_spec
from .search import answer

#: what a /query body may hold besides "text", "k" and the search options: Engine.query's own
#: arguments (checked by Engine.query)
QUERY_FIELDS = ("now", "tz", "lang", "embed_text", "distinct", "undated", "window_fit")
#: columns of a /score body's candidates (seven are read; the rest are kept and not answered)
MAX_COLUMNS = 64


async def info(svc: Service, request: Request) -> Response:
    """The collection's info; for a scoped key, only what its own rows say: ``items``
    counts the rows its filter passes, and the store-wide counts and names (``stems``,
    ``fact_types``, ``path``) are left out."""
    svc.collection(request)
    eng, scope = svc.engine, scope_of(request)
    if scope is not None:
        items = await svc.run(lambda: eng.count(key_where(eng, scope)))
        return JSONResponse({"name": svc.name, "dim": eng.dim, "metric": eng.metric, "items": items,
                             "metadata": eng.metadata, "scoped": True})
    return JSONResponse({"name": svc.name, "dim": eng.dim, "metric": eng.metric, "items": len(eng),
                         "fact_types": list(eng.fact_types), "stems": len(eng.stems), "metadata": eng.metadata,
                         "path": str(eng.path) if eng.path else None})


def outside(e: SchemaError) -> HTTPError | SchemaError:
    """A scoped key's write of rows its filter does not pass: a 403 naming the first."""
    if e.rule == "outside where":
        return HTTPError(403, "rows", f"{e} (this key is scoped to a filter: it writes only rows that pass it)")
    return e


#: the ids a scoped key's writes get: drawn at random in [2**32, 2**53) (exact as JSON
#: numbers in every client), not the store's next ones, which count every tenant's rows
RANDOM_IDS = (1 << 32, 1 << 53)


def drawn_ids(rows: Any) -> Any:
    """A scoped key's rows (a list of row dicts, or an Arrow table) with an ``id`` column
    of random ids (:data:`RANDOM_IDS`, distinct); rows that bring ids of their own are a
    403: an id another tenant holds would be refused as a duplicate, which tells that it
    exists."""
    import secrets
    n = rows.num_rows if isinstance(rows, pa.Table) else len(rows)
    given = "id" in rows.column_names if isinstance(rows, pa.Table) else \
        any(isinstance(r, dict) and "id" in r for r in rows)
    if given:
        raise HTTPError(403, "id", "this key is scoped to a filter: its rows get ids drawn at random (an id "
                                   "chosen by the client could be another tenant's); send the rows without 'id'")
    rng = np.random.default_rng(secrets.randbits(128))
    ids = np.unique(rng.integers(*RANDOM_IDS, size=n, dtype=np.int64))
    while len(ids) < n:  # a repeat among n draws of 2**53: redrawn
        ids = np.unique(np.concatenate([ids, rng.integers(*RANDOM_IDS, size=n - len(ids), dtype=np.int64)]))
    ids = rng.permutation(ids)
    if isinstance(rows, pa.Table):
        return rows.append_column("id", pa.array(ids.astype(np.uint64)))
    return [dict(r, id=int(i)) if isinstance(r, dict) else r for r, i in zip(rows, ids.tolist())]


def scoped_write(write: Any, rows: Any, scope: Any) -> Any:
    """``write(rows)`` for a key with filter ``scope`` (None: as given): the rows with drawn
    ids (:func:`drawn_ids`), drawn again should one be in the store already; a row outside
    the filter is a 403 naming it."""
    try:
        if scope is None:
            return write(rows)
        for attempt in range(3):
            try:
                return write(drawn_ids(rows))
            except SchemaError as e:
                if e.rule != "duplicate id" or attempt == 2:
                    raise
    except SchemaError as e:
        raise outside(e) from None


async def collections(svc: Service, request: Request) -> Response:
    return JSONResponse({"collections": [svc.name]})


async def validity(svc: Service, request: Request) -> Response:
    svc.collection(request)
    limits = svc.limits
    scope = scope_of(request)

    def work(obj: dict) -> bytes:
        eng = svc.engine
        at, ids = require(obj, "at"), obj.get("ids")
        if ids is None and scope is not None:
            raise HTTPError(422, "ids", "give ids: this key is scoped to a filter")
        if ids is None and len(eng) > limits.max_rows:
            raise HTTPError(422, "ids", f"give ids: the store has more than {limits.max_rows} items")
        counted(ids, "ids", limits.max_rows, "ids")
        v = eng.validity(at, ids, where=key_where(eng, scope))
        return dumps({"validity": np.asarray(v, np.float64).tolist()})
    return answer(await svc.pooled(request, work))


async def query(svc: Service, request: Request) -> Response:
    svc.collection(request)
    limits = svc.limits
    scope = scope_of(request)

    def work(obj: dict) -> bytes:
        eng = svc.engine
        text, k = require(obj, "text"), check_k(obj, limits)
        if isinstance(text, str) and len(text) > limits.max_text:
            raise HTTPError(422, "text", f"text of {len(text)} characters exceeds the limit of {limits.max_text}")
        if eng.embedder is None:
            raise HTTPError(409, "embedder", "this engine has no text embedder: search with a vector instead")
        kw = search_options(obj, ("text", "k") + QUERY_FIELDS, limits, eng, scope)
        for name in QUERY_FIELDS:
            if name in obj:
                kw[name] = obj[name]
        res = eng.query(text, k, **kw)
        intent = res.intent
        return dumps({"hits": records(res.hits), "lang": res.lang, "as_of": res.as_of,
                      "window": list(res.window) if res.window else None,
                      "intent": {"mode": intent.mode, "anchor": intent.anchor,
                                 "window": list(intent.window) if intent.window else None,
                                 "cleaned_query": intent.cleaned_query}})
    return answer(await svc.pooled(request, work))


async def score(svc: Service, request: Request) -> Response:
    """Rescoring of candidates given in the body (``ce.score``): it reads no stored item
    (only the engine's decay policy), so a scoped key's filter has nothing to limit."""
    from ..scoring import ScoringPolicy, score as ce_score
    svc.collection(request)
    limits = svc.limits

    def work(obj: dict) -> bytes:
        cand, as_of = require(obj, "candidates"), require(obj, "as_of")
        if not isinstance(cand, dict) or not cand or not all(isinstance(v, list) for v in cand.values()):
            raise HTTPError(422, "candidates", "candidates must be an object of equal-length column lists")
        if len(cand) > MAX_COLUMNS:
            raise HTTPError(422, "candidates", f"{len(cand)} columns exceed the limit of {MAX_COLUMNS}")
        n = max(len(v) for v in cand.values())
        if n > limits.max_rows:
            raise HTTPError(422, "candidates", f"{n} candidates exceed the limit of {limits.max_rows}")
        pol = {kk: obj[kk] for kk in ("fusion", "alpha", "tau", "deprecated", "future", "penalty") if kk in obj}
        no_unknown(obj, {"candidates", "as_of", *pol})
        try:
            policy = ScoringPolicy(decay=svc.engine.decay, **pol)
        except TypeError as e:
            raise HTTPError(422, "policy", str(e)[:200]) from None
        out = ce_score(cand, as_of=as_of, policy=policy)
        return dumps({"validity": out.column("validity").to_pylist(), "score": out.column("score").to_pylist()})
    return answer(await svc.pooled(request, work))


class Scoped:
    """An engine as a scoped key sees it, for :func:`~chrono_engine.verify_chains`'s
    ``(engine, T)``: an item outside the key's filter is not in it (the same error as an
    unknown id)."""

    def __init__(self, engine: Any, where: Any) -> None:
        self.engine, self.where = engine, where

    def contains(self, ids: Any) -> np.ndarray:
        return self.engine.filter_ids(self.where, ids)

    def validity(self, at: Any, ids: Any = None) -> np.ndarray:
        return self.engine.validity(at, ids, where=self.where)


async def verify(svc: Service, request: Request) -> Response:
    from ..verify import verify_chains
    from ..verify.chains import is_chain_list
    svc.collection(request)
    most = svc.limits.max_rows
    scope = scope_of(request)

    def work(obj: dict) -> bytes:
        chains, at, gamma = require(obj, "chains"), require(obj, "at"), require(obj, "gamma")
        counted(chains, "chains", most, "chains")
        if not is_chain_list(chains):
            raise HTTPError(422, "chains", "chains must be [[[item id, ...] per step] per chain]")
        for what, n in (("steps", sum(len(c) for c in chains)), ("facts", sum(len(s) for c in chains for s in c))):
            if n > most:
                raise HTTPError(422, "chains", f"{n} {what} exceed the limit of {most}")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)):
            raise HTTPError(422, "gamma", "gamma must be a number in [0, 1]")
        eng = svc.engine
        store = eng if scope is None else Scoped(eng, key_where(eng, scope))
        return dumps({"chains": records(verify_chains(chains, (store, at), float(gamma)))})
    return answer(await svc.pooled(request, work))


async def history(svc: Service, request: Request) -> Response:
    svc.collection(request)
    known = request.query_params.get("known_at")
    stem = request.path_params["stem_id"]
    eng, scope = svc.engine, scope_of(request)
    return answer(await svc.run(lambda: dumps({"rows": records(eng.history(stem, known,
                                                                           where=key_where(eng, scope)))})))


# ----------------------------------------------------------------------------- writes

def rows_of(svc: Service, raw: bytes, content_type: str, order: str | None) -> tuple[Any, str]:
    """An ingest's rows (a JSON body's ``rows``, or an Arrow IPC stream) and its storage
    order (``order``: the JSON body's field or the query string's, not both)."""
    limits = svc.limits
    if content_type.split(";")[0].strip() == ARROW:
        try:  # what it decodes to (decompressed, dictionaries and views expanded): at most max_body
            table = read_stream(raw, limits.max_body)
        except TooLarge as e:
            raise HTTPError(413, "body", f"Arrow IPC body: {e} (the body limit)") from None
        except LayoutError as e:
            raise HTTPError(422, "body", f"Arrow IPC body: {str(e)[:200]}") from None
        except StreamError as e:
            raise HTTPError(400, "body", f"body is not an Arrow IPC stream ({str(e)[:120]})") from None
        n, rows = table.num_rows, table
    else:
        obj = parse_json(raw)
        rows = require(obj, "rows")
        no_unknown(obj, ("rows", "order"))
        if not isinstance(rows, list):
            raise HTTPError(422, "rows", "rows must be a list of row objects")
        counted(rows, "rows", limits.max_rows, "rows")
        if not all(isinstance(r, dict) for r in rows):
            raise HTTPError(422, "rows", "rows must be a list of row objects")
        if "order" in obj:
            if order is not None:
                raise HTTPError(422, "order", "order given both in the body and in the query string")
            order = obj["order"]
        n = len(rows)
    if n > limits.max_rows:
        raise HTTPError(422, "rows", f"{n} rows exceed the limit of {limits.max_rows}")
    try:
        return rows, ingest_order("auto" if order is None else order)
    except SchemaError as e:
        raise HTTPError(422, "order", str(e)[:200]) from None


async def ingest(svc: Service, request: Request) -> Response:
    svc.collection(request)
    raw = await svc.body(request)
    rows, order = await svc.run(rows_of, svc, raw, request.headers.get("content-type", ""),
                                request.query_params.get("order"))
    scope = scope_of(request)  # every row must pass it, as stored (a field the rows bring counts)

    def write() -> bytes:
        return ids_body(scoped_write(lambda r: svc.engine.ingest(r, order=order, where=scope), rows, scope))
    return answer(await svc.run(write, read=False))


_SUPERSEDE_EXTRA = ("version", "supersedes", "deprecate")


async def supersede(svc: Service, request: Request) -> Response:
    svc.collection(request)
    raw = await svc.body(request)
    most = svc.limits.max_rows

    def checked() -> tuple:
        obj = parse_json(raw)
        stem, rows, eff = require(obj, "stem_id"), require(obj, "rows"), require(obj, "effective_at")
        if not isinstance(rows, list) or len(rows) > most:
            raise HTTPError(422, "rows", f"rows must be a list of at most {most} row objects")
        extra = {kk: obj[kk] for kk in _SUPERSEDE_EXTRA if kk in obj}
        no_unknown(obj, ("stem_id", "rows", "effective_at") + _SUPERSEDE_EXTRA)
        return stem, rows, eff, extra
    stem, rows, eff, extra = await svc.run(checked)
    scope = scope_of(request)

    def write() -> bytes:
        eng = svc.engine
        return ids_body(scoped_write(lambda r: eng.supersede(stem, r, eff, where=key_where(eng, scope), **extra),
                                     rows, scope))
    return answer(await svc.run(write, read=False))


def ids_of(svc: Service, raw: bytes, fields: tuple) -> dict:
    """A retract's or deprecate's body: ``ids`` (at most max_rows of them) and ``fields``."""
    obj = parse_json(raw)
    ids = require(obj, "ids")
    counted(ids, "ids", svc.limits.max_rows, "ids")
    no_unknown(obj, ("ids",) + fields)
    return obj


async def retract(svc: Service, request: Request) -> Response:
    svc.collection(request)
    obj = await svc.run(ids_of, svc, await svc.body(request), ("at",))
    scope = scope_of(request)

    def write() -> bytes:
        eng = svc.engine
        return ids_body(eng.retract(obj["ids"], obj.get("at"), where=key_where(eng, scope)))
    return answer(await svc.run(write, read=False))


async def deprecate(svc: Service, request: Request) -> Response:
    svc.collection(request)
    obj = await svc.run(ids_of, svc, await svc.body(request), ("effective_at", "at"))
    scope = scope_of(request)

    def write() -> bytes:
        eng = svc.engine
        return ids_body(eng.deprecate(obj["ids"], obj.get("effective_at"), obj.get("at"),
                                      where=key_where(eng, scope)))
    return answer(await svc.run(write, read=False))


# ----------------------------------------------------------------------------- health and metrics

async def livez(svc: Service, request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(svc: Service, request: Request) -> Response:
    return JSONResponse({"ready": svc.ready}, status_code=200 if svc.ready else 503)


async def metrics(svc: Service, request: Request) -> Response:
    m: Metrics = svc.metrics if svc.shared_metrics is None else svc.metrics.merged(svc.shared_metrics, svc.worker)
    return PlainTextResponse(m.text(len(svc.engine)), media_type="text/plain; version=0.0.4")


async def openapi(svc: Service, request: Request) -> Response:
    return JSONResponse(openapi_spec(svc.name))
