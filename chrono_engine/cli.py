"""The ``chrono`` command: ``chrono demo``, ``chrono bench``, ``chrono info``.

``chrono demo`` walks through the built-in bilingual corpus (:mod:`chrono_engine.demo`).

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
    demo = sub.add_parser("demo", help="walk through the built-in bilingual versioned-knowledge demo")
    demo.add_argument("--lang", choices=["both", "en", "zh"], default="both",
                      help="language of the questions and labels (default: both)")
    demo.add_argument("--json", metavar="PATH", help="also write what was shown as JSON")
    sub.add_parser("bench", help="engine vs peers on a synthetic corpus (python -m chrono_engine.bench --help)",
                   add_help=False)
    if argv[:1] == ["bench"]:
        from . import bench
        bench.main(argv[1:])
        return 0
    args = parser.parse_args(argv)
    if args.command == "demo":
        from . import demo as _demo
        report = _demo.run(lang=args.lang)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(report, f, ensure_ascii=False, indent=2, default=str)
        return 0
    if args.command == "info":
        from . import build_info
        print(json.dumps(build_info(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
