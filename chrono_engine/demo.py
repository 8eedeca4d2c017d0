"""The built-in bilingual demo: versioned enterprise knowledge, generated here (no downloads).

The corpus tells the enterprise article's story in Chinese and English:

- a travel-expense policy, 2023 -> 2026 (director hotel cap 600 -> 800 yuan per night);
- a procurement approval-authority table revised twice (2023, 2024, 2025);
- a maintenance SOP published in error and retracted;
- a price list updated every quarter (2025-Q1 .. 2026-Q2);
- stable technical reference documents (bolt torques, a unit conversion) that must not be
  decayed away.

Each document belongs to a sensitivity class with its own decay (policy documents slowly,
prices fast, reference documents not at all). Text is embedded by :func:`embed`, a
deterministic hashed bag of words (latin words, CJK character uni- and bigrams): it needs no
model download and is good enough to show the temporal logic; set ``engine.embedder`` to a
real sentence encoder for real text.

``chrono demo`` (:func:`run`) walks through the latest answer with its citation, the
August 2024 audit answer, what a plain similarity search returns instead, the decay curves
per class and an STL check of a short reasoning chain with its re-acquisition trigger.
"""
from __future__ import annotations

import re
import zlib
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from .errors import ConfigError

DIM = 256
NOW = "2026-05-01T10:00:00"
TZ = "Asia/Shanghai"
GAMMA = 0.5
_UTC = timezone.utc

#: Sensitivity classes: half-life in days (None: no decay).
CLASSES = {"policy": 3 * 365.25, "procedure": 365.25, "price": 90.0, "reference": None}


def embed(text: str) -> np.ndarray:
    """Hashed bag of words (DIM dims, unit norm): lower-cased latin words and CJK
    character uni- and bigrams, each hashed (CRC-32) to one dimension."""
    v = np.zeros(DIM, np.float32)
    toks = re.findall(r"[a-z0-9]+", text.lower())
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        toks += list(run) + [run[i:i + 2] for i in range(len(run) - 1)]
    for t in toks:
        v[zlib.crc32(t.encode()) % DIM] += 1.0
    n = float(np.linalg.norm(v))
    return v / n if n else np.full(DIM, 1.0 / np.sqrt(DIM), np.float32)


def decay_policy():
    """One decay profile per sensitivity class."""
    import chrono_engine as ce
    profiles = {name: (ce.NoDecay() if hl is None else ce.Exponential(half_life=hl))
                for name, hl in CLASSES.items()}
    return ce.DecayPolicy(profiles, default=None)


def _doc(stem, version, title, content, valid_from, fact_type, **extra):
    return {"vector": embed(content), "stem_id": stem, "version": version, "title": title,
            "content": content, "valid_from": valid_from, "fact_type": fact_type, **extra}


# The first travel policy is phrased like the questions people ask; the 2026 revision is
# worded a little differently, as revisions often are, so similarity alone prefers the
# stale one.
TRAVEL_V1_ZH = "差旅报销管理制度（2023版）：总监出差住宿报销上限为每天600元，经理每天450元，凭发票报销。"
TRAVEL_V2_ZH = "差旅报销管理制度（2026版）：总监出差住宿标准调整为每晚800元。"
TRAVEL_V1_EN = "Travel Expense Policy 2023: the director's hotel cap is 600 yuan per night; managers 450 yuan."
TRAVEL_V2_EN = "Travel policy 2026 revision: the hotel cap for directors is now 800 yuan a night."
APPROVAL_ZH = "审批权限表：采购合同金额{amt}万元以下由部门总监审批，以上由副总裁审批。"
# the same amounts as the Chinese text's 万元 (ten thousand yuan): 50万 = 500,000 yuan
APPROVAL_EN = ("Approval authority matrix: purchase contracts below {yuan} yuan are approved "
               "by the department director, above by a vice president.")
PRICE_ZH = "产品价格表（{q}）：A型水泵单价{p}元。"
PRICE_EN = "Price list {q}: model A pump unit price {p} yuan."
QUARTERS = [("2025-Q1", "2025-01-01", 1200), ("2025-Q2", "2025-04-01", 1250),
            ("2025-Q3", "2025-07-01", 1180), ("2025-Q4", "2025-10-01", 1300),
            ("2026-Q1", "2026-01-01", 1320), ("2026-Q2", "2026-04-01", 1290)]


def build_engine():
    """The demo store, built through the public lifecycle API (ingest, supersede, retract).

    Returns ``(engine, facts)`` where ``facts`` maps a few names to item ids."""
    import chrono_engine as ce
    eng = ce.Engine(dim=DIM, decay=decay_policy(), threads=1)
    eng.embedder = embed
    sh = "T00:00:00+08:00"
    ids = eng.ingest([
        _doc("TRAVEL-ZH", "v1.0.0", "差旅报销管理制度", TRAVEL_V1_ZH, "2023-01-01" + sh, "policy"),
        _doc("TRAVEL-EN", "v1.0.0", "Travel Expense Policy", TRAVEL_V1_EN, "2023-01-01" + sh, "policy"),
        _doc("APPROVAL-ZH", "v1.0.0", "审批权限表", APPROVAL_ZH.format(amt=50), "2023-06-01" + sh, "policy"),
        _doc("APPROVAL-EN", "v1.0.0", "Approval Authority Matrix", APPROVAL_EN.format(yuan=f"{50 * 10_000:,}"),
             "2023-06-01" + sh, "policy"),
        _doc("SOP-ZH", "v1.0.0", "设备检修安全操作规程",
             "设备检修前须断电挂牌，检修完成后由班组长签字确认方可复电。", "2024-02-01" + sh, "procedure"),
        _doc("SOP-EN", "v1.0.0", "Maintenance Safety SOP",
             "Before maintenance, lock out and tag out the machine; the shift leader signs off "
             "before power is restored.", "2024-02-01" + sh, "procedure"),
        _doc("TORQUE", "v1.0.0", "Bolt torque reference / 螺栓扭矩参考",
             "Bolt torque reference: M8 grade 8.8 bolts 25 N·m, M10 49 N·m. 螺栓扭矩：M8 为 25 牛·米。",
             "2012-03-01" + sh, "reference"),
        _doc("UNITS", "v1.0.0", "Unit conversion / 单位换算",
             "Unit conversion: 1 bar = 100 kPa = 14.5 psi. 单位换算：1 巴等于 100 千帕。",
             "2010-01-01" + sh, "reference"),
        _doc("PRICE-ZH", "v1.0.0", "产品价格表", PRICE_ZH.format(q=QUARTERS[0][0], p=QUARTERS[0][2]),
             QUARTERS[0][1] + sh, "price"),
        _doc("PRICE-EN", "v1.0.0", "Price list", PRICE_EN.format(q=QUARTERS[0][0], p=QUARTERS[0][2]),
             QUARTERS[0][1] + sh, "price"),
    ])
    facts = {"torque": int(ids[6])}
    for i, (q, start, p) in enumerate(QUARTERS[1:], start=2):
        for stem, tmpl, title in (("PRICE-ZH", PRICE_ZH, "产品价格表"), ("PRICE-EN", PRICE_EN, "Price list")):
            new = eng.supersede(stem, [{"vector": embed(tmpl.format(q=q, p=p)), "title": title,
                                        "content": tmpl.format(q=q, p=p), "fact_type": "price"}],
                                start + sh, version=f"v{i}.0.0")
            facts[f"{stem}:{q}"] = int(np.asarray(new)[0])
    for stem, text, title in (("TRAVEL-ZH", TRAVEL_V2_ZH, "差旅报销管理制度"),
                              ("TRAVEL-EN", TRAVEL_V2_EN, "Travel Expense Policy")):
        new = eng.supersede(stem, [{"vector": embed(text), "title": title, "content": text,
                                    "fact_type": "policy"}], "2026-03-01" + sh, version="v2.0.0")
        facts[stem] = int(np.asarray(new)[0])
    for ver, amt, eff in (("v1.1.0", 100, "2024-05-01"), ("v2.0.0", 200, "2025-07-01")):
        eng.supersede("APPROVAL-ZH", [{"vector": embed(APPROVAL_ZH.format(amt=amt)), "title": "审批权限表",
                                       "content": APPROVAL_ZH.format(amt=amt), "fact_type": "policy"}],
                      eff + sh, version=ver)
        eng.supersede("APPROVAL-EN", [{"vector": embed(APPROVAL_EN.format(yuan=f"{amt * 10_000:,}")),
                                       "title": "Approval Authority Matrix",
                                       "content": APPROVAL_EN.format(yuan=f"{amt * 10_000:,}"), "fact_type": "policy"}],
                      eff + sh, version=ver)
    sop = eng.history("SOP-ZH").column("id").to_pylist() + eng.history("SOP-EN").column("id").to_pylist()
    eng.retract(sop)  # the SOP was published in error and withdrawn
    facts["sop"] = sop
    return eng, facts


def _status(row: dict, now: datetime) -> tuple[str, str]:
    """(en, zh) status of a stored item at ``now``."""
    if row.get("retracted_at") is not None:
        return "retracted", "已撤回"
    vt = row.get("valid_to")
    if row["valid_from"] <= now and (vt is None or now < vt):
        return "in force", "现行有效"
    return ("superseded", "已被取代") if vt is not None and vt <= now else ("not yet in force", "尚未生效")


def _short(text: str, n: int = 58) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def run(lang: str = "both", out: Callable[[str], Any] = print) -> dict:
    """Walk through the demo, printing with ``out``; returns the facts shown (for --json)."""
    import chrono_engine as ce

    if lang not in ("both", "en", "zh"):
        raise ConfigError(f"lang must be 'both', 'en' or 'zh', got {lang!r}")
    zh, en = lang in ("both", "zh"), lang in ("both", "en")
    eng, facts = build_engine()
    now = datetime(2026, 5, 1, 2, 0, tzinfo=_UTC)  # NOW in Asia/Shanghai
    report: dict = {"now": NOW, "tz": TZ}

    def head(title_en: str, title_zh: str) -> None:
        out("")
        out("== " + " / ".join(t for t, on in ((title_en, en), (title_zh, zh)) if on))

    def ask(question: str) -> dict:
        res = eng.query(question, k=3, now=NOW, tz=TZ)
        top = res.hits.slice(0, 1).to_pylist()[0]
        out(f"Q: {question}")
        out(f"A: {top['content']}")
        out(f"   {top['citation']}")
        return {"question": question, "mode": res.intent.mode, "id": top["id"],
                "version": top["version"], "content": top["content"], "citation": top["citation"]}

    head(f"1. The latest answer, with its citation (now = {NOW}, {TZ})",
         "1. 最新答案及出处（当前时间 2026-05-01，上海）")
    qs = ([("现在总监出差住宿报销上限是多少？")] if zh else []) + \
        ([("What is the director's hotel cap now?")] if en else [])
    report["latest"] = [ask(q) for q in qs]

    head("2. The audit question: which rules applied in August 2024?",
         "2. 审计提问：2024 年 8 月适用的是哪一版？")
    qs = (["2024 年 8 月签订该采购合同时，当时生效的审批权限表是哪一份？"] if zh else []) + \
        (["Which approval authority matrix was in force when the contract was signed in August 2024?"]
         if en else [])
    report["audit"] = [ask(q) for q in qs]

    head("3. What a plain similarity search returns instead (cosine only, every stored version)",
         "3. 纯相似度检索会返回什么（只看余弦相似度，所有版本）")
    vectors = eng.vectors()
    ids = eng.columns()["id"]
    plain = []
    for q in (["现在总监出差住宿报销上限是多少？"] if zh else []) + \
            (["What is the director's hotel cap now?"] if en else []):
        sims = vectors @ embed(q)
        top = np.argsort(-sims, kind="stable")[:3]
        out(f"Q: {q}")
        for rank, r in enumerate(top, 1):
            item = eng.get([ids[r]]).to_pylist()[0]
            st_en, st_zh = _status(item, now)
            status = " / ".join(s for s, on in ((st_en, en), (st_zh, zh)) if on)
            out(f"  {rank}. cos={sims[r]:.3f}  {item['stem_id']} {item['version']} [{status}]  "
                f"{_short(item['content'])}")
            plain.append({"question": q, "rank": rank, "id": item["id"], "version": item["version"],
                          "status": st_en, "similarity": float(sims[r])})
        out("  " + " / ".join(t for t, on in (
            ("the engine answers with the version in force (section 1)", en),
            ("引擎给出的是现行有效版本（见第 1 节）", zh)) if on))
    report["plain_similarity"] = plain

    head("4. Decay per sensitivity class: D(age)", "4. 各敏感度类别的衰减 D(age)")
    ages = [0, 30, 90, 365, 3 * 365, 10 * 365]
    pol = decay_policy()
    out("  class        half-life  " + "".join(f"{a:>8}d" for a in ages))
    curves = {}
    for name, hl in CLASSES.items():
        d = pol.evaluate(np.asarray(ages, float), np.full(len(ages), name, dtype=object))
        curves[name] = [float(x) for x in d]
        hl_txt = "none" if hl is None else f"{hl:.0f} d"
        out(f"  {name:<12} {hl_txt:>9}  " + "".join(f"{x:9.3f}" for x in d))
    report["decay"] = {"ages_days": ages, "curves": curves}

    head(f"5. STL check of a reasoning chain (G(v >= {GAMMA}) over its steps)",
         f"5. 推理链的 STL 检验（每一步 v ≥ {GAMMA}）")
    stale_price = facts["PRICE-EN:2025-Q2"] if en else facts["PRICE-ZH:2025-Q2"]
    travel = facts["TRAVEL-EN"] if en else facts["TRAVEL-ZH"]
    chain = [[travel], [stale_price], [facts["torque"]]]
    labels = {travel: "travel policy v2.0.0 / 差旅制度 v2.0.0",
              stale_price: "price list 2025-Q2 / 价格表 2025-Q2",
              facts["torque"]: "bolt torque reference / 螺栓扭矩参考"}
    t = ce.verify_chains([chain], (eng, NOW), GAMMA).to_pylist()[0]
    v = eng.validity(NOW, [travel, stale_price, facts["torque"]])
    for i, (fid, vi) in enumerate(zip([travel, stale_price, facts["torque"]], v)):
        out(f"  step {i}: {labels[fid]:<42} V = {vi:.3f}")
    out(f"  robustness ρ = {t['robustness']:+.3f}; weakest step {t['weakest_step']}; "
        f"confidence bound ≤ {t['bound']:.3f}")
    if t["trigger"]:
        names = ", ".join(labels.get(f, str(f)) for f in t["targets"])
        out("  " + " / ".join(s for s, on in ((f"re-acquire: {names}", en), ("触发重新获取", zh)) if on))
        latest = eng.query("model A pump unit price" if en else "A型水泵单价", k=1, now=NOW, tz=TZ)
        top = latest.hits.slice(0, 1).to_pylist()[0]
        out(f"  -> {top['content']}  ({top['citation']})")
    report["stl"] = {"chain": chain, "robustness": t["robustness"], "weakest_step": t["weakest_step"],
                     "bound": t["bound"], "trigger": t["trigger"], "targets": t["targets"],
                     "validity": [float(x) for x in v]}
    return report
