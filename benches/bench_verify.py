"""Layer 3 benchmark: batched chain verification and bounded STL robustness, peers side by side.

    python benches/bench_verify.py [--n 1000000] [--json out.json]
    NUMBA_NUM_THREADS=1 python benches/bench_verify.py      # the per-core figure

Part 1 verifies N chains of 10 steps x 3 facts (CSR, int32) drawn from a pool of facts whose
validity is V = q * exp(-beta_j * age) (three fact types), and times, in one run:

- ``verify_chains`` (Numba kernels; the full call, Arrow table included);
- a NumPy vectorised baseline (the same outputs; it may use the fixed 10 x 3 shape, which
  favours it);
- RTAMT 0.4.10, one ``evaluate`` per chain of ``always(v >= gamma)`` over the chain's step
  validity signal (computed for it by NumPy, not timed), on a subsample, extrapolated;
- chronofy 0.1.9 ``STLVerifier.verify`` with its ``ExponentialDecay`` on a subsample,
  extrapolated (objects built beforehand, not timed), or a faithful per-object Python
  re-implementation of it when chronofy is not installed.

Every peer's robustness is checked against ours. Part 2 times ``G[0,w](v >= 0.5)`` on long
traces for several w (time per sample should not depend on w) and for several n at one w
(it should grow linearly in n). Timings are best of ``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
import warnings
from datetime import datetime, timedelta
from pathlib import Path

import numba
import numpy as np

from chrono_engine.verify import ChainBatch, stl, verify_chains

BETA = {"vital": math.log(2) / 7.0, "policy": math.log(2) / 90.0, "fact": math.log(2) / 365.0}
TYPES = list(BETA)


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


# ----------------------------------------------------------------------------- data

def make_data(n: int, steps: int, facts: int, pool: int, gamma: float, stale: float, seed: int):
    """CSR chains over a fact pool; ages in whole seconds so every peer sees the same V."""
    rng = np.random.default_rng(seed)
    ftype = rng.integers(0, len(TYPES), pool)
    beta = np.array([BETA[t] for t in TYPES])[ftype]
    q = np.round(rng.uniform(0.9, 1.0, pool), 3)
    below = rng.random(pool) < stale
    target = np.where(below, rng.uniform(0.05, 0.95, pool) * gamma,
                      gamma + (q - gamma) * rng.uniform(0.05, 1.0, pool))
    age_s = np.round(-np.log(target / q) / beta * 86400.0)
    validity = q * np.exp(-beta * (age_s / 86400.0))
    chain_offsets = np.arange(0, n * steps + 1, steps, dtype=np.int32)
    step_offsets = np.arange(0, n * steps * facts + 1, facts, dtype=np.int32)
    fact_ids = rng.integers(0, pool, n * steps * facts).astype(np.int32)
    return dict(chain_offsets=chain_offsets, step_offsets=step_offsets, fact_ids=fact_ids,
                validity=validity, q=q, age_s=age_s, ftype=ftype)


# ----------------------------------------------------------------------------- peers

def numpy_baseline(fact_ids, validity, gamma, n, steps, facts):
    """Vectorised NumPy: gather, reshape, reduce; targets by one lexsort."""
    v = validity[fact_ids].reshape(n, steps, facts)
    step_v = v.min(axis=2)
    margin = step_v - gamma
    rho = margin.min(axis=1)
    weakest_step = margin.argmin(axis=1)
    flat = v.reshape(n, steps * facts)
    pos = flat.argmin(axis=1)
    rows = np.arange(n)
    bound = flat[rows, pos]
    weakest_fact = fact_ids.reshape(n, steps * facts)[rows, pos]
    chain, slot = np.nonzero(flat < gamma)
    ids = fact_ids.reshape(n, steps * facts)[chain, slot]
    vals = flat[chain, slot]
    order = np.lexsort((slot, ids, chain))
    first = np.ones(order.size, bool)
    first[1:] = (chain[order][1:] != chain[order][:-1]) | (ids[order][1:] != ids[order][:-1])
    kept = order[first]
    kept = kept[np.lexsort((slot[kept], vals[kept], chain[kept]))]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(chain[kept], minlength=n), out=offsets[1:])
    return dict(robustness=rho, weakest_step=weakest_step, weakest_fact=weakest_fact,
                bound=bound, step_validity=step_v, targets=ids[kept], target_offsets=offsets)


def rtamt_run(step_v: np.ndarray, gamma: float, sample: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import rtamt
        except ImportError:
            return None
    spec = rtamt.StlDiscreteTimeSpecification()
    spec.declare_var("v", "float")
    spec.spec = f"always(v >= {gamma!r})"
    spec.parse()
    times = list(range(step_v.shape[1]))
    traces = [row.tolist() for row in step_v[:sample]]
    t = time.perf_counter()
    rho = [spec.evaluate({"time": times, "v": tr})[0][1] for tr in traces]
    dt = time.perf_counter() - t
    return dt, np.array(rho), getattr(rtamt, "__version__", "0.4.10")


class _ChronofyLike:
    """Per-object re-implementation of chronofy 0.1.9's STLVerifier.verify (used only when
    chronofy is absent): one object per fact, exp per fact, Python loops."""

    def __init__(self, gamma):
        self.gamma = gamma

    def verify(self, steps, query_time):
        def score(f):
            age = max((query_time - f["timestamp"]).total_seconds() / 86400.0, 0.0)
            return f["q"] * math.exp(-BETA[f["type"]] * age)

        if not steps:
            return 0.0
        step_vals = [min(score(f) for f in s) if s else 1.0 for s in steps]
        margins = [v - self.gamma for v in step_vals]
        rho = min(margins)
        margins.index(rho)
        best = float("inf")
        for s in steps:
            for f in s:
                best = min(best, score(f))
        return rho


def chronofy_run(data, gamma: float, sample: int, steps: int, facts: int):
    now = datetime(2026, 1, 1)
    ids = data["fact_ids"][: sample * steps * facts].reshape(sample, steps, facts)
    try:
        import chronofy
        decay = chronofy.ExponentialDecay(beta=BETA)
        verifier = chronofy.STLVerifier(decay_fn=decay, threshold=gamma)
        cache: dict[int, object] = {}

        def fact(i):
            if i not in cache:
                cache[i] = chronofy.TemporalFact(
                    content=f"fact {i}", fact_type=TYPES[data["ftype"][i]],
                    source_quality=float(data["q"][i]),
                    timestamp=now - timedelta(seconds=float(data["age_s"][i])))
            return cache[i]

        traces = [chronofy.ReasoningTrace(
            query_time=now,
            steps=[chronofy.ReasoningStep(step_index=s, content="",
                                          facts_used=[fact(int(i)) for i in ids[c, s]])
                   for s in range(steps)]) for c in range(sample)]
        t = time.perf_counter()
        rho = [verifier.verify(tr).robustness for tr in traces]
        name = f"chronofy {chronofy.__version__}"
    except ImportError:
        verifier = _ChronofyLike(gamma)
        objs = {}
        for i in np.unique(ids):
            objs[int(i)] = {"type": TYPES[data["ftype"][i]], "q": float(data["q"][i]),
                            "timestamp": now - timedelta(seconds=float(data["age_s"][i]))}
        traces = [[[objs[int(i)] for i in ids[c, s]] for s in range(steps)]
                  for c in range(sample)]
        t = time.perf_counter()
        rho = [verifier.verify(tr, now) for tr in traces]
        name = "chronofy-like per-object Python (chronofy not installed)"
    return time.perf_counter() - t, np.array(rho), name


# ----------------------------------------------------------------------------- main

def bench_chains(args) -> dict:
    n, S, F = args.n, args.steps, args.facts
    data = make_data(n, S, F, args.pool, args.gamma, args.stale, args.seed)
    batch = ChainBatch(data["chain_offsets"], data["step_offsets"], data["fact_ids"])
    v = data["validity"]

    t = time.perf_counter()
    small = ChainBatch(batch.chain_offsets[:11], batch.step_offsets[:101],
                       batch.fact_ids[:300])
    verify_chains(small, v, args.gamma)  # compile or load cached kernels
    warm = time.perf_counter() - t

    ours_s, table = best_of(lambda: verify_chains(batch, v, args.gamma), args.repeat)
    base_s, base = best_of(lambda: numpy_baseline(batch.fact_ids, v, args.gamma, n, S, F),
                           args.repeat)

    rho = table.column("robustness").to_numpy()
    checks = {
        "numpy_robustness_equal": bool(np.array_equal(rho, base["robustness"])),
        "numpy_bound_equal": bool(np.array_equal(table.column("bound").to_numpy(),
                                                 base["bound"])),
        "numpy_weakest_step_equal": bool(np.array_equal(
            table.column("weakest_step").to_numpy(), base["weakest_step"])),
        "numpy_weakest_fact_equal": bool(np.array_equal(
            table.column("weakest_fact").to_numpy(), base["weakest_fact"])),
        "numpy_targets_equal": bool(np.array_equal(
            table.column("targets").combine_chunks().values.to_numpy(), base["targets"])),
    }
    out = {
        "chains": n, "steps_per_chain": S, "facts_per_step": F, "fact_pool": args.pool,
        "gamma": args.gamma, "triggered_fraction": float(np.mean(rho < 0)),
        "warmup_s": warm,
        "verify_chains": {"seconds": ours_s, "chains_per_s": n / ours_s},
        "numpy_baseline": {"seconds": base_s, "chains_per_s": n / base_s},
    }

    rt = rtamt_run(base["step_validity"], args.gamma, min(args.rtamt_sample, n))
    if rt is not None:
        dt, rrho, version = rt
        m = rrho.shape[0]
        out["rtamt"] = {"version": version, "sampled_chains": m, "seconds": dt,
                        "chains_per_s": m / dt, "extrapolated": True}
        checks["rtamt_robustness_equal"] = bool(np.array_equal(rrho, rho[:m]))
    cs = min(args.chronofy_sample, n)
    dt, crho, name = chronofy_run(data, args.gamma, cs, S, F)
    out["chronofy"] = {"implementation": name, "sampled_chains": cs, "seconds": dt,
                       "chains_per_s": cs / dt, "extrapolated": True}
    checks["chronofy_robustness_close"] = bool(np.allclose(crho, rho[:cs], rtol=0, atol=1e-12))
    out["checks"] = checks
    ours = out["verify_chains"]["chains_per_s"]
    out["ratios"] = {f"vs_{k}": ours / out[k]["chains_per_s"]
                     for k in ("numpy_baseline", "rtamt", "chronofy") if k in out}
    return out


def bench_stl(args) -> dict:
    rng = np.random.default_rng(args.seed)
    traces, steps = args.stl_traces, args.stl_steps
    v = rng.random((traces, steps))
    by_w = []
    for w in args.windows:
        f = stl.parse(f"G[0,{w}](v >= 0.5)")
        f.robustness({"v": v[:, :1000]})  # compile or load cached kernels
        sec, _ = best_of(lambda f=f: f.robustness({"v": v}), args.repeat)
        by_w.append({"w": w, "seconds": sec, "ns_per_sample": sec / v.size * 1e9})
    by_n = []
    f = stl.parse("G[0,1000](v >= 0.5)")
    for frac in (0.25, 0.5, 1.0):
        m = max(1, int(steps * frac))
        sec, _ = best_of(lambda m=m: f.robustness({"v": v[:, :m]}), args.repeat)
        by_n.append({"steps": m, "seconds": sec, "ns_per_sample": sec / (traces * m) * 1e9})
    # correctness on a prefix against the O(n*w) NumPy reference
    prefix = {"v": v[:, :4000]}
    ok = all(np.array_equal(stl.robustness(f"G[0,{w}](v >= 0.5)", prefix),
                            stl.reference_robustness(f"G[0,{w}](v >= 0.5)", prefix))
             for w in (1, 10, 100))
    return {"traces": traces, "steps": steps, "by_window": by_w, "by_steps": by_n,
            "reference_equal": ok}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000, help="chains (default 1,000,000)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--facts", type=int, default=3)
    p.add_argument("--pool", type=int, default=1_000_000, help="distinct facts")
    p.add_argument("--gamma", type=float, default=0.5)
    p.add_argument("--stale", type=float, default=0.0035,
                   help="fraction of facts below gamma (0.0035: ~10%% of chains trigger)")
    p.add_argument("--rtamt-sample", type=int, default=2000)
    p.add_argument("--chronofy-sample", type=int, default=5000)
    p.add_argument("--stl-traces", type=int, default=4)
    p.add_argument("--stl-steps", type=int, default=1_000_000)
    p.add_argument("--windows", type=int, nargs="+", default=[1, 10, 100, 1000, 10_000, 100_000])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-stl", action="store_true")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)

    res = {"python": platform.python_version(), "numpy": np.__version__,
           "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
           "machine": platform.machine()}
    print(f"numba {numba.__version__}, {numba.get_num_threads()} thread(s) "
          f"(NUMBA_NUM_THREADS=1 for the per-core figure)")
    res["chains"] = c = bench_chains(args)
    print(f"\nverify_chains: {c['chains']:,} chains x {c['steps_per_chain']} steps x "
          f"{c['facts_per_step']} facts, pool {c['fact_pool']:,}, gamma {c['gamma']}, "
          f"{c['triggered_fraction']:.1%} triggered")
    rows = [("chrono_engine verify_chains", c["verify_chains"]),
            ("NumPy vectorised baseline", c["numpy_baseline"])]
    if "rtamt" in c:
        rows.append((f"RTAMT {c['rtamt']['version']} per trace (extrapolated from "
                     f"{c['rtamt']['sampled_chains']:,})", c["rtamt"]))
    rows.append((f"{c['chronofy']['implementation']} (extrapolated from "
                 f"{c['chronofy']['sampled_chains']:,})", c["chronofy"]))
    for name, r in rows:
        print(f"  {name:<66} {r['chains_per_s']:>14,.0f} chains/s")
    for k, ratio in c["ratios"].items():
        print(f"  ratio {k:<20} {ratio:>10,.1f}x")
    print(f"  checks: {c['checks']}")
    if not args.skip_stl:
        res["stl"] = s = bench_stl(args)
        print(f"\nG[0,w](v >= 0.5) on {s['traces']} traces x {s['steps']:,} steps")
        for r in s["by_window"]:
            print(f"  w = {r['w']:>7,}: {r['seconds'] * 1e3:8.1f} ms  "
                  f"{r['ns_per_sample']:6.2f} ns/sample")
        for r in s["by_steps"]:
            print(f"  w = 1,000, n = {r['steps']:>9,}: {r['seconds'] * 1e3:8.1f} ms  "
                  f"{r['ns_per_sample']:6.2f} ns/sample")
        print(f"  equal to the O(n*w) reference on a prefix: {s['reference_equal']}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
        print(f"\nwrote {args.json}")
    ok = all(res["chains"]["checks"].values()) and res.get("stl", {}).get("reference_equal", True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
