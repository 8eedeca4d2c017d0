"""Composition of the grammars' atoms: choose non-overlapping matches, then attach fuzzy
edges (2024年初, late March), clock times to their days (明天下午3点, March 7 at 3pm), join
ranges (2024年3月至5月, from March to May 2024, between 2020 and 2022) and bounds (since
2023, 2023年以来, 截至2024年8月, before/after/until X, X之前/之后, 自X起).

Each step is one linear pass over the few atoms of a text; prefix and suffix words are
matched with precompiled patterns anchored at the atom's edges.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from datetime import datetime, timedelta

from . import periods as P
from .grammar import GRAIN_ORDER, Cand, Ctx, clock_on_day, day_at, future_said, fuzzy_part, range_cand
from .en import _WEEKDAYS
from .zh import NIGHT_PARTS, PM_PARTS, attach_clock_to_day

__all__ = ["compose", "select"]

_IA = re.IGNORECASE | re.ASCII

# -- fuzzy edges ----------------------------------------------------------------------------
_ZH_FZ = re.compile(
    r"\s*(?:的)?\s*(?P<w>年初|年底|年末|年中|月初|月底|月末|月中|上旬|中旬|下旬"
    r"|初(?!步|次|级|衷|稿|审|选|中|赛|学|心|值|创|版|期|始)|底(?!薪|线|层|部|价|气|座|盘|稿|下|数)"
    r"|末(?!端|尾|位|班|日)|中(?=$|[的，。,.;；！？!?\s时前后以之]))")
_ZH_FZ_PART = {"初": "early", "底": "late", "末": "late", "中": "mid", "上旬": "early",
               "中旬": "mid", "下旬": "late"}
_EN_FZ = re.compile(
    r"(?:\b(?P<a>early|mid|late)[\s-]*(?:in\s+)?(?:the\s+)?"
    r"|\b(?:(?:at|in|towards?)\s+)?(?:the\s+)?(?P<b>beginning|start|end|middle)\s+of\s+"
    r"(?:the\s+)?)$", _IA)
_FZ_GRAINS = frozenset({"year", "half", "quarter", "month", "decade", "week"})
_EDGE_GRAINS = frozenset({"year", "half", "quarter", "month"})


def _edge(c: Cand) -> datetime | None:
    """The instant a range means by an edge of a unit: "to the start of 2008" = until 2008
    begins, "from the end of 2007" = from when 2007 ends, "the middle of September" = its
    middle day; None for other candidates."""
    if not (isinstance(c.fzpart, tuple) and c.fzpart[0] == "edge"):
        return None
    _, part, grain = c.fzpart
    s, e = P.period(c.start, grain)
    if part == "early":
        return s
    if part == "late":
        return e
    mid = s + (e - s) / 2
    return mid.replace(hour=0, minute=0, second=0, microsecond=0)

_WEEKDAY_GAP = re.compile(r"\s*[(（,，]?\s*$")
_WEEKDAY_CLOSE = re.compile(r"\s*[)）]")
_WEEKDAY_BEFORE_GAP = re.compile(r"\s*[,，(（-]?\s*$")

# -- clock attachment ---------------------------------------------------------------------
_GAP_DAY_CLOCK = re.compile(r"\s*(?:的|,|，|at|@|on|around|about|from|for)?\s*$", _IA)
_GAP_CLOCK_DAY = re.compile(r"\s*(?:on|,|，)?\s*$", _IA)
#: an English word right before a whole-hour clock time that has no day next to it; a word
#: other than these makes it a name or a number ("signed 2AM in 2010": the band), dropped
_WORD_BEFORE = re.compile(r"\b(?P<w>[A-Za-z']+)\s*$", _IA)
_LONE_CLOCK_CUES = frozenset(
    "at around about by until till til from to before after since between and or past of in on "
    "approximately approx ca circa is was it's its be back the each every than instead due "
    "today tonight tomorrow yesterday morning afternoon evening night noon midnight week day "
    "weekend daily starts start ends end begins begin opens open closes close meet call leave "
    "arrive come go get up wake set me us you him her them am pm o'clock oclock "
    "breakfast brunch lunch dinner supper meeting party class".split())

#: the second clock of a range said in the afternoon; a first clock that says its half
#: of the day (am, a part of the day, a 24-hour hour, a leading zero) keeps it
_PM_END = re.compile(r"[0-9]\s*p\.?\s?m\b|\bp\.?\s?m\b", _IA)
_HALF_SAID = re.compile(r"\b[ap]\.?\s?m\b|[0-9][ap]\.?m?\b|morning|afternoon|evening|night|noon|midnight"
                        r"|[上下中早晚午夜凌]|(?<![0-9:.])(?:0[0-9]|1[3-9]|2[0-4])(?::[0-9]{2}){0,2}\s*$", _IA)

# -- ranges ---------------------------------------------------------------------------------
_CONNECT = re.compile(r"\s*(?P<w>至|到|~|～|-|—|–|－|to|until|till|til|through|thru|and|&|和|与|跟)\s*$",
                      _IA)
_RANGE_PRE = re.compile(r"(?:(?P<zh>从|自|由|在|介于)\s*|\b(?P<en>from|between)\s+(?:the\s+)?)$", _IA)
_RANGE_SUF = re.compile(r"\s*(?P<w>之间|期间|间|为止|止|以内|内)")
_AND = frozenset({"and", "&", "和", "与", "跟"})

# -- bounds ---------------------------------------------------------------------------------
_BOUND_PRE = re.compile(
    r"(?:(?P<zh>截至|截止(?:到|至)?|直到|直至|(?:(?<=^)|(?<=[\s，,。;；:：(（]))(?:到|至)|自从|自打|自|从|由|打从"
    r"|始于|早于|晚于|不早于|不晚于)\s*"
    r"|\b(?P<en>ever\s+since|since|after|later\s+than|before|prior\s+to|earlier\s+than|until|till"
    r"|til|up\s+(?:to|until)|through|thru|by|no\s+later\s+than|not\s+later\s+than|as\s+of|as\s+at|as\s+on"
    r"|starting(?:\s+(?:from|on|in|at))?|beginning(?:\s+(?:from|on|in))?|effective(?:\s+(?:from|on))?"
    r"|as\s+early\s+as|as\s+late\s+as|no\s+earlier\s+than|not\s+earlier\s+than|any\s*time\s+from"
    r"|(?:year\s+)?greater\s+than|(?:year\s+)?less\s+than"
    r"|from)\s+(?:(?:around|about|approximately|roughly)\s+)?|(?P<op>>\s*=|<\s*=|≥|≤|>|<)\s*)$", _IA)
_ZH_NUMISH = "[\\d一二三四五六七八九十两半几天]"
_BOUND_SUF = re.compile(
    r"\s*(?P<zh>[或及](?:之前|以前|之后|以后)|以来|至今|迄今|到现在|到目前为止|到目前|到今天|以后|之后|过后|后(?!" + _ZH_NUMISH + r")"
    r"|以前|之前|前(?!" + _ZH_NUMISH + r"|后)|为止|止|起|开始|往后|伊始)"
    r"|\s+(?P<en>onwards?|and\s+(?:later|after|beyond|onwards?|greater|up)|or\s+later|or\s+after|or\s+greater"
    r"|and\s+(?:earlier|before)|or\s+earlier|or\s+before|to\s+date|to\s+present|till\s+now"
    r"|until\s+now|up\s+to\s+now|so\s+far|to\s+now|on)\b", _IA)
_SINCE_SUF = frozenset({"以来", "至今", "迄今", "到现在", "到目前为止", "到目前", "到今天", "to date",
                        "to present", "till now", "until now", "up to now", "so far", "to now"})
_FROM_SUF = frozenset({"起", "开始", "往后", "伊始", "或之后", "及之后", "或以后", "及以后", "and greater",
                       "or greater", "and up", "onwards", "onward", "and later",
                       "and after", "and beyond", "and onwards", "and onward", "or later",
                       "or after", "on"})
#: suffixes that are also prepositions: followed by a time, they belong to it
_TAKES_OBJECT = frozenset({"and before", "or before", "and after", "or after"})
_AFTER_SUF = frozenset({"以后", "之后", "过后", "后"})
_BEFORE_SUF = frozenset({"以前", "之前", "前"})
_UNTIL_SUF = frozenset({"为止", "止", "或之前", "及之前", "或以前", "及以前", "and earlier", "and before", "or earlier", "or before"})
_ASOF_PRE = frozenset({"截至", "截止", "截止到", "截止至", "as of", "as at", "as on"})
_UNTIL_PRE = frozenset({"直到", "直至", "到", "至", "until", "till", "til", "up to", "up until", "as late as",
                        "not later than", "<=", "<  =", "< =", "≤",
                        "through", "thru", "by", "no later than", "不晚于"})
_FROM_PRE = frozenset({"as early as", "no earlier than", "not earlier than", "any time from", "anytime from",
                       ">=", "> =", "≥", "starting", "starting from", "starting on", "starting in", "starting at",
                       "beginning", "beginning from", "beginning on", "beginning in", "始于",
                       "不早于", "effective", "effective from", "effective on"})
_SINCE_PRE = frozenset({"since", "ever since", "自从", "自打"})
_AFTER_PRE = frozenset({"after", "later than", "晚于", "greater than", "year greater than", ">"})
_BEFORE_PRE = frozenset({"before", "prior to", "earlier than", "早于", "less than", "year less than", "<"})
_WEAK_PRE = frozenset({"自", "从", "由", "打从", "from"})  # need a suffix (起, 以来, on ...)

_POINTISH = frozenset({"cal", "fz", "ago", "now"})
_US = timedelta(microseconds=1)
# cheap charset tests (fast scans) before the anchored prefix patterns above
_HINT_EN = re.compile(r"[\s-]")
_APPROX_BEFORE = re.compile(r"\b(?:around|about|approximately|roughly)\s+$", _IA)
_HINT_PRE = re.compile(r"[\s截止直至到自从由打始早晚不<>≤≥]")


def select(cands: list[Cand]) -> list[Cand]:
    """Non-overlapping candidates covering the most characters (weighted interval
    scheduling); among equal coverings the leftmost-longest one, ties to the earlier rule.
    "on Tuesday March 7" is one date, not "on Tuesday" followed by a lone "March 7"."""
    cands.sort(key=lambda c: (c.b, c.b - c.e, c.prio))
    n = len(cands)
    if n < 2:
        return list(cands)
    begins = [c.b for c in cands]
    nxt = [bisect_left(begins, c.e, i + 1) for i, c in enumerate(cands)]
    best = [0] * (n + 1)
    take = [False] * n
    for i in range(n - 1, -1, -1):
        with_i = cands[i].e - cands[i].b + best[nxt[i]]
        take[i] = with_i >= best[i + 1]
        best[i] = with_i if take[i] else best[i + 1]
    out = []
    i = 0
    while i < n:
        if take[i]:
            out.append(cands[i])
            i = nxt[i]
        else:
            i += 1
    return out


def _norm(w: str) -> str:
    return " ".join(w.lower().split())


def _fuzzy(text: str, sel: list[Cand]) -> list[Cand]:
    out: list[Cand] = []
    i = 0
    n = len(sel)
    while i < n:
        c = sel[i]
        nxt = sel[i + 1] if i + 1 < n else None
        if c.cls == "cal" and c.kind == "point" and c.grain in _FZ_GRAINS:
            part = None
            m = _ZH_FZ.match(text, c.e)
            if m:
                w = m.group("w")
                if len(w) == 2 and w[0] in "年月":
                    ok = (w[0] == "年") == (c.grain == "year") or (w[0] == "年" and c.grain == "decade")
                    part = _ZH_FZ_PART[w[1]] if ok else None
                elif w in ("上旬", "中旬", "下旬"):
                    part = _ZH_FZ_PART[w] if c.grain == "month" else None
                elif c.grain != "week":
                    part = _ZH_FZ_PART[w]
                end = m.end()
                if part and nxt is not None and nxt.b < end:
                    if nxt.cls == "fz" and nxt.e <= end:
                        i += 1  # the bare 年初 / 下旬 atom is now part of this one
                        nxt = sel[i + 1] if i + 1 < n else None
                    else:
                        part = None
                if part:
                    _apply_fuzzy(c, part, end=end)
            if part is None:
                lo = max(out[-1].e if out else 0, c.b - 40)
                m = _EN_FZ.search(text, lo, c.b) if _HINT_EN.search(text, lo, c.b) else None
                if m:
                    w = (m.group("a") or m.group("b")).lower()
                    part = ("early" if w in ("early", "beginning", "start")
                            else "late" if w in ("late", "end") else "mid")
                    grain = c.grain
                    _apply_fuzzy(c, part, begin=m.start())
                    if m.group("b") and c.fuzzy and grain in _EDGE_GRAINS:
                        c.fzpart = ("edge", part, grain)  # "the end of 2007": an instant in a range
        out.append(c)
        i += 1
    return out


def _apply_fuzzy(c: Cand, part: str, begin: int | None = None, end: int | None = None) -> None:
    r = fuzzy_part(c.start, c.grain, part)
    if r is None:
        return
    grain = c.grain
    c.start, c.end, c.grain = r
    c.fuzzy = True
    if c.rebuild is not None:
        rb = c.rebuild
        c.rebuild = lambda y, m: fuzzy_part(rb(y, m)[0], grain, part)[:2]
    if begin is not None:
        c.b = begin
    if end is not None:
        c.e = end


def _is_day(c: Cand | None) -> bool:
    return c is not None and c.cls == "cal" and c.kind == "point" and c.grain == "day"


def _is_part(c: Cand | None) -> bool:
    """A part of the day already on its day (明天下午, "tomorrow evening")."""
    return (c is not None and c.day is not None and c.day.part is not None and c.grain == "hour"
            and c.fuzzy and c.cls == "cal")


def _part_for(text: str, c: Cand, part: str | None) -> str | None:
    """The part of the day a clock next to it takes: none when the clock says its own half
    ("tonight at 1am") or is a small hour of the night ("tonight around 3")."""
    if _HALF_SAID.search(text, c.b, c.e):
        return None
    if part in NIGHT_PARTS and c.clock.hour is not None and c.clock.hour < 5:
        return None
    return part


def _clocks(text: str, sel: list[Cand], ctx: Ctx) -> list[Cand]:
    out: list[Cand] = []
    i = 0
    n = len(sel)
    while i < n:
        c = sel[i]
        if c.cls in ("clock", "weakclock"):
            prev = out[-1] if out else None
            nxt = sel[i + 1] if i + 1 < n else None
            part = c.clock.part
            if (c.clock.hour is None and part and nxt is not None and nxt.cls == "clock"
                    and nxt.clock.hour is not None and nxt.clock.part is None and nxt.b - c.e <= 1
                    and not text[c.e:nxt.b].strip()):
                # 下午5:00, 晚上9:30, "evening 7:30": the part of the day sets the clock's half
                nxt.clock = nxt.clock._replace(part=part)
                nxt.b = c.b
                i += 1
                continue
            if (_is_part(prev) and c.clock.hour is not None and c.clock.part is None
                    and c.b - prev.e <= 8 and _GAP_DAY_CLOCK.match(text, prev.e, c.b)):
                # 明天下午5:00: the clock on the part's day, in its half
                c.clock = c.clock._replace(part=_part_for(text, c, prev.day.part))
                b = prev.b
                attach_clock_to_day(c, prev.day.date, ctx)
                c.b = b
                out[-1] = c
                i += 1
                continue
            if (prev is not None and prev.day is not None and c.clock.hour is not None
                    and c.b - prev.e <= 6 and _CONNECT.match(text, prev.e, c.b)):
                # 下午3点到5点, 3pm-5pm: the second clock shares the first one's day and part
                h, part = c.clock.hour, c.clock.part
                c.clock = c.clock._replace(part=part or prev.day.part)
                attach_clock_to_day(c, prev.day.date, ctx)
                c.floating = prev.floating
                # "2am" after 10pm is the next day's; "10am-12am" (h 0) keeps the old reading, noon
                am = h != 0 and _AM_SAID.search(text, c.b, c.e) is not None
                if c.start <= prev.start and part is None and h < 12 and not am:  # 11:30-1:30
                    c.start, c.end = P.shift(c.start, "hour", 12), P.shift(c.end, "hour", 12)
                elif c.start <= prev.start and (am or part in _NEXT_DAY_PARTS):
                    # 下午5:00到凌晨3:00, "10pm to 2am": through the night into the next day
                    _move_days(c, timedelta(days=1))
                elif (_PM_END.search(text, c.b, c.e) and prev.start.hour < 12 and c.start.hour >= 12
                      and P.shift(prev.start, "hour", 12) < c.start
                      and not _HALF_SAID.search(text, prev.b, prev.e)):
                    # "from 7:00 to 8:00pm", "2:00 - 2:30 pm": the first clock, said without
                    # its half of the day, is in the second one's afternoon
                    prev.start, prev.end = P.shift(prev.start, "hour", 12), P.shift(prev.end, "hour", 12)
                out.append(c)
            elif (_is_day(prev) and c.b - prev.e <= 8
                    and (_GAP_DAY_CLOCK.match(text, prev.e, c.b)
                         # "May 22-11:30": a clock with its minutes hyphened to a day is
                         # that day's, not the end of a range from that day to today
                         or (text[prev.e:c.b] == "-" and c.clock.grain in ("minute", "second")))):
                b = prev.b
                attach_clock_to_day(c, prev.start.date(), ctx)
                c.b = b
                out[-1] = c
            elif (_is_part(nxt) and c.clock.hour is not None and c.clock.part is None and nxt.b - c.e <= 6
                  and _GAP_CLOCK_DAY.match(text, c.e, nxt.b)):
                # "five-thirty tomorrow evening": the clock on the part's day, in its half
                c.clock = c.clock._replace(part=_part_for(text, c, nxt.day.part))
                e = nxt.e
                attach_clock_to_day(c, nxt.day.date, ctx)
                c.e = e
                out.append(c)
                i += 1
            elif (_is_day(nxt) and nxt.b - c.e <= 6
                  and _GAP_CLOCK_DAY.match(text, c.e, nxt.b)):
                e = nxt.e
                attach_clock_to_day(c, nxt.start.date(), ctx)
                c.e = e
                out.append(c)
                i += 1
            elif c.cls == "clock":
                w = (_WORD_BEFORE.search(text, max(0, c.b - 24), c.b)
                     if c.clock.grain == "hour" and c.clock.part is None and c.role != "range start" else None)
                ranged = (nxt is not None and nxt.cls == "clock" and nxt.b - c.e <= 6
                          and _CONNECT.match(text, c.e, nxt.b) is not None)  # "10am to 12pm": a time
                if w is not None and not ranged and w.group("w").lower() not in _LONE_CLOCK_CUES:
                    i += 1
                    continue  # "Which label signed 2AM in 2010": not a time of day
                out.append(attach_clock_to_day(c, ctx.today, ctx))
                c.floating = True
            elif c.clock.hour is None and c.clock.part:
                # "in the morning", "afternoon classes": a part of the day alone is today's;
                # a query's intent and the grounding leave it out (it says when in a day,
                # not which day)
                out.append(attach_clock_to_day(c, ctx.today, ctx))
                c.floating, c.role = True, "lone part"
            i += 1
            continue
        out.append(c)
        i += 1
    return out


def _finer(a: str, b: str) -> str:
    return a if GRAIN_ORDER[a] <= GRAIN_ORDER[b] else b


def _ranges(text: str, sel: list[Cand], ctx: Ctx) -> list[Cand]:
    out: list[Cand] = []
    i = 0
    n = len(sel)
    while i < n:
        a = sel[i]
        if i + 1 < n and a.cls in _POINTISH and a.kind == "point":
            bb = sel[i + 1]
            if (bb.cls in _POINTISH and bb.kind == "point" and bb.b - a.e <= 12):
                m = _CONNECT.match(text, a.e, bb.b)
                if m:
                    r = _make_range(text, out, a, bb, m.group("w").lower(), ctx)
                    if r is not None:
                        out.append(r)
                        i += 2
                        continue
        out.append(a)
        i += 1
    return out


def _day_cand(c: Cand, start: datetime, ctx: Ctx) -> Cand:
    """``c`` (a weekday) moved to the day that starts at the wall-clock ``start``."""
    s, e = P.day_span(start.year, start.month, start.day, ctx.tz)
    moved = Cand(c.b, c.e, s, e, "day")
    moved.role, moved.lend = c.role, c.lend
    return moved


def _make_range(text, out, a: Cand, b: Cand, conn: str, ctx: Ctx) -> Cand | None:
    lo = max(out[-1].e if out else 0, a.b - 12)
    pre = _RANGE_PRE.search(text, lo, a.b)
    suf = _RANGE_SUF.match(text, b.e)
    if a.cls == "now" and (pre is None or b.cls == "now"):
        return None  # "now to X" only as "from now to X" / "between now and X"
    if a.cls == "now":
        a = Cand(a.b, a.e, ctx.now, ctx.now, "second", "point", "now")
    if (pre is None and conn in _DASHES and a.grain in _SHORT and b.grain in _WEEK_AND_LONGER
            and a.start is not None and b.start is not None and a.start >= b.start):
        return None  # "Race - 3pm - this week": a time inside the week, not a range to it
    if conn in _AND:
        if not ((pre and (pre.group("en") or "").lower() == "between") or
                (pre and pre.group("zh") in ("在", "介于")) or
                (suf and suf.group("w") in ("之间", "间"))):
            return None
    # lend the written year (and month) to the side that has none
    try:
        if b.rebuild is not None and b.cls != "now":
            if b.lend == "ym" or a.rebuild is None:
                b.start, b.end = b.rebuild(a.start.year, a.start.month)
            if b.start < a.start:  # 12月至2月, 3月25日至5日: the right side is later
                if b.lend == "ym":
                    y, mo = P.add_months(a.start.year, a.start.month, 1)
                    b.start, b.end = b.rebuild(y, mo)
                else:
                    b.start, b.end = b.rebuild(a.start.year + 1, a.start.month)
        elif a.rebuild is not None and a.lend == "y":
            a.start, a.end = a.rebuild(b.start.year, b.start.month)
            if a.start > b.start:
                a.start, a.end = a.rebuild(b.start.year - 1, b.start.month)
    except ValueError:
        return None
    try:
        if b.lend == "wd" and a.lend in ("wd", "wk"):
            # "from next Monday to Friday", "Friday to Monday": the first such day from the first
            d = a.start + timedelta(days=(b.start.weekday() - a.start.weekday()) % 7)
            b = _day_cand(b, d, ctx)
        elif a.lend == "wd" and b.lend == "wk":  # "from Monday to Friday next week": that week's
            a = _day_cand(a, b.start - timedelta(days=(b.start.weekday() - a.start.weekday()) % 7), ctx)
        if (a.cls == "now" and b.day is not None and b.grain in ("hour", "minute") and b.start < ctx.now
                and b.start.hour < 12 and not _HALF_SAID.search(text, b.b, b.e)
                and b.start + timedelta(hours=12) > ctx.now):
            # "between now and eight o'clock" said at 10:20: the evening's eight
            b.start, b.end = b.start + timedelta(hours=12), b.end + timedelta(hours=12)
        end = ctx.now if b.cls == "now" else b.end
        ea, eb = _edge(a), _edge(b)
        if ea is not None or eb is not None:  # "from the middle of 2007 to the end of 2008"
            a = _day_cand(a, ea, ctx) if ea is not None else a
            end = eb if eb is not None else end
    except (ValueError, OverflowError):
        return None  # at the calendar's ends
    if b.day is not None and b.grain in ("hour", "minute", "second"):
        end = b.start  # 3点到5点 ends at 5:00, not after the 5 o'clock hour
    if b.cls == "now" and not a.start < end:
        end = None  # "2017–present" read before 2017 (ce.ground's reference): still holding, open
    elif not a.start < end:
        return None
    begin = pre.start() if pre else a.b
    if pre and pre.group("zh") == "在" and not (suf and suf.group("w") in ("之间", "间")):
        begin = a.b
    stop = suf.end() if suf else b.e
    grain = a.grain if b.cls == "now" else _finer(a.grain, b.grain)
    c = range_cand(begin, stop, a.start, end, grain, a.fuzzy or b.fuzzy)
    c.floating = a.floating and (b.floating or b.cls == "now")
    return c


def _bounds(text: str, sel: list[Cand], ctx: Ctx) -> list[Cand]:
    out: list[Cand] = []
    n = len(sel)
    for i, c in enumerate(sel):
        if c.cls not in _POINTISH or c.kind != "point":
            out.append(c)
            continue
        floor = out[-1].e if out else 0
        lo = max(floor, c.b - 16)
        pm = _BOUND_PRE.search(text, lo, c.b) if _HINT_PRE.search(text, lo, c.b) else None
        if pm is None and _APPROX_BEFORE.search(text, lo, c.b):  # "after approximately 3pm"
            pm = _BOUND_PRE.search(text, max(floor, c.b - 32), c.b)
        sm = _BOUND_SUF.match(text, c.e)
        if sm and i + 1 < n and (sel[i + 1].b < sm.end() or (
                sm.group("en") and _norm(sm.group("en")) in _TAKES_OBJECT
                and not text[sm.end():sel[i + 1].b].strip())):
            sm = None  # "after 2016 and before 2018": "and before" belongs to 2018
        pw = _norm(pm.group("zh") or pm.group("en") or pm.group("op")) if pm else None
        sw = _norm(sm.group("zh") or sm.group("en")) if sm else None
        if sw == "on" and pw != "from":
            sw, sm = None, None
        role = None
        if sw in _SINCE_SUF:
            role = "since"
        elif sw in _FROM_SUF:
            role = "from"
        elif sw in _AFTER_SUF:
            role = "after"
        elif sw in _BEFORE_SUF:
            role = "before"
        elif sw in _UNTIL_SUF:
            role = "asof" if pw in _ASOF_PRE else "until"
        elif pw in _ASOF_PRE:
            role = "asof"
        elif pw in _UNTIL_PRE:
            role = "until"
        elif pw in _FROM_PRE:
            role = "from"
        elif pw in _SINCE_PRE:
            role = "since"
        elif pw in _AFTER_PRE:
            role = "after"
        elif pw in _BEFORE_PRE:
            role = "before"
        if role is None:
            out.append(c)
            continue
        # a prefix is absorbed when it agrees with the bound the suffix made
        absorb = pm is not None and (
            sw is None or pw in _WEAK_PRE or pw in _SINCE_PRE or
            (role in ("until", "asof") and (pw in _UNTIL_PRE or pw in _ASOF_PRE)))
        if role in ("since",) and c.cls == "now":
            out.append(c)
            continue
        s0, e0 = c.start, c.end
        inner = (s0, e0)
        if c.day is not None and c.grain in ("hour", "minute", "second"):
            e0 = s0  # a clock time is an instant for bounds: until 2pm ends at 14:00
            # the instant [s0, s0 + 1 µs); at the last representable instant (24:00 on the
            # last day of 9999, clamped by grammar.clock_on_day) the microsecond before it
            inner = (s0, s0 + _US) if s0.replace(tzinfo=None) < datetime.max else (s0 - _US, s0)
        try:
            edge = _edge(c) if role in ("after", "before") else None
        except (ValueError, OverflowError):
            edge = None
        if edge is not None:  # "before the end of this year": before it ends
            s0 = e0 = edge
        if role == "since":
            start, end = s0, (ctx.now if s0 < ctx.now else None)
        elif role == "from":
            start, end = s0, None
        elif role == "after":
            start, end = e0, None
        elif role == "before":
            start, end = None, s0
        else:  # until / asof
            start, end = None, (ctx.now if c.cls == "now" else e0)
        r = Cand(pm.start() if absorb else c.b, sm.end() if sm else c.e, start, end, c.grain,
                 "span", "span", None, c.fuzzy)
        r.role = role
        r.inner = inner
        if c.joined is not None and out and out[-1] is c.joined:
            r.b = out.pop().b  # the day written before the bound: one expression
        r.fzpart = "now" if c.cls == "now" else None
        out.append(r)
    return out


_HOLIDAY_WEEKEND_GAP = re.compile(r"\s*(?:of\s+)?$", _IA)
_WEEKEND_OF_GAP = re.compile(r"\s+of\s+$", _IA)


def _holiday_weekends(text: str, sel: list[Cand]) -> list[Cand]:
    """"labor day weekend", "halloween weekend 2021", "the weekend of thanksgiving 2023":
    the holiday's weekend (the one before a Monday or Tuesday holiday, else that of its
    week) together with the holiday itself: Labor Day weekend is Saturday to Monday."""
    out: list[Cand] = []
    i, n = 0, len(sel)
    while i < n:
        c = sel[i]
        nxt = sel[i + 1] if i + 1 < n else None
        pair = None
        if c.role == "holiday" and nxt is not None and nxt.role == "weekend" and nxt.b - c.e <= 2 \
                and not text[c.e:nxt.b].strip():
            pair = (c, c.b, nxt.e)
        elif c.role == "weekend" and nxt is not None and nxt.role == "holiday" and nxt.b - c.e <= 5 \
                and _WEEKEND_OF_GAP.match(text, c.e, nxt.b):
            pair = (nxt, c.b, nxt.e)
        if pair is None:
            out.append(c)
            i += 1
            continue
        h, b, e = pair
        d = h.start
        wd = d.weekday()
        sat = d - timedelta(days=wd + 2) if wd <= 1 else d + timedelta(days=5 - wd)
        start = min(sat, d)
        end = max(sat + timedelta(days=2), d + timedelta(days=1))
        r = range_cand(b, e, start, end, "day")
        out.append(r)
        i += 2
    return out


def _weekday_of_offset(wd: Cand, off: Cand, ctx: Ctx) -> Cand | None:
    """"Monday two weeks from now", "two months from today on Tuesday": the weekday of the
    (ISO) week that holds the offset's instant, as one day."""
    k, u, mode = off.amount
    if GRAIN_ORDER[u] < GRAIN_ORDER["week"]:
        return None
    try:
        t = P.shift(ctx.now, u, -k if mode == "ago" else k)
        d = t.date() - timedelta(days=t.weekday() - wd.start.weekday())
        s, e = P.day_span(d.year, d.month, d.day, ctx.tz)
    except (ValueError, OverflowError):
        return None
    c = Cand(min(wd.b, off.b), max(wd.e, off.e), s, e, "day")
    c.cls = "ago"
    return c


def _weekdays(text: str, sel: list[Cand], ctx: Ctx) -> list[Cand]:
    """A weekday right before or after a date only names that date's weekday:
    2024年3月7日(星期四), "Tue May 9", "friday 5/12", unchecked; next to an offset of weeks
    or more it is that day of the offset's week ("Monday two weeks from now")."""
    out: list[Cand] = []
    for c in sel:
        prev = out[-1] if out else None
        if prev is not None and c.b - prev.e <= 3 and _WEEKDAY_GAP.match(text, prev.e, c.b) and (
                (prev.role == "weekday" and c.cls == "ago" and isinstance(c.amount, tuple))
                or (c.role == "weekday" and prev.cls == "ago" and isinstance(prev.amount, tuple))):
            both = _weekday_of_offset(*((prev, c) if prev.role == "weekday" else (c, prev)), ctx)
            if both is not None:
                out[-1] = both
                continue
        if (_is_day(c) and c.role != "weekday" and prev is not None and prev.role == "weekday"
                and c.b - prev.e <= 3 and _WEEKDAY_BEFORE_GAP.match(text, prev.e, c.b)):
            if "(" in text[prev.e:c.b] or "（" in text[prev.e:c.b]:
                close = _WEEKDAY_CLOSE.match(text, c.e)  # "friday (jun-15)": through the ")"
                c.e = close.end() if close else c.e
            c.b = prev.b
            out[-1] = c
            continue
        if (c.role == "weekday" and _is_day(prev) and prev.role != "weekday" and c.b - prev.e <= 3
                and _WEEKDAY_GAP.match(text, prev.e, c.b)):  # not "Wednesday, Thursday": a list
            close = _WEEKDAY_CLOSE.match(text, c.e)
            prev.e = close.end() if close else c.e
            continue
        out.append(c)
    return out


_IN_WEEK_GAP = re.compile(r"\s*,?\s*(?:on\s+)?$", _IA)


def _weekday_in_week(text: str, sel: list[Cand], ctx: Ctx) -> list[Cand]:
    """A weekday right after a week names that day of it: "the 1st week of Oct. on Friday",
    "next week, Tuesday"."""
    out: list[Cand] = []
    for c in sel:
        prev = out[-1] if out else None
        if (prev is not None and c.role == "weekday" and prev.grain == "week" and prev.start is not None
                and prev.end is not None and (prev.end.date() - prev.start.date()).days == 7
                and c.b - prev.e <= 5 and _IN_WEEK_GAP.match(text, prev.e, c.b)):
            d = prev.start.date() + timedelta(days=(c.start.weekday() - prev.start.weekday()) % 7)
            try:
                s, e = P.day_span(d.year, d.month, d.day, ctx.tz)
            except (ValueError, OverflowError):
                out.append(c)
                continue
            out[-1] = Cand(prev.b, c.e, s, e, "day")
            continue
        out.append(c)
    return out


_DUR_GAP = re.compile(r"\s*(?:,|and|又|零|余|多|加)?\s*$", _IA)
_AND_GAP = re.compile(r"\s*(?:and|又|加)\s*$", _IA)  # 两天又一个月: any order with a written "and"
_YEAR_GAP = re.compile(r"\s*(?:,|in|of)?\s*$", _IA)
_YEAR_WORDS_PREP = re.compile(r"\b(?:in|since|until|till|by|before|after|during|from|to|through|the\s+year)\s+$", _IA)


def _offset_span(t: datetime, amounts: list, mode: str, grain: str | None) -> tuple | None:
    """``t`` moved by every (n, unit) of ``amounts`` (back for "ago"), then the unit of
    ``grain`` holding it (or the instant twice when ``grain`` is None); None where that
    leaves datetime's range."""
    try:
        for n, u in amounts:
            t = P.shift(t, u, -n if mode == "ago" else n)
        return (t, t) if grain is None else P.period(t, grain)
    except (ValueError, OverflowError):
        return None


def _durations(text: str, sel: list[Cand], ctx: Ctx) -> list[Cand]:
    """Amounts of ever finer units in a row are one duration: "3 hours 30 minutes", "1 hour
    and 30 minutes", 8天20小时, 一个星期又三天; before an offset or after a rolling range of a
    coarser unit, they add to it: "2 weeks and 2 days ago", "the last 3 months and 2 weeks"."""
    out: list[Cand] = []
    for i, c in enumerate(sel):
        prev = out[-1] if out else None
        if (c.cls == "dur" and prev is not None and prev.cls == "dur" and c.b - prev.e <= 6
                and (GRAIN_ORDER[c.grain] < GRAIN_ORDER[prev.grain]
                     or _AND_GAP.match(text, prev.e, c.b))
                and _DUR_GAP.match(text, prev.e, c.b)):
            prev.e, prev.grain = c.e, c.grain
            prev.fuzzy = prev.fuzzy or c.fuzzy
            prev.inner = None  # no longer one amount of one unit
            prev.amount = None if prev.amount is None or c.amount is None else prev.amount + c.amount
            # calendar units measured one after the other from now ("one year and a quarter"
            # = 15 months on), not each from now and summed
            span = (_offset_span(ctx.now, prev.amount, "later", None)
                    if prev.amount is not None and all(isinstance(k, int) for k, _ in prev.amount) else None)
            prev.dur = span[0] - ctx.now if span is not None else prev.dur + c.dur
            continue
        if (prev is not None and c.amount is not None and c.b - prev.e <= 6
                and GRAIN_ORDER[c.grain] < GRAIN_ORDER[prev.grain] and _DUR_GAP.match(text, prev.e, c.b)):
            if prev.cls == "dur" and c.cls == "ago" and prev.amount is not None:
                # "2 weeks and 2 days ago", "2 years 1 month 21 days later": one offset
                k, u, mode = c.amount
                span = _offset_span(ctx.now, prev.amount + [(k, u)], mode, u)
                if span is not None:
                    c.b, c.start, c.end, c.fuzzy = prev.b, span[0], span[1], c.fuzzy or prev.fuzzy
                    out[-1] = c
                    continue
            if prev.cls == "ago" and c.cls == "dur" and prev.amount is not None and _AND_GAP.match(text, prev.e, c.b):
                # "in 2 weeks and 2 days", "3 months and 2 days ago"
                k, u, mode = prev.amount
                span = _offset_span(ctx.now, [(k, u)] + c.amount, mode, c.grain)
                if span is not None:
                    prev.start, prev.end = span
                    prev.e, prev.grain, prev.amount = c.e, c.grain, None
                    continue
            nxt = sel[i + 1] if i + 1 < len(sel) else None
            if (prev.cls == "roll" and c.cls == "dur" and prev.end == ctx.now and prev.start is not None
                    and not (nxt is not None and nxt.cls == "ago" and nxt.b - c.e <= 6
                             and _DUR_GAP.match(text, c.e, nxt.b))):  # "2 weeks and 2 days ago"
                # "the last 3 months and 2 weeks and 2 days": a rolling range, longer
                span = _offset_span(prev.start, c.amount, "ago", None)
                if span is not None:
                    t = span[0]
                    prev.e, prev.start, prev.grain = c.e, t, c.grain
                    prev.dur = prev.end - t
                    prev.amount = None
                    continue
        out.append(c)
    return out


def _lend_years(text: str, sel: list[Cand]) -> list[Cand]:
    """A day or month written without its year takes the year written right after it:
    "28 june in 2020", "October, 2017"."""
    out: list[Cand] = []
    for c in sel:
        prev = out[-1] if out else None
        if (c.cls == "cal" and c.kind == "point" and c.grain == "year" and c.rebuild is None
                and prev is not None and prev.cls == "cal" and prev.kind == "point"
                and prev.rebuild is not None and prev.grain in ("day", "month")
                and c.b - prev.e <= 5 and _YEAR_GAP.match(text, prev.e, c.b)):
            try:
                prev.start, prev.end = prev.rebuild(c.start.year, prev.start.month)
            except ValueError:
                out.append(c)
                continue
            prev.rebuild, prev.e = None, c.e
            continue
        out.append(c)
    return out


_ON_DAY_GAP = re.compile(r"\s*(?:on|of|,|for)?\s*(?:the\s+)?$", _IA)
_OFFSET_GAP = re.compile(r"\s*(?P<w>after|before|from)\s+$", _IA)


_WEEK_OF = re.compile(r"\bthe\s+week\s+of\s+(?:the\s+)?$", _IA)


def _week_of(text: str, sel: list[Cand]) -> list[Cand]:
    """"the week of April 10th": the ISO week holding the day."""
    for c in sel:
        if _is_day(c) and c.b >= 12:
            m = _WEEK_OF.search(text, max(0, c.b - 20), c.b)
            if m:
                s = P.iso_week_start(c.start)
                c.start, c.end = s, s + timedelta(days=7)
                c.grain, c.b = "week", m.start()
                if c.rebuild is not None:
                    rb = c.rebuild

                    def week(y, mo, rb=rb):
                        d0 = P.iso_week_start(rb(y, mo)[0])
                        return d0, d0 + timedelta(days=7)
                    c.rebuild = week
    return sel


def _move_days(c: Cand, delta: timedelta) -> bool:
    """Move a clock time (or a range of them) by whole days, its wall-clock times kept;
    False, and ``c`` unchanged, when that leaves datetime's range (a clock on the
    calendar's first or last day moved to a written day)."""
    try:
        start = c.start + delta
        end = None if c.end is None else c.end + delta
        inner = None if c.inner is None else (c.inner[0] + delta, c.inner[1] + delta)
    except OverflowError:
        return False
    c.start, c.end, c.inner = start, end, inner
    return True


def _bound_word_between(text: str, b: int, e: int) -> bool:
    """Whether ``text[b:e]`` is an English bound word of :data:`_BOUND_PRE` (not a weak one
    such as "from"), after an optional comma: "feb 1st no later than 6:00"."""
    m = _BOUND_PRE.search(text, b, e)
    return (m is not None and m.group("en") is not None and _norm(m.group("en")) not in _WEAK_PRE
            and not text[b:m.start()].strip(" ,"))


def _to_written_day(text: str, sel: list[Cand]) -> list[Cand]:
    """Clock times put on today for want of a day move to a day written right after them
    ("3:00 to 4:00 tomorrow", "from 5 to 6pm of April 22", "from 3:30 to 5:55 on 1/1/2015"),
    or right before them when composed with an amount ("14th Feb for 7 hours from 9:30am")."""
    out: list[Cand] = []
    for c in sel:
        prev = out[-1] if out else None
        if (c.floating and _is_day(prev) and c.b - prev.e <= 3 and not text[prev.e:c.b].strip(" ,")
                and _move_days(c, prev.start.date() - c.start.date())):
            # "14th Feb for 7 hours from 9:30am": the day written before the composed span
            c.b, c.floating = prev.b, False
            out[-1] = c
            continue
        if (c.floating and _is_day(prev) and c.b - prev.e <= 24 and _bound_word_between(text, prev.e, c.b)
                and _move_days(c, prev.start.date() - c.start.date())):
            # "feb 1st no later than 6:00": the clock is on the day; the bound joins them
            c.floating, c.joined = False, prev
            out.append(c)
            continue
        if ((_is_day(c) or _is_part(c)) and prev is not None and prev.floating and c.b - prev.e <= 8
                and _ON_DAY_GAP.match(text, prev.e, c.b) and _move_days(prev, c.start.date() - prev.start.date())):
            # "from 3-8pm yesterday afternoon": the part of the day only names the day
            prev.e, prev.floating = c.e, False
            continue
        out.append(c)
    return out


def _offsets(text: str, sel: list[Cand]) -> list[Cand]:
    """An amount before / after / from a day is the day that far from it: "two days after
    today", "three weeks from tomorrow", "two days before yesterday" (a unit of the day's
    grain)."""
    out: list[Cand] = []
    for c in sel:
        prev = out[-1] if out else None
        if (prev is not None and prev.cls == "dur" and prev.inner is not None and _is_day(c)
                and c.b - prev.e <= 8):
            m = _OFFSET_GAP.match(text, prev.e, c.b)
            if m:
                k, u = prev.inner
                before = m.group("w").lower() == "before"
                k = -k if before else k
                try:  # the shift, and the day holding its end, may leave datetime's range
                    t = P.shift(c.start, u, k)
                    s, e = P.period(t, "day")
                except (ValueError, OverflowError):
                    out.append(c)
                    continue
                q = _MORE_LESS.search(text, max(0, prev.b - 12), prev.b)
                if q is None:
                    r = Cand(prev.b, c.e, s, e, "day")
                elif q.group("q").lower() == "more":  # more than 2 weeks before today: before that day
                    r = Cand(q.start(), c.e, None, s, "day", "span", "span") if before else \
                        Cand(q.start(), c.e, s, None, "day", "span", "span")
                else:  # less than 3 days after tomorrow: between the day and that far from it
                    lo, hi = (t, c.start) if before else (c.start, t)
                    r = range_cand(q.start(), c.e, lo, hi, "day")
                out[-1] = r
                continue
        out.append(c)
    return out


_MORE_LESS = re.compile(r"\b(?P<q>more|less)\s+than\s+$", _IA)
_HOURS_GAP = re.compile(r"\s*(?:on|,|at|from)?\s*$", _IA)
#: parts of the day in the afternoon half (their hours without am / pm are pm ones)
_NEXT_DAY_PARTS = frozenset({"凌晨", "早上", "早晨", "清晨", "上午", "早间", "morning", "early morning",
                             "late morning"})
_AM_SAID = re.compile(r"(?:\b|(?<=\d))a\.?\s?m\b", _IA)
_PM_PARTS = PM_PARTS - {"pm", "晚间", "深夜", "半夜"}
_EN_NIGHT = NIGHT_PARTS - {"夜里", "夜间", "半夜"}  # the English ones: small hours of "last night" stay small


def _hours(text: str, sel: list[Cand], ctx: Ctx) -> list[Cand]:
    """Hour ranges without am / pm ("3-8", "between 3 and 5") become a range on the day
    written next to them; alone they are dropped (scores, pages, ages)."""
    out: list[Cand] = []
    n = len(sel)
    skip = False
    for i, c in enumerate(sel):
        if skip:
            skip = False
            continue
        if c.cls != "hours":
            out.append(c)
            continue
        prev = out[-1] if out else None
        nxt = sel[i + 1] if i + 1 < n else None
        day = None
        if (_is_day(prev) or _is_part(prev)) and c.b - prev.e <= 6 and _HOURS_GAP.match(text, prev.e, c.b):
            day, b, e = prev, prev.b, c.e
            out.pop()
        elif (_is_day(nxt) or _is_part(nxt)) and nxt.b - c.e <= 6 and _HOURS_GAP.match(text, c.e, nxt.b):
            day, b, e = nxt, c.b, nxt.e
            skip = True
        h1, m1, h2, m2 = c.inner
        if day is None:
            if (prev is not None and prev.cls == "weakclock" and prev.clock.hour is None and c.b - prev.e <= 6
                    and _HOURS_GAP.match(text, prev.e, c.b)):
                out.append(c)  # "next Monday morning 6-8": the part finds its day first (compose)
            elif (m1 or m2) and _FROM_BETWEEN_AT.match(text, c.b):
                # "between 9 to 10:30": minutes and a range word make it a time; today's
                ds = day_at(ctx.today, ctx.tz)
                r = range_cand(c.b, c.e, clock_on_day(ds, h1, m1, 0), clock_on_day(ds, h2, m2, 0), c.grain)
                r.floating = True
                out.append(r)
            continue
        if _is_part(day):  # "between 7 and 9 last night": the hours in the part's half of the day
            part = day.day.part
            if part in _PM_PARTS and h1 < 12 and not (part in _EN_NIGHT and h1 < 5):
                h1, h2 = h1 + 12, (h2 + 12 if h2 < 12 else h2)
                if (h2, m2) <= (h1, m1):
                    h2 += 12
                if h2 > 24:
                    out.append(day)
                    continue
            ds = day.start.replace(hour=0, minute=0, second=0, microsecond=0)
        else:
            ds = day.start
        start = ds.replace(hour=h1, minute=m1) if h1 < 24 else ds
        try:
            end = ds.replace(hour=h2 % 24, minute=m2) + (timedelta(days=1) if h2 == 24 else timedelta(0))
        except OverflowError:  # "...-24:00" on the calendar's last day: the day alone, as past 24
            out.append(day)
            continue
        out.append(range_cand(b, e, start, end, c.grain))
    return out


_DASHES = frozenset({"-", "—", "–", "－"})
_WEEK_AND_LONGER = frozenset({"week", "month", "quarter", "half", "year", "decade"})
_FROM_BETWEEN_AT = re.compile(r"(?:from|between)\s", _IA)
_FOR_GAP = re.compile(r"\s*$")
_FROM_GAP = re.compile(r"\s*,?\s*(?:from|starting(?:\s+(?:at|from|on))?)\s+$", _IA)
_SHORT = frozenset({"second", "minute", "hour"})


def _clock_spans(text: str, sel: list[Cand]) -> list[Cand]:
    """A clock time with how long: "from 2pm for 2 hours", "for 3 hours from 10 am" =
    [the time, the time + the amount); a day after "for" an amount: "for 1 week, from 20th
    dec" = [the day, the day + the amount)."""
    out: list[Cand] = []
    for c in sel:
        prev = out[-1] if out else None
        if prev is None or c.b - prev.e > 12:
            out.append(c)
            continue
        clock, dur, b = None, None, prev.b
        if (c.cls == "dur" and c.grain in _SHORT and prev.day is not None and prev.grain in _SHORT
                and text[c.b:c.b + 3].lower() == "for" and _FOR_GAP.match(text, prev.e, c.b)):
            clock, dur = prev, c
            m = _RANGE_PRE.search(text, max(0, prev.b - 8), prev.b)
            if m and (m.group("en") or "").lower() == "from":
                b = m.start()
        elif (prev.cls == "dur" and prev.grain in _SHORT and c.day is not None and c.grain in _SHORT
              and _FROM_GAP.match(text, prev.e, c.b)):
            clock, dur = c, prev
        elif (prev.cls == "dur" and prev.dur is not None and _is_day(c) and text[prev.b:prev.b + 3].lower() == "for"
              and _FROM_GAP.match(text, prev.e, c.b)):
            clock, dur = c, prev  # "for 1 week, from 20th dec": the days from that day on
        if clock is None:
            out.append(c)
            continue
        try:
            end = clock.start + dur.dur
        except OverflowError:  # a clock on the calendar's last day, an amount past it
            out.append(c)
            continue
        r = range_cand(b, c.e, clock.start, end, clock.grain)
        r.floating = clock.floating
        out[-1] = r
    return out


_STARTING_GAP = re.compile(r"\s*(?:starting|beginning|commencing)(?:\s+(?:from|on|in|at))?\s+$", _IA)


def _spans_from(text: str, sel: list[Cand]) -> list[Cand]:
    """Seven days, or an amount, from a day: "the week beginning February 4", "w/c Feb 4"
    (``weekmark`` atoms, dropped when no day follows), "3 days starting from next Monday",
    "2 weeks starting May 20th"."""
    out: list[Cand] = []
    for c in sel:
        prev = out[-1] if out else None
        if prev is not None and prev.cls == "weekmark":
            out.pop()
            if _is_day(c) and c.b - prev.e <= 1:
                r = Cand(prev.b, c.e, c.start, c.start + timedelta(days=7), "week", "point", "cal")
                out.append(r)
                continue
        elif (prev is not None and prev.cls == "dur" and prev.inner is not None and c.cls == "cal"
              and c.kind == "point" and c.b - prev.e <= 24 and _STARTING_GAP.match(text, prev.e, c.b)):
            k, u = prev.inner
            try:
                end = P.shift(c.start, u, k)
            except (ValueError, OverflowError):
                out.append(c)
                continue
            out[-1] = range_cand(prev.b, c.e, c.start, end, c.grain)
            continue
        out.append(c)
    if out and out[-1].cls == "weekmark":
        out.pop()
    return out


_COARSER = {"day": ("week", "month", "quarter", "half", "year", "decade"),
            "week": ("month", "quarter", "half", "year"), "month": ("quarter", "half", "year"),
            "quarter": ("half", "year")}


def _sub_spans(text: str, sel: list[Cand]) -> list[Cand]:
    """"the last 3 weeks of this year", "first ten days of last year", "the 9th month of
    next year", 2021年的前2周: that part of the period written right after the marker
    (``submark`` atoms, dropped when none follows). Weeks count as ISO weeks do: a period's
    first week holds its 4th day, its last week its fourth-last day."""
    out: list[Cand] = []
    for c in sel:
        prev = out[-1] if out else None
        if (c.cls == "submark" and c.role == "after" and prev is not None and prev.cls == "cal"
                and prev.kind == "point" and prev.start is not None and c.b - prev.e <= 1
                and prev.grain in _COARSER.get(c.grain, ())):
            r = _sub_span(c, prev)  # 2021年的前2周: the marker after its period
            if r is not None:
                r.b, r.e = prev.b, c.e
                out[-1] = r
            continue
        if c.cls == "submark" and c.role == "after":
            continue
        if prev is not None and prev.cls == "submark":
            out.pop()
            if (c.cls == "cal" and c.kind == "point" and c.start is not None and c.b - prev.e <= 2
                    and c.grain in _COARSER.get(prev.grain, ())):
                r = _sub_span(prev, c)
                if r is not None:
                    out.append(r)
                    continue
        out.append(c)
    if out and out[-1].cls == "submark":
        out.pop()
    return out


def _sub_span(mark: Cand, period: Cand) -> Cand | None:
    kind, n = mark.inner
    u = mark.grain
    s0, e0 = period.start, period.end
    k0 = 0 if kind == "first" else n - 1  # the first unit taken, counted from the start
    try:
        if u == "week":
            first = P.iso_week_start(s0 + timedelta(days=3))  # the week holding the 4th day
            last = P.iso_week_start(e0 - timedelta(days=4))   # ... the fourth-last day
            if kind == "last":
                start, end = last - timedelta(weeks=n - 1), last + timedelta(weeks=1)
            else:
                start, end = first + timedelta(weeks=k0), first + timedelta(weeks=n)
                if start > last:
                    return None
        else:
            if kind == "last":
                start, end = P.shift(e0, u, -n), e0
            else:
                start, end = P.shift(s0, u, k0), P.shift(s0, u, n)
            if start < s0 or end > e0:
                return None
    except (ValueError, OverflowError):
        return None
    if kind == "nth" or n == 1:
        return Cand(mark.b, period.e, start, end, u)
    return range_cand(mark.b, period.e, start, end, u)


def lone_part(c: Cand) -> bool:
    """Whether ``c`` is a part of the day said without a day ("in the morning"), still
    alone after composition (joined to a day it is that day's part), or the current unit
    said as "the year" at the end of a clause ("partner of the year."): what ``parse_time``
    reads as today's, and a query's intent and the grounding leave out."""
    return (c.role == "lone part" and c.floating) or (c.role == "bare unit" and c.kind == "point")


_REL_YEAR_BEFORE = re.compile(r"\b(?P<r>next|last|this)\s+$", _IA)


_NTH_BEFORE = re.compile(r"\b(?:the\s+)?(?P<o>first|second|third|fourth|fifth|last|1st|2nd|3rd|4th|5th)\s+$", _IA)
_LAST_AT = re.compile(r"last\s+", _IA)
_WEEKDAY_AT = re.compile(r"(?:on\s+)?(?P<w>mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?(?![a-z])", _IA)
_OF_GAP = re.compile(r"\s+(?:of|in)\s+(?:the\s+)?", _IA)
_WEEK_GAP = re.compile(r"\s*,?\s*(?:(?:of|in)\s+)?(?:the\s+)?", _IA)
_NTH = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
        "fifth": 5, "5th": 5, "last": -1}


def _join_next(sel: list[Cand], join) -> list[Cand]:
    """Walk ``sel`` in pairs: ``join(c, nxt)`` returns None to leave ``c`` as it is, True
    when ``c`` took ``nxt`` in (``nxt`` is dropped), False when both are dropped."""
    out: list[Cand] = []
    i, n = 0, len(sel)
    while i < n:
        c = sel[i]
        took = join(c, sel[i + 1]) if i + 1 < n else None
        if took is None:
            out.append(c)
            i += 1
            continue
        if took:
            out.append(c)
        i += 2
    return out


def _weekday_said_at(text: str, c: Cand, b: int) -> bool:
    """Whether a weekday word is written at ``b`` and ``c`` falls on that weekday."""
    w = _WEEKDAY_AT.match(text, b)
    return w is not None and c.start.weekday() == _WEEKDAYS[w.group("w").lower()]


def _nth_weekday_of(text: str, sel: list[Cand]) -> list[Cand]:
    """"the third Tuesday of September 2014", "the last Friday of next month", "the first
    Monday evening of next month": that weekday of that month (with the time of day said
    with it); a fifth one the month does not have is dropped."""
    def join(c: Cand, nxt: Cand) -> bool | None:
        if not (nxt.kind == "point" and nxt.grain == "month" and nxt.start is not None
                and c.start is not None and c.end is not None and _OF_GAP.fullmatch(text, c.e, nxt.b)):
            return None
        last = _LAST_AT.match(text, c.b)
        om = None if last is not None else _NTH_BEFORE.search(text, max(0, c.b - 12), c.b)
        if last is None and om is None:
            return None
        if not _weekday_said_at(text, c, last.end() if last is not None else c.b):
            return None
        wd, first = c.start.weekday(), nxt.start.date()
        k = _NTH["last" if last is not None else om.group("o").lower()]
        if k > 0:
            day = first + timedelta(days=(wd - first.weekday()) % 7 + 7 * (k - 1))
        else:
            end = (nxt.end - timedelta(days=1)).date()
            day = end - timedelta(days=(end.weekday() - wd) % 7)
        if day.month != first.month or not _move_days(c, day - c.start.date()):
            return False
        if om is not None:
            c.b = om.start()
        c.e, c.rebuild, c.role = nxt.e, None, None
        return True
    return _join_next(sel, join)


def _timed_weekday_in_week(text: str, sel: list[Cand]) -> list[Cand]:
    """A weekday said with its time of day, then a week: "Wednesday evening next week",
    "Friday 3pm the week after next": that weekday of that week, at that time."""
    def join(c: Cand, nxt: Cand) -> bool | None:
        if not (nxt.grain == "week" and nxt.kind == "point" and nxt.start is not None
                and nxt.end is not None and (nxt.end.date() - nxt.start.date()).days == 7
                and c.grain in _SHORT and c.start is not None and c.end is not None
                and _WEEK_GAP.fullmatch(text, c.e, nxt.b) and _weekday_said_at(text, c, c.b)):
            return None
        day = nxt.start.date() + timedelta(days=c.start.weekday())
        if not _move_days(c, day - c.start.date()):
            return None
        c.e = nxt.e
        return True
    return _join_next(sel, join)


def _future_days(text: str, sel: list[Cand], ctx: Ctx) -> None:
    """A day written without its year (May 3, 2/29, Easter) is next / last / this year's
    after "next" / "last" / "this" ("next 6th of April"); one that has passed this year is
    next year's in a clause that speaks of the future ("we will meet 5 days before new
    year", "it will happen 2 weeks from January 15")."""
    for c in sel:
        if not (c.cls == "cal" and c.kind == "point" and c.grain == "day" and c.rebuild is not None
                and c.end is not None):
            continue
        m = _REL_YEAR_BEFORE.search(text, max(0, c.b - 6), c.b)
        try:
            if m is not None:
                y = ctx.year + {"next": 1, "last": -1, "this": 0}[m.group("r").lower()]
                c.start, c.end = c.rebuild(y, c.start.month)
                c.b, c.rebuild = m.start(), None
            elif c.end <= ctx.now and future_said(text, c.b):
                c.start, c.end = c.rebuild(c.start.year + 1, c.start.month)
        except (ValueError, OverflowError):
            pass  # no such day that year (Feb 29, year 10000): the day as written


def compose(text: str, sel: list[Cand], ctx: Ctx) -> list[Cand]:
    """Run the composition passes over the selected atoms (in text order)."""
    if not sel:
        return sel
    if any(c.role == "weekday" for c in sel):
        sel = _weekdays(text, sel, ctx)
    if len(sel) > 1 and any(c.role == "weekend" for c in sel):
        sel = _holiday_weekends(text, sel)
    if any(c.grain == "day" for c in sel):
        sel = _week_of(text, sel)
    if any(c.cls == "hours" for c in sel):
        sel = _hours(text, sel, ctx)
        if not sel:
            return sel
    if any(c.cls == "submark" for c in sel):
        sel = _sub_spans(text, sel)
        if not sel:
            return sel
    if any(c.role == "weekday" for c in sel) and any(c.grain == "week" for c in sel):
        sel = _weekday_in_week(text, sel, ctx)
    if len(sel) > 1:
        sel = _durations(text, sel, ctx)
        sel = _lend_years(text, sel)
    if any(c.rebuild is not None for c in sel):
        _future_days(text, sel, ctx)
    if any(c.role == "year words" for c in sel):  # a year in words: lent, or after a preposition
        sel = [c for c in sel if c.role != "year words" or _YEAR_WORDS_PREP.search(text, max(0, c.b - 16), c.b)]
    sel = _fuzzy(text, sel)
    if any(c.cls in ("clock", "weakclock") for c in sel):
        sel = _clocks(text, sel, ctx)
    if len(sel) > 1 and any(c.grain == "month" for c in sel):
        sel = _nth_weekday_of(text, sel)
    if len(sel) > 1 and any(c.grain == "week" for c in sel):
        sel = _timed_weekday_in_week(text, sel)
    if any(c.cls == "hours" for c in sel):  # hours kept for a part of the day that had no day yet
        sel = _hours(text, sel, ctx)
    if len(sel) > 1 and any(c.cls == "dur" for c in sel):
        sel = _clock_spans(text, sel)
    if len(sel) > 1:
        sel = _ranges(text, sel, ctx)
        if len(sel) > 1 and any(c.grain == "month" for c in sel):  # "the first Monday 1pm to 3pm of next month"
            sel = _nth_weekday_of(text, sel)
        sel = _to_written_day(text, sel)
        sel = _offsets(text, sel)
    if any(c.cls in ("weekmark", "dur") for c in sel):
        sel = _spans_from(text, sel)
    return _bounds(text, sel, ctx)
