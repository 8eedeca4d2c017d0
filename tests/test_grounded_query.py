"""Text whose time is inside it: ``ce.ground_rows`` (one row per fact) and the
post-stage of ``Engine.query`` (each text once, undated items, the window fit), checked
against a NumPy reference over random stores."""
from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine import search as _search
from chrono_engine._time import MIN_TIME_US, OPEN_END, US_PER_DAY
from chrono_engine.errors import QueryError, SchemaError

UTC = timezone.utc
NOW = "2030-01-01T00:00:00"


def _us(y, m=1, d=1):
    return int((datetime(y, m, d, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()) * 10 ** 6


# -- ground_rows -----------------------------------------------------------------------------
def test_ground_rows_repeats_each_chunk_once_per_fact():
    vec = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    g = ce.ground_rows({"vector": vec, "content": ["He joined Boston in 2009 and left two years later.",
                                                   "No time here.", "Since 2003 he coached."],
                        "title": ["a", "b", "c"], "reliability": [0.5, 0.6, 0.7]})
    assert g["title"].to_pylist() == ["a", "a", "b", "c"]
    assert g["reliability"].tolist() == [0.5, 0.5, 0.6, 0.7]
    assert np.array_equal(g["vector"], vec[[0, 0, 1, 2]])
    assert g["valid_from"].tolist() == [_us(2009), _us(2011), MIN_TIME_US, _us(2003)]
    assert g["valid_to"].tolist() == [_us(2010), _us(2012), OPEN_END, OPEN_END]
    eng = ce.Engine(dim=4)
    assert len(eng.ingest(g)) == 4


def test_ground_rows_takes_document_dates_and_row_dicts():
    rows = [{"vector": [1.0, 0.0], "content": "Last year sales fell."},
            {"vector": [0.0, 1.0], "content": "Last year sales fell."}]
    g = ce.ground_rows(rows, doc_date=["2020-06-01", None])
    # dated: last year = 2019; undated: a deictic expression cannot be placed
    assert g["valid_from"].tolist() == [_us(2019), MIN_TIME_US]
    g = ce.ground_rows(rows, doc_date="2010-03-01")
    assert g["valid_from"].tolist() == [_us(2009), _us(2009)]


@pytest.mark.parametrize("rows, column", [
    ({"vector": [[1.0]], "content": ["in 2009"], "valid_from": [0]}, "valid_from"),
    ({"vector": [[1.0]], "content": ["in 2009"], "valid_to": [0]}, "valid_to"),
    ({"vector": [[1.0]], "content": ["in 2009"], "id": [1]}, "id"),
    ({"vector": [[1.0]]}, "content"),
    ({"vector": [[1.0], [2.0]], "content": ["in 2009"]}, "vector"),
    ({"vector": [[1.0]], "content": [42]}, "content"),
])
def test_ground_rows_refuses_what_it_cannot_keep(rows, column):
    with pytest.raises(SchemaError) as e:
        ce.ground_rows(rows)
    assert e.value.column == column


def test_ground_rows_doc_dates_must_match_the_rows():
    with pytest.raises(SchemaError):
        ce.ground_rows({"vector": [[1.0]], "content": ["in 2009"]}, doc_date=["2020-01-01", "2021-01-01"])


# -- the query post-stage against NumPy --------------------------------------------------------
def _store(seed, n=300, dim=8):
    rng = np.random.default_rng(seed)
    texts = [f"text {i}" for i in rng.integers(0, n // 3, n)]  # repeated texts: rows of one item
    vf = rng.integers(_us(1990), _us(2025), n)
    vt = vf + rng.integers(30, 3000, n) * US_PER_DAY
    vt[rng.random(n) < 0.1] = OPEN_END  # facts that still hold ("since 2003")
    undated = rng.random(n) < 0.2
    vf[undated], vt[undated] = MIN_TIME_US, OPEN_END
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    eng = ce.Engine(dim=dim)
    eng.ingest({"vector": vecs, "valid_from": vf, "valid_to": vt, "content": texts})
    return eng, vecs, vf, vt, texts, undated


def _reference(q, vecs, vf, vt, texts, undated, k, *, window, drop_undated, distinct, fit, alpha=0.75):
    sim = vecs @ q
    keep = np.ones(len(sim), bool)
    if window is not None:  # with a fit, facts from a quarter before the window's start qualify
        lead = 0 if fit is None else 92 * US_PER_DAY
        keep &= (vf < window[1]) & (vt > window[0] - lead)
    if drop_undated:
        keep &= ~undated
    score = np.maximum(sim, 0.0)  # product fusion, no decay: s+
    if fit is not None:  # (window start, window end, half-life, now), all µs
        start, end, half_life, now = fit
        d = np.abs(vf - start).astype(np.float64)
        if end != OPEN_END:  # ends count up to a year; a fact still holding ends now
            d += np.minimum(np.abs(np.minimum(vt, now) - end), 365 * US_PER_DAY)
        score = alpha * score + (1 - alpha) * np.exp2(-d / half_life)
    rows = np.flatnonzero(keep)
    rows = rows[np.lexsort((rows, -score[rows]))]
    out, seen = [], set()
    for r in rows.tolist():
        if distinct and texts[r] in seen:
            continue
        seen.add(texts[r])
        out.append(r)
    return out[:k], score


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("question, window", [
    ("what happened from 2004 to 2008?", (_us(2004), _us(2009))),
    ("what happened in 2015?", (_us(2015), _us(2016))),
    ("what happened after 2015?", (_us(2016), OPEN_END)),
    ("what is the news?", None),
])
@pytest.mark.parametrize("distinct, undated, fit_days", [
    (True, "auto", None), (False, "auto", None), (True, "include", None), (True, "exclude", None),
    (True, "auto", 1095.0), (False, "include", 200.0), (True, "auto", "default"),
])
def test_query_post_stage_matches_numpy(seed, question, window, distinct, undated, fit_days):
    eng, vecs, vf, vt, texts, und = _store(seed)
    q = np.random.default_rng(100 + seed).normal(size=vecs.shape[1]).astype(np.float32)
    q /= np.linalg.norm(q)
    k = 7
    fit_kw = {} if fit_days == "default" else {"window_fit": fit_days}  # the default: a fit of 730 days
    fit_days = _search.WINDOW_FIT_DAYS if fit_days == "default" else fit_days
    assert _search.WINDOW_FIT_DAYS == 730.0
    res = eng.query(question, k=k, now=NOW, embed=lambda t: q, distinct=distinct, undated=undated, **fit_kw)
    mode = res.intent.mode
    assert (mode == "latest") == (window is None)
    if window is None:  # latest: compare the post-stage alone over every row in force
        return
    drop = undated == "exclude" or (undated == "auto")
    fit = None if fit_days is None else (window[0], window[1], fit_days * US_PER_DAY, _us(2030))
    want, score = _reference(q, vecs, vf, vt, texts, und, k, window=window, drop_undated=drop,
                             distinct=distinct, fit=fit)
    got = res.hits.column("id").to_numpy().astype(np.int64).tolist()
    assert np.allclose(res.hits.column("score").to_numpy(), score[got], atol=1e-5)
    # equal scores may come in either order: compare the score sequence and the sets
    assert np.allclose(np.sort(score[got])[::-1], np.sort(score[want])[::-1], atol=1e-5)
    assert res.hits.column("rank").to_pylist() == list(range(1, len(got) + 1))
    assert all(res.hits.column("certified").to_pylist())
    if distinct:
        assert len({texts[i] for i in got}) == len(got)
    if drop:
        assert not und[got].any()


def test_latest_questions_keep_undated_items_by_default():
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1.0, 0.0], [0.9, 0.1]], "valid_from": [MIN_TIME_US, _us(2020)],
                "content": ["undated", "dated"]})
    q = np.array([1.0, 0.0], np.float32)
    assert eng.query("what is it?", k=5, now=NOW, embed=lambda t: q).hits.column("content").to_pylist() == [
        "undated", "dated"]
    assert eng.query("what was it in 2021?", k=5, now=NOW, embed=lambda t: q).hits.column(
        "content").to_pylist() == ["dated"]
    assert eng.query("what was it in 2021?", k=5, now=NOW, embed=lambda t: q, undated="include",
                     window_fit=None).hits.column("content").to_pylist() == ["undated", "dated"]
    # the window fit (on by default) ranks the item valid in the window first: the undated
    # one's validity fits 2021 worst of all
    assert eng.query("what was it in 2021?", k=5, now=NOW, embed=lambda t: q, undated="include").hits.column(
        "content").to_pylist() == ["dated", "undated"]
    assert eng.query("what is it?", k=5, now=NOW, embed=lambda t: q, undated="exclude").hits.column(
        "content").to_pylist() == ["dated"]


def test_the_window_fit_fetches_until_exact_and_says_when_it_stops(monkeypatch):
    # many similar rows far from the window's start, the close ones less similar: the
    # post-stage must look past the first rows the core returns
    n = 200
    sims = np.linspace(0.99, 0.8, n)  # far: at most .75 * .99; close: at least .75 * .8 + .25
    vecs = np.stack([sims, np.sqrt(1 - sims ** 2)], axis=1).astype(np.float32)
    vf = np.full(n, _us(1990))
    vt = np.full(n, OPEN_END)
    vf[-3:], vt[-3:] = _us(2004), _us(2009)  # the close ones fit the window exactly
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": vecs, "valid_from": vf, "valid_to": vt, "content": [f"t{i}" for i in range(n)]})
    q = np.array([1.0, 0.0], np.float32)
    res = eng.query("from 2004 to 2008", k=3, now=NOW, embed=lambda t: q, window_fit=30.0)
    assert sorted(res.hits.column("id").to_pylist()) == [n - 3, n - 2, n - 1]
    assert all(res.hits.column("certified").to_pylist())
    monkeypatch.setattr(_search.text, "POST_FETCH_MAX", 20)
    res = eng.query("from 2004 to 2008", k=3, now=NOW, embed=lambda t: q, window_fit=30.0)
    assert not any(res.hits.column("certified").to_pylist())


@pytest.mark.parametrize("kw", [{"distinct": 1}, {"distinct": None}, {"undated": "never"}, {"undated": 1},
                                {"window_fit": 0}, {"window_fit": -3.0}, {"window_fit": float("nan")},
                                {"window_fit": True}, {"window_fit": "365"}, {"window_fit": 1e9}, {"k": 0}])
def test_query_post_stage_arguments_are_checked(kw):
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1.0, 0.0]], "valid_from": [0], "content": ["a"]})
    args = {"k": 3, **kw}
    with pytest.raises(QueryError):
        eng.query("from 2004 to 2008", now=NOW, embed=lambda t: np.array([1.0, 0.0], np.float32), **args)


@pytest.mark.parametrize("question", ["2018 oscar nominations", "who won last year's grand national 2017"])
def test_questions_that_hold_their_own_year_are_embedded_whole(question):
    """SituatedQA: the year is content; the cleaned text lost it."""
    seen = []
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1.0, 0.0]], "valid_from": [_us(2017)], "content": ["a"]})

    def embed(text):
        seen.append(text)
        return np.array([1.0, 0.0], np.float32)

    eng.query(question, now="2018-06-01", embed=embed)
    eng.query(question, now="2018-06-01", embed=embed, embed_text="cleaned")
    assert seen[0] == question and "20" not in seen[1]
