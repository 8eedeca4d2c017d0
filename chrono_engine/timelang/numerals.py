"""Numbers as people write them in time expressions: Arabic digits, Chinese numerals
(二〇二四, 十五, 两, 廿三, 一百) and English number words (twenty-one, a, a couple of).

The regular-expression fragments here are shared by the grammars so that every rule
accepts the same spellings.
"""
from __future__ import annotations

__all__ = ["CN_DIGITS4", "EN_NUM", "FUZZY_EN", "cn_int", "en_int", "number"]

_CN_DIGIT = {"〇": 0, "零": 0, "○": 0, "Ｏ": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4,
             "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNIT = {"十": 10, "百": 100, "千": 1000, "万": 10000}

#: A four-digit year written digit by digit (二〇二四).
CN_DIGITS4 = "[〇零○一二三四五六七八九]{4}"

_EN_ONES = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
            "eighteen": 18, "nineteen": 19}
_EN_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
            "eighty": 80, "ninety": 90}
_EN_SPECIAL = {"a": 1, "an": 1, "one": 1, "a couple of": 2, "a couple": 2, "couple of": 2, "couple": 2,
               "a few": 3, "few": 3, "several": 3, "half a": 0.5, "half an": 0.5}
_ONES_RE = "|".join(sorted(_EN_ONES, key=len, reverse=True))
_TENS_RE = "|".join(_EN_TENS)
#: An English amount: digits, number words up to the nineties, or a/an/a couple of/a few.
EN_NUM = (rf"(?:(?:\d{{1,4}}|{_ONES_RE}|an?)\s+and\s+(?:a\s+)?(?:half|quarter)"
          rf"|\d{{1,4}}(?:\.\d+)?|(?:{_TENS_RE})(?:[\s-](?:{_ONES_RE}))?|{_ONES_RE}"
          r"|(?:one\s+)?hundred|a\s+couple(?:\s+of)?|couple(?:\s+of)?|a\s+few|few|several"
          r"|half\s+an?|an?)")
#: Amounts whose value is a guess ("a few days ago"): the expression is marked fuzzy.
FUZZY_EN = frozenset({"a few", "few", "several"})


def cn_int(s: str) -> int | None:
    """Value of a Chinese (or Arabic) numeral, or None when it is not one.

    >>> cn_int("二〇二四"), cn_int("十五"), cn_int("两"), cn_int("一百零五"), cn_int("廿三")
    (2024, 15, 2, 105, 23)
    """
    if not s:
        return None
    if s.isdigit() and s.isascii():
        return int(s)
    if len(s) > 1 and all(c in _CN_DIGIT for c in s):
        # digit by digit: 二〇二四 = 2024, 二四 = 24
        v = 0
        for c in s:
            v = v * 10 + _CN_DIGIT[c]
        return v
    total = 0
    cur = None
    for c in s:
        if c in _CN_DIGIT:
            cur = _CN_DIGIT[c]
        elif c == "廿":
            total += 20
            cur = None
        elif c == "卅":
            total += 30
            cur = None
        elif c in _CN_UNIT:
            u = _CN_UNIT[c]
            total += (1 if cur is None else cur) * u
            cur = None
        else:
            return None
    if cur is not None:
        total += cur
    return total


def en_int(s: str) -> float | None:
    """Value of an English amount (digits or words), or None.

    >>> en_int("twenty-one"), en_int("a"), en_int("3"), en_int("a couple of")
    (21, 1, 3, 2)
    """
    w = " ".join(s.lower().replace("-", " ").split())
    if not w:
        return None
    if w[0].isdigit():
        try:
            v = float(w)
        except ValueError:
            return None
        return int(v) if v == int(v) else v
    if w in _EN_SPECIAL:
        return _EN_SPECIAL[w]
    if w.endswith((" and a half", " and half", " and a quarter", " and quarter")):
        head = w.rsplit(" and ", 1)[0]
        v = en_int(head)
        return None if v is None else v + (0.5 if w.endswith("half") else 0.25)
    if w in _EN_ONES:
        return _EN_ONES[w]
    if w in ("hundred", "one hundred"):
        return 100
    parts = w.split(" ")
    if parts[0] in _EN_TENS:
        v = _EN_TENS[parts[0]]
        if len(parts) == 2 and parts[1] in _EN_ONES and _EN_ONES[parts[1]] < 10:
            return v + _EN_ONES[parts[1]]
        if len(parts) == 1:
            return v
    return None


def number(s: str) -> float | None:
    """Value of a Chinese-side amount: digits (possibly decimal), numerals, 半, 几, 一个半."""
    if not s:
        return None
    if s == "半":
        return 0.5
    if s == "几":
        return 3
    half = s.endswith("半")
    if half:
        s = s[:-1]
    if s[0].isdigit():
        try:
            v = float(s)
        except ValueError:
            return None
    else:
        iv = cn_int(s)
        if iv is None:
            return None
        v = float(iv)
    if half:
        v += 0.5
    return int(v) if v == int(v) else v
