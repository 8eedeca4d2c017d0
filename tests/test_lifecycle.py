"""Lifecycle: supersede, retract, history, the approval-event hook — rules, atomicity
(a rejected call changes nothing) and invariants under random operation sequences."""
import threading
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chrono_engine as ce
from chrono_engine import lifecycle
from chrono_engine.errors import LifecycleError, NotFoundError, SchemaError
from chrono_engine.schema import OPEN_END, parse_version

UTC = timezone.utc
DAY = 86_400_000_000
BASE = int(datetime(2000, 1, 1, tzinfo=UTC).timestamp()) * 1_000_000
FAR = np.iinfo(np.int64).max - 1


def us(s):
    return int(datetime.fromisoformat(s).replace(tzinfo=UTC).timestamp() * 1_000_000)


def vec(i, dim=4):
    v = np.zeros(dim, np.float32)
    v[i % dim] = 1
    v[(i + 1) % dim] = 0.25
    return v


def make_engine():
    eng = ce.Engine(dim=4, decay=ce.Exponential(half_life=3650), threads=1)
    eng.ingest([
        {"vector": vec(0), "valid_from": "2023-01-01", "stem_id": "TRAVEL", "version": "v1.0.0",
         "title": "Travel Expense Policy", "content": "director hotel cap 600"},
        {"vector": vec(1), "valid_from": "2023-01-01", "stem_id": "TRAVEL", "version": "v1.0.0",
         "title": "Travel Expense Policy", "content": "per diem"},
        {"vector": vec(2), "valid_from": "2024-01-01", "stem_id": "SOP", "version": "1",
         "title": "Line start-up SOP"},
        {"vector": vec(3), "valid_from": "2022-01-01", "title": "no stem"},
    ])
    return eng


def snapshot(eng):
    """Everything a rejected call must leave as it was."""
    cols = eng.columns()
    hist = {s: eng.history(s).to_pylist() for s in eng.stems}
    res = eng.search(vec(0), k=10, mode="all", as_of="2026-05-01", arbitrate=False, known_at=FAR).select(["id", "score"]).to_pylist()
    latest = eng.search(vec(0), k=10, as_of="2026-05-01", known_at=FAR).select(["id", "score"]).to_pylist()
    return (len(eng), {k: v.tolist() for k, v in cols.items()}, hist, res, latest,
            eng.count_valid_at("2025-01-01"), eng.stems, eng.strings().num_rows)


def test_get_returns_stored_rows_in_the_order_asked():
    eng = make_engine()
    eng.supersede("TRAVEL", [{"vector": vec(5), "content": "cap 800"}], "2026-03-01", version="v2.0.0")
    eng.retract([2], at="2099-01-01")
    hist = {r["id"]: r for s in eng.stems for r in eng.history(s).to_pylist()}
    want = [4, 3, 0, 2]
    got = eng.get(np.array(want, np.uint64))
    assert got.schema == lifecycle.HISTORY_SCHEMA
    rows = got.to_pylist()
    assert [r["id"] for r in rows] == want
    for r in rows:
        if r["stem_id"] is not None:
            assert r == hist[r["id"]]
    assert rows[1]["stem_id"] is None and rows[1]["title"] == "no stem" and rows[1]["valid_to"] is None
    assert rows[3]["retracted_at"] is not None and rows[2]["deprecated"]
    assert eng.get([]).num_rows == 0
    with pytest.raises(ce.errors.NotFoundError, match="unknown id 99"):
        eng.get([0, 99])


# ----------------------------------------------------------------------------- supersede

def test_supersede_closes_deprecates_and_links():
    eng = make_engine()
    ids = eng.supersede("TRAVEL", [{"vector": vec(0), "content": "director hotel cap 800",
                                    "title": "Travel Expense Policy"},
                                   {"vector": vec(1), "content": "per diem", "title": "Travel Expense Policy"}],
                        "2026-03-01", version="v2.0.0")
    assert ids.tolist() == [4, 5] and len(eng) == 6
    h = eng.history("TRAVEL")
    assert h.schema == lifecycle.HISTORY_SCHEMA
    assert h.column("id").to_pylist() == [0, 1, 4, 5]
    assert h.column("version").to_pylist() == ["v1.0.0", "v1.0.0", "v2.0.0", "v2.0.0"]
    assert h.column("supersedes").to_pylist() == [None, None, "v1.0.0", "v1.0.0"]
    assert h.column("deprecated").to_pylist() == [True, True, False, False]
    cut = datetime(2026, 3, 1, tzinfo=UTC)
    assert h.column("valid_to").to_pylist() == [cut, cut, None, None]
    assert h.column("valid_from").to_pylist()[2:] == [cut, cut]
    assert h.column("retracted_at").null_count == 4
    # as known now, at any instant exactly one version of the stem is valid; as known before
    # the supersede, v1 was open and v2 unknown
    assert eng.count_valid_at("2026-02-28T23:59:59") == eng.count_valid_at("2026-03-01") == 4
    assert h.column("deprecated_from").to_pylist() == [cut, cut, None, None]
    assert eng.history("TRAVEL", known_at=h.column("ingested_at")[0].as_py()).column("valid_to").to_pylist() == \
        [None] * 4
    hit = eng.search(vec(0), k=1, as_of="2026-05-01")
    assert hit.column("version").to_pylist() == ["v2.0.0"]
    assert hit.column("citation").to_pylist() == ["per Travel Expense Policy v2.0.0, effective 2026-03-01"]
    old = eng.search(vec(0), k=1, mode="as_of", as_of="2025-06-01", arbitrate=False)
    assert old.column("id").to_pylist() == [0]


def test_arbitration_keeps_every_chunk_of_the_winning_version():
    eng = make_engine()  # TRAVEL v1.0.0 has two chunks: rows 0 (matches vec(0)) and 1
    eng.supersede("TRAVEL", [{"vector": vec(0)}, {"vector": vec(1)}], "2026-03-01", version="v2.0.0")
    hit = eng.search(vec(0), k=1, mode="as_of", as_of="2025-06-01")
    assert hit.column("id").to_pylist() == [0]
    both = eng.search(vec(0), k=10, mode="as_of", as_of="2026-05-01")
    travel = [i for i, s in zip(both.column("id").to_pylist(), both.column("stem_id").to_pylist()) if s == "TRAVEL"]
    assert sorted(travel) == [4, 5]      # every chunk of the winning version, none of the old one


def test_supersede_defaults_and_columns():
    eng = make_engine()
    eng.supersede("SOP", {"vector": np.stack([vec(2)]), "version": ["2"]}, datetime(2025, 1, 1))
    h = eng.history("SOP")
    assert h.column("supersedes").to_pylist() == [None, "1"]   # the predecessor's string as written
    assert h.column("stem_id").to_pylist() == ["SOP", "SOP"]
    # explicit edge to an older version (a DAG branch), and a pyarrow table as rows
    eng.supersede("SOP", pa.table({"vector": pa.array([vec(2).tolist()], pa.list_(pa.float32(), 4)),
                                   "valid_from": ["2025-06-01"]}),
                  "2025-06-01", version="v3", supersedes="v1")
    h = eng.history("SOP")
    assert h.column("supersedes").to_pylist() == [None, "1", "v1"]
    assert h.column("deprecated").to_pylist() == [True, True, False]
    assert [t and t.date().isoformat() for t in h.column("valid_to").to_pylist()] == ["2025-01-01", "2025-06-01", None]


def test_scheduled_supersede_keeps_predecessor_in_force():
    """Deprecation is a fact in time: a change effective next month deprecates its
    predecessor from then, never before, in every latest-mode view."""
    eng = make_engine()
    now = datetime.now(UTC)
    eff = now + timedelta(days=30)
    eng.supersede("SOP", [{"vector": vec(2)}], eff, version="2")
    h = eng.history("SOP")
    assert h.column("deprecated").to_pylist() == [True, False]
    assert h.column("deprecated_from").to_pylist() == [eff, None]   # from its end, not before
    assert h.column("valid_to")[0].as_py() == eff
    for policy in ("penalize", "exclude"):
        hit = eng.search(vec(2), k=1, as_of=now, deprecated=policy, explain=True)
        assert hit.column("version").to_pylist() == ["1"] and hit.column("penalty").to_pylist() == [1.0]
    assert eng.search(vec(2), k=1, as_of=eff + timedelta(days=1)).column("version").to_pylist() == ["2"]
    eng2 = make_engine()
    eng2.supersede("SOP", [{"vector": vec(2)}], eff, version="2", deprecate=False)
    h2 = eng2.history("SOP")
    assert h2.column("deprecated").to_pylist() == [False, False]     # closed only
    assert h2.column("valid_to")[0].as_py() == eff


def test_predecessor_that_already_ended_is_not_extended():
    eng = ce.Engine(dim=4)
    eng.ingest([{"vector": vec(0), "valid_from": "2020-01-01", "valid_to": "2021-01-01", "stem_id": "T",
                 "version": "v1"}])
    eng.supersede("T", [{"vector": vec(0)}], "2022-01-01", version="v2")
    h = eng.history("T")
    assert h.column("valid_to")[0].as_py() == datetime(2021, 1, 1, tzinfo=UTC)


REJECTED = [
    (NotFoundError, "NOPE", [{"vector": vec(0)}], "2026-03-01", {"version": "v2"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2026-03-01", {"version": "v1.0.0"}),       # equal
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2026-03-01", {"version": "0.9"}),          # lower
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2023-01-01", {"version": "v2"}),           # at start
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2022-06-01", {"version": "v2"}),           # before
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2026-03-01", {"version": "v2", "supersedes": "v2"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2026-03-01", {"version": "v2", "supersedes": "v3"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2026-03-01", {"version": "v2", "supersedes": "v1.5"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0), "stem_id": "SOP"}], "2026-03-01", {"version": "v2"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0), "valid_from": "2026-04-01"}], "2026-03-01", {"version": "v2"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0), "valid_to": "2027-01-01"}], "2026-03-01", {"version": "v2"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0), "deprecated": True}], "2026-03-01", {"version": "v2"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0), "version": "v2"}, {"vector": vec(1), "version": "v3"}],
     "2026-03-01", {}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2026-03-01", {}),                          # no version
    (LifecycleError, "TRAVEL", [{"vector": vec(0), "version": "v2"}], "2026-03-01", {"version": "v2"}),
    (LifecycleError, "TRAVEL", [], "2026-03-01", {"version": "v2"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "not a date", {"version": "v2"}),
    (LifecycleError, "", [{"vector": vec(0)}], "2026-03-01", {"version": "v2"}),
    (LifecycleError, "TRAVEL", [{"vector": vec(0)}], "2026-03-01", {"version": "v2", "deprecate": "yes"}),
    (SchemaError, "TRAVEL", [{"vector": [1.0, 0.0]}], "2026-03-01", {"version": "v2"}),            # wrong dim
    (SchemaError, "TRAVEL", [{"vector": vec(0), "version": "2.x"}], "2026-03-01", {}),
    (SchemaError, "TRAVEL", [{"vector": vec(0), "id": 3}], "2026-03-01", {"version": "v2"}),      # id taken
    (SchemaError, "TRAVEL", [{"vector": vec(0), "valid_form": "2026-03-01"}], "2026-03-01", {"version": "v2"}),  # a typo
]


@pytest.mark.parametrize("err,stem,rows,eff,kw", REJECTED)
def test_rejected_supersede_changes_nothing(err, stem, rows, eff, kw):
    eng = make_engine()
    before = snapshot(eng)
    with pytest.raises(err) as info:
        eng.supersede(stem, rows, eff, **kw)
    assert str(info.value)  # a message a person can act on
    assert snapshot(eng) == before


def test_version_of_a_retracted_head_is_not_reused():
    eng = make_engine()
    new = eng.supersede("SOP", [{"vector": vec(2)}], "2025-01-01", version="2")
    eng.retract(new)
    before = snapshot(eng)
    with pytest.raises(LifecycleError, match="does not increase"):
        eng.supersede("SOP", [{"vector": vec(2)}], "2025-06-01", version="2")
    assert snapshot(eng) == before
    eng.supersede("SOP", [{"vector": vec(2)}], "2025-06-01", version="3")
    assert eng.history("SOP").column("version").to_pylist() == ["1", "2", "3"]


def test_error_messages_name_the_rule():
    eng = make_engine()
    with pytest.raises(LifecycleError, match=r"version v1\.0 does not increase.*already has v1\.0\.0"):
        eng.supersede("TRAVEL", [{"vector": vec(0)}], "2026-03-01", version="v1.0")
    with pytest.raises(LifecycleError, match=r"not after the start of version v1\.0\.0"):
        eng.supersede("TRAVEL", [{"vector": vec(0)}], "2020-03-01", version="v2")
    with pytest.raises(LifecycleError, match="cycle"):
        eng.supersede("TRAVEL", [{"vector": vec(0)}], "2026-03-01", version="v2", supersedes="v2")
    with pytest.raises(NotFoundError, match="unknown stem 'X'"):
        eng.history("X")


# ----------------------------------------------------------------------------- retract

def test_retract_is_transaction_time():
    eng = make_engine()
    ing = eng.columns()["ingested_at"][2]
    at = ing + 10
    assert eng.retract(2, at=at).tolist() == [2]
    h = eng.history("SOP")
    assert h.column("retracted_at").cast(pa.int64()).to_pylist() == [at]
    assert h.column("valid_to").to_pylist() == [None]            # valid time untouched
    seen_before = eng.search(vec(2), k=5, mode="all", known_at=at - 1).column("id").to_pylist()
    seen_after = eng.search(vec(2), k=5, mode="all", known_at=at).column("id").to_pylist()
    assert 2 in seen_before and 2 not in seen_after
    assert len(eng) == 4                                          # nothing deleted


@pytest.mark.parametrize("ids,at,err", [
    ([2, 99], None, NotFoundError),
    ([-1], None, NotFoundError),
    ([2, 2], None, LifecycleError),
    ([], None, LifecycleError),
    ([2], "2000-01-01", LifecycleError),        # before ingested_at
    ([[2]], None, LifecycleError),
    (["a"], None, LifecycleError),
    ([2], "yesterday-ish", LifecycleError),
])
def test_rejected_retract_changes_nothing(ids, at, err):
    eng = make_engine()
    before = snapshot(eng)
    with pytest.raises(err):
        eng.retract(ids, at=at)
    assert snapshot(eng) == before


def test_retract_twice_rejected_atomically():
    eng = make_engine()
    eng.retract([1])
    before = snapshot(eng)
    with pytest.raises(LifecycleError, match="already retracted"):
        eng.retract([0, 1])          # 0 is fine, 1 is not: neither changes
    assert snapshot(eng) == before


def test_retract_at_equal_to_ingested_at_rejected():
    eng = make_engine()
    ing = int(eng.columns()["ingested_at"][0])
    with pytest.raises(LifecycleError, match="not after its ingested_at"):
        eng.retract(0, at=ing)


# ----------------------------------------------------------------------------- persistence, events, threads

def test_lifecycle_edits_survive_save_and_open(tmp_path):
    eng = make_engine()
    eng.supersede("TRAVEL", [{"vector": vec(0)}], "2026-03-01", version="v2")
    eng.retract([2])
    eng.save(tmp_path / "s")
    back = ce.Engine.open(tmp_path / "s")
    for stem in ("TRAVEL", "SOP"):
        assert back.history(stem).equals(eng.history(stem))
    back.supersede("TRAVEL", [{"vector": vec(0)}], "2026-09-01", version="v3")
    assert back.history("TRAVEL").column("supersedes").to_pylist()[-1] == "v2"


def toy_embed(text):
    v = np.zeros(4, np.float32)
    for i, ch in enumerate(text.encode()):
        v[ch % 4] += 1
    return v + 0.1


def test_approval_event_hook():
    eng = make_engine()
    ev = {"event_id": "oa-1", "stem_id": "TRAVEL", "version": "v2.0.0", "effective_at": "2026-03-01",
          "title": "Travel Expense Policy", "rows": [{"content": "director hotel cap 800"}]}
    with pytest.raises(LifecycleError, match="no embedder"):
        lifecycle.on_approval_event(eng, ev)
    eng.embedder = toy_embed
    ids = lifecycle.on_approval_event(eng, ev)
    assert lifecycle.on_approval_event(eng, ev).tolist() == ids.tolist()   # redelivery: no change
    assert len(eng) == 5
    h = eng.history("TRAVEL")
    assert h.column("title").to_pylist()[-1] == "Travel Expense Policy"
    assert h.column("supersedes").to_pylist()[-1] == "v1.0.0"
    before = snapshot(eng)
    with pytest.raises(LifecycleError, match="different effective date"):
        lifecycle.on_approval_event(eng, {**ev, "effective_at": "2026-04-01"})
    with pytest.raises(LifecycleError, match="unknown keys"):
        lifecycle.on_approval_event(eng, {**ev, "colour": 1})
    with pytest.raises(LifecycleError, match="action"):
        lifecycle.on_approval_event(eng, {**ev, "action": "delete"})
    with pytest.raises(NotFoundError):
        lifecycle.on_approval_event(eng, {**ev, "stem_id": "NOPE"})
    assert snapshot(eng) == before
    gone = lifecycle.on_approval_event(eng, {"action": "retract", "stem_id": "TRAVEL", "version": "v2.0.0"})
    assert gone.tolist() == ids.tolist()
    assert lifecycle.on_approval_event(eng, {"action": "retract", "stem_id": "TRAVEL",
                                             "version": "v2.0.0"}).tolist() == ids.tolist()
    assert eng.history("TRAVEL").column("retracted_at").null_count == 2


def test_concurrent_supersedes_keep_the_chain():
    eng = make_engine()
    errors = []

    def worker(i):
        try:
            eng.supersede("SOP", [{"vector": vec(i)}], datetime(2024, 2, 1, tzinfo=UTC) + timedelta(days=10 * i),
                          version=str(i + 2))
        except LifecycleError as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    h = eng.history("SOP")
    assert h.num_rows == 9 - len(errors)
    check_chain(h)


# ----------------------------------------------------------------------------- invariants

def check_chain(h: pa.Table):
    """One stem: versions strictly increase along valid time, each interval ends where the
    next begins (no overlap, no gap), only the last is open, all but the last deprecated."""
    vf = h.column("valid_from").cast(pa.int64()).to_numpy()
    vt = h.column("valid_to").cast(pa.int64()).fill_null(OPEN_END).to_numpy()
    keys = [parse_version(v) for v in h.column("version").to_pylist()]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert (vf[1:] == vt[:-1]).all() and vt[-1] == OPEN_END
    assert h.column("deprecated").to_pylist() == [True] * (len(keys) - 1) + [False]
    sup = h.column("supersedes").to_pylist()
    assert sup[1:] == h.column("version").to_pylist()[:-1]
    probes = np.concatenate([vf, vf - 1, vf + 1, vt[:-1] - 1, [vf[-1] + 10**12]])
    for t in probes[probes >= vf[0]]:
        assert ((vf <= t) & (t < vt)).sum() == 1    # exactly one version valid after the first


op = st.one_of(
    st.tuples(st.just("supersede"), st.integers(0, 2), st.integers(-1, 2), st.integers(-3, 60), st.integers(1, 2)),
    st.tuples(st.just("retract"), st.integers(0, 40), st.integers(-2, 5)),
    st.tuples(st.just("event"), st.integers(0, 2), st.integers(0, 2), st.integers(-3, 60)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=14))
def test_random_lifecycle_sequences_keep_invariants(ops):
    eng = ce.Engine(dim=4, threads=1)
    model = {}   # stem -> list of (version_number, valid_from_day, [ids])
    retracted = set()
    for s in range(3):
        eng.ingest([{"vector": vec(s), "valid_from": BASE + s * DAY, "stem_id": f"S{s}", "version": "1",
                     "ingested_at": BASE, "id": 100 * s}])
        model[f"S{s}"] = [(1, s, [100 * s])]
    next_id = 1000
    for o in ops:
        before = snapshot(eng)
        if o[0] in ("supersede", "event"):
            if o[0] == "supersede":
                _, s, dv, dday, nrows = o
            else:
                _, s, dv, dday = o
                nrows = 1
            stem = f"S{s}"
            head_v, head_day, _ = model[stem][-1]
            v, day = head_v + dv, head_day + dday
            rows = [{"vector": vec(next_id + j), "id": next_id + j, "ingested_at": BASE} for j in range(nrows)]
            same = [x for x in model[stem] if x[0] == v]
            if o[0] == "event" and same:        # a redelivered (or conflicting) event
                if same[0][1] == day:
                    got = lifecycle.on_approval_event(eng, {"stem_id": stem, "version": str(v),
                                                            "effective_at": BASE + day * DAY, "rows": rows})
                    assert got.tolist() == same[0][2]
                else:
                    with pytest.raises(LifecycleError):
                        lifecycle.on_approval_event(eng, {"stem_id": stem, "version": str(v),
                                                          "effective_at": BASE + day * DAY, "rows": rows})
                assert snapshot(eng) == before
                continue
            ok = dv > 0 and dday > 0
            try:
                if o[0] == "supersede":
                    ids = eng.supersede(stem, rows, BASE + day * DAY, version=str(v))
                else:
                    ids = lifecycle.on_approval_event(eng, {"stem_id": stem, "version": str(v),
                                                            "effective_at": BASE + day * DAY, "rows": rows})
            except LifecycleError:
                assert not ok
                assert snapshot(eng) == before
                continue
            assert ok
            model[stem].append((v, day, ids.tolist()))
            next_id += nrows
        else:
            _, which, dat = o
            all_ids = [i for vs in model.values() for _, _, ids in vs for i in ids]
            target = all_ids[which % len(all_ids)]
            at = BASE + dat
            try:
                eng.retract([target], at=at)
            except LifecycleError:
                assert target in retracted or dat <= 0
                assert snapshot(eng) == before
                continue
            assert target not in retracted and dat > 0
            retracted.add(target)
    # nothing lost: every row ever added is still there, with its versions
    total = sum(len(ids) for vs in model.values() for _, _, ids in vs)
    assert len(eng) == total
    for stem, versions in model.items():
        h = eng.history(stem)
        assert h.column("id").to_pylist() == [i for _, _, ids in versions for i in ids]
        assert sorted(i for i in h.column("id").to_pylist() if i in retracted) == \
            sorted(h.filter(h.column("retracted_at").is_valid()).column("id").to_pylist())
        # per version (rows of one version share an interval), the chain holds
        first = h.group_by("version", use_threads=False).aggregate([("id", "min")]).column("id_min").to_pylist()
        check_chain(h.filter(pa.compute.is_in(h.column("id"), pa.array(first, pa.uint64()))))
    # the core's interval index agrees with the metadata after every rebuild
    cols = eng.columns()
    for t in np.unique(np.concatenate([cols["valid_from"], cols["valid_from"] - 1])):
        assert eng.count_valid_at(int(t)) == int(((cols["valid_from"] <= t) & (t < cols["valid_to"])).sum())
