"""The knowledge model is bitemporal: every lifecycle event (ingest, supersede, retract,
deprecate) is a fact with its own transaction time, nothing is overwritten, and every
(mode, T, known_at) sees exactly the events known then.

The engine is held to an independent model that replays the event log (the reference of
tests/reference.py, fed the view of each known_at), over random event sequences; views
taken before an event are checked to be unchanged by it; readers racing a stream of
supersedes never see a stem with zero or two versions in force."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import chrono_engine as ce
import reference as ref
from chrono_engine.errors import LifecycleError, NotFoundError
from test_search import assert_same_topk, decay_fn

DIM = 4
DAY = 86_400_000_000
HOUR = 3_600_000_000
OPEN_END = np.iinfo(np.int64).max
T_BASE = 1_704_067_200_000_000          # 2024-01-01: valid times are days after it
TX_BASE = T_BASE + 1000 * DAY           # transaction times: hours after it, one per event


class Model:
    """The event log replayed by hand: rows as ingested, and per row the events that
    closed or deprecated it, each with its transaction time."""

    def __init__(self):
        self.rows = []          # dicts: id, vector, valid_from, valid_to, ingested_at, retracted_at, stem, version
        self.events = []        # (row, tx, valid_to or OPEN_END, deprecated_from or OPEN_END)

    def stem_rows(self, stem):
        return [i for i, r in enumerate(self.rows) if r["stem"] == stem]

    def known_end(self, i, k):
        ends = [vt for row, tx, vt, _ in self.events if row == i and tx <= k]
        return min([self.rows[i]["valid_to"], *ends])

    def view(self, k):
        """The columns as known at transaction time k."""
        n = len(self.rows)
        col = lambda name, dt: np.array([r[name] for r in self.rows], dt)  # noqa: E731
        vt = np.array([self.known_end(i, k) for i in range(n)], np.int64)
        dep = np.full(n, OPEN_END, np.int64)
        for row, tx, _, d in self.events:
            if tx <= k:
                dep[row] = min(dep[row], d)
        return {"valid_from": col("valid_from", np.int64), "valid_to": vt, "observed_at": col("valid_from", np.int64),
                "ingested_at": col("ingested_at", np.int64), "retracted_at": col("retracted_at", np.int64),
                "reliability": np.ones(n, np.float32), "fact_type": np.zeros(n, np.int64),
                "stem": col("stem", np.int32), "version": col("version", np.uint64),
                "deprecated_from": dep, "id": np.arange(n, dtype=np.uint64)}


def _vec(rng):
    return rng.normal(size=DIM).astype(np.float32)


def _apply(eng, model, ev, tx, rng):
    """Apply one event to both; returns False when the engine refused it (then the model
    is unchanged too: the event breaks a rule)."""
    kind = ev[0]
    if kind == "ingest":
        _, days, chunks = ev
        stem = len({r["stem"] for r in model.rows})
        rows = [{"vector": _vec(rng), "valid_from": T_BASE + days * DAY, "ingested_at": tx,
                 "stem_id": f"S{stem}", "version": "1"} for _ in range(chunks)]
        eng.ingest(rows)
        for r in rows:
            model.rows.append({"id": len(model.rows), "valid_from": r["valid_from"], "valid_to": OPEN_END,
                               "ingested_at": tx, "retracted_at": OPEN_END, "stem": stem, "version": 1})
        return True
    stems = sorted({r["stem"] for r in model.rows})
    if kind == "supersede":
        _, which, days = ev
        stem = stems[which % len(stems)]
        mine = model.stem_rows(stem)
        eff = max(model.rows[i]["valid_from"] for i in mine) + days * DAY
        version = max(model.rows[i]["version"] for i in mine) + 1
        eng.supersede(f"S{stem}", [{"vector": _vec(rng), "ingested_at": tx}], eff, version=str(version))
        for i in mine:  # every version still valid at eff, as known now, closes there
            if model.known_end(i, OPEN_END) > eff:
                model.events.append((i, tx, eff, eff))
        model.rows.append({"id": len(model.rows), "valid_from": eff, "valid_to": OPEN_END, "ingested_at": tx,
                           "retracted_at": OPEN_END, "stem": stem, "version": version})
        return True
    _, which, days = ev
    i = which % len(model.rows)
    if kind == "retract":
        if model.rows[i]["retracted_at"] != OPEN_END:
            with pytest.raises(LifecycleError):
                eng.retract([i], at=tx)
            return False
        eng.retract([i], at=tx)
        model.rows[i]["retracted_at"] = tx
        return True
    assert kind == "deprecate"
    frm = model.rows[i]["valid_from"] + days * DAY
    eng.deprecate([i], effective_at=frm, at=tx)
    model.events.append((i, tx, OPEN_END, frm))
    return True


_MODES = [("latest", "exclude"), ("latest", "penalize"), ("latest", "include"), ("as_of", "exclude"),
          ("window", "exclude"), ("all", "exclude")]


def _search(eng, q, t, k_at, mode, future):
    kw = {"window": (t - 90 * DAY, t)} if mode == "window" else {"as_of": t}
    res = eng.search_batch(np.repeat(q, len(t), axis=0), 5, mode=mode, known_at=k_at, exact=True,
                           future=future, deprecation_penalty=0.3, **kw)
    qcol = res.column("query").to_numpy()
    ids, sc = res.column("id").to_numpy(), res.column("score").to_numpy()
    assert res.column("certified").to_numpy().all()
    return [ids[qcol == i] for i in range(len(t))], [sc[qcol == i] for i in range(len(t))]


def _probes(txs):
    """(T, known_at) pairs: valid times across the store's life, transaction times before,
    at and after each event."""
    ts = T_BASE + np.array([-10, 0, 15, 40, 90, 200, 400, 800], np.int64) * DAY
    ks = sorted({TX_BASE - HOUR, *[x for tx in txs for x in (tx - 1, tx)], txs[-1] + HOUR})
    tt, kk = np.meshgrid(ts, np.array(ks, np.int64))
    return tt.ravel(), kk.ravel()


_event = st.one_of(
    st.tuples(st.just("ingest"), st.integers(0, 300), st.integers(1, 2)),
    st.tuples(st.just("supersede"), st.integers(0, 50), st.integers(1, 400)),
    st.tuples(st.just("retract"), st.integers(0, 50), st.just(0)),
    st.tuples(st.just("deprecate"), st.integers(0, 50), st.integers(0, 300)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=2, max_size=12), st.integers(0, 2**32 - 1))
def test_every_view_equals_the_replayed_event_log(events, seed):
    rng = np.random.default_rng(seed)
    eng, model = ce.Engine(dim=DIM), Model()
    q = _vec(rng)[None, :]
    txs, seen = [], {}
    for j, ev in enumerate([("ingest", 0, 1), *events]):
        tx = TX_BASE + j * HOUR
        # views known before this event, taken now, must be the same after it
        if txs:
            t, k = _probes(txs)
            for mode, future in _MODES:
                seen[mode, future] = (t, k, _search(eng, q, t, k, mode, future))
        if _apply(eng, model, ev, tx, rng):
            txs.append(tx)
        for (mode, future), (t, k, (before, _)) in seen.items():
            after, _ = _search(eng, q, t, k, mode, future)
            old = k < tx
            for a, b, o in zip(after, before, old):
                if o:
                    assert np.array_equal(a, b), (mode, future, ev)
    t, k = _probes(txs)
    vecs = eng.vectors()
    views = {int(ki): model.view(ki) for ki in np.unique(k)}
    for mode, future in _MODES:
        got, scores = _search(eng, q, t, k, mode, future)
        exp = []
        for ti, ki in zip(t, k):
            kw = {"window": (np.array([ti - 90 * DAY]), np.array([ti]))} if mode == "window" else {}
            exp += ref.search(views[int(ki)], vecs, decay_fn(eng), q, 5, mode=mode, t=[ti], known_at=[ki],
                              future=future, penalty=0.3, **kw)
        assert_same_topk(got, scores, exp)
    # (what a result table reads of its hits, hit_meta, is checked against columns_at in
    # test_internal_bitemporal.py, over the same event sequences)
    # history and columns as known at any transaction time agree with the model
    for ki in k[::8]:
        view = model.view(ki)
        c = eng.columns(known_at=int(ki))
        np.testing.assert_array_equal(c["valid_to"], view["valid_to"])
        np.testing.assert_array_equal(np.maximum(c["deprecated_from"], c["valid_from"]),
                                      np.where(view["deprecated_from"] == OPEN_END, OPEN_END,
                                               np.maximum(view["deprecated_from"], view["valid_from"])))


def test_a_version_superseded_after_T_is_not_penalised_at_T():
    """The issue's case: superseded in 2026, asked in latest mode at T = 2024."""
    eng = ce.Engine(dim=2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2023-01-01", "stem_id": "P", "version": "v1"}])
    eng.supersede("P", [{"vector": [0.9, 0.1]}], "2026-01-01", version="v2")
    hit = eng.search([1, 0], k=1, as_of="2024-06-01", explain=True)
    assert hit.column("version").to_pylist() == ["v1"] and hit.column("penalty").to_pylist() == [1.0]
    late = eng.search([1, 0], k=1, as_of="2026-06-01", explain=True)
    assert late.column("version").to_pylist() == ["v2"]


def test_supersede_keeps_views_known_before_it():
    """The issue's reproduction: a known_at before the supersede gave [0] before and [] after."""
    eng = ce.Engine(dim=2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2023-01-01", "stem_id": "P", "version": "v1",
                 "ingested_at": "2024-01-01"}])
    kw = dict(k=5, mode="as_of", as_of="2025-06-01", known_at="2024-06-01")
    assert eng.search([1, 0], **kw).column("id").to_pylist() == [0]
    eng.supersede("P", [{"vector": [1, 0]}], "2025-01-01", version="v2")
    assert eng.search([1, 0], **kw).column("id").to_pylist() == [0]
    assert eng.search([1, 0], k=5, mode="as_of", as_of="2025-06-01").column("id").to_pylist() == [1]
    assert eng.count_valid_at("2025-06-01", known_at="2024-06-01") == 1


def test_readers_never_see_zero_or_two_versions_in_force():
    """4 readers racing 1,000 supersedes of one stem: every read sees exactly one version in
    force (a supersede's new rows and its close are one write under the core's lock)."""
    eng = ce.Engine(dim=2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2020-01-01", "stem_id": "S", "version": "1"}])
    stop = threading.Event()
    counts, errors = [], []

    def read():
        try:
            while not stop.is_set():
                res = eng.search([1, 0], k=50, mode="as_of", as_of="2099-01-01", arbitrate=False, exact=True)
                counts.append(sum(s == "S" for s in res.column("stem_id").to_pylist()))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for r in readers:
        r.start()
    try:
        for v in range(2, 1002):
            eng.supersede("S", [{"vector": [1, 0]}], T_BASE + v * HOUR, version=str(v))
    finally:
        stop.set()
        for r in readers:
            r.join()
    assert not errors
    assert len(counts) > 100
    assert set(counts) == {1}, {c: counts.count(c) for c in set(counts)}


def test_deprecate_is_an_event_in_both_times():
    eng = ce.Engine(dim=2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2023-01-01", "ingested_at": "2023-01-01"}])
    eng.deprecate([0], effective_at="2024-01-01", at="2024-06-01")
    pen = lambda t, k: eng.search([1, 0], k=1, as_of=t, known_at=k, explain=True).column("penalty").to_pylist()  # noqa: E731
    assert pen("2023-06-01", "2025-01-01") == [1.0]    # before it took effect
    assert pen("2024-03-01", "2024-05-01") == [1.0]    # not yet known
    assert pen("2024-03-01", "2025-01-01") == [pytest.approx(0.1)]
    assert eng.search([1, 0], k=1, as_of="2024-03-01", deprecated="exclude").num_rows == 0
    h = eng.get([0])
    assert str(h.column("deprecated_from")[0].as_py())[:10] == "2024-01-01"
    assert str(h.column("amended_at")[0].as_py())[:10] == "2024-06-01"
    assert eng.get([0], known_at="2024-05-01").column("deprecated").to_pylist() == [False]
    # a deprecation without a valid time covers the whole interval
    eng.ingest([{"vector": [0, 1], "valid_from": "2023-01-01"}])
    eng.deprecate(1)
    assert eng.search([0, 1], k=2, as_of="2023-02-01", deprecated="exclude").column("id").to_pylist() == [0]


@pytest.mark.parametrize("call, err", [
    (lambda e: e.deprecate([]), LifecycleError), (lambda e: e.deprecate([0, 0]), LifecycleError),
    (lambda e: e.deprecate([7]), NotFoundError), (lambda e: e.deprecate([0], at="2022-01-01"), LifecycleError),
    (lambda e: e.deprecate([0], effective_at="soon"), LifecycleError),
    (lambda e: e.deprecate([0], effective_at="20000-01-01"), LifecycleError),
    (lambda e: e.supersede("P", [{"vector": [1, 0], "ingested_at": "2022-06-01"}], "2024-01-01", version="2"),
     LifecycleError),
])
def test_refused_events_change_nothing(call, err):
    eng = ce.Engine(dim=2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2023-01-01", "ingested_at": "2023-01-01", "stem_id": "P",
                 "version": "1"}])
    before = (eng.columns(), eng.history("P"))
    with pytest.raises(err):
        call(eng)
    after = (eng.columns(), eng.history("P"))
    assert after[1].equals(before[1])
    for name in before[0]:
        np.testing.assert_array_equal(after[0][name], before[0][name])


def test_one_row_takes_at_most_64_events():
    eng = ce.Engine(dim=2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2023-01-01", "ingested_at": "2023-01-01"}])
    for i in range(64):
        eng.deprecate([0], effective_at="2024-01-01", at=TX_BASE + i * HOUR)
    with pytest.raises(LifecycleError, match="64"):
        eng.deprecate([0], effective_at="2024-01-01", at=TX_BASE + 100 * HOUR)
    assert len(eng.columns()["id"]) == 1


def test_fit_decay_learns_from_the_stores_own_supersedes():
    """Lineages whose versions last Exp(β) days, written through supersede: fit_decay sees
    each close as an ended validity and the head versions as censored, equals the closed-form
    censored MLE on the same intervals, and as known before the supersedes sees no event."""
    rng = np.random.default_rng(7)
    beta = 1 / 60.0
    eng = ce.Engine(dim=2)
    start = T_BASE
    horizon = T_BASE + 400 * DAY
    n_stems = 150
    eng.ingest([{"vector": [1, 0], "valid_from": start, "ingested_at": TX_BASE, "stem_id": f"S{i}",
                 "version": "1", "fact_type": "policy"} for i in range(n_stems)])
    ends, durations = 0, 0.0
    for i in range(n_stems):
        t, v = start, 1
        while True:
            life = rng.exponential(1 / beta)
            if t + life * DAY >= horizon:
                durations += (horizon - t) / DAY
                break
            nxt = t + max(1, int(life * DAY))
            v += 1
            eng.supersede(f"S{i}", [{"vector": [1, 0], "fact_type": "policy", "ingested_at": TX_BASE + v}],
                          nxt, version=str(v))
            ends += 1
            durations += (nxt - t) / DAY
            t = nxt
    fit = eng.fit_decay(at=horizon)["policy"]
    assert fit.events == ends
    assert fit.exposure == pytest.approx(durations, rel=1e-9)
    assert fit.beta == pytest.approx(ends / durations, rel=1e-9)      # the closed form
    assert fit.beta == pytest.approx(beta, rel=0.25)                  # ~300 events: sampling error
    assert isinstance(eng.fit_decay(at=horizon).policy(), ce.DecayPolicy)
    before = eng.fit_decay(known_at=TX_BASE, at=horizon)["policy"]    # no supersede known yet
    assert before.events == 0 and before.n == n_stems
    with pytest.raises(ce.errors.QueryError):
        eng.fit_decay(fact_types=["nope"])
