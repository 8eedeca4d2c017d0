"""The ``chrono`` command (minimal for now: ``chrono bench``, ``chrono info``).

``chrono bench`` runs the benchmark harness (:mod:`chrono_engine.bench`) on a built-in
synthetic corpus: the engine against NumPy exact, a fused Numba scan and hnswlib filtered
search + rerank, in one run, with recall and QPS ratios.
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="chrono", description="chrono_engine: temporal-validity retrieval for RAG")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="build information (compiler, flags, SIMD level, hnswlib version)")
    sub.add_parser("bench", help="engine vs peers on a synthetic corpus (python -m chrono_engine.bench --help)",
                   add_help=False)
    if argv[:1] == ["bench"]:
        from . import bench
        bench.main(argv[1:])
        return 0
    args = parser.parse_args(argv)
    if args.command == "info":
        from . import build_info
        print(json.dumps(build_info(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
