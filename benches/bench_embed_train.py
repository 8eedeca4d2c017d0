"""Does LoRA + linear-CKA training of the temporal MLP help? Held-out figures, before/after.

Trains :func:`chrono_engine.embed.train.train_temporal` on a default setting (dim 32, times
uniform over 1990..2030, Laplace kernel, ℓ = 365 days) and prints, on held-out times:

- linear CKA with the kernel Gram per Matryoshka prefix, untrained vs trained;
- Spearman correlation of block similarity with −|Δt| over random held-out pairs (all
  pairs, and the near ones, |Δt| ≤ 2ℓ);
- the same on a second, fresh sample, with untrained encoders of other weight exponents α
  as a training-free baseline (α reshapes the sinusoidal kernel too);
- the training seconds (one torch thread).

    python benches/bench_embed_train.py --json bench_embed_train.json

Needs the extra ``[train]`` (torch).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys

import numpy as np

import chrono_engine as ce
from chrono_engine.embed.train import kernel_gram, linear_cka, spearman, train_temporal

DAY = 86_400_000_000


def fresh_eval(enc, t, kernel, ell, prefixes, seed):
    """Held-out CKA per prefix and Spearman (all / near pairs) on times t."""
    days = (t - t.min()) / DAY
    K = kernel_gram(days, kernel, ell)
    Z = enc.encode(t).astype(np.float64)
    i, j = np.random.default_rng(seed).integers(0, len(t), (2, 20_000))
    i, j = i[i != j], j[i != j]
    gap, sim = np.abs(days[i] - days[j]), (Z[i] * Z[j]).sum(1)
    near = gap <= 2 * ell
    return {"cka": {s: linear_cka(Z[:, :s], K) for s in prefixes},
            "spearman": spearman(sim, -gap), "spearman_near": spearman(sim[near], -gap[near])}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--kernel", default="laplace", choices=["laplace", "gaussian"])
    ap.add_argument("--length-scale", type=float, default=365.0, help="days")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--samples", type=int, default=8192)
    ap.add_argument("--span", default="1990-01-01,2030-01-01")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args(argv)
    span = tuple(a.span.split(","))

    enc = ce.TemporalEncoder(dim=a.dim, threads=1)
    new, rep = train_temporal(enc, kernel=a.kernel, length_scale=a.length_scale, hidden=a.hidden,
                              rank=a.rank, steps=a.steps, samples=a.samples, span=span, seed=a.seed)
    P = rep["prefixes"]
    print(f"train_temporal: dim={a.dim} kernel={a.kernel} ℓ={a.length_scale:g} d span={span[0]}..{span[1]} "
          f"hidden={rep['hidden']} rank={a.rank} steps={a.steps} rows={rep['train_rows']} "
          f"-> {rep['seconds']:.2f} s (final training CKA {-rep['final_loss']:.4f})")
    print(f"\nheld-out ({rep['heldout_rows']} times, {rep['heldout_pairs']} pairs, {rep['near_pairs']} near)")
    print(f"{'':>22}" + "".join(f"{'CKA@' + str(s):>9}" for s in P) + f"{'mean':>9}{'ρ all':>9}{'ρ near':>9}")
    for tag in ("before", "after"):
        c = rep[f"cka_{tag}"]
        print(f"{'untrained' if tag == 'before' else 'trained':>22}" + "".join(f"{c[s]:9.4f}" for s in P)
              + f"{rep[f'mean_cka_{tag}']:9.4f}{rep[f'spearman_{tag}']:9.4f}{rep[f'spearman_near_{tag}']:9.4f}")

    lo, hi = (int(np.datetime64(s, "us").astype(np.int64)) for s in span)
    t = np.random.default_rng(a.seed + 10_000).integers(lo, hi, 2000, dtype=np.int64)
    rows = {"trained": new} | {f"untrained α={al:g}": ce.TemporalEncoder(dim=a.dim, alpha=al, threads=1)
                               for al in (1.0, 0.75, 0.5, 0.25, 0.0)}
    fresh = {k: fresh_eval(e, t, a.kernel, a.length_scale, P, a.seed + 1) for k, e in rows.items()}
    print(f"\nfresh sample ({len(t)} times), with training-free α baselines")
    for k, f in fresh.items():
        print(f"{k:>22}" + "".join(f"{f['cka'][s]:9.4f}" for s in P) + f"{np.mean(list(f['cka'].values())):9.4f}"
              f"{f['spearman']:9.4f}{f['spearman_near']:9.4f}")

    out = {"config": vars(a), "python": sys.version.split()[0], "machine": platform.machine(),
           "report": rep, "fresh": fresh}
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=2, default=float)
    return out


if __name__ == "__main__":
    main()
