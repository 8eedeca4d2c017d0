"""Search semantics against the NumPy reference (tests/reference.py), every mode and fusion,
both plans (certified scan and graph walk)."""
import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
import reference as ref
from chrono_engine._time import MIN_TIME_US, OPEN_END
from chrono_engine.synthetic import US_PER_DAY, times_for_selectivity


def core_cols(eng):
    c = eng.columns()
    return {"valid_from": c["valid_from"], "valid_to": c["valid_to"], "observed_at": c["observed_at"],
            "ingested_at": c["ingested_at"], "retracted_at": c["retracted_at"], "reliability": c["reliability"],
            "fact_type": c["fact_type"].astype(np.int64), "stem": c["stem"], "version": c["version"],
            "deprecated": c["deprecated"].astype(bool), "id": c["id"]}


def decay_fn(eng):
    types = eng.fact_types
    def f(age, codes):
        names = np.asarray(types, dtype=object)[codes]
        return eng.decay.evaluate(age, names)
    return f


def ref_options(kw, mask=None):
    """The reference's keywords for a search's options ``kw`` (``mask``: the reference's
    fact-type mask for a ``fact_types`` option)."""
    rkw = {k2: v for k2, v in kw.items() if k2 in ("fusion", "alpha", "tau", "deprecated", "future", "arbitrate")}
    if "deprecation_penalty" in kw:
        rkw["penalty"] = kw["deprecation_penalty"]
    if "fact_types" in kw:
        rkw["type_mask"] = mask
    return rkw


def retract_and_view(engines, corpus, rng, nq, every):
    """Retract one row in ``every`` of the corpus (the same rows, at the same random later
    times, in each engine) and draw a ``known_at`` per query across the ingest span and
    beyond; with every other fact type as a search's ``fact_types`` and the reference's
    mask of them: (known, types, mask)."""
    c = corpus
    gone = rng.choice(len(c), len(c) // every, replace=False)
    at = c.ingested_at[gone] + rng.integers(1, 400, len(gone)) * US_PER_DAY
    for i, a in zip(gone, at):
        for e in engines:
            e.retract([int(i)], at=np.datetime64(int(a), "us"))
    lo, hi = int(c.ingested_at.min()), int(c.ingested_at.max()) + 500 * US_PER_DAY
    known = rng.integers(lo, hi, nq).astype(np.int64)
    names = engines[0].fact_types
    types = sorted(set(names))[::2]
    mask = np.zeros(len(names), bool)
    mask[[names.index(n) for n in types]] = True
    return known, types, mask


def check_against_reference(eng, corpus, q, t, *, mode, exact, k=10, **kw):
    cols = core_cols(eng)
    vecs = eng.vectors()
    known = np.full(len(q), np.iinfo(np.int64).max - 1, np.int64)
    window = kw.pop("window", None)
    res = eng.search_batch(q, k, mode=mode, as_of=t if mode != "window" else None, known_at=known,
                           window=window, exact=exact, **kw)
    sims = ref.similarities(q, vecs, eng.metric)
    wnd = (np.asarray(window[0]), np.asarray(window[1])) if window is not None else (0, 0)
    exp = ref.search(cols, vecs, decay_fn(eng), q, k, mode=mode, t=t, known_at=known, window=wnd,
                     metric=eng.metric, sims=sims, **ref_options(kw))
    qcol = res.column("query").to_numpy()
    ids = res.column("id").to_numpy()
    scores = res.column("score").to_numpy()
    got = [ids[qcol == i] for i in range(len(q))]
    got_scores = [scores[qcol == i] for i in range(len(q))]
    return got, got_scores, exp, res


def assert_same_topk(got, got_scores, exp, tol=2e-6):
    """Identical top-k, allowing swaps only between items whose scores differ by < tol
    (float32 similarity rounding)."""
    for g, gs, (e, es) in zip(got, got_scores, exp):
        assert len(g) == len(e)
        np.testing.assert_allclose(gs, es, rtol=0, atol=tol)
        if not np.array_equal(g, e):
            diff = set(g.tolist()) ^ set(e.tolist())
            kth = es[-1]
            # every disagreement must sit at the k-th score within rounding
            assert all(abs(s - kth) < tol for s, i in zip(gs, g) if i in diff) or not diff


@pytest.mark.parametrize("mode", ["as_of", "latest", "all", "window"])
@pytest.mark.parametrize("fusion", ["product", "linear"])
def test_exact_matches_reference(small_engine, small_corpus, mode, fusion):
    q = small_corpus.queries(25, seed=3)
    t = times_for_selectivity(small_corpus, 0.2, 25)
    kw = {"fusion": fusion}
    if mode == "window":
        kw["window"] = (t - 60 * US_PER_DAY, t)
    got, gs, exp, res = check_against_reference(small_engine, small_corpus, q, t, mode=mode, exact=True, **kw)
    assert res.column("certified").to_numpy().all()
    assert_same_topk(got, gs, exp)


@pytest.mark.parametrize("fusion", ["product", "linear"])
@pytest.mark.parametrize("future", ["exclude", "penalize", "include"])
@pytest.mark.parametrize("deprecated", ["penalize", "exclude", "include"])
def test_latest_out_of_force_policies(small_engine, small_corpus, deprecated, future, fusion):
    """Both latest-mode policies (items no longer in force; items not yet valid) against the
    reference, certified answers exact, planned and exact alike."""
    q = small_corpus.queries(20, seed=5)
    t = times_for_selectivity(small_corpus, 0.05, 20)
    for exact in (True, False):
        got, gs, exp, res = check_against_reference(small_engine, small_corpus, q, t, mode="latest", exact=exact,
                                                    deprecated=deprecated, future=future, deprecation_penalty=0.3,
                                                    fusion=fusion)
        cert = res.column("certified").to_numpy()
        qcol = res.column("query").to_numpy()
        keep = [i for i in range(len(q)) if cert[qcol == i].all()]
        assert keep, "some answers are certified"
        assert_same_topk([got[i] for i in keep], [gs[i] for i in keep], [exp[i] for i in keep])


@pytest.mark.parametrize("mode", ["as_of", "window", "all"])
def test_future_policy_is_latest_modes_alone(small_engine, small_corpus, mode):
    """Other modes decide validity themselves: the future= option changes nothing there."""
    q = small_corpus.queries(10, seed=9)
    t = times_for_selectivity(small_corpus, 0.2, 10)
    kw = {"window": (t - 60 * US_PER_DAY, t)} if mode == "window" else {}
    tables = [check_against_reference(small_engine, small_corpus, q, t, mode=mode, exact=True, future=f, **kw)
              for f in ("exclude", "penalize", "include")]
    for got, gs, exp, _ in tables:
        assert_same_topk(got, gs, exp)
    assert all(np.array_equal(np.concatenate(x[0]), np.concatenate(tables[0][0])) for x in tables)


@pytest.mark.parametrize("tau", [0.0, 0.3, 0.7])
def test_tau_and_no_arbitration(small_engine, small_corpus, tau):
    q = small_corpus.queries(20, seed=6)
    t = times_for_selectivity(small_corpus, 0.3, 20)
    for arbitrate in (True, False):
        got, gs, exp, res = check_against_reference(small_engine, small_corpus, q, t, mode="all", exact=True,
                                                    tau=tau, arbitrate=arbitrate)
        assert_same_topk(got, gs, exp)
        assert (res.column("validity").to_numpy() >= tau - 1e-7).all()


@pytest.mark.parametrize("mode", ["as_of", "latest"])
def test_graph_plan_recall(small_engine, small_corpus, mode):
    """Force the graph plan (scan_limit=0) and require recall >= 0.95 against the reference."""
    q = small_corpus.queries(40, seed=8)
    t = times_for_selectivity(small_corpus, 0.3, 40)
    old = small_engine.scan_limit
    small_engine.scan_limit = 0
    try:
        got, gs, exp, res = check_against_reference(small_engine, small_corpus, q, t, mode=mode, exact=False)
    finally:
        small_engine.scan_limit = old
    assert (res.column("certified").to_numpy() == False).all()  # noqa: E712
    assert ref.recall(got, exp) >= 0.95


def test_properties(small_engine, small_corpus):
    """τ never violated, one version per stem, as_of never returns an item invalid at T."""
    q = small_corpus.queries(30, seed=9)
    t = times_for_selectivity(small_corpus, 0.2, 30)
    for exact in (True, False):
        res = small_engine.search_batch(q, 20, mode="as_of", as_of=t, tau=0.2, exact=exact)
        vf = res.column("valid_from").cast(pa.int64()).to_numpy()
        vt = res.column("valid_to").cast(pa.int64()).fill_null(np.iinfo(np.int64).max).to_numpy()
        tq = t[res.column("query").to_numpy()]
        assert ((vf <= tq) & (tq < vt)).all()
        assert (res.column("validity").to_numpy() >= 0.2 - 1e-7).all()
        # one hit per (query, stem): no stem twice in a query's answer (plain Python: the
        # core test install has no pandas)
        pairs = list(zip(res.column("query").to_pylist(), res.column("stem_id").to_pylist()))
        assert len(pairs) == len(set(pairs))


def test_ties_broken_by_id():
    eng = ce.Engine(4, metric="cosine")
    v = np.tile(np.array([1, 0, 0, 0], np.float32), (6, 1))
    eng.ingest({"vector": v, "valid_from": ["2024-01-01"] * 6, "id": np.array([50, 7, 30, 2, 9, 41], np.uint64)})
    for exact in (True, False):
        res = eng.search(np.array([1, 0, 0, 0], np.float32), k=4, mode="all", exact=exact)
        assert res.column("id").to_pylist() == [2, 7, 9, 30]
        assert res.column("rank").to_pylist() == [1, 2, 3, 4]


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_other_metrics_exact(metric):
    from chrono_engine.synthetic import make_corpus
    c = make_corpus(1500, 16, clusters=8, seed=11)
    rng = np.random.default_rng(0)
    d = c.to_dict()
    d["vector"] = (c.vector * rng.uniform(0.5, 2.0, (len(c), 1))).astype(np.float32)
    eng = ce.Engine(16, metric=metric, decay=ce.DecayPolicy({f"type{i:02d}": ce.Exponential(half_life=h) for i, h in enumerate(c.half_lives)}, default=None))
    eng.ingest(d)
    q = c.queries(15, seed=2) * 1.5
    t = times_for_selectivity(c, 0.3, 15)
    for fusion in ("product", "linear"):
        got, gs, exp, _ = check_against_reference(eng, c, q, t, mode="as_of", exact=True, fusion=fusion)
        assert_same_topk(got, gs, exp, tol=1e-5)


@pytest.mark.parametrize("mode", ["as_of", "latest", "all", "window"])
@pytest.mark.parametrize("fusion", ["product", "linear"])
def test_seeded_freshness_path_matches_reference(small_corpus, mode, fusion):
    """seed_min=0 seeds every query, so candidates come from the freshness lists (pruned
    by the seeded threshold); group=1 and group=32 must agree with the reference."""
    from conftest import policy_for
    for group in (1, 32):
        eng = ce.Engine(32, decay=policy_for(small_corpus), threads=2, seed_min=0, group=group)
        eng.ingest(small_corpus.to_dict())
        q = small_corpus.queries(25, seed=13)
        t = times_for_selectivity(small_corpus, 0.3, 25)
        kw = {"fusion": fusion}
        if mode == "window":
            kw["window"] = (t - 90 * US_PER_DAY, t)
        got, gs, exp, res = check_against_reference(eng, small_corpus, q, t, mode=mode, exact=True, **kw)
        assert res.column("certified").to_numpy().all()
        assert_same_topk(got, gs, exp)


def test_gaussian_symmetric_and_mixed_families():
    """Freshness ranges for every family, symmetric profiles included."""
    from chrono_engine.synthetic import make_corpus
    c = make_corpus(3000, 16, clusters=10, seed=21)
    fams = [ce.Exponential(half_life=30), ce.Gaussian(half_life=200), ce.Linear(rate=0.001),
            ce.PowerLaw(0.5), ce.Weibull(1.5, 400), ce.HalfLife(90), ce.NoDecay(),
            ce.Gaussian(half_life=100, symmetric=True), ce.Exponential(half_life=60, unit="hours")]
    pol = ce.DecayPolicy({f"type{i:02d}": fams[i % len(fams)] for i in range(16)}, default=None)
    eng = ce.Engine(16, decay=pol, seed_min=0)
    eng.ingest(c.to_dict())
    q = c.queries(20, seed=4)
    t = times_for_selectivity(c, 0.3, 20)
    for mode in ("as_of", "latest", "all"):
        got, gs, exp, _ = check_against_reference(eng, c, q, t, mode=mode, exact=True)
        assert_same_topk(got, gs, exp)


def test_large_store_across_reallocations(tmp_path):
    """A store whose graph block outgrows the huge-page threshold (8 MiB) while it is
    ingested in batches (each growth reallocates and re-backs the block): exact answers
    still match the reference, before and after save/open."""
    from chrono_engine.synthetic import make_corpus
    from conftest import policy_for
    c = make_corpus(16000, 128, clusters=40, seed=11)
    eng = ce.Engine(128, decay=policy_for(c), M=8, ef_construction=40, threads=2)
    data = c.to_dict()
    for lo, hi in ((0, 1500), (1500, 5000), (5000, 16000)):
        eng.ingest({k: v[lo:hi] for k, v in data.items()})
    assert eng.memory()["graph"] >= 8 << 20
    q = c.queries(20, seed=4)
    t = times_for_selectivity(c, 0.3, 20)
    for mode in ("as_of", "latest"):
        got, gs, exp, _ = check_against_reference(eng, c, q, t, mode=mode, exact=True)
        assert_same_topk(got, gs, exp)
    eng.save(tmp_path / "big")
    again = ce.Engine.open(tmp_path / "big")
    a = eng.search_batch(q, 10, as_of=t, mode="as_of", exact=True)
    b = again.search_batch(q, 10, as_of=t, mode="as_of", exact=True)
    assert a.column("id").equals(b.column("id")) and a.column("score").equals(b.column("score"))


_VARIANT_SCRIPT = r"""
import sys, numpy as np, chrono_engine as ce
from chrono_engine.synthetic import make_corpus, times_for_selectivity
assert ce.build_info()["simd"] == sys.argv[1], ce.build_info()["simd"]
c = make_corpus(2500, 13, clusters=8, seed=12)
rng = np.random.default_rng(1)
d = c.to_dict()
d["vector"] = (c.vector * rng.uniform(0.3, 2.0, (len(c), 1))).astype(np.float32)
if sys.argv[2] == "ip":
    d["vector"][7] = 0.0  # a zero vector: compact scale 0
eng = ce.Engine(13, metric=sys.argv[2], decay=ce.DecayPolicy({f"type{i:02d}": ce.Exponential(half_life=h) for i, h in enumerate(c.half_lives)}, default=None), threads=1)
eng.ingest(d)
q = c.queries(70, seed=3) * 1.3  # two groups: 64 and a padded 6
t = times_for_selectivity(c, 0.5, 70)
out = {}
for scan in ("similarity", "bounds"):
    eng.scan = scan
    for fusion in ("product", "linear"):
        for mode in ("as_of", "latest"):
            r = eng.search_batch(q, 10, mode=mode, as_of=t, fusion=fusion, exact=True, threads=1)
            out[f"{scan}_{fusion}_{mode}_id"] = r.column("id").to_numpy()
            out[f"{scan}_{fusion}_{mode}_score"] = r.column("score").to_numpy()
            out[f"{scan}_{fusion}_{mode}_query"] = r.column("query").to_numpy()
np.savez(sys.argv[3], **out)
"""


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["cosine", "ip"])
def test_certified_search_agrees_across_kernel_variants(tmp_path, metric):
    """The planner's compact caps take a different path per variant (float group dots, or
    int8 x int8 with quantised queries on AVX512-VNNI), and per scan order: every variant
    and both orders must return the same certified top-10 (d = 13: a partial 4-byte block;
    a zero vector under ip; a padded group)."""
    import os
    import subprocess
    import sys
    results = {}
    for v in ce.build_info()["simd_available"]:
        out = tmp_path / f"{v}.npz"
        env = dict(os.environ, CHRONO_SIMD=v)
        # cwd: away from the checkout, whose source tree would shadow the installed package
        subprocess.run([sys.executable, "-c", _VARIANT_SCRIPT, v, metric, str(out)], check=True, env=env,
                       cwd=tmp_path)
        results[v] = dict(np.load(out))
    base = results[ce.build_info()["simd_available"][0]]
    for v, r in results.items():
        for key in base:
            if key.endswith("_id"):
                stem = key[:-3]
                got = [r[key][r[stem + "_query"] == i] for i in range(70)]
                gs = [r[stem + "_score"][r[stem + "_query"] == i] for i in range(70)]
                b = "bounds_" + stem.split("_", 1)[1]  # base variant, bounds order
                exp = [(base[b + "_id"][base[b + "_query"] == i], base[b + "_score"][base[b + "_query"] == i])
                       for i in range(70)]
                assert_same_topk(got, gs, exp, tol=1e-5)


@pytest.mark.parametrize("scan", ["similarity", "bounds"])
@pytest.mark.parametrize("fusion", ["product", "linear"])
def test_scan_orders_bitemporal_against_reference(small_corpus, scan, fusion):
    """Both scan orders against the reference with everything that removes or penalises
    a row per query at once: retractions and a different known_at per query, tau,
    deprecated rows (latest mode), a fact-type mask, and groups of 64 with mixed times."""
    from conftest import policy_for
    c = small_corpus
    eng = ce.Engine(32, decay=policy_for(c), threads=2, scan=scan)
    eng.ingest(c.to_dict())
    nq = 70
    known, types, mask = retract_and_view([eng], c, np.random.default_rng(17), nq, every=8)
    q = c.queries(nq, seed=21)
    t = times_for_selectivity(c, 0.3, nq)
    cols = core_cols(eng)
    vecs = eng.vectors()
    sims = ref.similarities(q, vecs, eng.metric)
    for mode in ("as_of", "latest"):
        for kw in ({"tau": 0.2}, {"fact_types": types}):
            res = eng.search_batch(q, 10, mode=mode, as_of=t, known_at=known, fusion=fusion, exact=True, **kw)
            assert res.column("certified").to_numpy().all()
            exp = ref.search(cols, vecs, decay_fn(eng), q, 10, mode=mode, t=t, known_at=known, fusion=fusion,
                             tau=kw.get("tau", 0.0), type_mask=mask if "fact_types" in kw else None,
                             metric=eng.metric, sims=sims)
            qcol = res.column("query").to_numpy()
            got = [res.column("id").to_numpy()[qcol == i] for i in range(nq)]
            gs = [res.column("score").to_numpy()[qcol == i] for i in range(nq)]
            assert_same_topk(got, gs, exp)


# ----------------------------------------------------------------------------- open window ends

@pytest.mark.parametrize("open_end", ["start", "end", "both"])
def test_open_windows_match_reference(small_engine, small_corpus, open_end):
    """window=(start, None), (None, end) and (None, None): an open start is the beginning of
    time, an open end stays open, as in Engine.query; the reference's window is the same
    interval with the ends spelled out."""
    q = small_corpus.queries(20, seed=31)
    t = times_for_selectivity(small_corpus, 0.2, 20)
    start, end = t - 90 * US_PER_DAY, t + 30 * US_PER_DAY
    window = {"start": (None, end), "end": (start, None), "both": (None, None)}[open_end]
    spelled = (np.full(20, MIN_TIME_US) if window[0] is None else window[0],
               np.full(20, OPEN_END) if window[1] is None else window[1])
    known = np.full(len(q), np.iinfo(np.int64).max - 1, np.int64)
    res = small_engine.search_batch(q, 10, mode="window", window=window, as_of=t, known_at=known, exact=True)
    eng = small_engine
    exp = ref.search(core_cols(eng), eng.vectors(), decay_fn(eng), q, 10, mode="window", t=t, known_at=known,
                     window=spelled, metric=eng.metric)
    qcol = res.column("query").to_numpy()
    got = [res.column("id").to_numpy()[qcol == i] for i in range(len(q))]
    gs = [res.column("score").to_numpy()[qcol == i] for i in range(len(q))]
    assert_same_topk(got, gs, exp)
    # one query: the same answer as its row of the batch
    first = tuple(None if w is None else w[0] for w in window)
    one = small_engine.search(q[0], 10, mode="window", window=first, as_of=t[0], known_at=known[0], exact=True)
    assert one.column("id").to_pylist() == got[0].tolist()


def test_open_window_end_anchors_decay_now(monkeypatch):
    """With an open end and no as_of, decay is anchored at now (a closed window's default
    is its end)."""
    import chrono_engine.engine as engine_mod
    now = 1_893_456_000_000_000  # 2030-01-01, after the rows' ingest
    monkeypatch.setattr(engine_mod, "now_us", lambda: now)  # the engine fixes each call's now
    eng = ce.Engine(2, decay=ce.Exponential(half_life=3650))
    eng.ingest({"vector": [[1, 0], [1, 0.1], [1, 0.2]], "valid_from": ["2020-01-01", "2023-01-01", "2024-05-01"],
                "valid_to": ["2021-01-01", None, None]})
    for call in (lambda **kw: eng.search([1, 0], 3, **kw), lambda **kw: eng.search_batch([[1, 0]], 3, **kw)):
        got = call(mode="window", window=("2022-01-01", None))
        want = call(mode="window", window=("2022-01-01", OPEN_END), as_of=now)
        assert got.column("id").to_pylist() == want.column("id").to_pylist() == [2, 1]
        assert got.column("score").to_pylist() == want.column("score").to_pylist()
    with pytest.raises(ce.errors.QueryError, match="window start must be before its end"):
        eng.search([1, 0], mode="window", window=("2030-01-01", "2020-01-01"))


def _typed_engine():
    policy = ce.DecayPolicy({"news": ce.Exponential(half_life=7), "policy": ce.Exponential(half_life=365)},
                            default=ce.Exponential(half_life=90))
    eng = ce.Engine(2, decay=policy, threads=1)
    eng.ingest({"vector": [[1, 0], [0, 1], [1, 1]], "valid_from": ["2024-01-01"] * 3,
                "fact_type": ["news", "law", "news"]})
    return eng


def test_unknown_fact_types_are_errors_everywhere():
    """A fact type that no row carries and the decay policy does not name is an error naming
    the unknown types and the known ones, in search, search_batch and query (a type only the
    default profile would cover used to select nothing, silently)."""
    eng = _typed_engine()
    calls = {"search": lambda ft: eng.search([1, 0], fact_types=ft),
             "search_batch": lambda ft: eng.search_batch([[1, 0]], fact_types=ft),
             "query": lambda ft: eng.query("news now", embed=lambda s: np.array([1, 0], np.float32), fact_types=ft),
             "options": lambda ft: eng.search([1, 0], options=ce.SearchOptions(fact_types=ft))}
    for name, call in calls.items():
        with pytest.raises(ce.errors.QueryError) as e:
            call(["news", "nope", "zzz"])
        msg = str(e.value)
        assert isinstance(e.value, ValueError)
        assert msg.startswith("fact_types:") and "'nope'" in msg and "'zzz'" in msg, (name, msg)
        assert "known: 'news', 'law', 'policy'" in msg, (name, msg)
        with pytest.raises(ce.errors.QueryError, match="'nope'"):
            call("nope")
        # a type the policy names, not yet ingested, selects nothing; known ones select their rows
        assert call(["policy"]).num_rows == 0 if name != "query" else call(["policy"]).hits.num_rows == 0
        hits = call("law")
        hits = hits.hits if name == "query" else hits
        assert hits.column("id").to_pylist() == [1]


# ----------------------------------------------------------------------------- one query per call

@pytest.mark.parametrize("scan", ["auto", "similarity", "bounds"])
@pytest.mark.parametrize("dim", [100, 384])
def test_lone_queries_match_reference(scan, dim):
    """A lone query (a group of one: the single-query integer dots on AVX512-VNNI, read
    over full 64-byte blocks and a partial one at d = 100) gives the reference's top-k in
    both scan orders and modes, and the same rows as the same query inside a batch."""
    from conftest import policy_for
    from chrono_engine.synthetic import make_corpus
    c = make_corpus(3000, dim, clusters=16, seed=11)
    eng = ce.Engine(dim, decay=policy_for(c), threads=1, scan=scan)
    eng.ingest(c.to_dict())
    nq = 12
    q = c.queries(nq, seed=5)
    t = times_for_selectivity(c, 0.2, nq)
    cols, vecs = core_cols(eng), eng.vectors()
    sims = ref.similarities(q, vecs, eng.metric)
    for mode in ("as_of", "latest"):
        exp = ref.search(cols, vecs, decay_fn(eng), q, 10, mode=mode, t=t,
                         known_at=np.full(nq, np.iinfo(np.int64).max - 1, np.int64), metric=eng.metric, sims=sims)
        batch = eng.search_batch(q, 10, mode=mode, as_of=t, exact=True)
        got, gs = [], []
        for i in range(nq):
            res = eng.search(q[i], 10, mode=mode, as_of=int(t[i]), exact=True)
            assert res.column("certified").to_numpy().all()
            got.append(res.column("id").to_numpy())
            gs.append(res.column("score").to_numpy())
            qb = batch.column("query").to_numpy() == i
            np.testing.assert_array_equal(got[-1], batch.column("id").to_numpy()[qb])
        assert_same_topk(got, gs, exp)


@pytest.mark.parametrize("metric", ["cosine", "ip"])
@pytest.mark.parametrize("share", [0.15, 0.01])
def test_lone_scan_matches_reference_under_every_option(metric, share):
    """The lone query's own certified scan (scan_one.hpp: a group of one under
    scan="auto", with its per-row penalties, validities by one kernel call, int8 caps in
    batches and exact scores best cap first) against the reference, for everything that
    removes or penalises a row: retractions and per-call known_at, tau, a fact-type mask,
    the out-of-force and future policies of latest mode, both fusions, windows, mode
    "all", no arbitration; and the same rows as the group scan (the query inside a batch
    of 64 with scan="bounds"), as batches of two to five (split into lone scans) and of
    six (a group scan). At a hundredth in force the stage's rows are sparse (fewer than
    one in 32 of the store) and the scan takes them in the order they come, not in
    storage order."""
    from conftest import policy_for
    from chrono_engine.synthetic import make_corpus
    c = make_corpus(3000, 48, clusters=16, seed=23)
    eng = ce.Engine(48, metric=metric, decay=policy_for(c), threads=1)
    grp = ce.Engine(48, metric=metric, decay=policy_for(c), threads=1, scan="bounds")
    d = c.to_dict()
    if metric == "ip":  # norms that differ: the similarity cap is |q| max|x|, not 1
        scale = np.random.default_rng(2).uniform(0.5, 2.0, len(c)).astype(np.float32)
        d["vector"] = d["vector"] * scale[:, None]
    for e in (eng, grp):
        e.ingest(d)
    nq = 10
    known, types, mask = retract_and_view([eng, grp], c, np.random.default_rng(29), nq, every=10)
    q = c.queries(nq, seed=8)
    t = times_for_selectivity(c, share, nq)
    cols, vecs = core_cols(eng), eng.vectors()
    sims = ref.similarities(q, vecs, eng.metric)
    w0 = t - 200 * US_PER_DAY
    cases = [
        ("as_of", {}), ("as_of", {"tau": 0.3}), ("as_of", {"fact_types": types}),
        ("as_of", {"fusion": "linear", "alpha": 0.6}), ("as_of", {"arbitrate": False}),
        ("latest", {}), ("latest", {"deprecated": "exclude"}), ("latest", {"future": "penalize"}),
        ("latest", {"future": "include", "deprecated": "include"}),
        ("latest", {"fusion": "linear", "tau": 0.2, "deprecation_penalty": 0.5}),
        ("window", {}), ("all", {"fusion": "linear"}),
    ]
    rep = np.repeat(np.arange(nq), 7)[:64]  # a group of 64: query i at batch rows 7i .. 7i + 6
    for mode, kw in cases:
        def times(i):  # the queries' times (i: an index or index array), by mode
            return {"window": (w0[i], t[i])} if mode == "window" else {"as_of": t[i]}
        wnd = (w0, t) if mode == "window" else (0, 0)
        exp = ref.search(cols, vecs, decay_fn(eng), q, 10, mode=mode, t=t, known_at=known, window=wnd,
                         metric=eng.metric, sims=sims, **ref_options(kw, mask))
        batch = grp.search_batch(q[rep], 10, mode=mode, known_at=known[rep], exact=True, **times(rep), **kw)
        got, gs = [], []
        for i in range(nq):
            one = {k2: (int(v[0]), int(v[1])) if k2 == "window" else int(v) for k2, v in times(i).items()}
            res = eng.search(q[i], 10, mode=mode, known_at=int(known[i]), exact=True, explain=True, **one, **kw)
            assert res.column("certified").to_numpy().all(), (mode, kw)
            assert set(res.column("plan").to_pylist()) <= {"scan"}
            got.append(res.column("id").to_numpy())
            gs.append(res.column("score").to_numpy())
            if i < 9:  # in the group of 64
                qb = batch.column("query").to_numpy() == 7 * i
                np.testing.assert_array_equal(got[-1], batch.column("id").to_numpy()[qb], err_msg=f"{mode} {kw}")
        assert_same_topk(got, gs, exp)
        # batches of two to five: each query its own lone scan (run_certified splits the
        # group; from three only with at most an eighth of the store in force); six: the
        # group scan again
        for m in (2, 3, 4, 5, 6):
            few = eng.search_batch(q[:m], 10, mode=mode, known_at=known[:m], exact=True, **times(slice(0, m)), **kw)
            for i in range(m):
                qb = few.column("query").to_numpy() == i
                np.testing.assert_array_equal(few.column("id").to_numpy()[qb], got[i], err_msg=f"{mode} {kw} {m}")


def test_take_strings_refuses_damaged_buffers():
    """The native gather checks what it reads: offsets out of order or beyond the data, a
    wrong count of offsets, and rows out of range are errors, never a read out of bounds."""
    from chrono_engine import _core
    o, d = np.array([0, 2, 5], np.int32), np.frombuffer(b"abcde", np.uint8)
    starts, rows = np.array([0, 2], np.int64), np.array([1, 0], np.int64)
    ((off, data, valid),) = _core.take_strings([[(o, d, None, 0)]], starts, rows)
    assert off.tolist() == [0, 3, 5] and bytes(data) == b"cdeab" and valid is None
    bits = np.array([0b100], np.uint8)  # bit 2 (row 0 at bit offset 2) valid, row 1 null
    ((_, _, valid),) = _core.take_strings([[(o, d, bits, 2)]], starts, rows)
    assert valid.tolist() == [False, True]
    for bad in (np.array([0, 4, 2], np.int32), np.array([0, 2, 9], np.int32), np.array([-1, 2, 5], np.int32)):
        with pytest.raises(ValueError, match="offsets"):
            _core.take_strings([[(bad, d, None, 0)]], starts, rows)
    with pytest.raises(ValueError, match="offsets"):
        _core.take_strings([[(o[:2], d, None, 0)]], starts, rows)
    with pytest.raises(ValueError, match="bitmap too short"):
        _core.take_strings([[(o, d, bits, 7)]], starts, rows)
    for r in (-1, 2):
        with pytest.raises(IndexError):
            _core.take_strings([[(o, d, None, 0)]], starts, np.array([r], np.int64))


def test_record_batch_builds_what_pyarrow_builds():
    """``_core.record_batch`` (the lone search's table, through the Arrow C data interface)
    gives the table pyarrow builds from the same columns, nulls included, and refuses
    columns of the wrong type or length by name."""
    from chrono_engine import _core
    from chrono_engine.search.results import _TS
    valid = np.array([True, False, True])
    cols = [("q", "i", np.array([3, 1, 2], np.int32), None), ("id", "L", np.array([7, 2**64 - 1, 0], np.uint64), None),
            ("s", "g", np.array([0.5, -1.0, np.inf]), None), ("f", "f", np.array([1, 2, 3], np.float32), valid),
            ("t", "tsu:UTC", np.array([0, 5, -7], np.int64), valid), ("b", "b", np.array([True, False, True]), None),
            ("u", "u", (np.array([0, 1, 1, 4], np.int32), np.frombuffer(b"abcd", np.uint8)), valid),
            ("w", "u", ["x", "", "yz\u00e9"], None)]
    rb = pa.RecordBatch._import_from_c_capsule(*_core.record_batch(cols))
    rb.validate(full=True)
    want = pa.table({"q": pa.array([3, 1, 2], pa.int32()), "id": pa.array([7, 2**64 - 1, 0], pa.uint64()),
                     "s": [0.5, -1.0, np.inf], "f": pa.array([1, None, 3], pa.float32()),
                     "t": pa.array([0, None, -7], pa.int64()).view(_TS), "b": [True, False, True],
                     "u": ["a", None, "bcd"], "w": ["x", "", "yz\u00e9"]})
    assert pa.Table.from_batches([rb]).equals(want)
    for bad, what in ((("x", "i", np.array([1, 2, 3], np.int64), None), "'x'"),
                      (("x", "i", np.array([1, 2], np.int32), None), "'x' must hold"),
                      (("x", "f", np.array([1, 2, 3], np.float32), np.array([True, False])), r"'x \(validity\)'"),
                      (("x", "?", np.array([1, 2, 3], np.int32), None), "unsupported format"),
                      (("x", "u", (np.array([0, 3, 1, 4], np.int32), np.frombuffer(b"abcd", np.uint8)), None), "'x'"),
                      (("x", "u", (np.array([0, 1, 2, 9], np.int32), np.frombuffer(b"abcd", np.uint8)), None), "'x'"),
                      (("x", "u", ["x", 1, "z"], None), "non-string")):
        with pytest.raises(ValueError, match=what):
            _core.record_batch(cols[:1] + [bad])
    # a string column first: its row count from its offsets (none: refused, not read) or its list
    with pytest.raises(ValueError, match="no offsets"):
        _core.record_batch([("u", "u", (np.zeros(0, np.int32), np.zeros(0, np.uint8)), None)])
    for bad in ((np.zeros(1, np.int32),), 5, (5, 6)):
        with pytest.raises((ValueError, TypeError)):
            _core.record_batch([("u", "u", bad, None)])
    rb = pa.RecordBatch._import_from_c_capsule(*_core.record_batch([("w", "u", ["abc", "d"], None),
                                                                     ("q", "i", np.array([1, 2], np.int32), None)]))
    assert rb.to_pydict() == {"w": ["abc", "d"], "q": [1, 2]}
    # the array alone (schema=False), imported against a schema imported before: the same batch
    full = pa.RecordBatch._import_from_c_capsule(*_core.record_batch(cols))
    capsule, address = _core.record_batch(cols, False)
    alone = pa.RecordBatch._import_from_c(address, full.schema)
    alone.validate(full=True)
    assert alone.equals(full) and alone.schema.equals(full.schema)
    del capsule
    capsule, address = _core.record_batch(cols, schema=False)
    del capsule  # never imported: the capsule frees the struct and its buffers (ASan: no leak)


_VERSIONS = [None, "2", "v2", "V2.1", "1.2.3.4", "1.2.3.0", "0", "00000", "000000001", "v65535.65535.65535.65535",
             "v01.002.0003", "99999", "65536", "123456", "1.2.3.4.5", "", "v", "1.", ".1", "1..2", "x1", "1.x",
             "v-1", "1 ", " 1", "１", "v1.2.3.4.", "٣"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_native_citation_equals_the_python_one(lang):
    """The native citation (``_core.citation``, what ``search_one`` writes) equals
    ``_few_citations`` wherever it answers, and defers exactly where Python differs: a
    version ``parse_version`` refuses, a day outside years 1-9999."""
    from chrono_engine import search as S
    from chrono_engine._time import MAX_TIME_US
    from chrono_engine.errors import SchemaError
    rng = np.random.default_rng(4)
    days = [MIN_TIME_US, MAX_TIME_US, 0, -1, 1, US_PER_DAY - 1, US_PER_DAY, -US_PER_DAY, -US_PER_DAY - 1,
            951_782_400 * 10**6, 4_107_542_399 * 10**6]  # 2000-02-29, 2100-02-28 23:59:59
    days += rng.integers(MIN_TIME_US, MAX_TIME_US, 300).tolist()
    titles = [None, "", "T", "差旅报销管理制度", "a\nb", "emoji 🙂", "untitled"]
    n = 0
    for vf in days:
        for title in titles:
            for version in _VERSIONS:
                got = ce._core.citation(title, version, vf, lang == "zh")
                try:
                    want = S.results._few_citations([title], [version], np.array([vf], np.int64), lang)[0]
                except SchemaError:
                    assert got is None, (version, got)
                    continue
                assert got == want, (title, version, vf)
                n += 1
    assert n > 5000
    for out in (MIN_TIME_US - 1, MAX_TIME_US + 1, -(2**63), 2**63 - 1):  # years 0 and 10000, the ends
        assert ce._core.citation("T", None, out, lang == "zh") is None
