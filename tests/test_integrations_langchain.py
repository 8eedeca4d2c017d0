"""The LangChain adapters (chrono_engine.integrations.langchain): langchain-tests' standard
retriever suite (also with a metadata filter), the documents against the engine's own hits,
per-call time overrides, metadata filters (``search_kwargs={"filter": ...}``, per call)
against the engine holding only the items a plain-Python reference passes, and the rerank
wrapper against a NumPy reference of its scores over LangChain's own in-memory vector
store."""
from __future__ import annotations

import asyncio
import datetime as dt
import functools
import sys

import numpy as np
import pytest

if sys.version_info < (3, 11):  # pragma: no cover - the CI image runs 3.11
    pytest.skip("langchain-core 1.x needs Python >= 3.11 (the [langchain] extra installs nothing below)",
                allow_module_level=True)
pytest.importorskip("langchain_core", reason="the [langchain] extra is not installed")
lt = pytest.importorskip("langchain_tests.integration_tests", reason="langchain-tests is not installed")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

import chrono_engine as ce  # noqa: E402
import reference as ref  # noqa: E402
from chrono_engine.errors import QueryError  # noqa: E402
from adapters import (FACTS, DIM, METADATA_SCHEMA, embed, fact_engine, langchain_embeddings,  # noqa: E402
                      metadata_engine, metadata_rows)
from chrono_engine.integrations._common import MetadataKeys  # noqa: E402
from chrono_engine.integrations.langchain import (  # noqa: E402
    ChronoRerankRetriever,
    ChronoRetriever,
    time_weighted_policy,
)

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)


@functools.lru_cache(maxsize=None)
def engine() -> ce.Engine:
    return fact_engine()


class TestStandardRetriever(lt.RetrieversIntegrationTests):
    """langchain-tests' own retriever suite, unchanged."""

    @property
    def retriever_constructor(self):
        return ChronoRetriever

    @property
    def retriever_constructor_params(self):
        return {"engine": engine(), "k": 2, "now": NOW}

    @property
    def retriever_query_example(self) -> str:
        return "who is the ceo of acme"


TENANT = ["acme"] * 6 + ["globex"] * 2  # FACTS' tenants: the two prices are globex's


@functools.lru_cache(maxsize=None)
def tenant_engine() -> ce.Engine:
    return fact_engine(extra={"tenant": TENANT})


class TestStandardRetrieverFiltered(lt.RetrieversIntegrationTests):
    """The same suite with a metadata filter in ``search_kwargs``, as LangChain's vector
    store retrievers take it."""

    @property
    def retriever_constructor(self):
        return ChronoRetriever

    @property
    def retriever_constructor_params(self):
        return {"engine": tenant_engine(), "k": 2, "now": NOW, "search_kwargs": {"filter": {"tenant": "acme"}}}

    @property
    def retriever_query_example(self) -> str:
        return "acme shares trade at"


def test_documents_are_the_engines_hits():
    r = ChronoRetriever(engine=engine(), k=3, now=NOW)
    docs = r.invoke("who was the ceo of acme in 2020?")
    hits = engine().query("who was the ceo of acme in 2020?", 3, now=NOW).hits
    assert [d.page_content for d in docs] == hits.column("content").to_pylist()
    assert [int(d.id) for d in docs] == hits.column("id").to_pylist()
    assert docs[0].page_content == "the ceo of acme is bo"
    m = docs[0].metadata
    assert m["valid_from"] == "2019-03-01T00:00:00+00:00" and m["valid_to"] == "2023-07-01T00:00:00+00:00"
    assert m["stem_id"] == "ceo" and m["rank"] == 1 and m["certified"] is True
    assert m["score"] == pytest.approx(hits.column("score")[0].as_py())
    assert m["citation"] == hits.column("citation")[0].as_py()
    assert set(m) >= {"id", "score", "similarity", "validity", "version", "title"}


def test_open_ended_fact_has_no_end_and_latest_is_current():
    docs = ChronoRetriever(engine=engine(), k=1, now=NOW).invoke("who is the ceo of acme")
    assert docs[0].page_content == "the ceo of acme is cy" and docs[0].metadata["valid_to"] is None


def test_per_call_and_per_retriever_time_overrides_match_search():
    r = ChronoRetriever(engine=engine(), k=1)
    for at, want in (("2016-05-01", "ada"), ("2021-01-01", "bo"), ("2025-01-01", "cy")):
        got = r.invoke("who is the ceo of acme", as_of=at)
        ref = engine().search(embed("who is the ceo of acme"), 1, mode="as_of", as_of=at)
        assert got[0].page_content.endswith(want)
        assert int(got[0].id) == ref.column("id")[0].as_py()
    fixed = ChronoRetriever(engine=engine(), k=1, mode="as_of", as_of="2016-05-01")
    assert fixed.invoke("who is the ceo of acme")[0].page_content.endswith("ada")
    # window: every fact valid during 2019 (both CEOs); k per call
    w = r.invoke("who is the ceo of acme", window=("2019-01-01", "2020-01-01"), k=2,
                 fact_types=None, arbitrate=False)
    assert {d.page_content for d in w} == {"the ceo of acme is ada", "the ceo of acme is bo"}


def test_langchain_embeddings_as_the_question_embedder():
    eng = ce.Engine(DIM, threads=1)  # no embedder of its own
    eng.ingest({"vector": np.stack([embed(c) for _, c, _, _ in FACTS]), "content": [c for _, c, _, _ in FACTS],
                "valid_from": [f for _, _, f, _ in FACTS], "valid_to": [t for _, _, _, t in FACTS]})
    got = ChronoRetriever(engine=eng, k=2, now=NOW, embed=langchain_embeddings()).invoke("acme headquarters")
    ref = ChronoRetriever(engine=eng, k=2, now=NOW, embed=embed).invoke("acme headquarters")
    assert got == ref and "headquarters" in got[0].page_content


def test_search_kwargs_pass_through():
    r = ChronoRetriever(engine=engine(), k=3, now=NOW, search_kwargs={"known_at": "2000-01-01"})
    assert r.invoke("who is the ceo of acme") == []  # nothing was known yet (transaction time)


def test_async_matches_sync():
    r = ChronoRetriever(engine=engine(), k=3, now=NOW)
    q = "acme headquarters in 2015"
    assert asyncio.run(r.ainvoke(q)) == r.invoke(q)


@pytest.mark.parametrize("kwargs, match", [({"k": 0}, "k"), ({"mode": "soon"}, "mode"),
                                           ({"as_of": "not a date"}, "as_of"), ({"nope": 1}, "nope")])
def test_bad_arguments_are_clear_errors(kwargs, match):
    r = ChronoRetriever(engine=engine(), k=2, now=NOW)
    with pytest.raises(QueryError, match=match):
        r.invoke("who is the ceo of acme", **kwargs)


# ---------------------------------------------------------------------- reranking


def _store(docs):
    vs = InMemoryVectorStore(langchain_embeddings())
    vs.add_documents(docs)
    return vs


def _reference(sims, ages_days, half_life):
    """ScoringPolicy(decay=Exponential(half_life)), product fusion: s+ * 2^(-age / h)."""
    return np.clip(sims, 0, 1) * np.exp(-np.log(2) / half_life * np.maximum(ages_days, 0))


def test_rerank_vector_store_against_numpy():
    rng = np.random.default_rng(3)
    words = ["acme", "ceo", "price", "river", "oslo", "bergen", "ada", "bo"]
    docs, times = [], []
    for i in range(60):
        text = " ".join(rng.choice(words, 4))
        t = NOW - dt.timedelta(days=float(rng.uniform(0, 900)))
        docs.append(Document(page_content=f"{text} #{i}", metadata={"observed_at": t.isoformat(), "n": i}))
        times.append(t)
    vs = _store(docs)
    pol = ce.ScoringPolicy(decay=ce.Exponential(half_life=90))
    rr = ChronoRerankRetriever(base=vs, policy=pol, k=10, fetch_k=60, as_of=NOW)
    got = rr.invoke("acme ceo ada")
    pairs = vs.similarity_search_with_score("acme ceo ada", k=60)  # cosine: the store has no relevance fn
    sims = np.array([s for _, s in pairs])
    ages = np.array([(NOW - dt.datetime.fromisoformat(d.metadata["observed_at"])).total_seconds() / 86400
                     for d, _ in pairs])
    ref = _reference(sims, ages, 90)
    order = np.lexsort((np.arange(60), -sims, -ref))[:10]
    assert [d.metadata["n"] for d in got] == [pairs[i][0].metadata["n"] for i in order]
    np.testing.assert_allclose([d.metadata["score"] for d in got], ref[order], rtol=1e-5, atol=1e-6)
    assert all(d.metadata["validity"] <= 1.0 for d in got)
    assert asyncio.run(rr.ainvoke("acme ceo ada")) == got


def test_time_weighted_policy_is_langchains_formula():
    """TimeWeightedVectorStoreRetriever: relevance + (1 - decay_rate) ** hours_passed."""
    rng = np.random.default_rng(4)
    hours = rng.uniform(0, 500, 40)
    docs = [Document(page_content=f"acme news {i}", metadata={"observed_at": (NOW - dt.timedelta(hours=h)).isoformat(),
                                                                "score": float(s), "n": i})
            for i, (h, s) in enumerate(zip(hours, rng.uniform(0, 1, 40)))]

    class Fixed(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return docs

    rr = ChronoRerankRetriever(base=Fixed(), policy=time_weighted_policy(0.01), k=40, fetch_k=40, as_of=NOW)
    got = rr.invoke("acme")
    sims = np.array([d.metadata["score"] for d in docs])
    ref = sims + (1 - 0.01) ** hours
    assert [d.metadata["n"] for d in got] == list(np.lexsort((np.arange(40), -sims, -ref)))
    np.testing.assert_allclose([2 * d.metadata["score"] for d in got], np.sort(ref)[::-1], rtol=1e-5)
    with pytest.raises(QueryError, match="decay_rate"):
        time_weighted_policy(1.0)


def test_rerank_undated_and_validity_from_metadata():
    docs = [Document(page_content="old", metadata={"valid_from": "2001-01-01", "valid_to": "2002-01-01", "score": 0.9}),
            Document(page_content="now", metadata={"valid_from": "2026-05-01", "score": 0.5}),
            Document(page_content="undated", metadata={"score": 0.99})]

    class Fixed(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return docs

    pol = ce.ScoringPolicy(decay=ce.Exponential(half_life=365), deprecated="exclude")
    keep = ChronoRerankRetriever(base=Fixed(), policy=pol, k=3, as_of=NOW).invoke("x")
    assert [d.page_content for d in keep] == ["now", "undated", "old"]  # 'old' ended: excluded (-inf)
    assert keep[2].metadata["score"] == -np.inf
    drop = ChronoRerankRetriever(base=Fixed(), policy=pol, k=3, as_of=NOW, undated="drop").invoke("x")
    assert [d.page_content for d in drop] == ["now", "old"]
    with pytest.raises(QueryError, match="candidate 2 has no 'observed_at'"):
        ChronoRerankRetriever(base=Fixed(), policy=pol, as_of=NOW, undated="error").invoke("x")
    renamed = ChronoRerankRetriever(base=Fixed(), policy=pol, k=1, as_of=NOW,
                                    keys=MetadataKeys(observed_at="valid_from")).invoke("x")
    assert renamed[0].page_content == "now"


def test_rerank_hostile_metadata():
    class Fixed(BaseRetriever):
        docs: list

        def _get_relevant_documents(self, query, *, run_manager):
            return self.docs

    bad_time = Fixed(docs=[Document(page_content="a", metadata={"observed_at": "yesterday-ish"})])
    with pytest.raises(QueryError, match="candidate 0: metadata 'observed_at'"):
        ChronoRerankRetriever(base=bad_time, as_of=NOW).invoke("x")
    bad_score = Fixed(docs=[Document(page_content="a", metadata={"observed_at": "2020-01-01", "score": "high"})])
    with pytest.raises(QueryError, match="metadata 'score'"):
        ChronoRerankRetriever(base=bad_score, as_of=NOW).invoke("x")
    bad_rel = Fixed(docs=[Document(page_content="a", metadata={"observed_at": "2020-01-01", "reliability": "x"})])
    with pytest.raises(QueryError, match="candidate 0: metadata 'reliability'"):
        ChronoRerankRetriever(base=bad_rel, as_of=NOW).invoke("x")
    with pytest.raises(QueryError, match="base must be"):
        ChronoRerankRetriever(base=object(), as_of=NOW).invoke("x")
    with pytest.raises(QueryError, match="unknown argument"):
        ChronoRerankRetriever(base=bad_time, as_of=NOW).invoke("x", fetch=3)


# ---------------------------------------------------------------------- metadata filters


def test_the_standard_suites_filter_applies():
    q = "acme shares trade at"
    top = ChronoRetriever(engine=tenant_engine(), k=1, now=NOW).invoke(q)
    assert top[0].metadata["tenant"] == "globex"  # a price, unfiltered
    suite = TestStandardRetrieverFiltered()
    got = suite.retriever_constructor(**suite.retriever_constructor_params).invoke(q, k=8)
    every = ChronoRetriever(engine=tenant_engine(), k=8, now=NOW).invoke(q)  # one version per stem
    assert [d.page_content for d in got] == [d.page_content for d in every if d.metadata["tenant"] == "acme"]
    assert len(got) == 3 and len(every) == 4


QUESTIONS = ["acme ceo ada", "oslo river policy", "travel price bergen", "who is the ceo of acme in 2019?",
             "bo ada travel"]
#: filters on each column kind; more are drawn by tests/test_where.py's random_filter
FILTERS = [{"tenant": "acme"}, {"tenant": {"$ne": "acme"}}, {"tenant": {"$in": ["acme", "globex"]}},
           {"acl": "hr"}, {"acl": {"$in": ["legal", "ops"]}}, {"acl": {"$exists": False}},
           {"level": {"$gte": 0, "$lt": 30}}, {"rating": {"$lte": 0.25}}, {"flag": True},
           {"since": {"$gte": "2021-01-01"}}, {"dept": {"$nin": ["d1", "d2", "d3"]}},
           {"$or": [{"tenant": "initech"}, {"$not": {"acl": "eng"}}]},
           {"$and": [{"tenant": {"$exists": True}}, {"flag": {"$ne": True}}, {"level": {"$lt": 0}}]}]


@functools.lru_cache(maxsize=None)
def filtered():
    rows, values = metadata_rows(240, seed=11)
    return rows, values, metadata_engine(rows)


def _wheres(seed: int, extra: int) -> list:
    from test_where import random_filter
    rng = np.random.default_rng(seed)
    return FILTERS + [random_filter(METADATA_SCHEMA, rng) for _ in range(extra)]


def test_documents_carry_the_items_metadata_columns():
    rows, values, eng = filtered()
    docs = ChronoRetriever(engine=eng, k=8, now=NOW).invoke("acme ceo ada")
    assert len(docs) == 8
    for d in docs:
        i = int(d.id)
        for name in ("tenant", "dept", "acl", "level", "rating", "flag"):
            assert d.metadata[name] == values[name][i], name
        since = values["since"][i]
        assert d.metadata["since"] == (None if since is None else
                                       dt.datetime.fromtimestamp(since / 1e6, dt.timezone.utc).isoformat())
    only = ChronoRetriever(engine=eng, k=3, now=NOW, search_kwargs={"columns": ["tenant"]}).invoke("acme ceo ada")
    assert all("tenant" in d.metadata and "acl" not in d.metadata for d in only)


def test_filter_in_search_kwargs_and_per_call_equals_the_engine_of_the_passing_items():
    """``search_kwargs={"filter": f}``, ``invoke(q, filter=f)``, ``where=f``, ``batch`` and
    ``ainvoke`` give exactly the documents of the same retriever over an engine that holds
    only the items ``f`` passes (tests/reference.py's plain-Python ``where_mask``)."""
    rows, values, eng = filtered()
    n = len(eng)
    nonempty = 0
    for i, where in enumerate(_wheres(5, 12)):
        keep = ref.where_mask(where, values, n)
        sub = metadata_engine(rows, keep)
        q = QUESTIONS[i % len(QUESTIONS)]
        want = ChronoRetriever(engine=sub, k=6, now=NOW).invoke(q)
        got = ChronoRetriever(engine=eng, k=6, now=NOW, search_kwargs={"filter": where}).invoke(q)
        assert got == want, where
        assert all(keep[int(d.id)] for d in got)
        nonempty += bool(got)
        plain = ChronoRetriever(engine=eng, k=6, now=NOW)
        assert plain.invoke(q, filter=where) == want
        assert plain.invoke(q, where=where) == want
        if i < 3:
            assert plain.batch([q, q], filter=where) == [want, want]
            assert asyncio.run(plain.ainvoke(q, filter=where)) == want
    assert nonempty >= 15


def test_a_calls_filter_replaces_the_retrievers():
    rows, values, eng = filtered()
    r = ChronoRetriever(engine=eng, k=5, now=NOW, search_kwargs={"filter": {"tenant": "acme"}, "k": 3})
    assert len(r.invoke("acme ceo ada")) == 3  # k from search_kwargs, LangChain's place for it
    keep = ref.where_mask({"tenant": "globex"}, values, len(eng))
    want = ChronoRetriever(engine=metadata_engine(rows, keep), k=4, now=NOW).invoke("acme ceo ada")
    assert r.invoke("acme ceo ada", filter={"tenant": "globex"}, k=4) == want
    assert r.invoke("acme ceo ada", where={"tenant": "globex"}, k=4) == want
    assert len(r.invoke("acme ceo ada", filter=None, k=4)) == 4


@pytest.mark.parametrize("kwargs, match", [
    ({"filter": {"tenant": "acme"}, "where": {"tenant": "acme"}}, "filter or where, not both"),
    ({"filter": lambda doc: True}, "callable"),
    ({"filter": {"nope": 1}}, "unknown field"),
    ({"filter": {"tenant": {"$regex": "ac"}}}, "unknown operator"),
    ({"filter": {"level": {"$gt": "high"}}}, "compare it with a number"),
    ({"filter": {"acl": {"$gt": "hr"}}}, "list<string> column"),
])
def test_bad_filters_are_clear_errors(kwargs, match):
    rows, values, eng = filtered()
    with pytest.raises(QueryError, match=match):
        ChronoRetriever(engine=eng, k=2, now=NOW, search_kwargs=kwargs).invoke("acme ceo")
    with pytest.raises(QueryError, match=match):
        ChronoRetriever(engine=eng, k=2, now=NOW).invoke("acme ceo", **kwargs)
