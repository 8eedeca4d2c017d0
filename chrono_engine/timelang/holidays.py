"""Holidays as days of a year: fixed dates (Christmas, 国庆节), weekday rules (Thanksgiving:
the fourth Thursday of November) and Easter (the Gregorian computus). The grammars look
names up here (:data:`EN`, :data:`ZH`); festivals of the Chinese lunar calendar (春节, 中秋节,
端午节) are not here: their dates need lunar tables the package does not carry.
"""
from __future__ import annotations

from datetime import date, timedelta
from typing import Callable

__all__ = ["EN", "ZH", "easter", "leap_year_before", "nth_weekday"]


def leap_year_before(y: int) -> int:
    """The latest leap year ≤ ``y`` (for a February 29 written without its year)."""
    while not (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) and y > 4:
        y -= 1
    return y


def easter(y: int) -> date:
    """Easter Sunday of year ``y`` (Gregorian; the anonymous algorithm of Meeus/Jones/Butcher).

    >>> easter(2018), easter(2024)
    (datetime.date(2018, 4, 1), datetime.date(2024, 3, 31))
    """
    a, b, c = y % 19, y // 100, y % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    l_ = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * l_) // 451
    month = (h + l_ - 7 * m + 114) // 31
    day = (h + l_ - 7 * m + 114) % 31 + 1
    return date(y, month, day)


def nth_weekday(y: int, month: int, weekday: int, n: int) -> date:
    """The ``n``-th ``weekday`` (0 = Monday) of a month; ``n = -1`` the last one."""
    if n > 0:
        first = date(y, month, 1)
        return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    nxt = date(y + (month == 12), month % 12 + 1, 1)
    last = nxt - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def _fixed(month: int, day: int) -> Callable[[int], date]:
    return lambda y: date(y, month, day)


def _nth(month: int, weekday: int, n: int) -> Callable[[int], date]:
    return lambda y: nth_weekday(y, month, weekday, n)


_THANKSGIVING = _nth(11, 3, 4)

#: English holiday names (lower case, apostrophes and "saint"/"st." spelled out by the
#: grammar's pattern) → the day in a year
EN: dict[str, Callable[[int], date]] = {
    "new year's day": _fixed(1, 1), "new year": _fixed(1, 1), "new year's eve": _fixed(12, 31),
    "valentine's day": _fixed(2, 14), "valentines day": _fixed(2, 14),
    "saint patrick's day": _fixed(3, 17), "saint patrick": _fixed(3, 17),
    "april fools' day": _fixed(4, 1), "april fools day": _fixed(4, 1), "earth day": _fixed(4, 22),
    "may day": _fixed(5, 1), "independence day": _fixed(7, 4), "halloween": _fixed(10, 31),
    "veterans day": _fixed(11, 11), "christmas eve": _fixed(12, 24), "christmas": _fixed(12, 25),
    "christmas day": _fixed(12, 25), "xmas": _fixed(12, 25), "boxing day": _fixed(12, 26),
    "easter": easter, "easter sunday": easter, "good friday": lambda y: easter(y) - timedelta(days=2),
    "easter monday": lambda y: easter(y) + timedelta(days=1),
    "thanksgiving": _THANKSGIVING, "thanksgiving day": _THANKSGIVING,
    "black friday": lambda y: _THANKSGIVING(y) + timedelta(days=1),
    "cyber monday": lambda y: _THANKSGIVING(y) + timedelta(days=4),
    "mother's day": _nth(5, 6, 2), "mothers day": _nth(5, 6, 2),
    "father's day": _nth(6, 6, 3), "fathers day": _nth(6, 6, 3),
    "memorial day": _nth(5, 0, -1), "labor day": _nth(9, 0, 1), "labour day": _nth(9, 0, 1),
    "martin luther king day": _nth(1, 0, 3), "mlk day": _nth(1, 0, 3),
    "presidents' day": _nth(2, 0, 3), "presidents day": _nth(2, 0, 3),
    "columbus day": _nth(10, 0, 2),
    "juneteenth": _fixed(6, 19), "jubilee day": _fixed(6, 19), "freedom day": _fixed(6, 19),
    "international workers' day": _fixed(5, 1),
    "international workers day": _fixed(5, 1), "workers' day": _fixed(5, 1), "workers day": _fixed(5, 1),
}

#: Chinese holiday names → the day in a year (solar-calendar ones only)
ZH: dict[str, Callable[[int], date]] = {
    "元旦": _fixed(1, 1), "情人节": _fixed(2, 14), "妇女节": _fixed(3, 8), "三八妇女节": _fixed(3, 8),
    "植树节": _fixed(3, 12), "愚人节": _fixed(4, 1), "劳动节": _fixed(5, 1), "五一劳动节": _fixed(5, 1),
    "青年节": _fixed(5, 4), "五四青年节": _fixed(5, 4), "儿童节": _fixed(6, 1), "六一儿童节": _fixed(6, 1),
    "建党节": _fixed(7, 1), "建军节": _fixed(8, 1), "八一建军节": _fixed(8, 1), "教师节": _fixed(9, 10),
    "国庆节": _fixed(10, 1), "国庆": _fixed(10, 1), "万圣节": _fixed(10, 31), "平安夜": _fixed(12, 24),
    "圣诞节": _fixed(12, 25), "圣诞": _fixed(12, 25), "母亲节": _nth(5, 6, 2), "父亲节": _nth(6, 6, 3),
    "感恩节": _THANKSGIVING, "复活节": easter,
}
