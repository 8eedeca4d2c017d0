"""engine.search(..., verify=γ): layer-3 gate over the retrieved context."""
import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine.errors import QueryError
from chrono_engine.synthetic import times_for_selectivity


@pytest.mark.parametrize("gamma", [0.0, 0.3, 0.6, 1.0])
def test_gate_matches_numpy(small_engine, small_corpus, gamma):
    q = small_corpus.queries(12, seed=31)
    t = times_for_selectivity(small_corpus, 0.2, 12)
    res = small_engine.search_batch(q, 8, mode="as_of", as_of=t, verify=gamma)
    qs = res.column("query").to_numpy()
    v = res.column("validity").to_numpy().astype(np.float64)
    rho = res.column("robustness").to_numpy()
    for i in range(12):
        sel = qs == i
        expect = (v[sel].min() - gamma) if sel.any() else 0.0
        np.testing.assert_allclose(rho[sel], expect, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(res.column("satisfied").to_numpy(zero_copy_only=False), rho >= 0)
    np.testing.assert_array_equal(res.column("refetch").to_numpy(zero_copy_only=False), v < gamma)


def test_single_search_gate_and_bad_gamma(small_engine, small_corpus):
    q = small_corpus.queries(1, seed=32)[0]
    t = int(times_for_selectivity(small_corpus, 0.2, 1)[0])
    res = small_engine.search(q, 5, mode="as_of", as_of=t, verify=0.5)
    assert "query" not in res.column_names and {"robustness", "satisfied", "refetch"} <= set(res.column_names)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(QueryError):
            small_engine.search(q, 5, mode="as_of", as_of=t, verify=bad)


def test_engine_validity_matches_numpy(small_engine, small_corpus):
    """engine.validity(T) = reliability x the policy's decay at the age (NumPy reference)."""
    t = int(times_for_selectivity(small_corpus, 0.2, 1)[0])
    cols = small_engine.columns()
    age = (t - cols["observed_at"].astype(np.float64)) / 86_400_000_000.0
    names = np.asarray(small_engine.fact_types, dtype=object)[cols["fact_type"]]
    want = cols["reliability"].astype(np.float64) * small_engine.decay.evaluate(age, names)
    np.testing.assert_allclose(small_engine.validity(t), want, rtol=1e-12, atol=1e-15)
    ids = cols["id"][[5, 0, 17]]
    np.testing.assert_array_equal(small_engine.validity(t, ids), small_engine.validity(t)[[5, 0, 17]])


def test_verify_chains_against_engine_and_time(small_corpus):
    """verify_chains(chains, (engine, T), γ) over engine ids equals the array form."""
    from conftest import policy_for
    data = {k: v[:600] for k, v in small_corpus.to_dict().items()}
    data["id"] = 10_000 + 7 * np.arange(600)[::-1]  # ids unrelated to rows
    small_engine = ce.Engine(small_corpus.vector.shape[1], decay=policy_for(small_corpus))
    small_engine.ingest(data)
    t = int(times_for_selectivity(small_corpus, 0.2, 1)[0])
    ids = small_engine.columns()["id"].astype(np.int64)
    assert ids[0] != 0
    rng = np.random.default_rng(8)
    rows = [[list(rng.integers(0, len(ids), rng.integers(0, 4))) for _ in range(rng.integers(0, 6))]
            for _ in range(60)]
    chains_ids = [[[int(ids[r]) for r in step] for step in chain] for chain in rows]
    got = ce.verify_chains(chains_ids, (small_engine, t), 0.4)
    v = small_engine.validity(t)
    want = ce.verify_chains(rows, v, 0.4)
    for name in ("robustness", "satisfied", "bound", "weakest_step", "trigger", "step_validity"):
        assert got.column(name).equals(want.column(name)), name
    wf = want.column("weakest_fact").to_pylist()
    assert got.column("weakest_fact").to_pylist() == [None if f is None else int(ids[f]) for f in wf]
    tg = want.column("targets").to_pylist()
    assert got.column("targets").to_pylist() == [[int(ids[f]) for f in row] for row in tg]
    unknown = int(ids.max()) + 1000
    with pytest.raises(QueryError, match=r"chain 1, step 0: fact id %d is not in the engine" % unknown):
        ce.verify_chains([[[int(ids[0])]], [[unknown]]], (small_engine, t), 0.4)


@pytest.mark.parametrize("chains", [[[]], [[[]]], [[[], []], []]], ids=["no-steps", "empty-step", "mixed"])
def test_verify_chains_without_facts_against_an_engine(small_corpus, chains):
    """Chains that name no fact at all (a service body of ``{"chains": [[]]}``) answer as
    the array form does, with no weakest fact, instead of an IndexError (a 500)."""
    eng = ce.Engine(small_corpus.vector.shape[1])
    eng.ingest({k: v[:20] for k, v in small_corpus.to_dict().items()})
    got = ce.verify_chains(chains, (eng, "2025-01-01"), 0.5)
    want = ce.verify_chains(chains, np.zeros(0), 0.5)
    assert got.equals(want)
    assert got.column("weakest_fact").null_count == len(chains)
