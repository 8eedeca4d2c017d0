"""Decay parameters from other systems.

* ``Decay.from_elasticsearch`` against Elasticsearch's function_score decay formulas, with
  distances in milliseconds (Elasticsearch reads a date decay's scale and offset with
  TimeValue and works in ms);
* ``Decay.from_qdrant`` against Qdrant's score-boosting decay formulas (lib/segment
  rescore_formula: lambda from f32 scale and midpoint), with datetimes in seconds;
* β = 0 (chronofy's "does not decay") through the family, the kernels, ``ce.score`` and
  an Engine;
* ``DecayPolicy.from_chronofy`` against chronofy 0.1.9's own values where it is installed,
  and against its literal default table otherwise.

The references below are written from those systems' documented formulas, in NumPy, not
from chrono_engine.decay.
"""
from __future__ import annotations

import math
import zlib
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine.decay import CHRONOFY_DEFAULT_BETA, evaluate_spec
from chrono_engine.errors import QueryError

MS_PER_DAY = 86_400_000
S_PER_DAY = 86_400
N_POINTS = 10_000

# chronofy 0.1.9, chronofy/decay/exponential.py, DEFAULT_BETA (copied by hand)
CHRONOFY_TABLE = {"vital_sign": 5.0, "lab_result": 2.0, "medication": 1.0, "diagnosis": 0.5,
                  "chronic_condition": 0.01, "demographic": 0.0, "general": 0.5}


def _distances(scale: float, rng: np.random.Generator) -> np.ndarray:
    """10k signed distances: half within a few scales, half log-spread out to the tails."""
    half = N_POINTS // 2
    near = rng.uniform(-6.0, 6.0, half) * scale
    far = rng.choice([-1.0, 1.0], N_POINTS - half) * scale * 10.0 ** rng.uniform(-4, 3, N_POINTS - half)
    return np.concatenate([near, far, [0.0, scale, -scale]])


# ---------------------------------------------------------------------------------------
# Elasticsearch: function_score decay functions on a date field
# ---------------------------------------------------------------------------------------

def es_reference(function: str, dist_ms, scale_ms: float, offset_ms: float, decay: float):
    """Elasticsearch's documented score, d = max(0, |doc − origin| − offset), all in ms."""
    d = np.maximum(0.0, np.abs(dist_ms) - offset_ms)
    if function == "gauss":
        sigma2 = -scale_ms ** 2 / (2.0 * np.log(decay))
        return np.exp(-d ** 2 / (2.0 * sigma2))
    if function == "exp":
        lam = np.log(decay) / scale_ms
        return np.exp(lam * d)
    s = scale_ms / (1.0 - decay)
    return np.maximum((s - d) / s, 0.0)


# (scale, scale in ms, offset, offset in ms, decay, the unit chrono_engine picks)
ES_CASES = [
    ("10d", 864_000_000, "2d", 172_800_000, 0.5, "days"),
    ("12h", 43_200_000, "0d", 0, 0.2, "hours"),
    ("90m", 5_400_000, "15m", 900_000, 0.9, "seconds"),
    ("30s", 30_000, "0", 0, 0.01, "seconds"),
    ("1500ms", 1_500, "250ms", 250, 0.33, "seconds"),
    ("7D", 604_800_000, "36H", 129_600_000, 0.75, "days"),
    (" 2000000micros ", 2_000, "1000000nanos", 1, 0.6, "seconds"),
    ("365d", 31_536_000_000, "30d", 2_592_000_000, 0.05, "days"),
]
# Linear's value is computed as 1 − rate·d here and as (s − d)/s by Elasticsearch: near
# its zero crossing the two differ by rounding in absolute terms, so linear also gets an
# absolute tolerance of 1e-15 (the curves are in [0, 1]).
ATOL = {"exp": 1e-300, "gauss": 1e-300, "linear": 1e-15}


@pytest.mark.parametrize("function", ["exp", "gauss", "linear"])
@pytest.mark.parametrize("scale, scale_ms, offset, offset_ms, decay, unit", ES_CASES)
def test_elasticsearch_matches_documented_formula(function, scale, scale_ms, offset, offset_ms,
                                                   decay, unit):
    d = ce.Decay.from_elasticsearch(function, scale=scale, offset=offset, decay=decay)
    assert type(d) is {"exp": ce.Exponential, "gauss": ce.Gaussian, "linear": ce.Linear}[function]
    assert d.unit == unit and d.symmetric
    rng = np.random.default_rng(zlib.crc32(f"{function} {scale}".encode()))
    dist_ms = _distances(float(scale_ms + offset_ms), rng)
    want = es_reference(function, dist_ms, scale_ms, offset_ms, decay)
    np.testing.assert_allclose(d(dist_ms / MS_PER_DAY), want, rtol=1e-12, atol=ATOL[function])
    # the documented anchor: D = decay at |x − origin| = offset + scale, on both sides
    edge = (scale_ms + offset_ms) / MS_PER_DAY
    np.testing.assert_allclose(d([edge, -edge]), [decay, decay], rtol=1e-12)


@pytest.mark.parametrize("function", ["exp", "gauss", "linear"])
def test_elasticsearch_json_form_equals_keywords(function):
    body = {"origin": "now", "scale": "10d", "offset": "2d", "decay": 0.3}
    d = ce.Decay.from_elasticsearch({function: {"timestamp": body, "multi_value_mode": "avg"}})
    assert d == ce.Decay.from_elasticsearch(function, scale="10d", offset="2d", decay=0.3)
    # Elasticsearch's defaults: origin now, offset 0, decay 0.5
    short = ce.Decay.from_elasticsearch({function: {"ts": {"scale": "10d"}}})
    assert short == ce.Decay.from_elasticsearch(function, scale="10d", offset="0d", decay=0.5,
                                                origin="now")
    assert float(short(10.0)) == pytest.approx(0.5, rel=1e-12)


def test_elasticsearch_durations_truncate_to_whole_milliseconds():
    # TimeValue.getMillis truncates: 1500 µs is 1 ms
    d = ce.Decay.from_elasticsearch("exp", scale="1500micros", offset="1999999nanos")
    assert d.unit == "seconds" and d.offset == 0.001
    assert d.beta == pytest.approx(math.log(2) / 0.001, rel=1e-15)


def test_elasticsearch_symmetric_false_keeps_future_items_at_one():
    d = ce.Decay.from_elasticsearch("gauss", scale="10d", symmetric=False)
    assert not d.symmetric
    assert d([-100.0, -1.0]).tolist() == [1.0, 1.0]
    assert float(d(10.0)) == pytest.approx(0.5, rel=1e-12)


BAD_DURATIONS = [
    ("10x", "no such unit"), ("", "no such unit"), ("d", "not a whole number"),
    ("-3d", "negative"), ("1.5d", "fractional"), ("NaNd", "not a whole number"),
    ("10M", "no such unit"), ("1w", "no such unit"), ("3 weeks", "not a whole number"),
    (10, "duration"), (1.5, "duration"), (math.nan, "duration"), (True, "duration"),
]


@pytest.mark.parametrize("name", ["scale", "offset"])
@pytest.mark.parametrize("value, words", BAD_DURATIONS)
def test_elasticsearch_bad_durations(name, value, words):
    kwargs = {"scale": "10d", name: value}
    with pytest.raises(QueryError, match=name) as info:
        ce.Decay.from_elasticsearch("gauss", **kwargs)
    assert words in str(info.value) and repr(value) in str(info.value)
    assert isinstance(info.value, ValueError)
    # the same rule in the JSON form
    with pytest.raises(QueryError, match=name):
        ce.Decay.from_elasticsearch({"gauss": {"t": kwargs}})


@pytest.mark.parametrize("scale", ["0d", "0", "999micros"])
def test_elasticsearch_scale_below_a_millisecond(scale):
    with pytest.raises(QueryError, match="scale must be at least one millisecond"):
        ce.Decay.from_elasticsearch("exp", scale=scale)


@pytest.mark.parametrize("decay", [0, 0.0, 1.0, -0.5, 1.5, math.nan, "0.5", True])
def test_elasticsearch_bad_decay(decay):
    with pytest.raises(QueryError, match=r"decay must be a number in \(0, 1\)"):
        ce.Decay.from_elasticsearch("linear", scale="1d", decay=decay)


@pytest.mark.parametrize("origin", ["now-1d", "now/d", "2024-01-01", "NOW", 0])
def test_elasticsearch_origin_must_be_now(origin):
    with pytest.raises(QueryError, match="origin must be 'now'") as info:
        ce.Decay.from_elasticsearch("exp", scale="1d", origin=origin)
    assert repr(origin) in str(info.value)


@pytest.mark.parametrize("call, words", [
    (lambda: ce.Decay.from_elasticsearch("exp"), "scale is required"),
    (lambda: ce.Decay.from_elasticsearch("gaussian", scale="1d"), "function must be one of"),
    (lambda: ce.Decay.from_elasticsearch(None, scale="1d"), "function must be one of"),
    (lambda: ce.Decay.from_elasticsearch({"exp": {"t": {"scale": "1d"}}}, decay=0.3), "not both"),
    (lambda: ce.Decay.from_elasticsearch({"exp": {"t": {"scale": "1d"}},
                                          "gauss": {"t": {"scale": "1d"}}}), "exactly one"),
    (lambda: ce.Decay.from_elasticsearch({}), "exactly one"),
    (lambda: ce.Decay.from_elasticsearch({"exp": {"t": {"scale": "1d"}}, "weight": 2}), "'weight'"),
    (lambda: ce.Decay.from_elasticsearch({"exp": {"t": {"scale": "1d", "foo": 1}}}), "'foo'"),
    (lambda: ce.Decay.from_elasticsearch({"exp": {"t": "1d"}}), "one field name"),
    (lambda: ce.Decay.from_elasticsearch({"exp": {"a": {"scale": "1d"}, "b": {}}}), "one field name"),
    (lambda: ce.Decay.from_elasticsearch({"exp": ["1d"]}), "one field name"),
    (lambda: ce.Gaussian.from_elasticsearch("exp", scale="1d"), "'exp'"),
    (lambda: ce.Decay.from_elasticsearch("exp", scale="1d", symmetric="yes"), "symmetric"),
])
def test_elasticsearch_bad_descriptions(call, words):
    with pytest.raises(QueryError, match=words):
        call()


# ---------------------------------------------------------------------------------------
# Qdrant: exp_decay / gauss_decay / lin_decay score-boosting expressions
# ---------------------------------------------------------------------------------------

def qdrant_reference(kind: str, diff, scale: float, midpoint: float):
    """Qdrant's decay with lambda from f32 scale and midpoint (decay_params_to_lambda)."""
    scale = float(np.float32(scale))
    midpoint = float(np.float32(midpoint))
    if kind == "exp_decay":
        lam = math.log(midpoint) / scale
        return np.exp(lam * np.abs(diff))
    if kind == "gauss_decay":
        lam = math.log(midpoint) / scale ** 2
        return np.exp(lam * diff * diff)
    lam = (1.0 - midpoint) / scale
    return np.maximum(-lam * np.abs(diff) + 1.0, 0.0)


QDRANT_CASES = [(86_400, 0.5), (3_600, 0.3), (604_800, 0.9), (1.0, 0.5), (2.5e6, 0.05),
                (1e-3, 0.77), (31_536_000, 0.123456789)]


@pytest.mark.parametrize("kind", ["exp_decay", "gauss_decay", "lin_decay"])
@pytest.mark.parametrize("scale, midpoint", QDRANT_CASES)
def test_qdrant_matches_documented_formula(kind, scale, midpoint):
    d = ce.Decay.from_qdrant(kind, scale=scale, midpoint=midpoint)
    assert d.unit == "seconds" and d.symmetric
    rng = np.random.default_rng(zlib.crc32(f"{kind} {scale} {midpoint}".encode()))
    diff_s = _distances(float(scale), rng)     # x − target, in seconds
    want = qdrant_reference(kind, diff_s, scale, midpoint)
    atol = 1e-15 if kind == "lin_decay" else 1e-300
    np.testing.assert_allclose(d(diff_s / S_PER_DAY), want, rtol=1e-12, atol=atol)


@pytest.mark.parametrize("kind", ["exp_decay", "gauss_decay", "lin_decay"])
def test_qdrant_scale_in_another_unit(kind):
    d = ce.Decay.from_qdrant(kind, scale=7, midpoint=0.25, unit="days")
    diff_days = _distances(7.0, np.random.default_rng(5))
    atol = 1e-15 if kind == "lin_decay" else 1e-300
    np.testing.assert_allclose(d(diff_days), qdrant_reference(kind, diff_days, 7, 0.25),
                               rtol=1e-12, atol=atol)


def test_qdrant_rounds_parameters_to_float32_as_qdrant_does():
    d = ce.Decay.from_qdrant("exp_decay", scale=3600, midpoint=0.3)
    assert float(d(3600 / S_PER_DAY)) == pytest.approx(float(np.float32(0.3)), rel=1e-14)
    assert float(np.float32(0.3)) != 0.3


def test_qdrant_json_form_defaults_and_linear_edges():
    expr = {"exp_decay": {"x": {"datetime_key": "updated"},
                          "target": {"datetime": "2025-01-01T00:00:00Z"},
                          "scale": 86400, "midpoint": 0.5}}
    assert ce.Decay.from_qdrant(expr) == ce.Decay.from_qdrant("exp_decay", scale=86400, midpoint=0.5)
    # Qdrant's defaults: scale 1, midpoint 0.5
    for kind in ("exp_decay", "gauss_decay", "lin_decay"):
        assert ce.Decay.from_qdrant({kind: {"x": "t"}}) == ce.Decay.from_qdrant(kind, scale=1.0,
                                                                                midpoint=0.5)
    # lin_decay accepts midpoint in [0, 1]: 0 reaches zero at scale, 1 never decays
    assert float(ce.Decay.from_qdrant("lin_decay", scale=10, midpoint=0.0, unit="days")(10.0)) == 0.0
    assert ce.Decay.from_qdrant("lin_decay", midpoint=1.0) == ce.NoDecay()
    d = ce.Decay.from_qdrant("gauss_decay", scale=2, midpoint=0.1, unit="hours", symmetric=False)
    assert not d.symmetric and float(d(-1.0)) == 1.0


@pytest.mark.parametrize("value", [0, 0.0, -1.0, math.nan, math.inf, 1e39, 1e-50, "1", True])
def test_qdrant_bad_scale(value):
    with pytest.raises(QueryError, match="scale") as info:
        ce.Decay.from_qdrant("exp_decay", scale=value)
    assert repr(value) in str(info.value)


@pytest.mark.parametrize("kind, midpoint", [
    ("exp_decay", 0.0), ("exp_decay", 1.0), ("gauss_decay", 0.0), ("gauss_decay", 1.0),
    ("exp_decay", -0.1), ("gauss_decay", 1.5), ("lin_decay", -0.1), ("lin_decay", 1.5),
    ("exp_decay", math.nan), ("lin_decay", math.nan), ("exp_decay", "0.5"), ("lin_decay", True),
])
def test_qdrant_bad_midpoint(kind, midpoint):
    with pytest.raises(QueryError, match="midpoint"):
        ce.Decay.from_qdrant(kind, scale=10, midpoint=midpoint)


@pytest.mark.parametrize("call, words", [
    (lambda: ce.Decay.from_qdrant("exp"), "kind must be one of"),
    (lambda: ce.Decay.from_qdrant({"exp_decay": {"scale": 1}}, midpoint=0.2), "not both"),
    (lambda: ce.Decay.from_qdrant({"exp_decay": {}, "lin_decay": {}}), "exactly one"),
    (lambda: ce.Decay.from_qdrant({"exp_decay": {"scale": 1, "offset": 2}}), "'offset'"),
    (lambda: ce.Decay.from_qdrant({"exp_decay": {}, "sum": []}), "'sum'"),
    (lambda: ce.Decay.from_qdrant({"exp_decay": 86400}), "must map to its parameters"),
    (lambda: ce.Decay.from_qdrant("exp_decay", unit="minutes"), "unit must be one of"),
    (lambda: ce.Linear.from_qdrant("exp_decay"), "'exp_decay'"),
])
def test_qdrant_bad_descriptions(call, words):
    with pytest.raises(QueryError, match=words):
        call()


# ---------------------------------------------------------------------------------------
# β = 0: does not decay
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d", [ce.Exponential(beta=0), ce.Exponential(beta=0.0, offset=3.0),
                               ce.Exponential(beta=-0.0, unit="hours", symmetric=True),
                               ce.Exponential.from_mean_reversion_rate(0)], ids=repr)
def test_zero_beta_is_no_decay(d):
    ages = np.array([-1e300, -5.0, 0.0, 1e-9, 1.0, 365.0, 1e6, 1e300, np.inf, -np.inf, np.nan])
    want = np.where(np.isnan(ages), np.nan, 1.0)
    np.testing.assert_array_equal(d(ages), want)
    assert d.beta == 0.0 and math.copysign(1.0, d.beta) == 1.0
    assert d.half_life == math.inf and d.half_life_days == math.inf
    # the kernels get the NoDecay record, whose reference agrees with the family
    assert d._kernel_spec() == ce.NoDecay()._kernel_spec()
    np.testing.assert_array_equal(evaluate_spec(d._kernel_spec(), ages), want)
    assert ce.Decay.from_dict(d.to_dict()) == d
    assert d.to_dict()["beta"] == 0.0 and "-0.0" not in repr(d)


def test_zero_beta_in_a_kernel_table():
    p = ce.DecayPolicy({"demographic": ce.Exponential(beta=0), "news": ce.Exponential(beta=0.5)})
    assert p.kernel_table(["demographic", "news"]).tolist() == [[0.0, 0.0, 0.0, 1.0, 0.0],
                                                               [1.0, 0.5, 0.0, 1.0, 0.0]]


T_QUERY_US = 1_700_000_000_000_000
US_PER_DAY = 86_400_000_000


def test_score_with_zero_beta_gives_full_validity():
    rng = np.random.default_rng(3)
    n = 2000
    age_days = np.concatenate([rng.uniform(-400, 40_000, n - 2), [0.0, 1e5]])
    obs = (T_QUERY_US - age_days * US_PER_DAY).astype(np.int64)
    types = np.where(rng.random(n) < 0.5, "demographic", "vital_sign")
    rel = rng.uniform(0.2, 1.0, n)
    sim = rng.uniform(-0.2, 1.0, n)
    table = pa.table({"similarity": sim, "observed_at": pa.array(obs, pa.timestamp("us", tz="UTC")),
                      "fact_type": types, "reliability": rel})
    policy = ce.DecayPolicy.from_chronofy()
    out = ce.score(table, as_of=T_QUERY_US, policy=ce.ScoringPolicy(decay=policy))
    beta = np.where(types == "demographic", 0.0, 5.0)
    want_v = rel * np.exp(-beta * np.maximum(age_days, 0.0))
    got_v = out.column("validity").to_numpy()
    np.testing.assert_allclose(got_v, want_v, rtol=2e-6, atol=1e-30)
    demo = types == "demographic"
    np.testing.assert_array_equal(got_v[demo], rel[demo].astype(np.float32))
    np.testing.assert_allclose(out.column("score").to_numpy(), np.clip(sim, 0, 1) * want_v,
                               rtol=2e-6, atol=1e-30)


@pytest.mark.parametrize("symmetric", [False, True])
def test_engine_with_zero_beta_ingests_and_searches(symmetric):
    dim, n, k = 8, 300, 10
    rng = np.random.default_rng(11)
    vec = rng.standard_normal((n, dim)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    age_days = rng.uniform(-30, 3000, n)
    t_query = np.datetime64("2024-06-01", "us")
    vf = t_query - (age_days * US_PER_DAY).astype("timedelta64[us]")
    types = np.asarray(["demographic", "news", "other"], dtype=object)[rng.integers(0, 3, n)]
    rel = rng.uniform(0.5, 1.0, n).astype(np.float32)
    policy = ce.DecayPolicy({"demographic": ce.Exponential(beta=0, symmetric=symmetric),
                             "news": ce.Exponential(half_life=30)},
                            default=ce.Exponential(beta=0.0, offset=5.0))
    e = ce.Engine(dim, decay=policy, M=8, ef_construction=40, threads=1)
    ids = e.ingest({"vector": vec, "valid_from": vf, "reliability": rel, "fact_type": types,
                    "id": np.arange(n, dtype=np.uint64)})
    exact_age = (t_query - vf) / np.timedelta64(1, "D")
    beta = np.where(types == "news", math.log(2) / 30, 0.0)
    want_v = rel.astype(np.float64) * np.exp(-beta * np.maximum(exact_age, 0.0))
    np.testing.assert_allclose(e.validity(t_query, ids), want_v, rtol=1e-6)
    q = vec[0] + 0.3 * vec[1]
    q /= np.linalg.norm(q)
    want_s = np.clip(vec.astype(np.float64) @ q.astype(np.float64), 0, 1) * want_v
    order = np.lexsort((np.arange(n), -want_s))[:k]
    for exact in (True, False):
        res = e.search(q, k=k, mode="all", as_of=t_query, exact=exact)
        got = res.column("id").to_numpy().astype(np.int64)
        np.testing.assert_allclose(res.column("validity").to_numpy(), want_v[got], rtol=1e-6)
        if exact:
            assert got.tolist() == order.tolist()
    # a τ that every non-decaying item passes and the decayed news mostly fail
    res = e.search(q, k=n, mode="all", as_of=t_query, exact=True, tau=0.45)
    got = set(res.column("id").to_numpy().tolist())
    assert got == set(np.flatnonzero(want_v >= 0.45).tolist())


# ---------------------------------------------------------------------------------------
# chronofy configurations
# ---------------------------------------------------------------------------------------

def test_chronofy_default_table_literal():
    assert dict(CHRONOFY_DEFAULT_BETA) == CHRONOFY_TABLE
    p = ce.DecayPolicy.from_chronofy()
    assert {t: d.beta for t, d in p.profiles.items()} == CHRONOFY_TABLE
    assert p.default == ce.Exponential(beta=0.5)
    ages = np.random.default_rng(2).uniform(-10, 400, 1000)
    for fact_type, beta in [*CHRONOFY_TABLE.items(), ("unlisted", 0.5)]:
        np.testing.assert_allclose(p.evaluate(ages, fact_type),
                                   np.exp(-beta * np.maximum(ages, 0.0)), rtol=1e-12, atol=1e-300)
    assert (p.evaluate(ages, "demographic") == 1.0).all()


def test_chronofy_mapping_is_laid_over_the_defaults():
    p = ce.DecayPolicy.from_chronofy({"news": 0.3, "demographic": 0.02}, default_beta=0.0,
                                     time_unit="hours")
    assert p["news"] == ce.Exponential(beta=0.3, unit="hours")
    assert p["demographic"] == ce.Exponential(beta=0.02, unit="hours")
    assert p["vital_sign"] == ce.Exponential(beta=5.0, unit="hours")
    assert p["unlisted"] == ce.Exponential(beta=0.0, unit="hours")
    assert float(p.evaluate(1.0, "news")) == pytest.approx(math.exp(-0.3 * 24), rel=1e-12)


@pytest.mark.parametrize("call, words", [
    (lambda: ce.DecayPolicy.from_chronofy({"news": -1.0}), "'news'.*beta"),
    (lambda: ce.DecayPolicy.from_chronofy({"news": math.nan}), "'news'.*beta"),
    (lambda: ce.DecayPolicy.from_chronofy({"news": "0.3"}), "'news'.*beta"),
    (lambda: ce.DecayPolicy.from_chronofy({"news": True}), "'news'.*beta"),
    (lambda: ce.DecayPolicy.from_chronofy({3: 0.3}), "fact type names"),
    (lambda: ce.DecayPolicy.from_chronofy(default_beta=-0.5), "default_beta"),
    (lambda: ce.DecayPolicy.from_chronofy(time_unit="weeks"), "time_unit must be one of"),
    (lambda: ce.DecayPolicy.from_chronofy(0.5), "got float"),
    (lambda: ce.DecayPolicy.from_chronofy(ce.Exponential(beta=1)), "got Exponential"),
])
def test_chronofy_bad_configs(call, words):
    with pytest.raises(QueryError, match=words):
        call()


def _chronofy_values(decay_fn, fact_types, ages_days):
    chronofy = pytest.importorskip("chronofy")
    now = datetime(2026, 3, 15, 12, 0, 0)
    got_types, got_ages, want = [], [], []
    for fact_type in fact_types:
        for a in ages_days:
            fact = chronofy.TemporalFact(content="c", timestamp=now - timedelta(days=float(a)),
                                         fact_type=fact_type)
            got_types.append(fact_type)
            got_ages.append((now - fact.timestamp).total_seconds() / 86400.0)
            want.append(decay_fn.compute(fact, now))
    return np.array(got_ages), np.array(got_types, dtype=object), np.array(want)


CHRONOFY_AGES = [-2.0, 0.0, 0.01, 0.5, 1.0, 3.25, 10.0, 45.0, 365.0, 4000.0]


def test_chronofy_default_table_matches_chronofy():
    pytest.importorskip("chronofy")
    from chronofy.decay.exponential import DEFAULT_BETA
    assert dict(CHRONOFY_DEFAULT_BETA) == DEFAULT_BETA == CHRONOFY_TABLE


@pytest.mark.parametrize("unit", ["days", "hours", "seconds"])
def test_chronofy_objects_match_chronofy(unit):
    chronofy = pytest.importorskip("chronofy")
    scale = {"days": 1.0, "hours": 1 / 24, "seconds": 1 / 86400}[unit]
    ages = [a * scale for a in CHRONOFY_AGES]
    objects = [
        chronofy.ExponentialDecay(time_unit=unit),
        chronofy.ExponentialDecay(beta={"news": 0.3, "vital_sign": 0.0}, default_beta=0.0,
                                  time_unit=unit),
        chronofy.ExponentialDecay.from_mean_reversion_rate({"news": 0.15, "blood": 0.0},
                                                           time_unit=unit),
        chronofy.HalfLifeDecay(half_life={"news": 4.0, "law": 3650.0}, default_half_life=9.0,
                               time_unit=unit),
        chronofy.LinearDecay(rate={"news": 0.05, "blood": 0.0}, default_rate=0.2, time_unit=unit),
        chronofy.LinearDecay(rate={"news": 0.05}, default_rate=0.0, time_unit=unit),
        chronofy.PowerLawDecay(exponent={"news": 1.3, "blood": 0.0}, default_exponent=0.7,
                               time_unit=unit),
        chronofy.WeibullDecay(scale={"news": 6.0, "law": 900.0}, shape={"news": 1.7, "bolt": 0.6},
                              default_scale=30.0, default_shape=1.2, time_unit=unit),
    ]
    types = ["news", "law", "blood", "bolt", "vital_sign", "demographic", "unlisted"]
    for theirs in objects:
        policy = ce.DecayPolicy.from_chronofy(theirs)
        age_days, fact_types, want = _chronofy_values(theirs, types, ages)
        np.testing.assert_allclose(policy.evaluate(age_days, fact_types), want, rtol=1e-12,
                                   atol=1e-300, err_msg=repr(theirs))
        for fact_type in types:  # the β chronofy reports, where it has one
            beta = theirs.get_beta(fact_type) if type(theirs).__name__ == "ExponentialDecay" else None
            if beta is not None:
                assert policy[fact_type].beta == beta


def test_chronofy_mapping_matches_chronofy():
    chronofy = pytest.importorskip("chronofy")
    table = {"news": 0.3, "demographic": 0.02, "blood": 0.0}
    theirs = chronofy.ExponentialDecay(beta=table, default_beta=0.1, time_unit="hours")
    ours = ce.DecayPolicy.from_chronofy(table, default_beta=0.1, time_unit="hours")
    assert ours == ce.DecayPolicy.from_chronofy(theirs)
    types = ["news", "demographic", "blood", "vital_sign", "unlisted"]
    age_days, fact_types, want = _chronofy_values(theirs, types, [a / 24 for a in CHRONOFY_AGES])
    np.testing.assert_allclose(ours.evaluate(age_days, fact_types), want, rtol=1e-12, atol=1e-300)
    with pytest.raises(QueryError, match="carries its own"):
        ce.DecayPolicy.from_chronofy(theirs, time_unit="days")
