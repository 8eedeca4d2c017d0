#!/usr/bin/env python3
"""How the service's work grows with each input a request brings, at 1x, 10x and 100x.

For every input whose size a request chooses (fact types, ids, chains, candidates, batch
vectors, rows, a query's text, a vector's length, an Arrow body's decoded size, a
search filter's values and terms and its nesting, the metadata columns asked for), a
``chrono serve`` app (uvicorn in a thread, on loopback) is sent that input at three sizes,
with limits raised so that the work is done rather than refused, and the script reports the
request's time and the longest time a ``/livez`` poller waited meanwhile (how long the
event loop was held). Then each input just past its default limit, which must be refused
quickly. A JSON body's Python objects are measured in process (tracemalloc). Usage::

    python scripts/input_scaling.py [--json out.json]

Timings are wall-clock on whatever machine runs it; on the 2-core VM they are noisy at the
millisecond level, so read the ratios between the columns, not the digits.
"""
from __future__ import annotations

import argparse
import gc
import io
import json
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

DIM = 8
STORE_ROWS = 100_000
KEY = "admin-key-0123456789"
C = "/v1/collections/s"


class Poller:
    """GETs /livez back to back and keeps each one's (start, seconds)."""

    def __init__(self, url: str) -> None:
        import httpx
        self.client = httpx.Client(base_url=url, timeout=600)
        self.samples: list[tuple[float, float]] = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop:
            t = time.perf_counter()
            self.client.get("/livez")
            self.samples.append((t, time.perf_counter() - t))
            time.sleep(0.002)

    def longest(self, start: float, end: float) -> float:
        return max((s for t, s in self.samples if t + s >= start and t <= end), default=0.0)


def serve(eng, limits):
    import uvicorn

    from chrono_engine.serve import Keys, make_app
    app = make_app(eng, name="s", keys=Keys([KEY.encode()], []), limits=limits, log=False)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    return server, thread, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


def ipc_body(table, compression=None) -> bytes:
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema, options=ipc.IpcWriteOptions(compression=compression)) as w:
        w.write_table(table)
    return sink.getvalue()


def inputs(n_rows: int) -> dict:
    """input name -> (path, body(size) -> (content bytes, content type), the three sizes,
    the size just past the default limit)."""
    rng = np.random.default_rng(0)
    vec = [0.5] * DIM

    def js(obj):
        return json.dumps(obj).encode(), "application/json"

    def rows(n):
        v = rng.normal(size=(n, DIM)).round(4).tolist()
        return js({"rows": [{"vector": v[i], "valid_from": "2024-01-01"} for i in range(n)]})

    def nested(levels):  # written out: json.dumps recurses once per level
        where = '{"$not": ' * levels + '{"tenant": "t1"}' + "}" * levels
        return f'{{"vector": {json.dumps(vec)}, "where": {where}}}'.encode(), "application/json"

    def bomb(mib):
        t = pa.table({"vector": pa.array([vec], pa.list_(pa.float32(), DIM)), "valid_from": ["2024-01-01"],
                      "title": ["x" * (mib << 20)]})
        return ipc_body(t, "zstd"), "application/vnd.apache.arrow.stream"

    return {
        "fact types per search": ("/search", lambda n: js({"vector": vec, "fact_types": [f"t{i}" for i in range(n)]}),
                                  (1_000, 10_000, 100_000), 1_025),
        "numbers in a search vector": ("/search", lambda n: js({"vector": [0.5] * n}), (1_000, 10_000, 100_000), None),
        "ids per validity": ("/validity", lambda n: js({"at": "2025-01-01", "ids": list(range(n))}),
                             (1_000, 10_000, 100_000), 100_001),
        "ids per retract (unknown)": ("/retract", lambda n: js({"ids": list(range(10**9, 10**9 + n))}),
                                      (1_000, 10_000, 100_000), 100_001),
        "facts per verify": ("/verify", lambda n: js({"chains": [[[i % n_rows]] for i in range(n)], "at": "2025-01-01",
                                                      "gamma": 0.5}), (1_000, 10_000, 100_000), 100_001),
        "candidates per score": ("/score", lambda n: js({"candidates": {"similarity": [0.5] * n,
                                                                        "observed_at": [1.7e15] * n},
                                                         "as_of": "2025-01-01"}), (1_000, 10_000, 100_000), 100_001),
        "vectors per batch search": ("/search/batch", lambda n: js({"vectors": [vec] * n, "k": 5}), (10, 100, 1_000),
                                     1_025),
        "hits per batch answer (1,024 queries x k)": ("/search/batch", lambda n: js({"vectors": [vec] * 1024,
                                                                                    "k": n // 1024, "mode": "all"}),
                                                      (10_240, 102_400, 1_024_000), None),
        "characters of a query text": ("/query", lambda n: js({"text": ("what held as of March 2024 " * n)[:n]}),
                                       (1_000, 10_000, 100_000), 10_001),
        "rows per ingest (JSON)": ("/ingest", rows, (100, 1_000, 10_000), None),
        # a filter's bounds are the engine's own (search/filters.py: 10,000 terms and values, 32 levels)
        "values in a search filter's $in": ("/search", lambda n: js({"vector": vec, "where": {"tenant": {
            "$in": [f"t{i}" for i in range(n)]}}}), (99, 999, 9_990), 1_000_000),
        "filters in a search filter's $or": ("/search", lambda n: js({"vector": vec, "where": {"$or": [
            {"tenant": f"t{i}"} for i in range(n)]}}), (49, 499, 4_990), 100_000),
        "levels of a search filter's nesting": ("/search", nested, (), 1_000),
        "metadata columns a search asks for": ("/search", lambda n: js({"vector": vec, "k": 50, "columns": [
            "tenant"] * n}), (10, 100, 1_000), 1_025),
        "MiB an Arrow body decodes to": ("/ingest", bomb, (1, 10, 100), None),
    }


def json_memory() -> list[dict]:
    """Python objects a JSON body becomes (tracemalloc), and how long its parse holds the
    GIL (so the event loop, whichever thread parses), at 1x, 10x and 100x bytes."""
    import orjson
    out = []
    for shape, unit in (("[{}, ...]", b"{},"), ("[[], ...]", b"[],"), ("[0.5, ...]", b"0.5,")):
        row = {"input": f"JSON body {shape}: Python objects; parse time", "sizes": []}
        for mib in (0.16, 1.6, 16):
            raw = b"[" + unit * int(mib * 2**20 / len(unit)) + unit[:-1] + b"]"
            gc.collect()
            t = time.perf_counter()
            obj = orjson.loads(raw)
            seconds = time.perf_counter() - t
            del obj
            gc.collect()
            tracemalloc.start()
            obj = orjson.loads(raw)
            cur, _ = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            del obj
            row["sizes"].append({"size": f"{len(raw) / 2**20:.2f} MiB", "mib": round(cur / 2**20, 1),
                                 "ratio": round(cur / len(raw), 1), "ms": round(1e3 * seconds, 1)})
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    import httpx

    import chrono_engine as ce
    from chrono_engine.serve import Limits
    big = Limits(max_body=512 << 20, max_batch=1 << 20, max_rows=10**7, max_k=1000, timeout=600,
                 max_fact_types=10**7, max_text=10**7)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        eng = ce.Engine.create(Path(tmp) / "s", DIM, threads=2)
        rng = np.random.default_rng(1)
        eng.ingest({"vector": rng.normal(size=(STORE_ROWS, DIM)).astype(np.float32),
                    "valid_from": np.full(STORE_ROWS, 1_700_000_000_000_000, np.int64),
                    "tenant": np.array([f"t{i % 100}" for i in range(STORE_ROWS)], dtype=object)})
        eng.embedder = lambda text: np.ones(DIM, np.float32)
        for label, limits in (("raised limits", big), ("default limits", Limits())):
            server, thread, url = serve(eng, limits)
            poll = Poller(url)
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as c:
                for name, (path, body, sizes, over) in inputs(STORE_ROWS).items():
                    todo = sizes if limits is big else ([over] if over is not None else [])
                    if not todo:
                        continue
                    row = {"input": name, "limits": label, "sizes": []}
                    if limits is big:  # first calls compile and warm up (Numba's verify kernels)
                        content, ctype = body(todo[0])
                        c.post(C + path, content=content, headers={"Content-Type": ctype})
                    for n in todo:
                        content, ctype = body(n)
                        time.sleep(0.05)
                        t0 = time.perf_counter()
                        r = c.post(C + path, content=content, headers={"Content-Type": ctype})
                        t1 = time.perf_counter()
                        time.sleep(0.02)
                        row["sizes"].append({"size": n, "status": r.status_code, "ms": round(1e3 * (t1 - t0), 1),
                                             "livez_ms": round(1e3 * poll.longest(t0, t1), 1),
                                             "body_bytes": len(content)})
                        print(f"{label:15s} {name:30s} {n:>8} -> {r.status_code} {1e3 * (t1 - t0):9.1f} ms, "
                              f"/livez waited {1e3 * poll.longest(t0, t1):8.1f} ms", file=sys.stderr)
                    results.append(row)
            poll.stop = True
            server.should_exit = True
            thread.join(60)
        eng.close()
    mem = json_memory()
    print("\n| input | 1x | 10x | 100x |\n| --- | --- | --- | --- |")
    for row in results:
        if row["limits"] != "raised limits":
            continue
        cells = [f"{s['size']:,}: {s['ms']:.0f} ms (livez {s['livez_ms']:.0f})" for s in row["sizes"]]
        print(f"| {row['input']} | " + " | ".join(cells) + " |")
    for row in mem:
        cells = [f"{s['size']}: {s['mib']} MiB ({s['ratio']}x), {s['ms']:.0f} ms" for s in row["sizes"]]
        print(f"| {row['input']} | " + " | ".join(cells) + " |")
    print("\nPast the default limit:")
    for row in results:
        if row["limits"] == "default limits":
            s = row["sizes"][0]
            print(f"- {row['input']} ({s['size']:,}): {s['status']} in {s['ms']:.0f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps({"service": results, "json_memory": mem}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
