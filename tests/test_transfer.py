"""Rows moved between engines with their whole history (chrono_engine/_transfer.py).

A source engine with random rows and lifecycle events is split by stem into parts, each
exported and imported into a fresh engine (through pickle, as between processes): every
search mode, with and without known_at, exact and default plans, arbitration on and off,
with and without a filter, answers on the union of the parts what it answers on the
source; get, history and columns of the moved rows are the source's at every known_at.
An import into a store is seen by a reopen, a follower and the next checkpoint; refused
imports change nothing; an empty selection moves nothing."""
from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine._transfer import AMEND_SCHEMA, Transfer, export_rows, import_rows
from chrono_engine.errors import ConfigError, NotFoundError, QueryError, SchemaError, StorageError

DIM = 8
DAY = 86_400_000_000
HOUR = 3_600_000_000
T0 = 1_577_836_800_000_000            # 2020-01-01: valid times are days after it
TX0 = T0 + 400 * DAY                  # transaction times: hours after it, one per event
DECAY = ce.DecayPolicy({"news": ce.Exponential(half_life=30), "policy": ce.Exponential(half_life=400),
                        "general": ce.Exponential(half_life=100)}, default=None)
KINDS = {"tenant": "string", "n": "int64", "w": "float64", "flag": "bool", "at": "timestamp",
         "tags": "list<string>"}
MODES = ("latest", "as_of", "all", "window")
OPEN_END = np.iinfo(np.int64).max


def _engine(**kw):
    return ce.Engine(dim=DIM, decay=DECAY, **kw)


def _batch(rng, n, tx, stems, ids=None):
    """n random rows known from tx: stems drawn from ``stems`` (None: no stem), metadata of
    every kind with nulls."""
    stem = [stems[i] for i in rng.integers(0, len(stems), n)]
    cols = {
        "vector": rng.normal(size=(n, DIM)).astype(np.float32),
        "valid_from": T0 + rng.integers(0, 100, n) * DAY,
        "observed_at": T0 + rng.integers(0, 100, n) * DAY,
        "ingested_at": np.full(n, tx, np.int64),
        "reliability": rng.uniform(0.2, 1.0, n).astype(np.float32),
        "fact_type": [["news", "policy"][i] for i in rng.integers(0, 2, n)],
        "stem_id": stem,
        "version": [None if s is None else "v1" for s in stem],
        "title": [f"t{i}" for i in rng.integers(0, 1000, n)],
        "content": [None if i % 3 == 0 else f"c{i}" for i in range(n)],
        "source": [["wiki", None, "mail"][i % 3] for i in range(n)],
        "tenant": [["acme", "globex", None][i] for i in rng.integers(0, 3, n)],
        "n": pa.array([None if i % 4 == 0 else int(i) for i in rng.integers(-50, 50, n)], pa.int64()),
        "w": pa.array([None if i % 5 == 0 else float(i) / 7 for i in range(n)], pa.float64()),
        "flag": pa.array([None if i % 6 == 0 else bool(i % 2) for i in range(n)], pa.bool_()),
        "at": pa.array([None if i % 3 == 1 else T0 + i * HOUR for i in range(n)], pa.timestamp("us", tz="UTC")),
        "tags": pa.array([None if i % 4 == 1 else [f"g{j}" for j in range(i % 3)] for i in range(n)],
                         pa.list_(pa.string())),
    }
    vf = cols["valid_from"]
    ends = vf + rng.integers(5, 300, n) * DAY
    cols["valid_to"] = np.where(rng.random(n) < 0.4, ends, OPEN_END)
    cols["deprecated"] = rng.random(n) < 0.05
    if ids is not None:
        cols["id"] = np.asarray(ids, np.uint64)
    return cols


@pytest.fixture(scope="module")
def source():
    """(engine, transaction times of its events) after several ingests and random
    supersedes, retracts and deprecations."""
    rng = np.random.default_rng(7)
    eng = _engine()
    stems = [f"S{i}" for i in range(12)] + [None] * 4
    tx = TX0
    txs = []
    for b in range(3):
        ids = None if b != 1 else 10_000 + 3 * np.arange(60)  # given, sparse ids
        eng.ingest(_batch(rng, 60, tx, stems, ids))
        txs.append(tx)
        tx += HOUR
    version = {s: 1 for s in stems if s}
    eff = {s: T0 + 110 * DAY for s in stems if s}
    for step in range(40):
        kind = rng.choice(["supersede", "retract", "deprecate"], p=[0.4, 0.3, 0.3])
        all_ids = eng.columns()["id"]
        if kind == "supersede":
            s = stems[int(rng.integers(0, 12))]
            eff[s] += int(rng.integers(1, 30)) * DAY
            version[s] += 1
            rows = [{"vector": rng.normal(size=DIM).astype(np.float32), "ingested_at": tx,
                     "title": f"{s} v{version[s]}", "tenant": "acme", "tags": ["new"]}
                    for _ in range(int(rng.integers(1, 3)))]
            eng.supersede(s, rows, eff[s], version=f"v{version[s]}", deprecate=bool(rng.random() < 0.8))
        elif kind == "retract":
            cols = eng.columns()
            open_ = all_ids[cols["retracted_at"] == OPEN_END]
            eng.retract([int(rng.choice(open_))], at=tx)
        else:
            i = int(rng.choice(all_ids))
            frm = int(eng.columns([i])["valid_from"][0]) + int(rng.integers(0, 60)) * DAY
            eng.deprecate([i], effective_at=frm, at=tx)
        txs.append(tx)
        tx += HOUR
    return eng, txs


def _groups(eng, n_parts, seed=1):
    """The engine's ids split by stem (stem-less rows at random) into n_parts groups."""
    rng = np.random.default_rng(seed)
    cols = eng.columns()
    part = rng.integers(0, n_parts, len(cols["id"]))
    for code in np.unique(cols["stem"][cols["stem"] >= 0]):
        part[cols["stem"] == code] = rng.integers(0, n_parts)
    return [cols["id"][part == p] for p in range(n_parts)]


def _moved(eng, ids):
    """A fresh engine holding ``ids`` of ``eng``, the payload sent through pickle."""
    payload = pickle.loads(pickle.dumps(export_rows(eng, ids)))
    target = _engine()
    got = import_rows(target, payload)
    assert sorted(got.tolist()) == sorted(np.asarray(ids).tolist())
    return target


@pytest.fixture(scope="module")
def parts(source):
    eng, _ = source
    return [_moved(eng, ids) for ids in _groups(eng, 3)]


def _probes(txs):
    return [None, TX0 - HOUR, txs[2] + 1, txs[len(txs) // 2], txs[-5], txs[-1] + HOUR]


def _answers(eng, q, k, **kw):
    """Per query, the answer as a table without query and rank."""
    res = eng.search_batch(q, k, **kw)
    qcol = res.column("query").to_numpy()
    res = res.drop_columns(["query", "rank"])
    return [res.filter(pa.array(qcol == i)) for i in range(len(q))]


def _merged(tables, k):
    t = pa.concat_tables(tables)
    order = np.lexsort((t.column("id").to_numpy(), -t.column("score").to_numpy()))[:k]
    return t.take(pa.array(order))


def _same_answer(a, b):
    assert a.column("id").to_pylist() == b.column("id").to_pylist()
    np.testing.assert_allclose(a.column("score").to_numpy(), b.column("score").to_numpy(), rtol=1e-6, atol=1e-7)
    for name in a.column_names:
        if name not in ("score", "similarity", "validity"):
            assert a.column(name).to_pylist() == b.column(name).to_pylist(), name
        else:
            np.testing.assert_allclose(a.column(name).to_numpy(), b.column(name).to_numpy(), rtol=1e-6,
                                       atol=1e-7, err_msg=name)


@pytest.mark.parametrize("mode", MODES)
def test_every_search_on_the_parts_equals_the_source(source, parts, mode):
    eng, txs = source
    rng = np.random.default_rng(3)
    q = rng.normal(size=(6, DIM)).astype(np.float32)
    k = 7
    checked = 0
    for known_at in _probes(txs):
        for t in (T0 + 50 * DAY, T0 + 150 * DAY, T0 + 400 * DAY):
            when = {"window": (t - 60 * DAY, t)} if mode == "window" else {"as_of": t}
            for exact in (True, False):
                for arbitrate in (True, False):
                    for where in (None, {"tenant": "acme"}, {"tags": {"$in": ["g1"]}, "n": {"$gt": -20}}):
                        kw = dict(mode=mode, known_at=known_at, exact=exact, arbitrate=arbitrate, where=where,
                                  **when)
                        want = _answers(eng, q, k, **kw)
                        got = [_answers(p, q, k, **kw) for p in parts]
                        for i in range(len(q)):
                            _same_answer(want[i], _merged([g[i] for g in got], k))
                            checked += len(want[i])
    assert checked > 100


def _names(eng, cols):
    """columns() with codes replaced by names (codes are each engine's own)."""
    out = dict(cols)
    out["fact_type"] = np.asarray(eng.fact_types, object)[cols["fact_type"]]
    out["stem"] = eng._state.stem_names(cols["stem"]).to_pylist()
    return out


def _same_rows(a, b, ids, txs):
    for known_at in _probes(txs) + [txs[-1]]:
        assert a.get(ids, known_at=known_at).equals(b.get(ids, known_at=known_at)), known_at
        ca, cb = _names(a, a.columns(ids, known_at=known_at)), _names(b, b.columns(ids, known_at=known_at))
        assert ca.keys() == cb.keys()
        for name in ca:
            assert np.array_equal(np.asarray(ca[name]), np.asarray(cb[name])), (name, known_at)
    assert np.array_equal(a.vectors(ids).view(np.uint32), b.vectors(ids).view(np.uint32))
    assert a.strings(ids).equals(b.strings(ids))


def test_get_history_and_columns_of_moved_rows_equal_the_source(source, parts):
    eng, txs = source
    for part, ids in zip(parts, _groups(eng, 3)):
        _same_rows(eng, part, ids, txs)
        assert part.metadata == eng.metadata
        for stem in part.stems:
            for known_at in _probes(txs):
                try:
                    want = eng.history(stem, known_at=known_at)
                except NotFoundError:
                    with pytest.raises(NotFoundError):
                        part.history(stem, known_at=known_at)
                    continue
                assert want.equals(part.history(stem, known_at=known_at)), (stem, known_at)
    assert sum(len(p) for p in parts) == len(eng)
    assert sorted(s for p in parts for s in p.stems) == sorted(eng.stems)


def test_moved_rows_take_further_events(source, parts):
    """A moved lineage goes on: a supersede after the import closes the moved head."""
    eng, txs = source
    part = _moved(eng, _groups(eng, 3)[0])
    stem = part.stems[0]
    hist = part.history(stem)
    top = max(int(v[1:]) for v in hist.column("version").to_pylist())
    eff = max(hist.column("valid_from").to_pylist()).timestamp() * 1_000_000 + DAY
    part.supersede(stem, [{"vector": np.ones(DIM, np.float32)}], int(eff), version=f"v{top + 1}")
    assert len(part.history(stem)) == len(hist) + 1


def test_import_into_a_store_is_seen_by_reopen_follower_and_checkpoint(source, tmp_path):
    eng, txs = source
    groups = _groups(eng, 2)
    path = tmp_path / "store"
    w = ce.Engine.create(path, dim=DIM, decay=DECAY)
    follower = ce.Engine.follow(path)
    start = w.position[1]
    import_rows(w, pickle.loads(pickle.dumps(export_rows(eng, groups[0]))))
    import_rows(w, export_rows(eng, groups[1]))
    assert w.position[1] == start + 2  # one log record (one commit) per import
    with pytest.raises(StorageError):  # a follower does not write
        import_rows(follower, export_rows(eng, groups[0]))
    follower.refresh()
    assert follower.position == w.position
    ids = eng.columns()["id"]
    _same_rows(eng, w, ids, txs)
    _same_rows(w, follower, ids, txs)
    reopened = ce.Engine.open(path, read_only=True)
    _same_rows(w, reopened, ids, txs)
    q = np.random.default_rng(5).normal(size=(4, DIM)).astype(np.float32)
    for known_at in (None, txs[3]):
        kw = dict(mode="as_of", as_of=T0 + 150 * DAY, known_at=known_at, exact=True)
        want = _answers(eng, q, 5, **kw)
        for other in (w, follower, reopened):
            for a, b in zip(want, _answers(other, q, 5, **kw)):
                _same_answer(a, b)
    w.save()  # the checkpoint holds them
    w.close()
    again = ce.Engine.open(path, read_only=True)
    _same_rows(eng, again, ids, txs)


def _snapshot(eng):
    return len(eng), eng.metadata, {k: v.copy() for k, v in eng.columns().items()}, eng.stems


def _unchanged(eng, before):
    after = _snapshot(eng)
    assert after[:2] == before[:2] and after[3] == before[3]
    assert after[2].keys() == before[2].keys()
    for k in before[2]:
        assert np.array_equal(after[2][k], before[2][k]), k


def _with(p, rows=None, amendments=None, **kw):
    return Transfer(dim=kw.get("dim", p.dim), metric=kw.get("metric", p.metric),
                    rows=p.rows if rows is None else rows,
                    amendments=p.amendments if amendments is None else amendments,
                    metadata=kw.get("metadata", p.metadata), format=kw.get("format", p.format))


def _set(table, name, values):
    i = table.column_names.index(name)
    return table.set_column(i, table.field(i), pa.array(values, table.field(i).type))


def _bad_payloads(eng, p):
    """(payload, error, text in the message) of every kind an import refuses."""
    n = len(p)
    ids = p.rows.column("id").to_numpy()
    vec = p.rows.column("vector").combine_chunks().flatten().to_numpy().reshape(n, DIM).copy()
    tx = p.amendments.column("tx").to_numpy()
    out = [
        ("not a payload", SchemaError, "not a Transfer"),
        (_with(p, dim=DIM + 1), ConfigError, "dim"),
        (_with(p, metric="l2"), ConfigError, "l2"),
        (_with(p, format=2), SchemaError, "format"),
        (_with(p, metadata={**p.metadata, "tenant": "int64"}), SchemaError, "transfer schema"),
        (_with(p, rows=p.rows.drop_columns(["observed_at"])), SchemaError, "transfer schema"),
        (_with(p, rows=_set(p.rows, "id", np.where(np.arange(n) == 1, ids[0], ids))), SchemaError, "id"),
        (_with(p, rows=_set(p.rows, "valid_to", p.rows.column("valid_from").to_numpy())), SchemaError, "valid_to"),
        (_with(p, rows=_set(p.rows, "fact_type", ["bogus"] * n)), SchemaError, "bogus"),
        (_with(p, rows=_set(p.rows, "version", ["not a version"] * n)), SchemaError, "version"),
        (_with(p, rows=_set(p.rows, "reliability", np.full(n, 2.0, np.float32))), SchemaError, "reliability"),
        (_with(p, rows=_set(p.rows, "vector", list(vec * 2))), SchemaError, "unit length"),
        (_with(p, rows=_set(p.rows, "vector", list(np.where(np.arange(n)[:, None] == 2, np.nan, vec)))),
         SchemaError, "vector"),
        (_with(p, amendments=_set(p.amendments, "row", np.full(len(tx), n))), SchemaError, "does not hold"),
        (_with(p, amendments=_set(p.amendments, "tx", np.full(len(tx), TX0 - 10 * DAY))), SchemaError,
         "before the row's ingested_at"),
        (_with(p, amendments=_set(p.amendments, "tx", np.full(len(tx), 2**63 - 1))), SchemaError, "amend_tx"),
        (_with(p, amendments=_set(p.amendments, "valid_to",
                                  np.full(len(tx), T0 - 1000 * DAY))), SchemaError, "valid_to <= valid_from"),
        (_with(p, amendments=pa.concat_tables([p.amendments.slice(0, 1)] * 65)), SchemaError, "more than 64"),
        (_with(p, amendments=p.amendments.cast(pa.schema([(f.name, pa.int64()) for f in AMEND_SCHEMA]))),
         SchemaError, "transfer schema"),
    ]
    return out


@pytest.mark.parametrize("store", [False, True])
def test_refused_imports_change_nothing(source, tmp_path, store):
    eng, txs = source
    groups = _groups(eng, 3)
    target = ce.Engine.create(tmp_path / "s", dim=DIM, decay=DECAY) if store else _engine()
    import_rows(target, export_rows(eng, groups[0]))
    p = export_rows(eng, groups[1])
    assert len(p.amendments), "the group carries events"
    bad = _bad_payloads(eng, p)
    # an id or a stem the target holds; a metadata column of another kind
    held = export_rows(eng, groups[0])
    bad.append((held, QueryError, f"id {int(held.rows.column('id')[0].as_py())}"))
    stem_part = _with(p, rows=_set(p.rows, "id", p.rows.column("id").to_numpy() + 10**9))
    stem0 = next(s for s in held.rows.column("stem_id").to_pylist() if s)
    stem_part = _with(stem_part, rows=_set(stem_part.rows, "stem_id", [stem0] * len(p)))
    bad.append((stem_part, QueryError, f"stem {stem0!r}"))
    other = _engine(metadata={"tenant": "int64"})
    before = _snapshot(target)
    for payload, err, text in bad:
        with pytest.raises(err, match=None) as info:
            import_rows(target, payload)
        assert text in str(info.value), (text, str(info.value))
        _unchanged(target, before)
    with pytest.raises(SchemaError, match="'tenant'") as info:
        import_rows(other, p)
    assert info.value.column == "tenant" and len(other) == 0 and other.metadata == {"tenant": "int64"}
    if store:
        target.close()
        _unchanged(ce.Engine.open(tmp_path / "s", read_only=True), before)
    # the good payload still goes in after all that
    target = ce.Engine.open(tmp_path / "s") if store else target
    import_rows(target, p)
    _same_rows(eng, target, np.concatenate(groups[:2]), txs)


def test_empty_selection_and_payload_are_no_ops(source):
    eng, _ = source
    p = pickle.loads(pickle.dumps(export_rows(eng, np.zeros(0, np.uint64))))
    assert len(p) == 0 and len(p.amendments) == 0 and p.metadata == eng.metadata
    target = _engine()
    before = _snapshot(target)
    assert import_rows(target, p).tolist() == []
    _unchanged(target, before)
    assert import_rows(ce.Engine(dim=DIM), export_rows(ce.Engine(dim=DIM), [])).tolist() == []


def test_declared_columns_move_with_their_names():
    """A declared column a plain ingest would take for a typo (``valid_form``) moves too,
    and a name no store keeps is refused."""
    src = _engine(metadata={"valid_form": "string", "empty": "int64"})
    src.ingest({"vector": np.eye(DIM, dtype=np.float32)[:2], "valid_from": [T0, T0 + DAY],
                "valid_form": ["a", None]})
    p = export_rows(src, src.columns()["id"])
    target = _engine()
    import_rows(target, p)
    assert target.metadata == src.metadata
    assert target.get([0, 1]).equals(src.get([0, 1]))
    bad = _with(p, metadata={"$x" if k == "empty" else k: v for k, v in p.metadata.items()},
                rows=p.rows.rename_columns([("$x" if c == "empty" else c) for c in p.rows.column_names]))
    fresh = _engine()
    with pytest.raises(SchemaError, match=r"\$x"):
        import_rows(fresh, bad)
    assert len(fresh) == 0 and fresh.metadata == {}


def test_export_refuses_unknown_and_repeated_ids(source):
    eng, _ = source
    with pytest.raises(NotFoundError):
        export_rows(eng, [2**40])
    i = int(eng.columns()["id"][0])
    with pytest.raises(QueryError, match=str(i)):
        export_rows(eng, [i, i])
