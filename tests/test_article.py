"""The article preset against a line-by-line Python translation of the enterprise
temporal-RAG article's listing (TypeScript, TemporalAwareRetriever), case by case."""
import math
import random
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine.article import parse_article_intent, parse_js_date
from chrono_engine.errors import QueryError

# --------------------------------------------------------------------------- the listing, translated

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
JS_WS = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
         "\u2028\u2029\u202f\u205f\u3000\ufeff")


def js_trim(s):
    return s.strip(JS_WS)


def date_utc_ms(*a):  # Date.UTC(y, m0, d, h, mi, s): month 0-based
    y, m0, *rest = a
    return (datetime(y, m0 + 1, *rest, tzinfo=UTC) - EPOCH) // timedelta(milliseconds=1)


def js_get_time(iso):  # new Date(iso).getTime() for the forms the tests use (runtime TZ = UTC)
    d = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    if d.tzinfo is None:
        d = d.replace(tzinfo=UTC)
    return (d - EPOCH) // timedelta(milliseconds=1)


class TemporalAwareRetriever:
    def __init__(self, semanticWeight=None, halfLifeDays=None):
        self.semanticWeight = 0.75 if semanticWeight is None else semanticWeight
        self.freshnessWeight = 1.0 - self.semanticWeight
        self.halfLifeDays = 365 if halfLifeDays is None else halfLifeDays

    def parseTemporalIntent(self, query, currentClock):
        cleaned = js_trim(query)
        isHistoricalAudit = False
        targetTimestamp = currentClock
        timeWindow = None
        yearMatch = re.search(r"(20[0-9]{2})年(?:度)?", query)
        if yearMatch:
            year = int(yearMatch.group(1), 10)
            startOfYear = date_utc_ms(year, 0, 1)
            endOfYear = date_utc_ms(year, 11, 31, 23, 59, 59)
            isHistoricalAudit = True
            targetTimestamp = startOfYear + (endOfYear - startOfYear) / 2
            timeWindow = {"start": startOfYear, "end": endOfYear}
            cleaned = js_trim(cleaned.replace(yearMatch.group(0), "", 1))
        if re.search(r"(?:最新|当前|现行|最近|有效)", query):
            cleaned = js_trim(re.sub(r"(?:最新|当前|现行|最近|有效)", "", cleaned))
            targetTimestamp = currentClock
        out = {"rawQuery": query, "cleanedQuery": cleaned, "isHistoricalAudit": isHistoricalAudit,
               "targetTimestamp": targetTimestamp}
        if timeWindow is not None:
            out["timeWindow"] = timeWindow
        return out

    def calculateGaussianFreshness(self, documentDateIso, targetTimestamp):
        docTime = js_get_time(documentDateIso)
        deltaDays = abs(targetTimestamp - docTime) / (1000 * 60 * 60 * 24)
        sigma = self.halfLifeDays / math.sqrt(2 * math.log(2))
        freshness = math.exp(-math.pow(deltaDays, 2) / (2 * math.pow(sigma, 2)))
        return max(0.01, min(1.0, freshness))

    def rankWithTemporalScoring(self, chunks, intent):
        out = []
        for chunk in chunks:
            md = chunk["metadata"]
            if intent.get("timeWindow"):
                frm = js_get_time(md["validFrom"])
                to = js_get_time(md["validTo"]) if md.get("validTo") else math.inf
                if to < intent["timeWindow"]["start"] or frm > intent["timeWindow"]["end"]:
                    out.append({**chunk, "freshnessScore": 0.001, "finalScore": chunk["denseScore"] * 0.1,
                                "isArbitratedWinner": False})
                    continue
            freshness = self.calculateGaussianFreshness(md["validFrom"], intent["targetTimestamp"])
            deprecationPenalty = 0.1 if (not intent["isHistoricalAudit"] and md["isDeprecated"]) else 1.0
            finalScore = (chunk["denseScore"] * self.semanticWeight
                          + freshness * self.freshnessWeight) * deprecationPenalty
            out.append({**chunk, "freshnessScore": freshness, "finalScore": finalScore,
                        "isArbitratedWinner": True})
        return sorted(out, key=lambda c: -c["finalScore"])  # stable, like Array.prototype.sort

    def arbitrateVersionConflicts(self, scoredChunks, topK=5):
        winners, seen = [], set()
        for chunk in scoredChunks:
            stemId = chunk["metadata"].get("stemId")
            if stemId in seen:
                continue
            seen.add(stemId)
            winners.append(chunk)
            if len(winners) >= topK:
                break
        return winners


def listing(chunks, query, clock, w=0.75, h=365, top_k=5):
    r = TemporalAwareRetriever(w, h)
    intent = r.parseTemporalIntent(query, clock)
    ranked = r.rankWithTemporalScoring(chunks, intent)
    winners = r.arbitrateVersionConflicts(ranked, top_k)
    return {"intent": intent,
            "ranked": [{k: c[k] for k in ("id", "freshnessScore", "finalScore", "isArbitratedWinner")}
                       for c in ranked],
            "winners": [c["id"] for c in winners]}


# --------------------------------------------------------------------------- fixtures

CLOCK = date_utc_ms(2026, 4, 1)  # 2026-05-01T00:00:00Z


def chunk(id, stem, version, valid_from, dense, deprecated=False, valid_to=None):
    md = {"stemId": stem, "version": version, "validFrom": valid_from, "isDeprecated": deprecated}
    if valid_to is not None:
        md["validTo"] = valid_to
    return {"id": id, "content": f"{stem} {version}", "metadata": md, "denseScore": dense}


TRAVEL = [
    chunk("travel-2023", "HR-POLICY-EXPENSE-TRAVEL", "v1.0.0", "2023-01-01", 0.912, True, "2026-03-01"),
    chunk("travel-2026", "HR-POLICY-EXPENSE-TRAVEL", "v2.0.0", "2026-03-01", 0.911),
    chunk("approval-v1", "FIN-APPROVAL", "v1.0.0", "2023-06-01", 0.62, True, "2024-05-01"),
    chunk("approval-v1.1", "FIN-APPROVAL", "v1.1.0", "2024-05-01", 0.61, True, "2025-07-01"),
    chunk("approval-v2", "FIN-APPROVAL", "v2.0.0", "2025-07-01", 0.60),
    chunk("sop", "OPS-SOP-7", "v1.0.0", "2024-02-10T08:30:00+08:00", 0.55),
    chunk("wiki", None, "v1", "2019-12-31T23:59:59.999Z", 0.7),
]


def assert_same(got, exp):
    assert got["intent"] == exp["intent"]
    assert [r["id"] for r in got["ranked"]] == [r["id"] for r in exp["ranked"]]
    for g, e in zip(got["ranked"], exp["ranked"]):
        assert g["isArbitratedWinner"] == e["isArbitratedWinner"]
        assert g["freshnessScore"] == pytest.approx(e["freshnessScore"], rel=1e-15, abs=0)
        assert g["finalScore"] == pytest.approx(e["finalScore"], rel=1e-15, abs=0)
    assert got["winners"] == exp["winners"]


CASES = [
    ("现在总监出差住宿报销上限是多少", {}),          # no listing keyword: current, not historical
    ("最新的总监住宿报销标准", {}),                   # implicit latest word
    ("2024年的审批权限表", {}),                      # historical: window 2024, midpoint target
    ("2024年度最新审批权限表", {}),                  # quirk: stays historical, target reset to clock
    ("2024年和2025年的制度", {}),                    # only the first year counts, removed once
    ("２０２４年的制度", {}),                         # full-width digits do not match
    ("\u3000\ufeff 2023年 差旅制度 \u3000", {}),     # JS trim (U+3000, U+FEFF)
    ("当前有效的现行制度最近", {}),                   # every latest word removed
    ("1999年的制度", {}),                            # only 20xx
    ("现在总监出差住宿报销上限是多少", {"w": 0.5, "h": 30}),
    ("2026年制度", {"top_k": 2}),
    ("2026年制度", {"top_k": 0}),                    # quirk: topK 0 still keeps one
    ("制度", {"top_k": -3, "w": 1.0}),
    ("2024年制度", {"w": 0.0, "h": 1}),
]


@pytest.mark.parametrize("query,kw", CASES)
def test_pipeline_matches_listing(query, kw):
    w, h, top_k = kw.get("w", 0.75), kw.get("h", 365), kw.get("top_k", 5)
    got = ce.article_reference_pipeline(TRAVEL, query, CLOCK, semantic_weight=w, half_life_days=h, top_k=top_k)
    assert_same(got, listing(TRAVEL, query, CLOCK, w, h, top_k))


def test_article_story_current_and_audit():
    got = ce.article_reference_pipeline(TRAVEL, "现在总监出差住宿报销上限是多少", CLOCK)
    # the deprecated 2023 policy is 0.001 more similar, yet loses (×0.1) and is pruned
    assert got["ranked"][0]["id"] == "travel-2026"
    assert "travel-2023" not in got["winners"]
    audit = ce.article_reference_pipeline(TRAVEL, "2024年的审批权限表", CLOCK)
    assert audit["intent"]["isHistoricalAudit"] is True
    assert audit["intent"]["timeWindow"] == {"start": date_utc_ms(2024, 0, 1),
                                             "end": date_utc_ms(2024, 11, 31, 23, 59, 59)}
    # 2024 is a leap year: the midpoint is still a whole millisecond
    assert audit["intent"]["targetTimestamp"] == date_utc_ms(2024, 0, 1) + (366 * 86_400_000 - 1000) // 2
    by_id = {r["id"]: r for r in audit["ranked"]}
    # travel-2026 starts after the window: dense × 0.1, freshness 0.001, not a winner
    assert by_id["travel-2026"]["finalScore"] == pytest.approx(0.911 * 0.1, rel=1e-15)
    assert by_id["travel-2026"]["freshnessScore"] == 0.001
    assert by_id["travel-2026"]["isArbitratedWinner"] is False
    # approval-v1 ends 2024-05-01, inside the window: kept, and not penalised (historical)
    assert by_id["approval-v1"]["isArbitratedWinner"] is True
    # the wiki page started 1 ms before the window and never ended: open 'to' = Infinity, in window
    assert by_id["wiki"]["isArbitratedWinner"] is True
    assert_same(audit, listing(TRAVEL, "2024年的审批权限表", CLOCK))


def test_quirks_stable_ties_missing_stems_out_of_window_winner():
    tie = [chunk("a", "S", "v1", "2026-01-01", 0.5), chunk("b", "T", "v1", "2026-01-01", 0.5),
           chunk("c", "S", "v2", "2026-01-01", 0.5)]
    got = ce.article_reference_pipeline(tie, "制度", CLOCK)
    assert [r["id"] for r in got["ranked"]] == ["a", "b", "c"]    # stable: input order on ties
    assert got["winners"] == ["a", "b"]
    nostem = [chunk("x", None, "v1", "2026-01-01", 0.9), chunk("y", None, "v1", "2026-01-01", 0.8)]
    assert ce.article_reference_pipeline(nostem, "q", CLOCK)["winners"] == ["x"]  # undefined is one key
    # an out-of-window item is still its stem's winner when it ranks first (arbitration ignores the flag)
    lone = [chunk("old", "S", "v1", "2020-01-01", 0.9, valid_to="2021-01-01")]
    out = ce.article_reference_pipeline(lone, "2024年制度", CLOCK)
    assert out["ranked"][0]["isArbitratedWinner"] is False and out["winners"] == ["old"]
    # inclusive comparisons: valid_to exactly at the window start is inside
    edge = [chunk("e", "S", "v1", "2020-01-01", 0.9, valid_to="2024-01-01T00:00:00Z")]
    assert ce.article_reference_pipeline(edge, "2024年", CLOCK)["ranked"][0]["isArbitratedWinner"] is True
    # an empty validTo is falsy: open
    empty = [chunk("o", "S", "v1", "2020-01-01", 0.9, valid_to="")]
    assert ce.article_reference_pipeline(empty, "2024年", CLOCK)["ranked"][0]["isArbitratedWinner"] is True
    for case in (tie, nostem, lone, edge, empty):
        for q in ("制度", "2024年制度", "2024年"):
            assert_same(ce.article_reference_pipeline(case, q, CLOCK), listing(case, q, CLOCK))


def test_freshness_clamps():
    far = [chunk("far", "S", "v1", "2000-01-01", 0.0)]
    r = ce.article_reference_pipeline(far, "q", CLOCK)["ranked"][0]
    assert r["freshnessScore"] == 0.01 and r["finalScore"] == pytest.approx(0.25 * 0.01, rel=1e-15)
    now = [chunk("now", "S", "v1", "2026-05-01", 0.0)]
    assert ce.article_reference_pipeline(now, "q", CLOCK)["ranked"][0]["freshnessScore"] == 1.0
    half = [chunk("h", "S", "v1", "2025-05-01", 0.0)]  # exactly 365 days: freshness 0.5
    assert ce.article_reference_pipeline(half, "q", CLOCK)["ranked"][0]["freshnessScore"] == pytest.approx(0.5, rel=1e-12)


def test_random_cases_match_listing():
    rng = random.Random(1234)
    words = ["制度", "2024年", "2023年度", "2025年", "最新", "有效", "当前", "现行", "最近", " ", "\u3000",
             "审批", "2030年", "19年", "20245年"]
    for case in range(300):
        n = rng.randint(0, 12)
        chunks = []
        for i in range(n):
            vf = datetime(2020, 1, 1, tzinfo=UTC) + timedelta(days=rng.randint(0, 2400), seconds=rng.randint(0, 86399))
            iso = vf.isoformat().replace("+00:00", "Z") if rng.random() < 0.5 else vf.date().isoformat()
            vt = None
            if rng.random() < 0.4:
                vt = (vf + timedelta(days=rng.randint(1, 900))).date().isoformat()
            chunks.append(chunk(f"c{i}", rng.choice(["A", "B", "C", None]), "v1", iso,
                                rng.choice([0.5, 0.7, rng.random()]), rng.random() < 0.3, vt))
        q = "".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        w, h, k = rng.choice([0.75, 0.0, 1.0, rng.random()]), rng.choice([365, 30, 1.5, 3650]), rng.randint(-1, 6)
        clock = CLOCK + rng.randint(-10**11, 10**11)
        assert_same(ce.article_reference_pipeline(chunks, q, clock, w, h, k), listing(chunks, q, clock, w, h, k))


@pytest.mark.parametrize("query", ["现在总监出差住宿报销上限是多少", "2024年的审批权限表", "2024年度最新审批权限表"])
def test_score_preset_matches_pipeline(query):
    pol = ce.ScoringPolicy.article_reference()
    vf = [parse_js_date(c["metadata"]["validFrom"]) * 1000 for c in TRAVEL]
    vt = [parse_js_date(c["metadata"]["validTo"]) * 1000 if c["metadata"].get("validTo") else None for c in TRAVEL]
    t = pa.table({"id": [c["id"] for c in TRAVEL],
                  "similarity": pa.array([c["denseScore"] for c in TRAVEL], pa.float64()),
                  "valid_from": pa.array(vf, pa.timestamp("us", tz="UTC")),
                  "valid_to": pa.array(vt, pa.timestamp("us", tz="UTC")),
                  "deprecated": [c["metadata"]["isDeprecated"] for c in TRAVEL]})
    out = ce.score(t, as_of=CLOCK * 1000, policy=pol, query=query)
    exp = {r["id"]: r for r in listing(TRAVEL, query, CLOCK)["ranked"]}
    for i, s, v in zip(out.column("id").to_pylist(), out.column("score").to_pylist(), out.column("validity").to_pylist()):
        assert s == pytest.approx(exp[i]["finalScore"], rel=1e-15)
        assert v == pytest.approx(exp[i]["freshnessScore"], rel=1e-15)
    assert out.column("id").to_pylist() == t.column("id").to_pylist()  # input order kept
    if "年" in query:  # the same window given directly
        win = ("2024-01-01T00:00:00Z", "2024-12-31T23:59:59Z")
        direct = ce.score(t, as_of=CLOCK * 1000, policy=pol, window=win).column("score").to_pylist()
        intent = listing(TRAVEL, query, CLOCK)["intent"]
        if intent["targetTimestamp"] == CLOCK:
            assert direct == out.column("score").to_pylist()


def test_score_preset_plain_query_and_errors():
    pol = ce.ScoringPolicy.article_reference(semantic_weight=0.6, half_life_days=90)
    assert pol.fusion == "linear" and pol.alpha == 0.6 and pol.preset == "article"
    t = pa.table({"similarity": [0.9, 0.9], "valid_from": pa.array([0, 0], pa.timestamp("us")),
                  "deprecated": [False, True]})
    s = ce.score(t, as_of=90 * 86_400_000_000, policy=pol).column("score").to_pylist()
    assert s[0] == pytest.approx(0.6 * 0.9 + 0.4 * 0.5, rel=1e-12)
    assert s[1] == pytest.approx(s[0] * 0.1, rel=1e-15)
    with pytest.raises(QueryError):
        ce.score(t, as_of=0, policy=pol, query="2024年", window=(0, 1))
    with pytest.raises(QueryError):
        ce.score(t, as_of=0, policy=ce.ScoringPolicy(), window=(0, 1))
    with pytest.raises(QueryError):
        ce.ScoringPolicy(preset="article")  # needs the article's decay and fusion
    with pytest.raises(QueryError):
        ce.ScoringPolicy(preset="other")


@pytest.mark.parametrize("bad", [
    {"validFrom": "2024/03/01"}, {"validFrom": "2024-02-30"}, {"validFrom": 20240301},
    {"validFrom": "2024-03-01T25:00"}, {"isDeprecated": "yes"}, {"validTo": "soon"},
])
def test_pipeline_rejects_unreadable_inputs(bad):
    c = chunk("x", "S", "v1", "2024-03-01", 0.5)
    c["metadata"].update(bad)
    with pytest.raises(QueryError):
        ce.article_reference_pipeline([c], "q", CLOCK)


def test_pipeline_argument_errors():
    with pytest.raises(QueryError):
        ce.article_reference_pipeline(TRAVEL, "q", CLOCK, half_life_days=0)
    with pytest.raises(QueryError):
        ce.article_reference_pipeline(TRAVEL, "q", float("nan"))
    with pytest.raises(QueryError):
        ce.article_reference_pipeline([{"id": 1}], "q", CLOCK)
    with pytest.raises(QueryError):
        ce.article_reference_pipeline([chunk("x", "S", "v1", "2024-03-01", float("inf"))], "q", CLOCK)


def test_js_dates():
    assert parse_js_date("2026-03-01") == js_get_time("2026-03-01")
    assert parse_js_date("2026-03-01T00:00:00+08:00") == js_get_time("2026-02-28T16:00:00Z")
    assert parse_js_date("2026") == js_get_time("2026-01-01")
    assert parse_js_date("2026-03") == js_get_time("2026-03-01")
    assert parse_js_date("2026-03-01T12:30") == js_get_time("2026-03-01T12:30:00Z")  # offset-less: UTC
    assert parse_js_date("2026-03-01T12:30:15.1239Z") == js_get_time("2026-03-01T12:30:15.123Z")
    assert parse_js_date("2026-03-01T24:00:00Z") == js_get_time("2026-03-02")
    assert parse_js_date("+002026-03-01") == js_get_time("2026-03-01")
    assert parse_js_date("1969-12-31T23:59:59.999Z") == -1
    assert parse_article_intent("2024年", CLOCK)["targetTimestamp"] == 1719878399500  # 2024-07-01T11:59:59.500Z


def test_vectorised_freshness_matches_scalar():
    rng = np.random.default_rng(0)
    vf = rng.integers(-10**12, 10**13, 500).astype(np.float64)
    from chrono_engine.article import article_freshness
    got = article_freshness(vf, CLOCK, 365)
    r = TemporalAwareRetriever()
    exp = [max(0.01, min(1.0, math.exp(-math.pow(abs(CLOCK - v) / 86_400_000, 2)
                                      / (2 * math.pow(r.halfLifeDays / math.sqrt(2 * math.log(2)), 2)))))
           for v in vf]
    np.testing.assert_allclose(got, exp, rtol=1e-15, atol=0)
