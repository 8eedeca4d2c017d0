"""Stand-ins shared by the framework adapters' tests (LangChain, LlamaIndex, the README's
examples): a deterministic text embedder, it wrapped as each framework's embedding class,
and a small versioned corpus of facts in an Engine."""
from __future__ import annotations

import hashlib

import numpy as np

import chrono_engine as ce

DIM = 32

#: (stem, content, valid_from, valid_to): three CEOs, two headquarters, a timeless fact, two prices
FACTS = [
    ("ceo", "the ceo of acme is ada", "2015-01-01", "2019-03-01"),
    ("ceo", "the ceo of acme is bo", "2019-03-01", "2023-07-01"),
    ("ceo", "the ceo of acme is cy", "2023-07-01", None),
    ("hq", "acme headquarters are in oslo", "2010-01-01", "2020-01-01"),
    ("hq", "acme headquarters are in bergen", "2020-01-01", None),
    ("river", "the river flows to the sea", "1900-01-01", None),
    ("price", "acme shares trade at 10 dollars", "2024-01-01", "2024-02-01"),
    ("price", "acme shares trade at 12 dollars", "2024-02-01", None),
]


def embed(text: str) -> np.ndarray:
    """A deterministic bag-of-words embedding (hashed words): similar texts, similar vectors."""
    v = np.zeros(DIM, np.float32)
    for w in text.lower().replace("?", " ").replace(",", " ").split():
        v[int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "little") % DIM] += 1.0
    return v + 1e-3


def fact_engine(facts=FACTS) -> ce.Engine:
    """An Engine (embedder: :func:`embed`) holding ``facts``, titled "<stem> page"."""
    eng = ce.Engine(DIM, embedder=embed, threads=1)
    eng.ingest({"vector": np.stack([embed(c) for _, c, _, _ in facts]), "content": [c for _, c, _, _ in facts],
                "stem_id": [s for s, _, _, _ in facts], "title": [f"{s} page" for s, _, _, _ in facts],
                "valid_from": [f for _, _, f, _ in facts], "valid_to": [t for _, _, _, t in facts]})
    return eng


def langchain_embeddings(fn=embed):
    """``fn`` as a LangChain ``Embeddings``."""
    from langchain_core.embeddings import Embeddings

    class Wrapped(Embeddings):
        def embed_documents(self, texts):
            return [fn(t).tolist() for t in texts]

        def embed_query(self, text):
            return fn(text).tolist()

    return Wrapped()


def llama_embedding(fn=embed):
    """``fn`` as a LlamaIndex ``BaseEmbedding``."""
    from llama_index.core.embeddings import BaseEmbedding

    class Wrapped(BaseEmbedding):
        def _get_query_embedding(self, query):
            return fn(query).tolist()

        async def _aget_query_embedding(self, query):
            return fn(query).tolist()

        def _get_text_embedding(self, text):
            return fn(text).tolist()

    return Wrapped()
