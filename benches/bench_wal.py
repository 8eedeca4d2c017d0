"""What the write-ahead log costs: ingest and lifecycle throughput of an engine writing to
a store (``Engine.create``) under each fsync policy, against the same calls on an engine
with no store (no log), measured in the same run. The four engines live side by side and
take each call in turn (the order rotating per call), so the slow spells of a shared machine
fall on all of them alike; each round starts fresh engines, and the median of the rounds is
reported.

Workloads:

* ``ingest batches``: ``--n`` synthetic rows with every column, ``--batch`` rows per call
  (how bulk loads and ``chrono ingest`` write);
* ``ingest single rows``: ``--single`` calls of one row each (a service taking one
  document per request);
* ``supersede`` / ``retract``: ``--lifecycle`` calls each, one version or one id per call.

Prints rows/s (calls/s) per configuration and the ratio logged / unlogged; the issue's goal
is that the default policy ("call") keeps ≥ 90 % of bulk ingest throughput::

    python benches/bench_wal.py
    python benches/bench_wal.py --n 20000 --dim 384 --rounds 3 --json bench_wal.json
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import chrono_engine as ce
from chrono_engine.bench import machine_info, write_json
from chrono_engine.synthetic import make_corpus

CONFIGS = ("no log", "call", "interval", "off")


def _engine(cfg: str, dim: int, tmp: Path, threads: int) -> ce.Engine:
    if cfg == "no log":
        return ce.Engine(dim, threads=threads)
    path = tmp / f"s-{cfg}-{time.monotonic_ns()}"
    return ce.Engine.create(path, dim, threads=threads, fsync=cfg, fsync_interval=0.05)


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run(args) -> dict:
    corpus = make_corpus(args.n, args.dim, seed=3)
    rows = corpus.to_dict()
    rows.pop("id", None)
    tmp = Path(tempfile.mkdtemp(prefix="chrono-bench-wal-"))
    units = {"ingest batches": args.n, "ingest single rows": args.single, "supersede": args.lifecycle,
             "retract": args.lifecycle}
    totals: dict = {w: {c: [] for c in CONFIGS} for w in units}
    vec = np.ones((1, args.dim), np.float32)
    try:
        for r in range(-1, args.rounds):  # round -1 warms up (imports, first allocations): not counted
            engines = {c: _engine(c, args.dim, tmp, args.threads) for c in CONFIGS}
            spent = {w: dict.fromkeys(CONFIGS, 0.0) for w in units}

            def each(workload: str, calls: int, call) -> None:
                # call i of every configuration back to back, the order rotating per call: slow
                # spells of a shared machine fall on every configuration alike
                for i in range(calls):
                    for j in range(len(CONFIGS)):
                        c = CONFIGS[(i + j) % len(CONFIGS)]
                        spent[workload][c] += _time(lambda: call(engines[c], i))

            each("ingest batches", (args.n + args.batch - 1) // args.batch,
                 lambda e, i: e.ingest({k: v[i * args.batch:(i + 1) * args.batch] for k, v in rows.items()}))
            each("ingest single rows", args.single, lambda e, i: e.ingest({k: v[i:i + 1] for k, v in rows.items()}))
            stem = engines["no log"].stems[0]
            start = int(engines["no log"].history(stem).column("valid_from").cast("int64").to_numpy().max())
            each("supersede", args.lifecycle, lambda e, i: e.supersede(
                stem, {"vector": vec}, start + (i + 1) * 86_400_000_000, version=f"v{1000 + i}"))
            cols = engines["no log"].columns()
            ids = cols["id"][:args.lifecycle]
            at = int(cols["ingested_at"].max()) + 86_400_000_000  # after every (synthetic) ingest time
            each("retract", args.lifecycle, lambda e, i: e.retract([int(ids[i])], at=at))
            for e in engines.values():
                if e.path is not None:
                    path = e.path
                    e.close()
                    shutil.rmtree(path, ignore_errors=True)
            if r >= 0:
                for w in units:
                    for c in CONFIGS:
                        totals[w][c].append(spent[w][c])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {"machine": machine_info(), "args": vars(args), "results": {}}
    print(f"write-ahead log cost: n={args.n} dim={args.dim} batch={args.batch} threads={args.threads}, "
          f"{args.rounds} rounds, calls interleaved across configurations; median per configuration")
    print(f"{'workload':<20}" + "".join(f"{c + ' /s':>14}" for c in CONFIGS) + "   logged / unlogged")
    for w, by in totals.items():
        rate = {c: units[w] / float(np.median(by[c])) for c in CONFIGS}
        ratio = {c: rate[c] / rate["no log"] for c in CONFIGS[1:]}
        out["results"][w] = {"per_s": rate, "ratio_vs_no_log": ratio}
        print(f"{w:<20}" + "".join(f"{rate[c]:>14,.0f}" for c in CONFIGS) + "   "
              + "  ".join(f"{c} {ratio[c]:.3f}" for c in CONFIGS[1:]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--single", type=int, default=300)
    ap.add_argument("--lifecycle", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    out = run(args)
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
