#!/usr/bin/env python3
"""How ``parse_time`` does on Microsoft Recognizers-Text's DateTime specs, per language.

Prints the totals (cases, skipped by reason, applicable, passed, pass rate — also the
strict rate, without the conventions of ``tests/recognizers.py``, and how many results
each convention let pass), then the failing cases grouped three ways: by the spec's type
of the first failing result, by a rough pattern of its text (weekday phrases, time of day,
holidays, durations, relative N units, ranges, bounds, ...) and by outcome (negative case
matched something, no expression found, expression split or truncated, wrong interval),
each group with its count and three examples. Usage::

    python scripts/recognizers_report.py                 # the report
    python scripts/recognizers_report.py --write-known-failures   # also rewrite the list
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import recognizers as R  # noqa: E402

WEEKDAYS = r"mon(day)?|tue(s(day)?)?|wed(nesday)?|thu(rs(day)?)?|fri(day)?|sat(urday)?|sun(day)?"
NUM_EN = (r"\d+(\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
          r"thirteen|fifteen|twenty|thirty|forty|fifty|few|couple|several|some")
UNIT_EN = (r"sec(ond)?s?|min(ute)?s?|h(ou)?rs?|h|days?|nights?|weeks?|weekends?|fortnights?|"
           r"months?|quarters?|years?")
REL_EN = r"next|last|past|previous|coming|upcoming|following"
NUM_ZH = r"\d+|[一二两三四五六七八九十百几半]+"
UNIT_ZH = r"秒|分钟|分鐘|小时|小時|钟头|天|日|周|週|星期|礼拜|月|年"
BOUNDS = "bounds (before / after / since / until)"
PARTS = "unit phrases (week of X, Nth week, the year, weekend, early / late X, decades)"

# (name, English pattern, Chinese pattern); the first that matches the result's text wins
PATTERNS = [
    ("holidays",
     r"christmas|easter|independence|thanksgiving|new year|patrick|black friday|earth day|"
     r"workers|juneteenth|freedom day|jubilee|valentine|halloween|mother'?s|father'?s|"
     r"memorial|labou?r day|martin luther|columbus|veteran|boxing|\beve\b|yuandan|eid\b",
     r"节|元旦|除夕|春节|国庆|中秋|端午|清明|大年|腊八|元宵|重阳|七夕"),
    ("era names / lunar dates", None, r"康熙|雍正|乾隆|民国|神龙|光绪|农历|正月|初[一二三四五六七八九十]"),
    (PARTS,
     r"\b(first|second|third|fourth|last|\d+(st|nd|rd|th))\s+(\S+\s+)?(days?|weeks?|months?|"
     r"quarters?|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\s+(of|in)\b|"
     r"\bweek (of|\d+)\b|\bmonth of\b",
     r"的(第|前|最後|最后)|第.{1,3}(周|個?个?月|天)|[年月]?(前|后|上|下)半|上个半年|最后一个星期"),
    ("relative N units",
     rf"\b({NUM_EN})\s+({UNIT_EN})\b.*\b(ago|later|from|before|after|hence)\b|"
     rf"\b(in|within|{REL_EN})\s+({NUM_EN})\s+(({NUM_EN})\s+)?(business\s+)?({UNIT_EN})\b|"
     rf"\b({REL_EN})\s+(hour|minute|quarter|fortnight)\b|"
     rf"\b({NUM_EN})\s+({REL_EN})\s+({UNIT_EN})\b|\b({UNIT_EN}) (ago|later|from now)\b|"
     rf"fortnight|\bwithin \d+\s*h\b",
     rf"({NUM_ZH})\s*个?\s*({UNIT_ZH})\s*(前|后|後|之前|之后|以前|以后|内)|"
     rf"(过去|未来|最近|近|前|后|後|之前|之后|上个|还剩)\s*({NUM_ZH})?\s*个?\s*({UNIT_ZH})"),
    ("time of day",
     r"\d\s*(:\d\d|a\.?m\b|p\.?m\b|o'?clock|ish)|\b(am|pm|a m|p m|noon|midnight|morning|"
     r"afternoon|evening|night|tonight|tonite|eod|end of (the )?day|dinner|lunch)\b|"
     r"half past|past (\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)|"
     r"noon|lunch|daytime|mornings|p \. m|\b\d+\s*p\b|ampm|^\d+$",
     r"\d:\d|点|早上|早间|早|上午|中午|下午|晚上|晚|凌晨|夜|时\d|分\d|秒"),
    # Chinese bounds first: 截止到, and the hyphens of ISO dates in 2012-01-01及以前
    (BOUNDS, None, r"之前|以前|之后|以后|以来|截至|截止|开始|起|自从|及以前|及以后|或之前|或之后"),
    ("ranges",
     r"\b(to|through|thru|till|until|between)\b|\d\s*[-–~]\s*\d|[a-z]\s*-\s*[a-z0-9]",
     r"到|至|[-–~—]|间"),
    (BOUNDS,
     r"\b(before|after|since|until|till|later than|earlier than|no later|as early as|"
     r"as late as|starting|beginning|greater|or later|and later|and after|to date|by)\b|[<>]",
     None),
    (PARTS,
     r"\b(early|earlier|late|later|mid|middle|end|beginning|start|rest|remaining)\b.*\b("
     r"day|week|month|year)|\bweekend\b|\bworkweek|working week|calendar year|cy\d|"
     r"\bthe (day|week|month|year)\b|century|\d0 ?s\b|\beoy\b",
     r"最後|最后|世纪|年代|周末|週末"),
    ("weekday phrases", rf"\b({WEEKDAYS})\b", r"周[一二三四五六日天]|星期|礼拜|禮拜|週"),
    ("numeric date formats", r"\d+\s*[/.\-]\s*\d+|\d{4} \d\d \d\d", r"\d+\s*[/.\-]\s*\d+"),
    ("month, day and year names",
     r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*(\d|\b)|\d+(st|nd|rd|th)|"
     r"\b(today|tomorrow|yesterday|now)\b|\b(thousand|nineteen)\b",
     r"月|日|号|年|今天|明天|昨天"),
]


def pattern_of(lang: str, text: str, rtype: str) -> str:
    if rtype.endswith("duration"):
        return "durations"
    low = text.lower()
    for name, en, zh in PATTERNS:
        pat = en if lang == "en" else zh
        if pat and re.search(pat, low):
            return name
    return "other"


def outcome_of(v, r) -> str:
    if v.negative:
        return "negative case matched something"
    if not r.got:
        return "no expression found"
    b, e = r.span
    best = 0.0
    for g in r.got_spans:
        best = max(best, (min(e, g[1]) - max(b, g[0])) / (e - b))
    return "expression split or truncated" if best < 0.8 else "wrong interval"


def first_failure(v):
    for r in v.results:
        if not r.dropped and not r.passed:
            return r
    return None


def example(v, r) -> str:
    if v.negative:
        return f"      {v.input[:90]!r}\n        expected: nothing   got: {v.found}"
    got = r.got or "nothing overlapping"
    return (f"      {v.input[:90]!r}  [{r.text!r}, {r.type}]\n"
            f"        expected: {' | '.join(r.expected[:2])}"
            f"{' | ...' if len(r.expected) > 2 else ''}\n        got: {got}")


def group(title: str, rows: list, key) -> None:
    groups = defaultdict(list)
    for v, r in rows:
        groups[key(v, r)].append((v, r))
    print(f"  Failures by {title}:")
    for name, items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"    {name}: {len(items)}")
        for v, r in items[:3]:
            print(example(v, r))
    print()


def report(lang: str) -> list:
    verdicts = R.judge_all(lang)
    status = Counter(v.status for v in verdicts)
    skipped = Counter(v.reason for v in verdicts if v.status == "skip")
    applicable = status["pass"] + status["fail"]
    strict = sum(1 for v in verdicts if v.status == "pass" and v.strict)
    conventions = Counter(r.convention for v in verdicts if v.status != "skip"
                          for r in v.results if r.convention)
    dropped = Counter(r.dropped for v in verdicts if v.status != "skip"
                      for r in v.results if r.dropped)
    negative = [v for v in verdicts if v.status != "skip" and v.negative]
    name = {"en": "English", "zh": "Chinese"}[lang]
    print(f"== {name} ({lang}) " + "=" * 60)
    print(f"  cases: {len(verdicts)}")
    print(f"  skipped: {sum(skipped.values())}")
    for reason, n in skipped.most_common():
        print(f"    {reason}: {n}")
    print(f"  applicable: {applicable} ({len(negative)} negative cases, "
          f"{sum(1 for v in negative if v.status == 'pass')} of them pass)")
    if dropped:
        print("  results not judged inside applicable cases: "
              + ", ".join(f"{k}: {n}" for k, n in dropped.most_common()))
    print(f"  passed: {status['pass']} / {applicable} = {status['pass'] / applicable:.1%}")
    print(f"  passed strictly (no convention): {strict} / {applicable} = "
          f"{strict / applicable:.1%}")
    print("  results passed through a convention: "
          + (", ".join(f"{k}: {n}" for k, n in conventions.most_common()) or "none"))
    print(f"  failed: {status['fail']}")
    print()
    rows = [(v, first_failure(v)) for v in verdicts if v.status == "fail"]
    group("outcome", rows, outcome_of)
    group("pattern of the first failing expression", rows,
          lambda v, r: "negative case matched something" if v.negative
          else pattern_of(lang, r.text, r.type))
    group("spec type of the first failing expression", rows,
          lambda v, r: "(negative case)" if v.negative else r.type)
    return verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-known-failures", action="store_true",
                    help=f"rewrite {R.KNOWN_FAILURES.relative_to(ROOT)} from today's results")
    args = ap.parse_args()
    failing = []
    totals = []
    for lang in R.LANGS:
        verdicts = report(lang)
        failing += [v.id for v in verdicts if v.status == "fail"]
        n = sum(1 for v in verdicts if v.status != "skip")
        p = sum(1 for v in verdicts if v.status == "pass")
        totals.append(f"{lang} {p}/{n} = {p / n:.1%}")
    print("Summary: " + "; ".join(totals) + " (target: >= 90% per language)")
    if args.write_known_failures:
        head = ("# Recognizers-Text spec cases that parse_time fails today (one id a line).\n"
                "# tests/test_recognizers.py marks them xfail(strict=True): remove an id when\n"
                "# its case passes. Regenerate: python scripts/recognizers_report.py "
                "--write-known-failures\n")
        R.KNOWN_FAILURES.write_text(head + "".join(f"{i}\n" for i in sorted(failing)),
                                    encoding="utf-8")
        print(f"wrote {len(failing)} ids to {R.KNOWN_FAILURES.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
