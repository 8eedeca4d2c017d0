"""Smoke test of the benchmark harness (chrono_engine.bench) on a tiny corpus.

It checks the harness, not the engine's speed: its NumPy oracle and the exact peers give
the same top-k as tests/reference.py, its recall is the reference's recall, and a small
end-to-end run prints its table and writes JSON. No timing is asserted.
"""
import json

import numpy as np
import pytest
import reference as ref

import chrono_engine as ce
from chrono_engine import bench
from chrono_engine.bench import timing
from chrono_engine.synthetic import make_corpus, times_for_selectivity

N, DIM = 3000, 32


@pytest.fixture(scope="module")
def setup():
    c = make_corpus(N, DIM, clusters=24, seed=5)
    pol = bench.policy_for(c.half_lives)
    eng = ce.Engine(DIM, decay=pol, threads=2)
    eng.ingest(c.to_dict())
    return c, pol, eng


def _decay_fn(eng):
    types = np.asarray(eng.fact_types, dtype=object)
    return lambda age, codes: eng.decay.evaluate(age, types[codes])


def _reference(eng, w, q: bench.Queries):
    return ref.search(w.cols, w.vectors, _decay_fn(eng), q.vectors, q.k, mode=q.mode, t=q.t,
                      known_at=q.known_at, fusion=q.fusion, alpha=q.alpha, tau=q.tau, penalty=q.penalty,
                      metric="cosine")


def _queries(c, mode, fusion, sel=0.1, n=12, seed=3):
    t = times_for_selectivity(c, sel, n, seed=seed)
    return bench.Queries(c.queries(n, seed=seed), t, np.full(n, bench.KNOWN_ALL, np.int64),
                         mode=mode, fusion=fusion)


def _assert_same(got: bench.Answers, exp):
    assert len(got) == len(exp)
    for g, gs, (e, es) in zip(got.ids, got.scores, exp):
        assert bench.same_topk(g, gs, e, es, tol=2e-6), (g, gs, e, es)


def test_workload_from_corpus_matches_engine(setup):
    """The harness's view of the corpus is what the engine stored (version keys may
    differ in value but not in order within a stem)."""
    c, pol, eng = setup
    a, b = bench.workload_from_corpus(c, pol), bench.workload_from_engine(eng)
    for key in ("valid_from", "valid_to", "observed_at", "ingested_at", "retracted_at", "stem",
                "deprecated", "id"):
        np.testing.assert_array_equal(np.asarray(a.cols[key]), np.asarray(b.cols[key]), err_msg=key)
    np.testing.assert_allclose(a.cols["reliability"], b.cols["reliability"], rtol=0, atol=1e-7)
    np.testing.assert_allclose(a.vectors, b.vectors, rtol=0, atol=1e-6)
    # fact-type codes are numbered differently; each item's decay kernel is the same
    np.testing.assert_array_equal(a.specs[a.cols["fact_type"]], b.specs[b.cols["fact_type"]])
    np.testing.assert_array_equal(bench.static_rank(a.cols), bench.static_rank(b.cols))


@pytest.mark.parametrize("mode", ["as_of", "latest"])
@pytest.mark.parametrize("fusion", ["product", "linear"])
def test_oracle_and_exact_peers_match_reference(setup, mode, fusion):
    c, pol, eng = setup
    w = bench.workload_from_engine(eng)
    q = _queries(c, mode, fusion)
    exp = _reference(eng, w, q)
    got = bench.NumpyExact(w).search(q)
    _assert_same(got, exp)
    _assert_same(bench.NumpyExact(bench.workload_from_corpus(c, pol)).search(q), exp)
    _assert_same(bench.NumpyExact(w, block_elems=1).search(q), exp)  # one query per block
    if mode == "as_of":
        _assert_same(bench.NumpyPrefilter(w).search(q), exp)
    # recall: the harness computes what the reference computes
    assert bench.recall_at_k(got, exp) == ref.recall(got.ids, exp) == 1.0
    damaged = [np.r_[g[:6], np.arange(10**9, 10**9 + 4, dtype=np.uint64)] for g in got.ids]
    assert bench.recall_at_k(damaged, exp) == pytest.approx(ref.recall(damaged, exp))
    assert bench.recall_at_k(damaged, got) == pytest.approx(0.6)


def test_engine_answers_and_recall_parse(setup):
    """answers_from_table reads the engine's table; recall agrees with the reference's."""
    c, _, eng = setup
    w = bench.workload_from_engine(eng)
    q = _queries(c, "as_of", "product", sel=0.3, n=15, seed=4)
    res = eng.search_batch(q.vectors, q.k, mode="as_of", as_of=q.t, known_at=q.known_at, threads=1)
    got, cert = bench.answers_from_table(res, len(q))
    assert cert.dtype == bool and len(cert) == len(q)
    exp = _reference(eng, w, q)
    assert bench.recall_at_k(got, exp) == pytest.approx(ref.recall(got.ids, exp))


@pytest.mark.parametrize("module, peer_class", [("hnswlib", "HnswlibFiltered"), ("faiss", "FaissFiltered"),
                                                ("usearch", "UsearchOverfetch"), ("lancedb", "LanceDBPrefilter")])
def test_graph_peers_reach_the_oracle_at_large_ef(setup, module, peer_class):
    pytest.importorskip(module)
    c, pol, _ = setup
    w = bench.workload_from_corpus(c, pol)
    # USearch built on one thread: its parallel inserts may leave a few nodes unreachable, run to run
    kwargs = {"lancedb": {}, "usearch": {"threads": 1}}.get(module, {"threads": 2})
    peer = getattr(bench, peer_class)(w, **kwargs)
    for mode in ("as_of", "latest"):
        q = _queries(c, mode, "product", sel=0.1, n=6, seed=6)
        exp = bench.NumpyExact(w).search(q)
        got = peer.search(q, ef=N)  # ef = N: the filtered search can return every eligible item
        assert bench.recall_at_k(got, exp) >= 0.99
        for sc in got.scores:  # the rerank's scores, best first
            assert (np.diff(sc) <= 1e-12).all()


def test_usearch_overfetch_grows_until_k_eligible(setup):
    """With 1% of the items in force and ef = k, one search for ef × n / eligible
    neighbours often holds fewer than k eligible ones: the over-fetch grows until it has
    them, so every answer is as long as the oracle's, and holds eligible items only."""
    pytest.importorskip("usearch")
    c, pol, _ = setup
    w = bench.workload_from_corpus(c, pol)
    peer = bench.UsearchOverfetch(w, threads=1)  # one thread: the same graph every run
    q = _queries(c, "as_of", "product", sel=0.01, n=20, seed=8)
    exp = bench.NumpyExact(w).search(q)
    got = peer.search(q, ef=q.k)
    assert [len(i) for i in got.ids] == [len(i) for i in exp.ids]
    for i, ids in enumerate(got.ids):  # ids are rows in this workload
        ok, _ = peer.np.eligibility(int(q.t[i]), int(q.known_at[i]), q.mode, q.penalty, q.tau, q.future_penalty)
        assert ok[peer.col_of_row][ids.astype(np.int64)].all()


@pytest.mark.parametrize("mode, future, penalty", [("as_of", "exclude", 0.1), ("latest", "exclude", 0.1),
                                                   ("latest", "penalize", 0.1), ("latest", "include", 0.1),
                                                   ("latest", "exclude", 0.0)])
def test_lancedb_sql_filter_is_the_per_row_definition(setup, mode, future, penalty):
    """The LanceDB peer's SQL pre-filter selects exactly the rows known at the transaction
    time whose penalty is above zero (in force; in latest mode also those no longer in
    force where ``penalty`` > 0, and those not yet valid where ``future`` keeps them): a
    superset of the eligible rows, which differ by per-stem arbitration only."""
    pytest.importorskip("lancedb")
    c, pol, _ = setup
    w = bench.workload_from_corpus(c, pol)
    peer = bench.LanceDBPrefilter(w)
    q = _queries(c, mode, "product", sel=0.1, n=3, seed=9)
    q.future, q.penalty = future, penalty
    cols = {k: np.asarray(v) for k, v in w.cols.items()}
    for i in range(len(q)):
        T = int(q.t[i])
        valid = (cols["valid_from"] <= T) & (T < cols["valid_to"])
        K = int(np.median(cols["ingested_at"][valid]))  # half the rows in force are not yet known
        q.known_at[i] = K
        got = peer.table.search().where(peer.where(q, i)).select(["row"]).limit(N).to_arrow()
        sel = np.zeros(N, bool)
        sel[got.column("row").to_numpy()] = True
        known = (cols["ingested_at"] <= K) & (K < cols["retracted_at"])
        if mode == "as_of":
            expect = known & valid
        else:
            in_force = valid & ~cols["deprecated"]
            pen = np.where(in_force, 1.0, np.where(cols["valid_from"] > T, q.future_penalty, q.penalty))
            expect = known & (pen > 0)
        np.testing.assert_array_equal(sel, expect)
        ok, _ = peer.np.eligibility(T, K, mode, q.penalty, q.tau, q.future_penalty)
        assert not (ok[peer.col_of_row] & ~sel).any()


@pytest.mark.slow
def test_numba_peer_matches_oracle(setup):
    """The fused Numba scan is exact (compiling it takes several seconds)."""
    pytest.importorskip("numba")
    c, pol, _ = setup
    w = bench.workload_from_corpus(c, pol)
    peer = bench.NumbaScan(w)
    for mode in ("as_of", "latest"):
        for fusion in ("product", "linear"):
            q = _queries(c, mode, fusion, n=10, seed=7)
            exp = bench.NumpyExact(w).search(q)
            _assert_same(peer.search(q, threads=1), [(i, s) for i, s in zip(exp.ids, exp.scores)])
            _assert_same(peer.search(q, threads=2), [(i, s) for i, s in zip(exp.ids, exp.scores)])


def test_small_run_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    peers = "numpy,numpy_prefilter" + "".join(f",{m}" for m in ("hnswlib", "usearch", "lancedb") if _has(m))
    report = bench.main(["--n", str(N), "--dim", str(DIM), "--queries", "16", "--slow-queries", "4",
                         "--selectivity", "0.5,0.05", "--threads", "1", "--ef", "64,256", "--min-time", "0",
                         "--peers", peers, "--json", str(out)])
    printed = capsys.readouterr().out
    assert "ratio" in printed and "engine" in printed
    assert ("USearch HNSW" in printed) == ("usearch" in peers) and ("LanceDB exact" in printed) == ("lancedb" in peers)
    data = json.loads(out.read_text())
    assert data["config"]["n"] == N and data["config"]["dim"] == DIM
    rows = data["results"]
    assert len(rows) == 2 * 2 * 1  # modes x selectivities x threads
    assert {r["mode"] for r in rows} == {"as_of", "latest"}
    for r in rows:
        assert 0.0 <= r["engine"]["recall"] <= 1.0 and r["engine"]["qps"] > 0
        assert r["peers"]["numpy"]["recall"] == 1.0
        assert ("numpy_prefilter" in r["peers"]) == (r["mode"] == "as_of")
        if "hnswlib" in peers:
            assert {"hnswlib_ef64", "hnswlib_ef256"} <= set(r["peers"])
            assert r["peers"]["hnswlib_ef64"]["queries"] == 4
        if "usearch" in peers:
            assert {"usearch_ef64", "usearch_ef256"} <= set(r["peers"])
            assert r["peers"]["usearch_ef64"]["queries"] == 4 and r["peers"]["usearch_ef64"]["threads"] == 1
        if "lancedb" in peers:  # ef is its over-fetch k'; it runs on its own thread pools
            assert {"lancedb_k64", "lancedb_k256"} <= set(r["peers"])
            assert r["peers"]["lancedb_k64"]["queries"] == 4 and r["peers"]["lancedb_k64"]["threads"] is None
        assert r["best_peer"] is not None and r["ratio"] > 0
    assert len(report["results"]) == len(rows)
    assert data["regimes"]["steep"]["engine_memory"]["metadata"] > 0


def test_engine_batch_calls_give_the_one_call_answers(capsys):
    # 16 queries in calls of 5 (5 + 5 + 5 + 1): the per-call query numbers are offset into
    # the run's, so the answers are the oracle's exactly as with one call
    common = ["--n", str(N), "--dim", str(DIM), "--queries", "16", "--selectivity", "0.2", "--threads", "1",
              "--min-time", "0", "--peers", "numpy", "--no-engine-exact", "--json", "", "--plot", ""]
    report = bench.main(common + ["--engine-batch", "5"])
    printed = capsys.readouterr().out
    assert "5 queries per search_batch call" in printed
    assert "at >= 10x the best peer" in printed  # batches are judged by the engine's first goal
    assert report["config"]["engine_batch"] == 5
    for r in report["results"]:
        assert r["engine"]["recall"] == 1.0 and r["engine"]["same_topk"] == 1.0
        assert r["engine"]["certified_but_wrong"] == 0


def test_one_query_runs_are_judged_by_the_one_query_goal(capsys):
    # one Engine.search per query is held to 5x the best peer, batches to 10x
    report = bench.main(["--n", str(N), "--dim", str(DIM), "--queries", "4", "--selectivity", "0.2", "--threads", "1",
                         "--min-time", "0", "--peers", "numpy", "--no-engine-exact", "--json", "", "--plot", "",
                         "--engine-batch", "1"])
    printed = capsys.readouterr().out
    rows = report["results"]
    met = sum(r["ratio"] is not None and r["ratio"] >= 5 and r["engine_meets_recall"] for r in rows)
    assert f"at >= 5x the best peer reaching it): met in {met} of {len(rows)} rows" in printed


def test_corpus_in_time_order_is_the_same_items_by_valid_from():
    c = make_corpus(N, DIM, clusters=24, seed=5)
    t = c.in_time_order()
    order = np.argsort(c.valid_from, kind="stable")
    assert not np.all(np.diff(c.valid_from) >= 0)  # the generated order spreads the times
    assert np.all(np.diff(t.valid_from) >= 0)
    for name in c.ROW_COLUMNS:  # every per-item column moved together
        np.testing.assert_array_equal(getattr(t, name), getattr(c, name)[order])
    for name in ("fact_types", "half_lives", "centers", "start", "end"):
        assert np.array_equal(getattr(t, name), getattr(c, name))
    # queries and query times do not depend on the order
    np.testing.assert_array_equal(t.queries(8, seed=4), c.queries(8, seed=4))
    np.testing.assert_array_equal(times_for_selectivity(t, 0.05, 8), times_for_selectivity(c, 0.05, 8))


def test_time_ordered_run_answers_the_oracle_of_the_same_rows(capsys):
    # --order time: the engine and every peer read the rows in valid_from order; the
    # oracle is computed on the same rows, so recall and exactness hold as before
    report = bench.main(["--n", str(N), "--dim", str(DIM), "--queries", "8", "--selectivity", "0.05", "--threads", "1",
                         "--min-time", "0", "--peers", "numpy,numba", "--json", "", "--plot", "",
                         "--engine-batch", "1", "--order", "time"])
    assert "rows in valid_from order" in capsys.readouterr().out
    assert report["config"]["order"] == "time"
    for r in report["results"]:
        assert r["engine"]["recall"] == 1.0 and r["engine"]["certified_but_wrong"] == 0
        assert r["peers"]["numpy"]["recall"] == 1.0 and r["peers"]["numba"]["recall"] == 1.0


def test_engine_stored_by_valid_from_answers_as_before(capsys):
    # --engine-order valid_from: the engine stores the corpus by valid_from (ids unchanged),
    # the peers read it as generated; answers and recall are the oracle's
    common = ["--n", str(N), "--dim", str(DIM), "--queries", "8", "--selectivity", "0.05", "--threads", "1",
              "--min-time", "0", "--peers", "numpy", "--json", "", "--plot", "", "--engine-batch", "1"]
    report = bench.main(common + ["--engine-order", "valid_from"])
    assert "(stored by valid_from)" in capsys.readouterr().out
    assert report["config"]["engine_order"] == "valid_from"
    for r in report["results"]:
        assert r["engine"]["recall"] == 1.0 and r["engine"]["certified_but_wrong"] == 0


def _has(mod: str) -> bool:
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def test_best_time_repeats_at_least_min_repeat_and_keeps_the_best(monkeypatch):
    ticks = iter([0.0, 5.0, 10.0, 12.0, 20.0, 29.0, 30.0, 31.0])  # runs of 5, 2, 9, 1 s
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(ticks))
    calls = []
    best, out = timing.best_time(lambda: calls.append(1) or len(calls), min_time=0.3, min_repeat=3)
    assert len(calls) == 3 and out == 3 and best == 2.0  # min_time alone would stop after one run
    ticks = iter([0.0, 5.0, 10.0, 12.0, 20.0, 29.0, 30.0, 31.0])
    calls.clear()
    best, out = timing.best_time(lambda: calls.append(1) or len(calls), min_time=0.3)
    assert len(calls) == 1 and best == 5.0
    ticks = iter([0.0, 0.1, 1.0, 1.1, 2.0, 2.1, 3.0, 3.1])  # fast runs: min_time decides
    calls.clear()
    best, out = timing.best_time(lambda: calls.append(1) or len(calls), min_time=0.25, max_repeat=2,
                                 min_repeat=1)
    assert len(calls) == 2 and abs(best - 0.1) < 1e-12


@pytest.mark.slow
def test_serve_load_bench_runs_end_to_end(tmp_path, monkeypatch):
    """``chrono bench --serve`` on a tiny corpus: the engine's HTTP service as a process on
    loopback, closed-loop clients at two concurrencies; its answers reach the oracle's
    recall and the JSON report has every row. (The peer service is the same code path
    with a Numba compile; skipped here for time.)"""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    import os
    import pathlib
    from chrono_engine.bench import serve_load
    root = str(pathlib.Path(ce.__file__).resolve().parents[1])  # the servers import this package
    monkeypatch.setenv("PYTHONPATH", root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "serve.json"
    rep = serve_load.main(["--n", "3000", "--dim", "16", "--queries", "40", "--seconds", "1", "--max-requests", "200",
                           "--concurrency", "1", "4", "--rounds", "2", "--no-peer", "--work", str(tmp_path / "w"),
                           "--json", str(out)])
    rows = rep["services"]["chrono_engine"]
    assert [r["concurrency"] for r in rows] == [1, 4]
    assert all(r["requests"] > 0 and r["errors"] == 0 and r["recall"] >= 0.95 for r in rows)
    assert all(len(r["qps_rounds"]) == 2 and r["qps"] == min(r["qps_rounds"]) for r in rows)  # the lower middle of 2
    assert all("answers" not in r for r in rows)  # kept only for the recall
    assert json.loads(out.read_text())["in_process"]["search_batch_qps"] > 0
    # chrono serve --read-only --workers 2 on the same store: its two processes' CPU counted
    rep = serve_load.main(["--n", "3000", "--dim", "16", "--queries", "40", "--seconds", "1", "--max-requests", "200",
                           "--concurrency", "4", "--rounds", "1", "--no-peer", "--workers", "2",
                           "--work", str(tmp_path / "w"), "--json", str(out)])
    (row,) = rep["services"]["chrono_engine"]
    assert row["requests"] > 0 and row["errors"] == 0 and row["recall"] >= 0.95 and row["server_cores"] > 0


@pytest.mark.slow
def test_serve_replicas_bench_runs_end_to_end(tmp_path, monkeypatch):
    """benches/bench_serve_replicas.py on a tiny corpus: one and two ``chrono serve
    --read-only`` processes on one store, the clients split between them; every answer
    reaches the oracle's recall and the JSON has every row."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    import importlib.util
    import os
    import pathlib
    import sys
    root = pathlib.Path(ce.__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    bench = pathlib.Path(__file__).resolve().parents[1] / "benches" / "bench_serve_replicas.py"  # the checkout's
    spec = importlib.util.spec_from_file_location("bench_serve_replicas", bench)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_serve_replicas", mod)  # its client processes find it by name
    spec.loader.exec_module(mod)
    out, work = tmp_path / "rep.json", tmp_path / "w"
    rep = mod.main(["--n", "3000", "--dim", "16", "--queries", "40", "--processes", "1,2", "--clients", "4",
                    "--seconds", "1", "--max-requests", "100", "--work", str(work), "--json", str(out)])
    rows = rep["rows"]
    assert [r["processes"] for r in rows] == [1, 2] and [len(r["server_cores"]) for r in rows] == [1, 2]
    assert all(r["requests"] > 0 and r["errors"] == 0 and r["recall"] >= 0.95 for r in rows)
    assert json.loads(out.read_text())["search_batch_qps"] > 0
    with pytest.raises(SystemExit):  # more processes than clients is refused by name
        mod.main(["--processes", "8", "--clients", "4", "--work", str(work)])


def test_planner_sweep_bench_runs_and_reuses_its_store(tmp_path, capsys):
    """benches/bench_planner_sweep.py on a tiny store: every point's default search reaches
    recall 1 against exact=True here (no point is approximate at this size), the JSON has
    every row, and a second run opens the saved store instead of building it."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "benches" / "bench_planner_sweep.py"
    spec = importlib.util.spec_from_file_location("bench_planner_sweep", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    store, out = tmp_path / "s", tmp_path / "sweep.json"
    args = ["--n", "3000", "--dim", "16", "--queries", "16", "--peer-queries", "4", "--share", "0.5,0.1",
            "--store", str(store), "--json", str(out)]
    assert mod.main(args) == 0
    assert "built" in capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    assert [(r["mode"], r["share"]) for r in rows] == [("as_of", 0.5), ("as_of", 0.1), ("latest", 0.5), ("latest", 0.1)]
    assert all(r["recall"] == 1.0 and r["default_qps"] > 0 and r["exact_qps"] > 0 and r["numba_qps"] > 0 for r in rows)
    assert mod.main(args) == 0
    assert "opened" in capsys.readouterr().out


def test_scale_bench_builds_in_resumable_increments(tmp_path, capsys):
    """benches/bench_scale.py: a build stopped after its first checkpoint resumes from it
    (the store then holds exactly --n rows, every chunk's stems apart), and measure opens
    the store and reports every row with recall against exact=True."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "benches" / "bench_scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    store = str(tmp_path / "s")
    assert mod.main(["build", "--path", store, "--n", "3000", "--dim", "8", "--chunk", "3000"]) == 0
    assert mod.main(["build", "--path", store, "--n", "5000", "--dim", "8", "--chunk", "1500"]) == 0
    out = capsys.readouterr().out
    assert "resuming" in out and "3,000 rows" in out and "rows       5,000" in out
    e = ce.Engine.open(store, read_only=True)
    assert len(e) == 5000 and len(set(e.columns()["stem"].tolist()) - {-1}) > 0
    assert len(e.stems) == len(set(e.stems))
    e.close()
    out_json = tmp_path / "scale.json"
    assert mod.main(["measure", "--path", store, "--queries", "16", "--peer-queries", "2", "--json", str(out_json)]) == 0
    rows = json.loads(out_json.read_text())["rows"]
    assert len(rows) == 6 and all(r["recall"] >= 0.95 and r["numba_qps"] > 0 for r in rows)


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--rounds", "10"], ["--seconds", "0.5"],
                                  ["--max-requests", "0"], ["--concurrency", "0"], ["--workers", "0"]])
def test_serve_load_bench_refuses_unbounded_loops(argv, tmp_path, capsys):
    """``chrono bench --serve``'s loop bounds are checked before any work: a usage error
    naming them, nothing built."""
    from chrono_engine.bench import serve_load
    with pytest.raises(SystemExit) as e:
        serve_load.main(argv + ["--work", str(tmp_path / "w")])
    assert e.value.code == 2 and "--rounds 1-9" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()
