"""The built-in bilingual demo (chrono demo): its answers, checked against what the corpus says."""
import json
import math

import numpy as np
import pytest

from chrono_engine import cli, demo


@pytest.fixture(scope="module")
def report():
    lines = []
    rep = demo.run(lang="both", out=lines.append)
    rep["_lines"] = lines
    return rep


def test_latest_answers_cite_the_version_in_force(report):
    assert [r["version"] for r in report["latest"]] == ["v2.0.0", "v2.0.0"]
    assert all("800" in r["content"] and r["mode"] == "latest" for r in report["latest"])
    assert report["latest"][0]["citation"] == "依据《差旅报销管理制度》v2.0.0（2026-03-01 起施行）"
    assert report["latest"][1]["citation"] == "per Travel Expense Policy v2.0.0, effective 2026-03-01"


def test_audit_answers_cite_the_table_in_force_in_august_2024(report):
    assert [(r["mode"], r["version"]) for r in report["audit"]] == [("as_of", "v1.1.0")] * 2
    assert "100万元" in report["audit"][0]["content"]


def test_plain_similarity_prefers_the_stale_version(report):
    """Cosine alone ranks the superseded 2023 policy first (the engine does not)."""
    firsts = [p for p in report["plain_similarity"] if p["rank"] == 1]
    assert [(p["version"], p["status"]) for p in firsts] == [("v1.0.0", "superseded")] * 2
    eng, _ = demo.build_engine()
    vecs = eng.vectors()
    q = demo.embed("What is the director's hotel cap now?")
    sims = vecs @ q
    assert firsts[1]["id"] == int(eng.columns()["id"][int(np.argmax(sims))])


def test_decay_curves_match_closed_form(report):
    ages = np.asarray(report["decay"]["ages_days"], float)
    for name, hl in demo.CLASSES.items():
        want = np.ones_like(ages) if hl is None else np.exp(-math.log(2) * ages / hl)
        np.testing.assert_allclose(report["decay"]["curves"][name], want, rtol=1e-12, atol=1e-15)


def test_stl_chain_triggers_on_the_stale_price(report):
    stl = report["stl"]
    v = np.asarray(stl["validity"])
    assert stl["robustness"] == pytest.approx(v.min() - demo.GAMMA, abs=1e-12)
    assert stl["weakest_step"] == 1 and stl["trigger"] is True
    assert stl["targets"] == [stl["chain"][1][0]]          # the 2025-Q2 price list
    assert v[2] == 1.0                                     # reference documents do not decay
    eng, facts = demo.build_engine()
    row = eng.history("PRICE-EN").to_pylist()
    q2 = next(r for r in row if r["id"] == facts["PRICE-EN:2025-Q2"])
    assert q2["valid_to"] is not None                        # it was superseded


def test_output_names_both_languages(report):
    text = "\n".join(report["_lines"])
    for s in ("最新答案", "The latest answer", "re-acquire", "触发重新获取", "已被取代", "superseded"):
        assert s in text


def test_cli_demo_json(tmp_path, capsys):
    path = tmp_path / "demo.json"
    assert cli.main(["demo", "--lang", "zh", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "最新答案" in out and "The latest answer" not in out
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["latest"][0]["version"] == "v2.0.0" and data["stl"]["trigger"] is True
