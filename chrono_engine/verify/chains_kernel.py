"""Numba kernels behind :func:`chrono_engine.verify.verify_chains`.

Two passes, each over chains (serially for a range, or split into parallel tasks) and
touching only flat arrays:

1. :func:`chain_pass` computes, per chain, the step validity v(s_i) = min over the step's
   facts of V, the robustness ρ = min_i (v(s_i) − γ), the weakest step, the weakest fact,
   the weakest-link bound min V (Theorem 1) and how many fact uses fall below γ;
2. :func:`targets_pass` runs only where ρ < 0 and writes the re-acquisition targets (each
   fact below γ once, least valid first, ties in reading order) into space sized by pass 1.

Conventions follow chronofy 0.1.9's ``STLVerifier``: a step with no facts has v = 1.0; a
chain with no steps has ρ = 0.0, bound 1.0 and no weakest step; ties pick the first step
(by margin) and the first fact in reading order (by V).

When every validity is finite (checked once on the validity array), :func:`fused_range`
does both passes in one sweep: the fact uses below γ are collected while a chain is read
and sorted as soon as it ends, in a scratch array, and compacted afterwards. The two-pass kernels remain for inputs with non-finite validities,
where the error must name the first offending use.

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
                robustness, bound, weakest_step, weakest_fact, n_below,
                step_validity, status, status_at, c0, c1):  # pragma: no cover - compiled
    """Pass 1 for chains c0 .. c1 - 1."""
    n_valid = validity.shape[0]
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
            v = 1.0  # a step that uses no facts is vacuously valid (chronofy)
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
                    if x < v:
                        v = x
                    if x < fmin:
                        fmin = x
                        wf = fid
                    if x < gamma:
                        below += 1
                if bad != OK:
                    break
            step_validity[s] = v
            margin = v - gamma
            if margin < best:  # strict: the first step wins a tie, as list.index does
                best = margin
                ws = s - s0
        status[c] = bad
        robustness[c] = best if s1 > s0 else 0.0
        weakest_step[c] = ws
        weakest_fact[c] = wf
        bound[c] = fmin if wf >= 0 else 1.0
        n_below[c] = below


@nb.njit(nogil=True, cache=True)
def targets_range(chain_off, step_off, fact_ids, validity, gamma, upper_off, todo,
                  targets, counts, i0, i1):  # pragma: no cover - compiled
    """Pass 2 for the chains ``todo[i0:i1]`` (those with a fact below γ)."""
    for i in range(i0, i1):
        c = todo[i]
        o = upper_off[c]
        cap = upper_off[c + 1] - o
        if cap == 0:
            counts[c] = 0
            continue
        if cap > SMALL:
            counts[c] = -1  # left to the vectorised O(k log k) path in chains.py
            continue
        n = 0
        for k in range(step_off[chain_off[c]], step_off[chain_off[c + 1]]):
            fid = fact_ids[k]
            x = np.float64(validity[fid])
            if not x < gamma:
                continue
            dup = False
            for j in range(n):
                if targets[o + j] == fid:
                    dup = True
                    break
            if dup:
                continue
            # stable insertion: every target at least as fresh stays before it
            j = n
            while j > 0 and np.float64(validity[targets[o + j - 1]]) > x:
                targets[o + j] = targets[o + j - 1]
                j -= 1
            targets[o + j] = fid
            n += 1
        counts[c] = n


@nb.njit(parallel=True, nogil=True, cache=True)
def chain_pass(chain_off, step_off, fact_ids, validity, gamma,
               robustness, bound, weakest_step, weakest_fact, n_below,
               step_validity, status, status_at, chunks):  # pragma: no cover - compiled
    """Pass 1 over every chain, split into ``chunks`` parallel tasks."""
    n = chain_off.shape[0] - 1
    for ch in nb.prange(chunks):
        chain_range(chain_off, step_off, fact_ids, validity, gamma, robustness, bound,
                    weakest_step, weakest_fact, n_below, step_validity, status, status_at,
                    ch * n // chunks, (ch + 1) * n // chunks)


@nb.njit(parallel=True, nogil=True, cache=True)
def targets_pass(chain_off, step_off, fact_ids, validity, gamma, upper_off, todo,
                 targets, counts, chunks):  # pragma: no cover - compiled
    """Pass 2 over the chains in ``todo``, split into ``chunks`` parallel tasks."""
    n = todo.shape[0]
    for ch in nb.prange(chunks):
        targets_range(chain_off, step_off, fact_ids, validity, gamma, upper_off, todo,
                      targets, counts, ch * n // chunks, (ch + 1) * n // chunks)


@nb.njit(nogil=True, cache=True)
def fused_range(chain_off, step_off, fact_ids, validity, gamma,
                robustness, bound, weakest_step, weakest_fact, step_validity, status, status_at,
                scratch, tstart, counts, c0, c1):  # pragma: no cover - compiled
    """Both passes for chains c0 .. c1 - 1, validity known to be finite everywhere.

    Fact uses below γ are appended to ``scratch`` as they are read (from position
    ``step_off[chain_off[c0]]``, so parallel ranges never overlap), then sorted and
    de-duplicated in place once the chain is done: chain c's targets are
    ``scratch[tstart[c]:tstart[c] + counts[c]]`` (counts -1: more than SMALL uses below γ,
    left to the vectorised path)."""
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
            counts[c] = -1
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
def fused_pass(chain_off, step_off, fact_ids, validity, gamma,
               robustness, bound, weakest_step, weakest_fact, step_validity, status, status_at,
               scratch, tstart, counts, chunks):  # pragma: no cover - compiled
    """:func:`fused_range` over every chain, split into ``chunks`` parallel tasks."""
    n = chain_off.shape[0] - 1
    for ch in nb.prange(chunks):
        fused_range(chain_off, step_off, fact_ids, validity, gamma, robustness, bound,
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
