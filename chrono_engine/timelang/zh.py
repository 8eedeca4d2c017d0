"""Chinese time grammar: dates, relative days / weeks / months / quarters / years, halves,
decades, clock times, durations and rolling ranges ("近三个月", "过去90天", "3天前").

Every pattern is compiled once at import; handlers only do arithmetic. Numbers may be
Arabic or Chinese (二〇二四年, 十五天, 两周); whitespace between number and unit is allowed
("2024 年 8 月"). Ranges, bounds (以来, 之前, 截至 ...), fuzzy edges attached to a unit
(2024年初, 去年底) and date + clock combinations are built afterwards by ``compose``.
"""
from __future__ import annotations

import re
from datetime import date, timedelta

from .._args import shown
from ..errors import TimeParseError
from . import periods as P
from .grammar import (
    RELATIVE_YEAR,
    AttachedDay,
    Cand,
    Ctx,
    amount_cand,
    cal,
    clock_cand,
    clock_on_day,
    day_at,
    fuzzy_part,
    rule,
    year_of_two_digits,
)
from .holidays import ZH as HOLIDAYS_ZH
from .holidays import leap_year_before
from .numerals import CN_DIGITS4, cn_int, number

__all__ = ["NIGHT_PARTS", "PART_HOURS", "PM_PARTS", "RULES"]

# -- shared fragments ----------------------------------------------------------------------
_Y = (r"(?:(?P<yn>(?<![\d.])\d{4}|(?<![\d.])\d{2}(?=\s*年\s*\d{1,2}\s*月)|(?<![\d.])0\d(?=\s*年)"
      r"|(?<![〇零○一二三四五六七八九十])[〇零○][〇零○一二三四五六七八九](?=\s*年)|" + CN_DIGITS4 +
      r")\s*年(?:度)?"
      r"|(?P<yr>大前年|前年|去年|今年|明年|大后年|后年|本年度?|上一年度?|上年度?|下一年度?|来年))")
_YP = rf"(?:{_Y}\s*(?:的)?\s*)?"
_YLEAD = r"\d〇零○一二三四五六七八九大前去今明后本上下来"
_CLOCK_LEAD = r"今昨前明凌早清上中午下傍晚夜深半\d零一二两三四五六七八九十"
_MO = r"(?P<mo>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_DD = (r"(?P<d>3[01]|[12]\d|0?[1-9]|[二三]?十[一二三四五六七八九]?|廿[一二三四五六七八九]?"
       r"|卅一?|[一二三四五六七八九])")
_DAY_END = (r"(?P<mk>日|号(?!楼|线|院|房|机|文|令|码|字|元|子|称|召|外|志|记|店|位|件|程|床|桌|门|车"
             r"|厅|馆|站|口|码))")

#: Hours covered by a part of the day: [from, to).
PART_HOURS = {"凌晨": (0, 6), "早上": (6, 12), "早晨": (6, 12), "清晨": (6, 12),
              "上午": (6, 12), "早间": (6, 12), "中午": (11, 13), "午间": (11, 13),
              "下午": (12, 18), "傍晚": (18, 24), "晚上": (18, 24), "晚间": (18, 24),
              "夜里": (18, 24), "夜间": (18, 24), "深夜": (18, 24), "半夜": (18, 24),
              "morning": (6, 12), "noon": (11, 13), "afternoon": (12, 18),
              "evening": (18, 24), "night": (18, 24), "tonight": (18, 24), "daytime": (6, 18)}
#: "early morning", "late afternoon": the first / second half of the part's hours
PART_HOURS.update({f"{edge} {p}": ((a, (a + b) // 2) if edge == "early" else ((a + b) // 2, b))
                   for p, (a, b) in list(PART_HOURS.items()) if p in ("morning", "afternoon", "evening", "night")
                   for edge in ("early", "late")})
#: Parts of the day after which "3点" means 15:00.
PM_PARTS = frozenset({"下午", "傍晚", "晚上", "晚间", "夜里", "夜间", "深夜", "半夜",
                      "afternoon", "evening", "night", "tonight", "pm", "early afternoon",
                      "late afternoon", "early evening", "late evening", "early night", "late night"})
#: Parts of the night whose small hours (before 5) stay small ("tonight around 3")
NIGHT_PARTS = frozenset({"night", "tonight", "early night", "late night", "夜里", "夜间", "半夜"})
_DAY_PARTS = {"今晚": (0, "晚上"), "今早": (0, "早上"), "今晨": (0, "早上"), "今夜": (0, "晚上"),
              "昨晚": (-1, "晚上"), "昨夜": (-1, "晚上"), "前晚": (-2, "晚上"),
              "明早": (1, "早上"), "明晚": (1, "晚上"), "明晨": (1, "早上")}
_REL_DAY = {"大前天": -3, "前天": -2, "前日": -2, "昨天": -1, "昨日": -1, "今天": 0, "今日": 0,
            "今儿": 0, "今儿个": 0, "当天": 0, "明天": 1, "明日": 1, "后天": 2, "大后天": 3}
_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
            "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
_FUZZY_WORD = {"初": "early", "底": "late", "末": "late", "中": "mid", "上旬": "early",
               "中旬": "mid", "下旬": "late"}


def _n(s: str) -> int:
    v = cn_int(s)
    if v is None:
        # a void match: parser._run catches ValueError (TimeParseError is one) and drops it
        raise TimeParseError(f"{shown(s)} is not a Chinese or Arabic number")
    return v


def _year(m: re.Match, ctx: Ctx) -> tuple[int, bool]:
    """(year, written?) from the _Y fragment."""
    yn = m.group("yn")
    if yn:
        v = _n(yn)
        if len(yn) == 2:
            v = year_of_two_digits(v, ctx)
        return v, True
    yr = m.group("yr")
    if yr:
        return ctx.year + RELATIVE_YEAR[yr], True
    return ctx.year, False


def _rel(word: str) -> int:
    """Offset of 上上 / 上 / 本 / 这 / 当 / 下 / 下下 prefixes."""
    if word.startswith("上上"):
        return -2
    if word.startswith("下下"):
        return 2
    if word[0] == "上":
        return -1
    if word[0] == "下":
        return 1
    return 0


# -- calendar units ------------------------------------------------------------------------
@rule(_Y + r"(?!\s*代)", lead=_YLEAD, chars='年')
def year(m, ctx):
    y, _ = _year(m, ctx)
    s, e = P.month_span(y, 1, ctx.tz, 12)
    return cal(m.start(), m.end(), s, e, "year")


@rule(_YP + r"(?<![\d〇零一二三四五六七八九十.])" + _MO + r"\s*月(?:份)?(?:\s*" + _DD +
      r"\s*" + _DAY_END + r")?", lead=_YLEAD + "十", chars='月')
def month_day(m, ctx):
    y, written = _year(m, ctx)
    mo = _n(m.group("mo"))
    d = m.group("d")
    tz = ctx.tz
    if d:
        dd = _n(d)
        leap = not written and (mo, dd) == (2, 29)
        if leap:
            y = leap_year_before(y)  # 2月29日 without a year: the latest one so far
        s, e = P.day_span(y, mo, dd, tz)
        rb = None if (written or leap) else (lambda yy, mm: P.day_span(yy, mo, dd, tz))
        return cal(m.start(), m.end(), s, e, "day", rb)
    s, e = P.month_span(y, mo, tz)
    rb = None if written else (lambda yy, mm: P.month_span(yy, mo, tz))
    return cal(m.start(), m.end(), s, e, "month", rb)


@rule(r"(?<![\d月年个第.〇零一二三四五六七八九十])" + _DD + r"\s*" + _DAY_END,
      lead=r"\d一二三四五六七八九十廿卅", chars='日号')
def bare_day(m, ctx):
    d = m.group("d")
    if len(d) == 1 and not d.isdigit() and m.group("mk") == "日":
        return None  # 一日 is usually "one day", not "the 1st"
    dd = _n(d)
    tz = ctx.tz
    s, e = P.day_span(ctx.year, ctx.month, dd, tz)
    c = cal(m.start(), m.end(), s, e, "day", lambda yy, mm: P.day_span(yy, mm, dd, tz))
    c.lend = "ym"
    return c


@rule(r"(?P<rm>上上个?月|上个?月|本月|这个?月|当月|下下个?月|下个?月)(?:份)?(?:\s*" + _DD +
      r"\s*" + _DAY_END + r")?", lead="上本这当下", chars='月')
def relative_month(m, ctx):
    y, mo = P.add_months(ctx.year, ctx.month, _rel(m.group("rm")))
    d = m.group("d")
    if d:
        s, e = P.day_span(y, mo, _n(d), ctx.tz)
        return cal(m.start(), m.end(), s, e, "day")
    s, e = P.month_span(y, mo, ctx.tz)
    return cal(m.start(), m.end(), s, e, "month")


@rule(r"(?P<rd>大前天|前天|前日|昨天|昨日|今天|今日|今儿个?|当天|明天|明日|大后天|后天)",
      lead="大前昨今当明后", chars='天日儿')
def relative_day(m, ctx):
    d = ctx.today + timedelta(days=_REL_DAY[m.group("rd")])
    s, e = P.day_span(d.year, d.month, d.day, ctx.tz)
    return cal(m.start(), m.end(), s, e, "day")


@rule(r"(?P<rw>(?:上上|上|本|这|下下|下)(?:个?周|个?星期|个?礼拜))(?P<wd>[一二三四五六日天1-7]|末)?(?!期|刊|年|岁)",
      lead="上本这下", chars='周星礼')
def relative_week(m, ctx):
    monday = P.iso_week_start(ctx.today) + timedelta(weeks=_rel(m.group("rw")))
    return _week_part(m, monday, ctx)


@rule(r"(?<![上下本这个一二三四五六七八九十两几每\d])(?:(?:周|星期|礼拜)(?P<wd>[一二三四五六日天1-7])"
      r"|(?P<we>周末))", lead="周星礼", chars='周星礼')
def weekday(m, ctx):
    c = _week_part(m, P.iso_week_start(ctx.today), ctx)
    if m.group("wd"):
        c.role = "weekday"  # may only name the weekday of a date before it
    return c


def _week_part(m, monday, ctx):
    wd = m.group("wd")
    tz = ctx.tz
    if wd == "末" or (wd is None and m.groupdict().get("we")):
        d = monday + timedelta(days=5)
        s, e = P.day_span(d.year, d.month, d.day, tz, 2)
        return cal(m.start(), m.end(), s, e, "day")
    if wd:
        d = monday + timedelta(days=_WEEKDAY[wd])
        s, e = P.day_span(d.year, d.month, d.day, tz)
        return cal(m.start(), m.end(), s, e, "day")
    s, e = P.day_span(monday.year, monday.month, monday.day, tz, 7)
    return cal(m.start(), m.end(), s, e, "week")


@rule(_YP + r"第\s*(?P<wn>\d{1,2}|[一二三四五六七八九十]{1,3})\s*(?:周|个?星期)",
      lead=_YLEAD + "第", chars='周星')
def iso_week(m, ctx):
    y, written = _year(m, ctx)
    wn = _n(m.group("wn"))
    tz = ctx.tz

    def build(yy, mm=None):
        d = date.fromisocalendar(yy, wn, 1)
        return P.day_span(d.year, d.month, d.day, tz, 7)
    s, e = build(y)
    return cal(m.start(), m.end(), s, e, "week", None if written else build)


@rule(_YP + r"(?:第\s*(?P<q1>[一二三四1-4])\s*(?:季度|季)|(?P<q2>[一二三四1-4])\s*季度|[Qq](?P<q3>[1-4])(?!\d))",
      lead=_YLEAD + "第Qq", chars='季Qq')
def quarter(m, ctx):
    y, written = _year(m, ctx)
    q = _n(m.group("q1") or m.group("q2") or m.group("q3"))
    tz = ctx.tz
    s, e = P.month_span(y, 3 * q - 2, tz, 3)
    rb = None if written else (lambda yy, mm: P.month_span(yy, 3 * q - 2, tz, 3))
    return cal(m.start(), m.end(), s, e, "quarter", rb)


@rule(r"(?P<rq>上上个?季度|上一?个?季度|本季度?|这一?个?季度|当季度?|下下个?季度|下一?个?季度)",
      lead="上本这当下", chars='季')
def relative_quarter(m, ctx):
    w = m.group("rq")
    now = ctx.now
    s, _ = P.period(now, "quarter")
    y, mo = P.add_months(s.year, s.month, 3 * _rel(w))
    s, e = P.month_span(y, mo, ctx.tz, 3)
    return cal(m.start(), m.end(), s, e, "quarter")


@rule(_YP + r"前\s*(?P<n>[一二三四五六七八九十两1-9]|1[0-2])\s*(?:个)?\s*(?P<u>季度|月)",
      lead=_YLEAD, chars='季月')
def first_units_of_year(m, ctx):
    """"2024年前三季度" = Q1–Q3 of 2024; "今年前两个月" = Jan–Feb (needs a year for months)."""
    y, written = _year(m, ctx)
    n = _n(m.group("n"))
    u = m.group("u")
    if u == "月" and not written:
        return None  # "前三个月" alone is a rolling range
    months = 3 * n if u == "季度" else n
    if months > 12:
        return None
    s, e = P.month_span(y, 1, ctx.tz, months)
    c = cal(m.start(), m.end(), s, e, "quarter" if u == "季度" else "month")
    c.kind = "span"
    return c


@rule(_YP + r"(?P<h>上|下|前|后)半年(?:度)?|(?P<rel>上|下|这|本)个半年|(?P<mh>上|下)半(?P<u>月|周)", lead=_YLEAD + "这",
      chars='半')
def half(m, ctx):
    """上半年 / 2018年前半年 / 今年后半年 (a half of a year), 上个半年 (the previous half-year),
    上半月 / 下半月 (days 1–15 / 16–end of this month), 上半周 / 下半周 (Mon–Wed / Thu–Sun)."""
    tz = ctx.tz
    if m.group("mh"):
        first = m.group("mh") == "上"
        if m.group("u") == "月":
            s0, e0 = ctx.period("month")
            mid = s0 + timedelta(days=15)
        else:
            s0, e0 = ctx.period("week")
            mid = s0 + timedelta(days=3)
        s, e = (s0, mid) if first else (mid, e0)
        return cal(m.start(), m.end(), s, e, "day")
    if m.group("rel"):
        h0 = 1 if ctx.month <= 6 else 7
        y, mo = P.add_months(ctx.year, h0, 6 * _rel(m.group("rel")))
        s, e = P.month_span(y, mo, tz, 6)
        return cal(m.start(), m.end(), s, e, "half")
    y, written = _year(m, ctx)
    mo = 1 if m.group("h") in ("上", "前") else 7
    if m.group("h") in ("前", "后") and not m.group("yn") and not m.group("yr"):
        return None  # 前半年 alone: the past six months (duration)
    s, e = P.month_span(y, mo, tz, 6)
    rb = None if written else (lambda yy, mm: P.month_span(yy, mo, tz, 6))
    return cal(m.start(), m.end(), s, e, "half", rb)


@rule(r"(?:(?P<cent>上个?世纪|本世纪|(?P<cn>\d{2}|二十一|二十|十九)\s*世纪)\s*)?"
      r"(?P<dec>(?:19|20)\d0|\d0|[一二三四五六七八九]十|[〇零]{1,2})\s*年代",
      lead=r"上本\d一二三四五六七八九十〇零", chars='代')
def decade(m, ctx):
    dec = m.group("dec")
    v = int(dec) if dec.isdigit() else (cn_int(dec) or 0)
    if v >= 1000:
        y0 = v
    else:
        cent = m.group("cent")
        if cent:
            if cent.startswith("上"):
                base = ctx.year - ctx.year % 100 - 100
            elif cent.startswith("本"):
                base = ctx.year - ctx.year % 100
            else:
                base = (_n(m.group("cn")) - 1) * 100
            y0 = base + v
        else:
            y0 = ctx.year - ctx.year % 100 + v
            if y0 > ctx.year:
                y0 -= 100
    s, e = P.month_span(y0, 1, ctx.tz, 120)
    return cal(m.start(), m.end(), s, e, "decade")


@rule(r"(?P<fz>年初|年底|年末|年中|月初|月底|月末|月中|上旬|中旬|下旬)",
      lead="年月上中下", chars='初底末中旬')
def fuzzy_word(m, ctx):
    """Bare 年初 / 月底 / 下旬 ...: that part of the current year or month."""
    w = m.group("fz")
    grain = "year" if w[0] == "年" else "month"
    part = _FUZZY_WORD[w] if w in _FUZZY_WORD else _FUZZY_WORD[w[1]]
    s0, _ = ctx.period(grain)
    s, e, g = fuzzy_part(s0, grain, part)
    c = Cand(m.start(), m.end(), s, e, g, "point", "fz", None, True)
    c.fzpart = (grain, part)
    return c


@rule(r"(?P<now>现在|目前|此刻|当下|如今|眼下|现今|时下)",
      lead="现目此当如眼时", chars='现目此当如眼时')
def now_word(m, ctx):
    s = P.floor(ctx.now, "second")
    c = Cand(m.start(), m.end(), s, P.shift(s, "second", 1), "second", "point", "now")
    return c


# -- clock times -------------------------------------------------------------------------
_PART = r"(?P<part>凌晨|早上|早晨|清晨|上午|中午|午间|下午|傍晚|晚上|夜里|夜间|深夜|半夜|晚间|早间)"
_DP = r"(?P<dp>今晚|今早|今晨|今夜|昨晚|昨夜|前晚|明早|明晚|明晨)"
_CN_SMALL = "[零一二两三四五六七八九十]{1,3}"
# a bare "10点" is a clock time when nothing noun-like follows ("10点开会", "10点前"), not
# when it counts things ("三点建议")
_CLOCK_END = re.compile(r"\s*(?:$|[\s,，。.;；!！?？、的前后以之开到至~-])")


@rule(rf"(?:(?:{_DP}|{_PART})\s*)?(?<![\d.:])(?P<h>2[0-4]|[01]?\d|{_CN_SMALL})\s*(?:点|时)"
      rf"(?:\s*(?P<zheng>钟|整))?(?:\s*(?P<half>半)|\s*(?P<qt>一刻|三刻)"
      rf"|\s*(?P<mi>[0-5]?\d|{_CN_SMALL})(?P<fen>\s*分)?(?:\s*(?P<s>[0-5]?\d|{_CN_SMALL})\s*秒)?)?",
      lead=_CLOCK_LEAD, chars='点时')
def clock(m, ctx):
    h = _n(m.group("h"))
    mi = 0
    sec = 0
    grain = "hour"
    if m.group("half"):
        mi, grain = 30, "minute"
    elif m.group("qt"):
        mi, grain = (15 if m.group("qt") == "一刻" else 45), "minute"
    elif m.group("mi") is not None:
        mi, grain = _n(m.group("mi")), "minute"
        if m.group("s") is not None:
            sec, grain = _n(m.group("s")), "second"
    if h > 24 or mi > 59 or sec > 59:
        return None
    part = m.group("part")
    dp = m.group("dp")
    mi_s = m.group("mi")
    strong = bool(dp or part or m.group("zheng") or m.group("half") or m.group("qt")
                  or (mi_s and (m.group("fen") or mi_s.isdigit()))
                  or _CLOCK_END.match(m.string, m.end()))
    c = clock_cand(m.start(), m.end(), h, mi, sec, grain, part or (_DAY_PARTS[dp][1] if dp else None),
                   cls="clock" if strong else "weakclock")
    if dp:
        return attach_clock_to_day(c, ctx.today + timedelta(days=_DAY_PARTS[dp][0]), ctx)
    return c


@rule(rf"(?:{_DP}|{_PART}|(?<=[日号])(?P<one>早|晚)(?![\u4e00-\u9fff]))", lead="今昨前明凌早清上中午下傍晚夜深半",
      chars='晚早晨夜午凌傍')
def day_part(m, ctx):
    """今晚, 明早, 下午 ...; right after a date's 日 / 号 and before no other character, 早 / 晚
    are its morning / evening ("7月25日早")."""
    if m.group("one"):
        part = "早上" if m.group("one") == "早" else "晚上"
        return clock_cand(m.start(), m.end(), None, 0, 0, "hour", part, cls="weakclock", fuzzy=True)
    dp = m.group("dp")
    if dp:
        off, part = _DAY_PARTS[dp]
        c = clock_cand(m.start(), m.end(), None, 0, 0, "hour", part)
        return attach_clock_to_day(c, ctx.today + timedelta(days=off), ctx)
    c = clock_cand(m.start(), m.end(), None, 0, 0, "hour", m.group("part"), cls="weakclock", fuzzy=True)
    return c


@rule(rf"(?:(?:{_DP}|{_PART})\s*)?(?<![\d.:])(?P<h>2[0-4]|[01]?\d|{_CN_SMALL})"
      rf"(?=\s*(?:到|至|-|~|～)\s*(?:2[0-4]|[01]?\d|{_CN_SMALL})\s*(?:点|时))",
      lead=_CLOCK_LEAD, chars='点时')
def clock_range_start(m, ctx):
    """早上五到六点, 下午3到5点: the first hour of a range written with one 点, in the same
    part of the day."""
    h = _n(m.group("h"))
    dp = m.group("dp")
    right = _RANGE_RIGHT.match(m.string, m.end())
    if h > 24 or m.string[max(0, m.start() - 1):m.start()] == "第" or right is None or not (
            dp or m.group("part") or _CLOCK_END.match(m.string, right.end())):
        return None  # 第3到5点建议: points of a list, not hours
    c = clock_cand(m.start(), m.end(), h, 0, 0, "hour", m.group("part") or (_DAY_PARTS[dp][1] if dp else None))
    if dp:
        return attach_clock_to_day(c, ctx.today + timedelta(days=_DAY_PARTS[dp][0]), ctx)
    return c


_RANGE_RIGHT = re.compile(rf"\s*(?:到|至|-|~|～)\s*(?:2[0-4]|[01]?\d|{_CN_SMALL})\s*(?:点|时)")


@rule(r"(?P<rel>上|下|这)一?个小时", lead="上下这", chars="时")
def relative_hour(m, ctx):
    """上个小时 / 下个小时: the hour before / after now (rolling); 这个小时 the current hour."""
    rel = m.group("rel")
    if rel == "这":
        s, e = ctx.period("hour")
        return cal(m.start(), m.end(), s, e, "hour")
    return amount_cand(m.start(), m.end(), 1, "hour", ctx, "past" if rel == "上" else "future")


def attach_clock_to_day(c: Cand, day, ctx: Ctx) -> Cand:
    """Give a clock candidate its day: fills start / end and makes it a calendar unit."""
    ds = day_at(day, ctx.tz)
    h, mi, sec, grain, part = c.clock
    c.day = AttachedDay(day, part)
    if h is None:  # a part of the day
        h0, h1 = PART_HOURS[part]
        c.start, c.end = clock_on_day(ds, h0, 0, 0), clock_on_day(ds, h1, 0, 0)
        c.grain, c.fuzzy = "hour", True
    else:
        if part in PM_PARTS and h < 12:
            h += 12
        elif part in ("中午", "午间", "noon") and h < 6:
            h += 12
        elif part in ("am", "凌晨") and h == 12:
            h = 0
        t = clock_on_day(ds, h, mi, sec)
        c.start, c.end = t, P.shift(t, grain, 1)
        c.grain = grain
    c.cls = "cal"
    c.clock = None
    return c


_SUB_UNIT = {"天": "day", "日": "day", "周": "week", "星期": "week", "月": "month", "季度": "quarter"}


@rule(r"(?<=年)\s*(?:的)?\s*(?:(?P<fl>前|头|最后|后)\s*(?P<n>\d{1,2}|[一二两三四五六七八九十]{1,3})"
      r"|第\s*(?P<k>\d{1,2}|[一二三四五六七八九十]{1,3}))\s*(?:个)?\s*(?P<u>天|日|周|星期|月|季度)(?!份|底|初|末)"
      r"|(?<=月)\s*(?:的)?\s*(?:(?P<wl>最后)\s*(?:一\s*)?(?:个)?|第\s*(?P<wk>[1-5]|[一二三四五]))\s*(?P<wu>周|星期|礼拜)"
      r"(?![一二三四五六日天1-7])",
      lead=r"\s的前头最后第", chars="天日周星月季礼")
def sub_span(m, ctx):
    """2021年的前2周, 今年的最后3周, 去年的前10天, 2021年的第三个月: a part of the year written
    right before (a marker after its period; compose._sub_spans)."""
    if m.group("wu"):  # 十月的第一周, 三月最后一周: a week of the month before
        part = ("last", 1) if m.group("wl") else ("nth", _n(m.group("wk")))
        c = Cand(m.start(), m.end(), None, None, "week", "point", "submark")
        c.inner, c.role = part, "after"
        return c
    u = _SUB_UNIT[m.group("u")]
    if m.group("fl"):
        n = _n(m.group("n"))
        fl = "last" if m.group("fl") in ("最后", "后") else "first"
        if n < 1 or (m.group("u") == "月" and "个" not in m.group(0)):
            return None  # 前3月 is not "the first three months" unless written 个月
        part = (fl, n)
    else:
        k = _n(m.group("k"))
        if k < 1 or (m.group("u") == "月" and "个" not in m.group(0)):
            return None  # 第3月: March, as the month rule reads it
        part = ("nth", k)
    c = Cand(m.start(), m.end(), None, None, u, "point", "submark")
    c.inner = part
    c.role = "after"
    return c


#: reign eras (年号) and the Republic (民国): the Gregorian year of their first year.
#: Tang eras named in common history, every Ming and Qing era, 民国.
ERAS = {"贞观": 627, "永徽": 650, "神龙": 705, "开元": 713, "天宝": 742,
        "洪武": 1368, "建文": 1399, "永乐": 1403, "洪熙": 1425, "宣德": 1426, "正统": 1436,
        "景泰": 1450, "天顺": 1457, "成化": 1465, "弘治": 1488, "正德": 1506, "嘉靖": 1522,
        "隆庆": 1567, "万历": 1573, "泰昌": 1620, "天启": 1621, "崇祯": 1628,
        "顺治": 1644, "康熙": 1662, "雍正": 1723, "乾隆": 1736, "嘉庆": 1796, "道光": 1821,
        "咸丰": 1851, "同治": 1862, "光绪": 1875, "宣统": 1909, "民国": 1912}


@rule(r"(?P<era>" + "|".join(ERAS) + r")\s*(?P<n>元|\d{1,2}|[一二三四五六七八九十]{1,3})\s*年"
      r"(?:\s*" + _MO + r"\s*月(?:份)?(?:\s*" + _DD + r"\s*" + _DAY_END + r")?)?",
      lead="".join({k[0] for k in ERAS}), chars="年")
def era_year(m, ctx):
    """康熙三年五月, 民国三年, 神龙元年十一月: a year of a reign era (元年 = its first year), with
    its month and day when written."""
    n = 1 if m.group("n") == "元" else _n(m.group("n"))
    if n < 1:
        return None
    y = ERAS[m.group("era")] + n - 1
    tz = ctx.tz
    if m.group("mo"):
        mo = _n(m.group("mo"))
        if m.group("d"):
            s, e = P.day_span(y, mo, _n(m.group("d")), tz)
            return cal(m.start(), m.end(), s, e, "day")
        s, e = P.month_span(y, mo, tz)
        return cal(m.start(), m.end(), s, e, "month")
    s, e = P.month_span(y, 1, tz, 12)
    return cal(m.start(), m.end(), s, e, "year")


_HOLIDAY_RE = "|".join(sorted(HOLIDAYS_ZH, key=len, reverse=True))


@rule(_YP + r"(?P<hol>" + _HOLIDAY_RE + r")", lead=_YLEAD + "".join({k[0] for k in HOLIDAYS_ZH}),
      chars="".join({k[-1] for k in HOLIDAYS_ZH}))
def holiday(m, ctx):
    """国庆节, 2019年国庆节, 去年的圣诞节: that day (``holidays.ZH``; solar-calendar festivals
    only), in the written year or the current one."""
    y, written = _year(m, ctx)
    f = HOLIDAYS_ZH[m.group("hol")]
    tz = ctx.tz
    try:
        d = f(y)
    except ValueError:
        return None
    s, e = P.day_span(d.year, d.month, d.day, tz)

    def rebuild(yy, mm):
        dd = f(yy)
        return P.day_span(dd.year, dd.month, dd.day, tz)
    return cal(m.start(), m.end(), s, e, "day", None if written else rebuild)


# -- durations and rolling ranges -------------------------------------------------------
_UNIT = {"秒": "second", "秒钟": "second", "分钟": "minute", "小时": "hour", "钟头": "hour",
         "天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month",
         "季度": "quarter", "季": "quarter", "年": "year"}
_PAST_PRE = frozenset({"过去", "过去的", "最近", "最近的", "近", "前", "这"})
_FUTURE_PRE = frozenset({"未来", "未来的", "接下来", "接下来的", "今后", "往后", "此后", "后"})
#: units an amount may take right after 月 (一个月21天); 日 there is a date (3月21日)
_AFTER_MONTH_UNITS = frozenset({"天", "小时", "钟头", "分钟", "秒", "秒钟", "周", "星期", "礼拜"})
_WITHIN = frozenset({"以内", "之内", "内", "里", "以来", "来", "之间", "期间", "间", "当中"})
_AGO = frozenset({"以前", "之前", "前"})
_LATER = frozenset({"以后", "之后", "后", "过后"})


@rule(r"(?:(?P<pre>过去的?|最近的?|近|前|这|未来的?|接下来的?|今后|往后|此后|后)\s*)?"
      r"(?<![\d.〇○])(?P<n>\d{1,3}(?:\.\d+)?|[零一二两三四五六七八九十百千廿卅]{1,5}|半|几)"
      r"(?![\d])\s*(?P<ge>个)?\s*(?P<half>半)?\s*"
      r"(?P<u>秒钟?|分钟|小时|钟头|天|日|周|星期|礼拜|月|季度|季|年)(?!代|级|版|度)(?P<half2>半)?"
      r"(?:\s*(?P<suf>以内|之内|内|里|以来|来|之间|期间|间|当中|以前|之前|前|以后|之后|后|过后)"
      r"(?![\d一二三四五六七八九十两半几天]))?",
      lead=r"过最近前这未接今往此后\d零一二两三四五六七八九十百千廿卅半几", chars='秒分时钟天日周星礼月季年')
def duration(m, ctx):
    u = m.group("u")
    b0 = m.start("n")
    if b0 and m.string[b0 - 1] == "月" and u not in _AFTER_MONTH_UNITS:
        return None  # 3月21日 is a date; 一个月21天 an amount
    n = number(m.group("n"))
    if n is None:
        return None
    if m.group("half") or m.group("half2"):
        n += 0.5
    pre = m.group("pre")
    suf = m.group("suf")
    ge = m.group("ge")
    raw = m.group("n")
    approximate = (len(raw) > 1 and not raw[0].isdigit()
                   and not any(c in "十百千廿卅" for c in raw))
    if approximate:  # 两三天, 三五年: "two or three days", counted as the larger
        n = number(raw[-1]) + (0.5 if (m.group("half") or m.group("half2")) else 0)
    if u in ("月", "季") and not (ge or pre or m.group("n") == "半"):
        return None  # 三月 is March, not three months
    if u == "年" and m.group("n").isdigit() and len(m.group("n")) > 2 and not pre:
        return None
    if u == "年" and raw[0] in "0零〇○" and len(raw) == 2:
        return None  # 08年, 零八年: the year 2008
    unit = _UNIT[u]
    fuzzy = raw == "几" or approximate
    b, e = m.start(), m.end()
    if pre in _PAST_PRE:
        return amount_cand(b, e, n, unit, ctx, "past", fuzzy)
    if pre in _FUTURE_PRE:
        return amount_cand(b, e, n, unit, ctx, "future", fuzzy)
    if pre:  # unreachable: every prefix is listed
        return None
    if suf in _WITHIN:
        return amount_cand(b, e, n, unit, ctx, "past", fuzzy)
    if suf in _AGO:
        return amount_cand(b, e, n, unit, ctx, "ago", fuzzy)
    if suf in _LATER:
        return amount_cand(b, e, n, unit, ctx, "later", fuzzy)
    return amount_cand(b, e, n, unit, ctx, "dur", fuzzy)


RULES = (era_year, sub_span, holiday, year, month_day, bare_day, relative_month, relative_day, relative_week, weekday,
         iso_week, quarter, relative_quarter, first_units_of_year, half, decade, fuzzy_word,
         now_word, clock, clock_range_start, relative_hour, day_part, duration)
