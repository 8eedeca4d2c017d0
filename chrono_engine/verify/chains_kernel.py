"""Numba kernels behind :func:`chrono_engine.verify.verify_chains`.

One sweep over chains (serially for a range, or split into parallel tasks), touching only
flat arrays: per chain, the step validity v(s_i) = min over the step's facts of V, the
robustness ρ = min_i (v(s_i) − γ), the weakest step, the weakest fact and the
weakest-link bound min V (Theorem 1). Two kernels do it:

- :func:`uniform_range` when every step uses the same number F of facts (a dense
  (chains, steps, F) batch, the common shape): compiled once per F with its inner loops
  unrolled, range checks ahead of the loads, selects instead of branches, unsigned
  indices; it needs every V finite (checked up front);
- :func:`chain_range` for ragged batches: it checks each use (range, finiteness).

The gathers of V from a large validity array dominate, so both sweeps are branch-free
apart from never-taken checks, letting a chain's loads overlap. A chain whose minimum is
below γ is read once more (from cache) to collect its fact uses below γ, sorted (least
valid first, ties in reading order) and de-duplicated in place in a scratch array;
:func:`gather_range` compacts them afterwards. An id out of range or a non-finite V
records the first offending use (the error names it).

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
def _locate_bad(fact_ids, validity, k0, k1):  # pragma: no cover - compiled
    """(status, position) of the first bad fact use in k0 .. k1 - 1, (OK, -1) if none."""
    n_valid = validity.shape[0]
    for k in range(k0, k1):
        fid = fact_ids[k]
        if fid < 0 or fid >= n_valid:
            return BAD_FACT_ID, k
        if not np.isfinite(validity[fid]):
            return NOT_FINITE, k
    return OK, -1


@nb.njit(nogil=True, cache=True)
def _collect_targets(fact_ids, validity, gamma, k0, k1, scratch, cur):  # pragma: no cover
    """Fact uses k0 .. k1 - 1 below γ, first use of each fact only, least valid first (ties
    in reading order), written to ``scratch[cur:]``; returns their number, or minus the
    number of uses below γ when that exceeds SMALL (the vectorised path sorts those)."""
    below = 0
    for k in range(k0, k1):
        fid = fact_ids[k]
        scratch[cur + below] = fid  # kept only if below γ (branch-free)
        below += np.float64(validity[fid]) < gamma
    if below > SMALL:
        return -below
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
    return m


@nb.njit(nogil=True, cache=True)
def chain_range(chain_off, step_off, fact_ids, validity, gamma,
                robustness, bound, weakest_step, weakest_fact, step_validity, status, status_at,
                scratch, tstart, counts, c0, c1):  # pragma: no cover - compiled
    """Chains c0 .. c1 - 1.

    The sweep over a chain's fact uses is branch-free apart from the (never taken) range
    check, so the gathers of V from a large validity array overlap: step minima, the chain
    minimum and its first fact are kept with selects, and non-finite values are detected
    by a running ``x * 0`` sum (NaN once any value is NaN or infinite). Only a chain whose
    minimum is below γ is read a second time (from cache) to collect its fact uses below
    γ into ``scratch`` (from position ``step_off[chain_off[c0]]``, so parallel ranges never
    overlap), which are then sorted and de-duplicated in place: chain c's targets are
    ``scratch[tstart[c]:tstart[c] + counts[c]]``. More than SMALL uses below γ: counts[c]
    is minus their number and the vectorised path sorts them. ``counts`` must come zeroed:
    only chains with targets write theirs (and ``tstart``)."""
    n_valid = validity.shape[0]
    cur = step_off[chain_off[c0]] if c1 > c0 else 0
    for c in range(c0, c1):
        s0 = chain_off[c]
        s1 = chain_off[c + 1]
        fmin = np.inf
        wf = -1
        nan_check = 0.0
        bad = False
        for s in range(s0, s1):
            f0 = step_off[s]
            f1 = step_off[s + 1]
            v = np.inf
            for k in range(f0, f1):
                fid = fact_ids[k]
                if fid < 0 or fid >= n_valid:
                    bad = True
                    break
                x = np.float64(validity[fid])
                nan_check += x * 0.0
                v = min(v, x)
                lt = x < fmin
                wf = fid if lt else wf
                fmin = x if lt else fmin
            step_validity[s] = v if f1 > f0 else 1.0
        if bad or nan_check != 0.0:
            k0 = step_off[s0]
            st, at = _locate_bad(fact_ids, validity, k0, step_off[s1])
            status[c] = st
            status_at[c] = at
            continue
        best = np.inf
        ws = -1
        for s in range(s0, s1):
            margin = step_validity[s] - gamma
            lt = margin < best
            ws = s - s0 if lt else ws
            best = margin if lt else best
        robustness[c] = best if s1 > s0 else 0.0
        weakest_step[c] = ws
        weakest_fact[c] = wf
        bound[c] = fmin if wf >= 0 else 1.0
        if fmin < gamma:
            m = _collect_targets(fact_ids, validity, gamma, step_off[s0], step_off[s1],
                                 scratch, cur)
            tstart[c] = cur
            counts[c] = m
            cur += max(m, 0)


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
def uniform_range(shape, chain_off, fact_ids, validity, gamma,
                  robustness, bound, weakest_step, weakest_fact, step_validity, status,
                  status_at, scratch, tstart, counts, c0, c1):  # pragma: no cover - compiled
    """:func:`chain_range` for batches whose steps all use F = len(shape) facts (step s owns
    fact uses s·F .. s·F + F - 1), F ≥ 1, with every validity value known to be finite.

    F is the length of a tuple so that Numba compiles one kernel per F with the inner loops
    unrolled: a step's ids are range-checked first, then its F values are loaded together
    and reduced to the step minimum and its first fact, and the chain keeps the minimum
    over steps (and its fact) and the least margin (and its step) with selects. The
    dependency chains are F and S long instead of F·S, so a chain's gathers overlap.
    ``counts`` must come zeroed: only chains with targets write theirs (and ``tstart``)."""
    F = len(shape)
    uF = np.uint64(F)
    n_valid = validity.shape[0]
    cur = chain_off[c0] * F if c1 > c0 else 0
    # unsigned indices in the hot loop: Numba then emits no negative-index wraparound
    for c in range(np.uint64(c0), np.uint64(c1)):
        s0 = np.uint64(chain_off[c])
        s1 = np.uint64(chain_off[c + np.uint64(1)])
        fmin = np.inf
        wf = -1
        best = np.inf
        ws = -1
        ok = True
        for s in range(s0, s1):
            b = s * uF
            for j in range(uF):
                fid = fact_ids[b + j]
                ok &= (fid >= 0) & (fid < n_valid)
            if not ok:
                break
            v = np.inf
            vf = -1
            for j in range(uF):
                fid = fact_ids[b + j]
                x = np.float64(validity[np.uint64(fid)])
                lt = x < v
                vf = fid if lt else vf
                v = x if lt else v
            step_validity[s] = v
            lt = v < fmin
            wf = vf if lt else wf
            fmin = v if lt else fmin
            margin = v - gamma
            lt = margin < best
            ws = np.int64(s - s0) if lt else ws
            best = margin if lt else best
        if not ok:
            st, at = _locate_bad(fact_ids, validity, np.int64(s0 * uF), np.int64(s1 * uF))
            status[c] = st
            status_at[c] = at
            continue
        robustness[c] = best if s1 > s0 else 0.0
        weakest_step[c] = ws
        weakest_fact[c] = wf
        bound[c] = fmin if wf >= 0 else 1.0
        if fmin < gamma:
            m = _collect_targets(fact_ids, validity, gamma, np.int64(s0 * uF), np.int64(s1 * uF),
                                 scratch, cur)
            tstart[c] = cur
            counts[c] = m
            cur += max(m, 0)


@nb.njit(parallel=True, nogil=True, cache=True)
def uniform_pass(shape, chain_off, fact_ids, validity, gamma,
                 robustness, bound, weakest_step, weakest_fact, step_validity, status,
                 status_at, scratch, tstart, counts, chunks):  # pragma: no cover - compiled
    """:func:`uniform_range` over every chain, split into ``chunks`` parallel tasks."""
    n = chain_off.shape[0] - 1
    for ch in nb.prange(chunks):
        uniform_range(shape, chain_off, fact_ids, validity, gamma, robustness, bound,
                      weakest_step, weakest_fact, step_validity, status, status_at, scratch,
                      tstart, counts, ch * n // chunks, (ch + 1) * n // chunks)


@nb.njit(nogil=True, cache=True)
def target_offsets(counts, offsets):  # pragma: no cover - compiled
    """``offsets[c + 1] = Σ_{i ≤ c} |counts[i]|`` (room for a long chain's uses before
    de-duplication); returns the number of long chains (counts < 0)."""
    total = 0
    n_long = 0
    offsets[0] = 0
    for c in range(counts.shape[0]):
        m = counts[c]
        if m < 0:
            n_long += 1
            m = -m
        total += m
        offsets[c + 1] = total
    return n_long


@nb.njit(nogil=True, cache=True)
def gather_range(tstart, scratch, counts, offsets, targets, c0, c1):  # pragma: no cover
    """Compact the chains' scratch slices into ``targets`` at ``offsets`` (chains with
    counts ≤ 0 are skipped: no targets, or long ones that the vectorised path fills)."""
    for c in range(c0, c1):
        m = counts[c]
        if m > 0:  # tstart is set only for chains with targets
            o = tstart[c]
            t = offsets[c]
            for j in range(m):
                targets[t + j] = scratch[o + j]


@nb.njit(parallel=True, nogil=True, cache=True)
def gather_pass(tstart, scratch, counts, offsets, targets, chunks):  # pragma: no cover
    n = tstart.shape[0]
    for ch in nb.prange(chunks):
        gather_range(tstart, scratch, counts, offsets, targets, ch * n // chunks,
                     (ch + 1) * n // chunks)
