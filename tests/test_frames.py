"""pandas and polars in and out wherever Arrow is accepted: ingest, supersede and
ground_rows take either DataFrame (and dicts of their Series) with the same result as the
Arrow table; ce.score answers a DataFrame of the kind it was given; search hits convert."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine.errors import QueryError, SchemaError

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

DIM = 8


def _rows(n=40, seed=0):
    rng = np.random.default_rng(seed)
    vec = rng.standard_normal((n, DIM)).astype(np.float32)
    start = np.datetime64("2020-01-01", "us") + rng.integers(0, 1500, n).astype("timedelta64[D]")
    end = start + rng.integers(30, 900, n).astype("timedelta64[D]")
    return {"vector": vec, "valid_from": start, "valid_to": end, "stem_id": [f"s{i % 13}" for i in range(n)],
            "fact_type": ["news" if i % 2 else "policy" for i in range(n)], "reliability": rng.uniform(0.5, 1, n),
            "content": [f"text {i}" for i in range(n)]}


def _arrow(d):
    return pa.table({**d, "vector": pa.FixedSizeListArray.from_arrays(pa.array(d["vector"].ravel()), DIM)})


def _polars(d, vector_dtype):
    cols = {k: v for k, v in d.items() if k != "vector"}
    df = pl.DataFrame(cols)
    return df.with_columns(pl.Series("vector", d["vector"].tolist(), dtype=vector_dtype))


def _answers(eng, q):
    hits = eng.search_batch(q, 5, mode="as_of", as_of="2022-06-01")
    return hits.column("id").to_pylist(), hits.column("score").to_pylist()


@pytest.mark.parametrize("kind", ["pandas", "polars-array", "polars-list", "polars-series-dict"])
def test_ingest_from_frames_equals_arrow(kind):
    d = _rows()
    q = np.random.default_rng(9).standard_normal((6, DIM)).astype(np.float32)
    ref = ce.Engine(DIM, threads=1)
    ref.ingest(_arrow(d))
    if kind == "pandas":
        rows = pd.DataFrame({**{k: v for k, v in d.items() if k != "vector"}, "vector": list(d["vector"])})
    elif kind == "polars-array":
        rows = _polars(d, pl.Array(pl.Float32, DIM))
    elif kind == "polars-list":
        rows = _polars(d, pl.List(pl.Float64))
    else:
        df = _polars(d, pl.Array(pl.Float32, DIM))
        rows = {name: df[name] for name in df.columns}
    eng = ce.Engine(DIM, threads=1)
    eng.ingest(rows)
    assert _answers(eng, q) == _answers(ref, q)
    for name in ("valid_from", "valid_to", "reliability"):
        np.testing.assert_array_equal(np.asarray(eng.columns()[name]), np.asarray(ref.columns()[name]))


def test_lazy_and_unconvertible_polars_frames_are_refused():
    d = _rows(5)
    eng = ce.Engine(DIM, threads=1)
    with pytest.raises(SchemaError, match="LazyFrame: collect"):
        eng.ingest(_polars(d, pl.Array(pl.Float32, DIM)).lazy())
    bad = _polars(d, pl.Array(pl.Float32, DIM)).with_columns(pl.Series("content", [object()] * 5, dtype=pl.Object))
    with pytest.raises(SchemaError, match="column 'content', row 0: expected strings"):
        eng.ingest(bad)
    assert len(eng) == 0


def test_supersede_and_ground_rows_take_polars():
    d = _rows(6)
    eng = ce.Engine(DIM, threads=1)
    eng.ingest(_polars(d, pl.Array(pl.Float32, DIM)))
    new = pl.DataFrame({"content": ["revised"]}).with_columns(
        pl.Series("vector", [np.ones(DIM, np.float32).tolist()], dtype=pl.Array(pl.Float32, DIM)))
    eng.supersede("s0", new, effective_at="2024-01-01", version="2")
    assert eng.history("s0").column("content").to_pylist()[-1] == "revised"
    text = pl.DataFrame({"content": ["Ada led the team from 2004 to 2008.", "No date here."], "title": ["a", "b"]})
    got = ce.ground_rows(text)
    ref = ce.ground_rows(text.to_arrow())
    assert got.keys() == ref.keys()
    for name in got:
        assert pa.array(got[name]).to_pylist() == pa.array(ref[name]).to_pylist()


def _candidates(n=200, seed=1):
    rng = np.random.default_rng(seed)
    return {"similarity": rng.uniform(-0.2, 1, n).astype(np.float32),
            "observed_at": np.datetime64("2023-01-01", "us") + rng.integers(0, 900, n).astype("timedelta64[D]"),
            "fact_type": ["news" if i % 3 else "policy" for i in range(n)], "reliability": rng.uniform(0.3, 1, n)}


def test_score_answers_in_the_kind_given():
    c = _candidates()
    pol = ce.ScoringPolicy(decay=ce.DecayPolicy({"news": ce.Exponential(half_life=30)}, default=ce.Gaussian(half_life=400)))
    ref = ce.score(pa.table(c), as_of="2025-06-01", policy=pol)
    out_pd = ce.score(pd.DataFrame(c), as_of="2025-06-01", policy=pol)
    assert isinstance(out_pd, pd.DataFrame)
    np.testing.assert_array_equal(out_pd["score"].to_numpy(), ref.column("score").to_numpy())
    out_pl = ce.score(pl.DataFrame(c), as_of="2025-06-01", policy=pol)
    assert isinstance(out_pl, pl.DataFrame)
    np.testing.assert_array_equal(out_pl["score"].to_numpy(), ref.column("score").to_numpy())
    np.testing.assert_array_equal(out_pl["validity"].to_numpy(), ref.column("validity").to_numpy())
    out_dict = ce.score({k: pl.Series(k, v) for k, v in c.items()}, as_of="2025-06-01", policy=pol)
    assert isinstance(out_dict, pa.Table)
    np.testing.assert_array_equal(out_dict.column("score").to_numpy(), ref.column("score").to_numpy())
    with pytest.raises(QueryError, match="pandas or polars DataFrame"):
        ce.score([1, 2, 3], as_of="2025-06-01")


def test_hits_convert_to_frames():
    eng = ce.Engine(DIM, threads=1)
    d = _rows()
    eng.ingest(_arrow(d))
    hits = eng.search(d["vector"][0], 5, mode="as_of", as_of="2022-06-01")
    assert pl.from_arrow(hits)["id"].to_list() == hits.column("id").to_pylist()
    assert hits.to_pandas()["id"].tolist() == hits.column("id").to_pylist()
