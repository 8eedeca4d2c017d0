"""English time grammar: month names with days and years, relative days / weekdays /
weeks / months / quarters / years / decades, halves and quarters in words, clock times,
parts of the day, durations, "N days ago", "in 2 weeks" and rolling ranges ("past 90
days", "last 2 months", "within 3 days").

Case-insensitive, except that a bare month or weekday abbreviation ("mar", "sun", "may")
counts only when capitalised or next to a day or year, so "you may" and "the sun" stay
words.
"""
from __future__ import annotations

import re
from datetime import date, timedelta

from . import periods as P
from .grammar import (
    RELATIVE_YEAR,
    Cand,
    Clock,
    amount_cand,
    cal,
    clock_cand,
    clock_on_day,
    day_at,
    fuzzy_part,
    future_said,
    range_cand,
    rule,
    year_of_two_digits,
    years_cand,
)
from .holidays import EN as HOLIDAYS_EN
from .holidays import leap_year_before
from .numerals import EN_NUM, FUZZY_EN, en_int
from .zh import attach_clock_to_day

__all__ = ["MONTHS", "RULES"]

MON_WORDS = "jan feb mar apr may jun jul aug sep oct nov dec"
_MON3 = MON_WORDS.replace(" ", "|")  # the same, as a regex alternation (prefilters)
#: the whole words of month names (the gate of the month rules: "married" is not March)
MONTH_TOKENS = ("jan january feb february mar march apr april may jun june jul july aug august sep sept "
                "september oct october nov november dec december")
#: the whole words of weekday names ("friend" is not Friday)
#: the whole words of the units an amount or a rolling range ends with ("3 days", "3d"):
#: "for", "house" and "minister" do not wake those rules
UNIT_TOKENS = ("second seconds sec secs minute minutes min mins hour hours hr hrs day days week weeks wk wks "
               "month months quarter quarters year years yr yrs decade decades fortnight fortnights h d w y")
#: am / pm as a word or right after a digit, not the "am" of "team" (the gate of the clock rules)
_AMPM_NEED = r"(?<![a-z])[ap]\.?\s?m(?![a-z])"
WEEKDAY_TOKENS = "mon monday tue tues tuesday wed wednesday thu thur thurs thursday fri friday sat saturday sun sunday"
_UNIT_WORDS = "sec min hou hr hrs day wee wk wks mon qua yea yr yrs dec for h d w y"
#: every amount phrase holds a digit or a number word
_AMOUNT = (r"\d|\b(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen"
           r"|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty"
           r"|sixty|seventy|eighty|ninety|hundred|few|several|couple|half)\b")

# ASCII word boundaries, so "last week的报告" and "Q3的销售" still match next to Chinese.
_I = re.IGNORECASE | re.ASCII

MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
          "sep": 9, "oct": 10, "nov": 11, "dec": 12}


def _mon_g(g: str) -> str:
    """A month's name (full or abbreviated) in the named group ``g``."""
    return (rf"(?P<{g}>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
            rf"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")


_MON = _mon_g("mon") + r"\.?"
_WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
_WD = (r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday"
       r"|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?")
_ORD = r"(?:st|nd|rd|th)?"
_UNIT = (r"(?P<u>seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|months?"
         r"|quarters?|years?|yrs?|decades?|fortnights?)")
_UNITS = {"sec": "second", "min": "minute", "hour": "hour", "hr": "hour", "day": "day",
          "week": "week", "wk": "week", "month": "month", "quarter": "quarter", "fortnight": "fortnight",
          "year": "year", "yr": "year", "decade": "decade"}
_ATTACHED = {"h": "hour", "d": "day", "w": "week", "y": "year"}
_REL = {"last": -1, "previous": -1, "prev": -1, "past": -1, "this": 0, "current": 0,
        "next": 1, "coming": 1, "following": 1, "upcoming": 1}
_DECADE_WORDS = {"twenties": 20, "thirties": 30, "forties": 40, "fifties": 50, "sixties": 60,
                 "seventies": 70, "eighties": 80, "nineties": 90}
_ORDINALS = {w: i for i, w in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth "
    "twenty-first twenty-second twenty-third twenty-fourth twenty-fifth twenty-sixth "
    "twenty-seventh twenty-eighth twenty-ninth thirtieth thirty-first".split(), 1)}
_ORDINAL_RE = "|".join(sorted(_ORDINALS, key=len, reverse=True)).replace("-", "[-\\s]")


#: the whole words of ordinal day numbers (first ... thirty-first) and of cardinal ones from ten
_ORDINAL_TOKENS = " ".join(sorted({w for k in _ORDINALS for w in k.split("-")}))
_DAY_WORD_TOKENS = _ORDINAL_TOKENS + (" ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen "
                                      "nineteen twenty thirty")


def _ordinal(word: str) -> int | None:
    """The value of an ordinal word as matched by ``_ORDINAL_RE`` ("twenty first" = 21)."""
    return _ORDINALS.get("-".join(word.lower().replace("-", " ").split()))
_DAYWORD = {"today": 0, "tonight": 0, "yesterday": -1, "tomorrow": 1}


def _unit(word: str) -> str:
    w = word.lower().rstrip("s")
    return _UNITS[w] if w in _UNITS else _UNITS[w[:3]]


def _month(m) -> int:
    return MONTHS[m.group("mon")[:3].lower()]


_MONTH_PREP = re.compile(r"\b(?:in|of|during|since|until|till|before|after)\s+$", re.IGNORECASE | re.ASCII)


def _plain_month_ok(m) -> bool:
    """A bare month word with no day or year must look like a month: capitalised, after a
    preposition ("in may", "of july"), or a full name other than "may"/"march"."""
    tok = m.group("mon").rstrip(".")
    if tok[0].isupper() or _MONTH_PREP.search(m.string, max(0, m.start() - 12), m.start()):
        return True  # "in may", "the last week of july": a preposition makes it a month
    return len(tok) > 4 and tok.lower() not in ("march",)


#: a person's or company's name after a month or weekday word: "Jan van Eyck", "Jan Smith",
#: "Sun Yang", "Sun Microsystems", "March Fong Eu" (a name particle, or a capitalised word
#: that is not itself a time word)
_NAME_PARTICLE = re.compile(r"\s+(?:van|von|de|der|den|del|della|da|di|du|le|la|bin|ibn|al|el|ten|ter)\s",
                            re.ASCII)
_CAP_WORD = re.compile(r"\s+(?P<w>[A-Z][a-z]+)\b", re.ASCII)
_TIME_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
    "saturday sunday mon tue tues wed thu thur thurs fri sat sun day days week weeks month "
    "months year years quarter morning afternoon evening night noon midnight eve holiday "
    "holidays break term session semester meeting meetings report reports issue edition".split())
#: words before a month or weekday that make it a date whatever follows ("in March Sales ...")
_DATE_PREP = re.compile(r"(?:\b(?:in|on|since|until|till|during|from|to|of|for|at|before|after"
                        r"|early|late|mid|last|next|this|every|each|through|between|and)\s+)$",
                        re.IGNORECASE | re.ASCII)
_THE_BEFORE = re.compile(r"\bthe\s+$", re.IGNORECASE | re.ASCII)
#: words after which "last" is the verb: "won't last two years", "expected to last 3 days"
_VERB_BEFORE = re.compile(r"(?:\b(?:not|never|will|would|should|could|can|may|might|must|to|did|does|do"
                          r"|cannot)|n't|n’t)\s+$", re.IGNORECASE)
#: a word after "a second" that makes it the ordinal ("a second round"), any word but those
#: that follow a duration ("wait a second or two", "a second later", "a second, please")
_NOUN_AFTER = re.compile(r"\s+(?!(?:ago|later|earlier|before|after|or|and|to|of|for|in|on|at|please|longer"
                         r"|more|each|per|then|so|but|when|while|from|than|the|is|was|will|would|here|there"
                         r"|now|hence|back)\b)[a-z]", re.IGNORECASE | re.ASCII)
_FROM_BEFORE = re.compile(r"\b(?:from|since)\s+[^,;.]*$", re.IGNORECASE)
_DIGIT_BEFORE = re.compile(r"\d\s*$")
#: "May I ask", "May we": the verb, not the month
_MAY_VERB = re.compile(r"\s+(?:I|we|you|he|she|it|they|this|that|there|be|not|also|have|well)\b",
                       re.IGNORECASE | re.ASCII)


def _is_name(m, group: str) -> bool:
    """Whether the month or weekday word of group ``group`` names a person or a company
    rather than a time: followed by a name particle ("Jan van Eyck"), or by a capitalised
    word that is not a time word while no date preposition precedes it ("Jan Smith", "Sun
    Microsystems"; not "in March Sales fell"); "May I" / "May we" is the verb."""
    text, b, e = m.string, m.start(group), m.end(group)
    if text[e - 1:e] == ".":
        return False
    tok = text[b:e]
    if tok.lower() == "may" and _MAY_VERB.match(text, e):
        return True
    if not tok[:1].isupper():
        return False
    if _NAME_PARTICLE.match(text, e):
        return True
    w = _CAP_WORD.match(text, e)
    if w is None or w.group("w").lower() in _TIME_WORDS:
        return False
    return _DATE_PREP.search(text, max(0, b - 12), b) is None


def _year4(s: str | None, ctx) -> int | None:
    if not s:
        return None
    y = int(s.lstrip("'"))
    return year_of_two_digits(y, ctx) if len(s.lstrip("'")) == 2 else y


@rule(rf"\b(?:{_WD},?\s+)?(?:the\s+)?{_MON}(?:\s+(?:the\s+)?|(?<=[a-z.])(?=\d)|\s*/\s*|,\s*(?=\d{{1,2}}(?:st|nd|rd|th)\b))"
      rf"(?P<d>\d{{1,2}}){_ORD}\b"
      rf"(?:\s*,?\s*(?P<y>\d{{4}})\b)?", _I,
      lead="adfjmnostw", words='jan feb mar apr may jun jul aug sep oct nov dec', exact=MONTH_TOKENS)
def month_day(m, ctx):
    """March 7, March 7th 2024, Mon, Mar 7, 2024."""
    y = _year4(m.group("y"), ctx)
    return _day(m, ctx, y, _month(m), int(m.group("d")))


#: a day of the month in words: an ordinal (first ... thirty-first) or a cardinal from ten on
#: ("twenty nine"; one to nine are left out: "May one day")
_DAY_WORDS = (rf"(?P<dw>{_ORDINAL_RE}|(?:twenty|thirty)[\s-](?:one|two|three|four|five|six|seven|eight|nine)"
              r"|twenty|thirty|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen)")


def _day_word(w: str) -> int | None:
    d = _ordinal(w)
    if d is None:
        d = en_int(" ".join(w.lower().replace("-", " ").split()))
    return int(d) if d is not None and d == int(d) and 1 <= d <= 31 else None


@rule(rf"\b(?:{_WD},?\s+)?(?:the\s+)?{_MON}\s+(?:the\s+)?{_DAY_WORDS}\b(?:\s*,?\s*(?P<y>\d{{4}})\b)?", _I,
      lead="adfjmnostw", words='jan feb mar apr may jun jul aug sep oct nov dec', exact=MONTH_TOKENS + "|" + _DAY_WORD_TOKENS)
def month_day_words(m, ctx):
    """March eighteenth, may twenty nine, January the first 2024: the day in words."""
    d = _day_word(m.group("dw"))
    if d is None:
        return None
    return _day(m, ctx, _year4(m.group("y"), ctx), _month(m), d)


@rule(rf"(?<![$€£¥])(?<![$€£¥]\s)\b(?:{_WD},?\s+)?(?:the\s+)?(?P<d>\d{{1,2}}){_ORD}(?:\s+(?:of\s+)?|-){_MON}(?![a-z])"
      rf"(?:(?:\s*,?\s*|-)(?P<y>\d{{4}})\b|\s+of\s+(?P<yy>\d{{2}})\b(?![\d:.,%]))?", _I,
      lead=r"\dmtwfs", words='jan feb mar apr may jun jul aug sep oct nov dec', exact=MONTH_TOKENS)
def day_month(m, ctx):
    """7 Mar 2024, the 7th of March, 15 April of 87."""
    y = _year4(m.group("y") or m.group("yy"), ctx)
    return _day(m, ctx, y, _month(m), int(m.group("d")))


def _day(m, ctx, y, mo, d):
    tz = ctx.tz
    if y is None and (mo, d) == (2, 29):
        y = leap_year_before(ctx.year)  # February 29 without a year: the latest one so far
    if y is None:
        s, e = P.day_span(ctx.year, mo, d, tz)
        return cal(m.start(), m.end(), s, e, "day", lambda yy, mm: P.day_span(yy, mo, d, tz))
    s, e = P.day_span(y, mo, d, tz)
    return cal(m.start(), m.end(), s, e, "day")


@rule(rf"\b(?:on\s+)?{_WD},?\s+(?:(?P<the>the)\s+)?(?:(?P<d>\d{{1,2}})(?P<o>st|nd|rd|th)?|(?P<ow>{_ORDINAL_RE}))\b"
      r"(?(the)|(?(o)|(?(ow)|(?=\s*(?:$|[.,;!?)]|at\b|between\b|from\b|\d{1,2}(?::\d\d)?\s*[ap]\.?m)))))"
      r"(?!\s*(?:[:/.-]\d|[ap]\.?m\b|o'?clock|of\b|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))", _I,
      lead="omtwfs", words='mon tue wed thu fri sat sun', exact=WEEKDAY_TOKENS)
def weekday_day_of_month(m, ctx):
    """Mon 13th, Sunday 31, wednesday the thirty first: the day of the month whose date falls on
    that weekday, the nearest to today (the first such on or after today when it is no
    farther than the last one before, or always in a clause that speaks of the future). A
    bare number needs an ordinal, "the" or the clause's end after it: "Monday 12 people" is
    not a date."""
    tok = m.group("wd").rstrip(".")
    if tok in ("sun", "wed", "sat", "mon"):
        return None  # English words in lower case
    d = int(m.group("d")) if m.group("d") else _ordinal(m.group("ow"))
    if d is None or not 1 <= d <= 31:
        return None
    wd = _WEEKDAYS[tok[:3].lower()]
    today = ctx.today
    best = None
    # the first such on or after today, and (unless the clause speaks of the future) the
    # last one before it
    for step in ((1,) if future_said(m.string, m.start()) else (1, -1)):
        y, mo = today.year, today.month
        for _ in range(60):  # every (weekday, day) pair recurs within 14 months
            if d <= P.days_in_month(y, mo):
                day = date(y, mo, d)
                if (day >= today if step == 1 else day < today) and day.weekday() == wd:
                    if best is None or abs((day - today).days) < abs((best - today).days):
                        best = day
                    break
            y, mo = P.add_months(y, mo, step)
    if best is None:
        return None
    s, e = P.day_span(best.year, best.month, best.day, ctx.tz)
    return cal(m.start(), m.end(), s, e, "day")


_D2 = r"(?:0?[1-9]|[12]\d|3[01])"
_SEP = r"\s?[-/]\s?"


@rule(rf"(?<![\w/])(?<![\d]-)(?:(?P<y1>\d{{4}}){_SEP}{_mon_g('m1')}{_SEP}(?P<d1>{_D2})"
      rf"|(?P<y2>\d{{4}}){_SEP}(?P<d2>{_D2}){_SEP}{_mon_g('m2')}"
      rf"|{_mon_g('m3')}{_SEP}(?P<y3>\d{{4}}){_SEP}(?P<d3>{_D2})"
      rf"|(?P<d4>{_D2}){_SEP}(?P<y4>\d{{4}}){_SEP}{_mon_g('m4')}"
      rf"|{_mon_g('m5')}{_SEP}(?P<d5>{_D2})(?:{_SEP}(?P<y5>\d{{4}}))?"
      rf"|(?P<d6>{_D2}){_SEP}{_mon_g('m6')}(?:{_SEP}(?P<y6>\d{{4}}))?)(?![\w/]|-\d)", _I,
      lead=r"\dadfjmnos", chars="-/", words='jan feb mar apr may jun jul aug sep oct nov dec', exact=MONTH_TOKENS,
      # every order puts the month next to a number, a dash or slash between them (_SEP)
      need=r"[-/](?:(?:(?<=\d[-/])|(?<=\d\s[-/]))\s?[a-z]|(?:(?<=[a-z][-/])|(?<=[a-z]\s[-/]))\s?\d)")
def month_name_numeric(m, ctx):
    """2019-aug-1, sep-23-2020, 23/sep/2020, 2020/23/sep, jun-15: a date written with its
    month's name between dashes or slashes, in any order (a year of four digits)."""
    for i in "123456":
        if m.group("m" + i):
            mo = MONTHS[m.group("m" + i)[:3].lower()]
            y = m.group("y" + i)
            d = int(m.group("d" + i))
            break
    return _day(m, ctx, _year4(y, ctx), mo, d)


def _day_g(g: str, words: bool) -> str:
    """A day of the month as digits (7, 7th), or with ``words`` also as an ordinal word
    (seventh); "the" allowed."""
    if not words:
        return rf"(?:the\s+)?(?P<{g}>\d{{1,2}}){_ORD}(?P<{g}w>)"
    return rf"(?:the\s+)?(?:(?P<{g}>\d{{1,2}}){_ORD}|(?P<{g}w>{_ORDINAL_RE}))"


_DAYS_TO = r"\s*(?:-|–|—|to|through|thru|until|till|(?P<and>and))\s*"


_FROM_BETWEEN = re.compile(r"\b(?P<pre>from|between)\s+$", re.IGNORECASE)


def _day_range_pattern(words: bool) -> str:
    return (rf"(?:\b{_MON}\s+{_day_g('d1', words)}{_DAYS_TO.replace('and>', 'and1>')}"
            rf"{_day_g('d2', words)}\b(?!:\d)(?:\s*,?\s*(?P<y>\d{{4}})\b)?"
            rf"|(?<![\d/.-]){_day_g('d3', words)}{_DAYS_TO.replace('and>', 'and2>')}{_day_g('d4', words)}\s+(?:of\s+)?"
            rf"{_mon_g('mon2')}\.?(?![a-z])"
            rf"(?:\s*,?\s*(?P<y2>\d{{4}})\b)?)")


@rule(_day_range_pattern(True), _I, lead=r"\dadfjmnostfsenw", words='jan feb mar apr may jun jul aug sep oct nov dec',
      exact=MONTH_TOKENS + "|" + _ORDINAL_TOKENS,
      # the first day ends in a digit or st / nd / rd / th (every ordinal word does), _DAYS_TO,
      # the second starts with a digit or the first letter of an ordinal word
      need=r"(?:\d|st|nd|rd|th)\s*(?:-|–|—|to|through|thru|until|till|and)\s*(?:the\s+)?[\dfsten]")
def day_range_words(m, ctx):
    """april ninth through seventeenth, between the ninth and the seventeenth of april:
    :func:`day_range` with days in ordinal words (its own rule: the words cost a scan only
    in texts that hold an ordinal word)."""
    return _days_range(m, ctx)


@rule(_day_range_pattern(False), _I, lead=r"\dadfjmnost", words='jan feb mar apr may jun jul aug sep oct nov dec',
      exact=MONTH_TOKENS, shapes="9~9")  # the digits of the two days with _DAYS_TO between them
def day_range(m, ctx):
    """March 7-9, 2024 / 7 to 9 March / from 3 to 12 of Sept: a range of days in one month
    ("and" only after "between")."""
    return _days_range(m, ctx)


def _days_range(m, ctx):
    pm = _FROM_BETWEEN.search(m.string, max(0, m.start() - 9), m.start())  # from / between before it
    pre = pm.group("pre").lower() if pm else ""
    if (m.group("and1") or m.group("and2")) and pre != "between":
        return None

    def day(g):
        return int(m.group(g)) if m.group(g) else _ordinal(m.group(g + "w") or "")
    if m.group("mon"):
        mo, d1, d2, y = _month(m), day("d1"), day("d2"), m.group("y")
    else:
        mo = MONTHS[m.group("mon2")[:3].lower()]
        d1, d2, y = day("d3"), day("d4"), m.group("y2")
    if d1 is None or d2 is None or not 1 <= d1 <= d2 <= 31:
        return None
    yy = _year4(y, ctx) or ctx.year
    s, _ = P.day_span(yy, mo, d1, ctx.tz)
    _, e = P.day_span(yy, mo, d2, ctx.tz)
    return range_cand(pm.start() if pm else m.start(), m.end(), s, e, "day")


@rule(rf"(?<![$])\b{_MON}(?![a-z])(?:(?:\s*,?\s*(?:of\s+)?|\s*[-/]\s*(?=\d{{4}}))(?:(?P<y>\d{{4}})\b|'(?P<yy>\d{{2}})\b"
      r"|(?P<ry>this|last|next|previous)\s+year\b)|\s+of\s+(?P<yy3>\d{2})\b(?![\d:.,%]|\s*(?:[ap]\.?m\b|%)))?"
      r"(?!\s*\d{1,2}(?:st|nd|rd|th)?(?![\d:]))", _I,
      lead="adfjmnos", words='jan feb mar apr may jun jul aug sep oct nov dec', exact=MONTH_TOKENS)
def month(m, ctx):
    """March, March 2024, Mar '24, April of 87, March of last year."""
    y = _year4(m.group("y"), ctx) or _year4(m.group("yy") or m.group("yy3"), ctx)
    if y is None and m.group("ry"):
        y = ctx.year + RELATIVE_YEAR[m.group("ry").lower()]
    if y is None and (not _plain_month_ok(m) or _is_name(m, "mon")):
        return None
    mo = _month(m)
    tz = ctx.tz
    if y is None:
        s, e = P.month_span(ctx.year, mo, tz)
        return cal(m.start(), m.end(), s, e, "month", lambda yy, mm: P.month_span(yy, mo, tz))
    s, e = P.month_span(y, mo, tz)
    return cal(m.start(), m.end(), s, e, "month")


@rule(rf"(?<![\w$€£¥.,:/#-])(?P<y>1[5-9]\d\d|20\d\d)\s+{_MON}(?![a-z])(?!\.?\s*\d)", _I,
      lead=r"\d", exact=MONTH_TOKENS, shapes="9999",
      # a prefilter led by a digit (a fast skip to digits): four of them, then the month
      need=rf"\d\d\d\d\s+(?:{_MON3})")
def year_then_month(m, ctx):
    """2017 April: a year before its month (a month word that is a name or the verb "may"
    is left to the year alone)."""
    if _is_name(m, "mon") or m.group("mon") == "may":
        return None
    s, e = P.month_span(int(m.group("y")), _month(m), ctx.tz)
    return cal(m.start(), m.end(), s, e, "month")


_FRACTIONS = {"½": 0.5, "¼": 0.25, "¾": 0.75}


@rule(r"(?<![\w.])(?P<w>\d{1,4})?(?P<f>[½¼¾])\s*(?P<u>hours?|hrs?|minutes?|mins?|days?|weeks?|months?|years?)\b",
      _I, chars="½¼¾")
def fraction_amount(m, ctx):
    """½ hour, 1½ days: an amount written with a fraction sign (the amount rule's words
    start at a word boundary, which a fraction sign does not make), as a duration."""
    n = int(m.group("w") or 0) + _FRACTIONS[m.group("f")]
    return amount_cand(m.start(), m.end(), n, _unit(m.group("u")), ctx, "dur")


_DAY_SPELLINGS = {"tonite": "tonight", "tmrw": "tomorrow", "tomorow": "tomorrow", "tommorow": "tomorrow",
                  "tommorrow": "tomorrow", "otd": "today"}


@rule(r"\b(?P<w>today|tonight|yesterday|tomorrow|" + "|".join(_DAY_SPELLINGS)
      + r"|(?:the\s+)?day\s+before\s+yesterday|(?:the\s+)?day\s+after\s+tomorrow)\b", _I,
      lead="tydo", words='tod ton yes tom tmr otd')
def relative_day(m, ctx):
    """today, tonight, yesterday, tomorrow (and "tmrw", the common misspellings; "otd", on
    this day)."""
    w = m.group("w").lower()
    w = _DAY_SPELLINGS.get(w, w)
    off = -2 if "before" in w else 2 if "after" in w else _DAYWORD[w]
    d = ctx.today + timedelta(days=off)
    s, e = P.day_span(d.year, d.month, d.day, ctx.tz)
    c = cal(m.start(), m.end(), s, e, "day")
    if w == "tonight":
        c.cls = "clock"
        c.clock = Clock(None, 0, 0, "hour", "tonight")
        return attach_clock_to_day(c, d, ctx)
    return c


@rule(r"\bthe\s+(?P<rel>next|following|previous|preceding)\s+day\b"
      r"|\bthe\s+day\s+(?P<ba>before|after)(?=\s*(?:[.,;:!?)]|$))", _I, lead="t", words="the",
      exact="day")
def day_next_to(m, ctx):
    """the next day, the following day, the previous day; "the day before" / "the day after"
    ending a clause: the day after / before the reference — tomorrow or yesterday against
    ``now``, the day after the date before it in a narrative (``ce.ground``)."""
    w = (m.group("rel") or m.group("ba")).lower()
    d = ctx.today + timedelta(days=1 if w in ("next", "following", "after") else -1)
    s, e = P.day_span(d.year, d.month, d.day, ctx.tz)
    return cal(m.start(), m.end(), s, e, "day")


@rule(r"\b(?:right\s+now|now|at\s+present|at\s+the\s+moment|at\s+this\s+moment|presently|at\s+the\s+minute"
      r"|at\s+this\s+time(?!\s+(?:last|next|this|of|in|on|tomorrow|yesterday|today)\b)"
      r"|(?:at\s+)?the\s+present\s+time|current\s+date)\b"
      r"|(?:(?<=[–—-])|(?<=[–—-]\s)|(?<=\bto\s)|(?<=\btill\s)|(?<=\buntil\s))present\b"
      r"|(?:(?<=\btill\s)|(?<=\buntil\s))date\b|(?<!\bup\s)\b(?P<todate>to\s+date)\b(?!\s*\d)", _I,
      lead="rnapctd", words='now pre mom cur dat min tim',
      exact="now present presently moment current date minute time")
def now_word(m, ctx):
    """now, at present, presently, at the minute, at this time (not "at this time last
    year"), the present time, current date; "present" as a range's
    end ("2017–present"); "till date"; "to date" (up to now; not "up to date")."""
    s = P.floor(ctx.now, "second")
    if m.group("todate"):  # "the best to date": up to now; "from 2010 to date", "2023 to date": a range's end
        if _FROM_BEFORE.search(m.string, max(0, m.start() - 40), m.start()) or _DIGIT_BEFORE.search(
                m.string, max(0, m.start() - 4), m.start()):
            return Cand(m.end() - 4, m.end(), s, P.shift(s, "second", 1), "second", "point", "now")
        c = Cand(m.start(), m.end(), None, ctx.now, "second", "span", "span")
        c.role, c.inner, c.fzpart = "until", (s, P.shift(s, "second", 1)), "now"
        return c
    return Cand(m.start(), m.end(), s, P.shift(s, "second", 1), "second", "point", "now")


@rule(r"\b(?:the\s+)?(?P<rel>last|this|next|previous|prev|coming|current|past|following"
      r"|upcoming)\s+(?:calendar\s+)?(?P<u>week|month|quarter|year|decade|weekend|century|fortnight"
      r"|work(?:ing)?\s*week|hour|minute)\b"
      r"|\bthe\s+(?P<u2>week|month|quarter|year)\s+(?P<ba>before\s+last|after\s+next)\b"
      r"|\b(?:the\s+)?(?P<we>weekend)\b(?!s)", _I,
      lead="tlnpcfuw",
      words="las thi nex pre com cur pas fol upc wee",
      exact="week month quarter year decade weekend century fortnight weeks months quarters years workweek "
      "working work hour minute")

def relative_unit(m, ctx):
    """last week / this month / next quarter / last decade (calendar units); "past week"
    is a rolling range ending now; "the year before last"."""
    if m.group("we"):
        u, off = "weekend", 0  # "the weekend", "weekend": this one
    elif m.group("u2"):
        u = m.group("u2").lower()
        off = -2 if m.group("ba").lower().startswith("before") else 2
    else:
        u = " ".join(m.group("u").lower().split())
        rel = m.group("rel").lower()
        if u.startswith("work"):  # the working week: Monday to Friday
            mon = P.iso_week_start(ctx.today) + timedelta(days=7 * _REL.get(rel, 0))
            s, e = P.day_span(mon.year, mon.month, mon.day, ctx.tz, 5)
            return cal(m.start(), m.end(), s, e, "day")
        if u == "fortnight":
            if rel in ("this", "current"):
                return None
            return amount_cand(m.start(), m.end(), 2, "week", ctx, "past" if _REL[rel] < 0 else "future")
        if u in ("hour", "minute"):
            # "the last hour", "next minute": the rolling hour or minute before / after now;
            # not "this hour", nor the idiom "(at) the last minute"
            if rel in ("this", "current") or (u == "minute" and rel == "last" and (
                    m.group(0)[:3].lower() == "the" or _THE_BEFORE.search(m.string, max(0, m.start() - 5), m.start()))):
                return None
            return amount_cand(m.start(), m.end(), 1, u, ctx, "past" if _REL[rel] < 0 else "future")
        if rel == "past":
            if u in ("weekend", "century"):
                return None
            return amount_cand(m.start(), m.end(), 1, u, ctx, "past")
        off = _REL[rel]
    tz = ctx.tz
    if u == "weekend":
        sat = P.iso_week_start(ctx.today) + timedelta(days=5 + 7 * off)
        s, e = P.day_span(sat.year, sat.month, sat.day, tz, 2)
        c = cal(m.start(), m.end(), s, e, "day")
        if m.group("we"):
            c.role = "weekend"  # "labor day weekend", "the weekend of halloween": that holiday's
        return c
    if u == "century":
        y0 = ctx.year - ctx.year % 100 + 100 * off
        s, e = P.month_span(y0, 1, tz, 1200)
        return cal(m.start(), m.end(), s, e, "year")
    s0, _ = ctx.period(u)
    s, e = P.period(P.shift(s0, u, off), u)
    return cal(m.start(), m.end(), s, e, u)


@rule(rf"\b(?:(?P<rel>last|this|next|coming|past|previous)\s+|on\s+)?{_WD}(?![a-z])", _I,
      lead="ltncpomwfs", words='mon tue wed thu fri sat sun', exact=WEEKDAY_TOKENS)
def weekday(m, ctx):
    """Monday = this ISO week's Monday; this Monday likewise; last Monday = the most
    recent Monday before today; next Monday = the first Monday after today."""
    tok = m.group("wd").rstrip(".")
    rel = (m.group("rel") or "").lower()
    if len(tok) <= 4 and not tok[0].isupper() and not rel:
        return None  # "sun", "wed" ... as plain words
    if not rel and _is_name(m, "wd"):
        return None  # "Sun Yang", "Sun Microsystems"
    wd = _WEEKDAYS[tok[:3].lower()]
    today = ctx.today
    if rel in ("last", "past", "previous"):
        back = (today.weekday() - wd) % 7 or 7
        d = today - timedelta(days=back)
    elif rel in ("next", "coming"):
        fwd = (wd - today.weekday()) % 7 or 7
        d = today + timedelta(days=fwd)
    else:
        d = P.iso_week_start(today) + timedelta(days=wd)
    s, e = P.day_span(d.year, d.month, d.day, ctx.tz)
    c = cal(m.start(), m.end(), s, e, "day")
    c.role = "weekday"  # a date written next to it wins (compose._weekdays)
    c.lend = "wk" if rel else "wd"  # in a range, a bare weekday takes the other side's week
    return c


@rule(rf"\b(?P<rel>last|this|next)\s+{_MON}(?![a-z])", _I,
      lead="ltn", words='jan feb mar apr may jun jul aug sep oct nov dec', exact=MONTH_TOKENS,
      need=rf"\s(?<=last\s|this\s|next\s)\s*(?:{_MON3})")
def relative_month_name(m, ctx):
    """last March = the most recent March before this month; next March = the first one
    after it; this March = the current year's."""
    if m.group("mon") == "may":
        return None  # "this may take longer": the verb
    mo = _month(m)
    rel = m.group("rel").lower()
    y = ctx.year
    if rel == "last" and mo >= ctx.month:
        y -= 1
    elif rel == "next" and mo <= ctx.month:
        y += 1
    s, e = P.month_span(y, mo, ctx.tz)
    return cal(m.start(), m.end(), s, e, "month")


_YEAR_REF = r"(?:\s+(?:of\s+)?(?:(?P<y>\d{4})\b|(?P<ry>this|last|next|the)\s+year\b))?"


def _year_ref(m, ctx):
    if m.group("y"):
        return int(m.group("y")), True
    ry = m.group("ry")
    if ry and ry.lower() != "the":
        return ctx.year + RELATIVE_YEAR[ry.lower()], True
    return ctx.year, False


@rule(r"\b(?P<the>the\s+)?(?P<ord>first|second|third|fourth|last|1st|2nd|3rd|4th)\s+quarter"
      + _YEAR_REF, _I, lead="tfsl1234", words='qua')
def quarter_words(m, ctx):
    ord_ = m.group("ord").lower()
    if ord_ == "last" and not (m.group("the") or m.group("y") or m.group("ry")):
        return None  # "last quarter" is the previous quarter (relative_unit)
    q = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4,
         "4th": 4, "last": 4}[ord_]
    y, written = _year_ref(m, ctx)
    tz = ctx.tz
    s, e = P.month_span(y, 3 * q - 2, tz, 3)
    rb = None if written else (lambda yy, mm: P.month_span(yy, 3 * q - 2, tz, 3))
    return cal(m.start(), m.end(), s, e, "quarter", rb)


@rule(r"\b(?:the\s+)?(?P<ord>first|second|1st|2nd|latter|last)\s+half" + _YEAR_REF, _I,
      lead="tfsl12", words='hal')
def half_words(m, ctx):
    h = 1 if m.group("ord").lower() in ("first", "1st") else 2
    y, written = _year_ref(m, ctx)
    tz = ctx.tz
    mo = 1 if h == 1 else 7
    s, e = P.month_span(y, mo, tz, 6)
    rb = None if written else (lambda yy, mm: P.month_span(yy, mo, tz, 6))
    return cal(m.start(), m.end(), s, e, "half", rb)


@rule(r"\b(?:the\s+)?(?:week|wk)\s*(?:#|no\.?\s*|number\s+)?(?P<n>\d{1,2})\b"
      r"(?:\s*(?:of|,|in)?\s*(?P<y>\d{4})\b|\s+(?:of|in)\s+(?P<ry>this|last|next|previous)\s+year\b)?", _I,
      lead="tw", words="wee wk", chars="0123456789")

def week_number(m, ctx):
    """week 10 (2024): ISO week number."""
    n = int(m.group("n"))
    written = m.group("y") is not None or m.group("ry") is not None
    if m.group("y"):
        y = int(m.group("y"))
    elif m.group("ry"):  # "week 27 of last year"
        y = ctx.year + RELATIVE_YEAR[m.group("ry").lower()]
    else:
        y = ctx.year
    tz = ctx.tz

    def build(yy, mm=None):
        d = date.fromisocalendar(yy, n, 1)
        return P.day_span(d.year, d.month, d.day, tz, 7)
    s, e = build(y)
    return cal(m.start(), m.end(), s, e, "week", None if written else build)


@rule(r"(?:\bthe\s+)?(?:\b(?P<full>1[5-9]\d0|20\d0)(?:'?s|\s+s\b)|'(?P<yy>\d0)s|\b(?P<yy2>[2-9]0)'?s|(?:(?<=\bin\s)|(?<=\bthe\s))(?P<yy4>[2-9]0)\s+s\b"
      r"|\b(?P<word>twenties|thirties|forties|fifties|sixties|seventies|eighties|nineties))(?![a-z])", _I,
      lead=r"t'\dfsen", need="\\d'?\\s?s|ties",
      exact="s twenties thirties forties fifties sixties seventies eighties nineties")
def decade(m, ctx):
    if m.group("full"):
        y0 = int(m.group("full"))
    else:
        w = m.group("word")
        v = _DECADE_WORDS[w.lower()] if w else int(m.group("yy") or m.group("yy2") or m.group("yy4"))
        y0 = ctx.year - ctx.year % 100 + v
        if y0 > ctx.year:
            y0 -= 100
    s, e = P.month_span(y0, 1, ctx.tz, 120)
    return cal(m.start(), m.end(), s, e, "decade")


# -- clock times and parts of the day ----------------------------------------------------
def _ampm(h: int, ap: str | None) -> int:
    """The 24-hour hour of ``h`` said with "am" / "pm" (any dots and spaces: "p. m."),
    or ``h`` itself without them."""
    ap = (ap or "").lower().replace(".", "").replace(" ", "")
    if ap == "pm" and h < 12:
        return h + 12
    if ap == "am" and h == 12:
        return 0
    return h


#: am / pm as people write them: am, a.m., a. m., a m, "p . m ." (tokenised text)
_AP = r"(?:a|p)\s?\.?\s?m\b\.?"


@rule(r"(?<![\w:.])(?P<h>1[0-2]|0?\d)(?:[:.]?(?P<mi>[0-5]\d))?(?::(?P<s>[0-5]\d))?\.?\s*"
      rf"(?P<ap>{_AP})(?![a-z])"
      rf"|\b(?P<hw>one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?:(?P<ap2>{_AP})(?![a-z])|o'?clock\b)"
      r"|\b(?P<h2>1[0-2]|0?\d)\s*o'?clock\b|\b(?P<w>noon|midday|mid[\s-]?night)\b", _I,
      lead=r"\dnmotfse", need=r"(?<![a-z])[ap]\s?\.?\s?m(?![a-z])|noon|midday|mid[\s-]?night|o'?clock",
      exact="am pm m noon midday midnight mid clock oclock")
def clock(m, ctx):
    """7pm, 7:30 a.m., 1140 a.m., seven p m, 5 o'clock, noon, midnight."""
    if m.group("w"):
        w = m.group("w").lower()
        h, mi, sec, grain, part = (0 if w.endswith("night") else 12), 0, 0, "minute", None
    elif m.group("hw"):  # "seven p m"; "eight o'clock" (no am / pm: as "8 o'clock")
        h = _ampm(int(en_int(m.group("hw"))), m.group("ap2"))
        mi, sec, grain, part = 0, 0, "hour", None
    else:
        h = int(m.group("h") or m.group("h2"))
        mi = int(m.group("mi") or 0)
        sec = int(m.group("s") or 0)
        grain = "second" if m.group("s") else "minute" if m.group("mi") else "hour"
        h = _ampm(h, m.group("ap"))
        part = None
    c = clock_cand(m.start(), m.end(), h, mi, sec, grain, part)
    return c


#: the hours in words, one to twelve
_HOUR_NAMES = "one two three four five six seven eight nine ten eleven twelve"
_HOUR_W = rf"(?:1[0-2]|0?[1-9]|{_HOUR_NAMES.replace(' ', '|')})"
_MIN_W = (r"(?:[1-5]?\d|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen"
          r"|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|(?:twenty|thirty|forty|fifty)(?:[\s-](?:one|two|three|four"
          r"|five|six|seven|eight|nine))?)")
_PART_W = r"(?:in\s+the\s+(?P<part>morning|afternoon|evening)|(?P<night>at\s+night|tonight))"


_HOUR_WORD = f"(?:{_HOUR_NAMES.replace(' ', '|')})"
_MIN_WORD = (r"(?:o[\s-](?:one|two|three|four|five|six|seven|eight|nine)|ten|eleven|twelve|thirteen|fourteen"
             r"|fifteen|sixteen|seventeen|eighteen|nineteen"
             r"|(?:twenty|thirty|forty|fifty)(?:[\s-](?:one|two|three|four|five|six|seven|eight|nine))?)")
_AMPM_W = r"(?P<ap>a\.?\s?m\.?|p\.?\s?m\.?)(?![a-z])"


@rule(rf"\b(?:(?P<pre>at|from|to|until|till|by|around|about|between|and)\s+)?(?P<h>{_HOUR_WORD})[\s-](?P<mi>{_MIN_WORD})\b"
      rf"(?:\s*{_AMPM_W}|\s+{_PART_W})?", _I,
      lead="aftubotsefn", words="one two thr fou fiv six sev eig nin ten ele twe",
      exact=_HOUR_NAMES + "|o ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty")
def clock_hour_minute_words(m, ctx):
    """nine thirty, at five-fifteen, one thirty p m, three o five in the afternoon: a clock
    time in words. Without am / pm or a part of the day it needs a word that introduces
    times before it (at, from, to, until, by, around) or a day next to it."""
    part = (m.group("part") or ("night" if m.group("night") else "")).lower() or None
    weak = not (m.group("pre") or m.group("ap") or part)  # kept only next to a day ("five-thirty tomorrow")
    words = m.group("mi").lower().replace("-", " ").split()
    h, mi = en_int(m.group("h")), en_int(words[-1] if words[0] == "o" else " ".join(words))
    if h is None or mi is None or not 0 < mi < 60:
        return None
    h = _with_part(_ampm(int(h), m.group("ap")), part)
    return clock_cand(m.start("h"), m.end(), h, int(mi), 0, "minute", cls="weakclock" if weak else "clock")


def _with_part(h: int, part: str | None) -> int:
    """The hour of a clock said with its part of the day: 7 in the evening = 19."""
    if part in ("afternoon", "evening", "night") and h < 12 and not (part == "night" and h < 5):
        return h + 12
    if part == "morning" and h == 12:
        return 0
    return h


@rule(rf"\b(?P<fr>half|(?:a\s+)?quarter|{_MIN_W})\s*(?:min(?:ute)?s?\s+)?(?P<rel>past|to)\s+"
      rf"(?P<h>{_HOUR_W})\b(?:\s*o'?clock)?(?:\s+{_PART_W}|\s*(?P<ap>a\.?m\.?|p\.?m\.?)(?![a-z]))?", _I,
      lead=r"hqa\dotfsenw", words="hal qua pas to",
      need=r"\b(?:past|to)\s+(?:1[0-2]|0?[1-9]|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b")
def clock_words(m, ctx):
    """half past seven, quarter to nine, 20 min past eight in the evening, ten to five pm."""
    fr = m.group("fr").lower()
    mins = 30 if fr == "half" else 15 if fr.endswith("quarter") else en_int(fr)
    h = en_int(m.group("h"))
    if mins is None or h is None or not 0 < mins < 60:
        return None
    h = int(h)
    if m.group("rel").lower() == "to" and mins <= 12 and "min" not in m.group(0).lower() and fr != "half":
        if not fr.endswith("quarter"):
            return None  # "five to seven", "5 to 7": a range of hours, not 6:55
    if m.group("rel").lower() == "to":
        h, mins = (h - 1) % 12 or 12, 60 - mins
    part = (m.group("part") or ("night" if m.group("night") else "")).lower() or None
    h = _with_part(_ampm(h, m.group("ap")), part)
    c = clock_cand(m.start(), m.end(), h, int(mins), 0, "minute")
    return c


@rule(rf"(?<!\d[.,])\b(?P<h>{_HOUR_W})(?::(?P<mi>[0-5]\d))?(?:\s*o'?clock)?\s+{_PART_W}"
      rf"|\bin\s+the\s+(?P<part2>morning|afternoon|evening)\s+at\s+(?P<h2>{_HOUR_W})(?::(?P<mi2>[0-5]\d))?\b"
      rf"|\b(?P<h3>1[0-2]|0?[1-9]|noon)ish\b", _I,
      lead=r"\dotfsenwi", words="mor aft eve nig ton noo ish",
      exact="morning afternoon evening night tonight ish noonish")
def clock_with_part(m, ctx):
    """7 in the evening, 3 in the morning, 11 at night, in the afternoon at 7, 11ish, noonish."""
    if m.group("h3"):
        w = m.group("h3").lower()
        h, mi, part, fuzzy = (12 if w == "noon" else int(w)), 0, None, True
    else:
        raw = m.group("h") or m.group("h2")
        h = en_int(raw)
        if h is None:
            return None
        h, fuzzy = int(h), False
        mi = int(m.group("mi") or m.group("mi2") or 0)
        part = (m.group("part") or m.group("part2") or ("night" if m.group("night") else "")).lower()
        h = _with_part(h, part)
    grain = "minute" if mi else "hour"
    c = clock_cand(m.start(), m.end(), h, mi, 0, grain, fuzzy=fuzzy)
    c.role = "range start"  # said with its part of the day: a time, whatever word precedes
    return c


@rule(r"(?<=\bat\s)(?P<ha>1[0-2]|0?\d)(?P<ap>[ap])(?![\w])"
      r"|(?:(?<=\bat\s)|(?<=\baround\s)|(?<=\babout\s))(?P<h>1[0-2]|0?[1-9])(?![\w:/-]|[.,]\d|\s*(?:%|percent|per\b"
      r"|of\b|times\b|people|persons|points?\b|goals?\b|games?\b|percent|dollars?|euros?|[a-z]+s\s+(?:ago|old)\b"
      r"|(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|yrs?)\b))",
      _I, lead=r"\d", words="at aro abo", exact="at around about", need=r"\b(?:at|around|about)\s\d")
def hour_after_at(m, ctx):
    """"at 7", "around 7": a bare hour, kept only next to a day or a part of the day
    ("tonight around 7", "Sat at 5", "at 7 this evening"): a weak clock; "at 9a", "at 7p":
    a clock time."""
    if m.group("ha"):
        return clock_cand(m.start(), m.end(), _ampm(int(m.group("ha")), m.group("ap") + "m"), 0, 0, "hour")
    return clock_cand(m.start(), m.end(), int(m.group("h")), 0, 0, "hour", cls="weakclock")


@rule(r"(?:(?<=\d[ap]m-)|(?<=\d[ap]m–)|(?<=\d[ap]m\s-\s)|(?<=\d[ap]m\s–\s)|(?<=\d[ap]m\sto\s))"
      r"(?P<h>1[0-2]|0?[1-9])(?![\w:./]|\s*(?:[ap]\.?m\b|o'?clock|%))", _I, lead=r"\d", words="am pm",
      exact="am pm")
def hour_after_clock_range(m, ctx):
    """"8am-3", "10am to 2": the bare end of a range whose start says am / pm, a clock of
    that hour (the range's composition puts it after the start: 3 = 15:00)."""
    return clock_cand(m.start(), m.end(), int(m.group("h")), 0, 0, "hour")


@rule(r"(?:(?<=\bat\s)|(?<![\w.])(?=(?:[01]?\d|2[0-3])\.[0-5]\d\s*[-–]\s*(?:[01]?\d|2[0-3])[.:][0-5]\d\s*[ap]\.?m\b))"
      r"(?P<h>[01]?\d|2[0-3])\.(?P<mi>[0-5]\d)(?![\d.]\d|\s*(?:%|percent|per\s+cent|x\b|times\b))",
      _I, lead=r"\d", shapes="9.9")
def dotted_clock(m, ctx):
    """at 6.45, at 14.30: a clock time written with a dot, after "at", or first in a range
    of clock times that ends with am / pm ("9.30-4.30pm")."""
    c = clock_cand(m.start(), m.end(), int(m.group("h")), int(m.group("mi")), 0, "minute")
    return c


@rule(r"(?:\b(?P<pre>from|between)\s+)?(?<![\w:./-])(?P<h1>1[0-2]|0?\d)(?::(?P<m1>[0-5]\d))?\s*"
      r"(?P<w>-|–|to|and)\s*(?P<h2>1[0-2]|0?\d)(?::(?P<m2>[0-5]\d))?"
      r"(?![\w:/-]|\.\d|\s*(?:[ap]\.?m\b|o'?clock|in\s+the\s+(?:morning|afternoon|evening)|%|percent\b"
      r"|(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|yrs?|times|people"
      r"|points?|goals?|games?|wins?|losses)\b))", _I, lead=r"\dfb", shapes="9~9",
      need=r"\d(?::[0-5]\d)?\s*(?:-|–|to|and)\s*\d")
def hour_range(m, ctx):
    """"3-8", "from 10-4", "between 3 and 5": hours without am / pm, which count only next
    to a day ("Monday 3-8", "between 3 and 5 on 1/1/2015": compose); the second hour is in
    the afternoon when it would come before the first ("11-4" = 11:00–16:00)."""
    return _hours_cand(m, int(m.group("h1")), int(m.group("m1") or 0), int(m.group("h2")), int(m.group("m2") or 0))


@rule(rf"\b(?:(?P<pre>from|between)\s+)?(?P<h1>{_HOUR_WORD})\s*(?P<w>-|–|to|and|till|until)\s*(?P<h2>{_HOUR_WORD})"
      r"(?=\s+(?:today|tonight|tomorrow|yesterday|this\s+(?:morning|afternoon|evening)"
      r"|(?:on\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b)", _I,
      lead="oftsenwb",
      # an hour word, and the day's word ("this morning": morning; "on Monday": monday)
      exact=_HOUR_NAMES + "|today tonight tomorrow yesterday morning afternoon evening " + WEEKDAY_TOKENS,
      need=rf"{_HOUR_WORD}\s*(?:-|–|to|and|till|until)\s*{_HOUR_WORD}")
def hour_range_words(m, ctx):
    """"five to seven today", "from nine till eleven on Monday": :func:`hour_range` with
    hours in words, only right before a day (in words a range of hours is otherwise a range
    of anything: "two to three of them"); the same hour twice is not a range ("one to one")."""
    h1, h2 = en_int(m.group("h1")), en_int(m.group("h2"))
    if h1 is None or h2 is None or h1 == h2:
        return None
    return _hours_cand(m, int(h1), 0, int(h2), 0)


def _hours_cand(m, h1: int, m1: int, h2: int, m2: int) -> Cand | None:
    """The hours of a range rule's match ("and" only after "between"), until compose finds
    their day (or, said with "from" / "between" and minutes, takes today)."""
    w, between = m.group("w").lower(), (m.group("pre") or "").lower().startswith("between")
    if (w == "and" and not between) or (between and w not in ("and", "to")):
        return None  # "3 and 5", "between 9-6" are no range of hours ("between 3 and 5", "between 9 to 10:30" are)
    if (h2, m2) <= (h1, m1):
        h2 += 12
    if h2 > 24 or (h2, m2) <= (h1, m1):
        return None
    c = Cand(m.start(), m.end(), None, None, "minute" if (m1 or m2) else "hour", "point", "hours")
    c.inner = (h1, m1, h2, m2)  # the hours, until compose finds their day
    return c


_FOR_U = r"hours?|hrs?|minutes?|mins?"


# a bare hour only: a clock time ("from 9:30am for 7 hours") is put on its day by compose
@rule(rf"\b(?:from|starting\s+at)\s+(?P<h>[01]?\d|2[0-3])\s+for\s+(?P<n>{EN_NUM})\s+(?P<u>{_FOR_U})\b"
      rf"|\bfor\s+(?P<n2>{EN_NUM})\s+(?P<u2>{_FOR_U})\s+(?:from|starting\s+at)\s+"
      rf"(?P<h2>[01]?\d|2[0-3])(?![\w:/.-]|\s*{_AP})", _I,
      lead="fs", words="hou hr hrs min", exact="for|from starting")
def clock_for_amount(m, ctx):
    """"from 9 for 2.5 hrs", "for 2.5 hours from 9": a bare hour, today, for that long."""
    h = int(m.group("h") or m.group("h2"))
    n = en_int(m.group("n") or m.group("n2"))
    if not n or n > 24:
        return None
    u = (m.group("u") or m.group("u2")).lower()
    minutes = n * (1 if u.startswith("m") else 60)
    s, _ = P.day_span(ctx.today.year, ctx.today.month, ctx.today.day, ctx.tz)
    start = clock_on_day(s, h, 0, 0)
    return range_cand(m.start(), m.end(), start, start + timedelta(minutes=minutes), "minute")


@rule(r"\b(?:from|between)\s+(?P<h1>[01]\d|2[0-3])(?P<m1>[0-5]\d)\s*(?:-|–|to|and|until|till)\s*"
      r"(?P<h2>[01]\d|2[0-3])(?P<m2>[0-5]\d)(?![\w:./-])", _I, lead="fb", words="fro bet", exact="from between",
      shapes="9~9", need=r"\d{4}\s*(?:-|–|to|and|until|till)\s*\d{4}")
def military_range(m, ctx):
    """between 0730-0930, from 0900 to 1630: a range of 24-hour clock times written in four
    digits (one with a leading zero: "between 2010-2015" are years), on today; an end not
    after the start is taken in the afternoon, else the next day."""
    if not (m.group("h1").startswith("0") or m.group("h2").startswith("0")):
        return None  # "between 2010-2015", "from 1400 to 1630": years
    h1, m1, h2, m2 = (int(m.group(g)) for g in ("h1", "m1", "h2", "m2"))
    ds = P.day_span(ctx.today.year, ctx.today.month, ctx.today.day, ctx.tz)[0]
    s = ds.replace(hour=h1, minute=m1)
    e = ds.replace(hour=h2, minute=m2)
    if e <= s:
        e = P.shift(e, "hour", 12) if h2 < 12 and P.shift(e, "hour", 12) > s else P.shift(e, "day", 1)
    return range_cand(m.start(), m.end(), s, e, "minute")


@rule(r"(?<![\w:.])(?P<h>1[0-2]|0?\d)(?::(?P<mi>[0-5]\d))?(?=\s*(?:-|–|to|until|till|and)\s*"
      rf"(?P<h2>{_HOUR_W})(?::[0-5]\d)?\s*(?:(?P<ap>a\.?m\.?|p\.?m\.?)(?![a-z])"
      r"|(?:o'?clock\s+)?in\s+the\s+(?P<part>morning|afternoon|evening)))", _I, lead=r"\d",
      need=_AMPM_NEED + r"|morning|afternoon|evening", exact="am pm m morning afternoon evening")
def clock_range_start(m, ctx):
    """The bare first hour of "5 to 6pm", "1-3 pm", "between 3 and 8am": the half of the
    day of the second, or the other half when it would come after it ("11-1pm" = 11am)."""
    h, h2 = int(m.group("h")), en_int(m.group("h2"))
    if h2 is None:
        return None
    h2 = int(h2)
    pm = m.group("ap")[0].lower() == "p" if m.group("ap") else m.group("part").lower() != "morning"
    hh, h2h = h % 12, h2 % 12
    same = hh < h2h or h2 == 12 and h < 12 and not pm
    if pm == same:
        h = hh + 12
    else:
        h = hh
    grain = "minute" if m.group("mi") else "hour"
    c = clock_cand(m.start(), m.end(), h, int(m.group("mi") or 0), 0, grain)
    c.role = "range start"
    return c


@rule(r"\b(?P<f>early|earlier|mid|late|later)[\s-]+(?:in\s+)?(?P<rel>yesterday|tomorrow|today)\b"
      r"(?!\s*,?\s*(?:at|@|around|about|by|from|between|before|after|\d))", _I,
      lead="eml", words="ear mid lat", exact="early earlier mid late later|today tomorrow yesterday")
def day_edge(m, ctx):
    """later today, early tomorrow, mid today: the first half of the day (0-12), its middle
    (11-13) or its second half (12-24); fuzzy. With a clock after it ("later today at 5pm")
    the day takes the clock instead."""
    f = m.group("f").lower()
    h0, h1 = (0, 12) if f.startswith("early") else (11, 13) if f == "mid" else (12, 24)
    ds = day_at(ctx.today + timedelta(days=_DAYWORD[m.group("rel").lower()]), ctx.tz)
    return Cand(m.start(), m.end(), clock_on_day(ds, h0, 0, 0), clock_on_day(ds, h1, 0, 0), "hour", "point",
                "cal", None, True)


@rule(r"\b(?P<rel>yesterday|tomorrow|today)\s+(?P<ap>[ap])\.?m\b\.?", _I, lead="ty", words="yes tom tod",
      exact="am pm")
def day_half(m, ctx):
    """today pm, tomorrow am: that day's afternoon / morning."""
    p = "afternoon" if m.group("ap").lower() == "p" else "morning"
    c = clock_cand(m.start(), m.end(), None, 0, 0, "hour", p, cls="weakclock", fuzzy=True)
    return attach_clock_to_day(c, ctx.today + timedelta(days=_DAYWORD[m.group("rel").lower()]), ctx)


_MEAL_PREP = re.compile(r"\b(?:at|before|after|around|during|over|until|till|by)\s+$", _I)


@rule(r"(?<!\bgood\s)\b(?:(?P<m1>early|late|earlier|later)\s+(?:in\s+(?=this\s|the\s))?)?"
      r"(?:(?P<rel>this|yesterday|tomorrow|today|last|next)\s+)?(?:(?P<m2>early|late)\s+)?"
      r"(?:in\s+the\s+|the\s+)?(?P<p>morning|afternoon|evening|night|lunch|day(?=time))(?:s|\s*time)?\b", _I,
      lead="tydlimaenel", words='mor aft eve nig lun day',
      exact="morning mornings afternoon afternoons evening evenings night nights lunch lunchtime daytime")
def day_part(m, ctx):
    """this evening, tomorrow morning, next evening (tomorrow's), last night, last morning
    (yesterday's), lunchtime (11:00-13:00); alone, a part is today's, and a query's intent
    and the grounding leave it out (compose). "early" / "late" (or "earlier" / "later")
    take the first / second half of the part's hours: early morning 6-9, later this
    afternoon 15-18. "good morning" is a greeting."""
    rel = (m.group("rel") or "").lower()
    p = m.group("p").lower()
    if p == "day":
        p = "daytime"  # 6-18: the morning and the afternoon
    elif p == "lunch":
        if not (m.group().lower().endswith("time") or _MEAL_PREP.search(m.string, max(0, m.start() - 8), m.start())):
            return None  # "we will have lunch": the meal
        p = "noon"
    else:
        mod = (m.group("m1") or m.group("m2") or "").lower()
        if mod and p != "daytime":
            p = ("early " if mod.startswith("early") else "late ") + p
    c = clock_cand(m.start(), m.end(), None, 0, 0, "hour", p, cls="weakclock", fuzzy=True)
    if rel:
        off = {"this": 0, "today": 0, "yesterday": -1, "tomorrow": 1, "last": -1, "next": 1}[rel]
        return attach_clock_to_day(c, ctx.today + timedelta(days=off), ctx)
    return c


# -- durations and rolling ranges ---------------------------------------------------------
_OF_AFTER = re.compile(r"\s+(?:of|in)\s+(?:the\s+)?(?:this|next|last|previous|\d{4}|" + MON_WORDS.replace(" ", "|")
                       + r")", _I)


@rule(rf"\b(?:(?:in|during|over|for|within|from)\s+)?(?:the\s+)?"
      rf"(?:(?P<dir>past|last|previous|prior|recent|next|coming|following|upcoming)\s+"
      rf"(?P<n>{EN_NUM})|(?P<n2>{EN_NUM})\s+(?P<dir2>past|last|previous|prior|recent|next|coming|following"
      rf"|upcoming))\s+{_UNIT}\b", _I,
      lead="cdfilnoprtuw",
      words="pas las pre pri rec nex com fol upc", need=_AMOUNT,
      exact="past last previous prior recent next coming following upcoming|" + UNIT_TOKENS)

def rolling(m, ctx):
    """past 90 days / last 2 months / the next 3 weeks / the 5 upcoming years: a rolling
    range from or to now."""
    raw = m.group("n") or m.group("n2")
    n = en_int(raw)
    if n is None or _OF_AFTER.match(m.string, m.end()):
        return None  # "the last 3 weeks of this year": a part of that year (sub_span)
    d = (m.group("dir") or m.group("dir2")).lower()
    if d == "last" and m.start("dir") == m.start() and _VERB_BEFORE.search(m.string, max(0, m.start() - 12), m.start()):
        return None  # "it did not last two hours": the verb (the amount is a duration)
    past = d in ("past", "last", "previous", "prior", "recent")
    fuzzy = raw.lower().strip() in FUZZY_EN
    u = _unit(m.group("u"))
    if u == "fortnight":
        u, n = "week", 2 * n
    return amount_cand(m.start(), m.end(), n, u, ctx,
                       "past" if past else "future", fuzzy)


#: a unit written right after digits: 3h, 1d, 2w, 3.5years
_UNIT_ATTACHED = (r"(?P<ua>seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|d|weeks?|wks?|w"
                  r"|months?|years?|yrs?|y)")


@rule(rf"\b(?:(?P<within>within)\s+(?:the\s+)?|(?P<in>in)\s+|for\s+)?(?P<n>{EN_NUM})"
      rf"(?:\s+{_UNIT}|(?<=\d){_UNIT_ATTACHED})\b(?P<half>\s+and\s+(?:a\s+)?half\b)?"
      r"(?:\s*(?P<dir>ago|before\s+now|back|from\s+now|later|hence|from\s+today|'?\s*time))?",
      _I, lead=r"aefhinostwcz\d",
      words=_UNIT_WORDS, need=_AMOUNT, exact=UNIT_TOKENS)

def amount(m, ctx):
    """3 days ago / in 2 weeks / 2 weeks from now / within 3 days / (for) 15 days."""
    raw = m.group("n")
    n = en_int(raw)
    if n is None:
        return None
    if m.group("half"):
        n += 0.5  # "one hour and a half"
    ua = m.group("ua")
    u = _unit(m.group("u")) if ua is None else _ATTACHED.get(ua.lower()) or _unit(ua)
    if u == "fortnight":
        u, n = "week", 2 * n
    d = (m.group("dir") or "").lower()
    b, e = m.start(), m.end()
    if d.endswith("time") and "'" not in d and not m.group("in"):
        # "a second time", "one second time difference": no "in" and no apostrophe, so not
        # "(in) two weeks' time": the amount alone
        d, e = "", m.start("dir")
        while m.string[e - 1].isspace():
            e -= 1
    if (u == "second" and raw.lower() in ("a", "an") and not (d or m.group("within") or m.group("in")
            or m.group(0)[:3].lower() == "for") and _NOUN_AFTER.match(m.string, e)):
        return None  # "a second round", "a second wave": the ordinal
    if ua is not None and ua.lower() in _ATTACHED and not (
            d or m.group("within") or m.group("in") or m.group(0)[:3].lower() == "for"):
        return None  # "3d model", "room 3h": a one-letter unit needs for / in / ago
    fuzzy = raw.lower().strip() in FUZZY_EN
    if d in ("ago", "before now", "back"):
        if m.group("in") or m.group("within"):
            b = m.start("n")
        return amount_cand(b, e, n, u, ctx, "ago", fuzzy)
    if d in ("from today", "from now") and m.group(0)[:3].lower() == "for":
        # "for 3 days from today": that long, starting today (now)
        t0 = ctx.now if d == "from now" else P.day_span(ctx.today.year, ctx.today.month, ctx.today.day, ctx.tz)[0]
        k, uu = P.whole_amount(n, u)
        return range_cand(b, e, t0, P.shift(t0, uu, k), u if d == "from now" else "day")
    if d and d != "":
        if d.endswith("time"):
            d = "later"
        return amount_cand(b, e, n, u, ctx, "later", fuzzy)
    if m.group("within"):
        # "within 3 days": the last three, unless the clause speaks of the future ("I'll be
        # back within 5 minutes")
        return amount_cand(b, e, n, u, ctx, "future" if future_said(m.string, b) else "past", fuzzy)
    if m.group("in"):
        return amount_cand(b, e, n, u, ctx, "later", fuzzy)
    return amount_cand(b, e, n, u, ctx, "dur", fuzzy)


@rule(rf"\b(?:(?P<all>all|another)\s+(?P<u1>day|week|month|year)(?!\s*(?:-|of\b|'))"
      rf"|(?P<n>{EN_NUM}|some)\s+(?P<u2>nights?|weekends?)|some\s+(?P<u3>days|weeks|months|years))\b", _I,
      lead=r"aefhinostwcz\d", words="all ano nig wee som", exact="night nights weekend weekends day week month "
      "year days weeks months years")
def duration_words(m, ctx):
    """all day, another week, two nights (a night counts a day), three weekends (two days
    each), some days (about three): how long, without a position."""
    if m.group("u1"):
        return amount_cand(m.start(), m.end(), 1, m.group("u1").lower(), ctx, "dur")
    if m.group("u3"):
        return amount_cand(m.start(), m.end(), 3, _unit(m.group("u3")), ctx, "dur", True)
    raw = m.group("n").lower()
    n = 3 if raw == "some" else en_int(raw)
    if n is None:
        return None
    per = 2 if m.group("u2").lower().startswith("weekend") else 1
    return amount_cand(m.start(), m.end(), n * per, "day", ctx, "dur", raw in FUZZY_EN or raw == "some")


@rule(rf"\b(?:the\s+)?end\s+of\s+(?:the\s+)?(?:(?P<dw>day|today|tomorrow|yesterday)\b"
      rf"|(?:(?P<rel>this|next|last)\s+)?{_WD}(?![a-z]))|\b(?:the\s+)?(?P<eod>eod|EOD)\b", _I,
      lead="te", words="end eod", exact="end eod")
def end_of_day(m, ctx):
    """end of day, EOD, end of tomorrow, end of this sunday: the day's last second."""
    today = ctx.today
    if m.group("wd"):
        wd = _WEEKDAYS[m.group("wd").rstrip(".")[:3].lower()]
        rel = (m.group("rel") or "").lower()
        d = P.iso_week_start(today) + timedelta(days=wd + {"next": 7, "last": -7}.get(rel, 0))
    else:
        d = today + timedelta(days=_DAYWORD.get((m.group("dw") or "").lower(), 0))
    _, e = P.day_span(d.year, d.month, d.day, ctx.tz)
    s = P.shift(e, "second", -1)
    return cal(m.start(), m.end(), s, e, "second")


@rule(r"(?:(?<=\bof\s)|(?<=\bin\s))the\s+(?P<u>day|week|month|year)(?=\s*(?:[.,;!?]|$))", _I, lead="t",
      words="day wee mon yea", exact="day week month year")
def the_unit(m, ctx):
    """"partner of the year.", "sales in the week": the current unit, at the end of a
    clause (not "the year before", "the day he left"). Like a part of the day alone, a
    query's intent and the grounding leave it out: it rarely names a time."""
    u = m.group("u").lower()
    s, e = ctx.period(u)
    c = cal(m.start(), m.end(), s, e, u)
    c.role = "bare unit"
    return c


@rule(r"\b(?P<el>earlier|later)\s+(?:in\s+)?(?:the\s+|this\s+)(?P<u>week|month|quarter|year)\b"
      r"(?!\s+(?:before|after|of)\b)", _I, lead="el", words="ear lat", exact="earlier later")
def earlier_later(m, ctx):
    """earlier this month, later this week, earlier in the year: the part of the current
    unit before today, or after it."""
    u = m.group("u").lower()
    s0, e0 = ctx.period(u)
    day0, day1 = P.day_span(ctx.today.year, ctx.today.month, ctx.today.day, ctx.tz)
    s, e = (s0, day0) if m.group("el").lower() == "earlier" else (day1, e0)
    if not s < e:
        return None  # "earlier this week" on its Monday: nothing before today
    return Cand(m.start(), m.end(), s, e, "day", "span", "span", None, True)


@rule(r"\b(?P<f>early|mid|late|(?:the\s+)?(?:beginning|start|end|middle)\s+of)[\s-]*"
      r"(?:the\s+|this\s+)?(?P<u>month|year|quarter|week)\b(?!\s+(?:before|after))"
      r"|\b(?:the\s+)?(?P<ab>EO[YMQ])\b", _I,
      lead="emlbst",
      words="ear mid lat beg sta end eoy eom eoq")

def fuzzy_current(m, ctx):
    """end of the month / early this year / EOY: a part of the current unit."""
    if m.group("ab"):
        ab = m.group("ab").lower()
        u = {"y": "year", "m": "month", "q": "quarter"}[ab[2]]
        s0, _ = ctx.period(u)
        r = fuzzy_part(s0, u, "late")
        return None if r is None else Cand(m.start(), m.end(), r[0], r[1], r[2], "point", "cal", None, True)
    f = m.group("f").lower()
    part = ("early" if ("early" in f or "beginning" in f or "start" in f)
            else "late" if ("late" in f or "end" in f) else "mid")
    u = m.group("u").lower()
    s0, _ = ctx.period(u)
    r = fuzzy_part(s0, u, part)
    if r is None:
        return None
    c = Cand(m.start(), m.end(), r[0], r[1], r[2], "point", "cal", None, True)
    if " of" in f and u != "week":
        c.fzpart = ("edge", part, u)  # "before the end of this year": its end (compose._edge)
    return c


@rule(r"\b(?P<u>year|month|quarter|week)[\s-]to[\s-]date\b|\b(?P<ab>YTD|MTD|QTD|WTD)\b", _I,
      lead="ymqw", words='dat ytd mtd qtd wtd')
def to_date(m, ctx):
    """year-to-date / YTD: from the start of the current unit to now."""
    u = m.group("u")
    if u is None:
        u = {"y": "year", "m": "month", "q": "quarter", "w": "week"}[m.group("ab")[0].lower()]
    s, _ = P.period(ctx.now, u.lower())
    c = Cand(m.start(), m.end(), s, ctx.now, u.lower(), "span", "span")
    c.role = "since"
    return c


@rule(rf"\b(?:the\s+)?(?P<o>{_ORDINAL_RE})\s+(?:of\s+)?{_MON}(?![a-z])(?:\s*,?\s*(?P<y>\d{{4}})\b)?"
      rf"|\b{_mon_g('mon2')}\.?\s+(?:the\s+)?(?P<o2>{_ORDINAL_RE})\b"
      rf"(?:\s*,?\s*(?P<y2>\d{{4}})\b)?", _I,
      lead="tfsenmadjo", words=MON_WORDS, exact=MONTH_TOKENS + "|" + _ORDINAL_TOKENS)
def ordinal_day(m, ctx):
    """the first of March, March twenty-first 2024."""
    y = _year4(m.group("y") or m.group("y2"), ctx)
    mo = MONTHS[(m.group("mon") or m.group("mon2"))[:3].lower()]
    return _day(m, ctx, y, mo, _ordinal(m.group("o") or m.group("o2")))


_TEENS_W = "ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
_ONES_W = "one|two|three|four|five|six|seven|eight|nine"
_TENS_W = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
#: the last two digits of a year in words: eighty six, o five, fifteen, twenty
_YY_W = rf"(?:(?:{_TENS_W})(?:[\s-](?:{_ONES_W}))?|{_TEENS_W}|o[\s-](?:{_ONES_W}))"


@rule(rf"\b(?P<hi>{_TEENS_W}|twenty)\s+(?:(?P<hun>hundred)(?:\s+(?:and\s+)?(?P<lo>{_YY_W}|{_ONES_W}))?|(?P<lo2>{_YY_W}))\b"
      rf"|\btwo\s+thousand(?:\s+(?:and\s+)?(?P<lo3>{_YY_W}|{_ONES_W}))?\b"
      r"(?!\s+(?:people|persons|men|women|children|units|items|dollars|euros|pounds|years|days|times|copies"
      r"|votes|words|pages|miles|km|feet|meters|metres|tons|kilos?|of)\b)", _I,
      lead="tefsn", words="ten ele twe two thi fou fif six sev eig nin",
      exact="ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty two")
def year_words(m, ctx):
    """nineteen eighty six, seventeen hundred thirty three, two thousand and five: a year in
    words. It counts only as the year of a day or month written just before it ("October two
    thousand and five", "13 Sept nineteen seventy two": compose lends it), never alone ("two
    thousand people")."""
    def val(w):
        return 0 if w is None else en_int(w.lower().replace("o ", "").replace("o-", ""))
    if m.group("hi"):
        hi, lo = en_int(m.group("hi")), val(m.group("lo") or m.group("lo2"))
        if hi is None or lo is None or (not m.group("hun") and not m.group("lo2")):
            return None
        y = int(hi) * 100 + int(lo)
    else:
        lo = val(m.group("lo3"))
        if lo is None:
            return None
        y = 2000 + int(lo)
    if not 1000 <= y <= 2999:
        return None
    s, e = P.month_span(y, 1, ctx.tz, 12)
    c = cal(m.start(), m.end(), s, e, "year")
    c.role = "year words"
    return c


@rule(rf"\b(?:the\s+)?(?P<dw>(?:twenty|thirty)[\s-](?:one|two|three|four|five|six|seven|eight|nine)"
      rf"|twenty|thirty|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen)"
      rf"\s+(?:of\s+)?{_MON}(?![a-z])", _I,
      lead="tfsen", words=MON_WORDS, exact=MONTH_TOKENS + "|ten eleven twelve thirteen fourteen fifteen sixteen "
      "seventeen eighteen nineteen twenty thirty")
def day_words_month(m, ctx):
    """twenty five January, fifteen August: a day of the month (ten to thirty-one) in words
    before its month."""
    d = _day_word(m.group("dw"))
    if d is None:
        return None
    return _day(m, ctx, None, _month(m), d)


@rule(rf"\b(?:on\s+)?{_WD},?\s+(?:of\s+)?(?:the\s+)?(?P<rel>last|this|next|previous|coming|following)\s+week\b"
      rf"|\b(?P<rel2>last|this|next|previous|coming|following)\s+week(?:'?s|\s*[-,]?\s*(?:on\s+)?)\s*"
      rf"{_WD.replace('wd', 'wd2')}(?![a-z])", _I,
      lead="mtwfslnpco",
      words="mon tue wed thu fri sat sun", exact=WEEKDAY_TOKENS)

def weekday_of_week(m, ctx):
    """Tuesday of next week / last week's Sunday / next week on Tuesday / previous week -
    Monday: that day of that ISO week."""
    rel = (m.group("rel") or m.group("rel2")).lower()
    tok = (m.group("wd") or m.group("wd2")).rstrip(".")
    monday = P.iso_week_start(ctx.today) + timedelta(weeks=_REL[rel])
    d = monday + timedelta(days=_WEEKDAYS[tok[:3].lower()])
    s, e = P.day_span(d.year, d.month, d.day, ctx.tz)
    c = cal(m.start(), m.end(), s, e, "day")
    c.lend = "wk"  # "from Monday to Friday next week": Monday of that week (compose)
    return c


_ERA = r"(?:\s*(?:AD|A\.D\.|CE|C\.E\.))?"
_NOT_UNIT = (r"(?!\s*(?:%|percent|dollars?|usd|eur|people|persons|employees|users|units|items|pages|words"
             r"|rows|records|km|kg|miles|meters|metres|feet|times|points|votes|men|soldiers|troops)\b)")


@rule(r"\b(?P<pre>from|between)\s+(?:the\s+years?\s+)?(?P<a>1[0-4]\d\d|[1-9]\d{2}(?=\s*(?:AD|A\.D\.|CE|C\.E\.)))"
      + _ERA + r"\s*(?P<w>-|–|—|to|until|till|through|and)\s*(?P<b>[1-9]\d{2,3})" + _ERA + r"\b" + _NOT_UNIT,
      _I, lead="fb", words="fro bet", shapes="9~9")  # the shape allows the _ERA after the first year
def old_year_range(m, ctx):
    """from 1136 to 1348, between 800 AD and 900 AD: explicit ranges of years before 1500
    (a bare 1136 stays a number; bare years from 1500 on are ``formats.bare_year``). The
    second year must follow the first by at most a thousand years, and "between" needs
    "and"."""
    a, b = int(m.group("a")), int(m.group("b"))
    if not a <= b <= min(a + 1000, 2100) or (m.group("pre").lower() == "between") != (m.group("w").lower() == "and"):
        return None
    return years_cand(m.start(), m.end(), a, b, ctx.tz)


@rule(r"\bthe\s+year\s+(?P<y>[1-9]\d{2,3})" + _ERA + r"\b|\b(?P<y2>[1-9]\d{2,3})\s*(?:AD|A\.D\.|CE|C\.E\.)(?![A-Za-z])", _I,
      lead=r"t\d", need=r"\byear\s+[1-9]|\d\s*(?:ad|a\.d|ce|c\.e)(?![a-z])", exact="year ad ce d e")
def old_year(m, ctx):
    """in the year 1066, 800 AD: a year before 1500 written as a year."""
    y = int(m.group("y") or m.group("y2"))
    if y > 2100:
        return None
    s, e = P.month_span(y, 1, ctx.tz, 12)
    return cal(m.start(), m.end(), s, e, "year")


@rule(r"\b(?:in|since|until|till|during|circa|c\.|around|after|before)\s+(?P<y>1[0-4]\d\d)" + _ERA
      + r"\b(?![.,:/-]\d)" + _NOT_UNIT, _I, lead="isutdcab", words="in sin unt til dur cir c aro aft bef",
      shapes="9999", need=r"1[0-4][0-9][0-9]")  # a prefilter: literal-led, fast (lookarounds made it ~9x slower)
def old_year_after_preposition(m, ctx):
    """in 1109, since 1204, before 1453: a four-digit year before 1500 right after a
    preposition of time (the year alone is the expression; the preposition is read by the
    composer as for any year). A unit after it ("in 1200 men") keeps it a number."""
    y = int(m.group("y"))
    s, e = P.month_span(y, 1, ctx.tz, 12)
    return cal(m.start("y"), m.end(), s, e, "year")


def _holiday_pattern(names) -> str:
    """One alternation of the holiday names: possessives with or without their apostrophe
    (mother's / mothers / mother’s day), "saint" also as "st." / "st", any spaces."""
    alts = []
    for k in sorted(names, key=len, reverse=True):
        words = []
        for w in k.split():
            if w == "saint":
                words.append(r"(?:saint|st\.?)")
            elif "'" in w:
                base = w.replace("'", "")
                words.append(re.escape(base[:-1]) + "['’]?s['’]?")
            else:
                words.append(re.escape(w))
        alts.append(r"\s+".join(words))
    return "|".join(dict.fromkeys(alts))


_HOLIDAYS = {re.sub("['’]", "", k): f for k, f in HOLIDAYS_EN.items()}
#: the first words of the holiday names (and their possessives; "st" for saint): the
#: holiday rule's gate
_HOLIDAY_TOKENS = sorted({w for k in HOLIDAYS_EN for w0 in re.findall("[a-z]+", k.lower())[:1]
                          for w in (w0, w0 + "s")} | {"st"})
#: and their last words ("day", "eve", "christmas" ...; "s" of a possessive written last)
_HOLIDAY_LAST = sorted({w for k in HOLIDAYS_EN for w0 in re.findall("[a-z]+", k.lower())[-1:]
                        for w in (w0, w0 + "s")} | {"s"})


@rule(r"\b(?:(?P<rel>this|next|last|previous|following|coming)\s+)?(?P<h>" + _holiday_pattern(HOLIDAYS_EN) + r")(?![a-z])"
      r"(?:\s*,?\s*(?:of\s+)?(?P<y>\d{4})\b|\s+(?:of\s+)?(?P<ry>this|last|next)\s+year\b)?", _I,
      lead="tnlvsaemihcxbgfpdlkywj",
      words="new val sai st apr ear may ind hal vet chr xma box eas goo tha bla cyb mot fat mem lab mar mlk pre col "
            "jun int wor fre jub",
      exact=" ".join(_HOLIDAY_TOKENS) + "|" + " ".join(_HOLIDAY_LAST))
def holiday(m, ctx):
    """Christmas, Thanksgiving 2020, Easter of next year, last Independence Day: the day
    (``holidays.EN``); without a year the current year's, "last" / "next" the most recent
    one before / the first one after today."""
    name = " ".join(re.sub("['’]", "", m.group("h").lower()).replace("st. ", "saint ").split())
    name = name.replace("st patrick", "saint patrick")
    f = _HOLIDAYS.get(name)
    if f is None:
        return None
    written = m.group("y") is not None or m.group("ry") is not None
    y = int(m.group("y")) if m.group("y") else ctx.year + RELATIVE_YEAR[m.group("ry").lower()] if m.group("ry") else ctx.year
    rel = {"previous": "last", "following": "next", "coming": "next"}.get((m.group("rel") or "").lower(),
                                                                         (m.group("rel") or "").lower())
    try:
        d = f(y)
        if rel == "last" and not written:
            d = d if d < ctx.today else f(y - 1)
        elif rel == "next" and not written:
            d = d if d > ctx.today else f(y + 1)
    except ValueError:
        return None
    tz = ctx.tz
    s, e = P.day_span(d.year, d.month, d.day, tz)
    rb = None if (written or rel in ("last", "next")) else (lambda yy, mm: P.day_span(*_ymd(f(yy)), tz))
    c = cal(m.start(), m.end(), s, e, "day", rb)
    c.role = "holiday"
    return c


def _ymd(d: date) -> tuple[int, int, int]:
    return d.year, d.month, d.day


@rule(r"(?:(?P<pre>\b(?:on|this|next|from|to|until|till|by|between|and|or|since|before|after)\s+)"
      r"|(?<=[,(])\s*|(?<=\b(?:mon|tue|wed|thu|fri|sat|sun))\s+|(?<=day)\s+|(?<=[-–]))"
      r"(?<![\d.:/])(?P<a>\d{1,2})/(?P<b>\d{1,2})(?![\d/]|\.\d|\s+of\b|\s*(?:%|percent))", _I, lead=r"otnfubasw,(\d\s\-–",
      shapes="9/9")
def month_slash_day(m, ctx):
    """5/12 (month first; 22/04 day first when the first number exceeds 12) without a year,
    after a word that introduces a date (on, this, next, from, to, between ...), a weekday,
    a comma or a dash; with nothing before it, only a month then a day past 12 ("11/20",
    "2/29"): "3/7" and "24/7" alone stay what they are. "next 5/12" is next year's; Feb 29
    without a year is the latest leap year's."""
    a, b = int(m.group("a")), int(m.group("b"))
    mo, d = (b, a) if a > 12 else (a, b)
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    pre = (m.group("pre") or "").strip().lower()
    y = ctx.year + (1 if pre == "next" else 0)
    if (mo, d) == (2, 29):
        y = leap_year_before(y)
    tz = ctx.tz
    try:
        s, e = P.day_span(y, mo, d, tz)
    except ValueError:
        return None
    b0 = m.start() if pre in ("this", "next") else m.start("a")
    return cal(b0, m.end(), s, e, "day",  # "this 5/12" / "next 5/12" keep their year in a range
               None if pre in ("this", "next") else (lambda yy, mm: P.day_span(yy, mo, d, tz)))


_ON_BEFORE = re.compile(r"\b(?:on|week\s+of)\s+$", _I)


@rule(r"(?<=\bon\s)(?P<d>[12]?\d|3[01])(?:st|nd|rd|th)(?=\s*(?:[.,;!?)–—-]|$))", _I, lead=r"\d", words="on",
      need=r"\d(?<=on\s\d)\d?(?:st|nd|rd|th)")
def on_day_of_month(m, ctx):
    """"on 29th" at the end of a clause: that day of this month."""
    try:
        s, e = P.day_span(ctx.year, ctx.month, int(m.group("d")), ctx.tz)
    except ValueError:
        return None
    return cal(m.start(), m.end(), s, e, "day")



@rule(rf"\bthe\s+(?:(?P<d>[12]?\d|3[01])(?:st|nd|rd|th)|(?P<o>{_ORDINAL_RE})"
      rf"|(?P<dn>[12]?\d|3[01])(?=\s+(?:from|between|at)\s+\d))"
      rf"(?:\s+day)?(?:\s+(?:of\s+)?(?P<rel>this|next|last)\s+month|\s+of\s+(?:(?P<the>the)\s+month|{_MON}(?![a-z])(?:\s*,?\s*(?P<y>\d{{4}})\b)?)"
      rf"|(?=\s*(?:[.,;!?)]|$|(?:from|between|at)\s+\d)))", _I, lead="t", words="the",
      need=rf"\s(?<=the\s)\s*(?:\d|{_ORDINAL_RE})")  # a day after "the": digits or an ordinal word
def day_of_month(m, ctx):
    """on the 18th, the 15th day of next month, the twenty third day of September: a day of
    the month named (this month when none; "the 18th" alone only after "on" and at the end
    of a clause)."""
    d = int(m.group("d") or m.group("dn") or 0) or _ordinal(m.group("o") or "")
    if not d:
        return None
    tz = ctx.tz
    if m.group("mon"):
        y = _year4(m.group("y"), ctx)
        mo = _month(m)
        c = _day(m, ctx, y, mo, d)
    else:
        if m.group("rel") is None and m.group("the") is None and not _ON_BEFORE.search(
                m.string, max(0, m.start() - 12), m.start()):
            return None  # "the 21st" alone is a date only after "on"
        rel = (m.group("rel") or "this").lower()
        off = {"this": 0, "the": 0, "next": 1, "last": -1}[rel]
        y, mo = P.add_months(ctx.year, ctx.month, off)
        try:
            s, e = P.day_span(y, mo, d, tz)
        except ValueError:
            return None
        c = cal(m.start(), m.end(), s, e, "day")
    return c


@rule(r"\b(?:the\s+)?week\s+(?:beginning|starting|commencing)(?:\s+(?:on|from))?\s+(?=\S)"
      r"|\bw/c\s+(?=\S)", _I, lead="tw", words="wee w")
def week_beginning(m, ctx):
    """"the week beginning / starting / commencing X", "w/c X": a marker; compose makes the
    seven days from the day X."""
    c = Cand(m.start(), m.end(), None, None, "week", "point", "weekmark")
    return c


_SUB_ORD = {w: i for w, i in _ORDINALS.items() if i <= 12}


@rule(rf"\b(?:the\s+)?(?:(?P<fl>first|last)(?:\s+(?P<n>{EN_NUM}))?|(?P<o>\d{{1,2}})(?:st|nd|rd|th)"
      rf"|(?P<ow>{'|'.join(sorted(_SUB_ORD, key=len, reverse=True))}))\s+"
      r"(?P<u>days?|weeks?|months?|quarters?)\s+(?:of|in)\s+(?:the\s+)?(?=\S)", _I,
      lead=r"tfl\dsenf", words="fir las day wee mon qua",
      exact="day days week weeks month months quarter quarters")  # the unit: \s+ on both sides
def sub_span(m, ctx):
    """"the last 3 weeks of", "first ten days of", "the 9th month of": a marker; compose
    takes that part of the period written next (:func:`compose._sub_spans`)."""
    u = _unit(m.group("u"))
    if m.group("fl"):
        n = en_int(m.group("n")) if m.group("n") else 1
        if n is None or n != int(n) or n < 1:
            return None
        part = (m.group("fl").lower(), int(n))
    else:
        k = int(m.group("o")) if m.group("o") else _SUB_ORD[m.group("ow").lower()]
        if k < 1:
            return None
        part = ("nth", k)
    c = Cand(m.start(), m.end(), None, None, u, "point", "submark")
    c.inner = part
    return c


@rule(rf"\b(?:the\s+)?(?:(?P<n>[1-9]|1\d|2[01])(?:st|nd|rd|th)|(?P<w>{_ORDINAL_RE}))\s+century\b", _I,
      lead=r"t\dfsenf", words="cen")
def century(m, ctx):
    """the 15th century = [1400, 1500), as people count them (not from 1401)."""
    n = int(m.group("n")) if m.group("n") else _ordinal(m.group("w"))
    if n is None or not 2 <= n <= 21:
        return None
    y0 = 100 * (n - 1)
    s, e = P.month_span(y0, 1, ctx.tz, 1200)
    return cal(m.start(), m.end(), s, e, "year")


@rule(r"\bCY\s?'?(?P<y>(?:19|20)\d\d|\d\d)\b", _I, lead="c", words="cy")
def calendar_year(m, ctx):
    """CY18, CY 2018: a calendar year."""
    ys = m.group("y")
    y = int(ys) if len(ys) == 4 else year_of_two_digits(int(ys), ctx)
    s, e = P.month_span(y, 1, ctx.tz, 12)
    return cal(m.start(), m.end(), s, e, "year")


@rule(r"\b(?:the\s+)?(?:rest|remainder|remaining)\s+of\s+(?:the\s+|this\s+)?(?P<u>day|week|month|quarter|year)\b",
      _I, lead="tr", words="res rem", exact="rest remainder remaining")
def rest_of(m, ctx):
    """the rest of the week / the remainder of this year: from now to the unit's end."""
    u = m.group("u").lower()
    _, e = ctx.period(u)
    return Cand(m.start(), m.end(), ctx.now, e, "day" if u != "day" else "hour", "span", "roll",
                e - ctx.now)


@rule(rf"\b(?:{_WD}\s+)?{_MON}\s+(?P<d>[12]?\d|3[01])\s+(?P<h>[01]\d|2[0-3]):(?P<mi>[0-5]\d):(?P<s>[0-5]\d)"
      r"\s+(?P<y>\d{4})\b", _I, lead="adfjmnostw", words=MON_WORDS, shapes="9:9")
def ctime(m, ctx):
    """Wed Oct 26 15:50:06 2016: C's asctime, the Unix `date` and many logs."""
    day, _ = P.day_span(int(m.group("y")), _month(m), int(m.group("d")), ctx.tz)  # Feb 30: void
    t = clock_on_day(day, int(m.group("h")), int(m.group("mi")), int(m.group("s")))
    return Cand(m.start(), m.end(), t, P.shift(t, "second", 1), "second", "point", "cal")


@rule(r"(?<=\bfor\s)the\s+(?P<u>day|week|month|year|hour)\b(?!\s*(?:of|before|after|when|that|in|'|’)\b)",
      _I, lead="t", words="for", exact="day week month year hour")
def for_the_unit(m, ctx):
    """"blocked for the day", "away for the month": the current unit; "for the hour": an hour."""
    u = m.group("u").lower()
    if u == "hour":
        return amount_cand(m.start(), m.end(), 1, "hour", ctx, "dur")
    s, e = ctx.period(u)
    return cal(m.start(), m.end(), s, e, u)


RULES = (holiday, the_unit, day_half, day_edge, hour_after_clock_range, year_then_month, hour_range_words, fraction_amount, day_next_to, sub_span, century, month_slash_day, day_of_month, on_day_of_month, week_beginning, old_year_range, old_year, old_year_after_preposition, ordinal_day, month_name_numeric, day_range_words, day_words_month, year_words, weekday_of_week, weekday_day_of_month, month_day, month_day_words, day_month, day_range, month, relative_day,
         now_word, relative_unit, weekday, relative_month_name, quarter_words, half_words,
         week_number, decade, clock, hour_after_at, dotted_clock, clock_for_amount, military_range, hour_range, clock_words, clock_hour_minute_words, clock_with_part, clock_range_start, day_part, rolling, amount, duration_words, end_of_day, earlier_later, fuzzy_current, to_date, calendar_year, rest_of, ctime, for_the_unit)
