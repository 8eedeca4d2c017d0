"""Beyond one machine on Ray: ``chrono_engine.distributed`` against the same work in one
process, measured side by side in one run (docs/distributed.md).

``rescore``: Ray Data rescoring (:func:`chrono_engine.distributed.rescore`) of ``--rows``
candidates (default 10 M: id, similarity, observed_at, reliability, one of 16 fact types
with exponential half-lives of 14 days to 10 years, as ``bench_score.py``) on a local Ray
instance of ``--cpus`` CPUs (started from an empty directory, object store
``--object-store-mb``), against the fair peer: the same ``map_batches`` pipeline (same
dataset, batch size, actor pool of one-CPU actors, zero-copy batches) with the batch
function a Ray user writes without chrono_engine (``--peers``): ``pandas``
(``batch_format="pandas"``, rates by the categorical's codes), ``numpy``
(``batch_format="numpy"``, rates by a dict over the str objects Ray hands over) and
``arrow`` (NumPy over ``batch_format="pyarrow"`` batches, rates by the dictionary's
indices). Each computes ``ce.score``'s validity and score for the bench policy in float64,
float32 out, with NumPy's exp (:func:`fuse`); their outputs are compared with ``ce.score``'s
(rows differing, max abs / rel / ulp difference), the engine's must equal it bit for bit.
In-process ``ce.score`` on one thread is timed too (not a fair peer for a distributed job:
it has no job to start). Two sources:

* ``from_arrow``: the candidates made with NumPy, put in Ray's object store as blocks of
  ``--batch-size`` rows (not timed: a materialized dataset), rescored and materialized in
  the object store (timed: actor pool start, scheduling, the batch function, the outputs);
  the time inside the actors is read from Ray Data's stats;
* ``parquet``: the candidates written to ``--files`` Parquet files in a temporary directory
  (not timed), then :func:`~chrono_engine.distributed.rescore_parquet` reads, rescores and
  writes Parquet (timed), and each peer the same through ``read_parquet`` / ``write_parquet``
  with the same arguments. Its in-process reference reads, scores and writes the same files
  on one thread (``use_threads=False``).

The pipelines run in alternation, ``--repeat`` rounds, best time kept, each with a fresh
actor pool. Rows/s, rows/s per core (Ray: divided by ``--cpus``) and the ratios are
printed and written as JSON::

    python benches/bench_ray.py rescore --rows 10000000 --cpus 2 --json bench_ray.json

The long job (``--stream-rows N``, ``--rows 0`` to run it alone): ``ray.data.range``
rounded up to whole blocks of ``--batch-size`` rows, each block's candidates made from the
row index by :func:`synth` (``--stream-source synth``; ``repeat`` reads one block in the
object store again and again instead: no source cost), rescored by the engine and by the
``--stream-peers``, consumed on the driver batch by batch; rows/s over the steady state
(after ``--stream-warmup`` s) and per ``--stream-window``, the peak PSS of the driver and
the Ray processes it started, every ``--stream-check-every``-th batch checked against
``ce.score``. ``source`` runs the source alone, to show what it costs::

    python benches/bench_ray.py rescore --rows 0 --stream-rows 200000000 --stream-peers arrow,pandas

``shards``: a :class:`~chrono_engine.distributed.ShardedEngine` of ``--shards`` shards (on
the same machine, ``--cpus`` CPUs shared among them) against one Engine on ``--cpus``
threads, same corpus and queries (``search_batch`` of ``--queries`` queries as of a time
with ~10% in force, default plan and ``exact=True``); the sharded answers are checked
identical to the one engine's under ``exact=True``. It reports the overhead honestly: on
one machine sharding only adds work (the fan-out, Ray's calls, the merge)::

    python benches/bench_ray.py shards --n 100000 --shards 2,4
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import time
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import chrono_engine as ce
from chrono_engine.bench import best_time, machine_info, write_json
from chrono_engine.synthetic import STEEP_HALF_LIVES, US_PER_DAY

T_QUERY = datetime(2025, 6, 1, tzinfo=timezone.utc)
TYPES = [f"type{i:02d}" for i in range(len(STEEP_HALF_LIVES))]


def make_table(n: int, seed: int = 0) -> pa.Table:
    """``n`` candidates observed over the ten years before T_QUERY (Arrow, dictionary fact_type)."""
    rng = np.random.default_rng(seed)
    t_us = int(T_QUERY.timestamp() * 1_000_000)
    return pa.table({
        "id": np.arange(n, dtype=np.int64),
        "similarity": rng.uniform(-0.2, 1.0, n).astype(np.float32),
        "observed_at": pa.array(t_us - rng.integers(0, 3650 * US_PER_DAY, n), pa.int64()).cast(
            pa.timestamp("us", tz="UTC")),
        "reliability": (1.0 - 0.5 * rng.random(n)).astype(np.float32),
        "fact_type": pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(TYPES), n).astype(np.int32)),
                                                    pa.array(TYPES)),
    })


def policy() -> ce.ScoringPolicy:
    return ce.ScoringPolicy(decay=ce.DecayPolicy({t: ce.Exponential(half_life=float(h))
                                                  for t, h in zip(TYPES, STEEP_HALF_LIVES)}))


# --------------------------------------------------------------------------------------
# the peer: the same map_batches pipeline as a Ray user writes it without chrono_engine
# --------------------------------------------------------------------------------------

#: the bench policy's decay rate per fact type, β_j = ln 2 / h_j per day (as Exponential makes it)
RATE_OF = {t: float(np.log(2.0) / float(h)) for t, h in zip(TYPES, STEEP_HALF_LIVES)}


def fuse(sim: np.ndarray, rel: np.ndarray, age_days: np.ndarray, rate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bench policy's formula written in NumPy: V = q · exp(−β_j · max(age, 0)) and
    score = clip(s, 0, 1) · V, in float64 from the float32 inputs, float32 out: ce.score's
    dtype rules and order of operations (docs/scoring.md), np.exp for the kernel's exp."""
    a = np.maximum(age_days, 0.0)
    np.multiply(rate, a, out=a)
    np.negative(a, out=a)
    dec = np.exp(a, out=a)
    v = np.multiply(rel, dec, dtype=np.float64)
    s = np.clip(sim.astype(np.float64), 0.0, 1.0)
    np.multiply(s, v, out=s)
    return v.astype(np.float32), s.astype(np.float32)


class PandasPeer:
    """A pandas batch function (``batch_format="pandas"``): the fact type's rate through the
    categorical's codes (Ray hands a dictionary column over as a categorical), the age by
    pandas' time arithmetic, the rest vectorised in NumPy."""

    def __init__(self, rate_of: dict, as_of: datetime):
        import pandas as pd
        self.rate_of, self.as_of, self.day = rate_of, pd.Timestamp(as_of), pd.Timedelta(days=1)

    def __call__(self, df):
        ft = df["fact_type"].astype("category")  # already one: no copy
        rate = ft.cat.categories.map(self.rate_of).to_numpy(np.float64)[ft.cat.codes.to_numpy()]
        age = ((self.as_of - df["observed_at"]) / self.day).to_numpy(np.float64)
        v, s = fuse(df["similarity"].to_numpy(np.float32), df["reliability"].to_numpy(np.float32), age, rate)
        return df.assign(validity=v, score=s)


class NumpyPeer:
    """A NumPy batch function (``batch_format="numpy"``): Ray hands the dictionary column
    over as an array of str objects, mapped to rates through a dict; the age by NumPy's
    datetime64 arithmetic."""

    def __init__(self, rate_of: dict, as_of: datetime):
        self.rate_of = rate_of
        self.as_of = np.datetime64(as_of.astimezone(timezone.utc).replace(tzinfo=None), "us")

    def __call__(self, batch: dict) -> dict:
        ft = batch["fact_type"]
        rate = np.fromiter(map(self.rate_of.__getitem__, ft), np.float64, len(ft))
        age = (self.as_of - batch["observed_at"]) / np.timedelta64(1, "D")
        v, s = fuse(batch["similarity"], batch["reliability"], age, rate)
        return {**batch, "validity": v, "score": s}


class ArrowPeer:
    """NumPy over Arrow batches (``batch_format="pyarrow"``, rescore's own format): the
    columns as zero-copy NumPy views, the fact type's rate through the dictionary's indices,
    the two new columns appended to the batch. What an expert Ray user writes once the
    numpy format's conversions show up in a profile."""

    def __init__(self, rate_of: dict, as_of: datetime):
        self.rate_of = rate_of
        self.as_of = np.datetime64(as_of.astimezone(timezone.utc).replace(tzinfo=None), "us")

    def __call__(self, t: pa.Table) -> pa.Table:
        ft = t.column("fact_type").combine_chunks()  # one chunk: no copy
        rate = np.array([self.rate_of[x] for x in ft.dictionary.to_pylist()], np.float64)[ft.indices.to_numpy()]
        age = (self.as_of - t.column("observed_at").to_numpy()) / np.timedelta64(1, "D")
        v, s = fuse(t.column("similarity").to_numpy(), t.column("reliability").to_numpy(), age, rate)
        return t.append_column("validity", pa.array(v)).append_column("score", pa.array(s))


class Zeros:
    """Not a peer: a batch function that appends two float32 columns of zeros to the Arrow
    batch, so the pipeline costs what Ray costs per batch with no scoring at all (its
    outputs are not ce.score's and are not compared)."""

    def __call__(self, t: pa.Table) -> pa.Table:
        z = pa.array(np.zeros(t.num_rows, np.float32))
        return t.append_column("validity", z).append_column("score", z)


PEERS = {"arrow": ArrowPeer, "pandas": PandasPeer, "numpy": NumpyPeer, "zeros": Zeros}
FORMATS = {"arrow": "pyarrow", "pandas": "pandas", "numpy": "numpy", "zeros": "pyarrow"}


def peer(ds, fmt: str, batch_size: int, compute):
    """The peer pipeline: rescore's map_batches shape (batch size, actor pool, one CPU per
    actor, zero-copy batches) with a NumPy / pandas batch function instead of ce.score."""
    kw = {} if fmt == "zeros" else {"fn_constructor_kwargs": {"rate_of": RATE_OF, "as_of": T_QUERY}}
    return ds.map_batches(PEERS[fmt], batch_format=FORMATS[fmt], batch_size=batch_size, compute=compute, **kw,
                          num_cpus=1,
                          udf_modifying_row_count=False, zero_copy_batch=True)


def pool(actors, cpus: int):
    """The compute strategy rescore builds (one-CPU actors): ``actors`` fixed, (min, max), or
    by default (1, cpus)."""
    import ray
    lo, hi = (actors if isinstance(actors, tuple) else (actors, actors)) if actors else (1, cpus)
    return ray.data.ActorPoolStrategy(size=lo) if lo == hi else ray.data.ActorPoolStrategy(min_size=lo, max_size=hi)


def compare(got: pa.Table, ref: pa.Table) -> dict:
    """How close ``got``'s validity and score are to ``ref``'s (rows aligned): rows that
    differ in bits, the largest absolute and relative difference, and in float32 ulps."""
    out = {}
    for col in ("validity", "score"):
        a, b = got.column(col).to_numpy(), ref.column(col).to_numpy()
        if a.dtype != b.dtype:
            raise AssertionError(f"column {col!r}: {a.dtype}, ce.score {b.dtype}")
        differ = a.view(np.int32) != b.view(np.int32)
        d = np.abs(a[differ].astype(np.float64) - b[differ].astype(np.float64))
        rb = np.abs(b[differ].astype(np.float64))
        rel = d[rb > 0] / rb[rb > 0]
        ulps = np.abs(a[differ].view(np.int32).astype(np.int64) - b[differ].view(np.int32).astype(np.int64))
        out[col] = {"rows_differ": int(differ.sum()), "max_abs": float(d.max(initial=0.0)),
                    "max_rel": float(rel.max(initial=0.0)), "max_ulp": int(ulps.max(initial=0))}
    out["identical"] = all(out[c]["rows_differ"] == 0 for c in ("validity", "score"))
    return out


def merge_diff(acc: dict | None, d: dict) -> dict:
    """Two compare() results folded into one (counts added, maxima kept)."""
    if acc is None:
        return d
    for col in ("validity", "score"):
        a, b = acc[col], d[col]
        acc[col] = {"rows_differ": a["rows_differ"] + b["rows_differ"], "max_abs": max(a["max_abs"], b["max_abs"]),
                    "max_rel": max(a["max_rel"], b["max_rel"]), "max_ulp": max(a["max_ulp"], b["max_ulp"])}
    acc["identical"] = acc["identical"] and d["identical"]
    return acc


def aligned(got: pa.Table) -> pa.Table:
    """``got``'s rows in id order (Ray may emit blocks in another order)."""
    return got.take(pa.array(np.argsort(got.column("id").to_numpy(), kind="stable")))


def shown_diff(d: dict) -> str:
    if d["identical"]:
        return "identical"
    return "; ".join(f"{c}: {d[c]['rows_differ']:,} rows differ, max abs {d[c]['max_abs']:.3g}, "
                     f"rel {d[c]['max_rel']:.3g}, {d[c]['max_ulp']} ulp" for c in ("validity", "score"))


@contextlib.contextmanager
def local_ray(cpus: int, object_store_mb: int):
    """A local Ray instance started from an empty directory (Ray puts the driver's working
    directory on its workers' sys.path), stopped on the way out."""
    import ray
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="bench_ray_cwd_") as cwd:
        os.chdir(cwd)
        try:
            ray.init(num_cpus=cpus, object_store_memory=object_store_mb << 20, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        finally:
            os.chdir(here)
        try:
            ray.data.DataContext.get_current().enable_progress_bars = False
            yield ray
        finally:
            ray.shutdown()


def run_rescore(args) -> dict:
    """The ``rescore`` subcommand: Ray Data rescoring against the same map_batches pipeline
    with a NumPy / pandas batch function (the fair peer), and against in-process ce.score."""
    from chrono_engine.distributed import rescore, rescore_parquet

    import ray
    pol, n = policy(), args.rows
    report: dict = {"benchmark": "ray_rescore", "rows": n, "cpus": args.cpus, "batch_size": args.batch_size,
                    "object_store_mb": args.object_store_mb, "peers": args.peers,
                    "machine": machine_info(), "ray": ray.__version__, "results": {}, "checks": {}, "notes": []}
    res, checks = report["results"], report["checks"]
    with local_ray(args.cpus, args.object_store_mb):
        if n:
            run_fixed(args, pol, report, rescore, rescore_parquet)
        if args.stream_rows:
            report["stream"] = stream = {}
            for _ in range(args.stream_repeat):  # the pipelines in alternation; the best steady state kept
                for k in ["source", "engine", *args.stream_peers]:
                    r = run_stream(args, pol, k)
                    old = stream.get(k)
                    runs = (old["steady_runs"] if old else []) + [r.get("steady_rows_per_s")]
                    if old is None or (r.get("steady_rows_per_s") or 0) > (old.get("steady_rows_per_s") or 0):
                        if old is not None:  # every sampled batch of every round counts in the check
                            r["check"] = merge_diff(old["check"], r["check"]) if r["check"] else None
                        stream[k] = r
                    elif r["check"]:
                        old["check"] = merge_diff(old["check"], r["check"])
                    stream[k]["steady_runs"] = runs

    for r in res.values():
        r["rows_per_s_per_core"] = r["rows_per_s"] / r["cores"]
    ratios = report["ratios"] = {}
    for src in ("from_arrow", "parquet"):
        eng = res.get(f"ray.{src}")
        for p in args.peers:
            if eng and f"peer.{p}.{src}" in res:
                ratios[f"ray.{src} / peer.{p}.{src} (per core)"] = (
                    eng["rows_per_s_per_core"] / res[f"peer.{p}.{src}"]["rows_per_s_per_core"])
            if f"ray.{src} in actors" in res and f"peer.{p}.{src} in actors" in res:
                ratios[f"ray.{src} / peer.{p}.{src} in actors (per core)"] = (
                    res[f"ray.{src} in actors"]["rows_per_s_per_core"]
                    / res[f"peer.{p}.{src} in actors"]["rows_per_s_per_core"])
    if "ce.score" in res:
        one = res["ce.score"]["rows_per_s_per_core"]
        for k in ("ray.from_arrow", "ray.from_arrow in actors"):
            if k in res:
                ratios[f"{k} / ce.score (per core)"] = res[k]["rows_per_s_per_core"] / one
    st = report.get("stream", {})
    for p in args.stream_peers:
        if p in st and st["engine"].get("steady_rows_per_s") and st[p].get("steady_rows_per_s"):
            ratios[f"stream engine / stream {p} (steady state)"] = (st["engine"]["steady_rows_per_s"]
                                                                    / st[p]["steady_rows_per_s"])

    if res:
        print(f"\n{'run':<30}{'cores':>6}{'seconds':>10}{'rows/s':>16}{'rows/s per core':>18}")
        for k, r in res.items():
            print(f"{k:<30}{r['cores']:>6}{r['seconds']:>10.3f}{r['rows_per_s']:>16,.0f}"
                  f"{r['rows_per_s_per_core']:>18,.0f}")
    for k, c in checks.items():
        print(f"check {k}: {shown_diff(c)}")
    for k, s in st.items():
        print(f"stream {k}: {s['rows']:,} rows in {s['seconds']:.1f} s (first batch at {s['first_batch_s'] or 0:.1f} s); steady state (after {args.stream_warmup:g} s) "
              f"{s.get('steady_rows_per_s') or 0:,.0f} rows/s ({(s.get('steady_rows_per_s') or 0) / args.cpus:,.0f} "
              f"per core), windows of {args.stream_window:g} s: {s.get('window_rows_per_s_min') or 0:,.0f} to "
              f"{s.get('window_rows_per_s_max') or 0:,.0f}; peak PSS of Ray and the driver {s['peak_pss_mb']:,.0f} MB"
              + (f"; sampled batches vs ce.score: {shown_diff(s['check'])}" if s["check"] else ""))
    print("\nratios (same run): " + ", ".join(f"{k} = {v:.2f}" for k, v in ratios.items()))
    for note in report["notes"]:
        print(f"note: {note}")
    if args.json:
        print(f"JSON written to {write_json(args.json, report)}")
    return report


def run_fixed(args, pol, report, rescore, rescore_parquet) -> None:
    """``--rows`` candidates, Ray Data rescoring and each peer in alternation, best of
    ``--repeat``, from ``from_arrow`` blocks and from Parquet."""
    import ray
    n, res, checks = args.rows, report["results"], report["checks"]
    t0 = time.perf_counter()
    table = make_table(n, args.seed)
    print(f"{n:,} candidates, 16 fact types with exponential half-lives (made in {time.perf_counter() - t0:.1f} s); "
          f"Ray with {args.cpus} CPUs, batches of {args.batch_size:,} rows; peers: {', '.join(args.peers) or 'none'}",
          flush=True)
    s, ref = best_time(lambda: ce.score(table, as_of=T_QUERY, policy=pol, threads=1), args.min_time, args.repeat)
    res["ce.score"] = {"seconds": s, "rows_per_s": n / s, "cores": 1}
    kw = {"as_of": T_QUERY, "batch_size": args.batch_size}
    if args.actors:
        kw["actors"] = args.actors
    compute = pool(args.actors, args.cpus)
    step = max(1, args.batch_size)

    def alternate(src: str, runs: dict) -> None:
        """Each pipeline once per round, ``--repeat`` rounds (the machine's noise spread
        over all of them); best time kept, in-actor time from Ray's stats, outputs checked."""
        best: dict = {}
        for _ in range(args.repeat):
            for name, (job, stage) in runs.items():
                t1 = time.perf_counter()
                out = job()
                dt = time.perf_counter() - t1
                if name not in best and name != "peer.zeros":  # outputs checked once per pipeline
                    got = aligned(out() if callable(out) else out)
                    checks[f"{name}.{src}"] = compare(got, ref)
                    if name == "ray" and not checks[f"{name}.{src}"]["identical"]:
                        raise AssertionError(f"{name}.{src}: not ce.score's output bit for bit")
                    del got
                b = best.setdefault(name, {"seconds": float("inf"), "busy": None})
                if dt < b["seconds"]:
                    b["seconds"] = dt
                busy = actor_seconds(stage(), stage_name(name)) if stage else None
                if busy is not None and (b["busy"] is None or busy < b["busy"]):
                    b["busy"] = busy
                print(f"  {name}.{src}: {dt:.2f} s" + (f" ({busy:.2f} s in the actors)" if busy else ""), flush=True)
                out = None
        for name, b in best.items():
            res[f"{name}.{src}"] = {"seconds": b["seconds"], "rows_per_s": n / b["seconds"], "cores": args.cpus}
            if b["busy"]:  # the actors' own time: what a job long enough to hide the start converges to
                res[f"{name}.{src} in actors"] = {"seconds": b["busy"], "rows_per_s": n / b["busy"], "cores": 1}
            elif runs[name][1] is not None:
                report["notes"].append(f"Ray's stats name no remote wall time for {name}.{src}: in-actor rate skipped")

    ds = ray.data.from_arrow([table.slice(i, step) for i in range(0, n, step)] or [table])
    last: dict = {}

    def materialized(make):
        def job():
            last["out"] = make().materialize()
            return lambda: pa.concat_tables(ray.get(list(last["out"].to_arrow_refs())))
        return job, lambda: last["out"].stats()
    runs = {"ray": materialized(lambda: rescore(ds, pol, **kw))}
    for p in args.peers:
        runs[f"peer.{p}"] = materialized(lambda p=p: peer(ds, p, args.batch_size, compute))
    alternate("from_arrow", runs)
    ds = last["out"] = None  # free the object store before the Parquet run

    if not args.files:
        return
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as tmp:
        src, per = os.path.join(tmp, "in"), -(-n // args.files)
        os.makedirs(src)
        for i in range(args.files):
            pq.write_table(table.slice(i * per, per), os.path.join(src, f"part-{i:04d}.parquet"))

        def in_process():
            t = pq.read_table(src, use_threads=False)
            pq.write_table(ce.score(t, as_of=T_QUERY, policy=pol, threads=1), os.path.join(tmp, "one.parquet"))
        s, _ = best_time(in_process, 0.0, args.repeat)
        res["in-process parquet"] = {"seconds": s, "rows_per_s": n / s, "cores": 1}

        def written(name, make):
            dst = os.path.join(tmp, name)

            def job():
                rows = make(dst)
                if rows != n:
                    raise AssertionError(f"{name}.parquet: {rows:,} rows written, {n:,} read")
                return lambda: pq.read_table(dst)
            return job, None

        def peer_parquet(p, dst) -> int:
            ds = ray.data.read_parquet(src, num_cpus=0)  # read and written as rescore_parquet does
            peer(ds, p, args.batch_size, compute).write_parquet(dst, mode="overwrite",
                                                                ray_remote_args={"num_cpus": 0})
            return sum(pq.read_metadata(os.path.join(dst, f)).num_rows for f in os.listdir(dst)
                       if f.endswith(".parquet"))
        runs = {"ray": written("ray", lambda dst: rescore_parquet(src, dst, pol, mode="overwrite", **kw))}
        for p in args.peers:
            runs[f"peer.{p}"] = written(f"peer.{p}", lambda dst, p=p: peer_parquet(p, dst))
        alternate("parquet", runs)


# --------------------------------------------------------------------------------------
# the long job: --stream-rows candidates made lazily from the row index, streamed
# --------------------------------------------------------------------------------------

def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 (wrapping): a row index to 64 well-mixed bits."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def synth(batch: pa.Table) -> pa.Table:
    """Candidates of ``make_table``'s kinds made from ``ray.data.range``'s ``id`` alone
    (deterministic: a row is the same whatever block it lands in): similarity in
    [−0.2, 1), reliability in (0.5, 1], one of the 16 fact types, observed over the ten
    years before T_QUERY."""
    ids = batch.column("id")
    i = ids.to_numpy() if isinstance(ids, pa.Array) else ids.combine_chunks().to_numpy()
    h = _mix(i.view(np.uint64) + np.uint64(0x9E3779B97F4A7C15))
    g = h * np.uint64(0x9E3779B97F4A7C15)  # a second, cheap stream of bits for the age
    t_us = int(T_QUERY.timestamp() * 1_000_000)
    age_us = ((g >> np.uint64(11)).astype(np.float64) * (3650 * US_PER_DAY / 2.0**53)).astype(np.int64)
    return pa.table({
        "id": i,
        "similarity": (h >> np.uint64(40)).astype(np.float32) * np.float32(1.2 / 2**24) - np.float32(0.2),
        "observed_at": pa.array(t_us - age_us, pa.timestamp("us", tz="UTC")),
        "reliability": np.float32(1.0) - ((h >> np.uint64(16)) & np.uint64(0xFFFFFF)).astype(np.float32)
        * np.float32(0.5 / 2**24),
        "fact_type": pa.DictionaryArray.from_arrays(pa.array((h & np.uint64(15)).astype(np.int32)), pa.array(TYPES)),
    })


def _pss_mb(root: int) -> float:
    """Proportional set size (MB) of ``root`` and its descendants (the driver and the Ray
    processes it started: GCS, raylet, workers; object store pages they map are counted
    once, shared among them)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    total, todo, seen = 0, [root], set()
    while todo and len(seen) < 10_000:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(kids.get(pid, ()))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return total / 1024


def run_stream(args, pol, kind: str) -> dict:
    """One long job: ``ray.data.range(--stream-rows)`` → ``synth`` (tasks) → rescore
    (``kind`` "engine") or a peer → consumed on the driver batch by batch, each batch's
    arrival time and rows recorded; every ``--stream-check-every``-th batch checked against
    ce.score on its own input columns; the job stops at ``--stream-max-s`` (then counted as
    far as it got). Steady state: rows/s from the first batch after ``--stream-warmup`` s
    to the last one, and per ``--stream-window`` windows."""
    import ray
    from chrono_engine.distributed import rescore
    bs = args.batch_size
    blocks = -(-args.stream_rows // bs)
    n = blocks * bs  # whole blocks of one batch each: no batch spans two blocks (a copy)
    if args.stream_source == "synth":
        ds = ray.data.range(n, override_num_blocks=blocks).map_batches(
            synth, batch_format="pyarrow", batch_size=None, zero_copy_batch=True, udf_modifying_row_count=False)
    else:  # one block of make_table's rows put once, read `blocks` times: a source that costs nothing
        ds = ray.data.from_arrow_refs([ray.put(make_table(bs, args.seed))] * blocks)
    if kind == "source":  # the source alone: what it costs the pipelines
        out = ds
    elif kind == "engine":
        out = rescore(ds, pol, as_of=T_QUERY, batch_size=bs, **({"actors": args.actors} if args.actors else {}))
    else:
        out = peer(ds, kind, bs, pool(args.actors, args.cpus))
    print(f"stream {kind}: {n:,} rows ({args.stream_source}), batches of {bs:,}", flush=True)
    marks, check, rows, peak, next_mem = [], None, 0, 0.0, 0.0
    t0 = time.perf_counter()
    for k, b in enumerate(out.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=1)):
        now = time.perf_counter() - t0
        rows += b.num_rows
        marks.append((now, rows))
        if k % args.stream_check_every == 0 and kind not in ("source", "zeros"):
            ref = ce.score(b.drop_columns(["validity", "score"]), as_of=T_QUERY, policy=pol)
            check = merge_diff(check, compare(b, ref))
            if kind == "engine" and not check["identical"]:
                raise AssertionError(f"stream engine, batch {k}: not ce.score's output bit for bit")
        if now >= next_mem:
            peak, next_mem = max(peak, _pss_mb(os.getpid())), now + 2.0
        if now > args.stream_max_s:
            print(f"  stopped at {args.stream_max_s:g} s, {rows:,} rows", flush=True)
            break
        if k % 50 == 0:
            print(f"  {now:7.1f} s {rows:>14,} rows", flush=True)
    b = None
    total = time.perf_counter() - t0
    r = {"rows": rows, "seconds": total, "rows_per_s": rows / total, "peak_pss_mb": peak, "check": check,
         "batches": len(marks), "completed": rows == n, "first_batch_s": marks[0][0] if marks else None}
    steady = [m for m in marks if m[0] >= args.stream_warmup]
    if len(steady) >= 2 and steady[-1][0] > steady[0][0]:
        r["steady_rows_per_s"] = (steady[-1][1] - steady[0][1]) / (steady[-1][0] - steady[0][0])
        r["steady_seconds"] = steady[-1][0] - steady[0][0]
        w, rates = steady[0][0], []
        j = 0
        while w + args.stream_window <= steady[-1][0] and len(rates) < 100_000:
            # rows counted between the last batches at or before each window's ends
            while j + 1 < len(steady) and steady[j + 1][0] <= w:
                j += 1
            k2 = j
            while k2 + 1 < len(steady) and steady[k2 + 1][0] <= w + args.stream_window:
                k2 += 1
            rates.append((steady[k2][1] - steady[j][1]) / args.stream_window)
            w += args.stream_window
        if rates:
            r["window_rows_per_s_min"], r["window_rows_per_s_max"] = min(rates), max(rates)
            r["window_rows_per_s_median"] = float(np.median(rates))
    stats = out.stats()
    if args.stats:
        print(stats, flush=True)
    busy = None if kind == "source" else actor_seconds(stats, stage_name("ray" if kind == "engine" else f"peer.{kind}"))
    if busy:  # the fused synth -> scoring operator's remote wall time
        r["in_actors_rows_per_s"] = rows / busy
    print(f"  done: {rows:,} rows in {total:.1f} s; steady {r.get('steady_rows_per_s', 0):,.0f} rows/s", flush=True)
    return r


def stage_name(name: str) -> str:
    """The map_batches operator of a pipeline in Ray Data's stats (in the long job, fused
    behind the source's: ``MapBatches(synth)->MapBatches(_Scorer)``)."""
    return {"ray": "_Scorer", **{f"peer.{k}": c.__name__ for k, c in PEERS.items()}}[name]


# --------------------------------------------------------------------------------------
# shards: a ShardedEngine's search_batch against one Engine on the same machine
# --------------------------------------------------------------------------------------

def run_shards(args) -> dict:
    """Sharded ``search_batch`` QPS against one Engine on the same data and queries, both
    in this run: the synthetic steep corpus (``chrono_engine.synthetic``), ``--queries``
    queries as of a time with ~10% in force; the sharded answers must equal the single
    engine's (exact=True, checked) and both are timed with the default plan too."""
    import ray

    import chrono_engine as ce
    from chrono_engine import synthetic as syn
    from chrono_engine.bench.corpus import policy_for

    corpus = syn.make_corpus(args.n, args.dim, half_lives=syn.STEEP_HALF_LIVES, seed=0)
    data, pol = corpus.to_dict(), policy_for(corpus.half_lives)
    q = corpus.queries(args.queries, seed=1)
    T = syn.times_for_selectivity(corpus, 0.1, args.queries, seed=2)
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    out = {"machine": machine_info(), "n": args.n, "dim": args.dim, "queries": args.queries, "cpus": args.cpus,
           "rows": []}
    try:
        ref = None

        def measure(name, eng):
            nonlocal ref
            got = eng.search_batch(q, 10, mode="as_of", as_of=T, exact=True)
            if ref is None:
                ref = got
            same = got.column("id").to_pylist() == ref.column("id").to_pylist()
            row = {"engine": name, "identical_exact": same}
            for label, kw in (("default", {}), ("exact", {"exact": True})):
                best = float("inf")
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    eng.search_batch(q, 10, mode="as_of", as_of=T, **kw)
                    best = min(best, time.perf_counter() - t0)
                row[f"{label}_qps"] = args.queries / best
            out["rows"].append(row)
            print(f"{name:>10}: default {row['default_qps']:,.0f} QPS, exact {row['exact_qps']:,.0f} QPS, "
                  f"identical to one engine (exact): {same}", flush=True)

        one = ce.Engine(args.dim, decay=pol, threads=args.cpus)
        t0 = time.perf_counter()
        one.ingest(data)
        out["single_ingest_s"] = time.perf_counter() - t0
        measure("one Engine", one)
        del one
        for n in args.shards:  # one sharded engine at a time: each holds the machine's CPUs
            sh = ce.distributed.ShardedEngine(n, args.dim, decay=pol, cpus_per_shard=args.cpus / n,
                                              threads=max(1, args.cpus // n))
            t0 = time.perf_counter()
            sh.ingest(data)
            out[f"shards{n}_ingest_s"] = time.perf_counter() - t0
            measure(f"{n} shards", sh)
            sh.shutdown()
        base = out["rows"][0]
        for row in out["rows"][1:]:
            row["default_vs_single"] = row["default_qps"] / base["default_qps"]
            row["exact_vs_single"] = row["exact_qps"] / base["exact_qps"]
            print(f"{row['engine']}: {row['default_vs_single']:.2f}x / {row['exact_vs_single']:.2f}x one engine's QPS "
                  f"(default / exact; same machine, {args.cpus} CPUs)")
    finally:
        ray.shutdown()
    if args.json:
        print(f"JSON written to {write_json(args.json, out)}")
    return out


def actor_seconds(stats: str, op: str = "_Scorer") -> float | None:
    """Total remote wall time of a map_batches operator's tasks (reading each block from
    the object store, converting it to the batch format, the batch function, converting and
    writing its output) in Ray Data's stats text, or None."""
    m = re.search(rf"MapBatches\({re.escape(op)}\)[^\n]*\n\* Remote wall time:[^\n]*?([\d.]+)(us|ms|s) total", stats)
    return None if m is None else float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def _pool(s: str):
    lo, _, hi = s.partition(",")
    return (int(lo), int(hi)) if hi else int(lo)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rescore", help="Ray Data rescoring vs in-process ce.score",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    r.add_argument("--rows", type=int, default=10_000_000, help="candidates (0: skip the fixed-size runs)")
    r.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    r.add_argument("--actors", type=_pool, default=None,
                   help="actor pool: N (fixed) or MIN,MAX (default: rescore's, 1 to --cpus)")
    r.add_argument("--batch-size", type=int, default=1 << 19, help="rows per block and per ce.score call")
    r.add_argument("--files", type=int, default=8, help="Parquet files for the parquet run (0: skip it)")
    r.add_argument("--repeat", type=int, default=2, help="runs per timing (best counts)")
    r.add_argument("--min-time", type=float, default=0.5, help="in-process: stop repeating after this many seconds")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--peers", type=lambda s: [p for p in s.split(",") if p], default=["arrow", "pandas", "numpy"],
                   help="peer batch functions, comma-separated: arrow (NumPy on Arrow batches), pandas, numpy; "
                        "zeros (no scoring: Ray's own cost) ('' = none)")
    r.add_argument("--stream-peers", type=lambda s: [p for p in s.split(",") if p], default=["arrow", "pandas"],
                   help="the peers run in the long job ('' = none)")
    r.add_argument("--object-store-mb", type=int, default=2048, help="Ray's object store (MB)")
    r.add_argument("--stream-rows", type=int, default=0,
                   help="the long job: rows made lazily from ray.data.range and streamed (0: skip it)")
    r.add_argument("--stream-repeat", type=int, default=1, help="long job: rounds of all its pipelines (best counts)")
    r.add_argument("--stream-source", choices=("synth", "repeat"), default="synth",
                   help="long job: rows made from ray.data.range's index by synth() in the pipeline, or one "
                        "block of --batch-size rows in the object store read again and again (no source cost)")
    r.add_argument("--stream-warmup", type=float, default=5.0, help="long job: seconds left out of the steady state")
    r.add_argument("--stream-window", type=float, default=2.0, help="long job: seconds per throughput window")
    r.add_argument("--stream-check-every", type=int, default=16, help="long job: check every k-th batch")
    r.add_argument("--stream-max-s", type=float, default=900.0, help="long job: stop each pipeline after this long")
    r.add_argument("--stats", action="store_true", help="long job: print Ray Data's stats of each pipeline")
    r.add_argument("--json", default="bench_out/bench_ray_rescore.json", help="JSON report ('' = nowhere)")
    r.set_defaults(run=run_rescore)
    h = sub.add_parser("shards", help="ShardedEngine search_batch vs one Engine",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    h.add_argument("--n", type=int, default=100_000, help="items (the steep synthetic corpus)")
    h.add_argument("--dim", type=int, default=384)
    h.add_argument("--queries", type=int, default=1000)
    h.add_argument("--shards", type=lambda s: [int(x) for x in s.split(",")], default=[2, 4],
                   help="shard counts, comma-separated")
    h.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance (and the one engine's threads)")
    h.add_argument("--repeat", type=int, default=3, help="runs per timing (best counts)")
    h.add_argument("--json", default="bench_out/bench_ray_shards.json", help="JSON report ('' = nowhere)")
    h.set_defaults(run=run_shards)
    args = p.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
