"""LlamaIndex retriever and node postprocessor (extra ``[llama-index]``: llama-index-core 0.14).

:class:`ChronoRetriever` answers a ``QueryBundle`` from an :class:`~chrono_engine.Engine`
(the question's own time intent, or a fixed ``mode`` / ``as_of`` / ``window``); each hit is
a ``TextNode`` (id = the item id) scored by the engine's fused score, its metadata holding
the validity interval, citation and scores. :class:`ChronoPostprocessor` rescores the nodes
of any retriever by validity with :func:`chrono_engine.score`: the temporal counterpart of
LlamaIndex's ``TimeWeightedPostprocessor``.

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
from pydantic import Field  # noqa: E402

from .._args import K_MAX, count, shown  # noqa: E402
from ..errors import QueryError  # noqa: E402
from ..scoring import ScoringPolicy  # noqa: E402

__all__ = ["ChronoRetriever", "ChronoPostprocessor"]

#: metadata a node carries that neither its embedding nor the LLM's prompt should read
_INTERNAL = tuple(c for c in META_COLUMNS if c not in ("title", "citation", "valid_from", "valid_to"))


class ChronoRetriever(BaseRetriever):
    """A LlamaIndex retriever over a chrono_engine :class:`~chrono_engine.Engine`.

    ``k``: nodes per question. ``mode`` / ``as_of`` / ``window`` (None: the question's own
    time intent, :meth:`Engine.query <chrono_engine.Engine.query>`): a fixed search
    instead. ``now`` / ``tz``: the clock and zone relative phrases resolve against.
    ``embed``: the question embedder (None: the engine's ``embedder``; a ``QueryBundle``
    that carries its own ``embedding`` is searched with it). ``search_kwargs``: other
    options of ``query`` / ``search`` (``fact_types``, ``known_at``, ``distinct``, ...).

    Each ``NodeWithScore`` has the engine's score; its ``TextNode`` (``id_`` = the item id)
    holds the hit's ``content`` and, in ``metadata``, the hit's columns as the LangChain
    adapter gives them (times ISO-8601 in UTC; the scores and ids are excluded from the
    node's embedding and LLM text, the title, citation and validity interval are not).
    """

    def __init__(self, engine: Any, k: int = 4, *, mode: str | None = None, as_of: Any = None,
                 window: Any = None, now: Any = None, tz: Any = None, embed: Any = None,
                 search_kwargs: dict | None = None, callback_manager: CallbackManager | None = None,
                 verbose: bool = False) -> None:
        self.engine = engine
        self.k = count(k, "k", lo=1, hi=K_MAX, error=QueryError)
        self.mode, self.as_of, self.window, self.now, self.tz, self.embed = mode, as_of, window, now, tz, embed
        self.search_kwargs = dict(search_kwargs or {})
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embed = self.embed
        if query_bundle.embedding is not None:
            given = query_bundle.embedding
            embed = lambda _text: given  # noqa: E731 - the bundle's own vector
        hits = run_search(self.engine, query_bundle.query_str, self.k, mode=self.mode, as_of=self.as_of,
                          window=self.window, now=self.now, tz=self.tz, embed=embed, options=self.search_kwargs)
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
