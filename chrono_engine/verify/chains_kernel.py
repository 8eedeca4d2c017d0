"""Numba kernels behind :func:`chrono_engine.verify.verify_chains`.

One sweep over chains (serially for a range, or split into parallel tasks), touching only
flat arrays: :func:`chain_range` computes, per chain, the step validity v(s_i) = min over the
step's facts of V, the robustness ρ = min_i (v(s_i) − γ), the weakest step, the weakest fact
and the weakest-link bound min V (Theorem 1). The fact uses below γ are collected while the
chain is read and, once it ends, sorted (least valid first, ties in reading order) and
de-duplicated in place in a scratch array; :func:`gather_range` compacts them afterwards.
An id out of range or a non-finite V stops the chain and records where (the error names
the first offending use).

Conventions follow chronofy 0.1.9's ``STLVerifier``: a step with no facts has v = 1.0; a
chain with no steps has ρ = 0.0, bound 1.0 and no weakest step; ties pick the first step
(by margin) and the first fact in reading order (by V).

The NumPy reference that tests compare against is :mod:`.chains_reference`.
"""
from __future__ import annotations

import numba as nb
import numpy as np

OK = 0
BAD_FACT_ID = 1
NOT_FINITE = 2

# Chains with at most this many fact uses below γ sort their targets in place by insertion;
# longer ones are flagged and sorted by NumPy (O(k log k)), so a pathological chain stays
# cheap and the kernel needs no compiled sort (Numba's argsort is slow to compile).
SMALL = 32


@nb.njit(nogil=True, cache=True)
def chain_range(chain_off, step_off, fact_ids, validity, gamma,
                robustness, bound, weakest_step, weakest_fact, step_validity, status, status_at,
                scratch, tstart, counts, c0, c1):  # pragma: no cover - compiled
    """Chains c0 .. c1 - 1.

    Fact uses below γ are appended to ``scratch`` as they are read (from position
    ``step_off[chain_off[c0]]``, so parallel ranges never overlap), then sorted and
    de-duplicated in place once the chain is done: chain c's targets are
    ``scratch[tstart[c]:tstart[c] + counts[c]]``. More than SMALL uses below γ: counts[c]
    is minus their number and the vectorised path sorts them."""
    n_valid = validity.shape[0]
    cur = step_off[chain_off[c0]] if c1 > c0 else 0
    for c in range(c0, c1):
        s0 = chain_off[c]
        s1 = chain_off[c + 1]
        best = np.inf
        ws = -1
        fmin = np.inf
        wf = -1
        below = 0
        bad = OK
        for s in range(s0, s1):
            f0 = step_off[s]
            f1 = step_off[s + 1]
            v = 1.0
            if f1 > f0:
                v = np.inf
                for k in range(f0, f1):
                    fid = fact_ids[k]
                    if fid < 0 or fid >= n_valid:
                        bad = BAD_FACT_ID
                        status_at[c] = k
                        break
                    x = np.float64(validity[fid])
                    if not np.isfinite(x):
                        bad = NOT_FINITE
                        status_at[c] = k
                        break
                    v = min(v, x)
                    if x < fmin:
                        fmin = x
                        wf = fid
                    scratch[cur + below] = fid  # kept only if below γ (branch-free)
                    below += x < gamma
                if bad != OK:
                    break
            step_validity[s] = v
            margin = v - gamma
            if margin < best:
                best = margin
                ws = s - s0
        status[c] = bad
        robustness[c] = best if s1 > s0 else 0.0
        weakest_step[c] = ws
        weakest_fact[c] = wf
        bound[c] = fmin if wf >= 0 else 1.0
        tstart[c] = cur
        if bad != OK:
            counts[c] = 0
            continue
        if below > SMALL:
            counts[c] = -below
            continue
        # stable insertion sort of the uses below γ, first use of each fact only
        m = 0
        for j in range(below):
            fid = scratch[cur + j]
            dup = False
            for i in range(m):
                if scratch[cur + i] == fid:
                    dup = True
                    break
            if dup:
                continue
            x = np.float64(validity[fid])
            i = m
            while i > 0 and np.float64(validity[scratch[cur + i - 1]]) > x:
                scratch[cur + i] = scratch[cur + i - 1]
                i -= 1
            scratch[cur + i] = fid
            m += 1
        counts[c] = m
        cur += m


@nb.njit(parallel=True, nogil=True, cache=True)
def chain_pass(chain_off, step_off, fact_ids, validity, gamma,
               robustness, bound, weakest_step, weakest_fact, step_validity, status, status_at,
               scratch, tstart, counts, chunks):  # pragma: no cover - compiled
    """:func:`chain_range` over every chain, split into ``chunks`` parallel tasks."""
    n = chain_off.shape[0] - 1
    for ch in nb.prange(chunks):
        chain_range(chain_off, step_off, fact_ids, validity, gamma, robustness, bound,
                    weakest_step, weakest_fact, step_validity, status, status_at, scratch,
                    tstart, counts, ch * n // chunks, (ch + 1) * n // chunks)


@nb.njit(nogil=True, cache=True)
def gather_range(tstart, scratch, counts, offsets, targets, c0, c1):  # pragma: no cover
    """Compact the chains' scratch slices into ``targets`` at ``offsets``."""
    for c in range(c0, c1):
        o = tstart[c]
        t = offsets[c]
        for j in range(counts[c]):
            targets[t + j] = scratch[o + j]


@nb.njit(parallel=True, nogil=True, cache=True)
def gather_pass(tstart, scratch, counts, offsets, targets, chunks):  # pragma: no cover
    n = tstart.shape[0]
    for ch in nb.prange(chunks):
        gather_range(tstart, scratch, counts, offsets, targets, ch * n // chunks,
                     (ch + 1) * n // chunks)
