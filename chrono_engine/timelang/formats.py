"""Numeric date formats, shared by every language: ISO 8601 dates and datetimes (with
offsets), 2024/3/7, 2024.03.07, 20240307, 2024-03, 3/7/2024, 07.03.2024, 2/2013, Q3 2024,
2024-Q3, H1 2024, 2024-W10 and 24-hour clock times.

Slash dates with the year last are read month first (US: 3/7/2024 = March 7) unless the
first number exceeds 12; dotted dates with the year last are day first (07.03.2024 =
7 March); dashed ones follow the slash rule. A date with an explicit UTC offset is
converted to the parse's zone; its interval keeps the written grain.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from . import periods as P
from .grammar import Cand, cal, clock_cand, range_cand, rule, year_of_two_digits, years_cand
from .holidays import leap_year_before

__all__ = ["RULES"]

_FROM_BETWEEN = re.compile(r"\b(?:from|between)\s+$", re.IGNORECASE)

_IA = re.IGNORECASE | re.ASCII

_TIME = (r"(?:[T\s]\s*(?P<h>[01]?\d|2[0-3]):(?P<mi>[0-5]\d)"
         r"(?::(?P<s>[0-5]\d)(?:[.,](?P<f>\d{1,6})\d*)?)?"
         r"\s*(?P<z>Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?")


def _ymd_time(m, ctx, y: int, mo: int, d: int) -> Cand:
    tz = ctx.tz
    if m.group("h") is None:
        s, e = P.day_span(y, mo, d, tz)
        return cal(m.start(), m.end(), s, e, "day")
    h, mi = int(m.group("h")), int(m.group("mi"))
    sec = int(m.group("s") or 0)
    frac = m.group("f")
    us = int(frac.ljust(6, "0")) if frac else 0
    grain = "second" if m.group("s") else "minute"
    z = m.group("z")
    if z:
        if z.upper() == "Z":
            off = timezone.utc
        else:
            sign = -1 if z[0] == "-" else 1
            hh, mm = int(z[1:3]), int(z[-2:])
            off = timezone(sign * timedelta(hours=hh, minutes=mm))
        t = datetime(y, mo, d, h, mi, sec, us, tzinfo=off).astimezone(tz)
    else:
        t = datetime(y, mo, d, h, mi, sec, us, tzinfo=tz)
    s = t.replace(microsecond=0) if grain == "second" else t.replace(second=0, microsecond=0)
    return cal(m.start(), m.end(), s, P.shift(s, grain, 1), grain)


@rule(r"(?<![\d.])(?P<y>\d{4})(?P<sep>[-/.])(?P<mo>0?[1-9]|1[0-2])(?P=sep)(?P<d>0?[1-9]|[12]\d|3[01])"
      r"(?![\d])" + _TIME + r"(?![\d:])", lead=r"\d", shapes="9-9 9/9 9.9")
def ymd(m, ctx):
    return _ymd_time(m, ctx, int(m.group("y")), int(m.group("mo")), int(m.group("d")))


@rule(r"(?<![\d.,:/-])(?<![\d.,:/-]\s)(?P<y>1[5-9]\d\d|20\d\d)\s(?P<mo>0?[1-9]|1[0-2])\s(?P<d>0?[1-9]|[12]\d|3[01])"
      r"(?![\d.,:/-]?\d|\s*-|\s+\d)", lead=r"\d", shapes="9999",
      need=r"\d\d\d\d\s\d\d?\s\d")  # led by a digit: a fast skip to digits
def ymd_spaced(m, ctx):
    """2016 10 16: a date written year, month, day with single spaces (no number on either
    side, so that "in 2016 10 16-year-olds" or a row of figures stays numbers)."""
    s, e = P.day_span(int(m.group("y")), int(m.group("mo")), int(m.group("d")), ctx.tz)
    return cal(m.start(), m.end(), s, e, "day")


@rule(r"(?<![\d.])(?P<y>(?:19|20)\d{2})(?P<mo>0[1-9]|1[0-2])(?P<d>0[1-9]|[12]\d|3[01])(?![\d])"
      r"(?:T(?P<h>[01]\d|2[0-3])(?P<mi>[0-5]\d)(?P<s>[0-5]\d)?(?P<f>)(?P<z>Z)?)?",
      lead=r"\d", shapes="99999999")
def compact(m, ctx):
    return _ymd_time(m, ctx, int(m.group("y")), int(m.group("mo")), int(m.group("d")))


@rule(r"(?<![\d.:/-])(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})"
      r"(?![\d]|[/.-]\d)" + _TIME + r"(?![\d:])", lead=r"\d", shapes="9-9 9/9 9.9")
def dmy_mdy(m, ctx):
    a, b = int(m.group("a")), int(m.group("b"))
    ys = m.group("y")
    sep = m.group("sep")
    if len(ys) == 2 and sep == "-":
        return None
    y = int(ys) if len(ys) == 4 else year_of_two_digits(int(ys), ctx)
    if sep == ".":
        d, mo = a, b
    elif a > 12:
        d, mo = a, b
    else:
        mo, d = a, b
    return _ymd_time(m, ctx, y, mo, d)


@rule(r"(?<![\d.:/])(?P<a1>\d{1,2})(?P<s1>[/-])(?P<b1>\d{1,2})(?:(?P=s1)(?P<y1>\d{4}))?"
      r"\s*[-–~]\s*(?P<a2>\d{1,2})(?P<s2>[/-])(?P<b2>\d{1,2})(?:(?P=s2)(?P<y2>\d{4})|,\s*(?P<y3>\d{4})\b)?"
      r"(?![\d/]|[-.]\d)",
      lead=r"\d", shapes="9-9 9/9")
def numeric_date_range(m, ctx):
    """10/1/2018-10/7/2018, 5/1-5/7/2020, 5/1-5/7, 2020, from 10-1-2018-10-7-2018: a range
    of two dates written with numbers (month first unless the first number exceeds 12); a
    year on one side is lent to the other; without any year the range needs "from" or
    "between"."""
    y1, y2 = m.group("y1"), m.group("y2") or m.group("y3")
    pre = _FROM_BETWEEN.search(m.string, max(0, m.start() - 9), m.start())
    if not (y1 or y2 or pre):
        return None
    y1 = int(y1) if y1 else None
    y2 = int(y2) if y2 else None
    y1, y2 = y1 or y2 or ctx.year, y2 or y1 or ctx.year

    def md(a, b):
        a, b = int(a), int(b)
        return (b, a) if a > 12 else (a, b)
    (mo1, d1), (mo2, d2) = md(m.group("a1"), m.group("b1")), md(m.group("a2"), m.group("b2"))
    s, _ = P.day_span(y1, mo1, d1, ctx.tz)
    _, e = P.day_span(y2, mo2, d2, ctx.tz)
    if not s < e:
        return None
    return range_cand(pre.start() if pre else m.start(), m.end(), s, e, "day")


@rule(r"(?<![\w$€£#.:/-])(?P<a>[12]\d|3[01]|0?[1-9])/(?P<b>[12]\d|3[01]|0?[1-9])(?![\d/]|\.\d|\s+of\b|\s*(?:%|percent))"
      r"(?P<t>(?=\s+(?:at|between|from|by|before|after|until)\s+\d|\s+\d{1,2}(?:[:.][0-5]\d)?\s*[ap]\.?m\b))?",
      _IA, lead=r"\d", shapes="9/9")
def month_slash_day(m, ctx):
    """11/20, 2/29, 6/4 at 5pm, 23/12 before 5pm: a month then a day past 12, or with a
    clock time after it any day, or a day past 12 then a month, with no year and nothing
    before it (words that introduce a date admit any day: en.month_slash_day); "3/7" and
    "24/7" alone stay what they are. This year's; Feb 29 the latest leap year's."""
    a, b = int(m.group("a")), int(m.group("b"))
    timed = m.group("t") is not None
    if a <= 12 and (b > 12 or timed):
        mo, d = a, b
    elif a > 12 and b <= 12 and timed:
        mo, d = b, a
    else:
        return None
    tz = ctx.tz
    s, e = P.day_span(leap_year_before(ctx.year) if (mo, d) == (2, 29) else ctx.year, mo, d, tz)
    return cal(m.start(), m.end(), s, e, "day", lambda yy, mm: P.day_span(yy, mo, d, tz))


@rule(r"(?<![\d.:/-])(?P<y>(?:19|20)\d{2})(?P<sep>[-/]|\.(?=\d\d))(?P<mo>0?[1-9]|1[0-2])"
      r"(?![\d]|\s*[-/.]\s*\d|\s*[至到~～])", lead=r"\d", shapes="9-9 9/9 9.9")
def year_month(m, ctx):
    s, e = P.month_span(int(m.group("y")), int(m.group("mo")), ctx.tz)
    return cal(m.start(), m.end(), s, e, "month")


@rule(r"(?<![\d.:/-])(?:(?P<mo>0?[1-9]|1[0-2])/(?P<y>(?:19|20)\d{2})(?![\d/])"
      r"|(?P<mo2>0[1-9]|1[0-2])-(?P<y2>(?:19|20)\d{2})(?![\d/-]))", lead=r"\d", shapes="9/9 9-9")
def month_year(m, ctx):
    """3/2024, 12-2015: a month."""
    s, e = P.month_span(int(m.group("y") or m.group("y2")), int(m.group("mo") or m.group("mo2")), ctx.tz)
    return cal(m.start(), m.end(), s, e, "month")


@rule(r"(?<![A-Za-z0-9_])(?:(?P<y1>(?:19|20)\d{2})\s*(?:年\s*)?[-/ ]?\s*)?"
      r"(?:[Qq](?P<q>[1-4])|(?P<q2>[1-4])Q)(?![A-Za-z0-9_])"
      r"(?:(?:\s*(?:[-/,]\s*|'|\s)|\s+of\s+)(?P<y2>(?:19|20)\d{2})(?!\d)|\s*[-']\s*(?P<yy>\d{2})(?!\d))?",
      lead=r"\dQq", need='(?<![a-z])q[1-4]|[1-4]q(?![a-z])', chars="qQ")
def quarter(m, ctx):
    """Q3 2024, 2024-Q3, 2024Q3, Q3'24, 3Q (the current year's when no year is written)."""
    ys = m.group("y1") or m.group("y2")
    q = int(m.group("q") or m.group("q2"))
    tz = ctx.tz
    if ys:
        y = int(ys)
    elif m.group("yy"):
        y = year_of_two_digits(int(m.group("yy")), ctx)
    else:
        s, e = P.month_span(ctx.year, 3 * q - 2, tz, 3)
        return cal(m.start(), m.end(), s, e, "quarter",
                   lambda yy, mm: P.month_span(yy, 3 * q - 2, tz, 3))
    s, e = P.month_span(y, 3 * q - 2, tz, 3)
    return cal(m.start(), m.end(), s, e, "quarter")


@rule(r"(?<![A-Za-z0-9_])(?:(?P<y1>(?:19|20)\d{2})\s*(?:年\s*)?[-/ ]?\s*)?"
      r"[Hh](?P<h>[12])(?![A-Za-z0-9_])"
      r"(?:(?:\s*(?:[-/,]\s*|'|\s)|\s+of\s+)(?P<y2>(?:19|20)\d{2})(?!\d)|\s*[-']\s*(?P<yy>\d{2})(?!\d))?",
      lead=r"\dHh", need='[12](?<=h[12])')  # digit-led: the engine skips to the next 1 or 2
def half(m, ctx):
    """H1 2024, 2024H2, 2024-H1."""
    ys = m.group("y1") or m.group("y2")
    mo = 1 if m.group("h") == "1" else 7
    tz = ctx.tz
    if ys:
        y = int(ys)
    elif m.group("yy"):
        y = year_of_two_digits(int(m.group("yy")), ctx)
    else:
        s, e = P.month_span(ctx.year, mo, tz, 6)
        return cal(m.start(), m.end(), s, e, "half", lambda yy, mm: P.month_span(yy, mo, tz, 6))
    s, e = P.month_span(y, mo, tz, 6)
    return cal(m.start(), m.end(), s, e, "half")


@rule(r"(?<![A-Za-z0-9_])(?P<y>(?:19|20)\d{2})-?W(?P<w>0[1-9]|[1-4]\d|5[0-3])(?:-?(?P<d>[1-7]))?(?![A-Za-z0-9_])",
      lead=r"\d", chars='W',
      need=r"w(?:(?<=\dw)|(?<=\d-w))\d")  # the year's last digit, -?W, the week's first digit
def iso_week(m, ctx):
    from datetime import date
    y, w = int(m.group("y")), int(m.group("w"))
    if m.group("d"):
        d = date.fromisocalendar(y, w, int(m.group("d")))
        s, e = P.day_span(d.year, d.month, d.day, ctx.tz)
        return cal(m.start(), m.end(), s, e, "day")
    d = date.fromisocalendar(y, w, 1)
    s, e = P.day_span(d.year, d.month, d.day, ctx.tz, 7)
    return cal(m.start(), m.end(), s, e, "week")


@rule(r"(?<![\d:.])(?P<h>[01]?\d|2[0-4]):(?P<mi>[0-5]\d)(?::(?P<s>[0-5]\d))?(?![\d:])",
      lead=r"\d", shapes="9:9")
def clock24(m, ctx):
    h, mi = int(m.group("h")), int(m.group("mi"))
    if h == 24 and mi:
        return None
    grain = "second" if m.group("s") else "minute"
    c = clock_cand(m.start(), m.end(), h, mi, int(m.group("s") or 0), grain)
    return c


@rule(r"(?<![\d.:/-])(?P<a>(?:19|20)\d{2})\s*(?:年\s*)?[-–—~～]\s*(?P<b>(?:19|20)\d{2})(?:\s*年(?:度)?)?"
      r"(?!\d|[.:/-]\d)", lead=r"\d", shapes="9~9")
def year_range(m, ctx):
    """2020-2022, 2020—2022年: the years from the first through the second."""
    a, b = int(m.group("a")), int(m.group("b"))
    if b < a:
        return None
    return years_cand(m.start(), m.end(), a, b, ctx.tz)


@rule(r"(?<![\w$€£¥.,:/#])(?<!\d-)(?<!\b\d\s[-–]\s)(?<!\b\d\d\s[-–]\s)(?<!\b\d\d\d\s[-–]\s)"
      r"(?:(?:the\s+)?year\s+)?(?P<y>1[5-9]\d\d|20\d\d|2100)"
      r"(?![\w%$€£¥'’]|[.,:/-]\d|\s[-–]\s\d{1,3}\b(?![^\S\n]*(?:[A-Za-z]|[-–]))|\s*(?:版|款|型|届|号|元|人|个|份|件|次|条|页|万|亿|千|百|米|克|年"
      r"|(?:dollars?|usd|eur|rmb|yuan|people|persons|employees|users|units|items|pages|words"
      r"|rows|records|km|kg|miles|meters)\b))", _IA, lead=r"\dty", shapes="9999")
def bare_year(m, ctx):
    """A year written alone (2024, in 2024), unless a unit follows (2000 元, 2023版) or
    a number of one to three digits standing alone is dashed to it ("32 - 2015": not a
    date, and not this year; "1658 – 2 December 1730" and "1997 - 3rd place" keep theirs)."""
    y = int(m.group("y"))
    s, e = P.month_span(y, 1, ctx.tz, 12)
    return cal(m.start(), m.end(), s, e, "year")


RULES = (numeric_date_range, month_slash_day, year_range, bare_year, ymd, ymd_spaced, compact, dmy_mdy, year_month, month_year, quarter, half,
         iso_week, clock24)
