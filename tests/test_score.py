"""ce.score: the C++ rescoring kernel against an independent NumPy
formula, Arrow in / Arrow out, and its input checks.

The reference below is written from the scoring definition (docs/scoring.md), not from
chrono_engine.decay: V = q · D_j(age), age = (T − t_e) in days clamped at 0 (or |T − t_e|
for symmetric profiles); product fusion s⁺·V, linear α·s + (1 − α)·V; rows not valid at T
(valid_from ≤ T < valid_to) or flagged deprecated are multiplied by the penalty, dropped
(score −inf) or kept as they are; rows with V < τ get −inf.
"""
from __future__ import annotations

import doctest
import math

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
import chrono_engine.scoring as scoring_module
from chrono_engine.errors import ChronoError, QueryError

US_PER_DAY = 86_400_000_000
TS = pa.timestamp("us", tz="UTC")
T_QUERY = 1_700_000_000_000_000  # 2023-11-14T22:13:20Z
UNIT = {"days": 1.0, "hours": 24.0, "seconds": 86_400.0}


# ----------------------------------------------------------------------------- reference

# fact type -> (decay object handed to the engine, independent NumPy formula of D(age_days))
def _clamp(age, unit, symmetric):
    return (np.abs(age) if symmetric else np.maximum(age, 0.0)) * UNIT[unit]


PROFILES = {
    "news": (ce.Exponential(half_life=7.0),
             lambda x: np.exp(-(math.log(2) / 7.0) * _clamp(x, "days", False))),
    "policy": (ce.HalfLife(365.0), lambda x: 0.5 ** (_clamp(x, "days", False) / 365.0)),
    "event": (ce.Gaussian(sigma=20.0, offset=3.0, symmetric=True),
              lambda x: np.exp(-np.maximum(0.0, _clamp(x, "days", True) - 3.0) ** 2 / (2 * 20.0 ** 2))),
    "price": (ce.Linear(rate=0.5, offset=1.0, unit="hours"),
              lambda x: np.maximum(0.0, 1.0 - 0.5 * np.maximum(0.0, _clamp(x, "hours", False) - 1.0))),
    "paper": (ce.PowerLaw(0.8), lambda x: (1.0 + _clamp(x, "days", False)) ** -0.8),
    "device": (ce.Weibull(shape=1.7, scale=120.0),
               lambda x: np.exp(-(_clamp(x, "days", False) / 120.0) ** 1.7)),
    "constant": (ce.NoDecay(), lambda x: np.ones_like(x)),
}
DEFAULT_FORMULA = lambda x: np.exp(-(math.log(2) / 30.0) * _clamp(x, "days", False))  # noqa: E731
POLICY = ce.DecayPolicy({k: v[0] for k, v in PROFILES.items()}, default=ce.Exponential(half_life=30.0))


def reference(cols: dict, t: int, *, fusion="product", alpha=0.75, tau=0.0, deprecated="penalize",
              penalty=0.1, future="exclude"):
    """(validity, score) in float64; score −inf for dropped rows."""
    sim = np.asarray(cols["similarity"], np.float32).astype(np.float64)
    obs = cols.get("observed_at", cols.get("valid_from"))
    age = (float(t) - np.asarray(obs, np.int64).astype(np.float64)) / US_PER_DAY
    types = cols.get("fact_type")
    if types is None:
        D = DEFAULT_FORMULA(age)
    else:
        D = np.empty(len(age))
        for name in set(types):
            m = np.asarray(types) == name
            D[m] = (PROFILES[name][1] if name in PROFILES else DEFAULT_FORMULA)(age[m])
    q = np.asarray(cols["reliability"], np.float32).astype(np.float64) if "reliability" in cols else 1.0
    V = q * D
    f = np.clip(sim, 0.0, 1.0) * V if fusion == "product" else alpha * sim + (1 - alpha) * V
    ok = np.ones(len(sim), bool)
    not_yet = np.zeros(len(sim), bool)
    if "valid_from" in cols and "valid_to" in cols:
        vf = np.asarray(cols["valid_from"], np.int64)
        vt = np.asarray(cols["valid_to"], np.int64)
        ok &= (vf <= t) & (t < vt)
        not_yet = vf > t
    if "deprecated" in cols:
        ok &= ~np.asarray(cols["deprecated"], bool)
    policy = {"penalize": penalty, "exclude": 0.0, "include": 1.0}
    pen = np.where(ok, 1.0, np.where(not_yet, policy[future], policy[deprecated]))
    score = np.where(pen == 0.0, -np.inf, f * pen)
    score = np.where(V < tau, -np.inf, score)
    return V, score


def random_candidates(n: int, seed: int, *, full: bool = True) -> tuple[dict, pa.Table]:
    """Random candidates; returns the raw NumPy columns and the Arrow table."""
    rng = np.random.default_rng(seed)
    sim = rng.uniform(-0.3, 1.2, n).astype(np.float32)           # outside [0, 1] on purpose
    sim[:3] = [0.0, 1.0, -0.0]
    obs = T_QUERY - rng.integers(-30 * US_PER_DAY, 3 * 365 * US_PER_DAY, n)
    obs[:4] = [T_QUERY, T_QUERY + 1, T_QUERY - 1, T_QUERY - 10 * 365 * US_PER_DAY]  # edges
    cols = {"similarity": sim, "observed_at": obs}
    if full:
        rel = rng.uniform(0.0, 1.0, n).astype(np.float32)
        rel = np.where(rel == 0, 1.0, rel).astype(np.float32)
        rel[:2] = [1.0, np.float32(1e-6)]
        names = list(PROFILES) + ["unprofiled"]
        types = np.asarray(names, dtype=object)[rng.integers(0, len(names), n)]
        vf = obs - rng.integers(0, 100 * US_PER_DAY, n)
        vt = np.where(rng.random(n) < 0.4, np.iinfo(np.int64).max,
                      T_QUERY + rng.integers(-200 * US_PER_DAY, 200 * US_PER_DAY, n))
        vt = np.maximum(vt, vf + 1)
        vt[:2] = [T_QUERY, T_QUERY + 1]                          # half-open edge at T
        dep = rng.random(n) < 0.15
        cols.update(reliability=rel, fact_type=types, valid_from=vf, valid_to=vt, deprecated=dep)
    table = {
        "doc_id": pa.array(np.arange(n, dtype=np.int64)),
        "similarity": pa.array(cols["similarity"], pa.float32()),
        "observed_at": pa.array(cols["observed_at"], TS),
    }
    if full:
        open_ = cols["valid_to"] == np.iinfo(np.int64).max
        table.update(
            reliability=pa.array(cols["reliability"], pa.float32()),
            fact_type=pa.array(list(cols["fact_type"]), pa.string()),
            valid_from=pa.array(cols["valid_from"], TS),
            valid_to=pa.array(np.where(open_, 0, cols["valid_to"]), TS, mask=open_),
            deprecated=pa.array(cols["deprecated"], pa.bool_()),
        )
    return cols, pa.table(table)


def assert_scored(out: pa.Table, validity: np.ndarray, score: np.ndarray, *, tau: float | None = None,
                  atol: float = 1e-6) -> None:
    got_v = out.column("validity").to_numpy().astype(np.float64)
    got_s = out.column("score").to_numpy().astype(np.float64)
    np.testing.assert_allclose(got_v, validity, rtol=0, atol=atol)
    keep = np.ones(len(score), bool)
    if tau is not None:  # rows whose validity sits on τ within rounding may go either way
        keep = np.abs(validity - tau) > 1e-9
    assert np.array_equal(np.isneginf(got_s)[keep], np.isneginf(score)[keep])
    fin = keep & np.isfinite(score)
    np.testing.assert_allclose(got_s[fin], score[fin], rtol=0, atol=atol)
    assert not np.isnan(got_s).any()


# ----------------------------------------------------------------------------- formula checks

@pytest.mark.parametrize("fusion", ["product", "linear"])
@pytest.mark.parametrize("deprecated", ["penalize", "exclude", "include"])
@pytest.mark.parametrize("future", ["exclude", "penalize", "include"])
@pytest.mark.parametrize("tau", [0.0, 0.35])
def test_score_matches_numpy_formula(fusion, deprecated, future, tau):
    cols, table = random_candidates(4000, seed=11)
    assert (cols["valid_from"] > T_QUERY).any()  # rows not yet valid are among them
    policy = ce.ScoringPolicy(decay=POLICY, fusion=fusion, alpha=0.6, tau=tau, deprecated=deprecated,
                              penalty=0.25, future=future)
    out = ce.score(table, as_of=T_QUERY, policy=policy)
    v, s = reference(cols, T_QUERY, fusion=fusion, alpha=0.6, tau=tau, deprecated=deprecated, penalty=0.25,
                     future=future)
    assert_scored(out, v, s, tau=tau)
    if tau:
        assert np.isneginf(out.column("score").to_numpy()[v < tau - 1e-9]).all()


@pytest.mark.parametrize("future", ["exclude", "penalize", "include"])
@pytest.mark.parametrize("deprecated", ["penalize", "exclude"])
def test_score_future_policy_on_the_exponential_fast_path(future, deprecated):
    """Exponential-only policies take the kernel's fast path: the same definition holds."""
    exp_only = ce.DecayPolicy({"news": ce.Exponential(half_life=7.0), "policy": ce.Exponential(half_life=365.0)},
                              default=ce.Exponential(half_life=30.0))
    cols, table = random_candidates(3000, seed=12)
    keep = np.isin(cols["fact_type"], ["news", "policy"])
    cols = {k: np.asarray(v)[keep] for k, v in cols.items()}
    table = table.filter(pa.array(keep))
    out = ce.score(table, as_of=T_QUERY, policy=ce.ScoringPolicy(decay=exp_only, deprecated=deprecated,
                                                                 future=future, penalty=0.3))
    half = {"news": 7.0, "policy": 365.0}
    age = (T_QUERY - cols["observed_at"].astype(np.float64)) / US_PER_DAY
    D = np.exp(-np.log(2) / np.array([half[t] for t in cols["fact_type"]]) * np.maximum(age, 0))
    V = cols["reliability"].astype(np.float64) * D
    f = np.clip(cols["similarity"].astype(np.float64), 0, 1) * V
    ok = (cols["valid_from"] <= T_QUERY) & (T_QUERY < cols["valid_to"]) & ~cols["deprecated"]
    pol = {"penalize": 0.3, "exclude": 0.0, "include": 1.0}
    pen = np.where(ok, 1.0, np.where(cols["valid_from"] > T_QUERY, pol[future], pol[deprecated]))
    assert_scored(out, V, np.where(pen == 0, -np.inf, f * pen))


@pytest.mark.parametrize("seed", range(4))
def test_score_random_policies(seed):
    """Random α, τ, penalty and query time, every family present."""
    rng = np.random.default_rng(100 + seed)
    cols, table = random_candidates(3000, seed=200 + seed)
    fusion = ["product", "linear"][seed % 2]
    alpha, tau, pen = float(rng.uniform(0, 1)), float(rng.uniform(0, 0.5)), float(rng.uniform(0, 1))
    t = T_QUERY + int(rng.integers(-50, 50)) * US_PER_DAY
    policy = ce.ScoringPolicy(decay=POLICY, fusion=fusion, alpha=alpha, tau=tau, penalty=pen)
    out = ce.score(table, as_of=t, policy=policy)
    v, s = reference(cols, t, fusion=fusion, alpha=alpha, tau=tau, penalty=pen)
    assert_scored(out, v, s, tau=tau)


@pytest.mark.parametrize("fusion", ["product", "linear"])
def test_score_minimal_columns_default_profile(fusion):
    """Only similarity and observed_at: the default profile, q = 1, nothing penalised."""
    cols, table = random_candidates(2000, seed=5, full=False)
    out = ce.score(table, as_of=T_QUERY, policy=ce.ScoringPolicy(decay=POLICY, fusion=fusion))
    v, s = reference(cols, T_QUERY, fusion=fusion)
    assert_scored(out, v, s)


def test_score_default_policy_is_no_decay_product():
    cols, table = random_candidates(500, seed=6, full=False)
    out = ce.score(table, as_of=T_QUERY)
    np.testing.assert_allclose(out.column("validity").to_numpy(), 1.0, atol=0)
    np.testing.assert_allclose(out.column("score").to_numpy(), np.clip(cols["similarity"], 0, 1), atol=1e-7)


def test_score_valid_from_stands_in_for_observed_at():
    cols, table = random_candidates(1000, seed=7)
    table = table.drop_columns(["observed_at"])
    ref_cols = dict(cols)
    del ref_cols["observed_at"]
    out = ce.score(table, as_of=T_QUERY, policy=ce.ScoringPolicy(decay=POLICY))
    v, s = reference(ref_cols, T_QUERY)
    assert_scored(out, v, s)


def test_score_single_family_each():
    """One fact type at a time, so a mix-up between types cannot hide an error."""
    rng = np.random.default_rng(8)
    n = 1500
    age_days = np.concatenate([rng.uniform(-5, 2000, n - 6), [0, 1e-6, 1, 7, 365, 1e5]])
    obs = (T_QUERY - age_days * US_PER_DAY).astype(np.int64)
    sim = rng.uniform(0, 1, n).astype(np.float32)
    for name, (decay, formula) in PROFILES.items():
        cols = {"similarity": sim, "observed_at": obs, "fact_type": np.full(n, name, dtype=object)}
        table = pa.table({"similarity": sim, "observed_at": pa.array(obs, TS),
                          "fact_type": pa.array([name] * n)})
        out = ce.score(table, as_of=T_QUERY, policy=ce.ScoringPolicy(decay=ce.DecayPolicy({name: decay}, default=None)))
        v, s = reference(cols, T_QUERY)
        assert_scored(out, v, s)


@pytest.mark.parametrize("decay", [ce.Exponential(half_life=30), ce.Gaussian(sigma=30)])
@pytest.mark.parametrize("bad", [0.0, 1.5, float("nan"), -0.2])
def test_bad_reliability_named_on_both_kernel_paths(decay, bad):
    """Reliability is checked inside the kernel's pass (exponential fast path and the
    general path alike): the error names the first offending row."""
    n = 70_000  # more than one kernel chunk
    rel = np.full(n, 0.9, np.float32)
    rel[[66_000, 69_000]] = bad
    cands = {"similarity": np.full(n, 0.5, np.float32), "observed_at": np.zeros(n, np.int64),
             "reliability": rel}
    with pytest.raises(QueryError, match=r"column 'reliability', row 66000: must be in \(0, 1\]"):
        ce.score(cands, as_of=10**12, policy=ce.ScoringPolicy(decay=decay))


def test_core_score_names_type_codes_out_of_range():
    from chrono_engine import _core
    n = 70_000
    codes = np.zeros(n, np.int32)
    codes[65_537] = 3
    specs = np.array([[1.0, 0.1, 0.0, 1.0, 0.0], [1.0, 0.2, 0.0, 1.0, 0.0]])  # two exponential types
    with pytest.raises(ValueError, match="row 65537"):
        _core.score(np.zeros(n, np.float32), np.zeros(n, np.int64), None, codes, None, None, None, specs,
                    0, 0, 0.75, 0.1, 0, 0.0, 1)


def test_core_score_writes_into_the_callers_arrays_and_checks_them():
    from chrono_engine import _core
    n = 5_000
    rng = np.random.default_rng(4)
    sim = rng.uniform(-0.2, 1.0, n).astype(np.float32)
    obs = -rng.integers(0, 400 * US_PER_DAY, n)
    specs = np.array([[1.0, math.log(2) / 30.0, 0.0, 1.0, 0.0]])  # exponential, 30-day half-life
    args = (sim, obs, None, None, None, None, None, specs, 0, 0, 0.75, 0.1, 0, 0.0, 1)
    ref_s, ref_v = _core.score(*args)  # fresh arrays
    o_s, o_v = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    got_s, got_v = _core.score(*args, o_s, o_v)
    assert got_s is o_s and got_v is o_v
    np.testing.assert_array_equal(o_s, ref_s)
    np.testing.assert_array_equal(o_v, ref_v)
    want_v = np.exp(-(math.log(2) / 30.0) * (-obs / US_PER_DAY))
    np.testing.assert_allclose(o_v, want_v, rtol=1e-6)
    ro = np.zeros(n, np.float32)
    ro.flags.writeable = False
    for bad, what in [(np.zeros(n, np.float64), "C-contiguous array of the output type"),
                      (np.zeros(2 * n, np.float32)[::2], "C-contiguous array of the output type"),
                      (np.zeros(n + 1, np.float32), f"writable 1-d array of {n} values"),
                      (np.zeros((n, 1), np.float32), f"writable 1-d array of {n} values"),
                      (ro, f"writable 1-d array of {n} values")]:
        with pytest.raises(ValueError, match="out_validity: expected a " + what):
            _core.score(*args, np.zeros(n, np.float32), bad)
        with pytest.raises(ValueError, match="out_score: expected a " + what):
            _core.score(*args, bad, np.zeros(n, np.float32))


def test_score_outputs_are_arrow_memory_pool_buffers():
    n = 200_000
    _, table = random_candidates(n, seed=21)
    before = pa.total_allocated_bytes()
    out = ce.score(table, as_of=T_QUERY, policy=ce.ScoringPolicy(decay=POLICY))
    # both float32 outputs were allocated by (and are counted in) Arrow's default pool
    assert pa.total_allocated_bytes() - before >= 8 * n
    for name in ("score", "validity"):
        col = out.column(name)
        assert col.type == pa.float32() and col.null_count == 0 and len(col) == n
    del out
    assert pa.total_allocated_bytes() - before < 8 * n


def test_score_reliability_scales_validity():
    n = 100
    rel = np.linspace(0.01, 1.0, n).astype(np.float32)
    table = pa.table({"similarity": np.full(n, 0.8, np.float32), "observed_at": pa.array(np.full(n, T_QUERY), TS),
                      "reliability": rel})
    out = ce.score(table, as_of=T_QUERY, policy=ce.ScoringPolicy(decay=ce.Exponential(half_life=1)))
    np.testing.assert_allclose(out.column("validity").to_numpy(), rel, rtol=1e-7)
    np.testing.assert_allclose(out.column("score").to_numpy(), 0.8 * rel.astype(np.float64), atol=1e-7)


# ----------------------------------------------------------------------------- Arrow in / out

def test_score_keeps_input_columns_and_appends_two():
    cols, table = random_candidates(300, seed=9)
    table = table.replace_schema_metadata({"origin": "retriever"})
    out = ce.score(table, as_of=T_QUERY, policy=ce.ScoringPolicy(decay=POLICY))
    assert isinstance(out, pa.Table)
    assert out.column_names == table.column_names + ["validity", "score"]
    assert out.select(table.column_names).equals(table.select(table.column_names))
    for name in table.column_names:
        assert out.schema.field(name).type == table.schema.field(name).type, name
    for name in ("validity", "score"):
        assert pa.types.is_floating(out.schema.field(name).type), name
        assert out.column(name).null_count == 0
    assert out.num_rows == table.num_rows


def test_score_accepts_record_batch_dict_and_chunked_tables():
    cols, table = random_candidates(800, seed=10)
    pol = ce.ScoringPolicy(decay=POLICY)
    base = ce.score(table, as_of=T_QUERY, policy=pol)
    from_batch = ce.score(table.to_batches()[0], as_of=T_QUERY, policy=pol)
    assert isinstance(from_batch, pa.Table)
    assert from_batch.equals(base)
    from_dict = ce.score({name: table.column(name) for name in table.column_names}, as_of=T_QUERY, policy=pol)
    assert from_dict.column("score").equals(base.column("score"))
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=97))
    out = ce.score(chunked, as_of=T_QUERY, policy=pol)
    assert out.column("score").to_numpy().tolist() == base.column("score").to_numpy().tolist()


def test_score_time_representations_agree():
    """int64 µs, timestamps of other units and tz-naive timestamps give the same scores."""
    cols, table = random_candidates(500, seed=12, full=False)
    pol = ce.ScoringPolicy(decay=ce.Exponential(half_life=40))
    base = ce.score(table, as_of=T_QUERY, policy=pol).column("score").to_numpy()
    obs_s = (cols["observed_at"] // 1_000_000) * 1_000_000          # whole seconds
    base_s = ce.score(table.set_column(2, "observed_at", pa.array(obs_s, TS)), as_of=T_QUERY, policy=pol)
    variants = [
        pa.array(cols["observed_at"], pa.int64()),
        pa.array(cols["observed_at"], pa.timestamp("us")),
    ]
    for arr in variants:
        got = ce.score(table.set_column(2, "observed_at", arr), as_of=T_QUERY, policy=pol)
        np.testing.assert_array_equal(got.column("score").to_numpy(), base)
    for unit, div in (("s", 1_000_000), ("ms", 1_000)):
        arr = pa.array(obs_s // div, pa.timestamp(unit, tz="UTC"))
        got = ce.score(table.set_column(2, "observed_at", arr), as_of=T_QUERY, policy=pol)
        np.testing.assert_array_equal(got.column("score").to_numpy(), base_s.column("score").to_numpy())
    # as_of in any accepted spelling
    iso = np.datetime64(T_QUERY, "us").astype(str) + "Z"
    for as_of in (iso, np.datetime64(T_QUERY, "us")):
        got = ce.score(table, as_of=as_of, policy=pol).column("score").to_numpy()
        np.testing.assert_array_equal(got, base)


def test_score_dictionary_fact_type_equals_string():
    cols, table = random_candidates(700, seed=13)
    pol = ce.ScoringPolicy(decay=POLICY)
    base = ce.score(table, as_of=T_QUERY, policy=pol).column("score")
    i = table.column_names.index("fact_type")
    dict_table = table.set_column(i, "fact_type", table.column("fact_type").dictionary_encode())
    assert ce.score(dict_table, as_of=T_QUERY, policy=pol).column("score").equals(base)


def test_score_threads_agree_across_chunks():
    cols, table = random_candidates(150_000, seed=14)   # several 64 Ki-row kernel chunks
    pol = ce.ScoringPolicy(decay=POLICY, fusion="linear", tau=0.1)
    one = ce.score(table, as_of=T_QUERY, policy=pol, threads=1)
    two = ce.score(table, as_of=T_QUERY, policy=pol, threads=2)
    assert one.equals(two)
    v, s = reference(cols, T_QUERY, fusion="linear", tau=0.1)
    assert_scored(one, v, s, tau=0.1)


def test_score_empty_table():
    table = pa.table({"similarity": pa.array([], pa.float32()), "observed_at": pa.array([], TS)})
    out = ce.score(table, as_of=T_QUERY)
    assert out.num_rows == 0
    assert out.column_names == ["similarity", "observed_at", "validity", "score"]


def test_score_unknown_fact_type_without_default_is_an_error():
    cols, table = random_candidates(50, seed=15)
    pol = ce.ScoringPolicy(decay=ce.DecayPolicy({"news": ce.Exponential(half_life=7)}, default=None))
    with pytest.raises(ChronoError, match="has no decay profile"):
        ce.score(table, as_of=T_QUERY, policy=pol)


# ----------------------------------------------------------------------------- bad input

def _tiny(**extra):
    cols = {"similarity": pa.array([0.9, 0.5, 0.1], pa.float32()),
            "observed_at": pa.array([T_QUERY - US_PER_DAY] * 3, TS)}
    cols.update(extra)
    return pa.table(cols)


def test_score_missing_similarity():
    with pytest.raises(QueryError, match="similarity"):
        ce.score(_tiny().drop_columns(["similarity"]), as_of=T_QUERY)


def test_score_missing_time_column():
    with pytest.raises(QueryError, match="observed_at"):
        ce.score(_tiny().drop_columns(["observed_at"]), as_of=T_QUERY)


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.2, float("nan")])
def test_score_reliability_out_of_range(bad):
    rel = pa.array([1.0, bad, 0.5], pa.float32())
    with pytest.raises(QueryError, match=r"reliability.*row 1") as info:
        ce.score(_tiny(reliability=rel), as_of=T_QUERY)
    assert isinstance(info.value, ValueError)


def test_score_null_observed_at():
    with pytest.raises(QueryError, match=r"observed_at.*row 1"):
        ce.score(_tiny(observed_at=pa.array([0, None, 0], TS)), as_of=T_QUERY)


@pytest.mark.parametrize("col", [pa.array([True, False, True]), pa.array([[1], [2], [3]]),
                                 pa.array(["2024-01-01", "someday", "2024-01-01"]),
                                 pa.array([0.5, 1.0, 2.0])])
def test_score_bad_time_column_type(col):
    with pytest.raises(QueryError, match="observed_at"):
        ce.score(_tiny(observed_at=col), as_of=T_QUERY)


def test_score_time_columns_read_as_at_ingest():
    """Candidate times follow the package's one time rule: ISO strings (naive = UTC), dates
    and every timestamp unit give the same scores as int64 µs."""
    us = np.array([T_QUERY - 3 * US_PER_DAY, T_QUERY - 40 * US_PER_DAY, T_QUERY - 400 * US_PER_DAY])
    want = ce.score(_tiny(observed_at=pa.array(us)), as_of=T_QUERY).column("score")
    iso = [str(np.datetime64(int(u), "us")) for u in us]
    for col in (pa.array(iso), pa.array([s + "Z" for s in iso]), pa.array(us, TS),
                pa.array(us // 1_000_000, pa.timestamp("s")), pa.array(us * 1000, pa.timestamp("ns", tz="UTC"))):
        assert ce.score(_tiny(observed_at=col), as_of=T_QUERY).column("score").equals(want), col.type


@pytest.mark.parametrize("as_of", [None, "not a time", True])
def test_score_bad_as_of(as_of):
    with pytest.raises(QueryError, match="as_of"):
        ce.score(_tiny(), as_of=as_of)


@pytest.mark.parametrize("candidates", [[{"similarity": 0.5}], "table", 3])
def test_score_rejects_non_tables(candidates):
    with pytest.raises(QueryError, match="pyarrow Table"):
        ce.score(candidates, as_of=T_QUERY)


@pytest.mark.parametrize("kw", [dict(fusion="sum"), dict(deprecated="drop"), dict(alpha=1.5), dict(tau=-0.1),
                                dict(penalty=2.0), dict(alpha="high")])
def test_scoring_policy_rejects_bad_arguments(kw):
    with pytest.raises(QueryError):
        ce.ScoringPolicy(**kw)


def test_score_non_numeric_similarity_is_query_error():
    with pytest.raises(QueryError, match="similarity"):
        ce.score(_tiny(similarity=pa.array(["a", "b", "c"])), as_of=T_QUERY)


def test_score_nanosecond_timestamps():
    ns = pa.array([T_QUERY * 1000 - 1_500, T_QUERY * 1000 - 86_400 * 10**9 + 7, 0], pa.timestamp("ns", tz="UTC"))
    out = ce.score(_tiny(observed_at=ns), as_of=T_QUERY, policy=ce.ScoringPolicy(decay=ce.Exponential(half_life=1)))
    assert out.num_rows == 3


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_score_null_fact_type_uses_default_profile():
    pol = ce.ScoringPolicy(decay=ce.DecayPolicy({"news": ce.Exponential(half_life=1)}, default=ce.NoDecay()))
    out = ce.score(_tiny(fact_type=pa.array(["news", None, "news"])), as_of=T_QUERY, policy=pol)
    np.testing.assert_allclose(out.column("validity").to_numpy(), [0.5, 1.0, 0.5], rtol=1e-6)


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_score_null_valid_to_is_open_in_any_unit(unit):
    """A null valid_to was filled with int64 max in the column's own unit: in seconds or
    milliseconds that is beyond int64 µs, and the null row raised 'does not fit int64 µs'."""
    per_us = {"s": 1e-6, "ms": 1e-3, "us": 1, "ns": 1000}[unit]
    start = int((T_QUERY - 10 * US_PER_DAY) * per_us)
    end = int((T_QUERY - US_PER_DAY) * per_us)  # the second row ended before T
    out = ce.score(_tiny(valid_from=pa.array([start] * 3, pa.timestamp(unit)),
                         valid_to=pa.array([None, end, None], pa.timestamp(unit))), as_of=T_QUERY)
    ok = ce.score(_tiny(), as_of=T_QUERY).column("score").to_numpy()
    np.testing.assert_allclose(out.column("score").to_numpy(), ok * [1, 0.1, 1], rtol=1e-6)


def test_score_null_deprecated_means_false():
    out = ce.score(_tiny(deprecated=pa.array([True, None, False])), as_of=T_QUERY)
    np.testing.assert_allclose(out.column("score").to_numpy(), [0.09, 0.5, 0.1], rtol=1e-6)


def test_scoring_docstring_example():
    failures, _ = doctest.testmod(scoring_module, optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_zero_candidates_with_a_fact_type_column():
    """No rows (a fact_type column whose dictionary is empty) score to two empty columns,
    not the core's 'decay table is empty'."""
    t = pa.table({"similarity": pa.array([], pa.float32()), "observed_at": pa.array([], pa.timestamp("us")),
                  "fact_type": pa.array([], pa.string())})
    out = ce.score(t, as_of=0)
    assert out.num_rows == 0 and out.column_names[-2:] == ["validity", "score"]
    assert out.column("score").type == pa.float32()


# ----------------------------------------------------------------------------- where=

def _with_metadata(n: int, seed: int):
    """random_candidates plus tests/adapters.py's seven metadata columns, and their values."""
    from adapters import METADATA_SCHEMA, metadata_rows
    cols, table = random_candidates(n, seed)
    rows, values = metadata_rows(n, seed=seed + 1)
    for name in METADATA_SCHEMA:
        table = table.append_column(name, rows[name])
    return cols, table, values


def test_where_excludes_the_rows_it_does_not_pass_as_tau_does():
    """A row the filter does not pass keeps its place and validity and scores −inf; the
    rows it passes score as without it. Random filters (tests/test_where.py's generator)
    against the plain-Python reference of which rows pass (tests/reference.py)."""
    import reference as ref
    from adapters import METADATA_SCHEMA
    from test_where import random_filter
    n = 600
    cols, table, values = _with_metadata(n, 31)
    v, s = reference(cols, T_QUERY, tau=0.2)
    policy = ce.ScoringPolicy(decay=POLICY, tau=0.2)
    rng = np.random.default_rng(32)
    passed = 0
    for _ in range(60):
        where = random_filter(METADATA_SCHEMA, rng)
        keep = ref.where_mask(where, values, n)
        out = ce.score(table, as_of=T_QUERY, policy=policy, where=where)
        assert out.column("doc_id").to_pylist() == list(range(n))
        assert_scored(out, v, np.where(keep, s, -np.inf), tau=0.2)
        passed += 0 < keep.sum() < n
    assert passed >= 40
    # the candidates' own columns, and a DataFrame in and out
    out = ce.score(table.to_pandas(), as_of=T_QUERY, policy=policy, where={"similarity": {"$gte": 0.5},
                                                                           "fact_type": {"$ne": "news"}})
    keep = (cols["similarity"].astype(np.float64) >= 0.5) & (np.asarray(cols["fact_type"]) != "news")
    assert_scored(pa.Table.from_pandas(out), v, np.where(keep, s, -np.inf), tau=0.2)


def test_where_on_a_column_of_nulls_and_bad_filters():
    cols, table = random_candidates(50, 33)
    table = table.append_column("region", pa.nulls(50))  # all null: a DataFrame of None gives this
    v, s = reference(cols, T_QUERY)
    pol = ce.ScoringPolicy(decay=POLICY)
    for where, passes in (({"region": "north"}, False), ({"region": {"$ne": "north"}}, True),
                          ({"region": {"$exists": False}}, True), ({"region": {"$gt": "2020-01-01"}}, False),
                          ({"region": {"$nin": [1, 2]}}, True), ({"$not": {"region": {"$lt": 3.5}}}, True)):
        out = ce.score(table, as_of=T_QUERY, policy=pol, where=where)
        assert_scored(out, v, s if passes else np.full(50, -np.inf))
    for where, match in (({"tenant": "acme"}, r"where\.tenant: unknown field \(the columns of the candidates: 'doc_id'"),
                         ({"fact_type": {"$gt": "news"}}, "fact_type.*string column"),
                         ({"similarity": "high"}, "compare it with a number"),
                         ({"$regex": 1}, "unknown operator"), ({}, "empty filter")):
        with pytest.raises(QueryError, match=match):
            ce.score(table, as_of=T_QUERY, policy=pol, where=where)
    nested = table.append_column("pos", pa.array([{"x": 1}] * 50))
    with pytest.raises(QueryError, match=r"where\.pos: the column of the candidates: .*not a metadata kind"):
        ce.score(nested, as_of=T_QUERY, policy=pol, where={"pos": 1})
    assert ce.score(table, as_of=T_QUERY, policy=pol, where=None).equals(ce.score(table, as_of=T_QUERY, policy=pol))
