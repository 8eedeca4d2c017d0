#!/usr/bin/env python3
"""Fuzz the service's request bodies over real HTTP on loopback, for a bounded time.

A ``chrono serve`` process is started on a small store (127.0.0.1, a keys file, the
default limits but ``--timeout``), and for ``--seconds`` every endpoint is sent bodies made
from a valid seed body by random mutations: a value replaced by a hostile one (booleans,
nulls, NaN-like strings, huge or negative numbers, deep nesting, long strings, lists of
10 to 100,000 items, objects of many keys), a key added or dropped, a list grown, or the
JSON text itself cut, flipped or doubled; some as raw bytes, some as Arrow IPC streams.
Meanwhile a watcher asks ``/livez`` every 0.2 s.

Findings (exit status 1): any 5xx answer but a 504 (a request past ``--timeout``, the
service's designed answer, counted); a connection the server dropped; ``/livez``
waiting longer than ``--timeout`` + 1 s (a request held the event loop); the server's
resident memory past ``--max-rss-mb``; the server dying. The requests are bounded in count
(``--max-requests``) and time, and every one goes to 127.0.0.1.

    python scripts/fuzz_http.py --seconds 60          # the pass CI runs
    python scripts/fuzz_http.py --seconds 1800 --seed 7
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

DIM = 8
KEY = "fuzz-admin-key-0123456789"
C = "/v1/collections/s"

HOSTILE = [True, False, None, "", "x" * 10_000, "NaN", "Infinity", "-1e400", -1, 0, 2**63, -2**63, 2**64,
           1e308, -1e308, 0.5, [], {}, [[[[[[[[[[[]]]]]]]]]]], {"a": {"b": {"c": {"d": {}}}}},
           "2024-13-45", "上个月", "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
           "../../etc/passwd", "snap-" + "0" * 32]

SMALL = [v for v in HOSTILE if len(json.dumps(v)) < 40]


def seeds(now: str) -> dict[str, dict]:
    vec = [0.1 * (i + 1) for i in range(DIM)]
    row = {"vector": vec, "valid_from": "2024-01-01", "title": "t", "fact_type": "general", "tenant": "acme",
           "acl": ["hr"]}
    where = {"$and": [{"tenant": {"$in": ["acme", "globex"]}}, {"acl": "hr"}, {"$not": {"level": {"$gte": 3}}}]}
    return {
        "search": {"vector": vec, "k": 5, "mode": "latest", "as_of": now, "fact_types": ["general"],
                   "where": where, "columns": ["tenant"]},
        "search/batch": {"vectors": [vec, vec], "k": 3, "exact": True, "where": {"tenant": "acme"}},
        "validity": {"at": now, "ids": [1, 2, 3]},
        "query": {"text": "what held last month", "k": 3},
        "score": {"candidates": {"similarity": [0.5, 0.7], "observed_at": ["2024-01-01", "2024-02-01"]},
                  "as_of": now},
        "verify": {"chains": [[[1], [2, 3]]], "at": now, "gamma": 0.9},
        "ingest": {"rows": [row, dict(row, valid_from="2024-02-01")]},
        "supersede": {"stem_id": "doc-0", "rows": [row], "effective_at": "2030-01-01", "version": "v9"},
        "retract": {"ids": [999_999], "at": "2040-01-01"},
        "deprecate": {"ids": [999_998], "effective_at": "2024-01-01"},
        "snapshots": {"name": "fuzz"},
    }


def mutate(rng: random.Random, body: object, depth: int = 0) -> object:
    """One random change somewhere inside ``body``."""
    if isinstance(body, dict) and body and rng.random() < 0.8:
        key = rng.choice(sorted(body))
        out = dict(body)
        r = rng.random()
        if r < 0.1:
            del out[key]
        elif r < 0.2:
            out[rng.choice(["extra", "k", "where", "columns", "mode", key + "_"])] = rng.choice(HOSTILE)
        else:
            out[key] = mutate(rng, body[key], depth + 1)
        return out
    if isinstance(body, list) and body and rng.random() < 0.7:
        r = rng.random()
        if r < 0.3:  # grow a list by a power of ten, to at most 100,000 items
            return body * max(1, min(10 ** rng.randint(1, 4), 100_000 // len(body)))
        out = list(body)
        i = rng.randrange(len(out))
        out[i] = mutate(rng, out[i], depth + 1)
        return out
    r = rng.random()
    if r < 0.1:
        return {f"k{i}": i for i in range(10 ** rng.randint(1, 4))}
    if r < 0.2:
        return [rng.choice(SMALL)] * (10 ** rng.randint(1, 5))
    return copy.deepcopy(rng.choice(HOSTILE))


def nodes(body: object, limit: int = 2_000_000) -> int:
    """How many values ``body`` holds (a list repeated by ``*`` counts every time), up to
    ``limit``: a body past it would be too big to encode here."""
    count, stack = 0, [body]
    while stack and count < limit:
        v = stack.pop()
        count += 1
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str):
            count += len(v) // 64
    return count


def raw(rng: random.Random, text: bytes) -> bytes:
    """The JSON text itself damaged."""
    r = rng.random()
    if r < 0.3 and text:
        return text[:rng.randrange(len(text))]
    if r < 0.6 and text:
        b = bytearray(text)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if r < 0.8:
        return b"[" * rng.randint(100, 100_000) + b"]" * rng.randint(0, 100)
    return text * rng.randint(2, 50)


def arrow_body(rng: random.Random) -> bytes:
    import pyarrow as pa
    n = rng.choice([1, 10, 1000])
    table = pa.table({"vector": pa.array([[0.5] * DIM] * n, pa.list_(pa.float32(), DIM)),
                      "valid_from": pa.array(["2024-01-01"] * n),
                      "content": pa.array(["x" * rng.choice([1, 1000, 100_000])] * n)})
    sink = pa.BufferOutputStream()
    opts = pa.ipc.IpcWriteOptions(compression=rng.choice([None, "zstd", "lz4"]))
    with pa.ipc.new_stream(sink, table.schema, options=opts) as w:
        w.write_table(table)
    data = sink.getvalue().to_pybytes()
    if rng.random() < 0.5:
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        data = bytes(b)
    return data


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--max-requests", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=5.0, help="the service's --timeout (default 5 s)")
    ap.add_argument("--max-rss-mb", type=float, default=1500.0)
    args = ap.parse_args(argv)
    if args.seconds == 0:  # as scripts/fuzz.sh: CHRONO_FUZZ_SECONDS=0 skips
        print("fuzz_http: 0 seconds, skipped", file=sys.stderr)
        return 0
    if not 0 < args.seconds <= 24 * 3600 or not 0 < args.max_requests <= 10**7 or not 0 < args.timeout <= 60:
        ap.error("--seconds in (0, 86400], --max-requests in (0, 1e7], --timeout in (0, 60]")

    import httpx

    import chrono_engine as ce
    from chrono_engine.bench.serve_load import free_port

    findings: list[str] = []
    counts: dict[str, int] = {}
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="chrono-fuzz-http-") as tmp:
        store = Path(tmp) / "s"
        eng = ce.Engine.create(store, DIM, threads=1)
        g = np.random.default_rng(args.seed)
        eng.ingest({"vector": g.normal(size=(200, DIM)).astype(np.float32),
                    "valid_from": np.datetime64("2023-01-01", "us") + np.arange(200).astype("timedelta64[D]"),
                    "stem_id": [f"doc-{i % 20}" for i in range(200)], "version": [f"v{1 + i // 20}" for i in range(200)],
                    "fact_type": ["general", "news"] * 100,
                    "tenant": ["acme", "globex", None, "initech"] * 50, "level": np.arange(200) % 7,
                    "acl": [["hr", "all"][: i % 3] for i in range(200)]})
        eng.close()
        keys = Path(tmp) / "keys"
        keys.write_text(f"admin {KEY}\n")
        log = open(Path(tmp) / "server.log", "wb")  # the request log: a pipe nobody read would fill and block it
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([sys.executable, "-m", "chrono_engine.cli", "serve", str(store), "--host", "127.0.0.1",
                                   "--port", str(port), "--keys-file", str(keys), "--threads", "1",
                                   "--timeout", str(args.timeout)],
                                  # cwd: not the checkout, whose source tree would shadow the installed package
                                  stdout=subprocess.DEVNULL, stderr=log, env=dict(os.environ), cwd=tmp)

        def tail() -> str:
            log.flush()
            return (Path(tmp) / "server.log").read_bytes()[-2000:].decode("utf-8", "replace")
        stop = threading.Event()
        worst = {"livez": 0.0, "rss": 0.0}

        def watch() -> None:
            with httpx.Client(timeout=args.timeout + 30) as c:
                while not stop.is_set():
                    t = time.monotonic()
                    try:
                        c.get(url + "/livez")
                    except httpx.HTTPError:
                        pass
                    worst["livez"] = max(worst["livez"], time.monotonic() - t)
                    worst["rss"] = max(worst["rss"], rss_mb(server.pid))
                    stop.wait(0.2)

        try:
            with httpx.Client(timeout=2.0) as c:
                for _ in range(100):
                    try:
                        if c.get(url + "/livez").status_code == 200:
                            break
                    except httpx.HTTPError:
                        time.sleep(0.2)
                else:
                    raise SystemExit(f"the service did not start: {tail()}")
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            bodies = seeds("2025-01-01")
            t0 = time.monotonic()
            n = 0
            headers = {"Authorization": f"Bearer {KEY}"}
            with httpx.Client(timeout=args.timeout + 60, headers=headers) as c:
                while time.monotonic() - t0 < args.seconds and n < args.max_requests and server.poll() is None:
                    op = rng.choice(sorted(bodies))
                    path = f"{C}/{op}"
                    r = rng.random()
                    if op == "ingest" and r < 0.1:
                        content, ctype = arrow_body(rng), "application/vnd.apache.arrow.stream"
                    elif r < 0.25:
                        content, ctype = raw(rng, json.dumps(bodies[op]).encode()), "application/json"
                    else:
                        body = bodies[op]
                        for _ in range(rng.randint(1, 3)):
                            body = mutate(rng, body)
                        if nodes(body) >= 2_000_000:  # grown past any limit: not worth encoding
                            continue
                        content, ctype = json.dumps(body).encode(), "application/json"
                    n += 1
                    try:
                        resp = c.post(url + path, content=content, headers={"content-type": ctype})
                    except httpx.HTTPError as e:
                        findings.append(f"{op}: {type(e).__name__} ({len(content)} bytes: {content[:200]!r})")
                        continue
                    key = f"{op} {resp.status_code}"
                    counts[key] = counts.get(key, 0) + 1
                    if resp.status_code >= 500 and resp.status_code != 504:  # 504: its own time limit, by design
                        findings.append(f"{op}: {resp.status_code} {resp.text[:200]} for {content[:300]!r}")
            if server.poll() is not None:
                findings.append(f"the service died (exit {server.returncode}): {tail()}")
        finally:
            stop.set()
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()
    if worst["livez"] > args.timeout + 1:
        findings.append(f"/livez waited {worst['livez']:.2f} s (the service's --timeout is {args.timeout} s)")
    if worst["rss"] > args.max_rss_mb:
        findings.append(f"the service's resident memory reached {worst['rss']:.0f} MiB")
    for f in findings[:20]:
        print("FINDING", f, file=sys.stderr)
    print(json.dumps({"requests": n, "seconds": round(time.monotonic() - t0, 1), "findings": len(findings),
                      "max_livez_wait_s": round(worst["livez"], 3), "max_rss_mib": round(worst["rss"]),
                      "answers": dict(sorted(counts.items()))}))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
