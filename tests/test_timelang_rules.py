"""General grammar rules of the English time language, each with the cases that show it
and the readings it must leave alone (the Recognizers-Text suite's failures were
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
    # the date nearest today whose day of the month falls on that weekday (the first on or
    # after today in a clause that speaks of the future)
    ("I'll go back Mon 13th", "2022-04-27T10:00:00", [("Mon 13th", "2022-06-13T00:00:00", "2022-06-14T00:00:00")]),
    ("I'll go back Mon 13th", "2022-02-01T10:00:00", [("Mon 13th", "2022-06-13T00:00:00", "2022-06-14T00:00:00")]),
    ("we met on Mon 13th", "2022-02-01T10:00:00", [("on Mon 13th", "2021-12-13T00:00:00", "2021-12-14T00:00:00")]),
    ("arrangement on Sunday 31!", "2022-04-27T10:00:00",
     [("on Sunday 31", "2022-07-31T00:00:00", "2022-08-01T00:00:00")]),
    ("coffee on wednesday the thirty first.", "2022-04-27T10:00:00",
     [("on wednesday the thirty first", "2022-08-31T00:00:00", "2022-09-01T00:00:00")]),
    ("coffee on tues the 4th 7pm", "2022-04-27T10:00:00",
     [("on tues the 4th 7pm", "2022-01-04T19:00:00", "2022-01-04T20:00:00")]),
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


@pytest.mark.parametrize("text, want", [
    # a year in words is lent to the day or month before it ...
    ("born on January twenty five nineteen eighty six",
     [("January twenty five nineteen eighty six", "1986-01-25T00:00:00", "1986-01-26T00:00:00")]),
    ("born on twenty five January nineteen eighty six",
     [("twenty five January nineteen eighty six", "1986-01-25T00:00:00", "1986-01-26T00:00:00")]),
    ("On fifteen August nineteen hundred ninety three, it opened",
     [("fifteen August nineteen hundred ninety three", "1993-08-15T00:00:00", "1993-08-16T00:00:00")]),
    ("sails on 6 April seventeen hundred thirty three",
     [("6 April seventeen hundred thirty three", "1733-04-06T00:00:00", "1733-04-07T00:00:00")]),
    ("in October two thousand and five", [("October two thousand and five", "2005-10-01T00:00:00",
                                           "2005-11-01T00:00:00")]),
    ("left in October two thousand and returned", [("October two thousand", "2000-10-01T00:00:00",
                                                    "2000-11-01T00:00:00")]),
    # ... and is never a year alone
    ("two thousand people", []),
    ("nineteen eighty six", []),
])
def test_years_in_words(text, want):
    assert _read(text, "2019-03-01T10:00:00") == want


@pytest.mark.parametrize("text, want", [
    # hours without am / pm take the half of the part of the day next to them
    ("out between 7 and 9:30 last night", [("between 7 and 9:30 last night", "2018-05-30T19:00:00",
                                            "2018-05-30T21:30:00")]),
    ("between 10 and 11:30 this morning", [("between 10 and 11:30 this morning", "2018-05-31T10:00:00",
                                            "2018-05-31T11:30:00")]),
    ("a meeting tonight from 7 to 7:30", [("tonight from 7 to 7:30", "2018-05-31T19:00:00",
                                           "2018-05-31T19:30:00")]),
    ("tomorrow afternoon 2-4", [("tomorrow afternoon 2-4", "2018-06-01T14:00:00", "2018-06-01T16:00:00")]),
    # a clock before the part of the day, or a bare hour after at / around next to one
    ("back at five-thirty tomorrow evening", [("five-thirty tomorrow evening", "2018-06-01T17:30:00",
                                               "2018-06-01T17:31:00")]),
    ("at 7 this evening", [("7 this evening", "2018-05-31T19:00:00", "2018-05-31T20:00:00")]),
    ("back tonight around 7", [("tonight around 7", "2018-05-31T19:00:00", "2018-05-31T20:00:00")]),
    ("party on Sat at 5.", [("on Sat at 5", "2018-06-02T05:00:00", "2018-06-02T06:00:00")]),
    # a bare hour with no day next to it, or a count, is not a time
    ("he arrived at 9", []),
    ("at 5 people came", []),
])
def test_clock_times_next_to_a_part_of_the_day(text, want):
    assert _read(text, "2018-05-31T10:00:00") == want


@pytest.mark.parametrize("text, want", [
    # a date with its month's name between dashes or slashes, in any order
    ("How about 2019-aug-1", [("2019-aug-1", "2019-08-01T00:00:00", "2019-08-02T00:00:00")]),
    ("sep-23-2020", [("sep-23-2020", "2020-09-23T00:00:00", "2020-09-24T00:00:00")]),
    ("2020/23/sep", [("2020/23/sep", "2020-09-23T00:00:00", "2020-09-24T00:00:00")]),
    ("23-2020-september", [("23-2020-september", "2020-09-23T00:00:00", "2020-09-24T00:00:00")]),
    ("between 22/Jan/2019 and yesterday", [("between 22/Jan/2019 and yesterday", "2019-01-22T00:00:00",
                                            "2020-09-10T00:00:00")]),
    ("Jan/2019", [("Jan/2019", "2019-01-01T00:00:00", "2019-02-01T00:00:00")]),
    # a weekday before it only names its weekday, through a closing parenthesis
    ("call this Friday-Jun-15 with Jim", [("this Friday-Jun-15", "2020-06-15T00:00:00", "2020-06-16T00:00:00")]),
    ("call this friday (jun-15) with Jim", [("this friday (jun-15)", "2020-06-15T00:00:00", "2020-06-16T00:00:00")]),
    # days of one month as a range, in digits or ordinal words
    ("off april ninth through seventeenth", [("april ninth through seventeenth", "2020-04-09T00:00:00",
                                              "2020-04-18T00:00:00")]),
    ("off between the ninth and the seventeenth of april",
     [("between the ninth and the seventeenth of april", "2020-04-09T00:00:00", "2020-04-18T00:00:00")]),
    ("out between 3 and 12 of Sept", [("between 3 and 12 of Sept", "2020-09-03T00:00:00", "2020-09-13T00:00:00")]),
    ("7 to 9 March", [("7 to 9 March", "2020-03-07T00:00:00", "2020-03-10T00:00:00")]),
    ("7 and 9 March", [("9 March", "2020-03-09T00:00:00", "2020-03-10T00:00:00")]),  # "and" needs "between"
])
def test_dates_with_month_names(text, want):
    assert _read(text, "2020-09-10T10:00:00") == want


@pytest.mark.parametrize("text, want", [
    # how long, without a position: a night counts a day, a weekend two
    ("for 2 nights", [("2 nights", None, None)]),
    ("the course lasts three weekends", [("three weekends", None, None)]),
    ("I'll leave for all day", [("all day", None, None)]),
    ("all year-round", []),
    # a holiday's weekend: the one before a Monday holiday, else that of its week, and the day
    ("prepare for labor day weekend", [("labor day weekend", "2021-09-04T00:00:00", "2021-09-07T00:00:00")]),
    ("the weekend of halloween", [("the weekend of halloween", "2021-10-30T00:00:00", "2021-11-01T00:00:00")]),
    ("weekend of thanksgiving 2023 off", [("weekend of thanksgiving 2023", "2023-11-23T00:00:00",
                                           "2023-11-27T00:00:00")]),
    ("this weekend", [("this weekend", "2021-11-13T00:00:00", "2021-11-15T00:00:00")]),
])
def test_durations_and_holiday_weekends(text, want):
    assert _read(text, "2021-11-10T10:00:00") == want


def test_durations_carry_their_length():
    (e,) = parse_time("three weekends", now=NOW)
    assert e.duration.total_seconds() == 6 * 86400
    (e,) = parse_time("two nights", now=NOW)
    assert e.duration.total_seconds() == 2 * 86400


@pytest.mark.parametrize("text, want", [
    # the part of the current unit before today, or after it
    ("earlier this month", [("earlier this month", "2018-05-01T00:00:00", "2018-05-16T00:00:00")]),
    ("later this week", [("later this week", "2018-05-17T00:00:00", "2018-05-21T00:00:00")]),
    ("later in the year", [("later in the year", "2018-05-17T00:00:00", "2019-01-01T00:00:00")]),
    # the end of a day: its last second
    ("back end of tomorrow", [("end of tomorrow", "2018-05-17T23:59:59", "2018-05-18T00:00:00")]),
    ("end of this sunday", [("end of this sunday", "2018-05-20T23:59:59", "2018-05-21T00:00:00")]),
    ("messages at the eod", [("the eod", "2018-05-16T23:59:59", "2018-05-17T00:00:00")]),
    ("the end of the week", [("the end of the week", "2018-05-18T00:00:00", "2018-05-21T00:00:00")]),
])
def test_parts_of_the_current_unit_and_ends_of_days(text, want):
    assert _read(text, "2018-05-16T10:00:00") == want


def test_earlier_this_week_on_its_monday_is_the_week():
    # nothing of the week lies before its Monday: the words read as the week itself
    assert _read("earlier this week", "2018-05-14T10:00:00") == [("this week", "2018-05-14T00:00:00",
                                                                  "2018-05-21T00:00:00")]


@pytest.mark.parametrize("text, want", [
    # a clock that says its half, or a small hour of the night, keeps it next to "tonight"
    ("tonight at 1am", [("tonight at 1am", "2019-12-26T01:00:00", "2019-12-26T02:00:00")]),
    ("back tonight around 3", [("tonight around 3", "2019-12-26T03:00:00", "2019-12-26T04:00:00")]),
    ("back tonight around 7", [("tonight around 7", "2019-12-26T19:00:00", "2019-12-26T20:00:00")]),
    # two dates written with numbers as one range; a year on one side serves both
    ("vacation from 10/1/2018-10/7/2018", [("from 10/1/2018-10/7/2018", "2018-10-01T00:00:00",
                                            "2018-10-08T00:00:00")]),
    ("vacation from 10-1-2018-10-7-2018", [("from 10-1-2018-10-7-2018", "2018-10-01T00:00:00",
                                            "2018-10-08T00:00:00")]),
    ("The period is 10/1-11/2/2017", [("10/1-11/2/2017", "2017-10-01T00:00:00", "2017-11-03T00:00:00")]),
    ("score 1-2 - 3-4", []),  # no year and no "from": not dates
])
def test_tonight_and_numeric_date_ranges(text, want):
    assert _read(text, "2019-12-26T10:00:00") == want


@pytest.mark.parametrize("text, want", [
    ("Juneteenth, also known as Freedom Day", [("Juneteenth", "2019-06-19T00:00:00", "2019-06-20T00:00:00"),
                                               ("Freedom Day", "2019-06-19T00:00:00", "2019-06-20T00:00:00")]),
    ("This task should be done next 6th of April", [("next 6th of April", "2020-04-06T00:00:00",
                                                     "2020-04-07T00:00:00")]),
    ("The door opens today pm", [("today pm", "2019-05-10T12:00:00", "2019-05-10T18:00:00")]),
    ("celebrate International Workers' Day!", [("International Workers' Day", "2019-05-01T00:00:00",
                                                "2019-05-02T00:00:00")]),
    ("When was the previous easter?", [("previous easter", "2019-04-21T00:00:00", "2019-04-22T00:00:00")]),
    ("When is the following easter?", [("following easter", "2020-04-12T00:00:00", "2020-04-13T00:00:00")]),
    ("a time Monday 11-4.", [("Monday 11-4", "2019-05-06T11:00:00", "2019-05-06T16:00:00")]),
    ("born in April of 87", [("April of 87", "1987-04-01T00:00:00", "1987-05-01T00:00:00")]),
    ("born on 15 April of 87", [("15 April of 87", "1987-04-15T00:00:00", "1987-04-16T00:00:00")]),
    ("presidents in 90 s.", [("90 s", "1990-01-01T00:00:00", "2000-01-01T00:00:00")]),
    ("for October, 1st.", [("October, 1st", "2019-10-01T00:00:00", "2019-10-02T00:00:00")]),
    ("this working week", [("this working week", "2019-05-06T00:00:00", "2019-05-11T00:00:00")]),
    ("next workweek", [("next workweek", "2019-05-13T00:00:00", "2019-05-18T00:00:00")]),
    ("gains in this calendar year.", [("this calendar year", "2019-01-01T00:00:00", "2020-01-01T00:00:00")]),
    # a year in words after a preposition; a count of things is not a year
    ("sales in two thousand and twenty", [("two thousand and twenty", "2020-01-01T00:00:00", "2021-01-01T00:00:00")]),
    ("in two thousand people", []),
])
def test_holidays_units_and_short_years(text, want):
    assert _read(text, "2019-05-10T10:00:00") == want


@pytest.mark.parametrize("text, want", [
    # more / less than an amount from a day: a bound, or the stretch between
    ("work more than 2 weeks before today", [("more than 2 weeks before today", None, "2018-05-15T00:00:00")]),
    ("start more than 2 weeks after today", [("more than 2 weeks after today", "2018-06-12T00:00:00", None)]),
    ("done less than 3 days after tomorrow", [("less than 3 days after tomorrow", "2018-05-30T00:00:00",
                                               "2018-06-02T00:00:00")]),
    ("two days after today", [("two days after today", "2018-05-31T00:00:00", "2018-06-01T00:00:00")]),
    # four-digit clock times with a leading zero; year ranges stay years
    ("where were you between 0730-0930?", [("between 0730-0930", "2018-05-29T07:30:00", "2018-05-29T09:30:00")]),
    ("between 0930-0730", [("between 0930-0730", "2018-05-29T09:30:00", "2018-05-29T19:30:00")]),
    ("between 2010-2015", [("2010-2015", "2010-01-01T00:00:00", "2016-01-01T00:00:00")]),
    ("from 1400 to 1630", [("from 1400 to 1630", "1400-01-01T00:00:00", "1631-01-01T00:00:00")]),
    # "NN s" is a decade only after in / the: "one of 60 s constructed" counts things
    ("in the 80 s", [("the 80 s", "1980-01-01T00:00:00", "1990-01-01T00:00:00")]),
    ("was one of 60 s constructed", []),
])
def test_bounds_by_amount_clock_ranges_and_spaced_decades(text, want):
    assert _read(text, "2018-05-29T10:00:00") == want


@pytest.mark.parametrize("text, want", [
    # "for" an amount from a day (or now): that long, from there
    ("set OOO for 3 days from today", [("for 3 days from today", "2018-05-23T00:00:00", "2018-05-26T00:00:00")]),
    ("set OOO for 1 week, from 20th dec", [("for 1 week, from 20th dec", "2018-12-20T00:00:00",
                                            "2018-12-27T00:00:00")]),
    ("for 2 hours from now", [("for 2 hours from now", "2018-05-23T10:00:00", "2018-05-23T12:00:00")]),
    # without "for" the amount moves the day
    ("3 weeks from May 3", [("3 weeks from May 3", "2018-05-24T00:00:00", "2018-05-25T00:00:00")]),
])
def test_for_an_amount_from_a_day(text, want):
    assert _read(text, "2018-05-23T10:00:00") == want


@pytest.mark.parametrize("text, want", [
    ("next evening between 10:30 and 11:45", [("next evening between 10:30 and 11:45", "2018-05-31T22:30:00",
                                               "2018-05-31T23:45:00")]),
    ("working between 7 and 9 last morning.", [("between 7 and 9 last morning", "2018-05-29T07:00:00",
                                                "2018-05-29T09:00:00")]),
    ("see you tonite, honey!", [("tonite", "2018-05-30T18:00:00", "2018-05-31T00:00:00")]),
])
def test_next_and_last_parts_of_the_day(text, want):
    assert _read(text, "2018-05-30T10:00:00") == want


@pytest.mark.parametrize("text, want", [
    # the hour or minute before / after now, rolling
    ("I'll go back next hour", [("next hour", "2016-11-07T10:20:00", "2016-11-07T11:20:00")]),
    ("sales in the last hour", [("the last hour", "2016-11-07T09:20:00", "2016-11-07T10:20:00")]),
    ("I counted 13 last minute.", [("last minute", "2016-11-07T10:19:00", "2016-11-07T10:20:00")]),
    ("I counted 3 in the 13 last minutes.", [("in the 13 last minutes", "2016-11-07T10:07:00",
                                              "2016-11-07T10:20:00")]),
    # not the idiom, nor this hour
    ("they changed it at the last minute", []),
    ("until the last minute", []),
    ("a last-minute change", []),
    ("what happened this hour", []),
    # "last" after a modal or a negation is the verb: the amount is how long
    ("this appointment shouldn't last two hours", [("two hours", None, None)]),
    ("the war did not last two years", [("two years", None, None)]),
    ("in the last two hours", [("in the last two hours", "2016-11-07T08:20:00", "2016-11-07T10:20:00")]),
])
def test_rolling_hours_and_minutes_and_last_the_verb(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # "a second" before a noun is the ordinal; "N units time" needs "in" or an apostrophe
    ("Let's target a second round", []),
    ("the dawn of a second wave", []),
    ("he won a second time", []),
    ("a second opinion", []),
    ("wait a second", [("a second", None, None)]),
    ("wait a second or two", [("a second", None, None)]),
    ("a one second time difference", [("one second", None, None)]),
    ("in two weeks time", [("in two weeks time", "2016-11-21T00:00:00", "2016-11-28T00:00:00")]),
    ("in 3 weeks' time", [("in 3 weeks' time", "2016-11-28T00:00:00", "2016-12-05T00:00:00")]),
])
def test_a_second_before_a_noun_is_the_ordinal(text, want):
    assert _read(text) == want


def test_fractional_seconds_are_kept():
    (e,) = parse_time("I'll leave for 123.45 sec", now=NOW)
    assert e.duration.total_seconds() == pytest.approx(123.45)


@pytest.mark.parametrize("text, want", [
    # a bare hour and an amount: today from that hour, that long
    ("The meeting is start from 9 for 2.5 hrs", [("from 9 for 2.5 hrs", "2016-11-07T09:00:00",
                                                  "2016-11-07T11:30:00")]),
    ("The meeting will last for 2.5 hours from 9", [("for 2.5 hours from 9", "2016-11-07T09:00:00",
                                                     "2016-11-07T11:30:00")]),
    # a clock time written with its half of the day is put on its day by compose
    ("on 14th Feb from 9:30am for 7 hours", [("14th Feb from 9:30am for 7 hours", "2016-02-14T09:30:00",
                                               "2016-02-14T16:30:00")]),
    # a year is no hour
    ("for 2 hours from 1990", [("for 2 hours", None, None), ("1990", "1990-01-01T00:00:00", "1991-01-01T00:00:00")]),
])
def test_an_hour_for_an_amount(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    ("docked till date", [("till date", None, "2016-11-07T10:20:00")]),
    ("his best result to date", [("to date", None, "2016-11-07T10:20:00")]),
    ("from 2010 to date", [("from 2010 to date", "2010-01-01T00:00:00", "2016-11-07T10:20:00")]),
    ("from 2010-01-01 till current date", [("from 2010-01-01 till current date", "2010-01-01T00:00:00",
                                            "2016-11-07T10:20:00")]),
    ("working on it at the present time", [("at the present time", "2016-11-07T10:20:00", "2016-11-07T10:20:01")]),
    # "up to date" is current, not a bound; "equals to date 1" is a field
    ("keep the records up to date", []),
    ("greater than or equals to date 1", []),
])
def test_to_date_and_the_present_time(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    ("a party at the EOY", [("the EOY", "2016-11-01T00:00:00", "2017-01-01T00:00:00")]),
    ("due EOM", [("EOM", "2016-11-21T00:00:00", "2016-12-01T00:00:00")]),
    ("Show sales in the cy18", [("cy18", "2018-01-01T00:00:00", "2019-01-01T00:00:00")]),
    ("CY 2017 revenue", [("CY 2017", "2017-01-01T00:00:00", "2018-01-01T00:00:00")]),
    ("Is this a valid date? 12-2015", [("12-2015", "2015-12-01T00:00:00", "2016-01-01T00:00:00")]),
    ("1990-2015", [("1990-2015", "1990-01-01T00:00:00", "2016-01-01T00:00:00")]),
    ("We should go back at mid night.", [("mid night", "2016-11-07T00:00:00", "2016-11-07T00:01:00")]),
    ("around the 21st this month", [("the 21st this month", "2016-11-21T00:00:00", "2016-11-22T00:00:00")]),
    ("the 3rd of next month", [("the 3rd of next month", "2016-12-03T00:00:00", "2016-12-04T00:00:00")]),
    # a month abbreviation after "$" is a ticker
    ("$DEC farming is coming to $CUB Finance!", []),
    ("Dec 2015", [("Dec 2015", "2015-12-01T00:00:00", "2016-01-01T00:00:00")]),
])
def test_abbreviations_numeric_months_and_days_of_this_month(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # amounts of finer units added to an offset or a rolling range
    ("2 weeks and 2 days ago", [("2 weeks and 2 days ago", "2016-10-22T00:00:00", "2016-10-23T00:00:00")]),
    ("I left here 2 years 1 month 21 days later", [("2 years 1 month 21 days later", "2018-12-28T00:00:00",
                                                    "2018-12-29T00:00:00")]),
    ("in 2 weeks and 2 days", [("in 2 weeks and 2 days", "2016-11-23T00:00:00", "2016-11-24T00:00:00")]),
    ("for the last 3 months and 2 weeks and 2 days.", [("for the last 3 months and 2 weeks and 2 days",
                                                        "2016-07-22T10:20:00", "2016-11-07T10:20:00")]),
    # ... but an amount followed by its own offset keeps it
    ("for the last 3 months and 2 weeks and 2 days ago", [
        ("for the last 3 months", "2016-08-07T10:20:00", "2016-11-07T10:20:00"),
        ("2 weeks and 2 days ago", "2016-10-22T00:00:00", "2016-10-23T00:00:00")]),
    ("3 hours 30 minutes", [("3 hours 30 minutes", None, None)]),
])
def test_amounts_add_to_offsets_and_rolling_ranges(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, now, want", [
    # a weekday next to an offset of weeks or more: that day of the offset's week
    ("I'll go back Monday two weeks from now.", "2016-11-07T10:20:00",
     [("Monday two weeks from now", "2016-11-21T00:00:00", "2016-11-22T00:00:00")]),
    ("two months from today on Tuesday", "2016-11-07T10:20:00",
     [("two months from today on Tuesday", "2017-01-03T00:00:00", "2017-01-04T00:00:00")]),
    ("on Friday, 2 weeks ago", "2016-11-07T10:20:00",
     [("on Friday, 2 weeks ago", "2016-10-28T00:00:00", "2016-10-29T00:00:00")]),
    # days are no week: both stay
    ("Friday 3 days from now", "2016-11-07T10:20:00",
     [("Friday", "2016-11-11T00:00:00", "2016-11-12T00:00:00"),
      ("3 days from now", "2016-11-10T00:00:00", "2016-11-11T00:00:00")]),
    # a bare weekday in a range takes the other side's week ("now" a Wednesday)
    ("from next monday to friday", "2016-11-09T10:20:00",
     [("from next monday to friday", "2016-11-14T00:00:00", "2016-11-19T00:00:00")]),
    ("from monday to friday next week", "2016-11-09T10:20:00",
     [("from monday to friday next week", "2016-11-14T00:00:00", "2016-11-19T00:00:00")]),
    ("from monday to friday", "2016-11-09T10:20:00",
     [("from monday to friday", "2016-11-07T00:00:00", "2016-11-12T00:00:00")]),
    ("from friday to monday", "2016-11-09T10:20:00",
     [("from friday to monday", "2016-11-11T00:00:00", "2016-11-15T00:00:00")]),
])
def test_weekdays_with_offsets_and_in_ranges(text, now, want):
    assert _read(text, now) == want


@pytest.mark.parametrize("text, want", [
    ("Are you available three weeks from tmrw?", [("three weeks from tmrw", "2016-11-29T00:00:00",
                                                   "2016-11-30T00:00:00")]),
    ("see you tomorow", [("tomorow", "2016-11-08T00:00:00", "2016-11-09T00:00:00")]),
    ("from q1 of 2017 - q3 of 2018", [("from q1 of 2017 - q3 of 2018", "2017-01-01T00:00:00",
                                       "2018-10-01T00:00:00")]),
])
def test_spellings_and_quarters_of_a_year(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    ("Starbucks on 29th - meet", [("29th", "2016-11-29T00:00:00", "2016-11-30T00:00:00")]),
    ("meet on 5th avenue", []),
    ("for the week of the 18th.", [("the week of the 18th", "2016-11-14T00:00:00", "2016-11-21T00:00:00")]),
    ("Show sales in the week 27 of last year", [("the week 27 of last year", "2015-06-29T00:00:00",
                                                 "2015-07-06T00:00:00")]),
    # hours in words with o'clock; a range from now to a bare clock already past is the evening's
    ("at eight o'clock tomorrow", [("eight o'clock tomorrow", "2016-11-08T08:00:00", "2016-11-08T09:00:00")]),
    ("book a meeting between now and eight o'clock", [("between now and eight o'clock", "2016-11-07T10:20:00",
                                                       "2016-11-07T20:00:00")]),
    ("How many calls between eight o'clock and now?", [("between eight o'clock and now", "2016-11-07T08:00:00",
                                                        "2016-11-07T10:20:00")]),
    ("between now and 8am tomorrow", [("between now and 8am tomorrow", "2016-11-07T10:20:00",
                                       "2016-11-08T08:00:00")]),
    # the rest of a unit: from now to its end
    ("take the remaining of the week off", [("the remaining of the week", "2016-11-07T10:20:00",
                                             "2016-11-14T00:00:00")]),
    ("the rest of the day", [("the rest of the day", "2016-11-07T10:20:00", "2016-11-08T00:00:00")]),
    ("the rest of the team", []),
    # a clock range before a day's part: on that day
    ("Where were you from 3-8pm yesterday afternoon", [("from 3-8pm yesterday afternoon", "2016-11-06T15:00:00",
                                                        "2016-11-06T20:00:00")]),
])
def test_days_of_the_month_week_numbers_clock_words_and_rests(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # an edge of a unit in a range is an instant: until the unit starts, from when it ends
    ("The range is from 2007 to the start of 2008.", [("from 2007 to the start of 2008", "2007-01-01T00:00:00",
                                                      "2008-01-01T00:00:00")]),
    ("between the end of 2007 and the end of 2008", [("between the end of 2007 and the end of 2008",
                                                      "2008-01-01T00:00:00", "2009-01-01T00:00:00")]),
    ("from the middle of 2007 to the end of 2008", [("from the middle of 2007 to the end of 2008",
                                                     "2007-07-02T00:00:00", "2009-01-01T00:00:00")]),
    ("from the end of March to the middle of September", [(
        "from the end of March to the middle of September", "2016-04-01T00:00:00", "2016-09-16T00:00:00")]),
    # early / late are parts, not edges; an edge alone stays a part of its unit
    ("from early 2007 to late 2008", [("from early 2007 to late 2008", "2007-01-01T00:00:00", "2009-01-01T00:00:00")]),
    ("the end of 2007", [("the end of 2007", "2007-11-01T00:00:00", "2008-01-01T00:00:00")]),
    # a year after a range of numeric dates; C's asctime
    ("I will leave from 5/1-5/7, 2020", [("from 5/1-5/7, 2020", "2020-05-01T00:00:00", "2020-05-08T00:00:00")]),
    ("Wed Oct 26 15:50:06 2016 was", [("Wed Oct 26 15:50:06 2016", "2016-10-26T15:50:06", "2016-10-26T15:50:07")]),
    ("Feb 30 10:00:00 2016", []),
])
def test_unit_edges_in_ranges_and_numeric_formats(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # before / after an edge of a unit: before it ends, after it begins
    ("I'll go back before end of this year", [("before end of this year", None, "2017-01-01T00:00:00")]),
    ("I'll go back after the beginning of March", [("after the beginning of March", "2016-03-01T00:00:00", None)]),
    ("before the end of 2007", [("before the end of 2007", None, "2008-01-01T00:00:00")]),
    # "since" the end of a unit keeps the unit's last part
    ("since the end of 2007", [("since the end of 2007", "2007-11-01T00:00:00", "2016-11-07T10:20:00")]),
    # a bound said approximately is still the bound
    ("I am feeling sick before around 2pm today", [("before around 2pm today", None, "2016-11-07T14:00:00")]),
    ("after around 3:30pm", [("after around 3:30pm", "2016-11-07T15:30:00", None)]),
    ("until about 1967", [("until about 1967", None, "1968-01-01T00:00:00")]),
    ("around 2pm", [("2pm", "2016-11-07T14:00:00", "2016-11-07T15:00:00")]),
])
def test_bounds_at_unit_edges_and_said_approximately(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # a range into the night ends on the next day when its end says morning; "2am" after 10pm
    # was read as 14:00 (the "11:30-1:30" rule took it for a clock without its half)
    ("from 10pm to 2am", [("from 10pm to 2am", "2017-03-22T22:00:00", "2017-03-23T02:00:00")]),
    ("下午5:00到凌晨3:00", [("下午5:00到凌晨3:00", "2017-03-22T17:00:00", "2017-03-23T03:00:00")]),
    ("晚上10点到早上6点", [("晚上10点到早上6点", "2017-03-22T22:00:00", "2017-03-23T06:00:00")]),
    ("凌晨1点到3点", [("凌晨1点到3点", "2017-03-22T01:00:00", "2017-03-22T03:00:00")]),
    ("11:30-1:30 today", [("11:30-1:30 today", "2017-03-22T11:30:00", "2017-03-22T13:30:00")]),
    # an amount right after 月 is an amount (3月21日 stays a date)
    ("一年又一个月21天", [("一年又一个月21天", None, None)]),
    ("3月21日", [("3月21日", "2017-03-21T00:00:00", "2017-03-22T00:00:00")]),
])
def test_ranges_into_the_night_and_amounts_after_a_month(text, want):
    assert _read(text, "2017-03-22T16:12:00") == want


@pytest.mark.parametrize("text, want", [
    # a weekday after a weekday is a list, not the first one's name
    ("a call on Wednesday, Thursday or Friday", [("on Wednesday", "2018-11-28T00:00:00", "2018-11-29T00:00:00"),
                                                 ("Thursday", "2018-11-29T00:00:00", "2018-11-30T00:00:00"),
                                                 ("Friday", "2018-11-30T00:00:00", "2018-12-01T00:00:00")]),
    ("Thursday, March 7, 2024", [("Thursday, March 7, 2024", "2024-03-07T00:00:00", "2024-03-08T00:00:00")]),
    # "this 5/12" keeps this year in a range with "next 5/19"
    ("from this 5/12 to next 5/19", [("from this 5/12 to next 5/19", "2018-05-12T00:00:00", "2019-05-20T00:00:00")]),
    # the day of the month before a time, with or without its ordinal suffix, after "on"
    ("It will happen on the 17 from 2pm to 4pm", [("the 17 from 2pm to 4pm", "2018-11-17T14:00:00",
                                                   "2018-11-17T16:00:00")]),
    ("on the 17th at 3pm", [("the 17th at 3pm", "2018-11-17T15:00:00", "2018-11-17T16:00:00")]),
    ("the 17 from 2 sources", []),
])
def test_weekday_lists_this_dates_and_days_before_times(text, want):
    assert _read(text, "2018-11-28T10:20:00") == want


@pytest.mark.parametrize("text, want", [
    ("I'm blocked for the day", [("the day", "2018-05-22T00:00:00", "2018-05-23T00:00:00")]),
    ("I'm away for the month", [("the month", "2018-05-01T00:00:00", "2018-06-01T00:00:00")]),
    ("I'll be offline for the hour", [("the hour", None, None)]),
    # not a unit that the words after it name
    ("for the day of the wedding", []),
    ("paid for the day's work", []),
    ("suspended for the year 2019", [("the year 2019", "2019-01-01T00:00:00", "2020-01-01T00:00:00")]),
])
def test_for_the_unit(text, want):
    assert _read(text, "2018-05-22T10:20:00") == want


_EDGE_TEXTS = ["5000 years and 3 days ago", "9000 years 2 days later", "Monday 9000 years from now",
               "from 9999 to the end of 9999", "before the end of 9999", "after the beginning of 0001",
               "from the middle of 0001 to the end of 9999", "the last 9999 years and 2 weeks",
               "from friday to monday", "from 10pm to 2am", "for the year", "the rest of the year",
               "between now and eight o'clock", "from monday to friday next week", "Dec 31 23:59:59 9999"]


@pytest.mark.parametrize("now", ["9999-12-31T23:00:00", "0001-01-01T01:00:00", "2020-02-29T23:30:00"])
def test_the_rules_at_the_ends_of_the_calendar(now):
    # the sums, weekday moves and edges of this file at the calendar's ends: no error, every
    # interval ordered (a crash here was "5000 years and 3 days ago": year -2980)
    for text in _EDGE_TEXTS:
        for e in parse_time(text, now=now, tz="Asia/Shanghai"):
            assert e.start is None or e.end is None or e.start < e.end


def test_long_text_windows_are_the_trigger_words_and_characters():
    """The windows of a long text (one regular expression for the trigger words) are those of
    testing every word (a run of two or more ASCII letters) in Python: its first three
    letters lower-cased, or the whole word."""
    import re

    from chrono_engine.timelang import parser as P

    def reference(text):
        hits = [m.start() for m in P._TRIGGER.finditer(text)]
        hits += [m.start() for m in re.finditer(r"[A-Za-z]{2,}", text)
                 if (w := m.group().lower())[:3] in P._TRIGGER_WORDS or w in P._TRIGGER_FULL]
        out = []
        for p in sorted(hits):
            a, b = p - P._WINDOW, p + 1 + P._WINDOW
            if out and a <= out[-1][1]:
                out[-1][1] = b
            else:
                out.append([max(a, 0), b])
        n = len(text)
        return [(a, min(n, P._WORD_TAIL.match(text, min(b, n)).end())) for a, b in out]

    pad = "x" * 120
    for text in ["Monday " + pad + " HR hrs hrx " + pad + " Christmas christmases " + pad,
                 "xmonday 3x" + pad + "_day Day2 2nd " + pad + "twenties TWENTIESx é" + pad,
                 pad + "\u212aday " + pad + "remainder remaining rest " + pad + " eod",
                 "年" + pad + "sept-10 " + pad + "tonite " + pad + "tmrw"]:
        assert P._windows(text) == reference(text), text


@pytest.mark.parametrize("text, want", [
    # one case per rule behind a shape or a prefilter (grammar.add_shapes, ``need``): the gate
    # lets its match through
    ("meet at 6.45 tomorrow", [("6.45 tomorrow", "2016-11-08T06:45:00", "2016-11-08T06:46:00")]),
    ("on 2019-aug-1", [("2019-aug-1", "2019-08-01T00:00:00", "2019-08-02T00:00:00")]),
    ("due on 29th.", [("29th", "2016-11-29T00:00:00", "2016-11-30T00:00:00")]),
    ("the 18th of this month", [("the 18th of this month", "2016-11-18T00:00:00", "2016-11-19T00:00:00")]),
    ("last March", [("last March", "2016-03-01T00:00:00", "2016-04-01T00:00:00")]),
    ("the last 3 weeks of 2020", [("the last 3 weeks of 2020", "2020-12-14T00:00:00", "2021-01-04T00:00:00")]),
    ("2024-W10-2", [("2024-W10-2", "2024-03-05T00:00:00", "2024-03-06T00:00:00")]),
    ("from 800 AD to 900 AD", [("from 800 AD to 900 AD", "0800-01-01T00:00:00", "0901-01-01T00:00:00")]),
    ("April ninth through seventeenth",
     [("April ninth through seventeenth", "2016-04-09T00:00:00", "2016-04-18T00:00:00")]),
    ("March 7-9, 2024", [("March 7-9, 2024", "2024-03-07T00:00:00", "2024-03-10T00:00:00")]),
    ("10/1/2018-10/7/2018", [("10/1/2018-10/7/2018", "2018-10-01T00:00:00", "2018-10-08T00:00:00")]),
    ("20240307", [("20240307", "2024-03-07T00:00:00", "2024-03-08T00:00:00")]),
    ("H1 2024", [("H1 2024", "2024-01-01T00:00:00", "2024-07-01T00:00:00")]),
    ("between 0730-0930", [("between 0730-0930", "2016-11-07T07:30:00", "2016-11-07T09:30:00")]),
    ("Wed Oct 26 15:50:06 2016", [("Wed Oct 26 15:50:06 2016", "2016-10-26T15:50:06", "2016-10-26T15:50:07")]),
])
def test_gated_rules_still_match(text, want):
    assert _read(text) == want


def test_rule_index_keeps_every_gate():
    # parser._Grammar indexes a rule by one of its gates (a group of whole words before word
    # prefixes before characters) and tests the others after selection: a text gets exactly
    # the rules all of whose gates (chars / shapes, words, exact) hold
    import re

    from chrono_engine.timelang import en, formats, zh
    from chrono_engine.timelang import parser as P
    from chrono_engine.timelang.grammar import add_shapes

    texts = ["on Mar 3rd at 5pm, the 18th", "March eighteenth 2024 through the twentieth of May",
             "halfpast 3 to 5 in the morning", "in the 1990s and her early twenties", "第3季度, 2024年3月5日下午3点",
             "between 0730-0930 H1 2024 Q3", "for 3 hours from 2pm the day after", "Wed Oct 26 15:50:06 2016",
             "2 weeks and 2 days ago", "the rest of the year, EOD Friday", "at around 7 tonight", "Christmas Eve 1999"]
    seen = set()
    for text in texts:
        chars = set(text)
        add_shapes(text, chars)
        tokens = set(re.findall("[a-z]+", text.lower()))
        for grammar, rules, words, toks in ((P._FORMATS, formats.RULES, None, None), (P._ZH, zh.RULES, None, None),
                                            (P._EN, en.RULES, {w[:3] for w in tokens}, tokens)):
            want = [i for i, r in enumerate(rules)
                    if (r.chars is None or not r.chars.isdisjoint(chars))
                    and (r.words is None or (words is not None and not r.words.isdisjoint(words)))
                    and (r.exact is None or (toks is not None and all(not g.isdisjoint(toks) for g in r.exact)))]
            got = []
            for i in grammar.select(chars, words, toks):
                _, _, gate, word_gate, exact, _, _ = grammar.entries[i]
                if ((gate is None or not gate.isdisjoint(chars))
                        and (word_gate is None or (words is not None and not word_gate.isdisjoint(words)))
                        and (exact is None or (toks is not None and not P._lacks(exact, toks)))):
                    got.append(i)
            assert got == want, text
            seen.update(got if grammar is P._EN else ())
    assert len(seen) > 20  # the texts do select many English rules


@pytest.mark.parametrize("text, want", [
    # a clock hyphened to a day is that day's: "May 22-11:30" was a range from May 22 of the
    # year before to 11:30 today; "March 3 - 11:30" read 11 as the range's last day
    ("May 22-11:30", [("May 22-11:30", "2018-05-22T11:30:00", "2018-05-22T11:31:00")]),
    ("on May 22-11:30pm", [("May 22-11:30pm", "2018-05-22T23:30:00", "2018-05-22T23:31:00")]),
    ("I'll leave on May/22(Tue)-11:30 AM PT.", [("May/22(Tue)-11:30 AM", "2018-05-22T11:30:00", "2018-05-22T11:31:00")]),
    ("March 3 - 11:30", [("March 3 - 11:30", "2018-03-03T00:00:00", "2018-05-16T11:30:00")]),
    # left alone: day ranges, a day to a clock of the same day, a whole hour after a dash
    ("March 3-11", [("March 3-11", "2018-03-03T00:00:00", "2018-03-12T00:00:00")]),
    ("March 3 - 11, 2024", [("March 3 - 11, 2024", "2024-03-03T00:00:00", "2024-03-12T00:00:00")]),
    ("today - 5pm", [("today - 5pm", "2018-05-16T00:00:00", "2018-05-16T17:00:00")]),
])
def test_a_clock_hyphened_to_a_day(text, want):
    assert _read(text, "2018-05-16T09:00:00") == want


@pytest.mark.parametrize("text, want", [
    # minutes in words past twenty-nine: "thirty-six minutes past eight" was read from "six"
    ("tomorrow at thirty-six minutes past eight",
     [("tomorrow at thirty-six minutes past eight", "2016-11-08T08:36:00", "2016-11-08T08:37:00")]),
    ("fifty-five past ten pm", [("fifty-five past ten pm", "2016-11-07T22:55:00", "2016-11-07T22:56:00")]),
    # a dotted clock first in a range that ends with am / pm ("9.30" was dropped)
    ("between 9.30-4.30pm", [("between 9.30-4.30pm", "2016-11-07T09:30:00", "2016-11-07T16:30:00")]),
    ("at 6.45", [("6.45", "2016-11-07T06:45:00", "2016-11-07T06:46:00")]),
    # left alone: decimals
    ("grew 9.30-4.30 percent", []),
    ("the ratio was 2.5-3.5 in 2010", [("2010", "2010-01-01T00:00:00", "2011-01-01T00:00:00")]),
])
def test_minutes_in_words_and_dotted_clock_ranges(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # a date written year, month, day with single spaces
    ("On 2016 10 16, the conference started.", [("2016 10 16", "2016-10-16T00:00:00", "2016-10-17T00:00:00")]),
    # left alone: a number on either side, a month past 12
    ("In 2016 10 16-year-olds", [("2016", "2016-01-01T00:00:00", "2017-01-01T00:00:00")]),
    ("12 2016 10 16", [("2016", "2016-01-01T00:00:00", "2017-01-01T00:00:00")]),
    ("2016 10 16 20", [("2016", "2016-01-01T00:00:00", "2017-01-01T00:00:00")]),
    ("2016 13 16", [("2016", "2016-01-01T00:00:00", "2017-01-01T00:00:00")]),
    # a year before its month
    ("I went back to China in 2017 april.", [("2017 april.", "2017-04-01T00:00:00", "2017-05-01T00:00:00")]),
    ("In 2017 March, sales fell", [("2017 March", "2017-03-01T00:00:00", "2017-04-01T00:00:00")]),
    # left alone: "may" the verb, a name, a day after the month (not read as one date here)
    ("in 2017 may see growth", [("2017", "2017-01-01T00:00:00", "2018-01-01T00:00:00")]),
    ("2017 Jan van Eyck", [("2017", "2017-01-01T00:00:00", "2018-01-01T00:00:00")]),
])
def test_spaced_dates_and_a_year_before_its_month(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # "early" / "late" before a part of the day next to a day and a clock
    ("The event starts on Sunday early morning at 8:00",
     [("on Sunday early morning at 8:00", "2019-08-11T08:00:00", "2019-08-11T08:01:00")]),
    ("Sunday late evening at 10:00", [("Sunday late evening at 10:00", "2019-08-11T22:00:00", "2019-08-11T22:01:00")]),
    # "early" / "late" take the first / second half of the part's hours; alone, today's
    ("tomorrow early morning", [("tomorrow early morning", "2019-08-08T06:00:00", "2019-08-08T09:00:00")]),
    ("early morning", [("early morning", "2019-08-07T06:00:00", "2019-08-07T09:00:00")]),
    ("What happened later in the afternoon.", [("later in the afternoon", "2019-08-07T15:00:00",
                                                "2019-08-07T18:00:00")]),
    ("let's meet late this morning.", [("late this morning", "2019-08-07T09:00:00", "2019-08-07T12:00:00")]),
    ("late last night", [("late last night", "2019-08-06T21:00:00", "2019-08-07T00:00:00")]),
    # a clock said with a modified part is in the part's half of the day
    ("early evening at 7", [("early evening at 7", "2019-08-07T19:00:00", "2019-08-07T20:00:00")]),
])
def test_early_and_late_parts_of_a_day(text, want):
    assert _read(text, "2019-08-07T09:00:00") == want


@pytest.mark.parametrize("text, want", [
    # a weekday right after a week is that day of the week
    ("1st week of Oct. on Friday.", [("1st week of Oct. on Friday.", "2019-10-04T00:00:00", "2019-10-05T00:00:00")]),
    ("next week, Tuesday", [("next week, Tuesday", "2019-08-13T00:00:00", "2019-08-14T00:00:00")]),
    ("last week Monday", [("last week Monday", "2019-07-29T00:00:00", "2019-07-30T00:00:00")]),
    # left alone: a duration of a week before a weekday
    ("for a week on Monday", [("for a week", None, None), ("on Monday", "2019-08-05T00:00:00", "2019-08-06T00:00:00")]),
])
def test_a_weekday_of_a_week(text, want):
    assert _read(text, "2019-08-07T09:00:00") == want


@pytest.mark.parametrize("text, want", [
    # a range of hours in words right before a day
    ("I'll be out five to seven today", [("five to seven today", "2016-11-07T05:00:00", "2016-11-07T07:00:00")]),
    ("from nine till eleven on Monday", [("from nine till eleven on Monday", "2016-11-07T09:00:00",
                                          "2016-11-07T11:00:00")]),
    ("between two and four tomorrow", [("between two and four tomorrow", "2016-11-08T02:00:00",
                                        "2016-11-08T04:00:00")]),
    # left alone: a range of anything else, the same hour twice, "and" without "between", no day
    ("two to three people today", [("today", "2016-11-07T00:00:00", "2016-11-08T00:00:00")]),
    ("one to one on Monday", [("on Monday", "2016-11-07T00:00:00", "2016-11-08T00:00:00")]),
    ("two and four tomorrow", [("tomorrow", "2016-11-08T00:00:00", "2016-11-09T00:00:00")]),
    ("five to seven", []),
])
def test_hours_in_words_before_a_day(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # an amount written with a fraction sign, as a duration
    ("Please schedule a ½ hour Teams call.", [("½ hour", 1800.0)]),
    ("it took 1½ days", [("1½ days", 129600.0)]),
    ("a ¾ hrs wait", [("¾ hrs", 2700.0)]),
    # left alone: a sign alone, inside a word or a number
    ("½", []), ("x½ hour", []), ("1.½ hour", []),
])
def test_amounts_with_a_fraction_sign(text, want):
    assert [(e.text, e.duration.total_seconds()) for e in parse_time(text, now=NOW)] == want


@pytest.mark.parametrize("text, want", [
    # a part of the day alone is today's, in the project's hours (morning 6-12, lunch 11-13)
    ("let's meet in the morning", [("in the morning", "2016-11-07T06:00:00", "2016-11-07T12:00:00")]),
    ("I'll be out in the mornings", [("in the mornings", "2016-11-07T06:00:00", "2016-11-07T12:00:00")]),
    ("Students must attend all four afternoon classes",
     [("afternoon", "2016-11-07T12:00:00", "2016-11-07T18:00:00")]),
    ("any time at lunchtime", [("lunchtime", "2016-11-07T11:00:00", "2016-11-07T13:00:00")]),
    ("let's meet before lunch", [("before lunch", None, "2016-11-07T11:00:00")]),
    # a decimal is not an hour: "37.1 in the morning" is not 1 am
    ("My temperature was 37.1 in the morning", [("in the morning", "2016-11-07T06:00:00", "2016-11-07T12:00:00")]),
    # left alone: greetings and the meal
    ("Good Morning Paul", []), ("Good night Cortana", []), ("We will have lunch together with Jim", []),
])
def test_a_part_of_the_day_alone(text, want):
    assert _read(text) == want


def test_a_part_of_the_day_alone_is_no_constraint_and_no_fact():
    from chrono_engine.timelang import ground, parse_temporal_intent
    i = parse_temporal_intent("what did he eat in the morning", now=NOW)
    assert (i.mode, i.window, i.cleaned_query) == ("latest", None, "what did he eat in the morning")
    i = parse_temporal_intent("what did he eat in the morning in 2019", now=NOW)
    assert i.mode == "window" and i.window[0].year == 2019 and i.window[1].year == 2020
    assert ground("He trained in the morning and rested at night.", "2016-11-07") == []
    assert [(f.text, f.start.hour) for f in ground("He trained in the morning of March 3, 2015.")] == [
        ("in the morning of March 3, 2015", 6)]


@pytest.mark.parametrize("text, want", [
    # a month then a day past 12, alone: a date; Feb 29 the latest leap year's
    ("11/20", [("11/20", "2016-11-20T00:00:00", "2016-11-21T00:00:00")]),
    ("Do you know the date? 11/20, 12 of Nov?", [("11/20", "2016-11-20T00:00:00", "2016-11-21T00:00:00"),
                                                  ("12 of Nov", "2016-11-12T00:00:00", "2016-11-13T00:00:00")]),
    ("2/29", [("2/29", "2016-02-29T00:00:00", "2016-03-01T00:00:00")]),
    # left alone: fractions, 24/7, a score, money, an impossible day
    ("3/7", []), ("open 24/7", []), ("scored 15/20", []), ("$3/20", []), ("2/30", []),
    # a number dashed to a year is not a date, nor the year alone
    ("Is this a valid date? 32 - 2015", []), ("2015 - 32", []),
    # years dashed to years, to a date, or to an ordinal keep their readings
    ("1862 - 1863", [("1862 - 1863", "1862-01-01T00:00:00", "1864-01-01T00:00:00")]),
    ("( 1658 – 2 December 1730 )", [("1658 – 2 December 1730", "1658-01-01T00:00:00", "1730-12-03T00:00:00")]),
    ("Pula 1997 - 3rd place", [("1997", "1997-01-01T00:00:00", "1998-01-01T00:00:00")]),
    ("from 2015 - 2016", [("2015 - 2016", "2015-01-01T00:00:00", "2017-01-01T00:00:00")]),
])
def test_month_slash_day_alone_and_dashed_numbers(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # the clause's tense settles "within" and the year of a date written without one
    ("I'll be back within 5 minutes", [("within 5 minutes", "2016-11-07T10:20:00", "2016-11-07T10:25:00")]),
    ("within 5 minutes", [("within 5 minutes", "2016-11-07T10:15:00", "2016-11-07T10:20:00")]),
    ("We will be done. Within 3 days", [("Within 3 days", "2016-11-04T10:20:00", "2016-11-07T10:20:00")]),
    ("It will happen 2 weeks from January 15.",
     [("2 weeks from January 15", "2017-01-29T00:00:00", "2017-01-30T00:00:00")]),
    ("It happened 2 weeks from January 15.",
     [("2 weeks from January 15", "2016-01-29T00:00:00", "2016-01-30T00:00:00")]),
    ("We will meet 5 days before new year.", [("5 days before new year", "2016-12-27T00:00:00", "2016-12-28T00:00:00")]),
    ("I will see you on December 3", [("December 3", "2016-12-03T00:00:00", "2016-12-04T00:00:00")]),
])
def test_the_clauses_tense(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # "the year" / "the week" at the end of a clause: the current unit
    ("Hey, we got Cloud partner of the year.", [("the year", "2016-01-01T00:00:00", "2017-01-01T00:00:00")]),
    ("Show sales in the week", [("the week", "2016-11-07T00:00:00", "2016-11-14T00:00:00")]),
    # now words and "otd"
    ("We're not open at this time.", [("at this time", "2016-11-07T10:20:00", "2016-11-07T10:20:01")]),
    ("at the minute I'm ok", [("at the minute", "2016-11-07T10:20:00", "2016-11-07T10:20:01")]),
    ("Pierre de Fermat died otd.", [("otd", "2016-11-07T00:00:00", "2016-11-08T00:00:00")]),
    # left alone: "the year" followed by more words, or by its number
    ("the day he died", []), ("The story happened the year before independence.", []),
    ("at this time last year", [("last year", "2015-01-01T00:00:00", "2016-01-01T00:00:00")]),
    ("in the year 1990", [("the year 1990", "1990-01-01T00:00:00", "1991-01-01T00:00:00")]),
])
def test_the_current_unit_and_now_words(text, want):
    assert _read(text) == want


def test_the_current_unit_is_no_constraint_and_no_fact():
    from chrono_engine.timelang import ground, parse_temporal_intent
    i = parse_temporal_intent("who was the player of the year.", now=NOW)
    assert (i.mode, i.window) == ("latest", None)
    assert ground("He was named player of the year.", "2016-11-07") == []


@pytest.mark.parametrize("text, want", [
    # the n-th / last weekday of a month, with the time of day said with it
    ("third tuesday of september 2014", [("third tuesday of september 2014", "2014-09-16T00:00:00",
                                          "2014-09-17T00:00:00")]),
    ("the first Monday of September", [("the first Monday of September", "2016-09-05T00:00:00",
                                        "2016-09-06T00:00:00")]),
    ("last Monday of March", [("last Monday of March", "2016-03-28T00:00:00", "2016-03-29T00:00:00")]),
    ("second Sunday in May", [("second Sunday in May", "2016-05-08T00:00:00", "2016-05-09T00:00:00")]),
    ("the last Friday of next month", [("last Friday of next month", "2016-12-30T00:00:00", "2016-12-31T00:00:00")]),
    ("the first Monday evening of next month", [("the first Monday evening of next month",
                                                 "2016-12-05T18:00:00", "2016-12-06T00:00:00")]),
    ("the first Monday 1pm to 3pm of next month", [("the first Monday 1pm to 3pm of next month",
                                                    "2016-12-05T13:00:00", "2016-12-05T15:00:00")]),
    # a fifth one the month does not have: nothing
    ("the fifth Monday of February 2018", []),
    ("the fifth Monday of February", [("the fifth Monday of February", "2016-02-29T00:00:00", "2016-03-01T00:00:00")]),
    # a clock after "for" is the day's ("a table on Monday for 8pm"); an amount stays one
    ("book a table on Monday for 8pm", [("on Monday for 8pm", "2016-11-07T20:00:00", "2016-11-07T21:00:00")]),
    ("I'll go back October 14 for 8:00:31am", [("October 14 for 8:00:31am", "2017-10-14T08:00:31",
                                                "2017-10-14T08:00:32")]),
])
def test_nth_weekday_of_a_month_and_clocks_after_for(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, want", [
    # halves of a day: early (0-12), mid (11-13), late (12-24); with a clock the day takes it
    ("I'll leave mid today.", [("mid today", "2016-11-07T11:00:00", "2016-11-07T13:00:00")]),
    ("later in today", [("later in today", "2016-11-07T12:00:00", "2016-11-08T00:00:00")]),
    ("early tomorrow", [("early tomorrow", "2016-11-08T00:00:00", "2016-11-08T12:00:00")]),
    ("later today at 5pm", [("today at 5pm", "2016-11-07T17:00:00", "2016-11-07T18:00:00")]),
    # daytime: the morning and the afternoon
    ("let's meet in the daytime", [("in the daytime", "2016-11-07T06:00:00", "2016-11-07T18:00:00")]),
    # hours with minutes after from / between are today's; after a part, on the part's day
    ("How about between 9 to 10:30", [("between 9 to 10:30", "2016-11-07T09:00:00", "2016-11-07T10:30:00")]),
    ("Are you available next Monday morning 6-8", [("next Monday morning 6-8", "2016-11-14T06:00:00",
                                                    "2016-11-14T08:00:00")]),
    ("between 3 and 5", []), ("between 9-6", []), ("scores 6-8", []),
    # a range whose start says am / pm may end on a bare hour, after the start
    ("Where were you from 8am-3 yesterday afternoon", [("from 8am-3 yesterday afternoon", "2016-11-06T08:00:00",
                                                        "2016-11-06T15:00:00")]),
    ("10am to 2 tomorrow", [("10am to 2 tomorrow", "2016-11-08T10:00:00", "2016-11-08T14:00:00")]),
    ("at 9am-5%", [("9am", "2016-11-07T09:00:00", "2016-11-07T10:00:00")]),
    # a whole-hour clock ranged to another is a time whatever word precedes it
    ("Are you available 10am to 12pm Monday morning", [("10am to 12pm Monday morning", "2016-11-07T10:00:00",
                                                        "2016-11-07T12:00:00")]),
    ("Which label signed 2AM in 2010", [("2010", "2010-01-01T00:00:00", "2011-01-01T00:00:00")]),
    # 早 / 晚 right after a date's 日 and before no other character: its morning / evening
    ("7月25日早", [("7月25日早", "2016-07-25T06:00:00", "2016-07-25T12:00:00")]),
    ("7月25日晚", [("7月25日晚", "2016-07-25T18:00:00", "2016-07-26T00:00:00")]),
    ("7月25日晚会", [("7月25日", "2016-07-25T00:00:00", "2016-07-26T00:00:00")]),
    # a slash date with a clock after it, either order when the first number is past 12
    ("book 6/4 between 9.30-4.30pm", [("6/4 between 9.30-4.30pm", "2016-06-04T09:30:00", "2016-06-04T16:30:00")]),
    ("I'll be back 23/12 before 5pm", [("23/12 before 5pm", None, "2016-12-23T17:00:00")]),
    ("open 24/7", []),
    # a weekday with its time of day, then a week
    ("Wednesday evening next week", [("Wednesday evening next week", "2016-11-16T18:00:00", "2016-11-17T00:00:00")]),
    # a time dashed to the week holding it is no range
    ("Race - 3pm - this week", [("3pm", "2016-11-07T15:00:00", "2016-11-07T16:00:00"),
                                ("this week", "2016-11-07T00:00:00", "2016-11-14T00:00:00")]),
])
def test_halves_of_a_day_hours_and_slash_dates_with_clocks(text, want):
    assert _read(text) == want


@pytest.mark.parametrize("text, days", [
    # calendar amounts measured one after the other from now, as "1.25 years" is
    ("one year and a quarter", 365 + 92), ("one year and 3 months", 365 + 92), ("1.25 years", 365 + 92),
    ("a quarter", 92), ("一个月又三天", 30 + 3),
])
def test_amounts_of_calendar_units_add_up_on_the_calendar(text, days):
    assert [e.duration.days for e in parse_time(text, now=NOW)] == [days]


def test_every_spec_input_reads_at_the_calendars_ends():
    """The composition passes move days and years (a future clause, "next 6th of April",
    a weekday of a week or month, hours on today): at the first and last days datetime
    holds, every Recognizers input and every table row still reads without an error."""
    import json
    from pathlib import Path

    from chrono_engine.timelang import ground
    data = Path(__file__).parent / "data"
    texts = [json.loads(line)["input"] for name in ("en_datetime.jsonl", "zh_datetime.jsonl")
             for line in (data / "recognizers" / name).read_text(encoding="utf-8").splitlines() if line]
    texts += [line.split("\t")[0] for line in (data / "time_expressions.tsv").read_text(encoding="utf-8").splitlines()
              if line and not line.startswith("#")]
    for now in ("9999-12-31T23:59:59", "0001-01-01T00:00:00"):
        for t in texts:
            for e in parse_time(t, now=now):
                assert e.start is None or e.end is None or e.start < e.end
            ground(t, now)
