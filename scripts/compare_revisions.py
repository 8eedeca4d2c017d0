#!/usr/bin/env python3
"""The same benchmarks on two source trees in one run: the search harness (one query per
call and batches), the ingest bench and the service load bench, each run in turn on the tree
before a change and the tree after it (the order alternating by round, so that a slow spell
of a shared machine does not fall on one side), the engine's figures compared as medians.

Each tree is a checkout with its compiled core in place (``chrono_engine/_core*.so``), e.g.
a ``git worktree`` of the earlier commit with its own build::

    git worktree add ../before <commit> && cp <its build>/_core*.so ../before/chrono_engine/
    python scripts/compare_revisions.py --before ../before --after . --rounds 3
    python scripts/compare_revisions.py --before ../before --after . --only search --n 200000 --dim 384

Each tree runs its own benchmark code (``python -m chrono_engine.bench``,
``benches/bench_ingest.py``, ``benches/bench_serve.py``) with ``PYTHONPATH`` set to it.
Prints, per figure, each side's runs, their medians and after / before (> 1: faster after).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def _search_cmd(ns: argparse.Namespace, batch: int) -> list[str]:
    return ["-m", "chrono_engine.bench", "--n", str(ns.n), "--dim", str(ns.dim), "--queries", str(ns.queries),
            "--selectivity", "0.1,0.01", "--modes", "as_of,latest", "--threads", "1", "--peers", "numpy",
            "--engine-batch", str(batch), "--min-repeat", "3", "--no-engine-exact", "--quiet"]


def _search_figures(report: dict, batch: int) -> dict:
    return {f"search batch={batch} {r['mode']} s={r['selectivity']} QPS": r["engine"]["qps"]
            for r in report["results"]}


def _ingest_cmd(ns: argparse.Namespace) -> list[str]:
    return ["benches/bench_ingest.py", "--n", str(ns.n), "--dim", str(ns.dim), "--threads", "1,2"]


def _ingest_figures(report: dict) -> dict:
    out = {}
    for r in report["rows"]:
        for name in ("engine_full", "engine_minimal"):
            if f"{name}_s" in r:
                out[f"ingest {name} t={r['threads']} items/s"] = report["n"] / r[f"{name}_s"]
    return out


def _serve_cmd(ns: argparse.Namespace) -> list[str]:
    return ["benches/bench_serve.py", "--n", str(ns.n), "--dim", str(ns.dim), "--seconds", str(ns.serve_seconds),
            "--rounds", "1", "--concurrency", "1", "8", "64", "--no-peer"]


def _serve_figures(report: dict) -> dict:
    out = {f"serve C={r['concurrency']} QPS": r["qps"] for r in report["services"].get("chrono_engine", [])}
    one = report.get("in_process", {}).get("search_one")
    if one:
        out["serve bench: in-process search() QPS"] = one["qps"]
    return out


def _run(tree: Path, args: list[str], json_path: Path, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, *args, "--json", str(json_path)]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}"
                         f"\n{proc.stderr[-3000:]}")
    return json.loads(json_path.read_text())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", type=Path, required=True, help="the tree before the change")
    p.add_argument("--after", type=Path, default=Path("."), help="the tree after it (default: here)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="search,ingest,serve", help="which benchmarks (comma-separated)")
    p.add_argument("--n", type=int, default=50_000)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--serve-seconds", type=float, default=3.0)
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds one benchmark run may take")
    p.add_argument("--json", default="", help="write every run's figures here")
    ns = p.parse_args()
    trees = {"before": ns.before.resolve(), "after": ns.after.resolve()}
    for side, tree in trees.items():
        if not list((tree / "chrono_engine").glob("_core*.so")):
            raise SystemExit(f"{side}: {tree} has no compiled core in chrono_engine/")
    jobs = []
    only = set(ns.only.split(","))
    if "search" in only:
        jobs += [(_search_cmd(ns, 1), lambda r: _search_figures(r, 1)),
                 (_search_cmd(ns, 0), lambda r: _search_figures(r, 0))]
    if "ingest" in only:
        jobs.append((_ingest_cmd(ns), _ingest_figures))
    if "serve" in only:
        jobs.append((_serve_cmd(ns), _serve_figures))
    runs: dict = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(ns.rounds):
            order = ["before", "after"] if rnd % 2 == 0 else ["after", "before"]
            for args, figures in jobs:
                for side in order:
                    report = _run(trees[side], args, Path(tmp) / f"{side}.json", ns.timeout)
                    for name, value in figures(report).items():
                        runs[side].setdefault(name, []).append(value)
                    print(f"round {rnd + 1} {side:6s} {' '.join(args[:2])} done", flush=True)
    print(f"\n{'figure':44s} {'before (runs)':>30s} {'after (runs)':>30s} {'after/before':>12s}")
    for name in runs["after"]:
        b, a = runs["before"].get(name, []), runs["after"][name]
        if not b:
            continue
        mb, ma = statistics.median(b), statistics.median(a)
        fmt = lambda xs: " ".join(f"{x:,.0f}" for x in xs)  # noqa: E731
        print(f"{name:44s} {fmt(b):>30s} {fmt(a):>30s} {ma / mb:>11.3f}x")
    if ns.json:
        Path(ns.json).write_text(json.dumps({"trees": {k: str(v) for k, v in trees.items()}, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
