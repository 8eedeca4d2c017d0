"""Fused temporal top-k search at the engine-core issue's size: the engine against NumPy
batch exact, a NumPy pre-filter, a fused Numba scan, and hnswlib, FAISS, USearch and
LanceDB with a filter + rerank.

A thin wrapper over :mod:`chrono_engine.bench` (``python -m chrono_engine.bench`` is the
small built-in job) with larger defaults: N = 200,000 items, d = 384, 1,000 queries,
selectivities 0.5 / 0.1 / 0.01, modes as_of and latest, 1 and 2 threads, every timing the
best of at least three runs. Every flag of the harness works here and overrides the
defaults::

    python benches/bench_search.py --json bench_search_steep.json
    python benches/bench_search.py --regime gentle --json bench_search_gentle.json
    python benches/bench_search.py --n 1000000 --queries 500 --peers numpy,numba

It builds the engine and the peers' indexes of the same size (minutes at this size; the
LanceDB table is written to a temporary directory) and needs a few GB of memory for the
NumPy blocks. The filtered index peers (hnswlib, whose filter is a Python callable, FAISS,
USearch, LanceDB) run on the first ``--slow-queries`` queries only.
"""
from __future__ import annotations

import sys

from chrono_engine.bench import Config, main

# every timing (engine and peers alike) is the best of at least three runs: one run of a
# slow contender on this kind of shared machine moves by tens of percent
DEFAULTS = Config(n=200_000, dim=384, queries=1000, slow_queries=100, min_repeat=3,
                  json="bench_out/bench_search_full.json")

if __name__ == "__main__":
    main(sys.argv[1:], defaults=DEFAULTS)
