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


def fact_engine(facts=FACTS, extra: dict | None = None) -> ce.Engine:
    """An Engine (embedder: :func:`embed`) holding ``facts``, titled "<stem> page";
    ``extra``: metadata columns to ingest with them."""
    eng = ce.Engine(DIM, embedder=embed, threads=1)
    eng.ingest({"vector": np.stack([embed(c) for _, c, _, _ in facts]), "content": [c for _, c, _, _ in facts],
                "stem_id": [s for s, _, _, _ in facts], "title": [f"{s} page" for s, _, _, _ in facts],
                "valid_from": [f for _, _, f, _ in facts], "valid_to": [t for _, _, _, t in facts], **(extra or {})})
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


#: the metadata columns of :func:`metadata_rows` and the kinds of tests/test_where.py's
#: generators (and of its ``random_filter``) they are drawn from
METADATA_SCHEMA = {"tenant": "tenant", "dept": "dept", "acl": "acl", "level": "int", "rating": "float",
                   "flag": "bool", "since": "ts"}
_WORDS = ["acme", "ceo", "price", "river", "oslo", "bergen", "ada", "bo", "policy", "travel"]


def metadata_rows(n: int = 240, seed: int = 0) -> tuple[dict, dict]:
    """(rows, values): ``n`` items with ids 0..n-1, distinct texts (embedded by :func:`embed`),
    validity intervals and seven metadata columns (:data:`METADATA_SCHEMA`: string with
    nulls and empty strings, list<string> with nulls and empty lists, int64, float64, bool,
    timestamp), and each column's Python values (None: null; timestamps as µs ints; lists as
    lists), as ``tests/reference.py``'s ``where_mask`` reads them."""
    import pyarrow as pa

    from test_where import ARROW, _column

    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(_WORDS, 4)) + f" #{i}" for i in range(n)]
    values = {name: _column(kind, n, rng) for name, kind in METADATA_SCHEMA.items()}
    values["dept"] = ["" if v is not None and rng.random() < 0.1 else v for v in values["dept"]]
    start = np.datetime64("2015-01-01", "us") + rng.integers(0, 3650, n).astype("timedelta64[D]")
    end = start + rng.integers(30, 2000, n).astype("timedelta64[D]")
    rows = {"id": np.arange(n, dtype=np.uint64), "vector": np.stack([embed(t) for t in texts]), "content": texts,
            "valid_from": start, "valid_to": [None if rng.random() < 0.5 else e for e in end]}
    for name, kind in METADATA_SCHEMA.items():
        rows[name] = pa.array(values[name], ARROW[kind])
    return rows, values


def metadata_engine(rows: dict, keep=None) -> ce.Engine:
    """An Engine (embedder: :func:`embed`) holding ``rows``, or only those where ``keep`` is
    true (with their own ids): the reference for a filter that keeps them."""
    import pyarrow as pa

    kinds = {"tenant": "string", "dept": "string", "acl": "list<string>", "level": "int64", "rating": "float64",
             "flag": "bool", "since": "timestamp"}
    eng = ce.Engine(DIM, embedder=embed, threads=1, metadata=kinds)  # a subset's all-null column keeps its kind
    if keep is not None:
        idx = np.flatnonzero(keep)
        rows = {k: (v.take(pa.array(idx)) if isinstance(v, pa.Array) else
                    v[idx] if isinstance(v, np.ndarray) else [v[i] for i in idx]) for k, v in rows.items()}
    if len(rows["vector"]):
        eng.ingest(rows)
    return eng
