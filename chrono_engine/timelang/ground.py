"""``ground``: the time-scoped facts of a text (a chunk of a document), for ingesting text
whose time lives inside it rather than in validity columns (issue 24, docs/time.md).

Every time expression :func:`parse_time` finds becomes one :class:`GroundedFact`: the
expression's span and the validity interval it gives the statement around it. How an
expression is resolved depends on whether it is *absolute* (its interval does not depend on
``now``: "in 1998", "March 2004", "from 2004 to 2008", 2024年3月) or *relative* ("last year",
"two years later", 上个月, "since 2003"'s end):

- absolute expressions are kept as written;
- relative ones are resolved against ``doc_date`` (the date the text was written or
  published) when it is given (``anchor="document"``);
- without a ``doc_date``, *anaphoric* relative expressions ("the following year", "two
  years later", "the same year", 次年, 两年后) are resolved against the latest absolute
  expression before them in the text, the way a reader follows a narrative
  (``anchor="narrative"``); deictic ones ("now", "last year", 今天, "3 days ago") cannot be
  placed without the document's date and are left out, as is a relative expression with no
  absolute one before it;
- an end that is "now" in the text ("since 2003", 2003年以来, "the past two years" ends at the
  document's date) is an *open* end in the fact: the text says the fact still held when it
  was written, not that it stopped then. A start that is "now" ("from now on") becomes the
  document's date (without one, the expression is left out).

Relative and absolute are told apart by parsing the text against two different reference
instants: an expression whose interval is the same under both does not depend on ``now``.
Every fact's ``span`` lies in the text and ``text == chunk[span[0]:span[1]]``; ``start <
end`` where both are set; facts are in text order.
"""
from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from ..errors import ArgumentTypeError
from .parser import context, normalise, scan, to_expression
from .types import TimeExpression

__all__ = ["GroundedFact", "ground"]

#: the second reference instant is the first moved by this much (every grain differs: year,
#: quarter, month, ISO week, day, hour, minute, second), away from the calendar's nearer end
_SHIFT = timedelta(days=400, hours=7, minutes=13, seconds=17)
#: the reference instant when no document date is given (any instant works: expressions that
#: depend on it are either re-resolved against the narrative or left out)
_REFERENCE = datetime(2001, 7, 11, 13, 37, 11)
_YEAR4 = re.compile(r"[0-9]{4}")
#: relative expressions that refer back to a time the text just named, not to "now"
_ANAPHORIC = re.compile(
    r"\b(?:later|earlier|after(?:wards)?|before|following|previous|prior|same|that|the\s+next)\b"
    r"|[次翌同]\s*[年月日天周]|当\s*[年月日天]|[年月日天周]\s*[之以]?后",
    re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class GroundedFact:
    """One time-scoped fact of a text: the validity ``[start, end)`` (tz-aware datetimes;
    None for an open side) that the expression at ``span`` gives its statement.

    ``anchor`` says how it was resolved: ``"absolute"`` (as written), ``"document"``
    (relative, against the document date) or ``"narrative"`` (relative, against the
    absolute expression before it). ``grain``, ``kind`` and ``fuzzy`` are the expression's
    (see :class:`TimeExpression`); ``text`` is the expression's text.
    """

    start: datetime | None
    end: datetime | None
    text: str
    span: tuple[int, int]
    anchor: str
    grain: str
    kind: str
    fuzzy: bool = False


def _expressions(text: str, now: datetime | None, tz: object) -> tuple[list[TimeExpression], datetime]:
    ctx = context(now, tz)
    return [to_expression(c, text) for c in scan(text, ctx)
            if c.start is None or c.end is None or c.start < c.end], ctx.now


@lru_cache(maxsize=16384)
def _alone(text: str, now1: datetime, now2: datetime, tz: object) -> tuple | None:
    """The intervals of an expression's own text read alone at ``now1`` and at ``now2``, or
    None when alone it is not exactly one expression covering the whole text. An exact
    cache: the result depends only on the arguments (corpora repeat their expressions:
    "2009", "the following year")."""
    a, _ = _expressions(text, now1, tz)
    if len(a) != 1 or a[0].span != (0, len(text)):
        return None
    b, _ = _expressions(text, now2, tz)
    if len(b) != 1 or b[0].span != (0, len(text)):
        return None
    return (a[0].start, a[0].end), (b[0].start, b[0].end)


def _shifted(now: datetime) -> datetime:
    try:
        return now - _SHIFT if now.year > 5000 else now + _SHIFT
    except OverflowError:  # pragma: no cover - both directions cannot overflow
        return now


def ground(text: str, doc_date: datetime | str | None = None, *,
           tz: str | tzinfo | None = None) -> list[GroundedFact]:
    """The time-scoped facts of ``text``, in text order (module docstring for the rules).

    ``doc_date``: when the text was written (a datetime, ``date`` or ISO 8601 string, as
    ``now`` of :func:`parse_time`; naive = wall clock in ``tz``), or None when unknown.
    ``tz``: the zone of the results and of naive times (IANA name, tzinfo or None for UTC).
    A text with no time, or only relative times that cannot be placed, gives ``[]``: the
    chunk is *undated*.

    >>> [(f.text, f.start.year, f.end, f.anchor)
    ...  for f in ground("He joined Boston in 2009 and left two years later.")]
    [('2009', 2009, datetime.datetime(2010, 1, 1, 0, 0, tzinfo=datetime.timezone.utc), 'absolute'), \
('two years later', 2011, datetime.datetime(2012, 1, 1, 0, 0, tzinfo=datetime.timezone.utc), 'narrative')]
    """
    if not isinstance(text, str):
        raise ArgumentTypeError(f"text must be a str, not {type(text).__name__}")
    if not text:
        context(doc_date, tz)  # a bad doc_date or tz is refused even for an empty text
        return []
    norm = normalise(text)
    first, now1 = _expressions(norm, doc_date if doc_date is not None else _REFERENCE, tz)
    if not first:
        return []
    now2 = _shifted(now1)
    second = None
    try:
        hash(tz)
    except TypeError:  # pragma: no cover - an unhashable tzinfo: no cache
        tz_key = None
    else:
        tz_key = tz
    out: list[GroundedFact] = []
    anchor: datetime | None = None
    for e in first:
        # a bare four-digit year is that year whatever "now" is; another expression is read
        # alone when alone it reads as it does in the text, else the whole text again at
        # the second reference
        if e.grain == "year" and e.kind == "point" and _YEAR4.fullmatch(e.text):
            other = (e.start, e.end)
        else:
            alone = _alone(e.text, now1, now2, tz_key) if tz_key is not None or tz is None else None
            if alone is not None and alone[0] == (e.start, e.end):
                other = alone[1]
            else:
                if second is None:
                    second = {x.span: (x.start, x.end) for x in _expressions(norm, now2, tz)[0]}
                other = second.get(e.span)
        s, t = e.start, e.end
        if other is not None and other == (s, t):
            how = "absolute"
        else:
            # a side that is "now" under both references: open end / document-date start
            s_now = other is not None and s == now1 and other[0] == now2
            # an end at "now" under one reference may be open under the other (the parser
            # opens "since 2003" read before 2003): both mean "still holds when written"
            t_now = other is not None and (t is None or t == now1) and (other[1] is None or other[1] == now2)
            fixed_s = other is not None and (s_now or other[0] == s)
            fixed_t = other is not None and (t_now or other[1] == t)
            if fixed_s and fixed_t:  # "since 2003": a fixed start, an end at now
                how = "absolute" if not s_now else ("document" if doc_date is not None else None)
                if t_now:
                    t = None
            elif doc_date is not None:
                how = "document"
                if t_now:
                    t = None
            elif anchor is not None and _ANAPHORIC.search(e.text):
                how = "narrative"
                again = _expressions(e.text, anchor, tz)[0]
                if len(again) != 1:
                    continue
                s, t = again[0].start, again[0].end
            else:
                continue
            if how is None:
                continue
        if s is None and t is None:
            continue  # a bare duration: no position in time
        if s is not None and t is not None and not s < t:
            continue
        out.append(GroundedFact(s, t, text[e.span[0]:e.span[1]], e.span, how, e.grain, e.kind, e.fuzzy))
        if how == "absolute" and s is not None:
            anchor = s
    return out
