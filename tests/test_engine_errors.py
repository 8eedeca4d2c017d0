"""Bad input at the Engine level.

Every rejected call must raise the precise error class (SchemaError for rows, QueryError
for search arguments; both are ValueErrors), name the column, row and rule where they
apply, and leave the engine exactly as it was: same size, same columns, same answers to a
fixed set of searches, and the next good batch gets the ids it would have got anyway.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine.errors import ChronoError, QueryError, SchemaError

DIM = 8
N = 200
ID0 = 1000
KNOWN_AT = np.iinfo(np.int64).max - 1
QUERIES = np.random.default_rng(99).standard_normal((3, DIM)).astype(np.float32)


def _policy():
    return ce.DecayPolicy({"news": ce.Exponential(half_life=7), "law": ce.Exponential(half_life=3650)},
                          default=None)


def _rows(n: int, *, seed: int, id0: int | None):
    rng = np.random.default_rng(seed)
    vf = np.datetime64("2020-01-01", "us") + rng.integers(0, 4 * 365, n).astype("timedelta64[D]")
    d = {
        "vector": rng.standard_normal((n, DIM)).astype(np.float32),
        "valid_from": vf,
        "valid_to": np.where(rng.random(n) < 0.5, np.datetime64("NaT", "us"), vf + np.timedelta64(400, "D")),
        "reliability": rng.uniform(0.5, 1.0, n).astype(np.float32),
        "fact_type": np.asarray(["news", "law"], dtype=object)[rng.integers(0, 2, n)],
        "stem_id": np.asarray([f"doc{i % 60}" for i in range(n)], dtype=object),
        "version": np.asarray([f"v{1 + i // 60}" for i in range(n)], dtype=object),
        "deprecated": rng.random(n) < 0.1,
        "title": np.asarray([f"title {i}" for i in range(n)], dtype=object),
    }
    if id0 is not None:
        d["id"] = np.arange(id0, id0 + n, dtype=np.uint64)
    return d


@pytest.fixture
def eng():
    e = ce.Engine(DIM, decay=_policy(), M=8, ef_construction=40, threads=1)
    e.ingest(_rows(N, seed=1, id0=ID0))
    return e


def good(n=4, **over):
    """A small batch that the fixture engine accepts (no ids: the engine assigns them)."""
    d = _rows(n, seed=7, id0=None)
    d.update(over)
    return d


def _state(e: ce.Engine):
    cols = {k: v.copy() for k, v in e.columns().items()}
    searches = [
        e.search_batch(QUERIES, 5, mode="all", as_of="2024-06-01", known_at=KNOWN_AT, exact=True),
        e.search_batch(QUERIES, 5, mode="as_of", as_of="2022-06-01", known_at=KNOWN_AT, exact=True),
        e.search_batch(QUERIES, 5, mode="latest", as_of="2023-06-01", known_at=KNOWN_AT, explain=True),
    ]
    return dict(n=len(e), cols=cols, searches=searches, fact_types=list(e.fact_types),
                stems=e.stems, strings=e.strings().num_rows, vectors=e.vectors())


def assert_unchanged(e: ce.Engine, before: dict, *, probe_ingest: bool = True) -> None:
    after = _state(e)
    assert after["n"] == before["n"]
    assert after["fact_types"] == before["fact_types"]
    assert after["stems"] == before["stems"]
    assert after["strings"] == before["strings"]
    for k in before["cols"]:
        np.testing.assert_array_equal(after["cols"][k], before["cols"][k], err_msg=k)
    np.testing.assert_array_equal(after["vectors"], before["vectors"])
    for a, b in zip(after["searches"], before["searches"]):
        assert a.equals(b)
    if probe_ingest:
        # the rejected batch consumed no ids and left no half-registered codes behind
        ids = e.ingest(good(2))
        assert ids.tolist() == [ID0 + N, ID0 + N + 1]
        assert len(e) == before["n"] + 2


def reject_rows(e, rows, *, rule, column, row, words=()):
    before = _state(e)
    with pytest.raises(SchemaError) as info:
        e.ingest(rows)
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, ChronoError)
    msg = str(err)
    assert err.rule == rule, msg
    assert err.column == column, msg
    assert err.row == row, msg
    assert rule in msg, msg
    if column is not None:
        assert f"'{column}'" in msg, msg
    if row is not None:
        assert f"row {row}" in msg, msg
    for w in words:
        assert w in msg, msg
    assert_unchanged(e, before)
    return err


def reject_query(e, call, *, words=()):
    before = _state(e)
    with pytest.raises(QueryError) as info:
        call(e)
    assert isinstance(info.value, ValueError) and isinstance(info.value, ChronoError)
    msg = str(info.value)
    for w in words:
        assert w in msg, msg
    assert_unchanged(e, before, probe_ingest=False)
    return info.value


# ============================================================================ ingest rules

def test_wrong_vector_dimension(eng):
    reject_rows(eng, good(vector=np.ones((4, DIM - 1), np.float32)), rule="vector dimension",
                column="vector", row=0, words=(f"dim={DIM}",))


def test_wrong_vector_dimension_in_one_row_of_a_list(eng):
    rows = [{"vector": [1.0] * DIM, "valid_from": "2024-01-01"},
            {"vector": [1.0] * (DIM + 1), "valid_from": "2024-01-01"}]
    reject_rows(eng, rows, rule="vector dimension", column="vector", row=1)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_vector(eng, bad):
    v = good()["vector"].copy()
    v[2, 5] = bad
    reject_rows(eng, good(vector=v), rule="non-finite vector", column="vector", row=2)


def test_zero_vector_under_cosine(eng):
    v = good()["vector"].copy()
    v[3] = 0
    reject_rows(eng, good(vector=v), rule="zero vector", column="vector", row=3, words=("cosine",))


def test_zero_vector_is_fine_under_l2():
    e = ce.Engine(DIM, metric="l2", threads=1)
    e.ingest(good(vector=np.zeros((4, DIM), np.float32)))
    assert len(e) == 4


@pytest.mark.parametrize("delta_days, row", [(0, 1), (-5, 1)])
def test_valid_to_not_after_valid_from(eng, delta_days, row):
    d = good()
    vt = np.full(4, np.datetime64("NaT", "us"), "datetime64[us]")
    vt[row] = d["valid_from"][row] + np.timedelta64(delta_days, "D")
    reject_rows(eng, good(valid_to=vt), rule="valid_to <= valid_from", column="valid_to", row=row)


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.1, np.nan])
def test_reliability_outside_unit_interval(eng, bad):
    rel = np.array([1.0, 0.7, bad, 0.9])
    reject_rows(eng, good(reliability=rel), rule="reliability out of range", column="reliability", row=2)


def test_reliability_one_is_allowed(eng):
    eng.ingest(good(reliability=np.ones(4)))


def test_unknown_fact_type_policy(eng):
    ft = np.array(["news", "law", "weather", "news"], dtype=object)
    err = reject_rows(eng, good(fact_type=ft), rule="unknown fact type policy", column="fact_type", row=2,
                      words=("'weather'",))
    assert err.column == "fact_type"


def test_unknown_fact_type_defaults_to_general_which_is_unknown_too(eng):
    # no fact_type column means "general", which this policy (default=None) does not know
    d = good()
    del d["fact_type"]
    reject_rows(eng, d, rule="unknown fact type policy", column="fact_type", row=0, words=("'general'",))


@pytest.mark.parametrize("bad", ["2.x", "", "1.0-rc1", "v1.2.3.4.5", "-1", "v70000"])
def test_bad_version_string(eng, bad):
    ver = np.array(["v1", bad, "v2", "v3"], dtype=object)
    reject_rows(eng, good(version=ver), rule="bad version string", column="version", row=1)


def test_bad_supersedes_version_string(eng):
    sup = np.array([None, None, None, "latest"], dtype=object)
    reject_rows(eng, good(supersedes=sup), rule="bad version string", column="supersedes", row=3)


@pytest.mark.parametrize("column, values", [
    ("reliability", ["high", "low", "mid", "x"]),
    ("title", [1, 2, 3, 4]),
    ("deprecated", [0, 1, 0, 1]),
    ("valid_from", [1.5, 2.5, 3.5, 4.5]),
    ("stem_id", np.arange(4)),
    ("vector", ["a", "b", "c", "d"]),
])
def test_wrong_types(eng, column, values):
    reject_rows(eng, good(**{column: values}), rule="wrong type", column=column, row=0)


def test_wrong_type_in_a_later_row_of_a_list(eng):
    reject_rows(eng, good(title=["a", "b", 3, "d"]), rule="wrong type", column="title", row=2)


def test_negative_id(eng):
    reject_rows(eng, good(id=np.array([5, -1, 6, 7])), rule="wrong type", column="id", row=1)


def test_duplicate_ids_within_a_batch(eng):
    ids = np.array([5000, 5001, 5000, 5002], np.uint64)
    reject_rows(eng, good(id=ids), rule="duplicate id", column="id", row=2, words=("5000",))


def test_duplicate_id_against_the_store(eng):
    ids = np.array([6000, ID0 + 17, 6001, 6002], np.uint64)
    reject_rows(eng, good(id=ids), rule="duplicate id", column="id", row=1, words=(str(ID0 + 17),))


def test_duplicate_id_against_the_store_with_a_new_fact_type():
    """The core rejects the batch after the facade registered a new fact type's decay."""
    e = ce.Engine(DIM, decay=ce.DecayPolicy({"news": ce.Exponential(half_life=7)}), threads=1)
    e.ingest(_rows(50, seed=3, id0=0))
    ids = np.array([900, 3, 901, 902], np.uint64)
    ft = np.array(["brand_new", "brand_new", "news", "law"], dtype=object)
    before = _state(e)
    with pytest.raises(SchemaError, match="duplicate id"):
        e.ingest(good(id=ids, fact_type=ft))
    after = _state(e)
    assert after["fact_types"] == before["fact_types"]
    for a, b in zip(after["searches"], before["searches"]):
        assert a.equals(b)
    # and the next batch with other new types still decays each type with its own profile
    e.ingest(good(id=np.array([900, 901, 902, 903], np.uint64),
                  fact_type=np.array(["law", "news", "news", "law"], dtype=object)))
    res = e.search(np.ones(DIM, np.float32), k=len(e) + 10, mode="all", as_of="2030-01-01",
                   known_at=KNOWN_AT, arbitrate=False, explain=True)
    decay = dict(zip(res.column("id").to_pylist(), res.column("decay").to_pylist()))
    cols = e.columns()
    t = np.datetime64("2030-01-01", "us").astype(np.int64)
    for row in e.rows_of(np.array([900, 901, 902, 903], np.uint64)):
        age = (t - cols["observed_at"][row]) / 86_400e6
        want = 1.0 if e.fact_types[cols["fact_type"][row]] == "law" else 0.5 ** (age / 7)
        assert decay[int(cols["id"][row])] == pytest.approx(want, rel=1e-5, abs=1e-30)


@pytest.mark.parametrize("missing", ["valid_from", "vector"])
def test_missing_required_column(eng, missing):
    d = good()
    del d[missing]
    reject_rows(eng, d, rule="missing column", column=missing, row=None)


def test_unknown_column_with_hint(eng):
    d = good()
    d["valid_form"] = d.pop("valid_from")
    reject_rows(eng, d, rule="unknown column", column="valid_form", row=None, words=("did you mean 'valid_from'",))


@pytest.mark.parametrize("rows", [
    {"vector": np.zeros((0, DIM), np.float32), "valid_from": np.zeros(0, "datetime64[us]")},
    [],
    pa.table({"vector": pa.array([], pa.list_(pa.float32(), DIM)), "valid_from": pa.array([], pa.timestamp("us"))}),
], ids=["dict", "list", "arrow"])
def test_empty_batch(eng, rows):
    reject_rows(eng, rows, rule="empty", column=None, row=None)


def test_column_length_mismatch(eng):
    d = good()
    d["reliability"] = np.ones(3)
    reject_rows(eng, d, rule="column length", column="reliability", row=None)


def test_null_in_required_column(eng):
    vf = np.array(["2024-01-01", None, "2024-01-02", "2024-01-03"], dtype=object)
    reject_rows(eng, good(valid_from=vf), rule="null in required column", column="valid_from", row=1)


def test_bad_time_string(eng):
    vf = np.array(["2024-01-01", "2024-01-02", "next tuesday", "2024-01-03"], dtype=object)
    reject_rows(eng, good(valid_from=vf), rule="bad time string", column="valid_from", row=2,
                words=("next tuesday",))


def test_time_out_of_range(eng):
    vf = np.array(["2024-01-01", "2024-01-02", "2024-01-03", "10000-01-01"], dtype="datetime64[us]")
    reject_rows(eng, good(valid_from=vf), rule="time out of range", column="valid_from", row=3)


def test_retracted_before_ingested(eng):
    ing = np.full(4, np.datetime64("2024-05-01", "us"))
    ret = np.array(["NaT", "NaT", "2024-04-01", "NaT"], dtype="datetime64[us]")
    reject_rows(eng, good(ingested_at=ing, retracted_at=ret), rule="retracted_at <= ingested_at",
                column="retracted_at", row=2)


@pytest.mark.parametrize("rows", ["rows", 42, np.zeros((3, DIM))])
def test_unsupported_input(eng, rows):
    reject_rows(eng, rows, rule="unsupported input", column=None, row=None)


def test_pandas_rows_name_the_offending_row(eng):
    pd = pytest.importorskip("pandas")
    d = good(n=6)
    df = pd.DataFrame({"vector": list(d["vector"]), "valid_from": d["valid_from"],
                       "reliability": [1.0, 0.9, 0.8, 0.7, 2.0, 0.5], "fact_type": d["fact_type"]})
    reject_rows(eng, df, rule="reliability out of range", column="reliability", row=4)


def test_a_later_bad_row_rejects_the_whole_batch(eng):
    """Nothing of a batch lands when only its last row is bad (no partial ingest)."""
    d = good(n=50)
    d["version"] = np.array([f"v{i}" for i in range(49)] + ["bad version"], dtype=object)
    reject_rows(eng, d, rule="bad version string", column="version", row=49)


# ============================================================================ search arguments

def test_query_wrong_dimension(eng):
    reject_query(eng, lambda e: e.search(np.ones(DIM + 1, np.float32)), words=(f"{DIM}",))


def test_batch_query_wrong_dimension(eng):
    reject_query(eng, lambda e: e.search_batch(np.ones((2, DIM - 2), np.float32)), words=(f"(n, {DIM})",))


def test_query_wrong_rank(eng):
    reject_query(eng, lambda e: e.search(np.ones((1, DIM), np.float32)), words=("1-D",))
    reject_query(eng, lambda e: e.search_batch(np.ones(DIM, np.float32)))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_query_non_finite(eng, bad):
    q = QUERIES.copy()
    q[1, 3] = bad
    reject_query(eng, lambda e: e.search_batch(q), words=("query 1", "non-finite"))


def test_query_zero_vector_under_cosine(eng):
    q = QUERIES.copy()
    q[2] = 0
    reject_query(eng, lambda e: e.search_batch(q), words=("query 2", "zero"))


@pytest.mark.parametrize("k", [0, -3, 2.5, True, "10", None])
def test_bad_k(eng, k):
    reject_query(eng, lambda e: e.search(QUERIES[0], k=k), words=("k",))


@pytest.mark.parametrize("arg, value", [("mode", "now"), ("fusion", "sum"), ("deprecated", "drop"),
                                        ("lang", "fr")])
def test_unknown_choice(eng, arg, value):
    reject_query(eng, lambda e: e.search(QUERIES[0], **{arg: value}), words=(arg, repr(value)))


@pytest.mark.parametrize("value", ["fast", None, 2])
def test_unknown_scan_order(eng, value):
    """The scan order is an engine attribute: a bad one set later fails the search, named."""
    with pytest.raises(ce.errors.ConfigError, match="scan"):
        ce.Engine(4, scan=value)
    search = lambda: eng.search(QUERIES[0], mode="as_of", as_of="2024-06-01")  # noqa: E731
    before = search()
    old = eng.scan
    eng.scan = value
    try:
        with pytest.raises(QueryError) as info:
            search()
        assert "scan" in str(info.value) and repr(value) in str(info.value)
    finally:
        eng.scan = old
    assert search().equals(before)


@pytest.mark.parametrize("name, good, bad", [("ef", 1, True), ("seed_ef", 0, False), ("scan_limit", 5, 5.0),
                                             ("group", 1, np.bool_(True))])
def test_planner_setting_equal_to_a_good_one_is_still_checked(eng, name, good, bad):
    """Checked planner settings are remembered by value: a bad setting that compares equal
    to a good one seen before (True == 1, 5.0 == 5) must still be refused, named."""
    search = lambda: eng.search(QUERIES[0], mode="as_of", as_of="2024-06-01")  # noqa: E731
    old = getattr(eng, name)
    try:
        setattr(eng, name, good)
        search()
        setattr(eng, name, bad)
        with pytest.raises(ce.errors.ConfigError, match=name):
            search()
    finally:
        setattr(eng, name, old)


def test_window_mode_without_window(eng):
    reject_query(eng, lambda e: e.search(QUERIES[0], mode="window"), words=("window",))


def test_window_with_wrong_shape_or_order(eng):
    reject_query(eng, lambda e: e.search(QUERIES[0], mode="window", window=("2024-01-01",)))
    reject_query(eng, lambda e: e.search(QUERIES[0], mode="window", window=("2024-02-01", "2024-01-01")),
                 words=("before",))
    reject_query(eng, lambda e: e.search(QUERIES[0], mode="window", window=("2024-01-01", "2024-01-01")))


def test_as_of_mode_without_as_of(eng):
    reject_query(eng, lambda e: e.search(QUERIES[0], mode="as_of"), words=("as_of",))


@pytest.mark.parametrize("as_of", ["the day after", np.datetime64("NaT", "us"), True, 3.5j])
def test_bad_as_of(eng, as_of):
    reject_query(eng, lambda e: e.search(QUERIES[0], mode="as_of", as_of=as_of), words=("as_of",))


def test_as_of_array_of_wrong_length(eng):
    reject_query(eng, lambda e: e.search_batch(QUERIES, mode="as_of", as_of=np.zeros(2, np.int64)),
                 words=("as_of", "3"))


def test_bad_known_at(eng):
    reject_query(eng, lambda e: e.search(QUERIES[0], known_at="whenever"), words=("known_at",))


@pytest.mark.parametrize("arg, value", [("alpha", 1.5), ("alpha", -0.1), ("alpha", float("nan")),
                                        ("tau", 1.01), ("tau", -0.2), ("deprecation_penalty", 2.0)])
def test_out_of_range_numbers(eng, arg, value):
    reject_query(eng, lambda e: e.search(QUERIES[0], **{arg: value}), words=(arg,))


@pytest.mark.parametrize("arg, value", [("alpha", "high"), ("tau", None), ("deprecation_penalty", "x")])
def test_non_numeric_numbers_are_query_errors(eng, arg, value):
    with pytest.raises(QueryError, match=arg):
        eng.search(QUERIES[0], **{arg: value})


def test_unknown_fact_type_filter(eng):
    reject_query(eng, lambda e: e.search(QUERIES[0], fact_types=["news", "weather"]), words=("'weather'",))


def test_known_fact_type_filter_is_fine(eng):
    res = eng.search(QUERIES[0], k=50, mode="all", fact_types="law", known_at=KNOWN_AT)
    rows = eng.rows_of(res.column("id").to_numpy())
    codes = eng.columns()["fact_type"][rows]
    assert {eng.fact_types[c] for c in codes} == {"law"}


# ============================================================================ constructor

@pytest.mark.parametrize("kw", [dict(dim=0), dict(dim=-4), dict(dim=2.0), dict(dim=True),
                                dict(dim=4, metric="dot"), dict(dim=4, M=0), dict(dim=4, ef_construction=-1),
                                dict(dim=4, decay="exp")])
def test_bad_engine_arguments(kw):
    with pytest.raises(ce.errors.ConfigError, match=next(iter(kw)) if len(kw) == 1 else list(kw)[1]):
        ce.Engine(**kw)


# ============================================================================ search options

def test_search_options_given_as_one_object_or_as_keywords_agree(eng):
    opts = ce.SearchOptions(mode="as_of", as_of="2024-06-01", known_at=KNOWN_AT, tau=0.05, fusion="linear")
    a = eng.search_batch(QUERIES, 5, opts)
    b = eng.search_batch(QUERIES, 5, mode="as_of", as_of="2024-06-01", known_at=KNOWN_AT, tau=0.05, fusion="linear")
    assert a.equals(b) and a.num_rows > 0
    # keywords override the object's fields; the object itself is unchanged (frozen)
    c = eng.search_batch(QUERIES, 5, opts, fusion="product")
    assert c.equals(eng.search_batch(QUERIES, 5, opts.replace(fusion="product"))) and opts.fusion == "linear"


@pytest.mark.parametrize("call, match", [
    (lambda e: e.search(QUERIES[0], colour="red"), "unknown search option 'colour'"),
    (lambda e: e.search(QUERIES[0], options={"mode": "as_of"}), "options must be a SearchOptions"),
    (lambda e: e.search(QUERIES[0], mode="window"), "window mode needs window=\\(start, end\\)"),
    (lambda e: e.search(QUERIES[0], mode="window", window=("2024-01-01",)), "window mode needs"),
    (lambda e: e.search(QUERIES[0], alpha=1.5), "alpha must be in \\[0, 1\\]"),
    (lambda e: e.search(QUERIES[0], lang="fr"), "lang must be"),
    (lambda e: e.search(QUERIES[0], deprecated="hide"), "deprecated must be one of"),
    (lambda e: ce.SearchOptions(tau=True), "tau must be a number"),
    (lambda e: e.query("what now?", embed=lambda s: QUERIES[0], as_of="2024-01-01"), "comes from the text"),
])
def test_bad_search_options_are_named_and_change_nothing(eng, call, match):
    before = _state(eng)
    with pytest.raises(QueryError, match=match):
        call(eng)
    assert_unchanged(eng, before)
