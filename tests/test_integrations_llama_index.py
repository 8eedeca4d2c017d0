"""The LlamaIndex adapters (chrono_engine.integrations.llama_index): the retriever and the
postprocessor with llama-index-core's own QueryBundle / NodeWithScore objects, in a small
end-to-end query engine (MockLLM, no network), and the postprocessor's scores against a
NumPy reference over llama-index's own VectorStoreIndex."""
from __future__ import annotations

import asyncio
import datetime as dt
import functools

import numpy as np
import pytest

pytest.importorskip("llama_index.core", reason="the [llama-index] extra is not installed")

from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

import chrono_engine as ce  # noqa: E402
from chrono_engine.errors import QueryError  # noqa: E402
from adapters import FACTS, embed, fact_engine, llama_embedding  # noqa: E402
from chrono_engine.integrations.llama_index import ChronoPostprocessor, ChronoRetriever  # noqa: E402

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)


@functools.lru_cache(maxsize=None)
def engine() -> ce.Engine:
    return fact_engine(FACTS[:6])  # the CEOs, the headquarters and the river


def test_retriever_nodes_are_the_engines_hits():
    r = ChronoRetriever(engine(), k=2, now=NOW)
    got = r.retrieve(QueryBundle("who was the ceo of acme in 2020?"))
    hits = engine().query("who was the ceo of acme in 2020?", 2, now=NOW).hits
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in got)
    assert [n.node.node_id for n in got] == [str(i) for i in hits.column("id").to_pylist()]
    assert [n.score for n in got] == pytest.approx(hits.column("score").to_pylist())
    assert got[0].node.get_content() == "the ceo of acme is bo"
    meta = got[0].node.metadata
    assert meta["valid_from"] == "2019-03-01T00:00:00+00:00" and meta["citation"] == hits.column("citation")[0].as_py()
    llm_text = got[0].node.get_content(metadata_mode="llm")
    assert "citation" in llm_text and "similarity" not in llm_text  # scores stay out of the prompt


def test_retriever_fixed_time_and_bundle_embedding():
    r = ChronoRetriever(engine(), k=1, as_of="2016-06-01")
    assert r.retrieve("who is the ceo of acme")[0].node.get_content().endswith("ada")
    # a bundle that carries its own vector is searched with it (here: the headquarters')
    b = QueryBundle("who is the ceo of acme", embedding=embed("acme headquarters are in").tolist())
    assert "headquarters" in ChronoRetriever(engine(), k=1, now=NOW).retrieve(b)[0].node.get_content()
    assert asyncio.run(r.aretrieve("who is the ceo of acme"))[0].node.node_id == r.retrieve(
        "who is the ceo of acme")[0].node.node_id
    with pytest.raises(QueryError, match="k"):
        ChronoRetriever(engine(), k=0)
    with pytest.raises(QueryError, match="mode"):
        ChronoRetriever(engine(), mode="someday").retrieve("x")


def test_query_engine_end_to_end_with_mock_llm():
    qe = RetrieverQueryEngine.from_args(ChronoRetriever(engine(), k=2, now=NOW), llm=MockLLM())
    resp = qe.query("where were acme headquarters in 2012?")
    assert resp.source_nodes[0].node.get_content() == "acme headquarters are in oslo"
    assert isinstance(str(resp), str)


def _reference(sims, ages_days, half_life):
    return np.clip(sims, 0, 1) * np.exp(-np.log(2) / half_life * np.maximum(ages_days, 0))


def test_postprocessor_in_a_query_engine_against_numpy():
    rng = np.random.default_rng(5)
    words = ["acme", "ceo", "price", "river", "oslo", "bergen", "ada", "bo"]
    nodes, ages = [], []
    for i in range(50):
        age = float(rng.uniform(0, 800))
        nodes.append(TextNode(id_=f"n{i}", text=" ".join(rng.choice(words, 4)) + f" #{i}",
                              metadata={"observed_at": (NOW - dt.timedelta(days=age)).isoformat()}))
        ages.append(age)
    index = VectorStoreIndex(nodes, embed_model=llama_embedding())
    base = index.as_retriever(similarity_top_k=50)
    pol = ce.ScoringPolicy(decay=ce.Exponential(half_life=120))
    post = ChronoPostprocessor(policy=pol, as_of=NOW, top_k=8)
    qe = RetrieverQueryEngine.from_args(base, llm=MockLLM(), node_postprocessors=[post])
    resp = qe.query("acme ceo oslo")
    raw = base.retrieve("acme ceo oslo")
    sims = np.array([n.score for n in raw])
    age = np.array([ages[int(n.node.node_id[1:])] for n in raw])
    ref = _reference(sims, age, 120)
    order = np.lexsort((np.arange(len(raw)), -sims, -ref))[:8]
    assert [n.node.node_id for n in resp.source_nodes] == [raw[i].node.node_id for i in order]
    np.testing.assert_allclose([n.score for n in resp.source_nodes], ref[order], rtol=1e-5, atol=1e-6)
    again = asyncio.run(post.apostprocess_nodes(raw, QueryBundle("acme ceo oslo")))
    assert [n.node.node_id for n in again] == [n.node.node_id for n in resp.source_nodes]


def test_postprocessor_validity_undated_and_errors():
    def node(name, score, **meta):
        return NodeWithScore(node=TextNode(id_=name, text=name, metadata=meta), score=score)
    nodes = [node("old", 0.9, valid_from="2001-01-01", valid_to="2002-01-01"),
             node("now", 0.5, valid_from=dt.datetime(2026, 5, 1)),
             node("undated", 0.99),
             node("no-score", None, observed_at="2026-05-30")]
    pol = ce.ScoringPolicy(decay=ce.Exponential(half_life=365), deprecated="exclude")
    got = ChronoPostprocessor(policy=pol, as_of=NOW).postprocess_nodes(nodes)
    assert [n.node.node_id for n in got] == ["no-score", "now", "undated", "old"]
    assert got[0].score == pytest.approx(2 ** (-2 / 365), rel=1e-6)  # no score: similarity 1.0
    assert got[-1].score == -np.inf
    assert nodes[0].node.metadata == {"valid_from": "2001-01-01", "valid_to": "2002-01-01"}  # not modified
    dropped = ChronoPostprocessor(policy=pol, as_of=NOW, undated="drop").postprocess_nodes(nodes)
    assert "undated" not in [n.node.node_id for n in dropped]
    with pytest.raises(QueryError, match="candidate 2 has no"):
        ChronoPostprocessor(policy=pol, as_of=NOW, undated="error").postprocess_nodes(nodes)
    with pytest.raises(QueryError, match="candidate 0: metadata 'observed_at'"):
        ChronoPostprocessor(as_of=NOW).postprocess_nodes([node("bad", 0.5, observed_at=[1, 2])])
    with pytest.raises(QueryError, match="policy"):
        ChronoPostprocessor(policy="fresh").postprocess_nodes(nodes)
    assert ChronoPostprocessor().postprocess_nodes([]) == []

