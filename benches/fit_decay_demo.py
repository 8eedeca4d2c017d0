"""Decay learned from validity histories (``ce.fit_validity``): a simulation study, ICEWS14,
and a synthetic store's columns.

(a) **Simulation.** Per truth (exponential, i.e. Weibull k = 1; Weibull k = 0.7; k = 1.5;
    scale 30 days), ``--stores`` stores of ``--items`` items, each item valid from a uniform
    time in a window and looked at its end (about 30% still valid: random right-censoring,
    ``chrono_engine.synthetic.validity_sample``). Printed: the median relative error of β̂
    (exponential truth) and of k̂ and λ̂ (Weibull truths), how often each family was picked,
    how often the 95% intervals held the truth, and the Bernoulli-on-age β (chronofy's
    estimator on the current-status data, ages at the look) against the truth.
(b) **ICEWS14**: how long a relation between two entities lasts. For every (subject,
    relation, object) triple, the days on which it is reported form runs: a gap of more than
    G days (G = 1: the next day) ends a run. A run lasts last − first + 1 days; it has
    *ended* when the dataset goes on for more than G days after its last day, else it is
    right-censored. Runs starting within G days of the dataset's first day are left out
    (their start is not seen). Fitted over all relations as one group for each G in
    ``--gaps`` (1, 7, 30), and per relation for the ``--top`` relations with the most runs at
    the first G. ICEWS reports events by day, so durations are whole days and most runs last
    one day: the fits describe how long a relation keeps being reported, at day resolution.
(c) **A store's columns**: ``fit_validity_intervals`` on a synthetic corpus
    (``chrono_engine.synthetic.make_corpus``) looked at on its last stem start: the columns
    the Engine's fit will hand over. Its generator gives closed versions lognormal lifetimes
    (median 400 days) and leaves 85% of the last versions open for ever, the same for every
    fact type: a mixture with never-ending items, whose falling hazard the Weibull (k well
    below 1) captures and the exponential cannot; every fact type should get the same fit.

    CHRONO_DATA_DIR=<data dir> python benches/fit_decay_demo.py --json bench_out/fit_decay.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import chrono_engine as ce
from chrono_engine.synthetic import make_corpus, validity_sample


def simulation(stores: int, items: int, censored: float) -> dict:
    out = {}
    for shape in (1.0, 0.7, 1.5):
        truth = "exponential" if shape == 1.0 else "weibull"
        beta_err, k_err, lam_err, bern_err, cover, right, cens = [], [], [], [], [], 0, []
        for seed in range(stores):
            t, e, age = validity_sample(items, shape=shape, scale=30.0, censored=censored, seed=1000 + seed)
            f = ce.fit_validity(t, e, ages=age)["general"]
            cens.append(1 - e.mean())
            right += f.family == truth
            k_err.append(abs(f.shape / shape - 1))
            lam_err.append(abs(f.scale / 30.0 - 1))
            cover.append([f.shape_ci[0] <= shape <= f.shape_ci[1], f.scale_ci[0] <= 30.0 <= f.scale_ci[1]])
            if shape == 1.0:
                beta_err.append(abs(f.beta * 30.0 - 1))
                bern_err.append(abs(f.bernoulli_beta * 30.0 - 1))
                cover[-1].append(f.beta_ci[0] <= 1 / 30 <= f.beta_ci[1])
        row = {"shape": shape, "truth": truth, "stores": stores, "items": items,
               "censored_mean": float(np.mean(cens)), "right_family": right / stores,
               "median_rel_err_shape": float(np.median(k_err)), "median_rel_err_scale": float(np.median(lam_err)),
               "ci_coverage": [float(c) for c in np.mean(cover, axis=0)]}
        if shape == 1.0:
            row.update(median_rel_err_beta=float(np.median(beta_err)),
                       median_rel_err_bernoulli_beta=float(np.median(bern_err)))
        out[f"k={shape:g}"] = row
    return out


def print_simulation(sim: dict) -> None:
    print(f"{'truth':<16} {'censored':>8} {'right family':>12} {'med|dbeta|/beta':>15} {'med|dk|/k':>9} "
          f"{'med|dlam|/lam':>13} {'95% CI cover (k, lam[, beta])':>30} {'Bernoulli med err':>17}")
    for name, r in sim.items():
        label = "exponential" if r["shape"] == 1.0 else f"Weibull k={r['shape']:g}"
        beta = f"{100 * r['median_rel_err_beta']:.2f}%" if "median_rel_err_beta" in r else "-"
        bern = f"{100 * r['median_rel_err_bernoulli_beta']:.2f}%" if "median_rel_err_bernoulli_beta" in r else "-"
        cover = ", ".join(f"{c:.2f}" for c in r["ci_coverage"])
        print(f"{label:<16} {r['censored_mean']:>8.3f} {100 * r['right_family']:>11.0f}% {beta:>15} "
              f"{100 * r['median_rel_err_shape']:>8.2f}% {100 * r['median_rel_err_scale']:>12.2f}% {cover:>30} {bern:>17}")


def icews_runs(data: str, gap: int):
    """(durations, ended, ages, relation ids, runs dropped as left-truncated, relation names)."""
    from chrono_engine.tkg import load
    d = load(data)
    cols = [np.concatenate([d.split(s).column(c).to_numpy().astype(np.int64) for s in ("train", "valid", "test")])
            for c in ("subject", "relation", "object", "t")]
    s, r, o, t = cols
    if d.time_unit != "day":
        raise SystemExit(f"{data}: times are in the file's own unit ({d.time_unit}); this demo needs days")
    first_day, last_day = int(t.min()), int(t.max())
    key = (s * d.n_relations + r) * d.n_entities + o
    order = np.lexsort((t, key))
    key, t, r = key[order], t[order], r[order]
    same = np.r_[False, (key[1:] == key[:-1]) & (t[1:] == t[:-1])]  # one report a day counts once
    key, t, r = key[~same], t[~same], r[~same]
    start = np.r_[True, (key[1:] != key[:-1]) | (t[1:] - t[:-1] > gap)]
    begin = np.flatnonzero(start)
    end = np.r_[begin[1:], len(t)] - 1
    first, last, rel = t[begin], t[end], r[begin]
    seen_start = first - first_day >= gap            # a run from the first days may have begun before
    ended = last_day - last > gap
    durations = (last - first + 1).astype(np.float64)
    ages = (last_day + 1 - first).astype(np.float64)   # age when the dataset ends (current status)
    keep = seen_start
    return (durations[keep], ended[keep], ages[keep], rel[keep], int((~keep).sum()), d.relations,
            {"days": last_day - first_day + 1, "facts": len(order), "triples": int(len(np.unique(key))),
             "runs": len(begin)})


def icews(data: str, gaps: list[int], top: int) -> tuple[dict, ce.ValidityFit, ce.ValidityFit]:
    """Per relation (the ``top`` with the most runs) at the first gap; all relations as one
    group at every gap (one fact type per gap, so one table)."""
    runs = {g: icews_runs(data, g) for g in gaps}
    durations, ended, ages, rel, dropped, names, info = runs[gaps[0]]
    counts = np.bincount(rel)
    chosen = np.argsort(-counts, kind="stable")[:top]
    mask = np.isin(rel, chosen)
    labels = np.array(names, dtype=object)[rel[mask]]
    per_relation = ce.fit_validity(durations[mask], ended[mask], labels, ages=ages[mask])
    label = [np.full(len(runs[g][0]), f"all, gap>{g:02d}d", dtype=object) for g in gaps]
    overall = ce.fit_validity(np.concatenate([runs[g][0] for g in gaps]), np.concatenate([runs[g][1] for g in gaps]),
                              np.concatenate(label), ages=np.concatenate([runs[g][2] for g in gaps]))
    info["gaps"] = {g: {"runs_used": len(r[0]), "runs_left_truncated": r[4], "ended_share": float(r[1].mean()),
                        "mean_duration": float(r[0].mean()), "single_day_share": float((r[0] == 1).mean())}
                    for g, r in runs.items()}
    return info, per_relation, overall


def store_columns(n: int) -> tuple[dict, ce.ValidityFit]:
    c = make_corpus(n, 8, clusters=8, seed=0)
    now = int(c.end)  # the last stem start; later versions (valid from after it) are skipped
    names = np.array(c.fact_types, dtype=object)[c.fact_type]
    fit = ce.fit_validity_intervals(c.valid_from, c.valid_to, names, now_us=now)
    return {"items": n, "now_us": now}, fit


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", type=int, default=50)
    ap.add_argument("--items", type=int, default=20_000)
    ap.add_argument("--censored", type=float, default=0.3)
    ap.add_argument("--data", default="icews14",
                    help="dataset name (chrono_engine.datasets: CHRONO_DATA_DIR) or folder")
    ap.add_argument("--gaps", default="1,7,30",
                    help="a gap of more than G days ends a run; all relations are fitted at each G, "
                         "the top relations at the first")
    ap.add_argument("--top", type=int, default=12, help="relations with the most runs fitted one by one")
    ap.add_argument("--corpus", type=int, default=100_000, help="items of the synthetic store in (c)")
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args(argv)
    out = {}

    t0 = time.perf_counter()
    sim = simulation(a.stores, a.items, a.censored)
    t_sim = time.perf_counter() - t0
    print(f"(a) simulation: {a.stores} stores x {a.items} items per truth, scale 30 days, "
          f"{100 * a.censored:g}% censoring targeted; {t_sim:.1f} s")
    print_simulation(sim)
    out["simulation"] = {"seconds": t_sim, **sim}

    t0 = time.perf_counter()
    gaps = [int(g) for g in a.gaps.split(",")]
    info, per_relation, overall = icews(a.data, gaps, a.top)
    t_icews = time.perf_counter() - t0
    print(f"\n(b) {a.data}: {info['facts']} facts over {info['days']} days, {info['triples']} triples; {t_icews:.1f} s")
    for g, r in info["gaps"].items():
        print(f"    gap > {g} d ends a run: {r['runs_used']} runs used ({r['runs_left_truncated']} from the first "
              f"{g} d left out), {100 * r['ended_share']:.1f}% ended, mean {r['mean_duration']:.2f} d, "
              f"{100 * r['single_day_share']:.1f}% last one day")
    print(overall.summary().rsplit("\n", 1)[0])
    print(f"\nper relation, the {a.top} with the most runs, gap > {gaps[0]} d:")
    print(per_relation.summary())
    out["icews"] = {"seconds": t_icews, **info, "overall": overall.to_dict(), "per_relation": per_relation.to_dict()}

    t0 = time.perf_counter()
    cinfo, cfit = store_columns(a.corpus)
    t_store = time.perf_counter() - t0
    fams = {f.family for f in cfit.values()}
    ks = [f.shape for f in cfit.values()]
    med = [f.weibull_half_life for f in cfit.values()]
    print(f"\n(c) synthetic store of {a.corpus} items, fit_validity_intervals at the last stem start; {t_store:.1f} s")
    print(f"    {len(cfit)} fact types (generated alike), families chosen: {sorted(fams)}, Weibull k "
          f"{min(ks):.3f}-{max(ks):.3f}, Weibull median {min(med):.0f}-{max(med):.0f} d")
    print(cfit.summary())
    out["store"] = {"seconds": t_store, **cinfo, "fit": cfit.to_dict()}
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
