"""The OpenAPI 3.1 description of the service (served at ``/openapi.json``)."""
from __future__ import annotations

from .._state import INGEST_ORDERS


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
            "fact_types": {"type": "array", "items": {"type": "string"}},
            # the metadata filter (docs/search.md, "Filters"), ANDed with a scoped key's own; the
            # metadata columns the hits carry (omitted: all; []: none)
            "where": {"type": "object", "description": 'a metadata filter: {"tenant": "acme"}, '
                      '{"year": {"$gte": 2020}}, {"$or": [...]}; ANDed with a scoped key\'s filter'},
            "columns": {"type": "array", "items": {"type": "string"}}}
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
        "components": {"securitySchemes": {"bearer": {
            "type": "http", "scheme": "bearer",
            "description": "an admin or read API key; a key scoped to a filter sees and writes only the rows "
                           "it passes, and may not use /metrics or the snapshots (docs/serve.md)"}}},
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
                    "where": when["where"], "columns": when["columns"],
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

