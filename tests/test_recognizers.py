"""Ratchet of ``parse_time`` against Microsoft Recognizers-Text's DateTime specs.

Every applicable spec case (``tests/data/recognizers``; the judging rules are in
``tests/recognizers.py``) is one test, ``en-0042`` being case 42 of the English spec file.
Cases that fail today are listed in ``tests/data/recognizers/known_failures.txt`` and
marked ``xfail(strict=True)``: a grammar change that fixes one makes its test XPASS, which
fails the run until the id is removed from the list; one that breaks a passing case fails
its test. ``python scripts/recognizers_report.py`` prints the rates and the failures by
category; ``--write-known-failures`` rewrites the list from today's results.
"""
from __future__ import annotations

from collections import Counter

import pytest

from recognizers import (
    LANGS,
    judge,
    known_failures,
    load,
    skip_reason,
)

CASES = {lang: load(lang) for lang in LANGS}
KNOWN = known_failures()

# What the extraction and the skip rules give (a changed extraction or rule shows here).
EXPECTED_COUNTS = {
    "en": {"total": 985, "applicable": 910, "negative": 64,
           "skipped": {"recurrence (datetimeV2.set)": 41,
                       "unsupported on every platform": 15,
                       "spec value 'not resolved'": 14,
                       "reference undefined (Mod ref_undef)": 4,
                       "no reference time": 1}},
    "zh": {"total": 264, "applicable": 247, "negative": 6,
           "skipped": {"recurrence (datetimeV2.set)": 8,
                       "lunar calendar date": 5,
                       "spec value 'not resolved'": 4}},
}


def _params():
    out = []
    for lang in LANGS:
        for case in CASES[lang]:
            if skip_reason(case) is not None:
                continue
            marks = ()
            if case.id in KNOWN:
                marks = (pytest.mark.xfail(strict=True,
                                           reason="listed in known_failures.txt"),)
            out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def _explain(v) -> str:
    if v.negative:
        return f"{v.input!r}: the spec finds no time expression; parse_time found {v.found}"
    lines = [f"{v.input!r}:"]
    for r in v.results:
        if r.dropped:
            lines.append(f"  {r.text!r} not judged ({r.dropped})")
        elif not r.passed:
            lines.append(f"  {r.text!r} [{r.type}] expected one of {r.expected}; "
                         f"overlapping: {r.got or 'none'}")
    return "\n".join(lines)


@pytest.mark.parametrize("case", _params())
def test_spec_case(case):
    v = judge(case)
    assert v.status == "pass", _explain(v)


def test_counts_and_skip_reasons():
    for lang in LANGS:
        cases = CASES[lang]
        reasons = Counter(r for r in map(skip_reason, cases) if r is not None)
        applicable = [c for c in cases if skip_reason(c) is None]
        got = {"total": len(cases), "applicable": len(applicable),
               "negative": sum(1 for c in applicable if not c.results),
               "skipped": dict(reasons)}
        print(lang, got)
        assert got == EXPECTED_COUNTS[lang]
        assert len(cases) == len(applicable) + sum(reasons.values())


def test_pass_rates_meet_the_goal():
    """The goal: 90% of the applicable cases in each language. test_spec_case keeps
    the failures exactly the known ones (strict xfail), so the rate is fixed by the list."""
    for lang in LANGS:
        applicable = {c.id for c in CASES[lang] if skip_reason(c) is None}
        failing = KNOWN & applicable
        assert (len(applicable) - len(failing)) / len(applicable) >= 0.90, (lang, len(failing), len(applicable))


def test_known_failures_name_applicable_cases():
    applicable = {c.id for lang in LANGS for c in CASES[lang] if skip_reason(c) is None}
    stray = sorted(KNOWN - applicable)
    assert not stray, f"known_failures.txt names cases that are not judged: {stray}"


def test_ids_are_unique_and_ordered():
    for lang in LANGS:
        ids = [c.id for c in CASES[lang]]
        assert ids == [f"{lang}-{i:04d}" for i in range(len(ids))]
