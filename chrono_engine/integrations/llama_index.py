"""LlamaIndex retriever and node postprocessor (extra ``[llama-index]``: llama-index-core 0.14).

:class:`ChronoRetriever` answers a ``QueryBundle`` from an :class:`~chrono_engine.Engine`
(the question's own time intent, or a fixed ``mode`` / ``as_of`` / ``window``); each hit is
a ``TextNode`` (id = the item id) scored by the engine's fused score, its metadata holding
the validity interval, citation and scores. :class:`ChronoPostprocessor` rescores the nodes
of any retriever by validity with :func:`chrono_engine.score`: the temporal counterpart of
LlamaIndex's ``TimeWeightedPostprocessor``.

The retriever's ``filters=`` (LlamaIndex's ``MetadataFilters``, as its own retrievers take
them) filter on the items' metadata columns inside the engine's search:
:func:`to_where` translates them into the engine's ``where=`` (docs/integrations.md has the
operator table); an operator that has no exact translation on the field's kind is a
QueryError naming it, never a different answer.

>>> import numpy as np, chrono_engine as ce
>>> from chrono_engine.integrations.llama_index import ChronoRetriever
>>> def embed(text):                        # any callable str -> vector
...     v = np.zeros(8, np.float32)
...     for w in text.lower().replace("?", "").split():
...         v[sum(map(ord, w)) % 8] += 1.0
...     return v + 0.01
>>> eng = ce.Engine(8, embedder=embed)
>>> ids = eng.ingest({"vector": np.stack([embed(t) for t in ("the ceo is ada", "the ceo is bo")]),
...                   "content": ["the ceo is ada", "the ceo is bo"], "stem_id": ["ceo", "ceo"],
...                   "valid_from": ["2019-01-01", "2022-06-01"],
...                   "valid_to": ["2022-06-01", None]})
>>> [n.node.get_content() for n in ChronoRetriever(eng, k=1).retrieve("who was the ceo in 2020?")]
['the ceo is ada']
"""
from __future__ import annotations

import asyncio
from typing import Any

from .._util import import_extra
from ._common import META_COLUMNS, MetadataKeys, UNDATED, records, rescore, run_search

import_extra("llama_index.core", "llama-index", "chrono_engine.integrations.llama_index")

from llama_index.core.callbacks import CallbackManager  # noqa: E402
from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402
from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from pydantic import Field  # noqa: E402

from .._args import K_MAX, count, shown  # noqa: E402
from ..errors import QueryError  # noqa: E402
from ..metadata import RESERVED  # noqa: E402
from ..scoring import ScoringPolicy  # noqa: E402
from ..search.filters import MAX_DEPTH  # noqa: E402

__all__ = ["ChronoRetriever", "ChronoPostprocessor", "to_where"]

#: LlamaIndex's comparison operators and the engine's, on a column of one value per row
_SCALAR_OPS = {FilterOperator.EQ: "$eq", FilterOperator.NE: "$ne", FilterOperator.GT: "$gt",
               FilterOperator.GTE: "$gte", FilterOperator.LT: "$lt", FilterOperator.LTE: "$lte",
               FilterOperator.IN: "$in", FilterOperator.NIN: "$nin"}
_RANGE_OPS = (FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT, FilterOperator.LTE)
_LIST_OPS = (FilterOperator.IN, FilterOperator.NIN, FilterOperator.ANY, FilterOperator.ALL)


def to_where(filters: Any, kinds: dict[str, str]) -> dict | None:
    """LlamaIndex ``MetadataFilters`` as the engine's ``where=`` dict (None: no filter).

    ``kinds``: the engine's metadata columns and their kinds (:attr:`Engine.metadata
    <chrono_engine.Engine.metadata>`): LlamaIndex's operators mean different things on a
    list field and on a single value, so the translation depends on the field's kind. The
    answer is exactly the one LlamaIndex's own ``SimpleVectorStore`` filter
    (``build_metadata_filter_fn``) gives over the items' metadata — a null (or missing)
    value passes NE and NIN alone — except that a timestamp column compares as instants
    (the value: an ISO-8601 string or int µs since the epoch, as the engine reads times),
    where LlamaIndex would compare the node's ISO string as text. Conditions: AND, OR, and
    NOT (none of the filters holds), nested ``MetadataFilters`` included.

    ======================== ============================= ===========================
    operator                 single-value column           list<string> column
    ======================== ============================= ===========================
    EQ, NE                   ``$eq`` / ``$ne``             refused (whole-list equality)
    GT, GTE, LT, LTE         ``$gt`` ... on int64, float64, refused
                             timestamp; refused on string
                             and bool (LlamaIndex orders
                             strings as text)
    IN, NIN                  ``$in`` / ``$nin``            refused (whole-list membership)
    CONTAINS                 refused (substring on text)   ``{"key": v}`` (any element
                                                           equals v)
    ANY                      refused (substring on text)   ``$in`` (any element in values)
    ALL                      refused (substring on text)   ``$and`` of ``{"key": v}``
    IS_EMPTY                 ``$exists: false``; on string refused (an empty list
                             ``$exists: false`` or ``""``  is not told apart from a
                                                           non-empty one by the filter)
    TEXT_MATCH(_INSENSITIVE) refused                       refused
    ======================== ============================= ===========================

    On a bool column (LlamaIndex's values cannot be booleans: 1 and 0 stand for True and
    False, as Python compares them). A value of another kind than the field's, a field the
    engine has no metadata column of, an EQ / NE with value None (it matches nothing /
    everything in LlamaIndex: use IS_EMPTY), an empty ``MetadataFilters`` inside another:
    QueryError naming the filter's path and operator.
    """
    if filters is None:
        return None
    if not isinstance(filters, MetadataFilters):
        raise QueryError(f"filters must be a llama_index MetadataFilters, got {type(filters).__name__}")
    return _group(filters, kinds, "filters", 0)


def _group(mf: MetadataFilters, kinds: dict, path: str, depth: int) -> dict | None:
    if depth > MAX_DEPTH:
        raise QueryError(f"{path}: MetadataFilters nested deeper than {MAX_DEPTH} levels")
    try:
        cond = FilterCondition(mf.condition if mf.condition is not None else FilterCondition.AND)
    except ValueError:
        raise QueryError(f"{path}.condition: {shown(mf.condition)} is not a FilterCondition (and, or, not)") from None
    kids = []
    for i, f in enumerate(mf.filters):
        here = f"{path}.filters[{i}]"
        if isinstance(f, MetadataFilters):
            kid = _group(f, kinds, here, depth + 1)
            if kid is None:
                raise QueryError(f"{here}: an empty MetadataFilters inside another (LlamaIndex gives it no meaning)")
            kids.append(kid)
        elif isinstance(f, MetadataFilter):
            kids.append(_leaf(f, kinds, here))
        else:
            raise QueryError(f"{here}: a MetadataFilter or MetadataFilters, got {type(f).__name__}")
    if not kids:
        return None  # LlamaIndex: no filters, every node passes
    if cond == FilterCondition.NOT:  # LlamaIndex: none of the filters matches
        return {"$not": kids[0] if len(kids) == 1 else {"$or": kids}}
    if len(kids) == 1:
        return kids[0]
    return {"$and" if cond == FilterCondition.AND else "$or": kids}


def _leaf(f: MetadataFilter, kinds: dict, path: str) -> dict:
    key, value = f.key, f.value
    try:
        op = FilterOperator(f.operator)
    except ValueError:
        raise QueryError(f"{path}: {shown(f.operator)} is not a FilterOperator") from None
    name = f"{op.name} ({op.value!r})"
    kind = kinds.get(key)
    if kind is None:
        if key in RESERVED:
            hint = ("an engine column, not a metadata column: time is filtered by mode / as_of / window, "
                    "fact types by search_kwargs={'fact_types': [...]}")
        else:
            hint = f"not a metadata column of the engine (its columns: {', '.join(map(repr, kinds)) or 'none'})"
        raise QueryError(f"{path}: {name} on {key!r}: {hint}")

    def refuse(why: str) -> None:
        raise QueryError(f"{path}: {name} on the {kind} column {key!r} has no exact translation: {why}")

    if op in (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE):
        refuse("the engine's filter has no substring match")
    if op == FilterOperator.IS_EMPTY:
        if kind == "list<string>":
            refuse("LlamaIndex means null or an empty list, and the engine's filter does not tell an empty list "
                   "from a non-empty one; {'$exists': False} (where=) passes the nulls alone")
        if kind == "string":
            return {"$or": [{key: {"$exists": False}}, {key: ""}]}
        return {key: {"$exists": False}}
    if op in _LIST_OPS and not isinstance(value, (list, tuple)):
        raise QueryError(f"{path}: {name} on {key!r} takes a list of values, got {shown(value)}")
    if kind == "list<string>":
        if op == FilterOperator.CONTAINS:
            return {key: _value(value, kind, path, name)}
        if op == FilterOperator.ANY:
            return {key: {"$in": [_value(v, kind, path, name) for v in value]}}
        if op == FilterOperator.ALL:
            vals = [_value(v, kind, path, name) for v in value]
            if not vals:  # all() of nothing: every node with a list (not null) passes
                return {key: {"$exists": True}}
            return {key: vals[0]} if len(vals) == 1 else {"$and": [{key: v} for v in vals]}
        refuse("LlamaIndex compares the whole list with the value; use CONTAINS (one element), ANY or ALL")
    if op in (FilterOperator.CONTAINS, FilterOperator.ANY, FilterOperator.ALL):
        refuse("on a single value LlamaIndex tests substrings of text; the engine's filter has no substring match"
               if kind == "string" else "the field holds one value, not a list")
    if op in _RANGE_OPS and kind in ("string", "bool"):
        refuse("LlamaIndex orders strings as text; the engine compares strings and bools by equality only")
    if op in (FilterOperator.IN, FilterOperator.NIN):
        return {key: {_SCALAR_OPS[op]: [_value(v, kind, path, name) for v in value]}}
    if value is None:
        raise QueryError(f"{path}: {name} on {key!r} with value None (in LlamaIndex a null equals nothing, "
                         "not even None); IS_EMPTY passes the nulls")
    return {key: {_SCALAR_OPS[op]: _value(value, kind, path, name)}}


def _value(v: Any, kind: str, path: str, name: str) -> Any:
    """One LlamaIndex value for a column of ``kind`` (as the engine's filter takes it)."""
    ok = False
    if kind in ("string", "list<string>"):
        ok = isinstance(v, str)
    elif kind == "bool":
        if isinstance(v, bool):
            return v
        if isinstance(v, (int, float)) and v in (0, 1):
            return bool(v)  # LlamaIndex's values are never bools; Python's True == 1
    elif kind == "timestamp":
        ok = isinstance(v, (str, int)) and not isinstance(v, bool) or hasattr(v, "isoformat")
    else:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    if not ok:
        want = {"string": "a string", "list<string>": "a string", "bool": "1 or 0 (True or False)",
                "timestamp": "a time (an ISO-8601 string or int µs)"}.get(kind, "a number")
        raise QueryError(f"{path}: {name}: the field is a {kind} column; the value must be {want}, got {shown(v)}")
    return v

#: metadata a node carries that neither its embedding nor the LLM's prompt should read
_INTERNAL = tuple(c for c in META_COLUMNS if c not in ("title", "citation", "valid_from", "valid_to"))


class ChronoRetriever(BaseRetriever):
    """A LlamaIndex retriever over a chrono_engine :class:`~chrono_engine.Engine`.

    ``k``: nodes per question. ``mode`` / ``as_of`` / ``window`` (None: the question's own
    time intent, :meth:`Engine.query <chrono_engine.Engine.query>`): a fixed search
    instead. ``now`` / ``tz``: the clock and zone relative phrases resolve against.
    ``embed``: the question embedder (None: the engine's ``embedder``; a ``QueryBundle``
    that carries its own ``embedding`` is searched with it). ``filters``: LlamaIndex
    ``MetadataFilters`` on the items' metadata columns, as LlamaIndex's own retrievers take
    them, translated by :func:`to_where` against the engine's columns at each retrieval and
    applied inside the search. ``search_kwargs``: other options of ``query`` / ``search``
    (``fact_types``, ``known_at``, ``distinct``, ``columns``, ``where`` — ANDed with
    ``filters`` —, ...).

    Each ``NodeWithScore`` has the engine's score; its ``TextNode`` (``id_`` = the item id)
    holds the hit's ``content`` and, in ``metadata``, the hit's columns as the LangChain
    adapter gives them, the item's metadata columns last (times ISO-8601 in UTC; the scores
    and ids are excluded from the node's embedding and LLM text, the title, citation,
    validity interval and metadata columns are not).
    """

    def __init__(self, engine: Any, k: int = 4, *, mode: str | None = None, as_of: Any = None,
                 window: Any = None, now: Any = None, tz: Any = None, embed: Any = None,
                 filters: MetadataFilters | None = None, search_kwargs: dict | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False) -> None:
        self.engine = engine
        self.k = count(k, "k", lo=1, hi=K_MAX, error=QueryError)
        self.mode, self.as_of, self.window, self.now, self.tz, self.embed = mode, as_of, window, now, tz, embed
        if filters is not None and not isinstance(filters, MetadataFilters):
            raise QueryError(f"filters must be a llama_index MetadataFilters, got {type(filters).__name__} "
                             "(a dict in the engine's form goes in search_kwargs={'where': ...})")
        self.filters = filters
        self.search_kwargs = dict(search_kwargs or {})
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _options(self) -> dict:
        """``search_kwargs`` with ``filters`` translated and ANDed into its ``where``."""
        where = to_where(self.filters, self.engine.metadata)
        if where is None:
            return self.search_kwargs
        given = self.search_kwargs.get("where")
        return {**self.search_kwargs, "where": where if given is None else {"$and": [given, where]}}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embed = self.embed
        if query_bundle.embedding is not None:
            given = query_bundle.embedding
            embed = lambda _text: given  # noqa: E731 - the bundle's own vector
        hits = run_search(self.engine, query_bundle.query_str, self.k, mode=self.mode, as_of=self.as_of,
                          window=self.window, now=self.now, tz=self.tz, embed=embed, options=self._options())
        out = []
        for text, meta in records(hits):
            node = TextNode(id_=str(meta["id"]), text=text, metadata=meta,
                            excluded_embed_metadata_keys=list(_INTERNAL), excluded_llm_metadata_keys=list(_INTERNAL))
            out.append(NodeWithScore(node=node, score=meta["score"]))
        return out

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # the engine's search releases the GIL: a worker thread keeps the event loop free
        return await asyncio.to_thread(self._retrieve, query_bundle)


class ChronoPostprocessor(BaseNodePostprocessor):
    """Rescore any retriever's nodes by validity (:func:`chrono_engine.score`).

    Each node's similarity is its ``score`` (None: 1.0, as LlamaIndex's
    ``TimeWeightedPostprocessor`` takes it); its times and the other scored columns come
    from its metadata (``keys``, a :class:`~chrono_engine.integrations._common.MetadataKeys`:
    ``observed_at`` or else ``valid_from``, optional ``valid_to``, ``fact_type``,
    ``reliability``, ``deprecated``; times by the engine's one rule — datetimes, dates,
    ISO-8601 strings, int µs). The nodes come back best first (score, then similarity),
    ``top_k`` of them (None: all), each a new ``NodeWithScore`` over the same node whose
    score is the fused score; nodes are not modified. ``policy``: a
    :class:`~chrono_engine.ScoringPolicy` (None: the default one); ``as_of``: the scoring
    instant (None: now); ``undated``: a node without a time is kept after the dated ones
    ("keep"), left out ("drop") or an error ("error").
    """

    policy: Any = None
    as_of: Any = None
    top_k: int | None = None
    keys: MetadataKeys = Field(default_factory=MetadataKeys)
    undated: str = "keep"

    @classmethod
    def class_name(cls) -> str:
        return "ChronoPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if self.policy is not None and not isinstance(self.policy, ScoringPolicy):
            raise QueryError(f"policy must be a ScoringPolicy, got {type(self.policy).__name__}")
        if self.undated not in UNDATED:
            raise QueryError(f"undated must be one of {', '.join(UNDATED)}, got {shown(self.undated)}")
        top = None if self.top_k is None else count(self.top_k, "top_k", lo=1, hi=K_MAX, error=QueryError)
        if not nodes:
            return []
        sims = [1.0 if n.score is None else n.score for n in nodes]
        order, table = rescore(sims, [n.node.metadata for n in nodes], policy=self.policy, as_of=self.as_of,
                               keys=self.keys, undated=self.undated)
        sc = table.column("score").to_pylist()
        return [NodeWithScore(node=nodes[i].node, score=sc[i]) for i in order[:top]]
