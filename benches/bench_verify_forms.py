"""verify_chains throughput by input form, in one run: nested Python lists (as given), the
same lists through one ``np.array`` step, the dense
``(chains, steps, facts)`` array, CSR offsets, and a plain Python loop computing ρ alone
(the peer a user with lists would write). Best of 5 after a warm-up call; γ = 0.02 keeps
few facts below γ, so the conversion, not the target lists, is what differs::

    python benches/bench_verify_forms.py
"""
from __future__ import annotations

import time

import numpy as np

import chrono_engine as ce
from chrono_engine.verify import ChainBatch


def best(f, repeat: int = 5) -> float:
    f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    g = 0.02
    for n, steps, facts in [(200_000, 4, 3), (50_000, 16, 8), (500_000, 2, 1)]:
        dense = rng.integers(0, 50_000, (n, steps, facts))
        lists, v = dense.tolist(), rng.random(50_000)
        vl = v.tolist()
        b = ChainBatch.from_dense(dense)
        csr = (b.chain_offsets, b.step_offsets, b.fact_ids.copy())
        r = {"lists": best(lambda: ce.verify_chains(lists, v, g)),
             "np.array(lists)": best(lambda: ce.verify_chains(np.array(lists), v, g)),
             "dense": best(lambda: ce.verify_chains(dense, v, g)),
             "CSR": best(lambda: ce.verify_chains(csr, v, g)),
             "python loop": best(lambda: [min(min(vl[x] for x in s) for s in c) - g for c in lists], 2)}
        print(f"{n} chains x {steps} steps x {facts} facts: "
              + "  ".join(f"{k} {n / t / 1e3:,.0f}k/s" for k, t in r.items())
              + f"  (lists {r['python loop'] / r['lists']:.1f}x the Python loop, dense {r['lists'] / r['dense']:.0f}x lists)")


if __name__ == "__main__":
    main()
