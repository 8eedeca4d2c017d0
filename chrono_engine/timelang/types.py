"""The value types of the time language: :class:`TimeExpression` and :class:`TemporalIntent`.

Both are plain frozen dataclasses so they hash, compare and print well; the parser builds
them once per match and never mutates them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

__all__ = ["GRAINS", "KINDS", "MODES", "TemporalIntent", "TimeExpression"]

#: Grains from finest to coarsest; ``GRAINS.index`` orders them.
GRAINS = ("second", "minute", "hour", "day", "week", "month", "quarter", "half", "year",
          "decade")
#: ``point``: one calendar unit (a day, a month, a quarter, "yesterday", "Q3 2024");
#: ``span``: an interval between two bounds (ranges, since/until bounds, rolling ranges);
#: ``duration``: an amount of time with no position ("三个月", "for 2 weeks").
KINDS = ("point", "span", "duration")
#: Retrieval modes of :class:`TemporalIntent`, matching the engine's query modes.
MODES = ("latest", "as_of", "window")


@dataclass(frozen=True, slots=True)
class TimeExpression:
    """One time expression found in a text, resolved to a half-open interval.

    ``start`` and ``end`` are tz-aware datetimes of the interval ``[start, end)`` in the
    parse's time zone; either is None when that side is open ("before 2024" has no start,
    "after 2023" no end) and both are None for a bare duration, which has no position.
    ``grain`` is the unit the expression was stated in ("day" for "2024-03-07", "month" for
    "上个月", "day" for "past 90 days"). ``duration`` is the length of the amount the text
    names, for durations and rolling ranges ("近三个月" → the exact length of those three
    calendar months), else None. ``fuzzy`` marks vague edges (年初, late 2024, 下旬, parts of
    the day, "a few days ago"). ``text`` is the matched text and ``span`` its
    ``(begin, end)`` character offsets in the input (``text == input[begin:end]``).

    >>> from chrono_engine.timelang import parse_time
    >>> e = parse_time("2024年3月7日", now="2025-01-01", tz="Asia/Shanghai")[0]
    >>> e.start.isoformat(), e.end.isoformat(), e.grain, e.kind
    ('2024-03-07T00:00:00+08:00', '2024-03-08T00:00:00+08:00', 'day', 'point')
    """

    start: datetime | None
    end: datetime | None
    grain: str
    kind: str
    duration: timedelta | None = None
    fuzzy: bool = False
    text: str = ""
    span: tuple[int, int] = (0, 0)


@dataclass(frozen=True, slots=True)
class TemporalIntent:
    """What a whole query asks for in time, ready for :meth:`Engine.search`.

    ``mode`` is ``"latest"`` (no time, or only words such as 最新 / current / now),
    ``"as_of"`` (the state at one instant: ``anchor``) or ``"window"`` (items valid at some
    time in ``window = (start, end)``, half-open; either end may be None for open bounds).
    ``anchor`` is set only in ``as_of`` mode and ``window`` only in ``window`` mode.
    ``cleaned_query`` is the query with the time words removed and whitespace tidied, for
    the semantic embedder; ``expressions`` are the :class:`TimeExpression` found, and
    ``spans`` every ``(begin, end)`` range that was removed from the query (expressions,
    as-of words and latest words), in text order.
    """

    mode: str
    anchor: datetime | None
    window: tuple[datetime | None, datetime | None] | None
    cleaned_query: str
    expressions: list[TimeExpression] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    query: str = ""
