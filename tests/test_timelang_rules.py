"""General grammar rules of the English time language, each with the cases that show it
and the readings it must leave alone (issue 24: the Recognizers-Text suite's failures were
fixed by rules, not per case; ``tests/test_recognizers.py`` counts them)."""
from __future__ import annotations

import pytest

from chrono_engine.timelang import parse_time

NOW = "2016-11-07T10:20:00"  # a Monday


def _read(text, now=NOW):
    return [(e.text, e.start.isoformat()[:19] if e.start else None, e.end.isoformat()[:19] if e.end else None)
            for e in parse_time(text, now=now)]


@pytest.mark.parametrize("text, start, end", [
    # the first clock of a range, said without its half of the day, is in the second's afternoon
    ("from 7:00 to 8:00pm", "2016-11-07T19:00:00", "2016-11-07T20:00:00"),
    ("tomorrow from 7:00 to 8:00pm", "2016-11-08T19:00:00", "2016-11-08T20:00:00"),
    ("2:00 - 2:30 pm", "2016-11-07T14:00:00", "2016-11-07T14:30:00"),
    ("between 2:20 to 3pm", "2016-11-07T14:20:00", "2016-11-07T15:00:00"),
    ("December 15 2016 from 7:00 to 8:00pm", "2016-12-15T19:00:00", "2016-12-15T20:00:00"),
    ("Monday 7:30 - 9 pm", "2016-11-07T19:30:00", "2016-11-07T21:00:00"),
    # ... unless it says its half, or the afternoon reading would not come first
    ("from 07:00 to 8:00pm", "2016-11-07T07:00:00", "2016-11-07T20:00:00"),
    ("from 9am to 5pm", "2016-11-07T09:00:00", "2016-11-07T17:00:00"),
    ("from 13:00 to 8pm", "2016-11-07T13:00:00", "2016-11-07T20:00:00"),
    ("from 11:00 to 1:00pm", "2016-11-07T11:00:00", "2016-11-07T13:00:00"),
])
def test_a_range_lends_its_afternoon_to_a_bare_first_clock(text, start, end):
    assert _read(text) == [(text, start, end)]


@pytest.mark.parametrize("text, now, want", [
    # the first date on or after today whose day of the month falls on that weekday
    ("I'll go back Mon 13th", "2022-04-27T10:00:00", [("Mon 13th", "2022-06-13T00:00:00", "2022-06-14T00:00:00")]),
    ("arrangement on Sunday 31!", "2022-04-27T10:00:00",
     [("on Sunday 31", "2022-07-31T00:00:00", "2022-08-01T00:00:00")]),
    ("coffee on wednesday the thirty first.", "2022-04-27T10:00:00",
     [("on wednesday the thirty first", "2022-08-31T00:00:00", "2022-09-01T00:00:00")]),
    ("coffee on tues the 4th 7pm", "2022-04-27T10:00:00",
     [("on tues the 4th 7pm", "2022-10-04T19:00:00", "2022-10-04T20:00:00")]),
    ("on Friday the 13th", "2022-05-13T09:00:00", [("on Friday the 13th", "2022-05-13T00:00:00", "2022-05-14T00:00:00")]),
    # a bare number needs the clause's end (or a time) after it; lower-case words stay words
    ("on Monday 12 people came", "2022-04-27T10:00:00",
     [("on Monday", "2022-04-25T00:00:00", "2022-04-26T00:00:00")]),
    ("we met on sun 13th", "2022-04-27T10:00:00", []),
])
def test_a_weekday_with_a_day_of_the_month(text, now, want):
    assert _read(text, now) == want


@pytest.mark.parametrize("text, want", [
    ("at six pm", [("six pm", "2016-11-07T18:00:00", "2016-11-07T19:00:00")]),
    ("meet at nine a m", [("nine a m", "2016-11-07T09:00:00", "2016-11-07T10:00:00")]),
    ("the staff dinner seven p . m .", [("seven p . m", "2016-11-07T19:00:00", "2016-11-07T20:00:00")]),
    ("I'll be back 1140 a.m.", [("1140 a.m.", "2016-11-07T11:40:00", "2016-11-07T11:41:00")]),
    ("book it today at 9p.", [("today at 9p", "2016-11-07T21:00:00", "2016-11-07T22:00:00")]),
    ("back at 9.am.", [("9.am.", "2016-11-07T09:00:00", "2016-11-07T10:00:00")]),
    ("the 1990 am radio", [("1990", "1990-01-01T00:00:00", "1991-01-01T00:00:00")]),
    ("at 5 a member", []),
])
def test_clock_times_as_people_write_them(text, want):
    assert _read(text) == want
