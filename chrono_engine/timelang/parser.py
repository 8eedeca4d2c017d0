"""``parse_time``: run the grammars over a text and return its time expressions."""
from __future__ import annotations

import re
from datetime import datetime, tzinfo

from . import en, formats, holidays, zh
from ..errors import ArgumentTypeError
from .compose import compose, lone_part, select
from .grammar import Cand, Ctx, Rule, add_shapes
from .periods import resolve_now, resolve_tz
from .types import TimeExpression

__all__ = ["parse_time", "scan"]

# Full-width ASCII and odd spaces → their plain forms, one character for one, so that
# offsets into the normalised text are offsets into the caller's text.
_NORMALISE = {0x3000: " ", 0xA0: " ", 0x2002: " ", 0x2003: " ", 0x2009: " ", 0x202F: " "}
_NORMALISE.update({c: chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)})
#: traditional characters of the time words, read as their simplified forms (one character
#: for one, so offsets into the text stay valid): 週三, 後天, 上個月, 禮拜一, 下午三點
_TRADITIONAL = "週後個禮點時鐘間開這來從於歲號兩幾過現當內際節聖誕曆"
_SIMPLIFIED = "周后个礼点时钟间开这来从于岁号两几过现当内际节圣诞历"
_NORMALISE.update({ord(t): s for t, s in zip(_TRADITIONAL, _SIMPLIFIED)})
_DIGITS = frozenset("0123456789")
_LATIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER_WORD = re.compile(r"[a-z]+")


class _Grammar:
    """A language's rules with an index from gate characters / word prefixes / whole words
    to rules, so that a text selects the few rules it can match with a handful of set
    operations.

    A rule is indexed by one of its gates, which then holds for every text that selects
    it: a group of its whole words (``exact``), else its word prefixes (``words``), else
    its characters (``chars``); its other gates are tested after selection. Whole words
    are the narrowest index (most texts with "mar" hold no "march"); of a rule's groups the
    first whose words' first three letters are all among its prefixes is taken, if any: the
    text's prefixes are its whole words' first three letters, so the prefix gate holds too
    (else the prefix gate is left to test). Each rule is kept as one tuple of what
    :func:`_run` uses (its bound ``finditer``, its handler, the gates left to test, its
    ``need``'s bound ``search`` and its priority), so that a selected rule costs no
    attribute look-ups.
    """

    __slots__ = ("entries", "by_char", "by_word", "by_token", "always", "char_keys", "word_keys",
                 "token_keys")

    def __init__(self, rules: tuple[Rule, ...], base: int):
        entries = []
        by_char: dict[str, set[int]] = {}
        by_word: dict[str, set[int]] = {}
        by_token: dict[str, set[int]] = {}
        always = set()
        for i, r in enumerate(rules):
            chars, words, exact = r.chars, r.words, r.exact
            if exact is not None:
                implied = [words is None or all(w[:3] in words for w in g) for g in exact]
                k = implied.index(True) if True in implied else 0
                for w in exact[k]:
                    by_token.setdefault(w, set()).add(i)
                if implied[k]:
                    words = None
                exact = exact[:k] + exact[k + 1:] or None
            elif words is not None:
                for w in words:
                    by_word.setdefault(w, set()).add(i)
                words = None
            elif chars is not None:
                for ch in chars:
                    by_char.setdefault(ch, set()).add(i)
                chars = None
            else:
                always.add(i)
            # rule priority breaks ties between equally long matches: numeric formats
            # first, then Chinese, then English
            entries.append((r.pattern.finditer, r.handler, chars, words, exact,
                            None if r.need is None else r.need.search, base + i))
        self.entries = tuple(entries)
        self.by_char = {k: frozenset(v) for k, v in by_char.items()}
        self.by_word = {k: frozenset(v) for k, v in by_word.items()}
        self.by_token = {k: frozenset(v) for k, v in by_token.items()}
        self.always = frozenset(always)
        # the keys as sets: a set intersects a set by walking the smaller one (a dict: all its keys)
        self.char_keys = frozenset(self.by_char)
        self.word_keys = frozenset(self.by_word)
        self.token_keys = frozenset(self.by_token)

    def select(self, chars: set, words: set | None, tokens: set | None) -> list[int]:
        """The indices, in order, of the rules whose index gate the text's characters,
        word prefixes (``words``) and whole words (``tokens``) meet."""
        picked = self.always.union(*map(self.by_char.__getitem__, chars.intersection(self.char_keys)))
        if words:
            picked = picked.union(*map(self.by_word.__getitem__, words.intersection(self.word_keys)))
        if tokens:
            picked = picked.union(*map(self.by_token.__getitem__, tokens.intersection(self.token_keys)))
        return sorted(picked)


_FORMATS = _Grammar(formats.RULES, 0)
_ZH = _Grammar(zh.RULES, 100)
_EN = _Grammar(en.RULES, 200)


# Texts longer than _LONG are scanned only near characters or words that every time
# expression holds (a digit, 年 / 月 / 天 / 周 ..., a month, weekday or unit word), in
# windows wide enough for the longest prefix ("from the beginning of", "no later than the
# end of"). 300 (2,000 before): the same expressions on every TimeQA paragraph (15,335,
# p90 634 characters), ~12% faster there.
_LONG = 300
_WINDOW = 40
_TRIGGER = re.compile(r"[\d年月日号天儿周星礼季代旬现目此当如眼时点晚早晨夜午凌傍秒分钟]")
# first three letters of the English words a time expression holds (month and weekday
# names, day words, units, ordinals, parts of the day)
_TRIGGER_WORDS = frozenset(
    "jan feb mar apr may jun jul aug sep oct nov dec mon tue wed thu fri sat sun tod ton yes "
    "tom now pre mom sec min hou hr hrs day wee wk wks qua yea yr yrs dec cen hal fir thi fou "
    "noo mid mor aft eve nig ytd mtd qtd wtd".split())
# whole words that are a time expression without a digit or a word above: the decades in
# words ("in their early twenties") and every word of a holiday name none of whose words
# is a trigger above ("Christmas", "Easter", "St Patrick"); taken from the grammar's own
# tables, so a new holiday or decade word cannot be missed by the windows
_HOLIDAY_WORDS = [re.findall(r"[a-z]{2,}", name) for name in holidays.EN]
_TRIGGER_FULL = frozenset(en._DECADE_WORDS) | frozenset(
    w for words in _HOLIDAY_WORDS if not any(w[:3] in _TRIGGER_WORDS for w in words) for w in words) | frozenset(
    # whole words (their prefixes would open windows at "result", "remained", "data" ...)
    "eod eoy eom eoq date rest remainder remaining".split()) | frozenset(en._DAY_SPELLINGS)
_WORD_TAIL = re.compile(r"[A-Za-z0-9_]*")


def _trie(words: dict[str, bool]) -> str:
    """A pattern matching the start of an ASCII word that begins with one of ``words``
    (value True: any letters may follow) or is one of them (False), either case; as a tree
    of letters, so that the engine tests a word's first letter once rather than once per
    alternative (its first letters plain characters, which the engine compares fastest)."""
    tree: dict = {}
    for w, prefix in words.items():
        node = tree
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = prefix or node.get("", False)

    def emit(node: dict) -> str:
        if node.get("") is True:
            return ""  # a prefix: the rest of the word does not matter
        alts = [f"[{ch}{ch.upper()}]" + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if "" in node:
            alts.append("(?![A-Za-z])")  # a whole word ends here
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    return "(?:" + "|".join(c + emit(sub) for ch, sub in sorted(tree.items()) for c in (ch, ch.upper())) + ")"


# a word (a maximal run of two or more ASCII letters) whose first three letters, lower-
# cased, are one of _TRIGGER_WORDS ("hr": the whole word) or which is one of _TRIGGER_FULL:
# the same words as testing every word in Python, without a Python step per word. A match
# starts at the character before the word (any but a letter: the engine skips over letters
# fast; _windows puts a space before the text for a word at its start).
_TRIGGER_WORD = re.compile("[^A-Za-z]" + _trie({**{w: False for w in _TRIGGER_FULL},
                                                **{w: len(w) == 3 for w in _TRIGGER_WORDS}}))


def _windows(text: str) -> list[tuple[int, int]]:
    """Merged ``[lo, hi)`` regions around the trigger characters of a long text."""
    out: list[tuple[int, int]] = []
    lo = hi = -1
    hits = [m.start() for m in _TRIGGER.finditer(text)]
    hits += [m.start() for m in _TRIGGER_WORD.finditer(" " + text)]  # the word's offset in text
    hits.sort()
    for p in hits:
        a, b = p - _WINDOW, p + 1 + _WINDOW
        if hi >= 0 and a <= hi:
            hi = b
        else:
            if hi >= 0:
                out.append((lo, hi))
            lo, hi = max(a, 0), b
    if hi >= 0:
        out.append((lo, hi))
    n = len(text)
    # never end a window inside a word: the engine would see the window's end as the
    # text's end there
    return [(a, min(n, _WORD_TAIL.match(text, min(b, n)).end())) for a, b in out]


def _lacks(groups: tuple, tokens: set) -> bool:
    """Whether some group of whole words has none of its words in ``tokens`` (a loop: the
    per-rule generator of ``any`` cost more than the test)."""
    for g in groups:
        if g.isdisjoint(tokens):
            return True
    return False


def _run(grammar: _Grammar, text: str, ctx: Ctx, out: list[Cand], lo: int, hi: int,
         chars: set, words: set | None, tokens: set | None = None) -> None:
    entries = grammar.entries
    for i in grammar.select(chars, words, tokens):
        finditer, handler, gate, word_gate, exact, need, prio = entries[i]
        if gate is not None and gate.isdisjoint(chars):
            continue
        if word_gate is not None and (words is None or word_gate.isdisjoint(words)):
            continue
        if exact is not None and (tokens is None or _lacks(exact, tokens)):
            continue
        if need is not None and need(text, lo, hi) is None:
            continue
        for m in finditer(text, lo, hi):
            if m.end() == m.start():
                continue
            try:
                c = handler(m, ctx)
            except (ValueError, OverflowError):
                # not a real date (2月30日) or outside datetime's range: a void match that
                # wins the selection over its own fragments (2月, 30日) and is then dropped
                c = Cand(m.start(), m.end(), None, None, "day", "point", "void")
            if c is not None:
                c.prio = prio
                out.append(c)


def scan(text: str, ctx: Ctx) -> list[Cand]:
    """The composed candidates of ``text`` (already normalised), in text order."""
    cands: list[Cand] = []
    windows = _windows(text) if len(text) > _LONG else [(0, len(text))]
    for lo, hi in windows:
        seg = text[lo:hi] if hi - lo < len(text) else text
        chars = set(seg)
        if not chars.isdisjoint(_DIGITS):
            add_shapes(seg, chars)  # pseudo-characters: shapes need a digit
            _run(_FORMATS, text, ctx, cands, lo, hi, chars, None)
        if max(chars) >= "\u3000":
            _run(_ZH, text, ctx, cands, lo, hi, chars, None)
        if not chars.isdisjoint(_LATIN):
            tokens = set(_LOWER_WORD.findall(seg.lower()))
            words = {w[:3] for w in tokens}
            _run(_EN, text, ctx, cands, lo, hi, chars, words, tokens)
    if not cands:
        return cands
    return compose(text, [c for c in select(cands) if c.cls != "void"], ctx)


_ODD = re.compile("[\u3000\xa0\u2002\u2003\u2009\u202f\uff01-\uff5e" + _TRADITIONAL + "]")


def normalise(text: str) -> str:
    return text.translate(_NORMALISE) if _ODD.search(text) else text


def context(now: object, tz: object, kind: type = Ctx) -> Ctx:
    """The parse's moment: ``now`` and ``tz`` checked and resolved, as a ``kind`` (a Ctx)."""
    z: tzinfo = resolve_tz(tz)
    return kind(resolve_now(now, z), z)


def to_expression(c: Cand, text: str) -> TimeExpression:
    return TimeExpression(start=c.start, end=c.end, grain=c.grain, kind=c.kind,
                          duration=c.dur, fuzzy=c.fuzzy, text=text[c.b:c.e], span=(c.b, c.e))


def expressions(text: str, ctx: Ctx, original: str | None = None, *,
                lone_parts: bool = True) -> list[TimeExpression]:
    """The expressions of a normalised ``text`` at ``ctx`` (``parse_time`` without its
    argument checks); their ``text`` is sliced from ``original`` when given (the caller's
    text before :func:`normalise`: the offsets are the same). ``lone_parts=False`` leaves
    out parts of the day said without a day ("in the morning": today's to ``parse_time``)."""
    shown = text if original is None else original
    return [to_expression(c, shown) for c in scan(text, ctx)
            if (c.start is None or c.end is None or c.start < c.end)
            and (lone_parts or not lone_part(c))]


def parse_time(text: str, now: datetime | str | None = None,
               tz: str | tzinfo | None = None) -> list[TimeExpression]:
    """Every time expression in ``text``, in text order, resolved against ``now``.

    ``now`` is a datetime (naive means wall-clock time in ``tz``), an ISO 8601 string or
    None for the current time; ``tz`` an IANA zone name, a tzinfo or None for UTC. The
    result is deterministic given ``now``. Text that holds no time gives ``[]``; an
    impossible date (2月30日, February 30) gives no expression rather than an error, and so
    does a to-date range that is still empty ("YTD" at the first instant of a year, whose
    [start, end) would hold nothing); an unusable ``now`` or ``tz`` raises
    :class:`~chrono_engine.errors.TimeParseError`, a ``text`` that is not a str
    :class:`~chrono_engine.errors.ArgumentTypeError` (a ``TypeError``).

    >>> [(e.text, e.start.date().isoformat(), e.end.date().isoformat())
    ...  for e in parse_time("近三个月的报销", now="2025-06-18T12:00")]
    [('近三个月', '2025-03-18', '2025-06-18')]
    """
    if not isinstance(text, str):
        raise ArgumentTypeError(f"text must be a str, not {type(text).__name__}")
    ctx = context(now, tz)
    if not text:
        return []
    return expressions(normalise(text), ctx, text)
