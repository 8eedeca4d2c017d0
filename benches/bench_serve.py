"""Load benchmark of the HTTP service: ``chrono serve`` against a peer service on the same
stack, closed-loop clients at concurrency 1, 8 and 64 (see
:mod:`chrono_engine.bench.serve_load`; ``chrono bench --serve`` runs the same)::

    python benches/bench_serve.py                                 # 200k x 384 steep, as_of 10%
    python benches/bench_serve.py --regime gentle --selectivity 0.5
"""
from __future__ import annotations

import sys

from chrono_engine.bench.serve_load import main

if __name__ == "__main__":
    main(sys.argv[1:])
