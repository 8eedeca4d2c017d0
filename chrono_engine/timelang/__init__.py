"""Time language for Chinese and English: ``parse_time`` and ``parse_temporal_intent``.

``parse_time(text, now=None, tz=None)`` finds every time expression in a text and resolves
it to a half-open interval ``[start, end)`` of tz-aware datetimes;
``parse_temporal_intent(query, now=None, tz=None)`` turns a whole query into a retrieval
intent (``latest`` / ``as_of`` / ``window``; see :mod:`.intent` for its rules).

>>> from chrono_engine.timelang import parse_time
>>> [(e.text, e.start.isoformat(), e.end.isoformat())
...  for e in parse_time("上个月", now="2025-06-18T12:00", tz="Asia/Shanghai")]
[('上个月', '2025-05-01T00:00:00+08:00', '2025-06-01T00:00:00+08:00')]

Conventions (the tests hold every one of them)
----------------------------------------------
Time and zones
  * ``now``: a datetime (naive = wall-clock time in ``tz``; aware = converted to ``tz``),
    a ``date`` (its midnight), an ISO 8601 string, or None (the current time). ``tz``: an
    IANA name or a tzinfo; None is UTC. Unusable values raise ``TimeParseError``.
  * Results are in ``tz``. A written UTC offset (2024-03-07T15:30:00+08:00) is honoured and
    converted. Calendar units move by wall clock (a day starts at local midnight even on a
    DST day); hours, minutes and seconds by elapsed time.
Units
  * A day is ``[d 00:00, d+1 00:00)``; a month from its first instant to the next month's;
    quarters, halves and decades are calendar-aligned (2020s = [2020, 2030)).
  * Weeks are ISO weeks, Monday first: 上周 / last week is the previous Monday–Sunday;
    "week 10 2024", 2024-W10 and 2024年第10周 are ISO week numbers.
  * A clock time is one unit of its grain: 下午3点 = [15:00, 16:00), 10:30 = [10:30, 10:31).
    Parts of the day (fuzzy): 凌晨 0–6, 上午 / morning 6–12, 中午 / noon / lunchtime 11–13,
    下午 / afternoon 12–18, 晚上 / evening / night / tonight 18–24, daytime 6–18; "early" /
    "late" (or "earlier" / "later") take the first / second half of the part ("early
    morning" 6–9, "later this afternoon" 15–18), "today pm" / "tomorrow am" the afternoon /
    morning. A part of the day said without a day ("in the morning", "afternoon classes",
    下午) is today's to ``parse_time``, but ``parse_temporal_intent`` (so ``Engine.query``)
    and ``ground`` leave it out: it says when in a day, not which day. "good morning" is a
    greeting and "have lunch" the meal. "early / mid / later today" (and tomorrow,
    yesterday) are the day's first half 0–12, its middle 11–13 and its second half 12–24.
    A bare "10点" counts when nothing noun-like follows
    ("10点开会", "10点前"), not in "三点建议". In ranges and bounds a clock time is an
    instant: 3点到5点 = [15:00, 17:00), "until 2pm" ends at 14:00, "11:30-1:30" wraps to
    13:30. A weekday right after its date (2024年3月7日星期四) is absorbed, unchecked.
Missing fields
  * A date or month without a year is in ``now``'s year (3月7日, March, 三季度, H1) — no
    past or future preference — except that a day that has passed this year is next
    year's in a clause that speaks of the future (will, shall, 'll, going to: "I will see
    you on March 3", "we will meet 5 days before new year"), and "next / last / this" before
    a day make it next / last / this year's ("next 6th of April"). Inside a range the written year is lent to the other side
    ("2024年3月至5月", "from March to May 2024"); a right side that would fall before the
    left moves one year on ("12月至2月").
  * Two-digit years are in the current century unless that is more than ten years ahead.
    A two-digit year with a leading zero is a year, not an amount: 08年 / 零八年 = 2008.
  * Traditional characters of time words read as simplified: 週三, 後天, 上個月, 禮拜一.
  * Reign eras (Ming and Qing eras, some Tang ones, 民国) are years: 康熙三年五月 = May 1664,
    元年 = the first year. 上半月 / 下半月 are days 1–15 / 16–end, 上半周 / 下半周 Mon–Wed /
    Thu–Sun, 2018年前半年 = 上半年, 上个半年 the previous half-year. X月的第N周 / 最后一周 count
    weeks as in English. A February 29 without a year is the latest one so far.
  * Slash dates with the year last are month first (3/7/2024 = March 7) unless the first
    number exceeds 12; dotted ones are day first (07.03.2024 = 7 March); "2/2013" is a
    month. A slash date without a year (5/12; 22/04 day first) counts only after a word that
    introduces a date (on, this, next, from, to, between, ...), a weekday, a comma or a dash,
    and not before "of" or "%": "3/7" alone and "3/4 of the runs" stay fractions. Alone, a
    month then a day past 12 is a date ("11/20", "2/29": the latest leap year's), and so is
    any slash date with a clock time after it ("6/4 at 5pm", "23/12 before 5pm"); "24/7"
    alone is not. Bare numbers 1500–2100 are years unless a unit follows (2000 元, 2023版)
    or another number is dashed to them ("32 - 2015" is no date and no year).
    Earlier years count where written as years: in explicit ranges ("from 1136 to 1348",
    "between 800 AD and 900 AD", 从1136年到1348年), "the year 1066", "1066 AD".
  * Tokenised dates read whole: "August 24 , 2017", "Dec31 , 1994".
Names and words that look like times
  * A bare month or weekday word followed by a name particle ("Jan van Eyck") or by a
    capitalised word that is not a time word ("Jan Smith", "Sun Microsystems", "March Fong
    Eu") is a name, unless a date preposition precedes it ("in March Sales fell"). "May I",
    "this may" are the verb; a lowercase "may" / "july" alone counts only after a
    preposition ("in may", "the last week of july"). A whole-hour English clock time with no day next to it counts
    only after a word that introduces times (at, by, until, from, the, meet, call me, ...):
    "signed 2AM in 2010" (the band) gives only 2010.
Relative expressions
  * 今天 / 昨天 / 前天 / 明天 / 后天, today / yesterday / tomorrow: that whole day.
  * last / this / next week, month, quarter, year, decade and 上 / 本 / 下 + 周, 月, 季度,
    去年 / 今年 / 前年 / 明年: the whole previous / current / next calendar unit
    ("last month" is the previous calendar month; "last decade" the previous calendar
    decade). "the week before last" / 上上周 go two units back.
  * Weekdays: 周三 / Wednesday / this Wednesday = that day of the current ISO week; 上周三 /
    下周三 = that day of the previous / next week; "last Wednesday" = the most recent
    Wednesday before today, "next Wednesday" = the first one after today. 周末 / weekend =
    Saturday and Sunday of the week. "Mon 13th", "tues the 4th" = the date nearest today
    whose day of the month falls on that weekday (the next one in a clause that speaks of
    the future). "the third Tuesday of September 2014", "the last Friday of next month",
    "the first Monday evening of next month": that weekday of that month (a fifth one the
    month lacks gives nothing).
  * N units ago / in N units / N天前 / N天后: the calendar unit of that grain holding
    ``now ∓ N units`` (3 days ago = that whole day; 2 weeks ago = that ISO week).
  * Rolling ranges end (or start) at ``now`` exactly: 过去90天 / 近三个月 / 最近一周 / 前N天 /
    N天内 / N天以来 / past 90 days / last 2 months / within 3 days / the past week =
    ``[now - N units, now)``; 未来N天 / next 3 days = ``[now, now + N units)``; "within N
    units" in a clause that speaks of the future runs forward ("I'll be back within 5
    minutes"). Months and
    years are calendar months and years (近三个月 from 2025-06-18 12:00 starts 2025-03-18
    12:00), clamped to the month's end. "last month" (no number) stays the calendar month;
    "past week" (no number) is rolling. 半年 = 6 months, 半个月 = 15 days, 一个半小时 = 90 min.
  * year-to-date / YTD and 年初至今: from the unit's start to ``now``; "to date" / "till
    date" = until ``now`` (not "up to date"); "current date", "the present time" = now;
    "the rest / remainder of the week" = [now, the week's end); "for the day / week /
    month / year" = the current unit, "for the hour" an hour; "at this time", "at the
    minute" = now; "otd" = today. "the year" / "the week" / "the month" / "the day" at the
    end of a clause ("partner of the year.") is the current unit, left out of a query's
    intent and of ``ground`` as a lone part of the day is.
  * "next hour", "the last minute", "13 last minutes": rolling (not "at the last minute").
    "last" after a modal or a negation is the verb ("did not last two years": a duration);
    "a second" before a noun is the ordinal ("a second term").
Ranges and bounds
  * Ranges include their last unit: "2024年3月至5月" and "from March to May 2024" are
    [2024-03-01, 2024-06-01); "between 2020 and 2022" is [2020, 2023). "X至今" / "X to date"
    end at ``now``.
  * since X / X以来 / X至今: [X.start, now) (open end when X starts after now).
    from X on / X起 / 自X起 / starting X: [X.start, None).
    after X / X之后 / X以后 / X后: [X.end, None) — after the whole unit.
    before X / X之前 / X以前 / X前: [None, X.start).
    until X / by X / through X / 截至X / 截止X / as of X / X为止: [None, X.end) — the whole
    unit is included. 从 / 自 / from alone do not make a bound ("data from 2023" is 2023).
    X或之前 / X及以前 (X or before) = until X; X或之后 / X及以后 (X or after) = from X;
    自从X = since X. "and before" / "or after" followed by a time are that time's
    preposition: "after 2016 and before 2018" is two bounds. "as early as", "any time from",
    "no earlier than", ">=", "X and greater" = from X; "as late as", "<=" = until X;
    "greater than" / ">" = after; "less than" / "<" = before. "the weekend" = this one.
    A bound said approximately is the bound ("before around 2pm", "until about 1967").
  * The start / middle / end of a unit (not early / late) is an instant in a range and in
    before / after: "from 2007 to the start of 2008" = [2007, 2008), "between the end of
    2007 and the end of 2008" = [2008, 2009), "the middle of September" its 16th, "before
    the end of this year" = until the year ends, "after the beginning of March" = from
    March 1; alone and after "since" it stays the unit's part ("the end of 2007" = Nov–Dec).
  * A clock range whose end comes before its start and says morning (am, 凌晨, 早上) ends
    the next day: "from 10pm to 2am", 下午5:00到凌晨3:00. A bare weekday in a range takes
    the other side's week: "from next Monday to Friday", "from Monday to Friday next week";
    "from Friday to Monday" runs into the next week.
Fuzzy edges (``fuzzy=True``)
  * year: 年初 / early = Jan–Feb, 年中 / mid = Jun–Jul, 年底 / 年末 / late = Nov–Dec;
    month: 月初 / 上旬 / early = days 1–10, 月中 / 中旬 / mid = 11–20, 月底 / 月末 / 下旬 /
    late = 21–end; quarter: its first / middle / last month; half: first / middle / last
    two months; decade: years 0–3 / 4–6 / 7–9. "the beginning / middle / end of X" are
    early / mid / late X. A bare 年底 / 月初 / 下旬 refers to the current year / month.
  * "a few days ago", 几天前 and parts of the day are fuzzy too; 几 and "a few" count 3,
    an approximate Chinese pair (两三天, 三五年) counts as the larger number.
Hours without am / pm
  * "3-8", "from 10-4", "between 3 and 5" count only next to a day or a part of the day
    ("Monday 3-8", "between 3 and 5 on 1/1/2015", "next Monday morning 6-8"); the second
    hour is in the afternoon when it would come before the first ("Monday 11-4" =
    11:00–16:00). Alone they are scores or pages, unless a side has minutes and "from" /
    "between" precedes them ("between 9 to 10:30": today's). "at 6.45" is a clock time.
Clock times in words
  * "half past seven", "quarter to nine", "20 min past eight in the evening", "7 in the
    evening", "11 at night", "in the afternoon at 7", "11ish" (fuzzy). "N to M" with N up to
    twelve is a range of hours ("5 to seven in the morning" = 05:00–07:00), not "N minutes
    to M"; "quarter to" and "20 min to" are minutes.
Holidays
  * Solar-calendar holidays (:mod:`.holidays`: Christmas, Independence Day, Easter by the
    computus, Thanksgiving as the fourth Thursday of November, 国庆节, 元旦, 劳动节 ...) are
    their day, in the written year or the current one; "last" / "next Christmas" the most
    recent one before / the first one after today.
Weeks of a month or year, centuries
  * Weeks of a month count as ISO weeks do: the first week of a month is the Monday–Sunday
    week holding its 4th day, the last the one holding its fourth-last day; "the Nth week
    of <year>" is ISO week N; "the week of <day>" the ISO week holding the day. "the 15th
    century" = [1400, 1500). "the week beginning / starting / commencing X" and "w/c X" are
    the seven days from X; "2 weeks starting May 20th" the amount from the day. "the 15th
    day of next month", "the twenty third day of September" are that day; "the 18th" alone
    only after "on" (this month). Parts of a period: "the last 3 weeks of this year", "first
    ten days of last year", "the 9th month of next year", 2021年的前2周, 今年的最后3周 (weeks
    counted as above); "fortnight" is two weeks.
Combined atoms
  * "between now and X" / "from now to X" = [now, X.end); "the 5 upcoming years" is
    rolling like "the next 5 years"; "Dec-2018", "05-Aug-2016", "2.30pm", "12-2015", "CY18",
    "EOY" / "EOM" / "EOQ" (the unit's late part), "tmrw" and C's asctime ("Wed Oct 26
    15:50:06 2016") are read; a month abbreviation after "$" is a ticker ("$DEC").
  * Clock times with no written day move to a day written right after them ("3:00 to 4:00
    tomorrow", "from 5 to 6pm of April 22"); "two days after today", "three weeks from
    tomorrow" are the day that far from the day named. A clock time with how long ("from
    2pm for 2 hours", "for 3 hours from 10 am") is [the time, the time + the amount).
  * A weekday right before a date names it ("Tue May 9", "Thursday, March 7, 2024");
    a year written right after a day or month without one is its year ("28 june in
    2020", "October, 2017"); amounts of ever finer units in a row are one duration ("3
    hours 30 minutes", "one hour and a half", 8天20小时, 一个星期又三天, 一个月21天) and add to an
    offset or a rolling range of a coarser unit ("2 weeks and 2 days ago", "the last 3
    months and 2 weeks"); a weekday next to an offset of weeks or more is that day of the
    offset's week ("Monday two weeks from now"); the bare first hour
    of a clock range takes the second's half of the day unless it would come after it
    ("5 to 6pm" = 17–18, "11-1pm" = 11–13); a part of the day right before a clock time sets
    its half (下午5:00 = 17:00). A clock time after "for" is the day's ("on Monday for
    8pm"); a weekday with its time of day then a week is that day of the week ("Wednesday
    evening next week"); a time dashed to the week holding it is no range ("3pm - this
    week"). Amounts of calendar units in a row add up on the calendar, one after the other
    from ``now`` ("one year and a quarter" = 15 months on, as "1.25 years"). Units written onto digits (3h, 1d, 2w, 3.5years)
    count; a one-letter one needs for / in / within / ago ("the 3d model" is no time).
Kinds and durations
  * ``point``: one calendar unit; ``span``: ranges, bounds and rolling ranges;
    ``duration``: a bare amount (三个月, 15 days) with ``start = end = None`` and
    ``duration`` set to its length measured forward from ``now``. Rolling ranges also
    carry ``duration`` (their exact length).
Invalid input
  * Impossible dates (2月30日, 2024-02-30, February 30) produce no expression at all — no
    error, and no fragment of them (not "2月", not "30日"). Dates outside datetime's range
    are skipped likewise. Any text (empty, 1 MB, garbage) returns a list; only a non-str
    ``text`` (ArgumentTypeError, a TypeError) or an unusable ``now`` / ``tz`` (TimeParseError)
    raise.

Not covered (no expression is produced)
  * Festivals of the lunar calendar (春节, 中秋节, 端午节), zone abbreviations ("4pm CET": the
    clock is read in ``tz``), recurring times (每周一, every
    Monday), and bare "3/7" or "3.7" without a word that introduces a date or a clock after
    it (fractions and decimals as often as dates).

Implementation and the library decision
---------------------------------------
Hand-written grammars (:mod:`.zh`, :mod:`.en`, :mod:`.formats`): each rule is one regular
expression compiled at import time plus a small handler; :mod:`.compose` then joins the
leftmost-longest atoms into fuzzy edges, date + clock, ranges and bounds. Nothing is
compiled per call. Each rule carries a gate (characters or English word prefixes that
every match holds), so a query only runs the few rules it can match. Texts longer than
2,000 characters are scanned only in windows around trigger characters and words, so
ordinary prose costs about 1 s per MB; text made almost entirely of time expressions
costs several seconds per MB (every rule runs everywhere) but stays linear.

We measured two maintained libraries side by side (``benches/bench_timelang.py``):
dateparser 1.5.0 and JioNLP 1.5.31. We use neither, for four reasons. (1) Speed: on 32
short zh + en queries ``dateparser.search.search_dates`` (languages en + zh given, its
fastest honest setting) costs about 2.2 ms per query against about 70 µs here (~30×; a
busy 2-core machine, CPU time); on bare expressions ("3 days ago", "2024-03-07")
``dateparser.parse`` costs ~1.4 ms (~20×); JioNLP's ``extract_time`` ~0.4 ms on the
Chinese queries (~5×). (2) Coverage of what retrieval
needs: dateparser finds no Chinese relative expressions (近三个月, 上季度 and
"2024年8月签订…时" all return nothing) and returns a single datetime, not an interval;
JioNLP is Chinese only, drops ranges such as "2024年3月至5月" to their first month and
raises on 2月30日. (3) Conventions: both resolve "past 90 days" and "3 days ago" to
instants or closed ``23:59:59`` intervals; we need half-open intervals with one
documented rule set across both languages, which wrapping would re-implement anyway.
(4) Weight: dateparser pulls regex, pytz and tzlocal and auto-detects among 200 locales
(tens of ms per call without a language hint); JioNLP imports a large dictionary set
(~0.5 s). dateparser stays an optional bench dependency only.
"""
from __future__ import annotations

from .ground import GroundedFact, ground
from .intent import parse_temporal_intent
from .parser import parse_time
from .types import GRAINS, KINDS, MODES, TemporalIntent, TimeExpression

__all__ = [
           "GRAINS",
           "GroundedFact",
           "KINDS",
           "MODES",
           "TemporalIntent",
           "TimeExpression",
           "ground",
           "parse_temporal_intent",
           "parse_time",
]
