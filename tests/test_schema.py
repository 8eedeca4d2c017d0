"""Tests for chrono_engine.schema: ingest validation and columnar normalisation."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from chrono_engine.errors import SchemaError
from chrono_engine.schema import (OPEN_END, RULES, STORAGE_SCHEMA, IngestBatch, format_version,
                                  normalize_rows, parse_version)

NOW = 1_700_000_000_000_000  # 2023-11-14T22:13:20Z
KNOWN = {"general", "news", "finance"}
US_PER_DAY = 86_400_000_000
T2024 = int(np.datetime64("2024-01-01T00:00:00", "us").astype(np.int64))


def run(rows, *, dim=4, metric="l2", known=KNOWN.__contains__, now=NOW) -> IngestBatch:
    return normalize_rows(rows, dim=dim, metric=metric, known_fact_type=known, now_us=now)


def base(n=6, dim=4, seed=0) -> dict:
    """A valid dict-of-arrays batch using every column."""
    rng = np.random.default_rng(seed)
    vf = np.datetime64("2024-01-01", "us") + np.arange(n) * np.timedelta64(1, "D")
    vt = vf + np.timedelta64(30, "D")
    vt[1] = np.datetime64("NaT", "us")
    return {
        "id": np.arange(10, 10 + n, dtype=np.uint64),
        "vector": rng.standard_normal((n, dim)).astype(np.float32),
        "valid_from": vf,
        "valid_to": vt,
        "observed_at": vf + np.timedelta64(1, "h"),
        "ingested_at": vf + np.timedelta64(2, "h"),
        "retracted_at": np.full(n, np.datetime64("NaT", "us"), dtype="datetime64[us]"),
        "reliability": np.linspace(0.5, 1.0, n).astype(np.float32),
        "fact_type": np.array(["news", "finance"] * (n // 2) + ["general"] * (n % 2), dtype=object),
        "stem_id": np.array([f"s{i // 2}" for i in range(n)], dtype=object),
        "version": np.array([f"v{i % 2 + 1}.0" for i in range(n)], dtype=object),
        "supersedes": np.array([None if i % 2 == 0 else "v1.0" for i in range(n)], dtype=object),
        "deprecated": np.array([i % 3 == 0 for i in range(n)]),
        "content": np.array([f"text {i}" for i in range(n)], dtype=object),
        "title": np.array([f"doc {i // 2}" for i in range(n)], dtype=object),
        "source": np.array(["wiki"] * n, dtype=object),
        "modality": np.array(["text"] * n, dtype=object),
    }


def minimal(n=5, dim=4) -> dict:
    rng = np.random.default_rng(1)
    return {"vector": rng.standard_normal((n, dim)).astype(np.float32),
            "valid_from": np.datetime64("2024-01-01", "us") + np.arange(n) * np.timedelta64(1, "D")}


def check_error(rows, *, column, row, rule, **kw) -> SchemaError:
    with pytest.raises(SchemaError) as info:
        run(rows, **kw)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.column, err.row, err.rule) == (column, row, rule), str(err)
    assert rule in RULES
    msg = str(err)
    assert f"({rule})" in msg
    if column is not None:
        assert f"column '{column}'" in msg
    if row is not None:
        assert f"row {row}" in msg
    return err


# --------------------------------------------------------------------------- one test per rule

def test_rule_empty():
    check_error({}, column=None, row=None, rule="empty")
    check_error([], column=None, row=None, rule="empty")
    empty = minimal()
    empty = {k: v[:0] for k, v in empty.items()}
    check_error(empty, column=None, row=None, rule="empty")
    check_error(pa.table({"vector": pa.array([], pa.list_(pa.float32())),
                          "valid_from": pa.array([], pa.timestamp("us"))}),
                column=None, row=None, rule="empty")


def test_rule_unsupported_input():
    check_error(42, column=None, row=None, rule="unsupported input")
    rows = [{"vector": [1.0, 0, 0, 0], "valid_from": "2024-01-01"}, ("not", "a", "dict")]
    check_error(rows, column=None, row=1, rule="unsupported input")


def test_rule_unknown_column_names_it_and_suggests():
    rows = minimal()
    rows["valid_form"] = rows["valid_from"]
    err = check_error(rows, column="valid_form", row=None, rule="unknown column")
    assert "did you mean 'valid_from'" in str(err)


def test_pandas_index_column_is_ignored():
    table = as_table(minimal()).append_column("__index_level_0__", pa.array(np.arange(5)))
    assert run(table).n == 5


def test_rule_duplicate_column():
    rows = minimal()
    table = pa.Table.from_arrays([pa.array(list(rows["vector"])), pa.array(rows["valid_from"]),
                                  pa.array(rows["valid_from"])],
                                 names=["vector", "valid_from", "valid_from"])
    check_error(table, column="valid_from", row=None, rule="duplicate column")


def test_rule_missing_column():
    rows = minimal()
    del rows["valid_from"]
    check_error(rows, column="valid_from", row=None, rule="missing column")
    rows = minimal()
    del rows["vector"]
    check_error(rows, column="vector", row=None, rule="missing column")


def test_rule_column_length():
    rows = minimal()
    rows["reliability"] = [0.5, 0.6]
    check_error(rows, column="reliability", row=None, rule="column length")


def test_rule_vector_dimension():
    rows = minimal(dim=3)
    err = check_error(rows, column="vector", row=0, rule="vector dimension", dim=4)
    assert "expected dim=4" in str(err) and "3 components" in str(err)
    # ragged list of lists: the first short row is named
    rows = minimal()
    vecs = [list(map(float, v)) for v in rows["vector"]]
    vecs[2] = vecs[2][:3]
    vecs[4] = vecs[4][:2]
    rows["vector"] = vecs
    check_error(rows, column="vector", row=2, rule="vector dimension")
    # Arrow list array
    rows["vector"] = pa.array(vecs, pa.list_(pa.float32()))
    check_error(rows, column="vector", row=2, rule="vector dimension")
    # fixed-size list of the wrong width
    rows = minimal(dim=3)
    rows["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(rows["vector"].ravel()), 3)
    check_error(rows, column="vector", row=0, rule="vector dimension", dim=4)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e39])
def test_rule_non_finite_vector(bad):
    rows = minimal()
    vec = rows["vector"].astype(np.float64)
    vec[3, 1] = bad  # 1e39 is finite in float64 but overflows float32
    vec[4, 0] = np.nan
    rows["vector"] = vec
    check_error(rows, column="vector", row=3, rule="non-finite vector")


def test_rule_non_finite_vector_arrow_null_component():
    rows = minimal()
    flat = pa.array([float(x) for x in rows["vector"].ravel()[:9]] + [None]
                    + [float(x) for x in rows["vector"].ravel()[10:]], pa.float32())
    rows["vector"] = pa.FixedSizeListArray.from_arrays(flat, 4)
    check_error(rows, column="vector", row=2, rule="non-finite vector")


def test_rule_zero_vector_under_cosine_only():
    rows = minimal()
    rows["vector"][2] = 0.0
    check_error(rows, column="vector", row=2, rule="zero vector", metric="cosine")
    assert run(rows, metric="l2").n == 5
    assert run(rows, metric="ip").n == 5


def test_rule_valid_to_not_after_valid_from():
    rows = minimal()
    vt = rows["valid_from"] + np.timedelta64(1, "D")
    vt[3] = rows["valid_from"][3]            # equal: an empty interval
    vt[4] = rows["valid_from"][4] - np.timedelta64(1, "us")
    rows["valid_to"] = vt
    err = check_error(rows, column="valid_to", row=3, rule="valid_to <= valid_from")
    assert str(err) == ("column 'valid_to', row 3: valid_to must be after valid_from "
                        "(valid_to <= valid_from)")


def test_rule_retracted_not_after_ingested():
    rows = minimal()
    rows["ingested_at"] = rows["valid_from"]
    rr = np.full(5, np.datetime64("NaT", "us"), dtype="datetime64[us]")
    rr[1] = rows["valid_from"][1] - np.timedelta64(1, "D")
    rows["retracted_at"] = rr
    check_error(rows, column="retracted_at", row=1, rule="retracted_at <= ingested_at")
    # default ingested_at is now_us
    rows = minimal()
    rows["retracted_at"] = [None, None, NOW, None, None]
    check_error(rows, column="retracted_at", row=2, rule="retracted_at <= ingested_at")


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.0000001, 1.5, np.nan, 1e-50])
def test_rule_reliability_out_of_range(bad):
    rows = minimal()
    rel = np.full(5, 0.9)
    rel[2] = bad
    rows["reliability"] = rel
    check_error(rows, column="reliability", row=2, rule="reliability out of range")


def test_rule_unknown_fact_type_policy():
    rows = minimal()
    rows["fact_type"] = ["news", None, "news", "gossip", "weather"]
    err = check_error(rows, column="fact_type", row=3, rule="unknown fact type policy")
    assert "'gossip'" in str(err)
    # the callable sees each distinct fact type once, defaults included
    seen = []
    run(rows, known=lambda t: seen.append(t) or True)
    assert sorted(seen) == ["general", "gossip", "news", "weather"]


@pytest.mark.parametrize("bad", ["2.x", "-1", "", "v1.2.3.4.5", "1.0-rc1", "65536", " v1",
                                 "v", "1.", ".1", "v1\n", "vv1", "1..2", "１"])
def test_rule_bad_version_string(bad):
    rows = minimal()
    rows["version"] = ["v1", None, "2.0", bad, "v3"]
    check_error(rows, column="version", row=3, rule="bad version string")
    with pytest.raises(SchemaError) as info:
        parse_version(bad)
    assert info.value.rule == "bad version string"


def test_rule_bad_version_string_in_supersedes():
    rows = minimal()
    rows["supersedes"] = [None, "v1", "v1", "v1.x", None]
    check_error(rows, column="supersedes", row=3, rule="bad version string")


@pytest.mark.parametrize("column, values, row", [
    ("reliability", [0.5, "high", 0.7, 0.8, 0.9], 1),
    ("reliability", ["a", "b", "c", "d", "e"], 0),
    ("reliability", np.array([True] * 5), 0),
    ("deprecated", [False, True, 1, False, False], 2),
    ("deprecated", np.array([0, 1, 0, 1, 0]), 0),
    ("deprecated", ["no"] * 5, 0),
    ("valid_from", ["2024-01-01", "2024-01-02", True, "2024-01-04", "2024-01-05"], 2),
    ("valid_from", [T2024, T2024, T2024 + 0.5, T2024, T2024], 2),
    ("valid_to", np.array([1.5, 2.0, 3.0, 4.0, 5.0]), 0),
    ("observed_at", [[1], [2], [3], [4], [5]], 0),
    ("id", [1, 2, -3, 4, 5], 2),
    ("id", np.array([1, 2, 3, -4, 5]), 3),
    ("id", [1.0, 2.5, 3.0, 4.0, 5.0], 1),
    ("id", ["1", "2", "3", "4", "5"], 0),
    ("stem_id", [None, "s1", 7, "s3", "s4"], 2),
    ("content", np.arange(5), 0),
    ("vector", [[0.1, 0.2, 0.3, 0.4], ["a", "b", "c", "d"]] + [[1.0, 0, 0, 0]] * 3, 1),
    ("vector", np.array([["a"] * 4] * 5), 0),
])
def test_rule_wrong_type(column, values, row):
    rows = minimal()
    rows[column] = values
    check_error(rows, column=column, row=row, rule="wrong type")


def test_rule_wrong_type_for_a_scalar_column():
    rows = minimal()
    rows["fact_type"] = "news"
    check_error(rows, column="fact_type", row=None, rule="wrong type")


def test_rule_duplicate_id():
    rows = minimal()
    rows["id"] = np.array([5, 3, 9, 3, 5], dtype=np.int64)
    err = check_error(rows, column="id", row=3, rule="duplicate id")
    assert "row 1" in str(err)  # names the earlier row holding the id


@pytest.mark.parametrize("column, values, row", [
    ("valid_from", ["2024-01-01", "2024-01-02", None, None, "2024-01-05"], 2),
    ("valid_from", np.array(["2024-01-01", "NaT", "2024-01-01", "2024-01-01", "2024-01-01"],
                            dtype="datetime64[ns]"), 1),
    ("observed_at", [T2024, T2024, T2024, T2024, None], 4),
    ("ingested_at", pa.array([T2024, None, T2024, T2024, T2024], pa.timestamp("us", "UTC")), 1),
    ("vector", [[1.0, 0, 0, 0], None, [1.0, 0, 0, 0], None, [1.0, 0, 0, 0]], 1),
    ("id", [1, 2, None, 4, 5], 2),
])
def test_rule_null_in_required_column(column, values, row):
    rows = minimal()
    rows[column] = values
    check_error(rows, column=column, row=row, rule="null in required column")


@pytest.mark.parametrize("column, values, row", [
    ("valid_from", np.array([T2024, T2024, 253_402_300_800_000_000, T2024, T2024]), 2),
    ("valid_from", np.array([T2024, -62_135_596_800_000_001, T2024, T2024, T2024]), 1),
    ("valid_from", np.array([0, 0, 0, 2**62, 0], dtype="datetime64[s]"), 3),  # int64 overflow
    ("valid_from", np.array(["2024", "2024", "2024", "2024", "10000"], dtype="datetime64[Y]"), 4),
    ("valid_to", np.array([T2024 * 2, 2**63 + 1, 0, 0, 0], dtype=np.uint64), 1),
    # INT64_MAX means open only in valid_to / retracted_at
    ("observed_at", [T2024, T2024, T2024, OPEN_END, T2024], 3),
    ("ingested_at", pa.array([0, 0, 2**60, 0, 0], pa.timestamp("s")), 2),
])
def test_rule_time_out_of_range(column, values, row):
    rows = minimal()
    if column == "valid_from":
        rows["valid_to"] = [None] * 5
    rows[column] = values
    check_error(rows, column=column, row=row, rule="time out of range")


@pytest.mark.parametrize("values, row", [
    (["2024-01-01", "2024-01-02", "2024-01-03", "2024-13-01", "nope"], 3),
    (["2024-01-01", dt.datetime(2024, 1, 2), "2024-01-03", "yesterday", "2024-01-05"], 3),
    (["2024-01-01T10:00:00+08:00", "2024-01-02", "2024-01-03T25:00:00+08:00", "x", "y"], 2),
])
def test_rule_bad_time_string(values, row):
    rows = minimal()
    rows["valid_from"] = values
    check_error(rows, column="valid_from", row=row, rule="bad time string")


def test_first_offending_row_is_reported_on_large_batches():
    rows = minimal(n=100_000)
    rows["reliability"] = np.full(100_000, 0.5)
    rows["reliability"][[77_777, 88_888]] = 2.0
    check_error(rows, column="reliability", row=77_777, rule="reliability out of range")
    rows = minimal(n=100_000)
    strings = np.datetime_as_string(rows["valid_from"]).astype(object)
    strings[99_998] = "2024-02-30"
    rows["valid_from"] = strings
    check_error(rows, column="valid_from", row=99_998, rule="bad time string")


def test_every_rule_is_exercised():
    # keep RULES and the tests above in step
    import inspect
    source = inspect.getsource(inspect.getmodule(test_every_rule_is_exercised))
    for rule in RULES:
        assert f'rule="{rule}"' in source, rule


# --------------------------------------------------------------------------- input forms

def as_table(rows: dict) -> pa.Table:
    vec = rows["vector"]
    cols = {k: pa.array(v) for k, v in rows.items() if k != "vector"}
    cols["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), vec.shape[1])
    return pa.table(cols)


def assert_same_batch(a: IngestBatch, b: IngestBatch):
    assert a.n == b.n
    for field in ("vector", "valid_from", "valid_to", "observed_at", "ingested_at",
                  "retracted_at", "reliability", "version_key", "deprecated", "ids"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype, field
        np.testing.assert_array_equal(x, y, err_msg=field)
    assert list(a.fact_type) == list(b.fact_type)
    assert list(a.stem_id) == list(b.stem_id)
    assert a.table.equals(b.table)


def test_input_forms_agree():
    rows = base()
    ref = run(rows, metric="cosine")
    table = as_table(rows)
    forms = {
        "table": table,
        "chunked table": pa.concat_tables([table.slice(0, 2), table.slice(2)]),
        "record batch": table.to_batches()[0],
        "list of dicts": table.to_pylist(),
        "dict of lists": {k: (v.tolist() if k != "vector" else [list(x) for x in v])
                          for k, v in rows.items()},
    }
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({k: (list(v) if k == "vector" else v) for k, v in rows.items()})
    forms["dataframe"] = df
    forms["arrow->pandas"] = table.to_pandas()
    for name, form in forms.items():
        got = run(form, metric="cosine")
        try:
            assert_same_batch(ref, got)
        except AssertionError as e:  # pragma: no cover - names the failing form
            raise AssertionError(f"{name}: {e}") from e


def test_dict_of_lists_keeps_python_datetimes():
    rows = base()
    ref = run(rows)
    as_py = {k: v.tolist() for k, v in rows.items()}  # datetime64[us] -> datetime, NaT -> None
    assert isinstance(as_py["valid_from"][0], dt.datetime)
    assert_same_batch(ref, run(as_py))


def test_list_of_dicts_with_missing_keys_uses_defaults():
    rows = [{"vector": [1.0, 0, 0, 0], "valid_from": "2024-01-01", "reliability": 0.5},
            {"vector": [0, 1.0, 0, 0], "valid_from": "2024-01-02", "fact_type": "news"},
            {"vector": [0, 0, 1.0, 0], "valid_from": "2024-01-03", "deprecated": True}]
    b = run(rows)
    np.testing.assert_array_equal(b.reliability, np.array([0.5, 1.0, 1.0], np.float32))
    assert list(b.fact_type) == ["general", "news", "general"]
    np.testing.assert_array_equal(b.deprecated, [False, False, True])


def test_list_of_dicts_with_mixed_types_names_the_row():
    rows = [{"vector": [1.0, 0, 0, 0], "valid_from": "2024-01-01", "reliability": 0.5},
            {"vector": [0, 1.0, 0, 0], "valid_from": "2024-01-02", "reliability": "high"}]
    check_error(rows, column="reliability", row=1, rule="wrong type")


def test_defaults():
    rows = minimal()
    b = run(rows)
    np.testing.assert_array_equal(b.observed_at, b.valid_from)
    assert b.observed_at is not b.valid_from
    assert (b.ingested_at == NOW).all() and (b.valid_to == OPEN_END).all()
    assert (b.retracted_at == OPEN_END).all()
    assert b.reliability.dtype == np.float32 and (b.reliability == 1.0).all()
    assert list(b.fact_type) == ["general"] * 5
    assert list(b.stem_id) == [None] * 5
    assert b.version_key.dtype == np.uint64 and (b.version_key == 0).all()
    assert b.deprecated.dtype == bool and not b.deprecated.any()
    assert b.ids is None
    assert b.table.schema.equals(STORAGE_SCHEMA)
    assert b.table.num_rows == 5
    assert b.table.column("version").null_count == 5
    assert len(b) == 5 and "n=5" in repr(b)


def test_output_dtypes_and_table():
    rows = base()
    b = run(rows)
    assert b.vector.dtype == np.float32 and b.vector.flags.c_contiguous
    assert b.vector.shape == (6, 4)
    for f in ("valid_from", "valid_to", "observed_at", "ingested_at", "retracted_at"):
        assert getattr(b, f).dtype == np.int64
    assert b.ids.dtype == np.uint64 and list(b.ids) == list(range(10, 16))
    assert b.valid_to[1] == OPEN_END
    assert b.table.schema.equals(STORAGE_SCHEMA)
    assert b.table.column("version").to_pylist() == list(rows["version"])
    assert b.table.column("supersedes").to_pylist() == list(rows["supersedes"])
    assert b.table.column("content").to_pylist() == list(rows["content"])
    assert list(b.stem_id) == list(rows["stem_id"])
    np.testing.assert_array_equal(b.version_key,
                                  [parse_version(v) for v in rows["version"]])


def test_dictionary_codes_match_the_columns():
    rows = base()
    b = run(rows)
    assert [b.fact_type_names[c] for c in b.fact_type_codes] == list(b.fact_type)
    assert b.fact_type_codes.dtype == np.int32 and b.stem_codes.dtype == np.int32
    assert [b.stem_names[c] for c in b.stem_codes] == list(b.stem_id)
    b = run({**minimal(), "stem_id": ["a", None, "b", "a", None]})
    assert b.stem_names == ["a", "b"] and list(b.stem_codes) == [0, -1, 1, 0, -1]
    b = run(minimal())
    assert b.stem_names == [] and (b.stem_codes == -1).all()
    assert b.fact_type_names == ["general"] and (b.fact_type_codes == 0).all()


def test_cosine_normalises_without_touching_the_input():
    rows = minimal()
    rows["vector"][0] *= 1e30   # huge but finite: the float32 norm overflows
    rows["vector"][1] *= 1e-30  # tiny: the float32 squared norm underflows
    before = rows["vector"].copy()
    b = run(rows, metric="cosine")
    np.testing.assert_allclose(np.linalg.norm(b.vector.astype(np.float64), axis=1), 1.0,
                               rtol=1e-6)
    np.testing.assert_array_equal(rows["vector"], before)
    expected = before.astype(np.float64) / np.linalg.norm(before.astype(np.float64), axis=1,
                                                          keepdims=True)
    np.testing.assert_allclose(b.vector, expected, rtol=1e-6, atol=1e-7)
    l2 = run(rows, metric="l2")
    np.testing.assert_array_equal(l2.vector, before)


def test_vector_dtypes_accepted():
    rows = minimal()
    vec = rows["vector"]
    for v in (vec.astype(np.float64), vec.astype(np.float16), np.asfortranarray(vec),
              pa.array(list(vec.astype(np.float64)))):
        b = run({**rows, "vector": v})
        assert b.vector.flags.c_contiguous and b.vector.dtype == np.float32
    ints = np.arange(20).reshape(5, 4)
    np.testing.assert_array_equal(run({**rows, "vector": ints}).vector, ints.astype(np.float32))


def test_ids_accept_signed_and_python_ints():
    rows = minimal()
    for ids in (np.arange(5, dtype=np.int32), [4, 3, 2, 1, 2**64 - 1], pa.array(range(5))):
        b = run({**rows, "id": ids})
        assert b.ids.dtype == np.uint64
    assert run({**rows, "id": [4, 3, 2, 1, 2**64 - 1]}).ids[-1] == 2**64 - 1


def test_known_fact_type_none_accepts_everything():
    rows = minimal()
    rows["fact_type"] = ["anything"] * 5
    assert list(run(rows, known=None).fact_type) == ["anything"] * 5


def test_bad_arguments():
    with pytest.raises(ValueError):
        run(minimal(), dim=0)
    with pytest.raises(TypeError):
        run(minimal(), now=1.5)


# --------------------------------------------------------------------------- times

def vf_of(values, **kw) -> np.ndarray:
    n = len(values)
    rows = {"vector": np.ones((n, 4), np.float32), "valid_from": values}
    return run(rows, **kw).valid_from


def test_timezone_aware_values_are_converted_to_utc():
    expect = int(np.datetime64("2024-03-01T04:00:00", "us").astype(np.int64))
    plus8 = dt.timezone(dt.timedelta(hours=8))
    assert vf_of(["2024-03-01T12:00:00+08:00"])[0] == expect
    assert vf_of(["2024-03-01T12:00:00+0800"])[0] == expect
    assert vf_of(["2024-03-01T04:00:00Z"])[0] == expect
    assert vf_of([dt.datetime(2024, 3, 1, 12, tzinfo=plus8)])[0] == expect
    assert vf_of(pa.array([expect], pa.timestamp("us", "Asia/Shanghai")))[0] == expect
    pd = pytest.importorskip("pandas")
    s = pd.Series(pd.to_datetime(["2024-03-01 12:00"]).tz_localize("Asia/Shanghai"))
    assert vf_of(s)[0] == expect
    assert vf_of([pd.Timestamp("2024-03-01 12:00", tz="Asia/Shanghai")])[0] == expect


def test_naive_values_are_utc():
    expect = int(np.datetime64("2024-03-01T12:00:00", "us").astype(np.int64))
    assert vf_of(["2024-03-01T12:00:00"])[0] == expect
    assert vf_of(["2024-03-01 12:00"])[0] == expect
    assert vf_of([dt.datetime(2024, 3, 1, 12)])[0] == expect
    assert vf_of(pa.array([expect], pa.timestamp("us")))[0] == expect
    assert vf_of(np.array(["2024-03-01T12:00"], dtype="datetime64[m]"))[0] == expect
    midnight = int(np.datetime64("2024-03-01", "us").astype(np.int64))
    assert vf_of(["2024-03-01"])[0] == midnight
    assert vf_of([dt.date(2024, 3, 1)])[0] == midnight
    assert vf_of(pa.array([dt.date(2024, 3, 1)], pa.date32()))[0] == midnight
    assert vf_of(pa.array([dt.date(2024, 3, 1)], pa.date64()))[0] == midnight
    assert vf_of(np.array(["2024-03"], dtype="datetime64[M]"))[0] == \
        int(np.datetime64("2024-03-01", "us").astype(np.int64))


def test_mixed_python_time_objects():
    plus8 = dt.timezone(dt.timedelta(hours=8))
    got = vf_of(["2024-03-01", dt.datetime(2024, 3, 1, 8, tzinfo=plus8), T2024,
                 np.datetime64("2024-03-01T00:00:00.000001"), dt.date(2024, 3, 1)])
    midnight = int(np.datetime64("2024-03-01", "us").astype(np.int64))
    np.testing.assert_array_equal(got, [midnight, midnight, T2024, midnight + 1, midnight])


def test_datetime64_ns_and_sub_microsecond_floor():
    ns = np.array(["2024-03-01T00:00:00.000001999", "1969-12-31T23:59:59.999999999"],
                  dtype="datetime64[ns]")
    base_us = int(np.datetime64("2024-03-01", "us").astype(np.int64))
    np.testing.assert_array_equal(vf_of(ns), [base_us + 1, -1])
    np.testing.assert_array_equal(vf_of(pa.array(ns)), [base_us + 1, -1])
    assert vf_of(["2024-03-01T00:00:00.000001999Z"])[0] == base_us + 1
    assert vf_of(["2024-03-01T00:00:00.5"])[0] == base_us + 500_000


def test_int_microseconds_and_units():
    us = np.array([T2024, T2024 + 1], dtype=np.int64)
    np.testing.assert_array_equal(vf_of(us), us)
    np.testing.assert_array_equal(vf_of(us.astype(np.uint64)), us)
    np.testing.assert_array_equal(vf_of(us.tolist()), us)
    np.testing.assert_array_equal(vf_of(us.astype(np.float64)), us)
    np.testing.assert_array_equal(vf_of(pa.array(us // 1000, pa.timestamp("ms"))),
                                  us // 1000 * 1000)
    np.testing.assert_array_equal(vf_of(pa.array(us // 10**6, pa.timestamp("s"))),
                                  us // 10**6 * 10**6)
    np.testing.assert_array_equal(vf_of(us.astype("datetime64[us]").astype("datetime64[D]")),
                                  [T2024, T2024])


def test_open_ends():
    rows = minimal()
    vt = rows["valid_from"] + np.timedelta64(1, "D")
    vt[[1, 3]] = np.datetime64("NaT", "us")
    b = run({**rows, "valid_to": vt})
    assert list(b.valid_to == OPEN_END) == [False, True, False, True, False]
    b = run({**rows, "valid_to": [None, T2024 * 2, float("nan"), OPEN_END, None]})
    assert list(b.valid_to == OPEN_END) == [True, False, True, True, True]
    b = run({**rows, "retracted_at": pa.array([None] * 5, pa.timestamp("ns"))})
    assert (b.retracted_at == OPEN_END).all()
    pd = pytest.importorskip("pandas")
    b = run({**rows, "valid_to": pd.Series([pd.NaT, "2030-01-01", None, pd.NaT, pd.NaT],
                                           dtype="datetime64[ns]")})
    assert list(b.valid_to == OPEN_END) == [True, False, True, True, True]


def test_time_bounds_are_inclusive():
    lo, hi = -62_135_596_800_000_000, 253_402_300_799_999_999
    np.testing.assert_array_equal(vf_of(["0001-01-01", "9999-12-31T23:59:59.999999"]), [lo, hi])


# --------------------------------------------------------------------------- versions

def test_parse_version_values_and_ordering():
    assert parse_version("v2.1.0") == parse_version("2.1") == (2 << 48) | (1 << 32)
    assert parse_version("V3") == parse_version("3.0.0.0") == 3 << 48
    assert parse_version("1.0.0") == 1 << 48
    assert parse_version("v2") == parse_version("v2.0.0")
    assert parse_version("v01.002") == parse_version("v1.2")
    assert parse_version("65535.65535.65535.65535") == 2**64 - 1
    ordered = ["v0.0.1", "v0.9", "v1", "v1.0.0.1", "v1.2", "v1.10", "v2", "v9", "v10", "v10.0.1"]
    keys = [parse_version(v) for v in ordered]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert parse_version("v10") > parse_version("v9")


def test_format_version_round_trips():
    assert format_version(parse_version("2.1")) == "v2.1.0"
    assert format_version(parse_version("V3")) == "v3.0.0"
    assert format_version(parse_version("1.2.3.4")) == "v1.2.3.4"
    assert format_version(0) == "v0.0.0"
    assert format_version(np.uint64(2**64 - 1)) == "v65535.65535.65535.65535"
    for s in ("v1.2.3", "v7.0.0", "v1.0.0.9"):
        assert format_version(parse_version(s)) == s
    with pytest.raises(ValueError):
        format_version(-1)
    with pytest.raises(ValueError):
        format_version(2**64)


def test_parse_version_rejects_non_strings():
    with pytest.raises(SchemaError) as info:
        parse_version(2)  # type: ignore[arg-type]
    assert info.value.rule == "wrong type"


def test_batch_version_keys_match_parse_version():
    versions = ["v1", "1.0.0", None, "V2.3", "v10", "2.3.0.1"]
    rows = minimal(n=6)
    b = run({**rows, "version": versions})
    np.testing.assert_array_equal(b.version_key,
                                  [0 if v is None else parse_version(v) for v in versions])
    assert b.table.column("version").to_pylist() == versions


# --------------------------------------------------------------------------- a large batch

def test_200k_row_dict_batch_converts_every_column():
    """A dict of 200k NumPy columns (the bulk path, no per-row Python objects) comes out
    whole: every column converted row for row, the cosine vectors scaled to unit length,
    the open and defaulted times filled."""
    n, dim = 200_000, 128
    rng = np.random.default_rng(3)
    vf = np.datetime64("2020-01-01", "us") + rng.integers(0, 10**15, n).astype("timedelta64[us]")
    rows = {
        "id": np.arange(n, dtype=np.uint64),
        "vector": rng.standard_normal((n, dim)).astype(np.float32),
        "valid_from": vf,
        "valid_to": vf + np.timedelta64(10**12, "us"),
        "reliability": rng.uniform(0.5, 1.0, n).astype(np.float32),
        "fact_type": np.array(["news", "finance", "general"], dtype=object)[rng.integers(0, 3, n)],
        "stem_id": np.char.add("s", (np.arange(n) // 2).astype(str)).astype(object),
        "version": np.char.add("v", (np.arange(n) % 2 + 1).astype(str)).astype(object),
        "deprecated": rng.random(n) < 0.1,
        "title": np.full(n, "a title", dtype=object),
    }
    b = run(rows, dim=dim, metric="cosine")
    assert b.n == n and b.vector.shape == (n, dim) and b.vector.dtype == np.float32
    want = rows["vector"] / np.linalg.norm(rows["vector"].astype(np.float64), axis=1, keepdims=True)
    np.testing.assert_allclose(b.vector, want, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(b.ids, rows["id"])
    np.testing.assert_array_equal(b.valid_from, vf.astype(np.int64))
    np.testing.assert_array_equal(b.valid_to, vf.astype(np.int64) + 10**12)
    np.testing.assert_array_equal(b.observed_at, b.valid_from)  # defaults to valid_from
    assert (b.ingested_at == NOW).all() and (b.retracted_at == OPEN_END).all()
    np.testing.assert_array_equal(b.reliability, rows["reliability"])
    np.testing.assert_array_equal(b.deprecated, rows["deprecated"])
    np.testing.assert_array_equal(np.array(b.fact_type_names, object)[b.fact_type_codes], rows["fact_type"])
    np.testing.assert_array_equal(np.array(b.stem_names, object)[b.stem_codes], rows["stem_id"])
    np.testing.assert_array_equal(b.version_key, np.where(np.arange(n) % 2, parse_version("v2"),
                                                          parse_version("v1")).astype(np.uint64))
    assert b.table.num_rows == n and b.table.column("title").unique().to_pylist() == ["a title"]


def _assert_rule(err, *, column, rule):
    assert (err.column, err.rule) == (column, rule), (err.column, err.rule, str(err))


def test_automatic_ids_exhausted_is_a_named_rule():
    import chrono_engine as ce
    eng = ce.Engine(4)
    eng.ingest({"vector": np.ones((1, 4), np.float32), "valid_from": ["2024-01-01"], "id": [2**64 - 1]})
    with pytest.raises(SchemaError) as info:
        eng.ingest({"vector": np.ones((1, 4), np.float32), "valid_from": ["2024-01-01"]})
    _assert_rule(info.value, column="id", rule="automatic ids exhausted")
    assert len(eng) == 1


def test_rows_outside_an_ingest_filter_are_a_named_rule():
    """Engine.ingest(where=...): the first row the filter does not pass, as it would be
    stored (a metadata column the batch lacks is null), names its row; nothing is written."""
    import chrono_engine as ce
    eng = ce.Engine(4)
    eng.ingest({"vector": np.ones((1, 4), np.float32), "valid_from": ["2024-01-01"], "tenant": ["acme"]})
    rows = {"vector": np.ones((3, 4), np.float32), "valid_from": ["2024-01-01"] * 3,
            "tenant": ["acme", "acme", "globex"]}
    with pytest.raises(SchemaError) as info:
        eng.ingest(rows, where={"tenant": "acme"})
    _assert_rule(info.value, column=None, rule="outside where")
    assert info.value.row == 2 and "row 2" in str(info.value) and "'tenant'" in str(info.value)
    with pytest.raises(SchemaError, match="row 0: outside where"):  # the column missing: null
        eng.ingest({"vector": np.ones((1, 4), np.float32), "valid_from": ["2024-01-01"]}, where={"tenant": "acme"})
    assert len(eng) == 1
    assert eng.ingest({**rows, "tenant": ["acme"] * 3}, where={"tenant": "acme"}).tolist() == [1, 2, 3]
    fresh = ce.Engine(4)  # a field neither the rows nor the store have: null, so outside an equality
    with pytest.raises(SchemaError, match="row 0: outside where"):
        fresh.ingest({"vector": np.ones((1, 4), np.float32), "valid_from": ["2024-01-01"]}, where={"tenant": "acme"})
    assert len(fresh) == 0
    assert RULES[-1] == "outside where"  # rule="outside where"
