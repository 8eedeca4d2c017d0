"""A node killed under a query load: the sharded engine's replicas on a real multi-node Ray
cluster on this machine (docs/distributed.md, "Replicas").

A head and ``--workers`` worker nodes, each started with ``ray start`` as its own process
group with its own CPUs and object store (chrono_engine.distributed._nodes), in a network
namespace whose only interface is loopback (the script re-runs itself there with
``unshare --net``; root or user namespaces needed). A ShardedEngine of ``--shards`` shards
with ``--replicas`` copies each (placement groups spread them over the nodes; the stores in
a folder every node reaches: here the machine's disk), ``--n`` items; ``--clients`` threads
each sending one query per call for ``--seconds``; at a quarter of the run, a worker node
holding a primary is killed with SIGKILL (its raylet, object store and workers), and a write
follows (the dead primary hands writing to a replica). Every answer is compared with one
Engine's on the same data (a query that began before the write was acknowledged may see it
or not; one that began after must). Reported: queries, failed queries, wrong answers, QPS
and p50 / p99 latency before the kill, while a replacement was missing, and after; the time
from the kill until every shard has all its copies serving again; the write's time; the
events (deaths, promotion, replacements).

    python benches/bench_failover.py --clients 64 --seconds 60          # the issue's run
    python benches/bench_failover.py --clients 4 --seconds 6 --n 3000   # tests' short pass

Prints a table and one JSON line (``--json FILE`` writes it too).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np

from chrono_engine.bench import write_json


def _rows(k: int, seed: int, dim: int) -> dict:
    r = np.random.default_rng(seed)
    start = np.datetime64("2019-01-01", "us") + r.integers(0, 2000, k).astype("timedelta64[D]")
    return {"vector": r.standard_normal((k, dim)).astype(np.float32), "valid_from": start,
            "valid_to": start + r.integers(30, 1500, k).astype("timedelta64[D]"),
            "stem_id": [f"doc-{int(i)}" for i in r.integers(0, max(1, k // 8), k)],
            "version": [f"1.{i % 60000}" for i in range(k)], "fact_type": ["news", "other"] * (k // 2) + ["news"] * (k % 2),
            "content": [f"c{seed}-{i}" for i in range(k)], "ingested_at": ["2018-06-01"] * k}


def _pct(xs: list, p: float) -> float | None:
    return round(1000 * float(np.percentile(xs, p)), 1) if xs else None


def run(args: argparse.Namespace) -> dict:
    import chrono_engine as ce
    from chrono_engine.distributed._nodes import LocalNodes, isolated

    work = args.work or tempfile.mkdtemp(prefix="chrono-failover-")
    os.chdir(work)  # Ray puts the driver's directory on its workers' path: not a checkout
    out: dict = {"isolated": isolated(), "shards": args.shards, "replicas": args.replicas, "n": args.n,
                 "clients": args.clients, "seconds": args.seconds}
    dim = args.dim
    policy = ce.DecayPolicy({"news": ce.Exponential(half_life=60)}, default=ce.HalfLife(900))
    nodes = LocalNodes(workers=args.workers, cpus=args.cpus, object_store_mb=args.object_store_mb)
    t0 = time.monotonic()
    nodes.start()
    out["start_s"] = round(time.monotonic() - t0, 2)
    out["nodes"] = nodes.alive()
    sh = None
    try:
        t0 = time.monotonic()
        sh = ce.distributed.ShardedEngine(args.shards, dim, decay=policy, replicas=args.replicas,
                                          path=os.path.join(work, "sh"), cpus_per_shard=1, timeout=60)
        out["sharded_start_s"] = round(time.monotonic() - t0, 2)
        one = ce.Engine(dim, decay=policy, threads=1)
        for seed, part in enumerate(np.array_split(np.arange(args.n), max(1, args.n // 50_000))):
            b = _rows(len(part), seed + 1, dim)
            assert np.array_equal(sh.ingest(b), one.ingest(b))
        sh.checkpoint()  # a copy started later loads the snapshot instead of replaying the bulk load
        out["spread"] = [len({c["node"] for c in shard}) for shard in sh.status()]
        rng = np.random.default_rng(0)
        pool = rng.standard_normal((64, dim)).astype(np.float32)
        opts = dict(mode="as_of", as_of="2022-03-15", exact=True)
        refs = [one.search(pool[i], 10, **opts).column("id").to_pylist() for i in range(len(pool))]
        new_refs: list = [None] * len(pool)
        t_ack = [float("inf")]

        stop = threading.Event()
        lat: list[tuple[float, float]] = []
        failures: list[str] = []
        wrong = [0]

        def client(i: int) -> None:
            j = i % len(pool)
            while not stop.is_set():
                s = time.monotonic()
                try:
                    got = sh.search(pool[j], 10, **opts).column("id").to_pylist()
                except Exception as e:  # noqa: BLE001 - counted and reported
                    failures.append(f"{type(e).__name__}: {e}"[:300])
                    time.sleep(0.01)
                    continue
                lat.append((s, time.monotonic() - s))
                ok = got == new_refs[j] if s >= t_ack[0] else got in (refs[j], new_refs[j])
                if not ok:
                    wrong[0] += 1

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(args.clients)]
        t_start = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(args.seconds / 4)
        # a worker node holding a primary (else one holding a copy, and that primary's process too)
        st = sh.status()
        prims = [nodes.index_of(next(c["node"] for c in shard if c["role"] == "primary")) for shard in st]
        workers = [v for v in prims if v not in (None, 0)]
        extra = None
        if workers:
            victim = workers[0]
        else:
            victim = next(nodes.index_of(c["node"]) for shard in st for c in shard
                          if nodes.index_of(c["node"]) not in (None, 0))
            extra = 0
        out["killed_node"] = victim
        out["killed_primary_actor_too"] = extra is not None
        t_kill = time.monotonic()
        nodes.kill(victim)
        if extra is not None:
            import ray
            ray.kill(sh._primary_member(extra).actor)
        time.sleep(min(2.0, args.seconds / 8))
        b = _rows(200, 999, dim)
        one.ingest(b)
        new_refs[:] = [one.search(pool[i], 10, **opts).column("id").to_pylist() for i in range(len(pool))]
        t_w = time.monotonic()
        ids = sh.ingest(b)
        t_ack[0] = time.monotonic()
        out["write_after_kill_s"] = round(t_ack[0] - t_w, 3)
        out["write_ids_equal"] = bool(np.array_equal(np.sort(ids), np.sort(one.columns()["id"][-200:])))
        sh.wait_replicas(timeout=max(120.0, args.seconds))
        t_back = time.monotonic()
        out["replaced_after_s"] = round(t_back - t_kill, 2)
        rest = args.seconds - (time.monotonic() - t_start)
        if rest > 0:
            time.sleep(rest)
        stop.set()
        for t in threads:
            t.join(timeout=120)
        t_end = time.monotonic()
        phases = {"before": (t_start, t_kill), "during": (t_kill, t_back), "after": (t_back, t_end)}
        out["queries"] = len(lat)
        out["failed"] = len(failures)
        out["failures"] = failures[:5]
        out["wrong"] = wrong[0]
        for name, (a, z) in phases.items():
            xs = [d for s, d in lat if a <= s < z]
            out[f"qps_{name}"] = round(len(xs) / max(z - a, 1e-9), 1)
            out[f"p50_{name}_ms"], out[f"p99_{name}_ms"] = _pct(xs, 50), _pct(xs, 99)
        out["events"] = [e for _, e in sh.events]
        out["nodes_after"] = nodes.alive()
        final = sh.status()
        out["copies_after"] = [sum(c["alive"] and c["ready"] for c in shard) for shard in final]
        out["spread_after"] = [len({c["node"] for c in shard}) for shard in final]
        q = pool[:8]
        out["equal_after"] = []
        for case in (dict(mode="latest", as_of="2024-06-01"), dict(mode="all", as_of="2024-06-01"), opts):
            a = sh.search_batch(q, 10, **case).column("id").to_pylist()
            e = one.search_batch(q, 10, **case).column("id").to_pylist()
            out["equal_after"].append(a == e)
        out["len_equal"] = len(sh) == len(one)
    finally:
        if sh is not None:
            try:
                sh.shutdown()
            except Exception:  # noqa: BLE001
                pass
        nodes.stop()
    return out


def main(argv: list[str] | None = None) -> dict | None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--work", default=None, help="folder for the stores (default: a new temporary one)")
    ap.add_argument("--seconds", type=float, default=60.0, help="length of the query load")
    ap.add_argument("--clients", type=int, default=64, help="threads, one query per call each")
    ap.add_argument("--n", type=int, default=100_000, help="items")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2, help="worker nodes beside the head")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs each node offers Ray")
    ap.add_argument("--object-store-mb", type=int, default=100)
    ap.add_argument("--json", default="", help="also write the JSON report here")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    from chrono_engine.distributed._nodes import isolated, private_network
    if not args.inside and not isolated():  # run again in a loopback-only network namespace
        argv = list(sys.argv[1:] if argv is None else argv)
        r = private_network([sys.executable, os.path.abspath(__file__), *argv, "--inside"],
                            timeout=args.seconds + 900)
        sys.stderr.write(r.stderr[-4000:] if r.returncode else "")
        sys.stdout.write(r.stdout)
        if r.returncode:
            raise SystemExit(r.returncode)
        return None
    out = run(args)
    rows = [("queries / failed / wrong", f"{out['queries']} / {out['failed']} / {out['wrong']}")]
    for name in ("before", "during", "after"):
        rows.append((f"QPS, p50 / p99 ms {name}",
                     f"{out[f'qps_{name}']}, {out[f'p50_{name}_ms']} / {out[f'p99_{name}_ms']}"))
    rows += [("killed node (held a primary)", f"{out['killed_node']} ({not out['killed_primary_actor_too']})"),
             ("write after the kill", f"{out['write_after_kill_s']} s"),
             ("every copy serving again after", f"{out['replaced_after_s']} s"),
             ("answers equal to one Engine after", str(all(out["equal_after"]) and out["len_equal"]))]
    for k, v in rows:
        print(f"{k:40s} {v}", file=sys.stderr)
    print(json.dumps(out))
    if args.json:
        write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
