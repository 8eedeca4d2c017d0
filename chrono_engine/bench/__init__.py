"""Benchmark harness: fused temporal top-k search, the engine against its peers, side by side.

One run generates the synthetic corpus (:mod:`chrono_engine.synthetic`), builds the engine
and the peers on the same vectors and metadata, and for every (mode, selectivity, threads)
measures queries per second and recall@k against an exact NumPy implementation of the
search definition (tests/reference.py is the slow, obviously-correct version this one is
tested against). It prints a table with the ratio *engine QPS / best peer QPS among peers
reaching recall ≥ 0.95*, and writes JSON::

    chrono bench                                       # N=20k, d=128, 200 queries (~1 min)
    python -m chrono_engine.bench --regime gentle --json gentle.json
    python benches/bench_search.py                     # N=200k, d=384, 1000 queries

Peers (each answers the same definition: validity/transaction filter, per-stem
arbitration, decay, fused score, ties by id):

``numpy``
    NumPy batch exact: query blocks matmul'd against every vector, masks, decay, fusion,
    arbitration (segment max over stems), argpartition. It is also the recall oracle.
``numpy_prefilter``
    ``as_of`` only: the items in force are masked first and only they are scored.
``numba``
    A fused Numba scan (imported lazily; skipped when missing): per query one metadata
    pass for stem arbitration, then one pass that checks eligibility, evaluates the
    decay, skips the dot product when the validity alone cannot beat the current k-th
    score, and keeps a top-k heap. The kernel releases the GIL; a batch is split into
    one slice of queries per thread.
``hnswlib``
    The hnswlib Python package (same M, ef_construction, vectors), searched with its
    ``filter=`` callable for the validity/transaction/arbitration filter at several ef,
    returning ef candidates that NumPy reranks by fused score. The filter is a Python
    callable, so it runs on one thread (hnswlib's own advice) and on fewer queries.
``faiss``
    FAISS ``IndexHNSWFlat`` (inner product, same M and ef_construction), searched with
    an ``IDSelectorBitmap`` of the query's eligible rows (a native filter) at several ef,
    the candidates reranked by NumPy; one thread, on the same fewer queries as hnswlib.
``usearch``
    A USearch HNSW ``Index`` (inner product, f32, connectivity M, expansion_add
    ef_construction). Its Python search takes no predicate, so it over-fetches: it asks
    for ef neighbours scaled by n / eligible rows at ``expansion_search`` = ef, drops the
    ineligible, doubles the count until ef eligible remain (or n), and NumPy reranks the
    first ef; one thread, on the same fewer queries as hnswlib.
``lancedb``
    An embedded LanceDB table (vector and time columns, in a temporary directory), searched
    exactly (no vector index) with an SQL pre-filter on the time columns for the ef nearest
    rows (ef is the over-fetch k'); the rows that per-stem arbitration rejects are dropped
    and NumPy reranks the rest. Queries one at a time on LanceDB's own thread pools, on the
    same fewer queries as hnswlib.

QPS is per query, so peers measured on fewer queries are comparable; the output says
which ran on fewer queries and on how many threads. Timings take the best of a few
repeats: at least ``--min-repeat`` runs and ``--min-time`` seconds in all, the same rule for
every contender (the engine and each peer; :func:`~chrono_engine.bench.timing.best_time`).
The NumPy peer's BLAS is limited to the row's thread count where the OpenBLAS library can be
found.

The modules, one concern each:

``corpus``      the workload (vectors + metadata columns), queries, answers, regimes, policy
``definition``  the decay and arbitration pieces of the search definition the peers share
``peers``       NumPy exact (the oracle), NumPy pre-filter, filtered index + rerank (hnswlib,
                FAISS, USearch, LanceDB)
``numba_scan``  the fused Numba scan peer (numba imported on first use)
``timing``      the best-of timing rule, BLAS thread control, machine info
``checks``      recall@k, top-k agreement, reading the engine's table, report sanity checks
``report``      progress lines, the printed table, JSON, the plot (matplotlib on demand)
``config``      :class:`Config` and the command line
``run``         :func:`run` in named steps, and :func:`main`

This package is not imported by ``import chrono_engine``; numba, hnswlib, faiss, usearch,
lancedb and matplotlib are imported only when a run uses them.
"""
from __future__ import annotations

from .checks import RECALL_TARGET, SCORE_TOL, agreement, answers_from_table, check_report, recall_at_k, same_topk
from .config import Config, config_from_args, parser
from .corpus import (KNOWN_ALL, REGIMES, Answers, Queries, Workload, policy_for, workload_from_corpus,
                     workload_from_engine)
from .definition import decay_eval, decay_rows, static_rank
from .numba_scan import NumbaScan
from .peers import (ALL_PEERS, FaissFiltered, HnswlibFiltered, LanceDBPrefilter, NumpyExact, NumpyPrefilter,
                    UsearchOverfetch, numpy_exact)
from .report import write_json
from .run import main, run
from .timing import best_time, blas_threads, machine_info

__all__ = [
    "ALL_PEERS",
    "FaissFiltered",
    "KNOWN_ALL",
    "LanceDBPrefilter",
    "RECALL_TARGET",
    "REGIMES",
    "SCORE_TOL",
    "Answers",
    "Config",
    "HnswlibFiltered",
    "NumbaScan",
    "NumpyExact",
    "NumpyPrefilter",
    "Queries",
    "UsearchOverfetch",
    "Workload",
    "agreement",
    "answers_from_table",
    "best_time",
    "blas_threads",
    "check_report",
    "config_from_args",
    "decay_eval",
    "decay_rows",
    "machine_info",
    "main",
    "numpy_exact",
    "parser",
    "policy_for",
    "recall_at_k",
    "run",
    "same_topk",
    "static_rank",
    "workload_from_corpus",
    "workload_from_engine",
    "write_json",
]
