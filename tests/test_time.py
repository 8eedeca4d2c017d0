"""The one time module (chrono_engine/_time.py): every kind of time input gives the same
microseconds whether it comes as a scalar or in a column, through every layer; unit
conversions never wrap; each layer names a bad time with its own error class."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine import _time
from chrono_engine.errors import (EmbeddingError, FitError, LifecycleError, QueryError, SchemaError,
                                  TimeParseError)

UTC = dt.timezone.utc
SHANGHAI = dt.timezone(dt.timedelta(hours=8))


def _forms(us: int) -> list:
    """The same instant (a whole number of milliseconds) in every accepted form."""
    d = dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=us)
    forms = [us, np.int64(us), d, d.astimezone(SHANGHAI), d.replace(tzinfo=None),
             d.isoformat(), d.replace(tzinfo=None).isoformat(), d.astimezone(SHANGHAI).isoformat(),
             d.isoformat().replace("+00:00", "Z"), np.datetime64(us, "us"), np.datetime64(us // 1000, "ms")]
    if abs(us) < 2**53:  # a float holds these exactly
        forms.append(float(us))
    if abs(us) < 9 * 10**15:  # nanoseconds (and pandas) reach years 1678..2261 only
        pd = pytest.importorskip("pandas")
        forms += [np.datetime64(us * 1000, "ns"), pd.Timestamp(d), pd.Timestamp(d.replace(tzinfo=None))]
    return forms


@pytest.mark.parametrize("seed", range(5))
def test_every_form_gives_the_same_microseconds(seed):
    rng = np.random.default_rng(seed)
    wide = rng.integers(_time.MIN_TIME_US // 1000, _time.MAX_TIME_US // 1000, 10)
    recent = rng.integers(-2 * 10**12, 4 * 10**12, 10)  # ms around 1906..2096
    for us in np.r_[wide, recent] * 1000:
        us = int(us)
        for form in _forms(us):
            assert _time.scalar_us(form, "t") == us, repr(form)
        for col in (_forms(us), pa.array([us // 1000], pa.timestamp("ms", tz="UTC")),
                    pa.array([us], pa.timestamp("us")), np.array([us], "datetime64[us]")):
            got, nulls = _time.column_us("t", col)
            assert nulls is None and (got == us).all(), repr(col)[:80]
    # a date is midnight UTC
    assert _time.scalar_us(dt.date(2024, 3, 1), "t") == _time.scalar_us("2024-03-01T00:00:00Z", "t")


def test_conversions_never_wrap():
    """A value whose microseconds do not fit int64 is an error, never a wrapped time."""
    with pytest.raises(_time.TimeInputError, match="row 1: time \\(beyond int64\\)"):
        _time.column_us("t", pa.array([0, 2**62], pa.timestamp("s")), stored=False)
    with pytest.raises(_time.TimeInputError, match="does not fit int64"):
        _time.scalar_us(2**63, "as_of")
    # ce.score multiplied seconds by 10^6 without a check
    cands = pa.table({"similarity": pa.array([0.5, 0.5], pa.float32()),
                      "observed_at": pa.array([0, 2**62], pa.timestamp("s"))})
    with pytest.raises(QueryError, match="observed_at, row 1"):
        ce.score(cands, as_of=0)
    eng = ce.Engine(2)
    eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"]})
    with pytest.raises(QueryError, match="as_of"):
        eng.search([1, 0], mode="as_of", as_of=2**63)


def test_stored_and_query_ranges():
    # query instants: any int64, so sentinels work
    assert _time.scalar_us(_time.OPEN_END, "known_at") == _time.OPEN_END
    # stored times: years 1..9999, OPEN_END only where an end may be open
    with pytest.raises(_time.TimeInputError, match="outside years 1..9999"):
        _time.scalar_us(_time.MAX_TIME_US + 1, "effective_at", stored=True)
    us, _ = _time.column_us("valid_to", [_time.OPEN_END, 0], open_end=True)
    assert us.tolist() == [_time.OPEN_END, 0]
    with pytest.raises(_time.TimeInputError, match="valid_from, row 0"):
        _time.column_us("valid_from", [_time.OPEN_END])


def test_from_us_and_iso():
    assert _time.iso(_time.OPEN_END) == "open"
    assert _time.iso(0) == "1970-01-01T00:00:00Z"
    assert _time.from_us(_time.OPEN_END).year == 9999 and _time.from_us(-2**63).year == 1


BAD = "yesterday-ish"


def test_each_layer_names_a_bad_time_with_its_own_class():
    eng = ce.Engine(2)
    eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "stem_id": ["s"], "version": ["v1"]})
    cases = [
        (SchemaError, "column 'valid_from', row 0", lambda: eng.ingest({"vector": [[1, 0]], "valid_from": [BAD]})),
        (QueryError, "as_of", lambda: eng.search([1, 0], mode="as_of", as_of=BAD)),
        (QueryError, "known_at, query 1", lambda: eng.search_batch([[1, 0], [0, 1]], known_at=["2024-01-01", BAD])),
        (QueryError, "at", lambda: eng.validity(BAD)),
        (QueryError, "observed_at", lambda: ce.score(pa.table({"similarity": [0.5], "observed_at": [BAD]}), as_of=0)),
        (LifecycleError, "effective_at", lambda: eng.supersede("s", [{"vector": [1, 0]}], BAD, version="v2")),
        (LifecycleError, "at", lambda: eng.retract([0], at=BAD)),
        (FitError, "times, row 2", lambda: ce.fit_ou(["2024-01-01", "2024-01-02", BAD], [1.0, 2.0, 0.5])),
    ]
    for cls, where, call in cases:
        with pytest.raises(cls, match=where) as info:
            call()
        assert BAD in str(info.value) and isinstance(info.value, ValueError), where
    assert len(eng) == 1 and eng.history("s").num_rows == 1  # nothing changed
    from chrono_engine.embed._times import as_utc_us  # the embedders' batch reader
    with pytest.raises(EmbeddingError, match="times, row 1"):
        as_utc_us(["2024-01-01", BAD])
    # uncaught, the module's own error is a TimeParseError (a ChronoError and a ValueError)
    with pytest.raises(TimeParseError):
        _time.scalar_us(BAD, "t")


def test_dates_mixed_with_datetimes_keep_their_time_of_day():
    """Arrow types a sequence that starts with a date as date32 and truncates a datetime in it
    to its day; every container of every layer must keep the 06:00."""
    pd = pytest.importorskip("pandas")
    mixed = [dt.date(2024, 1, 1), dt.datetime(2024, 1, 2, 6)]
    want = [_time.scalar_us("2024-01-01", "t"), _time.scalar_us("2024-01-02T06:00", "t")]
    for col in (mixed, tuple(mixed), np.array(mixed, dtype=object), pd.Series(mixed, dtype=object)):
        assert _time.column_us("valid_from", col)[0].tolist() == want, type(col)
    eng = ce.Engine(2)
    ids = eng.ingest({"vector": [[1, 0], [0, 1]], "valid_from": mixed})
    ids2 = eng.ingest([{"vector": [1, 0], "valid_from": mixed[0]}, {"vector": [0, 1], "valid_from": mixed[1]}])
    assert eng.columns(ids)["valid_from"].tolist() == want == eng.columns(ids2)["valid_from"].tolist()
