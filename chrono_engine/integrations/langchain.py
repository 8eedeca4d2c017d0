"""LangChain retrievers (extra ``[langchain]``: langchain-core 1.x, Python ≥ 3.11).

:class:`ChronoRetriever` answers a question from an :class:`~chrono_engine.Engine`: the
time intent is read from the question ("who led X in 2019" searches as of 2019, "from 2004
to 2005" within that window, no time: the latest valid version), or set per retriever or
per call (``mode``, ``as_of``, ``window``); each hit is a ``Document`` whose metadata holds
its id, stem, version, validity interval, similarity, validity, score and citation, and the
item's metadata columns (tenant, acl, ...). ``search_kwargs={"filter": {...}}`` (LangChain's
convention for vector store retrievers; or ``where``), or ``filter=`` per call, filters on
those columns in the dict form of Chroma and LangChain (``{"tenant": "acme"}``,
``{"acl": {"$in": ["hr"]}}``; docs/search.md, "Filters"), inside the engine's search.

:class:`ChronoRerankRetriever` wraps any LangChain vector store or retriever and reranks its
candidates by validity with :func:`chrono_engine.score` (the candidates' times come from
their metadata). It replaces ``TimeWeightedVectorStoreRetriever``, whose formula is
available as :func:`time_weighted_policy` for people migrating.

>>> import numpy as np, chrono_engine as ce
>>> from chrono_engine.integrations.langchain import ChronoRetriever
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
>>> docs = ChronoRetriever(engine=eng, k=1).invoke("who is the ceo in 2020?")
>>> docs[0].page_content, docs[0].metadata["valid_from"]
('the ceo is ada', '2019-01-01T00:00:00+00:00')
>>> ChronoRetriever(engine=eng, k=1).invoke("who is the ceo?", as_of="2023-01-01")[0].page_content
'the ceo is bo'
"""
from __future__ import annotations

import math
from typing import Any

from .._util import import_extra
from ._common import MetadataKeys, UNDATED, records, rescore, run_search

import_extra("langchain_core", "langchain", "chrono_engine.integrations.langchain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import VectorStore  # noqa: E402
from langchain_core.runnables.config import run_in_executor  # noqa: E402
from pydantic import ConfigDict, Field  # noqa: E402

from .._args import count, shown  # noqa: E402
from ..decay import Exponential  # noqa: E402
from ..errors import QueryError  # noqa: E402
from ..scoring import ScoringPolicy  # noqa: E402
from .._args import K_MAX  # noqa: E402

__all__ = ["ChronoRetriever", "ChronoRerankRetriever", "time_weighted_policy"]

#: per-call keywords ChronoRetriever takes (``invoke(question, k=3, as_of=...)``); any other
#: keyword is a search option (fact_types, known_at, fusion, distinct, undated, ...)
_CALL = ("k", "mode", "as_of", "window", "now", "tz")


def _where(kwargs: dict, what: str) -> dict:
    """``kwargs`` with LangChain's ``filter`` as the engine's ``where`` (one of the two)."""
    if "filter" not in kwargs:
        return kwargs
    out = dict(kwargs)
    f = out.pop("filter")
    if "where" in out:
        raise QueryError(f"{what}: give filter or where, not both (they are the same option)")
    if callable(f):
        raise QueryError(f"{what}: filter must be a dict in the Chroma / LangChain form ({{'tenant': 'acme'}}, "
                         "docs/search.md 'Filters'), got a callable: a predicate on documents cannot run inside "
                         "the engine's search")
    out["where"] = f
    return out


def _documents(hits) -> list[Document]:
    return [Document(page_content=text, metadata=meta, id=str(meta["id"])) for text, meta in records(hits)]


class ChronoRetriever(BaseRetriever):
    """A LangChain retriever over a chrono_engine :class:`~chrono_engine.Engine`.

    ``k``: documents per question. ``mode`` / ``as_of`` / ``window`` (default None: the
    question's own time intent, :meth:`Engine.query <chrono_engine.Engine.query>`): a fixed
    search instead (``as_of`` alone means "as_of", ``window`` alone "window"; the whole
    question is embedded). ``now`` / ``tz``: the clock and zone relative phrases ("last
    year") resolve against (None: the wall clock, UTC). ``embed``: the question embedder
    (None: the engine's ``embedder``; a LangChain ``Embeddings`` is used through its
    ``embed_query``). ``search_kwargs``: other options of ``query`` /
    ``search`` (``fact_types``, ``known_at``, ``fusion``, ``distinct``, ``undated``,
    ``columns``, ...), and, as for LangChain's vector store retrievers, ``filter`` (the
    engine's ``where``: a metadata filter in the dict form of Chroma and LangChain,
    ``{"tenant": "acme", "acl": {"$in": ["hr", "all"]}}``) and ``k``.
    Every one of these may also be given per call: ``invoke(question, k=3, as_of=...,
    filter={...})``; a call's keywords override the retriever's (a call's ``filter``
    replaces the ``search_kwargs`` one: it is not ANDed).

    Each ``Document`` holds the hit's ``content`` (its ``title`` when it has none) and, in
    ``metadata``: id, rank, score, similarity, validity, stem_id, version, valid_from and
    valid_to (ISO-8601 in UTC; valid_to None: open-ended), title, citation, certified, then
    the item's metadata columns (``columns=`` in ``search_kwargs`` picks which; timestamps
    as ISO-8601 strings, a list<string> as a list, a null as None).
    ``Document.id`` is the item id as a string.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Any
    k: int = 4
    mode: str | None = None
    as_of: Any = None
    window: Any = None
    now: Any = None
    tz: Any = None
    embed: Any = None
    search_kwargs: dict = Field(default_factory=dict)

    def _search(self, query: str, kwargs: dict) -> list[Document]:
        opts = {**_where(self.search_kwargs, "search_kwargs"), **_where(kwargs, "invoke")}
        call = {name: opts.pop(name, getattr(self, name)) for name in _CALL}
        k = count(call.pop("k"), "k", lo=1, hi=K_MAX, error=QueryError)
        embed = self.embed.embed_query if isinstance(self.embed, Embeddings) else self.embed
        hits = run_search(self.engine, query, k, embed=embed, options=opts, **call)
        return _documents(hits)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        return self._search(query, kwargs)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        # the engine's search releases the GIL: a worker thread keeps the event loop free
        return await run_in_executor(None, self._search, query, kwargs)


def time_weighted_policy(decay_rate: float = 0.01) -> ScoringPolicy:
    """LangChain's ``TimeWeightedVectorStoreRetriever`` formula as a scoring policy:
    relevance + (1 − ``decay_rate``)^hours since the document's time, i.e. an exponential
    decay with β = −ln(1 − decay_rate) per hour and linear fusion with α = ½ (which ranks
    exactly as the sum: every score is half of it). With :class:`ChronoRerankRetriever`, the
    hours count from each document's ``observed_at`` metadata (LangChain counts from
    ``last_accessed_at``, which its retriever rewrites on every retrieval; set
    ``keys=MetadataKeys(observed_at="last_accessed_at")`` to read that field).

    >>> pol = time_weighted_policy(0.5)
    >>> round(float(pol.decay(2 / 24)), 12)   # ages in days; two hours: (1 - 0.5) ** 2
    0.25
    """
    if isinstance(decay_rate, bool) or not isinstance(decay_rate, (int, float)) or not math.isfinite(decay_rate) \
            or not 0.0 <= decay_rate < 1.0:
        raise QueryError(f"decay_rate must be a number in [0, 1), got {shown(decay_rate)}")
    return ScoringPolicy(decay=Exponential(beta=-math.log1p(-float(decay_rate)), unit="hours"),
                         fusion="linear", alpha=0.5, deprecated="include", future="include")


class ChronoRerankRetriever(BaseRetriever):
    """Rerank any LangChain vector store's or retriever's candidates by validity.

    ``base``: a ``VectorStore`` (its ``similarity_search_with_relevance_scores`` gives the
    similarity; a store that has no relevance function, as LangChain's
    ``InMemoryVectorStore``, its ``similarity_search_with_score``, which must then be a
    similarity — higher is better — not a distance) or a ``BaseRetriever`` (the similarity is each document's
    ``metadata[score_key]``; a document without one is taken as similarity 1.0, so that it
    ranks by validity alone). ``fetch_k`` candidates are scored by
    :func:`chrono_engine.score` with ``policy`` (default: ``ScoringPolicy()``, one-year
    half-life, product fusion) at ``as_of`` (None: now) and the best ``k`` returned, best
    first (score, then similarity). ``keys``: where the metadata holds the candidate's times
    and the other scored columns (:class:`MetadataKeys`); ``undated``: what happens to a
    document without a time ("keep": ranked after the dated ones; "drop"; "error").
    Each returned document is a copy whose metadata gains ``similarity``, ``validity`` and
    ``score``. ``k``, ``fetch_k`` and ``as_of`` may also be given per call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    base: Any
    policy: Any = None
    k: int = 4
    fetch_k: int = 20
    as_of: Any = None
    keys: MetadataKeys = Field(default_factory=MetadataKeys)
    score_key: str = "score"
    undated: str = "keep"

    def _args(self, kwargs: dict) -> tuple[int, int, Any]:
        k = count(kwargs.pop("k", self.k), "k", lo=1, hi=K_MAX, error=QueryError)
        fetch_k = count(kwargs.pop("fetch_k", self.fetch_k), "fetch_k", lo=1, hi=1 << 20, error=QueryError)
        as_of = kwargs.pop("as_of", self.as_of)
        if kwargs:
            raise QueryError(f"unknown argument(s) {', '.join(sorted(kwargs))} (k, fetch_k, as_of)")
        if self.undated not in UNDATED:
            raise QueryError(f"undated must be one of {', '.join(UNDATED)}, got {shown(self.undated)}")
        if not isinstance(self.base, (VectorStore, BaseRetriever)):
            raise QueryError(f"base must be a LangChain VectorStore or BaseRetriever, got {type(self.base).__name__}")
        if self.policy is not None and not isinstance(self.policy, ScoringPolicy):
            raise QueryError(f"policy must be a ScoringPolicy, got {type(self.policy).__name__}")
        return k, max(k, fetch_k), as_of

    def _rank(self, pairs: list, k: int, as_of: Any) -> list[Document]:
        docs = [d for d, _ in pairs]
        order, table = rescore([s for _, s in pairs], [d.metadata for d in docs], policy=self.policy,
                               as_of=as_of, keys=self.keys, undated=self.undated)
        sim = table.column("similarity").to_pylist()
        val = table.column("validity").to_pylist()
        sc = table.column("score").to_pylist()
        out = []
        for i in order[:k]:
            d = docs[i]
            meta = {**d.metadata, "similarity": sim[i], "validity": val[i], "score": sc[i]}
            out.append(Document(page_content=d.page_content, metadata=meta, id=d.id))
        return out

    def _similarity(self, doc: Document) -> float:
        v = doc.metadata.get(self.score_key, 1.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise QueryError(f"document {doc.id!r}: metadata '{self.score_key}' = {shown(v)} is not a number")
        return float(v)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        k, fetch_k, as_of = self._args(kwargs)
        if isinstance(self.base, VectorStore):
            try:
                pairs = self.base.similarity_search_with_relevance_scores(query, k=fetch_k)
            except NotImplementedError:  # a store without a relevance function: its own score
                pairs = self.base.similarity_search_with_score(query, k=fetch_k)
        else:
            docs = self.base.invoke(query, config={"callbacks": run_manager.get_child()})[:fetch_k]
            pairs = [(d, self._similarity(d)) for d in docs]
        return self._rank(pairs, k, as_of)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        k, fetch_k, as_of = self._args(kwargs)
        if isinstance(self.base, VectorStore):
            try:
                pairs = await self.base.asimilarity_search_with_relevance_scores(query, k=fetch_k)
            except NotImplementedError:
                pairs = await self.base.asimilarity_search_with_score(query, k=fetch_k)
        else:
            docs = (await self.base.ainvoke(query, config={"callbacks": run_manager.get_child()}))[:fetch_k]
            pairs = [(d, self._similarity(d)) for d in docs]
        return self._rank(pairs, k, as_of)
