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
