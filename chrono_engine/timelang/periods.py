"""Calendar arithmetic for the time language: periods, shifts, ``now`` and ``tz`` handling.

All functions work on tz-aware datetimes in one IANA zone. Calendar units (day and
coarser) move by wall-clock (a day starts at local midnight even across a DST change);
hours, minutes and seconds move by elapsed time (computed in UTC).
"""
from __future__ import annotations

import calendar as _stdcal
from datetime import date, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .._args import shown
from ..errors import TimeParseError
from .types import GRAINS

__all__ = [
    "UNIT_SECONDS",
    "add_months",
    "day_span",
    "days_in_month",
    "floor",
    "iso_week_start",
    "month_span",
    "period",
    "resolve_now",
    "resolve_tz",
    "shift",
    "whole_amount",
]

_UTC = timezone.utc
_MONTHS_PER = {"month": 1, "quarter": 3, "half": 6, "year": 12, "decade": 120}
#: Exact lengths of the sub-day units, in seconds.
UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}


@lru_cache(maxsize=64)
def _zone(name: str) -> tzinfo:
    if name.upper() in ("UTC", "Z", "GMT"):
        return _UTC
    try:
        return ZoneInfo(name)
    # OSError: zoneinfo opens the name as a file under its zone directories ("Europe" is a
    # directory; a name of 300 characters is too long for a file name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError) as exc:
        raise TimeParseError(f"unknown time zone {shown(name)}: expected an IANA name such as "
                             f"'Asia/Shanghai' or a tzinfo") from exc


def resolve_tz(tz: object) -> tzinfo:
    """``tz`` argument → tzinfo: None means UTC, a string is an IANA name."""
    if tz is None:
        return _UTC
    if isinstance(tz, tzinfo):
        zone = getattr(tz, "zone", None)
        if isinstance(zone, str) and hasattr(tz, "localize"):
            # pytz zones give local-mean-time offsets when passed as tzinfo=: use the IANA
            # zone of the same name instead
            return _zone(zone)
        return tz
    if isinstance(tz, str):
        return _zone(tz.strip())
    raise TimeParseError(f"tz must be an IANA name, a tzinfo or None, not {type(tz).__name__}")


def resolve_now(now: object, tz: tzinfo) -> datetime:
    """``now`` argument → aware datetime in ``tz``.

    None is the current time; a naive datetime (or ISO string without offset) is read as
    wall-clock time in ``tz``; an aware one is converted to ``tz``; a ``date`` is its
    midnight in ``tz``.
    """
    if now is None:
        return datetime.now(tz)
    if isinstance(now, str):
        text = now.strip()
        if text[-1:] in ("Z", "z"):  # UTC: Python 3.10's fromisoformat reads no "Z" (3.11 does)
            text = text[:-1] + "+00:00"
        try:
            now = datetime.fromisoformat(text)
        except ValueError as exc:
            raise TimeParseError(f"now={shown(now)} is not an ISO 8601 date or datetime") from exc
    elif isinstance(now, date) and not isinstance(now, datetime):
        now = datetime(now.year, now.month, now.day)
    if not isinstance(now, datetime):
        raise TimeParseError(f"now must be a datetime, an ISO string or None, "
                             f"not {type(now).__name__}")
    if now.tzinfo is None or now.utcoffset() is None:
        return now.replace(tzinfo=tz)
    return now.astimezone(tz)


def days_in_month(year: int, month: int) -> int:
    return _stdcal.monthrange(year, month)[1]


def add_months(year: int, month: int, n: int) -> tuple[int, int]:
    """(year, month) shifted by ``n`` months."""
    k = year * 12 + (month - 1) + n
    return k // 12, k % 12 + 1


def iso_week_start(d: date) -> date:
    """The Monday of the ISO week holding ``d``."""
    return d - timedelta(days=d.weekday())


def _month_period(year: int, month: int, months: int, tz: tzinfo) -> tuple[datetime, datetime]:
    y2, m2 = add_months(year, month, months)
    return datetime(year, month, 1, tzinfo=tz), datetime(y2, m2, 1, tzinfo=tz)


def floor(t: datetime, grain: str) -> datetime:
    """Start of the ``grain`` unit holding ``t`` (weeks start on Monday; quarters, halves
    and decades are calendar-aligned)."""
    tz = t.tzinfo
    if grain == "second":
        return t.replace(microsecond=0)
    if grain == "minute":
        return t.replace(second=0, microsecond=0)
    if grain == "hour":
        return t.replace(minute=0, second=0, microsecond=0)
    if grain == "day":
        return datetime(t.year, t.month, t.day, tzinfo=tz)
    if grain == "week":
        d = iso_week_start(t.date())
        return datetime(d.year, d.month, d.day, tzinfo=tz)
    if grain == "month":
        return datetime(t.year, t.month, 1, tzinfo=tz)
    if grain == "quarter":
        return datetime(t.year, (t.month - 1) // 3 * 3 + 1, 1, tzinfo=tz)
    if grain == "half":
        return datetime(t.year, 1 if t.month <= 6 else 7, 1, tzinfo=tz)
    if grain == "year":
        return datetime(t.year, 1, 1, tzinfo=tz)
    if grain == "decade":
        return datetime(t.year - t.year % 10, 1, 1, tzinfo=tz)
    raise TimeParseError(f"grain must be one of {', '.join(GRAINS)}, got {shown(grain)}")


def shift(t: datetime, grain: str, n: int) -> datetime:
    """``t`` moved by ``n`` whole units of ``grain``.

    Months and coarser clamp the day to the target month's length (Mar 31 − 1 month =
    Feb 28/29); days and weeks move by wall clock; sub-day units by elapsed time. A move
    past the ends of datetime's range (years 1 and 9999) stops at the end ("23:59" on the
    last day of year 9999 ends at the last representable instant).
    """
    try:
        return _shift(t, grain, n)
    except OverflowError:
        edge = (datetime.max if n > 0 else datetime.min).replace(tzinfo=_UTC)
        try:
            return edge.astimezone(t.tzinfo)
        except OverflowError:  # the zone's offset would take it out again: the UTC instant
            return edge


def _shift(t: datetime, grain: str, n: int) -> datetime:
    if grain in UNIT_SECONDS:
        u = t.astimezone(_UTC) + timedelta(seconds=UNIT_SECONDS[grain] * n)
        return u.astimezone(t.tzinfo)
    if grain == "day":
        return t + timedelta(days=n)
    if grain == "week":
        return t + timedelta(days=7 * n)
    y, m = add_months(t.year, t.month, _MONTHS_PER[grain] * n)
    return t.replace(year=y, month=m, day=min(t.day, days_in_month(y, m)))


_STEP_DOWN = {"decade": ("year", 10), "year": ("month", 12), "half": ("month", 6),
              "quarter": ("month", 3), "month": ("day", 30), "week": ("day", 7),
              "day": ("hour", 24), "hour": ("minute", 60), "minute": ("second", 60)}


def whole_amount(n: float, unit: str) -> tuple[int, str]:
    """A fractional amount restated in a smaller unit until it is whole: 0.5 year → 6
    months, 1.5 months → 45 days (a month counts 30 days here), 0.5 day → 12 hours."""
    while n != int(n) and unit in _STEP_DOWN:
        unit, k = _STEP_DOWN[unit]
        n = n * k
    return int(round(n)), unit


def period(t: datetime, grain: str) -> tuple[datetime, datetime]:
    """The calendar unit of ``grain`` holding ``t``, as ``(start, end)``."""
    s = floor(t, grain)
    if grain in UNIT_SECONDS:
        return s, shift(s, grain, 1)
    if grain == "day":
        d = s.date() + timedelta(days=1)
        return s, datetime(d.year, d.month, d.day, tzinfo=s.tzinfo)
    if grain == "week":
        d = s.date() + timedelta(days=7)
        return s, datetime(d.year, d.month, d.day, tzinfo=s.tzinfo)
    return _month_period(s.year, s.month, _MONTHS_PER[grain], s.tzinfo)


def day_span(y: int, m: int, d: int, tz: tzinfo, days: int = 1) -> tuple[datetime, datetime]:
    """``days`` whole days from local midnight of y-m-d."""
    a = date(y, m, d)
    b = a + timedelta(days=days)
    return datetime(a.year, a.month, a.day, tzinfo=tz), datetime(b.year, b.month, b.day, tzinfo=tz)


def month_span(y: int, m: int, tz: tzinfo, months: int = 1) -> tuple[datetime, datetime]:
    """``months`` whole months from the first instant of y-m."""
    return _month_period(y, m, months, tz)
