"""Decay-weighted seeded PPR (C++ forward push) against a NumPy power iteration of the
same walk, τ pruning, edge flows, MDL rule pruning and bad input."""
import math

import numpy as np
import pytest

from chrono_engine import _core
from chrono_engine.errors import ConfigError, QueryError
from chrono_engine.tkg import rules as R
from chrono_engine.tkg.graph import RuleGraph, mdl_keep

N, NR = 15, 4


def graph(seed, n=120, days=30):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, N, n)
    o = (s + rng.integers(1, N, n)) % N
    r = rng.integers(0, NR // 2, n)
    t = rng.integers(0, days, n)
    f = np.concatenate([np.stack([s, r, o, t], 1), np.stack([o, r + NR // 2, s, t], 1)])
    return R.build_history(np.unique(f, axis=0).astype(np.int64), N, NR)


def reference(h, conf, beta, seeds, T, alpha, tau, quality=None):
    """Power iteration of the push semantics: live edges t < T with w >= tau; a node
    without live edges keeps its mass, the others keep alpha and pass the rest on."""
    P = np.zeros((N, N))
    for u in range(N):
        for e in range(h.ptr[u], h.ptr[u + 1]):
            if h.t[e] >= T:
                continue
            q = 1.0 if quality is None else float(quality[e])
            w = q * conf[h.rel[e]] * math.exp(-beta[h.rel[e]] * (T - h.t[e]))
            if w >= tau and w > 0:
                P[u, h.obj[e]] += w
    W = P.sum(axis=1)
    dangling = W == 0
    P[~dangling] /= W[~dangling, None]
    x = np.zeros(N)
    x[seeds] += 1.0 / len(seeds)
    p = np.zeros(N)
    for _ in range(5000):
        p += np.where(dangling, x, alpha * x)
        x = (1 - alpha) * (x * ~dangling) @ P
        if x.sum() < 1e-15:
            break
    return p, P, W


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_push_equals_power_iteration(seed):
    h = graph(seed)
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.0, 1.0, NR)
    conf[rng.integers(NR)] = 0.0  # a relation no rule reads
    beta = rng.uniform(0.0, 0.3, NR)
    quality = rng.uniform(0.3, 1.0, len(h.rel)).astype(np.float32)
    seeds = np.array([seed % N, (seed + 3) % N], np.int32)
    for tau in (0.0, 0.05):
        out = _core.ppr(h.ptr, h.rel, h.obj, h.t, quality, conf, beta, seeds, np.ones(2), 25, 0.2, 1e-12, tau, 10**6)
        p = np.zeros(N)
        p[out["node"]] = out["mass"]
        want, P, W = reference(h, conf, beta, seeds, 25, 0.2, tau, quality)
        assert np.abs(p - want).max() < 1e-9 and abs(p.sum() - 1) < 1e-9
        # flows: p(u) w / W(u) over live edges, largest first
        src = np.searchsorted(h.ptr, out["edge"], side="right") - 1
        w = quality[out["edge"]] * conf[h.rel[out["edge"]]] * np.exp(-beta[h.rel[out["edge"]]] * (25 - h.t[out["edge"]]))
        assert np.allclose(out["weight"], w, rtol=1e-6)
        assert np.allclose(out["flow"], p[src] * w / W[src], rtol=1e-6)
        assert (np.diff(out["flow"]) <= 0).all() and (h.t[out["edge"]] < 25).all() and (w >= tau).all()


def test_tau_prunes_work_and_eps_bounds_it():
    h = graph(3, n=400)
    conf = np.full(NR, 0.5)
    beta = np.full(NR, 0.1)
    seeds = np.array([0], np.int32)
    full = _core.ppr(h.ptr, h.rel, h.obj, h.t, None, conf, beta, seeds, np.ones(1), 30, 0.15, 1e-6, 0.0, 0)
    pruned = _core.ppr(h.ptr, h.rel, h.obj, h.t, None, conf, beta, seeds, np.ones(1), 30, 0.15, 1e-6, 0.2, 0)
    assert pruned["pushes"] < full["pushes"] and len(pruned["node"]) <= len(full["node"])
    coarse = _core.ppr(h.ptr, h.rel, h.obj, h.t, None, conf, beta, seeds, np.ones(1), 30, 0.15, 1e-3, 0.0, 0)
    p_full, p_coarse = np.zeros(N), np.zeros(N)
    p_full[full["node"]] = full["mass"]
    p_coarse[coarse["node"]] = coarse["mass"]
    assert coarse["pushes"] < full["pushes"] and np.abs(p_full - p_coarse).sum() < 0.05


def test_bad_input():
    h = graph(4)
    conf = np.full(NR, 0.5)
    beta = np.zeros(NR)
    args = (h.ptr, h.rel, h.obj, h.t, None, conf, beta)
    with pytest.raises(ValueError, match="seed 99 is not a node"):
        _core.ppr(*args, np.array([99], np.int32), np.ones(1), 10)
    with pytest.raises(ValueError, match="alpha"):
        _core.ppr(*args, np.array([0], np.int32), np.ones(1), 10, alpha=1.0)
    with pytest.raises(ValueError, match="sum to > 0"):
        _core.ppr(*args, np.array([0], np.int32), np.zeros(1), 10)
    with pytest.raises(ValueError, match="relation out of range"):
        _core.ppr(h.ptr, h.rel, h.obj, h.t, None, conf[:2], beta[:2], np.array([0], np.int32), np.ones(1), 10)
    with pytest.raises(ValueError, match="ptr must"):
        _core.ppr(h.ptr[:-1], h.rel, h.obj, h.t, None, conf, beta, np.array([0], np.int32), np.ones(1), 10)
    with pytest.raises(ValueError, match="quality"):
        _core.ppr(h.ptr, h.rel, h.obj, h.t, np.ones(3, np.float32), conf, beta, np.array([0], np.int32), np.ones(1), 10)


def test_rule_graph_retrieve_and_mdl():
    h = graph(5, n=300)
    rs = R.mine_rules(np.stack([np.repeat(np.arange(N), np.diff(h.ptr)), h.rel, h.obj, h.t], 1), h,
                      walks=(3000, 0, 0), min_support=1, seed=5)
    rng = np.random.default_rng(5)
    learnq = np.stack([np.repeat(np.arange(N), np.diff(h.ptr)), h.rel, h.obj, h.t], 1)
    hits, tot = R.rule_histograms(rs, learnq[learnq[:, 3] > 5], h, max_hop=10**6, n_days=40)
    rules = R.learn_rules(rs, hits, tot)
    keep = mdl_keep(rules, hits, tot)
    assert keep.dtype == bool and len(keep) == len(rules)
    g = RuleGraph(h, rules, keep)
    head = int(rules.body[0, 0])
    tab = g.retrieve([2], 25, head, k=7, tau=0.0)
    assert tab.num_rows <= 7 and set(tab.column_names) >= {"subject", "relation", "object", "t", "flow", "weight"}
    assert (np.asarray(tab.column("t")) < 25).all()
    # the weights are the strongest kept length-1 rule h <- r of each fact's relation
    for r, w, t in zip(tab.column("relation").to_pylist(), tab.column("weight").to_pylist(), tab.column("t").to_pylist()):
        js = [j for j in range(len(rules)) if keep[j] and rules.length[j] == 1 and rules.body[j, 0] == head
              and rules.body[j, 1] == r]
        j = max(js, key=lambda j: rules.conf[j])
        assert w == pytest.approx(rules.conf[j] * math.exp(-rules.beta[j] * (25 - t)))
    nodes, mass, stats = g.pagerank([2], 25, head)
    assert abs(mass.sum() - 1) < 1e-9 and stats["pushes"] >= 1
    with pytest.raises(QueryError, match="head relation 99 is not in 0..3"):
        g.retrieve([2], 25, 99)
    with pytest.raises(QueryError, match="head relation -1 is not in 0..3"):
        g.pagerank([2], 25, -1)
    with pytest.raises(QueryError, match="k must be a positive integer, got 0"):
        g.retrieve([2], 25, head, k=0)
    for call in (g.retrieve, g.pagerank):
        with pytest.raises(QueryError, match="seeds must not be empty"):
            call([], 25, head)
        with pytest.raises(QueryError, match="seed 99 is not a node"):  # the core's check
            call([99], 25, head)
        with pytest.raises(QueryError, match="alpha"):
            call([2], 25, head, alpha=1.0)
    with pytest.raises(ConfigError, match=r"quality must hold .* \d+ edges, got shape \(3,\)"):
        RuleGraph(h, rules, keep, quality=np.ones(3))
    with pytest.raises(ConfigError, match=r"quality must hold .* quality\[1\] is 0.0"):
        RuleGraph(h, rules, keep, quality=np.r_[1.0, 0.0, np.ones(len(h.rel) - 2)])
    assert rng is not None
