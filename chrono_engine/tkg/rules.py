"""Temporal rules over a TKG: mining by temporal random walks, per-rule confidence and decay
learned from the training split, and rule application for forecasting (Numba kernels).

A cyclic rule of length L (1..3) with head relation h and body relations r_1..r_L reads

    h(X, Y, T) <- r_1(X, Z_1, t_1) ∧ r_2(Z_1, Z_2, t_2) ∧ ... ∧ r_L(Z_{L-1}, Y, t_L),
    t_1 <= t_2 <= ... <= t_L < T.

**Mining** (TLogic-style): a walk starts from a training fact h(X, Y, T), steps backwards in
time from Y along L edges (uniform among the admissible edges; the first step strictly
before T, each later one not after the previous) and must close at X; the relations along
the way, inverted, are the body. Walks run in parallel with a per-walk splitmix64 stream,
so mining is deterministic for a seed. A rule is kept when ``min_support`` walks found it.

**Learning**: every rule is applied to a sample of training queries (s, h, ?, T) with the
history strictly before T. For each (query, rule, candidate y) the most recent grounding
gives the gap Δ = T − t_L (days); the candidate is a hit when (s, h, y, T) is a fact. Per
rule, P(hit | Δ) = c · e^{−βΔ} is fitted by maximum likelihood (β on a log grid, c by
Newton for each β) from per-day histograms, so the ablation's variants (no decay, one
global β, per-rule β) reuse the same counts.

**Confidence table** (optional, :func:`learn_tables`): the same pass also counts per rule,
Δ bin (log2) and count bin (how many of the rule's groundings reach y, log2), and the
rule's confidence becomes that cell's hit rate shrunk toward the fitted curve, so both the
recency and the frequency of a rule's evidence shape it.

**Application**: the score of y for (s, h, ?, T) is the noisy-OR over rules
1 − Π_j (1 − p_j(y)) with p_j(y) = c_j e^{−β_j Δ_j(y)}, Δ_j(y) from rule j's most recent
grounding reaching y (or the table's cell for Δ_j(y) and that grounding count). With a
recurrence table (:func:`learn_recurrence`), candidates y with earlier (s, h, y) facts also
get P(hit | h, gap since the last one, how many), read over the whole history.
Noisy-OR (TLogic's choice) rewards independent rules agreeing; with max only the single best
rule counts and the many weak length-2/3 rules cannot add evidence. Grounding is capped per
hop (the most recent ``max_hop`` edges) so hub entities stay bounded.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from ..errors import ConfigError, FitError

__all__ = ["History", "RuleSet", "build_history", "mine_rules", "learn_rules", "learn_tables",
           "learn_recurrence", "apply_rules"]


@dataclass
class History:
    """All facts (with inverses) as a time-sorted adjacency (CSR by subject)."""

    ptr: np.ndarray    # int64 (n_entities + 1)
    rel: np.ndarray    # int32
    obj: np.ndarray    # int32
    t: np.ndarray      # int64
    n_entities: int
    n_relations: int   # with inverses (2R)
    fact_keys: np.ndarray  # sorted int64 keys of (s, r, o, t), for labels
    t_span: int        # times are in [0, t_span)


def fact_key(s, r, o, t, n_e, n_r, t_span):
    return ((np.asarray(s, np.int64) * n_r + r) * n_e + o) * t_span + t


def build_history(facts: np.ndarray, n_entities: int, n_relations: int) -> History:
    """``facts``: int64 (n, 4) rows (s, r, o, t) including inverses, t >= 0 in time steps;
    ``n_relations`` = 2R."""
    order = np.lexsort((facts[:, 3], facts[:, 0]))
    f = facts[order]
    ptr = np.zeros(n_entities + 1, np.int64)
    np.add.at(ptr, f[:, 0] + 1, 1)
    ptr = np.cumsum(ptr)
    span = int(f[:, 3].max()) + 1 if len(f) else 1
    if float(n_entities) ** 2 * n_relations * span >= 2.0 ** 62:
        raise ConfigError(f"{n_entities} entities x {n_relations} relations x {span} time steps do not fit "
                         "the int64 fact keys")
    keys = np.unique(fact_key(f[:, 0], f[:, 1], f[:, 2], f[:, 3], n_entities, n_relations, span))
    return History(ptr, f[:, 1].astype(np.int32), f[:, 2].astype(np.int32), f[:, 3].astype(np.int64),
                   n_entities, n_relations, keys, span)


@dataclass
class RuleSet:
    """Rules as rows (head, r_1, r_2, r_3) with -1 padding, their length and parameters."""

    body: np.ndarray     # int32 (n, 4)
    length: np.ndarray   # int8
    support: np.ndarray  # walks that found the rule
    conf: np.ndarray     # c_j (float64)
    beta: np.ndarray     # β_j per day (float64)
    # P(hit | rule, Δ bin, count bin) (n, N_DT_BINS, N_COUNT_BINS), or None: c_j e^{-β_j Δ}
    table: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.length)


# ------------------------------------------------------------------ confidence table bins
N_DT_BINS = 12     # Δ (time steps): 0, 1, 2-3, 4-7, ..., 512-1023, >= 1024
N_COUNT_BINS = 6   # groundings of the rule reaching y: 1, 2, 3-4, 5-8, 9-16, >= 17
DT_BIN_MID = np.array([0.0, 1.0] + [(2 ** (b - 1) + 2 ** b - 1) / 2 for b in range(2, 11)] + [1535.5])


@nb.njit(cache=True, inline="always")
def _dt_bin(d):
    """0 for Δ <= 0, else 1 + floor(log2 Δ), at most N_DT_BINS - 1."""
    b = 0
    if d > 0:
        b = 1
        x = 1
        while x * 2 <= d and b < N_DT_BINS - 1:
            x *= 2
            b += 1
    return b


@nb.njit(cache=True, inline="always")
def _count_bin(c):
    """1 -> 0, 2 -> 1, 3-4 -> 2, 5-8 -> 3, 9-16 -> 4, >= 17 -> 5."""
    b = 0
    x = 1
    while x < c and b < N_COUNT_BINS - 1:
        x *= 2
        b += 1
    return b


def _table_arg(rules: "RuleSet") -> np.ndarray:
    """The kernels' view of ``rules.table``: an empty table means the parametric curve."""
    if rules.table is None:
        return np.zeros((0, N_DT_BINS, N_COUNT_BINS))
    return np.ascontiguousarray(rules.table, np.float64)


# ------------------------------------------------------------------ random walks
@nb.njit(cache=True, inline="always")
def _mix(x):
    x = (x + np.uint64(0x9E3779B97F4A7C15))
    z = x
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x, z ^ (z >> np.uint64(31))


@nb.njit(cache=True, inline="always")
def _end_before(ptr, t, node, T, strict):
    """End of node's edges with time < T (strict) or <= T."""
    lo, hi = ptr[node], ptr[node + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if t[mid] < T or (not strict and t[mid] == T):
            lo = mid + 1
        else:
            hi = mid
    return lo


@nb.njit(cache=True, parallel=True)
def _walks(hs, hr, ho, ht, ptr, rel, obj, t, n_rel_half, L, n_walks, seed):
    out = np.full((n_walks, 4), -1, np.int32)
    inv_shift = n_rel_half
    for w in nb.prange(n_walks):
        state = np.uint64(seed) * np.uint64(0x100000001B3) + np.uint64(w) * np.uint64(0x9E3779B97F4A7C15)
        state, z = _mix(state)
        f = np.int64(z % np.uint64(len(hs)))
        X, Y, T = hs[f], ho[f], ht[f]
        cur = Y
        tprev = T
        ok = True
        body = np.full(3, -1, np.int32)
        for k in range(L - 1, -1, -1):
            lo = ptr[cur]
            hi = _end_before(ptr, t, cur, tprev, k == L - 1)
            if hi <= lo:
                ok = False
                break
            if k > 0:
                state, z = _mix(state)
                e = lo + np.int64(z % np.uint64(hi - lo))
            else:  # the last step must close the cycle at X
                cnt = 0
                for e2 in range(lo, hi):
                    if obj[e2] == X:
                        cnt += 1
                if cnt == 0:
                    ok = False
                    break
                state, z = _mix(state)
                pick = np.int64(z % np.uint64(cnt))
                e = lo
                for e2 in range(lo, hi):
                    if obj[e2] == X:
                        if pick == 0:
                            e = e2
                            break
                        pick -= 1
            r = rel[e]
            body[k] = r + inv_shift if r < inv_shift else r - inv_shift  # the atom points the other way
            tprev = t[e]
            cur = obj[e]
        if ok:
            out[w, 0] = hr[f]
            for k in range(L):
                out[w, 1 + k] = body[k]
    return out


def mine_rules(train: np.ndarray, hist: History, *, walks: tuple = (200_000, 200_000, 200_000),
               min_support: int = 2, seed: int = 0) -> RuleSet:
    """Cyclic rules of length 1..len(walks) from ``walks[L-1]`` temporal random walks each."""
    rows, lens, sup = [], [], []
    half = hist.n_relations // 2
    for L, n in enumerate(walks, start=1):
        if n <= 0:
            continue
        out = _walks(train[:, 0], train[:, 1], train[:, 2], train[:, 3], hist.ptr, hist.rel, hist.obj,
                     hist.t, half, L, int(n), seed + L)
        out = out[out[:, 0] >= 0]
        if not len(out):
            continue
        uniq, counts = np.unique(out, axis=0, return_counts=True)
        keep = counts >= min_support
        rows.append(uniq[keep])
        lens.append(np.full(int(keep.sum()), L, np.int8))
        sup.append(counts[keep])
    body = np.concatenate(rows) if rows else np.zeros((0, 4), np.int32)
    n = len(body)
    return RuleSet(body.astype(np.int32), np.concatenate(lens) if lens else np.zeros(0, np.int8),
                   np.concatenate(sup) if sup else np.zeros(0, np.int64), np.zeros(n), np.zeros(n))


# ------------------------------------------------------------------ grounding
def _index(rules: RuleSet, n_rel: int):
    """Lookup tables: length-1 dense (h, r1) -> rule; longer rules as sorted int64 keys,
    plus sorted prefix keys so a walk can stop early."""
    if float(n_rel) ** 4 >= 1e18:
        raise ConfigError(f"{n_rel} relations (with inverses) are too many for the int64 rule keys")
    r1 = np.full((n_rel, n_rel), -1, np.int32)
    keys, ids, pre = [], [], []
    for j, (row, L) in enumerate(zip(rules.body, rules.length)):
        h, a, b, c = (int(x) for x in row)
        if L == 1:
            r1[h, a] = j
        else:
            k2 = (h * n_rel + a) * n_rel + b
            pre.append(h * n_rel + a)
            if L == 2:
                keys.append(k2)
            else:
                pre.append(k2 + 1_000_000_000_000_000)  # the (h, a, b) prefix of a length-3 rule
                keys.append(k2 * n_rel + c + 2_000_000_000_000_000)
            ids.append(j)
    keys = np.array(keys, np.int64)
    ids = np.array(ids, np.int32)
    order = np.argsort(keys, kind="stable")
    return r1, keys[order], ids[order], np.unique(np.array(pre, np.int64))


@nb.njit(cache=True, inline="always")
def _find(sorted_keys, key):
    i = np.searchsorted(sorted_keys, key)
    return i if i < len(sorted_keys) and sorted_keys[i] == key else -1


@nb.njit(cache=True, parallel=True)
def _ground(qs, qr, qt, ptr, rel, obj, t, r1tab, keys, kid, prefix, n_rel, max_hop, cap, anchor_first,
            out_rule, out_y, out_dt, out_n):
    """Per query q: (rule, y, Δ) for each rule's most recent grounding reaching y, written to
    out_*[q, :out_n[q]] (at most ``cap``; extra groundings are dropped)."""
    P3 = np.int64(1_000_000_000_000_000)
    for q in nb.prange(len(qs)):
        s, h, T = qs[q], qr[q], qt[q]
        n = 0
        lo0 = ptr[s]
        hi0 = _end_before(ptr, t, s, T, True)
        start0 = max(lo0, hi0 - max_hop)
        for e1 in range(hi0 - 1, start0 - 1, -1):  # most recent first
            a = rel[e1]
            z1 = obj[e1]
            t1 = t[e1]
            j = r1tab[h, a]
            if j >= 0 and n < cap:
                out_rule[q, n] = j
                out_y[q, n] = z1
                out_dt[q, n] = T - t1
                n += 1
            if _find(prefix, np.int64(h) * n_rel + a) < 0:
                continue
            # z1's edges are time-sorted: [first with t >= t1, last with t < T]
            lo1 = _end_before(ptr, t, z1, t1, True)
            hi1 = _end_before(ptr, t, z1, T, True)
            start1 = max(lo1, hi1 - max_hop)
            for e2 in range(hi1 - 1, start1 - 1, -1):
                b = rel[e2]
                z2 = obj[e2]
                t2 = t[e2]
                k2 = (np.int64(h) * n_rel + a) * n_rel + b
                i = _find(keys, k2)
                if i >= 0 and n < cap:
                    out_rule[q, n] = kid[i]
                    out_y[q, n] = z2
                    out_dt[q, n] = T - (t1 if anchor_first else t2)
                    n += 1
                if _find(prefix, k2 + P3) < 0:
                    continue
                lo2 = _end_before(ptr, t, z2, t2, True)
                hi2 = _end_before(ptr, t, z2, T, True)
                start2 = max(lo2, hi2 - max_hop)
                for e3 in range(hi2 - 1, start2 - 1, -1):
                    i3 = _find(keys, k2 * n_rel + rel[e3] + 2 * P3)
                    if i3 >= 0 and n < cap:
                        out_rule[q, n] = kid[i3]
                        out_y[q, n] = obj[e3]
                        out_dt[q, n] = T - (t1 if anchor_first else t[e3])
                        n += 1
        out_n[q] = n


def _ground_chunk(q: np.ndarray, hist: History, idx, max_hop: int, cap: int, anchor_first: bool = False):
    r1, keys, kid, prefix = idx
    n = len(q)
    out_rule = np.empty((n, cap), np.int32)
    out_y = np.empty((n, cap), np.int32)
    out_dt = np.empty((n, cap), np.int32)
    out_n = np.zeros(n, np.int64)
    _ground(q[:, 0], q[:, 1], q[:, 3], hist.ptr, hist.rel, hist.obj, hist.t, r1, keys, kid, prefix,
            np.int64(hist.n_relations), max_hop, cap, anchor_first, out_rule, out_y, out_dt, out_n)
    return out_rule, out_y, out_dt, out_n


# ------------------------------------------------------------------ learning
@nb.njit(cache=True)
def _histogram(qs, qr, qt, out_rule, out_y, out_dt, out_n, keys, n_e, n_r, t_span, n_days, hits, tot,
               hits_t, tot_t, hits3, tot3):
    """Most recent grounding per (query, rule, y) -> per-rule day histograms of hits/total,
    by gap Δ, by query time, and by (Δ bin, number of the rule's groundings reaching y)."""
    for q in range(len(out_n)):
        n = out_n[q]
        if n == 0:
            continue
        k = out_rule[q, :n].astype(np.int64) * n_e + out_y[q, :n]
        order = np.argsort(k)
        ii = 0
        while ii < n:
            i = order[ii]
            kk = k[i]
            best = out_dt[q, i]
            cnt = 0
            while ii < n and k[order[ii]] == kk:  # the group of (rule, y): min Δ, count
                best = min(best, out_dt[q, order[ii]])
                cnt += 1
                ii += 1
            d = min(best, n_days - 1)
            j = out_rule[q, i]
            y = out_y[q, i]
            key = ((np.int64(qs[q]) * n_r + qr[q]) * n_e + y) * t_span + qt[q]
            p = np.searchsorted(keys, key)
            hit = p < len(keys) and keys[p] == key
            tot[j, d] += 1
            tq = min(qt[q], n_days - 1)
            tot_t[j, tq] += 1
            db = _dt_bin(best)
            cb = _count_bin(cnt)
            tot3[j, db, cb] += 1
            if hit:
                hits[j, d] += 1
                hits_t[j, tq] += 1
                hits3[j, db, cb] += 1


@nb.njit(cache=True, parallel=True)
def _fit(hits, tot, betas, fixed_beta, out_c, out_b, prior_n, prior_p):
    # fixed_beta: array per rule; < 0 searches the grid
    """Per rule: (c, β) maximising Σ_d h_d log(c e^{-βd}) + (n_d − h_d) log(1 − c e^{-βd}),
    β from ``betas`` (or ``fixed_beta`` >= 0), c by Newton; a weak Beta-style prior
    (prior_n pseudo-observations at rate prior_p, age 0) keeps rare rules sane."""
    R, D = tot.shape
    for j in nb.prange(R):
        best_ll = -np.inf
        best_c = 0.0
        best_b = 0.0
        fb = fixed_beta[j]
        nb_ = len(betas) if fb < 0 else 1
        for bi in range(nb_):
            beta = betas[bi] if fb < 0 else fb
            c = 0.5
            for _ in range(30):
                g = prior_n * prior_p / c - prior_n * (1 - prior_p) / (1 - c)
                hss = -prior_n * prior_p / (c * c) - prior_n * (1 - prior_p) / ((1 - c) ** 2)
                for d in range(D):
                    n = tot[j, d]
                    if n == 0:
                        continue
                    h = hits[j, d]
                    e = math.exp(-beta * d)
                    g += h / c - (n - h) * e / (1 - c * e)
                    hss += -h / (c * c) - (n - h) * e * e / ((1 - c * e) ** 2)
                step = g / hss
                c2 = c - step
                c = min(max(c2, 1e-9), 1 - 1e-9)
                if abs(step) < 1e-12:
                    break
            ll = prior_n * prior_p * math.log(c) + prior_n * (1 - prior_p) * math.log(1 - c)
            for d in range(D):
                n = tot[j, d]
                if n == 0:
                    continue
                h = hits[j, d]
                e = math.exp(-beta * d)
                ll += h * math.log(c * e) + (n - h) * math.log(1 - c * e)
            if ll > best_ll:
                best_ll, best_c, best_b = ll, c, beta
        out_c[j] = best_c
        out_b[j] = best_b


def rule_histograms(rules: RuleSet, queries: np.ndarray, hist: History, *, max_hop: int = 100,
                    cap: int = 8192, chunk: int = 1024, n_days: int = 400,
                    anchor_first: bool = False, by_time: bool = False, tables: bool = False) -> tuple:
    """Per rule and gap Δ (clipped at ``n_days`` - 1): groundings and hits over ``queries``,
    ``(hits, tot)``; with ``by_time`` also per rule and query time, ``(hits_t, tot_t)`` (for
    ``learn_rules(decay="ou")``); with ``tables`` also per rule, Δ bin and count bin (the
    number of the rule's groundings reaching the candidate), ``(hits3, tot3)`` (for
    :func:`learn_tables`). One grounding pass fills them all."""
    idx = _index(rules, hist.n_relations)
    hits = np.zeros((len(rules), n_days), np.int64)
    tot = np.zeros((len(rules), n_days), np.int64)
    hits_t = np.zeros((len(rules), n_days), np.int64)  # by the query's time: the OU variant
    tot_t = np.zeros((len(rules), n_days), np.int64)
    hits3 = np.zeros((len(rules), N_DT_BINS, N_COUNT_BINS), np.int64)
    tot3 = np.zeros((len(rules), N_DT_BINS, N_COUNT_BINS), np.int64)
    for a in range(0, len(queries), chunk):
        q = queries[a:a + chunk]
        out = _ground_chunk(q, hist, idx, max_hop, cap, anchor_first)
        _histogram(q[:, 0], q[:, 1], q[:, 3], *out, hist.fact_keys, np.int64(hist.n_entities),
                   np.int64(hist.n_relations), np.int64(hist.t_span), n_days, hits, tot, hits_t, tot_t,
                   hits3, tot3)
    return (hits, tot) + ((hits_t, tot_t) if by_time else ()) + ((hits3, tot3) if tables else ())


def learn_tables(rules: RuleSet, hits3: np.ndarray, tot3: np.ndarray, *, shrink: float = 50.0) -> RuleSet:
    """Confidence as a table over (rule, Δ bin, count bin) instead of the curve c_j e^{-β_j Δ}.

    Each cell is the rule's empirical hit rate among training (query, candidate) pairs whose
    most recent grounding fell in that Δ bin with that many groundings of the rule reaching
    the candidate, shrunk toward the fitted curve at the bin's mid-point with ``shrink``
    pseudo-observations: (hits + shrink · c e^{-βΔ_mid}) / (total + shrink). So recency and
    frequency both shape a rule's confidence (as in CountTRuCoLa), and cells without
    evidence keep the learned decay of ``rules`` (whichever ``decay`` variant fitted it)."""
    if shrink <= 0:
        raise ConfigError(f"shrink must be positive, got {shrink!r}")
    if hits3.shape != (len(rules), N_DT_BINS, N_COUNT_BINS) or tot3.shape != hits3.shape:
        raise FitError(f"hits3 and tot3 must have shape {(len(rules), N_DT_BINS, N_COUNT_BINS)}, "
                       f"got {hits3.shape} and {tot3.shape}")
    prior = rules.conf[:, None] * np.exp(-rules.beta[:, None] * DT_BIN_MID[None, :])
    table = (hits3 + shrink * prior[:, :, None]) / (tot3 + shrink)
    return RuleSet(rules.body, rules.length, rules.support, rules.conf, rules.beta, table)


@nb.njit(cache=True)
def _scan_history(s, h, T, hptr, hrel, hobj, ht, last, cnt, seen, rec, w_other, beta_rec):
    """One pass over s's edges before T: for each y with earlier (s, h, y) facts, their
    number ``cnt[y]`` and the last time ``last[y]``, the distinct such y in ``seen[:m]``
    (returns m; ``cnt`` must be zero for them on entry); and, when ``rec`` is non-empty,
    the decayed frequency rec[y] += (1 if r = h else w_other) e^{-β_rec (T − t)}."""
    m = 0
    with_rec = rec.shape[0] > 0
    for e in range(hptr[s], hptr[s + 1]):
        if ht[e] >= T:
            break
        y = hobj[e]
        if hrel[e] == h:
            if cnt[y] == 0:
                seen[m] = y
                m += 1
            cnt[y] += 1
            last[y] = ht[e]
        if with_rec:
            rec[y] += (1.0 if hrel[e] == h else w_other) * math.exp(-beta_rec * (T - ht[e]))
    return m


@nb.njit(cache=True)
def _recurrence_counts(qs, qr, qt, hptr, hrel, hobj, ht, keys, n_e, n_r, t_span, hits, tot):
    """Per query (s, h, ?, T): each y with earlier (s, h, y) facts counts once in the cell
    (h, bin(T − last), bin(number of them)); a hit when (s, h, y, T) is a fact."""
    last = np.zeros(n_e, np.int64)
    cnt = np.zeros(n_e, np.int64)
    seen = np.empty(n_e, np.int64)
    no_rec = np.zeros(0)
    for q in range(len(qs)):
        s, h, T = qs[q], qr[q], qt[q]
        m = _scan_history(s, h, T, hptr, hrel, hobj, ht, last, cnt, seen, no_rec, 0.0, 0.0)
        for i in range(m):
            y = seen[i]
            db = _dt_bin(T - last[y])
            cb = _count_bin(cnt[y])
            key = ((np.int64(s) * n_r + h) * n_e + y) * t_span + T
            p = np.searchsorted(keys, key)
            tot[h, db, cb] += 1
            if p < len(keys) and keys[p] == key:
                hits[h, db, cb] += 1
            cnt[y] = 0


def recurrence_histograms(queries: np.ndarray, hist: History) -> tuple:
    """(hits, tot) per (relation, gap bin, count bin) over ``queries``: see
    :func:`learn_recurrence`."""
    shape = (hist.n_relations, N_DT_BINS, N_COUNT_BINS)
    hits = np.zeros(shape, np.int64)
    tot = np.zeros(shape, np.int64)
    q = np.ascontiguousarray(queries, np.int64)
    _recurrence_counts(q[:, 0], q[:, 1], q[:, 3], hist.ptr, hist.rel, hist.obj, hist.t, hist.fact_keys,
                       np.int64(hist.n_entities), np.int64(hist.n_relations), np.int64(hist.t_span), hits, tot)
    return hits, tot


def learn_recurrence(queries: np.ndarray, hist: History, *, shrink: float = 20.0) -> np.ndarray:
    """P(hit | relation r, gap bin of the last (s, r, y) fact, bin of the number of earlier
    (s, r, y) facts), from training ``queries`` (s, r, ?, T) over the whole history before T:
    the recurrency baseline's signal, calibrated per relation by recency and frequency and
    not limited to the most recent ``max_hop`` edges that rule grounding reads. Each cell is
    shrunk toward the rate of that (gap, count) cell pooled over relations with ``shrink``
    pseudo-observations. Shape (n_relations, N_DT_BINS, N_COUNT_BINS)."""
    if shrink <= 0:
        raise ConfigError(f"shrink must be positive, got {shrink!r}")
    hits, tot = recurrence_histograms(queries, hist)
    pooled = (hits.sum(0) + 1.0) / (tot.sum(0) + 2.0)
    return (hits + shrink * pooled[None]) / (tot + shrink)


def learn_rules(rules: RuleSet, hits: np.ndarray, tot: np.ndarray, *, decay: str = "per_rule",
                prior_n: float = 2.0, prior_p: float = 0.01, by_time: tuple | None = None,
                min_ou_days: int = 20) -> RuleSet:
    """Fit (c_j, β_j): ``decay`` "per_rule", "global" (one β for all, chosen by total
    likelihood), "none" (β = 0), or "ou": β_j = 2κ_j (Proposition 1) with κ_j from
    :func:`~chrono_engine.fit_ou` on the rule's daily hit rate over query time (``by_time`` =
    (hits_t, tot_t) from :func:`rule_histograms`; rules with fewer than ``min_ou_days``
    days of evidence, or a constant rate, take the global β); c_j is then fitted with β_j
    fixed."""
    betas = np.r_[0.0, np.geomspace(1e-4, 1.0, 33)]
    c = np.zeros(len(rules))
    b = np.zeros(len(rules))
    n = len(rules)
    if decay == "per_rule":
        _fit(hits, tot, betas, np.full(n, -1.0), c, b, prior_n, prior_p)
    elif decay == "none":
        _fit(hits, tot, betas, np.zeros(n), c, b, prior_n, prior_p)
    elif decay == "ou":
        from ..fit import fit_ou
        if by_time is None:
            raise ConfigError("decay='ou' needs by_time=(hits_t, tot_t) from rule_histograms(..., by_time=True)")
        glob = learn_rules(rules, hits, tot, decay="global", prior_n=prior_n, prior_p=prior_p).beta
        fixed = glob.copy()
        hits_t, tot_t = by_time
        for j in range(n):
            days = np.flatnonzero(tot_t[j])
            if len(days) < min_ou_days:
                continue
            rate = hits_t[j, days] / tot_t[j, days]
            if np.ptp(rate) == 0:
                continue
            try:
                fixed[j] = min(2.0 * fit_ou(days.astype(np.float64), rate).kappa, 10.0)
            except FitError:  # degenerate series: keep the global β
                pass
        _fit(hits, tot, betas, fixed, c, b, prior_n, prior_p)
    elif decay == "global":
        best = None
        d = np.arange(hits.shape[1])
        for beta in betas:
            _fit(hits, tot, betas, np.full(n, float(beta)), c, b, prior_n, prior_p)
            e = np.exp(-beta * d)[None, :]
            p = np.clip(c[:, None] * e, 1e-12, 1 - 1e-12)
            ll = float((hits * np.log(p) + (tot - hits) * np.log1p(-p)).sum())
            if best is None or ll > best[0]:
                best = (ll, c.copy(), b.copy())
        c, b = best[1], best[2]
    else:
        raise ConfigError(f"decay must be 'per_rule', 'global', 'ou' or 'none', got {decay!r}")
    return RuleSet(rules.body, rules.length, rules.support, c, b)


# ------------------------------------------------------------------ application
@nb.njit(cache=True)
def _rule_scores(rule, ys, dt, n, conf, beta, length, wlen, use_max, w_count, sc, table):
    """sc[y] = noisy-OR (or max) over rules of w_L p_j(y) + w_count n_y/(1+n_y) for one
    query's groundings (rule, y, Δ)[:n]; n_y counts the groundings reaching y. p_j(y) is
    c_j e^{-β_j Δ_min}, or with a ``table`` (non-empty) table[j, bin(Δ_min), bin(n_jy)]
    with n_jy the groundings of rule j reaching y."""
    if n == 0:
        return
    use_table = table.shape[0] > 0
    k = ys[:n].astype(np.int64) * len(conf) + rule[:n]
    order = np.argsort(k)
    ii = 0
    while ii < n:
        y = ys[order[ii]]
        logq = 0.0
        cnt = 0
        while ii < n and ys[order[ii]] == y:
            j = rule[order[ii]]
            dmin = dt[order[ii]]
            cj = 0
            while ii < n and ys[order[ii]] == y and rule[order[ii]] == j:
                dmin = min(dmin, dt[order[ii]])
                cj += 1
                ii += 1
            cnt += cj
            if use_table:
                p = table[j, _dt_bin(dmin), _count_bin(cj)]
            else:
                p = conf[j] * math.exp(-beta[j] * dmin)
            pj = min(p * wlen[length[j]], 0.999999999)
            if use_max:
                logq = min(logq, math.log1p(-pj))
            else:
                logq += math.log1p(-pj)
        sc[y] = -math.expm1(logq) + w_count * cnt / (1.0 + cnt)


@nb.njit(cache=True, parallel=True)
def _noisy_or(out_rule, out_y, out_dt, out_n, conf, beta, length, table, scores):
    wlen = np.ones(4)
    for q in nb.prange(len(out_n)):
        _rule_scores(out_rule[q], out_y[q], out_dt[q], out_n[q], conf, beta, length, wlen, False, 0.0, scores[q],
                     table)


def apply_rules(rules: RuleSet, queries: np.ndarray, hist: History, *, max_hop: int = 100,
                cap: int = 8192, chunk: int = 512):
    """Yield (row offset, dense scores (chunk, n_entities)) for the queries in order:
    1 − Π_rules (1 − c e^{-βΔ_min}) per candidate, 0 where no rule reaches."""
    idx = _index(rules, hist.n_relations)
    n_e = hist.n_entities
    for a in range(0, len(queries), chunk):
        q = queries[a:a + chunk]
        out = _ground_chunk(q, hist, idx, max_hop, cap)
        scores = np.zeros((len(q), n_e))
        _noisy_or(*out, rules.conf, rules.beta, rules.length.astype(np.int64), _table_arg(rules), scores)
        yield a, scores


# ------------------------------------------------------------------ forecasting ranks
@dataclass
class RelationIndex:
    """Facts sorted by (relation, time): the fallback's decayed object popularity."""

    ptr: np.ndarray
    obj: np.ndarray
    t: np.ndarray


def build_relation_index(facts: np.ndarray, n_relations: int) -> RelationIndex:
    order = np.lexsort((facts[:, 3], facts[:, 1]))
    f = facts[order]
    ptr = np.searchsorted(f[:, 1], np.arange(n_relations + 1)).astype(np.int64)
    return RelationIndex(ptr, f[:, 2].astype(np.int32), f[:, 3].astype(np.int64))


@nb.njit(cache=True, parallel=True)
def _rank(qs, qr, qo, qt, out_rule, out_y, out_dt, out_n, conf, beta, length, table, wlen, n_e,
          rptr, robj, rt, w_pop, beta_pop, w_count, hptr, hrel, hobj, ht, w_rec, beta_rec, w_other,
          rtab, w_rt, use_max, fptr, fent, ranks):
    """Filtered rank (average rule for ties) of each query's true object under
    score(y) = noisy-OR_rules(w_L p_j(y)) + w_count n/(1+n) + w_rec recurrency(y)
               + w_rt rtab[h, bin(Δ_last), bin(n_shy)] + w_pop popularity(y)
    (p_j from the rule's curve or table, see :func:`_rule_scores`; the recurrence table term
    only for y with earlier (s, h, y) facts, n_shy of them, the last Δ_last ago)."""
    for q in nb.prange(len(qs)):
        sc = np.zeros(n_e)
        _rule_scores(out_rule[q], out_y[q], out_dt[q], out_n[q], conf, beta, length, wlen, use_max, w_count, sc,
                     table)
        if w_rt > 0 or w_rec > 0:  # one scan of s's history before T feeds both terms
            s_, h, T = qs[q], qr[q], qt[q]
            rec = np.zeros(n_e if w_rec > 0 else 0)
            last = np.empty(n_e, np.int64)
            cnt = np.zeros(n_e, np.int64)
            seen = np.empty(n_e, np.int64)
            m = _scan_history(s_, h, T, hptr, hrel, hobj, ht, last, cnt, seen, rec, w_other, beta_rec)
            if w_rt > 0:  # calibrated recurrence of (s, h, y) over the whole history before T
                for i in range(m):
                    y = seen[i]
                    sc[y] += w_rt * rtab[h, _dt_bin(T - last[y]), _count_bin(cnt[y])]
            if w_rec > 0:  # decayed frequency: Σ over earlier (s, r', y) edges, r' = h weighted 1
                mx = 0.0
                for y in range(n_e):
                    mx = max(mx, rec[y])
                if mx > 0:
                    for y in range(n_e):
                        sc[y] += w_rec * rec[y] / mx
        if w_pop > 0:
            h = qr[q]
            T = qt[q]
            pop = np.zeros(n_e)
            mx = 0.0
            for e in range(rptr[h], rptr[h + 1]):
                if rt[e] >= T:
                    break
                pop[robj[e]] += math.exp(-beta_pop * (T - rt[e]))
            for y in range(n_e):
                mx = max(mx, pop[y])
            if mx > 0:
                for y in range(n_e):
                    sc[y] += w_pop * pop[y] / mx
        tv = sc[qo[q]]
        for e in range(fptr[q], fptr[q + 1]):
            sc[fent[e]] = -1.0
        better = 0
        tied = 0
        for y in range(n_e):
            if sc[y] > tv:
                better += 1
            elif sc[y] == tv:
                tied += 1
        ranks[q] = 1.0 + better + (tied - 1) / 2.0


def forecast_ranks(rules: RuleSet, queries: np.ndarray, hist: History, rel: RelationIndex,
                   filters: tuple, *, length_weights=(1.0, 0.5, 0.25), max_hop: int = 100,
                   cap: int = 8192, chunk: int = 2048, w_pop: float = 0.01, pop_half_life: float = 30.0,
                   w_count: float = 0.01, w_rec: float = 0.0, rec_half_life: float = 30.0,
                   w_other: float = 0.1, recurrence: np.ndarray | None = None, w_recurrence: float = 0.0,
                   aggregate: str = "noisy-or", anchor_first: bool = False) -> np.ndarray:
    """Filtered ranks of ``queries`` (s, r, o, t): ``filters`` = (ptr, entities) CSR of the
    other correct objects per query (removed before ranking). ``recurrence`` (from
    :func:`learn_recurrence`) adds ``w_recurrence`` x P(hit | r, gap since the last (s, r, y),
    number of earlier (s, r, y)) for candidates y that recur."""
    idx = _index(rules, hist.n_relations)
    table = _table_arg(rules)
    if recurrence is None:
        if w_recurrence > 0:
            raise ConfigError(f"w_recurrence={w_recurrence!r} needs a recurrence table (recurrence=, "
                              "from learn_recurrence)")
        rtab = np.zeros((0, N_DT_BINS, N_COUNT_BINS))
    else:
        rtab = np.ascontiguousarray(recurrence, np.float64)
        if rtab.shape != (hist.n_relations, N_DT_BINS, N_COUNT_BINS):
            raise ConfigError(f"recurrence must have shape {(hist.n_relations, N_DT_BINS, N_COUNT_BINS)}, "
                             f"got {rtab.shape}")
    wlen = np.r_[0.0, np.asarray(length_weights, np.float64)]
    fptr, fent = filters
    ranks = np.empty(len(queries))
    for a in range(0, len(queries), chunk):
        q = queries[a:a + chunk]
        out = _ground_chunk(q, hist, idx, max_hop, cap, anchor_first)
        _rank(q[:, 0], q[:, 1], q[:, 2], q[:, 3], *out, rules.conf, rules.beta, rules.length.astype(np.int64), table,
              wlen, np.int64(hist.n_entities), rel.ptr, rel.obj, rel.t, float(w_pop),
              math.log(2.0) / pop_half_life, float(w_count), hist.ptr, hist.rel, hist.obj, hist.t,
              float(w_rec), math.log(2.0) / rec_half_life, float(w_other), rtab, float(w_recurrence),
              aggregate == "max",
              fptr[a:a + len(q) + 1] - fptr[a], fent[fptr[a]:],
              ranks[a:a + len(q)])
    return ranks
