"""Shared machinery of the grammars: the parse context, candidate matches and rules.

A grammar (``zh``, ``en``, ``formats``) is a tuple of :class:`Rule`: a precompiled regular
expression and a small function that turns one match into a :class:`Cand` (or None when
the match does not denote a real time, e.g. 2月30日). ``parser`` runs every rule, keeps the
leftmost-longest non-overlapping candidates and hands them to ``compose`` for ranges,
bounds, fuzzy edges and clock times.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date as _date
from datetime import datetime, timedelta, timezone, tzinfo
from typing import NamedTuple

from . import periods as P
from .types import GRAINS

#: Grain name → rank, finest first.
GRAIN_ORDER = {g: i for i, g in enumerate(GRAINS)}

__all__ = [
    "GRAIN_ORDER",
    "RELATIVE_YEAR",
    "AttachedDay",
    "Cand",
    "Clock",
    "Ctx",
    "Rule",
    "amount_cand",
    "cal",
    "clock_cand",
    "future_said",
    "range_cand",
    "rule",
    "unit_point",
    "year_of_two_digits",
    "years_cand",
]


class Ctx:
    """Everything a handler needs about the moment of parsing (built once per call)."""

    __slots__ = ("now", "tz", "year", "month", "today", "_periods")

    def __init__(self, now: datetime, tz: tzinfo):
        self.now = now
        self.tz = tz
        self.year = now.year
        self.month = now.month
        self.today = now.date()
        self._periods: dict = {}

    def period(self, grain: str) -> tuple[datetime, datetime]:
        """The current unit of ``grain`` (memoised: handlers ask for it often)."""
        p = self._periods.get(grain)
        if p is None:
            p = self._periods[grain] = P.period(self.now, grain)
        return p


class Clock(NamedTuple):
    """A time of day still waiting for its day (:attr:`Cand.clock`)."""

    hour: int | None  # None: a part of the day said alone ("下午", "in the morning")
    minute: int
    second: int
    grain: str  # the grain it was written in: hour, minute or second
    part: str | None  # the part of the day it was said with (下午, "pm", "tonight"), if any


class AttachedDay(NamedTuple):
    """The day a clock was put on, and the part of the day it kept (:attr:`Cand.day`)."""

    date: _date  # the alias keeps the field's name from hiding the type
    part: str | None


class Cand:
    """A candidate match: offsets, the interval it denotes, and what composition needs.

    ``cls`` says how the candidate composes: ``cal`` (a calendar unit: a day, month,
    quarter ...), ``fz`` (a bare fuzzy edge such as 年初 or 下旬, also a calendar unit of the
    current period), ``clock`` / ``weakclock`` (a time of day still waiting for its day;
    weak ones, like a bare "3点", are dropped when no day is next to them), ``now``,
    ``roll`` (rolling range), ``ago`` (a unit found by moving from now), ``dur`` (bare
    duration) and ``span`` (composed ranges and bounds). ``rebuild(year, month)`` recomputes
    the interval of a calendar unit whose year (and month) were not written, so that a
    range can lend them ("2024年3月至5月"). ``role`` and ``inner`` record, for bounds, which
    bound it is and the interval of the unit it was built from.
    """

    __slots__ = ("b", "e", "start", "end", "grain", "kind", "dur", "fuzzy", "cls", "rebuild",
                 "role", "inner", "clock", "prio", "fzpart", "lend", "day", "floating", "joined", "amount")

    def __init__(self, b, e, start, end, grain, kind="point", cls="cal", dur=None,
                 fuzzy=False, rebuild=None, clock=None):
        self.b = b
        self.e = e
        self.start = start
        self.end = end
        self.grain = grain
        self.kind = kind
        self.cls = cls
        self.dur = dur
        self.fuzzy = fuzzy
        self.rebuild = rebuild
        self.role = None
        self.inner = None
        self.clock = clock
        self.prio = 0
        self.fzpart = None
        self.lend = "y"  # what rebuild takes from the other side of a range: y or ym
        self.day = None  # AttachedDay of a clock attached to its day
        self.floating = False  # a clock time put on today for want of a written day
        self.joined = None  # the day candidate written before a bounded clock ("feb 1st by 6:00")
        # the amounts of an amount phrase: [(n, unit), ...] of a duration; (n, unit, "ago" /
        # "later") of an offset from now ("2 weeks and 2 days ago": compose adds them up)
        self.amount = None

    def __repr__(self) -> str:  # debugging aid
        return (f"Cand({self.b},{self.e},{self.cls},{self.kind},{self.grain},"
                f"{self.start},{self.end},role={self.role})")


Handler = Callable[[re.Match, Ctx], "Cand | None"]


#: Shapes: necessary conditions that several rules share, found once per window of text
#: that holds a digit and added to the window's set of characters as pseudo-characters
#: (names of three or more characters, so never a real one), which a rule names in its
#: ``shapes`` gate as it names characters in ``chars``: "9-9", "9/9", "9.9", "9:9" for that
#: separator between two digits (2024-03, 3/7, 6.45, 7:30), "9~9" for a range between two
#: digits ("2020-2022", "3 to 5", "7th - 9th", "1990 until 1995", "between 3 and the 5th",
#: "800 AD to 900 AD"), "9999" for four digits in a row, "99999999" for eight (20240307).
#: ``\d`` and ``\s`` are Unicode's and the words any case, so that a shape holds wherever a
#: rule's pattern (with or without re.ASCII) can match.
_SEP_SHAPE = re.compile(r"[-/.:](?<=\d.)(?=\d)")  # the separator alone: 1.2/3 has both
_SEP_NAMES = {c: f"9{c}9" for c in "-/.:"}
_RANGE_SHAPE = re.compile(r"\d(?:st|nd|rd|th|\s*年|\s*(?:AD|A\.D\.|CE|C\.E\.))?\s*"
                          r"(?:[-–—~～]|to|through|thru|until|till|and)\s*(?:the\s+)?\d", re.IGNORECASE)
_RUN4 = re.compile(r"\d{4,}")


def add_shapes(seg: str, chars: set) -> None:
    """Add to ``chars`` (the characters of ``seg``) the names of the shapes ``seg`` holds."""
    for c in _SEP_SHAPE.findall(seg):
        chars.add(_SEP_NAMES[c])
    if _RANGE_SHAPE.search(seg):
        chars.add("9~9")
    runs = _RUN4.findall(seg)
    if runs:
        chars.add("9999")
        if max(map(len, runs)) >= 8:
            chars.add("99999999")


class Rule(NamedTuple):
    pattern: re.Pattern
    handler: Handler
    name: str
    chars: frozenset | None
    words: frozenset | None
    need: re.Pattern | None
    exact: tuple | None = None  # groups of whole words: the text holds one of each group


def rule(pattern: str, flags: int = 0, lead: str | None = None, chars: str | None = None,
         words: str | None = None, need: str | None = None, exact: str | None = None,
         shapes: str | None = None) -> Callable[[Handler], Rule]:
    """Decorator: compile ``pattern`` once, at import time, and bind it to the handler.

    ``lead`` is the set of characters a match can start with; a lookahead on it lets the
    regular-expression engine reject most positions with one cheap test instead of
    entering the pattern's optional prefixes (3-7x faster scans on long texts).
    The gates skip a rule before any scan: every match holds one of ``chars`` (年 for a
    Chinese year), or an English word starting with one of ``words`` (three-letter
    prefixes: "day" for "3 days ago"), or a match of ``need``. The parser computes the
    characters and word prefixes of a text once, so a gate costs one set test. ``exact``
    narrows ``words`` to whole words: every match holds one of them ("march", not the
    "mar" of "married"); groups separated by "|" must each be met (a month word and a day
    word for "March eighteenth"). ``shapes`` names shapes (:func:`add_shapes`) of which
    every match holds one, as ``chars`` names characters (a match holds one of either).
    """
    if lead:
        pattern = f"(?=[{lead}])(?:{pattern})"
    compiled = re.compile(pattern, flags)
    needed = re.compile(need, re.IGNORECASE) if need else None
    char_set = frozenset(chars or "") | frozenset((shapes or "").split()) if chars or shapes else None
    word_set = frozenset(words.split()) if words else None

    def deco(fn: Handler) -> Rule:
        return Rule(compiled, fn, fn.__name__, char_set, word_set, needed,
                    tuple(frozenset(g.split()) for g in exact.split("|")) if exact else None)
    return deco


#: Offsets of relative year words from the current year.
RELATIVE_YEAR = {"今年": 0, "本年": 0, "本年度": 0, "去年": -1, "上年": -1, "上一年": -1,
                 "上年度": -1, "上一年度": -1, "前年": -2, "大前年": -3, "明年": 1, "来年": 1,
                 "下一年": 1, "下年度": 1, "下一年度": 1, "后年": 2, "大后年": 3,
                 "this": 0, "current": 0, "last": -1, "previous": -1, "prev": -1, "next": 1,
                 "coming": 1, "following": 1}


def year_of_two_digits(yy: int, ctx: Ctx) -> int:
    """A two-digit year: in the current century unless that is more than ten years ahead."""
    century = ctx.year - ctx.year % 100
    y = century + yy
    return y - 100 if y > ctx.year + 10 else y


def cal(b: int, e: int, start: datetime, end: datetime, grain: str,
        rebuild=None, fuzzy: bool = False) -> Cand:
    """A calendar unit (kind point)."""
    return Cand(b, e, start, end, grain, "point", "cal", None, fuzzy, rebuild)


def range_cand(b: int, e: int, start: datetime, end: datetime, grain: str, fuzzy: bool = False) -> Cand:
    """A range [start, end) written at text offsets [b, e) ("from 2004 to 2005", "Monday
    3-8", "2 weeks starting May 20th")."""
    c = Cand(b, e, start, end, grain, "span", "span", None, fuzzy)
    c.role = "range"
    c.inner = (start, end)
    return c


def years_cand(b: int, e: int, first: int, last: int, tz: tzinfo) -> Cand:
    """The years ``first`` through ``last`` as one range (2020-2022, from 1136 to 1348)."""
    s, _ = P.month_span(first, 1, tz, 12)
    _, x = P.month_span(last, 1, tz, 12)
    return range_cand(b, e, s, x, "year")


def clock_cand(b: int, e: int, h: int, mi: int = 0, sec: int = 0, grain: str = "hour",
               part: str | None = None, *, cls: str = "clock", fuzzy: bool = False) -> Cand:
    """A time of day still waiting for its day (``compose`` attaches it): hour, minute,
    second, the grain it was written in and the part of the day it was said with."""
    c = Cand(b, e, None, None, grain, "point", cls, fuzzy=fuzzy)
    c.clock = Clock(h, mi, sec, grain, part)
    return c


def unit_point(b: int, e: int, t: datetime, grain: str) -> Cand:
    """The calendar unit of ``grain`` holding ``t``."""
    s, x = P.period(t, grain)
    return Cand(b, e, s, x, grain)


def amount_cand(b: int, e: int, n: float, unit: str, ctx: Ctx, mode: str,
                fuzzy: bool = False) -> Cand | None:
    """A duration-like phrase: ``mode`` is ``dur`` (no position), ``past`` / ``future``
    (rolling range ending / starting at now), ``ago`` / ``later`` (the unit of ``unit``
    holding now ∓ n units)."""
    if n <= 0:
        return None
    k, u = P.whole_amount(n, unit)
    now = ctx.now
    if mode == "ago" or mode == "later":
        t = P.shift(now, u, -k if mode == "ago" else k)
        c = unit_point(b, e, t, u)
        c.cls = "ago"
        c.fuzzy = fuzzy
        c.amount = (k, u, mode)
        return c
    end = P.shift(now, u, k)
    length = _elapsed(now, end)
    if mode == "dur":
        if u == "second" and n != k:  # "123.45 sec": the fraction kept in the length
            length = timedelta(seconds=n)
        c = Cand(b, e, None, None, u, "duration", "dur", length, fuzzy)
        c.inner = (k, u)  # the amount, for "two days after today" (compose)
        c.amount = [(k, u)]
        return c
    if mode == "past":
        s = P.shift(now, u, -k)
        return Cand(b, e, s, now, u, "span", "roll", _elapsed(s, now), fuzzy)
    return Cand(b, e, now, end, u, "span", "roll", length, fuzzy)


def _elapsed(a: datetime, b: datetime) -> timedelta:
    """Real time from a to b (aware datetimes of one zone subtract as wall clocks)."""
    return b.astimezone(timezone.utc) - a.astimezone(timezone.utc)


def day_at(d, tz: tzinfo) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=tz)


def clock_on_day(day_start: datetime, h: int, mi: int, s: int) -> datetime:
    """Wall-clock h:mi:s on the day starting at ``day_start`` (h may be 24; "24:00" on the
    last day of year 9999 stops at the last representable instant)."""
    try:
        base = day_start.replace(tzinfo=None) + timedelta(hours=h, minutes=mi, seconds=s)
    except OverflowError:
        base = datetime.max
    return base.replace(tzinfo=day_start.tzinfo)


_PARTS = ("early", "mid", "late")


def fuzzy_part(start: datetime, grain: str, part: str) -> tuple[datetime, datetime, str] | None:
    """The early / mid / late part of the unit of ``grain`` starting at ``start``.

    year: Jan–Feb / Jun–Jul / Nov–Dec; half: its first / middle / last two months;
    quarter: its first / middle / last month; month: days 1–10 / 11–20 / 21–end (the
    Chinese 上旬 / 中旬 / 下旬); decade: years 0–3 / 4–6 / 7–9; week: Mon–Tue / Wed–Thu /
    Fri–Sun. Returns ``(start, end, finer grain)`` or None for other grains.
    """
    i = _PARTS.index(part)
    tz = start.tzinfo
    y, m = start.year, start.month
    if grain in ("year", "half", "quarter"):
        n = {"year": 12, "half": 6, "quarter": 3}[grain]
        width = 1 if n == 3 else 2
        off = (0, (n - width) // 2, n - width)[i]
        s = P.month_span(*P.add_months(y, m, off), tz, width)
        return s[0], s[1], "month"
    if grain == "month":
        d0, d1 = ((1, 11), (11, 21), (21, None))[i]
        s = datetime(y, m, d0, tzinfo=tz)
        e = datetime(y, m, d1, tzinfo=tz) if d1 else P.month_span(y, m, tz)[1]
        return s, e, "day"
    if grain == "decade":
        a, b = ((0, 4), (4, 7), (7, 10))[i]
        return datetime(y + a, 1, 1, tzinfo=tz), datetime(y + b, 1, 1, tzinfo=tz), "year"
    if grain == "week":
        a, b = ((0, 2), (2, 4), (4, 7))[i]
        d = start.date()
        return (day_at(d + timedelta(days=a), tz), day_at(d + timedelta(days=b), tz), "day")
    return None


_FUTURE_CUE = re.compile(r"(?:\b(?:will|shall|won'?t|going\s+to|gonna)\b|'ll\b)[^.!?;]*$",
                         re.IGNORECASE | re.ASCII)


def future_said(text: str, b: int) -> bool:
    """Whether the clause before offset ``b`` speaks of the future (will, shall, 'll, going
    to): the tense that settles which way an amount without "ago" / "later" runs ("I'll be
    back within 5 minutes") and which year a date written without one is in."""
    return _FUTURE_CUE.search(text, max(0, b - 80), b) is not None
