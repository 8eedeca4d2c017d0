"""Search internals against their Python paths (tests/_internal.py): the hits' strings
gathered natively from the string table's buffers, the lone search's native table
(``Store.search_one``: planner, metadata, strings, citations and the Arrow batch in one
call) against ``core_search`` + ``result_table``, its deferrals to the Python path, and
latest mode's late rows through an in-place edit of ``valid_to`` (as only a log written
before amendments makes one)."""
import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from _internal import core, state
from chrono_engine._time import OPEN_END
from chrono_engine.synthetic import US_PER_DAY
from test_search import assert_same_topk, check_against_reference, core_cols


def test_hit_strings_by_batch_match_column_takes():
    """The hits' strings gathered natively from the string table's buffers (the search
    path) equal the column-by-column take, for rows in one part, across parts, repeated and
    unordered, with null titles, and follow a write (a new table) instead of a stale snapshot."""
    from chrono_engine._state import _string_array, strings_at
    eng = ce.Engine(2)
    sizes = [5, 3, 1, 7, 2]
    n = 0
    for s in sizes:  # parts of the string table: merged like a binary counter
        eng.ingest([{"vector": [1, i], "valid_from": "2024-01-01", "content": f"c{n + i}" * (n + i),
                     "title": None if (n + i) % 4 == 0 else f"t{n + i}", "version": f"{n + i}.0"} for i in range(s)])
        n += s
    st = state(eng)
    assert st.strings().column("content").num_chunks > 1
    rng = np.random.default_rng(3)
    cols = ("title", "version", "content")

    def got_of(rows):
        return dict(zip(cols, (_string_array(*b).to_pylist() for b in st.hit_string_buffers(rows, cols))))
    for rows in ([0], [n - 1], [4, 0, 2], list(range(n))[::-1], rng.integers(0, n, 40).tolist(), [6, 6, 6], []):
        rows = np.asarray(rows, np.int64)
        assert got_of(rows) == strings_at(st.strings(), rows, cols).to_pydict()
    eng.ingest([{"vector": [0, 1], "valid_from": "2024-01-01", "content": "late", "title": "L", "version": "9.0"}])
    assert got_of(np.array([n], np.int64)) == {"title": ["L"], "version": ["9.0"], "content": ["late"]}
    with pytest.raises(IndexError, match="row"):
        st.hit_string_buffers(np.array([n + 1], np.int64), cols)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_native_result_table_equals_the_arrow_path(lang):
    """A lone search's table built natively (``result_table`` below ``_NATIVE_MAX`` hits)
    equals the one pyarrow builds from :func:`result_columns`: null titles, stems and open
    ends, a string table in several parts, amended valid_to; and ``Engine.search`` returns
    it without the query column."""
    from chrono_engine import search as S
    rng = np.random.default_rng(5)
    eng = ce.Engine(8, decay=ce.DecayPolicy(default=ce.Exponential(half_life=30)))
    rows = []
    for i in range(300):
        rows.append({"vector": rng.standard_normal(8).astype(np.float32), "valid_from": f"2024-{1 + i % 12:02d}-01",
                     "valid_to": None if i % 3 else f"2025-{1 + i % 12:02d}-01", "title": None if i % 5 == 0 else f"T{i}",
                     "version": None if i % 7 == 0 else f"{i % 4}.{i % 3}", "stem_id": None if i % 2 else f"s{i % 40}",
                     "content": "内容" * (i % 4)})
    for a, b in ((0, 100), (100, 150), (150, 300)):
        eng.ingest(rows[a:b])
    eng.retract(ids=[3])
    st = state(eng)
    S.results._NATIVE_SCHEMAS.clear()  # the first tables import their schema, the later ones reuse it
    for i in range(20):
        opts = ce.SearchOptions(mode="as_of", as_of=f"2024-{1 + i % 12:02d}-15", lang=lang, arbitrate=i % 3 > 0)
        raw = rng.standard_normal((1 + i % 3, 8)).astype(np.float32)
        out, t = S.core_search(st, eng.prepare_batch(raw, 10, opts), 1)
        native = S.result_table(st, out, False, lang, t, S.MODES[opts.mode])
        assert native.equals(S.to_table(S.result_columns(st, out, False, lang, t, S.MODES[opts.mode])))
        alone = eng.search(raw[0], 10, options=opts)
        one, t1 = S.core_search(st, eng.prepare_batch(raw[:1], 10, opts), 1)
        assert alone.equals(S.to_table(S.result_columns(st, one, False, lang, t1, S.MODES[opts.mode]))
                            .drop_columns(["query"]))


def _python_lone(eng, vector, k, opts):
    """A lone search's table as the Python path makes it (core_search, then result_table)."""
    from chrono_engine import search as S
    st = state(eng)
    call = eng.prepare_search(vector, k, opts)
    o = call.options
    out, t = S.core_search(st, call, 1)
    return S.result_table(st, out, False, o.lang, t, S.MODES[o.mode], with_query=False)


def _lone_rows(n, dim, rng):
    rows = []
    for i in range(n):
        rows.append({"vector": rng.standard_normal(dim).astype(np.float32),
                     "valid_from": int((i - 40) * 37 * US_PER_DAY + i * 1_000_003),
                     "valid_to": None if i % 3 else int((i - 40) * 37 * US_PER_DAY + 400 * US_PER_DAY),
                     "title": None if i % 5 == 0 else ("政策" if i % 2 else "T") + str(i),
                     "version": None if i % 7 == 0 else ["2", "v01.002", "V1.2.3.4", "1.2.3.0", "v65535.0.9"][i % 5],
                     "stem_id": None if i % 2 else f"s{i % 25}", "content": "内容" * (i % 4) if i % 6 else None,
                     "fact_type": ["policy", "news"][i % 2]})
    return rows


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_search_one_equals_the_python_path_under_every_option(metric):
    """``Store.search_one`` (one native call: the planner, the hits' metadata as known at
    ``known_at``, strings, stems, citations and the Arrow batch) gives, column for column,
    the table the Python path (``core_search`` then ``result_table``) gives: every mode,
    both fusions, the out-of-force policies, arbitration, fact types, exact, both
    languages, a string table in parts, after a retraction, a deprecation and a supersede
    (valid_to as known then), and again after a write (a new string table)."""
    rng = np.random.default_rng(11)
    pol = ce.DecayPolicy({"policy": ce.Exponential(half_life=60), "news": ce.Gaussian(sigma=90)})
    eng = ce.Engine(8, metric=metric, decay=pol)
    rows = _lone_rows(240, 8, rng)
    for a, b in ((0, 90), (90, 91), (91, 240)):
        eng.ingest(rows[a:b])
    eng.retract(ids=[4, 9], at="2031-01-01")
    eng.deprecate(ids=[12], at="2031-02-01")
    eng.supersede("s2", [{"vector": rng.standard_normal(8).astype(np.float32), "title": "new"}], "2026-05-01",
                  version="v9")
    from chrono_engine import search as S
    calls = []
    real = S.lone_table

    def spy(*a, **kw):
        got = real(*a, **kw)
        calls.append(got is not None)
        return got
    S.lone_table = spy
    try:
        for i in range(160):
            opts = ce.SearchOptions(
                mode=["as_of", "latest", "window", "all"][i % 4],
                as_of=int((i * 53 - 40) * 37 * US_PER_DAY // 3),  # not "now": both paths must ask the same
                known_at=None if i % 3 else ["2030-06-01", "2031-01-15", "2032-01-01"][i % 9 // 3],
                window=(f"{2022 + i % 5}-01-01", None if i % 2 else f"{2028 + i % 3}-06-01") if i % 4 == 2 else None,
                fusion="linear" if i % 5 == 3 else "product", alpha=0.6, tau=0.05 if i % 6 == 0 else 0.0,
                deprecated=["penalize", "exclude", "include"][i % 3], future=["exclude", "penalize", "include"][i % 7 % 3],
                arbitrate=i % 4 != 1, fact_types=["news"] if i % 10 == 7 else None, exact=i % 9 == 4,
                lang="zh" if i % 2 else "en")
            v = rng.standard_normal(8).astype(np.float32)
            want = _python_lone(eng, v, 1 + i % 12, opts)
            got = eng.search(v, 1 + i % 12, options=opts)
            assert got.schema.equals(want.schema)
            assert got.equals(want), (i, got.to_pylist()[:2], want.to_pylist()[:2])
            if i == 80:
                eng.ingest(_lone_rows(30, 8, rng))  # a new string table: viewed again
        assert all(calls) and len(calls) == 160  # every call took the native path
    finally:
        S.lone_table = real


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_search_one_defers_an_overflow_to_the_python_path(metric):
    """A hit whose similarity overflows float32 makes ``search_one`` answer None, and the
    search raises the Python path's QueryError naming it."""
    from chrono_engine import search as S
    eng = ce.Engine(4, metric=metric)
    eng.ingest([{"vector": [3e19, 3e19, 0, 0], "valid_from": "2024-01-01"},
                {"vector": [1, 0, 0, 0], "valid_from": "2024-01-01"}])
    st = state(eng)
    call = eng.prepare_search(np.array([3e19, 3e19, 0, 0], np.float32) if metric == "ip"
                              else np.array([-3e19, -3e19, 0, 0], np.float32), 2)
    assert S.lone_table(st, call) is None
    with pytest.raises(ce.errors.QueryError, match="overflows float32"):
        eng.search(call.queries, 2)


def test_search_one_defers_rows_its_strings_do_not_hold():
    """Strings viewed before a write (a write that raced the search) do not hold the new
    rows: ``search_one`` answers None (the Python path answers) instead of reading past
    them; damaged string offsets are an error, not a read out of bounds."""
    from chrono_engine import _core, search as S
    rng = np.random.default_rng(2)
    eng = ce.Engine(4)
    eng.ingest([{"vector": rng.standard_normal(4), "valid_from": "2024-01-01", "title": "a"}])
    old = state(eng).hit_strings()
    assert old.rows == 1
    eng.ingest([{"vector": [1, 0, 0, 0], "valid_from": "2024-01-01", "title": "b"}])
    params = _core.SearchParams(mode=S.MODES["all"], fusion=0, alpha=0.5, tau=0.0, deprecated=0, future=1,
                                deprecation_penalty=0.1, arbitrate=False, type_mask=None, k=2, exact=True, ef=40,
                                ef_max=1000, scan_limit=0, seed_ef=40, seed_min=8, scan=0)
    args = (np.array([1, 0, 0, 0], np.float32), 0, OPEN_END - 1, 0, 0, params)
    assert core(eng).search_one(*args, old, state(eng).stems, False, True) is None
    got = core(eng).search_one(*args, state(eng).hit_strings(), state(eng).stems, False, True)
    assert pa.RecordBatch._import_from_c_capsule(*got).column("title").to_pylist() == ["b", "a"]
    # hostile views: refused when made, or when a damaged offset is read
    data = np.frombuffer(b"abcdef", np.uint8)
    good = (np.array([0, 3, 6], np.int32), data, None, 0)
    starts = np.array([0, 2], np.int64)
    for cols, st, what in (([[good]] * 2, starts, "title, version, content"),
                           ([[good]] * 3, np.array([1, 2], np.int64), "ascend"),
                           ([[good]] * 3, np.array([0, 3], np.int64), "offsets"),
                           ([[(good[0], data, np.zeros(0, np.uint8), 0)]] * 3, starts, "bitmap"),
                           ([[good[:3]]] * 3, starts, "each part is"), ([[good, good]] * 3, starts, "one tuple")):
        with pytest.raises(ValueError, match=what):
            sc = _core.StringColumns(cols, st)
            core(eng).search_one(*args, sc, state(eng).stems, False, True)
    bad = _core.StringColumns([[(np.array([0, 3, 99], np.int32), data, None, 0)]] * 3, starts)
    with pytest.raises(ValueError, match="damaged"):
        core(eng).search_one(*args, bad, state(eng).stems, False, True)


def _late_corpus(n, seed):
    """A corpus where a tenth of the closed rows were recorded after their validity ended
    (observed_at > valid_to: old facts ingested late), and another tenth during it (an
    edit of valid_to can make those late)."""
    from chrono_engine.synthetic import make_corpus
    c = make_corpus(n, 32, clusters=24, seed=seed)
    rng = np.random.default_rng(seed)
    closed = rng.permutation(np.flatnonzero(c.valid_to != OPEN_END))
    late, during = np.sort(closed[:len(closed) // 10]), np.sort(closed[len(closed) // 10:len(closed) // 5])
    c.observed_at[late] = c.valid_to[late] + rng.integers(1, 400, len(late)) * US_PER_DAY
    c.observed_at[during] = c.valid_from[during] + (c.valid_to[during] - c.valid_from[during]) // 2
    for r in (late, during):
        c.ingested_at[r] = np.maximum(c.ingested_at[r], c.observed_at[r])
    return c, late, during


@pytest.mark.parametrize("scan", ["auto", "similarity", "bounds"])
@pytest.mark.parametrize("group", [1, 32])
def test_latest_rows_recorded_after_they_ended(scan, group):
    """Latest mode's rows out of force (stage 1 of the certified plan) include rows that
    ended before T but were observed after it (their decay is full: the age is clamped),
    which the planner reads from the freshness index's late lists rather than from every
    row observed after T: in the static lists, in the rows appended since (the delta), and
    after an edit of valid_to that makes a row late. Against the reference, with queries
    aimed at such rows (a penalty of 0.9 and no arbitration keep them in the top-k)."""
    from conftest import policy_for
    c, late, during = _late_corpus(6000, seed=31)
    eng = ce.Engine(32, decay=policy_for(c), threads=2, scan=scan, group=group)
    d = c.to_dict()
    first = 5200  # > 4,096 rows: the first write builds the static lists; the rest stay in the delta
    # as given: the rows (and ids) are the corpus's, which the reference and ``late`` index
    eng.ingest({k: (v[:first] if isinstance(v, np.ndarray) else v) for k, v in d.items()}, order="input")
    eng.ingest({k: (v[first:] if isinstance(v, np.ndarray) else v) for k, v in d.items()}, order="input")
    rng = np.random.default_rng(3)

    def check(among):
        cols, vecs = core_cols(eng), eng.vectors()
        aim = rng.choice(among, 24, replace=False)
        # T between the row's end and its observation: out of force, observed after T
        t = cols["valid_to"][aim] + (cols["observed_at"][aim] - cols["valid_to"][aim]) // 2
        q = vecs[aim] + 0.05 * rng.standard_normal(vecs[aim].shape).astype(np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        got, gs, exp, res = check_against_reference(eng, c, q, t, mode="latest", exact=True,
                                                    deprecation_penalty=0.9, arbitrate=False)
        assert res.column("certified").to_numpy().all()
        assert_same_topk(got, gs, exp)
        # the aimed rows are found: the test reaches the late rows
        hit = sum(int(cols["id"][a]) in set(g.tolist()) for a, g in zip(aim, got))
        assert hit >= len(aim) // 2, hit

    assert (late < first).any() and (late >= first).any()
    check(late[late < first])  # in the static lists
    check(late[late >= first])  # in the delta
    # an edit of valid_to (a log written before amendments existed) that makes rows late
    cols = core_cols(eng)
    rows = during[during < first]
    assert (cols["valid_to"][rows] > cols["observed_at"][rows]).all()
    core(eng).update(rows.astype(np.uint32),
                           valid_to=cols["valid_from"][rows] + (cols["observed_at"][rows] - cols["valid_from"][rows]) // 2)
    check(rows)
