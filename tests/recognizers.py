"""The judge of ``parse_time`` against Microsoft Recognizers-Text's DateTime specs.

The cases are ``tests/data/recognizers/{en,zh}_datetime.jsonl`` (extracted by
``scripts/extract_recognizers.py``; ``SOURCE.md`` there names the commit). Each case is an
input text, the spec's reference time and the expressions the spec expects, each with its
character span and one or more resolutions ("values"; a year-less date or a bare weekday
lists the past and the future reading). :func:`judge` runs ``parse_time`` on the whole
input at the reference time and says, per case, ``pass`` / ``fail`` / ``skip``.

Which cases are judged
----------------------
* The spec's ``NotSupported`` / ``NotSupportedByDesign`` name the *platforms* whose port
  fails the case (dotnet, java, javascript, python). The spec stays the expected answer
  whatever the ports do, so a case is skipped only when the mark names dotnet, the
  reference implementation: every such mark in these files names all four platforms, i.e.
  no implementation meets the spec (reason ``unsupported on every platform``).
  ``NotSupportedByDesign`` never names dotnet here, so it skips nothing.
* A result (one expected expression) is not judged when it has no interval meaning for
  ``parse_time`` or the spec gives no resolution: ``datetimeV2.set`` (recurrences: "every
  Monday", 每周), ``datetimeV2.timezone``, values ``"not resolved"`` (seasons, impossible
  dates), values with no start, end or value (none in these files), ``Mod: ref_undef``
  ("that weekend": the spec itself says the reference is undefined) and ``isLunar`` values
  (the value is a Chinese lunar date, not a Gregorian one). Values of a result are filtered
  one by one; a result with none left is dropped. A case whose results are all dropped is
  skipped with the first dropped result's reason; a case with some left is judged on those.
* A case with results but no ``ReferenceDateTime`` is skipped (``no reference time``).
* Cases with no results are *negative* cases ("Twenty-six people die…", "这是我的队伍"):
  the spec says the text holds no time expression. They are judged: the case passes when
  ``parse_time`` returns nothing at all. The few without a reference time are run at
  :data:`FALLBACK_NOW` (absence does not depend on it).

How a result is judged
----------------------
``parse_time(input, now=reference)`` with ``tz=None`` (UTC, the spec's times are naive
wall-clock times; tz-info is stripped before comparing). The reference is cut to whole
seconds, as the spec's own values are ("now" at ``14:11:10.96`` resolves to ``14:11:10``).
A result passes when **some** expression whose character span overlaps the result's span
(``[Start, End]``, ``End`` inclusive) matches **one** of the result's values. The case
passes when all its judged results pass. Expressions elsewhere in the text are not
judged (the spec's results are not exhaustive enough to call them false positives).

Each value becomes one expected form (all naive datetimes, half-open):

* ``date`` ``2016-10-02`` → the day ``[d, d+1)``; ``daterange`` ``start``/``end`` → ``[start,
  end)`` as given, a missing side is an open bound (``before 2010`` = ``[None, 2010-01-01)``).
  The spec's ``end`` is exclusive for calendar units ("this September" ends 10-01, "next
  week" on the next Monday).
* ``datetimerange`` / ``timerange``: ``[start, end)``; a clock without a date is on the
  reference date, an end at or before its start wraps to the next day, and the spec's
  ``23:59:59`` ends (night = 20:00–23:59:59) mean the next midnight.
* ``datetime`` / ``time`` (and ``value`` on a range type, Mod ``approx``): an *instant*. It is
  matched by a ``point`` of grain hour, minute or second that starts at it (``parse_time``
  reads "8:00am" as the minute ``[08:00, 08:01)``). A date-only value is a day.
* ``duration``: seconds; matched by a ``duration`` expression of that length. Mod
  ``more`` / ``less`` are not judged (``parse_time`` has no comparative amounts), nor is
  ``approx``. Other Mods (``before-end``, ``since-end``, ``after-mid`` …) are compared as
  the spec resolves them.

Strict equality is tried first. Then a short list of **conventions** — places where the
spec and ``parse_time`` (see ``chrono_engine/timelang/__init__.py``, "Conventions") resolve
the same reading differently, each applied only where its condition is visible in the
spec's own data. A result that passes only through one counts as passed, with the
convention's name recorded, and the report also prints the strict rate:

``range_includes_last_unit``
    Recognizers ends an explicit range at the *start* of its right side ("from March to May"
    = [03-01, 05-01), P2M; "between 2014 and 2018" = [2014, 2018)); ``parse_time`` includes
    the last unit ([03-01, 06-01)). Applies to a ``daterange`` value whose timex is a
    ``(A,B,P…)`` triple and whose text holds a range connector (to, through, till, until,
    ``-``, ``~``, between … and; 到, 至, ``-``, 和/与 … 间); accepts ``[A, B + one unit)`` for the
    unit named by the triple's duration (D → day, W → week, M → month, quarter or half,
    Y → year or decade).
``day_bounds``
    For a bound on one day D the spec writes D's own date as the boundary whatever the
    bound: "until April 27th" and "2011-03-22或之前" end at D, "after January 1, 2007" and
    "2009-08-29之后" start at D — while for a month or a year it takes the whole unit
    ("after 2016" starts 2017, "2013年及以前" ends 2014). ``parse_time`` takes the whole day
    D as it does any unit: until D = ``[None, D+1)``, after D = ``[D+1, None)``. Accepted when
    the value's timex is exactly day D and D is the spec's boundary, for Mod ``until``,
    ``after``, and ``before`` only with an until cue in the text (until, till, through, by,
    no later than, as late as; 截至, 截止, 为止, 或之前, 及之前, 或以前, 及以前) — a plain
    "before D" stays ``[None, D)`` in both.
``part_of_day_hours``
    Parts of the day: the spec's morning is 8–12, afternoon 12–16, evening 16–20, night
    20–24, daytime 8–18; ``parse_time``'s are 6–12, 12–18, 18–24, 18–24, 6–18. For a value
    whose timex ends in ``TMO`` / ``TAF`` / ``TEV`` / ``TNI`` / ``TDT`` and no Mod, accepts the same part on the same
    date in ``parse_time``'s hours; with Mod ``start`` / ``end`` ("early morning", "later
    this afternoon": the first / second half of the spec's part, 8–10, 14–16), the same
    half of ``parse_time``'s part (6–9, 15–18).
``calendar_duration``
    The spec counts a month as 30 days and a year as 365; ``parse_time`` measures months and
    years forward from ``now`` on the calendar. Accepts the timex's amount measured that way
    (fractional years must be whole months: P3.5Y = 42 months).
``fuzzy_edge``
    Mod ``start`` / ``mid`` / ``end`` ("end of year" = Jul–Dec in the spec, Nov–Dec here):
    accepts a ``fuzzy`` expression inside the spec's interval that keeps the named edge
    (same start for ``start``, same end for ``end``).
``offset_unit``
    "N units ago / later", N天前 / N年后: the spec gives the instant or day ``now ∓ N
    units``; ``parse_time`` gives the calendar unit of that grain holding it ("5年前" = that
    year). Accepts a ``point`` of the grain named last in the result's text (which must
    hold an offset word: ago, later, from now, hence, before, after, in; 前, 后) that
    contains the spec's day or instant and whose span covers the result's whole span (so
    "Monday two weeks from now" is not passed by "two weeks from now" alone).
``rolling_day_precision``
    The spec's ``daterange`` values are whole days even for rolling ranges ("past 3 days",
    "between Jan 2019 and now"); ``parse_time``'s rolling edges sit at ``now``. Accepts an
    expression whose edges, each at midnight or at ``now``'s clock time, fall on the spec's
    dates.
``since_ends_at_now``
    "since X" is ``[X, None)`` in the spec and ``[X, now)`` in ``parse_time`` (when X starts
    before now): accepts the latter.

Everything else is strict: "last Wednesday" (the spec: last week's; ``parse_time``: the most
recent), "next 3 days" (the spec starts tomorrow), weekday readings outside the spec's two
values, clock times without their date — all fail.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

from chrono_engine.timelang import parse_time

DATA = Path(__file__).parent / "data" / "recognizers"
LANGS = ("en", "zh")
KNOWN_FAILURES = DATA / "known_failures.txt"
#: ``now`` for the negative cases that have no reference time.
FALLBACK_NOW = "2016-11-07T00:00:00"

CONVENTIONS = ("range_includes_last_unit", "day_bounds", "part_of_day_hours",
               "calendar_duration", "fuzzy_edge", "offset_unit", "rolling_day_precision",
               "since_ends_at_now")

SKIP_ALL_PLATFORMS = "unsupported on every platform"
SKIP_NO_REFERENCE = "no reference time"
DROP_SET = "recurrence (datetimeV2.set)"
DROP_TIMEZONE = "time zone (datetimeV2.timezone)"
DROP_NOT_RESOLVED = "spec value 'not resolved'"
DROP_NO_VALUE = "spec gives no value"
DROP_REF_UNDEF = "reference undefined (Mod ref_undef)"
DROP_LUNAR = "lunar calendar date"

# project hours of the parts of the day (chrono_engine.timelang: "Parts of the day")
_PART_HOURS = {"MO": (6, 12), "AF": (12, 18), "EV": (18, 24), "NI": (18, 24), "DT": (6, 18)}
_CONNECTOR = {
    "en": re.compile(r"\b(to|through|thru|till|until)\b|[-–~]|\bbetween\b.*\band\b", re.I),
    "zh": re.compile(r"[到至\-–~—]|[和与跟].*间"),
}
_UNTIL_CUE = {
    "en": re.compile(r"\b(until|till|through|thru|by|no later than|as late as|up to)\b", re.I),
    "zh": re.compile(r"截至|截止|为止|或之前|及之前|或以前|及以前"),
}
_OFFSET_CUE = {
    "en": re.compile(r"\b(ago|later|from now|hence|before|after|in)\b", re.I),
    "zh": re.compile(r"前|后|後"),
}
_UNITS = {
    "en": [(re.compile(r"\b(seconds?|secs?)\b", re.I), "second"),
           (re.compile(r"\b(minutes?|mins?)\b", re.I), "minute"),
           (re.compile(r"\b(hours?|hrs?)\b", re.I), "hour"),
           (re.compile(r"\bdays?\b", re.I), "day"),
           (re.compile(r"\bweeks?\b", re.I), "week"),
           (re.compile(r"\bmonths?\b", re.I), "month"),
           (re.compile(r"\byears?\b", re.I), "year")],
    "zh": [(re.compile(r"秒"), "second"), (re.compile(r"分钟|分鐘|分"), "minute"),
           (re.compile(r"小时|小時|钟头|鐘頭"), "hour"), (re.compile(r"天|日"), "day"),
           (re.compile(r"周|週|星期|礼拜|禮拜"), "week"), (re.compile(r"月"), "month"),
           (re.compile(r"年"), "year")],
}
_SUB_DAY = ("second", "minute", "hour")


# -- the cases ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    lang: str
    input: str
    reference: str | None
    not_supported: str | None
    not_supported_by_design: str | None
    comment: str | None
    results: tuple


def load(lang: str) -> list[Case]:
    cases = []
    with open(DATA / f"{lang}_datetime.jsonl", encoding="utf-8") as f:
        for line in f:
            c = json.loads(line)
            cases.append(Case(c["id"], lang, c["input"], c["reference"], c["not_supported"],
                              c["not_supported_by_design"], c["comment"],
                              tuple(c["results"])))
    return cases


def known_failures() -> set[str]:
    if not KNOWN_FAILURES.exists():
        return set()
    return {ln.strip() for ln in KNOWN_FAILURES.read_text(encoding="utf-8").splitlines()
            if ln.strip() and not ln.startswith("#")}


# -- expected forms -------------------------------------------------------------------------
@dataclass(frozen=True)
class Expected:
    """One spec value: ``kind`` is ``interval`` (``start``/``end``, None = open), ``instant``
    (``start``) or ``duration`` (``seconds``); the rest is what the conventions need."""

    kind: str
    start: datetime | None = None
    end: datetime | None = None
    seconds: float | None = None
    day: bool = False  # an interval that is one day from a date value
    vtype: str = ""
    timex: str = ""
    mod: str = ""

    def show(self) -> str:
        if self.kind == "duration":
            return f"duration {self.seconds:g}s"
        if self.kind == "instant":
            return f"at {_fmt(self.start)}"
        return f"[{_fmt(self.start)}, {_fmt(self.end)})" + (f" Mod={self.mod}" if self.mod else "")


def _fmt(t: datetime | None) -> str:
    if t is None:
        return "None"
    if t.hour == t.minute == t.second == 0:
        return t.date().isoformat()
    return t.isoformat(sep=" ")


def _reference(ref: str | None) -> datetime:
    text = ref or FALLBACK_NOW
    return datetime.fromisoformat(text.split(".")[0])


def _point(text: str, ref: datetime) -> tuple[datetime, bool]:
    """A spec date, datetime or clock string → (datetime, is_a_date)."""
    if re.fullmatch(r"\d{4}-\d\d-\d\d", text):
        return datetime.fromisoformat(text), True
    if re.fullmatch(r"\d\d:\d\d:\d\d", text):
        h, m, s = map(int, text.split(":"))
        return datetime.combine(ref.date(), datetime.min.time()).replace(hour=h, minute=m,
                                                                         second=s), False
    return datetime.fromisoformat(text), False


def _end(text: str, ref: datetime) -> datetime:
    t, _ = _point(text, ref)
    if text.endswith("23:59:59"):  # the spec's inclusive end of a day
        t += timedelta(seconds=1)
    return t


def value_problem(v: dict) -> str | None:
    if v.get("isLunar") in ("True", "true", True):
        return DROP_LUNAR
    if v.get("Mod") == "ref_undef":
        return DROP_REF_UNDEF
    if v.get("value") == "not resolved":
        return DROP_NOT_RESOLVED
    if not any(k in v for k in ("value", "start", "end")):
        return DROP_NO_VALUE
    return None


def expected(v: dict, ref: datetime) -> Expected:
    vtype, timex, mod = v.get("type", ""), v.get("timex", ""), v.get("Mod", "")
    if vtype == "duration":
        return Expected("duration", seconds=float(v["value"]), vtype=vtype, timex=timex, mod=mod)
    if "start" in v or "end" in v:
        start = _point(v["start"], ref)[0] if "start" in v else None
        end = _end(v["end"], ref) if "end" in v else None
        if start is not None and end is not None and end <= start and vtype == "timerange":
            end += timedelta(days=1)
        return Expected("interval", start, end, vtype=vtype, timex=timex, mod=mod)
    t, is_date = _point(v["value"], ref)
    if is_date:
        return Expected("interval", t, t + timedelta(days=1), day=True, vtype=vtype,
                        timex=timex, mod=mod)
    return Expected("instant", t, vtype=vtype, timex=timex, mod=mod)


# -- matching ---------------------------------------------------------------------------------
def _naive(t):
    return None if t is None else t.replace(tzinfo=None)


@dataclass(frozen=True)
class Got:
    start: datetime | None
    end: datetime | None
    grain: str
    kind: str
    seconds: float | None
    fuzzy: bool
    text: str
    span: tuple

    def show(self) -> str:
        if self.kind == "duration":
            return f"{self.text!r}: duration {self.seconds:g}s"
        return f"{self.text!r}: [{_fmt(self.start)}, {_fmt(self.end)}) {self.grain}"


def _add_months(t: datetime, n: int) -> datetime:
    y, m = divmod(t.month - 1 + n, 12)
    y += t.year
    m += 1
    last = (date(y + (m == 12), m % 12 + 1, 1) - timedelta(days=1)).day
    return t.replace(year=y, month=m, day=min(t.day, last))


def _unit_after(t: datetime, unit: str) -> datetime:
    if unit == "day":
        return t + timedelta(days=1)
    if unit == "week":
        return t + timedelta(weeks=1)
    months = {"month": 1, "quarter": 3, "half": 6, "year": 12, "decade": 120}[unit]
    return _add_months(t, months)


_DURATION = re.compile(r"P(?:([\d.]+)Y)?(?:([\d.]+)M)?(?:([\d.]+)W)?(?:([\d.]+)B?D)?"
                       r"(?:T(?:([\d.]+)H)?(?:([\d.]+)M)?(?:([\d.]+)S)?)?$")


def _calendar_length(timex: str, ref: datetime) -> timedelta | None:
    m = _DURATION.match(timex)
    if not m or not any(m.groups()):
        return None
    y, mo, w, d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    months = y * 12 + mo
    if months != int(months):
        return None
    rest = timedelta(weeks=w, days=d, hours=h, minutes=mi, seconds=s)
    return _add_months(ref, int(months)) + rest - ref


def _triple_units(timex: str) -> tuple[str, ...]:
    m = re.fullmatch(r"\(([^,]+),([^,]+),P([^)]*)\)", timex)
    if not m or "T" in m.group(3):
        return ()
    letter = m.group(3)[-1]
    if m.group(3).endswith("BD"):
        letter = "D"
    return {"D": ("day",), "W": ("week",), "M": ("month", "quarter", "half"),
            "Y": ("year", "decade")}.get(letter, ())


def _timex_is_day(timex: str, t: datetime) -> bool:
    """Whether ``timex`` names exactly the day ``t`` (its year may be unwritten: XXXX)."""
    m = re.fullmatch(r"(\d{4}|XXXX)-(\d\d)-(\d\d)", timex)
    return bool(m) and m.group(1) in ("XXXX", f"{t.year:04d}") and (
        int(m.group(2)), int(m.group(3))) == (t.month, t.day)


def _text_unit(lang: str, text: str) -> str | None:
    best = None
    for pat, unit in _UNITS[lang]:
        for m in pat.finditer(text):
            if best is None or m.start() > best[0]:
                best = (m.start(), unit)
    return best[1] if best else None


def strict_match(e: Expected, g: Got) -> bool:
    if e.kind == "duration":
        return g.kind == "duration" and g.seconds is not None and abs(g.seconds - e.seconds) < 1e-6
    if g.kind == "duration":
        return False
    if e.kind == "instant":
        return g.kind == "point" and g.grain in _SUB_DAY and g.start == e.start
    return (g.start, g.end) == (e.start, e.end)


def convention_match(e: Expected, g: Got, lang: str, text: str, now: datetime,
                     span: tuple = (0, 0)) -> str | None:
    """The name of the convention under which ``g`` reads ``e``, or None. ``text`` and
    ``span`` are the spec result's text and ``[begin, end)`` offsets in the input."""
    if e.kind == "duration":
        if g.kind == "duration" and g.seconds is not None:
            cal = _calendar_length(e.timex, now)
            if cal is not None and abs(g.seconds - cal.total_seconds()) < 1e-6:
                return "calendar_duration"
        return None
    if g.kind == "duration":
        return None
    if e.kind == "interval":
        # an explicit range includes its last unit
        if (e.vtype == "daterange" and e.start is not None and e.end is not None
                and _CONNECTOR[lang].search(text) and g.start == e.start and g.end is not None):
            if any(g.end == _unit_after(e.end, u) for u in _triple_units(e.timex)):
                return "range_includes_last_unit"
        # bounds on one day D: the spec writes D itself, parse_time takes the whole day
        if (e.start is None and e.end is not None and g.start is None and g.end is not None
                and e.mod in ("until", "before") and _timex_is_day(e.timex, e.end)
                and (e.mod == "until" or _UNTIL_CUE[lang].search(text))
                and g.end == e.end + timedelta(days=1)):
            return "day_bounds"
        if (e.end is None and e.start is not None and g.end is None and g.start is not None
                and e.mod == "after" and _timex_is_day(e.timex, e.start)
                and g.start == e.start + timedelta(days=1)):
            return "day_bounds"
        # parts of the day in the project's hours
        m = re.search(r"T(MO|AF|EV|NI|DT)$", e.timex)
        if (m and e.mod in (None, "", "start", "end") and e.start is not None and g.start is not None
                and g.end is not None):
            a, b = _PART_HOURS[m.group(1)]
            if e.mod == "start":
                b = (a + b) // 2
            elif e.mod == "end":
                a = (a + b) // 2
            day = datetime.combine(e.start.date(), datetime.min.time())
            if (g.start, g.end) == (day + timedelta(hours=a), day + timedelta(hours=b)):
                return "part_of_day_hours"
        # fuzzy edges inside the spec's interval
        if (e.mod in ("start", "mid", "end") and g.fuzzy and None not in (e.start, e.end,
                                                                          g.start, g.end)
                and e.start <= g.start and g.end <= e.end
                and (e.mod != "start" or g.start == e.start)
                and (e.mod != "end" or g.end == e.end)):
            return "fuzzy_edge"
        # since X ends at now
        if (e.mod == "since" and e.start is not None and e.end is None and e.start < now
                and g.start == e.start and g.end == now):
            return "since_ends_at_now"
        # rolling ranges compared at day precision
        if e.vtype == "daterange" and not e.day and None not in (e.start, e.end, g.start, g.end):
            edges = (g.start, g.end)
            if (all(t.time() in (datetime.min.time(), now.time()) for t in edges)
                    and any(t.time() != datetime.min.time() for t in edges)
                    and tuple(datetime.combine(t.date(), datetime.min.time()) for t in edges)
                    == (e.start, e.end)):
                return "rolling_day_precision"
    # N units ago / later: the unit holding the spec's point
    if e.kind == "instant" or e.day:
        unit = _text_unit(lang, text)
        if (unit and _OFFSET_CUE[lang].search(text) and g.kind == "point" and g.grain == unit
                and g.span[0] <= span[0] and span[1] <= g.span[1]
                and None not in (g.start, g.end) and g.start <= e.start < g.end):
            return "offset_unit"
    return None


# -- verdicts ---------------------------------------------------------------------------------
@dataclass
class ResultVerdict:
    text: str
    type: str
    span: tuple
    passed: bool = False
    strict: bool = False
    convention: str | None = None
    expected: list = field(default_factory=list)  # Expected.show() strings
    got: list = field(default_factory=list)       # Got.show() of the overlapping expressions
    got_spans: list = field(default_factory=list)  # and their character spans
    dropped: str | None = None                    # why the result is not judged


@dataclass
class Verdict:
    id: str
    lang: str
    input: str
    status: str                 # "pass", "fail" or "skip"
    reason: str | None = None   # the skip reason
    negative: bool = False
    strict: bool = False        # passes with no convention
    results: list = field(default_factory=list)
    found: list = field(default_factory=list)  # every expression parse_time found (shown)


def case_skip_reason(case: Case) -> str | None:
    marks = f"{case.not_supported or ''},{case.not_supported_by_design or ''}".lower()
    if "dotnet" in marks:
        return SKIP_ALL_PLATFORMS
    if case.results and not case.reference:
        return SKIP_NO_REFERENCE
    return None


def result_drop_reason(r: dict) -> str | None:
    t = (r.get("type") or "").lower()
    if t.endswith(".set"):
        return DROP_SET
    if t.endswith(".timezone"):
        return DROP_TIMEZONE
    problems = [value_problem(v) for v in r["values"]]
    if not problems:
        return DROP_NO_VALUE
    if all(problems):
        return problems[0]
    return None


def skip_reason(case: Case) -> str | None:
    """Why ``case`` is not judged (without running the parser), or None when it is."""
    reason = case_skip_reason(case)
    if reason or not case.results:
        return reason
    drops = [result_drop_reason(r) for r in case.results]
    return drops[0] if all(drops) else None


def judge(case: Case) -> Verdict:
    v = Verdict(case.id, case.lang, case.input, "skip", negative=not case.results)
    reason = skip_reason(case)
    if reason:
        v.reason = reason
        return v
    now = _reference(case.reference)
    found = [Got(_naive(e.start), _naive(e.end), e.grain, e.kind,
                 None if e.duration is None else e.duration.total_seconds(), e.fuzzy, e.text,
                 e.span) for e in parse_time(case.input, now=now.isoformat())]
    v.found = [g.show() for g in found]
    if not case.results:
        v.status = "pass" if not found else "fail"
        v.strict = v.status == "pass"
        return v
    judged = []
    for r in case.results:
        rv = ResultVerdict(r["text"], r["type"], (r["start"], r["end"] + 1))
        v.results.append(rv)
        rv.dropped = result_drop_reason(r)
        if rv.dropped:
            continue
        judged.append(rv)
        exps = [expected(x, now) for x in r["values"] if value_problem(x) is None]
        rv.expected = [x.show() for x in exps]
        b, e = rv.span
        overlapping = [g for g in found if g.span[0] < e and b < g.span[1]]
        rv.got = [g.show() for g in overlapping]
        rv.got_spans = [g.span for g in overlapping]
        if any(strict_match(x, g) for x in exps for g in overlapping):
            rv.passed = rv.strict = True
            continue
        for x in exps:
            for g in overlapping:
                name = convention_match(x, g, case.lang, r["text"], now, rv.span)
                if name:
                    rv.passed, rv.convention = True, name
                    break
            if rv.passed:
                break
    v.status = "pass" if all(rv.passed for rv in judged) else "fail"
    v.strict = all(rv.strict for rv in judged)
    return v


def judge_all(lang: str) -> list[Verdict]:
    return [judge(c) for c in load(lang)]
