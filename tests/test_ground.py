"""``ce.ground``: time-scoped facts of a chunk of text.

Examples pin the rules (absolute / document / narrative anchors, open ends, undated text);
property tests check, over generated texts built from a pool of absolute and relative
expressions and filler words, that spans lie in the text, intervals are ordered, absolute
facts do not move with the document date and document-anchored ones move with it exactly
as ``parse_time`` with ``now = doc_date`` places them.
"""
from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

import chrono_engine as ce
from chrono_engine.errors import ArgumentTypeError, TimeParseError

UTC = timezone.utc


def _facts(text, doc_date=None, tz=None):
    return [(f.text, f.start and f.start.replace(tzinfo=None).isoformat()[:10],
             f.end and f.end.replace(tzinfo=None).isoformat()[:10], f.anchor) for f in ce.ground(text, doc_date, tz=tz)]


def test_absolute_expressions_are_kept_as_written():
    assert _facts("In March 2004 and in 1998-2001 he worked there.") == [
        ("March 2004", "2004-03-01", "2004-04-01", "absolute"),
        ("1998-2001", "1998-01-01", "2002-01-01", "absolute")]
    assert _facts("2024年3月7日发布", doc_date="2030-01-01") == [("2024年3月7日", "2024-03-07", "2024-03-08", "absolute")]


def test_relative_expressions_resolve_against_the_document_date():
    assert _facts("上个月销量下降", doc_date="2024-03-15") == [("上个月", "2024-02-01", "2024-03-01", "document")]
    assert _facts("Last year he won; yesterday he retired.", doc_date="2010-05-01") == [
        ("Last year", "2009-01-01", "2010-01-01", "document"),
        ("yesterday", "2010-04-30", "2010-05-01", "document")]


def test_without_a_document_date_anaphoric_expressions_follow_the_narrative():
    assert _facts("He joined Boston in 2009 and left two years later.") == [
        ("2009", "2009-01-01", "2010-01-01", "absolute"),
        ("two years later", "2011-01-01", "2012-01-01", "narrative")]
    # the anchor is the latest absolute expression before it
    assert _facts("Born on 12 May 1950, he died in 2001. The following year a statue was made.")[-1] == (
        "The following year", "2002-01-01", "2003-01-01", "narrative")
    assert _facts("他于2009年加入，两年后离开。")[-1] == ("两年后", "2011-01-01", "2012-01-01", "narrative")
    # a year before 1500 after a preposition of time is a year, and anchors the narrative
    assert _facts("upon his father's death in 1109 . In the next year , he married")[-1] == (
        "the next year", "1110-01-01", "1111-01-01", "narrative")


def test_deictic_or_unanchored_relative_expressions_are_left_out_without_a_document_date():
    assert _facts("Last year he won; today he retired.") == []
    assert _facts("Two years later he left.") == []  # nothing before it to follow
    assert _facts("from now on, prices rise") == []
    assert _facts("from now on, prices rise", doc_date="2020-01-01") == [("from now on", "2020-01-01", None, "document")]


def test_an_end_at_now_is_an_open_end():
    for doc in (None, "2010-05-01", "2003-01-01T00:00:01", "1990-01-01"):
        assert _facts("Since 2003 he has coached the team.", doc) == [("Since 2003", "2003-01-01", None, "absolute")]
    assert _facts("2003年以来一直在此工作", "2010-05-01") == [("2003年以来", "2003-01-01", None, "absolute")]


@pytest.mark.parametrize("text, expr", [("- 2017–present : Gaute Straume Epland ( Ap )", "2017–present"),
                                        ("Kleinfeld ( 2017 - present )", "2017 - present"),
                                        ("He has led it from 2017 to present.", "from 2017 to present"),
                                        ("She sang with them 1999–now.", "1999–now")])
def test_a_range_ending_at_present_is_open_whenever_the_text_was_written(text, expr):
    # without a document date too: the reading's reference instant (2001) lies before 2017
    for doc in (None, "2024-01-01", "2030-06-01"):
        (f,) = _facts(text, doc)
        assert f[0] == expr and f[2] is None and f[3] == "absolute", (doc, f)
    got = ce.parse_time(text, now="2024-01-01")
    assert [(e.text, e.end.year) for e in got] == [(expr, 2024)]
    assert ce.parse_time("the present study of 2017 and a present", now="2024-01-01")[0].text == "2017"


def test_undated_text_and_bad_arguments():
    assert ce.ground("") == [] and ce.ground("no time here at all") == []
    assert ce.ground("a duration of three days") == []  # no position in time
    with pytest.raises(ArgumentTypeError):
        ce.ground(b"2024")
    with pytest.raises(TimeParseError):
        ce.ground("in 2024", doc_date="not a date")
    with pytest.raises(TimeParseError):
        ce.ground("", doc_date="not a date")
    with pytest.raises(TimeParseError):
        ce.ground("in 2024", tz="Nowhere/Atlantis")


def test_results_are_in_the_zone_asked_for():
    (f,) = ce.ground("yesterday", "2024-03-15T02:00", tz="Asia/Shanghai")
    assert f.start.utcoffset() == timedelta(hours=8) and f.start.day == 14


def test_calendar_edges_do_not_raise():
    for doc in ("9999-12-31T23:59:59", "0001-01-01T00:00:00"):
        for text in ("today and tomorrow, since 2003, last year, 24:00", "昨天到明天", "two years later in 9999"):
            for f in ce.ground(text, doc):
                assert f.start is None or f.end is None or f.start < f.end


# -- properties -------------------------------------------------------------------------
ABSOLUTE = ["in 1998", "March 2004", "from 2004 to 2008", "2024年3月7日", "on 12 May 1950", "since 2003",
            "the 1990s", "between 1100 and 1200", "2019-06-30", "Q3 2021", "1066 AD"]
RELATIVE = ["last year", "yesterday", "next month", "two years later", "the following year", "上个月",
            "三天前", "今年", "this week", "three days ago", "the past two years", "明年"]
FILLER = ["he", "joined", "the", "club", ",", ".", "and", "then", "left", "公司", "成立", "of", "team"]
DOC = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1))


@st.composite
def chunks(draw):
    parts = draw(st.lists(st.one_of(st.sampled_from(ABSOLUTE), st.sampled_from(RELATIVE), st.sampled_from(FILLER)),
                          min_size=1, max_size=12))
    return " ".join(parts)


@settings(max_examples=150, deadline=None)
@given(chunks(), st.one_of(st.none(), DOC), st.sampled_from([None, "Asia/Shanghai", "America/New_York"]))
def test_spans_lie_in_the_text_and_intervals_are_ordered(text, doc, tz):
    facts = ce.ground(text, doc, tz=tz)
    last = -1
    for f in facts:
        b, e = f.span
        assert 0 <= b < e <= len(text) and text[b:e] == f.text
        assert b >= last
        last = b
        assert f.start is not None or f.end is not None
        assert f.start is None or f.end is None or f.start < f.end
        assert f.anchor in ("absolute", "document", "narrative")
        assert f.anchor != "document" or doc is not None
        assert f.anchor != "narrative" or doc is None


@settings(max_examples=150, deadline=None)
@given(chunks(), DOC, st.integers(min_value=400, max_value=4000), st.booleans())
def test_absolute_facts_stay_and_document_facts_move_with_the_document_date(text, doc, shift_days, back):
    other = doc + timedelta(days=-shift_days if back else shift_days, hours=5)
    a = {f.span: f for f in ce.ground(text, doc)}
    b = {f.span: f for f in ce.ground(text, other)}
    assert {s for s, f in a.items() if f.anchor == "absolute"} == {s for s, f in b.items() if f.anchor == "absolute"}
    for when, facts in ((doc, a), (other, b)):
        for span, f in facts.items():
            if f.anchor == "absolute":
                g = (b if facts is a else a)[span]
                assert (g.start, g.end) == (f.start, f.end)
            else:
                # a document fact is parse_time's reading of its text at now = doc_date (its
                # end opened when that end is the document date itself)
                (e,) = [x for x in ce.parse_time(text, now=when) if x.span == span]
                assert f.start == e.start
                assert f.end == e.end or (f.end is None and e.end == when.replace(tzinfo=UTC))
    # more than a year apart, every placed relative start moves
    for s, f in a.items():
        if f.anchor == "document" and s in b and f.start is not None and b[s].start is not None:
            assert b[s].start != f.start


@settings(max_examples=100, deadline=None)
@given(chunks())
def test_narrative_facts_follow_the_absolute_fact_before_them(text):
    facts = ce.ground(text)
    anchor = None
    for f in facts:
        if f.anchor == "absolute" and f.start is not None:
            anchor = f.start
        elif f.anchor == "narrative":
            assert anchor is not None
            (e,) = ce.parse_time(f.text, now=anchor)
            assert (f.start, f.end) == (e.start, e.end)


@pytest.mark.parametrize("text", ["March 2009", "from 2004 to 2008", "2004年3月", "March", "last year", "since 2003",
                                  "the following year", "today", "Christmas", "Christmas 2010", "the 1990s",
                                  "in their early twenties", "next Friday", "Q3 2021", "3 days ago", "上个月"])
def test_reading_alone_skips_the_second_parse_only_when_now_was_not_read(text):
    """``_alone`` reads an expression at a second moment only when the first reading looked
    at the moment of parsing; either way its answer is the plain reading at both moments."""
    from chrono_engine.timelang.grammar import Ctx
    from chrono_engine.timelang.parser import expressions
    g = sys.modules["chrono_engine.timelang.ground"]
    now1 = datetime(2001, 7, 11, 13, 37, 11, tzinfo=timezone.utc)
    now2 = g._shifted(now1)
    plain = []
    for now in (now1, now2):
        got = expressions(text, Ctx(now, timezone.utc))
        plain.append((got[0].start, got[0].end) if len(got) == 1 and got[0].span == (0, len(text)) else None)
    want = None if None in plain else tuple(plain)
    assert g._alone.__wrapped__(text, now1, now2, timezone.utc) == want


def test_a_text_read_without_the_moment_is_not_read_again(monkeypatch):
    """When the first reading of a text never looks at the moment of parsing, its
    expressions are all absolute and none is read again (alone or at the second moment);
    a text with a relative expression still is."""
    g = sys.modules["chrono_engine.timelang.ground"]
    calls = []
    real = g._read_alone
    monkeypatch.setattr(g, "_read_alone", lambda *a: calls.append(a[0]) or real(*a))
    facts = ce.ground("He moved to Boston in March 2009 and stayed from 2010 to 2012.")
    assert [f.anchor for f in facts] == ["absolute", "absolute"] and calls == []
    ce.ground("He moved to Boston in March 2009 and left the following year.")
    assert calls
