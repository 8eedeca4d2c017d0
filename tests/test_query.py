"""engine.query end to end on a bilingual, versioned enterprise corpus (the article's story):
travel policy 2023 -> 2026 (director hotel cap 600 -> 800), an approval-authority table
revised twice, an SOP retracted; a deterministic hashed bag-of-words embedder."""
from datetime import datetime, timezone

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine.demo import DIM, embed  # the demo's hashed bag of words (256 dims)
from chrono_engine.errors import QueryError

NOW = "2026-05-01T10:00:00"
TZ = "Asia/Shanghai"
UTC = timezone.utc


def row(stem, version, title, content, valid_from):
    return {"vector": embed(content), "stem_id": stem, "version": version, "title": title,
            "content": content, "valid_from": valid_from}


TRAVEL_ZH = "差旅报销管理制度（{y}版）：总监级出差住宿报销上限为每天{cap}元，经理级每天450元，须凭发票报销。"
TRAVEL_EN = "Travel Expense Policy {y}: the director hotel cap is {cap} yuan per night; managers 450 yuan; receipts required."
APPROVAL_ZH = "审批权限表：采购合同金额{amt}万元以下由部门总监审批，以上由副总裁审批。"
APPROVAL_EN = "Approval authority matrix: purchase contracts below {yuan} yuan are approved by the department director, above by a vice president."


@pytest.fixture(scope="module")
def corpus():
    eng = ce.Engine(dim=DIM, decay=ce.Exponential(half_life=3650), threads=1)
    eng.embedder = embed
    eng.ingest([
        row("TRAVEL-ZH", "v1.0.0", "差旅报销管理制度", TRAVEL_ZH.format(y=2023, cap=600), "2023-01-01T00:00:00+08:00"),
        row("TRAVEL-EN", "v1.0.0", "Travel Expense Policy", TRAVEL_EN.format(y=2023, cap=600), "2023-01-01"),
        row("APPROVAL-ZH", "v1.0.0", "审批权限表", APPROVAL_ZH.format(amt=50), "2023-06-01T00:00:00+08:00"),
        row("APPROVAL-EN", "v1.0.0", "Approval Authority Matrix", APPROVAL_EN.format(yuan=f"{50 * 10_000:,}"), "2023-06-01"),
        row("SOP-ZH", "v1.0.0", "产线开机安全操作规程", "产线开机前须完成安全检查，并由班组长审批后方可开机。", "2024-02-01T00:00:00+08:00"),
        row("SOP-EN", "v1.0.0", "Line Start-up SOP", "Before starting the production line, complete the safety check and get the shift leader's approval.", "2024-02-01"),
        row("IT-PWD", "v3.0.0", "Password Policy", "Passwords must be rotated every 90 days and have 12 characters.", "2025-01-01"),
        row("CANTEEN", "v1.0.0", "食堂管理办法", "员工食堂每天供应早餐和午餐，节假日不营业。", "2024-09-01T00:00:00+08:00"),
    ])
    # the revisions, as an OA approval flow would apply them
    eng.supersede("TRAVEL-ZH", [row("TRAVEL-ZH", "v2.0.0", "差旅报销管理制度", TRAVEL_ZH.format(y=2026, cap=800), None)
                                | {"valid_from": "2026-03-01T00:00:00+08:00"}], "2026-03-01T00:00:00+08:00")
    eng.supersede("TRAVEL-EN", [{k: v for k, v in row("TRAVEL-EN", "v2.0.0", "Travel Expense Policy",
                                                       TRAVEL_EN.format(y=2026, cap=800), None).items()
                                 if k != "valid_from"}], "2026-03-01")
    for ver, amt, eff in (("v1.1.0", 100, "2024-05-01"), ("v2.0.0", 200, "2025-07-01")):
        eng.supersede("APPROVAL-ZH", [{"vector": embed(APPROVAL_ZH.format(amt=amt)), "title": "审批权限表",
                                       "content": APPROVAL_ZH.format(amt=amt)}],
                      eff + "T00:00:00+08:00", version=ver)
        eng.supersede("APPROVAL-EN", [{"vector": embed(APPROVAL_EN.format(yuan=f"{amt * 10_000:,}")),
                                       "title": "Approval Authority Matrix",
                                       "content": APPROVAL_EN.format(yuan=f"{amt * 10_000:,}")}], eff, version=ver)
    sop_ids = eng.history("SOP-ZH").column("id").to_pylist() + eng.history("SOP-EN").column("id").to_pylist()
    known_before = datetime.now(UTC)
    eng.retract(sop_ids)  # the SOP was published in error and withdrawn
    return eng, sop_ids, known_before


def in_force_now(eng, hits, now):
    """Each hit is the version of its stem that is in force at `now` (not superseded,
    not deprecated, not retracted)."""
    for stem, hid in zip(hits.column("stem_id").to_pylist(), hits.column("id").to_pylist()):
        if stem is None:
            continue
        h = eng.history(stem).to_pylist()
        mine = next(r for r in h if r["id"] == hid)
        assert not mine["deprecated"], (stem, mine["version"])
        assert mine["retracted_at"] is None
        assert mine["valid_from"] <= now and (mine["valid_to"] is None or now < mine["valid_to"])
        assert mine["version"] == max((r for r in h if r["retracted_at"] is None),
                                      key=lambda r: ce.schema.parse_version(r["version"]))["version"]


NOW_DT = datetime(2026, 5, 1, 2, 0, tzinfo=UTC)  # NOW in Asia/Shanghai

LATEST_QUESTIONS = [
    "现在总监出差住宿报销上限是多少？",
    "总监出差住宿标准",
    "当前有效的审批权限表",
    "What is the director's hotel cap now?",
    "current approval authority matrix for purchase contracts",
    "产线开机前要走什么审批？",
    "Who approves a purchase contract?",
]


@pytest.mark.parametrize("question", LATEST_QUESTIONS)
def test_latest_questions_never_cite_a_superseded_version(corpus, question):
    eng, sop_ids, _ = corpus
    res = eng.query(question, k=5, now=NOW, tz=TZ)
    assert res.intent.mode == "latest"
    assert res.hits.num_rows == 5
    in_force_now(eng, res.hits, NOW_DT)
    assert not set(res.hits.column("id").to_pylist()) & set(sop_ids)


def test_director_hotel_cap_zh(corpus):
    eng, _, _ = corpus
    res = eng.query("现在总监出差住宿报销上限是多少？", now=NOW, tz=TZ)
    assert isinstance(res, ce.QueryResult) and res.lang == "zh"
    top = res.hits.slice(0, 1).to_pylist()[0]
    assert top["stem_id"] == "TRAVEL-ZH" and "800" in top["content"]
    # the effective date is the Shanghai calendar day (stored 2026-02-28T16:00Z)
    assert top["citation"] == "依据《差旅报销管理制度》v2.0.0（2026-03-01 起施行）"
    assert res.citations[0] == top["citation"]
    assert res.as_of == NOW_DT


def test_director_hotel_cap_en(corpus):
    eng, _, _ = corpus
    res = eng.query("What is the director's hotel cap now?", now=NOW, tz=TZ)
    assert res.lang == "en" and res.intent.cleaned_query == "What is the director's hotel cap?"
    top = res.hits.slice(0, 1).to_pylist()[0]
    assert top["stem_id"] == "TRAVEL-EN" and "800" in top["content"]
    assert top["citation"] == "per Travel Expense Policy v2.0.0, effective 2026-03-01"


def test_august_2024_audit_cites_the_table_in_force_then(corpus):
    eng, _, _ = corpus
    zh = eng.query("2024 年 8 月签订该采购合同时，当时生效的审批权限表是哪一份？", now=NOW, tz=TZ)
    assert zh.intent.mode == "as_of"
    assert zh.as_of == datetime(2024, 8, 31, 15, 59, 59, 999999, tzinfo=UTC)
    top = zh.hits.slice(0, 1).to_pylist()[0]
    assert top["stem_id"] == "APPROVAL-ZH" and top["version"] == "v1.1.0" and "100万元" in top["content"]
    assert top["citation"] == "依据《审批权限表》v1.1.0（2024-05-01 起施行）"
    en = eng.query("Which approval authority matrix was in force when the purchase contract was signed "
                   "in August 2024?", now=NOW, tz=TZ)
    assert en.intent.mode == "as_of"
    top = en.hits.slice(0, 1).to_pylist()[0]
    assert top["stem_id"] == "APPROVAL-EN" and top["version"] == "v1.1.0"
    assert top["citation"] == "per Approval Authority Matrix v1.1.0, effective 2024-05-01"
    # as_of mode: every hit was in force at the anchor
    for r in zh.hits.to_pylist() + en.hits.to_pylist():
        assert r["valid_from"] <= zh.as_of and (r["valid_to"] is None or zh.as_of < r["valid_to"])


def test_arbitrate_false_shows_all_versions(corpus):
    eng, _, _ = corpus
    q = "当前有效的审批权限表"
    one = eng.query(q, k=20, now=NOW, tz=TZ)
    every = eng.query(q, k=20, now=NOW, tz=TZ, arbitrate=False)
    versions = lambda res, stem: sorted(r["version"] for r in res.hits.to_pylist() if r["stem_id"] == stem)
    assert versions(one, "APPROVAL-ZH") == ["v2.0.0"]
    assert versions(every, "APPROVAL-ZH") == ["v1.0.0", "v1.1.0", "v2.0.0"]
    top = every.hits.slice(0, 1).to_pylist()[0]
    assert top["version"] == "v2.0.0"          # superseded versions are shown, penalised
    en = eng.query("director hotel cap", k=20, now=NOW, tz=TZ, arbitrate=False)
    assert versions(en, "TRAVEL-EN") == ["v1.0.0", "v2.0.0"]
    assert versions(en, "SOP-EN") == []        # retracted: unknown to the store as of now


def test_retracted_sop_visible_only_before_retraction(corpus):
    eng, sop_ids, known_before = corpus
    q = "产线开机前要走什么审批？"
    assert not set(eng.query(q, k=8, now=NOW, tz=TZ).hits.column("id").to_pylist()) & set(sop_ids)
    before = eng.query(q, k=8, now=NOW, tz=TZ, known_at=known_before)
    assert before.hits.column("stem_id").to_pylist()[0] == "SOP-ZH"
    assert len(eng.history("SOP-ZH")) == 1    # nothing deleted


def test_window_question(corpus):
    eng, _, _ = corpus
    res = eng.query("2024年3月的审批权限表", now=NOW, tz=TZ)
    assert res.intent.mode == "window"
    assert res.window == (datetime(2024, 2, 29, 16, tzinfo=UTC), datetime(2024, 3, 31, 16, tzinfo=UTC))
    assert res.as_of == res.window[1]
    top = res.hits.slice(0, 1).to_pylist()[0]
    assert top["stem_id"] == "APPROVAL-ZH" and top["version"] == "v1.0.0"
    # open start: from the beginning of time; only the first table was in force before 2024
    before = eng.query("approval authority matrix before 2024", now=NOW, tz=TZ)
    assert before.window[0].year == 1 and before.as_of == before.window[1]
    top = before.hits.slice(0, 1).to_pylist()[0]
    assert (top["stem_id"], top["version"]) == ("APPROVAL-EN", "v1.0.0")
    # open end: the window stays open and decay is anchored at now
    after = eng.query("approval authority matrix after 2024", now=NOW, tz=TZ)
    assert after.window[1].year == 9999 and after.as_of == NOW_DT
    top = after.hits.slice(0, 1).to_pylist()[0]
    assert (top["stem_id"], top["version"]) == ("APPROVAL-EN", "v2.0.0")


def test_language_and_embedder_choices(corpus):
    eng, _, _ = corpus
    res = eng.query("director hotel cap", now=NOW, tz=TZ, lang="zh")
    assert res.citations[0] == "依据《Travel Expense Policy》v2.0.0（2026-03-01 起施行）"
    calls = []
    res = eng.query("总监住宿", now=NOW, tz=TZ, embed=lambda s: calls.append(s) or embed(s))
    assert calls == ["总监住宿"] and res.lang == "zh"
    # a query that is only time words is embedded whole
    calls.clear()
    eng.query("最新", now=NOW, tz=TZ, embed=lambda s: calls.append(s) or embed(s))
    assert calls == ["最新"]
    utc = eng.query("总监出差住宿报销上限", now=NOW)   # tz None: UTC days
    assert utc.citations[0] == "依据《差旅报销管理制度》v2.0.0（2026-02-28 起施行）"


def test_query_errors(corpus):
    eng, _, _ = corpus
    bare = ce.Engine(dim=DIM)
    bare.ingest([row("X", "v1", "x", "x", "2024-01-01")])
    with pytest.raises(QueryError, match="embedder"):
        bare.query("anything")
    with pytest.raises(QueryError, match="shape"):
        eng.query("anything", embed=lambda s: np.ones(3))
    with pytest.raises(QueryError, match="not a vector"):
        eng.query("anything", embed=lambda s: "nope")
    with pytest.raises(QueryError, match="intent"):
        eng.query("anything", mode="all")
    with pytest.raises(QueryError, match="unknown option"):
        eng.query("anything", colour="red")
    with pytest.raises(QueryError):
        eng.query("   ")
    with pytest.raises(QueryError):
        eng.query("anything", lang="fr")
    with pytest.raises(QueryError):
        eng.query("anything", embed=42)
    with pytest.raises(ce.errors.TimeParseError):
        eng.query("anything", now="not a time")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_citations_of_few_rows_equal_the_arrow_path(lang):
    """A search's few hits take a Python path (search._FEW); it must give the strings the
    vectorised Arrow path gives."""
    from chrono_engine.search.results import _FEW, citations
    titles = ["Travel Policy", None, "差旅报销管理制度", "", "a\u0301 title"]
    versions = ["2.0", None, "v1.2.3", "3", "1.0.0.7"]
    vf = np.array([0, 1_700_000_000_000_000, -86_400_000_001, 253_402_300_799_000_000, 42], np.int64)
    few = citations(titles, versions, vf, lang).to_pylist()
    reps = _FEW // len(titles) + 1
    many = citations(titles * reps, versions * reps, np.tile(vf, reps), lang).to_pylist()
    assert len(titles) * reps > _FEW
    assert many[:len(titles)] == few
