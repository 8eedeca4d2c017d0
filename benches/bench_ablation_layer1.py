"""Layer ablation on a temporal retrieval set built from ICEWS14 (like the paper's
experiment 6): gold@5 for semantic only, + layer 1 (temporal subspace), + decay fusion
(as-of search with exponential decay), and both.

    python benches/bench_ablation_layer1.py --json bench_out/ablation_layer1.json

Two disjoint draws of the set (seed 0 = test, seed 1 = dev; 8,000 facts, 1,000
questions each; see chrono_engine/embed/ablation.py). Each variant's parameters (temporal
encoder's longest period, λ, half-life) are chosen on dev and reported on test. The
semantic encoder is all-MiniLM-L6-v2 (``[text]`` extra); ``--semantic bow`` uses the
demo's hashed bag of words instead (no model, seconds).
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="icews14",
                    help="dataset name (chrono_engine.datasets: CHRONO_DATA_DIR) or folder")
    ap.add_argument("--facts", type=int, default=8000)
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--semantic", choices=("minilm", "bow"), default="minilm")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args(argv)

    from chrono_engine.embed import TemporalEncoder
    from chrono_engine.embed.ablation import build_retrieval_set, run_ablation
    from chrono_engine.tkg.data import load

    d = load(a.data)
    if a.semantic == "minilm":
        from chrono_engine.embed import TextEncoder
        te = TextEncoder(threads=a.threads, batch_size=64)
        semantic = te.encode
    else:
        from chrono_engine.demo import embed as bow
        semantic = lambda texts: np.stack([bow(t) for t in texts])  # noqa: E731
    sets, vecs = {}, {}
    t0 = time.perf_counter()
    for name, seed in (("test", 0), ("dev", 1)):
        rs = build_retrieval_set(d, max_facts=a.facts, n_questions=a.questions, seed=seed)
        sets[name] = rs
        vecs[name] = (semantic(rs.sentences), semantic(rs.questions))
    embed_s = time.perf_counter() - t0
    encs = {p: TemporalEncoder(dim=32, min_period="1d", max_period=p, threads=1) for p in ("1y", "2y", "4y")}
    grid = list(itertools.product(("1y", "2y", "4y"), (0.25, 0.5, 1.0), (90, 365, 3650)))

    def run(name, p, w, h):
        sf, sq = vecs[name]
        return run_ablation(sets[name], None, sem_facts=sf, sem_questions=sq, temporal=encs[p],
                            weight=w, half_life_days=h)

    dev = {g: run("dev", *g) for g in grid}
    chosen = {
        "semantic": grid[0],  # no parameters
        "layer1": max(grid, key=lambda g: (dev[g]["layer1"], -g[2])),
        "decay": max(grid, key=lambda g: (dev[g]["decay"], -g[1])),
        "both": max(grid, key=lambda g: dev[g]["both"]),
    }
    test = {}
    for variant, g in chosen.items():
        test[variant] = run("test", *g)[variant]
    out = {"semantic_encoder": a.semantic, "facts": len(sets["test"].sentences),
           "questions": len(sets["test"]), "embed_seconds": embed_s,
           "gold@5_test": test,
           "chosen_on_dev": {v: {"max_period": g[0], "weight": g[1], "half_life_days": g[2],
                                 "dev_gold@5": dev[g][v]} for v, g in chosen.items()}}
    print(f"ICEWS14 temporal retrieval set: {out['facts']:,} dated facts, {out['questions']:,} as-of questions "
          f"(test draw); semantic encoder {a.semantic}; parameters chosen on a disjoint dev draw")
    print(f"{'variant':<10} {'gold@5':>7}   chosen on dev (longest period, λ, half-life days)")
    for v in ("semantic", "layer1", "decay", "both"):
        g = chosen[v]
        params = "-" if v == "semantic" else (f"{g[0]}, λ={g[1]}" if v == "layer1" else
                                              f"half-life {g[2]}" if v == "decay" else f"{g[0]}, λ={g[1]}, half-life {g[2]}")
        print(f"{v:<10} {test[v]:7.3f}   {params}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
