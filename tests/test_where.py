"""Metadata columns and ``where=`` filters (docs/data-model.md "Metadata columns",
docs/search.md "Filters"): ``exact=True`` identical to the NumPy reference of
"where ∧ valid at T ∧ known at T′" over random schemas, filters, times and retractions, in
every mode; the approximate plans' recall at every selectivity; answers across save,
reopen and log replay; what each bad filter and bad column gets."""
from __future__ import annotations

import functools
import time

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
import reference as ref
from chrono_engine.errors import ConfigError, QueryError, SchemaError
from chrono_engine.synthetic import US_PER_DAY
from test_search import assert_same_topk, core_cols, decay_fn

T0 = int(np.datetime64("2020-01-01", "us").astype(np.int64))
TAGS = ["hr", "eng", "all", "legal", "ops", "exec"]
TENANTS = ["acme", "globex", "initech", "umbrella", "hooli"]


def _column(kind: str, n: int, rng) -> list:
    """n Python values of a column kind (None: null), as the reference reads them."""
    null = rng.random(n) < 0.1
    if kind == "tenant":
        v = [TENANTS[i] for i in rng.integers(0, len(TENANTS), n)]
    elif kind == "dept":
        v = [f"d{i}" for i in rng.integers(0, 50, n)]
    elif kind == "int":
        v = [int(i) for i in rng.integers(-50, 51, n)]
    elif kind == "float":
        v = [float(x) for x in np.round(rng.random(n), 3)]
    elif kind == "bool":
        v = [bool(b) for b in rng.random(n) < 0.5]
    elif kind == "ts":
        v = [T0 + int(d) * US_PER_DAY for d in rng.integers(0, 1500, n)]
    else:  # acl
        v = [sorted(set(TAGS[j] for j in rng.integers(0, len(TAGS), rng.integers(0, 4)))) for _ in range(n)]
    return [None if z else x for x, z in zip(v, null)]


ARROW = {"tenant": pa.string(), "dept": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
         "ts": pa.timestamp("us", tz="UTC"), "acl": pa.list_(pa.string())}


def _arrow(kind: str, vals: list) -> pa.Array:
    return pa.array(vals, ARROW[kind])


def _leaf(kind: str, name: str, rng) -> dict:
    r = rng.random()
    if kind in ("tenant", "dept", "acl"):
        pool = TENANTS + ["nobody"] if kind == "tenant" else (TAGS + ["none"] if kind == "acl" else
                                                                 [f"d{i}" for i in range(55)])
        pick = lambda: pool[int(rng.integers(0, len(pool)))]  # noqa: E731
        if r < 0.3:
            return {name: pick()}
        if r < 0.5:
            return {name: {"$ne": pick()}}
        if r < 0.75:
            return {name: {"$in": [pick() for _ in range(int(rng.integers(1, 4)))]}}
        if r < 0.9:
            return {name: {"$nin": [pick() for _ in range(int(rng.integers(1, 3)))]}}
        return {name: {"$exists": bool(rng.random() < 0.5)}}
    if kind == "bool":
        return {name: bool(r < 0.5)} if r < 0.8 else {name: {"$ne": True}}
    if kind == "ts":
        day = str(np.datetime64(T0 + int(rng.integers(0, 1500)) * US_PER_DAY, "us").astype("datetime64[D]"))
        op = ["$gt", "$gte", "$lt", "$lte"][int(rng.integers(0, 4))]
        return {name: {op: day}}
    x = int(rng.integers(-50, 51)) if kind == "int" else float(np.round(rng.random(), 2))
    if kind == "int" and r < 0.2:
        x = x + 0.5  # a fractional bound on an integer column
    if r < 0.25:
        return {name: x}
    if r < 0.35:
        return {name: {"$in": [x, -x]}}
    ops = ["$gt", "$gte", "$lt", "$lte"]
    a, b = ops[int(rng.integers(0, 2))], ops[int(rng.integers(2, 4))]
    lo = x - (abs(x) + 1) * rng.random()
    return {name: {a: lo, b: x}} if r < 0.6 else {name: {a: x}}


def random_filter(schema: dict, rng, depth: int = 0) -> dict:
    r = rng.random()
    if depth < 3 and r < 0.35:
        kids = [random_filter(schema, rng, depth + 1) for _ in range(int(rng.integers(2, 4)))]
        return {"$and" if r < 0.2 else "$or": kids}
    if depth < 3 and r < 0.42:
        return {"$not": random_filter(schema, rng, depth + 1)}
    name = list(schema)[int(rng.integers(0, len(schema)))]
    return _leaf(schema[name], name, rng)


def build(seed: int, n: int = 1500, dim: int = 16):
    """An engine of n rows over a random schema, one column added by a second batch (null
    for the first), stems with versions, and retractions; its column values by name."""
    rng = np.random.default_rng(seed)
    kinds = list(ARROW)
    chosen = [k for k in kinds if rng.random() < 0.7] or ["tenant"]
    late = chosen.pop() if len(chosen) > 1 else None
    schema = {f"m_{k}": k for k in chosen}
    eng = ce.Engine(dim=dim, decay=ce.HalfLife(400))
    vf = T0 + rng.integers(0, 1800, n) * US_PER_DAY
    vt = np.where(rng.random(n) < 0.4, np.iinfo(np.int64).max, vf + rng.integers(30, 900, n) * US_PER_DAY)
    stems = np.where(rng.random(n) < 0.3, rng.integers(0, 80, n), -1)
    values = {name: _column(kind, n, rng) for name, kind in schema.items()}
    rows = {"vector": rng.normal(size=(n, dim)).astype(np.float32), "valid_from": vf.astype("datetime64[us]"),
            "valid_to": pa.array([None if x == np.iinfo(np.int64).max else int(x) for x in vt],
                                 pa.timestamp("us", tz="UTC")),
            "ingested_at": (T0 + rng.integers(0, 1800, n) * US_PER_DAY).astype("datetime64[us]"),
            "reliability": rng.uniform(0.3, 1.0, n),
            "stem_id": [f"s{s}" if s >= 0 else None for s in stems],
            "version": [f"v{int(v)}" if s >= 0 else None for s, v in zip(stems, rng.integers(1, 50, n))]}
    # versions unique per stem: make them so
    seen: dict = {}
    ver = []
    for s in stems:
        if s < 0:
            ver.append(None)
        else:
            seen[s] = seen.get(s, 0) + 1
            ver.append(f"v{seen[s]}")
    rows["version"] = ver
    half = n // 2
    first = {k: (v[:half] if not isinstance(v, pa.Array) else v.slice(0, half)) for k, v in rows.items()}
    second = {k: (v[half:] if not isinstance(v, pa.Array) else v.slice(half)) for k, v in rows.items()}
    for name, kind in schema.items():
        first[name] = _arrow(kind, values[name][:half])
        second[name] = _arrow(kind, values[name][half:])
    if late is not None:
        name = f"m_{late}"
        schema[name] = late
        vals = _column(late, n - half, rng)
        second[name] = _arrow(late, vals)
        values[name] = [None] * half + vals
    eng.ingest(first, order="input")
    eng.ingest(second, order="input")
    gone = rng.choice(n, n // 20, replace=False)
    for i in gone:
        eng.retract([int(i)], at=np.datetime64(int(T0 + 1900 * US_PER_DAY + int(i) * 1000), "us"))
    return eng, schema, values, rng


def check_exact(eng, values, where, q, t, known, mode, **kw):
    n = len(eng)
    mask = ref.where_mask(where, values, n)
    window = kw.pop("window", None)
    res = eng.search_batch(q, 10, mode=mode, as_of=t if mode != "window" else None, known_at=known, window=window,
                           exact=True, where=where, **kw)
    vecs = eng.vectors()
    wnd = (np.asarray(window[0]), np.asarray(window[1])) if window is not None else (0, 0)
    exp = ref.search(core_cols(eng), vecs, decay_fn(eng), q, 10, mode=mode, t=t, known_at=known, window=wnd,
                     sims=ref.similarities(q, vecs, eng.metric), row_mask=mask,
                     **{k: v for k, v in kw.items() if k in ("deprecated", "future", "fusion")})
    qcol = res.column("query").to_numpy()
    got = [res.column("id").to_numpy()[qcol == i] for i in range(len(q))]
    gs = [res.column("score").to_numpy()[qcol == i] for i in range(len(q))]
    assert_same_topk(got, gs, exp)
    assert res.column("certified").to_numpy().all()
    return res, mask


@pytest.mark.parametrize("seed", range(6))
def test_exact_equals_the_oracle_over_random_schemas_and_filters(seed):
    eng, schema, values, rng = build(seed)
    nq = 6
    for trial in range(8):
        where = random_filter(schema, rng)
        q = rng.normal(size=(nq, eng.dim)).astype(np.float32)
        t = T0 + rng.integers(0, 2000, nq) * US_PER_DAY
        known = T0 + rng.integers(0, 2500, nq) * US_PER_DAY
        mode = ["as_of", "latest", "all", "window"][trial % 4]
        kw = {}
        if mode == "window":
            kw["window"] = (t - 200 * US_PER_DAY, t)
        if mode == "latest":
            kw["future"] = ["exclude", "penalize", "include"][trial % 3]
        res, mask = check_exact(eng, values, where, q, t, known, mode, **kw)
        # every hit passes the filter, and carries its metadata
        rows = eng.rows_of(res.column("id").to_numpy())
        assert mask[rows].all()
        for name in schema:
            got = res.column(name).to_pylist()
            want = [values[name][r] for r in rows]
            if schema[name] == "ts":
                got = [None if g is None else int(np.datetime64(g.replace(tzinfo=None), "us").astype(np.int64))
                       for g in got]
            assert got == want, name


def test_exact_equals_the_oracle_for_a_lone_search_and_a_batch():
    eng, schema, values, rng = build(11)
    where = {list(schema)[0]: {"$exists": True}}
    q = rng.normal(size=(3, eng.dim)).astype(np.float32)
    t = np.full(3, T0 + 900 * US_PER_DAY)
    known = np.full(3, np.iinfo(np.int64).max - 1)
    res, _ = check_exact(eng, values, where, q, t, known, "as_of")
    for i in range(3):
        one = eng.search(q[i], 10, mode="as_of", as_of=int(t[i]), known_at=int(known[i]), exact=True, where=where)
        assert one.column("id").to_pylist() == res.filter(pa.compute.equal(res["query"], i))["id"].to_pylist()


@functools.lru_cache(maxsize=None)
def _plan_store(plan: str):
    """One store per plan, shared by the selectivities (the searches only read it)."""
    eng, rows, _ = _selectivity_store()
    if plan == "graph":
        eng.partition_min = 10**9  # no probe partition: the graph plan serves a cosine store
        eng.scan_limit = 0  # every query walks the graph
    elif plan == "probe":
        eng.partition_min = 1000
    return eng, rows


def _selectivity_store(n=20_000, dim=32, seed=5):
    rng = np.random.default_rng(seed)
    share = rng.random(n)
    rows = {"vector": rng.normal(size=(n, dim)).astype(np.float32),
            "valid_from": (T0 + rng.integers(0, 1000, n) * US_PER_DAY).astype("datetime64[us]"),
            "valid_to": (T0 + rng.integers(1000, 1400, n) * US_PER_DAY).astype("datetime64[us]"),
            "bucket": (share * 1000).astype(np.int64),  # bucket < 1000 s keeps a share s of the rows
            "tenant": np.array([f"t{int(x * 1000)}" for x in share], dtype=object)}
    eng = ce.Engine(dim=dim, decay=ce.HalfLife(300))
    eng.ingest(rows)
    return eng, rows, rng


@pytest.mark.parametrize("share", [0.5, 0.1, 0.01, 0.001])
@pytest.mark.parametrize("plan", ["default", "graph", "probe"])
def test_approximate_plans_reach_recall_at_every_selectivity(share, plan):
    eng, rows = _plan_store(plan)
    rng = np.random.default_rng(int(share * 10_000) + len(plan))
    where = {"bucket": {"$lt": int(share * 1000)}}
    q = rng.normal(size=(20, eng.dim)).astype(np.float32)
    t = np.full(20, T0 + 1100 * US_PER_DAY)
    exact = eng.search_batch(q, 10, mode="as_of", as_of=t, where=where, exact=True)
    got = eng.search_batch(q, 10, mode="as_of", as_of=t, where=where, explain=True)
    plans = set(got.column("plan").to_pylist())
    assert plans <= {"graph": {"graph", "scan after graph"}, "probe": {"probe", "scan"},
                     "default": {"scan", "probe"}}[plan], plans
    passing = int(np.sum(rows["bucket"] < int(share * 1000)))
    for i in range(20):
        e = set(exact.filter(pa.compute.equal(exact["query"], i))["id"].to_pylist())
        g = got.filter(pa.compute.equal(got["query"], i))["id"].to_pylist()
        assert len(g) == len(e) == min(10, passing) or len(g) == len(e)  # never a short answer
    hits = sum(len(set(got.filter(pa.compute.equal(got["query"], i))["id"].to_pylist()) &
                   set(exact.filter(pa.compute.equal(exact["query"], i))["id"].to_pylist())) for i in range(20))
    total = sum(len(exact.filter(pa.compute.equal(exact["query"], i))) for i in range(20))
    assert hits / total >= 0.95


def test_answers_survive_save_reopen_and_log_replay(tmp_path):
    eng, schema, values, rng = build(3, n=600)
    path = tmp_path / "store"
    disk = ce.Engine.create(path, dim=eng.dim, decay=ce.HalfLife(400))
    rng2 = np.random.default_rng(9)
    vec = rng2.normal(size=(600, eng.dim)).astype(np.float32)
    cols = {"vector": vec, "valid_from": np.full(600, "2024-01-01")}
    for name, kind in schema.items():
        cols[name] = _arrow(kind, values[name])
    disk.ingest(cols)
    where = random_filter(schema, rng2)
    q = rng2.normal(size=(4, eng.dim)).astype(np.float32)
    before = disk.search_batch(q, 5, mode="all", as_of="2025-01-01", where=where, exact=True)
    disk.close()
    replayed = ce.Engine.open(path)  # from the log
    assert replayed.search_batch(q, 5, mode="all", as_of="2025-01-01", where=where, exact=True).equals(before)
    replayed.save()
    replayed.close()
    reopened = ce.Engine.open(path)  # from the snapshot's metadata.arrow
    assert reopened.search_batch(q, 5, mode="all", as_of="2025-01-01", where=where, exact=True).equals(before)
    kinds = {"tenant": "string", "dept": "string", "int": "int64", "float": "float64", "bool": "bool",
             "ts": "timestamp", "acl": "list<string>"}
    assert reopened.metadata == {name: kinds[k] for name, k in schema.items()}
    reopened.close()


def test_supersede_inherits_metadata_and_get_history_carry_it():
    eng = ce.Engine(dim=4)
    eng.ingest({"vector": np.eye(4, dtype=np.float32)[:2], "valid_from": ["2024-01-01", "2024-01-01"],
                "stem_id": ["doc", "other"], "version": ["v1", "v1"], "tenant": ["acme", "globex"],
                "acl": [["hr"], ["eng"]]})
    eng.supersede("doc", {"vector": np.eye(4, dtype=np.float32)[2:3]}, "2024-06-01", version="v2")
    eng.supersede("doc", {"vector": np.eye(4, dtype=np.float32)[3:4], "tenant": ["acme-2"]}, "2024-09-01",
                  version="v3")
    h = eng.history("doc")
    assert h.column("tenant").to_pylist() == ["acme", "acme", "acme-2"]
    assert h.column("acl").to_pylist() == [["hr"], ["hr"], ["hr"]]
    g = eng.get([1])
    assert g.column("tenant").to_pylist() == ["globex"]
    # the filter sees the new version's own metadata
    hits = eng.search(np.eye(4, dtype=np.float32)[3], 5, mode="all", arbitrate=False, where={"tenant": "acme-2"})
    assert hits.column("id").to_pylist() == [3]


def test_columns_option_selects_the_metadata_returned():
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1, 0], [0, 1]], "valid_from": ["2024-01-01"] * 2, "tenant": ["a", "b"], "n": [1, 2]})
    full = eng.search([1, 0], 2)
    assert full.column_names[-2:] == ["tenant", "n"]
    assert eng.search([1, 0], 2, columns=["n"]).column_names[-1] == "n"
    assert "tenant" not in eng.search([1, 0], 2, columns=[]).column_names
    with pytest.raises(QueryError, match="unknown metadata column 'x'"):
        eng.search([1, 0], 2, columns=["x"])


@pytest.mark.parametrize("where, match", [
    ({"nope": "x"}, r"where\.nope: unknown field"),
    ({"tenant": {"$gt": "a"}}, r"\$gt compares numbers and times; 'tenant' is a string column"),
    ({"n": "one"}, r"int64 column; compare it with a number"),
    ({"flag": 1}, r"bool column; compare it with true or false"),
    ({"tenant": {"$regex": "a"}}, r"unknown operator"),
    ({"$xor": []}, r"unknown operator"),
    ({"$and": {}}, r"takes a non-empty list"),
    ({"tenant": {"$in": "acme"}}, r"takes a list of values"),
    ({"tenant": {"$exists": 1}}, r"takes true or false"),
    ({}, r"an empty filter"),
    ([1], r"a filter must be a dict"),
    ({"tenant": {"$eq": [1, 2]}}, r"a value must be a string"),
    ({"n": float("nan")}, r"NaN is not a value"),
])
def test_bad_filters_are_clear_errors(where, match):
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "tenant": ["a"], "n": [1], "flag": [True]})
    with pytest.raises(QueryError, match=match):
        eng.search([1, 0], 1, where=where)
    assert len(eng) == 1


def test_filters_past_their_bounds_are_refused_in_linear_time():
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "tenant": ["a"]})
    deep: dict = {"tenant": "a"}
    for _ in range(200):
        deep = {"$not": deep}
    with pytest.raises(QueryError, match="nested deeper than 32"):
        eng.search([1, 0], 1, where=deep)
    huge = {"tenant": {"$in": ["x"] * 1_000_000}}
    t = time.perf_counter()
    with pytest.raises(QueryError, match="more than 10,000 terms"):
        eng.search([1, 0], 1, where=huge)
    wide = {"$or": [{"tenant": str(i)} for i in range(20_000)]}
    with pytest.raises(QueryError, match="more than 10,000 terms"):
        eng.search([1, 0], 1, where=wide)
    assert time.perf_counter() - t < 30  # not a timing claim: a bound on a hang


@pytest.mark.parametrize("rows, match", [
    ({"tenant": [1, "a"]}, r"column 'tenant'"),
    ({"valid_form": ["2024-01-01", "2024-01-01"]}, r"did you mean 'valid_from'"),
    ({"score": [1, 2]}, r"'score' is reserved"),
    ({"$x": [1, 2]}, r"not starting with '\$'"),
    ({"x": [float("nan"), 1.0]}, r"column 'x', row 0: NaN is not a value"),
    ({"acl": [["a", None], ["b"]]}, r"column 'acl', row 0: a null inside a list"),
    ({"z": [None, None]}, r"every value is null"),
    ({"d": [{"a": 1}, {"a": 2}]}, r"not a metadata kind"),
])
def test_bad_metadata_columns_are_refused_and_change_nothing(rows, match):
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "n": [5]})
    batch = {"vector": [[1, 0], [0, 1]], "valid_from": ["2024-01-01"] * 2, **rows}
    with pytest.raises(SchemaError, match=match):
        eng.ingest(batch)
    assert len(eng) == 1 and list(eng.metadata) == ["n"]


def test_a_column_keeps_its_kind_and_may_be_added_later():
    eng = ce.Engine(dim=2, metadata={"when": "timestamp"})
    eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "n": [5], "when": ["2024-03-01"]})
    with pytest.raises(SchemaError, match="column 'n'.*int64; this batch gives string"):
        eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "n": ["five"]})
    with pytest.raises(SchemaError, match="column 'n'.*int64; this batch gives float64"):
        eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "n": [7.5]})
    eng.ingest({"vector": [[0, 1]], "valid_from": ["2024-01-01"], "n": [7], "later": [True]})
    assert eng.metadata == {"when": "timestamp", "n": "int64", "later": "bool"}
    got = eng.search([1, 1], 5, mode="all", where={"later": {"$exists": False}})
    assert got.column("id").to_pylist() == [0]
    assert eng.search([1, 1], 5, mode="all", where={"when": {"$lt": "2024-04-01"}}).column("id").to_pylist() == [0]


def test_declarations_are_checked():
    with pytest.raises(ConfigError, match="kind must be one of"):
        ce.Engine(dim=2, metadata={"a": "text"})
    with pytest.raises(ConfigError, match="reserved"):
        ce.Engine(dim=2, metadata={"id": "int64"})


def test_filter_results_are_cached_and_extended_for_new_rows():
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1, 0]] * 100, "valid_from": ["2024-01-01"] * 100, "tenant": ["a", "b"] * 50})
    a = eng.search([1, 0], 200, mode="all", where={"tenant": "a"})
    assert len(a) == 50
    eng.ingest({"vector": [[1, 0]] * 10, "valid_from": ["2024-01-01"] * 10, "tenant": ["a"] * 10})
    assert len(eng.search([1, 0], 200, mode="all", where={"tenant": "a"})) == 60
    # a value first stored after the filter was made is matched
    assert len(eng.search([1, 0], 200, mode="all", where={"tenant": "new"})) == 0
    eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "tenant": ["new"]})
    assert len(eng.search([1, 0], 200, mode="all", where={"tenant": "new"})) == 1


def test_the_checked_options_cache_tells_filters_apart():
    """A lone search caches its checked options by value (a where dict, a columns list
    included): equal filters share an entry, filters that differ in a value or its type
    never do."""
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1, 0]] * 4, "valid_from": ["2024-01-01"] * 4, "n": [1, 2, 1, 3],
                "flag": [True, False, True, False], "x": [1.0, 1.5, 2.0, 1.0]})
    ids = lambda **kw: sorted(eng.search([1, 0], 10, mode="all", columns=[], **kw).column("id").to_pylist())  # noqa: E731
    for _ in range(2):  # the second round hits the cache
        assert ids(where={"n": 1}) == [0, 2]
        assert ids(where={"n": 3}) == [3]
        assert ids(where={"n": {"$in": [2, 3]}}) == [1, 3]
        assert ids(where={"flag": True}) == [0, 2]
        assert ids(where={"x": 1.5}) == [1]
        with pytest.raises(QueryError, match="bool column"):
            ids(where={"flag": 1})
        with pytest.raises(QueryError, match="int64 column; compare it with a number, got True"):
            ids(where={"n": True})



# ----------------------------------------------------------------------------- filters outside search

@pytest.mark.parametrize("seed", range(4))
def test_count_filter_ids_and_evaluate_equal_the_oracle(seed):
    """Engine.count and Engine.filter_ids (the core's rows of a filter) and
    filters.evaluate (the same program in NumPy, over rows not yet in a store: what a
    write limited by where= checks) agree with the row-by-row reference, over random
    schemas and filters, on whole and on sliced columns."""
    from chrono_engine.search import filters
    eng, schema, values, rng = build(seed, n=700)
    ids = eng.columns()["id"]  # in row order
    n = len(ids)
    table = eng.get(ids)
    kinds = eng.metadata
    cols = {name: (kinds[name], table.column(name).combine_chunks()) for name in kinds}
    lo = 37  # a slice: Arrow arrays with an offset (list offsets into a longer child)
    sliced = {name: (k, a.slice(lo)) for name, (k, a) in cols.items()}
    for _ in range(25):
        where = random_filter(schema, rng)
        want = ref.where_mask(where, values, n)
        assert eng.count(where) == int(want.sum())
        np.testing.assert_array_equal(eng.filter_ids(where, ids), want)
        np.testing.assert_array_equal(filters.evaluate(filters.parse(where), cols, n), want)
        np.testing.assert_array_equal(filters.evaluate(filters.parse(where), sliced, n - lo), want[lo:])
    assert eng.count() == len(eng) == n
    # ids not in the store pass nothing; a bad filter or an unknown field is the search's QueryError
    assert not eng.filter_ids({list(schema)[0]: {"$exists": False}}, [10**9, -1]).any()
    with pytest.raises(QueryError, match=r"where\.nope: unknown field"):
        eng.count({"nope": 1})
    with pytest.raises(QueryError, match=r"where\.nope: unknown field"):
        eng.filter_ids({"nope": 1}, ids[:3])
    with pytest.raises(QueryError, match="unknown field"):
        filters.evaluate(filters.parse({"nope": 1}), cols, n)


def test_absent_fields_read_as_null():
    """filters.absent_as_null: a field the store lacks reads as null on every row, as a row
    without a column does ($eq, $in, ranges, $exists true: none; $ne, $nin, $exists false:
    all), inside $and / $or / $not; a filter of present fields is returned as it is."""
    from chrono_engine.search import filters
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1, 0], [0, 1], [1, 1]], "valid_from": ["2024-01-01"] * 3, "tenant": ["a", "b", None]})
    present = eng.metadata
    cases = [({"ghost": "x"}, 0), ({"ghost": {"$ne": "x"}}, 3), ({"ghost": {"$in": ["x"]}}, 0),
             ({"ghost": {"$nin": ["x"]}}, 3), ({"ghost": {"$gt": 1}}, 0), ({"ghost": {"$exists": False}}, 3),
             ({"ghost": {"$exists": True}}, 0), ({"$not": {"ghost": "x"}}, 3),
             ({"$or": [{"ghost": "x"}, {"tenant": "a"}]}, 1), ({"tenant": "a", "ghost": {"$ne": 1}}, 1),
             ({"$and": [{"tenant": {"$ne": "a"}}, {"$not": {"ghost": {"$exists": True}}}]}, 2)]
    for where, want in cases:
        w = filters.absent_as_null(filters.parse(where), present)
        assert eng.count(w) == want, where
        got = eng.search([1, 1], 5, mode="all", where=w)
        assert got.num_rows == want, where
        with pytest.raises(QueryError, match="ghost"):  # the filter itself: the typo it is
            eng.count(where)
    w = filters.parse({"tenant": "a"})
    assert filters.absent_as_null(w, present) is w


@pytest.mark.slow  # starts processes
def test_a_where_pickles_with_the_hash_of_its_process(tmp_path):
    """A Where made in one process and unpickled in another (serve's workers, a sharded
    engine's shards) hashes as an equal filter made there: a string's hash differs
    between processes, and a pickled hash did not match."""
    import os
    import pickle
    import subprocess
    import sys

    blob = pickle.dumps(ce.SearchOptions(where={"tenant": "acme", "acl": {"$in": ["hr", "all"]}}))
    code = ("import pickle, sys; from chrono_engine.search import filters; o = pickle.loads(sys.stdin.buffer.read()); "
            "w = o.where; print(hash(w) == hash(w.expr), w == filters.parse(w.spec), w.spec == "
            "{'tenant': 'acme', 'acl': {'$in': ['hr', 'all']}})")
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        # run elsewhere than the checkout, whose chrono_engine folder (no compiled core in a
        # clean clone) would shadow the installed package
        out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, env=env, cwd=tmp_path)
        assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
        assert out.stdout.split() == [b"True", b"True", b"True"]


def test_query_forwards_where_and_columns():
    """Engine.query (the question's time intent, its post-stage) takes where= and columns=
    as search does: its hits equal the same question's over an engine holding only the
    items the plain-Python reference passes, in each mode the questions ask for."""
    from adapters import METADATA_SCHEMA, metadata_engine, metadata_rows
    rows, values = metadata_rows(240, seed=41)
    eng = metadata_engine(rows)
    rng = np.random.default_rng(42)
    now = "2026-06-01"
    questions = ("acme ceo ada", "travel policy as of March 2019", "oslo price from 2016 to 2018")
    modes, found = set(), 0
    for _ in range(10):
        where = random_filter(METADATA_SCHEMA, rng)
        sub = metadata_engine(rows, ref.where_mask(where, values, len(eng)))
        for q in questions:
            got = eng.query(q, 5, now=now, where=where)
            want = sub.query(q, 5, now=now)
            assert got.hits.equals(want.hits), (q, where)
            modes.add(got.intent.mode)
            found += got.hits.num_rows > 0
            via_options = eng.query(q, 5, now=now, options=ce.SearchOptions(where=where))
            assert via_options.hits.equals(got.hits)
    assert modes == {"latest", "as_of", "window"} and found >= 20
    some = eng.query("acme ceo ada", 5, now=now, where={"tenant": "acme"}, columns=["acl", "tenant"]).hits
    assert some.column_names[-2:] == ["acl", "tenant"] and "level" not in some.column_names
    assert set(some.column("tenant").to_pylist()) == {"acme"}
    assert not set(METADATA_SCHEMA) & set(eng.query("acme ceo ada", 5, now=now, columns=[]).hits.column_names)


def _tenants():
    """Two tenants' rows: acme ids 0, 2, 4 (stem 'a' v1 and v2 among them), globex ids 1,
    3, 5 (stem 'g'), and a stem 'mixed' with a row of each."""
    eng = ce.Engine(dim=4)
    eng.ingest({"vector": np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 0, 1]], "valid_from": ["2024-01-01"] * 6,
                "tenant": ["acme", "globex"] * 3, "stem_id": ["a", "g", "mixed", "mixed", "a", "g"],
                "version": ["v1", "v1", "v1", "v1", "v2", "v2"]})
    return eng, {"tenant": "acme"}


def _same_error(call_hidden, call_unknown, hidden, unknown):
    """Both calls raise NotFoundError, with one message but the name they were given."""
    with pytest.raises(ce.errors.NotFoundError) as a:
        call_hidden()
    with pytest.raises(ce.errors.NotFoundError) as b:
        call_unknown()
    def named(x):
        return repr(x) if isinstance(x, str) else str(x)
    assert str(a.value).replace(named(hidden), "X") == str(b.value).replace(named(unknown), "X"), (a.value, b.value)


def test_reads_limited_by_where_see_no_other_rows():
    """get, history and validity with where=: a row outside the filter is as if absent,
    with the very error an unknown id or stem gets."""
    eng, acme = _tenants()
    assert eng.get([0, 4], where=acme).column("id").to_pylist() == [0, 4]
    _same_error(lambda: eng.get([0, 1], where=acme), lambda: eng.get([0, 99]), 1, 99)
    assert eng.history("a", where=acme).column("id").to_pylist() == [0, 4]
    assert eng.history("mixed", where=acme).column("id").to_pylist() == [2]  # only its own rows
    _same_error(lambda: eng.history("g", where=acme), lambda: eng.history("nope"), "g", "nope")
    np.testing.assert_array_equal(eng.validity("2025-01-01", [4, 0], where=acme), eng.validity("2025-01-01", [4, 0]))
    _same_error(lambda: eng.validity("2025-01-01", [3], where=acme), lambda: eng.validity("2025-01-01", [98]), 3, 98)
    np.testing.assert_array_equal(eng.validity("2025-01-01", where=acme), eng.validity("2025-01-01", [0, 2, 4]))


def test_writes_limited_by_where_touch_no_other_rows():
    """retract, deprecate, supersede and ingest with where=: ids and stems outside the
    filter are unknown (the same error); rows written must pass it (a supersede's
    inherited metadata included); a refused write changes nothing."""
    eng, acme = _tenants()
    before = eng.columns()
    _same_error(lambda: eng.retract([0, 1], where=acme), lambda: eng.retract([0, 97]), 1, 97)
    _same_error(lambda: eng.deprecate([3], where=acme), lambda: eng.deprecate([96]), 3, 96)
    _same_error(lambda: eng.supersede("g", {"vector": [[1, 0, 0, 0]]}, "2025-01-01", version="v3", where=acme),
                lambda: eng.supersede("nope", {"vector": [[1, 0, 0, 0]]}, "2025-01-01", version="v3"), "g", "nope")
    # a stem holding another tenant's row is not this tenant's to supersede (it would close that row)
    _same_error(lambda: eng.supersede("mixed", {"vector": [[1, 0, 0, 0]]}, "2025-01-01", version="v2", where=acme),
                lambda: eng.supersede("nope", {"vector": [[1, 0, 0, 0]]}, "2025-01-01", version="v2"), "mixed", "nope")
    with pytest.raises(SchemaError, match="row 0: outside where") as info:
        eng.supersede("a", {"vector": [[1, 0, 0, 0]], "tenant": ["globex"]}, "2025-01-01", version="v3", where=acme)
    assert info.value.rule == "outside where"
    with pytest.raises(SchemaError, match="row 1: outside where"):
        eng.ingest({"vector": np.eye(4, dtype=np.float32)[:2], "valid_from": ["2024-01-01"] * 2,
                    "tenant": ["acme", None]}, where=acme)
    for stem in ("g", "mixed"):  # a row of acme's in a stem holding globex's would change how it arbitrates
        with pytest.raises(SchemaError, match=f"row 1: stem '{stem}' holds rows outside where") as info:
            eng.ingest({"vector": np.eye(4, dtype=np.float32)[:2], "valid_from": ["2024-01-01"] * 2,
                        "tenant": ["acme"] * 2, "stem_id": ["a", stem], "version": ["v7", "v9"]}, where=acme)
        assert info.value.rule == "outside where"
    after = eng.columns()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)
    # inside the filter, as without it; a supersede's rows inherit the tenant, and pass
    assert eng.retract([0], where=acme).tolist() == [0]
    assert eng.deprecate([2], where=acme).tolist() == [2]
    new = eng.supersede("a", {"vector": [[0, 0, 1, 0]]}, "2025-01-01", version="v3", where=acme)
    assert eng.get(new).column("tenant").to_pylist() == ["acme"]
    assert eng.ingest({"vector": [[0, 1, 0, 0]], "valid_from": ["2024-01-01"], "tenant": ["acme"]}, where=acme).tolist() == [7]
    assert eng.ingest({"vector": [[0, 1, 0, 0]] * 2, "valid_from": ["2024-01-01"] * 2, "tenant": ["acme"] * 2,
                       "stem_id": ["a", "new"], "version": ["v9", "v1"]}, where=acme).tolist() == [8, 9]
    assert eng.count(acme) == 7 and eng.count({"tenant": "globex"}) == 3


def test_a_refused_batch_leaves_no_column_behind():
    """A batch that adds a column and is then refused (a duplicate id, found by the core
    after the metadata went in) leaves the store's columns as they were; a later column
    takes the freed index, and filters read it, not the refused one's values."""
    eng = ce.Engine(dim=2)
    eng.ingest({"vector": [[1, 0]], "valid_from": ["2024-01-01"], "id": [7], "tenant": ["a"]})
    with pytest.raises(SchemaError, match="duplicate id"):
        eng.ingest({"vector": [[0, 1]], "valid_from": ["2024-01-01"], "id": [7], "secret": ["x"]})
    assert eng.metadata == {"tenant": "string"} and len(eng) == 1
    with pytest.raises(QueryError, match="unknown field"):
        eng.search([0, 1], 5, mode="all", where={"secret": "x"})
    eng.ingest({"vector": [[0, 1]], "valid_from": ["2024-01-01"], "id": [8], "other": ["x"]})
    assert eng.metadata == {"tenant": "string", "other": "string"}
    assert eng.search([0, 1], 5, mode="all", where={"other": "x"}).column("id").to_pylist() == [8]
    assert eng.get([7, 8]).column("other").to_pylist() == [None, "x"]
