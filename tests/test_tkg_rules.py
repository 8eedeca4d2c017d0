"""Temporal rules (chrono_engine.tkg.rules) against brute-force Python on small random
temporal graphs: mined rules really ground, the grounding kernel finds every path and its
most recent gap, the per-rule fit is the likelihood maximum, noisy-OR is what it says."""
import math

import numpy as np
import pytest

from chrono_engine.errors import ConfigError, FitError
from chrono_engine.tkg import rules as R

N_E, N_R = 12, 3  # entities, relations before inverses


def random_graph(seed, n=160, days=40):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, N_E, n)
    o = (s + rng.integers(1, N_E, n)) % N_E
    r = rng.integers(0, N_R, n)
    t = rng.integers(0, days, n)
    base = np.stack([s, r, o, t], 1)
    inv = np.stack([o, r + N_R, s, t], 1)
    facts = np.unique(np.concatenate([base, inv]), axis=0).astype(np.int64)
    return facts


def paths(facts, s, body, T):
    """Every grounding of body relations from s with t1 <= ... <= tL < T: (y, t_L)."""
    by = {}
    for a, r, b, t in facts.tolist():
        by.setdefault((a, r), []).append((b, t))
    out = []

    def walk(node, k, tprev):
        if k == len(body):
            out.append((node, tprev))
            return
        for b, t in by.get((node, body[k]), ()):
            if t < T and (k == 0 or t >= tprev):
                walk(b, k + 1, t)
    walk(s, 0, -1)
    return out


def test_mined_rules_ground_in_the_data_and_are_deterministic():
    facts = random_graph(0)
    H = R.build_history(facts, N_E, 2 * N_R)
    rs = R.mine_rules(facts, H, walks=(3000, 3000, 3000), min_support=1, seed=4)
    again = R.mine_rules(facts, H, walks=(3000, 3000, 3000), min_support=1, seed=4)
    assert np.array_equal(rs.body, again.body) and np.array_equal(rs.support, again.support)
    assert set(np.unique(rs.length).tolist()) == {1, 2, 3}
    heads = {}
    for x, h, y, T in facts.tolist():
        heads.setdefault(h, []).append((x, y, T))
    for row, L in zip(rs.body.tolist(), rs.length.tolist()):
        h, body = row[0], row[1:1 + L]
        assert all(b >= 0 for b in body) and all(b == -1 for b in row[1 + L:])
        # some head fact h(X, Y, T) has a body path X -> ... -> Y strictly before T
        assert any(y in {p[0] for p in paths(facts, x, body, T)} for x, y, T in heads[h]), (row, L)


def groundings_python(facts, rules, q):
    """(rule, y) -> the most recent gap of the rule's groundings reaching y."""
    return {key: d for key, (d, _) in groups_python(facts, rules, q).items()}


def kernel_groundings(rules, H, q):
    out = R._ground_chunk(q[None, :], H, R._index(rules, H.n_relations), max_hop=10**6, cap=10**5)
    rule, y, dt, n = out[0][0], out[1][0], out[2][0], out[3][0]
    best = {}
    for j, yy, d in zip(rule[:n].tolist(), y[:n].tolist(), dt[:n].tolist()):
        best[(j, yy)] = min(best.get((j, yy), 10**9), d)
    return best


@pytest.mark.parametrize("seed", [1, 2])
def test_grounding_kernel_equals_brute_force(seed):
    facts = random_graph(seed)
    H = R.build_history(facts, N_E, 2 * N_R)
    rs = R.mine_rules(facts, H, walks=(2000, 2000, 2000), min_support=1, seed=seed)
    rng = np.random.default_rng(seed)
    for q in facts[rng.choice(len(facts), 25, replace=False)]:
        assert kernel_groundings(rs, H, q) == groundings_python(facts, rs, q.tolist())


def test_hop_cap_keeps_the_most_recent_edges():
    facts = np.array([[0, 0, 1, t] for t in range(10)] + [[1, 0 + N_R, 0, t] for t in range(10)], np.int64)
    H = R.build_history(facts, N_E, 2 * N_R)
    rules = R.RuleSet(np.array([[0, 0, -1, -1]], np.int32), np.array([1], np.int8), np.array([1]),
                      np.array([0.5]), np.array([0.1]))
    out = R._ground_chunk(np.array([[0, 0, 1, 20]]), H, R._index(rules, H.n_relations), max_hop=3, cap=100)
    assert out[3][0] == 3 and sorted(out[2][0][:3].tolist()) == [11, 12, 13]


def test_fit_is_the_likelihood_maximum():
    rng = np.random.default_rng(0)
    D = 60
    tot = rng.integers(0, 40, (5, D))
    truth = [(0.6, 0.05), (0.2, 0.0), (0.9, 0.3), (0.05, 0.01), (0.4, 0.002)]
    hits = np.stack([rng.binomial(tot[j], c * np.exp(-b * np.arange(D))) for j, (c, b) in enumerate(truth)])
    betas = np.r_[0.0, np.geomspace(1e-4, 1.0, 33)]
    c = np.zeros(5)
    b = np.zeros(5)
    R._fit(hits, tot, betas, np.full(5, -1.0), c, b, 0.0, 0.5)

    def ll(j, cc, bb):
        p = np.clip(cc * np.exp(-bb * np.arange(D)), 1e-300, 1 - 1e-16)
        return float((hits[j] * np.log(p) + (tot[j] - hits[j]) * np.log1p(-p)).sum())
    grid_c = np.linspace(1e-4, 1 - 1e-4, 4001)
    for j in range(5):
        brute = max(ll(j, cc, bb) for bb in betas for cc in grid_c[::8])
        assert ll(j, c[j], b[j]) >= brute - 1e-6
        assert b[j] in betas


def time_aware_filters(qs):
    """(answers per (s, r, t), CSR (ptr, entities) of each query's other true objects)."""
    answers = {}
    for s, r, o, t in qs.tolist():
        answers.setdefault((s, r, t), []).append(o)
    ptr, ent = [0], []
    for s, r, o, t in qs.tolist():
        ent += [x for x in answers[(s, r, t)] if x != o]
        ptr.append(len(ent))
    return answers, (np.array(ptr, np.int64), np.array(ent, np.int64))


def test_noisy_or_scores():
    facts = random_graph(5)
    H = R.build_history(facts, N_E, 2 * N_R)
    rs = R.mine_rules(facts, H, walks=(2000, 2000, 0), min_support=1, seed=5)
    rng = np.random.default_rng(5)
    rs = R.RuleSet(rs.body, rs.length, rs.support, rng.uniform(0.05, 0.9, len(rs)), rng.uniform(0, 0.2, len(rs)))
    qs = facts[rng.choice(len(facts), 20, replace=False)]
    got = np.concatenate([sc for _, sc in R.apply_rules(rs, qs, H, max_hop=10**6, cap=10**5, chunk=7)])
    for i, q in enumerate(qs.tolist()):
        want = np.zeros(N_E)
        per_y = {}
        for (j, y), dt in groundings_python(facts, rs, q).items():
            per_y.setdefault(y, []).append(rs.conf[j] * math.exp(-rs.beta[j] * dt))
        for y, ps in per_y.items():
            want[y] = 1 - np.prod([1 - p for p in ps])
        assert np.allclose(got[i], want, atol=1e-12)


def test_forecast_ranks_against_python():
    from chrono_engine import tkg
    facts = random_graph(8, n=220)
    H = R.build_history(facts, N_E, 2 * N_R)
    rel = R.build_relation_index(facts, 2 * N_R)
    rs = R.mine_rules(facts, H, walks=(2000, 2000, 2000), min_support=1, seed=8)
    rng = np.random.default_rng(8)
    rs = R.RuleSet(rs.body, rs.length, rs.support, rng.uniform(0.05, 0.9, len(rs)), rng.uniform(0, 0.2, len(rs)))
    qs = facts[rng.choice(len(facts), 40, replace=False)]
    answers, filters = time_aware_filters(qs)
    wl = (1.0, 0.5, 0.25)
    kw = dict(w_pop=0.01, pop_half_life=7.0, w_count=0.01, w_rec=0.3, rec_half_life=10.0, w_other=0.1)
    got = R.forecast_ranks(rs, qs, H, rel, filters, length_weights=wl, max_hop=10**6, cap=10**5, chunk=16, **kw)
    for i, q in enumerate(qs.tolist()):
        s, h, o, T = q
        sc = np.zeros(N_E)
        per_y, n_y = {}, {}
        for (j, y), dt in groundings_python(facts, rs, q).items():
            per_y.setdefault(y, []).append(wl[rs.length[j] - 1] * rs.conf[j] * math.exp(-rs.beta[j] * dt))
        for j, row in enumerate(rs.body.tolist()):  # every grounding counts for n
            if row[0] == h:
                for y, _ in paths(facts, s, row[1:1 + rs.length[j]], T):
                    n_y[y] = n_y.get(y, 0) + 1
        for y, ps in per_y.items():
            sc[y] = 1 - np.prod([1 - p for p in ps]) + 0.01 * n_y[y] / (1 + n_y[y])
        rec, pop = np.zeros(N_E), np.zeros(N_E)
        for a, r, b, t in facts.tolist():
            if t < T and a == s:
                rec[b] += (1.0 if r == h else 0.1) * 2 ** (-(T - t) / 10.0)
            if t < T and r == h:
                pop[b] += 2 ** (-(T - t) / 7.0)
        if rec.max() > 0:
            sc += 0.3 * rec / rec.max()
        if pop.max() > 0:
            sc += 0.01 * pop / pop.max()
        others = [x for x in answers[(s, h, T)] if x != o]
        sc[others] = -1.0
        tv = sc[o]
        want = 1 + np.sum(sc > tv + 1e-12) + (np.sum(np.abs(sc - tv) <= 1e-12) - 1) / 2
        assert got[i] == want, (i, q)
        assert got[i] == tkg.rank_average(np.where(np.abs(sc - tv) <= 1e-12, tv, sc), o, np.array(others, np.int64))


def dt_bin(d):
    return 0 if d <= 0 else min(1 + int(math.floor(math.log2(d))), R.N_DT_BINS - 1)


def count_bin(c):
    return min(int(math.ceil(math.log2(c))), R.N_COUNT_BINS - 1)


def groups_python(facts, rules, q):
    """(rule, y) -> (most recent gap, number of the rule's groundings reaching y)."""
    s, h, _, T = q
    out = {}
    for j, (row, L) in enumerate(zip(rules.body.tolist(), rules.length.tolist())):
        if row[0] != h:
            continue
        for y, tl in paths(facts, s, row[1:1 + L], T):
            d, c = out.get((j, y), (10**9, 0))
            out[(j, y)] = (min(d, T - tl), c + 1)
    return out


def test_table_bins():
    for d in list(range(0, 70)) + [511, 512, 1023, 1024, 5000]:
        assert R._dt_bin(d) == dt_bin(d), d
    for c in list(range(1, 40)):
        assert R._count_bin(c) == count_bin(c), c
    # the mid-points lie in their bins
    assert [dt_bin(m) for m in R.DT_BIN_MID] == list(range(R.N_DT_BINS))


def test_rule_tables_against_python():
    """hits3/tot3 count each (query, rule, y) once, in the bins of its most recent gap and of
    the number of the rule's groundings reaching y; a hit when (s, h, y, T) is a fact."""
    facts = random_graph(3)
    H = R.build_history(facts, N_E, 2 * N_R)
    rs = R.mine_rules(facts, H, walks=(2000, 2000, 2000), min_support=1, seed=3)
    rng = np.random.default_rng(3)
    qs = facts[rng.choice(len(facts), 60, replace=False)]
    hits, tot, hits3, tot3 = R.rule_histograms(rs, qs, H, max_hop=10**6, cap=10**5, chunk=17, tables=True)
    known = {tuple(f) for f in facts.tolist()}
    want_h = np.zeros_like(hits3)
    want_t = np.zeros_like(tot3)
    for q in qs.tolist():
        s, h, _, T = q
        for (j, y), (d, c) in groups_python(facts, rs, q).items():
            want_t[j, dt_bin(d), count_bin(c)] += 1
            want_h[j, dt_bin(d), count_bin(c)] += (s, h, y, T) in known
    assert np.array_equal(tot3, want_t) and np.array_equal(hits3, want_h)
    assert tot3.sum() == tot.sum() and hits3.sum() == hits.sum()
    assert (tot3 > 0).sum() > 10  # the draw exercises many cells


def test_learn_tables_shrinks_to_the_curve():
    rs = R.RuleSet(np.array([[0, 0, -1, -1], [1, 1, -1, -1]], np.int32), np.ones(2, np.int8),
                   np.ones(2, np.int64), np.array([0.6, 0.2]), np.array([0.05, 0.0]))
    shape = (2, R.N_DT_BINS, R.N_COUNT_BINS)
    rng = np.random.default_rng(0)
    tot3 = rng.integers(0, 30, shape)
    tot3[1] = 0
    hits3 = rng.binomial(tot3, 0.3)
    t = R.learn_tables(rs, hits3, tot3, shrink=10.0).table
    prior = np.array([0.6, 0.2])[:, None] * np.exp(-np.array([0.05, 0.0])[:, None] * R.DT_BIN_MID)
    assert np.allclose(t, (hits3 + 10.0 * prior[:, :, None]) / (tot3 + 10.0), rtol=0, atol=1e-15)
    assert np.allclose(t[1], 0.2)  # no evidence: the curve
    big = R.learn_tables(rs, hits3 * 1000, tot3 * 1000, shrink=1e-9).table[0]
    seen = tot3[0] > 0
    assert np.allclose(big[seen], (hits3[0] / np.maximum(tot3[0], 1))[seen], atol=1e-9)
    with pytest.raises(ConfigError, match="shrink must be positive, got 0.0"):
        R.learn_tables(rs, hits3, tot3, shrink=0.0)
    with pytest.raises(FitError, match=r"hits3 and tot3 must have shape \(2, .*got \(1, "):
        R.learn_tables(rs, hits3[:1], tot3[:1])


def test_forecast_ranks_with_a_table_against_python():
    """With a table, p_j(y) = table[j, bin(Δ_min), bin(n_jy)], noisy-OR over rules, ties by
    the average rule; the scores of apply_rules agree."""
    facts = random_graph(9, n=220)
    H = R.build_history(facts, N_E, 2 * N_R)
    rel = R.build_relation_index(facts, 2 * N_R)
    rs = R.mine_rules(facts, H, walks=(2000, 2000, 2000), min_support=1, seed=9)
    rng = np.random.default_rng(9)
    table = np.round(rng.uniform(0.0, 0.9, (len(rs), R.N_DT_BINS, R.N_COUNT_BINS)), 2)
    rs = R.RuleSet(rs.body, rs.length, rs.support, np.full(len(rs), 0.5), np.zeros(len(rs)), table)
    qs = facts[rng.choice(len(facts), 40, replace=False)]
    answers, filters = time_aware_filters(qs)
    wl = (1.0, 0.35, 0.15)
    got = R.forecast_ranks(rs, qs, H, rel, filters,
                           length_weights=wl, max_hop=10**6, cap=10**5, chunk=16, w_pop=0.0, w_count=0.0,
                           w_rec=0.0)
    dense = np.concatenate([sc for _, sc in R.apply_rules(rs, qs, H, max_hop=10**6, cap=10**5, chunk=9)])
    for i, q in enumerate(qs.tolist()):
        s, h, o, T = q
        per_y, plain = {}, {}
        for (j, y), (d, c) in groups_python(facts, rs, q).items():
            p = table[j, dt_bin(d), count_bin(c)]
            per_y.setdefault(y, []).append(wl[rs.length[j] - 1] * p)
            plain.setdefault(y, []).append(p)
        sc = np.zeros(N_E)
        for y, ps in per_y.items():
            sc[y] = 1 - np.prod([1 - p for p in ps])
            assert dense[i, y] == pytest.approx(1 - np.prod([1 - p for p in plain[y]]), abs=1e-12)
        assert np.count_nonzero(dense[i]) == sum(1 for ps in plain.values() if 1 - np.prod([1 - p for p in ps]) > 0)
        others = [x for x in answers[(s, h, T)] if x != o]
        sc[others] = -1.0
        tv = sc[o]
        want = 1 + np.sum(sc > tv + 1e-12) + (np.sum(np.abs(sc - tv) <= 1e-12) - 1) / 2
        assert got[i] == want, (i, q)


def recurrence_python(facts, q):
    """y -> (T − last, count) over earlier (s, h, y) facts of query q."""
    s, h, _, T = q
    out = {}
    for a, r, b, t in facts.tolist():
        if a == s and r == h and t < T:
            d, c = out.get(b, (10**9, 0))
            out[b] = (min(d, T - t), c + 1)
    return out


def test_recurrence_table_against_python():
    facts = random_graph(4, n=400, days=30)
    H = R.build_history(facts, N_E, 2 * N_R)
    rng = np.random.default_rng(4)
    qs = facts[rng.choice(len(facts), 150, replace=False)]
    hits, tot = R.recurrence_histograms(qs, H)
    known = {tuple(f) for f in facts.tolist()}
    want_h, want_t = np.zeros_like(hits), np.zeros_like(tot)
    for q in qs.tolist():
        s, h, _, T = q
        for y, (d, c) in recurrence_python(facts, q).items():
            want_t[h, dt_bin(d), count_bin(c)] += 1
            want_h[h, dt_bin(d), count_bin(c)] += (s, h, y, T) in known
    assert np.array_equal(tot, want_t) and np.array_equal(hits, want_h)
    assert hits.sum() > 0 and (tot > 0).sum() > 10
    tab = R.learn_recurrence(qs, H, shrink=7.0)
    pooled = (hits.sum(0) + 1.0) / (tot.sum(0) + 2.0)
    assert np.allclose(tab, (hits + 7.0 * pooled[None]) / (tot + 7.0), rtol=0, atol=1e-15)
    with pytest.raises(ConfigError, match="shrink must be positive, got -1.0"):
        R.learn_recurrence(qs, H, shrink=-1.0)


def test_forecast_ranks_with_recurrence_against_python():
    """The recurrence term adds w · rtab[h, bin(T − last), bin(count)] for every y with
    earlier (s, h, y) facts, over the whole history (no hop cap)."""
    facts = random_graph(10, n=300, days=30)
    H = R.build_history(facts, N_E, 2 * N_R)
    rel = R.build_relation_index(facts, 2 * N_R)
    rs = R.mine_rules(facts, H, walks=(1000, 1000, 0), min_support=1, seed=10)
    rng = np.random.default_rng(10)
    rs = R.RuleSet(rs.body, rs.length, rs.support, rng.uniform(0.05, 0.9, len(rs)), rng.uniform(0, 0.2, len(rs)))
    rtab = np.round(rng.uniform(0, 1, (2 * N_R, R.N_DT_BINS, R.N_COUNT_BINS)), 2)
    qs = facts[rng.choice(len(facts), 40, replace=False)]
    answers, filters = time_aware_filters(qs)
    got = R.forecast_ranks(rs, qs, H, rel, filters, max_hop=2, cap=10**5, chunk=16, w_pop=0.0, w_count=0.0,
                           w_rec=0.0, recurrence=rtab, w_recurrence=0.7)
    base = R.forecast_ranks(rs, qs, H, rel, filters, max_hop=2, cap=10**5, chunk=16, w_pop=0.0, w_count=0.0,
                            w_rec=0.0)
    assert not np.array_equal(got, base)
    idx = R._index(rs, H.n_relations)
    out = R._ground_chunk(qs, H, idx, 2, 10**5)
    for i, q in enumerate(qs.tolist()):
        s, h, o, T = q
        sc = np.zeros(N_E)
        R._rule_scores(out[0][i], out[1][i], out[2][i], out[3][i], rs.conf, rs.beta, rs.length.astype(np.int64),
                       np.r_[0.0, 1.0, 0.5, 0.25], False, 0.0, sc, R._table_arg(rs))
        for y, (d, c) in recurrence_python(facts, q).items():
            sc[y] += 0.7 * rtab[h, dt_bin(d), count_bin(c)]
        others = [x for x in answers[(s, h, T)] if x != o]
        sc[others] = -1.0
        tv = sc[o]
        want = 1 + np.sum(sc > tv + 1e-12) + (np.sum(np.abs(sc - tv) <= 1e-12) - 1) / 2
        assert got[i] == want, (i, q)
    with pytest.raises(ConfigError, match="w_recurrence=0.5 needs a recurrence table .*learn_recurrence"):
        R.forecast_ranks(rs, qs, H, rel, filters, w_recurrence=0.5)
    with pytest.raises(ConfigError, match="recurrence must have shape .* got \\(2, "):
        R.forecast_ranks(rs, qs, H, rel, filters, recurrence=rtab[:2], w_recurrence=0.5)


def test_evaluate_rules_small_dataset(tmp_path):
    """A graph where one relation predicts another a day later: the rule is mined, learned
    with a high confidence, and ranks the answer first."""
    from chrono_engine import tkg
    lines = {"train.txt": [], "valid.txt": [], "test.txt": []}
    ents = [f"E{i}" for i in range(8)]
    day = 0
    for rep in range(30):
        for i in range(4):
            a, b = ents[i], ents[4 + (i + rep) % 4]
            split = "train" if rep < 24 else "valid" if rep < 27 else "test"
            d0 = f"2014-{1 + day // 28:02d}-{1 + day % 28:02d}"
            d1 = f"2014-{1 + (day + 1) // 28:02d}-{1 + (day + 1) % 28:02d}"
            lines[f"{split}.txt"] += [f"{a}\tmeet\t{b}\t{d0}", f"{a}\tsign\t{b}\t{d1}"]
        day += 2
    root = tmp_path / "d"
    root.mkdir()
    for k, v in lines.items():
        (root / k).write_text("\n".join(v) + "\n")
    d = tkg.load(root)
    res = tkg.evaluate_rules(d, "test", walks=(2000, 2000, 0), return_rules=True)
    rules = res["rule_set"]
    sign, meet = d.relations.index("sign"), d.relations.index("meet")
    j = [k for k, row in enumerate(rules.body.tolist()) if row[:2] == [sign, meet] and rules.length[k] == 1]
    assert j and rules.conf[j[0]] > 0.5
    assert res["queries"] == 2 * len(lines["test.txt"]) and res["hits@1"] >= 0.5
    assert res["rules_by_length"][0] >= 1 and set(res["timings"]) == {"load", "mine", "learn", "apply"}


def test_learn_rules_variants_and_ou():
    """none: β = 0; global: one β; per_rule: each its own; ou: β_j = 2κ_j from fit_ou on the
    rule's hit rate over query time (rules without enough days keep the global β)."""
    import chrono_engine as ce
    rng = np.random.default_rng(1)
    D = 80
    body = np.array([[0, 0, -1, -1], [0, 1, -1, -1], [1, 0, -1, -1]], np.int32)
    rules = R.RuleSet(body, np.ones(3, np.int8), np.ones(3, np.int64), np.zeros(3), np.zeros(3))
    tot = rng.integers(5, 50, (3, D))
    hits = np.stack([rng.binomial(tot[j], c * np.exp(-b * np.arange(D)))
                     for j, (c, b) in enumerate([(0.8, 0.1), (0.3, 0.0), (0.5, 0.02)])])
    none = R.learn_rules(rules, hits, tot, decay="none")
    glob = R.learn_rules(rules, hits, tot, decay="global")
    per = R.learn_rules(rules, hits, tot, decay="per_rule")
    assert (none.beta == 0).all() and len(set(glob.beta.tolist())) == 1
    assert per.beta[0] > per.beta[2] > per.beta[1] - 1e-12
    # OU: rule 0 gets a daily rate following an OU path, rule 1 too few days, rule 2 constant
    t_tot = np.zeros((3, 400), np.int64)
    t_hits = np.zeros((3, 400), np.int64)
    days = np.arange(0, 400)
    x = np.empty(400)
    x[0] = 0.5
    for i in range(1, 400):
        a = math.exp(-0.2)
        x[i] = 0.5 + (x[i - 1] - 0.5) * a + 0.1 * math.sqrt((1 - a * a) / 0.4) * rng.standard_normal()
    t_tot[0] = 1000
    t_hits[0] = np.clip(np.round(x * 1000), 0, 1000).astype(np.int64)
    t_tot[1, :5] = 10
    t_hits[1, :5] = 3
    t_tot[2] = 10
    t_hits[2] = 4
    ou = R.learn_rules(rules, hits, tot, decay="ou", by_time=(t_hits, t_tot))
    kappa = ce.fit_ou(days.astype(float), t_hits[0] / t_tot[0]).kappa
    assert ou.beta[0] == pytest.approx(2 * kappa) and abs(kappa / 0.2 - 1) < 0.3
    assert ou.beta[1] == glob.beta[1] and ou.beta[2] == glob.beta[2]
    with pytest.raises(ConfigError, match="decay='ou' needs by_time"):
        R.learn_rules(rules, hits, tot, decay="ou")
    with pytest.raises(ConfigError, match="decay must be .* got 'linear'"):
        R.learn_rules(rules, hits, tot, decay="linear")


def test_cli_tkg_eval_models(tmp_path, capsys):
    from chrono_engine import cli
    from test_tkg_data import NAMES, write
    d = write(tmp_path / "d", NAMES)
    assert cli.main(["tkg", "eval", "--data", str(d), "--model", "recurrency"]) == 0
    assert "recurrency baseline" in capsys.readouterr().out
    assert cli.main(["tkg", "eval", "--data", str(d), "--decay", "global", "--split", "valid"]) == 0
    assert "decay global" in capsys.readouterr().out
    assert cli.main(["tkg", "eval", "--data", str(d), "--confidence", "curve"]) == 0
    assert "confidence curve" in capsys.readouterr().out
    from chrono_engine import tkg
    with pytest.raises(ConfigError, match="confidence must be 'table' or 'curve', got 'spline'"):
        tkg.evaluate_rules(tkg.load(d), "test", walks=(100, 0, 0), confidence="spline")
