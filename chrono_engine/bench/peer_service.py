"""The load benchmark's peer service (benches/bench_serve.py): the fused Numba scan of the
search harness (:class:`~chrono_engine.bench.numba_scan.NumbaScan`, the best peer of the
harness's one-query rows at 10% and 1% in force) behind the same framework as
``chrono serve`` — Starlette under uvicorn, one process, requests on a thread pool.

    python -m chrono_engine.bench.peer_service --n 200000 --dim 384 --regime steep --port 8001

It regenerates the corpus from the same seed as the bench (so both services hold the same
items) and answers ``POST /search`` ``{"vector": [...], "as_of": µs, "k": 10}`` with
``{"hits": [{"id", "score"}, ...]}``; ``GET /readyz`` once compiled. Loopback only.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import synthetic as syn
from .corpus import KNOWN_ALL, REGIMES, Queries, policy_for, workload_from_corpus
from .numba_scan import NumbaScan


def make_app(peer: NumbaScan, dim: int, fusion: str, threads: int = 8):
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="peer")

    def one(vec: np.ndarray, t: int, k: int) -> dict:
        q = Queries(vec[None, :], np.array([t], np.int64), np.array([KNOWN_ALL], np.int64), fusion=fusion, k=k)
        a = peer.search(q, 1)
        return {"hits": [{"id": int(i), "score": float(s)} for i, s in zip(a.ids[0], a.scores[0])]}

    async def search(request):
        try:
            obj = json.loads(await request.body())
            vec = np.asarray(obj["vector"], np.float32)
            vec /= np.linalg.norm(vec)
            if vec.shape != (dim,):
                raise ValueError("vector")
            t, k = int(obj["as_of"]), int(obj.get("k", 10))
        except (ValueError, KeyError, TypeError) as e:
            return JSONResponse({"error": str(e)}, status_code=422)
        out = await asyncio.get_running_loop().run_in_executor(pool, one, vec, t, k)
        return Response(json.dumps(out).encode(), media_type="application/json")

    async def readyz(request):
        return JSONResponse({"ready": True})

    return Starlette(routes=[Route("/search", search, methods=["POST"]), Route("/readyz", readyz)])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--regime", default="steep", choices=sorted(REGIMES))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=8001)
    ns = p.parse_args(argv)
    import uvicorn
    hl_name, fusion = REGIMES[ns.regime]
    corpus = syn.make_corpus(ns.n, ns.dim, half_lives=getattr(syn, hl_name), seed=ns.seed)
    peer = NumbaScan(workload_from_corpus(corpus, policy_for(corpus.half_lives)))
    warm = Queries(corpus.queries(1, seed=99), np.array([corpus.valid_from[0]], np.int64),
                   np.array([KNOWN_ALL], np.int64), fusion=fusion)
    peer.search(warm, 1)  # compile before serving
    print("peer ready", flush=True, file=sys.stderr)
    uvicorn.run(make_app(peer, ns.dim, fusion), host="127.0.0.1", port=ns.port, log_config=None, access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
