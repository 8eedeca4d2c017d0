"""chrono_engine.distributed.rescore / rescore_parquet on a local Ray
instance: Ray Data rescoring equals ce.score on the same rows bit for bit, Parquet in and
out, and bad arguments are clear errors raised on the driver, not hangs.

Rows are re-aligned by their ``id`` before comparing (Ray may emit blocks in another order
unless ``preserve_order`` is set; one test sets it and compares in place).
"""
from __future__ import annotations

import contextlib
import logging
import os
import pickle
import warnings
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import chrono_engine as ce
from chrono_engine.errors import QueryError

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'chrono_engine[ray]')")
pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'chrono_engine[ray]')")

from chrono_engine.distributed import rescore, rescore_parquet  # noqa: E402
from chrono_engine.distributed._rescore import _Scorer  # noqa: E402

pytestmark = pytest.mark.ray

US_PER_DAY = 86_400_000_000
TS = pa.timestamp("us", tz="UTC")
T_QUERY = datetime(2025, 6, 1, tzinfo=timezone.utc)
T_US = int(T_QUERY.timestamp()) * 1_000_000
N_BIG = 1 << 20  # 1,048,576 rows

# one fact type per decay family (offsets, symmetric, other units); "other" and null fact
# types fall to the default
DECAY = ce.DecayPolicy({
    "news": ce.Exponential(half_life=7.0, offset=1.0),
    "event": ce.Gaussian(sigma=20.0, offset=3.0, symmetric=True),
    "price": ce.Linear(rate=0.5, offset=1.0, unit="hours"),
    "paper": ce.PowerLaw(0.8),
    "device": ce.Weibull(shape=1.7, scale=120.0),
    "policy": ce.HalfLife(365.0),
    "constant": ce.NoDecay(),
}, default=ce.Exponential(half_life=30.0))
PRODUCT = ce.ScoringPolicy(decay=DECAY, tau=0.01, deprecated="penalize", penalty=0.25)
LINEAR = ce.ScoringPolicy(decay=DECAY, fusion="linear", alpha=0.6, deprecated="exclude", future="include")
TYPES = np.array(["news", "event", "price", "paper", "device", "policy", "constant", "other", None], dtype=object)


def candidates(n: int, seed: int = 0) -> pa.Table:
    """``n`` rows with every column ce.score reads, nulls included: observed over ten years
    around T (some after it), validity intervals (some open, some not yet valid at T)."""
    rng = np.random.default_rng(seed)
    obs = T_US - rng.integers(-30 * US_PER_DAY, 3650 * US_PER_DAY, n)
    vf = obs - rng.integers(-5 * US_PER_DAY, 30 * US_PER_DAY, n)
    vt = vf + rng.integers(1, 4000 * US_PER_DAY, n)
    return pa.table({
        "id": np.arange(n, dtype=np.int64),
        "similarity": rng.uniform(-0.2, 1.1, n).astype(np.float32),
        "observed_at": pa.array(obs, TS),
        "valid_from": pa.array(vf, TS),
        "valid_to": pa.array(vt, TS, mask=rng.random(n) < 0.5),
        "reliability": pa.array((1.0 - 0.9 * rng.random(n)).astype(np.float32), mask=rng.random(n) < 0.1),
        "fact_type": pa.array(TYPES[rng.integers(0, len(TYPES), n)], pa.string()),
        "deprecated": pa.array(rng.random(n) < 0.1, mask=rng.random(n) < 0.2),
        "payload": pa.array(rng.integers(0, 1000, n).astype(str)),  # carried through
    })


def blocks(t: pa.Table, k: int) -> list[pa.Table]:
    step = -(-t.num_rows // k)
    return [t.slice(i, step) for i in range(0, t.num_rows, step)]


def collect(ds) -> pa.Table:
    return pa.concat_tables(ray.get(list(ds.to_arrow_refs())))


def assert_same(got: pa.Table, ref: pa.Table, *, realign: bool = True) -> None:
    """``got`` holds ``ref``'s rows, columns and types, with validity and score bit for bit."""
    assert got.num_rows == ref.num_rows
    assert got.schema == ref.schema
    if realign:
        got = got.take(np.argsort(got.column("id").to_numpy(), kind="stable"))
    assert np.array_equal(got.column("id").to_numpy(), ref.column("id").to_numpy())
    for col in ("validity", "score"):
        a, b = got.column(col).to_numpy(), ref.column(col).to_numpy()
        assert a.dtype == b.dtype == np.float32
        assert np.array_equal(a, b, equal_nan=True), col
    assert got.drop_columns(["validity", "score"]).equals(ref.drop_columns(["validity", "score"]))




class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def no_deprecations():
    """Fail if Ray is called in a deprecated form: a warning, or Ray Data's log line (it
    logs ``concurrency=``'s deprecation instead of warning)."""
    logs, logger = _Records(), logging.getLogger("ray.data")
    logger.addHandler(logs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        logger.removeHandler(logs)
    assert not [str(w.message) for w in caught
                if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, FutureWarning))]
    assert not [m for m in logs.messages if "deprecat" in m.lower()]


# --------------------------------------------------------------------- equal to ce.score

@pytest.mark.slow
def test_rescore_equals_ce_score_bit_for_bit_on_a_million_rows(local_ray):
    t = candidates(N_BIG)
    ref = ce.score(t, as_of=T_QUERY, policy=PRODUCT)
    assert np.isneginf(ref.column("score").to_numpy()).any()  # the test data reach τ and exclusion
    ds = ray.data.from_arrow(blocks(t, 8))
    # as_of in another zone and form: read once on the driver by the engine's time rule
    as_of = T_QUERY.astimezone(timezone(timedelta(hours=-7)))
    with no_deprecations():
        out = collect(rescore(ds, PRODUCT, as_of=as_of, batch_size=1 << 17))
    assert_same(out, ref)


@pytest.mark.slow
def test_preserve_order_and_a_fixed_pool_of_threaded_actors(local_ray):
    t = candidates(200_000, seed=1)
    ref = ce.score(t, as_of=T_US, policy=LINEAR)
    ctx = ray.data.DataContext.get_current()
    keep = ctx.execution_options.preserve_order
    ctx.execution_options.preserve_order = True  # the dataset copies the context when made
    try:
        ds = ray.data.from_arrow(blocks(t, 5))
    finally:
        ctx.execution_options.preserve_order = keep
    out = collect(rescore(ds, LINEAR, as_of=T_US, threads_per_actor=2, actors=1, batch_size=30_000))
    assert_same(out, ref, realign=False)


@pytest.mark.slow
def test_parquet_round_trip_equals_ce_score(local_ray, tmp_path):
    t = candidates(300_000, seed=2)
    ref = ce.score(t, as_of="2025-06-01T00:00:00Z", policy=LINEAR)
    src = tmp_path / "in"
    src.mkdir()
    for i, part in enumerate(blocks(t, 3)):
        pq.write_table(part, src / f"part-{i}.parquet")
    dst = tmp_path / "out"
    with no_deprecations():
        assert rescore_parquet(src, dst, LINEAR, as_of="2025-06-01T00:00:00Z", actors=(1, 1)) == t.num_rows
    assert_same(pq.read_table(dst), ref)
    with pytest.raises(QueryError, match="already exists"):  # a rerun never doubles the rows
        rescore_parquet(src, dst, LINEAR, as_of=T_US)


# --------------------------------------------------------------- the per-actor callable

def test_the_callable_is_ce_score_and_the_policy_pickles():
    """What each actor runs: the policy pickled across (every family, the article preset),
    then exactly ce.score on each batch; an empty batch gives empty float32 columns."""
    for pol in (PRODUCT, LINEAR, ce.ScoringPolicy(), ce.ScoringPolicy.article_reference()):
        back = pickle.loads(pickle.dumps(pol))
        assert back == pol and back.policy == pol.policy
    t = candidates(5_000, seed=3)
    for pol in (PRODUCT, ce.ScoringPolicy.article_reference()):  # the preset's columns are float64
        fn = _Scorer(**pickle.loads(pickle.dumps({"policy": pol, "as_of_us": T_US, "threads": 2})))
        ref = ce.score(t, as_of=T_US, policy=pol, threads=1)
        assert fn(t).equals(ref)
        empty = fn(t.slice(0, 0))
        assert empty.num_rows == 0 and empty.schema == ref.schema


# ------------------------------------------------------------------------- hostile input

@pytest.mark.slow
@pytest.mark.parametrize("change, kwargs, message", [
    (lambda t: t.drop_columns(["similarity"]), {}, "need a 'similarity' column"),
    (lambda t: t.set_column(1, "similarity", pa.array(["x"] * t.num_rows)), {}, "'similarity' must be numeric"),
    (lambda t: t.drop_columns(["observed_at", "valid_from"]), {}, "'observed_at' \\(or 'valid_from'\\)"),
    (lambda t: t.set_column(6, "fact_type", pa.array(np.zeros(t.num_rows))), {}, "'fact_type' must be strings"),
    (lambda t: t.append_column("score", pa.array(np.zeros(t.num_rows))), {}, "already has a 'score' column"),
    (None, {"as_of": "not a time"}, "as_of"),
    (None, {"as_of": float("nan")}, "as_of"),
    (None, {"policy": ce.Exponential(half_life=3)}, "policy must be a ScoringPolicy, got Exponential"),
    (None, {"policy": {"decay": None}}, "policy must be a ScoringPolicy"),
    (None, {"threads_per_actor": 0}, "threads_per_actor must be an integer"),
    (None, {"threads_per_actor": 1.5}, "threads_per_actor must be an integer"),
    (None, {"threads_per_actor": 64}, "threads_per_actor=64 needs 64 CPUs in one node"),
    (None, {"actors": 0}, "actors must be an integer"),
    (None, {"actors": 3}, "starts with 3 actor"),  # more than the cluster's 2 CPUs: Ray would wait forever
    (None, {"actors": (2, 1)}, "actors \\(max\\) must be an integer in \\[2,"),
    (None, {"actors": (1, 2, 3)}, "a \\(min, max\\) pair"),
    (None, {"batch_size": 0}, "batch_size must be an integer"),
])
def test_bad_arguments_are_query_errors_on_the_driver(local_ray, change, kwargs, message):
    t = candidates(100, seed=4)
    ds = ray.data.from_arrow(change(t) if change else t)
    kw = {"as_of": T_US, "policy": PRODUCT, **kwargs}
    with pytest.raises(QueryError, match=message):
        rescore(ds, **kw)


@pytest.mark.slow
def test_not_a_dataset_and_bad_parquet_arguments(local_ray, tmp_path):
    pq.write_table(candidates(10), tmp_path / "in.parquet")
    with pytest.raises(QueryError, match="dataset must be a ray.data.Dataset, got Table"):
        rescore(candidates(10), as_of=T_US)
    with pytest.raises(QueryError, match="mode must be one of"):
        rescore_parquet(tmp_path, tmp_path / "o", as_of=T_US, mode="ignore")
    with pytest.raises(QueryError, match="src must be a path"):
        rescore_parquet([], tmp_path / "o", as_of=T_US)
    with pytest.raises(QueryError, match="dst must be a path"):
        rescore_parquet(tmp_path, 3, as_of=T_US)
    # the pool must leave a CPU for Ray's file listing, which would otherwise wait forever
    with pytest.raises(QueryError, match="1 left free for Ray's file listing"):
        rescore_parquet(tmp_path, tmp_path / "o", as_of=T_US, threads_per_actor=2)
    assert not os.path.exists(tmp_path / "o")


@pytest.mark.slow
def test_a_bad_value_inside_an_actor_shows_our_message(local_ray):
    """A reliability outside (0, 1] is a value: found by the actor that scores it. The job
    fails (no hang) with Ray's error, whose text carries ours."""
    t = candidates(1_000, seed=5)
    t = t.set_column(5, "reliability", pa.array(np.full(t.num_rows, 1.5, np.float32)))
    with pytest.raises(Exception, match=r"QueryError: column 'reliability', row 0: must be in \(0, 1\]"):
        rescore(ray.data.from_arrow(t), PRODUCT, as_of=T_US).materialize()
