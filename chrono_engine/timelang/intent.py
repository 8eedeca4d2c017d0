"""``parse_temporal_intent``: turn a whole query into a retrieval intent.

Rules, in order (the article's three query kinds, made precise):

1. **as_of** from an as-of bound: "截至2024年8月", "as of March 2024" (and "截至X为止").
2. **as_of** from a point plus an as-of marker: a single calendar unit (a day, a month, a
   year ...) in a query that also says *when the state held*: 时 / 时候 / 当时 / 生效 / 有效 /
   施行 / 实施 / 执行 / 适用 / 现行, or "when" (not as the first word), "at the time",
   "in force", "in effect", "effective", "valid", "applicable", "current", or "at"
   right before the expression. "2024 年 8 月签订该采购合同时审批权限表是什么" is this case.
   The point nearest before the marker is used (else the first one after it).
3. **window** for everything else that has a time: ranges, bounds, rolling ranges, and
   plain points ("2024 年 3 月发布的供应商考核办法", "上个月的报销政策"). An explicit
   range or bound is the constraint: with one, the other expressions describe the topic
   ("born in 1961 … from 1996 to 1998" is [1996, 1999)) and rule 2 is not tried. With
   several expressions of the same rank the window is their hull; an open side stays None.
4. **latest** when the query has no time, or only "now" words (现在, 目前, now, 截至目前)
   and implicit-latest words (最新, 当前, 现行, 有效, 最近; latest, current, currently).
   Bare durations ("有效期三个月") do not count as a time.

Anchor of an as_of intent: the **last instant of the named period** (its end minus 1 µs),
i.e. the state once everything effective during that period had taken effect — "as of
March 2024" is 2024-03-31T23:59:59.999999; "2024 年 8 月签订…时" is 2024-08-31T23:59:59.999999
(the same rule, so the two kinds of phrase never disagree). When the period contains
``now`` (截至本月, as of this year) the anchor is ``now`` instead: the future is not
known yet. ``window`` is None in as_of mode and ``anchor`` None in the others.

``cleaned_query`` drops the time expressions (durations stay: they are content),
implicit-latest words and pure time words (当时, at the time), a 的 right after a dropped
span and a preposition right before one (in, on, at, during, since, 在, 于 ...), then
tidies whitespace and stray leading / trailing commas.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from ..errors import ArgumentTypeError
from .grammar import Cand, Ctx
from .parser import context, lone_part, normalise, scan, to_expression
from .types import TemporalIntent

__all__ = ["parse_temporal_intent"]

_US = timedelta(microseconds=1)
_IA = re.IGNORECASE | re.ASCII

_LATEST = re.compile(
    r"最新|当前|现行|有效(?!期|性|率)|最近|现在|目前|如今|当下|眼下|现今|时下"
    r"|\b(?:latest|current|currently|nowadays|newest|most\s+recent|up[\s-]to[\s-]date"
    r"|in\s+force|in\s+effect|valid)\b", re.IGNORECASE)
_PURE_ASOF = re.compile(r"当时|那时|届时|\b(?:at\s+the\s+time|at\s+that\s+time|back\s+then)\b",
                        re.IGNORECASE)
_MARKER = re.compile(
    r"当时|那时|届时|时候|(?<=合同)时|(?<![同及临按准随有暂定实小计超适即过顿当那届])时"
    r"(?!间|期|代|长|效|区|态|段|速|针|尚|髦|事|政|常|装|空|差|序|光|机|限|令|节|辰|势|钟|日|隔|分|薪)"
    r"|生效|有效(?!期|性|率)|施行|实施|执行|适用|现行"
    r"|\b(?:as\s+of|as\s+at|at\s+the\s+time|at\s+that\s+time|back\s+then|in\s+force|in\s+effect"
    r"|effective|valid|applicable|applied|current|when|while)\b", re.IGNORECASE)
_AT_BEFORE = re.compile(r"\bat\s+$", _IA)
_AT_START = re.compile(r"at\s", _IA)
_FIRST_WORD_WHEN = re.compile(r"\s*(when)\b", _IA)
_DE_AFTER = re.compile(r"\s*的")
_PREP_BEFORE = re.compile(
    r"(?:\b(?:in|on|at|during|for|from|of|since|by|within|over|around|about|throughout"
    r"|until|till|before|after)\s*|[在于])$", _IA)
#: the roles of explicit ranges and bounds (compose.py), preferred over plain points
_CONSTRAINT_ROLES = frozenset({"range", "since", "from", "after", "before", "until"})
_EDGE_PUNCT = " \t\r\n,，、;；:："
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?，。；：！？、）)])")


def _is_now(c: Cand) -> bool:
    return c.cls == "now" or c.fzpart == "now"


def _anchor(start: datetime, end: datetime, now: datetime) -> datetime:
    if start <= now < end:
        return now
    return end - _US


def _outside(spans: list[tuple[int, int]], b: int, e: int) -> bool:
    return all(e <= s or b >= x for s, x in spans)


def parse_temporal_intent(query: str, now: datetime | str | None = None,
                          tz: str | tzinfo | None = None) -> TemporalIntent:
    """The retrieval intent of ``query``: mode, anchor, window and the cleaned query.

    ``now`` and ``tz`` are as for :func:`parse_time` (an unusable one raises
    :class:`~chrono_engine.errors.TimeParseError`); a ``query`` that is not a str raises
    :class:`~chrono_engine.errors.ArgumentTypeError` (a ``TypeError``).

    >>> i = parse_temporal_intent("2024 年 8 月签订该采购合同时审批权限表是什么",
    ...                           now="2026-05-01", tz="Asia/Shanghai")
    >>> i.mode, i.anchor.isoformat(), i.cleaned_query
    ('as_of', '2024-08-31T23:59:59.999999+08:00', '签订该采购合同时审批权限表是什么')
    >>> parse_temporal_intent("现在总监出差住宿标准是多少？", now="2026-05-01").mode
    'latest'
    """
    if not isinstance(query, str):
        raise ArgumentTypeError(f"query must be a str, not {type(query).__name__}")
    ctx: Ctx = context(now, tz)
    text = normalise(query)
    cands = scan(text, ctx) if text else []
    expressions = [to_expression(c, query) for c in cands]
    # a part of the day with no day ("in the morning") says when in a day, not which day:
    # no constraint, and its words stay in the query
    cands = [c for c in cands if not lone_part(c)]
    timed = [c for c in cands if c.kind != "duration" and not _is_now(c)]
    removed = [(c.b, c.e) for c in cands if c.kind != "duration"]

    mode, anchor, window = "latest", None, None
    if timed:
        asof = next((c for c in timed if c.role == "asof"), None)
        if asof is not None:
            mode, anchor = "as_of", _anchor(asof.inner[0], asof.inner[1], ctx.now)
        else:
            # an explicit range or bound is the question's constraint; other expressions
            # ("born in 1961 ... from 1996 to 1998") describe the topic, not the window
            constraint = [c for c in timed if c.role in _CONSTRAINT_ROLES]
            point = None if constraint else _marked_point(text, timed, removed)
            if point is not None:
                mode, anchor = "as_of", _anchor(point.start, point.end, ctx.now)
            else:
                pool = constraint or timed
                starts = [c.start for c in pool]
                ends = [c.end for c in pool]
                window = (None if any(s is None for s in starts) else min(starts),
                          None if any(x is None for x in ends) else max(ends))
                mode = "window"

    for pat in (_LATEST, _PURE_ASOF):
        for m in pat.finditer(text):
            if _outside(removed, m.start(), m.end()):
                removed.append((m.start(), m.end()))
    spans = _merge(_widen(text, removed))
    return TemporalIntent(mode=mode, anchor=anchor, window=window,
                          cleaned_query=_clean(query, spans), expressions=expressions,
                          spans=spans, query=query)


def _marked_point(text: str, timed: list[Cand], spans: list[tuple[int, int]]) -> Cand | None:
    points = [c for c in timed if c.kind == "point"]
    if not points:
        return None
    for c in points:  # "at 3pm", "at the end of 2023"
        if _AT_BEFORE.search(text, max(0, c.b - 8), c.b) or _AT_START.match(text, c.b):
            return c
    first_when = _FIRST_WORD_WHEN.match(text)
    for m in _MARKER.finditer(text):
        if not _outside(spans, m.start(), m.end()):
            continue
        if first_when and m.start() == first_when.start(1):
            continue  # a question word: "when was ... changed in 2024"
        before = [c for c in points if c.e <= m.start()]
        return before[-1] if before else points[0]
    return None


def _widen(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Take a 的 after and a preposition before each span with it."""
    out = []
    for b, e in spans:
        m = _DE_AFTER.match(text, e)
        if m:
            e = m.end()
        m = _PREP_BEFORE.search(text, max(0, b - 16), b)
        if m:
            b = m.start()
        out.append((b, e))
    return out


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for b, e in sorted(spans):
        if out and b <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((b, e))
    return out


def _cjk(ch: str) -> bool:
    return "\u2e80" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef"


def _clean(query: str, spans: list[tuple[int, int]]) -> str:
    parts = []
    pos = 0
    for b, e in spans:
        parts.append(query[pos:b])
        before = query[b - 1] if b > 0 else ""
        after = query[e] if e < len(query) else ""
        # a space keeps English words apart; Chinese needs none
        parts.append("" if (before and _cjk(before)) or (after and _cjk(after)) else " ")
        pos = e
    parts.append(query[pos:])
    s = _SPACES.sub(" ", "".join(parts))
    s = _SPACE_BEFORE_PUNCT.sub(r"\1", s)
    return s.strip(_EDGE_PUNCT)
