"""``ground``: the time-scoped facts of a text (a chunk of a document), for ingesting text
whose time lives inside it rather than in validity columns (docs/time.md).

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
from .grammar import Ctx
from .parser import context, expressions, normalise

__all__ = ["GroundedFact", "ground"]

#: the second reference instant is the first moved by this much (every grain differs: year,
#: quarter, month, ISO week, day, hour, minute, second), away from the calendar's nearer end
_SHIFT = timedelta(days=400, hours=7, minutes=13, seconds=17)
#: the reference instant when no document date is given (any instant works: expressions that
#: depend on it are either re-resolved against the narrative or left out)
_REFERENCE = datetime(2001, 7, 11, 13, 37, 11)
_YEAR4 = re.compile(r"[0-9]{4}")
#: the second reading of an expression the second reference did not find
_UNREAD = object()
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


class _WatchedCtx(Ctx):
    """A :class:`Ctx` that records whether the parse read the moment of parsing (``now``,
    ``year``, ``month``, ``today`` or a ``period`` of it): a parse that never did gives the
    same expressions at any other moment."""

    __slots__ = ("read_now",)

    def __init__(self, now: datetime, tz: tzinfo):
        super().__init__(now, tz)
        self.read_now = False


def _watch(name: str) -> property:
    slot = Ctx.__dict__[name]  # the base class's slot descriptor

    def get(self: _WatchedCtx):
        self.read_now = True
        return slot.__get__(self, Ctx)
    return property(get, slot.__set__)


for _name in ("now", "year", "month", "today"):
    setattr(_WatchedCtx, _name, _watch(_name))


@lru_cache(maxsize=16384)
def _alone(text: str, now1: datetime, now2: datetime, tz: tzinfo) -> tuple | None:
    """The intervals of an expression's own text read alone at ``now1`` and at ``now2``, or
    None when alone it is not exactly one expression covering the whole text. An exact
    cache: the result depends only on the arguments (corpora repeat their expressions:
    "2009", "the following year"). A reading at ``now1`` that never looked at the moment
    ("March 2009", "from 2004 to 2008") is the reading at ``now2`` too, without a second parse."""
    out = []
    for now in (now1, now2):
        ctx = _WatchedCtx(now, tz)
        got = expressions(text, ctx)
        if len(got) != 1 or got[0].span != (0, len(text)):
            return None
        out.append((got[0].start, got[0].end))
        if not ctx.read_now:
            return (out[0], out[0])
    return tuple(out)


def _read_alone(text: str, now1: datetime, now2: datetime, tz: tzinfo) -> tuple | None:
    try:
        return _alone(text, now1, now2, tz)
    except TypeError:  # an unhashable tzinfo: read without the cache
        return _alone.__wrapped__(text, now1, now2, tz)


def _shifted(now: datetime) -> datetime:
    """The second reference: ``now`` moved by :data:`_SHIFT`, away from the calendar's
    nearer end (so it never leaves datetime's range)."""
    return now - _SHIFT if now.year > 5000 else now + _SHIFT


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
    ctx = context(doc_date if doc_date is not None else _REFERENCE, tz, _WatchedCtx)
    first = expressions(norm, ctx, lone_parts=False)
    if not first:
        return []
    # a reading that never looked at the moment is the same at any other: every expression
    # is absolute, and none is read again (asked before this function reads ctx.now itself)
    every_absolute = not ctx.read_now
    z, now1 = ctx.tz, ctx.now
    now2 = _shifted(now1)
    second = None
    out: list[GroundedFact] = []
    anchor: datetime | None = None
    for e in first:
        # a bare four-digit year is that year whatever "now" is; another expression is read
        # alone when alone it reads as it does in the text, else the whole text again at
        # the second reference
        if every_absolute or (e.grain == "year" and e.kind == "point" and _YEAR4.fullmatch(e.text)):
            other = (e.start, e.end)
        else:
            alone = _read_alone(e.text, now1, now2, z)
            if alone is not None and alone[0] == (e.start, e.end):
                other = alone[1]
            else:
                if second is None:
                    second = {x.span: (x.start, x.end) for x in expressions(norm, Ctx(now2, z), lone_parts=False)}
                other = second.get(e.span)
        s, t = e.start, e.end
        o_s, o_t = other if other is not None else (_UNREAD, _UNREAD)
        if (o_s, o_t) == (s, t):
            how = "absolute"
        else:
            # a side that is "now" under both references: open end / document-date start; an
            # end at "now" under one reference may be open under the other (the parser opens
            # "since 2003" read before 2003): both mean "still holds when written"
            s_now = s == now1 and o_s == now2
            t_now = (t is None or t == now1) and (o_t is None or o_t == now2)
            fixed = (s_now or o_s == s) and (t_now or o_t == t)
            if t_now:
                t = None
            if fixed:  # "since 2003": a fixed start, an end at now
                if s_now and doc_date is None:
                    continue
                how = "document" if s_now else "absolute"
            elif doc_date is not None:
                how = "document"
            elif anchor is not None and _ANAPHORIC.search(e.text):
                how = "narrative"
                again = expressions(e.text, Ctx(anchor, z))
                if len(again) != 1:
                    continue
                s, t = again[0].start, again[0].end
            else:
                continue
        if s is None and t is None:
            continue  # a bare duration: no position in time
        if s is not None and t is not None and not s < t:
            continue
        out.append(GroundedFact(s, t, text[e.span[0]:e.span[1]], e.span, how, e.grain, e.kind, e.fuzzy))
        if how == "absolute" and s is not None:
            anchor = s
    return out
