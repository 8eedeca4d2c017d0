"""A batch stored in valid_from order (Engine.ingest's ``order``; docs/storage.md).

With ``order="valid_from"`` (or ``"auto"``, the default, for a batch of at least 4,096
rows) a batch whose valid_from is out of order is stored in valid_from order, so that the
items in force at one time lie together. Nothing but the storage order and the automatic
ids may change: automatic ids number the rows as stored (so they stay the row numbers and
cost nothing), given ids go with their rows. Every item's columns, vector, strings and
history, every answer (with each id read as the same row's id), the log's replay and the
saved store are compared here with the same batch stored as given (``order="input"``).
Given ids of a reordered batch are no longer the rows: the store keeps them in arrays
while they stay dense (IdMap), else in a hash map; lookups are checked in every mode.
"""
import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine import _state
from chrono_engine.errors import NotFoundError, SchemaError
from chrono_engine.synthetic import make_corpus, times_for_selectivity

N, DIM = 6000, 24


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(N, DIM, clusters=24, seed=11)


@pytest.fixture(scope="module")
def pair(corpus):
    """The same batch stored as given and by valid_from (the default for this size)."""
    data = corpus.to_dict()
    data["content"] = np.array([f"item {i} \u00e9" for i in range(N)], dtype=object)
    a, b = ce.Engine(DIM, threads=1), ce.Engine(DIM, threads=1)
    ia, ib = a.ingest(data, order="input"), b.ingest(data)
    return a, b, ia, ib


def _a_ids(ia, ib):
    """b's id -> a's id of the same input row (b's ids are 0..N-1, a permutation)."""
    m = np.empty(len(ib), np.uint64)
    m[ib] = ia
    return m


def _in_a_ids(table, m):
    """A result table of b with each id read as a's id of the same row."""
    i = table.schema.get_field_index("id")
    return table.set_column(i, table.schema.field(i), pa.array(m[table.column("id").to_numpy()], pa.uint64()))


def _named(e, cols):
    """Columns with the stem and fact-type codes as names: codes are numbered in the order
    the store first saw the names, which is its row order."""
    cols = dict(cols)
    cols["stem"] = np.array(list(e.stems) + [None], dtype=object)[cols["stem"]]
    cols["fact_type"] = np.array(e.fact_types, dtype=object)[cols["fact_type"]]
    return cols


def _same_items(a, b, ids, bids=None, now=()):
    """a's items ``ids`` and b's ``bids`` (default the same ids) hold the same rows but for
    their ids; ``now``: columns that record the wall clock of a write (different in a and b)."""
    bids = ids if bids is None else bids
    ca, cb = _named(a, a.columns(ids)), _named(b, b.columns(bids))
    assert ca.keys() == cb.keys()
    np.testing.assert_array_equal(ca.pop("id"), ids)
    np.testing.assert_array_equal(cb.pop("id"), bids)
    for k in ca:
        if k not in now:
            np.testing.assert_array_equal(ca[k], cb[k], err_msg=k)
    np.testing.assert_array_equal(a.vectors(ids), b.vectors(bids))
    if not now:
        assert a.get(ids).drop_columns(["id"]).equals(b.get(bids).drop_columns(["id"]))


def test_ids_number_the_stored_rows_in_valid_from_order(corpus, pair):
    a, b, ia, ib = pair
    np.testing.assert_array_equal(ia, np.arange(N, dtype=np.uint64))
    assert not np.all(np.diff(corpus.valid_from) >= 0)  # the input is out of order
    stored = b.columns()
    assert np.all(np.diff(stored["valid_from"]) >= 0)
    # the stored rows are the input's by valid_from, ties in input order; automatic ids
    # number them as stored, and ingest returns each input row's id beside it
    perm = np.argsort(corpus.valid_from, kind="stable")
    np.testing.assert_array_equal(stored["id"], np.arange(N))
    np.testing.assert_array_equal(ib[perm], np.arange(N))
    np.testing.assert_array_equal(stored["valid_from"], corpus.valid_from[perm])
    np.testing.assert_array_equal(a.columns()["id"], ia)
    assert a.stats()["id_map"] == b.stats()["id_map"] == "identity"
    assert b.memory()["metadata"] == a.memory()["metadata"]  # no id map: nothing to pay
    _same_items(a, b, ia, ib)
    rng = np.random.default_rng(3)
    pick = rng.permutation(N)[:500]
    _same_items(a, b, ia[pick], ib[pick])
    np.testing.assert_array_equal(b.rows_of(stored["id"]), np.arange(N))
    assert sorted(b.stems) == sorted(a.stems) and sorted(b.fact_types) == sorted(a.fact_types)
    m = _a_ids(ia, ib)
    for stem in a.stems[:40]:
        assert a.history(stem).equals(_in_a_ids(b.history(stem), m))


def test_every_answer_is_the_same(corpus, pair):
    a, b, ia, ib = pair
    m = _a_ids(ia, ib)
    q = corpus.queries(24, seed=5)
    for sel in (0.02, 0.3):
        t = times_for_selectivity(corpus, sel, 24, seed=6)
        for mode in ("as_of", "latest", "all"):
            for exact in (True, False):
                ra = a.search_batch(q, 10, mode=mode, as_of=t, exact=exact)
                rb = _in_a_ids(b.search_batch(q, 10, mode=mode, as_of=t, exact=exact), m)
                if exact:
                    assert ra.equals(rb), (sel, mode)
                else:  # an approximate plan may walk the graph, built in another order
                    cert = np.asarray(ra.column("certified")) & np.asarray(rb.column("certified"))
                    qa, qb = np.asarray(ra.column("query")), np.asarray(rb.column("query"))
                    for i in np.unique(qa[cert]):
                        assert ra.filter(pa.array(qa == i)).equals(rb.filter(pa.array(qb == i)))
        for i in range(6):  # lone calls (the native one-call path)
            kw = dict(as_of=int(t[i]), known_at=int(t[i]) + 10**12)
            assert a.search(q[i], 5, exact=True, **kw).equals(_in_a_ids(b.search(q[i], 5, exact=True, **kw), m))
        w = (int(t[0]), int(t[0]) + 86_400_000_000 * 30)
        assert a.search_batch(q, 7, window=w, exact=True).equals(_in_a_ids(b.search_batch(q, 7, window=w, exact=True), m))
        np.testing.assert_array_equal(a.validity(int(t[0]), ia), b.validity(int(t[0]), ib))
        assert a.count_valid_at(int(t[0])) == b.count_valid_at(int(t[0]))


def test_later_writes_continue_the_ids_and_lifecycle_events_find_their_rows(corpus):
    data = corpus.to_dict()
    a, b = ce.Engine(DIM, threads=1), ce.Engine(DIM, threads=1)
    ia = a.ingest(data, order="input")
    ib = b.ingest(data, order="auto")
    one = [{"vector": np.ones(DIM), "valid_from": "2021-05-01", "stem_id": "new", "version": "v1"}]
    assert a.ingest(one).tolist() == b.ingest(one).tolist() == [N]
    victims = [5, 17]  # input rows
    a.retract(ia[victims], at="2030-01-01")
    b.retract(ib[victims], at="2030-01-01")
    for e in (a, b):
        e.supersede("new", [{"vector": np.full(DIM, 0.5), "valid_from": "2022-01-01"}], "2022-01-01", version="v2")
    _same_items(a, b, ia, ib)
    _same_items(a, b, np.arange(N, N + 2, dtype=np.uint64), now=("ingested_at", "amended_at"))
    q = corpus.queries(8, seed=9)
    m = _a_ids(np.append(ia, [N, N + 1]).astype(np.uint64), np.append(ib, [N, N + 1]).astype(np.uint64))
    assert a.search_batch(q, 10, exact=True, as_of="2024-01-01").equals(
        _in_a_ids(b.search_batch(q, 10, exact=True, as_of="2024-01-01"), m))


def test_given_ids_move_with_their_rows_and_a_refusal_names_the_callers_row(corpus):
    data = corpus.to_dict()
    rng = np.random.default_rng(1)
    ids = rng.permutation(np.arange(10, 10 + 3 * N, 3, dtype=np.uint64))  # dense enough for arrays
    data["id"] = ids
    e = ce.Engine(DIM, threads=1)
    np.testing.assert_array_equal(e.ingest(data, order="auto"), ids)
    assert e.stats()["id_map"] == "dense"
    np.testing.assert_array_equal(e.columns(ids)["valid_from"], corpus.valid_from)
    # a second batch reusing one of those ids: refused, naming the row of the batch as given
    more = make_corpus(N, DIM, clusters=24, seed=12).to_dict()
    more["id"] = np.arange(10**6, 10**6 + N, dtype=np.uint64)
    more["id"][4321] = ids[7]
    with pytest.raises(SchemaError) as err:
        e.ingest(more, order="valid_from")
    assert err.value.row == 4321 and err.value.column == "id" and "duplicate id" in str(err.value)
    assert len(e) == N  # nothing was written
    np.testing.assert_array_equal(e.ingest(make_corpus(5, DIM, seed=13).to_dict()), 10 + 3 * N - 3 + 1 + np.arange(5))


def test_the_id_map_stays_right_from_identity_to_dense_to_hash():
    e = ce.Engine(4, threads=1)
    rng = np.random.default_rng(2)

    def rows(n, ids=None):
        d = {"vector": rng.normal(size=(n, 4)), "valid_from": rng.integers(0, 10**15, n).astype("datetime64[us]")}
        if ids is not None:
            d["id"] = np.asarray(ids, dtype=np.uint64)
        return d
    known = list(e.ingest(rows(50), order="valid_from"))  # automatic ids number the stored rows
    assert e.stats()["id_map"] == "identity" and sorted(known) == list(range(50))
    np.testing.assert_array_equal(e.columns()["id"], np.arange(50))
    known += list(e.ingest(rows(30, np.arange(50, 80)), order="valid_from"))  # given in input order, stored by time
    assert e.stats()["id_map"] == "dense"
    known += list(e.ingest(rows(3, [1000, 90, 500])))  # still below 2 * rows + 2^16
    assert e.stats()["id_map"] == "dense"
    known += list(e.ingest(rows(2, [2**63, 2**64 - 2])))  # far beyond: a hash map
    assert e.stats()["id_map"] == "hash"
    known += list(e.ingest(rows(1)))  # the last automatic id
    assert known[-1] == 2**64 - 1
    known = np.array(known, dtype=np.uint64)
    np.testing.assert_array_equal(e.columns(known)["id"], known)
    assert sorted(e.rows_of(known).tolist()) == list(range(len(known)))
    absent = np.array([80, 89, 999, 2**63 + 1, 2**64 - 3], dtype=np.uint64)
    assert not e.contains(absent).any()
    with pytest.raises(NotFoundError):
        e.rows_of(absent[:1])
    with pytest.raises(SchemaError, match="automatic ids exhausted"):
        e.ingest(rows(5), order="valid_from")
    assert len(e) == len(known)


def test_a_batch_larger_than_the_slack_keeps_its_ids_in_arrays():
    # the first rows stored carry ids far beyond their row numbers: the map stays dense
    # as long as every id is below 2 x the rows once the batch is in (plus 2^16)
    n = 70_000
    rng = np.random.default_rng(4)
    e = ce.Engine(2, M=4, ef_construction=16, threads=2)
    vf = rng.integers(0, 10**15, n)
    vf[0] = 10**15  # the first input row is stored last, the last input row...
    vf[-1] = 0      # ... first, with id n - 1
    ids = e.ingest({"vector": rng.normal(size=(n, 2)), "valid_from": vf.astype("datetime64[us]"),
                    "id": np.arange(n, dtype=np.uint64)}, order="valid_from")
    np.testing.assert_array_equal(ids, np.arange(n))
    assert e.stats()["id_map"] == "dense"
    assert e.rows_of([n - 1, 0]).tolist() == [0, n - 1]
    np.testing.assert_array_equal(e.columns(ids)["valid_from"], vf)


@pytest.mark.parametrize("fsync,given", [("call", False), ("off", False), ("call", True)])
def test_the_log_and_the_saved_store_keep_the_stored_order(corpus, tmp_path, fsync, given):
    data = corpus.to_dict()
    if given:  # ids that are not the rows: the dense id map, replayed and saved
        data["id"] = np.arange(7, N + 7, dtype=np.uint64)
    path = tmp_path / "s"
    ce.Engine.create(path, DIM, threads=1).close()
    eng = ce.Engine.open(path, fsync=fsync, threads=1)
    ids = eng.ingest(data, order="auto")
    if given:
        np.testing.assert_array_equal(ids, data["id"])
    else:
        np.testing.assert_array_equal(ids[np.argsort(corpus.valid_from, kind="stable")], np.arange(N))
    replayed = ce.Engine.open(path, read_only=True)  # from the log alone
    q = corpus.queries(10, seed=4)
    t = times_for_selectivity(corpus, 0.05, 10, seed=4)
    want = eng.search_batch(q, 10, as_of=t, exact=True)
    for other in (replayed,):
        for k, v in eng.columns().items():
            np.testing.assert_array_equal(other.columns()[k], v, err_msg=k)
        assert other.search_batch(q, 10, as_of=t, exact=True).equals(want)
    eng.save()
    eng.close()
    reopened = ce.Engine.open(path, read_only=True)
    assert reopened.stats()["id_map"] == ("dense" if given else "identity")
    np.testing.assert_array_equal(reopened.columns()["id"], replayed.columns()["id"])
    assert reopened.search_batch(q, 10, as_of=t, exact=True).equals(want)


def test_order_is_checked_and_small_or_sorted_batches_stay_as_given(corpus):
    e = ce.Engine(DIM, threads=1)
    for bad in ("time", None, 1, ["auto"], np.array(["auto"])):
        with pytest.raises(SchemaError, match="order must be one of"):
            e.ingest(corpus.to_dict(), order=bad)
    assert len(e) == 0
    e.ingest(corpus.to_dict())  # the default, "auto": a batch this large, out of order, by valid_from
    assert e.stats()["id_map"] == "identity"
    np.testing.assert_array_equal(e.columns()["valid_from"], np.sort(corpus.valid_from))
    given = ce.Engine(DIM, threads=1)
    given.ingest(corpus.to_dict(), order="input")
    np.testing.assert_array_equal(given.columns()["valid_from"], corpus.valid_from)
    small = make_corpus(_state.CLUSTER_MIN - 1, DIM, seed=3).to_dict()
    s = ce.Engine(DIM, threads=1)
    s.ingest(small, order="auto")  # below CLUSTER_MIN rows: as given
    assert s.stats()["id_map"] == "identity"
    np.testing.assert_array_equal(s.columns()["valid_from"], small["valid_from"].astype(np.int64))
    f = ce.Engine(DIM, threads=1)
    f.ingest(make_corpus(50, DIM, seed=3).to_dict(), order="valid_from")  # any size
    assert np.all(np.diff(f.columns()["valid_from"]) >= 0) and f.stats()["id_map"] == "identity"
    g = ce.Engine(DIM, threads=1)
    g.ingest(corpus.in_time_order().to_dict(), order="valid_from")  # already in order: as given
    assert g.stats()["id_map"] == "identity"
