"""One benchmark run in named steps, and the command-line entry point.

For every regime: build the corpus, build the engine, build the peers; then for every
(selectivity, mode) time the oracle and the single-thread peers once, and for every thread
count time the engine and the peers that use threads, and rate the row against the best
peer. The finished report is checked, printed, and written as JSON (and a plot).
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import chrono_engine as ce

from .. import synthetic as syn
from .checks import RECALL_TARGET, agreement, answers_from_table, check_report, recall_at_k, same_topk
from .config import Config, config_from_args, parser
from .corpus import KNOWN_ALL, REGIMES, Answers, Queries, Workload, policy_for, workload_from_corpus
from .numba_scan import NumbaScan, numba_kernel
from .peers import (ALL_PEERS, FaissFiltered, HnswlibFiltered, LanceDBPrefilter, NumpyExact, NumpyPrefilter,
                    UsearchOverfetch)
from .report import log, plot, print_table, row_line, write_json
from .timing import best_time, blas_available, blas_threads, machine_info

__all__ = ["main", "run"]


@dataclass
class RegimeCorpus:
    """One regime's synthetic corpus, as the engine ingests it and as the peers read it."""

    regime: str
    fusion: str
    half_lives: Sequence[float]
    corpus: Any            # a chrono_engine.synthetic corpus
    data: dict             # its columns, as the engine ingests them
    policy: Any            # the decay policy (policy_for)
    workload: Workload
    seconds: float         # to generate it


@dataclass
class Contenders:
    """The engine and the peers, built on one regime's corpus (a peer not run is None)."""

    engine: Any
    ingest_s: float
    memory: dict
    oracle: NumpyExact     # NumPy exact: the recall oracle and the ``numpy`` peer
    numpy_prepare_s: float
    prefilter: NumpyPrefilter | None
    numba: NumbaScan | None
    numba_prepare_s: float | None
    hnswlib: HnswlibFiltered | None
    faiss: FaissFiltered | None = None
    usearch: UsearchOverfetch | None = None
    lancedb: LanceDBPrefilter | None = None
    engine_rows: np.ndarray | None = None  # the workload's id of each engine id (None: the same)


@dataclass
class Point:
    """One (selectivity, mode) of a regime: its queries, the oracle's answers, and the
    figures measured once on one thread that every thread row reuses."""

    selectivity: float
    selectivity_measured: float
    queries: Queries
    exact: Answers
    numpy_1thread_s: float
    prefilter_row: dict | None
    hnswlib_rows: dict
    faiss_rows: dict = field(default_factory=dict)
    usearch_rows: dict = field(default_factory=dict)
    lancedb_rows: dict = field(default_factory=dict)


def run(cfg: Config) -> dict:
    """Run the benchmark described by ``cfg``; returns the report (also written as JSON)."""
    build_threads = cfg.build_threads or os.cpu_count() or 1
    report = new_report(cfg)
    peers = available_peers(cfg, report)
    nslow = min(cfg.slow_queries, cfg.queries)
    for regime in cfg.regimes:
        run_regime(cfg, regime, peers, build_threads, nslow, report)
    check_report(report)
    print_table(report, cfg, nslow)
    write_outputs(report, cfg)
    return report


def new_report(cfg: Config) -> dict:
    """The report's frame: the config, the machine, and a note where BLAS threads cannot be set."""
    report: dict = {"benchmark": "search", "config": dict(cfg.__dict__),
                    "machine": machine_info(), "regimes": {}, "results": [], "notes": []}
    if not blas_available():
        report["notes"].append("OpenBLAS thread control not found: NumPy matmul used its default threads")
    return report


def available_peers(cfg: Config, report: dict) -> list:
    """The asked-for peers whose package imports (numba, hnswlib, faiss, usearch, lancedb are
    optional); a skipped one is noted in the report. Defining the Numba kernel is timed here,
    compiling it later."""
    peers = [p for p in cfg.peers if p in ALL_PEERS]
    if "numba" in peers:
        try:
            t0 = time.perf_counter()
            numba_kernel()
            report["numba_import_s"] = time.perf_counter() - t0
        except ImportError:
            peers.remove("numba")
            report["notes"].append("numba is not installed: the Numba scan peer was skipped")
            log(cfg, "numba not installed: skipping the Numba peer")
    for name in ("hnswlib", "faiss", "usearch", "lancedb"):
        if name in peers:
            try:
                __import__(name)
            except ImportError:
                peers.remove(name)
                report["notes"].append(f"{name} is not installed: the {name} peer was skipped")
                log(cfg, f"{name} not installed: skipping the {name} peer")
    return peers


def run_regime(cfg: Config, regime: str, peers: list, build_threads: int, nslow: int, report: dict) -> None:
    """Every row of one regime, appended to ``report["results"]``."""
    rc = build_corpus(cfg, regime)
    con = build_contenders(cfg, rc, peers, build_threads)
    report["regimes"][regime] = {
        "fusion": rc.fusion, "alpha": cfg.alpha, "half_lives_days": [float(h) for h in rc.half_lives],
        "corpus_s": rc.seconds, "engine_ingest_s": con.ingest_s, "engine_memory": con.memory,
        "numpy_prepare_s": con.numpy_prepare_s,
        "hnswlib_build_s": con.hnswlib.build_s if con.hnswlib else None,
        "build_threads": build_threads,
    }
    qv = rc.corpus.queries(cfg.queries, seed=cfg.seed + 1)
    known = np.full(cfg.queries, KNOWN_ALL, np.int64)
    for sel in cfg.selectivity:
        T = syn.times_for_selectivity(rc.corpus, sel, cfg.queries, seed=cfg.seed + 2)
        measured_sel = float(np.mean([syn.fraction_valid(rc.corpus, int(t)) for t in T[:50]]))
        for mode in cfg.modes:
            q = Queries(qv, T, known, mode=mode, fusion=rc.fusion, alpha=cfg.alpha, k=cfg.k, future=cfg.future)
            point = measure_point(cfg, rc, con, q, sel, measured_sel, nslow, report)
            for th in cfg.threads:
                row = measure_row(cfg, rc, con, point, th, peers, report)
                report["results"].append(row)
                log(cfg, row_line(row))


# --------------------------------------------------------------------------------------
# building: the corpus, the engine, the peers
# --------------------------------------------------------------------------------------

def build_corpus(cfg: Config, regime: str) -> RegimeCorpus:
    """Generate the regime's synthetic corpus (its time is reported) and its workload."""
    hl_name, regime_fusion = REGIMES[regime]
    fusion = cfg.fusion or regime_fusion
    half_lives = getattr(syn, hl_name)
    log(cfg, f"\n== regime {regime}: half-lives {half_lives[0]:.0f}-{half_lives[-1]:.0f} days, "
             f"fusion {fusion}{f' (alpha={cfg.alpha})' if fusion == 'linear' else ''}; "
             f"N={cfg.n}, d={cfg.dim}, {cfg.queries} queries"
             f"{'; rows in valid_from order' if cfg.order == 'time' else ''}")
    t0 = time.perf_counter()
    corpus = syn.make_corpus(cfg.n, cfg.dim, half_lives=half_lives, seed=cfg.seed)
    if cfg.order == "time":  # every contender reads the same rows (workload_from_corpus below)
        corpus = corpus.in_time_order()
    data = corpus.to_dict()
    gen_s = time.perf_counter() - t0
    pol = policy_for(corpus.half_lives)
    return RegimeCorpus(regime, fusion, half_lives, corpus, data, pol, workload_from_corpus(corpus, pol), gen_s)


def build_engine(cfg: Config, rc: RegimeCorpus, build_threads: int) -> tuple[Any, float, dict, np.ndarray | None]:
    """(engine, ingest seconds, memory, the workload's id of each engine id or None where
    they are the same) of an engine that ingested the corpus."""
    ekw = {}
    if cfg.engine_ef:
        ekw["ef"] = cfg.engine_ef
    if cfg.scan_limit is not None:
        ekw["scan_limit"] = cfg.scan_limit
    eng = ce.Engine(cfg.dim, decay=rc.policy, M=cfg.M, ef_construction=cfg.ef_construction,
                    threads=build_threads, **ekw)
    t0 = time.perf_counter()
    ids = eng.ingest(rc.data, order=cfg.engine_order)
    ingest_s = time.perf_counter() - t0
    ids, want = np.asarray(ids, np.uint64), np.asarray(rc.workload.cols["id"], np.uint64)
    rows = None
    if not np.array_equal(ids, want):  # stored by valid_from: automatic ids number the stored rows
        if not np.array_equal(np.sort(ids), np.arange(len(ids), dtype=np.uint64)):
            raise AssertionError("engine ids are not a permutation of 0..n-1; the harness relies on it")
        rows = np.empty(len(ids), np.uint64)
        rows[ids] = want
    mem = eng.memory()
    log(cfg, f"corpus {rc.seconds:.1f} s; engine ingest {ingest_s:.1f} s on {build_threads} threads"
             f"{' (stored by valid_from)' if rows is not None else ''}; "
             f"temporal metadata + indexes {mem.get('temporal_per_item', float('nan')):.1f} B/item, "
             f"string columns {mem.get('strings_per_item', float('nan')):.1f} B/item")
    return eng, ingest_s, mem, rows


def build_contenders(cfg: Config, rc: RegimeCorpus, peers: list, build_threads: int) -> Contenders:
    """The engine, then the oracle and every available peer, on the same corpus."""
    eng, ingest_s, mem, engine_rows = build_engine(cfg, rc, build_threads)
    w = rc.workload
    t0 = time.perf_counter()
    oracle = NumpyExact(w)
    np_build_s = time.perf_counter() - t0
    pre_peer = NumpyPrefilter(w) if "numpy_prefilter" in peers else None
    numba_peer = numba_build_s = None
    if "numba" in peers:
        t0 = time.perf_counter()
        numba_peer = NumbaScan(w)
        numba_build_s = time.perf_counter() - t0
    hnsw_peer = None
    if "hnswlib" in peers:
        hnsw_peer = HnswlibFiltered(w, M=cfg.M, ef_construction=cfg.ef_construction,
                                    threads=build_threads, oracle=oracle)
        log(cfg, f"hnswlib add_items {hnsw_peer.build_s:.1f} s on {build_threads} threads "
                 f"(engine ingest / hnswlib = {ingest_s / hnsw_peer.build_s:.2f})")
    faiss_peer = None
    if "faiss" in peers:
        faiss_peer = FaissFiltered(w, M=cfg.M, ef_construction=cfg.ef_construction, threads=build_threads, oracle=oracle)
        log(cfg, f"faiss IndexHNSWFlat add {faiss_peer.build_s:.1f} s on {build_threads} threads")
    usearch_peer = None
    if "usearch" in peers:
        usearch_peer = UsearchOverfetch(w, M=cfg.M, ef_construction=cfg.ef_construction, threads=build_threads,
                                        oracle=oracle)
        log(cfg, f"usearch Index add {usearch_peer.build_s:.1f} s on {build_threads} threads")
    lancedb_peer = None
    if "lancedb" in peers:
        lancedb_peer = LanceDBPrefilter(w, oracle=oracle)
        log(cfg, f"lancedb create_table {lancedb_peer.build_s:.1f} s (no vector index: exact search)")
    return Contenders(eng, ingest_s, mem, oracle, np_build_s, pre_peer, numba_peer, numba_build_s, hnsw_peer,
                      faiss_peer, usearch_peer, lancedb_peer, engine_rows)


# --------------------------------------------------------------------------------------
# timing: once per (selectivity, mode), then per thread count
# --------------------------------------------------------------------------------------

def measure_point(cfg: Config, rc: RegimeCorpus, con: Contenders, q: Queries, sel: float,
                  measured_sel: float, nslow: int, report: dict) -> Point:
    """Time the oracle on one thread (its answers are every row's reference), warm the
    engine and the Numba kernel, and time the peers that run on one thread only."""
    with blas_threads(1):
        np1_s, exact = best_time(lambda: con.oracle.search(q), cfg.min_time, min_repeat=cfg.min_repeat)
    # warm the engine (first call builds lazy tables) and compile numba on tiny input
    con.engine.search_batch(q.vectors[:2], cfg.k, mode=q.mode, as_of=q.t[:2], known_at=q.known_at[:2],
                            fusion=q.fusion, alpha=cfg.alpha, future=q.future, threads=1)
    regime_info = report["regimes"][rc.regime]
    if con.numba is not None and "numba_compile_s" not in regime_info:
        t0 = time.perf_counter()
        con.numba.search(q.subset(1), 1)
        regime_info["numba_compile_s"] = time.perf_counter() - t0
        regime_info["numba_prepare_s"] = con.numba_prepare_s
    pre_row = None
    if con.prefilter is not None and q.mode == "as_of":
        pre_row = time_prefilter(cfg, con.prefilter, q, exact)
    hnsw_rows = time_graph_peer(cfg, con.hnswlib, q.subset(nslow), exact.subset(nslow)) if con.hnswlib else {}
    faiss_rows = time_graph_peer(cfg, con.faiss, q.subset(nslow), exact.subset(nslow)) if con.faiss else {}
    usearch_rows = time_graph_peer(cfg, con.usearch, q.subset(nslow), exact.subset(nslow)) if con.usearch else {}
    lancedb_rows = (time_graph_peer(cfg, con.lancedb, q.subset(nslow), exact.subset(nslow), threads=None)
                    if con.lancedb else {})
    return Point(sel, measured_sel, q, exact, np1_s, pre_row, hnsw_rows, faiss_rows, usearch_rows, lancedb_rows)


def time_prefilter(cfg: Config, peer: NumpyPrefilter, q: Queries, exact: Answers) -> dict:
    """The pre-filter peer's figures: one thread, as it is a Python loop of matvecs."""
    with blas_threads(1):
        s, a = best_time(lambda: peer.search(q), cfg.min_time, min_repeat=cfg.min_repeat)
    return {"qps": cfg.queries / s, "recall": recall_at_k(a, exact),
            "same_topk": agreement(a, exact), "queries": cfg.queries, "threads": 1}


def time_graph_peer(cfg: Config, peer: HnswlibFiltered | FaissFiltered | UsearchOverfetch | LanceDBPrefilter,
                    qs: Queries, exact_slow: Answers, threads: int | None = 1) -> dict:
    """ef -> a filtered index peer's figures (hnswlib, FAISS, USearch: ef; LanceDB: its
    over-fetch k') on the first queries only, one query at a time (hnswlib's filter is a
    Python callable, bound by the GIL; each builds an O(n) mask per query). ``threads``:
    what the rows record (None for LanceDB, which runs on its own thread pools)."""
    rows = {}
    for ef in cfg.efs:
        s, a = best_time(lambda: peer.search(qs, ef), cfg.min_time, max_repeat=2, min_repeat=cfg.min_repeat)
        rows[ef] = {"qps": len(qs) / s, "recall": recall_at_k(a, exact_slow), "queries": len(qs), "threads": threads}
    return rows


def measure_row(cfg: Config, rc: RegimeCorpus, con: Contenders, point: Point, th: int, peers: list,
                report: dict) -> dict:
    """One row of the table: the engine and every peer at ``th`` threads, rated."""
    q = point.queries
    row: dict = {"regime": rc.regime, "fusion": rc.fusion, "mode": q.mode, "selectivity": point.selectivity,
                 "selectivity_measured": point.selectivity_measured, "threads": th,
                 "queries": cfg.queries, "peers": {}}
    row["engine"] = time_engine(cfg, con.engine, q, th, point.exact, con.engine_rows)
    if cfg.engine_exact:
        row["engine_exact"] = time_engine_exact(cfg, con.engine, q, th, point.exact, con.engine_rows)
    if "numpy" in peers:
        row["peers"]["numpy"] = time_numpy(cfg, rc, con.oracle, point, th, report)
    if point.prefilter_row is not None:
        row["peers"]["numpy_prefilter"] = dict(point.prefilter_row)
    if con.numba is not None:
        s, a = best_time(lambda: con.numba.search(q, th), cfg.min_time, min_repeat=cfg.min_repeat)
        row["peers"]["numba"] = {"qps": cfg.queries / s, "recall": recall_at_k(a, point.exact),
                                 "same_topk": agreement(a, point.exact), "queries": cfg.queries,
                                 "threads": th}
    for ef, r in point.hnswlib_rows.items():
        row["peers"][f"hnswlib_ef{ef}"] = dict(r)
    for ef, r in point.faiss_rows.items():
        row["peers"][f"faiss_ef{ef}"] = dict(r)
    for ef, r in point.usearch_rows.items():
        row["peers"][f"usearch_ef{ef}"] = dict(r)
    for kk, r in point.lancedb_rows.items():
        row["peers"][f"lancedb_k{kk}"] = dict(r)
    rate_row(row)
    return row


def engine_run(cfg: Config, eng, q: Queries, th: int, exact: bool):
    """A call that runs every query of ``q`` through ``eng.search_batch`` in calls of
    ``cfg.engine_batch`` queries (all in one when 0) and returns one result table."""
    b = cfg.engine_batch or cfg.queries

    def call():
        parts = []
        for lo in range(0, cfg.queries, b):  # calls of b queries, one after another
            hi = min(cfg.queries, lo + b)
            tab = eng.search_batch(q.vectors[lo:hi], cfg.k, mode=q.mode, as_of=q.t[lo:hi],
                                   known_at=q.known_at[lo:hi], fusion=q.fusion, alpha=cfg.alpha,
                                   future=q.future, threads=th, exact=exact)
            if lo:  # the call's query numbers, offset into the run's
                i = tab.schema.get_field_index("query")
                tab = tab.set_column(i, "query", pc.add(tab.column("query"), pa.scalar(lo, pa.int32())))
            parts.append(tab)
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    return call


def one_by_one(cfg: Config, eng, q: Queries, th: int) -> tuple[float, Any, np.ndarray]:
    """``--engine-batch 1``: every query through ``Engine.search`` (the one-query call a
    server makes), one after another. Returns the best of ``min_repeat`` passes (seconds),
    one result table with a ``query`` column, and every call's latency (seconds) of that
    pass."""
    eng.threads = th
    best, best_lat, tables = float("inf"), None, None
    for _ in range(max(1, cfg.min_repeat)):
        lat = np.empty(cfg.queries)
        out = []
        t_all = time.perf_counter()
        for i in range(cfg.queries):
            t0 = time.perf_counter()
            out.append(eng.search(q.vectors[i], cfg.k, mode=q.mode, as_of=int(q.t[i]), known_at=int(q.known_at[i]),
                                  fusion=q.fusion, alpha=cfg.alpha, future=q.future))
            lat[i] = time.perf_counter() - t0
        total = time.perf_counter() - t_all
        if total < best:
            best, best_lat, tables = total, lat, out
    parts = [t.add_column(0, "query", pa.array(np.full(t.num_rows, i, np.int32))) for i, t in enumerate(tables)]
    return best, pa.concat_tables(parts), best_lat


def time_engine(cfg: Config, eng, q: Queries, th: int, exact: Answers, rows: np.ndarray | None = None) -> dict:
    """The engine's figures (default search): QPS, recall, how many answers it certified,
    and how many certified answers differ from the oracle's; with ``--engine-batch 1``,
    through ``Engine.search`` with per-call latency percentiles. ``rows``: the workload's
    id of each engine id (None: the same ids)."""
    lat = None
    if cfg.engine_batch == 1:
        s, tab, lat = one_by_one(cfg, eng, q, th)
    else:
        s, tab = best_time(engine_run(cfg, eng, q, th, False), cfg.min_time, min_repeat=cfg.min_repeat)
    got, cert = answers_from_table(tab, cfg.queries, rows)
    agree = np.array([same_topk(g, gs, r, rs) for g, gs, r, rs
                      in zip(got.ids, got.scores, exact.ids, exact.scores)])
    res = {"qps": cfg.queries / s, "recall": recall_at_k(got, exact),
           "certified": float(cert.mean()),
           "certified_but_wrong": int((cert & ~agree).sum()),
           "same_topk": float(agree.mean())}
    if lat is not None:
        res["latency_ms"] = {p: float(np.percentile(lat, v) * 1e3) for p, v in (("p50", 50), ("p95", 95), ("p99", 99))}
    return res


def time_engine_exact(cfg: Config, eng, q: Queries, th: int, exact: Answers, rows: np.ndarray | None = None) -> dict:
    """The engine's figures with ``exact=True`` (``rows``: as :func:`time_engine`'s)."""
    s, tab = best_time(engine_run(cfg, eng, q, th, True), cfg.min_time, min_repeat=cfg.min_repeat)
    gx, cx = answers_from_table(tab, cfg.queries, rows)
    return {"qps": cfg.queries / s, "recall": recall_at_k(gx, exact),
            "certified": float(cx.mean()), "same_topk": agreement(gx, exact)}


def time_numpy(cfg: Config, rc: RegimeCorpus, oracle: NumpyExact, point: Point, th: int, report: dict) -> dict:
    """The NumPy exact peer at ``th`` BLAS threads (its one-thread time is the oracle's)."""
    if th == 1:
        s = point.numpy_1thread_s
    else:
        with blas_threads(th):
            s, a = best_time(lambda: oracle.search(point.queries), cfg.min_time, min_repeat=cfg.min_repeat)
        if agreement(a, point.exact) < 1.0:  # BLAS threads may only reorder float sums
            report["notes"].append(f"NumPy exact on {th} threads differs from one thread "
                                   f"beyond ties ({rc.regime}, {point.queries.mode}, {point.selectivity})")
    return {"qps": cfg.queries / s, "recall": 1.0, "queries": cfg.queries,
            "threads": th if blas_available() else None}


def rate_row(row: dict) -> None:
    """The row's best peer among those reaching the recall target, and the engine's ratio to it."""
    good = {p: v["qps"] for p, v in row["peers"].items() if v["recall"] >= RECALL_TARGET}
    if good:
        best = max(good, key=good.get)
        row["best_peer"] = best
        row["best_peer_qps"] = good[best]
        row["ratio"] = row["engine"]["qps"] / good[best]
    else:
        row["best_peer"] = None
        row["ratio"] = None
    row["engine_meets_recall"] = row["engine"]["recall"] >= RECALL_TARGET


def write_outputs(report: dict, cfg: Config) -> None:
    """Write the JSON report (and record its path) and the plot, as ``cfg`` asks."""
    if cfg.json:
        p = write_json(cfg.json, report)
        log(cfg, f"\nJSON written to {p}")
        report["json_path"] = str(p)
    plot_path = cfg.plot
    if plot_path == "auto":
        plot_path = str(Path(cfg.json).with_suffix(".png")) if cfg.json else None
    if plot_path:
        plot(report, plot_path, cfg, quiet_missing=cfg.plot == "auto")


def main(argv: Sequence[str] | None = None, defaults: Config | None = None, *,
         prog: str = "python -m chrono_engine.bench") -> dict:
    """Command-line entry point; returns the report. ``prog``: the command's name in
    ``--help`` and usage errors (``chrono bench`` passes its own)."""
    ns = parser(defaults, prog=prog).parse_args(argv)
    return run(config_from_args(ns))
