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



# ---------------------------------------------------------------------- metadata filters

from llama_index.core.vector_stores import (  # noqa: E402
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn  # noqa: E402

from adapters import metadata_engine, metadata_rows  # noqa: E402
from chrono_engine.integrations.llama_index import to_where  # noqa: E402

F, C = FilterOperator, FilterCondition
T0 = int(np.datetime64("2020-01-01", "us").astype(np.int64))
DAY = 86_400_000_000


@functools.lru_cache(maxsize=None)
def filtered():
    rows, values = metadata_rows(240, seed=13)
    return rows, values, metadata_engine(rows)


def _us(v):
    """A filter's time (ISO string or µs) as µs, as the engine reads it."""
    return v if isinstance(v, int) else int(np.datetime64(v.replace("Z", ""), "us").astype(np.int64))


def llama_passes(filters: MetadataFilters, meta: dict) -> bool:
    """Whether LlamaIndex's own SimpleVectorStore filter (build_metadata_filter_fn, which
    takes one flat MetadataFilters) passes ``meta``; nested groups evaluated by the same
    rule (AND: all, OR: any, NOT: none). The timestamp column's filter values are read as
    µs (the adapter compares times as instants; ``meta`` holds them as µs)."""
    results = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            results.append(llama_passes(f, meta))
            continue
        if f.key == "since" and f.value is not None:
            f = MetadataFilter(key=f.key, operator=f.operator,
                               value=[_us(v) for v in f.value] if isinstance(f.value, list) else _us(f.value))
        results.append(build_metadata_filter_fn(lambda _id: meta, MetadataFilters(filters=[f]))("node"))
    cond = filters.condition or C.AND
    if not results:
        return True
    return all(results) if cond == C.AND else any(results) if cond == C.OR else not any(results)


def _pools():
    from test_where import TAGS, TENANTS
    return {"tenant": TENANTS + ["nobody"], "dept": [f"d{i}" for i in range(55)] + [""], "acl": TAGS + ["none"]}


def random_leaf(rng) -> MetadataFilter:
    """A MetadataFilter with an operator that translates on its field's kind."""
    pools = _pools()
    key = ["tenant", "dept", "acl", "level", "rating", "flag", "since"][int(rng.integers(0, 7))]

    def pick(pool, k=None):
        if k is None:
            return pool[int(rng.integers(0, len(pool)))]
        return [pool[int(i)] for i in rng.integers(0, len(pool), k)]

    if key in ("tenant", "dept"):
        op = pick([F.EQ, F.NE, F.IN, F.NIN, F.IS_EMPTY])
        value = pick(pools[key], int(rng.integers(0, 4))) if op in (F.IN, F.NIN) else \
            None if op == F.IS_EMPTY else pick(pools[key])
    elif key == "acl":
        op = pick([F.CONTAINS, F.ANY, F.ALL])
        value = pick(pools["acl"]) if op == F.CONTAINS else pick(pools["acl"], int(rng.integers(0, 3)))
    elif key == "flag":
        op = pick([F.EQ, F.NE, F.IS_EMPTY, F.IN])
        value = None if op == F.IS_EMPTY else [int(rng.integers(0, 2))] if op == F.IN else int(rng.integers(0, 2))
    elif key == "since":
        op = pick([F.GT, F.GTE, F.LT, F.LTE, F.EQ, F.IS_EMPTY])
        day = int(rng.integers(0, 1500))
        value = None if op == F.IS_EMPTY else (T0 + day * DAY if rng.random() < 0.5 else
                                               str(np.datetime64(T0 + day * DAY, "us").astype("datetime64[D]")))
    else:
        op = pick([F.EQ, F.NE, F.GT, F.GTE, F.LT, F.LTE, F.IN, F.NIN, F.IS_EMPTY])
        x = int(rng.integers(-50, 51)) if key == "level" else float(np.round(rng.random(), 2))
        if key == "level" and rng.random() < 0.2:
            x += 0.5
        value = None if op == F.IS_EMPTY else [x, -x] if op in (F.IN, F.NIN) else x
    return MetadataFilter(key=key, value=value, operator=op)


def random_filters(rng, depth=0) -> MetadataFilters:
    kids = []
    for _ in range(int(rng.integers(1, 4))):
        kids.append(random_filters(rng, depth + 1) if depth < 2 and rng.random() < 0.3 else random_leaf(rng))
    return MetadataFilters(filters=kids, condition=[C.AND, C.OR, C.NOT][int(rng.integers(0, 3))])


def _meta(values: dict, i: int) -> dict:
    return {name: col[i] for name, col in values.items()}


def test_nodes_carry_the_items_metadata_columns():
    rows, values, eng = filtered()
    got = ChronoRetriever(eng, k=6, now=NOW).retrieve("acme ceo ada")
    for n in got:
        i = int(n.node.node_id)
        assert all(n.node.metadata[c] == values[c][i] for c in ("tenant", "dept", "acl", "level", "rating", "flag"))
        assert "tenant" in n.node.get_content(metadata_mode="llm")


def test_filters_equal_llama_indexs_own_filter_over_the_items():
    """Random MetadataFilters (every translatable operator on every kind, nested AND / OR /
    NOT): the retriever's nodes are exactly those of the same retriever over an engine
    holding only the items LlamaIndex's own ``build_metadata_filter_fn`` passes."""
    rows, values, eng = filtered()
    n = len(eng)
    rng = np.random.default_rng(8)
    questions = ["acme ceo ada", "oslo river policy", "travel price bergen", "bo ada travel"]
    nonempty = 0
    for trial in range(40):
        filters = random_filters(rng)
        keep = np.array([llama_passes(filters, _meta(values, i)) for i in range(n)])
        q = questions[trial % len(questions)]
        want = ChronoRetriever(metadata_engine(rows, keep), k=6, now=NOW).retrieve(q)
        got = ChronoRetriever(eng, k=6, now=NOW, filters=filters).retrieve(q)
        assert [x.node.node_id for x in got] == [x.node.node_id for x in want], filters
        assert [x.score for x in got] == [x.score for x in want]
        assert [x.node.metadata for x in got] == [x.node.metadata for x in want]
        nonempty += bool(got) and not keep.all()
    assert nonempty >= 25


def test_each_operator_against_llama_indexs_filter():
    """One filter per translatable operator and kind, flat: the set of items the engine
    passes (mode "all", k = every item) is the set LlamaIndex's own filter passes."""
    rows, values, eng = filtered()
    n = len(eng)
    cases = [("tenant", F.EQ, "acme"), ("tenant", F.NE, "acme"), ("tenant", F.IN, ["acme", "hooli"]),
             ("tenant", F.NIN, ["acme", "hooli"]), ("tenant", F.IN, []), ("tenant", F.NIN, []),
             ("dept", F.IS_EMPTY, None), ("level", F.EQ, 3), ("level", F.EQ, 2.5), ("level", F.GT, 10),
             ("level", F.GTE, 10.5), ("level", F.LT, -3), ("level", F.LTE, -3), ("level", F.IN, [1, 2, 3.0]),
             ("level", F.IS_EMPTY, None), ("rating", F.GT, 0.5), ("rating", F.NE, 0.5), ("rating", F.NIN, [0.5, 0.25]),
             ("flag", F.EQ, 1), ("flag", F.EQ, 0), ("flag", F.NE, 1), ("flag", F.NIN, [0]), ("acl", F.CONTAINS, "hr"),
             ("acl", F.ANY, ["hr", "legal"]), ("acl", F.ANY, []), ("acl", F.ALL, ["hr", "eng"]), ("acl", F.ALL, ["all"]),
             ("acl", F.ALL, []), ("since", F.GTE, "2021-06-01"), ("since", F.LT, T0 + 400 * DAY),
             ("since", F.IS_EMPTY, None)]
    q = eng.vectors()[0]
    for key, op, value in cases:
        filters = MetadataFilters(filters=[MetadataFilter(key=key, operator=op, value=value)])
        keep = {i for i in range(n) if llama_passes(filters, _meta(values, i))}
        where = to_where(filters, eng.metadata)
        got = set(eng.search(q, n, mode="all", arbitrate=False, where=where).column("id").to_pylist())
        assert got == keep, (key, op, value, where)
    both = MetadataFilters(filters=[MetadataFilter(key="tenant", value="acme"),
                                    MetadataFilters(filters=[MetadataFilter(key="flag", value=1),
                                                             MetadataFilter(key="level", value=0, operator=F.GT)],
                                                    condition=C.NOT)], condition=C.OR)
    assert to_where(both, eng.metadata) == {"$or": [{"tenant": {"$eq": "acme"}}, {"$not": {"$or": [
        {"flag": {"$eq": True}}, {"level": {"$gt": 0}}]}}]}


def test_filters_with_search_kwargs_where_and_in_a_query_engine():
    rows, values, eng = filtered()
    filters = MetadataFilters(filters=[MetadataFilter(key="acl", value="hr", operator=F.CONTAINS)])
    r = ChronoRetriever(eng, k=5, now=NOW, filters=filters, search_kwargs={"where": {"tenant": "acme"}})
    keep = np.array([llama_passes(filters, _meta(values, i)) and values["tenant"][i] == "acme" for i in range(len(eng))])
    want = ChronoRetriever(metadata_engine(rows, keep), k=5, now=NOW).retrieve("acme ceo ada")
    assert [x.node.node_id for x in r.retrieve("acme ceo ada")] == [x.node.node_id for x in want] != []
    qe = RetrieverQueryEngine.from_args(r, llm=MockLLM())
    resp = qe.query("acme ceo ada")
    assert [x.node.node_id for x in resp.source_nodes] == [x.node.node_id for x in want]
    assert [x.node.node_id for x in asyncio.run(r.aretrieve("acme ceo ada"))] == [x.node.node_id for x in want]
    assert ChronoRetriever(eng, k=5, filters=MetadataFilters(filters=[])).retrieve("acme") != []  # no filter


@pytest.mark.parametrize("key, op, value, match", [
    ("acl", F.EQ, "hr", "EQ .* list<string> column 'acl' has no exact translation.*CONTAINS"),
    ("acl", F.NE, "hr", "NE .*whole list"),
    ("acl", F.IN, ["hr"], "IN .*whole list"),
    ("acl", F.IS_EMPTY, None, "IS_EMPTY .*empty list"),
    ("tenant", F.CONTAINS, "ac", "CONTAINS .*substring"),
    ("tenant", F.ANY, ["a"], "ANY .*substring"),
    ("level", F.ALL, [1], "ALL .*one value, not a list"),
    ("tenant", F.GT, "acme", "GT .*orders strings as text"),
    ("flag", F.LT, 1, "LT .*bool column"),
    ("tenant", F.TEXT_MATCH, "acme", "TEXT_MATCH .*substring"),
    ("tenant", F.TEXT_MATCH_INSENSITIVE, "acme", "TEXT_MATCH_INSENSITIVE"),
    ("tenant", F.EQ, None, "EQ .*value None.*IS_EMPTY"),
    ("tenant", F.EQ, 5, "string column; the value must be a string, got 5"),
    ("flag", F.EQ, 2, "must be 1 or 0"),
    ("level", F.EQ, "3", "must be a number"),
    ("since", F.GT, 1.5, "must be a time"),
    ("tenant", F.IN, "acme", "takes a list of values"),
    ("nope", F.EQ, "x", "'nope': not a metadata column of the engine"),
    ("valid_from", F.GT, "2020-01-01", "engine column, not a metadata column"),
])
def test_operators_without_an_exact_translation_are_errors_naming_them(key, op, value, match):
    rows, values, eng = filtered()
    filters = MetadataFilters(filters=[MetadataFilter(key="tenant", value="acme"),
                                       MetadataFilters(filters=[MetadataFilter(key=key, operator=op, value=value)])])
    with pytest.raises(QueryError, match=match) as e:
        ChronoRetriever(eng, k=2, filters=filters).retrieve("acme")
    assert str(e.value).startswith("filters.filters[1].filters[0]: ")


def test_bad_filters_arguments():
    rows, values, eng = filtered()
    with pytest.raises(QueryError, match="filters must be a llama_index MetadataFilters, got dict"):
        ChronoRetriever(eng, filters={"tenant": "acme"})
    inner = MetadataFilters(filters=[MetadataFilter(key="tenant", value="acme"), MetadataFilters(filters=[])])
    with pytest.raises(QueryError, match=r"filters.filters\[1\]: an empty MetadataFilters inside another"):
        ChronoRetriever(eng, filters=inner).retrieve("acme")
    assert to_where(None, eng.metadata) is None
