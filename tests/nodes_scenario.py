"""The multi-node scenario of tests/test_distributed_nodes.py, run as a script in a network
namespace of its own (chrono_engine.distributed._nodes.private_network): a Ray head and two
worker nodes started with ``ray start``, a sharded engine with replicas spread over them,
a query load, a node killed under it, a write after it; prints one JSON object of what it saw.

    python tests/nodes_scenario.py WORKDIR [--seconds S] [--clients C]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--seconds", type=float, default=6.0, help="load before and after the kill, each")
    ap.add_argument("--clients", type=int, default=4)
    args = ap.parse_args()
    os.chdir(args.work)  # Ray puts the driver's directory on its workers' path: not the checkout
    import chrono_engine as ce
    from chrono_engine.distributed._nodes import LocalNodes, isolated

    out: dict = {"isolated": isolated()}
    rng = np.random.default_rng(0)
    dim = 16
    policy = ce.DecayPolicy({"news": ce.Exponential(half_life=60)}, default=ce.HalfLife(900))
    n = 3000

    def rows(k, seed):
        r = np.random.default_rng(seed)
        start = np.datetime64("2019-01-01", "us") + r.integers(0, 2000, k).astype("timedelta64[D]")
        return {"vector": r.standard_normal((k, dim)).astype(np.float32), "valid_from": start,
                "valid_to": start + r.integers(30, 1500, k).astype("timedelta64[D]"),
                "stem_id": [f"doc-{int(i)}" for i in r.integers(0, 400, k)],
                "version": [f"1.{i}" for i in range(k)], "fact_type": ["news", "other"] * (k // 2),
                "content": [f"c{seed}-{i}" for i in range(k)], "ingested_at": ["2018-06-01"] * k}

    nodes = LocalNodes(workers=2, cpus=2, object_store_mb=80)
    t0 = time.monotonic()
    nodes.start()
    out["start_s"] = round(time.monotonic() - t0, 2)
    out["nodes"] = nodes.alive()
    sh = None
    try:
        t0 = time.monotonic()
        sh = ce.distributed.ShardedEngine(2, dim, decay=policy, replicas=2, path=os.path.join(args.work, "sh"),
                                          cpus_per_shard=1, timeout=60)
        out["sharded_start_s"] = round(time.monotonic() - t0, 2)
        one = ce.Engine(dim, decay=policy, threads=1)
        for seed in (1, 2):
            b = rows(n // 2, seed)
            assert np.array_equal(sh.ingest(b), one.ingest(b))
        status = sh.status()
        out["spread"] = [len({c["node"] for c in shard}) for shard in status]
        q = rng.standard_normal((8, dim)).astype(np.float32)
        opts = dict(mode="as_of", as_of="2022-03-15", exact=True)
        ref = one.search_batch(q, 10, **opts).column("id").to_pylist()
        new_ref: list = []
        t_ack = [float("inf")]  # when the write after the kill was acknowledged

        # the load: clients searching, each answer compared with one engine's
        stop = threading.Event()
        lat: list[tuple[float, float]] = []  # (start time, seconds)
        failures: list[str] = []
        wrong = [0]

        def client(i: int) -> None:
            while not stop.is_set():
                s = time.monotonic()
                try:
                    got = sh.search_batch(q, 10, **opts).column("id").to_pylist()
                except Exception as e:  # noqa: BLE001 - counted, and reported
                    failures.append(f"{type(e).__name__}: {e}"[:300])
                    continue
                lat.append((s, time.monotonic() - s))
                # a query that began before the write was acknowledged may see it or not;
                # one that began after must see it
                if not (got == new_ref if s >= t_ack[0] else got in (ref, new_ref)):
                    wrong[0] += 1

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(args.clients)]
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        # the node to kill: a worker holding a shard's primary (else a worker holding a copy,
        # and then the primary's process too, as if its machine had died with the node)
        st = sh.status()
        prims = [(i, nodes.index_of(next(c["node"] for c in shard if c["role"] == "primary")))
                 for i, shard in enumerate(st)]
        on_worker = [(i, v) for i, v in prims if v not in (None, 0)]
        if on_worker:
            victim, extra = on_worker[0][1], None
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
        time.sleep(args.seconds)
        # a write after the kill: a dead primary hands writing to a replica
        b = rows(200, 3)
        one_ids = one.ingest(b)
        new_ref[:] = one.search_batch(q, 10, **opts).column("id").to_pylist()
        t_w = time.monotonic()
        ids = sh.ingest(b)
        t_ack[0] = time.monotonic()
        out["write_after_kill_s"] = round(t_ack[0] - t_w, 2)
        out["write_ids_equal"] = bool(np.array_equal(ids, one_ids))
        time.sleep(1.0)
        sh.wait_replicas(timeout=120)
        out["replaced_after_s"] = round(time.monotonic() - t_kill, 2)
        time.sleep(args.seconds / 2)
        stop.set()
        for t in threads:
            t.join(timeout=120)
        before = [d for s, d in lat if s < t_kill]
        during = [d for s, d in lat if t_kill <= s < t_kill + args.seconds]
        out["queries"] = len(lat)
        out["failed"] = len(failures)
        out["failures"] = failures[:5]
        out["wrong"] = wrong[0]
        out["p99_before_ms"] = round(1000 * float(np.percentile(before, 99)), 1) if before else None
        out["p99_during_ms"] = round(1000 * float(np.percentile(during, 99)), 1) if during else None
        out["events"] = [e for _, e in sh.events]
        out["nodes_after"] = nodes.alive()
        final = sh.status()
        out["copies_after"] = [sum(c["alive"] and c["ready"] for c in shard) for shard in final]
        out["spread_after"] = [len({c["node"] for c in shard}) for shard in final]
        for case in (dict(mode="latest", as_of="2024-06-01"), dict(mode="all", as_of="2024-06-01"), opts):
            a = sh.search_batch(q, 10, **case).column("id").to_pylist()
            e = one.search_batch(q, 10, **case).column("id").to_pylist()
            out.setdefault("equal_after", []).append(a == e)
        out["len_equal"] = len(sh) == len(one)
    finally:
        if sh is not None:
            try:
                sh.shutdown()
            except Exception:  # noqa: BLE001
                pass
        nodes.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
